"""Per-rank Chrome traces read as a stream: a 60K-prefill step's trace is hundreds of MB per rank,
so events are parsed one at a time (ijson's C backend) into compact columns, never a whole-file
DOM; and a directory of per-rank traces is grouped by rank.

    ranks = group_traces([Path("traces/")])        # [RankTrace], ordered by (dp, pp, tp, ep)
    columns = read_columns(ranks[0].path)          # EventColumns: ts, dur, tid, key per 'X' event

Ranks come from SGLang's per-rank file names (`<id>-TP-<t>-PP-<p>.trace.json.gz`, also `-DP-<d>`
and `-EP-<e>`; sglang/srt/managers/scheduler_profiler_mixin.py) and, when a name carries none,
from the trace's own `distributedInfo` (torch/profiler/profiler.py `_get_distributed_info`).
"""

from __future__ import annotations

import gzip
import io
import re
import zlib
from array import array
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

import ijson
from pydantic import BaseModel

from harness.evidence.traces import TraceError, TraceMissing

HEADER_BYTES = 1 << 20  # top-level fields torch writes before traceEvents (distributedInfo among them)
_RANK_TOKEN = re.compile(r"(?<![A-Za-z])(TP|PP|DP|EP)-(\d+)")


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


def open_trace(path: Path) -> IO[bytes]:
    """The trace's bytes, decompressed when it is gzip (told by its magic, not its name);
    TraceMissing when it cannot be opened."""
    try:
        handle = open(path, "rb")  # noqa: SIM115 — returned to the caller, who closes it
    except OSError as exc:
        raise TraceMissing(f"trace not found: {path} (cannot read trace: {exc.strerror or exc})") from None
    if handle.read(2) == b"\x1f\x8b":
        handle.seek(0)
        return gzip.GzipFile(fileobj=handle)  # type: ignore[return-value]
    handle.seek(0)
    return handle


def read_header(path: Path) -> dict[str, Any]:
    """The top-level fields of a trace that come before `traceEvents` within its first MB
    (torch writes distributedInfo, baseTimeNanoseconds and deviceProperties there); {} for the
    bare-array form."""
    with open_trace(path) as handle:
        try:
            head = handle.read(HEADER_BYTES)
        except (OSError, EOFError, zlib.error) as exc:
            raise TraceError(f"{path}: cannot read the trace: {exc}") from None
    header: dict[str, Any] = {}
    if not head.lstrip().startswith(b"{"):
        return header
    parser = ijson.kvitems(io.BytesIO(head.split(b'"traceEvents"', 1)[0].rstrip().rstrip(b",") + b"}"), "",
                           use_float=True)
    try:
        for key, value in parser:
            header[key] = value
    except ijson.JSONError:
        pass  # a header longer than HEADER_BYTES: what was read is what there is
    return header


def rank_of(path: Path, header: dict[str, Any]) -> RankId:
    """The trace's place in the layout: SGLang's `-TP-<t>-PP-<p>` (`-DP-`, `-EP-`) name tokens,
    else `distributedInfo.rank` taken as the pipeline stage when the name has no tokens."""
    info = header.get("distributedInfo") or {}
    global_rank = info.get("rank") if isinstance(info, dict) else None
    tokens = {axis.lower(): int(number) for axis, number in _RANK_TOKEN.findall(path.name)}
    if tokens:
        return RankId(**tokens, rank=global_rank)
    if isinstance(global_rank, int):
        return RankId(pp=global_rank, rank=global_rank)
    return RankId()


def trace_files(paths: Iterable[Path]) -> list[Path]:
    """The `.json` / `.json.gz` traces of files and directories (a directory: its own files,
    sorted); HarnessError for a path that is neither, or a directory without traces."""
    found: list[Path] = []
    for path in map(Path, paths):
        if path.is_dir():
            inside = sorted(p for p in path.iterdir() if p.is_file() and p.name.endswith((".json", ".json.gz")))
            if not inside:
                raise TraceMissing(f"{path}: no .json or .json.gz traces in the directory")
            found += inside
        elif path.is_file():
            found.append(path)
        else:
            raise TraceMissing(f"trace not found: {path}")
    return found


def group_traces(paths: Iterable[Path]) -> list[RankTrace]:
    """Every trace under `paths` with its rank, ordered by (dp, pp, tp, ep); TraceError when two
    traces claim the same rank."""
    ranks = []
    for path in trace_files(paths):
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


def iter_events(path: Path) -> Iterator[dict[str, Any]]:
    """The trace's events one at a time (plain or gzip; `{"traceEvents": [...]}` or a bare
    array); TraceError when the file is not a JSON trace."""
    with open_trace(path) as handle:
        try:
            first = handle.read(64).lstrip()[:1]
            handle.seek(0)
            prefix = "item" if first == b"[" else "traceEvents.item"
            yield from ijson.items(handle, prefix, use_float=True)
        except ijson.JSONError as exc:
            raise TraceError(f"{path}: not a JSON trace; the file is not a JSON Chrome trace: {exc}") from None
        except (OSError, EOFError, zlib.error) as exc:
            raise TraceError(f"{path}: cannot read the trace: {exc}") from None


class EventColumns:
    """The complete ('X') events of one trace as columns: ts and dur (µs, float64), the thread
    (index into `threads`) and the kind key (index into `keys`, a (cat, name) pair), plus the
    threads' names from the trace's metadata events."""

    def __init__(self) -> None:
        self.ts, self.dur = array("d"), array("d")
        self.tid, self.key = array("l"), array("l")
        self.keys: list[tuple[str, str]] = []
        self.threads: list[tuple[Any, Any]] = []  # (pid, tid)
        self.thread_names: dict[tuple[Any, Any], str] = {}
        self.events = 0


def read_columns(path: Path) -> EventColumns:
    """One streaming pass over a trace into EventColumns (TraceError as `iter_events`)."""
    columns = EventColumns()
    key_ids: dict[tuple[str, str], int] = {}
    thread_ids: dict[tuple[Any, Any], int] = {}
    ts_append, dur_append = columns.ts.append, columns.dur.append
    tid_append, key_append = columns.tid.append, columns.key.append
    for event in iter_events(path):
        columns.events += 1
        phase = event.get("ph")
        if phase == "X":
            ts = event.get("ts")
            if ts is None:
                continue
            kind = (event.get("cat") or "", event.get("name") or "")
            key = key_ids.get(kind)
            if key is None:
                key = key_ids[kind] = len(columns.keys)
                columns.keys.append((str(kind[0]), str(kind[1])))
            thread = (event.get("pid"), event.get("tid"))
            tid = thread_ids.get(thread)
            if tid is None:
                tid = thread_ids[thread] = len(columns.threads)
                columns.threads.append(thread)
            ts_append(ts)
            dur_append(event.get("dur") or 0.0)
            tid_append(tid)
            key_append(key)
        elif phase == "M" and event.get("name") == "thread_name":
            columns.thread_names[(event.get("pid"), event.get("tid"))] = str((event.get("args") or {}).get("name", ""))
    return columns
