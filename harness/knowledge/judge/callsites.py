"""Call sites: where an upstream release calls a function or method, and how.

A hook or patch replaces what upstream calls, so whether it works depends on the calls upstream
makes, not only on the target's signature: a REPLACE hook that lacks a keyword the new release
passes fails on that call (TypeError), and an override that makes an optional parameter required
is fine when every caller passes it. This module finds, for one resolved target, the calls of it
in the release: `self.m(…)` / `cls.m(…)` in a class whose MRO reaches the target for `m`,
`super().m(…)`, `Cls.m(…)`, `mod.f(…)`, `f(…)` where the name is bound to the target, and
`current_platform.m(…)` for platform methods; each with the arity and keywords it passes.

It stays lazy: only modules the index's pre-filter (`SymbolIndex.modules_calling`) says mention
`.m(` (or `f(` for a module-level function) are parsed, once per index. A call or reference of
the same name on a receiver the index cannot place is `unsure`: it may or may not reach the target.
"""

from __future__ import annotations

import ast
import bisect
import re
from dataclasses import dataclass, field

import msgspec

from harness.engines import profile
from harness.knowledge.judge.receivers import FOREIGN, rebound_in_body, receiver_class
from harness.knowledge.model import CallShape, Outcome, Ref, dotted, resolve_relative, walk
from harness.knowledge.scan import annotation_class, call_shape
from harness.knowledge.upstream import SymbolIndex

# Above this many candidate modules a name is too common to place receivers in (each is
# parsed and its receivers typed): calls unsure. Up to MAX_SHAPED modules each call is still
# read for its argument list (no receiver placed), so "every call of that name binds" can hold.
MAX_MODULES = 16
MAX_SHAPED = 32
# The platform object upstream code calls platform methods on; an instance of the profile's platform interface.
PLATFORM_INSTANCE = "current_platform"
# CallSite.made of an instance a function annotated to return the class built (instance_calls)
FACTORY_MADE = "factory:"


@dataclass(frozen=True)
class CallSite:
    """One upstream call: where (relpath:line), through what (`self`, `super()`, a class, module or
    bare name, `current_platform`), the arguments it passes, and whether the callee gets
    self/cls implicitly (`bound`)."""

    path: str
    line: int
    receiver: str
    shape: CallShape
    bound: bool
    # the receiver passed an `issubclass`/`isinstance` check that leaves the function otherwise
    # (`if not issubclass(backend, _SUPPORTED_BACKENDS): raise …`): one of these classes (paths)
    narrowed: tuple[str, ...] = ()
    # a call on an instance upstream builds by name (instance_calls): the global the name is
    # looked up at (`module.Name`), so a plugin that rebinds exactly that name is what it builds
    made: str = ""
    # the receiver holds nothing but instances built there (its one binding; a comprehension's
    # elements): a plugin class reaches the call only through that name
    sole: bool = False
    holder: str = ""  # what keeps that instance: `self.x` or a local name
    # the line of the `kwargs = {…}` binding a `**kwargs` of the call was read from (0: none); the
    # keywords it adds are passed only where that binding runs
    binding: int = 0
    # the class the receiver is declared to hold (an annotation, a constructor, a return type):
    # an instance of it or of a subclass, so only a class deriving from it meets the call
    typed: str = ""

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"

    @property
    def call_read(self) -> bool:
        """A call whose arguments are all visible: not a reference passed on, not the placeholder
        for calls left unscanned, no `*args` / `**kwargs` (their contents are not known)."""
        return not (self.shape.star_args or self.shape.star_kwargs or self.receiver.endswith("(referenced, not called)"))

    def describe(self) -> str:
        """`path:line (2 positional, allow_patterns=)`."""
        parts = [f"{self.shape.positional} positional"] + [f"{k}=" for k in self.shape.keywords] + [f"{k}= (sometimes)" for k in self.shape.sometimes]
        parts += ["*args"] * self.shape.star_args + ["**kwargs"] * self.shape.star_kwargs
        through = f" through {self.receiver}" if self.made else ""
        return f"{self.where} ({', '.join(parts)}){through}"


@dataclass
class CallSites:
    """The calls that reach the target (`calls`) and those of the same name the index cannot
    place (`unsure`: another receiver, or the method referenced without a call)."""

    calls: list[CallSite] = field(default_factory=list)
    unsure: list[CallSite] = field(default_factory=list)


def call_sites(index: SymbolIndex, ref: Ref) -> CallSites:
    """The upstream calls of the function or method `ref` (Ref kind "function") in `index`'s
    release, sorted by file and line. Memoised per index. A target that is not a function, or
    a method of a nested class, has no call sites listed (everything unsure is the caller's
    business: an empty `calls` with an empty `unsure` means no call was found)."""
    return index.analysis("call_sites", ref, _DECODER, lambda: _find(index, ref))


_DECODER = msgspec.msgpack.Decoder(CallSites)


