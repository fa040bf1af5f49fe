"""The runbook `harness runbook init` writes, used the way a new user's trial used it: its server
requires the engine release (a machine without it hears "not run" with the pip line, not a
failed server start); its TODO placeholders are refused, with the file:line of each, by `run`,
`approve --runbook` and `resume --runbook`, before anything is recorded; and a runbook for
another release than the run's target is said, not refused (`--engine-version` writes one for
the target)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from workflow_support import cached_release, one_line_error

from harness.evidence.runbook import load_runbook, refuse_placeholders
from harness.util.yamlfile import YamlError


def _init(project, out: str, *args: str) -> Path:
    proc = subprocess.run([sys.executable, "-m", "harness", "runbook", "init", "--plugin", str(project.plugin),
                           "--out", out, *args], capture_output=True, text=True, env=project.env, cwd=project.root,
                          timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    return project.root / out


def _line(runbook: Path, text: str) -> int:
    return next(n for n, line in enumerate(runbook.read_text().splitlines(), 1) if line.startswith(text))


def _fill(runbook: Path, device: bool = True, model: bool = True) -> Path:
    text = runbook.read_text()
    if device:
        text = text.replace("  device: TODO", "  device: xdev:X2")
    if model:
        text = text.replace("  model: /models/TODO", "  model: /models/qwen2.5-7b")
    runbook.write_text(text)
    return runbook


def _without_runbook(project, run_id: str, upstream: str | None = None) -> list[str]:
    args = project.run_args("--run-id", run_id)
    at = args.index("--runbook")
    args = args[:at] + args[at + 2:]
    if upstream is not None:
        args[args.index("--upstream") + 1] = upstream
    return args


def _release(project, version: str) -> str:
    return cached_release(project, project.new, version)


def test_the_template_requires_its_engine_release_so_a_machine_without_it_serves_nothing(project):
    runbook = _fill(_init(project, "init.yaml", "--engine-version", "0.5.17"))
    assert load_runbook(runbook).server.requires == ["sglang==0.5.17"]  # not a comment
    started = project.cli(*project.run_args("--run-id", "norel", runbook=runbook))
    line = "the runbook's server needs sglang==0.5.17, not installed here; install it with pip install sglang==0.5.17"
    assert f'Served steps will say "not run": {line}' in " ".join(started.stdout.split()), started.stdout
    project.cli("approve", "norel", "--by", "alice")
    step = project.status("norel")["steps"][1]
    served = [(c["name"], c["status"], c["reason"]) for c in step["checks"]
              if c["name"].startswith(("smoke.", "server.", "interface.smoke"))]
    assert served == [("interface.smoke", "not_run", line)], served  # no "server.start: failed"
    assert not (project.reports("norel") / "evidence" / "02-interface" / "server" / "server.json").exists()


def test_a_runbook_still_holding_the_templates_placeholders_is_refused_with_its_line(project):
    runbook = _init(project, "init.yaml", "--engine-version", "0.5.17")
    device, model = _line(runbook, "  device: TODO"), _line(runbook, "  model: /models/TODO")
    refused = project.cli(*project.run_args("--run-id", "todo", runbook=runbook), check=False, subprocess_=True)
    one_line_error(refused, f"{runbook}:{device}: environment.device is still the template's placeholder 'TODO': "
                            "fill it in (and server.model)")
    assert refused.returncode == 2
    assert not (project.workspace / ".harness" / "runs" / "todo").exists()  # nothing started or recorded

    # a run started without one keeps waiting where it was, its record untouched
    project.cli(*_without_runbook(project, "late"))
    journal = project.journal("late")
    _fill(runbook, model=False)
    for command in (["approve", "late", "--by", "alice"], ["resume", "late"]):
        one_line_error(project.cli(*command, "--runbook", str(runbook), check=False, subprocess_=True),
                       f"{runbook}:{model}: server.model is still the template's placeholder '/models/TODO': fill it in")
    assert project.journal("late") == journal
    assert project.status("late")["waiting_at"] == "01-alignment"

    _fill(runbook)
    project.cli("resume", "late", "--runbook", str(runbook))
    assert [e["runbook"] for e in project.journal("late") if e["event"] == "runbook_attached"] == [str(runbook)]


def test_without_a_declared_release_the_engine_version_is_a_placeholder_too(project):
    runbook = _fill(_init(project, "init.yaml"))  # the fixture plugin declares no SGLang release
    assert load_runbook(runbook).server.requires == ["sglang"]
    one_line_error(project.cli(*project.run_args("--run-id", "nover", runbook=runbook), check=False, subprocess_=True),
                   f"{runbook}:{_line(runbook, '  engine_version:')}: environment.engine_version is still the "
                   "template's placeholder 'TODO': fill it in")


def test_the_placeholder_is_the_word_TODO_in_any_value_and_nothing_else(tmp_path):
    runbook = tmp_path / "init.yaml"
    runbook.write_text("name: x  # TODO: a comment is not a value\n"
                       "environment: {device: TODOS, engine_version: todo}\n"
                       "server:\n  command: serve --port {port}\n  model: m\n"
                       "smoke:\n  prompts:\n    - fine\n    - 'Write a TODO list'\n")
    with pytest.raises(YamlError) as refused:
        refuse_placeholders(runbook)
    assert str(refused.value) == f"{runbook}:9: smoke.prompts[1] is still the template's placeholder 'Write a TODO list': fill it in"
    runbook.write_text(runbook.read_text().replace("a TODO list", "a to-do list"))
    refuse_placeholders(runbook)


def test_a_runbook_for_another_release_than_the_runs_target_is_said_not_refused(project):
    target = _release(project, "0.5.23")
    old = _fill(_init(project, "old.yaml", "--engine-version", "0.5.17"))  # for the release ported from
    warning = (f"Warning: {old} is for SGLang 0.5.17 (environment.engine_version), but the run targets sglang==0.5.23: "
               "the reports name 0.5.17 as the release measured; if the server runs 0.5.23, set engine_version "
               "(harness runbook init --engine-version 0.5.23)")
    args = _without_runbook(project, "port", upstream=target) + ["--runbook", str(old)]
    started = project.cli(*args)
    assert warning in " ".join(started.stdout.split()), started.stdout
    assert project.status("port")["waiting_at"] == "01-alignment"  # a warning: the run goes on

    project.cli(*_without_runbook(project, "later", upstream=target))
    attached = project.cli("approve", "later", "--by", "alice", "--runbook", str(old))
    assert warning in " ".join(attached.stdout.split()), attached.stdout
    assert project.status("later")["waiting_at"] == "02-interface"

    new = _fill(_init(project, "new.yaml", "--engine-version", "0.5.23"))
    assert load_runbook(new).server.requires == ["sglang==0.5.23"]
    started = project.cli(*_without_runbook(project, "ported", upstream=target), "--runbook", str(new))
    assert "Warning:" not in started.stdout, started.stdout
