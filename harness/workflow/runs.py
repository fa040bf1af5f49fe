"""Start, decide, resume and inspect runs: what the CLI commands call.

Each call that advances a run takes the run's lock (`harness.workflow.lock`), puts the graph
where the journal says the run stands when a killed process left the checkpoint behind
(`harness.workflow.resume`), advances it as far as it goes (to the next gate, or the end), then
re-renders the reports from the run's files (`harness.workflow.views`). Whether a decision is
allowed, and what is journaled, is decided by the gate (`harness.record.gates.decide`, its rules
in one order) on the inputs gathered here; nothing is recorded when it refuses. A lost or
unreadable state file changes no report; `repair` rebuilds it from the journals.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from langgraph.types import Command

from harness.errors import HarnessError
from harness.knowledge.products import FeatureSpec, resolve
from harness.record import gates
from harness.record.layout import RunLayout, Workspace, utc_now
from harness.record.models import AgentSettings, GateDecision, RunInputs, RunView
from harness.record.pins import (
    RUN_JSON,
    content_pin,
    file_pins,
    pin_of,
    record_changes,
    verify_pins,
)
from harness.record.processes import ProcessRegistry
from harness.record.trajectory import decision_event
from harness.util.files import ensure_writable, is_write_error, write_atomic
from harness.workflow.checkpointer import open_checkpointer, state_location
from harness.workflow.graph import build_graph, commit_owed, settle_commits
from harness.workflow.lock import busy_by, exclusive, holds
from harness.workflow.resume import catch_up, config, resume_view
from harness.workflow.views import RUNBOOK_ATTACHED, load_inputs, process_view, view_of, write_reports

Progress = Callable[[str], None]


def new_inputs(run_id: str, feature: FeatureSpec, plugin: Path, upstream: str, from_upstream: str | None, *,
               plugin_commit: str | None, runbook: Path | None, agent: AgentSettings | None,
               auto_approve: bool = False, notes: list[str] | None = None) -> RunInputs:
    """A new run's inputs (its run.json), stamped now: `plugin` and `runbook` as absolute paths,
    each upstream spec as given, pinned to what it resolves to (resolved once per process: the
    caller has usually resolved it already), so later commands can tell when it changes
    (`harness.record.pins`). The one place `run` and `upgrade` build them. HarnessError when a
    spec does not resolve."""
    return RunInputs(
        run_id=run_id,
        feature=feature,
        plugin=str(plugin),
        plugin_commit=plugin_commit,
        upstream=upstream,
        from_upstream=from_upstream,
        upstream_pin=pin_of(resolve(upstream)),
        from_pin=pin_of(resolve(from_upstream)) if from_upstream else None,
        runbook=str(runbook) if runbook else None,
        auto_approve=auto_approve,
        agent=agent,
        notes=notes or [],
        created_at=utc_now(),
    )


def _advance(run: RunLayout, inputs: RunInputs, payload: Any, progress: Progress, *, place: bool = True) -> RunView:
    """Advance the graph with `payload`, then render the reports. With `place`, the graph is
    first put where the journal says the run stands, if its checkpoint is elsewhere (left
    behind by a killed process, lost, or ahead of a reopening)."""
    with exclusive(run):
        if place:
            catch_up(run, inputs)
        _invoke(run, inputs, payload, progress)
        view = view_of(run, inputs)
    write_reports(run, view)
    return view


def _invoke(run: RunLayout, inputs: RunInputs, payload: Any, progress: Progress) -> None:
    with open_checkpointer(run.workspace) as saver:
        app = build_graph(run, inputs, progress).compile(checkpointer=saver)
        # durability="sync": a step's checkpoint is on disk before the next node starts.
        app.invoke(payload, config(run.run_id), durability="sync")


def _writable(workspace: Workspace, run_id: str) -> None:
    """Refuse before anything is recorded when the run's state or reports cannot be written."""
    run = workspace.run(run_id)
    ensure_writable(run.run_dir, "the run's state")
    ensure_writable(run.reports_dir, "the run's reports")


