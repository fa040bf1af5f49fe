"""Slurm the way a cluster team runs it (issue 38), on the real single-node cluster
(tests/support/slurm_cluster.py: a DOWN partition, two fake GPUs as a countable gres): the job
is named on the console when it is submitted; a pending reason no wait clears ends the step at
once; a job is not requeueable unless the runbook says so, and a requeued job is never measured
as the engine started (or is waited for, before it was healthy, with `requeue: true`); each task
gets its own GPU; `{head_addr}` is the address of the runbook's `head_interface`; a node without
harness's interpreter is one line. The parts that need no cluster run first."""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest
import yaml

from harness.evidence.launchers import sbatch_options
from harness.evidence.runbook import Runbook, load_runbook
from harness.evidence.server import ServedModel, ServerRecord, ServerStartError, failure_check
from harness.record.checks import CheckStatus
from harness.util import slurm

REPO_ROOT = Path(__file__).resolve().parents[2]
LOOPBACK = "python -m harness.testing.loopback --host {host} --port {port} --model {model}"


def _runbook(tmp_path: Path, launcher: dict, command: str = LOOPBACK, **server: object) -> Runbook:
    path = tmp_path / "runbook.yaml"
    path.write_text(yaml.safe_dump({
        "name": "slurm-jobs",
        "environment": {"device": "loopback", "engine_version": "fixture"},
        "server": {"command": command, "model": "loopback-model", "startup_timeout_s": 30, "shutdown_grace_s": 5,
                   "env": {"PYTHONPATH": str(REPO_ROOT)}, **server},
        "smoke": {"prompts": ["The capital of France is"], "max_tokens": 4},
        "launcher": {"kind": "slurm", **launcher},
    }, sort_keys=False))
    return load_runbook(path)


def _fails(runbook: Runbook, evidence: Path) -> tuple[str, object, float]:
    """Start the runbook's engine, which must not start: (one line, the check, seconds taken)."""
    began = time.monotonic()
    with pytest.raises(ServerStartError) as caught, ServedModel.from_runbook(runbook, evidence):
        pass
    return str(caught.value), failure_check(evidence / "server.json"), time.monotonic() - began


# --------------------------------------------------------------------------- no cluster needed


def test_the_runbook_asks_for_gpu_binding_and_requeue_in_sbatch_s_words(tmp_path):
    plain = sbatch_options(_runbook(tmp_path, {}).launcher, "server", tmp_path, "harness:proof")
    assert "--no-requeue" in plain and "--requeue" not in plain
    bound = _runbook(tmp_path, {"gpus_per_task": 1, "gpu_bind": "single:1", "requeue": True}).launcher
    options = sbatch_options(bound, "server", tmp_path, "harness:proof")
    assert {"--gpus-per-task=1", "--gpu-bind=single:1", "--requeue", "--open-mode=append"} <= set(options)
    assert "--no-requeue" not in options


@pytest.mark.parametrize(("reason", "hopeless"), [
    ("PartitionDown", "the partition required by this job is in a DOWN state"),
    ("InvalidAccount", "the job's account is invalid"),
    ("JobHeldAdmin", "the job is held by a system administrator"),
    ("AssocMaxGRESPerJob", "violates a per-job limit"),
    ("QOSMaxWallDurationPerJobLimit", "violates a per-job limit"),
    ("ReqNodeNotAvail,_UnavailableNodes:gpu[01-02]", "DOWN, DRAINED or not responding (gpu[01-02])"),
    # waiting clears these: other jobs end, a reservation or dependency resolves
    ("Priority", None), ("Resources", None), ("Dependency", None), ("BeginTime", None),
    ("AssocGrpGRES", None), ("ReqNodeNotAvail,_Reserved_for_maintenance", None), ("None", None),
])
def test_a_pending_reason_is_hopeless_only_where_squeue_s_man_page_says_no_wait_clears_it(reason, hopeless):
    found = slurm.hopeless(reason)
    assert (found is None) if hopeless is None else (hopeless in found), found


