"""A throwaway single-node Slurm cluster for the tests: a private `munged` (its own key and
socket), `slurmctld` and `slurmd` on free loopback ports, a generated `slurm.conf` describing this
machine as `slurmd -C` sees it (hostname, CPUs, memory), state and logs in a temporary folder.
`SLURM_CONF` points the client tools (sbatch, squeue, ...) at it while it runs; everything is
stopped and removed at the end. Without the Debian packages (slurm-wlm, munge) or root (slurmd
runs jobs as their users) the tests that need it are skipped with the reason.

No accounting: `accounting_storage/none` (slurmdbd would need a database), so job states come
from `scontrol show job`, as harness reads them (harness.util.slurm). Two GPUs stand in as a
countable gres (`gpu:2`, links to /dev/null and /dev/zero as their devices: Slurm binds tasks to
them by index, CUDA_VISIBLE_DEVICES, and nothing opens them); a second partition, `down`
(State=DOWN), takes jobs that never leave its queue. `cred_expire=10` (AuthInfo) and a
scheduling pass every 2 s (`sched_interval`, `bf_interval`): a requeued job starts again after
about 11 s, not Slurm's 121 s (its requeue delay is cred_expire + 1) plus up to a minute."""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

DAEMONS = ("munged", "slurmctld", "slurmd")
CLIENTS = ("sbatch", "srun", "squeue", "scontrol", "scancel", "sinfo")
READY_TIMEOUT_S = 60
GPU_DEVICES = ("/dev/null", "/dev/zero")  # what the fake GPUs of the node (gres gpu) are
GPUS = len(GPU_DEVICES)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _binary(name: str) -> str | None:
    return shutil.which(name) or next((str(p) for p in (Path("/usr/sbin") / name,) if p.is_file()), None)


def why_not() -> str | None:
    """Why no cluster can be started here, or None."""
    missing = [name for name in (*DAEMONS, *CLIENTS) if _binary(name) is None]
    if missing:
        return f"Slurm is not installed ({', '.join(missing)} missing): apt-get install slurm-wlm munge"
    if os.geteuid() != 0:
        return "slurmd must run as root to start jobs (run the tests as root, as CI does)"
    return None


