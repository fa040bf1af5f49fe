"""Profiling: trace files from the engine's profiler endpoints (`capture_profile`) or from the
runbook's trace-producing command (`capture_command_profile`), recorded as a `ProfileCapture`
in `profile.json` (or `<name>.json`); `profile_check` reads them back."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx
from pydantic import BaseModel

from harness.engines import SGLANG, Profiler
from harness.errors import HarnessError
from harness.evidence.runbook import ProfilingSpec
from harness.evidence.runner import Runner
from harness.evidence.server import RunningServer
from harness.record.checks import Check, CheckStatus
from harness.record.processes import ProcessRegistry
from harness.util.files import tail
from harness.util.processes import marked_env, stop_group


class ProfileCapture(BaseModel):
    """What `capture_profile` recorded (also in `profile.json`): the traces, or why there are none."""

    ok: bool
    reason: str | None = None
    traces: list[Path]
    evidence: list[str]


def trace_dir_of(spec: ProfilingSpec, evidence_dir: Path) -> Path:
    """Where the engine writes the traces of a profile whose evidence is `evidence_dir`:
    the runbook's `trace_dir`, else `<evidence_dir>/traces`."""
    return Path(spec.trace_dir or Path(evidence_dir) / "traces")


def capture_profile(server: RunningServer, spec: ProfilingSpec, evidence_dir: Path,
                    workload: Callable[[RunningServer], object], *, wait_s: float = 120,
                    profiler: Profiler = SGLANG.serving.profiler) -> ProfileCapture:
    """Trigger the engine's profiler the way the runbook says (POST /start_profile — SGLang's
    with output_dir and num_steps, vLLM's empty, its directory set at launch — traffic,
    /stop_profile), and collect the trace files it writes (vLLM: one per rank, `.pt.trace.json.gz`).

    Traces go to `trace_dir_of(spec, evidence_dir)`; the outcome is written to
    `<evidence_dir>/profile.json`. A refused start or a trace that never appears within
    `wait_s` seconds is recorded with the endpoint's answer (and the engine's usual cause)."""
    evidence_dir = Path(evidence_dir)
    trace_dir = trace_dir_of(spec, evidence_dir)
    trace_dir.mkdir(parents=True, exist_ok=True)
    before = set(_trace_files(trace_dir))
    body = profiler.start_body(trace_dir, spec.num_steps, spec.activities)
    traces: list[Path] = []
    with httpx.Client(base_url=server.base_url, timeout=wait_s, trust_env=False) as client:
        try:
            started = client.post(spec.start_endpoint, json=body) if body is not None else client.post(spec.start_endpoint)
            refused = None if started.status_code == 200 else (
                f"{spec.start_endpoint} answered HTTP {started.status_code}: {started.text.strip()[:200]}"
                + (f" ({profiler.hint})" if profiler.hint else ""))
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


