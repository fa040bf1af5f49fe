"""The rules of the human gate, in one place: which attempt a step is on, what reason it reruns
with, whether an approval still counts, which decisions a gate takes by itself, and when a
person's decision is refused.

An approval is bound to the hash of the evidence it approved: when the evidence on disk no
longer hashes to it, the approval is invalidated (`status` exits 1, later gates refuse).

Every decision asked of a gate goes through `decide`: `harness approve` / `reject`, `harness
resume` and the graph's gate nodes each gather a `GateRequest` and get back the first refusal of
`GATE_RULES`, consulted in that one order, or else the decision asked for. Every rule is a pure
function of the typed record (`RunView`, `StepRecord`, `GateDecision`, `ResumeView`): it
returns the decision to journal, or a `Refusal` saying why nothing may be decided.
`harness.workflow.runs` raises a refusal as a one-line HarnessError, before anything is
recorded; the LangGraph gate nodes journal what an undecided gate decides by itself.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from typing import Literal

from pydantic import BaseModel, model_validator

from harness.errors import HarnessError
from harness.record.models import (
    GateDecision,
    GateView,
    ResumeView,
    RunView,
    StepRecord,
    StepView,
)

AUTO_APPROVER = "auto-approve"
AUTO_NOTE = "approved automatically (--auto-approve); nobody reviewed this evidence"
INVALIDATED = "approval invalidated: evidence changed"
SENDS_BACK = ("reject", "reopen")

RefusalRule = Literal[
    "control_character",  # --by, --note or --reason would act on a terminal or report
    "record_changed",  # the journal chain, run.json, its runbook or a recipe changed since the start
    "resume_state_gone",  # the state file is unreadable, or a waiting run's checkpoint is missing
    "step_on_approve",  # --step names a step to reopen: reject only
    "not_waiting",  # no gate to decide: the run finished, or stopped mid-step
    "no_decider",  # --by is blank
    "earlier_invalidated",  # an earlier approval no longer covers its evidence
    "evidence_changed",  # the waiting step's evidence changed since the step produced it
    "unusable_input",  # a check did not run because an input is unusable
    "failed_without_override",  # approving failed checks needs --override and a --note saying why
    "no_reason",  # a rejection needs a --reason
    "unknown_step",  # reopening a step the run does not have
    "mid_step",  # reopening while the run stopped mid-step
    "not_approved",  # reopening a step that has no approval
]


class Refusal(BaseModel):
    """Why a gate decision is refused: the rule, and the one line the user reads (with what to
    do instead). Nothing is recorded."""

    rule: RefusalRule
    message: str

    def error(self) -> HarnessError:
        """The refusal as the error the CLI prints (exit 2)."""
        return HarnessError(self.message)


class Reopening(BaseModel):
    """A rejection of an earlier, approved step (`harness reject --step`): the decision to
    journal, and the steps after it that ran (their evidence is superseded, their records reset)."""

    decision: GateDecision
    later: list[StepView]


class PersonDecision(BaseModel):
    """What a person asks of a gate (`harness approve` / `harness reject`): `text` is the note of
    an approval or the reason of a rejection; `step` (`reject --step`) names a step to reopen."""

    approve: bool
    by: str
    text: str | None = None
    step: str | None = None
    override: bool = False  # `approve --override`: approve a step whose checks failed


class UndecidedGate(BaseModel):
    """A gate the graph reached with nothing journaled on the step's current attempt: the step's
    current record, `Step.skip_gate`'s reason (None: there is something to decide) and whether
    the run approves by itself (--auto-approve)."""

    record: StepRecord
    skip: str | None = None
    auto_approve: bool = False


class GateRequest(BaseModel):
    """A decision asked of the gate (`decide`), with what its asker gathered. The askers:
    `harness approve` / `reject` (`asked`: a PersonDecision, with every input below), `harness
    resume` (nothing asked, only whether the run may go on: `record_changed`) and the graph's gate
    node (`asked`: an UndecidedGate, nothing else; the command advancing the graph has checked the
    rest). An input the asker does not have is None, and a rule that reads it does not apply: it
    returns None. ValueError (pydantic's) when a person's decision comes without `view`."""

    run_id: str
    at: str  # UTC: what a decision taken now is stamped with
    asked: PersonDecision | UndecidedGate | None = None
    record_changed: list[str] | None = None  # harness.record.pins.record_changes: one line per change
    resume: ResumeView | None = None  # LangGraph's resume state against the journal
    view: RunView | None = None  # the run as it stands: what a person decides on

    @model_validator(mode="after")
    def _person_decides_on_the_run(self) -> GateRequest:
        if isinstance(self.asked, PersonDecision) and self.view is None:
            raise ValueError("a person's decision needs the run's view")
        return self


# --------------------------------------------------------------------------- where a gate stands


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


# --------------------------------------------------------------------------- what a gate decides by itself


def automatic_decision(record: StepRecord, *, skip: str | None, auto_approve: bool, at: str) -> GateDecision | None:
    """What a gate nobody has decided yet decides by itself, on the step's current `record`:
    a skip when the step has nothing to decide (`skip`: `Step.skip_gate`'s reason; never taken
    as an approval), else an approval under --auto-approve, else None (it waits for a person).
    `at`: the UTC time to stamp it with."""
    if skip is not None:
        return GateDecision(decision="skip", by="harness", at=at, reason=skip,
                            evidence_hash=record.evidence_hash, attempt=record.attempt)
    if auto_approve:
        return GateDecision(decision="approve", by=AUTO_APPROVER, at=at, note=AUTO_NOTE, automatic=True,
                            evidence_hash=record.evidence_hash, attempt=record.attempt)
    return None


# --------------------------------------------------------------------------- when a person's decision is refused


def plain_text(text: str | None, option: str, *, lines: bool) -> Refusal | None:
    """Refuse what a person says at a gate when it would act on a terminal or a report instead of
    reading as text: control characters (terminal escape sequences, carriage returns, bells),
    invisible format characters (bidi overrides, zero-width), and in `--by` any line break or tab
    (it names one person, on one line of `status` and the reports). The refusal names the
    option and the character; newlines and tabs are kept in notes and reasons (`lines`)."""
    for ch in text or "":
        if lines and ch in "\n\t":
            continue
        if unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp"):
            return Refusal(rule="control_character",
                           message=f"{option} holds the control character {ch!r} (U+{ord(ch):04X}): say it in "
                                   f"plain text; nothing was decided")
    return None


def record_refusal(run_id: str, changed: list[str]) -> Refusal | None:
    """Refuse to decide on or advance a run whose record changed since it started (`changed`:
    `harness.record.pins.record_changes`, one line each, first shown)."""
    if not changed:
        return None
    more = f" (and {len(changed) - 1} more change(s): `harness status {run_id}`)" if len(changed) > 1 else ""
    return Refusal(rule="record_changed",
                   message=f"run {run_id}: its record changed: {changed[0]}{more}; nothing was decided")


def resume_state_refusal(run_id: str, resume: ResumeView, *, waiting: bool) -> Refusal | None:
    """A decision needs a readable state file, and a run waiting at a gate (`waiting`) its
    checkpoint: refuse, pointing at `harness repair`, otherwise. A run stopped mid-step is
    `resume`d from the journal, a finished one reopened from it: neither needs the checkpoint."""
    if resume.state == "corrupt" or (resume.state == "missing" and waiting):
        return Refusal(rule="resume_state_gone",
                       message=f"run {run_id}: its resume state is gone ({resume.note}); its sign-off record "
                               f"(journal, evidence, reports) is intact: `harness repair {run_id}` rebuilds the "
                               f"resume state from it")
    return None


def step_refusal(*, approve: bool, step: str | None) -> Refusal | None:
    """`--step` (a step to reopen) goes with a rejection only."""
    if step is not None and approve:
        return Refusal(rule="step_on_approve",
                       message="--step is for reject only: approve decides the gate the run waits at")
    return None


def decision_at_gate(view: RunView, *, approve: bool, by: str, text: str | None, at: str,
                     override: bool = False) -> GateDecision | Refusal:
    """The decision on the gate the run waits at (`text`: the note of an approval, the reason of
    a rejection), or why it is refused: the run waits at no gate, nobody is named, or — for an
    approval — an earlier approval is invalidated, the step's evidence changed since it was
    produced, a check could not run on an unusable input, or the step failed without both
    `override` (`--override`: the person knows they approve failed checks) and a note saying
    why (an `override` of checks that did not fail is not recorded); a rejection needs a reason. `at`:
    the UTC time to stamp it with."""
    run_id = view.run_id
    if view.state != "waiting":
        what = {
            "finished": "it has finished",
            "interrupted": f"it stopped mid-step; `harness resume {run_id}` first",
        }
        return Refusal(rule="not_waiting",
                       message=f"run {run_id} is not waiting at a gate: {what.get(view.state, view.state)}")
    if not by.strip():
        return Refusal(rule="no_decider", message="--by must name who decides")
    step = view.step(view.waiting_at)
    if approve:
        earlier = next((s for s in view.invalidated if s.number < step.number), None)
        if earlier is not None:
            return Refusal(
                rule="earlier_invalidated",
                message=f"run {run_id}: the approval of {earlier.slug} is invalidated (its evidence changed after "
                        f"approval: approved {earlier.gate.evidence_hash}, now {earlier.evidence_hash}); "
                        f"no later gate can be approved until it is resolved: restore its approved evidence, or "
                        f"reject {earlier.slug} to rerun it (harness reject {run_id} --step {earlier.slug} "
                        f"--by NAME --reason TEXT)",
            )
        if step.evidence_changed:
            return Refusal(
                rule="evidence_changed",
                message=f"run {run_id}: evidence of {step.slug} changed since the step produced it; "
                        f"reject it to rerun the step instead of approving altered evidence",
            )
        blocked = next((c for c in step.checks if c.unusable_input), None)
        if blocked is not None:
            return Refusal(
                rule="unusable_input",
                message=f"run {run_id}: {step.slug} cannot be approved: {blocked.name} did not run because an "
                        f"input is unusable ({blocked.reason}); fix the input, then reject the step to rerun it",
            )
        if step.verdict == "failed" and not (override and (text or "").strip()):
            return Refusal(
                rule="failed_without_override",
                message=f"run {run_id}: {step.slug} failed its checks; approving it anyway needs --override and --note "
                        f"saying why (the report marks it \"approved despite failed checks\"), or reject it: "
                        f"harness reject {run_id} --by NAME --reason TEXT",
            )

    elif not (text or "").strip():
        return Refusal(rule="no_reason", message="--reason must say why the step is rejected")
    return GateDecision(
        decision="approve" if approve else "reject",
        by=by.strip(),
        at=at,
        evidence_hash=step.evidence_hash,
        attempt=step.attempt,
        note=(text or None) if approve else None,
        reason=None if approve else text.strip(),
        override=approve and override and step.verdict == "failed",  # recorded only where it overrode something
    )


def reopening(view: RunView, slug: str, *, by: str, reason: str | None, at: str) -> Reopening | Refusal:
    """The rejection of `slug`, an earlier step than the gate the run waits at (or a step of a
    finished run), or why it is refused: no such step, the run stopped mid-step, nobody is named,
    no reason is given, or the step has no approval to take back. `at`: the UTC time to stamp
    it with."""
    run_id = view.run_id
    known = [s.slug for s in view.steps]
    if slug not in known:
        return Refusal(rule="unknown_step", message=f"unknown step {slug!r}; the steps are {', '.join(known)}")
    if view.state not in ("waiting", "finished"):
        return Refusal(rule="mid_step", message=f"run {run_id} stopped mid-step; `harness resume {run_id}` first")
    if not by.strip():
        return Refusal(rule="no_decider", message="--by must name who decides")
    if not (reason or "").strip():
        return Refusal(rule="no_reason", message="--reason must say why the step is rejected")
    index = known.index(slug)
    target = view.steps[index]
    if target.gate.decision != "approve":
        return Refusal(rule="not_approved",
                       message=f"run {run_id}: {slug} has no approval to reject; only an approved step behind the "
                               f"gate the run waits at can be reopened")
    decision = GateDecision(decision="reopen", by=by.strip(), at=at, evidence_hash=target.evidence_hash,
                            attempt=target.attempt, reason=reason.strip())
    return Reopening(decision=decision, later=[s for s in view.steps[index + 1:] if s.attempt is not None])


# --------------------------------------------------------------------------- the one sequence


def by_is_plain_text(request: GateRequest) -> Refusal | None:
    """A person's `--by` is plain text on one line (`plain_text`)."""
    if not isinstance(request.asked, PersonDecision):
        return None
    return plain_text(request.asked.by, "--by", lines=False)


def text_is_plain_text(request: GateRequest) -> Refusal | None:
    """A person's `--note` (approve) or `--reason` (reject) is plain text; its lines are kept."""
    asked = request.asked
    if not isinstance(asked, PersonDecision):
        return None
    return plain_text(asked.text, "--note" if asked.approve else "--reason", lines=True)


def record_unchanged(request: GateRequest) -> Refusal | None:
    """The run's record is what it was when the run started (`record_refusal`)."""
    if request.record_changed is None:
        return None
    return record_refusal(request.run_id, request.record_changed)


def resume_state_readable(request: GateRequest) -> Refusal | None:
    """The resume state is readable, and holds the checkpoint of a run that waits at a gate
    (`resume_state_refusal`)."""
    if request.resume is None:
        return None
    waiting = request.view is not None and request.view.state == "waiting"
    return resume_state_refusal(request.run_id, request.resume, waiting=waiting)


def step_with_reject_only(request: GateRequest) -> Refusal | None:
    """A person's `--step` goes with a rejection (`step_refusal`)."""
    if not isinstance(request.asked, PersonDecision):
        return None
    return step_refusal(approve=request.asked.approve, step=request.asked.step)


GateRule = Callable[[GateRequest], Refusal | None]

# The one order, for every asker (docs/runs.md lists it): what a person says, then whether the
# run's record and resume state allow a decision at all, then whether the options go together;
# the decision itself (its own refusals in `decision_at_gate` and `reopening`) comes last.
GATE_RULES: list[GateRule] = [
    by_is_plain_text,
    text_is_plain_text,
    record_unchanged,
    resume_state_readable,
    step_with_reject_only,
]


def decide(request: GateRequest) -> GateDecision | Reopening | Refusal | None:
    """The gate's answer to `request`: the first refusal of `GATE_RULES`, consulted in order,
    else what was asked decided —
    - a person's decision: the reopening of `step` when a rejection names a step other than the
      one the run waits at (`reopening`), else the decision at the waiting gate
      (`decision_at_gate`); either may still be a Refusal;
    - an undecided gate of the graph: `automatic_decision` (None: it waits for a person);
    - nothing asked (`harness resume`): None, the run may go on."""
    for rule in GATE_RULES:
        refusal = rule(request)
        if refusal is not None:
            return refusal
    asked, view = request.asked, request.view
    if isinstance(asked, UndecidedGate):
        return automatic_decision(asked.record, skip=asked.skip, auto_approve=asked.auto_approve, at=request.at)
    if asked is None:
        return None
    assert view is not None  # GateRequest refuses a person's decision without one
    if asked.step is not None and not asked.approve and asked.step != view.waiting_at:
        return reopening(view, asked.step, by=asked.by, reason=asked.text, at=request.at)
    return decision_at_gate(view, approve=asked.approve, by=asked.by, text=asked.text, at=request.at, override=asked.override)
