"""Torch-profiler Chrome traces (`.json`, `.json.gz`): where device time goes, which operators and
kernels cost most, how long launches wait, and what changed between two traces.

    naming = TraceNaming()  # or TraceNaming.model_validate(runbook/recipe overrides)
    report = analyze_trace(load_trace(path), naming)
    write_trace_evidence(report, evidence_dir)  # trace_summary.json + trace_summary.md
    diff = diff_traces(report_a, report_b)

Device time is split per stream into communication / memory copy / compute / idle using the
union of event intervals, so overlapping events are not counted twice: on one stream,
communication wins over memory copies and copies over compute where they overlap, and the four
parts add up to the device's trace window. Which events are device work, copies or collectives
is decided by `TraceNaming` (category names and regexes), so a plugin device with its own kernel
and runtime names only needs different patterns, not different code.

HolisticTraceAnalysis (hta 0.5.0) was evaluated for this and is not used: it fails to load any
trace under pandas 3 (`transform_correlation_to_index` writes int64 indices into an int8 column),
its kernel classes are fixed CUDA regexes (`^nccl.*Kernel`, `^Memcpy|^Memset`) and CUDA runtime
names (`cuda_runtime`, `cudaLaunchKernel`), and it wants a directory of per-rank traces keyed by
`distributedInfo.rank`.
"""

from __future__ import annotations

import errno
import gzip
import json
import os
import re
import stat
import zlib
from pathlib import Path
from typing import IO, Any, ClassVar, Literal, Self

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

from harness.errors import HarnessError
from harness.evidence.runner import Runner
from harness.record.checks import Check, CheckStatus

SPLIT_CLASSES = ("communication", "memcpy", "compute")


class TraceNaming(BaseModel):
    """Which trace events are what. Runbooks and recipes override fields for their device."""

    model_config = ConfigDict(extra="forbid")

    device_categories: list[str] = Field(
        default=["kernel", "gpu_memcpy", "gpu_memset"],
        description="Event `cat`s that are work on a device stream.")
    memcpy_categories: list[str] = Field(
        default=["gpu_memcpy", "gpu_memset"], description="Device categories that are memory copies/sets.")
    memcpy_patterns: list[str] = Field(
        default=[r"^Memcpy", r"^Memset", r"memcpy", r"^dma", r"dma.*copy", r"copy.*dma"],
        description="Regexes (searched, case-insensitive) on device event names that are memory copies.")
    communication_patterns: list[str] = Field(
        default=[r"nccl", r"rccl", r"hccl", r"xccl", r"all_?reduce", r"all_?gather", r"reduce_?scatter",
                 r"all_?to_?all", r"broadcast", r"send_?recv", r"custom_all_reduce", r"^c10d::", r"^gloo:"],
        description="Regexes (searched, case-insensitive) on device event names that are collectives.")
    runtime_categories: list[str] = Field(
        default=["cuda_runtime", "cuda_driver", "privateuse1_runtime", "privateuse1_driver", "xpu_runtime",
                 "mtia_runtime"],
        description="Event `cat`s of host runtime calls (launches, async copies).")
    launch_patterns: list[str] = Field(
        default=[r"Launch", r"MemcpyAsync", r"MemsetAsync"],
        description="Regexes on runtime event names that enqueue device work.")
    host_op_categories: list[str] = Field(default=["cpu_op"], description="Event `cat`s of host operators.")
    annotation_categories: list[str] = Field(
        default=["user_annotation", "gpu_user_annotation"],
        description="Event `cat`s of record_function ranges (steps; gloo/nccl collectives as spans).")
    device_annotation_categories: list[str] = Field(
        default=["gpu_user_annotation"],
        description="Annotation `cat`s that sit on a device stream (a record_function range as the device ran it).")
    python_categories: list[str] = Field(
        default=["python_function"], description="Event `cat`s of Python frames (with_stack=True).")
    receive_patterns: list[str] = Field(
        default=[r"recv"],
        description="Regexes on communication event names that receive from a peer (the pipeline's waits).")
    send_patterns: list[str] = Field(
        default=[r"send"],
        description="Regexes on communication names that send (NCCL's SendRecv kernel does both: not one receive).")
    blocking_patterns: list[str] = Field(
        default=[r"built-in method wait\b", r"\bsleep\b", r"Synchronize$", r"c10d::wait", r"wait_tensor"],
        description="Regexes on host events that block the thread (not busy time).")
    layer_patterns: list[str] = Field(
        default=[r"DecoderLayer", r"TransformerBlock", r"(?<!\w)Block$", r"LayerWithMoE"],
        description="Regexes on module class names (`nn.Module: <Class>_<n>` frames) that are one model layer.")
    step_patterns: list[str] = Field(
        default=[r"^ProfilerStep#\d+$"], description="Regexes on annotation names that mark one step.")
    compile_patterns: list[str] = Field(
        default=[r"Torch-Compiled Region", r"torch/_dynamo/", r"torch/_inductor/", r"CompiledFunction",
                 r"[Gg]raph ?[Cc]apture", r"GraphCapture", r"capture_graph", r"compile_fx"],
        description="Regexes on host event names that may be compilation or graph capture; a name that "
                    "recurs in two or more steps is the compiled code running, not compiling, and is not counted.")
    copy_op_patterns: list[str] = Field(
        default=[r"^aten::_to_copy$", r"^aten::copy_$", r"^aten::to$"],
        description="Host operators that copy a tensor between devices (a CPU fallback copies in and out).")
    to_cpu_op_patterns: list[str] = Field(
        default=[r"^aten::_to_cpu$"],
        description="Host operators that copy device tensors to the CPU (PyTorch's CPU fallback: at::_to_cpu).")
    device_copy_op_patterns: list[str] = Field(
        default=[r"^aten::_copy_from$", r"^aten::_copy_from_and_resize$"],
        description="Host operators that copy to or from a device (copy_ redispatches to _copy_from for a "
                    "device it has no kernel for; the CPU fallback copies results back with _copy_from_and_resize).")
    to_host_copy_patterns: list[str] = Field(
        default=[r"DtoH", r"D2H", r"DeviceToHost", r"Device\s*->\s*(Host|Pinned|Pageable)"],
        description="Regexes on device copy names that copy to the host.")
    to_device_copy_patterns: list[str] = Field(
        default=[r"HtoD", r"H2D", r"HostToDevice", r"(Host|Pinned|Pageable)\s*->\s*Device"],
        description="Regexes on device copy names that copy from the host to the device.")
    within_copy_patterns: list[str] = Field(
        default=[r"DtoD", r"D2D", r"DeviceToDevice", r"Device\s*->\s*Device", r"PtoP", r"P2P", r"HtoH", r"^Memset"],
        description="Regexes on device copy names that stay on one side (device to device, host to host, memsets).")

    def model_post_init(self, _context: Any) -> None:
        for field in ("memcpy_patterns", "communication_patterns", "launch_patterns", "receive_patterns", "send_patterns",
                      "blocking_patterns", "layer_patterns", "step_patterns", "compile_patterns", "copy_op_patterns",
                      "to_cpu_op_patterns", "device_copy_op_patterns", "to_host_copy_patterns",
                      "to_device_copy_patterns", "within_copy_patterns"):
            for pattern in getattr(self, field):
                try:
                    re.compile(pattern)
                except re.error as exc:
                    raise ValueError(f"{field}: invalid regex {pattern!r}: {exc}") from None

    def regex(self, field: str) -> str:
        return "|".join(f"(?:{p})" for p in getattr(self, field)) or r"(?!)"


