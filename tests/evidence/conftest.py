"""Fixtures for the evidence runners: generated gsm8k-format data and the loopback engine,
started through the real server lifecycle exactly as a runbook would start SGLang.

    def test_x(loopback_server, gsm8k_file):
        key = gsm8k_file(40)
        with loopback_server("--wrong-rate", "0.1", answers=key) as server:
            ...  # server.base_url, server.model, server.api, server.stderr_path
"""

from __future__ import annotations

import json
import random
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
import yaml

from harness.evidence.runbook import Runbook
from harness.evidence.server import RunningServer, ServedModel

REPO_ROOT = Path(__file__).resolve().parents[2]

_NAMES = ["Ava", "Ben", "Chloe", "Dev", "Elena", "Farid", "Grace", "Hiro", "Ines", "Jonah"]
_ITEMS = ["apples", "marbles", "stickers", "books", "pencils", "shells", "cards", "coins"]


def make_gsm8k_rows(n: int, seed: int = 0) -> list[dict[str, str]]:
    """`n` distinct grade-school word problems in gsm8k's format: the answer is a worked
    solution with calculator annotations, ending in `#### <number>`."""
    rng = random.Random(seed)
    rows: list[dict[str, str]] = []
    seen: set[str] = set()
    while len(rows) < n:
        name, item = rng.choice(_NAMES), rng.choice(_ITEMS)
        a, b, c = rng.randint(2, 60), rng.randint(2, 12), rng.randint(2, 9)
        kind = rng.randrange(3)
        if kind == 0:
            question = (f"{name} has {a} {item}. {name} buys {b} bags with {c} {item} in each bag. "
                        f"How many {item} does {name} have now?")
            answer = (f"The bags hold {b} * {c} = <<{b}*{c}={b * c}>>{b * c} {item}.\n"
                      f"{name} has {a} + {b * c} = <<{a}+{b * c}={a + b * c}>>{a + b * c} {item} now.\n"
                      f"#### {a + b * c}")
        elif kind == 1:
            total = a * c
            question = (f"{name} shares {total} {item} equally among {c} friends and keeps none. "
                        f"How many {item} does each friend get?")
            answer = f"Each friend gets {total} / {c} = <<{total}/{c}={a}>>{a} {item}.\n#### {a}"
        else:
            question = (f"{name} had {a + b} {item} and gave away {b} of them, then found {c} more. "
                        f"How many {item} does {name} have?")
            answer = (f"After giving some away, {name} has {a + b} - {b} = <<{a + b}-{b}={a}>>{a} {item}.\n"
                      f"Then {a} + {c} = <<{a}+{c}={a + c}>>{a + c} {item}.\n#### {a + c}")
        if question not in seen:
            seen.add(question)
            rows.append({"question": question, "answer": answer})
    return rows


@pytest.fixture
def gsm8k_file(tmp_path: Path) -> Callable[..., Path]:
    """Factory: write `n` generated rows as JSONL and return the path."""

    def write(n: int = 20, *, seed: int = 0, name: str | None = None) -> Path:
        path = tmp_path / (name or f"gsm8k-{n}-{seed}.jsonl")
        path.write_text("".join(json.dumps(row) + "\n" for row in make_gsm8k_rows(n, seed)))
        return path

    return write


def loopback_runbook_data(*flags: str, answers: Path | None = None, api: str = "completions",
                          startup_timeout_s: float = 20, model: str = "loopback-model",
                          environment: dict[str, Any] | None = None) -> dict[str, Any]:
    """A runbook (as data) whose server is the loopback engine with the given fault flags."""
    command = "python -m harness.testing.loopback --host {host} --port {port} --model {model}"
    if answers is not None:
        command += f" --answers {answers}"
    if flags:
        command += " " + " ".join(flags)
    return {
        "name": "loopback",
        "environment": environment or {"device": "loopback", "engine_version": "loopback"},
        "server": {
            "command": command,
            "model": model,
            "api": api,
            "startup_timeout_s": startup_timeout_s,
            "shutdown_grace_s": 2,
            # The engine runs as `python -m harness...`, whatever the test's working directory.
            "env": {"PYTHONPATH": str(REPO_ROOT)},
        },
        "smoke": {"prompts": ["The capital of France is", "Say something about the sea."],
                  "max_tokens": 12},
    }


@pytest.fixture
def loopback_runbook(tmp_path: Path) -> Callable[..., Runbook]:
    """Factory: `loopback_runbook(*flags, answers=..., api=...)` → a validated Runbook that is
    also written to `tmp_path/loopback.yaml` (runbook.source)."""

    def build(*flags: str, **kwargs: Any) -> Runbook:
        from harness.evidence.runbook import load_runbook

        path = tmp_path / "loopback.yaml"
        path.write_text(yaml.safe_dump(loopback_runbook_data(*flags, **kwargs), sort_keys=False))
        return load_runbook(path)

    return build


@pytest.fixture
def loopback_server(tmp_path: Path, loopback_runbook: Callable[..., Runbook]):
    """Factory of context managers: start the loopback engine through ServedModel and yield the
    RunningServer; evidence (logs, server.json) goes to tmp_path/<name>/."""

    @contextmanager
    def start(*flags: str, name: str = "server", **kwargs: Any) -> Iterator[RunningServer]:
        runbook = loopback_runbook(*flags, **kwargs)
        with ServedModel.from_runbook(runbook, tmp_path / name, name=name) as server:
            yield server

    return start


@pytest.fixture
def loopback(loopback_server) -> Iterator[RunningServer]:
    """A healthy loopback engine with no faults."""
    with loopback_server() as server:
        yield server

