"""Kinds found by checking real vLLM plugin releases against the vLLM release their next release
was ported to (benchmarks/vllm_port_recall.py), each on a small tree shaped like the real code:
- vllm 0.24 turned `FusedMoE` from a class into a factory `def` (fused_moe/layer.py); vllm-rbln
  0.11.1.post1 still derives `RBLNFusedMoE(FusedMoE)`, tests `isinstance(layer, FusedMoE)` and
  reads `FusedMoE.make_expert_params_mapping`: the class statement and isinstance raise TypeError,
  the read AttributeError (certain when the baseline had the member on the class; without one,
  undecided). A decorated function (an lru_cache's cache_clear) or one upstream sets an attribute
  on keeps its attributes undecided;
- an override of a method upstream dropped from the base (vllm 0.30's attention backend lost
  get_kv_cache_shape) that the plugin's own model runner still calls is not dead: undecided, not
  breaking; one nothing calls any more (a KV cache manager hook upstream stopped calling) stays
  breaking, whatever the plugin calls by that name on an unrelated upstream class (vllm-rbln's
  `self.coordinator.allocate_new_computed_blocks`);
- a positional argument that lands on another parameter while the call still binds (vllm 0.30
  replaced `compute_nixl_compatibility_hash`'s required `cross_layers_blocks` by an optional
  `transfer_mode`; vllm-rbln passes the bool third): reported, not breaking; a rename in place
  is not;
- an override narrower than what upstream passes, where upstream calls it on the elements of a
  tuple built from an annotated factory (vllm 0.30's KV cache coordinator: `for manager in
  self.single_type_managers: manager.cache_blocks(…, replay_boundaries=…)`, the managers made by
  `get_manager_for_kv_cache_spec(…) -> SingleTypeKVCacheManager`): the calls are placed, and it
  breaks;
- a plugin method called only under guards false on the release cannot fail (vllm-spyre's
  `_setup_legacy_profiler`, called only when `vllm.profiler.wrapper` is absent or
  `getattr(envs, "VLLM_TORCH_PROFILER_DIR", None)` is set, reads the variable 0.17 dropped); one
  called unguarded stays breaking;
- names a plugin sets with torch's `register_parameter` / `register_buffer` (on self, or on the
  layer an upstream quantization method hands it) are there when it reads them back.
"""

from __future__ import annotations

import pytest
from knowledge_support import VLLM_PLATFORM_TREE, harness_json, write_tree

MOE = "vllm.model_executor.layers.fused_moe"

OLD = {
    **VLLM_PLATFORM_TREE,
    "vllm/version.py": "__version__ = '0.22.0'\n",
    "vllm/model_executor/__init__.py": "",
    "vllm/model_executor/layers/__init__.py": "",
    "vllm/model_executor/layers/fused_moe/__init__.py": "from .layer import FusedMoE, fused_topk, tuned_config\n",
    "vllm/model_executor/layers/fused_moe/layer.py": """
        import functools


        class FusedMoE:
            def __init__(self, num_experts):
                self.num_experts = num_experts

            @classmethod
            def make_expert_params_mapping(cls):
                return []


        def fused_topk(x):
            return x


        fused_topk.supports_grouped = True


        @functools.cache
        def tuned_config():
            return {}
        """,
    "vllm/attention/__init__.py": "",
    "vllm/attention/backend.py": """
        class AttentionBackend:
            @staticmethod
            def get_kv_cache_shape(num_blocks, block_size):
                raise NotImplementedError

            @staticmethod
            def get_name():
                raise NotImplementedError


        class KVCacheManager:
            def allocate_new_computed_blocks(self, request):
                pass


        class KVCacheCoordinator:
            def allocate_new_computed_blocks(self, request):
                pass
        """,
    "vllm/envs.py": """
        VLLM_TORCH_PROFILER_DIR = None
        VLLM_LOGGING_LEVEL = "INFO"
        """,
    "vllm/v1/core/__init__.py": "",
    "vllm/v1/core/managers.py": """
        class SingleTypeKVCacheManager:
            def cache_blocks(self, request, num_tokens):
                pass


        def get_manager_for_kv_cache_spec(spec) -> SingleTypeKVCacheManager:
            return SingleTypeKVCacheManager()
        """,
    "vllm/v1/core/coordinator.py": """
        from vllm.v1.core.managers import get_manager_for_kv_cache_spec


        class KVCacheCoordinator:
            def __init__(self, specs):
                self.single_type_managers = tuple(get_manager_for_kv_cache_spec(spec) for spec in specs)

            def cache_blocks(self, request, num_computed_tokens):
                for manager in self.single_type_managers:
                    manager.cache_blocks(request, num_computed_tokens)
        """,
    "vllm/distributed/__init__.py": "",
    "vllm/distributed/nixl.py": """
        def compute_nixl_compatibility_hash(vllm_config, attn_backend_name, cross_layers_blocks):
            return ""


        def register_kv_caches(kv_caches, block_size):
            pass
        """,
    "vllm/model_executor/layers/linear.py": """
        import torch


        class LinearBase(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.bias = None
        """,
}


