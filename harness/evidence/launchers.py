"""Where an engine runs: the boundary between the server lifecycle (harness.evidence.server) and
the machine or scheduler that runs the engine's processes. A launcher starts the engine's
command and hands back a `Launch`, which the lifecycle polls, asks who listens on the engine's
port, and stops; the steps never see which launcher it was. One class per runbook `launcher:`
kind (LAUNCHES): `local` runs a process group here, `slurm` a batch job on the cluster (a
Kubernetes launcher would be one more `Launch`).

The Slurm job is submitted with sbatch (`--comment` carries the hash of a secret drawn for the
job, the proof a later sweep needs that the job is ours: `harness.record.processes`;
`--no-requeue` unless the runbook's `requeue`) and recorded in the run's record like a process;
`wait_started` names the job on the console, follows it through the queue with progress lines
until it runs, and gives up after `pending_timeout_s`, or at once on a pending reason no wait
clears (`slurm.hopeless`); health checks and the evaluation then go to the head task's node.
`stop` sends the engine SIGTERM (`scancel --signal=TERM`, to the steps), so that an engine that
exits on it ends its job COMPLETED, and scancels the job only when it is still there after the
grace period; it then keeps the job's accounting (`slurm.accounting`). A job Slurm restarted
(requeued, preempted: its restart count or start time changed) is a `LaunchFailure` naming it:
the engine running now is not the one started, and is never measured as it. While the
controller cannot be asked (`slurm.SlurmUnreachable`) the job
counts as running; a `stop` then leaves its record, in one line on stderr, for the next command
that reaches the controller to cancel. A job that ends on its own (TIMEOUT, NODE_FAIL,
OUT_OF_MEMORY, a failed engine) is a `LaunchFailure` whose one line reads `slurm job N ended ...`.

The batch script first checks, with one task per node, that harness's interpreter is there (the
venv must be at the same path on every node), and resolves the runbook's `head_interface` on the
first node; either failing is one `harness: cannot ...` line in the job's log and the step's
reason. What the job runs is fixed at submit: the tasks' spec (`<name>.task.json`, in the evidence
folder, read when the job starts, maybe hours later) is named in the batch script with the
SHA-256 of what harness wrote, and slurm_task refuses a spec that no longer matches (one line,
`harness: refused ...`, in the job's log and the step's reason). Slurm keeps the script it was
given at submit, so whoever can write the evidence folder meanwhile cannot change the command.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import shlex
import subprocess
import sys
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness.errors import HarnessError
from harness.evidence.runbook import LocalLauncher, SlurmLauncher
from harness.evidence.slurm_task import CANNOT, HEAD_ADDR_ENV, REFUSED
from harness.record.processes import ProcessRegistry, job_comment, left_recorded
from harness.util import slurm
from harness.util.files import tail, write_atomic
from harness.util.processes import marked_env, stop_group

PENDING_PROGRESS_S = 10.0
# How long an ended job's state may take to leave RUNNING after scancel (KillWait + epilog).
CANCEL_WAIT_S = 60.0
# States of a job Slurm is restarting (slurm.h job_states): the engine that ran is gone.
RESTARTING = frozenset({"REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "PENDING"})


class LaunchFailure(HarnessError):
    """The launcher could not run the engine (a scheduler's verdict, not the engine's): the
    step's check is `not run` with this line."""


