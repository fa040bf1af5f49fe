"""Every rank's trace of one run, analysed together: per pipeline stage the work, idle, waiting,
communication and copy time and the bubble per step; the wait chain (who waits on whom, and the
rank whose work the waiting comes down to); a balance plan (layers per stage as observed, the best
contiguous split, predicted slowest-stage time before and after); structural findings with the
code location from the traces' Python stacks; host threads and compile time; device-neutral time
shares; CPU-fallback operators; and a diff against reference runs with intervals.

    analysis = analyze_profile([Path("traces/")], TraceNaming())   # ProfileAnalysis
    analysis = with_diff(analysis, [analyze_profile([ref], naming)])  # + diff against a reference
    write_profile_evidence(analysis, evidence_dir)  # profile_analysis.json + profile_analysis.md

Which events are device work, copies, collectives, receives, waits, layers, steps and compile
time is `TraceNaming`'s (categories and regexes), never CUDA names in code. A trace without any
event in the device categories (a CPU run) is analysed with its host operators as the device.
Traces are read as a stream (harness.evidence.trace_stream). Ranks on one host share a clock; the
wait chain compares timestamps across ranks, so traces from several hosts are aligned only as
well as their clocks are.
"""

from __future__ import annotations

import itertools
import math
import re
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Literal

import numpy as np
from pydantic import BaseModel, Field

from harness.evidence import intervals as iv
from harness.evidence.cross_rank import CriticalPath, Layout, Stragglers, critical_path, find_stragglers, parallel_layout
from harness.evidence.fallback_signature import FallbackOp, scan_fallbacks
from harness.evidence.hta_figures import RankFigures, Window, rank_figures
from harness.evidence.recipes import Recipes
from harness.evidence.runner import Runner
from harness.evidence.trace_stream import (
    EventColumns,
    RankId,
    RankTrace,
    group_traces,
    not_traces,
    read_columns,
)
from harness.evidence.runbook import Runbook
from harness.evidence.traces import TraceError, TraceNaming, profiling_naming, write_evidence_pair
from harness.record.checks import Check, CheckStatus

# torch's python_function names. DOTALL: a newline in a name would make the function's `.+$`
# fail and retry at every later "(<n>): ", quadratic in the name's length.
_FRAME = re.compile(r"^(?P<file>.+?)\((?P<line>\d+)\): (?P<function>.+)$", re.DOTALL)
_LIBRARY = re.compile(r"(^|/)(torch|site-packages|dist-packages|threading\.py|multiprocessing)(/|$)")
_MODULE = "nn.Module: "
GAP_MIN_US = 100.0  # a host gap shorter than this is dispatch, not a stall
FINDING_SHARE = 0.10  # a structural finding is reported from this share of the rank's window
SPIN_BUSY_SHARE, SPIN_OP_SHARE = 0.9, 0.25  # busy without blocking, yet hardly any operator time
EXHAUSTIVE_SPLITS = 300_000  # more contiguous splits than this: dynamic programming instead
TOP_OPS = 30


# --------------------------------------------------------------------------- document


class StageStats(BaseModel):
    stage: str = Field(description="'PP<p>': the pipeline stage (its ranks' numbers are the mean over them).")
    pp: int
    ranks: list[str]
    steps: int
    window_ms: float
    active_ms_per_step: float = Field(description="Time not blocked on a peer, per step: the stage's own time.")
    work_ms: float = Field(description="Compute and copy time on the device (the host when it is the device).")
    compute_ms: float
    memcpy_ms: float
    communication_ms: float
    idle_ms: float
    wait_ms: float = Field(description="Time in receives (host as the device: in any wait) with no work beside them.")
    bubble_share_per_step: list[float] = Field(description="Waiting share of each step.")
    bubble_share: float
    layers: int = Field(description="Distinct layer modules in the stage's trace.")


class WaitEdge(BaseModel):
    waiter: str
    waits_on: str
    wait_ms: float
    count: int


class WaitChain(BaseModel):
    edges: list[WaitEdge]
    chain: list[str] = Field(description="From the rank that waits most, along the longest waits, to the root.")
    root: str | None = Field(description="The rank whose own work the waiting comes down to.")
    blame_ms: dict[str, float] = Field(description="Waiting time traced back to each rank's work.")


class BalancePlan(BaseModel):
    layer_ms: list[float] = Field(description="Per-layer cost per step, in pipeline order.")
    fixed_ms: list[float] = Field(description="Per-stage cost outside the layers (embedding, head, sends).")
    observed: list[int]
    proposed: list[int]
    observed_stage_ms: list[float]
    proposed_stage_ms: list[float]
    observed_slowest_ms: float
    proposed_slowest_ms: float
    gain_share: float = Field(description="1 - proposed/observed slowest-stage time.")


class Finding(BaseModel):
    kind: Literal["serialised_receives", "host_gap", "exposed_communication", "spinning_thread", "fallback"]
    rank: str
    summary: str
    file: str | None = None
    line: int | None = Field(default=None, description="The frame's line as the trace gives it (its def line).")
    function: str | None = None
    metrics: dict[str, float] = Field(default_factory=dict)


class ThreadStats(BaseModel):
    rank: str
    thread: str
    name: str
    busy_ms: float = Field(description="Host time on the thread not blocked (waits, sleeps, syncs excluded).")
    busy_share: float
    op_ms: float = Field(description="Operator time: the rest of busy is framework (Python, dispatch) overhead.")
    spinning: bool
    top_frame: str | None = None


class Shares(BaseModel):
    compute: float
    memcpy: float
    communication: float
    idle: float


class Change(BaseModel):
    name: str
    reference_ms: float
    candidate_ms: float
    delta_ms: float
    ci_low_ms: float | None
    ci_high_ms: float | None
    samples: str = Field(description="'repetitions' (one value per run) or 'steps' (one per profiled step).")
    verdict: Literal["faster", "slower", "within noise"]


class ProfileDiff(BaseModel):
    level: float
    stages: list[Change]
    ops: list[Change]


