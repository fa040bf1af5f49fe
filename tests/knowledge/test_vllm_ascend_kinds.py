"""A vLLM plugin on its own base release is red only for what really fails there (issue 21).
Kinds found false on the real Ascend plugin (vllm-ascend 0.23.0.post1 on vllm 0.23.0), each on a
small tree shaped like the release's code, next to the real break of the same kind:
- a patch under `if not hasattr(Cls, "name"):` (patch_qwen3vl.py's start_layer property) runs
  only when the name is absent: an addition, not a dead patch; an unguarded patch of a name the
  release dropped but still mentions (layernorm_guard.LayerNormFn) stays missing;
- a field read through a typing.Protocol annotation (`layer: AttentionLayer`, whose implementor,
  vllm's Attention, sets layer_name) is undecided, not missing; a field of a plain class stays missing;
- a field the plugin assigns itself on an upstream object it got from a call
  (`forward_context = get_forward_context(); forward_context.capturing = False`) may be there when
  read through a parameter annotated with that class: not missing (the call's return annotation
  types the write: the plugin sets it on that class itself, ok, as for an annotated local);
- an override dropping a defaulted parameter (NPUModelRunner.load_model(self)) that only
  upstream's own GPU worker passes: the platform names its own worker class (worker_cls), not a
  subclass of gpu_worker.Worker, so Worker's calls never run, nor the runner methods only they
  reach (profile_cudagraph_memory -> the minimal KV cache -> initialize_kv_cache(is_profiling=True));
  a runner method the plugin's worker calls that passes it stays breaking;
- `super().postprocess(…)` inside the plugin's own `postprocess` (the v2 NPUModelRunner's, after
  upstream renamed its method postprocess_sampled): a method nothing calls, since the release
  names 'postprocess' only in prose and the super() call reaches only the bases; one the
  release still calls on the runner (`self.model_runner.finish_step()`) stays breaking.
"""

from __future__ import annotations

import pytest
from knowledge_support import by_target, harness_json, write_tree

UPSTREAM = {
    "vllm/__init__.py": "from .version import __version__\n",
    "vllm/version.py": "__version__ = '0.23.0'\n",
    "vllm/platforms/__init__.py": "current_platform = None\n",
    "vllm/platforms/interface.py": """
        class Platform:
            @classmethod
            def get_device_name(cls, device_id: int = 0) -> str:
                raise NotImplementedError
        """,
    "vllm/attention.py": """
        from typing import Protocol


        class AttentionLayer(Protocol):
            _k_scale: float

            def forward(self, query): ...


        class Metadata:
            num_tokens: int
        """,
    "vllm/forward_context.py": """
        from dataclasses import dataclass


        @dataclass
        class ForwardContext:
            num_tokens: int = 0


        _forward_context: ForwardContext | None = None


        def get_forward_context() -> ForwardContext:
            assert _forward_context is not None
            return _forward_context
        """,
    "vllm/models.py": """
        class MoeLM:
            def __init__(self):
                self.model = None
        """,
    "vllm/v1/__init__.py": "",
    "vllm/v1/worker/__init__.py": "",
    "vllm/v1/worker/worker_base.py": """
        class WorkerBase:
            def __init__(self, vllm_config):
                self.vllm_config = vllm_config
        """,
    "vllm/v1/worker/gpu_model_runner.py": """
        class GPUModelRunner:
            def load_model(self, load_dummy_weights: bool = False) -> None:
                pass

            def initialize_kv_cache(self, kv_cache_config, is_profiling: bool = False) -> None:
                pass

            def _init_minimal_kv_cache(self) -> None:
                self.initialize_kv_cache(None, is_profiling=True)

            def profile_cudagraph_memory(self) -> int:
                self._init_minimal_kv_cache()
                return 0

            def reload_weights(self) -> None:
                self.load_model(load_dummy_weights=True)
        """,
    "vllm/v1/worker/gpu_worker.py": """
        from vllm.v1.worker.gpu_model_runner import GPUModelRunner
        from vllm.v1.worker.worker_base import WorkerBase


        class Worker(WorkerBase):
            def init_device(self):
                self.model_runner: GPUModelRunner = GPUModelRunner()

            def load_model(self, *, load_dummy_weights: bool = False) -> None:
                self.model_runner.load_model(load_dummy_weights=load_dummy_weights)

            def determine_available_memory(self) -> int:
                return self.model_runner.profile_cudagraph_memory()

            def reload_weights(self) -> None:
                self.model_runner.reload_weights()

            def execute_model(self) -> None:
                # then the postprocess step (in prose only)
                self.model_runner.finish_step()
        """,
    "vllm/norm.py": """
        def layernorm_fn(x):
            # the original code wrapped this in a torch.autograd.Function (LayerNormFn)
            return x
        """,
}

