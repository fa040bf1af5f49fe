"""False unknowns (issue 18 kind 10): a name imported under `try: from sglang.x import f` /
`except ImportError: f = None` is checked as that upstream name; an upstream module that
rebinds a name to itself (`X = X`, a back-compat alias block) exports the class, not a cycle."""

from __future__ import annotations

import pytest
from kinds_support import check, plugin, pyproject, upstream_pair

ALIASES = {
    "sglang/srt/layers/attention/dsa_backend.py": """
        class DSAFlashMLAMetadata:
            pass

        class DeepseekSparseAttnMultiStepBackend:
            def init_forward_metadata(self, batch):
                pass

        def make_metadata():
            return DSAFlashMLAMetadata()

        # Backward-compat aliases
        DSAFlashMLAMetadata = DSAFlashMLAMetadata
        DeepseekSparseAttnMultiStepBackend = DeepseekSparseAttnMultiStepBackend
        make_metadata = make_metadata
        """,
    "sglang/srt/utils/__init__.py": "",
    "sglang/srt/utils/common.py": """
        def get_device_name(device_id=0):
            return "cuda"
        """,
}


@pytest.fixture(scope="module")
def upstreams(tmp_path_factory):
    # 0.10.0 has no attention registry: the fallback binds None there
    new = {"sglang/srt/layers/attention/attention_registry.py": "ATTENTION_BACKENDS = {}\n"}
    return upstream_pair(tmp_path_factory, old=ALIASES, new={**ALIASES, **new})


# the imports bound to None where they fail: try/except, and contextlib.suppress after setting
# None (F36 variant w4)
FALLBACK_IMPORTS = {
    "try_except": """
        try:
            from sglang.srt.layers.attention.attention_registry import register_attention_backend
        except ImportError:  # older SGLang without the registry
            register_attention_backend = None

        try:
            from sglang.srt.utils.common import get_device_name as device_name
        except ImportError:
            device_name = None
        """,
    "suppress": """
        import contextlib

        register_attention_backend = None
        with contextlib.suppress(ImportError):
            from sglang.srt.layers.attention.attention_registry import register_attention_backend

        device_name = None
        with contextlib.suppress(ModuleNotFoundError, ImportError):
            from sglang.srt.utils.common import get_device_name as device_name
        """,
}
# the module imported by name under the try, the function then read with getattr(…, None)
# (twenty-third set F36-c2): None set in the handler, and None set before a handler that passes
FALLBACK_IMPORTS |= {
    "import_module_then_getattr": """
        import importlib

        try:
            _registry = importlib.import_module("sglang.srt.layers.attention.attention_registry")
        except ImportError:
            _registry = None
        register_attention_backend = getattr(_registry, "register_attention_backend", None)

        try:
            _common = importlib.import_module("sglang.srt.utils.common")
        except (ImportError, AttributeError):
            _common = None
        device_name = getattr(_common, "get_device_name", None)
        """,
    "none_first_then_import_module": """
        import importlib

        _registry = _common = None
        try:
            _registry = importlib.import_module("sglang.srt.layers.attention.attention_registry")
            _common = importlib.import_module("sglang.srt.utils.common")
        except ImportError:
            pass
        register_attention_backend = getattr(_registry, "register_attention_backend", None)
        device_name = getattr(_common, "get_device_name", None)
        """,
}
# bound by a module-level loop over a table, each global stored by its computed name in a try
# whose handler stores None (thirtieth set F36-j1): `globals()[name] = …`, `setattr(sys.modules[
# __name__], alias, …)` over a dict's items, `vars()[name] = …` with the names None beforehand
FALLBACK_IMPORTS |= {
    "loop_globals_subscript": """
        import importlib

        for _module, _name, _alias in (("sglang.srt.layers.attention.attention_registry", "register_attention_backend", "register_attention_backend"),
                                       ("sglang.srt.utils.common", "get_device_name", "device_name")):
            try:
                globals()[_alias] = getattr(importlib.import_module(_module), _name)
            except (ImportError, AttributeError):
                globals()[_alias] = None
        """,
    "loop_setattr_sys_modules": """
        import importlib
        import sys

        _OPTIONAL = {"register_attention_backend": ("sglang.srt.layers.attention.attention_registry", "register_attention_backend"),
                     "device_name": ("sglang.srt.utils.common", "get_device_name")}
        for alias, (where, attr) in _OPTIONAL.items():
            try:
                setattr(sys.modules[__name__], alias, getattr(importlib.import_module(where), attr))
            except ImportError:
                setattr(sys.modules[__name__], alias, None)
        """,
    "loop_vars_subscript_none_first": """
        import importlib

        register_attention_backend = device_name = None
        for where, attr, alias in [("sglang.srt.layers.attention.attention_registry", "register_attention_backend", "register_attention_backend"),
                                   ("sglang.srt.utils.common", "get_device_name", "device_name")]:
            try:
                vars()[alias] = getattr(importlib.import_module(where), attr)
            except ImportError:
                pass
        """,
}
FALLBACK_USE = """
        import logging

        log = logging.getLogger(__name__)
        {imports}

        def _create(runner):
            return None


        def register():
            if register_attention_backend is not None:
                register_attention_backend("fb")(_create)
            if device_name is not None:
                log.info("fb on %s", device_name(0, 1))
        """
