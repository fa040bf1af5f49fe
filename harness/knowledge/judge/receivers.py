"""What object a call's receiver holds, where upstream makes the call: the class of
`cp_group` in `cp_group.all_gather(…)` (a parameter annotated `GroupCoordinator`), of
`get_tp_group()` (a function annotated `-> GroupCoordinator`), of `pynccl_comm` (a local bound to
`self.pynccl_comm`, itself annotated), or another library's object (`self.local_socket`, every
assignment of which is `zmq.Context().socket(XPUB)` or None).

Call-site placement (harness.knowledge.judge.callsites) asks this for receivers it cannot place by
name: a call on an instance of an unrelated upstream class, or on another library's object,
cannot land on an upstream method; one on an instance of a class in the method's hierarchy may.
Only what the source shows is used (annotations, single-valued local bindings, constructor and
annotated-function calls); anything else is None, and the call stays unplaced.
"""

from __future__ import annotations

import ast

from harness.knowledge.model import Ref, dotted, walk
from harness.knowledge.scan import annotation_class, type_checking_imports
from harness.knowledge.upstream import SymbolIndex

# An object another library made: a method of it is that library's, never an upstream one.
FOREIGN = Ref("external", "", "<another library's object>")
# How many bindings deep a receiver is followed (x = self.a; self.a = ctx.socket(); ctx = Context()).
_DEPTH = 4

Scope = ast.FunctionDef | ast.AsyncFunctionDef


def receiver_class(index: SymbolIndex, module: str, enclosing: str | None, scope: Scope | None, expr: ast.expr) -> Ref | None:
    """The upstream class (Ref kind "class") whose instance `expr` holds where it is evaluated
    (inside function `scope`, a method of class `enclosing` of `module`: an instance of it or of
    a subclass), FOREIGN for another library's object, or None when the source does not show."""
    return _value(index, module, enclosing, scope, expr, 0)


def _value(index: SymbolIndex, module: str, enclosing: str | None, scope: Scope | None, expr: ast.expr, depth: int) -> Ref | None:
    if depth > _DEPTH:
        return None
    if isinstance(expr, ast.Name):
        if scope is not None and bound_locally(scope, expr.id):
            return _local(index, module, enclosing, scope, expr.id, depth)
        return None
    if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and expr.value.id == "self" and enclosing:
        return _self_attribute(index, module, enclosing, expr.attr, depth)
    if isinstance(expr, ast.Attribute):  # `layer.punica_wrapper` with `layer: ColumnParallelLinearWithLoRA`
        held = _value(index, module, enclosing, scope, expr.value, depth + 1)
        return _self_attribute(index, held.module, held.qualname, expr.attr, depth + 1) if held is not None and held.kind == "class" else None
    if isinstance(expr, ast.Call):
        return _call_result(index, module, enclosing, scope, expr, depth)
    if isinstance(expr, ast.IfExp):  # `context.socket(SUB) if remote else None`
        branches = {_value(index, module, enclosing, scope, b, depth + 1) for b in (expr.body, expr.orelse) if not _is_none(b)}
        return branches.pop() if len(branches) == 1 else None
    return None


def _is_none(expr: ast.expr) -> bool:
    return isinstance(expr, ast.Constant) and expr.value is None


def _call_result(index: SymbolIndex, module: str, enclosing: str | None, scope: Scope | None, call: ast.Call, depth: int) -> Ref | None:
    """What a call returns: an instance of the upstream class it constructs, what an upstream
    function's return annotation names, or another library's object when another library's
    callable is handed nothing of upstream's (only literals and that library's names)."""
    text = dotted(call.func)
    local = text is not None and scope is not None and bound_locally(scope, text.split(".")[0])
    if text and not local:
        found = index.resolve_in_scope(module, text)
        if found.ok and found.ref.kind == "class":
            return found.ref
        if found.ok and found.ref.kind == "function":
            return _returns(index, found.ref)
        if found.ok and found.ref.kind == "external":
            return FOREIGN if _foreign_arguments(index, module, scope, call) else None
        if found.ok or "." not in text:
            return None
    if isinstance(call.func, ast.Attribute):
        held = _value(index, module, enclosing, scope, call.func.value, depth + 1)
        if held == FOREIGN and _foreign_arguments(index, module, scope, call):
            return FOREIGN
    return None


