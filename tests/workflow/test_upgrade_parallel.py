"""`harness upgrade --parallel K`: up to K review runs at once, each in its own process, driven
through the interface draft (the scripted LLM on loopback) so each run serves its engine: the
summary is the one `--parallel 1` writes, a run that fails is its feature's error while the others
finish, Ctrl-C (or a kill -9) stops every run and a rerun resumes them, and with a Slurm runbook the engines are
jobs running at once, each named in the summary (a real single-node cluster,
tests/support/slurm_cluster.py)."""

from __future__ import annotations

import fcntl
import json
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml
from workflow_support import Project, loopback_runbook, one_line_error, wait_for

from harness.record.layout import Workspace
from harness.record.processes import ProcessRegistry
from harness.testing.llm import ScriptedLLM

FEATURES = ["get-kv-pool-cls", "scheduler-process-batch"]  # the project's upgrade, in triage order


def _upgrade(project: Project, workspace: Path, llm: ScriptedLLM | None, *extra: str, runbook: Path | None = None,
             wait: bool = True) -> subprocess.CompletedProcess | subprocess.Popen:
    """`harness upgrade` of the project's plugin; with `llm`, through the interface draft (engines served)."""
    workspace.mkdir(exist_ok=True)
    command = [sys.executable, "-m", "harness", "upgrade", "--plugin", str(project.plugin), "--from", str(project.old),
               "--to", str(project.new), "--runbook", str(runbook or project.runbook), "--workspace", str(workspace),
               *extra]
    if llm is not None:
        command += ["--through", "interface", "--llm-base-url", llm.base_url, "--llm-model", "scripted"]
    if not wait:
        return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=project.env)
    return subprocess.run(command, capture_output=True, text=True, env=project.env, timeout=300, check=False)


def _same(text: str, workspace: Path) -> str:
    """The account with what differs between two workspaces taken out: their path, when it was written."""
    lines = text.replace(str(workspace), "WS").splitlines()
    return "\n".join(line for line in lines if "generated" not in line)


def test_parallel_runs_report_as_one_after_another_and_a_failed_run_loses_nothing(project):
    """--parallel 2 writes what --parallel 1 writes (local engines); a run another process holds
    fails alone, with the command that retries it, and the other run's result is in the summary."""
    one, two, held = project.root / "ws-1", project.root / "ws-2", project.root / "ws-held"
    with ScriptedLLM([]) as llm:  # every agent turn: finish("script exhausted")
        serial = _upgrade(project, one, llm, "--json")
        parallel = _upgrade(project, two, llm, "--json", "--parallel", "2")
        assert (serial.returncode, parallel.returncode) == (1, 1), parallel.stderr
        doc = json.loads(serial.stdout)
        assert [f["id"] for f in doc["features"]] == FEATURES
        for feature in doc["features"]:  # each run drafted the interface and served its engine
            assert list(feature["verdicts"]) == ["01-alignment", "02-interface"] and feature["state"] == "waiting"
            assert (one / "reports" / feature["run_id"] / "evidence/02-interface/server/server.json").is_file()
            assert feature["jobs"] == []  # a local engine runs in no job
        assert _same(parallel.stdout, two) == _same(serial.stdout, one)
        folder = Path(doc["summary"]).parent.relative_to(one)
        for name in ("summary.md", "details.md", "issue.md"):
            assert _same((two / folder / name).read_text(), two) == _same((one / folder / name).read_text(), one), name
        # one line as each run starts; then each run's progress, prefixed with its feature
        for index, feature in enumerate(FEATURES, 1):
            assert parallel.stderr.count(f"feature {index}/2: {feature}\n") == 1
            assert f"[{feature}] step 2 interface (attempt 1)" in parallel.stderr, parallel.stderr

    # another process advances the first feature's run: that run fails, the other finishes (to its first gate)
    lock = Workspace(held).run(doc["features"][0]["run_id"]).lock_file
    lock.parent.mkdir(parents=True)
    with lock.open("a+") as holder:
        fcntl.flock(holder, fcntl.LOCK_EX)
        holder.write("pid 4242")
        holder.flush()
        failed = _upgrade(project, held, None, "--json", "--parallel", "2")
    assert failed.returncode == 1 and "Traceback" not in failed.stderr, failed.stderr
    first, second = json.loads(failed.stdout)["features"]
    assert (first["state"], first["run_id"]) == ("error", None)
    assert first["error"].startswith(f"run {doc['features'][0]['run_id']} is being advanced by pid 4242")
    assert first["start"].endswith(f"--feature {FEATURES[0]}")
    assert second["state"] == "waiting" and list(second["verdicts"]) == ["01-alignment"]
    summary = (held / folder / "summary.md").read_text()
    assert "Review runs: 1 started, 1 failed." in summary
    assert f"  run failed: {first['error']} · retry: `{first['start']}`" in summary.splitlines()
    assert (held / "reports" / second["run_id"] / "01-alignment.md").is_file()


