"""An engine is one module of harness/engines/ and its name in ENGINES (docs/extending.md "Adding an
engine"): every engine module is listed, each is found under its own name, and both `check`
(--engine, a release spec) and `run` (a runbook's `environment.engine`, its one pin
`engine_version`) take every listed engine with nothing else to edit."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.engines import ENGINES, engine_named, engine_of_spec
from harness.evidence.runbook import load_runbook

ENGINE_DIR = Path(__file__).resolve().parents[2] / "harness" / "engines"
SHARED = {"__init__", "base", "forms", "kinds", "serving"}  # what every engine module builds on


def test_every_engine_module_is_in_engines_under_its_name():
    modules = {path.stem for path in ENGINE_DIR.glob("*.py")} - SHARED
    assert modules == set(ENGINES), "an engine module is listed in ENGINES (harness/engines/__init__.py)"
    assert all(engine.name == name for name, engine in ENGINES.items())


@pytest.mark.parametrize("name", sorted(ENGINES))
def test_check_and_run_take_every_engine(tmp_path, name):
    engine = ENGINES[name]
    assert engine_named(name) is engine and engine_of_spec(engine.release_spec("1.0")) is engine
    path = tmp_path / "runbook.yaml"
    path.write_text(f"name: t\nenvironment:\n  device: cpu\n  engine: {name}\n  engine_version: '1.0'\n"
                    "server:\n  command: serve {model} --port {port}\n  model: m\n")
    environment = load_runbook(path).environment
    assert environment.engine_profile is engine and environment.serving is engine.serving
    assert environment.engine_version == "1.0"
