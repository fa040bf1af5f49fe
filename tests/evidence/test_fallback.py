"""Operator Recipes, the loopback engine's profiler traces, and the fallback / compile-failure scan."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import httpx
import pytest
from runner_support import fallback_scan as run_fallback_scan

from harness.errors import HarnessError
from harness.evidence.fallback import scan_log
from harness.evidence.profile import capture_profile, profile_check
from harness.evidence.recipes import Recipes, load_recipes
from harness.evidence.runbook import ProfilingSpec, load_runbook
from harness.evidence.traces import load_trace
from harness.record.checks import CheckStatus

REPO_ROOT = Path(__file__).resolve().parents[2]
PLUGIN_RUNBOOK = REPO_ROOT / "runbooks" / "plugin-device.yaml"


def _profile(server, output_dir: Path, prompts: int = 2, **start_body) -> list[Path]:
    """Drive /start_profile, some traffic, /stop_profile; return the traces written."""
    with httpx.Client(base_url=server.base_url, trust_env=False) as client:
        assert client.post("/start_profile", json={"output_dir": str(output_dir), **start_body}).text \
            == "Start profiling.\n"
        for number in range(prompts):
            client.post("/v1/completions", json={"model": server.model, "prompt": f"p{number}",
                                                 "max_tokens": 4}).raise_for_status()
        if "num_steps" not in start_body:
            assert client.post("/stop_profile").status_code == 200
    return sorted(output_dir.glob("*.trace.json*"))


def test_shipped_recipes_are_consistent():
    recipes = load_recipes(REPO_ROOT / "recipes" / "xdev.yaml")
    names = {r.name for r in recipes.recipes}
    assert {"rmsnorm", "silu_and_mul", "rotary_embedding", "flash_attention_decode",
            "flash_attention_extend", "fused_moe"} <= names
    for recipe in recipes.recipes:
        for failure in recipe.known_failures:
            if failure.log and failure.pattern:  # the example line must be what the pattern finds
                assert re.search(failure.pattern, failure.log), (recipe.name, failure.pattern)


def test_recipe_errors_name_file_and_line(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("platform: xdev\nrecipes:\n  - name: rmsnorm\n    upstream: {op: a}\n"
                    "    platform: {op: b}\n    size_buckets:\n      - dim: hidden\n        values: [x]\n")
    with pytest.raises(HarnessError) as caught:
        load_recipes(path)
    assert str(caught.value).startswith(f"{path}:8: recipes[0].size_buckets[0].values[0]: "
                                        "Input should be a valid integer")


@pytest.mark.parametrize("plain_json", [False, True])
def test_loopback_profiler_writes_a_torch_profiler_trace(loopback_server, tmp_path, plain_json):
    flags = ("--trace-json",) if plain_json else ()
    with loopback_server(*flags) as server:
        traces = _profile(server, tmp_path / "traces")
    assert len(traces) == 1
    assert traces[0].name.endswith("-TP-0.trace.json" if plain_json else "-TP-0.trace.json.gz")
    assert (traces[0].read_bytes()[:2] == b"\x1f\x8b") is not plain_json
    events = [e for e in load_trace(traces[0])["traceEvents"] if e["ph"] == "X"]
    categories = {e["cat"] for e in events}
    assert {"cpu_op", "cuda_runtime", "kernel", "gpu_memcpy"} <= categories
    device = [e for e in events if e["cat"] in ("kernel", "gpu_memcpy")]
    assert {e["pid"] for e in device} == {0} and len({e["tid"] for e in device}) == 2
    launches = {e["args"]["correlation"] for e in events if e["cat"] == "cuda_runtime"}
    assert {e["args"]["correlation"] for e in device} == launches  # every kernel has its launch
    # 2 requests: 2 prefills and 8 decode steps (4 tokens each)
    steps = [e["name"] for e in events if e["cat"] == "user_annotation"]
    assert steps.count("forward_prefill") == 2 and steps.count("forward_decode") == 8


def test_profiler_num_steps_env_dir_and_misuse(loopback_server, tmp_path):
    env_dir = tmp_path / "env-traces"
    with loopback_server(name="env") as server:
        with httpx.Client(base_url=server.base_url, trust_env=False) as client:
            stop = client.post("/stop_profile")
            assert stop.status_code == 500 and "not in progress" in stop.text
    runbook_flags = ("--platform", "xdev")
    with loopback_server(*runbook_flags, name="steps") as server:
        traces = _profile(server, tmp_path / "steps", prompts=1, num_steps=3)
        assert len(traces) == 1  # written after 3 forward steps without /stop_profile
        events = load_trace(traces[0])["traceEvents"]
        assert sum(e.get("cat") == "user_annotation" for e in events) == 3
        assert any(e.get("name", "").startswith("xdev::") for e in events)
    # Without output_dir the trace goes to SGLANG_TORCH_PROFILER_DIR, as in SGLang.
    import os
    os.environ["SGLANG_TORCH_PROFILER_DIR"] = str(env_dir)
    try:
        with loopback_server(name="envdir") as server:
            with httpx.Client(base_url=server.base_url, trust_env=False) as client:
                client.post("/start_profile")
                client.post("/v1/completions", json={"model": server.model, "prompt": "x", "max_tokens": 1})
                client.post("/stop_profile")
    finally:
        del os.environ["SGLANG_TORCH_PROFILER_DIR"]
    assert len(list(env_dir.glob("*-TP-0.trace.json.gz"))) == 1


def test_fallback_lines_and_host_ops_are_found_and_mapped_to_recipes(loopback_server, tmp_path):
    runbook = load_runbook(PLUGIN_RUNBOOK)
    with loopback_server("--platform", "xdev", "--fallback-lines", "4") as server:
        traces = _profile(server, tmp_path / "traces")
    result = run_fallback_scan(runbook, logs=server.log_paths, traces=traces, evidence_dir=tmp_path / "scan")
    checks = {c.name: c for c in result.checks}
    assert checks["fallback.log"].status is CheckStatus.failed
    assert checks["fallback.trace"].status is CheckStatus.failed

    log_hits = {h.recipe: h for h in result.hits if h.source == "log"}
    assert set(log_hits) == {"rmsnorm", "silu_and_mul", "fused_moe", "flash_attention_decode"}
    assert log_hits["silu_and_mul"].op == "sgl_kernel::silu_and_mul"
    assert log_hits["silu_and_mul"].instead.startswith("use xdev_ops.swiglu")
    assert log_hits["fused_moe"].op == "fused_moe_kernel"
    assert log_hits["fused_moe"].pattern == "triton-compile-error"
    assert "grouped_gemm_moe" in log_hits["fused_moe"].known_failure
    assert log_hits["rmsnorm"].known_failure.startswith("upgrade to xdev-plugin>=0.9.1")
    assert log_hits["flash_attention_decode"].severity == "warning"
    for hit in log_hits.values():  # file:line points at the very line
        assert hit.text in Path(hit.file).read_text().splitlines()[hit.line - 1]
    assert checks["fallback.log"].reason.startswith("3 fallback/compile-failure hit(s)")

    (trace_hit,) = [h for h in result.hits if h.source == "trace"]
    assert trace_hit.pattern == "cpu-op-in-device-trace" and trace_hit.op == "sgl_kernel::silu_and_mul"
    # every forward step (2 prefills + 8 decodes) runs it on the host once per layer (2 layers)
    assert trace_hit.recipe == "silu_and_mul" and trace_hit.count == 20
    rows = [json.loads(line) for line in result.evidence.read_text().splitlines()]
    assert len(rows) == len(result.hits)


def test_clean_engine_passes_the_scan(loopback_server, tmp_path):
    runbook = load_runbook(PLUGIN_RUNBOOK)
    with loopback_server("--platform", "xdev") as server:
        traces = _profile(server, tmp_path / "traces")
    result = run_fallback_scan(runbook, logs=server.log_paths, traces=traces, evidence_dir=tmp_path / "scan")
    assert [(c.name, c.status.value) for c in result.checks] == [("fallback.log", "passed"),
                                                                ("fallback.trace", "passed")]
    assert result.hits == []


def test_unscannable_evidence_is_not_run_or_failed_never_a_crash(tmp_path):
    runbook = load_runbook(PLUGIN_RUNBOOK)
    corrupt = tmp_path / "bad.trace.json.gz"
    corrupt.write_bytes(gzip.compress(b"{not json"))
    cpu_only = tmp_path / "cpu.trace.json"
    cpu_only.write_text(json.dumps({"traceEvents": [
        {"ph": "X", "cat": "cpu_op", "name": "sgl_kernel::rmsnorm", "pid": 1, "tid": 1, "ts": 0, "dur": 5}]}))

    def trace_check(traces, logs=()):
        result = run_fallback_scan(runbook, logs=list(logs), traces=traces, evidence_dir=tmp_path / "scan")
        return result.checks

    log_check, trace = trace_check([tmp_path / "missing.trace.json.gz"], logs=[tmp_path / "no.log"])
    assert log_check.label().startswith("not run: no server log to scan")
    assert trace.status is CheckStatus.not_run and "cannot read trace" in trace.reason
    assert trace_check([corrupt])[1].status is CheckStatus.failed
    assert "not a JSON trace: it does not parse as JSON" in trace_check([corrupt])[1].reason
    assert trace_check([])[1].label() == "not run: no trace was captured"
    assert trace_check([cpu_only])[1].label() == "not run: the trace holds no device events (a CPU-only profile?)"


def test_compile_error_op_is_taken_from_the_traceback(tmp_path):
    log = tmp_path / "server.log"
    log.write_text("\n".join([
        "Traceback (most recent call last):",
        '  File "sglang/srt/layers/moe/fused_moe_triton/fused_moe.py", line 512, in invoke_fused_moe_kernel',
        "    fused_moe_kernel[grid](",
        "triton.compiler.errors.CompilationError: at 61:12:",
        "        a = tl.load(a_ptrs)",
        "INFO: all good",
    ]))
    recipes = Recipes.load([REPO_ROOT / "recipes" / "xdev.yaml"])
    (hit,) = scan_log(log, [], recipes)
    assert (hit.line, hit.pattern, hit.op, hit.recipe) == (4, "triton-compile-error", "sglang::fused_moe", "fused_moe")
    assert hit.instead.startswith("use xdev_ops.grouped_gemm_moe")


def _traffic(server) -> None:
    with httpx.Client(base_url=server.base_url, trust_env=False) as client:
        for prompt in ("a", "b"):
            client.post("/v1/completions", json={"model": server.model, "prompt": prompt,
                                                 "max_tokens": 4}).raise_for_status()


@pytest.mark.parametrize("num_steps", [3, None])
def test_capture_profile_follows_the_runbook(loopback_server, tmp_path, num_steps):
    spec = ProfilingSpec(num_steps=num_steps)
    with loopback_server() as server:
        capture = capture_profile(server, spec, tmp_path / "evidence", _traffic)
    assert profile_check(capture).status is CheckStatus.passed
    (trace,) = capture.traces
    assert trace.parent == tmp_path / "evidence" / "traces"
    steps = [e for e in load_trace(trace)["traceEvents"] if e.get("cat") == "user_annotation"]
    assert len(steps) == (3 if num_steps else 10)  # 2 requests: 2 prefills + 8 decodes


def test_capture_profile_reports_what_went_wrong(loopback_server, tmp_path):
    with loopback_server() as server:
        refused = capture_profile(server, ProfilingSpec(start_endpoint="/nope"), tmp_path, _traffic)
        silent = capture_profile(server, ProfilingSpec(num_steps=None, stop_endpoint="/v1/models"),
                                 tmp_path, _traffic, wait_s=1)
    assert profile_check(refused).label().startswith("failed: /nope answered HTTP 404")
    assert profile_check(silent).status is CheckStatus.failed and silent.traces == []
    assert profile_check(silent).reason.startswith(f"no trace appeared in {tmp_path / 'traces'} within 1s "
                                          "(/v1/models answered HTTP 404")
