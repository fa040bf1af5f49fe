"""bench_serving through the performance runner against the loopback engine, the noise-aware
baseline comparison, and `not run` where sglang is not installed."""

from __future__ import annotations

import json
import re
import venv
from pathlib import Path

import pytest
from runner_support import performance as run_performance
from tokenizers import Tokenizer, decoders, models, pre_tokenizers

from harness.errors import HarnessError
from harness.evidence.perf import load_bench_results, missing_bench_packages
from harness.evidence.performance import compare_runs
from harness.evidence.runbook import PerformanceSuite
from harness.record.checks import CheckStatus
from harness.stats.performance import METRICS

THROUGHPUT = [m.key for m in METRICS if m.higher_is_better]
LATENCY = [m.key for m in METRICS if not m.higher_is_better]


def runs(throughput: list[float], latency: list[float]) -> list[dict]:
    """bench_serving-shaped records: every throughput metric follows `throughput`, every latency
    metric follows `latency` (one value per repetition)."""
    return [{**{key: t for key in THROUGHPUT}, **{key: l for key in LATENCY}, "completed": 8}
            for t, l in zip(throughput, latency)]


def verdicts(candidate: list[dict], baseline: list[dict], tolerance: float = 0.05) -> dict[str, CheckStatus]:
    _, checks = compare_runs(candidate, baseline, tolerance=tolerance, prefix="perf")
    return {check.name.removeprefix("perf."): check.status for check in checks}


BASELINE = runs([100, 101, 99], [10.0, 10.1, 9.9])


def test_a_30_percent_slowdown_with_low_noise_fails():
    slower = runs([70, 70.7, 69.3], [13.0, 13.1, 12.9])
    assert set(verdicts(slower, BASELINE).values()) == {CheckStatus.failed}
    _, checks = compare_runs(slower, BASELINE, tolerance=0.05)
    assert "-30.0%" in checks[0].reason and "CI of the ratio" in checks[0].reason


def test_a_2_percent_change_inside_low_noise_passes():
    slightly_slower = runs([98, 99, 97], [10.2, 10.3, 10.1])
    assert set(verdicts(slightly_slower, BASELINE).values()) == {CheckStatus.passed}


def test_a_2_percent_change_under_larger_noise_is_inconclusive_with_a_suggestion():
    noisy_baseline = runs([100, 106, 94], [10.0, 10.6, 9.4])
    noisy = runs([98, 104, 92], [10.2, 10.8, 9.6])
    comparisons, checks = compare_runs(noisy, noisy_baseline, tolerance=0.05)
    assert {c.status for c in checks} == {CheckStatus.inconclusive}
    assert all(c.repetitions_needed and c.repetitions_needed > 3 for c in comparisons)
    assert "repetitions per side would decide it" in checks[0].reason


def test_faster_passes_and_latency_direction_is_respected():
    faster = runs([130, 131, 129], [7.0, 7.1, 6.9])
    assert set(verdicts(faster, BASELINE).values()) == {CheckStatus.passed}
    # throughput unchanged but latency 30 % worse: only the latency checks fail
    mixed = verdicts(runs([100, 101, 99], [13.0, 13.1, 12.9]), BASELINE)
    assert {mixed[k] for k in THROUGHPUT} == {CheckStatus.passed}
    assert {mixed[k] for k in LATENCY} == {CheckStatus.failed}


def test_a_single_repetition_means_the_noise_is_unknown():
    one = runs([70], [13.0])
    _, checks = compare_runs(one, BASELINE, tolerance=0.05)
    assert {c.status for c in checks} == {CheckStatus.inconclusive}
    assert "noise unknown" in checks[0].reason and "single repetition" in checks[0].reason


def test_bench_results_file_errors_name_the_line(tmp_path):
    bad = tmp_path / "baseline.jsonl"
    bad.write_text(json.dumps(BASELINE[0]) + "\n{oops\n")
    with pytest.raises(HarnessError, match=r"baseline.jsonl:2: not a JSON line"):
        load_bench_results(bad)
    bad.write_text(json.dumps({"output_throughput": 1.0}) + "\n")
    with pytest.raises(HarnessError, match=r"baseline.jsonl:1: not a bench_serving result \(missing total_throughput"):
        load_bench_results(bad)
    with pytest.raises(HarnessError, match="cannot read bench_serving results"):
        load_bench_results(tmp_path / "absent.jsonl")


def test_not_run_when_the_interpreter_has_no_sglang(tmp_path):
    bare = tmp_path / "bare-venv"
    venv.create(bare, with_pip=False, symlinks=True)  # its own site-packages: nothing installed
    suite = PerformanceSuite(name="chat", num_prompts=4, repetitions=2)
    result = run_performance(suite, "http://127.0.0.1:9", tmp_path / "perf", python=str(bare / "bin" / "python"))
    (check,) = result.checks
    assert check.status is CheckStatus.not_run
    assert check.reason.startswith("sglang is not installed (missing sglang==0.5.23")
    assert "pip install --no-deps sglang==0.5.23 && pip install aiohttp" in check.reason
    assert not list((tmp_path / "perf").glob("rep-*"))  # nothing was launched
    assert json.loads((tmp_path / "perf" / "summary.json").read_text())["status"] == "not_run"


