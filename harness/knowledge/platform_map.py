"""The Platform Map: every place a plugin depends on upstream, judged against one version.

`harness map` writes it as YAML (for machines and for engineers' curated notes, which survive
regeneration) and as markdown (for people). `harness check` is its breaking subset.
"""

from __future__ import annotations

import difflib
import re
import subprocess
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, Field

from harness.errors import HarnessError
from harness.knowledge.findings import BREAKING, Finding, Status
from harness.knowledge.index import Resolution, SymbolIndex, load_index
from harness.knowledge.plugin_scan import PluginScan, scan_plugin
from harness.knowledge.render import render_markdown
from harness.knowledge.symbols import Param, signature_text
from harness.knowledge.upstream import UpstreamSource


@dataclass
class Dependency:
    """One thing in the plugin that needs an upstream symbol to exist (and keep its shape)."""

    kind: str  # hook | override | patch | attention_backend | kernel | server_arg
    target: str | None
    file: str
    line: int
    live: bool
    hook_type: str | None = None
    passthrough: bool = False  # hook takes (*args, **kwargs): signature changes pass through it
    params: tuple[Param, ...] | None = None  # an override's own signature
    expression: str | None = None  # a hook target as written, when it could not be evaluated
    how: str | None = None  # patches: setattr | assign | in-place .append …

    @property
    def key(self) -> str:
        return f"{self.kind}:{self.hook_type or self.how or ''}:{self.target or self.expression}"


def dependencies(scan: PluginScan) -> list[Dependency]:
    live = {name for name, module in scan.modules.items() if module.live}
    deps: list[Dependency] = []
    for hook in scan.hooks:
        deps.append(
            Dependency("hook", hook.target, hook.file, hook.line, hook.module in live, hook.hook_type, hook.passthrough, expression=hook.expression)
        )
    for platform in scan.platforms:
        for method in platform.methods:
            target = f"{platform.upstream_bases[0]}.{method.name}" if platform.upstream_bases else method.name
            deps.append(Dependency("override", target, platform.file, method.line, platform.module in live, params=method.params))
    for patch in scan.patches:
        deps.append(Dependency("patch", patch.target, patch.file, patch.line, patch.module in live, how=patch.how))
    for registration in scan.registrations:
        deps.append(Dependency(registration.kind, registration.target, registration.file, registration.line, registration.module in live, expression=registration.name))
    return sorted(deps, key=lambda d: (d.file, d.line, d.key))


# ----------------------------------------------------------------------------- judging


def judge(dep: Dependency, index: SymbolIndex) -> Finding:
    """The single-version verdict for one dependency."""
    base = dict(kind=dep.kind, target=dep.target or dep.expression or "?", live=dep.live, file=dep.file, line=dep.line, hook_type=dep.hook_type)
    if dep.target is None:
        return Finding(**base, status=Status.unknown, detail=f"target {dep.expression} could not be evaluated statically", risk=risk_of(dep, Status.unknown))
    if dep.kind == "override":
        return _judge_override(dep, index, base)
    resolution = resolve_dependency(dep, index)
    if not resolution.ok:
        successor = find_successor(dep.target, index)
        return Finding(**base, status=Status.missing, successor=successor, detail=resolution.note, risk=risk_of(dep, Status.missing))
    if dep.kind == "hook" and dep.hook_type != "REPLACE" and resolution.ref.kind == "class":
        detail = f"HookRegistry allows only REPLACE on a class target (TypeError when applied): this {dep.hook_type} hook is skipped"
        return Finding(**base, status=Status.missing, defined_in=resolution.ref.path, detail=detail, risk=risk_of(dep, Status.missing))
    fields = _resolved_fields(dep.target, resolution, index)
    return Finding(**base, **fields, risk=risk_of(dep, fields["status"]) if fields["status"] == Status.unknown else 0)


