"""Step 4 — accuracy: module and operator outputs against golden dumps (the runbook's `golden:`
section, `harness.evidence.golden`; no server needed), then the runbook's suites (lm-eval against
the served model) compared with their baselines under the accuracy decision rule
(`harness.stats.accuracy`)."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any, ClassVar

from harness.evidence.lmeval import Endpoint
from harness.evidence.runbook import Runbook
from harness.evidence.runner import runner
from harness.evidence.server import RunningServer
from harness.record.checks import Check, CheckStatus
from harness.record.models import Draft
from harness.steps.base import StepContext
from harness.steps.drafting import write_up_draft
from harness.steps.served import (
    ServedStep,
    runbook_dir,
    server_log_tail,
    start_reference,
)


class AccuracyStep(ServedStep):
    number = 4
    name = "accuracy"
    title = "Accuracy: scores consistent with the baseline"
    template = "step.md.j2"
    check_name: ClassVar[str] = "accuracy"
    runners: ClassVar[tuple[str, ...]] = ("golden", "accuracy")

    def draft(self, ctx: StepContext, facts: dict[str, Any], checks: list[Check]) -> Draft:
        return write_up_draft(ctx, facts, checks)  # the task and its rules: skills/accuracy/SKILL.md

    def skip_reason(self, runbook: Runbook) -> str | None:
        return None if runbook.accuracy else "the runbook defines no accuracy suites"

    def runner_inputs(self, name: str, ctx: StepContext, runbook: Runbook,
                      server: RunningServer | None) -> dict[str, Any]:
        if name == "golden":
            return {"cwd": runbook_dir(runbook), "env": runbook.environment.env}
        return {}  # accuracy: its endpoints differ by suite (`exercise` gives them)

    def exercise(self, ctx: StepContext, runbook: Runbook, server: RunningServer) -> list[str]:
        ctx.progress("accuracy: evaluating the runbook's suites")
        accuracy, out = runner("accuracy"), self.runner_dir("accuracy", ctx.evidence_dir)
        with contextlib.ExitStack() as stack:
            started: dict[str, RunningServer | str] = {}
            for suite in runbook.accuracy:  # a reference stands in for a baseline the suite does not record
                if suite.reference is not None and suite.baseline is None:
                    start_reference(ctx, runbook, suite.reference, started, stack)
            for subdir, suite in accuracy.specs(runbook):
                api = runbook.accuracy_api(suite)
                reference = started.get(suite.reference) if suite.reference else None  # or why it did not start
                if reference is not None and not isinstance(reference, str):
                    reference = Endpoint(base_url=reference.base_url, model=reference.model, api=api)
                accuracy.run(suite, out / subdir, reference=reference,
                             endpoint=Endpoint(base_url=server.base_url, model=server.model, api=api))
        scripts = sorted(out.rglob("reproduce.py"))
        final = ctx.run.evidence_dir(ctx.slug)
        return [f"python {(final / p.relative_to(ctx.evidence_dir)).relative_to(ctx.run.workspace.root)}"
                for p in scripts]

    def judge_served(self, evidence_dir: Path, runbook: Runbook) -> list[Check]:
        checks = self.judge_runner("accuracy", evidence_dir, runbook)
        log = server_log_tail(evidence_dir)
        for check in checks:  # a suite that failed or did not run carries the server's log tail after its own
            if check.status in (CheckStatus.failed, CheckStatus.not_run) and log:
                check.detail = f"{check.detail or ''}\n--- server log tail ---\n{log}".strip()
        return checks
