"""HTA's per-rank figures, the layout of the ranks (pipeline or not), stragglers and the critical
path across ranks (issue 37, items 1 and 2): on real NCCL / ROCm / CPU-only traces from HTA's own
test data (tests/fixtures/real-traces, MIT) against HTA 0.5.0's measured figures and an
independent pandas reading of HTA's definitions, and on multi-stream CUDA-shaped Kineto traces
written here."""

from __future__ import annotations

import gzip
import json
import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from harness.evidence.cross_rank import critical_path, find_stragglers
from harness.evidence.profile_analysis import analyze_profile, render_profile

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real-traces"
CONTROL = REAL / "trace_diff" / "control" / "control.json.gz"  # rank 3 of 8, NCCL beside compute
AMD = REAL / "amd_trace" / "mi250_minitoy_train_ROCm6_2_kineto.json.gz"
ALEXNET = REAL / "critical_path" / "alexnet" / "benchmark_result_2869224_1695835535_trace.json.gz"
CPU_ONLY = REAL / "cpu_only" / "rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"

# HTA 0.5.0's figures, measured once (2026-12-04) in a throwaway venv (`pip install
# HolisticTraceAnalysis==0.5.0`, pandas 3.1.1), each trace alone in a directory:
#   a = TraceAnalysis(trace_dir=d)  # include_last_profiler_step=False: all but the last step
#   a.get_temporal_breakdown(visualize=False); a.get_comm_comp_overlap(visualize=False)
#   a.get_gpu_kernel_breakdown(visualize=False, include_memory_kernels=True)
#   a.get_idle_time_breakdown(ranks=[rank], visualize=False)  # consecutive_kernel_delay=30
# with HTA_DISABLE_NS_ROUNDING=1 (HTA otherwise rounds fractional-µs timestamps; control's are whole
# µs, its figures are the same either way). µs.
HTA_CONTROL = {
    "idle": 62119.0, "compute": 234760.0, "non_compute": 86525.0, "kernel_time": 383404.0, "overlap_pctg": 47.03,
    "kernel_types": {"COMPUTATION": 151685, "COMMUNICATION": 69110, "COMPUTATION overlapping COMMUNICATION": 55152,
                     "COMPUTATION overlapping MEMORY": 20762, "MEMORY": 16328,
                     "COMPUTATION overlapping COMMUNICATION overlapping MEMORY": 7161,
                     "COMMUNICATION overlapping MEMORY": 1087},
    "idle_by_stream": {"21": (237710.0, 71.0, 0.0), "20": (346996.0, 621.0, 7470.0), "7": (102154.0, 14226.0, 32183.0),
                       "22": (271786.0, 1253.0, 0.0)},  # host wait, kernel wait, other
    "top": {"COMMUNICATION": {"ncclKernel_SendRecv": 105057.0, "ncclKernel_AllReduce": 27453.0},
            "MEMORY": {"Memcpy HtoD (Pinned -> Device)": 41998.0, "Memcpy DtoD (Device -> Device)": 2280.0,
                       "Memset (Device)": 1061.0, "Memcpy DtoH (Device -> Pageable)": 89.0},
            "COMPUTATION": {"void split_embedding_backward_codegen_rowwise_adagrad_unweighted_kernel_cta": 30284.0,
                            "void split_embedding_codegen_forward_unweighted_kernel": 12694.0,
                            "others": 138787.0}},
}
HTA_AMD = {"idle": 8762.8447617187, "compute": 110.881, "non_compute": 38.161, "kernel_time": 8911.8867617187,
           "host_wait_stream_0": 8762.84}


def figures_of(path: Path, window: str = "hta"):
    analysis = analyze_profile([path], window=window)
    (figures,) = analysis.rank_figures
    return figures


