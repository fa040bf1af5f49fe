"""Features a person can triage: the Feature Diff regrouped into units an engineer ports.

A whole-release diff has tens of thousands of changed symbols; a plugin depends on a handful.
Kinds of feature (ranked by risk, highest first, after the impacted ones that fail):

    impacted          the plugin's impacted dependencies, one feature per upstream change a
                      person decides once, listing every plugin site: the commit that changed
                      them (git upstreams), else a move or rename (every name from one old
                      module or class to one new one: a family), else the one function whose
                      signature or body changed, else the upstream owner of what was removed
    platform_surface  changes to SRTPlatform / DeviceMixin and the hook registry a plugin is
                      expected to follow even when nothing breaks (methods added, changed or
                      removed), grouped by the word their names share; server arguments the
                      new release gives per-device defaults; new deprecation shims, with their
                      removal horizon (harness.knowledge.judge.surface)
    upstream_change   everything else: by commit when both upstreams are git (subject and PR
                      number as the name), else by module and kind of change
    preexisting       the plugin's dependencies already broken on the old upstream, grouped as
                      `impacted` is: the plugin's problems, listed apart, not the upgrade's work

Each feature carries a one-line `why` it matters to this plugin. Impacted features also say when
the plugin fails on the new release (harness.knowledge.judge.timing: at import, at engine start,
on a path, or never), with the reason and the upstream call site that proves it; they are
ranked by that first (import, startup — the more models stopped the earlier —, path, undecided,
never), then by risk.
"""

from __future__ import annotations

import re
import textwrap
from collections import Counter, defaultdict
from collections.abc import Callable
from typing import Literal

import msgspec
from pydantic import BaseModel, Field

from harness.engines import profile
from harness.knowledge.judge import (
    FailureTime,
    Shim,
    deprecation_shims,
    entry_points_of,
    failure_time,
    platform_defaults,
    server_arg_fields,
)
from harness.knowledge.model import BREAKING, Finding, Ref, Status
from harness.knowledge.products.diffing import FeatureDiff, SymbolChange
from harness.knowledge.upstream import SymbolIndex, UpstreamSource, load_index

FeatureKind = Literal["impacted", "platform_surface", "upstream_change", "preexisting"]
# When the plugin fails on the new release (issue 19's ranking): at import or plugin load
# (SGLang skips the whole plugin), at engine start for every model, on one model or feature
# path, or never (a warning).
FailsAt = Literal["import", "startup", "path", "never"]

# Words too common in platform method names to name a feature by.
_STOPWORDS = {"get", "set", "cls", "fn", "is", "support", "supports", "default", "init", "the", "of", "to"}
# Statuses one function's change explains by itself: one feature per target, every site listed.
_PER_TARGET = {Status.signature_changed, Status.body_changed, Status.deprecated, Status.moved, Status.inherited}
# Ranking by when it fails: a feature that fails earlier, for more of the engine, comes first.
_FAILS_ORDER = {"import": 0, "startup": 1, "path": 2, None: 3, "never": 4}
_SURFACE_RISK = {"removed": 30, "signature_changed": 30, "moved": 25, "moved_to_base": 25, "added": 20, "body_changed": 10}


class Feature(BaseModel):
    """One unit of porting work: what changed upstream, what of the plugin it touches, why it matters."""

    id: str  # slug, usable with `harness run --feature`
    title: str
    kind: FeatureKind
    risk: int
    why: str  # one line: why it matters to this plugin
    targets: list[str]  # the upstream symbols behind it
    breaking: bool = False  # a live dependency fails on the new upstream
    unverified: bool = False  # a live dependency could not be decided statically
    findings: list[Finding] = Field(default_factory=list)
    changes: int = 0  # upstream symbol changes behind it
    commit: str | None = None  # "sha subject" when grouped by commit
    fails_at: FailsAt | None = None  # None: not decided (upstream changes, platform surface)
    fails_reason: str | None = None  # one line: why it fails then
    proof: str | None = None  # the upstream call site that proves it ("path/file.py:line")
    sites: list[str] = Field(default_factory=list)  # every plugin site it touches, "file:line"
    hits: int = 0  # models or paths it stops (ranks features failing at the same time)


