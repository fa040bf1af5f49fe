"""Plugin-private platform methods: a method on the plugin's platform class that no upstream
base declares is the plugin's own extension point (status `extension`, never breaking) when
the plugin calls it itself or the release it declares never had it either; `not_on_base` stays
for methods upstream used to call and for close names of a base method (issue 18 kind 3)."""

from __future__ import annotations

import json

import pytest
from kinds_support import IFACE, check, plugin, pyproject, upstream_pair
from knowledge_support import by_target, harness, harness_json

from harness.knowledge.model.findings import BREAKING, Status


@pytest.fixture(scope="module")
def upstreams(tmp_path_factory):
    # 0.10.0 drops get_mha_kv_pool_cls and adds get_kv_pool_cls
    return upstream_pair(tmp_path_factory, new={
        "sglang/srt/platforms/interface.py": """
            from sglang.srt.platforms.device_mixin import DeviceMixin

            class SRTPlatform(DeviceMixin):
                def get_default_attention_backend(self) -> str:
                    raise NotImplementedError

                def get_kv_pool_cls(self, *, kind) -> type:
                    raise NotImplementedError

                def init_backend(self) -> None:
                    pass
            """,
    })


def platform_plugin(tmp_path):
    return plugin(tmp_path, {
        "pyproject.toml": pyproject(platforms={"priv": "priv:activate"}, plugins={"priv_hooks": "priv.hooks:register"}),
        "priv/__init__.py": """
            def activate():
                return "priv.platform:PrivPlatform"
            """,
        "priv/platform.py": """
            from sglang.srt.platforms.interface import SRTPlatform


            class PrivPlatform(SRTPlatform):
                def get_default_attention_backend(self) -> str:
                    return "torch_native"

                def get_sampler_chunk_size(self) -> int:
                    return 4096

                def uses_paged_cache(self) -> bool:
                    return self.get_sampler_chunk_size() > 0

                def get_mha_kv_pool_cls(self):
                    return object

                def get_default_attention_backnd(self) -> str:
                    return "typo"
            """,
        "priv/hooks.py": """
            from sglang.srt.platforms import current_platform
            from sglang.srt.plugins.hook_registry import HookRegistry, HookType


            def _chunked(original_fn, self, logits, *args, **kwargs):
                self.chunk = current_platform.get_sampler_chunk_size()
                if getattr(current_platform, "uses_paged_cache")():
                    pass
                return original_fn(self, logits, *args, **kwargs)


            def register():
                HookRegistry.register("sglang.srt.layers.sampler.Sampler.forward", _chunked, HookType.AROUND)
            """,
    })


def test_methods_the_plugin_calls_itself_are_extensions(upstreams, tmp_path):
    old, new = upstreams
    root = platform_plugin(tmp_path)
    code, doc = check(root, old)
    findings = by_target(doc["findings"])
    for name in ("get_sampler_chunk_size", "uses_paged_cache"):
        finding = findings[f"{IFACE}.{name}"]
        assert finding["status"] == Status.extension.value and finding["breaking"] is False, finding
        assert "priv/hooks.py:" in finding["detail"] or "priv/platform.py:" in finding["detail"], finding
    # a close name of a base method is a typo or a rename: still not_on_base, with the successor
    typo = findings[f"{IFACE}.get_default_attention_backnd"]
    assert typo["status"] == Status.not_on_base.value and typo["breaking"]
    assert typo["successor"] == f"{IFACE}.get_default_attention_backend"
    assert code == 1
    # on 0.10.0 get_mha_kv_pool_cls left the base, which upstream used to call (a --baseline tells)
    code, doc = check(root, new, "--baseline", old)
    findings = by_target(doc["findings"])
    assert findings[f"{IFACE}.get_mha_kv_pool_cls"]["status"] == Status.not_on_base.value
    assert findings[f"{IFACE}.get_mha_kv_pool_cls"]["breaking"]
    assert findings[f"{IFACE}.get_sampler_chunk_size"]["status"] == Status.extension.value
    code, doc = harness_json("diff", "--from", old, "--to", new, "--plugin", str(root), "--out", str(tmp_path / "diff"))
    findings = by_target(doc["findings"])
    assert findings[f"{IFACE}.get_mha_kv_pool_cls"]["status"] == Status.not_on_base.value
    assert findings.get(f"{IFACE}.get_sampler_chunk_size", {"status": "extension"})["status"] == Status.extension.value


