"""Objects a class's own methods make and keep (the nineteenth held-out set): `cls(…)` in a
classmethod, `type(self)(…)` and `self.__class__(…)` in a method make an instance of that class,
so a plugin `@dataclass` over an upstream dataclass is built by its generated `__init__` (the
upstream fields, then its own) there too; an `__init__` that keeps a table under an annotation
(`self._table: dict[str, Callable] = {…}`) keeps it as a plain assignment does, for the methods
that read it."""

from __future__ import annotations

import pytest
from kinds_support import check, plugin, pyproject, upstream_pair

SPEC = """
    from dataclasses import dataclass


    class SpecInput:
        def __init__(self, kind):
            self.kind = kind


    @dataclass
    class DraftInput(SpecInput):
        hidden: object = None{window}

        def __post_init__(self):
            super().__init__(1)
    """


@pytest.fixture(scope="module")
def upstreams(tmp_path_factory):
    # 0.10.0's DraftInput adds a `window` field
    return upstream_pair(tmp_path_factory, old={"sglang/srt/speculative/__init__.py": "", "sglang/srt/speculative/spec.py": SPEC.format(window="")},
                         new={"sglang/srt/speculative/__init__.py": "", "sglang/srt/speculative/spec.py": SPEC.format(window="\n        window: object = None")})


HEAD = "from dataclasses import dataclass\n\nfrom sglang.srt.speculative.spec import DraftInput\n\n\n@dataclass\nclass Mine(DraftInput):\n    slot: int = -1\n\n"
MADE = {
    "cls_in_a_classmethod": HEAD + "    @classmethod\n    def windowed(cls, h, w):\n        return cls(hidden=h, window=w, slot=0)\n\n\ndef register():\n    return Mine.windowed(1, 2)\n",
    "type_of_self": HEAD + "    def windowed(self, w):\n        return type(self)(hidden=self.hidden, window=w)\n\n\ndef register():\n    return Mine(hidden=1).windowed(2)\n",
    "class_of_self": HEAD + "    def windowed(self, w):\n        return self.__class__(hidden=self.hidden, window=w)\n\n\ndef register():\n    return Mine(hidden=1).windowed(2)\n",
}


@pytest.mark.parametrize("spelling", sorted(MADE))
def test_an_instance_a_method_makes_of_its_own_dataclass_takes_its_fields(upstreams, tmp_path, spelling):
    """On 0.9.0 DraftInput has no `window`: the call passing it raises TypeError (breaking); on
    0.10.0 it binds the generated __init__ (nothing breaking)."""
    old, new = upstreams
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"p": "p:register"}), "p/__init__.py": MADE[spelling]})
    for upstream, broken in ((old, True), (new, False)):
        code, doc = check(root, upstream)
        calls = [f for f in doc["findings"] if f["kind"] == "call" and f["breaking"]]
        assert ([f["line"] for f in calls] != [], code) == (broken, 1 if broken else 0), doc["findings"]
        if broken:
            assert "window" in calls[0]["detail"], calls


SAMPLER = "sglang.srt.layers.sampler.Sampler"
INSTALLER = ("from typing import Callable\n\nfrom sglang.srt.plugins.hook_registry import HookRegistry, HookType\n\n\n"
             "def _around(original_fn, self, *args, **kwargs):\n    return original_fn(self, *args, **kwargs)\n\n\n"
             "class Installer:\n    def __init__(self):\n{keep}\n\n    def install(self):\n{use}\n\n\ndef register():\n    Installer().install()\n")
KEPT = {
    "annotated_dict": ("        self._table: dict[str, Callable] = {{'{t}': _around}}",
                       "        for target, fn in self._table.items():\n            HookRegistry.register(target, fn, HookType.AROUND)"),
    "annotated_list_of_pairs": ("        self._rows: list[tuple[str, Callable]] = [('{t}', _around)]",
                                "        for target, fn in self._rows:\n            HookRegistry.register(target, fn, HookType.AROUND)"),
    "annotated_target_string": ("        self.target: str = '{t}'", "        HookRegistry.register(self.target, _around, HookType.AROUND)"),
}


@pytest.mark.parametrize("method,status,code", [("gone_method", "missing", 1), ("forward", "ok", 0)])
@pytest.mark.parametrize("spelling", sorted(KEPT))
def test_what_an_init_keeps_under_an_annotation_reaches_its_methods(upstreams, tmp_path, spelling, method, status, code):
    keep, use = KEPT[spelling]
    source = INSTALLER.format(keep=keep.format(t=f"{SAMPLER}.{method}"), use=use)
    code_, doc = check(plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"p": "p:register"}), "p/__init__.py": source}), upstreams[1])
    hooks = [(f["target"], f["status"]) for f in doc["findings"] if f["kind"] == "hook"]
    assert hooks == [(f"{SAMPLER}.{method}", status)] and code_ == code, doc["findings"]
