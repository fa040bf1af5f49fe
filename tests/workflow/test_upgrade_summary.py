"""summary.md of a large upgrade stays one screen: counts first, blockers (with when, why, the
upstream call site that proves it and the plugin sites), then the features that break a path,
then warnings, each list cut with the rest in details.md; issue.md carries no relative link.

The report here is shaped like the issue's real 107-module plugin (0.5.17 → 0.5.23: 120 features,
three of them startup blockers ranked by triage); the end-to-end account of the real releases
is tests/workflow/test_upgrade.py."""

from __future__ import annotations

import re

from harness.workflow.upgrade import SHOWN, UpgradeFeature, UpgradeReport, render_summary


def _feature(index: int, **fields) -> UpgradeFeature:
    base = {"id": f"feature-{index}", "title": f"module{index}.f replaces old{index}.f", "risk": 90 - index % 50,
            "why": f"reason {index}", "targets": [f"sglang.srt.module{index}.f"], "breaking": True,
            "state": "not_started", "start": f"harness upgrade --plugin . --from sglang==0.5.17 --to sglang==0.5.23 "
                                             f"--feature feature-{index}"}
    return UpgradeFeature(**{**base, **fields})


def _report() -> UpgradeReport:
    blockers = [
        _feature(0, fails_at="startup", fails_reason="GroupCoordinator() no longer takes use_xpu_communicator",
                 proof="sglang/srt/distributed/parallel_state.py:1432",
                 sites=["xdev/distributed.py:40", "xdev/distributed.py:88", "xdev/comm.py:12", "xdev/comm.py:30"],
                 run_id="upgrade-0.5.23-feature-0-abc", state="waiting", verdicts={"01-alignment": "failed"},
                 report="../upgrade-0.5.23-feature-0-abc/summary.md", start=None,
                 approve='harness approve upgrade-0.5.23-feature-0-abc --by YOUR_NAME --note "..."'),
        _feature(1, fails_at="import", fails_reason="xdev.moe imports the removed fused_moe_triton.layer",
                 proof="sglang/srt/layers/moe/__init__.py:5", sites=["xdev/moe.py:3"]),
    ]
    paths = [_feature(i, fails_at="path", fails_reason=f"MoE models: reason {i}") for i in range(2, 40)]
    warnings = [_feature(i, fails_at="never", breaking=False) for i in range(40, 120)]
    return UpgradeReport(plugin="/plugin", plugin_fingerprint="ee407a8449030553", from_spec="sglang==0.5.17",
                         to_spec="sglang==0.5.23", outcome="waiting_for_review", exit_code=1, through="alignment",
                         runs=10, features=blockers + paths + warnings,
                         preexisting=[_feature(200, kind="preexisting", state="not_run", start=None)],
                         generated_at="2026-12-01T00:00:00Z")


def test_a_large_upgrade_summary_is_one_screen_blockers_first():
    report = _report()
    summary = render_summary(report)
    lines = summary.splitlines()
    assert len(lines) <= 75, len(lines)
    assert lines[2].startswith("**120 feature(s) to review: 2 blocker(s), 38 break a path, 80 warning(s).**")
    assert "Review runs: 1 started, 119 on demand (`--runs 10`). Already broken on sglang==0.5.17: 1." in lines[2]
    sections = [line for line in lines if line.startswith("## ")]
    assert sections == ["## Blockers: the plugin fails at import or engine start", "## Breaks a model or feature path",
                        "## Warnings", "## Already broken on sglang==0.5.17 (not this upgrade's doing; no run)"]
    # a blocker says when and why, the upstream call site that proves it, and where the plugin is hit
    assert ("- **module0.f replaces old0.f** (`feature-0`, risk 90): fails at engine start: GroupCoordinator() no longer "
            "takes use_xpu_communicator; upstream `sglang/srt/distributed/parallel_state.py:1432`; plugin "
            "`xdev/distributed.py:40`, `xdev/distributed.py:88`, `xdev/comm.py:12` (+1)") in lines
    assert ("  run [upgrade-0.5.23-feature-0-abc](../upgrade-0.5.23-feature-0-abc/summary.md): waiting, 01-alignment "
            "failed · `harness approve upgrade-0.5.23-feature-0-abc --by YOUR_NAME --note \"...\"`") in lines
    assert "fails at import: xdev.moe imports the removed fused_moe_triton.layer" in summary
    assert "(`feature-2`, risk 88): fails on a path: MoE models: reason 2" in summary
    assert "  no run yet: `harness upgrade --plugin . --from sglang==0.5.17 --to sglang==0.5.23 --feature feature-1`" in lines
    # long lists are cut: the rest is in details.md
    assert f"- … {38 - SHOWN} more in [details.md](details.md)" in lines
    assert f"- … {80 - SHOWN} more in [details.md](details.md)" in lines
    assert "`feature-39`" not in summary and "`feature-119`" not in summary

    issue = render_summary(report, links=False)
    assert not re.search(r"\]\((?!https?://)", issue)  # nothing relative: it would not resolve in an issue
    assert "run `upgrade-0.5.23-feature-0-abc`: waiting" in issue
    assert f"- … {38 - SHOWN} more in `reports/upgrade-0.5.17-to-0.5.23/details.md`" in issue


def test_a_breakage_triage_did_not_time_is_said_so_never_called_a_blocker():
    report = _report()
    report.features[2] = _feature(2, why="its hook at xdev/hooks.py:3 will not resolve")  # fails_at None
    summary = render_summary(report)
    assert "(`feature-2`, risk 88): breaks (where it fails first is not decided statically): its hook at xdev/hooks.py:3 will not resolve" in summary
    assert summary.index("`feature-2`") > summary.index("## Breaks a model or feature path")


def test_the_json_carries_when_each_feature_fails():
    doc = _report().model_dump()
    blocker = doc["features"][0]
    assert (blocker["severity"], blocker["fails_at"], blocker["proof"], blocker["sites"][0]) == (
        "blocker", "startup", "sglang/srt/distributed/parallel_state.py:1432", "xdev/distributed.py:40")
    assert [f["severity"] for f in doc["features"][1:3]] == ["blocker", "path"]
    assert doc["features"][-1]["severity"] == "warning"
    assert [f["kind"] for f in doc["preexisting"]] == ["preexisting"]