def test_htas_figures_on_a_real_nccl_rank_are_htas():
    """Issue 37: where NCCL overlaps compute on another stream, HTA counts it as compute (61 %
    here); harness's partition counts it as communication. Both are reported, HTA's by its own
    definitions and window, to the µs of HTA's own output."""
    f = figures_of(CONTROL)
    assert f.status == "ok" and f.window == "hta" and "all but the last step" in f.window_description
    assert f.span_ms * 1e3 == pytest.approx(HTA_CONTROL["kernel_time"], abs=0.01)
    assert f.compute_ms * 1e3 == pytest.approx(HTA_CONTROL["compute"], abs=0.01)
    assert f.non_compute_ms * 1e3 == pytest.approx(HTA_CONTROL["non_compute"], abs=0.01)
    assert f.idle_ms * 1e3 == pytest.approx(HTA_CONTROL["idle"], abs=0.01)
    assert round(100 * f.overlap_share, 2) == HTA_CONTROL["overlap_pctg"]
    assert {k.kind: round(k.ms * 1e3) for k in f.kernel_types} == HTA_CONTROL["kernel_types"]
    for stream in f.idle_breakdown:
        expected = HTA_CONTROL["idle_by_stream"][stream.stream]
        assert (stream.host_wait_ms * 1e3, stream.kernel_wait_ms * 1e3, stream.other_ms * 1e3) == pytest.approx(expected)
    assert {s.stream for s in f.idle_breakdown} == set(HTA_CONTROL["idle_by_stream"])
    for kind, expected in HTA_CONTROL["top"].items():
        totals = {k.name: k.total_ms * 1e3 for k in f.top_kernels[kind]}
        for prefix, total in expected.items():
            (name,) = [n for n in totals if n.startswith(prefix)]
            assert totals[name] == pytest.approx(total)
    assert len(f.top_kernels["COMPUTATION"]) == 11  # HTA's top 10 and 'others'
    # harness's own partition of the same rank: communication first, so compute is far less
    analysis = analyze_profile([CONTROL])
    assert analysis.shares.compute < f.compute_share - 0.15


def test_htas_figures_on_fractional_timestamps_and_without_steps():
    """A ROCm trace with fractional µs: HTA's figures to float precision. AlexNet has no step
    annotations: HTA keeps every kernel, and the steps window is the whole trace."""
    f = figures_of(AMD)
    assert f.span_ms * 1e3 == pytest.approx(HTA_AMD["kernel_time"], abs=1e-3)
    assert f.compute_ms * 1e3 == pytest.approx(HTA_AMD["compute"], abs=1e-3)
    assert f.non_compute_ms * 1e3 == pytest.approx(HTA_AMD["non_compute"], abs=1e-3)
    assert f.idle_ms * 1e3 == pytest.approx(HTA_AMD["idle"], abs=1e-3)
    assert f.overlap_share is None and f.communication_ms == 0  # no communication: no overlap figure
    assert f.idle_breakdown[0].host_wait_ms * 1e3 == pytest.approx(HTA_AMD["host_wait_stream_0"], abs=0.01)
    alexnet = figures_of(ALEXNET)
    assert "every kernel" in alexnet.window_description and alexnet.status == "ok"
    assert "no step annotations" in figures_of(ALEXNET, "steps").window_description
    # HTA: MEMORY 55,511 µs (no kernel of another type beside it); its compute also holds a
    # 7,000-character kernel name harness skips (over MAX_NAME_CHARS, said in the notes)
    assert {k.kind: round(k.ms * 1e3) for k in alexnet.kernel_types}["MEMORY"] == 55511
    assert any("skipped" in note for note in analyze_profile([ALEXNET]).notes)


# ------------------------------------------------------------------ HTA's definitions, read with pandas

_NCCL = re.compile(r"^nccl.*Kernel")  # hta/utils/utils.py is_comm_kernel
_MEMORY = re.compile(r"(^Memcpy)|(^Memset)|(^dma)")  # is_memory_kernel


