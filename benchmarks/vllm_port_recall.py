"""Does `harness check` predict a real vLLM plugin's real porting changes?

    PYTHONPATH=. python benchmarks/vllm_port_recall.py [--pair vllm-spyre==1.9.1:0.16.0:vllm-spyre==1.10.0:0.18.0 ...]
        [--show 30]

Prints figures; asserts nothing (issue 21: "real vLLM plugins and their real porting commits will
be tried"). A pair is two consecutive releases of a plugin from the package index, N written for
vllm A and N+1 for vllm B (the pins their wheels' METADATA `Requires-Dist: vllm…` name, printed so
a reader can see the pin moved): what N+1 changed in N's files is the port. For each pair:

* `harness check --json --plugin N --upstream vllm==B --baseline vllm==A` (what a porter runs), and
  `--upstream vllm==A` (N on its own base, for contrast: breaking findings there are not the port's);
* N -> N+1 with difflib over N's .py files: the lines N+1 replaced or deleted, and insertion points
  (a new argument on its own line inside a call counts for the call). A finding "sits on" a change
  when the statement holding its line (a simple statement whole; a compound one's header only: a
  `def` through its signature) holds a changed line; every line of a file N+1 deleted is changed
  (a file moved elsewhere counts as deleted);
* precision: breaking findings on B that sit on a change = confirmed by the port; the others are
  latent (the port did not need them: behaviour not exercised, or a break N+1 still ships) or false,
  listed for judging by hand against vllm B's source;
* recall: changed statements of N that reference an upstream vllm name (an import from vllm, a
  dotted use of an imported vllm name, or a method overriding one of a vllm base class) which the
  static oracle below sees change between A and B (present in A and gone from B, or a caller written
  for A no longer binds: a parameter or dataclass field gone, a new required one): of those, how
  many carry a breaking finding (and how many any finding that is not `ok`). The oracle is
  deliberately simple and independent of harness (module file + top-level definition + same-module
  aliases + re-exports; no inheritance, no argument matching), so it over-counts (a removed field the
  plugin never passes) and under-counts (changes forced by upstream behaviour rather than names: a
  new return value, a config flag); docs/benchmarks.md judges a sample of each list by hand.

Downloads (plugin wheels, vllm releases via `harness fetch`) are cached in
~/.cache/harness-bench/vllm/ as in vllm_check_speed.py; checks run in one fresh HARNESS_CACHE_DIR
holding the fetched releases. Plugins in FROM_SDIST are read from their source archive (the
package's .py files and its egg-info entry points), found through the index's JSON page: vllm-ascend
0.23.0.post1 ships no wheel and 0.18.0 only a device build; their vllm pin is the Dockerfile's
`ARG VLLM_TAG` (its docs' versioning policy says the same).
"""

from __future__ import annotations

import argparse
import ast
import difflib
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.request
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from check_speed_lib.measure import cold_cache, harness_env, loadavg
from vllm_check_speed import BENCH, plugin_tree, seeded_release

# (plugin N, vllm A, plugin N+1, vllm B): consecutive releases whose vllm pin moved.
PAIRS = (
    "vllm-spyre==1.8.0:0.15.1:vllm-spyre==1.9.0:0.16.0",
    "vllm-spyre==1.9.1:0.16.0:vllm-spyre==1.10.0:0.18.0",
    "vllm-rbln==0.11.1.post1:0.22.0:vllm-rbln==0.11.2:0.24.0",
    "vllm-rbln==0.11.2.post1:0.24.0:vllm-rbln==0.12.0:0.30.0",
    "vllm-ascend==0.18.0:0.18.0:vllm-ascend==0.23.0.post1:0.23.0",
)
# Plugins read from their source archive: no wheel on the index, or only device builds.
FROM_SDIST = ("vllm-ascend",)


@dataclass
class Pair:
    old: str
    base: str
    new: str
    target: str

    @classmethod
    def parse(cls, text: str) -> Pair:
        old, base, new, target = text.split(":")
        return cls(old, base, new, target)


