"""The bench_serving launcher: `python -m harness.evidence.perf <bench_serving args>` (perf.py
hands its command line here), bench_serving in this process with the torchvision fallback, and
several repetitions in one process (`sequence_arguments`), so its ~12 s import is paid once.
See `harness.evidence.perf` for why the torchvision placeholder exists."""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import runpy
import sys
import time
import traceback
import types
import warnings
from pathlib import Path
from typing import Any

from harness.errors import Signalled

LAUNCHER_PREFIX = "[harness.evidence.perf]"  # how the launcher's own lines in the logs begin


def _install_torchvision_placeholder() -> None:
    """Make sglang's top-level `import torchvision` work when the real one cannot load.

    Only imports made by sglang modules get the placeholder, so transformers and datasets keep
    seeing torchvision as absent; every call into it raises."""
    class Placeholder:
        def __init__(self, path: str):
            self._path = path

        def __getattr__(self, name: str) -> Any:
            if name.startswith("__"):
                raise AttributeError(name)
            return Placeholder(f"{self._path}.{name}")

        def __call__(self, *args: Any, **kwargs: Any) -> Any:
            raise RuntimeError(f"{self._path} was called, but torchvision is not usable here "
                               "(harness.evidence.perf put a placeholder in its place)")

        def __mro_entries__(self, bases: tuple) -> tuple:
            return (object,)

    class PlaceholderModule(types.ModuleType):
        def __getattr__(self, name: str) -> Any:
            if name.startswith("__"):
                raise AttributeError(name)
            return Placeholder(f"{self.__name__}.{name}")

    import_machinery = ("<frozen", os.path.dirname(importlib.__file__))

    def importer_module() -> str:
        """Name of the module whose import statement (or find_spec call) is being served."""
        frame = sys._getframe(2)
        while frame is not None and frame.f_code.co_filename.startswith(import_machinery):
            frame = frame.f_back
        return frame.f_globals.get("__name__", "") if frame is not None else ""

    class Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
        def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
            if name.split(".")[0] == "torchvision" and importer_module().startswith(("sglang", "torchvision")):
                return importlib.machinery.ModuleSpec(name, self, is_package=True)
            return None

        def create_module(self, spec: Any) -> types.ModuleType:
            return PlaceholderModule(spec.name)

        def exec_module(self, module: types.ModuleType) -> None:
            module.__path__ = []

    # transformers caches whether torchvision exists, some of it while it is imported: have it
    # cache "no" (a None entry in sys.modules makes find_spec answer None), so it never reaches
    # for the placeholder or a broken real one.
    sys.modules["torchvision"] = None
    try:
        from transformers.utils import import_utils

        import_utils.is_torchvision_available()
    finally:
        del sys.modules["torchvision"]
    sys.meta_path.insert(0, Finder())


def _prepare_torchvision() -> str:
    """'real' when torchvision imports, else install the placeholder and say why."""
    if importlib.util.find_spec("torchvision") is not None:
        try:
            import torchvision  # noqa: F401
            return "real"
        except Exception as exc:  # noqa: BLE001 - PyPI's CUDA build raises RuntimeError beside a CPU torch
            for name in [n for n in sys.modules if n.split(".")[0] == "torchvision"]:
                del sys.modules[name]
            why = f"torchvision does not import ({type(exc).__name__}: {exc})"
    else:
        why = "torchvision is not installed"
    _install_torchvision_placeholder()
    return why


SEQUENCE_SEPARATOR = "---"  # between the argument lists of repetitions run in one launcher process


def sequence_arguments(runs: list[list[str]]) -> list[str]:
    """The launcher's arguments for several bench_serving runs, one after the other."""
    joined: list[str] = []
    for args in runs:
        joined += [SEQUENCE_SEPARATOR, *args] if joined else args
    return joined


def _split_sequence(argv: list[str]) -> list[list[str]]:
    runs: list[list[str]] = [[]]
    for arg in argv:
        if arg == SEQUENCE_SEPARATOR:
            runs.append([])
        else:
            runs[-1].append(arg)
    return runs


def _option(args: list[str], flag: str) -> str | None:
    return args[args.index(flag) + 1] if flag in args[:-1] else None


def _bench_once(argv: list[str]) -> str | None:
    """One bench_serving run in this process (sglang.bench_serving's own command-line entry);
    why it failed, or None."""
    from sglang.benchmark.serving import cli_main

    sys.argv = ["sglang.bench_serving", *argv]
    started = time.monotonic()
    try:
        cli_main()
    except Signalled:
        raise
    except SystemExit as exc:
        if exc.code not in (None, 0):
            return f"bench_serving exited with {exc.code}"
    except Exception:  # noqa: BLE001 - reported in the repetition's log, and the sequence stops
        traceback.print_exc()
        return "bench_serving raised (traceback above)"
    finally:
        print(f"{LAUNCHER_PREFIX} bench_serving run took {time.monotonic() - started:.1f} s",
              file=sys.stderr, flush=True)
    output, prompts = _option(argv, "--output-file"), _option(argv, "--num-prompts")
    if output and prompts:  # a run whose requests failed makes the following ones pointless
        try:
            completed = int(json.loads(Path(output).read_text().splitlines()[-1]).get("completed", 0))
        except (OSError, ValueError, IndexError, AttributeError):
            return f"bench_serving wrote no readable result to {output}"
        if completed < int(prompts):
            return f"{int(prompts) - completed} of {prompts} requests failed"
    return None


def main(argv: list[str]) -> None:
    """`python -m harness.evidence.perf <bench_serving args>`: bench_serving, torchvision-proof.
    With several argument lists separated by `---`, the runs go one after the other in this
    process (sglang imported once), each printing to its `--output-file`'s `.log`; the first run
    that fails stops the sequence (exit 1)."""
    torchvision = _prepare_torchvision()
    if torchvision != "real":
        print(f"{LAUNCHER_PREFIX} {torchvision}: sglang's imports of it get a placeholder",
              file=sys.stderr, flush=True)
    warnings.filterwarnings("ignore", message=".*sglang.bench_serving.*deprecated", category=FutureWarning)
    runs = _split_sequence(argv)
    if len(runs) == 1:
        sys.argv = ["sglang.bench_serving", *argv]
        started = time.monotonic()
        runpy.run_module("sglang.bench_serving", run_name="__main__", alter_sys=True)
        print(f"{LAUNCHER_PREFIX} bench_serving took {time.monotonic() - started:.1f} s, imports included",
              file=sys.stderr, flush=True)
        return
    started = time.monotonic()
    import sglang.benchmark.serving  # noqa: F401 - the imports, once
    print(f"{LAUNCHER_PREFIX} importing bench_serving took {time.monotonic() - started:.1f} s", flush=True)
    for number, args in enumerate(runs, 1):
        output = _option(args, "--output-file")
        log_path = Path(output).with_suffix(".log") if output else None
        with contextlib.ExitStack() as stack:
            if log_path is not None:
                log = stack.enter_context(log_path.open("a"))
                if torchvision != "real":
                    print(f"{LAUNCHER_PREFIX} {torchvision}: sglang's imports of it get a placeholder", file=log)
                stack.enter_context(contextlib.redirect_stdout(log))
                stack.enter_context(contextlib.redirect_stderr(log))
            failure = _bench_once(args)
            if failure:
                print(f"{LAUNCHER_PREFIX} {failure}", file=sys.stderr, flush=True)
        print(f"{LAUNCHER_PREFIX} run {number} of {len(runs)} ({log_path or 'no log'}): {failure or 'done'}",
              flush=True)
        if failure:
            sys.exit(1)
