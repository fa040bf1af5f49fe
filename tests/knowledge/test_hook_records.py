"""Hook specs kept in records and objects (issue 34, the fifteenth held-out set): a dataclass
field `__post_init__` computes (`object.__setattr__(self, "target", …)` in a frozen one,
`self.target = …` in a plain one), a default written where the class is (not where it is
built), an installer object kept in a module global and called later (its `__call__` runs
with what its construction kept), and a `functools.partial` held in a record field, a table
value or a loop variable: each judged as the wrapper calls it (functools docs: the bound
arguments are taken away)."""

from __future__ import annotations

import pytest
from kinds_support import check, plugin, pyproject, upstream_pair

FORWARD = "sglang.srt.layers.sampler.Sampler.forward"
PARAMS = {"fits": "original_fn, self, logits, *args, cfg, **kwargs", "narrow": "original_fn, self, *, cfg"}

SPEC_CLASSES = {
    "frozen_setattr": """
@dataclass(frozen=True)
class HookSpec:
    owner: str
    attr: str
    hook: object
    kind: HookType = HookType.AROUND
    target: str = field(init=False)

    def __post_init__(self):
        object.__setattr__(self, "target", f"{self.owner}.{self.attr}")
""",
    "plain_self_assign": """
@dataclass
class HookSpec:
    owner: str
    attr: str
    hook: object
    kind: HookType = field(default=HookType.AROUND)
    target: str = field(init=False, default="")

    def __post_init__(self):
        self.target = ".".join((self.owner, self.attr))
""",
    "named_in_post_init_default_kind": """
@dataclass(frozen=True)
class HookSpec:
    owner: str
    attr: str
    hook: object
    target: str = field(init=False)
    kind: HookType = HookType.AROUND

    def __post_init__(self):
        \"\"\"The registry's dotted form.\"\"\"
        object.__setattr__(self, "target", self.owner + "." + self.attr)
""",
}

# how the installer holding the specs is reached
INSTALLERS = {
    "global_called_in_register": ("install = _Installer(SPECS)\n", "from tb.hooks import install\n\n\ndef register():\n    install()\n"),
    "module_called_in_register": ("install = _Installer(SPECS)\n", "from tb import hooks\n\n\ndef register():\n    hooks.install()\n"),
    "built_and_called_in_register": ("", "from tb.hooks import SPECS, _Installer\n\n\ndef register():\n    _Installer(SPECS)()\n"),
}


@pytest.fixture(scope="module")
def upstreams(tmp_path_factory):
    return upstream_pair(tmp_path_factory)


def _plugin(tmp_path, spec_class: str, installer: tuple[str, str], fit: str, name: str):
    made, entry = installer
    return plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"tb": "tb:register"}),
        "tb/__init__.py": entry,
        # the record class in its own module: its default kind folds there, where HookType is imported
        "tb/specs.py": "from dataclasses import dataclass, field\n\nfrom sglang.srt.plugins.hook_registry import HookType\n\n" + spec_class,
        "tb/hooks.py": f"""import functools

from sglang.srt.plugins.hook_registry import HookRegistry

from tb.specs import HookSpec


def _impl({PARAMS[fit]}):
    return original_fn(self, logits)


SPECS = (HookSpec("sglang.srt.layers.sampler.Sampler", "forward", functools.partial(_impl, cfg=1)),)


class _Installer:
    def __init__(self, specs):
        self.specs = specs

    def __call__(self):
        for spec in self.specs:
            HookRegistry.register(spec.target, spec.hook, spec.kind)


{made}""",
    }, name=name)


@pytest.mark.parametrize("fit", sorted(PARAMS))
@pytest.mark.parametrize("spelling", sorted(SPEC_CLASSES))
def test_a_target_post_init_computes_is_judged_with_the_partial_the_record_holds(upstreams, tmp_path, spelling, fit):
    old, _ = upstreams
    code, doc = check(_plugin(tmp_path, SPEC_CLASSES[spelling], INSTALLERS["global_called_in_register"], fit, f"{spelling}-{fit}"), old)
    hooks = [f for f in doc["findings"] if f["kind"] == "hook"]
    assert [(h["target"], h["hook_type"]) for h in hooks] == [(FORWARD, "AROUND")], doc["findings"]
    if fit == "fits":
        assert hooks[0]["status"] == "ok" and code == 0, hooks
    else:
        assert hooks[0]["status"] == "signature_changed" and hooks[0]["breaking"] and code == 1, hooks


@pytest.mark.parametrize("spelling", sorted(INSTALLERS))
def test_an_installer_object_runs_with_what_its_construction_kept(upstreams, tmp_path, spelling):
    old, _ = upstreams
    code, doc = check(_plugin(tmp_path, SPEC_CLASSES["frozen_setattr"], INSTALLERS[spelling], "narrow", spelling), old)
    hooks = [f for f in doc["findings"] if f["kind"] == "hook"]
    assert [h["target"] for h in hooks] == [FORWARD], doc["findings"]
    assert hooks[0]["status"] == "signature_changed" and hooks[0]["breaking"] and code == 1, hooks
