"""The upstream class an override's finding is named after (set 21 F01-e2): the first upstream
class of the plugin class's MRO whose own MRO has the method. A platform written as in-tree MUSA
and SAIL are (`class DevMixin(CudaDeviceMixin)`, `class DevPlatform(DevMixin, SRTPlatform)`)
overrides SRTPlatform's init_backend, not a CudaDeviceMixin.init_backend no release defines, and
CudaDeviceMixin's own method under CudaDeviceMixin; a method none has now is named where the
baseline had it. A plain `SRTPlatform` subclass keeps its key whatever base of SRTPlatform defines
the method."""

from __future__ import annotations

import pytest
from kinds_support import IFACE, check, plugin, pyproject, upstream_pair

CUDA = "sglang.srt.platforms.cuda.CudaDeviceMixin"
CUDA_MIXIN = ("from sglang.srt.platforms.device_mixin import DeviceMixin\n\n\nclass CudaDeviceMixin(DeviceMixin):\n"
              "    def get_torch_distributed_backend_str(self):\n        return 'nccl'\n")
# 0.10.0 drops get_mha_kv_pool_cls from SRTPlatform
INTERFACE = ("from sglang.srt.platforms.device_mixin import DeviceMixin\n\n\nclass SRTPlatform(DeviceMixin):\n"
             "    def get_default_attention_backend(self) -> str:\n        raise NotImplementedError\n\n"
             "{pool}    def init_backend(self) -> None:\n        pass\n")
POOL = "    def get_mha_kv_pool_cls(self) -> type:\n        raise NotImplementedError\n\n"


@pytest.fixture(scope="module")
def upstreams(tmp_path_factory):
    return upstream_pair(tmp_path_factory,
                         old={"sglang/srt/platforms/cuda.py": CUDA_MIXIN, "sglang/srt/platforms/interface.py": INTERFACE.format(pool=POOL)},
                         new={"sglang/srt/platforms/cuda.py": CUDA_MIXIN, "sglang/srt/platforms/interface.py": INTERFACE.format(pool="")})


METHODS = ("    def init_backend(self):\n        return None\n\n    def get_torch_distributed_backend_str(self):\n        return 'ccl'\n\n"
           "    def get_mha_kv_pool_cls(self):\n        return object\n\n    def get_device_name(self, device_id=0):\n        return 'dev'\n")
CLASSES = {
    "plugin_mixin_over_cuda": f"class DevMixin(CudaDeviceMixin):\n{METHODS}\n\nclass DevPlatform(DevMixin, SRTPlatform):\n    pass\n",
    "cuda_mixin_first": f"class DevPlatform(CudaDeviceMixin, SRTPlatform):\n{METHODS}",
    "two_plugin_levels": (f"class Gen(CudaDeviceMixin):\n    pass\n\n\nclass DevMixin(Gen):\n{METHODS}\n\n"
                          "class DevPlatform(DevMixin, SRTPlatform):\n    pass\n"),
    # the mixin picked from a table by a build constant (twenty-sixth set F01-f1, vllm-ascend's
    # `__soc_version__`): a dict by key, its .get, a tuple by index
    "mixin_from_a_table": (f"SOC = 'a3'\n\n\nclass DevMixin(CudaDeviceMixin):\n{METHODS}\n\nMIXINS = {{'a2': CudaDeviceMixin, 'a3': DevMixin}}\n\n\n"
                           "class DevPlatform(MIXINS[SOC], SRTPlatform):\n    pass\n"),
    "mixin_from_a_table_get": (f"SOC = 'a3'\n\n\nclass DevMixin(CudaDeviceMixin):\n{METHODS}\n\nMIXINS = dict(a2=CudaDeviceMixin, a3=DevMixin)\n\n\n"
                               "class DevPlatform(MIXINS.get(SOC, CudaDeviceMixin), SRTPlatform):\n    pass\n"),
    "mixin_from_a_tuple": (f"GENERATION = 1\n\n\nclass DevMixin(CudaDeviceMixin):\n{METHODS}\n\n"
                           "class DevPlatform((CudaDeviceMixin, DevMixin)[GENERATION], SRTPlatform):\n    pass\n"),
}
NAMED = {"init_backend": IFACE, "get_torch_distributed_backend_str": CUDA, "get_mha_kv_pool_cls": IFACE, "get_device_name": CUDA}


