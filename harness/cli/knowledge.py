"""Knowledge commands: `map`, `diff`, `check`, `index`."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Optional

import typer

from harness.cli import app
from harness.cli.console import counted, err, step
from harness.knowledge.findings import BREAKING, Finding, Status

PLUGIN = typer.Option(..., "--plugin", help="Path to the plugin repo (with its pyproject.toml).")
UPSTREAM = typer.Option(..., "--upstream", help="sglang==X.Y.Z | PATH@REF (git) | PATH (dir holding sglang/).")
JSON = typer.Option(False, "--json", help="Print one JSON document on stdout instead of tables.")
OUT = typer.Option(Path("knowledge"), "--out", help="Directory for the YAML + markdown files.")


def _upstream(spec: str):
    from harness.knowledge.upstream import resolve_upstream

    with step(f"upstream {spec}"):
        return resolve_upstream(spec)


def _emit(payload: dict) -> None:
    print(json.dumps(payload, indent=2, default=str))


def _finding_rows(findings: list[Finding], title: str) -> None:
    from rich.table import Table

    table = Table(title=title, show_lines=False)
    for column in ("status", "kind", "type", "target", "live", "where", "now / successor"):
        table.add_column(column, overflow="fold")
    for f in findings:
        style = "red" if f.status in BREAKING and f.live else ("yellow" if f.status.value != "ok" else "")
        table.add_row(
            f"[{style}]{f.status.value}[/{style}]" if style else f.status.value,
            f.kind,
            f.hook_type or "",
            f.target,
            "yes" if f.live else "dead",
            f"{f.file}:{f.line}",
            f.successor and f"→ {f.successor}" or f.defined_in or "",
        )
    err.print(table)


@app.command("map")
def map_command(plugin: Path = PLUGIN, upstream: str = UPSTREAM, out: Path = OUT, as_json: bool = JSON) -> None:
    """Write the Platform Map of a plugin against one upstream version."""
    from harness.knowledge.platform_map import map_plugin, write_platform_map

    source = _upstream(upstream)
    with step(f"mapping {plugin}"):
        platform_map = map_plugin(plugin, source)
    yaml_path, md_path = write_platform_map(platform_map, out)
    if as_json:
        _emit({"command": "map", "plugin": platform_map.plugin, "upstream": source.label, "files": [str(yaml_path), str(md_path)], "findings": [f.model_dump(mode="json") for f in platform_map.findings]})
        return
    _finding_rows(platform_map.findings, f"Platform Map vs {source.label}")
    err.print(f"wrote {yaml_path} and {md_path}")


@app.command("diff")
def diff_command(
    from_spec: str = typer.Option(..., "--from", help="Older upstream SPEC."),
    to_spec: str = typer.Option(..., "--to", help="Newer upstream SPEC."),
    plugin: Optional[Path] = typer.Option(None, "--plugin", help="Judge this plugin's dependencies too."),
    out: Path = OUT,
    as_json: bool = JSON,
) -> None:
    """Feature Diff between two upstream versions (and its impact on a plugin)."""
    from harness.knowledge.feature_diff import diff_upstreams, write_feature_diff

    old, new = _upstream(from_spec), _upstream(to_spec)
    with counted() as progress:
        diff = diff_upstreams(old, new, plugin, progress=progress)
    yaml_path, md_path = write_feature_diff(diff, out)
    if as_json:
        _emit({"command": "diff", "from": old.label, "to": new.label, "files": [str(yaml_path), str(md_path)], "file_counts": diff.files, "changes": len(diff.changes), "findings": [f.model_dump(mode="json") for f in diff.findings]})
        return
    err.print(f"{diff.files['changed']} files changed, {diff.files['added']} added, {diff.files['removed']} removed; {len(diff.changes)} symbol changes")
    if plugin is not None:
        _finding_rows(diff.impacted, f"Plugin impact {old.label} → {new.label}")
    err.print(f"wrote {yaml_path} and {md_path}")


@app.command("check")
def check_command(plugin: Path = PLUGIN, upstream: str = UPSTREAM, as_json: bool = JSON) -> None:
    """Hook-drift verdict for CI: exit 1 if a live hook target or platform override will not
    resolve (or is not on the base) on this upstream, 3 if some could not be checked
    statically; dead hooks are reported, not failed."""
    from harness.knowledge.drift import check_plugin

    source = _upstream(upstream)
    with step(f"checking {plugin}"):
        findings = check_plugin(plugin, source)
    breaking = [f for f in findings if f.live and f.status in BREAKING]
    unverified = [f for f in findings if f.live and f.status == Status.unknown]
    if as_json:
        _emit({"command": "check", "upstream": source.label, "plugin": str(plugin), "passed": not breaking and not unverified, "breaking": len(breaking), "unverified": len(unverified), "findings": [f.model_dump(mode="json") for f in findings]})
    else:
        shown = [f for f in findings if f.status.value != "ok"]
        if shown:
            _finding_rows(shown, f"Hook drift vs {source.label}")
        if breaking:
            err.print(f"[red]FAIL[/red]: {len(breaking)} live dependencies will not resolve on {source.label}")
        elif unverified:
            err.print(f"[yellow]UNVERIFIED[/yellow]: {len(unverified)} live dependencies could not be checked statically on {source.label}; nothing else is broken")
        else:
            err.print(f"[green]PASS[/green]: every live dependency resolves on {source.label}")
    # 1: will break; 3: could not be verified (distinct, so CI can choose); 2 stays "bad input"
    raise typer.Exit(1 if breaking else 3 if unverified else 0)


@app.command("index")
def index_command(upstream: str = typer.Argument(..., help="Upstream SPEC to index in full (warms the cache)."), as_json: bool = JSON) -> None:
    """Parse every module of an upstream version into the symbol-index cache."""
    from harness.knowledge.index import load_index

    source = _upstream(upstream)
    start = time.perf_counter()
    index = load_index(source)
    with counted() as progress:
        parsed = index.index_all(progress=lambda done, total: progress(f"indexing {source.label}", done, total))
    index.save()
    seconds = round(time.perf_counter() - start, 2)
    broken = sorted(name for name in index.files if (table := index.table(name)) is not None and table.error)
    if as_json:
        _emit({"command": "index", "upstream": source.label, "modules": len(source.files), "parsed_now": parsed, "seconds": seconds, "unparsable": broken, "findings": []})
        return
    err.print(f"{len(source.files)} modules, {parsed} parsed now, {seconds} s" + (f"; {len(broken)} do not parse: {', '.join(broken[:5])}" if broken else ""))
