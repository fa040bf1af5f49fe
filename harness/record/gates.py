"""The rules of the human gate, in one place: which attempt a step is on, what reason it reruns
with, and whether an approval still counts.

An approval is bound to the hash of the evidence it approved: when the evidence on disk no
longer hashes to it, the approval is invalidated (`status` exits 1, later gates refuse).
"""

from __future__ import annotations

from harness.record.models import GateDecision, GateView, StepRecord

AUTO_APPROVER = "auto-approve"
AUTO_NOTE = "approved automatically (--auto-approve); nobody reviewed this evidence"
INVALIDATED = "approval invalidated: evidence changed"
SENDS_BACK = ("reject", "reopen")


def attempt_of(history: list[GateDecision]) -> int:
    """A step's attempt number: one more than the times it was sent back."""
    return 1 + sum(1 for d in history if d.decision in SENDS_BACK)


def last_rejection(history: list[GateDecision]) -> GateDecision | None:
    """The latest decision that sent the step back (its reason goes into the rerun)."""
    return next((d for d in reversed(history) if d.decision in SENDS_BACK), None)


def gate_view(history: list[GateDecision], current: GateDecision | None, record: StepRecord | None,
              evidence_hash: str | None, waiting: bool) -> GateView:
    """Where a step's gate stands, given its decisions (oldest first), the latest decision on
    its current attempt (`Trajectory.decision`), the step's current record (None: not run in
    the current pass, e.g. reset by a reopened earlier step), the evidence hash on disk now, and
    whether the run waits at this gate."""
    if waiting:
        return GateView(decision="pending", label="waiting for review")
    if record is None:
        return GateView(decision="none")
    if current is None:
        sent_back = last_rejection(history)
        if sent_back is not None and record.attempt > sent_back.attempt:  # rerun; its gate decides it
            return GateView(decision="pending", label="pending (rerun after rejection)")
        return GateView(decision="none")
    fields = current.model_dump(exclude={"decision"})
    if current.decision == "skip":
        return GateView(decision="skip", **fields, label=f"skipped: {current.reason or ''}")
    if current.decision in SENDS_BACK:
        return GateView(decision=current.decision, **fields, label=f"rejected: {current.reason or ''}")
    valid = current.evidence_hash == evidence_hash
    label = INVALIDATED if not valid else "approved (automatic)" if current.automatic else "approved"
    return GateView(decision="approve", valid=valid, **fields, label=label)
