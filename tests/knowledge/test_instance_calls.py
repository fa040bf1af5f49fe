"""An override of a class the plugin rebinds is judged against the calls upstream makes on the
instances it builds of that class (issue 34, item 1: "calls through nn.Module.__call__"):
vllm-ascend sets `deepseek_mtp.DeepSeekMultiTokenPredictorLayer` to its own subclass, whose
`forward` upstream runs as `self.layers[str(i)](…)`. The instance kept on `self`, in a
ModuleDict/comprehension walked by a loop, or in a local variable; the plugin rebinding the
name by assignment, through an alias, or with setattr; the method called through
`nn.Module.__call__` or by name. Without the rebinding upstream builds its own class: no call
of those reaches the override."""

from __future__ import annotations

import pytest
from kinds_support import check, plugin, pyproject, upstream_pair

LAYER = "sglang.srt.models.mtp.Layer"

OLD_LAYER = ("from itertools import islice\n\nfrom torch import nn\n\n\nclass Layer(nn.Module):\n    def forward(self, x, step=0):\n        return x\n\n"
             "    def warm(self, x):\n        return x\n\n\n")
NEW_LAYER = ("from itertools import islice\n\nfrom torch import nn\n\n\nclass Layer(nn.Module):\n    def forward(self, x, step=0, *, skip=False):\n        return x\n\n"
             "    def warm(self, x, *, skip=False):\n        return x\n\n\n")
# how upstream keeps the instances it builds and calls them (new release: with skip=)
HOLDERS = {
    "attribute": ("class Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.layer = Layer()\n\n"
                  "    def forward(self, x):\n        self.layer.warm(x{kw})\n        return self.layer(x, 0{kw})\n"),
    "module_dict": ("class Model(nn.Module):\n    def __init__(self, n):\n        super().__init__()\n"
                    "        self.layers = nn.ModuleDict({{str(i): Layer() for i in range(n)}})\n\n"
                    "    def forward(self, x, i):\n        for layer in self.layers.values():\n            layer.warm(x{kw})\n"
                    "        return self.layers[str(i)](x, i{kw})\n"),
    "local": ("def run(x):\n    layer = Layer()\n    layer.warm(x{kw})\n    return layer(x{kw})\n"),
    # built by a function handed to a factory whose result is unpacked (vLLM models/utils.py
    # make_layers(n, layer_fn) -> (start, end, ModuleList)), walked through islice or indexed
    "factory_lambda": ("def make_layers(n, layer_fn, prefix=''):\n    return 0, n, nn.ModuleList([layer_fn(prefix=str(i)) for i in range(n)])\n\n\n"
                       "class Model(nn.Module):\n    def __init__(self, n):\n        super().__init__()\n"
                       "        self.start, self.end, self.layers = make_layers(n, lambda prefix: Layer(), prefix='m')\n\n"
                       "    def forward(self, x):\n        for layer in islice(self.layers, self.start, self.end):\n            layer.warm(x{kw})\n"
                       "            x = layer(x, 0{kw})\n        return x\n"),
    "factory_lambda_keyword": ("def make_layers(n, layer_fn):\n    return 0, n, [layer_fn() for _ in range(n)]\n\n\n"
                               "class Model(nn.Module):\n    def __init__(self, n):\n        super().__init__()\n"
                               "        _, _, self.layers = make_layers(n, layer_fn=lambda: Layer())\n\n"
                               "    def forward(self, x, i):\n        self.layers[i].warm(x{kw})\n        return self.layers[i](x, i{kw})\n"),
}
PATCHES = {
    "assign": "import sglang.srt.models.mtp\n\n\ndef register():\n    sglang.srt.models.mtp.Layer = Mine\n",
    "alias": "import sglang.srt.models.mtp as mtp\n\n\ndef register():\n    mtp.Layer = Mine\n",
    "setattr": "from sglang.srt.models import mtp\n\n\ndef register():\n    setattr(mtp, 'Layer', Mine)\n",
    "none": "\n\ndef register():\n    return Mine\n",
    # a class made for the occasion and put in Layer's place (V variant q8): by type() with the
    # plugin's class first in the MRO, or a class statement inside the function
    "type_call": "import sglang.srt.models.mtp as mtp\n\n\ndef register():\n    mtp.Layer = type('Layer', (Mine, mtp.Layer), {})\n",
    "type_call_module_level": "from sglang.srt.models import mtp\n\nmtp.Layer = type('Fused', (Mine,), {'__doc__': 'fused'})\n\n\ndef register():\n    pass\n",
    "local_class": "import sglang.srt.models.mtp as mtp\n\n\ndef register():\n    class Local(Mine):\n        pass\n\n    mtp.Layer = Local\n",
}
MINE = ("from sglang.srt.models.mtp import Layer\n\n\nclass Mine(Layer):\n    def forward(self, x, step=0):\n        return x\n\n"
        "    def warm(self, x):\n        return x\n\n\n")
