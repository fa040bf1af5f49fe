"""A member read through what a plugin class keeps on `self` (issue 34: "a method read through an
untyped attribute chain, `self.topo.split_k_and_v`") is judged on the upstream class kept there
when every binding of the attribute says which: built by that class, returned by an upstream
function annotated to return it, or a parameter annotated with it (`= None` beside one of them
too; a binding in a plugin base or subclass counts). Two classes, a plugin class or a value the
scan cannot place leave it unjudged."""

from __future__ import annotations

import pytest
from kinds_support import check, plugin, pyproject, upstream_pair

TOPO = ("class Topo:\n    def __init__(self, n):\n        self.n = n\n\n    def forward(self, x):\n        return x\n\n"
        "    def {name}(self, x):\n        return x, x\n\n\n"
        "class Other:\n    def split_k_and_v(self, x):\n        return x\n\n\n"
        "def make_topo(n) -> Topo:\n    return Topo(n)\n\n\ndef make_any(n):\n    return Topo(n)\n")
TARGET = "sglang.srt.topo.Topo.split_k_and_v"
KEPT = {
    "built": "        self.topo = Topo(2)\n",
    "annotated_return": "        self.topo = make_topo(2)\n",
    "annotated_parameter": "        self.topo = topo\n",
    "none_then_built": "        self.topo = None\n        self.topo = Topo(2)\n",
    "in_a_subclass": "        self.topo = None\n",
}
UNDECIDED = {
    "two_classes": "        self.topo = Topo(2) if topo else Other()\n        self.topo = Other()\n",
    "unannotated_return": "        self.topo = make_any(2)\n",
    "unannotated_parameter": "        self.topo = other\n",
}


@pytest.fixture(scope="module")
def upstreams(tmp_path_factory):
    return upstream_pair(tmp_path_factory, old={"sglang/srt/topo.py": TOPO.format(name="split_k_and_v")},
                         new={"sglang/srt/topo.py": TOPO.format(name="split_kv")})


def _plugin(tmp_path, init: str, subclass: bool, read: str = "return self.topo.split_k_and_v(x)"):
    code = ("from sglang.srt.topo import Other, Topo, make_any, make_topo\n\n\n"
            f"class Holder:\n    def __init__(self, topo: Topo = None, other=None):\n{init}\n"
            f"    def run(self, x):\n        {read}\n\n\n")
    if subclass:
        code += "class Child(Holder):\n    def __init__(self):\n        super().__init__()\n        self.topo = Topo(3)\n\n\n"
    code += "def register():\n    return Holder().run(1)\n"
    return plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"p": "p.m:register"}), "p/__init__.py": "", "p/m.py": code})


@pytest.mark.parametrize("kept", sorted(KEPT))
def test_a_member_of_what_self_keeps_is_judged_on_its_class(upstreams, tmp_path, kept):
    old, new = upstreams
    root = _plugin(tmp_path, KEPT[kept], subclass=kept == "in_a_subclass")
    code, doc = check(root, new)
    found = [f for f in doc["findings"] if f["target"] == TARGET]
    assert found and found[0]["breaking"] and found[0]["status"] == "missing" and code == 1, doc["findings"]
    assert "self.topo.split_k_and_v" in found[0]["detail"]
    code, doc = check(root, old)  # the release that has it
    assert code == 0 and not [f for f in doc["findings"] if f["target"] == TARGET]


@pytest.mark.parametrize("kept", sorted(UNDECIDED))
def test_what_self_may_hold_of_several_kinds_is_not_judged(upstreams, tmp_path, kept):
    _, new = upstreams
    root = _plugin(tmp_path, UNDECIDED[kept], subclass=False)
    code, doc = check(root, new)
    assert not [f for f in doc["findings"] if f["target"] == TARGET and f["breaking"]] and code == 0, doc["findings"]


GRAFTS = {
    "assign": "def register():\n    Topo.forward = forward\n",
    "setattr": "def register():\n    setattr(Topo, 'forward', forward)\n",
    "module_alias": "import sglang.srt.topo as topo_mod\n\n\ndef register():\n    topo_mod.Topo.forward = forward\n",
}


