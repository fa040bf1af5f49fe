"""The porting agent inside a step: build its starting context (the feature, the step's skill,
targeted upstream symbol sources, the plugin's findings, the re-port tool's merges, a rejected
attempt's reason and patch), run it in a sandbox of the plugin, keep its transcript and patch as
evidence, and turn the outcome into the step's Draft. On approval the patch is committed on the
sandbox's branch (`commit_approved`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import git

from harness.agent.config import NOT_CONFIGURED
from harness.agent.loop import run_agent
from harness.agent.sandbox import Sandbox
from harness.agent.tools import Toolbox
from harness.knowledge.model import Finding, Status
from harness.knowledge.products import FeatureSpec, map_plugin
from harness.knowledge.upstream import UpstreamSource
from harness.record.checks import Check
from harness.record.layout import RunLayout
from harness.record.models import Draft
from harness.steps.base import StepContext
from harness.steps.skills import step_skill
from harness.steps.symbols import SymbolSource, hunk, locate

TRANSCRIPT = "agent/transcript.jsonl"
PATCH = "agent/patch.diff"
PORT = "port.json"  # the re-port tool's merges and conflicts, when the run has --from
MAX_FACTS_CHARS = 12_000  # a write-up's facts in the starting context; the rest is in the evidence

SYSTEM = """You port an out-of-tree SGLang hardware plugin to a newer SGLang release, one step of a \
reviewed workflow at a time. You work only through the tools, in a git worktree of the plugin; paths are \
relative to it. Follow the step's skill. Make the smallest change that does the task, keep the plugin's \
style, and use run_check to confirm the plugin fits the target upstream. An engineer reviews your patch, \
the checks and this transcript before anything is merged. When done, call finish(summary) saying what \
you changed and why, and anything the engineer must decide."""


def sandbox_dir(run: RunLayout, slug: str, attempt: int) -> Path:
    """Where a step attempt's sandbox lives: in the run's state, outside the evidence."""
    return run.run_dir / "sandbox" / f"{slug}-{attempt}"


def run_step_agent(ctx: StepContext, findings: list[Finding], extra: list[str] | None = None,
                   step: str | None = None) -> tuple[dict[str, Any], Sandbox | None]:
    """Run the agent for the step's task; returns (the `agent` facts, the sandbox or None when
    no sandbox was made). Writes TRANSCRIPT and PATCH into the step's evidence. `extra`:
    more sections of the starting context (a write-up's facts and checks); `step`: the skill
    and branch name when it is not the slug's (the knowledge write-back)."""
    settings = ctx.inputs.agent
    if settings is None:
        return {"status": "not_run", "reason": NOT_CONFIGURED}, None
    step = step or ctx.slug.split("-", 1)[1]
    sandbox = Sandbox.create(ctx.plugin, sandbox_dir(ctx.run, ctx.slug, ctx.attempt), ctx.inputs.run_id, step,
                             ctx.attempt)
    return run_in_sandbox(sandbox, ctx, step, findings, extra or []), sandbox


def run_in_sandbox(sandbox: Sandbox, ctx: StepContext, step: str, findings: list[Finding],
                   extra: list[str]) -> dict[str, Any]:
    """The agent loop in `sandbox` for `step`'s skill, with the starting context plus `extra`;
    the `agent` facts. Writes TRANSCRIPT and PATCH into the step's evidence."""
    settings = ctx.inputs.agent
    assert settings is not None  # callers return `not run` before a sandbox is made
    skill_path, skill_body = step_skill(step, ctx.plugin)
    task = agent_context(step, ctx.feature, skill_body, ctx.old_upstream, ctx.upstream, findings,
                         port=_read_json(ctx.evidence_dir / PORT), rejection=ctx.rejection_reason,
                         previous_patch=previous_patch(ctx.run, ctx.slug, ctx.attempt), extra=extra)
    successors = {f.target: f.successor for f in findings if f.successor}
    toolbox = Toolbox(sandbox, upstream_source_tool(ctx.old_upstream, ctx.upstream, successors),
                      lambda: committed_check(sandbox, ctx.upstream))
    ctx.progress(f"agent: {settings.model} drafting {step} in {sandbox.root}")
    outcome = run_agent(settings, SYSTEM, task, toolbox, ctx.evidence_dir / TRANSCRIPT)
    patch = sandbox.diff()
    ctx.write_text(PATCH, patch)
    return {"status": outcome.status, "reason": outcome.reason, "summary": outcome.summary, "turns": outcome.turns,
            "tokens": outcome.tokens, "tools": outcome.tools, "refusals": toolbox.refusals, "branch": sandbox.record.branch,
            "worktree": str(sandbox.root), "skill": str(skill_path), "patch": PATCH, "transcript": TRANSCRIPT,
            "changed": bool(patch), "diff": patch}


def write_up_draft(ctx: StepContext, facts: dict[str, Any], checks: list[Check]) -> Draft:
    """The draft of a step whose agent writes up rather than ports (alignment, operators,
    accuracy, performance): the agent starts from the step's skill, facts and checks, may write
    files in a sandbox of the plugin (e.g. a landing-point report), and its `finish` summary is
    the write-up. Runs after `judge`, so it sees the verdict; it never changes it."""
    try:
        agent, _ = run_step_agent(ctx, [], [*facts_context(facts), *checks_context(checks)])
    except Exception as exc:  # noqa: BLE001 — no sandbox or a malformed skill: the step's checks stand
        agent = {"status": "not_run", "reason": f"the agent could not start: {str(exc).splitlines()[0]}"}
    return agent_draft({"agent": agent}, None)


def facts_context(facts: dict[str, Any]) -> list[str]:
    """The step's facts as a section of the agent's starting context (cut when large)."""
    text = json.dumps({k: v for k, v in facts.items() if k != "agent"}, indent=1, sort_keys=True, default=str)
    if len(text) > MAX_FACTS_CHARS:
        text = text[:MAX_FACTS_CHARS] + f"\n... cut: {len(text) - MAX_FACTS_CHARS} more characters"
    return ["## The step's facts (its evidence, as the report shows it)", f"```json\n{text}\n```"]


def checks_context(checks: list[Check]) -> list[str]:
    """The step's checks, one line each, as a section of the agent's starting context."""
    lines = [f"- `{c.name}`: {c.status.value}" + (f" — {c.reason}" if c.reason else "") for c in checks]
    return ["## The step's checks (decided by the step, not by you)", "\n".join(lines) or "(none)"]


def agent_draft(facts: dict[str, Any], checks_on: str | None) -> Draft:
    """The step's Draft from the `agent` facts `run_step_agent` returned; `checks_on` says
    what the step's checks were run on (None: the agent ran after them)."""
    agent: dict[str, Any] = facts.get("agent") or {"status": "not_run", "reason": NOT_CONFIGURED}
    if agent["status"] == "not_run":
        return Draft(status="not_run", reason=agent["reason"])
    text = [agent.get("summary") or "(the agent left no summary)", ""]
    if checks_on:
        text += [f"The checks above ran on {checks_on}.", ""]
    text += [f"```diff\n{agent['diff'].rstrip()}\n```"] if agent.get("diff") else ["The agent changed no file."]
    return Draft(status="drafted" if agent["status"] == "finished" else "not_finished", reason=agent.get("reason"),
                 text="\n".join(text), summary=agent.get("summary"), patch=agent["patch"],
                 transcript=agent["transcript"], branch=agent["branch"], turns=agent["turns"], tokens=agent["tokens"],
                 tools=agent["tools"], refusals=agent["refusals"])


def agent_context(step: str, feature: FeatureSpec, skill: str, old: UpstreamSource | None, new: UpstreamSource,
                  findings: list[Finding], *, port: dict[str, Any] | None = None, rejection: str | None = None,
                  previous_patch: str | None = None, extra: list[str] | None = None) -> str:
    """The task the agent starts from: targeted, not whole files (benchmarks/agent_context.py
    measures the difference)."""
    parts = [f"# Task: the {step} step for feature `{feature.id}` — {feature.name}",
             feature.description.strip(),
             f"Target upstream: {new.label}" + (f"; the plugin was written for {old.label}." if old else "."),
             "## The step's skill (decision rules)", skill.strip(),
             "## Upstream symbols of the feature", symbol_context(old, new, feature.symbols),
             "## Where the plugin does not fit the target upstream (live findings that are not ok)",
             findings_context(findings), *(extra or [])]
    if port:
        parts += ["## Starting point: the re-port tool's merges and conflicts", format_ports(port)]
    if rejection:
        parts += ["## The previous attempt was rejected", f"Reviewer's reason: {rejection}"]
        if previous_patch:
            parts += ["Its patch (start again from the plugin as it is; keep what the reviewer did not object to):",
                      f"```diff\n{previous_patch.rstrip()}\n```"]
    return "\n\n".join(p for p in parts if p)


def symbol_context(old: UpstreamSource | None, new: UpstreamSource, symbols: list[str]) -> str:
    """Each symbol's source on the target upstream, and its diff from the older one."""
    out = []
    for symbol in symbols:
        before = locate(old, symbol) if old else None
        after = locate(new, symbol)
        if after is not None:
            out.append(_source_block(after, new))
        else:
            out.append(f"`{symbol}`: does not resolve on {new.label}")
        change = hunk(before, after, old.label, new.label) if old and before else ""
        if old and change:
            out.append(f"Changed since {old.label}:\n```diff\n{change.rstrip()}\n```")
        elif old is not None and before is not None and after is None:
            out.append(_source_block(before, old))
    return "\n\n".join(out) or "(the feature names no symbols)"


def findings_context(findings: list[Finding]) -> str:
    """One line per live finding that is not ok (what the plugin must change), with successors."""
    lines = []
    for f in findings:
        if not f.live or f.status in (Status.ok, Status.extension):  # an extension is the plugin's own: nothing to port
            continue
        line = f"- {f.kind} `{f.target}` at {f.file}:{f.line}: {f.status.value}"
        if f.successor:
            line += f"; successor `{f.successor}` ({f.successor_reason})"
        lines.append(line)
    return "\n".join(lines) or "(none: every live dependency resolves and fits)"


def format_ports(port: dict[str, Any]) -> str:
    """port.json (the re-port tool's result) as the agent's starting point: for each ported
    copy its status, the merge or conflict patch, names the copy needs imported, and a changed
    signature. Unchanged copies and non-copies get one line."""
    out = []
    for entry in port.get("ports", []):
        head = f"- `{entry.get('target')}` ({entry.get('hook_type') or 'hook'}) at {entry.get('file')}:{entry.get('line')}: " \
               f"{entry.get('status')}"
        if entry.get("copy_of"):
            head += f", a copy of `{entry['copy_of']}` (similarity {entry.get('similarity')})"
        out.append(head)
        if entry.get("status") not in ("clean", "conflict"):
            continue
        if entry.get("status") == "conflict":
            out.append("  The merge conflicts: resolve it by hand in the file.")
        if entry.get("patch"):
            out.append(f"```diff\n{str(entry['patch']).rstrip()}\n```")
        for name in entry.get("undefined_names") or []:
            out.append(f"  needs `{name.get('name')}`: {name.get('upstream_import') or 'no upstream import found'}")
        if entry.get("signature_change"):
            out.append(f"  signature change: {entry['signature_change']}")
    return "\n".join(out) or "(the re-port tool found no copies to port)"


def upstream_source_tool(old: UpstreamSource | None, new: UpstreamSource, successors: dict[str, str]):
    """The `upstream_source(target, version)` tool: the symbol's source at 'from' or 'to', where
    it is defined in each, and its successor when it is gone."""

    def lookup(target: str, version: str) -> str:
        source, other = (old, new) if version == "from" else (new, old)
        if source is None:
            return "error: this run has no 'from' upstream (--from)"
        found = locate(source, target)
        lines = []
        if found is None:
            lines.append(f"`{target}` does not resolve on {source.label}")
            if successors.get(target):
                lines.append(f"its successor: `{successors[target]}`")
                found = locate(source, successors[target])
        if found is not None:
            there = locate(other, found.symbol) if other else None
            if other is not None and there is not None and there.defined_as != found.defined_as:
                lines.append(f"moved: defined as `{found.defined_as}` on {source.label}, `{there.defined_as}` "
                             f"on {other.label}")
            lines.append(_source_block(found, source))
        return "\n".join(lines)

    return lookup


def check_json(plugin: Path, upstream: UpstreamSource) -> str:
    """The `run_check` tool: the drift check of `plugin` (uncached: it changes between calls),
    the findings that are not ok, as JSON."""
    findings = map_plugin(plugin, upstream, commit=False).findings
    bad = [f for f in findings if f.status not in (Status.ok, Status.extension)]
    return json.dumps({"upstream": upstream.label, "checked": len(findings),
                       "breaking": sum(f.breaking for f in bad),
                       "findings": [f.model_dump(mode="json", include={"kind", "target", "status", "breaking", "live", "file",
                                                                        "line", "successor", "detail"}) for f in bad]},
                      indent=1)


def committed_check(sandbox: Sandbox, upstream: UpstreamSource) -> str:
    """`check_json` of exactly what an approval would commit (`Sandbox.committable`): a fix in
    a git-ignored file must not pass a check the committed change fails."""
    with sandbox.committable() as tree:
        return check_json(tree, upstream)


def previous_patch(run: RunLayout, slug: str, attempt: int) -> str | None:
    """The patch of the step's previous attempt: still in place while this attempt runs, or
    moved aside by a reopening."""
    if attempt <= 1:
        return None
    candidates = [run.evidence_dir(slug) / PATCH, *sorted(run.superseded_dir.glob(f"{slug}.attempt-{attempt - 1}*/{PATCH}"))]
    for path in candidates:
        if path.is_file():
            return path.read_text(encoding="utf-8")
    return None


def commit_approved(run: RunLayout, slug: str, attempt: int, by: str, automatic: bool) -> None:
    """After an approval: commit the attempt's sandbox change on its branch, exactly the approved
    patch. The outcome is in the sandbox record (`committed`, or `commit_error`), read by the CLI."""
    sandbox = Sandbox.load(sandbox_dir(run, slug, attempt))
    patch = run.evidence_dir(slug) / PATCH
    if sandbox is None or not patch.is_file():
        return
    how = "automatically (--auto-approve)" if automatic else f"by {by}"
    try:
        sandbox.commit(f"{slug}: {run.run_id} attempt {attempt}, approved {how}\n\nDrafted by the harness "
                       f"porting agent; evidence: {run.evidence_dir(slug)}", patch.read_text(encoding="utf-8"))
    except (ValueError, git.GitCommandError) as exc:
        sandbox.fail(str(exc).splitlines()[0])


def _source_block(source: SymbolSource, upstream: UpstreamSource) -> str:
    return f"`{source.symbol}` = `{source.defined_as}` at {source.file}:{source.start} ({upstream.label}):\n" \
           f"```python\n{source.text.rstrip()}\n```"


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
