"""Fail fast: `harness run` checks the runbook, the files it names and the feature file before
step 1 — one line `file:line: field: message`, exit 2, and no run is created — and a step that did
not run because an input became unusable cannot be approved."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
import yaml
from workflow_support import EXAMPLE_DATA, loopback_runbook, one_line_error

needs_lm_eval = pytest.mark.skipif(importlib.util.find_spec("lm_eval") is None, reason="lm-eval not installed")


def nothing_created(project) -> None:
    assert not (project.workspace / ".harness/runs").exists() or not any((project.workspace / ".harness/runs").iterdir())
    assert not (project.workspace / "reports").exists() or not any((project.workspace / "reports").iterdir())


def accuracy_runbook(project, **suite_changes) -> Path:
    """The loopback runbook with a gsm8k suite on the example data, paired with `baseline`."""
    path = loopback_runbook(project.root / "acc.yaml", accuracy=True)
    data = yaml.safe_load(path.read_text())
    data["accuracy"][0].update({"metric": "exact_match,strict-match", "gate": "paired",
                                "baseline": {"samples": str(EXAMPLE_DATA / "gsm8k_mini_baseline.jsonl")}})
    data["accuracy"][0].update(suite_changes)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def line_of(path: Path, text: str) -> int:
    return next(n for n, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def test_a_malformed_runbook_stops_run_before_any_step(project):
    bad = project.root / "bad.yaml"
    data = yaml.safe_load(project.runbook.read_text())
    data["smoke"]["max_tokens"] = "plenty"
    bad.write_text(yaml.safe_dump(data, sort_keys=False))
    proc = project.cli(*project.run_args("--run-id", "x", runbook=bad), check=False, subprocess_=True)
    assert proc.returncode == 2
    one_line_error(proc, f"{bad}:{line_of(bad, 'max_tokens')}: smoke.max_tokens: Input should be a valid integer")
    nothing_created(project)


@needs_lm_eval
def test_a_truncated_baseline_is_found_before_step_1(project, tmp_path):
    rows = (EXAMPLE_DATA / "gsm8k_mini_baseline.jsonl").read_text().splitlines()
    truncated = tmp_path / "baseline.jsonl"
    truncated.write_text("\n".join(rows[:10]) + "\n" + rows[10][:40])  # torn mid-line
    runbook = accuracy_runbook(project, baseline={"samples": str(truncated)})
    proc = project.cli(*project.run_args("--run-id", "x", runbook=runbook), check=False)
    one_line_error(proc, f"{truncated}:11: not a JSON line")
    nothing_created(project)

    truncated.write_text("\n".join(rows[:10]) + "\n")  # cut at a line end: the pairing says it
    proc = project.cli(*project.run_args("--run-id", "x", runbook=runbook), check=False)
    one_line_error(proc, f"{runbook}:{line_of(runbook, 'samples:')}: accuracy[0].baseline.samples: ",
                   "has rows for 10 of the 20 questions the suite evaluates (first missing: doc_id 10)")
    nothing_created(project)


@needs_lm_eval
def test_metric_task_and_pairing_are_checked(project, tmp_path):
    runbook = accuracy_runbook(project, metric="exact_match,strict_match")
    one_line_error(project.cli(*project.run_args(runbook=runbook), check=False),
                   f"{runbook}:{line_of(runbook, 'metric:')}: accuracy[0].metric: task gsm8k has the filters "
                   "strict-match, flexible-extract, not 'strict_match'")
    runbook = accuracy_runbook(project, task="gsm8k_nonexistent")
    one_line_error(project.cli(*project.run_args(runbook=runbook), check=False),
                   "accuracy[0].task: lm-eval", "has no built-in task named 'gsm8k_nonexistent'")

    # lm-eval's own samples format: the suite's metric must be in every row
    rows = [json.loads(line) for line in (EXAMPLE_DATA / "gsm8k_mini_test.jsonl").read_text().splitlines()]
    lm_eval_rows = tmp_path / "lm_eval_samples.jsonl"
    lm_eval_rows.write_text("".join(
        json.dumps({"doc_id": i, "doc": row, "filter": "strict-match",
                    **({} if i == 2 else {"exact_match": 1.0})}) + "\n" for i, row in enumerate(rows)))
    runbook = accuracy_runbook(project, baseline={"samples": str(lm_eval_rows)})
    one_line_error(project.cli(*project.run_args(runbook=runbook), check=False),
                   f"{lm_eval_rows}:3: exact_match: missing or not a number (the suite's metric)")

    # a baseline of other questions cannot be paired
    other = tmp_path / "other.jsonl"
    other.write_text("".join(json.dumps({"doc_id": i, "doc": {**row, "question": row["question"] + "?"},
                                         "filter": "strict-match", "exact_match": 1.0}) + "\n"
                             for i, row in enumerate(rows)))
    runbook = accuracy_runbook(project, baseline={"samples": str(other)})
    one_line_error(project.cli(*project.run_args(runbook=runbook), check=False),
                   f"{other}:1: doc.question: is not question 0 of the test data: not the same data set")
    nothing_created(project)


def test_missing_files_the_runbook_names_point_at_its_line(project):
    runbook = loopback_runbook(project.root / "perf.yaml")
    data = yaml.safe_load(runbook.read_text())
    data["performance"] = [{"name": "p", "baseline": "no/such/results.jsonl"}]
    runbook.write_text(yaml.safe_dump(data, sort_keys=False))
    one_line_error(project.cli(*project.run_args(runbook=runbook), check=False),
                   f"{runbook}:{line_of(runbook, 'baseline:')}: performance[0].baseline: no such file: "
                   f"{project.root / 'no/such/results.jsonl'}")
    nothing_created(project)


def test_a_bad_feature_file_names_file_line_and_field(project):
    feature = project.workspace / "features" / "kv-pool.yaml"
    feature.write_text("name: KV pool\nupstream:\n  symbols: [a.b]\n  modules: [x]\n")
    proc = project.cli(*project.run_args("--run-id", "x"), check=False, subprocess_=True)
    one_line_error(proc, f"{feature}:4: upstream.modules: Extra inputs are not permitted")
    feature.write_text("name: KV pool\nupstream: [\n")
    one_line_error(project.cli(*project.run_args("--run-id", "x"), check=False), f"{feature}:3: invalid YAML")
    nothing_created(project)


def test_a_runbook_edited_under_the_run_is_refused_until_restored(project):
    # The runbook decides what the next steps run: it is pinned at `run` (test_record_security).
    runbook = loopback_runbook(project.root / "edited.yaml")
    project.cli(*project.run_args("--run-id", "u", runbook=runbook))
    original = runbook.read_text()
    runbook.write_text(original.replace("command:", "comand:"))  # edited under the run
    refused = project.cli("approve", "u", "--by", "alice", check=False)
    one_line_error(refused, f"{runbook} changed under this run", "restore it, or start a new run")
    status = project.cli("status", "u", "--json", check=False)
    assert status.returncode == 1 and json.loads(status.stdout)["waiting_at"] == "01-alignment", "nothing was decided"
    runbook.write_text(original)
    assert project.cli("approve", "u", "--by", "alice").returncode == 0
    assert project.status("u")["waiting_at"] == "02-interface"

@needs_lm_eval
def test_a_step_not_run_for_an_unusable_input_cannot_be_approved(project, tmp_path):
    # The baseline samples are data the runbook names, not the runbook: deleted under the run, the
    # accuracy step cannot judge, and its gate refuses an approval of that.
    baseline = tmp_path / "baseline.jsonl"
    baseline.write_text((EXAMPLE_DATA / "gsm8k_mini_baseline.jsonl").read_text())
    runbook = accuracy_runbook(project, baseline={"samples": str(baseline)})
    project.cli(*project.run_args("--run-id", "u", runbook=runbook))
    project.cli("approve", "u", "--by", "alice", "--note", "alignment read")
    project.cli("approve", "u", "--by", "alice", "--override", "--note", "interface read")
    baseline.unlink()
    project.cli("approve", "u", "--by", "alice", "--override", "--note", "operators read", check=False)
    status = project.status("u")
    assert status["waiting_at"] == "04-accuracy"
    unusable = [c for c in status["steps"][3]["checks"] if c["unusable_input"]]
    assert unusable and unusable[0]["status"] == "not_run", status["steps"][3]["checks"]
    refused = project.cli("approve", "u", "--by", "alice", "--note", "ok", check=False)
    one_line_error(refused, "04-accuracy cannot be approved: ", "did not run because an input is unusable",
                   "fix the input, then reject the step to rerun it")
    assert project.status("u")["waiting_at"] == "04-accuracy"

    baseline.write_text((EXAMPLE_DATA / "gsm8k_mini_baseline.jsonl").read_text())
    project.cli("reject", "u", "--by", "alice", "--reason", "baseline restored")
    assert not [c for c in project.status("u")["steps"][3]["checks"] if c["unusable_input"]]
