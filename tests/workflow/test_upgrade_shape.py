"""Issue 19's acceptance on a generated plugin shaped like the 107-module one (a kernel family
moved between modules, a process-group constructor call with a removed keyword, a factory whose
callers gained an argument, a CPU-affinity hook whose signature shrank, many unaffected
dependencies): `harness upgrade` lists one feature per upstream change, the startup blockers
first, starts at most --runs review runs, lists the others with the command that starts each
(which starts exactly that run), and writes well under 5 MB."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

from triage_plugin import write_case
from workflow_support import REPO_ROOT


def _harness(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "COLUMNS": "200"}
    env.pop("HARNESS_STATE_URL", None)
    return subprocess.run([sys.executable, "-m", "harness", *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=900)


def test_upgrade_of_a_generated_100_module_plugin(tmp_path):
    old, new, plugin = write_case(tmp_path / "case")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    args = ["upgrade", "--plugin", str(plugin), "--from", str(old), "--to", str(new), "--workspace", str(workspace), "--runs", "3"]
    proc = _harness(*args, "--json", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr[-2000:]  # features wait for review
    doc = json.loads(proc.stdout)

    features = doc["features"]
    ids = [f["id"] for f in features]
    assert len(ids) == len(set(ids)) and len({f["title"] for f in features}) == len(features)
    assert not any("replaces" in f["title"] for f in features)
    # the three startup blockers first, each with the upstream call site that proves it
    assert [f["severity"] for f in features[:3]] == ["blocker"] * 3 and all(f["fails_at"] == "startup" and f["proof"] for f in features[:3])
    assert "layer-create-moe-dispatcher" in ids[:3] and "parallel-state-groupcoordinator" in ids[:3]
    assert all(f["severity"] != "blocker" for f in features[3:])
    # at most --runs runs, for the first three; the rest wait with the command that starts each
    started = [f for f in features if f["run_id"] is not None]
    assert [f["id"] for f in started] == ids[:3] and all(f["state"] == "waiting" for f in started)
    waiting = [f for f in features if f["state"] == "not_started"]
    assert waiting and all(f["start"] for f in waiting) and len(started) + len(waiting) == len(features)
    runs_dir = workspace / "reports"
    assert {p.name for p in runs_dir.iterdir() if p.is_dir()} - {f["run_id"] for f in started} == {Path(doc["summary"]).parent.name}

    # the listed command starts that feature's run, and only it
    command = shlex.split(waiting[0]["start"])
    assert command[:2] == ["harness", "upgrade"], waiting[0]["start"]
    again = _harness(*command[1:], "--json", cwd=tmp_path)
    assert again.returncode == 1, again.stderr[-2000:]
    now = {f["id"]: f for f in json.loads(again.stdout)["features"]}
    assert now[waiting[0]["id"]]["state"] == "waiting" and now[waiting[0]["id"]]["run_id"]
    assert sum(1 for f in now.values() if f["run_id"] is not None) == 4

    size = sum(p.stat().st_size for p in workspace.rglob("*") if p.is_file())
    assert size < 5 * 1024 * 1024, size
    summary = Path(doc["summary"]).read_text()
    assert len(summary.splitlines()) <= 80  # one screen: counts and blockers first, long tables linked
