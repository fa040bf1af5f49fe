"""Start, decide, resume, repair and inspect runs: what the CLI commands call.

Where a run stands is read from its journal (`Trajectory.position`); LangGraph's checkpoint is
only a resume cache of that. Each call that advances a run opens the workspace checkpointer,
puts the graph where the journal says the run stands when a killed process left the checkpoint
behind, advances it as far as it goes (to the next gate, or the end), then re-renders the
reports from the run's files. A lost or unreadable state file changes no report; `repair`
rebuilds it from the journals. One process at a time may advance a run (an flock on the run's
lock file, or a PostgreSQL advisory lock with a shared state database; either is dropped if the
process is killed).
"""

from __future__ import annotations

import fcntl
import os
import unicodedata
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from langgraph.types import Command
from pydantic import BaseModel

from harness.errors import HarnessError
from harness.record.gates import gate_view
from harness.record.hashing import evidence_hash
from harness.record.layout import RunLayout, Workspace, utc_now
from harness.record.models import (
    GateDecision,
    ProcessView,
    ResumeView,
    RunInputs,
    RunView,
    StepView,
)
from harness.record.pins import RUN_JSON, content_pin, file_pins, pin_lines, record_changes, verify_pins
from harness.record.processes import ProcessRecord, ProcessRegistry
from harness.record.trajectory import Position, decision_event
from harness.report.render import step_report, summary
from harness.steps import KNOWLEDGE, WORKFLOW
from harness.steps.base import load_result
from harness.util.files import ensure_writable, is_write_error, tree_files, write_atomic
from harness.workflow.checkpointer import (
    StateUnreadable,
    advisory_holder,
    advisory_lock,
    existing_checkpointer,
    move_aside,
    open_checkpointer,
    state_location,
    state_url,
)
from harness.workflow.graph import build_graph, commit_owed, gate_name, settle_commits

Progress = Callable[[str], None]
SLUGS = [step.slug for step in WORKFLOW]


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
    if state_url():
        with advisory_lock(run.run_id):
            _held.add(run.run_id)
            try:
                yield
            finally:
                _held.discard(run.run_id)
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
    """Who is advancing the run right now ('pid N'), or None. Reads only (a shared lock on a
    read-only descriptor), so it works on a read-only workspace too. With a shared state
    database: the holder of the run's advisory lock ('harness pid N on HOST')."""
    if state_url():
        return advisory_holder(run.run_id)
    if not run.lock_file.is_file():
        return None
    with open(run.lock_file) as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return fh.read().strip() or "another process"
        fcntl.flock(fh, fcntl.LOCK_UN)
    return None


# --------------------------------------------------------------------------- the graph, placed by the journal


def _expected_next(position: Position) -> tuple[str, ...]:
    """The node LangGraph's checkpoint must name next for the run to stand where its journal
    says."""
    if position.where == "finished":
        return ()
    if position.step is None:
        return ("done",)
    step = WORKFLOW[SLUGS.index(position.step)]
    return (gate_name(step),) if position.where == "at_gate" else (step.name,)


def _place(app: Any, run: RunLayout, position: Position) -> None:
    """Write a checkpoint that puts the graph where the journal says the run stands."""
    config = _config(run.run_id)
    if position.where == "finished":
        app.update_state(config, {"run_id": run.run_id}, as_node="done")
    elif position.step is None:
        app.update_state(config, Command(goto="done"), as_node=gate_name(WORKFLOW[-1]))
    else:
        step = WORKFLOW[SLUGS.index(position.step)]
        if position.where == "at_gate":
            app.update_state(config, {"run_id": run.run_id}, as_node=step.name)
        else:
            app.update_state(config, Command(goto=step.name), as_node=gate_name(step))


def _advance(run: RunLayout, inputs: RunInputs, payload: Any, progress: Progress, *, place: bool = True) -> RunView:
    """Advance the graph with `payload`, then render the reports. With `place`, the graph is
    first put where the journal says the run stands, if its checkpoint is elsewhere (left
    behind by a killed process, lost, or ahead of a reopening)."""
    with _exclusive(run):
        if place:
            _catch_up(run, inputs)
        _invoke(run, inputs, payload, progress)
        view = view_of(run, inputs)
    _render(run, view)
    return view


def _invoke(run: RunLayout, inputs: RunInputs, payload: Any, progress: Progress) -> None:
    with open_checkpointer(run.workspace) as saver:
        app = build_graph(run, inputs, progress).compile(checkpointer=saver)
        # durability="sync": a step's checkpoint is on disk before the next node starts.
        app.invoke(payload, _config(run.run_id), durability="sync")


