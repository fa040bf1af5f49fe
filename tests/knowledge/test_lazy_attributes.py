"""A name a package hands out lazily (vllm/__init__.py: `MODULE_ATTRS = {"ModelRegistry":
".model_executor.models:ModelRegistry", …}`, a module `__getattr__` importing it on first read,
and the same import under `if TYPE_CHECKING:`) is the object that import names: a key read
through it is a key of that registry. A registry handed to a helper (`_entry(registry, arch)`
reading `registry.models[arch]`) is the one each call hands in (the nineteenth held-out set,
V-g3). 0.10.0's registry dropped MllamaForConditionalGeneration: a read of it breaks there."""

from __future__ import annotations

import pytest
from kinds_support import check, plugin, pyproject, upstream_pair

REGISTRY = """
class _ModelRegistry:
    def __init__(self, models):
        self.models = models


_MODELS = {{
    "LlamaForCausalLM": ("llama", "LlamaForCausalLM"),
    {gone}
}}

ModelRegistry = _ModelRegistry({{arch: entry for arch, entry in _MODELS.items()}})
"""
LAZY_INIT = """
import typing

from sglang.version import __version__

MODULE_ATTRS = {"ModelRegistry": ".srt.models.registry:ModelRegistry"}

if typing.TYPE_CHECKING:
    from sglang.srt.models.registry import ModelRegistry
else:

    def __getattr__(name):
        from importlib import import_module

        if name in MODULE_ATTRS:
            module_name, attr = MODULE_ATTRS[name].split(":")
            return getattr(import_module(module_name, __package__), attr)
        raise AttributeError(f"module {__package__} has no attribute {name}")
"""


@pytest.fixture(scope="module")
def upstreams(tmp_path_factory):
    gone = '"MllamaForConditionalGeneration": ("mllama", "MllamaForConditionalGeneration"),'
    return upstream_pair(tmp_path_factory, old={"sglang/__init__.py": LAZY_INIT, "sglang/srt/models/registry.py": REGISTRY.format(gone=gone)},
                         new={"sglang/__init__.py": LAZY_INIT, "sglang/srt/models/registry.py": REGISTRY.format(gone="")})


READS = {
    "from_the_package": "def register():\n    from sglang import ModelRegistry\n\n    return ModelRegistry.models[{arch!r}]\n",
    "attribute_of_the_package": "import sglang\n\n\ndef register():\n    return sglang.ModelRegistry.models[{arch!r}]\n",
    "handed_to_a_helper": ("def _entry(registry, arch):\n    return registry.models[arch]\n\n\n"
                           "def register():\n    from sglang import ModelRegistry\n\n    return _entry(ModelRegistry, {arch!r})\n"),
    "handed_on_through_two_helpers": ("def _entry(registry, arch):\n    return registry.models[arch]\n\n\n"
                                      "def _lookup(registry, arch):\n    return _entry(registry, arch)\n\n\n"
                                      "def register():\n    from sglang import ModelRegistry\n\n    return _lookup(ModelRegistry, {arch!r})\n"),
    "handed_through_an_object": ("class Aliases:\n    def __init__(self, table):\n        self.table = table\n\n"
                                 "    def into(self, registry):\n        for mine, theirs in sorted(self.table.items()):\n            registry.models[mine] = registry.models[theirs]\n\n\n"
                                 "def register():\n    from sglang import ModelRegistry\n\n    Aliases({{'MyArch': {arch!r}}}).into(ModelRegistry)\n"),
}


@pytest.mark.parametrize("arch,breaks", [("MllamaForConditionalGeneration", True), ("LlamaForCausalLM", False)])
@pytest.mark.parametrize("read", sorted(READS))
def test_a_key_read_through_a_lazy_package_attribute(upstreams, tmp_path, read, arch, breaks):
    old, new = upstreams
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"la": "la:register"}), "la/__init__.py": READS[read].format(arch=arch)})
    code, doc = check(root, old)
    assert code == 0, doc["findings"]
    code, doc = check(root, new)
    keys = [f for f in doc["findings"] if f["kind"] == "registry_key" and f["breaking"]]
    assert (bool(keys), code) == ((True, 1) if breaks else (False, 0)), doc["findings"]
    if breaks:
        assert "MllamaForConditionalGeneration" in keys[0]["target"] + (keys[0]["detail"] or ""), keys
