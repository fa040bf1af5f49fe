"""A scripted OpenAI-compatible chat endpoint on loopback: it stands in for the remote LLM the
porting agent talks to, and speaks the real protocol (`POST /v1/chat/completions`, non-streaming,
tool calls, `usage`), so the real `openai` client is what the tests exercise.

A script is a list of replies, one per request, in order:

    {"tool_calls": [{"name": "read_file", "arguments": {"path": "pkg/platform.py"}}]}
    {"tool_calls": [{"name": "write_file", "raw_arguments": "{not json"}]}  # a malformed call
    {"content": "plain text, no tool call"}
    {"status": 429}                                                         # an HTTP error reply

When the script runs out, every further request is answered with a `finish` call, so a loop
never hangs on a short script. Every request body is appended to `requests` (and to
`--record FILE` as JSON lines when run as a process), so a test can read what the agent sent.

    python -m harness.testing.llm --script script.json --port 0 --record requests.jsonl

Only the standard library is used.
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


class ScriptedLLM:
    """The scripted endpoint, served from a thread; use as a context manager.
    `base_url` is what OPENAI_BASE_URL / --llm-base-url should be set to."""

    def __init__(self, script: list[dict[str, Any]], record: Path | None = None, host: str = "127.0.0.1",
                 port: int = 0):
        self.script = list(script)
        self.record = record
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer((host, port), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> ScriptedLLM:  # noqa: PYI034 — Python 3.10 has no typing.Self
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def serve_forever(self) -> None:
        self._server.serve_forever()

    def _next(self, body: dict[str, Any]) -> tuple[dict[str, Any], int]:
        """Record the request; the next scripted reply as (chat.completion JSON, HTTP status)."""
        with self._lock:
            self.requests.append(body)
            if self.record:
                with self.record.open("a", encoding="utf-8") as fh:
                    fh.write(json.dumps(body) + "\n")
            step: dict[str, Any] = self.script.pop(0) if self.script else {"tool_calls": [
                {"name": "finish", "arguments": {"summary": "script exhausted"}}]}
            turn = len(self.requests)
        if "status" in step:
            return {"error": {"message": step.get("message", "scripted error"), "type": "scripted",
                              "code": step["status"]}}, int(step["status"])
        return completion(body, step, turn), 200

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # quiet in tests
                pass

            def do_GET(self) -> None:
                if self.path.rstrip("/") == "/v1/models":
                    self._send(200, {"object": "list", "data": [{"id": "scripted", "object": "model"}]})
                else:
                    self._send(404, {"error": {"message": "not found"}})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except ValueError:
                    self._send(400, {"error": {"message": "body is not JSON"}})
                    return
                if self.path.rstrip("/") != "/v1/chat/completions":
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                    return
                reply, status = owner._next(body)
                self._send(status, reply, retry_after=status == 429)

            def _send(self, status: int, payload: dict[str, Any], retry_after: bool = False) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                if retry_after:
                    self.send_header("retry-after-ms", "10")  # the openai client honours it: fast retries
                self.end_headers()
                self.wfile.write(data)

        return Handler


def completion(request: dict[str, Any], step: dict[str, Any], turn: int) -> dict[str, Any]:
    """A `chat.completion` object for one scripted step, with `usage` counted roughly (4
    characters a token) from the request and the reply."""
    calls = [{
        "id": f"call_{turn}_{i}",
        "type": "function",
        "function": {"name": call["name"],
                     "arguments": call["raw_arguments"] if "raw_arguments" in call else json.dumps(call.get("arguments", {}))},
    } for i, call in enumerate(step.get("tool_calls", []))]
    message: dict[str, Any] = {"role": "assistant", "content": step.get("content")}
    if calls:
        message["tool_calls"] = calls
    prompt = len(json.dumps(request.get("messages", []))) // 4
    produced = len(json.dumps(message)) // 4
    return {
        "id": f"chatcmpl-scripted-{turn}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request.get("model", "scripted"),
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
        "usage": {"prompt_tokens": prompt, "completion_tokens": produced, "total_tokens": prompt + produced},
    }


def main() -> None:
    """Serve a script file (JSON list) until killed; prints the base URL on stdout."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--script", type=Path, required=True, help="JSON list of replies, one per request (above).")
    parser.add_argument("--host", default="127.0.0.1", help="Address to listen on (loopback by default).")
    parser.add_argument("--port", type=int, default=0, help="Port; 0 picks a free one (the URL is printed).")
    parser.add_argument("--record", type=Path, help="Append every request body to this file, one JSON line each.")
    args = parser.parse_args()
    llm = ScriptedLLM(json.loads(args.script.read_text()), args.record, args.host, args.port)
    print(llm.base_url, flush=True)
    llm.serve_forever()


if __name__ == "__main__":
    main()
