"""`harness run` with no --plugin/--upstream: the built-in example workspace; offline, it says how
to fill the wheel cache."""

from __future__ import annotations

import os
import subprocess
import sys




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


def test_offline_without_a_cached_release_says_how_to_fill_the_cache(project, monkeypatch):
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
