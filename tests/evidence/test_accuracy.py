"""Accuracy runner end to end: lm-eval's built-in gsm8k task (offline, on generated data) against
the loopback engine over HTTP, gated against a baseline run of the same engine."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
import yaml

from harness.evidence.accuracy import (
    Endpoint,
    load_baseline_samples,
    run_accuracy_suite,
    suite_check,
)
from harness.evidence.runbook import AccuracySuite, Baseline, load_runbook
from harness.evidence.runner import runner
from harness.evidence.server import ServedModel
from harness.record.checks import CheckStatus
from harness.steps.accuracy import AccuracyStep

pytest.importorskip("lm_eval")

QUESTIONS = 150
REPO_ROOT = Path(__file__).resolve().parents[2]


def gsm8k_rows(n: int, seed: int) -> list[dict[str, str]]:
    """Distinct two-step word problems in gsm8k's row format (worked answer, `#### N`)."""
    rng = random.Random(seed)
    rows, seen = [], set()
    while len(rows) < n:
        price, count, paid = rng.randint(2, 20), rng.randint(2, 9), rng.randint(1, 5)
        question = (
            f"A notebook costs {price} dollars. Mia buys {count} notebooks and pays with "
            f"{price * count + paid} dollars. How much change does she get?"
        )
        if question in seen:
            continue
        seen.add(question)
        total = price * count
        answer = (
            f"The notebooks cost {price} * {count} = <<{price}*{count}={total}>>{total} dollars.\n"
            f"Her change is {total + paid} - {total} = <<{total + paid}-{total}={paid}>>{paid} dollars.\n#### {paid}"
        )
        rows.append({"question": question, "answer": answer})
    return rows


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("gsm8k")
    test, train = root / "test.jsonl", root / "train.jsonl"
    rows = gsm8k_rows(QUESTIONS + 8, seed=3)
    test.write_text("".join(json.dumps(r) + "\n" for r in rows[:QUESTIONS]))
    train.write_text("".join(json.dumps(r) + "\n" for r in rows[QUESTIONS:]))
    return {"test": test, "train": train, "root": root}


def serve(root: Path, name: str, answers: Path, *flags: str) -> ServedModel:
    """The loopback engine, launched through the server lifecycle from a runbook file."""
    command = (
        f"python -m harness.testing.loopback --host {{host}} --port {{port}} --model {{model}} --answers {answers}"
    )
    runbook = {
        "name": name,
        "environment": {"device": "loopback", "engine_version": "loopback"},
        "server": {
            "command": " ".join([command, *flags]),
            "model": "loopback-model",
            "startup_timeout_s": 20,
            "shutdown_grace_s": 2,
            "env": {"PYTHONPATH": str(REPO_ROOT)},
        },
    }
    path = root / f"{name}.yaml"
    path.write_text(yaml.safe_dump(runbook, sort_keys=False))
    return ServedModel.from_runbook(load_runbook(path), root / name, name=name)


def suite(data: dict[str, Path], name: str, **fields) -> AccuracySuite:
    return AccuracySuite(
        name=name,
        task="gsm8k",
        num_fewshot=2,  # few-shot examples come from the train split, as in the real task
        data_files={"test": data["test"], "train": data["train"]},
        metric="exact_match,strict-match",
        num_concurrent=4,
        **fields,
    )


def evaluate(data, name: str, flags: tuple[str, ...], accuracy_suite: AccuracySuite, **kwargs):
    with serve(data["root"], name, data["test"], *flags) as server:
        endpoint = Endpoint(base_url=server.base_url, model=server.model, max_retries=2, request_timeout_s=30)
        return suite_check(run_accuracy_suite(accuracy_suite, endpoint, data["root"] / "evidence", **kwargs))


@pytest.fixture(scope="module")
def baseline_samples(data) -> Path:
    """The reference: the same engine with no wrong answers, its per-sample log kept."""
    check = evaluate(data, "baseline", ("--wrong-rate", "0"), suite(data, "baseline"))
    assert check.status is CheckStatus.not_run and "no baseline" in check.reason  # nothing to gate yet
    assert check.metrics["score"] == 1.0 and check.metrics["n"] == QUESTIONS
    return data["root"] / "evidence" / "baseline" / "samples.jsonl"


