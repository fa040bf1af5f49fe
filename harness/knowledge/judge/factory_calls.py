"""Calls upstream makes on the instances it builds from a class a platform method returns.

SGLang and vLLM ask the platform for some classes (vLLM by qualified name, resolved with
`resolve_obj_by_qualname`) and build them themselves: `memory_pool.py` and
`kv_cache_configurator.py` (0.5.17) do `PoolCls = current_platform.get_mha_kv_pool_cls()` then
`PoolCls(…)`, the instance is returned, kept as `ModelRunner.token_to_kv_pool`, read by the
attention backends as `model_runner.token_to_kv_pool` and called as
`self.token_to_kv_pool.set_kv_buffer(…, **kwargs)`. An override on the class the plugin's
platform returns is judged against those calls (issue 34, item 1: "calls through objects made
by factories the platform fills").

The instance is followed from where it is built, one place at a time (a place holds it):
- a local name: the calls on it in that function; `return name` makes the function a place;
- a function returning it: each call of the function by name (`f(…)`, `self.f(…)`, `obj.f(…)`)
  binds its result to a local or `self.x`;
- `self.x` of a class: the calls on `self.x` in that class and its subclasses in the release;
- the attribute name `x` itself: `self.y = <obj>.x` in another class makes `self.y` a place, and
  a call on `<obj>.x` is a call on it, for objects whose class the release does not show (the
  name carries the instance: `model_runner.token_to_kv_pool`) or shows to be one of the classes
  found keeping it. Reads through `self`, and through objects of another class, are left out.
Each call found carries `made="platform:<method>"` and the chain as its receiver text, so a
reader sees how it was reached. The search stops after MAX_HOPS places in a chain and skips an
attribute name read in more than MAX_MODULES modules that also call the method.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, replace

import msgspec

from harness.knowledge.judge.callsites import MODULE_CALL, PLATFORM_INSTANCE, CallSite, CallSites, _enclosing, _is_module
from harness.knowledge.judge.receivers import own_nodes, receiver_class
from harness.knowledge.model import CallShape, Ref, dotted, walk
from harness.knowledge.scan import call_shape
from harness.knowledge.upstream import SymbolIndex

MAX_HOPS = 12
# functions that turn a class's qualified name into the class (vllm/utils/__init__.py)
_BY_NAME = frozenset({"resolve_obj_by_qualname"})
MAX_MODULES = 48
_DECODER = msgspec.msgpack.Decoder(CallSites)


def factory_calls(index: SymbolIndex, factory: str, method: str, base: Ref | None = None) -> CallSites:
    """The calls of `method` the release makes on instances of the class its platform object's
    `factory()` returns (`current_platform.get_mha_kv_pool_cls()`), followed as the module
    docstring says; `base`: the upstream class the plugin's class derives from (for `forward`
    of an nn.Module, calls of the instance itself count). Memoised per index."""
    key = Ref("function", "<platform>", f"{factory}.{method}")
    through_call = method == MODULE_CALL and base is not None and _is_module(index, base)
    return index.analysis("factory_calls", key, _DECODER, lambda: _Search(index, factory, method, through_call).run())


@dataclass(frozen=True)
class _Place:
    kind: str  # local | returns | self | attribute
    module: str
    name: str  # the local name, function qualname, attribute
    owner: str = ""  # the class (self), or the function (local) qualname
    line: int = 0  # where the scope starts (a local's function)
    chain: str = ""


class _Search:
    def __init__(self, index: SymbolIndex, factory: str, method: str, through_call: bool):
        self.index, self.factory, self.method, self.through_call = index, factory, method, through_call
        self.result, self.seen, self.sites = CallSites(), set(), set()
        self.first: dict[tuple, _Place] = {}  # each place as first reached: the shortest chain names it
        self.holders: dict[str, set[Ref]] = {}  # attribute -> the classes seen keeping the instance there
        self.made = f"platform:{factory}"
        self._parent_maps: dict[str, dict[int, ast.AST]] = {}
        self._walked: dict[str, list[ast.AST]] = {}
        self._receivers: dict[int, tuple[ast.expr, Ref | None]] = {}  # the node is kept: its id stays its own

    def run(self) -> CallSites:
        todo, read = self._built(), {}
        while todo:
            while todo:
                place, hops = todo.pop(0)
                # an attribute name is one place wherever it was reached from
                key = (place.kind, "" if place.kind == "attribute" else place.module, place.name, place.owner)
                if key in self.seen or hops > MAX_HOPS:
                    continue
                self.seen.add(key)
                place = self.first.setdefault(key, place)
                if place.kind == "self":
                    self.holders.setdefault(place.name, set()).add(Ref("class", place.module, place.owner))
                if place.kind == "attribute":
                    read[place.name] = (key, place, hops, frozenset(self.holders.get(place.name, ())))
                todo += [(p, hops + 1) for p in getattr(self, f"_{place.kind}")(place)]
            # a class found keeping an attribute after its reads were followed: follow them again
            for attr, (key, place, hops, holders) in list(read.items()):
                if self.holders.get(attr, set()) - holders:
                    self.seen.discard(key)
                    todo.append((place, hops))
        for sites in (self.result.calls, self.result.unsure):
            sites.sort(key=lambda s: (s.path, s.line))
        return self.result

    def _parents(self, module: str, tree: ast.AST) -> dict[int, ast.AST]:
        if module not in self._parent_maps:
            self._parent_maps[module] = _parents(tree)
        return self._parent_maps[module]

    def _nodes(self, module: str, tree: ast.AST) -> list[ast.AST]:
        if module not in self._walked:
            self._walked[module] = list(walk(tree))
        return self._walked[module]

    def _held(self, module: str, parents: dict[int, ast.AST], expr: ast.expr) -> Ref | None:
        """receiver_class of `expr` where it is evaluated, once per node (a read is asked
        again each time the classes keeping its attribute grow)."""
        if id(expr) not in self._receivers:
            scope = _scope(expr, parents)
            owner = _enclosing_class(scope, parents) if scope is not None else None
            self._receivers[id(expr)] = (expr, receiver_class(self.index, module, owner.name if owner else None, scope, expr))
        return self._receivers[id(expr)][1]

    # ------------------------------------------------------------------ where instances are built
    def _built(self) -> list[tuple[_Place, int]]:
        needle, places = f".{self.factory}(".encode(), []
        for module, text in self.index.sources().items():
            if needle not in text or (tree := self.index.tree(module)) is None:
                continue
            parents = self._parents(module, tree)
            relpath = self.index.files[module][0]
            for call in (n for n in walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                         and n.func.attr == self.factory and (dotted(n.func.value) or "").rsplit(".", 1)[-1] == PLATFORM_INSTANCE):
                where = f"{PLATFORM_INSTANCE}.{self.factory}() ({relpath}:{call.lineno})"
                parent, scope = parents.get(id(call)), _scope(call, parents)
                if isinstance(parent, ast.Call) and parent.args and parent.args[0] is call and (dotted(parent.func) or "").rsplit(".", 1)[-1] in _BY_NAME:
                    # vLLM's factories name the class: resolve_obj_by_qualname(current_platform.get_…_cls())
                    call, parent = parent, parents.get(id(parent))
                if isinstance(parent, ast.Call) and parent.func is call:
                    places += [(p, 0) for p in self._holding(module, parent, parents, where)]
                elif isinstance(parent, ast.Assign) and len(parent.targets) == 1 and isinstance(parent.targets[0], ast.Name) and scope is not None:
                    name = parent.targets[0].id  # the class, kept in a local: each `Name(…)` builds one
                    for made in (n for n in own_nodes(scope) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == name):
                        places += [(p, 0) for p in self._holding(module, made, parents, where)]
        return places

    def _holding(self, module: str, made: ast.Call, parents: dict[int, ast.AST], chain: str) -> list[_Place]:
        """Where the instance a constructing call makes goes: a local, `self.x`, a return."""
        parent, scope = parents.get(id(made)), _scope(made, parents)
        if scope is None:
            return []
        qualname = _qualname(scope, parents)
        if isinstance(parent, ast.Return):
            return [_Place("returns", module, qualname, chain=f"{chain} → returned by {qualname}")]
        if isinstance(parent, (ast.Assign, ast.AnnAssign)) and parent.value is made:
            target = parent.targets[0] if isinstance(parent, ast.Assign) and len(parent.targets) == 1 else getattr(parent, "target", None)
            if isinstance(target, ast.Name):
                return [_Place("local", module, target.id, qualname, scope.lineno, chain)]
            if isinstance(target, ast.Attribute) and dotted(target.value) == "self":
                owner = _enclosing_class(scope, parents)
                if owner is not None:
                    return [_Place("self", module, target.attr, owner.name, chain=f"{chain} → {owner.name}.{target.attr}"),
                            _Place("attribute", module, target.attr, chain=f"{chain} → {owner.name}.{target.attr}")]
        return []

    # ------------------------------------------------------------------ following each place
    def _local(self, place: _Place) -> list[_Place]:
        tree = self.index.tree(place.module)
        scope = next((n for n in walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.lineno == place.line), None) if tree else None
        if scope is None:
            return []
        self._calls_on(place.module, scope, lambda e: isinstance(e, ast.Name) and e.id == place.name, place.chain)
        qualname, places = _qualname(scope, self._parents(place.module, tree)), []
        for node in own_nodes(scope):
            if isinstance(node, ast.Return) and isinstance(node.value, ast.Name) and node.value.id == place.name:
                places.append(_Place("returns", place.module, qualname, chain=f"{place.chain} → returned by {qualname}"))
            elif isinstance(node, ast.Call):
                places += self._handed(place.module, node, lambda e: isinstance(e, ast.Name) and e.id == place.name, place.chain)
        return list(dict.fromkeys(places))

    def _handed(self, module: str, call: ast.Call, holds, chain: str) -> list[_Place]:
        """Handed on by keyword (`_InitializedPools(token_to_kv_pool=token_to_kv_pool)`): a
        dataclass or NamedTuple field, or a constructor keeping it under its parameter's name;
        the class the call builds, when it names one, keeps it there."""
        places = []
        for keyword in call.keywords:
            if keyword.arg and holds(keyword.value):
                text = dotted(call.func)
                found = self.index.resolve_in_scope(module, text) if text else None
                if found is not None and found.ok and found.ref.kind == "class":
                    self.holders.setdefault(keyword.arg, set()).add(found.ref)
                places.append(_Place("attribute", module, keyword.arg, chain=f"{chain} → passed as {keyword.arg}="))
        return places

    def _returns(self, place: _Place) -> list[_Place]:
        name = place.name.rsplit(".", 1)[-1]
        needle, found = f"{name}(".encode(), []
        for module, text in self.index.sources().items():
            if needle not in text or (tree := self.index.tree(module)) is None:
                continue
            parents = self._parents(module, tree)
            for call in (n for n in walk(tree) if isinstance(n, ast.Call)):
                func = call.func
                if not ((isinstance(func, ast.Name) and func.id == name) or (isinstance(func, ast.Attribute) and func.attr == name)):
                    continue
                if isinstance(func, ast.Name) or "." in place.name:  # a bare name must be that function
                    found += self._holding(module, call, parents, place.chain)
        return found

    def _self(self, place: _Place) -> list[_Place]:
        owner = Ref("class", place.module, place.owner)
        tree = self.index.tree(place.module)
        bodies = [n for n in walk(tree) if isinstance(n, ast.ClassDef) and owner in self.index.mro(Ref("class", place.module, n.name))] if tree else []
        holder = f"self.{place.name}"
        for body in bodies:
            self._calls_on(place.module, body, lambda e: ast.unparse(e) == holder, place.chain)
        return []

    def _attribute(self, place: _Place) -> list[_Place]:
        """`<obj>.<attr>` read where the object's class is not shown: the same instance."""
        attr, places = place.name, []
        needle, calls = f".{attr}".encode(), f".{self.method}(".encode()
        # a module matters where it calls the method on the attribute, or hands the attribute's
        # value on whole (`= obj.attr` ending an assignment or a keyword argument): only those are parsed
        called = re.compile(rb"\." + re.escape(attr.encode()) + (rb"\s*[.(]" if self.through_call else rb"\s*\.\s*" + re.escape(self.method.encode()) + rb"\s*\("))
        handed = re.compile(rb"=\s*[\w.]+\." + re.escape(attr.encode()) + rb"\s*(?:$|[,)#;])", re.MULTILINE)
        sources = self.index.sources()
        modules = [m for m, text in sources.items() if needle in text and (called.search(text) or handed.search(text))]
        calling = [m for m in modules if calls in sources[m] or self.through_call]
        if len(calling) > MAX_MODULES:
            relpath = self.index.files[place.module][0]
            self.result.unsure.append(CallSite(relpath, 0, f"{len(calling)} modules read '.{attr}' and call '.{self.method}(': not scanned",
                                               CallShape(0, (), True, True), True, made=self.made))
            return []
        for module in modules:
            tree = self.index.tree(module)
            if tree is None:
                continue
            parents = self._parents(module, tree)

            def carried(expr: ast.expr, module=module, parents=parents) -> bool:
                if not (isinstance(expr, ast.Attribute) and expr.attr == attr) or dotted(expr.value) == "self":
                    return False
                held = self._held(module, parents, expr.value)
                return held is None or bool(self.holders.get(attr, set()) & set(self.index.mro(held)))

            if module in calling:
                self._calls_on(module, tree, carried, f"{place.chain} → read as .{attr}")
            for call in (n for n in self._nodes(module, tree) if isinstance(n, ast.Call) and n.keywords):
                places += self._handed(module, call, carried, f"{place.chain} → .{attr}")
            for stmt in (n for n in self._nodes(module, tree) if isinstance(n, ast.Assign) and len(n.targets) == 1 and carried(n.value)):
                target, scope = stmt.targets[0], _scope(stmt, parents)
                owner = _enclosing_class(scope, parents) if scope is not None else None
                if isinstance(target, ast.Attribute) and dotted(target.value) == "self" and owner is not None:
                    chain = f"{place.chain} → {owner.name}.{target.attr}"
                    places.append(_Place("self", module, target.attr, owner.name, chain=chain))
                    if target.attr != attr:
                        places.append(_Place("attribute", module, target.attr, chain=chain))
                elif isinstance(target, ast.Attribute):  # `batch.token_to_kv_pool = runner.token_to_kv_pool`
                    held = self._held(module, parents, target.value)
                    if held is not None and target.attr == attr:
                        self.holders.setdefault(attr, set()).add(held)
                    elif target.attr != attr:
                        places.append(_Place("attribute", module, target.attr, chain=f"{place.chain} → .{target.attr}"))
                elif isinstance(target, ast.Name) and scope is not None:
                    places.append(_Place("local", module, target.id, _qualname(scope, parents), scope.lineno, place.chain))
        return places

    def _calls_on(self, module: str, body: ast.AST, holds, chain: str) -> None:
        """Record each call of the method (or of the instance, for forward) on what `holds` accepts."""
        relpath = self.index.files[module][0]
        parents = None
        tree = self.index.tree(module)
        for call in (n for n in (self._nodes(module, tree) if body is tree else walk(body)) if isinstance(n, ast.Call)):
            func = call.func
            on_it = isinstance(func, ast.Attribute) and func.attr == self.method and holds(func.value)
            itself = self.through_call and holds(func)
            if not (on_it or itself) or (relpath, call.lineno) in self.sites:
                continue
            self.sites.add((relpath, call.lineno))
            parents = parents or self._parents(module, self.index.tree(module))
            scope = _scope(call, parents)
            receiver = f"{ast.unparse(func.value if on_it else func)}, holding what {chain} builds"
            for shape, binding in spread_shapes(scope, call):
                self.result.calls.append(CallSite(relpath, call.lineno, receiver, shape, True, made=self.made, binding=binding))


