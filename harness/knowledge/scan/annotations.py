"""Annotation helpers the scan and the judge share: the one class an annotation names, the
class an upstream function annotates a parameter with, and what `if TYPE_CHECKING:` blocks
import (names annotations use that a module does not bind at run time)."""

from __future__ import annotations

import ast
import functools
from collections.abc import Callable
from pathlib import Path

import msgspec

from harness.knowledge.model import Ref, dotted, resolve_relative, walk
from harness.knowledge.upstream import SymbolIndex

# Writes the plugin makes itself: a field it sets is there when it reads it back.
WRITE = "write"
# A field dependency read on `self.<attr>` carries "self:<class path>" as its function until
# finish() names the class of what the plugin class keeps there (PluginClasses._held_class).
SELF_HELD = "self:"
# PluginClass.attribute_values' entry for `self.x = None`: no instance, so no class to judge by
NONE_VALUE = "None"
_ANNOTATIONS = msgspec.msgpack.Decoder(dict[str, str])


def annotation_class(node: ast.AST | None) -> str | None:
    """The one class an annotation names, as a dotted source expression: `X`, `mod.X`,
    `"X"`, `Optional[X]`, `X | None`, `Union[X, None]`; None for anything else (a union of
    classes, a generic container, no annotation)."""
    found = annotation_classes(node)
    return found[0] if len(found) == 1 else None


def annotation_classes(node: ast.AST | None) -> list[str]:
    """Every class an annotation names, as dotted source expressions: `X`, `mod.X`, `"X"`, or
    each member of a union (`A | B`, `Union[A, B]`, `Optional[A | B]`; None left out); [] where
    any member is something else (a generic container, a literal) or there is no annotation."""
    if node is None:
        return []
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            return annotation_classes(ast.parse(node.value, mode="eval").body)
        except SyntaxError:
            return []
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        sides = [annotation_classes(side) for side in (node.left, node.right) if not (isinstance(side, ast.Constant) and side.value is None)]
        return [c for side in sides for c in side] if all(sides) else []
    if isinstance(node, ast.Subscript):
        if (dotted(node.value) or "").rsplit(".", 1)[-1] not in ("Optional", "Union"):
            return []
        elements = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        members = [annotation_classes(e) for e in elements if not (isinstance(e, ast.Constant) and e.value is None)]
        return [c for member in members for c in member] if members and all(members) else []
    found = dotted(node)
    return [found] if found else []


def parameter_annotation(index: SymbolIndex, function: Ref, param: str) -> str | None:
    """The one class the upstream `function` annotates its parameter `param` with, as written
    (`int`, `torch.Tensor`; a name imported only for type checking made absolute), or None
    (annotation_class: no annotation, a union of classes, a generic). Cached as parameter_class's."""
    return index.analysis("parameter_annotations", function, _ANNOTATIONS, lambda: _annotations(index, function)).get(param)


def parameter_class(index: SymbolIndex, function: Ref, param: str) -> str | None:
    """The upstream class the upstream `function` annotates its parameter `param` with (its
    definition path; `param` "return": its return annotation), or None when it does not
    annotate it with one class. The annotations of
    a function are read once per release and cached with the index."""
    annotations = index.analysis("parameter_annotations", function, _ANNOTATIONS, lambda: _annotations(index, function))
    expression = annotations.get(param)
    if expression is None:
        return None
    # an absolute path when the name comes from an `if TYPE_CHECKING:` import (not in the module at run time)
    found = index.resolve(expression) if "." in expression and index.module_exists(expression.split(".")[0]) else index.resolve_in_scope(function.module, expression)
    return found.ref.path if found.ok and found.ref.kind == "class" else None


def field_class(index: SymbolIndex, cls: Ref, attr: str) -> str | None:
    """The upstream class the upstream class `cls` (or the first class of its MRO that
    annotates `attr` in its body) annotates its field `attr` with (`compilation_config:
    CompilationConfig = …` of a config dataclass), or None when none annotates it with one
    class. The annotations of a class body are read once per release and cached with the index."""
    return _first_in_mro(index, cls, attr, "field_annotations", _field_annotations)


def kept_class(index: SymbolIndex, cls: Ref, attr: str) -> str | None:
    """The upstream class of what the upstream class `cls` (or the first class of its MRO whose
    `__init__` sets it) keeps in `self.<attr>`: `self.attr = param` of an `__init__` parameter
    annotated with one class (`def __init__(self, vllm_config: VllmConfig)`: vLLM's WorkerBase),
    or `self.attr: X = …`; None otherwise. Read once per class and release, cached with the index."""
    return _first_in_mro(index, cls, attr, "kept_attributes", _kept_attributes)


