"""Server lifecycle: start the engine the runbook describes, wait until it is healthy, and always
tear it down.

The server runs in its own process group (real engines fork schedulers and detokenizers), its
stdout/stderr go to evidence files, and teardown signals the whole group: SIGTERM, then SIGKILL
after the grace period — on success, on failure, on exceptions, on Ctrl-C and on SIGTERM.

    with ServedModel.from_runbook(runbook, evidence_dir) as server:
        httpx.post(f"{server.base_url}/v1/completions", json={"model": server.model, ...})

A server that exits early or never gets healthy raises `ServerStartError`, a HarnessError whose
one-line message names the exit code or deadline and the log; the failure is recorded in the
server's record (`server.json`: `start_failure`), and `start_check` reads the `failed` Check
with the last log lines back from there. `capture_profile` drives the engine's profiler
endpoints from the runbook's profiling section and records the traces in `profile.json`.
`stop_orphaned_servers` stops what a killed harness process left running.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Callable

import httpx
from pydantic import BaseModel

from harness.errors import HarnessError
from harness.evidence.runbook import Api, ProfilingSpec, Runbook, ServerSpec
from harness.record.checks import Check, CheckStatus
from harness.util.files import tail
from harness.util.processes import kill_recorded_group, start_time, stop_group

LOG_TAIL_LINES = 30


class ServerStartError(HarnessError):
    """The server did not become healthy; `check` is the failed check read back from its record."""

    def __init__(self, message: str, check: Check):
        super().__init__(message)
        self.check = check


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on right now (the OS picks it); the server binds it moments later."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return probe.getsockname()[1]


def build_command(spec: ServerSpec, host: str, port: int) -> list[str]:
    """Split the template first, then fill placeholders per argument, so a model path with
    spaces stays one argument. A leading `python`/`python3` is this interpreter, so the
    server runs in the harness's environment."""
    args = [a.format(host=host, port=port, model=spec.model) for a in shlex.split(spec.command)]
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
    record_path: Path  # server.json: command, env overrides, timings, exit code
    process: subprocess.Popen = field(repr=False)

    @property
    def log_paths(self) -> list[Path]:
        return [self.stderr_path, self.stdout_path]

    def alive(self) -> bool:
        return self.process.poll() is None

    def log_tail(self, lines: int = LOG_TAIL_LINES) -> str:
        return log_tail(self.log_paths, lines)


