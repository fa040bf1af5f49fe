"""Upstream classes held by a plugin enum's members (twenty-ninth set F19-i2): `E.M.value(...)`
calls the class the member's value is, as does a loop variable over the enum and an attribute the
enum's `__init__` sets from the value; such a call is judged against that class's constructor."""

from __future__ import annotations

import pytest
from kinds_support import check, plugin, pyproject, upstream_pair

EAGLE = """
from dataclasses import dataclass


@dataclass
class EagleDraftInput:
    hidden_states: object = None
    topk_p: object = None


@dataclass
class EagleDraftExtendInput:
    hidden_states: object = None
    num_accept_tokens: object = None
"""

SPELLINGS = {
    "member_value_called": ("", "Stage.DRAFT_EXTEND.value({kw}=n)"),
    "loop_over_members": ("", "[stage.value({kw}=n) for stage in Stage if stage is Stage.DRAFT_EXTEND]"),
    "attribute_set_by_the_enums_init": ("\n    def __init__(self, input_cls):\n        self.input_cls = input_cls\n",
                                        "Stage.DRAFT_EXTEND.input_cls({kw}=n)"),
}


@pytest.fixture(scope="module")
def upstreams(tmp_path_factory):
    return upstream_pair(tmp_path_factory, new={"sglang/srt/speculative/__init__.py": "", "sglang/srt/speculative/eagle_info.py": EAGLE})


@pytest.mark.parametrize("keyword", ["accept_length", "num_accept_tokens"])
@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
def test_a_call_of_an_upstream_class_an_enum_member_holds_is_judged(upstreams, tmp_path, spelling, keyword):
    _, new = upstreams
    body, call = SPELLINGS[spelling]
    code, doc = check(plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"eh": "eh:register"}),
        "eh/__init__.py": f"""import enum

from sglang.srt.speculative.eagle_info import EagleDraftExtendInput, EagleDraftInput


class Stage(enum.Enum):
    DRAFT = EagleDraftInput
    DRAFT_EXTEND = EagleDraftExtendInput
{body}

def extend_input(n):
    return {call.format(kw=keyword)}


def register():
    return extend_input(3)
""",
    }), new)
    breaking = [f for f in doc["findings"] if f["breaking"]]
    if keyword == "num_accept_tokens":
        assert not breaking and code == 0, breaking
    else:
        assert [(f["status"], f["target"].rsplit(".", 1)[-1]) for f in breaking] == [("signature_changed", "EagleDraftExtendInput")], doc["findings"]
        assert code == 1
