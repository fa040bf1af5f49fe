"""`harness run` with no --plugin/--upstream: the built-in example workspace, falling back to the
bundled upstream (and saying so) when the package index cannot be reached."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from workflow_support import REPO_ROOT, loopback_runbook, upstream_files, write_tree

BUNDLED = REPO_ROOT / "harness/examples/upstream"


def _offline(project, monkeypatch) -> None:
    """An index nobody answers on, and no pip configuration pointing anywhere else."""
    empty_links = project.root / "no-wheels"
    empty_links.mkdir()
    offline = {
        "PIP_CONFIG_FILE": os.devnull,
        "PIP_INDEX_URL": "http://127.0.0.1:9/simple",
        "PIP_FIND_LINKS": str(empty_links),
        "PIP_RETRIES": "0",
        "PIP_DEFAULT_TIMEOUT": "2",
    }
    for key, value in offline.items():
        monkeypatch.setenv(key, value)
    project.env = {**project.env, **offline}


def _check_demo(project, proc, bundled_root) -> None:
    assert "using the bundled upstream" in proc.stderr
    assert "Waiting at the 01-alignment gate" in proc.stdout
    assert "harness approve demo --by YOUR_NAME" in proc.stdout
    status = project.status("demo")
    assert status["inputs"]["feature"]["id"] == "kv-pool-factory"
    assert status["inputs"]["upstream"].startswith(str(bundled_root))
    assert status["inputs"]["from_upstream"].startswith(str(bundled_root))
    notes = status["inputs"]["notes"]
    assert [n.split(":")[0] for n in notes] == ["sglang==0.5.23", "sglang==0.5.17"]
    assert all("using the bundled upstream" in n for n in notes)
    assert "using the bundled upstream" in (project.reports("demo") / "summary.md").read_text()


def test_builtin_default_falls_back_to_a_bundled_upstream(project, monkeypatch):
    import harness.cli.workflow as workflow_cli

    examples = project.root / "examples"
    write_tree(examples / "upstream" / "0.5.23", upstream_files(new=True))
    write_tree(examples / "upstream" / "0.5.17", upstream_files(new=False))
    monkeypatch.setattr(workflow_cli, "EXAMPLES", examples)  # the example plugin stays the real one
    _offline(project, monkeypatch)
    runbook = loopback_runbook(project.root / "runbook.yaml")
    proc = project.cli("run", "--runbook", str(runbook), "--run-id", "demo")
    _check_demo(project, proc, examples / "upstream")


def test_builtin_default_offline_with_the_shipped_bundle(project, monkeypatch):
    if not any(BUNDLED.glob("**/sglang")):
        pytest.skip(f"no bundled upstream shipped in {BUNDLED}")
    _offline(project, monkeypatch)
    runbook = loopback_runbook(project.root / "runbook.yaml")
    proc = project.cli("run", "--runbook", str(runbook), "--run-id", "demo", subprocess_=True)
    _check_demo(project, proc, BUNDLED)


def test_offline_without_a_cached_release_says_how_to_fill_the_cache(project, monkeypatch):
    import harness.cli.workflow as workflow_cli

    monkeypatch.setattr(workflow_cli, "EXAMPLES", project.root / "no-examples")  # nothing bundled
    _offline(project, monkeypatch)
    proc = project.cli("run", "--run-id", "demo", check=False, subprocess_=False)
    assert proc.returncode == 2
    [line] = proc.stderr.strip().splitlines()
    assert "cannot reach the package index" in line and "is not in the wheel cache" in line
    assert "harness fetch sglang==0.5.23 sglang==0.5.17" in line and "HARNESS_CACHE_DIR" in line


def test_fetch_fills_the_cache_and_says_where(project):
    proc = subprocess.run([sys.executable, "-m", "harness", "fetch", str(project.new)], capture_output=True, text=True,
                          env=project.env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert f"{project.new}: 10 modules in {project.new}" in proc.stdout
    assert f"cache: {project.env['HARNESS_CACHE_DIR']}" in proc.stdout
