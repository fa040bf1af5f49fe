"""Issue 37 items 3, 4 (the wait chain) and 5: CPU fallbacks by PyTorch's dispatch signature on
three spellings of a trace and on real traces (an H200 run with PyTorch's own cpu_fallback,
harness.testing.fallback_trace; HolisticTraceAnalysis' CUDA and CPU-only traces); a wait chain
that counts time blocked in sends, on simulated 2- and 3-stage gloo- and NCCL-shaped pipelines
whose slowest stage is known; non-trace JSON beside traces and naming hints."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from harness.evidence.fallback_signature import scan_fallbacks
from harness.evidence.profile_analysis import analyze_profile
from harness.evidence.trace_stream import read_columns, read_header
from harness.evidence.traces import TraceNaming

DATA = Path(__file__).parent / "data" / "fallback"
# HolisticTraceAnalysis' real traces (MIT): the few shipped with the tests, and where this machine has it, the set
REAL = [Path(__file__).parents[1] / "fixtures" / "real-traces", Path("/work/shared/real-traces")]
_FOUND = {p.relative_to(root).as_posix(): p for root in reversed(REAL)
          for p in sorted(root.glob("*/*.json.gz")) + sorted(root.glob("*/*/*.json.gz"))}
GPU_TRACES = [p for name, p in sorted(_FOUND.items()) if not name.startswith("cpu_only/")]
CPU_ONLY = [p for name, p in sorted(_FOUND.items()) if name.startswith("cpu_only/")]


def write_trace(path: Path, events: list[dict], **header) -> Path:
    """A Kineto-style Chrome trace (`{..header, "traceEvents": [...]}`), gzip when the name ends in .gz."""
    text = json.dumps({"schemaVersion": 1, **header, "traceEvents": events})
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.name.endswith(".gz"):
        path.write_bytes(gzip.compress(text.encode()))
    else:
        path.write_text(text)
    return path


def event(name: str, cat: str, ts: float, dur: float, tid: int = 1, **args) -> dict:
    return {"ph": "X", "name": name, "cat": cat, "pid": 1, "tid": tid, "ts": ts, "dur": dur, "args": args}


class _Host:
    """Builds one host thread's nested operators in time order: `op(name, dur, inside)` places an
    operator at the cursor with `inside` (a list of builders) laid out in it."""

    def __init__(self) -> None:
        self.events: list[dict] = []
        self.links = iter(range(1, 10_000))

    def op(self, name: str, dur: float, *inside, cat: str = "cpu_op"):
        def place(at: float) -> float:
            self.events.append(event(name, cat, at, dur))
            cursor = at + 1
            for child in inside:
                cursor = child(cursor) + 1
            assert cursor <= at + dur, name
            return at + dur
        return place

    def runtime(self, name: str, device: str | None, device_cat: str, runtime_cat: str = "cuda_runtime"):
        """A runtime call, and the device event it enqueues (linked by correlation) when `device`."""
        def place(at: float) -> float:
            link = next(self.links)
            self.events.append(event(name, runtime_cat, at, 5, correlation=link))
            if device:
                self.events.append(event(device, device_cat, at + 20, 30, tid=7, correlation=link))
            return at + 5
        return place

    def lay(self, *builders, start: float = 10.0) -> list[dict]:
        cursor = start
        for build in builders:
            cursor = build(cursor) + 50
        return [event("ProfilerStep#0", "user_annotation", 0, cursor + 100), *self.events]


def _to(h: _Host, copy: list) -> object:
    """`aten::to` → `_to_copy` → `copy_`, with `copy` inside the copy_."""
    return h.op("aten::to", 60, h.op("aten::_to_copy", 55, h.op("aten::copy_", 50, *copy)))


# --- three spellings of one fallback (silu/gelu/tanh) beside ops that ran on the device --------------------------


def _spelling_to_cpu_child(h: _Host) -> tuple[list[dict], TraceNaming]:
    """PyTorch's cpu_fallback on a plugin device without a profiler plugin: `_to_cpu` with a copy
    per tensor, the CPU kernel redispatched (no event), `_copy_from_and_resize` back; host only."""
    crossing = [h.op("aten::_copy_from", 10)]
    silu = h.op("aten::silu.out", 400,
                h.op("aten::_to_cpu", 140, _to(h, crossing), _to(h, crossing)),
                h.op("aten::_copy_from_and_resize", 40, h.op("aten::copy_", 30, *crossing)))
    clone = h.op("aten::clone", 80, h.op("aten::empty_strided", 5), h.op("aten::copy_", 50, *crossing))
    scatter = h.op("aten::slice_scatter", 200, h.op("aten::clone", 80, h.op("aten::copy_", 50, *crossing)),
                   h.op("aten::slice", 5), h.op("aten::copy_", 50, *crossing))
    return h.lay(h.op("aten::add", 30), silu, clone, scatter, h.op("aten::mean", 30)), TraceNaming()


def _spelling_to_and_copy_children(h: _Host) -> tuple[list[dict], TraceNaming]:
    """A fallback written by hand on CUDA: `.cpu()` (aten::to/_to_copy/copy_, Memcpy DtoH), the CPU
    kernel dispatched again, `.to(device)` (Memcpy HtoD)."""
    def memcpy(kind: str) -> list:
        return [h.runtime("cudaMemcpyAsync", f"Memcpy {kind}", "gpu_memcpy")]

    gelu = h.op("aten::gelu", 300, _to(h, memcpy("DtoH (Device -> Pageable)")), h.op("aten::gelu", 20),
                _to(h, memcpy("HtoD (Pageable -> Device)")))
    add = h.op("aten::add", 30, h.runtime("cudaLaunchKernel", "elementwise_kernel", "kernel"))
    scatter = h.op("aten::slice_scatter", 200,  # device-to-device copies only: no fallback
                   h.op("aten::clone", 80, h.op("aten::copy_", 50, *memcpy("DtoD (Device -> Device)"))),
                   h.op("aten::copy_", 50, *memcpy("DtoD (Device -> Device)")))
    item = h.op("aten::item", 90, h.op("aten::_local_scalar_dense", 80, *memcpy("DtoH (Device -> Pageable)")))
    nonzero = h.op("aten::nonzero", 200, h.runtime("cudaLaunchKernel", "nonzero_kernel", "kernel"),
                   *memcpy("DtoH (Device -> Pageable)"), *memcpy("HtoD (Pageable -> Device)"))
    return h.lay(add, gelu, scatter, item, nonzero), TraceNaming()


def _spelling_device_copies_only(h: _Host) -> tuple[list[dict], TraceNaming]:
    """A plugin device with a profiler plugin: no host copy operators, only its runtime's copy calls
    and its DMA copies on the device (named by the default `dma.*copy`); its kernels linked by
    correlation from a runtime call that is not named a launch."""
    def dma(kind: str) -> object:
        return h.runtime("xdevMemcpyAsync", f"dma copy {kind}", "xdev_dma", "privateuse1_runtime")

    tanh = h.op("xdev_ops::tanh", 300, dma("D2H"), h.op("aten::tanh", 20), dma("H2D"))
    mul = h.op("aten::mul", 100, dma("D2H"), h.runtime("xdevEnqueue", "xdev_mul_kernel", "xdev_kernel",
                                                       "privateuse1_runtime"), dma("H2D"))
    clone = h.op("aten::clone", 100, dma("D2D"), dma("D2D"))
    naming = TraceNaming(device_categories=["xdev_kernel", "xdev_dma"], memcpy_categories=[])
    return h.lay(mul, tanh, clone), naming


@pytest.mark.parametrize("spelling, expected", [
    (_spelling_to_cpu_child, [("silu", 1, 3)]),
    (_spelling_to_and_copy_children, [("gelu", 1, 2)]),
    (_spelling_device_copies_only, [("tanh", 1, 2)]),
])
def test_a_fallback_is_the_outer_op_by_its_dispatch_signature_in_every_spelling(tmp_path, spelling, expected):
    events, naming = spelling(_Host())
    write_trace(tmp_path / "run-TP-0.trace.json", events)
    analysis = analyze_profile([tmp_path], naming)
    assert [(f.op, f.count, f.copies) for f in analysis.fallback_ops] == expected
    assert [f.summary.split(":")[0] for f in analysis.findings if f.kind == "fallback"] == [expected[0][0]]
    assert not any("not applicable" in n for n in analysis.notes)


def test_where_no_device_event_is_linked_a_kernel_inside_the_op_is_its_own(tmp_path):
    """A device profiler that links none of its events to the host (no correlation ids): a device
    kernel that starts inside an op is the op's, so `add` ran on the device; `silu` did not."""
    def call(name: str, at: float, kernel: bool) -> list[dict]:
        out = [event(name, "cpu_op", at, 300), event("aten::to", "cpu_op", at + 10, 50),
               event("aten::_copy_from", "cpu_op", at + 20, 30), event(name, "cpu_op", at + 100, 50),
               event("aten::copy_", "cpu_op", at + 200, 50), event("aten::_copy_from", "cpu_op", at + 210, 30)]
        return out + ([event(f"xdev_{name[6:]}_kernel", "xdev_kernel", at + 120, 20, tid=7)] if kernel else [])

    write_trace(tmp_path / "run-TP-0.trace.json", [event("ProfilerStep#0", "user_annotation", 0, 1000),
                                                   *call("aten::add", 10, True), *call("aten::silu", 500, False)])
    analysis = analyze_profile([tmp_path], TraceNaming(device_categories=["xdev_kernel"]))
    assert [f.op for f in analysis.fallback_ops] == ["silu"]


