"""An override upstream cannot call on the plugin's object does not break it (issue 21). Found on
tpu-inference 0.30.0 over vllm 0.30.0's DeepseekV4Attention (models/deepseek_v4/attention.py), whose
only call of `forward_mqa` sits in a method reached through a bound method the layer keeps on itself
(`self._prepare_and_attn_fn = self._prepare_and_attn`, called in `forward`); the plugin's layer
overrides `forward` and calls its own `forward_mqa(…, topk_indices=…)`. Three readings made that
upstream call certain, each wrong:
- a bound method kept on self and called as `self.<alias>(…)` was an unplaced reference (anything
  may call it), not a call from `forward`;
- a method of a class over torch.nn.Module counted as called implicitly, though nn.Module calls
  only the methods it defines itself (`forward`, ...), not `forward_mqa`;
- the name in a docstring (`(i.e. "forward_mqa")`) or a comment counted as a use by name.
A layer that keeps upstream's `forward` still breaks: the call reaches it.
"""

from __future__ import annotations

from knowledge_support import by_target, harness_json, write_tree

UPSTREAM = {
    "vllm/__init__.py": "from .version import __version__\n",
    "vllm/version.py": "__version__ = '0.30.0'\n",
    "vllm/layers.py": '''
        import torch


        class Attention(torch.nn.Module):
            """Sparse MLA. The data-movement friendly approach (i.e. "forward_mqa") reads the cache."""

            def __init__(self):
                super().__init__()
                self._attn_fn = self._prepare_and_attn  # eager or compiled, chosen at init

            def forward(self, x):
                return self._attn_fn(x)

            def _prepare_and_attn(self, x):
                # the sparse indexer, then self.forward_mqa writes the output
                return self.forward_mqa(x, None, None, None)

            def forward_mqa(self, q, kv, positions, output):
                return q
        ''',
}

PLUGIN = {
    "pyproject.toml": """
        [project]
        name = "tp"
        version = "0.30.0"

        [project.entry-points."vllm.general_plugins"]
        tp = "tp:register"
        """,
    "tp/__init__.py": """
        def register():
            import tp.attention  # noqa: F401
        """,
    "tp/attention.py": """
        from vllm.layers import Attention


        class TpuAttention(Attention):
            def forward(self, x):
                return self.forward_mqa(x, None, None, None, topk_indices=None)

            def forward_mqa(self, q, kv, positions, output, *, topk_indices):
                return q


        class KeepsForward(Attention):
            def forward_mqa(self, q, kv, positions, output, *, topk_indices):
                return q
        """,
}


def test_an_override_only_a_replaced_method_reaches_does_not_break(tmp_path):
    write_tree(tmp_path / "up", UPSTREAM)
    write_tree(tmp_path / "plugin", PLUGIN)
    code, doc = harness_json("check", "--plugin", str(tmp_path / "plugin"), "--upstream", str(tmp_path / "up"), "--baseline", "none")
    overrides = {f["file"] + ":" + str(f["line"]): f for f in doc["findings"] if f["target"] == "vllm.layers.Attention.forward_mqa"}
    replaced = overrides["tp/attention.py:8"]
    assert (replaced["status"], replaced["breaking"]) == ("signature_changed", False), replaced
    assert "upstream calls that cannot reach it: vllm/layers.py:16 (self)" in replaced["detail"], replaced
    kept = overrides["tp/attention.py:13"]
    assert (kept["status"], kept["breaking"]) == ("signature_changed", True), kept
    assert "vllm/layers.py:16" in kept["detail"], kept
    assert code == 1


def test_a_call_reached_only_through_unplaced_calls_is_undecided(tmp_path):
    # vllm 0.30's CPU custom op looks the layer up by name and calls its kept method: it may be
    # the plugin's layer or not, so the one failing call is not known to run on it
    layers = UPSTREAM["vllm/layers.py"] + """

        def cpu_prepare_and_attn(x, layer_name, layers):
            self = layers[layer_name]
            return self._attn_fn(x)
        """
    write_tree(tmp_path / "up", {**UPSTREAM, "vllm/layers.py": layers})
    write_tree(tmp_path / "plugin", PLUGIN)
    code, doc = harness_json("check", "--plugin", str(tmp_path / "plugin"), "--upstream", str(tmp_path / "up"), "--baseline", "none")
    overrides = {f["file"] + ":" + str(f["line"]): f for f in doc["findings"] if f["target"] == "vllm.layers.Attention.forward_mqa"}
    replaced = overrides["tp/attention.py:8"]
    assert (replaced["status"], replaced["breaking"]) == ("unknown", False), replaced
    assert "reach it only through calls that could not be placed: vllm/layers.py:16 (self)" in replaced["detail"], replaced
    assert overrides["tp/attention.py:13"]["breaking"]  # upstream's own forward still calls it there
    assert code == 1


