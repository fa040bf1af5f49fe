"""A job of a killed harness is never forgotten while the Slurm controller cannot be asked
(issue "a job forgotten for good"): `harness status` run while the controller is down, timing
out, or named wrongly by SLURM_CONF keeps the job's record and says so in one line; the next
command that reaches the controller cancels the job and forgets the record. Only the controller's
"Invalid job id specified" (or a job that is over, or not ours) lets a record go.

Fake Slurm tools on PATH (their answers chosen per test) cover each answer; the real single-node
cluster (tests/support/slurm_cluster.py) covers a stopped slurmctld and a SLURM_CONF naming a
dead port, with a job left running by a SIGKILLed harness."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import yaml

from harness.evidence.launchers import SlurmLaunch
from harness.evidence.runbook import SlurmLauncher
from harness.record.processes import ProcessRegistry, job_comment
from harness.util import slurm

REPO_ROOT = Path(__file__).resolve().parents[2]
UNREACHABLE = "slurm_load_jobs error: Unable to contact slurm controller (connect failure)"

# scontrol answers from $FAKE_SLURM: `down` holds the error it fails with (the controller cannot
# be asked), else `job.N` is job N's line, else the job is unknown. scancel fails the same way
# while `down` exists; every call is logged to `calls`.
FAKE_SCONTROL = """#!/bin/sh
printf 'scontrol %s\\n' "$*" >> "$FAKE_SLURM/calls"
if [ -f "$FAKE_SLURM/down" ]; then cat "$FAKE_SLURM/down" >&2; exit 1; fi
if [ "$1 $2 $3" = "show job -o" ] && [ -f "$FAKE_SLURM/job.$4" ]; then cat "$FAKE_SLURM/job.$4"; exit 0; fi
echo "slurm_load_jobs error: Invalid job id specified" >&2
exit 1
"""
FAKE_SCANCEL = """#!/bin/sh
printf 'scancel %s\\n' "$*" >> "$FAKE_SLURM/calls"
if [ -f "$FAKE_SLURM/down" ]; then echo "scancel: error: Kill job error on job id $1: $(cat "$FAKE_SLURM/down")" >&2; exit 1; fi
rm -f "$FAKE_SLURM/job.$1"
"""
FAKE_SBATCH = """#!/bin/sh
printf 'sbatch %s\\n' "$*" >> "$FAKE_SLURM/calls"
echo 4270
"""
FAKE_OTHER = """#!/bin/sh
printf '%s %s\\n' "$(basename "$0")" "$*" >> "$FAKE_SLURM/calls"
"""


@pytest.fixture
def fake_slurm(tmp_path, monkeypatch):
    """Fake Slurm tools first on PATH: `job(id, comment)` makes a running job, `down(error)`
    makes the controller unreachable (`up()` reachable again), `calls()` every call made."""
    root = tmp_path / "fake-slurm"
    bin_dir = root / "bin"
    bin_dir.mkdir(parents=True)
    scripts = {"scontrol": FAKE_SCONTROL, "scancel": FAKE_SCANCEL, "sbatch": FAKE_SBATCH}
    for tool in slurm.TOOLS:
        (bin_dir / tool).write_text(scripts.get(tool, FAKE_OTHER))
        (bin_dir / tool).chmod(0o755)
    (root / "calls").touch()
    monkeypatch.setenv("FAKE_SLURM", str(root))
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(slurm, "_unreachable", None)  # this process's memo of a failed ask

    class Fake:
        @staticmethod
        def job(job_id: str, comment: str) -> None:
            (root / f"job.{job_id}").write_text(
                f"JobId={job_id} JobName=engine UserId=me(1000) JobState=RUNNING Reason=None ExitCode=0:0 "
                f"NodeList=gpu01 TimeLimit=UNLIMITED Comment={comment}\n")

        @staticmethod
        def down(error: str = UNREACHABLE) -> None:
            (root / "down").write_text(error + "\n")

        @staticmethod
        def up() -> None:
            (root / "down").unlink()

        @staticmethod
        def calls(tool: str) -> list[str]:
            return [call for call in (root / "calls").read_text().splitlines() if call.startswith(tool)]

    return Fake


def _dead_pid() -> int:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    return dead.pid


def _orphan(tmp_path: Path, job_id: str, secret: str) -> tuple[Path, Path]:
    """A workspace whose run `r1` records job `job_id` of a harness that is gone; (workspace,
    the job's record)."""
    workspace = tmp_path / "ws"
    processes = workspace / ".harness" / "runs" / "r1" / "processes"
    processes.mkdir(parents=True)
    (processes.parent / "run.json").write_text("{}")
    record = ProcessRegistry(processes, step="02-interface").add_job(job_id, "engine", ["engine"], secret)
    path = processes / f"job-{job_id}.json"
    path.write_text(record.model_copy(update={"owner_pid": _dead_pid()}).model_dump_json())
    return workspace, path


def _status(workspace: Path, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness", "status", "--workspace", str(workspace)],
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO_ROOT), **env},
                          timeout=180, check=False)