def _first_in_mro(index: SymbolIndex, cls: Ref, attr: str, analysis: str, read: Callable[[SymbolIndex, Ref], dict[str, str]]) -> str | None:
    """The class the first class of `cls`'s MRO whose `read` table (cached as `analysis`) names
    `attr` gives it, resolved where that class is written; None when none does, or not to a class."""
    for owner in index.mro(cls):
        if owner.kind != "class":
            continue
        expression = index.analysis(analysis, owner, _ANNOTATIONS, lambda owner=owner: read(index, owner)).get(attr)
        if expression is not None:
            found = index.resolve(expression) if "." in expression and index.module_exists(expression.split(".")[0]) else index.resolve_in_scope(owner.module, expression)
            return found.ref.path if found.ok and found.ref.kind == "class" else None
    return None


def _kept_attributes(index: SymbolIndex, cls: Ref) -> dict[str, str]:
    table = index.table(cls.module)
    node = index.class_node(cls) if table is not None else None
    init = next((n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None) if node is not None else None
    if init is None or not [*init.args.posonlyargs, *init.args.args]:
        return {}
    typing_only = type_checking_imports(_tree(str(index.source.root / table.path)), cls.module, table.is_package)
    receiver = [*init.args.posonlyargs, *init.args.args][0].arg
    params = {a.arg: annotation_class(a.annotation) for a in [*init.args.posonlyargs, *init.args.args, *init.args.kwonlyargs]}
    found: dict[str, str] = {}
    for stmt in init.body:  # (its own top level: what every construction sets)
        target = stmt.targets[0] if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 else stmt.target if isinstance(stmt, ast.AnnAssign) else None
        if not (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == receiver):
            continue
        expression = (annotation_class(stmt.annotation) if isinstance(stmt, ast.AnnAssign)
                      else params.get(stmt.value.id) if isinstance(stmt.value, ast.Name)
                      # `self.cache_config = vllm_config.cache_config`: the field's class of the parameter's
                      else _field_of_parameter(index, cls, params, stmt.value, typing_only))
        if expression and target.attr not in found:
            head, _, rest = expression.partition(".")
            found[target.attr] = f"{typing_only[head]}.{rest}".rstrip(".") if head in typing_only else expression
    return found


def _field_of_parameter(index: SymbolIndex, cls: Ref, params: dict, value: ast.expr, typing_only: dict) -> str | None:
    """The class `param.field` holds, for an `__init__` parameter annotated with one upstream
    class whose body annotates the field with one class (field_class); None otherwise."""
    if not (isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name) and params.get(value.value.id)):
        return None
    head, _, rest = params[value.value.id].partition(".")
    named = f"{typing_only[head]}.{rest}".rstrip(".") if head in typing_only else params[value.value.id]
    found = index.resolve(named) if "." in named and index.module_exists(named.split(".")[0]) else index.resolve_in_scope(cls.module, named)
    return field_class(index, found.ref, value.attr) if found.ok and found.ref.kind == "class" else None


def _field_annotations(index: SymbolIndex, cls: Ref) -> dict[str, str]:
    table = index.table(cls.module)
    node = index.class_node(cls) if table is not None else None
    if node is None:
        return {}
    typing_only = type_checking_imports(_tree(str(index.source.root / table.path)), cls.module, table.is_package)
    found = {}
    for stmt in node.body:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and (expression := annotation_class(stmt.annotation)):
            head, _, rest = expression.partition(".")
            found[stmt.target.id] = f"{typing_only[head]}.{rest}".rstrip(".") if head in typing_only else expression
    return found


def _annotations(index: SymbolIndex, function: Ref) -> dict[str, str]:
    info = index.function_info(function)
    table = index.table(function.module)
    if info is None or table is None:
        return {}
    name = function.qualname.rsplit(".", 1)[-1]
    tree = _tree(str(index.source.root / table.path))
    node = next((n for n in walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name and n.lineno == info.lineno), None)
    if node is None:
        return {}
    typing_only = type_checking_imports(tree, function.module, table.is_package)
    args = node.args
    found = {}
    # the return annotation under "return", which no parameter can be named
    for name, annotation in [*((a.arg, a.annotation) for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]), ("return", node.returns)]:
        expression = annotation_class(annotation)
        if expression:
            head, _, rest = expression.partition(".")
            found[name] = f"{typing_only[head]}.{rest}".rstrip(".") if head in typing_only else expression
    return found


def type_checking_imports(tree: ast.Module, module: str, is_package: bool) -> dict[str, str]:
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
