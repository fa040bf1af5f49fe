"""Step 4 — accuracy: the runbook's suites (lm-eval against the served model) compared with
their baselines under the runbook's statistical rule."""

from __future__ import annotations

from harness.evidence.checks import Check
from harness.steps.base import Evidence, StepContext, not_run
from harness.steps.runner_step import RunbookInputs, call_seam, read_runbook


class AccuracyStep:
    number = 4
    name = "accuracy"
    title = "Accuracy: scores consistent with the baseline"

    def read_inputs(self, ctx: StepContext) -> RunbookInputs:
        return read_runbook(ctx)

    def produce_evidence(self, ctx: StepContext, inputs: RunbookInputs) -> Evidence:
        ctx.progress("accuracy: evaluating the runbook's suites")
        return call_seam(ctx, inputs, accuracy_seam, "accuracy")

    def run_checks(self, ctx: StepContext, inputs: RunbookInputs, evidence: Evidence) -> list[Check]:
        return evidence.checks


def accuracy_seam(ctx: StepContext, runbook) -> tuple[list[Check], list[str]]:
    """The step's one seam into the evidence runners: serve the model, run every accuracy suite
    (lm-eval + the statistical gate) against it."""
    import shlex

    from harness.evidence.accuracy import run_runbook_accuracy
    from harness.evidence.server import ServedModel, ServerStartError

    if not runbook.accuracy:
        return [not_run("accuracy", "the runbook defines no accuracy suites")], []
    out = ctx.evidence_dir / "accuracy"
    try:
        with ServedModel.from_runbook(runbook, ctx.evidence_dir / "server") as server:
            command = shlex.join(server.command)
            checks = run_runbook_accuracy(runbook, server, out)
    except ServerStartError as exc:
        return [exc.check], []
    scripts = sorted(out.rglob("reproduce.py"))
    rel = [ctx.run.evidence_dir(ctx.slug) / p.relative_to(ctx.evidence_dir) for p in scripts]
    return checks, [command, *(f"python {p.relative_to(ctx.run.workspace.root)}" for p in rel)]


STEP = AccuracyStep()