class Launch(ABC):
    """An engine started by a launcher (a process group here, a job on a cluster)."""

    pid: int | None = None  # the local group leader; None where it runs elsewhere

    @abstractmethod
    def poll(self) -> int | None:
        """None while the engine runs; else its exit code."""

    @property
    @abstractmethod
    def returncode(self) -> int | None:
        """The exit code once ended (None before)."""

    def wait_started(self, progress: Callable[[str], None]) -> None:
        """Return once the engine's processes run (a job left the queue); LaunchFailure when
        they never will. Nothing to wait for by default."""

    @abstractmethod
    def address(self, host: str) -> str:
        """Where the harness reaches the engine bound to `host`."""

    @abstractmethod
    def listeners(self, host: str, port: int) -> list[dict[str, Any]]:
        """Who listens on `port` where the engine runs: {pid, ours, program} each (`ours`: a
        member of this launch)."""

    @abstractmethod
    def stop(self, grace_s: float) -> tuple[int | None, bool]:
        """Stop the engine (SIGTERM, then SIGKILL after `grace_s`) and forget its record;
        (exit code, whether it had to be killed)."""

    def identity(self) -> dict[str, Any]:
        """What, besides the listener, identifies this launch (`EngineIdentity` fields)."""
        return {}

    def ended(self) -> str | None:
        """Why the engine is gone, in words, when the launcher knows better than an exit code."""
        return None

    def restarted(self) -> str | None:
        """Why the engine running now is not the one started (the scheduler restarted it), in
        one line; None while it is the same one."""
        return None

    def healthy(self) -> None:
        """The engine answered its health check: a restart from now on is a lost engine."""

    starts: int = 1  # how often the engine was started (a launcher that waits out a restart counts it)

    def accounting(self) -> slurm.JobAccounting | None:
        """How the scheduler accounts the stopped engine (a job's times, state, nodes); None
        where there is no scheduler."""
        return None


class LocalLaunch(Launch):
    """A process group on this machine (the engine's own session), recorded in the registry."""

    def __init__(self, command: list[str], *, env: dict[str, str], stdout_path: Path, stderr_path: Path,
                 registry: ProcessRegistry | None, role: str = "engine"):
        self._logs = [stdout_path.open("wb"), stderr_path.open("wb")]
        try:
            self.process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=self._logs[0],
                                            stderr=self._logs[1], env=marked_env(env), start_new_session=True)
        except OSError:
            self._close_logs()
            raise
        self.pid = self.process.pid
        self.registry = registry
        if registry is not None:
            registry.add(self.process, role, command)

    def poll(self) -> int | None:
        return self.process.poll()

    @property
    def returncode(self) -> int | None:
        return self.process.returncode

    def wait(self) -> int:
        """Wait for the leader to exit; its exit code."""
        return self.process.wait()

    def address(self, host: str) -> str:
        return host

    def listeners(self, host: str, port: int) -> list[dict[str, Any]]:
        from harness.util.processes import in_session, listeners

        return [{"pid": item.pid, "ours": item.pid is not None and in_session(item.pid, self.pid),
                 "described": item.describe()} for item in listeners(host, port)]

    def stop(self, grace_s: float) -> tuple[int | None, bool]:
        try:
            return stop_group(self.process, grace_s)
        finally:
            self._close_logs()
            if self.registry is not None:
                self.registry.remove(self.process)

    def _close_logs(self) -> None:
        for handle in self._logs:
            handle.close()
        self._logs = []


