"""The Feature Diff between two upstream versions, and what it means for one plugin.

Files are compared by content hash first; only files that changed are parsed (and those
tables are cached per version), so a whole-release diff costs what actually changed. The symbol
changes are cached per pair of versions as msgpack data (never a pickle: see harness.knowledge.upstream.index).
"""

from __future__ import annotations

import re
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Literal, NamedTuple

import msgspec
from pydantic import BaseModel, Field

from harness.knowledge.judge import (
    Judge,
    dependencies,
    inherited_from,
    missing_bases,
    prefetch,
    reported,
    resolve_dependency,
)
from harness.knowledge.model import (
    BREAKING,
    Dependency,
    Finding,
    Resolution,
    Status,
    risk_of,
    signature_text,
)
from harness.knowledge.products.mapping import git_head
from harness.knowledge.scan import scan_plugin
from harness.knowledge.upstream import CACHE_VERSION as INDEX_CACHE_VERSION
from harness.knowledge.upstream import (
    SymbolIndex,
    UpstreamSource,
    cache_dir,
    load_index,
    module_name,
    read_cache_file,
    write_cache_file,
)

ChangeKind = Literal["added", "removed", "signature_changed", "body_changed", "moved", "moved_to_base"]


class SymbolChange(BaseModel):
    symbol: str  # dotted path (new path for moves)
    change: ChangeKind
    kind: Literal["function", "class", "module"]
    old_location: str | None = None  # relpath:line
    new_location: str | None = None
    detail: str | None = None
    commits: list[str] = Field(default_factory=list)


class FeatureDiff(BaseModel):
    from_label: str
    to_label: str
    from_fingerprint: str
    to_fingerprint: str
    generated_at: str
    files: dict[str, int]
    changes: list[SymbolChange]
    plugin: str | None = None
    plugin_commit: str | None = None
    findings: list[Finding] = Field(default_factory=list)

    @property
    def impacted(self) -> list[Finding]:
        """What the upgrade does to the plugin: findings with something to port that --from
        allowed (a plugin's own platform method is not one, nor a dependency already broken on --from)."""
        return [f for f in self.findings if f.status not in (Status.ok, Status.extension) and not f.preexisting]

    @property
    def preexisting(self) -> list[Finding]:
        """Dependencies already broken on --from and still not fine on --to: listed apart."""
        return [f for f in self.findings if f.preexisting]

    def change_counts(self, depth: int = 3) -> list[tuple[str, Counter]]:
        """Changes per package (first `depth` components), biggest first — the diff at a glance."""
        per: dict[str, Counter] = {}
        for change in self.changes:
            package = ".".join(change.symbol.split(".")[:depth])
            per.setdefault(package, Counter())[change.change] += 1
        return sorted(per.items(), key=lambda item: -sum(item[1].values()))

    def checklist(self) -> list[str]:
        """One migration step per impact of the upgrade (preexisting problems are listed apart)."""
        return [migration_step(f) for f in self.findings if f.status != Status.ok and not f.preexisting]


def diff_upstreams(
    old: UpstreamSource,
    new: UpstreamSource,
    plugin: Path | None = None,
    progress: Callable[[str, int, int], None] | None = None,
    entries: list[str] | None = None,
) -> FeatureDiff:
    """Symbol changes from `old` to `new` and, with a plugin, one finding per dependency.

    `progress(label, done, total)` is called while changed files are parsed. Raises
    HarnessError for a plugin path that is not a plugin (see scan_plugin)."""
    old_index, new_index = load_index(old), load_index(new)
    files, changes = _upstream_changes(old_index, new_index, progress)
    result = FeatureDiff(
        from_label=old.label,
        to_label=new.label,
        from_fingerprint=old.fingerprint,
        to_fingerprint=new.fingerprint,
        generated_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        files=files,
        changes=changes,
    )
    if plugin is not None:
        scan = scan_plugin(Path(plugin), new_index, entries)
        prefetch(new_index, scan)
        prefetch(old_index, scan)
        old_judge, new_judge = Judge(old_index, scan, successors=False), Judge(new_index, scan)
        new_judge.before = old_index  # a patch of a name --from lacked too adds it
        findings = []
        for dep in dependencies(scan):
            finding = _judge_pair(dep, old_judge, new_judge)
            if finding is not None and reported(finding):
                findings.append(_mark_preexisting(finding, dep, old_judge))
        new_judge.fill_successors()
        if old.kind == "git" and new.kind == "git" and old.git_repo == new.git_repo:
            for finding in findings:
                if finding.status != Status.ok:
                    finding.commits = _commits_touching(finding, old, new, old_index, new_index)
        result.plugin = str(scan.root)
        result.plugin_commit = git_head(scan.root)
        result.findings = sorted(findings, key=lambda f: (-f.risk, f.file or "", f.line or 0, f.target))
    old_index.save()
    new_index.save()
    return result


