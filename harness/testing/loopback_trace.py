"""The loopback engine's profiler: /start_profile .. /stop_profile collect its forward steps and
write them as a torch-profiler Chrome trace, named the way SGLang (or, in vLLM mode, vLLM) names
its traces."""

from __future__ import annotations

import gzip
import json
import logging
import os
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

logger = logging.getLogger("loopback")


# (upstream op, CUDA kernel, xdev kernel, device microseconds) for one decoder layer.
_LAYER_OPS = (
    ("sgl_kernel::rmsnorm", "void flashinfer::norm::RMSNormKernel<8u, __nv_bfloat16>",
     "xdev::rms_norm_bf16", 4),
    ("aten::mm", "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64",
     "xdev::gemm_bf16", 30),
    ("sgl_kernel::rotary_embedding", "void rotary_embedding_kernel<__nv_bfloat16, true>",
     "xdev::rope_neox_bf16", 3),
    ("flashinfer::batch_decode_with_paged_kv_cache",
     "void flashinfer::BatchDecodeWithPagedKVCacheKernel<128u, __nv_bfloat16>",
     "xdev::paged_attention_decode", 12),
    ("aten::mm", "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x128x64",
     "xdev::gemm_bf16", 18),
    ("c10d::allreduce_", "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
     "xccl::all_reduce_sum_bf16", 8),
    ("sgl_kernel::rmsnorm", "void flashinfer::norm::RMSNormKernel<8u, __nv_bfloat16>",
     "xdev::rms_norm_bf16", 4),
    ("aten::mm", "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64",
     "xdev::gemm_bf16", 40),
    ("sgl_kernel::silu_and_mul", "void act_and_mul_kernel<__nv_bfloat16, &silu_kernel>",
     "xdev::swiglu_bf16", 3),
    ("aten::mm", "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64",
     "xdev::gemm_bf16", 35),
)
_LAYERS = 2


# With fallbacks injected, this op runs on the host: a cpu_op with no launch, bracketed by
# device->host and host->device copies — what a CPU fallback looks like in a device trace.
FALLBACK_TRACE_OP = "sgl_kernel::silu_and_mul"


class Profiler:
    """Collects forward steps between /start_profile and /stop_profile and writes them as a
    torch-profiler Chrome trace (`{"traceEvents": [...]}`) the way SGLang names it, or, with a
    `fixed_dir` (vLLM: the directory is set at launch), the way vLLM's workers and API process
    name theirs."""

    def __init__(self, platform: str, *, fallback_ops: bool, gzip_traces: bool = True, fixed_dir: Path | None = None):
        self.platform = platform
        self.fallback_ops = fallback_ops
        self.gzip_traces = gzip_traces
        self.fixed_dir = fixed_dir
        self.lock = threading.Lock()
        self.active = False
        self.output_dir = Path()
        self.profile_id = ""
        self.steps: list[tuple[str, int]] = []  # (prefill|decode, tokens)
        self.target_steps: int | None = None
        self.written: list[Path] = []

    def start(self, output_dir: str | None, num_steps: int | None) -> tuple[bool, str]:
        with self.lock:
            if self.active:
                return False, "Profiling is already in progress. Call /stop_profile first."
            directory = self.fixed_dir or output_dir or os.environ.get("SGLANG_TORCH_PROFILER_DIR") or tempfile.gettempdir()
            self.output_dir = Path(directory).expanduser()
            self.profile_id = str(time.time())
            self.steps = []
            self.target_steps = num_steps or None
            self.active = True
            logger.info("Profiling starts. Traces will be saved to: %s (with profile id: %s)",
                        self.output_dir, self.profile_id)
            return True, "Succeeded"

    def record(self, kind: str, tokens: int) -> None:
        with self.lock:
            if not self.active:
                return
            self.steps.append((kind, tokens))
            if self.target_steps is not None and len(self.steps) >= self.target_steps:
                self._write()

    def stop(self) -> tuple[bool, str]:
        with self.lock:
            if not self.active:
                return False, "Profiling is not in progress. Call /start_profile first."
            self._write()
            return True, "Succeeded"

    def _write(self) -> None:
        self.active = False
        self.output_dir.mkdir(parents=True, exist_ok=True)
        suffix = ".trace.json.gz" if self.gzip_traces else ".trace.json"
        trace = build_trace(self.steps, self.platform, self.fallback_ops)
        files = {f"{self.profile_id}-TP-0{suffix}": trace}
        if self.fixed_dir is not None:
            # vllm/v1/worker/gpu_worker.py (0.27.1): `<get_worker_rank_suffix>.<ns>.pt.trace.json.gz`
            # per worker, and v1/engine/async_llm.py one `<host>_<pid>.async_llm.<ns>…` host-only trace
            ns = time.time_ns()
            host = {**trace, "traceEvents": [e for e in trace["traceEvents"] if e.get("pid") != 0]}
            files = {f"dp0_pp0_tp0_dcp0_ep0_rank0.{ns}.pt{suffix}": trace, f"loopback_{os.getpid()}.async_llm.{ns}.pt{suffix}": host}
        for name, body in files.items():
            data = json.dumps(body).encode()
            path = self.output_dir / name
            path.write_bytes(gzip.compress(data) if self.gzip_traces else data)
            self.written.append(path)
        logger.info("Profiling done. Traces are saved to: %s", self.output_dir)


