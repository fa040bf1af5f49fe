"""vLLM plugin forms (issue 21): CustomOp.register_oot replacements, ModelRegistry.register_model,
classes handed to vLLM by qualified name (platform methods, worker_cls / scheduler_cls) and
vllm_version_is-style version guards.

Offline: a small vLLM-shaped upstream tree. Real releases: tests/fixtures/vllm_xdev, a plugin
shaped like vllm-ascend written for vLLM 0.22.1, checked against the 0.22.1 and 0.27.1 wheels
(one module-scoped fixture each) and ported from one to the other."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from knowledge_support import by_target, harness_json, write_tree

PLUGIN = Path(__file__).resolve().parents[1] / "fixtures" / "vllm_xdev"
CUSTOM_OP = "vllm.model_executor.custom_op.CustomOp"
REGISTER = f"{CUSTOM_OP}.register_oot"

# ----------------------------------------------------------------------------- a vLLM-shaped upstream

UPSTREAM = {
    "vllm/__init__.py": """
        from .version import __version__
        MODULE_ATTRS = {"ModelRegistry": ".model_executor.models:ModelRegistry"}

        def __getattr__(name):
            from importlib import import_module

            if name in MODULE_ATTRS:
                module_name, attr_name = MODULE_ATTRS[name].split(":")
                return getattr(import_module(module_name, __package__), attr_name)
            else:
                raise AttributeError(name)
        """,
    "vllm/version.py": '__version__ = "0.30.0"\n',
    "vllm/platforms/__init__.py": "",
    "vllm/platforms/interface.py": """
        import enum

        class PlatformEnum(enum.Enum):
            OOT = 1

        class Platform:
            @classmethod
            def get_attn_backend_cls(cls, selected_backend, attn_selector_config, num_heads=None) -> str:
                return ""

            @classmethod
            def check_and_update_config(cls, vllm_config) -> None:
                pass
        """,
    "vllm/model_executor/__init__.py": "",
    "vllm/model_executor/custom_op.py": """
        op_registry_oot = {}

        class CustomOp:
            @classmethod
            def register(cls, name):
                return lambda op_cls: op_cls

            @classmethod
            def register_oot(cls, _decorated_op_cls=None, name=None):
                return _decorated_op_cls

            def forward_oot(self, *args, **kwargs):
                return self.forward_native(*args, **kwargs)
        """,
    "vllm/model_executor/layers/__init__.py": "",
    "vllm/model_executor/layers/activation.py": """
        from vllm.model_executor.custom_op import CustomOp

        @CustomOp.register("silu_and_mul_with_clamp")
        class SiluAndMulWithClamp(CustomOp):
            def forward_native(self, x):
                return x

        @CustomOp.register("silu_and_mul")
        class SiluAndMul(CustomOp):
            def forward_native(self, x):
                return x

        class FastSiluAndMul(SiluAndMul):
            pass
        """,
    "vllm/model_executor/models/__init__.py": "from .registry import ModelRegistry\n",
    "vllm/model_executor/models/registry.py": """
        _TEXT_GENERATION_MODELS = {"LlamaForCausalLM": ("llama", "LlamaForCausalLM")}

        class _ModelRegistry:
            def register_model(self, model_arch, model_cls):
                pass

        ModelRegistry = _ModelRegistry()
        """,
    "vllm/v1/__init__.py": "",
    "vllm/v1/worker/__init__.py": "",
    "vllm/v1/worker/worker_base.py": """
        class WorkerBase:
            def init_device(self):
                raise NotImplementedError
        """,
    "vllm/v1/attention/__init__.py": "",
    "vllm/v1/attention/backend.py": """
        class AttentionBackend:
            @staticmethod
            def get_name():
                raise NotImplementedError
        """,
}


def _plugin(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "plugin"
    write_tree(root, {
        "pyproject.toml": textwrap.dedent("""
            [project]
            name = "acme-vllm"
            version = "0.1.0"

            [project.entry-points."vllm.platform_plugins"]
            acme = "acme:register"

            [project.entry-points."vllm.general_plugins"]
            acme_ops = "acme.ops:register_ops"
            """),
        "acme/__init__.py": "def register():\n    return 'acme.platform.AcmePlatform'\n",
        **files,
    })
    return root


@pytest.fixture(scope="module")
def upstream(tmp_path_factory) -> str:
    root = tmp_path_factory.mktemp("vllm-upstream")
    write_tree(root, UPSTREAM)
    return str(root)


def _check(plugin: Path, upstream: str) -> tuple[int, dict]:
    return harness_json("check", "--plugin", str(plugin), "--upstream", upstream, "--engine", "vllm", "--baseline", "none")


def test_register_oot_keys_are_upstream_class_names(tmp_path, upstream):
    """The key is `name=`, else the class register_oot is called on; it is live only when a
    CustomOp subclass of that __name__ exists (a subclass that is not decorated counts). A dead
    key is missing, never breaking (vLLM runs its own class), with the close names offered."""
    plugin = _plugin(tmp_path, {
        "acme/platform.py": "from vllm.platforms.interface import Platform\n\nclass AcmePlatform(Platform):\n    pass\n",
        "acme/ops.py": """
            from vllm.model_executor.custom_op import CustomOp
            from vllm.model_executor.layers.activation import FastSiluAndMul, SiluAndMul

            @SiluAndMul.register_oot
            class AcmeSiluAndMul(SiluAndMul):
                def forward_oot(self, x):
                    return x

            class AcmeFast(FastSiluAndMul):
                pass

            class AcmeClamp(CustomOp):
                pass

            def register_ops():
                ops = {"FastSiluAndMul": AcmeFast, "SiluAndMulClamp": AcmeClamp}
                for name, op_cls in ops.items():
                    CustomOp.register_oot(_decorated_op_cls=op_cls, name=name)
            """,
    })
    code, doc = _check(plugin, upstream)
    found = by_target(doc["findings"])
    silu = found["vllm.model_executor.layers.activation.SiluAndMul.register_oot['SiluAndMul']"]
    assert (silu["kind"], silu["status"], silu["line"]) == ("custom_op", "ok", 4), silu
    assert found[f"{REGISTER}['FastSiluAndMul']"]["status"] == "ok"
    dead = found[f"{REGISTER}['SiluAndMulClamp']"]
    assert (dead["status"], dead["breaking"], dead["file"], dead["line"]) == ("missing", False, "acme/ops.py", 18), dead
    assert dead["successor"] == f"{REGISTER}['SiluAndMulWithClamp']" and "never used" in dead["detail"]
    # the passthrough base forward_oot(*args, **kwargs) declares no signature
    assert all(f["status"] == "ok" for f in doc["findings"] if f["target"].endswith(".forward_oot"))
    assert code == 0, doc


def test_named_classes_and_model_registrations(tmp_path, upstream):
    """Qualified names a platform returns or assigns are plugin classes that must exist and derive
    from what vLLM expects; strings naming vLLM classes must resolve. register_model's lazy
    "pkg.mod:Class" names a plugin class; `from vllm import ModelRegistry` resolves through
    vllm.__getattr__'s table."""
    plugin = _plugin(tmp_path, {
        "acme/platform.py": """
            from vllm.platforms.interface import Platform

            class AcmePlatform(Platform):
                @classmethod
                def get_attn_backend_cls(cls, selected_backend, attn_selector_config, num_heads=None):
                    backends = {True: "acme.attention.AcmeMLABackend", False: "acme.attention.AcmeBackend"}
                    return backends[attn_selector_config.use_mla]

                @classmethod
                def check_and_update_config(cls, vllm_config) -> None:
                    parallel_config = vllm_config.parallel_config
                    if parallel_config.worker_cls == "auto":
                        parallel_config.worker_cls = "acme.worker.AcmeWorker"
                    else:
                        parallel_config.worker_cls = "vllm.v1.worker.gpu_worker.Worker"
            """,
        "acme/attention.py": """
            from vllm.v1.attention.backend import AttentionBackend

            class AcmeBackend(AttentionBackend):
                @staticmethod
                def get_name():
                    return "CUSTOM"
            """,
        "acme/worker.py": "class AcmeWorker:\n    def init_device(self):\n        pass\n",
        "acme/ops.py": """
            from vllm import ModelRegistry

            def register_ops():
                ModelRegistry.register_model("AcmeForCausalLM", "acme.models:AcmeForCausalLM")
            """,
    })
    code, doc = _check(plugin, upstream)
    found = by_target(doc["findings"])
    assert found["acme.attention.AcmeBackend"]["status"] == "ok"
    mla = found["acme.attention.AcmeMLABackend"]
    assert (mla["kind"], mla["status"], mla["breaking"], mla["line"]) == ("named_class", "missing", True, 7), mla
    assert "defines no 'AcmeMLABackend'" in mla["detail"]
    worker = found["acme.worker.AcmeWorker"]
    assert worker["status"] == "ok" and "does not derive from vllm.v1.worker.worker_base.WorkerBase" in worker["detail"] and worker["risk"] > 0
    gone = found["vllm.v1.worker.gpu_worker.Worker"]
    assert (gone["status"], gone["file"], gone["line"]) == ("missing", "acme/platform.py", 15), gone
    model = found["acme.models.AcmeForCausalLM"]
    assert (model["status"], model["breaking"]) == ("missing", True) and "no module acme.models" in model["detail"]
    assert "vllm.ModelRegistry" not in found  # resolved through vllm.__getattr__ (MODULE_ATTRS)
    assert {r["why"].split(" ")[0] for r in doc["roots"]} >= {"get_attn_backend_cls()", "worker_cls"}
    assert code == 1


