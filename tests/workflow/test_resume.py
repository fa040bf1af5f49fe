"""Crash safety: SIGKILL at any moment, then `harness resume`, loses no evidence and repeats no
finished step."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

from workflow_support import loopback_runbook, tree_bytes, wait_for


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat.split(") ", 1)[1][0] != "Z"


def test_sigkill_mid_step_then_resume(project):
    # A slow engine keeps the interface step busy long enough to be killed in the middle of it.
    slow = loopback_runbook(project.root / "slow.yaml", "--latency-ms", "1500")
    project.cli(*project.run_args("--run-id", "crash", runbook=slow))
    alignment_dir = project.reports("crash") / "evidence/01-alignment"
    alignment_before = tree_bytes(alignment_dir)

    approving = subprocess.Popen(
        project.command("approve", "crash", "--by", "alice"),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=project.env,
    )
    staging = project.reports("crash") / "evidence/.staging/02-interface.attempt-1"
    smoke_log = staging / "smoke/smoke.jsonl"
    wait_for(lambda: smoke_log.is_file() and smoke_log.stat().st_size > 0, "the smoke test to be under way")
    server_pid = json.loads((staging / "server/server.json").read_text())["pid"]
    # while it runs, nobody else may advance the run, and status says who is on it and what runs
    status = project.status("crash")
    assert status["state"] == "running"
    [engine] = status["processes"]
    assert (engine["role"], engine["pid"], engine["step"]) == ("engine", server_pid, "02-interface")
    assert engine["owner_pid"] == approving.pid and engine["owner_running"] is True
    human = project.cli("status", "crash").stdout
    assert f"process alive: engine pid {server_pid} (02-interface) — started by harness pid {approving.pid}" in human
    busy = project.cli("approve", "crash", "--by", "bob", check=False)
    assert busy.returncode == 2 and f"is being advanced by pid {approving.pid}" in busy.stderr
    approving.send_signal(signal.SIGKILL)
    approving.wait()
    assert approving.returncode == -signal.SIGKILL

    status = project.status("crash")
    assert status["state"] == "interrupted"
    assert status["steps"][0]["gate"]["decision"] == "approve"  # the approval survived the kill
    assert not (project.reports("crash") / "evidence/02-interface").exists()  # no half evidence

    resumed = project.cli("resume", "crash", subprocess_=True)
    assert "Waiting at the 02-interface gate" in resumed.stdout
    assert not _alive(server_pid), "resume stops the server the killed process left running"

    journal = project.journal("crash")
    starts = [(e["step"], e["attempt"]) for e in journal if e["event"] == "step_started"]
    assert starts == [("01-alignment", 1), ("02-interface", 1), ("02-interface", 1)]
    assert tree_bytes(alignment_dir) == alignment_before  # finished evidence untouched
    status = project.status("crash")
    assert status["steps"][0]["gate"]["valid"] is True  # so its approval still counts
    assert status["waiting_at"] == "02-interface"
    assert (project.reports("crash") / "evidence/02-interface/smoke/smoke.jsonl").is_file()
    assert not (project.reports("crash") / "evidence/.staging").exists()

    # resuming a run that waits at a gate changes nothing
    again = project.cli("resume", "crash")
    assert "Waiting at the 02-interface gate" in again.stdout
    assert project.journal("crash") == journal


def test_step_finished_but_not_checkpointed_is_reused(project, monkeypatch):
    """SIGKILL between the evidence rename and LangGraph's checkpoint: the re-executed node
    finds its attempt complete on disk and reuses it instead of redoing the work."""
    from harness.steps import STEPS
    from harness.steps.base import StepContext, execute_step
    from harness.record.layout import Workspace
    from harness.knowledge.products.features import FeatureSpec
    from harness.record.models import RunInputs

    run = Workspace(project.workspace).run("reuse")
    inputs = RunInputs(
        run_id="reuse",
        feature=FeatureSpec(
            id="f", source="feature_file", name="f", symbols=["sglang.srt.managers.scheduler.Scheduler.process_batch"]
        ),
        plugin=str(project.plugin),
        upstream=str(project.new),
        from_upstream=str(project.old),
        created_at="2026-01-01T00:00:00Z",
    )
    alignment = STEPS[0]

    def context(evidence_dir):
        return StepContext(run, inputs, "01-alignment", 1, None, evidence_dir)

    first = execute_step(alignment, context, run, attempt=1)
    second = execute_step(alignment, context, run, attempt=1)
    assert second == first
    events = [e["event"] for e in run.journal_events()]
    assert events == ["step_started", "step_finished", "step_reused"]


def test_ctrl_c_mid_step_names_the_resume_command(project):
    slow = loopback_runbook(project.root / "slow.yaml", "--latency-ms", "1500")
    project.cli(*project.run_args("--run-id", "cc", runbook=slow))
    approving = subprocess.Popen(project.command("approve", "cc", "--by", "alice"), stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, env=project.env, text=True)
    smoke_log = project.reports("cc") / "evidence/.staging/02-interface.attempt-1/smoke/smoke.jsonl"
    wait_for(lambda: smoke_log.is_file() and smoke_log.stat().st_size > 0, "the smoke test to be under way")
    approving.send_signal(signal.SIGINT)
    _, stderr = approving.communicate(timeout=120)
    assert approving.returncode == 130, stderr
    assert stderr.strip().splitlines()[-1].startswith("harness: interrupted; continue run cc with: harness resume cc"), stderr
    assert project.status("cc")["state"] == "interrupted"
    resumed = project.cli("resume", "cc", subprocess_=True)
    assert "Waiting at the 02-interface gate" in resumed.stdout