def test_a_bad_parallel_is_one_line(project):
    bad = project.cli("upgrade", "--plugin", str(project.plugin), "--from", str(project.old), "--to", str(project.new),
                      "--parallel", "0", check=False)
    one_line_error(bad, "--parallel 0: give 1 or more review runs at once")
    assert bad.returncode == 2 and not Workspace(project.workspace).runs_dir.exists()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL], ids=["ctrl-c", "kill-9"])
def test_stopping_the_upgrade_stops_every_run_and_a_rerun_resumes_them(project, sig):
    """Ctrl-C stops every run where it stands; so does a kill -9 of the upgrade (its workers see
    it gone), so no engine runs on unwatched."""
    slow = loopback_runbook(project.root / "slow.yaml", "--startup-delay-s", "3")  # healthy 3 s after start
    workspace = project.root / "ws"
    runs = Workspace(workspace).runs_dir
    with ScriptedLLM([]) as llm:
        upgrade = _upgrade(project, workspace, llm, "--parallel", "2", runbook=slow, wait=False)
        try:
            # both engines starting at once: each run recorded its own
            wait_for(lambda: runs.is_dir() and sum(bool(ProcessRegistry(d / "processes").records())
                                                   for d in runs.iterdir()) == 2, "two engines starting", 60)
            engines = [record for d in runs.iterdir() for _, record in ProcessRegistry(d / "processes").records()]
            upgrade.send_signal(sig)
            _, stderr = upgrade.communicate(timeout=60)  # its workers share its stderr: it ends when they have
        finally:
            upgrade.kill()
        assert "Traceback" not in stderr, stderr
        if sig == signal.SIGINT:
            assert upgrade.returncode == 130 and stderr.strip().splitlines()[-1] == \
                "harness: interrupted; rerun the same `harness upgrade` to resume its review runs", stderr
        for engine in engines:  # every engine stopped, none left recorded
            assert not engine.alive
        assert all(ProcessRegistry(d / "processes").records() == [] for d in runs.iterdir())
        if sig == signal.SIGKILL:
            return  # resuming is the same either way
        again = _upgrade(project, workspace, llm, "--json", "--parallel", "2", runbook=slow)
    assert again.returncode == 1, again.stderr
    for feature in json.loads(again.stdout)["features"]:
        assert feature["reused"] and feature["state"] == "waiting"
        assert list(feature["verdicts"]) == ["01-alignment", "02-interface"]


def _running_jobs(env: dict, seen: list[set[str]], done: threading.Event) -> None:
    while not done.is_set():
        listed = subprocess.run(["squeue", "-h", "-t", "RUNNING", "-o", "%i"], capture_output=True, text=True, env=env,
                                timeout=30, check=False)
        seen.append(set(listed.stdout.split()))
        time.sleep(0.2)


