"""Process groups: every process the harness starts (an engine, bench_serving) runs in its own
session, so it and whatever it forks can be stopped as one group. psutil identifies processes
(start times survive `exec`, so a recycled pid is never mistaken for ours), and says who listens
on a port.

Every such process is started with `marked_env`: its environment carries harness's marker
(HARNESS_PROCESS, a random token of the harness process that started it), which its forks and
exec'd programs inherit. A recorded group is signalled only when its members carry the recorded
marker, so a record naming any other process of the user (planted, or stale) never kills it."""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass

import psutil

MARKER_VAR = "HARNESS_PROCESS"
_MARKER = secrets.token_hex(16)  # this harness process's: every process it starts carries it


def marked_env(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """`env` (default: this process's environment) plus harness's marker: the environment of every
    process the harness starts and records (`harness.record.processes`)."""
    return {**(os.environ if env is None else env), MARKER_VAR: _MARKER}


def own_marker() -> str:
    """The marker `marked_env` gives the processes this harness process starts."""
    return _MARKER


def marker_of(pid: int) -> str | None:
    """The marker in the environment `pid` runs with; None when it has none, is gone, or its
    environment cannot be read (another user's process)."""
    try:
        return psutil.Process(pid).environ().get(MARKER_VAR)
    except psutil.Error:
        return None


def start_time(pid: int) -> float | None:
    """When the process started (seconds since the epoch, as psutil reports it), or None when
    it is gone. Unchanged by exec; a recycled pid gets another value."""
    try:
        return psutil.Process(pid).create_time()
    except psutil.Error:
        return None


def running(pid: int, recorded_start: float | None) -> bool:
    """Whether `pid` is still the process that started at `recorded_start` and has not exited
    (a zombie, killed but not yet reaped by its parent, counts as gone)."""
    if recorded_start is None:
        return False
    try:
        process = psutil.Process(pid)
        return process.create_time() == recorded_start and process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


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


def _live_members(pgid: int, marker: str | None = None) -> list[int]:
    """The live members of group `pgid`; with `marker`, only those carrying it."""
    members = []
    for process in psutil.process_iter(["status"]):
        try:
            if (os.getpgid(process.pid) == pgid and process.info["status"] != psutil.STATUS_ZOMBIE
                    and (marker is None or marker_of(process.pid) == marker)):
                members.append(process.pid)
        except (OSError, psutil.Error):
            continue
    return members


def _recorded_leader(pid: int, recorded_start: float | None, marker: str | None) -> str:
    """What a recorded group's leader is now: "ours" (the very process: same start time, still
    running, carrying the recorded marker), "gone" (exited: only marked members may be left) or
    "other" (a recycled pid, or a process without the marker: never ours)."""
    if recorded_start is None or marker is None or pid <= 1:
        return "other"
    current = start_time(pid)
    if current is None:
        return "gone"
    if current != recorded_start:
        return "other"
    if not running(pid, recorded_start):
        return "gone"  # a zombie: exited, not yet reaped
    return "ours" if marker_of(pid) == marker else "other"


def recorded_group_alive(pid: int, pgid: int, recorded_start: float | None, marker: str | None) -> bool:
    """Whether the group a process recorded earlier (possibly by another, killed harness) is
    still there: its leader `pid` is that very process (same start time and marker), or the
    leader is gone and members of group `pgid` carrying the marker remain. A live leader with
    another start time or without the marker is not ours; zombies are gone."""
    leader = _recorded_leader(pid, recorded_start, marker)
    return leader == "ours" or (leader == "gone" and pgid > 1 and bool(_live_members(pgid, marker)))


def kill_recorded_group(pid: int, pgid: int, recorded_start: float | None, marker: str | None) -> bool:
    """SIGKILL what is still ours of a group recorded earlier: the whole group while its leader
    is ours, else only the members carrying the marker (never a group whose leader is gone as a
    whole: its id may be shared with processes that are not ours). Returns whether anything was
    signalled; anything unproven is left alone."""
    leader = _recorded_leader(pid, recorded_start, marker)
    if leader == "ours":
        signal_group(pgid, signal.SIGKILL)
        return True
    members = _live_members(pgid, marker) if leader == "gone" and pgid > 1 else []
    for member in members:
        try:
            os.kill(member, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    return bool(members)


def wait_group_gone(pgid: int, limit_s: float, marker: str | None = None) -> bool:
    """Wait up to `limit_s` seconds for every member of group `pgid` (with `marker`, every
    member carrying it) to exit (SIGKILL is delivered asynchronously); returns whether they are
    gone."""
    deadline = time.monotonic() + limit_s
    while _live_members(pgid, marker):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
    return True


@dataclass(frozen=True)
class Listener:
    """A process listening on a TCP port: pid None when this user may not see whose it is."""

    pid: int | None
    address: str

    def describe(self) -> str:
        """'pid 123 (python -m x ...)', or what can be said without the pid."""
        if self.pid is None:
            return "a process this user cannot see"
        try:
            command = " ".join(psutil.Process(self.pid).cmdline())[:160]
        except psutil.Error:
            command = ""
        return f"pid {self.pid}" + (f" ({command})" if command else "")


_ANY = {"0.0.0.0", "::", "::ffff:0.0.0.0"}


def listeners(host: str, port: int) -> list[Listener]:
    """Every TCP socket listening on `port` that a connection to (host, port) could reach: on
    one of host's addresses or on a wildcard. Reads the system's socket table (psutil); on
    systems where that needs privileges, only this user's processes are seen."""
    try:
        addresses = {info[4][0] for info in socket.getaddrinfo(host, port, proto=socket.IPPROTO_TCP)}
    except OSError:
        addresses = {host}
    addresses |= {f"::ffff:{a}" for a in addresses if ":" not in a}
    return [Listener(pid=pid, address=f"{ip}:{port}") for pid, ip in _listening(port)
            if ip in addresses or ip in _ANY]


def _listening(port: int) -> list[tuple[int | None, str]]:
    """(pid, address) of the TCP sockets listening on `port`."""
    try:
        return [(c.pid, c.laddr.ip) for c in psutil.net_connections(kind="tcp")
                if c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port]
    except psutil.AccessDenied:  # e.g. macOS without privileges: this user's processes only
        found = []
        for process in psutil.process_iter():
            try:
                found += [(process.pid, c.laddr.ip) for c in process.net_connections(kind="tcp")
                          if c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port]
            except psutil.Error:
                continue
        return found


def in_session(pid: int, leader: int) -> bool:
    """Whether `pid` belongs to the session `leader` started (every process the harness starts
    leads a new session; its forks and exec'd programs stay in it)."""
    try:
        return os.getsid(pid) == leader
    except OSError:
        return False