class SlurmLaunch(Launch):
    """The engine as a Slurm batch job: `srun` starts one engine task per node (per task), each
    through `harness.evidence.slurm_task run`; the job's output is the server's logs."""

    def __init__(self, spec: SlurmLauncher, command: list[str], *, env: dict[str, str], evidence_dir: Path,
                 name: str, registry: ProcessRegistry | None, role: str = "engine"):
        self.spec, self.name, self.registry = spec, name, registry
        self.evidence_dir = Path(evidence_dir).resolve()
        secret = secrets.token_hex(32)  # never leaves this process and the run's record
        self.options = sbatch_options(spec, name, self.evidence_dir, job_comment(secret))
        task_spec = self.evidence_dir / f"{name}.task.json"
        spec_text = json.dumps({"command": command, "logs": str(self.evidence_dir), "name": name}) + "\n"
        write_atomic(task_spec, spec_text)  # replaces, never writes through, a link planted there
        script = batch_script(spec, task_spec, hashlib.sha256(spec_text.encode()).hexdigest())
        self.job_id = slurm.submit(script, self.options, cwd=Path.cwd(), env=marked_env(env))
        if registry is not None:
            registry.add_job(self.job_id, role, command, secret)
        self.node: str | None = None
        self.nodes: str | None = None  # the job's node list once it runs
        self._address: str | None = None
        self._final: slurm.JobState | None = None
        self._run: tuple[int, str] | None = None  # (restarts, start time) of the run the engine started in
        self._healthy = False
        self._restarted: str | None = None
        self._progress: Callable[[str], None] = lambda line: None
        self._accounting: slurm.JobAccounting | None = None

    def _state(self) -> slurm.JobState | None:
        """The job's state (None: the controller no longer knows it); SlurmUnreachable."""
        if self._final is not None:
            return self._final
        state = slurm.job_state(self.job_id)
        if state is not None and not state.active:
            self._final = state
        return state

    def wait_started(self, progress: Callable[[str], None]) -> None:
        self._progress = progress
        progress(f"slurm job {self.job_id} submitted ({' '.join(self.options[:-1])})")
        self._wait_running()

    def _wait_running(self) -> None:
        """Follow the job through the queue until it runs (LaunchFailure when it never will);
        note the run (restart count, start time) the engine starts in, its node and address."""
        progress = self._progress
        started = time.monotonic()
        deadline = started + self.spec.pending_timeout_s
        next_report = started + PENDING_PROGRESS_S
        while True:
            try:
                state = self._state()
            except slurm.SlurmUnreachable as exc:  # a controller restart, maybe: wait on, within pending_timeout_s
                state = slurm.JobState(self.job_id, "PENDING", str(exc), None, None, "", "", "")
            if state is None:
                raise LaunchFailure(f"slurm job {self.job_id} is unknown to the controller (cancelled by someone "
                                    f"else, or purged)")
            if not state.active or (state.state in ("RUNNING", "COMPLETING") if self._run is None
                                    else state.state == "RUNNING" and (state.restarts, state.start_time) != self._run):
                break  # running (after a restart: running again, not the old run still completing) or over
            why = slurm.hopeless(state.reason) if state.state == "PENDING" else None
            if why:
                raise LaunchFailure(f"slurm job {self.job_id} will not start however long it waits: pending for "
                                    f"{state.reason} ({why})")
            now = time.monotonic()
            if now >= deadline:
                raise LaunchFailure(f"slurm job {self.job_id} still {state.state} after "
                                    f"{self.spec.pending_timeout_s:g} s (reason: {state.reason}; "
                                    f"launcher.pending_timeout_s)")
            if now >= next_report:
                progress(f"slurm job {self.job_id} {state.state.lower()} ({state.reason}): {now - started:.0f} s "
                         f"of {self.spec.pending_timeout_s:g} s (launcher.pending_timeout_s)")
                next_report += PENDING_PROGRESS_S
            time.sleep(0.5)
        if not state.active:
            raise LaunchFailure(f"{self._ended(state)} before the engine was healthy")
        self._run = (state.restarts, state.start_time)
        self.nodes = state.nodes
        self.node = slurm.hostnames(state.nodes)[0]
        self._address = slurm.node_address(self.node)
        progress(f"slurm job {self.job_id} running on {state.nodes}"
                 + (f" (restart {state.restarts})" if state.restarts else ""))

    def _check_restart(self, state: slurm.JobState | None) -> None:
        """Note when Slurm restarted the job since the engine started in it: requeued or
        preempted (its state), or run again (restart count, start time). Before the engine was
        healthy, with the runbook's `requeue`, wait for it to run again (a fresh start)."""
        if self._restarted or self._run is None or state is None:
            return
        if state.state == "PREEMPTED":  # preempted without requeue (--no-requeue): over, by the scheduler's choice
            self._restarted = f"slurm job {self.job_id} was preempted: the engine started in it is gone"
            return
        if not state.active:
            return
        if state.state not in RESTARTING and (state.restarts, state.start_time) == self._run:
            return
        if self.spec.requeue and not self._healthy:
            self._progress(f"slurm job {self.job_id} requeued ({state.state}, restart {state.restarts}): waiting "
                           f"for it to run again (launcher.requeue)")
            self._wait_running()
            self.starts += 1
            return
        self._restarted = (f"slurm job {self.job_id} was restarted by Slurm ({state.state}, restart "
                           f"{state.restarts}): the engine started in it is gone, and a restarted one is not "
                           f"measured as the same")

    def poll(self) -> int | None:
        if self._restarted:
            return -1
        try:
            state = self._state()
        except slurm.SlurmUnreachable:
            return None  # not known to be over: the health checks say whether the engine answers
        if state is None:
            return -1  # the controller no longer knows it: gone
        self._check_restart(state)
        if self._restarted:
            return -1  # the engine started is gone, whatever runs in the job now
        if state.active:
            return None
        return state.exit_code if state.exit_code is not None else -1

    def restarted(self) -> str | None:
        self.poll()
        return self._restarted

    def healthy(self) -> None:
        self._healthy = True

    @property
    def returncode(self) -> int | None:
        return None if self._final is None else (self._final.exit_code if self._final.exit_code is not None else -1)

    def ended(self) -> str | None:
        if self._restarted:
            return self._restarted
        try:
            state = self._state()
        except slurm.SlurmUnreachable:
            return None
        if state is None:
            return f"slurm job {self.job_id} is unknown to the controller"
        return None if state.active else self._ended(state)

    def _ended(self, state: slurm.JobState) -> str:
        """'slurm job N ended FAILED (exit 2)', and slurm_task's refusal of a changed spec when
        that is why."""
        refused = next((line.strip() for line in tail(self.evidence_dir / f"{self.name}.stderr.log")
                        if line.startswith((REFUSED, CANNOT))), None)
        return f"slurm job {self.job_id} ended {state.describe()}" + (f": {refused}" if refused else "")

    def address(self, host: str) -> str:
        return self._address or host

    def listeners(self, host: str, port: int) -> list[dict[str, Any]]:
        """Asked on the head node, inside the job (an overlapping `srun` step): the listeners'
        SLURM_JOB_ID says whether they are this job's."""
        command = ["srun", f"--jobid={self.job_id}", "--overlap", f"--nodelist={self.node}", "--nodes=1",
                   "--ntasks=1", sys.executable, "-m", "harness.evidence.slurm_task", "identify", host, str(port)]
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=slurm.CALL_TIMEOUT_S,
                                  env=marked_env(), check=False)
            found = json.loads(done.stdout.strip().splitlines()[-1]) if done.returncode == 0 else None
        except (OSError, subprocess.TimeoutExpired, ValueError, IndexError):
            found = None
        if found is None:
            raise LaunchFailure(f"slurm job {self.job_id}: cannot ask node {self.node} who listens on port {port}")
        return [{"pid": item["pid"], "ours": item["job"] == self.job_id,
                 "described": f"pid {item['pid']} on {self.node} ({' '.join(item['program'])[:160]})"
                 + (f" of slurm job {item['job']}" if item["job"] else "")} for item in found]

    def identity(self) -> dict[str, Any]:
        return {"job_id": self.job_id, "node": self.node, "nodes": self.nodes}

    def accounting(self) -> slurm.JobAccounting | None:
        return self._accounting

    def stop(self, grace_s: float) -> tuple[int | None, bool]:
        """SIGTERM to the engine's tasks first (an engine that exits on it ends its job on its
        own: a clean stop, COMPLETED when it exits 0), scancel only what is left after
        `grace_s`; (exit code, whether the job had to be cancelled while it ran)."""
        cancelled = False
        try:
            state = self._state()
            if state is not None and state.state == "RUNNING":
                slurm.signal_steps(self.job_id)
                deadline = time.monotonic() + grace_s
                while (state := self._state()) is not None and state.active and time.monotonic() < deadline:
                    time.sleep(0.25)
            if state is not None and state.active:  # scancel: SIGTERM again, SIGKILL after KillWait
                cancelled = state.state != "PENDING"
                slurm.cancel(self.job_id)
        except slurm.SlurmUnreachable as exc:
            # the job may run on: its record stays for the next command that reaches the controller
            if self.registry is not None:
                print(f"harness: {left_recorded(self.registry.directory.parent.name, self.job_id, str(exc))}",
                      file=sys.stderr, flush=True)
            return None, False
        deadline = time.monotonic() + CANCEL_WAIT_S
        try:
            while (state := self._state()) is not None and state.active and time.monotonic() < deadline:
                time.sleep(0.5)
            self._accounting = slurm.accounting(self.job_id)
        except slurm.SlurmUnreachable:
            pass  # the controller took the signal or scancel: the job ends without us watching
        if self.registry is not None:
            self.registry.remove_job(self.job_id)
        return self.returncode, cancelled


