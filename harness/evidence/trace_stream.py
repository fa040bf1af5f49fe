"""Per-rank Chrome traces read as a stream: a 60K-prefill step's trace is hundreds of MB per rank,
so events are parsed one at a time (ijson's C backend) into compact columns, never a whole-file
DOM; and a directory of per-rank traces is grouped by rank.

    ranks = group_traces([Path("traces/")])        # [RankTrace], ordered by (dp, pp, tp, ep)
    columns = read_columns(ranks[0].path)          # EventColumns: ts, dur, tid, key per 'X' event

Ranks come from SGLang's per-rank file names (`<id>-TP-<t>-PP-<p>.trace.json.gz`, also `-DP-<d>`
and `-EP-<e>`; sglang/srt/managers/scheduler_profiler_mixin.py), vLLM's
(`dp<d>_pp<p>_tp<t>_dcp<c>_ep<e>_rank<r>.<ns>.pt.trace.json.gz`; vllm/v1/worker/gpu_worker.py) and, when a name carries none,
from the trace's own `distributedInfo` (torch/profiler/profiler.py `_get_distributed_info`).
"""

from __future__ import annotations

import io
import operator
import re
from array import array
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import ijson
import numpy as np
from pydantic import BaseModel

from harness.evidence.traces import MAX_NAME_CHARS, TraceError, TraceMissing, open_trace

HEADER_BYTES = 1 << 20  # top-level fields torch writes before traceEvents (distributedInfo among them)
# The per-rank name forms, one alternative per engine: SGLang's `-TP-0-PP-1` and vLLM's
# `dp0_pp1_tp0_dcp0_ep0_rank1` (vllm/distributed/utils.py get_worker_rank_suffix, 0.27.1 :696)
_RANK_TOKEN = re.compile(r"(?<![A-Za-z])(?:(TP|PP|DP|EP)-(\d+)|(tp|pp|dp|ep)(\d+)(?=[_.]))")
# vLLM before 0.17 names a worker's trace by its global rank only: `<instance_id>-rank-<rank>`
# (vllm/v1/worker/gpu_worker.py, 0.12.0 :95 to 0.16.0 :108; 0.17.0 has the dp/pp/tp tokens)
_GLOBAL_RANK = re.compile(r"-rank-(\d+)(?=[_.])")


class RankId(BaseModel):
    """Where a trace sits in the parallel layout (0 where the layout has no such axis)."""

    tp: int = 0
    pp: int = 0
    dp: int = 0
    ep: int = 0
    rank: int | None = None  # the global rank, from distributedInfo

    @property
    def label(self) -> str:
        """'PP2', 'TP1-PP2', 'DP1-TP0-PP3': the axes that are not all zero in this trace's name."""
        parts = [f"{axis.upper()}{getattr(self, axis)}" for axis in ("dp", "tp", "ep") if getattr(self, axis)]
        return "-".join([*parts, f"PP{self.pp}"])


class RankTrace(BaseModel):
    path: Path
    rank: RankId
    header: dict[str, Any]  # the trace's top-level fields other than traceEvents


def read_header(path: Path) -> dict[str, Any]:
    """The top-level fields of a trace that come before `traceEvents` within its first MB
    (torch writes distributedInfo, baseTimeNanoseconds and deviceProperties there); {} for the
    bare-array form."""
    with open_trace(path) as handle:
        head = handle.read(HEADER_BYTES)
    header: dict[str, Any] = {}
    if not head.lstrip().startswith(b"{"):
        return header
    parser = ijson.kvitems(io.BytesIO(head.split(b'"traceEvents"', 1)[0].rstrip().rstrip(b",") + b"}"), "",
                           use_float=True)
    try:
        for key, value in parser:
            header[key] = value
    except (ijson.JSONError, ValueError):
        pass  # a header longer than HEADER_BYTES (or garbage, which reading the events reports)
    return header


def rank_of(path: Path, header: dict[str, Any]) -> RankId:
    """The trace's place in the layout: SGLang's `-TP-<t>-PP-<p>` (`-DP-`, `-EP-`) or vLLM's
    `dp<d>_pp<p>_tp<t>_..._ep<e>` name tokens, else the global rank (older vLLM's `-rank-<n>`
    name, else `distributedInfo.rank`) taken as the pipeline stage."""
    info = header.get("distributedInfo")
    global_rank = info.get("rank") if isinstance(info, dict) else None
    global_rank = global_rank if isinstance(global_rank, int) else None
    tokens = {(axis or vaxis).lower(): int(number or vnumber)
              for axis, number, vaxis, vnumber in _RANK_TOKEN.findall(path.name)}
    if tokens:
        return RankId(**tokens, rank=global_rank)
    named = _GLOBAL_RANK.search(path.name)
    if named:
        return RankId(pp=int(named[1]), rank=int(named[1]))
    if global_rank is not None:
        return RankId(pp=global_rank, rank=global_rank)
    return RankId()


