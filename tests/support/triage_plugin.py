"""A realistic out-of-tree plugin (~100 modules) and an SGLang-shaped upstream in two versions
(0.9.0 → 0.10.0), shaped after the 107-module plugin of issue 19: most of its dependencies are
unaffected, and four upstream changes break it —

    kernel family moved   sglang.kernels.ops.attention.dsv4.elementwise → …dsv4.norm_rope (as in
                          the real 0.5.17 → 0.5.23); the plugin imports four of its kernels inside
                          hooks on the DeepSeek-V4 model (a model path)
    process group         GroupCoordinator.__init__ loses `use_custom_allreduce`; the plugin's
                          REPLACE hook on init_model_parallel_group still passes it (startup:
                          ModelRunner.__init__ → init_torch_distributed → initialize_model_parallel)
    factory               create_moe_dispatcher's upstream callers gain `quant_method`; the
                          plugin's REPLACE hook takes one argument (startup: every MoE model's
                          construction), as create_moe_dispatcher did in the real 0.5.17 → 0.5.23
    CPU affinity          set_cpu_affinity(gpu_id, tp_rank, nnodes) shrinks to (gpu_id); the
                          plugin's REPLACE hook requires all three (startup: Scheduler.__init__)

plus warnings that never fail (a hooked function whose body changed). `write_case(root)` writes
`old/`, `new/` and `plugin/` under `root`; the tests and benchmarks/upgrade_speed.py use it.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from sglang_api import DEVICE_MIXIN, HOOK_REGISTRY

STABLE_OPS = 40  # upstream op modules the plugin wraps, unchanged between the versions
PLUGIN_OPS = 96  # plugin op modules (two or three per upstream op module)
CHANGED_BODIES = 3  # hooked upstream functions whose body changes (warnings)
MOE_MODELS = ("deepseek_v4", "qwen3_moe", "mixtral")
# the first three are in the real 0.5.17 elementwise.py (:109, :140, :260) and 0.5.23 norm_rope.py
FAMILY = ("fused_rope_inplace", "fused_q_norm_rope", "fused_k_norm_rope_flashmla", "fused_norm_rope_inplace")

OLD_FAMILY_MODULE = "sglang/kernels/ops/attention/dsv4/elementwise.py"
NEW_FAMILY_MODULE = "sglang/kernels/ops/attention/dsv4/norm_rope.py"


def _family() -> str:
    return "".join(f"def {name}(q, k, cos_sin_cache, positions):\n    return q, k\n\n\n" for name in FAMILY)


def _common() -> dict[str, str]:
    files = {
        "sglang/__init__.py": "from sglang.version import __version__\n",
        "sglang/kernels/__init__.py": "",
        "sglang/kernels/ops/__init__.py": "",
        "sglang/kernels/ops/attention/__init__.py": "",
        "sglang/kernels/ops/attention/dsv4/__init__.py": "",
        "sglang/srt/platforms/__init__.py": "current_platform = None\n",
        "sglang/srt/platforms/device_mixin.py": DEVICE_MIXIN,
        "sglang/srt/platforms/interface.py": """
            from sglang.srt.platforms.device_mixin import DeviceMixin

            class SRTPlatform(DeviceMixin):
                def get_default_attention_backend(self) -> str:
                    raise NotImplementedError

                def init_backend(self) -> None:
                    pass
            """,
        # the loader as in sglang/srt/plugins/__init__.py (0.5.23): ep.load() inside try/except
        "sglang/srt/plugins/__init__.py": """
            import logging
            from importlib.metadata import entry_points

            from sglang.srt.plugins.hook_registry import HookRegistry

            logger = logging.getLogger(__name__)


            def load_plugins_by_group(group):
                plugins = {}
                for ep in entry_points(group=group):
                    try:
                        func = ep.load()
                        plugins[ep.name] = func
                    except Exception:
                        logger.exception("Failed to load plugin %s from group %s", ep.name, group)
                return plugins


            def load_plugins():
                for func in load_plugins_by_group("sglang.srt.plugins").values():
                    func()
                HookRegistry.apply_hooks()
            """,
        "sglang/srt/plugins/hook_registry.py": HOOK_REGISTRY,
        "sglang/srt/__init__.py": "",
        "sglang/srt/distributed/__init__.py": "",
        "sglang/srt/layers/__init__.py": "",
        "sglang/srt/layers/moe/__init__.py": "",
        "sglang/srt/layers/ops/__init__.py": "",
        "sglang/srt/managers/__init__.py": "",
        "sglang/srt/model_executor/__init__.py": "",
        "sglang/srt/models/__init__.py": "",
        "sglang/srt/utils/__init__.py": "",
        "sglang/srt/managers/tp_worker.py": """
            from sglang.srt.model_executor.model_runner import ModelRunner


            class TpModelWorker:
                def __init__(self, server_args, gpu_id, tp_rank):
                    self.model_runner = ModelRunner(server_args, gpu_id, tp_rank)
            """,
        "sglang/srt/model_executor/model_runner.py": """
            import importlib

            from sglang.srt.distributed.parallel_state import init_distributed_environment, initialize_model_parallel


            class ModelRunner:
                def __init__(self, server_args, gpu_id, tp_rank):
                    self.server_args = server_args
                    self.init_torch_distributed()
                    self.load_model()

                def init_torch_distributed(self):
                    init_distributed_environment(world_size=1, rank=0)
                    initialize_model_parallel(tensor_model_parallel_size=1)

                def load_model(self):
                    module = importlib.import_module(f"sglang.srt.models.{self.server_args.model}")
                    self.model = module.EntryClass(self.server_args)
            """,
    }
    for i in range(STABLE_OPS):
        files[f"sglang/srt/layers/ops/op_{i}.py"] = f"""
            def op_{i}(x, scale=1.0):
                return x


            class Op{i}Config:
                def __init__(self, size: int, *, dtype=None):
                    self.size = size

                def build(self):
                    return op_{i}
            """
    for model in MOE_MODELS:
        cls = "".join(part.capitalize() for part in model.split("_"))
        files[f"sglang/srt/models/{model}.py"] = f"""
            from torch import nn

            from sglang.srt.layers.moe.layer import FusedMoE


            class {cls}Attention(nn.Module):
                def forward(self, positions, hidden_states):
                    return hidden_states


            class {cls}MoE(nn.Module):
                def __init__(self, config):
                    super().__init__()
                    self.experts = FusedMoE(config, num_experts=8)


            class {cls}ForCausalLM(nn.Module):
                def __init__(self, config):
                    super().__init__()
                    self.attn = {cls}Attention()
                    self.mlp = {cls}MoE(config)


            EntryClass = {cls}ForCausalLM
            """
    return files


def _versioned(new: bool) -> dict[str, str]:
    files = {"sglang/version.py": f'__version__ = "{"0.10.0" if new else "0.9.0"}"\n'}
    files[NEW_FAMILY_MODULE if new else OLD_FAMILY_MODULE] = _family()
    allreduce = "" if new else ", use_custom_allreduce: bool = False"
    files["sglang/srt/distributed/parallel_state.py"] = f"""
        class GroupCoordinator:
            def __init__(self, group_ranks, local_rank, torch_distributed_backend, use_message_queue_broadcaster: bool = False{allreduce}):
                self.ranks = group_ranks
                self.local_rank = local_rank


        _TP = None


        def init_distributed_environment(world_size=-1, rank=-1, backend="nccl"):
            pass


        def init_model_parallel_group(group_ranks, local_rank, backend, use_message_queue_broadcaster=False):
            return GroupCoordinator(group_ranks, local_rank, backend, use_message_queue_broadcaster=use_message_queue_broadcaster)


        def initialize_model_parallel(tensor_model_parallel_size=1):
            global _TP
            _TP = init_model_parallel_group([[0]], 0, "gloo", use_message_queue_broadcaster=True)
        """
    if not new:  # gone from the new release, with its call
        files["sglang/srt/distributed/parallel_state.py"] += """
            ensure_model_parallel_initialized(tensor_model_parallel_size)


        def ensure_model_parallel_initialized(tensor_model_parallel_size):
            pass
        """
    quant = ", quant_method" if new else ""
    files["sglang/srt/layers/moe/layer.py"] = f"""
        from torch import nn


        class StandardDispatcher:
            def __init__(self, config):
                self.config = config


        def create_moe_dispatcher(moe_runner_config{quant}):
            return StandardDispatcher(moe_runner_config)


        class FusedMoE(nn.Module):
            def __init__(self, config, num_experts, quant_method=None):
                super().__init__()
                self.dispatcher = create_moe_dispatcher(config{quant})
        """
    affinity = "" if new else ", tp_rank, nnodes"
    files["sglang/srt/utils/numa_utils.py"] = f"""
        import os


        def set_cpu_affinity(gpu_id{affinity}):
            os.sched_setaffinity(0, {{gpu_id}})
        """
    files["sglang/srt/managers/scheduler.py"] = f"""
        from sglang.srt.managers.tp_worker import TpModelWorker
        from sglang.srt.utils.numa_utils import set_cpu_affinity


        class Scheduler:
            def __init__(self, server_args, gpu_id, tp_rank):
                set_cpu_affinity(gpu_id{", tp_rank, server_args.nnodes" if not new else ""})
                self.tp_worker = TpModelWorker(server_args, gpu_id, tp_rank)
        """
    for i in range(CHANGED_BODIES):  # the plugin wraps these; the new release changes what they do
        files[f"sglang/srt/layers/ops/op_{i}.py"] = f"""
            def op_{i}(x, scale=1.0):
                return x {"* scale" if new else ""}


            class Op{i}Config:
                def __init__(self, size: int, *, dtype=None):
                    self.size = size

                def build(self):
                    return op_{i}
            """
    return files


def upstream_files(new: bool) -> dict[str, str]:
    """The upstream tree of one version: relative path -> source."""
    return {**_common(), **_versioned(new)}


def plugin_files() -> dict[str, str]:
    """The plugin checkout: relative path -> source (PLUGIN_OPS op modules, hooks, a platform)."""
    files = {
        "pyproject.toml": """
            [project]
            name = "xpu-plugin"
            version = "0.1"
            [project.entry-points."sglang.srt.platforms"]
            xpu = "xpu_plugin.platform:activate"
            [project.entry-points."sglang.srt.plugins"]
            xpu = "xpu_plugin.plugin:load"
            """,
        "xpu_plugin/__init__.py": "",
        "xpu_plugin/platform.py": """
            from sglang.srt.platforms.interface import SRTPlatform


            class XpuPlatform(SRTPlatform):
                device_name = "xpu"

                def get_default_attention_backend(self) -> str:
                    return "xpu_attn"


            def activate():
                return "xpu_plugin.platform.XpuPlatform"
            """,
        "xpu_plugin/plugin.py": """
            from xpu_plugin import distributed, moe, numa, ops  # noqa: F401  (registers hooks)
            from xpu_plugin.models import deepseek_v4  # noqa: F401


            def load():
                return None
            """,
        # the process-group constructor call with the keyword the new release removed
        "xpu_plugin/distributed.py": """
            from sglang.srt.distributed.parallel_state import GroupCoordinator
            from sglang.srt.plugins.hook_registry import HookType, plugin_hook


            @plugin_hook("sglang.srt.distributed.parallel_state.init_model_parallel_group", type=HookType.REPLACE)
            def init_model_parallel_group(group_ranks, local_rank, backend, use_message_queue_broadcaster=False):
                return GroupCoordinator(
                    group_ranks,
                    local_rank,
                    backend,
                    use_message_queue_broadcaster=use_message_queue_broadcaster,
                    use_custom_allreduce=False,
                )
            """,
        # the factory whose upstream callers gained an argument this replacement lacks
        "xpu_plugin/moe.py": """
            from sglang.srt.layers.moe.layer import StandardDispatcher
            from sglang.srt.plugins.hook_registry import HookType, plugin_hook


            @plugin_hook("sglang.srt.layers.moe.layer.create_moe_dispatcher", type=HookType.REPLACE)
            def create_moe_dispatcher(moe_runner_config):
                return StandardDispatcher(moe_runner_config)
            """,
        # the CPU-affinity hook whose upstream signature shrank
        "xpu_plugin/numa.py": """
            from sglang.srt.plugins.hook_registry import HookType, plugin_hook


            @plugin_hook("sglang.srt.utils.numa_utils.set_cpu_affinity", type=HookType.REPLACE)
            def set_cpu_affinity(gpu_id, tp_rank, nnodes):
                return None
            """,
        # the kernel family, imported where the DeepSeek-V4 hooks run
        "xpu_plugin/models/__init__.py": "",
        "xpu_plugin/models/deepseek_v4.py": """
            from sglang.srt.plugins.hook_registry import HookType, plugin_hook

            from xpu_plugin.models import dsv4_kernels


            @plugin_hook("sglang.srt.models.deepseek_v4.DeepseekV4Attention.forward", type=HookType.AROUND)
            def attention_forward(original, self, positions, hidden_states):
                from sglang.kernels.ops.attention.dsv4.elementwise import fused_q_norm_rope, fused_rope_inplace

                fused_rope_inplace(hidden_states, hidden_states, None, positions)
                fused_q_norm_rope(hidden_states, hidden_states, None, positions)
                return dsv4_kernels.norm_rope(original(self, positions, hidden_states), positions)
            """,
        "xpu_plugin/models/dsv4_kernels.py": """
            def norm_rope(hidden_states, positions):
                from sglang.kernels.ops.attention.dsv4.elementwise import (
                    fused_k_norm_rope_flashmla,
                    fused_norm_rope_inplace,
                )

                fused_norm_rope_inplace(hidden_states, hidden_states, None, positions)
                return fused_k_norm_rope_flashmla(hidden_states, hidden_states, None, positions)[0]
            """,
    }
    op_modules = []
    for j in range(PLUGIN_OPS):
        i = j % STABLE_OPS
        name = f"op_{j}"
        op_modules.append(name)
        hook = (f'\n\n@plugin_hook("sglang.srt.layers.ops.op_{i}.op_{i}", type=HookType.AROUND)\n'
                f"def around_op_{j}(original, x, scale=1.0):\n    return original(x, scale)\n") if j < CHANGED_BODIES else ""
        files[f"xpu_plugin/ops/{name}.py"] = (
            f"from sglang.srt.layers.ops.op_{i} import Op{i}Config, op_{i}\n"
            "from sglang.srt.plugins.hook_registry import HookType, plugin_hook\n\n\n"
            f"def xpu_op_{j}(x):\n    return op_{i}(x, scale=2.0)\n\n\n"
            f"def xpu_config_{j}(size):\n    return Op{i}Config(size, dtype=None).build()\n{hook}"
        )
    files["xpu_plugin/ops/__init__.py"] = "".join(f"from xpu_plugin.ops import {m}  # noqa: F401\n" for m in op_modules)
    return files


def real_plugin_files(release: Path, modules: int = 100) -> dict[str, str]:
    """A plugin of `modules` modules over a real release tree (`release`/sglang/…): each wraps
    one public module-level function of sglang/srt/layers (sorted, so the same release gives
    the same plugin), plus the moved kernel family and the MoE factory hook of 0.5.17 → 0.5.23.
    Raises ValueError when the release has too few such functions."""
    import ast

    picked: list[tuple[str, str]] = []
    for path in sorted((release / "sglang" / "srt" / "layers").rglob("*.py")):
        if len(picked) == modules:
            break
        try:
            tree = ast.parse(path.read_text(errors="replace"))
        except SyntaxError:
            continue
        name = next((n.name for n in tree.body if isinstance(n, ast.FunctionDef) and not n.name.startswith("_")), None)
        if name is not None:
            module = ".".join(path.relative_to(release).with_suffix("").parts).removesuffix(".__init__")
            picked.append((module, name))
    if len(picked) < modules:
        raise ValueError(f"{release}: only {len(picked)} modules of sglang/srt/layers define a public function")
    files = {
        "pyproject.toml": '[project]\nname = "bench-plugin"\nversion = "0.1"\n'
                          '[project.entry-points."sglang.srt.plugins"]\nbench = "bench_plugin.plugin:load"\n',
        "bench_plugin/__init__.py": "",
        "bench_plugin/plugin.py": "from bench_plugin import kernels, ops  # noqa: F401\n\n\ndef load():\n    return None\n",
        "bench_plugin/kernels.py": (
            "from sglang.srt.plugins.hook_registry import HookType, plugin_hook\n\n\n"
            '@plugin_hook("sglang.srt.layers.moe.fused_moe_triton.layer.create_moe_dispatcher", type=HookType.REPLACE)\n'
            "def create_moe_dispatcher(moe_runner_config):\n"
            f"    from {OLD_FAMILY_MODULE[:-3].replace('/', '.')} import {', '.join(FAMILY[:3])}  # noqa: F401\n"
            "    return None\n"
        ),
        "bench_plugin/ops/__init__.py": "".join(f"from bench_plugin.ops import op_{i}  # noqa: F401\n" for i in range(len(picked))),
    }
    for i, (module, name) in enumerate(picked):
        files[f"bench_plugin/ops/op_{i}.py"] = f"from {module} import {name}\n\n\ndef xpu_{name}(*args, **kwargs):\n    return {name}(*args, **kwargs)\n"
    return files


def write_case(root: Path) -> tuple[Path, Path, Path]:
    """Write the two upstream versions and the plugin under `root`: (old, new, plugin) paths."""
    trees = {"old": upstream_files(new=False), "new": upstream_files(new=True), "plugin": plugin_files()}
    for name, files in trees.items():
        for rel, text in files.items():
            path = root / name / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(textwrap.dedent(text).lstrip("\n"))
    return root / "old", root / "new", root / "plugin"
