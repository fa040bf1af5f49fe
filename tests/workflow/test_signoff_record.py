"""The sign-off record is the run's journal, not LangGraph's state file: losing, emptying or
corrupting `.harness/state.sqlite` changes no report and no approval; `status` says the resume
state is gone (exit 3), and `harness repair` rebuilds it from the journal so the run goes on."""

from __future__ import annotations

import copy
import json
import shutil

import pytest
from workflow_support import Project

STATE = ".harness/state.sqlite"


def reports_of(workspace, run_id: str) -> dict[str, bytes]:
    root = workspace / "reports" / run_id
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.glob("*.md"))}


def damage(workspace, how: str) -> None:
    state = workspace / STATE
    for side in (state.with_name(state.name + "-wal"), state.with_name(state.name + "-shm")):
        side.unlink(missing_ok=True)
    if how == "deleted":
        state.unlink()
    elif how == "emptied":
        state.write_bytes(b"")
    else:
        state.write_bytes(b"SQLite format 3\x00" + b"\x8f garbage" * 400)


@pytest.fixture(scope="module")
def two_approvals(tmp_path_factory):
    """A run waiting at its third gate after two approvals with notes (built once; each test
    damages a copy of its workspace)."""
    project = Project(tmp_path_factory.mktemp("signoff"))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HARNESS_CACHE_DIR", project.env["HARNESS_CACHE_DIR"])
        patch.setenv("COLUMNS", "200")
        project.cli(*project.run_args("--run-id", "r"))
        project.cli("approve", "r", "--by", "alice", "--note", "landing point agreed")
        project.cli("approve", "r", "--by", "bob", "--override", "--note", "smoke is clean")
        assert project.status("r")["waiting_at"] == "03-operators"
        yield project


@pytest.mark.parametrize("how", ["deleted", "emptied", "garbage"])
def test_a_lost_state_file_changes_no_report_and_repair_brings_the_run_back(two_approvals, tmp_path, how):
    project = copy.copy(two_approvals)
    workspace = tmp_path / "ws"
    shutil.copytree(two_approvals.workspace, workspace)
    project.workspace = workspace  # the run's files name paths relative to the workspace
    before = reports_of(workspace, "r")
    journal = (workspace / ".harness/runs/r/journal.jsonl").read_bytes()

    damage(workspace, how)
    status = project.cli("status", "r", check=False, subprocess_=True)
    assert status.returncode == 3, status.stdout + status.stderr
    assert "resume state gone" in status.stdout and "harness repair r" in status.stdout
    assert "2 approvals; the run waits at the 03-operators gate" in status.stdout
    assert "approved — alice" in status.stdout and "approved — bob" in status.stdout
    assert reports_of(workspace, "r") == before, "a lost state file changed a report"
    as_json = json.loads(project.cli("status", "r", "--json", check=False).stdout)
    assert as_json["resume"]["state"] == ("corrupt" if how == "garbage" else "missing")
    assert [s["gate"]["note"] for s in as_json["steps"][:2]] == ["landing point agreed", "smoke is clean"]
    assert as_json["state"] == "waiting" and as_json["waiting_at"] == "03-operators"

    refused = project.cli("approve", "r", "--by", "carol", check=False)
    assert refused.returncode == 2 and "harness repair r" in refused.stderr
    assert (workspace / ".harness/runs/r/journal.jsonl").read_bytes() == journal, "a refused decision is not recorded"

    repaired = project.cli("repair", "r", subprocess_=True)
    assert "r: rebuilt: rebuilt from the journal: waits at the 03-operators gate" in repaired.stdout
    if how == "garbage":
        assert "moved it aside" in repaired.stdout and list((workspace / ".harness").glob("state.sqlite.corrupt-*"))
    assert project.cli("status", "r").returncode == 0
    assert reports_of(workspace, "r") == before
    assert project.cli("repair", "r").stdout.startswith("r: unchanged: resume state already agrees")

    project.cli("approve", "r", "--by", "carol", "--note", "no fallbacks")
    status = project.status("r")
    assert status["waiting_at"] == "04-accuracy"
    assert [s["gate"]["by"] for s in status["steps"][:3]] == ["alice", "bob", "carol"]
    assert [e["step"] for e in project.journal("r") if e["event"] == "step_started"] == [
        "01-alignment", "02-interface", "03-operators", "04-accuracy"], "nothing ran twice"


