"""A hook's callable is judged against upstream's calls however it is written (issue 34, items 2
and 3): a function by name, a factory's closure, a lambda, `functools.partial` (its bound
arguments taken away, as inspect.signature does), for REPLACE and AFTER hooks alike. The
release adds `allow_patterns=` to the one call it makes of the target: a callable that cannot
take it breaks; one that can does not."""

from __future__ import annotations

import pytest
from kinds_support import check, plugin, pyproject, upstream_pair
from knowledge_support import by_target

from harness.knowledge.model import Param
from harness.knowledge.scan.expressions import partial_params

TARGET = "sglang.srt.model_loader.weight_utils.filter_files"


@pytest.fixture(scope="module")
def upstreams(tmp_path_factory):
    utils = """
        def filter_files(hf_weights_files, hf_folder, index_file, allow_patterns=None):
            return hf_weights_files
        """
    return upstream_pair(tmp_path_factory, old={
        "sglang/srt/model_loader/__init__.py": "",
        "sglang/srt/model_loader/weight_utils.py": utils.replace(", allow_patterns=None", ""),
        "sglang/srt/model_loader/loader.py": """
            from sglang.srt.model_loader.weight_utils import filter_files


            def load(files, folder, index):
                return filter_files(files, folder, index)
            """,
    }, new={
        "sglang/srt/model_loader/__init__.py": "",
        "sglang/srt/model_loader/weight_utils.py": utils,
        "sglang/srt/model_loader/loader.py": """
            from sglang.srt.model_loader.weight_utils import filter_files


            def load(files, folder, index, patterns):
                return filter_files(files, folder, index, allow_patterns=patterns)
            """,
    })


HEAD = "import functools\nfrom sglang.srt.plugins.hook_registry import HookRegistry, HookType\n\n\n"
PROPERTY_CLASS = ("import dataclasses\n\n\n@dataclasses.dataclass\nclass Cfg:\n    strict: bool = True\n\n"
                  "    @classmethod\n    def from_env(cls) -> 'Cfg':\n        return cls(False)\n\n"
                  "    @{deco}\n    def hook(self):\n        strict = self.strict\n\n"
                  "        def keep(hf_weights_files, hf_folder, index_file{extra}):\n            return hf_weights_files if strict else []\n\n"
                  "        return keep\n\n\n")
_FACTORY = ("def make_keep(*profiles, **opts):\n    strict = 'strict' in profiles or bool(opts.get('strict'))\n\n"
            "    def keep(hf_weights_files, hf_folder, index_file{extra}):\n        return hf_weights_files if not strict else []\n\n"
            "    return keep\n\n\n")
CHOSEN = ("import os\n\nfrom sglang.srt.plugins.hook_registry import plugin_hook\n\nTARGET = 'sglang.srt.model_loader.weight_utils.filter_files'\n\n\n"
          "def _a(strict=False):\n    def keep(hf_weights_files, hf_folder, index_file):\n        return hf_weights_files\n\n    return keep\n\n\n"
          "def _b(strict=False):\n    def keep_all(hf_weights_files, hf_folder, index_file):\n        return hf_weights_files\n\n    return keep_all\n\n\n"
          "def plain(hf_weights_files, hf_folder, index_file):\n    return hf_weights_files\n\n\n"
          "def tolerant(hf_weights_files, hf_folder, index_file, **kwargs):\n    return hf_weights_files\n\n\n"
          "FACTORIES = {'a': _a, 'b': _b}\nHOOKS = {'plain': plain}\nMIXED = {'tolerant': tolerant, 'plain': plain}\n\n\n")
SELF_PROPERTY = ("class Hooks:\n    def __init__(self, strict):\n        self.strict = strict\n\n    @{deco}\n    def keep(self):\n        strict = self.strict\n\n"
                 "        def keep(hf_weights_files, hf_folder, index_file{extra}):\n            return hf_weights_files if strict else []\n\n"
                 "        return keep\n\n    def install(self):\n"
                 "        HookRegistry.register('sglang.srt.model_loader.weight_utils.filter_files', self.keep, HookType.REPLACE)\n\n\n"
                 "def register():\n    Hooks(True).install()\n")
INSTALLER = ("MODULE = 'sglang.srt.model_loader.weight_utils'\n\n\nclass Keep:\n    def __init__(self, strict=False):\n        self.strict = strict\n\n"
             "    def __call__(self, hf_weights_files, hf_folder, index_file):\n        return hf_weights_files\n\n\n"
             "class Installer:\n    def __init__(self):\n        self._hooks = []\n\n"
             "    def add(self, name, hook, kind=HookType.REPLACE):\n        self._hooks.append((f'{MODULE}.{name}', hook, kind))\n        return self\n\n"
             "    def install(self):\n        for target, hook, kind in self._hooks:\n            HookRegistry.register(target, hook, kind)\n\n\n")
