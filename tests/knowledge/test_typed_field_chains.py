"""A member read through a field of an annotated upstream object (the twentieth held-out set,
V-f7, vllm-ascend's `vllm_config.compilation_config.init_with_cudagraph_sizes(…)`): the field's
class is the one upstream's class body annotates it with (`compilation_config:
CompilationConfig`, `Optional[…]`), read directly in a chain or kept in a local first, on an
annotated parameter, an override's parameter typed by the method it overrides, or an object the
class keeps on self; a method
the release drops is missing there (AttributeError), one it keeps is fine. A field annotated with
no one class (a dict) says nothing."""

from __future__ import annotations

import pytest
from kinds_support import check, plugin, pyproject, upstream_pair

CONFIG = '''
from dataclasses import dataclass, field
from typing import Optional


@dataclass
class CompilationConfig:
    capture_sizes: list = None
{method}

@dataclass
class ServingConfig:
    compilation_config: {annotation} = field(default_factory=CompilationConfig)
    extra: dict = field(default_factory=dict)


class Tuner:
    def update(self, cfg: ServingConfig) -> None:
        pass


class BaseWorker:
    def __init__(self, cfg: ServingConfig, rank: int = 0):
        self.cfg = cfg
        self.serving: ServingConfig = cfg
        self.compilation = cfg.compilation_config
        self.rank = rank


class Worker(BaseWorker):
    pass


def get_current_serving_config() -> ServingConfig:
    return ServingConfig()


def current_config():
    return ServingConfig()
'''
METHOD = "\n    def init_with_sizes(self, sizes):\n        self.capture_sizes = sizes\n"


@pytest.fixture(scope="module", params=["CompilationConfig", "Optional[CompilationConfig]"])
def upstreams(tmp_path_factory, request):
    path = "sglang/srt/configs/serving.py"
    return upstream_pair(tmp_path_factory, old={"sglang/srt/configs/__init__.py": "", path: CONFIG.format(method=METHOD, annotation=request.param)},
                         new={"sglang/srt/configs/__init__.py": "", path: CONFIG.format(method="", annotation=request.param)})


HEAD = "from sglang.srt.configs.serving import ServingConfig\n\n\n"
SPELLINGS = {
    "chain": "def update(cfg: ServingConfig):\n    cfg.compilation_config.{m}([1, 2])\n",
    "kept_in_a_local": "def update(cfg: ServingConfig):\n    cc = cfg.compilation_config\n    sizes, cc.capture_sizes = cc.capture_sizes, None\n    cc.{m}(sorted(sizes or [1]))\n",
    # an override's unannotated parameter, typed by the upstream method it overrides
    "override_parameter": ("from sglang.srt.configs.serving import Tuner\n\n\nclass DeviceTuner(Tuner):\n    def update(self, cfg):\n"
                           "        cfg.compilation_config.{m}([1])\n\n\ndef update(cfg):\n    DeviceTuner().update(cfg)\n"),
    # kept on self from an annotated parameter, read through it in another method
    "kept_on_self": ("class Runner:\n    def __init__(self, cfg: ServingConfig):\n        self.cfg = cfg\n\n"
                     "    def run(self):\n        self.cfg.compilation_config.{m}([1])\n\n\ndef update(cfg):\n    Runner(cfg).run()\n"),
    # kept on self by the upstream base's __init__, from its annotated parameter (twenty-third set
    # V-c7, vLLM's WorkerBase.vllm_config): the plugin subclass never binds it; annotated there; by a grandparent
    "kept_by_the_upstream_base": ("from sglang.srt.configs.serving import BaseWorker\n\n\nclass DevWorker(BaseWorker):\n"
                                  "    def run(self):\n        if self.cfg.compilation_config is not None:\n"
                                  "            self.cfg.compilation_config.{m}([1])\n\n\ndef update(cfg):\n    DevWorker(cfg).run()\n"),
    "annotated_by_the_upstream_base": ("from sglang.srt.configs.serving import BaseWorker\n\n\nclass DevWorker(BaseWorker):\n"
                                       "    def run(self):\n        self.serving.compilation_config.{m}([1])\n\n\ndef update(cfg):\n    DevWorker(cfg).run()\n"),
    "kept_by_a_grandparent": ("from sglang.srt.configs.serving import Worker\n\n\nclass DevWorker(Worker):\n"
                              "    def run(self):\n        cc = self.cfg.compilation_config\n        cc.{m}([1])\n\n\ndef update(cfg):\n    DevWorker(cfg).run()\n"),
    # kept by the upstream base's __init__ from a field of its annotated parameter (twenty-eighth
    # set V-h7, vLLM's WorkerBase `self.cache_config = vllm_config.cache_config`)
    "a_field_the_upstream_base_keeps": ("from sglang.srt.configs.serving import BaseWorker\n\n\nclass DevWorker(BaseWorker):\n"
                                        "    def run(self):\n        self.compilation.{m}([1])\n\n\ndef update(cfg):\n    DevWorker(cfg).run()\n"),
    "a_field_a_grandparent_keeps_in_a_local": ("from sglang.srt.configs.serving import Worker\n\n\nclass DevWorker(Worker):\n"
                                               "    def run(self):\n        cc = self.compilation\n        cc.{m}([1])\n\n\ndef update(cfg):\n    DevWorker(cfg).run()\n"),
    "a_field_the_base_keeps_under_a_test": ("from sglang.srt.configs.serving import BaseWorker\n\n\nclass DevWorker(BaseWorker):\n"
                                            "    def run(self):\n        if self.compilation is not None:\n            self.compilation.{m}([1])\n\n\n"
                                            "def update(cfg):\n    DevWorker(cfg).run()\n"),
    # rooted at what an upstream function annotated to return the class returns (twenty-fourth set
    # V-d7, vLLM's `get_current_vllm_config() -> VllmConfig`): inline, through its module, kept in a local
    "an_upstream_functions_result": ("from sglang.srt.configs.serving import get_current_serving_config\n\n\n"
                                     "def update(cfg):\n    get_current_serving_config().compilation_config.{m}([1])\n"),
    "a_function_read_off_its_module": ("import sglang.srt.configs.serving as serving\n\n\n"
                                       "def update(cfg):\n    serving.get_current_serving_config().compilation_config.{m}([1])\n"),
    "a_functions_result_kept_in_a_local": ("from sglang.srt.configs import serving as cfgs\n\n\n"
                                           "def update(cfg):\n    compilation = cfgs.get_current_serving_config().compilation_config\n"
                                           "    compilation.{m}([1])\n"),
    # the field read with a default (twenty-fifth set V-e7, `getattr(vllm_config, "lora_config",
    # None)`): the field where the class declares it, tested `is not None` (run-time data), by
    # walrus, by a name a module constant holds
    "getattr_with_a_default": ("def update(cfg: ServingConfig):\n    cc = getattr(cfg, 'compilation_config', None)\n"
                               "    if cc is not None:\n        cc.{m}([1])\n"),
    "getattr_with_a_default_walrus": ("def update(cfg: ServingConfig):\n    if (cc := getattr(cfg, 'compilation_config', None)):\n"
                                      "        cc.{m}([1])\n"),
    "getattr_of_a_constant_name": ("FIELD = 'compilation_config'\n\n\ndef update(cfg: ServingConfig):\n"
                                   "    cc = getattr(cfg, FIELD, None)\n    if cc:\n        cc.{m}([1])\n"),
    "string_annotation_in_a_method": ("class Tuner:\n    def update(self, cfg: 'ServingConfig') -> None:\n        compilation = cfg.compilation_config\n"
                                      "        compilation.{m}([1])\n\n\ndef update(cfg):\n    Tuner().update(cfg)\n"),
}


