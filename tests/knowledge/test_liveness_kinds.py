"""Liveness (issue 18 kind 5): which plugin modules SGLang loads decides what can break it.
- `importlib.import_module(x)` with an `x` the scan cannot evaluate loads one module, not
  every module of the package (only auto-discovery over the package's own files does that);
- an external model package named through SGLang's settings object
  (`envs.SGLANG_EXTERNAL_MODEL_PACKAGE.set(__name__)`) is loaded module by module;
- names built from the plugin's own constants (f-string, str.format, % over a tuple, the keys
  of a dict, a list of pairs) load those modules."""

from __future__ import annotations

import textwrap

import pytest
from kinds_support import check, plugin, pyproject, upstream_pair

ENVIRON = {
    "sglang/srt/environ.py": """
        class EnvStr:
            def __init__(self, default):
                self.default = default

            def get(self):
                return self.default

            def set(self, value):
                self.default = value

        class Envs:
            SGLANG_EXTERNAL_MODEL_PACKAGE = EnvStr("")

        envs = Envs()
        """,
    "sglang/srt/models/llama.py": """
        from torch import nn

        class LlamaForCausalLM(nn.Module):
            pass
        """,
}

TORCHAO_IMPORT = "import sglang.srt.layers.torchao_utils as torchao_utils\n"


@pytest.fixture(scope="module")
def upstreams(tmp_path_factory):
    return upstream_pair(tmp_path_factory, old=ENVIRON, new=ENVIRON)


def live_of(doc: dict, fragment: str) -> set[bool]:
    return {f["live"] for f in doc["findings"] if fragment in (f["file"] or "")}


def test_a_computed_import_module_does_not_make_the_package_live(upstreams, tmp_path):
    _, new = upstreams
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"ko": "ko:register"}),
        "ko/__init__.py": """
            import importlib
            import pkgutil


            def register():
                from ko.ops import registry

                registry.apply_all()
                for info in pkgutil.iter_modules(__path__):
                    importlib.import_module(f"{__name__}.{info.name}")
            """,
        "ko/discovered.py": TORCHAO_IMPORT,
        "ko/ops/__init__.py": "",
        "ko/ops/registry.py": """
            import importlib

            _REPLACEMENTS = {}


            def apply_all():
                for rep in _REPLACEMENTS.values():
                    module = importlib.import_module(rep.module_path)
                    setattr(module, rep.name, rep.impl)
            """,
        "ko/ops/legacy.py": TORCHAO_IMPORT,
    })
    code, doc = check(root, new)
    assert live_of(doc, "ko/ops/legacy.py") == {False}, doc["findings"]
    # auto-discovery over the package's own modules still loads each of them
    assert live_of(doc, "ko/discovered.py") == {True}
    assert code == 1


# a model module of the external package whose import fails on the new release (torchao_utils gone)
TINY_MODEL = """
    import sglang.srt.layers.torchao_utils as torchao_utils
    from sglang.srt.models.llama import LlamaForCausalLM


    class Tiny(LlamaForCausalLM):
        pass


    EntryClass = [Tiny]
    """