class ProfileAnalysis(BaseModel):
    sources: list[str]
    ranks: list[str]
    host_is_device: bool
    stages: list[StageStats]
    slowest_stage: str | None
    slowest_ties: list[str] = Field(default_factory=list, description=(
        "Stages the slowest is not told from: its per-step time is not larger than theirs by a one-sided paired "
        "t-test over the steps at 0.05 (or there are fewer than 3 steps to test)."))
    wait_chain: WaitChain
    balance: BalancePlan | None
    findings: list[Finding]
    threads: list[ThreadStats]
    shares: Shares
    fallback_ops: list[FallbackOp]
    compile_ms: float
    step_ms: dict[str, list[float]] = Field(description="Per stage, active time of each step (diff samples).")
    op_step_ms: dict[str, list[float]] = Field(description="Top device ops: summed time of each step (diff samples).")
    diff: ProfileDiff | None = None
    notes: list[str] = Field(default_factory=list)
    layout: Layout | None = Field(None, description="Pipeline stages or not, and why (harness.evidence.cross_rank).")
    window: Window = Field("steps", description="The window of `rank_figures`: 'steps' (harness's, every step) or "
                                                "'hta' (HTA's: kernels of all but the last step).")
    rank_figures: list[RankFigures] = Field(default_factory=list, description=(
        "Per rank, HTA's figures with HTA's definitions (harness.evidence.hta_figures) and own time per step."))
    stragglers: Stragglers | None = None
    critical_path: CriticalPath | None = None


# --------------------------------------------------------------------------- one rank


def _search(patterns: list[str]) -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{p})" for p in patterns) or r"(?!)", re.IGNORECASE)


@dataclass
class _Keys:
    """Per (cat, name) key of a trace: what the event is, decided once per distinct name."""

    device: np.ndarray
    work: np.ndarray  # compute or copy on the device
    copy: np.ndarray
    comm: np.ndarray
    receive: np.ndarray  # time in it is waiting for the peer
    send: np.ndarray  # a send that is not a receive: time in it is waiting for the peer to take it
    two_way: np.ndarray  # a receive whose name sends too (NCCL's SendRecv kernel does either)
    send_span: np.ndarray  # a device annotation of one send (`nccl:send 0->1`): what a two-way event in it does
    receive_post: np.ndarray  # one receive as the host posted it (gloo's: posted to completed)
    receive_done: np.ndarray  # the same receive on the device, to its completion
    blocking: np.ndarray
    host: np.ndarray  # host time on a thread (operators, frames; not step markers, not async comm spans)
    op: np.ndarray  # host operators
    step: np.ndarray
    compile: np.ndarray
    user_frame: np.ndarray
    layer: list[str | None]


def _classify(keys: list[tuple[str, str]], naming: TraceNaming, host_is_device: bool) -> _Keys:
    comm_re, copy_re = _search(naming.communication_patterns), _search(naming.memcpy_patterns)
    recv_re, block_re = _search(naming.receive_patterns), _search(naming.blocking_patterns)
    send_re = _search(naming.send_patterns)
    step_re, compile_re = _search(naming.step_patterns), _search(naming.compile_patterns)
    layer_re = _search(naming.layer_patterns)
    device_cats = set(naming.host_op_categories if host_is_device else naming.device_categories)
    # the host as the device: gloo's receive spans are annotations, and its recv_ operator can
    # itself block until the data arrives
    receive_cats = set(naming.annotation_categories + naming.host_op_categories if host_is_device
                       else naming.device_categories)
    annotation, python = set(naming.annotation_categories), set(naming.python_categories)
    on_device = set(naming.device_annotation_categories)
    rows: dict[str, list[bool]] = defaultdict(list)
    layers: list[str | None] = []
    for cat, name in keys:
        device = cat in device_cats
        comm = bool(comm_re.search(name))
        copy = device and not comm and (cat in naming.memcpy_categories or bool(copy_re.search(name)))
        rows["device"].append(device)
        rows["comm"].append(device and comm)
        rows["copy"].append(copy)
        rows["work"].append(device and not comm)
        receive = comm and bool(recv_re.search(name))
        rows["receive"].append(cat in receive_cats and receive)
        rows["send"].append(cat in receive_cats and comm and not receive and bool(send_re.search(name)))
        rows["two_way"].append(cat in receive_cats and receive and bool(send_re.search(name)))
        rows["send_span"].append(cat in on_device and comm and not receive and bool(send_re.search(name)))
        one_receive = receive and not send_re.search(name)
        rows["receive_post"].append(one_receive and cat in annotation and cat not in on_device)
        rows["receive_done"].append(one_receive and not host_is_device and (cat in on_device or cat in device_cats))
        rows["blocking"].append(bool(block_re.search(name)))
        is_step = cat in annotation and bool(step_re.search(name))
        rows["step"].append(is_step)
        rows["host"].append((cat in naming.host_op_categories or cat in python or cat in annotation)
                            and not is_step and not (cat in annotation and comm))
        rows["op"].append(cat in naming.host_op_categories)
        rows["compile"].append(bool(compile_re.search(name)))
        frame = _FRAME.match(name) if cat in python else None
        rows["user_frame"].append(bool(frame) and not _LIBRARY.search(frame["file"]) and not name.startswith("<"))
        layer = None
        if cat in python and name.startswith(_MODULE):
            module_class = name[len(_MODULE):].rsplit("_", 1)[0]
            layer = name if layer_re.search(module_class) else None
        layers.append(layer)
    return _Keys(**{k: np.array(v, dtype=bool) for k, v in rows.items()}, layer=layers)


@dataclass
class _Rank:
    label: str
    rank: RankId
    source: str
    steps: list[tuple[float, float]]
    window: tuple[float, float]
    work: iv.Intervals
    waiting: iv.Intervals  # in receives from the peer, with no work beside them
    sending: iv.Intervals  # in sends to the peer, with no work and no receive beside them
    blocked: iv.Intervals  # waiting, or (host as the device) blocked in any wait
    split: dict[str, float]
    layers: dict[str, float]  # layer module name -> µs per step
    compile_us: float
    op_totals: dict[str, list[float]]  # device op -> µs in each step
    threads: list[ThreadStats]
    findings: list[Finding]
    fallback: list[FallbackOp]
    fallback_note: str | None  # why no fallback can exist in the trace

    @property
    def active_per_step(self) -> list[float]:
        return [(end - start) - iv.length(iv.clip(self.blocked, start, end)) for start, end in self.steps]