# ----------------------------------------------------------------------------- upstream changes

_DIFF_CACHE_VERSION = 3  # 3: msgpack, not pickle
# A cached SymbolChange: its fields in order, with their types, so decoding checks each row.
_ChangeRow = NamedTuple("_ChangeRow", [(name, info.annotation) for name, info in SymbolChange.model_fields.items()])
_DIFF_DECODER = msgspec.msgpack.Decoder(tuple[dict[str, int], list[_ChangeRow]])


def _upstream_changes(old_index: SymbolIndex, new_index: SymbolIndex, progress) -> tuple[dict[str, int], list[SymbolChange]]:
    """Symbol changes between two versions; cached per pair of fingerprints (they never change).
    A cache file that does not decode as that (torn, planted) is recomputed and replaced."""
    old, new = old_index.source, new_index.source
    cache_file = cache_dir() / "diffs" / f"{old.fingerprint}--{new.fingerprint}.v{INDEX_CACHE_VERSION}.{_DIFF_CACHE_VERSION}.msgpack"
    try:
        files, rows = _DIFF_DECODER.decode(read_cache_file(cache_file) or b"")
        return files, [SymbolChange.model_construct(**row._asdict()) for row in rows]
    except msgspec.DecodeError:
        pass
    changed = sorted(p for p in old.files.keys() & new.files.keys() if old.files[p] != new.files[p])
    removed = sorted(old.files.keys() - new.files.keys())
    added = sorted(new.files.keys() - old.files.keys())

    def report(label):
        return (lambda done, total: progress(label, done, total)) if progress else None

    old_index.index_all(only={module_name(p)[0] for p in changed + removed}, progress=report(f"parsing {old.label}"))
    new_index.index_all(only={module_name(p)[0] for p in changed + added}, progress=report(f"parsing {new.label}"))
    changes = _symbol_changes(old_index, new_index, changed, removed, added)
    files = {"changed": len(changed), "added": len(added), "removed": len(removed), "unchanged": len(old.files) - len(changed) - len(removed)}
    rows = [_ChangeRow(*(getattr(c, f) for f in SymbolChange.model_fields)) for c in changes]
    write_cache_file(cache_file, msgspec.msgpack.encode((files, rows)))
    return files, changes



def _symbol_changes(old_index: SymbolIndex, new_index: SymbolIndex, changed, removed, added) -> list[SymbolChange]:
    changes: list[SymbolChange] = []
    gone: dict[str, list[tuple[str, str]]] = {}  # short name -> [(module, qualname)] removed
    born: dict[str, list[tuple[str, str]]] = {}
    for relpath in changed + removed + added:
        module = module_name(relpath)[0]
        before = old_index.table(module) if relpath not in added else None
        after = new_index.table(module) if relpath not in removed else None
        old_functions = before.functions if before else {}
        new_functions = after.functions if after else {}
        old_classes = before.classes if before else {}
        new_classes = after.classes if after else {}
        for qualname in sorted(old_functions.keys() | new_functions.keys()):
            a, b = old_functions.get(qualname), new_functions.get(qualname)
            path = f"{module}.{qualname}"
            if a and b:
                if a.params != b.params:
                    changes.append(SymbolChange(symbol=path, change="signature_changed", kind="function", old_location=f"{relpath}:{a.lineno}", new_location=f"{relpath}:{b.lineno}", detail=f"{signature_text(a.params)} -> {signature_text(b.params)}"))
                elif a.body_hash != b.body_hash:
                    changes.append(SymbolChange(symbol=path, change="body_changed", kind="function", old_location=f"{relpath}:{a.lineno}", new_location=f"{relpath}:{b.lineno}"))
            elif a:
                gone.setdefault(qualname.rsplit(".", 1)[-1], []).append((module, qualname))
            else:
                born.setdefault(qualname.rsplit(".", 1)[-1], []).append((module, qualname))
        for qualname in sorted(old_classes.keys() ^ new_classes.keys()):
            (gone if qualname in old_classes else born).setdefault(qualname.rsplit(".", 1)[-1], []).append((module, qualname))
    changes.extend(_pair_moves(old_index, new_index, gone, born))
    return sorted(changes, key=lambda c: (c.symbol, c.change))


