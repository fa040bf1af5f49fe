"""The static picture on plugins shaped like real ones: mixin-first platforms, namespace hook
folders, external model packages, version-guarded registrations, upstream subclasses, hooks
registered too late, and files the scan cannot read. Each kind has more than one form here;
the upstream is a small SGLang-shaped tree in two versions (0.9.0 -> 0.10.0)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from knowledge_support import by_target, harness, harness_json, write_tree
from sglang_api import DEVICE_MIXIN, HOOK_REGISTRY

IFACE = "sglang.srt.platforms.interface.SRTPlatform"
MIXIN = "sglang.srt.platforms.device_mixin.DeviceMixin"
HOOKS = "from sglang.srt.plugins.hook_registry import HookRegistry, HookType, plugin_hook\n"


def with_hooks(text: str) -> str:
    """A module body that starts with the hook registry imports."""
    return HOOKS + textwrap.dedent(text)

COMMON = {
    "sglang/__init__.py": "from sglang.version import __version__\n",
    "sglang/srt/platforms/__init__.py": "",
    "sglang/srt/platforms/device_mixin.py": DEVICE_MIXIN,
    "sglang/srt/plugins/__init__.py": "",
    "sglang/srt/plugins/hook_registry.py": HOOK_REGISTRY,
    "sglang/srt/models/__init__.py": "",
    "sglang/srt/models/registry.py": """
        class _ModelRegistry:
            def register(self, package_name, overwrite=False):
                pass

        ModelRegistry = _ModelRegistry()
        """,
    "sglang/srt/managers/__init__.py": "",
}

OLD = {
    **COMMON,
    "sglang/version.py": '__version__ = "0.9.0"\n',
    "sglang/srt/platforms/interface.py": """
        from sglang.srt.platforms.device_mixin import DeviceMixin

        class SRTPlatform(DeviceMixin):
            def get_default_attention_backend(self) -> str:
                raise NotImplementedError

            def get_mha_kv_pool_cls(self) -> type:
                raise NotImplementedError

            def support_cuda_graph(self) -> bool:
                return False

            def init_backend(self) -> None:
                pass
        """,
    "sglang/srt/layers/sampler.py": """
        from torch import nn

        class Sampler(nn.Module):
            def __init__(self):
                super().__init__()
                self.use_nan_detection = True

            def forward(self, logits, *, temperature=1.0):
                return logits

            def _attach_logprobs(self, output):
                return output
        """,
    "sglang/srt/models/llama.py": """
        import torch.nn as nn

        class LlamaForCausalLM(nn.Module):
            def __init__(self, config, quant_config=None):
                super().__init__()
                self.config = config

            def forward(self, input_ids, positions):
                return input_ids

            def load_weights(self, weights):
                pass
        """,
    "sglang/srt/utils/__init__.py": "from sglang.srt.utils.common import *\n",
    "sglang/srt/utils/common.py": """
        def get_device_name(device_id=0):
            return "cuda"

        def get_bool_env_var(name, default="false", *, strict=False):
            return False

        LEGACY_FLAG = True
        """,
    "sglang/srt/model_executor/__init__.py": "",
    "sglang/srt/model_executor/forward_batch_info.py": """
        from enum import IntEnum

        class ForwardMode(IntEnum):
            EXTEND = 1
            DECODE = 2
            IDLE = 3
        """,
    "sglang/srt/managers/scheduler.py": """
        class Scheduler:
            def __init__(self, server_args):
                self.tp_size = 1

            def get_next_batch(self):
                return None

            def process_batch_result(self, batch, result):
                pass
        """,
    "sglang/srt/kernels/__init__.py": "",
    "sglang/srt/kernels/old_attention.py": "def plan():\n    pass\n",
}

NEW = {
    **COMMON,
    "sglang/version.py": '__version__ = "0.10.0"\n',
    "sglang/srt/platforms/interface.py": """
        from typing import Literal

        from sglang.srt.platforms.device_mixin import DeviceMixin

        _LEGACY_KV_POOL_HOOKS = {"mha": "get_mha_kv_pool_cls"}

        class SRTPlatform(DeviceMixin):
            def get_default_attention_backend(self) -> str:
                raise NotImplementedError

            def get_kv_pool_cls(self, *, kind: Literal["mha"]) -> type:
                legacy = getattr(self, _LEGACY_KV_POOL_HOOKS[kind], None)
                return legacy() if legacy else None

            def init_backend(self) -> None:
                pass
        """,
    "sglang/srt/layers/sampler.py": """
        from torch import nn

        class Sampler(nn.Module):
            def __init__(self):
                super().__init__()
                self.use_nan_detection = True

            def forward(self, logits, *, temperature=1.0, top_p=None):
                return logits
        """,
    "sglang/srt/models/llama.py": """
        import torch.nn as nn

        class LlamaForCausalLM(nn.Module):
            def __init__(self, config, quant_config=None, prefix=""):
                super().__init__()
                self.config = config

            def forward(self, input_ids, positions, forward_batch):
                return input_ids

            def load_weights(self, weights):
                pass
        """,
    "sglang/srt/utils/__init__.py": "from sglang.srt.utils.common import *\n",
    "sglang/srt/utils/common.py": """
        from sglang.srt.utils.device import get_device_name

        def get_bool_env_var(name, default="false"):
            return False
        """,
    "sglang/srt/utils/device.py": """
        def get_device_name(device_id=0):
            return "cuda"
        """,
    "sglang/srt/model_executor/__init__.py": "",
    "sglang/srt/model_executor/forward_batch_info.py": """
        from enum import IntEnum

        class ForwardMode(IntEnum):
            EXTEND = 1
            DECODE = 2
        """,
    "sglang/srt/managers/scheduler_output.py": """
        class SchedulerOutputProcessorMixin:
            def process_batch_result(self, batch, result):
                pass
        """,
    "sglang/srt/managers/scheduler.py": """
        from sglang.srt.managers.scheduler_output import SchedulerOutputProcessorMixin

        class Scheduler(SchedulerOutputProcessorMixin):
            def __init__(self, server_args):
                self.tp_size = 1

            def get_next_batch(self):
                return None
        """,
}


@pytest.fixture(scope="module")
def upstreams(tmp_path_factory) -> tuple[str, str]:
    old, new = tmp_path_factory.mktemp("up-old"), tmp_path_factory.mktemp("up-new")
    write_tree(old, OLD)
    write_tree(new, NEW)
    return str(old), str(new)


def plugin(tmp_path: Path, files: dict[str, str], name: str = "p") -> Path:
    root = tmp_path / name
    write_tree(root, files)
    return root


def check(root: Path, upstream: str, *extra: str) -> tuple[int, dict]:
    return harness_json("check", "--plugin", str(root), "--upstream", upstream, *extra)


def pyproject(plugins: dict[str, str] | None = None, platforms: dict[str, str] | None = None) -> str:
    text = '[project]\nname = "p"\nversion = "0.1"\n'
    for group, table in (("sglang.srt.platforms", platforms), ("sglang.srt.plugins", plugins)):
        if table:
            text += f'[project.entry-points."{group}"]\n' + "".join(f'{k} = "{v}"\n' for k, v in table.items())
    return text


# ----------------------------------------------------------------------------- platform classes


def test_mixin_first_platforms_are_judged_over_their_mro(upstreams, tmp_path):
    old, new = upstreams
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(platforms={"mx": "mx.platform:activate"}),
        "mx/__init__.py": "",
        "mx/platform.py": """
            from sglang.srt.platforms.device_mixin import DeviceMixin, PlatformEnum
            from sglang.srt.platforms.interface import SRTPlatform


            class Helpers:  # a plain mixin with no upstream base, listed first
                def get_device_name(self, device_id: int = 0) -> str:
                    return "mx"

            class MxDeviceMixin(DeviceMixin):
                _enum = PlatformEnum.OOT

                def empty_cache(self) -> None:
                    pass

            class MxPlatform(Helpers, MxDeviceMixin, SRTPlatform):
                def get_default_attention_backend(self) -> str:
                    return "mx"

                def init_backend(self) -> None:
                    pass

            def activate():
                return "mx.platform:MxPlatform"
            """,
    })
    code, doc = check(root, old)
    overrides = {f["target"]: f for f in doc["findings"] if f["kind"] == "override"}
    assert code == 0, overrides
    # named after the platform's first upstream base; defined_in says which base defines it
    assert overrides[f"{IFACE}.empty_cache"]["status"] == "ok" and overrides[f"{IFACE}.empty_cache"]["defined_in"] == f"{MIXIN}.empty_cache"
    assert overrides[f"{IFACE}.get_default_attention_backend"]["status"] == "ok"
    assert overrides[f"{IFACE}.init_backend"]["status"] == "ok"
    # a method of a plain mixin overrides DeviceMixin's in the platform's MRO
    device_name = overrides[f"{IFACE}.get_device_name"]
    assert device_name["status"] == "ok" and device_name["defined_in"] == f"{MIXIN}.get_device_name"
    assert device_name["file"] == "mx/platform.py" and device_name["line"] == 6


@pytest.mark.parametrize("returned", ['"dt.platform.DtPlatform"', '"dt.platform:DtPlatform"', "PATH"])
def test_every_form_activate_returns_makes_the_platform_live(upstreams, tmp_path, returned):
    old, new = upstreams
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(platforms={"dt": "dt:activate"}),
        "dt/__init__.py": f"""
            PATH = "dt.platform" + ":DtPlatform"

            def activate():
                return {returned}
            """,
        "dt/platform.py": """
            from sglang.srt.platforms.interface import SRTPlatform

            class DtPlatform(SRTPlatform):
                def support_cuda_graph(self) -> bool:
                    return True
            """,
    })
    code, doc = check(root, new, "--baseline", old)  # written for `old`, whose platform had support_cuda_graph
    finding = by_target(doc["findings"])[f"{IFACE}.support_cuda_graph"]
    assert finding["live"] and finding["status"] == "not_on_base" and finding["breaking"]
    assert code == 1
    assert any(r["module"] == "dt.platform" for r in doc["roots"])


def test_override_served_by_a_legacy_shim_is_deprecated_not_breaking(upstreams, tmp_path):
    old, new = upstreams
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(platforms={"lg": "lg:activate"}),
        "lg/__init__.py": """
            from sglang.srt.platforms.interface import SRTPlatform

            class LgPlatform(SRTPlatform):
                def get_mha_kv_pool_cls(self):
                    return object

                def support_cuda_graph(self):
                    return True

            def activate():
                return "lg:LgPlatform"
            """,
    })
    code, doc = check(root, new, "--baseline", old)
    findings = by_target(doc["findings"])
    legacy = findings[f"{IFACE}.get_mha_kv_pool_cls"]
    assert legacy["status"] == "deprecated" and not legacy["breaking"]
    assert legacy["successor"] == f"{IFACE}.get_kv_pool_cls" and "legacy shim" in legacy["successor_reason"]
    # no shim for support_cuda_graph: that one breaks
    assert findings[f"{IFACE}.support_cuda_graph"]["status"] == "not_on_base" and code == 1
    code, doc = harness_json("diff", "--from", old, "--to", new, "--plugin", str(root))
    assert by_target(doc["findings"])[f"{IFACE}.get_mha_kv_pool_cls"]["status"] == "deprecated"


# fourteenth held-out set (F10-n1, F10-n2): the override bound in the class body by a plugin
# factory's call (the nested def it returns is the method), with activate() naming the class
# through a helper's environment default; a factory returning no function binds no method
LEGACY_SPELLINGS = {
    "factory_closure": ("def _getter(kind):\n    def getter(self):\n        return object\n    return getter\n\n\n", "_getter('mha')", True),
    "factory_returning_a_class": ("def _pool():\n    class Pool:\n        pass\n\n    return Pool\n\n\n", "_pool()", False),
    "factory_returning_a_def": ("def _fixed(value):\n    def factory(self):\n        return value\n\n    return factory\n\n\n", "_fixed(object)", True),
}


@pytest.mark.parametrize("spelling", sorted(LEGACY_SPELLINGS))
def test_a_method_a_factory_puts_in_the_class_body_is_an_override(upstreams, tmp_path, spelling):
    old, new = upstreams
    factory, call, method = LEGACY_SPELLINGS[spelling]
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(platforms={"lg": "lg:activate"}),
        "lg/__init__.py": (
            "import os\n\n_DEFAULT = 'lg.platform.LgPlatform'\n\n\ndef _path():\n    return os.environ.get('LG_PLATFORM', _DEFAULT)\n\n\n"
            "def activate():\n    return _path()\n"),
        "lg/platform.py": ("from sglang.srt.platforms.interface import SRTPlatform\n\n" + factory
                           + f"class LgPlatform(SRTPlatform):\n    get_mha_kv_pool_cls = {call}\n\n    def support_cuda_graph(self):\n        return True\n"),
    })
    code, doc = check(root, new, "--baseline", old)
    findings = by_target(doc["findings"])
    assert findings[f"{IFACE}.support_cuda_graph"]["status"] == "not_on_base" and code == 1  # the platform class is live
    legacy = findings.get(f"{IFACE}.get_mha_kv_pool_cls")
    if method:
        assert legacy["status"] == "deprecated" and not legacy["breaking"], legacy
    else:  # the attribute holds a class, no function: no method of that name
        assert legacy is None


# activate() choosing the class by a test of upstream (fourteenth set F02-n2): only the class it
# returns on a release is loaded (pkgutil.resolve_name of that one path), so the other one's
# overrides do not run there; a choice by run-time data (an environment variable) loads either
CHOICES = {
    "if_return": ("def activate():\n    if hasattr(SRTPlatform, 'get_kv_pool_cls'):\n        return MODERN\n    return LEGACY\n", True),
    "conditional_expression": ("def activate():\n    return MODERN if hasattr(SRTPlatform, 'get_kv_pool_cls') else LEGACY\n", True),
    "match_on_a_helper": ("def _api():\n    return 'pool' if hasattr(SRTPlatform, 'get_kv_pool_cls') else 'flags'\n\n\n"
                          "def activate():\n    match _api():\n        case 'pool':\n            return MODERN\n        case _:\n            return LEGACY\n", True),
    "environment_choice": ("import os\n\n\ndef activate():\n    if os.environ.get('DT_MODERN'):\n        return MODERN\n    return LEGACY\n", False),
    # the first row of a table whose test holds (fifteenth set F02-m2): next() over a generator
    "first_match_named_predicate": ("def _legacy_api():\n    return not hasattr(SRTPlatform, 'get_kv_pool_cls')\n\n\n"
                                    "_CANDIDATES = ((_legacy_api, LEGACY), (lambda: True, MODERN))\n\n\n"
                                    "def activate():\n    return next(path for applies, path in _CANDIDATES if applies())\n", True),
    "first_match_lambdas": ("_CANDIDATES = [(lambda: hasattr(SRTPlatform, 'get_kv_pool_cls'), MODERN), (lambda: True, LEGACY)]\n\n\n"
                            "def activate():\n    return next(p for ok, p in _CANDIDATES if ok())\n", True),
    # a read-only table of paths, keyed by a helper's test of upstream (sixteenth set F02-k2): the
    # helper importing the class itself, a module constant, a table of keys
    "table_keyed_by_a_helper_importing_locally": ("import types\n\n_PATHS = types.MappingProxyType({'flags': LEGACY, 'pool': MODERN})\n\n\n"
                                                  "def _api():\n    from sglang.srt.platforms import interface\n\n"
                                                  "    return 'pool' if hasattr(interface.SRTPlatform, 'get_kv_pool_cls') else 'flags'\n\n\n"
                                                  "def activate():\n    return _PATHS[_api()]\n", True),
    "table_keyed_by_a_module_constant": ("_API = 'flags' if not hasattr(SRTPlatform, 'get_kv_pool_cls') else 'pool'\n\n\n"
                                         "def activate():\n    return {'flags': LEGACY, 'pool': MODERN}.get(_API)\n", True),
    "table_keyed_by_run_time_data": ("import os\n\n_PATHS = {'flags': LEGACY, 'pool': MODERN}\n\n\n"
                                     "def activate():\n    return _PATHS[os.environ.get('DT_API', 'flags')]\n", False),
    "first_match_with_a_default": ("_CANDIDATES = ((lambda: hasattr(SRTPlatform, 'support_cuda_graph'), LEGACY),)\n\n\n"
                                   "def activate():\n    return next((p for ok, p in _CANDIDATES if ok()), MODERN)\n", True),
}


@pytest.mark.parametrize("spelling", sorted(CHOICES))
def test_only_the_platform_class_activate_returns_on_a_release_is_loaded(upstreams, tmp_path, spelling):
    old, new = upstreams
    source, decided = CHOICES[spelling]
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(platforms={"dt": "dt:activate"}),
        "dt/__init__.py": ("from sglang.srt.platforms.interface import SRTPlatform\n\nMODERN = 'dt.modern.Modern'\nLEGACY = 'dt.legacy:Legacy'\n\n\n" + source),
        "dt/modern.py": "from sglang.srt.platforms.interface import SRTPlatform\n\n\nclass Modern(SRTPlatform):\n    def get_kv_pool_cls(self, *, kind):\n        return object\n",
        "dt/legacy.py": "from sglang.srt.platforms.interface import SRTPlatform\n\n\nclass Legacy(SRTPlatform):\n    def support_cuda_graph(self):\n        return True\n",
    })
    code, doc = check(root, new)
    legacy = by_target(doc["findings"]).get(f"{IFACE}.support_cuda_graph")
    if decided:  # the legacy class is not what activate() gives on 0.10.0; the modern one is
        modern = by_target(doc["findings"]).get(f"{IFACE}.get_kv_pool_cls")
        assert code == 0 and not (legacy and legacy["breaking"]), doc["findings"]
        assert modern is not None and modern["live"] and modern["status"] == "ok", doc["findings"]
    else:  # either may load: both classes' overrides run
        assert legacy["status"] == "not_on_base" and legacy["breaking"] and code == 1, legacy
        assert by_target(doc["findings"])[f"{IFACE}.get_kv_pool_cls"]["live"], doc["findings"]


# ----------------------------------------------------------------------------- layout and roots


def test_namespace_hook_folders_are_scanned_and_live(upstreams, tmp_path):
    old, new = upstreams
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"ns": "ns.hooks.registry:register_all"}),
        "ns/__init__.py": "",
        "ns/hooks/__init__.py": "",
        "ns/hooks/registry.py": """
            import importlib

            from ns.ops import kernels  # ns/ops has no __init__.py either

            HOOK_MODULES = ("ns.hooks.utils.common", "ns.hooks.deep.more.sched")

            def register_all():
                for name in HOOK_MODULES:
                    importlib.import_module(name)
            """,
        "ns/ops/kernels.py": "from sglang.srt.utils.common import LEGACY_FLAG\n",
        "ns/hooks/utils/common.py": with_hooks("""
            @plugin_hook("sglang.srt.utils.common.get_device_name", type=HookType.REPLACE)
            def device_name(device_id=0):
                return "ns"
            """),
        "ns/hooks/deep/more/sched.py": with_hooks("""
            @plugin_hook("sglang.srt.managers.scheduler.Scheduler.get_next_batch", type=HookType.AFTER)
            def after(result, *args, **kwargs):
                return result
            """),
        "ns/hooks/unused/dead.py": with_hooks("""
            @plugin_hook("sglang.srt.managers.scheduler.Scheduler.gone", type=HookType.AFTER)
            def after(result, *args, **kwargs):
                return result
            """),
    })
    code, doc = check(root, old)
    hooks = {f["target"]: f for f in doc["findings"] if f["kind"] == "hook"}
    assert hooks["sglang.srt.utils.common.get_device_name"]["live"]
    assert hooks["sglang.srt.managers.scheduler.Scheduler.get_next_batch"]["live"]
    assert hooks["sglang.srt.managers.scheduler.Scheduler.gone"]["live"] is False
    assert code == 0
    # on the new upstream, the namespace-package module's import breaks the plugin
    code, doc = check(root, new)
    broken = [f for f in doc["findings"] if f["breaking"]]
    assert code == 1 and [(f["kind"], f["file"], f["line"]) for f in broken] == [("import", "ns/ops/kernels.py", 1)]


def test_external_model_package_without_entry_points(upstreams, tmp_path):
    old, new = upstreams
    files = {
        "pyproject.toml": '[project]\nname = "models"\nversion = "0.1"\n',
        "xmodels/__init__.py": "",
        "xmodels/xllama.py": """
            from sglang.srt.models.llama import LlamaForCausalLM

            class XLlamaForCausalLM(LlamaForCausalLM):
                def forward(self, input_ids, positions):
                    return super().forward(input_ids, positions)

            EntryClass = XLlamaForCausalLM
            """,
        "xmodels/xmistral.py": """
            from sglang.srt.utils.common import get_device_name

            from xmodels.xllama import XLlamaForCausalLM

            class XMistral(XLlamaForCausalLM):
                pass

            EntryClass = [XMistral]
            """,
        "tools/convert.py": "import json\n",
    }
    root = plugin(tmp_path, files)
    code, doc = check(root, old)
    assert code == 0
    roots = {r["module"]: r["why"] for r in doc["roots"]}
    assert roots["xmodels.xllama"] == roots["xmodels.xmistral"] == "imports sglang (no entry points)"
    assert "external model package" in roots["xmodels.*"]  # SGLang imports every module of it
    models = [f for f in doc["findings"] if f["kind"] == "model"]
    assert len(models) == 2 and all(f["status"] == "ok" for f in models)
    code, doc = check(root, new)
    findings = {(f["kind"], f["file"], f["line"]): f for f in doc["findings"]}
    # forward gained a required parameter upstream: the override cannot take upstream's calls
    override = findings[("subclass", "xmodels/xllama.py", 4)]
    assert override["status"] == "signature_changed" and override["breaking"] and "forward_batch" in override["detail"]
    # and the super() call no longer passes what the base requires
    assert findings[("subclass", "xmodels/xllama.py", 5)]["status"] == "signature_changed"
    assert code == 1
    # --entry names the roots explicitly
    code, doc = check(root, new, "--entry", "xmodels.xmistral")
    assert [r["module"] for r in doc["roots"]] == ["xmodels.xmistral"]
    proc = harness("check", "--plugin", str(root), "--upstream", new, "--entry", "no.such")
    assert proc.returncode == 2 and "--entry no.such" in proc.stderr


# ----------------------------------------------------------------------------- imports, references, subclasses, calls


def test_imports_references_subclasses_and_calls(upstreams, tmp_path):
    old, new = upstreams
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"use": "use:register"}),
        "use/__init__.py": """
            from sglang.srt.utils import common
            from sglang.srt.utils.common import get_bool_env_var, get_device_name
            from sglang.srt.model_executor.forward_batch_info import ForwardMode
            from sglang.srt.layers.sampler import Sampler
            from sglang.srt.managers.scheduler import Scheduler
            import sglang.srt.kernels.old_attention

            IDLE = ForwardMode.IDLE
            FLAG = common.LEGACY_FLAG


            class XSampler(Sampler):
                def forward(self, logits, *, temperature=1.0):
                    self._attach_logprobs(logits)
                    if self.use_nan_detection:
                        pass
                    return super().forward(logits, temperature=temperature)


            class XScheduler(Scheduler):
                def get_next_batch(self):
                    self.process_batch_result(None, None)
                    return self.tp_size


            def register():
                get_bool_env_var("X", default="1", strict=True)

                def server_args(common):  # a parameter shadows the module name
                    return common.anything
            """,
    })
    code, doc = check(root, old)
    assert code == 0, [f for f in doc["findings"] if f["status"] != "ok"]
    assert doc["checked"]["import"] == 7 and doc["checked"]["reference"] >= 2
    code, doc = check(root, new)
    findings = {(f["kind"], f["line"]): f for f in doc["findings"]}
    assert code == 1
    # a name that moved but is still re-exported resolves; the plain import of a deleted module breaks
    assert ("import", 2) not in findings or findings[("import", 2)]["status"] == "ok"
    old_attention = findings[("import", 6)]
    assert old_attention["status"] == "missing" and old_attention["breaking"] and "skips the whole plugin" in old_attention["detail"]
    # enum members and module constants that are gone
    assert findings[("reference", 8)]["target"] == "sglang.srt.model_executor.forward_batch_info.ForwardMode.IDLE"
    assert findings[("reference", 8)]["status"] == "missing"
    assert findings[("reference", 9)]["status"] == "missing"
    # self./super() members: a method gone from the base; an inherited one and instance attributes resolve
    attach = findings[("subclass", 14)]
    assert attach["status"] == "missing" and attach["breaking"] and "_attach_logprobs" in attach["target"]
    assert ("subclass", 15) not in findings  # self.use_nan_detection is set in the base's __init__
    assert ("subclass", 22) not in findings  # process_batch_result moved to a base mixin
    assert ("subclass", 23) not in findings  # self.tp_size
    # a keyword the function no longer takes
    call = findings[("call", 27)]
    assert call["status"] == "signature_changed" and call["breaking"] and "strict" in call["detail"]
    assert ("reference", 30) not in findings  # `common` there is a parameter


# ----------------------------------------------------------------------------- guards and timing


def test_guards_are_evaluated_against_the_target_version(upstreams, tmp_path):
    old, new = upstreams
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"gd": "gd:register"}),
        "gd/__init__.py": with_hooks("""
            import sglang
            from packaging import version
            from sglang.srt.platforms.interface import SRTPlatform

            try:
                from sglang.srt.kernels.old_attention import plan
                HAS_OLD = True
            except ImportError:
                plan = None
                HAS_OLD = False

            _SGL = version.parse(sglang.__version__)


            def at_least(v):
                return version.parse(sglang.__version__) >= version.parse(v)


            def hook(*args, **kwargs):
                return None


            def register():
                if hasattr(SRTPlatform, "get_kv_pool_cls"):
                    HookRegistry.register("sglang.srt.platforms.interface.SRTPlatform.get_kv_pool_cls", hook, HookType.AROUND)
                else:
                    HookRegistry.register("sglang.srt.platforms.interface.SRTPlatform.get_mha_kv_pool_cls", hook, HookType.AROUND)
                if _SGL < version.parse("0.10"):
                    HookRegistry.register("sglang.srt.utils.common.LEGACY_FLAG", hook, HookType.REPLACE)
                if at_least("0.10.0"):
                    HookRegistry.register("sglang.srt.utils.device.get_device_name", hook, HookType.REPLACE)
                if HAS_OLD:
                    HookRegistry.register("sglang.srt.kernels.old_attention.plan", hook, HookType.REPLACE)
                if not hasattr(SRTPlatform, "support_cuda_graph"):
                    return
                HookRegistry.register("sglang.srt.platforms.interface.SRTPlatform.support_cuda_graph", hook, HookType.AROUND)
                if some_runtime_probe():
                    HookRegistry.register("sglang.srt.managers.scheduler.Scheduler.gone", hook, HookType.AROUND)


            def some_runtime_probe():
                import os
                return bool(os.environ.get("X"))
            """),
    })
    for upstream in (old, new):
        code, doc = check(root, upstream)
        hooks = {f["target"].rsplit(".", 1)[-1]: f for f in doc["findings"] if f["kind"] == "hook"}
        assert not [f for f in doc["findings"] if f["breaking"]], doc["findings"]
        skipped = {name for name, f in hooks.items() if f["guard"] and f["guard"]["outcome"] == "skipped"}
        runs = {name for name, f in hooks.items() if f["guard"] and f["guard"]["outcome"] == "runs"}
        if upstream == old:
            assert skipped == {"get_kv_pool_cls", "get_device_name"} and {"get_mha_kv_pool_cls", "LEGACY_FLAG", "plan", "support_cuda_graph"} <= runs
        else:
            assert skipped == {"get_mha_kv_pool_cls", "LEGACY_FLAG", "plan", "support_cuda_graph", "gone"} and {"get_kv_pool_cls", "get_device_name"} <= runs
        # the import in try/except ImportError is handled, not breaking
        imports = [f for f in doc["findings"] if f["kind"] == "import" and "old_attention" in f["target"]]
        assert upstream == old or (imports and imports[0]["guard"]["outcome"] == "caught")
        # a guard that cannot be decided statically says so; a missing target under it is unverified
        if upstream == old:
            gone = hooks["gone"]
            assert gone["status"] == "missing" and gone["guard"]["outcome"] == "undecided" and code == 3


def test_more_guard_forms(upstreams, tmp_path):
    old, new = upstreams
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"gf": "gf:register"}),
        "gf/__init__.py": with_hooks("""
            import importlib.util

            import sglang
            from sglang.srt.platforms import interface


            def hook(*args, **kwargs):
                return None


            def register():
                if getattr(interface.SRTPlatform, "support_cuda_graph", None) is not None:
                    HookRegistry.register("sglang.srt.platforms.interface.SRTPlatform.support_cuda_graph", hook, HookType.AROUND)
                if importlib.util.find_spec("sglang.srt.kernels.old_attention") is not None:
                    HookRegistry.register("sglang.srt.kernels.old_attention.plan", hook, HookType.REPLACE)
                if "get_kv_pool_cls" in dir(interface.SRTPlatform) and not hasattr(interface.SRTPlatform, "get_mha_kv_pool_cls"):
                    HookRegistry.register("sglang.srt.platforms.interface.SRTPlatform.get_kv_pool_cls", hook, HookType.AROUND)
                if sglang.__version__ >= "0.9":  # a string comparison: False on 0.10.0
                    HookRegistry.register("sglang.srt.utils.common.LEGACY_FLAG", hook, HookType.REPLACE)
            """),
    })
    expected = {
        old: {"support_cuda_graph": "runs", "plan": "runs", "get_kv_pool_cls": "skipped", "LEGACY_FLAG": "runs"},
        new: {"support_cuda_graph": "skipped", "plan": "skipped", "get_kv_pool_cls": "runs", "LEGACY_FLAG": "skipped"},
    }
    for upstream, outcomes in expected.items():
        code, doc = check(root, upstream)
        hooks = {f["target"].rsplit(".", 1)[-1]: f for f in doc["findings"] if f["kind"] == "hook"}
        assert {name: f["guard"]["outcome"] for name, f in hooks.items()} == outcomes
        assert code == 0
    assert "compares version strings" in hooks["LEGACY_FLAG"]["guard"]["condition"]


def test_hooks_registered_after_apply_hooks_are_never_applied(upstreams, tmp_path):
    old, new = upstreams
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"late": "late:register"}),
        "late/__init__.py": with_hooks("""
            def late_hook(*args, **kwargs):
                return None


            def on_batch(original_fn, self, *args, **kwargs):
                # runs when the scheduler calls it, long after HookRegistry.apply_hooks
                HookRegistry.register("sglang.srt.managers.scheduler.Scheduler.get_next_batch", late_hook, HookType.BEFORE)
                return original_fn(self, *args, **kwargs)


            @plugin_hook("sglang.srt.managers.scheduler.Scheduler.__init__", type=HookType.AROUND)
            def on_init(original_fn, self, *args, **kwargs):
                def inner():
                    plugin_hook("sglang.srt.utils.common.get_device_name", type=HookType.REPLACE)(late_hook)
                inner()
                return original_fn(self, *args, **kwargs)


            def register():
                HookRegistry.register("sglang.srt.managers.scheduler.Scheduler.process_batch_result", on_batch, HookType.AROUND)
            """),
    })
    code, doc = check(root, old)
    hooks = {f["target"]: f for f in doc["findings"] if f["kind"] == "hook"}
    late = hooks["sglang.srt.managers.scheduler.Scheduler.get_next_batch"]
    assert late["status"] == "never_applied" and late["breaking"] and "on_batch" in late["detail"]
    assert hooks["sglang.srt.utils.common.get_device_name"]["status"] == "never_applied"
    assert hooks["sglang.srt.managers.scheduler.Scheduler.process_batch_result"]["status"] == "ok"
    assert code == 1


# a module of the release calling the two hooked targets (the fixture's release calls neither)
CALLERS = {"sglang/srt/managers/callers.py": """
    from sglang.srt.managers.scheduler import Scheduler
    from sglang.srt.utils.common import get_bool_env_var


    def run(scheduler: Scheduler):
        if get_bool_env_var("SGLANG_X"):
            return scheduler.get_next_batch()
    """}


@pytest.mark.parametrize("called", [True, False], ids=["called", "never_called"])
def test_hook_and_override_signatures_are_checked_on_one_version(tmp_path, called):
    old = tmp_path / "up-old"
    write_tree(old, {**OLD, **(CALLERS if called else {})})
    old = str(old)
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"sig": "sig:register"}),
        "sig/__init__.py": with_hooks("""
            def name_for(device_id=0):  # fits get_device_name(device_id=0)
                return "x"

            def wrong(device_id, extra):  # a second required parameter nobody passes
                return "x"

            def around(original_fn, *args, **kwargs):
                return original_fn(*args, **kwargs)

            def after_missing_result(self):  # AFTER hooks get (result, self)
                return None

            def register():
                HookRegistry.register("sglang.srt.utils.common.get_device_name", name_for, HookType.REPLACE)
                HookRegistry.register("sglang.srt.utils.common.get_bool_env_var", wrong, HookType.REPLACE)
                HookRegistry.register("sglang.srt.managers.scheduler.Scheduler.get_next_batch", around, HookType.AROUND)
                HookRegistry.register("sglang.srt.managers.scheduler.Scheduler.get_next_batch", after_missing_result, HookType.AFTER)
            """),
    })
    code, doc = check(root, old)
    hooks = {(f["target"], f["hook_type"]): f for f in doc["findings"] if f["kind"] == "hook"}
    assert hooks[("sglang.srt.utils.common.get_device_name", "REPLACE")]["status"] == "ok"
    wrong = hooks[("sglang.srt.utils.common.get_bool_env_var", "REPLACE")]
    # `extra` is required where the target's `default` is optional: a call that leaves it out
    # fails; an AFTER hook gets (result, self). Where nothing in the release calls the targets,
    # nothing fails: both are reported, not breaking (they fail only where they run)
    after = hooks[("sglang.srt.managers.scheduler.Scheduler.get_next_batch", "AFTER")]
    for hook in (wrong, after):
        assert hook["status"] == "signature_changed" and hook["breaking"] is called, hook["detail"]
        assert called or "nothing in" in hook["detail"], hook["detail"]
    assert "optional" in wrong["detail"], wrong["detail"]
    assert hooks[("sglang.srt.managers.scheduler.Scheduler.get_next_batch", "AROUND")]["status"] == "ok"
    assert code == (1 if called else 0)


# ----------------------------------------------------------------------------- robustness


def test_unreadable_and_unparsable_files_are_findings_not_crashes(upstreams, tmp_path):
    old, new = upstreams
    files = {
        "pyproject.toml": pyproject(plugins={"rb": "rb:register"}),
        "rb/__init__.py": with_hooks("""
            from rb import cycle_a

            def register():
                HookRegistry.register("sglang.srt.utils.common.get_device_name", lambda d=0: "x", HookType.REPLACE)
            """),
        # a plugin-internal re-export cycle must not loop
        "rb/cycle_a.py": "from rb.cycle_b import NAME\nX = NAME.attr\n",
        "rb/cycle_b.py": "from rb.cycle_a import NAME\n",
        "rb/newer.py": "type Alias = int\n",  # Python 3.12 syntax, never imported
    }
    root = plugin(tmp_path, files)
    os.symlink("/nonexistent/generated_ops.py", root / "rb" / "generated_ops.py")
    code, doc = check(root, old)
    by_file = {f["file"]: f for f in doc["findings"] if f["kind"] == "file"}
    assert by_file["rb/newer.py"]["live"] is False and "does not parse" in by_file["rb/newer.py"]["detail"]
    assert by_file["rb/generated_ops.py"]["live"] is False and "cannot be read" in by_file["rb/generated_ops.py"]["detail"]
    assert code == 0 and doc["passed"] and doc["checked"]["hook"] == 1
    # the same unreadable file, imported: the check cannot vouch for the plugin -> exit 2, one line
    (root / "rb" / "__init__.py").write_text((root / "rb" / "__init__.py").read_text().replace("import cycle_a", "import cycle_a, generated_ops"))
    proc = harness("check", "--plugin", str(root), "--upstream", old)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert [line for line in proc.stderr.splitlines() if line.startswith("harness: error:")] == [
        next(line for line in proc.stderr.splitlines() if line.startswith("harness: error:") and "generated_ops.py" in line)
    ]


def _refused(folder: Path) -> list[str]:
    """Make `folder` one the checking process cannot list (twenty-third set F12-c1: a cache
    another uid left with mode 0700): as root, owned by another uid and the check run without
    the capabilities that read past permissions; otherwise mode 0. The command prefix to run under."""
    if os.geteuid() != 0:
        folder.chmod(0)
        return []
    for path in [folder, *folder.rglob("*")]:
        os.chown(path, 12345, 12345)
    folder.chmod(0o700)
    return ["setpriv", "--bounding-set=-dac_override,-dac_read_search", "--inh-caps=-dac_override,-dac_read_search"]


@pytest.mark.parametrize("imported", [False, True])
def test_a_folder_that_cannot_be_listed_is_a_file_that_cannot_be_read(upstreams, tmp_path, imported):
    old, _ = upstreams
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"rf": "rf:register"}),
        "rf/__init__.py": with_hooks(f"""
            {"from rf import _cache" if imported else ""}

            def register():
                HookRegistry.register("sglang.srt.utils.common.get_device_name", lambda d=0: "x", HookType.REPLACE)
            """),
        "rf/_cache/__init__.py": "from .gemm import BEST  # noqa: F401\n",
        "rf/_cache/gemm.py": "BEST = {}\n",
    })
    prefix = _refused(root / "rf" / "_cache")
    try:
        proc = subprocess.run([*prefix, sys.executable, "-m", "harness", "check", "--plugin", str(root), "--upstream", old, "--json"],
                              capture_output=True, text=True)
    finally:
        (root / "rf" / "_cache").chmod(0o755)
    assert "Traceback" not in proc.stderr and "cannot write" not in proc.stderr, proc.stderr
    doc = json.loads(proc.stdout)
    folder = [f for f in doc["findings"] if f["kind"] == "file"]
    assert [(f["file"], f["live"]) for f in folder] == [("rf/_cache/__init__.py", imported)], doc["findings"]
    assert "cannot be read" in folder[0]["detail"], folder
    # unread and imported: the check cannot vouch for the plugin (exit 2); unread and dead: checked
    assert proc.returncode == (2 if imported else 0) and doc["checked"]["hook"] == 1, proc.stderr


# a live module importing a module it names only at run time (thirty-sixth set F22-r1: names
# read from an INI string by configparser), each way of naming it
UNNAMED_IMPORTS = {
    "configparser_section": ("import configparser\nimport importlib\n\nPATCHES = '[a]\\nmodule = sglang.srt.utils.common\\n'\n\n\n"
                             "def register():\n    cfg = configparser.ConfigParser()\n    cfg.read_string(PATCHES)\n"
                             "    for name in cfg.sections():\n        module = importlib.import_module(cfg[name]['module'])\n"
                             "        setattr(module, name, None)\n"),
    "environment_variable": ("import importlib\nimport os\n\n\ndef register():\n"
                             "    module = importlib.import_module(os.environ['DEV_PATCHED_MODULE'])\n    module.hook = None\n"),
    "file_contents": ("import pathlib\n\n\ndef register():\n"
                      "    name = (pathlib.Path(__file__).parent / 'patched.txt').read_text().strip()\n    __import__(name)\n"),
}


@pytest.mark.parametrize("spelling", sorted(UNNAMED_IMPORTS))
def test_an_import_named_at_run_time_is_not_nothing_to_check(upstreams, tmp_path, spelling):
    """No dependency found, but a live module imports what it names at run time: not "nothing to
    check" (exit 2 says the plugin does not touch upstream), unverified (exit 3) naming the import."""
    old, _ = upstreams
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"p": "p:register"}), "p/__init__.py": UNNAMED_IMPORTS[spelling]})
    proc = harness("check", "--plugin", str(root), "--upstream", old)
    assert proc.returncode == 3 and "UNVERIFIED" in proc.stdout and "p/__init__.py:" in proc.stdout, proc.stdout + proc.stderr
    code, doc = check(root, old)
    assert code == 3 and doc["passed"] is False and doc["unnamed_imports"][0].startswith("p/__init__.py:"), doc
    # the same import in a module nothing loads: nothing to check, as before
    (root / "p" / "unused.py").write_text(UNNAMED_IMPORTS[spelling])
    (root / "p" / "__init__.py").write_text("def register():\n    pass\n")
    assert harness("check", "--plugin", str(root), "--upstream", old).returncode == 2