def sbatch_options(spec: SlurmLauncher, name: str, evidence_dir: Path, comment: str) -> list[str]:
    """The sbatch options of an engine job: the runbook's settings, the server's log files as
    the job's output (`%` escaped: `slurm.filename_pattern`), and `comment` (harness's proof the
    job is ours, `job_comment`) last, where sbatch's last word wins over any in
    `sbatch_options` (which the runbook refuses anyway). HarnessError for an evidence path Slurm
    cannot write logs to."""
    options = [f"--job-name=harness-{name}", f"--nodes={spec.nodes}", f"--ntasks-per-node={spec.ntasks_per_node}",
               # a requeued job's run appends to the logs of the run before (sbatch truncates them by default)
               *(("--requeue", "--open-mode=append") if spec.requeue else ("--no-requeue",)),
               f"--output={slurm.filename_pattern(evidence_dir / f'{name}.stdout.log')}",
               f"--error={slurm.filename_pattern(evidence_dir / f'{name}.stderr.log')}"]
    for flag, value in (("partition", spec.partition), ("gres", spec.gres), ("time", spec.time),
                        ("account", spec.account), ("gpus-per-task", spec.gpus_per_task),
                        ("gpu-bind", spec.gpu_bind)):
        if value is not None:
            options.append(f"--{flag}={value}")
    return [*options, *spec.sbatch_options, f"--comment={comment}"]


