"""When a plugin fails on a release: at import, at engine start, on one model or feature path, or never.

A breaking finding fails when its plugin site runs:

    import    a site at module level of a live plugin module (or the entry point itself): SGLang's
              loader imports each entry point inside `try/except Exception` and skips the *whole*
              plugin (sglang/srt/plugins/__init__.py, `load_plugins_by_group`, 0.5.23:79-84)
    startup   a site upstream reaches from a startup root (EngineProfile.startup_roots) for every model, or from
              the construction of the models that build it (the model loader constructs the
              model's EntryClass dynamically, so a model class's __init__ ends the walk)
    path      a site upstream reaches only from a model's forward or another path no root reaches
    never     not breaking: deprecated, body changed, guarded, dead (a warning)

What upstream calls is found walking callers upward from the upstream function the plugin site
depends on: a hook's target, an override's base method, or — for a site inside a plugin function —
the hook target or base method of that function. The walk uses the index's call-site analysis
(harness.knowledge.judge.callsites), breadth first (the shortest chain proves it), bounded by
MAX_DEPTH hops and MAX_FUNCTIONS functions. A caller the index cannot place (a call through an
attribute of unknown type) leaves the answer undecided rather than guessing.
"""

from __future__ import annotations

import ast
import re
import textwrap
from collections import deque
from dataclasses import dataclass, field
from typing import Literal

from harness.engines import profile
from harness.knowledge.judge.callsites import MAX_MODULES, call_sites
from harness.knowledge.model import Finding, Ref, Status, dotted, walk
from harness.knowledge.upstream import SymbolIndex

MAX_DEPTH = 8
MAX_FUNCTIONS = 200

# Sites that fail where upstream calls their target, not where they are written: a hook or
# override is called in place of it, and a patch (setattr / assignment) or a kernel-table entry
# never raises itself — on a target gone, it is what upstream used to call that no longer runs.
_CALLED_BY_UPSTREAM = ("hook", "override", "patch", "kernel")
Reached = Literal["startup", "models", "path", "undecided"]


@dataclass
class Reach:
    """What a walk up from one upstream function found: a startup root (`chain` from the target
    up to it), the models whose construction calls it, the paths it lies on, or why undecided.
    `proof` is the upstream call site of the target on the proving chain ("relpath:line")."""

    reached: Reached
    chain: list[str] = field(default_factory=list)
    proof: str | None = None
    models: list[str] = field(default_factory=list)
    note: str = ""


@dataclass(frozen=True)
class FailureTime:
    """When one finding makes the plugin fail; `hits`: the models or paths it stops (ranking)."""

    fails_at: Literal["import", "startup", "path", "never"] | None
    reason: str
    proof: str | None = None
    hits: int = 0


def failure_time(finding: Finding, entries: dict[str, Finding], new: SymbolIndex | None, old: SymbolIndex | None) -> FailureTime:
    """When `finding` fails the plugin on `new`. `entries`: plugin callable path -> the hook or
    override finding through which upstream calls it (see `entry_points_of`). Without indexes
    only import-time failures are decided; the rest is "undecided: …"."""
    if not finding.live:
        return FailureTime("never", f"only in a dead module ({finding.file}): nothing loads it")
    if not finding.breaking:
        if finding.unverified:
            return FailureTime(None, f"undecided: cannot be decided statically ({_clip(finding.detail)})")
        return FailureTime("never", _warning(finding))
    if finding.kind == "entry_point" or (finding.scope == "module" and finding.kind not in _CALLED_BY_UPSTREAM):
        return FailureTime("import", f"at plugin load: {finding.file}:{finding.line} runs when the plugin is imported, and {profile().display} "
                           "skips the whole plugin on the error", _loader_line(new))
    entry = finding if finding.kind in _CALLED_BY_UPSTREAM else _entry(finding.runs_in, entries)
    if entry is None:
        where = finding.runs_in or f"{finding.file}:{finding.line}"
        return FailureTime(None, f"undecided: {where} is called by the plugin's own code, not by a hook, patch or override upstream calls")
    return _upstream_time(entry, finding, new, old)


def entry_points_of(findings: list[Finding]) -> dict[str, Finding]:
    """Plugin callable path -> the hook, patch or override finding upstream calls it through."""
    return {f.runs_in: f for f in findings if f.kind in ("hook", "override", "patch") and f.runs_in}


def _entry(runs_in: str | None, entries: dict[str, Finding]) -> Finding | None:
    """The hook, patch or override whose callable (or an enclosing one) is `runs_in`."""
    path = runs_in
    while path:
        if path in entries:
            return entries[path]
        path = path.rpartition(".")[0]
    return None