def _left_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "left recorded" in line]


# --------------------------------------------------------------------------- fake Slurm tools


@pytest.mark.parametrize("error", [UNREACHABLE, "slurm_load_jobs error: Socket timed out on send/recv operation",
                                   "scontrol: fatal: Unable to process configuration file"])
def test_an_unreachable_controller_keeps_the_record_and_the_next_command_cancels(fake_slurm, tmp_path, error):
    workspace, record = _orphan(tmp_path, "4250", "s" * 64)
    fake_slurm.job("4250", job_comment("s" * 64))
    fake_slurm.down(error)

    down = _status(workspace)

    [line] = _left_lines(down.stderr)
    assert line.startswith("harness: slurm controller unreachable (") and error in line, line
    assert line.endswith("job 4250 of run r1 left recorded; the next command that reaches it cancels it"), line
    assert "Traceback" not in down.stderr and record.is_file() and fake_slurm.calls("scancel") == []

    fake_slurm.up()
    back = _status(workspace)

    assert fake_slurm.calls("scancel") == ["scancel 4250"], back.stderr
    assert "stopped an orphan of run r1" in back.stderr and "slurm job 4250" in back.stderr, back.stderr
    assert not _left_lines(back.stderr) and not record.exists()


def test_a_job_the_controller_no_longer_knows_is_forgotten_without_a_cancel(fake_slurm, tmp_path):
    workspace, record = _orphan(tmp_path, "4251", "s" * 64)  # no job.4251: "Invalid job id specified"

    done = _status(workspace)

    assert not record.exists() and fake_slurm.calls("scancel") == [] and not _left_lines(done.stderr), done.stderr


def test_a_cancel_the_controller_did_not_take_keeps_the_record(fake_slurm, tmp_path, monkeypatch):
    _, record = _orphan(tmp_path, "4252", "s" * 64)
    fake_slurm.job("4252", job_comment("s" * 64))
    # scontrol answers, then the controller goes away before scancel reaches it
    real_cancel = slurm.cancel

    def cancel_after_a_crash(job_id: str) -> None:
        fake_slurm.down()
        real_cancel(job_id)

    monkeypatch.setattr(slurm, "cancel", cancel_after_a_crash)
    left: list = []

    assert ProcessRegistry(record.parent).sweep(left) == []
    assert record.is_file() and [(r.job, why) for r, why in left] == [
        ("4252", (f"slurm controller unreachable (scancel failed: scancel: error: Kill job error on job id 4252: "
                  f"{UNREACHABLE})"))]


def test_a_controller_that_does_not_answer_in_time_is_unreachable_and_asked_once(fake_slurm, tmp_path, monkeypatch):
    hang = tmp_path / "fake-slurm" / "bin" / "scontrol"
    hang.write_text('#!/bin/sh\nprintf "scontrol %s\\n" "$*" >> "$FAKE_SLURM/calls"\nexec sleep 30\n')
    monkeypatch.setattr(slurm, "CALL_TIMEOUT_S", 1)

    with pytest.raises(slurm.SlurmUnreachable, match=r"^slurm controller unreachable \(`scontrol show job` did not "
                                                      r"answer in 1 s\)$"):
        slurm.job_state("4253")
    with pytest.raises(slurm.SlurmUnreachable):
        slurm.job_state("4254")  # the same command does not wait again for each job
    assert fake_slurm.calls("scontrol") == ["scontrol show job -o 4253"]


