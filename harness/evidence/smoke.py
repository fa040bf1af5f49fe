"""Smoke: the served model emits tokens.

Every runbook prompt goes through the OpenAI-compatible API the runbook names (completions or
chat) at temperature 0; each must come back non-empty, a second identical request must return
the same text (greedy determinism), and a streamed request must deliver the same text as SSE
chunks ending in `data: [DONE]`. Every request and response is written to `smoke.jsonl`; the
smoke checks are read back from those records (`smoke_checks`).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Literal

import httpx
from pydantic import BaseModel, RootModel

from harness.evidence.runbook import SmokeSpec
from harness.evidence.runner import Runner
from harness.evidence.server import RunningServer
from harness.record.checks import Check, CheckStatus


class Exchange(BaseModel):
    """One request and what came back — a line of smoke.jsonl."""

    purpose: Literal["first", "repeat", "stream"]
    prompt: str
    url: str
    request: dict[str, Any]
    status_code: int | None = None
    response: Any = None  # parsed JSON, or the SSE data lines for a stream
    text: str | None = None  # the generated text, when the response had one
    error: str | None = None
    elapsed_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error is None and self.text is not None


def read_exchanges(path: Path) -> list[Exchange]:
    """The exchanges recorded in a smoke.jsonl ([] when it is absent)."""
    if not Path(path).is_file():
        return []
    return [Exchange.model_validate_json(line) for line in Path(path).read_text().splitlines() if line.strip()]


def _request_body(api: str, model: str, prompt: str, max_tokens: int, stream: bool) -> dict[str, Any]:
    body: dict[str, Any] = {"model": model, "max_tokens": max_tokens, "temperature": 0.0}
    if api == "chat":
        body["messages"] = [{"role": "user", "content": prompt}]
    else:
        body["prompt"] = prompt
    if stream:
        body["stream"] = True
    return body


def _text_of(api: str, payload: Any) -> str:
    choice = payload["choices"][0]
    return (choice["message"]["content"] or "") if api == "chat" else choice["text"]


def _delta_of(api: str, chunk: dict[str, Any]) -> str:
    if not chunk.get("choices"):  # a usage-only chunk
        return ""
    choice = chunk["choices"][0]
    if api == "chat":
        return (choice.get("delta") or {}).get("content") or ""
    return choice.get("text") or ""


def _exchange(client: httpx.Client, server: RunningServer, purpose: str, prompt: str,
              spec: SmokeSpec, stream: bool = False) -> Exchange:
    path = "/v1/chat/completions" if server.api == "chat" else "/v1/completions"
    body = _request_body(server.api, server.model, prompt, spec.max_tokens, stream)
    record = Exchange(purpose=purpose, prompt=prompt, url=server.base_url + path, request=body)
    started = time.monotonic()
    try:
        if stream:
            _read_stream(client, server.api, record)
        else:
            response = client.post(record.url, json=body)
            record.status_code = response.status_code
            try:
                record.response = response.json()
            except ValueError:
                record.response = response.text[:2000]
            if response.status_code != 200:
                record.error = f"HTTP {response.status_code}: {_error_message(record.response)}"
            else:
                record.text = _text_of(server.api, record.response)
    except httpx.HTTPError as exc:
        record.error = f"{type(exc).__name__}: {exc}"
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        record.error = f"malformed response: {type(exc).__name__}: {exc}"
    record.elapsed_s = round(time.monotonic() - started, 4)
    return record


def _read_stream(client: httpx.Client, api: str, record: Exchange) -> None:
    events: list[str] = []
    with client.stream("POST", record.url, json=record.request) as response:
        record.status_code = response.status_code
        if response.status_code != 200:
            response.read()
            record.response = response.text[:2000]
            record.error = f"HTTP {response.status_code}: {_error_message(record.response)}"
            return
        for line in response.iter_lines():
            if line.startswith("data:"):
                events.append(line[5:].strip())
    record.response = events
    if not events or events[-1] != "[DONE]":
        record.error = "stream did not end with 'data: [DONE]'"
        return
    record.text = "".join(_delta_of(api, json.loads(event)) for event in events[:-1])


def _error_message(payload: Any) -> str:
    if isinstance(payload, dict):
        return str(payload.get("message") or payload.get("error") or payload)[:200]
    return str(payload)[:200]


def run_smoke(server: RunningServer, spec: SmokeSpec, evidence_dir: Path) -> Path:
    """Send the smoke requests (each prompt, its repeat, one stream) and record every exchange
    in `<evidence_dir>/smoke.jsonl`, which is returned. Transport errors are recorded, not raised."""
    evidence_dir = Path(evidence_dir)
    evidence_dir.mkdir(parents=True, exist_ok=True)
    log = evidence_dir / "smoke.jsonl"
    with httpx.Client(timeout=spec.request_timeout_s, trust_env=False) as client, log.open("w") as out:
        def run(purpose: str, prompt: str, stream: bool = False) -> None:
            record = _exchange(client, server, purpose, prompt, spec, stream)
            out.write(record.model_dump_json() + "\n")
            out.flush()

        for prompt in spec.prompts:
            run("first", prompt)
        if spec.determinism:
            for prompt in spec.prompts:
                run("repeat", prompt)
        if spec.streaming:
            run("stream", spec.prompts[0], stream=True)
    return log


def smoke_checks(records: list[Exchange], spec: SmokeSpec, evidence: list[str]) -> list[Check]:
    """The smoke checks (responses, non_empty, determinism, streaming), from the recorded
    exchanges alone (`run_smoke`'s smoke.jsonl)."""
    first = [r for r in records if r.purpose == "first"]
    answered = [r for r in first if r.ok]
    failures = [r for r in first if not r.ok]
    checks = []

    if failures:
        checks.append(Check(name="smoke.responses", status=CheckStatus.failed, evidence=evidence,
                            reason=f"{len(failures)} of {len(first)} requests failed; first: "
                                   f"{failures[0].error}",
                            metrics={"requests": len(first), "failed": len(failures)}))
    else:
        checks.append(Check(name="smoke.responses", status=CheckStatus.passed, evidence=evidence,
                            metrics={"requests": len(first)}))

    if not answered:
        checks.append(Check(name="smoke.non_empty", status=CheckStatus.not_run, evidence=evidence,
                            reason="no request returned a completion"))
    else:
        empty = [r for r in answered if not r.text.strip()]
        checks.append(Check(
            name="smoke.non_empty", evidence=evidence,
            status=CheckStatus.failed if empty else CheckStatus.passed,
            reason=f"{len(empty)} of {len(answered)} completions are empty (first prompt: "
                   f"{empty[0].prompt!r})" if empty else None,
            metrics={"completions": len(answered), "empty": len(empty)}))

    checks.append(_determinism(records, spec, evidence))
    checks.append(_streaming(records, spec, evidence))
    return checks


def _determinism(records: list[Exchange], spec: SmokeSpec, evidence: list[str]) -> Check:
    name = "smoke.determinism"
    if not spec.determinism:
        return Check(name=name, status=CheckStatus.not_run, reason="disabled in the runbook")
    first = {r.prompt: r for r in records if r.purpose == "first" and r.ok}
    pairs = [(first[r.prompt], r) for r in records if r.purpose == "repeat" and r.ok and r.prompt in first]
    if not pairs:
        return Check(name=name, status=CheckStatus.not_run, evidence=evidence,
                     reason="no prompt was answered twice")
    differing = [a for a, b in pairs if a.text != b.text]
    if differing:
        return Check(name=name, status=CheckStatus.failed, evidence=evidence,
                     reason=f"{len(differing)} of {len(pairs)} prompts gave different text at "
                            f"temperature 0 (first: {differing[0].prompt!r})",
                     metrics={"pairs": len(pairs), "differing": len(differing)})
    return Check(name=name, status=CheckStatus.passed, evidence=evidence, metrics={"pairs": len(pairs)})


def _streaming(records: list[Exchange], spec: SmokeSpec, evidence: list[str]) -> Check:
    name = "smoke.streaming"
    if not spec.streaming:
        return Check(name=name, status=CheckStatus.not_run, reason="disabled in the runbook")
    streamed = next((r for r in records if r.purpose == "stream"), None)
    if streamed is None or not streamed.ok:
        return Check(name=name, status=CheckStatus.failed, evidence=evidence,
                     reason=f"streamed request failed: {streamed.error if streamed else 'not sent'}")
    chunks = len(streamed.response) - 1
    if not streamed.text.strip():
        return Check(name=name, status=CheckStatus.failed, evidence=evidence,
                     reason="stream delivered no text", metrics={"chunks": chunks})
    # Compare with the plain reply only where greedy decoding proved repeatable for this prompt.
    replies = {r.text for r in records if r.prompt == streamed.prompt and r.purpose != "stream" and r.ok}
    if len(replies) == 1 and spec.determinism and streamed.text not in replies:
        return Check(name=name, status=CheckStatus.failed, evidence=evidence,
                     reason="streamed text differs from the non-streamed reply at temperature 0",
                     metrics={"chunks": chunks})
    return Check(name=name, status=CheckStatus.passed, evidence=evidence, metrics={"chunks": chunks})


class SmokeLog(RootModel[list[Exchange]]):
    """`smoke.jsonl`: every exchange in the order sent, one JSON object a line."""


class SmokeRunner(Runner[SmokeSpec, SmokeLog]):
    """The smoke requests against a running server; the `smoke.*` checks."""

    name = "smoke"
    section = "smoke"
    spec = SmokeSpec
    record = SmokeLog
    summary = "smoke.jsonl"

    def run(self, spec: SmokeSpec, evidence_dir: Path, *, server: RunningServer) -> SmokeLog:
        return SmokeLog(read_exchanges(run_smoke(server, spec, evidence_dir)))

    def read(self, evidence_dir: Path) -> SmokeLog | None:
        path = Path(evidence_dir) / self.summary
        return SmokeLog(read_exchanges(path)) if path.is_file() else None

    def checks(self, record: SmokeLog, evidence_dir: Path, spec: SmokeSpec) -> list[Check]:
        return smoke_checks(record.root, spec, [str(evidence_dir / self.summary)])
