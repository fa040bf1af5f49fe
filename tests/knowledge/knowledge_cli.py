"""Run the real `harness` CLI in a subprocess, as a user (or CI) would."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


def harness(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """Run the real CLI as a user would."""
    return subprocess.run([sys.executable, "-m", "harness", *args], capture_output=True, text=True, cwd=cwd, env=os.environ.copy())


def harness_json(*args: str, cwd: Path | None = None) -> tuple[int, dict]:
    proc = harness(*args, "--json", cwd=cwd)
    assert proc.stdout.strip(), proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def by_target(findings: list[dict]) -> dict[str, dict]:
    return {f["target"]: f for f in findings}
