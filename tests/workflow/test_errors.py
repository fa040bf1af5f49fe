"""Bad inputs: each gives one clear line on stderr and a non-zero exit, never a traceback."""

from __future__ import annotations

import pytest


def one_line_error(proc, *fragments: str) -> None:
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("harness: error: "), proc.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


def test_unknown_feature(project):
    args = project.run_args()
    args[args.index("kv-pool")] = "no-such-feature"
    one_line_error(project.cli(*args, check=False, subprocess_=True), "unknown feature 'no-such-feature'")


def test_plugin_path_that_is_not_a_plugin(project):
    not_plugin = project.root / "not-a-plugin"
    not_plugin.mkdir()
    (not_plugin / "pyproject.toml").write_text('[project]\nname = "x"\n')
    args = project.run_args()
    args[args.index(str(project.plugin))] = str(not_plugin)
    one_line_error(project.cli(*args, check=False, subprocess_=True), "is not an SGLang plugin")


@pytest.mark.parametrize("command", [["status", "nope"], ["approve", "nope", "--by", "a"], ["resume", "nope"]])
def test_unknown_run_id(project, command):
    in_process = command[0] != "status"  # one real process is enough to see main() print it
    one_line_error(project.cli(*command, check=False, subprocess_=not in_process), "unknown run id 'nope'")


def test_gate_misuse_and_corrupt_state(project):
    project.cli(*project.run_args("--run-id", "r"))
    # changed evidence cannot be approved: the reviewer would sign off something else
    step_json = project.reports("r") / "evidence/01-alignment/step.json"
    original = step_json.read_bytes()
    step_json.write_bytes(original + b" ")
    refused = project.cli("approve", "r", "--by", "a", check=False)
    one_line_error(refused, "changed since the step produced it")
    step_json.write_bytes(original)
    one_line_error(project.cli("reject", "r", "--by", "a", "--reason", " ", check=False), "--reason")
    one_line_error(project.cli(*project.run_args("--run-id", "r"), check=False), "already exists")

    project.cli("reject", "r", "--by", "a", "--reason", "again")  # a valid decision still works

    state = project.workspace / ".harness/state.sqlite"
    state.write_bytes(b"this is not a database" * 100)
    one_line_error(project.cli("approve", "r", "--by", "a", check=False, subprocess_=True),
                   "resume state is gone", "is corrupt", "harness repair r")