def _merged(frame: pd.DataFrame) -> pd.DataFrame:
    """hta/utils/utils.py merge_kernel_intervals."""
    frame = frame.sort_values("ts")
    group = (frame["ts"] > frame["end"].shift().cummax()).cumsum()
    return frame.groupby(group).agg(ts=("ts", "min"), end=("end", "max"))


def _stream(value: object) -> int:
    """hta/utils/utils.py normalize_gpu_stream_numbers: a stream that is no int (ROCm's runtime
    events say '0x0') is -1, a host event."""
    try:
        return int(value)
    except ValueError:
        return -1


def _covered(frame: pd.DataFrame) -> float:
    return float((frame["end"] - frame["ts"]).sum())


def hta_by_pandas(path: Path, window: str) -> dict[str, float]:
    """HTA's temporal breakdown, overlap and idle breakdown, from the JSON with pandas, following
    HTA 0.5.0's code (not harness's): the window of Trace._filter_irrelevant_gpu_kernels, kernel
    types by HTA's regexes, merged intervals, and the per-stream gap rule."""
    with gzip.open(path) as handle:
        events = [e for e in json.load(handle)["traceEvents"] if e.get("ph") == "X" and len(e["name"]) <= 4096]
    frame = pd.DataFrame(events)
    args = frame["args"].apply(lambda a: a if isinstance(a, dict) else {})
    frame["stream"] = args.apply(lambda a: _stream(a.get("stream", -1)))
    frame["correlation"] = args.apply(lambda a: a.get("correlation", -1))
    frame["ts"] = frame["ts"] - frame["ts"].min()
    frame["end"] = frame["ts"] + frame["dur"]
    kernels = frame[frame["cat"].isin(["kernel", "gpu_memcpy", "gpu_memset"])].copy()
    steps = frame[frame["cat"].isin(["user_annotation", "gpu_user_annotation"])
                  & frame["name"].str.match(r"^ProfilerStep#\d+$")]
    if window == "hta":
        host_steps = steps[steps["cat"] == "user_annotation"]
        if host_steps["name"].nunique() >= 2:
            early = frame[(frame["stream"] == -1) & (frame["ts"] < host_steps["ts"].max())]
            kernels = kernels[kernels["correlation"].isin(early["correlation"])]
        span = kernels["end"].max() - kernels["ts"].min()
    else:
        low, high = (steps["ts"].min(), steps["end"].max()) if len(steps) else (frame["ts"].min(), frame["end"].max())
        kernels = kernels[(kernels["end"] > low) & (kernels["ts"] < high)]
        kernels = kernels.assign(ts=kernels["ts"].clip(low, high), end=kernels["end"].clip(low, high))
        span = high - low
    kind = kernels["name"].map(lambda n: "comm" if _NCCL.match(n) else "memory" if _MEMORY.match(n) else "compute")
    compute, comm = _merged(kernels[kind == "compute"]), _merged(kernels[kind == "comm"])
    busy = _covered(_merged(kernels))
    # CommunicationAnalysis.get_comm_comp_overlap: +1/-1 communication, +2/-2 compute, running == 3
    status = pd.concat([pd.DataFrame({"time": comm["ts"], "d": 1}), pd.DataFrame({"time": comm["end"], "d": -1}),
                        pd.DataFrame({"time": compute["ts"], "d": 2}), pd.DataFrame({"time": compute["end"], "d": -2})])
    status = status.sort_values("time", kind="stable").reset_index(drop=True)
    status["running"] = status["d"].cumsum()
    both = (status["time"].shift(-1) - status["time"])[status["running"] == 3].sum()
    # BreakdownAnalysis._analyze_idle_time_for_stream (launch: the host event with the correlation)
    launches = frame[(frame["stream"] == -1) & (frame["correlation"] >= 0)].drop_duplicates("correlation", keep="last")
    kernels = kernels.merge(launches[["correlation", "ts"]].rename(columns={"ts": "launch"}), on="correlation", how="left")
    kernels = kernels.sort_values(["stream", "ts"], kind="stable")
    previous = kernels.groupby("stream")["end"].shift(1)
    gap = kernels["ts"] - previous
    host = kernels["launch"] > previous
    kernel_wait = ~host & (gap < 30)
    return {"span": span, "compute": _covered(compute), "idle": span - busy, "non_compute": busy - _covered(compute),
            "overlap": both, "communication": _covered(comm), "host_wait": gap[host].sum(),
            "kernel_wait": gap[kernel_wait].sum(), "other": gap[~host & ~kernel_wait].sum()}


