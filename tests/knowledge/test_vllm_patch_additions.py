"""What a patch that sets a name upstream lacks means, and calls a family of classes cannot take
(issue 21). Kinds found false on the real vllm-mindspore 0.5.1 over vllm 0.11.0, a plugin that
patches vLLM from its package __init__ (no entry points):
- `vllm.config.current_platform = ascend_platform`, where vllm 0.11's vllm/config/__init__.py
  names `current_platform` only in functions that import it themselves: the module never reads
  its global, so the patch replaces nothing upstream reads; the plugin's own `from vllm.config
  import current_platform` reads what it added (an extension), and that import works once the
  package's patch has run (`unknown`: import order is not checked), or certainly when the patch
  sits above it in the same module;
- `DPAsyncMPClient.process_engine_outputs = …`, which vllm reads only optionally
  (`getattr(self.__class__, "process_engine_outputs", None)`): an extension;
- and a dead patch stays `missing`: `GPUModelRunner.set_forward_context = …`, which the runner's
  module names (the function `set_forward_context(…)` it imports and calls) but never reads as an
  attribute, and nothing of the plugin reads either: the set changes nothing that runs;
- an override of `QuantizeMethodBase.create_weights` with a KV-cache method's parameters, against
  upstream's `self.quant_method.create_weights(…)` in its linear layers: upstream's own
  FusedMoEMethodBase.create_weights cannot take that call either, so upstream does not make it on
  every subclass: not breaking. Without such a sibling the call may reach it: breaking.
And one found on vllm-ascend 0.11.0 over vllm 0.11.0: a field read through an annotation naming
a marker class (`class AttentionMetadata: pass`) is undecided, not missing.
"""

from __future__ import annotations

from knowledge_support import harness_json, write_tree

UPSTREAM = {
    "vllm/__init__.py": "from .version import __version__\n",
    "vllm/version.py": "__version__ = '0.11.0'\n",
    "vllm/platforms/__init__.py": "current_platform = None\n",
    "vllm/config/__init__.py": """
        def seed_everything(seed):
            from vllm.platforms import current_platform
            current_platform.seed_everything(seed)
        """,
    "vllm/forward_context.py": """
        import contextlib


        @contextlib.contextmanager
        def set_forward_context(context):
            yield context
        """,
    "vllm/runner.py": """
        from vllm.forward_context import set_forward_context


        class GPUModelRunner:
            def execute_model(self, batch):
                with set_forward_context(batch):
                    return batch
        """,
    "vllm/engine.py": """
        class AsyncMPClient:
            def start(self):
                handler = getattr(self.__class__, "process_engine_outputs", None)
                return handler


        class DPAsyncMPClient(AsyncMPClient):
            pass


        class DPLBAsyncMPClient(DPAsyncMPClient):
            @staticmethod
            async def process_engine_outputs(client, outputs):
                return outputs
        """,
    "vllm/quant.py": """
        from abc import abstractmethod


        class QuantizeMethodBase:
            def create_weights(self, layer, *weight_args, **extra_weight_attrs):
                raise NotImplementedError


        class FusedMoEMethodBase(QuantizeMethodBase):
            @abstractmethod
            def create_weights(self, layer, num_experts, hidden_size, params_dtype, **extra_weight_attrs):
                raise NotImplementedError


        class LinearBase:
            def __init__(self, quant_method: QuantizeMethodBase):
                self.quant_method: QuantizeMethodBase = quant_method
                self.quant_method.create_weights(self, 16, [16], 16, 16, "bfloat16", weight_loader=None)
        """,
}

PLUGIN = {
    "pyproject.toml": """
        [project]
        name = "msp"
        version = "0.5.1"

        [project.entry-points."vllm.general_plugins"]
        msp = "msp:register"
        """,
    "msp/__init__.py": """
        import vllm.config
        import vllm.runner
        from vllm.engine import DPAsyncMPClient

        from msp.engine import process_engine_outputs
        from msp.forward import set_forward_context

        vllm.config.current_platform = object()
        platform = vllm.config.current_platform

        vllm.runner.GPUModelRunner.set_forward_context = set_forward_context
        DPAsyncMPClient.process_engine_outputs = staticmethod(process_engine_outputs)


        def register():
            import msp.layers  # noqa: F401
            import msp.quant  # noqa: F401
        """,
    "msp/engine.py": """
        async def process_engine_outputs(client, outputs):
            return outputs
        """,
    "msp/forward.py": """
        def set_forward_context(self, batch):
            return batch
        """,
    "msp/layers.py": """
        from vllm.config import current_platform


        def device():
            return current_platform
        """,
    "msp/quant.py": """
        from vllm.quant import QuantizeMethodBase


        class KVCacheMethod(QuantizeMethodBase):
            def create_weights(self, layer, num_heads, head_size, **extra_weight_attrs):
                return (num_heads, head_size)
        """,
}