BACKENDS = {
    "vllm/__init__.py": "from .version import __version__\n",
    "vllm/version.py": "__version__ = '0.23.0'\n",
    "vllm/backend.py": """
        class AttentionBackend:
            @staticmethod
            def get_kv_cache_shape(num_blocks, block_size, cache_dtype_str="auto"):
                raise NotImplementedError

            @classmethod
            def get_kv_cache_block_dim(cls, block_size, cache_dtype_str="auto"):
                shape = cls.get_kv_cache_shape(1234567, block_size, cache_dtype_str=cache_dtype_str)
                return shape.index(1234567)


        def zero_blocks(group):
            return group.backend.get_kv_cache_block_dim(16)
        """,
}

NPU = {
    "pyproject.toml": """
        [project]
        name = "npu"
        version = "0.23.0"

        [project.entry-points."vllm.general_plugins"]
        npu = "npu:register"
        """,
    "npu/__init__.py": """
        def register():
            import npu.backend  # noqa: F401
        """,
    "npu/backend.py": """
        from vllm.backend import AttentionBackend


        class NPUBackend(AttentionBackend):
            @staticmethod
            def get_kv_cache_shape(num_blocks, block_size, cache_type=""):
                return (num_blocks, block_size)
        """,
}


def test_a_classmethod_only_unplaced_receivers_call_does_not_make_a_rename_certain(tmp_path):
    # vllm 0.23: get_kv_cache_block_dim passes cache_dtype_str= to cls.get_kv_cache_shape, and is
    # itself called only as `group.backend.get_kv_cache_block_dim(…)` (vllm-ascend renames the
    # parameter cache_type); once the plugin calls it on its own backend, the call is placed
    write_tree(tmp_path / "up", BACKENDS)
    write_tree(tmp_path / "plugin", NPU)
    code, doc = harness_json("check", "--plugin", str(tmp_path / "plugin"), "--upstream", str(tmp_path / "up"), "--baseline", "none")
    renamed = by_target(doc["findings"])["vllm.backend.AttentionBackend.get_kv_cache_shape"]
    assert (renamed["status"], renamed["breaking"]) == ("signature_changed", False), renamed
    assert "reach it only through calls that could not be placed: vllm/backend.py:8 (cls)" in renamed["detail"], renamed
    assert code == 0

    calls = {**NPU, "npu/__init__.py": NPU["npu/__init__.py"] + "\n            from npu.backend import NPUBackend\n\n            NPUBackend.get_kv_cache_block_dim(16)\n"}
    write_tree(tmp_path / "plugin2", calls)
    code, doc = harness_json("check", "--plugin", str(tmp_path / "plugin2"), "--upstream", str(tmp_path / "up"), "--baseline", "none")
    renamed = by_target(doc["findings"])["vllm.backend.AttentionBackend.get_kv_cache_shape"]
    assert (renamed["status"], renamed["breaking"]) == ("signature_changed", True), renamed
    assert "vllm/backend.py:8" in renamed["detail"], renamed
    assert code == 1


POOLED = {
    "vllm/__init__.py": "from .version import __version__\n",
    "vllm/version.py": "__version__ = '0.23.0'\n",
    "vllm/backends.py": """
        class AttentionBackend:
            @staticmethod
            def get_kv_cache_shape(num_blocks, block_size, cache_dtype_str="auto"):
                raise NotImplementedError


        class FlashBackend(AttentionBackend):
            @staticmethod
            def get_kv_cache_shape(num_blocks, block_size, cache_dtype_str="auto"):
                return (num_blocks, block_size)


        def pooled(underlying: AttentionBackend, pool: int):
            supported = tuple(b for b in (FlashBackend,) if b is not None)
            if not issubclass(underlying, supported):
                raise NotImplementedError(f"{underlying} is not supported")
            return {"get_kv_cache_shape": lambda n, b, c: underlying.get_kv_cache_shape(n, b * pool, c)}
        """,
}


