"""Timings: the `ast.parse` reference, the seeded HARNESS_CACHE_DIR, `harness check` runs."""

from __future__ import annotations

import ast
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def loadavg() -> str:
    try:
        return "/".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return "?"


def time_parse(package_dir: Path, repeat: int) -> dict:
    """The reference: `ast.parse` of every .py file of the release, one process, one core.
    Wall time (the figure the issue asks for) and CPU time (steadier on a shared machine)."""
    files = sorted(package_dir.rglob("*.py"))
    times, cpu, failed = [], [], 0
    for _ in range(repeat):
        start, start_cpu = time.perf_counter(), time.process_time()
        failed = 0
        for path in files:
            try:
                ast.parse(path.read_bytes(), filename=str(path))
            except (SyntaxError, ValueError):
                failed += 1
        times.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return {"seconds": median(times), "runs": times, "cpu": median(cpu), "files": len(files), "mb": sum(p.stat().st_size for p in files) / 1e6, "unparsable": failed}


def harness_env(harness_path: Path, cache_dir: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "HARNESS_CACHE_DIR")}
    env.update(PYTHONPATH=str(harness_path), HARNESS_CACHE_DIR=str(cache_dir), PYTHONDONTWRITEBYTECODE="1")
    return env


def seed_release(version: str, wheel: Path | None, harness_path: Path, bench_cache: Path) -> tuple[Path, float]:
    """A HARNESS_CACHE_DIR holding release `version` as right after `resolve_upstream` fetched it
    (record + unpacked source + per-file manifest), built from the local wheel when there is one so
    no download is ever timed. Returns (that directory, seconds the manifest hashing took)."""
    seed = bench_cache / f"harness-seed-{version}"
    if (seed / ".complete").exists():
        return seed, json.loads((seed / ".complete").read_text())["manifest_seconds"]
    shutil.rmtree(seed, ignore_errors=True)
    seed.mkdir(parents=True)
    script = textwrap.dedent(
        """
        import hashlib, json, sys, time
        from pathlib import Path
        from harness.knowledge.upstream import source as upstream
        version, wheel = sys.argv[1], sys.argv[2]
        if wheel:
            digest = hashlib.sha256(Path(wheel).read_bytes()).hexdigest()
            root = upstream.cache_dir() / "src" / f"release-{digest[:20]}"
            upstream._unpack_atomically(root, lambda dest: upstream._extract_wheel_source(Path(wheel), dest))
            record = upstream.cache_dir() / "releases" / f"sglang-{version}.json"
            record.parent.mkdir(parents=True, exist_ok=True)
            record.write_text(json.dumps({"root": str(root), "fingerprint": f"release-{digest[:20]}"}))
        start = time.perf_counter()
        source = upstream.resolve_upstream(f"sglang=={version}")  # download only when no wheel was given
        print(json.dumps({"root": str(source.root), "manifest_seconds": time.perf_counter() - start}))
        """
    )
    proc = subprocess.run([sys.executable, "-c", script, version, str(wheel or "")], check=False, capture_output=True, text=True, env=harness_env(harness_path, seed), cwd=tempfile.gettempdir())
    if proc.returncode != 0:
        raise RuntimeError(f"could not prepare sglang=={version} for harness: {proc.stderr.strip()[-800:]}")
    info = json.loads(proc.stdout.strip().splitlines()[-1])
    (seed / ".complete").write_text(json.dumps(info))
    return seed, info["manifest_seconds"]


def cold_cache(*seeds: Path) -> Path:
    """A fresh HARNESS_CACHE_DIR with only the releases' records, manifests and (links to) their
    unpacked sources: everything `check` derives (indexes, ...) must be rebuilt."""
    cache = Path(tempfile.mkdtemp(prefix="bench-harness-cold-"))
    for seed in seeds:
        for name in ("releases", "manifests"):
            if (seed / name).exists():
                shutil.copytree(seed / name, cache / name, dirs_exist_ok=True)
        if (seed / "src").exists():
            (cache / "src").mkdir(exist_ok=True)
            for entry in (seed / "src").iterdir():
                if not (cache / "src" / entry.name).exists():
                    (cache / "src" / entry.name).symlink_to(entry.resolve(), target_is_directory=True)
    return cache


def run_check(plugin_root: Path, version: str, harness_path: Path, cache: Path, distribution: str = "sglang") -> dict:
    """One `harness check --json` against `distribution==version`, as CI runs it; wall time
    includes interpreter start-up."""
    command = [sys.executable, "-m", "harness", "check", "--plugin", str(plugin_root), "--upstream", f"{distribution}=={version}", "--json"]
    workdir = tempfile.mkdtemp(prefix="bench-cwd-")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(command, check=False, capture_output=True, text=True, env=harness_env(harness_path, cache), cwd=workdir, timeout=1800)
    seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    left_behind = os.listdir(workdir)
    shutil.rmtree(workdir, ignore_errors=True)
    try:
        payload = json.loads(proc.stdout)
    except json.JSONDecodeError:
        payload = None
    return {"seconds": seconds, "cpu": cpu, "exit": proc.returncode, "payload": payload, "stderr": proc.stderr[-2000:], "cwd_files": left_behind}


def time_startup(harness_path: Path, repeat: int) -> float:
    """`python -m harness --help`: the floor under any CLI run (interpreter + CLI imports)."""
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "harness", "--help"], check=False, capture_output=True, env=harness_env(harness_path, Path(tempfile.gettempdir())), cwd=tempfile.gettempdir())
        runs.append(time.perf_counter() - start)
    return median(runs)
