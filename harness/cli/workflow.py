"""Workflow commands: run, features, status, approve, reject, resume, repair.

`harness run` with neither --plugin nor --upstream runs the built-in example workspace. Every
command on a workspace's runs first stops what a killed harness left running there."""

from __future__ import annotations

import json
import os
import re
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

import typer
from rich.table import Table
from rich.text import Text

from harness.cli.base import app
from harness.cli.console import err, out, print_json
from harness.cli.paths import resolved
from harness.errors import HarnessError
from harness.knowledge.upstream import RELEASE_SPEC, UNREACHABLE, cache_dir
from harness.record.layout import Workspace, check_run_id, utc_now

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
EXAMPLE_WORKSPACE = EXAMPLES / "workspace"
DEFAULT_UPSTREAM = "sglang==0.5.23"
DEFAULT_FROM = "sglang==0.5.17"
DEFAULT_FEATURE = "kv-pool-factory"

# Exit codes of `status` beyond 0 and 2 (bad input)
EVIDENCE_CHANGED = 1  # an approval is invalidated, evidence changed since its step produced it, or the run record
                      # (journal chain, run.json, runbook) changed since the run started
RESUME_STATE_GONE = 3  # an unfinished run's resume state is missing or unreadable: `harness repair`
LOG_LINE_EVERY_S = 5.0  # non-terminal output: at most one progress line this often, besides step starts

WorkspaceOpt = typer.Option(
    None, "--workspace", "-w", help="Workspace holding .harness/ state and reports/ (default: current dir)."
)


def _workspace(path: Path | None, *, writes: bool = False) -> Workspace:
    """The workspace at `path` (default: the current directory), resolved. HarnessError when it
    cannot be resolved (a symlink loop), is not a directory, cannot be read, or — with `writes`,
    for a command that records runs — cannot hold `.harness/` (e.g. /proc)."""
    root = resolved(path or Path.cwd(), "workspace")
    if not root.is_dir():
        raise HarnessError(f"workspace {root} is not a directory")
    if not os.access(root, os.R_OK | os.X_OK):
        raise HarnessError(f"workspace {root} is not readable (permission denied)")
    ws = Workspace(root)
    if writes:
        # A probe directory in the deepest of .harness/runs, .harness, the root that exists: a
        # command that then fails on other input leaves the workspace as it found it.
        where = next(d for d in (ws.runs_dir, ws.harness_dir, root) if d.is_dir())
        try:
            os.rmdir(tempfile.mkdtemp(prefix=".probe-", dir=where))
        except OSError as exc:
            raise HarnessError(f"workspace {root} cannot hold run state: cannot create {ws.runs_dir}: "
                               f"{exc.strerror or exc}; nothing was recorded") from None
    return ws


def _runs_workspace(path: Path | None, *, writes: bool = False) -> Workspace:
    """The workspace of a command on its runs (`writes`: one that starts or rebuilds runs), after
    stopping every process a killed harness left running there (said on stderr)."""
    from harness.record.processes import sweep_workspace

    ws = _workspace(path, writes=writes)
    for run_id, record in sweep_workspace(ws):
        err.print(f"stopped an orphan of run {run_id} (its harness process {record.owner_pid} is gone): "
                  f"{record.describe()}")
    return ws


@contextmanager
def _progress(what: str) -> Iterator:
    """A spinner on stderr for the slow parts; each step's start is also printed as a line. A
    log or CI pipe shows no spinner: there a message becomes a line once LOG_LINE_EVERY_S seconds
    passed without one (a health wait reports every 10 s), so a long wait is never silent and a
    quick command prints nothing extra."""
    terminal = err.is_terminal
    last_line = [time.monotonic()]
    with err.status(Text(what)) as status:  # a str status is parsed as markup: Text keeps it text

        def update(message: str) -> None:
            now = time.monotonic()
            if message.startswith("step ") or (not terminal and now - last_line[0] >= LOG_LINE_EVERY_S):
                err.print(Text.assemble((utc_now(), "dim"), " ", message))
                last_line[0] = now
            status.update(Text(message))

        yield update


def _cli_ref(workspace: Workspace) -> str:
    return "" if workspace.root == Path.cwd().resolve() else f" --workspace {workspace.root}"


# --------------------------------------------------------------------------- inputs