def test_a_version_helper_guards_what_it_compares(tmp_path, upstream):
    """vllm-ascend's vllm_version_is: an env override, then Version(vllm.__version__) == Version(v);
    folded like a version comparison, so each branch is judged only where it runs."""
    plugin = _plugin(tmp_path, {
        "acme/platform.py": "from vllm.platforms.interface import Platform\n\nclass AcmePlatform(Platform):\n    pass\n",
        "acme/utils.py": """
            import os

            from packaging.version import Version

            def vllm_version_is(target):
                if os.getenv("VLLM_VERSION") is not None:
                    version = os.getenv("VLLM_VERSION")
                else:
                    import vllm

                    version = vllm.__version__
                return Version(version) == Version(target)
            """,
        "acme/ops.py": """
            from acme.utils import vllm_version_is

            if vllm_version_is("0.30.0"):
                from vllm.model_executor.layers.activation import SiluAndMul as Op
            else:
                from vllm.model_executor.layers.activation import GeluAndMul as Op

            def register_ops():
                return Op
            """,
    })
    code, doc = _check(plugin, upstream)
    gelu = by_target(doc["findings"])["vllm.model_executor.layers.activation.GeluAndMul"]
    assert gelu["guard"] == {"condition": "not (vllm_version_is('0.30.0'))", "line": 3, "outcome": "skipped"}
    assert not gelu["breaking"] and code == 0, doc


# ----------------------------------------------------------------------------- real vLLM releases


