"""Shared team state: run state in a real PostgreSQL (LangGraph's PostgresSaver) through
HARNESS_STATE_URL or --state-url, the per-run lock as an advisory lock, evidence on disk."""

from __future__ import annotations

import json
import signal
import subprocess

import psycopg
import pytest
from postgres_cluster import Cluster
from workflow_support import loopback_runbook, one_line_error, tree_bytes, wait_for


@pytest.fixture(scope="module")
def cluster():
    running = Cluster()
    yield running
    running.stop()


@pytest.fixture
def shared(project, cluster, monkeypatch) -> str:
    """The project with its run state in a fresh database of the cluster."""
    url = cluster.database()
    monkeypatch.setenv("HARNESS_STATE_URL", url)
    project.env = {**project.env, "HARNESS_STATE_URL": url}
    return url


def test_run_in_postgres_then_approve_from_another_process(project, shared):
    project.cli(*project.run_args("--run-id", "team"))
    assert not (project.workspace / ".harness" / "state.sqlite").exists()  # the state is in the database
    with psycopg.connect(shared) as conn:
        [(count,)] = conn.execute("SELECT count(*) FROM checkpoints WHERE thread_id = 'team'").fetchall()
    assert count > 0
    status = project.status("team")
    assert status["resume"]["state"] == "ok" and status["waiting_at"] == "01-alignment"
    assert status["state_store"] == f"PostgreSQL {shared}"
    assert status["evidence_root"] == str(project.reports("team") / "evidence")
    human = project.cli("status", "team").stdout
    assert f"evidence: {project.reports('team') / 'evidence'} (on this workspace's disk); run state: PostgreSQL" in human

    # a second process, given the database by --state-url rather than the environment
    env = {k: v for k, v in project.env.items() if k != "HARNESS_STATE_URL"}
    proc = subprocess.run(
        [*project.command("--state-url", shared, "approve", "team", "--by", "bob")],
        capture_output=True, text=True, env=env, timeout=240, check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Waiting at the 02-interface gate" in proc.stdout
    status = project.status("team")
    assert status["steps"][0]["gate"]["decision"] == "approve" and status["steps"][0]["gate"]["by"] == "bob"
    assert status["waiting_at"] == "02-interface" and status["resume"]["state"] == "ok"


def test_two_processes_approving_the_same_gate_exactly_one_wins(project, shared):
    slow = loopback_runbook(project.root / "slow.yaml", "--latency-ms", "1500")
    project.cli(*project.run_args("--run-id", "race", runbook=slow))
    racers = [subprocess.Popen(project.command("approve", "race", "--by", name), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, env=project.env) for name in ("alice", "bob")]
    results = [(p.wait(timeout=240), *p.communicate()) for p in racers]
    winners = [r for r in results if r[0] == 0]
    losers = [r for r in results if r[0] != 0]
    assert len(winners) == 1 and len(losers) == 1, results
    code, _, stderr = losers[0]
    assert code == 2
    [line] = stderr.strip().splitlines()
    assert line.startswith("harness: error: run race is being advanced by harness pid ") and "wait for it" in line
    approvals = [e for e in project.journal("race") if e["event"] == "approve"]
    assert len(approvals) == 1 and approvals[0]["step"] == "01-alignment"
    assert project.status("race")["waiting_at"] == "02-interface"


def test_kill_9_during_a_step_then_resume(project, shared):
    slow = loopback_runbook(project.root / "slow.yaml", "--latency-ms", "1500")
    project.cli(*project.run_args("--run-id", "crash", runbook=slow))
    approving = subprocess.Popen(project.command("approve", "crash", "--by", "alice"),
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=project.env)
    smoke_log = project.reports("crash") / "evidence/.staging/02-interface.attempt-1/smoke/smoke.jsonl"
    wait_for(lambda: smoke_log.is_file() and smoke_log.stat().st_size > 0, "the smoke test to be under way")
    status = project.status("crash")
    assert status["state"] == "running" and status["running"].startswith(f"harness pid {approving.pid} on ")
    approving.send_signal(signal.SIGKILL)
    approving.wait()

    # the database dropped the killed process's lock with its connection
    wait_for(lambda: project.status("crash")["state"] == "interrupted", "the lock to be released")
    resumed = project.cli("resume", "crash")
    assert "Waiting at the 02-interface gate" in resumed.stdout
    starts = [(e["step"], e["attempt"]) for e in project.journal("crash") if e["event"] == "step_started"]
    assert starts == [("01-alignment", 1), ("02-interface", 1), ("02-interface", 1)]
    assert project.status("crash")["resume"]["state"] == "ok"


def test_database_down_is_one_line_and_loses_nothing(project, monkeypatch):
    own = Cluster()  # its own cluster: this test stops it
    try:
        url = own.database()
        monkeypatch.setenv("HARNESS_STATE_URL", url)
        project.env = {**project.env, "HARNESS_STATE_URL": url}
        project.cli(*project.run_args("--run-id", "kept"))
    finally:
        own.stop()
    before = tree_bytes(project.workspace)

    # a real process (no traceback), then the other commands in-process (faster, same handling)
    for args, real in ((("approve", "kept", "--by", "alice"), True), (("status", "kept"), False),
                       (("resume", "kept"), False)):
        proc = project.cli(*args, check=False, subprocess_=real)
        assert proc.returncode == 2
        one_line_error(proc, "state database postgresql://postgres@127.0.0.1:", "is unreachable", "nothing was lost")
    proc = project.cli(*project.run_args("--run-id", "new"), check=False)
    assert proc.returncode == 2 and not project.reports("new").exists()
    one_line_error(proc, "is unreachable")
    assert tree_bytes(project.workspace) == before  # journal, evidence and reports as they were

    monkeypatch.setenv("HARNESS_STATE_URL", "mysql://x@127.0.0.1/db")
    one_line_error(project.cli("status", "kept", check=False), "only postgresql://")
    assert json.loads((project.workspace / ".harness/runs/kept/run.json").read_text())["run_id"] == "kept"
