"""Fixtures: a small SGLang-shaped upstream git repo with two tagged versions, and a plugin
written against the first, using every pattern real plugins use."""

from __future__ import annotations

from pathlib import Path

import pytest
from knowledge_support import git, write_tree
from real_releases import real_releases
from sglang_api import DEVICE_MIXIN, HOOK_REGISTRY

UPSTREAM_V1 = {
    "python/sglang/__init__.py": "__version__ = '1.0'\n",
    # sglang/srt has no __init__.py: a namespace package, as in the real releases.
    "python/sglang/srt/platforms/__init__.py": "",
    "python/sglang/srt/platforms/device_mixin.py": DEVICE_MIXIN,
    "python/sglang/srt/layers/layernorm.py": """
        import torch

        class RMSNorm(torch.nn.Module):
            def forward_native(self, x):
                return x
        """,
    "python/sglang/srt/models/__init__.py": "",
    "python/sglang/srt/models/registry.py": """
        try:
            from sglang.srt.layers.layernorm import RMSNorm
        except ImportError:  # a build without the layer
            RMSNorm = None

        Norm = RMSNorm
        """,
    "python/sglang/srt/platforms/interface.py": """
        from sglang.srt.platforms.device_mixin import DeviceMixin, PlatformEnum

        class SRTPlatform(DeviceMixin):
            def get_default_attention_backend(self) -> str:
                raise NotImplementedError

            def get_mha_kv_pool_cls(self) -> type:
                raise NotImplementedError

            def support_cuda_graph(self) -> bool:
                return False

            def get_compile_backend(self, mode=None) -> str:
                return "inductor"

            def apply_server_args_defaults(self, server_args) -> None:
                pass
        """,
    "python/sglang/srt/plugins/__init__.py": "",
    "python/sglang/srt/plugins/hook_registry.py": HOOK_REGISTRY,
    "python/sglang/srt/managers/__init__.py": "",
    "python/sglang/srt/managers/scheduler.py": """
        class Scheduler:
            def schedule(self, batch):
                return batch

            def admit(self, req):
                return True

            def update_running(self, batch):
                # keep the running batch
                return batch
        """,
    "python/sglang/srt/utils/__init__.py": "from sglang.srt.utils.common import *\n",
    "python/sglang/srt/utils/common.py": """
        def get_available_memory(device, empty_cache=True):
            return 0

        def _private_helper():
            return 1
        """,
    "python/sglang/srt/layers/__init__.py": "",
    "python/sglang/srt/layers/activation.py": """
        def silu_and_mul(x):
            return x
        """,
    "python/sglang/srt/layers/attention/__init__.py": "",
    "python/sglang/srt/layers/attention/attention_registry.py": """
        ATTENTION_BACKENDS = {}

        def register_attention_backend(name):
            def decorator(fn):
                ATTENTION_BACKENDS[name] = fn
                return fn
            return decorator
        """,
    "python/sglang/srt/server_args.py": """
        import dataclasses

        ATTENTION_BACKEND_CHOICES = ["triton", "torch_native"]

        @dataclasses.dataclass
        class ServerArgs:
            attention_backend: str = None
            mem_fraction_static: float = 0.9
        """,
    "python/sglang/srt/model_executor/__init__.py": "",
    "python/sglang/srt/model_executor/model_runner.py": """
        class ModelRunner:
            def init_threads_binding(self):
                pass

            def forward(self, batch):
                return batch
        """,
    "python/sglang/srt/distributed/__init__.py": "",
    "python/sglang/srt/distributed/parallel_state.py": """
        class GroupCoordinator:
            def all_reduce(self, x):
                return x

        def ensure_model_parallel_initialized():
            return True

        def model_parallel_is_initialized():
            return True
        """,
}

