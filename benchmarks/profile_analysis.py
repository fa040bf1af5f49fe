"""How long `harness profile analyze` takes on a directory of per-rank traces, against the time to
merely read the same bytes (gzip and JSON tokenised through ijson, the events built and dropped):
the analysis should cost about the read.

    python benchmarks/profile_analysis.py [--mb 520] [--ranks 4] [--gzip] [--dir DIR] [--keep] [--rounds 2]

The trace set is generated, stream-written (never held in memory): `--ranks` pipeline stages
under SGLang's names `bench-TP-0-PP-<p>.trace.json[.gz]`, each step a sequence of microbatches
whose decoder layers are Python frames (with_stack), host operators, kernel launches, device
kernels on a compute stream and NCCL send/recv kernels on a communication stream, until the
set holds `--mb` megabytes.
"""

from __future__ import annotations

import argparse
import collections
import gzip
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

LAYERS_PER_STAGE = (16, 15, 16, 14)


def _write_rank(path: Path, pp: int, ranks: int, target_bytes: int, gzipped: bool) -> int:
    """One rank's trace of about `target_bytes`; returns the bytes written (uncompressed)."""
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


def generate(directory: Path, total_mb: float, ranks: int, gzipped: bool) -> list[Path]:
    """Write `ranks` traces of `total_mb` megabytes in all into `directory`."""
    directory.mkdir(parents=True, exist_ok=True)
    suffix = ".trace.json.gz" if gzipped else ".trace.json"
    paths = [directory / f"bench-TP-0-PP-{pp}{suffix}" for pp in range(ranks)]
    for pp, path in enumerate(paths):
        _write_rank(path, pp, ranks, int(total_mb * 1e6 / ranks), gzipped)
    return paths


def read_only(paths: list[Path]) -> int:
    """The plain read: every event parsed (gzip + ijson's C backend) and dropped."""
    from harness.evidence.trace_stream import events_of

    count = 0
    for path in paths:
        with events_of(path) as events:
            for _ in events:
                count += 1
    return count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=520, help="size of the trace set (uncompressed MB)")
    parser.add_argument("--ranks", type=int, default=4)
    parser.add_argument("--gzip", action="store_true", help="write .json.gz (compression level 1)")
    parser.add_argument("--dir", type=Path, help="generate here (default: a temporary directory)")
    parser.add_argument("--keep", action="store_true", help="keep the generated traces")
    parser.add_argument("--rounds", type=int, default=2, help="read and analyse this many times, alternately")
    args = parser.parse_args()
    from harness.evidence.profile_analysis import analyze_profile

    directory = args.dir or Path(tempfile.mkdtemp(prefix="profile-bench-"))
    try:
        started = time.perf_counter()
        paths = generate(directory, args.mb, args.ranks, args.gzip)
        on_disk = sum(p.stat().st_size for p in paths) / 1e6
        print(f"generated {len(paths)} traces, {on_disk:,.0f} MB on disk, in {time.perf_counter() - started:.1f} s")
        read_s = analyze_s = float("inf")
        for _ in range(args.rounds):  # alternated, the best of each: the machine is shared
            started = time.perf_counter()
            events = read_only(paths)
            read_s = min(read_s, time.perf_counter() - started)
            started = time.perf_counter()
            analysis = analyze_profile([directory])
            analyze_s = min(analyze_s, time.perf_counter() - started)
        kinds = collections.Counter(f.kind for f in analysis.findings)
        print(f"read: {events:,} events in {read_s:.1f} s; analysis: {analyze_s:.1f} s; "
              f"analysis / read = {analyze_s / read_s:.2f}")
        print(f"stages {[s.stage for s in analysis.stages]}, slowest {analysis.slowest_stage}, "
              f"wait root {analysis.wait_chain.root}, balance "
              f"{analysis.balance.observed if analysis.balance else None} -> "
              f"{analysis.balance.proposed if analysis.balance else None}, findings {dict(kinds)}")
    finally:
        if not args.keep:
            shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    main()