# --------------------------------------------------------------------------- loading


class TraceError(HarnessError):
    """A trace file that is not a readable Chrome trace."""


class TraceMissing(TraceError):
    """A trace file that is not there or cannot be opened (the profiler wrote nothing)."""


# Bounds on what a trace may hold: traces can come from a directory someone else writes to, and
# each bound stops an input that would otherwise cost minutes or gigabytes (issue 36).
MAX_NAME_CHARS = 4096  # an event's name, category, pid or tid; longer events are skipped and counted
MAX_STRING_BYTES = 1 << 20  # a JSON string (any run of bytes without a quote): the file is refused
MAX_DEPTH = 64  # JSON nesting (a torch trace nests ~6 deep); ijson's cost grows with its square
GZIP_RATIO, GZIP_FLOOR = 100, 64 << 20  # decompressed bytes allowed: ratio x compressed size, at least the floor
MAX_TRACE_BYTES = 8 << 30  # decompressed or plain, whatever the compressed size

_NOT_MARKS = bytes(sorted(set(range(256)) - set(b'"[]{}')))  # translate() deletes these: quotes and brackets stay
_AS_PARENS = bytes.maketrans(b"[{]}", b"(())")
_STRING = re.compile(rb'"[^"]*"')  # over the marks only: a string is a quote pair with brackets between


