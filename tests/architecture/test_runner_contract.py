"""Every evidence runner follows one contract (`harness.evidence.runner`): the runbook section it
runs, its spec, a record that is its summary file, `run` and `checks`; every runner is registered
by name, and the contract is checked when a runner class is defined. Steps compose runners only
by name: a served step declares the runners it runs (`ServedStep.runners`), gets each through
`runner(name)`, and never calls a runner module's functions (`run_smoke`, `smoke_checks`, ...)."""

from __future__ import annotations

import ast
import importlib
import inspect
import re
from pathlib import Path

import pytest
from pydantic import BaseModel

from harness.evidence.runbook import Runbook, SmokeSpec, load_runbook
from harness.evidence.runner import RUNNERS, Runner, runner
from harness.record.checks import Check, CheckStatus
from harness.steps import STEPS
from harness.steps.interface import InterfaceStep
from harness.steps.operators import OperatorsStep
from harness.steps.served import ServedStep

EVIDENCE = Path(__file__).resolve().parents[2] / "harness" / "evidence"
EXAMPLE_RUNBOOK = Path(__file__).resolve().parents[2] / "harness" / "examples" / "workspace" / "runbook.yaml"
STEP_MODULES = Path(__file__).resolve().parents[2] / "harness" / "steps"
RUNNER_MODULES = {target.partition(":")[0] for target in RUNNERS.values()}
# the ServedStep methods that take a runner's name first
BY_NAME = {"runner", "run_runner", "judge_runner", "runner_dir"}


def runner_classes_defined() -> dict[str, str]:
    """Class name -> module of every `Runner[...]` subclass in harness/evidence, read from the source."""
    found = {}
    for path in EVIDENCE.glob("*.py"):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.ClassDef) and any(
                isinstance(base, ast.Subscript) and getattr(base.value, "id", None) == "Runner" for base in node.bases
            ):
                found[node.name] = f"harness.evidence.{path.stem}"
    return found


def test_every_runner_class_is_registered_under_its_name():
    registered = {target.partition(":")[2]: target.partition(":")[0] for target in RUNNERS.values()}
    assert registered == runner_classes_defined()
    for name in RUNNERS:
        loaded = runner(name)
        assert isinstance(loaded, Runner) and loaded.name == name
        assert issubclass(loaded.spec, BaseModel) and issubclass(loaded.record, BaseModel) and loaded.summary
        assert loaded.section in Runbook.model_fields


def test_an_unknown_runner_names_the_known_ones():
    with pytest.raises(KeyError, match=re.escape(f"known: {', '.join(sorted(RUNNERS))}")):
        runner("nope")


def test_the_contract_is_checked_when_a_runner_is_defined():
    with pytest.raises(TypeError, match="must set `name` and `summary`"):
        class Nameless(Runner[SmokeSpec, SmokeSpec]):
            spec = record = SmokeSpec

            def run(self, spec, evidence_dir):
                return spec

            def checks(self, record, evidence_dir, spec):
                return []

    with pytest.raises(TypeError, match=r"checks must take \(record, evidence_dir, spec"):
        class WrongChecks(Runner[SmokeSpec, SmokeSpec]):
            name, section, summary = "wrong", "smoke", "wrong.json"
            spec = record = SmokeSpec

            def run(self, spec, evidence_dir):
                return spec

            def checks(self, record):
                return []

    with pytest.raises(TypeError, match="must set `section`"):
        class Unplaced(Runner[SmokeSpec, SmokeSpec]):
            name, summary = "unplaced", "unplaced.json"
            spec = record = SmokeSpec

            def run(self, spec, evidence_dir):
                return spec

            def checks(self, record, evidence_dir, spec):
                return []


def test_read_and_judge_take_the_record_from_the_summary_file(tmp_path):
    class Echo(Runner[SmokeSpec, SmokeSpec]):
        name, section, summary = "echo", "smoke", "echo.json"
        spec = record = SmokeSpec

        def run(self, spec, evidence_dir):
            (evidence_dir / self.summary).write_text(spec.model_dump_json())
            return spec

        def checks(self, record, evidence_dir, spec):
            return [Check(name="echo", status="passed", metrics={"prompts": len(record.prompts)})]

    echo = Echo()
    assert echo.read(tmp_path) is None and echo.judge(tmp_path, SmokeSpec()) == []
    spec = echo.run(SmokeSpec(), tmp_path)
    assert echo.read(tmp_path) == spec
    assert echo.judge(tmp_path, spec)[0].metrics == {"prompts": len(spec.prompts)}



