"""The Slurm command-line tools, as harness uses them: `sbatch` to submit, `scontrol show job`
and `squeue` to follow a job, `scancel` to stop it, `scontrol show hostnames/node` to find where
it runs. Every call is bounded and a failing tool is one HarnessError line.

Job states are read from `scontrol show job`, not `sacct`: `sacct` needs the accounting
database (slurmdbd), which many clusters restrict and a throwaway test cluster does not run;
`scontrol` answers from the controller itself, for as long as the job is kept there after it
ends (slurm.conf `MinJobAge`, 300 s by default — longer than harness waits on an ended job).
A job's accounting once it ended (`accounting`) comes from `sacct` where the cluster keeps it,
else from the same `scontrol` fields, and says which. `hopeless` says which pending reasons no
wait clears (squeue(1), JOB REASON CODES).
States and reasons are Slurm's words (slurm/slurm.h `job_states`, src/common/slurm_protocol_defs.c
`job_state_string`).

"Not known" and "not asked" differ: only scontrol's `Invalid job id specified` says the
controller no longer knows a job (`job_state` None); a controller that cannot be asked (down,
restarting, too slow, a wrong SLURM_CONF) is `SlurmUnreachable`, so that no one takes a job that
may run on for a job that is over. Once a call found it unreachable, this process asks again
only after UNREACHABLE_MEMO_S: each failed ask costs 10-30 s, and one command asks once, not
once per job."""

from __future__ import annotations

import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from harness.errors import HarnessError

TOOLS = ("sbatch", "srun", "squeue", "scontrol", "scancel")
CALL_TIMEOUT_S = 30
# A job in one of these states may still run (or be about to); every other state is final.
ACTIVE = frozenset({"PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED", "REQUEUED",
                    "RESIZING", "SIGNALING", "STAGE_OUT", "STOPPED", "RESV_DEL_HOLD", "REQUEUE_HOLD",
                    "REQUEUE_FED", "SPECIAL_EXIT"})
UNREACHABLE_MEMO_S = 30.0
# sacct asks slurmdbd, not the controller: one that does not answer soon costs a stop no more than this.
SACCT_TIMEOUT_S = 10
# A job that cannot be known this way: purged from the controller, or never one.
_GONE = ("Invalid job id specified",)
# scancel's word for a job that is over: nothing left to cancel.
_OVER = (*_GONE, "already completing or completed")
_unreachable: tuple[float, str] | None = None  # (monotonic time, why) of this process's last failed ask
_FIELD = re.compile(r"(?:^|\s)(\w+)=(\S*)")
# A job id as sbatch --parsable prints it for the plain batch jobs harness submits (no array
# `_N` or heterogeneous `+N` suffix): anything else never reaches a command line, where
# `--user=me` or `-1` would be read as an option.
_JOB_ID = re.compile(r"[1-9][0-9]{0,9}")


class SlurmUnreachable(HarnessError):
    """The controller could not be asked (one line: why): whether a job still runs is not known."""


def checked_job_id(text: object) -> str:
    """`text` itself when it is a Slurm job id (ASCII decimal digits, no leading zero, no array
    or het suffix); HarnessError otherwise."""
    if not isinstance(text, str) or not _JOB_ID.fullmatch(text):
        raise HarnessError(f"{str(text)[:80]!r} is not a slurm job id (decimal digits)")
    return text


def filename_pattern(path: Path) -> str:
    """`path` as an sbatch --output/--error value: Slurm expands `%j`, `%x`, ... there, so each
    `%` is doubled. HarnessError for a path with a backslash: Slurm then drops every backslash
    (and expands nothing), so the file would be written elsewhere."""
    text = str(path)
    if "\\" in text:
        raise HarnessError(f"{text}: slurm cannot write a log file whose path has a backslash (it drops them); "
                           f"use an evidence folder without one")
    return text.replace("%", "%%")


def missing_tools() -> list[str]:
    """The Slurm tools harness needs that are not on PATH."""
    return [tool for tool in TOOLS if shutil.which(tool) is None]


