"""Constants a plugin module gets by `from .layout import *` (the import system binds each public
name, or each name `__all__` lists: the language reference's import statement) fold to what
that module binds, however many star imports deep: a module name built from them is imported
(fifteenth held-out set F25-m2)."""

from __future__ import annotations

import pytest
from kinds_support import check, plugin, pyproject, upstream_pair

GONE = "sglang.srt.layers.torchao_utils.apply_torchao_config_to_model"  # in 0.9.0, not in 0.10.0

LAYOUTS = {
    "all_listed": {"sc/_layout.py": "__all__ = ['PKG', 'NAMES']\n\nPKG = 'sc.backends'\nNAMES = ('alpha',)\n"},
    "public_names": {"sc/_layout.py": "PKG = 'sc.backends'\nNAMES = ['alpha']\n_PRIVATE = 1\n"},
    "two_stars_deep": {"sc/_layout.py": "from sc._base import *  # noqa: F403\n\nNAMES = ('alpha',)\n",
                       "sc/_base.py": "PKG = 'sc' + '.backends'\n"},
}


@pytest.fixture(scope="module")
def upstreams(tmp_path_factory):
    return upstream_pair(tmp_path_factory)


@pytest.mark.parametrize("spelling", sorted(LAYOUTS))
def test_a_module_named_from_star_imported_constants_is_imported(upstreams, tmp_path, spelling):
    _, new = upstreams
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"sc": "sc:register"}),
        "sc/__init__.py": "import importlib\n\nfrom sc._layout import *  # noqa: F403\n\n\n"
                          "def register():\n    for name in NAMES:\n        importlib.import_module(f'{PKG}.{name}.patch')\n",
        **LAYOUTS[spelling],
        "sc/backends/__init__.py": "",
        "sc/backends/alpha/__init__.py": "",
        "sc/backends/alpha/patch.py": "import sglang.srt.layers.torchao_utils as t\n\n\ndef _skip(model, config, filter_fn=None):\n    return model\n\n\n"
                                      "t.apply_torchao_config_to_model = _skip\n",
        "sc/backends/beta/__init__.py": "",
        "sc/backends/beta/patch.py": "import sglang.srt.layers.torchao_utils as t\n\nt.apply_torchao_config_to_model = None\n",
    })
    code, doc = check(root, new)
    patches = [f for f in doc["findings"] if f["target"] == GONE and f["kind"] == "patch"]
    live = {f["file"]: f["live"] for f in patches}
    assert live == {"sc/backends/alpha/patch.py": True, "sc/backends/beta/patch.py": False}, doc["findings"]
    assert code == 1