def _find(index: SymbolIndex, ref: Ref) -> CallSites:
    owner, _, name = ref.qualname.rpartition(".")
    info = index.function_info(ref)
    if ref.kind != "function" or info is None or "." in owner or name.startswith("__"):
        return CallSites()  # a dunder is called by Python itself (against_calls keeps its verdict)
    decorators = {d.rsplit(".", 1)[-1] for d in info.decorators}
    static, classmethod_ = "staticmethod" in decorators, "classmethod" in decorators
    owner_ref = Ref("class", ref.module, owner) if owner else None
    result = CallSites()
    storing = set(index.modules_storing(name)) if owner else set()
    candidates = sorted(set(index.modules_calling(name, bare=not owner)) | storing)
    if owner and len(candidates) > MAX_MODULES:
        # a method name called all over the release (forward, get, run): its receivers cannot all
        # be placed. A module-level function is always placed: each call either reaches it
        # through an import of its module or name, or is of something else (_classify)
        if len(candidates) <= MAX_SHAPED:
            for module in candidates:  # the calls as written, their receivers not placed
                tree = index.tree(module)
                for node, _, _ in _calls_and_references(tree, name, lines_naming(index.sources()[module], name)) if tree is not None else ():
                    func = node.func if isinstance(node, ast.Call) else node
                    receiver = ast.unparse(func.value) if isinstance(func, ast.Attribute) else name
                    shape = call_shape(node) if isinstance(node, ast.Call) else CallShape(0, (), True, True)
                    result.unsure.append(CallSite(index.files[module][0], node.lineno, f"{receiver}.{name} (not placed: {len(candidates)} modules call a '.{name}(')"
                                                  + ("" if isinstance(node, ast.Call) else " (referenced, not called)"), shape, True))
            result.unsure.sort(key=lambda s: (s.path, s.line))
            return result
        relpath = index.files[ref.module][0]
        result.unsure.append(CallSite(relpath, info.lineno, f"{len(candidates)} modules call a '.{name}(': not scanned", CallShape(0, (), True, True), True))
        return result
    for module in candidates:
        tree = index.tree(module)
        if tree is None:
            continue
        relpath = index.files[module][0]
        stored = _stored_methods(tree, name) if module in storing else {}
        for node, enclosing, scope in _calls_and_references(tree, name, lines_naming(index.sources()[module], name)):
            site = _classify(index, module, node, enclosing, scope, ref, owner_ref, name, static, classmethod_)
            if site is None:
                continue
            found, receiver, bound, typed = site
            if found and receiver == "self" and id(node) in stored:
                _stored_calls(index, Ref("class", module, enclosing), stored[id(node)], result)
                continue
            shape = call_shape(node) if isinstance(node, ast.Call) else CallShape(0, (), True, True)
            func = node.func if isinstance(node, ast.Call) else None
            held = func.value.id if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) else None
            narrowed = _narrowed(index, module, scope, held, node.lineno) if held and scope is not None and found else ()
            entry = CallSite(relpath, node.lineno, receiver if isinstance(node, ast.Call) else f"{receiver} (referenced, not called)", shape, bound, narrowed, typed=typed)
            (result.calls if found and isinstance(node, ast.Call) else result.unsure).append(entry)
    for sites in (result.calls, result.unsure):
        sites.sort(key=lambda s: (s.path, s.line))
    return result


def _stored_methods(tree: ast.Module, name: str) -> dict[int, str]:
    """`self.<alias> = self.<name>` (a bound method kept on the instance, as vllm 0.30's
    DeepseekV4Attention keeps `self._prepare_and_attn_fn = self._prepare_and_attn`): id of the
    `self.<name>` node -> the alias."""
    found = {}
    for node in walk(tree):
        if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Attribute)
                and dotted(node.targets[0].value) == "self" and isinstance(node.value, ast.Attribute)
                and node.value.attr == name and dotted(node.value.value) == "self"):
            found[id(node.value)] = node.targets[0].attr
    return found


def _stored_calls(index: SymbolIndex, holder: Ref, alias: str, result: CallSites) -> None:
    """The calls of a bound method kept as `self.<alias>` on instances of `holder`: each
    `self.<alias>(…)` in a class whose MRO has `holder` is a call through self (a bound method:
    self is implicit); `<alias>` called or read through anything else may be the same one:
    unsure. Adds them to `result`."""
    needle = f".{alias}".encode()
    for module in [m for m, text in index.sources().items() if needle in text]:
        tree = index.tree(module)
        if tree is None:
            continue
        relpath = index.files[module][0]
        for node, enclosing, _ in _calls_and_references(tree, alias, lines_naming(index.sources()[module], alias)):
            func = node.func if isinstance(node, ast.Call) else node
            through_self = isinstance(func, ast.Attribute) and dotted(func.value) == "self" and enclosing is not None
            if through_self and holder not in index.mro(Ref("class", module, enclosing)):
                continue  # another class's attribute of that name
            if isinstance(node, ast.Call) and through_self:
                result.calls.append(CallSite(relpath, node.lineno, "self", call_shape(node), True))
            else:
                receiver = ast.unparse(func.value) if isinstance(func, ast.Attribute) else alias
                shape = call_shape(node) if isinstance(node, ast.Call) else CallShape(0, (), True, True)
                result.unsure.append(CallSite(relpath, node.lineno, f"{receiver}.{alias}, which may hold it", shape, True))


def _narrowed(index: SymbolIndex, module: str, scope: ast.FunctionDef | ast.AsyncFunctionDef, name: str, line: int) -> tuple[str, ...]:
    """The classes a check before `line` in `scope`'s body narrows the variable `name` to:
    `if not issubclass(name, X): raise/return` or `assert isinstance(name, X)` (vllm 0.23's
    whisper_causal.py: `if not issubclass(underlying_attn_backend, _SUPPORTED_BACKENDS): raise
    NotImplementedError`, then `underlying_attn_backend.get_kv_cache_shape(…)` in a lambda). X is a
    class or a tuple of them, written there or bound to a name in the function or module
    (`tuple(b for b in (A, B) if b is not None)` included). () when there is none, or when one
    of X's classes cannot be resolved."""
    for stmt in scope.body:
        if stmt.lineno >= line:
            break
        test = stmt.test if isinstance(stmt, (ast.If, ast.Assert)) else None
        if isinstance(stmt, ast.If):
            exits = not stmt.orelse and stmt.body and isinstance(stmt.body[-1], (ast.Raise, ast.Return))
            test = test.operand if exits and isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not) else None
        if (isinstance(test, ast.Call) and dotted(test.func) in ("issubclass", "isinstance") and len(test.args) == 2
                and isinstance(test.args[0], ast.Name) and test.args[0].id == name):
            return _classes(index, module, scope, test.args[1])
    return ()