def test_the_same_copies_on_a_trace_with_no_device_are_not_applicable(tmp_path):
    """A CPU-only trace: dtype conversions inside an op (SDPA's math path) look like copies out and
    back, but no device is there to fall back from."""
    h = _Host()
    sdpa = h.op("aten::_scaled_dot_product_attention_math", 400, _to(h, []), h.op("aten::bmm", 20), _to(h, []))
    write_trace(tmp_path / "cpu-TP-0.trace.json", h.lay(sdpa), deviceProperties=[])
    analysis = analyze_profile([tmp_path])
    assert analysis.fallback_ops == []
    assert [n for n in analysis.notes if n.startswith("CPU fallbacks not applicable on PP0: the trace shows no device")]
    declared = analyze_profile([tmp_path], TraceNaming(device_categories=["cpu_op"]))
    assert any("naming declares the host the device" in n for n in declared.notes)


def test_the_repository_toy_device_falls_back_on_silu_only(tmp_path):
    """harness.testing.toy_device: a real PrivateUse1 device in Python whose silu takes the CPU
    fallback path; every other op (add, mean, mul, pow, linear, softmax, ...) runs its own kernel."""
    pytest.importorskip("torch")
    from harness.testing.toy_device import profile

    trace = profile(tmp_path, steps=2)
    analysis = analyze_profile([trace])
    assert [(f.op, f.count) for f in analysis.fallback_ops] == [("silu", 2 * 2)]  # two blocks, two steps