class ServedModel:
    """Context manager: start the runbook's server and yield a RunningServer once healthy."""

    def __init__(self, spec: ServerSpec, evidence_dir: Path, *, env: dict[str, str] | None = None,
                 name: str = "server", port: int | None = None):
        self.spec = spec
        self.evidence_dir = Path(evidence_dir)
        self.env_overrides = {**(env or {}), **spec.env}
        self.name = name
        self.port = port or spec.port
        self.server: RunningServer | None = None
        self._logs: list[IO[bytes]] = []
        self._record: dict = {}

    @classmethod
    def from_runbook(cls, runbook: Runbook, evidence_dir: Path, **kwargs) -> "ServedModel":
        """The runbook's server with its environment (environment.env, then server.env)."""
        return cls(runbook.server, evidence_dir, env=runbook.environment.env, **kwargs)

    # -- context protocol
    def __enter__(self) -> RunningServer:
        self._trap_sigterm()
        try:
            self.server = self._launch()
            self._wait_healthy(self.server)
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
        command = build_command(self.spec, host, port)
        stdout_path = self.evidence_dir / f"{self.name}.stdout.log"
        stderr_path = self.evidence_dir / f"{self.name}.stderr.log"
        record_path = self.evidence_dir / f"{self.name}.json"
        stdout = stdout_path.open("wb")
        stderr = stderr_path.open("wb")
        self._logs = [stdout, stderr]
        try:
            process = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr,
                env={**os.environ, **self.env_overrides}, start_new_session=True,
            )
        except OSError as exc:
            self._close_logs()
            self._record = {"command": command, "start_failure": f"cannot launch {command[0]}: {exc.strerror or exc}"}
            self._write_record(record_path)
            raise ServerStartError(f"cannot launch server command {command[0]!r}: "
                                   f"{exc.strerror or exc}", start_check(record_path)) from None
        # pid + its kernel start time identify this server even after its command execs into
        # another program; a later process uses them to stop an orphan (never a recycled pid).
        self._record = {"command": command, "env_overrides": self.env_overrides, "host": host,
                        "port": port, "pid": process.pid, "pgid": process.pid,
                        "proc_start_time": start_time(process.pid),
                        "started_at": time.time(), "health_endpoint": self.spec.health_endpoint}
        self._write_record(record_path)
        url_host = f"[{host}]" if ":" in host else host
        return RunningServer(
            base_url=f"http://{url_host}:{port}", model=self.spec.model_name, api=self.spec.api,
            host=host, port=port, pid=process.pid, command=command, stdout_path=stdout_path,
            stderr_path=stderr_path, record_path=record_path, process=process,
        )

    def _wait_healthy(self, server: RunningServer) -> None:
        started = time.monotonic()
        deadline = started + self.spec.startup_timeout_s
        url = server.base_url + self.spec.health_endpoint
        last_answer = "no answer yet"
        pause = 0.05
        with httpx.Client(timeout=5.0, trust_env=False) as client:
            while True:
                code = server.process.poll()
                if code is not None:
                    self._fail(server, f"exited with code {code} before becoming healthy",
                               exit_code=code)
                try:
                    response = client.get(url)
                    if response.status_code == 200:
                        self._record["ready_after_s"] = round(time.monotonic() - started, 3)
                        self._write_record(server.record_path)
                        return
                    last_answer = f"HTTP {response.status_code}"
                except httpx.HTTPError as exc:
                    last_answer = type(exc).__name__
                if time.monotonic() >= deadline:
                    self._fail(server, f"not healthy after {self.spec.startup_timeout_s:g}s "
                               f"(last {self.spec.health_endpoint} answer: {last_answer})")
                time.sleep(min(pause, max(0.0, deadline - time.monotonic())))
                pause = min(pause * 2, 1.0)

    def _fail(self, server: RunningServer, what: str, exit_code: int | None = None) -> None:
        # The last line before teardown is the telling one; the full tail is read after it.
        last = next((line for path in server.log_paths for line in reversed(tail(path))
                     if line.strip()), "")
        self.stop()
        reason = f"server {what}"
        self._record["start_failure"] = reason
        if exit_code is not None:
            self._record["start_exit_code"] = exit_code
        self._write_record(server.record_path)
        hint = f"; last log line: {last.strip()[:200]}" if last else ""
        raise ServerStartError(f"{reason}; log: {server.stderr_path}{hint}", start_check(server.record_path))

    def stop(self) -> int | None:
        """SIGTERM the process group, SIGKILL what is left after the grace period; returns the
        server's exit code. Safe to call more than once."""
        server = self.server
        if server is None:
            return None
        process = server.process
        if "exit_code" in self._record:  # already stopped: never signal a pgid that may be reused
            return process.returncode
        try:
            code, killed = stop_group(process, self.spec.shutdown_grace_s)
            if killed:
                self._record["killed"] = True
        finally:
            self._close_logs()
        self._record["exit_code"] = code
        self._record["stopped_at"] = time.time()
        self._write_record(server.record_path)
        return code

    def _close_logs(self) -> None:
        for handle in self._logs:
            handle.close()
        self._logs = []

    def _write_record(self, path: Path) -> None:
        path.write_text(json.dumps(self._record, indent=2) + "\n")


def _raise_on_sigterm(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)


def start_check(record_path: Path, name: str | None = None) -> Check | None:
    """The `<name>.start` check read back from a server record: `failed` with the reason, the
    exit code and the log tail when the server never became healthy, else None."""
    try:
        record = json.loads(Path(record_path).read_text())
    except (OSError, ValueError):
        return None
    if not record.get("start_failure"):
        return None
    stem = Path(record_path).stem
    logs = [Path(record_path).with_name(f"{stem}.{kind}.log") for kind in ("stderr", "stdout")]
    present = [p for p in logs if p.is_file()]
    exit_code = record.get("start_exit_code")
    return Check(name=f"{name or stem}.start", status=CheckStatus.failed, reason=record["start_failure"],
                 detail=log_tail(present) if "pid" in record else None,
                 evidence=[str(p) for p in (*present, record_path)],
                 metrics={"exit_code": exit_code} if exit_code is not None else {})


