"""One base for the steps that serve a model (2 interface, 3 operators, 4 accuracy, 5
performance): load the runbook, copy it into the evidence, start its server, let the step drive
it, and record in `served.json` anything that stopped that (no runbook or an unusable one, a
server that never got healthy, was not the one started or exited mid-step, a runner that
raised). Its `judge` turns those into checks — never a pass — and otherwise asks the step's
`judge_served` for the checks of what was measured. The engine's identity (`server.json`) is
written to the facts, so the report says which engine was measured.
"""

from __future__ import annotations

import contextlib
import shlex
from abc import abstractmethod
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel

from harness.errors import HarnessError, InputError
from harness.evidence.profile import trace_dir_of
from harness.evidence.runbook import Runbook, load_runbook
from harness.evidence.server import (
    RunningServer,
    ServedModel,
    ServerRecord,
    ServerStartError,
    failure_check,
    log_tail,
)
from harness.record.checks import Check, not_run, unusable
from harness.record.models import RunInputs
from harness.steps.base import Collected, Step, StepContext, runner_failure

SERVED = "served.json"
PROFILE = "profile"  # the profile evidence of the steps that take traces (operators, performance)
RUNBOOK_COPY = "runbook.yaml"
SERVER_DIR = "server"


class RunnerError(BaseModel):
    """A runner that raised while the server was up (`served.json`'s `runner_error`)."""

    reason: str
    detail: str | None = None
    unusable_input: bool = False  # an input file was at fault: the gate refuses approval


