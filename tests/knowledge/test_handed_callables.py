"""What a caller or a construction hands a function, used as the thing it is (the nineteenth
held-out set): SGLang's `plugin_hook(target, type=…)` decorator kept in a name and applied later
(`around = plugin_hook(…)` then `around(fn)` or `@around`); register_attention_backend kept on
an object or handed in as a parameter's default and applied by hand (`reg(name)(factory)`, after
`if (reg := self.registrar) is None: return`); the engine's platform instance handed to a helper
(`_enabled(current_platform)` calling `platform.m()`), judged as `current_platform.m()` is."""

from __future__ import annotations

import pytest
from kinds_support import INTERFACE_WITHOUT_MHA_POOL, check, plugin, pyproject, upstream_pair

SAMPLER = "sglang.srt.layers.sampler.Sampler"


@pytest.fixture(scope="module")
def upstreams(tmp_path_factory):
    return upstream_pair(tmp_path_factory)


@pytest.fixture(scope="module")
def dropped(tmp_path_factory):
    return upstream_pair(tmp_path_factory, new=INTERFACE_WITHOUT_MHA_POOL)


HOOK_HEAD = "from sglang.srt.plugins.hook_registry import HookType, plugin_hook\n\nTARGET = 'sglang.srt.layers.sampler.Sampler.{m}'\n\n\n"
HOOK_BODY = "def count(original_fn, self, *args, **kwargs):\n    return original_fn(self, *args, **kwargs)\n\n\n"
HELD_DECORATORS = {
    "local_name_applied_by_hand": HOOK_HEAD + HOOK_BODY + "def register():\n    around = plugin_hook(TARGET, type=HookType.AROUND)\n    around(count)\n",
    "module_name_applied_by_hand": HOOK_HEAD + "around = plugin_hook(TARGET, type=HookType.AROUND)\n\n\n" + HOOK_BODY + "def register():\n    around(count)\n",
    "module_name_as_a_decorator": HOOK_HEAD + "around = plugin_hook(TARGET, type=HookType.AROUND)\n\n\n@around\n" + HOOK_BODY + "def register():\n    pass\n",
}


@pytest.mark.parametrize("method,status,code", [("gone_method", "missing", 1), ("forward", "ok", 0)])
@pytest.mark.parametrize("spelling", sorted(HELD_DECORATORS))
def test_a_plugin_hook_decorator_kept_in_a_name_registers_a_hook(upstreams, tmp_path, spelling, method, status, code):
    _, new = upstreams
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"p": "p:register"}), "p/__init__.py": HELD_DECORATORS[spelling].format(m=method)})
    code_, doc = check(root, new)
    hooks = [f for f in doc["findings"] if f["kind"] == "hook"]
    assert [(f["target"], f["status"]) for f in hooks] == [(f"{SAMPLER}.{method}", status)] and code_ == code, doc["findings"]


REGISTRY = "sglang.srt.layers.attention.attention_registry"
ATTENTION = ("from typing import Callable, Optional\n\nfrom sglang.srt.layers.attention.attention_registry import register_attention_backend\n\n\n"
             "def _mine(x):\n    return x\n\n\ndef create(runner):\n    return runner\n\n\n")
HELD_REGISTRARS = {
    "kept_on_self_walrus_guard": ATTENTION + ("class Backend:\n    def __init__(self, registrar: Optional[Callable] = {reg}):\n        self.registrar = registrar\n\n"
                                              "    def install(self):\n        if (reg := self.registrar) is None:\n            return\n        reg('dev')(create)\n\n\n"
                                              "def register():\n    Backend().install()\n"),
    "kept_on_self_called_there": ATTENTION + ("class Backend:\n    def __init__(self, registrar):\n        self.registrar = registrar\n\n"
                                              "    def install(self):\n        self.registrar('dev')(create)\n\n\n"
                                              "def register():\n    Backend({reg}).install()\n"),
    "parameter_default": ATTENTION + "def install(reg=None):\n    reg('dev')(create)\n\n\ndef register():\n    install({reg})\n",
    # imported in __init__ and kept on self (twenty-sixth set F36-f2): in a try with a None
    # fallback, plainly, made by a classmethod; the name imported as (reg names which function)
    "imported_in_init_try": ATTENTION + ("class Backend:\n    def __init__(self):\n        try:\n"
                                         "            from sglang.srt.layers.attention.attention_registry import {reg} as found\n"
                                         "        except ImportError:\n            found = None\n        self._register = found\n\n"
                                         "    def install(self):\n        if self._register is None:\n            return\n"
                                         "        self._register('dev')(create)\n\n\ndef register():\n    Backend().install()\n"),
    "imported_in_init": ATTENTION + ("class Backend:\n    def __init__(self, name):\n        from p import {reg} as found\n\n"
                                     "        self.name, self._register = name, found\n\n"
                                     "    def install(self):\n        self._register(self.name)(create)\n\n\n"
                                     "def register():\n    Backend('dev').install()\n"),
    "module_imported_in_init_object_at_module_level": ATTENTION + (
        "class Backend:\n    def __init__(self, name='dev'):\n        import p\n\n        self._register = p.{reg}\n        self.name = name\n\n"
        "    def install(self):\n        self._register(self.name)(create)\n\n\nBACKEND = Backend(name='dev')\n\n\n"
        "def register():\n    BACKEND.install()\n"),
}