SPELLINGS = {
    # (the hooks module, whether it breaks on the new release)
    # a record whose field holds a factory, called in its own method with its other fields
    # spread (sixteenth set F30-k2): a frozen dataclass, a NamedTuple, a plain class
    "record_field_factory_starred": (_FACTORY.format(extra="") + "import dataclasses\n\n\n@dataclasses.dataclass(frozen=True)\nclass Spec:\n"
                                     "    target: str\n    build: object\n    args: tuple = ()\n\n    def install(self):\n"
                                     "        HookRegistry.register(self.target, self.build(*self.args), HookType.REPLACE)\n\n\n"
                                     f"def register():\n    for spec in (Spec({TARGET!r}, make_keep, ('strict',)),):\n        spec.install()\n", True),
    "named_tuple_field_factory_kwargs": (_FACTORY.format(extra="") + "from typing import NamedTuple\n\n\nclass Spec(NamedTuple):\n"
                                         "    target: str\n    build: object\n    opts: dict = {}\n\n    def install(self):\n"
                                         "        HookRegistry.register(self.target, self.build(**self.opts), HookType.REPLACE)\n\n\n"
                                         f"def register():\n    Spec({TARGET!r}, make_keep, {{'strict': True}}).install()\n", True),
    "plain_object_field_factory_fits": (_FACTORY.format(extra=", allow_patterns=None") + "class Spec:\n    def __init__(self, target, build):\n"
                                        "        self.target = target\n        self.build = build\n\n    def install(self):\n"
                                        "        HookRegistry.register(self.target, self.build('strict'), HookType.REPLACE)\n\n\n"
                                        f"def register():\n    Spec({TARGET!r}, make_keep).install()\n", False),
    # the closure a property's getter returns (F30 variant q2), read off an instance however made
    "property_of_classmethod_instance": (PROPERTY_CLASS.format(deco="property", extra="") +
                                         f"def register():\n    HookRegistry.register({TARGET!r}, Cfg.from_env().hook, HookType.REPLACE)\n", True),
    "property_of_constructed_instance": (PROPERTY_CLASS.format(deco="property", extra="") +
                                         f"def register():\n    HookRegistry.register({TARGET!r}, Cfg(True).hook, HookType.REPLACE)\n", True),
    "cached_property_of_module_object": (PROPERTY_CLASS.format(deco="functools.cached_property", extra="") +
                                         f"_CFG = Cfg()\n\n\ndef register():\n    HookRegistry.register({TARGET!r}, _CFG.hook, HookType.REPLACE)\n", True),
    "property_fits": (PROPERTY_CLASS.format(deco="property", extra=", allow_patterns=None") +
                      f"def register():\n    HookRegistry.register({TARGET!r}, Cfg.from_env().hook, HookType.REPLACE)\n", False),
    "function": ("def keep(hf_weights_files, hf_folder, index_file):\n    return hf_weights_files\n\n\n"
                 f"def register():\n    HookRegistry.register({TARGET!r}, keep, HookType.REPLACE)\n", True),
    "closure": ("def make(strict):\n    def keep(hf_weights_files, hf_folder, index_file):\n        return hf_weights_files\n    return keep\n\n\n"
                f"def register():\n    HookRegistry.register({TARGET!r}, make(True), HookType.REPLACE)\n", True),
    "lambda": ("def keep(files, folder, index):\n    return files\n\n\n"
               f"def register():\n    HookRegistry.register({TARGET!r}, lambda files, folder, index: keep(files, folder, index), HookType.REPLACE)\n", True),
    "partial": ("def keep(hf_weights_files, hf_folder, index_file, strict):\n    return hf_weights_files\n\n\n"
                f"def register():\n    HookRegistry.register({TARGET!r}, functools.partial(keep, strict=True), HookType.REPLACE)\n", True),
    "partial_fits": ("def keep(strict, hf_weights_files, hf_folder, index_file, **kwargs):\n    return hf_weights_files\n\n\n"
                     f"def register():\n    HookRegistry.register({TARGET!r}, functools.partial(keep, True), HookType.REPLACE)\n", False),
    "lambda_fits": (f"def register():\n    HookRegistry.register({TARGET!r}, lambda *args, **kwargs: args[0], HookType.REPLACE)\n", False),
    # AFTER: the wrapper calls hook(result, *args, **kwargs) (hook_registry._wrap_fn)
    "after": ("def keep(result, hf_weights_files, hf_folder, index_file):\n    return result\n\n\n"
              f"def register():\n    HookRegistry.register({TARGET!r}, keep, HookType.AFTER)\n", True),
    "after_partial_fits": ("def keep(result, hf_weights_files, hf_folder, index_file, allow_patterns=None, *, strict):\n    return result\n\n\n"
                           f"def register():\n    HookRegistry.register({TARGET!r}, functools.partial(keep, strict=False), HookType.AFTER)\n", False),
    # the target, the callable and the type passed through a helper's parameters: one hook per call of the helper
    "helper_positional": ("def keep(hf_weights_files, hf_folder, index_file):\n    return hf_weights_files\n\n\n"
                          "def _hook(target, fn, kind=HookType.AFTER):\n    HookRegistry.register(target, fn, kind)\n\n\n"
                          f"def register():\n    _hook({TARGET!r}, keep, HookType.REPLACE)\n", True),
    "helper_keywords": ("MODULE = 'sglang.srt.model_loader.weight_utils'\n\n\n"
                        "def keep(hf_weights_files, hf_folder, index_file):\n    return hf_weights_files\n\n\n"
                        "def _hook(name, fn, kind=HookType.AFTER):\n    HookRegistry.register(target=f'{MODULE}.{name}', hook=fn, hook_type=kind)\n\n\n"
                        "def register():\n    _hook(kind=HookType.REPLACE, fn=keep, name='filter_files')\n", True),
    "helper_loop": ("def keep(result, hf_weights_files, hf_folder, index_file):\n    return result\n\n\n"
                    "def _hook(target, fn, kind=HookType.AFTER):\n    HookRegistry.register(target, fn, kind)\n\n\n"
                    f"def register():\n    for target, fn in [({TARGET!r}, keep)]:\n        _hook(target, fn)\n", True),
    "helper_default_fits": ("def keep(result, *args, **kwargs):\n    return result\n\n\n"
                            "def _hook(target, fn, kind=HookType.AFTER):\n    HookRegistry.register(target, fn, kind)\n\n\n"
                            f"def register():\n    _hook({TARGET!r}, keep)\n", False),
    # the callable read from a module imported by a relative name (F03 variant w4): package= as a
    # keyword, positionally, or the module's own __package__
    "relative_import_module": ("import importlib\n\n\ndef keep(hf_weights_files, hf_folder, index_file):\n    return hf_weights_files\n\n\n"
                               "def register():\n    mod = importlib.import_module('.hooks', package='p')\n"
                               f"    HookRegistry.register({TARGET!r}, mod.keep, HookType.REPLACE)\n", True),
    "relative_import_module_positional": ("from importlib import import_module\n\n\ndef keep(hf_weights_files, hf_folder, index_file):\n"
                                          "    return hf_weights_files\n\n\ndef register():\n    mod = import_module('.hooks', 'p')\n"
                                          f"    HookRegistry.register({TARGET!r}, mod.keep, HookType.REPLACE)\n", True),
    "relative_import_module_package": ("import importlib\n\n\ndef keep(hf_weights_files, hf_folder, index_file, **kwargs):\n    return hf_weights_files\n\n\n"
                                       "def register():\n    mod = importlib.import_module('.hooks', package=__package__)\n"
                                       f"    HookRegistry.register({TARGET!r}, mod.keep, HookType.REPLACE)\n", False),
    # the registry handed to a helper as a parameter (F34 held-out kind), by position, keyword or alias
    "registry_parameter": ("def keep(hf_weights_files, hf_folder, index_file):\n    return hf_weights_files\n\n\n"
                           f"def install(registry, kind=HookType.REPLACE):\n    registry.register({TARGET!r}, keep, kind)\n\n\n"
                           "def register():\n    install(HookRegistry)\n", True),
    "registry_keyword": ("def keep(result, hf_weights_files, hf_folder, index_file):\n    return result\n\n\n"
                         f"def install(fn, *, registry):\n    registry.register({TARGET!r}, fn, HookType.AFTER)\n\n\n"
                         "def register():\n    install(keep, registry=HookRegistry)\n", True),
    "registry_module_alias_fits": ("import sglang.srt.plugins.hook_registry as hr\n\n\n"
                                   "def keep(hf_weights_files, hf_folder, index_file, allow_patterns=None):\n    return hf_weights_files\n\n\n"
                                   f"def install(registry):\n    registry.register({TARGET!r}, keep, HookType.REPLACE)\n\n\n"
                                   "def register():\n    install(hr.HookRegistry)\n", False),
    # the registration itself bound by functools.partial (F16 variant w7)
    "partial_of_register": ("def keep(hf_weights_files, hf_folder, index_file):\n    return hf_weights_files\n\n\n"
                            "replace = functools.partial(HookRegistry.register, hook_type=HookType.REPLACE)\n\n\n"
                            f"def register():\n    replace({TARGET!r}, keep)\n", True),
    "partial_of_register_imported": ("from functools import partial\n\n\ndef keep(result, hf_weights_files, hf_folder, index_file):\n    return result\n\n\n"
                                     f"after = partial(HookRegistry.register, {TARGET!r})\n\n\n"
                                     "def register():\n    after(keep, HookType.AFTER)\n", True),
    "partial_of_register_fits": ("def keep(hf_weights_files, hf_folder, index_file, **kwargs):\n    return hf_weights_files\n\n\n"
                                 "replace = functools.partial(HookRegistry.register, hook_type=HookType.REPLACE)\n\n\n"
                                 f"def register():\n    replace({TARGET!r}, keep)\n", False),
    # a table of (target, hook, type) spread into the call (F16 variant w5), a tuple or a list
    "spread_tuple_table": ("def keep(hf_weights_files, hf_folder, index_file):\n    return hf_weights_files\n\n\n"
                           f"SPECS = [({TARGET!r}, keep, HookType.REPLACE)]\n\n\n"
                           "def register():\n    for spec in SPECS:\n        HookRegistry.register(*spec)\n", True),
    "spread_list": ("def keep(result, hf_weights_files, hf_folder, index_file):\n    return result\n\n\n"
                    f"def register():\n    spec = [{TARGET!r}, keep, HookType.AFTER]\n    HookRegistry.register(*spec)\n", True),
    "spread_fits": ("def keep(hf_weights_files, hf_folder, index_file, allow_patterns=None):\n    return hf_weights_files\n\n\n"
                    f"SPECS = (({TARGET!r}, keep, HookType.REPLACE),)\n\n\n"
                    "def register():\n    for spec in SPECS:\n        HookRegistry.register(*spec)\n", False),
    # a plugin decorator factory returning plugin_hook(...) (F06 variant z2): its arguments bound
    "plugin_hook_factory": ("from sglang.srt.plugins.hook_registry import plugin_hook\n\n\n"
                            "def replace_in(module, name, kind=HookType.REPLACE):\n    return plugin_hook(f'{module}.{name}', type=kind)\n\n\n"
                            "@replace_in('sglang.srt.model_loader.weight_utils', 'filter_files')\n"
                            "def keep(hf_weights_files, hf_folder, index_file):\n    return hf_weights_files\n\n\n"
                            "def register():\n    pass\n", True),
    "plugin_hook_factory_keywords_fits": ("from sglang.srt.plugins.hook_registry import plugin_hook\n\nMODULE = 'sglang.srt.model_loader.weight_utils'\n\n\n"
                                          "def replace_in(module, name, kind=HookType.REPLACE):\n    return plugin_hook(module + '.' + name, type=kind)\n\n\n"
                                          "@replace_in(name='filter_files', module=MODULE)\n"
                                          "def keep(hf_weights_files, hf_folder, index_file, **kwargs):\n    return hf_weights_files\n\n\n"
                                          "def register():\n    pass\n", False),
    "plugin_hook_factory_after": ("from sglang.srt.plugins import hook_registry\n\n\n"
                                  "def on(target, kind):\n    return hook_registry.plugin_hook(target, type=kind)\n\n\n"
                                  f"@on({TARGET!r}, HookType.AFTER)\n"
                                  "def keep(result, hf_weights_files, hf_folder, index_file):\n    return result\n\n\n"
                                  "def register():\n    pass\n", True),
    # ... whose target is a local it builds first (eighteenth set F16-h1): from a helper with a default, a join, a walrus-free chain
    "plugin_hook_factory_local_from_helper": ("from sglang.srt.plugins.hook_registry import plugin_hook\n\nMODULE = 'sglang.srt.model_loader.weight_utils'\n\n\n"
                                              "def entry(name, module=MODULE):\n    return '.'.join((module, name))\n\n\nSEEN = []\n\n\n"
                                              "def on(name, kind=HookType.REPLACE):\n    target = entry(name)\n    SEEN.append(target)\n"
                                              "    return plugin_hook(target, type=kind)\n\n\n"
                                              "@on('filter_files')\ndef keep(hf_weights_files, hf_folder, index_file):\n    return hf_weights_files\n\n\n"
                                              "def register():\n    pass\n", True),
    "plugin_hook_factory_locals_chained": ("from sglang.srt.plugins import hook_registry\n\n\n"
                                           "def on(name, kind):\n    module, _, attr = name.rpartition('.')\n    target = f'{module}.{attr}'\n"
                                           "    hook_type = kind\n    return hook_registry.plugin_hook(target, type=hook_type)\n\n\n"
                                           f"@on({TARGET!r}, HookType.AFTER)\n"
                                           "def keep(result, hf_weights_files, hf_folder, index_file):\n    return result\n\n\n"
                                           "def register():\n    pass\n", True),
    "plugin_hook_factory_local_fits": ("from sglang.srt.plugins.hook_registry import plugin_hook\n\n\n"
                                       "def replace_in(module, name):\n    target = module + '.' + name\n    return plugin_hook(target, type=HookType.REPLACE)\n\n\n"
                                       "@replace_in('sglang.srt.model_loader.weight_utils', 'filter_files')\n"
                                       "def keep(hf_weights_files, hf_folder, index_file, allow_patterns=None):\n    return hf_weights_files\n\n\n"
                                       "def register():\n    pass\n", False),
    # a list or dict an installer object keeps, filled by module-level calls of its methods (eighteenth set F27-h1):
    # a chain of methods returning self, a global's method called after, a dict the method stores in; the
    # hook an instance with __call__
    "installer_chain_of_adds": (INSTALLER + "INSTALL = Installer().add('filter_files', Keep()).add('filter_files', Keep())\n\n\n"
                                "def register():\n    INSTALL.install()\n", True),
    "installer_global_then_add": (INSTALLER + "INSTALL = Installer()\nINSTALL.add('filter_files', Keep(strict=True))\n\n\n"
                                  "def register():\n    INSTALL.install()\n", True),
    "installer_dict_store": (INSTALLER.replace("self._hooks = []", "self._hooks = {}").replace(
        "self._hooks.append((f'{MODULE}.{name}', hook, kind))", "self._hooks[f'{MODULE}.{name}'] = (hook, kind)").replace(
        "for target, hook, kind in self._hooks:", "for target, (hook, kind) in self._hooks.items():")
        + "INSTALL = Installer().add('filter_files', Keep())\n\n\ndef register():\n    INSTALL.install()\n", True),
    "installer_chain_in_register": (INSTALLER + "def register():\n    from p.hooks import Installer\n\n"
                                    "    Installer().add('filter_files', Keep()).install()\n", True),
    "installer_hook_fits": (INSTALLER.replace("index_file):", "index_file, allow_patterns=None):")
                            + "INSTALL = Installer().add('filter_files', Keep())\n\n\ndef register():\n    INSTALL.install()\n", False),
    # a property (or cached_property) of the installer read on self where the hook is registered (eighteenth set F30-h1):
    # the closure its getter returns
    "self_property_in_a_method": (SELF_PROPERTY.format(deco="property", extra=""), True),
    "self_cached_property_in_a_method": (SELF_PROPERTY.format(deco="functools.cached_property", extra=""), True),
    "self_cached_property_fits": (SELF_PROPERTY.format(deco="functools.cached_property", extra=", allow_patterns=None"), False),
    # a hook a run-time key picks from a plugin table (eighteenth set F30-h2): each entry it may pick is judged
    "table_get_of_an_environment_key_factory": (CHOSEN + "def register():\n    factory = FACTORIES.get(os.environ.get('P', 'a'), FACTORIES['a'])\n"
                                                "    plugin_hook(TARGET, type=HookType.REPLACE)(factory(strict=True))\n", True),
    "table_subscript_of_a_config_function": (CHOSEN + "def register(cfg=None):\n    hook = HOOKS[os.environ['P']]\n"
                                             "    HookRegistry.register(TARGET, hook, HookType.REPLACE)\n", True),
    "table_entries_of_two_shapes": (CHOSEN + "def register():\n    HookRegistry.register(TARGET, MIXED.get(os.environ.get('P')), HookType.REPLACE)\n", True),
    "table_entries_all_fit": (CHOSEN.replace("index_file):", "index_file, allow_patterns=None):")
                              + "def register():\n    HookRegistry.register(TARGET, HOOKS[os.environ['P']], HookType.REPLACE)\n", False),
    # the callable a plugin decorator made (F27 variant z2): a shim filtering keywords takes
    # anything; a plain wrapper passing *args, **kwargs on is the function's own signature; a
    # factory's wrapper with its own parameters is that signature
    "decorated_shim_fits": ("import inspect\n\n\ndef tolerant(fn):\n    accepted = inspect.signature(fn).parameters\n\n"
                            "    @functools.wraps(fn)\n    def shim(*args, **kwargs):\n"
                            "        return fn(*args, **{k: v for k, v in kwargs.items() if k in accepted})\n\n    return shim\n\n\n"
                            "@tolerant\ndef keep(hf_weights_files, hf_folder, index_file):\n    return hf_weights_files\n\n\n"
                            f"def register():\n    HookRegistry.register({TARGET!r}, keep, HookType.REPLACE)\n", False),
    "decorated_plain_wrapper": ("def logged(fn):\n    @functools.wraps(fn)\n    def wrapper(*args, **kwargs):\n"
                                "        return fn(*args, **kwargs)\n\n    return wrapper\n\n\n"
                                "@logged\ndef keep(hf_weights_files, hf_folder, index_file):\n    return hf_weights_files\n\n\n"
                                f"def register():\n    HookRegistry.register({TARGET!r}, keep, HookType.REPLACE)\n", True),
    "decorated_factory_own_parameters": ("def retried(times):\n    def deco(fn):\n        def wrapper(hf_weights_files, hf_folder, index_file):\n"
                                         "            return fn(hf_weights_files, hf_folder, index_file)\n        return wrapper\n    return deco\n\n\n"
                                         "@retried(times=2)\ndef keep(*args, **kwargs):\n    return args[0]\n\n\n"
                                         f"def register():\n    HookRegistry.register({TARGET!r}, keep, HookType.REPLACE)\n", True),
    # the target a member of a plugin enum (F05 variant z2): a str mix-in's `.value`, a StrEnum
    # member itself, a plain Enum's `.value`; its `.name` building the target
    "enum_str_mixin_value": ("import enum\n\n\nclass Target(str, enum.Enum):\n    FILTER = " + repr(TARGET) + "\n\n\n"
                             "def keep(hf_weights_files, hf_folder, index_file):\n    return hf_weights_files\n\n\n"
                             "def register():\n    HookRegistry.register(Target.FILTER.value, keep, HookType.REPLACE)\n", True),
    "strenum_member": ("from enum import StrEnum\n\n\nclass Target(StrEnum):\n    FILTER = " + repr(TARGET) + "\n\n\n"
                       "def keep(hf_weights_files, hf_folder, index_file):\n    return hf_weights_files\n\n\n"
                       "def register():\n    HookRegistry.register(Target.FILTER, keep, HookType.REPLACE)\n", True),
    "enum_value_and_name": ("from enum import Enum\n\n\nclass Module(Enum):\n    filter_files = 'sglang.srt.model_loader.weight_utils'\n\n\n"
                            "def keep(hf_weights_files, hf_folder, index_file, **kwargs):\n    return hf_weights_files\n\n\n"
                            "def register():\n"
                            "    HookRegistry.register(f'{Module.filter_files.value}.{Module.filter_files.name}', keep, HookType.REPLACE)\n", False),
    # the target an attribute of a module-level object (F06 variant u1): a SimpleNamespace, a
    # plugin dataclass record, a plain object whose __init__ stores it; written over afterwards,
    # the stored value is not what the registration reads
    "target_simple_namespace": ("from types import SimpleNamespace\n\nTARGETS = SimpleNamespace(filter=" + repr(TARGET) + ")\n\n\n"
                                "def keep(hf_weights_files, hf_folder, index_file):\n    return hf_weights_files\n\n\n"
                                "def register():\n    HookRegistry.register(TARGETS.filter, keep, HookType.REPLACE)\n", True),
    "target_dataclass_record": ("from dataclasses import dataclass\n\n\n@dataclass(frozen=True)\nclass Targets:\n    filter: str\n\n\n"
                                "TARGETS = Targets(filter=" + repr(TARGET) + ")\n\n\n"
                                "def keep(hf_weights_files, hf_folder, index_file):\n    return hf_weights_files\n\n\n"
                                "def register():\n    HookRegistry.register(TARGETS.filter, keep, HookType.REPLACE)\n", True),
    "target_init_object_fits": ("class Targets:\n    def __init__(self, module):\n        self.filter = module + '.filter_files'\n\n\n"
                                "TARGETS = Targets('sglang.srt.model_loader.weight_utils')\n\n\n"
                                "def keep(hf_weights_files, hf_folder, index_file, **kwargs):\n    return hf_weights_files\n\n\n"
                                "def register():\n    HookRegistry.register(TARGETS.filter, keep, HookType.REPLACE)\n", False),
    # the target computed by the record's class (F06 variant t1): a @property, a
    # functools.cached_property, a one-return method, each reading the record's fields
    "target_record_property": ("from dataclasses import dataclass\n\n\n@dataclass(frozen=True)\nclass Spec:\n    owner: str\n    attr: str\n\n"
                               "    @property\n    def target(self):\n        return f'{self.owner}.{self.attr}'\n\n\n"
                               "SPECS = (Spec('sglang.srt.model_loader.weight_utils', 'filter_files'),)\n\n\n"
                               "def keep(hf_weights_files, hf_folder, index_file):\n    return hf_weights_files\n\n\n"
                               "def register():\n    for spec in SPECS:\n        HookRegistry.register(spec.target, keep, HookType.REPLACE)\n", True),
    "target_record_cached_property": ("from typing import NamedTuple\n\n\nclass Spec(NamedTuple):\n    module: str\n\n"
                                      "    @functools.cached_property\n    def target(self):\n        return self.module + '.filter_files'\n\n\n"
                                      "SPEC = Spec('sglang.srt.model_loader.weight_utils')\n\n\n"
                                      "def keep(hf_weights_files, hf_folder, index_file):\n    return hf_weights_files\n\n\n"
                                      "def register():\n    HookRegistry.register(SPEC.target, keep, HookType.REPLACE)\n", True),
    "target_record_method_fits": ("class Spec:\n    def __init__(self, owner, attr):\n        self.owner = owner\n        self.attr = attr\n\n"
                                  "    def target(self, sep='.'):\n        return sep.join((self.owner, self.attr))\n\n\n"
                                  "SPEC = Spec('sglang.srt.model_loader.weight_utils', 'filter_files')\n\n\n"
                                  "def keep(hf_weights_files, hf_folder, index_file, **kwargs):\n    return hf_weights_files\n\n\n"
                                  "def register():\n    HookRegistry.register(SPEC.target(), keep, HookType.REPLACE)\n", False),
    # the record registers itself (F34 variant s1, F32 variant v1): a method reads self's fields,
    # called on each record a loop, a comprehension or a plain call goes through
    "record_installs_itself_loop": ("from dataclasses import dataclass\n\n\n@dataclass(frozen=True)\nclass Hook:\n    target: str\n    fn: object\n"
                                    "    kind: object = HookType.REPLACE\n\n    def install(self):\n        HookRegistry.register(self.target, self.fn, self.kind)\n\n\n"
                                    "def keep(hf_weights_files, hf_folder, index_file):\n    return hf_weights_files\n\n\n"
                                    f"HOOKS = (Hook({TARGET!r}, keep),)\n\n\n"
                                    "def register():\n    for hook in HOOKS:\n        hook.install()\n", True),
    "record_installs_itself_comprehension": ("from typing import NamedTuple\n\n\nclass Hook(NamedTuple):\n    target: str\n    fn: object\n\n"
                                             "    def install(self, registry=HookRegistry):\n        registry.register(self.target, self.fn, HookType.REPLACE)\n\n\n"
                                             "def keep(hf_weights_files, hf_folder, index_file):\n    return hf_weights_files\n\n\n"
                                             "def register():\n    [h.install() for h in [Hook(" + repr(TARGET) + ", keep)]]\n", True),
    # targets, hooks and kinds in parallel tuples zipped, the kind looked up by value (F34 variant t2)
    "zip_parallel_tuples": ("def keep(hf_weights_files, hf_folder, index_file):\n    return hf_weights_files\n\n\n"
                            f"TARGETS = ({TARGET!r},)\nHOOKS = (keep,)\nKINDS = ('replace',)\n\n\n"
                            "def register():\n    for target, hook, kind in zip(TARGETS, HOOKS, KINDS):\n"
                            "        HookRegistry.register(target, hook, HookType(kind))\n", True),
    # a function bound to an object by hand (F27 variant t1): the object takes its first parameter
    "method_type": ("import types\n\n\nclass Policy:\n    strict = False\n\n\n"
                    "def keep(policy, hf_weights_files, hf_folder, index_file):\n    return hf_weights_files\n\n\n"
                    f"def register():\n    HookRegistry.register({TARGET!r}, types.MethodType(keep, Policy()), HookType.REPLACE)\n", True),
    "method_type_imported_fits": ("from types import MethodType\n\n\n"
                                  "def keep(policy, hf_weights_files, hf_folder, index_file, allow_patterns=None):\n    return hf_weights_files\n\n\n"
                                  f"def register():\n    HookRegistry.register({TARGET!r}, MethodType(keep, object()), HookType.REPLACE)\n", False),
    "descriptor_get": ("def keep(policy, hf_weights_files, hf_folder, index_file):\n    return hf_weights_files\n\n\n"
                       f"def register():\n    HookRegistry.register({TARGET!r}, keep.__get__({{'strict': True}}), HookType.REPLACE)\n", True),
    # the hook a plugin object's __call__ returns (F30 variant s2): the object in a local, made
    # and called at once, kept at module level
    "callable_builder_local": ("class Builder:\n    def __init__(self, strict):\n        self.strict = strict\n\n"
                               "    def __call__(self):\n        def keep(hf_weights_files, hf_folder, index_file):\n            return hf_weights_files\n\n        return keep\n\n\n"
                               f"def register():\n    builder = Builder(strict=True)\n    HookRegistry.register({TARGET!r}, builder(), HookType.REPLACE)\n", True),
    "callable_builder_at_once": ("from dataclasses import dataclass\n\n\n@dataclass\nclass Builder:\n    strict: bool = False\n\n"
                                 "    def __call__(self):\n        def keep(hf_weights_files, hf_folder, index_file):\n            return hf_weights_files\n\n        return keep\n\n\n"
                                 f"def register():\n    HookRegistry.register({TARGET!r}, Builder()(), HookType.REPLACE)\n", True),
    "callable_builder_module_fits": ("class Builder:\n    def __call__(self):\n        def keep(hf_weights_files, hf_folder, index_file, **kwargs):\n"
                                     "            return hf_weights_files\n\n        return keep\n\n\nBUILD = Builder()\n\n\n"
                                     f"def register():\n    HookRegistry.register({TARGET!r}, BUILD(), HookType.REPLACE)\n", False),
    # the hook looked up by name (F03 variant s1): pkgutil.resolve_name("mod:f") or ("mod.f"), an
    # entry of a table of functions
    "resolve_name": ("import pkgutil\n\n\ndef keep(hf_weights_files, hf_folder, index_file):\n    return hf_weights_files\n\n\n"
                     f"def register():\n    for target, impl in {{{TARGET!r}: 'p.hooks:keep'}}.items():\n"
                     "        HookRegistry.register(target, pkgutil.resolve_name(impl), HookType.REPLACE)\n", True),
    "resolve_name_dotted": ("import pkgutil\n\n\ndef keep(hf_weights_files, hf_folder, index_file):\n    return hf_weights_files\n\n\n"
                            f"def register():\n    HookRegistry.register({TARGET!r}, pkgutil.resolve_name('p.hooks.keep'), HookType.REPLACE)\n", True),
    "table_entry_fits": ("def keep(hf_weights_files, hf_folder, index_file, **kwargs):\n    return hf_weights_files\n\n\nIMPLS = {'filter': keep}\n\n\n"
                         f"def register():\n    HookRegistry.register({TARGET!r}, IMPLS['filter'], HookType.REPLACE)\n", False),
    # an instance of a plugin class as the hook (F27 variant p1): its __call__, self bound -- kept in a local, a
    # dataclass instance in a local, made inline
    "instance_in_a_local": ("class Filter:\n    def __init__(self, strict=False):\n        self.strict = strict\n\n"
                            "    def __call__(self, hf_weights_files, hf_folder, index_file):\n        return hf_weights_files\n\n\n"
                            f"def register():\n    shard_filter = Filter(strict=True)\n    HookRegistry.register({TARGET!r}, shard_filter, HookType.REPLACE)\n", True),
    "dataclass_instance_in_a_local": ("from dataclasses import dataclass\n\n\n@dataclass\nclass Filter:\n    strict: bool = False\n\n"
                                      "    def __call__(self, hf_weights_files, hf_folder, index_file):\n        return hf_weights_files\n\n\n"
                                      f"def register():\n    chosen = Filter(strict=False)\n    HookRegistry.register({TARGET!r}, chosen, HookType.REPLACE)\n", True),
    # (F27 variant r2) an instance kept in a module global, plain or annotated, handed over by keyword
    "instance_in_a_module_global": ("class Filter:\n    def __init__(self, index_key='weight_map'):\n        self.index_key = index_key\n        self.calls = 0\n\n"
                                    "    def __call__(self, hf_weights_files, hf_folder, index_file):\n        self.calls += 1\n        return hf_weights_files\n\n\n"
                                    "_FILTER = Filter(index_key='weight_map')\n\n\n"
                                    f"def register():\n    HookRegistry.register(target={TARGET!r}, hook=_FILTER, hook_type=HookType.REPLACE)\n", True),
    "instance_in_an_annotated_module_global_fits": ("class Filter:\n    def __call__(self, hf_weights_files, hf_folder, index_file, **kwargs):\n        return hf_weights_files\n\n\n"
                                                    "_FILTER: Filter = Filter()\n\n\n"
                                                    f"def register():\n    HookRegistry.register({TARGET!r}, _FILTER, HookType.REPLACE)\n", False),
    "instance_inline_fits": ("class Filter:\n    def __call__(self, hf_weights_files, hf_folder, index_file, allow_patterns=None):\n        return hf_weights_files\n\n\n"
                             f"def register():\n    HookRegistry.register({TARGET!r}, Filter(), HookType.REPLACE)\n", False),
    # a factory returning (target, hook) that the caller unpacks (F30 variant p1): a tuple, a list, a local pair
    "factory_returns_target_and_hook": ("def make(strict):\n    def keep(hf_weights_files, hf_folder, index_file):\n        return hf_weights_files\n\n"
                                        f"    return {TARGET!r}, keep\n\n\n"
                                        "def register():\n    target, hook = make(True)\n    HookRegistry.register(target, hook, HookType.REPLACE)\n", True),
    "factory_returns_a_list_fits": ("def make(strict):\n    def keep(hf_weights_files, hf_folder, index_file, **kwargs):\n        return hf_weights_files\n\n"
                                    f"    return [{TARGET!r}, keep]\n\n\n"
                                    "def register():\n    target, hook = make(True)\n    HookRegistry.register(target, hook, HookType.REPLACE)\n", False),
    "factory_returns_a_bound_pair": ("def make(strict):\n    def keep(hf_weights_files, hf_folder, index_file):\n        return hf_weights_files\n\n"
                                     f"    pair = ({TARGET!r}, keep)\n    return pair\n\n\n"
                                     "def register():\n    HookRegistry.register(*make(True), HookType.REPLACE)\n", True),
    # a decorator factory applied at once (F30 variant x1): the hook is what deco(impl) returns, not deco
    "decorator_factory_applied_fits": ("import functools\n\n\ndef with_config(cfg):\n    def deco(impl):\n        @functools.wraps(impl)\n"
                                       "        def around(*args, **kwargs):\n            return impl(cfg, *args, **kwargs)\n\n        return around\n\n"
                                       "    return deco\n\n\ndef keep(cfg, hf_weights_files, hf_folder, index_file):\n    return hf_weights_files\n\n\n"
                                       f"def register():\n    HookRegistry.register({TARGET!r}, with_config(1)(keep), HookType.REPLACE)\n", False),
    "record_installs_itself_fits": ("class Hook:\n    def __init__(self, target, fn):\n        self.target = target\n        self.fn = fn\n\n"
                                    "    def install(self):\n        HookRegistry.register(self.target, self.fn, HookType.REPLACE)\n\n\n"
                                    "def keep(hf_weights_files, hf_folder, index_file, **kwargs):\n    return hf_weights_files\n\n\n"
                                    f"def register():\n    Hook({TARGET!r}, keep).install()\n", False),
}