# the same methods on a class of the plugin's own over no upstream class (V-d variant w3): put in
# Layer's place, it is built and called where Layer is
MINE_OWN = MINE.replace("from sglang.srt.models.mtp import Layer", "from torch import nn").replace("class Mine(Layer):", "class Mine(nn.Module):")


@pytest.fixture(scope="module", params=sorted(HOLDERS))
def upstreams(request, tmp_path_factory):
    holder = HOLDERS[request.param]
    return upstream_pair(tmp_path_factory, old={"sglang/srt/models/mtp.py": OLD_LAYER + holder.format(kw="")},
                         new={"sglang/srt/models/mtp.py": NEW_LAYER + holder.format(kw=", skip=True")})


def _overrides(doc: dict) -> dict[str, dict]:
    return {f["target"]: f for f in doc["findings"] if f["kind"] == "subclass" and f["target"].startswith(LAYER + ".")}


@pytest.mark.parametrize("own_class", [False, True], ids=["subclass", "own_module"])
@pytest.mark.parametrize("patch", sorted(PATCHES))
def test_an_override_of_a_rebound_class_is_judged_by_the_calls_on_its_instances(upstreams, tmp_path, patch, own_class):
    old, new = upstreams
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"p": "p.patch:register"}), "p/__init__.py": "",
                             "p/patch.py": (MINE_OWN if own_class else MINE) + PATCHES[patch]})
    code, doc = check(root, new)
    found = _overrides(doc)
    for method in ("forward", "warm"):
        finding = found.get(f"{LAYER}.{method}")
        if patch == "none":  # upstream builds its own Layer: its calls never reach Mine
            assert finding is None or not finding["breaking"], finding
        else:
            assert finding is not None and finding["breaking"], (method, finding)
            assert "unexpected keyword argument 'skip'" in finding["detail"] and "sglang/srt/models/mtp.py:" in finding["detail"]
    if patch != "none":
        assert "nn.Module.__call__" in found[f"{LAYER}.forward"]["detail"] and code == 1
        # on the release the calls fit, the same override is fine
        code, doc = check(root, old)
        assert not any(f["breaking"] for f in _overrides(doc).values()) and code == 0
    else:  # a class of its own never put in Layer's place depends on nothing upstream: nothing to check
        assert code == (2 if own_class else 0)


# the method itself replaced on upstream's class (V-d's kind with a patch, not a subclass): every
# instance runs the replacement, so the calls on the instances upstream builds are judged
METHOD_PATCHES = {
    "assign": "from sglang.srt.models import mtp\n\n\ndef register():\n    mtp.Layer.{m} = {fn}\n",
    "setattr": "from sglang.srt.models.mtp import Layer\n\n\ndef register():\n    setattr(Layer, '{m}', {fn})\n",
    "replace_hook": ("from sglang.srt.plugins.hook_registry import HookRegistry, HookType\n\n\n"
                     "def register():\n    HookRegistry.register('sglang.srt.models.mtp.Layer.{m}', {fn}, HookType.REPLACE)\n"),
}
FUNCTIONS = "def forward(self, x, step=0):\n    return x\n\n\ndef roomy(self, x, step=0, **kwargs):\n    return x\n\n\n"


@pytest.mark.parametrize("fn, fits", [("forward", False), ("roomy", True)])
@pytest.mark.parametrize("spelling", sorted(METHOD_PATCHES))
def test_a_replaced_method_is_judged_by_the_calls_on_upstreams_instances(upstreams, tmp_path, spelling, fn, fits):
    _, new = upstreams
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"p": "p.patch:register"}), "p/__init__.py": "",
                             "p/patch.py": FUNCTIONS + METHOD_PATCHES[spelling].format(m="forward", fn=fn)})
    code, doc = check(root, new)
    finding = next(f for f in doc["findings"] if f["target"] == f"{LAYER}.forward")
    if fits:
        assert not finding["breaking"] and code == 0, finding
    else:
        assert finding["breaking"] and "sglang/srt/models/mtp.py:" in finding["detail"] and code == 1, finding