def test_a_method_the_declared_release_never_had_is_a_dead_override_never_red(upstreams, tmp_path):
    old, new = upstreams
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(platforms={"own": "own:activate"}),
        "own/__init__.py": """
            from sglang.srt.platforms.interface import SRTPlatform


            class OwnPlatform(SRTPlatform):
                def get_default_attention_backend(self) -> str:
                    return "torch_native"

                def describe_device_topology(self) -> str:
                    return "ring"


            def activate():
                return "own:OwnPlatform"
            """,
    })
    code, doc = check(root, new, "--baseline", old)
    finding = by_target(doc["findings"])[f"{IFACE}.describe_device_topology"]
    # upstream did not call it on the release the plugin declares either: nothing is lost now
    assert finding["status"] == Status.dead_override.value and not finding["breaking"]
    assert code == 0
    # on its own base (the baseline is the release checked) the same
    code, doc = check(root, new, "--baseline", new)
    assert by_target(doc["findings"])[f"{IFACE}.describe_device_topology"]["status"] == Status.dead_override.value
    assert code == 0 and doc["baseline"] == doc["upstream"]
    # without a baseline nothing says upstream never called it: the old verdict stands
    code, doc = check(root, new, "--baseline", "none")
    assert by_target(doc["findings"])[f"{IFACE}.describe_device_topology"]["status"] == Status.not_on_base.value


def test_extension_is_never_a_breaking_status():
    assert Status.extension not in BREAKING


# `current_platform` is the instance of the class activate() names (sglang/srt/platforms/__init__.py:
# 163-172, 0.5.23): a member read on it anywhere in the plugin is judged as `self.<member>` in that
# class, however the plugin reaches the instance; a name nothing defines is missing (AttributeError).
INSTANCE_READS = {
    "from_import": ("from sglang.srt.platforms import current_platform\n\n\n"
                    "def size():\n    return current_platform.{name}()\n"),
    "module_alias": ("import sglang.srt.platforms as platforms\n\n\n"
                     "def size():\n    return platforms.current_platform.{name}()\n"),
    "renamed": ("from sglang.srt.platforms import current_platform as plat\n\n\n"
                "def size():\n    chunk = plat.{name}\n    return chunk()\n"),
    "constant_getattr": ("from sglang.srt import platforms\n\nMETHOD = '{name}'\n\n\n"
                         "def size():\n    return getattr(platforms.current_platform, METHOD)()\n"),
    # typing.cast hands back what it is given (F20 variant o2): a Protocol, a string annotation, the module's cast
    "cast_to_protocol": ("from typing import Protocol, cast\n\nfrom sglang.srt.platforms import current_platform\n\n\n"
                         "class Sized(Protocol):\n    def {name}(self) -> int: ...\n\n\n"
                         "def size():\n    platform = cast(Sized, current_platform)\n    return platform.{name}()\n"),
    "cast_string_type": ("import typing\n\nimport sglang.srt.platforms as platforms\n\n\n"
                         "def size():\n    return typing.cast('Sized', platforms.current_platform).{name}()\n"),
    "cast_aliased_module": ("import typing as t\n\nfrom sglang.srt.platforms import current_platform\n\n\n"
                            "def size():\n    chunk = t.cast(object, current_platform).{name}\n    return chunk()\n"),
    # the instance kept on self by an object the plugin builds with it (fourteenth set F20-n2):
    # passed by position, by keyword, from a local
    "held_on_self": ("from sglang.srt.platforms import current_platform\n\n\nclass Reader:\n    def __init__(self, platform):\n"
                     "        self.platform = platform\n\n    def size(self):\n        return self.platform.{name}()\n\n\n"
                     "def size():\n    return Reader(current_platform).size()\n"),
    "held_by_keyword": ("import sglang.srt.platforms as platforms\n\n\nclass Reader:\n    def __init__(self, *, platform=None):\n"
                        "        self.platform = platform\n\n    def size(self):\n        chunk = self.platform.{name}\n        return chunk()\n\n\n"
                        "def size():\n    return Reader(platform=platforms.current_platform).size()\n"),
    "held_from_a_local": ("class Reader:\n    def __init__(self, platform, rows=1):\n        self.platform, self.rows = platform, rows\n\n"
                          "    def size(self):\n        return self.platform.{name}() * self.rows\n\n\n"
                          "def size():\n    from sglang.srt.platforms import current_platform\n\n    plat = current_platform\n"
                          "    return Reader(plat, 2).size()\n"),
}