def test_on_slurm_the_runs_engines_are_jobs_at_once_each_named_in_the_summary(cluster, project):
    """Issue 38 item 7: with `launcher: slurm`, `--parallel 2 --through interface` has two engine
    jobs running at once (squeue lists both; their recorded lifetimes overlap), each in the summary."""
    runbook = project.root / "slurm.yaml"
    loopback_runbook(runbook, "--startup-delay-s", "2")  # each job runs a few seconds: long enough to be seen
    data = yaml.safe_load(runbook.read_text())
    runbook.write_text(yaml.safe_dump({**data, "launcher": {"kind": "slurm", "time": "5"}}, sort_keys=False))
    env = {**project.env, "SLURM_CONF": str(cluster.conf)}
    project.env = env
    seen: list[set[str]] = []
    done = threading.Event()
    watcher = threading.Thread(target=_running_jobs, args=(env, seen, done), daemon=True)
    watcher.start()
    workspace = project.root / "ws"
    try:
        with ScriptedLLM([]) as llm:
            upgrade = _upgrade(project, workspace, llm, "--parallel", "2", runbook=runbook)
    finally:
        done.set()
        watcher.join()
    assert upgrade.returncode == 1, upgrade.stderr
    (written,) = workspace.glob("reports/upgrade-*/upgrade.json")
    doc = json.loads(written.read_text())
    features = doc["features"]
    jobs = [job for feature in features for job in feature["jobs"]]
    assert [len(feature["jobs"]) for feature in features] == [1, 1], features  # each run's engine: its own job
    assert all(job["step"] == "02-interface" and job["node"] == cluster.node for job in jobs)
    ids = {job["job_id"] for job in jobs}
    assert len(ids) == 2 and any(ids <= running for running in seen), seen  # squeue listed both running at once
    first, second = sorted(jobs, key=lambda job: job["started_at"])
    assert second["started_at"] < first["stopped_at"]  # and their recorded lifetimes overlap
    summary = Path(doc["summary"]).read_text()
    for feature in features:
        (job,) = feature["jobs"]
        line = next(line for line in summary.splitlines() if line.startswith(f"  run [{feature['run_id']}]"))
        assert line.endswith(f" · engine of 02-interface: slurm job {job['job_id']} on {cluster.node}"), line
        assert f"        engine of 02-interface: slurm job {job['job_id']} on {cluster.node}\n" in upgrade.stdout


_SWALLOWING_WORK = '''\
import signal
from pydantic import BaseModel

class Task(BaseModel):
    sig: int

class Done(BaseModel):
    messages: int

class _Finaliser:
    def __del__(self):
        signal.raise_signal(TASK_SIG[0])
        for _ in range(100):  # the handler runs here, inside __del__
            pass

TASK_SIG = [0]

def work(task: Task, progress) -> Done:
    TASK_SIG[0] = task.sig
    _Finaliser()  # collected at once: the signal lands in its finaliser
    for index in range(20):
        progress(f"message {index}")
    return Done(messages=20)
'''


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_a_signal_a_worker_swallows_in_a_finaliser_still_stops_it_without_a_traceback(tmp_path, monkeypatch, capfd, sig):
    """A Ctrl-C or SIGTERM reaching a parallel run's worker while a finaliser runs (GitPython's
    `Repo.__del__`) must stop that run at its next progress line, as it would anywhere else, and
    print no "Exception ignored … Traceback": the worker ends 128 + signal, reporting no result."""
    (tmp_path / "swallowing_work.py").write_text(_SWALLOWING_WORK)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    monkeypatch.syspath_prepend(str(tmp_path))
    import swallowing_work
    from harness.workflow.fanout import Failed, run_all

    seen: list[str] = []
    results = run_all(swallowing_work.work, [(key, swallowing_work.Task(sig=sig)) for key in ("a", "b")], parallel=2,
                      progress=seen.append)
    stderr = capfd.readouterr().err
    assert "Traceback" not in stderr and "Exception ignored" not in stderr, stderr
    for key in ("a", "b"):
        assert results[key] == Failed(reason=f"its worker process exited with code {128 + sig} before it reported a "
                                             f"result (its output is on stderr)")
        assert f"[{key}] message 0" not in seen, seen  # stopped at its first progress line