@pytest.mark.parametrize("window", ["hta", "steps"])
@pytest.mark.parametrize("path", [CONTROL, AMD], ids=["control", "amd"])
def test_htas_figures_match_htas_definitions_read_with_pandas(path, window):
    expected = hta_by_pandas(path, window)
    f = figures_of(path, window)
    assert f.window == window
    got = {"span": f.span_ms, "compute": f.compute_ms, "idle": f.idle_ms, "non_compute": f.non_compute_ms,
           "overlap": f.overlap_ms, "communication": f.communication_ms, "host_wait": f.host_wait_ms,
           "kernel_wait": f.kernel_wait_ms, "other": f.other_idle_ms}
    assert {k: v * 1e3 for k, v in got.items()} == pytest.approx(expected, abs=1e-3)
    assert f.compute_share + f.non_compute_share + f.idle_share == pytest.approx(1)


def test_a_cpu_only_trace_has_no_htas_figures_and_says_why():
    analysis = analyze_profile([CPU_ONLY])
    (f,) = analysis.rank_figures
    assert f.status == "not run" and "no events in the device categories" in f.reason
    assert analysis.layout.kind == "single"
    assert analysis.critical_path.status == "not run" and analysis.stragglers.stragglers == []
    assert [r.verdict for r in analysis.stragglers.ranks] == ["not run"]
    text = render_profile(analysis)
    assert "not run: no events in the device categories" in text and "Critical path across ranks**: not run" in text


def test_the_window_is_chosen_and_stated_on_the_command_line(tmp_path):
    from harness.cli import app

    shutil.copy(CONTROL, tmp_path / "control.json.gz")
    result = CliRunner().invoke(app, ["profile", "analyze", str(tmp_path), "--window", "hta", "--json"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.output)
    assert document["window"] == "hta" and document["rank_figures"][0]["window"] == "hta"
    steps = CliRunner().invoke(app, ["profile", "analyze", str(tmp_path)])
    assert steps.exit_code == 0 and "window: steps" in steps.output and "first to last step annotation" in steps.output
    assert CliRunner().invoke(app, ["profile", "analyze", str(tmp_path), "--window", "last"]).exit_code != 0


def test_one_trace_is_shown_by_its_global_rank_and_extra_runs_are_said(tmp_path):
    """A single trace whose number is its global rank (`distributedInfo.rank` 34) is `rank34` in
    stage PP0, not stage PP34; a second directory without --reference is not silently dropped."""
    from harness.cli import app

    analysis = analyze_profile([CPU_ONLY])
    assert analysis.ranks == ["rank34"] and [s.stage for s in analysis.stages] == ["PP0"]
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    shutil.copy(CPU_ONLY, first / CPU_ONLY.name)
    shutil.copy(CONTROL, second / "control.json.gz")
    result = CliRunner().invoke(app, ["profile", "analyze", str(first), str(second), "--json"])
    assert result.exit_code == 0, result.output
    notes = json.loads(result.output)["notes"]
    assert any("the other directory is read as repetitions" in n and str(second) in n for n in notes), notes


# ------------------------------------------------------------------ layouts, stragglers, critical path

STEP_US, STEPS = 10_000.0, 6


def kineto(rank: int, compute_us: list[float], sync_us: list[float], *, receive: bool = False) -> list[dict]:
    """One rank's CUDA-shaped Kineto events: per step a ProfilerStep annotation, kernels launched by
    cudaLaunchKernel on compute stream 7 for `compute_us[step]`, an NCCL all-to-all (`SendRecv`)
    kernel on stream 21 beside them, and an all-reduce on stream 20 from the end of the compute to
    `sync_us[step]` (every rank leaves it together). `receive`: a pipeline's receive first (host
    `nccl:recv` annotation and its device span)."""
    events: list[dict] = [{"ph": "M", "name": "thread_name", "pid": rank, "tid": 1, "args": {"name": "main"}}]
    correlation = rank * 100_000

    def launch(name: str, stream: int, start: float, dur: float) -> None:
        nonlocal correlation
        correlation += 1
        events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": rank, "tid": 1,
                       "ts": start - 8, "dur": 5, "args": {"correlation": correlation}})
        events.append({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": stream, "ts": start, "dur": dur,
                       "args": {"correlation": correlation, "stream": stream}})

    for step, (compute, sync) in enumerate(zip(compute_us, sync_us)):
        start = step * STEP_US
        events.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{step}", "pid": rank, "tid": 1,
                       "ts": start, "dur": STEP_US - 10, "args": {}})
        at = start + 20
        if receive:
            events += [{"ph": "X", "cat": "user_annotation", "name": "nccl:recv 0<-1", "pid": rank, "tid": 1,
                        "ts": at, "dur": 5, "args": {}},
                       {"ph": "X", "cat": "gpu_user_annotation", "name": "nccl:recv 0<-1", "pid": 0, "tid": 20,
                        "ts": at, "dur": 50, "args": {}}]
            at += 50
        launch("ncclDevKernel_SendRecv(ncclDevComm*)", 21, at + 10, compute / 2)  # all-to-all beside compute
        for part in range(4):
            launch(f"void gemm_kernel_{part}<float>(float*)", 7, at + part * compute / 4, compute / 4)
        launch("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*)", 20, at + compute, sync - at - compute)
    return events


