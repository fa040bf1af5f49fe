"""Shared test support (tests/support) is importable from every test folder. The suite calls
the knowledge engine in-process, so it collects garbage as `harness` itself does (cli.main)."""

import gc
import sys
from pathlib import Path

from harness.cli import GC_THRESHOLDS

sys.path.insert(0, str(Path(__file__).parent / "support"))
gc.set_threshold(*GC_THRESHOLDS)
