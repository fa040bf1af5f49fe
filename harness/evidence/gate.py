"""The statistical accuracy gate: is the candidate's accuracy within `margin` of the baseline's?

Pure statistics, no I/O. Three outcomes:

- ``passed``: non-inferiority shown — the one-sided (1 − alpha) lower bound of
  Δ = accuracy(candidate) − accuracy(baseline) is above −margin;
- ``failed``: a drop larger than the margin is evident — the one-sided (1 − alpha) upper
  bound of Δ is below −margin;
- ``inconclusive``: neither; the result says about how many more questions would decide it.

Rules (each result names the one it used):

- paired, margin 0: exact McNemar test (conditional binomial on the discordant pairs);
- paired, margin > 0: Tango's score test and interval for the paired difference (Tango 1998,
  Stat Med 17:891). The conditional binomial cannot test a non-zero margin: under
  Δ = −margin the split of the discordant pairs depends on the unknown discordance rate, and
  the score statistic handles that nuisance through its restricted maximum-likelihood estimate.
  Fagerland, Lydersen & Laake (2013) recommend this interval for paired proportions;
- unpaired (only an aggregate baseline score): Newcombe's hybrid score interval (method 10,
  built from two Wilson intervals) for the difference of independent proportions;
- group-sequential, paired: the Tango score statistic at planned looks against
  Lan–DeMets alpha-spending boundaries (O'Brien–Fleming- or Pocock-type), the same boundary
  for passing and for failing, each computed as non-binding so either error rate stays ≤ alpha.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

import numpy as np
from pydantic import BaseModel, Field
from scipy import optimize, stats

from harness.errors import HarnessError

Outcome = Literal["passed", "failed", "inconclusive"]
Spending = Literal["obrien-fleming", "pocock"]

DEFAULT_MARGIN = 0.02
DEFAULT_ALPHA = 0.05
# Power used only for the "about K more questions" suggestion of an inconclusive result.
SUGGESTION_POWER = 0.8

RULE_EXACT_MCNEMAR = "paired exact McNemar (conditional binomial on discordant pairs), margin 0"
RULE_TANGO = "paired non-inferiority, Tango score test and interval for the paired difference"
RULE_PAIRED_T = "paired non-inferiority on per-question scores, paired t interval for the mean difference"
RULE_NEWCOMBE = "unpaired non-inferiority, Newcombe hybrid score interval (Wilson-based)"
RULE_SEQUENTIAL = (
    "group-sequential paired non-inferiority, Tango score statistic, "
    "Lan-DeMets {spending}-type alpha spending, non-binding"
)


class SequentialState(BaseModel):
    looks: list[int]  # planned cumulative numbers of questions
    boundaries: list[float]  # |z| needed to stop at each look
    spending: Spending
    look: int  # 1-based index of the look this result was taken at
    z: float  # score statistic at that look (positive favours non-inferiority)
    next_look: int | None = None  # questions needed for the next look, if undecided


class GateResult(BaseModel):
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
    sequential: SequentialState | None = None
    summary: str = ""


# ----------------------------------------------------------------------------- paired


def tango_z(n, wins, losses, delta0):
    """Tango's score statistic for H0: Δ = delta0, vectorised over numpy arrays.

    Δ = (wins − losses)/n in expectation; positive z means the data sit above delta0.
    """
    n, wins, losses = (np.asarray(x, dtype=float) for x in (n, wins, losses))
    delta0 = np.asarray(delta0, dtype=float)
    a = 2.0 * n
    b = -wins - losses + (2.0 * n - wins + losses) * delta0
    c = -losses * delta0 * (1.0 - delta0)
    with np.errstate(divide="ignore", invalid="ignore"):
        p21 = (np.sqrt(np.maximum(b * b - 4.0 * a * c, 0.0)) - b) / (2.0 * a)
        variance = n * (2.0 * p21 + delta0 * (1.0 - delta0))
        z = (wins - losses - n * delta0) / np.sqrt(variance)
    # Zero variance only when nothing is discordant and delta0 = 0: no evidence either way.
    return np.where(variance > 0, z, 0.0)


def paired_p_values(n, wins, losses, margin, exact_when_zero_margin: bool = True):
    """(p_non_inferior, p_drop) for H0: Δ ≤ −margin and H0: Δ ≥ −margin, vectorised."""
    wins = np.asarray(wins)
    losses = np.asarray(losses)
    if margin == 0 and exact_when_zero_margin:
        discordant = wins + losses
        p_non_inferior = stats.binom.sf(wins - 1, discordant, 0.5)
        p_drop = stats.binom.cdf(wins, discordant, 0.5)
        return p_non_inferior, p_drop
    z = tango_z(n, wins, losses, -margin)
    return stats.norm.sf(z), stats.norm.cdf(z)


def tango_interval(n: int, wins: int, losses: int, alpha: float) -> tuple[float, float]:
    """One-sided (1 − alpha) lower and upper bounds for Δ by inverting the score test."""
    if n == 0:
        return -1.0, 1.0
    z_crit = stats.norm.isf(alpha)
    estimate = (wins - losses) / n
    eps = 1e-12

    def excess(delta0: float, target: float) -> float:
        return float(tango_z(n, wins, losses, delta0)) - target

    low = -1.0 + eps
    if excess(low, z_crit) > 0:
        low = optimize.brentq(excess, low, estimate, args=(z_crit,), xtol=1e-10)
    high = 1.0 - eps
    if excess(high, -z_crit) < 0:
        high = optimize.brentq(excess, estimate, high, args=(-z_crit,), xtol=1e-10)
    return low, high


def _questions_to_decide(n: int, z: float, alpha: float) -> int | None:
    """More questions needed for |z| to reach z_alpha + z_power if the observed rates hold.

    For fixed observed proportions the score statistic grows exactly like sqrt(n) (the
    restricted estimate is scale-free), so the total needed is n·((z_α + z_β)/z)².
    """
    if z == 0 or not math.isfinite(z):
        return None
    target = stats.norm.isf(alpha) + stats.norm.ppf(SUGGESTION_POWER)
    total = n * (target / abs(z)) ** 2
    return max(1, math.ceil(total - n))


def _paired_counts(baseline: Sequence[bool], candidate: Sequence[bool]) -> tuple[int, int, int, int]:
    if len(baseline) != len(candidate):
        raise HarnessError(
            "paired gate needs the same questions on both sides: "
            f"baseline has {len(baseline)}, candidate {len(candidate)}"
        )
    base = np.asarray(baseline, dtype=bool)
    cand = np.asarray(candidate, dtype=bool)
    return len(base), int(base.sum()), int((base & ~cand).sum()), int((~base & cand).sum())


def _check_parameters(margin: float, alpha: float) -> None:
    if not 0 <= margin < 1:
        raise HarnessError(f"gate margin must be in [0, 1), got {margin}")
    if not 0 < alpha < 0.5:
        raise HarnessError(f"gate alpha must be in (0, 0.5), got {alpha}")


def _decide(p_non_inferior: float, p_drop: float, alpha: float) -> Outcome:
    if p_non_inferior <= alpha:
        return "passed"
    if p_drop <= alpha:
        return "failed"
    return "inconclusive"


def _points(fraction: float) -> str:
    return f"{100 * fraction:+.1f}" if fraction else "0.0"


def _summary(result: GateResult) -> str:
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
    if result.outcome == "inconclusive":
        if result.sequential and result.sequential.next_look:
            head += f" Continue to the next look at {result.sequential.next_look} questions."
        elif result.more_questions is not None:
            head += (
                f" About {result.more_questions} more questions would decide it"
                f" (if the observed rates hold, power {SUGGESTION_POWER})."
            )
        else:
            head += " No sample size would decide it at the observed rates."
    return head


def paired_gate_from_counts(
    n: int,
    baseline_correct: int,
    losses: int,
    wins: int,
    *,
    margin: float = DEFAULT_MARGIN,
    alpha: float = DEFAULT_ALPHA,
) -> GateResult:
    """Paired non-inferiority from the 2×2 table: n questions, `losses` = baseline right and
    candidate wrong, `wins` = baseline wrong and candidate right."""
    _check_parameters(margin, alpha)
    if n <= 0:
        raise HarnessError("paired gate needs at least one question")
    if not (0 <= losses <= baseline_correct <= n and 0 <= wins <= n - baseline_correct):
        raise HarnessError(
            f"inconsistent paired counts: n={n}, baseline correct={baseline_correct}, losses={losses}, wins={wins}"
        )
    candidate_correct = baseline_correct - losses + wins
    p_non_inferior, p_drop = (float(p) for p in paired_p_values(n, wins, losses, margin))
    low, high = tango_interval(n, wins, losses, alpha)
    outcome = _decide(p_non_inferior, p_drop, alpha)
    z = float(tango_z(n, wins, losses, -margin))
    result = GateResult(
        outcome=outcome,
        rule=RULE_EXACT_MCNEMAR if margin == 0 else RULE_TANGO,
        paired=True,
        n=n,
        baseline_n=n,
        baseline_correct=baseline_correct,
        candidate_correct=candidate_correct,
        losses=losses,
        wins=wins,
        baseline_accuracy=baseline_correct / n,
        candidate_accuracy=candidate_correct / n,
        difference=(wins - losses) / n,
        ci_low=low,
        ci_high=high,
        ci_level=1 - 2 * alpha,
        margin=margin,
        alpha=alpha,
        p_non_inferior=p_non_inferior,
        p_drop=p_drop,
        more_questions=_questions_to_decide(n, z, alpha) if outcome == "inconclusive" else None,
    )
    result.summary = _summary(result)
    return result


def paired_gate(
    baseline: Sequence[bool],
    candidate: Sequence[bool],
    *,
    margin: float = DEFAULT_MARGIN,
    alpha: float = DEFAULT_ALPHA,
) -> GateResult:
    """Paired gate on per-question correctness, `baseline[i]` and `candidate[i]` the same question."""
    n, baseline_correct, losses, wins = _paired_counts(baseline, candidate)
    return paired_gate_from_counts(n, baseline_correct, losses, wins, margin=margin, alpha=alpha)


def paired_mean_gate(
    baseline: Sequence[float],
    candidate: Sequence[float],
    *,
    margin: float = DEFAULT_MARGIN,
    alpha: float = DEFAULT_ALPHA,
) -> GateResult:
    """Paired gate for per-question scores in [0, 1] that are not just right/wrong (LongBench's
    F1 / ROUGE): a one-sided paired t test on the mean difference."""
    _check_parameters(margin, alpha)
    if len(baseline) != len(candidate) or len(baseline) < 2:
        raise HarnessError(
            "paired score gate needs the same >= 2 questions on both sides: "
            f"baseline has {len(baseline)}, candidate {len(candidate)}"
        )
    base = np.asarray(baseline, dtype=float)
    cand = np.asarray(candidate, dtype=float)
    n = len(base)
    diff = cand - base
    mean = float(diff.mean())
    se = float(diff.std(ddof=1)) / math.sqrt(n)
    if se > 0:
        t_crit = float(stats.t.isf(alpha, n - 1))
        statistic = (mean + margin) / se
        p_non_inferior, p_drop = float(stats.t.sf(statistic, n - 1)), float(stats.t.cdf(statistic, n - 1))
        low, high = mean - t_crit * se, mean + t_crit * se
    else:
        # Every difference equal (typically all zero): no spread to estimate, so judge it like
        # right/wrong data with no discordant questions rather than claim infinite precision.
        statistic = float(tango_z(n, 0, 0, -margin)) if mean == 0 else math.copysign(math.inf, mean + margin)
        p_non_inferior, p_drop = float(stats.norm.sf(statistic)), float(stats.norm.cdf(statistic))
        low, high = tango_interval(n, 0, 0, alpha) if mean == 0 else (mean, mean)
    outcome = _decide(p_non_inferior, p_drop, alpha)
    result = GateResult(
        outcome=outcome,
        rule=RULE_PAIRED_T,
        paired=True,
        n=n,
        baseline_n=n,
        baseline_correct=round(float(base.sum())),
        candidate_correct=round(float(cand.sum())),
        losses=int((diff < 0).sum()),
        wins=int((diff > 0).sum()),
        baseline_accuracy=float(base.mean()),
        candidate_accuracy=float(cand.mean()),
        difference=mean,
        ci_low=low,
        ci_high=high,
        ci_level=1 - 2 * alpha,
        margin=margin,
        alpha=alpha,
        p_non_inferior=p_non_inferior,
        p_drop=p_drop,
        more_questions=_questions_to_decide(n, statistic, alpha) if outcome == "inconclusive" else None,
    )
    result.summary = _summary(result)
    return result


# --------------------------------------------------------------------------- unpaired


def wilson_interval(successes: float, n: int, z: float) -> tuple[float, float]:
    p = successes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def newcombe_interval(
    candidate_correct: float, candidate_n: int, baseline_correct: float, baseline_n: int, z: float
) -> tuple[float, float]:
    """Newcombe's hybrid score interval for p_candidate − p_baseline at normal quantile z."""
    p1, p0 = candidate_correct / candidate_n, baseline_correct / baseline_n
    l1, u1 = wilson_interval(candidate_correct, candidate_n, z)
    l0, u0 = wilson_interval(baseline_correct, baseline_n, z)
    d = p1 - p0
    return d - math.sqrt((p1 - l1) ** 2 + (u0 - p0) ** 2), d + math.sqrt((u1 - p1) ** 2 + (p0 - l0) ** 2)


