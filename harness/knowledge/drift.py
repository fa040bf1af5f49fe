"""Hook drift: the single-version verdict CI and pre-commit run on every upstream release."""

from __future__ import annotations

from pathlib import Path

from harness.knowledge.platform_map import PlatformMap, map_plugin
from harness.knowledge.upstream import UpstreamSource


def check_plugin(plugin: Path, upstream: UpstreamSource, entries: list[str] | None = None) -> PlatformMap:
    """The Platform Map of `plugin` on `upstream`; the caller fails on its `breaking` findings.

    Raises HarnessError for a path that is not a plugin (see plugin_scan.scan_plugin)."""
    return map_plugin(Path(plugin), upstream, entries=entries)
