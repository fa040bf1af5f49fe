"""The evidence-runner contract, and the registry of runners by name.

An evidence runner is a subclass of `Runner`, the way a step is a subclass of `Step`: set the
class attributes and implement the two methods; the class is checked when it is defined.

    class MyRunner(Runner[MySpec, MyRecord]):
        name = "mine"               # its key in RUNNERS
        section = "mine"            # the `Runbook` field it runs (harness.evidence.runbook)
        spec = MySpec               # that section's model
        record = MyRecord           # the pydantic model of its summary file
        summary = "mine.json"       # that file, relative to the runner's evidence dir

        def run(self, spec: MySpec, evidence_dir: Path, ...) -> MyRecord:
            # write the evidence under evidence_dir, the record last (as its summary file);
            # what the runner needs besides its spec (a server, an endpoint) comes as keywords
        def checks(self, record: MyRecord, evidence_dir: Path, spec: MySpec) -> list[Check]:
            # the checks, from the record, the files beside it and the spec alone, so a verdict
            # can be recomputed from the evidence (paths are taken from `evidence_dir` here: the
            # step's staging dir is renamed after `run`)

Optional: `phase` (when a served step runs it: "static" needs no server, "serving" drives it,
"stopped" reads its complete logs), `specs` (the runs its section asks for, when that is not
the section's value itself) and `commands` (the shell lines that reproduce a run).

Steps compose runners: a served step (`harness.steps.served.ServedStep`) names the ones it runs
in `runners`, runs each into its evidence (`run`), reads each record back (`Runner.read`) and
asks for its checks (`Runner.judge`). `RUNNERS` maps a name to `module:Class`, imported on first
use (`runner(name)`, the only way a step gets a runner), as mini-swe-agent maps environments
and lm-eval registers tasks: a new runner is one module and one line here.
"""

from __future__ import annotations

import importlib
import inspect
from abc import ABC, abstractmethod
from functools import cache
from pathlib import Path
from typing import Any, ClassVar, Generic, Literal, TypeVar, get_args

from pydantic import BaseModel

from harness.record.checks import Check

SpecT = TypeVar("SpecT", bound=BaseModel)
RecordT = TypeVar("RecordT", bound=BaseModel)
# When a served step runs a runner: before its server starts, needing none ("static"; whether or
# not the server starts), while the server is healthy ("serving"), or once it has stopped and its
# logs are complete ("stopped").
Phase = Literal["static", "serving", "stopped"]

# name -> "module:Class"; every Runner subclass in harness.evidence is listed (a test checks it).
RUNNERS: dict[str, str] = {
    "golden": "harness.evidence.golden:GoldenRunner",
    "smoke": "harness.evidence.smoke:SmokeRunner",
    "profile": "harness.evidence.profile:ProfileRunner",
    "traces": "harness.evidence.traces:TraceRunner",
    "profile_analysis": "harness.evidence.profile_analysis:ProfileAnalysisRunner",
    "fallback": "harness.evidence.fallback:FallbackRunner",
    "accuracy": "harness.evidence.accuracy:AccuracyRunner",
    "performance": "harness.evidence.performance:PerformanceRunner",
}


class Runner(ABC, Generic[SpecT, RecordT]):
    """The evidence-runner protocol (see the module docstring); checked by `__init_subclass__`."""

    name: ClassVar[str]
    section: ClassVar[str]
    spec: ClassVar[type[BaseModel]]
    record: ClassVar[type[BaseModel]]
    summary: ClassVar[str]
    phase: ClassVar[Phase] = "serving"

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if inspect.isabstract(cls):
            return
        if not isinstance(cls.__dict__.get("name"), str) or not isinstance(cls.__dict__.get("summary"), str):
            raise TypeError(f"runner {cls.__name__} must set `name` and `summary` (str)")
        for attribute in ("spec", "record"):
            value = getattr(cls, attribute, None)
            if not (inspect.isclass(value) and issubclass(value, BaseModel)):
                raise TypeError(f"runner {cls.__name__} must set `{attribute}` to a pydantic model")
        for method, expected in (("run", ["self", "spec", "evidence_dir"]),
                                 ("checks", ["self", "record", "evidence_dir", "spec"])):
            if list(inspect.signature(getattr(cls, method)).parameters)[: len(expected)] != expected:
                raise TypeError(f"runner {cls.__name__}.{method} must take ({', '.join(expected[1:])}, ...)")
        # That it names a field of Runbook is checked by tests/architecture/test_runner_contract.py:
        # the runbook module imports a runner (traces) to validate a section.
        if not isinstance(getattr(cls, "section", None), str):
            raise TypeError(f"runner {cls.__name__} must set `section` (str): the Runbook field it runs")
        if cls.phase not in get_args(Phase):
            raise TypeError(f"runner {cls.__name__}: `phase` must be one of {', '.join(get_args(Phase))}, not {cls.phase!r}")

    @abstractmethod
    def run(self, spec: SpecT, evidence_dir: Path, *args: Any, **kwargs: Any) -> RecordT:
        """Produce the evidence under `evidence_dir`; return the record written as its summary."""

    @abstractmethod
    def checks(self, record: RecordT, evidence_dir: Path, spec: SpecT) -> list[Check]:
        """The checks of one run, from its record, the evidence files beside it and its spec."""

    def specs(self, runbook: BaseModel) -> list[tuple[str, SpecT]]:
        """The runs a `Runbook` asks of this runner, each as (its evidence dir relative to the
        runner's, its spec): none when its section is unset (None), one per suite of a list
        section (into `<suite name>/`), else one of the section itself (into the runner's dir)."""
        value = getattr(runbook, self.section)
        if value is None:
            return []
        if isinstance(value, list):
            return [(suite.name, suite) for suite in value]
        return [("", value)]

    def commands(self, record: RecordT, **inputs: Any) -> list[str]:
        """The shell lines that reproduce the evidence of `record`, a run that took `inputs` (the
        keywords given to `run`); none by default."""
        return []

    def read(self, evidence_dir: Path) -> RecordT | None:
        """The record a run left in `evidence_dir`, or None when it did not run there."""
        path = Path(evidence_dir) / self.summary
        if not path.is_file():
            return None
        return self.record.model_validate_json(path.read_text(encoding="utf-8"))  # type: ignore[return-value]

    def judge(self, evidence_dir: Path, spec: SpecT) -> list[Check]:
        """The checks of the run recorded in `evidence_dir`; [] when it did not run there."""
        record = self.read(evidence_dir)
        return [] if record is None else self.checks(record, Path(evidence_dir), spec)


@cache
def runner(name: str) -> Runner[Any, Any]:
    """The registered runner `name` (KeyError naming the known ones otherwise)."""
    if name not in RUNNERS:
        raise KeyError(f"no evidence runner {name!r}; known: {', '.join(sorted(RUNNERS))}")
    module, _, attribute = RUNNERS[name].partition(":")
    return getattr(importlib.import_module(module), attribute)()