def test_nothing_checked_is_not_a_pass(upstreams, tmp_path):
    old, new = upstreams
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"gone": "elsewhere.module:register"}),
        "readme.py": "print('not a plugin module')\n",
    })
    proc = harness("check", "--plugin", str(root), "--upstream", old)
    assert proc.returncode == 2 and "PASS" not in proc.stdout and "NOTHING CHECKED" in proc.stdout
    code, doc = check(root, old)
    assert doc["passed"] is False and any(f["kind"] == "entry_point" for f in doc["findings"])


def test_entry_point_callable_that_does_not_exist_breaks(upstreams, tmp_path):
    old, new = upstreams
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"ep": "ep:regster"}),
        "ep/__init__.py": "from sglang.srt.utils.common import get_device_name\n\ndef register():\n    pass\n",
    })
    code, doc = check(root, old)
    entry = [f for f in doc["findings"] if f["kind"] == "entry_point"]
    assert code == 1 and entry[0]["status"] == "missing" and "regster" in entry[0]["detail"]


def test_json_output_writes_nothing_into_the_current_directory(upstreams, tmp_path):
    old, new = upstreams
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"j": "j:register"}),
        "j/__init__.py": "from sglang.srt.utils.common import get_device_name\n\ndef register():\n    pass\n",
    })
    work = tmp_path / "cwd"
    work.mkdir()
    for args in (("map", "--plugin", str(root), "--upstream", old), ("diff", "--from", old, "--to", new, "--plugin", str(root)), ("check", "--plugin", str(root), "--upstream", old)):
        proc = harness(*args, "--json", cwd=work)
        json.loads(proc.stdout)  # stdout is one JSON document
        assert list(work.iterdir()) == [], args
    assert not (root / "platform-map.yaml").exists()


