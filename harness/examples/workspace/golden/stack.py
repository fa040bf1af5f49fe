"""A two-layer decoder stack of the ops a plugin typically replaces — RMSNorm, rotary embedding,
attention (SDPA), SiLU-and-mul MLP — small enough for the CPU, built the same in every dtype
(weights drawn in float32 from a fixed seed, then cast), for the built-in example's golden
comparison (float32 reference vs bfloat16 candidate) and its profiler trace.

    python -m harness golden capture --factory golden/stack.py:build --dtype bfloat16 --out DIR
    python golden/stack.py profile --dtype bfloat16 --out DIR   # a torch-profiler Chrome trace
    python golden/stack.py profile --stages 2 --out DIR          # one trace per pipeline stage
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch
from torch import nn
from torch.nn import functional as F

HIDDEN, HEADS, INTERMEDIATE, LAYERS, SEQ = 64, 4, 128, 2, 16


class RMSNorm(nn.Module):
    def __init__(self, size: int, eps: float = 1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(size))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        variance = x.float().pow(2).mean(-1, keepdim=True)
        return (x.float() * torch.rsqrt(variance + self.eps)).to(x.dtype) * self.weight


class Rotary(nn.Module):
    """Rotary position embedding (neox style) applied to q and k: (batch, heads, seq, dim)."""

    def __init__(self, dim: int, base: float = 10000.0):
        super().__init__()
        self.dim, self.base = dim, base

    def forward(self, q: torch.Tensor, k: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        inv_freq = 1.0 / (self.base ** (torch.arange(0, self.dim, 2, dtype=torch.float32) / self.dim))
        angles = torch.outer(torch.arange(q.shape[-2], dtype=torch.float32), inv_freq)
        cos, sin = angles.cos().to(q.dtype), angles.sin().to(q.dtype)

        def rotate(x: torch.Tensor) -> torch.Tensor:
            a, b = x[..., : self.dim // 2], x[..., self.dim // 2:]
            return torch.cat((a * cos - b * sin, b * cos + a * sin), dim=-1)

        return rotate(q), rotate(k)


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv_proj = nn.Linear(HIDDEN, 3 * HIDDEN, bias=False)
        self.rotary = Rotary(HIDDEN // HEADS)
        self.o_proj = nn.Linear(HIDDEN, HIDDEN, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, seq, _ = x.shape
        q, k, v = (t.view(batch, seq, HEADS, -1).transpose(1, 2) for t in self.qkv_proj(x).chunk(3, dim=-1))
        q, k = self.rotary(q, k)
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.o_proj(out.transpose(1, 2).reshape(batch, seq, HIDDEN))


class SiluAndMul(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate, up = x.chunk(2, dim=-1)
        return F.silu(gate) * up


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.gate_up_proj = nn.Linear(HIDDEN, 2 * INTERMEDIATE, bias=False)
        self.act_fn = SiluAndMul()
        self.down_proj = nn.Linear(INTERMEDIATE, HIDDEN, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(self.act_fn(self.gate_up_proj(x)))


class DecoderLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.input_layernorm = RMSNorm(HIDDEN)
        self.self_attn = Attention()
        self.post_attention_layernorm = RMSNorm(HIDDEN)
        self.mlp = MLP()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.self_attn(self.input_layernorm(x))
        return x + self.mlp(self.post_attention_layernorm(x))


class Stack(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList(DecoderLayer() for _ in range(LAYERS))
        self.norm = RMSNorm(HIDDEN)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x)
        return self.norm(x)


def build(dtype: torch.dtype = torch.float32, device: str = "cpu", seed: int = 0) -> tuple[nn.Module, tuple]:
    """The stack and its input (1, SEQ, HIDDEN), identical weights in every dtype."""
    torch.manual_seed(seed)
    model = Stack()
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, RMSNorm):  # not all ones, so a wrong norm shows
                module.weight.uniform_(0.5, 1.5)
    hidden = torch.randn(1, SEQ, HIDDEN)
    return model.to(device=device, dtype=dtype).eval(), (hidden.to(device=device, dtype=dtype),)


def profile(dtype: torch.dtype, out: Path, iterations: int = 3, batch: int = 8) -> Path:
    """A real torch-profiler Chrome trace of `iterations` forward passes over a batch of inputs."""
    from torch.profiler import ProfilerActivity, record_function
    from torch.profiler import profile as torch_profile

    model, (hidden,) = build(dtype)
    inputs = hidden.repeat(batch, 1, 1)
    out.mkdir(parents=True, exist_ok=True)
    with torch.no_grad():
        model(inputs)  # warm-up, outside the trace
        with torch_profile(activities=[ProfilerActivity.CPU]) as prof:
            for number in range(iterations):
                with record_function(f"ProfilerStep#{number}"):  # steps: the analysis' samples
                    model(inputs)
    path = out / f"stack-{str(dtype).removeprefix('torch.')}.trace.json"  # a stable name: reruns replace it
    prof.export_chrome_trace(str(path))
    return path


def profile_pipeline(dtype: torch.dtype, out: Path, stages: int, iterations: int = 3, batch: int = 8) -> list[Path]:
    """The stack split into `stages` pipeline stages, one process each over torch.distributed
    (gloo, loopback): stage p runs its contiguous share of the layers and sends the hidden
    states on. Each rank writes a trace under SGLang's per-rank name `stack-<dtype>-TP-0-PP-<p>.trace.json`."""
    import multiprocessing
    import socket

    from torch.profiler import ProfilerActivity, record_function
    from torch.profiler import profile as torch_profile

    if not 1 <= stages <= LAYERS:
        raise SystemExit(f"--stages {stages}: between 1 and the stack's {LAYERS} layers")
    with torch_profile(activities=[ProfilerActivity.CPU]):
        pass  # the profiler's first start takes seconds: once here, inherited by the forked stages
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    out.mkdir(parents=True, exist_ok=True)
    name = str(dtype).removeprefix("torch.")

    def stage(rank: int) -> None:
        import os

        import torch.distributed as dist

        torch.set_num_threads(1)
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        dist.init_process_group("gloo", rank=rank, world_size=stages)
        model, (hidden,) = build(dtype)
        share = [LAYERS // stages + (p < LAYERS % stages) for p in range(stages)]
        mine = model.layers[sum(share[:rank]):sum(share[:rank + 1])]
        inputs = hidden.repeat(batch, 1, 1)

        def step() -> None:
            x = inputs if rank == 0 else torch.empty_like(inputs)
            if rank > 0:
                dist.recv(x, rank - 1)
            for layer in mine:
                x = layer(x)
            if rank < stages - 1:
                dist.send(x, rank + 1)
            dist.barrier()

        with torch.no_grad():
            step()  # warm-up, outside the trace
            with torch_profile(activities=[ProfilerActivity.CPU], with_stack=True) as prof:
                for number in range(iterations):
                    with record_function(f"ProfilerStep#{number}"):
                        step()
        prof.export_chrome_trace(str(out / f"stack-{name}-TP-0-PP-{rank}.trace.json"))
        dist.destroy_process_group()

    context = multiprocessing.get_context("fork")
    processes = [context.Process(target=stage, args=(rank,)) for rank in range(stages)]
    for process in processes:
        process.start()
    for process in processes:
        process.join()
    if any(p.exitcode for p in processes):
        raise SystemExit(f"a pipeline stage failed: exit codes {[p.exitcode for p in processes]}")
    return [out / f"stack-{name}-TP-0-PP-{rank}.trace.json" for rank in range(stages)]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["profile"])
    parser.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--iterations", type=int, default=3)
    parser.add_argument("--stages", type=int, default=1, help="pipeline stages, one process (and trace) each")
    args = parser.parse_args()
    torch.set_num_threads(1)
    if args.stages > 1:
        print("\n".join(map(str, profile_pipeline(getattr(torch, args.dtype), args.out, args.stages, args.iterations))))
    else:
        print(profile(getattr(torch, args.dtype), args.out, args.iterations))
