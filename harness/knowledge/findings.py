"""The finding: one plugin dependency on upstream, and what a given upstream says about it.

Every command (`map`, `diff`, `check`) and every workflow step speaks in findings, so the
CLI's `--json`, the reports and the gates read one shape.
"""

from __future__ import annotations

from enum import Enum

from pydantic import BaseModel, Field


class Status(str, Enum):
    ok = "ok"
    signature_changed = "signature_changed"
    body_changed = "body_changed"  # a REPLACE hook's copy of the upstream body is stale
    inherited = "inherited"  # no longer defined on that class; resolves through a base
    moved = "moved"  # now defined in another module, still reachable at the old path
    missing = "missing"  # will not resolve: HookRegistry logs and skips it
    not_on_base = "not_on_base"  # a platform method the base class does not define
    unknown = "unknown"  # the target expression could not be evaluated statically


# What breaks a running plugin (the `check` verdict) vs what needs a human look.
BREAKING = {Status.missing, Status.not_on_base}


class Finding(BaseModel):
    kind: str  # hook | override | patch | attention_backend | kernel | entry_point
    target: str  # dotted upstream path the plugin depends on
    status: Status
    live: bool = True  # reachable by imports from the plugin's entry points
    file: str | None = None  # plugin file, relative to the plugin root
    line: int | None = None
    hook_type: str | None = None  # BEFORE | AFTER | AROUND | REPLACE
    successor: str | None = None  # likely replacement for missing / not_on_base
    defined_in: str | None = None  # where the target is defined now (module or Class)
    detail: str | None = None
    risk: int = 0  # higher = look first
    commits: list[str] = Field(default_factory=list)  # "sha subject", git sources only

    @property
    def key(self) -> str:
        """Stable identity across regenerations: curated notes attach to it."""
        return f"{self.kind}:{self.hook_type or ''}:{self.target}"
