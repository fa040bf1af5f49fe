"""The finding: one plugin dependency on upstream, and what a given upstream says about it.

Every command (`map`, `diff`, `check`) and every workflow step speaks in findings, so the
CLI's `--json`, the reports and the gates read one shape.

`status` says what the upstream does to the target; `breaking` says whether the plugin, as
SGLang loads it, fails on that upstream (what `check` exits 1 on). They differ on purpose: a
`missing` import inside `try/except ImportError` is not breaking, nor is a registration whose
`hasattr` guard is false on that version, nor anything in a dead module.
"""

from __future__ import annotations

from enum import Enum
from typing import Literal

from pydantic import BaseModel, Field, model_validator

from harness.engines import Kind


class Status(str, Enum):
    ok = "ok"
    signature_changed = "signature_changed"  # changed between versions, or the plugin's callable no longer fits
    body_changed = "body_changed"  # a REPLACE hook's copy of the upstream body is stale
    inherited = "inherited"  # no longer defined on that class; resolves through a base
    moved = "moved"  # now defined in another module, still reachable at the old path
    deprecated = "deprecated"  # gone from the base, still called through an upstream compatibility shim
    missing = "missing"  # certain not to resolve at run time (ImportError / AttributeError)
    not_on_base = "not_on_base"  # an override of a method the upstream bases no longer define (upstream used to call it)
    # an override of a method already absent on the baseline (the release the plugin declares, --baseline
    # or --from): nothing this upgrade loses; dead code to remove or port (harness.knowledge.judge.breaking)
    dead_override = "dead_override"
    extension = "extension"  # a name of the plugin's own on an upstream object: a platform method no base declares, a name a patch adds
    never_applied = "never_applied"  # a hook registered after SGLang applied hooks
    # registered again under a key the engine's registry asserts is new (vLLM register_oot):
    # AssertionError when the second registration runs
    duplicate = "duplicate"
    unknown = "unknown"  # could not be decided statically; the detail says why


# Statuses that break a live, unguarded dependency outright (signature_changed breaks only
# when every call must fail; the judge sets `breaking` per finding).
BREAKING = {Status.missing, Status.not_on_base, Status.never_applied, Status.duplicate}

# sglang.srt.plugins.hook_registry.HookType: how a hook wraps its target (_wrap_fn)
HookType = Literal["BEFORE", "AFTER", "AROUND", "REPLACE"]

# runs: nothing stops it; runtime: it runs when a run-time data condition holds (a parameter, a local,
# a dtype, `is not None`): it fails for those inputs; skipped: a condition false on this upstream;
# caught: its failure is handled; undecided: a condition on the upstream or the machine not decidable
GuardOutcome = Literal["runs", "runtime", "skipped", "caught", "undecided"]

# the rows of the one breaking table, in order (judge/breaking.py ROWS; docs/static-check.md)
RowName = Literal["dead_module", "not_taken", "handled", "uncalled", "fits", "falls_back", "not_certain",
                  "undecided_guard", "runtime_condition", "runs"]


class Guard(BaseModel):
    """The condition a dependency sits under, evaluated against the judged upstream."""

    condition: str  # as written, e.g. "hasattr(SRTPlatform, 'get_kv_pool_cls')"
    line: int
    outcome: GuardOutcome


class Finding(BaseModel):
    kind: Kind
    target: str  # dotted upstream path the plugin depends on
    status: Status
    breaking: bool = False  # fails the plugin on this upstream (live, unguarded, certain)
    live: bool = True  # imported, transitively, when SGLang loads the plugin
    file: str | None = None  # plugin file, relative to the plugin root
    line: int | None = None
    # a HookType; a name the plugin passes that is none of them stays as written, upper-cased
    hook_type: HookType | str | None = None
    successor: str | None = None  # likely replacement for missing / not_on_base / deprecated
    successor_reason: str | None = None  # why that successor was chosen
    defined_in: str | None = None  # where the target is defined now (module or Class)
    detail: str | None = None
    guard: Guard | None = None
    risk: int = 0  # higher = look first
    commits: list[str] = Field(default_factory=list)  # "sha subject", git sources only
    # `diff`/`features`/`upgrade` only: already broken on --from, so not an impact of the upgrade
    preexisting: bool = False
    # where the plugin site runs (at import, inside `runs_in`, only after hooks were applied) and the
    # plugin callable that runs it (a hook's, patch's or override's own callable): when it fails (triage)
    scope: Literal["module", "function", "runtime"] | None = None
    runs_in: str | None = None
    decided_by: RowName | None = None  # the breaking table's row that decided `breaking` (None: its producer did)

    @model_validator(mode="after")
    def _breaking_by_default(self) -> "Finding":
        """Unless a producer decides otherwise, a live unguarded missing / not_on_base /
        never_applied dependency breaks the plugin (the judge also sets it for certain
        signature mismatches)."""
        if "breaking" not in self.model_fields_set:
            self.breaking = self.live and self.status in BREAKING and (self.guard is None or self.guard.outcome in ("runs", "runtime"))
        return self

    @property
    def key(self) -> str:
        """Stable identity across regenerations: curated notes attach to it."""
        return f"{self.kind}:{self.hook_type or ''}:{self.target}"

    @property
    def unverified(self) -> bool:
        """Live, not breaking, and not decided: what `check` exits 3 on."""
        if not self.live or self.breaking:
            return False
        if self.decided_by == "undecided_guard" or self.guard is not None and self.guard.outcome == "undecided" and self.status in BREAKING:
            return True  # it fails where it runs; whether it runs is not decided here
        return self.status is Status.unknown and (self.guard is None or self.guard.outcome in ("runs", "runtime"))
