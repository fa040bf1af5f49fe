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


# no subclass, hook or annotation (twenty-fourth set F21-d2): a walk of the loaded model narrows
# each module with a test of its class; in the narrowed code the module is an instance of that
# class, its reads judged as on a parameter annotated with it: registered members are found, a
# name nothing sets is missing. Narrowed to a plugin class (or rebound) it is not the layer.
# (`case C() as x:` names the narrowed subject x: test_a_match_as_capture_is_narrowed_too)
NARROWED = {
    "if_isinstance": "if isinstance(module, ReplicatedLinear):\n            {read}",
    "elif_type_is": "if module is None:\n            continue\n        elif type(module) is ReplicatedLinear:\n            {read}",
    "not_isinstance_continue": "if not isinstance(module, ReplicatedLinear):\n            continue\n        {read}",
    "isinstance_and_flag": "if isinstance(module, ReplicatedLinear) and packed:\n            {read}",
    # a class pattern (twenty-fifth set F21-e2): `case C():` is `isinstance(subject, C)` (PEP 634)
    "match_class_pattern": "match module:\n            case None:\n                pass\n            case ReplicatedLinear():\n                {read}",
    # an assertion of the class, typing.cast (twenty-sixth set F21-f1, F21-f2)
    "assert_isinstance": "assert isinstance(module, ReplicatedLinear), type(module)\n        {read}",
    "typing_cast": "module = typing.cast(ReplicatedLinear, module)\n        {read}",
    "typing_cast_of_a_string": "module = cast('ReplicatedLinear', module)\n        {read}",
}


@pytest.mark.parametrize("spelling", sorted(NARROWED))
def test_members_read_on_a_module_narrowed_by_its_class(upstreams, tmp_path, spelling):
    old, _ = upstreams

    def walk(*lines: str) -> str:  # the spelling's narrowing around `lines`, at the read's indent
        head = NARROWED[spelling].split("{read}")[0]
        indent = " " * (len(head) - len(head.rstrip(" ")))
        return NARROWED[spelling].format(read=("\n" + indent).join(lines))
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"nw": "nw:register"}),
        "nw/__init__.py": f"""
import typing
from typing import cast

from sglang.srt.layers.linear import ReplicatedLinear


class DevLinear(ReplicatedLinear):
    pass


def pack(model, packed=True):
    for module in model.modules():
        {walk("module.weight.data = module.weight.data.t()")}


def first_scale(model, packed=True):
    for _name, module in model.named_modules():
        {walk("return module.wieght")}


def own(model, packed=True):
    for module in model.modules():
        {walk("if isinstance(module, DevLinear):", "    return module.dev_scale")}
        {walk("module = model.other", "return module.other_scale")}


def register():
    return pack, first_scale, own
""",
    })
    code, doc = check(root, old)
    fields = {f["target"].rsplit(".", 1)[-1]: f["status"] for f in doc["findings"] if f["kind"] == "field"}
    assert fields.get("wieght") == "missing" and code == 1, fields
    assert "weight" not in fields or fields["weight"] == "ok", fields
    assert "dev_scale" not in fields and "other_scale" not in fields, fields


# narrowed by a comprehension's filter (thirty-first set F21-k2): `isinstance(m, C)` among a
# generator's `if`s makes m a C in the element (a sum over a generator, a dict comprehension),
# and `next((m for m in … if isinstance(m, C)), None)` is a C (or the default)
COMPREHENDED = {
    "sum_over_a_generator": "return sum(m.{attr}.numel() for m in model.modules() if isinstance(m, ReplicatedLinear))",
    "dict_comprehension_two_filters": "return {{n: m.{attr} for n, m in model.named_modules() if m is not None if isinstance(m, ReplicatedLinear)}}",
    "next_of_a_generator": "first = next((m for m in model.modules() if isinstance(m, ReplicatedLinear)), None)\n    return first.{attr} if first is not None else None",
}