def _classes(index: SymbolIndex, module: str, scope: ast.FunctionDef | ast.AsyncFunctionDef, expr: ast.expr, depth: int = 0) -> tuple[str, ...]:
    """The class paths `expr` names: a class, a tuple or list of them, `tuple(b for b in (…) …)`,
    or a name the function or the module binds to one of those. () when any part is unknown."""
    if depth > 3:
        return ()
    if isinstance(expr, (ast.Tuple, ast.List)):
        parts = [_classes(index, module, scope, element, depth + 1) for element in expr.elts]
        return tuple(path for part in parts for path in part) if parts and all(parts) else ()
    if isinstance(expr, ast.Call) and dotted(expr.func) in ("tuple", "list") and len(expr.args) == 1:
        inner = expr.args[0]
        source = inner.generators[0].iter if isinstance(inner, (ast.GeneratorExp, ast.ListComp)) and len(inner.generators) == 1 else inner
        return _classes(index, module, scope, source, depth + 1)
    if isinstance(expr, ast.Name):
        local = [s.value for s in scope.body if isinstance(s, ast.Assign) and any(isinstance(t, ast.Name) and t.id == expr.id for t in s.targets)]
        if len(local) == 1:
            return _classes(index, module, scope, local[0], depth + 1)
        if local:
            return ()
    text = dotted(expr)
    found = index.resolve_in_scope(module, text) if text else None
    if found is None or not found.ok:
        return ()
    if found.ref.kind == "class":
        return (found.ref.path,)
    return ()


def conditions_at(index: SymbolIndex, site: CallSite) -> list[str]:
    """The `if`/`while`/conditional-expression tests a call at `site` runs under inside its
    function, outermost first, as source text (`not (…)` for an `else` branch), then those the
    `**kwargs` binding it was read with runs under: the run-time condition a failing call is named
    with (docs/static-check.md, row `runtime_condition`). Empty for a call under none, or when the
    site cannot be found."""
    conditions: list[str] = []
    for _, test, positive in tests_at(index, site):
        text = ast.unparse(test) if positive else f"not ({ast.unparse(test)})"
        if text not in conditions:
            conditions.append(text)
    return conditions


def tests_at(index: SymbolIndex, site: CallSite) -> list[tuple[str, ast.expr, bool]]:
    """(module, test, branch) for each test conditions_at names: `branch` True for the body of
    an `if`/`while`/conditional expression, False for its `else`."""
    module = index.module_at(site.path)
    tree = index.tree(module) if module is not None else None
    if tree is None:
        return []
    found: list[tuple[str, ast.expr, bool]] = []

    def visit(node: ast.AST, tests: list[tuple[ast.expr, bool]], line: int, kind: type) -> bool:
        for field_name, value in ast.iter_fields(node):
            children = value if isinstance(value, list) else [value]
            for child in (c for c in children if isinstance(c, ast.AST)):
                if getattr(child, "lineno", line) > line or getattr(child, "end_lineno", line) < line:
                    continue
                inner = tests
                if isinstance(node, (ast.If, ast.While, ast.IfExp)) and field_name in ("body", "orelse"):
                    inner = [*tests, (node.test, field_name == "body")]
                if isinstance(child, kind) and child.lineno == line:
                    found.extend((module, test, positive) for test, positive in inner)
                    return True
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                    inner = []
                if visit(child, inner, line, kind):
                    return True
        return False

    visit(tree, [], site.line, ast.Call)
    if site.binding:  # and those its `**kwargs` binding runs under
        visit(tree, [], site.binding, ast.Assign)
    return found


def platform_instance_read(index: SymbolIndex, module: str, node: ast.expr) -> bool:
    """Whether `node` in upstream `module` reads the engine's platform instance
    (`current_platform`, `platforms.current_platform`; not another object of that name,
    _other_instance)."""
    instance = profile().platform_instance
    text = dotted(node)
    return bool(instance and text and text.rsplit(".", 1)[-1] == instance.rpartition(".")[2] and not _other_instance(index, module))


def lines_naming(text: bytes, name: str) -> list[int]:
    """Line numbers (1-based, sorted) where `name` occurs as a word in `text`."""
    pattern = re.compile(rb"\b" + re.escape(name.encode()) + rb"\b")
    lines, line, last = [], 1, 0
    for match in pattern.finditer(text):
        line += text.count(b"\n", last, match.start())
        last = match.start()
        if not lines or lines[-1] != line:
            lines.append(line)
    return lines


def spans(node: ast.AST, lines: list[int]) -> bool:
    """Whether `node`'s lines hold one of `lines` (sorted); a node without lines may hold any.
    A decorated def or class starts at its first decorator, above its `lineno`."""
    start = getattr(node, "lineno", None)
    if start is None:
        return True
    start = min([start, *(d.lineno for d in getattr(node, "decorator_list", ()))])
    at = bisect.bisect_left(lines, start)
    return at < len(lines) and lines[at] <= (node.end_lineno or start)


def _calls_and_references(tree: ast.Module, name: str, lines: list[int]):
    """(node, enclosing class qualname or None, innermost enclosing function or None) for every
    call of `….name(…)` / `name(…)` and every other load of `….name` (a bound method passed on
    as a value). Only nodes spanning one of `lines` (where the name occurs) are walked: a
    release module is large, its mentions few."""
    called: set[int] = set()

    def visit(node: ast.AST, cls: str | None, scope):
        for child in ast.iter_child_nodes(node):
            if not spans(child, lines):
                continue
            inner, inner_scope = cls, scope
            if isinstance(child, ast.ClassDef):
                inner, inner_scope = (f"{cls}.{child.name}" if cls else child.name), None
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                inner_scope = child
            if isinstance(child, ast.Call):
                func = child.func
                if (isinstance(func, ast.Attribute) and func.attr == name) or (isinstance(func, ast.Name) and func.id == name):
                    called.add(id(func))
                    yield child, cls, scope
            elif isinstance(child, ast.Attribute) and child.attr == name and isinstance(child.ctx, ast.Load) and id(child) not in called:
                yield child, cls, scope
            yield from visit(child, inner, inner_scope)

    yield from visit(tree, None, None)


