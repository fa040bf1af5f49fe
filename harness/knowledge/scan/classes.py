"""What the plugin scan decides once every module is read: hook timing (hooks registered only
after HookRegistry applied hooks), platform classes, entry points, the overrides and `self.` /
`super()` members of plugin classes over upstream classes (their C3 MRO decides), and the
upstream class of fields read on unannotated parameters."""

from __future__ import annotations

import ast
import copy
import itertools
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from harness.engines import IMPORT_ERRORS, profile
from harness.knowledge.model import (
    BOUND_ARGUMENTS,
    DATACLASS_EXTENDS,
    DATACLASS_INIT,
    INSTANCE_CALL,
    PLACED,
    PLATFORM_INSTANCE_READ,
    STANDS_IN,
    WRAPPED_ORIGINAL,
    UNDECIDED,
    AllOf,
    AnyOf,
    Cond,
    Const,
    Dependency,
    EntryPoint,
    FieldPresent,
    GuardCond,
    MethodDecl,
    Param,
    ParamFieldPresent,
    PluginClass,
    PluginScan,
    Ref,
    SelfFlag,
    dotted,
    function_params,
    is_upstream,
    module_source,
    resolve_relative,
    walk,
)
from harness.knowledge.scan.annotations import NONE_VALUE, SELF_HELD, field_class, kept_class, parameter_class
from harness.knowledge.scan.expressions import Context
from harness.knowledge.scan.folding import OPAQUE, Instance, Named, Record, bind, leaves, map_leaves, on_param
from harness.knowledge.scan.syntax import (
    arg,
    call_shape,
    case_tests,
    dataclass_fields,
    imported_names,
    is_property,
    local_names,
    module_level,
    returned_function,
)
from harness.knowledge.scan.uses import module_getattr_reads
from harness.knowledge.upstream import SymbolIndex, c3


_MOST_CALLER_ENVS = 32  # bindings of a caller's own callers tried per call (a helper called from everywhere stops here)


def _placed(node: ast.expr, place: Callable[[ast.AST], ast.expr | None]) -> ast.expr:
    """A copy of `node` with each sub-node `place` answers replaced by that answer."""
    class _Place(ast.NodeTransformer):
        def visit(self, child):
            found = place(child)
            return found if found is not None else super().visit(child)

    return _Place().visit(copy.deepcopy(node))


def _originals_read(definition: ast.AST | None, setter: ast.Call) -> list[ast.Call]:
    """The `getattr(a, b)` calls (no default) in `definition` before `setter`, a
    `setattr(a, b, …)`, on the same two expressions as written."""
    if definition is None or len(setter.args) < 2:
        return []
    same = (ast.dump(setter.args[0]), ast.dump(setter.args[1]))
    return [n for n in walk(definition) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "getattr"
            and len(n.args) == 2 and not n.keywords and n.lineno <= setter.lineno and (ast.dump(n.args[0]), ast.dump(n.args[1])) == same]


