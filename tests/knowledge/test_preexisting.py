"""Base vs upgrade: `diff`, `features` (and `upgrade`, which runs only `impacted` features) tell a
dependency already broken on --from (`preexisting`, listed apart) from what the upgrade itself
breaks (issue 18 kind 9, what-to-build 5, F34)."""

from __future__ import annotations

import pytest
from kinds_support import plugin, pyproject, upstream_pair
from knowledge_support import by_target, harness_json
from real_releases import real_releases

SAMPLER = "sglang.srt.layers.sampler.Sampler"
TORCHAO = "sglang.srt.layers.torchao_utils.apply_torchao_config_to_model"

HOOKS = """
    from sglang.srt.plugins.hook_registry import HookRegistry, HookType


    def _logprobs(original_fn, self, *args, **kwargs):
        return original_fn(self, *args, **kwargs)


    def _no_torchao(model, torchao_config, filter_fn=None):
        return model


    def register():
        HookRegistry.register("sglang.srt.layers.sampler.Sampler._attach_logprobs_to_output", _logprobs, HookType.AROUND)
        HookRegistry.register("sglang.srt.layers.torchao_utils.apply_torchao_config_to_model", _no_torchao, HookType.REPLACE)
    """


@pytest.fixture(scope="module")
def upstreams(tmp_path_factory):
    # neither version has Sampler._attach_logprobs_to_output; 0.10.0 drops torchao_utils
    return upstream_pair(tmp_path_factory)


def hook_plugin(tmp_path):
    return plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"pre": "pre:register"}), "pre/__init__.py": HOOKS})


def test_diff_marks_what_the_base_already_broke(upstreams, tmp_path):
    old, new = upstreams
    root = hook_plugin(tmp_path)
    _, doc = harness_json("diff", "--from", old, "--to", new, "--plugin", str(root), "--out", str(tmp_path / "diff"))
    findings = by_target(doc["findings"])
    before, upgrade = findings[f"{SAMPLER}._attach_logprobs_to_output"], findings[TORCHAO]
    assert before["status"] == upgrade["status"] == "missing"
    assert before["preexisting"] is True and "already missing" in before["detail"] and old in before["detail"]
    assert upgrade["preexisting"] is False
    report = (tmp_path / "diff" / "feature-diff.md").read_text()
    impact, apart = report.split("## Already broken before the upgrade")
    assert "torchao_utils" in impact.split("## Migration checklist")[0] and "_attach_logprobs_to_output" not in impact
    assert "_attach_logprobs_to_output" in apart.split("## Migration checklist")[0]


def test_features_list_preexisting_apart_and_last(upstreams, tmp_path):
    old, new = upstreams
    root = hook_plugin(tmp_path)
    code, rows = harness_json("features", "--from", old, "--to", new, "--plugin", str(root), cwd=tmp_path)
    assert code == 0, rows
    mine = [r for r in rows if r["source"] == "feature_diff" and r["kind"] in ("impacted", "preexisting")]
    kinds = [(r["kind"], r["status"], r["targets"]) for r in mine]
    assert kinds[0][0] == "impacted" and kinds[0][1] == "breaking" and TORCHAO in kinds[0][2], kinds
    pre = [k for k in kinds if k[0] == "preexisting"]
    assert pre and pre[0][1] == "preexisting" and f"{SAMPLER}._attach_logprobs_to_output" in pre[0][2], kinds
    assert [r["kind"] for r in rows if r["source"] == "feature_diff"][-1] == "preexisting"
    assert "already broken before the upgrade" in next(r for r in mine if r["kind"] == "preexisting")["detail"]


@pytest.mark.network
@pytest.mark.slow
def test_real_release_sampler_hook_preexisting_torchao_broken_by_upgrade(tmp_path):
    # 0.5.11 sglang/srt/layers/sampler.py:319 Sampler._attach_logprobs_to_output; gone in 0.5.17 and 0.5.23.
    # 0.5.17 sglang/srt/layers/torchao_utils.py:32 apply_torchao_config_to_model; the module is gone in 0.5.23.
    real_releases("sglang==0.5.17", "sglang==0.5.23")
    root = hook_plugin(tmp_path)
    _, doc = harness_json("diff", "--from", "sglang==0.5.17", "--to", "sglang==0.5.23", "--plugin", str(root), "--out", str(tmp_path / "diff"))
    findings = by_target(doc["findings"])
    assert findings[f"{SAMPLER}._attach_logprobs_to_output"]["preexisting"] is True
    assert findings[TORCHAO]["preexisting"] is False and findings[TORCHAO]["breaking"] is True
