"""An override on a class the plugin's platform hands to upstream from a factory method is judged
against the calls upstream makes on the instances it builds of it (issue 34, item 1: "calls
through objects made by factories the platform fills"). SGLang 0.5.17 builds the KV pool as
`PoolCls = current_platform.get_mha_kv_pool_cls(); token_to_kv_pool = PoolCls(…)`, returns it,
keeps it on the model runner, and the attention backends call
`self.token_to_kv_pool.set_kv_buffer(…, **kwargs)` with `dcp_kv_mask` in `kwargs` under a
run-time condition; a pool override without that keyword fails there (a TypeError).

Three spellings of the platform's factory (a class name, a class attribute read through self,
a local import alias; one more inherited from a plugin base) and three of how upstream keeps
and calls the instance (returned and read through another object's attribute; built in place
and kept on self; handed to a dataclass by keyword and called with a `**kwargs` dict literal)."""

from __future__ import annotations

import pytest
from kinds_support import check, plugin, pyproject, upstream_pair

POOL = """
class KVCache:
    def set_kv_buffer(self, layer, loc, k, v{new}):
        raise NotImplementedError


class MHAPool(KVCache):
    def __init__(self, n):
        self.n = n

    def set_kv_buffer(self, layer, loc, k, v{new}):
        return None
"""
HOLDERS = {
    # built from a local holding the class, returned, kept on the runner, read by the backend
    "returned": {
        "sglang/srt/mem_cache/build.py": """
            from sglang.srt.platforms import current_platform
            from sglang.srt.mem_cache.pool import MHAPool


            def build(n):
                PoolCls = MHAPool
                if current_platform.is_out_of_tree():
                    PoolCls = current_platform.get_mha_kv_pool_cls()
                token_to_kv_pool = PoolCls(n)
                return token_to_kv_pool
            """,
        "sglang/srt/model_executor/runner.py": """
            from sglang.srt.mem_cache.build import build


            class ModelRunner:
                def __init__(self, n):
                    self.token_to_kv_pool = build(n)
            """,
        "sglang/srt/layers/attention/backend.py": """
            class Backend:
                def __init__(self, model_runner):
                    self.token_to_kv_pool = model_runner.token_to_kv_pool
                    self.dcp_size = 1

                def forward(self, layer, loc, k, v, mask):
                    if self.dcp_size > 1:
                        self.token_to_kv_pool.set_kv_buffer(layer, loc, k, v{kw})
                    else:
                        self.token_to_kv_pool.set_kv_buffer(layer, loc, k, v)
            """,
    },
    # built in place from the factory's result and kept on self
    "in_place": {
        "sglang/srt/mem_cache/hybrid.py": """
            from sglang.srt.platforms import current_platform


            class HybridPool:
                def __init__(self, n):
                    self.full_kv_pool = current_platform.get_mha_kv_pool_cls()(n)

                def set_kv_buffer(self, layer, loc, k, v, mask=None):
                    self.full_kv_pool.set_kv_buffer(layer, loc, k, v{kw})
            """,
    },
    # handed to a dataclass by keyword; the call spreads a dict literal
    "dataclass": {
        "sglang/srt/mem_cache/pools.py": """
            from dataclasses import dataclass

            from sglang.srt.platforms import current_platform


            @dataclass
            class Pools:
                token_to_kv_pool: object


            def make_pools(n):
                pool_cls = current_platform.get_mha_kv_pool_cls()
                pool = pool_cls(n)
                return Pools(token_to_kv_pool=pool)


            def write(pools, layer, loc, k, v, mask, dcp):
                if dcp:
                    kwargs = {{"dcp_kv_mask": mask}}
                else:
                    kwargs = {{}}
                pools.token_to_kv_pool.set_kv_buffer(layer, loc, k, v, **kwargs)
            """,
    },
}
FACTORIES = {
    "name": ("", "    def get_mha_kv_pool_cls(self):\n        return XPool\n"),
    "class_attribute": ("", "    pool_cls = XPool\n\n    def get_mha_kv_pool_cls(self):\n        return self.pool_cls\n"),
    "local_import": ("", "    def get_mha_kv_pool_cls(self):\n        from p.platform import XPool as Pool\n        return Pool\n"),
    "inherited": ("class Base(SRTPlatform):\n    def get_mha_kv_pool_cls(self):\n        return XPool\n\n\n",
                  "    def init_backend(self):\n        return None\n"),
}
TARGET = "sglang.srt.mem_cache.pool.MHAPool.set_kv_buffer"


def _platform(factory: str, returns_own: bool = True) -> str:
    before, body = FACTORIES[factory]
    if not returns_own:
        body = body.replace("return XPool", "return MHAPool")
    base = "Base" if factory == "inherited" else "SRTPlatform"
    return ("from sglang.srt.platforms.interface import SRTPlatform\nfrom sglang.srt.mem_cache.pool import MHAPool\n\n\n"
            "class XPool(MHAPool):\n    def set_kv_buffer(self, layer, loc, k, v):\n        return None\n\n\n"
            f"{before}class XPlatform({base}):\n{body}")


@pytest.fixture(scope="module", params=sorted(HOLDERS))
def upstreams(request, tmp_path_factory):
    files = HOLDERS[request.param]
    old = {path: text.format(kw="") for path, text in files.items()}
    new = {path: text.format(kw=", dcp_kv_mask=mask") for path, text in files.items()}
    common = {"sglang/srt/mem_cache/__init__.py": "", "sglang/srt/model_executor/__init__.py": ""}
    return upstream_pair(tmp_path_factory, old={**common, **old, "sglang/srt/mem_cache/pool.py": POOL.format(new="")},
                         new={**common, **new, "sglang/srt/mem_cache/pool.py": POOL.format(new=", dcp_kv_mask=None")})