FALLBACK_SPELLINGS = {name: {"pyproject.toml": pyproject(plugins={"fb": "fb:register"}), "fb/__init__.py": FALLBACK_USE.format(imports=imports)}
                      for name, imports in FALLBACK_IMPORTS.items()}


@pytest.mark.parametrize("spelling", sorted(FALLBACK_SPELLINGS))
def test_a_none_fallback_import_is_checked_as_the_upstream_name(upstreams, tmp_path, spelling):
    old, new = upstreams
    root = plugin(tmp_path, FALLBACK_SPELLINGS[spelling])
    code, doc = check(root, old)
    backend = [f for f in doc["findings"] if f["kind"] == "attention_backend"]
    assert [(f["status"], f["target"]) for f in backend] == [("ok", "sglang.srt.layers.attention.attention_registry.register_attention_backend")]
    # the call through the fallback-bound alias is checked against the upstream function
    call = next(f for f in doc["findings"] if f["kind"] == "call")
    assert call["target"] == "sglang.srt.utils.common.get_device_name" and call["status"] == "signature_changed"
    assert code == 1
    code, doc = check(root, new)
    backend = next(f for f in doc["findings"] if f["kind"] == "attention_backend")
    assert backend["status"] == "missing" and not backend["breaking"]  # the `is not None` guard covers it


def test_names_rebound_to_themselves_are_plain_classes(upstreams, tmp_path):
    old, _ = upstreams
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"al": "al:register"}),
        "al/__init__.py": """
            from sglang.srt.layers.attention.dsa_backend import DSAFlashMLAMetadata, DeepseekSparseAttnMultiStepBackend, make_metadata


            class Backend(DeepseekSparseAttnMultiStepBackend):
                metadata_cls = DSAFlashMLAMetadata

                def init_forward_metadata(self, batch):
                    return make_metadata()


            def register():
                pass
            """,
    })
    code, doc = check(root, old)
    assert code == 0, [f for f in doc["findings"] if f["status"] != "ok"]
    assert not [f for f in doc["findings"] if f["status"] != "ok"]


def test_hooks_on_the_plugins_own_classes_are_not_upstream_unknowns(upstreams, tmp_path):
    old, _ = upstreams
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"own": "own:register"}),
        "own/__init__.py": """
            from sglang.srt.plugins.hook_registry import HookRegistry, HookType


            class Engine:
                def step(self, batch):
                    return batch


            def _around(original_fn, self, batch):
                return original_fn(self, batch)


            def register():
                HookRegistry.register("own.Engine.step", _around, HookType.AROUND)
                HookRegistry.register("own:Engine.stop", _around, HookType.AROUND)
            """,
    })
    _, doc = check(root, old)
    hooks = {f["line"]: f for f in doc["findings"] if f["kind"] == "hook"}
    assert hooks[14]["status"] == "ok" and "plugin's own" in hooks[14]["detail"], hooks[14]
    assert hooks[15]["status"] == "missing" and "stop" in hooks[15]["detail"], hooks[15]
    assert not [f for f in doc["findings"] if "not part of this upstream" in (f["detail"] or "")]


def test_a_hook_on_a_method_the_plugin_class_inherits_from_upstream(upstreams, tmp_path):
    old, _ = upstreams
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"own": "own:register"}),
        "own/__init__.py": """
            from sglang.srt.layers.sampler import Sampler
            from sglang.srt.plugins.hook_registry import HookRegistry, HookType


            class XSampler(Sampler):
                pass


            def _around(original_fn, *args, **kwargs):
                return original_fn(*args, **kwargs)


            def register():
                HookRegistry.register("own.XSampler.forward", _around, HookType.AROUND)
            """,
    })
    code, doc = check(root, old)
    hook = next(f for f in doc["findings"] if f["kind"] == "hook")
    assert hook["status"] == "ok" and "Sampler" in hook["detail"], hook
    assert code == 0