@pytest.mark.parametrize("spelling", sorted(COMPREHENDED))
def test_members_read_on_a_module_a_comprehension_narrows(upstreams, tmp_path, spelling):
    old, _ = upstreams
    body = COMPREHENDED[spelling]
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"nw": "nw:register"}),
        "nw/__init__.py": ("from sglang.srt.layers.linear import ReplicatedLinear\n\n\n"
                           f"def sizes(model):\n    {body.format(attr='weight')}\n\n\n"
                           f"def typo(model):\n    {body.format(attr='wieght')}\n\n\n"
                           "def register():\n    return sizes, typo\n"),
    }, name=spelling)
    code, doc = check(root, old)
    fields = {f["target"].rsplit(".", 1)[-1]: f["status"] for f in doc["findings"] if f["kind"] == "field"}
    assert fields.get("wieght") == "missing" and code == 1, fields
    assert "weight" not in fields or fields["weight"] == "ok", fields


def test_a_match_as_capture_is_narrowed_too(upstreams, tmp_path):
    old, _ = upstreams
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"nw": "nw:register"}),
        "nw/__init__.py": """
from sglang.srt.layers.linear import ReplicatedLinear


def first_scale(model):
    for module in model.modules():
        match module:
            case ReplicatedLinear() as layer:
                return layer.weight, layer.wieght


def register():
    return first_scale
""",
    })
    code, doc = check(root, old)
    fields = {f["target"].rsplit(".", 1)[-1]: f["status"] for f in doc["findings"] if f["kind"] == "field"}
    assert fields.get("wieght") == "missing" and fields.get("weight", "ok") == "ok" and code == 1, fields


# read by a computed name (twenty-fifth set F21-e1): `getattr(self, f"{p}_weight")` in a pass over
# a folded table is the read `self.w13_weight` of that pass -- in a comprehension over a class
# constant, a loop over a module constant with `+`, a dict comprehension with str.format
COMPUTED = {
    "fstring_in_a_comprehension": "return [getattr(self, f'{{p}}_{suffix}') for p in self._PROJ]",
    "concatenation_in_a_loop": "out = []\n        for p in PROJ:\n            out.append(getattr(self, p + '_' + '{suffix}'))\n        return out",
    "format_in_a_dict_comprehension": "return {{p: getattr(self, '{{}}_{{}}'.format(p, '{suffix}')) for p in type(self)._PROJ}}",
}


@pytest.mark.parametrize("spelling", sorted(COMPUTED))
def test_members_read_by_a_computed_name(upstreams, tmp_path, spelling):
    old, _ = upstreams
    read = COMPUTED[spelling]
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"cm": "cm:register"}),
        "cm/__init__.py": f"""
from sglang.srt.layers.moe import FusedMoE

PROJ = ("w13", "w2")


class FoldedMoE(FusedMoE):
    _PROJ = PROJ

    def weights(self):
        {read.format(suffix="weight")}

    def typo(self):
        {read.format(suffix="wieght")}


def register():
    return FoldedMoE.weights, FoldedMoE.typo
""",
    })
    code, doc = check(root, old)
    members = {f["target"].rsplit(".", 1)[-1]: f["status"] for f in doc["findings"] if f["kind"] == "subclass"}
    assert "w13_weight" not in members and "w2_weight" not in members, members
    assert members.get("w13_wieght") in ("missing", "unknown") and members.get("w2_wieght") in ("missing", "unknown"), members


def test_the_narrowing_holds_in_its_branch_only(upstreams, tmp_path):
    # the else branch and what follows the if read an object of any class: nothing is said of it
    old, _ = upstreams
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"nw": "nw:register"}),
        "nw/__init__.py": """
from sglang.srt.layers.linear import ReplicatedLinear


def sizes(model):
    for module in model.modules():
        if isinstance(module, ReplicatedLinear):
            first = module.wieght
        else:
            first = module.else_scale
        last = module.after_scale
        match module:
            case ReplicatedLinear():
                pass
            case _:
                last = module.other_case_scale
    return first, last


def register():
    return sizes
""",
    })
    code, doc = check(root, old)
    fields = {f["target"].rsplit(".", 1)[-1]: f["status"] for f in doc["findings"] if f["kind"] == "field"}
    assert fields == {"wieght": "missing"} and code == 1, fields