class BoundedTrace:
    """A trace's bytes (decompressed when gzip) that refuses, with TraceError, a file over its
    size bounds, a string over MAX_STRING_BYTES or nesting deeper than MAX_DEPTH, checked as the
    bytes are read, before a parser holds them. `read(size)` returns what the file holds, as a
    binary file does; `seek(0)` starts over; `close()` closes `source` and the file under it."""

    def __init__(self, path: Path, source: IO[bytes], limit: int, file: IO[bytes]):
        self.path, self._source, self._limit, self._file = path, source, limit, file
        self.seek(0)

    def seek(self, offset: int) -> int:
        """Back to the first byte (0, returned), the checks started over; ValueError for any
        other offset."""
        if offset:
            raise ValueError("a trace can only be rewound")
        self._source.seek(0)
        self._read, self._depth, self._in_string, self._since_quote, self._escapes = 0, 0, False, 0, b""
        return 0

    def read(self, size: int = -1) -> bytes:
        """Up to `size` bytes (all that is left when negative); b"" at the end. TraceError when
        the file is corrupt or what has been read breaks a bound."""
        if size < 0 or size > MAX_STRING_BYTES:  # each chunk at most the string bound: see _check
            return b"".join(iter(lambda: self.read(MAX_STRING_BYTES), b""))
        try:
            chunk = self._source.read(size)
        except (OSError, EOFError, zlib.error):
            raise TraceError(f"{self.path}: cannot read the trace: corrupt or truncated compressed data") from None
        self._read += len(chunk)
        if self._read > self._limit:
            raise TraceError(f"{self.path}: the trace holds more than {self._limit:,} bytes; "
                             f"refused (at most {GZIP_RATIO}x its compressed size, {MAX_TRACE_BYTES:,} in all)")
        self._check(chunk)
        return chunk

    def close(self) -> None:
        """Close the trace and the file under it."""
        self._source.close()
        self._file.close()  # a GzipFile leaves the file it was given open

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def _check(self, chunk: bytes) -> None:
        data = self._escapes + chunk
        # a run of backslashes cut by the chunk's end is kept for the next, to pair escapes right
        cut = len(data) - len(data.rstrip(b"\\")) if chunk else 0
        data, self._escapes = (data[:-cut], data[-cut:]) if cut else (data, b"")
        first, last = data.find(b'"'), data.rfind(b'"')
        if self._since_quote + (len(data) if last < 0 else first) > MAX_STRING_BYTES:
            raise TraceError(f"{self.path}: a string longer than {MAX_STRING_BYTES:,} bytes; refused")
        self._since_quote = self._since_quote + len(data) if last < 0 else len(data) - last - 1
        if b"\\" in data:  # escaped backslashes, then escaped quotes: what is left of a quote delimits
            data = data.replace(b"\\\\", b"").replace(b'\\"', b"")
        marks = data.translate(None, _NOT_MARKS)
        if self._in_string:
            marks = b'"' + marks
        # Two quotes with no bracket between bound a string or a stretch outside them that holds
        # no bracket: dropping them keeps every bracket on its side, and leaves the few strings
        # that hold brackets (C++ names' `{lambda()#1}`) to the regex.
        marks = marks.replace(b'""', b"")
        outside, quote, _ = _STRING.sub(b"", marks).partition(b'"')  # an unclosed string runs to the end
        self._in_string = bool(quote)
        nesting = outside.translate(_AS_PARENS)
        height = 0  # the deepest nesting of brackets opened and closed within the chunk
        while b"()" in nesting:
            nesting, height = nesting.replace(b"()", b""), height + 1
            if height > MAX_DEPTH:
                break
        closes = nesting.count(b")")  # the rest: closes of brackets opened before, then ones still open
        if self._depth + len(nesting) - closes + height > MAX_DEPTH:
            raise TraceError(f"{self.path}: JSON nested deeper than {MAX_DEPTH} levels; refused")
        self._depth += len(nesting) - 2 * closes


def open_trace(path: Path, *, within: Path | None = None) -> BoundedTrace:
    """The trace's bytes, decompressed when it is gzip (told by its magic, not its name), read
    within the bounds of `BoundedTrace`: at most GZIP_RATIO times a gzip file's size (at least
    GZIP_FLOOR) and MAX_TRACE_BYTES in all. TraceMissing when it cannot be opened. With `within`
    (the directory the trace was found in), the file opened is the regular file under it that
    `path` leads to, and no other: TraceError when it leads outside, or when a link takes the
    place of a checked name while it is opened (see `_open_within`)."""
    try:
        if within is None:
            handle = open(path, "rb")  # noqa: SIM115 — returned to the caller, who closes it
        else:
            handle = open(_open_within(path, within), "rb")  # noqa: SIM115 — as above
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                handle.close()
                raise TraceError(f"{path}: not a regular file; refused")
        size = os.fstat(handle.fileno()).st_size
    except OSError as exc:
        raise TraceMissing(f"trace not found: {path} (cannot read trace: {exc.strerror or type(exc).__name__})") from None
    if handle.read(2) == b"\x1f\x8b":
        handle.seek(0)
        limit = min(max(GZIP_RATIO * size, GZIP_FLOOR), MAX_TRACE_BYTES)
        return BoundedTrace(path, gzip.GzipFile(fileobj=handle), limit, handle)  # type: ignore[arg-type]
    return BoundedTrace(path, handle, MAX_TRACE_BYTES, handle)


