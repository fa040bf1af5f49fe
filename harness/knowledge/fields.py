"""Fields of upstream objects the plugin reads (`forward_batch.token_to_kv_pool`,
`server_args.cuda_graph_bs`): issue 18, kind 12.

The scan records a read of `v.x` only when the class of `v` is known with evidence: the plugin's
own annotation (`def f(fb: ForwardBatch)`, `x: ServerArgs = …`), the same-named parameter of
the upstream function a hook or an override stands in for (its annotation says what upstream
passes), or `server_args` (SGLang's name for its ServerArgs everywhere). A read is a dependency
`field` on `<Class>.<x>`; `getattr(v, "x", default)` is none, `hasattr(v, "x")` guards it.

A field is there when the class or a base declares it as Python finds it on an instance: a
class-body annotation or assignment (dataclass / msgspec / pydantic fields, `__slots__`), a
method or property, `self.x = …` / `setattr(self, "x", …)` in any method, or a field of the
namespace classes a computed class is assembled from (0.5.23 ServerArgs). It is undecided when
a class defines `__getattr__`/`__getattribute__`, sets attributes under computed names, or has
a base outside the index (see Judge.lookup, which answers the same question for `self.x`).
"""

from __future__ import annotations

import ast
import functools
import re
import weakref
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from harness.knowledge.findings import Finding, Status
from harness.knowledge.index import Outcome, Ref, Resolution, SymbolIndex
from harness.knowledge.plugin_repo import Dependency
from harness.knowledge.symbols import dotted, resolve_relative

if TYPE_CHECKING:
    from harness.knowledge.judge import Judge

SERVER_ARGS = "sglang.srt.server_args.ServerArgs"
# Writes the plugin makes itself: a field it sets is there when it reads it back.
WRITE = "write"
_ANNOTATIONS = msgspec.msgpack.Decoder(dict[str, str])


def annotation_class(node: ast.AST | None) -> str | None:
    """The one class an annotation names, as a dotted source expression: `X`, `mod.X`,
    `"X"`, `Optional[X]`, `X | None`, `Union[X, None]`; None for anything else (a union of
    classes, a generic container, no annotation)."""
    if node is None:
        return None
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            return annotation_class(ast.parse(node.value, mode="eval").body)
        except SyntaxError:
            return None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        sides = [side for side in (node.left, node.right) if not (isinstance(side, ast.Constant) and side.value is None)]
        return annotation_class(sides[0]) if len(sides) == 1 else None
    if isinstance(node, ast.Subscript):
        wrapper = (dotted(node.value) or "").rsplit(".", 1)[-1]
        elements = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        elements = [e for e in elements if not (isinstance(e, ast.Constant) and e.value is None)]
        return annotation_class(elements[0]) if wrapper in ("Optional", "Union") and len(elements) == 1 else None
    return dotted(node)


def parameter_class(index: SymbolIndex, function: Ref, param: str) -> str | None:
    """The upstream class the upstream `function` annotates its parameter `param` with (its
    definition path), or None when it does not annotate it with one class. The annotations of
    a function are read once per release and cached with the index."""
    annotations = index.analysis("parameter_annotations", function, _ANNOTATIONS, lambda: _annotations(index, function))
    expression = annotations.get(param)
    if expression is None:
        return None
    # an absolute path when the name comes from an `if TYPE_CHECKING:` import (not in the module at run time)
    found = index.resolve(expression) if "." in expression and index.module_exists(expression.split(".")[0]) else index.resolve_in_scope(function.module, expression)
    return found.ref.path if found.ok and found.ref.kind == "class" else None


def _annotations(index: SymbolIndex, function: Ref) -> dict[str, str]:
    info = index.function_info(function)
    table = index.table(function.module)
    if info is None or table is None:
        return {}
    name = function.qualname.rsplit(".", 1)[-1]
    tree = _tree(str(index.source.root / table.path))
    node = next((n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name and n.lineno == info.lineno), None)
    if node is None:
        return {}
    typing_only = _type_checking_imports(tree, function.module, table.is_package)
    args = node.args
    found = {}
    for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
        expression = annotation_class(arg.annotation)
        if expression:
            head, _, rest = expression.partition(".")
            found[arg.arg] = f"{typing_only[head]}.{rest}".rstrip(".") if head in typing_only else expression
    return found