@pytest.mark.network
@pytest.mark.slow
def test_the_fixture_is_green_on_the_release_it_was_written_for(vllm_0221):
    code, doc = harness_json("check", "--plugin", str(PLUGIN), "--upstream", "vllm==0.22.1")
    assert code == 0 and doc["breaking"] == 0, [f for f in doc["findings"] if f["breaking"]]
    found = by_target(doc["findings"])
    for key in ("RMSNorm", "GemmaRMSNorm", "GeluAndMul", "QuickGELU"):
        assert found[f"{REGISTER}[{key!r}]"]["status"] == "ok"
    fused = found[f"{REGISTER}['FusedMoE']"]
    assert (fused["status"], fused["defined_in"]) == ("ok", "vllm.model_executor.layers.fused_moe.layer.FusedMoE")
    for named, base in (("vllm_xdev.worker.worker.XdevWorker", "vllm.v1.worker.worker_base.WorkerBase"),
                        ("vllm_xdev.attention.mla.XdevMLABackend", "vllm.v1.attention.backend.AttentionBackend"),
                        ("vllm_xdev.core.scheduler.XdevScheduler", "vllm.v1.core.sched.interface.SchedulerInterface"),
                        ("vllm_xdev.models.qwen3.XdevQwen3ForCausalLM", None)):
        assert (found[named]["kind"], found[named]["status"], found[named]["defined_in"]) == ("named_class", "ok", base), found[named]
    # the branch for newer vLLM is skipped on 0.22.1, not reported as broken
    newer = found["vllm.model_executor.layers.fused_moe.MoERunner"]
    assert (newer["guard"]["outcome"], newer["breaking"]) == ("skipped", False)
    whys = [r["why"] for r in doc["roots"]]
    assert "worker_cls vllm_xdev.worker.worker.XdevWorker named by the platform class (vllm_xdev/platform.py:35)" in whys


@pytest.mark.network
@pytest.mark.slow
def test_check_on_0271_flags_moved_removed_renamed_and_changed_names(vllm_0221, vllm_0271):
    """Against the 0.22.1 baseline the plugin declares (successors are searched from it)."""
    code, doc = harness_json("check", "--plugin", str(PLUGIN), "--upstream", "vllm==0.27.1")
    assert code == 1, doc
    found = by_target(doc["findings"])
    imports = {f["target"]: f for f in doc["findings"] if f["kind"] == "import"}

    def where(target, kinds=found):
        f = kinds[target]
        return f["kind"], f["status"], f["file"], f["line"], f["breaking"]

    # moved: the FLA ops went to vllm/third_party/flash_linear_attention
    moved = "vllm.model_executor.layers.fla.ops.chunk_gated_delta_rule"
    assert where(moved, imports) == ("import", "missing", "vllm_xdev/ops/fla.py", 3, True)
    assert imports[moved]["successor"] == "vllm.third_party.flash_linear_attention.ops.chunk.chunk_gated_delta_rule"
    # removed
    assert where("vllm.v1.worker.cp_utils.get_total_cp_world_size", imports) == ("import", "missing", "vllm_xdev/patch/patch_block_table.py", 4, True)
    # renamed (private -> public, same module)
    renamed = "vllm.utils.torch_utils._nvfp4_split_data_scale"
    assert where(renamed, imports) == ("import", "missing", "vllm_xdev/ops/nvfp4.py", 3, True)
    assert imports[renamed]["successor"] == "vllm.utils.torch_utils.nvfp4_split_data_scale"
    # signatures: a call, an override upstream calls with a new keyword, a super() call
    assert where("vllm.utils.torch_utils.async_tensor_h2d") == ("call", "signature_changed", "vllm_xdev/worker/model_runner.py", 10, True)
    # the new keyword call sits in validate_configuration, which 0.27.1 calls only on backend
    # classes it holds in untyped variables (CUDA's and ROCm's platform code, the MLA prefill
    # selector): whether it runs on the plugin's backend is undecided, not certain
    combination = found["vllm.v1.attention.backend.AttentionBackend.supports_combination"]
    assert where("vllm.v1.attention.backend.AttentionBackend.supports_combination") == ("subclass", "unknown", "vllm_xdev/attention/backend.py", 31, False)
    assert "reach it only through calls that could not be placed: vllm/v1/attention/backend.py:380 (cls)" in combination["detail"], combination
    assert where("vllm.v1.worker.gpu_worker.Worker.start_weight_update")[1:] == ("signature_changed", "vllm_xdev/worker/worker_v2.py", 8, True)
    # a vLLM class the platform names by qualified name, gone in 0.27.1 (split into two backends)
    sparse = "vllm.v1.attention.backends.mla.flashinfer_mla_sparse.FlashInferMLASparseBackend"
    assert where(sparse) == ("named_class", "missing", "vllm_xdev/platform.py", 43, True)
    # returned under a config test (a run-time condition): it fails for every sparse MLA model, said so
    assert found[sparse]["guard"] == {"condition": "attn_selector_config.use_sparse and attn_selector_config.use_mla", "line": 41, "outcome": "runtime"}
    assert "a run-time condition" in found[sparse]["detail"]
    # FusedMoE's replacement is registered only under vllm_version_is("0.22.1"): skipped here,
    # while the else branch's RoutedExperts registration replaces the 0.27.1 class
    fused = found[f"{REGISTER}['FusedMoE']"]
    assert (fused["status"], fused["guard"]["outcome"], fused["breaking"]) == ("missing", "skipped", False)
    assert found[f"{REGISTER}['RoutedExperts']"]["defined_in"] == "vllm.model_executor.layers.fused_moe.routed_experts.RoutedExperts"
    # EngineCore calls self.scheduler.schedule(self._should_throttle_prefills()) through an
    # attribute annotated SchedulerInterface (vllm/v1/engine/core.py:595): the override takes none
    schedule = found["vllm.v1.core.sched.scheduler.Scheduler.schedule"]
    assert (schedule["status"], schedule["breaking"]) == ("signature_changed", True) and "core.py:595" in schedule["detail"], schedule
    assert doc["breaking"] == 7