def _hook(tmp_path, upstream: str, source: str) -> tuple[int, dict]:
    """`harness check` of a plugin whose p/hooks.py is HEAD + `source`: (exit code, the hook's finding)."""
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"p": "p.hooks:register"}), "p/__init__.py": "", "p/hooks.py": HEAD + source})
    code, doc = check(root, upstream)
    # the hook's own finding (a record built from the target's parts is a reference of its own); of
    # hooks a run-time choice registers, the one that breaks
    hooks = sorted((f for f in doc["findings"] if f["target"] == TARGET and f["kind"] == "hook"), key=lambda f: not f["breaking"])
    return code, hooks[0] if hooks else by_target(doc["findings"])[TARGET]


@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
def test_a_hook_is_judged_against_the_call_however_it_is_written(upstreams, tmp_path, spelling):
    _, new = upstreams
    source, breaks = SPELLINGS[spelling]
    code, hook = _hook(tmp_path, new, source)
    assert hook["breaking"] is breaks, hook
    if breaks:
        assert hook["status"] == "signature_changed" and "allow_patterns" in hook["detail"] and code == 1
    else:
        assert code == 0


# hooks a helper registers in a loop over what its callers hand it (F34 variant r2): one hook per
# element, each judged with its own target and callable
GONE_TARGET = "sglang.srt.model_loader.weight_utils.gone_helper"
LOOPED = {
    "variadic_tuples": ("def _install(*specs):\n    for target, fn, kind in specs:\n        HookRegistry.register(target, fn, kind)\n\n\n"
                        "def register():\n    _install(({t!r}, keep, HookType.REPLACE), ({g!r}, keep, HookType.AFTER))\n"),
    "list_parameter": ("def _install(specs):\n    for target, fn, kind in specs:\n        HookRegistry.register(target, fn, kind)\n\n\n"
                       "def register():\n    _install([({t!r}, keep, HookType.REPLACE), ({g!r}, keep, HookType.AFTER)])\n"),
    "unpacked_in_the_body": ("def _install(*specs):\n    for spec in specs:\n        target, fn, kind = spec\n"
                             "        HookRegistry.register(target, fn, kind)\n\n\n"
                             "def register():\n    _install(({t!r}, keep, HookType.REPLACE), ({g!r}, keep, HookType.AFTER))\n"),
}


