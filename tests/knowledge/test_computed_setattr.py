"""Attributes an upstream class sets by a name it computes in a loop over a literal table
(sglang 0.5.23's TokenizerControlMixin.init_communicators: `for spec in _COMMUNICATOR_SPECS:
name = spec[0]; … setattr(self, f"{name}_communicator", comm)`) are the table's names: a
plugin subclass reading one of them reads a member, and a near-miss is missing, not undecided.
The same loop over a table only known at run time leaves every name undecided."""

from __future__ import annotations

import pytest
from kinds_support import check, plugin, pyproject, upstream_pair
from knowledge_support import by_target

TM = "sglang.srt.managers.tokenizer_manager.TokenizerManager"

MANAGER = """
from sglang.srt.managers.control_mixin import ControlMixin


class TokenizerManager(ControlMixin):
    def __init__(self):
        self.init_communicators()
"""

# the same loop, spelled as upstream code spells it
LOOPS = {
    "tuple_specs_fstring": """
        class FlushOut: pass
        class ProfileOut: pass

        _SPECS = [
            ("flush_cache", FlushOut),
            ("profile", ProfileOut, "watching"),
        ]

        class ControlMixin:
            def init_communicators(self):
                for spec in _SPECS:
                    name, resp_type = spec[0], spec[1]
                    mode = spec[2] if len(spec) > 2 else "queueing"
                    setattr(self, f"{name}_communicator", (resp_type, mode))
        """,
    "dict_items_plus": """
        _SPECS = {"flush_cache": 1, "profile": 2}

        class ControlMixin:
            def init_communicators(self):
                for name, size in _SPECS.items():
                    setattr(self, name + "_communicator", [None] * size)
        """,
    "literal_tuple_percent": """
        class ControlMixin:
            def init_communicators(self):
                for name in ("flush_cache", "profile"):
                    setattr(self, "%s_communicator" % name, None)
        """,
    "dict_keys_format": """
        _SPECS = {"flush_cache": None, "profile": None}

        class ControlMixin:
            def init_communicators(self):
                for name in _SPECS:
                    attr = "{}_communicator".format(name)
                    setattr(self, attr, _SPECS[name])
        """,
}

RUNTIME_TABLE = """
class ControlMixin:
    def init_communicators(self):
        for name in self.spec_names():
            setattr(self, f"{name}_communicator", None)

    def spec_names(self):
        return ["flush_cache", "profile"]
"""

PLUGIN = """
from sglang.srt.managers.tokenizer_manager import TokenizerManager


class DevTokenizerManager(TokenizerManager):
    async def flush(self):
        return await self.flush_cache_communicator(None), self.profile_communicator

    def stale(self):
        return self.flush_caches_communicator


def register():
    return DevTokenizerManager
"""


def _fields(tmp_path_factory, tmp_path, mixin: str) -> tuple[int, dict]:
    _, new = upstream_pair(tmp_path_factory, new={"sglang/srt/managers/control_mixin.py": mixin,
                                                  "sglang/srt/managers/tokenizer_manager.py": MANAGER})
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"p": "p.hooks:register"}), "p/__init__.py": "", "p/hooks.py": PLUGIN})
    code, doc = check(root, new)
    return code, by_target(doc["findings"])


@pytest.mark.parametrize("loop", sorted(LOOPS))
def test_names_set_in_a_loop_over_a_literal_table_are_members(tmp_path_factory, tmp_path, loop):
    code, found = _fields(tmp_path_factory, tmp_path, LOOPS[loop])
    for name in ("flush_cache_communicator", "profile_communicator"):
        assert found.get(f"{TM}.{name}", {"status": "ok"})["status"] == "ok", (name, found.get(f"{TM}.{name}", {}).get("detail"))
    stale = found[f"{TM}.flush_caches_communicator"]
    assert stale["status"] == "missing" and code == 0, stale  # decided: nothing undecided blocks the verdict


def test_a_table_known_only_at_run_time_leaves_the_names_undecided(tmp_path_factory, tmp_path):
    code, found = _fields(tmp_path_factory, tmp_path, RUNTIME_TABLE)
    for name in ("flush_cache_communicator", "flush_caches_communicator"):
        assert found[f"{TM}.{name}"]["status"] == "unknown", found[f"{TM}.{name}"]
        assert "computed name" in found[f"{TM}.{name}"]["detail"]
    assert code == 3
