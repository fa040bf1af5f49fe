"""How long `harness profile analyze` takes on a directory of per-rank traces, as a ratio to
tokenising the same bytes with ijson (its C backend, every event built and dropped: the least a
streaming JSON read costs), measured in the same run; and HTA 0.5.0's time and figures on the same
traces, side by side, when HTA is installed in its own environment.

    python benchmarks/profile_analysis.py [--mb 520] [--ranks 4] [--shape real|pipeline] [--source TRACE ...]
        [--gzip] [--dir DIR] [--keep] [--rounds 2] [--hta PYTHON] [--hta-timeout 900]

HTA's pins (pandas, numpy) are not harness's, so it runs in a venv of its own, created once:

    python3 -m venv /tmp/hta-venv && /tmp/hta-venv/bin/pip install HolisticTraceAnalysis==0.5.0

(`--hta` names its interpreter; default /tmp/hta-venv/bin/python; without it: "HTA: not run: ...").

The trace set is generated into a temporary directory (or `--dir`), stream-written, never held in
memory, removed afterwards unless `--keep`. `--shape real` (the default): each rank repeats a real
CUDA/NCCL trace (HolisticTraceAnalysis' test data, MIT: tests/fixtures/real-traces or
shared/real-traces; `--source` names others, round robin over the ranks), its Kineto text kept
byte for byte but timestamps shifted, ids and step numbers renumbered per repetition, until the
set holds `--mb` megabytes.
`--shape pipeline`: synthetic pipeline stages under SGLang's names (layers, launches, kernels,
NCCL send/recv), the pipeline figures' showcase. Each measurement runs in a fresh process (its
peak RSS is its own) and the reference and harness alternate `--rounds` times, the best of each
kept: the machine is shared.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import json
import math
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import msgspec

ROOT = Path(__file__).resolve().parents[1]
# One rank of a real CUDA/NCCL job whose NCCL kernels overlap compute kernels on other streams, on
# every rank as one job's data-parallel ranks are (HTA 0.5.0's temporal breakdown fails its own
# assertion on a set whose ranks come from different jobs: its symbol tables do not line up)
SOURCE = "trace_diff/control/control.json.gz"
TRACE_HOMES = [ROOT / "tests" / "fixtures" / "real-traces", ROOT.parent / "shared" / "real-traces"]
HTA_PYTHON = Path("/tmp/hta-venv/bin/python")
LAYERS_PER_STAGE = (16, 15, 16, 14)

# Each measurement prints one JSON line: seconds (after imports), peak RSS in MB (VmHWM: the
# process's own, where ru_maxrss would carry the benchmark's from before the exec), figures.
PEAK = r"""
def peak_mb():
    with open("/proc/self/status") as status:
        return int(next(line for line in status if line.startswith("VmHWM")).split()[1]) / 1024
"""
REFERENCE = PEAK + r"""
import gzip, json, sys, time
from pathlib import Path
import ijson
started, events = time.perf_counter(), 0
for path in sorted(Path(sys.argv[1]).iterdir()):
    with open(path, "rb") as raw:
        handle = gzip.GzipFile(fileobj=raw) if raw.read(2) == b"\x1f\x8b" else raw
        raw.seek(0)
        for _ in ijson.items(handle, "traceEvents.item", use_float=True):
            events += 1
print(json.dumps({"seconds": time.perf_counter() - started, "events": events, "backend": ijson.backend,
                  "peak_mb": peak_mb()}))
"""
HARNESS = PEAK + r"""
import json, sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[2])
import scipy.stats  # imported on first use by the analysis (stragglers): a fixed cost, not the read's
from harness.evidence.profile_analysis import analyze_profile
started = time.perf_counter()
analysis = analyze_profile([Path(sys.argv[1])], window="hta")
seconds = time.perf_counter() - started
figures = {f.rank: {"compute": f.compute_share, "non_compute": f.non_compute_share, "idle": f.idle_share,
                    "overlap": f.overlap_share} for f in analysis.rank_figures if f.status == "ok"}
print(json.dumps({"seconds": seconds, "peak_mb": peak_mb(), "figures": figures,
                  "stages": [s.stage for s in analysis.stages], "slowest": analysis.slowest_stage,
                  "root": analysis.wait_chain.root, "findings": sorted({f.kind for f in analysis.findings})}))
"""
HTA = PEAK + r"""
import json, logging, resource, sys, time, warnings
warnings.filterwarnings("ignore")
logging.disable(logging.CRITICAL)
from hta.trace_analysis import TraceAnalysis
started = time.perf_counter()
analysis = TraceAnalysis(trace_dir=sys.argv[1])
figures, failed = {}, []
columns = {"get_temporal_breakdown": {"compute": "compute_time_pctg", "non_compute": "non_compute_time_pctg",
                                      "idle": "idle_time_pctg"},
           "get_comm_comp_overlap": {"overlap": "comp_comm_overlap_pctg"}}
