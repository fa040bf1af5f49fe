"""A parameter annotated with several upstream classes (twenty-ninth set F21-i1/i2): a union
(`A | B`, `Union[A, B]`, `Optional[A | B]`) or a TypeVar (its `bound=`, or its constraints) types
the value as any of them (the typing docs), so a field read on it is read on each: what every one
has is there, what one lacks is missing there."""

from __future__ import annotations

import pytest
from kinds_support import check, plugin, pyproject, upstream_pair

LINEAR = """
class LinearBase:
    def __init__(self, input_size, output_size):
        self.input_size = input_size
        self.weight = None


class ColumnParallelLinear(LinearBase):
    def __init__(self, input_size, output_size, gather_output=False):
        super().__init__(input_size, output_size)
        self.gather_output = gather_output


class RowParallelLinear(LinearBase):
    def __init__(self, input_size, output_size, input_is_parallel=True):
        super().__init__(input_size, output_size)
        self.input_is_parallel = input_is_parallel
"""


@pytest.fixture(scope="module")
def upstreams(tmp_path_factory):
    return upstream_pair(tmp_path_factory, new={"sglang/srt/layers/linear.py": LINEAR})


ANNOTATIONS = {
    "pep604_union": ("", "ColumnParallelLinear | RowParallelLinear"),
    "typing_union_quoted": ("", "'Union[ColumnParallelLinear, RowParallelLinear]'"),
    "optional_of_a_union": ("", "Optional[ColumnParallelLinear | RowParallelLinear]"),
    "constrained_typevar": ("LinearT = TypeVar('LinearT', ColumnParallelLinear, RowParallelLinear)\n", "LinearT"),
}


def _check(tmp_path, upstream, prelude: str, annotation: str, read: str):
    return check(plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"ua": "ua:register"}),
        "ua/__init__.py": f"""from __future__ import annotations

from typing import Optional, TypeVar, Union

from sglang.srt.layers.linear import ColumnParallelLinear, RowParallelLinear

{prelude}

def size_of(layer: {annotation}) -> int:
    return layer.{read}


SIZE = size_of(None)


def register():
    return SIZE
""",
    }), upstream)


@pytest.mark.parametrize("spelling", sorted(ANNOTATIONS))
def test_a_read_on_a_union_is_read_on_each_class(upstreams, tmp_path, spelling):
    _, new = upstreams
    prelude, annotation = ANNOTATIONS[spelling]
    code, doc = _check(tmp_path / "has", new, prelude, annotation, "weight")  # every class has it
    assert code == 0 and not [f for f in doc["findings"] if f["status"] == "missing"], doc["findings"]
    code, doc = _check(tmp_path / "one", new, prelude, annotation, "input_is_parallel")  # only RowParallelLinear has it
    missing = {f["target"].rsplit(".", 2)[-2] for f in doc["findings"] if f["status"] == "missing"}
    assert missing == {"ColumnParallelLinear"} and code == 1, doc["findings"]


def test_a_bound_typevar_is_its_bound(upstreams, tmp_path):
    _, new = upstreams
    bound = "RowT = TypeVar('RowT', bound=RowParallelLinear)\n"
    code, doc = _check(tmp_path / "has", new, bound, "RowT", "input_is_parallel")
    assert code == 0 and not [f for f in doc["findings"] if f["status"] == "missing"], doc["findings"]
    code, doc = _check(tmp_path / "lacks", new, bound, "RowT", "wieght")
    assert [f["target"].rsplit(".", 2)[-2] for f in doc["findings"] if f["status"] == "missing"] == ["RowParallelLinear"] and code == 1


# a copy of a typed object is an object of the same class (twenty-ninth set V-i7:
# `copy.deepcopy(vllm_config.cache_config)`, then a method read on the copy)
COPIES = {
    "deepcopy": "import copy\n", "copy": "import copy\n", "aliased_deepcopy": "from copy import deepcopy as clone\n",
}


@pytest.mark.parametrize("spelling", sorted(COPIES))
def test_a_copy_of_a_typed_object_has_its_class(upstreams, tmp_path, spelling):
    _, new = upstreams
    call = {"deepcopy": "copy.deepcopy", "copy": "copy.copy", "aliased_deepcopy": "clone"}[spelling]
    for read, missing in (("input_is_parallel", False), ("wieght", True)):
        code, doc = check(plugin(tmp_path / read, {
            "pyproject.toml": pyproject(plugins={"ua": "ua:register"}),
            "ua/__init__.py": f"""{COPIES[spelling]}
from sglang.srt.layers.linear import RowParallelLinear


def shard(layer: RowParallelLinear):
    local = {call}(layer)
    return local.{read}


def register():
    return shard(None)
""",
        }), new)
        found = [f["target"].rsplit(".", 2)[-2:] for f in doc["findings"] if f["status"] == "missing"]
        assert found == ([["RowParallelLinear", "wieght"]] if missing else []) and code == (1 if missing else 0), doc["findings"]
