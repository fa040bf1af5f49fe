"""Model-architecture strings: where an upstream release produces or lists one.

SGLang picks a model class by the string in `hf_config.architectures` (ModelRegistry, keyed by
each EntryClass's `__name__`: sglang/srt/models/registry.py import_model_classes). Upstream
rewrites that string (draft / MTP / NextN models: configs/model_config.py `_config_draft_model`,
`self.hf_config.architectures[0] = "DeepseekV3ForCausalLMNextN"`) and switches code paths on
tables of them (`multimodal_model_archs`, `piecewise_cuda_graph_disabled_model_archs`,
`hybrid_swa_archs`, …). A plugin model registered under such a string, or plugin code that
reads / adds one, depends on upstream still saying it: when a release stops rewriting to it or
drops it from a table that still exists, the plugin's model is silently no longer chosen (the
architecture falls back to upstream's class or to Transformers) or loses the code path. The
plugin still loads, so this never breaks it; it is a high-risk `missing`.

An architecture upstream never names is the plugin's own: not a dependency.

Lazy: only modules of sglang.srt whose source holds the quoted string (and, for an upstream model the plugin
overrides, the modules that may define a class of that name) are parsed.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Literal

import msgspec

from harness.engines import profile
from harness.knowledge.model import Ref, dotted, walk
from harness.knowledge.scan import ARCHITECTURE
from harness.knowledge.upstream import SymbolIndex

_COLLECTIONS = (ast.List, ast.Tuple, ast.Set, ast.Dict)
_BUILDERS = {"frozenset", "set", "tuple", "list", "dict"}
# `EntryClass = X` / `EntryClass = [X, Y]` at module level (registry.py import_model_classes reads it)
_ENTRY_CLASS = re.compile(rb"^EntryClass\s*(?::[^=]*)?=\s*(\[[^\]]*\]|\([^)]*\)|[\w.]+)", re.MULTILINE)


class Place(msgspec.Struct, frozen=True):
    """One place a release says an architecture string.

    how: rewrite (upstream writes it into `architectures`; `sources` are the architectures its
    branch tests, i.e. whose drafts become it), rewritten (it is tested by a branch that rewrites
    to `name`), table (an element or key of the collection assigned to `name`), entry (upstream's
    own model class of that name, in module `name`), named (any other use, in function `name`).
    where: "relpath:line"."""

    how: Literal["rewrite", "rewritten", "table", "entry", "named"]
    name: str
    where: str
    sources: tuple[str, ...] = ()


_DECODER = msgspec.msgpack.Decoder(list[Place])


def places(index: SymbolIndex, architecture: str) -> list[Place]:
    """Every place `index`'s release says `architecture` (sorted by kind of place, then file:line).
    Memoised and cached with the index."""
    return index.analysis("architectures.v4", Ref("value", "", architecture), _DECODER, lambda: _places(index, architecture))


def _table_exists(index: SymbolIndex, name: str) -> bool:
    """Whether the release still assigns a collection to `name` anywhere in its serving runtime."""
    needles = (f"{name} = ".encode(), f"{name}: ".encode())
    return any(
        table == name
        for module, text in _runtime_sources(index).items() if any(n in text for n in needles)
        for table, _, _ in getattr(_module(index, module), "tables", [])
    )


@dataclass
class Verdict:
    """What a release does to an architecture string the plugin uses, against a reference release
    (the plugin's baseline, or `diff`'s --from)."""

    status: Literal["ok", "missing"]
    detail: str
    defined_in: str | None = None
    successor: str | None = None
    successor_reason: str | None = None


def judge(index: SymbolIndex, reference: SymbolIndex | None, architecture: str, own_tables: set[str]) -> Verdict | None:
    """The verdict on `architecture` in `index`'s release; None when neither release names it
    (the plugin's own architecture). `own_tables`: upstream tables the plugin adds it to itself
    (their loss is not upstream's doing)."""
    now = places(index, architecture)
    before = places(reference, architecture) if reference is not None and reference is not index else []
    if not now and not before:
        return None
    label = index.source.label
    lost: list[str] = []
    successor = None
    rewrites_now = {s for p in now if p.how == "rewrite" for s in p.sources}
    for place in before:
        if place.how == "rewrite":
            gone = [s for s in place.sources if s not in rewrites_now] if place.sources else ([] if any(p.how == "rewrite" for p in now) else [""])
            for source in gone:
                instead = next((p.name for p in places(index, source) if p.how == "rewritten" and p.name != architecture), None) if source else None
                successor = successor or instead
                lost.append(f"no longer rewrites {source or 'any architecture'} to {architecture!r} "
                            f"(it did at {place.where}){f'; they become {instead!r} now' if instead else ''}")
        elif (place.how == "table" and _about_architectures(place.name) and place.name not in own_tables
              and not any(p.how == "table" and p.name == place.name for p in now)
              and (not now or _table_exists(index, place.name))):  # a table gone as a whole was refactored away
            lost.append(f"no longer lists {architecture!r} in {place.name} (it did at {place.where}): the code path it switches on is gone for it")
    if not now:
        lost.append(f"{label} names {architecture!r} nowhere (the reference did at {before[0].where})")
    if lost:
        return Verdict("missing", "; ".join(dict.fromkeys(lost)) + f" — the plugin still loads, but its model is not chosen or runs without that path on {label}",
                       successor=successor, successor_reason="the rewrite on the same branch now produces it" if successor else None)
    first = now[0]
    return Verdict("ok", f"{label} {_describe(first)} at {first.where}" + (f" (and {len(now) - 1} more places)" if len(now) > 1 else ""), defined_in=first.where)


def _about_architectures(table: str) -> bool:
    """A table whose name says it holds architectures (`multimodal_model_archs`, `SWA_SINK_ARCHS`,
    `CP_V2_DEFAULT_MODEL_CLASSES`): only those are told apart by name across releases; a generic
    name (`names`, `supported`) may be another table in the next release."""
    return any(word in table.lower() for word in ("arch", "model"))


def _describe(place: Place) -> str:
    return {
        "rewrite": "rewrites architectures to it",
        "rewritten": f"tests it to rewrite to {place.name!r}",
        "table": f"lists it in {place.name}",
        "entry": f"has its own model class of that name ({place.name})",
        "named": f"names it in {place.name}",
    }[place.how]


# ----------------------------------------------------------------------------- upstream side

_ORDER = {"rewrite": 0, "table": 1, "rewritten": 2, "entry": 3, "named": 4}


def _runtime_sources(index: SymbolIndex) -> dict[str, bytes]:
    """The sources of the serving runtime (EngineProfile.runtime, sglang.srt: the only code that
    picks and switches on a model architecture; half the release's bytes)."""
    memo = index.memo.setdefault("architecture_sources", {})
    if not memo:
        memo.update((module, text) for module, text in index.sources().items() if module.startswith(profile().runtime + "."))
    return memo


def _places(index: SymbolIndex, architecture: str) -> list[Place]:
    bare, quoted = architecture.encode(), (f'"{architecture}"'.encode(), f"'{architecture}'".encode())
    found: list[Place] = []
    definition = f"class {architecture}".encode()
    for module, text in _runtime_sources(index).items():
        if bare not in text:
            continue
        if any(q in text for q in quoted):
            found += _in_module(index, module, architecture)
        if definition in text and module.startswith(profile().models):
            found += _entry(index, module, architecture)
    return sorted(set(found), key=lambda p: (_ORDER[p.how], p.where, p.name))


@dataclass
class _Module:
    """One parsed module, walked once: its parent links, its CamelCase string constants (value ->
    nodes) and its collection assignments (name, line, names its value refers to)."""

    parents: dict[ast.AST, ast.AST]
    constants: dict[str, list[ast.Constant]]
    tables: list[tuple[str, int, frozenset[str]]]


def _module(index: SymbolIndex, module: str) -> _Module | None:
    memo = index.memo.setdefault("architecture_modules", {})
    if module not in memo:
        tree = index.tree(module)
        if tree is None:
            memo[module] = None
            return None
        parents: dict[ast.AST, ast.AST] = {}
        constants: dict[str, list[ast.Constant]] = {}
        tables = []
        for node in walk(tree):
            for child in ast.iter_child_nodes(node):
                parents[child] = node
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and ARCHITECTURE.match(node.value):
                constants.setdefault(node.value, []).append(node)
            elif isinstance(node, (ast.Assign, ast.AnnAssign)) and (name := _table_name(node)) and _is_collection(node.value):
                tables.append((name, node.lineno, frozenset(n.id for n in walk(node.value) if isinstance(n, ast.Name))))
        memo[module] = _Module(parents, constants, tables)
    return memo[module]


def _in_module(index: SymbolIndex, module: str, architecture: str) -> list[Place]:
    walked = _module(index, module)
    if walked is None:
        return []
    relpath = index.files[module][0]
    found: list[Place] = []
    for node in walked.constants.get(architecture, []):
        if not isinstance(walked.parents.get(node), (ast.Expr, ast.JoinedStr)):
            found += _classify(node, walked.parents, f"{relpath}:{node.lineno}", architecture)
    # a table spliced into another (`{*SWA_SINK_ARCHS, …}`, `A + B`) lists its entries too
    tables = {p.name for p in found if p.how == "table"}
    while more := {(name, line) for name, line, names in walked.tables if name not in tables and names & tables}:
        tables |= {name for name, _ in more}
        found += [Place("table", name, f"{relpath}:{line}") for name, line in more]
    return found


def _classify(node: ast.Constant, parents: dict, where: str, architecture: str) -> list[Place]:
    child, current = node, parents.get(node)
    while current is not None and not isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Module)):
        if isinstance(current, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            if child is current.value:
                targets = current.targets if isinstance(current, ast.Assign) else [current.target]
                if any(_writes_architectures(t) for t in targets):
                    return [Place("rewrite", _function(current, parents), where, _branch_sources(current, parents, architecture))]
                if (name := _table_name(current)) and _is_collection(current.value):
                    return [Place("table", name, where)]
            break
        if isinstance(current, (ast.If, ast.IfExp, ast.While)) and child is current.test:
            body = current.body if isinstance(current.body, list) else [current.body]
            targets = _rewrite_targets(body)
            if targets:
                return [Place("rewritten", t, where) for t in targets]
            break
        if isinstance(current, ast.stmt):
            break
        child, current = current, parents.get(current)
    return [Place("named", _function(node, parents), where)]


def _entry(index: SymbolIndex, module: str, architecture: str) -> list[Place]:
    """Upstream's own model class `architecture`, when its module lists it in EntryClass (read
    from the text: model modules are large and this is all that is needed of them)."""
    text = _runtime_sources(index)[module]
    entry = _ENTRY_CLASS.search(text)
    defined = re.search(rb"^class[ \t]+" + re.escape(architecture.encode()) + rb"\b", text, re.MULTILINE)
    if entry is None or defined is None or not re.search(rb"\b" + re.escape(architecture.encode()) + rb"\b", entry.group(1)):
        return []
    line = text.count(b"\n", 0, defined.start()) + 1
    return [Place("entry", module, f"{index.files[module][0]}:{line}")]


def _writes_architectures(target: ast.AST) -> bool:
    """`x.architectures = …`, `x.architectures[0] = …`, `config["architectures"] = …`, `architectures = …`."""
    if isinstance(target, ast.Subscript):
        return _writes_architectures(target.value) or (isinstance(target.slice, ast.Constant) and target.slice.value == "architectures")
    return (isinstance(target, ast.Attribute) and target.attr == "architectures") or (isinstance(target, ast.Name) and target.id == "architectures")


def _table_name(assign: ast.Assign | ast.AnnAssign | ast.AugAssign) -> str | None:
    targets = assign.targets if isinstance(assign, ast.Assign) else [assign.target]
    if len(targets) == 1 and isinstance(targets[0], (ast.Name, ast.Attribute)):
        return targets[0].id if isinstance(targets[0], ast.Name) else targets[0].attr
    return None


def _is_collection(value: ast.AST | None) -> bool:
    if isinstance(value, ast.Call):
        return (dotted(value.func) or "") in _BUILDERS and all(_is_collection(a) or isinstance(a, ast.Name) for a in value.args)
    if isinstance(value, ast.BinOp):
        return _is_collection(value.left) or _is_collection(value.right)
    return isinstance(value, _COLLECTIONS)


def _rewrite_targets(body: list) -> list[str]:
    """Architecture strings a branch body writes into `architectures`."""
    return sorted({
        c.value for stmt in body for node in walk(stmt)
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and any(_writes_architectures(t) for t in (node.targets if isinstance(node, ast.Assign) else [node.target]))
        for c in walk(node.value) if isinstance(c, ast.Constant) and isinstance(c.value, str) and ARCHITECTURE.match(c.value)
    })


def _branch_sources(assign: ast.AST, parents: dict, architecture: str) -> tuple[str, ...]:
    """The architectures the enclosing `if` tests name (drafts of those are rewritten)."""
    sources: list[str] = []
    child, current = assign, parents.get(assign)
    while current is not None and not isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
        if isinstance(current, ast.If) and child is not current.test and child in current.body:
            sources += [c.value for c in walk(current.test) if isinstance(c, ast.Constant) and isinstance(c.value, str) and ARCHITECTURE.match(c.value)]
        child, current = current, parents.get(current)
    return tuple(s for s in dict.fromkeys(sources) if s != architecture)


def _function(node: ast.AST, parents: dict) -> str:
    current = parents.get(node)
    while current is not None and not isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        current = parents.get(current)
    return current.name if current is not None else "<module>"
