"""What a helper of the judge may ask of it: `JudgeContext`, the interface the helpers of
`harness.knowledge.judge` (members, conditions, fields, forms) take instead of the `Judge`
class, as pyright's checker helpers take its `TypeEvaluator` interface and never the
implementation. `Judge` (judge/core.py) is the one implementation; helpers never import it,
so the judge package imports one way: helpers below, the core above them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from harness.knowledge.model import (
    Catch,
    Cond,
    Dependency,
    Finding,
    GuardCond,
    Param,
    PluginClass,
    PluginScan,
    Ref,
    Resolution,
)
from harness.knowledge.upstream import SymbolIndex


@dataclass
class JudgeMemo:
    """What the helpers work out once per judge (one upstream, one plugin scan) and keep."""

    # members.plugin_replacements: upstream name -> the plugin's patches rebinding it to its own
    replacements: dict[Ref, list[Dependency]] | None = None
    # members.platform_products: platform method -> the plugin classes it returns
    products: dict[str, set[str]] | None = None

    # conditions.fails_before: dependencies inside one `try` body, by (module, handler)
    in_try: dict[tuple[str, Catch], list[Dependency]] | None = None
    # conditions: a dependency's finding before conditions apply, by id(dep)
    raw_findings: dict[int, Finding | None] = field(default_factory=dict)
    # members.hands_itself_over: upstream class path -> how it hands its instance over, if it does
    handed: dict[str, str | None] = field(default_factory=dict)
    # members.grafted_onto: plugin methods patched onto upstream classes, by class path
    grafts: dict[str, list[Dependency]] | None = None
    # conditions.stale_branch: plugin module -> the guard false on this upstream it sits under
    stale: dict[str, GuardCond | None] | None = None
    # members.plugin_subclass_defining: plugin classes by base
    subclasses: dict[str, list[PluginClass]] | None = None
    # members.displacing_slot: per upstream method, the settings slot whose classes replace it
    displaced: dict[tuple[Ref, str], str | None] = field(default_factory=dict)
    # members._taken_out: per upstream class, the plugin classes deriving from it
    derived: dict[Ref, list[str]] = field(default_factory=dict)
    # platform_tests.predicate: `current_platform.<m>()` on the plugin's platform class, if decided
    platform_predicates: dict[str, bool | None] = field(default_factory=dict)
    off_platform_modules: dict[str, str | None] = field(default_factory=dict)  # upstream module -> why it is never imported (platform_tests)
    # platform_tests: package -> the registry architectures naming it; (package, class) -> named outside it; the release's text index
    registry_keys: dict[str, set[str] | None] = field(default_factory=dict)
    named_outside: dict[tuple[str, str], bool] = field(default_factory=dict)
    release_texts: Any = None


class JudgeContext(Protocol):
    """The judge as its helpers see it: one upstream index, the plugin's scan, the baseline
    judge (the release the plugin declares) and the finding builders every check shares."""

    index: SymbolIndex
    scan: PluginScan
    baseline: JudgeContext | None
    on_baseline: bool  # the index is the baseline release itself
    before: SymbolIndex | None  # the release a patch target is compared with (Judge.__init__)
    version: str | None  # the judged upstream's version, for version guards
    field_writes: dict[str, Dependency] | None  # fields.py: the fields the plugin sets itself
    memo: JudgeMemo

    def judge(self, dep: Dependency) -> Finding | None:
        """The finding for `dep` before its conditions apply (None: not a dependency here)."""

    def base(self, dep: Dependency, target: str | None = None) -> dict[str, Any]:
        """The Finding fields every finding on `dep` shares (kind, target, place, liveness)."""

    def successor_for(self, finding: Finding, target: str, old: SymbolIndex | None = None) -> Finding:
        """`finding`, with the successor of `target` to be searched for (Judge.fill_successors)."""

    def missing_finding(self, dep: Dependency, note: str | None, target: str | None = None,
                        successor_of: str | None = None) -> Finding:
        """A breaking `missing` finding on `dep` (its successor asked for)."""

    def init_params(self, ref: Ref) -> tuple[tuple[Param, ...] | None, bool, str]:
        """What calling the upstream class `ref` takes (Judge.init_params: the parameters, whether
        they are bound, and where they come from)."""

    def lookup(self, mro: list[Ref], name: str, instance: bool) -> Resolution:
        """`name` looked up along `mro` as Python would on the class (or an instance)."""

    def upstream_mro(self, plugin_class: str) -> list[Ref]:
        """The upstream classes (and outside bases) in the plugin class's C3 MRO, in order."""

    def plugin_mro(self, plugin_class: str) -> list[Ref]:
        """The plugin class's C3 MRO: its own classes first, then upstream ones."""

    def plugin_subclass_defining(self, plugin_class: str | None, member: str) -> PluginClass | None:
        """A plugin subclass of `plugin_class` that defines `member` itself, if any."""

    def evaluate(self, cond: Cond) -> bool | None:
        """A guard's condition on this upstream: True, False, or None when undecidable."""

    def named_in_release_code(self, name: str) -> bool:
        """Whether the release's code can call a method `name` (an attribute or a string)."""
