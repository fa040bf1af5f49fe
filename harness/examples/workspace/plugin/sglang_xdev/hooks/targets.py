"""Upstream module paths shared by the hook modules."""

PARALLEL_STATE = "sglang.srt.distributed.parallel_state"
UTILS = "sglang.srt.utils"