class ServedState(BaseModel):
    """`served.json`: what stopped the step's serving part, if anything; `{}` when nothing did.
    At most one field is set; written with exclude_unset, so older files read back the same."""

    unavailable: str | None = None  # no runbook given
    unusable: str | None = None  # the runbook no longer loads
    skipped: str | None = None  # the runbook asks nothing of this step
    start_failed: bool = False  # the server's own record (server.json) says why
    runner_error: RunnerError | None = None

    @classmethod
    def read(cls, path: Path) -> ServedState:
        """The state at `path`; a missing or unreadable file reads as a runner error."""
        try:
            return cls.model_validate_json(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return cls(runner_error=RunnerError(reason=f"{path.name} is missing or unreadable", detail=None))


class ServedStep(Step):
    """A step whose evidence comes from the runbook's served model.

    Subclasses set `check_name` (the check that stands for the step when nothing could be
    served) and implement `exercise` (drive the server, write evidence, return commands) and
    `judge_served` (the checks, read back from that evidence). `skip_reason` may say why the
    runbook asks nothing of this step (then no server is started)."""

    abstract: ClassVar[bool] = True
    check_name: ClassVar[str]

    def collect(self, ctx: StepContext) -> Collected:
        facts, commands = self.collect_static(ctx)
        runbook, state = _read_runbook(ctx.inputs)
        if runbook is not None:
            ctx.write_text(RUNBOOK_COPY, Path(ctx.inputs.runbook).read_text(encoding="utf-8"))
            skip = self.skip_reason(runbook)
            if skip:
                state.skipped = skip
            else:
                served = ServedModel.from_runbook(runbook, ctx.evidence_dir / SERVER_DIR, registry=ctx.processes,
                                                  progress=ctx.progress, trace_dir=self.trace_dir(ctx, runbook))
                try:
                    with served as server:
                        commands.append(shlex.join(server.command))
                        try:
                            commands += self.exercise(ctx, runbook, server)
                        except Exception:
                            served.confirm_alive()  # an engine that died mid-step explains what failed
                            raise
                        served.confirm_alive()
                    self.after_serving(ctx, runbook, list(server.log_paths))
                except ServerStartError:
                    state.start_failed = True  # the server's record says why
                except Exception as exc:  # noqa: BLE001 — any runner failure is recorded, not passed
                    check = runner_failure(self.check_name, exc)
                    state.runner_error = RunnerError(reason=check.reason or "", detail=check.detail,
                                                     unusable_input=isinstance(exc, InputError))
                engine = _identity(ctx.evidence_dir / SERVER_DIR / "server.json", runbook)
                if engine:
                    facts["engine"] = engine
        ctx.write_json(SERVED, state.model_dump(mode="json", exclude_unset=True))
        return Collected(facts=facts, commands=commands)

    def collect_static(self, ctx: StepContext) -> tuple[dict[str, Any], list[str]]:
        """Evidence that needs no server (facts, commands); none by default."""
        return {}, []

    def trace_dir(self, ctx: StepContext, runbook: Runbook) -> Path | None:
        """Where the engine's profiler writes this step's traces, when the step takes them
        through the engine's endpoints (the server is launched for it); None by default."""
        return None

    def after_serving(self, ctx: StepContext, runbook: Runbook, logs: list[Path]) -> None:
        """Evidence read from the stopped server's complete logs; nothing by default."""

    def skip_reason(self, runbook: Runbook) -> str | None:
        """Why the runbook asks nothing of this step, or None."""
        return None

    @abstractmethod
    def exercise(self, ctx: StepContext, runbook: Runbook, server: RunningServer) -> list[str]:
        """Drive the healthy server, writing evidence under ctx.evidence_dir; return the
        commands that reproduce it."""

    @abstractmethod
    def judge_served(self, evidence_dir: Path, runbook: Runbook) -> list[Check]:
        """The checks of what `exercise` measured, read back from `evidence_dir`."""

    def judge(self, evidence_dir: Path, inputs: RunInputs) -> list[Check]:
        return self.judge_static(evidence_dir, inputs) + self.judge_serving(evidence_dir, inputs)

    def judge_static(self, evidence_dir: Path, inputs: RunInputs) -> list[Check]:
        """Checks of the `collect_static` evidence; none by default."""
        return []

    def judge_serving(self, evidence_dir: Path, inputs: RunInputs) -> list[Check]:
        """What serving the model showed: a not-run or failed check when it could not be served,
        else the step's `judge_served` checks."""
        state = ServedState.read(evidence_dir / SERVED)
        if state.unusable is not None:
            return [unusable(self.check_name, state.unusable)]
        if state.unavailable is not None:
            return [not_run(self.check_name, state.unavailable)]
        if state.skipped is not None:
            return [not_run(self.check_name, state.skipped)]
        if state.runner_error is not None:
            error = state.runner_error
            return [not_run(self.check_name, error.reason, detail=error.detail, unusable_input=error.unusable_input)]
        if state.start_failed:
            started = failure_check(evidence_dir / SERVER_DIR / "server.json")
            return [started or not_run(self.check_name, "the server did not start and left no record")]
        checks = self.judge_served(evidence_dir, evidence_runbook(evidence_dir, inputs))
        return checks or [not_run(self.check_name, "the runbook defines nothing for this step")]


def _read_runbook(inputs: RunInputs) -> tuple[Runbook | None, ServedState]:
    """The run's runbook and a fresh state, or None and why there is none: `unavailable` when
    none was given, `unusable` when it no longer loads (edited after `run` checked it)."""
    if not inputs.runbook:
        return None, ServedState(unavailable="no runbook given (--runbook)")
    try:
        return load_runbook(inputs.runbook), ServedState()
    except HarnessError as exc:
        return None, ServedState(unusable=f"runbook unusable: {exc}")


def _identity(record_path: Path, runbook: Runbook) -> dict[str, Any] | None:
    """What the report shows of the engine that was measured: the engine and release the runbook
    names (`serving`, e.g. "vLLM 0.27.1") and the process's identity from server.json, which
    says what actually served (a stand-in server shows as itself)."""
    record = ServerRecord.read(record_path)
    if record is None or record.identity is None:
        return None
    identity = record.identity
    environment = runbook.environment
    return {"serving": f"{environment.serving.display} {environment.version}", "pid": identity.pid,
            "program": " ".join(identity.program or record.command), "models": identity.models, "port": record.port}


def evidence_runbook(evidence_dir: Path, inputs: RunInputs) -> Runbook:
    """The runbook as copied into the evidence; its relative paths resolve against the
    original's directory, as they did when the step ran."""
    return load_runbook(evidence_dir / RUNBOOK_COPY, base_dir=Path(inputs.runbook).parent)


def start_reference(ctx: StepContext, runbook: Runbook, name: str, started: dict[str, RunningServer | str],
                    stack: contextlib.ExitStack) -> RunningServer | str:
    """The runbook's reference server `name`, started once per step (kept up on `stack` for
    every suite naming it; its record under `reference-<name>/`), or why it did not start."""
    if name not in started:
        ctx.progress(f"{ctx.slug}: starting reference server {name}")
        served = ServedModel(runbook.references[name], ctx.evidence_dir / f"reference-{name}",
                             env=runbook.environment.env, registry=ctx.processes, progress=ctx.progress,
                             launcher=runbook.launcher)
        try:
            started[name] = stack.enter_context(served)
        except ServerStartError as exc:
            started[name] = f"reference server {name} did not start: {exc}"
    return started[name]


def profiled_trace_dir(ctx: StepContext, runbook: Runbook) -> Path | None:
    """The trace directory of a step that profiles through the engine's endpoints (the runbook
    has `profiling` without a trace `command`); None otherwise."""
    spec = runbook.profiling
    if spec is None or spec.command:
        return None
    return trace_dir_of(spec, ctx.evidence_dir / PROFILE)


def runbook_dir(runbook: Runbook) -> Path:
    """Where a runbook's commands (golden captures, trace commands) run: its own directory."""
    return runbook.source.resolve().parent if runbook.source else Path.cwd()


def server_log_tail(evidence_dir: Path) -> str | None:
    """The served model's log tail, as recorded in the step's evidence."""
    logs = [evidence_dir / SERVER_DIR / f"server.{kind}.log" for kind in ("stderr", "stdout")]
    present = [p for p in logs if p.is_file()]
    return log_tail(present) if present else None
