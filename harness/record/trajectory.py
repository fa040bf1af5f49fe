"""A run's trajectory: what happened, in order, as typed lines of its journal
(`.harness/runs/<run-id>/journal.jsonl`, append-only, fsynced).

`run.json` (the inputs) plus this journal plus the evidence tree is what `status` and the
reports are built from. The journal alone says where the run stands (`Trajectory.position`):
LangGraph's sqlite store is only a resume cache of that, rebuilt from here when it is lost.

    run_started     the run was created
    step_started    an attempt began            (step, attempt)
    step_finished   an attempt's evidence is complete: its StepRecord
    step_reused     a re-executed node found its attempt complete on disk: its StepRecord
    approve         a GateDecision
    reject          a GateDecision (the step reruns)
    reopen          a GateDecision on an earlier, approved step, and the later steps it resets
    skip            a GateDecision: the harness passed a gate with nothing to decide (its reason)
    run_finished    every gate was approved
    run_resumed     a process continued a run a killed one left mid-step
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from harness.record.models import GateDecision, StepRecord

STEP_RECORD_EVENTS = ("step_finished", "step_reused")
DECISION_EVENTS = ("approve", "reject", "reopen", "skip")
PASSES = ("approve", "skip")  # decisions that let the run go on


Where = Literal["finished", "at_gate", "to_run"]


class Position(BaseModel):
    """Where a run stands by its journal: `finished`; `at_gate` of `step` (its current attempt
    finished and nobody decided on it yet); or `to_run` `step` (it has no finished attempt, or
    its last one was sent back; `step` None: every gate approved, the end not yet journaled)."""

    where: Where
    step: str | None = None


class Trajectory(BaseModel):
    """The journal folded: each step's current record and its decisions, and whether the run
    finished (after its last reopening)."""

    records: dict[str, StepRecord | None] = Field(default_factory=dict)
    history: dict[str, list[GateDecision]] = Field(default_factory=dict)
    # decisions journaled after the step's current record: the ones taken on its evidence
    since: dict[str, list[GateDecision]] = Field(default_factory=dict)
    finished_at: str | None = None
    torn_lines: int = 0  # journal lines a kill tore mid-write (skipped)

    def record(self, slug: str) -> StepRecord | None:
        return self.records.get(slug)

    def decisions(self, slug: str) -> list[GateDecision]:
        return self.history.get(slug, [])

    def decision(self, slug: str) -> GateDecision | None:
        """The latest decision on the step's current attempt, or None when nobody has decided
        on it (an approval of an earlier attempt, or of evidence a reopening replaced, is not
        one)."""
        if self.records.get(slug) is None:
            return None
        current = self.since.get(slug, [])
        return current[-1] if current else None

    def position(self, slugs: list[str]) -> Position:
        """Where the run stands, for the steps `slugs` in workflow order."""
        if self.finished_at:
            return Position(where="finished")
        for slug in slugs:
            if self.record(slug) is None:
                return Position(where="to_run", step=slug)
            decision = self.decision(slug)
            if decision is None:
                return Position(where="at_gate", step=slug)
            if decision.decision not in PASSES:
                return Position(where="to_run", step=slug)
        return Position(where="to_run")


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


def fold(events: list[dict[str, Any]], torn_lines: int = 0) -> Trajectory:
    """The trajectory of journal events (oldest first); `torn_lines` is carried along."""
    trajectory = Trajectory(torn_lines=torn_lines)
    for event in events:
        kind = event.get("event")
        if kind in STEP_RECORD_EVENTS:
            slug = event["step"]
            record = StepRecord.model_validate(event)
            previous = trajectory.records.get(slug)
            # A re-executed node finding the same attempt complete on disk changes nothing that
            # was decided on it; any other record is new evidence, undecided so far.
            if not (kind == "step_reused" and previous is not None and previous.attempt == record.attempt):
                trajectory.since[slug] = []
            trajectory.records[slug] = record
        elif kind in DECISION_EVENTS:
            slug = event["step"]
            decision = GateDecision.model_validate({**event, "decision": kind})
            trajectory.history.setdefault(slug, []).append(decision)
            trajectory.since.setdefault(slug, []).append(decision)
            if kind == "reopen":
                for later in event.get("reset", []):
                    trajectory.records[later] = None
                    trajectory.since[later] = []
                trajectory.finished_at = None
        elif kind == "run_finished":
            trajectory.finished_at = event["at"]
    return trajectory