def _writable(workspace: Workspace, run_id: str) -> None:
    """Refuse before anything is recorded when the run's state or reports cannot be written."""
    run = workspace.run(run_id)
    ensure_writable(run.run_dir, "the run's state")
    ensure_writable(run.reports_dir, "the run's reports")


def start_run(workspace: Workspace, inputs: RunInputs, progress: Progress = lambda m: None) -> RunView:
    """Record the run's inputs and advance it to the first gate (or the end, with auto-approve).
    HarnessError when a run of that id exists, the workspace cannot be written or its state file
    is corrupt — before anything of the run is written."""
    run = workspace.run(inputs.run_id)
    if run.exists():
        raise HarnessError(
            f"run {inputs.run_id!r} already exists; pick another --run-id or `harness resume {inputs.run_id}`"
        )
    check_workspace(workspace, inputs.run_id)
    inputs = inputs.model_copy(update={"journal": "chained"})
    text = inputs.model_dump_json(indent=2) + "\n"
    # the record is evidence: run.json and the files that decide what later steps run are pinned
    pins = {RUN_JSON: content_pin(text.encode()), **file_pins(_decisive_files(inputs))}
    write_atomic(run.run_json, text)
    run.log("run_started", feature=inputs.feature.id, pins=pins)
    return _advance(run, inputs, {"run_id": inputs.run_id}, progress, place=False)


def _decisive_files(inputs: RunInputs) -> list[str]:
    """The files besides run.json that decide what the run's steps run: its runbook and the
    recipes the runbook names (absolute paths)."""
    from harness.evidence.runbook import load_runbook  # cost: the evidence models

    if not inputs.runbook:
        return []
    return [inputs.runbook, *(str(recipe) for recipe in load_runbook(inputs.runbook).recipes)]


def verify_record(run: RunLayout) -> None:
    """Refuse (HarnessError, one line) to decide on or advance a run whose record changed since
    it started: its journal's chain is broken, or run.json, its runbook or a recipe is not what
    was pinned. Nothing is recorded."""
    changed = record_changes(run)
    if changed:
        more = f" (and {len(changed) - 1} more change(s): `harness status {run.run_id}`)" if len(changed) > 1 else ""
        raise HarnessError(f"run {run.run_id}: its record changed: {changed[0]}{more}; nothing was decided")


def check_workspace(workspace: Workspace, run_id: str | None = None) -> None:
    """What `run` needs before it records anything: the state and reports dirs (the run's,
    given `run_id`) are writable and the state file is readable. HarnessError (one line)
    otherwise."""
    if run_id is None:
        ensure_writable(workspace.runs_dir, "run state")
        ensure_writable(workspace.root / "reports", "reports")
    else:
        _writable(workspace, run_id)
    with open_checkpointer(workspace):
        pass


