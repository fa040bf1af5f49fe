"""Where a workspace keeps its runs.

    <workspace>/.harness/state.sqlite              LangGraph checkpoints (all runs)
    <workspace>/.harness/runs/<run-id>/run.json    the run's inputs, written once at start
    <workspace>/.harness/runs/<run-id>/journal.jsonl  the trajectory (harness.record.trajectory)
    <workspace>/.harness/runs/<run-id>/superseded/ evidence of attempts a rejection replaced
    <workspace>/.harness/runs/<run-id>/processes/  one file per process group a step runs
                                                   (harness.record.processes)
    <workspace>/reports/<run-id>/summary.md        rendered from state + evidence
    <workspace>/reports/<run-id>/NN-<step>.md      one report per step
    <workspace>/reports/<run-id>/evidence/NN-<step>/  the evidence files reports link to and
                                                   approvals hash

Evidence lives beside the reports so a report set is self-contained and its links are relative.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from harness.errors import HarnessError
from harness.record.trajectory import Trajectory, fold

_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


def utc_now() -> str:
    """Now, UTC, to the second: `2026-01-31T12:00:00Z`."""
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def check_run_id(run_id: str) -> str:
    """`run_id` if it is a valid run id (letters, digits, '.', '_', '-'; at most 100), else
    HarnessError."""
    if not _RUN_ID.match(run_id):
        raise HarnessError(
            f"invalid run id {run_id!r}: use letters, digits, '.', '_' and '-' (at most 100)"
        )
    return run_id


@dataclass(frozen=True)
class Workspace:
    root: Path

    @property
    def harness_dir(self) -> Path:
        return self.root / ".harness"

    @property
    def state_db(self) -> Path:
        return self.harness_dir / "state.sqlite"

    @property
    def runs_dir(self) -> Path:
        return self.harness_dir / "runs"

    def run(self, run_id: str) -> RunLayout:
        return RunLayout(self, check_run_id(run_id))

    def run_ids(self) -> list[str]:
        if not self.runs_dir.is_dir():
            return []
        return sorted(p.name for p in self.runs_dir.iterdir() if (p / "run.json").is_file())


@dataclass(frozen=True)
class RunLayout:
    workspace: Workspace
    run_id: str

    @property
    def run_dir(self) -> Path:
        return self.workspace.runs_dir / self.run_id

    @property
    def run_json(self) -> Path:
        return self.run_dir / "run.json"

    @property
    def journal(self) -> Path:
        return self.run_dir / "journal.jsonl"

    @property
    def lock_file(self) -> Path:
        return self.run_dir / "lock"

    @property
    def staging_dir(self) -> Path:
        """Temp evidence dirs live on the same filesystem as their destination so the final
        rename is atomic."""
        return self.reports_dir / "evidence" / ".staging"

    @property
    def processes_dir(self) -> Path:
        return self.run_dir / "processes"

    @property
    def superseded_dir(self) -> Path:
        return self.run_dir / "superseded"

    @property
    def reports_dir(self) -> Path:
        return self.workspace.root / "reports" / self.run_id

    @property
    def summary(self) -> Path:
        return self.reports_dir / "summary.md"

    def evidence_dir(self, step_slug: str) -> Path:
        return self.reports_dir / "evidence" / step_slug

    def step_report(self, step_slug: str) -> Path:
        return self.reports_dir / f"{step_slug}.md"

    def exists(self) -> bool:
        return self.run_json.is_file()

    def require(self) -> RunLayout:
        if not self.exists():
            known = self.workspace.run_ids()
            hint = f" (known: {', '.join(known[-5:])})" if known else " (this workspace has no runs)"
            raise HarnessError(f"unknown run id {self.run_id!r} in {self.workspace.root}{hint}")
        return self

    def log(self, event: str, **fields: object) -> None:
        """Append one journal line; fsync so a SIGKILL right after still leaves it on disk. A
        line torn by an earlier kill (no final newline) is closed first, so it cannot swallow
        this one."""
        self.run_dir.mkdir(parents=True, exist_ok=True)
        line = json.dumps({"at": utc_now(), "event": event, **fields}, sort_keys=True)
        with open(self.journal, "a+b") as fh:
            fh.seek(0, os.SEEK_END)
            torn = False
            if fh.tell():
                fh.seek(-1, os.SEEK_END)
                torn = fh.read(1) != b"\n"
            fh.write((b"\n" if torn else b"") + line.encode() + b"\n")
            fh.flush()
            os.fsync(fh.fileno())

    def trajectory(self) -> Trajectory:
        """The journal folded into each step's record and decisions."""
        events, torn = self._read_journal()
        return fold(events, torn)

    def journal_events(self) -> list[dict]:
        """Every journal line, oldest first."""
        return self._read_journal()[0]

    def _read_journal(self) -> tuple[list[dict], int]:
        if not self.journal.is_file():
            return [], 0
        events, torn = [], 0
        for line in self.journal.read_text(encoding="utf-8", errors="replace").splitlines():
            if not line.strip():
                continue
            try:
                events.append(json.loads(line))
            except json.JSONDecodeError:
                torn += 1  # a line torn by a kill mid-write; the rest of the journal still counts
        return events, torn