def test_baseline_evidence_is_reproducible_from_files(data, baseline_samples):
    out = baseline_samples.parent
    rows = [json.loads(line) for line in baseline_samples.read_text().splitlines()]
    assert len(rows) == QUESTIONS and len({r["doc_id"] for r in rows}) == QUESTIONS
    first = rows[0]
    assert {"doc_id", "question_hash", "target", "response", "correct"} <= first.keys()
    assert first["target"].split("#### ")[-1] in first["response"]
    run = json.loads((out / "run.json").read_text())
    assert run["versions"]["lm_eval"] == "0.4.13" and run["versions"]["harness"]
    task = yaml.safe_load((out / "task" / "harness_baseline.yaml").read_text())
    assert task["include"].endswith("gsm8k/gsm8k.yaml") and task["dataset_path"] == "json"
    script = (out / "reproduce.py").read_text()
    assert "simple_evaluate(" in script and "'tokenizer_backend': None" in script
    compile(script, "reproduce.py", "exec")
    results = json.loads((out / "results.json").read_text())
    assert results["results"]["harness_baseline"]["exact_match,strict-match"] == 1.0


def test_same_model_is_not_failed(data, baseline_samples):
    check = evaluate(
        data, "same", ("--wrong-rate", "0"), suite(data, "same", baseline=Baseline(samples=baseline_samples))
    )
    assert check.status is not CheckStatus.failed
    assert check.metrics["losses"] == 0 and check.metrics["wins"] == 0
    assert "Tango" in check.metrics["rule"]
    # 150 identical answers are enough to show non-inferiority within 2 points at alpha 0.05.
    assert check.status is CheckStatus.passed


def test_ten_point_drop_fails(data, baseline_samples):
    check = evaluate(
        data, "drop10", ("--wrong-rate", "0.1"), suite(data, "drop10", baseline=Baseline(samples=baseline_samples))
    )
    assert check.status is CheckStatus.failed, check.reason
    assert check.metrics["losses"] >= 8 and check.metrics["ci_high"] < -0.02
    gate = json.loads((baseline_samples.parent.parent / "drop10" / "gate.json").read_text())
    assert gate["outcome"] == "failed" and gate["p_drop"] < 0.05


def test_one_point_drop_on_few_questions_is_inconclusive(data, baseline_samples):
    few = suite(data, "drop1", limit=60, baseline=Baseline(samples=baseline_samples))
    check = evaluate(data, "drop1", ("--wrong-rate", "0.01"), few)
    assert check.status is CheckStatus.inconclusive, check.reason
    assert check.metrics["n"] == 60
    assert check.metrics["more_questions"] > 0
    assert f"About {check.metrics['more_questions']} more questions" in check.reason


def test_sequential_gate_stops_early_on_a_large_drop(data, baseline_samples):
    sequential = suite(data, "sequential", sequential=True, baseline=Baseline(samples=baseline_samples))
    check = evaluate(data, "sequential", ("--wrong-rate", "0.5"), sequential, looks=[50, 100, 150])
    assert check.status is CheckStatus.failed, check.reason
    run = json.loads((baseline_samples.parent.parent / "sequential" / "run.json").read_text())
    assert len(run["chunks"]) < 3  # stopped before evaluating every question
    assert check.metrics["sequential"]["look"] == len(run["chunks"])
    assert "group-sequential" in check.metrics["rule"]


def test_aggregate_baseline_uses_the_unpaired_rule(data):
    aggregate = suite(data, "aggregate", baseline=Baseline(score=0.9, n=QUESTIONS))
    check = evaluate(data, "aggregate", ("--wrong-rate", "0"), aggregate)
    assert check.metrics["paired"] is False and "Newcombe" in check.metrics["rule"]
    assert check.status is CheckStatus.passed  # 100 % measured vs 90 % recorded


def test_erroring_endpoint_is_a_failed_check_with_the_log(data, baseline_samples):
    few = suite(data, "errors", limit=3, baseline=Baseline(samples=baseline_samples))
    check = evaluate(data, "errors", ("--error-rate", "1.0"), few)
    assert check.status is CheckStatus.failed
    assert check.reason.startswith("lm-eval failed:") and "500" in check.reason
    assert any(path.endswith("lm_eval.log") for path in check.evidence)
    assert "500" in check.detail  # the captured log tail travels with the check