PLUGIN = {
    "pyproject.toml": """
        [project]
        name = "ap"
        version = "0.23.0"

        [project.entry-points."vllm.platform_plugins"]
        ap = "ap:register"
        """,
    "ap/__init__.py": """
        def register():
            import ap.patches  # noqa: F401
            from ap.attn import graph_layer_name, update_params

            import ap.worker  # noqa: F401

            graph_layer_name(None, None)
            update_params(None)
            return "ap.platform.APlatform"
        """,
    "ap/platform.py": """
        from vllm.platforms.interface import Platform


        class APlatform(Platform):
            @classmethod
            def check_and_update_config(cls, vllm_config) -> None:
                vllm_config.parallel_config.worker_cls = "ap.worker.AWorker"
        """,
    "ap/worker.py": """
        from vllm.v1.worker.worker_base import WorkerBase

        from ap.runner import ARunner


        class AWorker(WorkerBase):
            def init_device(self):
                self.model_runner = ARunner()

            def load_model(self) -> None:
                self.model_runner.load_model()

            def reload(self) -> None:
                self.model_runner.reload_weights()
        """,
    "ap/runner.py": """
        from vllm.v1.worker.gpu_model_runner import GPUModelRunner


        class ARunner(GPUModelRunner):
            def load_model(self) -> None:
                pass

            def initialize_kv_cache(self, kv_cache_config) -> None:
                pass

            def postprocess(self, sampled):
                super().postprocess(sampled)

            def finish_step(self):
                super().finish_step()

            def prepare_sampling(self):
                return None
        """,
    "ap/patches.py": """
        import vllm.norm
        from vllm.models import MoeLM


        class LayerNormFn:
            pass


        if not hasattr(MoeLM, "start_layer"):
            MoeLM.start_layer = property(lambda self: self.model.start_layer)

        vllm.norm.LayerNormFn = LayerNormFn
        """,
    "ap/attn.py": """
        from vllm.attention import AttentionLayer, Metadata
        from vllm.forward_context import ForwardContext, get_forward_context


        def set_context():
            forward_context = get_forward_context()
            forward_context.capturing = False


        def graph_layer_name(layer: AttentionLayer, metadata: Metadata):
            set_context()
            return layer.layer_name, metadata.num_prefills


        def update_params(forward_context: ForwardContext):
            return forward_context.capturing, forward_context.num_reqs
        """,
}


@pytest.fixture(scope="module")
def checked(tmp_path_factory):
    root = tmp_path_factory.mktemp("ascend-kinds")
    write_tree(root / "up", UPSTREAM)
    write_tree(root / "plugin", PLUGIN)
    code, doc = harness_json("check", "--plugin", str(root / "plugin"), "--upstream", str(root / "up"), "--baseline", "none")
    return code, by_target(doc["findings"])


def test_a_patch_guarded_by_the_name_being_absent_adds_it(checked):
    _, found = checked
    added = found["vllm.models.MoeLM.start_layer"]
    assert (added["status"], added["breaking"]) == ("extension", False), added
    assert "not hasattr(MoeLM, 'start_layer')" in added["detail"]
    # unguarded, over a name the release dropped but still mentions: a dead patch
    dead = found["vllm.norm.LayerNormFn"]
    assert (dead["status"], dead["breaking"]) == ("missing", True), dead


