"""The drafting seam. An AI drafter (a later issue) proposes the step's change or write-up from
the step's facts and checks; until one is configured every step records that no draft was made."""

from __future__ import annotations

from typing import Any, Protocol

from pydantic import BaseModel

from harness.evidence.checks import Check


class Draft(BaseModel):
    status: str  # drafted | not_run
    reason: str | None = None
    text: str | None = None


class Drafter(Protocol):
    def draft(
        self, step: str, facts: dict[str, Any], checks: list[Check], rejection_reason: str | None
    ) -> Draft: ...


class NoDrafter:
    def draft(self, step, facts, checks, rejection_reason) -> Draft:
        return Draft(status="not_run", reason="AI drafting is not configured")


def default_drafter() -> Drafter:
    return NoDrafter()