def _classify(index, module, node, enclosing, scope, ref, owner_ref, name, static, classmethod_):
    """(reaches the target, receiver text, bound, the class the receiver is typed with or "") for
    one call or reference, or None when it certainly does not reach the target (another class's
    own method, another function, a method of an unrelated class's instance or of another
    library's object)."""
    func = node.func if isinstance(node, ast.Call) else node
    if isinstance(func, ast.Name):  # a bare name: what the module binds it to
        if owner_ref is not None:
            return None
        found = index.resolve_in_scope(module, name)
        return (True, name, False, "") if found.ok and found.ref == ref else None
    receiver = func.value
    implicit = not static  # through an instance (or a class, for a classmethod) self/cls comes implicitly
    if owner_ref is None:  # a module-level function reached through its module
        text = dotted(receiver)
        found = index.resolve_in_scope(module, f"{text}.{name}") if text else None
        if found is not None and found.ok:
            return (True, text, False, "") if found.ref == ref else None
        return False, text or ast.unparse(receiver), False, ""
    if isinstance(receiver, ast.Name) and receiver.id in ("self", "cls") and enclosing:
        definer = _first_definer(index, Ref("class", module, enclosing), name, after_self=False)
        return (True, receiver.id, implicit, "") if definer == owner_ref else None
    if isinstance(receiver, ast.Call) and isinstance(receiver.func, ast.Name) and receiver.func.id == "super" and enclosing:
        definer = _first_definer(index, Ref("class", module, enclosing), name, after_self=True)
        return (True, "super()", implicit, "") if definer == owner_ref else None
    text = dotted(receiver) if not isinstance(receiver, ast.Call) else None
    if text and text.rsplit(".", 1)[-1] == PLATFORM_INSTANCE:
        if _other_instance(index, module):
            return None
        platform = index.resolve(profile().platform_bases[0])
        if platform.ok and platform.ref.kind == "class":
            return (True, text, implicit, "") if _first_definer(index, platform.ref, name, after_self=False) == owner_ref else None
    if text:
        found = index.resolve_in_scope(module, text)
        if found.ok and found.ref.kind == "class":
            definer = _first_definer(index, found.ref, name, after_self=False)
            # through the class: a plain method gets self explicitly, a classmethod gets cls implicitly
            return (True, text, classmethod_, "") if definer == owner_ref else None
        if found.ok and found.ref.kind in ("module", "external"):
            return None  # a module's own function of that name, not a method; another library's object
        chosen = _chosen_classes(index, module, text)
        if chosen:  # `Impl = A if available else B` at module level: one of the two classes
            definers = {_first_definer(index, klass, name, after_self=False) == owner_ref for klass in chosen}
            if definers == {False}:
                return None
            if definers == {True}:
                return (True, text, classmethod_, "")
        held = _attribute_class(index, module, enclosing, text) if enclosing else None
        if held is not None:  # `self.comm.send(…)` with `comm: Optional[Base]` declared on the class
            mro = index.mro(owner_ref)
            reaches = held in mro or owner_ref in index.mro(held)
            return (True, text, implicit, held.path) if reaches else None
    held = receiver_class(index, module, enclosing, scope, receiver)
    if held == FOREIGN or held is None and _outside_annotated(index, module, scope, receiver, owner_ref):
        return None  # a method of another library's object (a zmq socket, a `t: torch.Tensor` parameter)
    if held is not None:  # `cp_group: GroupCoordinator`, `get_tp_group() -> GroupCoordinator`, `x = self.comm`
        return (True, text or ast.unparse(receiver), implicit, held.path) if held in index.mro(owner_ref) or owner_ref in index.mro(held) else None
    return False, text or ast.unparse(receiver), implicit, ""


def _outside_annotated(index: SymbolIndex, module: str, scope, receiver: ast.expr, owner: Ref) -> bool:
    """Whether `receiver` is a parameter of `scope` annotated with another library's class that
    `owner` (the class defining the method) does not derive from (`def device_guard(t:
    torch.Tensor)`: `t.get_device()` is the tensor's method; only a class deriving from both
    could reach the owner's)."""
    if scope is None or not isinstance(receiver, ast.Name):
        return False
    args = scope.args
    annotation = next((a.annotation for a in [*args.posonlyargs, *args.args, *args.kwonlyargs] if a.arg == receiver.id), None)
    if annotation is None or rebound_in_body(scope, receiver.id):
        return False  # (rebound in the body: not only what the caller passed)
    named = annotation_class(annotation)
    found = index.resolve_in_scope(module, named) if named else None
    return found is not None and found.ok and found.ref.kind == "external" and all(c.path != found.ref.path for c in index.mro(owner))


def _chosen_classes(index: SymbolIndex, module: str, text: str) -> list[Ref]:
    """The classes a module-level name bound once to a choice between classes holds
    (`MusaPlatform = MtmlMusaPlatform if mtml_available else NonMtmlMusaPlatform`, SGLang 0.5.17
    multimodal_gen/runtime/platforms/musa.py:378): each branch resolved in `module`; empty
    when the name is bound otherwise or a branch is no class."""
    # (read from the text first: parsed only where the name is assigned at the start of a line)
    tree = index.tree(module) if "." not in text and re.search(rb"^" + re.escape(text.encode()) + rb"\s*=", index.sources().get(module, b""), re.MULTILINE) else None
    bindings = [stmt.value for stmt in (tree.body if tree is not None else []) if isinstance(stmt, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == text for t in stmt.targets)]
    if len(bindings) != 1 or not isinstance(bindings[0], ast.IfExp):
        return []
    found = [index.resolve_in_scope(module, dotted(branch) or "") for branch in (bindings[0].body, bindings[0].orelse)]
    return [f.ref for f in found] if all(f.ok and f.ref.kind == "class" for f in found) else []