@pytest.mark.network
@pytest.mark.slow
def test_port_carries_the_upstream_change_into_the_stale_copy(vllm_0221, vllm_0271):
    code, doc = harness_json("port", "--plugin", str(PLUGIN), "--from", "vllm==0.22.1", "--to", "vllm==0.27.1", "--json")
    port = next(p for p in doc["ports"] if p["target"] == "vllm.forward_context.DPMetadata.make")
    assert (port["status"], port["copy_of"], port["file"], port["line"]) == ("clean", "vllm==0.22.1", "vllm_xdev/patch/patch_forward_context.py", 9), port
    assert "or parallel_config.use_sequence_parallel_moe" in port["merged"]
    assert 'DPMetadata(num_tokens_across_dp_cpu.to("cpu"))' in port["merged"]  # the device edit stays
    assert code == 1  # the removed get_total_cp_world_size has nothing to port to


# an out-of-tree op stands in wherever upstream builds the class it is registered for: its forward
# is judged against the calls upstream makes on those instances, through nn.Module.__call__
NORM_UPSTREAM = {
    **UPSTREAM,
    "vllm/model_executor/custom_op.py": """
        from torch import nn

        class CustomOp(nn.Module):
            @classmethod
            def register_oot(cls, _decorated_op_cls=None, name=None):
                return _decorated_op_cls

            def forward(self, *args, **kwargs):
                return self.forward_native(*args, **kwargs)
        """,
    "vllm/model_executor/layers/layernorm.py": """
        from vllm.model_executor.custom_op import CustomOp

        class RMSNorm(CustomOp):
            def forward_native(self, x, residual=None):
                return x
        """,
    "vllm/model_executor/models/llama.py": """
        from torch import nn
        from vllm.model_executor.layers.layernorm import RMSNorm

        class LlamaDecoderLayer(nn.Module):
            def __init__(self):
                super().__init__()
                self.post_attention_layernorm = RMSNorm()

            def forward(self, h, residual):
                return self.post_attention_layernorm(h, residual)
        """,
}
_CALL = "\n\nCustomOp.register_oot(_decorated_op_cls=AcmeRMSNorm, name='RMSNorm')\n"
# the decorator factory applied by a call, its key and class from an installer's table, a loop over it
_INSTALLER = """

class _Installer:
    def __init__(self, table):
        self.table = table

    def install(self):
        for upstream_name, cls in self.table:
            CustomOp.register_oot(name=upstream_name)(cls)


_Installer([("RMSNorm", AcmeRMSNorm)]).install()
"""
# ... from a helper's parameters
_HELPER = "\n\ndef _oot(name, cls):\n    CustomOp.register_oot(name=name)(cls)\n\n\n_oot('RMSNorm', AcmeRMSNorm)\n"
NORMS = {
    # (how the class is registered, its forward, whether the call in llama.py binds, the registration after the class)
    "decorator": ("@RMSNorm.register_oot\nclass AcmeRMSNorm(RMSNorm):\n", "x", False, "\n"),
    "decorator_called": ("@CustomOp.register_oot(name='RMSNorm')\nclass AcmeRMSNorm(RMSNorm):\n", "x", False, "\n"),
    "call": ("class AcmeRMSNorm(RMSNorm):\n", "x", False, _CALL),
    "call_fits": ("class AcmeRMSNorm(RMSNorm):\n", "x, residual=None", True, _CALL),
    "installer_loop": ("class AcmeRMSNorm(RMSNorm):\n", "x", False, _INSTALLER),
    "installer_loop_fits": ("class AcmeRMSNorm(RMSNorm):\n", "x, residual=None", True, _INSTALLER),
    "helper_parameters": ("class AcmeRMSNorm(RMSNorm):\n", "x", False, _HELPER),
}


@pytest.mark.parametrize("spelling", sorted(NORMS))
def test_an_out_of_tree_op_is_judged_against_calls_on_what_upstream_builds(tmp_path_factory, tmp_path, spelling):
    upstream = tmp_path_factory.mktemp("vllm-norm")
    write_tree(upstream, NORM_UPSTREAM)
    head, params, fits, register = NORMS[spelling]
    plugin = _plugin(tmp_path, {"acme/platform.py": "from vllm.platforms.interface import Platform\n\n\nclass AcmePlatform(Platform):\n    pass\n",
                                "acme/ops.py": "from vllm.model_executor.custom_op import CustomOp\nfrom vllm.model_executor.layers.layernorm import RMSNorm\n\n\n"
                                               + head + f"    def forward(self, {params}):\n        return x\n" + register + "\n\ndef register_ops():\n    pass\n"})
    code, doc = _check(plugin, str(upstream))
    found = [f for f in doc["findings"] if f["target"] == "vllm.model_executor.layers.layernorm.RMSNorm.forward"]
    if fits:
        assert not any(f["breaking"] for f in found) and code == 0, found
    else:
        assert len(found) == 1 and found[0]["breaking"] and code == 1, found
        assert "llama.py:10" in found[0]["detail"] and "nn.Module.__call__" in found[0]["detail"]