def test_a_kill_between_the_decision_and_the_graph_loses_nothing(project):
    """The decision is journaled, then the process dies before LangGraph moves: the journal says
    the gate is decided, so `resume` goes on with the next step instead of asking again."""
    from harness.record.layout import Workspace
    from harness.record.models import GateDecision
    from harness.record.trajectory import decision_event

    project.cli(*project.run_args("--run-id", "k"))
    run = Workspace(project.workspace).run("k")
    step = project.status("k")["steps"][0]
    decision = GateDecision(decision="approve", by="alice", at="2026-01-01T00:00:00Z", attempt=1,
                            evidence_hash=step["evidence_hash"], note="ok")
    run.log("approve", **decision_event(decision, "01-alignment"))  # ...and killed here

    status = project.status("k")
    assert status["state"] == "interrupted" and status["resume"]["state"] == "stale"
    assert status["steps"][0]["gate"]["label"] == "approved"
    assert "Waiting at the 02-interface gate" in project.cli("resume", "k").stdout
    approvals = [e for e in project.journal("k") if e["event"] == "approve"]
    assert len(approvals) == 1, "the gate was not asked again"


def test_repair_says_what_it_cannot_rebuild(project):
    project.cli(*project.run_args("--run-id", "gone"))
    project.cli(*project.run_args("--run-id", "kept"))
    (project.workspace / ".harness/runs/gone/journal.jsonl").unlink()
    (project.workspace / STATE).unlink()
    result = project.cli("repair", check=False)
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert any(line.startswith("gone: failed: cannot rebuild: its journal") for line in lines), lines
    assert "kept: rebuilt: rebuilt from the journal: waits at the 01-alignment gate" in lines


def test_the_journal_alone_says_where_a_run_stands():
    """Decisions count for the attempt they were taken on: a rejection sends a step back until its
    rerun finishes, and a reopening resets the later steps, whose old approvals no longer count."""
    from harness.record.trajectory import fold

    slugs = ["01-a", "02-b", "03-c"]

    def record(slug, attempt, kind="step_finished"):
        return {"event": kind, "step": slug, "attempt": attempt, "verdict": "passed", "report": "r",
                "evidence_dir": "e", "evidence_hash": f"h{attempt}", "finished_at": "t"}

    def decided(kind, slug, attempt, **extra):
        return {"event": kind, "step": slug, "attempt": attempt, "by": "x", "at": "t", "reason": "why", **extra}

    def where(events):
        position = fold(events).position(slugs)
        return position.where, position.step

    events = [record("01-a", 1)]
    assert where(events) == ("at_gate", "01-a")
    events.append(decided("reject", "01-a", 1))
    assert where(events) == ("to_run", "01-a")
    events.append(record("01-a", 2))
    assert where(events) == ("at_gate", "01-a")
    events.append(record("01-a", 2, "step_reused"))  # a re-executed node finding it done decides nothing
    assert where(events) == ("at_gate", "01-a")
    events += [decided("approve", "01-a", 2), record("02-b", 1), decided("approve", "02-b", 1)]
    events.append(record("02-b", 1, "step_reused"))
    assert where(events) == ("to_run", "03-c"), "an approval survives a reuse of the same attempt"
    events += [record("03-c", 1), decided("approve", "03-c", 1), {"event": "run_finished", "at": "t"}]
    assert where(events) == ("finished", None)

    events.append(decided("reopen", "02-b", 1, reset=["03-c"]))
    assert where(events) == ("to_run", "02-b")
    events += [record("02-b", 2), decided("approve", "02-b", 2), record("03-c", 1)]
    trajectory = fold(events)
    assert trajectory.position(slugs).where == "at_gate" and trajectory.decision("03-c") is None, \
        "the approval of the replaced evidence does not count for the rerun"


def test_a_line_torn_by_a_kill_cannot_swallow_the_next_one(tmp_path):
    from harness.record.layout import Workspace

    run = Workspace(tmp_path).run("t")
    run.log("run_started", feature="f")
    with open(run.journal, "a") as journal:
        journal.write('{"at": "2026-01-01T00:00:00Z", "event": "appr')  # killed mid-write
    run.log("run_resumed")
    assert [e["event"] for e in run.journal_events()] == ["run_started", "run_resumed"]
    assert run.trajectory().torn_lines == 1
