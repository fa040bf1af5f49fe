"""Re-porting stale copies: a REPLACE hook (or a function patched over an upstream one) whose
body is a copy of the upstream function with a few device edits keeps the old behaviour when
upstream changes the original. This module finds those copies, measures how close each is to
the upstream function at the from-version, and carries the upstream change into the copy by a
three-way merge done by git itself (`git merge-file`):

    base   = the upstream function at the from-version
    ours   = the plugin's copy, as it is in the plugin file
    theirs = the upstream function at the to-version

base and theirs are first put in the copy's shape: dedented, renamed to the copy's name and
indented like the copy (a method is often copied as a module-level function taking `self`).
What a merge cannot see is listed beside it: free names the merged copy uses that the plugin
module does not bind (with where upstream imports them from), and parameters the upstream
signature gained or lost.
"""

from __future__ import annotations

import ast
import builtins
import difflib
import io
import re
import symtable
import tempfile
import textwrap
import tokenize
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from harness.errors import HarnessError
from harness.knowledge.judge import find_successor
from harness.knowledge.model import (
    Dependency,
    FunctionInfo,
    Param,
    PluginScan,
    Resolution,
    function_params,
    signature_text,
    walk,
)
from harness.knowledge.scan import scan_plugin
from harness.knowledge.upstream import (
    SymbolIndex,
    UpstreamSource,
    cached_release,
    cached_versions,
    extract_module,
    load_index,
)

# Below this share of matching normalised tokens the plugin function is its own code, not a
# copy: a copy with a few device lines changed scores well above 0.8, a hand-written
# replacement of the same function well below 0.5 (see benchmarks/port_speed.py).
SIMILARITY_THRESHOLD = 0.6

PortStatus = Literal["clean", "conflict", "unchanged", "not_a_copy", "missing"]
_PATCH_HOWS = ("setattr", "assign")
_BUILTINS = frozenset(dir(builtins))


class UndefinedName(BaseModel):
    """A free name the merged copy uses that its plugin module does not define or import."""

    name: str
    upstream_import: str | None = None  # the statement that binds it in upstream's module at the to-version


class SignatureChange(BaseModel):
    """The upstream signature moved between the versions: a REPLACE with a stale signature
    fails at call time."""

    before: str  # upstream@from, as written by signature_text
    after: str  # upstream@to
    gained: list[str] = Field(default_factory=list)
    lost: list[str] = Field(default_factory=list)
    copy_fits: bool  # the merged copy takes exactly the to-version's parameters


class Port(BaseModel):
    """One copy of an upstream function in the plugin, and what re-porting it gives."""

    target: str  # dotted upstream path the plugin replaces
    kind: Literal["hook", "patch"]
    file: str  # plugin file holding the copy, relative to the plugin root
    line: int  # the copy's `def` line in that file
    end_line: int  # its last line
    registered_at: str  # file:line of the registration (hook or patch)
    hook_type: str | None = None
    plugin_function: str | None = None  # the copy's dotted path in the plugin
    copy_of: str | None = None  # the release label it is a copy of (the from-version) when it is one
    similarity: float = 0.0  # normalised-token similarity to the upstream function at the from-version, 0..1
    best_match: str | None = None  # a release the copy matches better than the from-version
    own_edits: list[int] = Field(default_factory=list)  # plugin file lines that differ from upstream@from
    status: PortStatus
    conflicts: int = 0  # conflict hunks git left in `merged`
    merged: str | None = None  # merged (or conflict-marked) text of the copy
    patch: str | None = None  # unified diff of the plugin file, merged copy applied
    upstream_diff: str | None = None  # unified diff of the upstream function, from -> to
    undefined_names: list[UndefinedName] = Field(default_factory=list)
    signature_change: SignatureChange | None = None
    successor: str | None = None
    successor_reason: str | None = None
    detail: str | None = None

    @property
    def needs_work(self) -> bool:
        """Conflict, undefined names, a signature the merged copy does not take, or a copy
        whose upstream original is gone (it must move to the successor)."""
        return (self.status == "conflict" or (self.status == "missing" and self.copy_of is not None) or bool(self.undefined_names)
                or bool(self.signature_change and not self.signature_change.copy_fits))