def test_a_call_after_a_check_the_plugin_class_fails_does_not_reach_it(tmp_path):
    # vllm 0.23 whisper_causal.py: `if not issubclass(underlying_attn_backend, _SUPPORTED_BACKENDS):
    # raise`, then a lambda calls underlying_attn_backend.get_kv_cache_shape with five positional
    # arguments; vllm-ascend's DSA backend (not one of those) takes four
    plugin = {**NPU, "npu/backend.py": """
        from vllm.backends import AttentionBackend, FlashBackend


        class NPUBackend(AttentionBackend):
            @staticmethod
            def get_kv_cache_shape(num_blocks, block_size):
                return (num_blocks, block_size)


        class NPUFlash(FlashBackend):
            @staticmethod
            def get_kv_cache_shape(num_blocks, block_size):
                return (num_blocks, block_size)
        """}
    write_tree(tmp_path / "up", POOLED)
    write_tree(tmp_path / "plugin", plugin)
    code, doc = harness_json("check", "--plugin", str(tmp_path / "plugin"), "--upstream", str(tmp_path / "up"), "--baseline", "none")
    found = {f["target"]: f for f in doc["findings"] if f["kind"] == "subclass"}
    npu = found["vllm.backends.AttentionBackend.get_kv_cache_shape"]
    assert not npu["breaking"], npu
    assert "upstream calls that cannot reach it: vllm/backends.py:17 (underlying)" in npu["detail"], npu
    flash = found["vllm.backends.FlashBackend.get_kv_cache_shape"]
    assert flash["breaking"] and "vllm/backends.py:17" in flash["detail"], flash
    assert code == 1


MLA = {
    "vllm/__init__.py": "from .version import __version__\n",
    "vllm/version.py": "__version__ = '0.23.0'\n",
    "vllm/mla.py": """
        class MLAAttentionImpl:
            def forward_mha(self, q, kv_c_normed, k_pe, kv_cache, attn_metadata, k_scale, output):
                raise NotImplementedError


        class MLAAttention:
            def __init__(self, impl):
                self.impl = impl

            def forward_impl(self, q, kv, k_pe, cache, meta, scale, output):
                self.impl.forward_mha(q, kv, k_pe, cache, meta, scale, output=output)
        """,
}

STUB = {**NPU, "npu/backend.py": '''
    from vllm.mla import MLAAttentionImpl


    class NPUMLAImpl(MLAAttentionImpl):
        def forward_mha(self, layer_name, hidden_states, kv_cache, attn_metadata, need_gather_q_kv=False, output=None):
            """Not supported on NPU."""
            raise NotImplementedError("forward_mha is not supported for MLA attention. Use forward() instead.")
    '''}


def test_an_override_that_only_raises_is_not_compared(tmp_path):
    # vllm-ascend 0.23.0 AscendMLAImpl.forward_mha(self, layer_name, hidden_states, kv_cache,
    # attn_metadata, need_gather_q_kv=False, output=None) stubs the abstract method with
    # `raise NotImplementedError`: a call fails whatever its arguments, so the parameters that no
    # longer fit vllm's call change nothing (vllm calls it as `self.impl.forward_mha(…)`, on a
    # receiver no scan places). The same parameters over a real body stay reported.
    working = {**STUB, "npu/backend.py": STUB["npu/backend.py"] + '''

    class Working(MLAAttentionImpl):
        def forward_mha(self, layer_name, hidden_states, kv_cache, attn_metadata, need_gather_q_kv=False, output=None):
            return hidden_states
    '''}
    write_tree(tmp_path / "up", MLA)
    write_tree(tmp_path / "plugin", working)
    code, doc = harness_json("check", "--plugin", str(tmp_path / "plugin"), "--upstream", str(tmp_path / "up"), "--baseline", "none")
    found = {f["line"]: f for f in doc["findings"] if f["target"] == "vllm.mla.MLAAttentionImpl.forward_mha"}
    assert sorted(found) == [11], found  # the stub at line 5 is ok: not reported
    assert (found[11]["status"], found[11]["breaking"]) == ("unknown", False), found[11]
    assert "vllm/mla.py:11 (self.impl)" in found[11]["detail"], found[11]