def batch_script(spec: SlurmLauncher, task_spec: Path, sha256: str) -> str:
    """The job's batch script (it runs on the job's first node): check with one task per node
    that harness's interpreter is there, resolve `head_interface` there when the runbook names
    one, then `srun` one engine task per Slurm task (`slurm_task run`, which runs `task_spec`
    only while its SHA-256 is `sha256`). A failed check is one `harness: cannot ...` line on
    the job's stderr and exit 2."""
    python = shlex.quote(sys.executable)
    lines = ["#!/bin/bash",
             "# harness: one engine task per Slurm task (harness.evidence.slurm_task)",
             f"python={python}",
             # one task per node: those whose node lacks the interpreter print the node's name
             'missing=$(srun --ntasks="$SLURM_JOB_NUM_NODES" --ntasks-per-node=1 '
             'sh -c \'[ -x "$1" ] || echo "$SLURMD_NODENAME"\' sh "$python" | sort -u | paste -sd, -)',
             'if [ -n "$missing" ]; then',
             f'  echo "{CANNOT} start the engine: $python (harness\'s interpreter) is not on node(s) $missing: '
             f'harness\'s venv must be at the same path on every node" >&2',
             "  exit 2",
             "fi"]
    if spec.head_interface is not None:
        lines += [f"{HEAD_ADDR_ENV}=$(\"$python\" -m harness.evidence.slurm_task address "
                  f"{shlex.quote(spec.head_interface)}) || exit 2",
                  f"export {HEAD_ADDR_ENV}"]
    lines.append(f'exec srun --kill-on-bad-exit=1 "$python" -m harness.evidence.slurm_task run '
                 f"{shlex.quote(str(task_spec))} {sha256}")
    return "\n".join(lines) + "\n"


def launch(spec: LocalLauncher | SlurmLauncher, command: list[str], *, env: dict[str, str], evidence_dir: Path,
           name: str, registry: ProcessRegistry | None) -> Launch:
    """Start `command` with `env` the way the runbook's `launcher:` says, its output in
    `<evidence_dir>/<name>.{stdout,stderr}.log`. OSError when a local command cannot be
    started; HarnessError when the scheduler refuses the job."""
    if isinstance(spec, SlurmLauncher):
        return SlurmLaunch(spec, command, env=env, evidence_dir=evidence_dir, name=name, registry=registry)
    return LocalLaunch(command, env=env, stdout_path=evidence_dir / f"{name}.stdout.log",
                       stderr_path=evidence_dir / f"{name}.stderr.log", registry=registry)


def dist_values(spec: LocalLauncher | SlurmLauncher, host: str, free_port: Callable[[str], int]) -> dict[str, str]:
    """The multi-node placeholders as the harness fills them: for a local engine, one task
    (1, 0, its host); for a job, left for each task to fill (harness.evidence.slurm_task). The
    rendezvous port is chosen here either way."""
    if isinstance(spec, SlurmLauncher):
        values = {"nnodes": "{nnodes}", "node_rank": "{node_rank}", "head_addr": "{head_addr}"}
    else:
        values = {"nnodes": "1", "node_rank": "0", "head_addr": host}
    return {**values, "dist_port": str(free_port(host))}