def _pair_moves(old_index, new_index, gone, born) -> list[SymbolChange]:
    """Removed+added pairs with the same name are moves; a removed method that now resolves
    through a base class moved into the base."""
    changes = []
    for name, removed_here in sorted(gone.items()):
        candidates = list(born.get(name, []))
        for module, qualname in removed_here:
            old_path = f"{module}.{qualname}"
            old_loc = _location(old_index, module, qualname)
            kind = "class" if qualname in (old_index.table(module).classes if old_index.table(module) else {}) else "function"
            if "." in qualname:
                now = new_index.resolve(old_path)
                if now.ok and now.owner and now.ref.kind != "external" and now.owner != old_path.rsplit(".", 1)[0]:
                    changes.append(SymbolChange(symbol=old_path, change="moved_to_base", kind=kind, old_location=old_loc, new_location=_location(new_index, now.ref.module, now.ref.qualname), detail=f"now defined on {now.owner}"))
                    continue
            match = _best_match(old_index, new_index, module, qualname, candidates)
            if match:
                candidates.remove(match)
                new_path = f"{match[0]}.{match[1]}"
                changes.append(SymbolChange(symbol=new_path, change="moved", kind=kind, old_location=old_loc, new_location=_location(new_index, *match), detail=f"from {old_path}"))
            else:
                changes.append(SymbolChange(symbol=old_path, change="removed", kind=kind, old_location=old_loc))
        born[name] = candidates
    for name, added_here in sorted(born.items()):
        for module, qualname in added_here:
            kind = "class" if qualname in (new_index.table(module).classes if new_index.table(module) else {}) else "function"
            changes.append(SymbolChange(symbol=f"{module}.{qualname}", change="added", kind=kind, new_location=_location(new_index, module, qualname)))
    return changes


def _best_match(old_index, new_index, module, qualname, candidates):
    """A candidate with the same body (or, failing that, the same signature and owner shape)."""
    before = old_index.table(module).functions.get(qualname)
    depth = qualname.count(".")
    same_depth = [(c, new_index.table(c[0]).functions.get(c[1])) for c in candidates if c[1].count(".") == depth]
    for candidate, after in same_depth:
        if before and after and before.body_hash == after.body_hash:
            return candidate
    for candidate, after in same_depth:
        if (before is None and after is None) or (before and after and before.params == after.params):
            return candidate
    return None


def _location(index: SymbolIndex, module: str, qualname: str) -> str | None:
    table = index.table(module)
    if table is None:
        return None
    info = table.functions.get(qualname) or table.classes.get(qualname)
    return f"{table.path}:{info.lineno}" if info else table.path


# ----------------------------------------------------------------------------- plugin impact


def _judge_pair(dep: Dependency, old: Judge, new: Judge) -> Finding | None:
    """One status per plugin dependency, from how its target changed between the versions."""
    if dep.kind == "architecture":  # judged against --from: what it produced or listed
        finding = new.judge_architecture(dep, reference=old.index)
        return new.apply_conditions(finding, dep) if finding is not None else None
    finding = new.judge(dep)
    if dep.kind in ("override", "subclass"):
        return _judge_member_pair(dep, finding, old, new)
    if finding is None:
        return None
    # a key's successor is a close key; a field has none (a same-named member elsewhere is no evidence)
    if finding.status in (Status.missing, Status.not_on_base) and dep.kind not in ("registry_key", "field"):
        # with --from known, the evidence of a successor is weighed again (the new side alone knew less)
        return new.apply_conditions(new.successor_for(finding, finding.target, old.index), dep)
    if finding.status not in (Status.ok, Status.inherited) or dep.kind in ("file", "entry_point", "model", "call", "registry_key"):
        return new.apply_conditions(finding, dep)
    before = _resolve(dep, finding.target, old.index)
    after = _resolve(dep, finding.target, new.index)
    if not before.ok:
        finding.detail = f"did not resolve before the upgrade; {finding.detail or 'resolves now'}"
        return new.apply_conditions(finding, dep)
    if dep.kind in ("server_arg", "field"):
        return new.apply_conditions(finding, dep)  # set on / read from the instance: where it is declared does not matter
    aspects = _compare(before, after, old.index, new.index)
    if dep.kind in ("import", "reference"):
        aspects.pop("body", None)  # the plugin names it; a changed body is upstream's business
    status = next(
        (s for s, key in ((Status.signature_changed, "signature"), (Status.body_changed, "body"), (Status.inherited, "inherited"), (Status.moved, "moved")) if key in aspects),
        Status.ok,
    )
    finding.status = status
    finding.detail = "; ".join(aspects.values()) or finding.detail
    if status == Status.inherited:
        finding.defined_in = after.owner
    elif status == Status.moved:
        finding.defined_in = after.ref.path
    finding.risk = risk_of(dep, status)
    if dep.hook_type == "REPLACE" and status == Status.body_changed:
        finding.detail = (f"upstream body changed under the plugin's REPLACE hook: a copy of it would be stale "
                          f"(`harness port` tells whether the hook copies it, and merges); {finding.detail}")
    if dep.kind == "patch" and dep.how in ("setattr", "assign") and status == Status.moved:
        # Unlike HookRegistry, a plain setattr does not propagate: rebinding the name in the
        # re-exporting module leaves the defining module (and its callers) unpatched.
        finding.risk = risk_of(dep, Status.signature_changed)
        finding.detail = f"the patch rebinds a re-export only; {after.ref.module} and its callers keep the original; {finding.detail}"
    return new.apply_conditions(finding, dep)