def _type_checking_imports(tree: ast.Module, module: str, is_package: bool) -> dict[str, str]:
    """{local name: absolute dotted path} of what `if TYPE_CHECKING:` blocks import: annotations
    name them, though the module does not bind them at run time."""
    found: dict[str, str] = {}
    for stmt in tree.body:
        if not (isinstance(stmt, ast.If) and (dotted(stmt.test) or "").rsplit(".", 1)[-1] == "TYPE_CHECKING"):
            continue
        for inner in stmt.body:
            if isinstance(inner, ast.ImportFrom):
                base = resolve_relative(module, is_package, inner.level, inner.module)
                found.update({alias.asname or alias.name: f"{base}.{alias.name}" for alias in inner.names if alias.name != "*"})
            elif isinstance(inner, ast.Import):
                found.update({alias.asname or alias.name.split(".")[0]: alias.name if alias.asname else alias.name.split(".")[0] for alias in inner.names})
    return found


@functools.lru_cache(maxsize=16)
def _tree(path: str) -> ast.Module:
    """A parsed upstream module: the hooks and overrides of one plugin often stand in for
    several methods of the same class."""
    return ast.parse(Path(path).read_bytes())


def field_resolution(judge: Judge, class_path: str, attr: str) -> Resolution | None:
    """`attr` on an instance of the upstream class `class_path` (see the module doc), or None
    when `class_path` is not an upstream class on this release (its import says so)."""
    index = judge.index
    owner = index.resolve(class_path)
    if not owner.ok or owner.ref.kind != "class":
        return None
    mro = index.mro(owner.ref)
    found = judge.lookup(mro, attr, instance=True)
    if found.ok:
        return found
    # a class whose fields are computed at import, from namespace classes (0.5.23 ServerArgs);
    # judge imports this module, hence the late import
    from harness.knowledge.judge import assembled_field

    plain = index.resolve(f"{owner.ref.path}.{attr}")
    assembled = assembled_field(index, plain)
    if assembled.ok:
        return assembled
    if found.outcome is not Outcome.undecided:
        return _set_from_outside(index, attr, found)
    # Judge.lookup stops at a class body it cannot list; what the methods assign on self still counts
    dynamic = []
    for cls in (c for c in mro if c.kind == "class"):
        attributes = index.instance_attributes(cls)
        if attr in attributes.names:
            return Resolution(attr, Ref("value", cls.module, f"{cls.qualname}.{attr}"), owner=cls.path,
                              note=f"assigned on self in {cls.path} (line {attributes.names[attr]})")
        dynamic.extend(attributes.dynamic)
    if assembled is not plain and not dynamic:
        return _set_from_outside(index, attr, assembled)  # the assembled class's fields are listed and none is `attr`
    return found


def _set_from_outside(index: SymbolIndex, attr: str, missing: Resolution) -> Resolution:
    """`missing`, unless upstream code sets `attr` on some object other than `self` (`forward_batch.x
    = …` in a worker, `setattr(layer, "x", …)`): an instance may then carry it on that path, so
    the read is undecided."""
    where = _outside_writes(index).get(attr) or index.registered_on_others(attr)
    if where is None:
        return missing
    return Resolution(attr, None, outcome=Outcome.undecided, note=f"{missing.note}; but upstream sets {attr!r} on other objects at run time ({where})")


_OUTSIDE_WRITE = re.compile(rb"(?<![\w.])((?:\w+\.)+)(\w+)[ \t]*(?::[^=\n]*)?=(?!=)")
_WRITES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _outside_writes(index: SymbolIndex) -> dict[str, str]:
    """{attribute: "relpath:line"} of the first `a.b.attr = …` upstream writes through a receiver
    other than self / cls (test modules aside), by one regex pass over the sources, kept per index."""
    if index not in _WRITES:
        found: dict[str, str] = {}
        for module, text in index.sources().items():
            if ".test." in f".{module}." or ".tests." in f".{module}.":
                continue
            for match in _OUTSIDE_WRITE.finditer(text):
                receiver, attr = match.group(1), match.group(2).decode()
                if receiver not in (b"self.", b"cls.") and attr not in found:
                    line = text.count(b"\n", 0, match.start()) + 1
                    found[attr] = f"{index.files[module][0]}:{line}"
        _WRITES[index] = found
    return _WRITES[index]


