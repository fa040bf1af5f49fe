"""Speed and recall of `harness check` on a realistic generated plugin, beside a pyright diff.

    PYTHONPATH=. python benchmarks/check_speed.py [--modules 200] [--refs 1000] [--seed 0]
        [--skip-pyright] [--keep DIR] [--repeat 3] [--old 0.5.17] [--new 0.5.23]

Prints figures; asserts nothing (issue 7, Acceptance, third bullet). What it does:

1. Runtime harvest. In a subprocess running the *old* release's source (with the versions of a few
   light dependencies the release pins -- transformers, tokenizers, xgrammar, einops, ... -- in a
   side directory, see `prepare_runtime`, and torchvision mocked, see
   `_probe_install_torchvision_mock`), import every module of the plugin-facing parts of
   sglang/srt and record what it defines: classes with their members and signatures, functions
   with their parameters, constants, enum members.
2. Oracle. Every candidate reference built from that harvest (an import, an attribute through a
   module/class/enum, a call with keyword arguments, an override / `super()` call / `self.` member of
   an upstream base, a hook target, a platform override; issue 18's kinds: a registry read by key,
   a field of a dataclass read through an annotated parameter, lines inside a caught `try`) is
   *executed* against each release in a subprocess: `importlib.import_module` + `getattr`,
   `inspect.signature(...).bind(...)` with exactly the arguments the generated line passes,
   `inspect.getattr_static` on the base, the hook registry's own `pkgutil.resolve_name` + `getattr`,
   the platform class built mixin-first as Python builds it, `key in REGISTRY` once the modules
   filled it, `dataclasses.fields(cls)`.
   A reference is kept only when it works on the old release and, on the new one, either works or
   fails for an upstream reason (its module fails with ModuleNotFoundError naming that very sglang
   module and the file is gone). Verdicts are cached per release and reference.
3. Reference plugin. A seeded sampler writes ~N modules with ~R references the way real plugins
   are written (see `generate_plugin`), each reference on its own line, biased so that ~15 % of
   them break on the new release. The truth table is (file, line) -> oracle verdict.
4. Cross-check of the oracle with the real loader: the generated plugin is imported and its hooks
   applied (`HookRegistry.apply_hooks`) on both releases; every module must load on the old one, and
   the modules/hooks that fail on the new one must be exactly those the oracle predicts.
5. Timings, as ratios to `ast.parse` of every .py file of the new release on one core, measured in
   the same run: `harness check --json` cold (fresh HARNESS_CACHE_DIR holding only the unpacked
   release record and its manifest, as right after a fetch) and cached (second run).
6. Recall / false positives of the check vs the oracle, per kind, and the same for a pyright
   diagnostics diff (old vs new release as import root). Recall is printed on all breaking lines
   and on primary breakages only (a line that fails only because the import it uses fails is not
   primary). Overrides that still fit every call the base requires but lack optional parameters
   the base gained are "at risk": flagging them counts neither as a hit nor as a false positive.

Caches (harvest, oracle verdicts, runtime side directories, a HARNESS_CACHE_DIR seed holding the
unpacked release) live in --cache (~/.cache/harness-bench); nothing is written into the repo
unless --keep points there.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import os
import queue
import random
import re
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ORACLE_VERSION = 5  # bump when the oracle's semantics change: cached verdicts are keyed by it
DEFAULT_WHEELS = Path("/tmp/wheels")

# Parts of sglang/srt a hardware plugin plausibly depends on, with a weight for how often plugin
# modules wrap them (used to pick the upstream module a generated plugin module is "about").
AREAS = {
    "sglang.srt.layers.attention": 2.5,
    "sglang.srt.layers.moe": 1.2,
    "sglang.srt.layers.quantization": 1.0,
    "sglang.srt.layers": 2.5,
    "sglang.srt.managers": 2.0,
    "sglang.srt.model_executor": 2.0,
    "sglang.srt.mem_cache": 2.0,
    "sglang.srt.distributed": 1.5,
    "sglang.srt.utils": 1.5,
    "sglang.srt.platforms": 0.6,
    "sglang.srt.server_args": 1.0,
    "sglang.srt.environ": 0.4,
    "sglang.srt.configs": 1.0,
    "sglang.srt.sampling": 1.0,
    "sglang.srt.speculative": 0.8,
    "sglang.srt.model_loader": 0.6,
    "sglang.srt.lora": 0.4,
    "sglang.srt.compilation": 0.4,
    "sglang.srt.plugins": 0.2,
    "sglang.srt.models": 0.8,
}
MODEL_MODULES = ("llama", "qwen2", "qwen3", "qwen2_moe", "qwen3_moe", "deepseek_v2", "mixtral", "gemma3_causal")
# sglang's own pinned dependencies that are light enough to install beside the venv for the oracle
RUNTIME_PACKAGES = ("transformers", "tokenizers", "huggingface-hub", "xgrammar", "einops", "setproctitle", "uvloop", "partial_json_parser")
# "try": a line inside `try: … except (ImportError, AttributeError)`: whatever the oracle says, the
# handler catches it, so it must never be flagged breaking (issue 18, exception scope).
KINDS = ("import", "reference", "call", "subclass", "hook", "override", "registry_key", "field", "try")


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def stable_hash(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big")


# ============================================================================ the probe (subprocess)
#
# Everything in this section runs inside `python check_speed.py _probe TASK.json`, with one release's
# source first on sys.path. It never imports harness. It writes one JSON line per event to the
# original stdout; anything sglang prints goes to stderr (a log file).


def _probe_install_torchvision_mock() -> None:
    """sglang requires torchvision, but PyPI's builds need a CUDA torch (the venv has torch 2.13 CPU),
    and 0.5.17's sglang/srt/utils/common.py imports it at module level, so without a stand-in no
    0.5.17 module imports at all. This serves `torchvision` (only it) from mock modules whose every
    attribute is a mock class. sglang's own modules are never mocked."""
    import importlib.abc
    import importlib.machinery
    import types

    class MockMeta(type):
        def __getattr__(cls, name):
            if name.startswith("__"):
                raise AttributeError(name)
            return mock_class(name, cls.__module__)

    def mock_class(name, module):
        def instance_getattr(self, attr):
            if attr.startswith("__"):
                raise AttributeError(attr)
            return mock_class(attr, module)()

        namespace = {"__module__": module, "__init__": lambda self, *a, **k: None, "__getattr__": instance_getattr, "__call__": lambda self, *a, **k: self}
        return MockMeta(name, (), namespace)

    class Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
        def find_spec(self, name, path, target=None):
            if name.split(".")[0] == "torchvision":
                return importlib.machinery.ModuleSpec(name, self, is_package=True)
            return None

        def create_module(self, spec):
            module = types.ModuleType(spec.name)
            module.__path__ = []
            module.__file__ = None
            module.__version__ = "0.28.0"  # the release paired with torch 2.13

            def module_getattr(attr, _name=spec.name):
                if attr.startswith("__"):
                    raise AttributeError(attr)
                return mock_class(attr, _name)

            module.__getattr__ = module_getattr
            return module

        def exec_module(self, module):
            pass

    sys.meta_path.insert(0, Finder())


def _probe_literal(value) -> str | None:
    """repr of a default value when it is a literal we can write back into generated code."""
    import inspect

    if value is inspect.Parameter.empty:
        return None
    if value is None or type(value) in (bool, int, float):
        return repr(value)
    if type(value) is str and len(value) < 40 and value.isprintable():
        return repr(value)
    return None


def _probe_signature(obj):
    """inspect.signature, or None when the runtime cannot give one (builtins, or annotations that
    do not evaluate: msgspec evaluates type hints to build a Struct's signature)."""
    import inspect

    try:
        return inspect.signature(obj)
    except Exception:  # noqa: BLE001
        return None


def _probe_params(obj) -> list | None:
    signature = _probe_signature(obj)
    if signature is None:
        return None
    return [[p.name, int(p.kind), p.default is not p.empty, _probe_literal(p.default)] for p in signature.parameters.values()]


def _probe_top_level_names(module) -> set[str]:
    path = getattr(module, "__file__", None)
    if not path or not path.endswith(".py"):
        return set()
    try:
        tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return set()
    names = set()
    for stmt in tree.body:
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target] if isinstance(stmt, ast.AnnAssign) else []
        for target in targets:
            if isinstance(target, ast.Name):
                names.add(target.id)
    return names


def _probe_describe_class(cls) -> dict:
    import enum
    import inspect

    info = {"enum": isinstance(cls, enum.EnumMeta), "members": {}, "init_params": None, "subclassable": False}
    try:
        names = dir(cls)
    except Exception:
        names = []
    enum_members = set(getattr(cls, "__members__", {}) or {}) if info["enum"] else set()
    for name in names:
        if (name.startswith("__") and name != "__init__") or name.startswith("_abc_"):
            continue
        owner = next((k for k in cls.__mro__ if name in vars(k)), None)
        if owner is None or not (getattr(owner, "__module__", "") or "").startswith("sglang"):
            continue
        raw = vars(owner)[name]
        if name in enum_members:
            kind = "member"
        elif isinstance(raw, staticmethod):
            kind = "staticmethod"
        elif isinstance(raw, classmethod):
            kind = "classmethod"
        elif isinstance(raw, property):
            kind = "property"
        elif inspect.isfunction(raw):
            kind = "method"
        elif raw is None or isinstance(raw, (bool, int, float, str, tuple, frozenset)):
            kind = "attr"
        else:
            kind = "other"
        entry = {"t": kind, "owner": f"{owner.__module__}.{owner.__qualname__}"}
        if kind == "method":
            entry["params"] = _probe_params(raw)
        info["members"][name] = entry
    if not info["enum"]:
        info["init_params"] = _probe_params(cls)
        try:
            type("_BenchProbeSubclass", (cls,), {"__module__": "benchdev_probe"})
            info["subclassable"] = True
        except Exception:
            pass
    return info


