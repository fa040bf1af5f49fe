"""A module-level `__getattr__` (PEP 562) runs only when code reads a name the module does not
bind (F07 variant s2): an import inside it fails only then. Nothing in the plugin reading such a
name, the import never runs (an entry point names a function the module defines); a read of one
-- `from p.lazy import Backend`, `lazy.Backend` through an import, `getattr(lazy, …)` -- runs it."""

from __future__ import annotations

import pytest
from kinds_support import check, plugin, pyproject, upstream_pair
from knowledge_support import by_target

GONE = "sglang.srt.layers.torchao_utils.apply_torchao_config_to_model"  # in 0.9.0, not in 0.10.0
LAZY = '''
from sglang.srt.layers.sampler import Sampler


def register():
    return Sampler


def __getattr__(name):
    if name == "Backend":
        from sglang.srt.layers.torchao_utils import apply_torchao_config_to_model

        return apply_torchao_config_to_model
    raise AttributeError(name)
'''
READERS = {
    # (another plugin module, whether it reads a name p.lazy lacks)
    "nothing_reads_it": ("from p.lazy import register\n\n\ndef use():\n    return register()\n", False),
    "from_import": ("from p.lazy import Backend\n", True),
    "attribute_through_import": ("import p.lazy as lazy\n\n\ndef use():\n    return lazy.Backend\n", True),
    "getattr_by_name": ("from p import lazy\n\n\ndef use(name):\n    return getattr(lazy, name)\n", True),
}


@pytest.fixture(scope="module")
def upstreams(tmp_path_factory):
    return upstream_pair(tmp_path_factory)


@pytest.mark.parametrize("reader", sorted(READERS))
def test_an_import_in_a_module_getattr_runs_only_for_a_name_read(upstreams, tmp_path, reader):
    _, new = upstreams
    source, runs = READERS[reader]
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"p": "p.hooks:register"}),
        "p/__init__.py": "",
        "p/lazy.py": LAZY,
        "p/use.py": source,
        "p/hooks.py": "import p.use  # noqa: F401\n\n\ndef register():\n    return None\n",
    })
    code, doc = check(root, new)
    found = by_target(doc["findings"])[GONE]
    assert found["breaking"] is runs, found
    assert code == (1 if runs else 0)


# a lazy package importing the submodule a read names (F22 variant q2): `pkg.legacy` on a
# package whose __getattr__ imports `.{name}` imports pkg.legacy; a submodule nothing reads stays dead
LAZY_PACKAGES = {
    "relative_with_package": "importlib.import_module(f'.{name}', __name__)",
    "absolute_fstring": "importlib.import_module(f'{__name__}.{name}')",
    "relative_package_keyword": "importlib.import_module('.' + name, package=__package__)",
}


def _assert_reads_import_the_named_submodule(tmp_path, upstream: str, ops_init: str) -> None:
    """`ops.legacy` read through a package whose `__init__` is `ops_init`: p.ops.legacy is
    imported (live, its gone import red), p.ops.unread is not."""
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"p": "p:register"}),
        "p/__init__.py": "from p import ops\n\n\ndef register():\n    return ops.legacy.run\n",
        "p/ops/__init__.py": ops_init,
        "p/ops/legacy.py": "from sglang.srt.layers.torchao_utils import apply_torchao_config_to_model\n\n\ndef run():\n"
                           "    return apply_torchao_config_to_model\n",
        "p/ops/unread.py": "from sglang.srt.layers.torchao_utils import FILTERS\n",
    })
    code, doc = check(root, upstream)
    live = {f["file"]: f["live"] for f in doc["findings"]}
    assert (live.get("p/ops/legacy.py"), live.get("p/ops/unread.py")) == (True, False) and code == 1, doc["findings"]


@pytest.mark.parametrize("spelling", sorted(LAZY_PACKAGES))
def test_a_lazy_package_imports_the_submodule_a_read_names(upstreams, tmp_path, spelling):
    _assert_reads_import_the_named_submodule(tmp_path, upstreams[1], f"import importlib\n\n__all__ = ['legacy', 'unread']\n\n\ndef __getattr__(name):\n"
                                                                     f"    if name in __all__:\n        return {LAZY_PACKAGES[spelling]}\n    raise AttributeError(name)\n")


# the same lazy package written as a module proxy (thirty-first set F22-k2): a `types.ModuleType`
# subclass whose `__getattr__` imports the submodule, made the package's own class or put in
# sys.modules in its place, answers a read the package does not bind as PEP 562's function does
PROXY = ("class _LazyOps(types.ModuleType):\n    def __getattr__(self, name):\n        if name in __all__:\n"
         "            module = importlib.import_module(f'{self.__name__}.{name}')\n            setattr(self, name, module)\n"
         "            return module\n        raise AttributeError(name)\n\n\n")
INSTALLED = {
    "class_assigned": "sys.modules[__name__].__class__ = _LazyOps\n",
    "replaced_in_sys_modules": "sys.modules[__name__] = _LazyOps(__name__)\n",
    "setattr_class": "setattr(sys.modules[__name__], '__class__', _LazyOps)\n",
}


@pytest.mark.parametrize("spelling", sorted(INSTALLED))
def test_a_module_proxy_imports_the_submodule_a_read_names(upstreams, tmp_path, spelling):
    _assert_reads_import_the_named_submodule(tmp_path, upstreams[1], "import importlib\nimport sys\nimport types\n\n"
                                                                     f"__all__ = ['legacy', 'unread']\n\n\n{PROXY}{INSTALLED[spelling]}")


def test_a_module_proxy_never_installed_answers_nothing(upstreams, tmp_path):
    _, new = upstreams
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"p": "p:register"}),
        "p/__init__.py": "from p import ops\n\n\ndef register():\n    return getattr(ops, 'VERSION', None)\n",
        "p/ops/__init__.py": f"import importlib\nimport sys\nimport types\n\n__all__ = ['legacy', 'unread']\n\n\n{PROXY}",
        "p/ops/legacy.py": "from sglang.srt.layers.torchao_utils import apply_torchao_config_to_model\n",
        "p/ops/unread.py": "from sglang.srt.layers.torchao_utils import FILTERS\n",
    })
    code, doc = check(root, new)
    assert not any(f["live"] for f in doc["findings"] if f["file"].startswith("p/ops/")) and code != 1, doc["findings"]
