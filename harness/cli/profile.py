"""`harness profile analyze`: every rank's torch-profiler trace of one run analysed together —
stages, the wait chain, a balance plan, findings with code locations, host threads, device
shares, CPU fallbacks — and diffed against reference runs (harness.evidence.profile_analysis)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import cast

import typer

from harness.cli.base import app

profile_app = typer.Typer(help="Profiles: analyse a run's per-rank traces (stages, waits, balance, findings).",
                          no_args_is_help=True)
app.add_typer(profile_app, name="profile")


def runs_of(paths: list[Path]) -> list[list[Path]]:
    """Several directories are several runs (repetitions) of one layout; anything else (files,
    or one directory) is one run's traces."""
    if len(paths) > 1 and all(p.is_dir() for p in paths):
        return [[p] for p in paths]
    return [paths]


@profile_app.command()
def analyze(
    paths: list[Path] = typer.Argument(..., help="One run's trace files or directory; several directories "
                                       "are repetitions of the same run (the diff's samples)."),
    reference: list[Path] = typer.Option([], "--reference", help="A reference run's trace directory "
                                         "(repeat for repetitions): per-stage and per-op changes with intervals."),
    naming: Path | None = typer.Option(None, help="JSON or YAML overrides of TraceNaming (the device's "
                                       "categories and event-name patterns)."),
    recipes: list[Path] = typer.Option([], "--recipes", help="Recipe files: each CPU fallback is mapped to one."),
    out: Path | None = typer.Option(None, help="Also write profile_analysis.json / .md into this directory."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON document instead of markdown."),
    window: str = typer.Option("steps", "--window", help="The window of the per-rank HTA figures: 'steps' (first "
                               "to last step annotation, every step) or 'hta' (HTA's: kernels of all but the last step)."),
) -> None:
    """Group the traces by rank (SGLang's `-TP-<t>-PP-<p>` names, or `distributedInfo`), read
    them as a stream, and print per stage: work, idle, waiting, communication and copy time and
    the bubble per step; the wait chain and its root; the balance plan (layers per stage,
    observed and proposed, predicted slowest stage); findings (serialised receives, host gaps,
    exposed communication, spinning threads, CPU fallbacks) with file:line; threads; shares; per
    rank HTA's figures (compute, overlap, idle breakdown, kernel types) in the `--window`, stragglers
    and the critical path across ranks. The ranks are pipeline stages only where their names,
    `distributedInfo` or point-to-point receives say so."""
    from harness.evidence.hta_figures import WINDOWS, Window
    from harness.evidence.profile_analysis import (
        analyze_profile,
        diff_profiles,
        render_profile,
        write_profile_evidence,
    )
    from harness.evidence.recipes import Recipes
    from harness.evidence.traces import TraceNaming

    if window not in WINDOWS:
        raise typer.BadParameter(f"{window!r}: one of {', '.join(WINDOWS)}", param_hint="--window")
    chosen = cast(Window, window)
    spec = TraceNaming()
    if naming is not None:  # JSON is YAML: one loader, one-line errors
        from harness.util.yamlfile import load_yaml_model

        spec = load_yaml_model(naming, TraceNaming, what="trace naming", shape="a mapping of TraceNaming fields")
    loaded = Recipes.load(recipes) if recipes else None
    runs = runs_of(paths)
    analysis = analyze_profile(runs[0], spec, recipes=loaded, window=chosen)
    if len(runs) > 1 and not reference:  # repetitions are the diff's samples: say what was not read
        others = f"the other {len(runs) - 1} directories are" if len(runs) > 2 else "the other directory is"
        analysis.notes.append(f"analysed {runs[0][0]} only: {others} read as repetitions of the same run, the diff's "
                              f"samples with --reference ({', '.join(str(run[0]) for run in runs[1:4])}); analyse each run on its own")
    if reference:
        candidates = [analysis] + [analyze_profile(run, spec, recipes=loaded, window=chosen) for run in runs[1:]]
        references = [analyze_profile(run, spec, recipes=loaded, window=chosen) for run in runs_of(reference)]
        analysis.diff = diff_profiles(candidates, references)
    if out is not None:
        write_profile_evidence(analysis, out)
    if as_json:
        typer.echo(json.dumps(analysis.model_dump(mode="json"), indent=2))
    else:
        typer.echo(render_profile(analysis))