# the middle link of a chain bound by a class pattern's keyword sub-pattern (thirtieth set V-j7):
# `case Config(scheduler_config=s):` binds s to the subject's attribute (the reference's "Class
# patterns"), typed as the field is declared; a method gone from that class is missing there
CONFIGS = """
    class SchedulerConfig:
        max_tokens: int = 0
        {verify}

    class Config:
        scheduler_config: SchedulerConfig
    """
CAPTURES = {
    "keyword_capture": "case Config(scheduler_config=s):",
    "keyword_class_pattern_as": "case Config(scheduler_config=SchedulerConfig() as s):",
    "keyword_capture_whole_as": "case Config(scheduler_config=s) as whole:",
}


@pytest.fixture(scope="module")
def config_upstreams(tmp_path_factory):
    return upstream_pair(tmp_path_factory, old={"sglang/srt/configs/dev.py": CONFIGS.format(verify="def verify(self):\n            return True")},
                         new={"sglang/srt/configs/dev.py": CONFIGS.format(verify="")})


@pytest.mark.parametrize("calls", [True, False], ids=["method", "field_only"])
@pytest.mark.parametrize("spelling", sorted(CAPTURES))
def test_a_name_a_class_pattern_captures_is_the_subjects_attribute(config_upstreams, tmp_path, spelling, calls):
    old, new = config_upstreams
    source = ("from sglang.srt.configs.dev import Config, SchedulerConfig\n\n\ndef setup(cfg):\n    match cfg:\n"
              f"        {CAPTURES[spelling]}\n            s.max_tokens = 4\n" + ("            s.verify()\n" if calls else "") + "\n\ndef register():\n    pass\n")
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"cp": "cp:register"}), "cp/__init__.py": source})
    code, doc = check(root, old)
    assert not [f for f in doc["findings"] if f["breaking"]] and code == 0, doc["findings"]
    code, doc = check(root, new)
    gone = [(f["target"], f["status"], f["breaking"]) for f in doc["findings"] if f["status"] != "ok"]
    assert gone == ([("sglang.srt.configs.dev.SchedulerConfig.verify", "missing", True)] if calls else []), doc["findings"]
    assert code == (1 if calls else 0)


# a chain through a plain @property of the plugin class (thirty-first set V-k7): its getter is one
# `return self.cfg.scheduler_config`, so `self.sched.verify()` reads that chain (a call, through a
# local, in a comprehension); a class that also sets `self.sched` itself says nothing of it
PROPERTY_CHAINS = {
    "called_on_the_property": "        self.sched.verify()\n",
    "through_a_local": "        sched = self.sched\n        sched.verify()\n",
    "in_a_comprehension": "        return [self.sched.verify() for _ in range(2)]\n",
}


@pytest.mark.parametrize("sets_it", [False, True], ids=["property_only", "also_set"])
@pytest.mark.parametrize("spelling", sorted(PROPERTY_CHAINS))
def test_a_chain_through_a_plugin_property_is_the_getters_chain(config_upstreams, tmp_path, spelling, sets_it):
    _, new = config_upstreams
    source = ("from sglang.srt.configs.dev import Config\n\n\nclass Runner:\n    def __init__(self, cfg: Config):\n        self.cfg = cfg\n"
              + ("        self.sched = None\n" if sets_it else "")
              + "\n    @property\n    def sched(self):\n        \"\"\"The scheduler settings.\"\"\"\n        return self.cfg.scheduler_config\n\n"
              "    def check(self):\n" + PROPERTY_CHAINS[spelling] + "\n\ndef register(cfg: Config):\n    Runner(cfg).check()\n")
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"cp": "cp:register"}), "cp/__init__.py": source}, name=f"{spelling}-{sets_it}")
    code, doc = check(root, new)
    gone = {(f["target"], f["status"], f["breaking"]) for f in doc["findings"] if f["target"].endswith(".verify")}
    assert gone == (set() if sets_it else {("sglang.srt.configs.dev.SchedulerConfig.verify", "missing", True)}), doc["findings"]