def instance_plugin(tmp_path, name, reader, platforms=("Priv",)):
    classes = "".join(f"""

class {cls}Platform(SRTPlatform):
    def __init__(self):
        self.held = self.get_sampler_chunk_size() + self.grafted()

    def get_sampler_chunk_size(self) -> int:
        return 4096
""" for cls in platforms)
    # (with two, a choice made on the machine: an environment variable)
    choice = " if os.environ.get('PRIV_DEVICE') == 'priv' else ".join(f'"priv.platform:{cls}Platform"' for cls in platforms)
    return plugin(tmp_path, {
        "pyproject.toml": pyproject(platforms={"priv": "priv:activate"}, plugins={"priv_use": "priv.use:register"}),
        "priv/__init__.py": f"import os\n\n\ndef activate():\n    return {choice}\n",
        "priv/platform.py": "from sglang.srt.platforms.interface import SRTPlatform\n" + classes
                            + "\n\nsetattr(PrivPlatform, 'grafted', lambda self: 1)\nPrivPlatform.assigned = staticmethod(len)\n",
        "priv/use.py": reader.format(name=name) + (
            "\n\ndef register():\n    from sglang.srt.platforms import current_platform\n"
            "    current_platform.written = 2\n    setattr(current_platform, 'set_by_name', 3)\n    return size\n"),
    }, name=f"{name}-{len(platforms)}")


@pytest.mark.parametrize("spelling", sorted(INSTANCE_READS))
def test_a_member_read_on_the_platform_instance_is_judged_on_the_active_platform_class(upstreams, tmp_path, spelling):
    old, _ = upstreams
    reader = INSTANCE_READS[spelling]
    code, doc = check(instance_plugin(tmp_path, "get_sampler_chunk_sz", reader), old)
    typo = [f for f in doc["findings"] if f["target"] == f"{IFACE}.get_sampler_chunk_sz"]
    assert [(f["status"], f["breaking"], f["file"]) for f in typo] == [(Status.missing.value, True, "priv/use.py")], doc["findings"]
    assert "PrivPlatform" in typo[0]["detail"] and "AttributeError" in typo[0]["detail"]
    assert code == 1
    # what the plugin class, upstream's base, the instance's __init__, a write on the instance or one on
    # the class after its body (setattr, assignment: the module runs before the instance is made) defines is there
    for name in ("get_sampler_chunk_size", "init_backend", "held", "written", "set_by_name", "grafted", "assigned"):
        code, doc = check(instance_plugin(tmp_path, name, reader), old)
        assert not [f for f in doc["findings"] if f["breaking"]], (name, doc["findings"])
        assert code == 0, name
    # two platform classes: which one the instance is depends on the machine; nothing is judged
    code, doc = check(instance_plugin(tmp_path, "get_sampler_chunk_sz", reader, platforms=("Priv", "Other")), old)
    assert not [f for f in doc["findings"] if f["target"] == f"{IFACE}.get_sampler_chunk_sz"], doc["findings"]


def test_an_object_kept_on_self_that_is_not_the_platform_is_not_judged_as_it(upstreams, tmp_path):
    # the negative of held_on_self: one construction passes another object, so `self.platform` is
    # not always the engine's platform instance
    old, _ = upstreams
    reader = INSTANCE_READS["held_on_self"].replace("return Reader(current_platform).size()",
                                                    "Reader(object()).size()\n    return Reader(current_platform).size()")
    code, doc = check(instance_plugin(tmp_path, "get_sampler_chunk_sz", reader), old)
    assert not [f for f in doc["findings"] if f["target"] == f"{IFACE}.get_sampler_chunk_sz"] and code == 0, doc["findings"]


@pytest.mark.parametrize("rebound", [False, True], ids=["activated_class", "instance_set_by_the_plugin"])
@pytest.mark.parametrize("spelling", sorted(INSTANCE_READS))
def test_a_method_only_a_subclass_of_the_activated_class_defines_is_missing_on_the_instance(upstreams, tmp_path, spelling, rebound):
    # F20 variant r2: the engine makes current_platform from exactly the class activate() names
    old, _ = upstreams
    root = instance_plugin(tmp_path, "tuned_rows", INSTANCE_READS[spelling])
    platform = root / "priv" / "platform.py"
    platform.write_text(platform.read_text() + "\n\nclass TunedPlatform(PrivPlatform):\n    def tuned_rows(self):\n        return 8\n")
    if rebound:  # the plugin puts its own object there: it may be the subclass
        use = root / "priv" / "use.py"
        use.write_text(use.read_text() + "\n\ndef install():\n    import sglang.srt.platforms as platforms\n"
                       "    from priv.platform import TunedPlatform\n    platforms.current_platform = TunedPlatform()\n")
    code, doc = check(root, old)
    read = [f for f in doc["findings"] if f["target"] == f"{IFACE}.tuned_rows" and f["kind"] == "subclass"]
    if rebound:
        assert [f["status"] for f in read] == [Status.unknown.value] and code != 1, doc["findings"]
    else:
        assert [(f["status"], f["breaking"]) for f in read] == [(Status.missing.value, True)] and code == 1, doc["findings"]
        assert "AttributeError" in read[0]["detail"], read[0]


