"""Real torch-profiler traces of CPU fallbacks on a CUDA device, in three spellings, beside ops that
run their own device kernels — the known truth for the profile analysis' fallback signature:

- `aten::silu.out` through PyTorch's own `at::native::cpu_fallback` (ATen/native/CPUFallback.cpp),
  registered as its CUDA kernel by a small C++ extension: `aten::_to_cpu`, the CPU kernel
  (redispatched, not recorded), `aten::_copy_from_and_resize` back (the extension gives CUDA that
  op, as a backend using the fallback must);
- `aten::gelu` overridden for CUDA in Python: `.cpu()`, the CPU `aten::gelu`, `.to(device)` —
  `aten::to`/`_to_copy`/`copy_` with `Memcpy DtoH` / `Memcpy HtoD` on the device;
- `fallback_demo::cpu_tanh`, a custom op whose copies are not recorded as operators: only the
  runtime's `cudaMemcpyAsync` and the device's `Memcpy DtoH` / `Memcpy HtoD`;
- and, not fallbacks: `aten::slice_scatter` (device-to-device copies), `add`, `mean`, `mul`, `pow`,
  `clone` (device kernels), `item` (one copy to the host, none back).

    python -m harness.testing.fallback_trace --out DIR   # needs CUDA and a C++ compiler

Writes `cuda-TP-0.trace.json.gz` (CPU and CUDA activities) and `cuda-host-TP-0.trace.json.gz`
(CPU activity only: no device events, as a plugin device without a profiler plugin writes).
"""

from __future__ import annotations

import argparse
import gzip
import shutil
from pathlib import Path

STEPS, CALLS = 2, 10  # slice_scatter: STEPS * CALLS = 20 calls
_EXTENSION = r"""
#include <ATen/ATen.h>
#include <ATen/native/CPUFallback.h>
#include <torch/library.h>

static void fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  at::native::cpu_fallback(op, stack);
}

static at::Tensor copy_from_and_resize(const at::Tensor& self, const at::Tensor& dst) {
  at::Tensor out = dst;
  out.resize_(self.sizes());
  return out.copy_(self);
}

TORCH_LIBRARY_IMPL(aten, CUDA, m) {
  m.impl("silu.out", torch::CppFunction::makeFromBoxedFunction<&fallback>());
  m.impl("_copy_from_and_resize", copy_from_and_resize);
}
"""


def _register() -> list[object]:
    import torch
    from torch.utils.cpp_extension import load_inline

    load_inline("fallback_demo_ext", cpp_sources=[_EXTENSION], is_python_module=False, verbose=False)
    library = torch.library.Library("aten", "IMPL")

    def gelu_on_cpu(x: torch.Tensor, approximate: str = "none") -> torch.Tensor:
        return torch.ops.aten.gelu.default(x.cpu(), approximate=approximate).to(x.device)

    library.impl("gelu", gelu_on_cpu, "CUDA")

    @torch.library.custom_op("fallback_demo::cpu_tanh", mutates_args=(), schema="(Tensor x) -> Tensor")
    def cpu_tanh(x: torch.Tensor) -> torch.Tensor:
        torch._C._autograd._enable_record_function(False)  # copies as a runtime makes them, no operators
        try:
            return torch.tanh(x.cpu()).to(x.device)
        finally:
            torch._C._autograd._enable_record_function(True)

    return [library, cpu_tanh]


def _workload() -> None:
    import torch

    x = torch.randn(64, 256, device="cuda")
    out = torch.empty_like(x)
    for _ in range(CALLS):
        torch.ops.aten.silu.out(x, out=out)
        torch.nn.functional.gelu(x)
        torch.ops.fallback_demo.cpu_tanh(x)
        torch.slice_scatter(x, x[:, :128] * 2, dim=1, start=0, end=128)
        y = (x + 1).mul(2).pow(2).clone()
        y.mean().item()
    torch.cuda.synchronize()


def generate(out: Path) -> list[Path]:
    """Profile the workload twice (CPU and CUDA activities; CPU only) into `out`; returns both traces."""
    from torch.profiler import ProfilerActivity, profile, record_function

    keep = _register()  # a Library that is collected unregisters its kernels
    _workload()  # warm-up, outside the traces
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, activities in (("cuda", [ProfilerActivity.CPU, ProfilerActivity.CUDA]),
                             ("cuda-host", [ProfilerActivity.CPU])):
        with profile(activities=activities, record_shapes=True) as prof:
            for number in range(STEPS):
                with record_function(f"ProfilerStep#{number}"):
                    _workload()
        plain = out / f"{name}-TP-0.trace.json"
        prof.export_chrome_trace(str(plain))
        packed = plain.with_name(plain.name + ".gz")
        with plain.open("rb") as source, gzip.open(packed, "wb") as target:
            shutil.copyfileobj(source, target)
        plain.unlink()
        paths.append(packed)
    del keep
    return paths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, type=Path)
    for path in generate(parser.parse_args().out):
        print(path)


if __name__ == "__main__":
    main()