class _Frames:
    """The user-code Python frames of one thread (not torch's, not the library's), to name the
    code a point in time is in: the innermost frame around it."""

    def __init__(self, starts: np.ndarray, ends: np.ndarray, names: list[str]):
        order = np.argsort(starts, kind="stable")
        self.starts, self.ends = starts[order], ends[order]
        self.names = [names[i] for i in order]

    def at(self, time: float, limit: int = 5000) -> int | None:
        """Index of the innermost frame around `time`, or None."""
        index = int(np.searchsorted(self.starts, time, side="right")) - 1
        for candidate in range(index, max(index - limit, -1), -1):
            if self.ends[candidate] > time:
                return candidate
        return None

    def location(self, index: int | None) -> dict[str, object]:
        if index is None:
            return {}
        match = _FRAME.match(self.names[index])
        return {"file": match["file"], "line": int(match["line"]), "function": match["function"]} if match else {}


def _analyze_rank(trace: RankTrace, columns: EventColumns, naming: TraceNaming, host_is_device: bool,
                  recipes: Recipes | None) -> _Rank:
    keys = _classify(columns.keys, naming, host_is_device)
    ts, dur, key, tid = columns.ts, columns.dur, columns.key, columns.tid
    end = ts + dur
    label = trace.rank.label
    if ts.size == 0:
        raise TraceError(f"{trace.path}: the trace has no complete ('X') events")

    is_step = keys.step[key]
    steps = sorted(zip(ts[is_step].tolist(), end[is_step].tolist()))
    window = (steps[0][0], steps[-1][1]) if steps else (float(ts.min()), float(end.max()))
    steps = steps or [window]
    span = window[1] - window[0]

    def union(mask: np.ndarray) -> iv.Intervals:
        return iv.clip(iv.merge(ts[mask], end[mask]), *window)

    device, work_mask = keys.device[key], keys.work[key]
    busy, work = union(device), union(work_mask)
    comm, copies = union(keys.comm[key]), union(keys.copy[key])
    receives_mask, sends_mask = keys.receive[key], keys.send[key]
    two_way, send_spans = keys.two_way[key], keys.send_span[key]
    if two_way.any() and send_spans.any():  # a SendRecv kernel inside a `nccl:send` annotation is a send
        spans = iv.merge(ts[send_spans], end[send_spans])
        inside = np.searchsorted(spans[0], ts, side="right") - 1
        as_send = two_way & (inside >= 0) & (ts < spans[1][np.clip(inside, 0, None)])
        receives_mask, sends_mask = receives_mask & ~as_send, sends_mask | as_send
    waiting = iv.subtract(union(receives_mask), work)
    # blocked in a send, not in a receive: waiting for the next stage to take the data
    sending = iv.subtract(iv.subtract(union(sends_mask), work), waiting)
    # On the host-as-device a thread blocked in any wait is not the stage's own time either.
    held = [waiting, sending, union(keys.blocking[key])] if host_is_device else [waiting, sending]
    blocked = iv.subtract(iv.merge(*(np.concatenate(parts) for parts in zip(*held))), work)
    busy_us, comm_us = iv.length(busy), iv.length(comm)
    copy_us = iv.length(iv.subtract(copies, comm))
    split = {"compute": max(busy_us - comm_us - copy_us, 0.0), "memcpy": copy_us, "communication": comm_us,
             "idle": max(span - busy_us, 0.0), "window": span, "work": iv.length(work),
             "wait": iv.length(blocked)}

    # a layer's cost per step: its median call times its calls per step (one slow call is noise);
    # a call costs its host time where the host is the device, else its launches' device time
    device_cost = None if host_is_device else _launched_device_time(columns, keys, device)
    layers = {}
    for layer_key in (k for k, name in enumerate(keys.layer) if name is not None):
        calls = np.flatnonzero(key == layer_key)
        if calls.size:
            durations = dur[calls] if device_cost is None else device_cost(ts[calls], end[calls], tid[calls])
            name = keys.layer[layer_key]
            layers[name] = layers.get(name, 0.0) + float(np.median(durations)) * calls.size / len(steps)

    # per-thread user frames (locations for the findings)
    frames_mask = keys.user_frame[key]
    frames: dict[int, _Frames] = {}
    for thread in np.unique(tid[frames_mask]).tolist():
        on = frames_mask & (tid == thread)
        frames[thread] = _Frames(ts[on], end[on], [columns.keys[k][1] for k in key[on].tolist()])

    findings = _receive_findings(label, ts, end, tid, keys.receive_post[key], keys.receive_done[key], work, frames)
    findings += _gap_findings(label, busy, blocked, window, ts, tid, keys, key, frames)
    exposed = iv.length(iv.subtract(comm, work)) if not host_is_device else 0.0
    if span and exposed / span >= FINDING_SHARE:
        findings.append(Finding(kind="exposed_communication", rank=label, metrics={
            "exposed_ms": exposed / 1e3, "share": exposed / span},
            summary=f"{exposed / 1e3:,.1f} ms of communication with no compute beside it "
                    f"({exposed / span:.0%} of the steps window): not overlapped"))

    threads = _threads(label, columns, ts, end, tid, key, keys, window)
    for thread in threads:
        if thread.spinning:
            findings.append(Finding(kind="spinning_thread", rank=label, function=thread.top_frame, metrics={
                "busy_share": thread.busy_share}, summary=f"thread {thread.name} is busy {thread.busy_share:.0%} "
                f"of the steps window without blocking, {thread.op_ms:,.1f} ms of it in operators: it spins"
                + (f" (mostly in {thread.top_frame})" if thread.top_frame else "")))

    op_totals: dict[str, np.ndarray] = {}
    step_starts = np.array([s for s, _ in steps])
    names, which_name = np.unique(key[device], return_inverse=True)
    which_step = np.clip(np.searchsorted(step_starts, ts[device], side="right") - 1, 0, len(steps) - 1)
    table = np.bincount(which_name * len(steps) + which_step, weights=dur[device],
                        minlength=names.size * len(steps)).reshape(names.size, len(steps))
    for row, name_key in enumerate(names.tolist()):
        name = columns.keys[name_key][1]  # one name may come under several categories
        op_totals[name] = op_totals[name] + table[row] if name in op_totals else table[row]
    scan = scan_fallbacks(label, columns, naming, trace.header, recipes)
    fallback = scan.ops
    findings += [Finding(kind="fallback", rank=label, metrics={"calls": f.count, "host_ms": f.host_ms},
                         summary=f"{f.op}: {f.count} call(s) ran on the CPU between copies ({f.copies} copies), "
                                 f"{f.host_ms:,.2f} ms; " + (f"recipe {f.recipe}" if f.recipe else "no recipe"))
                 for f in fallback]
    return _Rank(label=label, rank=trace.rank, source=str(trace.path), steps=steps, window=window, work=work,
                 waiting=waiting, sending=sending, blocked=blocked, split=split, layers=layers,
                 compile_us=_compile_us(ts, end, key, keys, steps),
                 op_totals={k: list(map(float, v)) for k, v in op_totals.items()}, threads=threads,
                 findings=findings, fallback=fallback, fallback_note=scan.not_applicable)