@pytest.mark.parametrize("spelling", sorted(CLASSES))
def test_an_override_is_named_after_the_upstream_base_that_has_it(upstreams, tmp_path, spelling):
    old, new = upstreams
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(platforms={"dev": "p:activate"}),
        "p/__init__.py": "def activate():\n    return 'p.platform.DevPlatform'\n",
        "p/platform.py": f"from sglang.srt.platforms.cuda import CudaDeviceMixin\nfrom sglang.srt.platforms.interface import SRTPlatform\n\n\n{CLASSES[spelling]}",
    }, name=spelling)
    for upstream in (old, new):
        code, doc = check(root, upstream, "--baseline", old)
        named = {f["target"].rpartition(".")[2]: f["target"].rpartition(".")[0] for f in doc["findings"] if f["kind"] == "override"}
        assert named == NAMED, doc["findings"]
    dropped = next(f for f in doc["findings"] if f["target"] == f"{IFACE}.get_mha_kv_pool_cls")
    assert dropped["breaking"] and code == 1, dropped


def test_a_plain_subclass_keeps_its_first_base(upstreams, tmp_path):
    old, new = upstreams
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(platforms={"dev": "p:activate"}),
        "p/__init__.py": "def activate():\n    return 'p.platform.DevPlatform'\n",
        "p/platform.py": f"from sglang.srt.platforms.interface import SRTPlatform\n\n\nclass DevPlatform(SRTPlatform):\n{METHODS}",
    })
    code, doc = check(root, new, "--baseline", old)
    named = {f["target"].rpartition(".")[2]: f["target"].rpartition(".")[0] for f in doc["findings"] if f["kind"] == "override"}
    # get_device_name is DeviceMixin's, reached through SRTPlatform; nothing upstream has the CUDA one
    assert named == dict.fromkeys(NAMED, IFACE), doc["findings"]
    alone = next(f for f in doc["findings"] if f["target"] == f"{IFACE}.get_torch_distributed_backend_str")
    assert f"{IFACE} or its bases" in alone["detail"], alone


# the mixin chosen at run time between two of the plugin's (thirty-first set F01-k2): a run derives
# from one of them, so each one's methods are overrides of the upstream bases after it, named as
# for a plain mixin, and neither shadows the other's
CHOSEN = {
    "conditional_expression": "class DevPlatform(DevMixin if os.environ.get('DEV_SIM') != '1' else SimMixin, SRTPlatform):\n    pass\n",
    "name_bound_to_a_choice": "_Mixin = SimMixin if os.environ.get('DEV_SIM') == '1' else DevMixin\n\n\nclass DevPlatform(_Mixin, SRTPlatform):\n    pass\n",
    "helper_returning_one": ("def _mixin():\n    if os.environ.get('DEV_SIM') == '1':\n        return SimMixin\n    return DevMixin\n\n\n"
                             "class DevPlatform(_mixin(), SRTPlatform):\n    pass\n"),
    "and_or": "class DevPlatform(os.environ.get('DEV_SIM') == '1' and SimMixin or DevMixin, SRTPlatform):\n    pass\n",
}


@pytest.mark.parametrize("spelling", sorted(CHOSEN))
def test_each_mixin_a_run_may_derive_from_overrides_the_bases_after_it(upstreams, tmp_path, spelling):
    old, new = upstreams
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(platforms={"dev": "p:activate"}),
        "p/__init__.py": "def activate():\n    return 'p.platform.DevPlatform'\n",
        "p/platform.py": ("import os\n\nfrom sglang.srt.platforms.cuda import CudaDeviceMixin\nfrom sglang.srt.platforms.interface import SRTPlatform\n\n\n"
                          f"class DevMixin(CudaDeviceMixin):\n{METHODS}\n\nclass SimMixin(CudaDeviceMixin):\n{METHODS}\n\n{CHOSEN[spelling]}"),
    }, name=spelling)
    code, doc = check(root, new, "--baseline", old)
    overrides = [f for f in doc["findings"] if f["kind"] == "override"]
    named = sorted((f["target"].rpartition(".")[2], f["target"].rpartition(".")[0]) for f in overrides)
    assert named == sorted([*NAMED.items()] * 2), doc["findings"]
    dropped = [f for f in overrides if f["target"] == f"{IFACE}.get_mha_kv_pool_cls"]
    assert len({f["line"] for f in dropped}) == 2 and all(f["breaking"] for f in dropped) and code == 1, dropped
