"""A feature's review runs one after another, or up to K at once, each in its own process.

A parallel run goes to a worker (`python -c` calling `main` here): its own interpreter, so the
runs share no mutable state (the engine in force, the per-run lock table, LangGraph's and
SQLite's connections, signal handlers); each takes its own lock and writes its own run directory,
as separate `harness` commands would. The worker is told its item as one JSON line on stdin and
answers in JSON lines on stdout: its progress messages, then its result or why it failed. Workers
run in their own session, so a Ctrl-C or SIGTERM reaches each once, forwarded by the parent,
which waits for every one to unwind (engines stopped, the run's journal keeping what finished)
before it stops itself. The parent holds each worker's stdin open while it runs: if the parent
dies (SIGKILL), the end of stdin stops the worker as SIGTERM would, so no run goes on unwatched.

A failure of one item (an error, a crash of its worker) is that item's `Failed`: the others go on."""

from __future__ import annotations

import importlib
import inspect
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar, get_type_hints

from pydantic import BaseModel

from harness.engines import ENGINES, profile, use_engine
from harness.errors import HarnessError, Signalled
from harness.util.files import is_write_error, write_error_line
from harness.util.interrupts import keeping_signals, raise_kept

Progress = Callable[[str], None]
Task = TypeVar("Task", bound=BaseModel)
Result = TypeVar("Result", bound=BaseModel)
_POLL_S = 0.5  # how often the parent wakes while it waits on workers (Ctrl-C is taken between waits)


class Failed(BaseModel):
    """Why one item produced no result: one line."""

    reason: str


class WorkerOrder(BaseModel):
    """What a worker process is told: the function to call, its task, the engine in force."""

    work: str  # "module:function", module level: function(task, progress) -> a pydantic model
    task: dict[str, Any]  # the task, as JSON data of the function's first parameter's type
    engine: str  # a key of harness.engines.ENGINES: a fresh interpreter starts with the default


def run_all(work: Callable[[Task, Progress], Result], tasks: list[tuple[str, Task]], *, parallel: int,
            progress: Progress) -> dict[str, Result | Failed]:
    """`work(task, progress)` for each (key, task), in this process one after another when
    `parallel` is 1, else up to `parallel` at once, each in a worker process. Says
    "feature i/n: <key>" on `progress` as each starts; a parallel item's own messages come as
    "[<key>] <message>". Returns each key's result, or `Failed` for an item that raised or whose
    worker died (its error is also on stderr when it was a bug). Ctrl-C or SIGTERM: every worker
    is stopped and waited for, then the interrupt goes on."""
    if parallel <= 1:
        results: dict[str, Result | Failed] = {}
        for index, (key, task) in enumerate(tasks, 1):
            progress(f"feature {index}/{len(tasks)}: {key}")
            results[key] = _guarded(work, task, progress)
        return results
    return _Pool(work, tasks, parallel, progress).run()


def _guarded(work: Callable[[Task, Progress], Result], task: Task, progress: Progress) -> Result | Failed:
    try:
        return work(task, progress)
    except HarnessError as exc:
        return Failed(reason=" ".join(str(exc).split()))
    except OSError as exc:
        if not is_write_error(exc):  # a bug, below
            return _bug(exc)
        return Failed(reason=write_error_line(exc))  # a full or read-only disk: what `harness` itself says
    except Exception as exc:  # noqa: BLE001 — a bug in one run must not lose the others
        return _bug(exc)


def _bug(exc: Exception) -> Failed:
    traceback.print_exc()  # a bug keeps its traceback
    return Failed(reason=f"{type(exc).__name__}: {' '.join(str(exc).split())} (a bug: its traceback is on stderr)")