MOE_UPSTREAM = {
    **{k: v for k, v in UPSTREAM.items() if k.startswith(("vllm/__init__", "vllm/version", "vllm/platforms", "vllm/model_executor/__init__"))},
    "vllm/model_executor/custom_op.py": UPSTREAM["vllm/model_executor/custom_op.py"],
    "vllm/model_executor/layers/__init__.py": "",
    "vllm/model_executor/layers/fused_moe.py": """
        from vllm.model_executor.custom_op import CustomOp

        class FusedMoE(CustomOp):
            def __init__(self, num_experts, top_k, prefix=""):
                self.num_experts = num_experts
        """,
}
_OWN_INIT = "    def __init__(self, *args, tid2eid=None, **kwargs):\n        self.tid2eid = tid2eid\n        super().__init__(*args, **kwargs)\n"
MOES = {
    # (the plugin class and how it is registered, whether FusedMoE(8, 2, tid2eid=…) in the plugin's model breaks)
    "decorator": ("@CustomOp.register_oot(name='FusedMoE')\nclass AcmeMoE(FusedMoE):\n" + _OWN_INIT, False),
    "table_loop": ("class AcmeMoE(FusedMoE):\n" + _OWN_INIT + "\n\nfor name, op_cls in {'FusedMoE': AcmeMoE}.items():\n"
                   "    CustomOp.register_oot(_decorated_op_cls=op_cls, name=name)\n", False),
    "helper_applied": ("class AcmeMoE(FusedMoE):\n" + _OWN_INIT + "\n\ndef _oot(name, cls):\n    CustomOp.register_oot(name=name)(cls)\n\n\n"
                       "_oot('FusedMoE', AcmeMoE)\n", False),
    # negatives: nothing registered, a registration a version guard turns off, a class taking upstream's arguments only
    "not_registered": ("class AcmeMoE(FusedMoE):\n" + _OWN_INIT, True),
    "guarded_off": ("import sys\n\n\nclass AcmeMoE(FusedMoE):\n" + _OWN_INIT + "\n\nif sys.version_info < (3, 8):\n"
                    "    CustomOp.register_oot(_decorated_op_cls=AcmeMoE, name='FusedMoE')\n", True),
    "inherited_init": ("@CustomOp.register_oot(name='FusedMoE')\nclass AcmeMoE(FusedMoE):\n    pass\n", True),
}


@pytest.mark.parametrize("spelling", sorted(MOES))
def test_calling_a_class_replaced_out_of_tree_builds_the_plugins_class(tmp_path_factory, tmp_path, spelling):
    """CustomOp.__new__ builds what op_registry_oot holds for the called class's __name__
    (vllm/model_executor/custom_op.py), whatever the call passes: a plugin call of FusedMoE with a
    keyword only the plugin's registered class takes (vllm-ascend 0.23's deepseek_v4.py passes
    hash=, tid2eid= to FusedMoE, registered as AscendFusedMoE(*args, **kwargs)) binds that class's
    __init__, not upstream's; with nothing registered that runs, upstream's refuses it."""
    upstream = tmp_path_factory.mktemp("vllm-moe")
    write_tree(upstream, MOE_UPSTREAM)
    source, breaks = MOES[spelling]
    plugin = _plugin(tmp_path, {
        "acme/platform.py": "from vllm.platforms.interface import Platform\n\n\nclass AcmePlatform(Platform):\n    pass\n",
        "acme/ops.py": "from vllm.model_executor.custom_op import CustomOp\nfrom vllm.model_executor.layers.fused_moe import FusedMoE\n\n"
                       "from acme.model import AcmeModel\n\n\n" + source + "\n\ndef register_ops():\n    pass\n",
        "acme/model.py": "from vllm.model_executor.layers.fused_moe import FusedMoE\n\n\nclass AcmeModel:\n    def __init__(self, table):\n"
                         "        self.experts = FusedMoE(8, 2, prefix='experts', tid2eid=table)\n",
    })
    code, doc = _check(plugin, str(upstream))
    # (a call that binds is no finding: plain uses are reported only when something is wrong)
    calls = [f for f in doc["findings"] if f["kind"] == "call" and f["target"].endswith("FusedMoE")]
    assert (len(calls), code) == ((1, 1) if breaks else (0, 0)), doc["findings"]
    if breaks:
        assert calls[0]["breaking"] and calls[0]["status"] == "signature_changed" and "tid2eid" in calls[0]["detail"], calls
    if spelling == "inherited_init":
        assert "builds acme.ops.AcmeMoE" in calls[0]["detail"], calls


STATIC_UPSTREAM = {
    **MOE_UPSTREAM,
    "vllm/model_executor/layers/fused_moe.py": """
        from vllm.model_executor.custom_op import CustomOp

        class FusedMoE(CustomOp):
            @staticmethod
            def select_experts(hidden_states, top_k, global_num_experts=-1):
                return hidden_states

            def forward(self, x):
                return FusedMoE.select_experts(x, 2, global_num_experts=8)
        """,
}
# a staticmethod of upstream's replaced by the plugin's own staticmethod object (sixteenth set V-k2):
# calls through the class or an instance pass no self, so the replacement is judged against them
HOLDERS = {
    "vars_of_holder": ("for name, member in vars(Holder).items():\n        if isinstance(member, staticmethod):\n"
                       "            setattr(FusedMoE, name, member)\n", True),
    "dunder_dict_comprehension": ("[setattr(FusedMoE, n, m) for n, m in Holder.__dict__.items() if isinstance(m, staticmethod)]\n", True),
    "fits": ("for name, member in vars(HolderFits).items():\n        if isinstance(member, staticmethod):\n"
             "            setattr(FusedMoE, name, member)\n", False),
}


@pytest.mark.parametrize("spelling", sorted(HOLDERS))
def test_a_staticmethod_replaced_with_the_plugins_staticmethod_is_judged_against_upstreams_calls(tmp_path_factory, tmp_path, spelling):
    upstream = tmp_path_factory.mktemp("vllm-static")
    write_tree(upstream, STATIC_UPSTREAM)
    loop, breaks = HOLDERS[spelling]
    plugin = _plugin(tmp_path, {
        "acme/platform.py": "from vllm.platforms.interface import Platform\n\n\nclass AcmePlatform(Platform):\n    pass\n",
        "acme/ops.py": ("from vllm.model_executor.layers.fused_moe import FusedMoE\n\n\nclass Holder:\n    target = 'FusedMoE'\n\n"
                        "    @staticmethod\n    def select_experts(hidden_states, top_k):\n        return hidden_states\n\n\n"
                        "class HolderFits:\n    @staticmethod\n    def select_experts(hidden_states, top_k, **kwargs):\n        return hidden_states\n\n\n"
                        "def register_ops():\n    " + loop),
    })
    code, doc = _check(plugin, str(upstream))
    patch = by_target(doc["findings"])["vllm.model_executor.layers.fused_moe.FusedMoE.select_experts"]
    assert patch["breaking"] is breaks and code == (1 if breaks else 0), patch
    if breaks:
        assert "global_num_experts" in patch["detail"] and "fused_moe.py:9" in patch["detail"], patch