def write_ranks(directory: Path, compute: np.ndarray, *, names: list[str], infos: list[dict | None] | None = None,
                receive: bool = False) -> Path:
    """Every rank's trace (`compute[rank, step]` µs of kernels) under `names`, synchronised by the
    all-reduce at the end of each step: it ends 100 µs after the slowest rank's compute."""
    directory.mkdir(parents=True, exist_ok=True)
    sync = [step * STEP_US + 20 + 50 * receive + compute[:, step].max() + 100 for step in range(compute.shape[1])]
    for rank, name in enumerate(names):
        document: dict = {"schemaVersion": 1, "traceEvents": kineto(rank, list(compute[rank]), sync, receive=receive)}
        if infos and infos[rank] is not None:
            document = {"distributedInfo": infos[rank], **document}
        (directory / name).write_text(json.dumps(document))
    return directory


def noisy(ranks: int, slow: int | None = None, seed: int = 7) -> np.ndarray:
    """Compute per rank and step (µs): 5,000 ± 1 %, rank `slow` 15 % more."""
    compute = np.random.default_rng(seed).normal(5000.0, 50.0, size=(ranks, STEPS))
    if slow is not None:
        compute[slow] *= 1.15
    return compute


def test_pipeline_stages_from_file_names(tmp_path):
    run = write_ranks(tmp_path / "names", noisy(2), names=[f"run-TP-0-PP-{p}.trace.json" for p in range(2)])
    analysis = analyze_profile([run])
    assert analysis.layout.kind == "pipeline" and "file names" in analysis.layout.evidence
    assert [s.stage for s in analysis.stages] == ["PP0", "PP1"] and analysis.ranks == ["PP0", "PP1"]