def capture_command_profile(command_template: str, spec: ProfilingSpec, evidence_dir: Path,
                            workload: Callable[[], object] | None, *, cwd: Path, env: dict[str, str] | None = None,
                            registry: ProcessRegistry | None = None, name: str = "profile") -> ProfileCapture:
    """Run the runbook's trace-producing command (its `{out}` is `<evidence_dir>/traces`) while
    `workload()` runs, and collect the Chrome traces it writes; the outcome goes to
    `<evidence_dir>/<name>.json`, the command's output to `<name>.log`. A command that fails,
    overruns `spec.timeout_s` or writes no trace is recorded with its log's last line."""
    evidence_dir = Path(evidence_dir)
    trace_dir = evidence_dir / "traces"
    trace_dir.mkdir(parents=True, exist_ok=True)
    before = {p: p.stat().st_mtime_ns for p in _trace_files(trace_dir)}  # a rewritten file counts as new
    command = [a.replace("{out}", str(trace_dir)) for a in shlex.split(command_template)]
    if command and command[0] in ("python", "python3"):
        command[0] = sys.executable
    log_path = evidence_dir / f"{name}.log"
    failure = None
    with log_path.open("wb") as log:
        try:
            process = subprocess.Popen(command, cwd=cwd, env=marked_env({**os.environ, **(env or {})}), stdout=log,
                                       stderr=subprocess.STDOUT, start_new_session=True)
        except OSError as exc:
            failure = f"the trace command could not start: {exc}"
        else:
            if registry is not None:
                registry.add(process, "trace command", command)
            try:
                if workload is not None:
                    workload()
                code = process.wait(timeout=spec.timeout_s)
                if code != 0:
                    failure = f"the trace command exited with code {code}"
            except subprocess.TimeoutExpired:
                failure = f"the trace command did not finish within {spec.timeout_s:g} s"
            finally:
                stop_group(process, grace_s=2)
                if registry is not None:
                    registry.remove(process)
    traces = [p for p in _trace_files(trace_dir) if before.get(p) != p.stat().st_mtime_ns]
    if failure is None and not traces:
        failure = f"the trace command wrote no .json/.json.gz trace into {trace_dir}"
    if failure:
        last = [line for line in tail(log_path, 5) if line.strip()]
        capture = ProfileCapture(ok=False, reason=f"{failure}: {last[-1] if last else '(no output)'}", traces=[],
                                 evidence=[str(log_path)])
    else:
        capture = ProfileCapture(ok=True, traces=traces, evidence=[str(p) for p in traces])
    (evidence_dir / f"{name}.json").write_text(capture.model_dump_json(indent=2) + "\n")
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


def profile_check(capture: ProfileCapture) -> Check:
    """profile.capture: the engine wrote at least one trace."""
    if not capture.ok:
        return Check(name="profile.capture", status=CheckStatus.failed, reason=capture.reason,
                     evidence=capture.evidence)
    present = [p for p in capture.traces if p.is_file()]
    return Check(name="profile.capture", status=CheckStatus.passed, evidence=[str(p) for p in capture.traces],
                 metrics={"traces": len(capture.traces), "bytes": sum(p.stat().st_size for p in present)})


class ProfileRunner(Runner[ProfilingSpec, ProfileCapture]):
    """A trace of a workload: the runbook's trace command when it names one, else the engine's
    profiler endpoints; the `profile.capture` check."""

    name = "profile"
    section = "profiling"
    spec = ProfilingSpec
    record = ProfileCapture
    summary = "profile.json"

    def run(self, spec: ProfilingSpec, evidence_dir: Path, *, workload: Callable[[], object],
            server: RunningServer | None = None, cwd: Path | None = None, env: dict[str, str] | None = None,
            registry: ProcessRegistry | None = None, profiler: Profiler = SGLANG.serving.profiler) -> ProfileCapture:
        """Trace `workload()`: with `spec.command` run in `cwd` (`capture_command_profile`),
        else through `server`'s profiler endpoints as the engine's `profiler` takes them
        (`capture_profile`; HarnessError without a server)."""
        if spec.command:
            return capture_command_profile(spec.command, spec, evidence_dir, workload, cwd=cwd or Path.cwd(),
                                           env=env, registry=registry)
        if server is None:
            raise HarnessError("profiling through the engine's endpoints needs its running server")
        return capture_profile(server, spec, evidence_dir, lambda _server: workload(), profiler=profiler)

    def trace_dir(self, spec: ProfilingSpec, evidence_dir: Path) -> Path | None:
        """Where the engine's profiler writes the traces of a run into `evidence_dir` when it is
        traced through the engine's endpoints (the server is launched with it: vLLM takes the
        directory at launch); None when the runbook's trace command takes them."""
        return None if spec.command else trace_dir_of(spec, evidence_dir)

    def checks(self, record: ProfileCapture, evidence_dir: Path, spec: ProfilingSpec) -> list[Check]:
        return [profile_check(record)]
