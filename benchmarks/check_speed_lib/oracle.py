"""Running the probe on a release, and the oracle built on it: harvest what the old release
defines, build the candidate references, execute each against both releases (cached)."""

from __future__ import annotations

import ast
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from .common import (
    AREAS,
    MODEL_MODULES,
    ORACLE_VERSION,
    RUNTIME_PACKAGES,
    SCRIPT,
    log,
    stable_hash,
)


@dataclass
class Release:
    version: str
    src_root: Path  # directory holding sglang/
    runtime: Path | None  # side directory with the release's pinned light dependencies

    @property
    def label(self) -> str:
        return f"sglang=={self.version}"


def run_probe(release: Release, mode: str, units: list[str], cache: Path, extra: dict | None = None, first_timeout: float = 240, timeout: float = 45, label: str = "") -> dict:
    """Run the probe over `units` (module names), restarting it past any unit that hangs or kills
    the interpreter (one sglang module compiles a C++ extension at import time). Returns unit ->
    result; a unit that hung or crashed gets {"probe_error": ...}."""
    results: dict = {}
    remaining = list(units)
    log_path = cache / f"probe-{release.version}.log"
    started = time.time()
    while remaining:
        task = {"mode": mode, "units": remaining, "src_root": str(release.src_root), "extra_paths": [str(release.runtime)] if release.runtime else [], **(extra or {})}
        task_file = Path(tempfile.mkstemp(prefix="bench-probe-", suffix=".json")[1])
        task_file.write_text(json.dumps(task))
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "HARNESS_CACHE_DIR")}
        env.update(CUDA_VISIBLE_DEVICES="", HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false", PYTHONDONTWRITEBYTECODE="1")
        with open(log_path, "a") as log_file:
            proc = subprocess.Popen([sys.executable, str(SCRIPT), "_probe", str(task_file)], stdout=subprocess.PIPE, stderr=log_file, text=True, env=env, cwd=tempfile.gettempdir(), start_new_session=True)
            lines: queue.Queue = queue.Queue()
            threading.Thread(target=lambda lines=lines, proc=proc: ([lines.put(line) for line in proc.stdout], lines.put(None)), daemon=True).start()
            current, first = None, True
            while True:
                try:
                    line = lines.get(timeout=first_timeout if first else timeout)
                except queue.Empty:
                    os.killpg(proc.pid, signal.SIGKILL)  # the probe's own process group
                    proc.wait()
                    if current is not None:
                        results[current] = {"probe_error": "timeout"}
                    break
                if line is None:
                    proc.wait()
                    if current is not None and current not in results:
                        results[current] = {"probe_error": f"interpreter died (exit {proc.returncode})"}
                    break
                message = json.loads(line)
                if message["event"] == "begin":
                    current, first = message["unit"], False
                elif message["event"] == "result":
                    results[message["unit"]] = message["data"]
                    if len(results) % 100 == 0:
                        log(f"  {label or mode} {release.label}: {len(results)}/{len(units)} ({time.time() - started:.0f} s)")
        task_file.unlink(missing_ok=True)
        before = len(remaining)
        remaining = [u for u in remaining if u not in results]
        if len(remaining) == before:
            raise RuntimeError(f"the probe on {release.label} made no progress; see {log_path}")
    return results


def prepare_runtime(version: str, wheel: Path | None, cache: Path) -> Path | None:
    """A side directory (prepended to sys.path in the probe) holding the versions of a few light
    dependencies that this release pins and the venv does not satisfy (transformers and what it
    needs, xgrammar, einops, ...), installed with `pip --no-deps --target`."""
    from importlib import metadata

    from packaging.requirements import Requirement

    target = cache / f"runtime-{version}"
    if (target / ".complete").exists():
        return target
    if wheel is None:
        return None
    import zipfile

    with zipfile.ZipFile(wheel) as archive:
        meta = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        requirements = [Requirement(line.split(":", 1)[1].strip()) for line in archive.read(meta).decode().splitlines() if line.startswith("Requires-Dist:")]
    wanted = [r for r in requirements if r.name.lower().replace("_", "-") in {p.replace("_", "-") for p in RUNTIME_PACKAGES} and (r.marker is None or r.marker.evaluate({"extra": ""}))]

    def satisfied(requirement, paths) -> bool:
        for dist in metadata.distributions(path=paths):
            if (dist.metadata["Name"] or "").lower().replace("_", "-") == requirement.name.lower().replace("_", "-"):
                return requirement.specifier.contains(dist.version, prereleases=True)
        return False

    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    for _ in range(3):
        paths = [str(target), *sys.path]
        missing = [r for r in wanted if not satisfied(r, paths)]
        if not missing:
            break
        log(f"  runtime {version}: pip install --no-deps --target {target} {' '.join(map(str, missing))}")
        proc = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--upgrade", "--target", str(target), *map(str, missing)], check=False, capture_output=True, text=True)
        if proc.returncode != 0:
            log(f"  runtime {version}: pip failed, the oracle runs on the venv alone: {proc.stderr.strip()[-300:]}")
            break
        # what the freshly installed packages need that neither they nor the venv provide
        for dist in metadata.distributions(path=[str(target)]):
            for line in dist.requires or []:
                requirement = Requirement(line)
                applies = requirement.marker is None or requirement.marker.evaluate({"extra": ""})
                if applies and not satisfied(requirement, [str(target), *sys.path]) and requirement.name.lower() not in ("torch", "triton", "numpy"):
                    wanted.append(requirement)
    (target / ".complete").touch()
    return target


# ============================================================================ harvest, pool, oracle


def candidate_modules(src_root: Path) -> list[str]:
    """Every module of the plugin-facing areas of sglang/srt in a release (tests left out)."""
    modules = []
    for area in AREAS:
        base = src_root / Path(*area.split("."))
        if base.with_suffix(".py").exists():
            modules.append(area)
        if area == "sglang.srt.models":
            modules += [f"{area}.{m}" for m in MODEL_MODULES if (base / f"{m}.py").exists()]
            continue
        if not base.is_dir():
            continue
        for path in sorted(base.rglob("*.py")):
            rel = path.relative_to(src_root).with_suffix("")
            parts = list(rel.parts)
            if any(p in ("tests", "test", "benchmark", "benchmarks") for p in parts) or parts[-1].startswith(("test_", "unit_test")):
                continue
            if parts[-1] == "__init__":
                parts = parts[:-1]
            modules.append(".".join(parts))
    # longest area first in AREAS order would list sub-areas twice: deduplicate, keep order
    return list(dict.fromkeys(modules))


def load_or_harvest(release: Release, cache: Path) -> dict:
    """unit -> harvest info for every candidate module of `release` (cached)."""
    path = cache / f"harvest-v{ORACLE_VERSION}-{release.version}.json"
    if path.exists():
        return json.loads(path.read_text())
    modules = candidate_modules(release.src_root)
    log(f"harvest: importing {len(modules)} modules of {release.label} in a subprocess (a few minutes, cached)")
    harvest = run_probe(release, "harvest", modules, cache, label="harvest")
    path.write_text(json.dumps(harvest))
    return harvest


def ref_key(spec: dict) -> str:
    return json.dumps({k: v for k, v in spec.items() if k not in ("key", "values", "pos_names")}, sort_keys=True)


def _capped(items, limit: int, salt: str):
    return sorted(items, key=lambda item: stable_hash(salt + str(item[0] if isinstance(item, tuple) else item)))[:limit]


def call_shape(params: list | None, salt: str) -> dict | None:
    """A call with keyword arguments, as a plugin writes it: required positionals passed by
    position, required keyword-only ones and up to three optional ones by keyword."""
    if not params:
        return None
    required_pos = [p for p in params if p[1] in (0, 1) and not p[2]]
    required_kw = [p for p in params if p[1] == 3 and not p[2]]
    optional = [p for p in params if p[1] in (1, 3) and p[2]]
    if len(required_pos) > 4 or not (optional or required_kw):
        return None
    chosen = {p[0] for p in _capped([(p[0],) for p in optional], 3, salt)} if optional else set()
    keywords = [p for p in params if p in required_kw or p[0] in chosen]
    return {"npos": len(required_pos), "pos_names": [p[0] for p in required_pos], "kw": [p[0] for p in keywords], "values": {p[0]: (p[3] or "None") for p in keywords}}


def build_pool(harvest: dict) -> dict[str, dict]:
    """Every candidate reference the generator may write, as an executable spec (key -> spec)."""
    pool: dict[str, dict] = {}

    def add(**spec):
        spec["key"] = ref_key(spec)
        pool[spec["key"]] = spec

    for module, info in sorted(harvest.items()):
        if info.get("import") != "ok":
            continue
        add(kind="import", form="module", module=module)
        for name, meta in _capped(list(info["names"].items()), 80, module):
            add(kind="import", form="from", module=module, name=name, t=meta["t"], where=meta["where"])
            if meta["where"] != "incidental":
                add(kind="reference", form="attr-module", module=module, path=name, t=meta["t"])
        for name, finfo in _capped(list(info["functions"].items()), 40, module):
            shape = call_shape(finfo["params"], f"{module}.{name}")
            if shape:
                add(kind="call", form="call", module=module, path=name, **shape)
            add(kind="hook", form="hook", module=module, target=f"{module}.{name}", hook_type="AROUND")
        for cname, cinfo in _capped(list(info["classes"].items()), 12, module):
            members = cinfo["members"]
            salt = f"{module}.{cname}"
            if cinfo["enum"]:
                for member in _capped([m for m, e in members.items() if e["t"] == "member"], 10, salt):
                    add(kind="reference", form="enum", module=module, path=f"{cname}.{member}")
                continue
            members = {m: e for m, e in members.items() if not m.startswith("_abc_")}  # ABCMeta's bookkeeping
            for member in _capped([m for m, e in members.items() if e["t"] != "member" and not m.startswith("__")], 10, salt + "attr"):
                add(kind="reference", form="attr-class", module=module, path=f"{cname}.{member}", t=members[member]["t"])
            shape = call_shape(cinfo["init_params"], salt)
            if shape:
                add(kind="call", form="ctor", module=module, path=cname, **shape)
            methods = [m for m, e in members.items() if e["t"] == "method" and e.get("params") and e["params"][0][1] in (0, 1)]
            for method in _capped(methods, 6, salt + "hook"):
                if method != "__init__":
                    add(kind="hook", form="hook", module=module, target=f"{module}.{cname}.{method}", hook_type="AROUND")
                    if stable_hash(f"{salt}.{method}:colon") % 5 == 0:  # the `module:Class.attr` form
                        add(kind="hook", form="hook", module=module, target=f"{module}:{cname}.{method}", hook_type="AROUND")
            if not cinfo["subclassable"]:
                continue
            for method in _capped(methods, 10, salt + "override"):
                params = members[method]["params"]
                add(kind="subclass", form="override", module=module, cls=cname, member=method, params=params)
                shape = super_shape(params)
                add(kind="subclass", form="super", module=module, cls=cname, member=method, npos=shape["npos"], kw=shape["kw"])
            for member in _capped([m for m, e in members.items() if e["t"] in ("method", "attr", "property", "other") and m != "__init__"], 10, salt + "self"):
                add(kind="subclass", form="self", module=module, cls=cname, member=member, t=members[member]["t"])
    if harvest.get("sglang.srt.platforms.device_mixin", {}).get("import") == "ok":
        add(kind="reference", form="enum", module="sglang.srt.platforms.device_mixin", path="PlatformEnum.OOT")
    interface = harvest.get("sglang.srt.platforms.interface", {})
    platform = interface.get("classes", {}).get("SRTPlatform") if interface.get("import") == "ok" else None
    for method, entry in (platform or {}).get("members", {}).items():
        if entry["t"] == "method" and entry.get("params") and not method.startswith("__"):
            add(kind="override", form="platform", module="sglang.srt.platforms.interface", member=method, params=entry["params"], owner=entry["owner"])
    return pool


def _release_trees(*src_roots: Path):
    """(module, ast) of every sglang/srt module of the releases that parses."""
    for root in src_roots:
        for path in sorted((root / "sglang" / "srt").rglob("*.py")):
            try:
                tree = ast.parse(path.read_text(encoding="utf-8"))
            except (OSError, SyntaxError, ValueError):
                continue
            yield ".".join(path.relative_to(root).with_suffix("").parts).removesuffix(".__init__"), tree


def registry_candidates(*src_roots: Path) -> dict[tuple[str, str], set[str]]:
    """(module, dict name) -> string keys either release writes into a module-level dict of that
    module: the literal's keys, `NAME["k"] = …` in the module, and `@register_…("k")` decorators of
    the module when it holds exactly one such dict (SGLang's attention_registry.py shape). Only a
    candidate list: the oracle (`key in dict` at run time) decides each key."""
    found: dict[tuple[str, str], set[str]] = defaultdict(set)
    for module, tree in _release_trees(*src_roots):
        dicts = {}
        for stmt in tree.body:
            target = stmt.targets[0] if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 else stmt.target if isinstance(stmt, ast.AnnAssign) else None
            if isinstance(target, ast.Name) and isinstance(getattr(stmt, "value", None), ast.Dict) and target.id.isupper():
                dicts[target.id] = {k.value for k in stmt.value.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}
        if not dicts:
            continue
        for node in ast.walk(tree):
            stored = isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store) and isinstance(node.value, ast.Name)
            if stored and node.value.id in dicts and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
                dicts[node.value.id].add(node.slice.value)
            if len(dicts) == 1 and isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                for deco in node.decorator_list:
                    if isinstance(deco, ast.Call) and isinstance(deco.func, ast.Name) and deco.func.id.startswith("register") and deco.args and isinstance(deco.args[0], ast.Constant) and isinstance(deco.args[0].value, str):
                        next(iter(dicts.values())).add(deco.args[0].value)
        for name, keys in dicts.items():
            found[(module, name)] |= keys
    return found