def resolve_dependency(dep: Dependency, index: SymbolIndex) -> Resolution:
    resolution = index.resolve(dep.target)
    if resolution.ok or dep.kind != "server_arg":
        return resolution
    # Newer releases assemble ServerArgs at import time from namespace classes (arg_groups);
    # a field exists if one of the classes the server_args module imports declares it.
    module, _, field_name = dep.target.rpartition(".")
    module = module.rpartition(".")[0]
    table = index.table(module)
    for name, binding in (table.names.items() if table else []):
        if binding.kind != "from":
            continue
        namespace = index.resolve(f"{module}.{name}")
        if namespace.ok and namespace.ref.kind == "class":
            info = index.class_info(namespace.ref)
            if info and info.members.get(field_name) == "value":
                ref = namespace.ref._replace(kind="value", qualname=f"{namespace.ref.qualname}.{field_name}")
                return Resolution(dep.target, ref, note=f"field declared on {namespace.ref.path}, which ServerArgs is assembled from")
    return resolution


def _resolved_fields(target: str, resolution: Resolution, index: SymbolIndex) -> dict[str, Any]:
    ref = resolution.ref
    if ref.kind == "external" and resolution.owner and resolution.owner != "builtins.object":
        detail = f"not defined in the upstream source; it could only come from {resolution.owner}, a base outside it (not inspected)"
        return {"status": Status.unknown, "detail": detail}
    if inherited_from(target, resolution, index):
        return {"status": Status.inherited, "defined_in": resolution.owner, "detail": f"defined on base class {resolution.owner}"}
    defined_in = ref.path if ref.kind not in ("external", "dynamic") else None
    return {"status": Status.ok, "defined_in": defined_in, "detail": resolution.note}


def inherited_from(target: str, resolution: Resolution, index: SymbolIndex) -> bool:
    """The member is found on a base of the class the target names (compared as classes, so a
    path through a re-export or an alias of that same class is not "inherited")."""
    if not resolution.owner or resolution.ref.kind == "external":
        return False
    container = index.resolve(target.rsplit(".", 1)[0])
    return container.ok and container.ref.kind == "class" and container.ref.path != resolution.owner


def _judge_override(dep: Dependency, index: SymbolIndex, base: dict) -> Finding:
    resolution = index.resolve(dep.target)
    method = dep.target.rsplit(".", 1)[-1]
    if not resolution.ok:
        successor = find_successor(dep.target, index)
        detail = f"{method} is not defined on the platform base classes" + _legacy_mention(dep.target, index)
        return Finding(**base, status=Status.not_on_base, successor=successor, detail=detail, risk=risk_of(dep, Status.not_on_base))
    if resolution.ref.kind != "function":  # e.g. a property overriding a base class attribute
        return Finding(**base, status=Status.ok, defined_in=resolution.ref.path, detail=f"overrides base {resolution.ref.kind} {resolution.ref.path}")
    info = index.function_info(resolution.ref)
    problem = signature_incompatibility(info.params, dep.params or ()) if info else None
    if problem:
        detail = f"base {resolution.ref.path}{signature_text(info.params)} vs override {signature_text(dep.params)}: {problem}"
        return Finding(**base, status=Status.signature_changed, defined_in=resolution.ref.path, detail=detail, risk=risk_of(dep, Status.signature_changed))
    return Finding(**base, status=Status.ok, defined_in=resolution.ref.path)


def signature_incompatibility(base: tuple[Param, ...], override: tuple[Param, ...]) -> str | None:
    """Why `override` cannot stand in for `base` (every call valid for base must be valid), or None."""
    def positional(params):
        return [p for p in params if p.kind in ("posonly", "pos")]

    base_pos, over_pos = positional(base), positional(override)
    over_names = {p.name: p for p in override}
    has_var = any(p.kind == "var" for p in override)
    has_varkw = any(p.kind == "varkw" for p in override)
    for i, param in enumerate(base_pos):
        if i >= len(over_pos):
            if not has_var:
                return f"drops positional parameter {param.name!r}"
        elif over_pos[i].name != param.name and param.kind == "pos" and not has_varkw:
            return f"parameter {i + 1} is {over_pos[i].name!r}, base calls it {param.name!r}"
    for param in base:
        if param.kind == "kwonly" and param.name not in over_names and not has_varkw:
            return f"does not accept keyword {param.name!r}"
        if param.kind == "var" and not has_var:
            return "does not accept *args"
        if param.kind == "varkw" and not has_varkw:
            return "does not accept **kwargs"
    base_names = {p.name for p in base}
    for i, param in enumerate(over_pos[len(base_pos) :], start=len(base_pos)):
        if param.default is None and param.name not in base_names:
            return f"adds required parameter {param.name!r}"
    for param in override:
        if param.kind == "kwonly" and param.default is None and param.name not in base_names:
            return f"adds required keyword {param.name!r}"
    return None


