"""The porting agent end to end, through the CLI: the built-in example plugin (a git checkout of
it, standing for the engineer's), the real 0.5.17 → 0.5.23 releases, the `kv-pool-factory`
feature, the loopback engine for the smoke test, and a scripted OpenAI-compatible endpoint on
loopback that the real `openai` client talks to. After every test the engineer's checkout is
byte-for-byte what it was."""

from __future__ import annotations

import json
import shutil
import socket
from pathlib import Path

import git
import pytest
import yaml
from agent_scripts import escapes, kv_port, wander, write_up
from real_releases import real_releases
from workflow_support import REPO_ROOT, Project, loopback_runbook

from harness.testing.llm import ScriptedLLM

EXAMPLE = REPO_ROOT / "harness" / "examples" / "workspace"
INTERFACE = "sglang.srt.platforms.interface.SRTPlatform"
RUN = "agent"


@pytest.fixture(scope="module")
def releases():
    return real_releases("sglang==0.5.17", "sglang==0.5.23")


class Example(Project):
    """The built-in example's plugin as the engineer's own git checkout, its feature, and a
    loopback runbook; upstreams are the real releases from the wheel cache."""

    def __init__(self, root: Path, agent: dict | None = None):
        super().__init__(root)
        self.plugin = root / "xdev-plugin"
        shutil.copytree(EXAMPLE / "plugin", self.plugin, ignore=shutil.ignore_patterns("__pycache__"))
        self.outside = root / "outside"
        self.outside.mkdir()
        (self.plugin / "outside").symlink_to(self.outside)  # a symlink in the repo that leads out
        repo = git.Repo.init(self.plugin)
        repo.git.add("-A")
        repo.git.commit("-m", "xdev plugin 0.3.0", env={"GIT_AUTHOR_NAME": "eng", "GIT_AUTHOR_EMAIL": "e@x",
                                                          "GIT_COMMITTER_NAME": "eng", "GIT_COMMITTER_EMAIL": "e@x"})
        shutil.copy(EXAMPLE / "features" / "kv-pool-factory.yaml", self.workspace / "features")
        data = yaml.safe_load(loopback_runbook(root / "runbook.yaml").read_text())
        data["agent"] = {"max_retries": 0, "request_timeout_s": 30, **(agent or {})}
        self.runbook.write_text(yaml.safe_dump(data))
        self.before = snapshot(self.plugin)

    def start(self, base_url: str) -> str:
        proc = self.cli("run", "--feature", "kv-pool-factory", "--plugin", str(self.plugin), "--upstream",
                        "sglang==0.5.23", "--from", "sglang==0.5.17", "--runbook", str(self.runbook), "--run-id", RUN,
                        "--llm-base-url", base_url, "--llm-model", "scripted")
        self.cli("approve", RUN, "--by", "ana")  # alignment: the interface step (and its agent) runs next
        return proc.stdout

    def interface(self) -> dict:
        return json.loads((self.reports(RUN) / "evidence" / "02-interface" / "step.json").read_text())

    def transcript(self) -> list[dict]:
        path = self.reports(RUN) / "evidence" / "02-interface" / "agent" / "transcript.jsonl"
        return [json.loads(line) for line in path.read_text().splitlines()]


def snapshot(plugin: Path) -> dict:
    """Every file of the checkout (bytes, symlink targets) with its HEAD and git status."""
    files = {}
    for path in sorted(plugin.rglob("*")):
        if ".git" in path.relative_to(plugin).parts:
            continue
        rel = path.relative_to(plugin).as_posix()
        files[rel] = f"-> {path.readlink()}" if path.is_symlink() else path.read_bytes() if path.is_file() else "dir"
    repo = git.Repo(plugin)
    return {"files": files, "head": repo.head.commit.hexsha, "branch": repo.active_branch.name,
            "status": repo.git.status("--porcelain")}


def checks(step: dict) -> dict[str, dict]:
    return {c["name"]: c for c in step["checks"]}