@pytest.mark.parametrize("spelling", sorted(LOOPED))
def test_hooks_a_helper_registers_in_a_loop_over_its_arguments_are_each_judged(upstreams, tmp_path, spelling):
    _, new = upstreams
    _both_hooks_judged(tmp_path, new, "def keep(hf_weights_files, hf_folder, index_file):\n    return hf_weights_files\n\n\n"
                       + LOOPED[spelling].format(t=TARGET, g=GONE_TARGET))


def _both_hooks_judged(tmp_path, upstream: str, source: str) -> dict[str, dict]:
    """`harness check` of p/hooks.py (HEAD + `source`) registering a REPLACE hook on TARGET that
    lacks allow_patterns and an AFTER hook on GONE_TARGET: each judged as itself. The hook findings."""
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"p": "p.hooks:register"}), "p/__init__.py": "", "p/hooks.py": HEAD + source})
    code, doc = check(root, upstream)
    hooks = {f["target"]: f for f in doc["findings"] if f["kind"] == "hook"}
    assert (hooks[TARGET]["status"], hooks[TARGET]["hook_type"], hooks[TARGET]["breaking"]) == ("signature_changed", "REPLACE", True), hooks
    assert (hooks[GONE_TARGET]["status"], hooks[GONE_TARGET]["hook_type"]) == ("missing", "AFTER"), hooks
    assert code == 1
    return hooks


