"""A run's trajectory: what happened, in order, as typed lines of its journal
(`.harness/runs/<run-id>/journal.jsonl`, append-only, fsynced).

`run.json` (the inputs) plus this journal plus the evidence tree is what `status` and the
reports are built from; LangGraph's sqlite store only says where the graph stands (which gate
it waits at) so it can resume.

    run_started     the run was created
    step_started    an attempt began            (step, attempt)
    step_finished   an attempt's evidence is complete: its StepRecord
    step_reused     a re-executed node found its attempt complete on disk: its StepRecord
    approve         a GateDecision
    reject          a GateDecision (the step reruns)
    reopen          a GateDecision on an earlier, approved step, and the later steps it resets
    run_finished    every gate was approved
    run_resumed     a process continued a run a killed one left mid-step
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from harness.record.models import GateDecision, StepRecord

STEP_RECORD_EVENTS = ("step_finished", "step_reused")
DECISION_EVENTS = ("approve", "reject", "reopen")


class Trajectory(BaseModel):
    """The journal folded: each step's current record and its decisions, and whether the run
    finished (after its last reopening)."""

    records: dict[str, StepRecord | None] = Field(default_factory=dict)
    history: dict[str, list[GateDecision]] = Field(default_factory=dict)
    finished_at: str | None = None

    def record(self, slug: str) -> StepRecord | None:
        return self.records.get(slug)

    def decisions(self, slug: str) -> list[GateDecision]:
        return self.history.get(slug, [])


def step_event(record: StepRecord, slug: str) -> dict[str, Any]:
    """The fields of a step_finished / step_reused line."""
    return {"step": slug, **record.model_dump(mode="json")}


def decision_event(decision: GateDecision, slug: str, reset: list[str] | None = None) -> dict[str, Any]:
    """The fields of an approve / reject / reopen line (`reset`: the later steps a reopening
    sends back to not-run)."""
    fields: dict[str, Any] = {"step": slug, **decision.model_dump(mode="json", exclude={"decision"})}
    if reset is not None:
        fields["reset"] = reset
    return fields


def fold(events: list[dict[str, Any]]) -> Trajectory:
    """The trajectory of journal events (oldest first)."""
    trajectory = Trajectory()
    for event in events:
        kind = event.get("event")
        if kind in STEP_RECORD_EVENTS:
            trajectory.records[event["step"]] = StepRecord.model_validate(event)
        elif kind in DECISION_EVENTS:
            decision = GateDecision.model_validate({**event, "decision": kind})
            trajectory.history.setdefault(event["step"], []).append(decision)
            if kind == "reopen":
                for slug in event.get("reset", []):
                    trajectory.records[slug] = None
                trajectory.finished_at = None
        elif kind == "run_finished":
            trajectory.finished_at = event["at"]
    return trajectory