for method, wanted in columns.items():
    try:
        frame = getattr(analysis, method)(visualize=False)
    except Exception as exc:  # HTA's own assertions: said, the other figures still shown
        failed.append(f"{method}: {type(exc).__name__} {exc}".strip())
        continue
    for _, row in frame.iterrows():
        figures.setdefault(int(row["rank"]), {}).update({k: row[c] / 100 for k, c in wanted.items()})
seconds = time.perf_counter() - started
peak = max(peak_mb(), resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)  # its parser's pool
print(json.dumps({"seconds": seconds, "peak_mb": peak, "figures": figures, "failed": failed}))
"""


def _real_sources(named: list[Path]) -> list[Path]:
    """The traces to repeat (rank r repeats the r-th, round robin): `named`, else SOURCE where a
    checkout has it."""
    if named:
        return named
    found = [home / SOURCE for home in TRACE_HOMES if (home / SOURCE).is_file()]
    if found:
        return found[:1]
    raise SystemExit(f"no real traces under {' or '.join(map(str, TRACE_HOMES))}: name some with --source")


_FIELDS = re.compile(rb'("ts": )(\d+)|("(?:correlation|External id|id)": )(\d+)|(ProfilerStep#)(\d+)')


def _write_real(paths: dict[int, Path], source: Path, ranks: int, target_bytes: int, gzipped: bool) -> int:
    """`source` repeated into each rank's path until it holds `target_bytes` (uncompressed);
    returns the bytes written in all. Each repetition keeps the events' text, its timestamps
    after the last one's (the fraction digits untouched), ids and ProfilerStep numbers past the
    last one's; the ranks differ in distributedInfo only."""
    text = source.read_bytes()
    text = gzip.decompress(text) if text[:2] == b"\x1f\x8b" else text
    raws = msgspec.json.decode(text, type=dict[str, msgspec.Raw])["traceEvents"]
    events = msgspec.json.decode(raws, type=list[msgspec.Raw])
    start = text.index(bytes(events[0]))
    end = text.index(bytes(events[-1]), start) + len(events[-1])
    body, head, tail = text[start:end], text[:start], text[end:]
    times = [(e.get("ts"), e.get("dur") or 0) for e in msgspec.json.decode(raws) if isinstance(e, dict)]
    times = [(t, d) for t, d in times if isinstance(t, (int, float)) and isinstance(d, (int, float))]
    span = math.ceil(max(t + d for t, d in times) - min(t for t, _ in times)) + 1000  # µs, 1 ms apart
    ids = max((int(m[4]) for m in _FIELDS.finditer(body) if m[4]), default=0) + 1
    steps = [int(m[6]) for m in _FIELDS.finditer(body) if m[6]]
    first_step, step_count = (min(steps), max(steps) - min(steps) + 1) if steps else (0, 0)

    def renumbered(k: int):  # steps from 0 on every rank, as one job's ranks number them
        def replace(m: re.Match[bytes]) -> bytes:
            if m[1]:
                return m[1] + b"%d" % (int(m[2]) + k * span)
            if m[3]:
                return m[3] + b"%d" % (int(m[4]) + k * ids)
            return m[5] + b"%d" % (int(m[6]) - first_step + k * step_count)
        return replace

    opener = (lambda p: gzip.open(p, "wb", compresslevel=1)) if gzipped else (lambda p: open(p, "wb"))  # noqa: SIM115
    with contextlib.ExitStack() as stack:
        outs = [stack.enter_context(opener(path)) for path in paths.values()]
        for out, rank in zip(outs, paths):
            out.write(re.sub(rb'("distributedInfo": \{"backend": "\w+", "rank": )\d+(, "world_size": )\d+',
                             rb"\g<1>%d\g<2>%d" % (rank, ranks), head, count=1))
        written, k = len(head) + len(tail), 0
        while written < target_bytes:
            chunk = (b",\n  " if k else b"") + _FIELDS.sub(renumbered(k), body)
            for out in outs:
                out.write(chunk)
            written, k = written + len(chunk), k + 1
        for out in outs:
            out.write(tail)
    return written * len(paths)


