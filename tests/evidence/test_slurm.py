"""Engines as Slurm jobs (runbook `launcher: slurm`), against a real single-node cluster started
for these tests (tests/support/slurm_cluster.py; skipped with the reason where Slurm is not
installed): the built-in example's engine gives the same evidence as a local one, a two-task job
gets rank and head address into its command, a killed harness leaves a job the next command
cancels, and a job past its time limit or never scheduled is one `not run` line.

The parts that need no cluster (the runbook section, sbatch options, per-task templating) are
tested first and always run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import yaml
from runner_support import smoke as run_smoke

from harness.errors import HarnessError
from harness.evidence.launchers import sbatch_options
from harness.evidence.runbook import Runbook, SlurmLauncher, load_runbook
from harness.evidence.server import (
    ServedModel,
    ServerRecord,
    ServerStartError,
    failure_check,
    free_port,
)
from harness.evidence.slurm_task import task_command
from harness.record.checks import CheckStatus
from harness.record.processes import ProcessRegistry
from harness.util import slurm

REPO_ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_RUNBOOK = REPO_ROOT / "harness/examples/workspace/runbook.yaml"


def _runbook(tmp_path: Path, launcher: object, command: str | None = None, **server: object) -> Runbook:
    data = {
        "name": "slurm-loopback",
        "environment": {"device": "loopback", "engine_version": "fixture"},
        "server": {"command": command or "python -m harness.testing.loopback --host {host} --port {port} --model {model}",
                   "model": "loopback-model", "startup_timeout_s": 30, "shutdown_grace_s": 2,
                   "env": {"PYTHONPATH": str(REPO_ROOT)}, **server},
        "smoke": {"prompts": ["The capital of France is"], "max_tokens": 4},
        "launcher": launcher,
    }
    path = tmp_path / "runbook.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return load_runbook(path)


# --------------------------------------------------------------------------- no cluster needed


def test_the_launcher_section_defaults_to_local_and_takes_slurm_settings(tmp_path):
    assert _runbook(tmp_path, "local").launcher.kind == "local"
    assert _runbook(tmp_path, "slurm").launcher == SlurmLauncher(kind="slurm")
    launcher = _runbook(tmp_path, {"kind": "slurm", "partition": "gpu", "nodes": 4, "ntasks_per_node": 1,
                                   "gres": "gpu:8", "time": "02:00:00", "account": "llm",
                                   "sbatch_options": ["--exclusive"]}).launcher
    options = sbatch_options(launcher, "server", tmp_path, "harness:proof")
    assert {"--nodes=4", "--ntasks-per-node=1", "--partition=gpu", "--gres=gpu:8", "--time=02:00:00",
            "--account=llm", "--exclusive", f"--output={tmp_path}/server.stdout.log"} <= set(options)
    assert options[-1] == "--comment=harness:proof", "the marker comes last, after sbatch_options: it wins"


@pytest.mark.parametrize(("launcher", "where", "message"), [
    ({"kind": "slurm", "nodes": 0}, "launcher.nodes", "greater than or equal to 1"),
    # the misspelt key itself, at its own line (not the union's tag `slurm`, at `kind:`)
    ({"kind": "slurm", "gpus": 8}, "launcher.gpus", "Extra inputs are not permitted"),
    ({"kind": "kubernetes"}, "launcher", "unknown kind 'kubernetes'; expected one of 'local', 'slurm'"),
    ("slurmm", "launcher", "unknown kind 'slurmm'; expected one of 'local', 'slurm'"),  # the plain-string form
])
def test_a_bad_launcher_key_is_one_line_at_its_place(tmp_path, launcher, where, message):
    with pytest.raises(HarnessError) as caught:
        _runbook(tmp_path, launcher)
    line = str(caught.value)
    assert "\n" not in line and line.startswith(f"{tmp_path / 'runbook.yaml'}:") and message in line, line
    assert f": {where}: " in line, line
    if where == "launcher.gpus":
        text = (tmp_path / "runbook.yaml").read_text().splitlines()
        number = int(line.split(":")[1])
        assert text[number - 1].strip().startswith("gpus:"), (number, text)


def test_each_task_gets_its_rank_the_task_count_and_the_head_address():
    command = ["engine", "--nnodes", "{nnodes}", "--node-rank={node_rank}", "--dist-init-addr", "{head_addr}:5000",
               '{"literal": 1}']
    env = {"SLURM_NTASKS": "4", "SLURM_PROCID": "2"}
    assert task_command(command, env, "10.0.0.1") == ["engine", "--nnodes", "4", "--node-rank=2", "--dist-init-addr",
                                                      "10.0.0.1:5000", '{"literal": 1}']


def test_the_local_launcher_fills_one_task(tmp_path):
    from harness.evidence.launchers import dist_values
    from harness.evidence.server import build_command

    spec = _runbook(tmp_path, "local", command="engine --port {port} --nnodes {nnodes} --node-rank {node_rank} "
                    "--dist-init-addr {head_addr}:{dist_port}").server
    args = build_command(spec, "127.0.0.1", 3000, dist_values(_runbook(tmp_path, "local").launcher, "127.0.0.1",
                                                               lambda host: 3001))
    assert args == ["engine", "--port", "3000", "--nnodes", "1", "--node-rank", "0", "--dist-init-addr",
                    "127.0.0.1:3001"]


# --------------------------------------------------------------------------- a real cluster


def _shape(evidence: Path) -> set[str]:
    """The evidence files; a job adds its tasks' spec (server.task.json), nothing else."""
    return {p.relative_to(evidence).as_posix() for p in evidence.rglob("*") if p.is_file()} - {"server/server.task.json"}


