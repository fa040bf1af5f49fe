"""`harness upgrade`: the CI bot's command, on the real releases 0.5.17 → 0.5.23 with the
built-in example plugin, and its inputs (--from auto, --to latest) on small fixtures."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from loopback_cli import pip_env, simple_index
from real_releases import real_releases
from workflow_support import REPO_ROOT, one_line_error

from harness.testing.llm import ScriptedLLM

EXAMPLE_PLUGIN = REPO_ROOT / "harness" / "examples" / "workspace" / "plugin"


def _harness(args: list[str], env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness", *args], capture_output=True, text=True, env=env,
                          timeout=600, check=False)


@pytest.mark.network
@pytest.mark.slow
def test_upgrade_of_the_example_plugin_on_real_releases(tmp_path):
    real_releases("sglang==0.5.17", "sglang==0.5.23")  # from the wheel cache or the index
    workspace = tmp_path / "ws"
    workspace.mkdir()
    step_summary = tmp_path / "step-summary.md"
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "GITHUB_STEP_SUMMARY": str(step_summary), "COLUMNS": "200"}
    env.pop("HARNESS_STATE_URL", None)
    args = ["upgrade", "--plugin", str(EXAMPLE_PLUGIN), "--to", "sglang==0.5.23", "--workspace", str(workspace)]
    first = _harness([*args, "--json", "--github-summary"], env)
    assert first.returncode == 1, first.stderr  # impacted features wait for review
    doc = json.loads(first.stdout)
    assert (doc["from_spec"], doc["to_spec"]) == ("sglang==0.5.17", "sglang==0.5.23")  # --from auto: sglang>=0.5.17
    features = {f["id"]: f for f in doc["features"]}
    # the breakages of the real 0.5.23, each one feature grouped by the change behind it
    threads = features["init-threads-binding"]
    assert threads["breaking"] and threads["risk"] == 90
    assert "sglang.srt.utils.numa_utils.init_threads_binding" in threads["targets"]
    kv = features["get-kv-pool-cls"]
    assert not kv["breaking"] and "legacy shim" in kv["why"]
    assert {"sglang.srt.platforms.interface.SRTPlatform.get_mha_kv_pool_cls",
            "sglang.srt.platforms.interface.SRTPlatform.get_mla_kv_pool_cls"} <= set(kv["targets"])
    assert features["srtplatform-support-cuda-graph-supports-fp8"]["breaking"]
    # the legacy graph runner's hook target was already gone on 0.5.17: not the upgrade's doing
    # (preexisting), so no feature to review and no run, but listed apart — in upgrade.json, the
    # summary and the CLI output — never silently dropped
    assert doc["dead"] == [] and "cudagraphrunner-can-run" not in features
    # ranked by when the plugin fails (issue 19): the hook ModelRunner.__init__ no longer calls first
    assert doc["features"][0]["id"] == "init-threads-binding" and doc["features"][0]["fails_at"] == "startup"
    (can_run,) = doc["preexisting"]
    assert (can_run["id"], can_run["kind"], can_run["state"], can_run["run_id"]) == ("cudagraphrunner-can-run", "preexisting", "not_run", None)
    assert doc["totals"]["preexisting"] == 1
    assert len(features) <= doc["runs"] == 10  # the default --runs: every feature here gets its run
    for feature in doc["features"]:  # one run each, at its first gate
        assert feature["state"] == "waiting" and list(feature["verdicts"]) == ["01-alignment"]
        assert (workspace / "reports" / feature["run_id"] / "01-alignment.md").is_file()
        note = ' --override --note "..."' if feature["verdicts"]["01-alignment"] == "failed" else ""  # approve demands both
        assert feature["approve"] == f"harness approve {feature['run_id']} --by YOUR_NAME --workspace {workspace}{note}"
    assert "diffing sglang==0.5.17 → sglang==0.5.23" in first.stderr
    for index, feature in enumerate(doc["features"], 1):  # one progress line each, never twice
        assert first.stderr.count(f"feature {index}/{len(features)}: {feature['id']}\n") == 1

    # summary.md: one screen — counts first, then blockers, paths, warnings; the rest in details.md
    folder = workspace / "reports/upgrade-0.5.17-to-0.5.23"
    summary = (folder / "summary.md").read_text()
    lines = summary.splitlines()
    assert lines[0] == "# SGLang upgrade sglang==0.5.17 → sglang==0.5.23"
    assert lines[2].startswith(f"**{len(features)} feature(s) to review: ")
    assert len(lines) < 80
    # where --from auto read the release, and release wheels carry no history (said once, with how to get commits named)
    assert "; it declares sglang==0.5.17 in `pyproject.toml:10`, which `--from auto` read)" in summary
    assert "Note: no upstream commit named: release wheels carry no history; give --from/--to as PATH@REF" in summary
    sections = [line for line in lines if line.startswith("## ")]
    assert sections[0] == "## Blockers: the plugin fails at import or engine start"
    assert sections[-1] == "## Already broken on sglang==0.5.17 (not this upgrade's doing; no run)"
    assert summary.index(f"`{threads['id']}`") < summary.index("## Warnings") < summary.index(f"`{kv['id']}`")
    assert f"[{threads['run_id']}](../{threads['run_id']}/summary.md)" in summary
    assert f"`{kv['approve']}`" in summary and "[details.md](details.md)" in summary
    details = (folder / "details.md").read_text()
    assert "## Migration checklist" in details
    assert "- [ ] `sglang.srt.platforms.interface.SRTPlatform.support_cuda_graph`" in details
    assert f"- features: {len(features)}" in details and "`cudagraphrunner-can-run`" in details
    # the job summary is issue.md: the same account without relative links (they do not resolve there)
    issue = (folder / "issue.md").read_text()
    assert step_summary.read_text() == issue and "](" not in issue
    assert f"run `{threads['run_id']}`" in issue and "`reports/upgrade-0.5.17-to-0.5.23/details.md`" in issue

    # rerun on the same plugin content and target: the same runs, reused, and it says so
    runs = sorted(p.name for p in (workspace / ".harness/runs").iterdir())
    again = _harness(args, env)
    assert again.returncode == 1, again.stderr
    assert sorted(p.name for p in (workspace / ".harness/runs").iterdir()) == runs
    assert again.stdout.count("reused the existing run (same plugin content and target)") == len(features)
    assert "cudagraphrunner-can-run: already missing before the upgrade, only in a dead module" in again.stdout
    assert "(already broken on sglang==0.5.17: no run)" in again.stdout
    assert f"run {threads['run_id']}: waiting (01-alignment " in again.stdout

    # --through interface with an agent: each run goes on to the interface draft and waits at its gate;
    # the alignment gate is passed in the bot's name. Without an agent, it says so.
    (tmp_path / "ws-bare").mkdir(), (tmp_path / "ws-agent").mkdir()
    bare = _harness([*args, "--through", "interface", "--workspace", str(tmp_path / "ws-bare")], env)
    assert "interface: not run: no LLM endpoint configured" in bare.stdout, bare.stderr
    with ScriptedLLM([]) as llm:  # every request: finish("script exhausted")
        drafted = _harness([*args, "--through", "interface", "--workspace", str(tmp_path / "ws-agent"), "--json",
                            "--llm-base-url", llm.base_url, "--llm-model", "scripted"], env)
    assert drafted.returncode == 1, drafted.stderr
    assert "LLM: model scripted at " + llm.base_url in drafted.stderr
    drafted_features = json.loads(drafted.stdout)["features"]
    assert len(drafted_features) == len(features)
    assert len(llm.requests) == 2 * len(features)  # per feature: the alignment write-up, the interface draft
    for feature in drafted_features:
        assert list(feature["verdicts"]) == ["01-alignment", "02-interface"] and feature["state"] == "waiting"
        journal = (tmp_path / "ws-agent" / ".harness/runs" / feature["run_id"] / "journal.jsonl").read_text()
        assert '"by": "harness upgrade --through interface"' in journal


def _declaring(tmp_path: Path, files: dict[str, str]) -> Path:
    plugin = tmp_path / "declaring-plugin"
    shutil.copytree(EXAMPLE_PLUGIN, plugin, ignore=shutil.ignore_patterns("__pycache__"))
    pyproject = plugin / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace('dependencies = ["sglang>=0.5.17"]', "dependencies = []"))
    for name, text in files.items():
        (plugin / name).write_text(text)
    return plugin


@pytest.mark.parametrize("files, expected", [
    ({"requirements.txt": "torch\nsglang==0.5.19  # the pin\n"}, "sglang==0.5.19"),
    ({"setup.cfg": "[options]\ninstall_requires =\n    sglang>=0.5.11,<0.6\n"}, "sglang==0.5.11"),
    ({"requirements-dev.txt": "sglang[srt]~=0.5.17\n"}, "sglang==0.5.17"),
])
def test_from_auto_reads_pins_and_ranges(tmp_path, files, expected):
    from harness.workflow.upgrade import from_spec_of

    assert from_spec_of(_declaring(tmp_path, files), "auto")[0] == expected


def test_from_auto_without_a_declared_sglang_is_one_line(project):
    proc = project.cli("upgrade", "--plugin", str(project.plugin), "--to", "sglang==0.5.23", check=False)
    assert proc.returncode == 2
    one_line_error(proc, "cannot tell which SGLang the plugin targets; pass --from")


def _pip_env(monkeypatch, index: str) -> None:
    for key, value in pip_env(index).items():
        monkeypatch.setenv(key, value)


def test_to_latest_asks_the_configured_index(project, monkeypatch):
    with simple_index("sglang", ("sglang-0.5.17-py3-none-any.whl", "sglang-0.5.23-py3-none-any.whl", "sglang-0.6.0rc1-py3-none-any.whl")) as index:
        _pip_env(monkeypatch, index)
        plugin = _declaring(project.root, {"requirements.txt": "sglang==0.5.23\n"})
        proc = project.cli("upgrade", "--plugin", str(plugin), "--json", check=False)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    # the newest final release (0.6.0rc1 is a pre-release) is what the plugin declares: up to date
    assert (doc["outcome"], doc["to_spec"], doc["features"]) == ("up_to_date", "sglang==0.5.23", [])


def test_to_latest_with_the_index_unreachable_is_one_line(project, monkeypatch):
    _pip_env(monkeypatch, "http://127.0.0.1:9/simple")  # nothing listens there
    proc = project.cli("upgrade", "--plugin", str(EXAMPLE_PLUGIN), check=False)
    assert proc.returncode == 2
    one_line_error(proc, "cannot reach the package index (http://127.0.0.1:9/simple)", "pass --to sglang==X")
    assert not (project.workspace / ".harness").exists() and not (project.workspace / "reports").exists()


def _bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


@pytest.mark.network
@pytest.mark.slow
def test_runs_beyond_the_top_n_start_on_demand(tmp_path):
    """--runs N starts the first N features' runs (triage order, blockers first) and lists each
    other feature with the one command that starts its run; that command starts exactly the run
    a larger --runs would have, and a rerun reports every run that exists, starting none."""
    real_releases("sglang==0.5.17", "sglang==0.5.23")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "COLUMNS": "200"}
    env.pop("HARNESS_STATE_URL", None)
    args = ["upgrade", "--plugin", str(EXAMPLE_PLUGIN), "--to", "sglang==0.5.23", "--workspace", str(workspace)]
    first = _harness([*args, "--runs", "2", "--json"], env)
    assert first.returncode == 1, first.stderr
    doc = json.loads(first.stdout)
    top, rest = doc["features"][:2], doc["features"][2:]
    assert rest and all(f["run_id"] for f in top) and not any(f["run_id"] for f in rest)
    assert "feature 2/2: " in first.stderr and "feature 3/" not in first.stderr
    assert doc["totals"]["runs"] == 2 and doc["totals"]["not_started"] == len(rest)
    summary = (workspace / "reports/upgrade-0.5.17-to-0.5.23/summary.md").read_text()
    for feature in rest:
        assert feature["state"] == "not_started" and f"no run yet: `{feature['start']}`" in summary
    assert sorted(p.name for p in (workspace / ".harness/runs").iterdir()) == sorted(f["run_id"] for f in top)

    # the listed command starts that feature's run, and only it
    command = shlex.split(rest[0]["start"])
    assert command[:2] == ["harness", "upgrade"] and command[-2:] == ["--feature", rest[0]["id"]]
    one = _harness([*command[1:], "--json"], env)
    assert one.returncode == 1, one.stderr
    started = {f["id"]: f for f in json.loads(one.stdout)["features"] if f["run_id"]}
    assert set(started) == {top[0]["id"], top[1]["id"], rest[0]["id"]}
    assert started[rest[0]["id"]]["state"] == "waiting" and not started[rest[0]["id"]]["reused"]
    assert all(started[f["id"]]["reused"] for f in top)
    runs = sorted(p.name for p in (workspace / ".harness/runs").iterdir())
    assert len(runs) == 3
    # a run to its first gate writes well under 1 MB (about 50 KB on the example)
    for run_id in runs:
        assert _bytes(workspace / "reports" / run_id) + _bytes(workspace / ".harness/runs" / run_id) < 256 * 1024

    # rerun with --runs 2: every existing run is reported, none is started
    again = _harness([*args, "--runs", "2", "--json"], env)
    assert again.returncode == 1, again.stderr
    assert sorted(f["run_id"] for f in json.loads(again.stdout)["features"] if f["run_id"]) == runs
    assert sorted(p.name for p in (workspace / ".harness/runs").iterdir()) == runs

    # bad input: one error line (after the progress lines of the diff that tells), nothing started
    for extra, error in ((["--feature", "no-such-feature"], "--feature no-such-feature: not a feature of this upgrade"),
                         (["--feature", "cudagraphrunner-can-run"], "--feature cudagraphrunner-can-run: has no review run to start (already broken"),
                         (["--runs", "-1"], "--runs -1: give 0 or more review runs to start")):
        bad = _harness([*args, *extra], env)
        assert bad.returncode == 2 and "Traceback" not in bad.stderr, bad.stderr
        assert bad.stderr.strip().splitlines()[-1].startswith(f"harness: error: {error}"), bad.stderr
    assert sorted(p.name for p in (workspace / ".harness/runs").iterdir()) == runs
