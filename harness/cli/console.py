"""Progress and messages go to stderr, so `--json` output on stdout stays one clean document."""

from __future__ import annotations

import sys
from contextlib import contextmanager

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

# Logs and CI pipes are not terminals; without a width, rich folds tables at 80 columns.
err = Console(stderr=True, width=None if sys.stderr.isatty() else 200)
# What a command reports (tables, verdicts) goes to stdout, so `> file` keeps it; progress and
# errors go to stderr.
out = Console(highlight=False, soft_wrap=True, width=None if sys.stdout.isatty() else 200)


@contextmanager
def step(message: str):
    """A spinner for work of unknown length (downloading a wheel, scanning a plugin)."""
    with err.status(message):
        yield
    err.print(f"[dim]✓ {message}[/dim]")


@contextmanager
def counted():
    """Yields a callback(label, done, total) that drives one progress bar per label."""
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=err, transient=False) as progress:
        tasks: dict[str, int] = {}

        def update(label: str, done: int, total: int) -> None:
            if label not in tasks:
                tasks[label] = progress.add_task(label, total=total)
            progress.update(tasks[label], completed=done)

        yield update
