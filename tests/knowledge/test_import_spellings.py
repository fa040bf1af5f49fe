"""Plugin modules imported by names built at run time are live however the name is passed (issue
34, items 2 and 3; field case F25's kind): through a helper's parameter (f-string, `.format`, `%`
with a keyword and a default, a method through its instance), and, where no caller names it, a
module chosen at run time (an environment variable) among those the name's shape allows. A helper
called with one name makes only that module live."""

from __future__ import annotations

import pytest
from kinds_support import check, plugin, pyproject, upstream_pair

BACKENDS = ("alpha", "beta", "gamma")
PATCH = "from sglang.srt.layers.torchao_utils import apply_torchao_config_to_model\n\nHOOK = apply_torchao_config_to_model\n"


@pytest.fixture(scope="module")
def upstreams(tmp_path_factory):
    return upstream_pair(tmp_path_factory)


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
}


@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
def test_modules_named_at_run_time_are_live(upstreams, tmp_path, spelling):
    _, new = upstreams
    source, live = SPELLINGS[spelling]
    files = {"pyproject.toml": pyproject(plugins={"v": "v:register"}), "v/__init__.py": source, "v/backends/__init__.py": ""}
    for name in BACKENDS:
        files[f"v/backends/{name}/__init__.py"] = ""
        files[f"v/backends/{name}/patch.py"] = PATCH
    code, doc = check(plugin(tmp_path, files), new)
    found = {f["file"].split("/")[2]: f["live"] for f in doc["findings"] if f["file"].startswith("v/backends/") and f["kind"] == "import"}
    assert found == {name: name in live for name in BACKENDS}, found
    assert code == 1
