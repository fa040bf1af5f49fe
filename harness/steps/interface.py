"""Step 2 — interface: does the plugin's surface fit the target upstream, and does it serve?

Static checks first (every live hook target and platform override resolves on the target
version; overrides match the base signatures), then the runbook's smoke check (the server
starts and emits tokens, greedy decoding repeats, streaming delivers the same text). The static
checks judge the feature's own dependencies (`in_feature`) and any break the agent's patch adds;
the rest of the plugin is counted in their reasons, `harness check`'s to judge.
"""

from __future__ import annotations

import json
import shlex
from contextlib import nullcontext
from pathlib import Path
from typing import Any, ClassVar

from harness.engines import profile
from harness.errors import HarnessError
from harness.evidence.runbook import Runbook
from harness.evidence.server import RunningServer
from harness.knowledge.model import Finding, Status
from harness.knowledge.products import FeatureSpec, Port, map_plugin, platform_map, port_plugin
from harness.record.checks import Check, CheckStatus, not_run
from harness.record.models import Draft, RunInputs
from harness.steps.alignment import touches
from harness.steps.base import StepContext, read_facts, runner_failure
from harness.steps.drafting import PORT, agent_draft, run_step_agent
from harness.steps.served import ServedStep

STATIC = "static_findings.json"
# `harness port --json`'s document of the agent's worktree, when the agent changed it
PORT_PATCHED = "port-patched.json"


