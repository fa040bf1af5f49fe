"""An upstream call that meets a plugin override only inside an upstream method the plugin's own
subclasses never run is undecided, not breaking (issue 34). vLLM 0.18's
`DefaultMoERunner.forward_impl_chunked` calls `self.quant_method.apply(layer=…, topk_weights=…)`,
but it is called only from `forward_impl`, which vllm-ascend's `AscendMoERunner` overrides: the
runners the plugin builds never make that call, and whether an upstream-built runner ever holds
the plugin's MoE method is not decided statically.

Three spellings of taking the method out (the subclass redefines it; redefines its only caller;
a plugin base redefines the caller's caller), and three where it still runs (a subclass that leaves
the path alone; one that redefines it but hands back through super(); no subclass at all): those
stay breaking."""

from __future__ import annotations

import pytest
from kinds_support import check, plugin, pyproject, upstream_pair

OPS = """
class MoEMethod:
    def apply(self, layer, x, topk_weights, topk_ids):
        return x
"""
RUNNER = """
from sglang.srt.layers.moe.ops import MoEMethod


class Runner:
    quant_method: MoEMethod

    def __init__(self, quant_method):
        self.quant_method = quant_method

    def forward(self, layer, x, w, ids):
        return self.forward_impl(layer, x, w, ids)

    def forward_impl(self, layer, x, w, ids):
        return self.forward_impl_chunked(layer, x, w, ids)

    def forward_impl_chunked(self, layer, x, w, ids):
        return self.quant_method.apply(layer=layer, x=x, topk_weights=w, topk_ids=ids)
"""
OVERRIDE = """
class XMoE(MoEMethod):
    def apply(self, layer, x, router_logits, top_k):
        return x
"""
RUNNERS = {
    "redefines_the_method": "class XRunner(Runner):\n    def forward_impl_chunked(self, layer, x, w, ids):\n"
                            "        return self.quant_method.apply(layer, x, w, ids)\n",
    "redefines_its_caller": "class XRunner(Runner):\n    def forward_impl(self, layer, x, w, ids):\n        return x\n",
    "base_redefines_the_callers_caller": "class XBase(Runner):\n    def forward(self, layer, x, w, ids):\n        return x\n\n\n"
                                         "class XRunner(XBase):\n    pass\n",
    # a subclass hands back through super(), to the plugin's own class, which does not hand on
    "super_to_the_plugins_own": "class XBase(Runner):\n    def forward(self, layer, x, w, ids):\n        return x\n\n\n"
                                "class XRunner(XBase):\n    def forward(self, layer, x, w, ids):\n"
                                "        return super().forward(layer, x, w, ids)\n",
}
TARGET = "sglang.srt.layers.moe.ops.MoEMethod.apply"


@pytest.fixture(scope="module")
def upstream(tmp_path_factory):
    files = {"sglang/srt/layers/moe/__init__.py": "", "sglang/srt/layers/moe/ops.py": OPS,
             "sglang/srt/layers/moe/runner.py": RUNNER}
    return upstream_pair(tmp_path_factory, old=files, new=files)[1]


def _finding(tmp_path, upstream, runner: str) -> dict:
    platform = ("from sglang.srt.platforms.interface import SRTPlatform\nfrom sglang.srt.layers.moe.ops import MoEMethod\n"
                "from sglang.srt.layers.moe.runner import Runner\n\n" + OVERRIDE + "\n\n" + runner +
                "\n\nclass XPlatform(SRTPlatform):\n    pass\n")
    root = plugin(tmp_path, {"pyproject.toml": pyproject(platforms={"x": "p.platform:XPlatform"}), "p/__init__.py": "",
                             "p/platform.py": platform})
    _, doc = check(root, upstream)
    return next(f for f in doc["findings"] if f["target"] == TARGET)


@pytest.mark.parametrize("runner", sorted(RUNNERS))
def test_a_call_in_a_method_the_plugins_own_subclasses_never_run_is_undecided(tmp_path, upstream, runner):
    finding = _finding(tmp_path, upstream, RUNNERS[runner])
    assert not finding["breaking"], finding
    assert "Runner.forward_impl_chunked never runs on the plugin's own p.platform.X" in finding["detail"], finding["detail"]
    assert "runner.py" in finding["detail"]  # the call it is about


@pytest.mark.parametrize("runner", ["", "class XRunner(Runner):\n    def helper(self):\n        return None\n",
                                    "class XRunner(Runner):\n    def forward_impl_chunked(self, layer, x, w, ids):\n"
                                    "        return super().forward_impl_chunked(layer, x, w, ids)\n"],
                         ids=["no_subclass", "subclass_leaving_the_path", "redefined_handing_back_through_super"])
def test_a_call_in_a_method_that_still_runs_stays_breaking(tmp_path, upstream, runner):
    finding = _finding(tmp_path, upstream, runner)
    assert finding["breaking"], finding
    assert "unexpected keyword argument 'topk_weights'" in finding["detail"], finding["detail"]
