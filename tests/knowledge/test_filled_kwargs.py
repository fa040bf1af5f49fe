"""Keywords spread from a local dict the function fills under a run-time test (twenty-ninth set
V-i5: `native_kwargs = {}`, `if offsets is not None: native_kwargs["offsets"] = offsets`, then
`super().forward_native(..., **native_kwargs)`): each key is a keyword the call passes where its
test holds, as `**({"k": v} if test else {})` passes it; one the callee does not take breaks
on those runs."""

from __future__ import annotations

import pytest
from kinds_support import check, plugin, pyproject, upstream_pair

FILLS = {
    "empty_display_then_if": ("kw = {}\n        if top_k is not None:\n            kw[KEY] = top_k"),
    "dict_call_then_if_else": ("kw = dict()\n        if top_k is None:\n            pass\n        else:\n            kw[KEY] = top_k"),
    "display_with_a_key_then_if": ("kw = {'temperature': 1.0}\n        if top_k:\n            kw[KEY] = top_k\n        if not kw:\n            return logits"),
}


@pytest.fixture(scope="module")
def upstreams(tmp_path_factory):
    return upstream_pair(tmp_path_factory)


@pytest.mark.parametrize("key", ["top_k", "temperature"])
@pytest.mark.parametrize("spelling", sorted(FILLS))
def test_a_key_stored_under_a_test_is_a_keyword_passed_under_it(upstreams, tmp_path, spelling, key):
    _, new = upstreams
    code, doc = check(plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"fk": "fk:register"}),
        "fk/__init__.py": f"""from sglang.srt.layers.sampler import Sampler

KEY = {key!r}


class DeviceSampler(Sampler):
    def forward(self, logits, *, temperature=1.0, top_k=None):
        {FILLS[spelling].replace("KEY", repr(key))}
        return super().forward(logits, **kw)


def register():
    return DeviceSampler
""",
    }), new)
    broken = [f for f in doc["findings"] if f["breaking"]]
    if key == "temperature":
        assert not broken and code == 0, broken
        return
    assert len(broken) == 1 and broken[0]["status"] == "signature_changed" and "top_k" in broken[0]["detail"], doc["findings"]
    # (a keyword some runs pass: the call on those runs, under the test that stores it)
    assert "a run-time condition" in broken[0]["detail"] and broken[0]["guard"]["outcome"] == "runtime", broken[0]
    assert code == 1