class InterfaceStep(ServedStep):
    number = 2
    name = "interface"
    title = "Interface: hook targets, overrides and a served smoke test"
    template = "step.md.j2"
    check_name: ClassVar[str] = "interface.smoke"
    runners: ClassVar[tuple[str, ...]] = ("smoke",)

    def collect_static(self, ctx: StepContext) -> tuple[dict[str, Any], list[str]]:
        facts: dict[str, Any] = {"upstream": ctx.upstream.label}
        findings: list[Finding] | None = None
        try:
            ctx.progress("checking plugin targets against the target upstream")
            findings = list(platform_map(ctx.plugin, ctx.upstream, ctx.old_upstream).findings)
        except HarnessError:
            raise  # bad input (unreachable source, not a plugin): the user must fix it
        except Exception as exc:  # noqa: BLE001 — engine missing or broken: not run, with the reason
            facts["knowledge_error"] = runner_failure("interface", exc, "knowledge engine").reason
        plugin, upstream = shlex.quote(str(ctx.plugin)), shlex.quote(ctx.upstream.spec)  # printed to be pasted
        commands = [f"harness check --plugin {plugin} --upstream {upstream}"]
        if ctx.old_upstream is not None:
            # Before the agent: its starting point is these merges and conflicts (port.json).
            ctx.progress("re-porting copies of upstream functions")
            facts.update(_collect_ports(ctx, ctx.plugin, PORT))
            commands.append(f"harness port --plugin {plugin} --from {shlex.quote(ctx.old_upstream.spec)} "
                            f"--to {upstream} --json")
        # The agent drafts the port in a sandbox; the static checks then judge exactly what an approval
        # commits (a checkout of the sandbox's index: a git-ignored file the port needs is not in it).
        try:  # the agent ports this feature: its starting point is the feature's findings
            facts["agent"], sandbox = run_step_agent(ctx, [f for f in findings or [] if in_feature(ctx.feature, f.target, f.successor)])
        except Exception as exc:  # noqa: BLE001 — no sandbox or skill: the deterministic checks still run
            facts["agent"], sandbox = {"status": "not_run", "reason": f"the agent could not start: {exc}"}, None
        facts["checked"] = "the plugin checkout"
        patched = sandbox is not None and facts["agent"]["changed"] and "knowledge_error" not in facts
        with sandbox.committable() if patched else nullcontext(ctx.plugin) as tree:
            if patched:
                # what breaks in the checkout already: a break the patch adds elsewhere is the feature's
                facts["checkout_breaking"] = sorted({_identity(f) for f in findings or [] if f.breaking})
                facts["checked"] = f"the agent's worktree as an approval commits it (branch {facts['agent']['branch']})"
                commands[0] = f"harness check --plugin {shlex.quote(str(sandbox.root))} --upstream {upstream}"
                try:
                    findings = list(map_plugin(tree, ctx.upstream, commit=False, baseline=ctx.old_upstream).findings)
                except Exception as exc:  # noqa: BLE001 — e.g. the patch broke pyproject.toml: the check says so
                    facts["knowledge_error"] = f"the agent's worktree cannot be checked: {str(exc).splitlines()[0]}"
            if "knowledge_error" not in facts and findings is not None:
                findings.sort(key=lambda f: (f.kind, f.target, f.file or "", f.line or 0))
                ctx.write_json(STATIC, [f.model_dump(mode="json") for f in findings])
                facts["static_counts"] = _counts(findings)
            if ctx.old_upstream is not None and patched:
                # The copies the gate approves are the patched ones: judge those.
                ctx.progress("re-porting copies in the agent's worktree")
                facts.update(_collect_ports(ctx, tree, PORT_PATCHED))
                commands.append(f"harness port --plugin {shlex.quote(str(sandbox.root))} "
                                f"--from {shlex.quote(ctx.old_upstream.spec)} --to {upstream} --json")
        ctx.progress("smoke test: starting the runbook's server")
        return facts, commands

    def draft(self, ctx: StepContext, facts: dict[str, Any], checks: list[Check]) -> Draft:
        return agent_draft(facts, facts.get("checked", "the plugin checkout"))

    def runner_inputs(self, name: str, ctx: StepContext, runbook: Runbook,
                      server: RunningServer | None) -> dict[str, Any]:
        return {"server": server} if name == "smoke" else {}

    def judge_static(self, evidence_dir: Path, inputs: RunInputs) -> list[Check]:
        facts = read_facts(evidence_dir)
        if "knowledge_error" in facts:
            reason = facts["knowledge_error"]
            return [not_run("interface.targets_resolve", reason), not_run("interface.override_signatures", reason),
                    stale_copies_check(evidence_dir, facts, inputs.from_upstream is not None)]
        findings = [Finding.model_validate(f) for f in json.loads((evidence_dir / STATIC).read_text())]
        added = set(facts["checkout_breaking"]) if "checkout_breaking" in facts else None  # set when the agent patched
        own = [f for f in findings if in_feature(inputs.feature, f.target, f.successor)
               or (added is not None and f.breaking and _identity(f) not in added)]
        others = [f for f in findings if f.live and not any(f is o for o in own)]
        targets = profile().kinds_where("target")
        return [targets_check(own, facts["upstream"], _outside([f for f in others if f.kind in targets], "targets")),
                overrides_check(own, facts["upstream"], _outside([f for f in others if f.kind == "override"], "overrides")),
                stale_copies_check(evidence_dir, facts, inputs.from_upstream is not None, inputs.feature)]


def _outside(others: list[Finding], what: str) -> str:
    """The reason's tail naming the plugin's live `what` outside the feature judged ("" if none)."""
    if not others:
        return ""
    return (f" — {len(others)} other live {what} of the plugin lie outside this feature "
            f"({sum(f.breaking for f in others)} breaking: `harness check`, under Reproduce)")


def in_feature(feature: FeatureSpec, *targets: str | None) -> bool:
    """Whether a dependency on upstream `targets` (dotted: a finding's target and successor, a
    copy's original) is `feature`'s: one is one of the feature's symbols, inside one, holds one,
    or lies under one of its paths (alignment's `touches`). A feature that names neither symbols
    nor paths holds every dependency."""
    if not (feature.symbols or feature.paths):
        return True
    return any(t is not None and touches(t, feature.symbols, feature.paths) for t in targets)


def _identity(finding: Finding) -> str:
    """A dependency across two checkouts of the plugin (a patch moves lines, not this)."""
    return f"{finding.kind} {finding.target} {finding.file}"


