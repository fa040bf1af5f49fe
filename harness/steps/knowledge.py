"""The steps' one seam to the knowledge engine (upstream sources, Platform Map, Feature Diff,
drift check). Sources are resolved once per process: a release wheel is downloaded and indexed
once, however many steps read it."""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from pathlib import Path


@lru_cache(maxsize=8)
def resolve(spec: str):
    from harness.knowledge.upstream import resolve_upstream

    return resolve_upstream(spec)


@lru_cache(maxsize=8)
def _platform_map(plugin: str, spec: str):
    from harness.knowledge.platform_map import map_plugin

    return map_plugin(Path(plugin), resolve(spec))


def platform_map(plugin: Path, upstream) -> object:
    return _platform_map(str(plugin), upstream.spec)


def write_platform_map(pmap, out_dir: Path) -> list[Path]:
    from harness.knowledge.platform_map import write_platform_map as write

    out_dir.mkdir(parents=True, exist_ok=True)
    written = write(pmap, out_dir)
    return list(written) if written else sorted(p for p in out_dir.rglob("*") if p.is_file())


_diffs: dict[tuple[str, str, str | None], object] = {}


def feature_diff(old, new, plugin: Path | None, progress: Callable[[str], None] | None = None):
    """A whole-release diff takes minutes: report progress, and compute it once per process."""
    from harness.knowledge.feature_diff import diff_upstreams

    key = (old.spec, new.spec, str(plugin) if plugin else None)
    if key not in _diffs:
        counted = (lambda label, done, total: progress(f"{label} {done}/{total}")) if progress else None
        _diffs[key] = diff_upstreams(old, new, plugin, progress=counted)
    return _diffs[key]
