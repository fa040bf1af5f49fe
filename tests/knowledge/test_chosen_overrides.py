"""A platform method the plugin picks by a condition the machine decides (`m = a if
os.path.isdir(…) else b`: after the class, in its body, or by setattr) may be either function:
each is judged as an override of upstream's. On sglang 0.5.23 every upstream call of
DeviceMixin.get_device_uuid passes the device id positionally (device_mixin.py:199;
entrypoints/engine.py:794, checkpoint_engine/checkpoint_engine_worker.py:118, …): an alternative
taking `(self, index)` binds each, one taking `(self)` raises TypeError there. Before, neither
was seen (the name read as bound otherwise): no finding at all."""

from __future__ import annotations

import pytest
from kinds_support import check, plugin
from real_releases import real_releases

TARGET = "sglang.srt.platforms.interface.SRTPlatform.get_device_uuid"

FUNCTIONS = """
import os

from sglang.srt.platforms.interface import SRTPlatform


def _from_sysfs(self, index: int) -> str:
    with open(f"/sys/class/xdev/card{index}/uuid") as f:
        return f.read().strip()


def _fallback(self{second}) -> str:
    return "xdev-0"
"""

SPELLINGS = {
    "assigned after the class": FUNCTIONS + """

class XPlatform(SRTPlatform):
    def get_default_attention_backend(self) -> str:
        return "torch_native"


XPlatform.get_device_uuid = _from_sysfs if os.path.isdir("/sys/class/xdev") else _fallback
""",
    "assigned in the class body": FUNCTIONS + """

class XPlatform(SRTPlatform):
    def get_default_attention_backend(self) -> str:
        return "torch_native"

    get_device_uuid = _fallback if not os.path.isdir("/sys/class/xdev") else _from_sysfs
""",
    "set by setattr": FUNCTIONS + """

class XPlatform(SRTPlatform):
    def get_default_attention_backend(self) -> str:
        return "torch_native"


setattr(XPlatform, "get_device_uuid", _from_sysfs if os.path.exists("/sys/class/xdev") else _fallback)
""",
}

PYPROJECT = '[project]\nname = "xdev"\nversion = "0.1"\n[project.entry-points."sglang.srt.platforms"]\nxdev = "xdev:activate"\n'
ACTIVATE = 'def activate():\n    return "xdev.platform.XPlatform"\n'


@pytest.fixture(scope="module")
def release():
    return real_releases("sglang==0.5.23")


def _overrides(tmp_path, source: str) -> tuple[int, list[dict]]:
    root = plugin(tmp_path, {"pyproject.toml": PYPROJECT, "xdev/__init__.py": ACTIVATE, "xdev/platform.py": source})
    code, doc = check(root, "sglang==0.5.23")
    return code, [f for f in doc["findings"] if f["target"] == TARGET]


@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
def test_each_function_a_choice_may_pick_is_judged(release, tmp_path, spelling):
    code, found = _overrides(tmp_path, SPELLINGS[spelling].replace("{second}", ""))
    assert sorted(f["breaking"] for f in found) == [False, True], found
    broken = next(f for f in found if f["breaking"])
    assert "override (self)" in broken["detail"] and "TypeError" in broken["detail"] and code == 1, broken["detail"]


@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
def test_a_choice_between_functions_that_each_bind_is_not_breaking(release, tmp_path, spelling):
    code, found = _overrides(tmp_path, SPELLINGS[spelling].replace("{second}", ", index"))
    assert found and not any(f["breaking"] for f in found) and code == 0, found
    # each upstream call is named once, however many ways it was found
    assert all(f["detail"].count("entrypoints/engine.py:794 ") == 1 for f in found), [f["detail"] for f in found]
