"""A run is pinned to the upstreams it started on: a PATH or PATH@branch spec that changes
under it stops later processes with one clear line."""

from __future__ import annotations

import json
import shutil
import subprocess

from workflow_support import upstream_files, write_tree


def _one_line(proc) -> str:
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("harness: error: "), proc.stderr
    return lines[0]


def test_path_upstream_edited_under_a_run_is_refused(project):
    project.cli(*project.run_args("--run-id", "pin"))
    run_json = json.loads((project.workspace / ".harness/runs/pin/run.json").read_text())
    new_pin, old_pin = run_json["upstream_pin"], run_json["from_pin"]
    assert new_pin["spec"] == str(project.new) and new_pin["fingerprint"].startswith("content-")
    assert old_pin["spec"] == str(project.old) and old_pin["fingerprint"] != new_pin["fingerprint"]
    summary = (project.reports("pin") / "summary.md").read_text()
    assert f"--upstream {project.new} pinned to {new_pin['fingerprint']}" in summary
    assert f"--from {project.old} pinned to {old_pin['fingerprint']}" in summary

    scheduler = project.new / "sglang/srt/managers/scheduler.py"
    original = scheduler.read_text()
    scheduler.write_text(original + "\n\ndef added():\n    return 1\n")
    line = _one_line(project.cli("approve", "pin", "--by", "alice", check=False, subprocess_=True))
    assert f"--upstream {project.new} changed under this run" in line
    assert new_pin["fingerprint"] in line
    now = line.split("resolves to ", 1)[1].split(" ", 1)[0].rstrip(";")
    assert now.startswith("content-") and now != new_pin["fingerprint"]
    assert project.status("pin")["waiting_at"] == "01-alignment", "nothing was decided"

    scheduler.write_text(original)  # the same content again (a new mtime does not matter)
    project.cli("approve", "pin", "--by", "alice", subprocess_=True)
    assert project.status("pin")["waiting_at"] == "02-interface"


def test_git_branch_that_moves_under_a_run_is_refused(project):
    repo = write_tree(project.root / "sglang-repo", upstream_files(new=True))

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                              env={**project.env, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@x",
                                   "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@x"}).stdout.strip()

    git("init", "-q", "-b", "main")
    git("add", ".")
    git("commit", "-q", "-m", "release")
    first = git("rev-parse", "HEAD")
    args = project.run_args("--run-id", "branch")
    args[args.index(str(project.new))] = f"{repo}@main"
    project.cli(*args)
    pin = json.loads((project.workspace / ".harness/runs/branch/run.json").read_text())["upstream_pin"]
    assert pin["git_commit"] == first and pin["fingerprint"].startswith("git-")

    shutil.copy(project.old / "sglang/srt/managers/scheduler.py", repo / "sglang/srt/managers/scheduler.py")
    git("commit", "-q", "-am", "scheduler: revert")
    line = _one_line(project.cli("approve", "branch", "--by", "alice", check=False, subprocess_=True))
    assert f"--upstream {repo}@main changed under this run" in line
    assert f"{pin['fingerprint']} (git commit {first[:12]})" in line
    assert git("rev-parse", "HEAD")[:12] in line
