"""Model-architecture strings: a plugin model registered under an architecture upstream rewrites to
or lists (or plugin code testing / adding one) depends on upstream still saying it. When a release
stops rewriting to it or drops it from a table that still exists, the model is silently not chosen
or loses that code path: `missing`, high risk, not breaking (the plugin still loads). An
architecture upstream never names is the plugin's own: no finding (issue 18 kind 11,
what-to-build 6)."""

from __future__ import annotations

import pytest
from kinds_support import check, plugin, pyproject, upstream_pair
from knowledge_support import by_target, harness_json
from real_releases import real_releases

MODELS = "sglang.srt.models.registry.ModelRegistry.models"
TABLE = "sglang.srt.configs.model_config.multimodal_model_archs"

REGISTRY = """
    class _ModelRegistry:
        models = {}

    ModelRegistry = _ModelRegistry()
    """
CONFIG_OLD = """
    class ModelConfig:
        def _config_draft_model(self):
            if self.is_draft_model and self.hf_config.architectures[0] in ["AcmeMoeForCausalLM", "AcmeMoeLiteForCausalLM"]:
                self.hf_config.architectures[0] = "AcmeMoeForCausalLMNextN"
            if self.is_draft_model and self.hf_config.architectures[0] == "OldDraftForCausalLM":
                self.hf_config.architectures[0] = "OldDraftForCausalLMMTP"


    multimodal_model_archs = ["AcmeVLForConditionalGeneration", "LegacyVLForConditionalGeneration"]


    def is_hybrid_swa_model(model_architectures):
        hybrid_swa_archs = {"SinkForCausalLM"}
        return any(a in hybrid_swa_archs for a in model_architectures)


    # gone as a whole in the newer release (refactored away): losing it says nothing about one entry
    LEGACY_MODEL_ARCHS = ("SinkForCausalLM",)
    """
# the newer release: AcmeMoeLite drafts get their own NextN class, the OldDraft rewrite is gone,
# LegacyVL left the multimodal list, and SinkForCausalLM moved into a table spliced into the set
# (still listed: no finding)
CONFIG_NEW = """
    SWA_SINK_ARCHS = frozenset({"SinkForCausalLM"})


    class ModelConfig:
        def _config_draft_model(self):
            if self.is_draft_model and self.hf_config.architectures[0] in ["AcmeMoeForCausalLM"]:
                self.hf_config.architectures[0] = "AcmeMoeForCausalLMNextN"
            if self.is_draft_model and self.hf_config.architectures[0] == "AcmeMoeLiteForCausalLM":
                self.hf_config.architectures[0] = "AcmeMoeLiteForCausalLMNextN"


    multimodal_model_archs = ["AcmeVLForConditionalGeneration"]


    def is_hybrid_swa_model(model_architectures):
        hybrid_swa_archs = {*SWA_SINK_ARCHS, "Gemma4ForCausalLM"}
        return any(a in hybrid_swa_archs for a in model_architectures)
    """


def _files(config: str) -> dict[str, str]:
    return {"sglang/srt/configs/__init__.py": "", "sglang/srt/configs/model_config.py": config,
            "sglang/srt/models/registry.py": REGISTRY}


@pytest.fixture(scope="module")
def upstreams(tmp_path_factory):
    return upstream_pair(tmp_path_factory, old=_files(CONFIG_OLD), new=_files(CONFIG_NEW))


def model_plugin(tmp_path):
    return plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"acme": "acme:register"}),
        "acme/__init__.py": """
            from sglang.srt.configs.model_config import multimodal_model_archs


            class AcmeMoeForCausalLMNextN:
                pass


            class OldDraftForCausalLMMTP:
                pass


            class LegacyVLForConditionalGeneration:
                pass


            class SinkForCausalLM:
                pass


            class AcmeInventedForCausalLM:
                pass


            EntryClass = [AcmeMoeForCausalLMNextN, OldDraftForCausalLMMTP, LegacyVLForConditionalGeneration, SinkForCausalLM, AcmeInventedForCausalLM]


            def register():
                multimodal_model_archs.append("AcmeOwnVLForCausalLM")
                if "AcmeOwnVLForCausalLM" in multimodal_model_archs and "LegacyVLForConditionalGeneration" in multimodal_model_archs:
                    return True


            def is_draft(config):
                return config.architectures[0] == "OldDraftForCausalLMMTP"
            """,
    })