class PortReport(BaseModel):
    plugin: str
    from_label: str
    to_label: str
    threshold: float = SIMILARITY_THRESHOLD
    ports: list[Port] = Field(default_factory=list)

    @property
    def exit_code(self) -> int:
        """0: every copy merged clean or was unchanged; 1: a conflict, an undefined name, a
        stale signature or a copy of a function upstream removed remains (the CLI's exit status)."""
        return 1 if any(p.needs_work for p in self.ports) else 0


@dataclass
class _Copy:
    """The plugin function standing in for the upstream one."""

    path: str  # dotted, in the plugin
    file: str  # relative to the plugin root
    lineno: int  # the `def` line
    end_lineno: int
    text: str  # def line to the end, as in the file
    indent: str
    name: str
    params: tuple[Param, ...]


# ----------------------------------------------------------------------------- engine


def port_plugin(plugin: Path, old: UpstreamSource, new: UpstreamSource, compare_releases: bool = True) -> PortReport:
    """Find the plugin's copies of upstream functions (REPLACE hooks, functions set over
    upstream ones by `setattr` or assignment) and merge each with the upstream change from
    `old` to `new`.

    `compare_releases` also compares each copy with every release in the wheel cache, to name
    the one it matches best when that is not `old`. Raises HarnessError when the plugin is not
    one (see scan_plugin) or a plugin file does not parse (file:line in the message)."""
    plugin = Path(plugin).resolve()
    old_index, new_index = load_index(old), load_index(new)
    scan = scan_plugin(plugin, new_index)
    broken = [d for d in scan.dependencies if d.kind == "file"]
    if broken:
        dep = broken[0]
        raise HarnessError(f"{plugin / dep.file}:{dep.line}: {dep.expression}; copies in it cannot be found")
    others = _other_releases(old, new) if compare_releases else []
    ports = []
    trees: dict[str, _File] = {}
    for dep in sorted(_copy_candidates(scan), key=lambda d: (d.file, d.line)):
        copy = _plugin_function(scan, dep.hook, trees)
        if copy is None:
            continue  # a class, a lambda or a callable the scan could not place: not a function copy
        port = _port_one(dep, copy, scan, old_index, new_index, others, trees)
        if port is not None:
            ports.append(port)
    old_index.save()
    new_index.save()
    return PortReport(plugin=str(plugin), from_label=old.label, to_label=new.label, ports=ports)


def _copy_candidates(scan: PluginScan) -> list[Dependency]:
    seen: set[tuple[str, str]] = set()
    found = []
    for dep in scan.dependencies:
        is_replace = dep.kind == "hook" and dep.hook_type == "REPLACE"
        is_patch = dep.kind == "patch" and dep.how in _PATCH_HOWS
        if (is_replace or is_patch) and dep.target and dep.hook and (dep.target, dep.hook) not in seen:
            seen.add((dep.target, dep.hook))
            found.append(dep)
    return found