def risk_of(dep: Dependency, status: Status) -> int:
    """Higher = look first. A dead module's findings cannot break anything at run time."""
    score = {
        Status.missing: 90,
        Status.not_on_base: 85,
        Status.signature_changed: 60,
        Status.body_changed: 40,
        Status.moved: 20,
        Status.inherited: 15,
        Status.unknown: 30,
        Status.ok: 0,
    }[status]
    if dep.hook_type == "REPLACE" and status in (Status.body_changed, Status.signature_changed):
        score += 30  # the plugin carries a copy of the upstream body: it is now stale
    if dep.passthrough and dep.hook_type != "REPLACE" and status == Status.signature_changed:
        score -= 40  # (*args, **kwargs) forwarding to the original survives a signature change
    if not dep.live:
        score //= 4
    return max(score, 0)


# ----------------------------------------------------------------------------- successors

def find_successor(target: str, index: SymbolIndex, preferred: set[str] | None = None) -> str | None:
    """The likely replacement of a target that no longer resolves: a close name on the same
    class or module (renamed / merged factory), else the same name defined elsewhere."""
    container, _, name = target.rpartition(".")
    resolution = index.resolve(container) if container else None
    if resolution and resolution.ok and resolution.ref.kind in ("class", "module"):
        candidates = _member_names(index, resolution)
        close = difflib.get_close_matches(name, candidates, n=3, cutoff=0.6)
        if preferred:
            close.sort(key=lambda c: f"{container}.{c}" not in preferred)
        if close:
            return f"{container}.{close[0]}"
        mentioned = _mentioned_in(index, resolution, name)
        if mentioned:
            return f"{container}.{mentioned}"
    return _same_name_elsewhere(name, target, index)


def _legacy_mention(target: str, index: SymbolIndex) -> str:
    """Whether upstream still names the method (a legacy shim may call it with a warning)."""
    container = index.resolve(target.rsplit(".", 1)[0])
    if not container.ok or container.ref.kind != "class":
        return ""
    table = index.table(container.ref.module)
    name = target.rsplit(".", 1)[-1]
    if table and re.search(rf"\b{re.escape(name)}\b", (index.source.root / table.path).read_text(errors="replace")):
        return f"; {table.path} still mentions {name} (a legacy shim may still call it, deprecated)"
    return ""


def _member_names(index: SymbolIndex, resolution: Resolution) -> list[str]:
    ref = resolution.ref
    if ref.kind == "module":
        table = index.table(ref.module)
        return [n for n in table.names if not n.startswith("_")] if table else []
    names: list[str] = []
    for cls in index.mro(ref):
        info = index.class_info(cls) if cls.kind == "class" else None
        if info:
            names.extend(n for n in info.members if n not in names and not n.startswith("_"))
    return names


def _mentioned_in(index: SymbolIndex, resolution: Resolution, name: str) -> str | None:
    """A member whose source mentions the old name (e.g. a legacy shim or a deprecation note)."""
    ref = resolution.ref
    if ref.kind != "class":
        return None
    info = index.class_info(ref)
    table = index.table(ref.module)
    lines = (index.source.root / table.path).read_text(errors="replace").splitlines()
    stem = re.sub(r"^(get_|is_|support_|supports_)", "", name)
    for qualname, function in table.functions.items():
        if qualname.startswith(ref.qualname + ".") and not qualname.rsplit(".", 1)[-1].startswith("_"):
            text = "\n".join(lines[function.lineno - 1 : function.end_lineno])
            if name in text or (len(stem) > 4 and stem in text):
                return qualname.rsplit(".", 1)[-1]
    segment = "\n".join(lines[info.lineno - 1 : info.end_lineno])
    for member in info.members:
        if not member.startswith("_") and re.search(rf"{re.escape(member)}\b[^\n]*\n?[^\n]*{re.escape(stem)}", segment):
            return member
    return None