# hooks declared as subclasses of a plugin base, found with `Base.__subclasses__()` (F34 variant r1):
# its direct subclasses, each with its class attributes; a grandchild is no direct subclass
SUBCLASS_HOOKS = {
    "for_loop": "def register():\n    for spec in _Hook.__subclasses__():\n        HookRegistry.register(spec.target, spec.hook, spec.kind)\n",
    "comprehension": "def register():\n    return [HookRegistry.register(c.target, c.hook, c.kind) for c in _Hook.__subclasses__()]\n",
    "map_lambda": "def register():\n    list(map(lambda c: HookRegistry.register(c.target, c.hook, c.kind), _Hook.__subclasses__()))\n",
}


@pytest.mark.parametrize("spelling", sorted(SUBCLASS_HOOKS))
def test_hooks_declared_as_subclasses_of_a_plugin_base_are_each_judged(upstreams, tmp_path, spelling):
    _, new = upstreams
    source = (f"class _Hook:\n    target = None\n    kind = HookType.AFTER\n\n\n"
              f"class _Keep(_Hook):\n    target = {TARGET!r}\n    kind = HookType.REPLACE\n\n"
              f"    @staticmethod\n    def hook(hf_weights_files, hf_folder, index_file):\n        return hf_weights_files\n\n\n"
              f"class _Gone(_Hook):\n    target = {GONE_TARGET!r}\n\n    @staticmethod\n    def hook(result, *args, **kwargs):\n        return result\n\n\n"
              f"class _Grandchild(_Gone):\n    target = 'sglang.srt.model_loader.weight_utils.never_registered'\n\n\n" + SUBCLASS_HOOKS[spelling])
    hooks = _both_hooks_judged(tmp_path, new, source)
    assert "sglang.srt.model_loader.weight_utils.never_registered" not in hooks, hooks


# hooks declared by class keywords (sixteenth set F34-k2): `__init_subclass__(cls, /, target, kind=AFTER)`
# keeps them as class attributes (its defaults where a class statement gives none) and the class in a
# registry; a classmethod reads `cls.target` for each class it is called on
_KEYWORD_BASE = ("class _Hook:\n    registry = []\n\n    def __init_subclass__(cls, /, target, kind=HookType.AFTER{rest}):\n"
                 "        super().__init_subclass__()\n        cls.target = target\n        cls.kind = kind\n        _Hook.registry.append(cls)\n\n"
                 "    @staticmethod\n    def hook(result, *args, **kwargs):\n        return result\n\n"
                 "    @classmethod\n    def install(cls):\n        HookRegistry.register(cls.target, cls.hook, cls.kind)\n\n\n"
                 f"class _Keep(_Hook, target={TARGET!r}, kind=HookType.REPLACE):\n"
                 "    @staticmethod\n    def hook(hf_weights_files, hf_folder, index_file):\n        return hf_weights_files\n\n\n"
                 f"class _Gone(_Hook, target={GONE_TARGET!r}):\n    pass\n\n\n")
KEYWORD_HOOKS = {
    "registry_loop": _KEYWORD_BASE.format(rest="") + "def register():\n    for hook_cls in _Hook.registry:\n        hook_cls.install()\n",
    "keyword_only_each_class_named": _KEYWORD_BASE.format(rest=", **kwargs").replace("/, target,", "*, target,")
    + "def register():\n    _Keep.install()\n    _Gone.install()\n",
    "comprehension_over_tuple": _KEYWORD_BASE.format(rest="") + "def register():\n    [c.install() for c in tuple(_Hook.registry)]\n",
}


@pytest.mark.parametrize("spelling", sorted(KEYWORD_HOOKS))
def test_hooks_declared_by_class_keywords_are_each_judged(upstreams, tmp_path, spelling):
    _, new = upstreams
    _both_hooks_judged(tmp_path, new, KEYWORD_HOOKS[spelling])


