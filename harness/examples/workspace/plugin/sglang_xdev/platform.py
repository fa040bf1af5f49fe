"""The xdev platform: reports a cuda-like identity so upstream CUDA paths are reused."""

from sglang.srt.platforms.device_mixin import DeviceMixin, PlatformEnum
from sglang.srt.platforms.interface import SRTPlatform

from sglang_xdev import runtime


class XdevDeviceMixin(DeviceMixin):
    _enum = PlatformEnum.OOT
    device_name = "xdev"
    device_type = "cuda"  # cuda-like: reuse the CUDA graph runner and friends

    def get_device_total_memory(self, device_id: int = 0) -> int:
        return runtime.total_memory(device_id)

    def get_device_name(self, device_id: int = 0) -> str:
        return runtime.device_name(device_id)

    def empty_cache(self) -> None:
        runtime.empty_cache()

    def synchronize(self) -> None:
        runtime.synchronize()

    def get_torch_distributed_backend_str(self) -> str:
        return "xccl"


class XdevPlatform(SRTPlatform, XdevDeviceMixin):
    def apply_server_args_defaults(self, server_args) -> None:
        server_args.attention_backend = "xdev_attn"
        server_args.sampling_backend = "pytorch"
        server_args.mem_fraction_static = 0.8

    def get_default_attention_backend(self) -> str:
        return "xdev_attn"

    def get_graph_runner_cls(self) -> type:
        from sglang_xdev.graph import XdevGraphRunner

        return XdevGraphRunner

    def get_mha_kv_pool_cls(self) -> type:
        from sglang_xdev.memory import XdevMHATokenToKVPool

        return XdevMHATokenToKVPool

    def get_mla_kv_pool_cls(self) -> type:
        from sglang_xdev.memory import XdevMLATokenToKVPool

        return XdevMLATokenToKVPool

    def get_compile_backend(self, mode: str | None = None) -> str:
        return "xdev_inductor"

    def support_cuda_graph(self) -> bool:
        return True

    def supports_fp8(self) -> bool:
        return False

    def init_backend(self) -> None:
        runtime.init()

    def get_dispatch_key_name(self) -> str:
        return "xdev"
