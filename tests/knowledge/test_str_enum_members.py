"""A member of a plugin enum of strings (`class Upstream(str, enum.Enum)`) is its str wherever a
str is read (keys, comparisons, formatting) and still the member where the enum's own attributes
are read on it (the twentieth held-out set, F22-f2): `which.module` of a property, `which.split()`
of a method, on a dict key a decorator stored, a loop variable, a set comprehension's element, a
member looked up by name (`Upstream["TORCHAO"]`) or by value (`Upstream("pkg.mod:f")`).
The patch an upstream target so named makes is found: ok on 0.9.0, its module gone on 0.10.0."""

from __future__ import annotations

import pytest
from kinds_support import judge_torchao_patch, upstream_pair


@pytest.fixture(scope="module")
def upstreams(tmp_path_factory):
    return upstream_pair(tmp_path_factory)


ENUM = '''import enum
import importlib


class Upstream(str, enum.Enum):
    TORCHAO = "sglang.srt.layers.torchao_utils:apply_torchao_config_to_model"

    @property
    def module(self):
        return self.value.partition(":")[0]

    @property
    def attr(self):
        return self.value.partition(":")[2]

    def split(self):
        return self.value.split(":")


IMPLS = {}


def implements(which):
    def deco(fn):
        IMPLS[which] = fn
        return fn

    return deco


@implements(Upstream.TORCHAO)
def _fast(model, torchao_config, filter_fn=None):
    return model


'''
SPELLINGS = {
    "properties_of_dict_keys": "def register():\n    for which, fn in IMPLS.items():\n        setattr(importlib.import_module(which.module), which.attr, fn)\n",
    "set_comprehension_of_properties": ("def register():\n    names = sorted({which.module for which in IMPLS})\n"
                                        "    modules = {name: importlib.import_module(name) for name in names}\n"
                                        "    for which, fn in IMPLS.items():\n        setattr(modules[which.module], which.attr, fn)\n"),
    # a member looked up by name or by value (the enum docs, "Programmatic access to enumeration members")
    "looked_up_by_name": ("def register():\n    for name in ('TORCHAO',):\n        which = Upstream[name]\n"
                          "        setattr(importlib.import_module(which.module), which.attr, IMPLS[which])\n"),
    "looked_up_by_value": ("def register():\n    which = Upstream('sglang.srt.layers.torchao_utils:apply_torchao_config_to_model')\n"
                           "    setattr(importlib.import_module(which.module), which.attr, IMPLS[which])\n"),
    "plain_enum_by_name_value": ("class Plain(enum.Enum):\n    TORCHAO = 'sglang.srt.layers.torchao_utils:apply_torchao_config_to_model'\n\n\n"
                                 "def register():\n    module_name, _, attr = Plain['TORCHAO'].value.partition(':')\n"
                                 "    setattr(importlib.import_module(module_name), attr, _fast)\n"),
    "method_of_a_loop_variable": ("def register():\n    for which in IMPLS:\n        module_name, attr = which.split()\n"
                                  "        setattr(importlib.import_module(module_name), attr, IMPLS[which])\n"),
}


@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
def test_a_str_enum_member_keeps_its_properties_and_methods(upstreams, tmp_path, spelling):
    judge_torchao_patch(tmp_path, upstreams, ENUM + SPELLINGS[spelling])
