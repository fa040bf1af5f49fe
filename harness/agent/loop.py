"""The agent loop: ask the model, run the tool calls it makes, hand back the results, until it
calls `finish` or a budget runs out. Non-streaming `chat.completions` with tool calling through
the `openai` SDK: the form every OpenAI-compatible server (SGLang, vLLM, hosted) supports. The
SDK retries 429 / 5xx / dropped connections with backoff (`max_retries`); what still fails ends
the loop with one line, never an exception.

Budgets, all checked by the loop itself:
- time: one request, the SDK's retries and their waits included, ends by `request_timeout_s`
  or by what is left of `max_wall_s`, whichever comes first, whatever the server does (httpx's
  timeouts bound each read, so a server trickling a byte a second would hold a plain call
  forever). `max_wall_s` is also checked before every request and every tool call but `finish`;
  a tool call that has started runs to its end (the tools bound their own work).
- tokens: per turn the larger of the endpoint's `usage.total_tokens` and a local estimate,
  4 characters a token of the messages sent and the reply (an endpoint may report no usage).
  When the estimate counted, the end line and the token-budget reason say so. A huge reply
  therefore spends the token budget rather than growing the transcript turn after turn.
- turns: `max_turns` requests.

The transcript is the log, one JSON object a line, each with `type` and `at` (epoch seconds):
- `request`: `turn`, `model`, `sent` (how many messages the request holds) and `messages`, only
  those new since the previous request (the first holds the system prompt and the task), so
  concatenating the `messages` of the request lines 1..n gives request n as sent; the first line
  also holds `tools` (every request sends the same).
- `response`: `turn`, `response` (the chat.completion as received), `tokens` (`reported`,
  `estimated`, `counted`), `elapsed_s`.
- `tool`: `turn`, `id`, `name`, `arguments`, `result`, `refused`, `elapsed_s`.
- `error`: `turn`, `error`, `message`, `elapsed_s` (the request failed; the loop ends).
- `end`: `status`, `reason`, `summary`, `turns`, `tokens`, `tokens_estimated`, `tools`,
  `refusals`, `elapsed_s`.
A text longer than MAX_LOGGED_CHARS is cut in the transcript with a note saying how much; what
the model is sent is never cut here."""

from __future__ import annotations

import json
import os
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import openai
from openai.types.chat import ChatCompletion, ChatCompletionMessage
from pydantic import BaseModel

from harness.agent.tools import TOOLS, Toolbox, ToolResult
from harness.record.models import AgentSettings

NUDGE = "Continue with the tools; call finish(summary) when the task is done."
CHARS_PER_TOKEN = 4  # the estimate when the endpoint reports no usage: rough for English and code alike
MAX_LOGGED_CHARS = 50_000  # one text in the transcript; a 2 MB reply must not make a 2 MB line per turn


@dataclass
class Outcome:
    """How a loop ended: `finished` (the model called finish), `not_finished` (a budget ran out
    or the endpoint failed after some work; `reason` says which) or `not_run` (the first request
    already failed). `tokens_estimated`: some turn was counted by the local estimate."""

    status: Literal["finished", "not_finished", "not_run"]
    reason: str | None = None
    summary: str | None = None
    turns: int = 0
    tokens: int = 0
    tools: dict[str, int] = field(default_factory=dict)
    tokens_estimated: bool = False


@dataclass
class _Call:
    """One tool call as the loop runs it: fields the model left out are filled (an id) or
    reported to the model (no function name)."""

    id: str
    name: str
    arguments: str


class _DeadlinePassed(Exception):
    """The request was abandoned at its deadline."""


