"""Which finding to look at first: a score from its status, the hook type and liveness."""

from __future__ import annotations

from harness.knowledge.model.findings import Status
from harness.knowledge.model.plugin import Dependency


def risk_of(dep: Dependency, status: Status) -> int:
    """Higher = look first. A dead module's findings cannot break anything at run time."""
    score = {
        Status.missing: 90,
        Status.never_applied: 88,
        Status.duplicate: 88,
        Status.not_on_base: 85,
        Status.dead_override: 10,
        Status.extension: 5,
        Status.signature_changed: 60,
        Status.body_changed: 40,
        Status.deprecated: 35,
        Status.moved: 20,
        Status.inherited: 15,
        Status.unknown: 30,
        Status.ok: 0,
    }[status]
    if dep.hook_type == "REPLACE" and status in (Status.body_changed, Status.signature_changed):
        score += 30  # the plugin carries a copy of the upstream body: it is now stale
    if dep.passthrough and dep.hook_type != "REPLACE" and status == Status.signature_changed:
        score -= 40  # (*args, **kwargs) forwarding to the original survives a signature change
    if not dep.live:
        score //= 4
    return max(score, 0)