def _open_within(path: Path, within: Path) -> int:
    """A descriptor of the file `path` resolves to, opened from `within` one component at a
    time with O_NOFOLLOW: a directory scan checks a trace's links, and a link swapped in
    between that check and the open (a shared directory's writer racing the reader) fails here
    (ELOOP) instead of being followed to a private file. O_NONBLOCK: a FIFO put in its place
    opens at once (and is refused as not a regular file) instead of blocking."""
    home = within.resolve()
    parts = Path(os.path.realpath(path)).parts
    if parts[:len(home.parts)] != home.parts or len(parts) == len(home.parts):
        raise TraceError(f"{path}: a symlink leading outside {within}; refused")
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC
    directory = os.open(home, flags | os.O_DIRECTORY)
    try:
        for part in parts[len(home.parts):-1]:
            inner = os.open(part, flags | os.O_DIRECTORY, dir_fd=directory)
            os.close(directory)
            directory = inner
        return os.open(parts[-1], flags | os.O_NONBLOCK, dir_fd=directory)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise TraceError(f"{path}: a symlink took the place of a checked name under {within}; refused") from None
        raise
    finally:
        os.close(directory)


def load_trace(path: str | Path) -> dict[str, Any]:
    """The one trace loader: a torch-profiler Chrome trace, plain or gzip (told by its first
    bytes, not its name), as {"traceEvents": [...], ...}; the bare-array form is wrapped.
    Read within `open_trace`'s bounds. TraceMissing when the file is absent or unreadable,
    TraceError (one line, never quoting the file) when it is not a trace or breaks a bound."""
    path = Path(path)
    with open_trace(path) as handle:
        raw = handle.read()
    try:
        data = json.loads(raw)
    except ValueError:  # JSONDecodeError, UnicodeDecodeError: their messages quote the bytes
        raise TraceError(f"{path}: not a JSON trace: it does not parse as JSON") from None
    events = data.get("traceEvents") if isinstance(data, dict) else data if isinstance(data, list) else None
    if not isinstance(events, list):
        raise TraceError(f"{path}: not a Chrome trace (no traceEvents list)")
    return data if isinstance(data, dict) else {"traceEvents": data}


def events_frame(trace: dict[str, Any], naming: TraceNaming) -> pd.DataFrame:
    """Complete ('X') events as a frame: name, cat, pid, tid, ts, dur, end (µs), correlation,
    and the device class (communication | memcpy | compute) of device events. An event whose
    name or category is over MAX_NAME_CHARS is left out (the naming regexes run on names),
    counted in `frame.attrs["oversized"]`, and so is a malformed one (a field of the wrong type)
    in `frame.attrs["malformed"]`."""
    rows, flows, oversized, malformed = [], {}, 0, 0
    for event in trace["traceEvents"]:
        if not isinstance(event, dict):
            continue
        phase = event.get("ph")
        if phase == "X" and "ts" in event:
            name, cat = str(event.get("name", "")), str(event.get("cat", ""))
            if len(name) > MAX_NAME_CHARS or len(cat) > MAX_NAME_CHARS:
                oversized += 1
                continue
            try:
                rows.append((name, cat, event.get("pid"), event.get("tid"), float(event["ts"]),
                             float(event.get("dur") or 0.0), (event.get("args") or {}).get("correlation")))
            except (AttributeError, TypeError, ValueError):
                malformed += 1
        elif phase in ("s", "f") and "id" in event:  # ac2g flows: launch ('s') -> device work ('f')
            try:
                flows[(event.get("pid"), event.get("tid"), float(event.get("ts", 0)))] = event["id"]
            except (TypeError, ValueError):
                malformed += 1
    frame = pd.DataFrame(rows, columns=["name", "cat", "pid", "tid", "ts", "dur", "correlation"])
    frame.attrs["oversized"], frame.attrs["malformed"] = oversized, malformed
    frame["end"] = frame["ts"] + frame["dur"]
    if flows and frame["correlation"].isna().any():
        # Older traces carry the launch->kernel link only as flow events at the same pid/tid/ts.
        keys = list(zip(frame["pid"], frame["tid"], frame["ts"]))
        from_flows = pd.Series([flows.get(key) for key in keys], index=frame.index)
        frame["correlation"] = frame["correlation"].where(frame["correlation"].notna(), from_flows)
    frame["device"] = frame["cat"].isin(naming.device_categories)
    names = frame["name"]
    is_comm = names.str.contains(naming.regex("communication_patterns"), case=False, regex=True)
    is_copy = frame["cat"].isin(naming.memcpy_categories) | names.str.contains(
        naming.regex("memcpy_patterns"), case=False, regex=True)
    frame["kind"] = None
    frame.loc[frame["device"], "kind"] = "compute"
    frame.loc[frame["device"] & is_copy, "kind"] = "memcpy"
    frame.loc[frame["device"] & is_comm, "kind"] = "communication"
    return frame


