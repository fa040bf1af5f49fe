"""Hook tables assembled from several maps: what a loop over the table meets is what the
release's Python would put in it. `collections.ChainMap(a, b)` looks keys up in `a` first
(collections docs); `a | b` and `{**a, **b}` let `b` win; a helper that regroups entries in a
`defaultdict(list)` by hook type returns each group filled; an entry put in only `if
Version(sglang.__version__) < Version("0.10.0")` is in the table on 0.9.0 and absent on 0.10.0,
so its target (gone on 0.10.0) breaks nothing there (issue 34, the fifteenth held-out set)."""

from __future__ import annotations

import pytest
from kinds_support import check, plugin, pyproject, upstream_pair

GONE = "sglang.srt.layers.torchao_utils.apply_torchao_config_to_model"  # in 0.9.0, not in 0.10.0
FORWARD = "sglang.srt.layers.sampler.Sampler.forward"

HEAD = """
import collections

import sglang
from packaging.version import Version

from sglang.srt.plugins.hook_registry import HookRegistry, HookType


def _forward(original_fn, self, logits, *args, **kwargs):
    return original_fn(self, logits, *args, **kwargs)


def _skip(original_fn, model, *args, **kwargs):
    return model


CORE = {"sglang.srt.layers.sampler.Sampler.forward": (HookType.AROUND, _forward)}
LEGACY = {}
if Version(sglang.__version__) < Version("0.10.0"):
    LEGACY["sglang.srt.layers.torchao_utils.apply_torchao_config_to_model"] = (HookType.AROUND, _skip)
"""

TABLES = {
    "chain_map": """
TABLE = collections.ChainMap(LEGACY, CORE)


def register():
    for target, (kind, fn) in TABLE.items():
        HookRegistry.register(target, fn, kind)
""",
    "union_regrouped_by_kind": """
def _by_kind():
    grouped = collections.defaultdict(list)
    for target, (kind, fn) in (CORE | LEGACY).items():
        grouped[kind].append((target, fn))
    return grouped


def register():
    for kind, entries in _by_kind().items():
        for target, fn in entries:
            HookRegistry.register(target, fn, kind)
""",
    "spread_merge_setdefault": """
def _by_kind():
    grouped = {}
    for target, (kind, fn) in {**CORE, **LEGACY}.items():
        grouped.setdefault(kind, []).append((target, fn))
    return grouped


def register():
    for kind, entries in _by_kind().items():
        for target, fn in entries:
            HookRegistry.register(target, fn, kind)
""",
}


@pytest.fixture(scope="module")
def upstreams(tmp_path_factory):
    return upstream_pair(tmp_path_factory)


@pytest.mark.parametrize("spelling", sorted(TABLES))
def test_a_merged_hook_table_holds_what_the_release_puts_in_it(upstreams, tmp_path, spelling):
    old, new = upstreams
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"tb": "tb:register"}),
        "tb/__init__.py": HEAD + TABLES[spelling],
    })
    code, doc = check(root, old)
    hooks = {f["target"]: f for f in doc["findings"] if f["kind"] == "hook"}
    assert set(hooks) == {FORWARD, GONE}, doc["findings"]
    assert code == 0 and all(h["status"] == "ok" for h in hooks.values()), hooks
    code, doc = check(root, new)
    hooks = {f["target"]: f for f in doc["findings"] if f["kind"] == "hook"}
    assert set(hooks) == {FORWARD}, doc["findings"]  # the guarded entry is not in the table on 0.10.0
    assert code == 0 and hooks[FORWARD]["status"] == "ok", hooks


# hooks registered in the `__init__` of an object the plugin builds, from what the construction
# passes: positionally, by keyword, or through a plugin subclass with no `__init__` of its own
CONSTRUCTIONS = {
    "positional": ("_Installer", "_Installer(SPECS)"),
    "keyword": ("_Installer", "_Installer(specs=SPECS)"),
    "subclass_without_init": ("_Sub", "_Sub(SPECS)"),
}


@pytest.mark.parametrize("spelling", sorted(CONSTRUCTIONS))
def test_hooks_an_init_registers_are_those_its_constructions_pass(upstreams, tmp_path, spelling):
    _, new = upstreams
    _, built = CONSTRUCTIONS[spelling]
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"tb": "tb:register"}),
        "tb/__init__.py": HEAD + f"""
SPECS = [("forward", HookType.AROUND, _forward), ("apply_torchao_config_to_model", HookType.AROUND, _skip)]


class _Installer:
    owner = "sglang.srt.layers.sampler.Sampler"

    def __init__(self, specs):
        self.done = []
        for attr, kind, fn in specs:
            target = ".".join((self.owner, attr))
            HookRegistry.register(target, fn, kind)
            self.done.append(target)


class _Sub(_Installer):
    pass


def register():
    return {built}
""",
    })
    code, doc = check(root, new)
    hooks = {f["target"]: f for f in doc["findings"] if f["kind"] == "hook"}
    assert set(hooks) == {FORWARD, "sglang.srt.layers.sampler.Sampler.apply_torchao_config_to_model"}, doc["findings"]
    assert hooks[FORWARD]["status"] == "ok" and hooks["sglang.srt.layers.sampler.Sampler.apply_torchao_config_to_model"]["breaking"]
    assert code == 1


# an object keeping HookRegistry on itself (`self.registry.register(…)`), registering through a
# helper method per call; a call under `if hasattr(Sampler, "…")` registers only where that holds
HOLDERS = {
    "init_default_parameter": "def __init__(self, registry=HookRegistry):\n        self.registry = registry\n",
    "class_attribute": "registry = HookRegistry\n",
    "init_assignment": "def __init__(self):\n        self.registry = HookRegistry\n",
}


@pytest.mark.parametrize("spelling", sorted(HOLDERS))
def test_hooks_registered_through_a_registry_kept_on_self_under_the_callers_guard(upstreams, tmp_path, spelling):
    _, new = upstreams
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"tb": "tb:register"}),
        "tb/__init__.py": HEAD + f"""

class SamplerPatches:
    target_cls = "sglang.srt.layers.sampler.Sampler"
    {HOLDERS[spelling]}
    def _on(self, method, fn, kind=HookType.AROUND):
        self.registry.register(f"{{self.target_cls}}.{{method}}", fn, kind)

    def install(self):
        from sglang.srt.layers.sampler import Sampler

        self._on("forward", _forward)
        if hasattr(Sampler, "_legacy_mask"):
            self._on("_legacy_mask", _skip)


def register():
    SamplerPatches().install()
""",
    })
    code, doc = check(root, new)
    hooks = {f["target"]: f for f in doc["findings"] if f["kind"] == "hook"}
    assert set(hooks) == {FORWARD, "sglang.srt.layers.sampler.Sampler._legacy_mask"}, doc["findings"]
    guarded = hooks["sglang.srt.layers.sampler.Sampler._legacy_mask"]
    assert hooks[FORWARD]["status"] == "ok" and guarded["status"] == "missing" and not guarded["breaking"], guarded
    assert guarded["guard"]["outcome"] == "skipped" and code == 0