def build_trace(steps: list[tuple[str, int]], platform: str, fallback_ops: bool) -> dict[str, Any]:
    """Events in torch.profiler's export_chrome_trace layout: host ops and runtime launches on
    pid 1 (thread 1), device work on pid 0 with one tid per stream, linked by `correlation`."""
    host_pid, host_tid, device_pid, compute_stream, copy_stream = 1, 1, 0, 7, 8
    runtime_cat = "cuda_runtime" if platform == "cuda" else "privateuse1_runtime"
    launch_name = "cudaLaunchKernel" if platform == "cuda" else "xdevLaunchKernel"
    copy_name = "cudaMemcpyAsync" if platform == "cuda" else "xdevMemcpyAsync"
    events: list[dict[str, Any]] = [
        {"ph": "M", "name": "process_name", "pid": host_pid, "tid": 0, "args": {"name": "python"}},
        {"ph": "M", "name": "process_name", "pid": device_pid, "tid": 0,
         "args": {"name": f"{platform} 0"}},
        {"ph": "M", "name": "thread_name", "pid": device_pid, "tid": compute_stream,
         "args": {"name": f"stream {compute_stream}"}},
        {"ph": "M", "name": "thread_name", "pid": device_pid, "tid": copy_stream,
         "args": {"name": f"stream {copy_stream}"}},
    ]
    host_clock = 1_000.0
    device_clock = 1_000.0
    correlation = 0

    def launch(op: str, device_name: str, device_us: float, *, cat: str, stream: int,
               runtime: str) -> None:
        nonlocal host_clock, device_clock, correlation
        correlation += 1
        op_start = host_clock
        events.append({"ph": "X", "cat": "cpu_op", "name": op, "pid": host_pid, "tid": host_tid,
                       "ts": op_start, "dur": 6.0, "args": {"External id": correlation}})
        events.append({"ph": "X", "cat": runtime_cat, "name": runtime, "pid": host_pid,
                       "tid": host_tid, "ts": op_start + 1.0, "dur": 4.0,
                       "args": {"correlation": correlation, "External id": correlation}})
        device_start = max(device_clock, op_start + 5.0)
        events.append({"ph": "X", "cat": cat, "name": device_name, "pid": device_pid,
                       "tid": stream, "ts": device_start, "dur": float(device_us),
                       "args": {"device": 0, "stream": stream, "correlation": correlation,
                                "External id": correlation}})
        host_clock = op_start + 7.0
        device_clock = device_start + device_us

    def sync_copy(direction: str, nbytes: int) -> None:
        nonlocal host_clock
        label = {"DtoH": "Memcpy DtoH (Device -> Pinned)", "HtoD": "Memcpy HtoD (Pinned -> Device)"}
        launch("aten::copy_", label[direction], 2 + nbytes / 20_000, cat="gpu_memcpy",
               stream=copy_stream, runtime=copy_name)
        host_clock = max(host_clock, device_clock)  # a blocking copy waits for the device

    for kind, tokens in steps:
        step_start = host_clock
        sync_copy("HtoD", 8 * max(tokens, 1))
        for _ in range(_LAYERS):
            for op, cuda_kernel, xdev_kernel, micros in _LAYER_OPS:
                if kind == "prefill" and op.startswith("flashinfer::batch_decode"):
                    op = "flashinfer::batch_prefill_with_paged_kv_cache"
                    cuda_kernel = "void flashinfer::BatchPrefillWithPagedKVCacheKernel<128u, __nv_bfloat16>"
                    xdev_kernel = "xdev::flash_attention_extend"
                scale = 1 + (tokens / 64 if kind == "prefill" else 0)
                if fallback_ops and op == FALLBACK_TRACE_OP:
                    sync_copy("DtoH", 4096 * max(tokens, 1))
                    events.append({"ph": "X", "cat": "cpu_op", "name": op, "pid": host_pid,
                                   "tid": host_tid, "ts": host_clock, "dur": 150.0 * scale,
                                   "args": {"External id": 0}})
                    host_clock += 150.0 * scale
                    sync_copy("HtoD", 4096 * max(tokens, 1))
                    continue
                kernel = cuda_kernel if platform == "cuda" else xdev_kernel
                launch(op, kernel, micros * scale, cat="kernel", stream=compute_stream,
                       runtime=launch_name)
        launch("aten::argmax", "void at::native::reduce_kernel<512, 1>" if platform == "cuda"
               else "xdev::argmax_i64", 5, cat="kernel", stream=compute_stream, runtime=launch_name)
        sync_copy("DtoH", 8)
        events.append({"ph": "X", "cat": "user_annotation", "name": f"forward_{kind}",
                       "pid": host_pid, "tid": host_tid, "ts": step_start,
                       "dur": host_clock - step_start, "args": {}})
        host_clock += 40.0  # scheduler work between steps: the device idles
    return {
        "schemaVersion": 1,
        "deviceProperties": [{"id": 0, "name": f"loopback-{platform}", "totalGlobalMem": 0}],
        "distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 1},
        "traceName": "loopback",
        "displayTimeUnit": "ms",
        "traceEvents": events,
    }


# --------------------------------------------------------------------------- HTTP