# --------------------------------------------------------------------------- intervals


def union_length(starts: list[float], ends: list[float]) -> float:
    """Total length covered by the intervals [start, end)."""
    total, cursor = 0.0, float("-inf")
    for start, end in sorted(zip(starts, ends)):
        if end <= cursor:
            continue
        total += end - max(start, cursor)
        cursor = end
    return total


def _split(events: pd.DataFrame, window: float) -> dict[str, float]:
    """communication / memcpy / compute / idle (µs) of a set of device events in a window."""
    covered: dict[str, float] = {}
    for depth in range(1, len(SPLIT_CLASSES) + 1):
        chosen = events[events["kind"].isin(SPLIT_CLASSES[:depth])]
        covered[SPLIT_CLASSES[depth - 1]] = union_length(chosen["ts"].tolist(), chosen["end"].tolist())
    busy = covered["compute"]  # the union of all three classes
    return {
        "communication": covered["communication"],
        "memcpy": covered["memcpy"] - covered["communication"],
        "compute": busy - covered["memcpy"],
        "idle": window - busy,
        "window": window,
    }


# --------------------------------------------------------------------------- analysis


class StreamSplit(BaseModel):
    device: str  # the device's pid in the trace
    stream: str  # the tid (stream id) on that device; 'all' is the union over its streams
    window_us: float = Field(description="First device event start to last device event end on this device.")
    compute_us: float
    memcpy_us: float
    communication_us: float
    idle_us: float


class NamedTime(BaseModel):
    name: str
    count: int
    total_us: float
    self_us: float | None = None  # host operators: excluding nested operators on the same thread
    mean_us: float
    max_us: float
    kind: Literal["compute", "memcpy", "communication"] | None = None  # device events only


class LaunchGaps(BaseModel):
    launches: int = Field(description="Runtime launch events matched to device work by correlation id.")
    unmatched: int = Field(description="Launch events with no device event of the same correlation id.")
    mean_us: float | None = None
    median_us: float | None = None
    p90_us: float | None = None
    max_us: float | None = None
    worst: list[dict[str, Any]] = Field(default_factory=list, description="Largest gaps: kernel, launch, gap.")


class TraceReport(BaseModel):
    source: str
    events: int
    device_events: int
    host_ops: int
    split: list[StreamSplit]
    top_kernels: list[NamedTime]
    top_operators: list[NamedTime]
    launch_gaps: LaunchGaps
    notes: list[str] = Field(default_factory=list)
    naming: TraceNaming


def analyze_trace(trace: dict[str, Any], naming: TraceNaming | None = None, *, source: str = "",
                  top: int = 15) -> TraceReport:
    """Device time split, top kernels and host operators (µs), launch gaps; `trace` as `load_trace`
    returns it, `top` rows per table."""
    naming = naming or TraceNaming()
    frame = events_frame(trace, naming)
    device = frame[frame["device"]]
    host_ops = frame[frame["cat"].isin(naming.host_op_categories)]
    notes = []
    if frame.attrs["oversized"]:
        notes.append(f"{frame.attrs['oversized']:,} event(s) skipped: a name or category over {MAX_NAME_CHARS:,} "
                     "characters")
    if frame.attrs["malformed"]:
        notes.append(f"{frame.attrs['malformed']:,} malformed event(s) skipped (a field of the wrong type)")
    if device.empty:
        notes.append(f"no device events (categories {', '.join(naming.device_categories)}): "
                     "a CPU-only trace, or the device uses other category names")
    return TraceReport(
        source=source, events=len(frame), device_events=len(device), host_ops=len(host_ops),
        split=stream_split(device), top_kernels=top_device_events(device, top),
        top_operators=top_host_operators(host_ops, top), launch_gaps=launch_gaps(frame, naming),
        notes=notes, naming=naming)


