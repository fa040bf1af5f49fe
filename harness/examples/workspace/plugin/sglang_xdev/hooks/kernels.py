"""Kernel replacements keyed by (upstream module path, kernel name), plus the attention backend."""

from sglang.srt import server_args
from sglang.srt.layers.attention.attention_registry import register_attention_backend

KERNEL_REPLACEMENTS = {}


def xdev_silu_and_mul(x, out=None):
    raise NotImplementedError("runs on xdev only")


def xdev_rmsnorm(x, weight, eps):
    raise NotImplementedError("runs on xdev only")


@register_attention_backend("xdev_attn")
def create_xdev_attn_backend(runner):
    from sglang_xdev.attention import XdevAttnBackend

    return XdevAttnBackend(runner)


def install():
    KERNEL_REPLACEMENTS[("sglang.srt.layers.activation", "silu_and_mul")] = xdev_silu_and_mul
    KERNEL_REPLACEMENTS[("sglang.srt.layers.layernorm", "rmsnorm")] = xdev_rmsnorm
    server_args.ATTENTION_BACKEND_CHOICES.append("xdev_attn")