@pytest.mark.parametrize("task_signalled", [True, False])
def test_an_engine_gone_on_sigterm_before_its_task_gets_its_own_is_a_clean_stop_only_if_it_comes(tmp_path,
                                                                                                task_signalled):
    # Slurm signals a step's processes one by one: here the engine (sh) ends on its TERM first and
    # a process it leaves behind signals the task a second later, as slurmstepd would.
    later = "p=$PPID; (sleep 1; kill -TERM $p) & " if task_signalled else ""
    spec = tmp_path / "server.task.json"
    spec.write_text(json.dumps({"command": ["sh", "-c", f"{later}kill -TERM $$"], "logs": str(tmp_path),
                                "name": "server"}))
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "SLURM_PROCID": "0", "SLURM_JOB_ID": "7",
           "HARNESS_HEAD_ADDR": "127.0.0.1"}
    done = subprocess.run([sys.executable, "-m", "harness.evidence.slurm_task", "run", str(spec),
                           hashlib.sha256(spec.read_bytes()).hexdigest()],
                          capture_output=True, text=True, env=env, timeout=60, check=False)
    if task_signalled:
        assert done.returncode == 0 and "the engine stopped on SIGTERM (exit -15): a clean stop" in done.stderr
    else:  # a TERM nobody sent the task is the engine's failure, as a shell reports it
        assert done.returncode == 143 and "clean stop" not in done.stderr, done.stderr


def test_the_docs_tp_x_pp_runbook_loads_and_gives_each_node_its_rank(tmp_path):
    from harness.evidence.launchers import dist_values
    from harness.evidence.server import build_command
    from harness.evidence.slurm_task import task_command

    docs = (REPO_ROOT / "docs/runbook.md").read_text()
    section = docs.split("### Multi-node engines: what must be shared", 1)[1]
    example = section.split("```yaml\n", 1)[1].split("```", 1)[0]
    (tmp_path / "tp-pp.yaml").write_text(example)
    runbook = load_runbook(tmp_path / "tp-pp.yaml")
    launcher = runbook.launcher
    assert (launcher.kind, launcher.nodes, launcher.ntasks_per_node, launcher.head_interface) == ("slurm", 2, 1, "ib0")
    options = sbatch_options(launcher, "server", tmp_path, "harness:proof")
    assert {"--nodes=2", "--ntasks-per-node=1", "--gres=gpu:8", "--partition=gpu", "--no-requeue",
            "--exclusive"} <= set(options)
    command = build_command(runbook.server, runbook.server.host, runbook.server.port,
                            dist_values(launcher, runbook.server.host, lambda host: 5000))
    ranks = [task_command(command, {"SLURM_NTASKS": "2", "SLURM_PROCID": rank}, "10.1.0.1") for rank in "01"]
    for rank, args in enumerate(ranks):
        text = " ".join(args)
        assert "--tp-size 8 --pp-size 2 --nnodes 2" in text and f"--node-rank {rank} " in text, text
        assert "--dist-init-addr 10.1.0.1:5000" in text and "--port 30000" in text


# --------------------------------------------------------------------------- a real cluster


def test_a_job_on_a_down_partition_fails_in_seconds_not_after_pending_timeout(cluster, tmp_path):
    runbook = _runbook(tmp_path, {"partition": "down", "pending_timeout_s": 600})
    line, check, took = _fails(runbook, tmp_path / "server")
    job_id = ServerRecord.read(tmp_path / "server" / "server.json").job_id
    assert line.startswith(f"slurm job {job_id} will not start however long it waits: pending for PartitionDown "
                           f"(the partition required by this job is in a DOWN state); log: "), line
    assert took < 30, f"{took:.0f} s: the pending timeout (600 s) is not waited out"
    assert check.status is CheckStatus.not_run and line.startswith(check.reason)
    assert slurm.job_state(job_id).state == "CANCELLED", "the hopeless job leaves the queue"


def test_a_job_is_named_when_submitted_and_slurm_may_not_requeue_it(cluster, tmp_path):
    lines: list[str] = []
    runbook = _runbook(tmp_path, {})
    with ServedModel.from_runbook(runbook, tmp_path / "server", progress=lines.append) as server:
        job_id = ServerRecord.read(server.record_path).job_id
        requeue = subprocess.run(["scontrol", "requeue", job_id], capture_output=True, text=True, check=False)
        assert requeue.returncode != 0 and "presently disabled" in requeue.stderr, requeue.stderr  # --no-requeue
    assert lines[0].startswith(f"slurm job {job_id} submitted (--job-name=harness-server "), lines
    assert lines[1] == f"slurm job {job_id} running on {cluster.node}", lines
    assert ServerRecord.read(server.record_path).slurm.state == "COMPLETED"