def _newcombe_p(bound_index: int, margin: float, counts: tuple[float, int, float, int]) -> float:
    """The one-sided level at which the Newcombe bound touches −margin (inverts the interval)."""

    def gap(z: float) -> float:
        return newcombe_interval(*counts, z)[bound_index] + margin

    sign = 1 if bound_index == 0 else -1  # lower bound falls with z, upper bound rises
    if sign * gap(0.0) <= 0:  # the point estimate is already on the wrong side
        return 0.5 if gap(0.0) == 0 else 1.0 - _newcombe_p(1 - bound_index, margin, counts)
    if sign * gap(40.0) > 0:
        return 0.0
    return float(stats.norm.sf(optimize.brentq(gap, 0.0, 40.0, xtol=1e-10)))


def unpaired_gate(
    candidate_correct: int,
    candidate_n: int,
    baseline_score: float,
    baseline_n: int,
    *,
    margin: float = DEFAULT_MARGIN,
    alpha: float = DEFAULT_ALPHA,
) -> GateResult:
    """Gate against an aggregate baseline (score on baseline_n questions, no per-sample data)."""
    _check_parameters(margin, alpha)
    if candidate_n <= 0 or baseline_n <= 0:
        raise HarnessError("unpaired gate needs at least one question on each side")
    if not 0 <= baseline_score <= 1:
        raise HarnessError(f"baseline score must be a fraction in [0, 1], got {baseline_score}")
    baseline_correct = baseline_score * baseline_n
    counts = (float(candidate_correct), candidate_n, baseline_correct, baseline_n)
    low, high = newcombe_interval(*counts, stats.norm.isf(alpha))
    p_non_inferior = _newcombe_p(0, margin, counts)
    p_drop = _newcombe_p(1, margin, counts)
    outcome = _decide(p_non_inferior, p_drop, alpha)
    p1, p0 = candidate_correct / candidate_n, baseline_score
    result = GateResult(
        outcome=outcome,
        rule=RULE_NEWCOMBE,
        paired=False,
        n=candidate_n,
        baseline_n=baseline_n,
        baseline_correct=round(baseline_correct),
        candidate_correct=candidate_correct,
        baseline_accuracy=p0,
        candidate_accuracy=p1,
        difference=p1 - p0,
        ci_low=low,
        ci_high=high,
        ci_level=1 - 2 * alpha,
        margin=margin,
        alpha=alpha,
        p_non_inferior=p_non_inferior,
        p_drop=p_drop,
        more_questions=_unpaired_questions_to_decide(p1, candidate_n, p0, baseline_n, margin, alpha)
        if outcome == "inconclusive"
        else None,
    )
    result.summary = _summary(result)
    if outcome == "inconclusive" and result.more_questions is None:
        result.summary += (
            " The aggregate baseline's own uncertainty is too large; a per-sample baseline (paired rule) would help."
        )
    return result