@dataclass(frozen=True)
class JobState:
    """What the controller says of a job now."""

    job_id: str
    state: str  # PENDING, RUNNING, COMPLETED, TIMEOUT, NODE_FAIL, OUT_OF_MEMORY, CANCELLED, FAILED, ...
    reason: str  # why it pends or ended (Resources, Priority, BeginTime, TimeLimit, NonZeroExitCode, None)
    exit_code: int | None  # the batch script's exit status (ExitCode=status:signal); None while it runs
    signal: int | None  # the signal that ended it, if any
    nodes: str  # the node list Slurm chose ("" while pending), e.g. "gpu[01-04]"
    time_limit: str  # e.g. "00:01:00" or "UNLIMITED"
    comment: str
    restarts: int = 0  # how often Slurm requeued it (Restarts=)
    start_time: str = ""  # when it (last) started, Slurm's local ISO time; "Unknown" while it never ran
    submit_time: str = ""
    end_time: str = ""
    run_time: str = ""  # RunTime=, [D-]HH:MM:SS

    @property
    def active(self) -> bool:
        """Whether the job may still run."""
        return self.state in ACTIVE

    def describe(self) -> str:
        """'TIMEOUT (TimeLimit, time limit 00:01:00)', 'FAILED (exit 1)': the state in words."""
        details = []
        if self.reason and self.reason != "None":
            details.append(self.reason)
        if self.state == "TIMEOUT":
            details.append(f"time limit {self.time_limit}")
        elif not self.active and self.exit_code:
            details.append(f"exit {self.exit_code}")
        elif not self.active and self.signal:
            details.append(f"signal {self.signal}")
        return self.state + (f" ({', '.join(details)})" if details else "")


def _call(args: list[str], *, what: str, input_text: str | None = None, cwd: Path | None = None,
          env: dict[str, str] | None = None) -> str:
    try:
        done = subprocess.run(args, input=input_text, capture_output=True, text=True, timeout=CALL_TIMEOUT_S,
                              cwd=cwd, env=env, check=False)
    except FileNotFoundError:
        raise HarnessError(f"{what}: `{args[0]}` is not installed (the Slurm client tools are needed on "
                           f"this machine)") from None
    except subprocess.TimeoutExpired:
        raise HarnessError(f"{what}: `{' '.join(args[:3])}` did not answer in {CALL_TIMEOUT_S} s "
                           f"(is slurmctld reachable?)") from None
    if done.returncode != 0:
        message = (done.stderr or done.stdout).strip().splitlines()
        raise HarnessError(f"{what}: {args[0]} failed: {message[-1] if message else f'exit {done.returncode}'}")
    return done.stdout


def submit(script: str, options: list[str], *, cwd: Path, env: dict[str, str]) -> str:
    """Submit the batch `script` (its text, given on stdin) with sbatch `options`; the job id.
    HarnessError with sbatch's own message when the controller refuses it."""
    out = _call(["sbatch", "--parsable", *options], what="cannot submit the slurm job", input_text=script,
                cwd=cwd, env=env)
    job_id = out.strip().split(";", 1)[0]
    if not _JOB_ID.fullmatch(job_id):
        raise HarnessError(f"cannot submit the slurm job: sbatch answered {out.strip()[:200]!r}, not a job id")
    return job_id


def _ask(args: list[str], over: tuple[str, ...]) -> subprocess.CompletedProcess | None:
    """Run a tool that asks the controller: its result, or None when it answered with one of
    `over` (the job is not there). SlurmUnreachable on any other failure."""
    global _unreachable
    if _unreachable is not None and time.monotonic() - _unreachable[0] < UNREACHABLE_MEMO_S:
        raise SlurmUnreachable(_unreachable[1])
    try:
        done = subprocess.run(args, capture_output=True, text=True, timeout=CALL_TIMEOUT_S, check=False)
    except FileNotFoundError:
        why = f"`{args[0]}` is not installed"
    except subprocess.TimeoutExpired:
        why = f"`{' '.join(args[:3])}` did not answer in {CALL_TIMEOUT_S} s"
    else:
        if done.returncode == 0:
            return done
        if any(word in done.stderr for word in over):
            return None
        lines = (done.stderr or done.stdout).strip().splitlines()
        why = f"{args[0]} failed: {lines[-1].strip() if lines else f'exit {done.returncode}'}"
    _unreachable = (time.monotonic(), f"slurm controller unreachable ({why})")
    raise SlurmUnreachable(_unreachable[1])


