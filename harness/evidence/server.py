"""Server lifecycle: start the engine the runbook describes, wait until it is healthy, make sure
the server answering is the one started, and always tear it down.

The server runs in its own process group (real engines fork schedulers and detokenizers), its
stdout/stderr go to evidence files, and teardown signals the whole group: SIGTERM, then SIGKILL
after the grace period — on success, on failure, on exceptions, on Ctrl-C and on SIGTERM. With a
`ProcessRegistry` the group is also recorded in the run's record, so a later command stops it if
the harness is killed outright (`harness.record.processes`).

    with ServedModel.from_runbook(runbook, evidence_dir) as server:
        httpx.post(f"{server.base_url}/v1/completions", json={"model": server.model, ...})

Know your engine: a fixed port that something already listens on is refused before anything is
started (naming the holder where it is visible); once healthy, the listening socket must belong
to the started process (or its forks) and to nothing else, so an engine left behind by another
run can never answer in its place; and `confirm_alive` fails the step when the started process
has exited, whatever else answers on the port now. The engine's identity (pid, start time, the
program it runs, the models it serves) is recorded in `server.json`.

A server that exits early, never gets healthy or is not the one started raises
`ServerStartError`, a HarnessError whose one-line message names the reason and the log; the
failure is recorded in the server's record (`server.json`: `start_failure`, or `lost` for one
that exited mid-step), and `failure_check` reads the `failed` Check with the last log lines back
from there. Profiling a running server: `harness.evidence.profile`.
"""

from __future__ import annotations

import errno
import json
import os
import shlex
import signal
import socket
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psutil
from pydantic import BaseModel

from harness.errors import HarnessError
from harness.evidence.launchers import Launch, LaunchFailure, dist_values, launch
from harness.evidence.runbook import (
    Api,
    LocalLauncher,
    Runbook,
    ServerSpec,
    SlurmLauncher,
)
from harness.record.checks import Check, CheckStatus
from harness.record.processes import ProcessRegistry
from harness.util.files import tail
from harness.util.processes import listeners, start_time
from harness.util.slurm import JobAccounting

LOG_TAIL_LINES = 30
HEALTH_PROGRESS_S = 10.0  # how often a health wait says it is still waiting


class EngineIdentity(BaseModel):
    """Who answered on the server's port (`server.json`'s `identity`)."""

    pid: int
    start_time: float | None = None  # kernel start time of `pid` (with it, a recycled pid is never taken for ours)
    listener_pid: int
    program: list[str]  # command line of the listening process
    models: list[Any] | None = None  # /v1/models ids as the server answered; None where it does not answer
    server_info: dict[str, Any] | None = None  # the identifying keys of /get_server_info (SGLang)
    job_id: str | None = None  # the Slurm job it runs in (launcher: slurm; `pid` is then the node's listener)
    node: str | None = None  # the node it answers on
    nodes: str | None = None  # the job's node list, e.g. 'gpu[01-04]'