def _compile_us(ts: np.ndarray, end: np.ndarray, key: np.ndarray, keys: _Keys, steps: list[tuple[float, float]]) -> float:
    """Host time (µs, overlaps merged) spent compiling or capturing graphs: the events the compile
    patterns name, less every name that recurs in two or more steps. Compiling happens once per
    graph and shape; what recurs step after step is the compiled code running (`CompiledFunction`,
    `CompiledFunctionBackward`, a `Torch-Compiled Region`, Dynamo's per-call frame wrapper). With
    fewer than two steps nothing can recur, and every matching event counts."""
    mask = keys.compile[key]
    if len(steps) >= 2 and mask.any():
        starts, ends = np.array([s for s, _ in steps]), np.array([e for _, e in steps])
        which = np.searchsorted(starts, ts[mask], side="right") - 1
        inside = (which >= 0) & (ts[mask] < ends[np.clip(which, 0, None)])
        pairs = np.unique(np.stack([key[mask][inside], which[inside]]), axis=1)
        names, steps_seen = np.unique(pairs[0], return_counts=True)
        mask = mask & ~np.isin(key, names[steps_seen >= 2])
    return iv.length(iv.merge(ts[mask], end[mask]))


def _launched_device_time(columns: EventColumns, keys: _Keys,
                          device: np.ndarray) -> Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]:
    """For host spans (start, end, thread): the device time of the work launched inside each,
    matched launch -> device event by correlation id."""
    correlation, key, ts, dur, tid = columns.correlation, columns.key, columns.ts, columns.dur, columns.tid
    on_device = device & (correlation >= 0)
    ids, first = np.unique(correlation[on_device], return_inverse=True)
    per_id = np.bincount(first, weights=dur[on_device], minlength=ids.size)
    launches = (~device) & (correlation >= 0) & ~keys.op[key]
    launched = correlation[launches]
    cost = np.zeros(launched.size)
    if ids.size:
        position = np.clip(np.searchsorted(ids, launched), 0, ids.size - 1)
        hit = ids[position] == launched
        cost[hit] = per_id[position[hit]]
    by_thread = {}
    for thread in np.unique(tid[launches]).tolist():
        mine = tid[launches] == thread
        order = np.argsort(ts[launches][mine], kind="stable")
        by_thread[thread] = (ts[launches][mine][order], np.concatenate([[0.0], np.cumsum(cost[mine][order])]))

    def spans(starts: np.ndarray, ends: np.ndarray, threads: np.ndarray) -> np.ndarray:
        out = np.zeros(starts.size)
        for thread, (times, total) in by_thread.items():
            mine = threads == thread
            out[mine] = total[np.searchsorted(times, ends[mine])] - total[np.searchsorted(times, starts[mine])]
        return out

    return spans


def _receive_findings(label: str, ts: np.ndarray, end: np.ndarray, tid: np.ndarray, posts: np.ndarray,
                      done: np.ndarray, work: iv.Intervals, frames: dict[int, _Frames]) -> list[Finding]:
    """Serialised receives: two receives of one batch (same user frame, or no work between them)
    where the first completed before the second was posted — `irecv A; wait A; irecv B`. A receive
    spans its host post (gloo's annotation: post to completion) to its completion on the device
    (the k-th device receive is the k-th posted: one stream runs them in order)."""
    order = np.argsort(ts[posts], kind="stable")
    starts, ends, threads = ts[posts][order], end[posts][order], tid[posts][order]
    completions = np.sort(end[done])
    if completions.size == starts.size and completions.size:
        ends = np.maximum(ends, completions)
    pairs = serial = 0
    first_serial: tuple[int, float] | None = None
    for i in range(len(starts) - 1):
        thread = int(threads[i + 1])
        if int(threads[i]) != thread:
            continue
        known = frames.get(thread)
        if known is not None:
            same = known.at(starts[i]) is not None and known.at(starts[i]) == known.at(starts[i + 1])
        else:
            same = iv.length(iv.clip(work, min(ends[i], starts[i + 1]), max(ends[i], starts[i + 1]))) == 0
        if not same:
            continue
        pairs += 1
        if ends[i] <= starts[i + 1]:
            serial += 1
            first_serial = first_serial or (thread, float(starts[i + 1]))
    if not serial or serial < pairs / 2:
        return []
    where = frames[first_serial[0]].location(frames[first_serial[0]].at(first_serial[1])) \
        if first_serial and first_serial[0] in frames else {}
    return [Finding(kind="serialised_receives", rank=label, metrics={"pairs": pairs, "serialised": serial},
                    summary=f"{serial} of {pairs} receive pairs of one batch are serialised (each waited before "
                            "the next is posted): post every receive first, then wait", **where)]