def spread_shapes(scope: ast.AST | None, call: ast.Call) -> list[tuple[CallShape, int]]:
    """The argument shapes a call may pass, each with the line of the binding it comes from (0:
    the call's own): one, or, for `f(…, **kwargs)` where `kwargs` is a local every binding of which
    is a dict literal with string keys (`kwargs = {"dcp_kv_mask": m}` in one branch, `kwargs = {}`
    in the other), one shape per binding with its keys as keywords. Anything else keeps
    `**kwargs` (its contents are not known)."""
    shape = call_shape(call)
    spread = [kw.value for kw in call.keywords if kw.arg is None]
    if len(spread) != 1 or not isinstance(spread[0], ast.Name) or scope is None:
        return [(shape, 0)]
    name, bindings = spread[0].id, {}
    for node in own_nodes(scope):
        if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, (ast.Store, ast.Del)):
            assign = next((a for a in own_nodes(scope) if isinstance(a, ast.Assign) and node in a.targets), None)
            value = assign.value if assign is not None else None
            if not (isinstance(value, ast.Dict) and all(isinstance(k, ast.Constant) and isinstance(k.value, str) for k in value.keys)):
                return [(shape, 0)]
            bindings.setdefault(tuple(k.value for k in value.keys), assign.lineno)
    args = scope.args if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)) else None
    if not bindings or (args is not None and name in {a.arg for a in ast.walk(args) if isinstance(a, ast.arg)}):
        return [(shape, 0)]
    return [(replace(shape, keywords=shape.keywords + keys, star_kwargs=False), line) for keys, line in bindings.items()]


def _parents(tree: ast.AST) -> dict[int, ast.AST]:
    parents: dict[int, ast.AST] = {}
    for node in walk(tree):
        for child in ast.iter_child_nodes(node):
            parents[id(child)] = node
    return parents


def _scope(node: ast.AST, parents: dict[int, ast.AST]) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    return _enclosing(node, parents, (ast.FunctionDef, ast.AsyncFunctionDef))


def _enclosing_class(node: ast.AST, parents: dict[int, ast.AST]) -> ast.ClassDef | None:
    while (node := parents.get(id(node))) is not None:
        if isinstance(node, ast.ClassDef):
            return node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and isinstance(parents.get(id(node)), (ast.FunctionDef, ast.AsyncFunctionDef)):
            return None  # a nested function's `self` is not the class's
    return None


def _qualname(scope: ast.AST, parents: dict[int, ast.AST]) -> str:
    names, node = [scope.name], scope
    while (node := parents.get(id(node))) is not None:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            names.append(node.name)
    return ".".join(reversed(names))