def validate_plugin(path: Path) -> Path:
    """A plugin is a project declaring sglang.srt.platforms / sglang.srt.plugins entry points."""
    from harness.knowledge.plugin_repo import PLATFORM_GROUP, PLUGIN_GROUP, read_entry_points  # cost: tomllib, the knowledge records

    path = resolved(path, "plugin path")
    if not path.is_dir():
        raise HarnessError(f"plugin path {path} is not a directory")
    if not read_entry_points(path):
        raise HarnessError(
            f"plugin path {path} is not an SGLang plugin: no {PLATFORM_GROUP} or {PLUGIN_GROUP} "
            "entry points in pyproject.toml, setup.cfg or setup.py"
        )
    return path


def plugin_commit(path: Path) -> str | None:
    """The plugin checkout's HEAD (12 hex), marked when it has uncommitted changes; None outside git."""
    import git  # cost: gitpython loads only for `run`

    try:
        repo = git.Repo(path, search_parent_directories=True)
        head = repo.head.commit.hexsha[:12]
    except (git.InvalidGitRepositoryError, git.NoSuchPathError, ValueError):
        return None
    return f"{head} (with uncommitted changes)" if repo.git.status("--porcelain", "--", str(path)) else head


def _default_source(spec: str) -> str:
    """The real release, from the wheel cache or the index; offline with nothing cached, one line
    on how to fill the cache."""
    from harness.knowledge.sources import resolve  # cost: the knowledge engine

    try:
        resolve(spec)
        return spec
    except HarnessError as exc:
        if UNREACHABLE not in str(exc):
            raise
        raise HarnessError(
            f"{exc}, and {spec} is not in the wheel cache {cache_dir()}: on a machine that reaches the index, "
            f"run `harness fetch {DEFAULT_UPSTREAM} {DEFAULT_FROM}` and copy that cache here, or point "
            f"HARNESS_CACHE_DIR at a pre-filled one"
        ) from None


def absolute_spec(spec: str) -> str:
    """An upstream spec that means the same from any directory: PATH and PATH@REF get an
    absolute PATH (the run records it, and later commands may run elsewhere, with --workspace);
    a release spec is kept."""
    if RELEASE_SPEC.match(spec.strip()):
        return spec
    path = Path(spec).expanduser()
    if path.exists():
        return str(path.resolve())
    head, at, ref = spec.rpartition("@")
    if at and head and Path(head).expanduser().is_dir():
        return f"{Path(head).expanduser().resolve()}@{ref}"
    return spec


def checked_runbook(runbook: Path | None) -> Path | None:
    """The runbook as an absolute path, checked like a step will read it (harness.evidence.inputs);
    HarnessError `file:line: field: message` on the first problem. None stays None."""
    from harness.evidence.inputs import check_runbook  # cost: the evidence models

    if runbook is None:
        return None
    path = resolved(runbook, "runbook")
    if not path.exists():  # anything else there (a FIFO, a directory) is refused by the reader, by name
        raise HarnessError(f"runbook {path} does not exist")
    check_runbook(path)
    return path


def _check_feature_file(feature: str, feature_dirs: list[Path]) -> None:
    """A feature named by file (path, or ID in the feature dirs) must validate, reported as
    `file:line: field: message`, before anything else runs."""
    from harness.knowledge.features import feature_files, load_feature_file  # cost: the knowledge models

    as_path = Path(feature)
    named = as_path.suffix in (".yaml", ".yml") and as_path.exists()  # a FIFO or directory too: refused by name
    path = as_path if named else feature_files(feature_dirs).get(feature)
    if path is not None:
        load_feature_file(path)


def _new_run_id(workspace: Workspace, feature_id: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9]+", "-", feature_id.split(".")[-1]).strip("-").lower()[:40] or "run"
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    run_id, n = f"{slug}-{stamp}", 1
    while workspace.run(run_id).exists():
        n += 1
        run_id = f"{slug}-{stamp}-{n}"
    return run_id


# --------------------------------------------------------------------------- commands