def _consult(request: gates.GateRequest) -> GateDecision | gates.Reopening | None:
    """What the gate decides on `request` (`harness.record.gates.decide`: its rules in their one
    order, then the decision). HarnessError (one line) when a rule refuses: nothing is recorded."""
    outcome = gates.decide(request)
    if isinstance(outcome, gates.Refusal):
        raise outcome.error()
    return outcome


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


def attach_runbook(run: RunLayout, inputs: RunInputs, runbook: Path | None) -> RunInputs:
    """`inputs` with `runbook` (a Validation Runbook given to `approve` / `resume` / `upgrade` for a
    run started without one), journaled as one `runbook_attached` line that pins it and its
    recipes like the start pins its own (harness.record.pins): steps that have not run yet use
    it. The same runbook again changes nothing. HarnessError (one line, nothing recorded) for a
    runbook that does not load, or a run that already has another (what steps ran with cannot
    change mid-run)."""
    from harness.evidence.runbook import load_runbook  # cost: the evidence models

    if runbook is None:
        return inputs
    path = str(Path(runbook).resolve())
    if inputs.runbook == path:
        return inputs
    if inputs.runbook is not None:
        raise HarnessError(f"run {inputs.run_id} already has the runbook {inputs.runbook}: what its steps ran with "
                           f"cannot change mid-run; start a new run to use {path}")
    load_runbook(path)  # a malformed runbook is refused (file:line) before anything is recorded
    given = inputs.model_copy(update={"runbook": path})
    run.log(RUNBOOK_ATTACHED, runbook=path, pins=file_pins(_decisive_files(given)))
    return given


def check_workspace(workspace: Workspace, run_id: str | None = None) -> None:
    """What `run` needs before it records anything: the state and reports dirs (the run's,
    given `run_id`) are writable and the state file is readable. HarnessError (one line)
    otherwise."""
    if run_id is None:
        ensure_writable(workspace.runs_dir, "run state")
        if workspace.root.is_dir():  # else ensure_writable says what is wrong with it
            with contextlib.suppress(OSError):
                workspace.make_reports_dir()
        ensure_writable(workspace.root / "reports", "reports")
    else:
        _writable(workspace, run_id)
    with open_checkpointer(workspace):
        pass


def resume_run(workspace: Workspace, run_id: str, progress: Progress = lambda m: None, runbook: Path | None = None) -> RunView:
    """Continue a run a killed process left mid-step, from where its journal says it stands (a
    lost resume cache is rebuilt on the way); a run at a gate or finished is returned as is.
    HarnessError (one line, nothing recorded) when its record changed since it started: its
    journal's chain is broken, or run.json, its runbook or a recipe is not what was pinned.
    `runbook`: for a run started without one (attach_runbook), used by the steps still to run."""
    run = workspace.run(run_id)
    inputs = load_inputs(run)
    with exclusive(run):
        _consult(gates.GateRequest(run_id=run_id, at=utc_now(), record_changed=record_changes(run)))
        if runbook is not None:
            _writable(workspace, run_id)
            inputs = attach_runbook(run, inputs, runbook)
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
    override: bool = False,
    runbook: Path | None = None,
    progress: Progress = lambda m: None,
) -> RunView:
    """Approve or reject the gate the run waits at; then advance to the next gate. A rejection
    may name an earlier, already approved `step` instead (a reopening): that step reruns, and
    every step after it runs again once it is approved. `runbook`: for a run started without one,
    the Validation Runbook the steps still to run use (attach_runbook). HarnessError on a decision the run's
    state does not allow (with what to do instead; `harness.record.gates`), and before anything
    is recorded when the run cannot be written or its resume state is gone (`harness repair`)."""
    run = workspace.run(run_id)
    inputs = load_inputs(run)
    with exclusive(run):
        view = view_of(run, inputs)
        resume = resume_view(workspace, run, inputs)
        outcome = _consult(gates.GateRequest(
            run_id=run_id, at=utc_now(), asked=gates.PersonDecision(approve=approve, by=by, text=text, step=step, override=override),
            record_changed=view.record_changed, resume=resume, view=view))
        # only what the gate allows gets this far: a refused decision writes nothing, not even a commit
        _writable(workspace, run_id)
        inputs = attach_runbook(run, inputs, runbook)  # before the decision: the next step runs with it
        settle_commits(run)  # an earlier approval's commit a kill cut off comes first
        if isinstance(outcome, gates.Reopening):
            return _reopen_locked(run, inputs, step, outcome, progress)
        assert isinstance(outcome, GateDecision)  # a person is answered a decision or a refusal
        return _decide_locked(run, inputs, view.waiting_at, outcome, progress)


