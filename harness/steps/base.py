"""The one shape every step has: inputs → evidence → checks → draft → report.

`execute_step` owns the parts that must be the same for all five: evidence is built in a
staging dir and renamed into place only when complete (so a SIGKILL leaves either the old
evidence or the new, never half), completion is recorded in the evidence itself
(`step.json`), and a re-executed node that finds its attempt already complete reuses it
instead of redoing the work.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import shutil
import signal
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel, Field

from harness.evidence.checks import Check, CheckStatus, overall
from harness.steps.draft import Draft, Drafter, default_drafter
from harness.workflow.hashing import evidence_files
from harness.workflow.layout import RunLayout, utc_now
from harness.workflow.state import FeatureSpec, RunInputs

STEP_RECORD = "step.json"


class StepResult(BaseModel):
    """Written as `step.json` into the step's evidence: the checks and the facts the report shows."""

    step: str
    number: int
    title: str
    attempt: int
    rejection_reason: str | None = None  # the reviewer's reason that triggered this attempt
    started_at: str
    finished_at: str
    verdict: CheckStatus
    checks: list[Check]
    facts: dict[str, Any] = Field(default_factory=dict)  # step-specific, rendered by its template
    commands: list[str] = Field(default_factory=list)  # how to reproduce the evidence
    environment: dict[str, str] = Field(default_factory=dict)
    draft: Draft


@dataclass
class Evidence:
    """What `produce_evidence` hands to `run_checks` and the report: facts + commands.
    The files themselves are already written under `StepContext.evidence_dir`."""

    facts: dict[str, Any] = field(default_factory=dict)
    commands: list[str] = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)  # checks the evidence runners returned


@dataclass
class StepContext:
    run: RunLayout
    inputs: RunInputs
    slug: str
    attempt: int
    rejection_reason: str | None
    evidence_dir: Path  # the staging dir while the step runs
    progress: Callable[[str], None] = lambda message: None

    @property
    def feature(self) -> FeatureSpec:
        return self.inputs.feature

    @property
    def plugin(self) -> Path:
        return Path(self.inputs.plugin)

    @cached_property
    def upstream(self):
        from harness.steps.knowledge import resolve
        from harness.workflow.pins import check_pin

        return check_pin("--upstream", self.inputs.upstream_pin, resolve(self.inputs.upstream))

    @cached_property
    def old_upstream(self):
        from harness.steps.knowledge import resolve
        from harness.workflow.pins import check_pin

        if not self.inputs.from_upstream:
            return None
        return check_pin("--from", self.inputs.from_pin, resolve(self.inputs.from_upstream))

    def write_json(self, name: str, data: Any) -> str:
        """Write one evidence file (sorted keys, so two runs diff cleanly); return its name."""
        path = self.evidence_dir / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data, indent=2, sort_keys=True, default=str) + "\n", encoding="utf-8")
        return name

    def write_text(self, name: str, text: str) -> str:
        path = self.evidence_dir / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return name


class Step(Protocol):
    number: int
    name: str
    title: str

    def read_inputs(self, ctx: StepContext) -> Any: ...

    def produce_evidence(self, ctx: StepContext, inputs: Any) -> Evidence: ...

    def run_checks(self, ctx: StepContext, inputs: Any, evidence: Evidence) -> list[Check]: ...


def slug_of(step: Step) -> str:
    return f"{step.number:02d}-{step.name}"


def not_run(name: str, reason: str, **kw: Any) -> Check:
    return Check(name=name, status=CheckStatus.not_run, reason=reason, **kw)


def runner_failure(name: str, exc: BaseException, what: str = "evidence runner") -> Check:
    """A runner (or the knowledge engine) that is missing or raised: the check did not run, and
    says why."""
    if isinstance(exc, ImportError):
        reason = f"{what} not available ({exc})"
    else:
        reason = f"{type(exc).__name__}: {exc}".splitlines()[0]
    detail = "".join(traceback.format_exception(exc)) if not isinstance(exc, ImportError) else None
    return not_run(name, reason, detail=detail)


def environment(ctx: StepContext) -> dict[str, str]:
    from harness import __version__
    from harness.workflow.pins import describe

    env = {
        "harness": __version__,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "machine": platform.machine(),
        "upstream": ctx.inputs.upstream,
        "plugin": ctx.inputs.plugin + (f" @ {ctx.inputs.plugin_commit}" if ctx.inputs.plugin_commit else ""),
    }
    if ctx.inputs.upstream_pin:
        env["upstream fingerprint"] = describe(ctx.inputs.upstream_pin)
    if ctx.inputs.from_upstream:
        env["from upstream"] = ctx.inputs.from_upstream
        if ctx.inputs.from_pin:
            env["from upstream fingerprint"] = describe(ctx.inputs.from_pin)
    if ctx.inputs.runbook:
        env["runbook"] = ctx.inputs.runbook
    return env


