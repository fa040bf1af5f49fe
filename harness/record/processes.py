"""Every process a step starts (the engine, bench_serving) is part of the run's record: one file
per process group under `.harness/runs/<run-id>/processes/`, written when it starts and removed
once it is stopped. A file that outlives its harness process names an orphan (the harness was
killed with SIGKILL, or the machine lost power): any later command on the workspace stops it
(`sweep`), and `status` lists what is still alive.

A recorded group is signalled only while it provably is the one started: its leader has the
recorded start time (a recycled pid never matches) and carries the marker recorded with it (the
HARNESS_PROCESS token of `harness.util.processes.marked_env`, which no process harness did not
start has), or the leader is gone and members carrying the marker remain (only they are
signalled). A planted or stale record naming another process of the user stops nothing. The
leader's executable is not compared: launch wrappers exec into the engine (`exec python -m ...`),
so it legitimately changes; start time and marker are what survive exec. Groups whose harness
is still running belong to it and are left alone; records without a marker (written before
markers existed) are never signalled.

A Slurm job (an engine the runbook's `launcher: slurm` runs on the cluster) is recorded the same
way, by job id (`job-<id>.json`), with a secret drawn for that one job: its sbatch --comment is
`job_comment(secret)`, a hash of the secret. The comment is public (squeue and scontrol show it
to every user of the cluster) but the secret is only in the record, a file readable by this user
alone (0600), and a hash cannot be undone: so a record proves a job is ours only when it holds
the secret whose hash the job carries, and a record planted in a shared workspace, copying what
squeue shows, proves nothing. A sweep scancels a job only on that proof, while the controller
still runs it; a recycled or foreign job id, or a record whose job id is not one (`--user=me`,
`-1`: `harness.util.slurm.checked_job_id`, refused when the record is read), is never cancelled.

A job record is forgotten only when the controller says the job is over (ended, purged, or not
ours), or took its scancel. A controller that cannot be asked (down, restarting, timing out, a
wrong SLURM_CONF) leaves the record, said in one line (`left_recorded`), for the next command
that reaches it: otherwise a job of a killed harness would run on a GPU node, known to no one.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import subprocess
from pathlib import Path

from pydantic import BaseModel, field_validator

from harness.errors import HarnessError
from harness.record.layout import Workspace, utc_now
from harness.util import slurm
from harness.util.files import write_atomic
from harness.util.processes import (
    kill_recorded_group,
    own_marker,
    recorded_group_alive,
    running,
    start_time,
    wait_group_gone,
)

Role = str  # "engine", "bench_serving", ...


class ProcessRecord(BaseModel):
    """A process group a step started, and the harness process that owns it."""

    role: Role
    step: str | None = None
    command: list[str]
    pid: int  # the group's leader; pgid == pid (start_new_session)
    start_time: float | None
    owner_pid: int
    owner_start_time: float | None
    started_at: str
    marker: str | None = None  # the HARNESS_PROCESS token its environment carries (marked_env)
    job: str | None = None  # a Slurm job id (then `pid` is 0: the job runs on the cluster)
    secret: str | None = None  # a job's proof of ownership: its comment is job_comment(secret)

    @field_validator("job")
    @classmethod
    def _a_job_id(cls, value: str | None) -> str | None:
        try:
            return None if value is None else slurm.checked_job_id(value)
        except HarnessError as exc:  # a ValueError is what makes the record unreadable (skipped), not fatal
            raise ValueError(str(exc)) from None

    @property
    def owner_running(self) -> bool:
        """Whether the harness process that started it still runs (and so still owns it)."""
        return running(self.owner_pid, self.owner_start_time)

    @property
    def alive(self) -> bool:
        """Whether its group still has members (a job: the controller still runs it, as ours).
        SlurmUnreachable for a job when the controller cannot be asked."""
        if self.job is not None:
            if self.secret is None:
                return False  # no proof it is ours (a record written before secrets existed)
            state = slurm.job_state(self.job)
            return (state is not None and state.active
                    and hmac.compare_digest(state.comment.encode(), job_comment(self.secret).encode()))
        return recorded_group_alive(self.pid, self.pid, self.start_time, self.marker)

    def describe(self) -> str:
        """One line: `engine pid 123 (02-interface): python -m ...` (`slurm job 45` for a job)."""
        where = f" ({self.step})" if self.step else ""
        what = f"slurm job {self.job}" if self.job is not None else f"pid {self.pid}"
        return f"{self.role} {what}{where}: {' '.join(self.command)[:120]}"


def job_comment(secret: str) -> str:
    """The sbatch --comment of the job submitted with `secret` (a fresh random token per job):
    'harness:' and 64 hex digits of SHA-256, which shows the job is ours to whoever holds the
    secret and lets no one who reads it find the secret."""
    return "harness:" + hashlib.sha256(f"harness slurm job {secret}".encode()).hexdigest()


class ProcessRegistry:
    """The process files of one run (`directory`), for processes started by step `step`."""

    def __init__(self, directory: Path, step: str | None = None):
        self.directory = Path(directory)
        self.step = step

    def _path(self, pid: int) -> Path:
        return self.directory / f"{pid}.json"

    def add(self, process: subprocess.Popen, role: Role, command: list[str]) -> ProcessRecord:
        """Record a just-started process group (its leader `process`, in a session of its own,
        started with `harness.util.processes.marked_env`)."""
        me = os.getpid()
        record = ProcessRecord(role=role, step=self.step, command=[str(c) for c in command], pid=process.pid,
                               start_time=start_time(process.pid), owner_pid=me, owner_start_time=start_time(me),
                               started_at=utc_now(), marker=own_marker())
        write_atomic(self._path(process.pid), record.model_dump_json(indent=2) + "\n")
        return record

    def remove(self, process: subprocess.Popen) -> None:
        """Forget a group the lifecycle has stopped."""
        self._path(process.pid).unlink(missing_ok=True)

    def add_job(self, job_id: str, role: Role, command: list[str], secret: str) -> ProcessRecord:
        """Record a just-submitted Slurm job, submitted with the comment `job_comment(secret)`.
        The file is this user's alone (0600): the secret in it is the proof the job is ours.
        HarnessError when `job_id` is not a job id."""
        me = os.getpid()
        record = ProcessRecord(role=role, step=self.step, command=[str(c) for c in command], pid=0, start_time=None,
                               owner_pid=me, owner_start_time=start_time(me), started_at=utc_now(),
                               job=slurm.checked_job_id(job_id), secret=secret)
        write_atomic(self.directory / f"job-{job_id}.json", record.model_dump_json(indent=2) + "\n", mode=0o600)
        return record

    def remove_job(self, job_id: str) -> None:
        """Forget a job the lifecycle has cancelled."""
        (self.directory / f"job-{job_id}.json").unlink(missing_ok=True)

    def records(self) -> list[tuple[Path, ProcessRecord]]:
        """Every recorded group (unreadable files, torn by a kill mid-write, and records naming
        no valid job id are skipped)."""
        if not self.directory.is_dir():
            return []
        found = []
        for path in sorted(self.directory.glob("*.json")):
            try:
                found.append((path, ProcessRecord.model_validate_json(path.read_text(encoding="utf-8"))))
            except (OSError, ValueError):
                continue
        return found

    def sweep(self, left: list[tuple[ProcessRecord, str]] | None = None) -> list[ProcessRecord]:
        """Stop every recorded group whose harness process is gone; forget groups that are
        gone. Returns the groups it stopped. A job whose controller cannot be asked keeps its
        record; `left`, when given, gains (record, why in one line) for each."""
        stopped = []
        for path, record in self.records():
            if record.owner_running:
                continue  # its harness still runs it
            if record.job is not None:
                if slurm.missing_tools():
                    continue  # no Slurm tools here: cannot tell, so keep the record for a command that can
                try:
                    if record.alive:
                        slurm.cancel(record.job)
                        stopped.append(record)
                except slurm.SlurmUnreachable as exc:
                    if left is not None:
                        left.append((record, str(exc)))
                    continue
                path.unlink(missing_ok=True)  # cancelled, ended, or not ours (a foreign or recycled id)
                continue
            if kill_recorded_group(record.pid, record.pid, record.start_time, record.marker):
                wait_group_gone(record.pid, 5, record.marker)
                stopped.append(record)
            if not record.alive:
                path.unlink(missing_ok=True)
        return stopped

    def alive(self) -> list[ProcessRecord]:
        """The recorded groups that still have members, and the jobs whose controller cannot be
        asked (they may still run)."""
        found = []
        for _, record in self.records():
            try:
                if record.alive:
                    found.append(record)
            except slurm.SlurmUnreachable:
                found.append(record)
        return found


def left_recorded(run_id: str, job_id: str, why: str) -> str:
    """The one line saying a job's record is kept because the controller could not be asked
    (`why`: SlurmUnreachable's line): 'slurm controller unreachable (...): job 123 of run r1
    left recorded; ...'."""
    return f"{why}: job {job_id} of run {run_id} left recorded; the next command that reaches it cancels it"


def sweep_workspace(workspace: Workspace) -> tuple[list[tuple[str, ProcessRecord]], list[str]]:
    """Stop every process group a killed harness left running in any run of the workspace:
    (run id, record) of each one stopped, and a `left_recorded` line for each job kept because
    the controller could not be asked."""
    stopped, left = [], []
    for run_id in workspace.run_ids():
        kept: list[tuple[ProcessRecord, str]] = []
        stopped += [(run_id, record) for record in ProcessRegistry(workspace.run(run_id).processes_dir).sweep(kept)]
        left += [left_recorded(run_id, record.job, why) for record, why in kept]
    return stopped, left