def group_features(diff: FeatureDiff, old: UpstreamSource | None = None, new: UpstreamSource | None = None) -> list[Feature]:
    """The diff's features: impacted ones by when the plugin fails (import, startup — more
    models stopped first —, path, undecided, never; failure_time needs `old` and `new` to walk
    upstream callers, else only import-time failures are decided), the rest with the warnings;
    then highest risk first (ties: more changes first, then id); preexisting ones last. With two
    git upstreams of one repository, upstream changes are grouped by the commit that touched them."""
    both = old is not None and new is not None
    commit_of = _commit_of_files(old, new) if both else {}
    old_index, new_index = (load_index(old), load_index(new)) if both else (None, None)
    entries = entry_points_of(diff.findings)

    def when(finding: Finding) -> FailureTime:
        return failure_time(finding, entries, new_index, old_index)

    impacted = _impacted(diff.impacted, when, diff.changes)
    covered = {t for f in impacted for t in f.targets}
    covered |= {f"{t}.__init__" for t in covered}  # a constructor's change is its class's
    surface, rest = [], []
    for change in diff.changes:
        if change.symbol in covered or (change.detail or "").removeprefix("from ") in covered:
            continue
        (surface if change.symbol.startswith(_plugin_surface()) else rest).append(change)
    extras = _server_arg_defaults(diff, old_index, new_index) + _shims(old_index, new_index) if both else []
    if both:  # what the surface and the call walks computed is kept with the index caches
        old_index.save()
        new_index.save()
    features = impacted + _surface(surface) + extras + _other(rest, commit_of) + _impacted(diff.preexisting, when, diff.changes, "preexisting")
    seen: Counter = Counter()
    for feature in features:  # ids are unique: a second "x" becomes "x-2"
        seen[feature.id] += 1
        if seen[feature.id] > 1:
            feature.id = f"{feature.id}-{seen[feature.id]}"
    # impacted features by when they fail (the rest rank with the warnings); upstream's own
    # tests are no porting work: after everything else of the same risk; problems the old
    # release already had come last, apart from the upgrade's work
    return sorted(features, key=lambda f: (f.kind == "preexisting", _FAILS_ORDER[f.fails_at] if f.kind == "impacted" else 4,
                                           -f.hits, -f.risk, _is_test(f), -f.changes, f.id))


def _is_test(feature: Feature) -> bool:
    return bool(re.search(r"(^|[.-])tests?([.-]|$)|(^|[.-])test_", feature.id))


# ----------------------------------------------------------------------------- impacted


