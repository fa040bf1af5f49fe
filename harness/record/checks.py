"""The verdict vocabulary: a step's `judge` reads its evidence files back and returns `Check`s
that point at them; reports and gates read only these. A check that could not run says so
(`not_run` + reason) — it is never reported as passed.
"""

from __future__ import annotations

from enum import Enum
from typing import Any

from pydantic import BaseModel, Field


class CheckStatus(str, Enum):
    passed = "passed"
    failed = "failed"
    inconclusive = "inconclusive"  # ran, but the evidence does not decide (e.g. too few samples)
    not_run = "not_run"  # could not run here; `reason` says why


class Check(BaseModel):
    name: str = Field(description="What was checked, e.g. 'smoke.determinism' or 'accuracy.gsm8k'.")
    status: CheckStatus
    reason: str | None = Field(
        default=None, description="One line: why it failed / was inconclusive / did not run."
    )
    detail: str | None = Field(default=None, description="Longer context, e.g. the last log lines.")
    evidence: list[str] = Field(
        default_factory=list, description="Paths of the evidence files this verdict was read from."
    )
    metrics: dict[str, Any] = Field(default_factory=dict, description="Numbers behind the verdict.")
    unusable_input: bool = Field(
        default=False,
        description="Not run because an input (runbook, recipes, baseline, data) is unusable: the step's gate "
        "refuses approval until the input is fixed and the step rerun.",
    )

    @property
    def ok(self) -> bool:
        return self.status is CheckStatus.passed

    def label(self) -> str:
        """'passed', 'failed: <reason>', 'not run: <reason>' — the one-line form reports print."""
        text = self.status.value.replace("_", " ")
        return f"{text}: {self.reason}" if self.reason else text


def not_run(name: str, reason: str, **fields: Any) -> Check:
    """A check that could not run here, with the reason."""
    return Check(name=name, status=CheckStatus.not_run, reason=reason, **fields)


def unusable(name: str, reason: str, **fields: Any) -> Check:
    """A check that could not run because an input is unusable (`reason` names it)."""
    return Check(name=name, status=CheckStatus.not_run, reason=reason, unusable_input=True, **fields)


def overall(checks: list[Check]) -> CheckStatus:
    """Worst status wins: failed > inconclusive > not_run > passed; no checks is not_run."""
    if not checks:
        return CheckStatus.not_run
    order = [CheckStatus.failed, CheckStatus.inconclusive, CheckStatus.not_run, CheckStatus.passed]
    return min((c.status for c in checks), key=order.index)
