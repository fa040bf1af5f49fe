"""The textbook parts now come from scipy and statsmodels; they give the numbers the closed-form
formulas this project used before gave (kept here as the reference), over a grid of inputs."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from harness.stats.performance import METRICS, compare_metric
from harness.stats.proportions import newcombe_interval, paired_mean_test


def wilson_formula(successes: float, n: int, z: float) -> tuple[float, float]:
    p = successes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def newcombe_formula(c1: float, n1: int, c0: float, n0: int, z: float) -> tuple[float, float]:
    p1, p0 = c1 / n1, c0 / n0
    l1, u1 = wilson_formula(c1, n1, z)
    l0, u0 = wilson_formula(c0, n0, z)
    d = p1 - p0
    return d - math.sqrt((p1 - l1) ** 2 + (u0 - p0) ** 2), d + math.sqrt((u1 - p1) ** 2 + (p0 - l0) ** 2)


@pytest.mark.parametrize("n", [1, 7, 20, 200, 1319])
@pytest.mark.parametrize("alpha", [0.025, 0.05, 0.1])
def test_newcombe_equals_the_formula_built_from_wilson_intervals(n, alpha):
    z = stats.norm.isf(alpha)
    for successes in sorted({0, 1, n // 3, n // 2 + 0.5, n - 1, n}):
        if 0 <= successes <= n:
            for baseline in (0, n // 4, 0.55 * n, n):
                assert newcombe_interval(successes, n, baseline, n, z) == pytest.approx(
                    newcombe_formula(successes, n, baseline, n, z), abs=1e-12)


def test_paired_t_equals_the_formula():
    rng = np.random.default_rng(3)
    base = rng.uniform(0.2, 0.9, 120)
    cand = base - 0.01 + rng.normal(0, 0.05, 120)
    result = paired_mean_test(base, cand, margin=0.02, alpha=0.05)
    diff = cand - base
    se = diff.std(ddof=1) / math.sqrt(len(diff))
    t_crit = stats.t.isf(0.05, len(diff) - 1)
    assert (result.ci_low, result.ci_high) == pytest.approx((diff.mean() - t_crit * se, diff.mean() + t_crit * se))
    assert result.p_non_inferior == pytest.approx(stats.t.sf((diff.mean() + 0.02) / se, len(diff) - 1))


def test_welch_ratio_interval_equals_the_formula():
    candidate, baseline = [98.0, 104.0, 92.0], [100.0, 106.0, 94.0, 101.0]
    comparison = compare_metric(METRICS[0], candidate, baseline, tolerance=0.05, alpha=0.05)
    log_c, log_b = np.log(candidate), np.log(baseline)
    var_c, var_b = log_c.var(ddof=1), log_b.var(ddof=1)
    se = math.sqrt(var_c / 3 + var_b / 4)
    df = (var_c / 3 + var_b / 4) ** 2 / ((var_c / 3) ** 2 / 2 + (var_b / 4) ** 2 / 3)
    half = stats.t.ppf(0.95, df) * se
    estimate = log_c.mean() - log_b.mean()
    assert comparison.ratio_low == pytest.approx(math.exp(estimate - half))
    assert comparison.ratio_high == pytest.approx(math.exp(estimate + half))