def _probe_harvest(name: str) -> dict:
    """What module `name` defines on this release, seen by the runtime."""
    import importlib
    import inspect

    try:
        module = importlib.import_module(name)
    except BaseException as exc:  # noqa: BLE001 - any import failure only excludes the module
        return {"import": f"error: {type(exc).__name__}: {exc}"[:300]}
    assigned = _probe_top_level_names(module)
    info = {"import": "ok", "package": hasattr(module, "__path__"), "names": {}, "classes": {}, "functions": {}}
    for attr, obj in sorted(vars(module).items()):
        if attr.startswith("_") or inspect.ismodule(obj):
            continue
        if inspect.isclass(obj) or inspect.isfunction(obj):
            origin = getattr(obj, "__module__", None) or ""
            if not origin.startswith("sglang"):
                continue
            where = "defined" if origin == name else "reexport" if origin.startswith(name + ".") else "incidental"
            kind = "class" if inspect.isclass(obj) else "function"
            info["names"][attr] = {"t": kind, "where": where, "origin": origin}
            if where == "defined" and kind == "class":
                try:
                    info["classes"][attr] = _probe_describe_class(obj)
                except Exception:  # noqa: BLE001 - a class the runtime cannot introspect is left out
                    pass
            elif where == "defined":
                info["functions"][attr] = {"params": _probe_params(obj)}
        elif attr in assigned and (obj is None or isinstance(obj, (bool, int, float, str, tuple, frozenset, dict, list, set))):
            info["names"][attr] = {"t": "const", "where": "defined", "origin": name}
    return info


def _probe_import_status(name: str, src_root: str) -> tuple[str, str]:
    """ok | gone (the module itself is absent from this release) | error (anything else)."""
    import importlib

    try:
        importlib.import_module(name)
        return "ok", ""
    except ModuleNotFoundError as exc:
        missing = exc.name or ""
        relative = Path(src_root, *name.split("."))
        absent = not relative.with_suffix(".py").exists() and not (relative / "__init__.py").exists()
        if missing.startswith("sglang") and (name == missing or name.startswith(missing + ".")) and absent:
            return "gone", f"module {name} does not exist (ModuleNotFoundError: {missing})"
        return "error", f"ModuleNotFoundError: {exc}"[:300]
    except BaseException as exc:  # noqa: BLE001
        return "error", f"{type(exc).__name__}: {exc}"[:300]


def _probe_chain(obj, path: str):
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def _probe_signature_of(params: list):
    import inspect

    return inspect.Signature([inspect.Parameter(n, inspect._ParameterKind(k), default=None if d else inspect.Parameter.empty) for n, k, d, _ in params])


def _probe_minimal_call(signature) -> tuple[list, dict]:
    """The arguments a caller of `signature` must pass: required positionals, required keywords."""
    args, kwargs = [], {}
    for p in signature.parameters.values():
        if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            args.append(None)
        elif p.default is p.empty and p.kind == p.KEYWORD_ONLY:
            kwargs[p.name] = None
    return args, kwargs


def _probe_override_fits(base_function, written_params: list) -> tuple[bool, str, str]:
    """Does an override written with `written_params` accept every call the base's current
    signature demands (its required parameters)? If so, does it also accept the base's optional
    parameters (if not, the override is "at risk": it breaks when a caller passes one)? A base
    that cannot be introspected fits."""
    current = _probe_signature(base_function)
    if current is None:
        return True, "base signature not introspectable", ""
    written = _probe_signature_of(written_params)
    args, kwargs = _probe_minimal_call(current)
    try:
        written.bind(*args, **kwargs)
    except TypeError as exc:
        return False, f"override no longer fits the base signature {current}: {exc}", ""
    positional = [q for q in current.parameters.values() if q.kind in (q.POSITIONAL_ONLY, q.POSITIONAL_OR_KEYWORD)]
    unaccepted = []
    for p in current.parameters.values():
        if p.default is p.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        calls = []
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):  # passed by position
            calls.append(([None] * (positional.index(p) + 1), kwargs))
        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):  # passed by name
            calls.append((args, {**kwargs, p.name: None}))
        try:
            for call_args, call_kwargs in calls:
                written.bind(*call_args, **call_kwargs)
        except TypeError:
            unaccepted.append(p.name)
    return True, "", (f"the base gained optional parameter(s) the override does not accept: {', '.join(unaccepted)}" if unaccepted else "")


def _probe_shim_names(modules) -> set[str]:
    """Method names that a base module still names in a module-level table (a compatibility shim,
    e.g. 0.5.23's _LEGACY_KV_POOL_HOOKS, which serves overrides of removed methods)."""
    names = set()
    for module in modules:
        for value in vars(module).values():
            if isinstance(value, dict):
                items = list(value.keys()) + list(value.values())
            elif isinstance(value, (list, tuple, set, frozenset)):
                items = list(value)
            else:
                continue
            names.update(item for item in items if isinstance(item, str))
    return names


def _probe_evaluate(spec: dict) -> tuple[bool, str, str]:
    """Execute one reference the way the generated line does: (works, why not, risk); risk is set
    for an override that works for the calls the base demands but not for all it allows."""
    import importlib
    import inspect
    import pkgutil

    form, module = spec["form"], spec["module"]
    mod = sys.modules[module]
    try:
        if form == "module":
            return True, "", ""
        if form == "from":
            if hasattr(mod, spec["name"]):
                return True, "", ""
            try:
                importlib.import_module(f"{module}.{spec['name']}")
                return True, "", ""
            except ImportError:
                return False, f"cannot import name {spec['name']} from {module}", ""
        if form in ("attr-module", "attr-class", "enum"):
            _probe_chain(mod, spec["path"])
            return True, "", ""
        if form == "field":  # a dataclass's fields are what its instances have (on both releases)
            import dataclasses

            cls = _probe_chain(mod, spec["path"])
            if not dataclasses.is_dataclass(cls):
                raise TypeError(f"{spec['path']} is not a dataclass here: its instance fields are not known")
            if spec["field"] in {f.name for f in dataclasses.fields(cls)} or hasattr(cls, spec["field"]):
                return True, "", ""
            return False, f"{spec['path']} has no field {spec['field']!r}", ""
        if form == "key":  # the registry as the loaded modules filled it (decorators included)
            mapping = _probe_chain(mod, spec["path"])
            if spec["item"] in mapping:
                return True, "", ""
            return False, f"{spec['path']}[{spec['item']!r}] is not registered", ""
        if form in ("call", "ctor"):
            signature = _probe_signature(_probe_chain(mod, spec["path"]))
            if signature is None:
                return True, "signature not introspectable", ""
            signature.bind(*[None] * spec["npos"], **{k: None for k in spec["kw"]})
            return True, "", ""
        if form in ("override", "super", "self"):
            base = _probe_chain(mod, spec["cls"])
            try:
                inspect.getattr_static(base, spec["member"])
            except AttributeError:
                return False, f"{spec['cls']}.{spec['member']} no longer exists on the base", ""
            if form == "override":
                return _probe_override_fits(getattr(base, spec["member"]), spec["params"])
            if form == "super":
                signature = _probe_signature(getattr(base, spec["member"]))
                if signature is None:
                    return True, "signature not introspectable", ""
                signature.bind(None, *[None] * spec["npos"], **{k: None for k in spec["kw"]})
            return True, "", ""
        if form == "hook":
            # HookRegistry._apply_target: rsplit the last dot, pkgutil.resolve_name the owner, getattr.
            owner_path, attr = spec["target"].rsplit(".", 1)
            owner = pkgutil.resolve_name(owner_path)
            original = getattr(owner, attr)
            if isinstance(original, type) and spec["hook_type"] != "REPLACE":
                return False, "class target with a non-REPLACE hook", ""
            return True, "", ""
        if form == "platform":
            device_mixin = importlib.import_module("sglang.srt.platforms.device_mixin")
            interface = importlib.import_module("sglang.srt.platforms.interface")
            mixin = type("BenchDeviceMixin", (device_mixin.DeviceMixin,), {"__module__": "benchdev.platform"})
            platform = type("BenchPlatform", (mixin, interface.SRTPlatform), {"__module__": "benchdev.platform"})
            upstream = [k for k in platform.__mro__ if (k.__module__ or "").startswith("sglang")]
            owner = next((k for k in upstream if spec["member"] in vars(k)), None)
            if owner is None:
                if spec["member"] in _probe_shim_names([device_mixin, interface]):
                    return True, "", "not on the base, but still served by a compatibility shim (deprecated)"
                return False, f"{spec['member']} is not defined by SRTPlatform/DeviceMixin any more", ""
            return _probe_override_fits(vars(owner)[spec["member"]], spec["params"])
    except TypeError as exc:
        return False, f"TypeError: {exc}"[:300], ""
    except (AttributeError, ImportError, ValueError) as exc:
        return False, f"{type(exc).__name__}: {exc}"[:300], ""
    raise ValueError(f"unknown reference form {form}")


