"""One process at a time may decide on or advance a run: an flock on the run's lock file, or a
PostgreSQL advisory lock with a shared state database; either is dropped if the process is
killed. The lock is reentrant within the process, so a command that holds it may call another
that takes it."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager

from harness.errors import HarnessError
from harness.record.layout import RunLayout
from harness.workflow.checkpointer import advisory_holder, advisory_lock, state_url

_held: set[str] = set()  # the run ids this process holds the lock of


@contextmanager
def exclusive(run: RunLayout) -> Iterator[None]:
    """Held while a process decides on or advances the run. HarnessError (naming the holder,
    'pid N') when another process holds it."""
    if run.run_id in _held:
        yield
        return
    if state_url():
        with advisory_lock(run.run_id):
            _held.add(run.run_id)
            try:
                yield
            finally:
                _held.discard(run.run_id)
        return
    run.workspace.make_harness_dir()
    run.run_dir.mkdir(parents=True, exist_ok=True)
    with open(run.lock_file, "a+") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            holder = fh.read().strip() or "another process"
            raise HarnessError(f"run {run.run_id} is being advanced by {holder}; wait for it") from None
        fh.seek(0)
        fh.truncate()
        fh.write(f"pid {os.getpid()}")
        fh.flush()
        _held.add(run.run_id)
        try:
            yield
        finally:
            _held.discard(run.run_id)


def holds(run: RunLayout) -> bool:
    """Whether this process holds the run's lock (it is advancing the run itself)."""
    return run.run_id in _held


def busy_by(run: RunLayout) -> str | None:
    """Who is advancing the run right now ('pid N'), or None. Reads only (a shared lock on a
    read-only descriptor), so it works on a read-only workspace too. With a shared state
    database: the holder of the run's advisory lock ('harness pid N on HOST')."""
    if state_url():
        return advisory_holder(run.run_id)
    if not run.lock_file.is_file():
        return None
    with open(run.lock_file) as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return fh.read().strip() or "another process"
        fcntl.flock(fh, fcntl.LOCK_UN)
    return None
