"""Step 2 — interface: does the plugin's surface fit the target upstream, and does it serve?

Static checks first (every live hook target and platform override resolves on the target
version; overrides match the base signatures), then the runbook's smoke check (the server
starts and emits tokens) through the evidence runners.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harness.errors import HarnessError
from harness.evidence.checks import Check, CheckStatus
from harness.knowledge.findings import Finding, Status
from harness.steps import knowledge
from harness.steps.base import Evidence, StepContext, not_run, runner_failure
from harness.steps.runner_step import RunbookInputs, call_seam, read_runbook

TARGET_KINDS = {"hook", "patch", "kernel", "attention_backend", "server_arg"}


@dataclass
class InterfaceInputs:
    findings: list[Finding]
    runbook: RunbookInputs
    knowledge_error: BaseException | None = None


class InterfaceStep:
    number = 2
    name = "interface"
    title = "Interface: hook targets, overrides and a served smoke test"

    def read_inputs(self, ctx: StepContext) -> InterfaceInputs:
        runbook = read_runbook(ctx)
        try:
            ctx.progress("checking plugin targets against the target upstream")
            findings = list(knowledge.platform_map(ctx.plugin, ctx.upstream).findings)
        except HarnessError:
            raise
        except Exception as exc:  # noqa: BLE001 — engine missing or broken: not run, with the reason
            return InterfaceInputs(findings=[], runbook=runbook, knowledge_error=exc)
        findings.sort(key=lambda f: (f.kind, f.target, f.file or "", f.line or 0))
        return InterfaceInputs(findings=findings, runbook=runbook)

    def produce_evidence(self, ctx: StepContext, inputs: InterfaceInputs) -> Evidence:
        facts: dict[str, Any] = {}
        if inputs.knowledge_error is None:
            ctx.write_json("static_findings.json", [f.model_dump(mode="json") for f in inputs.findings])
            facts["static_counts"] = _counts(inputs.findings)
        ctx.progress("smoke test: starting the runbook's server")
        served = call_seam(ctx, inputs.runbook, smoke_seam, "interface.smoke")
        served.facts.update(facts)
        served.commands.insert(0, f"harness check --plugin {ctx.plugin} --upstream {ctx.upstream.spec}")
        return served

    def run_checks(self, ctx: StepContext, inputs: InterfaceInputs, evidence: Evidence) -> list[Check]:
        if inputs.knowledge_error is not None:
            reason = runner_failure("interface", inputs.knowledge_error, "knowledge engine").reason
            static = [not_run("interface.targets_resolve", reason), not_run("interface.override_signatures", reason)]
        else:
            static = [self._targets(ctx, inputs.findings), self._overrides(ctx, inputs.findings)]
        return static + evidence.checks

    def _targets(self, ctx: StepContext, findings: list[Finding]) -> Check:
        live = [f for f in findings if f.live and f.kind in TARGET_KINDS]
        missing = [f for f in live if f.status is Status.missing]
        if not live:
            return not_run("interface.targets_resolve", "the plugin registers no live hook or patch targets")
        if missing:
            return Check(
                name="interface.targets_resolve",
                status=CheckStatus.failed,
                reason=f"{len(missing)} of {len(live)} live targets do not resolve on {ctx.upstream.label}: "
                + ", ".join(f.target for f in missing[:5]),
                evidence=["static_findings.json"],
                metrics={"live_targets": len(live), "missing": len(missing)},
            )
        unknown = [f for f in live if f.status is Status.unknown]
        if unknown:
            return Check(
                name="interface.targets_resolve",
                status=CheckStatus.inconclusive,
                reason=f"{len(unknown)} of {len(live)} live targets could not be evaluated statically, so "
                f"whether they resolve on {ctx.upstream.label} is unknown: "
                + ", ".join(f.target for f in unknown[:5]) + (", ..." if len(unknown) > 5 else ""),
                evidence=["static_findings.json"],
                metrics={"live_targets": len(live), "missing": 0, "unknown": len(unknown)},
            )
        return Check(
            name="interface.targets_resolve",
            status=CheckStatus.passed,
            reason=f"all {len(live)} live targets resolve on {ctx.upstream.label}",
            evidence=["static_findings.json"],
            metrics={"live_targets": len(live), "missing": 0},
        )

    def _overrides(self, ctx: StepContext, findings: list[Finding]) -> Check:
        overrides = [f for f in findings if f.live and f.kind == "override"]
        bad = [f for f in overrides if f.status in (Status.signature_changed, Status.not_on_base, Status.missing)]
        if not overrides:
            return not_run("interface.override_signatures", "the plugin overrides no platform methods")
        if bad:
            return Check(
                name="interface.override_signatures",
                status=CheckStatus.failed,
                reason=f"{len(bad)} of {len(overrides)} overrides do not match {ctx.upstream.label}: "
                + ", ".join(f"{f.target} ({f.status.value})" for f in bad[:5]),
                evidence=["static_findings.json"],
                metrics={"overrides": len(overrides), "mismatched": len(bad)},
            )
        return Check(
            name="interface.override_signatures",
            status=CheckStatus.passed,
            reason=f"all {len(overrides)} overrides match the base signatures",
            evidence=["static_findings.json"],
            metrics={"overrides": len(overrides), "mismatched": 0},
        )


def smoke_seam(ctx: StepContext, runbook) -> tuple[list[Check], list[str]]:
    """The step's one seam into the evidence runners: serve the runbook's model, smoke it.
    A server that never gets healthy is a failed smoke check (its log tail is the evidence)."""
    import shlex

    from harness.evidence.server import ServedModel, ServerStartError
    from harness.evidence.smoke import run_smoke

    try:
        with ServedModel.from_runbook(runbook, ctx.evidence_dir / "server") as server:
            command = shlex.join(server.command)
            result = run_smoke(server, runbook.smoke, ctx.evidence_dir / "smoke")
    except ServerStartError as exc:
        return [exc.check], []
    return result.checks, [command]


def _counts(findings: list[Finding]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for f in findings:
        key = f"{f.kind}:{f.status.value}"
        counts[key] = counts.get(key, 0) + 1
    return dict(sorted(counts.items()))


STEP = InterfaceStep()
