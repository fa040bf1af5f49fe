"""Drift: the single-version verdict CI and pre-commit run on every upstream release.

The verdict is a function of the plugin's files, the upstream's content, this code and the
interpreter that lists outside bases; a run whose inputs are all unchanged reuses the last
verdict (pre-commit runs it on every commit, most of which touch nothing it reads)."""

from __future__ import annotations

import hashlib
import os
import sys
import sysconfig
from pathlib import Path

from harness.engines import profile
from harness.knowledge.model import declared_version, pin_sources, plugin_module_files, run_entry_sources
from harness.knowledge.products.mapping import PlatformMap, map_plugin
from harness.knowledge.upstream import UpstreamSource, cache_dir, cached_release, read_cache_file, write_cache_file

_PACKAGING = ("pyproject.toml", "setup.cfg", "setup.py")


def check_plugin(plugin: Path, upstream: UpstreamSource, entries: list[str] | None = None, baseline: UpstreamSource | None = None) -> PlatformMap:
    """The Platform Map of `plugin` on `upstream` (without the plugin's git commit); the caller
    fails on its `breaking` findings. `baseline`: see map_plugin. Raises HarnessError for a path
    that is not a plugin (see scan.scanner.scan_plugin)."""
    plugin = Path(plugin).resolve()
    key = _inputs_key(plugin, upstream, entries or [], baseline.content_fingerprint if baseline else "")
    memo = cache_dir() / "checks" / f"{key}.json"
    cached = read_cache_file(memo)  # another user's verdict (a shared cache) is never returned
    try:
        if cached is not None:
            return PlatformMap.model_validate_json(cached)
    except ValueError:
        pass
    platform_map = map_plugin(plugin, upstream, entries=entries, commit=False, baseline=baseline)
    write_cache_file(memo, platform_map.model_dump_json().encode())
    return platform_map


def declared_baseline(plugin: Path) -> tuple[UpstreamSource | None, str | None]:
    """(the release the plugin declares, if it is in the wheel cache; a note when it is not).
    Nothing is downloaded: `harness fetch` puts a release in the cache."""
    version = declared_version(Path(plugin))
    if version is None:
        return None, None
    # a local version (vllm-rbln's `vllm==0.30.0+cpu`) is built from the public release's source
    release = cached_release(version) or (cached_release(version.split("+", 1)[0]) if "+" in version else None)
    if release is None:
        dist = profile().distribution
        return None, (f"the plugin declares {dist} {version}, which is not in the wheel cache: overrides of base methods "
                      f"removed since then are not told from the plugin's own (`harness fetch {dist}=={version}`, or --baseline)")
    return release, None


def _inputs_key(plugin: Path, upstream: UpstreamSource, entries: list[str], baseline: str) -> str:
    """Everything the verdict depends on, by content or by (size, mtime): the plugin's files,
    the upstream's content fingerprint, the knowledge engine's own code and data and the engine profiles, and the
    interpreter whose installed packages answer for outside bases."""
    digest = hashlib.blake2b(digest_size=16)
    if not plugin.is_dir():
        return "not-a-directory"
    # and every file the declared version is read from (it picks the baseline), and those naming run modules
    files = [path for path, _ in plugin_module_files(plugin).values()] + [plugin / name for name in _PACKAGING] + pin_sources(plugin) + run_entry_sources(plugin)
    code = Path(__file__).parents[1]
    # the engine profiles (harness/engines: kinds, loaders, load failures) decide verdicts too
    files += sorted(code.rglob("*.py")) + sorted(code.glob("data/*")) + sorted((code.parent / "engines").rglob("*.py"))
    for path in files:
        try:
            st = os.lstat(path)
            digest.update(f"{path}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
        except OSError:
            digest.update(f"{path}\0absent\n".encode())
    python = os.environ.get("HARNESS_PYTHON") or sys.executable
    site = sysconfig.get_paths()["purelib"]
    digest.update(f"{profile().name}\0{upstream.content_fingerprint}\0{baseline}\0{entries}\0{python}\0{os.stat(site).st_mtime_ns}".encode())
    return digest.hexdigest()
