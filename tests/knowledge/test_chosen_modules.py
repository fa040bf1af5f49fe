"""A module chosen at run time among a table's values (fifteenth held-out set F22-m2):
`import_module(BACKENDS[os.environ["X"]])` may import any module the table names, and none it
does not; the same through `.get(choice, default)` and through a helper that looks the choice up
and falls back to the default on KeyError."""

from __future__ import annotations

import pytest
from kinds_support import check, plugin, pyproject, upstream_pair

GONE = "sglang.srt.layers.torchao_utils.apply_torchao_config_to_model"  # in 0.9.0, not in 0.10.0

CHOICES = {
    "subscript": "importlib.import_module(BACKENDS[os.environ['CM_BACKEND']])",
    "get_with_default": "importlib.import_module(BACKENDS.get(os.environ.get('CM_BACKEND', ''), 'cm.quant.none'))",
    "helper_with_fallback": "importlib.import_module(_module_of(os.environ.get('CM_BACKEND', DEFAULT)))",
}


@pytest.fixture(scope="module")
def upstreams(tmp_path_factory):
    return upstream_pair(tmp_path_factory)


@pytest.mark.parametrize("spelling", sorted(CHOICES))
def test_a_module_chosen_among_a_tables_values_may_be_imported(upstreams, tmp_path, spelling):
    _, new = upstreams
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"cm": "cm:register"}),
        "cm/__init__.py": f"""import importlib
import os

BACKENDS = {{"none": "cm.quant.none"}} | {{"torchao": "cm.quant.torchao"}}
DEFAULT = "torchao"


def _module_of(choice):
    try:
        return BACKENDS[choice]
    except KeyError:
        return BACKENDS[DEFAULT]


def register():
    {CHOICES[spelling]}
""",
        "cm/quant/__init__.py": "",
        "cm/quant/none.py": "",
        "cm/quant/torchao.py": "from sglang.srt.layers.torchao_utils import apply_torchao_config_to_model  # noqa: F401\n",
        "cm/quant/legacy.py": "from sglang.srt.layers.torchao_utils import apply_torchao_config_to_model  # noqa: F401\n",
    })
    code, doc = check(root, new)
    imports = {f["file"]: f for f in doc["findings"] if f["target"] == GONE}
    assert imports["cm/quant/torchao.py"]["live"] and imports["cm/quant/torchao.py"]["breaking"], doc["findings"]
    assert not imports["cm/quant/legacy.py"]["live"], doc["findings"]
    assert code == 1


# the name built around a run-time choice with its package in a constant (twenty-third set F25-c2):
# `%` with a tuple, `.format` with positional arguments, `".".join` of a tuple; each unknown part
# one dotted segment, so `cm.quant.<choice>.patch` may be any backend's patch module, and no
# module of another shape
BUILT = {
    "percent_tuple": "importlib.import_module('%s.%s.%s' % (ROOT, os.environ['CM_BACKEND'], LEAF))",
    "format_positional": "importlib.import_module('{}.{}.{}'.format(ROOT, os.environ['CM_BACKEND'], LEAF))",
    "join_tuple": "importlib.import_module('.'.join((ROOT, os.environ['CM_BACKEND'], LEAF)))",
}


@pytest.mark.parametrize("spelling", sorted(BUILT))
def test_a_module_named_around_a_run_time_part_may_be_any_of_that_shape(upstreams, tmp_path, spelling):
    _, new = upstreams
    stale = "from sglang.srt.layers.torchao_utils import apply_torchao_config_to_model  # noqa: F401\n"
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"cm": "cm:register"}),
        "cm/__init__.py": f"""import importlib
import os

ROOT = "cm.quant"
LEAF = "patch"


def register():
    {BUILT[spelling]}
""",
        "cm/quant/__init__.py": "",
        "cm/quant/torchao/__init__.py": "",
        "cm/quant/torchao/patch.py": stale,
        "cm/quant/torchao/legacy.py": stale,
    })
    code, doc = check(root, new)
    imports = {f["file"]: f for f in doc["findings"] if f["target"] == GONE}
    assert imports["cm/quant/torchao/patch.py"]["live"] and imports["cm/quant/torchao/patch.py"]["breaking"], doc["findings"]
    assert not imports["cm/quant/torchao/legacy.py"]["live"], doc["findings"]
    assert code == 1
