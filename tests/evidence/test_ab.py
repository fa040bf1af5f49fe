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
from harness.evidence.runner import runner
from harness.evidence.runbook import PerformanceSuite
from harness.record.checks import CheckStatus
from harness.stats.performance import Metric, compare_paired_requests

needs_bench = pytest.mark.skipif(bool(missing_bench_packages()),
                                 reason=f"bench_serving not installed here: {missing_bench_packages()}")
TTFT = Metric(key="ttft_ms", label="TTFT", unit="ms", higher_is_better=False)


def test_paired_rule_on_known_samples():
    reference = [[100.0, 120.0, 90.0, 110.0], [101.0, 118.0, 92.0, 111.0], [99.0, 121.0, 91.0, 109.0]]
    same = compare_paired_requests(TTFT, [[v * 1.01 for v in rep] for rep in reference], reference, tolerance=0.05)
    assert same.outcome == "passed" and same.numbers["pairs"] == 12 and same.numbers["repetitions"] == 3
    slower = compare_paired_requests(TTFT, [[v * 1.3 for v in rep] for rep in reference], reference, tolerance=0.05)
    assert slower.outcome == "failed" and "same-run" not in slower.reason  # the step appends the rule's name
    # the machine slowed down for the candidate's second repetition only: the requests of one
    # repetition are not independent evidence, so the interval (over repetitions) is wide
    drifted = compare_paired_requests(TTFT, [reference[0], [v * 2.0 for v in reference[1]], reference[2]],
                                      reference, tolerance=0.05)
    assert drifted.outcome == "inconclusive" and "ratio per repetition 1.00, 2.00, 1.00" in drifted.reason
    # two repetitions leave one degree of freedom for the run-to-run noise: no decision, said plainly
    two = compare_paired_requests(TTFT, [[v * 1.3 for v in rep] for rep in reference[:2]], reference[:2],
                                  tolerance=0.05)
    assert two.outcome == "inconclusive" and "the design cannot decide" in two.reason and "repetitions to 3" in two.reason
    assert compare_paired_requests(TTFT, [[1.0]], [[1.0]], tolerance=0.05).outcome == "inconclusive"


def test_paired_rule_keeps_false_alarms_under_alpha_on_a_noisy_machine():
    """A vs A with large run-to-run noise (sd 0.25 on the log scale per run, as on 2 loaded CI
    cores) and 3 repetitions of 4 prompts: the rule fails the candidate in at most alpha of the
    runs (simulated, seeded; benchmarks/ab_rule.py prints the full figures)."""
    import random

    rng = random.Random(7)
    failed = 0
    for _ in range(400):
        prompts = [rng.lognormvariate(6, 0.3) for _ in range(4)]
        sides = [[[p * math.exp(run + rng.gauss(0, 0.1)) for p in prompts]
                  for run in (rng.gauss(0, 0.25) for _ in range(3))] for _side in range(2)]
        failed += compare_paired_requests(TTFT, sides[0], sides[1], tolerance=0.10).outcome == "failed"
    assert failed / 400 <= 0.05


@needs_bench
@pytest.mark.slow
def test_an_injected_slowdown_is_detected_and_a_vs_a_is_not(loopback_server, tokenizer_dir, tmp_path, monkeypatch):  # noqa: F811
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    tokenizer = tokenizer_dir
    suite = PerformanceSuite(name="ab", num_prompts=4, random_input_len=16, random_output_len=4, repetitions=3,
                             max_concurrency=1, tolerance=0.10, reference="ref")
    verdicts = {}
    with loopback_server("--latency-ms", "60", name="reference") as reference:
        for label, latency in (("a-vs-a", "60"), ("slower", "100")):
            with loopback_server("--latency-ms", latency, name=f"candidate-{label}") as candidate:
                out = tmp_path / label
                run = run_performance(suite, candidate.base_url, out, tokenizer=str(tokenizer),
                                      reference_url=reference.base_url, reference_model=reference.model)
            assert run.status == "measured", run.reason
            verdicts[label] = {c.name.removeprefix("performance.ab."): c for c in runner("performance").judge(out, suite)}

    # repetitions alternate, counterbalanced: candidate reference, reference candidate, ...
    commands = json.loads((tmp_path / "slower" / "command.json").read_text())["commands"]
    assert [c.split("--output-file ")[1].split()[0].rsplit("/", 1)[1] for c in commands] == [
        "rep-1.jsonl", "ref-rep-1.jsonl", "ref-rep-2.jsonl", "rep-2.jsonl", "rep-3.jsonl", "ref-rep-3.jsonl"]
    samples = request_samples(load_bench_results(tmp_path / "slower" / "results.jsonl")[0])
    assert len(samples["ttft_ms"]) == 4 and all(v >= 100 for v in samples["ttft_ms"])

    slower, same = verdicts["slower"], verdicts["a-vs-a"]
    assert slower["ttft_ms"].status is CheckStatus.failed, slower["ttft_ms"].reason
    assert slower["latency_ms"].status is CheckStatus.failed
    assert "same-run A/B, paired per request" in slower["ttft_ms"].reason
    assert slower["ttft_ms"].metrics["pairs"] == 12 and math.isclose(slower["ttft_ms"].metrics["ratio"], 1.6, rel_tol=0.25)
    assert same["ttft_ms"].status is not CheckStatus.failed, same["ttft_ms"].reason
    assert same["latency_ms"].status is not CheckStatus.failed, same["latency_ms"].reason
    assert (tmp_path / "slower" / "reference.jsonl").is_file()
