"""Where LangGraph keeps run state: its resume cache, one SQLite file per workspace. The run's
record is its journal (`harness.record.trajectory`); this file only lets the graph continue
where the journal says the run stands, and can be rebuilt from the journals (`harness repair`).
A team database would be another branch of `open_checkpointer` returning another
BaseCheckpointSaver."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from langgraph.checkpoint.sqlite import SqliteSaver

from harness.errors import HarnessError
from harness.record.layout import Workspace, utc_now

SIDE_FILES = ("-wal", "-shm")  # SQLite's write-ahead log and its index, beside the database


class StateUnreadable(HarnessError):
    """The state file exists but SQLite cannot read it (garbage, truncated, malformed)."""

    def __init__(self, path: Path, problem: str):
        super().__init__(f"state file {path} is corrupt ({problem}); the runs' journals and evidence are intact: "
                         f"`harness repair` moves it aside and rebuilds every run's resume state from them")
        self.problem = problem


def _connect(path: Path) -> tuple[sqlite3.Connection, SqliteSaver]:
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
def open_checkpointer(workspace: Workspace) -> Iterator[SqliteSaver]:
    """The workspace's LangGraph checkpointer (created when absent), closed on exit.
    StateUnreadable (one line) when the state file is corrupt."""
    path = workspace.state_db
    path.parent.mkdir(parents=True, exist_ok=True)
    conn, saver = _connect(path)
    try:
        yield saver
    finally:
        conn.close()


@contextmanager
def existing_checkpointer(workspace: Workspace) -> Iterator[SqliteSaver | None]:
    """Like `open_checkpointer`, for reading only: None when there is no state file (nothing is
    created). StateUnreadable when it is corrupt."""
    path = workspace.state_db
    if not path.is_file():
        yield None
        return
    conn, saver = _connect(path)
    try:
        yield saver
    finally:
        conn.close()


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