def dataclass_candidates(*src_roots: Path) -> dict[tuple[str, str], set[str]]:
    """(module, class) -> annotated names in the body of a module-level `@dataclass` class, in
    either release: candidate fields only; the oracle decides each on the loaded class."""
    found: dict[tuple[str, str], set[str]] = defaultdict(set)
    for module, tree in _release_trees(*src_roots):
        for node in tree.body:
            decorators = [d.func if isinstance(d, ast.Call) else d for d in node.decorator_list] if isinstance(node, ast.ClassDef) else []
            if any((d.attr if isinstance(d, ast.Attribute) else getattr(d, "id", "")) == "dataclass" for d in decorators):
                found[(module, node.name)] |= {s.target.id for s in node.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)}
    return found


def add_named(pool: dict[str, dict], harvest: dict, candidates: dict[tuple[str, str], set[str]], kind: str, form: str, item: str) -> None:
    """One reference per candidate (`item`: the key or field) of a name the old runtime's module
    defines: registry-key reads (`NAME["k"]`), field reads (`obj.f` on an annotated parameter)."""
    for (module, name), items in sorted(candidates.items()):
        if harvest.get(module, {}).get("import") != "ok" or name not in harvest[module]["names"]:
            continue
        for value in _capped(sorted(items), 12, f"{module}.{name}"):
            spec = {"kind": kind, "form": form, "module": module, "path": name, item: value}
            spec["key"] = ref_key(spec)
            pool[spec["key"]] = spec