def _attribute_class(index: SymbolIndex, module: str, enclosing: str, text: str) -> Ref | None:
    """The upstream class `self.<attr>` holds by its annotation in the enclosing class or a base
    (`device_communicator: Optional[DeviceCommunicatorBase]` in the class body, or
    `self.punica_wrapper: PunicaWrapperBase = …` in a method): an instance of it or of a
    subclass. None when no annotation names one class."""
    head, _, attr = text.partition(".")
    if head != "self" or not attr or "." in attr:
        return None
    for klass in index.mro(Ref("class", module, enclosing)):
        info = index.class_info(klass) if klass.kind == "class" else None
        tree = index.tree(klass.module) if info is not None else None
        node = next((n for n in walk(tree) if isinstance(n, ast.ClassDef) and n.lineno == info.lineno), None) if tree else None
        for stmt in walk(node) if node is not None else ():
            if isinstance(stmt, ast.AnnAssign) and (
                (isinstance(stmt.target, ast.Name) and stmt.target.id == attr)
                or (isinstance(stmt.target, ast.Attribute) and stmt.target.attr == attr and dotted(stmt.target.value) == "self")
            ):
                named = annotation_class(stmt.annotation)
                found = index.resolve_in_scope(klass.module, named) if named else None
                return found.ref if found is not None and found.ok and found.ref.kind == "class" else None
    return None


def _first_definer(index: SymbolIndex, cls: Ref, name: str, after_self: bool) -> Ref | None:
    """The class in `cls`'s MRO (after `cls` itself for super()) whose body defines `name`."""
    mro = index.mro(cls)
    for klass in mro[1:] if after_self else mro:
        info = index.class_info(klass) if klass.kind == "class" else None
        if info is not None and name in info.members:
            return klass
    return None


# torch.nn.Module.__call__ runs `forward` with the call's arguments (torch/nn/modules/module.py
# _call_impl), so `self.attn(q, k)` is a call of the instance's `forward`
MODULE_CALL = "forward"
PARAMETER = "parameter "  # a CallSite's `made` for an instance built by calling a parameter
# calls that hold the instances passed to them and hand them out by index or iteration
_CONTAINERS = frozenset({"ModuleList", "ModuleDict", "list", "tuple", "dict"})


def instance_calls(index: SymbolIndex, cls: Ref, method: str, by_parameter: bool = False) -> CallSites:
    """The calls upstream makes of `method` on the instances it builds of class `cls` by name
    (`self.attn = Attn(…)` then `self.attn.m(…)`; kept in a list, `ModuleList`/`ModuleDict` or a
    comprehension, then `self.layers[i].m(…)` or `for layer in self.layers: layer.m(…)`; a local
    variable, the same within its function), and for `forward` of an nn.Module the calls of the
    instance itself (`self.attn(…)`: Module.__call__ runs forward). Each call's `made` is the
    global its constructing name is looked up at. An instance kept anywhere else (returned,
    passed on) is one `unsure` entry naming where it was built. `by_parameter`: instead, the
    calls on instances built by calling a parameter that defaults to `cls` (_parameter_builders;
    `made` "parameter <name>"). Memoised per index."""
    key = Ref("function", cls.module, f"{cls.qualname}.{method}")
    return index.analysis("parameter_instance_calls" if by_parameter else "instance_calls", key, _DECODER,
                          lambda: _find_instances(index, cls, method, by_parameter))


def _factories(index: SymbolIndex, cls: Ref) -> dict[str, str]:
    """The module-level functions of the release whose return annotation names `cls` (`def
    create_sampler(...) -> "Sampler":`): function path -> the `made` of what they return,
    FACTORY_MADE and the path (no one global decides its class: a factory may hand back a
    subclass it was given)."""
    name = cls.qualname.rpartition(".")[2]
    arrow = re.compile(rb"->\s*['\"]?(?:Optional\[)?(?:[\w.]+\.)?" + re.escape(name.encode()) + rb"\b")
    found: dict[str, str] = {}
    for module in [m for m, text in index.sources().items() if name.encode() in text and arrow.search(text)]:
        tree = index.tree(module)
        for node in tree.body if tree is not None else ():
            text = annotation_class(node.returns) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else None
            resolved = index.resolve_in_scope(module, text) if text else None
            if resolved is None or not resolved.ok or resolved.ref != cls:
                continue
            found[f"{module}.{node.name}"] = f"{FACTORY_MADE}{module}.{node.name}"
    return found


