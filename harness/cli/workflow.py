"""Workflow commands: run, features, status, approve, reject, resume, repair.

`harness run` with neither --plugin nor --upstream runs the built-in example workspace. Every
command on a workspace's runs first stops what a killed harness left running there."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import typer
from rich.table import Table
from rich.text import Text

from harness.cli.base import app
from harness.cli.common import (
    DEFAULT_FEATURE,
    DEFAULT_FROM,
    DEFAULT_UPSTREAM,
    ENGINE,
    EVIDENCE_CHANGED,
    EXAMPLE_WORKSPACE,
    RESUME_STATE_GONE,
    WorkspaceOpt,
    absolute_spec,
    check_feature_file,
    checked_runbook,
    cli_ref,
    default_source,
    new_run_id,
    open_runs_workspace,
    open_workspace,
    plugin_commit,
    progress_lines,
    resumable,
    use_plugin_engine,
    validate_plugin,
)
from harness.cli.console import out, print_json
from harness.cli.show import (
    next_command,
    print_commits,
    print_outcome,
    print_view,
    state_line,
)
from harness.errors import HarnessError
from harness.record.layout import RUNS_LIVE_WHERE_STARTED, Workspace, check_run_id


@app.command()
def run(
    ctx: typer.Context,
    feature: str | None = typer.Option(
        None, "--feature", "-f",
        help="Feature file (path or ID in features/), Feature Diff symbol, or commit range A..B.",
    ),
    plugin: Path | None = typer.Option(None, "--plugin", help="Plugin checkout (default: the built-in example)."),
    upstream: str | None = typer.Option(None, "--upstream", help="Target upstream: sglang==X, vllm==X, PATH@REF or PATH."),
    from_: str | None = typer.Option(
        None, "--from", help="Older upstream the plugin was written for (auto: the release it declares, as upgrade reads it).",
    ),
    runbook: Path | None = typer.Option(None, "--runbook", help="Validation Runbook (YAML)."),
    run_id: str | None = typer.Option(None, "--run-id", help="Name of the run (default: feature + time)."),
    auto_approve: bool = typer.Option(
        False, "--auto-approve", help="Unattended demos only: approve every gate automatically (marked in reports)."
    ),
    llm_base_url: str | None = typer.Option(
        None, "--llm-base-url", help="OpenAI-compatible endpoint the porting agent uses (default: $OPENAI_BASE_URL, "
        "then the runbook's agent.base_url).",
    ),
    llm_model: str | None = typer.Option(
        None, "--llm-model", help="Model the porting agent asks (default: $HARNESS_LLM_MODEL, then agent.model)."
    ),
    workspace: Path | None = WorkspaceOpt,
) -> None:
    """Run a feature through alignment → interface → operators → accuracy → performance, stopping at each gate."""
    ws = open_runs_workspace(workspace, writes=True)
    # Ctrl-C before start_run records the run (the imports below take a second or more): one line
    # saying there is nothing to resume
    with resumable(ws, None):
        # cost: LangGraph, the knowledge engine and the runners load only for the commands that use them
        from harness.agent.config import describe, resolve_settings
        from harness.engines import profile
        from harness.evidence.runbook import (
            load_runbook,
            refuse_placeholders,
            release_mismatch,
        )
        from harness.knowledge.products import resolve, resolve_feature
        from harness.steps.served import not_installed
        from harness.util.requirements import unmet_requirements
        from harness.workflow.runs import check_workspace, new_inputs, start_run

        builtin = plugin is None and upstream is None
        if builtin:
            plugin = EXAMPLE_WORKSPACE / "plugin"
            runbook = runbook or EXAMPLE_WORKSPACE / "runbook.yaml"
            feature = feature or DEFAULT_FEATURE
            out.print(f"Using the built-in example workspace {EXAMPLE_WORKSPACE}")
        elif plugin is None or upstream is None:
            if plugin is not None:
                validate_plugin(plugin)  # a wrong path is the first thing to hear about
            raise HarnessError("give both --plugin and --upstream, or neither to run the built-in example")
        plugin_path = validate_plugin(plugin)
        # the engine the plugin declares, as each step reads it (workflow.graph): no --engine to record
        use_plugin_engine(ctx, plugin_path, upstream, None)
        use_plugin_engine(ctx, plugin_path, None if from_ == "auto" else from_, None)
        if from_ == "auto":  # as `upgrade --from auto` reads it, and said like upgrade says it
            from harness.workflow.upgrade import from_spec_of

            from_, declared_in = from_spec_of(plugin_path, from_, upstream)
            out.print(f"--from auto: {from_} (declared in {declared_in})")
        if feature is None:
            raise HarnessError(f"--feature is required; the candidates: {_features_command(ws, from_, upstream, plugin_path)}")
        if run_id is not None:
            check_run_id(run_id)
            if ws.run(run_id).exists():
                raise HarnessError(f"run {run_id!r} already exists; pick another --run-id or `harness resume {run_id}`")
        # Fail fast: every input a step reads is checked before anything runs or is recorded.
        # the runbook serves the plugin's engine (its benchmark client and profiler are that engine's)
        runbook_path = checked_runbook(runbook, profile().name, plugin_path)
        if runbook_path is not None:
            refuse_placeholders(runbook_path)
        feature_dirs = [ws.root / "features"] + ([EXAMPLE_WORKSPACE / "features"] if builtin else [])
        check_feature_file(feature, feature_dirs)
        agent = resolve_settings(llm_base_url, llm_model, load_runbook(runbook_path).agent if runbook_path else None)
        check_workspace(ws)
        if builtin:
            with progress_lines(f"resolving {DEFAULT_UPSTREAM} and {from_ or DEFAULT_FROM}"):
                upstream = default_source(DEFAULT_UPSTREAM)
                from_ = from_ or default_source(DEFAULT_FROM)
        upstream = absolute_spec(upstream)
        from_ = absolute_spec(from_) if from_ else None
        with progress_lines(f"resolving upstream {upstream}") as progress:
            new = resolve(upstream)
            old = None
            if from_:
                progress(f"resolving upstream {from_}")
                old = resolve(from_)
            progress(f"resolving feature {feature}")
            spec = resolve_feature(feature, feature_dirs, old, new, plugin_path, progress,
                                   listing=_features_command(ws, from_, upstream, plugin_path))
        inputs = new_inputs(run_id or new_run_id(ws, spec.id), spec, plugin_path, upstream, from_,
                            plugin_commit=plugin_commit(plugin_path, ws.root), runbook=runbook_path, agent=agent,
                            auto_approve=auto_approve)
        out.print(Text.assemble("Run ", (inputs.run_id, "bold"), f": feature {spec.id} ({spec.source.replace('_', ' ')}), "
                                f"upstream {new.label}" + (f" from {old.label}" if old else "")))
        out.print(describe(agent))
        if inputs.runbook is None:
            out.print(f"No --runbook: the served steps (interface smoke, operators, accuracy, performance) will say \"not run\"; "
                      f"give one at a gate with `harness approve {inputs.run_id} --by NAME --runbook F` (`harness runbook init` writes one)")
        else:
            served = load_runbook(inputs.runbook)
            mismatch = release_mismatch(served, inputs.upstream)
            if mismatch:
                out.print(f"Warning: {mismatch}")
            unmet = unmet_requirements(served.server.requires)
            if unmet:  # said now, not first at step 2's gate: the install may take a while
                out.print(f"Served steps will say \"not run\": {not_installed(served, unmet)}")
    with resumable(ws, inputs.run_id), progress_lines("running") as progress:
        view = start_run(ws, inputs, progress)
    print_outcome(ws, view)
    if auto_approve:
        print_commits(ws, view, [s for s in view.steps if s.gate.decision == "approve"])


def _features_command(ws: Workspace, from_: str | None, to: str, plugin: Path) -> str:
    """The `harness features` command that lists every id `run --feature` takes for these upstreams
    and this plugin, to paste as is (`--from SPEC` to fill in when the run has no --from: the
    Feature Diff needs an older upstream)."""
    return shlex.join(["harness", "features", "--from", from_ or "SPEC", "--to", to, "--plugin", str(plugin)]) + cli_ref(ws)


@app.command()
def features(
    ctx: typer.Context,
    from_: str = typer.Option(..., "--from", help="Older upstream: sglang==X, vllm==X, PATH@REF or PATH."),
    to: str = typer.Option(..., "--to", help="Newer upstream."),
    plugin: Path | None = typer.Option(None, "--plugin", help="Plugin, to rank what it depends on first."),
    limit: int = typer.Option(40, "--limit", help="Rows to show (0: all)."),
    flat: bool = typer.Option(False, "--flat", help="One row per changed symbol instead of grouped features."),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
    workspace: Path | None = WorkspaceOpt,
    engine: str | None = ENGINE,
) -> None:
    """List the features between two upstreams a person triages: the plugin's impacted dependencies grouped by
    the upstream change behind them, platform-surface changes, then other upstream changes by commit or module;
    ranked by risk to the plugin, each with why it matters. --flat lists every changed symbol instead."""
    from harness.knowledge.products import (
        candidates,  # cost: the knowledge engine
        resolve,
    )

    ws = open_workspace(workspace)
    plugin_path = validate_plugin(plugin) if plugin else None
    use_plugin_engine(ctx, plugin_path, from_, engine)
    use_plugin_engine(ctx, plugin_path, to, engine)
    with progress_lines(f"diffing {from_} → {to}") as progress:
        old, new = resolve(from_), resolve(to)
        rows = candidates(old, new, plugin_path, [ws.root / "features"], progress, flat=flat)
    if as_json:
        print_json(json.dumps(rows))
        return
    shown = rows if limit <= 0 else rows[:limit]
    table = Table(title=f"{'Changed symbols' if flat else 'Features'} {from_} → {to}")
    table.add_column("ID", no_wrap=True)  # users copy it into --feature: never split it
    for column in ("kind", "risk", "status", "where", "detail"):
        table.add_column(column, overflow="ellipsis", no_wrap=column != "detail")
    for row in shown:
        table.add_row(row["id"], row["kind"], "" if row["risk"] is None else str(row["risk"]),
                      "" if row["status"] == row["kind"] else row["status"], row["where"], row["detail"])
    out.print(table)
    if len(shown) < len(rows):
        out.print(f"({len(rows) - len(shown)} more; --limit 0 shows all)")
    out.print(f"Run one: harness run --feature ID --plugin PLUGIN --upstream {to} --from {from_}")


@app.command()
def status(
    run_id: str | None = typer.Argument(None, metavar="[RUN]", help="Run id (default: list all runs)."),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
    workspace: Path | None = WorkspaceOpt,
) -> None:
    """Where a run stands: per step verdict, checks, gate decision, approver, evidence hash, the resume
    state and any process still alive. Exit 1 when evidence changed (an approval is invalidated, or a step's
    evidence changed since it was produced); 3 when an unfinished run's resume state is gone (`harness repair`)."""
    ws = open_runs_workspace(workspace)
    if run_id is None:
        from harness.workflow.runs import run_status  # cost: LangGraph

        views = [run_status(ws, rid) for rid in ws.run_ids()]
        if as_json:
            print_json(json.dumps([v.model_dump(mode="json") for v in views]))
            _status_exit(views)
            return
        if not views:
            # runs live in the workspace they were started in, not with the plugin
            out.print(f"No runs in {ws.root} ({RUNS_LIVE_WHERE_STARTED}).")
            return
        table = Table(title=f"Runs in {ws.root}")
        # a run id is pasted into the next command: never cut or wrapped, whatever the width
        table.add_column("run", no_wrap=True, min_width=max(len(v.run_id) for v in views))
        for column, least in (("feature", 12), ("state", 12), ("steps", 10)):
            # a narrow column wraps, even mid-word (a feature id is read whole), but never to nothing:
            # below these widths the table is wider than the terminal instead
            table.add_column(column, overflow="fold", min_width=least)
        for v in views:
            state = state_line(v) + "".join(f"; {s.slug} evidence changed" for s in v.tampered)
            if v.record_changed:
                state += "; run record changed"
            if v.resume_lost:
                state += f"; resume state gone (harness repair {v.run_id})"
            if v.processes:
                state += f"; {len(v.processes)} process(es) alive"
            table.add_row(v.run_id, v.inputs.feature.id, state, " ".join(f"{s.number}:{s.verdict}" for s in v.steps))
        out.print(table)
        owed = [command for command in map(next_command, views) if command]
        if owed:  # whole lines under the table: a command is pasted, never cut to a column's width
            out.print("Next:")
            for command in owed:
                out.print(f"  {command}", markup=False, highlight=False, soft_wrap=True)
        _status_exit(views)
        return
    ws.run(run_id).require()  # before importing LangGraph: a typo'd id fails at once
    from harness.workflow.runs import run_status  # cost: LangGraph

    view = run_status(ws, run_id, render=True)
    if as_json:
        print_json(view.model_dump_json())
    else:
        print_view(ws, view)
    _status_exit([view])