def targets_check(findings: list[Finding], upstream: str, outside: str = "") -> Check:
    """interface.targets_resolve: every live hook / patch target resolves on `upstream` (a
    label); one that could not be evaluated statically makes it inconclusive, never a pass.
    `outside`: appended to the reason, what of the plugin lies outside the findings judged."""
    targets = profile().kinds_where("target")  # hooks, patches, registrations, server args
    live = [f for f in findings if f.live and f.kind in targets]
    missing = [f for f in live if f.breaking]  # a target a version guard skips need not resolve
    if not live:
        return not_run("interface.targets_resolve", f"{'the feature touches' if outside else 'the plugin registers'} "
                       f"no live hook or patch targets{outside}")
    if missing:
        return Check(
            name="interface.targets_resolve",
            status=CheckStatus.failed,
            reason=f"{len(missing)} of {len(live)} live targets do not resolve on {upstream}: "
            + ", ".join(f.target if f.status is Status.missing else f"{f.target} ({f.status.value})" for f in missing[:5]) + outside,
            evidence=[STATIC],
            metrics={"live_targets": len(live), "missing": len(missing)},
        )
    unknown = [f for f in live if f.unverified]
    if unknown:
        return Check(
            name="interface.targets_resolve",
            status=CheckStatus.inconclusive,
            reason=f"{len(unknown)} of {len(live)} live targets could not be evaluated statically, so "
            f"whether they resolve on {upstream} is unknown: "
            + ", ".join(f.target for f in unknown[:5]) + (", ..." if len(unknown) > 5 else "") + outside,
            evidence=[STATIC],
            metrics={"live_targets": len(live), "missing": 0, "unknown": len(unknown)},
        )
    return Check(
        name="interface.targets_resolve",
        status=CheckStatus.passed,
        reason=f"all {len(live)} live targets resolve on {upstream}{outside}",
        evidence=[STATIC],
        metrics={"live_targets": len(live), "missing": 0},
    )


def _collect_ports(ctx: StepContext, plugin: Path, name: str) -> dict[str, Any]:
    """Run the port analysis of `plugin` from --from to --upstream; write it to evidence file
    `name` and return the facts the report shows (or why it did not run)."""
    try:
        report = port_plugin(plugin, ctx.old_upstream, ctx.upstream)
    except Exception as exc:  # noqa: BLE001 — a plugin file that does not parse, git missing: not run, with the reason
        return {"port_error": f"{type(exc).__name__}: {exc}".splitlines()[0]}
    ctx.write_json(name, {"ports": [p.model_dump(mode="json") for p in report.ports]})
    own = [p for p in report.ports if in_feature(ctx.feature, p.target)]  # the report shows the feature's
    return {"port_file": name, "ports_outside": len(report.ports) - len(own), "ports": [
        {"target": p.target, "status": p.status, "similarity": p.similarity, "plugin_function": p.plugin_function, "where": f"{p.file}:{p.line}",
         "conflicts": p.conflicts, "undefined_names": [u.name for u in p.undefined_names],
         "signature": f"{p.signature_change.before} -> {p.signature_change.after}" if p.signature_change else None,
         "patch": p.patch or p.upstream_diff}
        for p in own
    ]}