# each names the model package in the variable SGLang's model registry reads (srt/environ.py)
EXTERNAL_NAMINGS = {
    "envs_field": """
            from sglang.srt.environ import envs

            if not envs.SGLANG_EXTERNAL_MODEL_PACKAGE.get():
                envs.SGLANG_EXTERNAL_MODEL_PACKAGE.set(__name__)
            """,
    # the value set on the instance earlier in the same method (sixteenth set F24-k1): an object an
    # lru_cache'd function builds, the field a class constant read with getattr, a walrus test
    "instance_attribute_then_field_set": """
            import functools
            from sglang.srt.environ import envs

            class Installer:
                FIELD = "SGLANG_EXTERNAL_MODEL_PACKAGE"

                def __init__(self):
                    self.package = __name__
                    field = getattr(envs, self.FIELD)
                    if not (current := field.get()):
                        field.set(self.package)

            @functools.lru_cache(maxsize=1)
            def installer():
                return Installer()

            installer()
            """,
    "instance_attribute_in_a_method": """
            from sglang.srt import environ

            class Installer:
                def install(self, package):
                    self.target = package.rpartition(".")[0] or package
                    environ.envs.SGLANG_EXTERNAL_MODEL_PACKAGE.set(self.target + ".models")

            Installer().install("ext.registry")
            """,
    "instance_attribute_built_from_another": """
            import os

            class Installer:
                def __init__(self):
                    self.root = __name__.split(".")[0]
                    self.package = f"{self.root}.models"
                    os.environ["SGLANG_EXTERNAL_MODEL_PACKAGE"] = self.package

            Installer()
            """,
    # the field held in a local first (read with getattr; F24 variant w3)
    "field_alias": """
            from sglang.srt import environ

            field = getattr(environ.envs, "SGLANG_EXTERNAL_MODEL_PACKAGE")
            field.set(__name__)
            """,
    # os.environ.update with a keyword or a dict (F24 variant w4)
    "environ_update_keyword": """
            from os import environ

            environ.update(SGLANG_EXTERNAL_MODEL_PACKAGE=__package__)
            """,
    "environ_update_dict": """
            import os

            os.environ.update({"SGLANG_EXTERNAL_MODEL_PACKAGE": "ext.models"})
            """,
    # the dict union operator on os.environ (PEP 584; F24 variant z1), a dict() call, a constant
    "environ_union": """
            import os

            os.environ |= {"SGLANG_EXTERNAL_MODEL_PACKAGE": __name__}
            """,
    "environ_union_dict_call": """
            from os import environ

            environ |= dict(SGLANG_EXTERNAL_MODEL_PACKAGE=__package__)
            """,
    "environ_union_constant": """
            import os

            SETTINGS = {"SGLANG_EXTERNAL_MODEL_PACKAGE": "ext.models"}
            os.environ |= SETTINGS
            """,
    # the variable's name read off the settings field (EnvField.__set_name__; F24 variant u1):
    # setdefault, a subscript write, putenv
    "field_name_setdefault": """
            import os

            from sglang.srt.environ import envs

            field = envs.SGLANG_EXTERNAL_MODEL_PACKAGE
            os.environ.setdefault(field.name, __name__)
            """,
    "field_name_subscript": """
            import os

            from sglang.srt import environ

            os.environ[environ.envs.SGLANG_EXTERNAL_MODEL_PACKAGE.name] = "ext.models"
            """,
    "field_name_update": """
            from os import environ

            from sglang.srt.environ import envs

            environ.update({envs.SGLANG_EXTERNAL_MODEL_PACKAGE.name: __package__})
            """,
    # the field's bound `set` kept under a plugin name and called later (F24 variant t1)
    "bound_setter": """
            from sglang.srt.environ import envs

            use_package = envs.SGLANG_EXTERNAL_MODEL_PACKAGE.set
            use_package(__name__)
            """,
    "bound_setter_in_a_function": """
            from sglang.srt import environ

            _setter = environ.envs.SGLANG_EXTERNAL_MODEL_PACKAGE.set


            def _use():
                _setter("ext.models")


            _use()
            """,
    # the field looked up by a name a helper's caller passes (F24 variant x2): keywords through
    # **overrides, a parameter, a loop over a dict at module level
    "helper_kwargs_overrides": """
            from sglang.srt.environ import envs


            def apply(**overrides):
                for name, value in overrides.items():
                    getattr(envs, name).set(value)


            apply(SGLANG_EXTERNAL_MODEL_PACKAGE=__name__)
            """,
    "helper_field_parameter": """
            from sglang.srt import environ


            def use(field_name, value=None):
                field = getattr(environ.envs, field_name)
                field.set(value or "ext.models")


            use("SGLANG_EXTERNAL_MODEL_PACKAGE")
            """,
    "module_loop_over_settings": """
            from sglang.srt.environ import envs

            SETTINGS = {"SGLANG_EXTERNAL_MODEL_PACKAGE": "ext.models"}
            for name, value in SETTINGS.items():
                getattr(envs, name).set(value)
            """,
    # the settings kept as a namespace's attributes, written from its vars() (thirtieth set F24-j2):
    # keywords of SimpleNamespace skipping a set one, attributes assigned then a loop, argparse's
    # Namespace given one by setattr and os.environ.update(vars(ns))
    "namespace_vars_items": """
            from types import SimpleNamespace

            from sglang.srt.environ import envs

            DEFAULTS = SimpleNamespace(SGLANG_EXTERNAL_MODEL_PACKAGE=f"{__name__}")


            def apply():
                for name, value in vars(DEFAULTS).items():
                    setting = getattr(envs, name)
                    if setting.is_set():
                        continue
                    setting.set(value)


            apply()
            """,
    "namespace_assigned_then_looped": """
            import types

            from sglang.srt import environ


            def apply():
                ns = types.SimpleNamespace()
                ns.SGLANG_EXTERNAL_MODEL_PACKAGE = "ext.models"
                for key in vars(ns):
                    getattr(environ.envs, key).set(getattr(ns, key))


            apply()
            """,
    "argparse_namespace_environ_update": """
            import argparse
            import os


            def apply():
                ns = argparse.Namespace()
                setattr(ns, "SGLANG_EXTERNAL_MODEL_PACKAGE", __package__)
                os.environ.update(vars(ns))


            apply()
            """,
    # a settings object of the plugin's writes them in a method (F24 variant s1): over
    # dataclasses.fields with the variable named from each field, a field read through self, a
    # NamedTuple's field by getattr
    "settings_dataclass_fields": """
            import dataclasses

            from sglang.srt.environ import envs


            @dataclasses.dataclass(frozen=True)
            class Settings:
                external_model_package: str = "ext.models"

                def apply(self):
                    for f in dataclasses.fields(self):
                        getattr(envs, "SGLANG_" + f.name.upper()).set(getattr(self, f.name))


            Settings().apply()
            """,
    "settings_record_method": """
            from dataclasses import dataclass

            from sglang.srt.environ import envs


            @dataclass
            class Settings:
                package: str

                def apply(self):
                    envs.SGLANG_EXTERNAL_MODEL_PACKAGE.set(self.package)


            Settings(package=__name__).apply()
            """,
    "settings_namedtuple_getattr": """
            from typing import NamedTuple

            from sglang.srt import environ


            class Setting(NamedTuple):
                variable: str
                value: str

                def apply(self):
                    getattr(environ.envs, self.variable).set(self.value)


            for setting in [Setting("SGLANG_EXTERNAL_MODEL_PACKAGE", "ext.models")]:
                setting.apply()
            """,
    "bound_setter_keyword": """
            import sglang.srt.environ as sgl_env

            remember = sgl_env.envs.SGLANG_EXTERNAL_MODEL_PACKAGE.set
            remember(value=__package__)
            """,
    # the name resolved relative to a package (F24 variant o1): importlib.util.resolve_name, through the Envs
    # class, a module constant, a keyword value
    "class_field_resolve_name": """
            import importlib.util

            from sglang.srt.environ import Envs

            Envs.SGLANG_EXTERNAL_MODEL_PACKAGE.set(importlib.util.resolve_name(".models", "ext"))
            """,
    "resolve_name_constant": """
            from importlib.util import resolve_name

            from sglang.srt.environ import envs

            _PACKAGE = resolve_name("..models", "ext.models")
            envs.SGLANG_EXTERNAL_MODEL_PACKAGE.set(_PACKAGE)
            """,
    "resolve_name_into_environ": """
            import importlib.util
            import os

            os.environ.update(SGLANG_EXTERNAL_MODEL_PACKAGE=importlib.util.resolve_name(".", __name__))
            """,
    # the variable an object decides (fifteenth set F24-m1): a property over the field it keeps, a name
    # its construction passes, a helper's parameter
    "object_property_over_field": """
            import os

            from sglang.srt.environ import envs


            class ModelPackage:
                def __init__(self, package):
                    self.package = package
                    self._field = envs.SGLANG_EXTERNAL_MODEL_PACKAGE

                @property
                def env_name(self):
                    return self._field.name

                def install(self):
                    return os.environ.setdefault(self.env_name, self.package)


            MODELS = ModelPackage(__name__)
            MODELS.install()
            """,
    "object_kept_variable_putenv": """
            import os


            class Exporter:
                def __init__(self, variable, value):
                    self.variable = variable
                    self.value = value

                def export(self):
                    os.putenv(self.variable, self.value)
                    os.environ.setdefault(self.variable, self.value)


            Exporter("SGLANG_EXTERNAL_MODEL_PACKAGE", "ext.models").export()
            """,
    "helper_parameter_setdefault": """
            import os

            from sglang.srt.environ import envs


            def _default(variable, value):
                os.environ.setdefault(variable, value)


            _default(envs.SGLANG_EXTERNAL_MODEL_PACKAGE.name, __name__)
            """,
    # a settings dataclass an alternative constructor makes exports a dict of defaults in a loop
    # (eighteenth set F24-h1): `cls(...)` in a classmethod, a `field(default_factory=dict)` spread in
    "dataclass_from_classmethod_exports_defaults": """
            import dataclasses
            import os

            PACKAGE = __name__


            @dataclasses.dataclass
            class Settings:
                package: str = PACKAGE
                extra: dict = dataclasses.field(default_factory=dict)

                @classmethod
                def load(cls):
                    return cls(extra={})

                def defaults(self):
                    return {"SGLANG_EXTERNAL_MODEL_PACKAGE": self.package, **self.extra}

                def export(self):
                    for key, value in self.defaults().items():
                        os.environ.setdefault(key, value)


            Settings.load().export()
            """,
    "dataclass_factory_lambda_update": """
            import dataclasses
            import os


            @dataclasses.dataclass(frozen=True)
            class Settings:
                env: dict = dataclasses.field(default_factory=lambda: {"SGLANG_EXTERNAL_MODEL_PACKAGE": __name__})

                @classmethod
                def default(cls):
                    return cls()


            os.environ.update(Settings.default().env)
            """,
    # a functools.partial of the setter, called later (twenty-third set F24-c2): queued by a helper
    # through its *args and run in a loop, kept in a table and called by key, a global called by name
    "queued_partials_run_in_a_loop": """
            import functools
            from sglang.srt.environ import envs

            _STARTUP = []


            def on_startup(fn, *args, **kwargs):
                _STARTUP.append(functools.partial(fn, *args, **kwargs))


            on_startup(envs.SGLANG_EXTERNAL_MODEL_PACKAGE.set, __name__)
            for action in _STARTUP:
                action()
            """,
    "partial_in_a_table_called_by_key": """
            from functools import partial
            from sglang.srt.environ import envs

            ACTIONS = {"package": partial(envs.SGLANG_EXTERNAL_MODEL_PACKAGE.set, __name__)}
            ACTIONS["package"]()
            """,
    "partial_global_with_a_keyword_called_by_name": """
            import functools
            from sglang.srt.environ import envs

            export = functools.partial(envs.SGLANG_EXTERNAL_MODEL_PACKAGE.set, value=__name__)


            def _boot():
                export()


            _boot()
            """,
    "namedtuple_pairs_putenv": """
            import os
            from typing import NamedTuple


            class Pair(NamedTuple):
                key: str
                value: str


            for pair in (Pair("SGLANG_EXTERNAL_MODEL_PACKAGE", __name__),):
                os.environ[pair.key] = pair.value
            """,
    # os.environ.update of a mapping a helper's parameters make (thirty-third set F24-n1): the
    # writes each call of the helper makes
    "environ_update_of_a_kwargs_comprehension": """
            import os


            def export_env(**values):
                os.environ.update({key: str(value) for key, value in values.items() if value})


            export_env(SGLANG_EXTERNAL_MODEL_PACKAGE=__name__, SGLANG_DISABLED_MODEL_ARCHS=None)
            """,
    "environ_update_of_a_dict_parameter": """
            import os


            def export(settings):
                os.environ.update(settings)


            export({"SGLANG_EXTERNAL_MODEL_PACKAGE": __name__})
            """,
    "environ_update_of_name_and_value": """
            import os


            def export(name, value):
                os.environ.update({name: value})


            export("SGLANG_EXTERNAL_MODEL_PACKAGE", __name__)
            """,
}


