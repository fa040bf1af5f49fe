"""A patch a plugin base class applies from class constants each subclass sets (twenty-ninth set
F32-i1: `LoadedModulePatch.apply(cls)` reads `sys.modules.get(cls.MODULE)` and sets `cls.ATTR`;
`DisableX.apply()` runs it with cls the subclass): the patch is of what each subclass names --
through an inherited classmethod, an instance method on an object of the subclass, a loop over
the subclasses."""

from __future__ import annotations

import pytest
from kinds_support import check, plugin, pyproject, upstream_pair

BASE = '''import sys


class LoadedModulePatch:
    MODULE = ""
    ATTR = ""

    @staticmethod
    def replacement(model, torchao_config, filter_fn=None):
        return model

    {decorator}def apply({receiver}):
        module = sys.modules.get({receiver}.MODULE)
        if module is None:
            return False
        setattr(module, {receiver}.ATTR, {receiver}.replacement)
        return True
'''
SUB = '''

class SkipTorchao(LoadedModulePatch):
    MODULE = "sglang.srt.layers.torchao_utils"
    ATTR = "{attr}"
'''
SPELLINGS = {
    "inherited_classmethod": ("@classmethod\n    ", "cls", "SkipTorchao.apply()"),
    "instance_method_on_an_object": ("", "self", "SkipTorchao().apply()"),
    "classmethod_over_a_loop": ("@classmethod\n    ", "cls", "for patch in (SkipTorchao,):\n        patch.apply()"),
}


@pytest.fixture(scope="module")
def upstreams(tmp_path_factory):
    return upstream_pair(tmp_path_factory)


@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
def test_a_patch_named_by_a_subclass_constant_is_of_what_it_names(upstreams, tmp_path, spelling):
    old, new = upstreams
    decorator, receiver, run = SPELLINGS[spelling]
    for attr, status in (("apply_torchao_config_to_model", "ok"), ("apply_torchao", "extension")):
        root = plugin(tmp_path / attr, {
            "pyproject.toml": pyproject(plugins={"sc": "sc:register"}),
            "sc/__init__.py": BASE.format(decorator=decorator, receiver=receiver) + SUB.format(attr=attr)
                              + f"\n\ndef register():\n    {run}\n",
        })
        code, doc = check(root, old)
        patches = [(f["target"], f["status"]) for f in doc["findings"] if f["kind"] == "patch"]
        assert patches == [(f"sglang.srt.layers.torchao_utils.{attr}", status)], doc["findings"]
    # on the release without the module the patch is reported, not applied (sys.modules.get is None)
    code, doc = check(root, new)
    assert [f["status"] for f in doc["findings"] if f["kind"] == "patch"] == ["missing"] and code == 0, doc["findings"]