def _archs(doc) -> dict[str, dict]:
    return by_target([f for f in doc["findings"] if f["kind"] == "architecture"])


def test_dropped_rewrites_and_list_entries_are_missing_not_breaking(upstreams, tmp_path):
    old, new = upstreams
    root = model_plugin(tmp_path)
    code, doc = check(root, new, "--baseline", old)
    found = _archs(doc)
    assert set(found) == {f"{MODELS}['AcmeMoeForCausalLMNextN']", f"{MODELS}['OldDraftForCausalLMMTP']",
                          f"{MODELS}['LegacyVLForConditionalGeneration']", f"{TABLE}['LegacyVLForConditionalGeneration']"}, found
    assert all(f["status"] == "missing" and not f["breaking"] and f["risk"] >= 90 for f in found.values()), found
    # the branch that rewrote AcmeMoeLite drafts to the plugin's class now produces another
    nextn = found[f"{MODELS}['AcmeMoeForCausalLMNextN']"]
    assert nextn["successor"] == "AcmeMoeLiteForCausalLMNextN" and "model_config.py:4" in nextn["detail"], nextn
    assert "no longer rewrites AcmeMoeLiteForCausalLM to 'AcmeMoeForCausalLMNextN'" in nextn["detail"] and nextn["line"] == 24
    mtp = found[f"{MODELS}['OldDraftForCausalLMMTP']"]
    assert "no longer rewrites OldDraftForCausalLM to" in mtp["detail"] and mtp["successor"] is None, mtp
    # the plugin's own test of it, in code, is a dependency on the same string
    assert [f["line"] for f in doc["findings"] if f["target"] == f"{MODELS}['OldDraftForCausalLMMTP']"] == [24, 34]
    legacy = found[f"{TABLE}['LegacyVLForConditionalGeneration']"]
    assert "no longer lists 'LegacyVLForConditionalGeneration' in multimodal_model_archs" in legacy["detail"] and legacy["line"] == 29, legacy
    assert code == 0  # nothing breaks: the plugin still loads


def test_a_model_put_in_the_registry_by_hand_is_judged_the_same(upstreams, tmp_path):
    old, new = upstreams
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"acme": "acme:register"}),
        "acme/__init__.py": """
            from sglang.srt.models.registry import ModelRegistry


            def register():
                ModelRegistry.models["OldDraftForCausalLMMTP"] = object
                ModelRegistry.models["AcmeInventedForCausalLM"] = object
                ModelRegistry.models.update({"LegacyVLForConditionalGeneration": object})
            """,
    })
    _, doc = check(root, new, "--baseline", old)
    found = _archs(doc)
    assert sorted(found) == [f"{MODELS}['LegacyVLForConditionalGeneration']", f"{MODELS}['OldDraftForCausalLMMTP']"], found
    assert found[f"{MODELS}['OldDraftForCausalLMMTP']"]["line"] == 5 and found[f"{MODELS}['LegacyVLForConditionalGeneration']"]["line"] == 7, found
    assert {f["status"] for f in found.values()} == {"missing"}


def test_on_its_base_release_every_architecture_is_there(upstreams, tmp_path):
    old, _ = upstreams
    code, doc = check(model_plugin(tmp_path), old, "--baseline", old)
    assert _archs(doc) == {} and code == 0, doc["findings"]


def test_without_a_reference_release_nothing_is_said_lost(upstreams, tmp_path):
    _, new = upstreams
    code, doc = check(model_plugin(tmp_path), new, "--baseline", "none")
    assert _archs(doc) == {} and code == 0, doc["findings"]


