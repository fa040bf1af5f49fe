"""Same-run A/B: bench_serving against a candidate and a reference loopback engine, repetitions
interleaved, every request paired with the same request on the reference."""

from __future__ import annotations

import json
import math

import pytest
from test_perf import tokenizer_dir  # noqa: F401 - the fixture: a local tokenizer for random-ids

from harness.evidence.perf import (
    load_bench_results,
    missing_bench_packages,
    request_samples,
    run_performance,
)
from harness.evidence.runbook import PerformanceSuite
from harness.record.checks import CheckStatus
from harness.stats.performance import Metric, compare_paired_requests
from harness.steps.performance import suite_checks

needs_bench = pytest.mark.skipif(bool(missing_bench_packages()),
                                 reason=f"bench_serving not installed here: {missing_bench_packages()}")
TTFT = Metric(key="ttft_ms", label="TTFT", unit="ms", higher_is_better=False)


def test_paired_rule_on_known_samples():
    reference = [[100.0, 120.0, 90.0, 110.0], [101.0, 118.0, 92.0, 111.0]]
    same = compare_paired_requests(TTFT, [[v * 1.01 for v in rep] for rep in reference], reference, tolerance=0.05)
    assert same.outcome == "passed" and same.numbers["pairs"] == 8
    slower = compare_paired_requests(TTFT, [[v * 1.3 for v in rep] for rep in reference], reference, tolerance=0.05)
    assert slower.outcome == "failed" and "same-run" not in slower.reason  # the step appends the rule's name
    # the machine slowed down for the candidate's second repetition only: the requests of one
    # repetition are not independent evidence, the interval is taken over repetitions
    drifted = compare_paired_requests(TTFT, [[v * 1.0 for v in reference[0]], [v * 2.0 for v in reference[1]]],
                                      reference, tolerance=0.05)
    assert drifted.outcome == "inconclusive" and "moved between repetitions (1.00, 2.00" in drifted.reason
    assert compare_paired_requests(TTFT, [[1.0]], [[1.0]], tolerance=0.05).outcome == "inconclusive"


@needs_bench
@pytest.mark.slow
def test_an_injected_slowdown_is_detected_and_a_vs_a_is_not(loopback_server, tokenizer_dir, tmp_path, monkeypatch):  # noqa: F811
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    tokenizer = tokenizer_dir
    suite = PerformanceSuite(name="ab", num_prompts=8, random_input_len=16, random_output_len=4, repetitions=2,
                             max_concurrency=1, tolerance=0.10, reference="ref")
    verdicts = {}
    with loopback_server("--latency-ms", "60", name="reference") as reference:
        for label, latency in (("a-vs-a", "60"), ("slower", "100")):
            with loopback_server("--latency-ms", latency, name=f"candidate-{label}") as candidate:
                out = tmp_path / label
                run = run_performance(suite, candidate.base_url, out, tokenizer=str(tokenizer),
                                      reference_url=reference.base_url, reference_model=reference.model)
            assert run.status == "measured", run.reason
            verdicts[label] = {c.name.removeprefix("performance.ab."): c for c in suite_checks(out)}

    # repetitions alternate candidate, reference, candidate, reference
    commands = json.loads((tmp_path / "slower" / "command.json").read_text())["commands"]
    assert [("ref-rep" in c, c.split("--output-file ")[1].split()[0].rsplit("/", 1)[1]) for c in commands] == [
        (False, "rep-1.jsonl"), (True, "ref-rep-1.jsonl"), (False, "rep-2.jsonl"), (True, "ref-rep-2.jsonl")]
    samples = request_samples(load_bench_results(tmp_path / "slower" / "results.jsonl")[0])
    assert len(samples["ttft_ms"]) == 8 and all(v >= 100 for v in samples["ttft_ms"])

    slower, same = verdicts["slower"], verdicts["a-vs-a"]
    assert slower["ttft_ms"].status is CheckStatus.failed, slower["ttft_ms"].reason
    assert slower["latency_ms"].status is CheckStatus.failed
    assert "same-run A/B, paired per request" in slower["ttft_ms"].reason
    assert slower["ttft_ms"].metrics["pairs"] == 16 and math.isclose(slower["ttft_ms"].metrics["ratio"], 1.6, rel_tol=0.25)
    assert same["ttft_ms"].status is not CheckStatus.failed, same["ttft_ms"].reason
    assert same["latency_ms"].status is not CheckStatus.failed, same["latency_ms"].reason
    assert (tmp_path / "slower" / "reference.jsonl").is_file()