def _port_one(dep, copy: _Copy, scan: PluginScan, old_index: SymbolIndex, new_index: SymbolIndex, others, trees) -> Port | None:
    common = {"target": dep.target, "kind": dep.kind, "file": copy.file, "line": copy.lineno, "end_line": copy.end_lineno, "registered_at": f"{dep.file}:{dep.line}", "hook_type": dep.hook_type, "plugin_function": copy.path}
    before = _upstream_function(old_index, dep)
    after = _upstream_function(new_index, dep)
    base = _shaped(before, copy) if before else None
    similarity = round(similarity_of(copy.text, base), 3) if base else 0.0
    best = _best_release(copy, dep, similarity, others)
    if after is None:
        resolution = _resolve(new_index, dep)
        successor = find_successor(dep.target, new_index, old_index)
        detail = f"does not resolve on {new_index.source.label}: {resolution.note}" if resolution.note else f"not a function on {new_index.source.label}"
        return Port(**common, status="missing", similarity=similarity, copy_of=old_index.source.label if similarity >= SIMILARITY_THRESHOLD else None,
                    best_match=best, successor=successor and successor[0], successor_reason=successor and successor[1], detail=detail)
    if before is None:
        return Port(**common, status="not_a_copy", best_match=best, upstream_diff=None,
                    detail=f"{dep.target} is not a function on {old_index.source.label}, so there is no base to merge from")
    theirs = _shaped(after, copy)
    upstream_changed = _tokens(base) != _tokens(theirs)
    upstream_diff = _diff(base, theirs, f"{dep.target} ({old_index.source.label})", f"{dep.target} ({new_index.source.label})") if upstream_changed else None
    if similarity < SIMILARITY_THRESHOLD:
        return Port(**common, status="not_a_copy", similarity=similarity, best_match=best, upstream_diff=upstream_diff, signature_change=_signature_change(before.info, after.info, copy.params),
                    detail=f"{similarity:.2f} of the normalised tokens match {dep.target} on {old_index.source.label} (threshold {SIMILARITY_THRESHOLD}): the plugin's own code")
    port = Port(**common, copy_of=old_index.source.label, similarity=similarity, best_match=best, own_edits=_own_edits(base, copy), status="unchanged", upstream_diff=upstream_diff)
    if not upstream_changed:
        port.signature_change = _signature_change(before.info, after.info, copy.params)
        return port
    merged, conflicts = merge_file(copy.text, base, theirs, labels=(f"plugin {copy.path}", f"upstream {old_index.source.label}", f"upstream {new_index.source.label}"))
    port.status, port.conflicts, port.merged = ("conflict" if conflicts else "clean"), conflicts, merged
    port.patch = _file_patch(trees[copy.file].lines, copy, merged)
    # A conflicted text does not parse: what it needs is read from the merge with each conflict
    # resolved to upstream's side, so the copy's own clean lines (an import in its body) still bind.
    needs = merged if not conflicts else _parsable(merge_file(copy.text, base, theirs, favour="theirs")[0], theirs)
    port.undefined_names = _undefined(needs, trees[copy.file].bound, after.module, new_index)
    port.signature_change = _signature_change(before.info, after.info, _params_of(merged) if not conflicts else copy.params)
    return port


@dataclass
class _Upstream:
    module: str
    info: FunctionInfo
    text: str  # def line to the end, dedented


def _resolve(index: SymbolIndex, dep: Dependency) -> Resolution:
    return index.resolve_hook_target(dep.target) if dep.kind == "hook" else index.resolve(dep.target)


def _upstream_function(index: SymbolIndex, dep: Dependency) -> _Upstream | None:
    resolution = _resolve(index, dep)
    if not resolution.ok or resolution.ref.kind != "function":
        return None
    info = index.function_info(resolution.ref)
    table = index.table(resolution.ref.module)
    if info is None or table is None:
        return None
    lines = (index.source.root / table.path).read_text(encoding="utf-8", errors="replace").splitlines(keepends=True)
    return _Upstream(resolution.ref.module, info, textwrap.dedent("".join(lines[info.lineno - 1 : info.end_lineno])))


_DEF = re.compile(r"^(\s*(?:async\s+)?def\s+)(\w+)")


def _shaped(upstream: _Upstream, copy: _Copy) -> str:
    """The upstream function in the copy's shape: its name, its indentation."""
    text = _DEF.sub(lambda m: m.group(1) + copy.name, upstream.text, count=1)
    return _with_newline(textwrap.indent(text, copy.indent))


def _with_newline(text: str) -> str:
    return text if text.endswith("\n") else text + "\n"


