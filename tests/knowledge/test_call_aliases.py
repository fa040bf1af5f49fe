"""A plugin class or function called by another name (the nineteenth held-out set's lead-in): an
import alias (`from .patches import SamplerPatches as Patches`), a module-level assignment
(`Patches = patches.SamplerPatches`), a local name (`maker = SamplerPatches; maker()`). Python
runs the same `__init__` and the same function body whatever name the call uses, so what the
call passes reaches the callee's parameters and the object's methods: a hook the installer
object registers on a method the release lacks breaks; on a method it has, it is ok. (The module
also holds another class whose `__init__` sets an attribute of the same name: a write on another
class's instances does not make the installer's attribute unknown.)"""

from __future__ import annotations

import pytest
from kinds_support import check, plugin, pyproject, upstream_pair

SAMPLER = "sglang.srt.layers.sampler.Sampler"

PATCHES = ("from sglang.srt.plugins.hook_registry import HookRegistry, HookType\n\n\n"
           "def _around(original_fn, self, *args, **kwargs):\n    return original_fn(self, *args, **kwargs)\n\n\n"
           "class SamplerPatches:\n    def __init__(self, target, methods):\n        self.target = target\n        self.methods = methods\n\n"
           "    def install(self):\n        for method in self.methods:\n"
           "            HookRegistry.register(f'{self.target}.{method}', _around, HookType.AROUND)\n\n\n"
           "class OtherPatches:\n    def __init__(self, target, methods):\n        self.target = target\n\n"
           "    def install(self):\n        pass\n")
HELPERS = ("from sglang.srt.plugins.hook_registry import HookRegistry, HookType\n\n\n"
           "def _around(original_fn, self, *args, **kwargs):\n    return original_fn(self, *args, **kwargs)\n\n\n"
           "def hook_on(owner, method):\n    HookRegistry.register(f'{owner}.{method}', _around, HookType.AROUND)\n")
CALLERS = {
    "own_name": "from .patches import SamplerPatches\n\n\ndef register():\n    SamplerPatches({target!r}, [{method!r}]).install()\n",
    "import_alias": "from .patches import SamplerPatches as Patches\n\n\ndef register():\n    Patches({target!r}, [{method!r}]).install()\n",
    "module_assignment": "from . import patches\n\nPatches = patches.SamplerPatches\n\n\ndef register():\n    Patches({target!r}, [{method!r}]).install()\n",
    "local_name": "def register():\n    from .patches import SamplerPatches\n    maker = SamplerPatches\n    maker({target!r}, [{method!r}]).install()\n",
    "function_import_alias": "from .helpers import hook_on as on\n\n\ndef register():\n    on({target!r}, {method!r})\n",
    "function_module_assignment": "from . import helpers\n\non = helpers.hook_on\n\n\ndef register():\n    on({target!r}, {method!r})\n",
    "function_local_name": "def register():\n    from .helpers import hook_on\n    install = hook_on\n    install({target!r}, {method!r})\n",
}


@pytest.fixture(scope="module")
def upstreams(tmp_path_factory):
    return upstream_pair(tmp_path_factory)


@pytest.mark.parametrize("method,status,code", [("gone_method", "missing", 1), ("forward", "ok", 0)])
@pytest.mark.parametrize("spelling", sorted(CALLERS))
def test_a_callee_called_by_another_name_gets_what_the_call_passes(upstreams, tmp_path, spelling, method, status, code):
    _, new = upstreams
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"p": "p:register"}), **({"p/helpers.py": HELPERS} if spelling.startswith("function") else {"p/patches.py": PATCHES}),
                             "p/__init__.py": CALLERS[spelling].format(target=SAMPLER, method=method)})
    code_, doc = check(root, new)
    hooks = [f for f in doc["findings"] if f["kind"] == "hook"]
    assert [(f["status"], f["live"]) for f in hooks] == [(status, True)] and code_ == code, doc["findings"]


def test_an_alias_of_another_class_gives_nothing_to_the_first(upstreams, tmp_path):
    """`from .patches import OtherPatches as Patches`: its constructions are OtherPatches's; the
    SamplerPatches nothing constructs registers nothing."""
    _, new = upstreams
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"p": "p:register"}), "p/patches.py": PATCHES,
                             "p/__init__.py": CALLERS["import_alias"].replace("SamplerPatches", "OtherPatches").format(target=SAMPLER, method="gone_method")})
    code, doc = check(root, new)
    assert not [f for f in doc["findings"] if f["target"] == f"{SAMPLER}.gone_method"] and code != 1, doc["findings"]