def stale_copies_check(evidence_dir: Path, facts: dict[str, Any], has_from: bool, feature: FeatureSpec | None = None) -> Check:
    """interface.stale_copies: every copy of an upstream function in the plugin (a REPLACE hook
    or a patched function) — of those `feature` touches (`in_feature`'s rule on the copy's
    target), when given — merged clean with the upstream change, or upstream did not change
    it; failed while a conflict, an undefined name or a stale signature remains. Read from
    the port document alone: port.json, or the agent's worktree's when the agent changed it."""
    name = "interface.stale_copies"
    if "port_error" in facts:
        return not_run(name, f"the port analysis did not run: {facts['port_error']}")
    if not has_from:
        return not_run(name, "the run has no --from: which release the plugin's copies were taken from is unknown")
    judged = facts.get("port_file", PORT)  # the agent's worktree when it changed the plugin
    if not (evidence_dir / judged).is_file():
        return not_run(name, f"{judged} is missing from the evidence")
    ports = [Port.model_validate(p) for p in json.loads((evidence_dir / judged).read_text())["ports"]]
    copies = [p for p in ports if p.status in ("clean", "conflict", "unchanged") or (p.status == "missing" and p.copy_of)]
    outside = ""
    if feature is not None:
        own = [p for p in copies if in_feature(feature, p.target)]
        if len(own) < len(copies):
            others = [p for p in copies if not any(p is o for o in own)]
            outside = (f" — {len(others)} other copies in the plugin lie outside this feature "
                       f"({sum(p.needs_work for p in others)} needing work: the table below)")
        copies = own
    if not copies:
        return not_run(name, ("the feature touches no" if outside else "the plugin carries no")
                       + f" copy of an upstream function (REPLACE hook or patched function){outside}")
    open_ = [p for p in copies if p.needs_work]
    metrics = {status: sum(1 for p in copies if p.status == status) for status in ("clean", "conflict", "unchanged")}
    if open_:
        def why(p: Port) -> str:
            parts = ([f"{p.conflicts} conflicts"] if p.status == "conflict" else []) + [f"needs {u.name}" for u in p.undefined_names]
            if p.status == "missing":
                parts.append("upstream removed it" + (f"; successor {p.successor}" if p.successor else ""))
            if p.signature_change and not p.signature_change.copy_fits:
                parts.append(f"signature {p.signature_change.after} not taken")
            return f"{p.target} ({', '.join(parts)})"
        return Check(name=name, status=CheckStatus.failed, evidence=[judged], metrics={**metrics, "open": len(open_)},
                     reason=f"{len(open_)} of {len(copies)} copies of upstream functions still need work: " + "; ".join(why(p) for p in open_[:5]) + outside)
    clean = metrics["clean"]
    return Check(name=name, status=CheckStatus.passed, evidence=[judged], metrics=metrics,
                 reason=(f"{clean} of {len(copies)} copies merged clean with the upstream change (apply with `harness port --apply`), {metrics['unchanged']} unchanged upstream"
                         if clean else f"upstream left all {len(copies)} copied functions unchanged") + outside)


def overrides_check(findings: list[Finding], upstream: str, outside: str = "") -> Check:
    """interface.override_signatures: every live platform override is on the base and fits
    its signature on `upstream` (a label); inconclusive while one is not decided statically.
    `outside`: appended to the reason, what of the plugin lies outside the findings judged."""
    overrides = [f for f in findings if f.live and f.kind == "override"]
    bad = [f for f in overrides if f.status in (Status.signature_changed, Status.not_on_base, Status.missing)]
    if not overrides:
        return not_run("interface.override_signatures", f"{'the feature touches' if outside else 'the plugin overrides'} "
                       f"no platform methods{outside}")
    if bad:
        return Check(
            name="interface.override_signatures",
            status=CheckStatus.failed,
            reason=f"{len(bad)} of {len(overrides)} overrides do not match {upstream}: "
            + ", ".join(f"{f.target} ({f.status.value})" for f in bad[:5]) + outside,
            evidence=[STATIC],
            metrics={"overrides": len(overrides), "mismatched": len(bad)},
        )
    unknown = [f for f in overrides if f.unverified]
    if unknown:  # not decided statically: never a pass
        return Check(
            name="interface.override_signatures",
            status=CheckStatus.inconclusive,
            reason=f"{len(unknown)} of {len(overrides)} overrides could not be judged on {upstream}: "
            + "; ".join(f"{f.target}: {f.detail or 'not decided'}" for f in unknown[:3]) + outside,
            evidence=[STATIC],
            metrics={"overrides": len(overrides), "mismatched": 0, "unknown": len(unknown)},
        )
    return Check(
        name="interface.override_signatures",
        status=CheckStatus.passed,
        reason=f"all {len(overrides)} overrides match the base signatures{outside}",
        evidence=[STATIC],
        metrics={"overrides": len(overrides), "mismatched": 0},
    )


def _counts(findings: list[Finding]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for f in findings:
        key = f"{f.kind}:{f.status.value}"
        counts[key] = counts.get(key, 0) + 1
    return dict(sorted(counts.items()))