@app.command()
def run(
    feature: str | None = typer.Option(
        None, "--feature", "-f",
        help="Feature file (path or ID in features/), Feature Diff symbol, or commit range A..B.",
    ),
    plugin: Path | None = typer.Option(None, "--plugin", help="Plugin checkout (default: the built-in example)."),
    upstream: str | None = typer.Option(None, "--upstream", help="Target upstream: sglang==X, PATH@REF or PATH."),
    from_: str | None = typer.Option(None, "--from", help="Older upstream the plugin was written for."),
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
    # cost: LangGraph, the knowledge engine and the runners load only for the commands that use them
    from harness.agent.config import describe, resolve_settings
    from harness.evidence.runbook import load_runbook
    from harness.knowledge.features import resolve_feature
    from harness.knowledge.sources import resolve
    from harness.workflow.runs import check_workspace, new_inputs, start_run

    ws = _runs_workspace(workspace, writes=True)
    builtin = plugin is None and upstream is None
    if builtin:
        plugin = EXAMPLE_WORKSPACE / "plugin"
        runbook = runbook or EXAMPLE_WORKSPACE / "runbook.yaml"
        feature = feature or DEFAULT_FEATURE
        out.print(f"Using the built-in example workspace {EXAMPLE_WORKSPACE}")
    elif plugin is None or upstream is None:
        raise HarnessError("give both --plugin and --upstream, or neither to run the built-in example")
    if feature is None:
        raise HarnessError("--feature is required (see `harness features` for candidates)")
    if run_id is not None:
        check_run_id(run_id)
        if ws.run(run_id).exists():
            raise HarnessError(f"run {run_id!r} already exists; pick another --run-id or `harness resume {run_id}`")
    plugin_path = validate_plugin(plugin)
    # Fail fast: every input a step reads is checked before anything runs or is recorded.
    runbook_path = checked_runbook(runbook)
    feature_dirs = [ws.root / "features"] + ([EXAMPLE_WORKSPACE / "features"] if builtin else [])
    _check_feature_file(feature, feature_dirs)
    agent = resolve_settings(llm_base_url, llm_model, load_runbook(runbook_path).agent if runbook_path else None)
    check_workspace(ws)
    if builtin:
        with _progress(f"resolving {DEFAULT_UPSTREAM} and {from_ or DEFAULT_FROM}"):
            upstream = _default_source(DEFAULT_UPSTREAM)
            from_ = from_ or _default_source(DEFAULT_FROM)
    upstream = absolute_spec(upstream)
    from_ = absolute_spec(from_) if from_ else None
    with _progress(f"resolving upstream {upstream}") as progress:
        new = resolve(upstream)
        old = None
        if from_:
            progress(f"resolving upstream {from_}")
            old = resolve(from_)
        progress(f"resolving feature {feature}")
        spec = resolve_feature(feature, feature_dirs, old, new, plugin_path, progress)
    inputs = new_inputs(run_id or _new_run_id(ws, spec.id), spec, plugin_path, upstream, from_,
                        plugin_commit=plugin_commit(plugin_path), runbook=runbook_path, agent=agent,
                        auto_approve=auto_approve)
    out.print(Text.assemble("Run ", (inputs.run_id, "bold"), f": feature {spec.id} ({spec.source.replace('_', ' ')}), "
                            f"upstream {new.label}" + (f" from {old.label}" if old else "")))
    out.print(describe(agent))
    with _progress("running") as progress:
        view = start_run(ws, inputs, progress)
    _print_outcome(ws, view)
    if auto_approve:
        _print_commits(ws, view, [s for s in view.steps if s.gate.decision == "approve"])


@app.command()
def features(
    from_: str = typer.Option(..., "--from", help="Older upstream: sglang==X, PATH@REF or PATH."),
    to: str = typer.Option(..., "--to", help="Newer upstream."),
    plugin: Path | None = typer.Option(None, "--plugin", help="Plugin, to rank what it depends on first."),
    limit: int = typer.Option(40, "--limit", help="Rows to show (0: all)."),
    flat: bool = typer.Option(False, "--flat", help="One row per changed symbol instead of grouped features."),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
    workspace: Path | None = WorkspaceOpt,
) -> None:
    """List the features between two upstreams a person triages: the plugin's impacted dependencies grouped by
    the upstream change behind them, platform-surface changes, then other upstream changes by commit or module;
    ranked by risk to the plugin, each with why it matters. --flat lists every changed symbol instead."""
    from harness.knowledge.features import candidates  # cost: the knowledge engine
    from harness.knowledge.sources import resolve

    ws = _workspace(workspace)
    plugin_path = validate_plugin(plugin) if plugin else None
    with _progress(f"diffing {from_} → {to}") as progress:
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
    ws = _runs_workspace(workspace)
    if run_id is None:
        from harness.workflow.runs import run_status  # cost: LangGraph

        views = [run_status(ws, rid) for rid in ws.run_ids()]
        if as_json:
            print_json(json.dumps([v.model_dump(mode="json") for v in views]))
            _status_exit(views)
            return
        if not views:
            out.print(f"No runs in {ws.root}.")
            return
        table = Table(title=f"Runs in {ws.root}")
        for column in ("run", "feature", "state", "steps"):
            table.add_column(column)
        for v in views:
            state = _state_line(v) + "".join(f"; {s.slug} evidence changed" for s in v.tampered)
            if v.record_changed:
                state += "; run record changed"
            if v.resume_lost:
                state += f"; resume state gone (harness repair {v.run_id})"
            if v.processes:
                state += f"; {len(v.processes)} process(es) alive"
            table.add_row(v.run_id, v.inputs.feature.id, state, " ".join(f"{s.number}:{s.verdict}" for s in v.steps))
        out.print(table)
        _status_exit(views)
        return
    ws.run(run_id).require()  # before importing LangGraph: a typo'd id fails at once
    from harness.workflow.runs import run_status  # cost: LangGraph

    view = run_status(ws, run_id, render=True)
    if as_json:
        print_json(view.model_dump_json())
    else:
        _print_view(ws, view)
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
    workspace: Path | None = WorkspaceOpt,
) -> None:
    """Approve the gate RUN waits at, then run on to the next gate."""

    ws = _runs_workspace(workspace)
    ws.run(run_id).require()  # before importing LangGraph: a typo'd id fails at once
    from harness.workflow.runs import decide  # cost: LangGraph

    with _progress("running") as progress:
        view = decide(ws, run_id, approve=True, by=by, text=note, progress=progress)
    _print_outcome(ws, view)
    approved = [s for s in view.steps if s.gate.decision == "approve" and s.gate.at]
    _print_commits(ws, view, [max(approved, key=lambda s: s.gate.at or "")] if approved else [])


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

    ws = _runs_workspace(workspace)
    ws.run(run_id).require()  # before importing LangGraph: a typo'd id fails at once
    from harness.workflow.runs import decide  # cost: LangGraph

    with _progress("rerunning") as progress:
        view = decide(ws, run_id, approve=False, by=by, text=reason, step=step, progress=progress)
    _print_outcome(ws, view)