GRAFTS = {
    "assignment": "PrivPlatform.get_mha_kv_pool_cls = _pool\n",
    "setattr": "setattr(PrivPlatform, 'get_mha_kv_pool_cls', _pool)\n",
    "setattr_constant": "NAME = 'get_mha_kv_pool_cls'\nsetattr(PrivPlatform, NAME, _pool)\n",
    "in_activate": None,  # the setattr inside activate(), before it names the class
}


@pytest.mark.parametrize("spelling", sorted(GRAFTS))
def test_a_method_set_on_the_platform_class_after_its_body_is_an_override(upstreams, tmp_path, spelling):
    old, new = upstreams
    graft = GRAFTS[spelling]
    activate = ("def activate():\n    from priv.platform import PrivPlatform, _pool\n"
                "    setattr(PrivPlatform, 'get_mha_kv_pool_cls', _pool)\n    return 'priv.platform:PrivPlatform'\n"
                if graft is None else "def activate():\n    return 'priv.platform:PrivPlatform'\n")
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(platforms={"priv": "priv:activate"}),
        "priv/__init__.py": activate,
        "priv/platform.py": ("from sglang.srt.platforms.interface import SRTPlatform\n\n\n"
                             "class PrivPlatform(SRTPlatform):\n    def init_backend(self) -> None:\n        pass\n\n\n"
                             "def _pool(self):\n    return object\n\n\n" + (graft or "")),
    }, name=spelling)
    _assert_an_override_of_the_dropped_pool(root, old, new)


def _assert_an_override_of_the_dropped_pool(root, old, new):
    """get_mha_kv_pool_cls, as the plugin's class has it, is an override: ok on 0.9.0; 0.10.0
    drops it from the base, so upstream no longer calls it (not_on_base, breaking)."""
    code, doc = check(root, old)
    assert by_target(doc["findings"])[f"{IFACE}.get_mha_kv_pool_cls"]["status"] == Status.ok.value, doc["findings"]
    assert code == 0
    code, doc = check(root, new, "--baseline", old)
    finding = by_target(doc["findings"])[f"{IFACE}.get_mha_kv_pool_cls"]
    assert finding["status"] == Status.not_on_base.value and finding["breaking"], finding
    assert code == 1


PARTIAL_METHODS = {
    # (the override, whether it takes get_default_attention_backend(self)'s calls)
    "positional": ("get_default_attention_backend = functools.partialmethod(_backend, 'torch_native')", "def _backend(self, name):", True),
    "keyword": ("get_default_attention_backend = functools.partialmethod(_backend, name='torch_native')", "def _backend(self, name):", True),
    "imported_name": ("get_default_attention_backend = partialmethod(_backend, 'torch_native')", "def _backend(self, name):", True),
    "leaves_one_required": ("get_default_attention_backend = functools.partialmethod(_backend, 'torch_native')", "def _backend(self, name, extra):", False),
}


@pytest.mark.parametrize("spelling", sorted(PARTIAL_METHODS))
def test_a_partialmethod_override_is_judged_with_what_it_leaves(upstreams, tmp_path, spelling):
    old, _ = upstreams
    override, helper, fits = PARTIAL_METHODS[spelling]
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(platforms={"pm": "pm:activate"}),
        "pm/__init__.py": ("import functools\nfrom functools import partialmethod\n\n"
                           "from sglang.srt.platforms.interface import SRTPlatform\n\n\n"
                           f"{helper}\n    return name\n\n\nclass PmPlatform(SRTPlatform):\n    {override}\n\n\n"
                           "def activate():\n    return 'pm:PmPlatform'\n"),
    }, name=spelling)
    code, doc = check(root, old)
    finding = by_target(doc["findings"])[f"{IFACE}.get_default_attention_backend"]
    if fits:
        assert finding["status"] == Status.ok.value and code == 0, finding
    else:
        assert finding["status"] == Status.signature_changed.value and "extra" in finding["detail"], finding


