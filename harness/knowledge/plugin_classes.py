"""What the plugin scan decides once every module is read: hook timing (hooks registered only
after HookRegistry applied hooks), platform classes, entry points, the overrides and `self.` /
`super()` members of plugin classes over upstream classes (their C3 MRO decides), and the
upstream class of fields read on unannotated parameters."""

from __future__ import annotations

import ast
from dataclasses import replace
from pathlib import Path

from harness.knowledge.fields import parameter_class
from harness.knowledge.index import Ref, SymbolIndex, c3
from harness.knowledge.kinds import profile
from harness.knowledge.plugin_folding import on_param
from harness.knowledge.plugin_repo import (
    UNDECIDED,
    AllOf,
    AnyOf,
    Cond,
    Dependency,
    EntryPoint,
    FieldPresent,
    Not,
    ParamFieldPresent,
    PluginScan,
    is_upstream,
)
from harness.knowledge.symbol_records import walk


class PluginClasses:
    """The scanner's whole-plugin pass (a mixin: the scanner provides `tree`, `table`, `const`)."""

    files: dict[str, tuple[Path, bool]]
    index: SymbolIndex
    scan: PluginScan
    hook_callables: dict[str, str]
    calls: dict[str, set[str]]

    def finish(self) -> None:
        """Decisions that need the whole plugin: hook timing, platform classes, entry points."""
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
        for ep in self.scan.entry_points:
            self._entry_point_dependency(ep)
        self.resolve_named_classes()
        self._class_dependencies()
        self._parameter_fields()

    def _parameter_fields(self) -> None:
        """Fields read on an unannotated parameter of a hook or an override: the class is what
        the upstream function it stands in for annotates the same-named parameter with; with no
        such evidence the reads are no dependencies (and `hasattr` on them stays undecided)."""
        classes: dict[tuple[str, str], str | None] = {}

        def class_of(function: str, param: str) -> str | None:
            if (function, param) not in classes:
                classes[function, param] = self._parameter_class(function, param)
            return classes[function, param]

        def rewrite(cond: Cond) -> Cond:
            if isinstance(cond, ParamFieldPresent):
                found = class_of(cond.function, cond.param)
                return FieldPresent(found, cond.name) if found else UNDECIDED
            if isinstance(cond, Not):
                return Not(rewrite(cond.cond))
            if isinstance(cond, (AllOf, AnyOf)):
                return type(cond)(tuple(rewrite(c) for c in cond.conds))
            return cond

        kept = []
        for dep in self.scan.dependencies:
            if dep.kind == "field" and dep.target is None:
                found = class_of(dep.hook, dep.member)
                if found is None:
                    continue
                dep.target, dep.hook, dep.member = f"{found}.{dep.name}", None, None
            if any(on_param(g.cond) for g in dep.guards):
                dep.guards = tuple(replace(g, cond=rewrite(g.cond)) for g in dep.guards)
            kept.append(dep)
        self.scan.dependencies[:] = kept

    def _parameter_class(self, function: str, param: str) -> str | None:
        """The upstream class of parameter `param` of the plugin function `function`: annotated
        on the same-named parameter of the upstream function it hooks or overrides; else
        ServerArgs for `server_args`; else None."""
        upstream = []
        target = self.hook_callables.get(function)
        if target:
            found = self.index.resolve_hook_target(target)
            if found.ok and found.ref.kind == "function":
                upstream.append(found.ref)
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
        seen: set[tuple] = set()
        for context in contexts:
            kind = "override" if context in self.scan.platforms else "subclass"
            mro = self.plugin_mro(context)
            if any(classes[k].dynamic for k in mro):
                continue
            for position, path in enumerate(mro):
                cls = classes[path]
                for name, method in cls.methods.items():
                    shadowed = any(name in classes[k].methods for k in mro[:position])
                    dunder = name.startswith("__") and name.endswith("__") and name != "__init__"
                    private = name.startswith("_") if kind == "override" else dunder
                    if shadowed or private or (cls.file, method.line, name) in seen:
                        continue
                    seen.add((cls.file, method.line, name))
                    self.scan.dependencies.append(Dependency(
                        kind, None, cls.module, cls.file, method.line, scope="module", params=method.params, bound=method.bound,
                        plugin_class=context, member=name, access="override", name=path,
                    ))
                for ref in cls.self_refs:
                    after = mro[position + 1 :] if ref.access == "super" else mro
                    if any(ref.member in classes[k].methods or ref.member in classes[k].names for k in after):
                        continue
                    if (cls.file, ref.line, ref.member, ref.access) in seen:
                        continue
                    seen.add((cls.file, ref.line, ref.member, ref.access))
                    self.scan.dependencies.append(Dependency(
                        "subclass", None, cls.module, cls.file, ref.line, scope="function", call=ref.call,
                        plugin_class=context, member=ref.member, access=ref.access, name=path,
                        # no `enclosing`: a member read is judged wherever its method may run
                        # (a method nothing names still fails when called by name), not skipped
                        guards=ref.guards, catches=ref.catches,
                    ))

    def plugin_mro(self, path: str) -> list[str]:
        """The plugin classes in `path`'s MRO, in C3 order (their order does not depend on
        the upstream bases they share)."""
        classes = self.scan.classes

        def bases(ref: Ref) -> list[Ref]:
            cls = classes.get(ref.qualname)
            return [Ref("class", "", b) for b in cls.bases if b in classes] if cls else []

        return [ref.qualname for ref in c3(Ref("class", "", path), bases)]

    def returned_class_paths(self, module: str, function: str) -> list[str]:
        """What `activate()` returns: "pkg.mod:Class" or "pkg.mod.Class" (both load with
        pkgutil.resolve_name in sglang/srt/platforms/__init__.py)."""
        paths = []
        tree = self.tree(module)
        for node in walk(tree) if tree else []:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == function:
                env: dict = {}
                for stmt in walk(node):
                    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                        env[stmt.targets[0].id] = self.const(module, stmt.value, env)
                    if isinstance(stmt, ast.Return) and stmt.value is not None:
                        value = self.const(module, stmt.value, env)
                        if isinstance(value, str) and ("." in value or ":" in value):
                            paths.append(value)
        return paths

    def _derives_from_platform(self, path: str) -> bool:
        for base in self.upstream_bases(path):
            ref = self.upstream_ref(base)
            bases = profile().platform_bases
            if base in bases or (ref is not None and ref.kind == "class" and any(cls.path in bases for cls in self.index.mro(ref))):
                return True
        return False

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