def test_the_example_engine_as_a_slurm_job_gives_the_local_evidence(cluster, tmp_path):
    from harness.evidence.local_model import require_engine

    try:
        require_engine()
    except HarnessError as exc:
        pytest.skip(f"not run: {exc}")
    local = load_runbook(EXAMPLE_RUNBOOK)
    on_slurm = local.model_copy(update={"launcher": SlurmLauncher(kind="slurm", time="5")})
    records = {}
    for name, runbook in (("local", local), ("slurm", on_slurm)):
        evidence = tmp_path / name
        registry = ProcessRegistry(tmp_path / f"{name}-processes")
        with ServedModel.from_runbook(runbook, evidence / "server", registry=registry) as server:
            result = run_smoke(server, runbook.smoke, evidence / "smoke")
            assert registry.records(), "the engine (process or job) is recorded while it runs"
        assert result.status is CheckStatus.passed, result
        assert registry.records() == [], "and forgotten once stopped"
        records[name] = ServerRecord.read(evidence / "server" / "server.json")
    assert _shape(tmp_path / "slurm") == _shape(tmp_path / "local")
    local_record, job_record = records["local"], records["slurm"]
    assert set(local_record.model_fields_set) | {"job_id", "node", "nodes", "slurm"} >= set(job_record.model_fields_set)
    identity = job_record.identity
    assert identity.job_id == job_record.job_id and identity.node == cluster.node
    assert identity.models == local_record.identity.models == ["SmolLM2-135M-Instruct"]
    # a clean stop: SIGTERM to the engine ends its job COMPLETED, no scancel, no `JOB N CANCELLED` line
    accounting = job_record.slurm
    assert (accounting.job_id, accounting.state, accounting.exit_code, accounting.nodes, accounting.source) == \
        (job_record.job_id, "COMPLETED", "0:0", cluster.node, "scontrol"), accounting  # no slurmdbd here
    assert accounting.pending_s >= 0 and accounting.run_s >= 1 and not job_record.killed
    log = (tmp_path / "slurm/server/server.stderr.log").read_text()
    assert f"JOB {job_record.job_id} ON" not in log and "harness: the engine stopped on SIGTERM" in log, log[-600:]
    assert slurm.job_state(job_record.job_id).state == "COMPLETED"


