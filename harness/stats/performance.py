"""The performance comparison: is a candidate's throughput / latency within `tolerance` of the
baseline's, given the noise measured across repetitions?

Non-inferiority on the ratio candidate/baseline, on log values with Welch's t (scipy's
`ttest_ind(equal_var=False)`: unequal variances, few repetitions): `failed` when even the most
favourable end of the interval is beyond the tolerance, `passed` when the least favourable end
is within it, `inconclusive` otherwise — and always with a single repetition on either side,
since then the noise is unknown.
"""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import BaseModel, Field
from scipy import stats


class Metric(BaseModel):
    key: str  # field of bench_serving's JSON line
    label: str
    unit: str
    higher_is_better: bool


# What a performance verdict is made of; E2E latency and means are kept in the raw results.
METRICS: list[Metric] = [
    Metric(key="output_throughput", label="output throughput", unit="tok/s", higher_is_better=True),
    Metric(key="total_throughput", label="total throughput", unit="tok/s", higher_is_better=True),
    Metric(key="request_throughput", label="request throughput", unit="req/s", higher_is_better=True),
    Metric(key="median_ttft_ms", label="TTFT median", unit="ms", higher_is_better=False),
    Metric(key="p99_ttft_ms", label="TTFT p99", unit="ms", higher_is_better=False),
    Metric(key="median_tpot_ms", label="TPOT median", unit="ms", higher_is_better=False),
    Metric(key="p99_tpot_ms", label="TPOT p99", unit="ms", higher_is_better=False),
    Metric(key="median_itl_ms", label="ITL median", unit="ms", higher_is_better=False),
    Metric(key="p99_itl_ms", label="ITL p99", unit="ms", higher_is_better=False),
]


class Spread(BaseModel):
    """One metric across repetitions, in the metric's unit."""

    values: list[float]
    mean: float
    median: float
    stdev: float | None = Field(description="Sample standard deviation; None with one repetition.")
    cv: float | None = Field(description="stdev / mean: the relative noise.")
    min: float
    max: float


class Comparison(BaseModel):
    metric: str
    outcome: Literal["passed", "failed", "inconclusive"]
    reason: str = Field(description="One line: the change, the interval and the limit.")
    baseline: Spread
    candidate: Spread
    ratio: float = Field(description="Geometric-mean ratio candidate / baseline.")
    ratio_low: float | None = Field(description="Lower confidence bound of the ratio.")
    ratio_high: float | None = Field(description="Upper confidence bound of the ratio.")
    confidence: float = Field(description="Two-sided level of [ratio_low, ratio_high].")
    limit: float = Field(description="Worst acceptable ratio: 1 - tolerance (throughput) or 1 + tolerance (latency).")
    repetitions_needed: int | None = Field(
        default=None, description="Repetitions per side that would likely decide an inconclusive result."
    )
    numbers: dict[str, Any] = Field(default_factory=dict, description="The figures behind the outcome.")