def test_a_requeued_job_is_never_measured_as_the_engine_started(cluster, tmp_path):
    runbook = _runbook(tmp_path, {"requeue": True})
    served = ServedModel.from_runbook(runbook, tmp_path / "server")
    with pytest.raises(ServerStartError) as caught, served as server:
        job_id = ServerRecord.read(server.record_path).job_id
        subprocess.run(["scontrol", "requeue", job_id], check=True, capture_output=True)
        served.confirm_alive()  # what the step does once its runners are done
    line = str(caught.value)
    assert line.startswith(f"server slurm job {job_id} was restarted by Slurm (") and "restart 1)" in line, line
    assert "a restarted one is not measured as the same" in line and "\n" not in line
    check = failure_check(tmp_path / "server" / "server.json")
    assert check.name == "server.alive" and check.status is CheckStatus.not_run, check
    assert slurm.job_state(job_id).state == "CANCELLED", "the requeued job does not run on after the step"


def test_a_job_requeued_before_its_engine_is_healthy_is_waited_for_when_the_runbook_asks(cluster, tmp_path):
    lines: list[str] = []

    def progress(line: str) -> None:  # requeue the job the moment it first runs
        lines.append(line)
        if line.endswith(f"running on {cluster.node}"):
            subprocess.run(["scontrol", "requeue", line.split()[2]], check=True, capture_output=True)

    runbook = _runbook(tmp_path, {"requeue": True, "pending_timeout_s": 120})
    with ServedModel.from_runbook(runbook, tmp_path / "server", progress=progress) as server:
        record = ServerRecord.read(server.record_path)
        assert record.identity.job_id == record.job_id and server.alive()
    job_id = record.job_id
    assert f"slurm job {job_id} requeued (" in "\n".join(lines), lines
    assert f"slurm job {job_id} running on {cluster.node} (restart 1)" in lines, lines
    assert ServerRecord.read(server.record_path).slurm.restarts == 1


def test_each_task_gets_its_own_gpu_and_the_head_address_of_the_named_interface(cluster, tmp_path):
    # The interface whose address is not the node's NodeAddr (127.0.0.1), so that it shows.
    interface, address = next(((name, item.address) for name, items in sorted(psutil.net_if_addrs().items())
                               for item in items if item.family == socket.AF_INET and name != "lo"),
                              ("lo", "127.0.0.1"))
    script = tmp_path / "engine.sh"
    script.write_text(textwrap.dedent(f"""\
        #!/bin/sh
        echo "rank $1 head $2 gpus $CUDA_VISIBLE_DEVICES"
        [ "$1" = 0 ] && exec "{sys.executable}" -m harness.testing.loopback --host "$3" --port "$4" --model m
        exec sleep 600
    """))
    script.chmod(0o755)
    runbook = _runbook(tmp_path, {"ntasks_per_node": 2, "gpus_per_task": 1, "gpu_bind": "single:1",
                                  "head_interface": interface},
                       command=f"{script} {{node_rank}} {{head_addr}} {{host}} {{port}}")
    with ServedModel.from_runbook(runbook, tmp_path / "server"):
        pass
    said = [(tmp_path / "server" / name).read_text().splitlines()[0]
            for name in ("server.stdout.log", "server.rank1.stdout.log")]
    assert said == [f"rank 0 head {address} gpus 0", f"rank 1 head {address} gpus 1"], said


def test_a_head_interface_the_node_lacks_is_one_not_run_line(cluster, tmp_path):
    line, check, _ = _fails(_runbook(tmp_path, {"head_interface": "nosuch0"}), tmp_path / "server")
    assert f"harness: cannot resolve {{head_addr}} on node {cluster.node}: it has no address on network interface " \
           f"'nosuch0' (launcher.head_interface; its interfaces: " in line and "\n" not in line, line
    assert check.status is CheckStatus.not_run


def test_a_node_without_harness_s_interpreter_is_one_not_run_line(cluster, tmp_path, monkeypatch):
    # harness's interpreter at a path the node does not have (its venv not at the same path there)
    missing = tmp_path / "elsewhere/.venv/bin/python"
    monkeypatch.setattr(sys, "executable", str(missing))
    line, check, took = _fails(_runbook(tmp_path, {}), tmp_path / "server")
    job_id = ServerRecord.read(tmp_path / "server" / "server.json").job_id
    assert line.startswith(f"slurm job {job_id} ended FAILED (NonZeroExitCode, exit 2): harness: cannot start the "
                           f"engine: {missing} (harness's interpreter) is not on node(s) {cluster.node}: harness's "
                           f"venv must be at the same path on every node"), line
    assert check.status is CheckStatus.not_run and took < 30
