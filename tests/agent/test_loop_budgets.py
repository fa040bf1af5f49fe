"""The agent loop's budgets against endpoints that misbehave (issue 17, item 7): a request ends by
its deadline whatever the server does (never answers, trickles its headers or its body, asks for
long retries), the wall-clock budget bounds tool calls as well as requests, tokens are counted
when the endpoint reports no `usage`, the transcript logs each message once and cuts huge ones,
and malformed tool calls or a `finish` with a non-text summary never raise."""

from __future__ import annotations

import json
import socketserver
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from harness.agent.loop import run_agent
from harness.agent.sandbox import Sandbox
from harness.agent.tools import Toolbox
from harness.record.models import AgentSettings, Draft
from harness.testing.llm import ScriptedLLM, completion

GAP_S = 0.5  # a trickling server sends one byte this often: well inside any per-read timeout
TRICKLE_FOR_S = 40  # and stops after this long, so a loop without a deadline still ends (late)


class RawEndpoint:
    """An HTTP endpoint on 127.0.0.1 that answers its n-th request by `replies[n]` (the last one
    repeats): a dict (or bytes) is a response body sent at once (200); "silent" reads the request and never
    answers; "trickle_headers" / "trickle_body" send the headers / the body one byte every GAP_S;
    ("429", seconds) answers HTTP 429 with that `retry-after`. `requests` holds the bodies seen."""

    def __init__(self, replies: list[Any]):
        self.replies = replies
        self.requests: list[dict[str, Any]] = []
        self.stop = threading.Event()
        owner = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self) -> None:
                length = 0
                while (line := self.rfile.readline()) not in (b"\r\n", b""):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":")[1])
                owner.requests.append(json.loads(self.rfile.read(length) or b"{}"))
                reply = owner.replies[min(len(owner.requests), len(owner.replies)) - 1]
                try:
                    owner.answer(self.wfile, reply)
                except OSError:  # the client hung up: what a deadline does
                    pass

        socketserver.ThreadingTCPServer.daemon_threads = True
        self.server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self.server.block_on_close = False

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def answer(self, out, reply: Any) -> None:
        if isinstance(reply, (dict, bytes)):
            body = reply if isinstance(reply, bytes) else json.dumps(reply).encode()
            out.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
        elif isinstance(reply, tuple):
            body = b'{"error": {"message": "slow down"}}'
            out.write(b"HTTP/1.1 429 Too Many Requests\r\nretry-after: %d\r\nContent-Type: application/json\r\n"
                      b"Content-Length: %d\r\n\r\n" % (reply[1], len(body)) + body)
        elif reply == "silent":
            self.stop.wait(TRICKLE_FOR_S)
        else:
            body = json.dumps(completion({}, {"content": "late"}, 1)).encode()
            head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n" % len(body)
            data = (head + b"X-Pad: " + b"a" * 200 + b"\r\n\r\n" + body) if reply == "trickle_headers" else body
            if reply == "trickle_body":
                out.write(head + b"\r\n")
            ends = time.monotonic() + TRICKLE_FOR_S
            for byte in data:
                if self.stop.is_set() or time.monotonic() > ends:
                    return
                out.write(bytes([byte]))
                time.sleep(GAP_S)

    def __enter__(self) -> RawEndpoint:  # noqa: PYI034 — Python 3.10 has no typing.Self
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.server.shutdown()
        self.server.server_close()


def settings(url: str, **budgets: Any) -> AgentSettings:
    values = {"max_retries": 2, "request_timeout_s": 10, **budgets}
    return AgentSettings(base_url=url, model="scripted", source="test", **values)


def toolbox(tmp_path: Path, run_check=lambda: '{"findings": []}') -> Toolbox:
    plugin = tmp_path / "plugin"
    (plugin / "pkg").mkdir(parents=True)
    (plugin / "pkg" / "platform.py").write_text("class P:\n    pass\n")
    sandbox = Sandbox.create(plugin, tmp_path / "sb", "r", "interface", 1)
    return Toolbox(sandbox, lambda target, version: f"source of {target}", run_check)


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def no_usage(step: dict[str, Any], turn: int) -> dict[str, Any]:
    """A chat.completion for a scripted step, from an endpoint that reports no usage."""
    return {**completion({}, step, turn), "usage": None}