@pytest.mark.parametrize("naming", sorted(EXTERNAL_NAMINGS))
def test_an_external_model_package_named_through_envs_is_live(upstreams, tmp_path, naming):
    _, new = upstreams
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"ext": "ext:register"}),
        "ext/__init__.py": """
            def register():
                import ext.models  # noqa: F401
            """,
        "ext/models/__init__.py": EXTERNAL_NAMINGS[naming],
        "ext/models/tiny.py": TINY_MODEL,
    })
    code, doc = check(root, new)
    assert live_of(doc, "ext/models/tiny.py") == {True}, doc["findings"]
    assert code == 1


def test_a_namespace_naming_another_setting_leaves_the_model_package_unloaded(upstreams, tmp_path):
    _, new = upstreams
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"ext": "ext:register"}),
        "ext/__init__.py": "def register():\n    import ext.models  # noqa: F401\n",
        "ext/models/__init__.py": ("from types import SimpleNamespace\n\nfrom sglang.srt.environ import envs\n\n"
                                   "ns = SimpleNamespace(SGLANG_DISABLED_MODEL_ARCHS='big')\n\n\ndef apply():\n"
                                   "    for name, value in vars(ns).items():\n        getattr(envs, name).set(value)\n\n\napply()\n"),
        "ext/models/tiny.py": TINY_MODEL,
    })
    code, doc = check(root, new)
    assert live_of(doc, "ext/models/tiny.py") == {False}, doc["findings"]


