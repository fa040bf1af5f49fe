"""Process groups a step starts are recorded in the run's record; once their harness process is
gone, any later command stops them — even when the launch command exec'd into another program,
or the group's leader exited and left workers behind — and a pid that now belongs to another
process is never hit."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import yaml
from workflow_support import REPO_ROOT, loopback_runbook

from harness.record.processes import ProcessRecord, ProcessRegistry
from harness.util.processes import marked_env, own_marker
from harness.util.processes import start_time as process_start_time

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").is_file(), reason="needs /proc")


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def wait_gone(pid: int, limit_s: float = 10) -> bool:
    # Bounded poll: SIGKILL is delivered asynchronously.
    deadline = time.monotonic() + limit_s
    while alive(pid):
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
        "environment": {"device": "loopback", "engine_version": "fixture"},
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


def _dead_owner() -> tuple[int, float]:
    """The pid and start time of a harness process that has exited."""
    owner = subprocess.Popen([sys.executable, "-c", "pass"])
    started = process_start_time(owner.pid)
    owner.wait()
    return owner.pid, started


def test_engine_of_a_killed_harness_is_stopped_by_the_next_sweep_even_after_exec(tmp_path):
    registry_dir = tmp_path / "processes"
    script = textwrap.dedent("""
        import sys, time
        from pathlib import Path
        from harness.evidence.runbook import load_runbook
        from harness.evidence.server import ServedModel
        from harness.record.processes import ProcessRegistry
        registry = ProcessRegistry(Path(sys.argv[2]), step="02-interface")
        with ServedModel.from_runbook(load_runbook(sys.argv[1]), Path(sys.argv[3]), registry=registry) as server:
            print(server.pid, flush=True)
            time.sleep(120)
    """)
    harness = subprocess.Popen([sys.executable, "-c", script, str(_exec_wrapper_runbook(tmp_path)), str(registry_dir),
                                str(tmp_path / "server")], stdout=subprocess.PIPE, text=True,
                               env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})
    server_pid = int(harness.stdout.readline())
    try:
        [(_, record)] = ProcessRegistry(registry_dir).records()
        assert (record.role, record.step, record.pid, record.owner_pid) == ("engine", "02-interface", server_pid,
                                                                             harness.pid)
        cmdline = Path(f"/proc/{server_pid}/cmdline").read_bytes().split(b"\0")
        assert [c.decode() for c in cmdline if c] != record.command, "the command exec'd"
        assert ProcessRegistry(registry_dir).sweep() == [], "a running harness keeps its engine"
        assert alive(server_pid)

        harness.send_signal(signal.SIGKILL)
        harness.wait()
        assert alive(server_pid), "SIGKILL leaves the engine behind"
        [stopped] = ProcessRegistry(registry_dir).sweep()
        assert stopped.pid == server_pid and wait_gone(server_pid)
        assert ProcessRegistry(registry_dir).records() == [], "a stopped group is forgotten"
    finally:
        harness.kill()
        harness.wait()
        if alive(server_pid):
            os.killpg(server_pid, signal.SIGKILL)


def test_workers_whose_leader_exited_are_stopped(tmp_path):
    # The leader starts a worker in its group and exits: the group id still names the worker.
    leader = subprocess.Popen([sys.executable, "-c", textwrap.dedent("""
        import subprocess, sys
        worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        print(worker.pid, flush=True)
        sys.stdin.read()
    """)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, start_new_session=True, env=marked_env())
    worker = int(leader.stdout.readline())
    registry = ProcessRegistry(tmp_path)
    record = registry.add(leader, "engine", ["leader"])
    owner_pid, owner_start = _dead_owner()
    (tmp_path / f"{leader.pid}.json").write_text(
        record.model_copy(update={"owner_pid": owner_pid, "owner_start_time": owner_start}).model_dump_json())
    leader.stdin.close()
    leader.wait()
    try:
        assert alive(worker)
        [stopped] = registry.sweep()
        assert stopped.pid == leader.pid and wait_gone(worker)
    finally:
        if alive(worker):
            os.kill(worker, signal.SIGKILL)


def test_recycled_pid_is_never_killed(tmp_path):
    # A live process group leader whose start time differs from the recorded one: the pid was
    # reused by an unrelated process, which must survive (even one harness started).
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True,
                                 env=marked_env())
    try:
        owner_pid, owner_start = _dead_owner()
        start = process_start_time(bystander.pid)

        def record(start_time: float) -> None:
            (tmp_path / f"{bystander.pid}.json").write_text(ProcessRecord(
                role="engine", command=[sys.executable, "-c", "import time; time.sleep(60)"],  # even the same command
                pid=bystander.pid, start_time=start_time, owner_pid=owner_pid, owner_start_time=owner_start,
                started_at="2026-01-01T00:00:00Z", marker=own_marker()).model_dump_json())

        record(start - 1)
        assert ProcessRegistry(tmp_path).sweep() == []
        time.sleep(0.2)
        assert bystander.poll() is None and alive(bystander.pid)
        assert ProcessRegistry(tmp_path).records() == [], "a record that is not ours any more is forgotten"

        # with the right start time it is the recorded server, and its group is stopped
        record(start)
        [stopped] = ProcessRegistry(tmp_path).sweep()
        bystander.wait(timeout=10)
        assert stopped.pid == bystander.pid and wait_gone(bystander.pid)
    finally:
        if bystander.poll() is None:
            os.killpg(bystander.pid, 9)
            bystander.wait()


def test_a_torn_record_is_skipped(tmp_path):
    (tmp_path / "123.json").write_text('{"role": "engi')
    assert ProcessRegistry(tmp_path).records() == [] and ProcessRegistry(tmp_path).sweep() == []


# --------------------------------------------------------------------------- end to end


def _tokenizer(directory: Path) -> Path:
    """A word-level tokenizer made here, so bench_serving's random-ids needs nothing from a hub."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    vocab = {"<unk>": 0, **{f"w{i}": i + 1 for i in range(300)}}
    tokenizer = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer.decoder = decoders.WordPiece(prefix="##")
    directory.mkdir()
    tokenizer.save(str(directory / "tokenizer.json"))
    (directory / "tokenizer_config.json").write_text(json.dumps(
        {"tokenizer_class": "PreTrainedTokenizerFast", "unk_token": "<unk>", "model_max_length": 4096}))
    return directory


