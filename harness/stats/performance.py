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
    decided = _decided(metric, (low, high), limit, tolerance)
    if decided is not None:
        return Comparison(**common, ratio=ratio, outcome=decided[0], numbers=numbers,
                          reason=f"{change}: {decided[1]}; {text}")
    needed = _repetitions_to_decide(estimate, math.log(limit), var_c, var_b, alpha)
    more = (f"; about {needed} repetitions per side would decide it"
            if needed else "; the estimate sits on the limit, more repetitions will not settle it soon")
    numbers["repetitions_needed"] = needed
    return Comparison(**common, ratio=ratio, outcome="inconclusive", numbers=numbers, repetitions_needed=needed,
                      reason=f"{change}: the noise straddles the {tolerance:.0%} tolerance; {text}{more}")


def _decided(metric: Metric, interval: tuple[float, float], limit: float,
             tolerance: float) -> tuple[Literal["failed", "passed"], str] | None:
    """("failed" | "passed", why) when the ratio's interval lies wholly beyond / within the
    limit; None when it straddles it."""
    low, high = interval
    worst, best = (low, high) if metric.higher_is_better else (high, low)
    beyond = (lambda r: r < limit) if metric.higher_is_better else (lambda r: r > limit)
    if beyond(best):
        return "failed", f"worse than the {tolerance:.0%} tolerance beyond the noise"
    if not beyond(worst):
        return "passed", f"within the {tolerance:.0%} tolerance"
    return None


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


PAIRED_RULE = ("same-run A/B, paired per request, interval over repetitions: for each pair of interleaved, "
               "counterbalanced repetitions (A B, B A, A B, …) the mean log ratio candidate/reference over the same prompts, then a "
               "t interval at 1 − 2·alpha over those per-repetition means (repetitions − 1 degrees of freedom, so "
               "run-to-run noise counts in full), non-inferiority at the tolerance; fewer than "
               "3 repetitions per side cannot decide")
MIN_PAIRED_REPETITIONS = 3  # with 2, the interval has 1 degree of freedom: t = 6.3 at alpha 0.05


def compare_paired_requests(metric: Metric, candidate: list[list[float]], reference: list[list[float]], *,
                            tolerance: float, alpha: float = 0.05) -> Comparison:
    """Non-inferiority of candidate vs reference for one per-request metric, measured in the same run.

    `candidate[k][i]` and `reference[k][i]` are request i of repetition k on each side: the same
    prompt, the repetitions interleaved and counterbalanced (A B, B A, A B, …), so prompt length
    cancels in the ratio, slow machine drift mostly does, and an advantage of going first or
    second cancels over each two pairs. Model, on the log scale: log(c/r) for request i of repetition k =
    delta + run effect of repetition pair k (load, clocks: shared by its requests) + request noise.
    The requests of one repetition are therefore not independent evidence; the independent units
    are the repetition pairs. Each pair's mean log ratio u_k gets the one-sample t interval
    (scipy `ttest_1samp`, two-sided 1 − 2·alpha, i.e. one-sided alpha at each end) with K − 1
    degrees of freedom. For a balanced design this is exactly the interval for the fixed mean of
    the one-way random-effects (mixed) model — Var(mean of u) = (sigma_run² + sigma_req²/n) / K
    estimated by the between-pair mean square — so its coverage holds whatever the run-to-run
    noise (Searle, Casella & McCulloch, *Variance Components*, 1992, §3.3–3.5; for the crossover
    view of the log ratio, Senn, *Cross-over Trials in Clinical Research*, 2002, ch. 3). The
    decision is `compare_metric`'s: throughput passes when the lower end of the ratio is
    ≥ 1 − tolerance and fails when the upper end is below it; latency mirrors that with
    1 + tolerance. With fewer than MIN_PAIRED_REPETITIONS repetition pairs the result is
    `inconclusive` — the design cannot decide — with the per-request estimate shown. Pairs with a
    non-positive or missing value on either side are dropped.
    """
    by_rep = [[(c, r) for c, r in zip(cand_rep, ref_rep) if c > 0 and r > 0 and math.isfinite(c) and math.isfinite(r)]
              for cand_rep, ref_rep in zip(candidate, reference)]
    pairs = [pair for rep in by_rep for pair in rep]
    limit = 1 - tolerance if metric.higher_is_better else 1 + tolerance
    cand_values, ref_values = [c for c, _ in pairs] or [math.nan], [r for _, r in pairs] or [math.nan]
    common = {"metric": metric.key, "baseline": spread_of(ref_values), "candidate": spread_of(cand_values),
              "confidence": 1 - 2 * alpha, "limit": limit, "ratio_low": None, "ratio_high": None}
    means = [_mean([math.log(c / r) for c, r in rep]) for rep in by_rep if rep]
    if not means:
        return Comparison(**common, ratio=math.nan, outcome="inconclusive",
                          reason=f"{metric.label}: no request pair with values on both sides")
    estimate = _mean(means)
    ratio = math.exp(estimate)
    change = (f"{metric.label} {_percent(ratio - 1)} vs the reference (geometric mean over {len(pairs)} request "
              f"pairs in {len(means)} repetition pair(s); medians {_fmt(spread_of(cand_values).median)} vs "
              f"{_fmt(spread_of(ref_values).median)} {metric.unit})")
    numbers: dict[str, Any] = {
        "ratio": ratio, "pairs": len(pairs), "limit": limit, "repetitions": len(means),
        "candidate_median": spread_of(cand_values).median, "reference_median": spread_of(ref_values).median,
        "ratio_per_repetition": [round(math.exp(m), 3) for m in means]}
    per_rep = ", ".join(f"{math.exp(m):.2f}" for m in means)
    if len(means) < MIN_PAIRED_REPETITIONS:
        return Comparison(**common, ratio=ratio, outcome="inconclusive", numbers=numbers,
                          reason=f"{change}: the design cannot decide: {len(means)} repetition pair(s) "
                                 f"(ratio {per_rep}) leave too few degrees of freedom for the run-to-run noise; "
                                 f"set repetitions to {MIN_PAIRED_REPETITIONS} or more")
    spread = math.sqrt(_variance(means))
    if spread > 0:
        interval = stats.ttest_1samp(means, 0.0).confidence_interval(confidence_level=1 - 2 * alpha)
        low, high = math.exp(float(interval.low)), math.exp(float(interval.high))
    else:
        low = high = ratio
    common.update(ratio_low=low, ratio_high=high)
    numbers |= {"ratio_low": low, "ratio_high": high, "log_ratio_sd_between_repetitions": spread}
    text = (f"ratio per repetition {per_rep}; {100 * (1 - 2 * alpha):.0f}% CI of the ratio [{low:.3f}, {high:.3f}], "
            f"limit {limit:.3f}")
    decided = _decided(metric, (low, high), limit, tolerance)
    if decided is not None:
        return Comparison(**common, ratio=ratio, outcome=decided[0], numbers=numbers,
                          reason=f"{change}: {decided[1]}; {text}")
    distance = abs(estimate - math.log(limit))
    needed = next((k for k in range(len(means) + 1, 101)
                   if float(stats.t.ppf(1 - alpha, k - 1)) * spread / math.sqrt(k) < distance), None)
    numbers["repetitions_needed"] = needed
    more = (f"; about {needed} repetitions per side would decide it" if needed
            else "; the estimate sits on the limit, or the machine is too noisy: more repetitions will not settle it soon")
    return Comparison(**common, ratio=ratio, outcome="inconclusive", numbers=numbers, repetitions_needed=needed,
                      reason=f"{change}: the noise straddles the {tolerance:.0%} tolerance; {text}{more}")
