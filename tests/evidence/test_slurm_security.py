"""Slurm job records against another account on the cluster, who can read every job's comment
(squeue, scontrol) and write the shared workspace or evidence folder (issue 36):

- a job record planted in the workspace, its marker copied from a job's public comment, or its
  job id an option (`--user=me`, `-1`), makes `harness status` cancel nothing and pass no such id
  to a Slurm tool; only a record holding the job's secret (readable by its user alone) does;
- a runbook's sbatch_options cannot replace harness's --comment;
- a task spec changed between sbatch and the job's start is refused, in one line, not run;
- a `%` in the evidence path is not expanded by Slurm, and a backslash is one `not run` line.

The sweep runs against fake Slurm tools on PATH (they log their arguments and answer from files),
so it always runs; the job-start attacks need the real single-node cluster of test_slurm.py."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml

from harness.errors import HarnessError
from harness.evidence.runbook import Runbook, load_runbook
from harness.evidence.server import ServedModel, ServerRecord, ServerStartError, failure_check
from harness.record.checks import CheckStatus
from harness.record.processes import ProcessRegistry, job_comment
from harness.util import slurm

REPO_ROOT = Path(__file__).resolve().parents[2]


def _runbook(tmp_path: Path, launcher: object, command: str, **server: object) -> Runbook:
    data = {
        "name": "slurm-security",
        "environment": {"device": "loopback", "engine_version": "fixture"},
        "server": {"command": command, "model": "loopback-model", "startup_timeout_s": 30, "shutdown_grace_s": 2,
                   "env": {"PYTHONPATH": str(REPO_ROOT)}, **server},
        "smoke": {"prompts": ["The capital of France is"], "max_tokens": 4},
        "launcher": launcher,
    }
    path = tmp_path / "runbook.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return load_runbook(path)


LOOPBACK = "python -m harness.testing.loopback --host {host} --port {port} --model {model}"


# --------------------------------------------------------------------------- fake Slurm tools


FAKE_SCONTROL = """#!/bin/sh
printf 'scontrol %s\\n' "$*" >> "$FAKE_SLURM/calls"
if [ "$1 $2 $3" = "show job -o" ] && [ -f "$FAKE_SLURM/job.$4" ]; then cat "$FAKE_SLURM/job.$4"; exit 0; fi
echo "slurm_load_jobs error: Invalid job id specified" >&2
exit 1
"""
FAKE_OTHER = """#!/bin/sh
printf '%s %s\\n' "$(basename "$0")" "$*" >> "$FAKE_SLURM/calls"
"""


@pytest.fixture
def fake_slurm(tmp_path, monkeypatch):
    """A folder of fake sbatch/srun/squeue/scontrol/scancel first on PATH; `job(id, comment)`
    makes scontrol report a running job; `calls()` is every call made, one line each."""
    root = tmp_path / "fake-slurm"
    bin_dir = root / "bin"
    bin_dir.mkdir(parents=True)
    for tool in slurm.TOOLS:
        (bin_dir / tool).write_text(FAKE_SCONTROL if tool == "scontrol" else FAKE_OTHER)
        (bin_dir / tool).chmod(0o755)
    (root / "calls").touch()
    monkeypatch.setenv("FAKE_SLURM", str(root))
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")

    class Fake:
        @staticmethod
        def job(job_id: str, comment: str) -> None:
            (root / f"job.{job_id}").write_text(
                f"JobId={job_id} JobName=train UserId=me(1000) JobState=RUNNING Reason=None ExitCode=0:0 "
                f"NodeList=gpu01 TimeLimit=UNLIMITED Comment={comment}\n")

        @staticmethod
        def calls() -> list[str]:
            return (root / "calls").read_text().splitlines()

    return Fake


def _dead_pid() -> int:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    return dead.pid


def _workspace_with_run(tmp_path: Path) -> tuple[Path, Path]:
    """A workspace with one run (`r1`); its processes folder."""
    workspace = tmp_path / "ws"
    processes = workspace / ".harness" / "runs" / "r1" / "processes"
    processes.mkdir(parents=True)
    (processes.parent / "run.json").write_text("{}")
    return workspace, processes


def _plant(processes: Path, name: str, **fields: object) -> None:
    """A job record as another account would write one: a harness process that is gone."""
    record = {"role": "engine", "step": "02-interface", "command": ["engine"], "pid": 0, "start_time": None,
              "owner_pid": _dead_pid(), "owner_start_time": None, "started_at": "2026-01-01T00:00:00Z", **fields}
    (processes / name).write_text(json.dumps(record))


def _status(workspace: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness", "status", "--workspace", str(workspace)],
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
                          timeout=120, check=False)


def test_a_record_copying_a_jobs_public_comment_cancels_nothing(fake_slurm, tmp_path):
    workspace, processes = _workspace_with_run(tmp_path)
    # A live job of the user, whose comment everyone can read, named by records planted in the
    # shared workspace that copy that comment every way they can (an orphan's dead harness).
    comment = job_comment("t" * 64)
    fake_slurm.job("4242", comment)
    digest = comment.removeprefix("harness:")
    for n, copied in enumerate(({"marker": digest}, {"marker": comment}, {"marker": digest, "secret": digest},
                                {"marker": digest, "secret": comment})):
        _plant(processes, f"job-4242-{n}.json", job="4242", **copied)

    done = _status(workspace)

    assert not [call for call in fake_slurm.calls() if call.startswith("scancel")], (fake_slurm.calls(), done.stderr)
    assert "slurm job 4242" not in done.stderr, done.stderr


def test_a_job_of_a_killed_harness_is_cancelled_on_its_secret(fake_slurm, tmp_path):
    workspace, processes = _workspace_with_run(tmp_path)
    orphan = ProcessRegistry(processes, step="02-interface").add_job("4243", "engine", ["engine"], "s" * 64)
    (processes / "job-4243.json").write_text(orphan.model_copy(update={"owner_pid": _dead_pid()}).model_dump_json())
    fake_slurm.job("4243", job_comment("s" * 64))

    done = _status(workspace)

    assert [call for call in fake_slurm.calls() if call.startswith("scancel")] == ["scancel 4243"], done.stderr
    assert "stopped an orphan of run r1 (its harness process" in done.stderr and "slurm job 4243" in done.stderr


def test_a_jobs_secret_is_in_no_comment_and_its_record_is_the_users_alone(tmp_path):
    record = ProcessRegistry(tmp_path).add_job("17", "engine", ["engine"], "a" * 64)
    assert "a" * 64 not in job_comment(record.secret) and job_comment("a" * 64) != job_comment("b" * 64)
    assert stat.S_IMODE((tmp_path / "job-17.json").stat().st_mode) == 0o600


@pytest.mark.parametrize("job_id", ["--user=me", "-1", "4242 --signal=KILL", "4242_1", "٤٢"])
def test_a_record_whose_job_id_is_no_job_id_reaches_no_slurm_tool(fake_slurm, tmp_path, job_id):
    workspace, processes = _workspace_with_run(tmp_path)
    _plant(processes, "job-planted.json", job=job_id, marker="m", secret="s")
    fake_slurm.job(job_id.split()[0], "harness:m")

    done = _status(workspace)

    assert not [call for call in fake_slurm.calls() if call.startswith(("scancel", "scontrol"))], fake_slurm.calls()
    assert "slurm job id" not in done.stderr, "a planted record is skipped, never an error of the command"
    with pytest.raises(HarnessError, match="is not a slurm job id"):
        slurm.cancel(job_id)


@pytest.mark.parametrize("option", ["--comment=mine", "--comm=mine", "--comment"])
def test_sbatch_options_cannot_set_the_comment(tmp_path, option):
    with pytest.raises(HarnessError) as caught:
        _runbook(tmp_path, {"kind": "slurm", "sbatch_options": ["--exclusive", option]}, LOOPBACK)
    line = str(caught.value)
    assert "\n" not in line and ": launcher.sbatch_options" in line and "--comment is harness's own" in line, line


def test_an_evidence_path_with_a_backslash_is_one_not_run_line(tmp_path):
    runbook = _runbook(tmp_path, "slurm", LOOPBACK)
    with pytest.raises(ServerStartError) as caught, ServedModel.from_runbook(runbook, tmp_path / "a\\b" / "server"):
        pass
    line = str(caught.value)
    assert "\n" not in line and "slurm cannot write a log file whose path has a backslash" in line, line
    assert failure_check(tmp_path / "a\\b" / "server" / "server.json").status is CheckStatus.not_run


def test_the_job_runs_no_task_spec_but_the_one_submitted(tmp_path):
    # What the batch script runs on each node, with a spec changed after submit.
    spec = tmp_path / "server.task.json"
    spec.write_text(json.dumps({"command": ["true"], "logs": str(tmp_path), "name": "server"}) + "\n")
    submitted = hashlib.sha256(spec.read_bytes()).hexdigest()
    planted = tmp_path / "planted"
    spec.write_text(json.dumps({"command": ["touch", str(planted)], "logs": str(tmp_path), "name": "server"}) + "\n")
    done = subprocess.run([sys.executable, "-m", "harness.evidence.slurm_task", "run", str(spec), submitted],
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO_ROOT)}, timeout=60,
                          check=False)
    assert done.returncode == 2 and not planted.exists()
    assert done.stderr.startswith(f"harness: refused to run {spec}: it changed after the job was submitted"), done.stderr
    assert done.stderr.count("\n") == 1, done.stderr


# --------------------------------------------------------------------------- a real cluster


def test_a_task_spec_changed_while_the_job_pends_is_refused_in_one_line(cluster, tmp_path):
    planted = tmp_path / "planted"
    runbook = _runbook(tmp_path, {"kind": "slurm", "sbatch_options": ["--begin=now+4"], "pending_timeout_s": 60},
                       LOOPBACK, startup_timeout_s=10)
    spec = tmp_path / "server" / "server.task.json"

    def tamper() -> None:  # another account, once the job is queued
        deadline = time.monotonic() + 30
        while not spec.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        data = json.loads(spec.read_text())
        spec.write_text(json.dumps({**data, "command": ["sh", "-c", f"touch {planted}; exec sleep 600"]}) + "\n")

    tamperer = threading.Thread(target=tamper)
    tamperer.start()
    with pytest.raises(ServerStartError) as caught, ServedModel.from_runbook(runbook, tmp_path / "server"):
        pass
    tamperer.join()
    job_id = ServerRecord.read(tmp_path / "server" / "server.json").job_id
    line = str(caught.value)
    assert "\n" not in line and line.startswith(f"slurm job {job_id} ended FAILED"), line
    assert f"harness: refused to run {spec}: it changed after the job was submitted" in line, line
    check = failure_check(tmp_path / "server" / "server.json")
    assert check.status is CheckStatus.not_run and "harness: refused to run" in check.reason, check
    assert not planted.exists(), "the planted command never ran"


def test_a_percent_in_the_evidence_path_is_not_expanded_by_slurm(cluster, tmp_path):
    evidence = tmp_path / "ev 100%x %j" / "server"
    runbook = _runbook(tmp_path, "slurm", f"sh -c 'echo engine starting; exec {LOOPBACK}'")
    with ServedModel.from_runbook(runbook, evidence):
        pass
    assert "engine starting" in (evidence / "server.stdout.log").read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ev 100%x %j", "runbook.yaml"]