def subclass_declaring(index: SymbolIndex, owner: Ref, attr: str) -> str | None:
    """An upstream subclass of `owner` that declares `attr` (in its body or on self), or None:
    an object annotated as `owner` may be one (`pool: KVCache` holding an MHATokenToKVPool), so
    a field only a subclass declares is not certainly missing. Subclasses are found by the class
    headers in the sources (no module is parsed unless it defines one), then checked by MRO."""
    headers = _class_headers(index)
    names, queue = {owner.qualname.rsplit(".", 1)[-1]}, [owner.qualname.rsplit(".", 1)[-1]]
    modules: set[str] = set()
    while queue:  # subclasses by name, transitively; the MRO check below drops namesakes
        base = queue.pop()
        for module, name, bases in headers:
            if base in bases and name not in names:
                names.add(name)
                queue.append(name)
                modules.add(module)
            elif base in bases:
                modules.add(module)
    for module in sorted(modules):
        table = index.table(module)
        for qualname, info in (table.classes.items() if table else ()):
            cls = Ref("class", module, qualname)
            if qualname.rsplit(".", 1)[-1] not in names or cls == owner or owner not in index.mro(cls):
                continue
            if attr in info.members or attr in index.instance_attributes(cls).names:
                return cls.path
    return None


_HEADER = re.compile(rb"^[ \t]*class[ \t]+(\w+)[ \t]*\(([^)]*)\)", re.MULTILINE)
_HEADERS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _class_headers(index: SymbolIndex) -> list[tuple[str, str, set[str]]]:
    """(module, class name, names in its base list) of every class header in the release, by
    one regex pass over the sources, kept per index."""
    if index not in _HEADERS:
        _HEADERS[index] = [
            (module, match.group(1).decode(), set(re.findall(r"\w+", match.group(2).decode(errors="replace"))))
            for module, text in index.sources().items() for match in _HEADER.finditer(text)
        ]
    return _HEADERS[index]


def field_present(judge: Judge, class_path: str, attr: str) -> bool | None:
    """`hasattr(v, attr)` for `v` an instance of `class_path` on this upstream: True, False, or
    None when not decided."""
    if _written(judge).get(f"{class_path}.{attr}"):
        return None  # the plugin sets it itself somewhere: whether it did by then is a run-time matter
    found = field_resolution(judge, class_path, attr)
    if found is None or found.outcome is Outcome.undecided:
        return None
    if not found.ok and subclass_declaring(judge.index, judge.index.resolve(class_path).ref, attr):
        return None
    return found.ok


def judge_field(judge: Judge, dep: Dependency) -> Finding | None:
    """A read of a field of an upstream object: ok where the class declares it (or the plugin
    sets it itself), missing (AttributeError when read) where it certainly does not, unknown
    with the reason otherwise. Writes give no finding: Python creates the attribute (the
    server_arg kind judges writes to ServerArgs)."""
    if dep.how == WRITE or dep.target is None:
        return None
    from harness.knowledge.judge import risk_of

    class_path, _, attr = dep.target.rpartition(".")
    base = judge.base(dep)
    found = field_resolution(judge, class_path, attr)
    if found is None:
        return None
    if found.ok:
        defined_in = found.ref.path if found.ref.module else found.owner
        return Finding(**base, status=Status.ok, defined_in=defined_in, detail=found.note)
    own = _written(judge).get(dep.target)
    if own is not None:
        return Finding(**base, status=Status.ok, detail=f"the plugin sets {attr!r} on it itself ({own.file}:{own.line})")
    where = f"{dep.expression or attr} reads {class_path}.{attr}"
    subclass = subclass_declaring(judge.index, judge.index.resolve(class_path).ref, attr) if found.outcome is Outcome.missing else None
    if subclass is not None:
        return Finding(**base, status=Status.unknown, risk=risk_of(dep, Status.unknown),
                       detail=f"{where}: {class_path} does not declare it, but its subclass {subclass} does, and the object may be one")
    if found.outcome is Outcome.undecided:
        return Finding(**base, status=Status.unknown, risk=risk_of(dep, Status.unknown), detail=f"{where}: not decided: {found.note}")
    return Finding(**base, status=Status.missing, risk=risk_of(dep, Status.missing),
                   detail=f"{where}, which {judge.index.source.label} does not declare ({found.note}; AttributeError when read)")


def _written(judge: Judge) -> dict[str, Dependency]:
    """`<Class>.<field>` -> a plugin site that sets it (a field write, or a server-arg write)."""
    if judge.field_writes is None:
        judge.field_writes = {
            dep.target: dep for dep in judge.scan.dependencies
            if dep.target and (dep.kind == "field" and dep.how == WRITE or dep.kind == "server_arg")
        }
    return judge.field_writes