def stream_split(device: pd.DataFrame) -> list[StreamSplit]:
    """Per device and stream (and 'all' streams): compute / memcpy / communication / idle µs over
    the device's window."""
    rows = []
    for pid, on_device in device.groupby("pid", sort=True):
        window = float(on_device["end"].max() - on_device["ts"].min())
        groups = [("all", on_device)] + [(str(tid), part) for tid, part in on_device.groupby("tid", sort=True)]
        for stream, part in groups:
            split = _split(part, window)
            rows.append(StreamSplit(device=str(pid), stream=stream, window_us=window,
                                    compute_us=split["compute"], memcpy_us=split["memcpy"],
                                    communication_us=split["communication"], idle_us=split["idle"]))
    return rows


def top_device_events(device: pd.DataFrame, top: int) -> list[NamedTime]:
    """The `top` device events by total µs: count, total, mean, max and kind."""
    if device.empty:
        return []
    grouped = device.groupby("name").agg(count=("dur", "size"), total_us=("dur", "sum"), mean_us=("dur", "mean"),
                                         max_us=("dur", "max"), kind=("kind", "first"))
    grouped = grouped.sort_values("total_us", ascending=False).head(top)
    return [NamedTime(name=name, **row) for name, row in grouped.to_dict("index").items()]


def self_times(ops: pd.DataFrame) -> pd.Series:
    """Duration minus the time of directly nested operators on the same thread."""
    self_us = ops["dur"].copy()
    for _, thread in ops.sort_values(["ts", "dur"], ascending=[True, False]).groupby(["pid", "tid"], sort=False):
        stack: list[tuple[Any, float]] = []  # (index, end)
        for index, ts, end, dur in zip(thread.index, thread["ts"], thread["end"], thread["dur"]):
            while stack and stack[-1][1] <= ts:
                stack.pop()
            if stack:
                self_us[stack[-1][0]] -= dur
            stack.append((index, end))
    return self_us.clip(lower=0)


def top_host_operators(ops: pd.DataFrame, top: int) -> list[NamedTime]:
    """The `top` host operators by self µs (then total µs): count, self, total, mean, max."""
    if ops.empty:
        return []
    ops = ops.assign(self_us=self_times(ops))
    grouped = ops.groupby("name").agg(count=("dur", "size"), total_us=("dur", "sum"), self_us=("self_us", "sum"),
                                      mean_us=("dur", "mean"), max_us=("dur", "max"))
    grouped = grouped.sort_values(["self_us", "total_us"], ascending=False).head(top)
    return [NamedTime(name=name, **row) for name, row in grouped.to_dict("index").items()]


def launch_gaps(frame: pd.DataFrame, naming: TraceNaming, worst: int = 5) -> LaunchGaps:
    """Launch start → device start of the work it enqueued, matched by correlation id."""
    launches = frame[frame["cat"].isin(naming.runtime_categories)
                     & frame["name"].str.contains(naming.regex("launch_patterns"), regex=True)
                     & frame["correlation"].notna()]
    device = frame[frame["device"] & frame["correlation"].notna()]
    matched = launches.merge(device, on="correlation", suffixes=("_launch", "_device"))
    if matched.empty:
        return LaunchGaps(launches=0, unmatched=len(launches))
    gaps = matched["ts_device"] - matched["ts_launch"]
    order = gaps.sort_values(ascending=False).index[:worst]
    return LaunchGaps(
        launches=len(matched), unmatched=len(launches) - matched["correlation"].nunique(),
        mean_us=float(gaps.mean()), median_us=float(gaps.median()), p90_us=float(gaps.quantile(0.9)),
        max_us=float(gaps.max()),
        worst=[{"kernel": matched.at[i, "name_device"], "launch": matched.at[i, "name_launch"],
                "gap_us": float(gaps[i])} for i in order])


# --------------------------------------------------------------------------- diff


class NamedDelta(BaseModel):
    name: str
    before_us: float
    after_us: float
    delta_us: float
    before_count: int
    after_count: int
    status: Literal["changed", "new", "vanished"]


class TraceDiff(BaseModel):
    before: str
    after: str
    split_delta_us: dict[str, float] = Field(description="Device-wide ('all' streams) change per class.")
    kernels: list[NamedDelta]
    operators: list[NamedDelta]
    new_kernels: list[str]
    vanished_kernels: list[str]


def diff_traces(before: dict[str, Any], after: dict[str, Any], naming: TraceNaming | None = None, *,
                before_name: str = "before", after_name: str = "after", top: int = 20) -> TraceDiff:
    """Per-kernel and per-operator total time change, plus kernels that appeared or vanished."""
    naming = naming or TraceNaming()
    frames = [events_frame(trace, naming) for trace in (before, after)]
    devices = [frame[frame["device"]] for frame in frames]
    kernels = _named_deltas(devices[0], devices[1])
    operators = _named_deltas(*(frame[frame["cat"].isin(naming.host_op_categories)] for frame in frames))
    totals = []
    for device in devices:
        rows = [row for row in stream_split(device) if row.stream == "all"]
        totals.append({k: sum(getattr(r, f"{k}_us") for r in rows) for k in ("compute", "memcpy", "communication", "idle")})
    return TraceDiff(
        before=before_name, after=after_name,
        split_delta_us={k: totals[1][k] - totals[0][k] for k in totals[0]},
        kernels=kernels[:top], operators=operators[:top],
        new_kernels=sorted(d.name for d in kernels if d.status == "new"),
        vanished_kernels=sorted(d.name for d in kernels if d.status == "vanished"))


