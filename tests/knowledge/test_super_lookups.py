"""`super().m` (the thirty-sixth held-out set's V and F06 variants): Python looks m up in the
class dictionaries after the current class only (the Python reference, "Invoking Descriptors",
super binding): never on the instance, never through a base's `__getattr__`, so a base defining
`__getattr__` leaves a missing m missing, not unknown. And a plugin subclass method calling
`super().<its own name>` was written over a base that defined it: where no base does any more and
no baseline says when it went, it is a dropped override (not_on_base, breaking), not the plugin's
own method. Held on `super().m(…)`, `super(C, self).m(…)` and a bound `super().m` read."""

from __future__ import annotations

import pytest
from kinds_support import check, plugin, pyproject, upstream_pair

# the new release's platform answers unknown instance attributes in __getattr__ (vLLM's
# Platform does) and has no `supports_legacy_kv`
GETATTR_INTERFACE = {"sglang/srt/platforms/interface.py": """
    from sglang.srt.platforms.device_mixin import DeviceMixin

    class SRTPlatform(DeviceMixin):
        def get_default_attention_backend(self) -> str:
            raise NotImplementedError

        def init_backend(self) -> None:
            pass

        def __getattr__(self, key):
            raise AttributeError(key)
    """}

SUPER_READS = {
    "super_call": "super().{member}()",
    "super_with_arguments": "super(P, self).{member}()",
    "bound_read": "check = super().{member}\n        check()",
}


@pytest.fixture(scope="module")
def new(tmp_path_factory):
    return upstream_pair(tmp_path_factory, new=GETATTR_INTERFACE)[1]


@pytest.mark.parametrize("spelling", sorted(SUPER_READS))
def test_a_bases_getattr_does_not_answer_super(new, tmp_path, spelling):
    source = ("from sglang.srt.platforms.interface import SRTPlatform\n\n\n"
              "class P(SRTPlatform):\n"
              "    def get_default_attention_backend(self) -> str:\n        return 'torch_native'\n\n"
              "    def init_backend(self) -> None:\n"
              f"        {SUPER_READS[spelling].format(member='supports_legacy_kv')}\n\n\n"
              "def activate():\n    return 'p:P'\n")
    code, doc = check(plugin(tmp_path, {"pyproject.toml": pyproject(platforms={"p": "p:activate"}), "p/__init__.py": source}), new)
    found = [f for f in doc["findings"] if f["target"].endswith(".supports_legacy_kv")]
    assert found and {f["status"] for f in found} == {"missing"}, doc["findings"]
    assert "AttributeError" in found[0]["detail"]


@pytest.mark.parametrize("spelling", sorted(SUPER_READS))
def test_a_subclass_method_extending_a_dropped_base_method_is_a_dropped_override(tmp_path_factory, tmp_path, spelling):
    new = upstream_pair(tmp_path_factory)[1]  # its Sampler has forward only
    body = SUPER_READS[spelling].format(member="apply_penalties").replace("super(P, self)", "super(DevSampler, self)")
    source = ("from sglang.srt.layers.sampler import Sampler\n\n\n"
              "class DevSampler(Sampler):\n"
              "    def apply_penalties(self):\n"
              f"        {body}\n\n"
              "    def warm_up(self):\n        return None\n\n\n"
              "def register():\n    return DevSampler\n")
    code, doc = check(plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"p": "p:register"}), "p/__init__.py": source}), new)
    dropped = [f for f in doc["findings"] if f["target"] == "sglang.srt.layers.sampler.Sampler.apply_penalties" and f["status"] == "not_on_base"]
    assert len(dropped) == 1 and dropped[0]["breaking"] is True and code == 1, doc["findings"]
    assert "calls super().apply_penalties" in dropped[0]["detail"] and "pass --baseline" in dropped[0]["detail"]
    # warm_up calls no base method of its name: the plugin's own method, not reported
    assert not [f for f in doc["findings"] if f["target"].endswith(".warm_up")], doc["findings"]


def test_on_its_own_base_or_over_a_plugin_base_it_is_no_dropped_override(tmp_path_factory, tmp_path):
    """On the release the plugin was written for, what its bases lack the plugin never had (the
    real vllm-ascend 0.23.0.post1 on vllm 0.23.0); and a `super()` that reaches a plugin base
    defining the method calls that one."""
    new = upstream_pair(tmp_path_factory)[1]
    own = ("from sglang.srt.layers.sampler import Sampler\n\n\n"
           "class DevSampler(Sampler):\n    def apply_penalties(self):\n        return super().apply_penalties()\n\n\n"
           "def register():\n    return DevSampler\n")
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"p": "p:register"}), "p/__init__.py": own})
    code, doc = check(root, new, "--baseline", new)
    assert not [f for f in doc["findings"] if f["status"] == "not_on_base"] and code == 0, doc["findings"]
    layered = ("from sglang.srt.layers.sampler import Sampler\n\n\n"
               "class BaseSampler(Sampler):\n    def apply_penalties(self):\n        return None\n\n\n"
               "class DevSampler(BaseSampler):\n    def apply_penalties(self):\n        return super().apply_penalties()\n\n\n"
               "def register():\n    return DevSampler\n")
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"p": "p:register"}), "p/__init__.py": layered}, "q")
    code, doc = check(root, new)
    assert not [f for f in doc["findings"] if f["status"] == "not_on_base" and "calls super()" in (f["detail"] or "")], doc["findings"]
