"""The plugin commit a run records (issue 35, item 6): a workspace inside the plugin repo (the
bot runs `harness upgrade --plugin .`) fills reports/ and .harness/ there; that is harness's
output, not an uncommitted change of the plugin. A real edit still marks it."""

from __future__ import annotations

import shutil

import git

from harness.cli.common import plugin_commit


def test_harness_output_inside_the_plugin_repo_is_not_an_uncommitted_change(tmp_path):
    repo = git.Repo.init(tmp_path / "plugin")
    root = tmp_path / "plugin"
    (root / "acme").mkdir()
    (root / "acme" / "__init__.py").write_text("X = 1\n")
    repo.index.add(["acme/__init__.py"])
    head = repo.index.commit("plugin").hexsha[:12]
    (root / "reports" / "run-1").mkdir(parents=True)
    (root / "reports" / "run-1" / "summary.md").write_text("# run\n")
    (root / ".harness" / "runs").mkdir(parents=True)
    (root / ".harness" / "state.sqlite").write_bytes(b"x")
    assert plugin_commit(root, root) == head
    # the same outputs in a workspace elsewhere, or no workspace named: the repo's own files decide
    assert plugin_commit(root, tmp_path / "elsewhere") == f"{head} (with uncommitted changes: .harness/, reports/)"
    (root / "reports").rename(tmp_path / "moved")
    shutil.rmtree(root / ".harness")
    assert plugin_commit(root, root) == head
    (root / "acme" / "__init__.py").write_text("X = 2\n")
    assert plugin_commit(root, root) == f"{head} (with uncommitted changes: acme/__init__.py)"


def test_a_run_in_the_plugin_checkout_leaves_git_status_clean_of_its_state(project):
    """The run state harness keeps in .harness/, and a reports/ it creates, are ignored by git
    where they are written (.gitignore files it writes, a team's own kept); lessons under
    .harness/skills/ are not ignored: the knowledge step commits them."""
    repo = git.Repo.init(project.workspace)
    repo.git.add("-A")  # the team's own files (the feature file): committed
    repo.git.commit("-qm", "workspace", "--author", "a <a@b>")
    project.cli(*project.run_args("--run-id", "clean"))
    ignore = project.workspace / ".harness" / ".gitignore"
    assert ignore.is_file()
    untracked = repo.git.status("--porcelain", "-uall").splitlines()
    assert untracked == [], untracked  # run state, reports (a reports/ harness made) and the ignore files themselves
    lesson = project.workspace / ".harness" / "skills" / "interface" / "LESSONS.md"
    lesson.parent.mkdir(parents=True)
    lesson.write_text("- a lesson\n")
    assert "?? .harness/skills/" in repo.git.status("--porcelain", "-uall", "--", ".harness")
    ignore.write_text("# the team's\n")
    project.cli("approve", "clean", "--by", "alice")
    assert ignore.read_text() == "# the team's\n"
    # a reports/ the team already has is theirs: no ignore file is added to it
    from harness.record.layout import Workspace

    other = project.root / "team-ws"
    (other / "reports").mkdir(parents=True)
    Workspace(other).make_reports_dir()
    assert not (other / "reports" / ".gitignore").exists()


def test_status_lists_the_next_command_whole_at_any_width(project):
    """The list's next commands are whole lines under the table (a run id is pasted, never cut to a
    column), and a step that failed is approved only with --override and a note: the line says so."""
    import subprocess

    long_id = "upgrade-0.5.23-init-threads-binding-990669f3c2a1b7d4e8"
    project.cli(*project.run_args("--run-id", long_id))
    env = {**project.env, "COLUMNS": "60"}
    listed = subprocess.run(project.command("status"), capture_output=True, text=True, env=env, timeout=120)
    assert listed.returncode == 0, listed.stderr
    assert f"  harness approve {long_id} --by NAME (or reject --reason)" in listed.stdout.splitlines(), listed.stdout
    project.cli("approve", long_id, "--by", "alice")
    assert project.status(long_id)["steps"][1]["verdict"] == "failed"  # the fixture's kv-pool override breaks
    listed = subprocess.run(project.command("status"), capture_output=True, text=True, env=env, timeout=120)
    assert f'  harness approve {long_id} --by NAME --override --note "why" (or reject --reason)' in listed.stdout.splitlines()
