"""The performance runner: a runbook suite's bench_serving repetitions (`harness.evidence.perf`)
and the checks read back from their evidence — each metric against a recorded baseline with the
measured noise taken into account, or request by request against a reference server measured
in the same run (`harness.stats.performance`)."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from harness.errors import HarnessError
from harness.evidence.perf import (
    REQUEST_METRICS,
    PerfRun,
    load_bench_results,
    request_samples,
    run_performance,
)
from harness.evidence.plots import plot_latency
from harness.evidence.runbook import PerformanceSuite
from harness.evidence.runner import Runner
from harness.record.checks import Check, CheckStatus, not_run, unusable
from harness.stats.performance import (
    METRICS,
    PAIRED_RULE,
    Comparison,
    Metric,
    compare_metric,
    compare_paired_requests,
    summarize,
)


def _plot_requests(suite_dir: Path) -> None:
    """latency.png: per-request distributions, candidate vs reference, from the suite's evidence."""
    samples = {side: [request_samples(r) for r in load_bench_results(suite_dir / f)]
               for side, f in (("candidate", "results.jsonl"), ("reference", "reference.jsonl"))}
    figures = {}
    for key, label, unit, _ in REQUEST_METRICS:
        figures[f"{label} ({unit})"] = {side: [v for rep in reps if rep for v in rep[key]]
                                        for side, reps in samples.items()}
    plot_latency(figures, {}, suite_dir / "latency.png")


def _checks(run: PerfRun, suite_dir: Path) -> list[Check]:
    prefix = f"performance.{run.suite}"
    if run.status != "measured":
        return [Check(name=f"{prefix}.run", status=CheckStatus(run.status), reason=run.reason, detail=run.detail,
                      evidence=run.evidence)]
    runs = load_bench_results(suite_dir / "results.jsonl")
    spread = summarize(runs)
    checks = [Check(name=f"{prefix}.run", status=CheckStatus.passed, evidence=run.evidence,
                    metrics={key: s.mean for key, s in spread.items()} | {"repetitions": len(runs)})]
    if run.reference_results:
        return checks + paired_checks(suite_dir, run, prefix)
    if run.baseline_source is None:
        return checks + [not_run(f"{prefix}.baseline", "the runbook suite names no baseline results file")]
    try:
        baseline = load_bench_results(suite_dir / run.baseline if run.baseline else run.baseline_source)
    except HarnessError as exc:  # the runbook's baseline file is missing or malformed
        return checks + [unusable(f"{prefix}.baseline", str(exc))]
    _, compared = compare_runs(runs, baseline, tolerance=run.tolerance, prefix=prefix,
                               evidence=[*run.evidence, str(suite_dir / run.baseline)])
    return checks + compared


def paired_checks(suite_dir: Path, run: PerfRun, prefix: str) -> list[Check]:
    """One `<prefix>.<metric>` check per per-request metric, candidate vs the reference measured
    in the same run (`compare_paired_requests`; the rule is named in each reason)."""
    sides = [[request_samples(r) for r in load_bench_results(suite_dir / f)]
             for f in ("results.jsonl", run.reference_results or "")]
    evidence = [*run.evidence] + ([str(suite_dir / "latency.png")] if (suite_dir / "latency.png").is_file() else [])
    if any(s is None for side in sides for s in side):
        return [unusable(f"{prefix}.reference", "bench_serving wrote no per-request details (--output-details)")]
    checks = []
    for key, label, unit, higher in REQUEST_METRICS:
        metric = Metric(key=key, label=label, unit=unit, higher_is_better=higher)
        comparison = compare_paired_requests(metric, [s[key] for s in sides[0]], [s[key] for s in sides[1]],
                                             tolerance=run.tolerance)
        checks.append(Check(name=f"{prefix}.{key}", status=CheckStatus(comparison.outcome),
                            reason=f"{comparison.reason}. Rule: {PAIRED_RULE} (reference {run.reference})",
                            metrics=comparison.numbers, evidence=evidence))
    return checks


def compare_runs(candidate: list[dict[str, Any]], baseline: list[dict[str, Any]], *, tolerance: float,
                 alpha: float = 0.05, prefix: str = "performance",
                 evidence: list[str] | None = None) -> tuple[list[Comparison], list[Check]]:
    """One Comparison and one `<prefix>.<metric>` Check per metric in METRICS, from bench_serving
    records (one per repetition) of both sides."""
    comparisons, checks = [], []
    for metric in METRICS:
        comparison = compare_metric(metric, [float(r[metric.key]) for r in candidate],
                                    [float(r[metric.key]) for r in baseline], tolerance=tolerance, alpha=alpha)
        comparisons.append(comparison)
        checks.append(Check(name=f"{prefix}.{metric.key}", status=CheckStatus(comparison.outcome),
                            reason=comparison.reason, metrics=comparison.numbers, evidence=list(evidence or [])))
    return comparisons, checks


class PerformanceRunner(Runner[PerformanceSuite, PerfRun]):
    """A runbook suite's bench_serving repetitions against a served model (interleaved with a
    reference server's when given); `performance.<suite>.*` checks."""

    name = "performance"
    section = "performance"
    spec = PerformanceSuite
    record = PerfRun
    summary = "summary.json"

    def run(self, spec: PerformanceSuite, evidence_dir: Path, *, base_url: str, **options: Any) -> PerfRun:
        """`run_performance(spec, base_url, evidence_dir, **options)`, and `latency.png` when
        request pairs against a reference were measured."""
        run = run_performance(spec, base_url, evidence_dir, **options)
        if run.status == "measured" and run.reference_results:
            _plot_requests(evidence_dir)
        return run

    def checks(self, record: PerfRun, evidence_dir: Path, spec: PerformanceSuite) -> list[Check]:
        return _checks(record, evidence_dir)

    def commands(self, record: PerfRun, **inputs: Any) -> list[str]:
        return [shlex.join(record.command)] if record.command else []
