"""Step 3 — operators: on the runbook workload, no Triton/compile failure and no operator
fallback, judged by the Operator Recipes.

The workload is the smoke requests, driven under the engine's profiler when the runbook has a
profiling section; then the server's logs and the traces are scanned for fallbacks
(`harness.evidence.fallback`). Checks: operators.workload, profile.capture, fallback.log,
fallback.trace.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any, ClassVar

from harness.evidence.fallback import (
    FallbackHit,
    ScanRecord,
    read_scan,
    run_fallback_scan,
)
from harness.evidence.runbook import Runbook
from harness.evidence.server import (
    ProfileCapture,
    RunningServer,
    capture_command_profile,
    capture_profile,
)
from harness.evidence.smoke import read_exchanges, run_smoke
from harness.record.checks import Check, CheckStatus, not_run
from harness.record.models import Draft
from harness.steps.base import StepContext
from harness.steps.drafting import write_up_draft
from harness.steps.interface import smoke_checks
from harness.steps.served import ServedStep, runbook_dir

WORKLOAD, PROFILE, FALLBACK = "workload", "profile", "fallback"


class OperatorsStep(ServedStep):
    number = 3
    name = "operators"
    title = "Operators: no compile failure, no operator fallback"
    template = "step.md.j2"
    check_name: ClassVar[str] = "operators.fallback_scan"

    def draft(self, ctx: StepContext, facts: dict[str, Any], checks: list[Check]) -> Draft:
        return write_up_draft(ctx, facts, checks)  # the task and its rules: skills/operators/SKILL.md

    def exercise(self, ctx: StepContext, runbook: Runbook, server: RunningServer) -> list[str]:
        ctx.progress("operators: running the workload and scanning for fallbacks")
        ran: list[bool] = []

        def workload(served: RunningServer) -> None:
            run_smoke(served, runbook.smoke, ctx.evidence_dir / WORKLOAD)
            ran.append(True)

        profiling = runbook.profiling
        if profiling is not None and profiling.command:
            capture_command_profile(profiling.command, profiling, ctx.evidence_dir / PROFILE, lambda: workload(server),
                                    cwd=runbook_dir(runbook), env=runbook.environment.env, registry=ctx.processes)
        elif profiling is not None:
            capture_profile(server, profiling, ctx.evidence_dir / PROFILE, workload)
        if not ran:  # no profiling, or the profiler refused to start before the traffic
            workload(server)
        return []

    def after_serving(self, ctx: StepContext, runbook: Runbook, logs: list[Path]) -> None:
        # The logs are complete only once the server has stopped; the traces are the profile's.
        profile = ctx.evidence_dir / PROFILE / "profile.json"
        traces = ProfileCapture.model_validate_json(profile.read_text()).traces if profile.is_file() else []
        run_fallback_scan(runbook, logs=logs, traces=traces, evidence_dir=ctx.evidence_dir / FALLBACK)

    def judge_served(self, evidence_dir: Path, runbook: Runbook) -> list[Check]:
        log = evidence_dir / WORKLOAD / "smoke.jsonl"
        responses = next(c for c in smoke_checks(read_exchanges(log), runbook.smoke, [str(log)])
                         if c.name == "smoke.responses")
        checks = [responses.model_copy(update={"name": "operators.workload"})]
        profile = evidence_dir / PROFILE / "profile.json"
        if profile.is_file():
            checks.append(profile_check(ProfileCapture.model_validate_json(profile.read_text())))
        scanned = read_scan(evidence_dir / FALLBACK)
        if scanned is not None:
            checks += fallback_checks(*scanned, evidence_dir / FALLBACK / "fallback_hits.jsonl",
                                      host_is_device=runbook.environment.device.split(":")[0].lower() == "cpu")
        return checks


def profile_check(capture: ProfileCapture) -> Check:
    """profile.capture: the engine wrote at least one trace."""
    if not capture.ok:
        return Check(name="profile.capture", status=CheckStatus.failed, reason=capture.reason,
                     evidence=capture.evidence)
    present = [p for p in capture.traces if p.is_file()]
    return Check(name="profile.capture", status=CheckStatus.passed, evidence=[str(p) for p in capture.traces],
                 metrics={"traces": len(capture.traces), "bytes": sum(p.stat().st_size for p in present)})


def fallback_checks(hits: list[FallbackHit], record: ScanRecord, hits_file: Path, *,
                    host_is_device: bool = False) -> list[Check]:
    """fallback.log and fallback.trace from a scan: any error-severity hit fails; warnings are
    listed in the detail; what could not be scanned is `not run` (a trace that is not a
    trace fails). With `host_is_device` (the runbook's device is the CPU) a trace without
    device events is judged on its fallback/compile-failure patterns: host operators are the
    device's own there, not fallbacks."""
    log_hits = [h for h in hits if h.source == "log"]
    trace_hits = [h for h in hits if h.source == "trace"]
    if record.logs:
        checks = [_hits_check("fallback.log", log_hits, record.logs, hits_file)]
    else:
        given = ", ".join(record.missing_logs) or "none given"
        checks = [not_run("fallback.log", f"no server log to scan ({given})")]
    problems = record.trace_problems
    if not record.traces:
        checks.append(not_run("fallback.trace", "no trace was captured"))
    elif problems and len(problems) == len(record.traces):
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        missing = all(p["missing"] for p in problems)
        checks.append(Check(name="fallback.trace", evidence=record.traces,
                            status=CheckStatus.not_run if missing else CheckStatus.failed,
                            reason=f"{problems[0]['error']}{more}"))
    elif record.device_events == 0 and not trace_hits and host_is_device:
        check = _hits_check("fallback.trace", trace_hits, record.traces, hits_file)
        check.detail = ("the runbook's device is the CPU: host operators are the device's own, so only the "
                        "fallback and compile-failure patterns apply; none matched")
        checks.append(check)
    elif record.device_events == 0 and not trace_hits:
        checks.append(not_run("fallback.trace", "the trace holds no device events (a CPU-only profile?)",
                              evidence=record.traces))
    else:
        check = _hits_check("fallback.trace", trace_hits, record.traces, hits_file)
        if problems:
            check.detail = "\n".join(filter(None, [check.detail, *(p["error"] for p in problems)]))
        checks.append(check)
    return checks


def _hits_check(name: str, hits: list[FallbackHit], scanned: list[str], hits_file: Path) -> Check:
    errors = [h for h in hits if h.severity == "error"]
    by_op: dict[str, int] = defaultdict(int)
    for hit in hits:
        by_op[hit.op or "(unknown op)"] += hit.count
    detail = "\n".join(
        f"{h.severity}: {h.op or '(unknown op)'} at {h.where()}: {h.text}"
        + (f" -> {h.instead} [{h.recipe_file}#{h.recipe}]" if h.instead else "")
        for h in hits) or None
    metrics = {"errors": len(errors), "warnings": sum(h.severity == "warning" for h in hits),
               "by_op": dict(by_op)}
    evidence = [str(hits_file), *scanned]
    if errors:
        ops = sorted({h.op or "(unknown op)" for h in errors})
        return Check(name=name, status=CheckStatus.failed, evidence=evidence, detail=detail, metrics=metrics,
                     reason=f"{len(errors)} fallback/compile-failure hit(s): {', '.join(ops)}")
    return Check(name=name, status=CheckStatus.passed, evidence=evidence, detail=detail, metrics=metrics)