# ----------------------------------------------------------------------------- plugin side


@dataclass
class _File:
    """A plugin file, parsed once for all the copies in it."""

    tree: ast.Module
    lines: list[str]
    bound: frozenset[str] | None  # names bound at module level; None when `import *` may bind any

    @classmethod
    def read(cls, root: Path, file: str) -> _File:
        source = (root / file).read_text(encoding="utf-8", errors="replace")
        tree = ast.parse(source)
        table = extract_module("plugin", file, b"", False, tree=tree)
        return cls(tree, source.splitlines(keepends=True), None if table.star_imports else frozenset(table.names))


def _plugin_function(scan: PluginScan, path: str | None, trees: dict) -> _Copy | None:
    """The plugin function at dotted `path` ("pkg.mod.func" or "pkg.mod.Class.method")."""
    if not path:
        return None
    parts = path.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        module = scan.modules.get(".".join(parts[:cut]))
        if module is not None:
            break
    else:
        return None
    if module.file not in trees:
        trees[module.file] = _File.read(scan.root, module.file)
    lines = trees[module.file].lines
    body, node = trees[module.file].tree.body, None
    for name in parts[cut:]:
        node = next((n for n in body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n.name == name), None)
        if node is None:
            return None
        body = node.body
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    text = _with_newline("".join(lines[node.lineno - 1 : node.end_lineno]))
    indent = text[: len(text) - len(text.lstrip())]
    return _Copy(path, module.file, node.lineno, node.end_lineno, text, indent, node.name, function_params(node.args))


def _params_of(text: str) -> tuple[Param, ...]:
    node = ast.parse(textwrap.dedent(text)).body[0]
    return function_params(node.args)


# ----------------------------------------------------------------------------- similarity


@lru_cache(maxsize=4096)
def _tokens(text: str) -> tuple[str, ...]:
    """Normalised tokens of a function: no def name, comments, docstring or layout (the text
    starts at the def line, so decorators are not in it)."""
    source = textwrap.dedent(text)
    docstring = range(0)
    try:
        body = ast.parse(source).body[0].body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
            docstring = range(body[0].lineno, body[0].end_lineno + 1)
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError, IndexError, AttributeError):
        return tuple(source.split())
    out: list[str] = []
    for token in tokens:
        if token.type in _LAYOUT or (token.type == tokenize.STRING and token.start[0] in docstring):
            continue
        out.append("<name>" if out and out[-1] == "def" else token.string)  # the copy's own name does not count
    return tuple(out)


_LAYOUT = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER}


def similarity_of(copy: str, upstream: str) -> float:
    """Share of matching normalised tokens (difflib ratio, 0..1) between a plugin copy and an
    upstream function, ignoring the def name, decorators, comments, the docstring and layout."""
    a, b = _tokens(copy), _tokens(upstream)
    if not a and not b:
        return 1.0
    return difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()


def _own_edits(base: str, copy: _Copy) -> list[int]:
    """Plugin file lines of the copy that are not in upstream@from (blank lines aside)."""
    ours = copy.text.splitlines()
    matcher = difflib.SequenceMatcher(None, base.splitlines(), ours, autojunk=False)
    return [copy.lineno + j for tag, _, _, j1, j2 in matcher.get_opcodes() if tag in ("replace", "insert") for j in range(j1, j2) if ours[j].strip()]


def _other_releases(old: UpstreamSource, new: UpstreamSource) -> list[SymbolIndex]:
    """Indexes of the releases in the wheel cache, the from- and to-version first."""
    indexes = [load_index(old), load_index(new)]
    seen = {old.fingerprint, new.fingerprint}
    for version in cached_versions():
        release = cached_release(version)
        if release is not None and release.fingerprint not in seen:
            seen.add(release.fingerprint)
            indexes.append(load_index(release))
    return indexes


