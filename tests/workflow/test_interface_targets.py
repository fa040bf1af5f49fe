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


def _judge_interface(tmp_path, findings: list[Finding], feature_symbols: list[str], **facts):
    """InterfaceStep.judge_static on evidence holding `findings`, for a feature of `feature_symbols`."""
    import json

    from harness.knowledge.products import FeatureSpec
    from harness.record.models import RunInputs
    from harness.steps.base import FACTS
    from harness.steps.interface import STATIC, InterfaceStep

    (tmp_path / STATIC).write_text(json.dumps([f.model_dump(mode="json") for f in findings]))
    (tmp_path / FACTS).write_text(json.dumps({"upstream": "sglang==0.5.23", **facts}))
    inputs = RunInputs(run_id="r", feature=FeatureSpec(id="f", source="feature_file", name="f", symbols=feature_symbols),
                       plugin="/p", upstream="sglang==0.5.23", created_at="2026-12-04T00:00:00Z")
    return {c.name: c for c in InterfaceStep().judge_static(tmp_path, inputs)}


PLATFORM = "sglang.srt.platforms.interface.SRTPlatform"
CAPS = [Finding(kind="override", target=f"{PLATFORM}.support_cuda_graph", status=Status.not_on_base, file="p/platform.py"),
        Finding(kind="override", target=f"{PLATFORM}.supports_fp8", status=Status.not_on_base, file="p/platform.py")]
KV = [Finding(kind="override", target=f"{PLATFORM}.get_mha_kv_pool_cls", status=Status.deprecated, file="p/platform.py",
              successor=f"{PLATFORM}.get_kv_pool_cls"),
      Finding(kind="hook", target="sglang.srt.mem_cache.memory_pool.MHATokenToKVPool.set_kv_buffer", status=Status.missing,
              file="p/hooks.py")]


def test_a_feature_is_judged_on_its_own_dependencies_and_the_rest_is_counted(tmp_path):
    """Issue 35, item 5: one feature's interface step does not fail on another feature's
    findings; they are one count in the reason. The feature is matched by target, by the
    successor a finding points to, and by the upstream path a feature names."""
    kv = _judge_interface(tmp_path, CAPS + KV, [f"{PLATFORM}.get_kv_pool_cls"])  # matched through the successor
    overrides = kv["interface.override_signatures"]
    assert overrides.status is CheckStatus.passed and overrides.metrics["overrides"] == 1, overrides
    assert overrides.reason.endswith("— 2 other live overrides of the plugin lie outside this feature "
                                     "(2 breaking: `harness check`, under Reproduce)")
    assert kv["interface.targets_resolve"].status is CheckStatus.not_run  # the feature touches no hook
    assert "1 other live targets of the plugin lie outside this feature (1 breaking" in kv["interface.targets_resolve"].reason

    caps = _judge_interface(tmp_path, CAPS + KV, [PLATFORM + ".support_cuda_graph", PLATFORM + ".supports_fp8"])
    assert caps["interface.override_signatures"].status is CheckStatus.failed
    assert caps["interface.override_signatures"].reason.startswith("2 of 2 overrides do not match")

    pool = _judge_interface(tmp_path, CAPS + KV, ["sglang.srt.mem_cache.memory_pool"])  # a module holds the hook's target
    assert pool["interface.targets_resolve"].status is CheckStatus.failed

    whole = _judge_interface(tmp_path, CAPS + KV, [])  # a feature naming nothing: the whole plugin, no tail
    assert whole["interface.override_signatures"].status is CheckStatus.failed and "outside" not in whole["interface.override_signatures"].reason


def test_a_break_the_agents_patch_adds_outside_the_feature_is_the_features(tmp_path):
    before = {"checkout_breaking": [f"override {PLATFORM}.support_cuda_graph p/platform.py"]}
    checks = _judge_interface(tmp_path, CAPS + KV[:1], [f"{PLATFORM}.get_kv_pool_cls"], **before)
    overrides = checks["interface.override_signatures"]
    # supports_fp8 broke only in the patched tree: the patch's doing, judged here; support_cuda_graph was broken before
    assert overrides.status is CheckStatus.failed and f"{PLATFORM}.supports_fp8 (not_on_base)" in overrides.reason
    assert "support_cuda_graph" not in overrides.reason.split("—")[0] and "1 other live overrides" in overrides.reason