class PluginClasses:
    """The scanner's whole-plugin pass (a mixin: the scanner provides `tree`, `table`, `const`)."""

    files: dict[str, tuple[Path, bool]]
    index: SymbolIndex
    scan: PluginScan
    hook_callables: dict[str, str]
    calls: dict[str, set[str]]
    parameter_keys: list
    parameter_calls: list
    parameter_class_calls: list
    parameter_environ: list
    _chain_shadows: dict[int, set]  # Expressions._chain_map: keys the plugin's maps before upstream's hold
    _receivers_memo: dict[str, dict]  # _call_receivers, per method name (read once every call is recorded)
    parameter_imports: list
    parameter_getattrs: list
    parameter_provided: list
    parameter_hooks: list
    parameter_replacements: list
    set_name_sites: dict
    parameter_patches: list
    parameter_settings: list
    _defs: dict[str, dict[str, list]]  # module -> def name -> its defs (_definition)
    _through_callers: dict[tuple, list]  # (module, call line, depth) -> _caller_envs, once each (finish() asks again and again)
    _tests: dict[int, tuple]  # id(def) -> (its tests by (line, text), names it stores, names each line reads) (_bound_context)
    parameter_grafts: list
    decorations: dict[str, list[tuple[str, str]]]
    model_packages: set[str]
    disabled_models: set[str]
    parameter_registries: list
    held_registrars: list
    self_placements: list
    parameter_placements: list
    _related_classes: dict[str, frozenset[str]]
    _direct_receivers: dict[str, dict[str, frozenset[int]]]  # module -> method -> _called_on_construction
    decorated: dict[int, str]
    grafts: list
    plugin_calls: list
    call_arguments: dict
    bare_calls: dict
    dynamic_imports: dict[str, list[tuple[str, tuple[str, ...]]]]

    def finish(self) -> None:
        """Decisions that need the whole plugin: hook timing, platform classes, entry points."""
        self._parameter_hooks()
        self._parameter_replacements()
        self._parameter_registries()
        self._held_registrars()
        self._parameter_patches()
        self._self_placements()
        for module, owner, name, value, line, ctx in self.parameter_grafts:
            for binding, _ in self.helper_bindings(module, ctx.functions, line):
                held = binding.get(owner.id)
                if isinstance(held, Named) and not is_upstream(held.path):  # a plugin class handed in (`@deco class C`)
                    self.graft_method(module, owner, name, value, line, self._bound_context(module, ctx, binding, line), bound=True)
        for path, name, method in self.grafts:  # `Cls.m = fn`, setattr(Cls, "m", fn) on a plugin class
            cls = self.scan.classes.get(path)
            if cls is not None and method is not None:
                cls.methods.setdefault(name, method)
            elif cls is not None:
                cls.bound_otherwise.add(name)
        runtime = self._runs_in_hooks()
        for dep in self.scan.dependencies:
            if dep.kind != "hook":
                continue
            for function in dep.enclosing:
                why = next((runtime[r] for r in runtime if function == r or function.startswith(r + ".")), None)
                if why is not None:
                    dep.scope = "runtime"
                    dep.scope_reason = f"registered inside {function}, {why}: it runs only after HookRegistry.apply_hooks, so this hook is never applied"
                    break
        self.scan.platforms = [path for path in self.scan.classes if self._derives_from_platform(path)]
        self.scan.unloaded_platforms = [path for path in self.scan.platforms if self._unloaded_platform(path)]
        for ep in self.scan.entry_points:
            self._entry_point_dependency(ep)
        self.resolve_named_classes()
        self._class_dependencies()
        self._class_reads()
        self._stand_in_methods()
        self._platform_held_reads()
        self._platform_instance_members()
        self._parameter_fields()
        self._parameter_placements()
        self._instance_flags()
        self._parameter_keys()
        self._parameter_calls()
        self._parameter_class_calls()
        self._parameter_settings()
        self._parameter_environ()
        self._parameter_imports()
        self._parameter_getattrs()
        self._parameter_provided()
        self._model_package_modules()
        self._inherited_constructors()
        self._caught_by_callers()
        self._caught_by_importers()

    def _self_placements(self) -> None:
        """`self.attr = P(…)` in a method of a plugin class C deriving from upstream classes: a
        PLACED patch of "B.attr" for B the first upstream base, judged on the calls B's methods
        (and its bases') make through `self.attr` -- those C does not override
        (placements.judge_placement reads `plugin_class`) -- where the plugin makes C (or a
        subclass), puts it in upstream's place or registers it."""
        made = {called for calls in self.calls.values() for called in calls} | {
            d.hook for d in self.scan.dependencies if d.hook and d.kind != "hook"}  # built by the plugin, put in upstream's place, registered
        for module, stmt, path, attr, placed, ctx, name in self.self_placements:
            bases = self.upstream_bases(path)
            # (a class nothing makes, nor a subclass of it, runs no method: nothing to judge)
            if bases and any(path in self.plugin_mro(other) for other in made if other in self.scan.classes):
                # (`self.attr = P(…)`, or `self.attr.__class__ = P`: the object in it re-classed)
                target = next(t for t in stmt.targets if any(isinstance(n, ast.Attribute) and n.attr == attr for n in walk(t)))
                self._dependency("patch", f"{bases[0]}.{attr}", module, stmt, ctx, how=PLACED, hook=placed, plugin_class=path, name=name,
                                 expression=f"{ast.unparse(target)} = {ast.unparse(stmt.value)[:60]}")

    def _parameter_placements(self) -> None:
        """`p.attr = P(…)` on an unannotated parameter p whose upstream class the whole plugin
        names (_parameter_class: a function set on an upstream class as a method, `C.__init__ =
        _init` with `self.self_attn = DevAttention(…)` in it; a hook's receiver): a PLACED patch
        of "C.attr", as `_placement` makes for an annotated one."""
        for module, stmt, target, placed, ctx, instance in self.parameter_placements:
            cls = self._parameter_class(instance.function, instance.param)
            if cls and is_upstream(cls):
                self._dependency("patch", f"{cls}.{target.attr}", module, stmt, ctx, how=PLACED, hook=placed,
                                 expression=f"{ast.unparse(target)} = {ast.unparse(stmt.value)[:60]}")

    def _unloaded_platform(self, path: str) -> bool:
        """Whether the platform class `path` is never the one the engine loads: the entry point's
        platform classes are known, `path` is none of them nor a base of one, and no plugin code
        names it (a reference, an attribute, a string; its own full path in the module of the
        platform entry point is one of activate()'s alternatives, on a release that chose
        another) outside its own class statement: a class left in a module (`DotPlatformV1`
        beside the `DotPlatform` activate() returns)."""
        loaded = [p.replace(":", ".") for p in self.scan.platform_class_paths]
        if not loaded or any(path == p or path in self.plugin_mro(p) for p in loaded if p in self.scan.classes):
            return False
        if any(p not in self.scan.classes for p in loaded):
            return False  # a returned class the scan does not know: which one loads is not certain
        short = path.rsplit(".", 1)[-1]
        owner = path.rpartition(".")[0]
        # its full path as a string in the module of the platform entry point is one of the
        # classes activate() chooses from, and on this release it chose the others (the engine
        # loads only what activate() returns: sglang/srt/platforms/__init__.py resolve_name of it)
        alternatives = {path, f"{owner}:{short}"}
        choosers = {ep.value.partition(":")[0] for ep in self.scan.entry_points if profile().entry_points.get(ep.group) == "platform"}
        for module in self.files:
            tree = self.tree(module)
            own = {id(n) for c in walk(tree) if isinstance(c, ast.ClassDef) and f"{module}.{c.name}" == path for n in walk(c)} if tree else set()
            for node in walk(tree) if tree else []:
                if id(node) in own:
                    continue
                if (isinstance(node, ast.Name) and node.id == short or isinstance(node, ast.Attribute) and node.attr == short
                        or isinstance(node, ast.Constant) and isinstance(node.value, str) and short in node.value
                        and not (module in choosers and node.value in alternatives)):
                    return False
        return True

    def _caught_by_callers(self) -> None:
        """A module function the plugin only calls (by name, nowhere else named: no entry point,
        hook or callback) from inside `try` blocks whose handlers catch an error of a dependency
        in its body (`try: _apply_patches() except ImportError: …`): the error leaves the function
        and is handled there, so the dependency carries that handler, as if written in the try."""
        entry = {ep.value.replace(":", ".") for ep in self.scan.entry_points}
        sites: dict[str, list] = {}
        lines: dict[str, list[int]] = {}
        call_modules: dict[str, list[str]] = {}
        for caller, call, ctx, qualified in self.plugin_calls:
            sites.setdefault(qualified, []).append(ctx)
            lines.setdefault(qualified, []).append(call.lineno)
            call_modules.setdefault(qualified, []).append(caller)
        mentions: Counter[str] | None = None
        for dep in self.scan.dependencies:
            function = dep.enclosing[0] if len(dep.enclosing) == 1 else None
            owner, _, name = (function or "").rpartition(".")
            if function is None or owner not in self.files or function in entry or function in self.hook_callables or function not in sites:
                continue
            # a kind whose failure raises nothing (a patch) still sits in the try: an earlier
            # failure of the body stops it (judge.conditions.fails_before)
            errors = dep.errors
            handlers = [next((c for c in reversed(ctx.catches) if not errors or c.handles(errors)), None) for ctx in sites[function]]
            if None in handlers or errors and any(c.handles(errors) for c in dep.catches):
                continue
            if mentions is None:  # every word of the plugin's sources, counted once (a file not read: none trusted)
                mentions = Counter()
                for path, _ in self.files.values():
                    try:
                        mentions.update(re.findall(rb"\w+", module_source(path, self.root)))
                    except OSError:
                        mentions = Counter()
                        break
            if mentions and mentions[name.encode()] == len(sites[function]) + 1:  # the def and those calls, no other use of the name
                dep.catches = (handlers[0], *dep.catches)
                if len(sites[function]) == 1:  # (it fails there, in the caller's try body: fails_before)
                    dep.called_at = (call_modules[function][0], sites[function][0].functions, lines[function][0], sites[function][0].guards)

    def _caught_by_importers(self) -> None:
        """A plugin module that no entry point names and that every statement importing it (or a
        module under it) imports inside a `try` whose handler catches an import failure (`try:
        from pkg import optional_patches` / `except ImportError:`): the ImportError its body raises
        at the top level leaves the import and is handled there, so its module-level dependencies
        carry that handler, as if written in the try; with one such import, an earlier failure
        there stops what follows it in that try (Dependency.called_at)."""
        entry = {ep.value.partition(":")[0] for ep in self.scan.entry_points} | set(self.main_modules)
        for module, sites in self.import_sites.items():
            if module in entry:
                continue
            if not all(any(c.handles(IMPORT_ERRORS) for c in ctx.catches) for _, _, ctx in sites):
                continue
            for dep in self.scan.dependencies:
                if dep.module != module or dep.enclosing or any(c.handles(dep.errors) for c in dep.catches if dep.errors):
                    continue
                # (what raises nothing, a patch, sits in the try all the same: fails_before)
                handlers = [next((c for c in reversed(ctx.catches) if c.handles(dep.errors or IMPORT_ERRORS)), None) for _, _, ctx in sites]
                if None in handlers:
                    continue
                dep.catches = (handlers[0], *dep.catches)
                if len(sites) == 1 and sites[0][1] and dep.errors:
                    dep.called_at = (sites[0][0], sites[0][2].functions, sites[0][1], sites[0][2].guards)

    def _parameter_keys(self) -> None:
        """A registry read keyed by a function's parameter (`def reuse(name): return
        ATTENTION_BACKENDS[name]`, or a value built from it: `[backend.value]`) reads each
        constant key a call of that function passes (helper_bindings: also through its own
        callers): one registry_key dependency per key, at the read, naming the call. A registry
        a parameter holds (`registry.models[arch]`, registry None here) is the upstream one each
        call hands in."""
        def upstream_held(node: ast.Subscript | ast.Call, env: dict):
            held = self.const(module, node.value if isinstance(node, ast.Subscript) else node.func.value, env)
            return held if isinstance(held, Named) and is_upstream(held.path) else None

        for registry, module, function, keyed, node, ctx in self.parameter_keys:
            # (`REG.get(name)`: its key is the first argument; how it copes with a missing one, lookup_how)
            key_node, how = (node.slice, None) if isinstance(node, ast.Subscript) else (node.args[0], self.lookup_how(module, node, ctx))
            seen: set[tuple[str, str]] = set()
            if registry is None and not any(upstream_held(node, {**ctx.env, **binding}) for binding, _ in self.helper_bindings(module, ctx.functions, node.lineno)) and not (
                    "." in dotted(node.value) and self._passed_by_name(function, dotted(node.value).split(".")[0])):
                # (a registry a parameter holds: where a caller hands in an upstream one, or passes
                # its own on to an attribute read, `registry.models[arch]`)
                continue
            bindings = self.bindings_or_through(module, ctx.functions, node.lineno, lambda found: any(
                isinstance(self.const(module, key_node, {**ctx.env, **binding}), str) for binding, _ in found if binding))
            for binding, where in bindings[:_MOST_CALLER_ENVS]:
                held = upstream_held(node, {**ctx.env, **binding}) if registry is None and binding else None
                if registry is None and held is None:
                    continue  # (this call hands in something else)
                # with the parameters bound; else the locals at the read as that call leaves them
                # (loops around it unrolled)
                key = self.const(module, key_node, {**ctx.env, **binding}) if binding else None
                keys = [key] if isinstance(key, str) or not binding else [
                    self.const(module, key_node, inner.env) for inner in self._bound_contexts(module, ctx, binding, node.lineno, node=key_node)]
                for key in keys:
                    if isinstance(key, str) and (key, where) not in seen and key not in self._chain_shadows.get(id(node), ()):
                        seen.add((key, where))
                        self._dependency("registry_key", registry or held.path, module, node, ctx, name=key, how=how,
                                         expression=f"{ast.unparse(node)} with {keyed}={key!r} ({where})")

    def _parameter_calls(self) -> None:
        """A call of an upstream function inside a helper passing string arguments the helper's
        parameters decide (`def _upstream(method): return get_quantization_config(method)`): the
        call once more per binding of the helper's callers (helper_bindings, through their own
        callers when they pass nothing known), with the strings that binding gives, so the
        judge reads them as it reads constants (a keyed lookup's key)."""
        for module, call, qualified, name, ctx in self.parameter_calls:
            # only the arguments that read the function's parameters or locals
            given = [(at, node) for at, node in [*enumerate(call.args), *((k.arg, k.value) for k in call.keywords if k.arg)]
                     if any(isinstance(n, ast.Name) and n.id in ctx.local for n in walk(node))]

            def strings(env: dict) -> tuple:
                return tuple((at, value) for at, node in given if isinstance(value := self.const(module, node, env), str))

            # the parameters as each call binds them (no replay of the locals: a key is passed, not built)
            bindings = self.bindings_or_through(module, ctx.functions, call.lineno, lambda found: any(
                strings({**ctx.env, **binding}) for binding, _ in found if binding))
            seen: set[tuple] = {()}
            constants = tuple((at, n.value) for at, n in [*enumerate(call.args), *((k.arg, k.value) for k in call.keywords if k.arg)]
                              if isinstance(n, ast.Constant) and isinstance(n.value, str))
            for binding, where in bindings[:_MOST_CALLER_ENVS]:
                found = strings({**ctx.env, **binding}) if binding else ()
                if found not in seen:
                    seen.add(found)
                    self._dependency("call", qualified, module, call, replace(ctx, env={**ctx.env, **binding}), call=call_shape(call),
                                     expression=name, arguments=constants + found, how=BOUND_ARGUMENTS)

    def _parameter_class_calls(self) -> None:
        """A call of what a helper's parameter holds (`def make(spec_cls, **fields): return
        spec_cls(**fields)`): once per binding of its callers (helper_bindings) where that is an
        upstream class, its `*`/`**` arguments spread as that binding fills them (a caller's
        keywords gathered by `**fields`), so the class's constructor judges each caller's arguments."""
        for module, call, ctx in self.parameter_class_calls:
            name = call.func.id
            for binding, _ in self.helper_bindings(module, ctx.functions, call.lineno):
                held = binding.get(name)
                ref = self.upstream_ref(held.path) if isinstance(held, Named) and is_upstream(held.path) else None
                if ref is None or ref.kind != "class":  # (a function handed in is judged where it is named)
                    continue
                for inner in self._bound_contexts(module, ctx, binding, call.lineno):
                    made, spread = self._spread(module, call, inner)
                    if not any(isinstance(a, ast.Starred) for a in made.args) and all(k.arg for k in made.keywords):
                        self._call(module, made, spread)  # (what is still spread is not known: no call to judge)

    def _parameter_environ(self) -> None:
        """An environment write inside a method or helper whose variable its parameters decide
        (`os.environ.setdefault(self.env_name, self.package)`, `env_name` a property over a settings
        field's `.name`; `os.environ.update(mapping)` of a mapping they make): the write per binding
        of its instance or callers (helper_bindings)."""
        for module, call, ctx in self.parameter_environ:
            for binding, _ in self.helper_bindings(module, ctx.functions, call.lineno):
                for inner in self._bound_contexts(module, ctx, binding, call.lineno):
                    if isinstance(call.func, ast.Attribute) and call.func.attr == "update":
                        self.environ_update(module, call, inner, defer=False)
                        continue
                    variable = self.const(module, call.args[0], inner.env)
                    if isinstance(variable, str):
                        self._environment_write(module, variable, self.const(module, call.args[1], inner.env), inner)

    def _inherited_constructors(self) -> None:
        """A call of a plugin class that builds itself with an upstream class's constructor
        (none of its own classes defines `__init__`/`__new__` or is decorated) is a call of that
        upstream class: one `call` dependency per call, judged against what upstream takes. The
        class's own methods make it as `cls(…)` (a classmethod), `type(self)(…)` or
        `self.__class__(…)` too."""
        constructors: dict[str, str | None] = {}
        extended: dict[str, tuple[str, tuple[Param, ...]] | None] = {}
        for module, call, ctx, qualified in self.plugin_calls:
            qualified = qualified if qualified in self.scan.classes else _own_class_made(call, ctx)
            if qualified not in self.scan.classes:
                continue
            if qualified not in constructors:
                constructors[qualified] = self.inherited_constructor(qualified)
                extended[qualified] = self.dataclass_extension(qualified)
            if constructors[qualified] is not None:
                self._dependency("call", constructors[qualified], module, call, ctx, call=call_shape(call),
                                 expression=f"{dotted(call.func)} (built by {constructors[qualified]})")
            elif extended[qualified] is not None:
                base, fields = extended[qualified]
                self._dependency("call", base, module, call, ctx, call=call_shape(call), params=fields, how=DATACLASS_EXTENDS,
                                 expression=f"{dotted(call.func)} (a @dataclass over {base}: its fields, then the plugin's)")

    def _writes_init(self, path: str) -> bool:
        """Whether the upstream class `path` defines `__init__` with a def of its own (not one a
        decorator writes, not inherited)."""
        ref = self.upstream_ref(path)
        info = self.index.class_info(ref) if ref is not None and ref.kind == "class" else None
        return info is not None and info.members.get("__init__") == "def"

    def dataclass_extension(self, path: str) -> tuple[str, tuple[Param, ...]] | None:
        """For a plugin class written `@dataclass class C(UpstreamBase): x: int = 0` (a plain
        dataclass decorator, no `__init__` of its own, no other plugin base): (the upstream base,
        the fields C adds, in order) -- its generated `__init__` takes the base's dataclass fields
        first, then these (dataclasses: fields in reverse MRO order). None otherwise."""
        cls = self.scan.classes[path]
        found = self._plugin_definition(path)
        fields = dataclass_fields(found[1]) if found is not None and isinstance(found[1], ast.ClassDef) else None
        if fields is None or len(cls.bases) != 1 or cls.bases[0] in self.scan.classes or not is_upstream(cls.bases[0]) or "__init__" in cls.methods:
            return None
        return cls.bases[0], tuple(Param(name, "pos", "…" if default is not None else None) for name, default in fields)

    def inherited_constructor(self, path: str) -> str | None:
        """The upstream class whose constructor builds an instance of the plugin class `path`:
        the first class of its C3 MRO that is not the plugin's, when no plugin class before it
        defines `__init__` or `__new__` or is decorated (`@dataclass` writes an `__init__`) or
        takes a metaclass. None otherwise, or when that class is an outside one or not known."""
        classes = self.scan.classes

        def bases(ref: Ref) -> list[Ref]:
            found = []
            for base in classes[ref.qualname].bases:
                resolved = self.index.resolve(base) if is_upstream(base) and base not in classes else None
                found.append(Ref("class", "", base) if base in classes else resolved.ref if resolved is not None and resolved.ok
                             else Ref("dynamic", "", base))
            return found

        for ref in c3(Ref("class", "", path), bases, lambda ref: self.index.mro(ref) if ref.module else None):
            if ref.module == "" and ref.kind == "class":
                cls = classes[ref.qualname]
                if cls.decorated or {"__init__", "__new__"} & (set(cls.methods) | cls.names):
                    return None
                continue
            return ref.path if ref.kind == "class" and ref.module else None
        return None

    def _parameter_hooks(self) -> None:
        """A hook registered inside a helper from its parameters (`_hook("forward", fn,
        HookType.AROUND)`) is one hook per call of the helper (and per element of a loop around
        the registration: `def install(*specs): for target, fn, kind in specs:`), its target,
        type and callable as that call passes them (defaults filling the rest); with no such
        call, one hook read as written (its target unknown)."""
        for module, node, target, hook_type, hook, ctx in self.parameter_hooks:
            bindings = self.helper_bindings(module, ctx.functions, node.lineno)
            for binding, where in bindings or [({}, "")]:
                for inner in self._bound_contexts(module, ctx, binding, node.lineno):  # one per element of a loop around it
                    self._hook(module, node, target, hook_type, hook, inner, bound=where)

    def _parameter_replacements(self) -> None:
        """A replacement registration (`CustomOp.register_oot`) inside a helper or method whose key
        or class its parameters, or a loop over them, decide: one per call of the helper and
        element of the loop (helper_bindings, _bound_contexts), as that call passes them; with no
        such call, one read as written (its key or class unknown)."""
        for module, node, owner, name, decorated, ctx in self.parameter_replacements:
            for binding, _ in self.helper_bindings(module, ctx.functions, node.lineno) or [({}, "")]:
                for inner in self._bound_contexts(module, ctx, binding, node.lineno):
                    self._replacement(module, node, owner, name, decorated, inner, bound=True)

    def _parameter_registries(self) -> None:
        """`registry.register(target, fn, kind)` in a helper whose parameter `registry` a caller
        gives HookRegistry (or `self.registry`, an instance's attribute holding it): one hook per
        such call, with what it passes; `registry.register_attention_backend(name)` where it
        holds the attention registry module: one registration per such call."""
        hooks = profile().hook_registry
        made: set[tuple] = set()  # (a call in an unrolled loop is recorded once per pass)
        for module, call, ctx in self.parameter_registries:
            registrar = call.func.attr == "register_attention_backend"
            for binding, where in self.helper_bindings(module, ctx.functions, call.lineno):
                held = self.const(module, call.func.value, {**ctx.env, **binding})
                if registrar and isinstance(held, Named) and is_upstream(held.path):
                    for inner in self._bound_contexts(module, ctx, binding, call.lineno):
                        self._attention_registration(module, call, inner, f"{held.path}.{call.func.attr}", made)
                elif isinstance(held, Named) and hooks and (held.path == hooks or self.qualify(module, held.path) == hooks):
                    for inner in self._bound_contexts(module, ctx, binding, call.lineno):
                        self._hook(module, call, arg(call, 0, "target"), arg(call, 2, "hook_type"), arg(call, 1, "hook"), inner, bound=where)

    def _held_registrars(self) -> None:
        """`reg(name)(fn)` where `reg` is what a caller or a construction hands the function
        (`self.registrar`, a parameter, a name bound from one): register_attention_backend's
        registration where, as that binding gives it, reg holds that function; one per
        binding."""
        made: set[tuple] = set()
        for module, call, ctx in self.held_registrars:
            for binding, _ in self.helper_bindings(module, ctx.functions, call.lineno):
                for inner in self._bound_contexts(module, ctx, binding, call.lineno):
                    held = self.const(module, call.func, inner.env)
                    if isinstance(held, Named) and is_upstream(held.path) and held.path.endswith(".register_attention_backend"):
                        self._attention_registration(module, call, inner, held.path, made)

    def _attention_registration(self, module: str, call: ast.Call, ctx, registrar: str, made: set[tuple]) -> None:
        """One attention_backend dependency for `registrar(name)` at `call`, its name folded in
        `ctx` ("?" when it does not fold), unless `made` already holds it (a call in an unrolled
        loop, or met through several bindings, is recorded once per name)."""
        backend = self.const(module, call.args[0], ctx.env) if call.args else None
        key = (id(call), registrar, backend if isinstance(backend, str) else "?")
        if key not in made:
            made.add(key)
            self._dependency("attention_backend", registrar, module, call, ctx, name=key[2])

    def _parameter_patches(self) -> None:
        """`setattr(owner, name, fn)` inside a helper taking them as parameters: one patch per
        call of the helper (helper_bindings), as that call passes them. A `getattr(owner, name)`
        without a default in the same helper (a wrapper keeping the original) is then a read of
        that member as well: AttributeError where it is gone, before anything is set."""
        bindings: dict[tuple, list] = {}  # a helper's callers, once per helper
        for module, call, ctx in self.parameter_patches:
            definition = self._definition(module, ctx.functions[-1], call.lineno)
            key = (module, ctx.functions, id(definition))
            if key not in bindings:
                # an attribute name the helper's parameters or locals decide (`setattr(mod, spec.attr,
                # …)`) is known when a call binds a parameter besides the instance
                params = [p.name for p in function_params(definition.args)] if definition is not None else []
                local = {*params, *local_names(definition)} if definition is not None else set()
                passed = set(params[1:] if ctx.functions[-1].rpartition(".")[0] in self.scan.classes else params)
                read = {n.id for n in walk(call.args[1]) if isinstance(n, ast.Name)} & local if len(call.args) > 1 else set()
                bindings[key] = self.bindings_or_through(module, ctx.functions, call.lineno, lambda found: not (read and passed) or any(
                    binding.keys() & passed for binding, _ in found))
            for binding, _ in bindings[key] or [({}, "")]:
                owner = binding.get(call.args[0].id) if isinstance(call.args[0], ast.Name) else None
                if id(call) in self._patch_only and not (isinstance(owner, Named) and is_upstream(owner.path)):
                    continue  # `param.x = v` patches only what a caller hands in from upstream
                for inner in self._bound_contexts(module, ctx, binding, call.lineno):
                    self.setattr_call(module, call, inner, bound=True)
                    for read in _originals_read(definition, call):
                        owner, attr = self.qualify(module, dotted(read.args[0]), inner.env), self.const(module, read.args[1], inner.env)
                        if is_upstream(owner) and isinstance(attr, str):
                            self._dependency("reference", f"{owner}.{attr}", module, read, inner, expression=ast.unparse(read), how=WRAPPED_ORIGINAL)

    def _model_package_modules(self) -> None:
        """Each external model package's `pkg.*` becomes the modules the engine's loader imports:
        its direct submodules that are no package, bar those the plugin disables by last name
        (EngineProfile.disabled_models_env), each imported under the guards `pkg.*` was named under."""
        for module, found in self.dynamic_imports.items():
            expanded = []
            guards = self.import_guards.get(module, {})
            for target, functions in found:
                package = target[:-2] if target.endswith(".*") else None
                if package in self.model_packages:
                    loaded = [m for m in sorted(self.files) if m.rpartition(".")[0] == package and not self.files[m][1]
                              and m.rpartition(".")[2] not in self.disabled_models]
                    expanded += [(m, functions) for m in loaded]
                    for m in loaded:  # each under the guards the package was named under (a settings write in an `if`)
                        guards.setdefault(m, []).extend(g for g in guards.get(target, []) if g not in guards[m])
                else:
                    expanded.append((target, functions))
            found[:] = expanded

    def _parameter_settings(self) -> None:
        """A settings write inside a helper (`getattr(envs, name).set(value)` over its
        `**overrides`): once per call of the helper, per element of a loop around it, with what
        that call passes (Expressions.settings_write)."""
        for module, call, qualified, ctx in self.parameter_settings:
            for binding, where in self.helper_bindings(module, ctx.functions, call.lineno):
                # it runs where that call runs: inside the caller's functions too (drop_uncalled_imports)
                callers = self._functions_at(*where.rsplit(":", 1)) if where else ()
                for inner in self._bound_contexts(module, ctx, binding, call.lineno):
                    self.settings_write(module, call, qualified, replace(inner, functions=(*callers, *inner.functions)), bound=True)

    def _functions_at(self, relfile: str, line: str) -> tuple[str, ...]:
        """The plugin functions (paths as the scan names them) whose bodies hold `relfile:line`, outermost first."""
        module = next((m for m in self.files if self.relfile(m) == relfile), None)
        body, prefix, found = (self.tree(module).body if module and self.tree(module) else []), module, []
        while body:
            node = next((n for n in body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                         and n.lineno <= int(line) <= (n.end_lineno or n.lineno)), None)
            if node is None:
                break
            prefix = f"{prefix}.{node.name}"
            if not isinstance(node, ast.ClassDef):
                found.append(prefix)
            body = node.body
        return tuple(found)

    def _bound_contexts(self, module: str, ctx, binding: dict, line: int, done: frozenset[int] = frozenset(),
                        node: ast.AST | None = None) -> list:
        """_bound_context, once per element of each loop around `line` (in the helper) whose
        iterable folds with the binding (`for name, value in overrides.items():`), outermost first;
        with `node`, also of each comprehension whose element holds it (`[import_module(n) for n
        in cls.names()]`, `map(import_module, …)` as rewritten: the element runs once per value
        its `if`s hold for, the language reference's "Displays for lists, sets and dictionaries")."""
        definition = self._definition(module, ctx.functions[-1], line) if ctx.functions and binding else None
        loops = [n for n in walk(definition) if isinstance(n, (ast.For, ast.AsyncFor)) and id(n) not in done
                 and any(s.lineno <= line <= (s.end_lineno or s.lineno) for s in n.body)] if definition is not None else []
        if node is not None and definition is not None:
            loops += [n for n in walk(definition) if isinstance(n, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp))
                      and id(n) not in done and len(n.generators) == 1 and not n.generators[0].is_async
                      and any(inner is node for part in ([n.key, n.value] if isinstance(n, ast.DictComp) else [n.elt]) for inner in walk(part))]
        if not loops:
            return [self._bound_context(module, ctx, binding, line)]
        loop = min(loops, key=lambda n: (n.lineno, n.col_offset))
        generator = loop.generators[0] if not isinstance(loop, (ast.For, ast.AsyncFor)) else loop
        items = self.iterated(self.const(module, generator.iter, self._locals_at(module, definition, {**ctx.env, **binding}, loop.lineno)))
        if not isinstance(items, list) or not items:
            return self._bound_contexts(module, ctx, binding, line, done | {id(loop)}, node)
        found = []
        for item in items:
            elements = bind(generator.target, item)
            if any(self.const(module, test, {**ctx.env, **binding, **elements}) is False for test in getattr(generator, "ifs", ())):
                continue
            found.extend(self._bound_contexts(module, replace(ctx, env={**ctx.env, **elements}), {**binding, **elements}, line, done | {id(loop)}, node))
        return found

    def _bound_context(self, module: str, ctx, binding: dict, line: int):
        """`ctx` of a statement at `line` in a helper, with the helper's parameters bound as one
        call passes them: its locals as the statements that run before `line` leave them with
        those values (_locals_at: `cls = mod.Mixin`, `a, *rest = spec.split(".")`, a loop
        walking `owner = getattr(owner, part)`), and the tests of its guards that read a value
        so changed decided again, with the locals as they are at the test (`if mod is None:
        return` for `mod` a `sys.modules.get(M)` the caller passes)."""
        definition = self._definition(module, ctx.functions[-1], line) if ctx.functions and binding else None
        receiver = binding.get(ctx.env.get("<self>")) if isinstance(ctx.env.get("<self>"), str) else None
        made = receiver.path if isinstance(receiver, Named) else receiver.cls if isinstance(receiver, Record) else None
        if made in self.scan.classes:
            # `cls` bound to a plugin subclass (`Sub.apply()` of an inherited classmethod), `self` to
            # an object of one: its class constants are what `cls.X` / `self.X` read
            binding = {**binding, "<class>": made}
        if definition is None:
            return replace(ctx, env={**ctx.env, **binding})
        # (what the method set on its instance is re-run up to the line: the scan's env is shared with
        # the rest of the method, so it holds what `self.x = …` statements after the line set too)
        start = {**{k: v for k, v in ctx.env.items() if not k.startswith("<self.")}, **binding}
        if id(definition) not in self._tests:  # its tests by (line, text), the names it stores and those each line reads
            nodes = list(walk(definition))
            reads: dict[int, set[str]] = {}
            for n in nodes:
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                    reads.setdefault(n.lineno, set()).add(n.id)
            self._tests[id(definition)] = ({(n.test.lineno, ast.unparse(n.test)): n.test for n in nodes if isinstance(n, (ast.If, ast.While, ast.IfExp, ast.Assert))},
                                           {n.id for n in nodes if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
                                           # (`self.x = …` changes what a later `self.x` reads)
                                           | {n.value.id for n in nodes if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store) and isinstance(n.value, ast.Name)},
                                           reads)
        tests, stores, reads = self._tests[id(definition)]

        def locals_at(at_line: int) -> dict:  # only where the line reads a local the function binds
            return self._locals_at(module, definition, start, at_line) if reads.get(at_line, set()) & stores else start

        env = locals_at(line)
        guards = []
        for guard in ctx.guards:
            negated = guard.text.startswith("not (") and guard.text.endswith(")")
            test = tests.get((guard.line, guard.text[5:-1] if negated else guard.text))
            if test is not None and definition.lineno <= test.lineno <= definition.end_lineno:
                at = locals_at(test.lineno)
                if any(isinstance(n, ast.Name) and (n.id in binding or at.get(n.id) is not ctx.env.get(n.id)) for n in walk(test)):
                    guard = self._guard(module, test, at, negate=negated)
            guards.append(guard)
        bound = replace(ctx, env=env, guards=tuple(guards))
        # `module = sys.modules[spec.module]` earlier in the `with suppress(KeyError):` (or try)
        # block around the line: with the value bound, the rest runs only where it is there (as Scanner._block)
        for block in (n for n in walk(definition) if ctx.catches and isinstance(n, (ast.With, ast.Try)) and n.lineno < line <= (n.end_lineno or n.lineno)):
            for stmt in block.body:
                if isinstance(stmt, ast.Assign) and (stmt.end_lineno or stmt.lineno) < line:
                    found = [path for path, needs in self._bound_lookups(module, [stmt], replace(ctx, env=locals_at(stmt.lineno)))
                             if needs and all(any(c.handles(e) for c in ctx.catches) for e in needs)]
                    bound = self._had(bound, found, f"line {stmt.lineno} raises nothing", stmt.lineno)
        return bound

    def _locals_at(self, module: str, definition, env: dict, line: int) -> dict:
        """`env` (what the scan bound, the parameters as one call passes them) updated with what
        the function's statements that run before `line` on its way there bind: plain
        assignments (unpacking included), `for` loops over folded values whose bodies only
        assign (unrolled), early exits, `try` bodies whose handlers all leave; a name any other
        statement binds keeps the scan's value."""
        env, scanned = dict(env), env
        body = definition.body
        while body:
            inner = None
            for stmt in body:
                if stmt.lineno <= line <= (stmt.end_lineno or stmt.lineno):
                    inner = stmt
                    break
                if stmt.lineno > line:
                    break
                self._run_simple(module, stmt, env, scanned)
            if inner is None or isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                break
            # the compound statement holding `line`: into the block that holds it
            blocks = [getattr(inner, f, None) or [] for f in ("body", "orelse", "finalbody")]
            blocks += [h.body for h in getattr(inner, "handlers", None) or []]
            body = next((b for b in blocks if b and b[0].lineno <= line <= (b[-1].end_lineno or b[-1].lineno)), None)
            if isinstance(inner, (ast.For, ast.AsyncFor)):  # which element: the scan's
                env.update({t.id: scanned.get(t.id, OPAQUE) for t in walk(inner.target) if isinstance(t, ast.Name)})
        return env

    def _run_simple(self, module: str, stmt: ast.stmt, env: dict, scanned: dict) -> None:
        """What `stmt` binds in `env` when it is a plain assignment, a loop over a folded value
        whose body only assigns, or an `if` that only exits (and the walrus names of a test); a
        name anything else stores (or an assignment whose value does not fold) gets the scan's
        value, `scanned`."""
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], (ast.Name, ast.Tuple, ast.List)):
            value = self.const(module, stmt.value, env)
            env.update({k: v if v is not OPAQUE else scanned.get(k, OPAQUE) for k, v in bind(stmt.targets[0], value).items()})
            return
        target = stmt.targets[0] if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 else None
        if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and env.get("<self>") == target.value.id:
            env[f"<self.{target.attr}>"] = self.const(module, stmt.value, env)  # `self.target = …`, read later in the method
            return
        if isinstance(stmt, (ast.If, ast.While, ast.Assert)):
            # `if (reg := self.registrar) is None: return`: the test runs whichever way it goes, binding reg
            for node in walk(stmt.test):
                if isinstance(node, ast.NamedExpr) and isinstance(node.target, ast.Name):
                    value = self.const(module, node.value, env)
                    env[node.target.id] = value if value is not OPAQUE else scanned.get(node.target.id, OPAQUE)
        if isinstance(stmt, ast.If) and not stmt.orelse and all(isinstance(s, (ast.Return, ast.Raise, ast.Continue, ast.Break, ast.Expr, ast.Pass)) for s in stmt.body):
            return  # an early exit: what follows runs where it did not
        if isinstance(stmt, (ast.For, ast.AsyncFor)) and not stmt.orelse and all(isinstance(s, ast.Assign) and len(s.targets) == 1 for s in stmt.body):
            items = self.iterated(self.const(module, stmt.iter, env))
            if isinstance(items, list):
                for item in items:
                    env.update(bind(stmt.target, item))
                    for inner in stmt.body:
                        self._run_simple(module, inner, env, scanned)
                return
        if isinstance(stmt, ast.Expr):
            return
        if (isinstance(stmt, ast.Try) and not stmt.orelse and not stmt.finalbody and stmt.handlers
                and all(h.body and isinstance(h.body[-1], (ast.Return, ast.Raise, ast.Continue, ast.Break)) for h in stmt.handlers)):
            # `try: module = load(path) except ImportError: continue`: every handler leaves, so what
            # follows runs where the body ran through (a name a handler binds is not read after it)
            for inner in stmt.body:
                self._run_simple(module, inner, env, scanned)
            return
        for node in walk(stmt):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                env[node.id] = scanned.get(node.id, OPAQUE)

    def helper_bindings(self, module: str, functions: tuple[str, ...], line: int, depth: int = 0, through: bool = False) -> list[tuple[dict, str]]:
        """What the parameters of the innermost of `functions` hold: caller_bindings; for the
        inner function of a decorator factory, which nothing calls by name (`def replaces(owner,
        name): def deco(fn): setattr(owner, name, fn); return fn; return deco`), each use of the
        factory as a decorator (`@replaces(C, "m")` on `def h`): its arguments, the inner
        function's first parameter bound to h. `through`: arguments the calls pass on from their
        own function's parameters are followed to its callers (caller_bindings' through_callers;
        `depth` calls up so far)."""
        found = self.caller_bindings(module, functions[-1], line, through_callers=depth + 1 if through else 0)
        owner, _, short = functions[-1].rpartition(".")
        if not found and short == "__init__" and owner in self.scan.classes:
            # a class's __init__ runs for each construction `C(…)` (and of a plugin subclass with no
            # __init__ of its own), its parameters after self as that call passes them
            found = [pair for path in sorted(self._plugin_subclasses(owner)) if path == owner or "__init__" not in self.scan.classes[path].methods
                     for pair in self.caller_bindings(module, functions[-1], line, called_as=path.rsplit(".", 1)[-1])]
        definition = self._definition(module, functions[-1], line)
        entry = next((ep for ep in self.scan.entry_points if ep.value.replace(":", ".") == functions[-1]), None) if not found else None
        if entry is not None and definition is not None and (defaults := self._default_binding(module, definition)):
            # an entry point: the engine calls what it names with no arguments (`ep.load()()`), so
            # its parameters hold their defaults (`def register(hook_factory=make_hook)`)
            found = [(defaults, f"{entry.file}:1")]
        first = [a.arg for a in (*definition.args.posonlyargs, *definition.args.args)][:1] if definition is not None else []
        if first:  # used as a plain decorator (`@deco class C`): called with what it decorates
            found += [({first[0]: Named(decorated)}, where) for decorated, where in self.decorations.get(functions[-1], [])]
        if not found and functions[-1].endswith(".__call__"):
            found = self._object_call_bindings(module, functions[-1], line)
        if not found and short == "__set_name__" and owner in self.set_name_sites and definition is not None:
            # Python calls it once per class-body name bound to an instance (Scanner._set_name_site)
            params = [p.name for p in function_params(definition.args)]
            # (self is that instance, as made there: no other construction's)
            return [(dict(zip(params, (instance, Named(cls), name))), where)
                    for cls, name, instance, where in self.set_name_sites[owner]] if len(params) >= 3 else []
        if short == "__init_subclass__" and owner in self.scan.classes and definition is not None and first:
            # Python calls it for each class statement deriving from the class, that class its first
            # parameter, the statement's keywords the others (object.__init_subclass__ docs:
            # `class DevInit(InitPatch, replaces=Sampler)`), defaults where not given; a call of the
            # name is a `super().__init_subclass__(…)` of another class's
            found = []
            for path in sorted(self._plugin_subclasses(owner) - {owner}):
                made = self._plugin_definition(path)
                if made is None or not isinstance(made[1], ast.ClassDef):
                    continue
                home, node = made
                given = {k.arg: self.const(home, k.value, {}) for k in node.keywords if k.arg and k.arg != "metaclass"}
                found.append(({**self._default_binding(module, definition), **given, first[0]: Named(path)}, f"{self.relfile(home)}:{node.lineno}"))
        if not found and functions[-1] == f"{module}.__getattr__" and len(first) == 1:
            # a module's own __getattr__ (PEP 562): called with each name plugin code reads on
            # the module that it does not bind
            found = [({first[0]: name}, where) for name, where in module_getattr_reads(self.scan, module) if name is not None]
        if functions[-1].rpartition(".")[0] in self.scan.classes:
            # a method called through its instances (`hook.install()`): self is each instance
            # the plugin makes, as far as it folds (_instance_bindings)
            instances = self._instance_bindings(module, functions[-1], line)
            short = functions[-1].rsplit(".", 1)[-1]
            # called with no arguments (`hook.install()`): its defaults, where each such call is
            # (one per calling function); never called by name: nothing
            defaults = self._default_binding(module, definition) if instances and not found and definition is not None else {}
            # (a method is called through an attribute: `obj.install()`, not a function's `install()`)
            calls = [*(c for c in self.bare_calls.get(short, []) if isinstance(c[1].func, ast.Attribute)),
                     *(self._held_object_calls(functions[-1].rpartition(".")[0]) if short == "__call__" else [])]
            sites = [(self._functions_at(self.relfile(caller), str(call.lineno)), f"{self.relfile(caller)}:{call.lineno}")
                     for caller, call, _ in calls] if instances and not found else []
            callers = dict(sites)
            receivers = dict(self._call_receivers(short)) if instances else {}
            for function, where in callers.items():  # (one binding per calling function: the receivers of all its calls)
                named = [receivers.get(at) for held, at in sites if held == function]
                receivers[where] = None if any(n is None for n in named) else set().union(*named)
            if instances and not found and definition is not None and (is_property(definition) or short == "__post_init__"):
                # a property's getter runs where the attribute is read (`self.upstream_factory`), not
                # called by name; a dataclass's __post_init__ at the end of each construction (the
                # generated __init__ calls it: the dataclasses docs)
                callers = {(functions[-1],): f"{self.relfile(module)}:{definition.lineno}"}
            uncalled = [(defaults, where) for where in callers.values()]
            # (a call on an object the plugin names, `KERNELS.install()`, runs on that object alone)
            found = [({**binding, **instance}, where) for binding, where in found or uncalled for instance, _ in instances
                     if receivers.get(where) is None or _site_of(instance) in receivers[where]] or found
        inner = self._definition(module, functions[-1], line) if not found and len(functions) > 1 else None
        first = [a.arg for a in (*inner.args.posonlyargs, *inner.args.args)][:1] if inner is not None else []
        if not first:
            if inner is not None and depth < 3 and not self.call_arguments.get(functions[-1].rsplit(".", 1)[-1]):
                # a closure nothing calls by name (`wrapped(*args, **kwargs)` a decorator returns):
                # what it reads of the functions around it, as each call of those binds it
                return self.helper_bindings(module, functions[:-1], line, depth + 1)
            return found
        outer = functions[-2].rsplit(".", 1)[-1]
        for (binding, where), (_, call, _) in zip(self.caller_bindings(module, functions[-2], line), self.call_arguments.get(outer, [])):
            if id(call) in self.decorated:
                found.append(({**binding, first[0]: Named(self.decorated[id(call)])}, where))
        return found

    def _call_receivers(self, short: str) -> dict[str, set[tuple] | None]:
        """"file:line" of each call `obj.<short>(…)` -> the sites (Record.site) of the
        constructions its receivers name (a module global or chain bound to one `C(…)`:
        Folding._object_made, or a name the scan folded to such an object), None where a receiver
        there names no one construction (it may be any object)."""
        if short in self._receivers_memo:
            return self._receivers_memo[short]
        found: dict[str, set[tuple] | None] = {}
        self._receivers_memo[short] = found  # (finish() reads the calls once they are all recorded)
        for caller, call, env in [*self.call_arguments.get(short, []), *self.bare_calls.get(short, [])]:
            if isinstance(call.func, ast.Attribute):
                where = f"{self.relfile(caller)}:{call.lineno}"
                held = env.get(call.func.value.id) if isinstance(call.func.value, ast.Name) else None
                made = self._object_made(caller, call.func.value, 0, env)
                site = held.site if isinstance(held, Record) else made[1] if made is not None else None
                if site is None or (where in found and found[where] is None):
                    found[where] = None
                else:
                    found.setdefault(where, set()).add(site)
        return found

    def _held_object_calls(self, cls_path: str) -> list[tuple[str, ast.Call, dict]]:
        """The calls with no arguments of a module global holding an instance of plugin class
        `cls_path` (`install = _Installer(SPECS)`, then `install()` anywhere): its `__call__` runs
        there, as (caller module, call, env) like bare_calls."""
        found = []
        for module in self.files:
            tree = self.tree(module)
            for stmt in tree.body if tree else ():
                if (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
                        and isinstance(stmt.value, ast.Call) and dotted(stmt.value.func)
                        and self.qualify(module, dotted(stmt.value.func)) == cls_path):
                    held = f"{module}.{stmt.targets[0].id}"
                    found += [(caller, call, env) for caller, call, env in self.bare_calls.get(stmt.targets[0].id, [])
                              if self.qualify(caller, dotted(call.func), env) == held]
        return found

    def bindings_or_through(self, module: str, functions: tuple[str, ...], line: int,
                            known: Callable[[list[tuple[dict, str]]], bool]) -> list[tuple[dict, str]]:
        """helper_bindings of the direct callers; when `known(those)` is false (they pass nothing
        the read needs), the bindings followed through the callers' own callers instead. Only
        reads that need it ask: following callers up costs far more than one level."""
        found = self.helper_bindings(module, functions, line)
        return found if known(found) else self.helper_bindings(module, functions, line, through=True)

    def _definition(self, module: str, function: str, line: int) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        """The def of plugin function `function` in `module` whose body spans `line`."""
        short = function.rsplit(".", 1)[-1]
        if module not in self._defs:  # each module's defs by name, once
            tree = self.tree(module)
            self._defs[module] = {}
            for n in walk(tree) if tree else ():
                if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    self._defs[module].setdefault(n.name, []).append(n)
        return next((n for n in self._defs[module].get(short, []) if n.lineno <= line <= (n.end_lineno or n.lineno)), None)

    def _parameter_imports(self) -> None:
        """`importlib.import_module(f"pkg.{name}.patch")` inside a function whose parameter
        `name` its callers pass as constants (`_load("alpha")`): each module so named is
        imported there, as a constant argument would be; with no such caller, each plugin
        module the name's shape allows (Expressions.chosen_modules)."""
        for module, expression, package, ctx in self.parameter_imports:
            targets = [target for binding, _ in self.helper_bindings(module, ctx.functions, expression.lineno, through=True)
                       for inner in self._bound_contexts(module, ctx, binding, expression.lineno, node=expression)
                       if isinstance(target := self._absolute(self.const(module, expression, inner.env),
                                                              self.const(module, package, inner.env) if package is not None else None), str)]
            targets = targets or [target for binding, _ in self._instance_bindings(module, ctx.functions[-1], expression.lineno)
                                  if isinstance(target := self.const(module, expression, {**ctx.env, **binding}), str)]
            # no caller names it: a module chosen at run time (an environment variable, a config
            # value), any of those the name's shape allows
            for target in dict.fromkeys(targets or self.chosen_modules(module, expression, ctx.env)):
                self.imported_by_name(module, target, ctx)
                if is_upstream(target):  # (an ImportError there, as for a constant name: _dynamic_import)
                    self._dependency("import", target, module, expression, ctx, expression=f"import_module({ast.unparse(expression)}) with {target!r}")

    def _parameter_getattrs(self) -> None:
        """`getattr(owner, name)` (no default) in a plugin module's `__getattr__` (PEP 562) whose
        parameter decides owner and name (`getattr(importlib.import_module(_LAZY[name]), name)`):
        per name plugin code reads off the module (helper_bindings) for which the whole
        `__getattr__(name)` folds to that read (a branch before it answering the name, or a test
        that does not fold, reads nothing here), a read of that attribute there (AttributeError
        when gone)."""
        for module, call, ctx in self.parameter_getattrs:
            read = {}
            for binding, _ in self.helper_bindings(module, ctx.functions, call.lineno, through=True):
                asked = next((v for v in binding.values() if isinstance(v, str)), None)
                for inner in self._bound_contexts(module, ctx, binding, call.lineno, node=call):
                    owner, attr = self.const(module, call.args[0], inner.env), self.const(module, call.args[1], inner.env)
                    # (only where __getattr__(name) returns this read: a name a branch before it answers is not read here)
                    if (isinstance(owner, Named) and is_upstream(owner.path) and isinstance(attr, str) and asked is not None
                            and self._module_getattr(module, asked) == f"{owner.path}.{attr}"):
                        read.setdefault(f"{owner.path}.{attr}", (attr, self._owner_errors(module, call.args[0], inner.env)))
            for target, (attr, errors) in read.items():
                self._dependency("reference", target, module, call, ctx, expression=f"{ast.unparse(call)} with {attr!r}", owner_errors=errors)

    def _parameter_provided(self) -> None:
        """`sys.modules[name] = m` in a helper whose parameter names the module
        (`alias_frozen_module(CANONICAL_NAME, mod)`): each name its callers pass is provided."""
        for module, named, node, ctx in self.parameter_provided:
            for binding, _ in self.helper_bindings(module, ctx.functions, node.lineno, through=True):
                for inner in self._bound_contexts(module, ctx, binding, node.lineno):
                    if isinstance(name := self.const(module, named, inner.env), str):
                        self.scan.provided_modules.setdefault(name, f"{self.relfile(module)}:{node.lineno}")

    @staticmethod
    def _absolute(name, package) -> str | None:
        """`import_module(name, package)`'s module: a relative name resolved against `package`
        (importlib's rule); None when it cannot be."""
        if isinstance(name, Named):  # a module object a helper made (exec_module of module_from_spec)
            return name.path
        if not isinstance(name, str) or not name.startswith("."):
            return name if isinstance(name, str) else None
        level = len(name) - len(name.lstrip("."))
        return resolve_relative(package, True, level, name.lstrip(".") or None) if isinstance(package, str) else None

    def _object_call_bindings(self, module: str, function: str, line: int) -> list[tuple[dict, str]]:
        """For `__call__` of a plugin class C: each object made and called at once,
        `C(target, kind)(fn)` or `@C(target, kind)` on a def: self as a Record of what `__init__`
        kept (_instance_bindings), the parameters after it as the call passes them (the
        decorated def for a decorator)."""
        method = self._definition(module, function, line)
        params = [a.arg for a in (*method.args.posonlyargs, *method.args.args)][1:] if method is not None else []
        found = []
        for binding, construction in self._instance_bindings(module, function, line):
            if id(construction) in self.decorated and params:
                found.append(({**binding, params[0]: Named(self.decorated[id(construction)])}, f"{self.relfile(module)}:{construction.lineno}"))
            elif id(construction) in self.called_objects:
                caller, call, env = self.called_objects[id(construction)]
                if any(isinstance(a, ast.Starred) for a in call.args):
                    continue
                given = {**dict(zip(params, call.args)), **{k.arg: k.value for k in call.keywords if k.arg}}
                values = {name: self.const(caller, value, env) for name, value in given.items()}
                found.append(({**binding, **{k: v for k, v in values.items() if v is not OPAQUE}}, f"{self.relfile(caller)}:{call.lineno}"))
        return found

    def _instance_bindings(self, module: str, function: str, line: int) -> list[tuple[dict, ast.Call]]:
        """For a method of a plugin class C (its def in `module` spans `line`): per construction
        `C(…)` in the plugin, ({self: Record of the attributes C's `__init__` sets at its top
        level from what that call passes (`self.module_path = module_path`, also unpacked from a
        tuple)}, the construction call). An attribute something else also writes on C's
        instances (another method, `obj.attr = …` of an object of unknown class, setattr) is
        left out (assigned_truth's rule); none when a plugin subclass has an `__init__` of its
        own or the method is a static or class method."""
        cls_path, _, _ = function.rpartition(".")
        cls, method = self.scan.classes.get(cls_path), self._definition(module, function, line)
        if cls is None or method is None or method.decorator_list and not is_property(method) or not function_params(method.args):
            return []
        if self.enum_kind(cls_path) is not None:
            return self._member_bindings(cls_path, function_params(method.args)[0].name)
        if "__init__" not in cls.methods:
            return self._record_bindings(cls_path, function_params(method.args)[0].name)
        init = self._definition(cls.module, f"{cls_path}.__init__", cls.methods["__init__"].line)
        subclasses = self._plugin_subclasses(cls_path)
        if init is None or not function_params(init.args) or any("__init__" in self.scan.classes[c].methods for c in subclasses - {cls_path}):
            return []
        receiver = function_params(init.args)[0].name

        def on_self(target: ast.AST) -> bool:
            return isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == receiver

        sets: dict[str, ast.expr] = {}
        for stmt in init.body:
            if isinstance(stmt, ast.AnnAssign) and stmt.value is not None:  # `self._table: dict[K, V] = {…}`
                target, value = stmt.target, stmt.value
            elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
                target, value = stmt.targets[0], stmt.value
            else:
                continue
            if on_self(target):
                sets[target.attr] = value
            elif (isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple) and len(target.elts) == len(value.elts)
                  and all(on_self(t) for t in target.elts)):  # self.a, self.b = a, b
                sets.update({t.attr: v for t, v in zip(target.elts, value.elts)})
            elif isinstance(target, ast.Tuple) and all(on_self(t) or isinstance(t, ast.Name) for t in target.elts) and any(on_self(t) for t in target.elts):
                # `self.module, _, self.attr = path.rpartition(".")`: each field the item at its place
                sets.update({t.attr: ast.copy_location(ast.Subscript(value=value, slice=ast.Constant(i), ctx=ast.Load()), value)
                             for i, t in enumerate(target.elts) if on_self(t)})
        # (a write on another class's instances, `self.target = …` in an unrelated class, does not count)
        if cls_path not in self._related_classes:
            self._related_classes[cls_path] = frozenset({cls_path, *self.upstream_bases(cls_path), *self._plugin_bases(cls_path)} | subclasses)
        related = self._related_classes[cls_path]
        # at the entry of a method called on the construction itself (`C(…).install()`), what
        # `__init__` set holds, whatever other methods write later (unless `__init__` calls them)
        fresh = dict(sets) if not any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and isinstance(n.func.value, ast.Name)
                                      and n.func.value.id == receiver for n in walk(init)) else {}
        sets = {name: value for name, value in sets.items()
                if all(writer == f"{cls_path}.__init__" for writer, _, owner in self.attribute_writes.get(name, []) if owner is None or owner in related)}
        method_name = function.rsplit(".", 1)[-1]

        def kept(caller: str, call: ast.Call) -> dict[str, ast.expr]:
            return fresh if fresh and id(call) in self._called_on_construction(caller, method_name) else sets

        if not sets and not fresh:
            return []
        # names __init__ imports at its top level or in a try there (`try: from sglang.x import f` /
        # `except ImportError: f = None`, then `self._register = f`): what they name
        imported: dict = {}
        for stmt in init.body:
            imported.update(imported_names(cls.module, self.files[cls.module][1], stmt.body if isinstance(stmt, ast.Try) else [stmt]))
        imported = {name: Named(path) for name, path in imported.items()}
        found = []
        for path in subclasses:
            short = path.rsplit(".", 1)[-1]
            bindings = self.caller_bindings(cls.module, f"{cls_path}.__init__", init.lineno, called_as=short)
            for (binding, _), (caller, call, _) in zip(bindings, self.call_arguments.get(short, [])):
                if held := tuple((name, self.const(cls.module, value, {**imported, **binding})) for name, value in kept(caller, call).items()):
                    found.append(({function_params(method.args)[0].name: Record(cls_path, held, (caller, call.lineno, call.col_offset))}, call))
            defaults = None
            for caller, call, env in self.bare_calls.get(short, []):  # `Installer()`: its defaults
                if self.qualify(caller, dotted(call.func), env) == path:
                    defaults = self._default_binding(cls.module, init) if defaults is None else defaults
                    if held := tuple((name, self.const(cls.module, value, {**imported, **defaults})) for name, value in kept(caller, call).items()):
                        found.append(({function_params(method.args)[0].name: Record(cls_path, held, (caller, call.lineno, call.col_offset))}, call))

        def in_own_classmethod(caller: str, call: ast.Call) -> bool:
            return self._in_own_classmethod(subclasses, caller, call)

        for binding, _, call in self._call_bindings(cls.module, f"{cls_path}.__init__", init.lineno, "cls", 1, in_own_classmethod):
            if held := tuple((name, self.const(cls.module, value, {**imported, **binding})) for name, value in sets.items()):
                found.append(({function_params(method.args)[0].name: Record(cls_path, held)}, call))  # (`cls(…)` in a classmethod: made per call of it)
        return found

    def _called_on_construction(self, module: str, method: str) -> frozenset[int]:
        """ids of the calls in `module` that a call of `method` is made on directly
        (`Installer(cfg).install()`: the `Installer(cfg)` node). One walk per module."""
        if module not in self._direct_receivers:
            tree, found = self.tree(module), {}
            for n in walk(tree) if tree is not None else []:
                if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and isinstance(n.func.value, ast.Call):
                    found.setdefault(n.func.attr, set()).add(id(n.func.value))
            self._direct_receivers[module] = {name: frozenset(ids) for name, ids in found.items()}
        return self._direct_receivers[module].get(method, frozenset())

    def _member_bindings(self, cls_path: str, receiver: str) -> list[tuple[dict, ast.expr]]:
        """For a method of a plugin enum: self is each member (its instances are its members
        alone), a Record of its `name`, its `value` and what the enum's `__init__` sets at its top
        level from the value (a tuple value is passed as separate arguments: the enum docs,
        "When to use __new__() vs. __init__()"), with the member's value expression as its site."""
        found = self._plugin_definition(cls_path)
        members = self.enum_members(cls_path) or {}
        init = next((n for n in found[1].body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None) if found else None
        params = [p.name for p in function_params(init.args)] if init is not None else []
        sets = {t.attr: stmt.value for stmt in init.body if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
                for t in stmt.targets if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and params and t.value.id == params[0]} if init else {}
        values = {stmt.targets[0].id: stmt.value for stmt in found[1].body if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
                  and isinstance(stmt.targets[0], ast.Name)} if found else {}
        bindings = []
        for name, value in members.items():
            site = values.get(name)
            given = list(value) if isinstance(site, ast.Tuple) and isinstance(value, (tuple, list)) else [value]
            env = dict(zip(params[1:], given)) if len(given) == len(params) - 1 else {}
            held = (("name", name), ("value", value), *((f, self.const(found[0], v, env)) for f, v in sets.items() if env))
            bindings.append(({receiver: Record(cls_path, held, (found[0], site.lineno, site.col_offset) if site is not None else None)}, site))
        return bindings

    def _record_bindings(self, cls_path: str, receiver: str) -> list[tuple[dict, ast.Call]]:
        """For a method of a plugin @dataclass, NamedTuple or plain class with no `__init__` of
        its own: per construction in the plugin, of it or of a plugin subclass inheriting the
        method, that folds (Folding._record: its fields as the generated `__init__` binds them),
        ({receiver: that Record}, the call); what the body reads through the receiver is then
        that class's."""
        found = []
        for made in sorted(self._plugin_subclasses(cls_path) | {cls_path}):
            short = made.rsplit(".", 1)[-1]
            for caller, call, env in [*self.call_arguments.get(short, []), *self.bare_calls.get(short, []),
                                      *self.call_arguments.get("cls", []), *self.bare_calls.get("cls", [])]:
                if not (self._in_own_classmethod({made}, caller, call) if dotted(call.func) == "cls"
                        else self.qualify(caller, dotted(call.func), env) == made):
                    continue
                record = self._record(caller, made, call, env, 0)
                if record is not None:
                    found.append(({receiver: record}, call))
        return found

    def _in_own_classmethod(self, classes: set[str], caller: str, call: ast.Call) -> bool:
        """Whether `call` (`cls(…)` in `caller`) sits in a classmethod of one of the plugin
        `classes`: an alternative constructor (`from_ports`, `from_env`) making an instance."""
        if caller not in {self.scan.classes[c].module for c in classes if c in self.scan.classes}:
            return False
        enclosing = self._functions_at(self.relfile(caller), str(call.lineno))
        owner, _, name = enclosing[-1].rpartition(".") if enclosing else ("", "", "")
        decl = self.scan.classes[owner].methods.get(name) if owner in classes and owner in self.scan.classes else None
        return decl is not None and "classmethod" in {d.rsplit(".", 1)[-1] for d in decl.decorators}

    def caller_bindings(self, module: str, function: str, line: int, called_as: str | None = None, through_callers: int = 0) -> list[tuple[dict, str]]:
        """For the plugin function `function` (its def in `module` spans `line`): each call of it
        in the plugin (by its name; a method's through any receiver, self taken away), with the
        arguments folded where the call is made (Expressions.call_arguments: a loop over
        constants gives one call per element), as (parameter -> value, "file:line"); defaults
        fill what a call leaves out; parameters whose value is not known are left out.
        `called_as`: the name calls use when it is not the function's (a class name for its
        `__init__`, whose instance parameter no call passes). `through_callers` (1 to 3): an
        argument that reads a parameter of the function the call sits in is folded once per
        binding of that function's own callers (helper_bindings; `_wrap(name, upstream)` in a
        loop, passing `upstream` on to `_factory(upstream)`), so one call may give several."""
        return [(binding, where) for binding, where, _ in self._call_bindings(module, function, line, called_as, through_callers)]

    def _call_bindings(self, module: str, function: str, line: int, called_as: str | None, through_callers: int,
                       only: Callable[[str, ast.Call], bool] | None = None) -> list[tuple[dict, str, ast.Call]]:
        """caller_bindings, each with its call; `only(caller module, call)` picks the calls read."""
        short = called_as or function.rsplit(".", 1)[-1]
        definition = self._definition(module, function, line)
        if definition is None:
            return []
        args = definition.args
        positional = [a.arg for a in (*args.posonlyargs, *args.args)]
        if called_as is not None:  # a class called: its __init__ gets the instance first
            positional = positional[1:]
        method = called_as is None and function.rpartition(".")[0] in self.scan.classes
        found = []
        named = {*positional, *(a.arg for a in args.kwonlyargs)}
        # calls passing arguments, then those passing none of a module function with defaults
        # (`install_all()`: its defaults; a method's: helper_bindings), in that order
        # (a class called with no arguments, `_Patcher()`, runs its __init__ with its defaults too)
        bare = [(caller, call, env) for caller, call, env in self.bare_calls.get(short, ())
                if (called := self.qualify(caller, dotted(call.func), env)) == function
                or called_as is not None and called in self.scan.classes and called.rsplit(".", 1)[-1] == called_as] if (
            (called_as is not None or not method) and (args.defaults or any(d is not None for d in args.kw_defaults))) else []
        owner = function.rpartition(".")[0]
        on_class = method and positional and any(dotted(d) == "classmethod" for d in definition.decorator_list)
        if on_class:
            # a classmethod called on a class (`for hook_cls in Base.registry: hook_cls.install()`):
            # its first parameter is that class, a plugin class of the method's class or one deriving from it
            bare = [(caller, call, env) for caller, call, env in self.bare_calls.get(short, ()) if isinstance(call.func, ast.Attribute)]
        calls = itertools.chain(self.call_arguments.get(short, ()), bare)
        defaults = self._default_binding(module, definition) if short in self.call_arguments or short in self.bare_calls else {}  # once, not per call
        for caller, call, env in calls:
            if only is not None and not only(caller, call):
                continue
            names = positional[1:] if method and isinstance(call.func, ast.Attribute) else positional
            given = {**{k.arg: k.value for k in call.keywords if k.arg}, **dict(zip(names, _spread(call.args, len(names))))}
            extra = None
            if args.kwarg and all(k.arg for k in call.keywords):
                # `def apply(**overrides)`: the keywords no parameter takes, as a dict (Python's call semantics)
                extra = {k.arg: self.const(caller, k.value, env) for k in call.keywords if k.arg not in named}
                given = {k: v for k, v in given.items() if k in named}
            arguments = {**defaults,
                         **{k: OPAQUE if isinstance(v, ast.Starred) else self.const(caller, v, env) for k, v in given.items()}}
            if on_class and isinstance(call.func, ast.Attribute):
                receiver = self.const(caller, call.func.value, env)
                if not (isinstance(receiver, Named) and receiver.path in self._plugin_subclasses(owner)):
                    continue
                arguments[positional[0]] = receiver
            if extra is not None:
                arguments[args.kwarg.arg] = extra if all(v is not OPAQUE for v in extra.values()) else OPAQUE
            if args.vararg and not any(isinstance(a, ast.Starred) for a in call.args[:len(names)]):
                # `def install(*specs)`: the positional arguments past the named ones, as a tuple
                rest = [OPAQUE if isinstance(a, ast.Starred) else self.const(caller, a, env) for a in call.args[len(names):]]
                arguments[args.vararg.arg] = rest if all(v is not OPAQUE for v in rest) else OPAQUE
            where = f"{self.relfile(caller)}:{call.lineno}"
            # an argument not folded here, or standing for a parameter of the function the call sits in
            unknown = {k: v for k, v in given.items() if not isinstance(v, ast.Starred)
                       and (arguments.get(k) is OPAQUE or isinstance(arguments.get(k), Instance) and arguments[k].function is not None)
                       } if 0 < through_callers <= 3 else {}
            outer = self._caller_envs(caller, call, unknown, env, through_callers) if unknown else []
            for inner in outer or [None]:
                refolded = {k: self.const(caller, v, inner) for k, v in unknown.items()} if inner is not None else {}
                refolded = {k: v for k, v in refolded.items() if v is not OPAQUE}
                found.append(({name: value for name, value in {**arguments, **refolded}.items() if value is not OPAQUE}, where, call))
        return found

    def _caller_envs(self, caller: str, call: ast.Call, unknown: dict[str, ast.expr], env: dict, depth: int) -> list[dict]:
        """The locals of the function a call sits in at that call, once per binding of that
        function's own callers (helper_bindings, loops around the call unrolled: _bound_contexts),
        where an argument the call passes reads one of them; [] otherwise."""
        key = (caller, call.lineno, call.col_offset, depth)
        if key in self._through_callers:
            return self._through_callers[key]
        self._through_callers[key] = []  # (a cycle of helpers calling each other ends here)
        functions = self._functions_at(self.relfile(caller), str(call.lineno))
        if not functions or functions[-1].rpartition(".")[2].startswith("__"):
            return []  # a dunder (`__init__`) is called by Python, not by its name: no callers to follow
        definition = self._definition(caller, functions[-1], call.lineno)
        params = {p.name for p in function_params(definition.args)} if definition is not None else set()
        local = local_names(definition) | params if definition is not None else set()
        read = {n.id for v in unknown.values() for n in walk(v) if isinstance(n, ast.Name)}
        if not read & local:
            return []
        ctx = Context(env=dict(env), functions=functions, local=frozenset(local))
        envs = []
        for binding, _ in self.helper_bindings(caller, functions, call.lineno, depth, through=True):
            if binding and len(envs) < _MOST_CALLER_ENVS:
                # the parameters as bound; the locals (a loop's element) replayed to the call only where read
                envs += ([{**env, **binding}] if read & local <= params else
                         [inner.env for inner in self._bound_contexts(caller, ctx, binding, call.lineno)][: _MOST_CALLER_ENVS - len(envs)])
        self._through_callers[key] = envs
        return envs

    def _default_binding(self, module: str, definition: ast.FunctionDef | ast.AsyncFunctionDef) -> dict:
        """{parameter: its default, folded in `module`} of the parameters of `definition` that have one."""
        args = definition.args
        defaults = {a.arg: d for a, d in zip([*args.posonlyargs, *args.args][::-1], args.defaults[::-1])}
        defaults.update({a.arg: d for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None})
        return {k: self.const(module, d, {}) for k, d in defaults.items()}

    def _instance_flags(self) -> None:
        """Tests of `self.<flag>` (SelfFlag) become what the class's __init__ leaves there, in the
        guards of dependencies and of imports."""
        flags: dict[SelfFlag, Cond] = {}

        def place(cond: Cond) -> Cond:
            if isinstance(cond, SelfFlag):
                if cond not in flags:
                    flags[cond] = self.instance_flag(cond.cls, cond.name)
                return flags[cond]
            return cond

        def placed(guards: tuple[GuardCond, ...]) -> tuple[GuardCond, ...]:
            if not any(isinstance(leaf, SelfFlag) for g in guards for leaf in leaves(g.cond)):
                return guards
            return tuple(replace(g, cond=map_leaves(g.cond, place)) for g in guards)

        for dep in self.scan.dependencies:
            dep.guards = placed(dep.guards)
        for imports in self.import_guards.values():
            for name, alternatives in imports.items():
                imports[name] = [placed(guards) for guards in alternatives]

    def instance_flag(self, cls_path: str, name: str) -> Cond:
        """Whether `self.<name>` is true in a method of the plugin class `cls_path`, as its
        __init__ leaves it (Folding.assigned_truth), when nothing else can change it: only that
        __init__ assigns the name on the class's instances (writes on other classes, such as a
        patch of `VllmConfig.<name>`, do not count; one on an object of unknown class, or a
        setattr, does), no method has that name, no upstream base has it, no plugin subclass
        has it or an __init__ of its own, and __init__ calls no method of self before it is
        set. UNDECIDED otherwise."""
        cls = self.scan.classes.get(cls_path)
        if cls is None or name in cls.methods:
            return UNDECIDED
        upstream = self.upstream_bases(cls_path)
        related = {cls_path, *upstream, *self._plugin_bases(cls_path)}
        subclasses = self._plugin_subclasses(cls_path)
        writes = [(function, line) for function, line, owner in self.attribute_writes.get(name, []) if owner is None or owner in related | subclasses]
        # a once-flag (`if not self.done: …; self.done = True`): the block that sets it runs the first time, with the flag as it began
        writes = [(function, line) for function, line in writes if not self._sets_its_own_guard(cls, function, line, name)]
        if any(function != f"{cls_path}.__init__" for function, _ in writes):
            return UNDECIDED
        if any(self.scan.classes[path].binds(name) or "__init__" in self.scan.classes[path].methods for path in subclasses - {cls_path}):
            return UNDECIDED
        if any(self._upstream_has(base, name) for base in upstream):
            return UNDECIDED
        if not writes:  # what the class body binds (`done = False`), when it folds
            held = self.class_constant(cls_path, name, 0) if self.attribute_writes.get(name) else OPAQUE
            return Const(bool(held)) if held is None or isinstance(held, (bool, int, str)) else UNDECIDED
        if "__init__" not in cls.methods:
            return UNDECIDED
        tree = self.tree(cls.module)
        node = next((n for n in walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == "__init__"
                     and n.lineno == cls.methods["__init__"].line), None) if tree else None
        params = function_params(node.args) if node is not None else ()
        if not params:
            return UNDECIDED
        self_name, last = params[0].name, max(line for _, line in writes)

        def is_flag(n: ast.AST) -> bool:
            return isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == self_name and n.attr == name

        if any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and isinstance(n.func.value, ast.Name)
               and n.func.value.id == self_name and n.lineno < last for n in walk(node)):
            return UNDECIDED
        truth = self.assigned_truth(cls.module, node.body, is_flag, {}, f"{cls.file}: self.{name}", local=frozenset(p.name for p in params[1:]))
        return UNDECIDED if truth is None else truth

    def _sets_its_own_guard(self, cls: PluginClass, function: str, line: int, name: str) -> bool:
        """Whether the write of `self.<name>` at `line` of the method `function` of `cls` sits in
        an `if not self.<name>:` (or `if self.<name>:`) block of that method and leaves the
        flag so that the test fails: a guard that lets its block run once."""
        method = cls.methods.get(function.rpartition(".")[2]) if function.rpartition(".")[0] == cls.path else None
        tree = self.tree(cls.module) if method is not None else None
        node = next((n for n in walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.lineno == method.line), None) if tree else None
        if node is None or not node.args.args:
            return False
        receiver = node.args.args[0].arg

        def is_flag(n: ast.AST) -> bool:
            return isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == receiver and n.attr == name

        for block in walk(node):
            if not isinstance(block, ast.If) or not (block.lineno < line <= max(getattr(s, "end_lineno", 0) or 0 for s in block.body)):
                continue
            negated = isinstance(block.test, ast.UnaryOp) and isinstance(block.test.op, ast.Not) and is_flag(block.test.operand)
            if not (negated or is_flag(block.test)):
                continue
            for stmt in block.body:
                if (isinstance(stmt, ast.Assign) and stmt.lineno == line and len(stmt.targets) == 1 and is_flag(stmt.targets[0])
                        and isinstance(stmt.value, ast.Constant) and bool(stmt.value.value) is negated):
                    return True
        return False

    def _parameter_fields(self) -> None:
        """Fields read on an unannotated parameter of a hook or an override: the class is what
        the upstream function it stands in for annotates the same-named parameter with; with no
        such evidence the reads are no dependencies (and `hasattr` on them stays undecided). A
        read through its fields (`vllm_config.compilation_config.m`, the parameter "dotted")
        is on the class each field is annotated with, in turn (annotations.field_class)."""
        classes: dict[tuple[str, str], str | None] = {}

        def class_of(function: str, param: str) -> str | None:
            if (function, param) not in classes:
                head, _, field = param.rpartition(".")
                if head:  # `vllm_config.compilation_config`: the class the holder's class annotates the field with
                    holder = class_of(function, head)
                    ref = self.upstream_ref(holder) if holder else None
                    classes[function, param] = field_class(self.index, ref, field) if ref is not None and ref.kind == "class" else None
                else:
                    held = function.startswith(SELF_HELD)
                    classes[function, param] = self._held_class(function[len(SELF_HELD):], param) if held else self._parameter_class(function, param)
            return classes[function, param]

        def place(cond: Cond) -> Cond:
            if isinstance(cond, ParamFieldPresent):
                found = class_of(cond.function, cond.param)
                return FieldPresent(found, cond.name) if found else UNDECIDED
            return cond

        kept = []
        for dep in self.scan.dependencies:
            if (dep.kind == "field" or dep.how == INSTANCE_CALL) and dep.target is None:
                found = class_of(dep.hook, dep.member)
                if found is None:
                    continue
                dep.target, dep.hook, dep.member = f"{found}.{dep.name}", None, None
            if any(on_param(g.cond) for g in dep.guards):
                dep.guards = tuple(replace(g, cond=map_leaves(g.cond, place)) for g in dep.guards)
            kept.append(dep)
        self.scan.dependencies[:] = kept

    def _grafted_onto(self, function: str) -> str | None:
        """The upstream class a plugin function is set on as a method (`Topo.forward = forward`,
        `setattr(Topo, "forward", forward)`): its first parameter is then that class's instance.
        None when it is set on no upstream class, on several, or in place of a staticmethod or
        classmethod."""
        owners = set()
        for dep in self.scan.dependencies:
            if dep.kind == "patch" and dep.how in ("assign", "setattr") and dep.hook == function and dep.target:
                owner, replaced = self.index.resolve(dep.target.rpartition(".")[0]), self.index.resolve(dep.target)
                info = self.index.function_info(replaced.ref) if replaced.ok and replaced.ref.kind == "function" else None
                # in place of a staticmethod or classmethod it gets no instance (whatever upstream calls it on)
                bare = info is not None and {d.rsplit(".", 1)[-1] for d in info.decorators} & {"staticmethod", "classmethod"}
                owners.add(owner.ref.path if owner.ok and owner.ref.kind == "class" and not bare else None)
        return owners.pop() if len(owners) == 1 else None

    def _first_parameter(self, function: str) -> str | None:
        """The name of the plugin function's first positional parameter (module-level functions
        only: a method's first is its own class's instance)."""
        module, _, name = function.rpartition(".")
        tree = self.tree(module) if module in self.files else None
        node = next((n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name), None) if tree else None
        positional = [*node.args.posonlyargs, *node.args.args] if node is not None else []
        return positional[0].arg if positional else None

    def _held_class(self, cls_path: str, attr: str) -> str | None:
        """The upstream class of what the plugin class `cls_path` keeps in `self.<attr>`: the one
        class the class body (or a related class's) declares it with (`attr: C`, PluginClass.declared);
        else every binding of it in the class, its plugin bases and subclasses (PluginClass.attribute_values,
        `= None` aside) is an instance of that one class: built by it, returned by an upstream
        function annotated to return it, or a name annotated with it. None otherwise (a plugin
        class, a value the scan cannot place, two classes)."""
        related, changed = {cls_path}, True
        while changed:
            before = len(related)
            for path, cls in self.scan.classes.items():
                if path in related:  # its plugin bases
                    related |= {base for base in cls.bases if base in self.scan.classes}
                elif set(cls.bases) & related:  # a subclass
                    related.add(path)
            changed = len(related) > before
        declared = {self.scan.classes[p].declared[attr] for p in related if attr in self.scan.classes[p].declared}
        if len(declared) == 1 and (found := self.index.resolve(next(iter(declared)))).ok and found.ref.kind == "class":
            return found.ref.path  # `x: C` in a class body: every binding is a C, as a type checker reads it
        values = set().union(*(self.scan.classes[p].attribute_values.get(attr, set()) for p in related))
        if not values and not any(attr in self.scan.classes[p].bound_otherwise for p in related):
            # nothing of the plugin binds it: what the upstream base's __init__ keeps there
            # (`self.vllm_config` of vLLM's WorkerBase, from its annotated parameter)
            for base in self.upstream_bases(cls_path):
                ref = self.upstream_ref(base)
                kept = kept_class(self.index, ref, attr) if ref is not None and ref.kind == "class" else None
                if kept:
                    return kept
            return None
        values.discard(NONE_VALUE)
        found = set()
        for value in values:
            resolved = self.index.resolve(value) if value != "?" else None
            if resolved is None or not resolved.ok:
                return None
            if resolved.ref.kind == "class":
                found.add(resolved.ref.path)
            elif resolved.ref.kind == "function":
                found.add(parameter_class(self.index, resolved.ref, "return"))
            else:
                return None
        return found.pop() if len(found) == 1 and None not in found else None

    def _parameter_class(self, function: str, param: str) -> str | None:
        """The upstream class of parameter `param` of the plugin function `function`: for a hook
        on an upstream method, the method's class where `param` is named as the method's receiver;
        annotated on the same-named parameter of the upstream function it hooks or overrides; the class a
        module-level function is set on as a method, for its first parameter (_grafted_onto);
        else ServerArgs for `server_args`; else None."""
        upstream = []
        target = self.hook_callables.get(function)
        if target:
            found = self.index.resolve_hook_target(target)
            if found.ok and found.ref.kind == "function":
                upstream.append(found.ref)
                # the hook's parameter named as the hooked method's receiver (`self`) is that
                # instance: the wrapper hands the hook the method's arguments (hook_registry)
                owner = self.index.resolve(found.ref.path.rpartition(".")[0])
                info = self.index.function_info(found.ref) if owner.ok and owner.ref.kind == "class" else None
                if (info is not None and info.params and info.params[0].name == param
                        and not {d.rsplit(".", 1)[-1] for d in info.decorators} & {"staticmethod", "classmethod"}):
                    return owner.ref.path
        owner, _, method = function.rpartition(".")
        if owner in self.scan.classes:
            for base in self.upstream_bases(owner):
                found = self.index.resolve(f"{base}.{method}")
                if found.ok and found.ref.kind == "function":
                    upstream.append(found.ref)
                    break
        for ref in upstream:
            found = parameter_class(self.index, ref, param)
            if found:
                return found
        # the instance by the convention a method's first parameter follows (a function set on a
        # class but called by the plugin with other first arguments, `_function_name(tool)`, is not one)
        grafted = self._grafted_onto(function) if param == "self" == self._first_parameter(function) else None
        if grafted:
            return grafted
        engine = profile()
        return engine.server_args if engine.server_args and param == engine.server_args_names[0] else None

    def _runs_in_hooks(self) -> dict[str, str]:
        """Plugin functions that run only when a hooked upstream function is called: the hook
        callables (and classes), their nested functions, and the plugin functions they call."""
        runtime = {host: f"itself a hook on {target}" for host, target in self.hook_callables.items()}
        queue = list(runtime)
        while queue:
            caller = queue.pop()
            for function, callees in self.calls.items():
                if function != caller and not function.startswith(caller + "."):
                    continue
                for callee in callees - runtime.keys():
                    runtime[callee] = f"called from {function}, {runtime[caller].replace('itself ', '')}"
                    queue.append(callee)
        return runtime

    def _entry_point_dependency(self, ep: EntryPoint) -> None:
        """`ep.load()` imports the module and getattr()s the callable; failing either, SGLang
        logs it and skips the plugin."""
        module, _, attr = ep.value.partition(":")
        head = attr.split(".")[0]
        if module not in self.files:
            problem = f"module {module} is not in this checkout"
        elif self.scan.modules[module].error or not head:
            return
        else:
            table = self.table(module)
            if head in table.names or table.has_getattr or table.star_imports:
                return
            problem = f"{module} defines no {head!r}"
        self.scan.dependencies.append(Dependency(
            "entry_point", ep.value, module if module in self.files else "", ep.file, 1, expression=problem, name=f"{ep.group}:{ep.name}",
        ))

    def _class_dependencies(self) -> None:
        """Overrides and `self.`/`super()` members of every plugin class over upstream classes,
        judged in the context of the most-derived plugin classes (their MRO decides)."""
        classes = self.scan.classes
        derived = {path for path in classes if self.upstream_bases(path)}
        bases_of_derived = {b for path in derived for b in self.plugin_mro(path)[1:]}
        contexts = [p for p in self.scan.platform_class_paths if p.replace(":", ".") in derived]
        contexts = [p.replace(":", ".") for p in contexts] + sorted(derived - bases_of_derived)
        # a base of other plugin classes that the plugin also instantiates runs its methods with its
        # own MRO: what its subclasses override is upstream's there
        instantiated = {called for calls in self.calls.values() for called in calls}
        contexts += sorted((bases_of_derived & derived & instantiated) - set(contexts))
        seen: set[tuple] = set()
        for context in contexts:
            kind = "override" if context in self.scan.platforms else "subclass"
            mro = self.plugin_mro(context)
            if any(classes[k].dynamic for k in mro):
                continue
            for position, path in enumerate(mro):
                cls = classes[path]
                for name, method in ((n, m) for n, chosen in cls.methods.items() for m in (chosen, *chosen.alternatives)):
                    shadowed = any(name in classes[k].methods and not self._exclusive(mro, k, path) for k in mro[:position])
                    dunder = name.startswith("__") and name.endswith("__") and name != "__init__"
                    private = name.startswith("_") if kind == "override" else dunder
                    if shadowed or private or (cls.file, method.line, name, method.params) in seen:
                        continue
                    seen.add((cls.file, method.line, name, method.params))
                    # a @property over a base method: a call of it calls what the getter returns (a class:
                    # its __init__; a bound method of the instance: that method)
                    for hook, params in self._property_callables(context, cls, name, method) or [(None, None)]:
                        self.scan.dependencies.append(Dependency(
                            kind, None, cls.module, cls.file, method.line, scope="module", params=params if hook else method.params,
                            bound=True if hook else method.bound, raises_only=method.raises_only, plugin_class=context, member=name, access="override", name=path,
                            hook=hook, dispatch=method.dispatch,
                        ))
                if (position == 0 and "__init__" not in cls.methods and (extension := self.dataclass_extension(path)) is not None
                        and (cls.file, cls.line, "__init__") not in seen and self._writes_init(extension[0])):
                    # `@dataclass class C(UpstreamBase)` over a base whose `__init__` is written: the one the
                    # decorator writes overrides it, takes self and the fields, and runs no base __init__
                    # (the dataclasses docs; over a dataclass base it takes the base's fields too)
                    seen.add((cls.file, cls.line, "__init__"))
                    self.scan.dependencies.append(Dependency(
                        kind, None, cls.module, cls.file, cls.line, scope="module", params=(Param("self", "pos", None), *extension[1]), bound=True,
                        plugin_class=context, member="__init__", access="override", name=path, how=DATACLASS_INIT,
                    ))
                for ref in cls.self_refs:
                    after = mro[position + 1 :] if ref.access == "super" else mro
                    if any(ref.member in classes[k].methods or classes[k].binds(ref.member) for k in after) and not self._written_after(ref, [classes[k] for k in after]):
                        continue
                    # (one per call shape: `**({…} if c else {…})` is a call per arm, each under its test)
                    if (cls.file, ref.line, ref.member, ref.access, ref.call) in seen:
                        continue
                    seen.add((cls.file, ref.line, ref.member, ref.access, ref.call))
                    self.scan.dependencies.append(Dependency(
                        "subclass", None, cls.module, cls.file, ref.line, scope="function", call=ref.call,
                        plugin_class=context, member=ref.member, access=ref.access, name=path,
                        # no `enclosing`: a member read is judged wherever its method may run
                        # (a method nothing names still fails when called by name), not skipped
                        guards=ref.guards, catches=ref.catches,
                    ))

    def _class_reads(self) -> None:
        """`C.m` read on a plugin class C over upstream classes (`STEPS = (DevAttnBackend.
        prepare_prefill_shared_read_snapshot, …)`) that no plugin class of its MRO defines or
        binds: the member its upstream bases give, judged there as a `cls.m` in C's methods is
        (a subclass dependency at the read)."""
        classes = self.scan.classes
        seen: set[tuple] = set()
        for module, node, ctx, path, member in self.class_reads:
            if path not in classes or not self.upstream_bases(path) or (module, node.lineno, path, member) in seen:
                continue
            mro = self.plugin_mro(path)
            if any(classes[k].dynamic for k in mro) or any(member in classes[k].methods or classes[k].binds(member) for k in mro):
                continue
            seen.add((module, node.lineno, path, member))
            self._dependency("subclass", None, module, node, ctx, plugin_class=path, member=member, access="class", name=path,
                             expression=ast.unparse(node))

    def _written_after(self, ref, classes: list) -> bool:
        """Whether the plugin binds `self.<ref.member>` only by `self.x = v` statements of the
        method the read sits in, each after the read and not in a loop around it: the read runs
        first, so the plugin's own write does not make it there (`cached = self._w` then `self._w
        = …`); what upstream's classes set is judged as for any other read."""
        writes = [w for cls in classes for w in cls.self_writes.get(ref.member, [])]
        if (ref.access != "instance" or not ref.function or not writes or any(ref.member in cls.bound_otherwise or ref.member in cls.methods for cls in classes)
                or any(function != ref.function or line <= ref.line for function, line in writes)):
            return False
        owner = next((cls for cls in classes if ref.member in cls.self_writes), None)
        definition = self._definition(owner.module, ref.function, ref.line) if owner is not None else None
        loops = [n for n in walk(definition) if isinstance(n, (ast.For, ast.AsyncFor, ast.While))] if definition is not None else []
        return definition is not None and not any(n.lineno <= ref.line <= (n.end_lineno or n.lineno) for n in loops)

    def _stand_in_methods(self) -> None:
        """A plugin class over no upstream class that a patch puts in an upstream class's place
        (`mixtral.MixtralDecoderLayer = FusedLayer`, an nn.Module of its own): upstream builds it
        by that name and calls on it what it calls on the class it replaces, so each method both
        have is judged as an override of that class's (STANDS_IN)."""
        for patch in [d for d in self.scan.dependencies if d.kind == "patch" and d.hook in self.scan.classes]:
            replaced = self.upstream_ref(patch.target)
            if replaced is None or replaced.kind != "class" or self.upstream_bases(patch.hook):
                continue
            seen: set[str] = set()
            for cls in (self.scan.classes[path] for path in self.plugin_mro(patch.hook)):  # its own methods, then its plugin bases'
                for name, method in cls.methods.items():
                    if name in seen or name.startswith("__") or not self.index.member(replaced, name).ok:
                        continue
                    seen.add(name)
                    self.scan.dependencies.append(Dependency(
                        "subclass", None, cls.module, cls.file, method.line, scope="module", params=method.params, bound=method.bound,
                        raises_only=method.raises_only, dispatch=method.dispatch, plugin_class=patch.hook, member=name, access="override",
                        name=cls.path, how=STANDS_IN, hook=replaced.path,
                    ))

    def _platform_instance_members(self) -> None:
        """`current_platform.x` anywhere in the plugin reads `x` on the instance of the class
        activate() names (the engine's platform_instance: made from that class on first read).
        With one platform class, each such read is judged as `self.x` in that class (a subclass
        member over its MRO), unless a plugin class of that MRO or a write on the instance
        (`current_platform.x = …`, setattr) binds `x`. Several platform classes: which one runs
        is the machine's, so nothing is judged."""
        instance, platform = profile().platform_instance, self.scan.active_platform
        if instance is None or platform is None:
            return
        classes = self.scan.classes
        mro = self.plugin_mro(platform)
        if any(classes[k].dynamic for k in mro):
            return
        prefix = instance + "."
        reads = [dep for dep in self.scan.dependencies if dep.kind in ("reference", "call") and (dep.target or "").startswith(prefix)]
        written = {dep.target[len(prefix):].split(".")[0] for dep in self.scan.dependencies
                   if dep.kind == "patch" and (dep.target or "").startswith(prefix)}
        # `PrivPlatform.m = fn`, setattr(PrivPlatform, "m", fn) (or on an object of unknown class)
        written |= {name for name, writes in self.attribute_writes.items() if any(owner is None or owner in mro for _, _, owner in writes)}
        calls = {(dep.file, dep.line, dep.target): dep.call for dep in reads if dep.kind == "call" and dep.target.count(".") == prefix.count(".")}
        # the plugin setting the instance itself (`platforms.current_platform = Tuned()`): its class is that object's
        rebound = any(dep.kind == "patch" and dep.target == instance for dep in self.scan.dependencies)
        seen: set[tuple] = set()
        for dep in reads:
            member = dep.target[len(prefix):].split(".")[0]
            # one finding per member and function: `f = current_platform.m; f()` reads it once
            if (member in written or any(member in classes[k].methods or classes[k].binds(member) for k in mro)
                    or (dep.file, dep.enclosing, member) in seen):
                continue
            seen.add((dep.file, dep.enclosing, member))
            self.scan.dependencies.append(replace(
                dep, kind="subclass", target=None, call=calls.get((dep.file, dep.line, prefix + member)), plugin_class=platform,
                member=member, access="instance", name=None, expression=f"{instance.rsplit('.', 1)[-1]}.{member}",
                how=None if rebound else PLATFORM_INSTANCE_READ,
            ))

    def _platform_held_reads(self) -> None:
        """`self.platform.m()` in a method of a plugin class whose every construction the plugin
        makes keeps the engine's platform instance in `self.platform` (`Hooks(current_platform)`,
        `__init__` storing its parameter), and `platform.m()` in a function every call of which
        passes that instance as `platform` (`_enabled(current_platform)`, also through its
        callers' own parameters): a read of `current_platform.m`, judged on the activated class
        as one written out is (_platform_instance_members)."""
        instance = profile().platform_instance
        if instance is None:
            return
        held: dict[tuple[str, str, str], bool] = {}
        for dep in list(self.scan.dependencies):
            if dep.kind != "field" or dep.target is not None or not dep.hook or not dep.member or not dep.enclosing or not dep.name:
                continue
            key = (dep.module, dep.enclosing[-1], dep.member)
            if key not in held and dep.hook.startswith(SELF_HELD):
                made = [binding for binding, _ in self._instance_bindings(dep.module, dep.enclosing[-1], dep.line)]
                held[key] = bool(made) and all(isinstance(record, Record) and record.get(dep.member) == Named(instance)
                                               for binding in made for record in binding.values())
            elif key not in held:  # `def _enabled(platform): platform.m()`, every caller passing current_platform
                member = dep.member
                made = [binding.get(member) for binding, _ in self.helper_bindings(dep.module, dep.enclosing, dep.line)]
                if not any(isinstance(value, Named) for value in made) and self._passed_by_name(dep.enclosing[-1], member):
                    # (`_probe(platform)` in `_enabled(platform)`: what the callers' callers pass)
                    made = [binding.get(member) for binding, _ in self.helper_bindings(dep.module, dep.enclosing, dep.line, through=True)]
                held[key] = bool(made) and all(value == Named(instance) for value in made)
            if held[key]:
                self.scan.dependencies.append(replace(dep, kind="reference", target=f"{instance}.{dep.name}", hook=None, member=None))

    def _passed_by_name(self, function: str, param: str) -> bool:
        """Whether some call of the plugin function `function` passes its parameter `param` a
        bare name (a caller's own parameter or local, which its callers may decide)."""
        found = self._plugin_definition(function)
        if found is None or not isinstance(found[1], (ast.FunctionDef, ast.AsyncFunctionDef)):
            return False
        names = [p.name for p in function_params(found[1].args)]
        at = names.index(param) if param in names else None
        short = function.rsplit(".", 1)[-1]
        for _, call, _ in self.call_arguments.get(short, ()):
            given = next((k.value for k in call.keywords if k.arg == param), None)
            if given is None and at is not None:
                offset = 1 if isinstance(call.func, ast.Attribute) and function.rpartition(".")[0] in self.scan.classes else 0
                given = call.args[at - offset] if 0 <= at - offset < len(call.args) else None
            if isinstance(given, ast.Name):
                return True
        return False

    def _property_callables(self, context: str, cls: PluginClass, name: str, method: MethodDecl) -> list[tuple[str, tuple[Param, ...]]]:
        """For a `@property` method: what `obj.name(…)` calls, each (its path, its parameters with
        self bound): the class its getter returns by name (_property_class_init), or each method
        of the instance (of `context`'s MRO) it returns bound (`return self._a if c else self._b`).
        [] for anything else."""
        if not {"property", "cached_property"} & {d.rsplit(".", 1)[-1] for d in method.decorators}:
            return []
        if (made := self._property_class_init(cls, name)) is not None:
            return [made]
        found = []
        for attr in sorted(cls.returned_methods.get(name, ())):
            owner = next((path for path in self.plugin_mro(context) if attr in self.scan.classes[path].methods), None)
            held = self.scan.classes[owner].methods[attr] if owner else None
            if held is None or not held.bound or held.decorators:
                return []  # (an upstream method, a static or class method, an attribute: not read here)
            found.append((f"{owner}.{attr}", held.params))
        return found

    def _property_class_init(self, cls: PluginClass, name: str) -> tuple[str, tuple[Param, ...]] | None:
        """For a `@property` method whose getter returns one class by name, (that class, the
        parameters of its `__init__`: the plugin's own, else its first upstream base's): what
        `obj.name(…)` binds. None for anything else."""
        if len(cls.returns.get(name, ())) != 1:
            return None
        (made,) = cls.returns[name]
        for path in self.plugin_mro(made) if made in self.scan.classes else ():
            if "__init__" in self.scan.classes[path].methods:
                return made, self.scan.classes[path].methods["__init__"].params
        for base in self.upstream_bases(made) if made in self.scan.classes else [made] if is_upstream(made) else []:
            found = self.index.resolve(f"{base}.__init__")
            info = self.index.function_info(found.ref) if found.ok and found.ref.kind == "function" else None
            if info is not None:
                return made, info.params
        return None

    def _exclusive(self, mro: list[str], first: str, second: str) -> bool:
        """Whether a class of `mro` takes `first` and `second` as bases a run chooses between
        (PluginClass.base_choices), or bases derived from such alternatives: no run has both."""
        for path in mro:
            for choice in self.scan.classes[path].base_choices:
                held = [option for option in choice if option in (first, second)
                        or {first, second} & set(self.plugin_mro(option) if option in self.scan.classes else ())]
                if len(held) > 1:
                    return True
        return False

    def plugin_mro(self, path: str) -> list[str]:
        """The plugin classes in `path`'s MRO, in C3 order (their order does not depend on
        the upstream bases they share)."""
        classes = self.scan.classes

        def bases(ref: Ref) -> list[Ref]:
            cls = classes.get(ref.qualname)
            return [Ref("class", "", b) for b in cls.bases if b in classes] if cls else []

        return [ref.qualname for ref in c3(Ref("class", "", path), bases)]

    def returned_class_paths(self, module: str, function: str, depth: int = 0) -> list[str]:
        """What `activate()` returns: "pkg.mod:Class" or "pkg.mod.Class" (both load with
        pkgutil.resolve_name in sglang/srt/platforms/__init__.py). The entry point's attribute is
        what the engine calls, however the module binds it: a `def`, an alias of a plugin function
        (`activate = _impl`, `= hooks.activate`), a `lambda: "pkg.mod.Class"`, or a
        `functools.partial(_impl, "pkg.mod.Class")` (its arguments bound to `_impl`'s parameters),
        or an object of a plugin class whose `__call__` returns it (`_Activator("pkg.mod.Class")`).
        `function` may be a class attribute ("Plugin.activate": EntryPoint.load() walks the
        attributes): a static or class method, or a class attribute bound as above."""
        tree = self.tree(module)
        if tree is None or depth > 5:
            return []
        env: dict = {}
        if "." in function:
            owner, _, function = function.rpartition(".")
            found = self._plugin_definition(f"{module}.{owner}")
            if found is None or not isinstance(found[1], ast.ClassDef):
                return []
            module, scope = found[0], found[1].body
            defined = [node for node in scope if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == function]
            for node in defined:  # called on the class: a classmethod's first parameter is that class
                if any(dotted(d) == "classmethod" for d in node.decorator_list) and node.args.args:
                    env[node.args.args[0].arg] = Named(f"{module}.{owner}")
        else:
            # the module's own binding of the name: a method or nested function of that name is another object
            scope = list(module_level(tree.body))
            defined = [node for node in scope if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == function]
        if defined:
            return [path for node in defined for home, entry, bound in [self._decorated_entry(module, node)]
                    for path in self._returned_strings(home, entry, {**env, **bound})]
        paths: list[str] = []
        for stmt in scope:
            if not (isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == function for t in stmt.targets)):
                continue
            value = stmt.value
            if isinstance(value, ast.Call) and len(value.args) == 1 and dotted(value.func) in ("staticmethod", "classmethod"):
                value = value.args[0]  # `activate = staticmethod(_impl)` in a class body
            if isinstance(value, ast.Lambda):
                held = self.const(module, value.body, {p.name: OPAQUE for p in function_params(value.args)})
                paths.extend([held] if isinstance(held, str) and ("." in held or ":" in held) else [])
                continue
            # a callable object (`activate = _Activator("pkg.mod.Class")`): what its __call__
            # returns; a bound method of one (`activate = _plugin.activate`): what that method
            # returns; self the object its __init__ made
            made, method = ((self.const(module, value, {}), "__call__") if isinstance(value, ast.Call)
                            else (self.const(module, value.value, {}), value.attr) if isinstance(value, ast.Attribute) else (None, None))
            if isinstance(made, Record) and (found := self._plugin_definition(made.cls)) is not None:
                for call in (n for n in found[1].body if isinstance(n, ast.FunctionDef) and n.name == method and n.args.args):
                    paths.extend(self._returned_strings(found[0], call, {call.args.args[0].arg: made}))
                continue
            bound: list[ast.expr] = []
            keywords: list[ast.keyword] = []
            if isinstance(value, ast.Call) and value.args and self.qualify(module, dotted(value.func), {}) == "functools.partial":
                value, bound, keywords = value.args[0], value.args[1:], value.keywords
            target = self.qualify(module, dotted(value), {}) if isinstance(value, (ast.Name, ast.Attribute)) else None
            owner_module, _, name = (target or "").rpartition(".")
            found = self._plugin_function(target) if target else None
            if found is not None and not bound and not keywords:
                paths.extend(self.returned_class_paths(owner_module, name, depth + 1))
            elif found is not None and not any(isinstance(a, ast.Starred) for a in bound):
                fmodule, fnode = found
                env = {p.name: OPAQUE for p in function_params(fnode.args)}
                env.update({p.name: self.const(module, a, {}) for p, a in zip(function_params(fnode.args), bound)})
                env.update({k.arg: self.const(module, k.value, {}) for k in keywords if k.arg})
                paths.extend(self._returned_strings(fmodule, fnode, env))
        return paths

    def loaded_class_path(self, path: str) -> str:
        """The plugin class definition an `activate()` path names ("pkg.mod:Name" or
        "pkg.mod.Name"), through what the module binds that name to (`Name = NameV2`, `from .gen2
        import NameV2 as Name`, an annotated alias) or its `__getattr__` answers for it (PEP 562):
        pkgutil.resolve_name imports the module and reads the attribute, so the class the name
        holds is the platform the engine makes. The
        path unchanged where the name is a class statement or holds nothing the scan can name."""
        dotted_path = path.replace(":", ".")
        module = self.module_of(path)
        if dotted_path in self.scan.classes or module is None or module == dotted_path:
            return path
        head, _, tail = dotted_path[len(module) + 1:].partition(".")
        table = self.table(module)
        if head not in table.names and table.has_getattr:
            # PEP 562: the attribute read of a name the module does not bind calls its __getattr__
            # (`MODULE_ATTRS[name]` imported lazily, as vllm/__init__.py exports its names)
            asked = ast.Call(func=ast.Name("__getattr__", ast.Load()), args=[ast.Constant(head)], keywords=[], lineno=1, col_offset=0)
            held = self.const(module, ast.fix_missing_locations(asked), {})
        else:
            held = self.const(module, ast.Name(head, ast.Load()), {})
        if isinstance(held, Named) and held.path != f"{module}.{head}":
            resolved = f"{held.path}.{tail}" if tail else held.path
            if resolved in self.scan.classes:
                return resolved
        return path

    def returned_class_conditions(self, module: str, function: str) -> dict[str, tuple[GuardCond, ...]]:
        """For an entry point's module-level def (`activate`): each path it returns -> the guards
        of the branches returning it, () where one returns it whatever the tests. A class returned
        only under a test of upstream (`if hasattr(SRTPlatform, "capabilities"): return "…modern…"`,
        a `match` case, `a if t else b`) is loaded only where that holds: pkgutil.resolve_name
        imports the one path activate() gives (sglang/srt/platforms/__init__.py)."""
        tree = self.tree(module)
        defined = [n for n in module_level(tree.body) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == function] if tree else []
        if len(defined) != 1:
            return {}
        found: dict[str, list[tuple[GuardCond, ...]]] = {}
        # the function the name is bound to: a plugin decorator's closure where one wraps the def
        module, entry, bound = self._decorated_entry(module, defined[0])

        def returned(value: ast.expr, guards: tuple[GuardCond, ...], env: dict) -> None:
            if isinstance(value, ast.IfExp):
                returned(value.body, guards + (self._guard(module, value.test, env),), env)
                returned(value.orelse, guards + (self._guard(module, value.test, env, negate=True),), env)
                return
            rows = self._first_match(module, value)
            if rows is not None:  # `next(p for test, p in TABLE if test())`: each row's under its test, the earlier ones failing
                failed: tuple[GuardCond, ...] = ()
                for test, chosen in rows:
                    returned(chosen, guards + failed + ((self._guard(module, test, env),) if test is not None else ()), env)
                    if test is None:
                        break
                    failed += (self._guard(module, test, env, negate=True),)
                return
            for path in self.strings(module, value, env):
                if "." in path or ":" in path:
                    found.setdefault(path, []).append(guards)

        def visit(body: list[ast.stmt], guards: tuple[GuardCond, ...], env: dict) -> None:
            for stmt in body:
                if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                    env[stmt.targets[0].id] = self.const(module, stmt.value, env)
                elif isinstance(stmt, ast.Return) and stmt.value is not None:
                    returned(stmt.value, guards, env)
                elif isinstance(stmt, ast.If):
                    visit(stmt.body, guards + (self._guard(module, stmt.test, env),), dict(env))
                    otherwise = guards + (self._guard(module, stmt.test, env, negate=True),)
                    visit(stmt.orelse, otherwise, dict(env))
                    if stmt.body and isinstance(stmt.body[-1], (ast.Return, ast.Raise)):
                        guards = otherwise  # `if t: return A` then `return B`: B only where t fails
                elif isinstance(stmt, ast.Match):
                    for case, test in zip(stmt.cases, case_tests(stmt)):
                        visit(case.body, guards + ((self._guard(module, test, env),) if test is not None else ()), dict(env))
                elif not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    for field in ("body", "orelse", "finalbody"):
                        visit(getattr(stmt, field, []) or [], guards, env)
                    for handler in getattr(stmt, "handlers", []):
                        visit(handler.body, guards, env)

        visit(entry.body, (), bound)
        conditions = {}
        for path, alternatives in found.items():
            if any(not guards for guards in alternatives):
                conditions[path] = ()
            elif len(alternatives) == 1:
                conditions[path] = alternatives[0]
            else:
                conds = tuple(AllOf(tuple(g.cond for g in guards)) for guards in alternatives)
                text = " or ".join(" and ".join(g.text for g in guards) for guards in alternatives)
                conditions[path] = (GuardCond(AnyOf(conds), text, alternatives[0][0].line),)
        return conditions

    def _decorated_entry(self, module: str, function: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[str, ast.FunctionDef | ast.AsyncFunctionDef, dict]:
        """What an entry point's def is bound to, as (its module, the function that runs, the
        names bound for it): under a plugin decorator (`@platform_entry("pkg.X")`, a factory returning a
        decorator, or `@deco` itself) whose returned function is a nested closure, that closure,
        the factory's parameters bound to what the decorator line passes and the decorator's
        own to the def (Python binds the name to what the decorator returns); the def itself
        otherwise (a decorator returning the def unchanged, lru_cache, a decorator not the plugin's)."""
        if len(function.decorator_list) != 1:
            return module, function, {}
        decorator = function.decorator_list[0]
        factory = decorator.func if isinstance(decorator, ast.Call) else None
        found = self._plugin_function(self.qualify(module, dotted(factory if factory is not None else decorator) or "") or "")
        if found is None:
            return module, function, {}
        home, outer = found
        bound: dict = {}
        if factory is not None:
            if any(isinstance(a, ast.Starred) for a in decorator.args) or any(k.arg is None for k in decorator.keywords):
                return module, function, {}
            bound = self._called_with(home, outer, [self.const(module, a, {}) for a in decorator.args], decorator.keywords, module, {}, 0)
            outer = returned_function(outer)
        closure = returned_function(outer) if outer is not None else None
        params = function_params(outer.args) if outer is not None else ()
        if closure is None or not params:
            return module, function, {}
        bound[params[0].name] = Named(f"{module}.{function.name}")
        return home, closure, bound

    def _first_match(self, module: str, value: ast.expr) -> list[tuple[ast.expr | None, ast.expr]] | None:
        """`next(elt for target in TABLE if test[, default])` over a literal table of tuples written at module
        level in `module` (`_CANDIDATES = ((pred, "pkg.a:A"), (lambda: True, "pkg.b.B"))`): per
        row in order, (its test with the row's items in place of the target's names, a call of a
        lambda or of a module function whose body is one `return` read as what it returns; None
        for a test that is always true), (the element so written). None for anything else."""
        if not (isinstance(value, ast.Call) and dotted(value.func) == "next" and value.args and isinstance(value.args[0], ast.GeneratorExp)
                and len(value.args[0].generators) == 1):
            return None
        generator = value.args[0].generators[0]
        names = [t.id for t in (generator.target.elts if isinstance(generator.target, ast.Tuple) else [generator.target]) if isinstance(t, ast.Name)]
        tree = self.tree(module)
        table = [stmt.value for stmt in tree.body if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
                 and isinstance(stmt.targets[0], ast.Name) and stmt.targets[0].id == dotted(generator.iter)] if tree else []
        if len(table) != 1 or not isinstance(table[0], (ast.Tuple, ast.List)) or generator.is_async or len(generator.ifs) > 1:
            return None
        defs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}

        def inline(node: ast.expr) -> ast.expr:
            # `(lambda: E)()` -> E; `f()` of a module function `def f(): return E` -> E
            if isinstance(node, ast.Call) and not node.args and not node.keywords:
                if isinstance(node.func, ast.Lambda) and not node.func.args.args:
                    return node.func.body
                body = [s for s in defs[node.func.id].body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))] if (
                    isinstance(node.func, ast.Name) and node.func.id in defs and not function_params(defs[node.func.id].args)) else []
                if len(body) == 1 and isinstance(body[0], ast.Return) and body[0].value is not None:
                    return body[0].value
            return node

        rows = []
        for row in table[0].elts:
            items = row.elts if isinstance(row, ast.Tuple) and isinstance(generator.target, ast.Tuple) else [row]
            if len(items) != len(names):
                return None
            given = dict(zip(names, items))
            place = lambda node: given.get(node.id) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) else None  # noqa: E731
            test = inline(_placed(generator.ifs[0], place)) if generator.ifs else ast.Constant(True)
            rows.append((None if isinstance(test, ast.Constant) and test.value is True else ast.copy_location(test, value),
                         _placed(value.args[0].elt, place)))
        if len(value.args) == 2:  # next(gen, default): the default where no row's test holds
            rows.append((None, value.args[1]))
        return rows

    def _returned_strings(self, module: str, node: ast.FunctionDef | ast.AsyncFunctionDef, env: dict) -> list[str]:
        """The dotted or colon paths a function's `return`s fold to, its assignments followed in
        order (`env`: its parameters' values, if bound), bar those in the branch of an `if` the
        release decides against."""
        paths, env = [], dict(env)
        # (the branches of an `if` this release decides that it does not take return nothing here)
        skipped = {id(n) for stmt in walk(node) if isinstance(stmt, ast.If) and (taken := self._on_this_release(module, stmt.test, env, 0)) is not None
                   for n in walk(ast.Module(body=stmt.orelse if taken else stmt.body, type_ignores=[]))}
        for stmt in walk(node):
            if id(stmt) in skipped:
                continue
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                env[stmt.targets[0].id] = self.const(module, stmt.value, env)
            if isinstance(stmt, ast.Return) and stmt.value is not None:
                rows = self._first_match(module, stmt.value) or [(None, stmt.value)]
                for _, chosen in rows:
                    # the one value it folds to on this release (`TABLE["legacy" if hasattr(SRTPlatform, "x") else
                    # "current"]`), else every string it may be
                    folded = self.const(module, chosen, env)
                    paths += [value for value in ([folded] if isinstance(folded, str) else self.strings(module, chosen, env)) if "." in value or ":" in value]
                if isinstance(stmt.value, ast.Name):
                    # `return _ACTIVATED` of a name the function assigns in a branch (a module global
                    # it keeps the answer in, `global _ACTIVATED`): each value assigned to it there
                    paths += [value for assign in walk(node) if id(assign) not in skipped and isinstance(assign, ast.Assign)
                              and any(isinstance(t, ast.Name) and t.id == stmt.value.id for t in assign.targets)
                              and isinstance(value := self.const(module, assign.value, env), str) and ("." in value or ":" in value)]
        return list(dict.fromkeys(paths))

    def _derives_from_platform(self, path: str) -> bool:
        for base in self.upstream_bases(path):
            ref = self.upstream_ref(base)
            bases = profile().platform_bases
            if base in bases or (ref is not None and ref.kind == "class" and any(cls.path in bases for cls in self.index.mro(ref))):
                return True
        return False

    def _upstream_has(self, base: str, name: str) -> bool:
        """Whether the upstream class `base` or a class of its MRO defines `name` or may assign it
        on instances (an upstream method could change a flag the plugin keeps under that name)."""
        found = self.index.resolve(base)
        if not found.ok or found.ref.kind != "class":
            return True
        for cls in self.index.mro(found.ref):
            if cls.kind == "class" and cls.module:
                info = self.index.class_info(cls)
                try:
                    assigned = self.index.instance_attributes(cls)
                except (ValueError, SyntaxError):
                    return True
                if (info is not None and name in info.members) or name in assigned.names or assigned.dynamic:
                    return True
        return False

    def _plugin_bases(self, path: str) -> set[str]:
        """The plugin classes `path` derives from, directly or not."""
        found, queue = set(), list(self.scan.classes[path].bases) if path in self.scan.classes else []
        while queue:
            base = queue.pop()
            if base in self.scan.classes and base not in found:
                found.add(base)
                queue.extend(self.scan.classes[base].bases)
        return found

    def _plugin_subclasses(self, path: str) -> set[str]:
        """`path` and the plugin classes that derive from it, directly or not."""
        found, grew = {path}, True
        while grew:
            more = {other for other, cls in self.scan.classes.items() if found & set(cls.bases)} - found
            found, grew = found | more, bool(more)
        return found

    def upstream_bases(self, path: str, seen: frozenset = frozenset()) -> list[str]:
        """Upstream classes `path` derives from, directly or through plugin classes."""
        cls = self.scan.classes.get(path)
        if cls is None or path in seen:
            return []
        found = []
        for base in cls.bases:
            if base in self.scan.classes:
                found.extend(self.upstream_bases(base, seen | {path}))
            elif is_upstream(base):
                found.append(base)
        return found


