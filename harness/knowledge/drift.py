"""Hook drift: the single-version verdict CI and pre-commit run on every upstream release."""

from __future__ import annotations

from pathlib import Path

from harness.knowledge.findings import Finding
from harness.knowledge.platform_map import map_plugin
from harness.knowledge.upstream import UpstreamSource


def check_plugin(plugin: Path, upstream: UpstreamSource) -> list[Finding]:
    """Every dependency with its status; the caller fails on live ones in BREAKING."""
    return map_plugin(Path(plugin), upstream).findings
