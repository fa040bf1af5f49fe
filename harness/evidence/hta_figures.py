"""Per-rank device figures as HolisticTraceAnalysis defines them (HTA 0.5.0, `hta/analyzers/`), computed
from the same event columns the profile analysis reads, so a user comparing with HTA sees HTA's
numbers with HTA's definitions, side by side with harness's own window:

    figures = rank_figures(columns, naming, label="rank3", window_kind="hta", steps=..., window=..., blocked=...)

- temporal breakdown (`BreakdownAnalysis.get_temporal_breakdown`): compute = the union of compute
  kernels, idle = the window less the union of all device events, non-compute = the rest (so
  communication overlapping compute on another stream is compute, not communication);
- comm/compute overlap (`CommunicationAnalysis.get_comm_comp_overlap`): the time communication
  and compute kernels run at once, as a share of the communication kernels' union;
- idle-time breakdown (`BreakdownAnalysis.get_idle_time_breakdown`, `_analyze_idle_time_for_stream`):
  per stream, each gap before a kernel is host wait (its launch came after the previous kernel
  ended), kernel wait (else, a gap under `consecutive_kernel_delay`) or other;
- kernel breakdown by type (`get_gpu_kernel_breakdown(include_memory_kernels=True)`,
  `_get_gpu_kernel_type_time`, `_aggr_gpu_kernel_time`): time in each combination of COMPUTATION /
  COMMUNICATION / MEMORY running at once, and per type the top kernels, the rest as "others".

Which events are kernels, and of which type, is `TraceNaming`'s (device categories, communication
and copy patterns), never CUDA names in code; on CUDA/NCCL names it agrees with HTA's
`hta/utils/utils.py get_kernel_type` (`^nccl.*Kernel` communication, `^Memcpy|^Memset|^dma` memory),
which the tests check on real traces. HTA's parser rounds float timestamps (ts up, end down, to
the µs; `trace_parser.round_down_time_stamps`, a work-around for pytorch#122425): figures here use
the trace's timestamps as they are, as HTA does with HTA_DISABLE_NS_ROUNDING=1.
"""

from __future__ import annotations

import re
from typing import Literal

import numpy as np
from pydantic import BaseModel, Field

from harness.evidence import intervals as iv
from harness.evidence.trace_stream import EventColumns
from harness.evidence.traces import TraceNaming

Window = Literal["steps", "hta"]
WINDOWS: tuple[Window, ...] = ("steps", "hta")
KERNEL_TYPES = ("COMPUTATION", "COMMUNICATION", "MEMORY")  # HTA's order, which names the overlap states
# HTA's get_idle_time_breakdown default `consecutive_kernel_delay=30`: documented as ns, compared
# with the trace's timestamps, which are µs
KERNEL_WAIT_US = 30.0
TOP_KERNELS, DURATION_RATIO = 10, 0.8  # HTA's get_gpu_kernel_breakdown defaults (num_kernels, duration_ratio)


class StreamIdle(BaseModel):
    stream: str = Field(description="The device stream (the trace's tid of its events).")
    host_wait_ms: float
    kernel_wait_ms: float
    other_ms: float


class KernelTypeTime(BaseModel):
    kind: str = Field(description="'COMPUTATION', 'COMMUNICATION', 'MEMORY' or e.g. 'COMPUTATION overlapping "
                                  "COMMUNICATION': the time exactly these types run at once.")
    ms: float
    share: float = Field(description="Of the time any kernel runs (HTA's percentage / 100).")


class KernelStat(BaseModel):
    name: str = Field(description="The kernel, or 'others': the kernels past HTA's top-k cut, together.")
    calls: int
    total_ms: float
    mean_us: float
    min_us: float
    max_us: float


class RankFigures(BaseModel):
    """One rank's figures in one window; `status` 'not run' with the reason where they cannot be had."""

    rank: str
    window: Window
    window_description: str
    status: Literal["ok", "not run"]
    reason: str | None = None
    span_ms: float = Field(0.0, description="The window's length (HTA's kernel_time: first kernel start to last end).")
    kernels: int = Field(0, description="Device events in the window.")
    compute_ms: float = Field(0.0, description="Union of compute kernels.")
    non_compute_ms: float = Field(0.0, description="Device busy, no compute kernel running (HTA's non_compute_time).")
    idle_ms: float = Field(0.0, description="No device event running.")
    compute_share: float = 0.0
    non_compute_share: float = 0.0
    idle_share: float = 0.0
    communication_ms: float = Field(0.0, description="Union of communication kernels.")
    overlap_ms: float = Field(0.0, description="Communication and compute kernels running at once.")
    overlap_share: float | None = Field(None, description="overlap / communication (HTA's comp_comm_overlap_pctg / "
                                                          "100); None with no communication kernel.")
    host_wait_ms: float = 0.0
    kernel_wait_ms: float = 0.0
    other_idle_ms: float = 0.0
    idle_breakdown: list[StreamIdle] = Field(default_factory=list)
    kernel_types: list[KernelTypeTime] = Field(default_factory=list)
    top_kernels: dict[str, list[KernelStat]] = Field(default_factory=dict, description="Per kernel type.")
    step_ms: list[float] = Field(default_factory=list, description="Each step's length (harness's steps).")
    own_ms_per_step: list[float] = Field(default_factory=list, description=(
        "Each step less the time blocked on peers: in receives or blocking waits, or in communication with no "
        "compute or copy beside it."))


