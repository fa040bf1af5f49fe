"""Start, decide, resume and inspect runs: what the CLI commands call.

Each call opens the workspace checkpointer, builds the graph for the run's inputs, advances it
as far as it goes (to the next gate, or the end), then re-renders the reports from state and
evidence on disk. One process at a time may advance a run (an flock on the run's lock file; the
kernel drops it if the process is killed).
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from langgraph.types import Command

from harness.errors import HarnessError
from harness.record.gates import gate_view
from harness.record.hashing import evidence_hash
from harness.record.layout import RunLayout, Workspace, utc_now
from harness.record.models import GateDecision, RunInputs, RunView, StepView
from harness.record.pins import pin_lines, verify_pins
from harness.record.trajectory import decision_event
from harness.report.render import step_report, summary
from harness.steps import STEPS
from harness.steps.base import load_result
from harness.util.files import tree_files, write_atomic
from harness.workflow.checkpointer import open_checkpointer
from harness.workflow.graph import build_graph, gate_name

Progress = Callable[[str], None]


def _config(run_id: str) -> dict:
    return {"configurable": {"thread_id": run_id}}


def load_inputs(run: RunLayout) -> RunInputs:
    """The run's run.json. HarnessError when the run does not exist or the file is unreadable."""
    run.require()
    try:
        return RunInputs.model_validate_json(run.run_json.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise HarnessError(f"run {run.run_id}: {run.run_json} is unreadable ({str(exc).splitlines()[0]})") from None


@contextmanager
def _exclusive(run: RunLayout) -> Iterator[None]:
    """Held while a process decides on or advances the run; reentrant within the process."""
    if run.run_id in _held:
        yield
        return
    run.run_dir.mkdir(parents=True, exist_ok=True)
    with open(run.lock_file, "a+") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            holder = fh.read().strip() or "another process"
            raise HarnessError(f"run {run.run_id} is being advanced by {holder}; wait for it") from None
        fh.seek(0)
        fh.truncate()
        fh.write(f"pid {os.getpid()}")
        fh.flush()
        _held.add(run.run_id)
        try:
            yield
        finally:
            _held.discard(run.run_id)


_held: set[str] = set()


def busy_by(run: RunLayout) -> str | None:
    """Who is advancing the run right now ('pid N'), or None."""
    if not run.lock_file.is_file():
        return None
    with open(run.lock_file, "a+") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            return fh.read().strip() or "another process"
        fcntl.flock(fh, fcntl.LOCK_UN)
    return None


def _advance(run: RunLayout, inputs: RunInputs, payload: Any, progress: Progress) -> RunView:
    with _exclusive(run), open_checkpointer(run.workspace) as saver:
        app = build_graph(run, inputs, progress).compile(checkpointer=saver)
        # durability="sync": a step's checkpoint is on disk before the next node starts.
        app.invoke(payload, _config(run.run_id), durability="sync")
        view = _view(run, inputs, app.get_state(_config(run.run_id)))
    _render(run, view)
    return view


def start_run(workspace: Workspace, inputs: RunInputs, progress: Progress = lambda m: None) -> RunView:
    """Record the run's inputs and advance it to the first gate (or the end, with auto-approve).
    HarnessError when a run of that id exists."""
    run = workspace.run(inputs.run_id)
    if run.exists():
        raise HarnessError(
            f"run {inputs.run_id!r} already exists; pick another --run-id or `harness resume {inputs.run_id}`"
        )
    run.run_dir.mkdir(parents=True, exist_ok=True)
    tmp = run.run_json.with_suffix(".tmp")
    tmp.write_text(inputs.model_dump_json(indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, run.run_json)
    run.log("run_started", feature=inputs.feature.id)
    return _advance(run, inputs, _initial_state(inputs), progress)


def _initial_state(inputs: RunInputs) -> dict:
    return {"run_id": inputs.run_id}


def resume_run(workspace: Workspace, run_id: str, progress: Progress = lambda m: None) -> RunView:
    """Continue a run a killed process left mid-step; a run at a gate or finished is returned as is."""
    run = workspace.run(run_id)
    inputs = load_inputs(run)
    with _exclusive(run):
        view = run_status(workspace, run_id)
        if view.state != "interrupted":
            return view  # at a gate or finished: nothing to redo
        verify_pins(inputs)  # the upstreams must still be what the run started on
        run.log("run_resumed")
        # Killed before the first checkpoint (or the state file was replaced): start from the top;
        # steps whose evidence is complete on disk are reused, not redone.
        payload = None if view.checkpointed else _initial_state(inputs)
        return _advance(run, inputs, payload, progress)


def decide(
    workspace: Workspace,
    run_id: str,
    *,
    approve: bool,
    by: str,
    text: str | None,
    step: str | None = None,
    progress: Progress = lambda m: None,
) -> RunView:
    """Approve or reject the gate the run waits at; then advance to the next gate. A rejection
    may name an earlier, already approved `step` instead (a reopening): that step reruns, and
    every step after it runs again once it is approved. HarnessError on a decision the run's
    state does not allow (with what to do instead)."""
    run = workspace.run(run_id)
    inputs = load_inputs(run)
    with _exclusive(run):
        if step is not None and not approve:
            view = run_status(workspace, run_id)
            if step != view.waiting_at:
                return _reopen_locked(run, inputs, view, step, by=by, reason=text, progress=progress)
        elif step is not None:
            raise HarnessError("--step is for reject only: approve decides the gate the run waits at")
        return _decide_locked(run, inputs, approve=approve, by=by, text=text, progress=progress)


def _reopen_locked(run: RunLayout, inputs: RunInputs, view: RunView, slug: str, *, by: str, reason: str | None,
                   progress: Progress) -> RunView:
    """Reject an approved step behind the gate the run waits at (or of a finished run)."""
    run_id = run.run_id
    known = [s.slug for s in view.steps]
    if slug not in known:
        raise HarnessError(f"unknown step {slug!r}; the steps are {', '.join(known)}")
    if view.state not in ("waiting", "finished"):
        raise HarnessError(f"run {run_id} stopped mid-step; `harness resume {run_id}` first")
    if not by.strip():
        raise HarnessError("--by must name who decides")
    if not (reason or "").strip():
        raise HarnessError("--reason must say why the step is rejected")
    index = known.index(slug)
    target = view.steps[index]
    if target.gate.decision != "approve":
        raise HarnessError(f"run {run_id}: {slug} has no approval to reject; only an approved step behind the "
                           f"gate the run waits at can be reopened")
    verify_pins(inputs)
    later = [s for s in view.steps[index + 1:] if s.attempt is not None]
    # Evidence first, state second: a kill in between leaves state that the same command redoes,
    # never later steps whose stale evidence a rerun would reuse.
    for step in later:
        evidence = run.evidence_dir(step.slug)
        if evidence.exists():
            run.superseded_dir.mkdir(parents=True, exist_ok=True)
            n = 1
            while (run.superseded_dir / f"{step.slug}.attempt-{step.attempt}.reopened-{n}").exists():
                n += 1
            os.rename(evidence, run.superseded_dir / f"{step.slug}.attempt-{step.attempt}.reopened-{n}")
        run.step_report(step.slug).unlink(missing_ok=True)
    decision = GateDecision(decision="reopen", by=by.strip(), at=utc_now(), evidence_hash=target.evidence_hash,
                            attempt=target.attempt, reason=reason.strip())
    # The later steps keep their decisions; reset, they have no record until they run again, so
    # their gates show nothing (harness.record.gates.gate_view).
    run.log(decision.decision, **decision_event(decision, slug, reset=[s.slug for s in later]))
    step_obj = next(s for s in STEPS if s.slug == slug)
    with open_checkpointer(run.workspace) as saver:
        app = build_graph(run, inputs, progress).compile(checkpointer=saver)
        app.update_state(_config(run_id), Command(goto=step_obj.name), as_node=gate_name(step_obj))
    return _advance(run, inputs, None, progress)


def _decide_locked(run: RunLayout, inputs: RunInputs, *, approve: bool, by: str, text: str | None,
                   progress: Progress) -> RunView:
    run_id = run.run_id
    view = run_status(run.workspace, run_id)
    if view.state != "waiting":
        what = {
            "finished": "it has finished",
            "interrupted": f"it stopped mid-step; `harness resume {run_id}` first",
        }
        raise HarnessError(f"run {run_id} is not waiting at a gate: {what.get(view.state, view.state)}")
    if not by.strip():
        raise HarnessError("--by must name who decides")
    step = view.step(view.waiting_at)
    if approve:
        earlier = next((s for s in view.invalidated if s.number < step.number), None)
        if earlier is not None:
            raise HarnessError(
                f"run {run_id}: the approval of {earlier.slug} is invalidated (its evidence changed after "
                f"approval: approved {earlier.gate.evidence_hash}, now {earlier.evidence_hash}); "
                f"no later gate can be approved until it is resolved: restore its approved evidence, or reject "
                f"{earlier.slug} to rerun it (harness reject {run_id} --step {earlier.slug} "
                f"--by NAME --reason TEXT)"
            )
        if step.evidence_changed:
            raise HarnessError(
                f"run {run_id}: evidence of {step.slug} changed since the step produced it; "
                f"reject it to rerun the step instead of approving altered evidence"
            )
    elif not (text or "").strip():
        raise HarnessError("--reason must say why the step is rejected")
    decision = GateDecision(
        decision="approve" if approve else "reject",
        by=by.strip(),
        at=utc_now(),
        evidence_hash=step.evidence_hash,
        attempt=step.attempt,
        note=(text or None) if approve else None,
        reason=None if approve else text.strip(),
    )
    verify_pins(inputs)  # before the decision is recorded: the next step reads the upstreams
    run.log(decision.decision, **decision_event(decision, step.slug))  # the record first, the graph second
    return _advance(run, inputs, Command(resume=decision.model_dump(mode="json")), progress)


def run_status(workspace: Workspace, run_id: str, *, render: bool = False) -> RunView:
    """The run as it stands. With `render`, the reports are re-rendered too, so the summary
    shows what `status` shows (e.g. an approval invalidated by changed evidence)."""
    run = workspace.run(run_id)
    inputs = load_inputs(run)
    with open_checkpointer(workspace) as saver:
        app = build_graph(run, inputs, lambda m: None).compile(checkpointer=saver)
        snapshot = app.get_state(_config(run_id))
    view = _view(run, inputs, snapshot)
    if render:
        _render(run, view)
    return view


def reports(run: RunLayout, view: RunView) -> dict[Path, str]:
    """Every report of the run as it should read now, by path: each finished step's report (its
    gate line changes with decisions) and the summary. A step report shows the evidence as it is
    now; the summary's hash column shows what was approved (its gate column marks an approval
    whose evidence no longer matches)."""
    texts: dict[Path, str] = {}
    for step, step_view in zip(STEPS, view.steps, strict=True):
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


def _render(run: RunLayout, view: RunView) -> None:
    for path, text in reports(run, view).items():
        write_atomic(path, text)


def _view(run: RunLayout, inputs: RunInputs, snapshot) -> RunView:
    """The one place a RunView is built: the graph's position from its checkpoint, everything
    else from the run's files (`view_of`)."""
    waiting_at = None
    for task in snapshot.tasks:
        for intr in task.interrupts:
            waiting_at = intr.value["step"]
    running = None if run.run_id in _held else busy_by(run)
    return view_of(run, inputs, waiting_at=waiting_at, checkpointed=bool(snapshot.values), running=running)


def view_of(run: RunLayout, inputs: RunInputs, *, waiting_at: str | None = None, checkpointed: bool = True,
            running: str | None = None) -> RunView:
    """A RunView from run.json, the journal and the evidence tree, given where the graph stands
    (`waiting_at`: the gate it waits at; `running`: who advances it now)."""
    trajectory = run.trajectory()
    if trajectory.finished_at:
        state = "finished"
    elif waiting_at:
        state = "waiting"
    elif running:
        state = "running"
    else:
        state = "interrupted"  # a process stopped mid-step (or never got going): resume it
    steps = []
    for step in STEPS:
        slug = step.slug
        record = trajectory.record(slug)
        result = load_result(run.evidence_dir(slug)) if record else None
        history = trajectory.decisions(slug)
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
            gate=gate_view(history, record, current, waiting_at == slug),
            history=history,
        ))
    return RunView(
        run_id=run.run_id,
        workspace=str(run.workspace.root),
        state=state,
        waiting_at=waiting_at,
        finished_at=trajectory.finished_at,
        checkpointed=checkpointed,
        running=running,
        inputs=inputs,
        steps=steps,
    )