def test_a_two_task_job_gives_each_task_its_rank_and_the_head_address(cluster, tmp_path):
    # Two tasks on the one node stand in for two nodes: rank 0 serves, rank 1 only reports.
    script = tmp_path / "engine.sh"
    script.write_text(textwrap.dedent(f"""\
        #!/bin/sh
        echo "rank $1 of $2, head $3:$4"
        [ "$1" = 0 ] && exec "{sys.executable}" -m harness.testing.loopback --host "$5" --port "$6" --model m
        exec sleep 600
    """))
    script.chmod(0o755)
    runbook = _runbook(tmp_path, {"kind": "slurm", "ntasks_per_node": 2},
                       command=f"{script} {{node_rank}} {{nnodes}} {{head_addr}} {{dist_port}} {{host}} {{port}}")
    with ServedModel.from_runbook(runbook, tmp_path / "server") as server:
        job_id = ServerRecord.read(server.record_path).job_id
    logs = {name: (tmp_path / "server" / name).read_text() for name in ("server.stdout.log", "server.rank1.stdout.log")}
    dist_port = server.command[4]
    assert f"rank 0 of 2, head 127.0.0.1:{dist_port}" in logs["server.stdout.log"]
    assert f"rank 1 of 2, head 127.0.0.1:{dist_port}" in logs["server.rank1.stdout.log"]
    assert slurm.job_state(job_id).state == "COMPLETED", "both tasks ended on the stop's SIGTERM"