def _upstream_time(entry: Finding, finding: Finding, new: SymbolIndex | None, old: SymbolIndex | None) -> FailureTime:
    # a target gone from the new release: the plugin's behaviour is lost where the old release called it
    gone = entry.status in (Status.missing, Status.not_on_base)
    index = old if gone else new
    if index is None:
        return FailureTime(None, f"undecided: {entry.target} not walked (no upstream index)")
    found = index.resolve(entry.target)
    if not found.ok or found.ref.kind not in ("function", "class"):
        return FailureTime(None, f"undecided: {entry.target} does not resolve to a function on that release")
    via = "" if entry is finding else f" (through the {entry.kind} on {_short(entry.target)} at {entry.file}:{entry.line})"
    lost = f" (where the old release called {_short(entry.target)}: the plugin's code no longer runs there)" if gone else ""
    reach = upstream_reach(index, found.ref)
    if reach.reached == "startup":
        chain = " → ".join(_short(p) for p in reversed(reach.chain))
        return FailureTime("startup", f"at engine start, for every model: {chain}{lost}{via}", reach.proof, 1000)
    if reach.reached == "models":
        names = ", ".join(m.removeprefix(profile().models) for m in reach.models)
        return FailureTime("startup", f"at engine start, building {len(reach.models)} model(s): {names}{lost}{via}", reach.proof,
                           len(reach.models))
    if reach.reached == "path":
        return FailureTime("path", f"on the path of {reach.note}{lost}{via}", reach.proof, max(1, len(reach.models)))
    return FailureTime(None, f"undecided: {reach.note}{via}", reach.proof)


def upstream_reach(index: SymbolIndex, target: Ref) -> Reach:
    """Walk the callers of `target` (a function or class) upward in `index`'s release until a
    startup root; memoised per index. See the module docstring for the rules."""
    memo = index.memo.setdefault("upstream_reach", {})
    if target not in memo:
        memo[target] = _walk(index, target)
    return memo[target]


def _walk(index: SymbolIndex, target: Ref) -> Reach:
    queue = deque([(target, [target.path], None)])
    seen = {target}
    models: set[str] = set()
    paths: dict[str, str | None] = {}  # a path no root reaches -> the call site of the target on it
    unsure: list[str] = []
    model_proof = None
    while queue:
        node, chain, proof = queue.popleft()
        if node.path in profile().startup_roots:
            return Reach("startup", chain, proof)
        if node.module.startswith(profile().models):
            if node.kind == "class" or node.qualname.endswith(".__init__"):
                models.add(node.module)
                model_proof = model_proof or proof
            else:  # the target itself a model's: its definition proves the path
                paths.setdefault(f"the {node.module.removeprefix(profile().models)} model ({_short(node.path)})", proof or _defined_at(index, node))
            continue
        if len(chain) > MAX_DEPTH or len(seen) > MAX_FUNCTIONS:
            unsure.append(f"the walk stopped at {_short(node.path)} (bound)")
            continue
        callers, doubt = _callers(index, node)
        if doubt:
            unsure.append(doubt)
        if not callers and not doubt and node != target:
            paths.setdefault(_short(node.path), proof)
        for site, caller in callers:
            if caller is None:  # a module-level call: runs when that upstream module is imported
                unsure.append(f"{site} calls it at module level")
            elif caller not in seen:
                seen.add(caller)
                queue.append((caller, [*chain, caller.path], proof or site))
    if models:
        return Reach("models", [], model_proof, sorted(models))
    if unsure:
        return Reach("undecided", [], None, [], "; ".join(dict.fromkeys(unsure))[:300])
    if paths:
        first = next(iter(paths))
        return Reach("path", [], paths[first], [], ", ".join(paths)[:300])
    return Reach("undecided", [], None, [], f"no upstream caller of {_short(target.path)} found (called dynamically?)")


def _callers(index: SymbolIndex, node: Ref) -> tuple[list[tuple[str, Ref | None]], str | None]:
    """(call site, enclosing upstream function or None at module level) for each call of `node`,
    and why some calls could not be placed (None: all placed)."""
    if node.kind == "class" or node.qualname.endswith(".__init__"):
        cls = node if node.kind == "class" else Ref("class", node.module, node.qualname.rpartition(".")[0])
        return _constructions(index, cls)
    if node.kind != "function":
        return [], f"{node.path} is not a function"
    sites = call_sites(index, node)
    doubt = None
    if sites.unsure and not sites.calls:
        doubt = f"{_short(node.path)} is called where the index cannot place the receiver ({sites.unsure[0].where})"
    return [(s.where, _enclosing(index, s.path, s.line)) for s in sites.calls], doubt


