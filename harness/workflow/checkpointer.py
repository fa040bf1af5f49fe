"""Where LangGraph keeps run state. The embedded default is SQLite inside the workspace; a team
database would be another branch of `open_checkpointer` returning another BaseCheckpointSaver."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager

from langgraph.checkpoint.sqlite import SqliteSaver

from harness.errors import HarnessError
from harness.record.layout import Workspace


@contextmanager
def open_checkpointer(workspace: Workspace) -> Iterator[SqliteSaver]:
    """The workspace's LangGraph checkpointer, closed on exit. HarnessError (one line) when the
    state file is corrupt."""
    path = workspace.state_db
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(str(path), check_same_thread=False)
    try:
        # sqlite opens any file lazily; touch the schema now so a corrupt file fails here,
        # as one line, rather than as a traceback from deep inside LangGraph.
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        saver = SqliteSaver(conn)
        saver.setup()
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise HarnessError(
            f"state file {path} is corrupt ({exc}); move it aside to start afresh"
        ) from None
    try:
        yield saver
    finally:
        conn.close()
