"""Real multi-rank torch-profiler traces of a small pipeline-parallel decoder stack on the CPU:
one process per pipeline stage over torch.distributed (gloo), `with_stack=True`, each rank's
trace written under SGLang's per-rank name `<id>-TP-0-PP-<p>.trace.json.gz`.

    python -m harness.testing.pipeline_trace --layers 1,2,6,3 --out DIR [--serialised]

Each step sends `MICROBATCHES` microbatches through the stages; a stage receives two tensors
(hidden states and residual, as SGLang's PP sends a tensor dict) from the stage before it, runs
its decoder layers and sends both on; the last stage sends a token back to stage 0, which waits
for it before the next step (the next step's input depends on this one's output). With
`--serialised` the receives are `irecv A → wait A → irecv B → wait B` (the defect the profile
analysis looks for); otherwise both are posted first and then waited.
"""

from __future__ import annotations

import argparse
import os
import socket
from pathlib import Path

HIDDEN, MICROBATCHES, STEPS, TOKENS = 256, 2, 5, 128


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _stage(rank: int, layers: list[int], out: str, serialised: bool, port: int) -> None:
    import torch
    import torch.distributed as dist
    from torch import nn

    torch.set_num_threads(1)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    world = len(layers)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(rank)

    class DecoderLayer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.up = nn.Linear(HIDDEN, 8 * HIDDEN)
            self.down = nn.Linear(8 * HIDDEN, HIDDEN)

        def forward(self, hidden: torch.Tensor, residual: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            residual = hidden + residual
            return self.down(torch.nn.functional.silu(self.up(residual))), residual

    stack = nn.ModuleList(DecoderLayer() for _ in range(layers[rank]))

    def receive(source: int) -> tuple[torch.Tensor, torch.Tensor]:
        hidden, residual = torch.empty(TOKENS, HIDDEN), torch.empty(TOKENS, HIDDEN)
        if serialised:
            dist.irecv(hidden, source).wait()
            dist.irecv(residual, source).wait()
        else:
            works = [dist.irecv(hidden, source), dist.irecv(residual, source)]
            for work in works:
                work.wait()
        return hidden, residual

    def forward(hidden: torch.Tensor, residual: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        with torch.no_grad():
            for layer in stack:
                hidden, residual = layer(hidden, residual)
        return hidden, residual

    def step() -> None:
        sends = []
        for _ in range(MICROBATCHES):
            if rank == 0:
                hidden, residual = torch.randn(TOKENS, HIDDEN), torch.zeros(TOKENS, HIDDEN)
            else:
                hidden, residual = receive(rank - 1)
            hidden, residual = forward(hidden, residual)
            if rank < world - 1:
                sends += [dist.isend(hidden, rank + 1), dist.isend(residual, rank + 1)]
        if world > 1 and rank == world - 1:
            dist.send(torch.zeros(1), 0)  # the sampled token goes back to the first stage
        if world > 1 and rank == 0:
            dist.recv(torch.zeros(1), world - 1)
        for work in sends:
            work.wait()

    step()  # warm-up, outside the trace
    dist.barrier()
    from torch.profiler import ProfilerActivity, profile, record_function

    trace = Path(out) / f"pipeline-TP-0-PP-{rank}.trace.json.gz"
    with profile(activities=[ProfilerActivity.CPU], with_stack=True) as prof:
        for number in range(STEPS):
            with record_function(f"ProfilerStep#{number}"):  # the step marker torch's schedule writes
                step()
    prof.export_chrome_trace(str(trace))
    dist.barrier()
    dist.destroy_process_group()


def generate(layers: list[int], out: Path, *, serialised: bool = False) -> list[Path]:
    """Run one process per stage (`layers[p]` decoder layers on stage p) and return the traces
    they wrote into `out`, PP-0 first."""
    import multiprocessing

    import torch.distributed  # noqa: F401 — imported once here, shared by the forked stages
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], with_stack=True):
        pass  # the profiler's first start takes seconds; the forked stages inherit it started once

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    port = _free_port()
    context = multiprocessing.get_context("fork")
    processes = [context.Process(target=_stage, args=(rank, layers, str(out), serialised, port))
                 for rank in range(len(layers))]
    for process in processes:
        process.start()
    for process in processes:
        process.join(120)
    failed = [p.exitcode for p in processes if p.exitcode != 0]
    if failed:
        raise RuntimeError(f"pipeline stages exited with {failed}")
    return [out / f"pipeline-TP-0-PP-{rank}.trace.json.gz" for rank in range(len(layers))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", required=True, help="decoder layers per stage, e.g. 1,2,6,3")
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--serialised", action="store_true")
    args = parser.parse_args()
    for path in generate([int(n) for n in args.layers.split(",")], args.out, serialised=args.serialised):
        print(path)


if __name__ == "__main__":
    main()