def _write_pipeline(path: Path, pp: int, ranks: int, target_bytes: int, gzipped: bool) -> int:
    """One synthetic pipeline stage's trace of about `target_bytes`; returns the bytes written."""
    rng = random.Random(pp)
    opener = (lambda p: gzip.open(p, "wt", compresslevel=1)) if gzipped else (lambda p: open(p, "w"))  # noqa: SIM115
    layers = LAYERS_PER_STAGE[pp % len(LAYERS_PER_STAGE)]
    pid, host, stream, comm = 1000 + pp, 1000 + pp, 7, 20
    written = 0
    with opener(path) as out:
        head = (f'{{"schemaVersion": 1, "distributedInfo": {{"backend": "nccl", "rank": {pp}, "world_size": {ranks}}}, '
                '"deviceProperties": [], "traceEvents": [\n')
        out.write(head)
        written += len(head)
        lines = [f'{{"ph": "M", "name": "thread_name", "pid": {pid}, "tid": {host}, "args": {{"name": "scheduler"}}}}']
        t, correlation, step = 1_000_000.0 + pp * 50.0, 0, 0
        first = True
        while written < target_bytes:
            step_start = t
            for _ in range(4):  # microbatches
                # the receive from the previous stage: an NCCL kernel spanning the wait
                wait = rng.uniform(50, 400) if pp else 0.0
                correlation += 1
                lines.append(f'{{"ph": "X", "cat": "user_annotation", "name": "nccl:recv", "pid": {pid}, '
                             f'"tid": {host}, "ts": {t - 5:.3f}, "dur": 4.000, "args": {{}}}}')
                lines.append(f'{{"ph": "X", "cat": "gpu_user_annotation", "name": "nccl:recv", "pid": 0, '
                             f'"tid": {comm}, "ts": {t:.3f}, "dur": {wait + 20:.3f}, "args": {{}}}}')
                lines.append(f'{{"ph": "X", "cat": "kernel", "name": "ncclDevKernel_SendRecv(ncclDevComm*)", "pid": 0, '
                             f'"tid": {comm}, "ts": {t:.3f}, "dur": {wait + 20:.3f}, "args": {{"correlation": {correlation}, '
                             f'"stream": {comm}}}}}')
                t += wait + 20
                for layer in range(layers):
                    layer_start = t
                    lines.append(f'{{"ph": "X", "cat": "python_function", "name": "nn.Module: DecoderLayer_{layer}", '
                                 f'"pid": {pid}, "tid": {host}, "ts": {t:.3f}, "dur": {{dur}}, "args": {{}}}}')
                    layer_line = len(lines) - 1
                    for op in ("aten::linear", "aten::silu", "aten::linear", "aten::add", "aten::rms_norm"):
                        correlation += 1
                        dur = rng.uniform(8, 30)
                        lines.append(f'{{"ph": "X", "cat": "cpu_op", "name": "{op}", "pid": {pid}, "tid": {host}, '
                                     f'"ts": {t:.3f}, "dur": {dur:.3f}, "args": {{"External id": {correlation}, '
                                     f'"Sequence number": {correlation}, "Fwd thread id": 0}}}}')
                        lines.append(f'{{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": {pid}, '
                                     f'"tid": {host}, "ts": {t + 2:.3f}, "dur": 4.000, "args": {{"correlation": {correlation}}}}}')
                        kernel = rng.uniform(20, 60)
                        lines.append(f'{{"ph": "X", "cat": "kernel", "name": "void {op[6:]}_kernel<float, 128>(float*, int)", '
                                     f'"pid": 0, "tid": {stream}, "ts": {t + 6:.3f}, "dur": {kernel:.3f}, "args": '
                                     f'{{"correlation": {correlation}, "stream": {stream}, "grid": [128, 1, 1]}}}}')
                        t += max(dur, kernel) + rng.uniform(1, 5)
                    lines[layer_line] = lines[layer_line].replace("{dur}", f"{t - layer_start:.3f}")
                correlation += 1
                lines.append(f'{{"ph": "X", "cat": "kernel", "name": "ncclDevKernel_SendRecv(ncclDevComm*)", "pid": 0, '
                             f'"tid": {comm}, "ts": {t:.3f}, "dur": 25.000, "args": {{"correlation": {correlation}}}}}')
                t += 25
            lines.append(f'{{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#{step}", "pid": {pid}, '
                         f'"tid": {host}, "ts": {step_start:.3f}, "dur": {t - step_start:.3f}, "args": {{}}}}')
            step += 1
            chunk = ",\n".join(lines)
            if not first:
                chunk = ",\n" + chunk
            first = False
            out.write(chunk)
            written += len(chunk)
            lines = []
        out.write("\n]}\n")
    return written


def generate(directory: Path, total_mb: float, ranks: int, gzipped: bool, shape: str, sources: list[Path]) -> int:
    """Write `ranks` traces of `total_mb` megabytes in all into `directory`; returns the bytes (uncompressed)."""
    directory.mkdir(parents=True, exist_ok=True)
    suffix = ".trace.json.gz" if gzipped else ".trace.json"
    target = int(total_mb * 1e6 / ranks)
    if shape == "pipeline":
        return sum(_write_pipeline(directory / f"bench-TP-0-PP-{pp}{suffix}", pp, ranks, target, gzipped)
                   for pp in range(ranks))
    return sum(_write_real({rank: directory / f"bench-rank-{rank}{suffix}" for rank in range(i, ranks, len(sources))},
                           source, ranks, target, gzipped) for i, source in enumerate(sources[:ranks]))