def trace_files(paths: Iterable[Path]) -> list[Path]:
    """The `.json` / `.json.gz` traces of files and directories (a directory: its own files,
    sorted); HarnessError for a path that is neither, a directory without traces, or a file in
    a directory that is a symlink leading outside it (a shared directory's link to a private file)."""
    found: list[Path] = []
    for path in map(Path, paths):
        if path.is_dir():
            inside = sorted(p for p in path.iterdir() if p.is_file() and p.name.endswith((".json", ".json.gz")))
            home = path.resolve()
            for link in (p for p in inside if p.is_symlink() and not p.resolve().is_relative_to(home)):
                raise TraceError(f"{link}: a symlink leading outside {path}; refused")
            # a profiler's side files (`cpu-time-PP-0.json` beside the `-PP-0` trace) are JSON too
            inside = [p for p in inside if _is_trace_document(p)]
            if not inside:
                raise TraceMissing(f"{path}: no .json or .json.gz traces in the directory")
            found += inside
        elif path.is_file():
            found.append(path)
        else:
            raise TraceMissing(f"trace not found: {path}")
    return found


def _is_trace_document(path: Path) -> bool:
    """Whether `path` may be a Chrome trace: anything but a JSON object with no `traceEvents`
    key in its header (HEADER_BYTES), a profiler's side file. A file that cannot be read, or is
    not JSON at all, counts as one: reading it says what is wrong, never a silent skip."""
    try:
        with open_trace(path) as handle:
            head = handle.read(HEADER_BYTES)
    except (OSError, TraceError, TraceMissing):
        return True
    return not (head.lstrip()[:1] == b"{" and b'"traceEvents"' not in head)


def group_traces(paths: Iterable[Path]) -> list[RankTrace]:
    """Every trace under `paths` with its rank, ordered by (dp, pp, tp, ep); TraceError when two
    traces claim the same rank. Where some file names carry rank tokens, a file without any is
    left out: SGLang's `merged-<id>` trace (--merge-profiles) repeats every rank's events, and
    vLLM's API-process trace (`<host>_<pid>.async_llm.<ns>.pt.trace.json.gz`) holds no device work."""
    files = trace_files(paths)
    if any(_ranked(p) for p in files):
        files = [p for p in files if _ranked(p)]
    ranks = []
    for path in files:
        header = read_header(path)
        ranks.append(RankTrace(path=path, rank=rank_of(path, header), header=header))
    ranks.sort(key=lambda r: (r.rank.dp, r.rank.pp, r.rank.tp, r.rank.ep, r.path.name))
    seen: dict[tuple[int, int, int, int], Path] = {}
    for item in ranks:
        key = (item.rank.dp, item.rank.pp, item.rank.tp, item.rank.ep)
        if key in seen and len(ranks) > 1:
            raise TraceError(f"{seen[key].name} and {item.path.name} are both rank {item.rank.label}: "
                             "analyse one run's traces at a time")
        seen[key] = item.path
    return ranks


def _ranked(path: Path) -> bool:
    """Whether the trace's name says its rank."""
    return bool(_RANK_TOKEN.search(path.name) or _GLOBAL_RANK.search(path.name))


@contextmanager
def events_of(path: Path) -> Iterator[Iterator[dict[str, Any]]]:
    """The trace's events as an iterator, one at a time (plain or gzip; `{"traceEvents": [...]}`
    or a bare array), valid inside the `with`, read within `open_trace`'s bounds; TraceError
    (one line, never quoting the file) when the file is not a JSON trace or breaks a bound."""
    with open_trace(path) as handle:
        try:
            first = handle.read(64).lstrip()[:1]
            handle.seek(0)
            yield ijson.items(handle, "item" if first == b"[" else "traceEvents.item", use_float=True)
        except (ijson.JSONError, ValueError):  # ijson's message quotes the bytes around the error
            raise TraceError(f"{path}: not a JSON trace: it does not parse as JSON") from None


def iter_events(path: Path) -> Iterator[dict[str, Any]]:
    """The trace's events one at a time (see `events_of`)."""
    with events_of(path) as events:
        yield from events


