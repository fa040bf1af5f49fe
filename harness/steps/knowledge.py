"""After the last gate: the write-back. The agent proposes updates to the knowledge files — the
Platform Map's curated notes, the Operator Recipes, the Validation Runbook (new baselines) and a
lesson per step (`.harness/skills/<step>/LESSONS.md`, which `step_skill` appends to the skill) —
as one patch in a sandbox of the plugin, shown at a final "knowledge" gate. Approving commits it
on the sandbox's branch (and prints where each file goes); rejecting leaves every file as it was.

Knowledge files that live outside the plugin (a workspace's runbook and recipes, a Platform Map
only the alignment step wrote) are seeded into the sandbox first, as one commit the patch is
taken against, so the patch shows only what the agent changed. With no endpoint configured
nothing runs and the gate is skipped, with that reason journaled (`skip_gate`)."""

from __future__ import annotations

import json
import re
import shlex
import shutil
from pathlib import Path
from typing import Any

import yaml

from harness.agent.config import NOT_CONFIGURED
from harness.agent.sandbox import Refused, Sandbox
from harness.errors import HarnessError
from harness.evidence.recipes import load_recipes
from harness.evidence.runbook import load_runbook
from harness.record.checks import Check, CheckStatus, not_run
from harness.record.models import Draft, RunInputs, StepResult
from harness.steps.base import Collected, Step, StepContext, load_result, read_facts
from harness.steps.drafting import (
    agent_draft,
    checks_context,
    run_in_sandbox,
    sandbox_dir,
)
from harness.util.yamlfile import parse_yaml, read_yaml_text

PLATFORM_MAP = "platform-map.yaml"  # where `harness map` writes it in the plugin
SEEDED = ".harness/knowledge"  # copies of knowledge files that live outside the plugin
AFTER = "knowledge/after"  # evidence: each changed knowledge file as the patch leaves it
KNOWLEDGE_PREFIXES = (PLATFORM_MAP, ".harness/")
# Refused in a knowledge file's name: its merge hint is pasted into a shell (quoted, but a name
# needing quotes is not a knowledge file's); control characters would also garble the report.
UNSAFE_NAME = re.compile(r"[\x00-\x1f\x7f$`;&|<>()*?\[\]{}!\\'\"~#]")


class KnowledgeStep(Step):
    number = 6
    name = "knowledge"
    title = "Knowledge: what this port teaches the next one"
    template = "step.md.j2"

    def collect(self, ctx: StepContext) -> Collected:
        if ctx.inputs.agent is None:
            return Collected(facts={"agent": {"status": "not_run", "reason": NOT_CONFIGURED}})
        facts: dict[str, Any] = {}
        try:
            sandbox = Sandbox.create(ctx.plugin, sandbox_dir(ctx.run, ctx.slug, ctx.attempt), ctx.inputs.run_id,
                                     self.name, ctx.attempt)
            files = knowledge_files(ctx, sandbox.root)
            sandbox.seed({rel: paths for rel, paths in files.items() if paths is not None},
                         f"knowledge files of run {ctx.inputs.run_id}, as they were (the agent's patch follows)")
            facts["files"] = {rel: sandbox.record.origins.get(rel, str(ctx.plugin / rel)) for rel in files}
            facts["agent"] = run_in_sandbox(sandbox, ctx, self.name, [], [*files_context(facts["files"]),
                                                                  *run_context(ctx)])
        except HarnessError:
            raise
        except Exception as exc:  # noqa: BLE001 — no sandbox: the gate says why, the run goes on
            facts["agent"] = {"status": "not_run", "reason": f"the agent could not start: {str(exc).splitlines()[0]}"}
            return Collected(facts=facts)
        changed = sandbox.changed()  # from git: a file's content can forge a `+++ b/` line of the patch
        after = (ctx.evidence_dir / AFTER).resolve()
        links = []  # changed paths that are symlinks or lead through one: never followed, refused by the judge
        for rel in changed:  # what the judge validates: the files as the patch leaves them
            try:
                source = sandbox.resolve(rel)
            except Refused:
                links.append(rel)
                continue
            if (sandbox.root / rel).is_symlink():
                links.append(rel)
            elif source.is_file() and (target := (after / rel).resolve()).is_relative_to(after):
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(source, target)
        facts["changed"] = changed
        facts["links"] = links
        diff = f"git -C {shlex.quote(str(sandbox.root))} diff {sandbox.record.base_commit}"
        return Collected(facts=facts, commands=[diff])

    def judge(self, evidence_dir: Path, inputs: RunInputs) -> list[Check]:
        facts = read_facts(evidence_dir)
        agent = facts.get("agent") or {}
        if agent.get("status") == "not_run":
            return [not_run("knowledge.patch", agent.get("reason") or NOT_CONFIGURED)]
        changed: list[str] = facts.get("changed", [])
        if not changed:
            return [Check(name="knowledge.patch", status=CheckStatus.not_run,
                          reason="the agent proposed no change to the knowledge files")]
        problems = []
        for rels, what in (([r for r in changed if not r.startswith(KNOWLEDGE_PREFIXES)], "files that are not knowledge files"),
                           ([r for r in changed if UNSAFE_NAME.search(r)], "file names with shell syntax or control characters"),
                           (facts.get("links", []), "symlinks (not followed)")):
            if rels:
                problems.append(f"the patch changes {what}: {', '.join(map(repr, rels))}")
        checks = [Check(name="knowledge.scope", status=CheckStatus.failed if problems else CheckStatus.passed,
                        reason="; ".join(problems) or f"{len(changed)} knowledge file(s) changed, nothing else",
                        evidence=[agent.get("patch") or ""])]
        problems = [problem for rel in changed if (problem := validate(evidence_dir / AFTER / rel, rel,
                                                                        facts.get("files", {}).get(rel)))]
        checks.append(Check(name="knowledge.files", status=CheckStatus.failed if problems else CheckStatus.passed,
                            reason="; ".join(problems) if problems else "every changed knowledge file still reads "
                            "as what it is (Platform Map, runbook, recipes, YAML)",
                            evidence=[f"{AFTER}/{rel}" for rel in changed]))
        return checks

    def draft(self, ctx: StepContext, facts: dict[str, Any], checks: list[Check]) -> Draft:
        return agent_draft(facts, None)

    def skip_gate(self, result: StepResult) -> str | None:
        """No endpoint, no proposal: the gate does not wait for a decision on nothing."""
        if result.draft.status == "not_run" and result.draft.reason == NOT_CONFIGURED:
            return f"not run: {NOT_CONFIGURED}"
        return None


