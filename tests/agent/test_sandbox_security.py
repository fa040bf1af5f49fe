"""The sandbox as an attacker meets it (issue 17): a model that names paths through symlinks the
plugin already holds, a plugin repository with hooks and filters, ignored files, secrets beside
the plugin, and file names built to run code when a person pastes the merge hint. Each test
drives the real sandbox and the real agent tools; git is the real git."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import git
import pytest

from harness.agent.sandbox import Sandbox
from harness.agent.tools import Toolbox
from harness.steps.knowledge import KnowledgeStep

IDENTITY = {"GIT_AUTHOR_NAME": "eng", "GIT_AUTHOR_EMAIL": "e@x", "GIT_COMMITTER_NAME": "eng", "GIT_COMMITTER_EMAIL": "e@x"}


def commit_all(repo: git.Repo, message: str = "plugin") -> None:
    repo.git.add("-A")
    repo.git.commit("-m", message, env=IDENTITY)


def plugin_files(plugin: Path) -> Path:
    """A small plugin that already holds a symlink to its own parent (`docs/project -> ..`, as
    a docs tree that links the project in) and a nested repository (`vendor/lib`)."""
    (plugin / "pkg").mkdir(parents=True)
    (plugin / "pkg" / "platform.py").write_text("class P:\n    pass\n")
    (plugin / "docs").mkdir()
    (plugin / "docs" / "project").symlink_to("..")
    return plugin


def make_plugin(tmp_path: Path, kind: str) -> Path:
    """`worktree`: a plugin that is its own repository; `copy`: a plugin in a folder of a bigger
    repository (the sandbox is a copy made a repository)."""
    if kind == "worktree":
        plugin = plugin_files(tmp_path / "plugin")
        repo = git.Repo.init(plugin)
    else:
        mono = tmp_path / "mono"
        plugin = plugin_files(mono / "plugins" / "xdev")
        (mono / "README").write_text("several plugins\n")
        repo = git.Repo.init(mono)
    commit_all(repo)
    return plugin


def toolbox(sandbox: Sandbox, check=lambda: '{"findings": []}') -> Toolbox:
    return Toolbox(sandbox, lambda target, version: "", check)


@pytest.mark.parametrize("kind", ["worktree", "copy"])
def test_no_symlink_leads_into_git_metadata_and_harness_git_runs_no_planted_fsmonitor(tmp_path, kind):
    plugin = make_plugin(tmp_path, kind)
    sandbox = Sandbox.create(plugin, tmp_path / "run" / "sandbox" / "02-interface-1", "r", "interface", 1)
    # a nested repository and a link straight at the sandbox's metadata, as a checkout might hold
    nested = git.Repo.init(sandbox.root / "vendor" / "lib")
    (sandbox.root / "vendor" / "lib" / "lib.py").write_text("X = 1\n")
    commit_all(nested, "vendored")
    (sandbox.root / "meta").symlink_to(".git")
    pwned = tmp_path / "PWNED"
    planted = f"[core]\n\tfsmonitor = touch {pwned}\n"
    tools = toolbox(sandbox)
    attacks = [("write_file", {"path": "docs/project/.git/config", "content": planted}),
               ("write_file", {"path": "docs/project/.git", "content": f"gitdir: {tmp_path}\n"}),
               ("write_file", {"path": "docs/project/docs/project/.git/config", "content": planted}),
               ("write_file", {"path": "meta/config", "content": planted}),
               ("write_file", {"path": "vendor/lib/.git/config", "content": planted}),
               ("write_file", {"path": "docs/project/.git/hooks/post-index-change", "content": f"#!/bin/sh\ntouch {pwned}\n"}),
               ("replace_in_file", {"path": "docs/project/.git/HEAD", "old": "ref", "new": "ref"}),
               ("read_file", {"path": "docs/project/.git/config"}),
               ("read_file", {"path": "meta/HEAD"})]
    for name, arguments in attacks:
        result = tools.call(name, json.dumps(arguments))
        assert result.refused and result.text.startswith("refused:"), (name, arguments, result.text)
    assert len(tools.refusals) == len(attacks)
    assert all("git" in r and "metadata" in r for r in tools.refusals), tools.refusals

    # search walks the tree without following links into any repository's metadata
    found = tools.call("search", json.dumps({"pattern": "repositoryformatversion|fsmonitor|refs/heads"}))
    assert found.text == "no matches", found.text
    assert tools.call("search", json.dumps({"pattern": "x", "path": "docs/project/.git"})).refused

    (sandbox.root / "pkg" / "platform.py").write_text("class P:\n    kind = 'x'\n")
    assert "+    kind = 'x'" in sandbox.diff()
    assert not pwned.exists()


def test_a_symlink_that_leaves_the_worktree_and_comes_back_is_refused(tmp_path):
    plugin = make_plugin(tmp_path, "worktree")
    sandbox = Sandbox.create(plugin, tmp_path / "sb", "r", "interface", 1)
    (sandbox.root / "round").symlink_to(f"{tmp_path}/sb/pkg")  # an absolute path: through the outside
    (sandbox.root / "away").symlink_to(tmp_path)
    tools = toolbox(sandbox)
    assert tools.call("read_file", json.dumps({"path": "away/sb/pkg/platform.py"})).refused
    assert not tools.call("read_file", json.dumps({"path": "round/platform.py"})).refused  # lands inside
    assert tools.call("read_file", json.dumps({"path": "pkg/platform.py"})).text.endswith("pass")


def test_creating_and_committing_a_sandbox_runs_no_hook_or_filter_of_the_plugin_repo(tmp_path):
    plugin = make_plugin(tmp_path, "worktree")
    repo = git.Repo(plugin)
    marker = tmp_path / "RAN"
    for name in ("post-checkout", "post-index-change", "pre-commit"):
        hook = Path(repo.git_dir) / "hooks" / name
        hook.parent.mkdir(exist_ok=True)
        hook.write_text(f"#!/bin/sh\necho {name} >> {marker}\n")
        hook.chmod(0o755)
    (plugin / ".gitattributes").write_text("*.py filter=x diff=x\n")
    commit_all(repo, "attributes")
    marker.unlink(missing_ok=True)  # the engineer's own commit ran them; harness's git must not
    with repo.config_writer() as config:  # as a tampered repository config would hold them
        config.set_value('filter "x"', "clean", f"sh -c 'echo clean >> {marker}; cat'")
        config.set_value('filter "x"', "smudge", f"sh -c 'echo smudge >> {marker}; cat'")
        config.set_value('diff "x"', "textconv", f"sh -c 'echo textconv >> {marker}; cat'")

    sandbox = Sandbox.create(plugin, tmp_path / "sb", "r", "interface", 1)
    (sandbox.root / "pkg" / "platform.py").write_text("class P:\n    kind = 'x'\n")
    patch = sandbox.diff()
    assert not marker.exists(), marker.read_text()
    assert "+    kind = 'x'" in patch
    assert sandbox.commit("approved", patch)
    assert not marker.exists(), marker.read_text()
    assert "kind = 'x'" in repo.git.show(f"{sandbox.record.branch}:pkg/platform.py")


def test_git_variables_of_the_environment_do_not_redirect_harness_git(tmp_path, monkeypatch):
    plugin = make_plugin(tmp_path, "worktree")
    elsewhere = git.Repo.init(tmp_path / "elsewhere")
    monkeypatch.setenv("GIT_DIR", elsewhere.git_dir)
    monkeypatch.setenv("GIT_WORK_TREE", str(tmp_path / "elsewhere"))
    monkeypatch.setenv("GIT_INDEX_FILE", str(tmp_path / "other-index"))
    sandbox = Sandbox.create(plugin, tmp_path / "sb", "r", "interface", 1)
    (sandbox.root / "pkg" / "platform.py").write_text("class P:\n    kind = 'x'\n")
    patch = sandbox.diff()
    assert "+    kind = 'x'" in patch and "deleted file" not in patch
    for name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
        monkeypatch.delenv(name)
    assert not elsewhere.branches and not (tmp_path / "other-index").exists()


def test_copy_mode_copies_tracked_files_only_and_never_secrets(tmp_path):
    plugin = make_plugin(tmp_path, "copy")
    mono = git.Repo(tmp_path / "mono")
    (tmp_path / "mono" / ".gitignore").write_text(".env\n*.key\n")
    commit_all(mono, "ignore secrets")
    (plugin / ".env").write_text("OPENAI_API_KEY=sk-secret\n")
    (plugin / "deploy.key").write_text("-----BEGIN PRIVATE KEY-----\n")
    (plugin / "scratch.txt").write_text("untracked notes\n")
    sandbox = Sandbox.create(plugin, tmp_path / "sb", "r", "interface", 1)
    assert (sandbox.root / "pkg" / "platform.py").is_file() and (sandbox.root / "docs" / "project").is_symlink()
    for name in (".env", "deploy.key", "scratch.txt"):
        assert not (sandbox.root / name).exists(), name
    assert toolbox(sandbox).call("search", json.dumps({"pattern": "sk-secret"})).text == "no matches"

    # a plugin in no repository at all: everything but well-known secrets
    loose = plugin_files(tmp_path / "loose")
    (loose / ".env").write_text("OPENAI_API_KEY=sk-secret\n")
    (loose / "server.pem").write_text("-----BEGIN CERTIFICATE-----\n")
    (loose / ".netrc").write_text("machine x password y\n")
    (loose / "notes.txt").write_text("kept\n")
    copy = Sandbox.create(loose, tmp_path / "sb2", "r", "interface", 1)
    assert (copy.root / "notes.txt").is_file()
    for name in (".env", "server.pem", ".netrc"):
        assert not (copy.root / name).exists(), name


def test_checks_judge_exactly_what_an_approval_commits(tmp_path):
    """A port in a git-ignored module: the agent's check sees the change as it would be
    committed, so it cannot pass on a file the commit leaves out."""
    plugin = make_plugin(tmp_path, "worktree")
    (plugin / ".gitignore").write_text("pkg/ported.py\n")
    commit_all(git.Repo(plugin), "ignore")
    sandbox = Sandbox.create(plugin, tmp_path / "sb", "r", "interface", 1)
    seen: list[set[str]] = []

    def check() -> str:
        with sandbox.committable() as tree:
            seen.append({p.relative_to(tree).as_posix() for p in tree.rglob("*.py")})
        return "{}"

    tools = toolbox(sandbox, check)
    written = tools.call("write_file", json.dumps({"path": "pkg/ported.py", "content": "def fix():\n    pass\n"}))
    assert "git ignores this path" in written.text  # the model hears it will not be part of the patch
    tools.call("replace_in_file", json.dumps({"path": "pkg/platform.py", "old": "    pass\n",
                                                "new": "    from pkg.ported import fix\n"}))
    tools.call("run_check", "{}")
    assert seen == [{"pkg/platform.py"}]
    patch = sandbox.diff()
    assert "pkg/ported.py" not in patch and "from pkg.ported import fix" in patch


def test_changed_files_come_from_git_not_from_patch_text(tmp_path):
    plugin = make_plugin(tmp_path, "worktree")
    sandbox = Sandbox.create(plugin, tmp_path / "sb", "r", "knowledge", 1)
    lesson = sandbox.root / ".harness" / "skills" / "interface" / "LESSONS.md"
    lesson.parent.mkdir(parents=True)
    # an added content line "++ b/…" reads "+++ b/…" in the patch: a forged file header
    lesson.write_text("- lesson\n++ b/../../../../etc/passwd\n")
    assert "\n+++ b/../../../../etc/passwd\n" in sandbox.diff()
    assert sandbox.changed() == [".harness/skills/interface/LESSONS.md"]


def test_a_file_name_with_shell_syntax_is_refused_and_the_merge_hint_is_quoted(tmp_path):
    plugin = make_plugin(tmp_path, "worktree")
    lessons = tmp_path / "lessons.md"
    lessons.write_text("- old\n")
    sandbox = Sandbox.create(plugin, tmp_path / "sb", "r", "knowledge", 1)
    sandbox.seed({"seeded/LESSONS.md": (lessons, lessons)}, "seed")
    evil = ".harness/skills/interface/LESSONS$(id>X).md"
    (sandbox.root / evil).parent.mkdir(parents=True)
    (sandbox.root / evil).write_text("- new\n")
    (sandbox.root / "seeded" / "LESSONS.md").write_text("- old\n- new\n")
    patch = sandbox.diff()
    assert sandbox.commit("approved", patch)
    hint = sandbox.merge_hint()
    work = tmp_path / "cwd"
    work.mkdir()
    subprocess.run(["bash", "-c", hint], cwd=work, check=True, env={**os.environ, **IDENTITY})
    assert not (work / "X").exists() and list(work.iterdir()) == []
    assert (plugin / evil).read_text() == "- new\n" and lessons.read_text() == "- old\n- new\n"

    # and the knowledge gate refuses such a name outright
    evidence = tmp_path / "evidence"
    evidence.mkdir()
    (evidence / "facts.json").write_text(json.dumps({"agent": {"status": "finished", "patch": "agent/patch.diff"},
                                                     "changed": [evil, "platform-map.yaml"], "files": {}}))
    scope = {c.name: c for c in KnowledgeStep().judge(evidence, None)}["knowledge.scope"]
    assert scope.status.value == "failed" and "LESSONS$(id>X).md" in scope.reason


@pytest.mark.timeout(120)
def test_a_catastrophic_search_pattern_is_stopped_by_the_search_deadline(tmp_path, monkeypatch):
    """`(a|aa)+$` against a long run of `a` and one `!` backtracks exponentially: with `re` one
    call ran for minutes against a 10 s wall budget; the search deadline stops it and says so."""
    import time

    from harness.agent import tools

    plugin = make_plugin(tmp_path, "worktree")
    (plugin / "pkg" / "data.py").write_text("ok = 1\nX = '" + "a" * 45 + "!'\n")
    commit_all(git.Repo(plugin), "data")
    sandbox = Sandbox.create(plugin, tmp_path / "run" / "sandbox" / "02-interface-1", "r", "interface", 1)
    monkeypatch.setattr(tools, "SEARCH_TIMEOUT_S", 1.0)
    started = time.monotonic()
    result = toolbox(sandbox).call("search", json.dumps({"pattern": "(a|aa)+$", "path": "pkg"}))
    assert time.monotonic() - started < 30
    assert result.text.startswith("error: search stopped after 1 s at pkg/data.py:2"), result.text
    assert toolbox(sandbox).call("search", json.dumps({"pattern": "ok = 1"})).text == "pkg/data.py:1: ok = 1"
