"""The committed example reports (reports/examples/, made by scripts/make_report_examples.py) are
what the code renders now from their run.json, journal and evidence, and that evidence is what
was approved."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.record.layout import Workspace
from harness.workflow.runs import load_inputs, reports, view_of

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