def knowledge_files(ctx: StepContext, root: Path) -> dict[str, tuple[Path, Path] | None]:
    """The knowledge files the agent may edit, by sandbox path: None for a file the plugin holds
    already, else (the file to seed it from, where an approved change belongs)."""
    plugin = ctx.plugin.resolve()
    files: dict[str, tuple[Path, Path] | None] = {}

    def add(path: Path, seeded_as: str) -> None:
        path = path.resolve()
        if path.is_relative_to(plugin):
            files[path.relative_to(plugin).as_posix()] = None
        else:
            files[seeded_as] = (path, path)

    mapped = ctx.run.evidence_dir("01-alignment") / "platform_map" / PLATFORM_MAP
    if (root / PLATFORM_MAP).is_file():
        files[PLATFORM_MAP] = None
    elif mapped.is_file():  # the run's Platform Map becomes the plugin's (its curated notes empty so far)
        files[PLATFORM_MAP] = (mapped, plugin / PLATFORM_MAP)
    if ctx.inputs.runbook:
        runbook = Path(ctx.inputs.runbook)
        add(runbook, f"{SEEDED}/runbook/{runbook.name}")
        for recipe in load_runbook(runbook).recipes:
            add(Path(recipe), f"{SEEDED}/recipes/{Path(recipe).name}")
    return files


def validate(path: Path, rel: str, origin: str | None) -> str | None:
    """Why a changed knowledge file no longer reads as what it is, or None."""
    if not path.is_file():
        return None  # deleted: the patch shows it
    try:
        if rel == PLATFORM_MAP:
            data = parse_yaml(read_yaml_text(path, "the Platform Map"), path)[0]
            if not isinstance(data, dict) or not isinstance(data.get("curated"), dict):
                return f"{rel}: not a Platform Map with a `curated:` mapping"
        elif rel.startswith(f"{SEEDED}/runbook/"):
            load_runbook(path, base_dir=Path(origin).parent if origin else path.parent)
        elif rel.startswith(f"{SEEDED}/recipes/"):
            load_recipes(path)
        elif rel.endswith((".yaml", ".yml")):  # the agent's YAML: bounded like any input (size, aliases)
            parse_yaml(read_yaml_text(path, "knowledge file"), path)
    except HarnessError as exc:
        return f"{rel}: {exc}"
    except (yaml.YAMLError, OSError, UnicodeDecodeError) as exc:
        return f"{rel}: {str(exc).splitlines()[0]}"
    return None


def files_context(files: dict[str, str]) -> list[str]:
    """The knowledge files, as a section of the agent's starting context."""
    lines = [f"- `{rel}` (belongs at {origin})" for rel, origin in files.items()]
    lines.append("- `.harness/skills/<step>/LESSONS.md`: a lesson for a step's skill (create or append)")
    return ["## The knowledge files you may change (paths in the worktree)", "\n".join(lines)]


def run_context(ctx: StepContext) -> list[str]:
    """What the run found, step by step: verdict, checks and the drafts' summaries."""
    out = ["## What this run found"]
    for evidence in sorted(ctx.run.evidence_dir("x").parent.glob("0[1-5]-*")):
        result = load_result(evidence)
        if result is None:
            continue
        out.append(f"### {evidence.name}: {result.verdict.value} (attempt {result.attempt})")
        out += checks_context(result.checks)[1:]
        if result.draft.summary:
            out.append(f"Draft summary: {result.draft.summary}")
        landings = result.facts.get("landing")
        if landings:
            out.append("Landing points: " + json.dumps(landings, default=str)[:4000])
    return out