class _Pool:
    """The parent's side: starts workers up to the limit, relays their lines, collects results."""

    def __init__(self, work: Callable, tasks: list[tuple[str, BaseModel]], parallel: int, progress: Progress):
        self.work, self.tasks, self.parallel, self.progress = work, tasks, parallel, progress
        self.result_type: type[BaseModel] = get_type_hints(work)["return"]
        self.lines: queue.Queue[tuple[str, str | None]] = queue.Queue()  # (key, a line or None at EOF)
        self.running: dict[str, subprocess.Popen] = {}
        self.results: dict[str, BaseModel] = {}

    def run(self) -> dict[str, Any]:
        pending = list(enumerate(self.tasks, 1))
        try:
            while pending or self.running:
                while pending and len(self.running) < self.parallel:
                    index, (key, task) = pending.pop(0)
                    self.progress(f"feature {index}/{len(self.tasks)}: {key}")
                    self._start(key, task)
                self._take_lines()
        except (KeyboardInterrupt, Signalled) as exc:
            self._stop_all(signal.SIGINT if isinstance(exc, KeyboardInterrupt) else signal.SIGTERM)
            raise
        return self.results

    def _start(self, key: str, task: BaseModel) -> None:
        order = WorkerOrder(work=f"{self.work.__module__}:{self.work.__qualname__}", task=task.model_dump(mode="json"),
                            engine=profile().name)
        # this harness, wherever it was imported from (appended: an installed one still comes first);
        # a Ctrl-C forwarded at any point, even while it imports, ends it as `harness` ends: 130, no traceback
        boot = (f"import sys\nsys.path.append({str(Path(__file__).resolve().parents[2])!r})\n"
                f"try:\n    from {__name__} import main\n    main()\nexcept KeyboardInterrupt:\n    sys.exit(130)\n")
        worker = subprocess.Popen([sys.executable, "-c", boot], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                  start_new_session=True)
        self.running[key] = worker
        assert worker.stdin is not None and worker.stdout is not None
        try:
            worker.stdin.write(order.model_dump_json() + "\n")
            worker.stdin.flush()  # and kept open: its end tells the worker this process is gone
        except BrokenPipeError:  # it died at start: its end of output says so
            pass
        threading.Thread(target=self._read, args=(key, worker.stdout), daemon=True).start()

    def _read(self, key: str, stream: Any) -> None:
        for line in stream:
            self.lines.put((key, line))
        self.lines.put((key, None))

    def _take_lines(self) -> None:
        try:
            key, line = self.lines.get(timeout=_POLL_S)
        except queue.Empty:
            return
        if line is None:  # the worker closed its output: it is done (or died)
            worker = self.running.pop(key)
            code = worker.wait()
            try:
                worker.stdin.close()
            except BrokenPipeError:
                pass
            if key not in self.results:
                self.results[key] = Failed(reason=f"its worker process exited with code {code} before it reported "
                                                  f"a result (its output is on stderr)")
            return
        message = json.loads(line)
        if "progress" in message:
            self.progress(f"[{key}] {message['progress']}")
        elif "result" in message:
            self.results[key] = self.result_type.model_validate(message["result"])
        else:
            self.results[key] = Failed(reason=message["failed"])

    def _stop_all(self, sig: signal.Signals) -> None:
        """Forward `sig` to every worker and wait until each has unwound, relaying what it says;
        a second Ctrl-C meanwhile is forwarded again."""
        for worker in self.running.values():
            worker.send_signal(sig)
        while self.running:
            try:
                self._take_lines()
            except KeyboardInterrupt:
                for worker in self.running.values():
                    worker.send_signal(signal.SIGINT)


def _raise_signalled(signum: int, _frame: object) -> None:
    raise Signalled(128 + signum)


def main() -> None:
    """A worker: read a WorkerOrder on stdin, run it, write JSON lines on stdout. SIGTERM and
    SIGHUP unwind the work like `harness` does (exit 128 + signal, nothing printed), as Ctrl-C
    does; so does the end of stdin (the parent is gone)."""
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _raise_signalled)
    # the answers keep the real stdout; anything else printed there goes to stderr
    channel = os.fdopen(os.dup(sys.stdout.fileno()), "w", buffering=1)
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    order = WorkerOrder.model_validate_json(sys.stdin.readline())
    threading.Thread(target=_stop_when_orphaned, daemon=True).start()
    module, _, name = order.work.partition(":")
    work = getattr(importlib.import_module(module), name)
    task_type = get_type_hints(work)[next(iter(inspect.signature(work).parameters))]
    task = task_type.model_validate(order.task)

    def answer(message: dict[str, Any]) -> None:
        try:
            channel.write(json.dumps(message) + "\n")
        except OSError:  # the parent is gone: nobody reads; the run still unwinds and keeps its record
            pass

    def progress(message: str) -> None:
        raise_kept()  # a Ctrl-C or SIGTERM swallowed in a finaliser ends the worker here
        answer({"progress": message})

    with use_engine(ENGINES[order.engine]), keeping_signals():
        outcome = _guarded(work, task, progress)
        raise_kept()
    answer({"failed": outcome.reason} if isinstance(outcome, Failed) else {"result": outcome.model_dump(mode="json")})


def _stop_when_orphaned() -> None:
    sys.stdin.read()  # returns at EOF: the parent closed it (after this worker ended) or died
    os.kill(os.getpid(), signal.SIGTERM)