def _find_instances(index: SymbolIndex, cls: Ref, method: str, by_parameter: bool) -> CallSites:
    name = cls.qualname.rpartition(".")[2]
    through_call = method == MODULE_CALL and _is_module(index, cls)
    result, needle = CallSites(), f"{name}(".encode()
    # a function annotated to return the class (`self.sampler = create_sampler()`) builds one too
    factories = {} if by_parameter else _factories(index, cls)
    needles = [needle, *{f"{path.rpartition('.')[2]}(".encode() for path in factories}]
    # a parameter defaulting to the class (`attn_layer_type: type[nn.Module] = LlamaAttention`):
    # what the function builds by calling it is that class, or the subclass a caller passes
    default = re.compile(rb"=[ \t]*(?:[\w.]+\.)?" + re.escape(name.encode()) + rb"[ \t]*[,)\n]")
    for module in [m for m, text in index.sources().items() if (default.search(text) if by_parameter else any(n in text for n in needles))]:
        tree = index.tree(module)
        if tree is None:
            continue
        relpath, parents, functions = index.files[module][0], {}, []
        for node in walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                functions.append(node)
            for child in ast.iter_child_nodes(node):
                parents[id(child)] = node
        builders = _parameter_builders(index, module, functions, name, cls) if by_parameter else {}
        for node in walk(tree):
            if id(node) in builders:
                made = builders[id(node)]
            elif by_parameter or not isinstance(node, ast.Call) or not isinstance(node.func, (ast.Name, ast.Attribute)):
                continue
            elif (node.func.id if isinstance(node.func, ast.Name) else node.func.attr) == name:
                made = _made_at(index, module, node.func, cls)
            else:
                called = index.resolve_in_scope(module, dotted(node.func) or "") if factories else None
                made = factories.get(called.ref.path) if called is not None and called.ok else None
            if made is None:
                continue
            held = _holder(node, parents)
            scope = _enclosing(node, parents, (ast.FunctionDef, ast.AsyncFunctionDef))
            owner = _enclosing(node, parents, (ast.ClassDef,))
            if held is None or scope is None or (any(h.startswith("self.") for h in held[0]) and owner is None):
                result.unsure.append(CallSite(relpath, node.lineno, f"a {name} built here and kept where the scan does not follow",
                                              CallShape(0, (), True, True), True, made=made))
                continue
            holders, element, mixed = held
            placed: set[int] = set()
            for holder in holders:
                if holder.startswith("self."):
                    owner_ref = Ref("class", module, owner.name)
                    bodies = [n for n in tree.body if isinstance(n, ast.ClassDef) and owner_ref in index.mro(Ref("class", module, n.name))]
                else:
                    bodies = [scope]
                sole = not mixed and _bindings(bodies, holder) == 1
                for body in bodies:
                    for call, receiver in _holder_calls(body, holder, element, method, through_call):
                        if (call.lineno > node.lineno or holder.startswith("self.")) and id(call) not in placed:
                            placed.add(id(call))  # a loop over islice(self.layers, self.start, self.end) is one call
                            result.calls.append(CallSite(relpath, call.lineno, receiver, call_shape(call), True, made=made, sole=sole, holder=holder))
                    if holder.startswith("self.") and not element:
                        result.calls.extend(_handed_over_calls(index, module, body, holder, method, through_call, made))
    for sites in (result.calls, result.unsure):
        sites.sort(key=lambda s: (s.path, s.line))
    return result


def _handed_over_calls(index: SymbolIndex, module: str, body: ast.AST, holder: str, method: str, through_call: bool, made: str) -> list[CallSite]:
    """The calls of `method` an upstream class makes on an instance handed to its constructor:
    `RejectionSampler(self.sampler)` in `body` (vLLM 0.17 gpu_model_runner.py:532), where that
    class's `__init__` keeps the parameter once as `self.y` (rejection_sampler.py:55), then
    `self.y(…)` / `self.y.m(…)` in it or a subclass of it in its module (:102). One hand-over."""
    found: list[CallSite] = []
    for call in (n for n in walk(body) if isinstance(n, ast.Call) and dotted(n.func)):
        given = [(position, a) for position, a in enumerate(call.args)] + [(k.arg, k.value) for k in call.keywords if k.arg]
        slots = [slot for slot, a in given if dotted(a) == holder]
        target = index.resolve_in_scope(module, dotted(call.func) or "") if slots else None
        if target is None or not target.ok or target.ref.kind != "class":
            continue
        tree = index.tree(target.ref.module)
        for slot in slots:
            kept = kept_as(index, target.ref, slot)
            if kept is None or tree is None:
                continue
            relpath = index.files[target.ref.module][0]
            for klass in (n for n in tree.body if isinstance(n, ast.ClassDef) and target.ref in index.mro(Ref("class", target.ref.module, n.name))):
                found += [CallSite(relpath, inner.lineno, receiver, call_shape(inner), True, made=made, holder=f"self.{kept}")
                          for inner, receiver in _holder_calls(klass, f"self.{kept}", False, method, through_call)]
    return found


def kept_as(index: SymbolIndex, cls: Ref, slot: int | str, depth: int = 0) -> str | None:
    """The attribute a constructor of `cls` keeps the argument at `slot` (a position after self, or
    a keyword) in: `self.y = param` in the first `__init__` of its MRO, once; an `__init__` that
    hands the parameter to `super().__init__(…)` keeps it where that one does. None otherwise."""
    for klass in index.mro(cls)[:4] if depth < 4 else ():
        node = index.class_node(klass) if klass.kind == "class" else None
        init = next((n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None) if node is not None else None
        if init is None and node is not None and any((dotted(d.func if isinstance(d, ast.Call) else d) or "").rsplit(".", 1)[-1] == "dataclass"
                                                     for d in node.decorator_list):
            # the __init__ @dataclass writes keeps each field under its own name, in order (dataclasses docs)
            fields = [st.target.id for st in node.body if isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name)
                      and "ClassVar" not in ast.unparse(st.annotation)]
            return fields[slot] if isinstance(slot, int) and 0 <= slot < len(fields) else slot if slot in fields else None
        if init is None:
            continue
        params = [a.arg for a in (*init.args.posonlyargs, *init.args.args)]
        param = params[slot + 1] if isinstance(slot, int) and 0 <= slot + 1 < len(params) else slot if isinstance(slot, str) and slot in params else None
        if param is None or len(params) < 2:
            return None
        kept = [t.attr for stmt in walk(init) if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Name) and stmt.value.id == param
                for t in stmt.targets if isinstance(t, ast.Attribute) and dotted(t.value) == params[0]]
        if len(kept) == 1:
            return kept[0]
        handed = [(n, [i for i, a in enumerate(n.args) if dotted(a) == param] + [k.arg for k in n.keywords if k.arg and dotted(k.value) == param])
                  for n in walk(init) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "__init__"
                  and isinstance(n.func.value, ast.Call) and dotted(n.func.value.func) == "super"]
        handed = [(n, slots) for n, slots in handed if slots]
        if len(handed) != 1 or len(handed[0][1]) != 1 or kept:
            return None
        later = index.mro(klass)[1:2]
        return kept_as(index, later[0], handed[0][1][0], depth + 1) if later and later[0].kind == "class" else None
    return None