def run_agent(settings: AgentSettings, system: str, task: str, toolbox: Toolbox, transcript: Path) -> Outcome:
    """Run the loop on `task` with `toolbox`, writing the transcript (JSONL, format above) to
    `transcript`. Never raises for what the endpoint or the model does; OSError if the
    transcript cannot be written."""
    client = openai.OpenAI(base_url=settings.base_url, api_key=os.environ.get(settings.api_key_env) or "EMPTY",
                           max_retries=settings.max_retries)
    where = settings.base_url or "the default OpenAI endpoint"
    messages: list[dict[str, Any]] = [{"role": "system", "content": system}, {"role": "user", "content": task}]
    started, tokens, estimated, used, logged = time.monotonic(), 0, False, Counter(), 0
    transcript.parent.mkdir(parents=True, exist_ok=True)
    with transcript.open("w", encoding="utf-8") as log:

        def end(status, reason=None, summary=None, turns=0) -> Outcome:
            outcome = Outcome(status, reason, summary, turns, tokens, dict(sorted(used.items())), estimated)
            _line(log, "end", status=status, reason=reason, summary=summary, turns=turns, tokens=tokens,
                  tokens_estimated=estimated, tools=outcome.tools, refusals=toolbox.refusals,
                  elapsed_s=time.monotonic() - started)
            client.close()
            return outcome

        def wall_left() -> float:
            return settings.max_wall_s - (time.monotonic() - started)

        wall_out = f"wall-clock budget ({settings.max_wall_s:g} s) ran out"
        for turn in range(1, settings.max_turns + 1):
            left = wall_left()
            if left <= 0:
                return end("not_finished", wall_out, turns=turn - 1)
            _line(log, "request", turn=turn, model=settings.model, sent=len(messages), messages=messages[logged:],
                  **({"tools": TOOLS} if turn == 1 else {}))
            logged = len(messages)
            sent = time.monotonic()
            deadline = min(settings.request_timeout_s, left)
            failed = "not_run" if turn == 1 else "not_finished"
            try:
                response = _ask(client, deadline, model=settings.model, messages=messages, tools=TOOLS,
                                timeout=deadline)
            except (openai.APIError, _DeadlinePassed, ValueError) as exc:  # ValueError: a body the SDK cannot parse
                _line(log, "error", turn=turn, error=type(exc).__name__, message=str(exc),
                      elapsed_s=time.monotonic() - sent)
                if isinstance(exc, (_DeadlinePassed, openai.APITimeoutError)) and deadline < settings.request_timeout_s:
                    return end(failed, f"{wall_out} waiting for the LLM endpoint {where}", turns=turn - 1)
                if isinstance(exc, _DeadlinePassed):
                    return end(failed, f"the LLM endpoint {where} did not answer within {deadline:g} s", turns=turn - 1)
                if not isinstance(exc, openai.APIError):
                    return end(failed, f"the LLM endpoint {where} answered without a chat completion message "
                                       f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})",
                               turns=turn - 1)
                return end(failed, endpoint_failure(exc, settings), turns=turn - 1)
            choices = getattr(response, "choices", None)
            message = getattr(choices[0], "message", None) if isinstance(choices, list) and choices else None
            if not isinstance(message, ChatCompletionMessage):  # the SDK does not validate what it parses
                _line(log, "response", turn=turn, response=_dump(response), elapsed_s=time.monotonic() - sent)
                return end(failed, f"the LLM endpoint {where} answered without a chat completion message",
                           turns=turn - 1)
            raw_calls = message.tool_calls if isinstance(message.tool_calls, list) else []
            calls = [_call(raw, f"call_{turn}_{i}") for i, raw in enumerate(raw_calls)]
            content = message.content if isinstance(message.content, str) else json.dumps(message.content, default=str)
            assistant = {"role": "assistant", "content": content if message.content is not None else "",
                         **({"tool_calls": [{"id": c.id, "type": "function", "function": {
                             "name": c.name, "arguments": c.arguments}} for c in calls]} if calls else {})}
            reported = getattr(getattr(response, "usage", None), "total_tokens", None)
            reported = reported if isinstance(reported, int) else 0
            guess = (_chars(messages) + _chars([assistant])) // CHARS_PER_TOKEN
            tokens += max(reported, guess)
            estimated = estimated or guess > reported
            _line(log, "response", turn=turn, response=_dump(response),
                  tokens={"reported": reported, "estimated": guess, "counted": max(reported, guess)},
                  elapsed_s=time.monotonic() - sent)
            messages.append(assistant)
            if not calls:
                messages.append({"role": "user", "content": NUDGE})
            for call in calls:
                if call.name != "finish" and wall_left() <= 0:  # a finish costs nothing: it is honoured
                    return end("not_finished", wall_out, turns=turn)
                used[call.name] += 1
                ran = time.monotonic()
                result = toolbox.call(call.name, call.arguments) if call.name else _no_name()
                _line(log, "tool", turn=turn, id=call.id, name=call.name, arguments=call.arguments,
                      result=result.text, refused=result.refused, elapsed_s=time.monotonic() - ran)
                messages.append({"role": "tool", "tool_call_id": call.id, "content": result.text})
                if result.finished:
                    summary = json.loads(call.arguments or "{}").get("summary")
                    return end("finished", summary=None if summary is None else str(summary), turns=turn)
            if tokens >= settings.max_tokens:
                how = (f" (estimated at {CHARS_PER_TOKEN} characters a token where the endpoint reported less usage"
                       " or none)" if estimated else "")
                return end("not_finished", f"token budget ({settings.max_tokens} tokens) ran out: {tokens} used{how}",
                           turns=turn)
        return end("not_finished", f"turn budget ({settings.max_turns} turns) ran out", turns=settings.max_turns)