# --- real traces --------------------------------------------------------------------------------------------------


def _names(path: Path) -> list[tuple[str, str]]:
    with gzip.open(path) as handle:
        return [(e.get("cat"), e.get("name")) for e in json.load(handle)["traceEvents"] if e.get("ph") == "X"]


def test_a_real_cuda_run_with_pytorchs_cpu_fallback_and_device_ops():
    """An H200 run (harness.testing.fallback_trace): aten::silu.out through at::native::cpu_fallback,
    gelu by hand, a custom op with runtime copies only — 20 calls each — beside 20 slice_scatter
    (Memcpy DtoD) and add/mul/pow/clone/mean/item, which launch their own kernels or copy one way."""
    trace = DATA / "cuda-TP-0.trace.json.gz"
    names = _names(trace)
    assert names.count(("cpu_op", "aten::slice_scatter")) == 20 and ("cpu_op", "aten::_to_cpu") in names
    assert ("gpu_memcpy", "Memcpy DtoD (Device -> Device)") in names
    analysis = analyze_profile([trace])
    assert sorted((f.op, f.count, f.copies) for f in analysis.fallback_ops) == [
        ("cputanh", 20, 40), ("gelu", 20, 40), ("silu", 20, 60)]
    # the same run profiled with CPU activity only: cpu_fallback's _to_cpu / _copy_from_and_resize
    # still say so; the hand-written one's copies name no direction and are not told from a device's
    host_only = analyze_profile([DATA / "cuda-host-TP-0.trace.json.gz"])
    assert [(f.op, f.count) for f in host_only.fallback_ops] == [("silu", 20)]