def _gap_findings(label: str, busy: iv.Intervals, blocked: iv.Intervals, window: tuple[float, float],
                  ts: np.ndarray, tid: np.ndarray, keys: _Keys, key: np.ndarray,
                  frames: dict[int, _Frames]) -> list[Finding]:
    """Host gaps: the device idles between its work while the rank is not blocked on a peer."""
    starts, ends = iv.gaps(busy)
    long = (ends - starts) >= GAP_MIN_US
    gap_set = iv.subtract((starts[long], ends[long]), blocked)
    total, span = iv.length(gap_set), window[1] - window[0]
    if not span or total / span < FINDING_SHARE:
        return []
    widest = int(np.argmax(gap_set[1] - gap_set[0]))
    middle = float(gap_set[0][widest] + gap_set[1][widest]) / 2
    ops = keys.op[key]
    main = int(np.bincount(tid[ops]).argmax()) if ops.any() else None
    where = frames[main].location(frames[main].at(middle)) if main in frames else {}
    return [Finding(kind="host_gap", rank=label, metrics={"gap_ms": total / 1e3, "share": total / span,
                                                           "gaps": int(gap_set[0].size)},
                    summary=f"the device idles {total / 1e3:,.1f} ms ({total / span:.0%} of the steps window) in "
                            f"{gap_set[0].size} gaps of at least {GAP_MIN_US:g} µs between its work, waiting "
                            "for the host to submit", **where)]


def _threads(label: str, columns: EventColumns, ts: np.ndarray, end: np.ndarray, tid: np.ndarray,
             key: np.ndarray, keys: _Keys, window: tuple[float, float]) -> list[ThreadStats]:
    span = window[1] - window[0]
    host, blocking, ops = keys.host[key], keys.blocking[key], keys.op[key]
    rows = []
    for thread in np.unique(tid[host]).tolist():
        on = tid == thread
        busy = iv.subtract(iv.clip(iv.merge(ts[on & host], end[on & host]), *window),
                           iv.merge(ts[on & blocking], end[on & blocking]))
        busy_us = iv.length(busy)
        op_us = iv.length(iv.intersect(busy, iv.clip(iv.merge(ts[on & ops], end[on & ops]), *window)))
        share = busy_us / span if span else 0.0
        spinning = share >= SPIN_BUSY_SHARE and op_us < SPIN_OP_SHARE * busy_us and not (on & blocking).any()
        top = None
        frames = on & keys.user_frame[key]
        if frames.any():
            counts = np.bincount(key[frames])
            top = columns.keys[int(counts.argmax())][1]
        pid, raw_tid = columns.threads[thread]
        rows.append(ThreadStats(rank=label, thread=str(raw_tid), name=columns.thread_names.get((pid, raw_tid), str(raw_tid)),
                                busy_ms=busy_us / 1e3, busy_share=share, op_ms=op_us / 1e3, spinning=spinning,
                                top_frame=top))
    return rows


# --------------------------------------------------------------------------- across ranks


def _wait_chain(ranks: list[_Rank]) -> WaitChain:
    """Rank p receives from stage p-1 (stage 0 from the last: the sampled token returns) and sends
    to stage p+1 (the last to stage 0), same TP/DP/EP: blocked in a receive it waits on the stage
    before it, blocked in a send (no receive beside it) on the stage after it, which has not taken
    the data yet. A wait on a peer that was itself waiting is passed on to whom that peer waited
    for, so the blame ends at the rank whose work everyone waited behind."""
    by_place = {(r.rank.dp, r.rank.tp, r.rank.ep, r.rank.pp): r for r in ranks}
    stages = sorted({r.rank.pp for r in ranks})

    def peer(rank: _Rank, step: int) -> _Rank | None:
        """The stage `step` away (-1: the one it receives from, +1: the one it sends to)."""
        if len(stages) < 2:
            return None
        other = stages[(stages.index(rank.rank.pp) + step) % len(stages)]
        return by_place.get((rank.rank.dp, rank.rank.tp, rank.rank.ep, other))

    def waits(rank: _Rank) -> list[tuple[_Rank, iv.Intervals]]:
        """Whom the rank waits on, and when: its receives' peer, then its sends' peer."""
        pairs = [(peer(rank, -1), rank.waiting), (peer(rank, +1), rank.sending)]
        return [(other, spans) for other, spans in pairs if other is not None and spans[0].size]

    blame: dict[str, float] = defaultdict(float)

    def trace_back(other: _Rank, start: float, end: float, seen: frozenset[str]) -> None:
        passed = [(onward, iv.clip(spans, start, end)) for onward, spans in waits(other)]
        waited = sum(iv.length(spans) for _, spans in passed)
        blame[other.label] += (end - start) - waited
        if other.label in seen:  # waiting on a rank that waits on it: the data moving between them, no one's work
            return
        for onward, spans in passed:
            for s, e in zip(spans[0].tolist(), spans[1].tolist()):
                trace_back(onward, s, e, seen | {other.label})

    totals: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0.0, 0])
    for rank in ranks:
        for other, (starts, ends) in waits(rank):
            total = totals[(rank.label, other.label)]
            total[0] += float(np.sum(ends - starts))
            total[1] += int(starts.size)
            for s, e in zip(starts.tolist(), ends.tolist()):
                trace_back(other, s, e, frozenset({rank.label}))
    edges = [WaitEdge(waiter=waiter, waits_on=on, wait_ms=us / 1e3, count=int(count))
             for (waiter, on), (us, count) in totals.items()]
    edges.sort(key=lambda e: -e.wait_ms)
    root = max(blame, key=lambda k: blame[k]) if blame else None
    chain: list[str] = []
    if edges:
        heaviest: dict[str, WaitEdge] = {}
        for edge in edges:  # heaviest first: each waiter's heaviest wait
            heaviest.setdefault(edge.waiter, edge)
        current: str | None = edges[0].waiter
        while current is not None and current not in chain:
            chain.append(current)
            if current == root:
                break
            current = heaviest[current].waits_on if current in heaviest else None
    return WaitChain(edges=edges, chain=chain, root=root, blame_ms={k: v / 1e3 for k, v in sorted(blame.items())})