def _site_of(binding: dict) -> tuple | None:
    """The construction site of the Record an instance binding gives self (None where unknown)."""
    return next((value.site for value in binding.values() if isinstance(value, Record)), None)


def _spread(args: list[ast.expr], wanted: int) -> list[ast.expr]:
    """A call's positional arguments with a last `*row` as `row[0]`, `row[1]`, … up to `wanted`
    arguments (`starmap(f, rows)` is `f(*row)` for each row: itertools docs), each folded where
    row is; any other starred argument stays (its elements are not known)."""
    if not args or not isinstance(args[-1], ast.Starred) or any(isinstance(a, ast.Starred) for a in args[:-1]):
        return args
    row = args[-1].value
    return [*args[:-1], *(ast.copy_location(ast.Subscript(value=row, slice=ast.Constant(j), ctx=ast.Load()), row) for j in range(wanted - len(args) + 1))]


def _own_class_made(call: ast.Call, ctx: Context) -> str | None:
    """The plugin class a method makes an instance of by its receiver: `cls(…)` in a
    classmethod, `type(self)(…)` / `self.__class__(…)` in a plain method; None otherwise (a
    subclass's call makes the subclass: judged as the method's class, whose fields it has)."""
    if ctx.cls is None or not ctx.self_name or ctx.method is None or ctx.in_class_body:
        return None
    kinds = {d.rsplit(".", 1)[-1] for d in ctx.method.decorators}
    func = call.func
    if isinstance(func, ast.Name) and func.id == ctx.self_name and "classmethod" in kinds:
        return ctx.cls.path
    receiver = (func.args[0] if isinstance(func, ast.Call) and dotted(func.func) == "type" and len(func.args) == 1
                else func.value if isinstance(func, ast.Attribute) and func.attr == "__class__" else None)
    plain = not kinds & {"classmethod", "staticmethod"}
    return ctx.cls.path if plain and isinstance(receiver, ast.Name) and receiver.id == ctx.self_name else None