# the entry point's attribute is no def (twenty-fifth set F24-e1): a value bound at module level
# that the engine calls with no arguments (`ep.load()()`, sglang/srt/plugins/__init__.py), as
# it calls a def: a partial of the settings setter, of os.environ.__setitem__, of a helper
# taking the package; the same partial under a name no entry point names is never called
ENTRY_VALUES = {
    "partial_of_the_setter": "register = functools.partial(envs.SGLANG_EXTERNAL_MODEL_PACKAGE.set, PACKAGE)",
    "partial_of_environ_setitem": 'register = functools.partial(os.environ.__setitem__, "SGLANG_EXTERNAL_MODEL_PACKAGE", PACKAGE)',
    "partial_of_a_helper_by_keyword": "register = functools.partial(_configure, package=PACKAGE)",
    "unnamed_partial": "register_later = functools.partial(envs.SGLANG_EXTERNAL_MODEL_PACKAGE.set, PACKAGE)",
}


@pytest.mark.parametrize("spelling", sorted(ENTRY_VALUES))
def test_an_entry_point_bound_to_a_value_is_called_by_the_engine(upstreams, tmp_path, spelling):
    _, new = upstreams
    named = spelling != "unnamed_partial"
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"ext": "ext:register" if named else "ext:noop"}),
        "ext/__init__.py": f"""
import functools
import os

from sglang.srt.environ import envs

PACKAGE = __name__ + ".models"


def _configure(package):
    envs.SGLANG_EXTERNAL_MODEL_PACKAGE.set(package)


def noop():
    pass


{ENTRY_VALUES[spelling]}
""",
        "ext/models/__init__.py": "",
        "ext/models/tiny.py": TINY_MODEL,
    })
    code, doc = check(root, new)
    assert live_of(doc, "ext/models/tiny.py") == {named}, doc["findings"]
    assert code == (1 if named else 0)


