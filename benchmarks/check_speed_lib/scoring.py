"""Scoring flags against the oracle's truth table, for harness and for a pyright diagnostics diff."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from .common import KINDS
from .oracle import Release


def normalise(path: str, root: Path) -> str:
    """A reported path relative to the plugin root (as the truth table has it)."""
    p = Path(path)
    if p.is_absolute():
        for candidate, base in ((p, root), (p.resolve(), root.resolve())):
            try:
                return candidate.relative_to(base).as_posix()
            except ValueError:
                continue
        return str(p)
    return p.as_posix().removeprefix("./")


def harness_flags(payload: dict | None, plugin_root: Path) -> tuple[set, Counter, str]:
    """(file, line) of every finding `check` marks as breaking. Uses the finding's `breaking` when
    present, else (today's output) status missing / not_on_base on a live dependency."""
    flags, kinds, rule = set(), Counter(), "breaking field"
    for finding in (payload or {}).get("findings", []):
        if "breaking" in finding:
            breaking = bool(finding["breaking"])
        else:
            rule = "status in {missing, not_on_base} and live (no `breaking` field in this build)"
            breaking = finding.get("status") in ("missing", "not_on_base") and finding.get("live", True)
        if breaking and finding.get("file") and finding.get("line"):
            flags.add((normalise(finding["file"], plugin_root), int(finding["line"])))
            kinds[finding.get("kind", "?")] += 1
    return flags, kinds, rule


def score(flags: set, truth: dict) -> dict:
    """Per reference kind: references, truly broken, flagged & broken (hits), flagged & fine (false
    positives), and the same for primary breakages (the first failing line of a chain: a line that
    fails only because the import it uses fails is not primary). Flagged overrides that are only
    at risk (the base gained optional parameters) are counted apart, as are flagged lines that
    carry no reference."""
    table = {kind: Counter() for kind in KINDS}
    for where, ref in truth.items():
        row = table[ref.kind]
        row["refs"] += 1
        row["broken"] += ref.status == "broken" and not ref.caught  # a caught line has nothing to recall
        row["caught_broken"] += ref.status == "broken" and ref.caught
        row["primary"] += ref.primary
        if where in flags:
            if ref.caught:  # handled: flagging it breaking is wrong whatever the oracle says
                row["fp"] += 1
            elif ref.status == "broken":
                row["hit"] += 1
                row["primary_hit"] += ref.primary
            elif ref.ambiguous:
                row["at_risk"] += 1
            else:
                row["fp"] += 1
    total = Counter()
    for row in table.values():
        total.update(row)
    table["all"] = total
    return {"table": table, "off_reference": len(flags - set(truth))}


# ============================================================================ pyright


def pyright_env(workdir: Path) -> tuple[str, str]:
    """A venv-shaped directory whose site-packages links every package of the running interpreter
    except sglang, so that the only sglang pyright can find is the release under test."""
    import sysconfig

    site_packages = Path(sysconfig.get_paths()["purelib"])
    env_dir = workdir / "env"
    target = env_dir / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
    target.mkdir(parents=True, exist_ok=True)
    for entry in site_packages.iterdir():
        if entry.name.lower().startswith("sglang") or (target / entry.name).exists():
            continue
        (target / entry.name).symlink_to(entry)
    (env_dir / "pyvenv.cfg").write_text(f"home = {Path(sys.executable).parent}\nversion = {sys.version.split()[0]}\n")
    return str(workdir), "env"


def run_pyright(plugin_root: Path, release: Release, probe: tuple[str, str], workdir: Path) -> dict:
    """pyright over the plugin with `release` as the import root; error diagnostics + wall time.
    A probe file imports a module only the old release has and one only the new release has: the
    run resolves sglang from this release iff exactly the matching import resolves."""
    pyright = shutil.which("pyright", path=str(Path(sys.executable).parent)) or shutil.which("pyright")
    if pyright is None:
        return {"seconds": 0.0, "error": "pyright is not installed (pip install pyright)", "diagnostics": [], "resolves": None}
    run_dir = workdir / f"pyright-{release.version}"
    run_dir.mkdir(parents=True, exist_ok=True)
    probe_dir = run_dir / "probe"
    probe_dir.mkdir(exist_ok=True)
    (probe_dir / "resolution_probe.py").write_text(f"import {probe[0]}  # old release only\nimport {probe[1]}  # new release only\n")
    venv_path, venv = pyright_env(workdir)
    link = run_dir / "benchdev"  # pyright takes only relative include paths: link the package in
    if not link.exists():
        link.symlink_to((plugin_root / "benchdev").resolve(), target_is_directory=True)
    config = {
        "include": ["benchdev", "probe"],
        "extraPaths": [str(release.src_root)],
        "venvPath": venv_path,
        "venv": venv,
        "pythonVersion": f"{sys.version_info.major}.{sys.version_info.minor}",
        "pythonPlatform": "Linux",
        "typeCheckingMode": "standard",
    }
    (run_dir / "pyrightconfig.json").write_text(json.dumps(config, indent=2))
    start = time.perf_counter()
    proc = subprocess.run([pyright, "--outputjson", "-p", str(run_dir / "pyrightconfig.json")], check=False, capture_output=True, text=True, cwd=run_dir)
    seconds = time.perf_counter() - start
    try:
        report = json.loads(proc.stdout)
    except json.JSONDecodeError:
        return {"seconds": seconds, "error": (proc.stderr or proc.stdout)[-1000:], "diagnostics": [], "resolves": None}
    diagnostics, probe_errors = [], set()
    for d in report.get("generalDiagnostics", []):
        if d.get("severity") != "error":
            continue
        line = d["range"]["start"]["line"] + 1
        if Path(d["file"]).parent == probe_dir:
            probe_errors.add(line)
            continue
        diagnostics.append({"file": normalise(d["file"], run_dir), "line": line, "rule": d.get("rule", ""), "message": d.get("message", "")})
    return {"seconds": seconds, "diagnostics": diagnostics, "probe_errors": sorted(probe_errors), "version": report.get("version"), "summary": report.get("summary", {})}


def probe_modules(old: Release, new: Release) -> tuple[str, str]:
    def modules(root: Path) -> set[str]:
        base = root / "sglang" / "srt"
        return {".".join(p.relative_to(root).with_suffix("").parts) for p in base.rglob("*.py") if p.name != "__init__.py"}

    old_modules, new_modules = modules(old.src_root), modules(new.src_root)
    return min(old_modules - new_modules), min(new_modules - old_modules)


def pyright_flags(old_run: dict, new_run: dict) -> set:
    """Lines with an error in the new-release run that the old-release run does not have
    (same file, line and rule)."""
    before = {(d["file"], d["line"], d["rule"]) for d in old_run["diagnostics"]}
    return {(d["file"], d["line"]) for d in new_run["diagnostics"] if (d["file"], d["line"], d["rule"]) not in before}