def _foreign_arguments(index: SymbolIndex, module: str, scope: Scope | None, call: ast.Call) -> bool:
    """Every argument a literal or a module-level name bound outside the source (zmq.XPUB)."""
    for value in [*call.args, *(k.value for k in call.keywords)]:
        if isinstance(value, ast.Constant):
            continue
        text = dotted(value)
        if text is None or (scope is not None and bound_locally(scope, text.split(".")[0])):
            return False
        found = index.resolve_in_scope(module, text)
        if not (found.ok and found.ref.kind == "external"):
            return False
    return True


def _returns(index: SymbolIndex, function: Ref) -> Ref | None:
    """The upstream class `function`'s return annotation names (`def get_tp_group() -> GroupCoordinator`)."""
    info = index.function_info(function)
    tree = index.tree(function.module) if info is not None else None
    name = function.qualname.rsplit(".", 1)[-1]
    node = next((n for n in walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name and n.lineno == info.lineno), None) if tree else None
    return _annotated(index, function.module, node.returns) if node is not None else None


def _annotated(index: SymbolIndex, module: str, annotation: ast.expr | None) -> Ref | None:
    """The upstream class an annotation names (one class, Optional allowed), resolved in `module`.
    Another library's class in an annotation says nothing: an upstream subclass may be passed."""
    named = annotation_class(annotation)
    found = index.resolve_in_scope(module, named) if named else None
    if named and found is not None and not found.ok:  # a name only an `if TYPE_CHECKING:` block imports
        tree, (_, is_package) = index.tree(module), index.files[module]
        head, _, rest = named.partition(".")
        typing_only = type_checking_imports(tree, module, is_package) if tree is not None else {}
        found = index.resolve(f"{typing_only[head]}.{rest}".rstrip(".")) if head in typing_only else found
    return found.ref if found is not None and found.ok and found.ref.kind == "class" else None


def bound_locally(scope: Scope, name: str) -> bool:
    """Whether `name` is local to function `scope` (a parameter, or bound in its own body)."""
    args = scope.args
    if any(a.arg == name for a in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg] if a is not None):
        return True
    return rebound_in_body(scope, name)


def rebound_in_body(scope: Scope, name: str) -> bool:
    """Whether function `scope`'s own body (not its nested functions) binds `name`."""
    return any(_binds(node, name) for node in own_nodes(scope))


def _local(index: SymbolIndex, module: str, enclosing: str | None, scope: Scope, name: str, depth: int) -> Ref | None:
    """A parameter's annotation, or what every assignment of the local name gives (None kept
    out); None when it is bound any other way (a loop, `with … as`, unpacking) or the values differ."""
    typed: set[Ref | None] = set()
    args = scope.args
    if any(a is not None and a.arg == name for a in (args.vararg, args.kwarg)):
        return None
    for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
        if arg.arg == name:
            typed.add(_annotated(index, module, arg.annotation))
    loops = _loop_sources(scope, name)
    if loops is not None:  # `for manager in self.single_type_managers:` (or enumerate(…)) alone binds it
        typed.update(_element(index, module, enclosing, scope, source, depth + 1) for source in loops)
        return typed.pop() if len(typed) == 1 else None
    for kind, value in _assignments(scope, lambda target: isinstance(target, ast.Name) and target.id == name, name):
        if kind == "other":
            return None
        typed.add(_annotated(index, module, value) if kind == "annotation" else _value(index, module, enclosing, scope, value, depth + 1))
    return typed.pop() if len(typed) == 1 else None