def best_split(layer_ms: list[float], fixed_ms: list[float]) -> list[int]:
    """Layers per stage (each >= 1, contiguous, in order) minimising the slowest stage's time
    `fixed_ms[s] + sum(its layers)`, ties by the next slowest and so on."""
    stages, count = len(fixed_ms), len(layer_ms)
    if stages == 1 or count < stages:
        return [count] if stages == 1 else []
    prefix = np.concatenate([[0.0], np.cumsum(layer_ms)])
    if math.comb(count - 1, stages - 1) <= EXHAUSTIVE_SPLITS:
        cuts = np.array(list(itertools.combinations(range(1, count), stages - 1)), dtype=np.int64)
        bounds = np.hstack([np.zeros((len(cuts), 1), dtype=np.int64), cuts, np.full((len(cuts), 1), count)])
        times = np.asarray(fixed_ms) + prefix[bounds[:, 1:]] - prefix[bounds[:, :-1]]
        ranked = np.round(-np.sort(-times, axis=1), 9)  # each split's stage times, slowest first
        best = bounds[np.lexsort(ranked.T[::-1])[0]]
        return [int(b) for b in np.diff(best)]
    # dynamic programming on (slowest, sum of squares) for large layouts
    inf = (math.inf, math.inf)
    table = [[inf] * (count + 1) for _ in range(stages + 1)]
    choice = [[0] * (count + 1) for _ in range(stages + 1)]
    table[0][0] = (0.0, 0.0)
    for s in range(1, stages + 1):
        for n in range(s, count - (stages - s) + 1):
            for m in range(s - 1, n):
                prior = table[s - 1][m]
                if prior == inf:
                    continue
                t = fixed_ms[s - 1] + prefix[n] - prefix[m]
                value = (max(prior[0], t), prior[1] + t * t)
                if value < table[s][n]:
                    table[s][n], choice[s][n] = value, m
    split, n = [], count
    for s in range(stages, 0, -1):
        m = choice[s][n]
        split.append(n - m)
        n = m
    return split[::-1]


def _slowest_ties(slowest: str, step_ms: dict[str, list[float]]) -> list[str]:
    """The stages `slowest` is not told from by their per-step active times (ms): a one-sided
    paired t-test (scipy.stats.ttest_rel, alternative="greater") at 0.05 over the steps both have;
    fewer than 3 such steps cannot tell any stage from it. On repeats of one run, a slowest stage
    picked on a 1-3 % difference flips; this says so instead of naming one."""
    from scipy import stats

    mine, ties = step_ms[slowest], []
    for stage, theirs in step_ms.items():
        if stage == slowest:
            continue
        n = min(len(mine), len(theirs))
        if n < 3:
            ties.append(stage)
            continue
        a, b = np.array(mine[:n]), np.array(theirs[:n])
        if np.all(a == b):
            ties.append(stage)
            continue
        if not stats.ttest_rel(a, b, alternative="greater").pvalue < 0.05:
            ties.append(stage)
    return ties


def _balance(stages: list[list[_Rank]], active: list[float]) -> BalancePlan | None:
    """Per-layer cost from the layer modules' calls on each stage (mean over its ranks, per step)."""
    layer_ms: list[float] = []
    observed, fixed = [], []
    for ranks, stage_ms in zip(stages, active):
        per_rank = [r.layers for r in ranks if r.layers]
        if not per_rank:
            return None
        names = sorted(per_rank[0], key=lambda n: int(n.rsplit("_", 1)[1]) if n.rsplit("_", 1)[1].isdigit() else 0)
        costs = [float(np.mean([r.get(n, 0.0) for r in per_rank])) / 1e3 for n in names]
        layer_ms += costs
        observed.append(len(names))
        fixed.append(max(stage_ms - sum(costs), 0.0))
    proposed = best_split(layer_ms, fixed)

    def times(split: list[int]) -> list[float]:
        bounds = np.concatenate([[0], np.cumsum(split)]).astype(int)
        return [fixed[s] + sum(layer_ms[bounds[s]:bounds[s + 1]]) for s in range(len(split))]

    before, after = times(observed), times(proposed)
    if max(after) >= max(before) * (1 - 1e-9):  # no split does better (sums in another order differ in the last bits)
        proposed, after = observed, before
    return BalancePlan(layer_ms=layer_ms, fixed_ms=fixed, observed=observed, proposed=proposed,
                       observed_stage_ms=before, proposed_stage_ms=after, observed_slowest_ms=max(before),
                       proposed_slowest_ms=max(after), gain_share=1 - max(after) / max(before) if max(before) else 0.0)


def _naming_hints(columns: list[EventColumns], naming: TraceNaming, host_is_device: bool) -> list[str]:
    """One line per kind of device event the naming recognises none of, saying which field to
    set: a device whose copies (collectives) go by other names would have them counted as compute."""
    if host_is_device:
        return []
    device_cats, copy_re = set(naming.device_categories), _search(naming.memcpy_patterns)
    comm_re = _search(naming.communication_patterns)
    names = {(cat, name) for c in columns for cat, name in c.keys if cat in device_cats}
    hints = []
    if not any(cat in naming.memcpy_categories or copy_re.search(name) for cat, name in names):
        hints.append("no device event is a copy by the naming (memcpy_categories, memcpy_patterns: Memcpy*, Memset*, "
                     "*dma*copy*): if the device names its copies otherwise, set --naming memcpy_patterns")
    if len(columns) > 1 and not any(comm_re.search(name) for _, name in names):
        hints.append("no device event is a collective by the naming (communication_patterns: nccl, rccl, hccl, "
                     "all_reduce, send_recv, ...): if the device names them otherwise, set --naming "
                     "communication_patterns")
    return hints