def test_a_stub_upstream_certainly_calls_is_still_reported(tmp_path):
    # a stub's parameters decide nothing, but a call upstream certainly makes of it fails all the
    # same: the base's own `self.forward_mha(…)` in a method the plugin class inherits
    placed = {**MLA, "vllm/mla.py": MLA["vllm/mla.py"].replace(
        "                raise NotImplementedError\n",
        "                raise NotImplementedError\n\n"
        "            def forward(self, q, kv, k_pe, cache, meta, scale, output):\n"
        "                return self.forward_mha(q, kv, k_pe, cache, meta, scale, output=output)\n", 1)}
    write_tree(tmp_path / "up", placed)
    write_tree(tmp_path / "plugin", STUB)
    code, doc = harness_json("check", "--plugin", str(tmp_path / "plugin"), "--upstream", str(tmp_path / "up"), "--baseline", "none")
    stub = by_target(doc["findings"])["vllm.mla.MLAAttentionImpl.forward_mha"]
    assert (stub["status"], stub["breaking"]) == ("signature_changed", True), stub
    assert "upstream calls it at vllm/mla.py:6" in stub["detail"], stub
    assert code == 1


PROPOSERS = {
    "vllm/__init__.py": "from .version import __version__\n",
    "vllm/version.py": "__version__ = '0.23.0'\n",
    "vllm/proposers.py": """
        class BaseProposer:
            def propose(self, tokens):
                return self.build_first_pass(len(tokens), tokens, None)

            def build_first_pass(self, num_tokens, tokens, embeds):
                return tokens


        class NgramProposer:
            def propose(self, tokens):
                return tokens


        class Runner:
            def take_draft(self, tokens):
                return self.drafter.propose(tokens)
        """,
}

RUNNER = """
        from vllm.proposers import BaseProposer, NgramProposer


        class NPUNgram(NgramProposer):
            pass


        class NPUDflash(BaseProposer):
            def build_first_pass(self, tokens):
                return tokens

            def _propose(self, tokens):
                return self.build_first_pass(tokens)


        class NPURunner:
            def take_draft(self, tokens):
                if isinstance(self.drafter, NPUNgram):
                    return self.drafter.propose(tokens)
                assert isinstance(self.drafter, NPUDflash)
                return self.drafter._propose(tokens)
        """


def test_a_plugin_call_under_an_isinstance_check_of_another_class_does_not_run_the_base_method(tmp_path):
    # vllm-ascend 0.23.0: AscendDflashProposer.build_model_inputs_first_pass(self,
    # num_input_tokens) drops two of the base's parameters; upstream's SpecDecodeBaseProposer.propose
    # calls it with three, but the plugin's model runner calls `self.drafter.propose(…)` only
    # under `isinstance(self.drafter, AscendNgramProposer)` (and other non-Eagle proposers) and
    # runs its Eagle-family drafters through its own `_propose`; upstream's runner calls
    # `self.drafter.propose(…)` on a drafter it cannot type. Undecided, not breaking. A plugin
    # call without the check may reach the base method on the Dflash drafter: breaking.
    write_tree(tmp_path / "up", PROPOSERS)
    write_tree(tmp_path / "plugin", {**NPU, "npu/backend.py": RUNNER})
    code, doc = harness_json("check", "--plugin", str(tmp_path / "plugin"), "--upstream", str(tmp_path / "up"), "--baseline", "none")
    found = by_target(doc["findings"])["vllm.proposers.BaseProposer.build_first_pass"]
    assert (found["status"], found["breaking"]) == ("unknown", False), found
    assert "reach it only through calls that could not be placed: vllm/proposers.py:3 (self)" in found["detail"], found
    assert code == 3  # no breaking finding; one left unverified

    unchecked = RUNNER.replace("if isinstance(self.drafter, NPUNgram):", "if tokens:")
    write_tree(tmp_path / "plugin2", {**NPU, "npu/backend.py": unchecked})
    code, doc = harness_json("check", "--plugin", str(tmp_path / "plugin2"), "--upstream", str(tmp_path / "up"), "--baseline", "none")
    found = by_target(doc["findings"])["vllm.proposers.BaseProposer.build_first_pass"]
    assert (found["status"], found["breaking"]) == ("signature_changed", True), found
    assert code == 1


