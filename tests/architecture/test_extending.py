"""docs/extending.md is the guide to growing harness; it stays true to the code. Its "What exists
today" lists are compared with the registries (steps, evidence runners, runbook keys, dependency
kinds, engines), and each "Adding …" section must name the file that holds its registry and the
tests that pin the registry's contents, so that following the guide literally touches every file
an extension needs and no edit is left unnamed."""

from __future__ import annotations

import inspect
import re
from pathlib import Path
from typing import get_args

import pytest

import harness.engines
import harness.engines.kinds
import harness.evidence.runner
import harness.steps
from harness.engines import ENGINES
from harness.engines.kinds import Kind
from harness.evidence.runbook import Runbook
from harness.evidence.runner import RUNNERS
from harness.knowledge.judge import Judge
from harness.knowledge.scan.expressions import (
    Expressions,  # where the scan records a dependency
)
from harness.steps import STEPS

REPO = Path(__file__).resolve().parents[2]
GUIDE = REPO / "docs" / "extending.md"

# list label in "What exists today" -> what the code holds, in its order
REGISTRIES = {
    "steps": [step.slug for step in STEPS],
    "evidence runners": list(RUNNERS),
    "runbook keys": list(Runbook.model_fields),
    "dependency kinds": list(get_args(Kind)),
    "engines": list(ENGINES),
}


def _where(obj: object) -> str:
    """The repository path of the file defining `obj` (a class or a module)."""
    return str(Path(inspect.getsourcefile(obj)).resolve().relative_to(REPO))  # type: ignore[arg-type]



def _section(title: str) -> str:
    text = GUIDE.read_text(encoding="utf-8")
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", text, flags=re.MULTILINE | re.DOTALL)
    assert match, f"docs/extending.md has no section '## {title}'"
    return match.group(1)


def _listed(label: str) -> list[str]:
    """The names one bullet of "What exists today" lists: `- label (...): `a`, `b`, ...`."""
    bullets = re.split(r"\n(?=- )", _section("What exists today"))
    bullet = next((b for b in bullets if b.startswith(f"- {label} (")), None)
    assert bullet is not None, f"'What exists today' has no bullet for {label}"
    return re.findall(r"`([^`]+)`", bullet.split("):", 1)[1])


@pytest.mark.parametrize("label", sorted(REGISTRIES))
def test_what_exists_today_is_what_the_code_registers(label):
    assert _listed(label) == REGISTRIES[label], f"docs/extending.md 'What exists today': {label}"


# "Adding …" section -> the files it must name: the modules holding the registries it extends (found
# from the code, so a registry that moves takes the guide with it) and the tests that pin them.
NAMED = {
    "Adding a step": [_where(harness.steps), "tests/architecture/test_step_protocol.py"],
    "Adding an evidence runner": [_where(harness.evidence.runner), _where(Runbook),
                                  "tests/architecture/test_runner_contract.py"],
    "Adding a dependency kind": [_where(harness.engines.kinds), _where(Judge), _where(Expressions),
                                 "tests/knowledge/test_kind_table.py"],
    "Adding an engine": [_where(harness.engines), "tests/architecture/test_engines.py",
                         "tests/knowledge/test_kind_table.py"],
}


@pytest.mark.parametrize("title", sorted(NAMED))
def test_each_extension_names_its_registry_and_the_tests_that_pin_it(title):
    named = set(re.findall(r"`([^`\s]+)`", _section(title)))
    missing = [path for path in NAMED[title] if path not in named]
    assert not missing, f"docs/extending.md '{title}' does not name {missing}"
