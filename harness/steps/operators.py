"""Step 3 — operators: on the runbook workload, no Triton/compile failure and no operator
fallback, judged by the Operator Recipes.

The workload is the smoke requests, driven under the engine's profiler when the runbook has a
profiling section; then the server's logs and the traces are scanned for fallbacks
(`harness.evidence.fallback`). Checks: operators.workload, profile.capture, fallback.log,
fallback.trace.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from harness.evidence.fallback import FallbackRunner
from harness.evidence.profile import ProfileRunner
from harness.evidence.runbook import Runbook
from harness.evidence.server import RunningServer
from harness.evidence.smoke import SmokeLog, SmokeRunner
from harness.record.checks import Check
from harness.record.models import Draft
from harness.steps.base import StepContext
from harness.steps.drafting import write_up_draft
from harness.steps.served import PROFILE, ServedStep, profiled_trace_dir, runbook_dir

WORKLOAD, FALLBACK = "workload", "fallback"


class OperatorsStep(ServedStep):
    number = 3
    name = "operators"
    title = "Operators: no compile failure, no operator fallback"
    template = "step.md.j2"
    check_name: ClassVar[str] = "operators.fallback_scan"

    def draft(self, ctx: StepContext, facts: dict[str, Any], checks: list[Check]) -> Draft:
        return write_up_draft(ctx, facts, checks)  # the task and its rules: skills/operators/SKILL.md

    def trace_dir(self, ctx: StepContext, runbook: Runbook) -> Path | None:
        return profiled_trace_dir(ctx, runbook)

    def exercise(self, ctx: StepContext, runbook: Runbook, server: RunningServer) -> list[str]:
        ctx.progress("operators: running the workload and scanning for fallbacks")
        ran: list[bool] = []

        def workload() -> None:
            SmokeRunner().run(runbook.smoke, ctx.evidence_dir / WORKLOAD, server=server)
            ran.append(True)

        if runbook.profiling is not None:
            ProfileRunner().run(runbook.profiling, ctx.evidence_dir / PROFILE, workload=workload, server=server,
                                cwd=runbook_dir(runbook), env=runbook.environment.env, registry=ctx.processes,
                                profiler=runbook.environment.serving.profiler)
        if not ran:  # no profiling, or the profiler refused to start before the traffic
            workload()
        return []

    def after_serving(self, ctx: StepContext, runbook: Runbook, logs: list[Path]) -> None:
        # The logs are complete only once the server has stopped; the traces are the profile's.
        capture = ProfileRunner().read(ctx.evidence_dir / PROFILE)
        FallbackRunner().run(runbook, ctx.evidence_dir / FALLBACK, logs=logs, traces=capture.traces if capture else [])

    def judge_served(self, evidence_dir: Path, runbook: Runbook) -> list[Check]:
        smoke = SmokeRunner()
        workload = evidence_dir / WORKLOAD
        responses = next(c for c in smoke.checks(smoke.read(workload) or SmokeLog([]), workload, runbook.smoke)
                         if c.name == "smoke.responses")
        checks = [responses.model_copy(update={"name": "operators.workload"})]
        if runbook.profiling is not None:
            checks += ProfileRunner().judge(evidence_dir / PROFILE, runbook.profiling)
        return checks + FallbackRunner().judge(evidence_dir / FALLBACK, runbook)