def test_what_upstream_computes_at_import_is_read_statically(tmp_path):
    """A computed `__all__`, a PEP 562 module `__getattr__` over a table, and the `__init__` a
    dataclass synthesises: each decides a lookup either way, like the runtime does."""
    upstream = tmp_path / "up"
    write_tree(upstream, {
        **{k: v for k, v in NEW.items()},
        "sglang/srt/distributed/__init__.py": "from sglang.srt.distributed.parallel_state import *\n",
        "sglang/srt/distributed/parallel_state.py": """
            def get_world_group():
                return None

            def get_tp_size():
                return 1

            _DEPRECATED = {"get_tp_size": "tp_size"}
            _DEPRECATED["get_world_group"] = "world"

            def get_parallel():
                return None

            __all__ = [n for n in list(globals()) if not n.startswith("_") and n not in _DEPRECATED]
            """,
        "sglang/srt/managers/lazy.py": """
            import importlib

            _LAZY = {"Parser": "sglang.srt.managers.scheduler"}

            def __getattr__(name):
                module_name = _LAZY.get(name)
                if module_name is None:
                    raise AttributeError(name)
                return getattr(importlib.import_module(module_name), name)
            """,
        "sglang/srt/managers/records.py": """
            from dataclasses import dataclass, field

            @dataclass(kw_only=True)
            class Loc:
                out_cache_loc: object
                swa_loc: object = None
                group: object = field(init=False)
            """,
    })
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"cmp": "cmp:register"}),
        "cmp/__init__.py": """
            from sglang.srt import distributed
            from sglang.srt.managers import lazy
            from sglang.srt.managers.lazy import Parser, Tokenizer
            from sglang.srt.managers.records import Loc

            PARALLEL = distributed.get_parallel
            TP = distributed.get_tp_size


            def register():
                Loc(out_cache_loc=1, swa_loc=2)
                Loc(out_cache_loc=1, group=3)
                Loc(1)
            """,
    })
    code, doc = check(root, str(upstream))
    findings = {(f["kind"], f["line"]): f for f in doc["findings"]}
    assert ("reference", 6) not in findings  # get_parallel is in the computed __all__
    assert findings[("reference", 7)]["status"] == "missing"  # excluded from __all__: not star-exported
    assert findings[("import", 3)]["target"].endswith("lazy.Tokenizer") and findings[("import", 3)]["status"] == "missing"
    assert not any(f["target"].endswith("lazy.Parser") for f in doc["findings"])  # answered by __getattr__
    assert ("call", 11) not in findings
    assert findings[("call", 12)]["breaking"] and "group" in findings[("call", 12)]["detail"]  # field(init=False)
    assert findings[("call", 13)]["breaking"]  # kw_only: no positional argument
    assert code == 1