def _impacted(findings: list[Finding], when: Callable[[Finding], FailureTime], changes: list[SymbolChange],
              kind: FeatureKind = "impacted") -> list[Feature]:
    """One feature per upstream change behind `findings` (see the module docstring), with when
    it fails: its earliest-failing member's time, reason and proof."""
    groups: dict[tuple, list[Finding]] = defaultdict(list)
    for finding in findings:
        groups[_change_key(finding)].append(finding)
    signatures = {c.symbol: c.detail for c in changes if c.change == "signature_changed" and c.detail}
    # moved-from and moved-to modules (or classes), each named by the shortest tail no other has
    tails = _tails({p for key, members in groups.items() if key[0] == "move" for p in (key[1], *(_moved(f)[0] for f in members))})
    features = []
    for key, members in groups.items():
        members.sort(key=lambda f: (-f.risk, f.file or "", f.line or 0))
        targets = sorted({f.target for f in members})
        if key[0] == "commit":
            title, slug = key[1].split(" ", 1)[-1], key[1].split(" ", 1)[-1]
        elif key[0] == "move":
            new = key[1]
            olds = sorted({_moved(f)[0] for f in members})
            names = sorted({f.target[len(_moved(f)[0]) + 1:] for f in members if f.target != _moved(f)[0]})
            title = f"{', '.join(tails[old] for old in olds)} → {tails[new]}" + (f": {', '.join(names)}" if names else "")
            # one name moved or renamed is known by it; a family by where it went
            slug = (f"{olds[0].rsplit('.', 1)[-1]}-to-{new.rsplit('.', 1)[-1]}" if len(names) > 1
                    else (names or [new.rsplit(".", 1)[-1]])[0])
        elif key[0] == "target":
            target = key[1]
            signature = (_signature_delta(signatures.get(target) or signatures.get(f"{target}.__init__"))
                         if members[0].status is Status.signature_changed else None)
            title = f"{_short(target)}: {members[0].status.value.replace('_', ' ')}" + (f" ({signature})" if signature else "")
            slug = f"{_owner(target).rsplit('.', 1)[-1]}-{target.rsplit('.', 1)[-1]}"
        else:
            names = ", ".join(t.rsplit(".", 1)[-1] for t in targets)
            title = f"{_short(key[1])}: {names} {members[0].status.value.replace('_', ' ')}"
            slug = f"{key[1].rsplit('.', 1)[-1]}-{'-'.join(t.rsplit('.', 1)[-1] for t in targets[:2])}"
        time = min((when(f) for f in members), key=lambda t: (_FAILS_ORDER[t.fails_at], -t.hits))
        features.append(Feature(
            id=_slug(slug), title=title[:200], kind=kind, risk=max(f.risk for f in members), why=_why(members),
            targets=sorted({*targets, *(f.successor for f in members if f.successor)}),
            breaking=any(f.breaking for f in members), unverified=any(f.unverified for f in members),
            findings=members, changes=len(members), commit=key[1] if key[0] == "commit" else None,
            fails_at=time.fails_at, fails_reason=time.reason[:400], proof=time.proof, hits=time.hits,
            sites=sorted({f"{f.file}:{f.line}" for f in members if f.file}, key=_site_order),
        ))
    return features


def _change_key(finding: Finding) -> tuple:
    """The upstream change a finding comes from: its commit (git upstreams); a move or rename,
    by where it went (`_moved`: every name moved into one module or class, a renamed class with
    its methods, the methods one new method replaces); the one function that changed
    (signature, body, deprecation); else what was removed (or is unknown), by its owner."""
    if finding.commits:
        return ("commit", finding.commits[0])
    if finding.successor and finding.successor != finding.target:
        return ("move", _moved(finding)[1])
    if finding.status in _PER_TARGET:
        return ("target", finding.target, finding.status.value)
    return ("owner", _owner(finding.target), _status_class(finding.status))


def _moved(finding: Finding) -> tuple[str, str]:
    """(old prefix, new prefix) of a move or rename: target and successor less the names they
    share at the end — `a.elementwise.f` → `a.norm_rope.f` gives (a.elementwise, a.norm_rope),
    `a.B.m` → `a.C.m` gives (a.B, a.C), `a.B` → `a.C` itself."""
    old, new = finding.target.split("."), (finding.successor or finding.target).split(".")
    while len(old) > 1 and len(new) > 1 and old[-1] == new[-1]:
        old.pop()
        new.pop()
    return ".".join(old), ".".join(new)


def _signature_delta(detail: str | None) -> str | None:
    """"use_custom_allreduce removed, quant_method added" from a diff's "(old params) -> (new
    params)"; the detail itself, clipped, when the parameter names did not change."""
    if not detail or " -> " not in detail:
        return None
    before, after = (_param_names(side) for side in detail.split(" -> ", 1))
    delta = [f"{name} removed" for name in before if name not in after] + [f"{name} added" for name in after if name not in before]
    return ", ".join(delta) if delta else textwrap.shorten(detail, width=120, placeholder=" …")


