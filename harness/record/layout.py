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

import contextlib
import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from harness.errors import HarnessError
from harness.record.trajectory import Trajectory, fold

_RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


def utc_now() -> str:
    """Now, UTC, to the second: `2026-01-31T12:00:00Z`."""
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def check_run_id(run_id: str) -> str:
    """`run_id` if it is a valid run id (letters, digits, '.', '_', '-'; at most 100), else
    HarnessError."""
    if not _RUN_ID.fullmatch(run_id):  # not match(...$): `$` also matches before a final newline
        raise HarnessError(
            f"invalid run id {run_id!r}: use letters, digits, '.', '_' and '-' (at most 100)"
        )
    return run_id


# Where to look when a workspace has no runs: said by `status` and by a command given a run id
RUNS_LIVE_WHERE_STARTED = "runs live where `harness run` or `upgrade` was started: cd there, or pass --workspace DIR"
# The run ids an unknown id's error lists, the last in sort order; the rest are counted
_KNOWN_SHOWN = 5

# `.harness/.gitignore`: what harness writes per run; `skills/` (lessons) is meant to be committed
GITIGNORE = "# Written by harness: run state, recreated by each run. Lessons in skills/ are committed.\n/.gitignore\n/runs/\n/state.sqlite*\n"
# `reports/.gitignore`, when harness creates reports/: evidence a team commits on purpose (`git add -f`)
REPORTS_GITIGNORE = "# Written by harness: reports and their evidence, rendered again from it. Commit one with git add -f.\n*\n"


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

    def make_harness_dir(self) -> Path:
        """`.harness/`, created with a `.gitignore` for the run state in it (a workspace is often
        the plugin's checkout: `git status` there stays clean); lessons the knowledge step commits
        under `.harness/skills/` are not ignored. An existing `.gitignore` is the team's: kept."""
        self.harness_dir.mkdir(parents=True, exist_ok=True)
        ignore = self.harness_dir / ".gitignore"
        if not ignore.exists() and not ignore.is_symlink():
            with contextlib.suppress(FileExistsError):  # another process wrote it first
                with open(ignore, "x", encoding="utf-8") as fh:
                    fh.write(GITIGNORE)
        return self.harness_dir

    def make_reports_dir(self) -> Path:
        """`reports/`; when harness creates it, with a `.gitignore` ignoring everything in it, so a
        workspace that is the plugin's checkout keeps `git status` clean. A reports/ that exists
        is the team's and left as it is."""
        reports = self.root / "reports"
        try:
            reports.mkdir(parents=True)
        except FileExistsError:
            return reports
        (reports / ".gitignore").write_text(REPORTS_GITIGNORE, encoding="utf-8")
        return reports

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
        """This run, or HarnessError naming the ids the workspace has (the last few, with how
        many more, so none seems missing) or, when it has none, where runs are kept: a run id
        given from another directory is looked up there."""
        if not self.exists():
            known = self.workspace.run_ids()
            more = len(known) - _KNOWN_SHOWN
            rest = f" and {more} more; `harness status` lists them" if more > 0 else ""
            hint = f"known: {', '.join(known[-_KNOWN_SHOWN:])}{rest}" if known else f"this workspace has no runs; {RUNS_LIVE_WHERE_STARTED}"
            raise HarnessError(f"unknown run id {self.run_id!r} in {self.workspace.root} ({hint})")
        return self

    def log(self, event: str, **fields: object) -> None:
        """Append one journal line; fsync so a SIGKILL right after still leaves it on disk. A
        line torn by an earlier kill (no final newline) is closed first, so it cannot swallow
        this one. In a chained journal (every run started since chaining; `trajectory`'s
        docstring) the line carries `prev`, the sha256 of the line before it; a legacy journal
        stays unchained."""
        self.workspace.make_harness_dir()
        self.run_dir.mkdir(parents=True, exist_ok=True)
        with open(self.journal, "a+b") as fh:
            fh.seek(0)
            existing = fh.read()
            lines = [raw for raw in existing.split(b"\n") if raw.strip()]
            if not lines or self._chained(lines):
                fields["prev"] = line_hash(lines[-1]) if lines else CHAIN_START
            line = json.dumps({"at": utc_now(), "event": event, **fields}, sort_keys=True)
            torn = bool(existing) and not existing.endswith(b"\n")
            fh.write((b"\n" if torn else b"") + line.encode() + b"\n")
            fh.flush()
            os.fsync(fh.fileno())

    def trajectory(self) -> Trajectory:
        """The journal folded into each step's record and decisions; in a chained journal only
        the lines up to its first break (`Trajectory.broken` says where)."""
        read = self.read_journal()
        return fold(read.events, read.torn, read.broken)

    def journal_events(self) -> list[dict]:
        """Every journal line that is an object, oldest first (up to a chain break)."""
        return self.read_journal().events

    def chained(self) -> bool:
        """Whether run.json says the journal is chained (every run started since chaining)."""
        try:
            return json.loads(self.run_json.read_text(encoding="utf-8")).get("journal") == "chained"
        except (OSError, ValueError, AttributeError):
            return False

    def _chained(self, lines: list[bytes]) -> bool:
        """A journal is chained when run.json says so or its first line carries `prev`: stripping
        the chain from every line is detected by the first, from run.json by its pin."""
        if self.chained():
            return True
        try:
            first = json.loads(lines[0])
        except ValueError:
            return False
        return isinstance(first, dict) and "prev" in first

    def read_journal(self) -> JournalRead:
        """The journal's object lines, the lines skipped (torn by a kill mid-write, or not JSON
        objects) and, for a chained journal, where its chain breaks (None: intact). Lines after
        a break are not returned: nothing past it can be trusted."""
        if not self.journal.is_file():
            return JournalRead()
        data = self.journal.read_bytes()
        lines = [(n, raw) for n, raw in enumerate(data.split(b"\n"), 1) if raw.strip()]
        chained = bool(lines) and self._chained([raw for _, raw in lines])
        read, previous, previous_n = JournalRead(chained=chained), None, 0
        for n, raw in lines:
            try:
                event = json.loads(raw)
            except ValueError:
                event = None  # a line torn by a kill mid-write; in a chain the next line covers it
            if chained and event is not None:
                expected = line_hash(previous) if previous is not None else CHAIN_START
                found = event.get("prev") if isinstance(event, dict) else None
                if found != expected:
                    what = "carries no chain hash" if found is None else (
                        "is not the journal's first line" if previous is None else
                        f"does not follow line {previous_n} (one of them was edited, or a line between them "
                        f"removed or inserted)")
                    read.broken = f"{self.journal} line {n} {what}"
                    break
            previous, previous_n = raw, n
            if isinstance(event, dict):
                read.events.append(event)
            else:
                read.torn += 1
        return read


CHAIN_START = ""  # the `prev` of a chained journal's first line


def line_hash(line: bytes) -> str:
    """sha256 (hex) of one journal line's bytes, without its newline: the next line's `prev`."""
    return hashlib.sha256(line).hexdigest()


@dataclass
class JournalRead:
    """What `RunLayout.read_journal` found."""

    events: list[dict] = field(default_factory=list)
    torn: int = 0  # lines skipped: torn by a kill, or JSON that is not an object
    broken: str | None = None  # chained journals: where the chain breaks
    chained: bool = False
