"""The platform surface a plugin follows even when nothing of it breaks: server arguments whose
defaults upstream sets per device, and deprecation shims (with their removal horizon).

Both are read from the release source with `ast`, in the files where SGLang keeps them:

- per-device server-argument defaults: `server_args.py`, `arg_groups/` (0.5.23 resolves
  arguments there: `if cfg.device == "npu": ...`, `declare_resolution(server_args, ...,
  field=value)` under `get_platform().is_hip`), `platforms/` (`apply_server_args_defaults`, and
  the in-tree device platforms) and `hardware_backend/<device>/` (e.g. the NPU's
  `set_default_server_args`). An assignment to a ServerArgs field counts when a device test
  guards it, or when the whole function or file belongs to one device.
- deprecation shims: a function or method of the platform classes (`platforms/interface.py`,
  `platforms/device_mixin.py`) or the hook registry (`plugins/`) that warns with a message
  naming a deprecation, as 0.5.23's `SRTPlatform.get_kv_pool_cls` does when it serves the
  legacy `get_{mha,mla,dsa}_kv_pool_cls` overrides. The horizon is the version the message
  names ("removed in 0.6"), else "no removal version given".
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

from harness.engines import profile
from harness.knowledge.model import dotted, walk
from harness.knowledge.upstream import SymbolIndex, UpstreamSource

_DEFAULT_FILES = ("srt/server_args.py", "srt/arg_groups/", "srt/platforms/", "srt/hardware_backend/")
_SHIM_FILES = ("srt/platforms/interface.py", "srt/platforms/device_mixin.py", "srt/plugins/")
_GENERIC_PLATFORM_FILES = {"interface.py", "device_mixin.py", "__init__.py"}
_DEVICE_PREDICATE = re.compile(r"^_?is_(npu|hip|xpu|cpu|mps|musa|cuda|cuda_alike|rocm|gfx\w*|sail)$")
_RECEIVERS = {"cfg", "server_args", "args", "view", "sa"}  # what ServerArgs is called outside its class
_WARNERS = ("warn", "warning", "warning_once", "warn_once", "deprecated")
_HORIZON = re.compile(r"(?:removed|dropped|deleted)\s+(?:in|after|by|from|with)\s+(?:sglang\s+)?v?(\d+\.\d+(?:\.\d+)?)", re.IGNORECASE)


@dataclass
class Shim:
    """A deprecation shim: where it warns, the message, the legacy names it serves, the horizon."""

    path: str  # dotted path of the function / method
    where: str  # relpath:line of the warning
    message: str
    horizon: str  # "0.6.0", or "no removal version given"
    legacy: list[str] = field(default_factory=list)  # names it still serves (from the tables it reads)


def server_arg_fields(index: SymbolIndex) -> set[str]:
    """Names of ServerArgs' fields: annotated/assigned names of its class body plus, where the
    class is assembled from namespace classes at import (0.5.23: `defstruct(..., namespace=
    vars(ServerArgs))` over the arg_groups classes its module imports), their fields. Empty
    when the release has no ServerArgs."""
    if profile().server_args is None:
        return set()
    owner = index.resolve(profile().server_args)
    info = index.class_info(owner.ref) if owner.ok and owner.ref.kind == "class" else None
    if info is None:
        return set()
    names = {name for name, kind in info.members.items() if kind == "value"} | {name for name, _ in info.fields}
    if info.open_members:
        table = index.table(owner.ref.module)
        for name, binding in (table.names.items() if table else []):
            if binding.kind != "from":
                continue
            namespace = index.resolve(f"{owner.ref.module}.{name}")
            members = index.class_info(namespace.ref) if namespace.ok and namespace.ref.kind == "class" else None
            if members and namespace.ref != owner.ref:
                names |= {n for n, kind in members.members.items() if kind == "value"} | {n for n, _ in members.fields}
    return {n for n in names if not n.startswith("__")}


def platform_defaults(source: UpstreamSource, fields: set[str]) -> dict[str, list[str]]:
    """ServerArgs field -> sorted `relpath:line`s where the release sets it for one device (see
    the module docstring for what counts). Files that do not parse are skipped."""
    found: dict[str, set[str]] = {}
    for relpath, tree in _trees(source, _DEFAULT_FILES):
        receivers = _RECEIVERS | {"self"} if relpath.endswith("srt/server_args.py") else _RECEIVERS
        visitor = _DeviceAssignments(fields, receivers, _device_file(relpath))
        visitor.visit(tree)
        for name, line in visitor.hits:
            found.setdefault(name, set()).add(f"{relpath}:{line}")
    return {name: sorted(places) for name, places in sorted(found.items())}


def deprecation_shims(source: UpstreamSource) -> dict[str, Shim]:
    """Dotted path -> Shim for every function or method of the platform classes and the hook
    registry that warns of a deprecation."""
    shims: dict[str, Shim] = {}
    for relpath, tree in _trees(source, _SHIM_FILES):
        module = relpath.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
        tables = _string_tables(tree)
        for qualname, function in _functions(tree):
            for call in (n for n in walk(function) if isinstance(n, ast.Call)):
                name = (dotted(call.func) or "").rsplit(".", 1)[-1]
                message = " ".join(s for arg in call.args for s in _strings(arg))
                if name not in _WARNERS or not re.search(r"deprecat", message, re.IGNORECASE):
                    continue
                used = {n.id for n in walk(function) if isinstance(n, ast.Name)}
                legacy = sorted({value for table, values in tables.items() if table in used for value in values})
                horizon = _HORIZON.search(message)
                shims[f"{module}.{qualname}"] = Shim(
                    path=f"{module}.{qualname}", where=f"{relpath}:{call.lineno}", message=" ".join(message.split()),
                    horizon=horizon.group(1) if horizon else "no removal version given", legacy=legacy)
                break
    return shims


def _trees(source: UpstreamSource, prefixes: tuple[str, ...]):
    package = source.package_dir
    for prefix in prefixes:
        base = package / prefix
        paths = [base] if base.suffix == ".py" else sorted(base.rglob("*.py")) if base.is_dir() else []
        for path in paths:
            if not path.is_file():
                continue
            try:
                tree = ast.parse(path.read_bytes())
            except (SyntaxError, ValueError, OSError):
                continue
            yield str(path.relative_to(source.root)), tree


def _device_file(relpath: str) -> bool:
    """A file that belongs to one device: an in-tree device platform, a hardware backend."""
    parts = Path(relpath).parts
    if "hardware_backend" in parts:
        return True
    return "platforms" in parts and parts[-1] not in _GENERIC_PLATFORM_FILES


def _is_device_test(test: ast.AST) -> bool:
    for node in walk(test):
        name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
        if name and (_DEVICE_PREDICATE.match(name) or name == "current_platform"):
            return True
        if isinstance(node, ast.Compare) and any(isinstance(c, ast.Constant) and isinstance(c.value, str) for c in [node.left, *node.comparators]):
            sides = [node.left, *node.comparators]
            if any((dotted(s) or "").rsplit(".", 1)[-1] == "device" for s in sides):
                return True
    return False


class _DeviceAssignments(ast.NodeVisitor):
    """(field, line) of each ServerArgs field set under a device test (or anywhere, in a
    device's own file or in `apply_server_args_defaults`)."""

    def __init__(self, fields: set[str], receivers: set[str], device_scope: bool):
        self.fields, self.receivers = fields, receivers
        self.depth = 1 if device_scope else 0
        self.hits: list[tuple[str, int]] = []

    def _scoped(self, nodes, device: bool) -> None:
        self.depth += device
        for node in nodes:
            self.visit(node)
        self.depth -= device

    def visit_If(self, node: ast.If) -> None:
        self.visit(node.test)
        device = _is_device_test(node.test)
        self._scoped(node.body, device)
        self._scoped(node.orelse, device)

    def visit_IfExp(self, node: ast.IfExp) -> None:
        self._scoped([node.body, node.orelse], _is_device_test(node.test))

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self._scoped(node.body, node.name == "apply_server_args_defaults")

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Assign(self, node: ast.Assign | ast.AugAssign | ast.AnnAssign) -> None:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for target in targets:
            for element in (target.elts if isinstance(target, ast.Tuple) else [target]):
                self._attribute(element, node.lineno)
        self.generic_visit(node)

    visit_AugAssign = visit_AnnAssign = visit_Assign

    def visit_Call(self, node: ast.Call) -> None:
        # declare_resolution(server_args, "_why", field=value) / setattr(server_args, "field", value)
        if self.depth and any(isinstance(a, ast.Name) and a.id in self.receivers for a in node.args[:1]):
            for keyword in node.keywords:
                if keyword.arg in self.fields:
                    self.hits.append((keyword.arg, node.lineno))
            key = node.args[1] if dotted(node.func) == "setattr" and len(node.args) >= 2 else None
            if isinstance(key, ast.Constant) and key.value in self.fields:
                self.hits.append((key.value, node.lineno))
        self.generic_visit(node)

    def _attribute(self, target: ast.AST, line: int) -> None:
        if (self.depth and isinstance(target, ast.Attribute) and target.attr in self.fields
                and isinstance(target.value, ast.Name) and target.value.id in self.receivers):
            self.hits.append((target.attr, line))


def _functions(tree: ast.Module):
    """(qualname, node) of module-level functions and methods of module-level classes."""
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node.name, node
        elif isinstance(node, ast.ClassDef):
            for member in node.body:
                if isinstance(member, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    yield f"{node.name}.{member.name}", member


def _string_tables(tree: ast.Module) -> dict[str, list[str]]:
    """Module-level names bound to a literal collection of identifier-like strings (e.g.
    `_LEGACY_KV_POOL_HOOKS = {"mha": "get_mha_kv_pool_cls", ...}`): the values."""
    tables: dict[str, list[str]] = {}
    for stmt in tree.body:
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
            value = stmt.value
            items = value.values if isinstance(value, ast.Dict) else value.elts if isinstance(value, (ast.Tuple, ast.List, ast.Set)) else []
            strings = [i.value for i in items if isinstance(i, ast.Constant) and isinstance(i.value, str) and i.value.isidentifier()]
            if strings and len(strings) == len(items):
                for target in (stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]):
                    if isinstance(target, ast.Name):
                        tables[target.id] = strings
    return tables


def _strings(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.JoinedStr):
        return ["".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)]
    if isinstance(node, ast.BinOp):
        return _strings(node.left) + _strings(node.right)
    return []
