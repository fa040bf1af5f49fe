"""A runbook for a run that has none (issue 35, item 4): `harness run` without --runbook stops its
served steps at "not run: no runbook given"; `approve --runbook F` (or `resume --runbook F`) gives
the steps still to run an engine, pinned like a runbook given at the start. Another runbook, or
the attached one edited afterwards, is refused in one line. `harness runbook init` writes one to
start from, for the plugin's engine and declared release."""

from __future__ import annotations

import subprocess
import sys

from workflow_support import REPO_ROOT, loopback_runbook, one_line_error

from harness.evidence.inputs import check_runbook


def _args(project) -> list[str]:
    args = project.run_args("--run-id", "late")
    at = args.index("--runbook")
    return args[:at] + args[at + 2:]  # the same run, started without a runbook


def test_a_runbook_given_at_the_first_gate_serves_the_later_steps(project):
    project.cli(*_args(project))
    assert project.status("late")["waiting_at"] == "01-alignment"
    runbook = loopback_runbook(project.root / "later.yaml")
    project.cli("approve", "late", "--by", "alice", "--runbook", str(runbook))
    status = project.status("late")
    assert status["waiting_at"] == "02-interface"
    checks = {c["name"]: c["status"] for c in status["steps"][1]["checks"]}
    assert checks.get("smoke.responses") == "passed", checks  # the engine the runbook names really served
    assert project.journal("late")[-1]["event"] != "runbook_attached"  # the decision and the step came after it
    attached = [e for e in project.journal("late") if e["event"] == "runbook_attached"]
    assert len(attached) == 1 and attached[0]["runbook"] == str(runbook) and str(runbook) in attached[0]["pins"]

    # the same runbook again is fine; another is refused, and so is the attached one edited
    other = loopback_runbook(project.root / "other.yaml")
    one_line_error(project.cli("resume", "late", "--runbook", str(other), check=False, subprocess_=True),
                   f"run late already has the runbook {runbook}", "start a new run")
    assert project.cli("resume", "late", "--runbook", str(runbook), check=False).returncode == 0
    runbook.write_text(runbook.read_text() + "# edited\n")
    one_line_error(project.cli("approve", "late", "--by", "alice", check=False, subprocess_=True),
                   f"{runbook} changed under this run")


def test_resume_gives_a_waiting_run_its_runbook(project):
    project.cli(*_args(project))
    runbook = loopback_runbook(project.root / "later.yaml")
    bad = project.root / "bad.yaml"
    bad.write_text("name: x\nserver: [\n")
    one_line_error(project.cli("resume", "late", "--runbook", str(bad), check=False, subprocess_=True), "bad.yaml")
    assert not [e for e in project.journal("late") if e["event"] == "runbook_attached"]  # nothing recorded
    project.cli("resume", "late", "--runbook", str(runbook))
    project.cli("approve", "late", "--by", "alice")
    checks = {c["name"]: c["status"] for c in project.status("late")["steps"][1]["checks"]}
    assert checks.get("smoke.responses") == "passed", checks


def test_runbook_init_writes_a_runbook_the_steps_accept_for_the_plugins_engine(project, tmp_path):
    tmp_path = tmp_path / "team"
    tmp_path.mkdir()

    def init(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "harness", "runbook", "init", *args], capture_output=True, text=True,
                              env=project.env, cwd=tmp_path, timeout=120, check=False)

    written = init("--plugin", str(project.plugin))
    assert written.returncode == 0, written.stderr
    runbook = tmp_path / "runbook.yaml"
    assert check_runbook(runbook, "sglang").server.command.startswith("python -m sglang.launch_server")
    assert "TODO" in runbook.read_text() and f"--runbook {runbook.name}" in runbook.read_text()
    one_line_error(init("--plugin", str(project.plugin)), f"{runbook} exists; pass --force")
    vllm = init("--plugin", str(REPO_ROOT / "tests/fixtures/vllm_tiny"), "--out", "vllm.yaml")
    assert "vLLM runbook for vllm==0.22.1 (declared in pyproject.toml:4)" in vllm.stdout, vllm.stderr
    assert check_runbook(tmp_path / "vllm.yaml", "vllm").environment.engine_version == "0.22.1"
    # a run started without one takes it at its first gate, once its placeholders are filled in
    project.cli(*_args(project))
    refused = project.cli("resume", "late", "--runbook", str(runbook), check=False)
    assert refused.returncode != 0 and "is still the template's placeholder" in refused.stderr, refused.stderr
    runbook.write_text(runbook.read_text().replace("/models/TODO", "/models/tiny").replace('"TODO"', '"0.5.17"')
                       .replace("TODO", "cpu"))
    project.cli("resume", "late", "--runbook", str(runbook))
    assert [e["runbook"] for e in project.journal("late") if e["event"] == "runbook_attached"] == [str(runbook)]


def test_a_runbook_whose_server_needs_what_is_not_installed_says_so_at_start_and_serves_nothing(project):
    """`server.requires` unmet here (a missing distribution, a version outside the specifier):
    the run says so when it starts, and every served step is "not run" with the pip line, with
    no engine started — not a failed server start that reads as the plugin's fault."""
    import yaml

    runbook = loopback_runbook(project.root / "needs.yaml")
    data = yaml.safe_load(runbook.read_text())
    data["server"]["requires"] = ["pytest", "no-such-distribution-zz>=1", "pytest<1"]
    runbook.write_text(yaml.safe_dump(data))
    started = project.cli(*project.run_args("--run-id", "needs", runbook=runbook))
    line = ("the runbook's server needs pytest, no-such-distribution-zz>=1, pytest<1, not installed here (missing "
            "no-such-distribution-zz>=1, pytest<1); install it with pip install 'no-such-distribution-zz>=1' 'pytest<1'")
    assert f'Served steps will say "not run": {line}' in " ".join(started.stdout.split()), started.stdout
    project.cli("approve", "needs", "--by", "alice")
    step = project.status("needs")["steps"][1]
    smoke = [c for c in step["checks"] if c["name"].startswith(("smoke.", "server.", "interface.smoke"))]
    assert [(c["name"], c["status"], c["reason"]) for c in smoke] == [("interface.smoke", "not_run", line)], smoke
    evidence = project.workspace / "reports" / "needs" / "evidence" / "02-interface"
    assert not (evidence / "server" / "server.json").exists()  # nothing was started


def test_a_requires_that_is_not_a_pip_requirement_is_refused_with_its_line(project):
    runbook = loopback_runbook(project.root / "bad-req.yaml")
    runbook.write_text(runbook.read_text().replace("  model: loopback-model\n", "  model: loopback-model\n  requires: ['harness[serve']\n"))
    one_line_error(project.cli(*project.run_args("--run-id", "bad", runbook=runbook), check=False, subprocess_=True),
                   "bad-req.yaml:", "requires", "is not a pip requirement")