def _mark_preexisting(finding: Finding, dep: Dependency, old: Judge) -> Finding:
    """A dependency that --from already broke (missing, not on the base, never applied, or a
    certain misfit) is `preexisting`: the plugin's problem before the upgrade, not its impact."""
    if finding.status in (Status.ok, Status.extension):
        return finding
    before = old.judge(dep)
    if before is None:
        return finding
    before = old.apply_conditions(before, dep)
    if before.breaking or before.status in BREAKING:
        finding.preexisting = True
        finding.detail = (f"already {before.status.value}{' and breaking' if before.breaking else ''} on {old.index.source.label} "
                          f"(before the upgrade); {finding.detail or ''}").rstrip("; ")
    return finding


def _judge_member_pair(dep: Dependency, finding: Finding | None, old: Judge, new: Judge) -> Finding | None:
    """Overrides and self./super() members: gone from the bases, or their base signature changed."""
    before = old.judge(dep)
    if finding is None or finding.status is Status.extension:  # not an upstream member on the new side
        if before is None or before.status not in (Status.ok, Status.signature_changed, Status.inherited):
            return finding and new.apply_conditions(finding, dep)  # the plugin's own method on both sides
        if missing_bases(new.upstream_mro(dep.plugin_class)):
            return None  # the base itself is gone (or its import fails): that finding says so
        finding = before.model_copy(update={
            "status": Status.not_on_base, "breaking": True, "defined_in": None,
            "detail": f"{dep.member} was defined on {before.defined_in} in {old.index.source.label}; {new.index.source.label} no longer defines it, so upstream no longer calls the override",
            "risk": risk_of(dep, Status.not_on_base),
        })
    elif finding.status is Status.ok and before is not None and before.defined_in and finding.defined_in:
        old_info = _function(old.index, before.defined_in)
        new_info = _function(new.index, finding.defined_in)
        if old_info and new_info and old_info.params != new_info.params:
            finding.status = Status.signature_changed
            finding.detail = f"base signature changed ({signature_text(old_info.params)} -> {signature_text(new_info.params)}); the plugin's use still fits"
            finding.risk = risk_of(dep, Status.signature_changed)
    if finding.status in (Status.missing, Status.not_on_base):  # with --from known, its evidence is weighed again
        new.successor_for(finding, finding.target, old.index)
    return new.apply_conditions(finding, dep)


def _function(index: SymbolIndex, path: str):
    resolution = index.resolve(path)
    return index.function_info(resolution.ref) if resolution.ok and resolution.ref.kind == "function" else None


def _resolve(dep: Dependency, target: str, index: SymbolIndex) -> Resolution:
    if dep.kind == "hook":
        return index.resolve_hook_target(target)
    return resolve_dependency(dep, index) if target == dep.target else index.resolve(target)


def _compare(before: Resolution, after: Resolution, old_index: SymbolIndex, new_index: SymbolIndex) -> dict[str, str]:
    aspects: dict[str, str] = {}
    a_info = old_index.function_info(before.ref) if before.ref.kind == "function" else None
    b_info = new_index.function_info(after.ref) if after.ref.kind == "function" else None
    if a_info and b_info:
        if a_info.params != b_info.params:
            aspects["signature"] = f"signature {signature_text(a_info.params)} -> {signature_text(b_info.params)}"
        elif a_info.body_hash != b_info.body_hash:
            aspects["body"] = f"body of {after.ref.path} changed"
    if before.owner and after.owner and before.owner != after.owner and inherited_from(after.target, after, new_index):
        aspects["inherited"] = f"no longer defined on {after.target.rsplit('.', 1)[0]}; inherited from {after.owner}"
    elif before.ref.module != after.ref.module and before.ref.kind not in ("external", "dynamic"):
        aspects["moved"] = f"now defined in {after.ref.module} (was {before.ref.module}); the old path still resolves"
    return aspects


