"""Knowledge commands: `map`, `diff`, `check`, `index`."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Optional

import typer
from rich.text import Text

from harness.cli.base import app
from harness.cli.common import ENGINE, enclosing_project, use_plugin_engine
from harness.cli.console import counted, err, out, step
from harness.knowledge.model import Finding

PLUGIN = typer.Option(..., "--plugin", help="Path to the plugin repo (with its pyproject.toml).")
UPSTREAM = typer.Option(..., "--upstream", help="sglang==X.Y.Z | vllm==X.Y.Z | PATH@REF (git) | PATH (dir holding sglang/ or vllm/).")
JSON = typer.Option(False, "--json", help="Print one JSON document on stdout instead of tables; write no files unless --out is given.")
OUT = typer.Option(None, "--out", help="Directory for the YAML + markdown files.")
ENTRY = typer.Option(
    None, "--entry",
    help="A module the engine loads without an entry point (e.g. an external model package); repeatable. "
    "Default when the plugin declares no entry points: every module that imports the engine's package.",
)


def _upstream(spec: str):
    from harness.knowledge.upstream import resolve_upstream

    with step(f"upstream {spec}"):
        return resolve_upstream(spec)


def _plugin_dir(plugin: Path | None) -> None:
    """Bad input before any release is resolved (a download can take minutes): one line."""
    from harness.errors import HarnessError

    if plugin is not None and not plugin.is_dir():
        raise HarnessError(f"plugin path '{plugin}' is not a directory")
    project = enclosing_project(plugin) if plugin is not None else None
    if project is not None:  # the package folder, not the repo: its entry points (and roots) would be lost
        err.print(f"note: {plugin} is inside the project {project}, whose packaging declares the entry points; "
                  f"they are read only with --plugin {project} (here the roots come from imports alone)",
                  markup=False, highlight=False)


def _emit(payload: dict) -> None:
    print(json.dumps(payload, indent=2, default=str))


def _finding_rows(findings: list[Finding], title: str) -> None:
    """The findings in live code as a table, breaking ones first (a `breaks` column says which);
    those in modules nothing imports on this release are one line with their count (--json and
    the written reports list them)."""
    from rich.table import Table

    live = sorted((f for f in findings if f.live), key=lambda f: (not f.breaking, f.file, f.line))
    dead = len(findings) - len(live)
    hooks = any(f.hook_type for f in live)
    table = Table(title=title, show_lines=False)
    for column in ("breaks", "status", "kind", *(("type",) if hooks else ()), "target", "where", "now / successor", "guard"):
        table.add_column(column, overflow="fold")
    for f in live:
        style = "red" if f.breaking else ("yellow" if f.status.value != "ok" else "")
        table.add_row(
            Text("yes" if f.breaking else "no", style=style),
            Text(f.status.value, style=style),
            f.kind,
            *((f.hook_type or "",) if hooks else ()),
            f.target,
            f"{f.file}:{f.line}",
            f.successor and f"→ {f.successor}" or f.defined_in or "",
            f"{f.guard.outcome}: {f.guard.condition}" if f.guard else "",
        )
    if live:
        out.print(table)
    if dead:
        out.print(f"{dead} more finding(s) in modules nothing imports on this release (dead code: never fails); --json lists them")


def _roots_line(roots: list[dict[str, str]]) -> str:
    return "roots: " + ", ".join(f"{r['module']} ({r['why']})" for r in roots)


@app.command("map")
def map_command(ctx: typer.Context, plugin: Path = PLUGIN, upstream: str = UPSTREAM, out_dir: Optional[Path] = OUT, entry: Optional[list[str]] = ENTRY, as_json: bool = JSON,
                engine: str | None = ENGINE) -> None:
    """Write the Platform Map of a plugin against one upstream version (default: into the
    plugin repo, beside its pyproject.toml, where the curated notes are kept)."""
    from harness.knowledge.products import map_plugin, write_platform_map

    _plugin_dir(plugin)
    use_plugin_engine(ctx, plugin, upstream, engine)
    source = _upstream(upstream)
    with step(f"mapping {plugin}"):
        platform_map = map_plugin(plugin, source, entries=entry)
    written = write_platform_map(platform_map, out_dir or Path(platform_map.plugin)) if out_dir or not as_json else ()
    if as_json:
        _emit({"command": "map", "plugin": platform_map.plugin, "upstream": source.label, "files": [str(p) for p in written], "roots": platform_map.roots, "findings": [f.model_dump(mode="json") for f in platform_map.findings]})
        return
    _finding_rows(platform_map.findings, f"Platform Map vs {source.label}")
    out.print(_roots_line(platform_map.roots))
    out.print(f"wrote {' and '.join(str(p) for p in written)}")


@app.command("diff")
def diff_command(
    ctx: typer.Context,
    from_spec: str = typer.Option(..., "--from", help="Older upstream SPEC."),
    to_spec: str = typer.Option(..., "--to", help="Newer upstream SPEC."),
    plugin: Optional[Path] = typer.Option(None, "--plugin", help="Judge this plugin's dependencies too."),
    out_dir: Optional[Path] = OUT,
    entry: Optional[list[str]] = ENTRY,
    as_json: bool = JSON,
    engine: str | None = ENGINE,
) -> None:
    """Feature Diff between two upstream versions (and its impact on a plugin); files are
    written only with --out."""
    from harness.knowledge.products import diff_upstreams, write_feature_diff

    _plugin_dir(plugin)
    use_plugin_engine(ctx, plugin, from_spec, engine)
    use_plugin_engine(ctx, plugin, to_spec, engine)
    old, new = _upstream(from_spec), _upstream(to_spec)
    with counted() as progress:
        diff = diff_upstreams(old, new, plugin, progress=progress, entries=entry)
    written = write_feature_diff(diff, out_dir) if out_dir else ()
    if as_json:
        _emit({"command": "diff", "from": old.label, "to": new.label, "files": [str(p) for p in written], "file_counts": diff.files, "changes": len(diff.changes), "findings": [f.model_dump(mode="json") for f in diff.findings]})
        return
    out.print(f"{diff.files['changed']} files changed, {diff.files['added']} added, {diff.files['removed']} removed; {len(diff.changes)} symbol changes")
    if plugin is not None:
        _finding_rows(diff.impacted, f"Plugin impact {old.label} → {new.label}")
        if diff.preexisting:  # not the upgrade's doing: broken on the older release already
            _finding_rows(diff.preexisting, f"Already broken on {old.label}, before the upgrade")
    out.print(f"wrote {' and '.join(str(p) for p in written)}" if written else "no files written (pass --out DIR to write feature-diff.yaml and .md)")


@app.command("check")
def check_command(
    ctx: typer.Context,
    plugin: Path = PLUGIN,
    upstream: str = UPSTREAM,
    entry: Optional[list[str]] = ENTRY,
    baseline: str = typer.Option(
        "auto", "--baseline",
        help="The upstream the plugin was written against, to tell an override of a base method that is gone from the "
        "plugin's own: auto (the upstream version it declares, if in the wheel cache), none, or a SPEC.",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON document on stdout instead of tables (check writes no files)."),
    engine: str | None = ENGINE,
) -> None:
    """Drift verdict for CI: exit 1 if the plugin, as its engine loads it, breaks on this upstream
    (a live import, reference, hook target, override or patch that will not resolve or fit);
    2 if a live plugin file cannot be read or nothing could be checked; 3 if some live
    dependency could not be decided statically. Dead modules are reported, not failed."""
    from harness.engines import profile
    from harness.knowledge.model import declared_pins
    from harness.knowledge.products import check_plugin, declared_baseline

    _plugin_dir(plugin)
    use_plugin_engine(ctx, plugin, upstream, engine)
    source = _upstream(upstream)
    baseline_note = baseline_from = None
    if baseline == "auto":
        base_source, baseline_note = declared_baseline(plugin) if plugin.is_dir() else (None, None)
        if base_source is not None:  # the pin declared_baseline read: said as `upgrade --from auto` says it
            baseline_from = next(p.source for p in declared_pins(plugin) if p.form == "release")
    else:
        base_source = None if baseline == "none" else _upstream(baseline)
    with step(f"checking {plugin}"):
        platform_map = check_plugin(plugin, source, entries=entry, baseline=base_source)
    findings = platform_map.findings
    breaking = platform_map.breaking
    unreadable = platform_map.unreadable
    unverified = [f for f in findings if f.unverified and f.kind != "file"]
    readable_live = [m for m in platform_map.modules if m["live"] and "error" not in m]
    nothing = not readable_live or not platform_map.live_checked
    # nothing named depends on upstream, but a live module imports what it names at run time: not
    # "nothing to check" (exit 2), which would say the plugin does not touch upstream at all
    unnamed = platform_map.unnamed_imports if nothing and readable_live and not unreadable else []
    nothing = nothing and not unnamed
    if as_json:
        _emit({
            "command": "check", "upstream": source.label, "plugin": platform_map.plugin,
            "passed": not breaking and not unverified and not unreadable and not nothing and not unnamed,
            "breaking": len(breaking), "unverified": len(unverified), "unreadable": len(unreadable),
            "roots": platform_map.roots,
            "modules": {"scanned": len(platform_map.modules), "live": len(readable_live)},
            "checked": platform_map.checked,
            "baseline": platform_map.baseline, "baseline_declared_in": baseline_from, "baseline_note": baseline_note,
            "findings": [f.model_dump(mode="json") for f in findings],
            **({"unnamed_imports": unnamed} if unnamed else {}),
        })
    else:
        shown = [f for f in findings if f.status.value != "ok"]
        if shown:
            _finding_rows(shown, f"Drift vs {source.label}")
        out.print(f"{sum(platform_map.checked.values())} dependencies checked in {len(readable_live)} live of {len(platform_map.modules)} modules; {_roots_line(platform_map.roots)}")
        if platform_map.baseline or baseline_note:
            declared = f"declared in {baseline_from}; " if baseline_from else ""
            out.print(f"baseline: {platform_map.baseline} ({declared}an override of a base method removed since then breaks; one it already lacked is a dead override)" if platform_map.baseline else f"note: {baseline_note}")
        if breaking:
            out.print(Text.assemble(("FAIL", "red"), f": {len(breaking)} live dependencies break on {source.label}"))
        elif nothing:
            out.print(Text.assemble(("NOTHING CHECKED", "yellow"), ": " + ("no live plugin module could be read" if not readable_live else f"no live module depends on {profile().package}")))
        elif unnamed:
            more = f" (and {len(unnamed) - 1} more)" if len(unnamed) > 1 else ""
            out.print(Text.assemble(("UNVERIFIED", "yellow"), f": no dependency on {profile().package} was found, but a live module imports a module "
                                                              f"it names at run time ({unnamed[0]}{more}): what it imports is not decided statically"))
        elif unreadable:
            out.print(Text.assemble(("INCOMPLETE", "yellow"), f": {len(unreadable)} live plugin files could not be read; the rest is checked and nothing else breaks"))
        elif unverified:
            out.print(Text.assemble(("UNVERIFIED", "yellow"), f": {len(unverified)} live dependencies could not be decided statically on {source.label}; nothing else is broken"))
        else:
            out.print(Text.assemble(("PASS", "green"), f": every live dependency resolves on {source.label}"))
    if not breaking and (unreadable or nothing):
        what = ("; ".join(f"{f.file}: {f.detail}" for f in unreadable[:3]) if unreadable
                else "no live plugin module could be read" if not readable_live
                else f"nothing to check: no live module depends on {profile().package} ({_roots_line(platform_map.roots)})")
        print(f"harness: error: {what}", file=sys.stderr)
    # 1: will break; 2: bad input; 3: could not be verified (distinct, so CI can choose)
    raise typer.Exit(1 if breaking else 2 if (unreadable or nothing) else 3 if (unverified or unnamed) else 0)


@app.command("index")
def index_command(ctx: typer.Context, upstream: str = typer.Argument(..., help="Upstream SPEC to index in full (warms the cache)."), as_json: bool = JSON,
                  engine: str | None = ENGINE) -> None:
    """Parse every module of an upstream version into the symbol-index cache."""
    from harness.knowledge.upstream import load_index

    use_plugin_engine(ctx, None, upstream, engine)
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
    out.print(f"{len(source.files)} modules, {parsed} parsed now, {seconds} s" + (f"; {len(broken)} do not parse: {', '.join(broken[:5])}" if broken else ""))


@app.command("port")
def port_command(
    ctx: typer.Context,
    plugin: Path = PLUGIN,
    from_spec: str = typer.Option(..., "--from", help="The upstream SPEC the plugin's copies were taken from, or 'auto' (the upstream version the plugin declares, if in the wheel cache)."),
    to_spec: str = typer.Option(..., "--to", help="The upstream SPEC to port the copies to."),
    out_dir: Optional[Path] = typer.Option(None, "--out", help="Directory for port.md (default: none with --json, else the current directory)."),
    apply: bool = typer.Option(False, "--apply", help="Commit the merges (conflicts marked) on a new branch of the plugin's git repository, through a temporary worktree; prints the branch."),
    as_json: bool = JSON,
    engine: str | None = ENGINE,
) -> None:
    """Re-port stale copies: carry upstream's change into each REPLACE hook or patched
    function that copies an upstream function, by a three-way merge (git merge-file). Exit 0
    when every copy merged clean or was unchanged, 1 when a conflict, an undefined name or a
    stale signature remains, 2 on bad input."""
    from harness.engines import profile
    from harness.errors import HarnessError
    from harness.knowledge.products import (
        apply_ports,
        declared_baseline,
        port_plugin,
        write_port_report,
    )

    if not plugin.is_dir():  # before any release is downloaded
        raise HarnessError(f"plugin path '{plugin}' is not a directory")
    use_plugin_engine(ctx, plugin, None if from_spec == "auto" else from_spec, engine)
    use_plugin_engine(ctx, plugin, to_spec, engine)
    if from_spec == "auto":
        old, note = declared_baseline(plugin)
        if old is None:
            raise HarnessError(f"--from auto: {note or f'{plugin} declares no {profile().distribution} version'}; pass --from SPEC")
    else:
        old = _upstream(from_spec)
    new = _upstream(to_spec)
    with step(f"porting copies in {plugin}"):
        report = port_plugin(plugin, old, new)
    branch = apply_ports(report) if apply else None
    if as_json:
        written = write_port_report(report, out_dir) if out_dir else None
        _emit({"command": "port", "plugin": report.plugin, "from": report.from_label, "to": report.to_label, "threshold": report.threshold,
               "branch": branch, "files": [str(written)] if written else [], "ports": [p.model_dump(mode="json") for p in report.ports]})
        raise typer.Exit(report.exit_code)
    from rich.table import Table

    table = Table(title=f"REPLACE hooks and patched functions, {report.from_label} → {report.to_label} "
                        f"(a copy: similarity ≥ {report.threshold})")
    for column in ("status", "target", "copy", "where", "similar", "needs"):
        table.add_column(column, overflow="fold")
    for p in report.ports:
        style = {"conflict": "red", "missing": "red", "clean": "green"}.get(p.status, "")
        needs = [f"import {u.name}" + (f" ({u.upstream_import})" if u.upstream_import else "") for u in p.undefined_names]
        if p.signature_change:
            needs.append(f"signature {p.signature_change.before} -> {p.signature_change.after}" + ("" if p.signature_change.copy_fits else " (copy stale)"))
        if p.successor:
            needs.append(f"successor {p.successor}")
        table.add_row(Text(p.status, style=style), p.target, p.plugin_function or "", f"{p.file}:{p.line}",
                      f"{p.similarity:.2f}" + (f" (better: {p.best_match})" if p.best_match else ""), "; ".join(needs))
    out.print(table)
    written = write_port_report(report, out_dir or Path.cwd())
    counts = {status: sum(1 for p in report.ports if p.status == status) for status in ("clean", "conflict", "unchanged", "not_a_copy", "missing")}
    out.print(", ".join(f"{n} {status}" for status, n in counts.items() if n) or "no copies of upstream functions found")
    out.print(f"wrote {written}")
    if apply:
        out.print(f"merges committed on branch {branch}" if branch else "nothing merged: no branch written")
    raise typer.Exit(report.exit_code)