@pytest.mark.skipif(not GPU_TRACES, reason="no real GPU trace of HTA's here")
@pytest.mark.parametrize("trace", GPU_TRACES, ids=lambda p: p.parent.name)
def test_real_cuda_and_rocm_traces_have_no_fallback(trace):
    scan = scan_fallbacks("r", read_columns(trace), TraceNaming(), read_header(trace))
    assert scan.not_applicable is None and scan.ops == []


@pytest.mark.skipif(not CPU_ONLY, reason="no real CPU-only trace of HTA's here")
def test_a_real_cpu_only_trace_says_not_applicable():
    analysis = analyze_profile(CPU_ONLY)
    assert analysis.fallback_ops == []
    assert any(n.startswith("CPU fallbacks not applicable") and "shows no device" in n for n in analysis.notes)


# --- the wait chain counts time blocked in sends ------------------------------------------------------------------


def _simulate(work_us: list[float], microbatches: int, steps: int, transfer_us: float) -> list[list[tuple]]:
    """A synchronous pipeline: stage p receives each microbatch from p-1, works `work_us[p]` (+ a few
    µs that differ step to step), sends it to p+1 (blocking until p+1 takes it, then `transfer_us`
    for the data; the token the last stage returns to stage 0 after each step takes 5 µs). Returns
    each stage's timeline: ("work"|"send"|"recv", start, end, peer) and ("step", s, e, None)."""
    stages = len(work_us)
    programs = []
    for p in range(stages):
        ops: list[tuple] = []
        for step in range(steps):
            ops.append(("step_start",))
            for _ in range(microbatches):
                if p:
                    ops.append(("recv", p - 1))
                ops.append(("work", work_us[p] + 7 * ((step * 3 + p) % 5)))
                if p < stages - 1:
                    ops.append(("send", p + 1))
            if p == stages - 1:
                ops.append(("send", 0))
            if p == 0:
                ops.append(("recv", stages - 1))
            ops.append(("step_end",))
        programs.append(ops)
    clock, position = [0.0] * stages, [0] * stages
    timeline: list[list[tuple]] = [[] for _ in range(stages)]
    step_start = [0.0] * stages
    while any(position[p] < len(programs[p]) for p in range(stages)):
        for p in range(stages):  # run each stage up to its next send or receive
            while position[p] < len(programs[p]) and programs[p][position[p]][0] not in ("send", "recv"):
                op = programs[p][position[p]]
                if op[0] == "work":
                    timeline[p].append(("work", clock[p], clock[p] + op[1], None))
                    clock[p] += op[1]
                elif op[0] == "step_start":
                    step_start[p] = clock[p]
                else:
                    timeline[p].append(("step", step_start[p], clock[p], None))
                position[p] += 1
        matched = False
        for p in range(stages):  # a send meets the receive it is for: both end once the data has moved
            if position[p] < len(programs[p]) and programs[p][position[p]][0] == "send":
                q = programs[p][position[p]][1]
                if position[q] < len(programs[q]) and programs[q][position[q]] == ("recv", p):
                    done = max(clock[p], clock[q]) + (transfer_us if q else 5)
                    timeline[p].append(("send", clock[p], done, q))
                    timeline[q].append(("recv", clock[q], done, p))
                    clock[p] = clock[q] = done
                    position[p] += 1
                    position[q] += 1
                    matched = True
        assert matched or all(position[p] == len(programs[p]) for p in range(stages)), "deadlock"
    return timeline


def _pipeline_traces(root: Path, work_us: list[float], shape: str, transfer_us: float) -> Path:
    """Each stage's timeline as a trace: gloo-shaped (host as the device: aten ops, `gloo:send` /
    `gloo:recv` spans and c10d ops) or NCCL-shaped (kernels; one SendRecv kernel per transfer inside
    a `nccl:send 0->1` / `nccl:recv 1<-0` annotation on its stream)."""
    for p, timeline in enumerate(_simulate(work_us, microbatches=4, steps=5, transfer_us=transfer_us)):
        events, number = [], 0
        for kind, start, end, peer in timeline:
            if kind == "step":
                events.append(event(f"ProfilerStep#{number}", "user_annotation", start, end - start))
                number += 1
            elif kind == "work":
                events.append(event("aten::mm", "cpu_op", start, end - start) if shape == "gloo"
                              else event("gemm_kernel", "kernel", start, end - start, tid=7))
            elif shape == "gloo":
                op = "c10d::send" if kind == "send" else "c10d::recv_"
                events += [event(op, "cpu_op", start, 2), event(f"gloo:{kind}", "user_annotation", start, end - start)]
            else:
                title = f"nccl:send {p}->{peer}" if kind == "send" else f"nccl:recv {p}<-{peer}"
                events += [event(title, "gpu_user_annotation", start, end - start, tid=9),
                           event("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", "kernel", start,
                                 end - start, tid=9)]
        write_trace(root / f"{shape}-TP-0-PP-{p}.trace.json", events)
    return root


