"""Group-sequential accuracy decisions: evaluate in chunks and stop at the first look where the
paired rule decides.

The Tango score statistic (`harness.stats.proportions.tango_z`) is compared at planned looks with
Lan–DeMets alpha-spending boundaries (O'Brien–Fleming- or Pocock-type), the same boundary for
passing and for failing, each computed as non-binding so either error rate stays ≤ alpha. No
mainstream Python library computes these boundaries; they come from recursive numerical
integration here and are checked against published tables in the tests.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel, Field
from scipy import optimize, stats

from harness.errors import HarnessError
from harness.stats.decision import (
    DEFAULT_ALPHA,
    DEFAULT_MARGIN,
    AccuracyDecision,
    Outcome,
    SequentialState,
    Spending,
    check_parameters,
    decision,
)
from harness.stats.proportions import (
    paired_counts,
    questions_to_decide,
    tango_interval,
    tango_z,
)

RULE_SEQUENTIAL = (
    "group-sequential paired non-inferiority, Tango score statistic, "
    "Lan-DeMets {spending}-type alpha spending, non-binding"
)


def spent_alpha(t: np.ndarray | float, alpha: float, spending: Spending) -> np.ndarray:
    """Lan–DeMets spending functions: cumulative alpha spent by information fraction t."""
    t = np.clip(np.asarray(t, dtype=float), 0.0, 1.0)
    if spending == "obrien-fleming":
        with np.errstate(divide="ignore"):
            return np.where(t > 0, 2.0 * stats.norm.sf(stats.norm.isf(alpha / 2) / np.sqrt(t)), 0.0)
    if spending == "pocock":
        return alpha * np.log1p((math.e - 1.0) * t)
    raise HarnessError(f"unknown alpha spending {spending!r}: use 'obrien-fleming' or 'pocock'")


def spending_boundaries(fractions: Sequence[float], alpha: float, spending: Spending, grid: int = 801) -> list[float]:
    """One-sided z boundaries c_k with P0(first crossing at look k) = α(t_k) − α(t_{k−1}).

    Recursive numerical integration (Armitage–McPherson–Rowe) of the score process
    S_k = Z_k·sqrt(t_k), a Brownian motion under H0, on a grid below the boundary.
    HarnessError unless the fractions increase and end at 1.
    """
    t = np.asarray(fractions, dtype=float)
    if t.ndim != 1 or len(t) == 0 or np.any(np.diff(t) <= 0) or t[0] <= 0 or abs(t[-1] - 1.0) > 1e-9:
        raise HarnessError("sequential looks must be increasing information fractions ending at 1")
    cumulative = spent_alpha(t, alpha, spending)
    increments = np.diff(np.concatenate([[0.0], cumulative]))
    boundaries: list[float] = []
    points = weights = density = None
    for k, (tk, spend) in enumerate(zip(t, increments, strict=True)):
        if k == 0:
            z = float(stats.norm.isf(spend)) if spend > 0 else math.inf
            boundaries.append(z)
            upper = z * math.sqrt(tk) if math.isfinite(z) else 12.0 * math.sqrt(tk)
            points = np.linspace(-12.0 * math.sqrt(tk), upper, grid)
            density = stats.norm.pdf(points, scale=math.sqrt(tk))
            weights = _trapezoid_weights(points)
            continue
        step_sd = math.sqrt(tk - t[k - 1])
        mass = density * weights
        if spend <= 0:
            b = math.inf
        else:
            b = optimize.brentq(
                _excess_crossing,
                points[0] - 40.0 * step_sd,
                points[-1] + 40.0 * step_sd,
                args=(mass, points, step_sd, spend),
                xtol=1e-12,
            )
        boundaries.append(b / math.sqrt(tk))
        upper = b if math.isfinite(b) else points[-1] + 12.0 * step_sd
        new_points = np.linspace(-12.0 * math.sqrt(tk), upper, grid)
        kernel = stats.norm.pdf((new_points[:, None] - points[None, :]) / step_sd) / step_sd
        density = kernel @ mass
        points, weights = new_points, _trapezoid_weights(new_points)
    return boundaries


def _excess_crossing(b: float, mass: np.ndarray, points: np.ndarray, step_sd: float, spend: float) -> float:
    """P(continue until the previous look, then cross b now) minus the alpha to spend now."""
    return float(mass @ stats.norm.sf((b - points) / step_sd)) - spend


def _trapezoid_weights(points: np.ndarray) -> np.ndarray:
    h = points[1] - points[0]
    w = np.full(len(points), h)
    w[0] = w[-1] = h / 2
    return w


class SequentialDesign(BaseModel):
    looks: list[int] = Field(description="cumulative numbers of questions at each look, increasing")
    alpha: float = DEFAULT_ALPHA
    spending: Spending = "obrien-fleming"
    boundaries: list[float]


def sequential_design(
    looks: Sequence[int], *, alpha: float = DEFAULT_ALPHA, spending: Spending = "obrien-fleming"
) -> SequentialDesign:
    """Plan looks at the given cumulative question counts; information is taken ∝ questions.
    HarnessError unless the counts are positive and increasing."""
    looks = [int(x) for x in looks]
    if not looks or looks[0] <= 0 or any(b <= a for a, b in itertools.pairwise(looks)):
        raise HarnessError(f"sequential looks must be increasing positive question counts, got {looks}")
    check_parameters(0.0, alpha)
    fractions = [x / looks[-1] for x in looks]
    return SequentialDesign(
        looks=looks, alpha=alpha, spending=spending, boundaries=spending_boundaries(fractions, alpha, spending)
    )


def sequential_decisions(z_by_look: np.ndarray, design: SequentialDesign) -> tuple[np.ndarray, np.ndarray]:
    """Vectorised stopping rule: z_by_look has shape (..., looks). Returns (outcome code, look index)
    with code +1 passed, −1 failed, 0 inconclusive, look index of the stop (last look if none)."""
    c = np.asarray(design.boundaries)
    crossed_up = z_by_look >= c
    crossed_down = z_by_look <= -c
    crossed = crossed_up | crossed_down
    any_cross = crossed.any(axis=-1)
    first = np.where(any_cross, crossed.argmax(axis=-1), len(c) - 1)
    up_at_first = np.take_along_axis(crossed_up, first[..., None], axis=-1)[..., 0]
    code = np.where(any_cross, np.where(up_at_first, 1, -1), 0)
    return code, first


def sequential_paired_test(
    baseline: Sequence[bool],
    candidate: Sequence[bool],
    design: SequentialDesign,
    *,
    margin: float = DEFAULT_MARGIN,
    vacuous: str | None = None,
) -> AccuracyDecision:
    """Evaluate the planned looks the data reach (questions in the planned order); stop at the
    first boundary crossing. With data short of the last look and no decision, the result is
    inconclusive with `sequential.next_look` set: run more questions and call again."""
    check_parameters(margin, design.alpha)
    n_available, _, _, _ = paired_counts(baseline, candidate)
    if n_available < design.looks[0]:
        raise HarnessError(f"sequential test: {n_available} questions, the first look needs {design.looks[0]}")
    base = np.asarray(baseline, dtype=bool)
    cand = np.asarray(candidate, dtype=bool)
    reached = [k for k, size in enumerate(design.looks) if size <= n_available]
    outcome: Outcome = "inconclusive"
    for k in reached:
        size = design.looks[k]
        n, baseline_correct, losses, wins = paired_counts(base[:size], cand[:size])
        z = float(tango_z(n, wins, losses, -margin))
        boundary = design.boundaries[k]
        if z >= boundary:
            outcome = "passed"
        elif z <= -boundary:
            outcome = "failed"
        if outcome != "inconclusive":
            break
    final = k == len(design.looks) - 1
    # Nominal p-values at the stopping look, for the record; the decision is the boundary's.
    p_non_inferior, p_drop = float(stats.norm.sf(z)), float(stats.norm.cdf(z))
    # The interval at the look's nominal level (the boundary), floored so an early look whose
    # boundary is astronomically high still yields finite bounds.
    nominal = max(float(stats.norm.sf(design.boundaries[k])), 1e-12)
    low, high = tango_interval(n, wins, losses, nominal)
    return decision(
        outcome=outcome,
        vacuous=vacuous,
        rule=RULE_SEQUENTIAL.format(spending=design.spending),
        paired=True,
        n=n,
        baseline_n=n,
        baseline_correct=baseline_correct,
        candidate_correct=baseline_correct - losses + wins,
        losses=losses,
        wins=wins,
        baseline_accuracy=baseline_correct / n,
        candidate_accuracy=(baseline_correct - losses + wins) / n,
        difference=(wins - losses) / n,
        ci_low=low,
        ci_high=high,
        ci_level=1 - 2 * nominal,
        margin=margin,
        alpha=design.alpha,
        p_non_inferior=p_non_inferior,
        p_drop=p_drop,
        more_questions=questions_to_decide(n, z, design.alpha) if outcome == "inconclusive" and final else None,
        sequential=SequentialState(
            looks=design.looks,
            boundaries=design.boundaries,
            spending=design.spending,
            look=k + 1,
            z=z,
            next_look=design.looks[k + 1] if outcome == "inconclusive" and not final else None,
        ),
    )