def test_pipeline_stages_from_distributed_info(tmp_path):
    """Four ranks, two pipeline replicas of two stages each (pipeline groups [0, 2] and [1, 3], as
    torchtitan's `mesh_pp`): plain names, the stage from each rank's place in its group."""
    infos = [{"backend": "nccl", "rank": rank, "world_size": 4,
              "pg_config": [{"pg_name": "0", "pg_desc": "default_pg", "ranks": [0, 1, 2, 3]},
                            {"pg_name": "1", "pg_desc": "mesh_pp", "ranks": [rank % 2, rank % 2 + 2]}]}
             for rank in range(4)]
    run = write_ranks(tmp_path / "info", noisy(4), names=[f"worker{r}.json" for r in range(4)], infos=infos)
    analysis = analyze_profile([run])
    assert analysis.layout.kind == "pipeline" and "distributedInfo" in analysis.layout.evidence
    assert [s.stage for s in analysis.stages] == ["PP0", "PP1"]
    assert sorted(analysis.stages[1].ranks) == ["rank2-PP1", "rank3-PP1"]
    assert {r.peers for r in analysis.stragglers.ranks} == {"PP0", "PP1"}  # peers: a stage's ranks
    one_replica = [dict(info, pg_config=[{"pg_desc": "mesh_pp", "ranks": [0, 1]}]) for info in infos[:2]]
    two = write_ranks(tmp_path / "two", noisy(2), names=["a.json", "b.json"], infos=one_replica)
    assert analyze_profile([two]).ranks == ["PP0", "PP1"]


def test_pipeline_stages_from_point_to_point_receives(tmp_path):
    infos = [{"backend": "nccl", "rank": rank, "world_size": 2} for rank in range(2)]
    run = write_ranks(tmp_path / "recv", noisy(2), names=["a.json", "b.json"], infos=infos, receive=True)
    analysis = analyze_profile([run])
    assert analysis.layout.kind == "pipeline" and "nccl:recv" in analysis.layout.evidence
    assert [s.stage for s in analysis.stages] == ["PP0", "PP1"]


def test_data_parallel_ranks_are_peers_not_stages_and_the_straggler_is_found(tmp_path):
    """Neither names nor distributedInfo say pipeline, and NCCL's SendRecv (all-to-all) is no
    receive: 4 data-parallel ranks, one stage, no wait chain or balance plan; rank 2 computes 15 %
    longer every step, so the others wait in the all-reduce: it is the straggler and on the
    critical path of every step."""
    infos = [{"backend": "nccl", "rank": rank, "world_size": 128} for rank in range(4)]
    compute = noisy(4, slow=2)
    run = write_ranks(tmp_path / "dp", compute, names=[f"trace_{r}.json" for r in range(4)], infos=infos)
    analysis = analyze_profile([run], window="hta")
    assert analysis.layout.kind == "parallel" and "data/tensor-parallel" in analysis.layout.evidence
    assert analysis.ranks == ["rank0", "rank1", "rank2", "rank3"]
    assert len(analysis.stages) == 1 and analysis.wait_chain.edges == [] and analysis.balance is None
    assert analysis.stragglers.stragglers == ["rank2"]
    verdicts = {r.rank: r.verdict for r in analysis.stragglers.ranks}
    assert verdicts == {"rank0": "within noise", "rank1": "within noise", "rank2": "straggler", "rank3": "within noise"}
    assert analysis.critical_path.rank == "rank2" and analysis.critical_path.share == {"rank2": 1.0}
    assert all(s.lead_ms > 0.4 for s in analysis.critical_path.steps)  # 15 % of 5 ms, less the noise
    # per rank, in HTA's window (all but the last step): compute is the gemm kernels' union, and the
    # all-to-all beside them (half as long, inside) is the overlap
    for rank, f in enumerate(analysis.rank_figures):
        assert f.status == "ok" and f.compute_ms == pytest.approx(compute[rank, :-1].sum() / 1e3)
        assert f.overlap_ms == pytest.approx(compute[rank, :-1].sum() / 2e3)
    text = render_profile(analysis)
    assert "**Stragglers**: rank2" in text and "**Layout**: parallel" in text and "not pipeline stages" in text
    even = write_ranks(tmp_path / "even", noisy(4), names=[f"trace_{r}.json" for r in range(4)], infos=infos)
    assert {r.verdict for r in analyze_profile([even]).stragglers.ranks} == {"within noise"}


