"""Wall time of `harness upgrade` (sglang 0.5.17 → 0.5.23) on a generated ~100-module plugin
(tests/support/triage_plugin.py: one wrapper per public function of sglang/srt/layers, the
moved dsv4 kernel family, the MoE dispatcher hook) or on the built-in example plugin, with the
wheel cache cold (an empty HARNESS_CACHE_DIR: both wheels downloaded, unpacked, parsed and
diffed) and cached (same cache, a new workspace), and a rerun (same workspace: runs reused).
Prints figures and the speed ratios of issue 19; asserts nothing:

    cached / parse(new)                      `ast.parse` of every .py of the target release,
                                             measured in this run (aim: within 1.5x)
    cold / (parse(old) + parse(new) + download)   the download being the cold run's resolve
                                             phase (aim: within 2x)

    python benchmarks/upgrade_speed.py                     # cold, cached, rerun; generated plugin
    python benchmarks/upgrade_speed.py --no-cold           # skip the download (filled ~/.cache/harness)
    python benchmarks/upgrade_speed.py --plugin example    # the built-in example plugin

Split: `resolve` (download and unpack, or find in the cache), `diff` (the Feature Diff with the
plugin and the grouping), then each feature's run to its first gate; `total` is the whole
process, imports included.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "harness" / "examples" / "workspace" / "plugin"
OLD, NEW = "sglang==0.5.17", "sglang==0.5.23"


def _measure(workspace: Path, plugin: Path) -> None:
    """In the child: one upgrade, timing each part from its progress messages."""
    start = time.monotonic()
    from harness.record.layout import Workspace
    from harness.workflow.upgrade import run_upgrade

    marks: list[tuple[float, str]] = []
    report = run_upgrade(Workspace(workspace), plugin, OLD, NEW, progress=lambda m: marks.append((time.monotonic(), m)))
    end = time.monotonic()
    phase_starts = [(t, m) for t, m in marks if m.startswith(("resolving ", "diffing ", "feature "))]
    parts: dict[str, float] = {}
    for (t, message), (t_next, _) in zip(phase_starts, [*phase_starts[1:], (end, "")]):
        key = "resolve" if message.startswith("resolving") else "diff" if message.startswith("diffing") else message.split(": ", 1)[1]
        parts[key] = parts.get(key, 0.0) + t_next - t
    print(json.dumps({"parts": parts, "in_process": end - start, "features": len(report.features),
                      "reused": report.totals.get("reused_runs", 0)}))


def _child(cache: Path, workspace: Path, plugin: Path) -> dict:
    env = {**os.environ, "HARNESS_CACHE_DIR": str(cache), "PYTHONPATH": str(ROOT)}
    env.pop("HARNESS_STATE_URL", None)
    start = time.monotonic()
    proc = subprocess.run([sys.executable, __file__, "--measure", str(workspace), "--plugin", str(plugin)],
                          capture_output=True, text=True, env=env, check=True)
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    result["total"] = time.monotonic() - start
    return result


def _print(label: str, result: dict) -> None:
    parts = result["parts"]
    features = {k: v for k, v in parts.items() if k not in ("resolve", "diff")}
    runs = sum(features.values())
    print(f"{label:<8} total {result['total']:7.1f} s | resolve {parts.get('resolve', 0):6.1f} s | "
          f"diff {parts.get('diff', 0):6.1f} s | {result['features']} feature runs {runs:6.1f} s "
          f"(median {sorted(features.values())[len(features) // 2] if features else 0:.1f} s, "
          f"{result['reused']} reused)")


def _release_root(spec: str, cache: Path) -> Path:
    """The unpacked release tree of `spec` in `cache` (resolving it, downloading if needed)."""
    env = {**os.environ, "HARNESS_CACHE_DIR": str(cache), "PYTHONPATH": str(ROOT)}
    code = f"from harness.knowledge.upstream.source import resolve_upstream; print(resolve_upstream({spec!r}).root)"
    return Path(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True).stdout.strip())


def _parse_seconds(root: Path) -> float:
    """`ast.parse` of every .py under `root` (read and parsed, as the index does on a cold cache)."""
    start = time.monotonic()
    for path in root.rglob("*.py"):
        try:
            ast.parse(path.read_bytes())
        except (SyntaxError, ValueError):
            pass
    return time.monotonic() - start


def _plugin(choice: str, tmp: Path, cache: Path) -> Path:
    if choice == "example":
        return EXAMPLE
    sys.path.insert(0, str(ROOT / "tests" / "support"))
    from triage_plugin import real_plugin_files

    plugin = tmp / "plugin"
    for rel, text in real_plugin_files(_release_root(OLD, cache)).items():
        path = plugin / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return plugin


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--no-cold", action="store_true", help="use ~/.cache/harness (HARNESS_CACHE_DIR) as is")
    parser.add_argument("--plugin", default="generated", help="generated (default), example, or (internal) a path")
    parser.add_argument("--measure", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        _measure(args.measure, Path(args.plugin))
        return
    with tempfile.TemporaryDirectory(prefix="upgrade-speed-") as tmp:
        tmp = Path(tmp)
        cold = None
        if args.no_cold:
            cache = Path(os.environ.get("HARNESS_CACHE_DIR") or Path.home() / ".cache" / "harness")
            plugin = _plugin(args.plugin, tmp, cache)
        else:
            cache = tmp / "cache"
            # the generated plugin needs the old release's tree: read from the user's cache, so
            # the measured cold run still starts from an empty one
            plugin = _plugin(args.plugin, tmp, Path(os.environ.get("HARNESS_CACHE_DIR") or Path.home() / ".cache" / "harness"))
            (tmp / "cold").mkdir()
            cold = _child(cache, tmp / "cold", plugin)
            _print("cold", cold)
        (tmp / "cached").mkdir()
        cached = _child(cache, tmp / "cached", plugin)
        _print("cached", cached)
        _print("rerun", _child(cache, tmp / "cached", plugin))
        modules = sum(1 for _ in plugin.rglob("*.py"))
        parse_old, parse_new = _parse_seconds(_release_root(OLD, cache)), _parse_seconds(_release_root(NEW, cache))
        print(f"plugin {modules} modules | ast.parse of the release: {OLD} {parse_old:.1f} s, {NEW} {parse_new:.1f} s")
        print(f"ratio cached / parse({NEW}) = {cached['total'] / parse_new:.2f} (aim <= 1.5)")
        if cold is not None:
            base = parse_old + parse_new + cold["parts"].get("resolve", 0.0)
            print(f"ratio cold / (parse both + download) = {cold['total'] / base:.2f} (aim <= 2.0)")


if __name__ == "__main__":
    main()