@pytest.mark.timeout(60)
@pytest.mark.parametrize("behaviour", ["silent", "trickle_headers", "trickle_body"])
def test_a_request_ends_by_its_deadline_whatever_the_server_does(tmp_path, behaviour):
    with RawEndpoint([behaviour]) as endpoint:
        began = time.monotonic()
        outcome = run_agent(settings(endpoint.base_url, request_timeout_s=2), "s", "t", toolbox(tmp_path),
                            tmp_path / "t.jsonl")
        took = time.monotonic() - began
        time.sleep(1.5)  # longer than the SDK's first retry wait: the abandoned call must not retry
    assert len(endpoint.requests) == 1
    assert took < 2 + 2, f"the loop took {took:.1f} s against a 2 s request deadline"
    assert outcome.status == "not_run" and outcome.turns == 0
    assert outcome.reason == f"the LLM endpoint {endpoint.base_url} did not answer within 2 s"
    assert [line["type"] for line in lines(tmp_path / "t.jsonl")] == ["request", "error", "end"]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("behaviour", ["trickle_body", ("429", 30)])
def test_the_wall_budget_bounds_a_request_and_its_retries(tmp_path, behaviour):
    script = [no_usage({"tool_calls": [{"name": "read_file", "arguments": {"path": "pkg/platform.py"}}]}, 1),
              behaviour]
    with RawEndpoint(script) as endpoint:
        began = time.monotonic()
        outcome = run_agent(settings(endpoint.base_url, request_timeout_s=30, max_wall_s=3, max_retries=3), "s", "t",
                            toolbox(tmp_path), tmp_path / "t.jsonl")
        took = time.monotonic() - began
    assert took < 3 + 2, f"the loop took {took:.1f} s against a 3 s wall-clock budget"
    assert outcome.status == "not_finished" and outcome.turns == 1 and outcome.tools == {"read_file": 1}
    assert outcome.reason == f"wall-clock budget (3 s) ran out waiting for the LLM endpoint {endpoint.base_url}"


@pytest.mark.timeout(60)
def test_the_wall_budget_is_checked_before_each_tool_call(tmp_path):
    def slow_check() -> str:
        time.sleep(0.6)
        return '{"findings": []}'

    script = [{"tool_calls": [{"name": "run_check", "arguments": {}}] * 4}]
    with ScriptedLLM(script) as llm:
        began = time.monotonic()
        outcome = run_agent(settings(llm.base_url, max_wall_s=1), "s", "t", toolbox(tmp_path, slow_check),
                            tmp_path / "t.jsonl")
        took = time.monotonic() - began
    assert outcome.status == "not_finished" and outcome.reason == "wall-clock budget (1 s) ran out"
    assert outcome.tools == {"run_check": 2} and len(llm.requests) == 1 and took < 1 + 1


@pytest.mark.timeout(60)
def test_tokens_are_counted_locally_when_the_endpoint_reports_no_usage(tmp_path):
    read = {"content": "x" * 400_000, "tool_calls": [{"name": "read_file", "arguments": {"path": "pkg/platform.py"}}]}
    with RawEndpoint([no_usage(read, n) for n in range(1, 9)]) as endpoint:
        outcome = run_agent(settings(endpoint.base_url, max_turns=8), "s", "t", toolbox(tmp_path), tmp_path / "t.jsonl")
    assert outcome.status == "not_finished" and outcome.turns == 2 and len(endpoint.requests) == 2
    assert outcome.tokens > 200_000 and outcome.tokens_estimated
    assert outcome.reason == (f"token budget (200000 tokens) ran out: {outcome.tokens} used (estimated at 4 characters a "
                              "token where the endpoint reported less usage or none)")
    end = lines(tmp_path / "t.jsonl")[-1]
    assert end["tokens"] == outcome.tokens and end["tokens_estimated"] is True


@pytest.mark.timeout(60)
def test_the_transcript_logs_each_message_once_and_replays_the_conversation(tmp_path):
    read = {"tool_calls": [{"name": "read_file", "arguments": {"path": "pkg/platform.py"}}]}
    with ScriptedLLM([read] * 5 + [{"content": "thinking"}]) as llm:
        outcome = run_agent(settings(llm.base_url), "SYSTEM-PROMPT-MARK", "TASK-MARK", toolbox(tmp_path),
                            tmp_path / "t.jsonl")
    assert outcome.status == "finished" and outcome.turns == 7
    transcript = lines(tmp_path / "t.jsonl")
    requests = [line for line in transcript if line["type"] == "request"]
    replayed = [message for line in requests for message in line["messages"]]
    assert replayed == llm.requests[-1]["messages"]  # the last request, exactly as sent
    assert [line["sent"] for line in requests] == [len(body["messages"]) for body in llm.requests]
    text = (tmp_path / "t.jsonl").read_text()
    assert text.count("SYSTEM-PROMPT-MARK") == 1 and text.count("TASK-MARK") == 1
    assert "tools" in requests[0] and all("tools" not in line for line in requests[1:])