def _probe_load_plugin(task: dict, emit) -> None:
    """Import every generated module, then register the hooks and apply them, as SGLang would."""
    import importlib
    import logging
    import traceback

    sys.path.insert(0, task["plugin_root"])
    for name in task["units"]:
        if name == "__hooks__":
            continue
        emit(event="begin", unit=name)
        try:
            importlib.import_module(name)
            emit(event="result", unit=name, data={"ok": True})
        except BaseException as exc:  # noqa: BLE001
            frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename.startswith(task["plugin_root"])]
            where = f"{Path(frames[-1].filename).relative_to(task['plugin_root'])}:{frames[-1].lineno}" if frames else None
            emit(event="result", unit=name, data={"ok": False, "error": f"{type(exc).__name__}: {exc}"[:300], "where": where})
    if "__hooks__" not in task["units"]:
        return
    emit(event="begin", unit="__hooks__")
    failed: list[str] = []

    class Capture(logging.Handler):
        def emit(self, record):
            if record.getMessage().startswith("Failed to apply hooks to "):
                failed.append(record.getMessage()[len("Failed to apply hooks to ") :])

    registry = importlib.import_module("sglang.srt.plugins.hook_registry")
    logging.getLogger(registry.__name__).addHandler(Capture())
    importlib.import_module(task["hooks_package"]).register_all()
    registered = sorted(registry.HookRegistry._hooks)
    registry.HookRegistry.apply_hooks()
    emit(event="result", unit="__hooks__", data={"registered": registered, "failed": sorted(set(failed))})


def probe_main(task_file: str) -> None:
    task = json.loads(Path(task_file).read_text())
    protocol = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # whatever sglang prints goes to the log, not into the protocol

    def emit(**message):
        protocol.write(json.dumps(message, default=str) + "\n")

    sys.path[:0] = [task["src_root"], *task["extra_paths"]]
    _probe_install_torchvision_mock()
    if task["mode"] == "load":
        _probe_load_plugin(task, emit)
    for unit in task["units"] if task["mode"] != "load" else []:
        emit(event="begin", unit=unit)
        if task["mode"] == "harvest":
            emit(event="result", unit=unit, data=_probe_harvest(unit))
            continue
        status, why = _probe_import_status(unit, task["src_root"])
        verdicts = {}
        for spec in task["groups"][unit]:
            if status == "ok":
                try:
                    works, reason, risk = _probe_evaluate(spec)
                    verdicts[spec["key"]] = {"status": "ok" if works else "broken", "why": reason, "risk": risk}
                except Exception as exc:  # noqa: BLE001 - undecidable here: the reference is left out
                    verdicts[spec["key"]] = {"status": "error", "why": f"oracle could not decide: {type(exc).__name__}: {exc}"[:300]}
            elif status == "gone":
                verdicts[spec["key"]] = {"status": "broken", "why": why}
            else:
                verdicts[spec["key"]] = {"status": "error", "why": why}
        emit(event="result", unit=unit, data=verdicts)
    emit(event="done")


# ============================================================================ running the probe


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
            proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "_probe", str(task_file)], stdout=subprocess.PIPE, stderr=log_file, text=True, env=env, cwd=tempfile.gettempdir(), start_new_session=True)
            lines: queue.Queue = queue.Queue()
            threading.Thread(target=lambda: ([lines.put(line) for line in proc.stdout], lines.put(None)), daemon=True).start()
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
        proc = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--upgrade", "--target", str(target), *map(str, missing)], capture_output=True, text=True)
        if proc.returncode != 0:
            log(f"  runtime {version}: pip failed, the oracle runs on the venv alone: {proc.stderr.strip()[-300:]}")
            break
        # what the freshly installed packages need that neither they nor the venv provide
        for dist in metadata.distributions(path=[str(target)]):
            for line in dist.requires or []:
                requirement = Requirement(line)
                if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                    if not satisfied(requirement, [str(target), *sys.path]) and requirement.name.lower() not in ("torch", "triton", "numpy"):
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


# ============================================================================ the reference plugin

SUBPACKAGES = {
    "sglang.srt.layers.attention": "attention",
    "sglang.srt.layers.moe": "moe",
    "sglang.srt.layers.quantization": "quantization",
    "sglang.srt.layers": "layers",
    "sglang.srt.managers": "managers",
    "sglang.srt.model_executor": "model_executor",
    "sglang.srt.mem_cache": "mem_cache",
    "sglang.srt.distributed": "distributed",
    "sglang.srt.utils": "utils",
    "sglang.srt.configs": "configs",
    "sglang.srt.sampling": "sampling",
    "sglang.srt.speculative": "speculative",
    "sglang.srt.model_loader": "model_loader",
    "sglang.srt.lora": "lora",
    "sglang.srt.compilation": "compilation",
    "sglang.srt.models": "models",
}
COMMON_MODULES = (
    "sglang.srt.model_executor.forward_batch_info",
    "sglang.srt.managers.schedule_batch",
    "sglang.srt.server_args",
    "sglang.srt.utils",
    "sglang.srt.utils.common",
    "sglang.srt.distributed",
    "sglang.srt.distributed.parallel_state",
    "sglang.srt.layers.dp_attention",
    "sglang.srt.mem_cache.memory_pool",
    "sglang.srt.environ",
    "sglang.srt.layers.radix_attention",
)
HOOK_TYPES = (("AROUND", 0.4), ("AFTER", 0.3), ("BEFORE", 0.2), ("REPLACE", 0.1))
RESERVED = set(dir(__builtins__)) | {"logger", "logging", "os", "importlib", "self", "cls", "args", "kwargs", "result", "original_fn", "value", "obj"}


@dataclass
class Ref:
    spec: dict
    status: str  # ok | broken (oracle, new release)
    why: str
    file: str = ""
    line: int = 0
    at_import: bool = False  # executes when the module is imported (a failure there fails the import)
    style: str = ""  # how the line is written (decorator, f-string, colon, ...)
    risk: str = ""  # works, but an override lacks parameters the base now allows / a shim serves it
    anchor: "Ref | None" = None  # the import this line depends on (same file)
    caught: bool = False  # inside try/except (ImportError, AttributeError): never breaking

    @property
    def ambiguous(self) -> bool:
        """Works for every call the base requires, but not for optional parameters the base gained:
        breaks only if a caller passes one. Flagging it is neither a hit nor a false positive."""
        return self.status == "ok" and self.risk.startswith("the base gained")

    @property
    def primary(self) -> bool:
        """Broken, and not merely because the import it depends on is broken."""
        return self.status == "broken" and not self.caught and not (self.anchor is not None and self.anchor.status == "broken")

    @property
    def kind(self) -> str:
        return "try" if self.caught else self.spec["kind"]

    @property
    def form(self) -> str:
        return self.spec["form"]

    @property
    def target(self) -> str:
        s = self.spec
        if s["form"] == "hook":
            return s["target"]
        if s["form"] == "from":
            return f"{s['module']}.{s['name']}"
        if s["form"] == "module":
            return s["module"]
        if s["form"] in ("override", "super", "self"):
            return f"{s['module']}.{s['cls']}.{s['member']}"
        if s["form"] == "platform":
            return f"sglang.srt.platforms.interface.SRTPlatform.{s['member']}"
        if s["form"] == "key":
            return f"{s['module']}.{s['path']}[{s['item']!r}]"
        if s["form"] == "field":
            return f"{s['module']}.{s['path']}.{s['field']}"
        return f"{s['module']}.{s['path']}"


def snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower().strip("_") or "x"


class ModuleBuilder:
    """One generated plugin module: upstream imports first, then blocks; each reference on its own
    line, its line number fixed when the module is rendered."""

    def __init__(self, dotted: str, doc: str):
        self.dotted = dotted
        self.path = dotted.replace(".", "/") + ".py"
        self.doc = doc
        self.stdlib: list[str] = []
        self.imports: list[tuple[str, Ref | None]] = []
        self.local_imports: list[str] = []
        self.blocks: list[list[tuple[str, Ref | None]]] = []
        self.bound: dict[tuple, str] = {}
        self.bound_refs: dict[tuple, Ref] = {}
        self.names: set[str] = set(RESERVED)
        self.refs: list[Ref] = []

    def fresh(self, wanted: str) -> str:
        wanted = re.sub(r"\W", "_", wanted) or "x"
        name, n = wanted, 2
        while name in self.names or name.startswith("__"):
            name, n = f"{wanted}_{n}", n + 1
        self.names.add(name)
        return name

    def import_name(self, ref: Ref) -> str:
        """`from M import N` (once per module); the local name bound to it."""
        key = ("from", ref.spec["module"], ref.spec["name"])
        if key not in self.bound:
            local = self.fresh(ref.spec["name"])
            text = f"from {ref.spec['module']} import {ref.spec['name']}" + (f" as {local}" if local != ref.spec["name"] else "")
            ref.at_import = True
            self.imports.append((text, ref))
            self.refs.append(ref)
            self.bound[key] = local
            self.bound_refs[key] = ref
        return self.bound[key]

    def import_module(self, ref: Ref) -> str:
        key = ("module", ref.spec["module"])
        if key not in self.bound:
            local = self.fresh(ref.spec["module"].rsplit(".", 1)[-1] + "_mod")
            ref.at_import = True
            self.imports.append((f"import {ref.spec['module']} as {local}", ref))
            self.refs.append(ref)
            self.bound[key] = local
            self.bound_refs[key] = ref
        return self.bound[key]

    def block(self, lines: list[tuple[str, Ref | None]]) -> None:
        self.blocks.append(lines)
        self.refs += [ref for _, ref in lines if ref is not None]

    def has(self, key: tuple) -> bool:
        return key in self.bound

    def render(self) -> str:
        lines: list[tuple[str, Ref | None]] = [(f'"""{self.doc}"""', None), ("", None)]
        if self.stdlib:
            lines += [(text, None) for text in sorted(set(self.stdlib))] + [("", None)]
        if self.imports:
            lines += self.imports + [("", None)]
        if self.local_imports:
            lines += [(text, None) for text in self.local_imports] + [("", None)]
        for block in self.blocks:
            lines += [("", None)] + block + [("", None)]
        while lines and lines[-1][0] == "":
            lines.pop()
        for number, (_, ref) in enumerate(lines, start=1):
            if ref is not None:
                ref.file, ref.line = self.path, number
        return "\n".join(text for text, _ in lines) + "\n"