def _status_exit(views: list) -> None:
    """Exit EVIDENCE_CHANGED when a step's evidence is not what was produced or approved (the
    run's sign-off is void); else RESUME_STATE_GONE when an unfinished run needs `harness repair`."""
    if any(v.tampered or v.record_changed for v in views):
        raise typer.Exit(EVIDENCE_CHANGED)
    if any(v.resume_lost for v in views):
        raise typer.Exit(RESUME_STATE_GONE)


@app.command()
def approve(
    run_id: str = typer.Argument(..., metavar="RUN"),
    by: str = typer.Option(..., "--by", help="Who approves."),
    note: str | None = typer.Option(None, "--note", help="Why, or what to keep in mind."),
    override: bool = typer.Option(False, "--override", help="Approve a step whose checks failed (needs --note saying why; "
                                  "recorded, and the report says so)."),
    runbook: Path | None = typer.Option(None, "--runbook", help="For a run started without one: the Validation "
                                        "Runbook the steps still to run use (pinned like a runbook given at the start)."),
    workspace: Path | None = WorkspaceOpt,
) -> None:
    """Approve the gate RUN waits at, then run on to the next gate."""

    ws = open_runs_workspace(workspace)
    ws.run(run_id).require()  # before importing LangGraph: a typo'd id fails at once
    from harness.workflow.runs import decide  # cost: LangGraph

    checked = _runbook_to_attach(ws, run_id, runbook)
    with resumable(ws, run_id), progress_lines("running") as progress:
        view = decide(ws, run_id, approve=True, by=by, text=note, override=override, runbook=checked, progress=progress)
    if runbook is not None:
        out.print(f"Runbook {view.inputs.runbook} pinned to run {run_id}: the steps still to run use it.")
    print_outcome(ws, view)
    # the step this approval decided: the latest gate; gates carry whole seconds, and of two
    # approved in one second the later step is the later approval (steps are decided in order)
    approved = [(s.gate.at or "", i, s) for i, s in enumerate(view.steps) if s.gate.decision == "approve" and s.gate.at]
    print_commits(ws, view, [max(approved, key=lambda t: t[:2])[2]] if approved else [])


