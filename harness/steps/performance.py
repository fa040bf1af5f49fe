"""Step 5 — performance: throughput and latency on the runbook's benchmarks against a reference
server measured in the same run (interleaved repetitions, per-request pairs) or a recorded
baseline, with the measured noise taken into account (`harness.stats.performance`); and, with a
`profiling` section, a trace of the workload: time split, top kernels, launch gaps, diff against
the reference trace."""

from __future__ import annotations

import contextlib
import os
import shlex
from pathlib import Path
from typing import Any, ClassVar

from harness.errors import HarnessError
from harness.evidence.perf import (
    REQUEST_METRICS,
    PerfRun,
    load_bench_results,
    request_samples,
    run_performance,
)
from harness.evidence.plots import plot_latency, plot_trace_split
from harness.evidence.runbook import Runbook
from harness.evidence.server import (
    ProfileCapture,
    RunningServer,
    capture_command_profile,
    capture_profile,
)
from harness.evidence.traces import (
    TraceDiff,
    TraceNaming,
    TraceReport,
    analyze_trace,
    diff_traces,
    load_trace,
    report_check,
    write_diff_evidence,
    write_trace_evidence,
)
from harness.record.checks import Check, CheckStatus, not_run, unusable
from harness.record.models import Draft
from harness.stats.performance import (
    METRICS,
    PAIRED_RULE,
    Comparison,
    Metric,
    Spread,
    compare_metric,
    compare_paired_requests,
    summarize,
)
from harness.steps.base import StepContext
from harness.steps.drafting import write_up_draft
from harness.steps.served import ServedStep, runbook_dir, start_reference

PERF = "perf"
PROFILE = "profile"


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
        env = {**os.environ, **runbook.environment.env}  # the runbook's env, as the server gets
        with contextlib.ExitStack() as references:
            started: dict[str, RunningServer | str] = {}
            for suite in runbook.performance:
                out = ctx.evidence_dir / PERF / suite.name
                reference = None
                if suite.reference:
                    reference = start_reference(ctx, runbook, suite.reference, started, references)
                    if isinstance(reference, str):  # it did not start: the suite cannot be compared
                        out.mkdir(parents=True, exist_ok=True)
                        (out / "summary.json").write_text(PerfRun(
                            suite=suite.name, status="failed", tolerance=suite.tolerance, reference=suite.reference,
                            reason=reference).model_dump_json(indent=2) + "\n")
                        continue
                ctx.progress(f"performance: {suite.name}, {suite.repetitions} repetition(s)"
                             + (f" interleaved with reference {suite.reference}" if reference else ""))
                run = run_performance(suite, server.base_url, out, model=server.model, env=env, registry=ctx.processes,
                                      reference_url=reference.base_url if reference else None,
                                      reference_model=reference.model if reference else None)
                if run.command:
                    commands.append(shlex.join(run.command))
                if run.status == "measured" and run.reference_results:
                    _plot_requests(out)
            commands += self._profile(ctx, runbook, server, env)
        return commands

    def _profile(self, ctx: StepContext, runbook: Runbook, server: RunningServer, env: dict[str, str]) -> list[str]:
        """A trace taken during the profiling workload (the engine's profiler endpoints, or the
        runbook's trace command), analysed: time split, top kernels, launch gaps, and a diff
        against the reference trace when the runbook gives a reference command."""
        spec = runbook.profiling
        if spec is None:
            return []
        out = ctx.evidence_dir / PROFILE
        suite = next((s for s in runbook.performance if s.name == spec.workload), None)

        def workload() -> None:
            if suite is not None:  # one repetition of the workload suite, under the profiler
                run_performance(suite.model_copy(update={"repetitions": 1, "reference": None}), server.base_url,
                                out / "workload", model=server.model, env=env, registry=ctx.processes)

        ctx.progress("performance: profiling")
        if spec.command:
            capture = capture_command_profile(spec.command, spec, out, workload, cwd=runbook_dir(runbook),
                                              env=runbook.environment.env, registry=ctx.processes)
        else:
            capture = capture_profile(server, spec, out, lambda _server: workload())
        commands = [c for c in (spec.command, spec.reference_command) if c]
        if not capture.ok:
            return commands
        naming = TraceNaming.model_validate(spec.naming)
        report = analyze_trace(load_trace(capture.traces[0]), naming,
                               source=capture.traces[0].relative_to(out).as_posix())
        write_trace_evidence(report, out)
        plot_trace_split(report, out / "trace_split.png")
        if spec.reference_command:
            reference = capture_command_profile(spec.reference_command, spec, out / "reference", None,
                                                cwd=runbook_dir(runbook), env=runbook.environment.env,
                                                registry=ctx.processes)
            if reference.ok:
                diff = diff_traces(load_trace(reference.traces[0]), load_trace(capture.traces[0]), naming,
                                   before_name="reference", after_name="candidate")
                write_diff_evidence(diff, out)
        return commands

    def judge_served(self, evidence_dir: Path, runbook: Runbook) -> list[Check]:
        checks = [check for suite in runbook.performance for check in suite_checks(evidence_dir / PERF / suite.name)]
        if runbook.profiling is not None:
            checks.append(trace_checks(evidence_dir / PROFILE))
        return checks


def trace_checks(profile_dir: Path) -> Check:
    """`performance.trace`, read back from the profile evidence: the analysed trace (time split,
    top kernels, launch gaps; the diff against the reference trace in the detail), or why no
    trace was taken (e.g. the engine has no profiler)."""
    name = "performance.trace"
    record = profile_dir / "profile.json"
    if not record.is_file():
        return not_run(name, "no trace was taken")
    capture = ProfileCapture.model_validate_json(record.read_text())
    if not capture.ok:
        return not_run(name, f"no trace: {capture.reason}", evidence=capture.evidence)
    report = TraceReport.model_validate_json((profile_dir / "trace_summary.json").read_text())
    evidence = [str(profile_dir / report.source), *(str(p) for p in sorted(profile_dir.glob("trace_*"))
                                                    if p.suffix in (".json", ".md", ".png"))]
    check = report_check(report, evidence, name=name)
    diff_file = profile_dir / "trace_diff.json"
    if diff_file.is_file():
        diff = TraceDiff.model_validate_json(diff_file.read_text())
        changes = "\n".join(f"{d.name}: {d.status}, {d.delta_us / 1000:+,.1f} ms ({d.before_count} → {d.after_count} calls)"
                            for d in diff.kernels[:10])
        check.detail = f"{check.detail or ''}\n\nagainst the reference trace (largest changes):\n{changes}".strip()
        check.metrics["diff_total_ms"] = round(sum(diff.split_delta_us.values()) / 1000, 1)
    return check


def _plot_requests(suite_dir: Path) -> None:
    """latency.png: per-request distributions, candidate vs reference, from the suite's evidence."""
    samples = {side: [request_samples(r) for r in load_bench_results(suite_dir / f)]
               for side, f in (("candidate", "results.jsonl"), ("reference", "reference.jsonl"))}
    figures = {}
    for key, label, unit, _ in REQUEST_METRICS:
        figures[f"{label} ({unit})"] = {side: [v for rep in reps if rep for v in rep[key]]
                                        for side, reps in samples.items()}
    plot_latency(figures, {}, suite_dir / "latency.png")


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