def vllm_pin(tree: Path) -> str:
    """The wheel's `Requires-Dist: vllm…` line(s), a source archive's Dockerfile `ARG VLLM_TAG=…`, or a note."""
    pins = []
    for metadata in tree.glob("*.dist-info/METADATA"):
        pins += [line.split(":", 1)[1].strip() for line in metadata.read_text(errors="replace").splitlines() if line.lower().startswith("requires-dist: vllm") and "extra ==" not in line]
    dockerfile = tree / "Dockerfile"
    if not pins and dockerfile.exists():  # a source archive: the vllm tag its image builds on
        pins = [line.split(None, 1)[1] for line in dockerfile.read_text(errors="replace").splitlines() if line.startswith("ARG VLLM_TAG=")]
    return "; ".join(pins) or "no vllm requirement"


def sdist_tree(requirement: str) -> Path:
    """The plugin's source archive from the package index, unpacked once: the package's .py files,
    its *.egg-info (the entry points harness reads) and Dockerfile (the vllm pin). pip cannot fetch a
    source archive without building its metadata (vllm-ascend's setup.py needs setuptools_scm and
    more), so its URL and sha256 come from the index's JSON page (PEP 691)."""
    name, version = requirement.split("==")
    tree = BENCH / f"plugin-sdist-{name}-{version}"
    if (tree / ".complete").exists():
        return tree
    index = os.environ.get("PIP_INDEX_URL", "https://pypi.org/simple").rstrip("/")
    page = urllib.request.Request(f"{index}/{name}/", headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    with urllib.request.urlopen(page, timeout=60) as response:
        files = json.load(response)["files"]
    package = name.replace("-", "_")
    wanted = f"{package}-{version}.tar.gz"
    entry = next((f for f in files if f["filename"].lower() == wanted.lower()), None)
    if entry is None:
        raise SystemExit(f"{requirement}: no source archive {wanted} on {index}")
    with urllib.request.urlopen(entry["url"], timeout=300) as response:
        data = response.read()
    if hashlib.sha256(data).hexdigest() != entry["hashes"].get("sha256"):
        raise SystemExit(f"{requirement}: {wanted} does not match the index's sha256")
    shutil.rmtree(tree, ignore_errors=True)
    with tarfile.open(fileobj=io.BytesIO(data)) as archive:
        for member in archive.getmembers():
            rel = Path(*Path(member.name).parts[1:])  # below the archive's top folder
            keep = (rel.parts[:1] == (package,) and rel.suffix == ".py") or (len(rel.parts) == 2 and rel.parts[0].endswith(".egg-info")) or str(rel) == "Dockerfile"
            if member.isfile() and keep:
                (tree / rel).parent.mkdir(parents=True, exist_ok=True)
                (tree / rel).write_bytes(archive.extractfile(member).read())
    (tree / ".complete").write_text(wanted)
    return tree


def source_tree(requirement: str) -> Path:
    """The plugin release's files: its source archive for FROM_SDIST plugins, else its wheel."""
    return sdist_tree(requirement) if requirement.split("==")[0] in FROM_SDIST else plugin_tree(requirement)


def packages(tree: Path) -> list[Path]:
    """The plugin's .py files, relative to the unpacked wheel (the paths findings carry)."""
    return sorted(p.relative_to(tree) for p in tree.rglob("*.py") if ".dist-info" not in p.parts)


# -- the port: which lines of N did N+1 change ------------------------------------------------------


@dataclass
class FileChange:
    deleted: bool = False
    lines: set[int] = field(default_factory=set)  # 1-based lines of N replaced or deleted
    inserts: set[int] = field(default_factory=set)  # N+1 inserted text before these lines of N


def port_changes(old: Path, new: Path) -> dict[Path, FileChange]:
    """Per file of N: what N+1 did to it (files N+1 lacks are deleted)."""
    changes: dict[Path, FileChange] = {}
    for rel in packages(old):
        before = (old / rel).read_text(errors="replace").splitlines()
        if not (new / rel).exists():
            changes[rel] = FileChange(deleted=True, lines=set(range(1, len(before) + 1)))
            continue
        after = (new / rel).read_text(errors="replace").splitlines()
        change = FileChange()
        for tag, i1, i2, _j1, _j2 in difflib.SequenceMatcher(None, before, after, autojunk=False).get_opcodes():
            if tag in ("replace", "delete"):
                change.lines.update(range(i1 + 1, i2 + 1))
            elif tag == "insert":
                change.inserts.add(i1 + 1)
        if change.lines or change.inserts:
            changes[rel] = change
    return changes


def statement_spans(source: str) -> list[tuple[int, int, ast.stmt]]:
    """(first, last, node) of every statement: a simple one whole, a compound one's header (up to
    the line before its body), innermost last when sorted by start."""
    spans = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.stmt):
            continue
        body = getattr(node, "body", None)
        first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        last = node.end_lineno or node.lineno
        if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
            last = max(node.lineno, body[0].lineno - 1)
        spans.append((first, last, node))
    return spans


