"""What runs inside a Slurm job harness submits (`harness.evidence.launchers.SlurmLaunch`), on
the node: one `run` per task fills the engine command's per-task placeholders from Slurm's
environment and execs the engine; `identify`, run as an extra step on the head node, says who
listens on the engine's port there.

    python -m harness.evidence.slurm_task run SPEC.json SHA256
    python -m harness.evidence.slurm_task identify HOST PORT
    python -m harness.evidence.slurm_task address INTERFACE

`run` runs SPEC only while its SHA-256 is the one harness put in the batch script at submit: the
job may start hours later, and whoever can write the evidence folder meanwhile must not choose
what it runs; a changed spec is refused in one line (REFUSED ...) on the job's stderr, exit 2.
{nnodes} is the job's task count (SLURM_NTASKS: one task per node for a multi-node
engine), {node_rank} the task's rank (SLURM_PROCID), {head_addr} the address of the first node
of the job (where rank 0 runs with Slurm's default block distribution): its NodeAddr, or, with the
runbook's `head_interface`, that interface's address there (`address`, run by the batch script on
that node, hands it to the tasks as HARNESS_HEAD_ADDR). Rank 0 writes to the
job's output (the server's logs); rank r > 0 to `<name>.rank<r>.{stdout,stderr}.log` beside them.
The engine runs as the task's child, so that the task ends as the engine did, except that an
engine ending on the SIGTERM of a stop (`scancel --signal=TERM`, which Slurm delivers to every
process of the step) ends its task with exit 0, a clean stop, and says so on stderr.
Only the standard library and harness.util are imported: this runs once per task."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

REFUSED = "harness: refused"  # how slurm_task's refusal line begins (the launcher looks for it)
CANNOT = "harness: cannot"  # how the batch script's line begins when the node cannot run the engine
HEAD_ADDR_ENV = "HARNESS_HEAD_ADDR"
# How long a task whose engine ended on SIGTERM waits for its own (seconds).
STOP_SIGNAL_WAIT_S = 5.0


def task_command(command: list[str], env: dict[str, str], head_addr: str) -> list[str]:
    """`command` with {nnodes}, {node_rank} and {head_addr} filled in for this task. Plain
    replacement, not str.format: the rest was formatted already (a literal brace stays)."""
    values = {"{nnodes}": env.get("SLURM_NTASKS", "1"), "{node_rank}": env.get("SLURM_PROCID", "0"),
              "{head_addr}": head_addr}
    filled = []
    for arg in command:
        for token, value in values.items():
            arg = arg.replace(token, value)
        filled.append(arg)
    return filled


def _run(spec_path: str, sha256: str) -> None:
    stopping: list[int] = []
    # Slurm delivers a stop's SIGTERM to every process of the step, this one too: noted, so that
    # an engine that ends on it ends its task (and job) as a clean stop, exit 0. Installed first:
    # a stop may come while this task still starts (a rank > 0 starts beside a healthy rank 0).
    signal.signal(signal.SIGTERM, lambda signum, _frame: stopping.append(signum))
    from harness.util import slurm

    try:
        data = Path(spec_path).read_bytes()
    except OSError as exc:
        raise SystemExit(f"{REFUSED} to run {spec_path}: cannot read it ({exc.strerror})") from None
    found = hashlib.sha256(data).hexdigest()  # of the very bytes run, so no later write counts
    if found != sha256:
        print(f"{REFUSED} to run {spec_path}: it changed after the job was submitted (sha256 {found[:12]}, "
              f"submitted {sha256[:12]})", file=sys.stderr, flush=True)
        raise SystemExit(2)
    spec = json.loads(data)
    head_addr = (os.environ.get(HEAD_ADDR_ENV)
                 or slurm.node_address(slurm.hostnames(os.environ["SLURM_JOB_NODELIST"])[0]))
    command = task_command(spec["command"], dict(os.environ), head_addr)
    rank = int(os.environ.get("SLURM_PROCID", "0"))
    if rank > 0:
        logs = Path(spec["logs"])
        for fd, kind in ((1, "stdout"), (2, "stderr")):
            # O_NOFOLLOW: a link planted in the shared folder is not written through
            handle = os.open(logs / f"{spec['name']}.rank{rank}.{kind}.log",
                             os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
            os.dup2(handle, fd)
            os.close(handle)
    print(f"harness: slurm job {os.environ.get('SLURM_JOB_ID')} task {rank} on {os.environ.get('SLURMD_NODENAME')}: "
          f"{' '.join(command)}", file=sys.stderr, flush=True)
    if stopping:
        print("harness: stopped on SIGTERM before the engine started: a clean stop", file=sys.stderr, flush=True)
        raise SystemExit(0)
    try:
        engine = subprocess.Popen(command)  # a child, not exec: this task says how the engine ended
    except OSError as exc:
        raise SystemExit(f"{CANNOT} start the engine {command[0]!r} on node {os.environ.get('SLURMD_NODENAME')}: "
                         f"{exc.strerror or exc}") from None
    code = engine.wait()
    # Slurm signals the step's processes one by one: the engine may be gone on its SIGTERM before
    # this task's own arrives. A TERM comes to both, so wait for ours a moment.
    deadline = time.monotonic() + STOP_SIGNAL_WAIT_S
    while code == -signal.SIGTERM and not stopping and time.monotonic() < deadline:
        time.sleep(0.05)
    if stopping and code in (0, -signal.SIGTERM):
        print(f"harness: the engine stopped on SIGTERM (exit {code}): a clean stop", file=sys.stderr, flush=True)
        raise SystemExit(0)
    raise SystemExit(code if code >= 0 else 128 - code)  # a signal as a shell reports it (128 + its number)


def _identify(host: str, port: int) -> None:
    import psutil

    from harness.util.processes import listeners

    found = []
    for item in listeners(host, port):
        entry = {"pid": item.pid, "job": None, "program": []}
        if item.pid is not None:
            try:
                process = psutil.Process(item.pid)
                entry["job"], entry["program"] = process.environ().get("SLURM_JOB_ID"), process.cmdline()
            except psutil.Error:
                pass
        found.append(entry)
    print(json.dumps(found))


def interface_address(interface: str) -> str:
    """The address of network `interface` on this node (its first IPv4 one, else IPv6, without
    a zone); SystemExit with one `harness: cannot ...` line naming the interfaces there when it
    has none."""
    import psutil

    found = psutil.net_if_addrs()
    for family in (socket.AF_INET, socket.AF_INET6):
        for item in found.get(interface, []):
            if item.family == family:
                return item.address.split("%", 1)[0]
    node = os.environ.get("SLURMD_NODENAME") or socket.gethostname()
    raise SystemExit(f"{CANNOT} resolve {{head_addr}} on node {node}: it has no address on network interface "
                     f"{interface!r} (launcher.head_interface; its interfaces: {', '.join(sorted(found)) or 'none'})")


def main(argv: list[str]) -> None:
    """`run SPEC SHA256`, `identify HOST PORT` or `address INTERFACE` (see the module docstring)."""
    if argv[:1] == ["run"] and len(argv) == 3:
        _run(argv[1], argv[2])
    elif argv[:1] == ["identify"] and len(argv) == 3:
        _identify(argv[1], int(argv[2]))
    elif argv[:1] == ["address"] and len(argv) == 2:
        print(interface_address(argv[1]))
    else:
        raise SystemExit("usage: python -m harness.evidence.slurm_task run SPEC SHA256 | identify HOST PORT | "
                         "address INTERFACE")


if __name__ == "__main__":
    main(sys.argv[1:])
