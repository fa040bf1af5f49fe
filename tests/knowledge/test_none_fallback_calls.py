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


def _judged(root, upstreams: tuple[str, str], fails: bool) -> None:
    """Green where the import resolves (0.9.0); on 0.10.0 the call of GONE breaks exactly when `fails`."""
    old, new = upstreams
    code, doc = check(root, old)
    assert code == 0 and not [f for f in doc["findings"] if f["breaking"]], doc["findings"]
    code, doc = check(root, new)
    calls = [f for f in doc["findings"] if f["target"] == GONE and f["kind"] == "call"]
    assert [f["breaking"] for f in calls if f["breaking"]] == ([True] if fails else []), doc["findings"]
    assert code == (1 if fails else 0), doc["findings"]


@pytest.mark.parametrize("call", sorted(CALLS))
@pytest.mark.parametrize("spelling", sorted(IMPORTS))
def test_a_call_of_a_none_fallback_fails_where_the_import_does(upstreams, tmp_path, spelling, call):
    body, fails = CALLS[call]
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"nf": "nf:register"}),
        "nf/__init__.py": IMPORTS[spelling] + "\n\ndef _quantize(model):\n" + body + "\n\ndef register():\n    _quantize(object())\n",
    }, name=f"{spelling}-{call}")
    _judged(root, upstreams, fails)


# a helper that makes the caught import and returns the name, None from its handler (set 21
# F36-e1): the caller's result is upstream's function where the import resolves, None where it
# fails -- a test of it guards the call; an unguarded call fails there as above
LOADERS = {
    "return_after_try": ("def _loader():\n    try:\n        from sglang.srt.layers.torchao_utils import apply_torchao_config_to_model\n"
                         "    except ImportError:\n        return None\n    return apply_torchao_config_to_model\n"),
    "return_in_else": ("def _loader():\n    try:\n        from sglang.srt.layers import torchao_utils\n    except (ImportError, AttributeError):\n"
                       "        return\n    else:\n        return torchao_utils.apply_torchao_config_to_model\n"),
    "logging_handler_in_another_module": ("from nf.compat import _loader\n", {
        "nf/compat.py": "import logging\n\n\ndef _loader():\n    try:\n        import sglang.srt.layers.torchao_utils as tu\n"
                        "    except ModuleNotFoundError:\n        logging.getLogger(__name__).warning('no torchao')\n        return None\n"
                        "    return tu.apply_torchao_config_to_model\n"}),
}
USES = {
    "tested_is_none": ("    quantize = _loader()\n    if quantize is None:\n        return model\n    return quantize(model, 'int8')\n", False),
    "tested_truth": ("    quantize = _loader()\n    return quantize(model, 'int8') if quantize else model\n", False),
    "unguarded": ("    quantize = _loader()\n    return quantize(model, 'int8')\n", True),
}


@pytest.mark.parametrize("use", sorted(USES))
@pytest.mark.parametrize("spelling", sorted(LOADERS))
def test_a_helper_returning_a_caught_import_is_that_import(upstreams, tmp_path, spelling, use):
    loader, extra = LOADERS[spelling] if isinstance(LOADERS[spelling], tuple) else (LOADERS[spelling], {})
    body, fails = USES[use]
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"nf": "nf:register"}), **extra,
        "nf/__init__.py": loader + "\n\ndef _quantize(model):\n" + body + "\n\ndef register():\n    _quantize(object())\n",
    }, name=f"{spelling}-{use}")
    _judged(root, upstreams, fails)


# the fallback folded into `or` (twenty-fifth set F36-e1): `f or _own` is upstream's f where the
# import resolves (a function is true) and the plugin's _own where it fails (None is false), as
# `f if f is not None else _own` is: a call through it is judged against upstream's f there
# (too many arguments: TypeError) and is the plugin's own where the import fails
OR_FALLBACKS = {
    "local": "def _quantize(model):\n    quantize = apply_torchao_config_to_model or _identity\n    return quantize(model, 'int8', None, 1)\n",
    "module_global": "QUANTIZE = apply_torchao_config_to_model or _identity\n\n\ndef _quantize(model):\n    return QUANTIZE(model, 'int8', None, 1)\n",
    "inline": "def _quantize(model):\n    return (apply_torchao_config_to_model or _identity)(model, 'int8', None, 1)\n",
}


@pytest.mark.parametrize("spelling", sorted(OR_FALLBACKS))
def test_a_none_fallback_or_the_plugins_own_is_upstreams_where_the_import_resolves(upstreams, tmp_path, spelling):
    old, new = upstreams
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"nf": "nf:register"}),
        "nf/__init__.py": IMPORTS["try_except"] + "\n\ndef _identity(model, *args):\n    return model\n\n\n" + OR_FALLBACKS[spelling]
                          + "\n\ndef register():\n    _quantize(object())\n",
    }, name=spelling)
    code, doc = check(root, old)
    calls = [f for f in doc["findings"] if f["target"] == GONE and f["kind"] == "call"]
    assert [(f["status"], f["breaking"]) for f in calls] == [("signature_changed", True)] and code == 1, doc["findings"]
    code, doc = check(root, new)
    assert not [f for f in doc["findings"] if f["breaking"]] and code == 0, doc["findings"]
