"""Shared test support (tests/support) is importable from every test folder, and its Slurm
cluster is one fixture for every folder. The suite calls the knowledge engine in-process, so it
collects garbage as `harness` itself does (cli.main)."""

import gc
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.cli import GC_THRESHOLDS

sys.path.insert(0, str(Path(__file__).parent / "support"))
gc.set_threshold(*GC_THRESHOLDS)

from slurm_cluster import SlurmCluster  # noqa: E402 — tests/support is on the path from here on


@pytest.fixture(scope="module")
def cluster() -> Iterator[SlurmCluster]:
    """A throwaway single-node Slurm cluster per test module (tests/support/slurm_cluster.py),
    the client tools pointed at it through SLURM_CONF; skipped with the reason where it cannot run."""
    started = SlurmCluster()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SLURM_CONF", str(started.conf))
        try:
            yield started
        finally:
            started.stop()