def test_the_agent_ports_kv_pool_factory_a_reject_reaches_attempt_2_and_approval_commits_it(tmp_path, releases):
    example = Example(tmp_path)
    with ScriptedLLM(write_up("landing points") + kv_port("first try") + kv_port("second try, docstring kept")) as llm:
        out = example.start(llm.base_url)
        assert f"LLM: model scripted at {llm.base_url} (from --llm-base-url, --llm-model)" in out

        alignment = json.loads((example.reports(RUN) / "evidence" / "01-alignment" / "step.json").read_text())
        assert alignment["draft"]["status"] == "drafted" and alignment["draft"]["summary"] == "landing points"
        step = example.interface()
        by_name = checks(step)
        assert by_name["interface.override_signatures"]["status"] == "passed", by_name
        assert by_name["smoke.responses"]["status"] == "passed"
        findings = {f["target"]: f for f in json.loads(
            (example.reports(RUN) / "evidence/02-interface/static_findings.json").read_text()) if f["kind"] == "override"}
        assert findings[f"{INTERFACE}.get_kv_pool_cls"]["status"] == "ok"
        assert f"{INTERFACE}.get_mha_kv_pool_cls" not in findings
        draft = step["draft"]
        assert draft["status"] == "drafted" and draft["summary"] == "first try"
        assert draft["turns"] == 10 and draft["tokens"] > 0 and draft["refusals"] == []
        assert draft["tools"]["replace_in_file"] == 4 and draft["tools"]["run_check"] == 1
        assert draft["branch"] == f"harness/{RUN}/interface-1"
        patch = (example.reports(RUN) / "evidence/02-interface/agent/patch.diff").read_text()
        assert "+    def get_kv_pool_cls(self, *, kind: KVPoolKind) -> type | None:" in patch
        assert "-    def get_mla_kv_pool_cls(self) -> type:" in patch

        # the real protocol: tools offered, the targeted context first, every tool result returned
        first = llm.requests[1]  # [0]: the alignment write-up
        assert first["model"] == "scripted" and {t["function"]["name"] for t in first["tools"]} >= {
            "read_file", "search", "upstream_source", "replace_in_file", "write_file", "run_check", "finish"}
        task = first["messages"][1]["content"]
        assert "get_kv_pool_cls(self, *, kind: KVPoolKind)" in task and "sglang_xdev/platform.py:44" in task
        assert "Port an override whose base method was renamed" in task  # the interface skill
        run_check = next(json.loads(m["content"]) for m in llm.requests[10]["messages"] if m.get("tool_call_id") == "call_10_0")
        assert not any(f["target"].endswith("kv_pool_cls") for f in run_check["findings"])

        transcript = example.transcript()
        assert [line["type"] for line in transcript].count("request") == 10
        assert transcript[-1]["type"] == "end" and transcript[-1]["status"] == "finished"
        assert all("elapsed_s" in line for line in transcript if line["type"] in ("response", "tool"))
        report = (example.reports(RUN) / "02-interface.md").read_text()
        assert "first try" in report and "```diff" in report and "| turns | 10 |" in report
        assert "[agent/transcript.jsonl](evidence/02-interface/agent/transcript.jsonl)" in report
        assert snapshot(example.plugin) == example.before

        example.cli("reject", RUN, "--by", "ana", "--reason", "keep the docstring of get_kv_pool_cls")
        second = llm.requests[11]["messages"][1]["content"]
        assert "keep the docstring of get_kv_pool_cls" in second
        assert "+    def get_kv_pool_cls(self, *, kind: KVPoolKind) -> type | None:" in second  # the previous patch
        assert example.interface()["attempt"] == 2 and example.interface()["draft"]["summary"] == "second try, docstring kept"

    # the example plugin's other breakages still fail the step: approving it takes a note
    approved = example.cli("approve", RUN, "--by", "ana", "--override", "--note", "the port is what this gate decides").stdout
    branch = f"harness/{RUN}/interface-2"
    assert f"merge it with: git -C {example.plugin} merge {branch}" in approved
    repo = git.Repo(example.plugin)
    assert "def get_kv_pool_cls" in repo.git.show(f"{branch}:sglang_xdev/platform.py")
    assert "approved by ana" in repo.commit(branch).message
    assert snapshot(example.plugin) == example.before


def test_paths_outside_the_worktree_are_refused_and_bad_calls_are_answered(tmp_path, releases):
    example = Example(tmp_path)
    with ScriptedLLM(write_up("landing points") + escapes()) as llm:
        example.start(llm.base_url)
    draft = example.interface()["draft"]
    assert draft["status"] == "drafted"
    assert len(draft["refusals"]) == 4 and all("refused: outside the worktree" in r for r in draft["refusals"])
    results = [line["result"] for line in example.transcript() if line["type"] == "tool"]
    assert sum(r.startswith("refused: outside the worktree") for r in results) == 4
    assert any("arguments are not valid JSON" in r for r in results)
    assert any("unknown tool 'shell'" in r for r in results)
    assert any("`old` occurs 0 times" in r for r in results)
    hostname = Path("/etc/hostname")
    if hostname.is_file() and hostname.read_text().strip():
        assert hostname.read_text().strip() not in json.dumps(example.transcript())
    assert not (tmp_path / "x").exists() and list(example.outside.iterdir()) == []
    assert not (example.reports(RUN).parent / "x").exists()
    report = (example.reports(RUN) / "02-interface.md").read_text()
    assert "| refusals | 4 |" in report and "Refused tool calls:" in report
    assert snapshot(example.plugin) == example.before


def test_a_two_turn_budget_ends_not_finished_with_everything_kept(tmp_path, releases):
    example = Example(tmp_path, agent={"max_turns": 2})
    with ScriptedLLM(write_up("landing points") + wander(5)) as llm:
        example.start(llm.base_url)
        assert len(llm.requests) == 3  # the alignment write-up, then two turns
    step = example.interface()
    assert step["draft"]["status"] == "not_finished"
    assert step["draft"]["reason"] == "turn budget (2 turns) ran out"
    assert checks(step)["smoke.responses"]["status"] == "passed"
    assert example.transcript()[-1]["status"] == "not_finished"
    assert "**Not finished: turn budget (2 turns) ran out.**" in (example.reports(RUN) / "02-interface.md").read_text()
    assert snapshot(example.plugin) == example.before


def test_an_unreachable_endpoint_is_one_line_in_the_draft_and_the_checks_still_run(tmp_path, releases):
    example = Example(tmp_path)
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
    example.start(url)
    step = example.interface()
    assert step["draft"]["status"] == "not_run"
    assert step["draft"]["reason"].startswith(f"cannot reach the LLM endpoint {url}")
    by_name = checks(step)
    # the unported plugin, checked as before: the feature's overrides fit (deprecated, still called); the two
    # capability overrides 0.5.23 dropped are another feature's, counted in the reason, not failing this one
    overrides = by_name["interface.override_signatures"]
    assert overrides["status"] == "passed" and "other live overrides of the plugin lie outside this feature (2 breaking" in overrides["reason"]
    assert by_name["smoke.responses"]["status"] == "passed"
    assert f"Not drafted — not run: cannot reach the LLM endpoint {url}" in (example.reports(RUN) / "02-interface.md").read_text()
    assert snapshot(example.plugin) == example.before