# a table entry an `if` on run-time data replaces holds either class (vllm-ascend 0.23.0.post1 utils.py:764-816:
# REGISTERED_ASCEND_OPS["FusedMoE"] = AscendFusedMoE, then AscendFusedMoE310 under `if is_310p():`)
CHOSEN = {
    "assignment": "    OPS = {'FusedMoE': AcmeMoE}\n    if os.environ.get('ACME_SMALL'):\n        OPS['FusedMoE'] = SmallMoE\n",
    "update_after_local_import": ("    OPS = {'FusedMoE': AcmeMoE}\n    if _small():\n        from acme.small import SmallMoE as Small\n\n"
                                  "        OPS.update({'FusedMoE': Small})\n"),
    "global_under_a_decided_if": ("    global OPS\n    OPS = {'FusedMoE': AcmeMoE}\n    if _small():\n        if sys.version_info >= (3, 8):\n"
                                  "            OPS['FusedMoE'] = SmallMoE\n"),
    "if_else": "    OPS = {}\n    if not _small():\n        OPS['FusedMoE'] = AcmeMoE\n    else:\n        OPS['FusedMoE'] = SmallMoE\n",
}


@pytest.mark.parametrize("small_takes_it", [False, True])
@pytest.mark.parametrize("spelling", sorted(CHOSEN))
def test_a_class_a_run_time_test_chooses_is_judged_under_that_test(tmp_path_factory, tmp_path, spelling, small_takes_it):
    """A registered class a run-time test picks (an entry replaced under `if`) may be either:
    a call the other class refuses breaks where the test chooses it, named; when both take it,
    the two registrations cover every run, so upstream's own class (which refuses it) is not
    what gets built."""
    upstream = tmp_path_factory.mktemp("vllm-moe-chosen")
    write_tree(upstream, MOE_UPSTREAM)
    small = "class SmallMoE(FusedMoE):\n" + (_OWN_INIT if small_takes_it else "    pass\n")
    plugin = _plugin(tmp_path, {
        "acme/platform.py": "from vllm.platforms.interface import Platform\n\n\nclass AcmePlatform(Platform):\n    pass\n",
        "acme/small.py": "from vllm.model_executor.layers.fused_moe import FusedMoE\n\n\n" + small,
        "acme/ops.py": ("import os\nimport sys\n\nfrom vllm.model_executor.custom_op import CustomOp\nfrom vllm.model_executor.layers.fused_moe import FusedMoE\n\n"
                        "from acme.model import AcmeModel\nfrom acme.small import SmallMoE\n\nOPS = {}\n\n\nclass AcmeMoE(FusedMoE):\n" + _OWN_INIT
                        + "\n\ndef _small():\n    return os.environ.get('ACME_SMALL') == '1'\n\n\ndef register_ops():\n" + CHOSEN[spelling]
                        + "    for name, op_cls in OPS.items():\n        CustomOp.register_oot(_decorated_op_cls=op_cls, name=name)\n"),
        "acme/model.py": "from vllm.model_executor.layers.fused_moe import FusedMoE\n\n\nclass AcmeModel:\n    def __init__(self, table):\n"
                         "        self.experts = FusedMoE(8, 2, prefix='experts', tid2eid=table)\n",
    })
    code, doc = _check(plugin, str(upstream))
    calls = [f for f in doc["findings"] if f["kind"] == "call" and f["target"].endswith("FusedMoE")]
    if small_takes_it:
        assert (calls, code) == ([], 0), doc["findings"]
    else:
        assert len(calls) == 1 and calls[0]["breaking"] and code == 1, calls
        assert "builds acme.small.SmallMoE" in calls[0]["detail"] and "where " in calls[0]["detail"] and "small" in calls[0]["detail"].lower(), calls


# upstream calls that never run with the plugin active: in a module a platform test keeps out
# (vllm 0.23.0 models/deepseek_v4/__init__.py imports .amd.model only `if current_platform.is_rocm()`),
# or in a model package whose every architecture the plugin registers its own class for
TINY_UPSTREAM = {
    **{k: v for k, v in NORM_UPSTREAM.items() if k != "vllm/model_executor/models/llama.py"},
    "vllm/platforms/__init__.py": "current_platform = None\n",
    "vllm/platforms/interface.py": """
        import enum

        class PlatformEnum(enum.Enum):
            OOT = 1
            ROCM = 2

        class Platform:
            _enum = None

            def is_rocm(self) -> bool:
                return self._enum == PlatformEnum.ROCM
        """,
    "vllm/model_executor/models/registry.py": """
        _TEXT_GENERATION_MODELS = {"TinyForCausalLM": ("vllm.models.tiny", "TinyForCausalLM")}

        class _ModelRegistry:
            def register_model(self, model_arch, model_cls):
                pass

        ModelRegistry = _ModelRegistry()
        """,
    "vllm/models/__init__.py": "",
    "vllm/models/tiny/__init__.py": """
        from vllm.platforms import current_platform

        if current_platform.is_rocm():
            from .amd import TinyForCausalLM
        else:
            from .generic import TinyForCausalLM
        """,
    "vllm/models/tiny/amd.py": """
        from torch import nn
        from vllm.model_executor.layers.layernorm import RMSNorm

        class TinyForCausalLM(nn.Module):
            def __init__(self):
                super().__init__()
                self.norm = RMSNorm()

            def forward(self, h, r):
                return self.norm(h, residual=r)
        """,
}
_TINY_GENERIC = """
from torch import nn
from vllm.model_executor.layers.layernorm import RMSNorm

class TinyBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = RMSNorm()

    def forward(self, h, r):
        return {call}


class TinyForCausalLM(TinyBlock):
    pass
"""
UNRUN = {
    # (the plugin platform's _enum, generic.py's call, the plugin registers its own TinyForCausalLM, an upstream
    #  module loads the package by name too, whether AcmeRMSNorm.forward(self, x) breaks)
    "amd_only_off_platform": ("OOT", "self.norm(h)", False, False, False),
    "amd_only_on_rocm": ("ROCM", "self.norm(h)", False, False, True),
    "generic_calls_it": ("OOT", "self.norm(h, r)", False, False, True),
    "model_replaced": ("OOT", "self.norm(h, residual=r)", True, False, False),
    "model_replaced_but_loaded_by_name": ("OOT", "self.norm(h, r)", True, True, True),
}