def test_a_subclass_init_that_no_longer_fits_is_reported_not_failed(upstreams, tmp_path):
    old, new = upstreams
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"ini": "ini:register"}),
        "ini/__init__.py": """
            from sglang.srt.models.llama import LlamaForCausalLM


            class XLlama(LlamaForCausalLM):
                def __init__(self, config):  # base: (config, quant_config=None[, prefix=""])
                    super().__init__(config)


            def register():
                pass
            """,
    })
    code, doc = check(root, new)
    init = [f for f in doc["findings"] if f["kind"] == "subclass" and f["target"].endswith("__init__")]
    assert len(init) == 1 and init[0]["status"] == "signature_changed" and not init[0]["breaking"]
    assert "constructs" in init[0]["detail"] and code == 0


def test_review_round_attribute_timing_and_roots(upstreams, tmp_path):
    """What a first review by a plugin engineer found: instance attributes an outside base's
    __init__ sets, hooks registered from closures and helpers of a hook, the colon form of a
    target, and an external model package whose module cannot be parsed."""
    old, new = upstreams
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"rv": "rv:register"}),
        "rv/__init__.py": with_hooks("""
            from sglang.srt.layers.sampler import Sampler


            class XSampler(Sampler):
                def forward(self, logits, *, temperature=1.0):
                    if self.training:  # set by torch.nn.Module.__init__ on every instance
                        pass
                    return logits


            def late(*args, **kwargs):
                return None


            def _register_more():
                HookRegistry.register("sglang.srt.managers.scheduler.Scheduler.get_next_batch", late, HookType.BEFORE)


            def on_init(original_fn, self, *args, **kwargs):
                _register_more()  # a helper the hook calls: it runs after apply_hooks too
                return original_fn(self, *args, **kwargs)


            def register():
                def after_init(result, *args, **kwargs):
                    HookRegistry.register("sglang.srt.utils.common.get_device_name", late, HookType.REPLACE)
                    return result

                HookRegistry.register("sglang.srt.managers.scheduler.Scheduler.__init__", on_init, HookType.AROUND)
                HookRegistry.register("sglang.srt.managers.scheduler.Scheduler.__init__", after_init, HookType.AFTER)
                HookRegistry.register("sglang.srt.utils.common:get_device_name", late, HookType.REPLACE)
            """),
    })
    code, doc = check(root, old)
    findings = {(f["kind"], f["line"]): f for f in doc["findings"]}
    assert not any(f["kind"] == "subclass" for f in doc["findings"])  # self.training resolves
    assert findings[("hook", 18)]["status"] == "never_applied" and "on_init" in findings[("hook", 18)]["detail"]
    assert findings[("hook", 28)]["status"] == "never_applied"
    colon = findings[("hook", 33)]
    assert colon["status"] == "missing" and colon["successor"] == "sglang.srt.utils.common.get_device_name"
    assert "last '.'" in colon["detail"]
    # the report goes to stdout; with --json a bad input is still a JSON document
    proc = harness("check", "--plugin", str(root), "--upstream", old)
    assert "FAIL" in proc.stdout and "never_applied" in proc.stdout
    proc = harness("check", "--plugin", str(tmp_path / "nowhere"), "--upstream", old, "--json")
    assert proc.returncode == 2 and json.loads(proc.stdout)["error"].endswith("is not a directory")


