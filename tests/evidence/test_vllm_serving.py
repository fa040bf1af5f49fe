"""Runbooks for vLLM (`environment.engine: vllm`): the release pin, `vllm bench serve` built from a
suite and its result file read back under vLLM's own key names (vllm/benchmarks/serve.py), the
honest `not run` when vLLM's client is not installed, the torch profiler's launch flag and empty
/start_profile, vLLM's per-rank gzip trace names, and an engine mismatch refused by `harness run`."""

from __future__ import annotations

import gzip
import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.engines import ENGINES
from harness.errors import HarnessError
from harness.evidence.perf import bench_arguments, load_bench_results, run_performance
from harness.evidence.runbook import load_runbook
from harness.evidence.server import ServedModel, build_command
from harness.evidence.trace_stream import group_traces, rank_of

REPO = Path(__file__).resolve().parents[2]
RUNBOOKS = REPO / "runbooks"
SGLANG, VLLM = ENGINES["sglang"].serving, ENGINES["vllm"].serving

# One `vllm bench serve --save-result` file: serve.py benchmark() :1261 plus the p99 / median keys
# of process_one_metric (default --percentile-metrics ttft,tpot,itl, --metric-percentiles 99).
VLLM_RESULT = {
    "date": "20260101-000000", "endpoint_type": "vllm", "backend": "vllm", "model_id": "m", "num_prompts": 4,
    "duration": 2.0, "completed": 4, "failed": 0, "total_input_tokens": 64, "total_output_tokens": 32,
    "request_throughput": 2.0, "request_goodput": None, "output_throughput": 16.0, "total_token_throughput": 48.0,
    "max_output_tokens_per_s": 20.0, "max_concurrent_requests": 4,
    **{f"{stat}_{metric}_ms": value for metric, value in (("ttft", 50.0), ("tpot", 10.0), ("itl", 10.0))
       for stat in ("mean", "median", "std", "p99")},
}


def _runbook(tmp_path: Path, environment: str) -> Path:
    path = tmp_path / "runbook.yaml"
    path.write_text(f"name: t\nenvironment:\n{environment}\nserver:\n  command: vllm serve {{model}} --port {{port}}\n"
                    "  model: m\n")
    return path


def test_the_shipped_vllm_runbooks_serve_vllm_and_sglang_stays_the_default():
    for name in ("vllm-cuda-reference", "vllm-plugin-device"):
        runbook = load_runbook(RUNBOOKS / f"{name}.yaml")
        assert runbook.environment.engine == "vllm" and runbook.environment.engine_version == "0.27.1"
        assert runbook.server.command.startswith("vllm serve {model}")
        assert "--ignore-eos" in runbook.performance[0].extra_args
    assert load_runbook(RUNBOOKS / "cuda-reference.yaml").environment.serving is SGLANG


@pytest.mark.parametrize(("environment", "message"), [
    ("  device: cuda\n  engine: vllm", "runbook.yaml:3: environment.engine_version: Field required"),
    ("  device: cuda\n  engine: trt\n  engine_version: '1'", "unknown engine 'trt'"),
    # the keys of the earlier per-engine pins: one line at the old key, naming the new one
    ("  device: cuda\n  engine: vllm\n  vllm_version: '0.27.1'",
     "runbook.yaml:5: environment.vllm_version: renamed to `engine_version`"),
    ("  device: cuda\n  sglang_version: '0.5.23'\n  engine_version: '0.5.23'",
     "runbook.yaml:4: environment.sglang_version: renamed to `engine_version`"),
])
def test_the_pin_must_be_the_engines(tmp_path, environment, message):
    with pytest.raises(HarnessError, match=message) as raised:
        load_runbook(_runbook(tmp_path, environment))
    assert "\n" not in str(raised.value) and "runbook.yaml:" in str(raised.value)