def _edit(path: str, *pairs: tuple[str, str]) -> str:
    """OLD's file at `path` with each (old, new) text replaced: what the release changed."""
    text = OLD[path]
    for old, new in pairs:
        assert old in text, (path, old)
        text = text.replace(old, new)
    return text


NEW = {
    **OLD,
    "vllm/version.py": "__version__ = '0.24.0'\n",
    "vllm/envs.py": _edit("vllm/envs.py", ("VLLM_TORCH_PROFILER_DIR = None\n", "")),
    "vllm/profiler/__init__.py": "",
    "vllm/profiler/wrapper.py": "class TorchProfilerWrapper:\n    pass\n",
    "vllm/v1/core/managers.py": _edit("vllm/v1/core/managers.py", ("num_tokens):", "num_tokens, replay_boundaries=None):")),
    "vllm/v1/core/coordinator.py": _edit(
        "vllm/v1/core/coordinator.py",
        ("num_computed_tokens):", "num_computed_tokens, boundaries):"),
        ("for manager in self", "for i, manager in enumerate(self"), ("managers:", "managers):"),
        ("num_computed_tokens)\n", "num_computed_tokens, replay_boundaries=boundaries)\n")),
    "vllm/distributed/nixl.py": _edit("vllm/distributed/nixl.py", ("cross_layers_blocks", 'transfer_mode="pull"'), ("block_size", "page_size")),
    "vllm/attention/backend.py": _edit(
        "vllm/attention/backend.py",
        ("""            @staticmethod
            def get_kv_cache_shape(num_blocks, block_size):
                raise NotImplementedError

""", ""),
        ("""        class KVCacheManager:
            def allocate_new_computed_blocks(self, request):
                pass
""", """        class KVCacheManager:
            pass
""")),
    "vllm/model_executor/layers/fused_moe/layer.py": _edit(
        "vllm/model_executor/layers/fused_moe/layer.py",
        ("class FusedMoE:", "class FusedMoEBase:"),
        ("""                return []
""", """                return []


        def FusedMoE(*args, **kwargs):
            return FusedMoEBase(*args, **kwargs)
""")),
}


