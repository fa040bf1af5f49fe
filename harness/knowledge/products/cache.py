"""The knowledge engine, once per process: upstream sources, Platform Maps and Feature Diffs are
computed once however many steps and commands read them (a release wheel is downloaded and
indexed once; a whole-release diff takes minutes). The steps and the CLI read knowledge
through here."""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

from harness.knowledge.products.diffing import FeatureDiff, diff_upstreams
from harness.knowledge.products.mapping import PlatformMap, map_plugin
from harness.knowledge.upstream import UpstreamSource, cache_dir, resolve_upstream


def resolve(spec: str) -> UpstreamSource:
    """`resolve_upstream(spec)`, cached per process and wheel cache (HARNESS_CACHE_DIR may change
    within one process: a release absent from the new cache must not come from the old one).
    HarnessError on a bad or unreachable spec."""
    return _resolve(spec, str(cache_dir()))


@lru_cache(maxsize=8)
def _resolve(spec: str, cache: str) -> UpstreamSource:
    return resolve_upstream(spec)


@lru_cache(maxsize=8)
def _platform_map(plugin: str, spec: str, baseline: str | None) -> PlatformMap:
    return map_plugin(Path(plugin), resolve(spec), baseline=resolve(baseline) if baseline else None)


def platform_map(plugin: Path, upstream: UpstreamSource, baseline: UpstreamSource | None = None) -> PlatformMap:
    """The plugin's Platform Map against `upstream`, with `baseline` the release the plugin was
    written against (a feature's `from`: an override of a method it had and `upstream` dropped
    is then known to have been called), cached per (plugin path, spec, baseline spec)."""
    return _platform_map(str(plugin), upstream.spec, baseline.spec if baseline is not None else None)


_diffs: dict[tuple[str, str, str | None], FeatureDiff] = {}  # by content, not by spec


def feature_diff(old: UpstreamSource, new: UpstreamSource, plugin: Path | None,
                 progress: Callable[[str], None] | None = None) -> FeatureDiff:
    """The Feature Diff old → new (judging `plugin`'s dependencies when given), cached per
    (old content, new content, plugin); `progress` gets "label done/total" lines."""
    key = (old.fingerprint, new.fingerprint, str(plugin) if plugin else None)
    if key not in _diffs:
        counted = (lambda label, done, total: progress(f"{label} {done}/{total}")) if progress else None
        _diffs[key] = diff_upstreams(old, new, plugin, progress=counted)
    return _diffs[key]