def test_vllm_bench_serve_command_line_from_a_runbook_suite(tmp_path):
    suite = load_runbook(RUNBOOKS / "vllm-cuda-reference.yaml").performance[0]
    args = bench_arguments(suite, "http://127.0.0.1:8000/", tmp_path / "rep-1.jsonl", model="Qwen", client=VLLM.bench)
    flags = dict(itertools.pairwise(args))
    assert flags["--backend"] == "vllm" and flags["--dataset-name"] == "random"
    assert flags["--base-url"] == "http://127.0.0.1:8000" and flags["--num-prompts"] == "200"
    assert flags["--random-input-len"] == "1024" and flags["--random-output-len"] == "256"
    assert flags["--result-dir"] == str(tmp_path) and flags["--result-filename"] == "rep-1.jsonl"
    assert "--save-result" in args and "--output-file" not in args and args[-3:] == ["--ignore-eos", "--num-warmups", "8"]
    sglang = bench_arguments(suite.model_copy(update={"dataset_name": None}), "http://h:1", tmp_path / "r.jsonl")
    assert dict(itertools.pairwise(sglang))["--dataset-name"] == "random-ids" and "--output-file" in sglang


def test_a_vllm_result_file_reads_under_the_harness_keys(tmp_path):
    path = tmp_path / "result.json"
    path.write_text(json.dumps(VLLM_RESULT))  # json.dump, as serve.py main_async writes it
    record = load_bench_results(path)[0]
    assert record["total_throughput"] == 48.0 and record["p99_itl_ms"] == 10.0


def test_without_vllm_performance_is_not_run_and_says_why(tmp_path):
    suite = load_runbook(RUNBOOKS / "vllm-cuda-reference.yaml").performance[1]
    run = run_performance(suite, "http://127.0.0.1:9", tmp_path, engine=VLLM, version="0.27.1")
    assert run.status == "not_run" and run.repetitions == 0
    assert run.reason.startswith("the engine's benchmark client (vllm bench serve) is not installed")
    assert "vllm==0.27.1" in run.reason and not (tmp_path / "results.jsonl").exists()


def _fake_vllm(root: Path) -> Path:
    """A stand-in `vllm` distribution whose `python -m vllm.entrypoints.cli.main bench serve` writes
    VLLM_RESULT where --result-dir / --result-filename say (what the real client's main does)."""
    cli = root / "vllm" / "entrypoints" / "cli"
    cli.mkdir(parents=True)
    for package in (root / "vllm", root / "vllm" / "entrypoints", cli):
        (package / "__init__.py").write_text("")
    (root / "vllm-0.27.1.dist-info").mkdir()
    (root / "vllm-0.27.1.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: vllm\nVersion: 0.27.1\n")
    (cli / "main.py").write_text(
        "import json, os, sys\n"
        "args = sys.argv[1:]\n"
        "assert args[:2] == ['bench', 'serve'] and '--save-result' in args, args\n"
        "value = lambda flag: args[args.index(flag) + 1]\n"
        f"result = {VLLM_RESULT!r}\n"
        "result['completed'] = int(value('--num-prompts'))\n"
        "result['argv'] = args\n"
        "open(os.path.join(value('--result-dir'), value('--result-filename')), 'w').write(json.dumps(result))\n")
    return root


def test_vllm_bench_serve_repetitions_through_the_runner(tmp_path):
    suite = load_runbook(RUNBOOKS / "vllm-cuda-reference.yaml").performance[1].model_copy(
        update={"repetitions": 2, "num_prompts": 4})
    env = {**os.environ, "PYTHONPATH": str(_fake_vllm(tmp_path / "site"))}
    run = run_performance(suite, "http://127.0.0.1:9", tmp_path / "perf", env=env, engine=VLLM, model="Qwen")
    assert run.status == "measured" and run.repetitions == 2, run.reason
    assert run.command[1:5] == ["-m", "vllm.entrypoints.cli.main", "bench", "serve"]
    records = load_bench_results(tmp_path / "perf" / "results.jsonl")
    assert [r["argv"][r["argv"].index("--result-filename") + 1] for r in records] == ["rep-1.jsonl", "rep-2.jsonl"]
    assert all(r["total_throughput"] == 48.0 for r in records)
    note = json.loads((tmp_path / "perf" / "command.json").read_text())["note"]
    assert "vllm bench serve" in note and "its own process" in note


