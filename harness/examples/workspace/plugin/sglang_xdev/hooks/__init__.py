"""Entry point of group sglang.srt.plugins: import the hook modules, which register on import."""

import importlib

from sglang.srt.plugins.hook_registry import HookRegistry, HookType

from sglang_xdev.hooks import kernels

# legacy_graph is kept for the 0.5.1x branch and is no longer imported.
_HOOK_MODULES = ["scheduler", "distributed", "memory"]

_MODEL_RUNNER = "sglang.srt.model_executor.model_runner.ModelRunner"


def _bind_threads(original_fn, *args, **kwargs):
    kwargs.setdefault("numa_aware", True)
    return original_fn(*args, **kwargs)


def register_all():
    for name in _HOOK_MODULES:
        importlib.import_module(f"{__name__}.{name}")
    HookRegistry.register(_MODEL_RUNNER + ".init_threads_binding", _bind_threads, HookType.AROUND)
    kernels.install()
