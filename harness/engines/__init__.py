"""The upstream engines, one module each (sglang.py, vllm.py) defining its EngineProfile as
`ENGINE`: what `check` reads a plugin of it against (package, source layout, plugin loading, the
kinds table) and how `run` serves it (benchmark client, profiler protocol). Nothing else tests an
engine's name, so a third engine is its module here and its name in ENGINES.

The knowledge engine reads the engine in force, `profile()`: a command sets it once at entry
(`use_engine`). A runbook names its own (`environment.engine`, a key of ENGINES).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from importlib import import_module

from harness.engines.base import LOADERS, EngineProfile, Loader, PinForm
from harness.engines.forms import QUALNAME
from harness.engines.kinds import ATTRIBUTE_ERRORS, IMPORT_ERRORS, KEY_ERRORS, Kind
from harness.engines.serving import BenchClient, Profiler, Serving
from harness.errors import HarnessError

# name -> profile, each from harness/engines/<name>.py (what --engine and `environment.engine` take)
ENGINES: dict[str, EngineProfile] = {name: import_module(f"{__name__}.{name}").ENGINE for name in ("sglang", "vllm")}
SGLANG = ENGINES["sglang"]  # the default: a plugin or runbook that names no engine is SGLang's

_ENGINE: ContextVar[EngineProfile] = ContextVar("harness_engine", default=SGLANG)


def profile() -> EngineProfile:
    """The engine the knowledge engine reads plugins of: the one `use_engine` set, else SGLang."""
    return _ENGINE.get()


@contextlib.contextmanager
def use_engine(engine: EngineProfile) -> Iterator[EngineProfile]:
    """Read plugins of `engine` inside the block (commands set it once at entry)."""
    token = _ENGINE.set(engine)
    try:
        yield engine
    finally:
        _ENGINE.reset(token)


def engine_named(name: str) -> EngineProfile:
    """The profile `--engine NAME` names; HarnessError (one line) for an unknown one."""
    try:
        return ENGINES[name.strip().lower()]
    except KeyError:
        raise HarnessError(f"--engine {name!r}: one of {', '.join(ENGINES)}") from None


def engine_of_spec(spec: str | None) -> EngineProfile | None:
    """The engine a release spec names (`vllm==0.27.1` -> vLLM); None for a path or git spec."""
    head = (spec or "").strip().split("==", 1)
    if len(head) != 2:
        return None
    return next((engine for engine in ENGINES.values() if head[0].strip().lower() == engine.distribution), None)


def result_aliases() -> dict[str, tuple[str, ...]]:
    """harness result key -> the other names benchmark clients write it under (BenchClient.result_keys;
    read from any client's file)."""
    aliases: dict[str, tuple[str, ...]] = {}
    for engine in ENGINES.values():
        for key, theirs in engine.serving.bench.result_keys.items():
            if theirs not in aliases.get(key, ()):
                aliases[key] = (*aliases.get(key, ()), theirs)
    return aliases


__all__ = [
    "BenchClient", "ENGINES", "EngineProfile", "IMPORT_ERRORS", "KEY_ERRORS", "ATTRIBUTE_ERRORS", "Kind", "LOADERS", "Loader", "PinForm", "Profiler",
    "QUALNAME", "SGLANG", "Serving", "engine_named", "engine_of_spec", "profile", "result_aliases", "use_engine",
]