# a platform class the entry point does not return, no base of the one it does, and named nowhere
# else in the plugin is never loaded: its overrides are no platform's (F02 variant z2). Named
# somewhere (a string, a reference), it may be: judged as the platform
UNLOADED = {
    "left_beside_it": ("class OldPlatform(SRTPlatform):\n    def get_mha_kv_pool_cls(self):\n        return None\n", False),
    "unused_subclass": ("class DebugPlatform(XPlatform):\n    def get_mha_kv_pool_cls(self):\n        return None\n", False),
    "in_another_module": ("from p.legacy import LegacyPlatform  # noqa: F401\n", False),
    "named_by_a_string": ("class OldPlatform(SRTPlatform):\n    def get_mha_kv_pool_cls(self):\n        return None\n\n\n"
                          "FALLBACK = 'p.platform.OldPlatform'\n", True),
    "named_by_reference": ("class OldPlatform(SRTPlatform):\n    def get_mha_kv_pool_cls(self):\n        return None\n\n\n"
                           "PLATFORMS = {'old': OldPlatform}\n", True),
}


@pytest.mark.parametrize("spelling", sorted(UNLOADED))
def test_a_platform_class_nothing_loads_is_not_the_platform(upstreams, tmp_path, spelling):
    old, new = upstreams
    extra, loaded = UNLOADED[spelling]
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(platforms={"x": "p:activate"}),
        "p/__init__.py": "def activate():\n    return 'p.platform.XPlatform'\n",
        "p/legacy.py": "from sglang.srt.platforms.interface import SRTPlatform\n\n\n"
                       "class LegacyPlatform(SRTPlatform):\n    def get_mha_kv_pool_cls(self):\n        return None\n",
        "p/platform.py": "from sglang.srt.platforms.interface import SRTPlatform\n\n\n"
                         "class XPlatform(SRTPlatform):\n    def get_default_attention_backend(self):\n        return 'torch_native'\n\n\n" + extra,
    })
    code, doc = check(root, new, "--baseline", old)
    dropped = [f for f in doc["findings"] if f["target"] == f"{IFACE}.get_mha_kv_pool_cls" and f["breaking"]]
    assert bool(dropped) is loaded and code == (1 if loaded else 0), doc["findings"]
    if not loaded:  # reported as dead code, by the table's `uncalled` row
        dead = [f for f in doc["findings"] if f["target"] == f"{IFACE}.get_mha_kv_pool_cls" and f["live"]]
        assert dead and all(f["decided_by"] == "uncalled" and "is never loaded" in f["detail"] for f in dead), dead


# activate() names the platform by a name the module binds to a class (set 21 F02-e2): the class it
# holds is the one loaded (pkgutil.resolve_name reads the attribute), the other generation is dead
ALIASED = {
    "assignment": ("p.platform.XPlatform", "XPlatform = XPlatformV2\n"),
    "annotated_assignment": ("p.platform:XPlatform", "XPlatform: type[SRTPlatform] = XPlatformV2\n"),
    "package_reexport": ("p.XPlatform", ""),
    "names_the_class_itself": ("p.platform.XPlatformV2", ""),
    # answered by the package's PEP 562 __getattr__ (set 22 F02-d1): from a table, or by name
    "lazy_getattr_table": ("p.XPlatform", ""),
    "lazy_getattr_by_name": ("p:XPlatform", ""),
}
LAZY = {
    "lazy_getattr_table": ("import importlib\n\nMODULE_ATTRS = {'XPlatform': '.platform:XPlatformV2'}\n\n\ndef __getattr__(name):\n"
                           "    if name in MODULE_ATTRS:\n        module_name, attr = MODULE_ATTRS[name].split(':')\n"
                           "        return getattr(importlib.import_module(module_name, __package__), attr)\n"
                           "    raise AttributeError(name)\n"),
    "lazy_getattr_by_name": ("def __getattr__(name):\n    if name == 'XPlatform':\n        from p.platform import XPlatformV2\n\n"
                             "        return XPlatformV2\n    raise AttributeError(name)\n"),
}


@pytest.mark.parametrize("spelling", sorted(ALIASED))
def test_activate_naming_an_alias_loads_the_class_it_holds(upstreams, tmp_path, spelling):
    old, new = upstreams
    returned, alias = ALIASED[spelling]
    reexport = "from p.platform import XPlatformV2 as XPlatform  # noqa: F401\n" if spelling == "package_reexport" else LAZY.get(spelling, "")
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(platforms={"x": "p:activate"}),
        "p/__init__.py": f"{reexport}\n\ndef activate():\n    return {returned!r}\n",
        "p/platform.py": "from sglang.srt.platforms.interface import SRTPlatform\n\n\n"
                         "class XPlatformV1(SRTPlatform):\n    def get_mha_kv_pool_cls(self):\n        return None\n\n\n"
                         "class XPlatformV2(SRTPlatform):\n    def get_default_attention_backend(self):\n        return 'torch_native'\n\n"
                         "    def get_mha_kv_pool_cls(self):\n        return object\n\n\n" + alias,
    })
    code, doc = check(root, new, "--baseline", old)
    dropped = {f["line"]: f for f in doc["findings"] if f["target"] == f"{IFACE}.get_mha_kv_pool_cls"}
    v1, v2 = dropped[5], dropped[13]
    assert v2["breaking"] and code == 1, doc["findings"]
    assert not v1["breaking"] and v1["decided_by"] == "uncalled" and "is never loaded" in v1["detail"], v1