def _wait_for(predicate, what: str, limit_s: float = 120):
    # Bounded poll for another process to reach a state; not a timing assertion.
    deadline = time.monotonic() + limit_s
    while True:
        found = predicate()
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.05)


def test_kill_9_during_each_long_step_leaves_nothing_running_after_the_next_command(project):
    """SIGKILL the harness in each step that serves the model (and, in performance, while
    bench_serving runs): the engine and the load generator outlive it, and whatever command
    comes next — not only `resume` of that run — stops them."""
    from harness.evidence.perf import missing_bench_packages

    runbook = loopback_runbook(project.root / "long.yaml", "--latency-ms", "300", accuracy=True)
    data = yaml.safe_load(runbook.read_text())
    data["accuracy"][0]["limit"] = 4
    long_steps = ["02-interface", "03-operators", "04-accuracy"]
    if not missing_bench_packages():
        data["performance"] = [{"name": "tiny", "num_prompts": 6, "random_input_len": 16, "random_output_len": 8,
                                "max_concurrency": 1, "repetitions": 1, "extra_args": ["--warmup-requests", "0"],
                                "tokenizer": str(_tokenizer(project.root / "tokenizer"))}]
        data["environment"]["env"] = {"HF_HUB_OFFLINE": "1"}
        long_steps.append("05-performance")
    runbook.write_text(yaml.safe_dump(data, sort_keys=False))
    registry = ProcessRegistry(project.workspace / ".harness/runs/k9/processes")

    harness = subprocess.Popen(project.command(*project.run_args("--run-id", "k9", "--auto-approve", runbook=runbook)),
                               env=project.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for slug in long_steps:
            roles = {"engine", "bench_serving"} if slug == "05-performance" else {"engine"}
            records = _wait_for(lambda: (found := [r for _, r in registry.records() if r.step == slug])
                                and roles <= {r.role for r in found} and found, f"{slug}'s processes")
            pids = [r.pid for r in records]
            harness.send_signal(signal.SIGKILL)
            harness.wait()
            assert all(alive(pid) for pid in pids), "SIGKILL left them running (the point of this test)"

            after = project.cli("status", subprocess_=True, check=False)  # any command, any run
            assert not [pid for pid in pids if alive(pid)], f"{slug}: orphans survived `harness status`"
            assert "stopped an orphan of run k9" in after.stderr
            assert registry.records() == []

            harness = subprocess.Popen(project.command("resume", "k9"), env=project.env,
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        assert harness.wait(timeout=300) == 0
    finally:
        if harness.poll() is None:
            harness.kill()
            harness.wait()
        for _, record in registry.records():
            if alive(record.pid):
                os.killpg(record.pid, signal.SIGKILL)
    status = project.status("k9")
    assert status["state"] == "finished" and status["processes"] == []
    assert [s["verdict"] != "pending" for s in status["steps"]] == [True] * len(status["steps"])


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_signalled_harness_stops_its_engine_on_the_way_out(project, sig):
    """A cancelled CI job (SIGTERM) or a closed terminal (SIGHUP) unwinds the harness like
    Ctrl-C: the engine is stopped and forgotten before it exits, no sweep needed."""
    slow = loopback_runbook(project.root / "slow.yaml", "--latency-ms", "1500")
    registry = ProcessRegistry(project.workspace / ".harness/runs/sig/processes")
    harness = subprocess.Popen(project.command(*project.run_args("--run-id", "sig", "--auto-approve", runbook=slow)),
                               env=project.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        [record] = _wait_for(lambda: [r for _, r in registry.records()], "the engine")
        harness.send_signal(sig)
        assert harness.wait(timeout=60) == 128 + sig
    finally:
        if harness.poll() is None:
            harness.kill()
            harness.wait()
    assert not alive(record.pid) and registry.records() == []
    assert project.status("sig")["state"] == "interrupted"