def test_the_profiler_config_is_a_launch_flag_and_the_start_takes_no_body(tmp_path):
    args, env = VLLM.profiler.launch("0.27.1", tmp_path)
    assert args[0] == "--profiler-config" and json.loads(args[1]) == {"profiler": "torch",
                                                                        "torch_profiler_dir": str(tmp_path)}
    assert env == {}
    # the flag since 0.13.0 (vllm/engine/arg_utils.py :1145); 0.12.0 reads only the variable (envs.py :848)
    assert VLLM.profiler.launch("0.12.0", tmp_path) == ([], {"VLLM_TORCH_PROFILER_DIR": str(tmp_path)})
    assert VLLM.profiler.launch("0.13.0", tmp_path)[0][0] == "--profiler-config"
    assert VLLM.profiler.start_body(tmp_path, 5, ["CPU"]) is None
    assert SGLANG.profiler.launch("0.5.23", tmp_path) == ([], {})
    assert SGLANG.profiler.start_body(tmp_path, 5, ["CPU"]) == {"output_dir": str(tmp_path), "activities": ["CPU"],
                                                                "num_steps": 5}

    runbook = load_runbook(RUNBOOKS / "vllm-plugin-device.yaml")
    served = ServedModel.from_runbook(runbook, tmp_path, trace_dir=tmp_path / "traces")
    command = build_command(served.spec, "127.0.0.1", 8000)  # the JSON survives the template's braces
    assert json.loads(command[command.index("--profiler-config") + 1])["torch_profiler_dir"] == str(tmp_path / "traces")
    own = runbook.server.model_copy(update={"command": runbook.server.command + " --profiler-config={{}}"})
    again = ServedModel.from_runbook(runbook.model_copy(update={"server": own}), tmp_path, trace_dir=tmp_path)
    assert again.spec.command == own.command  # the runbook's own flag wins


def _trace(path: Path, rank: int) -> Path:
    body = {"distributedInfo": {"rank": rank}, "traceEvents": [
        {"ph": "X", "name": "gemm", "cat": "kernel", "ts": 0, "dur": 5, "pid": 0, "tid": 7}]}
    path.write_bytes(gzip.compress(json.dumps(body).encode()))
    return path


def test_vllm_per_rank_gzip_traces_group_by_rank_without_the_api_process_trace(tmp_path):
    _trace(tmp_path / "dp0_pp0_tp1_dcp0_ep0_rank1.1767225600000000000.pt.trace.json.gz", 1)
    _trace(tmp_path / "dp0_pp0_tp0_dcp0_ep0_rank0.1767225600000000001.pt.trace.json.gz", 0)
    _trace(tmp_path / "node7_4242.async_llm.1767225600000000002.pt.trace.json.gz", 0)
    ranks = group_traces([tmp_path])
    assert [(r.rank.tp, r.rank.pp, r.rank.rank) for r in ranks] == [(0, 0, 0), (1, 0, 1)]
    assert rank_of(Path("dp1_pp2_tp3_dcp0_ep4_rank9.1.pt.trace.json.gz"), {}).model_dump() == {
        "tp": 3, "pp": 2, "dp": 1, "ep": 4, "rank": None}
    assert rank_of(Path("x-TP-1-PP-2.trace.json.gz"), {}).label == "TP1-PP2"  # SGLang's, as before


def test_vllm_traces_named_by_global_rank_before_0_17_group_without_the_api_process_trace(tmp_path):
    """vLLM 0.12.0-0.16.0 name a worker's trace `<instance_id>-rank-<rank>` (gpu_worker.py)."""
    _trace(tmp_path / "3f2a9c1e-rank-1.1767225600000000001.pt.trace.json.gz", 1)
    _trace(tmp_path / "3f2a9c1e-rank-0.1767225600000000000.pt.trace.json.gz", 0)
    _trace(tmp_path / "node7_4242.async_llm.1767225600000000002.pt.trace.json.gz", 0)
    ranks = group_traces([tmp_path])
    assert [(r.path.name.split(".")[0], r.rank.rank) for r in ranks] == [("3f2a9c1e-rank-0", 0), ("3f2a9c1e-rank-1", 1)]
    assert rank_of(Path("a-rank-3.1.pt.trace.json.gz"), {}).label == "PP3"  # the global rank, as distributedInfo's


