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

from harness.evidence.runbook import Runbook
from harness.evidence.runner import runner
from harness.evidence.server import RunningServer
from harness.record.checks import Check
from harness.record.models import Draft
from harness.steps.base import StepContext
from harness.steps.drafting import write_up_draft
from harness.steps.served import ServedStep, profile_inputs


class OperatorsStep(ServedStep):
    number = 3
    name = "operators"
    title = "Operators: no compile failure, no operator fallback"
    template = "step.md.j2"
    check_name: ClassVar[str] = "operators.fallback_scan"
    runners: ClassVar[tuple[str, ...]] = ("smoke", "profile", "fallback")
    runner_dirs: ClassVar[dict[str, str]] = {"smoke": "workload"}

    def draft(self, ctx: StepContext, facts: dict[str, Any], checks: list[Check]) -> Draft:
        return write_up_draft(ctx, facts, checks)  # the task and its rules: skills/operators/SKILL.md

    def runner_inputs(self, name: str, ctx: StepContext, runbook: Runbook,
                      server: RunningServer | None) -> dict[str, Any]:
        if name == "smoke":
            return {"server": server}
        if name == "profile":  # the workload it traces is the smoke requests
            return {**profile_inputs(ctx, runbook, server),
                    "workload": lambda: self.run_runner("smoke", ctx, runbook, server)}
        # the fallback scan: the stopped server's complete logs, and the profile's traces
        capture = runner("profile").read(self.runner_dir("profile", ctx.evidence_dir))
        return {"logs": list(server.log_paths), "traces": capture.traces if capture else []}

    def exercise(self, ctx: StepContext, runbook: Runbook, server: RunningServer) -> list[str]:
        ctx.progress("operators: running the workload and scanning for fallbacks")
        self.run_runner("profile", ctx, runbook, server)
        if runner("smoke").read(self.runner_dir("smoke", ctx.evidence_dir)) is None:
            # no profiling, or the profiler refused to start before the traffic
            self.run_runner("smoke", ctx, runbook, server)
        return []

    def judge_served(self, evidence_dir: Path, runbook: Runbook) -> list[Check]:
        # Of the workload's smoke checks only its answers count here; the rest are step 2's.
        workload = [check.model_copy(update={"name": "operators.workload"})
                    for check in self.judge_runner("smoke", evidence_dir, runbook)
                    if check.name in ("smoke.responses", "smoke.evidence")]
        return (workload + self.judge_runner("profile", evidence_dir, runbook)
                + self.judge_runner("fallback", evidence_dir, runbook))