# activate bound by a plugin decorator (twenty-third set F02-c1): the name holds the closure the
# decorator returns, which returns the path (a factory's argument, a constant, an f-string of one);
# negatives: a closure returning None, a decorator handing the def back unchanged (the def's own return)
DECORATED = {
    "factory_argument": ("platform_entry('p.platform.XPlatformV2')", True),
    "plain_decorator": ("as_entry", True),
    "factory_fstring": ("entry_in('platform')", True),
    "closure_returning_none": ("disabled", False),
    "hands_the_def_back": ("registered", False),
}
ENTRY_DECORATORS = """import functools

_SEEN = []


def platform_entry(qualname):
    def decorate(probe):
        @functools.wraps(probe)
        def activate():
            return qualname if probe() else None
        return activate
    return decorate


def as_entry(probe):
    def activate():
        return "p.platform:XPlatformV2"
    return activate


def entry_in(module):
    def decorate(probe):
        def activate():
            return f"p.{module}.XPlatformV2"
        return activate
    return decorate


def disabled(probe):
    def activate():
        return None
    return activate


def registered(probe):
    _SEEN.append(probe)
    return probe
"""


@pytest.mark.parametrize("spelling", sorted(DECORATED))
def test_activate_bound_by_a_plugin_decorator_returns_what_its_closure_returns(upstreams, tmp_path, spelling):
    old, new = upstreams
    decorator, loads = DECORATED[spelling]
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(platforms={"x": "p:activate"}),
        "p/entries.py": ENTRY_DECORATORS,
        "p/__init__.py": f"from p.entries import as_entry, disabled, entry_in, platform_entry, registered  # noqa: F401\n\n\n"
                         f"@{decorator}\ndef activate():\n    return True\n",
        "p/platform.py": "from sglang.srt.platforms.interface import SRTPlatform\n\n\n"
                         "class XPlatformV2(SRTPlatform):\n    def get_default_attention_backend(self):\n        return 'torch_native'\n\n"
                         "    def get_mha_kv_pool_cls(self):\n        return object\n",
    })
    proc = harness("check", "--plugin", str(root), "--upstream", new, "--baseline", old, "--json")
    findings = json.loads(proc.stdout)["findings"] if proc.stdout.strip() else []
    dropped = [f for f in findings if f["target"] == f"{IFACE}.get_mha_kv_pool_cls"]
    if loads:
        assert [f["breaking"] for f in dropped] == [True] and proc.returncode == 1, findings
    else:  # the class is never loaded: nothing of it can fail
        assert not any(f["breaking"] for f in dropped) and proc.returncode != 1, findings


# a dual-support platform on the older release (F10 variant t2): the newer API's method hands
# over to the older one, which this release declares and calls -- nothing is lost, nothing red;
# a newer-API method with a body of its own stays not_on_base when nothing says more
DUAL = {
    "self_call": ("def get_kv_pool_cls(self, *, kind):\n        return self.get_mha_kv_pool_cls() if kind == 'mha' else None\n", False),
    "type_self_call": ("def get_kv_pool_cls(self, *, kind):\n        return type(self).get_mha_kv_pool_cls(self)\n", False),
    "classmethod_call": ("@classmethod\n    def get_kv_pool_cls(cls, *, kind):\n        return cls.get_mha_kv_pool_cls(cls)\n", False),
    "own_body": ("def get_kv_pool_cls(self, *, kind):\n        return object\n", True),
    # the older method looked up by a name built from the kind (F10 variant o2): `%`, an f-string, str.format
    "getattr_percent_name": ("def get_kv_pool_cls(self, kind='mha'):\n        hook = getattr(self, 'get_%s_kv_pool_cls' % kind, None)\n"
                             "        return hook() if hook is not None else None\n", False),
    "getattr_fstring_name": ("def get_kv_pool_cls(self, *, kind):\n        return getattr(self, f'get_{kind}_kv_pool_cls')()\n", False),
    "getattr_format_name": ("def get_kv_pool_cls(self, *, kind):\n        return getattr(self, 'get_{}_kv_pool_cls'.format(kind))()\n", False),
    # a name of another shape reaches no method the older release calls
    "getattr_other_shape": ("def get_kv_pool_cls(self, *, kind):\n        return getattr(self, f'make_{kind}_pool')()\n", True),
}


