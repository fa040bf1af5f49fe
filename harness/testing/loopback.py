"""A loopback engine that speaks SGLang's HTTP surface (with `--engine vllm`, vLLM's profiler
routes and trace names), with injectable faults.

It stands in for an accelerator that is not here: the server lifecycle launches it exactly like
`python -m sglang.launch_server` (a process, a port, a health endpoint, a log), and the runners
talk to it over the real OpenAI-compatible protocol. What it answers is decided by an answer key
(gsm8k JSONL rows with `question` and `answer`), so accuracy gates see realistic, controllable
scores; everything else gets deterministic generic text.

    python -m harness.testing.loopback --host 127.0.0.1 --port 30000 --answers key.jsonl \
        --wrong-rate 0.1 --fallback-lines 4

Only the standard library is used so the engine starts in well under a second.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import random
import re
import signal
import socket
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Iterator

from harness.testing.loopback_trace import FALLBACK_TRACE_OP, Profiler

logger = logging.getLogger("loopback")

# A "token" is a run of non-space characters with its leading whitespace, so joining tokens
# reproduces the text exactly (streaming deltas concatenate to the non-streamed reply).
_TOKEN = re.compile(r"\s*\S+")
_CALCULATOR = re.compile(r"<<[^>]*>>")  # gsm8k's calculator annotations, e.g. <<48/2=24>>
_GENERIC_WORDS = (
    "the model reads the prompt and writes a short plain answer about tokens kernels caches "
    "layers heads batches streams devices queues memory values steps results in order"
).split()
DEFAULT_MAX_TOKENS = {"completions": 16, "chat": 128}  # OpenAI's completions default; chat has none


def count_tokens(text: str) -> int:
    return len(_TOKEN.findall(text))


def _unit_interval(*parts: object) -> float:
    """A deterministic number in [0, 1) from the parts — stable across runs and processes."""
    digest = hashlib.sha256("\x1f".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


# --------------------------------------------------------------------------- answers


@dataclass(frozen=True)
class KeyEntry:
    question: str
    answer: str  # the number after '####'
    reasoning: str  # the worked solution, one line, calculator annotations removed


class AnswerKey:
    """gsm8k-format rows; finds the last known question a prompt contains."""

    def __init__(self, entries: list[KeyEntry]):
        self.entries = entries

    @classmethod
    def load(cls, path: Path) -> "AnswerKey":
        entries = []
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if not line.strip():
                continue
            row = json.loads(line)
            solution, sep, final = str(row["answer"]).rpartition("####")
            if not sep:
                raise ValueError(f"{path}:{number}: answer has no '#### <number>' line")
            reasoning = " ".join(_CALCULATOR.sub("", solution).split()).rstrip(".")
            entries.append(KeyEntry(str(row["question"]).strip(), final.strip(), reasoning))
        return cls(entries)

    def lookup(self, prompt: str) -> KeyEntry | None:
        """Few-shot prompts quote earlier questions with their answers; the one to answer is
        the question that occurs last (ties go to the longer, more specific question)."""
        best: tuple[int, int] | None = None
        found = None
        for entry in self.entries:
            position = prompt.rfind(entry.question)
            if position < 0:
                continue
            rank = (position + len(entry.question), len(entry.question))
            if best is None or rank > best:
                best, found = rank, entry
        return found


def wrong_number(answer: str, salt: float) -> str:
    """A plausible but different number, so answer extraction succeeds and scoring fails."""
    offset = 1 + int(salt * 9)
    try:
        return str(int(answer.replace(",", "")) + offset)
    except ValueError:
        try:
            return f"{float(answer.replace(',', '')) + offset:g}"
        except ValueError:
            return str(offset)


# --------------------------------------------------------------------------- engine


@dataclass
class Faults:
    never_healthy: bool = False
    exit_at_start: int | None = None
    wrong_rate: float = 0.0
    seed: int = 0
    latency_ms: float = 0.0
    fallback_lines: int = 0
    error_rate: float = 0.0
    nondeterministic: bool = False  # generic replies differ between identical greedy requests
    ignore_sigterm: bool = False  # only SIGKILL stops it (tests teardown escalation)
    exit_after_requests: int | None = None  # the engine dies (exit 3) once it answered this many
    exit_delay_s: float = 0.0  # ... closing its port first and exiting this much later (a slow teardown)


@dataclass
class Generation:
    text: str
    finish_reason: str  # "stop" | "length"
    matched_stop: str | None
    prompt_tokens: int

    @property
    def completion_tokens(self) -> int:
        return count_tokens(self.text)


@dataclass
class Engine:
    model: str
    faults: Faults
    key: AnswerKey | None = None
    platform: str = "cuda"
    gzip_traces: bool = True
    # vLLM mode: the trace directory fixed at launch; None there means no profiler routes at all
    vllm: bool = False
    vllm_trace_dir: Path | None = None
    profiler: "Profiler" = field(init=False)
    _counter: int = field(default=0, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)
    _rng: random.Random = field(init=False)

    def __post_init__(self) -> None:
        self._rng = random.Random(self.faults.seed)
        self.profiler = Profiler(self.platform, fallback_ops=bool(self.faults.fallback_lines),
                                 gzip_traces=self.gzip_traces, fixed_dir=self.vllm_trace_dir)

    def next_request(self) -> tuple[int, bool]:
        """Request number and whether this request fails (--error-rate)."""
        with self._lock:
            self._counter += 1
            return self._counter, self._rng.random() < self.faults.error_rate

    def generate(self, prompt: str, *, api: str, max_tokens: int | None, temperature: float,
                 seed: int | None, stop: list[str], request_number: int) -> Generation:
        entry = self.key.lookup(prompt) if self.key else None
        if entry is not None:
            # Monotone in the rate: a question wrong at 5 % is also wrong at 10 %.
            draw = _unit_interval(self.faults.seed, entry.question)
            number = (wrong_number(entry.answer, draw) if draw < self.faults.wrong_rate
                      else entry.answer)
            reasoning = entry.reasoning or "Working through the question step by step"
            text = f"{reasoning}. The answer is {number}.\n#### {number}"
        else:
            text = self._generic_text(prompt, max_tokens or DEFAULT_MAX_TOKENS[api],
                                      temperature, seed, request_number)
        return self._finish(text, prompt, max_tokens, stop)

    def _generic_text(self, prompt: str, length: int, temperature: float, seed: int | None,
                      request_number: int) -> str:
        variation: object = "greedy"
        if temperature > 0:
            variation = seed if seed is not None else uuid.uuid4().hex
        if self.faults.nondeterministic:
            variation = f"{variation}/{request_number}"
        rng = random.Random(hashlib.sha256(f"{variation}\x1f{prompt}".encode()).digest())
        return " " + " ".join(rng.choice(_GENERIC_WORDS) for _ in range(length))

    @staticmethod
    def _finish(text: str, prompt: str, max_tokens: int | None, stop: list[str]) -> Generation:
        matched = None
        cut = len(text)
        for word in stop:
            at = text.find(word)
            if word and 0 <= at < cut:
                cut, matched = at, word
        text = text[:cut]
        finish = "stop"
        pieces = _TOKEN.findall(text)
        if max_tokens is not None and len(pieces) > max_tokens:
            text, finish, matched = "".join(pieces[:max_tokens]), "length", None
        return Generation(text, finish, matched, count_tokens(prompt))


def _error_body(message: str, status: int) -> dict[str, Any]:
    kinds = {400: "BadRequestError", 404: "NotFoundError", 500: "InternalServerError"}
    return {"object": "error", "message": message, "type": kinds.get(status, "Error"),
            "param": None, "code": status}


def _prompt_of_chat(messages: list[dict[str, Any]]) -> str:
    parts = []
    for message in messages:
        content = message.get("content") or ""
        if isinstance(content, list):  # [{"type": "text", "text": ...}, ...]
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
        parts.append(f"{message.get('role', 'user')}: {content}")
    return "\n".join(parts)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out as separate writes; with Nagle on, keep-alive clients wait for a
    # delayed ACK (~40 ms) on every request.
    disable_nagle_algorithm = True
    server_version = "loopback-sglang"
    engine: Engine  # set on the subclass made by serve()
    server_args: dict[str, Any]

    def log_message(self, fmt: str, *args: Any) -> None:  # uvicorn's access-log shape
        logger.info('%s:%s - "%s" %s', self.client_address[0], self.client_address[1],
                    self.requestline, args[1] if len(args) > 1 else "")

    # -- plumbing
    def _send_json(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _send_text(self, status: int, text: str) -> None:
        data = text.encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _read_json(self) -> dict[str, Any] | None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if not raw.strip():
            return {}
        try:
            body = json.loads(raw)
        except json.JSONDecodeError as exc:
            self._send_json(400, _error_body(f"invalid JSON body: {exc}", 400))
            return None
        if not isinstance(body, dict):
            self._send_json(400, _error_body("request body must be a JSON object", 400))
            return None
        return body

    # -- routes
    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        if path in ("/health", "/health_generate"):
            if self.engine.faults.never_healthy:
                self._send_text(503, "")
            else:
                self._send_text(200, "")
        elif path == "/v1/models":
            self._send_json(200, {"object": "list", "data": [
                {"id": self.engine.model, "object": "model", "created": int(time.time()),
                 "owned_by": "sglang", "root": self.engine.model, "max_model_len": 32768}]})
        elif path in ("/get_server_info", "/server_info"):
            self._send_json(200, self.server_args)
        elif path in ("/start_profile", "/stop_profile"):
            self._profile(path, {})
        else:
            self._send_json(404, _error_body(f"no route {path}", 404))

    def do_POST(self) -> None:
        path = self.path.split("?", 1)[0]
        body = self._read_json()
        if body is None:
            return
        if path == "/v1/completions":
            self._generate(body, api="completions")
        elif path == "/v1/chat/completions":
            self._generate(body, api="chat")
        elif path in ("/start_profile", "/stop_profile"):
            self._profile(path, body)
        else:
            self._send_json(404, _error_body(f"no route {path}", 404))

    def _profile(self, path: str, body: dict[str, Any]) -> None:
        profiler = self.engine.profiler
        if self.engine.vllm:
            # vllm/entrypoints/serve/profile/api_router.py: the routes exist only with a profiler
            # configured at launch, take no body and answer an empty 200
            if self.engine.vllm_trace_dir is None:
                self._send_json(404, {"detail": "Not Found"})
                return
            ok, message = profiler.start(None, None) if path == "/start_profile" else profiler.stop()
            self._send_text(200 if ok else 500, "" if ok else message)
            return
        if path == "/start_profile":
            ok, message = profiler.start(body.get("output_dir"), body.get("num_steps"))
            text = "Start profiling.\n"
        else:
            ok, message = profiler.stop()
            text = "Stop profiling. This will take some time.\n"
        if ok:
            self._send_text(200, text)
        else:
            self._send_text(500, message)

    def _generate(self, body: dict[str, Any], *, api: str) -> None:
        request_number, fails = self.engine.next_request()
        if fails:
            logger.error("Error in request %d: injected fault (--error-rate)", request_number)
            self._send_json(500, _error_body("Internal server error (injected fault)", 500))
            return
        if body.get("logprobs") or body.get("echo"):
            # No real distribution behind the text: refuse rather than invent scores, so a
            # loglikelihood task fails plainly instead of grading on made-up numbers.
            self._send_json(400, _error_body("logprobs/echo are not supported by the loopback engine", 400))
            return
        if api == "completions":
            prompt = body.get("prompt")
            if prompt is None:
                self._send_json(400, _error_body("'prompt' is required", 400))
                return
            # str | list[str] | list[int] (token ids) | list[list[int]], as the OpenAI API allows
            if not isinstance(prompt, list) or all(isinstance(t, int) for t in prompt):
                prompt = [prompt]
            prompts = [p if isinstance(p, str) else " ".join(map(str, p)) for p in prompt]
        else:
            messages = body.get("messages")
            if not isinstance(messages, list) or not messages:
                self._send_json(400, _error_body("'messages' must be a non-empty list", 400))
                return
            prompts = [_prompt_of_chat(messages)]
        stop = body.get("stop") or []
        stop = [stop] if isinstance(stop, str) else list(stop)
        max_tokens = body.get("max_tokens", body.get("max_completion_tokens"))
        generations = [
            self.engine.generate(p, api=api, max_tokens=max_tokens,
                                 temperature=float(body.get("temperature") or 0.0),
                                 seed=body.get("seed"), stop=stop, request_number=request_number)
            for p in prompts
        ]
        for generation in generations:
            self.engine.profiler.record("prefill", generation.prompt_tokens)
            for _ in range(generation.completion_tokens):
                self.engine.profiler.record("decode", 1)
        if self.engine.faults.latency_ms:
            time.sleep(self.engine.faults.latency_ms / 1000)
        response_id = ("cmpl-" if api == "completions" else "chatcmpl-") + uuid.uuid4().hex
        model = body.get("model") or self.engine.model
        if body.get("stream"):
            self._stream(response_id, model, api, generations, body.get("stream_options") or {})
        else:
            self._send_json(200, _full_response(response_id, model, api, generations))
        if self.engine.faults.exit_after_requests == request_number:
            self.wfile.flush()
            logger.error("Scheduler died: injected fault (--exit-after-requests %d)", request_number)
            if self.engine.faults.exit_delay_s:  # its sockets close at once, the process goes later
                self.server.socket.close()
                self.connection.shutdown(socket.SHUT_RDWR)
                time.sleep(self.engine.faults.exit_delay_s)
            logging.shutdown()
            os._exit(3)  # like a crashed scheduler: no cleanup, the port is released by the kernel

    def _stream(self, response_id: str, model: str, api: str, generations: list[Generation],
                options: dict[str, Any]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for event in _stream_events(response_id, model, api, generations, options):
            data = f"data: {event}\n\n".encode()
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")


def _usage(generations: list[Generation]) -> dict[str, int]:
    prompt = sum(g.prompt_tokens for g in generations)
    completion = sum(g.completion_tokens for g in generations)
    return {"prompt_tokens": prompt, "completion_tokens": completion,
            "total_tokens": prompt + completion}


def _full_response(response_id: str, model: str, api: str,
                   generations: list[Generation]) -> dict[str, Any]:
    choices = []
    for index, g in enumerate(generations):
        if api == "completions":
            choices.append({"index": index, "text": g.text, "logprobs": None,
                            "finish_reason": g.finish_reason, "matched_stop": g.matched_stop})
        else:
            choices.append({"index": index,
                            "message": {"role": "assistant", "content": g.text,
                                        "reasoning_content": None, "tool_calls": None},
                            "logprobs": None, "finish_reason": g.finish_reason,
                            "matched_stop": g.matched_stop})
    return {"id": response_id, "object": "text_completion" if api == "completions"
            else "chat.completion", "created": int(time.time()), "model": model,
            "choices": choices, "usage": _usage(generations)}


def _stream_events(response_id: str, model: str, api: str, generations: list[Generation],
                   options: dict[str, Any]) -> Iterator[str]:
    """SGLang's stream: one chunk per token, finish_reason on the last token's chunk,
    optional usage (per chunk or a final choices-less chunk), then `[DONE]`."""
    created = int(time.time())
    kind = "text_completion" if api == "completions" else "chat.completion.chunk"
    for index, g in enumerate(generations):
        pieces = _TOKEN.findall(g.text) or [""]
        if api == "chat":
            first = {"index": index, "delta": {"role": "assistant", "content": ""},
                     "logprobs": None, "finish_reason": None}
            yield json.dumps({"id": response_id, "object": kind, "created": created,
                              "model": model, "choices": [first]})
        for position, piece in enumerate(pieces, 1):
            last = position == len(pieces)
            choice: dict[str, Any] = {"index": index, "logprobs": None,
                                      "finish_reason": g.finish_reason if last else None,
                                      "matched_stop": g.matched_stop if last else None}
            if api == "completions":
                choice["text"] = piece
            else:
                choice["delta"] = {"content": piece}
            chunk: dict[str, Any] = {"id": response_id, "object": kind, "created": created,
                                     "model": model, "choices": [choice]}
            if options.get("continuous_usage_stats"):
                chunk["usage"] = {"prompt_tokens": g.prompt_tokens, "completion_tokens": position,
                                  "total_tokens": g.prompt_tokens + position}
            yield json.dumps(chunk)
    if options.get("include_usage"):
        yield json.dumps({"id": response_id, "object": kind, "created": created, "model": model,
                          "choices": [], "usage": _usage(generations)})
    yield "[DONE]"


# --------------------------------------------------------------------------- startup

# What real ports print when an op is not native: torch-native fallbacks, CPU fallbacks and
# Triton kernels that fail to compile for the device.
FALLBACK_LOG_LINES = (
    "[xdev.ops] rms_norm: hidden_size=5120 not in supported buckets, falling back to "
    "torch native implementation",
    "UserWarning: The operator 'sgl_kernel::silu_and_mul' is not currently supported on the "
    "XDEV backend and will fall back to run on the CPU. This may have performance implications.",
    "triton.compiler.errors.CompilationError: at 42:8: in fused_moe_kernel: "
    "tl.dot does not support input dtype bfloat16 on target xdev",
    "[xdev.attention] flash_attention_decode: page_size=64 unsupported, "
    "using fallback torch.nn.functional.scaled_dot_product_attention",
)


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m harness.testing.loopback",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--model", default="loopback-model", help="served model name")
    parser.add_argument("--platform", choices=["cuda", "xdev"], default="cuda",
                        help="kernel names used in profiler traces")
    parser.add_argument("--answers", type=Path, help="gsm8k-format JSONL answer key")
    parser.add_argument("--wrong-rate", type=float, default=0.0,
                        help="fraction of known questions answered wrongly (per question, seeded)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--latency-ms", type=float, default=0.0,
                        help="delay before the first token of every generation")
    parser.add_argument("--error-rate", type=float, default=0.0,
                        help="fraction of generation requests answered with HTTP 500")
    parser.add_argument("--fallback-lines", type=int, default=0,
                        help="write N fallback / Triton compile-error lines to the log and run "
                             f"{FALLBACK_TRACE_OP} on the host in traces")
    parser.add_argument("--startup-delay-s", type=float, default=0.0,
                        help="wait before binding the port, like an engine loading weights")
    parser.add_argument("--never-healthy", action="store_true", help="/health always answers 503")
    parser.add_argument("--exit-at-start", type=int, metavar="CODE",
                        help="log a startup traceback and exit with CODE before serving")
    parser.add_argument("--nondeterministic", action="store_true",
                        help="generic (non answer-key) replies differ between identical requests, "
                             "even at temperature 0")
    parser.add_argument("--ignore-sigterm", action="store_true",
                        help="keep running on SIGTERM (only SIGKILL stops it)")
    parser.add_argument("--exit-after-requests", type=int, metavar="N",
                        help="die (exit code 3) right after answering the N-th generation request")
    parser.add_argument("--exit-delay-s", type=float, default=0.0,
                        help="with --exit-after-requests: close the port at once and exit this much later")
    parser.add_argument("--trace-json", action="store_true",
                        help="write plain .trace.json instead of SGLang's .trace.json.gz")
    parser.add_argument("--engine", choices=["sglang", "vllm"], default="sglang",
                        help="whose profiler surface to speak: vllm serves /start_profile only with "
                             "--profiler-config (or VLLM_TORCH_PROFILER_DIR) and names traces per rank")
    parser.add_argument("--profiler-config", type=json.loads, metavar="JSON",
                        help='vLLM >= 0.13: {"profiler": "torch", "torch_profiler_dir": DIR}')
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """`python -m harness.testing.loopback --host H --port P [fault flags]`: serve until SIGTERM;
    returns the exit code."""
    args = _parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="[%(asctime)s] %(levelname)s %(message)s")
    logger.info("server_args=%s", json.dumps(vars(args), default=str))
    faults = Faults(never_healthy=args.never_healthy, exit_at_start=args.exit_at_start,
                    wrong_rate=args.wrong_rate, seed=args.seed, latency_ms=args.latency_ms,
                    fallback_lines=args.fallback_lines, error_rate=args.error_rate,
                    nondeterministic=args.nondeterministic, ignore_sigterm=args.ignore_sigterm,
                    exit_after_requests=args.exit_after_requests, exit_delay_s=args.exit_delay_s)
    if faults.exit_at_start is not None:
        logger.error("Scheduler hit an exception: Traceback (most recent call last):\n"
                     "  File \"loopback/model_runner.py\", line 1, in init_device\n"
                     "RuntimeError: no %s device found (injected --exit-at-start)", args.platform)
        return faults.exit_at_start
    if args.startup_delay_s:
        logger.info("Loading weights (%.1fs)", args.startup_delay_s)
        time.sleep(args.startup_delay_s)  # like weight loading: the port is not bound yet
    key = AnswerKey.load(args.answers) if args.answers else None
    trace_dir = ((args.profiler_config or {}).get("torch_profiler_dir") or os.environ.get("VLLM_TORCH_PROFILER_DIR")
                 if args.engine == "vllm" else None)
    engine = Engine(model=args.model, faults=faults, key=key, platform=args.platform,
                    gzip_traces=not args.trace_json, vllm=args.engine == "vllm",
                    vllm_trace_dir=Path(trace_dir) if trace_dir else None)
    handler = type("BoundHandler", (Handler,), {
        "engine": engine,
        "server_args": {"model_path": args.model, "served_model_name": args.model,
                        "host": args.host, "port": args.port, "tp_size": 1, "dp_size": 1,
                        "device": args.platform, "version": "loopback", "context_length": 32768,
                        "answers": str(args.answers) if args.answers else None,
                        "faults": vars(faults)}})
    server = ThreadingHTTPServer((args.host, args.port), handler)
    server.daemon_threads = True
    for index in range(faults.fallback_lines):
        logger.warning(FALLBACK_LOG_LINES[index % len(FALLBACK_LOG_LINES)])

    def on_sigterm(signum: int, _frame: Any) -> None:
        if faults.ignore_sigterm:
            logger.warning("Received SIGTERM; ignoring it (--ignore-sigterm)")
            return
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, on_sigterm)
    logger.info("The server is fired up and ready to roll!")
    try:
        server.serve_forever(poll_interval=0.1)
    except (SystemExit, KeyboardInterrupt):
        logger.info("Shutting down")
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