def stop_orphaned_servers(directory: Path) -> None:
    """A process killed mid-step leaves the servers it started running (each in its own process
    group). Stop the group of every server recorded under `directory` whose pid is still that
    very process (same start time). The command line is no proof: a launch command may exec
    into another program (`serve` execs `python -m llama_cpp.server`), and a recycled pid must
    never be signalled."""
    for record_path in directory.rglob("*.json"):
        try:
            record = json.loads(record_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not isinstance(record, dict) or not isinstance(record.get("pid"), int) or not record.get("command"):
            continue
        if "exit_code" in record:
            continue  # the lifecycle stopped it already; its group id may belong to someone else now
        pgid = record.get("pgid", record["pid"])
        if isinstance(pgid, int):
            kill_recorded_group(record["pid"], pgid, record.get("proc_start_time"))


class ProfileCapture(BaseModel):
    """What `capture_profile` recorded (also in `profile.json`): the traces, or why there are none."""

    ok: bool
    reason: str | None = None
    traces: list[Path]
    evidence: list[str]


def capture_profile(server: RunningServer, spec: ProfilingSpec, evidence_dir: Path,
                    workload: Callable[[RunningServer], object], *, wait_s: float = 120) -> ProfileCapture:
    """Trigger the engine's profiler the way the runbook says (SGLang: POST /start_profile with
    output_dir and num_steps, traffic, /stop_profile), and collect the trace files it writes.

    Traces go to `spec.trace_dir` or `<evidence_dir>/traces`; the outcome is written to
    `<evidence_dir>/profile.json`. A refused start or a trace that never appears within
    `wait_s` seconds is recorded with the endpoint's answer."""
    evidence_dir = Path(evidence_dir)
    trace_dir = Path(spec.trace_dir or evidence_dir / "traces")
    trace_dir.mkdir(parents=True, exist_ok=True)
    before = set(_trace_files(trace_dir))
    body: dict[str, object] = {"output_dir": str(trace_dir), "activities": spec.activities}
    if spec.num_steps:
        body["num_steps"] = spec.num_steps
    traces: list[Path] = []
    with httpx.Client(base_url=server.base_url, timeout=wait_s, trust_env=False) as client:
        try:
            started = client.post(spec.start_endpoint, json=body)
            refused = None if started.status_code == 200 else (
                f"{spec.start_endpoint} answered HTTP {started.status_code}: {started.text.strip()[:200]}")
        except httpx.HTTPError as exc:
            refused = f"{spec.start_endpoint} failed: {exc}"
        if refused is None:
            workload(server)
            # With num_steps the engine may already have stopped and written the trace; then this
            # answers "not in progress", which is fine. Otherwise it flushes what was recorded.
            try:
                stopped = client.post(spec.stop_endpoint)
                answer = f"{spec.stop_endpoint} answered HTTP {stopped.status_code}: {stopped.text.strip()[:200]}"
            except httpx.HTTPError as exc:
                answer = f"{spec.stop_endpoint} failed: {exc}"
            traces = _wait_for_traces(trace_dir, before, time.monotonic() + wait_s)
    if refused is not None:
        capture = ProfileCapture(ok=False, reason=refused, traces=[], evidence=[str(server.stderr_path)])
    elif not traces:
        capture = ProfileCapture(ok=False, traces=[], evidence=[str(server.stderr_path)],
                                 reason=f"no trace appeared in {trace_dir} within {wait_s:g}s ({answer})")
    else:
        capture = ProfileCapture(ok=True, traces=traces, evidence=[str(p) for p in traces])
    evidence_dir.mkdir(parents=True, exist_ok=True)
    (evidence_dir / "profile.json").write_text(capture.model_dump_json(indent=2) + "\n")
    return capture


def _trace_files(directory: Path) -> list[Path]:
    return sorted(p for p in directory.iterdir() if p.name.endswith((".json", ".json.gz")))


def _wait_for_traces(directory: Path, before: set[Path], deadline: float) -> list[Path]:
    """New trace files, once their sizes stop changing (exporting a trace takes a while)."""
    sizes: dict[Path, int] = {}
    while True:
        new = [p for p in _trace_files(directory) if p not in before]
        current = {p: p.stat().st_size for p in new}
        if new and current == sizes and all(current.values()):
            return new
        sizes = current
        if time.monotonic() >= deadline:
            return [p for p in new if current.get(p)]
        time.sleep(0.2)
