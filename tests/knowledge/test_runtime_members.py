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

            def forward(self, x):
                return x
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
    "sglang/srt/layers/packed.py": """
        import torch

        def replace_parameter(layer, name, value):
            setattr(layer, name, torch.nn.Parameter(value, requires_grad=False))

        class PackedLayer(torch.nn.Module):
            def process_weights_after_loading(self):
                replace_parameter(self, "w_packed", self.raw)
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


# a member read before the same method writes it (fourteenth set F21-n2): the read runs first, so the
# plugin's own later `self.x = v` does not put x there; a write elsewhere, or one the read follows, does
FIRST_READS = {
    "read_then_write": ("cached = self._fp32\n        self._fp32 = self.weight\n        return cached", True),
    "tested_then_written": ("if self._fp32 is None:\n            self._fp32 = self.weight\n        return self._fp32", True),
    "chained_assignment": ("cached = self._fp32\n        cached = self._fp32 = self.weight.float()\n        return cached", True),
    "written_first": ("self._fp32 = self.weight\n        return self._fp32", False),
    "written_in_init": ("return self._fp32", False),
    "class_default": ("if self._spare is None:\n            self._spare = self.weight\n        return self._spare", False),
    "in_a_loop": ("for _ in range(2):\n            if getattr(self, 'x', None) is None or self._fp32 is None:\n                self._fp32 = self.weight\n"
                  "        return self._fp32", False),
}


@pytest.mark.parametrize("spelling", sorted(FIRST_READS))
def test_a_member_read_before_its_own_method_writes_it_is_missing(upstreams, tmp_path, spelling):
    old, _ = upstreams
    body, missing = FIRST_READS[spelling]
    init = "\n    def __init__(self, *args):\n        super().__init__(*args)\n        self._fp32 = None\n" if spelling == "written_in_init" else ""
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"pd": "pd:register"}),
        "pd/__init__.py": ("from sglang.srt.layers.linear import ReplicatedLinear\n\n\nclass CachedLinear(ReplicatedLinear):\n    _spare = None\n"
                           + init + f"\n    def fp32(self):\n        {body}\n\n\ndef register():\n    return CachedLinear.fp32\n"),
    })
    code, doc = check(root, old)
    members = {f["target"].rsplit(".", 1)[-1]: f for f in doc["findings"] if f["kind"] == "subclass"}
    if missing:
        assert members["_fp32"]["status"] == "missing" and members["_fp32"]["breaking"] and code == 1, members
    else:
        assert "_fp32" not in members and "_spare" not in members and code == 0, members


# what an upstream method sets through a helper it hands the instance and the name
# (`replace_parameter(self, "W_UV", …)`, vLLM's MLAAttention) is there for a plugin subclass's read,
# also one before its own write (tpu-inference's process_weights_after_loading)
def test_a_member_an_upstream_helper_sets_on_the_instance_is_not_missing(upstreams, tmp_path):
    old, _ = upstreams
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"pd": "pd:register"}),
        "pd/__init__.py": """
            from sglang.srt.layers.packed import PackedLayer


            class DevicePacked(PackedLayer):
                def process_weights_after_loading(self):
                    super().process_weights_after_loading()
                    staged = self.w_packed.float()
                    typo = self.w_pakced
                    self.w_packed = staged
                    return typo


            def register():
                return DevicePacked.process_weights_after_loading
            """,
    })
    code, doc = check(root, old)
    members = {f["target"].rsplit(".", 1)[-1]: f["status"] for f in doc["findings"] if f["kind"] == "subclass"}
    assert "w_packed" not in members and members.get("w_pakced") == "missing" and code == 1, members


# no subclass at all (twenty-third set F21-c2): the reads are on the hooked layer, the parameter of
# a hook on an upstream method named as its receiver (`self`): AROUND (original_fn, self, …),
# BEFORE (self, …), a hook kept in a table. Registered members are found, a name nothing sets
# is missing; a parameter named otherwise stays unread (no evidence of its class).
HOOKED = {
    "around": ("def _hook(original_fn, self, x):\n    return self.weight, self.wieght\n", "AROUND"),
    "before": ("def _hook(self, x):\n    print(self.weight.shape, self.wieght)\n", "BEFORE"),
    "replace_in_a_table": ("def _hook(self, x):\n    return (self.weight, self.wieght)\n\n\nTABLE = {'forward': _hook}\n", "REPLACE"),
}


@pytest.mark.parametrize("spelling", sorted(HOOKED))
def test_members_read_on_the_receiver_of_a_hook_on_an_upstream_method(upstreams, tmp_path, spelling):
    old, _ = upstreams
    body, kind = HOOKED[spelling]
    hook = "TABLE['forward']" if "TABLE" in body else "_hook"
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"hk": "hk:register"}),
        "hk/__init__.py": "from sglang.srt.plugins.hook_registry import HookRegistry, HookType\n\n\n" + body + f"""

def _other(original_fn, layer, x):
    return layer.wieght


def register():
    HookRegistry.register("sglang.srt.layers.linear.ReplicatedLinear.forward", {hook}, HookType.{kind})
    HookRegistry.register("sglang.srt.layers.linear.ReplicatedLinear.forward", _other, HookType.AROUND)
""",
    })
    code, doc = check(root, old)
    fields = {f["target"]: f for f in doc["findings"] if f["kind"] == "field"}
    assert "sglang.srt.layers.linear.ReplicatedLinear.weight" not in fields or fields["sglang.srt.layers.linear.ReplicatedLinear.weight"]["status"] == "ok"
    typo = fields["sglang.srt.layers.linear.ReplicatedLinear.wieght"]
    assert typo["status"] == "missing" and typo["file"] == "hk/__init__.py" and typo["line"] in (5, 6), typo
    assert [f["line"] for f in doc["findings"] if f["kind"] == "field" and f["line"] > 8] == [], doc["findings"]
    assert code == 1
