"""What a run looks like, from its record alone: run.json, the journal and the evidence tree.
Nothing here reads LangGraph's checkpoint, so a lost or corrupt state file never changes a view
or a report."""

from __future__ import annotations

from pathlib import Path

from harness.errors import HarnessError
from harness.record.gates import gate_view
from harness.record.hashing import evidence_hash
from harness.record.layout import RunLayout
from harness.record.models import ProcessView, RunInputs, RunView, StepView
from harness.record.pins import pin_lines, record_changes
from harness.record.processes import ProcessRecord
from harness.report.render import step_report, summary
from harness.steps import KNOWLEDGE, WORKFLOW
from harness.steps.base import load_result
from harness.util.files import tree_files, write_atomic

SLUGS = [step.slug for step in WORKFLOW]


def load_inputs(run: RunLayout) -> RunInputs:
    """The run's run.json, with a runbook given after the start (`approve` / `resume --runbook`:
    its journal's `runbook_attached` line, harness.workflow.runs.attach_runbook). HarnessError
    when the run does not exist or the file is unreadable."""
    run.require()
    try:
        inputs = RunInputs.model_validate_json(run.run_json.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise HarnessError(f"run {run.run_id}: {run.run_json} is unreadable ({str(exc).splitlines()[0]})") from None
    if inputs.runbook is None:
        attached = next((e for e in reversed(run.read_journal().events) if e.get("event") == RUNBOOK_ATTACHED), None)
        if attached is not None and isinstance(attached.get("runbook"), str):
            inputs = inputs.model_copy(update={"runbook": attached["runbook"]})
    return inputs


# the journal line that gives a run started without a runbook its runbook (and pins it)
RUNBOOK_ATTACHED = "runbook_attached"


def view_of(run: RunLayout, inputs: RunInputs, *, running: str | None = None) -> RunView:
    """The one place a RunView is built: from run.json, the journal and the evidence tree alone
    (`running`: who advances it now). Nothing here reads LangGraph's checkpoint, so a lost or
    corrupt state file never changes a view or a report."""
    trajectory = run.trajectory()
    position = trajectory.position(SLUGS)
    waiting_at = position.step if position.where == "at_gate" and not inputs.auto_approve else None
    if position.where == "finished":
        state = "finished"
    elif running:
        state = "running"
    elif waiting_at:
        state = "waiting"
    else:
        state = "interrupted"  # a process stopped mid-step (or never got going): resume it
    steps = []
    for step in WORKFLOW:
        slug = step.slug
        record = trajectory.record(slug)
        result = load_result(run.evidence_dir(slug)) if record else None
        history = trajectory.decisions(slug)
        if step is KNOWLEDGE and record is None and not history and position.step != slug:
            continue  # the write-back shows once it has run (runs made before it existed have none)
        current = evidence_hash(run.evidence_dir(slug))
        steps.append(StepView(
            step=step.name,
            number=step.number,
            slug=slug,
            title=step.title,
            attempt=record.attempt if record else None,
            verdict=record.verdict.value if record else "pending",
            checks=result.checks if result else [],
            report=record.report if record else None,
            evidence_dir=record.evidence_dir if record else None,
            recorded_hash=record.evidence_hash if record else None,
            evidence_hash=current,
            evidence_changed=bool(record) and current != record.evidence_hash,
            gate=gate_view(history, trajectory.decision(slug), record, current, waiting_at == slug),
            history=history,
        ))
    return RunView(
        run_id=run.run_id,
        workspace=str(run.workspace.root),
        state=state,
        waiting_at=waiting_at,
        finished_at=trajectory.finished_at,
        running=running,
        inputs=inputs,
        steps=steps,
        torn_journal_lines=trajectory.torn_lines,
        record_changed=record_changes(run),
        commits_owed=list(trajectory.commits_owed),
    )


def process_view(record: ProcessRecord) -> ProcessView:
    """A step's process still alive, as `status` shows it."""
    return ProcessView(role=record.role, step=record.step, pid=record.pid, command=record.command,
                       owner_pid=record.owner_pid, owner_running=record.owner_running, job=record.job)


def reports(run: RunLayout, view: RunView) -> dict[Path, str]:
    """Every report of the run as it should read now, by path: each finished step's report (its
    gate line changes with decisions) and the summary. A step report shows the evidence as it is
    now; the summary's hash column shows what was approved (its gate column marks an approval
    whose evidence no longer matches)."""
    texts: dict[Path, str] = {}
    by_slug = {step.slug: step for step in WORKFLOW}
    for step_view in view.steps:
        step = by_slug[step_view.slug]
        evidence_dir = run.evidence_dir(step.slug)
        result = load_result(evidence_dir)
        if result is not None:
            texts[run.step_report(step.slug)] = step_report(step.template, result, step_view, view.inputs,
                                                            tree_files(evidence_dir))
    approved = view.model_copy(update={"steps": [
        s.model_copy(update={"evidence_hash": s.gate.evidence_hash})
        if s.gate.decision == "approve" and s.gate.evidence_hash else s
        for s in view.steps
    ]})
    texts[run.summary] = summary(approved, [*view.inputs.notes, *pin_lines(view.inputs)])
    return texts


def write_reports(run: RunLayout, view: RunView) -> None:
    """Write every report of the run (`reports`)."""
    for path, text in reports(run, view).items():
        write_atomic(path, text)