def _reopen_locked(run: RunLayout, inputs: RunInputs, slug: str, reopening: gates.Reopening,
                   progress: Progress) -> RunView:
    """Reject `slug`, an approved step behind the gate the run waits at (or of a finished run),
    as the gate decided (`reopening`)."""
    verify_pins(inputs)
    # Evidence first, state second: a kill in between leaves state that the same command redoes,
    # never later steps whose stale evidence a rerun would reuse.
    for step in reopening.later:
        evidence = run.evidence_dir(step.slug)
        if evidence.exists():
            run.superseded_dir.mkdir(parents=True, exist_ok=True)
            n = 1
            while (run.superseded_dir / f"{step.slug}.attempt-{step.attempt}.reopened-{n}").exists():
                n += 1
            os.rename(evidence, run.superseded_dir / f"{step.slug}.attempt-{step.attempt}.reopened-{n}")
        run.step_report(step.slug).unlink(missing_ok=True)
    decision = reopening.decision
    # The later steps keep their decisions; reset, they have no record until they run again, so
    # their gates show nothing (harness.record.gates.gate_view). The graph follows the journal.
    run.log(decision.decision, **decision_event(decision, slug, reset=[s.slug for s in reopening.later]))
    return _advance(run, inputs, None, progress)


def _decide_locked(run: RunLayout, inputs: RunInputs, slug: str, decision: GateDecision,
                   progress: Progress) -> RunView:
    """Journal the decision on `slug`, the gate the run waits at, as the gate decided it."""
    verify_pins(inputs)  # before the decision is recorded: the next step reads the upstreams
    catch_up(run, inputs)  # the graph waits at this gate before the decision moves it on
    # the record first, the graph second: an approval owing a commit says so, so a kill before
    # the commit leaves it owed to the next command (graph.settle_commits)
    owed = decision.decision == "approve" and commit_owed(run, slug, decision.attempt)
    run.log(decision.decision, **decision_event(decision, slug, commit_owed=owed))
    return _advance(run, inputs, Command(resume=decision.model_dump(mode="json")), progress, place=False)


def run_status(workspace: Workspace, run_id: str, *, render: bool = False) -> RunView:
    """The run as it stands, with its resume cache inspected and the processes of its steps
    still alive. With `render`, the reports are re-rendered too (unless another process is
    advancing the run: it renders them), so the summary shows what `status` shows."""
    run = workspace.run(run_id)
    inputs = load_inputs(run)
    view = view_of(run, inputs, running=None if holds(run) else busy_by(run))
    view = view.model_copy(update={"resume": resume_view(workspace, run, inputs),
                                   "evidence_root": str(run.reports_dir / "evidence"),
                                   "state_store": state_location(workspace),
                                   "processes": [process_view(r) for r in ProcessRegistry(run.processes_dir).alive()]})
    if render and view.running is None:
        try:
            write_reports(run, view)
        except OSError as exc:
            if not is_write_error(exc):
                raise
            # status still says where the run stands; only the report files are behind
            view = view.model_copy(update={"reports_stale": f"could not re-render the reports in {run.reports_dir}: "
                                                            f"{exc.strerror or exc}"})
    return view