@pytest.mark.timeout(120)
def test_a_huge_response_is_cut_in_the_transcript_and_spends_the_token_budget(tmp_path):
    huge = {"content": "y" * 1_000_000, "tool_calls": [{"name": "write_file", "arguments": {
        "path": "pkg/big.txt", "content": "z" * 1_000_000}}]}
    with RawEndpoint([no_usage(huge, n) for n in range(1, 5)]) as endpoint:
        outcome = run_agent(settings(endpoint.base_url, max_turns=4), "s", "t", toolbox(tmp_path), tmp_path / "t.jsonl")
    assert outcome.status == "not_finished" and outcome.turns == 1 and outcome.reason.startswith("token budget")
    assert (tmp_path / "plugin").exists() and len(endpoint.requests) == 1
    size = (tmp_path / "t.jsonl").stat().st_size
    assert size < 400_000, f"the transcript holds {size} bytes for one 2 MB turn"
    response = next(line for line in lines(tmp_path / "t.jsonl") if line["type"] == "response")
    content = response["response"]["choices"][0]["message"]["content"]
    assert content.startswith("yyy") and content.endswith("... cut in the transcript: 950000 more characters")


@pytest.mark.timeout(60)
def test_malformed_tool_calls_and_a_numeric_finish_summary_never_raise(tmp_path):
    def raw(turn: int, calls: list[dict[str, Any]]) -> dict[str, Any]:
        body = no_usage({"content": None}, turn)
        body["choices"][0]["message"]["tool_calls"] = calls
        return body

    script = [
        raw(1, [{"type": "function"},  # no id, no function
                {"id": "a", "type": "function", "function": {"name": "read_file"}},  # no arguments
                {"id": "b", "type": "function", "function": {"arguments": "{}"}},  # no name
                {"id": "c", "type": "function", "function": {"name": "read_file",  # arguments as an object
                                                               "arguments": {"path": "pkg/platform.py"}}}]),
        raw(2, [{"id": "d", "type": "function", "function": {"name": "finish", "arguments": "{not json"}}]),
        raw(3, [{"id": "e", "type": "function", "function": {"name": "finish", "arguments": '{"summary": 12345}'}}]),
    ]
    with RawEndpoint(script) as endpoint:
        outcome = run_agent(settings(endpoint.base_url), "s", "t", toolbox(tmp_path), tmp_path / "t.jsonl")
    assert outcome.status == "finished" and outcome.summary == "12345" and outcome.turns == 3
    assert Draft(status="drafted", summary=outcome.summary).summary == "12345"
    results = [line["result"] for line in lines(tmp_path / "t.jsonl") if line["type"] == "tool"]
    assert results[0].startswith("error: the tool call names no function")
    assert results[1].startswith("error: bad arguments for read_file")
    assert results[2].startswith("error: the tool call names no function")
    assert "class P:" in results[3] and results[4].startswith("error: arguments are not valid JSON")
    echoed = endpoint.requests[1]["messages"]
    ids = [call["id"] for call in echoed[2]["tool_calls"]]
    assert len(set(ids)) == 4 and [m["tool_call_id"] for m in echoed[3:7]] == ids


@pytest.mark.timeout(60)
@pytest.mark.parametrize("body", [{**no_usage({"content": "x"}, 1), "choices": []}, b"not json", b"[1, 2]",
                                  {"choices": [{"message": "hi"}]}], ids=["no-choices", "text", "list", "text-message"])
def test_a_response_without_a_message_is_one_line(tmp_path, body):
    with RawEndpoint([body]) as endpoint:
        outcome = run_agent(settings(endpoint.base_url), "s", "t", toolbox(tmp_path), tmp_path / "t.jsonl")
    assert outcome.status == "not_run"
    assert outcome.reason.startswith(f"the LLM endpoint {endpoint.base_url} answered without a chat completion message")
    assert "\n" not in outcome.reason
