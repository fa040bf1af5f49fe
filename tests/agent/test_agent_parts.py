"""The agent's parts on their own: the loop against the scripted endpoint (retries, a refused
key, the token budget), the sandbox of a plugin that is not a git repository, where the
endpoint settings come from, and the re-port tool's port.json as the agent's starting point."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.agent.config import resolve_settings
from harness.agent.loop import run_agent
from harness.agent.sandbox import Sandbox
from harness.agent.tools import Toolbox
from harness.errors import HarnessError
from harness.evidence.runbook import AgentSpec
from harness.knowledge.products.features import FeatureSpec
from harness.knowledge.upstream.source import resolve_upstream
from harness.record.models import AgentSettings
from harness.steps.drafting import agent_context, format_ports
from harness.testing.llm import ScriptedLLM

PORT_JSON = {"ports": [
    {"target": "sglang.srt.managers.scheduler.Scheduler.process_batch", "file": "xdev/hooks.py", "line": 12,
     "hook_type": "REPLACE", "copy_of": "sglang.srt.managers.scheduler.Scheduler.process_batch", "similarity": 0.93,
     "status": "conflict", "merged": False,
     "patch": "@@ -1,2 +1,2 @@\n-    return [r for r in batch]\n+<<<<<<< plugin\n+    return xdev_filter(batch)\n",
     "undefined_names": [{"name": "ReqState", "upstream_import": "from sglang.srt.managers.io_struct import ReqState"}],
     "signature_change": "(self, batch) -> (self, batch, *, overlap=False)"},
    {"target": "sglang.srt.layers.sampler.Sampler.forward", "file": "xdev/hooks.py", "line": 40, "hook_type": "REPLACE",
     "copy_of": "sglang.srt.layers.sampler.Sampler.forward", "similarity": 0.99, "status": "unchanged", "merged": False,
     "patch": "", "undefined_names": [], "signature_change": None},
]}


def plugin_tree(root: Path) -> Path:
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "platform.py").write_text("class P:\n    pass\n")
    return root


def settings(url: str, **budgets) -> AgentSettings:
    return AgentSettings(base_url=url, model="scripted", source="test", max_retries=2, request_timeout_s=10, **budgets)


def toolbox(sandbox: Sandbox) -> Toolbox:
    return Toolbox(sandbox, lambda target, version: f"source of {target} at {version}", lambda: '{"findings": []}')


def test_a_plugin_outside_git_is_copied_and_its_change_is_a_git_diff(tmp_path):
    plugin = plugin_tree(tmp_path / "plugin")
    before = (plugin / "pkg" / "platform.py").read_bytes()
    sandbox = Sandbox.create(plugin, tmp_path / "run" / "sandbox" / "02-interface-1", "r1", "interface", 1)
    script = [{"tool_calls": [{"name": "replace_in_file", "arguments": {
        "path": "pkg/platform.py", "old": "    pass\n", "new": "    kind = 'xdev'\n"}}]},
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "pkg/new.py", "content": "X = 1\n"}}]}]
    with ScriptedLLM(script) as llm:
        outcome = run_agent(settings(llm.base_url), "system", "task", toolbox(sandbox), tmp_path / "t.jsonl")
    assert outcome.status == "finished" and outcome.summary == "script exhausted" and outcome.turns == 3
    patch = sandbox.diff()
    assert "+    kind = 'xdev'" in patch and "+++ b/pkg/new.py" in patch
    assert (plugin / "pkg" / "platform.py").read_bytes() == before and not (plugin / "pkg" / "new.py").exists()
    assert sandbox.record.repo is None and "git -C" in sandbox.merge_hint()
    assert sandbox.commit("approved", patch) is not None
    with pytest.raises(ValueError, match="changed after its patch was approved"):
        Sandbox.create(plugin, tmp_path / "s2", "r1", "interface", 2).commit("approved", patch)


def test_429_and_500_are_retried_and_a_refused_key_is_one_line(tmp_path):
    sandbox = Sandbox.create(plugin_tree(tmp_path / "plugin"), tmp_path / "sb", "r", "interface", 1)
    with ScriptedLLM([{"status": 429}, {"status": 500}]) as llm:
        outcome = run_agent(settings(llm.base_url), "s", "t", toolbox(sandbox), tmp_path / "t.jsonl")
        assert outcome.status == "finished" and len(llm.requests) == 3
    with ScriptedLLM([{"status": 401, "message": "bad key"}]) as llm:
        outcome = run_agent(settings(llm.base_url), "s", "t", toolbox(sandbox), tmp_path / "t.jsonl")
    assert outcome.status == "not_run"
    assert outcome.reason == f"the LLM endpoint {llm.base_url} refused the API key (HTTP 401; the key is read from OPENAI_API_KEY)"
    lines = [json.loads(line) for line in (tmp_path / "t.jsonl").read_text().splitlines()]
    assert [line["type"] for line in lines] == ["request", "error", "end"]


def test_the_token_budget_ends_the_loop_not_finished(tmp_path):
    sandbox = Sandbox.create(plugin_tree(tmp_path / "plugin"), tmp_path / "sb", "r", "interface", 1)
    script = [{"tool_calls": [{"name": "read_file", "arguments": {"path": "pkg/platform.py"}}]}] * 5
    with ScriptedLLM(script) as llm:
        outcome = run_agent(settings(llm.base_url, max_tokens=1), "s", "t", toolbox(sandbox), tmp_path / "t.jsonl")
    assert outcome.status == "not_finished" and outcome.turns == 1
    assert outcome.reason.startswith("token budget (1 tokens) ran out") and outcome.tools == {"read_file": 1}


def test_settings_options_win_over_the_environment_over_the_runbook():
    spec = AgentSpec(base_url="http://runbook/v1", model="runbook-model", max_turns=7)
    env = {"OPENAI_BASE_URL": "http://env/v1", "HARNESS_LLM_MODEL": "env-model"}
    assert resolve_settings(None, None, None, {}) is None
    got = resolve_settings(None, None, spec, {})
    assert (got.base_url, got.model, got.max_turns, got.source) == ("http://runbook/v1", "runbook-model", 7,
                                                                    "runbook agent.base_url, runbook agent.model")
    got = resolve_settings(None, None, spec, env)
    assert (got.base_url, got.model, got.source) == ("http://env/v1", "env-model", "OPENAI_BASE_URL, HARNESS_LLM_MODEL")
    got = resolve_settings("http://opt/v1/", "opt-model", spec, env)
    assert (got.base_url, got.model) == ("http://opt/v1", "opt-model")
    with pytest.raises(HarnessError, match="needs a model"):
        resolve_settings("http://opt/v1", None, None, {})


def test_port_json_is_the_agents_starting_point(tmp_path):
    text = format_ports(PORT_JSON)
    assert "`sglang.srt.managers.scheduler.Scheduler.process_batch` (REPLACE) at xdev/hooks.py:12: conflict" in text
    assert "+<<<<<<< plugin" in text and "resolve it by hand" in text
    assert "needs `ReqState`: from sglang.srt.managers.io_struct import ReqState" in text
    assert "signature change: (self, batch) -> (self, batch, *, overlap=False)" in text
    assert "Sampler.forward` (REPLACE) at xdev/hooks.py:40: unchanged" in text and text.count("```diff") == 1

    root = tmp_path / "up"
    (root / "sglang").mkdir(parents=True)
    (root / "sglang" / "__init__.py").write_text("def f():\n    return 1\n")
    feature = FeatureSpec(id="f", source="feature_file", name="F", symbols=["sglang.f"])
    task = agent_context("interface", feature, "rules", None, resolve_upstream(str(root)), [], port=PORT_JSON,
                         rejection="keep the guard", previous_patch="+x\n")
    assert "## Starting point: the re-port tool's merges and conflicts" in task and "+<<<<<<< plugin" in task
    assert "def f():" in task and "Reviewer's reason: keep the guard" in task and "```diff\n+x\n```" in task


def test_a_plugins_own_skill_overrides_the_shipped_one_and_its_lessons_follow_it(tmp_path):
    from harness.steps.skills import SKILLS_DIR, step_skill

    path, body = step_skill("performance", tmp_path)
    assert path == SKILLS_DIR / "performance" / "SKILL.md" and "candidate optimisations" in body
    own = tmp_path / ".harness" / "skills" / "performance"
    own.mkdir(parents=True)
    (own / "LESSONS.md").write_text("- graph capture first on this device\n")
    path, body = step_skill("performance", tmp_path)
    assert path == SKILLS_DIR / "performance" / "SKILL.md"
    assert body.rstrip().endswith("- graph capture first on this device") and "candidate optimisations" in body
    (own / "SKILL.md").write_text("---\nname: performance\ndescription: ours\n---\n\nOur rules.\n")
    path, body = step_skill("performance", tmp_path)
    assert path == own / "SKILL.md" and body.startswith("\nOur rules.") and "candidate optimisations" not in body
    assert "graph capture first" in body
    (own / "SKILL.md").write_text("no front matter\n")
    with pytest.raises(HarnessError, match=r"SKILL.md:1: a skill starts with front matter"):
        step_skill("performance", tmp_path)
