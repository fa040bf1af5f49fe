"""The step protocol, and the one place a step attempt is executed.

A step is a subclass of `Step`, the way an SGLang platform is a subclass of `SRTPlatform`: set
the class attributes and implement the two methods; the class is checked when it is defined.

    class MyStep(Step):
        number = 6                      # position in the workflow; slug "06-mine"
        name = "mine"
        title = "Mine: what it proves"  # report heading
        template = "step.md.j2"         # report template, in harness/report/templates/

        def collect(self, ctx: StepContext) -> Collected:
            # write evidence files under ctx.evidence_dir; return facts for the report and
            # the commands that reproduce the evidence
        def judge(self, evidence_dir: Path, inputs: RunInputs) -> list[Check]:
            # read the evidence files back and decide; nothing else may be consulted, so the
            # verdict can be recomputed from the evidence alone
        def draft(self, ctx, facts, checks) -> Draft:  # optional: the AI hook, after judge

`execute_step` owns what must be the same for every step: evidence is built in a staging dir
and renamed into place only when complete (so a SIGKILL leaves either the old evidence or the
new, never half); the step's facts are written to `facts.json` before `judge` reads them back;
completion is recorded in the evidence itself (`step.json`); and a re-executed node that finds
its attempt already complete reuses it instead of redoing the work.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import os
import platform
import shutil
import sys
import traceback
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, Field

from harness import __version__
from harness.knowledge.products import FeatureSpec
from harness.knowledge.upstream import UpstreamSource
from harness.record.checks import Check, not_run, overall
from harness.record.hashing import evidence_hash
from harness.record.layout import RunLayout, utc_now
from harness.record.models import Draft, RunInputs, StepRecord, StepResult
from harness.record.pins import describe, pinned_from, pinned_upstream
from harness.record.processes import ProcessRegistry
from harness.record.trajectory import step_event
from harness.util.files import fsync_dir, fsync_tree
from harness.util.templates import TEMPLATE_DIRS

STEP_RECORD = "step.json"
FACTS = "facts.json"


class Collected(BaseModel):
    """What `collect` hands back: facts for the report (also written to facts.json, where
    `judge` reads them) and the commands that reproduce the evidence."""

    facts: dict[str, Any] = Field(default_factory=dict)
    commands: list[str] = Field(default_factory=list)


@dataclass
class StepContext:
    """Everything a step's `collect` may use: the run, its inputs, the attempt, and where to
    write (the staging dir while the step runs)."""

    run: RunLayout
    inputs: RunInputs
    slug: str
    attempt: int
    rejection_reason: str | None
    evidence_dir: Path
    progress: Callable[[str], None] = lambda message: None

    @property
    def feature(self) -> FeatureSpec:
        return self.inputs.feature

    @property
    def plugin(self) -> Path:
        return Path(self.inputs.plugin)

    @property
    def processes(self) -> ProcessRegistry:
        """Where the step records the processes it starts (engine, bench_serving), so none
        outlives a killed harness (`harness.record.processes`)."""
        return ProcessRegistry(self.run.processes_dir, step=self.slug)

    @cached_property
    def upstream(self) -> UpstreamSource:
        """--upstream, resolved and checked against the run's pin (HarnessError if it moved)."""
        return pinned_upstream(self.inputs)

    @cached_property
    def old_upstream(self) -> UpstreamSource | None:
        """--from, resolved and pin-checked; None when the run has no --from."""
        return pinned_from(self.inputs)

    def write_json(self, name: str, data: Any) -> str:
        """Write one evidence file (sorted keys, so two runs diff cleanly); return its name."""
        return self.write_text(name, json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")

    def write_text(self, name: str, text: str) -> str:
        path = self.evidence_dir / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return name


class Step(ABC):
    """The step protocol (see the module docstring); checked by `__init_subclass__`."""

    number: ClassVar[int]
    name: ClassVar[str]
    title: ClassVar[str]
    template: ClassVar[str]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if inspect.isabstract(cls) or cls.__dict__.get("abstract", False):
            return
        for attribute, kind in (("number", int), ("name", str), ("title", str), ("template", str)):
            if not isinstance(getattr(cls, attribute, None), kind):
                raise TypeError(f"step {cls.__name__} must set `{attribute}` ({kind.__name__})")
        if not any((directory / cls.template).is_file() for directory in TEMPLATE_DIRS):
            raise TypeError(f"step {cls.__name__}: report template {cls.template!r} not found")
        for method in ("collect", "judge", "draft"):
            if method in cls.__dict__ and list(inspect.signature(getattr(Step, method)).parameters) != list(
                inspect.signature(cls.__dict__[method]).parameters
            ):
                raise TypeError(f"step {cls.__name__}.{method} does not match Step.{method}'s parameters")

    @property
    def slug(self) -> str:
        """`NN-name`: the step's evidence folder and report name."""
        return f"{self.number:02d}-{self.name}"

    @abstractmethod
    def collect(self, ctx: StepContext) -> Collected:
        """Write the step's evidence under `ctx.evidence_dir`; return facts and commands."""

    @abstractmethod
    def judge(self, evidence_dir: Path, inputs: RunInputs) -> list[Check]:
        """The step's checks, read back from `evidence_dir` (and the run's fixed inputs) alone."""

    def draft(self, ctx: StepContext, facts: dict[str, Any], checks: list[Check]) -> Draft:
        """The drafting hook: what the agent proposes, given the step's facts and checks (it runs
        after `judge`, with the context `collect` had; files it writes are evidence too). A step
        without an agent task has no draft."""
        return Draft(status="not_run", reason="this step has no agent task")

    def skip_gate(self, result: StepResult) -> str | None:
        """Why the step's gate need not wait for a decision on this result (journaled as a `skip`),
        or None: it waits. Only a gate with nothing to decide skips (the knowledge write-back
        without an endpoint); a step's own evidence is always reviewed."""
        return None


def read_facts(evidence_dir: Path) -> dict[str, Any]:
    """The facts `collect` returned, as written to facts.json ({} when absent)."""
    path = evidence_dir / FACTS
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def runner_failure(name: str, exc: BaseException, what: str = "evidence runner") -> Check:
    """A runner (or the knowledge engine) that is missing or raised: the check did not run, and
    says why (with the traceback as detail, except for a missing package)."""
    if isinstance(exc, ImportError):
        return not_run(name, f"{what} not available ({exc})")
    return not_run(name, f"{type(exc).__name__}: {exc}".splitlines()[0],
                   detail="".join(traceback.format_exception(exc)))


def environment(ctx: StepContext) -> dict[str, str]:
    """What a report's Environment table shows: versions, machine, upstreams and their pins."""
    inputs = ctx.inputs
    env = {
        "harness": __version__,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "machine": platform.machine(),
        "upstream": inputs.upstream,
        "plugin": inputs.plugin + (f" @ {inputs.plugin_commit}" if inputs.plugin_commit else ""),
    }
    if inputs.upstream_pin:
        env["upstream fingerprint"] = describe(inputs.upstream_pin)
    if inputs.from_upstream:
        env["from upstream"] = inputs.from_upstream
        if inputs.from_pin:
            env["from upstream fingerprint"] = describe(inputs.from_pin)
    if inputs.runbook:
        env["runbook"] = inputs.runbook
    return env


def load_result(evidence_dir: Path) -> StepResult | None:
    """The step.json of a finished attempt; None when absent, torn or tampered with (the
    caller then treats the step as not finished)."""
    record = evidence_dir / STEP_RECORD
    if not record.is_file():
        return None
    try:
        return StepResult.model_validate_json(record.read_text(encoding="utf-8"))
    except ValueError:
        return None


def execute_step(step: Step, ctx_factory: Callable[[Path], StepContext], run: RunLayout, attempt: int) -> StepResult:
    """Run one step attempt to completion, or reuse it when a previous process finished it.
    `ctx_factory(staging_dir)` builds the context the step collects with."""
    slug = step.slug
    final_dir = run.evidence_dir(slug)
    done = load_result(final_dir)
    if done is not None and done.attempt == attempt:
        run.log("step_reused", **step_event(_record(run, slug, done), slug))
        return done

    run.log("step_started", step=slug, attempt=attempt)
    run.staging_dir.mkdir(parents=True, exist_ok=True)
    staging = run.staging_dir / f"{slug}.attempt-{attempt}"
    if staging.exists():  # left by a process killed mid-step: its partial files are not evidence
        shutil.rmtree(staging)
    staging.mkdir()
    ctx = ctx_factory(staging)
    started = utc_now()

    collected = step.collect(ctx)
    ctx.write_json(FACTS, collected.facts)
    checks = [_relative_evidence(c, staging) for c in step.judge(staging, ctx.inputs)]
    result = StepResult(
        step=step.name,
        number=step.number,
        title=step.title,
        attempt=attempt,
        rejection_reason=ctx.rejection_reason,
        started_at=started,
        finished_at=utc_now(),
        verdict=overall(checks),
        checks=checks,
        facts=collected.facts,
        # Runners name the staging dir, which is renamed into place: reproduce from the final paths.
        commands=[c.replace(str(staging), str(final_dir)) for c in collected.commands],
        environment=environment(ctx),
        draft=step.draft(ctx, collected.facts, checks),
    )
    (staging / STEP_RECORD).write_text(result.model_dump_json(indent=2) + "\n", encoding="utf-8")
    fsync_tree(staging)

    if final_dir.exists():  # a rejected attempt: keep it, out of the way of the new evidence
        run.superseded_dir.mkdir(parents=True, exist_ok=True)
        previous = load_result(final_dir)
        tag = f"attempt-{previous.attempt}" if previous else f"stale-{os.getpid()}"
        target = run.superseded_dir / f"{slug}.{tag}"
        if target.exists():
            shutil.rmtree(target)
        os.rename(final_dir, target)
    os.rename(staging, final_dir)
    fsync_dir(final_dir.parent)
    with contextlib.suppress(OSError):  # only when empty: another step may be staging
        run.staging_dir.rmdir()
    run.log("step_finished", **step_event(_record(run, slug, result), slug))
    return result


def _record(run: RunLayout, slug: str, result: StepResult) -> StepRecord:
    """The trajectory's record of a finished attempt: verdict, report and evidence hash."""
    root = run.workspace.root
    return StepRecord(attempt=result.attempt, verdict=result.verdict, finished_at=result.finished_at,
                      report=run.step_report(slug).relative_to(root).as_posix(),
                      evidence_dir=run.evidence_dir(slug).relative_to(root).as_posix(),
                      evidence_hash=evidence_hash(run.evidence_dir(slug)))


def _relative_evidence(check: Check, evidence_dir: Path) -> Check:
    """Runners may name absolute paths into the staging dir, which is renamed away; reports
    need paths relative to the step's evidence dir."""
    rel = []
    for item in check.evidence:
        path = Path(item)
        if path.is_absolute():
            try:
                item = path.resolve().relative_to(evidence_dir.resolve()).as_posix()
            except ValueError:
                pass  # outside the evidence dir (e.g. a shared baseline): keep as given
        rel.append(item)
    return check.model_copy(update={"evidence": rel})
