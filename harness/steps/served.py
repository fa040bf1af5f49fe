"""One base for the steps that serve a model (2 interface, 3 operators, 4 accuracy, 5
performance): load the runbook, copy it into the evidence, start its server, run the evidence
runners the step composes around it, and record in `served.json` anything that stopped that (no
runbook or an unusable one, a server that never got healthy, was not the one started or exited
mid-step, a runner that raised). Its `judge` turns those into checks — never a pass — and
otherwise judges what each runner measured (`judge_served`). The engine's identity
(`server.json`) is written to the facts, so the report says which engine was measured.
"""

from __future__ import annotations

import contextlib
import shlex
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel

from harness.errors import HarnessError, InputError
from harness.evidence.runbook import Runbook, load_runbook
from harness.evidence.runner import RUNNERS, Phase, runner
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
from harness.util.requirements import unmet_requirements

SERVED = "served.json"
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

    unavailable: str | None = None  # no runbook given, or its server's requirements not installed here
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
    served) and `runners`: the evidence runners the step composes, by their names in RUNNERS, in
    the order they run (checked when the class is defined). The base runs each one whose runbook
    section is set (`Runner.specs`) into `<evidence>/<name>` (`runner_dirs` may name another
    dir) at the runner's phase — a static one before the server starts, a serving one against the
    healthy server (`exercise`), a stopped one once the server has stopped — with the keywords
    the step's `runner_inputs` gives it, and judges each one (`judge_static`, `judge_served`).
    A step whose composition is procedural (one runner as another's workload, reference servers)
    overrides `exercise` and `judge_served`, and still runs only its declared runners, got
    through `runner(name)`. `skip_reason` may say why the runbook asks nothing of this step
    (then no server is started)."""

    abstract: ClassVar[bool] = True
    check_name: ClassVar[str]
    runners: ClassVar[tuple[str, ...]] = ()
    runner_dirs: ClassVar[dict[str, str]] = {}  # runner name -> its evidence dir, where that is not its name

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        unknown = [name for name in cls.runners if name not in RUNNERS]
        if unknown:
            raise TypeError(f"step {cls.__name__} composes unknown runner(s) {', '.join(unknown)}; "
                            f"known: {', '.join(sorted(RUNNERS))}")
        stray = sorted(set(cls.runner_dirs) - set(cls.runners))
        if stray:
            raise TypeError(f"step {cls.__name__}: runner_dirs names runner(s) it does not compose: {', '.join(stray)}")

    def collect(self, ctx: StepContext) -> Collected:
        facts, commands = self.collect_static(ctx)
        runbook, state = _read_runbook(ctx.inputs)
        if runbook is not None:
            ctx.write_text(RUNBOOK_COPY, Path(ctx.inputs.runbook).read_text(encoding="utf-8"))
            commands += self._run_phase("static", ctx, runbook, None)  # whether the server starts or not
            skip, unmet = self.skip_reason(runbook), unmet_requirements(runbook.server.requires)
            if skip:
                state.skipped = skip
            elif unmet:
                state.unavailable = not_installed(runbook, unmet)
            else:
                served = ServedModel.from_runbook(runbook, ctx.evidence_dir / SERVER_DIR, registry=ctx.processes,
                                                  progress=ctx.progress, trace_dir=self._trace_dir(ctx, runbook))
                try:
                    with served as server:
                        commands.append(shlex.join(server.command))
                        try:
                            commands += self.exercise(ctx, runbook, server)
                        except Exception:
                            served.confirm_alive()  # an engine that died mid-step explains what failed
                            raise
                        served.confirm_alive()
                    commands += self._run_phase("stopped", ctx, runbook, server)
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

    def skip_reason(self, runbook: Runbook) -> str | None:
        """Why the runbook asks nothing of this step, or None."""
        return None

    def runner_inputs(self, name: str, ctx: StepContext, runbook: Runbook,
                      server: RunningServer | None) -> dict[str, Any]:
        """The keywords the composed runner `name` takes besides its spec and evidence dir (a
        server, a workload, logs, traces, cwd, env). `server` is the healthy server for a serving
        runner, the stopped one (its `log_paths` complete) for a stopped one, None for a static
        one; none by default."""
        return {}

    def exercise(self, ctx: StepContext, runbook: Runbook, server: RunningServer) -> list[str]:
        """Drive the healthy server, writing evidence under ctx.evidence_dir; return the
        commands that reproduce it. By default: each serving runner in turn."""
        return self._run_phase("serving", ctx, runbook, server)

    def judge_served(self, evidence_dir: Path, runbook: Runbook) -> list[Check]:
        """The checks of what was measured with the server and after it, read back from
        `evidence_dir`. By default: each serving and stopped runner's, in turn."""
        return [check for name in self.runners if runner(name).phase != "static"
                for check in self.judge_runner(name, evidence_dir, runbook)]

    def runner_dir(self, name: str, evidence_dir: Path) -> Path:
        """Where the composed runner `name` writes its evidence in the step's `evidence_dir`
        (KeyError for a runner the step does not compose)."""
        if name not in self.runners:
            raise KeyError(f"step {self.name} does not compose runner {name!r}; it composes {', '.join(self.runners)}")
        return evidence_dir / self.runner_dirs.get(name, name)

    def run_runner(self, name: str, ctx: StepContext, runbook: Runbook, server: RunningServer | None) -> list[str]:
        """Run the composed runner `name` once per spec the runbook holds for it (none when its
        section is unset), into its evidence dir, with the keywords of `runner_inputs`; return
        the commands that reproduce the runs."""
        composed, out = runner(name), self.runner_dir(name, ctx.evidence_dir)
        specs = composed.specs(runbook)
        if not specs:
            return []
        ctx.progress(f"{self.name}: running {name}")
        inputs = self.runner_inputs(name, ctx, runbook, server)
        return [command for subdir, spec in specs
                for command in composed.commands(composed.run(spec, out / subdir, **inputs), **inputs)]

    def judge_runner(self, name: str, evidence_dir: Path, runbook: Runbook) -> list[Check]:
        """The checks of the composed runner `name`'s runs, read back from the step's
        `evidence_dir`, one run per spec the runbook holds for it; a run the runbook asks for that
        left no record is `<name>.evidence`, not run, saying so. HarnessError when the runner left a
        record though the runbook has no section for it."""
        composed, out = runner(name), self.runner_dir(name, evidence_dir)
        specs = composed.specs(runbook)
        if not specs and composed.read(out) is not None:
            raise HarnessError(f"the runbook copied into the evidence has no {composed.section} section, "
                               f"yet {name} ran")
        checks = []
        for subdir, spec in specs:
            if composed.read(out / subdir) is None:
                missing = out / subdir / composed.summary
                checks.append(not_run(f"{name}.evidence", f"the {name} runner left no record ({missing.name}) "
                                      "though the runbook asks for it", evidence=[str(missing)]))
            else:
                checks += composed.judge(out / subdir, spec)
        return checks

    def _run_phase(self, phase: Phase, ctx: StepContext, runbook: Runbook, server: RunningServer | None) -> list[str]:
        return [command for name in self.runners if runner(name).phase == phase
                for command in self.run_runner(name, ctx, runbook, server)]

    def _trace_dir(self, ctx: StepContext, runbook: Runbook) -> Path | None:
        """Where the engine's profiler writes this step's traces when the step composes the
        profile runner and the runbook profiles through the engine's endpoints (the server is
        launched for it); None otherwise."""
        if "profile" not in self.runners or runbook.profiling is None:
            return None
        return runner("profile").trace_dir(runbook.profiling, self.runner_dir("profile", ctx.evidence_dir))

    def judge(self, evidence_dir: Path, inputs: RunInputs) -> list[Check]:
        return self.judge_static(evidence_dir, inputs) + self.judge_serving(evidence_dir, inputs)

    def judge_static(self, evidence_dir: Path, inputs: RunInputs) -> list[Check]:
        """Checks of the evidence that needs no server: by default each static runner's that
        ran (the runbook copied into the evidence is read only then). A step that overrides it
        for its `collect_static` evidence adds these."""
        ran = [name for name in self.runners
               if runner(name).phase == "static" and self.runner_dir(name, evidence_dir).is_dir()]
        if not ran:
            return []
        runbook = evidence_runbook(evidence_dir, inputs)
        return [check for name in ran for check in self.judge_runner(name, evidence_dir, runbook)]

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


def not_installed(runbook: Runbook, unmet: list[str]) -> str:
    """Why nothing is served when the runbook's `server.requires` is not met here (`unmet`, from
    unmet_requirements): what it needs, what is missing, and the pip line that installs it."""
    missing = "" if unmet == runbook.server.requires else f" (missing {', '.join(unmet)})"
    return (f"the runbook's server needs {', '.join(runbook.server.requires)}, not installed here{missing}; "
            f"install it with pip install {shlex.join(unmet)}")


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
    says what actually served (a stand-in server shows as itself). An engine run as a Slurm job
    adds the job: its id, node list, head node and accounting (`JobAccounting.describe`)."""
    record = ServerRecord.read(record_path)
    if record is None or record.identity is None:
        return None
    identity = record.identity
    environment = runbook.environment
    engine = {"serving": f"{environment.engine_profile.display} {environment.engine_version}", "pid": identity.pid,
              "program": " ".join(identity.program or record.command), "models": identity.models, "port": record.port}
    if record.job_id is not None:
        engine.update(job_id=record.job_id, nodes=record.nodes or record.node, node=record.node,
                      slurm=record.slurm.describe() if record.slurm else None)
    return engine


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


def profile_inputs(ctx: StepContext, runbook: Runbook, server: RunningServer) -> dict[str, Any]:
    """The profile runner's keywords but its workload: the server whose profiler endpoints it
    may drive, the directory and env a trace command runs with, the engine's profiler."""
    return {"server": server, "cwd": runbook_dir(runbook), "env": runbook.environment.env,
            "registry": ctx.processes, "profiler": runbook.environment.serving.profiler}


def runbook_dir(runbook: Runbook) -> Path:
    """Where a runbook's commands (golden captures, trace commands) run: its own directory."""
    return runbook.source.resolve().parent if runbook.source else Path.cwd()


def server_log_tail(evidence_dir: Path) -> str | None:
    """The served model's log tail, as recorded in the step's evidence."""
    logs = [evidence_dir / SERVER_DIR / f"server.{kind}.log" for kind in ("stderr", "stdout")]
    present = [p for p in logs if p.is_file()]
    return log_tail(present) if present else None