def _finding(root, upstream) -> tuple[int, dict]:
    """(exit code, the override's finding; an empty one when the override matches its base)."""
    code, doc = check(root, upstream)
    return code, next((f for f in doc["findings"] if f["target"] == TARGET), {"breaking": False})


@pytest.mark.parametrize("factory", sorted(FACTORIES))
def test_an_override_on_the_class_a_platform_factory_returns_meets_upstreams_calls(upstreams, tmp_path, factory, request):
    old, new = upstreams
    root = plugin(tmp_path, {"pyproject.toml": pyproject(platforms={"x": "p.platform:XPlatform"}), "p/__init__.py": "",
                             "p/platform.py": _platform(factory)})
    code, finding = _finding(root, new)
    assert finding["breaking"] and code == 1, finding
    assert "unexpected keyword argument 'dcp_kv_mask'" in finding["detail"]
    assert "current_platform.get_mha_kv_pool_cls()" in finding["detail"]  # how the call was reached
    # the run-time condition the failing call runs under: its own `if`, or its **kwargs binding's
    condition = {"returned": "when `self.dcp_size > 1`", "dataclass": "when `dcp`", "in_place": "TypeError on that path"}
    assert condition[request.node.callspec.params["upstreams"]] in finding["detail"], finding["detail"]
    # on the release whose calls pass nothing new, the same override is fine
    code, finding = _finding(root, old)
    assert not finding["breaking"] and code == 0, finding


def test_a_platform_returning_upstreams_own_class_leaves_the_override_to_other_calls(upstreams, tmp_path):
    """The plugin's pool class exists but its platform hands upstream's own MHAPool: upstream
    never builds the plugin's class, so those calls do not reach its override."""
    _, new = upstreams
    root = plugin(tmp_path, {"pyproject.toml": pyproject(platforms={"x": "p.platform:XPlatform"}), "p/__init__.py": "",
                             "p/platform.py": _platform("name", returns_own=False)})
    _, finding = _finding(root, new)
    assert not finding["breaking"], finding


VLLM_COMM = """
class DeviceCommunicatorBase:
    def __init__(self, cpu_group, device=None):
        self.cpu_group = cpu_group

    def all_gather(self, input_, dim=-1{new}):
        return input_
"""
VLLM_STATE = """
from vllm.platforms import current_platform
from vllm.utils import resolve_obj_by_qualname


class GroupCoordinator:
    def __init__(self, group, use_device_communicator):
        self.device_communicator = None
        if use_device_communicator:
            device_comm_cls = resolve_obj_by_qualname(current_platform.get_device_communicator_cls())
            self.device_communicator = device_comm_cls(cpu_group=group)

    def all_gather(self, input_, dim=-1):
        return self.device_communicator.all_gather(input_, dim{kw})
"""


@pytest.mark.parametrize("spelling", ["qualname", "colon"])
def test_a_vllm_platform_naming_its_class_by_qualified_name(tmp_path, spelling):
    """vLLM asks the platform for a class's qualified name and resolves it
    (`resolve_obj_by_qualname(current_platform.get_device_communicator_cls())`): an override on
    the class the plugin names there meets GroupCoordinator's calls."""
    from knowledge_support import VLLM_PLATFORM_TREE, harness_json, write_tree

    trees = {}
    for version, new, kw in (("old", "", ""), ("new", ", *, async_op=False", ", async_op=True")):
        trees[version] = tmp_path / version
        write_tree(trees[version], {
            **VLLM_PLATFORM_TREE, "vllm/version.py": "__version__ = '0.9.0'\n",
            "vllm/utils/__init__.py": "def resolve_obj_by_qualname(qualname):\n    return qualname\n",
            "vllm/distributed/__init__.py": "", "vllm/distributed/device_communicators/__init__.py": "",
            "vllm/distributed/device_communicators/base.py": VLLM_COMM.format(new=new),
            "vllm/distributed/parallel_state.py": VLLM_STATE.format(kw=kw),
        })
    name = "p.comm.XComm" if spelling == "qualname" else "p.comm:XComm"
    write_tree(tmp_path / "plugin", {
        "pyproject.toml": '[project]\nname = "p"\nversion = "0.1"\n[project.entry-points."vllm.platform_plugins"]\nx = "p:register"\n',
        "p/__init__.py": "def register():\n    return 'p.platform.XPlatform'\n",
        "p/comm.py": ("from vllm.distributed.device_communicators.base import DeviceCommunicatorBase\n\n\n"
                      "class XComm(DeviceCommunicatorBase):\n    def all_gather(self, input_, dim=-1):\n        return input_\n"),
        "p/platform.py": ("from vllm.platforms.interface import Platform\n\n\nclass XPlatform(Platform):\n"
                          f"    @classmethod\n    def get_device_communicator_cls(cls) -> str:\n        return {name!r}\n"),
    })
    target = "vllm.distributed.device_communicators.base.DeviceCommunicatorBase.all_gather"
    for version, breaking in (("new", True), ("old", False)):
        code, doc = harness_json("check", "--plugin", str(tmp_path / "plugin"), "--upstream", str(trees[version]))
        finding = next((f for f in doc["findings"] if f["target"] == target), {"breaking": False, "detail": ""})
        assert finding["breaking"] is breaking and code == int(breaking), (version, finding)
        if breaking:
            assert "unexpected keyword argument 'async_op'" in finding["detail"] and "get_device_communicator_cls()" in finding["detail"]
