"""A plugin class built by the builtin's three-argument form, `X = type("X", (bases…), NS)`
(the thirty-sixth held-out set's F01 variant), is the class a `class X(bases…):` statement with
NS's entries as its body would make (the builtin's docs): its methods are judged as overrides.
Held on a dict display, a module-level table copied with `dict(…)`, and `dict(name=f, …)`."""

from __future__ import annotations

import pytest
from kinds_support import IFACE, check, plugin, pyproject, upstream_pair
from knowledge_support import by_target

FUNCTIONS = '''from sglang.srt.platforms.interface import SRTPlatform


def _backend(self) -> str:
    return "torch_native"


def _v0(self) -> bool:
    return True


'''
NAMESPACES = {
    "dict_display": 'P = type("P", (SRTPlatform,), {"get_default_attention_backend": _backend, "supports_v0_scheduling": _v0})\n',
    "copied_module_table": ('_METHODS = {\n    "get_default_attention_backend": _backend,\n    "supports_v0_scheduling": _v0,\n}\n\n'
                            'P = type("P", (SRTPlatform,), dict(_METHODS))\n'),
    "dict_keywords": 'P = type("P", (SRTPlatform,), dict(get_default_attention_backend=_backend, supports_v0_scheduling=_v0))\n',
}


@pytest.fixture(scope="module")
def new(tmp_path_factory):
    return upstream_pair(tmp_path_factory)[1]


@pytest.mark.parametrize("spelling", sorted(NAMESPACES))
def test_a_class_built_by_type_has_its_namespaces_methods(new, tmp_path, spelling):
    source = FUNCTIONS + NAMESPACES[spelling] + "\n\ndef activate():\n    return 'p:P'\n"
    root = plugin(tmp_path, {"pyproject.toml": pyproject(platforms={"p": "p:activate"}), "p/__init__.py": source})
    code, doc = check(root, new, "--baseline", "none")
    found = by_target(doc["findings"])
    assert found[f"{IFACE}.get_default_attention_backend"]["status"] == "ok", doc["findings"]
    dropped = found[f"{IFACE}.supports_v0_scheduling"]  # no base defines it (F02's answer with no baseline)
    assert (dropped["status"], dropped["breaking"]) == ("not_on_base", True) and code == 1, dropped
