"""A parameter annotated with a class only `if TYPE_CHECKING:` imports holds an instance of that
class, as a type checker reads it (F21 variant s2): a read of a field the class never has is
found, whether the annotation is bare (with `from __future__ import annotations`), quoted, or
through a module the block imports; a field it has is fine."""

from __future__ import annotations

import pytest
from kinds_support import check, plugin, pyproject, upstream_pair

LINEAR = ("class RowParallelLinear:\n    def __init__(self, n):\n        self.weight = [0] * n\n")
SPELLINGS = {
    "bare_with_future_import": ("from __future__ import annotations\n\nfrom typing import TYPE_CHECKING\n\n"
                                "if TYPE_CHECKING:\n    from sglang.srt.layers.linear import RowParallelLinear\n\n\n", "RowParallelLinear"),
    "quoted": ("from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from sglang.srt.layers.linear import RowParallelLinear\n\n\n",
               "'RowParallelLinear'"),
    "module_under_typing_type_checking": ("import typing\n\nif typing.TYPE_CHECKING:\n    import sglang.srt.layers.linear as linear\n\n\n",
                                          "'linear.RowParallelLinear'"),
}


@pytest.fixture(scope="module")
def upstreams(tmp_path_factory):
    return upstream_pair(tmp_path_factory, new={"sglang/srt/layers/linear.py": LINEAR}, old={"sglang/srt/layers/linear.py": LINEAR})


@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
def test_a_parameter_annotated_with_a_type_checking_import_holds_that_class(upstreams, tmp_path, spelling):
    _, new = upstreams
    head, hint = SPELLINGS[spelling]
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"p": "p:register"}),
        "p/__init__.py": "def register():\n    from p import repack  # noqa: F401\n",
        "p/repack.py": (head + "import sglang.srt.layers  # noqa: F401\n\n\n"
                        f"def repack(layer: {hint}):\n    return layer.weight\n\n\ndef repack_typo(layer: {hint}):\n    return layer.weigth\n"),
    })
    code, doc = check(root, new)
    fields = {f["target"].rsplit(".", 1)[-1]: f for f in doc["findings"] if f["kind"] == "field"}
    assert "weigth" in fields and fields["weigth"]["status"] in ("missing", "unknown"), doc["findings"]
    assert fields.get("weight", {"status": "ok"})["status"] == "ok"
