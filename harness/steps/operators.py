"""Step 3 — operators: on the runbook workload, no Triton/compile failure and no operator
fallback, judged by the Operator Recipes (the evidence runners' fallback scan)."""

from __future__ import annotations

from harness.evidence.checks import Check
from harness.steps.base import Evidence, StepContext
from harness.steps.runner_step import RunbookInputs, call_seam, read_runbook


class OperatorsStep:
    number = 3
    name = "operators"
    title = "Operators: no compile failure, no operator fallback"

    def read_inputs(self, ctx: StepContext) -> RunbookInputs:
        return read_runbook(ctx)

    def produce_evidence(self, ctx: StepContext, inputs: RunbookInputs) -> Evidence:
        ctx.progress("operators: running the workload and scanning for fallbacks")
        return call_seam(ctx, inputs, fallback_seam, "operators.fallback_scan")

    def run_checks(self, ctx: StepContext, inputs: RunbookInputs, evidence: Evidence) -> list[Check]:
        return evidence.checks


def fallback_seam(ctx: StepContext, runbook) -> tuple[list[Check], list[str]]:
    """The step's one seam into the evidence runners: serve the model, drive the smoke workload
    through it (under the profiler when the runbook has a profiling section), then scan the
    server's logs and the traces for operator fallbacks and compile failures."""
    import shlex

    from harness.evidence.fallback import run_fallback_scan
    from harness.evidence.server import ServedModel, ServerStartError, capture_profile
    from harness.evidence.smoke import run_smoke

    workloads = []

    def workload(server) -> None:
        workloads.append(run_smoke(server, runbook.smoke, ctx.evidence_dir / "workload"))

    checks: list[Check] = []
    traces = []
    try:
        with ServedModel.from_runbook(runbook, ctx.evidence_dir / "server") as server:
            command = shlex.join(server.command)
            if runbook.profiling is not None:
                profile = capture_profile(server, runbook.profiling, ctx.evidence_dir / "profile", workload)
                checks.append(profile.check)
                traces = profile.traces
            if not workloads:  # no profiling, or the profiler refused to start before the traffic
                workload(server)
            logs = list(server.log_paths)
    except ServerStartError as exc:
        return [exc.check], []
    responses = next(c for c in workloads[0].checks if c.name == "smoke.responses")
    checks.insert(0, responses.model_copy(update={"name": "operators.workload"}))
    scan = run_fallback_scan(runbook, logs=logs, traces=traces, evidence_dir=ctx.evidence_dir / "fallback")
    return [*checks, *scan.checks], [command]


STEP = OperatorsStep()
