"""Bad inputs: each gives one clear line on stderr and a non-zero exit, never a traceback."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from workflow_support import one_line_error


def test_unknown_feature(project):
    args = project.run_args()
    args[args.index("kv-pool")] = "no-such-feature"
    one_line_error(project.cli(*args, check=False, subprocess_=True), "unknown feature 'no-such-feature'")


def test_plugin_path_that_is_not_a_plugin(project):
    not_plugin = project.root / "not-a-plugin"
    not_plugin.mkdir()
    (not_plugin / "pyproject.toml").write_text('[project]\nname = "x"\n')
    args = project.run_args()
    args[args.index(str(project.plugin))] = str(not_plugin)
    one_line_error(project.cli(*args, check=False, subprocess_=True), "is not an SGLang plugin")


@pytest.mark.parametrize("command", [["status", "nope"], ["approve", "nope", "--by", "a"], ["resume", "nope"]])
def test_unknown_run_id(project, command):
    in_process = command[0] != "status"  # one real process is enough to see main() print it
    one_line_error(project.cli(*command, check=False, subprocess_=not in_process), "unknown run id 'nope'")


def test_gate_misuse_and_corrupt_state(project):
    project.cli(*project.run_args("--run-id", "r"))
    # changed evidence cannot be approved: the reviewer would sign off something else
    step_json = project.reports("r") / "evidence/01-alignment/step.json"
    original = step_json.read_bytes()
    step_json.write_bytes(original + b" ")
    refused = project.cli("approve", "r", "--by", "a", check=False)
    one_line_error(refused, "changed since the step produced it")
    step_json.write_bytes(original)
    one_line_error(project.cli("reject", "r", "--by", "a", "--reason", " ", check=False), "--reason")
    one_line_error(project.cli(*project.run_args("--run-id", "r"), check=False), "already exists")

    project.cli("reject", "r", "--by", "a", "--reason", "again")  # a valid decision still works

    state = project.workspace / ".harness/state.sqlite"
    state.write_bytes(b"this is not a database" * 100)
    one_line_error(project.cli("approve", "r", "--by", "a", check=False, subprocess_=True),
                   "resume state is gone", "is corrupt", "harness repair r")


def _read_only_prefix(directory: Path) -> list[str] | None:
    """A command prefix under which `directory` is read-only, or None where this machine cannot
    make it so. A normal user gets chmod; root ignores permissions, so root gets a private
    read-only bind mount (unshare -m) that only the harness process sees."""
    if os.geteuid() != 0:
        for path in [directory, *directory.rglob("*")]:
            path.chmod(0o555 if path.is_dir() else 0o444)
        return []
    prefix = ["unshare", "-m", "--", "sh", "-c",
              'mount --bind "$0" "$0" && mount -o remount,ro,bind "$0" "$0" && exec "$@"', str(directory)]
    if shutil.which("unshare") is None or subprocess.run([*prefix, "true"], capture_output=True).returncode != 0:
        return None
    return prefix


def test_read_only_reports_are_one_line_and_leave_the_run_intact(project):
    project.cli(*project.run_args("--run-id", "ro"))
    reports = project.workspace / "reports"
    journal = project.workspace / ".harness/runs/ro/journal.jsonl"
    before = journal.read_bytes()
    prefix = _read_only_prefix(reports)
    if prefix is None:
        pytest.skip("cannot make a directory read-only here (root without mount namespaces)")
    try:
        # (`status` still prints, saying it could not re-render: test_record_security)
        for args in (("approve", "ro", "--by", "alice"), project.run_args("--run-id", "ro2")):
            proc = subprocess.run([*prefix, *project.command(*args)], capture_output=True, text=True, env=project.env,
                                  timeout=240)
            assert proc.returncode == 2, proc.stderr
            one_line_error(proc)
            assert "Read-only file system" in proc.stderr or "Permission denied" in proc.stderr, proc.stderr
    finally:
        for path in [reports, *reports.rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)
    assert journal.read_bytes() == before, "nothing was recorded"
    assert not (project.workspace / ".harness/runs/ro2").exists(), "no phantom run"
    project.cli("approve", "ro", "--by", "alice")  # the run goes on once it can write
    assert project.status("ro")["waiting_at"] == "02-interface"


def test_a_run_refused_for_a_corrupt_state_file_leaves_no_phantom_run(project):
    state = project.workspace / ".harness/state.sqlite"
    state.parent.mkdir(parents=True)
    state.write_bytes(b"not a database" * 200)
    one_line_error(project.cli(*project.run_args("--run-id", "ph"), check=False, subprocess_=True),
                   "state file", "is corrupt", "harness repair")
    assert not (project.workspace / ".harness/runs/ph").exists()
    assert "No runs in" in project.cli("status").stdout


def test_a_relative_upstream_works_from_another_directory(project, monkeypatch):
    monkeypatch.chdir(project.root)
    args = project.run_args("--run-id", "rel")
    args[args.index(str(project.new))] = "upstream-new"
    args[args.index(str(project.old))] = "./upstream-old"
    project.cli(*args)
    inputs = project.status("rel")["inputs"]
    assert (inputs["upstream"], inputs["from_upstream"]) == (str(project.new), str(project.old))
    monkeypatch.chdir("/")
    approved = project.cli("approve", "rel", "--by", "alice", subprocess_=True)
    assert "Waiting at the 02-interface gate" in approved.stdout


def test_changed_evidence_of_a_pending_step_fails_status(project):
    project.cli(*project.run_args("--run-id", "t"))
    assert project.cli("status", "t").returncode == 0
    (project.reports("t") / "evidence/01-alignment/facts.json").write_text("{}\n")
    proc = project.cli("status", "t", check=False)
    assert proc.returncode == 1 and "evidence changed since the step produced it" in proc.stdout
    assert project.cli("status", check=False).returncode == 1


def test_a_full_disk_mid_step_is_one_line_and_the_run_resumes(project):
    """The reports disk fills up while a step writes its evidence: one line, exit 2, and the run
    stops mid-step with its record intact, to be resumed once there is room."""
    reports = project.workspace / "reports"
    reports.mkdir()
    fill = 'mount -t tmpfs -o size=64k tmpfs "$0" && (cat /dev/zero > "$0/filler" 2>/dev/null; true) && exec "$@"'
    prefix = ["unshare", "-m", "--", "sh", "-c", fill, str(reports)]
    if os.geteuid() != 0 or shutil.which("unshare") is None or \
            subprocess.run([*prefix, "true"], capture_output=True).returncode != 0:
        pytest.skip("needs root with mount namespaces to fill a disk")
    proc = subprocess.run([*prefix, *project.command(*project.run_args("--run-id", "full"))], capture_output=True,
                          text=True, env=project.env, timeout=240)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    last = proc.stderr.strip().splitlines()[-1]  # after the progress line of the step it stopped in
    assert last.startswith("harness: error: cannot write") and "No space left on device" in last, proc.stderr
    assert "harness resume" in last
    status = project.status("full")
    assert status["state"] == "interrupted"
    assert "Waiting at the 01-alignment gate" in project.cli("resume", "full").stdout


@pytest.mark.parametrize("args,fragments", [
    (["check", "--bogus"], ["No such option: --bogus", "(see `harness check --help`)"]),
    (["check", "--plugin", "."], ["Missing option '--upstream'", "(see `harness check --help`)"]),
    (["check", "--plugin", ".", "--upstream"], ["'--upstream' requires an argument"]),
    (["nosuch"], ["No such command 'nosuch'", "(see `harness --help`)"]),
])
def test_a_usage_error_is_one_line(project, args, fragments):
    """Click's usage errors read like every other refusal: one line, exit 2 (not a boxed block)."""
    def harness(*argv: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "harness", *argv], capture_output=True, text=True, env=project.env,
                              cwd=project.root, timeout=120, check=False)

    proc = harness(*args)
    one_line_error(proc, *fragments)
    assert proc.returncode == 2
    proc = harness("--json", *args) if args[-1] == "--upstream" else harness(*args, "--json")
    assert proc.returncode == 2 and json.loads(proc.stdout.splitlines()[-1])["exit"] == 2


def test_the_package_folder_instead_of_the_repo_is_named_with_the_fix(project):
    """`--plugin` given the package folder: `run` refuses naming the repo to pass; `check` goes on
    (a plugin without packaging is read by its imports) but says the entry points are left out."""
    package = project.plugin / "xdev_plugin"
    args = project.run_args()
    args[args.index(str(project.plugin))] = str(package)
    one_line_error(project.cli(*args, check=False, subprocess_=True), "is not an SGLang plugin",
                   f"its project {project.plugin} declares them: pass --plugin {project.plugin}")
    checked = subprocess.run([sys.executable, "-m", "harness", "check", "--plugin", str(package), "--upstream", str(project.new)],
                             capture_output=True, text=True, env={**project.env, "COLUMNS": "400"}, cwd=project.root,
                             timeout=120, check=False)
    assert f"note: {package} is inside the project {project.plugin}" in checked.stderr, checked.stderr
