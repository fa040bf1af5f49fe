"""Step 5 — performance: throughput and latency on the runbook's benchmarks against a reference
server measured in the same run (interleaved repetitions, per-request pairs) or a recorded
baseline, with the measured noise taken into account (`harness.stats.performance`); and, with a
`profiling` section, a trace of the workload: time split, top kernels, launch gaps, diff against
the reference trace; and every trace the capture wrote (one per rank) analysed together: stages,
wait chain, balance plan, findings with code locations, shares (harness.evidence.profile_analysis)."""

from __future__ import annotations

import contextlib
import os
import shlex
from pathlib import Path
from typing import Any, ClassVar

from harness.errors import HarnessError
from harness.evidence.perf import PerfRun, write_summary
from harness.evidence.performance import PerformanceRunner, suite_checks
from harness.evidence.plots import plot_trace_split
from harness.evidence.profile import (
    ProfileRunner,
    capture_command_profile,
    trace_checks,
)
from harness.evidence.profile_analysis import ProfileAnalysisRunner
from harness.evidence.recipes import Recipes
from harness.evidence.runbook import Runbook
from harness.evidence.server import RunningServer
from harness.evidence.traces import (
    TraceNaming,
    TraceRunner,
    diff_traces,
    load_trace,
    write_diff_evidence,
)
from harness.record.checks import Check, not_run
from harness.record.models import Draft
from harness.steps.base import StepContext
from harness.steps.drafting import write_up_draft
from harness.steps.served import (
    PROFILE,
    ServedStep,
    profiled_trace_dir,
    runbook_dir,
    start_reference,
)

PERF = "perf"
ANALYSIS_ERROR = "profile_analysis.error"


class PerformanceStep(ServedStep):
    number = 5
    name = "performance"
    title = "Performance: throughput and latency against the baseline"
    template = "step.md.j2"
    check_name: ClassVar[str] = "performance"

    def draft(self, ctx: StepContext, facts: dict[str, Any], checks: list[Check]) -> Draft:
        return write_up_draft(ctx, facts, checks)  # the task and its rules: skills/performance/SKILL.md

    def skip_reason(self, runbook: Runbook) -> str | None:
        return None if runbook.performance else "the runbook defines no performance suites"

    def trace_dir(self, ctx: StepContext, runbook: Runbook) -> Path | None:
        return profiled_trace_dir(ctx, runbook)

    def exercise(self, ctx: StepContext, runbook: Runbook, server: RunningServer) -> list[str]:
        ctx.progress("performance: benchmarking the served model")
        commands = []
        env = {**os.environ, **runbook.environment.env}  # the runbook's env, as the server gets
        with contextlib.ExitStack() as references:
            started: dict[str, RunningServer | str] = {}
            for suite in runbook.performance:
                out = ctx.evidence_dir / PERF / suite.name
                reference = None
                if suite.reference:
                    reference = start_reference(ctx, runbook, suite.reference, started, references)
                    if isinstance(reference, str):  # it did not start: the suite cannot be compared
                        out.mkdir(parents=True, exist_ok=True)
                        write_summary(PerfRun(suite=suite.name, status="failed", tolerance=suite.tolerance,
                                              reference=suite.reference, reason=reference), out)
                        continue
                ctx.progress(f"performance: {suite.name}, {suite.repetitions} repetition(s)"
                             + (f" interleaved with reference {suite.reference}" if reference else ""))
                run = PerformanceRunner().run(suite, out, base_url=server.base_url, model=server.model, env=env,
                                              registry=ctx.processes, engine=runbook.environment.serving,
                                              version=runbook.environment.version,
                                              reference_url=reference.base_url if reference else None,
                                              reference_model=reference.model if reference else None)
                if run.command:
                    commands.append(shlex.join(run.command))
            commands += self._profile(ctx, runbook, server, env)
        return commands

    def _profile(self, ctx: StepContext, runbook: Runbook, server: RunningServer, env: dict[str, str]) -> list[str]:
        """A trace taken during the profiling workload (the engine's profiler endpoints, or the
        runbook's trace command), analysed: time split, top kernels, launch gaps, and a diff
        against the reference trace when the runbook gives a reference command."""
        spec = runbook.profiling
        if spec is None:
            return []
        out = ctx.evidence_dir / PROFILE
        suite = next((s for s in runbook.performance if s.name == spec.workload), None)

        def workload() -> None:
            if suite is not None:  # one repetition of the workload suite, under the profiler
                PerformanceRunner().run(suite.model_copy(update={"repetitions": 1, "reference": None}),
                                        out / "workload", base_url=server.base_url, model=server.model, env=env,
                                        registry=ctx.processes, engine=runbook.environment.serving,
                                        version=runbook.environment.version)

        ctx.progress("performance: profiling")
        capture = ProfileRunner().run(spec, out, workload=workload, server=server, cwd=runbook_dir(runbook),
                                      env=runbook.environment.env, registry=ctx.processes,
                                      profiler=runbook.environment.serving.profiler)
        commands = [c for c in (spec.command, spec.reference_command) if c]
        if not capture.ok:
            return commands
        naming = TraceNaming.model_validate(spec.naming)
        report = TraceRunner().run(naming, out, trace=capture.traces[0],
                                   source=capture.traces[0].relative_to(out).as_posix())
        plot_trace_split(report, out / "trace_split.png")
        references = []
        if spec.reference_command:
            reference = capture_command_profile(spec.reference_command, spec, out / "reference", None,
                                                cwd=runbook_dir(runbook), env=runbook.environment.env,
                                                registry=ctx.processes)
            if reference.ok:
                diff = diff_traces(load_trace(reference.traces[0]), load_trace(capture.traces[0]), naming,
                                   before_name="reference", after_name="candidate")
                write_diff_evidence(diff, out)
                references.append(reference.traces)
        # every rank's trace together: stages, wait chain, balance plan, findings, shares
        ctx.progress(f"performance: analysing {len(capture.traces)} trace(s) together")
        try:
            ProfileAnalysisRunner().run(naming, out, traces=capture.traces, references=references,
                                        recipes=Recipes.load(runbook.recipes) if runbook.recipes else None)
        except HarnessError as exc:
            (out / ANALYSIS_ERROR).write_text(f"{exc}\n")
        return commands

    def judge_served(self, evidence_dir: Path, runbook: Runbook) -> list[Check]:
        checks = [check for suite in runbook.performance for check in suite_checks(evidence_dir / PERF / suite.name)]
        if runbook.profiling is not None:
            naming = TraceNaming.model_validate(runbook.profiling.naming)
            checks.append(trace_checks(evidence_dir / PROFILE, naming))
            checks += analysis_checks(evidence_dir / PROFILE, naming)
        return checks


def analysis_checks(profile_dir: Path, naming: TraceNaming) -> list[Check]:
    """`performance.profile` from the profile evidence: the multi-rank analysis, why it could
    not be made, or nothing when no trace was taken (`performance.trace` says why)."""
    error = profile_dir / ANALYSIS_ERROR
    if error.is_file():
        return [not_run(ProfileAnalysisRunner.check_name, f"the traces could not be analysed: {error.read_text().strip()}",
                        evidence=[str(error)])]
    return ProfileAnalysisRunner().judge(profile_dir, naming)
