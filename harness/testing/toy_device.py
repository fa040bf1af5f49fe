"""A toy out-of-tree device on PyTorch's PrivateUse1 key, in Python and on CPU memory — what a
plugin device looks like to the harness, with no C++ extension: importing this module registers
the device `xdev` (as a plugin's package does when it is imported), so `xdev` is unknown to torch
until then.

Every aten op on an `xdev` tensor reaches one boxed PrivateUse1 kernel
(`torch.library.Library("_", "IMPL").fallback`): the device's "kernel" runs the op on the
tensors' CPU buffers. The ops in `CPU_FALLBACK` have no kernel on the device and take the path
of PyTorch's `at::native::cpu_fallback` (aten/src/ATen/native/CPUFallback.cpp): arguments
copied to the CPU, the CPU kernel, results copied back — the signature the profile analysis
looks for. `FAULTY` ops have a kernel that is wrong (scaled), as a port's kernel can be.

    python -m harness.testing.toy_device profile --out DIR   # a torch-profiler trace on xdev

A device's tensor is a real PrivateUse1 tensor (`torch._C._acc.create_empty_tensor`, torch ≥ 2.6)
whose buffer is a CPU tensor kept beside it; views are copied (a toy: no aliasing across views).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

import torch
from torch.utils._pytree import tree_map

DEVICE = "xdev"
CPU_FALLBACK = {"aten::silu"}  # no kernel on the device: PyTorch's CPU fallback runs it
# ops whose device kernel is wrong: name → factor its result is scaled by (env: XDEV_FAULTY=op:factor)
FAULTY: dict[str, float] = {}


# A device tensor's CPU buffer, by its (empty) storage: `param.data = t` (Module.to) keeps the storage,
# not the Python object. A freed storage's entry is replaced when its address is reused.
_BUFFERS: dict[int, torch.Tensor] = {}


def _buffer(value: Any) -> Any:
    if not (isinstance(value, torch.Tensor) and value.device.type == DEVICE):
        return value
    base = _BUFFERS[value.untyped_storage()._cdata]
    # a view PyTorch made without dispatching (_unsafe_view) shares the storage: its own geometry
    return base.as_strided(value.shape, value.stride(), value.storage_offset())


def _on_device(buffer: torch.Tensor) -> torch.Tensor:
    tensor = torch._C._acc.create_empty_tensor(list(buffer.shape), buffer.dtype)
    dense = buffer.is_contiguous() and buffer.storage_offset() == 0
    _BUFFERS[tensor.untyped_storage()._cdata] = buffer if dense else buffer.clone(memory_format=torch.contiguous_format)
    return tensor


def _cpu_device(value: Any) -> Any:
    return torch.device("cpu") if isinstance(value, torch.device) and value.type == DEVICE else value


def _kernel(op: torch._ops.OpOverload, *args: Any, **kwargs: Any) -> Any:
    """The device's kernel for every aten op: the op on the CPU buffers (or, for CPU_FALLBACK
    ops, PyTorch's CPU-fallback path); results become device tensors."""
    name = op._schema.name
    if name == "aten::_copy_from":  # to or from the device: (src, dst)
        src, dst = args[0], args[1]
        torch._C._autograd._enable_record_function(False)  # the copy engine's work, not host operators
        try:
            _buffer(dst).copy_(_buffer(src))
        finally:
            torch._C._autograd._enable_record_function(True)
        return dst
    # in place or out=: the device tensors the op writes (silu reaches a backend as silu.out)
    written = [args[i] if i < len(args) else kwargs[a.name] for i, a in enumerate(op._schema.arguments)
               if a.alias_info is not None and a.alias_info.is_write]
    if name in CPU_FALLBACK:
        cpu_args, cpu_kwargs = tree_map(_to_cpu, (args, kwargs))
        result = op(*cpu_args, **cpu_kwargs)
        if not written:
            return tree_map(_to_device, result)
        for target, value in zip(written, result if isinstance(result, tuple) else (result,)):
            target.copy_(value)  # copied back, as cpu_fallback copies back the mutated arguments
        return written[0] if len(written) == 1 else tuple(written)
    kwargs = {key: _cpu_device(value) for key, value in kwargs.items()}
    # The device's kernel: its work on the buffers is not host operators in a trace (a real
    # device's kernel runs on the device); the op itself is recorded by the dispatcher.
    torch._C._autograd._enable_record_function(False)
    try:
        result = op(*tree_map(_buffer, args), **tree_map(_buffer, kwargs))
        if name in FAULTY:
            result.mul_(FAULTY[name])
        if written:
            return written[0] if len(written) == 1 else tuple(written)
        return tree_map(lambda r: _on_device(r) if isinstance(r, torch.Tensor) else r, result)
    finally:
        torch._C._autograd._enable_record_function(True)


