"""`getattr(x, "name")` with two arguments is the read `x.name` (the builtin raises
AttributeError as the attribute read does), so every kind judges both spellings alike: a
member of the plugin class's upstream base, a function of an upstream module called through
it, a platform method; so is `operator.attrgetter("name")(x)`, called at once or through a
module-level getter. The name may be a literal or a module constant; with a default (three
arguments) the read cannot fail and is not judged as one. Fixture upstreams
(tests/knowledge/kinds_support.py), not a real release."""

from __future__ import annotations

import pytest
from kinds_support import check, plugin, pyproject, upstream_pair


@pytest.fixture(scope="module")
def upstreams(tmp_path_factory):
    return upstream_pair(tmp_path_factory)


# each reads `name` on its receiver as the kind's spelling; {name} is filled in
READS = {
    # a member of the plugin class's upstream base (Sampler has forward, no `wieght`)
    "member": ("from sglang.srt.layers.sampler import Sampler\n\n\nclass S(Sampler):\n"
               "    def forward(self, logits, *, temperature=1.0):\n        return {read}(logits)\n",
               "self", "forward", "wieght"),
    # a function of an upstream module, called through the read
    "module_function": ("import sglang.srt.layers.torchao_utils as t\n\n\ndef apply(model):\n    return {read}(model, None)\n",
                        "t", "apply_torchao_config_to_model", "apply_torchao_config"),
}
SPELLINGS = {
    "attribute": lambda receiver, name: f"{receiver}.{name}",
    "getattr_literal": lambda receiver, name: f"getattr({receiver}, {name!r})",
    "getattr_constant": lambda receiver, name: f"getattr({receiver}, NAME)",
    # operator's getters compute the same read (F21 variant u1): called at once, or bound at module level
    "attrgetter_call": lambda receiver, name: f"operator.attrgetter({name!r})({receiver})",
    "attrgetter_module_name": lambda receiver, name: f"_GET({receiver})",
    "attrgetter_pair": lambda receiver, name: f"attrgetter('__class__', NAME)({receiver})[1]",
}


def reads_plugin(tmp_path, kind, spelling, name):
    source, receiver, _, _ = READS[kind]
    body = source.format(read=SPELLINGS[spelling](receiver, name))
    return plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"p": "p.use:register"}),
        "p/__init__.py": "",
        "p/use.py": f"import operator\nfrom operator import attrgetter\n\nNAME = {name!r}\n_GET = attrgetter(NAME)\n" + body
                    + "\n\ndef register():\n    return None\n",
    }, name=f"{kind}-{spelling}-{name}")


@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
@pytest.mark.parametrize("kind", sorted(READS))
def test_a_two_argument_getattr_is_judged_as_the_attribute_read(upstreams, tmp_path, kind, spelling):
    old, _ = upstreams
    _, _, present, absent = READS[kind]
    code, doc = check(reads_plugin(tmp_path, kind, spelling, absent), old)
    missing = [f for f in doc["findings"] if f["status"] == "missing" and f["target"].endswith("." + absent)]
    assert [(f["file"], f["breaking"]) for f in missing] == [("p/use.py", True)], doc["findings"]
    assert code == 1
    code, doc = check(reads_plugin(tmp_path, kind, spelling, present), old)
    assert not [f for f in doc["findings"] if f["breaking"]], doc["findings"]
    assert code == 0


def test_a_getattr_with_a_default_is_not_a_read_that_fails(upstreams, tmp_path):
    old, _ = upstreams
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"p": "p.use:register"}),
        "p/__init__.py": "",
        "p/use.py": ("import sglang.srt.layers.torchao_utils as t\n\n\n"
                     "def register():\n    return getattr(t, 'apply_torchao_config', None)\n"),
    })
    code, doc = check(root, old)
    assert not [f for f in doc["findings"] if f["breaking"]], doc["findings"]
    assert code == 0
