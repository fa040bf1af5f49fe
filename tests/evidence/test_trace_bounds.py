"""Hostile traces in a shared directory, through `harness profile analyze` as a user runs it: each
is refused in one line on stderr naming the file (exit 2), or analysed with the events it left
out said, in seconds, and no byte of a file the traces point at is ever printed (issue 36)."""

from __future__ import annotations

import gzip
import json
import random
import subprocess
import sys
import time
import zlib
from pathlib import Path
from typing import Any

import pytest

SECRET = "ghp_SECRETtoken0123456789abcdefSECRET"
CPU_OP = {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 0, "dur": 10}


def _analyze(directory: Path) -> subprocess.CompletedProcess[str]:
    started = time.monotonic()
    result = subprocess.run([sys.executable, "-m", "harness", "profile", "analyze", str(directory)],
                            check=False, capture_output=True, text=True, timeout=60)
    assert time.monotonic() - started < 10, "a bounded read takes seconds"
    assert "Traceback" not in result.stderr
    return result


def _refused(result: subprocess.CompletedProcess[str], file: Path, why: str) -> str:
    """The one stderr line of a refusal, checked: exit 2, names the file, says why."""
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2, result.stderr
    assert len(lines) == 1, result.stderr
    assert str(file) in lines[0] and why in lines[0], lines[0]
    return lines[0]


def test_a_huge_event_name_is_skipped_and_said(tmp_path: Path) -> None:
    # 200 kB of "(1): " with a newline in it: torch's frame regex took ~30 s on it, quadratically
    frame = {"ph": "X", "cat": "python_function", "name": "a" + "(1): " * 40_000 + "\nx",
             "pid": 1, "tid": 1, "ts": 0, "dur": 5}
    (tmp_path / "t.json").write_text(json.dumps({"traceEvents": [frame, CPU_OP]}))
    result = _analyze(tmp_path)
    assert result.returncode == 0, result.stderr
    assert f"{tmp_path / 't.json'}: 1 event skipped: a name, category, pid or tid over 4,096 characters" \
        in result.stdout
    assert "(1): (1): " not in result.stdout


def test_deep_nesting_is_refused(tmp_path: Path) -> None:
    depth = 100_000  # ijson's cost is quadratic in it: ~8 GB and a MemoryError
    nested = '{"a": ' * depth + "1" + "}" * depth
    trace = tmp_path / "t.json"
    trace.write_text('{"traceEvents": [' + json.dumps(CPU_OP) + ', {"ph": "X", "name": "n", "args": '
                     + nested + "}]}")
    _refused(_analyze(tmp_path), trace, "nested deeper than 64 levels")


def test_deep_nesting_in_the_header_is_refused(tmp_path: Path) -> None:
    trace = tmp_path / "t.json"
    trace.write_text('{"deviceProperties": ' + "[" * 200_000 + "]" * 200_000 + ', "traceEvents": []}')
    _refused(_analyze(tmp_path), trace, "nested deeper than 64 levels")


