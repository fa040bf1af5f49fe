"""Constants and small helpers every part of the benchmark shares."""

from __future__ import annotations

import hashlib
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# the command line's script: the probe subprocess runs `python SCRIPT _probe TASK.json`, with the same
# sys.path[0] (benchmarks/) as the benchmark itself
SCRIPT = REPO / "benchmarks" / "check_speed.py"
ORACLE_VERSION = 5  # bump when the oracle's semantics change: cached verdicts are keyed by it
DEFAULT_WHEELS = Path("/tmp/wheels")

# Parts of sglang/srt a hardware plugin plausibly depends on, with a weight for how often plugin
# modules wrap them (used to pick the upstream module a generated plugin module is "about").
AREAS = {
    "sglang.srt.layers.attention": 2.5,
    "sglang.srt.layers.moe": 1.2,
    "sglang.srt.layers.quantization": 1.0,
    "sglang.srt.layers": 2.5,
    "sglang.srt.managers": 2.0,
    "sglang.srt.model_executor": 2.0,
    "sglang.srt.mem_cache": 2.0,
    "sglang.srt.distributed": 1.5,
    "sglang.srt.utils": 1.5,
    "sglang.srt.platforms": 0.6,
    "sglang.srt.server_args": 1.0,
    "sglang.srt.environ": 0.4,
    "sglang.srt.configs": 1.0,
    "sglang.srt.sampling": 1.0,
    "sglang.srt.speculative": 0.8,
    "sglang.srt.model_loader": 0.6,
    "sglang.srt.lora": 0.4,
    "sglang.srt.compilation": 0.4,
    "sglang.srt.plugins": 0.2,
    "sglang.srt.models": 0.8,
}
MODEL_MODULES = ("llama", "qwen2", "qwen3", "qwen2_moe", "qwen3_moe", "deepseek_v2", "mixtral", "gemma3_causal")
# sglang's own pinned dependencies that are light enough to install beside the venv for the oracle
RUNTIME_PACKAGES = ("transformers", "tokenizers", "huggingface-hub", "xgrammar", "einops", "setproctitle", "uvloop", "partial_json_parser")
# "try": a line inside `try: … except (ImportError, AttributeError)`: whatever the oracle says, the
# handler catches it, so it must never be flagged breaking (issue 18, exception scope).
KINDS = ("import", "reference", "call", "subclass", "hook", "override", "registry_key", "field", "try")


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def stable_hash(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big")