def analyze_profile(paths: list[Path], naming: TraceNaming | None = None, *,
                    recipes: Recipes | None = None, window: Window = "steps") -> ProfileAnalysis:
    """Analyse every trace under `paths` (files or directories of one run's per-rank traces), with
    HTA's per-rank figures in `window` ('steps' or 'hta', see hta_figures.rank_figures); the ranks
    are pipeline stages only where cross_rank.parallel_layout says so. HarnessError (TraceError /
    TraceMissing) when a trace cannot be read or two claim one rank."""
    naming = naming or TraceNaming()
    ranks_in = group_traces(paths)
    columns = [read_columns(r.path, within=r.within) for r in ranks_in]
    device_cats = set(naming.device_categories)
    has_device = any(cat in device_cats for c in columns for cat, _ in c.keys)
    host_is_device = not has_device or bool(device_cats & set(naming.host_op_categories))
    notes = [line for r, c in zip(ranks_in, columns) for line in c.skipped(r.path)]
    if not has_device:
        notes.append(f"no events in the device categories ({', '.join(naming.device_categories)}): the host's "
                     "operators are analysed as the device")
    notes += [f"{p}: not a profiler trace (JSON without traceEvents or events): skipped" for p in not_traces(paths)]
    notes += _naming_hints(columns, naming, host_is_device)
    layout, ranks_in = parallel_layout(ranks_in, [c.keys for c in columns], naming)
    ranks = [_analyze_rank(t, c, naming, host_is_device, recipes) for t, c in zip(ranks_in, columns)]
    for reason in dict.fromkeys(r.fallback_note for r in ranks if r.fallback_note):
        notes.append(f"CPU fallbacks not applicable on {', '.join(r.label for r in ranks if r.fallback_note == reason)}: "
                     f"{reason}")
    figures = [rank_figures(c, naming, label=r.label, window_kind=window, steps=r.steps, window=r.window,
                            blocked=r.blocked, host_is_device=host_is_device) for r, c in zip(ranks, columns)]
    del columns
    own = {f.rank: f.own_ms_per_step for f in figures}
    peers = {r.label: f"PP{r.rank.pp}" if layout.kind == "pipeline" else "all ranks" for r in ranks}
    by_stage: dict[int, list[_Rank]] = defaultdict(list)
    for rank in ranks:
        by_stage[rank.rank.pp].append(rank)
    stage_rows, active, step_ms = [], [], {}
    for pp in sorted(by_stage):
        group = by_stage[pp]
        n = len(group)
        per_step = np.mean([r.active_per_step for r in group if r.steps], axis=0) / 1e3 \
            if len({len(r.steps) for r in group}) == 1 else np.array(group[0].active_per_step) / 1e3
        bubbles = [[iv.length(iv.clip(r.blocked, s, e)) / (e - s) if e > s else 0.0 for s, e in r.steps]
                   for r in group]
        bubble = np.mean(bubbles, axis=0) if len({len(b) for b in bubbles}) == 1 else np.array(bubbles[0])

        def mean(part: str, group: list[_Rank] = group, n: int = n) -> float:
            return sum(r.split[part] for r in group) / n / 1e3

        stage = f"PP{pp}"
        step_ms[stage] = [float(v) for v in per_step]
        active.append(float(np.mean(per_step)))
        stage_rows.append(StageStats(
            stage=stage, pp=pp, ranks=[r.label for r in group], steps=len(group[0].steps),
            window_ms=mean("window"), active_ms_per_step=active[-1], work_ms=mean("work"),
            compute_ms=mean("compute"), memcpy_ms=mean("memcpy"), communication_ms=mean("communication"),
            idle_ms=mean("idle"), wait_ms=mean("wait"), bubble_share_per_step=[float(b) for b in bubble],
            bubble_share=float(np.mean(bubble)), layers=max(len(r.layers) for r in group)))
    slowest = max(stage_rows, key=lambda s: s.active_ms_per_step).stage if len(stage_rows) > 1 else \
        (stage_rows[0].stage if stage_rows else None)
    ties = _slowest_ties(slowest, step_ms) if len(stage_rows) > 1 else []
    windows = sum(r.split["window"] for r in ranks) or 1.0
    shares = Shares(**{k: sum(r.split[k] for r in ranks) / windows
                       for k in ("compute", "memcpy", "communication", "idle")})
    totals: dict[str, np.ndarray] = {}
    for rank in ranks:
        for name, values in rank.op_totals.items():
            values_ms = np.array(values) / 1e3
            totals[name] = totals[name] + values_ms if name in totals and len(totals[name]) == len(values_ms) \
                else totals.get(name, values_ms)
    top = sorted(totals, key=lambda n: -float(np.sum(totals[n])))[:TOP_OPS]
    balance = _balance([by_stage[pp] for pp in sorted(by_stage)], active) if len(by_stage) > 1 else None
    if len(by_stage) > 1 and balance is None:
        notes.append("no layer modules in the traces (naming.layer_patterns over `nn.Module: <Class>_<n>` frames; "
                     "profile with with_stack=True): no balance plan")
    return ProfileAnalysis(
        sources=[r.source for r in ranks], ranks=[r.label for r in ranks], host_is_device=host_is_device,
        stages=stage_rows, slowest_stage=slowest, slowest_ties=ties, wait_chain=_wait_chain(ranks), balance=balance,
        findings=[f for r in ranks for f in r.findings], threads=[t for r in ranks for t in r.threads],
        shares=shares, fallback_ops=[f for r in ranks for f in r.fallback],
        compile_ms=sum(r.compile_us for r in ranks) / 1e3, step_ms=step_ms,
        op_step_ms={n: [float(v) for v in totals[n]] for n in top}, notes=notes, layout=layout, window=window,
        rank_figures=figures, stragglers=find_stragglers(own, peers),
        critical_path=critical_path(own, {f.rank: f.step_ms for f in figures}))


# --------------------------------------------------------------------------- diff