def test_a_runners_specs_come_from_its_runbook_section():
    runbook = load_runbook(EXAMPLE_RUNBOOK)
    assert runner("smoke").specs(runbook) == [("", runbook.smoke)]
    assert runner("accuracy").specs(runbook) == [(suite.name, suite) for suite in runbook.accuracy]
    assert runner("traces").specs(runbook) == [("", runner("traces").spec.model_validate(runbook.profiling.naming))]
    assert runner("fallback").specs(runbook) == [("", runbook)]
    unset = runbook.model_copy(update={"golden": None, "profiling": None})
    assert runner("golden").specs(unset) == runner("profile").specs(unset) == runner("traces").specs(unset) == []


def test_served_steps_declare_registered_runners_whose_sections_exist():
    served = [step for step in STEPS if isinstance(step, ServedStep)]
    assert [step.name for step in served] == ["interface", "operators", "accuracy", "performance"]
    for step in served:
        assert step.runners, f"{step.name} composes no runner"
        for name in step.runners:
            assert name in RUNNERS and runner(name).section in Runbook.model_fields
        assert set(step.runner_dirs) <= set(step.runners)


def test_a_run_the_runbook_asks_for_that_left_no_record_is_not_run(tmp_path):
    """Evidence a runner should have written and did not is said, never silently left out."""
    runbook = load_runbook(EXAMPLE_RUNBOOK)
    [check] = InterfaceStep().judge_served(tmp_path, runbook)
    assert (check.name, check.status) == ("smoke.evidence", CheckStatus.not_run), check.label()
    assert "left no record (smoke.jsonl)" in check.reason
    workload = OperatorsStep().judge_served(tmp_path, runbook)[0]  # the operators step's own name for it
    assert (workload.name, workload.status) == ("operators.workload", CheckStatus.not_run)


def test_a_served_step_composing_an_unknown_runner_is_refused_at_definition():
    with pytest.raises(TypeError, match=f"composes unknown runner.*nope; known: {re.escape(', '.join(sorted(RUNNERS)))}"):
        type("Composer", (ServedStep,), {"abstract": True, "runners": ("smoke", "nope")})
    with pytest.raises(TypeError, match="runner_dirs names runner.*golden"):
        type("Composer", (ServedStep,), {"abstract": True, "runners": ("smoke",), "runner_dirs": {"golden": "g"}})


def _step_sources() -> dict[str, ast.Module]:
    return {f"harness.steps.{path.stem}": ast.parse(path.read_text(encoding="utf-8"))
            for path in sorted(STEP_MODULES.glob("*.py"))}


def test_steps_use_runners_only_through_the_registry():
    """No step imports a runner module's functions (its old entry points) or its Runner class, or
    instantiates a Runner class: a runner is `runner(name)`. Its data models (specs, records)
    may be imported."""
    runner_classes = {target.partition(":")[2] for target in RUNNERS.values()}
    wrong = []
    for module, tree in _step_sources().items():
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                wrong += [f"{module}:{node.lineno}: import {a.name}" for a in node.names if a.name in RUNNER_MODULES]
            elif isinstance(node, ast.ImportFrom) and node.module:
                for alias in node.names:
                    if f"{node.module}.{alias.name}" in RUNNER_MODULES:
                        wrong.append(f"{module}:{node.lineno}: from {node.module} import {alias.name}")
                    elif node.module in RUNNER_MODULES:
                        value = getattr(importlib.import_module(node.module), alias.name)
                        if not inspect.isclass(value) or issubclass(value, Runner):
                            wrong.append(f"{module}:{node.lineno}: from {node.module} import {alias.name}")
            elif isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) in runner_classes:
                wrong.append(f"{module}:{node.lineno}: instantiates {ast.unparse(node.func)}")
    assert not wrong, "steps must get runners through runner(name):\n" + "\n".join(wrong)


def test_steps_name_only_the_runners_they_declare():
    declared = {type(step).__module__: step.runners for step in STEPS if isinstance(step, ServedStep)}
    undeclared = []
    for module, tree in _step_sources().items():
        if module not in declared:
            continue
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) in BY_NAME
                    and node.args and isinstance(node.args[0], ast.Constant)
                    and node.args[0].value not in declared[module]):
                undeclared.append(f"{module}:{node.lineno}: {ast.unparse(node)}")
    assert not undeclared, "runners used but not in the step's `runners`:\n" + "\n".join(undeclared)
