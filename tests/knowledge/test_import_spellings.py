"""Plugin modules imported by names built at run time are live however the name is passed (issue
34, items 2 and 3; field case F25's kind): through a helper's parameter (f-string, `.format`, `%`
with a keyword and a default, a method through its instance), and, where no caller names it, a
module chosen at run time (an environment variable) among those the name's shape allows. A helper
called with one name makes only that module live; a loop over an empty name nothing adds to, none."""

from __future__ import annotations

import pytest
from kinds_support import check, plugin, pyproject, upstream_pair

BACKENDS = ("alpha", "beta", "gamma")
PATCH = "from sglang.srt.layers.torchao_utils import apply_torchao_config_to_model\n\nHOOK = apply_torchao_config_to_model\n"


@pytest.fixture(scope="module")
def upstreams(tmp_path_factory):
    return upstream_pair(tmp_path_factory)
# an upstream name the plugin's live module uses, so that a plugin with no live patch is still checked
USED = "from sglang.srt.layers.attention.attention_registry import ATTENTION_BACKENDS\n"

SPELLINGS = {
    "fstring_helper": ("import importlib\n\n\ndef _load(backend):\n    return importlib.import_module(f'v.backends.{backend}.patch')\n\n\n"
                       "def register():\n    for name in ('alpha', 'beta'):\n        _load(name)\n    _load('gamma')\n", BACKENDS),
    "method_keyword_default": ("import importlib\n\n\nclass Loader:\n    def load(self, *, backend, suffix='patch'):\n"
                               "        return importlib.import_module('v.backends.%s.%s' % (backend, suffix))\n\n\n"
                               "def register():\n    loader = Loader()\n    loader.load(backend='alpha')\n    loader.load(backend='beta')\n"
                               "    loader.load(backend='gamma', suffix='patch')\n", BACKENDS),
    "format_one_caller": ("import importlib\n\n\ndef _load(backend):\n    return importlib.import_module('v.backends.{}.patch'.format(backend))\n\n\n"
                          "def register():\n    _load('beta')\n", ("beta",)),
    "chosen_at_run_time": ("import importlib\nimport os\n\n\ndef register():\n    backend = os.environ.get('V_BACKEND', 'alpha')\n"
                           "    importlib.import_module(f'v.backends.{backend}.patch')\n", BACKENDS),
    # a loop over a name that is empty when it runs, and nothing in the plugin adds to (F25 variant p2): the body never
    # runs -- a constant rebound later in the module, a list literal, a constant imported from a sibling module
    "constant_rebound_empty": (USED + "import importlib\n\n_BACKENDS = ('alpha', 'beta')\n_BACKENDS = ()\n\n\n"
                               "def register():\n    for b in _BACKENDS:\n        importlib.import_module(f'v.backends.{b}.patch')\n"
                               "    print(len(_BACKENDS))\n", ()),
    "empty_list_literal": (USED + "import importlib\n\n\ndef register():\n    for b in []:\n        importlib.import_module(f'v.backends.{b}.patch')\n", ()),
    "empty_imported_constant": (USED + "import importlib\n\nfrom v.backends import ENABLED\n\n\n"
                                "def register():\n    for b in ENABLED:\n        importlib.import_module('v.backends.%s.patch' % b)\n", (), "ENABLED = []\n"),
    # ... but a list a function appends to may hold any of them when the loop runs
    "empty_handed_to_a_filler": ("import importlib\n\nENABLED = []\n\n\ndef fill(names):\n    names.extend(['alpha', 'beta', 'gamma'])\n\n\n"
                                 "def register():\n    fill(ENABLED)\n    for b in ENABLED:\n        importlib.import_module(f'v.backends.{b}.patch')\n", BACKENDS),
    "empty_then_appended": ("import importlib\n\nENABLED = []\n\n\ndef enable(name):\n    ENABLED.append(name)\n\n\n"
                            "def register():\n    for b in ENABLED:\n        importlib.import_module(f'v.backends.{b}.patch')\n", BACKENDS),
}


@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
def test_modules_named_at_run_time_are_live(upstreams, tmp_path, spelling):
    _, new = upstreams
    source, live, backends_init = (*SPELLINGS[spelling], "")[:3]
    files = {"pyproject.toml": pyproject(plugins={"v": "v:register"}), "v/__init__.py": source, "v/backends/__init__.py": backends_init}
    for name in BACKENDS:
        files[f"v/backends/{name}/__init__.py"] = ""
        files[f"v/backends/{name}/patch.py"] = PATCH
    code, doc = check(plugin(tmp_path, files), new)
    found = {f["file"].split("/")[2]: f["live"] for f in doc["findings"] if f["file"].startswith("v/backends/") and f["kind"] == "import"}
    assert found == {name: name in live for name in BACKENDS}, found
    assert code == (1 if live else 0)
