"""The multi-rank profile analysis on real traces: torch.distributed (gloo) pipelines on the CPU,
one process per stage, unequal layers per stage, torch.profiler with with_stack=True, SGLang's
per-rank file names — generated once per session (harness.testing.pipeline_trace)."""

from __future__ import annotations

import gzip
import json
import re
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harness.errors import HarnessError
from harness.evidence.profile_analysis import analyze_profile, best_split, diff_profiles
from harness.evidence.recipes import normalize_op
from harness.evidence.trace_stream import group_traces, read_columns
from harness.evidence.traces import TraceError, TraceNaming

SOURCE = Path(__file__).resolve().parents[2] / "harness" / "testing" / "pipeline_trace.py"


@pytest.fixture(scope="session")
def pipelines(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two real runs: four stages with layers 1-1-4-2 (receives posted together), and two
    stages with layers 1-3 whose receives are serialised."""
    pytest.importorskip("torch")
    from harness.testing.pipeline_trace import generate

    root = tmp_path_factory.mktemp("pipelines")
    runs = {"four": ([1, 1, 4, 2], False), "two_serialised": ([1, 3], True)}
    for name, (layers, serialised) in runs.items():
        generate(layers, root / name, serialised=serialised)
    return {name: root / name for name in runs}


@pytest.fixture(scope="session")
def four(pipelines):
    return analyze_profile([pipelines["four"]])


@pytest.fixture(scope="session")
def two(pipelines):
    return analyze_profile([pipelines["two_serialised"]])


def test_the_slowest_stage_is_the_root_of_the_wait_chain(four):
    assert [s.stage for s in four.stages] == ["PP0", "PP1", "PP2", "PP3"]
    assert [s.layers for s in four.stages] == [1, 1, 4, 2]
    assert four.slowest_stage == "PP2"
    assert four.wait_chain.root == "PP2"
    assert four.wait_chain.chain[-1] == "PP2"
    edges = {(e.waiter, e.waits_on) for e in four.wait_chain.edges}
    assert ("PP3", "PP2") in edges and ("PP0", "PP3") in edges  # the token returns to the first stage
    assert all(0 <= b <= 1 for s in four.stages for b in s.bubble_share_per_step)
    assert all(len(s.bubble_share_per_step) == s.steps == 5 for s in four.stages)


def test_the_balance_plan_moves_layers_off_the_slowest_stage(four, two):
    plan = four.balance
    assert plan.observed == [1, 1, 4, 2]
    assert plan.proposed == best_split(plan.layer_ms, plan.fixed_ms)
    assert sum(plan.proposed) == 8 and plan.proposed[2] < 4
    assert plan.proposed_slowest_ms < plan.observed_slowest_ms
    assert two.balance.observed == [1, 3] and two.balance.proposed == [2, 2]


def test_the_split_search_gives_the_seed_answer():
    # 61 equal layers on four stages; the first stage embeds (1 layer's worth is spare), the last has the head
    assert best_split([1.0] * 61, [0.0, 1.0, 0.0, 2.0]) == [16, 15, 16, 14]
    assert best_split([1.0] * 8, [0.0] * 4) == [2, 2, 2, 2]
    assert best_split([3.0, 1.0, 1.0, 1.0], [0.0, 0.0]) == [1, 3]
    assert len(best_split([1.0] * 400, [0.0] * 8)) == 8  # dynamic programming beyond the exhaustive search


def test_serialised_receives_are_found_with_their_code_location(two, four):
    found = [f for f in two.findings if f.kind == "serialised_receives"]
    assert [f.rank for f in found] == ["PP1"]
    line = next(n for n, text in enumerate(SOURCE.read_text().splitlines(), 1) if "def receive(" in text)
    assert found[0].file.endswith("harness/testing/pipeline_trace.py") and found[0].line == line
    assert found[0].function == "receive"
    assert found[0].metrics["serialised"] == found[0].metrics["pairs"] >= 5
    assert not [f for f in four.findings if f.kind == "serialised_receives"]  # posted first, then waited


def test_shares_add_up_and_the_host_side_is_reported(four):
    shares = four.shares
    assert abs(shares.compute + shares.memcpy + shares.communication + shares.idle - 1) < 1e-9
    assert shares.compute > 0 and shares.communication > 0
    assert four.host_is_device and four.notes  # a CPU run: the host's operators are the device
    assert {t.rank for t in four.threads} == {"PP0", "PP1", "PP2", "PP3"}
    assert all(0 <= t.busy_share <= 1 and not t.spinning for t in four.threads)
    assert four.compile_ms == 0 and four.fallback_ops == []


def test_ranks_come_from_sglang_names_or_distributed_info(pipelines, tmp_path):
    ranks = group_traces([pipelines["four"]])
    assert [r.rank.label for r in ranks] == ["PP0", "PP1", "PP2", "PP3"]
    assert ranks[2].header["distributedInfo"]["world_size"] == 4
    plain = tmp_path / "plain"
    plain.mkdir()
    for number, trace in enumerate(sorted(pipelines["four"].iterdir())):
        shutil.copy(trace, plain / f"rank{number}.json.gz")  # no -TP-/-PP- tokens: distributedInfo
    assert [r.rank.pp for r in group_traces([plain])] == [0, 1, 2, 3]
    named = tmp_path / "named"
    named.mkdir()
    shutil.copy(ranks[0].path, named / "x-TP-1-PP-0-EP-1.trace.json.gz")
    shutil.copy(ranks[0].path, named / "merged-x.trace.json.gz")  # SGLang's merged trace: left out
    assert [r.rank.label for r in group_traces([named])] == ["TP1-EP1-PP0"]
    shutil.copy(ranks[0].path, named / "x-TP-1-PP-0-EP-1.json")
    with pytest.raises(TraceError, match="both rank TP1-EP1-PP0"):
        group_traces([named])


def test_the_json_document_and_the_diff_within_noise(pipelines, four):
    from harness.cli import app

    result = CliRunner().invoke(app, ["profile", "analyze", str(pipelines["four"]), "--reference",
                                      str(pipelines["four"]), "--json"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.output)
    for key in ("stages", "slowest_stage", "wait_chain", "balance", "findings", "threads", "shares",
                "fallback_ops", "compile_ms"):
        assert key in document
    assert set(document["shares"]) == {"compute", "memcpy", "communication", "idle"}
    assert set(document["balance"]) >= {"observed", "proposed", "observed_slowest_ms", "proposed_slowest_ms"}
    assert all(c["verdict"] == "within noise" for c in document["diff"]["stages"])  # the same run
    # one run against another of a different layout: a per-stage change with an interval
    diff = diff_profiles([four], [four.model_copy(update={"step_ms": {k: [v + 1000 for v in vals]
                                                                          for k, vals in four.step_ms.items()}})])
    assert {c.verdict for c in diff.stages} == {"faster"} and all(c.ci_high_ms < 0 for c in diff.stages)


def _event(name, cat, ts, dur, tid=1, **args):
    return {"ph": "X", "name": name, "cat": cat, "pid": 1, "tid": tid, "ts": ts, "dur": dur, "args": args}


def test_a_plugin_device_fallback_and_copy_share_from_its_own_names(tmp_path):
    # A PrivateUse1 device's trace: its kernels and copies under its own categories; silu fell back
    # to the CPU (copy out, CPU kernel, copy back, no launch inside), rms_norm launched a kernel.
    events = [
        _event("ProfilerStep#0", "user_annotation", 0, 1000),
        _event("aten::rms_norm", "cpu_op", 10, 100),
        _event("xdevLaunchKernel", "privateuse1_runtime", 20, 10, correlation=1),
        _event("xdev_rmsnorm_kernel", "xdev_kernel", 40, 200, tid=7, correlation=1),
        _event("aten::silu.out", "cpu_op", 300, 400),
        _event("aten::_to_copy", "cpu_op", 310, 50), _event("aten::copy_", "cpu_op", 315, 40),
        _event("aten::silu.out", "cpu_op", 370, 200),
        _event("aten::copy_", "cpu_op", 600, 60),
        _event("xdevMemcpyAsync", "privateuse1_runtime", 610, 10, correlation=2),
        _event("Memcpy HtoD (xdev)", "xdev_memcpy", 620, 100, tid=7, correlation=2),  # back: host to device
    ]
    (tmp_path / "run-TP-0.trace.json").write_text(json.dumps({"traceEvents": events}))
    naming = TraceNaming(device_categories=["xdev_kernel", "xdev_memcpy"], memcpy_categories=["xdev_memcpy"])
    analysis = analyze_profile([tmp_path], naming)
    assert not analysis.host_is_device
    assert [(f.op, f.count, f.copies) for f in analysis.fallback_ops] == [("silu", 1, 2)]
    assert analysis.fallback_ops[0].recipe is None
    assert [f.kind for f in analysis.findings if f.kind == "fallback"] == ["fallback"]
    assert analysis.shares.memcpy == pytest.approx(100 / 1000)
    assert analysis.shares.compute == pytest.approx(200 / 1000)


def test_bad_and_bare_traces(tmp_path):
    bare = tmp_path / "bare.json"
    bare.write_text(json.dumps([_event("aten::mm", "cpu_op", 0, 10), {"ph": "M", "name": "thread_name", "pid": 1,
                                                                      "tid": 1, "args": {"name": "main"}}]))
    columns = read_columns(bare)
    assert len(columns.ts) == 1 and columns.thread_names == {(1, 1): "main"}
    broken = tmp_path / "broken.json.gz"
    broken.write_bytes(gzip.compress(b'{"traceEvents": [{"ph": "X", '))
    with pytest.raises(TraceError, match="not a JSON trace"):
        analyze_profile([broken])
    result = CliRunner().invoke(__import__("harness.cli", fromlist=["app"]).app, ["profile", "analyze", str(broken)])
    assert result.exit_code != 0 and re.search("not a JSON trace", str(result.exception) + result.output)


def test_files_in_a_directory_that_are_no_traces_are_named(tmp_path):
    """An empty or non-JSON file among a directory's traces is said as such (not two files
    "both rank PP0"); a directory of JSON that holds no trace events names the files."""
    junk, side = tmp_path / "junk", tmp_path / "side"
    junk.mkdir()
    side.mkdir()
    (junk / "empty.json").write_bytes(b"")
    (junk / "x.json").write_text("hello\n")
    with pytest.raises(TraceError, match="empty.json: not a JSON trace: the file is empty"):
        analyze_profile([junk])
    (junk / "empty.json").unlink()
    with pytest.raises(TraceError, match="x.json: not a JSON trace: it does not parse as JSON"):
        analyze_profile([junk])
    (side / "m.json").write_text('{"a": 1}')
    with pytest.raises(HarnessError, match="no .json or .json.gz traces in the directory: m.json holds JSON but no trace events"):
        analyze_profile([side])


def test_op_names_lose_their_overload():
    assert normalize_op("aten::silu.out") == "silu"
    assert normalize_op("torch.ops.sgl_kernel.rmsnorm.default") == "rmsnorm"
    assert normalize_op("xdev_ops.rms_norm") == "rmsnorm"
    assert normalize_op("sgl_kernel::silu_and_mul") == "siluandmul"


def test_a_device_without_device_events_still_shows_its_fallback(tmp_path):
    # A PrivateUse1 device with no profiler plugin: only its dispatch on the host is traced; its
    # copies show they cross a device boundary by the `_copy_from` copy_ redispatches to (issue 37:
    # the same events without it are a CPU-only trace's dtype conversions, no fallback).
    events = [
        _event("aten::mm", "cpu_op", 0, 50),
        _event("aten::silu", "cpu_op", 100, 300),
        _event("aten::_to_copy", "cpu_op", 110, 40), _event("aten::copy_", "cpu_op", 112, 30),
        _event("aten::_copy_from", "cpu_op", 114, 20),
        _event("aten::silu", "cpu_op", 160, 100),
        _event("aten::copy_", "cpu_op", 300, 50), _event("aten::_copy_from", "cpu_op", 305, 40),
    ]
    (tmp_path / "toy.json").write_text(json.dumps({"traceEvents": events}))
    analysis = analyze_profile([tmp_path])
    assert analysis.host_is_device and [f.op for f in analysis.fallback_ops] == ["silu"]
    declared = TraceNaming(device_categories=["cpu_op"])  # the CPU is the device: nothing falls back
    assert analyze_profile([tmp_path], declared).fallback_ops == []


def test_on_a_device_a_layer_costs_the_device_time_it_launched(tmp_path):
    # Two CUDA-like ranks: each layer's host frame is 10 µs of launching, its kernel 100 µs.
    correlation = iter(range(1, 100))

    def layer(number, start):
        link = next(correlation)
        return [_event(f"nn.Module: DecoderLayer_{number}", "python_function", start, 10),
                _event("cudaLaunchKernel", "cuda_runtime", start + 2, 5, correlation=link),
                _event("gemm_kernel", "kernel", start + 20, 100, tid=7, correlation=link)]

    first = [_event("ProfilerStep#0", "user_annotation", 0, 500), *layer(0, 10),
             _event("ncclDevKernel_SendRecv(ncclDevComm*)", "kernel", 130, 370, tid=9)]  # the token from PP1
    second = [_event("ProfilerStep#0", "user_annotation", 0, 500),
              _event("ncclDevKernel_SendRecv(ncclDevComm*)", "kernel", 0, 130, tid=9),  # waits for PP0
              *layer(0, 130), *layer(1, 240), *layer(2, 350)]
    for pp, events in enumerate((first, second)):
        (tmp_path / f"gpu-TP-0-PP-{pp}.trace.json").write_text(json.dumps({"traceEvents": events}))
    analysis = analyze_profile([tmp_path])
    assert not analysis.host_is_device
    assert analysis.balance.layer_ms == pytest.approx([0.1] * 4)
    assert analysis.balance.observed == [1, 3] and analysis.balance.proposed == [2, 2]
    assert [(e.waiter, e.waits_on) for e in analysis.wait_chain.edges] == [("PP0", "PP1"), ("PP1", "PP0")]
    assert analysis.wait_chain.root == "PP1" and analysis.slowest_stage == "PP1"


@pytest.mark.parametrize("runtime", ["CompiledFunction", "Torch-Compiled Region", "torch/_dynamo/eval_frame.py(632): _fn"])
def test_compile_time_is_what_happens_once_not_the_compiled_code_running_every_step(tmp_path, runtime):
    """Issue 37: a steady-state compiled model runs `CompiledFunction` (and its backward, a
    Torch-Compiled Region, Dynamo's per-call wrapper) in every step; that is execution. Compiling
    (Dynamo's `_compile`, Inductor's `compile_fx`) happens once: 5 ms in the first step here."""
    category = "python_function" if runtime.startswith("torch/") else "cpu_op"
    events = []
    for step in range(4):
        at = step * 10_000
        events.append(_event(f"ProfilerStep#{step}", "user_annotation", at, 9_000))
        if step == 0:
            events += [_event("torch/_dynamo/convert_frame.py(900): _compile", "python_function", at + 10, 5_000),
                       _event("torch/_inductor/compile_fx.py(1300): compile_fx", "python_function", at + 20, 4_000)]
        events += [_event(runtime, category, at + 6_000, 1_500), _event("CompiledFunctionBackward", "cpu_op", at + 7_600, 1_000)]
    (tmp_path / "run-TP-0.trace.json").write_text(json.dumps({"traceEvents": events}))
    assert analyze_profile([tmp_path]).compile_ms == pytest.approx(5.0)
    one = tmp_path / "one"
    one.mkdir()  # one step: nothing can recur, every matching event counts
    (one / "run-TP-0.trace.json").write_text(json.dumps({"traceEvents": events[:5]}))
    assert analyze_profile([one]).compile_ms == pytest.approx(5.0 + 2.5)


def test_a_profilers_side_files_beside_the_traces_are_not_ranks(tmp_path):
    """Issue 37: `cpu-time-PP-0.json` (a JSON object, no traceEvents) beside `run-PP-0.trace.json`
    is not a second rank 0; a file that is not JSON at all still is read, and refused, by name."""
    events = [_event("ProfilerStep#0", "user_annotation", 0, 1000), _event("aten::mm", "cpu_op", 10, 500)]
    (tmp_path / "run-TP-0-PP-0.trace.json").write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    (tmp_path / "cpu-time-TP-0-PP-0.json").write_text(json.dumps({"cpu_time_s": 12.5, "rank": 0}))
    assert analyze_profile([tmp_path]).sources == [str(tmp_path / "run-TP-0-PP-0.trace.json")]
    (tmp_path / "torn-TP-0-PP-1.trace.json").write_text("garbage, not a trace")
    with pytest.raises(TraceError, match="torn-TP-0-PP-1.trace.json: not a JSON trace"):
        analyze_profile([tmp_path])


def test_the_slowest_stage_is_named_with_the_stages_it_is_not_told_from():
    """Issue 37: on repeats of one run a slowest stage picked on a 1-3 % difference flips. A paired
    test over the steps says which stages the slowest is not told from."""
    from harness.evidence.profile_analysis import _slowest_ties

    clear = {"PP0": [10.0, 10.2, 9.9, 10.1, 10.0], "PP1": [14.0, 14.1, 13.8, 14.2, 14.0]}
    assert _slowest_ties("PP1", clear) == []
    noisy = {"PP0": [10.0, 10.4, 9.8, 10.3, 10.1], "PP1": [10.2, 10.1, 10.0, 10.4, 10.2]}  # 0.3 % apart, step to step
    assert _slowest_ties("PP1", noisy) == ["PP0"]
    assert _slowest_ties("PP1", {"PP0": [10.0, 10.0], "PP1": [14.0, 14.0]}) == ["PP0"]  # 2 steps: nothing to test on


def test_a_balance_plan_with_no_gain_proposes_nothing(tmp_path):
    from harness.evidence.profile_analysis import ProfileAnalysis, render_profile

    analysis = ProfileAnalysis.model_validate({
        "sources": [], "ranks": ["PP0", "PP1"], "host_is_device": True, "stages": [], "slowest_stage": "PP1",
        "slowest_ties": ["PP0"], "wait_chain": {"edges": [], "chain": [], "root": None, "blame_ms": {}},
        "balance": {"layer_ms": [1.0, 1.0], "fixed_ms": [0.0, 0.0], "observed": [1, 1], "proposed": [1, 1],
                    "observed_stage_ms": [1.0, 1.0], "proposed_stage_ms": [1.0, 1.0], "observed_slowest_ms": 1.0,
                    "proposed_slowest_ms": 1.0, "gain_share": 0.0},
        "findings": [], "threads": [], "shares": {"compute": 1.0, "memcpy": 0.0, "communication": 0.0, "idle": 0.0},
        "fallback_ops": [], "compile_ms": 0.0, "step_ms": {}, "op_step_ms": {}})
    text = render_profile(analysis)
    assert "**Balance plan**: none better: layers per stage 1-1 is already the best split" in text
    assert "(slowest: PP1, within noise of PP0: not told apart by a paired test over the steps)" in text