@app.command()
def reject(
    run_id: str = typer.Argument(..., metavar="RUN"),
    by: str = typer.Option(..., "--by", help="Who rejects."),
    reason: str = typer.Option(..., "--reason", help="What is wrong; the step reruns with it."),
    step: str | None = typer.Option(
        None, "--step",
        help="An earlier, approved step to reject instead (e.g. 02-interface): it reruns, and so does every "
        "step after it.",
    ),
    workspace: Path | None = WorkspaceOpt,
) -> None:
    """Reject the gate RUN waits at (or, with --step, an earlier approved step): the step reruns with the
    reason in its state and report."""

    ws = open_runs_workspace(workspace)
    ws.run(run_id).require()  # before importing LangGraph: a typo'd id fails at once
    from harness.workflow.runs import decide  # cost: LangGraph

    with resumable(ws, run_id), progress_lines("rerunning") as progress:
        view = decide(ws, run_id, approve=False, by=by, text=reason, step=step, progress=progress)
    print_outcome(ws, view)


@app.command()
def resume(
    run_id: str = typer.Argument(..., metavar="RUN"),
    runbook: Path | None = typer.Option(None, "--runbook", help="For a run started without one: the Validation "
                                        "Runbook the steps still to run use (pinned like a runbook given at the start)."),
    workspace: Path | None = WorkspaceOpt,
) -> None:
    """Continue a run that stopped mid-step (crash, kill); finished steps are not repeated. With --runbook, a run
    started without one gets it for the steps still to run."""

    ws = open_runs_workspace(workspace)
    ws.run(run_id).require()  # before importing LangGraph: a typo'd id fails at once
    checked = _runbook_to_attach(ws, run_id, runbook)
    from harness.workflow.runs import resume_run  # cost: LangGraph

    with resumable(ws, run_id), progress_lines("resuming") as progress:
        view = resume_run(ws, run_id, progress, runbook=checked)
    if checked is not None:
        out.print(f"Runbook {view.inputs.runbook} pinned to run {run_id}: the steps still to run use it.")
    print_outcome(ws, view)


