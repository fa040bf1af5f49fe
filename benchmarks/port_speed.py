"""Speed and clean-merge share of `harness port` over real upstream changes.

    PYTHONPATH=. python benchmarks/port_speed.py [--old 0.5.17] [--new 0.5.23] [--copies 400] [--keep DIR]

Prints figures; asserts nothing (issue 10, Acceptance, second bullet). What it does:

1. Takes every function whose body or signature changed between two real releases (the
   Feature Diff's `body_changed` / `signature_changed` functions).
2. Writes a synthetic plugin with N of them (spread evenly over the list; `--copies 0` for all):
   each a module-level REPLACE hook whose body is the function at the old release with a
   one-line device edit (a call `xdev_sync()` inserted before the statement in the middle of
   the body), 50 copies per module.
3. Times `port_plugin` (detection, three-way merge with git merge-file, undefined names,
   signatures) on it, once without and once with the comparison against every release in the
   wheel cache, and reports per-copy milliseconds and the ratio to a reference measured in the
   same run: `ast.parse` of the upstream files involved (both versions of every file holding
   one of the N functions), on one core.
4. Reports the statuses: the share of upstream-changed functions a one-line device edit merges
   clean, and how often the merge leaves an undefined name or a signature to fix.
5. Calibrates the similarity threshold: the similarity of each copy to its own upstream
   function, and to a different changed function of about the same length (a stand-in for a
   hand-written replacement).
"""

from __future__ import annotations

import argparse
import ast
import random
import re
import statistics
import sys
import tempfile
import textwrap
import time
from collections import Counter
from pathlib import Path

from harness.knowledge.products import (
    SIMILARITY_THRESHOLD,
    diff_upstreams,
    port_plugin,
    similarity_of,
)
from harness.knowledge.upstream import load_index, resolve_upstream

EDIT = "xdev_sync()  # device edit"


def changed_functions(old, new) -> list[str]:
    diff = diff_upstreams(old, new)
    return [c.symbol for c in diff.changes if c.kind == "function" and c.change in ("body_changed", "signature_changed")]


def function_text(index, target: str) -> tuple[str, str] | None:
    """(dedented def-to-end text, source relpath) of an upstream function, or None."""
    resolution = index.resolve(target)
    if not resolution.ok or resolution.ref.kind != "function":
        return None
    info = index.function_info(resolution.ref)
    table = index.table(resolution.ref.module)
    lines = (index.source.root / table.path).read_text(encoding="utf-8", errors="replace").splitlines(keepends=True)
    return textwrap.dedent("".join(lines[info.lineno - 1 : info.end_lineno])), table.path


def device_edit(text: str, name: str) -> str | None:
    """The function renamed to `name` with one line inserted before the statement nearest the
    middle of its body that can take one (a docstring is not a statement to edit), or None."""
    try:
        node = ast.parse(text).body[0]
    except (SyntaxError, IndexError):
        return None
    statements = [s for s in ast.walk(node) if isinstance(s, ast.stmt) and s is not node
                  and not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant) and isinstance(s.value.value, str))]
    head = text.splitlines(keepends=True)
    head[0] = head[0].replace(f"def {node.name}(", f"def {name}(", 1)
    ordered = sorted(statements, key=lambda s: s.lineno)
    middle = len(ordered) // 2
    # from the middle outwards, the first statement a line can go before (not an `elif`, not
    # one sharing its line)
    for target in sorted(ordered, key=lambda s: abs(ordered.index(s) - middle)):
        line = head[target.lineno - 1]
        indent = line[: len(line) - len(line.lstrip())]
        if indent.strip() or target.col_offset != len(indent):
            continue
        lines = [*head[: target.lineno - 1], f"{indent}{EDIT}\n", *head[target.lineno - 1 :]]
        try:
            ast.parse("".join(lines))
        except SyntaxError:
            continue
        return "".join(lines)
    return None


