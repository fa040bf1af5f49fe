"""A plugin object put in an attribute of an instance upstream built is what that instance's
methods call through `self.<attr>` (issue 34, item 1: "calls through nn.Module.__call__"; vLLM
variant t9): `layer.mlp = Fused(layer.mlp)` for `layer` narrowed by `isinstance` or annotated,
or `layer.mlp.__class__ = Fused`. Upstream's `self.mlp(x)` runs Fused.forward (torch's
nn.Module.__call__) and `self.mlp.warm(x)` Fused.warm: a call that cannot bind is a TypeError on
that path; one that binds is fine."""

from __future__ import annotations

import pytest
from kinds_support import check, plugin, pyproject, upstream_pair

TARGET = "sglang.srt.models.llama.DecoderLayer.mlp"
LLAMA = ("from torch import nn\n\n\nclass MLP(nn.Module):\n    def forward(self, x{param}):\n        return x\n\n    def warm(self, x):\n        return x\n\n\n"
         "class DecoderLayer(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.mlp = MLP()\n\n"
         "    def forward(self, hidden_states, residual):\n        self.mlp.warm(hidden_states{kw})\n        return self.mlp(hidden_states{kw}), residual\n\n\n"
         "class Model(nn.Module):\n    def __init__(self, n):\n        super().__init__()\n        self.layers = nn.ModuleList([DecoderLayer() for _ in range(n)])\n")

INIT_WRAPPER = "_upstream_init = DecoderLayer.__init__\n\n\ndef _init(self, *args, **kwargs):\n    _upstream_init(self, *args, **kwargs)\n    self.mlp = Fused(self.mlp)\n\n\n"

# how the plugin puts its object in place
PLACINGS = {
    "isinstance_narrowed": ("def fuse(model):\n    for layer in model.layers:\n        if isinstance(layer, DecoderLayer):\n"
                            "            layer.mlp = Fused(layer.mlp)\n"),
    "annotated_parameter": "def fuse_one(layer: DecoderLayer) -> None:\n    layer.mlp = Fused(layer.mlp)\n",
    "reclassed": ("def fuse(model):\n    for layer in model.layers:\n        if isinstance(layer, llama.DecoderLayer):\n"
                  "            layer.mlp.__class__ = Fused\n"),
    # in a function the plugin puts on the class as its __init__ (twenty-fourth set V-d4), or in an
    # AFTER hook of that __init__: its `self` is each instance upstream builds
    "init_put_on_the_class": INIT_WRAPPER + "DecoderLayer.__init__ = _init\n",
    "init_set_by_setattr": INIT_WRAPPER + "setattr(llama.DecoderLayer, '__init__', _init)\n",
    "after_hook_of_init": ("from sglang.srt.plugins.hook_registry import HookRegistry, HookType\n\n\n"
                           "def _after_init(result, self, *args, **kwargs):\n    self.mlp = Fused(self.mlp)\n    return result\n\n\n"
                           "HookRegistry.register('sglang.srt.models.llama.DecoderLayer.__init__', _after_init, HookType.AFTER)\n"),
}
FUSED = {
    # (the plugin class, whether an upstream call through self.mlp fails on the new release)
    "fits_both": ("class Fused(nn.Module):\n    def __init__(self, inner=None):\n        super().__init__()\n\n"
                  "    def forward(self, x, **kwargs):\n        return x\n\n    def warm(self, x, **kwargs):\n        return x\n", False),
    "forward_needs_residual": ("class Fused(nn.Module):\n    def __init__(self, inner=None):\n        super().__init__()\n\n"
                               "    def forward(self, x, residual):\n        return x\n", True),
    "warm_lacks_the_keyword": ("class Fused(nn.Module):\n    def __init__(self, inner=None):\n        super().__init__()\n\n"
                               "    def forward(self, x, **kwargs):\n        return x\n\n    def warm(self, x):\n        return x\n", True),
}


@pytest.fixture(scope="module")
def upstreams(tmp_path_factory):
    return upstream_pair(tmp_path_factory, old={"sglang/srt/models/llama.py": LLAMA.format(kw="", param="")},
                         new={"sglang/srt/models/llama.py": LLAMA.format(kw=", skip=True", param=", skip=False")})


