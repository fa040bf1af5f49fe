"""The fixed-sample tests of the accuracy rule (which one applies: `harness.stats.accuracy`).

- paired, margin 0: exact McNemar test (conditional binomial on the discordant pairs, scipy);
- paired, margin > 0: Tango's score test and interval for the paired difference (Tango 1998,
  Stat Med 17:891). The conditional binomial cannot test a non-zero margin: under
  Δ = −margin the split of the discordant pairs depends on the unknown discordance rate, and
  the score statistic handles that nuisance through its restricted maximum-likelihood estimate.
  Fagerland, Lydersen & Laake (2013) recommend this interval for paired proportions;
- paired scores that are not right/wrong (F1, ROUGE): one-sample t on the differences (scipy);
- unpaired (only an aggregate baseline score): Newcombe's hybrid score interval (method 10,
  built from two Wilson intervals; statsmodels) for the difference of independent proportions.

Each returns an `AccuracyDecision` (`harness.stats.decision`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy import optimize, stats
from statsmodels.stats.proportion import confint_proportions_2indep

from harness.errors import HarnessError
from harness.stats.decision import (
    DEFAULT_ALPHA,
    DEFAULT_MARGIN,
    SUGGESTION_POWER,
    AccuracyDecision,
    check_parameters,
    decision,
    outcome_of,
)

RULE_EXACT_MCNEMAR = "paired exact McNemar (conditional binomial on discordant pairs), margin 0"
RULE_TANGO = "paired non-inferiority, Tango score test and interval for the paired difference"
RULE_PAIRED_T = "paired non-inferiority on per-question scores, paired t interval for the mean difference"
RULE_NEWCOMBE = "unpaired non-inferiority, Newcombe hybrid score interval (Wilson-based)"


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
    """(p_non_inferior, p_drop) for H0: Δ ≤ −margin and H0: Δ ≥ −margin, vectorised.

    At margin 0 this is the exact McNemar test: the binomial tails of `wins` among the
    discordant pairs at p = 1/2 (scipy's binomial distribution)."""
    wins = np.asarray(wins)
    losses = np.asarray(losses)
    if margin == 0 and exact_when_zero_margin:
        discordant = wins + losses
        return stats.binom.sf(wins - 1, discordant, 0.5), stats.binom.cdf(wins, discordant, 0.5)
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


def questions_to_decide(n: int, z: float, alpha: float) -> int | None:
    """More questions needed for |z| to reach z_alpha + z_power if the observed rates hold.

    For fixed observed proportions the score statistic grows exactly like sqrt(n) (the
    restricted estimate is scale-free), so the total needed is n·((z_α + z_β)/z)².
    """
    if z == 0 or not math.isfinite(z):
        return None
    target = stats.norm.isf(alpha) + stats.norm.ppf(SUGGESTION_POWER)
    total = n * (target / abs(z)) ** 2
    return max(1, math.ceil(total - n))


def paired_counts(baseline: Sequence[bool], candidate: Sequence[bool]) -> tuple[int, int, int, int]:
    """(n, baseline correct, losses, wins) of two right/wrong lists over the same questions;
    HarnessError when their lengths differ."""
    if len(baseline) != len(candidate):
        raise HarnessError(
            "paired test needs the same questions on both sides: "
            f"baseline has {len(baseline)}, candidate {len(candidate)}"
        )
    base = np.asarray(baseline, dtype=bool)
    cand = np.asarray(candidate, dtype=bool)
    return len(base), int(base.sum()), int((base & ~cand).sum()), int((~base & cand).sum())


def paired_test_from_counts(
    n: int,
    baseline_correct: int,
    losses: int,
    wins: int,
    *,
    margin: float = DEFAULT_MARGIN,
    alpha: float = DEFAULT_ALPHA,
    vacuous: str | None = None,
) -> AccuracyDecision:
    """Paired non-inferiority from the 2×2 table: n questions, `losses` = baseline right and
    candidate wrong, `wins` = baseline wrong and candidate right. HarnessError on counts that
    do not form a table or parameters out of range."""
    check_parameters(margin, alpha)
    if n <= 0:
        raise HarnessError("paired test needs at least one question")
    if not (0 <= losses <= baseline_correct <= n and 0 <= wins <= n - baseline_correct):
        raise HarnessError(
            f"inconsistent paired counts: n={n}, baseline correct={baseline_correct}, losses={losses}, wins={wins}"
        )
    candidate_correct = baseline_correct - losses + wins
    p_non_inferior, p_drop = (float(p) for p in paired_p_values(n, wins, losses, margin))
    low, high = tango_interval(n, wins, losses, alpha)
    outcome = outcome_of(p_non_inferior, p_drop, alpha)
    z = float(tango_z(n, wins, losses, -margin))
    return decision(
        outcome=outcome,
        vacuous=vacuous,
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
        more_questions=questions_to_decide(n, z, alpha) if outcome == "inconclusive" else None,
    )


def paired_test(
    baseline: Sequence[bool],
    candidate: Sequence[bool],
    *,
    margin: float = DEFAULT_MARGIN,
    alpha: float = DEFAULT_ALPHA,
    vacuous: str | None = None,
) -> AccuracyDecision:
    """Paired test on per-question correctness, `baseline[i]` and `candidate[i]` the same question."""
    n, baseline_correct, losses, wins = paired_counts(baseline, candidate)
    return paired_test_from_counts(n, baseline_correct, losses, wins, margin=margin, alpha=alpha, vacuous=vacuous)


def paired_mean_test(
    baseline: Sequence[float],
    candidate: Sequence[float],
    *,
    margin: float = DEFAULT_MARGIN,
    alpha: float = DEFAULT_ALPHA,
    vacuous: str | None = None,
) -> AccuracyDecision:
    """Paired test for per-question scores in [0, 1] that are not just right/wrong (LongBench's
    F1 / ROUGE): scipy's one-sample t test on the differences against −margin."""
    check_parameters(margin, alpha)
    if len(baseline) != len(candidate) or len(baseline) < 2:
        raise HarnessError(
            "paired score test needs the same >= 2 questions on both sides: "
            f"baseline has {len(baseline)}, candidate {len(candidate)}"
        )
    base = np.asarray(baseline, dtype=float)
    cand = np.asarray(candidate, dtype=float)
    n = len(base)
    diff = cand - base
    mean = float(diff.mean())
    if float(diff.std(ddof=1)) > 0:
        one_sided = stats.ttest_1samp(diff, popmean=-margin, alternative="greater")
        statistic = float(one_sided.statistic)
        p_non_inferior, p_drop = float(one_sided.pvalue), float(stats.t.cdf(statistic, n - 1))
        interval = stats.ttest_1samp(diff, popmean=-margin).confidence_interval(confidence_level=1 - 2 * alpha)
        low, high = float(interval.low), float(interval.high)
    else:
        # Every difference equal (typically all zero): no spread to estimate, so judge it like
        # right/wrong data with no discordant questions rather than claim infinite precision.
        statistic = float(tango_z(n, 0, 0, -margin)) if mean == 0 else math.copysign(math.inf, mean + margin)
        p_non_inferior, p_drop = float(stats.norm.sf(statistic)), float(stats.norm.cdf(statistic))
        low, high = tango_interval(n, 0, 0, alpha) if mean == 0 else (mean, mean)
    outcome = outcome_of(p_non_inferior, p_drop, alpha)
    return decision(
        outcome=outcome,
        vacuous=vacuous,
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
        more_questions=questions_to_decide(n, statistic, alpha) if outcome == "inconclusive" else None,
    )


# --------------------------------------------------------------------------- unpaired


def newcombe_interval(
    candidate_correct: float, candidate_n: int, baseline_correct: float, baseline_n: int, z: float
) -> tuple[float, float]:
    """Newcombe's hybrid score interval for p_candidate − p_baseline at normal quantile z
    (statsmodels' `confint_proportions_2indep(method="newcomb")`)."""
    low, high = confint_proportions_2indep(
        candidate_correct, candidate_n, baseline_correct, baseline_n,
        method="newcomb", compare="diff", alpha=2 * float(stats.norm.sf(z)),
    )
    return float(low), float(high)


def _newcombe_p(bound_index: int, margin: float, counts: tuple[float, int, float, int]) -> float:
    """The one-sided level at which the Newcombe bound touches −margin (inverts the interval)."""

    def gap(z: float) -> float:
        return newcombe_interval(*counts, z)[bound_index] + margin

    sign = 1 if bound_index == 0 else -1  # lower bound falls with z, upper bound rises
    if sign * gap(0.0) <= 0:  # the point estimate is already on the wrong side
        return 0.5 if gap(0.0) == 0 else 1.0 - _newcombe_p(1 - bound_index, margin, counts)
    if sign * gap(30.0) > 0:  # beyond z = 30 the level underflows to 0
        return 0.0
    return float(stats.norm.sf(optimize.brentq(gap, 0.0, 30.0, xtol=1e-10)))


def unpaired_test(
    candidate_correct: int,
    candidate_n: int,
    baseline_score: float,
    baseline_n: int,
    *,
    margin: float = DEFAULT_MARGIN,
    alpha: float = DEFAULT_ALPHA,
    vacuous: str | None = None,
) -> AccuracyDecision:
    """Test against an aggregate baseline (a score in [0, 1] on `baseline_n` questions, no
    per-sample data). HarnessError on empty sides or a score outside [0, 1]."""
    check_parameters(margin, alpha)
    if candidate_n <= 0 or baseline_n <= 0:
        raise HarnessError("unpaired test needs at least one question on each side")
    if not 0 <= baseline_score <= 1:
        raise HarnessError(f"baseline score must be a fraction in [0, 1], got {baseline_score}")
    baseline_correct = baseline_score * baseline_n
    counts = (float(candidate_correct), candidate_n, baseline_correct, baseline_n)
    low, high = newcombe_interval(*counts, stats.norm.isf(alpha))
    p_non_inferior = _newcombe_p(0, margin, counts)
    p_drop = _newcombe_p(1, margin, counts)
    outcome = outcome_of(p_non_inferior, p_drop, alpha)
    p1, p0 = candidate_correct / candidate_n, baseline_score
    return decision(
        outcome=outcome,
        vacuous=vacuous,
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

