"""The finding kinds of issue 18 on real SGLang release wheels (0.5.11 to 0.5.23): exception
scope, generated constructors, plugin-private platform methods, members set at run time,
none-fallback imports and self-aliases, factory-made hooks and sys.modules patches. Each
plugin here is small and shaped like the field cases; the upstream lines are cited."""

from __future__ import annotations

import pytest
from knowledge_support import harness_json, write_tree
from real_releases import real_releases

pytestmark = [pytest.mark.network, pytest.mark.slow]

IFACE = "sglang.srt.platforms.interface.SRTPlatform"
ENTRY = '[project]\nname = "{0}"\nversion = "0.1"\n[project.entry-points."sglang.srt.plugins"]\n{0} = "{0}:register"\n'


@pytest.fixture(scope="module")
def releases():
    return real_releases("sglang==0.5.11", "sglang==0.5.14", "sglang==0.5.17", "sglang==0.5.19", "sglang==0.5.23")


def check(tmp_path, files: dict[str, str], version: str) -> tuple[int, dict]:
    root = tmp_path / "plugin"
    write_tree(root, files)
    return harness_json("check", "--plugin", str(root), "--upstream", f"sglang=={version}", "--baseline", "none")


@pytest.mark.parametrize("version", ["0.5.11", "0.5.14", "0.5.17", "0.5.19", "0.5.23"])
def test_exception_scope_on_the_real_torchao_removal(releases, tmp_path, version):
    # 0.5.11 / 0.5.14 (:32) / 0.5.17 sglang/srt/layers/torchao_utils.py apply_torchao_config_to_model; gone from 0.5.19 on
    code, doc = check(tmp_path, {
        "pyproject.toml": ENTRY.format("tao"),
        "tao/__init__.py": """
            def _skip(model, torchao_config, filter_fn=None):
                return model


            try:
                import sglang.srt.layers.torchao_utils as tu

                tu.apply_torchao_config_to_model = _skip
            except Exception:
                pass


            def register():
                pass
            """,
    }, version)
    patch = next(f for f in doc["findings"] if f["kind"] == "patch")
    if version in ("0.5.11", "0.5.14", "0.5.17"):
        assert patch["status"] == "ok" and patch["guard"] is None
    else:
        assert patch["status"] == "missing" and patch["guard"]["outcome"] == "caught" and not patch["breaking"]
    assert code == 0


@pytest.mark.parametrize("version", ["0.5.11", "0.5.23"])
def test_generated_constructor_of_eagle_draft_input(releases, tmp_path, version):
    # speculative/eagle_info.py: @dataclass class EagleDraftInput(SpecInput), SpecInput.__init__(self, spec_input_type)
    code, doc = check(tmp_path, {
        "pyproject.toml": ENTRY.format("spec"),
        "spec/__init__.py": """
            from sglang.srt.speculative.eagle_info import EagleDraftInput


            def seed(hidden, probs, ids):
                return EagleDraftInput(hidden_states=hidden, topk_p=probs, topk_index=ids)


            def typo(hidden):
                return EagleDraftInput(hidden_state=hidden)


            def register():
                pass
            """,
    }, version)
    assert [f["line"] for f in doc["findings"] if f["kind"] == "call" and f["breaking"]] == [9]
    assert code == 1


def test_plugin_private_platform_method_on_both_releases(releases, tmp_path):
    files = {
        "pyproject.toml": '[project]\nname = "priv"\nversion = "0.1"\n[project.entry-points."sglang.srt.platforms"]\npriv = "priv:activate"\n',
        "priv/__init__.py": """
            from sglang.srt.platforms import current_platform
            from sglang.srt.platforms.interface import SRTPlatform


            class PrivPlatform(SRTPlatform):
                def get_default_attention_backend(self) -> str:
                    return "torch_native"

                def get_sampler_chunk_size(self) -> int:
                    return 4096


            def activate():
                return "priv:PrivPlatform"


            def chunk():
                return current_platform.get_sampler_chunk_size()
            """,
    }
    for version in ("0.5.17", "0.5.23"):
        code, doc = check(tmp_path / version, files, version)
        finding = next(f for f in doc["findings"] if f["target"] == f"{IFACE}.get_sampler_chunk_size")
        assert finding["status"] == "extension" and not finding["breaking"]
        assert code == 0, [f for f in doc["findings"] if f["breaking"]]


