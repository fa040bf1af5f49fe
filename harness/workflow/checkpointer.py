"""Where LangGraph keeps run state: its resume cache. By default one SQLite file per workspace;
with `HARNESS_STATE_URL=postgresql://…` (or `harness --state-url`) a PostgreSQL database shared
by a team, through LangGraph's PostgresSaver, so a CI bot starts runs and engineers decide on
them from their own machines. The run's record is its journal (`harness.record.trajectory`)
and stays on disk under the workspace with the evidence; this store only lets the graph
continue where the journal says the run stands, and can be rebuilt from the journals (`harness
repair`).

The per-run lock follows the store: an flock on the run's lock file with SQLite, a PostgreSQL
advisory lock with a shared database (held by a connection; the server drops it when the
process dies, on whichever machine)."""

from __future__ import annotations

import hashlib
import os
import socket
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from langgraph.checkpoint.base import BaseCheckpointSaver

from harness.errors import HarnessError
from harness.record.layout import Workspace, utc_now

SIDE_FILES = ("-wal", "-shm")  # SQLite's write-ahead log and its index, beside the database
STATE_URL_ENV = "HARNESS_STATE_URL"
_LOCK_SPACE = 0x4861  # first key of the two-key advisory locks this harness takes (the second: the run)
_CONNECT_TIMEOUT_S = 10
_set_up: set[str] = set()  # URLs whose tables this process has created or checked


class StateUnreadable(HarnessError):
    """The state file exists but SQLite cannot read it (garbage, truncated, malformed, or not a
    file at all)."""

    def __init__(self, path: Path, problem: str):
        super().__init__(f"state file {path} is corrupt ({problem}); the runs' journals and evidence are intact: "
                         f"`harness repair` moves it aside and rebuilds every run's resume state from them")
        self.problem = problem


def state_url() -> str | None:
    """The shared state database's URL (HARNESS_STATE_URL), or None for the workspace's SQLite
    file. HarnessError for a URL that is not postgresql://."""
    url = (os.environ.get(STATE_URL_ENV) or "").strip()
    if not url:
        return None
    if urlsplit(url).scheme not in ("postgresql", "postgres"):
        raise HarnessError(f"{STATE_URL_ENV} {redact(url)!r}: only postgresql://… URLs are supported (unset it for "
                           f"the workspace's SQLite file)")
    return url


