"""Step 4 — accuracy: module and operator outputs against golden dumps (the runbook's `golden:`
section, `harness.evidence.golden`; no server needed), then the runbook's suites (lm-eval against
the served model) compared with their baselines under the accuracy decision rule
(`harness.stats.accuracy`)."""

from __future__ import annotations

import contextlib
import json
import shlex
from pathlib import Path
from typing import Any, ClassVar

from harness.errors import HarnessError
from harness.evidence.accuracy import run_runbook_accuracy
from harness.evidence.golden import golden_evidence_check, run_golden
from harness.evidence.runbook import Runbook, load_runbook
from harness.evidence.server import RunningServer
from harness.record.checks import Check, CheckStatus
from harness.record.models import Draft, RunInputs
from harness.stats.accuracy import AccuracyDecision
from harness.steps.base import StepContext
from harness.steps.drafting import write_up_draft
from harness.steps.served import ServedStep, server_log_tail, start_reference
from harness.util.files import tail

ACCURACY = "accuracy"
GOLDEN = "golden"
LOG_TAIL_LINES = 40


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
        commands = run_golden(runbook.golden, ctx.evidence_dir / GOLDEN, cwd=runbook.source.resolve().parent,
                              env=runbook.environment.env)
        return {}, [f"(cd {shlex.quote(str(runbook.source.resolve().parent))} && {c})" for c in commands]

    def judge_static(self, evidence_dir: Path, inputs: RunInputs) -> list[Check]:
        if not (evidence_dir / GOLDEN / "run.json").is_file():
            return []
        return [golden_evidence_check(evidence_dir / GOLDEN)]

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


def suite_checks(accuracy_dir: Path, suites: list[str], server_log: str | None = None) -> list[Check]:
    """One check per suite, in runbook order; a failed or not-run suite carries the server's
    log tail (`server_log`) after its own."""
    checks = []
    for name in suites:
        check = suite_check(accuracy_dir / name)
        if check.status in (CheckStatus.failed, CheckStatus.not_run) and server_log:
            check.detail = f"{check.detail or ''}\n--- server log tail ---\n{server_log}".strip()
        checks.append(check)
    return checks


def suite_check(suite_dir: Path) -> Check:
    """`accuracy.<suite>`, read back from a suite's evidence (run.json, gate.json): the decision
    rule's outcome and numbers (against the recorded baseline, or the reference server evaluated
    in the same run), `not_run` without a baseline (with what was measured), or the error that
    stopped the evaluation (with lm-eval's log tail)."""
    run: dict[str, Any] = json.loads((suite_dir / "run.json").read_text())
    name = f"accuracy.{run['suite']['name']}"
    evidence = [str(p) for p in sorted(suite_dir.rglob("*")) if p.is_file()]
    error = run.get("error")
    if error:
        detail = "\n".join(tail(suite_dir / "lm_eval.log", LOG_TAIL_LINES)) or None
        return Check(name=name, status=CheckStatus(error["status"]), reason=error["reason"], detail=detail,
                     evidence=evidence, unusable_input=error.get("unusable_input", False))
    measured = run["measured"]
    metrics: dict[str, Any] = {k: measured[k] for k in ("metric", "score", "n", "unpaired_questions") if k in measured}
    gate = suite_dir / "gate.json"
    if not gate.is_file():
        return Check(name=name, status=CheckStatus.not_run, evidence=evidence, metrics=metrics,
                     reason=f"no baseline in the runbook: measured {measured['metric']} = {measured['score']:.4f} "
                            f"on {measured['n']} questions, not gated")
    result = AccuracyDecision.model_validate_json(gate.read_text())
    metrics.update(result.model_dump(exclude={"summary"}))
    reason = result.summary.removeprefix(f"{result.outcome}: ")  # the check's status already says it
    available = measured.get("dataset_questions")
    if result.more_questions is not None and available is not None:
        metrics["dataset_questions"] = available
        if result.n + result.more_questions > available:
            reason += f" That is more than the {available} questions the data set holds."
        else:
            reason += f" The data set holds {available}; raise `limit` to use more."
    reference = run.get("reference")
    if reference and "score" in reference:
        metrics["reference"] = reference["name"]
        reason += (f" Baseline: reference server {reference['name']} ({reference['model']}), evaluated on the same "
                   f"questions in this run.")
    return Check(name=name, status=CheckStatus(result.outcome), reason=reason, metrics=metrics, evidence=evidence)