@pytest.mark.parametrize("spelling", sorted(UNRUN))
def test_upstream_calls_in_code_the_plugin_keeps_from_running_do_not_break_an_override(tmp_path_factory, tmp_path, spelling):
    enum, call, replaces, by_name, breaks = UNRUN[spelling]
    upstream = tmp_path_factory.mktemp("vllm-tiny")
    write_tree(upstream, {**TINY_UPSTREAM, "vllm/models/tiny/generic.py": _TINY_GENERIC.format(call=call),
                          **({"vllm/tools.py": "import importlib\n\n\ndef load():\n    return importlib.import_module('vllm.models.tiny')\n"} if by_name else {})})
    model = ("from vllm.model_executor.models import ModelRegistry\n\n\ndef register_models():\n"
             "    ModelRegistry.register_model('TinyForCausalLM', 'acme.tiny:AcmeTiny')\n") if replaces else "def register_models():\n    pass\n"
    plugin = _plugin(tmp_path, {
        "acme/platform.py": f"from vllm.platforms.interface import Platform, PlatformEnum\n\n\nclass AcmePlatform(Platform):\n    _enum = PlatformEnum.{enum}\n",
        "acme/tiny.py": "class AcmeTiny:\n    pass\n",
        "acme/ops.py": ("from vllm.model_executor.custom_op import CustomOp\nfrom vllm.model_executor.layers.layernorm import RMSNorm\n\n"
                        "from acme.models import register_models\n\n\n@CustomOp.register_oot(name='RMSNorm')\nclass AcmeRMSNorm(RMSNorm):\n"
                        "    def forward(self, x):\n        return x\n\n\ndef register_ops():\n    register_models()\n"),
        "acme/models.py": model,
    })
    code, doc = _check(plugin, str(upstream))
    found = [f for f in doc["findings"] if f["target"] == "vllm.model_executor.layers.layernorm.RMSNorm.forward"]
    # (an override every call that runs binds is no finding; amd_only_on_rocm shows amd.py's call is seen)
    assert (len(found) == 1 and found[0]["breaking"] and code == 1) if breaks else (found, code) == ([], 0), found


# a constructor that only passes *args, **kwargs on to super().__init__ takes what the next __init__ takes
FORWARDERS = {
    "forwards_only": ("    def __init__(self, *args, **kwargs):\n        super().__init__(*args, **kwargs)\n", True),
    "forwards_then_reads_and_pops": ("    def __init__(self, *args, **kwargs):\n        if kwargs.get('prefix') == 'x':\n            raise ValueError\n"
                                     "        super().__init__(*args, **kwargs)\n        self.n = kwargs['num_experts'] if 'num_experts' in kwargs else args[0]\n"
                                     "        kwargs.pop('prefix', None)\n", True),
    "forwards_through_a_grandparent": ("    pass\n\n\nclass SmallMoE(AcmeBase):\n    def __init__(self, *args, **kwargs):\n        super().__init__(*args, **kwargs)\n", True),
    # negatives: the keyword taken out before the call, or a named parameter for it
    "pops_before_forwarding": ("    def __init__(self, *args, **kwargs):\n        self.table = kwargs.pop('tid2eid', None)\n        super().__init__(*args, **kwargs)\n", False),
    "own_parameter": ("    def __init__(self, *args, tid2eid=None, **kwargs):\n        super().__init__(*args, **kwargs)\n", False),
}


@pytest.mark.parametrize("spelling", sorted(FORWARDERS))
def test_a_registered_class_that_forwards_its_arguments_is_judged_by_the_base_it_forwards_to(tmp_path_factory, tmp_path, spelling):
    """`FusedMoE(8, 2, tid2eid=t)` building a registered class whose __init__ only forwards
    `*args, **kwargs` to super().__init__ (vllm-ascend 0.23.0.post1's AscendFusedMoE310) binds
    upstream's FusedMoE.__init__, which has no tid2eid: breaking; one that takes the keyword out
    first, or names it, takes the call."""
    upstream = tmp_path_factory.mktemp("vllm-moe-forward")
    write_tree(upstream, MOE_UPSTREAM)
    body, breaks = FORWARDERS[spelling]
    registered = "SmallMoE" if "SmallMoE" in body else "AcmeBase"
    plugin = _plugin(tmp_path, {
        "acme/platform.py": "from vllm.platforms.interface import Platform\n\n\nclass AcmePlatform(Platform):\n    pass\n",
        "acme/ops.py": ("from vllm.model_executor.custom_op import CustomOp\nfrom vllm.model_executor.layers.fused_moe import FusedMoE\n\n"
                        "from acme.model import AcmeModel\n\n\nclass AcmeBase(FusedMoE):\n" + body
                        + f"\n\nCustomOp.register_oot(_decorated_op_cls={registered}, name='FusedMoE')\n\n\ndef register_ops():\n    pass\n"),
        "acme/model.py": "from vllm.model_executor.layers.fused_moe import FusedMoE\n\n\nclass AcmeModel:\n    def __init__(self, table):\n"
                         "        self.experts = FusedMoE(8, 2, prefix='experts', tid2eid=table)\n",
    })
    code, doc = _check(plugin, str(upstream))
    calls = [f for f in doc["findings"] if f["kind"] == "call" and f["target"].endswith("FusedMoE")]
    if breaks:
        assert len(calls) == 1 and calls[0]["breaking"] and "tid2eid" in calls[0]["detail"] and code == 1, calls
    else:
        assert (calls, code) == ([], 0), calls


