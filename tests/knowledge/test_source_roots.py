"""The plugin's modules are read from the source roots its build configuration declares, as the
wheel is built from them: a package split over `src/` and `contrib/` (PEP 420 namespace package,
each subpackage mapped by setuptools' package-dir), `[tool.setuptools.packages.find] where`,
setup.cfg / setup.py `package_dir`, poetry's `packages = [{include, from}]`, hatch's wheel
`packages`. Without a declaration, the src/ layout or the flat one (plugin_module_files).

Fixture upstreams (tests/knowledge/kinds_support.py): 0.10.0 drops
sglang.srt.layers.torchao_utils, so the contrib module's import of it breaks there, live only
if the contrib root is read."""

from __future__ import annotations

import pytest
from kinds_support import check, plugin, upstream_pair

from harness.knowledge.model import plugin_module_files

ENTRY = "def register():\n    from p.extra import legacy\n\n    legacy.quantize(None)\n"
LEGACY = "from sglang.srt.layers import torchao_utils\n\n\ndef quantize(model):\n    return torchao_utils.apply_torchao_config_to_model(model, 'int8')\n"
EP = '\n[project.entry-points."sglang.srt.plugins"]\np = "p.core.entry:register"\n'
PROJECT = '[project]\nname = "p"\nversion = "0.1"\n'

LAYOUTS = {
    # (packaging files, where the core and the extra packages sit)
    "pyproject package-dir": ({"pyproject.toml": PROJECT + EP + '[tool.setuptools]\npackages = ["p.core", "p.extra"]\n'
                               '[tool.setuptools.package-dir]\n"p.core" = "src/p/core"\n"p.extra" = "contrib/p/extra"\n'},
                              "src/p/core", "contrib/p/extra"),
    "packages.find over two roots": ({"pyproject.toml": PROJECT + EP + '[tool.setuptools.packages.find]\nwhere = ["src", "contrib"]\n'},
                                     "src/p/core", "contrib/p/extra"),
    "setup.cfg package_dir": ({"pyproject.toml": PROJECT + EP, "setup.cfg": "[options]\npackage_dir =\n    p.core = lib/core\n    p.extra = contrib/extra\n"},
                              "lib/core", "contrib/extra"),
    "setup.py package_dir": ({"pyproject.toml": PROJECT + EP,
                              "setup.py": 'from setuptools import setup\n\nsetup(package_dir={"": "python", "p.extra": "contrib/extra"})\n'},
                             "python/p/core", "contrib/extra"),
    "poetry packages from": ({"pyproject.toml": PROJECT + EP + '[tool.poetry]\npackages = [{include = "p", from = "lib"}, {include = "p/extra", from = "contrib"}]\n'},
                             "lib/p/core", "contrib/p/extra"),
    "hatch wheel packages": ({"pyproject.toml": PROJECT + EP + '[tool.hatch.build.targets.wheel]\npackages = ["lib/p", "contrib/p"]\n'},
                             "lib/p/core", "contrib/p/extra"),
}


@pytest.fixture(scope="module")
def upstreams(tmp_path_factory):
    return upstream_pair(tmp_path_factory)


def _layout(tmp_path, spelling: str):
    packaging, core, extra = LAYOUTS[spelling]
    return plugin(tmp_path, {**packaging, f"{core}/entry.py": ENTRY, f"{core}/__init__.py": "", f"{extra}/__init__.py": "",
                             f"{extra}/legacy.py": LEGACY}, name=spelling.replace(" ", "-"))


@pytest.mark.parametrize("spelling", sorted(LAYOUTS))
def test_modules_are_named_from_the_declared_source_roots(tmp_path, spelling):
    root = _layout(tmp_path, spelling)
    modules = plugin_module_files(root)
    assert {"p.core.entry", "p.extra.legacy"} <= modules.keys(), sorted(modules)
    assert not any(name.startswith(("src.", "contrib.", "lib.", "python.")) for name in modules), sorted(modules)


@pytest.mark.parametrize("spelling", ["pyproject package-dir", "packages.find over two roots", "setup.py package_dir"])
def test_a_module_in_a_second_source_root_is_checked(upstreams, tmp_path, spelling):
    root = _layout(tmp_path, spelling)
    old, new = upstreams
    assert check(root, old)[0] == 0
    code, doc = check(root, new)
    legacy = [f for f in doc["findings"] if f["file"].endswith("legacy.py") and f["target"].startswith("sglang.srt.layers.torchao_utils")]
    assert legacy and all(f["live"] for f in legacy) and any(f["breaking"] for f in legacy) and code == 1, doc["findings"]


def test_a_declared_root_outside_the_checkout_or_absent_is_not_read(tmp_path):
    """A package-dir naming a folder that is not there, or one outside the checkout, declares
    nothing readable: the src/ layout applies."""
    root = plugin(tmp_path, {"pyproject.toml": PROJECT + '[tool.setuptools.package-dir]\n"" = "../elsewhere"\n"p.x" = "missing"\n',
                             "src/p/__init__.py": "", "src/p/mod.py": "X = 1\n"})
    assert sorted(plugin_module_files(root)) == ["p", "p.mod"]