def spread_of(values: list[float]) -> Spread:
    """Mean, median, sample stdev, CV, min and max of one metric's repetitions (≥ 1 value)."""
    n = len(values)
    mean = sum(values) / n
    stdev = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1)) if n > 1 else None
    ordered = sorted(values)
    median = (ordered[(n - 1) // 2] + ordered[n // 2]) / 2
    cv = stdev / mean if stdev is not None and mean else None
    return Spread(values=values, mean=mean, median=median, stdev=stdev, cv=cv, min=ordered[0], max=ordered[-1])


def summarize(runs: list[dict[str, Any]]) -> dict[str, Spread]:
    """The spread of every metric in METRICS over bench_serving records (one per repetition)."""
    return {m.key: spread_of([float(run[m.key]) for run in runs]) for m in METRICS}


def compare_metric(metric: Metric, candidate: list[float], baseline: list[float], *,
                   tolerance: float, alpha: float = 0.05) -> Comparison:
    """Non-inferiority of candidate vs baseline for one metric, on the log scale.

    The ratio candidate/baseline gets a two-sided (1 - 2·alpha) Welch interval, i.e. one-sided
    alpha at each end. Throughput passes when the lower end is ≥ 1 - tolerance and fails when the
    upper end is below it; latency mirrors that with 1 + tolerance.
    """
    limit = 1 - tolerance if metric.higher_is_better else 1 + tolerance
    base, cand = spread_of(baseline), spread_of(candidate)
    common = {"metric": metric.key, "baseline": base, "candidate": cand, "confidence": 1 - 2 * alpha,
              "limit": limit, "ratio_low": None, "ratio_high": None}
    if min(candidate + baseline) <= 0:
        return Comparison(**common, ratio=math.nan, outcome="inconclusive",
                          reason=f"{metric.label}: zero or negative values cannot be compared as a ratio")
    log_c, log_b = [math.log(v) for v in candidate], [math.log(v) for v in baseline]
    estimate = _mean(log_c) - _mean(log_b)
    ratio = math.exp(estimate)
    change = (f"{metric.label} {_percent(ratio - 1)} (geometric means {_fmt(math.exp(_mean(log_c)))} vs "
              f"{_fmt(math.exp(_mean(log_b)))} {metric.unit})")
    numbers = {"ratio": ratio, "candidate_mean": cand.mean, "baseline_mean": base.mean,
               "candidate_cv": cand.cv, "baseline_cv": base.cv, "limit": limit}
    if len(candidate) < 2 or len(baseline) < 2:
        single = "candidate" if len(candidate) < 2 else "baseline"
        return Comparison(**common, ratio=ratio, outcome="inconclusive", numbers=numbers,
                          reason=f"{change}; noise unknown: the {single} has a single repetition (need 2 or more per side)")

    var_c, var_b = _variance(log_c), _variance(log_b)
    df = _welch_df(var_c, len(log_c), var_b, len(log_b))
    if var_c + var_b > 0:
        welch = stats.ttest_ind(log_c, log_b, equal_var=False)
        interval = welch.confidence_interval(confidence_level=1 - 2 * alpha)
        low, high = math.exp(float(interval.low)), math.exp(float(interval.high))
    else:  # repetitions that agree exactly: no noise, the interval is the point
        low = high = ratio
    common.update(ratio_low=low, ratio_high=high)
    numbers |= {"ratio_low": low, "ratio_high": high, "welch_df": df}
    text = f"{100 * (1 - 2 * alpha):.0f}% CI of the ratio [{low:.3f}, {high:.3f}], limit {limit:.3f}"
    worst, best = (low, high) if metric.higher_is_better else (high, low)
    beyond = (lambda r: r < limit) if metric.higher_is_better else (lambda r: r > limit)
    if beyond(best):
        return Comparison(**common, ratio=ratio, outcome="failed", numbers=numbers,
                          reason=f"{change}: worse than the {tolerance:.0%} tolerance beyond the noise; {text}")
    if not beyond(worst):
        return Comparison(**common, ratio=ratio, outcome="passed", numbers=numbers,
                          reason=f"{change}: within the {tolerance:.0%} tolerance; {text}")
    needed = _repetitions_to_decide(estimate, math.log(limit), var_c, var_b, alpha)
    more = (f"; about {needed} repetitions per side would decide it"
            if needed else "; the estimate sits on the limit, more repetitions will not settle it soon")
    numbers["repetitions_needed"] = needed
    return Comparison(**common, ratio=ratio, outcome="inconclusive", numbers=numbers, repetitions_needed=needed,
                      reason=f"{change}: the noise straddles the {tolerance:.0%} tolerance; {text}{more}")


def _repetitions_to_decide(estimate: float, log_limit: float, var_c: float, var_b: float,
                           alpha: float, cap: int = 100) -> int | None:
    """Smallest n per side whose one-sided bound would clear the limit if the estimate and the
    variances stay as measured; None when more than `cap` would be needed."""
    distance = abs(estimate - log_limit)
    for n in range(2, cap + 1):
        se = math.sqrt((var_c + var_b) / n)
        df = _welch_df(var_c, n, var_b, n)
        if float(stats.t.ppf(1 - alpha, df)) * se < distance:
            return n
    return None


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def _variance(values: list[float]) -> float:
    mean = _mean(values)
    return sum((v - mean) ** 2 for v in values) / (len(values) - 1)


def _welch_df(var_a: float, n_a: int, var_b: float, n_b: int) -> float:
    """Welch–Satterthwaite degrees of freedom (needed for the planning formula above, where
    there is no data for scipy to test yet)."""
    a, b = var_a / n_a, var_b / n_b
    if a + b == 0:
        return float(n_a + n_b - 2)
    return (a + b) ** 2 / (a**2 / (n_a - 1) + b**2 / (n_b - 1))


def _percent(change: float) -> str:
    return f"{change:+.1%}"


def _fmt(value: float) -> str:
    return f"{value:.4g}"
