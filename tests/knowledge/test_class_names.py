"""A name read off a class the scan knows is that class's own name (the data model's "Special
attributes"), however it is reached (the twentieth held-out set, V-f4): a class decorator that
puts the plugin subclass into upstream's module in place of its base, by
`setattr(module, cls.__bases__[0].__name__, cls)`, `next(iter(cls.__bases__)).__name__` or
`getattr(cls.__bases__[0], "__name__")`, patches that base's name there; upstream code of the
module that builds it by that name builds the plugin's class."""

from __future__ import annotations

import pytest
from kinds_support import check, plugin, pyproject, upstream_pair


@pytest.fixture(scope="module")
def upstreams(tmp_path_factory):
    return upstream_pair(tmp_path_factory)


NAMES = {
    "first_base_name": "cls.__bases__[0].__name__",
    "next_of_the_bases": "next(iter(cls.__bases__)).__name__",
    "getattr_of_the_base": "getattr(cls.__bases__[0], '__name__')",
}
SOURCE = '''from sglang.srt.layers import sampler
from sglang.srt.layers.sampler import Sampler


def replaces(module):
    def install(cls):
        setattr(module, {name}, cls)
        return cls

    return install


@replaces(sampler)
class DevSampler(Sampler):
    def forward(self, logits, *, temperature=1.0):
        return logits


def register():
    pass
'''


@pytest.mark.parametrize("spelling", sorted(NAMES))
def test_a_class_decorator_puts_the_class_in_place_of_its_base(upstreams, tmp_path, spelling):
    old, _ = upstreams
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"p": "p:register"}), "p/__init__.py": SOURCE.format(name=NAMES[spelling])})
    code, doc = check(root, old)
    patches = [(f["target"], f["status"]) for f in doc["findings"] if f["kind"] == "patch"]
    assert patches == [("sglang.srt.layers.sampler.Sampler", "ok")] and code == 0, doc["findings"]