class SlurmCluster:
    """One running cluster; `env` is the environment its clients need."""

    def __init__(self) -> None:
        reason = why_not()
        if reason:
            pytest.skip(f"not run: {reason}")
        self.root = Path(tempfile.mkdtemp(prefix="harness-slurm-"))
        self.root.chmod(0o755)
        self.processes: list[subprocess.Popen] = []
        try:
            self._start()
        except BaseException:
            self.stop()
            raise

    def _start(self) -> None:
        munge = self.root / "munge"
        munge.mkdir(mode=0o700)
        key = munge / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        socket_path = munge / "munge.socket"
        self._daemon(["munged", "--foreground", "--force", f"--socket={socket_path}", f"--key-file={key}",
                      f"--log-file={munge / 'munged.log'}", f"--pid-file={munge / 'munged.pid'}",
                      f"--seed-file={munge / 'munged.seed'}"], "munged")
        self._wait(lambda: socket_path.exists(), "munged's socket", munge / "munged.log")
        node = dict(re.findall(r"(\w+)=(\S+)", subprocess.run([_binary("slurmd"), "-C"], capture_output=True,
                                                               text=True, check=True).stdout))
        self.node = node["NodeName"]
        for sub in ("state", "spool", "log", "dev"):
            (self.root / sub).mkdir()
        for index, device in enumerate(GPU_DEVICES):  # slurmd requires character devices; nothing opens them
            (self.root / "dev" / f"gpu{index}").symlink_to(device)
        gres = f"NodeName={self.node} Name=gpu File={self.root / 'dev'}/gpu[0-{GPUS - 1}]\n"
        (self.root / "gres.conf").write_text(gres)
        self.conf = self.root / "slurm.conf"
        self.conf.write_text(f"""\
ClusterName=harness-test
SlurmctldHost={self.node}(127.0.0.1)
SlurmctldPort={_free_port()}
SlurmdPort={_free_port()}
SlurmUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={socket_path},cred_expire=10
StateSaveLocation={self.root / 'state'}
SlurmdSpoolDir={self.root / 'spool'}
SlurmctldPidFile={self.root / 'slurmctld.pid'}
SlurmdPidFile={self.root / 'slurmd.pid'}
SlurmctldLogFile={self.root / 'log/slurmctld.log'}
SlurmdLogFile={self.root / 'log/slurmd.log'}
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerParameters=bf_interval=1,sched_interval=2
ReturnToService=2
KillWait=2
MinJobAge=600
InactiveLimit=0
GresTypes=gpu
NodeName={self.node} NodeAddr=127.0.0.1 CPUs={node.get('CPUs', '1')} RealMemory={node.get('RealMemory', '1000')} Gres=gpu:{GPUS} State=UNKNOWN
PartitionName=test Nodes={self.node} Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
PartitionName=down Nodes={self.node} MaxTime=INFINITE State=DOWN
""")
        self.env = {**os.environ, "SLURM_CONF": str(self.conf)}
        self._daemon(["slurmctld", "-D", "-i"], "slurmctld")
        self._daemon(["slurmd", "-D"], "slurmd")
        self._wait(self._node_idle, f"node {self.node} idle in sinfo", self.root / "log/slurmctld.log")

    def _daemon(self, command: list[str], name: str) -> None:
        log = (self.root / f"{name}.out").open("wb")
        self.processes.append(subprocess.Popen([_binary(command[0]), *command[1:]], stdout=log, stderr=log,
                                               env={**os.environ, "SLURM_CONF": str(self.root / "slurm.conf")},
                                               start_new_session=True))
        log.close()

    def _node_idle(self) -> bool:
        done = subprocess.run(["sinfo", "-h", "-N", "--partition=test", "-o", "%t"], capture_output=True, text=True,
                              env=self.env, timeout=10, check=False)
        return done.stdout.split() == ["idle"]

    def _wait(self, ready, what: str, log: Path) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while not ready():
            dead = [p.args[0] for p in self.processes if p.poll() is not None]
            if dead or time.monotonic() > deadline:
                outs = "\n".join(p.read_text(errors="replace")[-1500:] for p in (log, *self.root.glob("*.out"))
                                 if p.is_file())
                pytest.fail(f"the test Slurm cluster did not come up: no {what} after {READY_TIMEOUT_S} s"
                            f"{' (' + ', '.join(dead) + ' exited)' if dead else ''}\n{outs}")
            time.sleep(0.3)

    def stop_controller(self) -> None:
        """Stop slurmctld as a restart or crash would (its jobs run on under slurmd; its state
        stays in StateSaveLocation): the clients then fail with `Unable to contact slurm
        controller`."""
        controller = self.processes[1]
        os.killpg(controller.pid, signal.SIGTERM)
        controller.wait(timeout=30)

    def start_controller(self) -> None:
        """Start slurmctld again from its saved state (no `-i`: it recovers its jobs); returns
        once it answers."""
        del self.processes[1]
        self._daemon(["slurmctld", "-D"], "slurmctld")
        self.processes.insert(1, self.processes.pop())  # stop() stops the daemons last first
        self._wait(lambda: subprocess.run(["scontrol", "ping"], env=self.env, capture_output=True, timeout=30,
                                          check=False).returncode == 0, "slurmctld answering scontrol ping",
                   self.root / "log/slurmctld.log")

    def stop(self) -> None:
        """Cancel every job, stop the daemons started here (last first), remove the folder."""
        if getattr(self, "env", None) and all(p.poll() is None for p in self.processes):
            for partition in ("test", "down"):
                subprocess.run(["scancel", "--full", f"--partition={partition}"], env=self.env, capture_output=True,
                               timeout=30, check=False)
        for process in reversed(self.processes):
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
                try:
                    process.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    os.killpg(process.pid, signal.SIGKILL)
                    process.wait()
        shutil.rmtree(self.root, ignore_errors=True)
