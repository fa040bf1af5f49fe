"""The write-back after the last gate, end to end through the CLI on the built-in example plugin
(a git checkout standing for the engineer's) with the scripted endpoint: every step drafts (the
write-up steps from their skills, a plugin override included), the knowledge gate shows the
patch to the knowledge files, a rejection changes nothing, an approval commits it on the
sandbox's branch. Without an endpoint the knowledge gate is skipped with its reason."""

from __future__ import annotations

import json

import git
from agent_scripts import call, kv_port, write_up
from test_agent import RUN, Example, releases, snapshot  # noqa: F401 — `releases` is a fixture

from harness.testing.llm import ScriptedLLM

LANDING = "docs/landing-points/kv-pool-factory.md"
LESSON = ".harness/skills/interface/LESSONS.md"
OVERRIDE = "Operators, as this plugin team wants them: name the recipe first."


def knowledge(summary: str) -> list[dict]:
    """The write-back: a conflict in the Platform Map's curated notes, a lesson, then finish."""
    return [
        call("read_file", path="platform-map.yaml", start_line=1, end_line=5),
        call("replace_in_file", path="platform-map.yaml", old="  known_conflicts: []\n",
                             new="  known_conflicts:\n  - get_mha/mla_kv_pool_cls gone in 0.5.23: get_kv_pool_cls(*, kind)\n"),
        call("write_file", path=LESSON, content="- 2026-12: port factories to their successor.\n"),
        call("finish", summary=summary),
    ]


def test_every_step_drafts_and_the_knowledge_gate_commits_only_on_approval(tmp_path, releases, monkeypatch):  # noqa: F811
    # every gate decided in one second (gates carry whole seconds): `approve` must still name
    # the commit of the step it approved, not an earlier step approved in the same second
    monkeypatch.setattr("harness.workflow.runs.utc_now", lambda: "2026-12-04T07:00:00Z")
    example = Example(tmp_path)
    skills = example.plugin / ".harness" / "skills" / "operators"
    skills.mkdir(parents=True)
    (skills / "SKILL.md").write_text(f"---\nname: operators\ndescription: the team's own\n---\n\n{OVERRIDE}\n")
    repo = git.Repo(example.plugin)
    repo.git.add("-A")
    repo.git.commit("-m", "team skill", env={"GIT_AUTHOR_NAME": "eng", "GIT_AUTHOR_EMAIL": "e@x",
                                            "GIT_COMMITTER_NAME": "eng", "GIT_COMMITTER_EMAIL": "e@x"})
    example.before = snapshot(example.plugin)
    runbook_before = example.runbook.read_bytes()
    alignment = [call("write_file", path=LANDING, content="| get_kv_pool_cls | platform factory |\n"),
                 call("finish", summary="get_kv_pool_cls lands on the platform factory")]
    script = (alignment + kv_port("ported") + write_up("operators: no fallback") + write_up("accuracy: not run")
              + write_up("performance: no candidates") + knowledge("first write-back") + knowledge("second write-back"))
    with ScriptedLLM(script) as llm:
        example.start(llm.base_url)
        for _ in range(4):  # interface .. performance (a failed one needs a note; every one gets it)
            example.cli("approve", RUN, "--by", "ana", "--override", "--note", "reviewed with the example's known breakages")
        evidence = example.reports(RUN) / "evidence"
        drafts = {slug: json.loads((evidence / slug / "step.json").read_text())["draft"]
                  for slug in ("01-alignment", "03-operators", "04-accuracy", "05-performance")}
        assert [d["summary"] for d in drafts.values()] == ["get_kv_pool_cls lands on the platform factory",
                                                          "operators: no fallback", "accuracy: not run",
                                                          "performance: no candidates"]
        assert LANDING in (evidence / "01-alignment/agent/patch.diff").read_text()
        tasks = {r["messages"][1]["content"].splitlines()[0]: r["messages"][1]["content"] for r in llm.requests}
        operators = next(t for h, t in tasks.items() if "the operators step" in h)
        assert OVERRIDE in operators and "## The step's checks" in operators
        assert "Write the **landing-point report**" in next(t for h, t in tasks.items() if "the alignment step" in h)

        status = json.loads(example.cli("status", RUN, "--json").stdout)
        assert status["waiting_at"] == "06-knowledge"
        report = (example.reports(RUN) / "06-knowledge.md").read_text()
        assert "first write-back" in report and "+  - get_mha/mla_kv_pool_cls gone in 0.5.23" in report
        assert f"+++ b/{LESSON}" in report
        write_back = next(t for h, t in tasks.items() if "the knowledge step" in h)
        assert "get_kv_pool_cls lands on the platform factory" in write_back  # what the run found
        assert ".harness/knowledge/runbook/runbook.yaml" in write_back  # seeded from outside the plugin
        step = json.loads((evidence / "06-knowledge/step.json").read_text())
        assert {c["name"]: c["status"] for c in step["checks"]} == {"knowledge.scope": "passed",
                                                                    "knowledge.files": "passed"}

        example.cli("reject", RUN, "--by", "ana", "--reason", "say which release removed them")
        assert snapshot(example.plugin) == example.before and example.runbook.read_bytes() == runbook_before
        assert not [b for b in repo.branches if b.name == f"harness/{RUN}/knowledge-1" and
                    "approved" in b.commit.message]
        assert "say which release removed them" in llm.requests[-4]["messages"][1]["content"]
        approved = example.cli("approve", RUN, "--by", "ana").stdout

    branch = f"harness/{RUN}/knowledge-2"
    assert "approved by ana" in repo.commit(branch).message
    assert "gone in 0.5.23" in repo.git.show(f"{branch}:platform-map.yaml")
    assert repo.git.show(f"{branch}:{LESSON}").startswith("- 2026-12")
    assert f"platform-map.yaml > {example.plugin}/platform-map.yaml" in approved.replace("\n", "")
    assert json.loads(example.cli("status", RUN, "--json").stdout)["state"] == "finished"
    assert snapshot(example.plugin) == example.before and example.runbook.read_bytes() == runbook_before


def test_without_an_endpoint_the_knowledge_gate_is_skipped_with_its_reason(tmp_path, releases):  # noqa: F811
    example = Example(tmp_path)
    example.cli("run", "--feature", "kv-pool-factory", "--plugin", str(example.plugin), "--upstream", "sglang==0.5.23",
                "--from", "sglang==0.5.17", "--runbook", str(example.runbook), "--run-id", RUN, "--auto-approve")
    status = json.loads(example.cli("status", RUN, "--json").stdout)
    assert status["state"] == "finished"
    knowledge_view = status["steps"][-1]
    assert knowledge_view["slug"] == "06-knowledge" and knowledge_view["gate"]["decision"] == "skip"
    assert knowledge_view["gate_decision"] == "skipped: not run: no LLM endpoint configured"
    assert [e["event"] for e in example.journal(RUN) if e.get("step") == "06-knowledge"][-1] == "skip"
    summary = (example.reports(RUN) / "summary.md").read_text()
    assert "skipped: not run: no LLM endpoint configured" in summary
    for slug in ("01-alignment", "02-interface", "03-operators", "04-accuracy", "05-performance", "06-knowledge"):
        report = (example.reports(RUN) / f"{slug}.md").read_text()
        assert "Not drafted — not run: no LLM endpoint configured." in report, slug
    assert snapshot(example.plugin) == example.before