# two classes registered under one key (thirty-third set V-n8): from vLLM 0.17 register_oot asserts
# the key is new (`assert reg_name not in op_registry_oot`), so the second registration raises while
# the plugin loads; 0.11's overwrote it (the last class wins)
DUPLICATE_UPSTREAM = {
    **NORM_UPSTREAM,
    "vllm/model_executor/custom_op.py": """
        from torch import nn

        op_registry_oot = {}

        class CustomOp(nn.Module):
            @classmethod
            def register_oot(cls, _decorated_op_cls=None, name=None):
                def decorator(op_cls):
                    reg_name = name if name is not None else cls.__name__
                    {check}
                    op_registry_oot[reg_name] = op_cls
                    return op_cls

                if _decorated_op_cls is None:
                    return decorator
                return decorator(_decorated_op_cls)
        """,
}
ASSERTS = 'assert reg_name not in op_registry_oot, f"Duplicate op name: {reg_name}"'
TWO_NORMS = "class AcmeRMSNorm(RMSNorm):\n    pass\n\n\nclass AcmeFusedRMSNorm(AcmeRMSNorm):\n    pass\n"
DUPLICATES = {
    "two_bare_decorators": ("@RMSNorm.register_oot\nclass AcmeRMSNorm(RMSNorm):\n    pass\n\n\n"
                            "@RMSNorm.register_oot\nclass AcmeFusedRMSNorm(AcmeRMSNorm):\n    pass\n"),
    "decorator_then_call": ("@CustomOp.register_oot(name='RMSNorm')\nclass AcmeRMSNorm(RMSNorm):\n    pass\n\n\n"
                            "class AcmeFusedRMSNorm(AcmeRMSNorm):\n    pass\n\n\n"
                            "CustomOp.register_oot(_decorated_op_cls=AcmeFusedRMSNorm, name='RMSNorm')\n"),
    "a_table_loop": (TWO_NORMS + "\n\nfor key, op in [('RMSNorm', AcmeRMSNorm), ('RMSNorm', AcmeFusedRMSNorm)]:\n"
                     "    CustomOp.register_oot(name=key)(op)\n"),
}
APART = {
    "distinct_keys": TWO_NORMS + "\n\nCustomOp.register_oot(_decorated_op_cls=AcmeRMSNorm, name='RMSNorm')\n"
                                 "CustomOp.register_oot(_decorated_op_cls=AcmeFusedRMSNorm, name='FusedRMSNorm')\n",
    "either_by_a_switch": (TWO_NORMS + "\n\nif os.environ.get('ACME_FUSED') == '1':\n    RMSNorm.register_oot(AcmeFusedRMSNorm)\n"
                           "else:\n    RMSNorm.register_oot(AcmeRMSNorm)\n"),
}


def _norm_plugin(tmp_path, body: str) -> Path:
    return _plugin(tmp_path, {"acme/platform.py": "from vllm.platforms.interface import Platform\n\n\nclass AcmePlatform(Platform):\n    pass\n",
                              "acme/ops.py": "import os\n\nfrom vllm.model_executor.custom_op import CustomOp\n"
                                             "from vllm.model_executor.layers.layernorm import RMSNorm\n\n\n" + body + "\n\ndef register_ops():\n    pass\n"})


@pytest.mark.parametrize("asserts", [True, False])
@pytest.mark.parametrize("spelling", sorted(DUPLICATES))
def test_a_second_registration_under_one_key_fails_where_the_registry_asserts(tmp_path_factory, tmp_path, spelling, asserts):
    upstream = tmp_path_factory.mktemp("vllm-dup")
    write_tree(upstream, {**DUPLICATE_UPSTREAM, "vllm/model_executor/custom_op.py": DUPLICATE_UPSTREAM["vllm/model_executor/custom_op.py"].replace(
        "{check}", ASSERTS if asserts else "pass")})
    code, doc = _check(_norm_plugin(tmp_path, DUPLICATES[spelling]), str(upstream))
    ops = [f for f in doc["findings"] if f["kind"] == "custom_op"]
    duplicate = [f for f in ops if f["status"] == "duplicate"]
    if asserts:
        assert len(ops) == 2 and len(duplicate) == 1 and duplicate[0]["breaking"] and code == 1, ops
        assert "custom_op.py:" in duplicate[0]["detail"] and "AssertionError" in duplicate[0]["detail"]
    else:
        assert not duplicate and not any(f["breaking"] for f in ops) and code == 0, ops


@pytest.mark.parametrize("spelling", sorted(APART))
def test_registrations_under_different_keys_or_exclusive_branches_are_no_duplicates(tmp_path_factory, tmp_path, spelling):
    upstream = tmp_path_factory.mktemp("vllm-dup")
    write_tree(upstream, {**DUPLICATE_UPSTREAM, "vllm/model_executor/custom_op.py": DUPLICATE_UPSTREAM["vllm/model_executor/custom_op.py"].replace("{check}", ASSERTS)})
    code, doc = _check(_norm_plugin(tmp_path, APART[spelling]), str(upstream))
    assert not any(f["status"] == "duplicate" for f in doc["findings"]) and code == 0, doc["findings"]
