"""Render a run's reports from the data handed in: a step's result (its step.json), its view
(gate, history, evidence hash) and the run's inputs; the summary from the RunView.

Rendering returns text; the caller writes it (`harness.workflow.views.write_reports`). Rendering twice from the
same data gives the same bytes, so any report can be deleted and regenerated, and the committed
examples (`reports/examples/`) can be checked against what the code renders now.
"""

from __future__ import annotations

from harness.record.models import RunInputs, RunView, StepResult, StepView
from harness.util.templates import render


def step_report(template: str, result: StepResult, view: StepView, inputs: RunInputs, files: list[str]) -> str:
    """One step's report with `template` (the step's own). `files` are the evidence files,
    relative to the step's evidence dir (reports link `evidence/<slug>/...`)."""
    return render(
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


def summary(view: RunView, notes: list[str]) -> str:
    """The run's summary; `notes` are shown under its header (the run's notes and its pins).
    Its hash column shows each step's `evidence_hash` as given: pass the approved hash for
    approved steps."""
    return render("summary.md.j2", view=view, inputs=view.inputs, notes=notes)