def _to_cpu(value: Any) -> Any:
    return value.to("cpu") if isinstance(value, torch.Tensor) and value.device.type == DEVICE else value


def _to_device(value: Any) -> Any:
    return value.to(DEVICE) if isinstance(value, torch.Tensor) else value


def register() -> None:
    """Register `xdev` once per process (PyTorch allows one PrivateUse1 name per process)."""
    if torch._C._get_privateuse1_backend_name() == DEVICE:
        return
    from torch.utils.backend_registration import _setup_privateuseone_for_python_backend

    _setup_privateuseone_for_python_backend(DEVICE)
    library = torch.library.Library("_", "IMPL")
    library.fallback(_kernel, "PrivateUse1")
    globals()["_LIBRARY"] = library  # a destroyed Library unregisters its kernels
    for entry in filter(None, os.environ.get("XDEV_FAULTY", "").split(",")):
        op, _, factor = entry.rpartition(":")
        FAULTY[op] = float(factor)


register()


class Block(torch.nn.Module):
    """A decoder-like block small enough for a test: norm, attention with its softmax inside the
    forward (no module of its own), and an MLP whose activation is SiLU."""

    def __init__(self, hidden: int = 16, heads: int = 2):
        super().__init__()
        self.heads = heads
        self.norm = torch.nn.LayerNorm(hidden)
        self.qkv_proj = torch.nn.Linear(hidden, 3 * hidden, bias=False)
        self.o_proj = torch.nn.Linear(hidden, hidden, bias=False)
        self.up = torch.nn.Linear(hidden, 4 * hidden)
        self.down = torch.nn.Linear(4 * hidden, hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, seq, hidden = x.shape
        q, k, v = (t.reshape(batch, seq, self.heads, -1).transpose(1, 2)
                   for t in self.qkv_proj(self.norm(x)).chunk(3, dim=-1))
        scores = torch.matmul(q, k.transpose(-1, -2)) / (hidden // self.heads) ** 0.5
        attended = torch.matmul(torch.softmax(scores, dim=-1), v).transpose(1, 2).reshape(batch, seq, hidden)
        x = x + self.o_proj(attended)
        return x + self.down(torch.nn.functional.silu(self.up(x)))


def build(dtype: torch.dtype = torch.float32, device: str = DEVICE, layers: int = 2) -> tuple[torch.nn.Module, tuple]:
    """`harness golden capture`'s factory: the blocks and an input (1, 8, 16), the same weights on
    every device and dtype."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(*(Block() for _ in range(layers)))
    hidden = torch.randn(1, 8, 16)
    return model.to(dtype).to(device).eval(), (hidden.to(dtype).to(device),)


def profile(out: Path, steps: int = 3) -> Path:
    """A torch-profiler Chrome trace of `steps` forward passes on the device, each in a
    `ProfilerStep#n` range; returns the trace."""
    from torch.profiler import ProfilerActivity, record_function
    from torch.profiler import profile as torch_profile

    model, inputs = build(layers=2)
    out.mkdir(parents=True, exist_ok=True)
    with torch.no_grad():
        model(*inputs)  # warm-up, outside the trace
        with torch_profile(activities=[ProfilerActivity.CPU]) as prof:
            for number in range(steps):
                with record_function(f"ProfilerStep#{number}"):
                    model(*inputs)
    path = out / f"{DEVICE}-TP-0.trace.json"
    prof.export_chrome_trace(str(path))
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["profile"])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--steps", type=int, default=3)
    options = parser.parse_args()
    print(profile(options.out, options.steps))


if __name__ == "__main__":
    main()