@pytest.mark.parametrize("graft", sorted(GRAFTS))
def test_a_function_set_on_an_upstream_class_reads_that_class_through_its_first_parameter(upstreams, tmp_path, graft):
    """`Topo.forward = forward`: `forward(self, x)` runs as Topo's method, so `self.split_k_and_v`
    is Topo's (issue 34: "a `self.` call inside a function grafted onto an upstream class")."""
    old, new = upstreams
    code = ("from sglang.srt.topo import Topo\n\n\ndef forward(self, x):\n    return self.split_k_and_v(x)\n\n\n" + GRAFTS[graft])
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"p": "p.m:register"}), "p/__init__.py": "", "p/m.py": code})
    status, doc = check(root, new)
    found = [f for f in doc["findings"] if f["target"] == TARGET]
    assert found and found[0]["breaking"] and found[0]["line"] == 5 and status == 1, doc["findings"]
    status, doc = check(root, old)
    assert status == 0 and not [f for f in doc["findings"] if f["target"] == TARGET]


# the member read however the expression goes on (F21 variant v2: `self.embed_tokens.weight.t()`)
READS = {
    "called": "return self.topo.split_k_and_v(x)",
    "attribute_of_it": "return self.topo.split_k_and_v.__name__",
    "method_of_it": "return self.topo.split_k_and_v.__get__(x)",
}


@pytest.mark.parametrize("read", sorted(READS))
def test_a_member_of_what_self_keeps_is_read_however_the_chain_goes_on(upstreams, tmp_path, read):
    old, new = upstreams
    root = _plugin(tmp_path, KEPT["built"], subclass=False, read=READS[read])
    code, doc = check(root, new)
    found = [f for f in doc["findings"] if f["target"] == TARGET]
    assert found and found[0]["breaking"] and found[0]["status"] == "missing" and code == 1, doc["findings"]
    code, doc = check(root, old)
    assert code == 0 and not [f for f in doc["findings"] if f["target"] == TARGET]


# what the class body declares self to hold (thirty-fifth set F21-q2): a dataclass field, a NamedTuple
# field, an attribute declared over a constructor that stores an unannotated argument -- as a type
# checker reads it; a declaration naming two classes says nothing
DECLARED = {
    "dataclass_field": "@dataclasses.dataclass\nclass Holder:\n    topo: Topo\n    n: int = 0\n",
    "named_tuple_field": "class Holder(typing.NamedTuple):\n    topo: Topo\n",
    "declared_over_an_unannotated_store": "class Holder:\n    topo: 'Topo'\n\n    def __init__(self, topo):\n        self.topo = topo\n",
    "two_classes": "class Holder:\n    topo: Topo | Other\n\n    def __init__(self, topo):\n        self.topo = topo\n",
}


@pytest.mark.parametrize("declared", sorted(DECLARED))
def test_a_member_of_what_the_class_body_declares_is_judged_on_its_class(upstreams, tmp_path, declared):
    old, new = upstreams
    code = ("import dataclasses\nimport typing\n\nfrom sglang.srt.topo import Other, Topo\n\n\n" + DECLARED[declared]
            + "\n    def run(self, x):\n        return self.topo.split_k_and_v(x)\n\n\ndef register():\n    return Holder(Topo(1)).run(1)\n")
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"p": "p.m:register"}), "p/__init__.py": "", "p/m.py": code})
    status, doc = check(root, new)
    found = [f for f in doc["findings"] if f["target"] == TARGET]
    if declared == "two_classes":
        assert not [f for f in found if f["breaking"]] and status == 0, doc["findings"]
        return
    assert found and found[0]["breaking"] and found[0]["status"] == "missing" and status == 1, doc["findings"]
    status, doc = check(root, old)
    assert status == 0 and not [f for f in doc["findings"] if f["target"] == TARGET], doc["findings"]
