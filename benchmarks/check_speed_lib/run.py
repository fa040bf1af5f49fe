"""Speed and recall of `harness check` on a realistic generated plugin, beside a pyright diff.

The command line and the order of the stages (see ../check_speed.py for what each does)."""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from .common import DEFAULT_WHEELS, REPO, log
from .measure import (
    cold_cache,
    loadavg,
    run_check,
    seed_release,
    time_parse,
    time_startup,
)
from .oracle import (
    Release,
    add_named,
    build_pool,
    dataclass_candidates,
    load_or_harvest,
    oracle_verdicts,
    prepare_runtime,
    registry_candidates,
)
from .plugin import generate_plugin, loader_check
from .report import report, write_results
from .results import Results, Timings
from .sampler import Sampler
from .scoring import harness_flags, probe_modules, pyright_flags, run_pyright, score


def find_release(version: str, wheels: Path, cache: Path) -> tuple[Release, Path | None]:
    """The release's source tree (the unpacked wheel in `wheels`, else harness's own download) and
    its wheel, with the side directory of pinned light dependencies the oracle runs with."""
    wheel = next(iter(sorted(wheels.glob(f"sglang-{version}-*.whl"))), None)
    src = wheels / f"src-{version}"
    if not (src / "sglang").is_dir():
        src = cache / f"src-{version}"
        if not (src / "sglang").is_dir():
            if wheel is None:
                subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(cache), f"sglang=={version}"], check=True)
                wheel = next(iter(sorted(cache.glob(f"sglang-{version}-*.whl"))))
            import zipfile

            with zipfile.ZipFile(wheel) as archive:
                archive.extractall(src, [n for n in archive.namelist() if n.startswith("sglang/")])
    runtime = prepare_runtime(version, wheel, cache)
    return Release(version, src, runtime), wheel



