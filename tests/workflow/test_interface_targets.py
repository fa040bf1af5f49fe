"""interface.targets_resolve: a target that could not be evaluated statically is not a pass."""

from __future__ import annotations

from types import SimpleNamespace

from harness.record.checks import CheckStatus
from harness.knowledge.findings import Finding, Status
from harness.steps.interface import targets_check

CTX = SimpleNamespace(upstream=SimpleNamespace(label="sglang 0.5.23"))


def _hook(target: str, status: Status, live: bool = True) -> Finding:
    return Finding(kind="hook", target=target, status=status, live=live)


def test_unknown_targets_make_the_check_inconclusive_and_are_named():
    check = targets_check([
        _hook("sglang.srt.managers.scheduler.Scheduler.process_batch", Status.ok),
        _hook("<f-string: {_SCHEDULER}.run_batch>", Status.unknown),
        _hook("sglang.dead.target", Status.unknown, live=False),  # dead hooks do not count
    ], CTX.upstream.label)
    assert check.status is CheckStatus.inconclusive
    assert "1 of 2 live targets" in check.reason
    assert "<f-string: {_SCHEDULER}.run_batch>" in check.reason
    assert "sglang.dead.target" not in check.reason
    assert check.metrics["unknown"] == 1


def test_missing_still_fails_and_all_known_still_passes():
    missing = targets_check([_hook("a.b", Status.missing), _hook("c.d", Status.unknown)], CTX.upstream.label)
    assert missing.status is CheckStatus.failed
    passed = targets_check([_hook("a.b", Status.ok), _hook("c.d", Status.moved)], CTX.upstream.label)
    assert passed.status is CheckStatus.passed