def job_state(job_id: str) -> JobState | None:
    """The job's state (`scontrol show job -o`); None once the controller no longer knows it
    (`Invalid job id specified`). SlurmUnreachable when the controller cannot be asked (or
    answers no state); HarnessError when `job_id` is not a job id (`checked_job_id`)."""
    done = _ask(["scontrol", "show", "job", "-o", checked_job_id(job_id)], _GONE)
    if done is None:
        return None
    if "JobState=" not in done.stdout:
        raise SlurmUnreachable(f"slurm controller unreachable (scontrol answered no state: {done.stdout.strip()[:120]!r})")
    fields = dict(_FIELD.findall(done.stdout.splitlines()[0]))
    status, _, sig = fields.get("ExitCode", "").partition(":")
    state = fields.get("JobState", "UNKNOWN")
    ended = state not in ACTIVE
    return JobState(job_id=job_id, state=state, reason=fields.get("Reason", ""),
                    exit_code=int(status) if ended and status.isdigit() else None,
                    signal=int(sig) if ended and sig.isdigit() and int(sig) else None,
                    nodes=fields.get("NodeList", "") if fields.get("NodeList") != "(null)" else "",
                    time_limit=fields.get("TimeLimit", ""), comment=fields.get("Comment", ""),
                    restarts=int(fields.get("Restarts", "0") or 0), start_time=fields.get("StartTime", ""),
                    submit_time=fields.get("SubmitTime", ""), end_time=fields.get("EndTime", ""),
                    run_time=fields.get("RunTime", ""))


def hostnames(nodelist: str) -> list[str]:
    """The node names of a Slurm node list ('gpu[01-02]' -> ['gpu01', 'gpu02'])."""
    return _call(["scontrol", "show", "hostnames", nodelist], what="cannot expand the node list").split()


def node_address(node: str) -> str:
    """The address the cluster reaches `node` at (its NodeAddr; the name itself when unset)."""
    out = _call(["scontrol", "show", "node", "-o", node], what=f"cannot look up node {node}")
    return dict(_FIELD.findall(out)).get("NodeAddr") or node


def cancel(job_id: str) -> None:
    """scancel the job (Slurm sends its steps SIGTERM, then SIGKILL after KillWait); a job that
    already ended, or that the controller no longer knows, is not an error. SlurmUnreachable
    when the controller did not take the cancel; HarnessError when `job_id` is not a job id
    (`checked_job_id`)."""
    _ask(["scancel", checked_job_id(job_id)], _OVER)


def signal_steps(job_id: str, signal_name: str = "TERM") -> None:
    """Send SIGnal `signal_name` to the tasks of the job's steps (`scancel --signal`), not to
    its batch script and without cancelling the job: an engine that exits on it ends its job
    on its own (COMPLETED when it exits 0). slurmstepd writes `*** STEP N.0 ON node CANCELLED
    AT ... ***` on the job's stderr for every SIGTERM it delivers (src/slurmd/slurmstepd/req.c);
    the job's state, not that line, says how it ended. A job that is over, or pending again
    (scancel: `Job can not be altered now`: no engine runs to signal), is not an error;
    SlurmUnreachable when the controller did not take it."""
    _ask(["scancel", f"--signal={signal_name}", checked_job_id(job_id)], (*_OVER, "Job can not be altered now"))


# Pending reasons no wait clears: squeue(1), "JOB REASON CODES" (Slurm 22.05), each with the man
# page's words. Every other reason (Priority, Resources, Dependency, BeginTime, Reservation,
# Licenses, the aggregate AssocGrp*/QOSGrp* limits that clear as the group's other jobs end,
# ...) is waited on, within pending_timeout_s. `PartitionConfig` is not on the man page: it is
# slurm_protocol_defs.c's word for a request the partition's configuration refuses.
HOPELESS = {
    "BadConstraints": "the job's constraints can not be satisfied",
    "DependencyNeverSatisfied": "a dependency of the job will never be satisfied",
    "FrontEndDown": "no front end node is available to execute this job",
    "InvalidAccount": "the job's account is invalid",
    "InvalidQOS": "the job's QOS is invalid",
    "JobHeldAdmin": "the job is held by a system administrator",
    "JobHeldUser": "the job is held by the user",
    "JobLaunchFailure": "the job could not be launched",
    "NodeDown": "a node required by the job is down",
    "PartitionConfig": "the partition's configuration refuses the job's request",
    "PartitionDown": "the partition required by this job is in a DOWN state",
    "PartitionInactive": "the partition required by this job is Inactive and not able to start jobs",
    "PartitionNodeLimit": "the number of nodes required is outside the partition's limits (or they are DOWN or "
                          "DRAINED)",
    "PartitionTimeLimit": "the job's time limit exceeds its partition's time limit",
}
# AssocMax*Limit / QOSMax*Limit: "the job requests a resource that violates a per-job limit" —
# no other job's end changes that.
_PER_JOB_LIMIT = re.compile(r"(Assoc|QOS)Max\w*")


