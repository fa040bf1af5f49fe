"""The five steps, in order, then the knowledge write-back (`WORKFLOW`). Each is a
`harness.steps.base.Step`: `collect` writes the evidence, `judge` reads it back into checks, so
"step N's checks" live in `steps/<step>.py`."""

from harness.steps.accuracy import AccuracyStep
from harness.steps.alignment import AlignmentStep
from harness.steps.base import Step
from harness.steps.interface import InterfaceStep
from harness.steps.knowledge import KnowledgeStep
from harness.steps.operators import OperatorsStep
from harness.steps.performance import PerformanceStep

STEPS: list[Step] = [AlignmentStep(), InterfaceStep(), OperatorsStep(), AccuracyStep(), PerformanceStep()]
KNOWLEDGE = KnowledgeStep()
WORKFLOW: list[Step] = [*STEPS, KNOWLEDGE]  # the graph's nodes: the steps, then the write-back gate
