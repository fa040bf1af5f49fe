"""What a lookup in an upstream tree answers: a `Ref` to what a dotted target is, and a
`Resolution` with one of three outcomes (their meaning: harness.knowledge.upstream.index's module doc)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import NamedTuple


class Outcome(str, Enum):
    resolved = "resolved"
    missing = "missing"  # certain to fail at run time
    undecided = "undecided"  # cannot be decided from the source


class Ref(NamedTuple):
    # module | class | function | value | external (outside the upstream source) |
    # dynamic (a base the index cannot determine: `qualname` holds its expression)
    kind: str
    module: str  # where it is defined ("" for external names)
    qualname: str  # "" for a module; "Class.method" for a method

    @property
    def path(self) -> str:
        return f"{self.module}.{self.qualname}" if self.module and self.qualname else (self.module or self.qualname)


@dataclass(frozen=True)
class Resolution:
    """What a target is at run time; `outcome` as the module doc defines it."""

    target: str
    ref: Ref | None  # what the target is; None unless resolved
    owner: str | None = None  # for class members: the class (dotted) that defines it
    note: str | None = None  # why it is missing / undecided, or what a resolved answer rests on
    outcome: Outcome | None = None  # None: resolved when `ref` is given, else missing
    provenance: str | None = None  # who listed the outside members consulted

    def __post_init__(self):
        if self.outcome is None:
            object.__setattr__(self, "outcome", Outcome.resolved if self.ref is not None else Outcome.missing)

    @property
    def ok(self) -> bool:
        return self.outcome is Outcome.resolved