def resume_run(workspace: Workspace, run_id: str, progress: Progress = lambda m: None) -> RunView:
    """Continue a run a killed process left mid-step, from where its journal says it stands (a
    lost resume cache is rebuilt on the way); a run at a gate or finished is returned as is."""
    run = workspace.run(run_id)
    inputs = load_inputs(run)
    with _exclusive(run):
        verify_record(run)
        if run.trajectory().commits_owed:  # an approval whose commit a kill cut off
            _writable(workspace, run_id)
            settle_commits(run)
        view = view_of(run, inputs)
        if view.state != "interrupted":
            return view  # at a gate or finished: nothing to redo
        _writable(workspace, run_id)
        verify_pins(inputs)  # the upstreams must still be what the run started on
        run.log("run_resumed")
        return _advance(run, inputs, None, progress)


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
    state does not allow (with what to do instead), and before anything is recorded when the
    run cannot be written or its resume state is gone (`harness repair`)."""
    plain_text(by, "--by", lines=False)
    plain_text(text, "--note" if approve else "--reason", lines=True)
    run = workspace.run(run_id)
    inputs = load_inputs(run)
    with _exclusive(run):
        verify_record(run)
        _writable(workspace, run_id)
        _require_resume_state(workspace, run, inputs)
        settle_commits(run)  # an earlier approval's commit a kill cut off comes first
        if step is not None and not approve:
            view = view_of(run, inputs)
            if step != view.waiting_at:
                return _reopen_locked(run, inputs, view, step, by=by, reason=text, progress=progress)
        elif step is not None:
            raise HarnessError("--step is for reject only: approve decides the gate the run waits at")
        return _decide_locked(run, inputs, approve=approve, by=by, text=text, progress=progress)


def plain_text(text: str | None, option: str, *, lines: bool) -> None:
    """Refuse what a person says at a gate when it would act on a terminal or a report instead of
    reading as text: control characters (terminal escape sequences, carriage returns, bells),
    invisible format characters (bidi overrides, zero-width), and in `--by` any line break or tab
    (it names one person, on one line of `status` and the reports). HarnessError naming the
    option and the character; newlines and tabs are kept in notes and reasons (`lines`)."""
    for ch in text or "":
        if lines and ch in "\n\t":
            continue
        if unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp"):
            raise HarnessError(f"{option} holds the control character {ch!r} (U+{ord(ch):04X}): say it in plain "
                               f"text; nothing was decided")


def _require_resume_state(workspace: Workspace, run: RunLayout, inputs: RunInputs) -> None:
    """A decision needs a readable state file, and a run waiting at a gate its resume state:
    refuse, pointing at `harness repair`, before anything is recorded (a run stopped mid-step is
    `resume`d from the journal; a finished one is reopened from it)."""
    resume = resume_view(workspace, run, inputs)
    if resume.state == "corrupt" or (resume.state == "missing" and view_of(run, inputs).state == "waiting"):
        raise HarnessError(
            f"run {run.run_id}: its resume state is gone ({resume.note}); its sign-off record (journal, evidence, "
            f"reports) is intact: `harness repair {run.run_id}` rebuilds the resume state from it"
        )


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
    # their gates show nothing (harness.record.gates.gate_view). The graph follows the journal.
    run.log(decision.decision, **decision_event(decision, slug, reset=[s.slug for s in later]))
    return _advance(run, inputs, None, progress)


def _decide_locked(run: RunLayout, inputs: RunInputs, *, approve: bool, by: str, text: str | None,
                   progress: Progress) -> RunView:
    run_id = run.run_id
    view = view_of(run, inputs)
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
        blocked = next((c for c in step.checks if c.unusable_input), None)
        if blocked is not None:
            raise HarnessError(
                f"run {run_id}: {step.slug} cannot be approved: {blocked.name} did not run because an input is "
                f"unusable ({blocked.reason}); fix the input, then reject the step to rerun it"
            )
        if step.verdict == "failed" and not (text or "").strip():
            raise HarnessError(
                f"run {run_id}: {step.slug} failed its checks; approving it anyway needs --note saying why "
                f"(the report marks it \"approved despite failed checks\")"
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
    _catch_up(run, inputs)  # the graph waits at this gate before the decision moves it on
    # the record first, the graph second: an approval owing a commit says so, so a kill before
    # the commit leaves it owed to the next command (graph.settle_commits)
    run.log(decision.decision, **decision_event(decision, step.slug,
                                                commit_owed=approve and commit_owed(run, step.slug, step.attempt)))
    return _advance(run, inputs, Command(resume=decision.model_dump(mode="json")), progress, place=False)


def _catch_up(run: RunLayout, inputs: RunInputs) -> None:
    """Put the graph where the journal says, if a killed process left its checkpoint behind."""
    with open_checkpointer(run.workspace) as saver:
        app = build_graph(run, inputs, lambda m: None).compile(checkpointer=saver)
        position = run.trajectory().position(SLUGS)
        if tuple(app.get_state(_config(run.run_id)).next) != _expected_next(position):
            _place(app, run, position)


# --------------------------------------------------------------------------- repair


class Repaired(BaseModel):
    """What `repair` did for one run: `rebuilt`, `unchanged` (the resume state already agreed
    with the journal), `skipped` (another process advances it) or `failed` (what cannot be
    rebuilt, and why)."""

    run_id: str
    outcome: str
    detail: str


def repair(workspace: Workspace, run_id: str | None = None) -> tuple[Path | None, list[Repaired]]:
    """Rebuild LangGraph's resume state from the runs' journals: RUN's, or every run's. A
    corrupt state file is first moved aside (returned; it held every run, so every run is
    rebuilt). Nothing of a run's record is changed."""
    moved = None
    try:
        with open_checkpointer(workspace):
            pass
    except StateUnreadable:
        moved = move_aside(workspace)
        run_id = None
    run_ids = [run_id] if run_id else workspace.run_ids()
    return moved, [_repair_run(workspace, rid) for rid in run_ids]


