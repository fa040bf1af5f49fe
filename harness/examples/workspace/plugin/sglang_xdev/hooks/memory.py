from sglang.srt.plugins.hook_registry import HookType, plugin_hook

from sglang_xdev import runtime
from sglang_xdev.hooks.targets import UTILS


@plugin_hook(UTILS + ".get_available_gpu_memory", type=HookType.REPLACE)
def get_available_xdev_memory(device, gpu_id, distributed=False, empty_cache=True, cpu_group=None):
    # Replaces upstream get_available_gpu_memory (0.5.17): reads xdev counters.
    if empty_cache:
        runtime.empty_cache()
    return runtime.total_memory(gpu_id) / (1 << 30)
