"""The committed example reports (reports/examples/, made by scripts/make_report_examples.py) are
what the code renders now from their run.json, journal and evidence; that evidence is what was
approved; and every step's verdict is recomputed from it alone by the step's own `judge`."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness.record.layout import Workspace
from harness.steps import STEPS
from harness.steps.base import load_result
from harness.workflow.views import load_inputs, reports, view_of

EXAMPLES = Workspace(Path(__file__).resolve().parents[2] / "reports" / "examples")


@pytest.mark.parametrize("run_id", EXAMPLES.run_ids() or [pytest.param("none", marks=pytest.mark.skip(
    reason="no example reports committed; run scripts/make_report_examples.py"))])
def test_committed_reports_are_what_the_code_renders(run_id):
    run = EXAMPLES.run(run_id)
    view = view_of(run, load_inputs(run))
    assert view.state == "finished" and not view.invalidated, "the committed evidence is what was approved"
    for path, text in reports(run, view).items():
        assert path.read_text(encoding="utf-8") == text, (
            f"{path.relative_to(EXAMPLES.root)} differs from what the code renders; "
            "rerun scripts/make_report_examples.py")


@pytest.mark.parametrize("run_id", EXAMPLES.run_ids() or [pytest.param("none", marks=pytest.mark.skip(
    reason="no example reports committed; run scripts/make_report_examples.py"))])
def test_every_verdict_is_recomputed_from_the_evidence_alone(run_id):
    run = EXAMPLES.run(run_id)
    inputs = load_inputs(run)
    for step in STEPS:
        evidence_dir = run.evidence_dir(step.slug)
        recorded = load_result(evidence_dir)
        again = step.judge(evidence_dir, inputs)
        assert [(c.name, c.status, c.reason) for c in again] == [(c.name, c.status, c.reason) for c in recorded.checks]


@pytest.mark.parametrize("run_id", EXAMPLES.run_ids() or [pytest.param("none", marks=pytest.mark.skip(
    reason="no example reports committed; run scripts/make_report_examples.py"))])
def test_measurements_are_rounded_to_what_they_mean(run_id):
    from harness.util.templates import measure

    text = "".join(path.read_text(encoding="utf-8") for path in EXAMPLES.run(run_id).reports_dir.glob("0*.md"))
    rows = [line for line in text.splitlines() if line.startswith("| `") and line.count("|") == 4]
    assert rows, "the example reports have measurement tables"
    assert not [row for row in rows if re.search(r"\d\.\d{6,}", row)], "no float printed with 15 digits"
    assert measure(0.17023809523809522, "baseline_accuracy") == "17.0 %"
    assert measure(-0.1571448851226606, "ci_low") == "-15.7 pt"
    assert measure(408.96811374977915, "median_ttft_ms") == "409.0"
    assert measure(22.803492324834792, "output_throughput") == "22.8"
    assert measure(1.0110237842236938, "ratio") == "1.011" and measure(20, "n") == "20"
