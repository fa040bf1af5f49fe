"""The real sglang releases the tests read: from the wheel cache or the package index; a test
that needs them is skipped (with the reason) only when the index cannot be reached."""

from __future__ import annotations

import pytest

from harness.errors import HarnessError
from harness.knowledge.upstream.source import UNREACHABLE, UpstreamSource, resolve_upstream


def real_releases(*specs: str) -> tuple[UpstreamSource, ...]:
    """`resolve_upstream` of each spec; pytest.skip when the index is unreachable."""
    try:
        return tuple(resolve_upstream(spec) for spec in specs)
    except HarnessError as exc:
        if UNREACHABLE in str(exc):
            pytest.skip(str(exc))
        raise
