"""The plugin's roots (what the engine's loader imports first) and liveness: which plugin modules are
imported, transitively, when the engine loads the plugin, and by which loader."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from harness.engines import profile
from harness.errors import HarnessError
from harness.knowledge.model import (
    AllOf,
    AnyOf,
    GuardCond,
    ModuleTable,
    PluginScan,
    Root,
    run_entries,
)


class ScannedModules(Protocol):
    """What liveness reads of the scanner (scan/scanner.py's Scanner, which calls it): the
    plugin's module files and what each imports, under which guards."""

    files: dict[str, tuple[Path, bool]]  # module -> (file, is a package)
    import_guards: dict[str, dict[str, list[tuple[GuardCond, ...]]]]  # module -> imported -> guards
    main_modules: set[str]  # modules run as `__main__` (their `if __name__ == "__main__":` imports count)

    def table(self, module: str) -> ModuleTable: ...
    def module_of(self, path: str) -> str | None: ...
    def imports_of(self, module: str) -> list[str]: ...
    def imports_upstream(self, module: str) -> bool: ...
    def load_time_imports(self, module: str, entry_callables: set[str]) -> list[str]: ...
    def returned_class_paths(self, module: str, function: str) -> list[str]: ...
    def returned_class_conditions(self, module: str, function: str) -> dict[str, tuple[GuardCond, ...]]: ...
    def loaded_class_path(self, path: str) -> str: ...
    def named_class_roots(self, platform_classes: list[str]) -> list[tuple[str, str, str, tuple[GuardCond, ...]]]: ...


def plugin_roots(scan: PluginScan, scanner: ScannedModules, entries: list[str]) -> list[Root]:
    roots: list[Root] = []
    engine = profile()
    for ep in scan.entry_points:
        module, _, attr = ep.value.partition(":")
        loader = engine.entry_points.get(ep.group, "plugins")
        roots.append(Root(module, f"entry point {ep.group}:{ep.name}", loader))
        if loader == "platform" and module in scanner.files:
            # a class returned only under a test of upstream is imported only where it holds
            conditions = scanner.returned_class_conditions(module, attr.strip())
            for returned in scanner.returned_class_paths(module, attr.strip()):
                path = scanner.loaded_class_path(returned)  # the class an alias the path names holds
                scan.platform_class_paths.append(path)
                class_module = scanner.module_of(path)
                if class_module:
                    roots.append(Root(class_module, f"platform class {path} returned by {ep.value}", "platform_class", conditions.get(returned, ())))
    if roots:  # classes the plugin names by qualified name are imported when upstream needs them
        platform_classes = [path.replace(":", ".") for path in scan.platform_class_paths]
        roots += [Root(*named) for named in scanner.named_class_roots(platform_classes)]
    for module in entries:
        if module not in scanner.files:
            raise HarnessError(f"--entry {module}: no such module in {scan.root}")
        if scanner.files[module][1]:  # a package: the engine imports each of its modules (import_model_classes)
            roots += [Root(module, "--entry (a package)", "model_package"), Root(f"{module}.*", f"a module of --entry {module}", "model_package")]
        else:
            roots.append(Root(module, "--entry", "entry"))
    if not roots:
        importing = [name for name in scanner.files if scanner.imports_upstream(name)]
        roots = [Root(name, f"imports {engine.package} (no entry points)", "entry") for name in importing]
        # a package whose modules define EntryClass is an external model package: SGLang imports
        # every module in it (sglang/srt/models/registry.py import_model_classes)
        for package in sorted({name.rpartition(".")[0] for name in importing if "EntryClass" in scanner.table(name).names}):
            roots.append(Root(f"{package}.*", f"a module of {package}, an external model package (its modules define EntryClass)", "model_package"))
    # what the team runs directly (a console script, `python -m` in its CI or docs) is live too
    rooted = {root.module for root in roots}
    for module, why, as_main in run_entries(scan.root):
        # `python -m pkg` runs pkg/__init__.py, then pkg/__main__.py (the runpy docs)
        main = f"{module}.__main__" if as_main and module in scanner.files and scanner.files[module][1] else None
        for run in (module, main):
            if run in scanner.files and run not in rooted:
                rooted.add(run)
                roots.append(Root(run, why if run == module else f"{why}: a package, so its __main__ module runs", "script"))
    return roots


def mark_live(scan: PluginScan, scanner: ScannedModules) -> None:
    """Live = imported when the engine loads the roots, by Python's rules: importing `a.b.c` runs
    `a`, `a.b` and `a.b.c` (namespace packages have nothing to run); `from a import b` imports
    the submodule `a.b` when there is one; `import_module` and auto-discovery load by name.
    The same walk over what runs while the plugin loads (module bodies and the entry callables)
    records which loader imports each module then."""
    # modules only a conditional root reaches run only under its conditions (see Root.guards)
    for root in scan.roots:
        if not root.guards:
            walk_imports(scan, [root.module], scanner.imports_of, lambda module: module.live, lambda module: setattr(module, "live", True))
    unconditional = {name for name, module in scan.modules.items() if module.live}
    only_when: dict[str, list[tuple[GuardCond, ...]]] = {}
    for root in scan.roots:
        if root.guards:
            for name in _reached(scan, scanner, root.module) - unconditional:
                scan.modules[name].live = True
                only_when.setdefault(name, []).append(root.guards)
                if root.loader == "platform_class":
                    scan.platform_conditional.add(name)
    entry_callables = {f"{m}.{a.split('.')[0]}" for ep in scan.entry_points for m, _, a in [ep.value.partition(":")]}
    for root in scan.roots:
        walk_imports(
            scan, [root.module], lambda name: scanner.load_time_imports(name, entry_callables),
            lambda module, loader=root.loader: loader in module.loaded_by, lambda module, loader=root.loader: module.loaded_by.add(loader),
        )
    for dep in scan.dependencies:
        module = scan.modules.get(dep.module)
        dep.live = module.live if module else True
        dep.loaded_by = frozenset(module.loaded_by) if module else frozenset()
        # a hook or patch whose callable is defined in a plugin module nothing imports is never
        # made: the function object exists only once its module ran (a decorator queue a dead
        # module would fill)
        home = _defining_module(scan, dep.hook) if dep.kind in ("hook", "patch") and dep.hook else None
        if home is not None and not scan.modules[home].live:
            dep.live = False
    scan.conditional = {module: _any_of(alternatives) for module, alternatives in only_when.items()}
    scan.imported_when = _imported_when(scan, scanner)


def _defining_module(scan: PluginScan, path: str) -> str | None:
    """The plugin module defining the dotted `path` (its longest prefix that is a module), or None."""
    parts = path.split(".")
    return next((name for n in range(len(parts) - 1, 0, -1) if (name := ".".join(parts[:n])) in scan.modules), None)


_MOST_PATHS = 8  # guarded ways into one module kept apart; past that it counts as imported unconditionally


def _imported_when(scan: PluginScan, scanner: ScannedModules) -> dict[str, GuardCond]:
    """The live modules that every chain of imports from the roots reaches only under guards
    (`if _V2_SUPPORTED: import m`, `if self.use_v2: from m import R` inside a method, `if
    TYPE_CHECKING:`): module -> the condition under which it is imported at all, any of the
    chains (each the conjunction of its statements' guards and its root's). A module some chain
    reaches unguarded, or by more than _MOST_PATHS guarded ones, is left out."""
    chains: dict[str, list[tuple[tuple[GuardCond, str], ...]]] = {}
    queue: list[tuple[str, tuple[tuple[GuardCond, str], ...]]] = []

    def reach(name: str, chain: tuple[tuple[GuardCond, str], ...]) -> None:
        if (members := submodules(name, scan.modules)) is not None:
            for module in members:
                reach(module, chain)
            return
        if name not in scan.modules:
            return
        known = chains.setdefault(name, [])
        if () in known or any(set(k) <= set(chain) for k in known):
            return  # as reachable already, under no more conditions
        known[:] = [k for k in known if not set(chain) <= set(k)] + [chain]
        if len(known) > _MOST_PATHS:
            known[:], chain = [()], ()
        queue.append((name, chain))

    for root in scan.roots:
        for name in with_parents(root.module):
            reach(name, tuple((g, "") for g in root.guards))
    while queue:
        name, chain = queue.pop()
        if chain not in chains[name]:
            continue  # superseded by a chain under fewer conditions
        guarded = scanner.import_guards.get(name, {})
        where = scan.modules[name].file
        for imported in dict.fromkeys(scanner.imports_of(name)):
            for guards in guarded.get(imported, [()]):
                longer = tuple(dict.fromkeys(chain + tuple((g, where) for g in guards)))
                for target in with_parents(imported):
                    reach(target, longer)
    found = {}
    for name, known in chains.items():
        if () in known or not known or not scan.modules[name].live:
            continue
        conds = [AllOf(tuple(g.cond for g, _ in chain)) for chain in known]
        # the import statements' own guards name the chain; its root's (a class named only in one
        # branch, already on the finding when it decides) only when the chain has no other
        texts = [" and ".join(f"{g.text} ({where}:{g.line})" for g, where in chain if where) or " and ".join(g.text for g, _ in chain) for chain in known]
        text = " or ".join(dict.fromkeys(texts))
        found[name] = GuardCond(conds[0] if len(conds) == 1 else AnyOf(tuple(conds)), f"imported only when {text}", known[0][0][0].line)
    return found


def _reached(scan: PluginScan, scanner: ScannedModules, start: str) -> set[str]:
    reached: set[str] = set()
    walk_imports(scan, [start], scanner.imports_of, lambda module: module.name in reached, lambda module: reached.add(module.name))
    return reached


def _any_of(alternatives: list[tuple[GuardCond, ...]]) -> GuardCond:
    """One guard from the conditional roots reaching a module (one GuardCond each): it runs
    when any of them holds."""
    guards = list(dict.fromkeys(g for alternative in alternatives for g in alternative))
    if len(guards) == 1:
        return guards[0]
    return GuardCond(AnyOf(tuple(g.cond for g in guards)), " or ".join(g.text for g in guards), guards[0].line)


def walk_imports(scan: PluginScan, start: list[str], imports_of, seen, mark) -> None:
    queue = [name for module in start for name in with_parents(module)]
    while queue:
        name = queue.pop()
        if (members := submodules(name, scan.modules)) is not None:
            queue.extend(members)
            continue
        module = scan.modules.get(name)
        if module is None or seen(module):
            continue
        mark(module)
        for imported in imports_of(name):
            queue.extend(with_parents(imported))


def submodules(pattern: str, modules) -> list[str] | None:
    """The modules a wildcard names: `pkg.*` every direct submodule of pkg (pkgutil.iter_modules
    over a package), `pkg.**` every module below it (walk_packages); None for a plain name."""
    if pattern.endswith(".**"):
        return [m for m in modules if m.startswith(pattern[:-2])]
    if pattern.endswith(".*"):
        return [m for m in modules if m.rpartition(".")[0] == pattern[:-2]]
    return None


def with_parents(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[: i + 1]) for i in range(len(parts))]