PLUGIN = {
    "pyproject.toml": """
        [project]
        name = "rp"
        version = "0.1"

        [project.entry-points."vllm.platform_plugins"]
        rp = "rp:register"
        """,
    "rp/__init__.py": """
        def register():
            import rp.moe
            import rp.linear
            import rp.attention
            import rp.nixl
            import rp.kv_cache
            import rp.worker
            return "rp.platform.RPlatform"
        """,
    "rp/platform.py": """
        from vllm.platforms.interface import Platform


        class RPlatform(Platform):
            device_name = "rbln"
        """,
    "rp/moe.py": """
        from vllm.model_executor.layers.fused_moe import FusedMoE, fused_topk, tuned_config


        class RBLNFusedMoE(FusedMoE):
            pass


        def is_moe(layer):
            return isinstance(layer, (FusedMoE, int))


        def expert_mapping():
            return FusedMoE.make_expert_params_mapping()


        def grouped():
            tuned_config.cache_clear()
            return fused_topk.supports_grouped
        """,
    "rp/attention.py": """
        from vllm.attention.backend import AttentionBackend, KVCacheCoordinator, KVCacheManager


        class RBLNBackend(AttentionBackend):
            @staticmethod
            def get_name():
                return "RBLN"

            @staticmethod
            def get_kv_cache_shape(num_blocks, block_size):
                return (num_blocks, block_size)


        class RBLNKVCacheManager(KVCacheManager):
            def allocate_new_computed_blocks(self, request):
                request.blocks = []


        def allocate(backend):
            return backend.get_kv_cache_shape(4, 16)


        def grow(coordinator: KVCacheCoordinator, request):
            coordinator.allocate_new_computed_blocks(request)  # the coordinator's own method


        class RBLNCoordinator(KVCacheCoordinator):
            pass


        class RBLNKVCacheManagerFront:
            def __init__(self):
                self.coordinator = RBLNCoordinator()

            def allocate(self, request):
                self.coordinator.allocate_new_computed_blocks(request)  # the plugin's coordinator, not a manager
        """,
    "rp/nixl.py": """
        from vllm.distributed.nixl import compute_nixl_compatibility_hash, register_kv_caches


        def handshake(config):
            register_kv_caches({}, 16)
            return compute_nixl_compatibility_hash(config, "RBLN", True)
        """,
    "rp/kv_cache.py": """
        from vllm.v1.core.managers import SingleTypeKVCacheManager


        class RBLNManager(SingleTypeKVCacheManager):
            def cache_blocks(self, request, num_tokens):
                request.cached = num_tokens
        """,
    "rp/worker.py": """
        import importlib.util

        from vllm import envs


        class RWorker:
            def init_profiler(self):
                if importlib.util.find_spec("vllm.profiler.wrapper") is None:
                    return self._setup_legacy_profiler()
                if getattr(envs, "VLLM_TORCH_PROFILER_DIR", None) is not None:
                    return self._setup_legacy_profiler()
                return self._log_level()

            def _setup_legacy_profiler(self):
                return envs.VLLM_TORCH_PROFILER_DIR

            def _log_level(self):
                return envs.VLLM_TORCH_PROFILER_DIR or envs.VLLM_LOGGING_LEVEL
        """,
    "rp/linear.py": """
        import torch
        from vllm.model_executor.layers.linear import LinearBase


        class RBLNLinear(LinearBase):
            def __init__(self):
                super().__init__()
                self.register_parameter("weight_scale", torch.nn.Parameter(torch.ones(1)))
                self.register_buffer("cos_cache", torch.zeros(1))

            def forward(self, x):
                return x * self.weight_scale + self.cos_cache


        def process_weights_after_loading(layer: LinearBase):
            layer.register_parameter("input_scale", None)
            return layer.input_scale
        """,
}


@pytest.fixture(scope="module")
def trees(tmp_path_factory):
    root = tmp_path_factory.mktemp("port-kinds")
    write_tree(root / "old", OLD)
    write_tree(root / "new", NEW)
    write_tree(root / "plugin", PLUGIN)
    return root


def check(trees, upstream: str, baseline: str) -> tuple[int, dict[tuple[str, int], dict]]:
    code, doc = harness_json("check", "--plugin", str(trees / "plugin"), "--upstream", str(trees / upstream), "--baseline", baseline)
    return code, {(f["file"], f["line"]): f for f in doc["findings"] if f["status"] not in ("ok", "inherited")}


