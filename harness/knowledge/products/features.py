"""Naming a feature: a feature file, a Feature Diff entry, or an upstream commit range.

    feature file    YAML (name, description, upstream symbols/paths, optional commit range,
                    models to validate), found by path or as <dir>/<ID>.yaml in the feature dirs
    Feature Diff    an impacted upstream symbol between --from and --upstream (needs --from)
    commit range    A..B on a git upstream (PATH@REF): the files those commits touched
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from harness.engines import profile
from harness.errors import HarnessError
from harness.knowledge.upstream import UpstreamSource
from harness.util.yamlfile import load_yaml_model


class FeatureSpec(BaseModel):
    """A feature, resolved from whichever form the user named it in."""

    id: str
    source: Literal["feature_file", "feature_diff", "commit_range"]
    name: str
    description: str = ""
    symbols: list[str] = Field(default_factory=list)  # dotted upstream symbols
    paths: list[str] = Field(default_factory=list)  # upstream paths, relative to the source root
    commits: str | None = None  # "A..B" on a git upstream
    models: list[str] = Field(default_factory=list)
    file: str | None = None  # the feature file, when source == feature_file


class UpstreamRefs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    symbols: list[str] = Field(default_factory=list, description="Dotted upstream symbols the feature is about.")
    paths: list[str] = Field(default_factory=list, description="Upstream paths relative to the source root.")


class FeatureFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(description="Human name of the feature.")
    description: str = ""
    upstream: UpstreamRefs = Field(default_factory=UpstreamRefs)
    commits: str | None = Field(default=None, description="Upstream commit range A..B (git sources).")
    models: list[str] = Field(default_factory=list, description="Models to validate the port on.")

    @model_validator(mode="after")
    def _names_something(self) -> FeatureFile:
        if not (self.upstream.symbols or self.upstream.paths or self.commits):
            raise ValueError("name upstream.symbols, upstream.paths or commits")
        if self.commits is not None and ".." not in self.commits:
            raise ValueError("commits must be a range A..B")
        return self


def load_feature_file(path: Path, feature_id: str | None = None) -> FeatureSpec:
    """A feature file as a FeatureSpec (id: `feature_id` or the file's stem). HarnessError
    `PATH:LINE: field: message` (util.yamlfile) on anything wrong with it."""
    spec = load_yaml_model(path, FeatureFile, what="feature file", shape="a feature file must be a mapping (name, upstream, ...)")
    return FeatureSpec(
        id=feature_id or path.stem,
        source="feature_file",
        name=spec.name,
        description=spec.description.strip(),
        symbols=spec.upstream.symbols,
        paths=spec.upstream.paths,
        commits=spec.commits,
        models=spec.models,
        file=str(path.resolve()),
    )


def feature_files(dirs: list[Path]) -> dict[str, Path]:
    """Feature id (file stem) -> file, over `*.yaml`/`*.yml` in `dirs`; the first dir wins."""
    found: dict[str, Path] = {}
    for directory in dirs:
        if directory.is_dir():
            for path in sorted([*directory.glob("*.yaml"), *directory.glob("*.yml")]):
                found.setdefault(path.stem, path)
    return found


# How many known feature ids an unknown --feature is answered with, before "and N more"
_KNOWN_SHOWN = 10


def resolve_feature(
    feature_id: str, feature_dirs: list[Path], old: UpstreamSource | None, new: UpstreamSource, plugin: Path,
    progress: Callable[[str], None] | None = None, listing: str | None = None,
) -> FeatureSpec:
    """What the user named with --feature: a feature file (path, or ID in `feature_dirs`), a
    commit range A..B on a git `new`, or a symbol of the Feature Diff old → new. HarnessError
    when it is none of these, naming the first few ids that would do (feature files, then the
    Feature Diff's features by risk) and `listing`, the command that lists them all: a typo is
    fixed from the error itself."""
    as_path = Path(feature_id)
    if as_path.suffix in (".yaml", ".yml") and as_path.exists():  # not is_file: a FIFO or directory is refused by name
        return load_feature_file(as_path)
    files = feature_files(feature_dirs)
    if feature_id in files:
        return load_feature_file(files[feature_id], feature_id)
    if ".." in feature_id:
        return _commit_range(feature_id, new)
    known = list(files)
    if old is not None:
        from harness.knowledge.products.cache import feature_diff

        diff = feature_diff(old, new, plugin, progress)
        for change in diff.changes:
            if change.symbol == feature_id:
                return FeatureSpec(
                    id=feature_id,
                    source="feature_diff",
                    name=feature_id,
                    description=f"{change.change}: {change.detail or ''}".strip(": "),
                    symbols=[feature_id],
                )
        for finding in diff.findings:
            if finding.target == feature_id:
                return FeatureSpec(
                    id=feature_id,
                    source="feature_diff",
                    name=feature_id,
                    description=f"plugin {finding.kind} now {finding.status.value}",
                    symbols=[feature_id],
                )
        from harness.knowledge.products.triage import group_features

        for feature in group_features(diff, old, new):
            if feature.id == feature_id:
                return FeatureSpec(id=feature.id, source="feature_diff", name=feature.title, description=feature.why,
                                   symbols=feature.targets)
            known.append(feature.id)
        where = f"the Feature Diff {old.label} → {new.label}"
    else:
        where = "the Feature Diff (give --from to diff against an older upstream)"
    dirs = ", ".join(str(d) for d in feature_dirs)
    more = f" and {len(known) - _KNOWN_SHOWN} more" if len(known) > _KNOWN_SHOWN else ""
    ids = f"; known: {', '.join(known[:_KNOWN_SHOWN])}{more}" if known else "; no feature is known here"
    raise HarnessError(
        f"unknown feature {feature_id!r}: no feature file in {dirs}, not in {where}, not a commit range A..B{ids}"
        + (f"; all of them: {listing}" if listing else "")
    )


def _commit_range(feature_id: str, new: UpstreamSource) -> FeatureSpec:
    start, _, end = feature_id.partition("..")
    if new.kind != "git" or new.git_repo is None:
        raise HarnessError(
            f"feature {feature_id!r} is a commit range, but upstream {new.spec!r} is not a git source (PATH@REF)"
        )
    import git  # cost: gitpython loads only for commit ranges

    repo = git.Repo(new.git_repo)
    try:
        names = repo.git.diff("--name-only", f"{start}..{end or 'HEAD'}").splitlines()
        subjects = repo.git.log("--format=%h %s", f"{start}..{end or 'HEAD'}").splitlines()
    except git.GitCommandError:
        raise HarnessError(f"commit range {feature_id!r}: unknown revision in {new.git_repo}") from None
    engine = profile()
    # the package's path inside the repo ("python/sglang" in SGLang's): paths are kept relative to its parent
    repo_parts = tuple(prefix.removesuffix(engine.package) for prefix in engine.source_prefixes if prefix != engine.package)
    paths = sorted({
        next((n.removeprefix(part) for part in repo_parts if n.startswith(part)), n)
        for n in names if n.endswith(".py") and f"{engine.package}/" in n
    })
    if not paths:
        raise HarnessError(f"commit range {feature_id!r} touches no {engine.package} Python files")
    return FeatureSpec(
        id=feature_id,
        source="commit_range",
        name=f"commits {feature_id}",
        description="; ".join(subjects[:10]),
        paths=paths,
        commits=feature_id,
    )


def candidates(
    old: UpstreamSource, new: UpstreamSource, plugin: Path | None, feature_dirs: list[Path],
    progress: Callable[[str], None] | None = None, flat: bool = False,
) -> list[dict]:
    """What `harness features` lists, as rows {id, source, kind, risk, status, where, detail}:
    the features a person triages (`harness.knowledge.products.triage`, ranked by risk; `status` is
    breaking / unverified / impacted / the kind, `where` the plugin file:line or the number of
    upstream changes, `detail` the one-line why, plus `title` and `targets`), then feature
    files. With `flat`: one row per symbol instead — Feature Diff findings, then upstream
    changes no finding covers."""
    from harness.knowledge.products.cache import feature_diff

    diff = feature_diff(old, new, plugin, progress)
    rows = _flat_rows(diff) if flat else _grouped_rows(diff, old, new)
    for feature_id, path in feature_files(feature_dirs).items():
        spec = load_feature_file(path, feature_id)
        rows.append(
            {
                "id": feature_id,
                "source": "feature_file",
                "kind": "feature file",
                "risk": None,
                "status": "",
                "where": str(path),
                "detail": spec.name,
            }
        )
    return rows


def _grouped_rows(diff, old: UpstreamSource, new: UpstreamSource) -> list[dict]:
    from harness.knowledge.products.triage import group_features

    rows = []
    for feature in group_features(diff, old, new):
        status = "preexisting" if feature.kind == "preexisting" else "breaking" if feature.breaking else "unverified" if feature.unverified else (
            "impacted" if feature.kind == "impacted" else feature.kind.replace("_", " "))
        top = feature.findings[0] if feature.findings else None
        rows.append({
            "id": feature.id, "source": "feature_diff", "kind": feature.kind.replace("_", " "), "risk": feature.risk,
            "status": status, "where": f"{top.file}:{top.line}" if top and top.file else f"{feature.changes} change(s)",
            "detail": feature.why, "title": feature.title, "targets": feature.targets,
        })
    return rows


def _flat_rows(diff) -> list[dict]:
    rows: list[dict] = []
    seen: set[str] = set()
    for finding in sorted(diff.findings, key=lambda f: -f.risk):
        if finding.target in seen:
            continue
        seen.add(finding.target)
        rows.append(
            {
                "id": finding.target,
                "source": "feature_diff",
                "kind": f"plugin {finding.kind}",
                "risk": finding.risk,
                "status": finding.status.value,
                "where": f"{finding.file}:{finding.line}" if finding.file else "",
                "detail": finding.detail or "",
            }
        )
    for change in sorted(diff.changes, key=lambda c: c.symbol):
        if change.symbol in seen:
            continue
        seen.add(change.symbol)
        rows.append(
            {
                "id": change.symbol,
                "source": "feature_diff",
                "kind": "upstream change",
                "risk": 0,
                "status": change.change,
                "where": change.new_location or change.old_location or "",
                "detail": change.detail or "",
            }
        )
    return rows