def _named_deltas(before: pd.DataFrame, after: pd.DataFrame) -> list[NamedDelta]:
    sums = [frame.groupby("name")["dur"].agg(["sum", "size"]) for frame in (before, after)]
    joined = sums[0].merge(sums[1], how="outer", left_index=True, right_index=True,
                           suffixes=("_before", "_after")).fillna(0)
    deltas = []
    for name, row in joined.iterrows():
        status = "new" if row["size_before"] == 0 else "vanished" if row["size_after"] == 0 else "changed"
        deltas.append(NamedDelta(name=str(name), before_us=row["sum_before"], after_us=row["sum_after"],
                                 delta_us=row["sum_after"] - row["sum_before"], before_count=int(row["size_before"]),
                                 after_count=int(row["size_after"]), status=status))
    return sorted(deltas, key=lambda d: abs(d.delta_us), reverse=True)


# --------------------------------------------------------------------------- evidence


def markdown_table(header: list[str], rows: list[list[Any]]) -> str:
    """A GitHub-markdown table; floats print with one decimal and thousands separators."""
    def cell(value: Any) -> str:
        text = f"{value:,.1f}" if isinstance(value, float) else str(value)
        return text.replace("|", "\\|")

    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def _share(us: float, window: float) -> str:
    return f"{us:,.1f} ({us / window:.0%})" if window else f"{us:,.1f}"


def render_report(report: TraceReport) -> str:
    """A TraceReport as markdown (for the trace_summary.md evidence file)."""
    parts = [f"### Trace {report.source}\n", *(f"- {note}\n" for note in report.notes)]
    if report.split:
        rows = [[s.device, s.stream, *(_share(us, s.window_us) for us in
                                       (s.compute_us, s.memcpy_us, s.communication_us, s.idle_us)), s.window_us]
                for s in report.split]
        parts += ["\n**Device time split (µs)**\n\n", markdown_table(
            ["device", "stream", "compute", "memcpy", "communication", "idle", "window"], rows)]
    if report.top_kernels:
        parts += ["\n**Top kernels**\n\n", markdown_table(
            ["kernel", "kind", "count", "total µs", "mean µs", "max µs"],
            [[k.name, k.kind, k.count, k.total_us, k.mean_us, k.max_us] for k in report.top_kernels])]
    if report.top_operators:
        parts += ["\n**Top operators (host)**\n\n", markdown_table(
            ["operator", "count", "self µs", "total µs", "mean µs"],
            [[o.name, o.count, o.self_us, o.total_us, o.mean_us] for o in report.top_operators])]
    gaps = report.launch_gaps
    if gaps.launches:
        parts.append(f"\n**Launch → device start**: {gaps.launches} launches, median {gaps.median_us:,.1f} µs, "
                     f"p90 {gaps.p90_us:,.1f} µs, max {gaps.max_us:,.1f} µs"
                     f"{f', {gaps.unmatched} unmatched' if gaps.unmatched else ''}\n")
    return "".join(parts)


def render_diff(diff: TraceDiff) -> str:
    """A TraceDiff as markdown (for the trace_diff.md evidence file)."""
    parts = [f"### Trace diff: {diff.before} → {diff.after}\n\n",
             markdown_table(["class", "Δ µs"], [[k, v] for k, v in diff.split_delta_us.items()])]
    for title, rows in (("Kernels", diff.kernels), ("Operators (host)", diff.operators)):
        if rows:
            parts += [f"\n**{title}**\n\n", markdown_table(
                ["name", "status", "before µs", "after µs", "Δ µs", "count before", "count after"],
                [[d.name, d.status, d.before_us, d.after_us, d.delta_us, d.before_count, d.after_count]
                 for d in rows])]
    return "".join(parts)


def write_evidence_pair(model: BaseModel, markdown: str, evidence_dir: Path, stem: str) -> list[Path]:
    """Write `model` as `<stem>.json` and `markdown` as `<stem>.md` under evidence_dir (created
    when absent); returns both paths."""
    evidence_dir = Path(evidence_dir)
    evidence_dir.mkdir(parents=True, exist_ok=True)
    json_path, md_path = evidence_dir / f"{stem}.json", evidence_dir / f"{stem}.md"
    json_path.write_text(model.model_dump_json(indent=2) + "\n")
    md_path.write_text(markdown)
    return [json_path, md_path]