@pytest.mark.parametrize("shape", ["gloo", "nccl"])
@pytest.mark.parametrize("work_us, transfer_us, slowest", [
    ([1000, 3000], 1500, "PP1"),  # the case: stage 0 blocked in sends behind stage 1, named the root
    ([1000, 3000], 5, "PP1"),
    ([1000, 3000, 1000], 300, "PP1"),
    ([1000, 1000, 3000], 300, "PP2"),
    ([2500, 1000, 1000], 300, "PP0"),
])
def test_the_wait_chain_passes_send_blocked_time_to_the_stage_that_did_not_take_the_data(
        tmp_path, shape, work_us, transfer_us, slowest):
    """Issue 37: a stage blocked sending to the next one waits on it (NCCL: a SendRecv kernel in a
    `nccl:send` annotation is a send); time two stages wait on each other is the data moving, no
    one's work. The root is the slowest stage, whatever the shape."""
    analysis = analyze_profile([_pipeline_traces(tmp_path, work_us, shape, transfer_us)])
    assert analysis.slowest_stage == slowest
    assert analysis.wait_chain.root == slowest and analysis.wait_chain.chain[-1] == slowest
    blame = analysis.wait_chain.blame_ms
    assert max(blame, key=lambda stage: blame[stage]) == slowest
    edges = {(e.waiter, e.waits_on) for e in analysis.wait_chain.edges}
    for stage in range(int(slowest[2:])):  # before the slowest stage: blocked sending to the next stage
        assert (f"PP{stage}", f"PP{stage + 1}") in edges


# --- item 5: files that are not traces; names the naming does not know --------------------------------------------


def test_json_that_is_not_a_trace_beside_traces_is_skipped_with_a_note(tmp_path):
    write_trace(tmp_path / "run-TP-0-PP-0.trace.json", [event("ProfilerStep#0", "user_annotation", 0, 100),
                                                        event("aten::mm", "cpu_op", 10, 50)])
    (tmp_path / "cpu-time-PP-0.json").write_text(json.dumps({"cpu_time_s": 1.5}))
    (tmp_path / "metrics.json").write_text(json.dumps([1.0, 2.0, 3.0]))
    (tmp_path / "records-PP-1.json.gz").write_bytes(gzip.compress(json.dumps([{"step": 1, "ms": 2.0}]).encode()))
    (tmp_path / "README.md").write_text("# traces of run 7\n")
    analysis = analyze_profile([tmp_path])
    assert analysis.ranks == ["PP0"]
    skipped = [n for n in analysis.notes if "not a profiler trace" in n]
    assert [Path(n.split(":")[0]).name for n in skipped] == ["cpu-time-PP-0.json", "metrics.json",
                                                              "records-PP-1.json.gz"]


def test_a_device_whose_copies_the_naming_does_not_know_is_told_which_naming_to_set(tmp_path):
    def trace(copy_name: str) -> Path:
        run = tmp_path / copy_name.replace(" ", "_")
        write_trace(run / "dev-TP-0.trace.json", [
            event("ProfilerStep#0", "user_annotation", 0, 1000), event("xdev_gemm", "xdev_kernel", 10, 300, tid=7),
            event(copy_name, "xdev_kernel", 400, 100, tid=7)])
        return run

    naming = TraceNaming(device_categories=["xdev_kernel"], memcpy_categories=[])
    unknown = analyze_profile([trace("xdev sdma transfer")], naming)
    assert [n for n in unknown.notes if "set --naming memcpy_patterns" in n]
    known = analyze_profile([trace("xdev dma copy h2d")], naming)  # `*dma*copy*` is a copy by default
    assert not [n for n in known.notes if "memcpy_patterns" in n]
    assert known.shares.memcpy == pytest.approx(0.1)