def redact(url: str) -> str:
    """The URL without its password, for messages."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))


def state_location(workspace: Workspace) -> str:
    """Where the run state lives, in words: the database URL (no password) or the SQLite file."""
    url = state_url()
    return f"PostgreSQL {redact(url)}" if url else str(workspace.state_db)


def _database_down(url: str, exc: Exception) -> HarnessError:
    reason = " ".join(str(exc).split()) or type(exc).__name__
    return HarnessError(f"state database {redact(url)} is unreachable ({reason[:300]}); nothing was lost: every run's "
                        f"journal, evidence and reports are on disk under its workspace; retry once the database is back")


def _pg_connect(url: str) -> Any:
    import psycopg  # cost: only with a shared state database
    from psycopg.rows import dict_row

    try:
        return psycopg.Connection.connect(
            url, autocommit=True, prepare_threshold=0, row_factory=dict_row, connect_timeout=_CONNECT_TIMEOUT_S,
            application_name=f"harness pid {os.getpid()} on {socket.gethostname()}"[:63],
        )
    except psycopg.Error as exc:
        raise _database_down(url, exc) from None


@contextmanager
def _postgres(url: str) -> Iterator[BaseCheckpointSaver]:
    import psycopg
    from langgraph.checkpoint.postgres import (
        PostgresSaver,  # cost: only with a shared state database
    )

    conn = _pg_connect(url)
    try:
        saver = PostgresSaver(conn)
        if url not in _set_up:
            # Two processes creating the tables at once would race on the migrations table.
            conn.execute("SELECT pg_advisory_lock(%s, 0)", (_LOCK_SPACE,))
            saver.setup()
            conn.execute("SELECT pg_advisory_unlock(%s, 0)", (_LOCK_SPACE,))
            _set_up.add(url)
        yield saver
    except psycopg.OperationalError as exc:  # the server went away mid-command
        raise _database_down(url, exc) from None
    finally:
        conn.close()


def _connect(path: Path) -> tuple[sqlite3.Connection, BaseCheckpointSaver]:
    from langgraph.checkpoint.sqlite import SqliteSaver

    conn = sqlite3.connect(str(path), check_same_thread=False)
    try:
        # sqlite opens any file lazily, and a damaged page shows only when read: check the whole
        # (small) file now, so a corrupt one fails here, as one line, not deep inside LangGraph.
        verdict = conn.execute("PRAGMA quick_check").fetchone()
        if verdict and verdict[0] != "ok":
            raise sqlite3.DatabaseError(verdict[0])
        saver = SqliteSaver(conn)
        saver.setup()
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise StateUnreadable(path, str(exc)) from None
    return conn, saver


@contextmanager
def open_checkpointer(workspace: Workspace) -> Iterator[BaseCheckpointSaver]:
    """The workspace's LangGraph checkpointer (created when absent), closed on exit: the shared
    database when HARNESS_STATE_URL is set, else the workspace's SQLite file. StateUnreadable
    (one line) when the state file is corrupt; HarnessError when the database is unreachable."""
    with _checkpointer(workspace, create=True) as saver:
        assert saver is not None  # create=True always opens one
        yield saver


@contextmanager
def existing_checkpointer(workspace: Workspace) -> Iterator[BaseCheckpointSaver | None]:
    """Like `open_checkpointer`, for reading only: None when there is no state file (nothing is
    created). StateUnreadable when it is corrupt."""
    with _checkpointer(workspace, create=False) as saver:
        yield saver


@contextmanager
def _checkpointer(workspace: Workspace, *, create: bool) -> Iterator[BaseCheckpointSaver | None]:
    url = state_url()
    if url:
        with _postgres(url) as saver:
            yield saver
        return
    path = workspace.state_db
    if not create and not path.exists():
        yield None
        return
    if path.exists() and not path.is_file():  # a directory, a FIFO...: SQLite would fail deep inside ("unable to open")
        raise StateUnreadable(path, "not a file")
    workspace.make_harness_dir()
    conn, saver = _connect(path)
    try:
        yield saver
    finally:
        conn.close()


def _run_key(run_id: str) -> int:
    return int.from_bytes(hashlib.blake2b(run_id.encode(), digest_size=4).digest(), "big") & 0x7FFFFFFF


@contextmanager
def advisory_lock(run_id: str) -> Iterator[None]:
    """Held while this process decides on or advances `run_id`, across every machine sharing the
    database. HarnessError naming the holder when another process holds it."""
    url = state_url()
    assert url, "advisory locks need the shared state database"
    conn = _pg_connect(url)
    try:
        row = conn.execute("SELECT pg_try_advisory_lock(%s, %s) AS got", (_LOCK_SPACE, _run_key(run_id))).fetchone()
        if not row["got"]:
            holder = _holder(conn, run_id) or "another process"
            raise HarnessError(f"run {run_id} is being advanced by {holder}; wait for it")
        yield
    finally:
        conn.close()  # closing the session releases the lock


def advisory_holder(run_id: str) -> str | None:
    """Who holds `run_id`'s advisory lock ('harness pid N on HOST'), or None."""
    url = state_url()
    assert url, "advisory locks need the shared state database"
    conn = _pg_connect(url)
    try:
        return _holder(conn, run_id)
    finally:
        conn.close()


def _holder(conn: Any, run_id: str) -> str | None:
    row = conn.execute(
        "SELECT a.application_name AS name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
        "WHERE l.locktype = 'advisory' AND l.granted AND l.classid = %s::oid AND l.objid = %s::oid AND l.objsubid = 2",
        (_LOCK_SPACE, _run_key(run_id)),
    ).fetchone()
    return (row["name"] or "another process") if row else None


def move_aside(workspace: Workspace) -> Path:
    """Rename the state file (and its -wal/-shm files) to `state.sqlite.corrupt-<UTC time>`, so
    a fresh one can be built; returns the new name. Nothing is deleted."""
    stamp = utc_now().replace(":", "")
    target = workspace.state_db.with_name(f"{workspace.state_db.name}.corrupt-{stamp}")
    os.replace(workspace.state_db, target)
    for suffix in SIDE_FILES:
        side = workspace.state_db.with_name(workspace.state_db.name + suffix)
        if side.exists():
            os.replace(side, target.with_name(target.name + suffix))
    return target