def test_external_model_package_modules_are_all_live(upstreams, tmp_path):
    old, new = upstreams
    root = plugin(tmp_path, {
        "pyproject.toml": '[project]\nname = "m"\nversion = "0.1"\n',
        "xm/__init__.py": "",
        "xm/llama_x.py": """
            from sglang.srt.models.llama import LlamaForCausalLM
            from sglang.srt.kernels.old_attention import plan

            class LlamaX(LlamaForCausalLM):
                pass

            EntryClass = LlamaX
            """,
        "xm/helpers.py": "VALUE = 1\n",
    })
    code, doc = check(root, new)
    model = next(f for f in doc["findings"] if f["kind"] == "model")
    assert model["status"] == "missing" and "never registered" in model["detail"]
    missing_import = next(f for f in doc["findings"] if f["kind"] == "import" and f["breaking"])
    assert "skips this model module" in missing_import["detail"]
    # a module of the package that does not parse is imported by SGLang too: not a silent pass
    (root / "xm" / "newer.py").write_text("from sglang.srt.models.llama import LlamaForCausalLM\ntype Alias = int\n")
    (root / "xm" / "llama_x.py").write_text((root / "xm" / "llama_x.py").read_text().replace("from sglang.srt.kernels.old_attention import plan\n", ""))
    proc = harness("check", "--plugin", str(root), "--upstream", new)
    assert proc.returncode == 2 and "newer.py" in proc.stderr
    # --entry naming a module that uses nothing from sglang checks nothing, and says so
    proc = harness("check", "--plugin", str(root), "--upstream", new, "--entry", "xm.helpers")
    assert proc.returncode == 2 and "NOTHING CHECKED" in proc.stdout
    # --entry naming the package: SGLang imports each of its modules
    code, doc = check(root, old, "--entry", "xm")
    assert {"xm", "xm.*"} <= {r["module"] for r in doc["roots"]}