def write_trace_evidence(report: TraceReport, evidence_dir: Path, stem: str = "trace_summary") -> list[Path]:
    """Write `<stem>.json` and `<stem>.md` of a TraceReport under evidence_dir; returns both paths."""
    return write_evidence_pair(report, render_report(report), evidence_dir, stem)


def write_diff_evidence(diff: TraceDiff, evidence_dir: Path, stem: str = "trace_diff") -> list[Path]:
    """Write `<stem>.json` and `<stem>.md` of a TraceDiff under evidence_dir; returns both paths."""
    return write_evidence_pair(diff, render_diff(diff), evidence_dir, stem)


def report_check(report: TraceReport, evidence: list[str], name: str = "profile.trace") -> Check:
    """The check of an analysed trace: passed with the time split (µs) as metrics and the top
    kernels as detail; failed when it holds no complete events; inconclusive without device events."""
    path = report.source
    everything = [r for r in report.split if r.stream == "all"]
    metrics = {"device_events": report.device_events, "host_ops": report.host_ops,
               "launch_gap_median_us": report.launch_gaps.median_us}
    for key in ("compute", "memcpy", "communication", "idle"):
        metrics[f"{key}_us"] = sum(getattr(r, f"{key}_us") for r in everything)
    status, reason = CheckStatus.passed, None
    if report.events == 0:
        status, reason = CheckStatus.failed, f"{path}: the trace has no complete ('X') events"
    elif report.device_events == 0:
        status, reason = CheckStatus.inconclusive, report.notes[0]
    top = "\n".join(f"{k.name}: {k.count} calls, {k.total_us / 1000:,.1f} ms" for k in report.top_kernels[:10])
    return Check(name=name, status=status, reason=reason, evidence=evidence, metrics=metrics,
                 detail=f"top kernels by total time:\n{top}" if top else None)


def profiling_naming(runbook: BaseModel) -> list[tuple[str, TraceNaming]]:
    """The one spec of a runner of a `Runbook`'s traces (not imported: the runbook module imports
    this one): the naming of its `profiling` section, into the runner's dir; none when the
    runbook does not profile."""
    return [] if runbook.profiling is None else [("", TraceNaming.model_validate(runbook.profiling.naming))]


class TraceRunner(Runner[TraceNaming, TraceReport]):
    """One trace analysed into `trace_summary.json` / `.md` (and, when a reference trace was
    diffed against it, `trace_diff.json` beside them): the `performance.trace` check."""

    name = "traces"
    section = "profiling"
    spec = TraceNaming
    record = TraceReport
    summary = "trace_summary.json"
    check_name: ClassVar[str] = "performance.trace"

    def specs(self, runbook: BaseModel) -> list[tuple[str, TraceNaming]]:
        return profiling_naming(runbook)

    def run(self, spec: TraceNaming, evidence_dir: Path, *, trace: Path, source: str | None = None,
            reference: Path | None = None) -> TraceReport:
        """Analyse `trace` (HarnessError when it or `reference` cannot be read); `source` names
        it in the report (default: its path). With a `reference` trace, the diff from it to
        `trace` is written beside the summary (`trace_diff.json` / `.md`)."""
        report = analyze_trace(load_trace(trace), spec, source=source or str(trace))
        write_trace_evidence(report, evidence_dir)
        if reference is not None:
            diff = diff_traces(load_trace(reference), load_trace(trace), spec, before_name="reference",
                               after_name="candidate")
            write_diff_evidence(diff, evidence_dir)
        return report

    def checks(self, record: TraceReport, evidence_dir: Path, spec: TraceNaming) -> list[Check]:
        evidence = [str(evidence_dir / record.source), *(str(p) for p in sorted(evidence_dir.glob("trace_*"))
                                                         if p.suffix in (".json", ".md", ".png"))]
        check = report_check(record, evidence, name=self.check_name)
        diff_file = evidence_dir / "trace_diff.json"
        if diff_file.is_file():
            diff = TraceDiff.model_validate_json(diff_file.read_text())
            changes = "\n".join(f"{d.name}: {d.status}, {d.delta_us / 1000:+,.1f} ms "
                                f"({d.before_count} → {d.after_count} calls)" for d in diff.kernels[:10])
            check.detail = f"{check.detail or ''}\n\nagainst the reference trace (largest changes):\n{changes}".strip()
            check.metrics["diff_total_ms"] = round(sum(diff.split_delta_us.values()) / 1000, 1)
        return [check]