def safe_literal(text: str | None) -> str:
    """A harvested default as source text, or None when it is not a plain literal."""
    if text is None:
        return "None"
    try:
        ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return "None"
    return text


def render_params(params: list) -> str:
    """A def's parameter list reproducing an upstream signature (defaults as literals or None)."""
    out, star_done, saw_positional_only = [], False, False
    for index, (name, kind, has_default, literal) in enumerate(params):
        if kind != 0 and saw_positional_only:
            out.append("/")
            saw_positional_only = False
        if kind == 0:
            saw_positional_only = True
        if kind == 3 and not star_done:
            out.append("*")
            star_done = True
        default = f"={safe_literal(literal)}" if has_default else ""
        out.append(("*" if kind == 2 else "**" if kind == 4 else "") + name + default)
        star_done |= kind == 2
    if saw_positional_only:
        out.append("/")
    return ", ".join(out)


def super_args(params: list) -> str:
    args = []
    for name, kind, _, _ in params[1:]:
        args.append(name if kind in (0, 1) else f"*{name}" if kind == 2 else f"{name}={name}" if kind == 3 else f"**{name}")
    return ", ".join(args)


class Sampler:
    """Chooses references from the oracle-kept pool and writes them into plugin modules, steering
    the share of references that break on the new release towards `break_share`."""

    def __init__(self, pool: dict, verdicts: dict, harvest: dict, rng: random.Random, break_share: float):
        self.rng, self.break_share = rng, break_share
        self.kept: dict[str, tuple[str, str, str]] = {}
        for key, spec in pool.items():
            status, why, risk = classify(verdicts[key])
            if status in ("ok", "broken"):
                self.kept[key] = (status, why, risk)
        self.pool = pool
        self.uses: Counter = Counter()
        self.index: dict[str, dict] = defaultdict(lambda: defaultdict(list))
        for key in self.kept:
            spec = pool[key]
            if spec["form"] == "platform":
                continue
            self.index[spec["module"]][spec["form"]].append(key)
            if spec["form"] in ("override", "super", "self", "attr-class", "ctor"):
                self.index[spec["module"]][(spec["form"], spec.get("cls") or spec["path"].split(".")[0])].append(key)
        self.harvest = harvest
        self.excluded = Counter(pool[k]["kind"] for k in pool if k not in self.kept)

    # ---------------------------------------------------------------- bookkeeping
    def ref(self, key: str, anchor: Ref | None = None) -> Ref:
        status, why, risk = self.kept[key]
        self.uses[key] += 1
        return Ref(self.pool[key], status, why, risk=risk, anchor=anchor)

    def pick(self, keys: list[str], broken: bool | None, limit: int = 4) -> str | None:
        """A key from `keys` (used fewer than `limit` times), broken or not as asked when possible."""
        usable = [k for k in keys if self.uses[k] < limit]
        if broken is not None:
            preferred = [k for k in usable if (self.kept[k][0] == "broken") == broken]
            usable = preferred or ([] if broken is False else usable)
        return self.rng.choice(usable) if usable else None

    def status(self, key: str) -> str:
        return self.kept[key][0]

    def has_broken(self, module: str) -> bool:
        return any(self.status(k) == "broken" for form, keys in self.index[module].items() if isinstance(form, str) for k in keys)

    def from_key(self, module: str, name: str) -> str | None:
        spec = {"kind": "import", "form": "from", "module": module, "name": name}
        meta = self.harvest[module]["names"].get(name)
        if meta is None:
            return None
        spec.update(t=meta["t"], where=meta["where"])
        key = ref_key(spec)
        return key if key in self.kept else None

    # ---------------------------------------------------------------- units (each writes lines)
    def bind_from(self, mb: ModuleBuilder, module: str, name: str) -> tuple[str, Ref] | None:
        """`from module import name` in `mb` (written once): (local name, the import's Ref)."""
        key = ("from", module, name)
        if not mb.has(key):
            import_key = self.from_key(module, name)
            if import_key is None:
                return None
            mb.import_name(self.ref(import_key))
        return mb.bound[key], mb.bound_refs[key]

    def require_from(self, mb: ModuleBuilder, module: str, name: str) -> tuple[str, Ref]:
        """bind_from for the plugin API names every plugin needs (hook registry, platform bases)."""
        bound = self.bind_from(mb, module, name)
        if bound is None:
            raise SystemExit(f"{module}.{name} is not importable in the oracle's runtime of the old release: cannot write a plugin")
        return bound

    def unit_from(self, mb: ModuleBuilder, module: str, broken: bool) -> int:
        """`from M import N`, then a use of N that is not itself a reference (isinstance, a
        pass-through wrapper, a module constant)."""
        # Mostly names the module defines (or its package re-exports); sometimes a name it merely
        # imports itself, as plugin code copied from upstream does.
        incidental = self.rng.random() < 0.25
        keys = [k for k in self.index[module]["from"] if not mb.has(("from", module, self.pool[k]["name"])) and (incidental or self.pool[k]["where"] != "incidental")]
        key = self.pick(keys, broken)
        if key is None:
            return 0
        ref = self.ref(key)
        local = mb.import_name(ref)
        t = ref.spec["t"]
        if t == "class":
            fn = mb.fresh(f"is_{snake(local)}")
            mb.block([(f"def {fn}(obj) -> bool:", None), (f"    return isinstance(obj, {local})", None)])
        elif t == "function":
            fn = mb.fresh(f"bench_{snake(local)}")
            mb.block([(f"def {fn}(*args, **kwargs):", None), (f"    return {local}(*args, **kwargs)", None)])
        else:
            mb.block([(f"{mb.fresh('BENCH_' + local.upper())} = {local}", None)])
        return 1

    def unit_alias(self, mb: ModuleBuilder, module: str, broken: bool) -> int:
        """`import M as m`, then `m.attr` at module level or in a function, sometimes `m.f(kw=...)`."""
        module_keys = self.index[module]["module"]
        attrs = self.index[module]["attr-module"]
        if not module_keys or not attrs:
            return 0
        if broken and self.status(module_keys[0]) != "broken" and not any(self.status(k) == "broken" for k in attrs):
            return 0
        before = len(mb.refs)
        if not mb.has(("module", module)):
            mb.import_module(self.ref(module_keys[0]))
        alias, anchor = mb.bound[("module", module)], mb.bound_refs[("module", module)]
        want = broken and anchor.status != "broken"
        for n in range(self.rng.randint(1, 3)):
            key = self.pick(attrs, True if (want and n == 0) else False if anchor.status == "ok" else None)
            if key is None:
                continue
            ref = self.ref(key, anchor)
            path = ref.spec["path"]
            if self.rng.random() < 0.5:
                ref.at_import = True
                mb.block([(f"{mb.fresh('_' + snake(path).upper())} = {alias}.{path}", ref)])
            else:
                fn = mb.fresh(f"upstream_{snake(path)}")
                mb.block([(f"def {fn}():", None), (f"    return {alias}.{path}", ref)])
        calls = self.index[module]["call"]
        if calls and self.rng.random() < 0.3:
            key = self.pick(calls, False if anchor.status == "ok" and not want else None)
            if key:
                self.write_call(mb, self.ref(key, anchor), f"{alias}.{self.pool[key]['path']}")
        return len(mb.refs) - before

    def unit_class_attrs(self, mb: ModuleBuilder, module: str, broken: bool) -> int:
        """`from M import Cls`, then `Cls.ATTR` / `Enum.MEMBER` (comparisons, module constants)."""
        keys = self.index[module]["attr-class"] + self.index[module]["enum"]
        first = self.pick(keys, broken) if keys else None
        if first is None:
            return 0
        cls = self.pool[first]["path"].split(".")[0]
        before = len(mb.refs)
        bound = self.bind_from(mb, module, cls)
        if bound is None:
            return 0
        local, anchor = bound
        same_class = [k for k in keys if self.pool[k]["path"].split(".")[0] == cls and k != first]
        chosen = [first] + [k for k in (self.pick(same_class, False) for _ in range(self.rng.randint(0, 2))) if k]
        for key in dict.fromkeys(chosen):
            ref = self.ref(key, anchor)
            member = ref.spec["path"].split(".", 1)[1]
            if ref.form == "enum" and self.rng.random() < 0.7:
                fn = mb.fresh(f"is_{snake(member)}")
                mb.block([(f"def {fn}(value) -> bool:", None), (f"    return value == {local}.{member}", ref)])
            elif self.rng.random() < 0.4:
                ref.at_import = True
                mb.block([(f"{mb.fresh('_' + snake(cls + '_' + member).upper())} = {local}.{member}", ref)])
            else:
                fn = mb.fresh(f"upstream_{snake(member)}")
                mb.block([(f"def {fn}():", None), (f"    return {local}.{member}", ref)])
        return len(mb.refs) - before

    def unit_registry_key(self, mb: ModuleBuilder, module: str, broken: bool) -> int:
        """`from M import REGISTRY`, then `REGISTRY["key"]` in a function (the plugin looks up an
        upstream backend / op by name)."""
        return self._unit_on_name(mb, module, broken, "key", lambda local, spec: (
            f"lookup_{snake(spec['item'])}", "", f"{local}[{spec['item']!r}]"))

    def unit_field(self, mb: ModuleBuilder, module: str, broken: bool) -> int:
        """`from M import Cls`, then `def f(obj: Cls): return obj.field` (a hook or helper reading
        a field of an upstream object it is handed)."""
        return self._unit_on_name(mb, module, broken, "field", lambda local, spec: (
            f"read_{snake(spec['field'])}", f"obj: {local}", f"obj.{spec['field']}"))

    def _unit_on_name(self, mb: ModuleBuilder, module: str, broken: bool, form: str, write) -> int:
        """`from M import NAME`, then a function returning an expression on it: `write(local,
        spec)` gives (function name, parameters, expression). A module without references of
        `form`: any module that has some."""
        holders = [m for m in sorted(self.index) if self.index[m][form]]
        if not holders:
            return 0
        module = module if self.index[module][form] else self.rng.choice(holders)
        key = self.pick(self.index[module][form], broken, limit=1)
        if key is None:
            return 0
        before = len(mb.refs)
        bound = self.bind_from(mb, module, self.pool[key]["path"])
        if bound is None:
            return 0
        local, anchor = bound
        ref = self.ref(key, anchor)
        name, params, expression = write(local, ref.spec)
        mb.block([(f"def {mb.fresh(name)}({params}):", None), (f"    return {expression}", ref)])
        return len(mb.refs) - before

    def unit_try(self, mb: ModuleBuilder, module: str, broken: bool) -> int:
        """A module-level `try:` holding an import and a use of what it imported (an attribute of
        the imported class), handled by `except (ImportError, AttributeError)`: whatever breaks in
        it is caught, so no line of it is breaking."""
        keys = [k for k in self.index[module]["from"] if self.pool[k]["t"] == "class" and not mb.has(("from", module, self.pool[k]["name"]))]
        key = self.pick(keys, broken, limit=2)
        if key is None:
            return 0
        ref = self.ref(key)
        ref.caught = True
        local = mb.fresh(f"try_{ref.spec['name']}")
        lines = [("try:", None), (f"    from {module} import {ref.spec['name']} as {local}", ref)]
        attr_key = self.pick(self.index[module][("attr-class", ref.spec["name"])], None if ref.status == "broken" else broken, limit=2)
        if attr_key:
            attr = self.ref(attr_key, ref)
            attr.caught = True
            lines.append((f"    {mb.fresh('_TRY_' + snake(attr.spec['path']).upper())} = {local}.{attr.spec['path'].split('.', 1)[1]}", attr))
        lines += [("except (ImportError, AttributeError):", None), (f"    {local} = None", None)]
        mb.block(lines)
        return sum(1 for _, r in lines if r is not None)

    def write_call(self, mb: ModuleBuilder, ref: Ref, callee: str) -> int:
        """A wrapper whose body calls `callee` with the spec's positionals and keyword arguments,
        forwarding its own parameters (as plugin code passes variables, not literals)."""
        spec = ref.spec
        names = spec["pos_names"] + spec["kw"]
        local = {name: (f"arg_{name}" if name in RESERVED else name) for name in names}
        positional = [local[name] for name in spec["pos_names"]]
        keyword_params = [f"{local[name]}={safe_literal(spec['values'].get(name))}" for name in spec["kw"]]
        args = ", ".join(positional + [f"{name}={local[name]}" for name in spec["kw"]])
        fn = mb.fresh(f"call_{snake(spec['path'].replace('.', '_'))}")
        mb.block([(f"def {fn}({', '.join(positional + keyword_params)}):", None), (f"    return {callee}({args})", ref)])
        return 1

    def unit_call(self, mb: ModuleBuilder, module: str, broken: bool) -> int:
        """`from M import f` (or a class), then `f(a, kw=kw)` in a wrapper."""
        key = self.pick(self.index[module]["call"] + self.index[module]["ctor"], broken)
        if key is None:
            return 0
        before = len(mb.refs)
        bound = self.bind_from(mb, module, self.pool[key]["path"])
        if bound is None:
            return 0
        local, anchor = bound
        self.write_call(mb, self.ref(key, anchor), local)
        return len(mb.refs) - before

    def unit_subclass(self, mb: ModuleBuilder, module: str, broken: bool) -> int:
        """`class BenchX(X)` overriding 1-3 base methods with the base's signature (most calling
        `super().m(...)`), and helpers using `self.member` of the base."""
        overrides = self.index[module]["override"]
        if not overrides:
            return 0
        classes = sorted({self.pool[k]["cls"] for k in overrides})
        with_broken_self = [c for c in classes if any(self.status(k) == "broken" for k in self.index[module][("self", c)])]
        break_self = broken and bool(with_broken_self) and self.rng.random() < 0.35
        if break_self:
            cls = self.rng.choice(with_broken_self)
            key = self.pick(self.index[module][("override", cls)], False)
        else:
            key = self.pick(overrides, broken)
            cls = key and self.pool[key]["cls"]
        if key is None:
            return 0
        before = len(mb.refs)
        bound = self.bind_from(mb, module, cls)
        if bound is None:
            return 0
        local, anchor = bound
        same = [k for k in self.index[module][("override", cls)] if k != key]
        chosen = list(dict.fromkeys([key] + [k for k in (self.pick(same, False) for _ in range(self.rng.randint(0, 2))) if k]))
        name = mb.fresh("Bench" + cls.lstrip("_"))
        lines: list[tuple[str, Ref | None]] = [(f"class {name}({local}):", None), (f'    """benchdev variant of {cls}."""', None)]
        supers = {self.pool[k]["member"]: k for k in self.index[module][("super", cls)]}
        for override_key in chosen:
            ref = self.ref(override_key, anchor)
            member, params = ref.spec["member"], ref.spec["params"]
            lines += [("", None), (f"    def {member}({render_params(params)}):", ref)]
            super_key = supers.get(member)
            if super_key and (member == "__init__" or self.rng.random() < 0.6):
                call = f"super().__init__({super_args(params)})" if member == "__init__" else f"return super().{member}({super_args(params)})"
                lines.append((f"        {call}", self.ref(super_key, anchor)))
            else:
                lines.append(('        raise NotImplementedError("benchdev")', None))
        overridden = {self.pool[k]["member"] for k in chosen}
        for n in range(self.rng.randint(1 if break_self else 0, 2)):
            self_key = self.pick(self.index[module][("self", cls)], True if (break_self and n == 0) else False)
            if not self_key or self.pool[self_key]["member"] in overridden:
                continue
            overridden.add(self.pool[self_key]["member"])
            ref = self.ref(self_key, anchor)
            member = ref.spec["member"]
            helper = f"_bench_{snake(member).strip('_')}"
            if ref.spec["t"] == "method":
                lines += [("", None), (f"    def {helper}(self, *args, **kwargs):", None), (f"        return self.{member}(*args, **kwargs)", ref)]
            else:
                lines += [("", None), (f"    def {helper}(self):", None), (f"        return self.{member}", ref)]
        mb.block(lines)
        return len(mb.refs) - before

    # ---------------------------------------------------------------- whole modules
    def share_of(self, builders) -> float:
        refs = [r for b in builders for r in b.refs]
        return sum(r.status == "broken" for r in refs) / max(1, len(refs))


