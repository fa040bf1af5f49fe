"""The Platform Map: every place a plugin depends on upstream, judged against one version.

`harness map` writes it as YAML (for machines and for engineers' curated notes, which survive
regeneration) and as markdown (for people). `harness check` is its breaking subset. How each
dependency is judged: harness.knowledge.judge.core.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from harness.knowledge.model import Finding
from harness.knowledge.upstream import UpstreamSource

if TYPE_CHECKING:
    from harness.knowledge.upstream import SymbolIndex


# ----------------------------------------------------------------------------- the map


class PlatformMap(BaseModel):
    plugin: str
    plugin_commit: str | None = None
    upstream: str
    upstream_fingerprint: str
    generated_at: str
    entry_points: list[dict[str, str]]
    roots: list[dict[str, str]] = Field(default_factory=list)  # modules SGLang loads first, and why
    checked: dict[str, int] = Field(default_factory=dict)  # dependencies judged, per kind (ok uses are not listed)
    baseline: str | None = None  # the upstream the plugin declares (for overrides of methods since removed)
    live_checked: int = 0  # of those, in live modules: 0 means nothing SGLang loads was checked
    # "file:line: expression" of imports in live modules whose module the scan cannot name
    # (PluginScan.unnamed_imports): with nothing checked, what they import is not known
    unnamed_imports: list[str] = Field(default_factory=list)
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
        return [f for f in self.findings if f.breaking]

    @property
    def unreadable(self) -> list[Finding]:
        """Live plugin files that could not be read or parsed."""
        return [f for f in self.findings if f.kind == "file" and f.live]


def map_plugin(plugin: Path, upstream: UpstreamSource, index: SymbolIndex | None = None, entries: list[str] | None = None,
               commit: bool = True, baseline: UpstreamSource | None = None) -> PlatformMap:
    """Scan the plugin and judge every dependency against `upstream`.

    `baseline`, the upstream the plugin was written against, also tells which subclass methods
    override a base method that is gone. Raises HarnessError for a plugin path that is not a
    plugin (see scan_plugin)."""
    # cost: the engine loads only when a map is built (`check` with unchanged inputs reads its last verdict)
    from harness.knowledge.judge import Judge, dependencies, prefetch, reported
    from harness.knowledge.model import signature_text
    from harness.knowledge.scan import scan_plugin
    from harness.knowledge.upstream import load_index

    index = index or load_index(upstream)
    scan = scan_plugin(Path(plugin), index, entries)
    prefetch(index, scan)
    on_baseline = baseline is not None and baseline.fingerprint == upstream.fingerprint
    baseline_index = load_index(baseline) if baseline is not None and not on_baseline else None
    judge = Judge(index, scan, baseline_index, on_baseline=on_baseline)
    judged = [f for f in (judge(dep) for dep in dependencies(scan)) if f is not None]
    judge.fill_successors()
    index.save()
    if baseline_index is not None:
        baseline_index.save()
    checked: dict[str, int] = {}
    for finding in judged:
        checked[finding.kind] = checked.get(finding.kind, 0) + 1
    return PlatformMap(
        plugin=str(scan.root),
        plugin_commit=git_head(scan.root) if commit else None,
        upstream=upstream.label,
        upstream_fingerprint=upstream.fingerprint,
        generated_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        entry_points=[{"group": ep.group, "name": ep.name, "value": ep.value, "file": ep.file} for ep in scan.entry_points],
        roots=[{"module": r.module, "why": r.why} for r in scan.roots],
        checked=dict(sorted(checked.items())),
        live_checked=sum(1 for f in judged if f.live),
        unnamed_imports=[where for module, where in sorted(scan.unnamed_imports.items()) if scan.modules.get(module) and scan.modules[module].live],
        baseline=baseline_index.source.label if baseline_index else upstream.label if on_baseline else None,
        platform_classes=scan.platform_class_paths,
        platforms=[
            {
                "class": path,
                "file": scan.classes[path].file,
                "line": scan.classes[path].line,
                "upstream_bases": [r.path for r in judge.upstream_mro(path) if r.kind == "class"],
                "methods": [{"name": m.name, "line": m.line, "signature": signature_text(m.params)} for m in scan.classes[path].methods.values()],
            }
            for path in scan.platforms
        ],
        modules=[{"name": m.name, "file": m.file, "live": m.live, **({"error": m.error} if m.error else {})} for m in sorted(scan.modules.values(), key=lambda m: m.name)],
        findings=sorted(filter(reported, judged), key=lambda f: (-f.risk, f.file or "", f.line or 0, f.target)),
    )


def git_head(path: Path) -> str | None:
    """The commit checked out at `path` (its own repository only), or None outside git."""
    import git  # cost: gitpython loads only when a map is built

    try:
        return git.Repo(path, search_parent_directories=False).head.commit.hexsha
    except (git.InvalidGitRepositoryError, git.NoSuchPathError, ValueError):
        return None


class _ExistingMap(BaseModel):
    """What regeneration keeps from a Platform Map already on disk."""

    model_config = ConfigDict(extra="ignore")
    curated: dict[str, Any] | None = None


def write_platform_map(platform_map: PlatformMap, out_dir: Path) -> tuple[Path, Path]:
    """Write platform-map.yaml and platform-map.md; curated fields of an existing YAML survive.
    HarnessError (file:line) when the existing YAML is not a Platform Map."""
    import yaml  # cost: yaml and jinja load only when files are written

    from harness.util.templates import render as render_markdown
    from harness.util.yamlfile import load_yaml_model

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    yaml_path, md_path = out_dir / "platform-map.yaml", out_dir / "platform-map.md"
    if yaml_path.exists():
        previous = load_yaml_model(
            yaml_path, _ExistingMap, what="Platform Map",
            shape="not a Platform Map (expected a mapping with a `curated:` mapping); not overwriting it",
        )
        if previous.curated is not None:
            platform_map = platform_map.model_copy(update={"curated": previous.curated})
    data = platform_map.model_dump(mode="json")
    yaml_path.write_text(yaml.safe_dump(data, sort_keys=False, width=120))
    md_path.write_text(render_markdown("platform_map.md.j2", map=platform_map, data=data))
    return yaml_path, md_path