def _repair_run(workspace: Workspace, run_id: str) -> Repaired:
    run = workspace.run(run_id)
    try:
        inputs = load_inputs(run)
    except HarnessError as exc:
        return Repaired(run_id=run_id, outcome="failed", detail=f"cannot rebuild: {exc}")
    changed = record_changes(run)
    if changed:
        return Repaired(run_id=run_id, outcome="failed", detail=f"cannot rebuild: its record changed: {changed[0]}")
    if not run.journal.is_file():
        return Repaired(run_id=run_id, outcome="failed",
                        detail=f"cannot rebuild: its journal {run.journal} is gone, and with it the record of "
                               f"what ran and who decided; its evidence is still under {run.reports_dir}")
    try:
        with _exclusive(run), open_checkpointer(workspace) as saver:
            app = build_graph(run, inputs, lambda m: None).compile(checkpointer=saver)
            trajectory = run.trajectory()
            position = trajectory.position(SLUGS)
            where = _describe(position)
            notes = [f"{trajectory.torn_lines} torn journal line(s) ignored"] if trajectory.torn_lines else []
            if position.where == "at_gate" and not (run.evidence_dir(position.step) / "step.json").is_file():
                notes.append(f"the evidence of {position.step} is gone: reject it to rerun the step")
            if tuple(app.get_state(_config(run_id)).next) == _expected_next(position):
                return Repaired(run_id=run_id, outcome="unchanged",
                                detail="; ".join([f"resume state already agrees with the journal: {where}", *notes]))
            _place(app, run, position)
    except HarnessError as exc:
        return Repaired(run_id=run_id, outcome="skipped", detail=str(exc))
    return Repaired(run_id=run_id, outcome="rebuilt",
                    detail="; ".join([f"rebuilt from the journal: {where}", *notes]))


def _describe(position: Position) -> str:
    if position.where == "finished":
        return "finished"
    if position.where == "at_gate":
        return f"waits at the {position.step} gate"
    return f"continues with {position.step or 'its end'} on `harness resume`"


# --------------------------------------------------------------------------- inspecting


def run_status(workspace: Workspace, run_id: str, *, render: bool = False) -> RunView:
    """The run as it stands, with its resume cache inspected and the processes of its steps
    still alive. With `render`, the reports are re-rendered too (unless another process is
    advancing the run: it renders them), so the summary shows what `status` shows."""
    run = workspace.run(run_id)
    inputs = load_inputs(run)
    view = view_of(run, inputs, running=None if run.run_id in _held else busy_by(run))
    view = view.model_copy(update={"resume": resume_view(workspace, run, inputs),
                                   "evidence_root": str(run.reports_dir / "evidence"),
                                   "state_store": state_location(workspace),
                                   "processes": [_process_view(r) for r in ProcessRegistry(run.processes_dir).alive()]})
    if render and view.running is None:
        try:
            _render(run, view)
        except OSError as exc:
            if not is_write_error(exc):
                raise
            # status still says where the run stands; only the report files are behind
            view = view.model_copy(update={"reports_stale": f"could not re-render the reports in {run.reports_dir}: "
                                                            f"{exc.strerror or exc}"})
    return view


def resume_view(workspace: Workspace, run: RunLayout, inputs: RunInputs) -> ResumeView:
    """Whether LangGraph's checkpoint puts the run where its journal says it stands."""
    path = state_location(workspace)
    try:
        with existing_checkpointer(workspace) as saver:
            if saver is None:
                return ResumeView(state="missing", note=f"{path} is missing")
            snapshot = build_graph(run, inputs, lambda m: None).compile(checkpointer=saver).get_state(
                _config(run.run_id))
    except StateUnreadable as exc:
        return ResumeView(state="corrupt", note=f"{path} is corrupt ({exc.problem})")
    if snapshot.created_at is None:
        return ResumeView(state="missing", note=f"{path} holds no checkpoint of this run")
    if tuple(snapshot.next) == _expected_next(run.trajectory().position(SLUGS)):
        return ResumeView(state="ok", note="agrees with the journal")
    return ResumeView(state="stale", note="behind the journal (a process was killed); the next command puts it right")


def _process_view(record: ProcessRecord) -> ProcessView:
    return ProcessView(role=record.role, step=record.step, pid=record.pid, command=record.command,
                       owner_pid=record.owner_pid, owner_running=record.owner_running)


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


def _render(run: RunLayout, view: RunView) -> None:
    for path, text in reports(run, view).items():
        write_atomic(path, text)


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
