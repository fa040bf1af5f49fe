"""harness installed from its wheel, as the generated CI workflow installs it (never editable):
`harness run` on the built-in example reaches its first gate and `harness upgrade` triages the
example plugin, from a directory outside the checkout. Everything a command reads at run time
(skills, report and knowledge templates, the example workspace, harness/knowledge/data) must
ship inside the package for this to pass."""

from __future__ import annotations

import importlib.metadata
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from wheel_support import (
    EXAMPLE_PLUGIN_PATH,
    REPO_ROOT,
    build_wheel,
    clean_env,
    example_releases,
    fresh_venv,
    install_wheel,
    leaks,
)

import harness

pytestmark = pytest.mark.slow


def test_the_wheel_ships_every_file_the_package_holds(tmp_path):
    """Each tracked file under harness/ (modules, skills, templates, example workspace, data
    tables) is in the wheel: a file left out works from a checkout and fails once installed."""
    tracked = subprocess.run(["git", "ls-files", "harness"], cwd=REPO_ROOT, capture_output=True, text=True, check=False)
    if tracked.returncode != 0:
        pytest.skip("not a git checkout: no list of tracked files")
    names = set(zipfile.ZipFile(build_wheel(tmp_path)).namelist())
    missing = sorted(set(tracked.stdout.split()) - names)
    assert not missing, f"not in the wheel: {missing}"
    assert {"harness/skills/alignment/SKILL.md", "harness/report/templates/upgrade.md.j2",
            "harness/examples/workspace/runbook.yaml", "harness/knowledge/data/external_members.json"} <= names


def test_run_and_upgrade_from_the_installed_wheel(tmp_path):
    example_releases()
    python = fresh_venv(tmp_path / "venv")
    install_wheel(python, build_wheel(tmp_path / "build"))
    venv = tmp_path / "venv"
    assert leaks(python) == []
    if not Path(harness.__file__).resolve().is_relative_to(Path(sys.prefix).resolve()):
        # the check is not vacuous: where the tests' harness is a checkout (the README's editable
        # install), their interpreter is flagged
        assert leaks(Path(sys.executable))

    outside = tmp_path / "elsewhere"  # a cwd with no checkout above it
    outside.mkdir()
    env = clean_env(venv)
    version = subprocess.run(["harness", "--version"], cwd=outside, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert version.returncode == 0 and version.stdout.strip() == f"harness {importlib.metadata.version('harness')}", version
    run = subprocess.run(["harness", "run", "--run-id", "wheel"], cwd=outside, env=env, capture_output=True, text=True,
                         timeout=600, check=False)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "Waiting at the 01-alignment gate" in run.stdout
    step = json.loads((outside / "reports/wheel/evidence/01-alignment/step.json").read_text())
    assert step["verdict"] in ("passed", "failed") and (outside / "reports/wheel/01-alignment.md").is_file()

    # the README's way to find the installed example plugin: inside the venv, not the checkout
    plugin = subprocess.run([str(python), "-c", EXAMPLE_PLUGIN_PATH], cwd=outside, env=env, capture_output=True,
                            text=True, check=True).stdout.strip()
    assert plugin.startswith(str(venv)) and (Path(plugin) / "pyproject.toml").is_file()
    upgrade = subprocess.run(["harness", "upgrade", "--plugin", plugin, "--to", "sglang==0.5.23", "--runs", "2",
                              "--json"], cwd=outside, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert upgrade.returncode == 1, upgrade.stderr[-3000:]  # features wait for review
    doc = json.loads(upgrade.stdout)
    started = [f for f in doc["features"] if f["run_id"]]
    assert len(started) == 2 and all(f["state"] == "waiting" for f in started)
    assert (outside / "reports/upgrade-0.5.17-to-0.5.23/summary.md").is_file()
