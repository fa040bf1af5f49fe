"""A server left running by a SIGKILLed harness is stopped on resume, even when its launch
command exec'd into another program; a pid that now belongs to another process is never hit."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from workflow_support import REPO_ROOT

from harness.evidence.runbook import load_runbook
from harness.evidence.server import ServedModel, stop_orphaned_servers
from harness.util.processes import start_time as process_start_time


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _wait_gone(pid: int, limit_s: float = 10) -> bool:
    # Bounded poll: SIGKILL is delivered asynchronously.
    deadline = time.monotonic() + limit_s
    while _alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _exec_wrapper_runbook(root: Path) -> Path:
    """Like local_model's `serve`: the launch command is a script that execs the engine."""
    wrapper = root / "serve.sh"
    wrapper.write_text(
        "#!/bin/sh\n"
        f'exec "{sys.executable}" -m harness.testing.loopback --host "$1" --port "$2" --model "$3"\n'
    )
    wrapper.chmod(0o755)
    runbook = root / "exec.yaml"
    runbook.write_text(yaml.safe_dump({
        "name": "exec-wrapper",
        "environment": {"device": "loopback", "sglang_version": "fixture"},
        "server": {
            "command": f"{wrapper} {{host}} {{port}} {{model}}",
            "model": "loopback-model",
            "startup_timeout_s": 20,
            "shutdown_grace_s": 2,
            "env": {"PYTHONPATH": str(REPO_ROOT)},
        },
        "smoke": {"prompts": ["hi"], "max_tokens": 4},
    }, sort_keys=False))
    return runbook


@pytest.mark.skipif(not Path("/proc/self/stat").is_file(), reason="needs /proc")
def test_orphan_whose_command_execd_is_stopped_on_resume(tmp_path):
    staging = tmp_path / "02-interface.attempt-1"
    served = ServedModel.from_runbook(load_runbook(str(_exec_wrapper_runbook(tmp_path))), staging / "server")
    server = served._launch()  # started, never torn down: what a SIGKILLed harness leaves behind
    try:
        served._wait_healthy(server)  # healthy means the wrapper has exec'd into the engine
        record = json.loads(server.record_path.read_text())
        assert record["pid"] == record["pgid"] == server.pid
        assert record["proc_start_time"] == process_start_time(server.pid)
        cmdline = Path(f"/proc/{server.pid}/cmdline").read_bytes().split(b"\0")
        assert [c.decode() for c in cmdline if c] != record["command"], "the command exec'd"

        stop_orphaned_servers(staging)
        server.process.wait(timeout=10)
        assert not _alive(server.pid), "the orphaned engine survived resume"
    finally:
        served.stop()


@pytest.mark.skipif(not Path("/proc/self/stat").is_file(), reason="needs /proc")
def test_recycled_pid_is_never_killed(tmp_path):
    # A live process group leader whose start time differs from the recorded one: the pid was
    # reused by an unrelated process, which must survive.
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    try:
        staging = tmp_path / "02-interface.attempt-1"
        (staging / "server").mkdir(parents=True)
        start = process_start_time(bystander.pid)
        (staging / "server/server.json").write_text(json.dumps({
            "command": [sys.executable, "-c", "import time; time.sleep(60)"],  # even the same command
            "pid": bystander.pid, "pgid": bystander.pid, "proc_start_time": start - 1,
        }))
        stop_orphaned_servers(staging)
        time.sleep(0.2)
        assert bystander.poll() is None and _alive(bystander.pid)

        # with the right start time it is the recorded server, and its group is stopped
        (staging / "server/server.json").write_text(json.dumps({
            "command": ["whatever"], "pid": bystander.pid, "pgid": bystander.pid, "proc_start_time": start,
        }))
        stop_orphaned_servers(staging)
        bystander.wait(timeout=10)
        assert _wait_gone(bystander.pid)
    finally:
        if bystander.poll() is None:
            os.killpg(bystander.pid, 9)
            bystander.wait()