WORKERS = {
    "vllm/__init__.py": "from .version import __version__\n",
    "vllm/version.py": "__version__ = '0.11.0'\n",
    "vllm/worker_base.py": """
        class WorkerBase:
            def execute_model(self, execute_model_req=None):
                raise NotImplementedError

            def start_worker_execution_loop(self):
                while True:
                    if self.execute_model(execute_model_req=None) is None:
                        return
        """,
    "vllm/executor.py": """
        class DistributedExecutorBase:
            def execute_model(self, request):
                self.collective_rpc("start_worker_execution_loop", async_run_tensor_parallel_workers_only=True)
        """,
}


def test_a_method_upstream_calls_only_by_name_is_not_known_to_run(tmp_path):
    # vllm 0.11 keeps V0's WorkerBase.start_worker_execution_loop, which calls
    # `self.execute_model(execute_model_req=None)`; only V0 executors dispatch it, by name.
    # vllm-ascend 0.11.0's NPUWorker.execute_model(self, scheduler_output) does not take that
    # call: whether it is ever made on the NPU worker is not known: unknown, not breaking.
    plugin = {**NPU, "npu/backend.py": """
        from vllm.worker_base import WorkerBase


        class NPUWorker(WorkerBase):
            def execute_model(self, scheduler_output):
                return scheduler_output
        """}
    write_tree(tmp_path / "up", WORKERS)
    write_tree(tmp_path / "plugin", plugin)
    code, doc = harness_json("check", "--plugin", str(tmp_path / "plugin"), "--upstream", str(tmp_path / "up"), "--baseline", "none")
    found = by_target(doc["findings"])["vllm.worker_base.WorkerBase.execute_model"]
    assert (found["status"], found["breaking"]) == ("unknown", False), found
    assert "reach it only through calls that could not be placed: vllm/worker_base.py:7 (self)" in found["detail"], found

    # nothing names it at all: called in ways no scan sees (as nn.Module runs forward): it may run
    write_tree(tmp_path / "up2", {**WORKERS, "vllm/executor.py": "\n"})
    code, doc = harness_json("check", "--plugin", str(tmp_path / "plugin"), "--upstream", str(tmp_path / "up2"), "--baseline", "none")
    found = by_target(doc["findings"])["vllm.worker_base.WorkerBase.execute_model"]
    assert (found["status"], found["breaking"]) == ("signature_changed", True), found
    assert code == 1


SCHEDULING = {
    "vllm/__init__.py": "from .version import __version__\n",
    "vllm/version.py": "__version__ = '0.22.0'\n",
    "vllm/platforms/__init__.py": "current_platform = None\n",
    "vllm/platforms/interface.py": """
        class Platform:
            @classmethod
            def check_and_update_config(cls, vllm_config) -> None:
                pass
        """,
    "vllm/v1/core/sched/interface.py": """
        class SchedulerInterface:
            def schedule(self):
                raise NotImplementedError
        """,
    "vllm/v1/core/kv_cache_manager.py": """
        class KVCacheManager:
            def allocate_slots(self, request, num_new_tokens, full_sequence_must_fit=False):
                return [request]
        """,
    "vllm/v1/core/sched/scheduler.py": """
        from vllm.v1.core.kv_cache_manager import KVCacheManager
        from vllm.v1.core.sched.interface import SchedulerInterface


        class Scheduler(SchedulerInterface):
            def __init__(self):
                self.kv_cache_manager: KVCacheManager = KVCacheManager()

            def schedule(self):
                return self.kv_cache_manager.allocate_slots("r", 1, full_sequence_must_fit=True)
        """,
    "vllm/v1/sample/sampler.py": """
        class Sampler:
            def forward(self, logits, metadata, token_ids):
                return self.apply_penalties(logits, metadata, token_ids)

            @staticmethod
            def apply_penalties(logits, sampling_metadata, output_token_ids):
                return logits
        """,
}