def test_status_lists_a_job_it_cannot_ask_about(fake_slurm, tmp_path):
    workspace, _ = _orphan(tmp_path, "4255", "s" * 64)
    fake_slurm.down()
    registry = ProcessRegistry(workspace / ".harness" / "runs" / "r1" / "processes")

    assert [record.job for record in registry.alive()] == ["4255"], "it may still run"


def test_a_stop_while_the_controller_is_down_leaves_the_record_in_one_line(fake_slurm, tmp_path, capsys):
    registry = ProcessRegistry(tmp_path / "runs" / "r2" / "processes", step="02-interface")
    registry.directory.mkdir(parents=True)
    (tmp_path / "evidence").mkdir()
    launch = SlurmLaunch(SlurmLauncher(kind="slurm"), ["engine"], env=dict(os.environ), evidence_dir=tmp_path / "evidence",
                         name="server", registry=registry)
    fake_slurm.down()

    assert launch.poll() is None, "not known to be over"
    assert launch.stop(1.0) == (None, False)

    assert [record.job for _, record in registry.records()] == ["4270"]
    assert capsys.readouterr().err.splitlines() == [
        (f"harness: slurm controller unreachable (scontrol failed: {UNREACHABLE}): job 4270 of run r2 left "
         f"recorded; the next command that reaches it cancels it")]


# --------------------------------------------------------------------------- the real cluster


def test_a_killed_harness_job_survives_an_unreachable_controller_until_one_answers(cluster, tmp_path):
    workspace = tmp_path / "ws"
    registry_dir = workspace / ".harness" / "runs" / "k9" / "processes"
    runbook = tmp_path / "runbook.yaml"
    runbook.write_text(yaml.safe_dump({
        "name": "slurm-forgotten", "environment": {"device": "loopback", "engine_version": "fixture"},
        "server": {"command": "python -m harness.testing.loopback --host {host} --port {port} --model {model}",
                   "model": "loopback-model", "startup_timeout_s": 30, "shutdown_grace_s": 2,
                   "env": {"PYTHONPATH": str(REPO_ROOT)}},
        "smoke": {"prompts": ["The capital of France is"], "max_tokens": 4}, "launcher": "slurm"}))
    program = textwrap.dedent("""
        import sys, time
        from pathlib import Path
        from harness.evidence.runbook import load_runbook
        from harness.evidence.server import ServedModel
        from harness.record.processes import ProcessRegistry
        registry = ProcessRegistry(Path(sys.argv[2]), step="02-interface")
        with ServedModel.from_runbook(load_runbook(sys.argv[1]), Path(sys.argv[3]), registry=registry):
            print("healthy", flush=True)
            time.sleep(300)
    """)
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    harness = subprocess.Popen([sys.executable, "-c", program, str(runbook), str(registry_dir), str(tmp_path / "server")],
                               stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert harness.stdout.readline().strip() == "healthy"
        [(record_path, record)] = ProcessRegistry(registry_dir).records()
        harness.send_signal(signal.SIGKILL)
        harness.wait()
        (registry_dir.parent / "run.json").write_text("{}")

        # a SLURM_CONF naming a port no controller listens on, then the controller itself down
        wrong = tmp_path / "wrong-slurm.conf"
        wrong.write_text(re.sub(r"(?m)^SlurmctldPort=\d+$", "SlurmctldPort=9", cluster.conf.read_text()))
        wrong_conf = _status(workspace, SLURM_CONF=str(wrong))
        cluster.stop_controller()
        try:
            down = _status(workspace)
        finally:
            cluster.start_controller()
        for done in (wrong_conf, down):
            [line] = _left_lines(done.stderr)
            assert line.startswith("harness: slurm controller unreachable (") and "Traceback" not in done.stderr
            assert line.endswith(f"job {record.job} of run k9 left recorded; the next command that reaches it "
                                 f"cancels it"), line
        assert record_path.is_file()
        assert slurm.job_state(record.job).state == "RUNNING", "the job ran on while no one could ask"

        back = _status(workspace)

        assert f"stopped an orphan of run k9 (its harness process {harness.pid} is gone): engine slurm job " \
               f"{record.job}" in back.stderr, back.stderr
        deadline = time.monotonic() + 30
        while slurm.job_state(record.job).active and time.monotonic() < deadline:
            time.sleep(0.5)
        assert slurm.job_state(record.job).state == "CANCELLED" and not record_path.exists()
    finally:
        harness.kill()
        harness.wait()