def test_a_gzip_bomb_is_refused(tmp_path: Path) -> None:
    # 256 MB of events with long names in a ~260 kB gzip; at most 100x the file (64 MiB floor) is read
    name = "x" * (1 << 19)
    event = json.dumps({"ph": "X", "cat": "c", "name": name, "pid": 1, "tid": 1, "ts": 0}).encode() + b","
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)  # 31: the gzip container
    parts = [packer.compress(b'{"traceEvents": [')]
    parts += [packer.compress(event) for _ in range((256 << 20) // len(event))]
    parts += [packer.compress(json.dumps(CPU_OP).encode() + b"]}"), packer.flush()]
    bomb = tmp_path / "t.json.gz"
    bomb.write_bytes(b"".join(parts))
    assert bomb.stat().st_size < 1 << 20
    line = _refused(_analyze(tmp_path), bomb, "the trace holds more than 67,108,864 bytes")
    assert "after " in line  # the event it stopped at


def test_a_symlink_out_of_the_directory_is_refused_unread(tmp_path: Path) -> None:
    token = tmp_path / "home" / "token"
    token.parent.mkdir()
    token.write_text(SECRET + "\n")
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "run-TP-0-PP-0.trace.json").write_text(json.dumps({"traceEvents": [CPU_OP]}))
    (shared / "run-TP-0-PP-1.trace.json").symlink_to(token)  # read, its parse error quoted the token
    result = _analyze(shared)
    _refused(result, shared / "run-TP-0-PP-1.trace.json", "a symlink leading outside")
    assert "SECRET" not in result.stdout + result.stderr


def test_a_parse_error_is_one_line_that_quotes_nothing(tmp_path: Path) -> None:
    trace = tmp_path / "t.json"
    trace.write_text('{"traceEvents": [' + json.dumps(CPU_OP) + ', {"ph": "X", "name": "' + SECRET + '" oops')
    result = _analyze(tmp_path)
    _refused(result, trace, "not a JSON trace: it does not parse as JSON (after 1 complete event)")
    assert "SECRET" not in result.stdout + result.stderr


def test_a_corrupt_gzip_is_one_line_that_quotes_nothing(tmp_path: Path) -> None:
    trace = tmp_path / "t.json.gz"
    packed = gzip.compress(json.dumps({"traceEvents": [CPU_OP] * 1000, "x": SECRET}).encode())
    trace.write_bytes(packed[:len(packed) // 2] + SECRET.encode())
    result = _analyze(tmp_path)
    _refused(result, trace, "cannot read the trace")
    assert "SECRET" not in result.stdout + result.stderr


def test_malformed_events_are_skipped_and_said(tmp_path: Path) -> None:
    odd = [1, {"ph": "X", "name": ["a"], "ts": 0}, {"ph": "X", "name": "n", "ts": "soon"},
           {"ph": "X", "name": "n", "ts": 0, "args": [1]}, {"ph": "M", "name": "thread_name", "args": [1]}]
    (tmp_path / "t.json").write_text(json.dumps({"traceEvents": [CPU_OP, *odd]}))
    result = _analyze(tmp_path)
    assert result.returncode == 0, result.stderr
    assert f"{tmp_path / 't.json'}: 5 malformed events skipped" in result.stdout


def test_a_symlink_within_the_directory_is_read(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "a.json").write_text(json.dumps({"traceEvents": [CPU_OP]}))
    (tmp_path / "b.json").symlink_to(tmp_path / "data" / "a.json")
    result = _analyze(tmp_path)
    assert result.returncode == 0 and str(tmp_path / "b.json") not in result.stderr, result.stderr


def test_the_single_trace_loader_has_the_same_bounds(tmp_path: Path) -> None:
    from harness.evidence.traces import TraceError, load_trace

    trace = tmp_path / "t.json"
    trace.write_text('{"traceEvents": [{"args": ' + "[" * 100_000 + "]" * 100_000 + "}]}")
    try:
        load_trace(trace)
    except TraceError as exc:
        assert str(exc) == f"{trace}: JSON nested deeper than 64 levels; refused"
    else:
        raise AssertionError("a 100,000-deep trace was loaded")


def test_a_link_swapped_in_after_the_check_is_refused_unread(tmp_path: Path, monkeypatch) -> None:
    # the directory scan checks the links; a writer of the shared directory then swaps a checked
    # trace for a link to a private file: open_trace refuses what it would now follow (issue 36)
    import os

    import harness.evidence.traces as traces
    from harness.evidence.trace_stream import group_traces, read_columns
    from harness.evidence.traces import TraceError

    token = tmp_path / "home" / "token"
    token.parent.mkdir()
    token.write_text(json.dumps({"traceEvents": [dict(CPU_OP, name=SECRET)]}))
    shared = tmp_path / "shared"
    shared.mkdir()
    trace = shared / "run-TP-0-PP-0.trace.json"
    trace.write_text(json.dumps({"traceEvents": [CPU_OP]}))
    (rank,) = group_traces([shared])
    assert rank.within == shared and read_columns(rank.path, within=rank.within).keys == [("cpu_op", "aten::mm")]

    trace.unlink()
    trace.symlink_to(token)  # swapped before the open resolves it
    with pytest.raises(TraceError, match="a symlink leading outside") as refused:
        read_columns(rank.path, within=rank.within)
    assert SECRET not in str(refused.value)

    trace.unlink()
    trace.write_text(json.dumps({"traceEvents": [CPU_OP]}))
    resolve = os.path.realpath

    def swap_after_resolving(path, **options):  # swapped between the check and the open itself
        resolved = resolve(path, **options)
        if Path(path) == trace and not trace.is_symlink():
            trace.unlink()
            trace.symlink_to(token)
        return resolved

    monkeypatch.setattr(traces.os.path, "realpath", swap_after_resolving)
    with pytest.raises(TraceError, match="a symlink took the place of a checked name") as refused:
        read_columns(rank.path, within=rank.within)
    assert SECRET not in str(refused.value)


def test_a_fifo_swapped_in_is_refused_without_blocking(tmp_path: Path) -> None:
    import os

    from harness.evidence.trace_stream import group_traces, read_columns
    from harness.evidence.traces import TraceError

    trace = tmp_path / "t.json"
    trace.write_text(json.dumps({"traceEvents": [CPU_OP]}))
    (rank,) = group_traces([tmp_path])
    trace.unlink()
    os.mkfifo(trace)  # opening a FIFO for reading waits for a writer
    with pytest.raises(TraceError, match="not a regular file"):
        read_columns(rank.path, within=rank.within)


def _expected(document: Any) -> tuple[list[tuple[Any, ...]], dict[tuple[Any, Any], str]]:
    """The complete events and thread names of a JSON trace, as read_columns takes them."""
    events = document["traceEvents"] if isinstance(document, dict) else document
    complete = [(float(e["ts"]), float(e.get("dur") or 0.0), e.get("cat", ""), e["name"], e["pid"], e["tid"],
                 e.get("args", {}).get("correlation", -1)) for e in events if e.get("ph") == "X" and "ts" in e]
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e.get("ph") == "M"}
    return complete, names


def _read(path: Path) -> tuple[list[tuple[Any, ...]], dict[tuple[Any, Any], str]]:
    from harness.evidence.trace_stream import read_columns

    c = read_columns(path)
    complete = [(float(c.ts[i]), float(c.dur[i]), *c.keys[c.key[i]], *c.threads[c.tid[i]], int(c.correlation[i]))
                for i in range(len(c.ts))]
    return complete, c.thread_names


@pytest.mark.parametrize("layout", ["kineto", "bare", "misleading"])
def test_traces_laid_out_to_mislead_the_batches_are_read_whole(tmp_path: Path, layout: str) -> None:
    # read_columns cuts a trace into batches at `}, {` and ends it at `]`: names holding those bytes
    # (and "traceEvents": [), events across the 4 MB batches, a trailer after the array, a bare
    # array: every event is read, as ijson reads it, whichever way the read goes
    rng = random.Random(layout)
    tricky = ['x}, {"ph": "X", "ts": 1}', "a]", '"traceEvents": [', "}]}", "{lambda()#1}", "plain"]
    events: list[dict[str, Any]] = [{"ph": "M", "name": "thread_name", "pid": 1, "tid": 2,
                                     "args": {"name": "main ]},{"}}]
    for i in range(60_000):
        name = rng.choice(tricky) if layout == "misleading" or i % 97 == 0 else f"aten::op{i % 50}"
        events.append({"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": i % 3, "ts": i * 1.5, "dur": 1.25,
                       "args": {"correlation": i, "Input Dims": [[1, 2], [{"a": "]"}, {"b": 1}]]}})
        if i % 5 == 0:
            events.append({"ph": "f", "id": i, "pid": 1, "tid": 0, "ts": i * 1.5, "cat": "ac2g", "name": "}, {"})
    document: Any = events if layout == "bare" else {"schemaVersion": 1, "traceEvents": events,
                                                      "traceName": "x]", "displayTimeUnit": "ms"}
    trace = tmp_path / "t.json"
    trace.write_text(json.dumps(document, indent=1 if layout == "kineto" else None))
    assert trace.stat().st_size > 8 << 20  # three batches or more
    assert _read(trace) == _expected(document)


@pytest.mark.parametrize("separators", [3, 400])
def test_a_batch_edge_inside_a_name_of_separators_is_read_whole(tmp_path: Path, separators: int) -> None:
    # every name holds `}, {` and the batch edges fall after them: a few (the cut steps back to a
    # real separator) or more than the cut tries (the file is read again by ijson)
    tricky = dict(CPU_OP, name="}, {" * separators + "x" * 2_000)
    document = {"traceEvents": [dict(tricky, ts=i) for i in range(4_000)]}
    trace = tmp_path / "t.json"
    trace.write_text(json.dumps(document))
    assert _read(trace) == _expected(document)
