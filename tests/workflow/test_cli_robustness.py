"""Bad input at the command line (issue 17, robustness): text people supply is printed as text,
an unusable workspace or input file is one line on stderr and exit 2 — never a traceback, a hang
or a MemoryError — and nothing the run recorded before is lost."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest
import yaml
from workflow_support import loopback_runbook, one_line_error

MARKUP_BY = "[bold]x"
MARKUP_REASON = "[/] list[int] is [link=https://evil.example]here[/link]"
MARKUP_NOTE = "[/]"
HANG_LIMIT_S = 60  # far above what a refusal takes; today's hangs never end


def test_markup_in_decisions_is_printed_as_text(project):
    """Rich markup in --by/--reason/--note is shown as typed, by every later command."""
    project.cli(*project.run_args("--run-id", "r"))
    project.cli("reject", "r", "--by", MARKUP_BY, "--reason", MARKUP_REASON)
    approved = project.cli("approve", "r", "--by", MARKUP_BY, "--note", MARKUP_NOTE)
    assert f"note: {MARKUP_NOTE}" in approved.stdout
    one = project.cli("status", "r", subprocess_=True)
    assert f"{MARKUP_BY}," in one.stdout and f"note: {MARKUP_NOTE}" in one.stdout, one.stdout
    assert "Traceback" not in one.stderr
    assert project.cli("status", subprocess_=True).returncode == 0


@pytest.mark.parametrize(("option", "text"), [
    ("--by", "eve\x1b]0;pwned\x07\x1b[2J"),  # sets the window title, clears the screen
    ("--by", "eve\nalice"),  # one person, one line of status and the reports
    ("--note", "\x1b[1Ahidden"),  # moves the cursor over the lines status printed before
    ("--note", "ok\u202eevil"),  # a bidi override reverses what follows
])
def test_control_characters_in_decisions_are_refused(project, option, text):
    """Terminal escape sequences and invisible format characters in what a person says at a gate
    would act on every later `status` instead of reading as text: refused, nothing decided."""
    project.cli(*project.run_args("--run-id", "r"))
    by, note = (text, "read") if option == "--by" else ("alice", text)
    refused = project.cli("approve", "r", "--by", by, "--note", note, check=False)
    one_line_error(refused, f"{option} holds the control character", "nothing was decided")
    assert project.status("r")["waiting_at"] == "01-alignment"
    notes = project.cli("approve", "r", "--by", "alice", "--note", "line one\nline two\tend")  # plain text is fine
    assert notes.returncode == 0


def _subprocess(project, *args: str, workspace: Path | str | None = None) -> subprocess.CompletedProcess:
    """`python -m harness ARGS` as a real process (main()'s error handling is the point), with a
    time limit: a hang fails the test instead of stalling the suite."""
    command = project.command(*args)
    if workspace is not None:
        command[-1] = str(workspace)
    return subprocess.run(command, capture_output=True, text=True, env=project.env, timeout=HANG_LIMIT_S,
                          check=False)


@pytest.mark.parametrize("command", [["status"], ["repair"], ["run"]])
def test_workspace_that_is_a_symlink_loop(project, command):
    loop = project.root / "loop"
    loop.symlink_to(project.root / "loop2")
    (project.root / "loop2").symlink_to(loop)
    one_line_error(_subprocess(project, *command, workspace=loop), "workspace", str(loop))


def test_a_missing_plugin_path_is_said_before_what_else_is_missing(project):
    """`run --plugin /nope` without --upstream: the wrong path first, not the missing option."""
    one_line_error(_subprocess(project, "run", "--plugin", str(project.root / "nope"), "--feature", "x"),
                   f"plugin path {project.root / 'nope'} is not a directory")


def test_workspace_that_is_a_file(project):
    a_file = project.root / "a-file"
    a_file.write_text("x")
    one_line_error(_subprocess(project, "status", workspace=a_file), "is not a directory")


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="no /proc on this machine")
@pytest.mark.parametrize("command", [["repair"], ["run"]])
def test_workspace_where_run_state_cannot_be_created(project, command):
    """/proc is a directory in which no `.harness/` can be made."""
    args = project.run_args("--run-id", "p") if command == ["run"] else command
    one_line_error(_subprocess(project, *args, workspace="/proc"), "/proc")


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads every directory")
def test_unreadable_workspace(project):
    project.cli(*project.run_args("--run-id", "u"))
    project.workspace.chmod(0)
    try:
        one_line_error(_subprocess(project, "status"), "workspace", "not readable")
    finally:
        project.workspace.chmod(0o755)
    assert project.cli("status", "u").returncode == 0  # nothing it recorded is lost


# --------------------------------------------------------------------------- input files


def _feature_run(project, feature: str) -> subprocess.CompletedProcess:
    started = time.monotonic()
    proc = _subprocess(project, *[feature if a == "kv-pool" else a for a in project.run_args("--run-id", "f")])
    assert time.monotonic() - started < HANG_LIMIT_S
    assert not (project.workspace / ".harness/runs/f").exists()  # refused before anything is recorded
    return proc


def _fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


def _sparse(path: Path, size: int) -> Path:
    with path.open("wb") as handle:
        handle.truncate(size)
    return path


def _odd_file(path: Path, kind: str) -> Path:
    """`path` made a FIFO (no writer: a plain read waits forever), a link to /dev/zero (endless)
    or a directory."""
    if kind == "fifo":
        _fifo(path)
    elif kind == "dev-zero":
        path.symlink_to("/dev/zero")
    else:
        path.mkdir()
    return path


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "directory"])
def test_feature_file_that_is_not_a_regular_file(project, kind):
    path = _odd_file(project.workspace / "features" / "odd.yaml", kind)
    for feature in ("odd", str(path)):  # by ID in features/, and by path
        one_line_error(_feature_run(project, feature), str(path), "not a regular file")


def test_feature_file_of_200_mb(project):
    path = _sparse(project.workspace / "features" / "big.yaml", 200 * 1024 * 1024)
    one_line_error(_feature_run(project, "big"), str(path), "MB")


def test_feature_file_with_an_alias_bomb(project):
    """Nine levels of nine aliases: a billion strings once expanded, a 1 KB file."""
    lines = ['a0: &a0 ["lol"]']
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 10)]
    lines += ["name: bomb", "upstream: {symbols: *a9}"]
    path = project.workspace / "features" / "bomb.yaml"
    path.write_text("\n".join(lines) + "\n")
    one_line_error(_feature_run(project, "bomb"), str(path), "alias")


def test_feature_file_with_a_recursive_alias(project):
    path = project.workspace / "features" / "loop.yaml"
    path.write_text("name: loop\nupstream: &u {symbols: [a], paths: *u}\n")
    one_line_error(_feature_run(project, "loop"), str(path), "alias")


def test_feature_file_nested_too_deep(project):
    path = project.workspace / "features" / "deep.yaml"
    path.write_text("name: deep\nupstream: " + "[" * 5000 + "]" * 5000 + "\n")
    one_line_error(_feature_run(project, "deep"), str(path), "nested")


def test_feature_file_that_is_not_utf8(project):
    path = project.workspace / "features" / "latin1.yaml"
    path.write_bytes("name: caf\xe9\nupstream: {symbols: [a]}\n".encode("latin-1"))
    one_line_error(_feature_run(project, "latin1"), str(path), "UTF-8")


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "directory"])
def test_runbook_that_is_not_a_regular_file(project, kind):
    path = _odd_file(project.root / "odd-runbook.yaml", kind)
    args = project.run_args("--run-id", "rb")
    args[args.index(str(project.runbook))] = str(path)
    one_line_error(_subprocess(project, *args), str(path.resolve()), "not a regular file")


def test_recipes_file_over_the_size_cap(project):
    recipes = _sparse(project.root / "recipes.yaml", 5 * 1024 * 1024)
    runbook = loopback_runbook(project.root / "with-recipes.yaml")
    data = yaml.safe_load(runbook.read_text())
    runbook.write_text(yaml.safe_dump({**data, "recipes": [str(recipes)]}, sort_keys=False))
    one_line_error(_subprocess(project, *project.run_args("--run-id", "rc", runbook=runbook)), str(recipes), "MB")
