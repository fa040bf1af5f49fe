"""The SGLang plugin API every test world's upstream shares: `sglang.srt.plugins.hook_registry`
and `sglang.srt.platforms.device_mixin`, shaped like 0.5.23's (HookRegistry.register with its
`source` keyword, apply_hooks, plugin_hook; PlatformEnum, DeviceMixin). Each world keeps its
own two versions of what changes (the platform interface, schedulers, utilities) on purpose:
that is what its tests are about. Texts are dedented by the worlds' write_tree helpers."""

HOOK_REGISTRY = '''
    from enum import Enum


    class HookType(Enum):
        BEFORE = "before"
        AFTER = "after"
        AROUND = "around"
        REPLACE = "replace"


    class HookRegistry:
        _hooks = []

        @classmethod
        def register(cls, target, hook, hook_type=HookType.AFTER, *, source=None):
            cls._hooks.append((target, hook, hook_type))

        @classmethod
        def apply_hooks(cls):
            pass


    def plugin_hook(target, type=HookType.AFTER):
        def decorator(fn):
            HookRegistry.register(target, fn, type)
            return fn
        return decorator
    '''

DEVICE_MIXIN = '''
    import enum


    class PlatformEnum(enum.Enum):
        CUDA = enum.auto()
        OOT = enum.auto()


    class DeviceMixin:
        device_name: str = "unknown"
        device_type: str = "cuda"

        def is_cuda(self) -> bool:
            return False

        def get_device_name(self, device_id: int = 0) -> str:
            raise NotImplementedError

        def empty_cache(self) -> None:
            pass
    '''