def _param_names(signature: str) -> list[str]:
    """Parameter names of "(a, b: int = f(1, 2), *, c)": commas inside brackets do not split."""
    names, depth, start = [], 0, 0
    text = signature.strip().removeprefix("(").removesuffix(")")
    for at, char in enumerate(text + ","):
        depth += char in "([{"
        depth -= char in ")]}"
        if char == "," and depth == 0:
            name = re.match(r"\s*\**(\w+)", text[start:at])
            if name:
                names.append(name.group(1))
            start = at + 1
    return names


def _tails(paths: set[str]) -> dict[str, str]:
    """Each dotted path's shortest tail (two components at least) that no other path shares:
    `dsv4.elementwise` unless another module is also `….dsv4.elementwise`."""
    found = {}
    for path in paths:
        parts = path.split(".")
        size = min(2, len(parts))
        while size < len(parts) and any(other != path and other.split(".")[-size:] == parts[-size:] for other in paths):
            size += 1
        found[path] = ".".join(parts[-size:])
    return found


def _site_order(site: str) -> tuple[str, int]:
    file, _, line = site.rpartition(":")
    return file, int(line) if line.isdigit() else 0


def _status_class(status: Status) -> str:
    return "breaks" if status in BREAKING else status.value


def _why(members: list[Finding]) -> str:
    top = members[0]
    where = f"{top.file}:{top.line}" + (f" (+{len(members) - 1} more)" if len(members) > 1 else "")
    kind = f"{top.kind}{' ' + top.hook_type if top.hook_type else ''}"
    if all(f.preexisting for f in members):
        if not any(f.live for f in members):  # missing on the old release too, but nothing loads it
            return f"already {top.status.value.replace('_', ' ')} before the upgrade, only in a dead module: its {kind} at {where} (nothing loads it)"
        return f"already broken before the upgrade: its {kind} at {where} fails on the old release too ({top.status.value})"
    if any(f.breaking for f in members):
        top = next(f for f in members if f.breaking)
        what = {
            Status.missing: "will not resolve (ImportError / AttributeError; a hook is skipped)",
            Status.not_on_base: "is no longer called by upstream",
            Status.never_applied: f"is registered after {profile().display} applies hooks",
            Status.duplicate: "registers a second class under a key the registry asserts is new (AssertionError while the plugin loads)",
        }.get(top.status, top.status.value.replace("_", " "))
        return f"breaks the plugin: its {top.kind} at {top.file}:{top.line} {what}"
    if any(f.unverified for f in members):
        return f"cannot be checked statically: the plugin's {kind} at {where} needs a check by hand"
    if not any(f.live for f in members):
        return f"only in a dead module ({where}): delete or revive it"
    reasons = {
        Status.deprecated: f"works through upstream's legacy shim, with a deprecation warning, until upstream removes it ({kind} at {where})",
        Status.body_changed: (f"upstream changed what the plugin's REPLACE hook at {where} replaces: stale if the hook copies it (harness port)" if top.hook_type == "REPLACE"
                              else f"upstream changed the body its {kind} at {where} wraps: review the behaviour it relies on"),
        Status.signature_changed: f"the signature its {kind} at {where} relies on changed; the plugin's use still fits",
        Status.moved: f"its {kind} at {where} still resolves through a re-export: retarget it",
        Status.inherited: f"its {kind} at {where} resolves only through a base class now: retarget it",
        Status.missing: f"its {kind} at {where} will not resolve, but a guard or handler covers it on this version",
        Status.not_on_base: f"its {kind} at {where} is no longer called upstream, but a guard covers it on this version",
        Status.dead_override: f"its {kind} at {where} overrides a method upstream did not call on the release the plugin was written against either: dead code to remove",
        Status.extension: (f"its {kind} at {where} adds a name of the plugin's own to upstream (upstream never had it)" if top.kind == "patch"
                           else f"its {kind} at {where} is the plugin's own platform method (no base declares it; the plugin calls it itself)"),
        Status.unknown: f"its {kind} at {where} cannot be decided statically",
    }
    return reasons.get(top.status, f"its {kind} at {where} is {top.status.value}")


# ----------------------------------------------------------------------------- platform surface


