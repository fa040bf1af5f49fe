"""A platform method the plugin picks by a condition the machine decides (`m = a if
os.path.isdir(…) else b`: after the class, in its body, or by setattr) may be either function:
each is judged as an override of upstream's. On sglang 0.5.23 every upstream call of
DeviceMixin.get_device_uuid passes the device id positionally (device_mixin.py:199;
entrypoints/engine.py:794, checkpoint_engine/checkpoint_engine_worker.py:118, …): an alternative
taking `(self, index)` binds each, one taking `(self)` raises TypeError there. Before, neither
was seen (the name read as bound otherwise): no finding at all. The same holds for a value the
platform's `__init__` puts on every instance (a bound method, a partial of one) and for a callable
object in the class body: each is called without self."""

from __future__ import annotations

import re

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
    # put on every instance by the platform's own __init__: bound methods found before the class's
    # attribute, called without self (the base's device_id is what a call passes first)
    "set on the instance by __init__": """
import os

from sglang.srt.platforms.interface import SRTPlatform


class XPlatform(SRTPlatform):
    def __init__(self):
        super().__init__()
        if os.path.isdir("/sys/class/xdev"):
            self.get_device_uuid = self._from_sysfs
        else:
            self.get_device_uuid = self._fallback

    def get_default_attention_backend(self) -> str:
        return "torch_native"

    def _from_sysfs(self, index: int) -> str:
        return f"xdev-{index}"

    def _fallback(self{second}) -> str:
        return "xdev-0"
""",
    "a partial or a bound method chosen in __init__": """
import functools
import os

from sglang.srt.platforms.interface import SRTPlatform


class XPlatform(SRTPlatform):
    def __init__(self):
        super().__init__()
        self.get_device_uuid = functools.partial(self._read, "/sys/class/xdev") if os.path.isdir("/sys/class/xdev") else self._fallback

    def get_default_attention_backend(self) -> str:
        return "torch_native"

    def _read(self, root: str, index: int) -> str:
        return f"{root}/card{index}"

    def _fallback(self{second}) -> str:
        return "xdev-0"
""",
    # a plugin class's instance with __call__ (no __get__) in the class body is not bound either
    "callable objects in the class body": """
import os

from sglang.srt.platforms.interface import SRTPlatform


class _Sysfs:
    def __call__(self, index: int) -> str:
        return f"xdev-{index}"


class _Fallback:
    def __init__(self, prefix: str):
        self.prefix = prefix

    def __call__(self{second}) -> str:
        return self.prefix


class XPlatform(SRTPlatform):
    def get_default_attention_backend(self) -> str:
        return "torch_native"

    get_device_uuid = _Sysfs() if os.path.isdir("/sys/class/xdev") else _Fallback(prefix="xdev")
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
    # (a value put on the instance takes no self: its parameters read `()`)
    assert re.search(r"override \((self)?\)", broken["detail"]) and "TypeError" in broken["detail"] and code == 1, broken["detail"]


@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
def test_a_choice_between_functions_that_each_bind_is_not_breaking(release, tmp_path, spelling):
    code, found = _overrides(tmp_path, SPELLINGS[spelling].replace("{second}", ", index"))
    assert found and not any(f["breaking"] for f in found) and code == 0, found
    # each upstream call is named once, however many ways it was found
    assert all(f["detail"].count("entrypoints/engine.py:794 ") == 1 for f in found), [f["detail"] for f in found]