def test_a_field_read_through_a_protocol_is_undecided(checked):
    _, found = checked
    through_protocol = found["vllm.attention.AttentionLayer.layer_name"]
    assert (through_protocol["status"], through_protocol["breaking"]) == ("unknown", False), through_protocol
    assert "typing.Protocol" in through_protocol["detail"]
    plain = found["vllm.attention.Metadata.num_prefills"]
    assert (plain["status"], plain["breaking"]) == ("missing", True), plain


def test_a_field_the_plugin_sets_on_an_upstream_object_is_undecided(checked):
    code, found = checked
    own = found.get("vllm.forward_context.ForwardContext.capturing", {"status": "ok", "breaking": False, "detail": "ap/attn.py:7"})
    assert own["status"] in ("ok", "unknown") and not own["breaking"], own
    assert "ap/attn.py:7" in own["detail"]
    never_set = found["vllm.forward_context.ForwardContext.num_reqs"]
    assert (never_set["status"], never_set["breaking"]) == ("missing", True), never_set
    assert code == 1


def test_calls_only_the_displaced_upstream_worker_makes_do_not_break_an_override(tmp_path):
    write_tree(tmp_path / "up", UPSTREAM)
    plugin = {**PLUGIN, "ap/worker.py": PLUGIN["ap/worker.py"].replace("self.model_runner.reload_weights()", "pass")}
    write_tree(tmp_path / "plugin", plugin)
    _, doc = harness_json("check", "--plugin", str(tmp_path / "plugin"), "--upstream", str(tmp_path / "up"), "--baseline", "none")
    found = by_target(doc["findings"])
    for member in ("load_model", "initialize_kv_cache"):
        override = found[f"vllm.v1.worker.gpu_model_runner.GPUModelRunner.{member}"]
        assert (override["status"], override["breaking"]) == ("signature_changed", False), override


def test_a_runner_method_the_plugin_worker_calls_still_breaks_the_override(checked):
    _, found = checked
    override = found["vllm.v1.worker.gpu_model_runner.GPUModelRunner.load_model"]
    assert (override["status"], override["breaking"]) == ("signature_changed", True), override
    assert "gpu_model_runner.py:16" in override["detail"]
    assert "gpu_worker.py:10" in override["detail"]  # listed among the calls that cannot reach it
    kv = found["vllm.v1.worker.gpu_model_runner.GPUModelRunner.initialize_kv_cache"]
    assert (kv["status"], kv["breaking"]) == ("signature_changed", False), kv


def test_a_super_call_in_a_method_nothing_calls_cannot_fail(checked):
    _, found = checked
    dead = found["vllm.v1.worker.gpu_model_runner.GPUModelRunner.postprocess"]
    assert (dead["status"], dead["breaking"]) == ("missing", False), dead
    assert "which nothing calls" in dead["detail"]
    called = found["vllm.v1.worker.gpu_model_runner.GPUModelRunner.finish_step"]
    assert (called["status"], called["breaking"]) == ("missing", True), called


def test_an_override_upstream_stopped_calling_stays_breaking(tmp_path):
    # the baseline's runner had prepare_sampling; the release dropped it: the override is dead
    baseline = {**UPSTREAM, "vllm/v1/worker/gpu_model_runner.py": UPSTREAM["vllm/v1/worker/gpu_model_runner.py"].replace(
        "class GPUModelRunner:\n", "class GPUModelRunner:\n" + " " * 12 + "def prepare_sampling(self):\n" + " " * 16 + "return None\n\n")}
    write_tree(tmp_path / "up", UPSTREAM)
    write_tree(tmp_path / "baseline", baseline)
    write_tree(tmp_path / "plugin", PLUGIN)
    _, doc = harness_json("check", "--plugin", str(tmp_path / "plugin"), "--upstream", str(tmp_path / "up"), "--baseline", str(tmp_path / "baseline"))
    dead = by_target(doc["findings"])["vllm.v1.worker.gpu_model_runner.GPUModelRunner.prepare_sampling"]
    assert (dead["status"], dead["breaking"]) == ("not_on_base", True), dead