@app.command()
def resume(
    run_id: str = typer.Argument(..., metavar="RUN"),
    workspace: Path | None = WorkspaceOpt,
) -> None:
    """Continue a run that stopped mid-step (crash, kill); finished steps are not repeated."""

    ws = _runs_workspace(workspace)
    ws.run(run_id).require()  # before importing LangGraph: a typo'd id fails at once
    from harness.workflow.runs import resume_run  # cost: LangGraph

    with _progress("resuming") as progress:
        view = resume_run(ws, run_id, progress)
    _print_outcome(ws, view)


@app.command()
def repair(
    run_id: str | None = typer.Argument(None, metavar="[RUN]", help="Run id (default: every run)."),
    workspace: Path | None = WorkspaceOpt,
) -> None:
    """Rebuild the resume state (LangGraph's checkpoints) of RUN, or of every run, from the runs' journals,
    after .harness/state.sqlite was lost, emptied or corrupted. A corrupt file is moved aside, not deleted.
    Says what it cannot rebuild (exit 1)."""
    ws = _runs_workspace(workspace, writes=True)
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


def _state_line(view) -> str:
    if view.state == "finished":
        return "finished"
    if view.state == "running":
        return f"running ({view.running})"
    if view.state == "waiting":
        return f"waiting at {view.waiting_at} gate"
    return "stopped mid-step (resume it)"