def test_a_job_left_by_a_killed_harness_is_cancelled_by_the_next_command(cluster, tmp_path):
    workspace = tmp_path / "ws"
    registry_dir = workspace / ".harness" / "runs" / "k9" / "processes"
    runbook = _runbook(tmp_path, "slurm")
    program = textwrap.dedent("""
        import sys, time
        from pathlib import Path
        from harness.evidence.runbook import load_runbook
        from harness.evidence.server import ServedModel
        from harness.record.processes import ProcessRegistry
        registry = ProcessRegistry(Path(sys.argv[2]), step="02-interface")
        with ServedModel.from_runbook(load_runbook(sys.argv[1]), Path(sys.argv[3]), registry=registry) as server:
            print("healthy", flush=True)
            time.sleep(300)
    """)
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    harness = subprocess.Popen([sys.executable, "-c", program, str(runbook.source), str(registry_dir),
                                str(tmp_path / "server")], stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert harness.stdout.readline().strip() == "healthy"
        [(_, record)] = ProcessRegistry(registry_dir).records()
        assert record.job is not None and record.alive
        harness.send_signal(signal.SIGKILL)
        harness.wait()
        assert slurm.job_state(record.job).state == "RUNNING", "SIGKILL leaves the job running"
        (registry_dir.parent / "run.json").write_text("{}")  # the run's record (its contents do not matter here)

        after = subprocess.run([sys.executable, "-m", "harness", "status", "--workspace", str(workspace)],
                               capture_output=True, text=True, env=env, timeout=120, check=False)
        assert f"stopped an orphan of run k9 (its harness process {harness.pid} is gone): engine slurm job " \
               f"{record.job}" in after.stderr, after.stderr
        deadline = time.monotonic() + 30
        while slurm.job_state(record.job).active and time.monotonic() < deadline:
            time.sleep(0.5)
        assert slurm.job_state(record.job).state == "CANCELLED"
        assert ProcessRegistry(registry_dir).records() == []
    finally:
        harness.kill()
        harness.wait()


def _start_fails(runbook: Runbook, evidence: Path) -> tuple[str, object]:
    with pytest.raises(ServerStartError) as caught, ServedModel.from_runbook(runbook, evidence):
        pass
    return str(caught.value), failure_check(evidence / "server.json")


def test_a_job_never_scheduled_is_one_not_run_line(cluster, tmp_path):
    runbook = _runbook(tmp_path, {"kind": "slurm", "pending_timeout_s": 3, "sbatch_options": ["--begin=now+3600"]})
    line, check = _start_fails(runbook, tmp_path / "server")
    job_id = ServerRecord.read(tmp_path / "server" / "server.json").job_id
    assert line.startswith(f"slurm job {job_id} still PENDING after 3 s (reason: BeginTime"), line
    assert "\n" not in line
    assert check.status is CheckStatus.not_run and check.reason.startswith(f"slurm job {job_id} still PENDING")
    assert slurm.job_state(job_id).state == "CANCELLED", "a job given up on leaves the queue"


@pytest.mark.slow
def test_a_job_past_its_time_limit_is_one_not_run_line_with_its_log(cluster, tmp_path):
    # Slurm's time limits are whole minutes, checked about every 30 s: this waits about 70 s.
    runbook = _runbook(tmp_path, {"kind": "slurm", "time": "1"}, command="sh -c 'echo loading {port}; exec sleep 600'",
                       startup_timeout_s=300)
    line, check = _start_fails(runbook, tmp_path / "server")
    job_id = ServerRecord.read(tmp_path / "server" / "server.json").job_id
    assert line.startswith(f"slurm job {job_id} ended TIMEOUT (TimeLimit, time limit 00:01:00) before the engine "
                           f"was healthy"), line
    assert check.status is CheckStatus.not_run
    assert "loading" in check.detail and "DUE TO TIME LIMIT" in check.detail, check.detail


def test_a_job_whose_engine_exits_before_healthy_is_one_not_run_line(cluster, tmp_path):
    runbook = _runbook(tmp_path, "slurm", command="sh -c 'echo no device here {port} >&2; exit 3'")
    line, check = _start_fails(runbook, tmp_path / "server")
    job_id = ServerRecord.read(tmp_path / "server" / "server.json").job_id
    assert line.startswith(f"slurm job {job_id} ended FAILED (NonZeroExitCode, exit 3) before the engine was "
                           f"healthy"), line
    assert check.status is CheckStatus.not_run and "no device here" in check.detail


def test_what_answers_on_the_port_must_be_a_process_of_the_job(cluster, tmp_path):
    # Something outside the job answers health on the engine's port: never measured in its place.
    runbook = _runbook(tmp_path, "slurm", command="sh -c 'exec sleep 600 {port}'", port=free_port())
    outsider = subprocess.Popen([sys.executable, "-m", "harness.testing.loopback", "--port", str(runbook.server.port)],
                                env={**os.environ, "PYTHONPATH": str(REPO_ROOT)}, stderr=subprocess.DEVNULL)
    try:
        line, check = _start_fails(runbook, tmp_path / "server")
    finally:
        outsider.kill()
        outsider.wait()
    job_id = ServerRecord.read(tmp_path / "server" / "server.json").job_id
    assert f"is not what answers on 127.0.0.1:{runbook.server.port}: pid {outsider.pid} on {cluster.node}" in line
    assert f"not the engine started (slurm job {job_id})" in line and "\n" not in line, line
    assert check.status is CheckStatus.failed


def test_a_sweep_never_cancels_a_job_that_is_not_ours(cluster, tmp_path):
    foreign = slurm.submit("#!/bin/sh\nexec sleep 600\n", ["--comment=someone-else", f"--output={tmp_path}/out"],
                           cwd=tmp_path, env=dict(os.environ))
    registry = ProcessRegistry(tmp_path / "processes")
    record = registry.add_job(foreign, "engine", ["engine"], "a-secret-whose-hash-it-does-not-carry")
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    path = tmp_path / "processes" / f"job-{foreign}.json"
    path.write_text(record.model_copy(update={"owner_pid": dead.pid}).model_dump_json())
    try:
        assert registry.sweep() == [] and registry.records() == []
        assert slurm.job_state(foreign).active, "a job without harness's marker is left alone"
    finally:
        slurm.cancel(foreign)
