"""vLLM's version as a tuple (`vllm.__version_tuple__`, setuptools-scm's `(0, 24, 0)` in
vllm/_version.py, re-exported by vllm/version.py and vllm/__init__.py) is the release's: a test of
it (sliced, whole, unpacked) is decided on the release checked, a name an `if` on it binds is the
arm that release takes, and a module name formatted from it is that release's module (set 34
V-p6, V-p8). Before, the test was undecided and both arms were judged: a patch written for the
older release red on the newer one."""

from __future__ import annotations

import pytest
from knowledge_support import harness_json, write_tree


def upstream(version: str) -> dict[str, str]:
    numbers = tuple(int(n) for n in version.split("."))
    quant = ({"vllm/quant/awq.py": "class AWQConfig:\n    @classmethod\n    def get_min_capability(cls):\n        return 75\n"}
             if numbers < (0, 24) else
             {"vllm/quant/auto_awq.py": "class AutoAWQConfig:\n    @classmethod\n    def get_min_capability(cls):\n        return 75\n"})
    return {
        "vllm/__init__.py": "from .version import __version__, __version_tuple__\n",
        "vllm/version.py": "from ._version import __version__, __version_tuple__\n",
        "vllm/_version.py": f"__version__ = version = '{version}'\n__version_tuple__ = version_tuple = {numbers!r}\n",
        "vllm/quant/__init__.py": "",
        "vllm/utils.py": "class LazyLoader:\n    def __init__(self, local_name, parent_globals, name):\n        self.name = name\n",
        **quant,
    }


PYPROJECT = '[project]\nname = "xq"\nversion = "0.1"\n\n[project.entry-points."vllm.general_plugins"]\nxq = "xq:register"\n'
CHOSEN_BASE = '''
{read}

if {test}:
    from vllm.quant.auto_awq import AutoAWQConfig as _Base
else:
    from vllm.quant.awq import AWQConfig as _Base


def _min_capability(cls):
    return 0


_Base.get_min_capability = classmethod(_min_capability)
'''
SPELLINGS = {
    "sliced_tuple_imported_by_name": {"xq/quant.py": CHOSEN_BASE.format(
        read="from vllm import __version_tuple__ as _VLLM_VERSION", test="_VLLM_VERSION[:2] >= (0, 24)")},
    "whole_tuple_through_the_package": {"xq/quant.py": CHOSEN_BASE.format(
        read="import vllm", test="not vllm.__version_tuple__ < (0, 24)")},
    # a compat module per release, its name formatted from the unpacked tuple
    "module_named_from_the_unpacked_tuple": {
        "xq/quant.py": ("import importlib\n\nfrom vllm.version import __version_tuple__\n\nmajor, minor = __version_tuple__[:2]\n"
                        'importlib.import_module(f"xq.compat.v{major}_{minor}")\n'),
        "xq/compat/__init__.py": "",
        "xq/compat/v0_23.py": "from vllm.quant.awq import AWQConfig\n\nAWQConfig.get_min_capability = classmethod(lambda cls: 0)\n",
        "xq/compat/v0_24.py": "from vllm.quant.auto_awq import AutoAWQConfig\n\nAutoAWQConfig.get_min_capability = classmethod(lambda cls: 0)\n",
    },
    # the negative: a test no release here passes keeps the old arm on both
    "a_test_that_never_holds": {"xq/quant.py": CHOSEN_BASE.format(
        read="from vllm import __version_tuple__", test="__version_tuple__[:2] >= (0, 99)")},
}


@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
def test_a_test_of_the_version_tuple_is_decided_on_the_release(tmp_path, spelling):
    write_tree(tmp_path / "plugin", {"pyproject.toml": PYPROJECT, "xq/__init__.py": "def register():\n    import xq.quant  # noqa: F401\n",
                                     **SPELLINGS[spelling]})
    codes = {}
    for version in ("0.23.0", "0.24.0"):
        write_tree(tmp_path / version, upstream(version))
        code, doc = harness_json("check", "--plugin", str(tmp_path / "plugin"), "--upstream", str(tmp_path / version), "--baseline", "none")
        breaking = sorted(f["target"] for f in doc["findings"] if f["breaking"])
        patched = sorted(f["target"] for f in doc["findings"] if f["kind"] == "patch" and f["status"] == "ok")
        codes[version] = code, breaking, patched
    assert codes["0.23.0"] == (0, [], ["vllm.quant.awq.AWQConfig.get_min_capability"]), codes
    if spelling == "a_test_that_never_holds":
        assert codes["0.24.0"][0] == 1 and "vllm.quant.awq.AWQConfig.get_min_capability" in codes["0.24.0"][1], codes
    else:
        assert codes["0.24.0"] == (0, [], ["vllm.quant.auto_awq.AutoAWQConfig.get_min_capability"]), codes


def test_a_name_a_decided_if_binds_to_a_call_result_is_no_class(tmp_path):
    # `if TYPE_CHECKING: import xgrammar as xgr` / `else: xgr = LazyLoader(…)` (vllm-ascend's model
    # runner): the arm taken binds an object, not the class called, so `xgr.f(…)` reads no member of it
    write_tree(tmp_path / "plugin", {
        "pyproject.toml": PYPROJECT, "xq/__init__.py": "def register():\n    import xq.grammar  # noqa: F401\n",
        "xq/grammar.py": ("from typing import TYPE_CHECKING\n\nfrom vllm.utils import LazyLoader\n\nif TYPE_CHECKING:\n"
                          "    import xgrammar as xgr\nelse:\n    xgr = LazyLoader('xgr', globals(), 'xgrammar')\n\n\n"
                          "def apply(logits, bitmask):\n    xgr.apply_token_bitmask_inplace(logits, bitmask)\n"),
    })
    write_tree(tmp_path / "up", upstream("0.23.0"))
    code, doc = harness_json("check", "--plugin", str(tmp_path / "plugin"), "--upstream", str(tmp_path / "up"), "--baseline", "none")
    assert not [f for f in doc["findings"] if f["target"].startswith("vllm.utils.LazyLoader.")] and code == 0, doc["findings"]