def load_result(evidence_dir: Path) -> StepResult | None:
    record = evidence_dir / STEP_RECORD
    if not record.is_file():
        return None
    try:
        return StepResult.model_validate_json(record.read_text(encoding="utf-8"))
    except ValueError:
        return None  # tampered or torn: the caller treats the step as not finished


def execute_step(
    step: Step,
    ctx_factory: Callable[[Path], StepContext],
    run: RunLayout,
    attempt: int,
    drafter: Drafter | None = None,
) -> StepResult:
    """Run one step attempt to completion, or reuse it when a previous process finished it."""
    slug = slug_of(step)
    final_dir = run.evidence_dir(slug)
    done = load_result(final_dir)
    if done is not None and done.attempt == attempt:
        run.log("step_reused", step=slug, attempt=attempt)
        return done

    run.log("step_started", step=slug, attempt=attempt)
    run.staging_dir.mkdir(parents=True, exist_ok=True)
    staging = run.staging_dir / f"{slug}.attempt-{attempt}"
    if staging.exists():  # left by a process killed mid-step: its partial files are not evidence
        _stop_orphaned_servers(staging)
        shutil.rmtree(staging)
    staging.mkdir()
    ctx = ctx_factory(staging)
    started = utc_now()

    inputs = step.read_inputs(ctx)
    evidence = step.produce_evidence(ctx, inputs)
    checks = [_relative_evidence(c, staging) for c in step.run_checks(ctx, inputs, evidence)]
    draft = (drafter or default_drafter()).draft(slug, evidence.facts, checks, ctx.rejection_reason)
    result = StepResult(
        step=step.name,
        number=step.number,
        title=step.title,
        attempt=attempt,
        rejection_reason=ctx.rejection_reason,
        started_at=started,
        finished_at=utc_now(),
        verdict=overall(checks),
        checks=checks,
        facts=evidence.facts,
        commands=evidence.commands,
        environment=environment(ctx),
        draft=draft,
    )
    record = staging / STEP_RECORD
    record.write_text(result.model_dump_json(indent=2) + "\n", encoding="utf-8")
    _fsync_tree(staging)

    if final_dir.exists():  # a rejected attempt: keep it, out of the way of the new evidence
        run.superseded_dir.mkdir(parents=True, exist_ok=True)
        previous = load_result(final_dir)
        tag = f"attempt-{previous.attempt}" if previous else f"stale-{os.getpid()}"
        target = run.superseded_dir / f"{slug}.{tag}"
        if target.exists():
            shutil.rmtree(target)
        os.rename(final_dir, target)
    os.rename(staging, final_dir)
    _fsync_dir(final_dir.parent)
    with contextlib.suppress(OSError):  # only when empty: another step may be staging
        run.staging_dir.rmdir()
    run.log("step_finished", step=slug, attempt=attempt, verdict=result.verdict.value)
    return result


def _stop_orphaned_servers(staging: Path) -> None:
    """A process killed mid-step leaves the server it started running (its own process group).
    The lifecycle records each server's pid, process group and kernel start time; stop the group
    of each recorded server whose pid is still the same process (same start time). The command
    line is no proof: a launch command may exec into another program (`serve` execs
    `python -m llama_cpp.server`), and a recycled pid must never be signalled."""
    from harness.evidence.server import process_start_time

    for record_path in staging.rglob("*.json"):
        try:
            record = json.loads(record_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not isinstance(record, dict) or not isinstance(record.get("pid"), int) or not record.get("command"):
            continue
        if "exit_code" in record:
            continue  # the lifecycle stopped it already; its group id may belong to someone else now
        pid = record["pid"]
        recorded_start = record.get("proc_start_time")
        if isinstance(recorded_start, int):
            if process_start_time(pid) != recorded_start:
                continue  # gone, or the pid now belongs to another process: leave it alone
        else:  # a record from before start times were kept: only an unchanged command line counts
            try:
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue  # gone already
            if [part.decode(errors="replace") for part in cmdline if part] != list(record["command"]):
                continue
        pgid = record.get("pgid", pid)
        try:
            if not isinstance(pgid, int) or pgid <= 1 or os.getpgid(pid) != pgid:
                continue
        except OSError:
            continue
        try:
            os.killpg(pgid, signal.SIGKILL)
        except OSError:
            pass


def _relative_evidence(check: Check, evidence_dir: Path) -> Check:
    """Runners may return absolute paths into the staging dir, which is renamed away; reports
    need paths relative to the step's evidence dir."""
    rel = []
    for item in check.evidence:
        path = Path(item)
        if path.is_absolute():
            try:
                item = path.resolve().relative_to(evidence_dir.resolve()).as_posix()
            except ValueError:
                pass  # outside the evidence dir (e.g. a shared baseline): keep as given
        rel.append(item)
    return check.model_copy(update={"evidence": rel})


def _fsync_tree(root: Path) -> None:
    for rel in evidence_files(root):
        with open(root / rel, "rb") as fh:
            os.fsync(fh.fileno())
    _fsync_dir(root)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)

