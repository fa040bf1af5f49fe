"""Which upstream calls of a base method can land on a plugin's override (issue 34: "right on
plugins nobody showed you"). Two rules, each held on three spellings of how upstream declares
what the receiver holds (a class-body annotation on self, a parameter annotation, a function's
return annotation):

- a call through a receiver declared to hold a class the plugin class does not derive from never
  reaches its override (vLLM 0.18's LoRA `self.base_layer.forward(x)` on a VocabParallelEmbedding
  never runs a rotary embedding's `forward`, though both derive from CustomOp);
- a call upstream's own base method cannot take either is made on other objects (vLLM 0.18's
  `self.quant_method.apply(layer, x, bias)`, typed with the quantisation base, never lands on a
  fused-MoE method, whose own `apply` takes topk weights and ids): no evidence against the
  override — while the calls that do reach it still decide."""

from __future__ import annotations

import pytest
from kinds_support import check, plugin, pyproject, upstream_pair

OPS = """
class CustomOp:
    def forward(self, *args, **kwargs):
        return self.forward_native(*args, **kwargs)


class Embedding(CustomOp):
    def forward_native(self, x):
        return x


class Rotary(CustomOp):
    def forward_native(self, positions, query, key):
        return query, key


class QuantizeMethodBase:
    def apply(self, layer, *args, **kwargs):
        raise NotImplementedError


class LinearMethod(QuantizeMethodBase):
    def apply(self, layer, x, bias=None):
        return x


class MoEMethod(QuantizeMethodBase):
    def apply(self, layer, x, topk_weights, topk_ids):
        return x
"""
# how the LoRA-like caller knows what its receiver holds; {recv} is the typed receiver
CALLERS = {
    "self_annotation": """
        from sglang.srt.layers.ops import Embedding, QuantizeMethodBase


        class Wrapper:
            base_layer: Embedding
            quant_method: QuantizeMethodBase

            def __init__(self, base_layer, quant_method):
                self.base_layer = base_layer
                self.quant_method = quant_method

            def run(self, x, bias):
                self.quant_method.apply(self, x, bias)
                return self.base_layer.forward(x)
        """,
    "parameter_annotation": """
        from sglang.srt.layers.ops import Embedding, QuantizeMethodBase


        def run(layer: Embedding, method: QuantizeMethodBase, x, bias):
            method.apply(layer, x, bias)
            return layer.forward(x)
        """,
    "return_annotation": """
        from sglang.srt.layers.ops import Embedding, QuantizeMethodBase


        def embedding() -> Embedding:
            return Embedding()


        def method() -> QuantizeMethodBase:
            return None


        def run(x, bias):
            quant = method()
            quant.apply(None, x, bias)
            return embedding().forward(x)
        """,
}
# the one caller that does hold a fused-MoE method, with the keywords it passes
MOE = """
from sglang.srt.layers.ops import MoEMethod


class FusedMoE:
    quant_method: MoEMethod

    def __init__(self, quant_method):
        self.quant_method = quant_method

    def forward(self, x, w, ids):
        return self.quant_method.apply(self, x, topk_weights=w, topk_ids=ids)
"""


@pytest.fixture(scope="module", params=sorted(CALLERS))
def upstream(request, tmp_path_factory):
    files = {"sglang/srt/layers/ops.py": OPS, "sglang/srt/layers/caller.py": CALLERS[request.param],
             "sglang/srt/layers/moe.py": MOE}
    return upstream_pair(tmp_path_factory, old=files, new=files)[1]


def _findings(tmp_path, upstream, classes: str) -> dict[str, dict]:
    platform = ("from sglang.srt.platforms.interface import SRTPlatform\n"
                "from sglang.srt.layers.ops import MoEMethod, Rotary\n\n\n" + classes +
                "\n\nclass XPlatform(SRTPlatform):\n    pass\n")
    root = plugin(tmp_path, {"pyproject.toml": pyproject(platforms={"x": "p.platform:XPlatform"}), "p/__init__.py": "",
                             "p/platform.py": platform})
    _, doc = check(root, upstream)
    return {f["target"].rsplit(".", 2)[-2] + "." + f["target"].rsplit(".", 1)[-1]: f for f in doc["findings"]}


def test_a_call_through_a_receiver_typed_with_a_sibling_class_does_not_reach_the_override(tmp_path, upstream):
    findings = _findings(tmp_path, upstream, "class XRotary(Rotary):\n    def forward(self, positions, query, key):\n"
                                             "        return query, key\n")
    # judged against CustomOp.forward(self, *args, **kwargs), which takes anything: with no call
    # that can reach it left, the override is fine (no finding)
    assert "Rotary.forward" not in findings, findings["Rotary.forward"]["detail"]


def test_a_call_upstreams_own_method_cannot_take_is_no_evidence_against_the_override(tmp_path, upstream):
    findings = _findings(tmp_path, upstream, "class XMoE(MoEMethod):\n"
                                             "    def apply(self, layer, x, topk_weights, topk_ids, scale=1.0, *, fused):\n"
                                             "        return x\n")
    # the override adds a required keyword the MoE caller does not pass: that call decides
    finding = findings["MoEMethod.apply"]
    assert finding["breaking"] and "moe.py" in finding["detail"], finding["detail"]
    # keyword-only topk arguments: the MoE caller passes them by keyword; only the linear-shaped
    # calls (three positional), which MoEMethod.apply cannot take either, would fail
    findings = _findings(tmp_path, upstream, "class XMoE(MoEMethod):\n"
                                             "    def apply(self, layer, x, *, topk_weights, topk_ids):\n"
                                             "        return x\n")
    finding = findings["MoEMethod.apply"]
    assert not finding["breaking"], finding["detail"]
    assert "cannot take it either" in finding["detail"] and "moe.py" in finding["detail"], finding["detail"]