def test_missing_data_file_is_not_run(data, tmp_path):
    broken = suite(data, "missing", baseline=Baseline(score=0.5, n=10))
    broken.data_files["test"] = tmp_path / "nope.jsonl"
    check = suite_check(run_accuracy_suite(broken, Endpoint(base_url="http://127.0.0.1:9", model="m"), tmp_path / "evidence"))
    assert check.status is CheckStatus.not_run and "nope.jsonl" in check.reason


def test_chat_api_goes_through_local_chat_completions(data, baseline_samples):
    chat = suite(data, "chat", limit=20, baseline=Baseline(samples=baseline_samples))
    with serve(data["root"], "chat", data["test"], "--wrong-rate", "0") as server:
        endpoint = Endpoint(base_url=server.base_url, model=server.model, api="chat", request_timeout_s=30)
        check = suite_check(run_accuracy_suite(chat, endpoint, data["root"] / "evidence"))
    assert check.status is not CheckStatus.failed, check.reason
    assert check.metrics["n"] == 20 and check.metrics["losses"] == 0
    script = (data["root"] / "evidence" / "chat" / "reproduce.py").read_text()
    assert "local-chat-completions" in script and "/v1/chat/completions" in script


def test_a_failed_suite_carries_the_server_log_tail(loopback_runbook, loopback_server, gsm8k_file, tmp_path):
    """The accuracy step judges its suites with the served model's log tail after a failed one's
    own detail (the loopback server's logs land in tmp_path/server/, where the step keeps them)."""
    key = gsm8k_file(10)
    suites = [
        AccuracySuite(
            name="gsm8k",
            task="gsm8k",
            num_fewshot=0,
            limit=2,
            data_files={"test": key},
            baseline=Baseline(score=0.5, n=100),
        )
    ]
    runbook = loopback_runbook("--error-rate", "1.0", answers=key).model_copy(update={"accuracy": suites})
    with loopback_server("--error-rate", "1.0", answers=key) as server:
        endpoint = Endpoint(base_url=server.base_url, model=server.model, api=runbook.accuracy_api(suites[0]))
        runner("accuracy").run(suites[0], tmp_path / "accuracy" / "gsm8k", endpoint=endpoint)
    (check,) = AccuracyStep().judge_served(tmp_path, runbook)
    assert check.status is CheckStatus.failed and check.name == "accuracy.gsm8k"
    assert "--- server log tail ---" in check.detail


def test_reference_server_in_the_same_run_is_the_paired_baseline(data):
    """No recorded baseline: the suite's reference server answers the same questions in the same
    run and the paired rule compares question by question (a candidate that drops 30 % fails; the
    same engine passes); a reference that did not start leaves the suite not run, saying why."""
    verdicts = {}
    with serve(data["root"], "ref-engine", data["test"], "--wrong-rate", "0") as reference:
        ref = Endpoint(base_url=reference.base_url, model=reference.model, max_retries=2, request_timeout_s=30)
        for name, wrong in (("ref-same", "0"), ("ref-drop", "0.3")):
            with serve(data["root"], name, data["test"], "--wrong-rate", wrong) as server:
                endpoint = Endpoint(base_url=server.base_url, model=server.model, max_retries=2, request_timeout_s=30)
                out = run_accuracy_suite(suite(data, name, reference="previous"), endpoint,
                                         data["root"] / "evidence", reference=ref)
            verdicts[name] = suite_check(out)
    same, drop = verdicts["ref-same"], verdicts["ref-drop"]
    assert same.status is CheckStatus.passed, same.reason
    assert same.metrics["losses"] == 0 and same.metrics["n"] == QUESTIONS and same.metrics["reference"] == "previous"
    assert "reference server previous (loopback-model), evaluated on the same questions in this run" in same.reason
    assert drop.status is CheckStatus.failed, drop.reason
    assert drop.metrics["losses"] >= 10 and drop.metrics["paired"] is True
    evidence = data["root"] / "evidence" / "ref-drop" / "reference"
    assert len((evidence / "samples.jsonl").read_text().splitlines()) == QUESTIONS
    assert "simple_evaluate(" in (evidence / "reproduce.py").read_text()
    run = json.loads((data["root"] / "evidence" / "ref-drop" / "run.json").read_text())
    assert run["reference"]["name"] == "previous" and run["reference"]["score"] == 1.0
    plot = data["root"] / "evidence" / "ref-drop" / "accuracy.png"  # the difference, its interval, the margin
    assert plot.read_bytes().startswith(b"\x89PNG") and str(plot) in drop.evidence

    missing = run_accuracy_suite(suite(data, "ref-missing", reference="previous"),
                                 Endpoint(base_url="http://127.0.0.1:9", model="m"), data["root"] / "evidence",
                                 reference="reference server previous did not start: exited with code 1")
    check = suite_check(missing)
    assert check.status is CheckStatus.not_run and "previous did not start" in check.reason