def _loop_sources(scope: Scope, name: str) -> list[ast.expr] | None:
    """The iterables of the `for` loops that bind `name` (as `for name in X` or `for i, name in
    enumerate(X)`: X), when loops are its only bindings in `scope`; None otherwise."""
    sources, loop_targets = [], set()
    for node in own_nodes(scope):
        if not isinstance(node, (ast.For, ast.AsyncFor)):
            continue
        target, source = node.target, node.iter
        if (isinstance(target, ast.Tuple) and len(target.elts) == 2 and isinstance(target.elts[1], ast.Name)
                and isinstance(source, ast.Call) and dotted(source.func) == "enumerate" and len(source.args) == 1):
            target, source = target.elts[1], source.args[0]
        if isinstance(target, ast.Name) and target.id == name:
            sources.append(source)
            loop_targets.add(id(target))
    if not sources:
        return None
    others = [n for n in own_nodes(scope) if _binds(n, name) and id(n) not in loop_targets]
    args = scope.args
    parameter = any(a is not None and a.arg == name for a in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg])
    return None if others or parameter else sources


def _element(index: SymbolIndex, module: str, enclosing: str | None, scope: Scope | None, expr: ast.expr, depth: int) -> Ref | None:
    """The upstream class of every element of the iterable `expr`: `tuple(f(x) for x in …)` or
    `[f(x) for …]` with `f` annotated to return one, a literal list of such values, an
    annotation `tuple[T, ...]` / `list[T]` / `Sequence[T]`, or a local or `self.` attribute
    bound only to those (vllm/v1/core/kv_cache_coordinator.py: `self.single_type_managers =
    tuple(get_manager_for_kv_cache_spec(…) for …)`). None when the source does not show."""
    if depth > _DEPTH:
        return None
    if isinstance(expr, ast.Call) and dotted(expr.func) in ("tuple", "list", "sorted", "reversed", "iter") and len(expr.args) == 1:
        return _element(index, module, enclosing, scope, expr.args[0], depth + 1)
    if isinstance(expr, (ast.GeneratorExp, ast.ListComp, ast.SetComp)):
        return _value(index, module, enclosing, scope, expr.elt, depth + 1)
    if isinstance(expr, (ast.List, ast.Tuple, ast.Set)) and expr.elts:
        kinds = {_value(index, module, enclosing, scope, e, depth + 1) for e in expr.elts}
        return kinds.pop() if len(kinds) == 1 else None
    sources: list[tuple[str, ast.expr, str, str | None, Scope | None]] = []
    if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and expr.value.id == "self" and enclosing:
        sources = _self_bindings(index, module, enclosing, expr.attr)
    elif isinstance(expr, ast.Name) and scope is not None and bound_locally(scope, expr.id):
        sources = [(kind, value, module, enclosing, scope)
                   for kind, value in _assignments(scope, lambda t: isinstance(t, ast.Name) and t.id == expr.id, expr.id)]
    if not sources or any(kind == "other" for kind, *_ in sources):
        return None
    typed = {_annotated(index, where, _element_annotation(value)) if kind == "annotation" else _element(index, where, owner, fn, value, depth + 1)
             for kind, value, where, owner, fn in sources}
    return typed.pop() if len(typed) == 1 else None


def _element_annotation(annotation: ast.expr) -> ast.expr | None:
    """T of `tuple[T, ...]`, `list[T]`, `Sequence[T]` (any one-class subscript): the element type."""
    if isinstance(annotation, ast.Subscript):
        inner = annotation.slice
        return inner.elts[0] if isinstance(inner, ast.Tuple) and inner.elts else inner
    return None


def _self_attribute(index: SymbolIndex, module: str, enclosing: str, attr: str, depth: int) -> Ref | None:
    """`self.<attr>` in a method of `enclosing`: its annotation in the class or a base, else what
    every `self.<attr> = …` in their methods gives (None kept out)."""
    typed: set[Ref | None] = set()
    for kind, value, where, owner, method in _self_bindings(index, module, enclosing, attr):
        if kind == "annotation":
            return _annotated(index, where, value)
        if kind == "other":
            return None
        typed.add(_value(index, where, owner, method, value, depth + 1))
    return typed.pop() if len(typed) == 1 else None