# rows of (target, hook, kind) handed to HookRegistry.register by itertools.starmap (F34 variant q1), or
# columns by map
STARMAPS = {
    "list_of_starmap": "import itertools\n\n\ndef register():\n    list(itertools.starmap(HookRegistry.register, _ROWS))\n",
    "for_over_starmap_alias": "from itertools import starmap as each\n\n\ndef register():\n    for _ in each(HookRegistry.register, _ROWS):\n        pass\n",
    "tuple_of_starmap_module_level": "from itertools import starmap\n\nDONE = tuple(starmap(HookRegistry.register, _ROWS))\n\n\ndef register():\n    return DONE\n",
    # the columns handed to map() as parallel sequences (F05 variant o2): map(f, a, b, c) calls f(a[i], b[i], c[i])
    "list_of_map_over_columns": "def register():\n    list(map(HookRegistry.register, _TARGETS, _HOOKS, _KINDS))\n",
    "for_over_map_lambda_columns": ("def register():\n    for _ in map(lambda t, h, k: HookRegistry.register(t, h, k), _TARGETS, _HOOKS, _KINDS):\n"
                                    "        pass\n"),
    "unpacked_map_over_columns": "def register():\n    return [*map(HookRegistry.register, _TARGETS, _HOOKS, _KINDS)]\n",
}


@pytest.mark.parametrize("spelling", sorted(STARMAPS))
def test_hooks_registered_by_starmap_over_rows_are_each_judged(upstreams, tmp_path, spelling):
    _, new = upstreams
    source = ("def keep(hf_weights_files, hf_folder, index_file):\n    return hf_weights_files\n\n\n"
              f"_ROWS = (({TARGET!r}, keep, HookType.REPLACE), ({GONE_TARGET!r}, keep, HookType.AFTER))\n"
              f"_TARGETS, _HOOKS, _KINDS = ({TARGET!r}, {GONE_TARGET!r}), (keep, keep), (HookType.REPLACE, HookType.AFTER)\n\n\n" + STARMAPS[spelling])
    _both_hooks_judged(tmp_path, new, source)


def test_partial_takes_bound_arguments_away_as_inspect_does():
    import functools
    import inspect

    def f(a, b, /, c, d=1, *args, e, **kw):
        return a

    params = (Param("a", "posonly", None), Param("b", "posonly", None), Param("c", "pos", None), Param("d", "pos", "1"),
              Param("args", "var", None), Param("e", "kwonly", None), Param("kw", "varkw", None))
    for positional, keywords in ((1, []), (0, ["c"]), (2, ["d"]), (0, ["e"])):
        bound = functools.partial(f, *range(positional), **{k: 0 for k in keywords})
        expected = [(p.name, p.kind) for p in inspect.signature(bound).parameters.values()]
        kinds = {"posonly": inspect.Parameter.POSITIONAL_ONLY, "pos": inspect.Parameter.POSITIONAL_OR_KEYWORD, "var": inspect.Parameter.VAR_POSITIONAL,
                 "kwonly": inspect.Parameter.KEYWORD_ONLY, "varkw": inspect.Parameter.VAR_KEYWORD}
        assert [(p.name, kinds[p.kind]) for p in partial_params(params, positional, keywords)] == expected, (positional, keywords)


# a callable taking *args and **kwargs forwards anything, unless it also has a keyword-only
# parameter without a default: no call names it (F30 variant u2)
FORWARDERS = {
    "closure_around": ("def make(cfg):\n    def fwd(original_fn, *args, cfg, **kwargs):\n        return original_fn(*args, **kwargs)\n"
                       "    return fwd\n\n\n"
                       f"def register():\n    HookRegistry.register({TARGET!r}, make(1), HookType.AROUND)\n", True),
    "lambda_replace": (f"def register():\n    HookRegistry.register({TARGET!r}, lambda *args, strict, **kwargs: args[0], HookType.REPLACE)\n", True),
    "def_after": ("def keep(result, *args, level, **kwargs):\n    return result\n\n\n"
                  f"def register():\n    HookRegistry.register({TARGET!r}, keep, HookType.AFTER)\n", True),
    "partial_binds_it_fits": ("def fwd(original_fn, *args, cfg, **kwargs):\n    return original_fn(*args, **kwargs)\n\n\n"
                              f"def register():\n    HookRegistry.register({TARGET!r}, functools.partial(fwd, cfg=1), HookType.AROUND)\n", False),
    "default_fits": ("def fwd(original_fn, *args, cfg=None, **kwargs):\n    return original_fn(*args, **kwargs)\n\n\n"
                     f"def register():\n    HookRegistry.register({TARGET!r}, fwd, HookType.AROUND)\n", False),
}


@pytest.mark.parametrize("spelling", sorted(FORWARDERS))
def test_a_forwarding_hook_with_a_required_keyword_only_parameter_breaks(upstreams, tmp_path, spelling):
    old, _ = upstreams
    source, breaks = FORWARDERS[spelling]
    code, hook = _hook(tmp_path, old, source)
    assert hook["breaking"] is breaks, hook
    assert code == (1 if breaks else 0)
    if breaks:
        assert "missing required argument" in hook["detail"], hook["detail"]


# a bound method of an object another plugin module makes (F27 variant v1), imported by name,
# through its module, or through an alias; whichever module is read first
OBJECT_IMPORTS = {
    "from_import": ("from p.objs import FILTER", "FILTER.keep"),
    "module_attribute": ("from p import objs", "objs.FILTER.keep"),
    "module_alias": ("import p.objs as o", "o.FILTER.keep"),
}


@pytest.mark.parametrize("fits", [False, True], ids=["lacks_keyword", "fits"])
@pytest.mark.parametrize("spelling", sorted(OBJECT_IMPORTS))
def test_a_bound_method_of_an_object_from_another_module_is_judged_without_self(upstreams, tmp_path, spelling, fits):
    _, new = upstreams
    imported, read = OBJECT_IMPORTS[spelling]
    extra = ", **kwargs" if fits else ""
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"p": "p.hooks:register"}), "p/__init__.py": "",
        "p/hooks.py": HEAD + f"{imported}\n\n\ndef register():\n    HookRegistry.register({TARGET!r}, {read}, HookType.REPLACE)\n",
        "p/objs.py": (f"class Filter:\n    def __init__(self, strict):\n        self.strict = strict\n\n"
                      f"    def keep(self, hf_weights_files, hf_folder, index_file{extra}):\n        return hf_weights_files\n\n\n"
                      "FILTER = Filter(strict=False)\n"),
    })
    code, doc = check(root, new)
    hook = by_target(doc["findings"])[TARGET]
    assert hook["breaking"] is not fits and code == (0 if fits else 1), hook


# an installer object whose method builds the target with another of its methods (sixteenth set
# F27-k1): a static method called through self, a longer plain method; the object made where a
# module function of the method's name calls it, or kept in a global. One hook per registration.
_INSTALLER = ("MODULE, NAME = TARGET.rpartition('.')[0], TARGET.rpartition('.')[2]\n\n\n"
              "class Keep:\n    def __init__(self, strict=True):\n        self.strict = strict\n\n"
              "    def __call__(self, hf_weights_files, hf_folder, index_file):\n        return hf_weights_files\n\n\n"
              "class _Installer:\n    def __init__(self, registry=HookRegistry):\n        self._registry = registry\n\n{target}\n"
              "    def install(self):\n        self._registry.register(self._target(MODULE, NAME), Keep(strict=False), HookType.REPLACE)\n\n\n")
INSTALLERS = {
    "static_method_through_self": _INSTALLER.format(target="    @staticmethod\n    def _target(module, name):\n        return '.'.join((module, name))\n")
    + "def install():\n    _Installer().install()\n\n\ndef register():\n    install()\n",
    "plain_method_longer_body": _INSTALLER.format(target="    def _target(self, module, name):\n        parts = [module]\n"
                                                         "        parts.append(name)\n        return '.'.join(parts)\n")
    + "def register():\n    _Installer().install()\n",
    "object_kept_in_a_global": _INSTALLER.format(target="    @staticmethod\n    def _target(module, name):\n        return f'{module}.{name}'\n")
    + "_ONCE = _Installer()\n\n\ndef install():\n    _ONCE.install()\n\n\ndef register():\n    install()\n",
}


@pytest.mark.parametrize("spelling", sorted(INSTALLERS))
def test_a_hook_target_an_installer_builds_with_its_own_method_is_judged_once(upstreams, tmp_path, spelling):
    _, new = upstreams
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"p": "p.hooks:register"}), "p/__init__.py": "",
                             "p/hooks.py": HEAD + f"TARGET = {TARGET!r}\n" + INSTALLERS[spelling]})
    code, doc = check(root, new)
    hooks = [f for f in doc["findings"] if f["kind"] == "hook"]
    assert [(f["target"], f["status"], f["breaking"]) for f in hooks] == [(TARGET, "signature_changed", True)], hooks
    assert "allow_patterns" in hooks[0]["detail"] and code == 1


# hooks a descriptor registers from __set_name__ when the class body binds it (sixteenth set
# F05-k1; the data model, "Creating the class object"): the target from the owner's constant and
# the attribute's name, the function the descriptor keeps
_DESCRIPTOR = ("class hooked:\n{init}\n    def __set_name__(self, owner, name):\n"
               "        HookRegistry.register(f'{{owner.UPSTREAM}}.{{name}}', self.fn, self.kind)\n        setattr(owner, name, staticmethod(self.fn))\n\n\n")