def _placed(tmp_path, placing: str, fused: str) -> object:
    return plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"p": "p:register"}),
        "p/__init__.py": ("from torch import nn\n\nfrom sglang.srt.models import llama\nfrom sglang.srt.models.llama import DecoderLayer\n\n\n"
                          + fused + "\n\n" + PLACINGS[placing] + "\n\ndef register():\n    return None\n"),
    })


@pytest.mark.parametrize("placing", sorted(PLACINGS))
@pytest.mark.parametrize("fused", sorted(FUSED))
def test_a_plugin_object_placed_in_an_upstream_instance_is_judged_against_the_calls_it_gets(upstreams, tmp_path, placing, fused):
    old, new = upstreams
    source, breaks = FUSED[fused]
    root = _placed(tmp_path, placing, source)
    code, doc = check(root, new)
    (found,) = [f for f in doc["findings"] if f["target"] == TARGET and f["kind"] == "patch"]
    assert found["breaking"] is breaks, found
    if breaks:
        assert found["status"] == "signature_changed" and "llama.py" in found["detail"] and code == 1
    else:
        assert found["status"] == "ok" and code == 0, doc["findings"]


def test_the_residual_forward_fails_on_the_old_release_too(upstreams, tmp_path):
    # the call upstream makes is `self.mlp(hidden_states)` on both: a forward needing residual never binds
    old, _ = upstreams
    code, doc = check(_placed(tmp_path, "isinstance_narrowed", FUSED["forward_needs_residual"][0]), old)
    (found,) = [f for f in doc["findings"] if f["target"] == TARGET]
    assert found["breaking"] and "residual" in found["detail"] and code == 1


def test_a_function_taking_self_that_nothing_puts_on_a_class_places_nothing(upstreams, tmp_path):
    _, new = upstreams
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"p": "p:register"}),
        "p/__init__.py": ("from torch import nn\n\nfrom sglang.srt.models.llama import DecoderLayer\n\n\n" + FUSED["forward_needs_residual"][0]
                          + "\n\n" + INIT_WRAPPER + "\ndef register():\n    return None\n"),
    })
    code, doc = check(root, new)
    assert not [f for f in doc["findings"] if f["target"] == TARGET] and code == 0, doc["findings"]


def test_an_object_put_on_something_else_is_no_placement(upstreams, tmp_path):
    # not narrowed to an upstream class: what `layer` holds is not known, nothing is claimed
    _, new = upstreams
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"p": "p:register"}),
        "p/__init__.py": ("from torch import nn\n\nfrom sglang.srt.models import llama  # noqa: F401\n\n\n" + FUSED["forward_needs_residual"][0]
                          + "\n\ndef fuse(model):\n    for layer in model.layers:\n        layer.mlp = Fused(layer.mlp)\n\n\ndef register():\n    return None\n"),
    })
    code, doc = check(root, new)
    assert not [f for f in doc["findings"] if f["target"] == TARGET] and code == 0, doc["findings"]


# an instance of the upstream class itself re-classed (vLLM variant s7): narrowed by `type(x) is
# C`, `isinstance`, or annotated; the calls upstream makes on the instances it builds of C
# (`self.mlp(x)`, `self.mlp.warm(x)` for `self.mlp = MLP()`) run the plugin class's methods
RECLASSINGS = {
    "type_is": ("def fuse(model):\n    for layer in model.layers:\n        mlp = getattr(layer, 'mlp', None)\n"
                "        if type(mlp) is llama.MLP:\n            mlp.__class__ = Fused\n"),
    "isinstance": "def fuse(model):\n    for layer in model.layers:\n        mlp = layer.mlp\n        if isinstance(mlp, llama.MLP):\n            mlp.__class__ = Fused\n",
    "annotated": "def fuse_one(mlp: llama.MLP) -> None:\n    mlp.__class__ = Fused\n",
}


