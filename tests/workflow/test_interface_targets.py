"""interface.targets_resolve: a target that could not be evaluated statically is not a pass."""

from __future__ import annotations

from types import SimpleNamespace

from harness.knowledge.model.findings import Finding, Status
from harness.record.checks import CheckStatus
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


def _port_evidence(tmp_path, *ports: dict):
    import json

    from harness.steps.interface import PORT

    base = {"kind": "hook", "file": "p/hooks.py", "line": 3, "end_line": 9, "registered_at": "p/hooks.py:2", "hook_type": "REPLACE"}
    (tmp_path / PORT).write_text(json.dumps({"ports": [{**base, **p} for p in ports]}))
    return tmp_path


def test_stale_copies_fail_on_a_conflict_or_an_undefined_name_and_pass_when_merged_clean(tmp_path):
    from harness.steps.interface import stale_copies_check

    clean = {"target": "a.f", "status": "clean", "similarity": 0.95, "merged": "def f(): ...\n"}
    conflict = {"target": "a.g", "status": "conflict", "conflicts": 2, "similarity": 0.9}
    needs = {"target": "a.h", "status": "clean", "similarity": 0.9, "undefined_names": [{"name": "all_gather_single", "upstream_import": "from x import all_gather_single"}]}
    failed = stale_copies_check(_port_evidence(tmp_path, clean, conflict, needs), {}, has_from=True)
    assert failed.status is CheckStatus.failed and failed.evidence == ["port.json"]
    assert "a.g (2 conflicts)" in failed.reason and "a.h (needs all_gather_single)" in failed.reason and "a.f" not in failed.reason
    passed = stale_copies_check(_port_evidence(tmp_path, clean, {"target": "a.u", "status": "unchanged", "similarity": 1.0}), {}, has_from=True)
    assert passed.status is CheckStatus.passed and passed.metrics == {"clean": 1, "conflict": 0, "unchanged": 1}
    gone = stale_copies_check(_port_evidence(tmp_path, clean, {"target": "a.r", "status": "missing", "similarity": 0.9, "copy_of": "sglang==0.5.17"}), {}, has_from=True)
    assert gone.status is CheckStatus.failed and "a.r (upstream removed it)" in gone.reason
    only_own_code = stale_copies_check(_port_evidence(tmp_path, {"target": "a.n", "status": "not_a_copy", "similarity": 0.2}), {}, has_from=True)
    assert only_own_code.status is CheckStatus.not_run and "no copy" in only_own_code.reason
    assert stale_copies_check(tmp_path, {}, has_from=False).status is CheckStatus.not_run
    assert "does not parse" in stale_copies_check(tmp_path, {"port_error": "HarnessError: x.py:1: does not parse"}, has_from=True).reason