def _search(patterns: list[str]) -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{p})" for p in patterns) or r"(?!)", re.IGNORECASE)


def kernel_types(keys: list[tuple[str, str]], naming: TraceNaming, host_is_device: bool) -> tuple[np.ndarray, np.ndarray]:
    """Per (cat, name) key: whether it is device work (bool array) and its type (int array: an index
    into KERNEL_TYPES): communication where the communication patterns match, memory where a copy
    category or pattern does, compute otherwise. The host as the device: the host operators."""
    comm_re, copy_re = _search(naming.communication_patterns), _search(naming.memcpy_patterns)
    device_cats = set(naming.host_op_categories if host_is_device else naming.device_categories)
    copy_cats = set(naming.memcpy_categories)
    device = np.array([cat in device_cats for cat, _ in keys], dtype=bool)
    kind = np.array([1 if comm_re.search(name) else 2 if cat in copy_cats or copy_re.search(name) else 0
                     for cat, name in keys], dtype=np.int64)
    return device, kind


def _states(unions: list[iv.Intervals]) -> np.ndarray:
    """µs in each combination of types running at once, indexed by the bitmask of the types (bit k:
    KERNEL_TYPES[k]; `unions` each type's disjoint intervals): one sweep over every start (+2^k) and
    end (-2^k), as HTA's `_get_gpu_kernel_type_time` (and `get_comm_comp_overlap`, its bits 1 and 2)
    does. HTA truncates each piece to whole µs (`.astype(int)`): on fractional timestamps its times
    are lower by under 1 µs a piece."""
    points = np.concatenate([edge for starts, ends in unions for edge in (starts, ends)])
    delta = np.concatenate([np.full(edges.size, sign * (1 << k)) for k, (starts, ends) in enumerate(unions)
                            for sign, edges in ((1, starts), (-1, ends))])
    order = np.argsort(points, kind="stable")
    points, state = points[order], np.cumsum(delta[order])
    return np.bincount(state[:-1], weights=np.diff(points), minlength=1 << len(unions))


def _kernel_types(by_state: np.ndarray) -> list[KernelTypeTime]:
    """The combinations of types with time, the largest first, as HTA names them."""
    total = float(by_state[1:].sum()) or 1.0
    rows = [(" overlapping ".join(kind for k, kind in enumerate(KERNEL_TYPES) if state >> k & 1), float(us))
            for state, us in enumerate(by_state) if state and us > 0]
    return [KernelTypeTime(kind=kind, ms=us / 1e3, share=us / total) for kind, us in sorted(rows, key=lambda r: -r[1])]


def _top(codes: np.ndarray, durations: np.ndarray, names: list[str]) -> list[KernelStat]:
    """HTA's `_aggr_gpu_kernel_time` over kernels (`codes` index `names`, durations µs): kernels by
    summed time; past `TOP_KERNELS`, those whose cumulative sum is above the DURATION_RATIO quantile
    of the cumulative sums, and all from the TOP_KERNELS-th on, are 'others'. HTA then takes
    max/min/mean of 'others' and of every kept kernel over per-kernel sums; these are per call."""
    order = np.argsort(codes, kind="stable")
    grouped, values = codes[order], durations[order]
    first = np.flatnonzero(np.concatenate([[True], grouped[1:] != grouped[:-1]]))
    table = {"group": grouped[first], "calls": np.diff(np.append(first, grouped.size)),
             "sum": np.add.reduceat(values, first), "min": np.minimum.reduceat(values, first),
             "max": np.maximum.reduceat(values, first)}
    label = np.array([names[code] for code in table["group"]], dtype=object)
    rank = np.lexsort((label, -table["sum"]))
    rest = np.zeros(rank.size, dtype=bool)
    if rank.size > TOP_KERNELS:
        cumulative = np.cumsum(table["sum"][rank])
        rest = (cumulative > np.quantile(cumulative, DURATION_RATIO)) | (np.arange(rank.size) >= TOP_KERNELS)
    kept = [(str(label[i]), {k: v[i] for k, v in table.items()}) for i in rank[~rest]]
    if rest.any():
        calls = np.isin(codes, table["group"][rank[rest]])
        kept.append(("others", {"calls": calls.sum(), "sum": durations[calls].sum(), "min": durations[calls].min(),
                                "max": durations[calls].max()}))
    return [KernelStat(name=name, calls=int(row["calls"]), total_ms=float(row["sum"]) / 1e3,
                       mean_us=float(row["sum"] / row["calls"]), min_us=float(row["min"]), max_us=float(row["max"]))
            for name, row in kept]