def _is_module(index: SymbolIndex, cls: Ref) -> bool:
    """Whether `cls` derives from a class outside the release that has `__call__` and `forward`
    (torch.nn.Module)."""
    outside = [klass for klass in index.mro(cls) if klass.kind != "class"]
    return any(index.member(k, "__call__").outcome is not Outcome.missing and index.member(k, MODULE_CALL).outcome is not Outcome.missing
               for k in outside)


def _parameter_builders(index: SymbolIndex, module: str, functions: list[ast.FunctionDef | ast.AsyncFunctionDef], name: str, cls: Ref) -> dict[int, str]:
    """Calls of a function's parameter whose default is `cls` (`def __init__(…, attn_layer_type=
    LlamaAttention): self.self_attn = attn_layer_type(…)`), the parameter not rebound in the
    function: id(call) -> "parameter <name>" (what it builds is what its caller hands in, and
    callers hand it on under the same name: vLLM's layer_type through _init_model to LlamaModel)."""
    found: dict[int, str] = {}
    for function in functions:
        args = function.args
        positional = [*args.posonlyargs, *args.args]
        defaults = [*zip(positional[len(positional) - len(args.defaults):], args.defaults), *zip(args.kwonlyargs, args.kw_defaults)]
        for parameter, value in defaults:
            if value is None or (dotted(value) or "").rpartition(".")[2] != name:
                continue
            made = _made_at(index, module, value, cls)
            if made is None or _bindings([function], parameter.arg) > 1:  # the parameter itself counts one
                continue
            found.update({id(n): f"{PARAMETER}{parameter.arg}" for n in walk(function)
                          if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == parameter.arg})
    return found


def _made_at(index: SymbolIndex, module: str, func: ast.expr, cls: Ref) -> str | None:
    """The global a constructing call's name is looked up at (`module.Name`, or `other.Name`
    for `other.Name(…)`) when the call builds `cls`; None otherwise."""
    text = dotted(func)
    found = index.resolve_in_scope(module, text) if text else None
    if found is None or not found.ok or found.ref != cls:
        return None
    if isinstance(func, ast.Name):
        return f"{module}.{func.id}"
    home = index.resolve_in_scope(module, dotted(func.value) or "")
    return f"{home.ref.path}.{func.attr}" if home.ok and home.ref.kind == "module" else text


def _enclosing(node: ast.AST, parents: dict[int, ast.AST], kinds: tuple[type, ...]):
    while (node := parents.get(id(node))) is not None:
        if isinstance(node, kinds):
            return node
    return None


def _holder(node: ast.Call, parents: dict[int, ast.AST]) -> tuple[tuple[str, ...], bool, bool] | None:
    """Where the instance a constructing call makes is kept: ("self.x" or a local name, or each
    name a factory's result is unpacked to; whether as an element of a container; whether other
    values may be kept beside it: a branch of an `if … else`, a literal container), or None when
    it goes anywhere else. Built by a function handed to a factory (vLLM's `make_layers(n,
    lambda prefix: Layer(…))`, models/utils.py), it is an element of what the factory returns."""
    child, element, mixed = node, False, False
    while (parent := parents.get(id(child))) is not None:
        if isinstance(parent, (ast.Assign, ast.AnnAssign)) and parent.value is child:
            targets = parent.targets if isinstance(parent, ast.Assign) else [parent.target]
            target = targets[0] if len(targets) == 1 else None
            if isinstance(target, ast.Tuple) and element:  # `self.start, self.end, self.layers = make_layers(…)`
                names = tuple(f"self.{t.attr}" if isinstance(t, ast.Attribute) and dotted(t.value) == "self" else t.id
                              for t in target.elts if isinstance(t, ast.Name) or isinstance(t, ast.Attribute) and dotted(t.value) == "self")
                return (names, element, mixed) if names else None
            if isinstance(target, ast.Attribute) and dotted(target.value) == "self":
                return (f"self.{target.attr}",), element, mixed
            return ((target.id,), element, mixed) if isinstance(target, ast.Name) else None
        if isinstance(parent, ast.Lambda) and parent.body is child:
            factory = parents.get(id(parent))
            if isinstance(factory, ast.keyword):  # `make_layers(n, layer_fn=lambda: …)`
                factory = parents.get(id(factory))
            if not (isinstance(factory, ast.Call) and (parent in factory.args or any(k.value is parent for k in factory.keywords))):
                return None
            child, element = factory, True
            continue
        if isinstance(parent, (ast.List, ast.Tuple, ast.Set, ast.Dict, ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            if isinstance(parent, ast.Dict) and child not in parent.values:
                return None
            element, mixed = True, mixed or isinstance(parent, (ast.List, ast.Tuple, ast.Set, ast.Dict))
        elif isinstance(parent, ast.Call) and (dotted(parent.func) or "").rpartition(".")[2] in _CONTAINERS and child in parent.args:
            element = True
        elif isinstance(parent, (ast.IfExp, ast.Starred)):
            mixed = mixed or isinstance(parent, ast.IfExp)
        else:
            return None
        child = parent
    return None


def _bindings(bodies: list[ast.AST], holder: str) -> int:
    """How many statements in `bodies` bind `holder` (`self.x` or a local name; a parameter
    counts as one more): its stores, as targets of any assignment, loop or `with`."""
    count = 0
    for body in bodies:
        if not holder.startswith("self.") and isinstance(body, (ast.FunctionDef, ast.AsyncFunctionDef)):
            count += holder in {a.arg for a in ast.walk(body.args) if isinstance(a, ast.arg)}
        count += sum(1 for n in walk(body) if isinstance(getattr(n, "ctx", None), ast.Store) and ast.unparse(n) == holder)
    return count


def _holder_calls(body: ast.AST, holder: str, element: bool, method: str, through_call: bool):
    """(call, receiver text) for each call of `method` (and of the instance itself, when
    `through_call`) on what `holder` keeps, inside `body`."""
    def held(expr: ast.expr) -> bool:
        if element:
            return isinstance(expr, ast.Subscript) and ast.unparse(expr.value) == holder
        return ast.unparse(expr) == holder

    loops = set()
    if element:  # `for layer in self.layers` / `islice(self.layers, …)` / `.values()` / enumerate
        for loop in walk(body):
            if isinstance(loop, (ast.For, ast.comprehension)) and any(ast.unparse(n) == holder for n in walk(loop.iter)):
                target = loop.target.elts[-1] if isinstance(loop.target, ast.Tuple) and loop.target.elts else loop.target
                if isinstance(target, ast.Name):
                    loops.add(target.id)
    for call in walk(body):
        if not isinstance(call, ast.Call):
            continue
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr == method and (held(func.value) or (isinstance(func.value, ast.Name) and func.value.id in loops)):
            yield call, ast.unparse(func.value)
        elif through_call and (held(func) or (isinstance(func, ast.Name) and func.id in loops)):
            yield call, f"{ast.unparse(func)}(…), which nn.Module.__call__ hands to forward"


def attribute_calls(index: SymbolIndex, cls: Ref, attr: str, method: str, through_call: bool, element: bool = False) -> CallSites:
    """The calls the methods of the upstream class `cls` (and of its upstream bases: an instance
    of cls runs them too) make of `method` on what they keep in `self.<attr>`:
    `self.attr.method(…)`, and with `through_call` the object itself, `self.attr(…)`
    (nn.Module.__call__ hands it to forward; a plain object's __call__); with `element`, on the
    elements of it (`for blk in self.attr: blk(…)`, `self.attr[i](…)`). Bound calls. Memoised
    per index."""
    key = Ref("function", cls.module, f"{cls.qualname}.{attr}{'[]' if element else ''}.{method}{'()' if through_call else ''}")
    return index.analysis("attribute_calls", key, _DECODER, lambda: _attribute_calls(index, cls, attr, method, through_call, element))


def _attribute_calls(index: SymbolIndex, cls: Ref, attr: str, method: str, through_call: bool, element: bool) -> CallSites:
    result = CallSites()
    for klass in index.mro(cls):
        tree = index.tree(klass.module) if klass.kind == "class" and klass.module and "." not in klass.qualname else None
        body = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == klass.qualname), None) if tree else None
        if body is None:
            continue
        relpath = index.files[klass.module][0]
        for function in body.body:
            params = [a.arg for a in (*function.args.posonlyargs, *function.args.args)] if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)) else []
            if not params:
                continue
            holder = f"{params[0]}.{attr}"
            for call, receiver in _holder_calls(function, holder, element, method, through_call):
                result.calls.append(CallSite(relpath, call.lineno, receiver, call_shape(call), True))
    result.calls.sort(key=lambda s: (s.path, s.line))
    return result


