"""A two-layer decoder stack of the ops a plugin typically replaces — RMSNorm, rotary embedding,
attention (SDPA), SiLU-and-mul MLP — small enough for the CPU, built the same in every dtype
(weights drawn in float32 from a fixed seed, then cast), for the built-in example's golden
comparison (float32 reference vs bfloat16 candidate) and its profiler trace.

    python -m harness golden capture --factory golden/stack.py:build --dtype bfloat16 --out DIR
    python golden/stack.py profile --dtype bfloat16 --out DIR   # a torch-profiler Chrome trace
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
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    model, (hidden,) = build(dtype)
    inputs = hidden.repeat(batch, 1, 1)
    out.mkdir(parents=True, exist_ok=True)
    with torch.no_grad():
        model(inputs)  # warm-up, outside the trace
        with torch_profile(activities=[ProfilerActivity.CPU]) as prof:
            for _ in range(iterations):
                model(inputs)
    path = out / f"stack-{str(dtype).removeprefix('torch.')}.trace.json"  # a stable name: reruns replace it
    prof.export_chrome_trace(str(path))
    return path


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["profile"])
    parser.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--iterations", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(profile(getattr(torch, args.dtype), args.out, args.iterations))
