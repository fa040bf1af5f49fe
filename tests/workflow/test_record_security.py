"""The run record is evidence (issue 17): run.json, the runbook and the journal cannot change
under a run unnoticed; an approval's commit survives a kill right after the approval; a planted
process record kills nothing; and malformed journal lines, a directory as the state file, a
read-only reports dir and a run id with a newline each get one line, never a traceback."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import git
import pytest
from agent_scripts import kv_port, write_up
from real_releases import real_releases
from test_agent import RUN as AGENT_RUN
from test_agent import Example
from test_errors import _read_only_prefix
from workflow_support import one_line_error

from harness.record.processes import ProcessRecord, ProcessRegistry
from harness.testing.llm import ScriptedLLM
from harness.util.processes import marked_env
from harness.util.processes import start_time as process_start_time

RUN = "rec"


def _started(project) -> Path:
    project.cli(*project.run_args("--run-id", RUN))
    return project.workspace / ".harness" / "runs" / RUN


def _status(project):
    return project.cli("status", RUN, check=False)


def _refused(project, fragment: str) -> None:
    """approve, reject and resume each refuse with one line holding `fragment`; nothing is decided."""
    journal = (project.workspace / ".harness" / "runs" / RUN / "journal.jsonl").read_bytes()
    for args in (("approve", RUN, "--by", "eve"), ("reject", RUN, "--by", "eve", "--reason", "x"), ("resume", RUN)):
        one_line_error(project.cli(*args, check=False), fragment)
    assert (project.workspace / ".harness" / "runs" / RUN / "journal.jsonl").read_bytes() == journal


# --------------------------------------------------------------------------- A: run.json, runbook, journal


def test_run_json_edited_at_a_gate_is_refused_and_shown_by_status(project):
    run_dir = _started(project)
    run_json = run_dir / "run.json"
    original = run_json.read_text()
    first = json.loads((run_dir / "journal.jsonl").read_text().splitlines()[0])
    assert first["event"] == "run_started" and first["pins"]["run.json"].startswith("sha256:")
    assert json.loads(original)["journal"] == "chained"

    edited = json.loads(original)
    edited["runbook"] = str(project.root / "other.yaml")
    edited["agent"] = {"base_url": "http://attacker.invalid/v1", "model": "m", "source": "x", "api_key_env": "AWS_KEY"}
    run_json.write_text(json.dumps(edited, indent=2) + "\n")

    status = _status(project)
    assert status.returncode == 1, status.stdout
    assert f"{run_json} changed under this run" in status.stdout.replace("\n", "")
    assert first["pins"]["run.json"] in status.stdout.replace("\n", "")
    assert project.cli("status", RUN, "--json", check=False).returncode == 1
    _refused(project, f"{run_json} changed under this run: it hashed to {first['pins']['run.json']}")

    run_json.write_text(original)
    assert _status(project).returncode == 0
    project.cli("approve", RUN, "--by", "ana")
    assert project.status(RUN)["waiting_at"] == "02-interface"


def test_runbook_edited_under_a_run_is_refused(project):
    _started(project)
    original = project.runbook.read_text()
    project.runbook.write_text(original.replace("startup_timeout_s: 20", "startup_timeout_s: 21"))
    assert _status(project).returncode == 1
    _refused(project, f"{project.runbook} changed under this run")
    project.runbook.write_text(original)
    project.cli("approve", RUN, "--by", "ana")


@pytest.mark.parametrize("how", ["edit", "remove", "insert", "append", "strip"])
def test_a_journal_line_edited_removed_inserted_appended_or_unchained_breaks_the_chain(project, how):
    run_dir = _started(project)
    journal = run_dir / "journal.jsonl"
    lines = journal.read_text().splitlines()
    assert all("prev" in json.loads(line) for line in lines)
    approval = {"at": "2026-01-01T00:00:00Z", "event": "approve", "step": "01-alignment", "by": "mallory",
                "attempt": 1, "evidence_hash": json.loads(lines[-1]).get("evidence_hash")}
    if how == "edit":
        edited = json.loads(lines[1])
        edited["verdict"] = "passed" if edited.get("verdict") != "passed" else "failed"
        lines[1] = json.dumps(edited, sort_keys=True)
        where = "line 3 does not follow line 2"
    elif how == "remove":
        del lines[1]
        where = "line 2 does not follow line 1"
    elif how == "insert":
        lines.insert(1, json.dumps({**approval, "prev": json.loads(lines[1])["prev"]}, sort_keys=True))
        where = "line 3 does not follow line 2"
    elif how == "append":  # an approval by anyone who can write the file
        lines.append(json.dumps({**approval, "prev": "0" * 64}, sort_keys=True))
        where = f"line {len(lines)} does not follow line {len(lines) - 1}"
    else:  # strip every chain field: run.json still says the journal is chained
        lines = [json.dumps({k: v for k, v in json.loads(line).items() if k != "prev"}, sort_keys=True)
                 for line in lines]
        where = "line 1 carries no chain hash"
    journal.write_text("\n".join(lines) + "\n")

    status = _status(project)
    assert status.returncode == 1, status.stdout
    assert "journal's chain is broken" in status.stdout and where in status.stdout.replace("\n", " "), status.stdout
    _refused(project, "journal's chain is broken")
    assert "cannot rebuild" in project.cli("repair", RUN, check=False).stdout


def test_a_torn_last_line_then_a_new_line_keeps_the_chain(project):
    run_dir = _started(project)
    journal = run_dir / "journal.jsonl"
    with journal.open("a") as fh:
        fh.write('{"at": "2026-01-01T00:00:00Z", "event": "appr')  # a kill mid-write
    project.cli("approve", RUN, "--by", "ana")
    assert _status(project).returncode == 0
    assert project.status(RUN)["torn_journal_lines"] == 1


def test_a_legacy_journal_without_chain_or_pins_is_still_read(project):
    run_dir = _started(project)
    journal, run_json = run_dir / "journal.jsonl", run_dir / "run.json"
    legacy = []
    for line in journal.read_text().splitlines():
        event = json.loads(line)
        event.pop("prev")
        event.pop("pins", None)
        legacy.append(json.dumps(event, sort_keys=True))
    journal.write_text("\n".join(legacy) + "\n")
    inputs = json.loads(run_json.read_text())
    del inputs["journal"]
    run_json.write_text(json.dumps(inputs, indent=2))
    assert _status(project).returncode == 0
    project.cli("approve", RUN, "--by", "ana")
    assert "prev" not in json.loads(journal.read_text().splitlines()[-1]), "a legacy journal stays legacy"
    assert project.status(RUN)["waiting_at"] == "02-interface"


# --------------------------------------------------------------------------- D: robustness


NOT_EVENTS = ["[]", "1", '"text"', '{"event": "approve"}', '{"event": "step_finished", "step": 5}',
              '{"event": "approve", "step": "01-alignment", "by": "x", "at": "t", "attempt": 1, "reset": 3}',
              '{"event": "run_finished"}']


@pytest.mark.parametrize("line", NOT_EVENTS)
def test_journal_lines_that_are_json_but_not_events_never_traceback(project, line):
    run_dir = _started(project)
    journal = run_dir / "journal.jsonl"
    # in a legacy journal they are skipped and counted ...
    legacy = [json.dumps({k: v for k, v in json.loads(raw).items() if k not in ("prev", "pins")})
              for raw in journal.read_text().splitlines()]
    journal.write_text("\n".join([*legacy, line]) + "\n")
    inputs = json.loads((run_dir / "run.json").read_text())
    del inputs["journal"]
    (run_dir / "run.json").write_text(json.dumps(inputs, indent=2))
    status = _status(project)
    assert status.returncode == 0 and "1 torn journal line(s) ignored" in status.stdout, status.stdout
    assert project.status(RUN)["waiting_at"] == "01-alignment"
    assert project.cli("resume", RUN, check=False).returncode == 0
    # ... and in a chained journal they break the chain: one line, never a traceback
    run_dir2 = project.workspace / ".harness" / "runs" / "chained"
    project.cli(*project.run_args("--run-id", "chained"))
    with (run_dir2 / "journal.jsonl").open("a") as fh:
        fh.write(line + "\n")
    assert project.cli("status", "chained", check=False).returncode == 1
    one_line_error(project.cli("approve", "chained", "--by", "ana", check=False), "journal's chain is broken")


def test_a_directory_as_the_state_file_is_one_line_and_repair_moves_it_aside(project):
    _started(project)
    state = project.workspace / ".harness" / "state.sqlite"
    state.unlink()
    state.mkdir()
    (state / "keep").write_text("mine")
    one_line_error(project.cli("approve", RUN, "--by", "ana", check=False, subprocess_=True),
                   f"{state} is corrupt (not a file)", f"harness repair {RUN}")
    status = project.cli("status", RUN, check=False, subprocess_=True)
    assert status.returncode == 3 and "resume state gone" in status.stdout, status.stdout + status.stderr
    repaired = project.cli("repair", subprocess_=True)
    assert "moved it aside" in repaired.stdout and f"{RUN}: rebuilt" in repaired.stdout
    [aside] = state.parent.glob("state.sqlite.corrupt-*")
    assert (aside / "keep").read_text() == "mine", "nothing of it is lost"
    project.cli("approve", RUN, "--by", "ana")


def test_status_with_read_only_reports_still_prints(project):
    _started(project)
    reports = project.workspace / "reports"
    prefix = _read_only_prefix(reports)
    if prefix is None:
        pytest.skip("cannot make a directory read-only here (root without mount namespaces)")
    try:
        status = subprocess.run([*prefix, *project.command("status", RUN)], check=False, capture_output=True,
                                text=True, env=project.env, timeout=240)
    finally:
        for path in [reports, *reports.rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)
    assert status.returncode == 0, status.stderr
    assert "waiting at 01-alignment gate" in status.stdout
    assert "could not re-render the reports" in status.stdout.replace("\n", "")


def test_a_run_id_with_a_trailing_newline_is_refused(project):
    one_line_error(project.cli(*project.run_args("--run-id", "ok\n"), check=False), "invalid run id 'ok\\n'")
    assert not (project.workspace / ".harness" / "runs").exists() or not list(
        (project.workspace / ".harness" / "runs").iterdir())


# --------------------------------------------------------------------------- C: planted process records


def test_a_planted_process_record_kills_no_process_of_the_user(project):
    _started(project)
    bystander = subprocess.Popen(["sleep", "60"], start_new_session=True)
    owner = subprocess.Popen([sys.executable, "-c", "pass"])
    owner_start = process_start_time(owner.pid)
    owner.wait()
    try:
        processes = project.workspace / ".harness" / "runs" / RUN / "processes"
        processes.mkdir(exist_ok=True)
        for marker in (None, "0" * 32):
            (processes / f"{bystander.pid}.json").write_text(ProcessRecord(
                role="engine", command=["sleep", "60"], pid=bystander.pid,
                start_time=process_start_time(bystander.pid), owner_pid=owner.pid, owner_start_time=owner_start,
                started_at="2026-01-01T00:00:00Z", marker=marker).model_dump_json())
            project.cli("status", RUN, subprocess_=True)
            time.sleep(0.2)
            assert bystander.poll() is None, "a planted record killed an unrelated process"
    finally:
        bystander.kill()
        bystander.wait()


# --------------------------------------------------------------------------- B: an approval's commit survives a kill


_KILL_AFTER_APPROVE = textwrap.dedent("""
    import os, sys
    from harness.record.layout import RunLayout
    logged = RunLayout.log

    def log(self, event, **fields):
        logged(self, event, **fields)
        if event == "approve":
            os._exit(137)  # SIGKILL right after the approval is on disk

    RunLayout.log = log
    from harness.cli import main
    sys.argv = ["harness", *sys.argv[1:]]
    main()
