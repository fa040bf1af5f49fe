"""Step 5 — performance: throughput and latency on the runbook's benchmarks against a reference
server measured in the same run (interleaved repetitions, per-request pairs) or a recorded
baseline, with the measured noise taken into account (`harness.stats.performance`); and, with a
`profiling` section, a trace of the workload: time split, top kernels, launch gaps, diff against
the reference trace; and every trace the capture wrote (one per rank) analysed together: stages,
wait chain, balance plan, findings with code locations, shares (harness.evidence.profile_analysis)."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any, ClassVar

from harness.errors import HarnessError
from harness.evidence.perf import PerfRun, write_summary
from harness.evidence.plots import plot_trace_split
from harness.evidence.recipes import Recipes
from harness.evidence.runbook import Runbook
from harness.evidence.runner import runner
from harness.evidence.server import RunningServer
from harness.evidence.traces import TraceNaming
from harness.record.checks import Check, not_run
from harness.record.models import Draft
from harness.steps.base import StepContext
from harness.steps.drafting import write_up_draft
from harness.steps.served import ServedStep, profile_inputs, start_reference

ANALYSIS_ERROR = "profile_analysis.error"


class PerformanceStep(ServedStep):
    number = 5
    name = "performance"
    title = "Performance: throughput and latency against the baseline"
    template = "step.md.j2"
    check_name: ClassVar[str] = "performance"
    # the suites; a trace of the profiling workload, analysed (traces) and with every rank's (profile_analysis)
    runners: ClassVar[tuple[str, ...]] = ("performance", "profile", "traces", "profile_analysis")
    runner_dirs: ClassVar[dict[str, str]] = {"performance": "perf", "traces": "profile", "profile_analysis": "profile"}

    def draft(self, ctx: StepContext, facts: dict[str, Any], checks: list[Check]) -> Draft:
        return write_up_draft(ctx, facts, checks)  # the task and its rules: skills/performance/SKILL.md

    def skip_reason(self, runbook: Runbook) -> str | None:
        return None if runbook.performance else "the runbook defines no performance suites"

    def runner_inputs(self, name: str, ctx: StepContext, runbook: Runbook,
                      server: RunningServer | None) -> dict[str, Any]:
        if name == "performance":  # the runbook's env, as the server gets
            return {"base_url": server.base_url, "model": server.model,
                    "env": {**os.environ, **runbook.environment.env}, "registry": ctx.processes,
                    "engine": runbook.environment.serving, "version": runbook.environment.engine_version}
        if name == "profile":
            return profile_inputs(ctx, runbook, server)
        return {}  # traces, profile_analysis: the traces the profile took (`_profile`)

    def exercise(self, ctx: StepContext, runbook: Runbook, server: RunningServer) -> list[str]:
        ctx.progress("performance: benchmarking the served model")
        performance, commands = runner("performance"), []
        inputs = self.runner_inputs("performance", ctx, runbook, server)
        with contextlib.ExitStack() as references:
            started: dict[str, RunningServer | str] = {}
            for subdir, suite in performance.specs(runbook):
                out = self.runner_dir("performance", ctx.evidence_dir) / subdir
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
                run = performance.run(suite, out, **inputs, reference_url=reference.base_url if reference else None,
                                      reference_model=reference.model if reference else None)
                commands += performance.commands(run)
            commands += self._profile(ctx, runbook, server, inputs)
        return commands

    def _profile(self, ctx: StepContext, runbook: Runbook, server: RunningServer, inputs: dict[str, Any]) -> list[str]:
        """A trace taken during the profiling workload (the engine's profiler endpoints, or the
        runbook's trace command; `inputs` are the performance runner's), analysed: time split,
        top kernels, launch gaps, and a diff against the reference trace when the runbook gives
        a reference command."""
        spec = runbook.profiling
        if spec is None:
            return []
        out = self.runner_dir("profile", ctx.evidence_dir)
        suite = next((s for s in runbook.performance if s.name == spec.workload), None)
        profile = runner("profile")

        def workload() -> None:
            if suite is not None:  # one repetition of the workload suite, under the profiler
                runner("performance").run(suite.model_copy(update={"repetitions": 1, "reference": None}),
                                          out / "workload", **inputs)

        ctx.progress("performance: profiling")
        profiling = self.runner_inputs("profile", ctx, runbook, server)
        capture = profile.run(spec, out, workload=workload, **profiling)
        commands = [c for c in (spec.command, spec.reference_command) if c]
        if not capture.ok:
            return commands
        reference: list[Path] = []  # the reference command's traces (it drives its own workload)
        if spec.reference_command:
            taken = profile.run(spec.model_copy(update={"command": spec.reference_command}), out / "reference",
                                workload=lambda: None, **profiling)
            reference = taken.traces if taken.ok else []
        naming = TraceNaming.model_validate(spec.naming)
        report = runner("traces").run(naming, out, trace=capture.traces[0],
                                      source=capture.traces[0].relative_to(out).as_posix(),
                                      reference=reference[0] if reference else None)
        plot_trace_split(report, out / "trace_split.png")
        # every rank's trace together: stages, wait chain, balance plan, findings, shares
        ctx.progress(f"performance: analysing {len(capture.traces)} trace(s) together")
        try:
            runner("profile_analysis").run(naming, out, traces=capture.traces,
                                           references=[reference] if reference else [],
                                           recipes=Recipes.load(runbook.recipes) if runbook.recipes else None)
        except HarnessError as exc:
            (out / ANALYSIS_ERROR).write_text(f"{exc}\n")
        return commands

    def judge_served(self, evidence_dir: Path, runbook: Runbook) -> list[Check]:
        checks = self.judge_runner("performance", evidence_dir, runbook)
        if runbook.profiling is not None:
            checks += [self._trace_check(evidence_dir, runbook), *self._analysis_checks(evidence_dir, runbook)]
        return checks

    def _trace_check(self, evidence_dir: Path, runbook: Runbook) -> Check:
        """`performance.trace`, read back from the profile evidence: the analysed trace (time split,
        top kernels, launch gaps; the diff against the reference trace in the detail), or why no
        trace was taken (e.g. the engine has no profiler)."""
        name = runner("traces").check_name
        capture = runner("profile").read(self.runner_dir("profile", evidence_dir))
        if capture is None:
            return not_run(name, "no trace was taken")
        if not capture.ok:
            return not_run(name, f"no trace: {capture.reason}", evidence=capture.evidence)
        [check] = self.judge_runner("traces", evidence_dir, runbook)
        return check

    def _analysis_checks(self, evidence_dir: Path, runbook: Runbook) -> list[Check]:
        """`performance.profile` from the profile evidence: the multi-rank analysis, why it could
        not be made, or nothing when no trace was taken (`performance.trace` says why)."""
        capture = runner("profile").read(self.runner_dir("profile", evidence_dir))
        if capture is None or not capture.ok:
            return []
        error = self.runner_dir("profile_analysis", evidence_dir) / ANALYSIS_ERROR
        if error.is_file():
            return [not_run(runner("profile_analysis").check_name,
                            f"the traces could not be analysed: {error.read_text().strip()}", evidence=[str(error)])]
        return self.judge_runner("profile_analysis", evidence_dir, runbook)