def test_run_refuses_a_runbook_of_another_engine_in_one_line(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "harness", "run", "-f", "x", "--plugin", str(REPO / "tests" / "fixtures" / "vllm_tiny"),
         "--upstream", "vllm==0.27.1", "--runbook", str(RUNBOOKS / "cuda-reference.yaml"), "-w", str(tmp_path)],
        capture_output=True, text=True, timeout=120, cwd=tmp_path, check=False, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0
    assert "cuda-reference.yaml:" in done.stderr and "environment.engine: the runbook serves SGLang" in done.stderr
    assert not (tmp_path / "reports").exists()


@pytest.mark.parametrize("version", ["0.27.1", "0.12.0"])
def test_the_vllm_profiler_from_the_runbook_to_the_analysis(loopback_runbook, tmp_path, version):
    """The chain a vLLM runbook with `profiling` runs, against the loopback engine speaking vLLM's
    profiler surface: the harness launches it with --profiler-config (0.13.0 on) or
    VLLM_TORCH_PROFILER_DIR (before), POSTs the empty /start_profile and /stop_profile around the
    traffic, collects the traces and analyses the worker's (not the API process's host-only one)."""
    from harness.evidence.profile import ProfileRunner, trace_dir_of
    from harness.evidence.profile_analysis import analyze_profile
    from harness.evidence.runbook import ProfilingSpec

    runbook = loopback_runbook("--engine", "vllm", environment={"device": "loopback", "engine": "vllm", "engine_version": version})
    spec = ProfilingSpec(num_steps=None)
    traces = trace_dir_of(spec, tmp_path / "evidence")  # as the performance step launches it (ServedStep._trace_dir)
    with ServedModel.from_runbook(runbook, tmp_path / "server", trace_dir=traces) as server:
        flag = "--profiler-config" in server.command
        capture = ProfileRunner().run(spec, tmp_path / "evidence",
                                      workload=lambda: _traffic(server), server=server, profiler=VLLM.profiler)
    assert flag is (version == "0.27.1")
    assert capture.ok, capture.reason
    names = sorted(p.name for p in traces.iterdir())
    assert any(n.startswith("dp0_pp0_tp0_dcp0_ep0_rank0.") and n.endswith(".pt.trace.json.gz") for n in names), names
    assert any(".async_llm." in n for n in names), names
    assert sorted(p.name for p in capture.traces) == names  # the capture keeps both as evidence
    analysis = analyze_profile([traces])
    (source,) = analysis.sources  # the analysis reads the worker's trace, not the API process's
    assert Path(source).name.startswith("dp0_pp0_tp0_dcp0_ep0_rank0.") and len(analysis.ranks) == 1
    assert analysis.stages and sum(analysis.shares.model_dump().values()) > 0


def test_a_vllm_server_started_without_a_profiler_config_refuses_with_the_hint(loopback_runbook, tmp_path):
    from harness.evidence.profile import ProfileRunner
    from harness.evidence.runbook import ProfilingSpec

    runbook = loopback_runbook("--engine", "vllm", environment={"device": "loopback", "engine": "vllm", "engine_version": "0.27.1"})
    with ServedModel.from_runbook(runbook, tmp_path / "server") as server:  # no trace_dir
        capture = ProfileRunner().run(ProfilingSpec(), tmp_path / "evidence", workload=lambda: _traffic(server),
                                      server=server, profiler=VLLM.profiler)
    assert not capture.ok and capture.reason.startswith("/start_profile answered HTTP 404"), capture.reason
    assert "--profiler-config" in capture.reason  # the usual cause, said with the refusal


def _traffic(server) -> None:
    import httpx

    with httpx.Client(base_url=server.base_url, trust_env=False) as client:
        for prompt in ("a", "b"):
            client.post("/v1/completions", json={"model": server.model, "prompt": prompt, "max_tokens": 4}).raise_for_status()
