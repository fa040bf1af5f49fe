"""Step 5 — performance: throughput and TTFT on the runbook's benchmarks against the baseline,
with the measured noise taken into account (`harness.stats.performance`)."""

from __future__ import annotations

import os
import shlex
from pathlib import Path
from typing import Any, ClassVar

from harness.errors import HarnessError
from harness.evidence.perf import PerfRun, load_bench_results, run_performance
from harness.evidence.runbook import Runbook
from harness.evidence.server import RunningServer
from harness.record.checks import Check, CheckStatus, not_run, unusable
from harness.record.models import Draft
from harness.stats.performance import METRICS, Comparison, Spread, compare_metric, summarize
from harness.steps.base import StepContext
from harness.steps.drafting import write_up_draft
from harness.steps.served import ServedStep

PERF = "perf"


class PerformanceStep(ServedStep):
    number = 5
    name = "performance"
    title = "Performance: throughput and latency against the baseline"
    template = "step.md.j2"
    check_name: ClassVar[str] = "performance"

    def draft(self, ctx: StepContext, facts: dict[str, Any], checks: list[Check]) -> Draft:
        return write_up_draft(ctx, facts, checks)  # the task and its rules: skills/performance/SKILL.md

    def skip_reason(self, runbook: Runbook) -> str | None:
        return None if runbook.performance else "the runbook defines no performance suites"

    def exercise(self, ctx: StepContext, runbook: Runbook, server: RunningServer) -> list[str]:
        ctx.progress("performance: benchmarking the served model")
        commands = []
        for suite in runbook.performance:
            run = run_performance(suite, server.base_url, ctx.evidence_dir / PERF / suite.name, model=server.model,
                                  env={**os.environ, **runbook.environment.env},  # the runbook's env, as the server gets
                                  registry=ctx.processes)
            if run.command:
                commands.append(shlex.join(run.command))
        return commands

    def judge_served(self, evidence_dir: Path, runbook: Runbook) -> list[Check]:
        return [check for suite in runbook.performance for check in suite_checks(evidence_dir / PERF / suite.name)]


def suite_checks(suite_dir: Path) -> list[Check]:
    """`performance.<suite>.run`, then (with a baseline) one check per metric, read back from
    the suite's evidence (summary.json, results.jsonl, baseline.jsonl)."""
    run = PerfRun.model_validate_json((suite_dir / "summary.json").read_text())
    prefix = f"performance.{run.suite}"
    if run.status != "measured":
        return [Check(name=f"{prefix}.run", status=CheckStatus(run.status), reason=run.reason, detail=run.detail,
                      evidence=run.evidence)]
    runs = load_bench_results(suite_dir / "results.jsonl")
    spread = summarize(runs)
    checks = [Check(name=f"{prefix}.run", status=CheckStatus.passed, evidence=run.evidence,
                    metrics={key: s.mean for key, s in spread.items()} | {"repetitions": len(runs)})]
    if run.baseline_source is None:
        return checks + [not_run(f"{prefix}.baseline", "the runbook suite names no baseline results file")]
    try:
        baseline = load_bench_results(suite_dir / run.baseline if run.baseline else run.baseline_source)
    except HarnessError as exc:  # the runbook's baseline file is missing or malformed
        return checks + [unusable(f"{prefix}.baseline", str(exc))]
    _, compared = compare_runs(runs, baseline, tolerance=run.tolerance, prefix=prefix,
                               evidence=[*run.evidence, str(suite_dir / run.baseline)])
    return checks + compared


def render_markdown(spread: dict[str, Spread], comparisons: list[Comparison]) -> str:
    """Spread per metric and, when compared, the outcome per metric, as a markdown table."""
    rows = ["| metric | mean | CV | min | max | vs baseline | verdict |", "|---|---|---|---|---|---|---|"]
    by_metric = {c.metric: c for c in comparisons}
    for metric in METRICS:
        s = spread.get(metric.key)
        if s is None:
            continue
        c = by_metric.get(metric.key)
        versus = "—" if c is None else f"{c.ratio - 1:+.1%}" + (
            f" [{c.ratio_low - 1:+.1%}, {c.ratio_high - 1:+.1%}]" if c.ratio_low is not None else "")
        cv = f"{s.cv:.1%}" if s.cv is not None else "n/a"
        rows.append(f"| {metric.label} ({metric.unit}) | {s.mean:.4g} | {cv} | {s.min:.4g} | {s.max:.4g} "
                    f"| {versus} | {c.outcome if c else '—'} |")
    return "\n".join(rows) + "\n"


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