def _surface(changes: list[SymbolChange]) -> list[Feature]:
    """Platform-class and hook-registry changes, grouped by the word their names share most."""
    words = {c.symbol: [w for w in c.symbol.rsplit(".", 1)[-1].strip("_").split("_") if w and w not in _STOPWORDS] for c in changes}
    counts = Counter(w for names in words.values() for w in set(names))
    groups: dict[str, list[SymbolChange]] = defaultdict(list)
    for change in changes:
        shared = [w for w in words[change.symbol] if counts[w] > 1]
        topic = max(shared, key=lambda w: (counts[w], len(w)), default=change.symbol.rsplit(".", 1)[-1])
        hook_points = profile().hook_points
        owner = "hook registry" if hook_points and change.symbol.startswith(hook_points) else _short(_owner(change.symbol))
        groups[f"{owner}|{topic}"].append(change)
    features = []
    for key, members in groups.items():
        owner, topic = key.split("|")
        if len(members) == 1:  # a shared word named no group: the method names itself
            topic = members[0].symbol.rsplit(".", 1)[-1]
        kinds = Counter(c.change for c in members)
        names = ", ".join(f"{c.symbol.rsplit('.', 1)[-1]} ({c.change.replace('_', ' ')})" for c in members)
        features.append(Feature(
            id=_slug(f"{owner.split('.')[-1]}-{topic}"), title=f"{owner}: {topic} ({len(members)} method{'s' if len(members) > 1 else ''})",
            kind="platform_surface", risk=max(_SURFACE_RISK[c.change] for c in members),
            why=f"platform surface the plugin is expected to follow ({', '.join(f'{n} {k}' for k, n in kinds.items())}); "
                f"the plugin overrides none of it yet: {names}"[:400],
            targets=sorted(c.symbol for c in members), changes=len(members),
        ))
    return features


def _server_arg_defaults(diff: FeatureDiff, old_index: SymbolIndex, new_index: SymbolIndex) -> list[Feature]:
    """Server arguments the new release sets per device and the old one did not: an
    out-of-tree device gets whatever the in-tree devices' branches leave it."""
    old_fields, new_fields = server_arg_fields(old_index), server_arg_fields(new_index)
    before, after = _defaults(old_index, old_fields), _defaults(new_index, new_fields)
    added = {name: places for name, places in after.items() if name not in before}
    if not added:
        return []
    sets = {f.target.rsplit(".", 1)[-1] for f in diff.findings if f.kind == "server_arg" and f.target}
    names = ", ".join(f"{name}{' (new argument)' if name not in old_fields else ''} at {places[0]}"
                      for name, places in added.items())
    ours = sorted(sets & set(added))
    return [Feature(
        id="server-args-platform-defaults", title=f"ServerArgs: per-device defaults ({len(added)} arguments)",
        kind="platform_surface", risk=20, changes=len(added), targets=[f"{profile().server_args}.{name}" for name in added],
        why=(f"upstream now sets these per device: {names}; "
             + (f"the plugin sets {', '.join(ours)}" if ours else "the plugin sets none of them")
             + ": decide its device's defaults (apply_server_args_defaults)")[:600],
    )]


# Both read a few hundred upstream files with `ast` (the costliest part of triage): kept with
# the release's index cache, keyed by a stand-in ref for the whole release.
_DEFAULTS = msgspec.msgpack.Decoder(dict[str, list[str]])
_SHIMS = msgspec.msgpack.Decoder(dict[str, Shim])


def _release() -> Ref:
    """The stand-in ref for the whole release: its package's module."""
    return Ref("module", profile().package, "")


def _plugin_surface() -> tuple[str, ...]:
    """Prefixes of the symbols plugins build on: the platform classes' members, the hook points."""
    engine = profile()
    return (*(f"{base}." for base in engine.platform_bases), *((engine.hook_points,) if engine.hook_points else ()))


def _defaults(index: SymbolIndex, fields: set[str]) -> dict[str, list[str]]:
    return index.analysis("platform_defaults", _release(), _DEFAULTS, lambda: platform_defaults(index.source, fields))