def migration_step(finding: Finding) -> str:
    where = f"{finding.file}:{finding.line}"
    action = {
        Status.missing: "find the new landing point" + (f" — likely `{finding.successor}`" if finding.successor else "") + {"import": "; the import fails", "hook": "; the hook is skipped at run time until then"}.get(finding.kind, ""),
        Status.deprecated: "port to " + (f"`{finding.successor}`" if finding.successor else "the new interface") + " before the legacy shim is removed (it still works, with a warning)",
        Status.never_applied: "register the hook while the plugin loads (the entry point's callable), not inside another hook",
        Status.duplicate: "register one class per key: give the second its own `name=`, or drop one of the registrations",
        Status.not_on_base: "port the override" + (f" to `{finding.successor}`" if finding.successor else "") + " or drop it: the base no longer defines it, so upstream calls it at most through a legacy shim",
        Status.dead_override: "remove the override" + (f" (or port it to `{finding.successor}`)" if finding.successor else "") + ": no base defined it on the release the plugin was written against either, so upstream never called it",
        Status.extension: "nothing to port: the plugin's own method, which no upstream base declares or calls",
        Status.signature_changed: "update to the new signature" + (f" ({finding.detail})" if finding.detail else ""),
        Status.body_changed: "`harness port` merges upstream's change into the hook if it copies the upstream body; if it is the plugin's own code, check it still does what upstream now does" if finding.hook_type == "REPLACE" else "review the upstream body change for behaviour the hook relies on",
        Status.inherited: f"retarget to `{finding.defined_in}` (the old path still resolves through inheritance)",
        Status.moved: f"retarget to `{finding.defined_in}` (the old path still resolves through a re-export)",
        Status.unknown: "make the target checkable (a static string on a class in the upstream source) or verify it by hand",
    }.get(finding.status, "review")
    dead = " (dead module: delete or revive it)" if not finding.live else ""
    if finding.guard is not None and finding.guard.outcome in ("skipped", "caught"):
        dead += f" (on this version its guard `{finding.guard.condition}` {'skips it' if finding.guard.outcome == 'skipped' else 'handles the failure'})"
    return f"[ ] `{finding.target}` — {finding.kind}{' ' + finding.hook_type if finding.hook_type else ''} at {where}: **{finding.status.value}**{dead} → {action}"


def _commits_touching(finding: Finding, old: UpstreamSource, new: UpstreamSource, old_index: SymbolIndex, new_index: SymbolIndex) -> list[str]:
    """Commits between the two refs that touched the target: its lines where it still exists
    (`git log -L`), else the file it lived in."""
    import git  # cost: gitpython loads only for git upstreams

    repo = git.Repo(new.git_repo)
    span = f"{old.git_commit}..{new.git_commit}"
    for index, source, range_args in ((new_index, new, True), (old_index, old, False)):
        resolution = index.resolve(finding.target)
        if not resolution.ok or resolution.ref.kind not in ("function", "class"):
            continue
        table = index.table(resolution.ref.module)
        info = table.functions.get(resolution.ref.qualname) or table.classes.get(resolution.ref.qualname)
        path = f"{source.repo_prefix}{table.path}"
        args = ["--no-patch", f"-L{info.lineno},{info.end_lineno}:{path}"] if range_args else ["--", path]
        try:
            log = repo.git.log("--format=%H %s", span, *args)
        except git.GitCommandError:
            continue
        return [f"{line[:10]} {line[41:]}" for line in log.splitlines() if re.match(r"^[0-9a-f]{40} ", line)]
    return []


def write_feature_diff(diff: FeatureDiff, out_dir: Path) -> tuple[Path, Path]:
    import yaml  # cost: yaml and jinja load only when files are written

    from harness.util.templates import render as render_markdown

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    yaml_path, md_path = out_dir / "feature-diff.yaml", out_dir / "feature-diff.md"
    yaml_path.write_text(yaml.safe_dump(diff.model_dump(mode="json"), sort_keys=False, width=120))
    md_path.write_text(render_markdown("feature_diff.md.j2", diff=diff))
    return yaml_path, md_path
