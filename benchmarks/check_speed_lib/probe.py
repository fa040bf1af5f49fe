"""The probe: what runs inside `python check_speed.py _probe TASK.json`, with one release's source
first on sys.path. It never imports harness, nor the rest of this package."""

from __future__ import annotations

import ast
import json
import os
import sys
from pathlib import Path


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
    except Exception:  # noqa: BLE001 - a class whose dir() raises: no members
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
        except Exception:  # noqa: BLE001, S110 - a class that refuses subclassing stays subclassable=False
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
                except Exception:  # noqa: BLE001, S110 - a class the runtime cannot introspect is left out
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