def _best_release(copy: _Copy, dep: Dependency, from_similarity: float, indexes: list[SymbolIndex]) -> str | None:
    """The release whose version of the target the copy matches best, when it beats the
    from-version (indexes[0]) by more than rounding."""
    if from_similarity >= 1.0 or not indexes:
        return None
    best, label = max(from_similarity, SIMILARITY_THRESHOLD), None  # a release it does not copy either is no answer
    for index in indexes[1:]:
        found = _upstream_function(index, dep)
        if found is None:
            continue
        score = round(similarity_of(copy.text, _shaped(found, copy)), 3)
        if score > best + 0.005:
            best, label = score, f"{index.source.label} ({score:.2f})"
    return label


# ----------------------------------------------------------------------------- merge


def merge_file(ours: str, base: str, theirs: str, labels: tuple[str, str, str] = ("ours", "base", "theirs"),
               favour: Literal["ours", "theirs"] | None = None) -> tuple[str, int]:
    """Three-way merge by `git merge-file -p` (through GitPython): (merged text, number of
    conflict hunks; 0 when clean). With `favour`, conflicts are resolved to that side (git's
    --ours/--theirs) instead of being marked. Raises HarnessError when git itself fails."""
    import git  # cost: gitpython loads only when a merge runs

    with tempfile.TemporaryDirectory(prefix="harness-merge-") as tmp:
        paths = []
        for name, text in (("ours", ours), ("base", base), ("theirs", theirs)):
            path = Path(tmp) / name
            path.write_text(text, encoding="utf-8")
            paths.append(str(path))
        status, merged, stderr = git.Git().merge_file(
            "-p", *([f"--{favour}"] if favour else []), "-L", labels[0], "-L", labels[1], "-L", labels[2], *paths,
            with_extended_output=True, with_exceptions=False, strip_newline_in_stdout=False,
        )
    if status < 0 or stderr.strip():
        raise HarnessError(f"git merge-file failed ({status}): {stderr.strip()}")
    return merged, status


def _parsable(text: str, fallback: str) -> str:
    """`text` when it parses as Python, else `fallback`."""
    try:
        ast.parse(textwrap.dedent(text))
    except SyntaxError:
        return fallback
    return text


def _file_patch(lines: list[str], copy: _Copy, merged: str) -> str:
    """Unified diff of the plugin file with the copy replaced by `merged`. Only the copy and
    three lines around it are diffed (a file may hold many copies); hunk headers are shifted
    back to file line numbers."""
    start = max(copy.lineno - 1 - 3, 0)
    before = lines[start : copy.end_lineno + 3]
    after = lines[start : copy.lineno - 1] + merged.splitlines(keepends=True) + lines[copy.end_lineno : copy.end_lineno + 3]
    diff = "".join(difflib.unified_diff(before, after, f"a/{copy.file}", f"b/{copy.file}"))
    return _HUNK.sub(lambda m: f"@@ -{int(m[1]) + start}{m[2] or ''} +{int(m[3]) + start}{m[4] or ''} @@", diff)


_HUNK = re.compile(r"^@@ -(\d+)(,\d+)? \+(\d+)(,\d+)? @@", re.MULTILINE)


def _diff(a: str, b: str, a_label: str, b_label: str) -> str:
    return "".join(difflib.unified_diff(textwrap.dedent(a).splitlines(keepends=True), textwrap.dedent(b).splitlines(keepends=True), a_label, b_label))


# ----------------------------------------------------------------------------- what the merge cannot see