def _runbook_to_attach(ws: Workspace, run_id: str, runbook: Path | None) -> Path | None:
    """`approve` / `resume --runbook`: the runbook checked like `run` checks its own, before
    anything is decided or recorded (its placeholders filled in too), and a warning when it is
    for another release than the run's target, said before the steps that serve it run."""
    from harness.evidence.runbook import (
        load_runbook,
        refuse_placeholders,
        release_mismatch,
    )
    from harness.workflow.views import load_inputs

    checked = checked_runbook(runbook)
    if checked is None:
        return None
    refuse_placeholders(checked)
    inputs = load_inputs(ws.run(run_id))
    mismatch = release_mismatch(load_runbook(checked), inputs.upstream) if inputs.runbook is None else None
    if mismatch:  # (a run that has a runbook keeps it: attaching another is refused, the same one changes nothing)
        out.print(f"Warning: {mismatch}")
    return checked


@app.command()
def repair(
    run_id: str | None = typer.Argument(None, metavar="[RUN]", help="Run id (default: every run)."),
    workspace: Path | None = WorkspaceOpt,
) -> None:
    """Rebuild the resume state (LangGraph's checkpoints) of RUN, or of every run, from the runs' journals,
    after .harness/state.sqlite was lost, emptied or corrupted. A corrupt file is moved aside, not deleted.
    Says what it cannot rebuild (exit 1)."""
    ws = open_runs_workspace(workspace, writes=True)
    if run_id is not None:
        ws.run(run_id).require()
    from harness.workflow.resume import repair as repair_runs  # cost: LangGraph

    moved, results = repair_runs(ws, run_id)
    if moved is not None:
        out.print(f"The state file was corrupt: moved it aside to {moved}; rebuilding every run.")
    if not results:
        out.print(f"No runs in {ws.root}.")
    for result in results:
        out.print(f"{result.run_id}: {result.outcome}: {result.detail}")
    if any(r.outcome in ("failed", "skipped") for r in results):
        raise typer.Exit(1)


# --------------------------------------------------------------------------- output