def super_shape(params: list) -> dict:
    """`super().m(...)` forwarding an override's own parameters (self excluded)."""
    rest = params[1:]
    return {"npos": sum(1 for p in rest if p[1] in (0, 1)), "kw": [p[0] for p in rest if p[1] == 3]}


def oracle_verdicts(pool: dict, releases: tuple[Release, Release], cache: Path) -> dict[str, dict]:
    """key -> {"old": verdict, "new": verdict}; each verdict {"status": ok|broken|error, "why"}.
    Executed in the runtime of each release, cached per release and reference."""
    combined: dict[str, dict] = {key: {} for key in pool}
    for side, release in zip(("old", "new"), releases):
        path = cache / f"oracle-v{ORACLE_VERSION}-{release.version}.json"
        known = json.loads(path.read_text()) if path.exists() else {}
        todo = [spec for key, spec in pool.items() if key not in known]
        if todo:
            groups: dict[str, list] = defaultdict(list)
            for spec in todo:
                groups[spec["module"]].append(spec)
            log(f"oracle: executing {len(todo)} references ({len(groups)} modules) on {release.label} (cached afterwards)")
            results = run_probe(release, "eval", sorted(groups), cache, extra={"groups": groups}, label="oracle")
            for module, specs in groups.items():
                data = results.get(module, {})
                for spec in specs:
                    known[spec["key"]] = data.get(spec["key"]) or {"status": "error", "why": data.get("probe_error", "no verdict")}
            tmp = path.with_suffix(".tmp")
            tmp.write_text(json.dumps(known))
            tmp.replace(path)
        for key in pool:
            combined[key][side] = known[key]
    return combined


def classify(verdict: dict) -> tuple[str, str, str]:
    """(ok | broken | excluded, why, risk) for one reference across the two releases."""
    old, new = verdict["old"], verdict["new"]
    if old["status"] != "ok":
        return "excluded", f"fails on the old release: {old['why']}", ""
    if new["status"] == "error":
        return "excluded", f"new release module does not import: {new['why']}", ""
    return new["status"], new["why"], new.get("risk", "")