def _undefined(text: str, module_names: frozenset[str] | None, upstream_module: str, index: SymbolIndex) -> list[UndefinedName]:
    """Free names of the function in `text` (annotations and defaults included) that the
    plugin module (`module_names`: what it binds at module level; None when a star import may
    bind anything) does not bind and that are not builtins. Scopes are Python's own (the
    standard library's symtable): a name a nested function imports or assigns is that
    function's, not the outer one's."""
    source = textwrap.dedent(text)
    try:
        function = ast.parse(source).body[0]
        # what runs: an `if TYPE_CHECKING:` block never does (typing docs), so a name only it
        # imports is unbound when the body reads it (UnboundLocalError, a NameError)
        checking_only = _type_checking_imports(function)
        top = symtable.symtable(ast.unparse(_without_type_checking(ast.parse(source))) if checking_only else source, "<port>", "exec")
    except (SyntaxError, IndexError, ValueError):
        return []
    if module_names is None:
        return []
    free: set[str] = set()

    def visit(table: symtable.SymbolTable) -> None:
        for symbol in table.get_symbols():
            if not symbol.is_referenced():
                continue
            # `global X` then a binding of X in the body binds the module's X when that line runs
            bound_here = symbol.is_declared_global() and (symbol.is_assigned() or symbol.is_imported())
            if table is top and not (symbol.is_assigned() or symbol.is_imported()) or table is not top and symbol.is_global() and not bound_here:
                free.add(symbol.get_name())
        for child in table.get_children():
            visit(child)

    visit(top)
    early = _read_before_bound(function)
    annotations = {id(n) for a in walk(function) for field in ("annotation", "returns") if isinstance(getattr(a, field, None), ast.AST)
                   for n in ast.walk(getattr(a, field))}
    used = dict.fromkeys(n.id for n in walk(function) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in free
                         and not (n.id in checking_only and id(n) in annotations))  # a hint only a type checker reads
    upstream = index.table(upstream_module)
    for name, declared_global in early.items():
        if not declared_global or name not in module_names:
            used[name] = None  # a local read before its binding: UnboundLocalError whatever the module binds
    return [UndefinedName(name=name, upstream_import=_import_statement(name, upstream_module, upstream.names.get(name) if upstream else None))
            for name in used if (name not in module_names or name in early) and name not in _BUILTINS]


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _read_before_bound(function: ast.AST) -> dict[str, bool]:
    """Names each function in `function` binds (a local, or `global X` then a binding) that
    it reads before any of its bindings: {name: declared global}. Python runs a body in
    source order but for loops, so a read that comes before every binding of the name in
    its scope, outside a loop that also binds it, runs unbound (UnboundLocalError for a
    local, NameError for a global the module does not bind)."""
    found: dict[str, bool] = {}
    for scope in [function, *(n for n in walk(function) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n is not function)]:
        declared = {name for n in _in_scope(scope) if isinstance(n, ast.Global) for name in n.names}
        params = {a.arg for a in (*scope.args.posonlyargs, *scope.args.args, *scope.args.kwonlyargs, scope.args.vararg, scope.args.kwarg) if a}
        binds: dict[str, list[ast.AST]] = {}
        reads: list[tuple[str, ast.AST]] = []
        loops: list[ast.AST] = []
        for node in _in_scope(scope):
            if isinstance(node, _LOOPS):
                loops.append(node)
            for name in _bound_names(node):
                binds.setdefault(name, []).append(node)
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                reads.append((node.id, node))
        exits = _exiting_blocks(scope)
        for name, read in reads:
            if name in params or name not in binds or name in found:
                continue
            # a binding reaches the read when it comes first, outside any block that leaves the
            # function (`except E: from m import X; return`) the read is not in
            reaching = [b for b in binds[name] if _position(b) < _position(read)
                        and not any(_in_block(b, block) and not _in_block(read, block) for block in exits)]
            if not reaching and not any(_within(read, loop) and any(_within(b, loop) for b in binds[name]) for loop in loops):
                found[name] = name in declared
    return found


def _exiting_blocks(scope: ast.AST) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """The statement blocks of `scope`'s own code (an if/else branch, a handler, a try/with/loop
    body, a case) whose last statement returns or raises, as (start, end) source positions:
    nothing bound in one reaches code after it."""
    blocks = []
    for node in [scope, *_in_scope(scope)]:
        bodies = [getattr(node, field, None) for field in ("body", "orelse", "finalbody")] if node is not scope else []
        for body in bodies:
            if isinstance(body, list) and body and isinstance(body[-1], (ast.Return, ast.Raise)):
                blocks.append(((body[0].lineno, body[0].col_offset), (body[-1].end_lineno, body[-1].end_col_offset)))
    return blocks


