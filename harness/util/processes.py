"""Process groups: every process the harness starts (an engine, bench_serving) runs in its own
session, so it and whatever it forks can be stopped as one group. psutil identifies processes
(start times survive `exec`, so a recycled pid is never mistaken for ours)."""

from __future__ import annotations

import os
import signal
import subprocess
import time

import psutil


def start_time(pid: int) -> float | None:
    """When the process started (seconds since the epoch, as psutil reports it), or None when
    it is gone. Unchanged by exec; a recycled pid gets another value."""
    try:
        return psutil.Process(pid).create_time()
    except psutil.Error:
        return None


def signal_group(pgid: int, sig: signal.Signals) -> None:
    """Send `sig` to a process group; a group that is already gone is not an error."""
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def group_alive(process: subprocess.Popen) -> bool:
    """Whether any member of the group led by `process` still runs (the leader is reaped
    first, so only live members, forked workers too, count)."""
    process.poll()
    try:
        os.killpg(process.pid, 0)
    except ProcessLookupError:
        return False
    return True


def stop_group(process: subprocess.Popen, grace_s: float) -> tuple[int, bool]:
    """SIGTERM the group led by `process`, SIGKILL what is left after `grace_s` seconds;
    returns (the leader's exit code, whether SIGKILL was needed)."""
    signal_group(process.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while group_alive(process) and time.monotonic() < deadline:
        time.sleep(0.05)
    killed = group_alive(process)
    if killed:
        signal_group(process.pid, signal.SIGKILL)
    return process.wait(), killed


def kill_group(process: subprocess.Popen) -> None:
    """SIGKILL the group led by `process` at once and reap the leader."""
    signal_group(process.pid, signal.SIGKILL)
    process.wait()


def kill_recorded_group(pid: int, pgid: int, recorded_start: float | None) -> bool:
    """SIGKILL the group `pgid` of a process recorded earlier (possibly by another, killed
    harness process) if `pid` is still that very process: same start time, still leading the
    group. Returns whether it was signalled; anything unproven is left alone."""
    if recorded_start is None or pgid <= 1 or start_time(pid) != recorded_start:
        return False
    try:
        if os.getpgid(pid) != pgid:
            return False
    except OSError:
        return False
    signal_group(pgid, signal.SIGKILL)
    return True