# v2: the kinds of change real releases make.
UPSTREAM_V2_CHANGES = {
    "python/sglang/srt/platforms/interface.py": """
        from typing import Literal

        from sglang.srt.platforms.device_mixin import DeviceMixin, PlatformEnum

        class PlatformCapabilities:
            graph_capture: bool = False

        class SRTPlatform(DeviceMixin):
            capabilities = PlatformCapabilities()

            def get_default_attention_backend(self) -> str:
                raise NotImplementedError

            def get_kv_pool_cls(self, *, kind: Literal["mha", "mla"]) -> type:
                raise NotImplementedError

            def get_compile_backend(self, mode=None) -> str:
                return "inductor"

            def apply_server_args_defaults(self, server_args) -> None:
                pass
        """,
    "python/sglang/srt/managers/base.py": """
        class BaseScheduler:
            def admit(self, req):
                return True
        """,
    "python/sglang/srt/managers/scheduler.py": """
        from sglang.srt.managers.base import BaseScheduler

        class Scheduler(BaseScheduler):
            def schedule(self, batch, *, budget=None):
                return batch

            def update_running(self, batch):
                # keep the running batch, minus finished requests
                batch = [r for r in batch if not r.finished]
                return batch
        """,
    "python/sglang/srt/utils/common.py": """
        from sglang.srt.utils.memory import get_available_memory

        def _private_helper():
            return 1
        """,
    "python/sglang/srt/utils/memory.py": """
        def get_available_memory(device, empty_cache=True):
            return 0
        """,
    "python/sglang/srt/utils/numa.py": """
        def init_threads_binding(runner):
            pass
        """,
    "python/sglang/srt/model_executor/model_runner.py": """
        class ModelRunner:
            def forward(self, batch):
                return batch
        """,
    "python/sglang/srt/distributed/parallel_state.py": """
        class GroupCoordinator:
            def all_reduce(self, x):
                return x

        def model_parallel_is_initialized():
            return True
        """,
}

PLUGIN = {
    "pyproject.toml": """
        [project]
        name = "xplug"
        version = "0.1.0"

        [project.entry-points."sglang.srt.platforms"]
        xplug = "xplug:activate"

        [project.entry-points."sglang.srt.plugins"]
        xplug_hooks = "xplug.hooks:register"
        """,
    "xplug/__init__.py": """
        def activate():
            return "xplug.platform:XPlatform"
        """,
    "xplug/platform.py": """
        from sglang.srt.platforms.interface import SRTPlatform

        class XPlatform(SRTPlatform):
            def get_default_attention_backend(self) -> str:
                return "xattn"

            def get_mha_kv_pool_cls(self) -> type:
                return object

            def support_cuda_graph(self) -> bool:
                return True

            def get_compile_backend(self) -> str:
                return "xgraph"

            def apply_server_args_defaults(self, server_args) -> None:
                server_args.attention_backend = "xattn"

            def _private_helper(self):
                return 1
        """,
    "xplug/hooks/__init__.py": """
        import importlib

        from sglang.srt.plugins.hook_registry import HookRegistry, HookType

        _MODULES = ["sched", "mem"]
        _RUNNER = "sglang.srt.model_executor.model_runner" + ".ModelRunner"

        def _bind(original_fn, *args, **kwargs):
            return original_fn(*args, **kwargs)

        def register():
            for name in _MODULES:
                importlib.import_module(f"{__name__}.{name}")
            HookRegistry.register(_RUNNER + ".init_threads_binding", _bind, HookType.AROUND)
        """,
    "xplug/hooks/targets.py": """
        SCHED = "sglang.srt.managers.scheduler.Scheduler"
        """,
    "xplug/hooks/sched.py": """
        from sglang.srt.plugins.hook_registry import HookRegistry, HookType, plugin_hook

        from .targets import SCHED

        @plugin_hook(f"{SCHED}.schedule", type=HookType.AROUND)
        def timed(original_fn, *args, **kwargs):
            return original_fn(*args, **kwargs)

        def update_running(self, batch):
            # copy of upstream Scheduler.update_running
            return batch

        def before_admit(self, req):
            return None

        _HOOKS = [
            (SCHED + ".update_running", update_running, HookType.REPLACE),
            (SCHED + ".admit", before_admit, HookType.BEFORE),
        ]
        for target, fn, hook_type in _HOOKS:
            HookRegistry.register(target, fn, hook_type)
        """,
    "xplug/hooks/mem.py": """
        from sglang.srt import server_args
        from sglang.srt.distributed import parallel_state
        from sglang.srt.layers.attention.attention_registry import register_attention_backend
        from sglang.srt.plugins.hook_registry import HookType, plugin_hook
        from sglang.srt.utils import common as utils_common

        KERNELS = {}

        def _ensure():
            return True

        setattr(parallel_state, "ensure_model_parallel_initialized", _ensure)

        @plugin_hook("sglang.srt.utils.get_available_memory", type=HookType.REPLACE)
        def get_available_memory(device, empty_cache=True):
            return 1

        utils_common.get_available_memory = get_available_memory

        def xsilu(x):
            return x

        KERNELS[("sglang.srt.layers.activation", "silu_and_mul")] = xsilu

        @register_attention_backend("xattn")
        def create_xattn(runner):
            return None

        server_args.ATTENTION_BACKEND_CHOICES.append("xattn")
        """,
    "xplug/hooks/dead.py": """
        from sglang.srt.plugins.hook_registry import HookType, plugin_hook

        @plugin_hook("sglang.srt.managers.scheduler.Scheduler.gone_method", type=HookType.AFTER)
        def after_gone(result, *args, **kwargs):
            return result
        """,
}