class EventColumns:
    """The complete ('X') events of one trace as columns: ts and dur (µs, float64), the thread
    (index into `threads`, a (pid, tid) pair) and the kind key (index into `keys`, a (cat, name)
    pair), plus the threads' names from the trace's metadata events, and the count of events
    left out: `oversized` (a name, category, pid or tid over MAX_NAME_CHARS characters) and
    `malformed` (not an object, or a field of the wrong type)."""

    def __init__(self, ts: np.ndarray, dur: np.ndarray, tid: np.ndarray, key: np.ndarray, correlation: np.ndarray,
                 keys: list[tuple[str, str]], threads: list[tuple[Any, Any]],
                 thread_names: dict[tuple[Any, Any], str], oversized: int = 0, malformed: int = 0):
        self.ts, self.dur, self.tid, self.key = ts, dur, tid, key
        self.correlation = correlation  # args.correlation (launch <-> device work), -1 where none
        self.keys, self.threads, self.thread_names = keys, threads, thread_names
        self.oversized, self.malformed = oversized, malformed

    def skipped(self, path: Path) -> list[str]:
        """One line per kind of event left out of `path`'s columns, with the count; [] if none."""
        lines = []
        if self.oversized:
            lines.append(f"{path}: {_events(self.oversized)} skipped: a name, category, pid or tid over "
                         f"{MAX_NAME_CHARS:,} characters")
        if self.malformed:
            lines.append(f"{path}: {_events(self.malformed, 'malformed ')} skipped (not an object, or a field "
                         "of the wrong type)")
        return lines


def _events(count: int, kind: str = "") -> str:
    return f"{count:,} {kind}event{'s' if count != 1 else ''}"


def _fits(fields: tuple[Any, ...]) -> bool:
    """Whether an event's identifying fields are short enough to be keys (and regex inputs)."""
    return all(len(str(field)) <= MAX_NAME_CHARS for field in fields)


def read_columns(path: Path) -> EventColumns:
    """One streaming pass over a trace into EventColumns (TraceError as `iter_events`, saying
    after how many complete events it stopped). The loop is the analysis' per-event cost, so it does one
    dictionary lookup per event: (cat, name, pid, tid) together, split into keys and threads
    once at the end; only a new combination is checked against MAX_NAME_CHARS. An event over
    it, or malformed, is skipped and counted."""
    combos: dict[tuple[Any, Any, Any, Any], int] = {}
    ts, dur, combo, correlation = array("d"), array("d"), array("l"), array("q")
    ts_append, dur_append, combo_append, correlation_append = ts.append, dur.append, combo.append, correlation.append
    thread_names: dict[tuple[Any, Any], str] = {}
    identity = operator.itemgetter("cat", "name", "pid", "tid")
    oversized = malformed = 0
    try:
        with events_of(path) as events:
            for event in events:
                try:
                    phase = event.get("ph")
                    if phase == "X":
                        try:  # one C call for the four fields every profiler event has
                            what, start = identity(event), event["ts"]
                        except KeyError:
                            what, start = (event.get("cat", ""), event.get("name", ""), event.get("pid"),
                                           event.get("tid")), event.get("ts")
                            if start is None:
                                continue
                        index = combos.get(what)
                        if index is None and not _fits(what):
                            oversized += 1
                            continue
                        args = event.get("args")
                        link = args.get("correlation") if args else None
                        ts_append(start)
                        dur_append(event.get("dur") or 0.0)
                        correlation_append(link if isinstance(link, int) else -1)
                        if index is None:  # registered once its event has gone in whole
                            index = combos[what] = len(combos)
                        combo_append(index)
                    elif phase == "M" and event.get("name") == "thread_name":
                        thread, name = (event.get("pid"), event.get("tid")), str((event.get("args") or {}).get("name", ""))
                        if _fits((*thread, name)):
                            thread_names[thread] = name
                        else:
                            oversized += 1
                except (AttributeError, TypeError, ValueError, OverflowError):
                    malformed += 1
                    del ts[len(combo):], dur[len(combo):], correlation[len(combo):]  # the part it appended
    except TraceError as exc:
        raise type(exc)(f"{exc} (after {_events(len(ts), 'complete ')})") from None
    key_ids: dict[tuple[str, str], int] = {}
    thread_ids: dict[tuple[Any, Any], int] = {}
    combo_key, combo_thread = np.empty(len(combos), dtype=np.int64), np.empty(len(combos), dtype=np.int64)
    for (cat, name, pid, tid), index in combos.items():
        combo_key[index] = key_ids.setdefault((str(cat or ""), str(name or "")), len(key_ids))
        combo_thread[index] = thread_ids.setdefault((pid, tid), len(thread_ids))
    which = np.frombuffer(combo, dtype=np.int64) if len(combo) else np.empty(0, dtype=np.int64)
    return EventColumns(ts=np.frombuffer(ts, dtype=float) if len(ts) else np.empty(0),
                        dur=np.frombuffer(dur, dtype=float) if len(dur) else np.empty(0),
                        tid=combo_thread[which], key=combo_key[which],
                        correlation=np.frombuffer(correlation, dtype=np.int64) if len(correlation) else
                        np.empty(0, dtype=np.int64), keys=list(key_ids),
                        threads=list(thread_ids), thread_names=thread_names, oversized=oversized,
                        malformed=malformed)
