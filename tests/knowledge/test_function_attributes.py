"""A patch of an upstream function's own attributes (thirty-fifth held-out set, F32-q1):
`mod.f.__code__ = own.__code__` swaps the code of f in place. A `def` with no decorator is a plain
function object, which has every attribute of Python's function type (`__code__`, `__defaults__`,
`__kwdefaults__`, …): on a release that has f the patch is `ok`, on one that lost f's module it is
`missing`. A decorated function may be another object (`functools.lru_cache` gives a wrapper with
no `__code__`): not decided."""

from __future__ import annotations

import pytest
from kinds_support import check, plugin, pyproject, upstream_pair

CACHED = """
    import functools


    @functools.lru_cache(maxsize=None)
    def cached_config(name):
        return name
    """

# how the plugin sets an attribute of the function (f the upstream function)
PATCHES = {
    "code_swap": "{f}.__code__ = _noop.__code__",
    "defaults_by_setattr": 'setattr({f}, "__defaults__", (None,))',
    "kwdefaults_through_a_local": "fn = {f}\n    fn.__kwdefaults__ = {{}}",
}


@pytest.fixture(scope="module")
def upstreams(tmp_path_factory):
    return upstream_pair(tmp_path_factory, old={"sglang/srt/layers/cached.py": CACHED}, new={"sglang/srt/layers/cached.py": CACHED})


def _plugin(tmp_path, f: str, patch: str, module: str):
    source = (f"import {module} as mod\n\n\ndef _noop(model, torchao_config, filter_fn=None):\n    return model\n\n\n"
              f"def register():\n    {PATCHES[patch].format(f=f)}\n")
    return plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"p": "p:register"}), "p/__init__.py": source})


def _findings(doc: dict, name: str) -> list[dict]:
    return [f for f in doc["findings"] if name in f["target"]]


@pytest.mark.parametrize("patch", sorted(PATCHES))
def test_an_attribute_of_a_plain_function_is_there_with_the_function(upstreams, tmp_path, patch):
    old, new = upstreams
    root = _plugin(tmp_path, "mod.apply_torchao_config_to_model", patch, "sglang.srt.layers.torchao_utils")
    code, doc = check(root, old)
    assert code == 0 and {f["status"] for f in _findings(doc, "apply_torchao_config_to_model")} <= {"ok"}, doc["findings"]
    code, doc = check(root, new)  # torchao_utils is gone: the import, and the patch with it
    assert code == 1 and "missing" in {f["status"] for f in _findings(doc, "torchao_utils")}, doc["findings"]


@pytest.mark.parametrize("patch", sorted(PATCHES))
def test_an_attribute_of_a_decorated_function_is_not_decided(upstreams, tmp_path, patch):
    old, _ = upstreams
    root = _plugin(tmp_path, "mod.cached_config", patch, "sglang.srt.layers.cached")
    code, doc = check(root, old)
    found = _findings(doc, "cached_config")
    assert found and {f["status"] for f in found} == {"unknown"} and not any(f["breaking"] for f in found), doc["findings"]
