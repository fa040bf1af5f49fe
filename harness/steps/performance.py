"""Step 5 — performance: throughput and TTFT on the runbook's benchmarks against the baseline,
with the measured noise taken into account."""

from __future__ import annotations

from harness.evidence.checks import Check
from harness.steps.base import Evidence, StepContext, not_run
from harness.steps.runner_step import RunbookInputs, call_seam, read_runbook


class PerformanceStep:
    number = 5
    name = "performance"
    title = "Performance: throughput and latency against the baseline"

    def read_inputs(self, ctx: StepContext) -> RunbookInputs:
        return read_runbook(ctx)

    def produce_evidence(self, ctx: StepContext, inputs: RunbookInputs) -> Evidence:
        ctx.progress("performance: benchmarking the served model")
        return call_seam(ctx, inputs, performance_seam, "performance")

    def run_checks(self, ctx: StepContext, inputs: RunbookInputs, evidence: Evidence) -> list[Check]:
        return evidence.checks


def performance_seam(ctx: StepContext, runbook) -> tuple[list[Check], list[str]]:
    """The step's one seam into the evidence runners: serve the model, run every performance
    suite (bench_serving repetitions, compared with the suite's baseline)."""
    import os
    import shlex

    from harness.evidence.perf import run_performance
    from harness.evidence.server import ServedModel, ServerStartError

    if not runbook.performance:
        return [not_run("performance", "the runbook defines no performance suites")], []
    checks: list[Check] = []
    commands: list[str] = []
    try:
        with ServedModel.from_runbook(runbook, ctx.evidence_dir / "server") as server:
            commands.append(shlex.join(server.command))
            for suite in runbook.performance:
                result = run_performance(
                    suite,
                    server.base_url,
                    ctx.evidence_dir / "perf" / suite.name,
                    model=server.model,
                    env={**os.environ, **runbook.environment.env},  # the runbook's env, as the server gets
                )
                checks += result.checks
                if result.command:
                    commands.append(shlex.join(result.command))
    except ServerStartError as exc:
        return [*checks, exc.check], commands
    return checks, commands


STEP = PerformanceStep()
