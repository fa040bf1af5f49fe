"""LangGraph's resume state, kept where the journal says each run stands.

Where a run stands is read from its journal (`Trajectory.position`); LangGraph's checkpoint is
only a resume cache of that. A killed process can leave the checkpoint behind the journal, a
lost or corrupt state file leaves none: `catch_up` puts the graph back where the journal says
before a command advances it, `resume_view` says whether the two agree, and `repair` rebuilds
the checkpoints from the journals. Nothing here changes a run's record.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from langgraph.types import Command
from pydantic import BaseModel

from harness.errors import HarnessError
from harness.record.layout import RunLayout, Workspace
from harness.record.models import ResumeView, RunInputs
from harness.record.pins import record_changes
from harness.record.trajectory import Position
from harness.steps import WORKFLOW
from harness.workflow.checkpointer import (
    StateUnreadable,
    existing_checkpointer,
    move_aside,
    open_checkpointer,
    state_location,
)
from harness.workflow.graph import build_graph, gate_name
from harness.workflow.lock import exclusive
from harness.workflow.views import SLUGS, load_inputs


def config(run_id: str) -> dict:
    """LangGraph's config for the run: its checkpoint thread is the run id."""
    return {"configurable": {"thread_id": run_id}}


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
    cfg = config(run.run_id)
    if position.where == "finished":
        app.update_state(cfg, {"run_id": run.run_id}, as_node="done")
    elif position.step is None:
        app.update_state(cfg, Command(goto="done"), as_node=gate_name(WORKFLOW[-1]))
    else:
        step = WORKFLOW[SLUGS.index(position.step)]
        if position.where == "at_gate":
            app.update_state(cfg, {"run_id": run.run_id}, as_node=step.name)
        else:
            app.update_state(cfg, Command(goto=step.name), as_node=gate_name(step))


def catch_up(run: RunLayout, inputs: RunInputs) -> None:
    """Put the graph where the journal says, if a killed process left its checkpoint behind."""
    with open_checkpointer(run.workspace) as saver:
        app = build_graph(run, inputs, lambda m: None).compile(checkpointer=saver)
        position = run.trajectory().position(SLUGS)
        if tuple(app.get_state(config(run.run_id)).next) != _expected_next(position):
            _place(app, run, position)


def resume_view(workspace: Workspace, run: RunLayout, inputs: RunInputs) -> ResumeView:
    """Whether LangGraph's checkpoint puts the run where its journal says it stands."""
    path = state_location(workspace)
    try:
        with existing_checkpointer(workspace) as saver:
            if saver is None:
                return ResumeView(state="missing", note=f"{path} is missing")
            snapshot = build_graph(run, inputs, lambda m: None).compile(checkpointer=saver).get_state(
                config(run.run_id))
    except StateUnreadable as exc:
        return ResumeView(state="corrupt", note=f"{path} is corrupt ({exc.problem})")
    if snapshot.created_at is None:
        return ResumeView(state="missing", note=f"{path} holds no checkpoint of this run")
    if tuple(snapshot.next) == _expected_next(run.trajectory().position(SLUGS)):
        return ResumeView(state="ok", note="agrees with the journal")
    return ResumeView(state="stale", note="behind the journal (a process was killed); the next command puts it right")


# --------------------------------------------------------------------------- repair


class Repaired(BaseModel):
    """What `repair` did for one run: `rebuilt`, `unchanged` (the resume state already agreed
    with the journal), `skipped` (another process advances it) or `failed` (what cannot be
    rebuilt, and why)."""

    run_id: str
    outcome: Literal["rebuilt", "unchanged", "skipped", "failed"]
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
        with exclusive(run), open_checkpointer(workspace) as saver:
            app = build_graph(run, inputs, lambda m: None).compile(checkpointer=saver)
            trajectory = run.trajectory()
            position = trajectory.position(SLUGS)
            where = _describe(position)
            notes = [f"{trajectory.torn_lines} torn journal line(s) ignored"] if trajectory.torn_lines else []
            if position.where == "at_gate" and not (run.evidence_dir(position.step) / "step.json").is_file():
                notes.append(f"the evidence of {position.step} is gone: reject it to rerun the step")
            if tuple(app.get_state(config(run_id)).next) == _expected_next(position):
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