@pytest.mark.parametrize("spelling", sorted(DUAL))
def test_a_newer_api_method_handing_over_to_the_older_one_is_not_red(upstreams, tmp_path, spelling):
    old, _ = upstreams
    method, breaks = DUAL[spelling]
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(platforms={"dual": "dual:activate"}),
        "dual/__init__.py": "def activate():\n    return 'dual.platform.DualPlatform'\n",
        "dual/platform.py": ("from sglang.srt.platforms.interface import SRTPlatform\n\n\nclass DualPlatform(SRTPlatform):\n"
                             "    def get_mha_kv_pool_cls(self):\n        return object\n\n    " + method),
    })
    code, doc = check(root, old)  # no declared release: no baseline
    finding = by_target(doc["findings"])[f"{IFACE}.get_kv_pool_cls"]
    if breaks:
        assert finding["status"] == Status.not_on_base.value and finding["breaking"] and code == 1
    else:
        assert finding["status"] == Status.dead_override.value and not finding["breaking"], finding
        assert "get_mha_kv_pool_cls" in finding["detail"] and code == 0


# a class decorator of the plugin's that sets the method on the class it gets (vLLM variant s2):
# assigned, by setattr, as a classmethod of a nested function, from another module
DECORATORS = {
    "assignment": ("def caps(cls):\n    cls.get_mha_kv_pool_cls = _pool\n    return cls\n", "caps"),
    "setattr": ("def caps(klass):\n    setattr(klass, 'get_mha_kv_pool_cls', _pool)\n    return klass\n", "caps"),
    "nested_classmethod": ("def caps(platform_cls):\n    def get_mha_kv_pool_cls(cls):\n        return object\n\n"
                           "    platform_cls.get_mha_kv_pool_cls = classmethod(get_mha_kv_pool_cls)\n    return platform_cls\n", "caps"),
}


@pytest.mark.parametrize("spelling", sorted(DECORATORS))
def test_a_method_a_class_decorator_sets_is_an_override(upstreams, tmp_path, spelling):
    old, new = upstreams
    decorator, name = DECORATORS[spelling]
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(platforms={"priv": "priv:activate"}),
        "priv/__init__.py": "def activate():\n    return 'priv.platform:PrivPlatform'\n",
        "priv/caps.py": "def _pool(self):\n    return object\n\n\n" + decorator,
        "priv/platform.py": (f"from sglang.srt.platforms.interface import SRTPlatform\n\nfrom priv.caps import {name}\n\n\n"
                             f"@{name}\nclass PrivPlatform(SRTPlatform):\n    def init_backend(self) -> None:\n        pass\n"),
    }, name=spelling)
    _assert_an_override_of_the_dropped_pool(root, old, new)


# a private method (`def __rows(self)`) is stored as `_PrivPlatform__rows` (name mangling, F20 variant p2): read
# so from outside the class, or as `self.__rows` inside it, it resolves; `__rows` read outside does not
MANGLED_READS = {
    "outside_attribute": ("current_platform.__rows()", True),
    "outside_getattr": ("getattr(current_platform, '__rows')()", True),
    "outside_through_a_local": ("plat = current_platform\n    return plat.__rows()", True),
    "outside_mangled_name": ("current_platform._PrivPlatform__rows()", False),
}


@pytest.mark.parametrize("spelling", sorted(MANGLED_READS))
def test_a_private_method_is_found_only_under_its_mangled_name(upstreams, tmp_path, spelling):
    old, _ = upstreams
    read, breaks = MANGLED_READS[spelling]
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(platforms={"priv": "priv:activate"}, plugins={"priv_use": "priv.use:register"}),
        "priv/__init__.py": "def activate():\n    return 'priv.platform:PrivPlatform'\n",
        "priv/platform.py": ("from sglang.srt.platforms.interface import SRTPlatform\n\n\nclass PrivPlatform(SRTPlatform):\n"
                             "    def __rows(self):\n        return 4096\n\n    def rows_inside(self):\n        return self.__rows()\n"),
        "priv/use.py": ("from sglang.srt.platforms import current_platform\n\n\ndef size():\n    current_platform.rows_inside()\n    "
                        + (read if "return" in read else f"return {read}") + "\n\n\ndef register():\n    return size\n"),
    })
    code, doc = check(root, old)
    broken = [f for f in doc["findings"] if f["breaking"]]
    assert [f["target"].rsplit(".", 1)[-1] for f in broken] == (["__rows"] if breaks else []) and code == (1 if breaks else 0), doc["findings"]


