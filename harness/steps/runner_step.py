"""Shared shape of the steps whose evidence comes from the evidence runners (a served model and
the runbook): load the runbook, call the step's one seam into the runners, gate on its checks.

A runner that is missing or raises yields `not run: <reason>` checks — never a pass."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness.errors import HarnessError
from harness.evidence.checks import Check
from harness.steps.base import Evidence, StepContext, not_run, runner_failure

# (ctx, runbook) -> (checks, commands to reproduce). Writes its files under ctx.evidence_dir.
Seam = Callable[[StepContext, Any], tuple[list[Check], list[str]]]


@dataclass
class RunbookInputs:
    runbook: Any = None
    unavailable: str | None = None  # why the runbook could not be used


def read_runbook(ctx: StepContext) -> RunbookInputs:
    if not ctx.inputs.runbook:
        return RunbookInputs(unavailable="no runbook given (--runbook)")
    try:
        from harness.evidence.runbook import load_runbook
    except ImportError as exc:
        return RunbookInputs(unavailable=f"runbook loader not available ({exc})")
    try:
        return RunbookInputs(runbook=load_runbook(ctx.inputs.runbook))
    except HarnessError as exc:
        return RunbookInputs(unavailable=f"runbook unusable: {exc}")


def call_seam(ctx: StepContext, inputs: RunbookInputs, seam: Seam, check_name: str) -> Evidence:
    if inputs.runbook is None:
        return Evidence(checks=[not_run(check_name, inputs.unavailable or "no runbook")])
    ctx.write_text("runbook.yaml", _read(ctx.inputs.runbook))
    try:
        checks, commands = seam(ctx, inputs.runbook)
    except Exception as exc:  # noqa: BLE001 — any runner failure is recorded, not passed
        checks, commands = [runner_failure(check_name, exc)], []
    if not checks:
        checks = [not_run(check_name, "the runbook defines nothing for this step")]
    return Evidence(checks=checks, commands=commands)


def _read(path: str) -> str:
    with open(path, encoding="utf-8") as fh:
        return fh.read()
