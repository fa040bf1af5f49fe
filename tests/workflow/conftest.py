"""The `project` fixture: a workspace with upstreams, plugin, feature file and runbook."""

from __future__ import annotations

from pathlib import Path

import pytest
from workflow_support import Project


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Project:
    project = Project(tmp_path)
    monkeypatch.setenv("HARNESS_CACHE_DIR", project.env["HARNESS_CACHE_DIR"])
    monkeypatch.setenv("COLUMNS", "200")
    return project