def span_of(spans: list[tuple[int, int, ast.stmt]], line: int) -> tuple[int, int]:
    """The innermost statement span holding `line` (the line alone when none does)."""
    best = (line, line)
    for first, last, _node in spans:
        if first <= line <= last and (last - first) <= (best[1] - best[0] or 10**9):
            best = (first, last)
    return best


def touches(change: FileChange | None, span: tuple[int, int]) -> bool:
    if change is None:
        return False
    first, last = span
    return change.deleted or any(first <= n <= last for n in change.lines) or any(first < n <= last for n in change.inserts)


# -- a small static oracle over the upstream source: did a vllm name change between A and B? ------


class Release:
    """Top-level definitions of a vllm release's modules, read lazily from its source."""

    def __init__(self, root: Path) -> None:
        self.root = root  # the directory holding vllm/
        self.modules: dict[str, dict[str, ast.AST] | None] = {}

    def module(self, name: str) -> dict[str, ast.AST] | None:
        if name not in self.modules:
            base = self.root / Path(*name.split("."))
            path = base.with_suffix(".py") if base.with_suffix(".py").exists() else base / "__init__.py"
            table: dict[str, ast.AST] | None = None
            if path.exists():
                table = {}
                tree = ast.parse(path.read_bytes())
                for node in tree.body:
                    for target in _bound(node, name, path.name == "__init__.py"):
                        table.setdefault(target[0], target[1])
            self.modules[name] = table
        return self.modules[name]

    def lookup(self, dotted: str, depth: int = 0) -> ast.AST | None:
        """The definition `dotted` names (module, class, function, assignment, class member), following
        one `from x import y` re-export per step; None when the release lacks it."""
        parts = dotted.split(".")
        for cut in range(len(parts), 0, -1):
            table = self.module(".".join(parts[:cut]))
            if table is None:
                continue
            if cut == len(parts):
                return ast.Module(body=[], type_ignores=[])
            node = table.get(parts[cut])
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name) and node.value.id in table:
                node = table[node.value.id]  # `Old = New`: an alias in the same module
            if isinstance(node, str):  # a re-export: the name it imports
                return self.lookup(".".join([node, *parts[cut + 1 :]]), depth + 1) if depth < 4 else None
            for member in parts[cut + 1 :]:
                if not isinstance(node, ast.ClassDef):
                    return None
                node = next((n for n in node.body for t in _bound(n, "", False) if t[0] == member), None)
            return node
        return None


