"""The five steps, in order. Each is a `harness.steps.base.Step`: `collect` writes the evidence,
`judge` reads it back into checks, so "step N's checks" live in `steps/<step>.py`."""

from harness.steps.accuracy import AccuracyStep
from harness.steps.alignment import AlignmentStep
from harness.steps.base import Step
from harness.steps.interface import InterfaceStep
from harness.steps.operators import OperatorsStep
from harness.steps.performance import PerformanceStep

STEPS: list[Step] = [AlignmentStep(), InterfaceStep(), OperatorsStep(), AccuracyStep(), PerformanceStep()]
