"""An upstream module whose own top-level import fails (a stale re-export shim: 0.5.17's
nsa_backend.py imports NativeSparseAttnBackend from dsa_backend.py, which no longer defines it)
raises ImportError for whoever imports it: a plugin import of any name from it fails, even one
that exists (fifteenth held-out set F37-m2). An import the shim guards (`try`), a star import,
or one whose names all exist fails nothing."""

from __future__ import annotations

import pytest
from kinds_support import check, plugin, pyproject, upstream_pair

SHIMS = {
    "absolute": ("from sglang.srt.layers.sampler import Sampler, TopKSampler\n", True),
    "relative": ("from .sampler import (\n    Sampler,\n    TopKSampler,\n)\n", True),
    "two_statements": ("import warnings\n\nfrom .sampler import Sampler\nfrom .sampler import TopKSampler\n", True),
    # negatives
    "guarded": ("from .sampler import Sampler\n\ntry:\n    from .sampler import TopKSampler\nexcept ImportError:\n    TopKSampler = None\n", False),
    "star": ("from .sampler import *  # noqa: F403\n", False),
    "all_there": ("from .sampler import Sampler\n", False),
}


@pytest.mark.parametrize("spelling", sorted(SHIMS))
def test_a_plugin_import_from_an_upstream_module_that_fails_to_import(tmp_path_factory, tmp_path, spelling):
    shim, fails = SHIMS[spelling]
    _, new = upstream_pair(tmp_path_factory, new={"sglang/srt/layers/shim.py": shim})
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"sh": "sh:register"}),
        "sh/__init__.py": "from sglang.srt.layers.shim import Sampler\n\n\ndef register():\n    return Sampler\n",
    })
    code, doc = check(root, new)
    found = [f for f in doc["findings"] if f["kind"] == "import" and f["target"] == "sglang.srt.layers.shim.Sampler"]
    if fails:
        assert found and found[0]["status"] == "missing" and found[0]["breaking"], doc["findings"]
        assert "TopKSampler" in found[0]["detail"] and code == 1
    else:
        assert not [f for f in found if f["status"] != "ok"] and code == 0, doc["findings"]
