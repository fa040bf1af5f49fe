"""Shared test support (tests/support) is importable from every test folder, and its Slurm
cluster is one fixture for every folder. The suite calls the knowledge engine in-process, so it
collects garbage as `harness` itself does (cli.main)."""

import gc
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.cli import GC_THRESHOLDS

sys.path.insert(0, str(Path(__file__).parent / "support"))
gc.set_threshold(*GC_THRESHOLDS)

from slurm_cluster import SlurmCluster  # noqa: E402 — tests/support is on the path from here on


def pytest_configure(config: pytest.Config) -> None:
    """pytest-xdist's workers set COLUMNS and LINES to the controlling terminal's size; harness
    folds its tables at COLUMNS when it is set (harness/cli/console.py) and the tests read its
    output as a pipe without one gets it (200 wide), so the workers drop them."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        os.environ.pop("COLUMNS", None)
        os.environ.pop("LINES", None)
    _bytecode_for_subprocesses()


def _bytecode_for_subprocesses() -> None:
    """The suite starts `harness` (and its parallel workers) as subprocesses thousands of times.
    Where PYTHONDONTWRITEBYTECODE is set, each of them compiled every harness module from source
    (about 0.6 s a start on this machine's cores, half of a small `harness check`): its children
    write and read their bytecode under a PYTHONPYCACHEPREFIX in the temporary directory instead,
    so the source tree still gets no __pycache__ and a stale file is recompiled as Python always
    does (source mtime and size)."""
    if os.environ.get("PYTHONDONTWRITEBYTECODE") and not os.environ.get("PYTHONPYCACHEPREFIX"):
        del os.environ["PYTHONDONTWRITEBYTECODE"]
        os.environ["PYTHONPYCACHEPREFIX"] = str(Path(tempfile.gettempdir()) / f"harness-tests-pycache-{os.getuid()}")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Groups for pytest-xdist's `--dist loadgroup` (pyproject.toml): a file's tests go to one
    worker, so its module fixtures (a parsed release, a served model) are built once; every test
    on a Slurm cluster goes to one worker, so clusters start one after another, never two at once
    competing for the node's CPUs and GPUs."""
    for item in items:
        group = "slurm" if "cluster" in getattr(item, "fixturenames", ()) else item.nodeid.split("::")[0]
        item.add_marker(pytest.mark.xdist_group(group))


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