# the entry point names a method of the platform class itself (twenty-fifth set F02-e1,
# `pkg.platform:DevPlatform.activate`): the engine calls it (ep.load()()), so it is the plugin's
# own method, not an override upstream stopped calling -- a classmethod, a staticmethod, one a
# plugin base defines; a public method nothing names stays not_on_base
ENTRY_METHODS = {
    "classmethod": ("", "    @classmethod\n    def activate(cls):\n        return f'{cls.__module__}.{cls.__qualname__}'\n", "DevPlatform"),
    "staticmethod": ("", "    @staticmethod\n    def activate():\n        return 'dev.platform.DevPlatform'\n", "DevPlatform"),
    "on_a_plugin_base": ("class Loadable:\n    @classmethod\n    def activate(cls):\n        return 'dev.platform.DevPlatform'\n\n\n", "",
                         "Loadable"),
}


@pytest.mark.parametrize("spelling", sorted(ENTRY_METHODS))
def test_a_platform_method_the_entry_point_names_is_the_plugins_own(upstreams, tmp_path, spelling):
    head, method, owner = ENTRY_METHODS[spelling]
    bases = "Loadable, SRTPlatform" if head else "SRTPlatform"
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(platforms={"dev": f"dev.platform:{owner}.activate"}),
        "dev/__init__.py": "",
        "dev/platform.py": "from sglang.srt.platforms.interface import SRTPlatform\n\n\n" + head
                           + f"class DevPlatform({bases}):\n    def get_default_attention_backend(self) -> str:\n        return 'torch_native'\n\n"
                           + "    def warm_up_kernels(self):\n        return None\n\n" + method,
    })
    code, doc = check(root, upstreams[0])
    found = {f["target"].rsplit(".", 1)[-1]: f for f in doc["findings"] if f["kind"] == "override"}
    assert (found["activate"]["status"], found["activate"]["breaking"]) == ("extension", False), found["activate"]
    assert "entry point" in found["activate"]["detail"]
    # (a public method nothing calls or names is as before)
    assert (found["warm_up_kernels"]["status"], found["warm_up_kernels"]["breaking"]) == ("not_on_base", True)
    assert found["get_default_attention_backend"]["status"] == "ok" and code == 1


# the plugin calls its own platform methods by names it builds (twenty-eighth set F20-h2): a
# getattr of a name that folds in a loop or a comprehension is a read of that name
NAMED_CALLS = {
    "loop_over_a_tuple": "    for phase in ('prefill', 'decode'):\n        getattr(current_platform, f'{phase}_chunk_rows')()\n",
    "comprehension": "    return [getattr(current_platform, phase + '_chunk_rows')() for phase in PHASES]\n",
    "hasattr_then_getattr_of_a_table": ("    for phase in {'prefill': 1, 'decode': 2}:\n        name = '%s_chunk_rows' % phase\n"
                                        "        if hasattr(current_platform, name):\n            getattr(current_platform, name)()\n"),
}


@pytest.mark.parametrize("spelling", sorted(NAMED_CALLS))
def test_platform_methods_the_plugin_calls_by_built_names_are_extensions(upstreams, tmp_path, spelling):
    old, _ = upstreams
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(platforms={"nc": "nc:activate"}),
        "nc/__init__.py": ("from sglang.srt.platforms import current_platform\nfrom sglang.srt.platforms.interface import SRTPlatform\n\n"
                           "PHASES = ('prefill', 'decode')\n\n\nclass NcPlatform(SRTPlatform):\n"
                           "    def get_default_attention_backend(self) -> str:\n        return 'torch_native'\n\n"
                           "    def prefill_chunk_rows(self) -> int:\n        return 8\n\n    def decode_chunk_rows(self) -> int:\n        return 1\n\n\n"
                           "def activate():\n    return 'nc:NcPlatform'\n\n\ndef rows():\n" + NAMED_CALLS[spelling]),
    }, name=spelling)
    code, doc = check(root, old)
    found = by_target(doc["findings"])
    for name in ("prefill_chunk_rows", "decode_chunk_rows"):
        assert (found[f"{IFACE}.{name}"]["status"], found[f"{IFACE}.{name}"]["breaking"]) == ("extension", False), found[f"{IFACE}.{name}"]
    assert code == 0, doc["findings"]
