"""Methods a class body binds other than by `def` (the eighteenth held-out set): another name
for a method of the same body (`get_nsa_kv_pool_cls = get_mla_kv_pool_cls`), a
`functools.partialmethod` of one (`get_mha_kv_pool_cls = partialmethod(_pool_for, "mha")`), a
`staticmethod` of one: each is a method of the class (Python's data model: a class body's
namespace is the class's), an override of the platform method of that name. 0.10.0 of the test
upstream drops SRTPlatform.get_mha_kv_pool_cls, which 0.9.0 calls: an override of it breaks."""

from __future__ import annotations

import pytest
from kinds_support import IFACE, INTERFACE_WITHOUT_MHA_POOL, check, plugin, pyproject, upstream_pair


@pytest.fixture(scope="module")
def upstreams(tmp_path_factory):
    return upstream_pair(tmp_path_factory, new=INTERFACE_WITHOUT_MHA_POOL)


HEAD = "import functools\n\nfrom sglang.srt.platforms.interface import SRTPlatform\n\n\n"
TAIL = "\n\ndef activate():\n    return 'p:P'\n"
BODIES = {
    # (the class body after its def of the default attention backend, whether it overrides get_mha_kv_pool_cls)
    "alias_of_a_body_method": ("    def _pool(self):\n        return object\n\n    get_mha_kv_pool_cls = _pool\n", True),
    "partialmethod_of_a_body_method": ("    def _pool_for(self, kind):\n        return object\n\n"
                                       "    get_mha_kv_pool_cls = functools.partialmethod(_pool_for, 'mha')\n", True),
    "staticmethod_of_a_body_function": ("    def _pool():\n        return object\n\n    get_mha_kv_pool_cls = staticmethod(_pool)\n", True),
    "alias_on_a_mixin": ("    pass\n", True),
    "alias_under_another_name": ("    def get_mha_pool(self):\n        return object\n\n    pool_cls = get_mha_pool\n", False),
}
MIXIN = "class Mixin:\n    def _pool(self):\n        return object\n\n    get_mha_kv_pool_cls = _pool\n\n\n"


@pytest.mark.parametrize("spelling", sorted(BODIES))
def test_a_method_a_class_body_binds_by_assignment_overrides(upstreams, tmp_path, spelling):
    """`m = other` / `m = partialmethod(other, …)` / `m = staticmethod(other)` of the body's own
    function is the platform method m: dropped upstream, the override breaks."""
    old, new = upstreams
    body, overrides = BODIES[spelling]
    bases = "Mixin, SRTPlatform" if spelling == "alias_on_a_mixin" else "SRTPlatform"
    source = (HEAD + (MIXIN if spelling == "alias_on_a_mixin" else "") + f"class P({bases}):\n"
              "    def get_default_attention_backend(self) -> str:\n        return 'torch_native'\n\n" + body + TAIL)
    code, doc = check(plugin(tmp_path, {"pyproject.toml": pyproject(platforms={"p": "p:activate"}), "p/__init__.py": source}), new, "--baseline", old)
    finding = next((f for f in doc["findings"] if f["target"] == f"{IFACE}.get_mha_kv_pool_cls"), None)
    if overrides:
        assert finding is not None and (finding["status"], finding["breaking"], code) == ("not_on_base", True, 1), doc["findings"]
    else:
        assert finding is None and code == 0, doc["findings"]