def _same_name_elsewhere(name: str, target: str, index: SymbolIndex) -> str | None:
    best = None
    for module in index.modules_defining(name):
        table = index.table(module)
        for qualname in [*table.functions, *table.classes]:
            if qualname.rsplit(".", 1)[-1] == name:
                candidate = f"{module}.{qualname}"
                score = difflib.SequenceMatcher(None, candidate, target).ratio()
                if best is None or score > best[0]:
                    best = (score, candidate)
    return best[1] if best else None


# ----------------------------------------------------------------------------- the map


class PlatformMap(BaseModel):
    plugin: str
    plugin_commit: str | None = None
    upstream: str
    upstream_fingerprint: str
    generated_at: str
    entry_points: list[dict[str, str]]
    platform_classes: list[str] = Field(default_factory=list)  # returned by activate()
    platforms: list[dict[str, Any]]
    modules: list[dict[str, Any]]
    findings: list[Finding]
    curated: dict[str, Any] = Field(
        default_factory=lambda: {"notes": "", "owners": {}, "known_conflicts": [], "entries": {}},
        description="Hand-written by engineers; kept verbatim when the map is regenerated.",
    )

    @property
    def breaking(self) -> list[Finding]:
        return [f for f in self.findings if f.live and f.status in BREAKING]


def map_plugin(plugin: Path, upstream: UpstreamSource, index: SymbolIndex | None = None) -> PlatformMap:
    index = index or load_index(upstream)
    scan = scan_plugin(Path(plugin), index)
    findings = [judge(dep, index) for dep in dependencies(scan)]
    index.save()
    return PlatformMap(
        plugin=str(scan.root),
        plugin_commit=git_head(scan.root),
        upstream=upstream.label,
        upstream_fingerprint=upstream.fingerprint,
        generated_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        entry_points=[{"group": ep.group, "name": ep.name, "value": ep.value, "file": ep.file} for ep in scan.entry_points],
        platform_classes=scan.platform_class_paths,
        platforms=[
            {
                "class": p.name,
                "file": p.file,
                "line": p.line,
                "upstream_bases": p.upstream_bases,
                "methods": [{"name": m.name, "line": m.line, "signature": signature_text(m.params)} for m in p.methods],
            }
            for p in scan.platforms
        ],
        modules=[{"name": m.name, "file": m.file, "live": m.live} for m in sorted(scan.modules.values(), key=lambda m: m.name)],
        findings=sorted(findings, key=lambda f: (-f.risk, f.file or "", f.line or 0, f.target)),
    )


def git_head(path: Path) -> str | None:
    proc = subprocess.run(["git", "-C", str(path), "rev-parse", "HEAD"], capture_output=True, text=True)
    return proc.stdout.strip() if proc.returncode == 0 else None


def write_platform_map(platform_map: PlatformMap, out_dir: Path) -> tuple[Path, Path]:
    """Write platform-map.yaml and platform-map.md; curated fields of an existing YAML survive."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    yaml_path, md_path = out_dir / "platform-map.yaml", out_dir / "platform-map.md"
    if yaml_path.exists():
        try:
            previous = yaml.safe_load(yaml_path.read_text()) or {}
        except yaml.YAMLError as exc:
            raise HarnessError(f"{yaml_path}: malformed YAML, not overwriting its curated fields: {exc}".splitlines()[0]) from None
        if not isinstance(previous, dict) or not isinstance(previous.get("curated", {}), dict):
            raise HarnessError(f"{yaml_path}: not a Platform Map (expected a mapping with a `curated:` mapping); not overwriting it")
        if "curated" in previous:
            platform_map = platform_map.model_copy(update={"curated": previous["curated"]})
    data = platform_map.model_dump(mode="json")
    yaml_path.write_text(yaml.safe_dump(data, sort_keys=False, width=120))
    md_path.write_text(render_markdown("platform_map.md.j2", map=platform_map, data=data))
    return yaml_path, md_path
