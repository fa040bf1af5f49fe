"""The step protocol is checked when a step class is defined, like a platform class that does
not fit SGLang's interface should be: a missing attribute, an unknown report template or a
method whose parameters do not match `Step` is a TypeError at once, not a failure mid-run."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.record.checks import Check
from harness.record.models import RunInputs
from harness.steps import STEPS
from harness.steps.base import Collected, Step, StepContext


def test_the_five_steps_follow_the_protocol():
    assert [s.slug for s in STEPS] == ["01-alignment", "02-interface", "03-operators", "04-accuracy",
                                       "05-performance"]
    assert all(isinstance(s, Step) and s.template.endswith(".md.j2") for s in STEPS)


def _body(**attributes):
    def collect(self, ctx: StepContext) -> Collected:
        return Collected()

    def judge(self, evidence_dir: Path, inputs: RunInputs) -> list[Check]:
        return []

    return {"number": 9, "name": "extra", "title": "Extra", "template": "step.md.j2", "collect": collect,
            "judge": judge, **attributes}


def test_a_well_formed_step_is_accepted():
    step = type("Extra", (Step,), _body())()
    assert step.slug == "09-extra"
    assert step.draft(None, {}, []).status == "not_run"


@pytest.mark.parametrize(("attributes", "message"), [
    ({"template": None}, "must set `template`"),
    ({"number": "9"}, "must set `number` (int)"),
    ({"template": "nope.md.j2"}, "report template 'nope.md.j2' not found"),
    ({"judge": lambda self, evidence: []}, "judge does not match Step.judge"),
])
def test_a_step_that_does_not_fit_is_refused_at_definition(attributes, message):
    with pytest.raises(TypeError, match=message.replace("(", r"\(").replace(")", r"\)")):
        type("Broken", (Step,), _body(**attributes))


def test_a_step_without_collect_cannot_be_instantiated():
    body = _body()
    del body["collect"]
    with pytest.raises(TypeError, match="abstract"):
        type("Half", (Step,), body)()
