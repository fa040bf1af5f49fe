"""Progress and messages go to stderr, so `--json` output on stdout stays one clean document.

Neither console reads rich markup: what the commands print holds text people and the agent
supplied (approvers, notes, reasons, findings such as `list[int]`, paths), and `[/]` or
`[link=...]` in it must show as typed, not restyle the line or raise MarkupError. Styles are
given as `style=` or `Text.assemble` parts instead."""

from __future__ import annotations

import json
import os
import sys
from contextlib import contextmanager

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.text import Text

# Logs and CI pipes are not terminals; without a width, rich folds tables at 80 columns.
err = Console(stderr=True, markup=False, width=None if sys.stderr.isatty() else 200)
# What a command reports (tables, verdicts) goes to stdout, so `> file` keeps it; progress and
# errors go to stderr. A COLUMNS the user sets is the width there too (rich reads it when given none).
out = Console(markup=False, highlight=False, soft_wrap=True,
              width=None if sys.stdout.isatty() or os.environ.get("COLUMNS", "").isdigit() else 200)


def print_json(document: str) -> None:
    """A `--json` document on stdout as plain indented JSON (rich's print_json highlights and
    wraps it token by token: 19 s for the 6k-row `features` document of the example)."""
    sys.stdout.write(json.dumps(json.loads(document), indent=2) + "\n")
    sys.stdout.flush()


@contextmanager
def step(message: str):
    """A spinner for work of unknown length (downloading a wheel, scanning a plugin)."""
    with err.status(Text(message)):  # a str status is parsed as markup whatever the console says
        yield
    err.print(f"✓ {message}", style="dim")


@contextmanager
def counted():
    """Yields a callback(label, done, total) that drives one progress bar per label."""
    with Progress(TextColumn("{task.description}", markup=False), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=err, transient=False) as progress:
        tasks: dict[str, int] = {}

        def update(label: str, done: int, total: int) -> None:
            if label not in tasks:
                tasks[label] = progress.add_task(label, total=total)
            progress.update(tasks[label], completed=done)

        yield update