@pytest.mark.parametrize("member,gone", [("init_with_sizes", True), ("capture_sizes", False)])
@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
def test_a_member_read_through_an_annotated_field_is_judged_on_the_fields_class(upstreams, tmp_path, spelling, member, gone):
    old, new = upstreams
    source = HEAD + SPELLINGS[spelling].format(m=member) + "\n\ndef register():\n    update(ServingConfig())\n"
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"p": "p:register"}), "p/__init__.py": source})
    target = f"sglang.srt.configs.serving.CompilationConfig.{member}"
    code, doc = check(root, old)
    assert code == 0 and all(f["status"] == "ok" for f in doc["findings"] if f["target"] == target), doc["findings"]
    code, doc = check(root, new)
    found = [(f["status"], f["breaking"]) for f in doc["findings"] if f["target"] == target]
    assert (found, code) == (([("missing", True)], 1) if gone else ([] if not found else [("ok", False)] * len(found), 0)), doc["findings"]


def test_an_unannotated_functions_result_says_nothing(upstreams, tmp_path):
    _, new = upstreams
    source = ("from sglang.srt.configs.serving import current_config\n\n\n"
              "def update():\n    current_config().compilation_config.init_with_sizes([1])\n\n\ndef register():\n    update()\n")
    code, doc = check(plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"p": "p:register"}), "p/__init__.py": source}), new)
    assert code == 0 and not [f for f in doc["findings"] if "init_with_sizes" in f["target"]], doc["findings"]


def test_a_field_annotated_with_a_container_says_nothing(upstreams, tmp_path):
    _, new = upstreams
    source = HEAD + "def update(cfg: ServingConfig):\n    cfg.extra.setdefault('k', 1)\n\n\ndef register():\n    update(ServingConfig())\n"
    code, doc = check(plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"p": "p:register"}), "p/__init__.py": source}), new)
    assert code == 0 and not [f for f in doc["findings"] if "setdefault" in f["target"]], doc["findings"]


MIXINS = {
    "annotated_in_a_mixin": "class DeviceFields:\n    special: int = 0\n\n\nclass DeviceCompilation(CompilationConfig, DeviceFields):\n    pass\n",
    "set_by_a_mixin_method": ("class DeviceFields:\n    def setup(self):\n        self.special = 1\n\n\n"
                              "class DeviceCompilation(DeviceFields, CompilationConfig):\n    pass\n"),
    "on_the_subclass_itself": "class DeviceCompilation(CompilationConfig):\n    special: int = 0\n",
}


@pytest.mark.parametrize("spelling", sorted(MIXINS))
def test_a_member_only_a_plugin_subclass_carries_is_not_certainly_missing(upstreams, tmp_path, spelling):
    """The field is annotated with the base; the object may be the plugin's subclass, which
    carries the member itself or through a plugin mixin (tpu-inference's VllmQuantConfig `mesh` on
    `vllm_config.quant_config`): unknown, not missing."""
    _, new = upstreams
    source = ("from sglang.srt.configs.serving import CompilationConfig, ServingConfig\n\n\n" + MIXINS[spelling]
              + "\n\ndef update(cfg: ServingConfig):\n    return cfg.compilation_config.special\n\n\ndef register():\n    update(ServingConfig(DeviceCompilation()))\n")
    code, doc = check(plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"p": "p:register"}), "p/__init__.py": source}), new)
    found = [(f["status"], f["breaking"]) for f in doc["findings"] if f["target"].endswith("CompilationConfig.special")]
    assert found == [("unknown", False)] and code != 1, doc["findings"]