def test_baseline_in_lm_eval_samples_format(tmp_path):
    """A baseline logged by lm-eval itself (--log_samples): one row per question and filter."""
    rows = []
    for doc_id, correct in enumerate([1.0, 0.0, 1.0]):
        doc = {"question": f"What is {doc_id} + 1?", "answer": f"#### {doc_id + 1}"}
        for filter_name in ("strict-match", "flexible-extract"):
            rows.append(
                {
                    "doc_id": doc_id,
                    "doc": doc,
                    "target": doc["answer"],
                    "resps": [[f"#### {doc_id + 1}"]],
                    "filtered_resps": [str(doc_id + 1)],
                    "filter": filter_name,
                    "exact_match": correct if filter_name == "strict-match" else 1.0,
                }
            )
    path = tmp_path / "samples_gsm8k.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    baseline = load_baseline_samples(path, "exact_match,strict-match")
    assert [baseline[i].correct for i in range(3)] == [True, False, True]
    assert all(record.filtered == str(i + 1) for i, record in baseline.items())
    assert load_baseline_samples(path, "exact_match,flexible-extract")[1].correct is True


def test_longbench_task_runs_offline_on_local_files(data, tmp_path):
    """A built-in longbench_* task (F1 metric, a `!function` in its YAML) on generated rows."""
    for module in ("jieba", "fuzzywuzzy", "rouge"):  # lm_eval[longbench]'s extra dependencies
        pytest.importorskip(module)
    rows = [
        {
            "input": f"Which town hosts landmark {i}?",
            "context": f"Passage 1: Landmark {i} stands in Town{i}. Passage 2: nothing else.",
            "question": f"Which town hosts landmark {i}?",
            "answers": [f"Town{i}"],
            "length": 12,
            "dataset": "hotpotqa",
            "language": "en",
            "all_classes": None,
            "_id": str(i),
        }
        for i in range(6)
    ]
    path = tmp_path / "hotpotqa.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    longbench = AccuracySuite(
        name="hotpotqa", task="longbench_hotpotqa", data_files={"test": path}, baseline=Baseline(score=0.5, n=200)
    )
    check = evaluate(data, "hotpotqa", (), longbench)
    assert check.status is not CheckStatus.not_run, check.reason
    assert check.metrics["metric"] == "score,none" and check.metrics["n"] == 6
    samples = [json.loads(line) for line in (data["root"] / "evidence" / "hotpotqa" / "samples.jsonl").open()]
    assert samples[0]["target"] == "['Town0']" and samples[0]["response"]


def test_baseline_and_data_files_are_part_of_the_evidence(data, baseline_samples):
    """The verdict can be reproduced from the evidence alone, and editing what it was gated on
    changes the evidence hash an approval is bound to."""
    import hashlib

    from harness.record.hashing import evidence_hash

    pinned = suite(data, "pinned", limit=20, baseline=Baseline(samples=baseline_samples))
    check = evaluate(data, "pinned", ("--wrong-rate", "0"), pinned)
    assert check.status is not CheckStatus.not_run, check.reason
    out = data["root"] / "evidence" / "pinned"
    copy = out / "baseline_samples.jsonl"
    assert copy.read_bytes() == baseline_samples.read_bytes()
    inputs = json.loads((out / "inputs.json").read_text())
    for split in ("test", "train"):
        assert inputs["data_files"][split]["sha256"] == hashlib.sha256(data[split].read_bytes()).hexdigest()
    assert inputs["baseline_samples"]["sha256"] == hashlib.sha256(baseline_samples.read_bytes()).hexdigest()
    assert inputs["baseline_samples"]["path"] == str(baseline_samples.resolve())
    assert {str(copy), str(out / "inputs.json")} <= set(check.evidence)

    before = evidence_hash(out)
    copy.write_text(copy.read_text().replace("true", "false", 1))  # an edited baseline
    assert evidence_hash(out) != before