def _in_block(node: ast.AST, block: tuple[tuple[int, int], tuple[int, int]]) -> bool:
    start, end = block
    return start <= _position(node) and (node.end_lineno, node.end_col_offset) <= end


def _in_scope(scope: ast.AST):
    """The nodes `scope`'s own code runs: not a nested def, lambda or class body (their
    decorators and defaults, yes) nor a comprehension's, which has its own scope but for its
    first iterable."""
    stack = list(reversed(scope.body))
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, _COMPREHENSIONS):
            stack.append(node.generators[0].iter)
            continue
        if isinstance(node, _SCOPES):
            stack.extend(reversed([*getattr(node, "decorator_list", []), *(getattr(node.args, "defaults", []) if hasattr(node, "args") else []),
                                   *(d for d in (getattr(node.args, "kw_defaults", []) if hasattr(node, "args") else []) if d)]))
            continue
        stack.extend(reversed(list(ast.iter_child_nodes(node))))


def _bound_names(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
        return [node.id]
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return [a.asname or a.name.split(".")[0] for a in node.names if a.name != "*"]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, ast.ExceptHandler) and node.name:
        return [node.name]
    return []


def _position(node: ast.AST) -> tuple[int, int]:
    return (node.lineno, node.col_offset)


def _within(node: ast.AST, outer: ast.AST) -> bool:
    return (outer.lineno, outer.col_offset) <= _position(node) and (node.end_lineno, node.end_col_offset) <= (outer.end_lineno, outer.end_col_offset)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _type_checking_imports(function: ast.AST) -> set[str]:
    """The names imports under `if TYPE_CHECKING:` in `function` bind."""
    return {alias.asname or alias.name.split(".")[0] for node in walk(function) if isinstance(node, ast.If) and _is_type_checking(node.test)
            for stmt in node.body for inner in ast.walk(stmt) if isinstance(inner, (ast.Import, ast.ImportFrom)) for alias in inner.names}


def _without_type_checking(tree: ast.Module) -> ast.Module:
    """`tree` with the body of each `if TYPE_CHECKING:` emptied (`pass`): the code as it runs."""
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            node.body = [ast.Pass()]
    return ast.fix_missing_locations(tree)


def _import_statement(name: str, module: str, binding) -> str | None:
    """How upstream's module binds `name` at the to-version, as an import the plugin can use."""
    if binding is None:
        return None
    if binding.kind == "from":
        source, original = binding.target.split(":")
        return f"from {source} import {original}" + (f" as {name}" if original != name else "")
    if binding.kind == "module":
        return f"import {binding.target}" if binding.target == name else f"import {binding.target} as {name}"
    return f"from {module} import {name}"


def _signature_change(before: FunctionInfo, after: FunctionInfo, copy_params: tuple[Param, ...]) -> SignatureChange | None:
    """What upstream's signature gained and lost from->to, and whether `copy_params` (the
    merged copy's) take the to-version's parameters: same names and kinds in order, the
    receiver aside (a copy may call `self` something else)."""
    if before.params == after.params:
        return None
    old_names, new_names = [p.name for p in before.params], [p.name for p in after.params]
    skip = 1 if after.params and after.params[0].name in ("self", "cls") else 0
    fits = [(p.name, p.kind) for p in copy_params[skip:]] == [(p.name, p.kind) for p in after.params[skip:]]
    return SignatureChange(
        before=signature_text(before.params), after=signature_text(after.params),
        gained=[n for n in new_names if n not in old_names], lost=[n for n in old_names if n not in new_names],
        copy_fits=fits,
    )