_OWNER = "class Patches:\n    UPSTREAM = TARGET.rpartition('.')[0]\n\n{body}\n\ndef register():\n    return Patches\n"
_KEEP = "(hf_weights_files, hf_folder, index_file{extra}):\n        return hf_weights_files\n"
DESCRIPTORS = {
    "decorator_factory_call": (_DESCRIPTOR.format(init="    def __init__(self, kind=HookType.AFTER):\n        self.kind = kind\n        self.fn = None\n\n"
                                                       "    def __call__(self, fn):\n        self.fn = fn\n        return self\n")
                               + _OWNER.format(body="    @hooked(HookType.REPLACE)\n    def filter_files" + _KEEP.format(extra="")), True),
    "plain_decorator": (_DESCRIPTOR.format(init="    def __init__(self, fn):\n        self.fn = fn\n        self.kind = HookType.REPLACE\n")
                        + _OWNER.format(body="    @hooked\n    def filter_files" + _KEEP.format(extra=", allow_patterns=None")), False),
    "assigned_instance": (_DESCRIPTOR.format(init="    def __init__(self, fn, kind):\n        self.fn = fn\n        self.kind = kind\n")
                          + "def _keep" + _KEEP.format(extra="").replace("        return", "    return") + "\n\n"
                          + _OWNER.format(body="    filter_files = hooked(_keep, HookType.REPLACE)\n"), True),
}


@pytest.mark.parametrize("spelling", sorted(DESCRIPTORS))
def test_a_hook_a_descriptor_registers_when_the_class_is_made_is_judged(upstreams, tmp_path, spelling):
    _, new = upstreams
    source, breaks = DESCRIPTORS[spelling]
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"p": "p.hooks:register"}), "p/__init__.py": "",
                             "p/hooks.py": HEAD + f"TARGET = {TARGET!r}\n\n\n" + source})
    code, doc = check(root, new)
    hooks = [f for f in doc["findings"] if f["kind"] == "hook"]
    assert [(f["target"], f["hook_type"], f["breaking"]) for f in hooks] == [(TARGET, "REPLACE", breaks)], hooks
    assert code == (1 if breaks else 0), hooks


# hook classes a metaclass collects when each class statement runs (fourteenth set F06-n2; the data
# model, "Metaclasses"): its __new__ keeping classes whose namespace has a target, its __init__
# keeping them by name; a class made in the branch of an `if` this release takes
_META_HOOKS = (f"class _Keep(_Hook):\n    target = {TARGET!r}\n    kind = HookType.REPLACE\n\n"
               "    @staticmethod\n    def hook(hf_weights_files, hf_folder, index_file):\n        return hf_weights_files\n\n\n")
_GONE_HOOK = f"class _Gone(_Hook):\n    target = {GONE_TARGET!r}\n\n    @staticmethod\n    def hook(result, *args, **kwargs):\n        return result\n"
METACLASSES = {
    "new_appends_when_namespace_has_a_target": (
        "class _Meta(type):\n    registry = []\n\n    def __new__(mcls, name, bases, namespace):\n"
        "        cls = super().__new__(mcls, name, bases, namespace)\n        if namespace.get('target'):\n            mcls.registry.append(cls)\n"
        "        return cls\n\n\nclass _Hook(metaclass=_Meta):\n    target = ''\n    kind = HookType.AFTER\n\n\n" + _META_HOOKS + _GONE_HOOK
        + "\n\ndef register():\n    for c in _Meta.registry:\n        HookRegistry.register(c.target, c.hook, c.kind)\n"),
    "init_keeps_by_name": (
        "_BY_NAME = {}\n\n\nclass _Meta(type):\n    def __init__(cls, name, bases, namespace):\n        super().__init__(name, bases, namespace)\n"
        "        if 'target' in namespace:\n            _BY_NAME[name] = cls\n\n\nclass _Base(metaclass=_Meta):\n    kind = HookType.AFTER\n\n\n"
        "class _Hook(_Base):\n    pass\n\n\n" + _META_HOOKS + _GONE_HOOK
        + "\n\ndef register():\n    for c in _BY_NAME.values():\n        HookRegistry.register(c.target, c.hook, c.kind)\n"),
    "class_made_in_the_branch_taken": (
        "class _Meta(type):\n    registry = []\n\n    def __new__(mcls, name, bases, namespace):\n"
        "        cls = super().__new__(mcls, name, bases, namespace)\n        if namespace.get('target'):\n            mcls.registry.append(cls)\n"
        "        return cls\n\n\nclass _Hook(metaclass=_Meta):\n    target = None\n    kind = HookType.AFTER\n\n\n" + _META_HOOKS
        + "if hasattr(HookRegistry, 'register'):\n" + "".join("    " + line + "\n" for line in _GONE_HOOK.splitlines())
        + "else:\n    class _Gone(_Hook):\n        target = 'sglang.srt.model_loader.weight_utils.never_registered'\n"
        + "\n\ndef register():\n    for c in _Meta.registry:\n        HookRegistry.register(c.target, c.hook, c.kind)\n"),
}


@pytest.mark.parametrize("spelling", sorted(METACLASSES))
def test_hook_classes_a_metaclass_collects_are_each_judged(upstreams, tmp_path, spelling):
    _, new = upstreams
    hooks = _both_hooks_judged(tmp_path, new, METACLASSES[spelling])
    assert "sglang.srt.model_loader.weight_utils.never_registered" not in hooks and len(hooks) == 2, hooks


@pytest.mark.parametrize("keywords", ["double_star", "named_default"])
def test_an_after_hook_every_call_of_the_target_binds_fits(upstreams, tmp_path, keywords):
    """An AFTER hook that leaves the target's new `allow_patterns` to `**kwargs` (or takes it by
    name) binds every call upstream makes (one passes it by keyword): it fits, `ok`, whatever
    its parameter list lacks positionally (eighteenth set F30-h1)."""
    _, new = upstreams
    extra = ", **kwargs" if keywords == "double_star" else ", *, allow_patterns=None"
    code, hook = _hook(tmp_path, new, f"def keep(result, hf_weights_files, hf_folder, index_file{extra}):\n    return result\n\n\n"
                       f"def register():\n    HookRegistry.register({TARGET!r}, keep, HookType.AFTER)\n")
    assert (hook["status"], hook["breaking"], code) == ("ok", False, 0), hook


MEMBERS = {
    # a class decorator factory hooking every function of the class it decorates (eighteenth set F06-h1)
    "getmembers_staticmethods": ("    @staticmethod\n    def filter_files(hf_weights_files, hf_folder, index_file):\n        return hf_weights_files\n\n"
                                 "    @staticmethod\n    def gone_helper(*args, **kwargs):\n        return None\n", ""),
    "getmembers_plain_functions_and_a_base": ("    def filter_files(hf_weights_files, hf_folder, index_file):\n        return hf_weights_files\n",
                                              "class _Base:\n    def gone_helper(*args, **kwargs):\n        return None\n\n\n"),
}


@pytest.mark.parametrize("spelling", sorted(MEMBERS))
def test_hooks_a_class_decorator_makes_of_each_function_of_the_class(upstreams, tmp_path, spelling):
    """`for name, fn in inspect.getmembers(cls, inspect.isfunction): register(f"{target}.{name}",
    fn, kind)` in a class decorator: one hook per function of the class and its plugin bases
    (classmethods and properties are no functions there), each judged."""
    _, new = upstreams
    body, base = MEMBERS[spelling]
    source = ("import inspect\n\n\ndef hooks_on(target, kind=HookType.REPLACE):\n    def decorate(cls):\n"
              "        for name, fn in inspect.getmembers(cls, inspect.isfunction):\n            if name.startswith('_'):\n                continue\n"
              "            HookRegistry.register(f'{target}.{name}', fn, kind if name != 'gone_helper' else HookType.AFTER)\n        return cls\n\n    return decorate\n\n\n"
              + base + "@hooks_on('sglang.srt.model_loader.weight_utils')\nclass Hooks" + ("(_Base)" if base else "") + ":\n" + body
              + "\n    @classmethod\n    def not_a_hook(cls):\n        return cls\n\n\ndef register():\n    pass\n")
    hooks = _both_hooks_judged(tmp_path, new, source)
    assert not any(t.endswith("not_a_hook") for t in hooks), hooks


PATCHERS = {
    # a decorator factory records (module, attr, fn) records; a patcher drains them (eighteenth set V-h2)
    "drained_inline_pop": "    def apply_all(self):\n        while PENDING:\n            self.apply(PENDING.pop(0))\n",
    "drained_inline_popleft_of_a_deque": "    def apply_all(self):\n        while PENDING:\n            self.apply(PENDING.popleft())\n",
    "plain_loop": "    def apply_all(self):\n        for patch in PENDING:\n            self.apply(patch)\n",
}


