"""Generated constructors: calling an upstream @dataclass binds to the __init__ the decorator
generates from its fields (inherited dataclass fields first, in MRO order), even when a parent
class writes its own __init__ — the generated one replaces it (issue 18 kind 2)."""

from __future__ import annotations

import pytest
from kinds_support import check, plugin, pyproject, upstream_pair

SPEC = {
    "sglang/srt/speculative/__init__.py": "",
    "sglang/srt/speculative/spec_info.py": """
        from abc import ABC

        class SpecInput(ABC):
            def __init__(self, spec_input_type):
                self.spec_input_type = spec_input_type
        """,
    "sglang/srt/speculative/eagle_info.py": """
        from dataclasses import dataclass
        from typing import Optional

        from sglang.srt.speculative.spec_info import SpecInput

        @dataclass
        class EagleDraftInput(SpecInput):
            topk_p: Optional[int] = None
            topk_index: Optional[int] = None
            hidden_states: Optional[int] = None

        class NgramDraftInput(EagleDraftInput):
            pass

        @dataclass
        class Base:
            a: int
            b: int = 0

        @dataclass(frozen=True)
        class Child(Base):
            c: int = 1
        """,
}


@pytest.fixture(scope="module")
def upstreams(tmp_path_factory):
    return upstream_pair(tmp_path_factory, old=SPEC, new=SPEC)


def test_calls_to_a_dataclass_over_a_written_init_bind_to_its_fields(upstreams, tmp_path):
    old, _ = upstreams
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"spec": "spec:register"}),
        "spec/__init__.py": """
            from sglang.srt.speculative.eagle_info import Child, EagleDraftInput, NgramDraftInput


            def seed(hidden, probs, ids):
                ok = EagleDraftInput(hidden_states=hidden, topk_p=probs, topk_index=ids)
                also = NgramDraftInput(topk_p=probs)
                fields_in_mro_order = Child(1, 2, c=3)
                bad = EagleDraftInput(hidden_state=hidden)
                too_many = Child(1, 2, 3, 4)
                required = Child(b=2)
                return ok, also, fields_in_mro_order, bad, too_many, required


            class MyDraft(EagleDraftInput):
                def __init__(self, hidden):
                    super().__init__(hidden_states=hidden)


            def register():
                pass
            """,
    })
    code, doc = check(root, old)
    calls = {f["line"]: f for f in doc["findings"] if f["kind"] in ("call", "subclass") and f["breaking"]}
    # the field keywords (line 5), a plain subclass (6), fields in MRO order (7) and
    # super().__init__ with a field keyword (16) fit; the typo, one argument too many and a
    # missing required field do not
    assert sorted(calls) == [8, 9, 10], calls
    assert "hidden_state" in calls[8]["detail"] and "synthesised by @dataclass" in calls[8]["detail"]
    assert "passes 4" in calls[9]["detail"] and "'a'" in calls[10]["detail"]
    assert code == 1