def test_a_class_upstream_turned_into_a_function_breaks_what_needs_a_class(trees):
    code, found = check(trees, "new", str(trees / "old"))
    assert code == 1
    base, isinstance_, member = found[("rp/moe.py", 4)], found[("rp/moe.py", 9)], found[("rp/moe.py", 13)]
    for finding in (base, isinstance_, member):
        assert finding["breaking"] and finding["status"] == "missing", finding
    assert "is a function in" in base["detail"] and "layer.py:13" in base["detail"] and "(a class in" in base["detail"]
    assert "the class statement raises TypeError" in base["detail"], base["detail"]
    assert "isinstance(layer, (FusedMoE, int)) raises TypeError" in isinstance_["detail"], isinstance_["detail"]
    assert member["target"] == f"{MOE}.FusedMoE.make_expert_params_mapping"
    assert "no attribute 'make_expert_params_mapping'" in member["detail"], member["detail"]
    # a decorated function's attributes, and one upstream sets on its function, stay undecided
    assert not [f for (file, line), f in found.items() if file == "rp/moe.py" and line > 13 and f["breaking"]], found


def test_on_the_release_where_it_is_a_class_nothing_is_reported(trees):
    code, found = check(trees, "old", "none")
    assert not [f for (file, _), f in found.items() if file == "rp/moe.py" and f["breaking"]], found
    assert code == 0, found


def test_without_a_baseline_a_member_read_through_the_function_is_undecided(trees):
    code, found = check(trees, "new", "none")
    assert code == 1 and found[("rp/moe.py", 4)]["breaking"] and found[("rp/moe.py", 9)]["breaking"]
    assert not found.get(("rp/moe.py", 13), {}).get("breaking"), found.get(("rp/moe.py", 13))


def test_names_registered_with_torch_are_members_the_plugin_wrote(trees):
    _, found = check(trees, "new", "none")
    assert not [f for (file, _), f in found.items() if file == "rp/linear.py"], found


def test_an_override_upstream_dropped_that_the_plugin_still_calls_is_not_dead(trees):
    _, found = check(trees, "new", str(trees / "old"))
    still_called = found[("rp/attention.py", 10)]
    assert still_called["status"] == "unknown" and not still_called["breaking"], still_called
    assert "the plugin calls it itself (rp/attention.py:20)" in still_called["detail"], still_called["detail"]
    lost = found[("rp/attention.py", 15)]
    assert lost["status"] == "not_on_base" and lost["breaking"], lost


def test_a_positional_argument_that_now_fills_another_parameter_is_reported(trees):
    code, found = check(trees, "new", str(trees / "old"))
    shifted = found[("rp/nixl.py", 6)]
    assert shifted["status"] == "signature_changed" and not shifted["breaking"], shifted
    assert "argument 3 now fills 'transfer_mode' (was 'cross_layers_blocks'" in shifted["detail"], shifted["detail"]
    assert ("rp/nixl.py", 5) not in found  # block_size -> page_size: a rename in place


def test_an_override_called_on_the_elements_of_a_tuple_of_annotated_results_is_placed(trees):
    code, found = check(trees, "new", "none")
    narrowed = found[("rp/kv_cache.py", 5)]
    assert narrowed["breaking"] and narrowed["status"] == "signature_changed", narrowed
    assert "replay_boundaries" in narrowed["detail"] and "coordinator.py:10" in narrowed["detail"], narrowed["detail"]
    _, before = check(trees, "old", "none")
    assert ("rp/kv_cache.py", 5) not in before or not before[("rp/kv_cache.py", 5)]["breaking"]


def test_a_method_called_only_under_guards_false_on_the_release_cannot_fail(trees):
    _, found = check(trees, "new", "none")
    guarded, unguarded = found[("rp/worker.py", 15)], found[("rp/worker.py", 18)]
    assert guarded["status"] == "missing" and not guarded["breaking"], guarded
    assert "which nothing calls" in guarded["detail"], guarded["detail"]
    assert unguarded["status"] == "missing" and unguarded["breaking"], unguarded