RBLN = {
    "pyproject.toml": """
        [project]
        name = "rb"
        version = "0.11.1"

        [project.entry-points."vllm.platform_plugins"]
        rb = "rb:register"
        """,
    "rb/__init__.py": """
        def register():
            return "rb.platform.RBPlatform"
        """,
    "rb/platform.py": """
        from vllm.platforms.interface import Platform


        class RBPlatform(Platform):
            @classmethod
            def check_and_update_config(cls, vllm_config) -> None:
                import rb.sampler  # noqa: F401

                vllm_config.scheduler_config.scheduler_cls = "rb.scheduler.RBScheduler"
        """,
    "rb/scheduler.py": """
        from vllm.v1.core.kv_cache_manager import KVCacheManager
        from vllm.v1.core.sched.scheduler import Scheduler


        class RBKVCacheManager(KVCacheManager):
            def allocate_slots(self, request, num_new_tokens):
                return [request]


        class RBScheduler(Scheduler):
            def __init__(self):
                self.kv_cache_manager = RBKVCacheManager()

            def schedule(self):
                return self.kv_cache_manager.allocate_slots("r", 1)
        """,
    "rb/sampler.py": """
        from vllm.v1.sample.sampler import Sampler


        class RBSampler(Sampler):
            def apply_penalties(self, logits, sampling_metadata, output_token_ids):
                return logits
        """,
}


def test_a_call_in_a_method_the_named_replacement_redefines_does_not_reach(tmp_path):
    # vllm-rbln 0.11.1.post1 on vllm 0.22.0: its KV cache managers' allocate_slots lack
    # `full_sequence_must_fit`, which Scheduler.schedule passes; the platform names its own
    # scheduler classes (scheduler_cls), which redefine schedule() without calling it through
    # super(): upstream's schedule() never runs there. And RBLNSampler.apply_penalties, a plain
    # method over a @staticmethod, gets self implicitly from `self.apply_penalties(…)`: it binds.
    write_tree(tmp_path / "up", SCHEDULING)
    write_tree(tmp_path / "plugin", RBLN)
    code, doc = harness_json("check", "--plugin", str(tmp_path / "plugin"), "--upstream", str(tmp_path / "up"), "--baseline", "none")
    found = by_target(doc["findings"])
    slots = found["vllm.v1.core.kv_cache_manager.KVCacheManager.allocate_slots"]
    assert (slots["status"], slots["breaking"]) == ("signature_changed", False), slots
    assert "cannot reach it: vllm/v1/core/sched/scheduler.py:10 (self.kv_cache_manager)" in slots["detail"], slots
    assert "vllm.v1.sample.sampler.Sampler.apply_penalties" not in found, found.get("vllm.v1.sample.sampler.Sampler.apply_penalties")
    assert code == 0

    # a replacement that hands back to upstream's schedule() through super() lets the call run
    calls_up = {**RBLN, "rb/scheduler.py": RBLN["rb/scheduler.py"].replace(
        'return self.kv_cache_manager.allocate_slots("r", 1)', "return super().schedule()")}
    write_tree(tmp_path / "plugin2", calls_up)
    code, doc = harness_json("check", "--plugin", str(tmp_path / "plugin2"), "--upstream", str(tmp_path / "up"), "--baseline", "none")
    slots = by_target(doc["findings"])["vllm.v1.core.kv_cache_manager.KVCacheManager.allocate_slots"]
    assert (slots["status"], slots["breaking"]) == ("signature_changed", True), slots
    assert code == 1


def test_a_slot_the_plugin_fills_only_under_conditions_leaves_upstreams_method_undecided(tmp_path):
    # vllm-ascend names its schedulers only `if ascend_config.SLO_limits_for_dynamic_batch != -1`
    # and the like: elsewhere vLLM's own Scheduler runs, and its schedule() with it
    conditional = {**RBLN, "rb/platform.py": RBLN["rb/platform.py"].replace(
        '                vllm_config.scheduler_config.scheduler_cls = "rb.scheduler.RBScheduler"',
        '                if vllm_config.dynamic_batch:\n'
        '                    vllm_config.scheduler_config.scheduler_cls = "rb.scheduler.RBScheduler"')}
    write_tree(tmp_path / "up", SCHEDULING)
    write_tree(tmp_path / "plugin", conditional)
    code, doc = harness_json("check", "--plugin", str(tmp_path / "plugin"), "--upstream", str(tmp_path / "up"), "--baseline", "none")
    slots = by_target(doc["findings"])["vllm.v1.core.kv_cache_manager.KVCacheManager.allocate_slots"]
    assert (slots["status"], slots["breaking"]) == ("signature_changed", False), slots  # a dropped default: only a call could fail
    assert "may not reach it: vllm/v1/core/sched/scheduler.py:10 (self.kv_cache_manager): vllm.v1.core.sched.scheduler.Scheduler.schedule " \
           "runs only where the plugin leaves scheduler_cls to upstream" in slots["detail"], slots
    assert "cannot reach it" not in slots["detail"], slots
