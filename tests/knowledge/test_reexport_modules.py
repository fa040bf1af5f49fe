"""An upstream name reached through a plugin module that imports it (`compat.SRTPlatform`,
where the plugin's compat.py absorbs upstream moves) is that upstream name: the path is
followed into the module that binds it, however the plugin names that module (a relative
import, an aliased absolute one, an attribute chain through its package) and however the
module binds it (a from-import, an alias, a star import). Fixture upstreams
(tests/knowledge/kinds_support.py), not a real release."""

from __future__ import annotations

import pytest
from kinds_support import IFACE, check, plugin, pyproject, upstream_pair
from knowledge_support import by_target


@pytest.fixture(scope="module")
def upstreams(tmp_path_factory):
    return upstream_pair(tmp_path_factory)


NAMINGS = {
    "relative": ("from . import compat\n", "compat.SRTPlatform"),
    "aliased": ("import p.compat as c\n", "c.SRTPlatform"),
    "through_package": ("import p.compat\n", "p.compat.SRTPlatform"),
}
BINDINGS = {
    "from_import": "from sglang.srt.platforms.interface import SRTPlatform\n",
    "alias": "from sglang.srt.platforms import interface\nSRTPlatform = interface.SRTPlatform\n",
    "star": "from sglang.srt.platforms.interface import *\n",
}


@pytest.mark.parametrize("binding", sorted(BINDINGS))
@pytest.mark.parametrize("naming", sorted(NAMINGS))
def test_a_base_named_through_a_plugin_module_is_the_upstream_class(upstreams, tmp_path, naming, binding):
    old, _ = upstreams
    head, base = NAMINGS[naming]
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(platforms={"p": "p.platform:activate"}),
        "p/__init__.py": "",
        "p/compat.py": BINDINGS[binding],
        "p/platform.py": head + f"""

class DevPlatform({base}):
    def init_backend(self) -> None:
        pass

    def init_backnd(self) -> None:
        pass


def activate():
    return "p.platform:DevPlatform"
""",
    }, name=f"{naming}-{binding}")
    code, doc = check(root, old)
    findings = by_target(doc["findings"])
    assert findings[f"{IFACE}.init_backend"]["status"] == "ok", doc["findings"]
    # judged as a platform over SRTPlatform: a typo'd override is not on the base
    assert findings[f"{IFACE}.init_backnd"]["status"] == "not_on_base"
    assert code == 1
