"""A run records the plugin as `<commit> (with uncommitted changes: …)` naming what is uncommitted
(the first few paths `git status` gives, then how many more), so the report's plugin line shows
a user it is, say, the runbook.yaml they just wrote, not an edit of the plugin's code."""

from __future__ import annotations

import git

from harness.cli.common import plugin_commit


def _repo(root):
    repo = git.Repo.init(root)
    for name in ("acme/__init__.py", "acme/ops.py", "old_name.py"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("X = 1\n")
    repo.index.add(["acme/__init__.py", "acme/ops.py", "old_name.py"])
    return repo, repo.index.commit("plugin", author=git.Actor("a", "a@b"), committer=git.Actor("a", "a@b")).hexsha[:12]


def test_the_commit_names_the_uncommitted_paths_then_counts_the_rest(tmp_path):
    repo, head = _repo(tmp_path)
    (tmp_path / "runbook.yaml").write_text("name: x\n")
    assert plugin_commit(tmp_path, tmp_path) == f"{head} (with uncommitted changes: runbook.yaml)"
    (tmp_path / "acme" / "ops.py").write_text("X = 2\n")  # modified
    repo.index.move(["old_name.py", "new name.py"])  # renamed (staged), a space in the name: one path
    assert plugin_commit(tmp_path, tmp_path) == f"{head} (with uncommitted changes: acme/ops.py, new name.py, runbook.yaml)"
    (tmp_path / "notes.md").write_text("n\n")
    (tmp_path / "acme" / "__init__.py").unlink()  # deleted
    assert plugin_commit(tmp_path, tmp_path) == f"{head} (with uncommitted changes: acme/__init__.py, acme/ops.py, new name.py and 2 more)"


def test_the_report_names_the_uncommitted_runbook(project):
    repo = git.Repo.init(project.plugin)
    repo.git.add("-A")
    repo.git.commit("-qm", "plugin", "--author", "a <a@b>")
    runbook = project.plugin / "runbook.yaml"
    runbook.write_text(project.runbook.read_text())
    project.cli(*project.run_args("--run-id", "dirty", runbook=runbook))
    summary = (project.reports("dirty") / "summary.md").read_text()
    plugin_line = next(line for line in summary.splitlines() if line.startswith("| plugin |"))
    assert "(with uncommitted changes: runbook.yaml)" in plugin_line, plugin_line
