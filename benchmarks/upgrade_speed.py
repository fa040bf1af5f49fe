"""Wall time of `harness upgrade` on the built-in example plugin (sglang 0.5.17 → 0.5.23), with
the wheel cache cold (an empty HARNESS_CACHE_DIR: both wheels downloaded, unpacked, parsed and
diffed) and cached (same cache, a new workspace: every feature run started again), and a rerun
(same workspace: the runs are reused). Prints figures; asserts nothing.

    python benchmarks/upgrade_speed.py            # cold, cached, rerun
    python benchmarks/upgrade_speed.py --no-cold  # skip the download (offline, with a filled ~/.cache/harness)

Split: `resolve` (download and unpack, or find in the cache), `diff` (the Feature Diff with the
plugin and the grouping), then each feature's run to its first gate; `total` is the whole
process, imports included.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PLUGIN = ROOT / "harness" / "examples" / "workspace" / "plugin"


def _measure(workspace: Path) -> None:
    """In the child: one upgrade, timing each part from its progress messages."""
    start = time.monotonic()
    from harness.record.layout import Workspace
    from harness.workflow.upgrade import run_upgrade

    marks: list[tuple[float, str]] = []
    report = run_upgrade(Workspace(workspace), PLUGIN, "sglang==0.5.17", "sglang==0.5.23",
                         progress=lambda m: marks.append((time.monotonic(), m)))
    end = time.monotonic()
    phase_starts = [(t, m) for t, m in marks if m.startswith(("resolving ", "diffing ", "feature "))]
    parts: dict[str, float] = {}
    for (t, message), (t_next, _) in zip(phase_starts, [*phase_starts[1:], (end, "")]):
        key = "resolve" if message.startswith("resolving") else "diff" if message.startswith("diffing") else message.split(": ", 1)[1]
        parts[key] = parts.get(key, 0.0) + t_next - t
    print(json.dumps({"parts": parts, "in_process": end - start, "features": len(report.features),
                      "reused": report.totals.get("reused_runs", 0)}))


def _child(cache: Path, workspace: Path) -> dict:
    env = {**os.environ, "HARNESS_CACHE_DIR": str(cache), "PYTHONPATH": str(ROOT)}
    env.pop("HARNESS_STATE_URL", None)
    start = time.monotonic()
    proc = subprocess.run([sys.executable, __file__, "--measure", str(workspace)], capture_output=True, text=True,
                          env=env, check=True)
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--no-cold", action="store_true", help="use ~/.cache/harness (HARNESS_CACHE_DIR) as is")
    parser.add_argument("--measure", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        _measure(args.measure)
        return
    with tempfile.TemporaryDirectory(prefix="upgrade-speed-") as tmp:
        tmp = Path(tmp)
        if args.no_cold:
            cache = Path(os.environ.get("HARNESS_CACHE_DIR") or Path.home() / ".cache" / "harness")
        else:
            cache = tmp / "cache"
            (tmp / "cold").mkdir()
            _print("cold", _child(cache, tmp / "cold"))
        (tmp / "cached").mkdir()
        _print("cached", _child(cache, tmp / "cached"))
        _print("rerun", _child(cache, tmp / "cached"))


if __name__ == "__main__":
    main()
