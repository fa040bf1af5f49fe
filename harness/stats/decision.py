"""What the accuracy rule concludes: the result model (written as gate.json), its one builder,
and the one-line summary every result carries.

Kept apart from the tests that fill it (`harness.stats.proportions`, `harness.stats.sequential`)
so those and the rule that picks between them (`harness.stats.accuracy`) share one result type.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from harness.errors import HarnessError

Outcome = Literal["passed", "failed", "inconclusive"]
Spending = Literal["obrien-fleming", "pocock"]

DEFAULT_MARGIN = 0.02
DEFAULT_ALPHA = 0.05
# Power used only for the "about K more questions" suggestion of an inconclusive result.
SUGGESTION_POWER = 0.8


class SequentialState(BaseModel):
    """Where a group-sequential decision stands (see `harness.stats.sequential`)."""

    looks: list[int]  # planned cumulative numbers of questions
    boundaries: list[float]  # |z| needed to stop at each look
    spending: Spending
    look: int  # 1-based index of the look this result was taken at
    z: float  # score statistic at that look (positive favours non-inferiority)
    next_look: int | None = None  # questions needed for the next look, if undecided


class AccuracyDecision(BaseModel):
    """What the decision rule concluded, with every number behind it (written as gate.json).

    Accuracies, differences, bounds and the margin are fractions in [0, 1] (or [-1, 1] for
    differences); `n` counts questions."""

    outcome: Outcome
    rule: str
    paired: bool
    n: int  # candidate questions (and baseline questions when paired)
    baseline_n: int
    baseline_correct: int
    candidate_correct: int
    losses: int | None = None  # paired: baseline right, candidate wrong
    wins: int | None = None  # paired: baseline wrong, candidate right
    baseline_accuracy: float
    candidate_accuracy: float
    difference: float  # candidate − baseline
    ci_low: float  # one-sided (1 − alpha) bounds, i.e. a two-sided (1 − 2·alpha) interval
    ci_high: float
    ci_level: float
    margin: float
    alpha: float
    p_non_inferior: float  # H0: difference ≤ −margin; small → passed
    p_drop: float  # H0: difference ≥ −margin; small → failed
    more_questions: int | None = None  # inconclusive: about this many more would decide it
    vacuous: str | None = None  # why the metric measured nothing (then never passed)
    sequential: SequentialState | None = None
    summary: str = ""


def check_parameters(margin: float, alpha: float) -> None:
    """HarnessError unless 0 ≤ margin < 1 and 0 < alpha < 0.5."""
    if not 0 <= margin < 1:
        raise HarnessError(f"accuracy margin must be in [0, 1), got {margin}")
    if not 0 < alpha < 0.5:
        raise HarnessError(f"accuracy alpha must be in (0, 0.5), got {alpha}")


def outcome_of(p_non_inferior: float, p_drop: float, alpha: float) -> Outcome:
    """passed when non-inferiority is shown at `alpha`, failed when a drop beyond the margin is,
    else inconclusive."""
    if p_non_inferior <= alpha:
        return "passed"
    if p_drop <= alpha:
        return "failed"
    return "inconclusive"


def _points(fraction: float) -> str:
    return f"{100 * fraction:+.1f}" if fraction else "0.0"


def decision(*, outcome: Outcome, vacuous: str | None = None, **fields) -> AccuracyDecision:
    """The one result builder: applies the vacuity rule (a measurement of nothing is never
    `passed`, and more questions will not help it) and writes the one-line summary."""
    if vacuous is not None:
        if outcome == "passed":
            outcome = "inconclusive"
        fields["more_questions"] = None
    result = AccuracyDecision(outcome=outcome, vacuous=vacuous, **fields)
    result.summary = _summary(result)
    return result


def _summary(result: AccuracyDecision) -> str:
    pct = _points
    head = (
        f"{result.outcome}: candidate {result.candidate_accuracy:.3f} vs baseline {result.baseline_accuracy:.3f} "
        f"(Δ {pct(result.difference)} points, "
        f"{100 * result.ci_level:.3g}% CI [{pct(result.ci_low)}, {pct(result.ci_high)}]) "
        f"on n={result.n}"
    )
    if result.paired:
        head += f", {result.losses} lost / {result.wins} gained questions"
    head += f"; margin {100 * result.margin:.1f} points, alpha {result.alpha}; rule: {result.rule}."
    if result.vacuous is not None:
        return head + f" This cannot certify the port: {result.vacuous}."
    if result.outcome == "inconclusive":
        if result.sequential and result.sequential.next_look:
            head += f" Continue to the next look at {result.sequential.next_look} questions."
        elif result.more_questions is not None:
            head += (
                f" About {result.more_questions} more questions would decide it"
                f" (if the observed rates hold, power {SUGGESTION_POWER})."
            )
        elif result.paired:
            head += " No sample size would decide it at the observed rates."
        else:
            head += (" No sample size would decide it at the observed rates. The aggregate baseline's own "
                     "uncertainty is too large; a per-sample baseline (paired rule) would help.")
    return head