def test_diff_lists_the_dropped_architectures(upstreams, tmp_path):
    old, new = upstreams
    root = model_plugin(tmp_path)
    _, doc = harness_json("diff", "--from", old, "--to", new, "--plugin", str(root), "--out", str(tmp_path / "diff"))
    found = _archs(doc)
    assert sorted(found) == sorted({f"{MODELS}['AcmeMoeForCausalLMNextN']", f"{MODELS}['OldDraftForCausalLMMTP']",
                                    f"{MODELS}['LegacyVLForConditionalGeneration']", f"{TABLE}['LegacyVLForConditionalGeneration']"}), found
    assert all(f["status"] == "missing" and not f["preexisting"] for f in found.values()), found
    assert found[f"{MODELS}['AcmeMoeForCausalLMNextN']"]["successor"] == "AcmeMoeLiteForCausalLMNextN"


# Real releases. Each string below is one upstream rewrote to / listed on some releases and not
# others (cited from the release trees):
#  - "Glm4MoeForCausalLMNextN": 0.5.11 configs/model_config.py:350-354 rewrites drafts of
#    Glm4MoeForCausalLM and Glm4MoeLiteForCausalLM to it; from 0.5.14 (:541-546) Glm4MoeLite
#    drafts become "Glm4MoeLiteForCausalLMNextN" (0.5.17 :617, 0.5.23 :1069).
#  - "DeepseekV32ForCausalLM": in piecewise_cuda_graph_disabled_model_archs on 0.5.11
#    (model_config.py:1446-1447); the list stays (0.5.14 :1713, 0.5.23 :2475) without it.
#  - "GptOssForCausalLM": in hybrid_swa_archs on 0.5.11 (model_config.py:1550); on 0.5.23 through
#    `*SWA_SINK_ARCHS` (model_config.py:88-90, spliced in at :2655-2661): still listed.
#  - "AcmeInventedForCausalLM": named by no release: not a dependency.
REAL_MODELS = ["Glm4MoeForCausalLMNextN", "DeepseekV32ForCausalLM", "GptOssForCausalLM", "AcmeInventedForCausalLM"]


def real_model_plugin(tmp_path):
    classes = "\n\n".join(f"class {name}:\n    pass\n" for name in REAL_MODELS)
    return plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"acme": "acme:register"}).replace('version = "0.1"\n', 'version = "0.1"\ndependencies = ["sglang==0.5.11"]\n'),
        "acme/__init__.py": f"{classes}\n\nEntryClass = [{', '.join(REAL_MODELS)}]\n\n\ndef register():\n    pass\n",
    })


@pytest.mark.network
@pytest.mark.slow
@pytest.mark.parametrize("version", ["0.5.11", "0.5.14", "0.5.17", "0.5.23"])
def test_real_release_architectures(tmp_path, version):
    real_releases("sglang==0.5.11", f"sglang=={version}")
    code, doc = check(real_model_plugin(tmp_path), f"sglang=={version}")
    found = _archs(doc)
    if version == "0.5.11":  # the plugin's base release: green
        assert found == {} and code == 0, found
        return
    assert doc["baseline"] == "sglang==0.5.11", doc.get("baseline_note")
    assert set(found) == {f"{MODELS}['Glm4MoeForCausalLMNextN']", f"{MODELS}['DeepseekV32ForCausalLM']"}, found
    assert all(f["status"] == "missing" and not f["breaking"] for f in found.values()), found
    nextn = found[f"{MODELS}['Glm4MoeForCausalLMNextN']"]
    assert nextn["successor"] == "Glm4MoeLiteForCausalLMNextN" and "model_config.py:354" in nextn["detail"], nextn
    assert "piecewise_cuda_graph_disabled_model_archs" in found[f"{MODELS}['DeepseekV32ForCausalLM']"]["detail"]
    assert code == 0