def _bound(node: ast.AST, module: str, package: bool) -> list[tuple[str, object]]:
    """Names a top-level (or class-body) statement binds: defs and classes, assignment targets, and
    `from … import` names as the dotted name they re-export."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [(node.name, node)]
    if isinstance(node, ast.Assign):
        return [(t.id, node) for t in node.targets if isinstance(t, ast.Name)]
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return [(node.target.id, node)]
    if isinstance(node, ast.ImportFrom) and module:
        parent = module.split(".") if package else module.split(".")[:-1]
        source = ".".join(parent[: len(parent) - node.level + 1] + [node.module or ""]) if node.level else node.module
        return [(a.asname or a.name, f"{source.rstrip('.')}.{a.name}") for a in node.names if a.name != "*"]
    if isinstance(node, (ast.If, ast.Try)):  # guarded definitions count as defined
        return [b for child in node.body for b in _bound(child, module, package)]
    return []


def params(node: ast.AST | None) -> tuple[set[str], set[str]] | None:
    """(every parameter name, the required ones) of a function, or of a class's __init__ (a
    dataclass's annotated fields when it has none: required unless they have a default)."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        a = node.args
        positional = a.posonlyargs + a.args
        required = {p.arg for p in positional[: len(positional) - len(a.defaults)]}
        required |= {p.arg for p, d in zip(a.kwonlyargs, a.kw_defaults, strict=True) if d is None}
        names = {p.arg for p in positional + a.kwonlyargs} | ({"*"} if a.vararg else set()) | ({"**"} if a.kwarg else set())
        return names - {"self", "cls"}, required - {"self", "cls"}
    if isinstance(node, ast.ClassDef):
        init = next((n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
        if init is not None:
            return params(init)
        fields = [n for n in node.body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)]
        return {f.target.id for f in fields}, {f.target.id for f in fields if f.value is None}
    return None


def upstream_change(dotted: str, a: Release, b: Release) -> str | None:
    """'removed' when `dotted` exists in A and not in B; 'changed' when a caller written for A no
    longer binds on B (a parameter or field gone, or a new required one); None otherwise."""
    before = a.lookup(dotted)
    if before is None:
        return None
    after = b.lookup(dotted)
    if after is None:
        return "removed"
    old, new = params(before), params(after)
    if old is None or new is None:
        return None
    gone = old[0] - new[0] if "**" not in new[0] else set()
    return "changed" if gone or (new[1] - old[1]) else None


def vllm_references(tree: ast.Module) -> dict[int, list[tuple[str, bool]]]:
    """Per statement line, the dotted vllm names it uses, each with whether it is only imported
    there: imported names, whole attribute chains rooted at them outside annotations, and methods
    overriding a vllm base class's."""
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] == "vllm":
            for a in node.names:
                aliases[a.asname or a.name] = f"{node.module}.{a.name}"
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == "vllm":
                    aliases[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
    skip = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Attribute)}  # only whole chains count
    for node in ast.walk(tree):  # a type annotation needs nothing of the class at run time
        annotations = [getattr(node, "annotation", None), getattr(node, "returns", None)]
        skip.update(id(n) for a in annotations if isinstance(a, ast.AST) for n in ast.walk(a))
    uses: dict[int, list[tuple[str, bool]]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "vllm" and not node.level:
            uses.setdefault(node.lineno, []).extend((f"{node.module}.{a.name}", True) for a in node.names)
        elif isinstance(node, (ast.Attribute, ast.Name)) and id(node) not in skip:
            chain, cursor = [], node
            while isinstance(cursor, ast.Attribute):
                chain.append(cursor.attr)
                cursor = cursor.value
            if isinstance(cursor, ast.Name) and cursor.id in aliases:
                uses.setdefault(node.lineno, []).append((".".join([aliases[cursor.id], *reversed(chain)]), False))
        elif isinstance(node, ast.ClassDef):
            bases = [aliases.get(b.id) for b in node.bases if isinstance(b, ast.Name)]
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and not item.name.startswith("__"):
                    uses.setdefault(item.lineno, []).extend((f"{base}.{item.name}", False) for base in bases if base)
    return uses


# -- one pair ---------------------------------------------------------------------------------------


def check(plugin: Path, version: str, baseline: str, harness_path: Path, cache: Path) -> dict:
    """`harness check --json` of `plugin` on vllm==version; the parsed document and its timing."""
    command = [sys.executable, "-m", "harness", "check", "--plugin", str(plugin), "--upstream", f"vllm=={version}", "--baseline", baseline, "--json"]
    start = time.perf_counter()
    proc = subprocess.run(command, check=False, capture_output=True, text=True, env=harness_env(harness_path, cache), cwd=tempfile.gettempdir(), timeout=1800)
    try:
        payload = json.loads(proc.stdout)
    except json.JSONDecodeError:
        raise SystemExit(f"check of {plugin.name} on vllm=={version} gave no document (exit {proc.returncode}): {proc.stderr[-800:]}") from None
    return {"payload": payload, "seconds": time.perf_counter() - start, "exit": proc.returncode}


def key(finding: dict) -> tuple:
    return (finding.get("file"), finding.get("line"), finding["kind"], finding["target"])


def line_of(finding: dict) -> str:
    return f"{finding['kind']:10s} {finding['status']:18s} {finding.get('file')}:{finding.get('line')}  {finding['target']}  -- {(finding.get('detail') or finding.get('message') or '')[:150]}"


def inside(findings: list[dict], rel: Path, span: tuple[int, int]) -> list[dict]:
    """The findings on file `rel` whose line lies in `span`."""
    return [f for f in findings if Path(f.get("file") or "") == rel and f.get("line") is not None and span[0] <= f["line"] <= span[1]]


def run_pair(pair: Pair, harness_path: Path, cache: Path, show: int, keep: Path | None) -> dict:
    old, new = source_tree(pair.old), source_tree(pair.new)
    releases = {v: Release(seeded_release(v, harness_path)[1].parent) for v in (pair.base, pair.target)}
    on_b = check(old, pair.target, f"vllm=={pair.base}", harness_path, cache)
    on_a = check(old, pair.base, "auto", harness_path, cache)
    if keep:
        keep.mkdir(parents=True, exist_ok=True)
        for version, result in ((pair.target, on_b), (pair.base, on_a)):
            (keep / f"{pair.old.replace('==', '-')}-on-{version}.json").write_text(json.dumps(result["payload"], indent=1))
    changes = port_changes(old, new)
    files = packages(old)
    changed_lines = sum(len(c.lines) for c in changes.values() if not c.deleted)
    print(f"\n== {pair.old} (vllm {vllm_pin(old)}) -> {pair.new} (vllm {vllm_pin(new)}); checked on vllm=={pair.target}, baseline vllm=={pair.base}")
    print(f"   port: {len(changes)} of {len(files)} files touched ({sum(c.deleted for c in changes.values())} deleted), {changed_lines} lines of N replaced or deleted, "
          f"{sum(len(c.inserts) for c in changes.values())} insertion points")

    spans: dict[Path, list] = {}
    trees: dict[Path, ast.Module] = {}
    for rel in files:
        try:
            source = (old / rel).read_text(errors="replace")
            trees[rel] = ast.parse(source)
            spans[rel] = statement_spans(source)
        except SyntaxError:
            spans[rel] = []

    def sits_on_change(finding: dict) -> bool:
        rel = Path(finding.get("file") or "")
        if finding.get("line") is None or rel not in spans:
            return False
        return touches(changes.get(rel), span_of(spans[rel], finding["line"]))

    breaking_b = [f for f in on_b["payload"]["findings"] if f.get("breaking")]
    breaking_a = {key(f) for f in on_a["payload"]["findings"] if f.get("breaking")}
    confirmed = [f for f in breaking_b if sits_on_change(f)]
    untouched = [f for f in breaking_b if not sits_on_change(f)]
    fresh = [f for f in breaking_b if key(f) not in breaking_a]
    print(f"   check on vllm=={pair.target}: exit {on_b['exit']}, {len(breaking_b)} breaking ({len(fresh)} not breaking on vllm=={pair.base}), {on_b['seconds']:.1f} s; "
          f"on its own base vllm=={pair.base}: exit {on_a['exit']}, {len(breaking_a)} breaking, {on_a['seconds']:.1f} s")
    print(f"   breaking on B confirmed by the port (on lines N+1 changed): {len(confirmed)} of {len(breaking_b)}; "
          f"of the {len(fresh)} new on B: {sum(f in confirmed for f in fresh)}")
    print(f"   by kind/status, confirmed: {dict(Counter((f['kind'], f['status']) for f in confirmed))}")
    print(f"   by kind/status, untouched: {dict(Counter((f['kind'], f['status']) for f in untouched))}")
    for label, group in (("CONFIRMED", confirmed), ("UNTOUCHED", untouched)):
        for finding in group[:show]:
            print(f"   {label} {'new ' if finding in fresh else 'base'} {line_of(finding)}")
        if len(group) > show:
            print(f"   ... {len(group) - show} more {label.lower()}")

    # recall: changed statements that use an upstream name the oracle sees change between A and B
    non_ok = [f for f in on_b["payload"]["findings"] if f["status"] not in ("ok", "inherited", "extension")]
    forced = []
    for rel, change in changes.items():
        if rel not in trees:
            continue
        uses = vllm_references(trees[rel])
        seen: set[tuple[int, int]] = set()
        for line, names in sorted(uses.items()):
            span = span_of(spans[rel], line)
            if span in seen or not touches(change, span):
                continue
            verdicts = {(n, upstream_change(n, releases[pair.base], releases[pair.target]), imported) for n, imported in names}
            moved = sorted({(n, why) for n, why, imported in verdicts if why == "removed" or (why and not imported)})
            if not moved:
                continue
            seen.add(span)
            forced.append({"file": str(rel), "span": span, "names": moved, "breaking": inside(breaking_b, rel, span), "flagged": inside(non_ok, rel, span)})
    hit = [c for c in forced if c["breaking"]]
    seen_at_all = [c for c in forced if c["flagged"]]
    print(f"   recall: {len(forced)} changed statements of N use a vllm name that moved or changed A->B; "
          f"{len(hit)} carry a breaking finding, {len(seen_at_all)} any finding that is not ok")
    for c in forced:
        mark = "HIT   " if c["breaking"] else ("WARNED" if c["flagged"] else "MISSED")
        names = ", ".join(f"{n} ({why})" for n, why in c["names"][:3])
        print(f"   {mark} {c['file']}:{c['span'][0]}  {names}" + (f"  <- {c['flagged'][0]['kind']}/{c['flagged'][0]['status']}" if c["flagged"] else ""))
    return {"pair": f"{pair.old} -> {pair.new}", "breaking_b": len(breaking_b), "new_on_b": len(fresh), "confirmed": len(confirmed), "breaking_a": len(breaking_a), "forced": len(forced), "hit": len(hit), "warned": len(seen_at_all)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pair", action="append", help="N==x:A:N+1==y:B (repeatable; default: the pairs in PAIRS)")
    parser.add_argument("--show", type=int, default=30, help="findings to list per group")
    parser.add_argument("--keep", type=Path, help="write each check's JSON document here")
    args = parser.parse_args()
    harness_path = Path(__file__).resolve().parent.parent
    BENCH.mkdir(parents=True, exist_ok=True)
    pairs = [Pair.parse(p) for p in (args.pair or PAIRS)]
    start = time.perf_counter()
    seeds = [seeded_release(v, harness_path)[0] for v in sorted({v for p in pairs for v in (p.base, p.target)})]
    cache = cold_cache(*seeds)
    print(f"== vLLM port recall: {len(pairs)} pairs (load {loadavg()}); releases fetched in {time.perf_counter() - start:.0f} s")
    try:
        rows = [run_pair(p, harness_path, cache, args.show, args.keep) for p in pairs]
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    print(f"\n== summary ({time.perf_counter() - start:.0f} s)")
    for r in rows:
        print(f"   {r['pair']:48s} breaking on B {r['breaking_b']:3d} (new {r['new_on_b']:3d}, own base {r['breaking_a']:3d}), confirmed by the port {r['confirmed']:3d}; "
              f"forced changes {r['forced']:3d}: breaking {r['hit']:3d}, any finding {r['warned']:3d}")


if __name__ == "__main__":
    main()
