"""Every evidence runner follows one contract (`harness.evidence.runner`): its spec, a record that
is its summary file, `run` and `checks`; every runner is registered by name, and the contract is
checked when a runner class is defined."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from pydantic import BaseModel

from harness.evidence.runbook import SmokeSpec
from harness.evidence.runner import RUNNERS, Runner, runner
from harness.record.checks import Check

EVIDENCE = Path(__file__).resolve().parents[2] / "harness" / "evidence"


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


def test_an_unknown_runner_names_the_known_ones():
    with pytest.raises(KeyError, match="known: accuracy, fallback"):
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
            name, summary = "wrong", "wrong.json"
            spec = record = SmokeSpec

            def run(self, spec, evidence_dir):
                return spec

            def checks(self, record):
                return []


def test_read_and_judge_take_the_record_from_the_summary_file(tmp_path):
    class Echo(Runner[SmokeSpec, SmokeSpec]):
        name, summary = "echo", "echo.json"
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

