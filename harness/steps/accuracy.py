"""Step 4 — accuracy: module and operator outputs against golden dumps (the runbook's `golden:`
section, `harness.evidence.golden`; no server needed), then the runbook's suites (lm-eval against
the served model) compared with their baselines under the accuracy decision rule
(`harness.stats.accuracy`)."""

from __future__ import annotations

import contextlib
import shlex
from pathlib import Path
from typing import Any, ClassVar

from harness.errors import HarnessError
from harness.evidence.accuracy import run_runbook_accuracy, suite_checks
from harness.evidence.golden import GoldenRunner
from harness.evidence.runbook import Runbook, load_runbook
from harness.evidence.server import RunningServer
from harness.record.checks import Check
from harness.record.models import Draft, RunInputs
from harness.steps.base import StepContext
from harness.steps.drafting import write_up_draft
from harness.steps.served import (
    ServedStep,
    evidence_runbook,
    runbook_dir,
    server_log_tail,
    start_reference,
)

ACCURACY = "accuracy"
GOLDEN = "golden"


class AccuracyStep(ServedStep):
    number = 4
    name = "accuracy"
    title = "Accuracy: scores consistent with the baseline"
    template = "step.md.j2"
    check_name: ClassVar[str] = "accuracy"

    def draft(self, ctx: StepContext, facts: dict[str, Any], checks: list[Check]) -> Draft:
        return write_up_draft(ctx, facts, checks)  # the task and its rules: skills/accuracy/SKILL.md

    def skip_reason(self, runbook: Runbook) -> str | None:
        return None if runbook.accuracy else "the runbook defines no accuracy suites"

    def collect_static(self, ctx: StepContext) -> tuple[dict[str, Any], list[str]]:
        # Golden dumps need no server: compared before it starts, and whether it starts or not.
        try:
            runbook = load_runbook(ctx.inputs.runbook) if ctx.inputs.runbook else None
        except HarnessError:
            runbook = None  # the served part reports the unusable runbook
        if runbook is None or runbook.golden is None:
            return {}, []
        ctx.progress("accuracy: capturing and comparing golden tensors")
        run = GoldenRunner().run(runbook.golden, ctx.evidence_dir / GOLDEN, cwd=runbook_dir(runbook),
                                 env=runbook.environment.env)
        return {}, [f"(cd {shlex.quote(str(runbook_dir(runbook)))} && {c})" for c in run.commands()]

    def judge_static(self, evidence_dir: Path, inputs: RunInputs) -> list[Check]:
        golden = GoldenRunner()
        record = golden.read(evidence_dir / GOLDEN)
        if record is None:
            return []
        spec = evidence_runbook(evidence_dir, inputs).golden
        if spec is None:
            raise HarnessError("the runbook copied into the evidence has no golden section, yet golden ran")
        return golden.checks(record, evidence_dir / GOLDEN, spec)

    def exercise(self, ctx: StepContext, runbook: Runbook, server: RunningServer) -> list[str]:
        ctx.progress("accuracy: evaluating the runbook's suites")
        out = ctx.evidence_dir / ACCURACY
        with contextlib.ExitStack() as stack:
            started: dict[str, RunningServer | str] = {}
            for suite in runbook.accuracy:  # a reference stands in for a baseline the suite does not record
                if suite.reference is not None and suite.baseline is None:
                    start_reference(ctx, runbook, suite.reference, started, stack)
            run_runbook_accuracy(runbook, server, out, references=started)
        scripts = sorted(out.rglob("reproduce.py"))
        final = ctx.run.evidence_dir(ctx.slug)
        return [f"python {(final / p.relative_to(ctx.evidence_dir)).relative_to(ctx.run.workspace.root)}"
                for p in scripts]

    def judge_served(self, evidence_dir: Path, runbook: Runbook) -> list[Check]:
        return suite_checks(evidence_dir / ACCURACY, [s.name for s in runbook.accuracy],
                            server_log_tail(evidence_dir))
