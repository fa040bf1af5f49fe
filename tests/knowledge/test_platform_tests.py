"""Upstream calls under a platform test the plugin's own platform class decides: a call made
only `if current_platform.is_out_of_tree():` never runs with a platform class whose `_enum`
is `PlatformEnum.CUDA` (SGLang 0.5.23 srt/utils/common.py:992, device_mixin.py:151), so an
override that makes its optional parameter required is not broken by it; and a call on
another object named `current_platform` (0.5.23's multimodal_gen has its own) never reaches
the plugin's SRT platform class at all (docs/static-check.md, "Platform tests")."""

from __future__ import annotations

import pytest
from kinds_support import COMMON, check, plugin, pyproject
from knowledge_support import write_tree

UPSTREAM = {
    **COMMON,
    "sglang/version.py": '__version__ = "0.10.0"\n',
    "sglang/srt/platforms/device_mixin.py": """
        import enum


        class PlatformEnum(enum.Enum):
            CUDA = enum.auto()
            ROCM = enum.auto()
            OOT = enum.auto()
            UNSPECIFIED = enum.auto()


        class DeviceMixin:
            _enum: PlatformEnum = PlatformEnum.UNSPECIFIED

            def is_out_of_tree(self) -> bool:
                \"\"\"True for externally-registered platforms.\"\"\"
                return self._enum == PlatformEnum.OOT

            def is_cuda_alike(self) -> bool:
                return self._enum in (PlatformEnum.CUDA, PlatformEnum.ROCM)

            def get_device_total_memory(self, device_id: int = 0) -> int:
                raise NotImplementedError
        """,
    "sglang/srt/utils.py": """
        from sglang.srt.platforms import current_platform


        def memory_capacity(gpu_id):
            if current_platform.is_out_of_tree():
                return current_platform.get_device_total_memory()
            return current_platform.get_device_total_memory(gpu_id)
        """,
    "sglang/srt/graphs.py": """
        from sglang.srt import platforms


        def budget():
            if not platforms.current_platform.is_cuda_alike():
                return platforms.current_platform.get_device_total_memory()
            return 0
        """,
    # another engine's own platform object of the same name: never the plugin's SRT platform
    "sglang/media/__init__.py": "",
    "sglang/media/platforms.py": """
        current_platform = None
        """,
    # a module-level choice between two classes of that other engine (0.5.17 multimodal_gen musa.py:378)
    "sglang/media/musa.py": """
        class _Base:
            @classmethod
            def get_device_total_memory(cls):
                return 0


        class Mtml(_Base):
            pass


        class NonMtml(_Base):
            pass


        MusaPlatform = Mtml if __debug__ else NonMtml


        def probe():
            return MusaPlatform.get_device_total_memory()
        """,
    "sglang/media/worker.py": """
        from sglang.media.platforms import current_platform


        def headroom():
            return current_platform.get_device_total_memory() / 2
        """,
}

# how the platform class decides `is_out_of_tree()` / `is_cuda_alike()`: (class body lines, an
# extra mixin module, whether the no-argument call at sglang/srt/utils.py runs)
SPELLINGS = {
    "enum_in_class_body": ("_enum = PlatformEnum.CUDA", "", False),
    "enum_on_a_mixin": ("pass", "_enum = PlatformEnum.ROCM", False),
    "predicate_overridden": ("def is_out_of_tree(self):\n        return False\n\n    def is_cuda_alike(self):\n        return True", "", False),
    # negatives: the plugin is out of tree, or sets its enum on the instance (not decided)
    "out_of_tree_enum": ("_enum = PlatformEnum.OOT", "", True),
    "enum_set_on_the_instance": ("def __init__(self):\n        self._enum = PlatformEnum.CUDA", "", True),
}


@pytest.fixture(scope="module")
def upstream(tmp_path_factory):
    root = tmp_path_factory.mktemp("up")
    write_tree(root, UPSTREAM)
    return str(root)


@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
def test_calls_under_a_platform_test_the_plugin_class_decides(upstream, tmp_path, spelling):
    body, mixin, runs = SPELLINGS[spelling]
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(platforms={"cl": "cl:activate"}),
        "cl/__init__.py": """
            def activate():
                return "cl.platform:ClPlatform"
            """,
        "cl/driver.py": f"""
            from sglang.srt.platforms.device_mixin import PlatformEnum


            class Driver:
                {mixin or "pass"}
            """,
        "cl/platform.py": (
            "from sglang.srt.platforms.device_mixin import PlatformEnum\n"
            "from sglang.srt.platforms.interface import SRTPlatform\n\n"
            "from cl.driver import Driver\n\n\n"
            "class ClPlatform(Driver, SRTPlatform):\n"
            f"    {body}\n\n"
            "    def get_default_attention_backend(self) -> str:\n"
            "        return 'triton'\n\n"
            "    def get_device_total_memory(self, device_id: int) -> int:\n"
            "        return 48 << 30\n"
        ),
    })
    code, doc = check(root, upstream)
    found = [f for f in doc["findings"] if f["target"].endswith(".get_device_total_memory")]
    assert found and found[0]["live"], doc["findings"]
    # another object named current_platform; a class chosen between two of another engine
    assert "sglang/media/worker.py" not in (found[0]["detail"] or "") and "sglang/media/musa.py" not in (found[0]["detail"] or "")
    assert found[0]["status"] == "signature_changed", found[0]
    assert found[0]["breaking"] is runs, found[0]["detail"]
    assert code == (1 if runs else 0)
    if runs:
        assert "sglang/srt/utils.py:6" in found[0]["detail"]
    else:
        assert "false for the plugin's platform class cl.platform.ClPlatform" in found[0]["detail"]
