"""Paths named on the command line, resolved once with one clear line for the ones that cannot be."""

from __future__ import annotations

from pathlib import Path

from harness.errors import HarnessError


def resolved(path: Path, what: str) -> Path:
    """`path` with `~` expanded, absolute and symlinks resolved. HarnessError `<what> <path>:
    cannot resolve it: <why>` for a symlink loop (pathlib raises RuntimeError before Python
    3.13, OSError after) or a path the system refuses to look up."""
    try:
        return path.expanduser().resolve()
    except (OSError, RuntimeError) as exc:
        raise HarnessError(f"{what} {path}: cannot resolve it: {getattr(exc, 'strerror', None) or exc}") from None