def main(argv: list[str] | None = None) -> None:
    """The benchmark: oracle and plugin, timings, pyright, then the report (see ../check_speed.py)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--modules", type=int, default=200, help="plugin modules (.py files) to generate")
    parser.add_argument("--refs", type=int, default=1000, help="upstream references to write")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--break-share", type=float, default=0.15, help="share of references that break on --new")
    parser.add_argument("--old", default="0.5.17", help="release the plugin is written against")
    parser.add_argument("--new", default="0.5.23", help="release the plugin is checked against")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per figure (medians are reported)")
    parser.add_argument("--skip-pyright", action="store_true")
    parser.add_argument("--skip-loader-check", action="store_true", help="skip importing the generated plugin on both releases")
    parser.add_argument("--keep", type=Path, help="write the plugin, truth table and results here (kept)")
    parser.add_argument("--wheels", type=Path, default=DEFAULT_WHEELS, help="folder with sglang-X wheels and unpacked src-X trees")
    parser.add_argument("--cache", type=Path, default=Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "harness-bench", help="oracle/harvest cache")
    parser.add_argument("--harness", type=Path, default=REPO, help="harness source tree to measure (its PYTHONPATH)")
    args = parser.parse_args(argv)
    args.cache.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="bench-check-speed-"))
    out = args.keep.resolve() if args.keep else work
    plugin_root = out / "plugin"
    log(f"cpus: {os.cpu_count()}, load {loadavg()}; cache {args.cache}; work {work}")

    try:
        old, old_wheel = find_release(args.old, args.wheels, args.cache)
        new, new_wheel = find_release(args.new, args.wheels, args.cache)

        # ---- oracle and plugin
        harvest = load_or_harvest(old, args.cache)
        imported = sum(1 for v in harvest.values() if v.get("import") == "ok")
        log(f"harvest: {imported}/{len(harvest)} modules of {old.label} import in this runtime")
        pool = build_pool(harvest)
        add_named(pool, harvest, registry_candidates(old.src_root, new.src_root), "registry_key", "key", "item")
        add_named(pool, harvest, dataclass_candidates(old.src_root, new.src_root), "field", "field", "field")
        verdicts = oracle_verdicts(pool, (old, new), args.cache)
        rng = random.Random(args.seed)
        sampler = Sampler(pool, verdicts, harvest, rng, args.break_share)
        log(f"pool: {len(pool)} candidate references, {len(sampler.kept)} kept by the oracle ({sum(v[0] == 'broken' for v in sampler.kept.values())} break on {new.label})")
        builders, stats = generate_plugin(sampler, plugin_root, args.modules, args.refs, rng)
        truth = {(r.file, r.line): r for mb in builders for r in mb.refs}
        log(f"plugin: {stats['files']} files, {len(truth)} references, {sum(r.status == 'broken' for r in truth.values())} break on {new.label} -> {plugin_root}")

        loader = {}
        if not args.skip_loader_check:
            for side, release in (("old", old), ("new", new)):
                log(f"loader check: importing the plugin and applying its hooks on {release.label}")
                loader[side] = loader_check(release, plugin_root, builders, args.cache)

        # ---- timings
        seed_dir, manifest_seconds = seed_release(args.new, new_wheel, args.harness, args.cache)
        # the release the plugin declares (sglang>=old) is unpacked too, as on a machine that ported
        # from it: `check` uses it as its baseline (overrides of base methods removed since then)
        old_seed, _ = seed_release(args.old, old_wheel, args.harness, args.cache)
        release_root = Path(json.loads((seed_dir / ".complete").read_text())["root"])
        seed_before = sorted(os.listdir(seed_dir)) + sorted(os.listdir(release_root))
        log(f"parse reference: ast.parse of every .py file of {new.label} x{args.repeat} (load {loadavg()})")
        parse = time_parse(release_root / "sglang", args.repeat)
        startup = time_startup(args.harness, args.repeat)
        cold_runs, cached_runs, cold_cpu, cached_cpu, last = [], [], [], [], None
        edited_runs: list[float] = []  # index cached, one plugin file touched: the scan and judging rerun
        for index in range(args.repeat):
            cache = cold_cache(seed_dir, old_seed)
            log(f"harness check cold #{index + 1} (load {loadavg()})")
            last = run_check(plugin_root, args.new, args.harness, cache)
            cold_runs.append(last["seconds"])
            cold_cpu.append(last["cpu"])
            if index == args.repeat - 1:
                for cached_index in range(args.repeat):
                    log(f"harness check cached #{cached_index + 1} (load {loadavg()})")
                    cached = run_check(plugin_root, args.new, args.harness, cache)
                    cached_runs.append(cached["seconds"])
                    cached_cpu.append(cached["cpu"])
                for edited_index in range(args.repeat):
                    touched = next(iter(sorted(plugin_root.rglob("*.py"))))
                    os.utime(touched)
                    log(f"harness check after touching {touched.relative_to(plugin_root)} #{edited_index + 1} (load {loadavg()})")
                    edited_runs.append(run_check(plugin_root, args.new, args.harness, cache)["seconds"])
            shutil.rmtree(cache, ignore_errors=True)
        seed_after = sorted(os.listdir(seed_dir)) + sorted(os.listdir(release_root))
        if seed_after != seed_before:
            log(f"WARNING: harness wrote into the release record / source tree ({sorted(set(seed_after) - set(seed_before))}): later 'cold' runs may not be cold")
        flags, flag_kinds, flag_rule = harness_flags(last["payload"], plugin_root)
        harness_score = score(flags, truth)

        # ---- pyright
        pyright = None
        if not args.skip_pyright:
            probe = probe_modules(old, new)
            runs = {}
            for side, release in (("old", old), ("new", new)):
                log(f"pyright with {release.label} as the import root")
                runs[side] = run_pyright(plugin_root, release, probe, work)
            resolves = runs["old"].get("probe_errors") == [2] and runs["new"].get("probe_errors") == [1]
            pflags = pyright_flags(runs["old"], runs["new"]) if "error" not in runs["old"] and "error" not in runs["new"] else set()
            pyright = {"runs": runs, "resolves": resolves, "probe": probe, "flags": pflags, "score": score(pflags, truth)}

        timings = Timings(parse, startup, manifest_seconds, cold_runs, cached_runs, cold_cpu, cached_cpu, edited_runs, last)
        results = Results(args, old, new, harvest, sampler, stats, truth, loader, builders, timings, flags, flag_kinds, flag_rule, harness_score, pyright)
        report(results)
        if args.keep:
            write_results(out, results)
    finally:
        shutil.rmtree(work, ignore_errors=True)
