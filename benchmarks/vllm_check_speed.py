"""Speed of `harness check` on a real vLLM platform plugin, and what it reports on the plugin's
own base release.

    PYTHONPATH=. python benchmarks/vllm_check_speed.py [--plugin vllm-kunlun==0.11.1]
        [--upstream 0.11.1] [--repeat 3] [--show 40]

Prints figures; asserts nothing (issue 21, Acceptance, third bullet). The plugin is a real one
from the package index (default: Baidu's vllm-kunlun 0.11.1, the Kunlun XPU plugin: 131 modules,
a `vllm.platform_plugins` entry point and three `vllm.general_plugins`), unpacked from its wheel
(its entry points are read from the wheel's entry_points.txt); the upstream is the vLLM release it
was written for ("vLLM (same version as vllm-kunlun)", its README). Timings are ratios to
`ast.parse` of every .py file of that release on one core, measured in the same run:
`harness check --json` cold (a fresh HARNESS_CACHE_DIR holding only the fetched release: record,
unpacked source, manifest) and cached (the same inputs again), as for SGLang in check_speed.py.
Then every breaking finding on that base is listed with file:line, for a reader to judge by hand:
on a plugin's own base release each must be a real failure.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from check_speed_lib.measure import (  # noqa: E402
    cold_cache,
    harness_env,
    loadavg,
    median,
    run_check,
    time_parse,
)

BENCH = Path.home() / ".cache" / "harness-bench" / "vllm"


def plugin_tree(requirement: str) -> Path:
    """The plugin's wheel from the package index, unpacked once (its .py files and metadata)."""
    name = requirement.replace("==", "-")
    tree = BENCH / f"plugin-{name}"
    if (tree / ".complete").exists():
        return tree
    download = Path(tempfile.mkdtemp(prefix="bench-wheel-"))
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:", requirement, "-d", str(download)], check=True)
    wheel = next(download.glob("*.whl"))
    shutil.rmtree(tree, ignore_errors=True)
    with zipfile.ZipFile(wheel) as archive:
        for member in archive.namelist():
            if member.endswith(".py") or ".dist-info/" in member:
                archive.extract(member, tree)
    shutil.rmtree(download, ignore_errors=True)
    (tree / ".complete").write_text(wheel.name)
    return tree


def seeded_release(version: str, harness_path: Path) -> tuple[Path, Path]:
    """A HARNESS_CACHE_DIR where `harness fetch vllm==version` ran (the download is not timed),
    and the unpacked `vllm/` package in it."""
    seed = BENCH / f"harness-seed-vllm-{version}"
    if not (seed / ".complete").exists():
        shutil.rmtree(seed, ignore_errors=True)
        seed.mkdir(parents=True)
        subprocess.run([sys.executable, "-m", "harness", "fetch", f"vllm=={version}"], check=True, env=harness_env(harness_path, seed), cwd=tempfile.gettempdir())
        (seed / ".complete").write_text("fetched")
    record = json.loads((seed / "releases" / f"vllm-{version}.json").read_text())
    return seed, Path(record["root"]) / "vllm"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plugin", default="vllm-kunlun==0.11.1", help="the plugin on the package index (name==version)")
    parser.add_argument("--upstream", default="0.11.1", help="the vLLM release it was written for")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--show", type=int, default=40, help="breaking findings to list")
    args = parser.parse_args()
    harness_path = Path(__file__).resolve().parent.parent
    BENCH.mkdir(parents=True, exist_ok=True)
    plugin = plugin_tree(args.plugin)
    seed, package = seeded_release(args.upstream, harness_path)
    modules = sum(1 for _ in plugin.rglob("*.py"))

    parse = time_parse(package, args.repeat)
    cold, cached, last = [], [], None
    for _ in range(args.repeat):
        cache = cold_cache(seed)
        cold.append(run_check(plugin, args.upstream, harness_path, cache, "vllm"))
        cached.append(run_check(plugin, args.upstream, harness_path, cache, "vllm"))
        last = cold[-1]
        shutil.rmtree(cache, ignore_errors=True)
    reference = parse["seconds"]
    print(f"== vLLM check speed (2 cpus, load {loadavg()}; medians of {args.repeat})")
    print(f"   plugin: {args.plugin} ({modules} modules); upstream vllm=={args.upstream}")
    print(f"   reference: ast.parse of every .py file of vllm=={args.upstream} ({parse['files']} files, {parse['mb']:.0f} MB), one core: {reference:.2f} s")
    for label, runs, target in (("cold", cold, 0.25), ("cached", cached, 0.03)):
        seconds = median([r["seconds"] for r in runs])
        each = ", ".join(f"{r['seconds']:.2f}" for r in runs)
        print(f"   harness check, {label}: {seconds:6.2f} s = {seconds / reference:.3f}x  (target <= {target}x; runs {each})")
    payload = last["payload"] if last else None
    if not payload or "findings" not in payload:
        print(f"   check gave no document (exit {last['exit'] if last else '?'}): {last['stderr'][-600:] if last else ''}")
        return
    findings = payload["findings"]
    breaking = [f for f in findings if f.get("breaking")]
    print(f"\n== On its own base: exit {last['exit']}; {len(findings)} findings reported, {len(breaking)} breaking, "
          f"{payload.get('unverified', 0)} unverified; checked by kind: {payload.get('checked', {})}")
    print(f"   reported by status: {dict(Counter(f['status'] for f in findings).most_common())}")
    for finding in breaking[: args.show]:
        print(f"   BREAKING {finding['kind']:10s} {finding['status']:18s} {finding.get('file')}:{finding.get('line')}  {finding['target']}  -- {(finding.get('message') or '')[:140]}")
    if len(breaking) > args.show:
        print(f"   ... {len(breaking) - args.show} more")


if __name__ == "__main__":
    main()
