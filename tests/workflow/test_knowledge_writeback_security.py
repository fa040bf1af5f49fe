"""The knowledge write-back as an attacking model drives it, end to end through the CLI (issue
17): a lesson whose content forges a `+++ b/` header of the patch must not make harness copy a
file from outside the sandbox into the reports, and a lesson file named as shell code is
refused at the gate."""

from __future__ import annotations

import json
import os

from agent_scripts import call, kv_port, write_up
from test_agent import RUN, Example, releases, snapshot  # noqa: F401 — `releases` is a fixture

from harness.testing.llm import ScriptedLLM

SECRET = "sk-outside-the-workspace-0123456789"


def test_a_forged_patch_header_copies_nothing_and_a_shell_file_name_is_refused(tmp_path, releases):  # noqa: F811
    example = Example(tmp_path)
    secret = tmp_path / "secret.txt"
    secret.write_text(SECRET + "\n")
    sandbox = example.workspace / ".harness" / "runs" / RUN / "sandbox" / "06-knowledge-1"
    forged = os.path.relpath(secret, sandbox)  # ../../../../../../secret.txt
    lesson = ".harness/skills/interface/LESSONS.md"
    evil = ".harness/skills/interface/LESSONS$(id>X).md"
    knowledge = [call("write_file", path=lesson, content=f"- a lesson\n++ b/{forged}\n"),
                 call("write_file", path=evil, content="- another\n"),
                 call("finish", summary="lessons")]
    script = (write_up("landing points") + kv_port("ported") + write_up("operators") + write_up("accuracy")
              + write_up("performance") + knowledge)
    with ScriptedLLM(script) as llm:
        example.start(llm.base_url)
        for _ in range(4):
            example.cli("approve", RUN, "--by", "ana", "--override", "--note", "reviewed")
    evidence = example.reports(RUN) / "evidence" / "06-knowledge"
    patch = (evidence / "agent" / "patch.diff").read_text()
    assert f"\n+++ b/{forged}\n" in patch  # the forged header is there, as content
    step = json.loads((evidence / "step.json").read_text())
    facts = json.loads((evidence / "facts.json").read_text())
    for path in [*example.workspace.rglob("*"), *tmp_path.glob("*")]:
        if path.is_file() and path != secret and not path.is_symlink():
            assert SECRET not in path.read_text(errors="replace"), path
    assert sorted(facts["changed"]) == sorted([lesson, evil])
    scope = {c["name"]: c for c in step["checks"]}["knowledge.scope"]
    assert scope["status"] == "failed" and "LESSONS$(id>X).md" in scope["reason"]
    assert snapshot(example.plugin) == example.before
