"""The three ways to name a feature, and `harness features` listing candidates by risk."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest
from workflow_support import upstream_files, write_tree


def test_features_groups_what_the_plugin_ports_ranked_by_risk(project):
    proc = project.cli("features", "--from", str(project.old), "--to", str(project.new),
                       "--plugin", str(project.plugin), "--json")
    rows = json.loads(proc.stdout)
    ranked = [r["risk"] for r in rows if r["risk"] is not None]
    assert ranked == sorted(ranked, reverse=True)
    # the removed factory and its successor are one feature, named after the change behind it
    top = rows[0]
    assert (top["id"], top["kind"], top["status"]) == ("get-kv-pool-cls", "impacted", "breaking")
    assert top["targets"] == ["sglang.srt.platforms.interface.SRTPlatform.get_kv_pool_cls",
                              "sglang.srt.platforms.interface.SRTPlatform.get_mha_kv_pool_cls"]
    assert top["where"] == "xdev_plugin/platform.py:7"
    assert top["detail"].startswith("breaks the plugin: its override at xdev_plugin/platform.py:7")
    hook = next(r for r in rows if "sglang.srt.managers.scheduler.Scheduler.process_batch" in r["targets"])
    assert hook["kind"] == "impacted" and "still fits" in hook["detail"]
    assert {"id": "kv-pool", "source": "feature_file"}.items() <= next(r for r in rows if r["id"] == "kv-pool").items()
    # the grouped feature runs like any other
    project.cli("run", "--feature", "get-kv-pool-cls", "--plugin", str(project.plugin), "--upstream", str(project.new),
                "--from", str(project.old), "--runbook", str(project.runbook), "--run-id", "grouped")
    feature = project.status("grouped")["inputs"]["feature"]
    # titled old → new (issue 19: one feature per upstream change, never "X replaces X")
    assert feature["name"] == "SRTPlatform.get_mha_kv_pool_cls → SRTPlatform.get_kv_pool_cls"
    assert feature["symbols"] == top["targets"]
    # --flat: one row per symbol, as before
    flat = json.loads(project.cli("features", "--from", str(project.old), "--to", str(project.new),
                                  "--plugin", str(project.plugin), "--flat", "--json").stdout)
    assert flat[0]["id"] == "sglang.srt.platforms.interface.SRTPlatform.get_mha_kv_pool_cls"
    assert flat[0]["status"] == "not_on_base"
    table = project.cli("features", "--from", str(project.old), "--to", str(project.new), "--flat").stdout
    assert "Scheduler.process_batch" in table


def test_feature_diff_entry_lands_on_the_plugin_hook(project):
    symbol = "sglang.srt.managers.scheduler.Scheduler.process_batch"
    args = project.run_args("--run-id", "hook")
    args[args.index("kv-pool")] = symbol
    project.cli(*args)
    status = project.status("hook")
    assert status["inputs"]["feature"]["source"] == "feature_diff"
    checks = {c["name"]: c for c in status["steps"][0]["checks"]}
    assert checks["alignment.symbols_located"]["status"] == "passed"
    assert checks["alignment.landing_point"]["status"] == "passed"
    landing = json.loads((project.reports("hook") / "evidence/01-alignment/landing.json").read_text())
    assert landing["confidence"] == "high"
    [point] = landing["points"]
    assert (point["landing"], point["hook_type"], point["file"]) == ("hook", "AROUND", "xdev_plugin/hooks.py")
    assert point["status"] == "signature_changed" and point["port_needed"]
    hunks = (project.reports("hook") / "evidence/01-alignment/hunks.diff").read_text()
    assert "+    def process_batch(self, batch, *, overlap: bool = False):" in hunks


def test_feature_file_with_a_removed_symbol_needs_its_successor(project):
    project.cli(*project.run_args("--run-id", "kv"))
    landing = json.loads((project.reports("kv") / "evidence/01-alignment/landing.json").read_text())
    old_factory = next(p for p in landing["points"] if p["target"].endswith("get_mha_kv_pool_cls"))
    assert old_factory["landing"] == "platform factory method"
    assert old_factory["successor"] == "sglang.srt.platforms.interface.SRTPlatform.get_kv_pool_cls"
    checks = {c["name"]: c for c in project.status("kv")["steps"][0]["checks"]}
    assert checks["alignment.symbols_located"]["status"] == "passed"
    assert "removed since" in checks["alignment.symbols_located"]["reason"]
    assert checks["alignment.landing_point"]["status"] == "passed"
    assert "port to `sglang.srt.platforms.interface.SRTPlatform.get_kv_pool_cls`" in (
        project.reports("kv") / "01-alignment.md"
    ).read_text()


def test_commit_range_on_a_git_upstream(project):
    repo = project.root / "sglang-repo"
    write_tree(repo, upstream_files(new=False))

    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                       env={**project.env, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@x",
                            "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@x"})

    git("init", "-q")
    git("add", ".")
    git("commit", "-q", "-m", "release 1")
    git("tag", "v1")
    shutil.copy(project.new / "sglang/srt/managers/scheduler.py", repo / "sglang/srt/managers/scheduler.py")
    git("commit", "-q", "-am", "scheduler: overlap flag")
    git("tag", "v2")

    args = project.run_args("--run-id", "range")
    args[args.index("kv-pool")] = "v1..v2"
    args[args.index(str(project.new))] = f"{repo}@v2"
    args[args.index(str(project.old))] = f"{repo}@v1"
    project.cli(*args)
    feature = project.status("range")["inputs"]["feature"]
    assert feature["source"] == "commit_range"
    assert feature["paths"] == ["sglang/srt/managers/scheduler.py"]
    assert "scheduler: overlap flag" in feature["description"]
    landing = json.loads((project.reports("range") / "evidence/01-alignment/landing.json").read_text())
    assert [p["target"] for p in landing["points"]] == ["sglang.srt.managers.scheduler.Scheduler.process_batch"]

    # a commit range needs a git upstream
    args = project.run_args("--run-id", "range2")
    args[args.index("kv-pool")] = "v1..v2"
    bad = project.cli(*args, check=False)
    assert bad.returncode == 2 and "is not a git source" in bad.stderr


def test_example_feature_files_load_and_bad_ones_say_what_is_wrong(tmp_path):
    from harness.cli.common import DEFAULT_FEATURE, EXAMPLE_WORKSPACE
    from harness.errors import HarnessError
    from harness.knowledge.products.features import feature_files, load_feature_file

    examples = feature_files([EXAMPLE_WORKSPACE / "features"])
    assert DEFAULT_FEATURE in examples
    for feature_id, path in examples.items():
        spec = load_feature_file(path, feature_id)
        assert spec.symbols and spec.models and spec.description

    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nupstream:\n  symbol: [a.b]\n")
    with pytest.raises(HarnessError, match=r"bad.yaml:3: upstream.symbol: Extra inputs are not permitted"):
        load_feature_file(bad)
    bad.write_text("name: x\ndescription: nothing named\n")
    with pytest.raises(HarnessError, match="name upstream.symbols, upstream.paths or commits"):
        load_feature_file(bad)