def measure(python: str, code: str, *args: str, timeout: float = 900) -> dict:
    """Run `code` in a fresh `python` and return the JSON line it prints last."""
    done = subprocess.run([python, "-c", code, *args], capture_output=True, text=True, timeout=timeout, check=False)
    if done.returncode:
        raise RuntimeError(done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit {done.returncode}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _share(value: float | None) -> str:
    return "   -  " if value is None else f"{100 * value:5.1f}%"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=520, help="size of the trace set (uncompressed MB)")
    parser.add_argument("--ranks", type=int, default=4)
    parser.add_argument("--shape", choices=["real", "pipeline"], default="real")
    parser.add_argument("--source", type=Path, action="append", default=[], help="a real trace to repeat (repeatable)")
    parser.add_argument("--gzip", action="store_true", help="write .json.gz (compression level 1)")
    parser.add_argument("--dir", type=Path, help="generate here (default: a temporary directory)")
    parser.add_argument("--keep", action="store_true", help="keep the generated traces")
    parser.add_argument("--rounds", type=int, default=2, help="reference and analysis this many times, alternately")
    parser.add_argument("--hta", type=Path, default=HTA_PYTHON, help="the Python of a venv with HTA 0.5.0")
    parser.add_argument("--hta-timeout", type=float, default=900)
    args = parser.parse_args()
    sources = _real_sources(args.source) if args.shape == "real" else []

    directory = args.dir or Path(tempfile.mkdtemp(prefix="profile-bench-"))
    try:
        started = time.perf_counter()
        size = generate(directory, args.mb, args.ranks, args.gzip, args.shape, sources)
        on_disk = sum(p.stat().st_size for p in directory.iterdir()) / 1e6
        what = f"repeating {', '.join(s.name for s in sources)}" if sources else "synthetic pipeline stages"
        print(f"generated {args.ranks} traces ({what}): {size / 1e6:,.0f} MB, {on_disk:,.0f} MB on disk, "
              f"in {time.perf_counter() - started:.1f} s")
        reference = harness = None
        for _ in range(args.rounds):
            ref = measure(sys.executable, REFERENCE, str(directory))
            run = measure(sys.executable, HARNESS, str(directory), str(ROOT))
            reference = ref if reference is None or ref["seconds"] < reference["seconds"] else reference
            harness = run if harness is None or run["seconds"] < harness["seconds"] else harness
        mb = size / 1e6
        print(f"ijson tokenise ({reference['backend']}, the reference): {reference['seconds']:.1f} s, "
              f"{mb / reference['seconds']:.0f} MB/s, {reference['events']:,} events, "
              f"peak {reference['peak_mb']:.0f} MB")
        print(f"harness profile analyze: {harness['seconds']:.1f} s, {mb / harness['seconds']:.0f} MB/s, "
              f"peak {harness['peak_mb']:.0f} MB; harness / ijson = {harness['seconds'] / reference['seconds']:.2f}")
        print(f"  stages {harness['stages']}, slowest {harness['slowest']}, wait root {harness['root']}, "
              f"findings {harness['findings']}")
        hta = None
        if not args.hta.exists():
            print(f"HTA: not run: no {args.hta} (python3 -m venv /tmp/hta-venv && "
                  "/tmp/hta-venv/bin/pip install HolisticTraceAnalysis==0.5.0, or --hta PYTHON)")
        else:
            try:
                hta = measure(str(args.hta), HTA, str(directory), timeout=args.hta_timeout)
            except (RuntimeError, subprocess.TimeoutExpired) as exc:
                print(f"HTA: not run: {type(exc).__name__}: {exc}")
        if hta:
            print(f"HTA 0.5.0: {hta['seconds']:.1f} s, {mb / hta['seconds']:.0f} MB/s, peak {hta['peak_mb']:.0f} MB "
                  f"(one process); HTA / ijson = {hta['seconds'] / reference['seconds']:.2f}, "
                  f"HTA / harness = {hta['seconds'] / harness['seconds']:.1f}")
            for failure in hta["failed"]:
                print(f"  HTA: not run: {failure}")
            print("per rank, HTA's window (harness | HTA):  compute          non-compute      idle             overlap")
            ours = list(harness["figures"].items())
            for i, (rank, theirs) in enumerate(sorted(hta["figures"].items(), key=lambda kv: int(kv[0]))):
                label, mine = ours[i] if i < len(ours) else ("-", {})
                print(f"  {label:>12} | HTA rank {rank:<3}            " + "   ".join(
                    f"{_share(mine.get(k))} | {_share(theirs.get(k))}"
                    for k in ("compute", "non_compute", "idle", "overlap")))
    finally:
        if not args.keep:
            shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    main()
