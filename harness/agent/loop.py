"""The agent loop: ask the model, run the tool calls it makes, hand back the results, until it
calls `finish` or a budget runs out. Non-streaming `chat.completions` with tool calling through
the `openai` SDK: the form every OpenAI-compatible server (SGLang, vLLM, hosted) supports. The
SDK retries 429 / 5xx / dropped connections with backoff (`max_retries`); what still fails ends
the loop with one line, never an exception. The transcript is the log: one JSON line per
request (its messages and tools), response (with `usage`), tool call and end, each timed."""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import openai

from harness.agent.tools import TOOLS, Toolbox
from harness.record.models import AgentSettings

NUDGE = "Continue with the tools; call finish(summary) when the task is done."


@dataclass
class Outcome:
    """How a loop ended: `finished` (the model called finish), `not_finished` (a budget ran out
    or the endpoint failed after some work; `reason` says which) or `not_run` (the first request
    already failed)."""

    status: Literal["finished", "not_finished", "not_run"]
    reason: str | None = None
    summary: str | None = None
    turns: int = 0
    tokens: int = 0
    tools: dict[str, int] = field(default_factory=dict)


def run_agent(settings: AgentSettings, system: str, task: str, toolbox: Toolbox, transcript: Path) -> Outcome:
    """Run the loop on `task` with `toolbox`, writing the transcript (JSONL) to `transcript`."""
    client = openai.OpenAI(base_url=settings.base_url, api_key=os.environ.get(settings.api_key_env) or "EMPTY",
                           max_retries=settings.max_retries)
    messages: list[dict[str, Any]] = [{"role": "system", "content": system}, {"role": "user", "content": task}]
    started, tokens, used = time.monotonic(), 0, Counter()
    transcript.parent.mkdir(parents=True, exist_ok=True)
    with transcript.open("w", encoding="utf-8") as log:

        def end(status, reason=None, summary=None, turns=0) -> Outcome:
            outcome = Outcome(status, reason, summary, turns, tokens, dict(sorted(used.items())))
            _line(log, "end", status=status, reason=reason, summary=summary, turns=turns, tokens=tokens,
                  tools=outcome.tools, refusals=toolbox.refusals, elapsed_s=time.monotonic() - started)
            return outcome

        for turn in range(1, settings.max_turns + 1):
            left = settings.max_wall_s - (time.monotonic() - started)
            if left <= 0:
                return end("not_finished", f"wall-clock budget ({settings.max_wall_s:g} s) ran out", turns=turn - 1)
            _line(log, "request", turn=turn, model=settings.model, messages=messages, tools=TOOLS)
            sent = time.monotonic()
            try:
                response = client.chat.completions.create(model=settings.model, messages=messages, tools=TOOLS,
                                                          timeout=min(settings.request_timeout_s, left))
            except openai.APIError as exc:
                _line(log, "error", turn=turn, error=type(exc).__name__, message=str(exc),
                      elapsed_s=time.monotonic() - sent)
                return end("not_run" if turn == 1 else "not_finished", endpoint_failure(exc, settings), turns=turn - 1)
            tokens += response.usage.total_tokens if response.usage else 0
            _line(log, "response", turn=turn, response=response.model_dump(mode="json"), elapsed_s=time.monotonic() - sent)
            message = response.choices[0].message
            calls = message.tool_calls or []
            messages.append({"role": "assistant", "content": message.content or "", **({"tool_calls": [
                {"id": c.id, "type": "function", "function": {"name": c.function.name, "arguments": c.function.arguments}}
                for c in calls]} if calls else {})})
            if not calls:
                messages.append({"role": "user", "content": NUDGE})
            for call in calls:
                used[call.function.name] += 1
                ran = time.monotonic()
                result = toolbox.call(call.function.name, call.function.arguments)
                _line(log, "tool", turn=turn, id=call.id, name=call.function.name, arguments=call.function.arguments,
                      result=result.text, refused=result.refused, elapsed_s=time.monotonic() - ran)
                messages.append({"role": "tool", "tool_call_id": call.id, "content": result.text})
                if result.finished:
                    return end("finished", summary=json.loads(call.function.arguments).get("summary"), turns=turn)
            if tokens >= settings.max_tokens:
                return end("not_finished", f"token budget ({settings.max_tokens} tokens) ran out: {tokens} used",
                           turns=turn)
        return end("not_finished", f"turn budget ({settings.max_turns} turns) ran out", turns=settings.max_turns)


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


def _line(log, kind: str, **fields: Any) -> None:
    log.write(json.dumps({"type": kind, "at": time.time(), **fields}, default=str) + "\n")
    log.flush()