@pytest.mark.parametrize("reclassing", sorted(RECLASSINGS))
@pytest.mark.parametrize("fused", sorted(FUSED))
def test_an_upstream_instance_re_classed_is_judged_against_the_calls_on_those_instances(upstreams, tmp_path, reclassing, fused):
    _, new = upstreams
    source, breaks = FUSED[fused]
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"p": "p:register"}),
        "p/__init__.py": ("from torch import nn\n\nfrom sglang.srt.models import llama\n\n\n" + source + "\n\n" + RECLASSINGS[reclassing]
                          + "\n\ndef register():\n    return None\n"),
    })
    code, doc = check(root, new)
    (found,) = [f for f in doc["findings"] if f["target"] == "sglang.srt.models.llama.MLP" and f["kind"] == "patch"]
    assert found["breaking"] is breaks, found
    assert code == (1 if breaks else 0), doc["findings"]


# a plugin subclass of the upstream class that puts its object in `self.mlp` itself (set 21 V-e4):
# the methods it inherits make their calls through self.mlp on it -- in __init__ after super(), in
# a helper method __init__ calls, in a plugin base's __init__; where the subclass overrides the
# calling method, upstream's never runs on it. The plugin builds the subclass (or puts it in
# upstream's place); a subclass nothing builds runs nothing.
SUBCLASSES = {
    "init_after_super": ("class Dev(DecoderLayer):\n    def __init__(self):\n        super().__init__()\n        self.mlp = Fused()\n", "Dev()", True),
    "helper_method": ("class Dev(DecoderLayer):\n    def __init__(self):\n        super().__init__()\n        self._swap()\n\n"
                      "    def _swap(self):\n        self.mlp = Fused(self.mlp)\n", "Dev()", True),
    "plugin_base_put_in_place": ("class _Base(DecoderLayer):\n    def __init__(self):\n        super().__init__()\n        self.mlp = Fused()\n\n\n"
                                 "class Dev(_Base):\n    pass\n", "setattr(llama, 'DecoderLayer', Dev)", True),
    "calling_method_overridden": ("class Dev(DecoderLayer):\n    def __init__(self):\n        super().__init__()\n        self.mlp = Fused()\n\n"
                                  "    def forward(self, hidden_states, residual):\n        return self.mlp(hidden_states, residual), residual\n", "Dev()", False),
    # built by a factory (set 22 V-d1): a static method of the subclass, a module function, a classmethod through cls
    "static_factory_method": ("class Dev(DecoderLayer):\n    def __init__(self):\n        super().__init__()\n        self.mlp = self._make(1)\n\n"
                              "    @staticmethod\n    def _make(n):\n        return Fused(n)\n", "Dev()", True),
    "module_factory": ("def make_mlp(inner):\n    return Fused(inner)\n\n\nclass Dev(DecoderLayer):\n    def __init__(self):\n"
                       "        super().__init__()\n        self.mlp = make_mlp(self.mlp)\n", "Dev()", True),
    "classmethod_factory": ("class Dev(DecoderLayer):\n    def __init__(self):\n        super().__init__()\n        self.mlp = type(self).make()\n\n"
                            "    @classmethod\n    def make(cls):\n        return Fused()\n", "Dev()", True),
    "never_built": ("class Dev(DecoderLayer):\n    def __init__(self):\n        super().__init__()\n        self.mlp = Fused()\n", "None", False),
    # the object upstream built re-classed in place (thirty-second set V-m4): `self.mlp.__class__ = Fused`
    "reclassed_in_place": ("class Dev(DecoderLayer):\n    def __init__(self):\n        super().__init__()\n        self.mlp.__class__ = Fused\n", "Dev()", True),
}


@pytest.mark.parametrize("spelling", sorted(SUBCLASSES))
def test_an_object_a_plugin_subclass_puts_in_self_gets_the_calls_of_the_methods_it_inherits(upstreams, tmp_path, spelling):
    _, new = upstreams
    subclass, made, breaks = SUBCLASSES[spelling]
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"p": "p:register"}),
        "p/__init__.py": ("from torch import nn\n\nfrom sglang.srt.models import llama\nfrom sglang.srt.models.llama import DecoderLayer\n\n\n"
                          + FUSED["forward_needs_residual"][0] + "\n\n" + subclass + f"\n\ndef register():\n    return {made}\n"),
    }, name=spelling)
    code, doc = check(root, new)
    placed = [f for f in doc["findings"] if f["target"] == TARGET and f["kind"] == "patch"]
    if breaks:
        assert [(f["status"], f["breaking"]) for f in placed] == [("signature_changed", True)], doc["findings"]
        assert "llama.py" in placed[0]["detail"] and code == 1
    else:
        assert not [f for f in placed if f["breaking"]] and code == 0, doc["findings"]