@pytest.mark.parametrize("fits", [True, False], ids=["fits", "misfits"])
@pytest.mark.parametrize("spelling", sorted(PATCHERS))
def test_a_patch_recorded_by_a_decorator_and_applied_by_a_patcher_object(upstreams, tmp_path, spelling, fits):
    """`@patches(module)` records Patch(module, attr or fn.__name__, fn); a patcher object applies
    each with `setattr(import_module(p.module), p.attr, p.replacement)`: the replacement is
    judged against upstream's calls of the function it replaces."""
    _, new = upstreams
    queue = "collections.deque()" if "deque" in spelling else "[]"
    source = ("import collections\nimport importlib\nfrom typing import NamedTuple\n\n\nclass Patch(NamedTuple):\n    module: str\n    attr: str\n"
              f"    replacement: object\n\n\nPENDING = {queue}\n\n\ndef patches(module, attr=None):\n    def deco(fn):\n"
              "        PENDING.append(Patch(module, attr or fn.__name__, fn))\n        return fn\n\n    return deco\n\n\n"
              "class Patcher:\n    def apply(self, patch):\n        setattr(importlib.import_module(patch.module), patch.attr, patch.replacement)\n\n"
              + PATCHERS[spelling] + "\n\n@patches('sglang.srt.model_loader.weight_utils')\n"
              f"def filter_files(hf_weights_files, hf_folder, index_file{', allow_patterns=None' if fits else ''}):\n    return hf_weights_files\n\n\n"
              "def register():\n    Patcher().apply_all()\n")
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"p": "p.hooks:register"}), "p/__init__.py": "", "p/hooks.py": source})
    code, doc = check(root, new)
    patch = next((f for f in doc["findings"] if f["kind"] == "patch" and f["target"] == TARGET), None)
    if fits:
        assert (patch is None or not patch["breaking"]) and code == 0, doc["findings"]
    else:
        assert patch is not None and patch["breaking"] and "allow_patterns" in patch["detail"] and code == 1, doc["findings"]


# replacements a decorator only marks (an attribute on the function), found by walking a plugin
# module with inspect.getmembers(module, inspect.isfunction) (twenty-fourth set F22-d2)
MARKERS = {
    "setattr_with_a_named_marker": ("_MARK = '__kops_replaces__'\n\n\ndef replaces(spec):\n    def mark(fn):\n        setattr(fn, _MARK, spec)\n"
                                    "        return fn\n    return mark\n", "from p import kernels\nfrom p.marks import _MARK\n", "kernels", "_MARK"),
    "attribute_marker": ("def replaces(spec):\n    def mark(fn):\n        fn.__replaces__ = spec\n        return fn\n    return mark\n",
                         "from p import kernels\n", "kernels", "'__replaces__'"),
    "module_by_import_module": ("def replaces(spec):\n    def mark(fn):\n        setattr(fn, '_spec', spec)\n        return fn\n    return mark\n",
                                "", "importlib.import_module('p.kernels')", "'_spec'"),
}


@pytest.mark.parametrize("fits", [True, False], ids=["fits", "misfits"])
@pytest.mark.parametrize("spelling", sorted(MARKERS))
def test_replacements_a_decorator_marks_are_found_by_walking_their_module(upstreams, tmp_path, spelling, fits):
    _, new = upstreams
    marks, imports, walked, marker = MARKERS[spelling]
    kernels = (f"from p.marks import replaces\n\n\n@replaces('{TARGET.rpartition('.')[0]}:filter_files')\n"
               f"def dev_filter_files(hf_weights_files, hf_folder, index_file{', allow_patterns=None' if fits else ''}):\n"
               "    return hf_weights_files\n\n\ndef _unmarked(x):\n    return x\n")
    loader = ("import importlib\nimport inspect\n" + imports + "\n\ndef register():\n"
              f"    for name, fn in inspect.getmembers({walked}, inspect.isfunction):\n        spec = getattr(fn, {marker}, None)\n"
              "        if spec is None:\n            continue\n        module_name, _, attr = spec.partition(':')\n"
              "        setattr(importlib.import_module(module_name), attr, fn)\n")
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"p": "p.loader:register"}), "p/__init__.py": "",
                             "p/marks.py": marks, "p/kernels.py": kernels, "p/loader.py": loader, "p/legacy.py": "import sglang.srt.gone_module\n"})
    code, doc = check(root, new)
    patches = [f for f in doc["findings"] if f["kind"] == "patch"]
    assert [f["target"] for f in patches] in ([TARGET], []) and not any(f["live"] for f in doc["findings"] if f["file"] == "p/legacy.py"), doc["findings"]
    if fits:
        assert (not patches or not patches[0]["breaking"]) and code == 0, doc["findings"]
    else:
        assert patches and patches[0]["breaking"] and "allow_patterns" in patches[0]["detail"] and code == 1, doc["findings"]


# hooks registered through a plugin subclass of HookRegistry (thirty-first set F27-k1): its
# `register` inherited, a classmethod that logs and passes target, hook and type on to
# `super().register`, one forwarding *args/**kwargs; a subclass whose `register` keeps the hooks
# to itself registers none
_KEEP = "def keep(hf_weights_files, hf_folder, index_file):\n    return hf_weights_files\n\n\n"
_AFTER = "def after(result, *args, **kwargs):\n    return result\n\n\n"
_USE = (f"def register():\n    Registry.register({TARGET!r}, keep, HookType.REPLACE)\n"
        f"    Registry.register({GONE_TARGET!r}, after, HookType.AFTER)\n")
REGISTRY_SUBCLASSES = {
    "inherited": "class Registry(HookRegistry):\n    pass\n\n\n",
    "classmethod_passing_on": ("class Registry(HookRegistry):\n    @classmethod\n    def register(cls, target, hook, hook_type=HookType.AFTER, **kwargs):\n"
                               "        print('hook on', target)\n        super().register(target, hook, hook_type, **kwargs)\n\n\n"),
    "forwarding_args": ("class _Base(HookRegistry):\n    pass\n\n\nclass Registry(_Base):\n    @classmethod\n    def register(cls, *args, **kwargs):\n"
                        "        return super().register(*args, **kwargs)\n\n\n"),
}


@pytest.mark.parametrize("spelling", sorted(REGISTRY_SUBCLASSES))
def test_hooks_registered_through_a_subclass_of_the_registry_are_judged(upstreams, tmp_path, spelling):
    _, new = upstreams
    _both_hooks_judged(tmp_path, new, REGISTRY_SUBCLASSES[spelling] + _KEEP + _AFTER + _USE)


def test_a_registry_subclass_keeping_hooks_to_itself_registers_none(upstreams, tmp_path):
    _, new = upstreams
    source = ("class Registry(HookRegistry):\n    mine = []\n\n    @classmethod\n    def register(cls, target, hook, hook_type=HookType.AFTER):\n"
              "        cls.mine.append((target, hook, hook_type))\n\n\n") + _KEEP + _AFTER + _USE
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"p": "p.hooks:register"}), "p/__init__.py": "", "p/hooks.py": HEAD + source})
    code, doc = check(root, new)
    assert not [f for f in doc["findings"] if f["kind"] == "hook"] and code != 1, doc["findings"]


# a hook whose callable a module nothing imports defines is never registered: the function exists
# only once its module ran (thirty-first set F03-k1), whether that module queues it through the
# registry module's decorator, applies that decorator by a call, or declares a subclass whose
# __init_subclass__ queues it; imported, it is live
_QUEUE = ("_PENDING = []\n\n\ndef replaces(target, kind=HookType.REPLACE):\n    def queue(fn):\n        _PENDING.append((target, fn, kind))\n"
          "        return fn\n\n    return queue\n\n\nclass Hook:\n    def __init_subclass__(cls, target, **kwargs):\n"
          "        super().__init_subclass__(**kwargs)\n        _PENDING.append((target, cls.hook, HookType.AFTER))\n\n\n")
QUEUES = {
    "decorator": "from p.registry import replaces\n\n\n@replaces({target!r}, HookType.AFTER)\ndef after(result, *args, **kwargs):\n    return result\n",
    "decorator_applied_by_a_call": ("from p import registry\n\n\ndef after(result, *args, **kwargs):\n    return result\n\n\n"
                                    "registry.replaces({target!r}, HookType.AFTER)(after)\n"),
    "subclass_keyword": ("from p.registry import Hook\n\n\nclass After(Hook, target={target!r}):\n    @staticmethod\n"
                         "    def hook(result, *args, **kwargs):\n        return result\n"),
}


@pytest.mark.parametrize("imported", [False, True], ids=["never_imported", "imported"])
@pytest.mark.parametrize("spelling", sorted(QUEUES))
def test_a_hook_defined_in_a_module_nothing_imports_is_never_registered(upstreams, tmp_path, spelling, imported):
    _, new = upstreams
    registry = (HEAD + "import importlib\n\n" + _QUEUE + "def register():\n" + ("    importlib.import_module('p.extra')\n" if imported else "")
                + "    for target, hook, kind in _PENDING:\n        HookRegistry.register(target, hook, kind)\n")
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"p": "p.registry:register"}), "p/__init__.py": "", "p/registry.py": registry,
                             "p/extra.py": "from sglang.srt.plugins.hook_registry import HookType\n" + QUEUES[spelling].format(target=GONE_TARGET)},
                  name=f"{spelling}-{imported}")
    code, doc = check(root, new)
    gone = [f for f in doc["findings"] if f["target"] == GONE_TARGET]
    assert gone and all(f["live"] is imported for f in gone), doc["findings"]
    assert code == (1 if imported else 0), doc["findings"]