def hopeless(reason: str) -> str | None:
    """Why a job pending for `reason` (scontrol's Reason=, e.g. 'PartitionDown',
    'ReqNodeNotAvail,_UnavailableNodes:gpu01') will not start however long it waits, in the
    man page's words; None when waiting may clear it. ReqNodeNotAvail is hopeless only when it
    names UnavailableNodes: squeue(1) says those are DOWN, DRAINED or not responding and
    "typically require the intervention of a system administrator"; without them the nodes are
    in use or reserved, which clears."""
    code = reason.split(",", 1)[0]
    if code in HOPELESS:
        return HOPELESS[code]
    if _PER_JOB_LIMIT.fullmatch(code):
        return "the job requests a resource that violates a per-job limit of its association or QOS"
    unavailable = re.search(r"UnavailableNodes:([^,\s]+)", reason)
    if code == "ReqNodeNotAvail" and unavailable:
        return f"nodes it requires are DOWN, DRAINED or not responding ({unavailable.group(1)}), which needs an " \
               f"administrator"
    return None


class JobAccounting(BaseModel):
    """How an ended job went, as the cluster accounts it (`server.json`'s `slurm`): times are
    Slurm's local ISO times as printed ('2026-12-04T07:13:41'), None when Slurm has none."""

    job_id: str
    source: Literal["sacct", "scontrol"]  # sacct where the cluster keeps accounting, else the controller's record
    state: str  # COMPLETED, CANCELLED, FAILED, TIMEOUT, ...
    exit_code: str  # Slurm's status:signal, e.g. '0:0', '143:0', '0:15'
    nodes: str  # the node list it ran on, e.g. 'gpu[01-04]'
    submitted: str | None = None
    started: str | None = None
    ended: str | None = None
    pending_s: float | None = None  # started - submitted (the queue wait)
    run_s: float | None = None  # ended - started
    restarts: int = 0  # requeues (scontrol only; sacct lists each run apart)

    def describe(self) -> str:
        """'COMPLETED, exit 0:0; pending 1 s, ran 12 s (scontrol)': how it went, and the source."""
        times = [f"{label} {value:g} s" for label, value in (("pending", self.pending_s), ("ran", self.run_s))
                 if value is not None]
        restarts = [f"{self.restarts} restart(s)"] if self.restarts else []
        details = "; " + ", ".join(times + restarts) if times or restarts else ""
        return f"{self.state}, exit {self.exit_code}{details} ({self.source})"


def _when(text: str) -> str | None:
    """A Slurm time field, or None for its words for none ('Unknown', 'None', 'N/A', '')."""
    try:
        datetime.fromisoformat(text)
    except ValueError:
        return None
    return text


def _seconds(start: str | None, end: str | None) -> float | None:
    if start is None or end is None:
        return None
    return max(0.0, (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds())


def accounting(job_id: str) -> JobAccounting | None:
    """The job's accounting: `sacct -X` (the allocation's line) where the cluster keeps
    accounting and has the job, else the controller's record (`scontrol show job`); None when
    neither knows the job. SlurmUnreachable when the controller cannot be asked."""
    try:
        done = subprocess.run(["sacct", "-X", "-n", "-P", "-j", checked_job_id(job_id), "-o",
                               "JobID,State,ExitCode,NodeList,Submit,Start,End"],
                              capture_output=True, text=True, timeout=SACCT_TIMEOUT_S, check=False)
        rows = [line.split("|") for line in done.stdout.splitlines() if line.startswith(f"{job_id}|")]
    except (OSError, subprocess.TimeoutExpired):
        rows = []  # no sacct here, or no slurmdbd answering: the controller's record is next
    if rows and len(rows[-1]) == 7:
        _, state, exit_code, nodes, submitted, started, ended = rows[-1]
        submitted, started, ended = _when(submitted), _when(started), _when(ended)
        return JobAccounting(job_id=job_id, source="sacct", state=state.split()[0], exit_code=exit_code,
                             nodes="" if nodes == "None assigned" else nodes, submitted=submitted, started=started,
                             ended=ended, pending_s=_seconds(submitted, started), run_s=_seconds(started, ended))
    state = job_state(job_id)
    if state is None:
        return None
    submitted, started, ended = _when(state.submit_time), _when(state.start_time), _when(state.end_time)
    exit_code = "" if state.active else f"{state.exit_code or 0}:{state.signal or 0}"
    return JobAccounting(job_id=job_id, source="scontrol", state=state.state, exit_code=exit_code, nodes=state.nodes,
                         submitted=submitted, started=started, ended=ended, pending_s=_seconds(submitted, started),
                         run_s=_seconds(started, ended), restarts=state.restarts)
