"""The one definition of "breaking": whether a judged dependency fails the plugin on this upstream.

`check` exits 1 on it, the bot's triage ranks by it, the agent starts from it. Each producer in
the judge says only what the upstream does to the target (a status) and whether that failure is
certain where the code runs; this table then decides, from facts the judge gathers (liveness,
the guards evaluated on this upstream, handlers, reach), whether the plugin breaks. The rows are
tried in order and the first that matches decides; docs/static-check.md prints the same table
(tests/knowledge/test_breaking.py holds the two equal and has a test per row).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from harness.knowledge.model import BREAKING, GuardOutcome, RowName, Status

# what a status says of the target where the code runs
_FITS = {Status.ok, Status.inherited, Status.moved, Status.deprecated, Status.extension, Status.body_changed, Status.dead_override}


@dataclass(frozen=True)
class BreakingFacts:
    """What the judge knows of one dependency on one upstream.

    `certain`: the producer's word that the failure happens wherever the code runs (a missing
    name; a call that cannot bind); `guard`: the outcome of the guards, handlers and import
    conditions around it (conditions.apply_conditions); `uncalled`: the plugin method holding
    it when nothing can call that method; `falls_back`: the kind's failure is one the engine
    recovers from (KindSpec.falls_back: a lost architecture, an out-of-tree op)."""

    status: Status
    certain: bool
    live: bool = True
    guard: GuardOutcome = "runs"
    uncalled: str | None = None
    falls_back: bool = False


@dataclass(frozen=True)
class Row:
    name: RowName
    when: str  # the row as docs/static-check.md states it
    breaking: bool
    applies: Callable[[BreakingFacts], bool]


ROWS: tuple[Row, ...] = (
    Row("dead_module", "its module is not imported when the engine loads the plugin (dead)", False,
        lambda f: not f.live),
    Row("not_taken", "a condition decided false on this upstream guards it (a version or capability test, "
        "`TYPE_CHECKING`, a flag folded on this release), or its module is imported only under one", False,
        lambda f: f.guard == "skipped"),
    Row("handled", "an `except` of that error handles it, or an earlier statement of the same `try` fails first", False,
        lambda f: f.guard == "caught"),
    Row("uncalled", "it runs only in a plugin method nothing can call, or in a module's private function nothing names", False,
        lambda f: f.uncalled is not None),
    Row("fits", "the target resolves and fits (`ok`, `inherited`, `moved`, `deprecated`, `body_changed`, "
        "`extension`, `dead_override`)", False,
        lambda f: f.status in _FITS),
    Row("falls_back", "the engine recovers from that failure (a lost architecture, an out-of-tree op)", False,
        lambda f: f.falls_back and not f.certain),
    Row("not_certain", "the failure is not certain: `unknown`, or a signature change some upstream call still binds "
        "(unverified, exit 3, when `unknown`)", False,
        lambda f: not f.certain),
    Row("undecided_guard", "a condition on the upstream or the machine that cannot be decided statically guards it "
        "(unverified, exit 3)", False,
        lambda f: f.guard == "undecided"),
    Row("runtime_condition", "it fails when a run-time data condition holds (a parameter or local, a dtype, "
        "`is not None`, a config value read in the function, an environment variable): breaking, the condition named", True,
        lambda f: f.guard == "runtime"),
    Row("runs", "it fails wherever it runs: at import of a live module, on a startup path, or in a function "
        "the plugin or upstream calls", True,
        lambda f: True),
)


def decide(facts: BreakingFacts) -> Row:
    """The first row of ROWS that applies to `facts`: its `breaking` is the verdict, its `name`
    the reason (the last row always applies)."""
    return next(row for row in ROWS if row.applies(facts))


def certain_failure(status: Status, producer_breaking: bool, falls_back: bool, producer_decided: bool = False) -> bool:
    """Whether a producer's finding is a certain failure where its code runs. Where the producer
    decided (`producer_decided`: it set `breaking` itself: a `.get(key)` with a default copes, a
    signature every placed call binds), its word; otherwise missing, not_on_base and
    never_applied are, unless the kind falls back (a lost architecture, an out-of-tree op)."""
    if producer_decided:
        return producer_breaking
    return status in BREAKING and not falls_back
