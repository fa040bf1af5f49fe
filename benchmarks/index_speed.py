"""Cold and cached cost of indexing a full SGLang release and of diffing two releases.

    python benchmarks/index_speed.py [--from sglang==0.5.17] [--to sglang==0.5.23]

Uses a fresh cache directory so "cold" means cold (the wheel download is timed separately).
Prints one line per figure; nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

EXAMPLE_PLUGIN = Path(__file__).resolve().parents[1] / "harness" / "examples" / "workspace" / "plugin"


def timed(label: str, fn):
    start = time.perf_counter()
    result = fn()
    print(f"{label:58s} {time.perf_counter() - start:7.2f} s", flush=True)
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--from", dest="old", default="sglang==0.5.17")
    parser.add_argument("--to", dest="new", default="sglang==0.5.23")
    args = parser.parse_args()
    cache = Path(tempfile.mkdtemp(prefix="harness-bench-"))
    os.environ["HARNESS_CACHE_DIR"] = str(cache)
    # imported after HARNESS_CACHE_DIR is set, like a fresh process would
    from harness.knowledge.products import diff_upstreams, map_plugin
    from harness.knowledge.upstream import load_index, resolve_upstream

    print(f"cpus: {os.cpu_count()}  cache: {cache}")
    new = timed(f"fetch + unpack {args.new} (download, once)", lambda: resolve_upstream(args.new))
    old = timed(f"fetch + unpack {args.old} (download, once)", lambda: resolve_upstream(args.old))
    timed(f"resolve {args.new} from the source cache", lambda: resolve_upstream(args.new))
    print(f"{args.new}: {len(new.files)} modules, {sum((new.root / f).stat().st_size for f in new.files) / 1e6:.1f} MB")

    def full_index():
        index = load_index(new)
        index.index_all()
        index.save()
        return index

    timed(f"index {args.new} in full, cold ({os.cpu_count()} processes)", full_index)
    timed(f"index {args.new} in full, cached", lambda: load_index(new).index_all())

    def materialise():
        index = load_index(new)
        return [index.table(name) for name in index.files]

    timed(f"  ... and decode all {len(new.files)} module tables", materialise)
    shutil.rmtree(cache / "index")
    findings = timed(f"check example plugin vs {args.new}, cold (lazy index)", lambda: map_plugin(EXAMPLE_PLUGIN, new).findings)
    timed(f"check example plugin vs {args.new}, cached", lambda: map_plugin(EXAMPLE_PLUGIN, resolve_upstream(args.new)).findings)
    print(f"  ({len(findings)} dependencies judged)")
    shutil.rmtree(cache / "index")
    diff = timed(f"diff {args.old} -> {args.new} + plugin, cold", lambda: diff_upstreams(old, new, EXAMPLE_PLUGIN))
    timed(f"diff {args.old} -> {args.new} + plugin, cached", lambda: diff_upstreams(resolve_upstream(args.old), resolve_upstream(args.new), EXAMPLE_PLUGIN))
    print(f"  ({diff.files['changed']} files changed, {diff.files['added']} added; {len(diff.changes)} symbol changes; {len(diff.impacted)} plugin findings)")
    shutil.rmtree(cache, ignore_errors=True)


if __name__ == "__main__":
    main()