HOOK_BODIES = {
    "AROUND": ("(original_fn, *args, **kwargs)", "return original_fn(*args, **kwargs)"),
    "AFTER": ("(result, *args, **kwargs)", "return result"),
    "BEFORE": ("(*args, **kwargs)", "return None"),
    "REPLACE": ("(*args, **kwargs)", "return None"),
}


def generate_plugin(sampler: Sampler, out: Path, n_modules: int, n_refs: int, rng: random.Random) -> tuple[list[ModuleBuilder], dict]:
    """Write the reference plugin under `out` (a pyproject.toml and the `benchdev` package):

    - `benchdev/__init__.py`: `activate()` for the sglang.srt.platforms entry point, returning
      "benchdev.platform:BenchPlatform";
    - `benchdev/platform.py`: `BenchDeviceMixin(DeviceMixin)` with `_enum = PlatformEnum.OOT`, and the
      platform written mixin-first, `BenchPlatform(BenchDeviceMixin, SRTPlatform)`, overriding every
      SRTPlatform method of the old release and some DeviceMixin ones;
    - `benchdev/plugin.py`: the sglang.srt.plugins entry point; imports every other module at top
      level and calls `hooks.register_all()`;
    - `benchdev/hooks/`: hook modules imported by name from a list, two of them in a folder without
      `__init__.py`; `@plugin_hook(...)` decorators and `HookRegistry.register(...)` calls with
      literal, f-string (module constant from hooks/targets.py) and `module:Class.attr` targets;
    - `benchdev/<area>/<name>.py`: modules wrapping one upstream module each (plus common ones):
      `from M import N`, `import M as m` + `m.attr`, `Cls.ATTR` / `Enum.MEMBER`, calls with keyword
      arguments, subclasses overriding base methods with `super().m(...)` and `self.member`.
    """
    builders: list[ModuleBuilder] = []
    stats: dict = {}
    platform = build_platform(sampler, rng)
    builders.append(platform)

    # ---- hooks
    n_hooks = max(3, round(n_refs * 0.09))
    hook_modules: list[ModuleBuilder] = []
    targets_constants: dict[str, str] = {}
    hook_candidates = defaultdict(list)
    for module, forms in sampler.index.items():
        for key in forms["hook"]:
            hook_candidates[module].append(key)
    n_hook_modules = max(3, n_hooks // 8)
    weights = module_weights(sampler)
    placed = 0
    for index in range(n_hook_modules):
        namespace = index >= n_hook_modules - 2
        want = sampler.share_of(builders + hook_modules) < sampler.break_share
        modules = [m for m in sorted(hook_candidates) if m in weights and (not want or any(sampler.status(k) == "broken" for k in hook_candidates[m]))] or sorted(m for m in hook_candidates if m in weights)
        focus = rng.choices(modules, weights=[weights[m] for m in modules])[0]
        leaf = focus.rsplit(".", 1)[-1]
        package = "benchdev.hooks.extra" if namespace else "benchdev.hooks"
        mb = ModuleBuilder(f"{package}.{leaf}_hooks", f"Hooks on {focus} (generated by benchmarks/check_speed.py).")
        if any(b.dotted == mb.dotted for b in hook_modules):
            mb = ModuleBuilder(f"{package}.{leaf}_hooks_{index}", mb.doc)
        registry = {name: sampler.require_from(mb, "sglang.srt.plugins.hook_registry", name)[0] for name in ("HookRegistry", "HookType", "plugin_hook")}
        quota = max(1, (n_hooks - placed) // (n_hook_modules - index))
        for _ in range(quota):
            want = sampler.share_of(builders + hook_modules + [mb]) < sampler.break_share
            pool = hook_candidates[focus] if rng.random() < 0.7 else hook_candidates[rng.choice(sorted(hook_candidates))]
            key = sampler.pick(pool, want, limit=1)
            if key is None:
                continue
            placed += write_hook(mb, sampler.ref(key), registry, targets_constants, rng)
        hook_modules.append(mb)
    builders += hook_modules
    targets = ModuleBuilder("benchdev.hooks.targets", "Upstream paths shared by the hook modules.")
    targets.block([(f'{name} = "{path}"', None) for path, name in sorted(targets_constants.items(), key=lambda kv: kv[1])])
    for mb in hook_modules:
        used = sorted(name for name in targets_constants.values() if any(f"{{{name}}}" in text for block in mb.blocks for text, _ in block))
        mb.local_imports += [f"from benchdev.hooks.targets import {name}" for name in used]
    hooks_init = ModuleBuilder("benchdev.hooks.__init__", "Hook modules: imported by name when the plugin loads (sglang.srt.plugins entry point).")
    hooks_init.stdlib.append("import importlib")
    hooks_init.block([("_HOOK_MODULES = [", None)] + [(f'    "{mb.dotted}",', None) for mb in hook_modules] + [("]", None)])
    hooks_init.block([("def register_all():", None), ("    for name in _HOOK_MODULES:", None), ("        importlib.import_module(name)", None)])
    hooks_init.path = "benchdev/hooks/__init__.py"
    fixed = [targets, hooks_init]

    # ---- body modules
    body: list[ModuleBuilder] = []
    subpackages: set[str] = set()
    body_refs_target = n_refs - sum(len(b.refs) for b in builders)
    kind_share = {"import": 0.27, "reference": 0.23, "call": 0.14, "subclass": 0.25, "try": 0.04, "registry_key": 0.03, "field": 0.04}
    units = {
        "field": lambda mb, m, b: sampler.unit_field(mb, m, b),
        "try": lambda mb, m, b: sampler.unit_try(mb, m, b),
        "registry_key": lambda mb, m, b: sampler.unit_registry_key(mb, m, b),
        "import": lambda mb, m, b: sampler.unit_from(mb, m, b),
        "reference": lambda mb, m, b: (sampler.unit_alias if rng.random() < 0.4 else sampler.unit_class_attrs)(mb, m, b),
        "call": lambda mb, m, b: sampler.unit_call(mb, m, b),
        "subclass": lambda mb, m, b: sampler.unit_subclass(mb, m, b),
    }
    names_taken: set[str] = set()
    attempts = 0
    while attempts < n_modules * 20:
        attempts += 1
        overhead = 3 + len(fixed) + len(hook_modules) + len(subpackages | {"hooks"})
        if overhead + len(body) >= n_modules:
            break
        body_written = sum(len(b.refs) for b in body)
        remaining_modules = max(1, n_modules - overhead - len(body))
        budget = max(2, round((body_refs_target - body_written) / remaining_modules * rng.uniform(0.6, 1.4)))
        want = sampler.share_of(builders + body) < sampler.break_share
        choices = [m for m in weights if not want or rng.random() > 0.7 or sampler.has_broken(m)]
        focus = rng.choices(choices, weights=[weights[m] for m in choices])[0] if choices else rng.choice(sorted(weights))
        subpackage = area_dir(focus)
        stem = f"{focus.rsplit('.', 1)[-1]}_{rng.choice(['ext', 'impl', 'compat', 'glue', 'ops', 'patch'])}"
        base, n = stem, 2
        while f"{subpackage}.{stem}" in names_taken:
            stem, n = f"{base}_{n}", n + 1
        names_taken.add(f"{subpackage}.{stem}")
        mb = ModuleBuilder(f"benchdev.{subpackage}.{stem}", f"benchdev glue for {focus} (generated by benchmarks/check_speed.py).")
        produced, tries = 0, 0
        common = [m for m in COMMON_MODULES if m in weights]
        while produced < budget and tries < 14:
            tries += 1
            totals = Counter(r.kind for b in body + [mb] for r in b.refs)
            deficits = {k: max(0.01, kind_share[k] * body_refs_target - totals[k]) for k in kind_share}
            kind = rng.choices(list(deficits), weights=list(deficits.values()))[0]
            module = focus if rng.random() < 0.75 or not common else rng.choice(common)
            produced += units[kind](mb, module, sampler.share_of(builders + body + [mb]) < sampler.break_share)
        if mb.refs:
            body.append(mb)
            subpackages.add(subpackage)
    builders += body
    stats["hook_modules"] = len(hook_modules)
    stats["body_modules"] = len(body)

    # ---- packaging: __init__ files, the plugin entry point, pyproject
    root_init = ModuleBuilder("benchdev.__init__", "benchdev: a generated SGLang hardware plugin (input of benchmarks/check_speed.py).")
    root_init.path = "benchdev/__init__.py"
    root_init.stdlib.append("import os")
    root_init.block([
        ("def activate():", None),
        ('    """Entry point of group sglang.srt.platforms: the platform class path, or None."""', None),
        ('    if os.environ.get("BENCHDEV_VISIBLE_DEVICES") is None:', None),
        ("        return None", None),
        ('    return "benchdev.platform:BenchPlatform"', None),
    ])
    plugin = ModuleBuilder("benchdev.plugin", "Entry point of group sglang.srt.plugins: loads every module and registers the hooks.")
    plugin.local_imports.append("from benchdev import hooks")
    plugin.local_imports += [f"from {mb.dotted.rsplit('.', 1)[0]} import {mb.dotted.rsplit('.', 1)[1]}  # noqa: F401" for mb in body]
    plugin.block([("def register():", None), ("    hooks.register_all()", None)])
    inits = []
    for subpackage in sorted(subpackages):
        init = ModuleBuilder(f"benchdev.{subpackage}.__init__", f"benchdev support for upstream {subpackage}.")
        init.path = f"benchdev/{subpackage}/__init__.py"
        inits.append(init)
    everything = builders + fixed + [root_init, plugin] + inits
    if out.exists():
        shutil.rmtree(out)
    for mb in everything:
        path = out / mb.path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(mb.render())
    (out / "pyproject.toml").write_text(PYPROJECT)
    seen = {}
    for mb in everything:
        ast.parse((out / mb.path).read_text(), filename=mb.path)
        for ref in mb.refs:
            where = (ref.file, ref.line)
            if where in seen or not ref.line:
                raise AssertionError(f"generator bug: two references at {where}")
            seen[where] = ref
    stats["files"] = len(everything)
    return everything, stats


PYPROJECT = """[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[project]
name = "sglang-benchdev"
version = "0.1.0"
description = "Generated SGLang hardware plugin, written against sglang 0.5.17 (benchmark input)."
requires-python = ">=3.10"
dependencies = ["sglang>=0.5.17"]

[project.entry-points."sglang.srt.platforms"]
benchdev = "benchdev:activate"

[project.entry-points."sglang.srt.plugins"]
benchdev = "benchdev.plugin:register"
"""


def area_dir(module: str) -> str:
    for prefix, name in SUBPACKAGES.items():
        if module == prefix or module.startswith(prefix + "."):
            return name
    return "runtime"


def module_weights(sampler: Sampler) -> dict[str, float]:
    """How likely a plugin module is to wrap each upstream module: the area's weight shared among
    its modules, times the square root of what the module offers (central modules get wrapped)."""
    area_of = {}
    for module in sampler.index:
        area = max((a for a in AREAS if module == a or module.startswith(a + ".")), key=len, default=None)
        if area:
            area_of[module] = area
    richness = {m: (1 + sum(len(v) for k, v in sampler.index[m].items() if isinstance(k, str))) ** 0.5 for m in area_of}
    area_total = Counter()
    for m, a in area_of.items():
        area_total[a] += richness[m]
    return {m: AREAS[a] * richness[m] / area_total[a] for m, a in area_of.items()}


def build_platform(sampler: Sampler, rng: random.Random) -> ModuleBuilder:
    mb = ModuleBuilder("benchdev.platform", "The benchdev platform, written mixin-first as every in-tree SGLang platform is.")
    mixin_name, mixin_ref = sampler.require_from(mb, "sglang.srt.platforms.device_mixin", "DeviceMixin")
    enum_name, enum_import = sampler.require_from(mb, "sglang.srt.platforms.device_mixin", "PlatformEnum")
    base_name, base_ref = sampler.require_from(mb, "sglang.srt.platforms.interface", "SRTPlatform")
    enum_key = ref_key({"kind": "reference", "form": "enum", "module": "sglang.srt.platforms.device_mixin", "path": "PlatformEnum.OOT"})
    overrides = sorted((k for k in sampler.kept if sampler.pool[k]["form"] == "platform"), key=lambda k: sampler.pool[k]["member"])
    own = [k for k in overrides if sampler.pool[k]["owner"].endswith(".SRTPlatform")]
    mixin_keys = [k for k in overrides if not sampler.pool[k]["owner"].endswith(".SRTPlatform")]
    mixin_keys = sorted(rng.sample(mixin_keys, min(8, len(mixin_keys))), key=lambda k: sampler.pool[k]["member"])
    enum_ref = sampler.ref(enum_key, enum_import) if enum_key in sampler.kept else None
    if enum_ref:
        enum_ref.at_import = True
    lines: list[tuple[str, Ref | None]] = [
        (f"class BenchDeviceMixin({mixin_name}):", None),
        (f"    _enum = {enum_name}.OOT", enum_ref),
        ('    device_name = "benchdev"', None),
        ('    device_type = "benchdev"', None),
    ]
    for key in mixin_keys:
        ref = sampler.ref(key, mixin_ref)
        lines += [("", None), (f"    def {ref.spec['member']}({render_params(ref.spec['params'])}):", ref), ('        raise NotImplementedError("benchdev")', None)]
    mb.block(lines)
    lines = [(f"class BenchPlatform(BenchDeviceMixin, {base_name}):", None)]
    for key in own:
        ref = sampler.ref(key, base_ref)
        lines += [("", None), (f"    def {ref.spec['member']}({render_params(ref.spec['params'])}):", ref), ('        raise NotImplementedError("benchdev")', None)]
    mb.block(lines)
    return mb


def write_hook(mb: ModuleBuilder, ref: Ref, registry: dict, constants: dict, rng: random.Random) -> int:
    target = ref.spec["target"]
    hook_type = rng.choices([t for t, _ in HOOK_TYPES], weights=[w for _, w in HOOK_TYPES])[0]
    params, body = HOOK_BODIES[hook_type]
    fn = mb.fresh(f"{hook_type.lower()}_{snake(target.replace(':', '.').rsplit('.', 1)[-1]).strip('_')}")
    if ":" in target:
        expression, ref.style = f'"{target}"', "colon"
    elif rng.random() < 0.25:
        owner, attr = target.rsplit(".", 1)
        constant = constants.setdefault(owner, re.sub(r"\W", "_", snake(owner.rsplit(".", 1)[-1])).upper() + f"_{len(constants)}")
        expression, ref.style = f'f"{{{constant}}}.{attr}"', "f-string"
    else:
        expression, ref.style = f'"{target}"', "literal"
    if rng.random() < 0.5:
        ref.style += "+decorator"
        mb.block([(f"@{registry['plugin_hook']}({expression}, type={registry['HookType']}.{hook_type})", ref), (f"def {fn}{params}:", None), (f"    {body}", None)])
    else:
        ref.style += "+register"
        mb.block([(f"def {fn}{params}:", None), (f"    {body}", None), ("", None), ("", None), (f"{registry['HookRegistry']}.register({expression}, {fn}, {registry['HookType']}.{hook_type})", ref)])
    return 1


# ============================================================================ loader cross-check


def loader_check(release: Release, plugin_root: Path, builders: list[ModuleBuilder], cache: Path) -> dict:
    """Import every generated module and apply the hooks on `release`, in a subprocess."""
    modules = [mb.dotted.removesuffix(".__init__") for mb in builders if mb.refs]
    return run_probe(release, "load", modules + ["__hooks__"], cache, extra={"plugin_root": str(plugin_root), "hooks_package": "benchdev.hooks"}, first_timeout=300, timeout=120, label="load plugin")


def predicted_import_failures(builders: list[ModuleBuilder]) -> set[str]:
    """Modules the oracle says fail to import on the new release: a broken reference that runs at
    import time (an import line, a module-level or class-level attribute)."""
    return {mb.dotted.removesuffix(".__init__") for mb in builders if any(r.status == "broken" and r.at_import for r in mb.refs)}


# ============================================================================ timings


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
        from harness.knowledge import upstream
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
    proc = subprocess.run([sys.executable, "-c", script, version, str(wheel or "")], capture_output=True, text=True, env=harness_env(harness_path, seed), cwd=tempfile.gettempdir())
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


def run_check(plugin_root: Path, version: str, harness_path: Path, cache: Path) -> dict:
    """One `harness check --json` as CI runs it; wall time includes interpreter start-up."""
    command = [sys.executable, "-m", "harness", "check", "--plugin", str(plugin_root), "--upstream", f"sglang=={version}", "--json"]
    workdir = tempfile.mkdtemp(prefix="bench-cwd-")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(command, capture_output=True, text=True, env=harness_env(harness_path, cache), cwd=workdir, timeout=1800)
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
        subprocess.run([sys.executable, "-m", "harness", "--help"], capture_output=True, env=harness_env(harness_path, Path(tempfile.gettempdir())), cwd=tempfile.gettempdir())
        runs.append(time.perf_counter() - start)
    return median(runs)


# ============================================================================ scoring


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
    proc = subprocess.run([pyright, "--outputjson", "-p", str(run_dir / "pyrightconfig.json")], capture_output=True, text=True, cwd=run_dir)
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
    return sorted(old_modules - new_modules)[0], sorted(new_modules - old_modules)[0]


def pyright_flags(old_run: dict, new_run: dict) -> set:
    """Lines with an error in the new-release run that the old-release run does not have
    (same file, line and rule)."""
    before = {(d["file"], d["line"], d["rule"]) for d in old_run["diagnostics"]}
    return {(d["file"], d["line"]) for d in new_run["diagnostics"] if (d["file"], d["line"], d["rule"]) not in before}


# ============================================================================ main


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


def fmt_ratio(seconds: float, reference: float) -> str:
    return f"{seconds / reference:.3f}x" if reference else "?"


def main(argv: list[str] | None = None) -> None:
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

        report(args, old, new, harvest, sampler, stats, truth, loader, builders, parse, startup, manifest_seconds, cold_runs, cached_runs, cold_cpu, cached_cpu, last, flags, flag_kinds, flag_rule, harness_score, pyright, plugin_root, edited_runs)
        if args.keep:
            write_results(out, args, truth, parse, cold_runs, cached_runs, cold_cpu, cached_cpu, last, harness_score, pyright, loader)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.0f}%" if whole else "-"


def report(args, old, new, harvest, sampler, stats, truth, loader, builders, parse, startup, manifest_seconds, cold_runs, cached_runs, cold_cpu, cached_cpu, last, flags, flag_kinds, flag_rule, harness_score, pyright, plugin_root, edited_runs=()) -> None:
    refs = list(truth.values())
    broken = [r for r in refs if r.status == "broken"]
    imported = sum(1 for v in harvest.values() if v.get("import") == "ok")
    print()
    print(f"== Reference plugin (seed {args.seed}): {stats['files']} files, {len(refs)} upstream references, {len(broken)} ({pct(len(broken), len(refs))}) break on {new.label}")
    print(f"   oracle: the Python runtime of each release ({imported}/{len(harvest)} candidate modules of {old.label} import here; torchvision mocked; pinned light deps in {args.cache}/runtime-*)")
    print(f"   candidates executed: {len(sampler.pool)}; kept {len(sampler.kept)} ({sum(v[0] == 'broken' for v in sampler.kept.values())} break); excluded {sum(sampler.excluded.values())} (fail on {old.version} or module errors on {new.version})")
    by_form = Counter((r.kind, r.form) for r in refs)
    by_form_broken = Counter((r.kind, r.form) for r in broken)
    print("   per kind (form: references/broken): " + "; ".join(
        f"{kind} " + ", ".join(f"{form} {by_form[(k, form)]}/{by_form_broken[(k, form)]}" for k, form in sorted(by_form) if k == kind) for kind in KINDS if any(k == kind for k, _ in by_form)))
    if loader:
        old_load, new_load = loader["old"], loader["new"]
        old_fail = sorted(m for m, v in old_load.items() if m != "__hooks__" and not v.get("ok"))
        hooks_old = old_load.get("__hooks__", {})
        print(f"   loader on {old.label}: {len(old_load) - 1 - len(old_fail)}/{len(old_load) - 1} modules import" + (f" (FAIL: {old_fail[:3]} {[old_load[m].get('error') for m in old_fail[:2]]})" if old_fail else "") + f"; {len(hooks_old.get('registered', []))} hook targets registered, {len(hooks_old.get('failed', []))} fail to apply")
        actual = {m for m, v in new_load.items() if m != "__hooks__" and not v.get("ok")}
        predicted = predicted_import_failures(builders)
        oracle_hooks = {r.spec["target"] for r in refs if r.form == "hook" and r.status == "broken"}
        failed_hooks = set(new_load.get("__hooks__", {}).get("failed", []))
        print(f"   loader on {new.label}: {len(actual)} modules fail to import (oracle predicts {len(predicted)}, agree on {len(actual & predicted)}); {len(failed_hooks)} hook targets fail to apply (oracle: {len(oracle_hooks)}, agree on {len(failed_hooks & oracle_hooks)})")
        for name in sorted(actual ^ predicted)[:3]:
            print(f"     disagreement: {name}: {new_load.get(name, {}).get('error')} at {new_load.get(name, {}).get('where')}")
    print()
    print(f"== Speed ({os.cpu_count()} cpus, load {loadavg()}; medians of {args.repeat})")
    reference = parse["seconds"]
    print(f"   reference: ast.parse of every .py file of {new.label} ({parse['files']} files, {parse['mb']:.0f} MB), one core: {reference:.2f} s  (runs {', '.join(f'{t:.2f}' for t in parse['runs'])}; CPU {parse['cpu']:.2f} s)")
    print(f"   `python -m harness --help` (start-up floor of any CLI run): {startup:.2f} s = {fmt_ratio(startup, reference)}")
    print(f"   (not timed below: per-file manifest hashing when the release is fetched: {manifest_seconds:.2f} s)")
    print(f"   harness check, cold:   {median(cold_runs):6.2f} s = {fmt_ratio(median(cold_runs), reference)}  (target <= 0.25x; runs {', '.join(f'{t:.2f}' for t in cold_runs)}; CPU {median(cold_cpu):.2f} s = {fmt_ratio(median(cold_cpu), parse['cpu'])} of the parse CPU)")
    print(f"   harness check, cached: {median(cached_runs):6.2f} s = {fmt_ratio(median(cached_runs), reference)}  (target <= 0.03x; runs {', '.join(f'{t:.2f}' for t in cached_runs)}; CPU {median(cached_cpu):.2f} s = {fmt_ratio(median(cached_cpu), parse['cpu'])}; unchanged inputs reuse the last verdict)")
    if edited_runs:
        print(f"   harness check, cached index, one plugin file touched: {median(edited_runs):6.2f} s = {fmt_ratio(median(edited_runs), reference)}  (runs {', '.join(f'{t:.2f}' for t in edited_runs)}; the plugin is scanned and judged again)")
    payload = last["payload"]
    if payload is None:
        print(f"   check printed no JSON (exit {last['exit']}): {last['stderr'][-600:]}")
    else:
        print(f"   check exit {last['exit']}; passed={payload.get('passed')} breaking={payload.get('breaking')} unverified={payload.get('unverified')}; {len(payload.get('findings', []))} findings; flagged by kind: {dict(flag_kinds)}" + (f"; files left in cwd: {last['cwd_files']}" if last["cwd_files"] else ""))
    print()
    print(f"== Recall vs the oracle on {len(broken)} breaking references (harness flagged = {flag_rule})")
    def cells(row) -> str:
        return f"{row['hit']:5d} {pct(row['hit'], row['broken']):>5s} {pct(row['primary_hit'], row['primary']):>5s} {row['fp']:4d}"

    header = f"   {'kind':10s} {'refs':>5s} {'broken':>6s} {'prim':>5s} | harness: {'hit':>5s} {'rec':>5s} {'prim':>5s} {'FP':>4s}"
    if pyright:
        header += f" | pyright: {'hit':>5s} {'rec':>5s} {'prim':>5s} {'FP':>4s}"
    print(header)
    for kind in (*KINDS, "all"):
        row = harness_score["table"][kind]
        line = f"   {kind:10s} {row['refs']:5d} {row['broken']:6d} {row['primary']:5d} |          {cells(row)}"
        if pyright:
            line += f" |          {cells(pyright['score']['table'][kind])}"
        print(line)
    print("   (rec = recall on all breaking lines; prim = recall on primary breakages, i.e. without lines that fail only because the import they use fails)")
    caught = harness_score["table"]["try"]
    print(f"   (try = lines inside try/except (ImportError, AttributeError): {caught['caught_broken']} of {caught['refs']} fail on {new.label} but are caught; every flag on them is a false positive)")
    at_risk = sum(r.ambiguous for r in refs)
    print(f"   overrides only at risk (base gained optional parameters they lack; flagging them is not counted): {at_risk} in the plugin, flagged by harness {harness_score['table']['all']['at_risk']}" + (f", pyright {pyright['score']['table']['all']['at_risk']}" if pyright else ""))
    print(f"   flagged lines that carry no reference: harness {harness_score['off_reference']}" + (f", pyright {pyright['score']['off_reference']}" if pyright else ""))
    missed = [r for r in broken if (r.file, r.line) not in flags and r.primary]
    for kind in KINDS:
        example = next((r for r in missed if r.kind == kind), None)
        if example:
            print(f"   harness missed ({kind}): {example.file}:{example.line} {example.target} ({example.why[:100]})")
    if pyright:
        runs = pyright["runs"]
        print()
        print(f"== pyright {runs['new'].get('version', '?')} (diagnostics diff: errors in the {new.version} run whose (file, line, rule) the {old.version} run lacks)")
        for side, release in (("old", old), ("new", new)):
            run = runs[side]
            print(f"   {release.label} as import root: {run['seconds']:.1f} s, {len(run['diagnostics'])} errors in the plugin" + (f" [pyright failed: {run['error'][:200]}]" if "error" in run else ""))
        verdict = "yes" if pyright["resolves"] else "NO"
        print(f"   resolves sglang from the release under test: {verdict} (probe imports {pyright['probe'][0]} / {pyright['probe'][1]}: errors on lines {runs['old'].get('probe_errors')} / {runs['new'].get('probe_errors')}, expected [2] / [1])")
        print(f"   {len(pyright['flags'])} new error lines; pyright cannot see dotted-string hook targets (HookRegistry.register / @plugin_hook strings), nor overrides of methods a base no longer has")
    print()
    row = harness_score["table"]["all"]
    summary = f"== Summary: parse {reference:.2f} s | check cold {median(cold_runs):.2f} s ({fmt_ratio(median(cold_runs), reference)}) cached {median(cached_runs):.2f} s ({fmt_ratio(median(cached_runs), reference)}) | harness recall {pct(row['hit'], row['broken'])} ({row['hit']}/{row['broken']}; primary {pct(row['primary_hit'], row['primary'])}), FP {row['fp']}"
    if pyright:
        prow = pyright["score"]["table"]["all"]
        summary += f" | pyright recall {pct(prow['hit'], prow['broken'])} ({prow['hit']}/{prow['broken']}; primary {pct(prow['primary_hit'], prow['primary'])}), FP {prow['fp']}, {runs['old']['seconds']:.1f} + {runs['new']['seconds']:.1f} s"
    print(summary)


def write_results(out: Path, args, truth, parse, cold_runs, cached_runs, cold_cpu, cached_cpu, last, harness_score, pyright, loader) -> None:
    (out / "truth.json").write_text(json.dumps([
        {"file": r.file, "line": r.line, "kind": r.kind, "form": r.form, "target": r.target, "status": r.status, "why": r.why, "risk": r.risk, "primary": r.primary, "at_import": r.at_import, "style": r.style}
        for r in sorted(truth.values(), key=lambda r: (r.file, r.line))
    ], indent=1))
    results = {
        "args": {k: str(v) for k, v in vars(args).items()},
        "parse": parse,
        "check_cold": cold_runs,
        "check_cached": cached_runs,
        "check_cold_cpu": cold_cpu,
        "check_cached_cpu": cached_cpu,
        "check_exit": last["exit"],
        "harness": {k: dict(v) for k, v in harness_score["table"].items()},
        "harness_off_reference": harness_score["off_reference"],
        "pyright": None if not pyright else {
            "seconds": {side: run["seconds"] for side, run in pyright["runs"].items()},
            "resolves": pyright["resolves"],
            "score": {k: dict(v) for k, v in pyright["score"]["table"].items()},
            "flags": sorted(pyright["flags"]),
            "diagnostics": {side: run["diagnostics"] for side, run in pyright["runs"].items()},
        },
        "loader": loader,
    }
    (out / "results.json").write_text(json.dumps(results, indent=1, default=str))
    if last["payload"] is not None:
        (out / "check.json").write_text(json.dumps(last["payload"], indent=1))


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "_probe":
        probe_main(sys.argv[2])
    else:
        main()