def test_tensor_parallel_names_are_peers_labelled_by_their_axis(tmp_path):
    run = write_ranks(tmp_path / "tp", noisy(2), names=[f"run-TP-{t}-PP-0.trace.json" for t in range(2)])
    analysis = analyze_profile([run])
    assert analysis.layout.kind == "parallel" and analysis.ranks == ["TP0", "TP1"]


def test_real_ranks_with_nccl_sendrecv_are_not_read_as_a_pipeline(tmp_path):
    """Two real traces carrying only distributedInfo.rank (3 of an 8-rank NCCL job with all-to-all
    `SendRecv` kernels; 0): no pipeline, no PP stages; named `-PP-<p>` they are one."""
    plain = tmp_path / "plain"
    plain.mkdir()
    shutil.copy(CONTROL, plain / "control.json.gz")
    shutil.copy(ALEXNET, plain / "alexnet.json.gz")
    analysis = analyze_profile([plain])
    assert analysis.layout.kind == "parallel" and sorted(analysis.ranks) == ["rank0", "rank3"]
    assert [s.stage for s in analysis.stages] == ["PP0"] and analysis.wait_chain.edges == []
    named = tmp_path / "named"
    named.mkdir()
    for p in range(2):
        shutil.copy(CONTROL, named / f"control-TP-0-PP-{p}.trace.json.gz")
    staged = analyze_profile([named])
    assert staged.layout.kind == "pipeline" and [s.stage for s in staged.stages] == ["PP0", "PP1"]


def test_the_straggler_rule_and_the_critical_path_on_stated_numbers():
    own = {"a": [10.0, 10.1, 9.9, 10.0], "b": [10.1, 9.9, 10.0, 10.1], "c": [10.4, 10.5, 10.3, 10.6]}
    result = find_stragglers(own, dict.fromkeys(own, "all ranks"))
    assert result.stragglers == ["c"]
    assert next(r for r in result.ranks if r.rank == "c").excess_ms == pytest.approx(0.4375)  # less the median of a and b, per step
    tiny = {"a": [10.0] * 4, "b": [10.0] * 4, "c": [10.05] * 4}  # consistent, but under 1 % of the step
    assert find_stragglers(tiny, dict.fromkeys(tiny, "all ranks")).stragglers == []
    short = find_stragglers({"a": [1.0, 2.0], "b": [3.0, 4.0]}, {"a": "x", "b": "x"})
    assert {r.verdict for r in short.ranks} == {"not run"} and "3 needed" in short.ranks[0].reason
    path = critical_path(own, {k: [12.0] * 4 for k in own})
    assert [s.rank for s in path.steps] == ["c"] * 4 and path.steps[0].lead_ms == pytest.approx(0.3)
    assert critical_path({"a": [1.0]}, {"a": [1.0]}).status == "not run"


def test_on_a_real_pipeline_the_critical_path_runs_through_the_slowest_stage(tmp_path):
    """A real gloo pipeline (layers 1-1-4-2 on four stages, harness.testing.pipeline_trace): the
    stage with four layers bounds every step, as the wait chain's root; a stage of one rank has no
    peer to be a straggler against."""
    pytest.importorskip("torch")
    from harness.testing.pipeline_trace import generate

    generate([1, 1, 4, 2], tmp_path / "four", serialised=False)
    analysis = analyze_profile([tmp_path / "four"])
    assert analysis.layout.kind == "pipeline"
    assert analysis.critical_path.rank == analysis.slowest_stage == analysis.wait_chain.root == "PP2"
    assert {r.verdict for r in analysis.stragglers.ranks} == {"not run"}
    assert all(f.status == "not run" for f in analysis.rank_figures)  # CPU only: no kernels for HTA's figures
