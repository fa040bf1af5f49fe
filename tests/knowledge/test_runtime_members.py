"""Members set at run time: a layer whose method hands `self` to another object (a quant
method's create_weights(layer, …)) gets the parameters that code registers on it
(`layer.register_parameter("weight", …)`, `setattr(layer, "w13_weight", …)`). Those names are
not `missing`, and a computed `setattr(self, name, …)` in the layer does not turn them into
`unknown`; a name nothing registers still is (issue 18 kind 4)."""

from __future__ import annotations

import pytest
from kinds_support import check, plugin, pyproject, upstream_pair

LAYERS = {
    "sglang/srt/layers/linear.py": """
        import torch

        class ReplicatedLinear(torch.nn.Module):
            def __init__(self, input_size, output_size, quant_method):
                super().__init__()
                self.quant_method = quant_method
                self.quant_method.create_weights(self, input_size, output_size)
        """,
    "sglang/srt/layers/quantization/unquant.py": """
        import torch

        class UnquantizedLinearMethod:
            def create_weights(self, layer, input_size, output_size):
                weight = torch.nn.Parameter(torch.empty(output_size, input_size))
                layer.register_parameter("weight", weight)

        class UnquantizedFusedMoEMethod:
            def create_weights(self, layer, num_experts):
                layer.register_parameter("w13_weight", None)
                setattr(layer, "w2_weight", None)
        """,
    "sglang/srt/layers/moe.py": """
        import torch

        class FusedMoE(torch.nn.Module):
            def __init__(self, quant_method):
                super().__init__()
                quant_method.create_weights(layer=self, num_experts=8)
                for name in ("a", "b"):
                    setattr(self, name, None)

        class Plain(torch.nn.Module):
            def __init__(self):
                super().__init__()
        """,
}


@pytest.fixture(scope="module")
def upstreams(tmp_path_factory):
    return upstream_pair(tmp_path_factory, old=LAYERS, new=LAYERS)


def test_members_registered_by_the_code_a_layer_hands_itself_to(upstreams, tmp_path):
    old, _ = upstreams
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"pd": "pd:register"}),
        "pd/__init__.py": """
            from sglang.srt.layers.linear import ReplicatedLinear
            from sglang.srt.layers.moe import FusedMoE, Plain


            class PackedLinear(ReplicatedLinear):
                def packed(self):
                    return self.weight.t()

                def typo(self):
                    return self.wieght


            class FoldedMoE(FusedMoE):
                def sizes(self):
                    return self.w13_weight, self.w2_weight

                def typo(self):
                    return self.w31_weight


            class OwnLayer(Plain):
                def get(self):
                    return self.weight


            def register():
                # the plugin uses them (a method nothing names cannot fail)
                return PackedLinear.typo, FoldedMoE.typo, OwnLayer.get
            """,
    })
    code, doc = check(root, old)
    members = {(f["target"].rsplit(".", 1)[-1], f["line"]): f["status"] for f in doc["findings"] if f["kind"] == "subclass"}
    assert ("weight", 7) not in members and ("w13_weight", 15) not in members and ("w2_weight", 15) not in members, members
    assert members[("wieght", 10)] == "missing"
    assert members[("w31_weight", 18)] in ("missing", "unknown")
    # a layer that hands itself to nothing gets nothing registered
    assert members[("weight", 23)] == "missing"
    assert code == 1


# a member read where the statement writes through it (F21 variant p1): `self.x.data *= s`, `self.x[i] = v`,
# `self.x.y = v` read x first; only `self.x = v` (or `self.x += v`) binds x on the class
READS_THROUGH = {
    "augmented_attribute": "self.{name}.data *= 2",
    "item_store": "self.{name}[0] = 1",
    "attribute_store": "self.{name}.requires_grad = False",
}


@pytest.mark.parametrize("spelling", sorted(READS_THROUGH))
def test_a_write_through_a_member_reads_it(upstreams, tmp_path, spelling):
    old, _ = upstreams
    statement = READS_THROUGH[spelling]
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"pd": "pd:register"}),
        "pd/__init__.py": f"""
            from sglang.srt.layers.linear import ReplicatedLinear


            class ScaledLinear(ReplicatedLinear):
                def fold(self):
                    {statement.format(name="weight")}

                def typo(self):
                    {statement.format(name="weights")}


            def register():
                return ScaledLinear.fold, ScaledLinear.typo
            """,
    })
    code, doc = check(root, old)
    members = {f["target"].rsplit(".", 1)[-1]: f["status"] for f in doc["findings"] if f["kind"] == "subclass"}
    assert "weight" not in members and members.get("weights") == "missing" and code == 1, members