class ServerRecord(BaseModel):
    """`server.json`: what was started, when it was healthy, who answered, how it ended. Fields
    appear as the lifecycle reaches them (written with exclude_unset, as they always were);
    times are Unix seconds."""

    command: list[str]
    env_overrides: dict[str, str] | None = None
    host: str | None = None
    port: int | None = None
    pid: int | None = None
    pgid: int | None = None
    proc_start_time: float | None = None
    started_at: float | None = None
    health_endpoint: str | None = None
    ready_after_s: float | None = None
    identity: EngineIdentity | None = None
    job_id: str | None = None  # launcher: slurm — the job the engine runs in
    node: str | None = None  # the head node Slurm chose
    nodes: str | None = None  # the job's node list
    slurm: JobAccounting | None = None  # the job's accounting once it ended (sacct, else scontrol)
    launch_failure: str | None = None  # the launcher could not run it (a job pending too long, TIMEOUT, ...)
    start_failure: str | None = None  # never healthy, or not the one started (nothing is served)
    start_exit_code: int | None = None
    lost: str | None = None  # exited mid-step
    killed: bool | None = None  # SIGKILLed after the grace period
    exit_code: int | None = None
    stopped_at: float | None = None

    @classmethod
    def read(cls, path: Path) -> ServerRecord | None:
        """The record at `path`; None when it is missing or not a server record."""
        try:
            return cls.model_validate_json(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None

    def write(self, path: Path) -> None:
        """Write the fields reached so far to `path`."""
        path.write_text(json.dumps(self.model_dump(mode="json", exclude_unset=True), indent=2) + "\n")


class ServerStartError(HarnessError):
    """The server did not become healthy, is not the one started, or exited mid-step; `check`
    is the failed check read back from its record."""

    def __init__(self, message: str, check: Check):
        super().__init__(message)
        self.check = check


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on right now (the OS picks it); the server binds it moments later."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return probe.getsockname()[1]


def port_holder(host: str, port: int) -> str | None:
    """Who holds (host, port), in words ('pid 123 (python -m ...)'), or None when it is free.
    A bind probe with SO_REUSEADDR, as servers bind, decides; psutil names the holder."""
    found = listeners(host, port)
    if found:
        return found[0].describe()
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                return "a process this user cannot see"
    return None


def build_command(spec: ServerSpec, host: str, port: int, dist: dict[str, str] | None = None) -> list[str]:
    """Split the template first, then fill placeholders per argument, so a model path with
    spaces stays one argument. `dist` fills the multi-node placeholders (launchers.dist_values;
    default: one task here). A leading `python`/`python3` is this interpreter, so the server
    runs in the harness's environment."""
    dist = dist or {"nnodes": "1", "node_rank": "0", "head_addr": host, "dist_port": str(port)}
    args = [a.format(host=host, port=port, model=spec.model, **dist) for a in shlex.split(spec.command)]
    if args and args[0] in ("python", "python3"):
        args[0] = sys.executable
    return args


def log_tail(log_paths: list[Path], lines: int = LOG_TAIL_LINES) -> str:
    """The last lines of each log, headed by its name; what reports show of a server."""
    parts = []
    for path in log_paths:
        last = tail(path, lines)
        if last:
            parts.append(f"--- {path.name} (last {len(last)} lines)\n" + "\n".join(last))
    return "\n".join(parts) or "(the server wrote no output)"


@dataclass
class RunningServer:
    """What a runner needs from a started server."""

    base_url: str
    model: str  # name to send as `model` in API requests
    api: Api
    host: str
    port: int
    pid: int
    command: list[str]
    stdout_path: Path
    stderr_path: Path
    record_path: Path  # server.json: command, env overrides, timings, identity, exit code
    process: Launch = field(repr=False)  # where it runs: a local process group, a Slurm job

    @property
    def log_paths(self) -> list[Path]:
        return [self.stderr_path, self.stdout_path]

    def alive(self) -> bool:
        return self.process.poll() is None

    def log_tail(self, lines: int = LOG_TAIL_LINES) -> str:
        return log_tail(self.log_paths, lines)


class ServedModel:
    """Context manager: start the runbook's server and yield a RunningServer once healthy and
    confirmed to be the one started.

    `registry` records the server's process group (or job) in the run's record; `progress`
    gets a line every HEALTH_PROGRESS_S seconds while the health check (or the queue) waits;
    `launcher` says where the engine runs (the runbook's `launcher:`, default local)."""

    def __init__(self, spec: ServerSpec, evidence_dir: Path, *, env: dict[str, str] | None = None,
                 name: str = "server", port: int | None = None, registry: ProcessRegistry | None = None,
                 progress: Callable[[str], None] | None = None,
                 launcher: LocalLauncher | SlurmLauncher | None = None):
        self.spec = spec
        self.evidence_dir = Path(evidence_dir)
        self.env_overrides = {**(env or {}), **spec.env}
        self.name = name
        self.port = port or spec.port
        self.registry = registry
        self.progress = progress or (lambda message: None)
        self.launcher = launcher or LocalLauncher()
        self.server: RunningServer | None = None
        self._record = ServerRecord(command=[])

    @classmethod
    def from_runbook(cls, runbook: Runbook, evidence_dir: Path, *, trace_dir: Path | None = None,
                     **kwargs) -> ServedModel:
        """The runbook's server with its environment (environment.env, then server.env). With
        `trace_dir`, also what the engine needs at launch to write profiler traces there
        (harness.engines.Profiler.launch: vLLM's --profiler-config, or
        VLLM_TORCH_PROFILER_DIR before 0.13; nothing for SGLang), unless the runbook sets it."""
        spec, env = runbook.server, runbook.environment.env
        if trace_dir is not None:
            args, extra = runbook.environment.serving.profiler.launch(runbook.environment.engine_version, Path(trace_dir))
            given = {a.split("=", 1)[0] for a in shlex.split(spec.command)}
            if args and args[0] not in given:  # the template is str.format-ed per argument: escape braces
                launch = shlex.join(args).replace("{", "{{").replace("}", "}}")
                spec = spec.model_copy(update={"command": f"{spec.command} {launch}"})
            env = {**env, **{k: v for k, v in extra.items() if k not in env and k not in spec.env}}
        return cls(spec, evidence_dir, env=env, launcher=runbook.launcher, **kwargs)

    # -- context protocol
    def __enter__(self) -> RunningServer:
        self._trap_sigterm()
        try:
            self.server = self._launch()
            self._wait_healthy(self.server)
            self._confirm_identity(self.server)
        except BaseException:  # Ctrl-C or a failed start must not leave a server behind
            self.stop()
            self._restore_sigterm()
            raise
        return self.server

    def __exit__(self, *exc_info: object) -> None:
        try:
            self.stop()
        finally:
            self._restore_sigterm()

    def _trap_sigterm(self) -> None:
        """A CI job cancelled with SIGTERM unwinds through this context like Ctrl-C does, so
        the server (in its own session, out of reach of the job's signal) is still stopped."""
        self._previous_sigterm = None
        if threading.current_thread() is threading.main_thread():
            self._previous_sigterm = signal.signal(signal.SIGTERM, _raise_on_sigterm)

    def _restore_sigterm(self) -> None:
        if self._previous_sigterm is not None:
            signal.signal(signal.SIGTERM, self._previous_sigterm)
            self._previous_sigterm = None

    # -- steps
    def _launch(self) -> RunningServer:
        self.evidence_dir.mkdir(parents=True, exist_ok=True)
        host = self.spec.host
        port = self.port or free_port(host)
        command = build_command(self.spec, host, port, dist_values(self.launcher, host, free_port))
        stdout_path = self.evidence_dir / f"{self.name}.stdout.log"
        stderr_path = self.evidence_dir / f"{self.name}.stderr.log"
        record_path = self.evidence_dir / f"{self.name}.json"
        if self.port and isinstance(self.launcher, LocalLauncher):
            holder = port_holder(host, port)
            if holder is not None:  # whatever answers there would be measured instead of our engine
                self._refuse(record_path, command, f"port {port} on {host} is already in use by {holder}; "
                             f"stop it or pick another server.port (omit it to use a free one)")
        try:
            started = launch(self.launcher, command, env={**os.environ, **self.env_overrides},
                             evidence_dir=self.evidence_dir, name=self.name, registry=self.registry)
        except OSError as exc:
            self._refuse(record_path, command, f"cannot launch server command {command[0]!r}: {exc.strerror or exc}")
        except HarnessError as exc:  # the scheduler refused the job: nothing runs
            self._refuse(record_path, command, str(exc), launch=True)
        # pid + its kernel start time identify this server even after its command execs into
        # another program; a later process uses them to stop an orphan (never a recycled pid).
        self._record = ServerRecord(command=command, env_overrides=self.env_overrides, host=host, port=port,
                                    pid=started.pid, pgid=started.pid,
                                    proc_start_time=start_time(started.pid) if started.pid else None,
                                    started_at=time.time(), health_endpoint=self.spec.health_endpoint)
        job = started.identity()
        if job:
            self._record.job_id = job["job_id"]
        self._write_record(record_path)
        server = RunningServer(
            base_url="", model=self.spec.model_name, api=self.spec.api,
            host=host, port=port, pid=started.pid or 0, command=command, stdout_path=stdout_path,
            stderr_path=stderr_path, record_path=record_path, process=started,
        )
        self.server = server  # from here on, stop() reaches it
        try:
            started.wait_started(self.progress)
        except LaunchFailure as exc:
            self._fail(server, str(exc), launch=True)
        self._note_nodes(started, record_path)
        address = started.address(host)
        server.base_url = f"http://[{address}]:{port}" if ":" in address else f"http://{address}:{port}"
        return server

    def _note_nodes(self, started: Launch, record_path: Path) -> None:
        """Record where the launcher runs the engine (a job's head node and node list)."""
        where = started.identity()
        if where.get("node"):
            self._record.node, self._record.nodes = where["node"], where.get("nodes")
            self._write_record(record_path)

    def _refuse(self, record_path: Path, command: list[str], reason: str, launch: bool = False) -> None:
        """Nothing was started: record why and raise (`launch`: the launcher refused it)."""
        self._record = ServerRecord(command=command)
        if launch:
            self._record.launch_failure = reason
        else:
            self._record.start_failure = reason
        self._write_record(record_path)
        raise ServerStartError(reason, failure_check(record_path))

    def _wait_healthy(self, server: RunningServer) -> None:
        started = time.monotonic()
        deadline = started + self.spec.startup_timeout_s
        next_report = started + HEALTH_PROGRESS_S
        url = server.base_url + self.spec.health_endpoint
        last_answer = "no answer yet"
        pause = 0.05
        starts = server.process.starts
        with httpx.Client(timeout=5.0, trust_env=False) as client:
            while True:
                code = server.process.poll()
                if server.process.starts != starts:  # the launcher waited out a restart: the engine starts afresh
                    starts, started = server.process.starts, time.monotonic()
                    deadline, next_report = started + self.spec.startup_timeout_s, started + HEALTH_PROGRESS_S
                    address = server.process.address(server.host)
                    server.base_url = (f"http://[{address}]:{server.port}" if ":" in address
                                       else f"http://{address}:{server.port}")
                    url = server.base_url + self.spec.health_endpoint
                    self._note_nodes(server.process, server.record_path)
                if code is not None:
                    ended = server.process.ended()
                    if ended:  # the scheduler ended it (TIMEOUT, NODE_FAIL, ...): not the engine's verdict
                        self._fail(server, f"{ended} before the engine was healthy", exit_code=code, launch=True)
                    self._fail(server, f"exited with code {code} before becoming healthy",
                               exit_code=code)
                try:
                    response = client.get(url)
                    if response.status_code == 200:
                        server.process.healthy()
                        self._record.ready_after_s = round(time.monotonic() - started, 3)
                        self._write_record(server.record_path)
                        return
                    last_answer = f"HTTP {response.status_code}"
                except httpx.HTTPError as exc:
                    last_answer = type(exc).__name__
                now = time.monotonic()
                if now >= deadline:
                    self._fail(server, f"not healthy after {self.spec.startup_timeout_s:g}s "
                               f"(last {self.spec.health_endpoint} answer: {last_answer})")
                if now >= next_report:
                    self.progress(f"waiting for {url}: {now - started:.0f} s of {self.spec.startup_timeout_s:g} s "
                                  f"(server.startup_timeout_s), last answer: {last_answer}")
                    next_report += HEALTH_PROGRESS_S
                time.sleep(min(pause, max(0.0, deadline - time.monotonic())))
                pause = min(pause * 2, 1.0)

    def _confirm_identity(self, server: RunningServer) -> None:
        """The healthy server must be the one started: the socket listening on its port belongs
        to the started process or its forks, and nothing else listens there. Records the
        engine's identity."""
        try:
            found = server.process.listeners(server.host, server.port)
        except LaunchFailure as exc:
            self._fail(server, str(exc), launch=True)
        ours = [item for item in found if item["ours"]]
        foreign = [item for item in found if not item["ours"]]
        if server.process.poll() is not None:
            self._fail(server, f"exited with code {server.process.returncode} while another process answered "
                       f"its health check", exit_code=server.process.returncode)
        if not ours:
            holder = f"{foreign[0]['described']} listens there" if foreign else "no process of it listens there"
            self._fail(server, f"is not what answers on {server.host}:{server.port}: {holder}, not the engine "
                       f"started ({self._started_as(server)})")
        if foreign:
            self._fail(server, f"is not the only process listening on {server.host}:{server.port}: "
                       f"{foreign[0]['described']} listens there too, so its answers could be measured instead "
                       f"of the engine started ({self._started_as(server)})")
        self._record.identity = self._identity(server, ours[0]["pid"])
        self._write_record(server.record_path)

    def _identity(self, server: RunningServer, listener: int) -> EngineIdentity:
        """pid, start time and program of the listening process, and what the server says it
        serves (/v1/models, /get_server_info; None where it does not answer)."""
        try:
            program = psutil.Process(listener).cmdline()
        except psutil.Error:
            program = []
        if server.process.pid is None:  # runs elsewhere: its listener on the node, its job, its node
            program, pid, started = server.command, listener, None
        else:
            pid, started = server.pid, start_time(server.pid)
        identity = EngineIdentity(pid=pid, start_time=started, listener_pid=listener, program=program, models=None,
                                  server_info=None, **server.process.identity())
        with httpx.Client(base_url=server.base_url, timeout=10.0, trust_env=False) as client:
            for path, key in (("/v1/models", "models"), ("/get_server_info", "server_info")):
                try:
                    answer = client.get(path)
                    body = answer.json() if answer.status_code == 200 else None
                except (httpx.HTTPError, ValueError):
                    body = None
                if key == "models" and isinstance(body, dict):
                    identity.models = [m.get("id") for m in body.get("data", []) if isinstance(m, dict)]
                elif key == "server_info" and isinstance(body, dict):
                    identity.server_info = {k: body[k] for k in _SERVER_INFO_KEYS if k in body}
        return identity

    @staticmethod
    def _started_as(server: RunningServer) -> str:
        job = server.process.identity()
        return f"slurm job {job['job_id']}" if job else f"pid {server.pid}"

    def confirm_alive(self) -> None:
        """Fail (ServerStartError, recorded as `lost`) when the started server has exited:
        whatever answered on its port after that was not the engine under test."""
        server = self.server
        if server is None or (server.process.poll() is None and not self._exiting(server)):
            return
        code = server.process.returncode
        restarted = server.process.restarted()
        ended = restarted or server.process.ended()
        reason = (f"server {ended} during the step" if ended else f"server exited with code {code} during the step"
                  ) + "; nothing it served after that is evidence"
        self._record.lost, self._record.start_exit_code = reason, code
        if restarted:  # the scheduler's verdict, not the engine's: the step is not run
            self._record.launch_failure = reason
        self._write_record(server.record_path)
        raise ServerStartError(f"{reason}; log: {server.stderr_path}", failure_check(server.record_path))

    def _exiting(self, server: RunningServer) -> bool:
        """Whether a server not yet reaped is on its way out: nothing accepts on its port any
        more (a process closes its sockets before its exit code can be read), and it exits within
        `shutdown_grace_s`. A slow or busy answer counts as alive."""
        try:
            with httpx.Client(timeout=5.0, trust_env=False) as client:
                client.get(server.base_url + self.spec.health_endpoint)
            return False
        except httpx.ConnectError:
            pass
        except httpx.HTTPError:
            return False
        deadline = time.monotonic() + self.spec.shutdown_grace_s
        while server.process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        return server.process.poll() is not None

    def _fail(self, server: RunningServer, what: str, exit_code: int | None = None, launch: bool = False) -> None:
        """Stop the server, record why it is not served and raise. `launch`: the launcher's
        verdict (`what` names the job), recorded as `launch_failure` (the step is not run)."""
        # The last line before teardown is the telling one; the full tail is read after it.
        last = next((line for path in server.log_paths for line in reversed(tail(path))
                     if line.strip()), "")
        self.stop()
        reason = what if launch else f"server {what}"
        if launch:
            self._record.launch_failure = reason
        else:
            # the engine's own last word (a missing module, no device) is the cause a reader needs
            # first: it goes into the check's reason, which the console and the summary show
            said = textwrap.shorten("".join(c for c in last.strip() if c.isprintable()), width=200, placeholder=" …")
            self._record.start_failure = f"{reason} (last log line: {said})" if said else reason
        if exit_code is not None:
            self._record.start_exit_code = exit_code
        self._write_record(server.record_path)
        hint = f"; last log line: {last.strip()[:200]}" if last else ""
        raise ServerStartError(f"{reason}; log: {server.stderr_path}{hint}", failure_check(server.record_path))

    def stop(self) -> int | None:
        """SIGTERM the process group, SIGKILL what is left after the grace period; returns the
        server's exit code. Safe to call more than once."""
        server = self.server
        if server is None:
            return None
        process = server.process
        if "exit_code" in self._record.model_fields_set:  # already stopped: never signal a pgid that may be reused
            return process.returncode
        code, killed = process.stop(self.spec.shutdown_grace_s)
        if killed:
            self._record.killed = True
        self._record.exit_code = code
        self._record.stopped_at = time.time()
        if process.accounting() is not None:
            self._record.slurm = process.accounting()
        self._write_record(server.record_path)
        return code

    def _write_record(self, path: Path) -> None:
        self._record.write(path)


# What identifies an SGLang server in /get_server_info (the whole answer is its every argument).
_SERVER_INFO_KEYS = ("model_path", "served_model_name", "host", "port", "tp_size", "dp_size", "device", "version")


def _raise_on_sigterm(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)


def failure_check(record_path: Path, name: str | None = None) -> Check | None:
    """The `<name>.start` check read back from a server record: `failed` with the reason, the
    exit code and the log tail when the server never became healthy, was not the one started, or
    exited mid-step (`lost`); `not_run` when its launcher could not run it; else None."""
    record = ServerRecord.read(record_path)
    if record is None or not (record.launch_failure or record.start_failure or record.lost):
        return None
    reason = record.launch_failure or record.start_failure or record.lost
    stem = Path(record_path).stem
    logs = [Path(record_path).with_name(f"{stem}.{kind}.log") for kind in ("stderr", "stdout")]
    present = [p for p in logs if p.is_file()]
    exit_code = record.start_exit_code
    # A launcher's verdict (a job never scheduled, ended TIMEOUT / NODE_FAIL ...) says nothing of
    # the engine: the step is not run. Evidence produced before it is kept.
    status = CheckStatus.not_run if record.launch_failure else CheckStatus.failed
    return Check(name=f"{name or stem}.{'alive' if record.lost else 'start'}",
                 status=status, reason=reason,
                 detail=log_tail(present) if record.pid is not None or record.job_id is not None else None,
                 evidence=[str(p) for p in (*present, record_path)],
                 metrics={"exit_code": exit_code} if exit_code is not None else {})