def platform_calls(index: SymbolIndex, method: str) -> CallSites:
    """The calls the release makes of `method` on the engine's platform instance
    (EngineProfile.platform_instance: `current_platform.get_device_capability()`), the object
    made from the plugin's activated platform class: each reaches that class's `method`.
    Bound calls. Memoised per index."""
    instance = profile().platform_instance
    if not instance:
        return CallSites()
    key = Ref("function", instance.rpartition(".")[0], f"{instance.rpartition('.')[2]}.{method}")
    return index.analysis("platform_calls", key, _DECODER, lambda: _platform_calls(index, instance, method))


def _platform_calls(index: SymbolIndex, instance: str, method: str) -> CallSites:
    short = instance.rpartition(".")[2]
    needle = f"{short}.{method}(".encode()
    result = CallSites()
    for module, text in index.sources().items():
        if needle not in text or (tree := index.tree(module)) is None or _other_instance(index, module):
            continue
        relpath = index.files[module][0]
        for node in near(tree, lines_naming(text, f"{short}.{method}")):
            receiver = dotted(node.func.value) if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == method else None
            if receiver and receiver.rsplit(".", 1)[-1] == short:  # as _classify reads PLATFORM_INSTANCE
                result.calls.append(CallSite(relpath, node.lineno, receiver, call_shape(node), True))
    result.calls.sort(key=lambda s: (s.path, s.line))
    return result


def _other_instance(index: SymbolIndex, module: str) -> bool:
    """Whether every `from X import current_platform` in upstream `module` (at any depth) imports
    another object than the engine's platform instance (EngineProfile.platform_instance,
    resolved): SGLang 0.5.23's multimodal_gen reads its own
    `sglang.multimodal_gen.runtime.platforms.current_platform`, built from another entry-point
    group (multimodal_gen/runtime/platforms/__init__.py), so its calls never reach the plugin's
    SRT platform class. False when the module binds the name any other way, imports it from
    nowhere, or an import does not resolve (kept, as before). Memoised per index."""
    memo = index.memo.setdefault("other_platform_instance", {})
    if module not in memo:
        instance = profile().platform_instance
        engine = index.resolve(instance).ref if instance else None
        short = (instance or "").rpartition(".")[2]
        tree = index.tree(module) if engine is not None else None
        sources: list[str] = []
        for node in walk(tree) if tree is not None else ():
            if isinstance(node, ast.ImportFrom) and any((a.asname or a.name) == short for a in node.names):
                if any(a.name != short for a in node.names if (a.asname or a.name) == short):
                    sources = []
                    break
                sources.append(resolve_relative(module, index.files[module][1], node.level, node.module))
            elif isinstance(node, ast.Name) and node.id == short and isinstance(node.ctx, ast.Store):
                sources = []
                break
        memo[module] = bool(sources) and all((found := index.resolve(f"{source}.{short}")).ok and found.ref != engine for source in sources)
    return memo[module]


def near(tree: ast.AST, lines: list[int]):
    """Every node of `tree` whose lines span one of `lines` (sorted; where a name is mentioned):
    a release module is large, its mentions few."""
    for child in ast.iter_child_nodes(tree):
        if spans(child, lines):
            yield child
            yield from near(child, lines)