# the entry point's def is decorated by the plugin (twenty-sixth set F24-f2): the entry point
# holds the wrapper its decorator returns, which names the package before running the def -- a
# factory's argument, a plain decorator reading a module constant, a factory's keyword; the same
# decorator naming another package loads nothing of this one
HEAD = "import functools\n\nfrom sglang.srt.environ import envs\n\n\n"
FACTORY = ("def exports(package):\n    def decorate(entry):\n        @functools.wraps(entry)\n        def wrapped(*args, **kwargs):\n"
           "            if not envs.SGLANG_EXTERNAL_MODEL_PACKAGE.get():\n                envs.SGLANG_EXTERNAL_MODEL_PACKAGE.set(package)\n"
           "            return entry(*args, **kwargs)\n\n        return wrapped\n\n    return decorate\n\n\n")
DECORATED = {
    "factory_argument": (FACTORY + "@exports('ext.models')\ndef register():\n    pass\n", True),
    "plain_decorator": ("PACKAGE = 'ext.models'\n\n\ndef exporting(entry):\n    def wrapped():\n"
                        "        envs.SGLANG_EXTERNAL_MODEL_PACKAGE.set(PACKAGE)\n        return entry()\n\n    return wrapped\n\n\n"
                        "@exporting\ndef register():\n    pass\n", True),
    "factory_keyword": ("def exports_named(*, package=None):\n    def decorate(entry):\n        def run(*args):\n"
                        "            envs.SGLANG_EXTERNAL_MODEL_PACKAGE.set(package)\n            return entry(*args)\n\n        return run\n\n"
                        "    return decorate\n\n\n@exports_named(package='ext.models')\ndef register():\n    pass\n", True),
    "another_package": (FACTORY + "@exports('ext.other')\ndef register():\n    pass\n", False),
}


@pytest.mark.parametrize("spelling", sorted(DECORATED))
def test_an_entry_point_a_plugin_decorator_wraps_runs_the_wrapper(upstreams, tmp_path, spelling):
    _, new = upstreams
    source, live = DECORATED[spelling]
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"ext": "ext:register"}),
        "ext/__init__.py": HEAD + source,
        "ext/models/__init__.py": "",
        "ext/models/tiny.py": TINY_MODEL,
    })
    code, doc = check(root, new)
    assert live_of(doc, "ext/models/tiny.py") == {live}, doc["findings"]
    assert code == (1 if live else 0)


# the package named (or a module imported by name) only in a module's private function that
# nothing names: nothing can call it, so nothing is imported through it (F24's converse)
UNCALLED_NAMINGS = {
    "envs_field": """
            from sglang.srt.environ import envs

            def _use_external_models():
                envs.SGLANG_EXTERNAL_MODEL_PACKAGE.set(__name__)
            """,
    "environ_item": """
            import os

            def _use_external_models():
                os.environ["SGLANG_EXTERNAL_MODEL_PACKAGE"] = "ext.models"
            """,
    # written by a helper (its **overrides) whose one caller nothing calls
    "helper_kwargs": """
            from sglang.srt.environ import envs

            def _use_external_models():
                _apply(SGLANG_EXTERNAL_MODEL_PACKAGE="ext.models")

            def _apply(**overrides):
                for name, value in overrides.items():
                    getattr(envs, name).set(value)
            """,
    # a settings object whose writing method nothing calls (the test calls the first function)
    "settings_method_never_called": """
            from dataclasses import dataclass

            from sglang.srt.environ import envs

            def _use_external_models():
                Settings("ext.models").apply()

            @dataclass
            class Settings:
                package: str

                def apply(self):
                    envs.SGLANG_EXTERNAL_MODEL_PACKAGE.set(self.package)
            """,
    # a partial of the setter that only the uncalled function calls: made, never run
    "partial_never_called": """
            import functools
            from sglang.srt.environ import envs

            def _use_external_models():
                for action in _ACTIONS:
                    action()

            _ACTIONS = [functools.partial(envs.SGLANG_EXTERNAL_MODEL_PACKAGE.set, "ext.models")]
            """,
    "import_module": """
            import importlib

            def _load_tiny():
                return importlib.import_module("ext.models.tiny")
            """,
}


@pytest.mark.parametrize("naming", sorted(UNCALLED_NAMINGS))
@pytest.mark.parametrize("called", [False, True])
def test_a_module_named_only_in_a_private_function_nothing_calls_is_not_live(upstreams, tmp_path, naming, called):
    _, new = upstreams
    source = textwrap.dedent(UNCALLED_NAMINGS[naming])
    helper = source.split("def ", 1)[1].split("(", 1)[0]
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"ext": "ext:register"}),
        "ext/__init__.py": "from sglang.srt.models.llama import LlamaForCausalLM  # noqa: F401\n\n\ndef register():\n    import ext.models  # noqa: F401\n",
        "ext/models/__init__.py": source + (f"\n\n{helper}()\n" if called else ""),
        "ext/models/tiny.py": TINY_MODEL,
    })
    code, doc = check(root, new)
    assert live_of(doc, "ext/models/tiny.py") == {called}, doc["findings"]
    assert code == (1 if called else 0)


