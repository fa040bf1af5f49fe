"""Parsing ahead: the upstream modules a plugin's dependencies will make the judge resolve, parsed
together (in parallel) before the judging that would parse them one by one."""

from __future__ import annotations

from harness.knowledge.model import PluginScan, is_upstream
from harness.knowledge.upstream import SymbolIndex


def prefetch(index: SymbolIndex, scan: PluginScan, rounds: int = 6) -> None:
    """Parse the upstream modules the plugin's targets name, in parallel when there are many
    (the judging that follows would parse them one by one); then, for up to `rounds` more
    rounds, the modules those names come from (`from x import y` re-exports, star imports,
    the modules of a named class's bases): resolution walks these chains, so parsing them
    together here is what keeps a cold check off a long serial parse."""
    needed: set[str] = set()
    pairs: set[tuple[str, str]] = set()  # (module, name) the judging looks up
    for dep in scan.dependencies:
        for text in (dep.target, dep.name, *_upstream_bases(scan, dep.plugin_class)):
            if is_upstream(text):
                parts = text.replace(":", ".").split(".")
                needed.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
                pairs.update((".".join(parts[:i]), parts[i]) for i in range(1, len(parts)))
    index.index_all(only=needed)
    for _ in range(rounds):
        pairs, more = _sources_of(index, pairs)
        if not more or not index.index_all(only=more):
            break


def _upstream_bases(scan: PluginScan, plugin_class: str | None, seen: frozenset[str] = frozenset()) -> list[str]:
    """The upstream bases of a plugin class, through its plugin bases."""
    cls = scan.classes.get(plugin_class) if plugin_class else None
    if cls is None or plugin_class in seen:
        return []
    found = []
    for base in cls.bases:
        found += _upstream_bases(scan, base, seen | {plugin_class}) if base in scan.classes else [base] if is_upstream(base) else []
    return found


def _sources_of(index: SymbolIndex, pairs: set[tuple[str, str]]) -> tuple[set[tuple[str, str]], set[str]]:
    """The next links of the names in `pairs` (only modules already parsed are read): the
    (module, name) pairs they are imported from or built on, and those modules."""
    follow: set[tuple[str, str]] = set()
    for module, name in pairs:
        table = index.table(module) if index.is_parsed(module) else None
        if table is None:
            continue
        binding = table.names.get(name)
        if binding is None:
            follow.update((star, name) for star in table.star_imports)
        elif binding.kind == "from":
            source, _, imported = binding.target.partition(":")
            follow.add((source, imported))
            follow.add((f"{source}.{imported}", ""))  # `from package import submodule`
        elif binding.kind == "module":
            follow.add((binding.target, ""))
        elif binding.kind == "class" and name in table.classes:
            info = table.classes[name]
            for base in info.bases:
                head = base.split(".")[0].split("(")[0]
                if head.isidentifier():
                    follow.add((module, head))
            if info.open_members:  # fields assembled from what the module imports (assembled_field)
                follow.update((module, imported) for imported, b in table.names.items() if b.kind == "from")
    follow = {(m, n) for m, n in follow if m and index.module_exists(m)}
    modules = {m for m, _ in follow if not index.is_parsed(m)}
    modules.update(".".join(m.split(".")[:i]) for m in list(modules) for i in range(1, m.count(".") + 1))
    return {(m, n) for m, n in follow if n}, modules