def test_members_registered_by_quant_methods(releases, tmp_path):
    # 0.5.23 layers/linear.py ReplicatedLinear: self.quant_method.create_weights(self, ...);
    # layers/quantization/unquant.py: layer.register_parameter("weight", ...), ("w13_weight", ...)
    _, doc = check(tmp_path, {
        "pyproject.toml": ENTRY.format("pd"),
        "pd/__init__.py": """
            from sglang.srt.layers.linear import ReplicatedLinear
            from sglang.srt.layers.moe.fused_moe_triton.layer import FusedMoE


            class Packed(ReplicatedLinear):
                def packed(self):
                    return self.weight.t()

                def typo(self):
                    return self.wieght


            class Folded(FusedMoE):
                def sizes(self):
                    return self.w13_weight.shape, self.w2_weight.shape


            def register():
                pass
            """,
    }, "0.5.23")
    statuses = {f["target"].rsplit(".", 1)[-1]: f["status"] for f in doc["findings"] if f["kind"] == "subclass"}
    assert "weight" not in statuses and "w13_weight" not in statuses and "w2_weight" not in statuses, statuses
    assert statuses["wieght"] == "missing"


def test_none_fallback_and_self_alias_imports(releases, tmp_path):
    # 0.5.17 layers/attention/dsa_backend.py ends with `DSAFlashMLAMetadata = DSAFlashMLAMetadata` (and the backend)
    code, doc = check(tmp_path, {
        "pyproject.toml": ENTRY.format("fb"),
        "fb/__init__.py": """
            try:
                from sglang.srt.layers.attention.attention_registry import register_attention_backend
            except ImportError:
                register_attention_backend = None

            from sglang.srt.layers.attention.dsa_backend import DSAFlashMLAMetadata, DeepseekSparseAttnMultiStepBackend


            class Backend(DeepseekSparseAttnMultiStepBackend):
                metadata_cls = DSAFlashMLAMetadata


            def _create(runner):
                return None


            def register():
                if register_attention_backend is not None:
                    register_attention_backend("fb")(_create)
            """,
    }, "0.5.17")
    assert [f for f in doc["findings"] if f["status"] != "ok"] == []
    backend = next(f for f in doc["findings"] if f["kind"] == "attention_backend")
    assert backend["target"] == "sglang.srt.layers.attention.attention_registry.register_attention_backend"
    assert code == 0


def test_factory_hook_and_sys_modules_patch(releases, tmp_path):
    # 0.5.23 layers/sampler.py Sampler.forward(self, logits_output, sampling_info, ..., *, logprob_logits=None)
    code, doc = check(tmp_path, {
        "pyproject.toml": ENTRY.format("fa"),
        "fa/__init__.py": """
            import sys

            from sglang.srt.plugins.hook_registry import HookRegistry, HookType


            def make_hook(config=None):
                def _forward(original_fn, self, logits_output, sampling_info, *args, **kwargs):
                    return original_fn(self, logits_output, sampling_info, *args, **kwargs)

                return _forward


            def _skip(model, torchao_config, filter_fn=None):
                return model


            def register():
                HookRegistry.register("sglang.srt.layers.sampler.Sampler.forward", make_hook({}), HookType.AROUND)
                module = sys.modules.get("sglang.srt.layers.torchao_utils")
                if module is None:
                    return
                module.apply_torchao_config_to_model = _skip
            """,
    }, "0.5.23")
    hook = next(f for f in doc["findings"] if f["kind"] == "hook")
    assert hook["status"] == "ok"
    patch = next(f for f in doc["findings"] if f["kind"] == "patch")
    assert patch["status"] == "missing" and patch["guard"]["outcome"] == "skipped"
    assert code == 0