def _unpaired_questions_to_decide(p1: float, n1: int, p0: float, n0: int, margin: float, alpha: float) -> int | None:
    """Candidate questions (Wald, with Agresti–Coull variances so 0 % and 100 % scores still
    carry uncertainty) for the bound to clear −margin; the aggregate baseline cannot grow."""
    target = stats.norm.isf(alpha) + stats.norm.ppf(SUGGESTION_POWER)

    def variance(p: float, n: int) -> float:
        adjusted = (p * n + 2) / (n + 4)
        return adjusted * (1 - adjusted)

    allowed_variance = ((p1 - p0 + margin) / target) ** 2 - variance(p0, n0) / n0
    if allowed_variance <= 0:
        return None
    return max(1, math.ceil(variance(p1, n1) / allowed_variance - n1))


# ------------------------------------------------------------------------- sequential


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
    """Plan looks at the given cumulative question counts; information is taken ∝ questions."""
    looks = [int(x) for x in looks]
    if not looks or looks[0] <= 0 or any(b <= a for a, b in zip(looks, looks[1:], strict=False)):
        raise HarnessError(f"sequential looks must be increasing positive question counts, got {looks}")
    _check_parameters(0.0, alpha)
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


def sequential_paired_gate(
    baseline: Sequence[bool],
    candidate: Sequence[bool],
    design: SequentialDesign,
    *,
    margin: float = DEFAULT_MARGIN,
) -> GateResult:
    """Evaluate the planned looks the data reach (questions in the planned order); stop at the
    first boundary crossing. With data short of the last look and no decision, the result is
    inconclusive with `sequential.next_look` set: run more questions and call again."""
    _check_parameters(margin, design.alpha)
    n_available, _, _, _ = _paired_counts(baseline, candidate)
    if n_available < design.looks[0]:
        raise HarnessError(f"sequential gate: {n_available} questions, the first look needs {design.looks[0]}")
    base = np.asarray(baseline, dtype=bool)
    cand = np.asarray(candidate, dtype=bool)
    reached = [k for k, size in enumerate(design.looks) if size <= n_available]
    outcome: Outcome = "inconclusive"
    for k in reached:
        size = design.looks[k]
        n, baseline_correct, losses, wins = _paired_counts(base[:size], cand[:size])
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
    result = GateResult(
        outcome=outcome,
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
        more_questions=_questions_to_decide(n, z, design.alpha) if outcome == "inconclusive" and final else None,
        sequential=SequentialState(
            looks=design.looks,
            boundaries=design.boundaries,
            spending=design.spending,
            look=k + 1,
            z=z,
            next_look=design.looks[k + 1] if outcome == "inconclusive" and not final else None,
        ),
    )
    result.summary = _summary(result)
    return result
