"""Per-rank Chrome traces read as a stream: a 60K-prefill step's trace is hundreds of MB per rank,
so events are decoded in batches of about 4 MB (msgspec; ijson one event at a time where a file's
layout defeats the batches) into compact columns, never a whole-file DOM; and a directory of
per-rank traces is grouped by rank.

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
import msgspec
import numpy as np
from pydantic import BaseModel

from harness.evidence.traces import MAX_NAME_CHARS, BoundedTrace, TraceError, TraceMissing, open_trace

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
    within: Path | None = None  # the directory it was found in: read only from a file under it (open_trace)


def read_header(path: Path, *, within: Path | None = None) -> dict[str, Any]:
    """The top-level fields of a trace that come before `traceEvents` within its first MB
    (torch writes distributedInfo, baseTimeNanoseconds and deviceProperties there); {} for the
    bare-array form. `within` as for `open_trace`."""
    with open_trace(path, within=within) as handle:
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


def named_place(path: Path) -> bool:
    """Whether the file name gives the trace's place with SGLang's or vLLM's rank tokens
    (`-TP-<t>-PP-<p>`, `dp<d>_pp<p>_tp<t>`), not only a global rank."""
    return bool(_RANK_TOKEN.findall(path.name))


def trace_files(paths: Iterable[Path]) -> list[tuple[Path, Path | None]]:
    """The `.json` / `.json.gz` traces of files and directories (a directory: its own files,
    sorted), each with the directory it was found in (None for a file named itself);
    HarnessError for a path that is neither, a directory without traces, or a file in a
    directory that is a symlink leading outside it (a shared directory's link to a private
    file). Read them with `open_trace(file, within=directory)`, which holds to the same rule
    when it opens them."""
    found: list[tuple[Path, Path | None]] = []
    for path in map(Path, paths):
        if path.is_dir():
            inside = sorted(p for p in path.iterdir() if p.is_file() and p.name.endswith((".json", ".json.gz")))
            home = path.resolve()
            for link in (p for p in inside if p.is_symlink() and not p.resolve().is_relative_to(home)):
                raise TraceError(f"{link}: a symlink leading outside {path}; refused")
            # a profiler's side files (`cpu-time-PP-0.json` beside the `-PP-0` trace) are JSON too
            traces = [p for p in inside if _is_trace_document(p, path)]
            if not traces:
                verb = "holds" if len(inside) == 1 else "hold"
                others = f": {', '.join(p.name for p in inside[:3])}{' …' if len(inside) > 3 else ''} {verb} JSON but no trace events" if inside else ""
                raise TraceMissing(f"{path}: no .json or .json.gz traces in the directory{others}")
            found += [(p, path) for p in traces]
        elif path.is_file():
            found.append((path, None))
        else:
            raise TraceMissing(f"trace not found: {path}")
    for path, within in found:  # an empty or non-JSON file is said as such, before any rank is read from it
        _json_start(path, within)
    return found


def _json_start(path: Path, within: Path | None) -> None:
    """TraceError (one line, naming the file, never quoting it) when the file is empty or does
    not start as a JSON document; a file that cannot be opened is left to the read, which says why."""
    try:
        with open_trace(path, within=within) as handle:
            head = handle.read(64).lstrip()
    except (OSError, TraceError, TraceMissing):
        return
    if not head:
        raise TraceError(f"{path}: not a JSON trace: the file is empty")
    if head[:1] not in (b"{", b"["):
        raise TraceError(f"{path}: not a JSON trace: it does not parse as JSON")


def _is_trace_document(path: Path, within: Path) -> bool:
    """Whether `path` may be a Chrome trace, by its first HEADER_BYTES: anything but a JSON object
    with no `traceEvents` key (a profiler's side file, `metrics.json`) or a JSON array that is not
    one of events (its first item not an object, no `"ph"` key: a list of numbers or records). A
    file that cannot be read, or is not JSON at all, counts as one: reading it says what is wrong,
    never a silent skip."""
    try:
        with open_trace(path, within=within) as handle:
            head = handle.read(HEADER_BYTES).lstrip()
    except (OSError, TraceError, TraceMissing):
        return True
    if head[:1] == b"{":
        return b'"traceEvents"' in head
    if head[:1] == b"[":
        return head[1:].lstrip()[:1] == b"{" and b'"ph"' in head
    return True


def not_traces(paths: Iterable[Path]) -> list[Path]:
    """The `.json` / `.json.gz` files in the directories among `paths` that `trace_files` leaves
    out as JSON documents that are not traces (see `_is_trace_document`), sorted per directory."""
    return [p for path in map(Path, paths) if path.is_dir()
            for p in sorted(path.iterdir()) if p.is_file() and p.name.endswith((".json", ".json.gz"))
            and p.resolve().is_relative_to(path.resolve()) and not _is_trace_document(p, path)]


def group_traces(paths: Iterable[Path]) -> list[RankTrace]:
    """Every trace under `paths` with its rank, ordered by (dp, pp, tp, ep); TraceError when two
    traces claim the same rank. Where some file names carry rank tokens, a file without any is
    left out: SGLang's `merged-<id>` trace (--merge-profiles) repeats every rank's events, and
    vLLM's API-process trace (`<host>_<pid>.async_llm.<ns>.pt.trace.json.gz`) holds no device work."""
    files = trace_files(paths)
    if any(_ranked(p) for p, _ in files):
        files = [(p, within) for p, within in files if _ranked(p)]
    ranks = []
    for path, within in files:
        header = read_header(path, within=within)
        ranks.append(RankTrace(path=path, rank=rank_of(path, header), header=header, within=within))
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
def _items(handle: BoundedTrace, path: Path) -> Iterator[Iterator[dict[str, Any]]]:
    """The events of an open trace one at a time, by ijson (`{"traceEvents": [...]}` or a bare
    array), valid inside the `with`; TraceError (one line, never quoting the file) when it does
    not parse as JSON."""
    try:
        first = handle.read(64).lstrip()[:1]
        handle.seek(0)
        yield ijson.items(handle, "item" if first == b"[" else "traceEvents.item", use_float=True)
    except (ijson.JSONError, ValueError):  # ijson's message quotes the bytes around the error
        raise TraceError(f"{path}: not a JSON trace: it does not parse as JSON") from None


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


# The fast read: the events array cut into batches of about _BATCH_BYTES at separators between
# events, each batch decoded by msgspec into _Event structs and turned into columns by list
# comprehensions; ijson's per-event dicts cost 6x the decode and a Python loop per event. A cut
# is only a candidate (a separator's bytes can sit inside a string): it stands when `[batch]`
# decodes, which it does only where the parser is between events. Whatever the fast read cannot
# place (no header within HEADER_BYTES, an event over _MAX_CARRY, a batch that does not decode
# at any of _CUT_TRIES cuts, a JSON error) is read again from the start by ijson, whose result
# and error messages are the reference. The two limits keep a file laid out against the cuts to
# a few times ijson's cost and a batch's memory to tens of MB.
_BATCH_BYTES = 4 << 20
_MAX_CARRY = 16 << 20
_CUT_TRIES = 8
_WS = b" \t\r\n"  # JSON's whitespace
_EVENTS_KEY = re.compile(rb'"traceEvents"[ \t\r\n]*:[ \t\r\n]*\[')
_SEPARATOR = re.compile(rb"\}[ \t\r\n]*(,)[ \t\r\n]*\{")


class _Args(msgspec.Struct, gc=False):
    correlation: Any = None
    name: Any = msgspec.UNSET  # a thread_name event's thread name


# gc=False: no cycles among them, and the collector's passes over a batch's structs add half the decode
class _Event(msgspec.Struct, gc=False):
    ph: Any = None
    cat: Any = ""
    name: Any = ""
    pid: Any = None
    tid: Any = None
    ts: Any = msgspec.UNSET  # an 'X' event without ts is left out, one with a ts of the wrong type is malformed
    dur: Any = None
    args: _Args | None = None


_DECODE_EVENTS = msgspec.json.Decoder(list[_Event])


class _Fallback(Exception):
    """The fast read cannot place the events: read the file with ijson."""


class _ColumnBuilder:
    """EventColumns built from batches of events: `add_batch` (JSON bytes, the fast read) or
    `add_dicts` (decoded events, ijson's), with the same result for the same events."""

    def __init__(self) -> None:
        self.combos: dict[tuple[Any, Any, Any, Any], int] = {}  # (cat, name, pid, tid) -> index
        self.parts: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []  # ts, dur, combo, correlation
        self.thread_names: dict[tuple[Any, Any], str] = {}
        self.count = self.oversized = self.malformed = 0

    def add_batch(self, array_text: bytes | memoryview) -> bool:
        """Add the events of `array_text`, a JSON array; False, with nothing added, when it
        does not decode."""
        try:
            events = _DECODE_EVENTS.decode(array_text)
        except msgspec.ValidationError:  # valid JSON so far, an event of an odd shape: see add_dicts
            events = None
        except msgspec.DecodeError:
            return False
        if events is not None:
            try:
                self._add_structs(events)
                return True
            except (TypeError, ValueError, OverflowError):  # a field of the wrong type: add_dicts counts it
                pass
        try:
            plain = msgspec.json.decode(array_text)
        except msgspec.DecodeError:
            return False
        self.add_dicts(plain)
        return True

    def _add_structs(self, events: list[_Event]) -> None:
        """The batch's columns in C-speed comprehensions; TypeError, ValueError or
        OverflowError, with nothing added, when an event is not as add_dicts takes it whole."""
        xs = [e for e in events if e.ph == "X" and e.ts is not msgspec.UNSET]
        get = self.combos.get
        index = [get((e.cat, e.name, e.pid, e.tid), -1) for e in xs]  # TypeError for an unhashable field
        ts = array("d", [e.ts for e in xs])
        dur = array("d", [e.dur or 0.0 for e in xs])
        correlation = array("q", [c if isinstance(c := e.args.correlation if e.args is not None else None, int)
                                  else -1 for e in xs])
        fresh: dict[tuple[Any, Any, Any, Any], int] = {}
        if -1 in index:  # combinations not seen before: checked against MAX_NAME_CHARS once each
            following = len(self.combos)
            for i, e in enumerate(xs):
                if index[i] == -1:
                    w = (e.cat, e.name, e.pid, e.tid)
                    if w not in fresh:
                        fresh[w], following = (following, following + 1) if _fits(w) else (-2, following)
                    index[i] = fresh[w]
        names = []  # (thread, name), None for a name over MAX_NAME_CHARS
        for e in (e for e in events if e.ph == "M" and e.name == "thread_name"):
            name = str(e.args.name if e.args is not None and e.args.name is not msgspec.UNSET else "")
            names.append(((e.pid, e.tid), name if _fits((e.pid, e.tid, name)) else None))
        hash(tuple(thread for thread, _ in names))  # TypeError for an unhashable pid or tid, before anything is added
        combo = _array(array("q", index))
        columns = [_array(ts), _array(dur), combo, _array(correlation)]
        if fresh and min(fresh.values()) < 0:
            keep = combo >= 0
            self.oversized += int(np.count_nonzero(~keep))
            columns = [column[keep] for column in columns]
        self.combos.update((w, i) for w, i in fresh.items() if i >= 0)
        for thread, name in names:
            if name is None:
                self.oversized += 1
            else:
                self.thread_names[thread] = name
        self._push(*columns)

    def add_dicts(self, events: Iterable[Any]) -> None:
        """Add events one at a time, as dicts; an event over MAX_NAME_CHARS, or malformed, is
        skipped and counted. Whatever was read before an error from `events` is kept."""
        combos, thread_names = self.combos, self.thread_names
        ts, dur, combo, correlation = array("d"), array("d"), array("q"), array("q")
        ts_append, dur_append, combo_append, correlation_append = ts.append, dur.append, combo.append, correlation.append
        identity = operator.itemgetter("cat", "name", "pid", "tid")
        try:
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
                            self.oversized += 1
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
                            self.oversized += 1
                except (AttributeError, TypeError, ValueError, OverflowError):
                    self.malformed += 1
                    del ts[len(combo):], dur[len(combo):], correlation[len(combo):]  # the part it appended
        finally:
            self._push(_array(ts), _array(dur), _array(combo), _array(correlation))

    def _push(self, ts: np.ndarray, dur: np.ndarray, combo: np.ndarray, correlation: np.ndarray) -> None:
        if len(ts):
            self.parts.append((ts, dur, combo, correlation))
            self.count += len(ts)

    def columns(self) -> EventColumns:
        """The columns of everything added, keys and threads split out of the combinations."""
        key_ids: dict[tuple[str, str], int] = {}
        thread_ids: dict[tuple[Any, Any], int] = {}
        combo_key, combo_thread = np.empty(len(self.combos), dtype=np.int64), np.empty(len(self.combos), dtype=np.int64)
        for (cat, name, pid, tid), index in self.combos.items():
            combo_key[index] = key_ids.setdefault((str(cat or ""), str(name or "")), len(key_ids))
            combo_thread[index] = thread_ids.setdefault((pid, tid), len(thread_ids))
        if self.parts:
            ts, dur, which, correlation = (np.concatenate(column) for column in zip(*self.parts))
        else:
            ts, dur, which, correlation = _array(array("d")), _array(array("d")), _array(array("q")), _array(array("q"))
        return EventColumns(ts=ts, dur=dur, tid=combo_thread[which], key=combo_key[which], correlation=correlation,
                            keys=list(key_ids), threads=list(thread_ids), thread_names=self.thread_names,
                            oversized=self.oversized, malformed=self.malformed)


def _array(values: array) -> np.ndarray:
    """An array.array of 'd' or 'q' as numpy's float64 or int64, without a copy."""
    dtype = float if values.typecode == "d" else np.int64
    return np.frombuffer(values, dtype=dtype) if len(values) else np.empty(0, dtype=dtype)


def _read_fast(handle: BoundedTrace, builder: _ColumnBuilder) -> None:
    """Every event of the trace into `builder`, batch by batch; _Fallback where it cannot. The
    buffer always starts with `[` before the events still to add: a batch is decoded in place,
    its separating comma turned into `]`, and that byte into `[` to start the rest (no copies)."""
    head = handle.read(HEADER_BYTES)
    if head.lstrip(_WS)[:1] == b"[":
        bare, start = True, head.index(b"[")
    else:
        found = _EVENTS_KEY.search(head)
        if not found or _decoded(head[:found.end()] + b"]}") is None:
            raise _Fallback  # no header within HEADER_BYTES, or the first "traceEvents" is not the top-level key
        bare, start = False, found.end() - 1
    buffer = bytearray(head[start:])
    while True:
        end = False
        while len(buffer) < _BATCH_BYTES and not end:
            chunk = handle.read(HEADER_BYTES)  # at most MAX_STRING_BYTES a read (BoundedTrace)
            buffer += chunk
            end = not chunk
        if end:
            return _read_last(buffer, bare, builder)
        cut = _cut(buffer, builder)
        if cut is None and len(buffer) > _MAX_CARRY:
            raise _Fallback
        if cut is not None:
            del buffer[:cut]  # bytearray drops a prefix without moving the rest
            buffer[0] = ord("[")


def _cut(buffer: bytearray, builder: _ColumnBuilder) -> int | None:
    """The comma after the last events of `buffer` that decode as a batch, added to `builder`
    (the comma left as `]`); None when the buffer holds no separator; _Fallback when none of
    _CUT_TRIES candidates decodes."""
    window = 1 << 16
    while True:  # the separators near the end: a tail first, the whole buffer only for long events
        separators = [m.start(1) for m in _SEPARATOR.finditer(buffer, max(0, len(buffer) - window))]
        if separators or window >= len(buffer):
            break
        window *= 16
    if not separators:
        return None
    for comma in separators[:-_CUT_TRIES - 1:-1]:
        buffer[comma] = ord("]")
        with memoryview(buffer) as view, view[:comma + 1] as batch:
            if builder.add_batch(batch):
                return comma
        buffer[comma] = ord(",")
    raise _Fallback


def _read_last(buffer: bytearray, bare: bool, builder: _ColumnBuilder) -> None:
    """The events that end the array in `buffer` (the file's last bytes, after a `[`), and what
    follows the array checked: nothing for a bare array, the rest of the top-level object otherwise."""
    end = len(buffer)
    for _ in range(_CUT_TRIES):
        close = buffer.rfind(b"]", 0, end)
        if close < 0:
            break
        end, trailer = close, bytes(buffer[close + 1:])
        if bare:
            fits = not trailer.strip(_WS)
        else:  # a second traceEvents key would be read by ijson too
            fits = b'"traceEvents"' not in trailer and _decoded(b'{"traceEvents": []' + trailer) is not None
        if fits:
            with memoryview(buffer) as view, view[:close + 1] as batch:
                if builder.add_batch(batch):
                    return
    raise _Fallback


def _decoded(text: bytes) -> dict[str, Any] | None:
    """`text` decoded when it is one JSON object, else None."""
    try:
        value = msgspec.json.decode(text)
    except msgspec.DecodeError:
        return None
    return value if isinstance(value, dict) else None


def read_columns(path: Path, *, within: Path | None = None) -> EventColumns:
    """One streaming pass over a trace (plain or gzip; `{"traceEvents": [...]}` or a bare array)
    into EventColumns, read as `open_trace(path, within=within)`; TraceError (one line, never
    quoting the file, saying after how many complete events it stopped) when the file is not a
    JSON trace or breaks a bound. Read in batches decoded by msgspec where the file is laid out
    as JSON traces are, else by ijson one event at a time, with the same columns either way. A
    new (cat, name, pid, tid) combination is checked against MAX_NAME_CHARS once; an event over
    it, or malformed, is skipped and counted."""
    builder = _ColumnBuilder()
    try:
        with open_trace(path, within=within) as handle:
            try:
                _read_fast(handle, builder)
            except _Fallback:
                builder = _ColumnBuilder()
                handle.seek(0)
                with _items(handle, path) as events:
                    builder.add_dicts(events)
    except TraceError as exc:
        raise type(exc)(f"{exc} (after {_events(builder.count, 'complete ')})") from None
    return builder.columns()