def _ask(client: openai.OpenAI, deadline_s: float, **request: Any) -> ChatCompletion:
    """`client.chat.completions.create(**request)`, the SDK's retries included, ended after
    `deadline_s` whatever the server does: the call runs in a daemon thread; past the deadline
    the client is closed, which closes its sockets so the abandoned call fails at its next read
    and cannot retry, and _DeadlinePassed is raised. Raises what the call raises otherwise."""
    result: dict[str, Any] = {}

    def call() -> None:
        try:
            result["response"] = client.chat.completions.create(**request)
        except BaseException as exc:  # noqa: BLE001 — handed to the caller's thread
            result["error"] = exc

    worker = threading.Thread(target=call, name="harness-llm-request", daemon=True)
    worker.start()
    worker.join(deadline_s)
    if worker.is_alive():
        client.close()
        raise _DeadlinePassed(f"no complete answer within {deadline_s:g} s; the request was abandoned")
    if "error" in result:
        raise result["error"]
    return result["response"]


def _call(raw: Any, fallback_id: str) -> _Call:
    """A tool call as the SDK parsed it (fields may be missing or of the wrong type: the SDK does
    not validate responses): an id is made up when there is none, arguments that are a JSON
    object rather than its text are serialised, a missing name becomes "" (the model is told)."""
    function = getattr(raw, "function", None)
    name = getattr(function, "name", None)
    arguments = getattr(function, "arguments", None)
    if arguments is not None and not isinstance(arguments, str):
        arguments = json.dumps(arguments, default=str)
    call_id = getattr(raw, "id", None)
    return _Call(call_id if isinstance(call_id, str) and call_id else fallback_id,
                 name if isinstance(name, str) else "", arguments or "")


def _no_name() -> ToolResult:
    return ToolResult("error: the tool call names no function; the tools are "
                      + ", ".join(t["function"]["name"] for t in TOOLS))


def _chars(messages: list[dict[str, Any]]) -> int:
    """Characters of the text in `messages` (as sent): the contents and the tool calls' names
    and arguments."""
    total = 0
    for message in messages:
        total += len(message.get("content") or "")
        for call in message.get("tool_calls", []):
            total += len(call["function"]["name"]) + len(call["function"]["arguments"])
    return total


def _dump(response: Any) -> Any:
    """The response as JSON data for the transcript, whatever the SDK made of the body."""
    return response.model_dump(mode="json", warnings=False) if isinstance(response, BaseModel) else response


def endpoint_failure(exc: openai.APIError, settings: AgentSettings) -> str:
    """One line on why the endpoint did not answer (after the SDK's retries)."""
    where = settings.base_url or "the default OpenAI endpoint"
    if isinstance(exc, openai.APITimeoutError):
        return f"the LLM endpoint {where} did not answer within {settings.request_timeout_s:g} s"
    if isinstance(exc, openai.APIConnectionError):
        return f"cannot reach the LLM endpoint {where} ({exc.__cause__ or exc})"
    if isinstance(exc, (openai.AuthenticationError, openai.PermissionDeniedError)):
        return f"the LLM endpoint {where} refused the API key (HTTP {exc.status_code}; the key is read from {settings.api_key_env})"
    if isinstance(exc, openai.APIStatusError):
        return f"the LLM endpoint {where} answered HTTP {exc.status_code} for model {settings.model}: {exc.message}"
    return f"the LLM endpoint {where} failed: {exc}"


def _cut(value: Any) -> Any:
    """`value` with every string longer than MAX_LOGGED_CHARS cut, noting how much (for the log)."""
    if isinstance(value, str) and len(value) > MAX_LOGGED_CHARS:
        return value[:MAX_LOGGED_CHARS] + f"... cut in the transcript: {len(value) - MAX_LOGGED_CHARS} more characters"
    if isinstance(value, dict):
        return {k: _cut(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_cut(v) for v in value]
    return value


def _line(log, kind: str, **fields: Any) -> None:
    log.write(json.dumps({"type": kind, "at": time.time(), **_cut(fields)}, default=str) + "\n")
    log.flush()
