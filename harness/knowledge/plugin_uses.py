"""Where the plugin reads a method by name, and through what receiver: whether a plugin method
nothing else names can run.

The scan keeps only the first place each attribute name is read (PluginScan.attribute_uses), so
`self.forward_kunlun` in TopKTopPSampler's __init__ looks like a use of QuickGELU.forward_kunlun.
When a method would otherwise count as uncalled (Judge.uncalled_method), the plugin's modules that
mention the name are parsed again and every read placed: one through `self`/`cls` inside a method
of a plugin class reaches only that class's own hierarchy; any other receiver may be anything.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass

from harness.knowledge.plugin_repo import PluginScan
from harness.knowledge.refs import Ref
from harness.knowledge.symbol_records import walk


@dataclass(frozen=True)
class Read:
    """One `….name` read in the plugin: where, and the plugin class whose method reads it
    through self/cls (None: another receiver, whose class is not known)."""

    where: str
    through_self_of: str | None
    through_super: bool = False  # `super().name`: reaches only classes after through_self_of
    # `self.<attr>.name` in a method of plugin class `in_class`: the attribute, whose value decides
    self_attribute: tuple[str, str] | None = None  # (in_class, attr)


def reads_of(scan: PluginScan, name: str) -> list[Read]:
    """Every load of `….name` in the plugin's modules, in module order."""
    found: list[Read] = []
    for module, tree in _trees_mentioning(scan, name.encode()):
        _visit(tree, module.name, None, False, None, name, module.file, found)
    return found


def _trees_mentioning(scan: PluginScan, needle: bytes, *any_of: bytes):
    """(module, AST) of each readable, parsing plugin module whose source holds `needle` and,
    when `any_of` is given, one of those too; in module order. A module is parsed once per
    process however many names are asked about (the judge asks per dependency)."""
    for module in scan.modules.values():
        if module.error is not None:
            continue
        path = scan.root / module.file
        try:
            source = path.read_bytes()
        except OSError:
            continue
        if needle not in source or (any_of and not any(word in source for word in any_of)):
            continue
        key = (str(path), hash(source))
        if key not in _TREES:
            try:
                _TREES[key] = ast.parse(source)
            except SyntaxError:
                _TREES[key] = None
        if _TREES[key] is not None:
            yield module, _TREES[key]


_TREES: dict[tuple[str, int], ast.Module | None] = {}


def _visit(node: ast.AST, module: str, cls: str | None, in_body: bool, receiver: str | None, name: str, file: str, found: list[Read]) -> None:
    """`cls`: the innermost plugin class around (its path); `in_body`: directly in its body;
    `receiver`: the self/cls parameter of the method around (closures included)."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.ClassDef):
            _visit(child, module, f"{cls or module}.{child.name}", True, None, name, file, found)
        elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
            inner = receiver
            if in_body:
                params = [*child.args.posonlyargs, *child.args.args]
                static = any((ast.unparse(d).rsplit(".", 1)[-1]) == "staticmethod" for d in child.decorator_list)
                inner = params[0].arg if params and not static and params[0].arg in ("self", "cls") else None
            _visit(child, module, cls, False, inner, name, file, found)
        else:
            if isinstance(child, ast.Attribute) and child.attr == name and isinstance(child.ctx, ast.Load):
                through = receiver is not None and isinstance(child.value, ast.Name) and child.value.id == receiver
                upward = (receiver is not None and isinstance(child.value, ast.Call) and isinstance(child.value.func, ast.Name)
                          and child.value.func.id == "super" and not child.value.args)
                held = child.value
                via = (cls, held.attr) if (cls is not None and receiver is not None and isinstance(held, ast.Attribute)
                                           and isinstance(held.value, ast.Name) and held.value.id == receiver) else None
                found.append(Read(f"{file}:{child.lineno}", cls if through or upward else None, upward, via))
            _visit(child, module, cls, in_body, receiver, name, file, found)


def reads_elsewhere_only(scan: PluginScan, plugin_mro: Callable[[str], list[Ref]], owner: str, name: str) -> bool:
    """Whether every read of `….name` in the plugin goes through `self` of a plugin class that
    cannot be an `owner` instance: no plugin class has both in its MRO (QuickGELU.forward_kunlun
    against TopKTopPSampler's `self.forward = self.forward_kunlun`). False when a read's receiver
    is unknown, or there is no read. `super().name` inside `owner` itself never reaches owner's
    own method (vllm-ascend's v2 NPUModelRunner.postprocess calling the base's)."""
    reads = reads_of(scan, name)
    if not reads:
        return False
    reads = [read for read in reads if not (read.through_super and read.through_self_of == owner)]
    if not reads:
        return True
    if any(read.through_self_of is None for read in reads):
        return False
    owners = Ref("class", "", owner)
    readers = {Ref("class", "", read.through_self_of) for read in reads}
    if owners in readers or any(reader.qualname not in scan.classes for reader in readers):
        return False
    for path in scan.classes:
        mro = plugin_mro(path)
        if owners in mro and readers & set(mro):
            return False
    return True


# torch.nn.Module methods that set an attribute named by their first argument
_REGISTERS = ("register_parameter", "register_buffer", "register_module", "add_module")


def registered_by_name(scan: PluginScan, attr: str) -> str | None:
    """The first plugin site ("file:line") that sets an attribute `attr` by name on some object:
    `layer.register_parameter("w13_weight_scale_inv", …)` in its quantization method's
    create_weights, `self.register_buffer("cos_cache", …)`, `setattr(obj, "attr", …)`. None when
    there is none. Which object it lands on is not known to the caller."""
    for module, tree in _trees_mentioning(scan, attr.encode(), b"register_", b"add_module", b"setattr"):
        for node in walk(tree):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            named = node.args[0] if isinstance(func, ast.Attribute) and func.attr in _REGISTERS and node.args else (
                node.args[1] if isinstance(func, ast.Name) and func.id == "setattr" and len(node.args) >= 2 else None)
            if isinstance(named, ast.Constant) and named.value == attr:
                return f"{module.file}:{node.lineno}"
    return None


def set_on_others(scan: PluginScan, attr: str) -> str | None:
    """The first plugin site ("file:line") that assigns `attr` on an object other than self /
    cls (`forward_context.capturing = False` on the context vllm's get_forward_context returns,
    vllm-ascend ascend_forward_context.py), or None. Which object it lands on is not known to
    the caller: a read of `attr` elsewhere may be of that object."""
    for module, tree in _trees_mentioning(scan, b"." + attr.encode()):
        for node in walk(tree):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
            for target in targets:
                if (isinstance(target, ast.Attribute) and target.attr == attr
                        and not (isinstance(target.value, ast.Name) and target.value.id in ("self", "cls"))):
                    return f"{module.file}:{node.lineno}"
    return None