@pytest.mark.parametrize("registrar,registered", [("register_attention_backend", True), ("_mine", False)])
@pytest.mark.parametrize("spelling", sorted(HELD_REGISTRARS))
def test_a_registrar_handed_in_registers_where_it_is_the_upstream_one(upstreams, tmp_path, spelling, registrar, registered):
    """`reg(name)(factory)` registers an attention backend where reg holds upstream's
    register_attention_backend (the registration is checked); where it holds the plugin's own
    function it registers nothing upstream's."""
    _, new = upstreams
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"p": "p:register"}), "p/__init__.py": HELD_REGISTRARS[spelling].format(reg=registrar)})
    code, doc = check(root, new)
    found = [(f["target"], f["status"]) for f in doc["findings"] if f["kind"] == "attention_backend"]
    assert found == ([(f"{REGISTRY}.register_attention_backend", "ok")] if registered else []) and code == 0, doc["findings"]


PLATFORM = ("from sglang.srt.platforms.interface import SRTPlatform\n\n\nclass P(SRTPlatform):\n"
            "    def get_default_attention_backend(self) -> str:\n        return 'torch_native'\n\n"
            "    def pool_mb(self) -> int:\n        return 512\n")
HANDED = {
    "helper_parameter": "def _enabled(platform):\n    return platform.{m}() and platform.pool_mb() > 0\n\n\ndef use():\n    return _enabled(current_platform)\n",
    "helper_keyword": "def _enabled(*, platform):\n    return platform.{m}()\n\n\ndef use():\n    return _enabled(platform=current_platform)\n",
    "two_helpers_deep": ("def _probe(platform):\n    return platform.{m}()\n\n\ndef _enabled(platform):\n    return _probe(platform)\n\n\n"
                         "def use():\n    return _enabled(current_platform)\n"),
}


@pytest.mark.parametrize("spelling", sorted(HANDED))
def test_the_platform_instance_handed_to_a_helper_is_read_as_the_platform(dropped, tmp_path, spelling):
    """`_enabled(current_platform)` then `platform.m()`: m is read on the activated class (its
    MRO: the plugin's class, then upstream's base). 0.10.0's SRTPlatform dropped
    get_mha_kv_pool_cls, which the plugin's class does not define: AttributeError where it runs;
    its own pool_mb and the inherited init_backend are there."""
    old, new = dropped
    helper = "from sglang.srt.platforms import current_platform\n\n\n" + HANDED[spelling]
    for method, missing in (("get_mha_kv_pool_cls", True), ("init_backend", False)):
        root = plugin(tmp_path / method, {"pyproject.toml": pyproject(platforms={"p": "p:activate"}),
                                          "p/__init__.py": PLATFORM + "\n\ndef activate():\n    return 'p.P'\n\n\nfrom p import helpers  # noqa: E402\n",
                                          "p/helpers.py": helper.format(m=method)})
        code, doc = check(root, new, "--baseline", old)
        reads = [f for f in doc["findings"] if f["file"] == "p/helpers.py" and f["target"].endswith(f".{method}")]
        assert [(f["status"] == "missing", f["breaking"]) for f in reads] == ([(True, True)] if missing else [(False, False)]) or (
            not missing and not reads), doc["findings"]
        assert code == (1 if missing else 0), doc["findings"]
        assert not [f for f in doc["findings"] if f["target"].endswith(".pool_mb") and f["breaking"]], doc["findings"]