@pytest.fixture(scope="session")
def upstream_repo(tmp_path_factory) -> Path:
    """git repo laid out like SGLang's (python/sglang), tags v1 and v2."""
    repo = tmp_path_factory.mktemp("sglang-repo")
    git(repo, "init", "-q", "-b", "main")
    write_tree(repo, UPSTREAM_V1)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "v1")
    git(repo, "tag", "v1")
    write_tree(repo, {k: v for k, v in UPSTREAM_V2_CHANGES.items() if "scheduler" not in k})
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "Replace per-kind KV pool factories with get_kv_pool_cls")
    write_tree(repo, {k: v for k, v in UPSTREAM_V2_CHANGES.items() if "scheduler" in k or "base.py" in k})
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "Scheduler: drop finished requests in update_running")
    git(repo, "tag", "v2")
    return repo


TRICKY_PLUGIN = {
    "pyproject.toml": """
        [project]
        name = "tricky"
        version = "0.1.0"

        [project.entry-points."sglang.srt.plugins"]
        tricky = "tricky.hooks:load"
        """,
    "tricky/__init__.py": "",
    "tricky/hooks/__init__.py": """
        import importlib
        import pkgutil

        def load():
            for info in pkgutil.iter_modules(__path__):  # auto-discovery: every submodule loads
                importlib.import_module(f"{__name__}.{info.name}")
        """,
    "tricky/hooks/norm.py": """
        import importlib

        from sglang.srt.plugins.hook_registry import HookType, plugin_hook

        def fwd(original_fn, *args, **kwargs):
            return original_fn(*args, **kwargs)

        plugin_hook("sglang.srt.layers.layernorm.RMSNorm.forward_typo", type=HookType.AROUND)(fwd)
        plugin_hook("sglang.srt.models.registry.RMSNorm.forward_native", type=HookType("around"))(fwd)
        plugin_hook("sglang.srt.models.registry.Norm.forward_native", type=HookType.BEFORE)(fwd)
        plugin_hook("sglang.srt.layers.layernorm.RMSNorm", type=HookType.AROUND)(fwd)

        def apply():
            import sglang.srt.distributed.parallel_state as ps

            setattr(ps, "no_such_function", fwd)
            activation = importlib.import_module("sglang.srt.layers.activation")
            activation.silu_and_mul = fwd

        apply()
        """,
    "tricky/platform.py": """
        from sglang.srt.platforms.interface import SRTPlatform

        class TrickyPlatform(SRTPlatform):
            @property
            def device_name(self):
                return "tricky"
        """,
}


@pytest.fixture(scope="session")
def tricky_plugin_dir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("tricky")
    write_tree(root, TRICKY_PLUGIN)
    return root


@pytest.fixture(scope="session")
def plugin_dir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("xplug")
    write_tree(root, PLUGIN)
    return root


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path_factory, monkeypatch):
    """Every test shares one cache dir of its own (never the user's ~/.cache)."""
    cache = tmp_path_factory.getbasetemp() / "harness-cache"
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(cache))
    return cache


def _vllm_release(tmp_path_factory, spec: str):
    """A real vLLM release, fetched once per session into the cache the CLI runs of the tests
    read (isolated_cache)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HARNESS_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "harness-cache"))
        return real_releases(spec)[0]


@pytest.fixture(scope="session")
def vllm_0221(tmp_path_factory):
    return _vllm_release(tmp_path_factory, "vllm==0.22.1")


@pytest.fixture(scope="session")
def vllm_0271(tmp_path_factory):
    return _vllm_release(tmp_path_factory, "vllm==0.27.1")
