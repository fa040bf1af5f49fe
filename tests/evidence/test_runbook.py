"""The Validation Runbook schema and its line-precise errors."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from harness.errors import HarnessError
from harness.evidence.runbook import load_runbook

REPO_ROOT = Path(__file__).resolve().parents[2]

VALID = textwrap.dedent("""\
    name: t
    environment:
      device: xdev
      engine_version: "0.5.23"
    server:
      command: python -m sglang.launch_server --model-path {model} --host {host} --port {port}
      model: m
    accuracy:
      - name: gsm8k-200
        task: gsm8k
        num_fewshot: 5
        limit: 200
        baseline:
          samples: baselines/samples.jsonl
    performance:
      - name: short
        num_prompts: 10
    profiling:
      workload: short
""")


def _load(tmp_path: Path, text: str):
    path = tmp_path / "rb.yaml"
    path.write_text(text)
    return load_runbook(path)


def _error(tmp_path: Path, text: str) -> str:
    with pytest.raises(HarnessError) as caught:
        _load(tmp_path, text)
    message = str(caught.value)
    assert "\n" not in message, "errors are one line"
    return message


@pytest.mark.parametrize("name", ["cuda-reference", "plugin-device"])
def test_shipped_runbooks_load(name):
    runbook = load_runbook(REPO_ROOT / "runbooks" / f"{name}.yaml")
    assert runbook.name == name
    assert "{port}" in runbook.server.command and "sglang.launch_server" in runbook.server.command
    tasks = [suite.task for suite in runbook.accuracy]
    assert "gsm8k" in tasks and any(t.startswith("longbench_") for t in tasks)
    gsm8k = next(s for s in runbook.accuracy if s.task == "gsm8k")
    assert (gsm8k.num_fewshot, gsm8k.limit) == (5, 200)
    assert all(s.dataset_name == "random-ids" for s in runbook.performance)
    assert runbook.profiling is not None
    for recipe in runbook.recipes:
        assert recipe.is_file(), recipe


def test_plugin_runbook_gates_against_the_reference():
    runbook = load_runbook(REPO_ROOT / "runbooks" / "plugin-device.yaml")
    assert runbook.environment.env["SGLANG_PLATFORM"] == "xdev"
    gates = {s.name: (s.gate, s.margin) for s in runbook.accuracy}
    assert gates == {"gsm8k-200": ("paired", 0.02), "longbench-hotpotqa": ("unpaired", 0.03)}
    assert {p.source for p in runbook.fallback_patterns} == {"log", "trace"}


def test_defaults_and_paths_relative_to_the_runbook(tmp_path):
    runbook = _load(tmp_path, VALID)
    suite = runbook.accuracy[0]
    assert suite.baseline.samples == tmp_path / "baselines" / "samples.jsonl"
    assert (suite.gate, suite.margin, suite.alpha) == ("auto", 0.02, 0.05)
    assert runbook.accuracy_api(suite) == "completions"
    assert runbook.server.health_endpoint == "/health" and runbook.server.port is None
    assert runbook.performance[0].repetitions == 3
    assert runbook.source == tmp_path / "rb.yaml"


def test_malformed_yaml_names_file_and_line(tmp_path):
    message = _error(tmp_path, VALID.replace("  model: m\n", "  model: [m\n"))
    assert message.startswith(f"{tmp_path / 'rb.yaml'}:")
    assert "invalid YAML" in message
    assert int(message.split(":")[1]) in (7, 8)


@pytest.mark.parametrize(("edit", "line", "expected"), [
    # wrong type: the offending value's line
    (("limit: 200", "limit: lots"), 12, "accuracy[0].limit: Input should be a valid integer"),
    # a typo'd key is an error at the key's line, not silently ignored
    (("num_fewshot: 5", "num_fewshots: 5"), 11, "accuracy[0].num_fewshots: Extra inputs are not permitted"),
    # a missing required field points at the mapping that lacks it
    (("  model: m\n", ""), 6, "server.model: Field required"),
    (("{port}", "{prot}"), 6, "server.command: unknown placeholder(s) ['prot']"),
    (("samples: baselines/samples.jsonl", "score: 0.7"), 14,
     "accuracy[0].baseline: `score` needs `n`, the number of questions it was measured on"),
    (("workload: short", "workload: long"), 19, "profiling: workload 'long' is not a performance suite"),
    (("limit: 200", "limit: 200\n    margin: 2"), 13, "accuracy[0].margin: Input should be less than 1"),
])
def test_schema_errors_name_line_and_field(tmp_path, edit, line, expected):
    message = _error(tmp_path, VALID.replace(*edit))
    assert message.startswith(f"{tmp_path / 'rb.yaml'}:{line}: {expected}")


def test_duplicate_keys_are_rejected(tmp_path):
    message = _error(tmp_path, VALID.replace("  model: m\n", "  model: m\n  model: n\n"))
    assert message == f"{tmp_path / 'rb.yaml'}:8: duplicate key 'model'"


def test_missing_file_and_non_mapping(tmp_path):
    with pytest.raises(HarnessError, match="cannot read runbook .*nope.yaml"):
        load_runbook(tmp_path / "nope.yaml")
    assert _error(tmp_path, "- a\n- b\n").endswith("rb.yaml:1: a runbook must be a mapping of sections "
                                                  "(environment, server, ...)")


def test_several_problems_are_counted(tmp_path):
    message = _error(tmp_path, VALID.replace("limit: 200", "limit: x\n    alpha: 7"))
    assert message.endswith("(and 1 more problem)")


def test_margin_zero_selects_the_exact_mcnemar_rule(tmp_path):
    from harness.evidence.accuracy import SampleRecord, decide_samples
    from harness.stats.proportions import RULE_EXACT_MCNEMAR

    suite = _load(tmp_path, VALID.replace("limit: 200", "limit: 200\n    margin: 0")).accuracy[0]
    assert suite.margin == 0

    def rows(correct: list[bool]) -> list[SampleRecord]:
        return [SampleRecord(doc_id=i, question_hash=str(i), target="", response=f"r{i}{c}", score=float(c),
                             correct=c) for i, c in enumerate(correct)]

    decision = decide_samples(rows([True] * 30 + [False] * 10), rows([True] * 29 + [False] * 11), suite)
    assert decision.rule == RULE_EXACT_MCNEMAR and decision.margin == 0
    assert _error(tmp_path, VALID.replace("limit: 200", "limit: 200\n    margin: -0.01")).endswith(
        "accuracy[0].margin: Input should be greater than or equal to 0")