def _change(name: str, candidate: list[list[float]], reference: list[list[float]], level: float) -> Change:
    """Candidate minus reference: one value per run when both sides have >= 2 runs, else one
    per profiled step; Welch's interval (statsmodels); 'within noise' when it holds 0 or the
    samples cannot give one."""
    from statsmodels.stats.weightstats import CompareMeans, DescrStatsW

    if len(candidate) >= 2 and len(reference) >= 2:
        a, b, samples = [float(np.mean(r)) for r in candidate], [float(np.mean(r)) for r in reference], "repetitions"
    else:
        a, b, samples = [v for r in candidate for v in r], [v for r in reference for v in r], "steps"
    low = high = None
    if len(a) >= 2 and len(b) >= 2 and (np.var(a) + np.var(b)) > 0:
        low, high = CompareMeans(DescrStatsW(np.array(a)), DescrStatsW(np.array(b))).tconfint_diff(
            alpha=1 - level, usevar="unequal")
        low, high = float(low), float(high)
    verdict: Literal["faster", "slower", "within noise"] = "within noise"
    if low is not None and high is not None and not low <= 0 <= high:
        verdict = "slower" if low > 0 else "faster"
    mean_a, mean_b = float(np.mean(a)) if a else 0.0, float(np.mean(b)) if b else 0.0
    return Change(name=name, reference_ms=mean_b, candidate_ms=mean_a, delta_ms=mean_a - mean_b, ci_low_ms=low,
                  ci_high_ms=high, samples=samples, verdict=verdict)


def diff_profiles(candidates: list[ProfileAnalysis], references: list[ProfileAnalysis], *,
                  level: float = 0.95, top: int = 20) -> ProfileDiff:
    """Per-stage active time per step and per-op time per step, candidate runs against reference
    runs (each a ProfileAnalysis of one run's traces), with `level` intervals; the `top` ops by
    the size of their change."""
    def values(runs: list[ProfileAnalysis], table: str, name: str) -> list[list[float]]:
        return [getattr(run, table).get(name) or [0.0] for run in runs]

    # a stage is compared only where both sides have it (another layout has other stages)
    stages = sorted({s for run in candidates for s in run.step_ms} & {s for run in references for s in run.step_ms},
                    key=lambda s: int(s[2:]) if s[2:].isdigit() else 0)
    ops = sorted({o for run in candidates + references for o in run.op_step_ms})
    op_changes = [_change(o, values(candidates, "op_step_ms", o), values(references, "op_step_ms", o), level)
                  for o in ops]
    op_changes.sort(key=lambda c: -abs(c.delta_ms))
    return ProfileDiff(level=level, ops=op_changes[:top],
                       stages=[_change(s, values(candidates, "step_ms", s), values(references, "step_ms", s), level)
                               for s in stages])


# --------------------------------------------------------------------------- evidence


def render_profile(analysis: ProfileAnalysis) -> str:
    """A ProfileAnalysis as markdown (profile_analysis.md), from templates/profile_analysis.md.j2."""
    from harness.util.templates import render

    return render("profile_analysis.md.j2", a=analysis)


def write_profile_evidence(analysis: ProfileAnalysis, evidence_dir: Path, stem: str = "profile_analysis") -> list[Path]:
    """Write `<stem>.json` and `<stem>.md` under evidence_dir; returns both paths."""
    return write_evidence_pair(analysis, render_profile(analysis), evidence_dir, stem)


def profile_check(analysis: ProfileAnalysis, evidence: list[str], name: str = "performance.profile") -> Check:
    """The analysis as a check: passed with the stage, wait-chain, balance and share figures as
    metrics and the findings and the diff against the reference as detail — leads for the
    write-up, not a verdict: the performance suites judge speed against their tolerance."""
    metrics: dict[str, object] = {"ranks": len(analysis.ranks), "stages": len(analysis.stages),
                                  "slowest_stage": analysis.slowest_stage, "wait_root": analysis.wait_chain.root,
                                  "compile_ms": round(analysis.compile_ms, 1), "findings": len(analysis.findings),
                                  **{f"{k}_share": round(v, 4) for k, v in analysis.shares.model_dump().items()}}
    if analysis.balance is not None:
        metrics |= {"observed_split": analysis.balance.observed, "proposed_split": analysis.balance.proposed,
                    "balance_gain_share": round(analysis.balance.gain_share, 4)}
    if analysis.layout is not None and analysis.stragglers is not None and analysis.critical_path is not None:
        metrics |= {"layout": analysis.layout.kind, "stragglers": analysis.stragglers.stragglers,
                    "critical_rank": analysis.critical_path.rank}
    lines = [f"{f.kind} on {f.rank}: {f.summary}" + (f" [{f.file}:{f.line} {f.function}]" if f.file else "")
             for f in analysis.findings]
    if analysis.diff is not None:
        lines += [f"against the reference, {c.name}: {c.delta_ms:+,.2f} ms/step, {c.verdict}"
                  + (f" [{c.ci_low_ms:+,.2f}, {c.ci_high_ms:+,.2f}]" if c.ci_low_ms is not None else "")
                  for c in analysis.diff.stages]
        metrics["slower_stages"] = [c.name for c in analysis.diff.stages if c.verdict == "slower"]
    return Check(name=name, status=CheckStatus.passed, evidence=evidence, metrics=metrics,
                 detail="\n".join(lines) or None)


class ProfileAnalysisRunner(Runner[TraceNaming, ProfileAnalysis]):
    """Every trace a capture produced, analysed together (`profile_analysis.json` / `.md`), with
    a diff against the reference run's traces when given: the `performance.profile` check."""

    name = "profile_analysis"
    section = "profiling"
    spec = TraceNaming
    record = ProfileAnalysis
    summary = "profile_analysis.json"
    check_name: ClassVar[str] = "performance.profile"

    def specs(self, runbook: Runbook) -> list[tuple[str, TraceNaming]]:
        return profiling_naming(runbook)

    def run(self, spec: TraceNaming, evidence_dir: Path, *, traces: list[Path],
            references: list[list[Path]] | None = None, recipes: Recipes | None = None) -> ProfileAnalysis:
        """Analyse `traces` (one run's per-rank traces) and diff against each reference run
        in `references`; HarnessError when a trace cannot be read."""
        analysis = analyze_profile(traces, spec, recipes=recipes)
        if references:
            analysis.diff = diff_profiles([analysis], [analyze_profile(r, spec, recipes=recipes) for r in references])
        write_profile_evidence(analysis, evidence_dir)
        return analysis

    def checks(self, record: ProfileAnalysis, evidence_dir: Path, spec: TraceNaming) -> list[Check]:
        evidence = [str(evidence_dir / f"profile_analysis.{suffix}") for suffix in ("json", "md")]
        return [profile_check(record, evidence, name=self.check_name)]