def test_baseline_tells_an_override_of_a_removed_base_method_from_the_plugins_own(upstreams, tmp_path):
    old, new = upstreams
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"bl": "bl:register"}),
        "bl/__init__.py": """
            from sglang.srt.layers.sampler import Sampler


            class XSampler(Sampler):
                def _attach_logprobs(self, output):  # the base had it in 0.9.0, not in 0.10.0
                    return output

                def _own_helper(self):
                    return 1


            def register():
                pass
            """,
    })
    code, doc = check(root, new, "--baseline", "none")
    assert code == 0 and not [f for f in doc["findings"] if f["kind"] == "subclass"]
    code, doc = check(root, new, "--baseline", old)
    [dropped] = [f for f in doc["findings"] if f["kind"] == "subclass"]
    assert dropped["status"] == "not_on_base" and dropped["breaking"] and dropped["line"] == 5
    assert "no longer calls the override" in dropped["detail"] and doc["baseline"] and code == 1


def test_the_declared_sglang_version_is_read_from_every_packaging_file(tmp_path):
    from harness.knowledge.model.plugin import declared_sglang

    cases = {
        "pyproject.toml": '[project]\nname = "p"\ndependencies = ["torch", "sglang[srt]>=0.5.17,<0.6"]\n',
        "setup.cfg": "[options]\ninstall_requires =\n    numpy\n    sglang==0.5.19\n",
        "setup.py": "from setuptools import setup\nsetup(name='p', install_requires=['sglang~=0.5.11'])\n",
        "requirements.txt": "# pinned\nsglang==0.5.23  # the release we test on\n",
    }
    expected = {"pyproject.toml": "0.5.17", "setup.cfg": "0.5.19", "setup.py": "0.5.11", "requirements.txt": "0.5.23"}
    for name, text in cases.items():
        folder = tmp_path / name.replace(".", "_")
        folder.mkdir()
        (folder / name).write_text(text)
        assert declared_sglang(folder) == expected[name], name
    assert declared_sglang(tmp_path) is None