def test_modules_named_from_plugin_constants_are_live(upstreams, tmp_path):
    _, new = upstreams
    files = {
        "pyproject.toml": pyproject(plugins={"ven": "ven:register"}),
        "ven/__init__.py": """
            import importlib

            _ALWAYS = ("alpha",)
            _OPTIONAL = {"beta": "fused sampler", "gamma": "paged kv"}
            _PAIRS = [("delta", True)]
            _MORE = {"epsilon": 1}


            def register():
                for backend in _ALWAYS:
                    importlib.import_module(f"ven.backends.{backend}.patch")
                for backend in _OPTIONAL:
                    importlib.import_module("ven.backends.{}.patch".format(backend))
                for backend, enabled in _PAIRS:
                    if enabled:
                        importlib.import_module("ven.backends.%s.patch" % backend)
                for backend in _MORE.keys():
                    importlib.import_module("ven.backends." + backend + ".patch")
            """,
        "ven/backends/__init__.py": "",
    }
    for backend in ("alpha", "beta", "gamma", "delta", "epsilon", "zeta"):
        files[f"ven/backends/{backend}/__init__.py"] = ""
        files[f"ven/backends/{backend}/patch.py"] = TORCHAO_IMPORT
    code, doc = check(plugin(tmp_path, files), new)
    for backend in ("alpha", "beta", "gamma", "delta", "epsilon"):
        assert live_of(doc, f"ven/backends/{backend}/patch.py") == {True}, backend
    assert live_of(doc, "ven/backends/zeta/patch.py") == {False}
    assert code == 1


# pkgutil.iter_modules over another package's __path__, each name prefixed with that package's
# __name__ (F03 variant w7): its direct submodules are imported, a namespace package's too
DISCOVERIES = {
    "import_module_then_iter": ("import importlib\nimport pkgutil\n\n\ndef register():\n"
                                "    found = importlib.import_module('dv.backends')\n"
                                "    for info in pkgutil.iter_modules(found.__path__, prefix=found.__name__ + '.'):\n"
                                "        importlib.import_module(info.name)\n"),
    "aliased_import_positional_prefix": ("import importlib\nimport pkgutil\n\nimport dv.backends as backends\n\n\ndef register():\n"
                                         "    for _, name, _ in pkgutil.iter_modules(backends.__path__, backends.__name__ + '.'):\n"
                                         "        importlib.import_module(name)\n"),
    "walk_packages_fstring": ("import importlib\nimport pkgutil\n\n\ndef register():\n    found = importlib.import_module('dv.backends')\n"
                              "    for info in pkgutil.walk_packages(found.__path__, f'{found.__name__}.'):\n"
                              "        importlib.import_module(info.name)\n"),
}


# the plugin's own files found from `__file__` (twenty-eighth set F03-h1, F03-h2): a pathlib glob
# of the folder named after a module's own path, each named by its path below the source root, or
# loaded from its path with spec_from_file_location + exec_module
FILE_WALKS = {
    "rglob_named_by_parts": ("import importlib\nfrom pathlib import Path\n\n_ROOT = Path(__file__).resolve().parents[1]\n\n\n"
                             "def register():\n    for path in sorted((Path(__file__).parent / 'backends').rglob('*.py')):\n"
                             "        importlib.import_module('.'.join(path.relative_to(_ROOT).with_suffix('').parts))\n"),
    "glob_named_from_the_package": ("import importlib\nfrom pathlib import Path\n\n\ndef register():\n"
                                    "    for path in Path(__file__).parent.glob('backends/*.py'):\n"
                                    "        if path.stem != '__init__':\n            importlib.import_module(f'{__package__}.backends.{path.stem}')\n"),
    "spec_from_file_location": ("import importlib.util\nimport sys\nfrom pathlib import Path\n\n_HERE = Path(__file__).resolve().parent\n\n\n"
                                "def register():\n    for rel in ('backends/alpha.py',):\n        name = __package__ + '.' + rel[:-3].replace('/', '.')\n"
                                "        spec = importlib.util.spec_from_file_location(name, _HERE / rel)\n        module = importlib.util.module_from_spec(spec)\n"
                                "        sys.modules[name] = module\n        spec.loader.exec_module(module)\n"),
}


@pytest.mark.parametrize("namespace", [False, True], ids=["package", "namespace"])
@pytest.mark.parametrize("spelling", sorted(FILE_WALKS))
def test_the_plugins_files_found_from_its_own_path_are_live(upstreams, tmp_path, spelling, namespace):
    _, new = upstreams
    files = {
        "pyproject.toml": pyproject(plugins={"dv": "dv.registry:register"}),
        "dv/__init__.py": "",
        "dv/registry.py": FILE_WALKS[spelling],
        "dv/backends/alpha.py": TORCHAO_IMPORT,
        "dv/other/beta.py": TORCHAO_IMPORT,
        **({} if namespace else {"dv/backends/__init__.py": ""}),
    }
    code, doc = check(plugin(tmp_path, files, name=f"{spelling}-{namespace}"), new)
    assert live_of(doc, "dv/backends/alpha.py") == {True} and live_of(doc, "dv/other/beta.py") == {False}, doc["findings"]
    assert code == 1