def test_a_name_rebound_in_another_module_than_the_one_that_builds_is_undecided(tmp_path_factory, tmp_path):
    """`from mtp import Layer` in the building module binds the name when it is imported: whether
    that runs before the plugin's patch is not known, so a failing call there is not certain."""
    builder = ("from torch import nn\nfrom sglang.srt.models.mtp import Layer\n\n\n" + HOLDERS["attribute"]).format(kw=", skip=True")
    _, new = upstream_pair(tmp_path_factory, new={"sglang/srt/models/mtp.py": NEW_LAYER, "sglang/srt/models/build.py": builder})
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"p": "p.patch:register"}), "p/__init__.py": "",
                             "p/patch.py": MINE + PATCHES["assign"]})
    code, doc = check(root, new)
    forward = _overrides(doc)[f"{LAYER}.forward"]
    assert not forward["breaking"] and "which runs first is not checked" in forward["detail"], forward


@pytest.mark.parametrize("holder, fits", [("Roomy", True), ("Narrow", False)])
def test_a_method_patched_from_a_plugin_class_is_that_classs_own(upstreams, tmp_path, holder, fits):
    """`Layer.forward = Roomy.forward`: Roomy's def, not the first `forward` in the module."""
    _, new = upstreams
    classes = ("class Narrow:\n    def forward(self, x, step=0):\n        return x\n\n\n"
               "class Roomy:\n    def forward(self, x, step=0, **kwargs):\n        return x\n\n\n")
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"p": "p.patch:register"}), "p/__init__.py": "",
                             "p/patch.py": classes + METHOD_PATCHES["assign"].format(m="forward", fn=f"{holder}.forward")})
    code, doc = check(root, new)
    finding = next(f for f in doc["findings"] if f["target"] == f"{LAYER}.forward")
    assert finding["breaking"] is not fits and code == (0 if fits else 1), finding


# a class upstream builds by calling a parameter that defaults to it (vLLM's LlamaDecoderLayer
# `attn_layer_type=LlamaAttention`, LlamaModel `layer_type=LlamaDecoderLayer`): the plugin's
# subclass handed in by that keyword is what those calls run (V variants x8, u7)
BUILT = ("from torch import nn\n\n\nclass Attn(nn.Module):\n    def forward(self, x, step=0, *, skip=False):\n        return x\n\n\n"
         "class Block(nn.Module):\n    def __init__(self, attn_type=Attn):\n        super().__init__()\n        self.attn = attn_type()\n\n"
         "    def forward(self, x):\n        return self.attn(x, 0, skip=True)\n\n\n"
         "class Model(nn.Module):\n    def __init__(self, block_type=Block):\n        super().__init__()\n"
         "        self.blocks = nn.ModuleList([block_type() for _ in range(2)])\n\n"
         "    def forward(self, x):\n        for block in self.blocks:\n            x = block(x)\n        return x\n")
HANDED = {
    "keyword_to_upstream_constructor": "def register():\n    return Block(attn_type=MyAttn)\n",
    "partial_handed_on": ("import functools\n\n\nclass MyModel(Model):\n    def __init__(self):\n"
                          "        super().__init__(block_type=functools.partial(Block, attn_type=MyAttn))\n\n\n"
                          "def register():\n    return MyModel()\n"),
    "subclass_init_keyword": ("class MyBlock(Block):\n    def __init__(self):\n        super().__init__(attn_type=MyAttn)\n\n\n"
                              "def register():\n    return Model(block_type=MyBlock)\n"),
    "never_handed": "def register():\n    return Block()\n",
}


@pytest.mark.parametrize("fits", [False, True], ids=["lacks_keyword", "fits"])
@pytest.mark.parametrize("spelling", sorted(HANDED))
def test_a_class_handed_to_a_parameter_upstream_builds_from_is_judged_by_those_calls(tmp_path_factory, tmp_path, spelling, fits):
    _, new = upstream_pair(tmp_path_factory, new={"sglang/srt/models/built.py": BUILT})
    own = "def forward(self, x, step=0, **kwargs):" if fits else "def forward(self, x, step=0):"
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"p": "p.models:register"}), "p/__init__.py": "",
                             "p/models.py": "from sglang.srt.models.built import Attn, Block, Model\n\n\n"
                                            f"class MyAttn(Attn):\n    {own}\n        return x\n\n\n" + HANDED[spelling]})
    code, doc = check(root, new)
    finding = next((f for f in doc["findings"] if f["target"] == "sglang.srt.models.built.Attn.forward"), None)
    if fits or spelling == "never_handed":  # upstream builds its own Attn: no call of it reaches MyAttn
        assert finding is None or not finding["breaking"], finding
        assert code == 0
    else:
        assert finding["breaking"] and "unexpected keyword argument 'skip'" in finding["detail"], finding
        assert "sglang/srt/models/built.py:" in finding["detail"] and code == 1
