"""The evidence-runner contract, and the registry of runners by name.

An evidence runner is a subclass of `Runner`, the way a step is a subclass of `Step`: set the
class attributes and implement the two methods; the class is checked when it is defined.

    class MyRunner(Runner[MySpec, MyRecord]):
        name = "mine"               # its key in RUNNERS
        spec = MySpec               # the runbook section it runs (harness.evidence.runbook)
        record = MyRecord           # the pydantic model of its summary file
        summary = "mine.json"       # that file, relative to the runner's evidence dir

        def run(self, spec: MySpec, evidence_dir: Path, ...) -> MyRecord:
            # write the evidence under evidence_dir, the record last (as its summary file);
            # what the runner needs besides its spec (a server, an endpoint) comes as keywords
        def checks(self, record: MyRecord, evidence_dir: Path, spec: MySpec) -> list[Check]:
            # the checks, from the record, the files beside it and the spec alone, so a verdict
            # can be recomputed from the evidence (paths are taken from `evidence_dir` here: the
            # step's staging dir is renamed after `run`)

Steps compose runners: `collect` runs them into the step's evidence, `judge` reads each record
back (`Runner.read`) and asks for its checks (`Runner.judge`). `RUNNERS` maps a name to
`module:Class`, imported on first use (`runner(name)`), as mini-swe-agent maps environments and
lm-eval registers tasks: a new runner is one module and one line here.
"""

from __future__ import annotations

import importlib
import inspect
from abc import ABC, abstractmethod
from functools import cache
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar

from pydantic import BaseModel

from harness.record.checks import Check

SpecT = TypeVar("SpecT", bound=BaseModel)
RecordT = TypeVar("RecordT", bound=BaseModel)

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
    spec: ClassVar[type[BaseModel]]
    record: ClassVar[type[BaseModel]]
    summary: ClassVar[str]

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

    @abstractmethod
    def run(self, spec: SpecT, evidence_dir: Path, *args: Any, **kwargs: Any) -> RecordT:
        """Produce the evidence under `evidence_dir`; return the record written as its summary."""

    @abstractmethod
    def checks(self, record: RecordT, evidence_dir: Path, spec: SpecT) -> list[Check]:
        """The checks of one run, from its record, the evidence files beside it and its spec."""

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
