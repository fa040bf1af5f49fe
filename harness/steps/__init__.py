"""The five steps, in order. Each module has the same shape (see `base.Step`):
read inputs → produce evidence files → run checks → draft seam → report."""

from harness.steps import accuracy, alignment, interface, operators, performance

STEPS = [alignment.STEP, interface.STEP, operators.STEP, accuracy.STEP, performance.STEP]
