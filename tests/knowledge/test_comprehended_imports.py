"""Modules imported by a comprehension (or `map`) inside a helper, over what the helper's callers
or its class hand it (the twentieth held-out set, F25-f2): `[import_module(n) for n in
cls.names()]` in a classmethod, `list(map(import_module, cls.names()))`, a dict comprehension over
names an object keeps, a generator over a parameter. The element runs once per value the
iterable holds there, its `if`s decided per value (the language reference, "Displays for lists,
sets and dictionaries"); a module none of them names is not imported. An upstream module a
helper imports by a name its callers decide is a dependency as a constant name is (F22-f1)."""

from __future__ import annotations

import pytest
from kinds_support import judge_legacy, judge_torchao_patch, upstream_pair


@pytest.fixture(scope="module")
def upstreams(tmp_path_factory):
    return upstream_pair(tmp_path_factory)


CLASS_NAMES = ("import importlib\n\n\nclass Loader:\n    NAMES = ({names})\n\n    @classmethod\n"
               "    def module_names(cls):\n        return ['.'.join(('pd', n)) for n in cls.NAMES]\n\n")
SPELLINGS = {
    "classmethod_list_comprehension": CLASS_NAMES + ("    @classmethod\n    def load(cls):\n"
                                                     "        return [importlib.import_module(n) for n in cls.module_names()]\n\n\n"
                                                     "def register():\n    Loader.load()\n"),
    "classmethod_map": CLASS_NAMES + ("    @classmethod\n    def load(cls):\n        return list(map(importlib.import_module, cls.module_names()))\n\n\n"
                                      "def register():\n    Loader.load()\n"),
    "kept_names_dict_comprehension": ("import importlib\n\n\nclass Loader:\n    def __init__(self, names):\n        self.names = names\n\n"
                                      "    def load(self):\n        return {{n: importlib.import_module(f'pd.{{n}}') for n in self.names}}\n\n\n"
                                      "def register():\n    Loader([{names}]).load()\n"),
    "parameter_generator": ("import importlib\n\n\ndef load(names):\n    return tuple(importlib.import_module('pd.' + n) for n in names)\n\n\n"
                            "def register():\n    load([{names}])\n"),
}


@pytest.mark.parametrize("names,imported", [("'legacy', 'fast'", True), ("'fast',", False)])
@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
def test_a_comprehension_in_a_helper_imports_what_its_iterable_holds(upstreams, tmp_path, spelling, names, imported):
    _, new = upstreams
    judge_legacy(tmp_path, new, SPELLINGS[spelling].format(names=names), imported)


def test_a_comprehension_condition_false_for_a_name_imports_nothing_by_it(upstreams, tmp_path):
    _, new = upstreams
    source = (CLASS_NAMES.format(names="'legacy', 'fast'") + "    @classmethod\n    def load(cls):\n"
              "        return [importlib.import_module(n) for n in cls.module_names() if not n.endswith('legacy')]\n\n\n"
              "def register():\n    Loader.load()\n")
    judge_legacy(tmp_path, new, source, imported=False)


OWNER_OF = {
    "helper_returns_a_pair": ("def _owner_of(target):\n    module_name, _, attr = target.rpartition('.')\n"
                              "    return importlib.import_module(module_name), attr\n\n\n"
                              "def install():\n    for target, fn in PENDING:\n        owner, attr = _owner_of(target)\n        setattr(owner, attr, fn)\n"),
    "helper_returns_the_module": ("def _module(target):\n    return importlib.import_module(target.rpartition('.')[0])\n\n\n"
                                  "def install():\n    for target, fn in PENDING:\n        setattr(_module(target), target.rpartition('.')[2], fn)\n"),
    "bound_in_a_try_that_continues": ("def _owner_of(target):\n    module_name, _, attr = target.rpartition('.')\n"
                                      "    return importlib.import_module(module_name), attr\n\n\n"
                                      "def install():\n    for target, fn in PENDING:\n        try:\n            owner, attr = _owner_of(target)\n"
                                      "        except ImportError:\n            continue\n        setattr(owner, attr, fn)\n"),
}


@pytest.mark.parametrize("spelling", sorted(OWNER_OF))
def test_an_upstream_module_a_helper_imports_by_its_callers_names_is_a_dependency(upstreams, tmp_path, spelling):
    """`import_module(name)` in a helper whose callers name upstream's torchao_utils: an import of
    it (missing on 0.10.0), and the setattr a patch of its function; with nothing else of the
    plugin depending on the upstream, the check has something to check."""
    source = ("import importlib\n\n\ndef _fast(model, torchao_config, filter_fn=None):\n    return model\n\n\n"
              "PENDING = [('sglang.srt.layers.torchao_utils.apply_torchao_config_to_model', _fast)]\n\n\n"
              + OWNER_OF[spelling] + "\n\ndef register():\n    install()\n")
    judge_torchao_patch(tmp_path, upstreams, source)


# the table of patches is read from a plugin module by a spec a resolver takes apart (set 21
# F22-e2): getattr of the module it imports by name is the module's table, however the spec is split
RESOLVERS = {
    "colon_spec": ("def resolve(spec):\n    if ':' in spec:\n        module_name, _, attr = spec.partition(':')\n    else:\n"
                   "        module_name, _, attr = spec.rpartition('.')\n    return getattr(importlib.import_module(module_name), attr)\n", "p.kernels:KERNELS"),
    "dotted_spec": ("def resolve(spec):\n    module_name, attr = spec.rsplit('.', 1)\n    return getattr(importlib.import_module(module_name), attr)\n",
                    "p.kernels.KERNELS"),
    # the table read from the module's namespace by its name (set 22 F22-d1): vars().get, __dict__[…], vars()[…]
    "vars_get_relative": ("def resolve(spec):\n    name, _, attr = spec.partition(':')\n"
                          "    module = importlib.import_module('.' + name.rpartition('.')[2], __package__)\n    return vars(module).get(attr, {})\n",
                          "p.kernels:KERNELS"),
    "dunder_dict_subscript": ("def resolve(spec):\n    name, _, attr = spec.partition(':')\n    return importlib.import_module(name).__dict__[attr]\n",
                              "p.kernels:KERNELS"),
    "vars_subscript": ("def resolve(spec):\n    name, attr = spec.rsplit('.', 1)\n    return vars(importlib.import_module(name))[attr]\n", "p.kernels.KERNELS"),
    "dunder_import": ("def resolve(spec):\n    module_name, _, attr = spec.partition(':')\n    return getattr(__import__(module_name, fromlist=[attr]), attr)\n",
                      "p.kernels:KERNELS"),
}


@pytest.mark.parametrize("spelling", sorted(RESOLVERS))
def test_a_patch_table_a_resolver_reads_from_a_plugin_module_is_applied(upstreams, tmp_path, spelling):
    resolver, spec = RESOLVERS[spelling]
    source = (f"import importlib\n\nTABLES = ({spec!r},)\n\n\n" + resolver + "\n\ndef register():\n    for table in TABLES:\n"
              "        for target, fn in resolve(table).items():\n            owner, _, name = target.rpartition('.')\n"
              "            setattr(importlib.import_module(owner), name, fn)\n")
    kernels = ("def _fast(model, torchao_config, filter_fn=None):\n    return model\n\n\n"
               "KERNELS = {'sglang.srt.layers.torchao_utils.apply_torchao_config_to_model': _fast}\n")
    judge_torchao_patch(tmp_path, upstreams, source, {"p/kernels.py": kernels})