# a call of the overridden method's name on a parameter annotated with another library's class
# (sixteenth set F29-k1: `def device_guard(t: torch.Tensor): t.get_device()`) is that object's
# method: the platform class does not derive from it, so the call never reaches the override
TENSOR_RECEIVERS = {
    "annotation": ("t: torch.Tensor", True),
    "string_annotation": ("t: 'torch.Tensor'", True),
    "optional_annotation": ("t: Optional[torch.Tensor]", True),
    "no_annotation": ("t", False),
}


@pytest.mark.parametrize("spelling", sorted(TENSOR_RECEIVERS))
def test_a_call_on_a_parameter_of_another_librarys_class_does_not_reach_a_platform_override(tmp_path_factory, tmp_path, spelling):
    parameter, placed = TENSOR_RECEIVERS[spelling]
    guard = {"sglang/srt/utils/tensor_guard.py": f"""
from typing import Optional

import torch
from sglang.srt.platforms import current_platform


def name_of({parameter}):
    return t.get_device_name()


def device_name():
    return current_platform.get_device_name(0)
"""}
    new = tmp_path_factory.mktemp("up-guard")
    write_tree(new, {**NEW, **guard})
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(platforms={"dt": "dt:activate"}),
        "dt/__init__.py": "def activate():\n    return 'dt.platform.DevPlatform'\n",
        "dt/platform.py": ("from sglang.srt.platforms.interface import SRTPlatform\n\n\nclass DevPlatform(SRTPlatform):\n"
                           "    def get_device_name(self, device_id):\n        return 'dev'\n"),
    })
    code, doc = check(root, str(new))
    override = by_target(doc["findings"])[f"{IFACE}.get_device_name"]
    if placed:  # every call that reaches it passes device_id
        assert not override["breaking"] and override["status"] != "unknown" and code == 0, override
        assert "tensor_guard.py:8" not in override["detail"], override
    else:  # what `t` holds is not shown: the call may reach it
        assert (override["status"], override["breaking"]) == ("unknown", False) and "tensor_guard.py:8" in override["detail"], override