def _findings(tmp_path, upstream, plugin=PLUGIN):
    write_tree(tmp_path / "up", upstream)
    write_tree(tmp_path / "plugin", plugin)
    code, doc = harness_json("check", "--plugin", str(tmp_path / "plugin"), "--upstream", str(tmp_path / "up"), "--baseline", "none")
    return code, {(f["kind"], f["target"], f["file"]): f for f in doc["findings"]}


def test_names_a_patch_adds_are_the_plugins_own_or_undecided(tmp_path):
    code, found = _findings(tmp_path, UPSTREAM)
    added = found["patch", "vllm.config.current_platform", "msp/__init__.py"]
    assert (added["status"], added["breaking"]) == ("extension", False), added
    assert "vllm.config never reads a global 'current_platform'" in added["detail"] and "which it reads (msp/__init__.py:9)" in added["detail"], added
    imported = found["import", "vllm.config.current_platform", "msp/layers.py"]
    assert (imported["status"], imported["breaking"]) == ("unknown", False), imported
    assert "the plugin sets it itself (msp/__init__.py:8)" in imported["detail"], imported
    # read on the next line of the module that set it: there, certainly
    assert ("reference", "vllm.config.current_platform", "msp/__init__.py") not in found, found.get(("reference", "vllm.config.current_platform", "msp/__init__.py"))
    optional = found["patch", "vllm.engine.DPAsyncMPClient.process_engine_outputs", "msp/__init__.py"]
    assert (optional["status"], optional["breaking"]) == ("extension", False), optional
    assert "only where it is there (vllm/engine.py:3)" in optional["detail"], optional
    dead = found["patch", "vllm.runner.GPUModelRunner.set_forward_context", "msp/__init__.py"]
    assert (dead["status"], dead["breaking"]) == ("missing", True), dead
    kv = found["subclass", "vllm.quant.QuantizeMethodBase.create_weights", "msp/quant.py"]
    assert not kv["breaking"], kv
    assert "may not reach it: vllm/quant.py:18 (self.quant_method): upstream's own vllm.quant.FusedMoEMethodBase.create_weights" in kv["detail"], kv
    assert code == 1, found

    # read nowhere else: the plugin's own import of it is the use
    unread = {**PLUGIN, "msp/__init__.py": PLUGIN["msp/__init__.py"].replace("platform = vllm.config.current_platform", "")}
    code, found = _findings(tmp_path / "imports", UPSTREAM, unread)
    added = found["patch", "vllm.config.current_platform", "msp/__init__.py"]
    assert added["status"] == "extension" and "which it imports (msp/layers.py:1)" in added["detail"], added


def test_a_call_only_a_concrete_upstream_class_refuses_may_reach_the_override(tmp_path):
    # a concrete class refusing the call is no interface of a family (sglang 0.5.23's
    # PageInterleaveDSATokenToKVPool.get_cpu_copy lacks the req_pool_index its allocator passes)
    quant = UPSTREAM["vllm/quant.py"].replace(
        "@abstractmethod\n            def create_weights(self, layer, num_experts, hidden_size, params_dtype, **extra_weight_attrs):",
        "def create_weights(self, layer, num_experts, hidden_size, params_dtype, **extra_weight_attrs):")
    code, found = _findings(tmp_path, {**UPSTREAM, "vllm/quant.py": quant})
    kv = found["subclass", "vllm.quant.QuantizeMethodBase.create_weights", "msp/quant.py"]
    assert (kv["status"], kv["breaking"]) == ("signature_changed", True), kv
    assert "upstream calls it at vllm/quant.py:17" in kv["detail"], kv
    assert code == 1


def test_a_field_of_a_marker_class_annotation_is_undecided(tmp_path):
    # vllm 0.11: `class AttentionMetadata: pass` annotates every backend's own metadata object;
    # vllm-ascend 0.11.0's torchair DeepSeek reads `attn_metadata.num_decodes` off its own
    # AscendMLATorchairMetadata (derived from nothing) through that annotation. A class that
    # declares fields, none of them this one, still makes the read `missing`.
    upstream = {**UPSTREAM, "vllm/attention.py": """
        class AttentionMetadata:
            pass


        class CommonAttentionMetadata:
            seq_lens: list
        """}
    plugin = {**PLUGIN, "msp/layers.py": """
        from vllm.attention import AttentionMetadata, CommonAttentionMetadata


        def decodes(attn_metadata: AttentionMetadata) -> int:
            return attn_metadata.num_decodes


        def prefills(common: CommonAttentionMetadata) -> int:
            return common.num_prefills
        """}
    code, found = _findings(tmp_path, upstream, plugin)
    marker = found["field", "vllm.attention.AttentionMetadata.num_decodes", "msp/layers.py"]
    assert (marker["status"], marker["breaking"]) == ("unknown", False), marker
    assert "declares nothing at all" in marker["detail"], marker
    declared = found["field", "vllm.attention.CommonAttentionMetadata.num_prefills", "msp/layers.py"]
    assert (declared["status"], declared["breaking"]) == ("missing", True), declared
    assert code == 1