def _launches(ts: np.ndarray, link: np.ndarray, host: np.ndarray, device: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per device event, the start of the host events with its correlation id (the launch): the
    first, and the last in the trace's order; NaN with none."""
    wanted = link[device]
    if not host.any():
        return np.full(wanted.size, np.nan), np.full(wanted.size, np.nan)
    order = np.argsort(link[host], kind="stable")  # stable: within an id, the trace's order
    ids, starts = link[host][order], ts[host][order]
    first = np.flatnonzero(np.concatenate([[True], ids[1:] != ids[:-1]]))
    unique, earliest = ids[first], np.minimum.reduceat(starts, first)
    latest = starts[np.append(first[1:], ids.size) - 1]
    at = np.clip(np.searchsorted(unique, wanted), 0, unique.size - 1)
    found = unique[at] == wanted
    return np.where(found, earliest[at], np.nan), np.where(found, latest[at], np.nan)


def _idle(ts: np.ndarray, end: np.ndarray, stream: np.ndarray, launched: np.ndarray,
          columns: EventColumns) -> list[StreamIdle]:
    """HTA's `_analyze_idle_time_for_stream` on every stream of the window's device events (µs
    starts, ends, stream thread indices, launch starts): the gap before each kernel (from the
    previous kernel's end on its stream, in start order; none before the first) is host wait when
    its launch (the last host event with its correlation id, as HTA's index join keeps) started
    after that end, else kernel wait when shorter than KERNEL_WAIT_US, else other."""
    order = np.lexsort((ts, stream))
    ts, end, stream, launched = ts[order], end[order], stream[order], launched[order]
    first = np.ones(ts.size, dtype=bool)
    first[1:] = stream[1:] != stream[:-1]
    previous_end = np.concatenate([[np.nan], end[:-1]])
    previous_end[first] = np.nan
    gap = ts - previous_end
    with np.errstate(invalid="ignore"):
        host_wait = launched > previous_end
        kernel_wait = ~host_wait & (gap < KERNEL_WAIT_US)
    other = ~host_wait & ~kernel_wait & ~first
    rows = []
    for thread in np.unique(stream).tolist():
        mine = stream == thread
        rows.append(StreamIdle(stream=str(columns.threads[thread][1]),
                               host_wait_ms=float(np.sum(gap[mine & host_wait])) / 1e3,
                               kernel_wait_ms=float(np.sum(gap[mine & kernel_wait])) / 1e3,
                               other_ms=float(np.sum(gap[mine & other])) / 1e3))
    return rows


def _covered_before(intervals: iv.Intervals, times: np.ndarray) -> np.ndarray:
    """For each time (µs, any shape), how much of the disjoint sorted `intervals` lies before it."""
    starts, ends = intervals
    if starts.size == 0:
        return np.zeros(times.shape)
    sizes = ends - starts
    before = np.concatenate([[0.0], np.cumsum(sizes)])  # before[i]: covered before interval i starts
    at = np.searchsorted(starts, times, side="right") - 1  # the last interval starting at or before
    last = np.clip(at, 0, None)
    return np.where(at >= 0, before[last] + np.clip(times - starts[last], 0, sizes[last]), 0.0)


def rank_figures(columns: EventColumns, naming: TraceNaming, *, label: str, window_kind: Window,
                 steps: list[tuple[float, float]], window: tuple[float, float], blocked: iv.Intervals,
                 host_is_device: bool) -> RankFigures:
    """One rank's HTA figures in `window_kind`, plus its own time per step.

    `steps` are harness's step intervals and `window` its window (µs, first step start to last step
    end; the whole trace without step annotations); `blocked` the rank's time blocked on peers (µs
    intervals). Windows: 'steps' clips device events to `window`; 'hta' is HTA's
    (`hta/common/trace.py Trace._filter_irrelevant_gpu_kernels`, include_last_profiler_step=False):
    the device events whose launch (the host event with their correlation id) started before the
    last host step annotation did, all but the last step, and the span from the first of them to the
    end of the last; with fewer than two distinct step names HTA keeps every event, and so does this.
    The top kernels count the events in the window at their whole duration. Times in the model are
    ms, kernel statistics µs. 'not run' with the reason on a trace with no
    device events (the host as the device) or none in the window; the own time per step is there
    either way."""
    key, link, dur = columns.key, columns.correlation, columns.dur
    # from the trace's first event: at epoch µs a float64 end (ts + dur) is off by up to 1/8 µs
    origin = float(columns.ts.min()) if columns.ts.size else 0.0
    ts = columns.ts - origin
    end = ts + dur
    steps = [(s - origin, e - origin) for s, e in steps]
    window = (window[0] - origin, window[1] - origin)
    blocked = (blocked[0] - origin, blocked[1] - origin)
    device_key, kind_key = kernel_types(columns.keys, naming, host_is_device)
    device, kind = device_key[key], kind_key[key]

    def union(mask: np.ndarray) -> iv.Intervals:
        return iv.clip(iv.merge(ts[mask], end[mask]), *window)

    exposed = iv.subtract(union(device & (kind == 1)), union(device & (kind != 1)))
    lost = iv.merge(np.concatenate([blocked[0], exposed[0]]), np.concatenate([blocked[1], exposed[1]]))
    bounds = np.array(steps, dtype=float).reshape(-1, 2)
    length = bounds[:, 1] - bounds[:, 0]
    base = {"rank": label, "window": window_kind, "step_ms": (length / 1e3).tolist(),
            "own_ms_per_step": ((length - np.diff(_covered_before(lost, bounds), axis=1)[:, 0]) / 1e3).tolist()}
    if host_is_device or not device.any():
        return RankFigures(**base, window_description="none", status="not run",
                           reason=f"no events in the device categories ({', '.join(naming.device_categories)}), or "
                                  "the naming declares the host the device: HTA's figures are of device kernels")
    launches = _launches(ts, link, ~device & (link >= 0), device)
    step_re = _search(naming.step_patterns)
    host_steps = [k for k, (cat, name) in enumerate(columns.keys)
                  if cat in naming.annotation_categories and cat not in naming.device_annotation_categories
                  and step_re.search(name)]
    is_step = np.isin(key, host_steps)
    if window_kind == "steps":
        chosen = device & (end > window[0]) & (ts < window[1])
        starts, ends = np.clip(ts[chosen], *window), np.clip(end[chosen], *window)
        span = window[1] - window[0]
        description = ("harness's: first to last step annotation, every step" if is_step.any()
                       else "harness's: the whole trace (no step annotations)")
    else:
        if len(host_steps) >= 2:
            last = float(ts[is_step].max())
            first_launch = np.full(ts.size, np.nan)
            first_launch[device] = launches[0]
            # HTA keeps a device event with no correlation id as a host one: by its own start
            with np.errstate(invalid="ignore"):
                chosen = device & np.where(link >= 0, first_launch < last, ts < last)
            description = "HTA's: kernels launched before the last step annotation's start (all but the last step)"
        else:
            chosen = device
            description = "HTA's: every kernel (fewer than two step annotations: HTA keeps them all)"
        starts, ends = ts[chosen], end[chosen]
        span = float(ends.max() - starts.min()) if chosen.any() else 0.0
    if not chosen.any():
        return RankFigures(**base, window_description=description, status="not run",
                           reason="no device events in the window")
    kinds = kind[chosen]
    by_state = _states([iv.merge(starts[kinds == k], ends[kinds == k]) for k in range(len(KERNEL_TYPES))])
    states = np.arange(by_state.size)
    busy = float(by_state[1:].sum())  # every device event is of one of the types
    compute, communication = float(by_state[states & 1 > 0].sum()), float(by_state[states & 2 > 0].sum())
    overlap = float(by_state[states & 3 == 3].sum())
    idle = max(span - busy, 0.0)
    streams = _idle(ts[chosen], end[chosen], columns.tid[chosen], launches[1][chosen[device]], columns)
    # one name may come under several categories: kernels are told apart by name
    names, name_of_key = np.unique(np.array([name for _, name in columns.keys], dtype=object), return_inverse=True)
    codes, durations = name_of_key[key[chosen]], dur[chosen]
    top = {KERNEL_TYPES[k]: _top(codes[kinds == k], durations[kinds == k], names.tolist())
           for k in range(len(KERNEL_TYPES)) if (kinds == k).any()}
    return RankFigures(
        **base, window_description=description, status="ok", span_ms=span / 1e3, kernels=int(chosen.sum()),
        compute_ms=compute / 1e3, non_compute_ms=(busy - compute) / 1e3, idle_ms=idle / 1e3,
        compute_share=compute / span if span else 0.0, non_compute_share=(busy - compute) / span if span else 0.0,
        idle_share=idle / span if span else 0.0, communication_ms=communication / 1e3, overlap_ms=overlap / 1e3,
        overlap_share=overlap / communication if communication else None,
        host_wait_ms=sum(s.host_wait_ms for s in streams), kernel_wait_ms=sum(s.kernel_wait_ms for s in streams),
        other_idle_ms=sum(s.other_ms for s in streams), idle_breakdown=streams, kernel_types=_kernel_types(by_state),
        top_kernels=top)
