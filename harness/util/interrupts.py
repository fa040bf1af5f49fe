"""A Ctrl-C or SIGTERM that lands while a finaliser runs is kept, not printed and dropped.

Python runs a signal handler in whatever frame is executing. When that frame is a finaliser
(GitPython's `Repo.__del__` during a collection), the KeyboardInterrupt or Signalled the handler
raises cannot propagate: CPython passes it to `sys.unraisablehook`, whose default prints
"Exception ignored in … Traceback" and drops it, and the work goes on past the user's Ctrl-C
(https://docs.python.org/3/library/sys.html#sys.unraisablehook). Inside `keeping_signals()` such an
exception is kept without a word; `raise_kept()` raises it where the work can stop cleanly (its
next progress line, or when it returns). Any other unraisable exception is printed as before.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from harness.errors import Signalled

_kept: list[BaseException] = []  # signals swallowed in a finaliser, oldest first, until raised


@contextmanager
def keeping_signals() -> Iterator[None]:
    """While inside, a KeyboardInterrupt or Signalled raised in a finaliser is kept for
    `raise_kept` instead of printed. Nests; the previous hook is back on exit."""
    previous = sys.unraisablehook

    def hook(unraisable: Any) -> None:
        if isinstance(unraisable.exc_value, (KeyboardInterrupt, Signalled)):
            _kept.append(unraisable.exc_value)
        else:
            previous(unraisable)

    sys.unraisablehook = hook
    try:
        yield
    finally:
        sys.unraisablehook = previous


def raise_kept() -> None:
    """Raise the first signal exception kept since the last call, if any (KeyboardInterrupt or
    Signalled); the rest are dropped with it: one stop is enough."""
    if _kept:
        first = _kept[0]
        _kept.clear()
        raise first
