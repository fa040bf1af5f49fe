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
    commit_done     the commit an approval owed was made: `commit` (its sha) or `error`
                    (step, attempt)

An approval of a step whose agent drafted in a sandbox carries `commit: "pending"`: the commit
of the approved patch is owed from the moment the decision is on disk, and the next command that
advances the run makes it (`Trajectory.commits_owed`) if a kill came first.

Chaining (runs started since it exists; run.json says `"journal": "chained"`): every line
carries `prev`, the sha256 (hex) of the bytes of the line before it ("" on the first line), so an
edited, removed or inserted line, or an appended one not written by harness, breaks the chain;
`run_started` pins run.json, the runbook and its recipes by content (`harness.record.pins`).
A journal without chain fields whose run.json does not say chained is a legacy journal, read as
before. A kill can leave a torn last line; the next line's `prev` covers it.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from harness.record.models import GateDecision, StepRecord

STEP_RECORD_EVENTS = ("step_finished", "step_reused")
DECISION_EVENTS = ("approve", "reject", "reopen", "skip")
PASSES = ("approve", "skip")  # decisions that let the run go on
COMMIT_PENDING = "pending"  # an approval's `commit` field: its commit is owed


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
    torn_lines: int = 0  # journal lines skipped: torn by a kill mid-write, or not events
    broken: str | None = None  # a chained journal: where its chain breaks (the lines before it are folded)
    # approvals whose commit is owed: step -> the approval (its attempt), until a commit_done
    commits_owed: dict[str, GateDecision] = Field(default_factory=dict)

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


def decision_event(decision: GateDecision, slug: str, reset: list[str] | None = None,
                   commit_owed: bool = False) -> dict[str, Any]:
    """The fields of an approve / reject / reopen line (`reset`: the later steps a reopening
    sends back to not-run; `commit_owed`: the approval owes the commit of a drafted patch)."""
    fields: dict[str, Any] = {"step": slug, **decision.model_dump(mode="json", exclude={"decision"})}
    if reset is not None:
        fields["reset"] = reset
    if commit_owed:
        fields["commit"] = COMMIT_PENDING
    return fields


def fold(events: list[Any], torn_lines: int = 0, broken: str | None = None) -> Trajectory:
    """The trajectory of journal events (oldest first); `torn_lines` and `broken` are carried
    along. A line that is not a well-formed event (no step name, missing fields) is skipped and
    counted with the torn ones: it must not stop a command from reading the rest."""
    trajectory = Trajectory(torn_lines=torn_lines, broken=broken)
    for event in events:
        try:
            _apply(trajectory, event)
        except (KeyError, TypeError, ValueError):  # pydantic's ValidationError is a ValueError
            trajectory.torn_lines += 1
    return trajectory


def _apply(trajectory: Trajectory, event: Any) -> None:
    kind = event.get("event") if isinstance(event, dict) else None
    if kind in STEP_RECORD_EVENTS:
        slug = _slug(event)
        record = StepRecord.model_validate(event)
        previous = trajectory.records.get(slug)
        # A re-executed node finding the same attempt complete on disk changes nothing that
        # was decided on it; any other record is new evidence, undecided so far.
        if not (kind == "step_reused" and previous is not None and previous.attempt == record.attempt):
            trajectory.since[slug] = []
        trajectory.records[slug] = record
    elif kind in DECISION_EVENTS:
        slug = _slug(event)
        decision = GateDecision.model_validate({**event, "decision": kind})
        reset = event.get("reset", [])
        if not isinstance(reset, list) or not all(isinstance(later, str) for later in reset):
            raise ValueError("reset is not a list of step names")
        trajectory.history.setdefault(slug, []).append(decision)
        trajectory.since.setdefault(slug, []).append(decision)
        if kind == "approve" and event.get("commit") == COMMIT_PENDING:
            trajectory.commits_owed[slug] = decision
        if kind == "reopen":
            for later in reset:
                trajectory.records[later] = None
                trajectory.since[later] = []
            trajectory.finished_at = None
    elif kind == "commit_done":
        owed = trajectory.commits_owed.get(_slug(event))
        if owed is not None and owed.attempt == event.get("attempt"):
            del trajectory.commits_owed[event["step"]]
    elif kind == "run_finished":
        if not isinstance(event.get("at"), str):
            raise ValueError("run_finished without a time")
        trajectory.finished_at = event["at"]


def _slug(event: dict[str, Any]) -> str:
    slug = event["step"]
    if not isinstance(slug, str):
        raise TypeError("step is not a name")
    return slug