@pytest.mark.parametrize("placing", ["init_put_on_the_class", "after_hook_of_init", "isinstance_narrowed"])
def test_the_override_the_placed_object_runs_is_judged_with_those_calls(upstreams, tmp_path, placing):
    # Fused overrides upstream MLP.forward: the calls DecoderLayer makes through self.mlp run it,
    # so its own finding breaks with them (not "no upstream call found")
    _, new = upstreams
    fused = "class Fused(llama.MLP):\n    def __init__(self, inner=None):\n        super().__init__()\n\n    def forward(self, x):\n        return x\n"
    code, doc = check(_placed(tmp_path, placing, fused), new)
    override = next(f for f in doc["findings"] if f["target"] == "sglang.srt.models.llama.MLP.forward")
    assert override["breaking"] and "skip" in override["detail"] and code == 1, override


# plugin objects put in the ELEMENTS of what an upstream instance keeps (twenty-seventh set V-g4):
# `self.blocks = nn.ModuleList([DevBlock(…) for …])` in a plugin subclass, upstream's inherited
# forward walking `for blk in self.blocks: x = blk(x, …)`: each call runs DevBlock.forward
STACK = ("from torch import nn\n\n\nclass Block(nn.Module):\n    def forward(self, x{param}):\n        return x\n\n\n"
         "class Stack(nn.Module):\n    def __init__(self, n):\n        super().__init__()\n        self.blocks = nn.ModuleList([Block() for _ in range(n)])\n\n"
         "    def forward(self, x):\n        for blk in self.blocks:\n            x = blk(x{kw})\n        return x\n")
CONTAINERS = {
    "module_list_of_a_comprehension": "nn.ModuleList([DevBlock() for _ in range(n)])",
    "module_list_of_a_generator": "nn.ModuleList(DevBlock() for _ in range(n))",
    "list_display": "[DevBlock(), DevBlock()]",
}


@pytest.fixture(scope="module")
def stacks(tmp_path_factory):
    return upstream_pair(tmp_path_factory, old={"sglang/srt/models/stack.py": STACK.format(kw="", param="")},
                         new={"sglang/srt/models/stack.py": STACK.format(kw=", scale=2.0", param=", scale=1.0")})


@pytest.mark.parametrize("container", sorted(CONTAINERS))
@pytest.mark.parametrize("forward, breaks", [("x", True), ("x, **kwargs", False)])
def test_plugin_objects_put_in_the_elements_of_a_container_get_the_calls_on_its_elements(stacks, tmp_path, container, forward, breaks):
    old, new = stacks
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"p": "p:register"}),
        "p/__init__.py": ("from torch import nn\n\nfrom sglang.srt.models.stack import Block, Stack\n\n\n"
                          f"class DevBlock(Block):\n    def forward(self, {forward}):\n        return x\n\n\n"
                          f"class DevStack(Stack):\n    def __init__(self, n):\n        super().__init__(n)\n        self.blocks = {CONTAINERS[container]}\n\n\n"
                          "def register():\n    return DevStack(2)\n"),
    }, name=f"{container}-{breaks}")
    assert check(root, old)[0] == 0
    code, doc = check(root, new)
    placed = [f for f in doc["findings"] if f["target"] == "sglang.srt.models.stack.Stack.blocks" and f["kind"] == "patch"]
    assert [(f["status"], f["breaking"]) for f in placed] == [("signature_changed" if breaks else "ok", breaks)], doc["findings"]
    assert code == (1 if breaks else 0), doc["findings"]
    if breaks:
        assert "scale" in placed[0]["detail"] and "elements of" in placed[0]["detail"], placed[0]["detail"]
