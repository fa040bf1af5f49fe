"""Show the reviewer an upstream symbol's actual source, and how it changed between versions.

Symbols resolve through the knowledge engine's index, so re-exports (`sglang.srt.utils.x`
defined in `utils/common.py`) and methods inherited from a base class are found where they
really live."""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from harness.knowledge.upstream import UpstreamSource, load_index


@dataclass(frozen=True)
class SymbolSource:
    symbol: str
    defined_as: str  # where it is defined: module.qualname
    file: str  # relative to the source root
    start: int
    end: int
    text: str


def locate(upstream: UpstreamSource, dotted: str) -> SymbolSource | None:
    """Where a dotted upstream symbol is defined in `upstream` (re-exports and bases followed) and
    its source lines; None when it does not resolve statically."""
    index = load_index(upstream)
    resolution = index.resolve(dotted)
    ref = resolution.ref
    if ref is None or ref.kind in ("external", "dynamic"):
        return None
    table = index.table(ref.module)
    if table is None:
        return None
    lines = (upstream.root / table.path).read_text(encoding="utf-8", errors="replace").splitlines(keepends=True)
    if ref.kind == "module":
        start, end = 1, len(lines)
    elif ref.kind == "class":
        info = index.class_info(ref)
        start, end = info.lineno, info.end_lineno
    elif ref.kind == "function":
        info = index.function_info(ref)
        start, end = info.lineno, info.end_lineno
    else:  # a module- or class-level value: its binding line
        binding = table.names.get(ref.qualname.split(".")[-1])
        start = end = binding.lineno if binding and binding.lineno else 1
    return SymbolSource(dotted, ref.path, table.path, start, end, "".join(lines[start - 1 : end]))


def hunk(old: SymbolSource | None, new: SymbolSource | None, label_old: str, label_new: str) -> str:
    """A unified diff of one symbol between two sources ('' when unchanged)."""
    old_lines = old.text.splitlines(keepends=True) if old else []
    new_lines = new.text.splitlines(keepends=True) if new else []
    if old_lines == new_lines:
        return ""
    diff = difflib.unified_diff(
        old_lines,
        new_lines,
        fromfile=f"{label_old}/{old.file}:{old.start}" if old else "/dev/null",
        tofile=f"{label_new}/{new.file}:{new.start}" if new else "/dev/null",
        n=3,
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in diff)
