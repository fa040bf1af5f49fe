"""A field of an upstream object the plugin sets itself is not `missing`, however the plugin
writes the setting (issue 34, items 2 and 3): `setattr` by a constant, through a helper function's
parameter, through a method's parameter that it registers (vllm-rbln's `self._set_buffer(layer,
"gate_proj_blocks", …)`), in a function outside a class whose parameter is named self (vllm-rbln's
`_record_pipeline_layer_index(self)`), or in a plugin subclass named by another path of the same class
(vllm-ascend's `GroupCoordinatorPatch(parallel_state.GroupCoordinator)` read as
`vllm.distributed.GroupCoordinator`). A field nobody sets stays missing, and breaking."""

from __future__ import annotations

import pytest
from kinds_support import check, plugin, pyproject, upstream_pair
from knowledge_support import by_target

FIELD = "sglang.srt.managers.scheduler.Scheduler.extra_blocks"
READ = """
from sglang.srt.managers.scheduler import Scheduler


def blocks(s: Scheduler):
    return s.extra_blocks


def register():
    return blocks
"""


@pytest.fixture(scope="module")
def upstreams(tmp_path_factory):
    return upstream_pair(tmp_path_factory, new={"sglang/srt/managers/__init__.py": "from sglang.srt.managers.scheduler import Scheduler\n"})


SETTERS = {
    "setattr": "def prepare(s):\n    setattr(s, 'extra_blocks', 4)\n",
    "helper_parameter": "def _set(obj, name, value):\n    setattr(obj, name, value)\n\n\ndef prepare(s):\n    _set(s, 'extra_blocks', 4)\n",
    "method_parameter": ("class Method:\n    def _set_buffer(self, layer, name, tensor):\n        layer.register_buffer(name, tensor)\n\n"
                         "    def process(self, layer):\n        self._set_buffer(layer, 'extra_blocks', None)\n"),
    "function_taking_self": "def record(self: Scheduler):\n    self.extra_blocks = 4\n",
    "subclass_by_another_path": ("import sglang.srt.managers as managers\n\n\nclass Mine(managers.Scheduler):\n"
                                 "    def __init__(self):\n        self.extra_blocks = 4\n"),
}


@pytest.mark.parametrize("setter", sorted(SETTERS))
def test_a_field_the_plugin_sets_is_not_missing(upstreams, tmp_path, setter):
    _, new = upstreams
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"p": "p.hooks:register"}), "p/__init__.py": "",
                             "p/hooks.py": READ + "\n\n" + SETTERS[setter]})
    code, doc = check(root, new)
    field = by_target(doc["findings"]).get(FIELD, {"status": "ok", "breaking": False})  # a write it places needs no finding
    assert field["status"] in ("ok", "unknown") and not field["breaking"], field
    assert code == (3 if field["status"] == "unknown" else 0)  # unknown: this object may be the one it is set on


def test_a_field_nobody_sets_is_missing(upstreams, tmp_path):
    _, new = upstreams
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"p": "p.hooks:register"}), "p/__init__.py": "",
                             "p/hooks.py": READ + "\n\ndef _set(obj, name, value):\n    setattr(obj, name, value)\n\n\ndef prepare(s):\n    _set(s, 'other', 4)\n"})
    code, doc = check(root, new)
    field = by_target(doc["findings"])[FIELD]
    assert (field["status"], field["breaking"]) == ("missing", True) and code == 1
