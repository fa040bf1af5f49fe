"""A name a caught import binds, and its handler binds to None where the import fails
(`try: from sglang.x import f` / `except ImportError: f = None`, or `f = None` then
`with suppress(ImportError): from sglang.x import f`): where the import fails, a call of f
raises TypeError ('NoneType' object is not callable) unless a test of f guards it (fifteenth
held-out set F36-m2; F36 is the case where the import resolves)."""

from __future__ import annotations

import pytest
from kinds_support import check, plugin, pyproject, upstream_pair

GONE = "sglang.srt.layers.torchao_utils.apply_torchao_config_to_model"  # in 0.9.0, not in 0.10.0

IMPORTS = {
    "try_except": "try:\n    from sglang.srt.layers.torchao_utils import apply_torchao_config_to_model\nexcept ImportError:\n"
                  "    apply_torchao_config_to_model = None\n",
    "suppress": "import contextlib\n\napply_torchao_config_to_model = None\nwith contextlib.suppress(ImportError):\n"
                "    from sglang.srt.layers.torchao_utils import apply_torchao_config_to_model\n",
    "chained_assignment": "try:\n    from sglang.srt.layers.torchao_utils import apply_torchao_config_to_model\nexcept (ImportError, AttributeError):\n"
                          "    apply_torchao_config_to_model = _other = None\n",
}
CALLS = {
    "unguarded": ("    return apply_torchao_config_to_model(model, 'int8')\n", True),
    "is_not_none": ("    if apply_torchao_config_to_model is not None:\n        return apply_torchao_config_to_model(model, 'int8')\n    return model\n", False),
    "conditional_expression": ("    return apply_torchao_config_to_model(model, 'int8') if apply_torchao_config_to_model else model\n", False),
}


@pytest.fixture(scope="module")
def upstreams(tmp_path_factory):
    return upstream_pair(tmp_path_factory)


@pytest.mark.parametrize("call", sorted(CALLS))
@pytest.mark.parametrize("spelling", sorted(IMPORTS))
def test_a_call_of_a_none_fallback_fails_where_the_import_does(upstreams, tmp_path, spelling, call):
    old, new = upstreams
    body, fails = CALLS[call]
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"nf": "nf:register"}),
        "nf/__init__.py": IMPORTS[spelling] + "\n\ndef _quantize(model):\n" + body + "\n\ndef register():\n    _quantize(object())\n",
    }, name=f"{spelling}-{call}")
    code, doc = check(root, old)
    assert code == 0 and not [f for f in doc["findings"] if f["breaking"]], doc["findings"]
    code, doc = check(root, new)
    calls = [f for f in doc["findings"] if f["target"] == GONE and f["kind"] == "call"]
    assert [f["breaking"] for f in calls if f["breaking"]] == ([True] if fails else []), doc["findings"]
    assert code == (1 if fails else 0), doc["findings"]
