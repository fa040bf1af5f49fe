"""An attribute read on a member of an upstream enum (twenty-ninth set F06-i2): a member is an
instance of its enum, so it has what the class has (methods, properties, the mixed-in type's),
`name`/`value`, and what the enum's own `__init__` sets on each member (the enum docs). Read on a
member named in place, on a loop's or a comprehension's variable over the enum, or on a parameter
annotated with it, a method the release dropped is missing there; a method it keeps, called on a
member, is bound to it (no false signature change)."""

from __future__ import annotations

import pytest
from kinds_support import check, plugin, pyproject, upstream_pair
from knowledge_support import by_target

FORWARD_MODE = """
import enum


class ForwardMode(enum.IntEnum):
    EXTEND = enum.auto()
    DECODE = enum.auto()

    def is_extend(self, include_draft_extend_v2: bool = False):
        return self == ForwardMode.EXTEND
{extra}


class Stage(enum.Enum):
    PREFILL = ("prefill", 1)
    DECODE = ("decode", 2)

    def __init__(self, label, order):
        self.label = label
        self.order = order
"""
DRAFT = """
    def is_draft_extend(self, include_v2: bool = False):
        return False
"""
MODULE = "sglang/srt/model_executor/forward_batch_info.py"
GONE = "sglang.srt.model_executor.forward_batch_info.ForwardMode.is_draft_extend"


@pytest.fixture(scope="module")
def upstreams(tmp_path_factory):
    return upstream_pair(tmp_path_factory, old={MODULE: FORWARD_MODE.format(extra=DRAFT)}, new={MODULE: FORWARD_MODE.format(extra="")})


SPELLINGS = {
    "member_named_in_place": "FLAGS = {'extend': ForwardMode.EXTEND.is_draft_extend(include_v2=True)}",
    "dict_comprehension_over_the_enum": "FLAGS = {mode: mode.is_draft_extend(include_v2=True) for mode in ForwardMode}",
    "loop_over_the_enum": "FLAGS = {}\nfor mode in ForwardMode:\n    FLAGS[mode.name] = mode.is_draft_extend(include_v2=True)",
    "annotated_parameter": "def _flags(mode: ForwardMode) -> bool:\n    return mode.is_draft_extend(include_v2=True)\n\n\nFLAGS = _flags(ForwardMode.DECODE)",
}


def _plugin(tmp_path, source: str):
    return plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"em": "em:register"}),
        "em/__init__.py": "from sglang.srt.model_executor.forward_batch_info import ForwardMode, Stage\n\n" + source
                          + "\n\n\ndef register():\n    return FLAGS\n",
    })


@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
def test_a_method_read_on_an_upstream_enums_member_is_judged_on_the_enum(upstreams, tmp_path, spelling):
    old, new = upstreams
    root = _plugin(tmp_path, SPELLINGS[spelling])
    code, doc = check(root, new)
    finding = by_target(doc["findings"]).get(GONE) or next(
        (f for f in doc["findings"] if f["target"].endswith(".is_draft_extend")), None)
    assert finding is not None and (finding["status"], finding["live"], finding["breaking"]) == ("missing", True, True), doc["findings"]
    assert code == 1
    code, doc = check(root, old)
    assert code == 0, [f for f in doc["findings"] if f["breaking"]]


def test_what_every_member_has_is_there(upstreams, tmp_path):
    # name/value, a kept method called on a member (bound: no false signature change), the mixed-in
    # int's methods, what the enum's __init__ sets on each member; a read nothing defines is missing
    _, new = upstreams
    root = _plugin(tmp_path, """FLAGS = [ForwardMode.EXTEND.name, ForwardMode.DECODE.value, ForwardMode.DECODE.is_extend(),
         ForwardMode.EXTEND.bit_length(), Stage.PREFILL.label, [s.order for s in Stage]]
ODD = Stage.DECODE.weight""")
    code, doc = check(root, new)
    breaking = {f["target"].rsplit(".", 2)[-2] + "." + f["target"].rsplit(".", 1)[-1]: f for f in doc["findings"] if f["breaking"]}
    assert list(breaking) == ["DECODE.weight"] and breaking["DECODE.weight"]["status"] == "missing", doc["findings"]
    assert code == 1
