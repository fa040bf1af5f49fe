"""How `harness run`, `status` and friends print a run: its state line, steps, drafts,
commits and outcome."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text

from harness.cli.common import cli_ref
from harness.cli.console import out
from harness.record.layout import Workspace


def state_line(view) -> str:
    if view.state == "finished":
        return "finished"
    if view.state == "running":
        return f"running ({view.running})"
    if view.state == "waiting":
        return f"waiting at {view.waiting_at} gate"
    return f"stopped mid-step (harness resume {view.run_id})"


def next_command(view) -> str:
    """The command that moves the run on from where it stands ("" when nothing is owed)."""
    if view.resume_lost:
        return f"harness repair {view.run_id}"
    if view.state == "waiting":
        failed = any(s.slug == view.waiting_at and s.verdict == "failed" for s in view.steps)
        override = ' --override --note "why"' if failed else ""  # a failed step is approved only knowingly
        return f"harness approve {view.run_id} --by NAME{override} (or reject --reason)"
    if view.state == "interrupted":
        return f"harness resume {view.run_id}"
    return ""


def print_view(ws: Workspace, view) -> None:
    from harness.record.pins import (
        pin_lines,  # cost: the knowledge engine (pins resolve upstreams)
    )

    inputs = view.inputs
    out.print(Text.assemble("Run ", (view.run_id, "bold"), f" — feature {inputs.feature.id} — {state_line(view)}"))
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
        where = f"waits at the {view.waiting_at} gate" if view.waiting_at else state_line(view)
        out.print(Text.assemble("  ", ("resume state gone", "red"),
                                f": {view.resume.note}. Still holds: the journal, evidence and reports "
                                f"({approvals} approval{'s' if approvals != 1 else ''}; the run {where}). "
                                f"Rebuild it: harness repair {view.run_id}{cli_ref(ws)}"))
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
        what = f"slurm job {process.job}" if process.job else f"pid {process.pid}"
        out.print(f"  process alive: {process.role} {what}{where} — {owner}: {' '.join(process.command)[:120]}")
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


def print_commits(ws: Workspace, view, steps: list) -> None:
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


def print_outcome(ws: Workspace, view) -> None:
    print_view(ws, view)
    run_id, ref = view.run_id, cli_ref(ws)
    if view.state == "waiting":
        step = view.step(view.waiting_at)
        out.print(Text.assemble("\nWaiting at the ", (step.slug, "bold"), f" gate (verdict: {step.verdict})."))
        out.print(f"Review {ws.root / step.report}, then:")
        override = " --override" if step.verdict == "failed" else ""  # failed checks are approved only knowingly
        out.print(f"  harness approve {run_id} --by YOUR_NAME{override} --note \"...\"{ref}")
        out.print(f"  harness reject {run_id} --by YOUR_NAME --reason \"...\"{ref}")
    elif view.state == "finished":
        out.print(f"\nRun {run_id} finished; reports in {ws.root / 'reports' / run_id}")
    else:
        out.print(f"\nRun {run_id} stopped mid-step; continue with: harness resume {run_id}{ref}")