# --------------------------------------------------------------------------- end to end

needs_bench = pytest.mark.skipif(bool(missing_bench_packages()),
                                 reason=f"bench_serving not installed here: {missing_bench_packages()}")


@pytest.fixture
def tokenizer_dir(tmp_path: Path) -> Path:
    """A word-level tokenizer made here, so random-ids needs nothing from a hub."""
    vocab = {"<unk>": 0, **{f"w{i}": i + 1 for i in range(300)}}
    tokenizer = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer.decoder = decoders.WordPiece(prefix="##")  # joins words with spaces
    directory = tmp_path / "tokenizer"
    directory.mkdir()
    tokenizer.save(str(directory / "tokenizer.json"))
    (directory / "tokenizer_config.json").write_text(json.dumps(
        {"tokenizer_class": "PreTrainedTokenizerFast", "unk_token": "<unk>", "model_max_length": 4096}))
    return directory


@needs_bench
@pytest.mark.slow
def test_bench_serving_end_to_end_against_loopback(loopback_server, tokenizer_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    # A baseline machine far ahead of a loopback engine that waits 300 ms before each first token:
    # 1e5 tok/s and 3 ms TTFT cannot be met, whatever the noise of two repetitions here.
    baseline = tmp_path / "baseline.jsonl"
    baseline.write_text("".join(json.dumps(record) + "\n" for record in runs([1e5, 1.01e5], [3.0, 3.03])))
    suite = PerformanceSuite(name="tiny", num_prompts=8, random_input_len=32, random_output_len=16,
                             repetitions=2, baseline=baseline)
    with loopback_server("--latency-ms", "300") as server:
        result = run_performance(suite, server.base_url, tmp_path / "perf", tokenizer=str(tokenizer_dir))

    status = {c.name.removeprefix("performance.tiny."): c.status for c in result.checks}
    assert status["run"] is CheckStatus.passed, result.checks[0].label()
    assert {status[key] for key in THROUGHPUT} == {CheckStatus.failed}
    assert status["median_ttft_ms"] is CheckStatus.failed and status["p99_ttft_ms"] is CheckStatus.failed
    assert set(status) == {"run", *(m.key for m in METRICS)}

    records = load_bench_results(tmp_path / "perf" / "results.jsonl")  # the next run's baseline
    assert len(records) == 2 and all(r["completed"] == 8 and r["backend"] == "sglang-oai" for r in records)
    assert all(r["median_ttft_ms"] >= 300 for r in records)  # the injected latency, measured
    assert result.spread["median_ttft_ms"].stdev is not None
    command = json.loads((tmp_path / "perf" / "command.json").read_text())["commands"][0]
    assert "--dataset-name random-ids" in command and f"--tokenizer {tokenizer_dir}" in command
    comparisons, _ = compare_runs(result.runs, load_bench_results(baseline), tolerance=suite.tolerance)
    assert {c.metric for c in comparisons} == {m.key for m in METRICS}


@needs_bench
@pytest.mark.slow
def test_failed_requests_fail_the_run_with_the_log(loopback_server, tokenizer_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    # No warmup request: bench_serving aborts when its warmup fails, and all-failed runs crash it.
    suite = PerformanceSuite(name="errors", num_prompts=8, random_input_len=16, random_output_len=8,
                             repetitions=2, extra_args=["--warmup-requests", "0"])
    with loopback_server("--error-rate", "0.5") as server:
        result = run_performance(suite, server.base_url, tmp_path / "perf", tokenizer=str(tokenizer_dir))
    (check,) = result.checks
    assert check.status is CheckStatus.failed
    assert re.fullmatch(r"repetition 1: [1-7] of 8 requests failed", check.reason), check.reason
    assert check.detail and check.evidence[0].endswith("rep-1.log")
    assert not (tmp_path / "perf" / "rep-2.jsonl").exists()  # stops at the first broken repetition


def test_a_signal_during_bench_serving_unwinds_the_run(monkeypatch):
    """bench_serving runs in this process and its own SystemExit is read as a failed run; the
    SystemExit harness raises on SIGTERM/SIGHUP must not be (else a cancelled job carries on)."""
    import sys
    import types

    from harness.errors import Signalled
    from harness.evidence import bench_launcher

    def exits(code):
        def cli_main():
            raise (Signalled if code == 129 else SystemExit)(code)
        return cli_main

    monkeypatch.setitem(sys.modules, "sglang.benchmark.serving", types.SimpleNamespace(cli_main=exits(3)))
    assert bench_launcher._bench_once(["--num-prompts", "1"]) == "bench_serving exited with 3"
    monkeypatch.setitem(sys.modules, "sglang.benchmark.serving", types.SimpleNamespace(cli_main=exits(129)))
    with pytest.raises(Signalled):
        bench_launcher._bench_once(["--num-prompts", "1"])