# the plugin's folder listed with os.listdir / glob.glob / Path.iterdir (thirtieth set F03-j1): the
# listing is the modules there, so a name the loop skips ("_"-prefixed) is never imported; a folder
# the plugin does not name (an environment variable's) may hold any of them
LISTINGS = {
    "listdir_splitext": ("import importlib\nimport os\n\n_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'backends')\n\n\n"
                         "def register():\n    for fname in sorted(os.listdir(_DIR)):\n        stem, ext = os.path.splitext(fname)\n"
                         "        if ext != '.py' or stem.startswith('_'):\n            continue\n"
                         "        importlib.import_module(f'{__package__}.backends.{stem}')\n", False),
    "glob_basename": ("import glob\nimport importlib\nimport os.path\n\n\n"
                      "def register():\n    here = os.path.dirname(__file__)\n"
                      "    for path in glob.glob(os.path.join(here, 'backends', '*.py')):\n        name = os.path.basename(path)[:-3]\n"
                      "        if not name.startswith('_'):\n            importlib.import_module('dv.backends.' + name)\n", False),
    "iterdir_stem": ("import importlib\nfrom pathlib import Path\n\n\n"
                     "def register():\n    names = [p.stem for p in (Path(__file__).parent / 'backends').iterdir() if p.suffix == '.py' and p.name[0] != '_']\n"
                     "    for name in names:\n        importlib.import_module(__package__ + '.backends.' + name)\n", False),
    "listdir_without_a_skip": ("import importlib\nimport os\n\n\n"
                               "def register():\n    for fname in os.listdir(os.path.join(os.path.dirname(__file__), 'backends')):\n"
                               "        if fname.endswith('.py'):\n            importlib.import_module('dv.backends.' + fname[:-3])\n", True),
}


@pytest.mark.parametrize("spelling", sorted(LISTINGS))
def test_a_module_a_folder_listing_skips_is_not_imported(upstreams, tmp_path, spelling):
    _, new = upstreams
    registry, skipped_live = LISTINGS[spelling]
    files = {
        "pyproject.toml": pyproject(plugins={"dv": "dv.registry:register"}),
        "dv/__init__.py": "",
        "dv/registry.py": registry,
        "dv/backends/alpha.py": TORCHAO_IMPORT,
        "dv/backends/_wip.py": TORCHAO_IMPORT,
    }
    code, doc = check(plugin(tmp_path, files, name=spelling), new)
    assert live_of(doc, "dv/backends/alpha.py") == {True}, doc["findings"]
    assert live_of(doc, "dv/backends/_wip.py") == {skipped_live}, doc["findings"]
    assert code == 1


@pytest.mark.parametrize("namespace", [False, True], ids=["package", "namespace"])
@pytest.mark.parametrize("spelling", sorted(DISCOVERIES))
def test_modules_listed_from_another_packages_path_are_live(upstreams, tmp_path, spelling, namespace):
    _, new = upstreams
    files = {
        "pyproject.toml": pyproject(plugins={"dv": "dv.registry:register"}),
        "dv/__init__.py": "",
        "dv/registry.py": DISCOVERIES[spelling],
        "dv/backends/alpha.py": TORCHAO_IMPORT,
        **({} if namespace else {"dv/backends/__init__.py": ""}),
    }
    code, doc = check(plugin(tmp_path, files, name=f"{spelling}-{namespace}"), new)
    assert live_of(doc, "dv/backends/alpha.py") == {True}, doc["findings"]
    assert code == 1


# the loader skips a module of the package whose last name the plugin lists in
# SGLANG_DISABLED_MODEL_ARCHS (srt/models/registry.py import_model_classes; F24 variant w6),
# however the variable is written; a list naming other modules leaves it live
DISABLINGS = {
    "settings_field": ("from sglang.srt.environ import envs\n\nenvs.SGLANG_DISABLED_MODEL_ARCHS.set('tiny')\n", False),
    "environ_item_list": ("import os\n\nos.environ['SGLANG_DISABLED_MODEL_ARCHS'] = 'big, tiny'\n", False),
    "environ_update": ("import os\n\nos.environ.update(SGLANG_DISABLED_MODEL_ARCHS='tiny')\n", False),
    "another_module_disabled": ("from sglang.srt.environ import envs\n\nenvs.SGLANG_DISABLED_MODEL_ARCHS.set('big')\n", True),
}