def _print_view(ws: Workspace, view) -> None:
    from harness.record.pins import pin_lines  # cost: the knowledge engine (pins resolve upstreams)

    inputs = view.inputs
    out.print(Text.assemble("Run ", (view.run_id, "bold"), f" — feature {inputs.feature.id} — {_state_line(view)}"))
    for note in inputs.notes:
        out.print(f"  note: {note}")
    for line in pin_lines(inputs):
        out.print(f"  {line}")
    for step in view.steps:
        gate = step.gate.label + (f" — {step.gate.by}, {step.gate.at}" if step.gate.by else "")
        out.print(f"  {step.slug:<15} {step.verdict:<13} gate: {gate}")
        if step.gate.note or step.gate.reason:
            out.print(f"      {'note' if step.gate.note else 'reason'}: {step.gate.note or step.gate.reason}")
        draft = _draft_problem(ws.root, step)
        if draft:
            out.print(f"      draft: {draft}", style="yellow")
        for check in step.checks:
            reason = f": {check.reason}" if check.reason else ""
            out.print(f"      {check.name}: {check.status.value.replace('_', ' ')}{reason}")
        if step.evidence_hash:
            out.print(f"      evidence {step.evidence_hash}")
        if step.gate.valid is False:
            out.print(Text.assemble("      ", ("approval invalidated: evidence changed", "red"),
                                    f" (approved {step.gate.evidence_hash})"))
        elif step.evidence_changed:
            out.print("      evidence changed since the step produced it", style="red")
    if view.resume_lost:
        approvals = sum(1 for s in view.steps if s.gate.decision == "approve")
        where = f"waits at the {view.waiting_at} gate" if view.waiting_at else _state_line(view)
        out.print(Text.assemble("  ", ("resume state gone", "red"),
                                f": {view.resume.note}. Still holds: the journal, evidence and reports "
                                f"({approvals} approval{'s' if approvals != 1 else ''}; the run {where}). "
                                f"Rebuild it: harness repair {view.run_id}{_cli_ref(ws)}"))
    for change in view.record_changed:
        out.print(Text.assemble("  ", ("run record changed", "red"), f": {change}"))
    for slug in view.commits_owed:
        out.print(f"  note: the approved patch of {slug} is not committed yet; the next approve, reject or resume "
                  f"commits it")
    if view.torn_journal_lines:
        out.print(f"  note: {view.torn_journal_lines} torn journal line(s) ignored (a kill mid-write, or not events)")
    if view.reports_stale:
        out.print(f"  note: {view.reports_stale}", style="yellow")
    for process in view.processes:
        owner = (f"started by harness pid {process.owner_pid}, which is running" if process.owner_running
                 else f"an orphan of harness pid {process.owner_pid} that could not be stopped")
        where = f" ({process.step})" if process.step else ""
        out.print(f"  process alive: {process.role} pid {process.pid}{where} — {owner}: {' '.join(process.command)[:120]}")
    if view.evidence_root:
        out.print(f"  evidence: {view.evidence_root} (on this workspace's disk); run state: {view.state_store}")
    out.print(f"  summary: {Path(ws.root, 'reports', view.run_id, 'summary.md')}")


def _draft_problem(root: Path, step) -> str | None:
    """The step's draft status when the agent was asked and did not deliver (endpoint down,
    budget spent); None when it drafted, or when no endpoint is configured (said once, at start)."""
    from harness.agent.config import NOT_CONFIGURED
    from harness.steps.base import load_result

    result = load_result(root / step.evidence_dir) if step.evidence_dir else None
    draft = result.draft if result else None
    if draft is None or draft.status == "drafted" or (draft.reason or "") == NOT_CONFIGURED:
        return None
    return f"{draft.status.replace('_', ' ')}: {draft.reason}"


def _print_commits(ws: Workspace, view, steps: list) -> None:
    """For each approved step the agent drafted: the commit of its patch and how to merge it."""
    from harness.agent.sandbox import Sandbox  # cost: gitpython
    from harness.steps.drafting import sandbox_dir

    run = ws.run(view.run_id)
    for step in steps:
        sandbox = Sandbox.load(sandbox_dir(run, step.slug, step.attempt)) if step.attempt else None
        if sandbox is None:
            continue
        record = sandbox.record
        if record.committed:
            out.print(f"{step.slug}: the approved patch is commit {record.committed[:12]} on branch {record.branch}; "
                      f"merge it with: {sandbox.merge_hint()}")
        elif record.commit_error:
            out.print(Text.assemble((f"{step.slug}: the approved patch was not committed", "red"),
                                    f": {record.commit_error}"))


def _print_outcome(ws: Workspace, view) -> None:
    _print_view(ws, view)
    run_id, ref = view.run_id, _cli_ref(ws)
    if view.state == "waiting":
        step = view.step(view.waiting_at)
        out.print(Text.assemble("\nWaiting at the ", (step.slug, "bold"), f" gate (verdict: {step.verdict})."))
        out.print(f"Review {ws.root / step.report}, then:")
        out.print(f"  harness approve {run_id} --by YOUR_NAME --note \"...\"{ref}")
        out.print(f"  harness reject {run_id} --by YOUR_NAME --reason \"...\"{ref}")
    elif view.state == "finished":
        out.print(f"\nRun {run_id} finished; reports in {ws.root / 'reports' / run_id}")
    else:
        out.print(f"\nRun {run_id} stopped mid-step; continue with: harness resume {run_id}{ref}")
