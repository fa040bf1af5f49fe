"""A registry that is an object's attribute (vLLM 0.11 registry.py:936: `ModelRegistry =
_ModelRegistry({arch: … for arch, (mod, cls) in _VLLM_MODELS.items()})`, a dataclass keeping it
as `models`): its keys are those of the module dict the construction is made from, a `**{k: v
for k, (mod, arch) in T.items() if arch == "X"}` spread in that dict decided entry by entry; a
read of a key gone is missing (fourteenth set V-n3), and `key in
ModelRegistry.get_supported_archs()` (a method returning `self.models.keys()`) is a test of it
(fifteenth set V-m4)."""

from __future__ import annotations

import pytest
from kinds_support import check, plugin, pyproject, upstream_pair

REGISTRY = """
from dataclasses import dataclass, field

_TEXT = {{
    "LlamaForCausalLM": ("llama", "LlamaForCausalLM"),
    {gone}
}}
_EMBEDDING = {{
    **{{k: v for k, (mod, arch) in _TEXT.items() if arch == "LlamaForCausalLM"}},
    "BertModel": ("bert", "BertModel"),
}}
_ALL = {{**_TEXT, **_EMBEDDING}}

{cls}

ModelRegistry = _ModelRegistry({{arch: (mod, name) for arch, (mod, name) in _ALL.items()}})
"""

CLASSES = {
    "dataclass": "@dataclass\nclass _ModelRegistry:\n    models: dict = field(default_factory=dict)\n\n"
                 "    def get_supported_archs(self):\n        return self.models.keys()\n",
    "explicit_init": "class _ModelRegistry:\n    def __init__(self, models):\n        self.models = models\n\n"
                     "    def get_supported_archs(self):\n        return set(self.models)\n",
}

READS = {
    # (how the plugin reads it, whether the gone key breaks it)
    "subscript": ("from sglang.srt.models.registry import ModelRegistry\n\n\ndef register():\n"
                  "    return ModelRegistry.models['MllamaForConditionalGeneration']\n", True),
    "helper_returned_registry": ("from sglang.srt.models.registry import ModelRegistry\n\n\ndef _models():\n    return ModelRegistry.models\n\n\n"
                                 "def register():\n    return _models()['MllamaForConditionalGeneration']\n", True),
    "guarded_by_supported_archs": ("from sglang.srt.models import registry\n\n\ndef register():\n    served = registry.ModelRegistry.get_supported_archs()\n"
                                   "    for arch in ('LlamaForCausalLM', 'MllamaForConditionalGeneration'):\n        if arch not in served:\n            continue\n"
                                   "        registry.ModelRegistry.models[arch]\n", False),
}


@pytest.mark.parametrize("read", sorted(READS))
@pytest.mark.parametrize("cls", sorted(CLASSES))
def test_a_key_of_a_registry_an_object_keeps(tmp_path_factory, tmp_path, cls, read):
    old, new = upstream_pair(tmp_path_factory, old={"sglang/srt/models/registry.py": REGISTRY.format(
        gone='"MllamaForConditionalGeneration": ("mllama", "MllamaForConditionalGeneration"),', cls=CLASSES[cls])},
        new={"sglang/srt/models/registry.py": REGISTRY.format(gone="", cls=CLASSES[cls])})
    source, breaks = READS[read]
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"cr": "cr:register"}), "cr/__init__.py": source})
    code, doc = check(root, old)
    assert code == 0, doc["findings"]
    code, doc = check(root, new)
    gone = [f for f in doc["findings"] if f["kind"] == "registry_key" and "MllamaForConditionalGeneration" in f["target"]]
    if breaks:
        assert gone and gone[0]["status"] == "missing" and gone[0]["breaking"] and code == 1, doc["findings"]
    else:
        assert not [f for f in gone if f["breaking"]] and code == 0, doc["findings"]


CONSTRUCTIONS = {
    # how the registry object is handed its table (the nineteenth held-out set's tests)
    "dict_literal": "ModelRegistry = _ModelRegistry({{'LlamaForCausalLM': ('llama', 'LlamaForCausalLM'), {gone}}})\n",
    "module_dict": "_MODELS = {{'LlamaForCausalLM': ('llama', 'LlamaForCausalLM'), {gone}}}\n\nModelRegistry = _ModelRegistry(_MODELS)\n",
    "comprehension": ("_MODELS = {{'LlamaForCausalLM': ('llama', 'LlamaForCausalLM'), {gone}}}\n\n"
                      "ModelRegistry = _ModelRegistry({{a: e for a, e in _MODELS.items()}})\n"),
}


@pytest.mark.parametrize("construction", sorted(CONSTRUCTIONS))
def test_a_registry_object_handed_its_table_however_written(tmp_path_factory, tmp_path, construction):
    """A dict literal handed to the constructor has its keys as a module dict does."""
    made = CLASSES["explicit_init"] + "\n\n" + CONSTRUCTIONS[construction]
    old, new = upstream_pair(tmp_path_factory, old={"sglang/srt/models/registry.py": made.format(gone="'MllamaForConditionalGeneration': ('mllama', 'M'),")},
                             new={"sglang/srt/models/registry.py": made.format(gone="")})
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"cr": "cr:register"}), "cr/__init__.py": READS["subscript"][0]})
    assert check(root, old)[0] == 0
    code, doc = check(root, new)
    gone = [f for f in doc["findings"] if f["kind"] == "registry_key" and "MllamaForConditionalGeneration" in f["target"]]
    assert gone and gone[0]["status"] == "missing" and gone[0]["breaking"] and code == 1, doc["findings"]
