"""`harness status` where a new user first looks: an unknown run id lists the known ones without
hiding any, a run id given outside the workspace says where runs live, and the runs table wraps
a long feature id at the terminal's width instead of cutting it."""

from __future__ import annotations

import subprocess
import sys

import yaml
from workflow_support import FEATURE_FILE, REPO_ROOT, one_line_error

from harness.record.layout import Workspace


def _status(cwd, *args: str, columns: int = 200) -> subprocess.CompletedProcess:
    """The real `python -m harness status ARGS` run in `cwd`: main() turns a refusal into one line."""
    return subprocess.run([sys.executable, "-m", "harness", "status", *args], capture_output=True, text=True, cwd=cwd, timeout=120,
                          check=False, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO_ROOT), "COLUMNS": str(columns)})


def _runs(root, *run_ids: str) -> None:
    for run_id in run_ids:
        (Workspace(root).runs_dir / run_id).mkdir(parents=True)
        (Workspace(root).runs_dir / run_id / "run.json").write_text("{}")


def test_an_unknown_run_id_counts_the_known_ids_it_leaves_out(tmp_path):
    _runs(tmp_path, "r1", "r2", "r3", "r4", "r5", "r6")
    one_line_error(_status(tmp_path, "nosuch"), f"unknown run id 'nosuch' in {tmp_path} "
                   "(known: r2, r3, r4, r5, r6 and 1 more; `harness status` lists them)")
    _runs(tmp_path, "r7")
    one_line_error(_status(tmp_path, "nosuch"), "(known: r3, r4, r5, r6, r7 and 2 more;")
    _runs(tmp_path / "few", "a", "b")
    proc = _status(tmp_path / "few", "nosuch")
    one_line_error(proc, "(known: a, b)")
    assert "more" not in proc.stderr


def test_a_run_id_outside_the_workspace_says_where_runs_live(tmp_path):
    hint = "runs live where `harness run` or `upgrade` was started: cd there, or pass --workspace DIR"
    assert hint in _status(tmp_path).stdout  # the bare listing says it
    one_line_error(_status(tmp_path, "r1"), f"unknown run id 'r1' in {tmp_path} (this workspace has no runs; {hint})")


def test_the_runs_table_wraps_a_long_feature_id_at_the_width_given(project):
    feature = "parallel-state-ensure-model-parallel-initialized-once"
    (project.workspace / "features" / f"{feature}.yaml").write_text(yaml.safe_dump(FEATURE_FILE, sort_keys=False))
    args = project.run_args("--run-id", "wrap")
    args[args.index("kv-pool")] = feature
    project.cli(*args)
    proc = _status(project.root, "--workspace", str(project.workspace), columns=60)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("│")]
    assert lines and max(map(len, lines)) <= 60, proc.stdout  # COLUMNS is the table's width
    assert "…" not in proc.stdout
    cells = [line.split("│")[1:3] for line in lines]  # the body's rows (the header's rule is ┃): run, feature
    assert [run.strip() for run, _ in cells if run.strip()] == ["wrap"]  # the run id whole, on one line
    assert "".join(cell.strip() for _, cell in cells) == feature, proc.stdout


def test_a_long_run_id_in_a_narrow_terminal_leaves_every_column_readable(project):
    """An upgrade's run ids are long (feature and time); at 60 columns the other columns still
    show their text (folded, the table wider than the terminal), never a column of nothing."""
    run_id = "parallel-state-ensure-model-20261204-112001"
    project.cli(*project.run_args("--run-id", run_id))
    proc = _status(project.root, "--workspace", str(project.workspace), columns=60)
    header = next(line for line in proc.stdout.splitlines() if line.startswith("┃"))
    assert [cell.strip() for cell in header.split("┃")[1:5]] == ["run", "feature", "state", "steps"], proc.stdout
    rows = [line.split("│")[1:5] for line in proc.stdout.splitlines() if line.startswith("│")]
    assert [run.strip() for run, *_ in rows if run.strip()] == [run_id]
    assert "".join(feature.strip() for _, feature, *_ in rows) == "kv-pool", proc.stdout
    assert all("".join(column[i].strip() for column in rows) for i in (2, 3)), proc.stdout