def _constructions(index: SymbolIndex, cls: Ref) -> tuple[list[tuple[str, Ref | None]], str | None]:
    """Where `cls` is constructed: `Name(…)` / `mod.Name(…)` that resolve to it in their module.
    Read from the source text, not parsed: the candidate modules are model files, large, and a
    walk meets many of them."""
    name = cls.qualname.rsplit(".", 1)[-1]
    candidates = index.modules_calling(name, bare=True)
    if len(candidates) > MAX_MODULES:
        return [], f"{len(candidates)} modules call a '{name}(': not scanned"
    pattern = re.compile(rb"^(?P<head>[^\n#]*?)(?<![\w.])(?P<call>(?:\w+\.)*" + re.escape(name.encode()) + rb")[ \t]*\(", re.MULTILINE)
    found = []
    for module in candidates:
        text = index.sources()[module]
        relpath = index.files[module][0]
        for match in pattern.finditer(text):
            if re.search(rb"\b(class|def)[ \t]+$", match.group("head")):
                continue  # the class statement itself, or a def of that name
            resolved = index.resolve_in_scope(module, match.group("call").decode())
            if resolved.ok and resolved.ref == cls:
                line = text.count(b"\n", 0, match.start()) + 1
                found.append((f"{relpath}:{line}", _enclosing(index, relpath, line)))
    return found, None


def _enclosing(index: SymbolIndex, relpath: str, line: int) -> Ref | None:
    """The module-level function or class method whose body holds `line` (None: module level),
    from the index's table of the module (no parse)."""
    modules = index.memo.setdefault("module_of_relpath", {})
    if not modules:
        modules.update({rel: module for module, (rel, _) in index.files.items()})
    module = modules.get(relpath)
    table = index.table(module) if module is not None else None
    if table is None:
        return None
    inner = None
    for qualname, info in table.functions.items():
        if qualname.count(".") <= 1 and info.lineno <= line <= info.end_lineno and (inner is None or info.lineno >= inner[0]):
            inner = (info.lineno, qualname)
    if inner is not None and "." in inner[1] and inner[1].split(".")[0] not in table.classes:
        return None  # a function nested in a function: its outer one is not known here
    return Ref("function", module, inner[1]) if inner else None


def _defined_at(index: SymbolIndex, ref: Ref) -> str | None:
    info = index.function_info(ref) if ref.kind == "function" else None
    return f"{index.files[ref.module][0]}:{info.lineno}" if info is not None and ref.module in index.files else None


def _loader_line(index: SymbolIndex | None) -> str | None:
    """`sglang/srt/plugins/__init__.py:LINE` of the loader's `ep.load()` inside a `try` that
    catches Exception (what skips the whole plugin), in the release; None when it has none."""
    loader = profile().plugin_loader_module
    tree = index.tree(loader) if index is not None else None
    for node in walk(tree) if tree is not None else ():
        if isinstance(node, ast.Try) and any(h.type is None or dotted(h.type) in ("Exception", "BaseException") for h in node.handlers):
            for inner in (n for statement in node.body for n in walk(statement)):
                if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute) and inner.func.attr == "load":
                    return f"{index.files[loader][0]}:{inner.lineno}"
    return None


def _warning(finding: Finding) -> str:
    where = f"{finding.file}:{finding.line}"
    if finding.guard is not None and finding.guard.outcome in ("skipped", "caught"):
        return f"guarded at {where} ({finding.guard.condition}: {finding.guard.outcome} on this release)"
    return {
        Status.deprecated: f"works through upstream's deprecation shim ({where}) until upstream removes it",
        Status.body_changed: f"upstream changed the body the plugin relies on at {where}: review its behaviour",
        Status.signature_changed: f"the signature changed, and the plugin's use at {where} still fits",
        Status.moved: f"still resolves through a re-export ({where}): retarget it",
        Status.inherited: f"resolves only through a base class now ({where}): retarget it",
    }.get(finding.status, f"{finding.status.value.replace('_', ' ')} at {where}, and nothing fails")


def _short(path: str) -> str:
    return ".".join(path.split(".")[-2:])


def _clip(text: str | None) -> str:
    """The reason, kept to about two lines and cut only between words (a name cut mid-way reads
    as another name)."""
    return textwrap.shorten(text or "no detail", width=240, placeholder=" …")
