"""Render a run's reports from the data handed in: a step's result (its step.json), its view
(gate, history, evidence hash) and the run's inputs; the summary from the RunView.

Reports are outputs only: rendering twice from the same data gives the same bytes, and any
report can be deleted and regenerated. Writes go through a temp file + rename so a kill never
leaves half a report.
"""

from __future__ import annotations

from pathlib import Path

from harness.record.models import RunInputs, RunView, StepResult, StepView
from harness.util.files import write_atomic
from harness.util.templates import render


def render_step_report(path: Path, template: str, result: StepResult, view: StepView, inputs: RunInputs,
                       files: list[str]) -> Path:
    """Write one step's report to `path` with `template` (the step's own). `files` are the
    evidence files, relative to the step's evidence dir (reports link `evidence/<slug>/...`)."""
    text = render(
        template,
        run_id=inputs.run_id,
        inputs=inputs,
        result=result,
        slug=view.slug,
        gate=view.gate,
        rejections=[d for d in view.history if d.decision in ("reject", "reopen")],
        evidence_link=f"evidence/{view.slug}",
        files=files,
        evidence_hash=view.evidence_hash,
    )
    return write_atomic(path, text)


def render_summary(path: Path, view: RunView, notes: list[str]) -> Path:
    """Write the run's summary to `path`; `notes` are shown under the header (the run's own
    notes and its pins)."""
    return write_atomic(path, render("summary.md.j2", view=view, inputs=view.inputs, notes=notes))
