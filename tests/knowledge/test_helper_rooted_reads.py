"""Reads through what a plugin helper returns (set 21 F20-e2): `platform().m()` where the helper
returns the engine's platform instance reads `m` on the activated class, as `current_platform.m()`
does -- a method the plugin class defines is its own, one nobody defines is an AttributeError;
`_sampler().Sampler.gone` where the helper returns an upstream module reads that module."""

from __future__ import annotations

import pytest
from kinds_support import IFACE, check, plugin, pyproject, upstream_pair


@pytest.fixture(scope="module")
def upstreams(tmp_path_factory):
    return upstream_pair(tmp_path_factory)


# how the helper hands the platform instance over
HELPERS = {
    "local_import": ("def platform():\n    from sglang.srt.platforms import current_platform\n\n    return current_platform\n", "platform()"),
    "module_import": ("from sglang.srt.platforms import current_platform\n\n\ndef platform():\n    return current_platform\n", "platform()"),
    "static_accessor": ("import sglang.srt.platforms as platforms\n\n\nclass Runtime:\n    @staticmethod\n    def platform():\n"
                        "        return platforms.current_platform\n", "Runtime.platform()"),
    # the instance's class (set 22 F20-d1): `type(current_platform).m()` reads m on the activated class
    "type_of_the_instance": ("from sglang.srt.platforms import current_platform  # noqa: F401\n", "type(current_platform)"),
}


@pytest.mark.parametrize("spelling", sorted(HELPERS))
def test_a_method_read_on_the_platform_a_helper_returns_is_judged_on_the_activated_class(upstreams, tmp_path, spelling):
    old, _ = upstreams
    helper, call = HELPERS[spelling]
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(platforms={"dev": "p:activate"}, plugins={"hooks": "p.hooks:register"}),
        "p/__init__.py": "def activate():\n    return 'p.platform.DevPlatform'\n",
        "p/runtime.py": helper,
        "p/platform.py": ("from sglang.srt.platforms.interface import SRTPlatform\n\n\nclass DevPlatform(SRTPlatform):\n"
                          "    def get_default_attention_backend(self):\n        return 'torch_native'\n\n"
                          "    def workspace_mib(self):\n        return 512\n"),
        "p/hooks.py": (f"from p.runtime import {call.partition('(')[0].partition('.')[0] if call.endswith('()') else 'current_platform'}\n\n\n"
                       f"def register():\n    reserved = {call}.workspace_mib()\n    pinned = {call}.pinned_mib()\n    return reserved + pinned\n"),
    }, name=spelling)
    code, doc = check(root, old)
    found = {f["line"]: f for f in doc["findings"] if f["target"] == f"{IFACE}.pinned_mib" or f["target"] == f"{IFACE}.workspace_mib"}
    assert [f["status"] for f in found.values() if f["breaking"]] == ["missing"] and code == 1, doc["findings"]
    assert "pinned_mib" in next(f for f in found.values() if f["breaking"])["detail"]
    assert not [f for f in found.values() if "workspace_mib" in f["target"] and f["breaking"]], found


# a helper returning an upstream module: what the chain reads there must exist (0.10.0 below
# drops Scheduler.get_next_batch, the module stays)
MODULE_HELPERS = {
    "import_module": "import importlib\n\n\ndef _scheduler():\n    return importlib.import_module('sglang.srt.managers.scheduler')\n",
    "local_import": "def _scheduler():\n    from sglang.srt.managers import scheduler\n\n    return scheduler\n",
    "cached_import": ("import functools\nimport sys\n\n\n@functools.cache\ndef _scheduler():\n"
                      "    import sglang.srt.managers.scheduler\n\n    return sys.modules['sglang.srt.managers.scheduler']\n"),
}


@pytest.mark.parametrize("spelling", sorted(MODULE_HELPERS))
def test_a_member_read_on_a_module_a_helper_returns_is_a_reference(tmp_path_factory, tmp_path, spelling):
    old, new = upstream_pair(tmp_path_factory, new={"sglang/srt/managers/scheduler.py": "class Scheduler:\n    pass\n"})
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"m": "m:register"}),
        "m/__init__.py": MODULE_HELPERS[spelling] + "\n\ndef register():\n    return _scheduler().Scheduler.get_next_batch\n",
    }, name=spelling)
    code, doc = check(root, old)
    assert code == 0 and not [f for f in doc["findings"] if f["breaking"]], doc["findings"]
    code, doc = check(root, new)
    gone = [f for f in doc["findings"] if f["target"] == "sglang.srt.managers.scheduler.Scheduler.get_next_batch"]
    assert [f["status"] for f in gone if f["breaking"]] == ["missing"] and code == 1, doc["findings"]