@pytest.mark.parametrize("spelling", sorted(DISABLINGS))
def test_a_model_module_the_plugin_disables_is_not_loaded(upstreams, tmp_path, spelling):
    _, new = upstreams
    disabling, live = DISABLINGS[spelling]
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"ext": "ext:register"}),
        "ext/__init__.py": "def register():\n    import ext.models  # noqa: F401\n",
        "ext/models/__init__.py": "from sglang.srt.environ import envs\n\nenvs.SGLANG_EXTERNAL_MODEL_PACKAGE.set(__name__)\n" + disabling,
        "ext/models/tiny.py": TINY_MODEL,
    })
    code, doc = check(root, new)
    assert live_of(doc, "ext/models/tiny.py") == {live}, doc["findings"]
    assert code == (1 if live else 0)


def test_a_subpackage_of_a_model_package_is_not_loaded(upstreams, tmp_path):
    # import_model_classes imports the package's modules `if not ispkg`: a subpackage is skipped
    _, new = upstreams
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"ext": "ext:register"}),
        "ext/__init__.py": "def register():\n    import ext.models  # noqa: F401\n",
        "ext/models/__init__.py": "from sglang.srt.environ import envs\n\nenvs.SGLANG_EXTERNAL_MODEL_PACKAGE.set(__name__)\n",
        "ext/models/tiny.py": TINY_MODEL,
        "ext/models/legacy/__init__.py": TINY_MODEL,
    })
    code, doc = check(root, new)
    assert live_of(doc, "ext/models/tiny.py") == {True} and live_of(doc, "ext/models/legacy/__init__.py") == {False}, doc["findings"]


# the model package is a folder without __init__.py (twenty-eighth set F24-h2): a namespace
# package (PEP 420) is importable and its modules are listed as a regular package's
NAMESPACE_NAMINGS = {
    "envs_field_set": "from sglang.srt.environ import envs\n\n\ndef register():\n    envs.SGLANG_EXTERNAL_MODEL_PACKAGE.set('ext.zoo')\n",
    "environ_item": "import os\n\n\ndef register():\n    os.environ['SGLANG_EXTERNAL_MODEL_PACKAGE'] = 'ext.zoo'\n",
    "getattr_of_a_constant": ("from sglang.srt.environ import envs\n\nFIELD = 'SGLANG_EXTERNAL_MODEL_PACKAGE'\n\n\n"
                              "def register():\n    getattr(envs, FIELD).set(__name__ + '.zoo')\n"),
}


@pytest.mark.parametrize("naming", sorted(NAMESPACE_NAMINGS))
def test_a_model_package_without_an_init_is_loaded(upstreams, tmp_path, naming):
    _, new = upstreams
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"ext": "ext:register"}), "ext/__init__.py": NAMESPACE_NAMINGS[naming],
                             "ext/zoo/tiny.py": TINY_MODEL}, name=naming)
    code, doc = check(root, new)
    assert live_of(doc, "ext/zoo/tiny.py") == {True} and code == 1, doc["findings"]


# the setting a dataclass field's metadata names (twenty-eighth set F24-h1): a loop over
# dataclasses.fields() reads each field's `.name` and `.metadata` (`field(metadata=…)`, else empty)
METADATA = {
    "metadata_display_over_an_instance": ("metadata={'env': 'SGLANG_EXTERNAL_MODEL_PACKAGE'}", "SETTINGS"),
    "metadata_dict_call_over_an_instance": ("metadata=dict(env='SGLANG_EXTERNAL_MODEL_PACKAGE', doc='x')", "SETTINGS"),
    "metadata_over_the_class": ("metadata={'env': 'SGLANG_EXTERNAL_MODEL_PACKAGE'}", "Settings"),
}


@pytest.mark.parametrize("spelling", sorted(METADATA))
@pytest.mark.parametrize("named", [True, False])
def test_a_setting_named_by_a_dataclass_fields_metadata_is_written(upstreams, tmp_path, spelling, named):
    _, new = upstreams
    metadata, fields_of = METADATA[spelling]
    if not named:  # (the metadata names no setting: nothing is written, the package is not loaded)
        metadata = metadata.replace("env", "doc_only")
    source = ("import dataclasses\nfrom dataclasses import dataclass, field\n\nfrom sglang.srt.environ import envs\n\n\n"
              f"@dataclass(frozen=True)\nclass Settings:\n    model_package: str = field(default='ext.models', {metadata})\n"
              "    prefix: str = field(default='ext')\n\n\nSETTINGS = Settings()\n\n\n"
              f"def register():\n    for f in dataclasses.fields({fields_of}):\n        env_name = f.metadata.get('env')\n"
              "        if not env_name:\n            continue\n        getattr(envs, env_name).set(getattr(SETTINGS, f.name))\n")
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"ext": "ext:register"}), "ext/__init__.py": source,
                             "ext/models/__init__.py": "", "ext/models/tiny.py": TINY_MODEL}, name=f"{spelling}-{named}")
    code, doc = check(root, new)
    assert live_of(doc, "ext/models/tiny.py") == {named}, doc["findings"]