def _self_bindings(index: SymbolIndex, module: str, enclosing: str, attr: str) -> list[tuple[str, ast.expr | None, str, str, Scope | None]]:
    """How `self.<attr>` is bound in `enclosing` and its bases, MRO order: (kind, value, module,
    class qualname, method) with kind as in _assignments; an annotation ends the list."""
    found: list[tuple[str, ast.expr | None, str, str, Scope | None]] = []
    for klass in index.mro(Ref("class", module, enclosing)):
        info = index.class_info(klass) if klass.kind == "class" else None
        tree = index.tree(klass.module) if info is not None else None
        node = next((n for n in walk(tree) if isinstance(n, ast.ClassDef) and n.lineno == info.lineno), None) if tree else None
        for member in node.body if node is not None else ():
            if isinstance(member, ast.AnnAssign) and isinstance(member.target, ast.Name) and member.target.id == attr:
                return [*found, ("annotation", member.annotation, klass.module, klass.qualname, None)]
            if not isinstance(member, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for kind, value in _assignments(member, lambda target: _is_self_attr(target, attr), None):
                found.append((kind, value, klass.module, klass.qualname, member))
                if kind == "annotation":
                    return found
    return found


def _assignments(scope: Scope, is_target, name: str | None):
    """("value", expr) for each plain `target = expr` in `scope`'s own body (`= None` left out),
    ("annotation", expr) for `target: T …`, ("other", None) for any other binding of it (a loop,
    `with … as`, unpacking, augmented assignment, or `name` bound by import, def, global, except)."""
    simple: set[int] = set()
    found = []
    nodes = own_nodes(scope)
    for node in nodes:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and is_target(node.targets[0]):
            simple.add(id(node.targets[0]))
            if not _is_none(node.value):
                found.append(("value", node.value))
        elif isinstance(node, ast.AnnAssign) and is_target(node.target):
            simple.add(id(node.target))
            found.append(("annotation", node.annotation))
    for node in nodes:
        stored = isinstance(node, (ast.Name, ast.Attribute)) and isinstance(node.ctx, (ast.Store, ast.Del)) and is_target(node)
        if (stored and id(node) not in simple) or (name is not None and not isinstance(node, ast.Name) and _binds(node, name)):
            found.append(("other", None))
    return found


def _is_self_attr(node: ast.expr, attr: str) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == attr and isinstance(node.value, ast.Name) and node.value.id == "self"


def own_nodes(scope: Scope) -> list[ast.AST]:
    """The nodes of a function's body; a function, lambda or class inside it, not their bodies.
    Kept per function for the process (the trees are: ModuleTables.tree): placing one call asks
    about the same function's bindings many times."""
    kept = _OWN_NODES.get(id(scope))
    if kept is not None and kept[0] is scope:
        return kept[1]
    nodes, stack = [], list(scope.body)
    while stack:
        node = stack.pop()
        nodes.append(node)
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            stack.extend(ast.iter_child_nodes(node))
    _OWN_NODES[id(scope)] = (scope, nodes)  # the scope itself is kept, so its id is not reused
    return nodes


_OWN_NODES: dict[int, tuple[Scope, list[ast.AST]]] = {}


def _binds(node: ast.AST, name: str) -> bool:
    """Whether `node` (one statement or expression, not its children) binds `name`."""
    if isinstance(node, ast.Name):
        return node.id == name and isinstance(node.ctx, (ast.Store, ast.Del))
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return any((a.asname or a.name.split(".")[0]) == name for a in node.names)
    if isinstance(node, (ast.Global, ast.Nonlocal)):
        return name in node.names
    if isinstance(node, ast.ExceptHandler):
        return node.name == name
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return node.name == name
    return False
