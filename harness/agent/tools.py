"""The agent's tools, few and named. Paths are relative to the sandbox (the plugin worktree);
there is no shell. Every failure — a bad argument, a file that is not there, an `old` that does
not match exactly once, a path outside the worktree — goes back to the model as the tool's
result, never as an exception that ends the run.

The knowledge tools (`upstream_source`, `run_check`) are handed in by the step, which owns the
upstream sources and the plugin checks."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import regex

from harness.agent.sandbox import Refused, Sandbox

MAX_RESULT_CHARS = 20_000  # one tool result; the rest is cut with a note, so a big file cannot eat the budget
MAX_MATCHES = 200
SEARCH_TIMEOUT_S = 10.0  # one search call, all files together


def _schema(name: str, description: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "description": description, "parameters": {
        "type": "object", "properties": properties, "required": required, "additionalProperties": False}}}


_PATH = {"type": "string", "description": "path relative to the plugin worktree"}
TOOLS: list[dict[str, Any]] = [
    _schema("read_file", "Read a file of the plugin worktree, with line numbers.",
            {"path": _PATH, "start_line": {"type": "integer"}, "end_line": {"type": "integer"}}, ["path"]),
    _schema("search", "Search the plugin worktree for a Python regex; returns path:line: text.",
            {"pattern": {"type": "string"}, "path": _PATH}, ["pattern"]),
    _schema("upstream_source", "The source of an upstream symbol (dotted name) at the version the plugin was "
            "written for ('from') or the target version ('to'), and where it moved.",
            {"target": {"type": "string"}, "version": {"type": "string", "enum": ["from", "to"]}},
            ["target", "version"]),
    _schema("replace_in_file", "Replace `old` by `new` in a file; `old` must occur exactly once.",
            {"path": _PATH, "old": {"type": "string"}, "new": {"type": "string"}}, ["path", "old", "new"]),
    _schema("write_file", "Create or overwrite a file with `content`.",
            {"path": _PATH, "content": {"type": "string"}}, ["path", "content"]),
    _schema("run_check", "The drift check of the worktree against the target upstream: the findings that are "
            "not ok, as JSON.", {}, []),
    _schema("finish", "End the task with a summary of what was changed and why.",
            {"summary": {"type": "string"}}, ["summary"]),
]


@dataclass
class ToolResult:
    """What one call returns to the model, and how the loop counts it."""

    text: str
    refused: bool = False
    finished: bool = False


@dataclass
class Toolbox:
    """The tools bound to one sandbox and one step's knowledge."""

    sandbox: Sandbox
    upstream_source: Callable[[str, str], str]  # (target, "from"|"to") -> text
    run_check: Callable[[], str]  # -> JSON findings of the worktree
    refusals: list[str] = field(default_factory=list)

    def call(self, name: str, raw_arguments: str) -> ToolResult:
        """Run one tool call as the model sent it (arguments as a JSON string)."""
        try:
            arguments = json.loads(raw_arguments or "{}")
        except ValueError as exc:
            return ToolResult(f"error: arguments are not valid JSON ({exc})")
        if not isinstance(arguments, dict):
            return ToolResult("error: arguments must be a JSON object")
        method = getattr(self, f"_{name}", None) if name in {t["function"]["name"] for t in TOOLS} else None
        if method is None:
            return ToolResult(f"error: unknown tool {name!r}; the tools are "
                              + ", ".join(t["function"]["name"] for t in TOOLS))
        try:
            return method(**arguments)
        except Refused as exc:
            self.refusals.append(f"{name}: {exc}")
            return ToolResult(str(exc), refused=True)
        except TypeError as exc:  # missing or unexpected arguments
            return ToolResult(f"error: bad arguments for {name}: {exc}")
        except (OSError, UnicodeDecodeError, regex.error) as exc:
            return ToolResult(f"error: {type(exc).__name__}: {exc}")
        except Exception as exc:  # noqa: BLE001 — e.g. the knowledge engine failing: the model hears it, the run goes on
            return ToolResult(f"error: {name} failed: {type(exc).__name__}: {exc}")

    def _read_file(self, path: str, start_line: int | None = None, end_line: int | None = None) -> ToolResult:
        lines = self.sandbox.resolve(path).read_text(encoding="utf-8").splitlines()
        start = max(1, start_line or 1)
        end = min(len(lines), end_line or len(lines))
        return ToolResult(_cut("\n".join(f"{n:>5}  {lines[n - 1]}" for n in range(start, end + 1)) or "(empty)"))

    def _search(self, pattern: str, path: str = ".") -> ToolResult:
        # The `regex` package takes a timeout per match: a catastrophic pattern from the model
        # cannot hold the loop past its wall-clock budget (`re` has no way to stop a match).
        compiled = regex.compile(pattern)
        deadline = time.monotonic() + SEARCH_TIMEOUT_S
        base = self.sandbox.resolve(path)
        root = Path(os.path.realpath(self.sandbox.root))
        hits = []
        for file in [base] if base.is_file() else _walk(base):
            try:  # a symlink that leads out or into git metadata is skipped, as a read of it is refused
                text = self.sandbox.resolve(file.relative_to(root).as_posix()).read_text(encoding="utf-8")
            except (Refused, UnicodeDecodeError, OSError):
                continue
            for number, line in enumerate(text.splitlines(), 1):
                try:
                    found = compiled.search(line, timeout=max(0.0, deadline - time.monotonic()))
                except TimeoutError:
                    return ToolResult(f"error: search stopped after {SEARCH_TIMEOUT_S:g} s at "
                                      f"{file.relative_to(root).as_posix()}:{number} (the pattern backtracks too "
                                      f"much; use a simpler one); {len(hits)} matches before that")
                if found:
                    hits.append(f"{file.relative_to(root).as_posix()}:{number}: {line.strip()}")
        shown = hits[:MAX_MATCHES] + ([f"... {len(hits) - MAX_MATCHES} more"] if len(hits) > MAX_MATCHES else [])
        return ToolResult(_cut("\n".join(shown)) if hits else "no matches")

    def _upstream_source(self, target: str, version: str) -> ToolResult:
        if version not in ("from", "to"):
            return ToolResult("error: version must be 'from' or 'to'")
        return ToolResult(_cut(self.upstream_source(target, version)))

    def _replace_in_file(self, path: str, old: str, new: str) -> ToolResult:
        file = self.sandbox.resolve(path)
        text = file.read_text(encoding="utf-8")
        count = text.count(old) if old else 0
        if count != 1:
            return ToolResult(f"error: `old` occurs {count} times in {path}; it must occur exactly once")
        file.write_text(text.replace(old, new, 1), encoding="utf-8")
        return ToolResult(f"replaced 1 occurrence in {path}" + self._ignored_note(file))

    def _write_file(self, path: str, content: str) -> ToolResult:
        file = self.sandbox.resolve(path)
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text(content, encoding="utf-8")
        return ToolResult(f"wrote {len(content)} characters to {path}" + self._ignored_note(file))

    def _ignored_note(self, file: Path) -> str:
        if not self.sandbox.ignored(file):
            return ""
        return ("; note: git ignores this path, so it is not part of the patch, the approved commit or what "
                "run_check checks: put the change in a tracked file")

    def _run_check(self) -> ToolResult:
        return ToolResult(_cut(self.run_check()))

    def _finish(self, summary: str) -> ToolResult:
        return ToolResult("finished", finished=True)


def _walk(base: Path) -> list[Path]:
    """The files under `base`, sorted; symlinked directories and `.git` are not entered."""
    files = []
    for top, dirs, names in os.walk(base, followlinks=False):
        dirs[:] = sorted(d for d in dirs if d.casefold() != ".git")
        files += [Path(top, name) for name in names]
    return sorted(files)


def _cut(text: str) -> str:
    if len(text) <= MAX_RESULT_CHARS:
        return text
    return text[:MAX_RESULT_CHARS] + f"\n... cut: {len(text) - MAX_RESULT_CHARS} more characters (ask for a line range)"
