"""A call of an upstream lookup that raises for a name it no longer knows
(`if quantization not in QUANTIZATION_METHODS: raise ValueError`, vLLM's
get_quantization_config), made inside a plugin helper with the helper's parameter: the name
is what the helper's callers pass, one or two calls up, in a loop or a comprehension
(fifteenth held-out set V-m3)."""

from __future__ import annotations

import pytest
from kinds_support import check, plugin, pyproject, upstream_pair

LOOKUP = {"sglang/srt/layers/quantization/__init__.py": """
QUANTIZATION_METHODS = ["fp8", "awq"]


def get_quantization_config(quantization: str):
    if quantization not in QUANTIZATION_METHODS:
        raise ValueError(f"Invalid quantization method: {quantization}")
    return object
"""}

HELPERS = {
    # the name an attribute of a member of a plugin enum holds (its __init__ unpacks the tuple
    # value; sixteenth set V-k3), a record's field, a table's item: read where the call is made
    "enum_member_attribute": "import enum\n\n\nclass Fmt(enum.Enum):\n    FP8 = ('dev_fp8', 'fp8')\n    BITBLAS = ('dev_bb', 'gptq_bitblas')\n\n"
                             "    def __init__(self, device_method, upstream_method):\n        self.device_method = device_method\n"
                             "        self.upstream_method = upstream_method\n\n\n"
                             "def register():\n    return {f: get_quantization_config(f.upstream_method) for f in Fmt}\n",
    "named_tuple_field": "from typing import NamedTuple\n\n\nclass Spec(NamedTuple):\n    name: str\n    method: str\n\n\n"
                         "SPECS = (Spec('dev_fp8', 'fp8'), Spec('dev_bb', 'gptq_bitblas'))\n\n\n"
                         "def register():\n    for spec in SPECS:\n        get_quantization_config(spec.method)\n",
    "table_item": "TABLE = {'dev_fp8': {'method': 'fp8'}, 'dev_bb': {'method': 'gptq_bitblas'}}\n\n\n"
                  "def register():\n    for name in TABLE:\n        get_quantization_config(TABLE[name]['method'])\n",
    "direct_caller": "def _upstream(method):\n    return get_quantization_config(method)\n\n\n"
                     "def register():\n    return [_upstream('fp8'), _upstream('gptq_bitblas')]\n",
    "cached_two_levels_comprehension": "import functools\n\n\n@functools.lru_cache(maxsize=None)\ndef _upstream(method):\n"
                                       "    return get_quantization_config(method)\n\n\ndef _device(name):\n    return _upstream(METHODS[name])\n\n\n"
                                       "METHODS = {'dev_fp8': 'fp8', 'dev_bitblas': 'gptq_bitblas'}\nCONFIGS = {name: _device(name) for name in METHODS}\n\n\n"
                                       "def register():\n    return CONFIGS\n",
    "loop_keyword": "def _upstream(*, method):\n    return get_quantization_config(quantization=method)\n\n\n"
                    "def register():\n    for m in ('awq', 'gptq_bitblas'):\n        _upstream(method=m)\n",
}


@pytest.mark.parametrize("spelling", sorted(HELPERS))
def test_a_lookup_name_a_helper_is_passed_is_judged(tmp_path_factory, tmp_path, spelling):
    _, new = upstream_pair(tmp_path_factory, new=LOOKUP)
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"pc": "pc:register"}),
        "pc/__init__.py": "from sglang.srt.layers.quantization import get_quantization_config\n\n\n" + HELPERS[spelling],
    })
    code, doc = check(root, new)
    calls = [f for f in doc["findings"] if f["kind"] == "call" and f["target"].endswith("get_quantization_config")]
    assert [f["breaking"] for f in calls] == [True] and "gptq_bitblas" in calls[0]["detail"], doc["findings"]
    assert code == 1