def write_plugin(root: Path, copies: list[tuple[str, str]]) -> None:
    """A plugin with one REPLACE hook per (target, copy text), 50 per module."""
    (root / "pyproject.toml").write_text(
        '[project]\nname = "xdevbench"\nversion = "0"\n[project.entry-points."sglang.srt.plugins"]\nxdevbench = "xdevbench:register"\n')
    package = root / "xdevbench"
    package.mkdir()
    chunks = [copies[i : i + 50] for i in range(0, len(copies), 50)]
    (package / "__init__.py").write_text("def register():\n" + "".join(f"    import xdevbench.hooks_{n}  # noqa: F401\n" for n in range(len(chunks))) + "    return None\n")
    for n, chunk in enumerate(chunks):
        body = "from sglang.srt.plugins.hook_registry import HookType, plugin_hook\n\n\ndef xdev_sync():\n    pass\n"
        for target, text in chunk:
            body += f"\n\n@plugin_hook({target!r}, type=HookType.REPLACE)\n{text}"
        (package / f"hooks_{n}.py").write_text(body)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--old", default="0.5.17")
    parser.add_argument("--new", default="0.5.23")
    parser.add_argument("--copies", type=int, default=400, help="copies in the plugin (0: every changed function)")
    parser.add_argument("--keep", type=Path, help="write the plugin here instead of a temporary directory")
    args = parser.parse_args()
    old, new = resolve_upstream(f"sglang=={args.old}"), resolve_upstream(f"sglang=={args.new}")
    old_index = load_index(old)
    symbols = changed_functions(old, new)
    candidates: list[tuple[str, str, str]] = []  # (target, copy text, relpath)
    for n, symbol in enumerate(symbols):
        found = function_text(old_index, symbol)
        copy = device_edit(found[0], f"xdev_copy_{n}") if found else None
        if copy is not None:
            candidates.append((symbol, copy, found[1]))
    step = max(1, len(candidates) // args.copies) if args.copies else 1
    chosen = candidates[::step][: args.copies or None]
    print(f"{len(symbols)} functions changed body or signature {args.old} -> {args.new}; {len(candidates)} take a one-line edit; plugin with {len(chosen)} copies")

    files = sorted({relpath for _, _, relpath in chosen})
    start = time.perf_counter()
    for relpath in files:
        for source in (old, new):
            path = source.root / relpath
            if path.exists():
                ast.parse(path.read_bytes())
    reference = time.perf_counter() - start

    with tempfile.TemporaryDirectory() as tmp:
        root = args.keep or Path(tmp)
        root.mkdir(parents=True, exist_ok=True)
        write_plugin(root, [(target, text) for target, text, _ in chosen])
        port_plugin(root, old, new, compare_releases=False)  # warm the index caches of both releases
        timings = {}
        for label, compare in (("detection + merge", False), ("detection + merge + best release", True)):
            start = time.perf_counter()
            report = port_plugin(root, old, new, compare_releases=compare)
            timings[label] = time.perf_counter() - start
    ports = report.ports
    print(f"reference: ast.parse of the {len(files)} upstream files involved, both versions: {reference:.2f} s")
    for label, seconds in timings.items():
        print(f"{label}: {seconds:.2f} s for {len(ports)} copies = {1000 * seconds / max(len(ports), 1):.1f} ms/copy; {seconds / reference:.2f}x the reference")
    statuses = Counter(p.status for p in ports)
    total = len(ports)
    print("statuses: " + ", ".join(f"{status} {n} ({100 * n / total:.1f} %)" for status, n in statuses.most_common()))
    merged = [p for p in ports if p.status in ("clean", "conflict")]
    clean = [p for p in merged if p.status == "clean"]
    print(f"merged clean: {len(clean)} of {len(merged)} copies upstream changed ({100 * len(clean) / max(len(merged), 1):.1f} %)")
    copies = {target: text for target, text, _ in chosen}
    new_names = [p for p in clean if any(not re.search(rf"\b{re.escape(u.name)}\b", copies[p.target]) for u in p.undefined_names)]
    print(f"  of the clean ones: {len(new_names)} use a name upstream's change brought in (an import to add), "
          f"{sum(1 for p in clean if p.signature_change)} carry a signature change ({sum(1 for p in clean if p.signature_change and not p.signature_change.copy_fits)} not taken by the merged copy)")

    own = [p.similarity for p in ports]
    rng = random.Random(0)
    by_length = sorted(chosen, key=lambda c: len(c[1]))
    others = []
    for i, (_, text, _) in enumerate(by_length):
        j = min(len(by_length) - 1, i + 1 + rng.randrange(3)) if i + 1 < len(by_length) else i - 1
        others.append(similarity_of(text, by_length[j][1]))
    print(f"similarity to its own upstream function: min {min(own):.2f}, median {statistics.median(own):.2f}; "
          f"to another changed function of about its length: median {statistics.median(others):.2f}, "
          f"95th percentile {sorted(others)[int(0.95 * len(others))]:.2f}, above the {SIMILARITY_THRESHOLD} threshold {sum(s >= SIMILARITY_THRESHOLD for s in others)} of {len(others)}")


if __name__ == "__main__":
    sys.exit(main())