@pytest.mark.parametrize("imported", [False, True])
@pytest.mark.parametrize("spelling", ["dangling_relative_link", "dangling_absolute_link", "link_to_a_removed_build"])
def test_a_package_that_is_a_link_to_nothing_cannot_be_read(upstreams, tmp_path, imported, spelling):
    """A package folder that is a symbolic link whose target is not there (a generated folder not
    built, twenty-eighth set F12-h1) is a package that cannot be read, as an unlistable folder is."""
    old, _ = upstreams
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"rf": "rf:register"}),
        "rf/__init__.py": with_hooks(f"""
            {"from rf import _generated" if imported else ""}

            def register():
                HookRegistry.register("sglang.srt.utils.common.get_device_name", lambda d=0: "x", HookType.REPLACE)
            """),
    }, name=f"{spelling}-{imported}")
    target = {"dangling_relative_link": "../build/generated", "dangling_absolute_link": str(tmp_path / "nowhere"),
              "link_to_a_removed_build": str(tmp_path / "build-gone")}[spelling]
    if spelling == "link_to_a_removed_build":
        (tmp_path / "build-gone").mkdir()
    (root / "rf" / "_generated").symlink_to(target)
    if spelling == "link_to_a_removed_build":
        (tmp_path / "build-gone").rmdir()
    code, doc = check(root, old)
    folder = [f for f in doc["findings"] if f["kind"] == "file"]
    assert [(f["file"], f["live"]) for f in folder] == [("rf/_generated/__init__.py", imported)], doc["findings"]
    assert code == (2 if imported else 0), doc["findings"]