def _shims_of(index: SymbolIndex) -> dict[str, Shim]:
    return index.analysis("deprecation_shims", _release(), _SHIMS, lambda: deprecation_shims(index.source))


def _shims(old_index: SymbolIndex, new_index: SymbolIndex) -> list[Feature]:
    """Deprecation shims of the platform classes / hook registry new in the new release, with
    the names they still serve and when upstream says they go."""
    before = _shims_of(old_index)
    features = []
    for path, shim in _shims_of(new_index).items():
        if path in before and before[path].message == shim.message:
            continue
        serves = f" serves {', '.join(shim.legacy)}" if shim.legacy else ""
        features.append(Feature(
            id=_slug(f"deprecated-{_short(path)}"), title=f"{_short(path)}{serves} with a deprecation warning",
            kind="platform_surface", risk=25 if shim.horizon[0].isdigit() else 20, changes=1,
            targets=sorted({path, *(f"{_owner(path)}.{name}" for name in shim.legacy)}),
            why=f"{_short(path)} ({shim.where}){serves} until removal ({shim.horizon}): \"{shim.message}\""[:600],
        ))
    return features


# ----------------------------------------------------------------------------- other upstream changes


def _other(changes: list[SymbolChange], commit_of: dict[str, str]) -> list[Feature]:
    groups: dict[tuple[str, str], list[SymbolChange]] = defaultdict(list)
    for change in changes:
        relpath = (change.new_location or change.old_location or "").rsplit(":", 1)[0]
        commit = commit_of.get(relpath)
        groups[("commit", commit) if commit else (_module(change, relpath), change.change)].append(change)
    features = []
    for (first, second), members in groups.items():
        if first == "commit":
            subject = second.split(" ", 1)[-1]
            number = re.search(r"\(#(\d+)\)", subject)
            features.append(Feature(
                id=_slug(f"pr-{number.group(1)}" if number else f"commit-{second.split(' ', 1)[0]}"), title=subject,
                kind="upstream_change", risk=0, commit=second, changes=len(members),
                why=f"{len(members)} upstream symbol change(s) the plugin does not depend on",
                targets=sorted(c.symbol for c in members),
            ))
            continue
        verb = second.replace("_", " ")
        features.append(Feature(
            id=_slug(f"{first.removeprefix(profile().package + '.')}-{second}"), title=f"{first}: {len(members)} {verb}",
            kind="upstream_change", risk=0, changes=len(members),
            why=f"{len(members)} symbol(s) {verb} in {first}; the plugin does not depend on them",
            targets=sorted(c.symbol for c in members),
        ))
    return features


def _commit_of_files(old: UpstreamSource, new: UpstreamSource) -> dict[str, str]:
    """Upstream file (relative to the package root) -> "sha subject" of the newest commit
    between the two refs that touched it; empty unless both are git refs of one repository."""
    if not (old.kind == "git" and new.kind == "git" and old.git_repo == new.git_repo and old.git_commit and new.git_commit):
        return {}
    import git  # cost: gitpython loads only for git upstreams

    log = git.Repo(new.git_repo).git.log("--format=\x1e%h %s", "--name-only", f"{old.git_commit}..{new.git_commit}")
    found: dict[str, str] = {}
    for entry in log.split("\x1e"):
        head, *files = entry.strip().splitlines() or [""]
        for name in files:
            if name.strip():
                found.setdefault(name.strip().removeprefix(new.repo_prefix), head)  # newest first
    return found


# ----------------------------------------------------------------------------- names


def _owner(symbol: str) -> str:
    return symbol.rsplit(".", 1)[0]


def _short(symbol: str) -> str:
    return ".".join(symbol.split(".")[-2:])


def _module(change: SymbolChange, relpath: str) -> str:
    if relpath.endswith(".py"):
        return relpath[:-3].removesuffix("/__init__").replace("/", ".")
    return _owner(change.symbol)


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:60] or "feature"
