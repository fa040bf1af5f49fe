import time

from sglang.srt.plugins.hook_registry import HookType, plugin_hook

_SCHEDULER = "sglang.srt.managers.scheduler.Scheduler"


@plugin_hook(f"{_SCHEDULER}.handle_generate_request", type=HookType.AROUND)
def time_admission(original_fn, *args, **kwargs):
    start = time.perf_counter()
    try:
        return original_fn(*args, **kwargs)
    finally:
        time_admission.last_seconds = time.perf_counter() - start


@plugin_hook(f"{_SCHEDULER}.init_tokenizer", type=HookType.AFTER)
def tokenizer_ready(result, *args, **kwargs):
    return result
