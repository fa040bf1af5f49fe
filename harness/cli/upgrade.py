"""`harness upgrade`: what a CI bot runs when the upstream engine (SGLang, vLLM) publishes a release."""

from __future__ import annotations

import os
from pathlib import Path

import typer
from rich.text import Text

from harness.cli.base import app
from harness.cli.common import (
    ENGINE,
    WorkspaceOpt,
    checked_runbook,
    open_runs_workspace,
    plugin_commit,
    progress_lines,
    use_plugin_engine,
    validate_plugin,
)
from harness.cli.console import err, out, print_json
from harness.errors import HarnessError
from harness.record.layout import utc_now
from harness.util.interrupts import raise_kept


@app.command()
def upgrade(
    ctx: typer.Context,
    plugin: Path = typer.Option(..., "--plugin", help="Plugin checkout."),
    from_: str = typer.Option("auto", "--from", help="Upstream the plugin targets (auto: what it declares)."),
    to: str = typer.Option("latest", "--to", help="Target upstream (latest: the newest final release on pip's index)."),
    through: str = typer.Option("alignment", "--through", help="Drive each feature's run through: alignment (its "
                                "first gate) or interface (needs the porting agent and an LLM endpoint)."),
    runbook: Path | None = typer.Option(None, "--runbook", help="Validation Runbook the runs use after alignment."),
    llm_base_url: str | None = typer.Option(None, "--llm-base-url", help="With --through interface: the porting agent's "
                                            "OpenAI-compatible endpoint (default: $OPENAI_BASE_URL, then the runbook's agent.base_url)."),
    llm_model: str | None = typer.Option(None, "--llm-model", help="With --through interface: the agent's model "
                                         "(default: $HARNESS_LLM_MODEL, then agent.model)."),
    runs: int = typer.Option(10, "--runs", metavar="N", help="Start review runs for the first N features (blockers first); "
                             "the rest are listed with the command that starts each."),
    parallel: int = typer.Option(1, "--parallel", metavar="K", help="Up to K review runs at once, each in its own "
                                 "process (with a Slurm runbook and --through interface: up to K engine jobs at once); "
                                 "each of their progress lines starts with its feature's id. The summary is the same as with 1."),
    feature: list[str] = typer.Option([], "--feature", metavar="ID", help="Start the run of this feature only (repeatable): the "
                                      "command the summary lists for a feature beyond --runs."),
    steps: int | None = typer.Option(None, "--steps", metavar="N", help="With --from PATH@REF1 --to PATH@REF2 (one git "
                                     "repository): split the first-parent range into N steps, check the plugin at each, and name "
                                     "the step (commit range) that introduced each feature. Each step is one more check."),
    step_commits: int | None = typer.Option(None, "--step-commits", metavar="K", help="As --steps, one step per K commits."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON document (with a `features` list)."),
    github_summary: bool = typer.Option(False, "--github-summary", help="Also append the summary to $GITHUB_STEP_SUMMARY."),
    workspace: Path | None = WorkspaceOpt,
    engine: str | None = ENGINE,
) -> None:
    """Diff the plugin's upstream (SGLang, vLLM) against a newer release, start review runs (to their first gate) for the first
    --runs features, blockers first, and write reports/upgrade-<from>-to-<to>/summary.md. Exit 0: up to date or nothing impacted; 1: impacted
    features wait for review; 3: nothing breaks but some dependencies could not be checked statically; 2: bad input."""
    from harness.agent.config import describe, resolve_settings
    from harness.engines import profile
    from harness.evidence.runbook import load_runbook, refuse_placeholders, release_mismatch
    from harness.workflow.upgrade import (
        from_spec_of,
        render_summary,
        run_upgrade,
        to_spec_of,
    )

    if through not in ("alignment", "interface"):
        raise HarnessError(f"--through {through!r}: use alignment or interface")
    summary_file = os.environ.get("GITHUB_STEP_SUMMARY") if github_summary else None
    if github_summary and not summary_file:
        raise HarnessError("--github-summary: GITHUB_STEP_SUMMARY is not set (it is, inside a GitHub Actions job)")
    ws = open_runs_workspace(workspace, writes=True)
    plugin_path = validate_plugin(plugin)
    use_plugin_engine(ctx, plugin_path, None if from_ == "auto" else from_, engine)
    use_plugin_engine(ctx, plugin_path, None if to == "latest" else to, engine)
    runbook_path = checked_runbook(runbook)
    if runbook_path is not None:  # the review runs serve with it: the template's placeholders are refused here
        refuse_placeholders(runbook_path)
    agent = None
    if through == "interface":
        agent = resolve_settings(llm_base_url, llm_model, load_runbook(runbook_path).agent if runbook_path else None)
        err.print(describe(agent))
    with progress_lines("upgrade") as update:

        def progress(message: str) -> None:
            # the long parts always get a line (a CI log shows where the time went); update()
            # would print a second one for a message after a long silence. A parallel run's
            # message comes as "[feature] message": its steps get a line too (update() keys on "step ")
            raise_kept()  # a Ctrl-C swallowed in a finaliser stops here, as update() would
            bare = message.split("] ", 1)[1] if message.startswith("[") and "] " in message else None
            if (bare or message).startswith(("feature ", "reusing ", "resolving ", "diffing ", "range step ")) \
                    or (bare or "").startswith("step "):
                err.print(Text.assemble((utc_now(), "dim"), " ", message))
            else:
                update(message)

        from_spec, from_source = from_spec_of(plugin_path, from_, to, progress)
        to_spec = to_spec_of(to, progress)
        mismatch = release_mismatch(load_runbook(runbook_path), to_spec) if runbook_path is not None else None
        if mismatch:
            err.print(f"Warning: {mismatch}")
        try:
            report = run_upgrade(ws, plugin_path, from_spec, to_spec, through=through, runbook=runbook_path,
                                 plugin_commit=plugin_commit(plugin_path, ws.root), agent=agent, runs=runs, only=feature,
                                 steps=steps, step_commits=step_commits, progress=progress, from_source=from_source,
                                 parallel=parallel)
            raise_kept()
        except HarnessError as exc:
            if from_source and from_spec in str(exc):  # a release the plugin declares that cannot be had
                raise HarnessError(f"{exc}; --from auto read {from_spec} from {from_source}: pass --from "
                                   f"{profile().distribution}==X to upgrade from another") from None
            raise
        except KeyboardInterrupt:
            # every run stopped where it stood (engines stopped); its journal keeps the finished steps
            err.print("harness: interrupted; rerun the same `harness upgrade` to resume its review runs",
                      markup=False, highlight=False)
            raise SystemExit(130) from None
    if summary_file:
        with open(summary_file, "a", encoding="utf-8") as handle:
            handle.write(render_summary(report, links=False))  # relative links do not resolve on a job page
    if as_json:
        print_json(report.model_dump_json())
    else:
        _print(report)
    raise typer.Exit(report.exit_code)


_WHEN = {"import": "fails at import: ", "startup": "fails at engine start: ", "path": "fails on a path: ",
         "undecided": "breaks (where it fails first is not decided statically): "}


def _introduced(introduced) -> str:
    """"step 2 (a..b): sha subject; sha subject (+3)", the commits touching its targets when known."""
    what = "touching it" if introduced.touching else "in the range"
    commits = "; ".join(c.short() for c in introduced.commits)
    more = f" (+{introduced.more})" if introduced.more else ""
    return f"step {introduced.step} ({introduced.range}), commits {what}: {commits}{more}"


def _print(report) -> None:
    if report.outcome == "up_to_date":
        out.print(f"Up to date: {report.to_spec} is not newer than {report.from_spec}.")
        return
    counts = report.severity_counts()
    started = sum(f.run_id is not None for f in report.features)
    failed = sum(f.state == "error" for f in report.features)
    reused = sum(f.reused for f in report.features if f.run_id is not None)
    declared = f" (declared in {report.from_source})" if report.from_source else ""
    out.print(f"Upgrade {report.from_spec}{declared} → {report.to_spec}: {len(report.features)} feature(s) to review "
              f"({counts['blocker']} blocker(s), {counts['path']} break a path, {counts['warning']} warning(s)), "
              f"review runs: {started - reused} started, {reused} reused, {f'{failed} failed, ' if failed else ''}"
              f"{len(report.features) - started - failed} on demand; "
              f"also {len(report.unchecked)} not decidable statically and {len(report.preexisting)} already broken on "
              f"{report.from_spec} (no runs)")
    if report.through_note:
        out.print(f"  {report.through_note}")
    if report.commits_note and report.features:
        out.print(f"  {report.commits_note}")
    for step in report.steps:
        new = f": {len(step.introduced)} finding(s) first seen" if step.introduced else ""
        out.print(f"  step {step.index}/{len(report.steps)} {step.range} ({step.commits} commit(s)){new}")
    for feature in report.features:
        when = _WHEN.get(feature.fails_at or ("undecided" if feature.breaking else "never"), "")
        out.print(f"  [{feature.risk:>3}] {feature.id}: {when}{feature.fails_reason or feature.why}")
        if feature.introduced:
            out.print(f"        introduced in {_introduced(feature.introduced)}")
        elif feature.commit_label:
            out.print(f"        upstream commit {feature.commit_label}")
        if feature.state == "error":
            out.print(f"        run failed: {feature.error}; retry: {feature.start}")
            continue
        if feature.run_id is None:
            out.print(f"        no run yet: {feature.start}")
            continue
        verdicts = ", ".join(f"{slug} {verdict}" for slug, verdict in feature.verdicts.items())
        reused = "; reused the existing run (same plugin content and target)" if feature.reused else ""
        out.print(f"        run {feature.run_id}: {feature.state} ({verdicts}){reused}")
        for job in feature.jobs:
            out.print(f"        engine of {job.step}: slurm job {job.job_id}" + (f" on {job.node}" if job.node else ""))
        if feature.approve:
            out.print(f"        {feature.approve}")
    for feature in report.preexisting:
        out.print(f"  [{feature.risk:>3}] {feature.id}: {feature.why} (already broken on {report.from_spec}: no run)")
    for feature in report.dead:
        out.print(f"  [{feature.risk:>3}] {feature.id}: {feature.why} (no run: dead modules only)")
    for feature in report.unchecked:
        out.print(f"  [{feature.risk:>3}] {feature.id}: {feature.why} (not run)")
    out.print(f"Summary: {report.summary}")
    if report.features:
        err.print("Features are waiting for review (exit 1).")