""")


def test_a_kill_right_after_an_approval_still_commits_the_approved_patch(tmp_path):
    real_releases("sglang==0.5.17", "sglang==0.5.23")  # the agent example's upstreams (skips when unreachable)
    example = Example(tmp_path)
    with ScriptedLLM(write_up("landing points") + kv_port("first try")) as llm:
        example.start(llm.base_url)
        killed = subprocess.run([sys.executable, "-c", _KILL_AFTER_APPROVE, "approve", AGENT_RUN, "--by", "ana",
                                 "--override", "--note", "the port", "--workspace", str(example.workspace)],
                                check=False, capture_output=True, text=True, env=example.env, timeout=240)
    assert killed.returncode == 137, killed.stderr
    approve = [e for e in example.journal(AGENT_RUN) if e["event"] == "approve"][-1]
    assert approve["step"] == "02-interface" and approve["commit"] == "pending"
    status = example.cli("status", AGENT_RUN)
    assert "the approved patch of 02-interface is not committed yet" in status.stdout

    example.cli("resume", AGENT_RUN)
    branch = f"harness/{AGENT_RUN}/interface-1"
    repo = git.Repo(example.plugin)
    assert "approved by ana" in repo.commit(branch).message
    done = [e for e in example.journal(AGENT_RUN) if e["event"] == "commit_done"]
    assert [(d["step"], d["attempt"], d["error"]) for d in done] == [("02-interface", 1, None)]
    assert done[0]["commit"] == repo.commit(branch).hexsha
    assert example.status(AGENT_RUN)["commits_owed"] == []


def test_members_of_a_group_whose_leader_is_gone_are_signalled_only_with_the_marker(tmp_path):
    # The leader (started as harness starts processes) forks a worker that keeps the marker and
    # one started without it (anything the group id now names that harness cannot prove is its own).
    leader = subprocess.Popen([sys.executable, "-c", textwrap.dedent("""
        import os, subprocess, sys
        sleep = [sys.executable, "-c", "import time; time.sleep(60)"]
        marked = subprocess.Popen(sleep)
        env = {k: v for k, v in os.environ.items() if k != "HARNESS_PROCESS"}
        unmarked = subprocess.Popen(sleep, env=env)
        print(marked.pid, unmarked.pid, flush=True)
        sys.stdin.read()
    """)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, start_new_session=True, env=marked_env())
    marked, unmarked = map(int, leader.stdout.readline().split())
    registry = ProcessRegistry(tmp_path)
    record = registry.add(leader, "engine", ["leader"])
    owner = subprocess.Popen([sys.executable, "-c", "pass"])
    owner_start = process_start_time(owner.pid)
    owner.wait()
    (tmp_path / f"{leader.pid}.json").write_text(
        record.model_copy(update={"owner_pid": owner.pid, "owner_start_time": owner_start}).model_dump_json())
    leader.stdin.close()
    leader.wait()
    try:
        [stopped] = registry.sweep()
        assert stopped.pid == leader.pid
        deadline = time.monotonic() + 10  # bounded poll: SIGKILL is delivered asynchronously
        while Path(f"/proc/{marked}").exists() and "Z" not in Path(f"/proc/{marked}/stat").read_text().split()[2]:
            assert time.monotonic() < deadline, "the marked worker survived"
            time.sleep(0.05)
        assert Path(f"/proc/{unmarked}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z", \
            "a member without the marker was signalled"
    finally:
        for pid in (marked, unmarked):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
