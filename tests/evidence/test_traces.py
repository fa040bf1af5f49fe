"""Trace analysis on real torch.profiler traces (CPU), a synthetic device trace whose split is
computed by hand, the loopback engine's /start_profile trace, diffs, and bad input."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import httpx
import pytest
import torch
from torch.profiler import ProfilerActivity, profile

from harness.errors import HarnessError
from harness.evidence.traces import (
    TraceNaming,
    analyze_trace,
    diff_traces,
    load_trace,
    report_check,
    union_length,
    write_diff_evidence,
    write_trace_evidence,
)
from harness.record.checks import CheckStatus

HOST, DEVICE = 1, 0


def kernel(name: str, ts: float, dur: float, *, stream: int = 7, cat: str = "kernel",
           correlation: int | None = None) -> dict:
    args = {"stream": stream} | ({"correlation": correlation} if correlation is not None else {})
    return {"ph": "X", "cat": cat, "name": name, "pid": DEVICE, "tid": stream, "ts": ts, "dur": dur, "args": args}


def host(name: str, ts: float, dur: float, *, cat: str = "cpu_op", correlation: int | None = None) -> dict:
    args = {"correlation": correlation} if correlation is not None else {}
    return {"ph": "X", "cat": cat, "name": name, "pid": HOST, "tid": 1, "ts": ts, "dur": dur, "args": args}


def synthetic_trace() -> dict:
    """Two streams on device 0 over the window [0, 50) µs.

    stream 7: gemm [0,10) and [5,15) overlap; nccl [20,30); HtoD copy [28,34) overlaps nccl by 2.
    stream 8: DtoH copy [10,22); xccl all_gather [40,50).
    """
    return {"traceEvents": [
        kernel("sm90_gemm", 0, 10, correlation=1),
        kernel("sm90_gemm", 5, 10),  # linked to its launch by flow events only
        kernel("ncclDevKernel_AllReduce_Sum_bf16_RING_LL", 20, 10, correlation=3),
        kernel("Memcpy HtoD (Pinned -> Device)", 28, 6, cat="gpu_memcpy"),
        kernel("Memcpy DtoH (Device -> Pinned)", 10, 12, stream=8, cat="gpu_memcpy"),
        kernel("xccl::all_gather_bf16", 40, 10, stream=8),
        host("aten::matmul", -10, 20),
        host("aten::mm", -6, 8),
        host("cudaLaunchKernel", -5, 2, cat="cuda_runtime", correlation=1),
        host("cudaLaunchKernel", 1, 2, cat="cuda_runtime"),
        host("cudaLaunchKernel", 10, 2, cat="cuda_runtime", correlation=3),
        {"ph": "s", "id": 2, "pid": HOST, "tid": 1, "ts": 1, "cat": "ac2g", "name": "ac2g"},
        {"ph": "f", "id": 2, "pid": DEVICE, "tid": 7, "ts": 5, "cat": "ac2g", "name": "ac2g", "bp": "e"},
        {"ph": "M", "name": "process_name", "pid": DEVICE, "tid": 0, "args": {"name": "cuda 0"}},
    ]}


def split_of(report, stream: str) -> dict[str, float]:
    row = next(r for r in report.split if r.stream == stream)
    return {"compute": row.compute_us, "memcpy": row.memcpy_us, "communication": row.communication_us,
            "idle": row.idle_us, "window": row.window_us}


def test_union_length_counts_overlaps_once():
    assert union_length([0, 5, 20], [10, 15, 30]) == 25
    assert union_length([0, 2], [10, 3]) == 10  # nested
    assert union_length([], []) == 0


def test_synthetic_device_trace_split_by_hand():
    report = analyze_trace(synthetic_trace())

    # stream 7: comm [20,30)=10; copy [30,34)=4 beyond the comm; compute [0,15)=15; idle 50-29
    assert split_of(report, "7") == {"compute": 15, "memcpy": 4, "communication": 10, "idle": 21, "window": 50}
    # stream 8: comm [40,50)=10; copy [10,22)=12; idle 50-22
    assert split_of(report, "8") == {"compute": 0, "memcpy": 12, "communication": 10, "idle": 28, "window": 50}
    # all streams: comm 20; comm∪copy = [10,34)+[40,50) = 34 → copy 14; busy [0,34)+[40,50) = 44
    assert split_of(report, "all") == {"compute": 10, "memcpy": 14, "communication": 20, "idle": 6, "window": 50}

    kinds = {k.name: k.kind for k in report.top_kernels}
    assert kinds["xccl::all_gather_bf16"] == "communication"
    assert kinds["Memcpy DtoH (Device -> Pinned)"] == "memcpy"
    assert report.top_kernels[0].name == "sm90_gemm" and report.top_kernels[0].count == 2

    # launch -> kernel start: 0-(-5)=5 (args), 5-1=4 (flow events), 20-10=10 (args)
    gaps = report.launch_gaps
    assert (gaps.launches, gaps.unmatched) == (3, 0)
    assert (gaps.median_us, gaps.max_us) == (5, 10)
    assert gaps.worst[0]["kernel"].startswith("ncclDevKernel")

    operators = {o.name: o for o in report.top_operators}
    assert operators["aten::matmul"].self_us == 12 and operators["aten::matmul"].total_us == 20
    assert operators["aten::mm"].self_us == 8
    assert "cudaLaunchKernel" not in operators  # runtime calls are not operators


def test_naming_override_for_a_device_with_other_names():
    trace = {"traceEvents": [
        {"ph": "X", "cat": "xdev_kernel", "name": "xdev::gemm", "pid": 3, "tid": 1, "ts": 0, "dur": 6},
        {"ph": "X", "cat": "xdev_kernel", "name": "xlink_reduce", "pid": 3, "tid": 1, "ts": 6, "dur": 4},
        {"ph": "X", "cat": "xdev_dma", "name": "h2d", "pid": 3, "tid": 2, "ts": 0, "dur": 2},
    ]}
    assert analyze_trace(trace).device_events == 0  # CUDA names find nothing here

    naming = TraceNaming.model_validate({"device_categories": ["xdev_kernel", "xdev_dma"],
                                         "memcpy_categories": ["xdev_dma"],
                                         "communication_patterns": [r"^xlink_"]})
    report = analyze_trace(trace, naming)
    # across streams the copy [0,2) overlaps the gemm [0,6): copies win over compute there
    assert split_of(report, "all") == {"compute": 4, "memcpy": 2, "communication": 4, "idle": 0, "window": 10}
    assert split_of(report, "1") == {"compute": 6, "memcpy": 0, "communication": 4, "idle": 0, "window": 10}
    assert split_of(report, "2") == {"compute": 0, "memcpy": 2, "communication": 0, "idle": 8, "window": 10}


def test_naming_rejects_a_bad_regex():
    with pytest.raises(ValueError, match="communication_patterns: invalid regex"):
        TraceNaming(communication_patterns=["nccl("])


def profile_cpu(path: Path, *, with_relu: bool, iterations: int = 3) -> Path:
    a, b = torch.randn(32, 32), torch.randn(32, 32)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(iterations):
            c = a @ b
            if with_relu:
                c = torch.relu(c)
    prof.export_chrome_trace(str(path))
    return path


def test_real_cpu_profiler_trace_json_and_gz(tmp_path):
    plain = profile_cpu(tmp_path / "cpu.json", with_relu=True)
    packed = tmp_path / "cpu.json.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))

    reports = [analyze_trace(load_trace(path)) for path in (plain, packed)]
    assert reports[0].model_dump(exclude={"source"}) == reports[1].model_dump(exclude={"source"})
    report = reports[0]
    operators = {o.name: o for o in report.top_operators}
    assert operators["aten::mm"].count == 3 and operators["aten::relu"].count == 3
    assert operators["aten::matmul"].total_us >= operators["aten::mm"].total_us
    assert all(o.self_us <= o.total_us + 1e-6 for o in report.top_operators)
    assert report.device_events == 0 and report.split == []
    assert "no device events" in report.notes[0]

    write_trace_evidence(analyze_trace(load_trace(packed), source=str(packed)), tmp_path / "evidence")
    check = report_check(report, [])
    assert check.status is CheckStatus.inconclusive and "no device events" in check.reason
    summary = json.loads((tmp_path / "evidence" / "trace_summary.json").read_text())
    assert summary["top_operators"][0]["name"] == report.top_operators[0].name
    assert "| aten::mm |" in (tmp_path / "evidence" / "trace_summary.md").read_text()


def test_diff_of_two_real_traces_names_new_operators(tmp_path):
    before = load_trace(profile_cpu(tmp_path / "before.json", with_relu=False))
    after = load_trace(profile_cpu(tmp_path / "after.json", with_relu=True))
    diff = diff_traces(before, after, before_name="matmul", after_name="matmul+relu")
    statuses = {d.name: d.status for d in diff.operators}
    assert statuses["aten::relu"] == "new"
    assert statuses["aten::mm"] == "changed"


def test_diff_of_device_traces_finds_new_vanished_and_slower_kernels(tmp_path):
    before = synthetic_trace()
    after = {"traceEvents": [
        kernel("sm90_gemm", 0, 30),  # 20 µs slower in total (was 10 + 10)
        kernel("ncclDevKernel_AllReduce_Sum_bf16_RING_LL", 30, 10),
        kernel("gemm_rmsnorm_fused", 40, 5),
    ]}
    diff = diff_traces(before, after)
    by_name = {d.name: d for d in diff.kernels}
    assert by_name["sm90_gemm"].delta_us == 10 and by_name["sm90_gemm"].status == "changed"
    assert diff.new_kernels == ["gemm_rmsnorm_fused"]
    assert set(diff.vanished_kernels) == {"Memcpy DtoH (Device -> Pinned)", "Memcpy HtoD (Pinned -> Device)",
                                          "xccl::all_gather_bf16"}
    # all streams: before compute 10 / memcpy 14 / comm 20 / idle 6; after 35 / 0 / 10 / 0
    assert diff.split_delta_us == {"compute": 25, "memcpy": -14, "communication": -10, "idle": -6}
    json_path, md_path = write_diff_evidence(diff, tmp_path)
    assert json.loads(json_path.read_text())["new_kernels"] == ["gemm_rmsnorm_fused"]
    assert "| gemm_rmsnorm_fused | new |" in md_path.read_text()


def test_loopback_profile_trace_through_the_http_surface(loopback_server, tmp_path):
    trace_dir = tmp_path / "traces"
    with loopback_server("--platform", "xdev") as server, httpx.Client(timeout=10) as client:
        started = client.post(f"{server.base_url}/start_profile", json={"output_dir": str(trace_dir)})
        assert started.status_code == 200, started.text
        for prompt in ("one", "two"):
            client.post(f"{server.base_url}/v1/completions",
                        json={"model": server.model, "prompt": prompt, "max_tokens": 4})
        assert client.post(f"{server.base_url}/stop_profile").status_code == 200
    (trace_path,) = trace_dir.glob("*.trace.json.gz")

    xdev = TraceNaming(runtime_categories=["privateuse1_runtime"], launch_patterns=[r"^xdev\w*Launch|Async$"])
    report = analyze_trace(load_trace(trace_path), xdev, source=str(trace_path))
    check = report_check(report, [])
    assert check.status is CheckStatus.passed, check.label()
    kinds = {k.kind for k in report.top_kernels}
    assert kinds == {"compute", "memcpy", "communication"}  # xccl all-reduce counted as communication
    whole = split_of(report, "all")
    assert whole["compute"] > 0 and whole["idle"] > 0
    assert sum(whole[k] for k in ("compute", "memcpy", "communication", "idle")) == pytest.approx(whole["window"])
    assert report.launch_gaps.launches > 0 and report.launch_gaps.unmatched == 0


def test_missing_and_corrupt_traces_are_clear(tmp_path):
    missing = tmp_path / "nope.trace.json.gz"
    with pytest.raises(HarnessError, match="trace not found: .*nope.trace.json.gz"):
        load_trace(missing)

    truncated = tmp_path / "cut.trace.json.gz"
    truncated.write_bytes(gzip.compress(json.dumps(synthetic_trace()).encode())[:40])
    with pytest.raises(HarnessError, match="cut.trace.json.gz: cannot read the trace"):
        load_trace(truncated)

    garbage = tmp_path / "garbage.json"
    garbage.write_text("{not json")
    with pytest.raises(HarnessError, match="garbage.json: not a JSON trace"):
        load_trace(garbage)

    wrong_shape = tmp_path / "shape.json"
    wrong_shape.write_text(json.dumps({"events": []}))
    with pytest.raises(HarnessError, match="no traceEvents list"):
        load_trace(wrong_shape)

    empty = tmp_path / "empty.json"
    empty.write_text(json.dumps({"traceEvents": []}))
    check = report_check(analyze_trace(load_trace(empty)), [])
    assert check.status is CheckStatus.failed and "no complete" in check.reason
