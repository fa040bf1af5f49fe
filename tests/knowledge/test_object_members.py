"""What a plugin object holds, read as Python gives it:

1. A method of a plugin enum runs with self one of its members: each member's `name`, `value`
   and what the enum's `__init__` sets from the value (a tuple value is passed as separate
   arguments: the enum docs), so `for patch in Patch: patch.apply()` patches what each names.
2. `getattr(spec.owner, spec.name)` over folded records (a NamedTuple, a dataclass, a dict row)
   reads that attribute: AttributeError where the release lacks it (no default given).
3. A name a plugin module does not bind, read from it, is what its PEP 562 `__getattr__` returns
   (`getattr(importlib.import_module(_LAZY[name]), name)`, with the lookup in a try that only
   re-raises, or `.get` and a test): the upstream object, judged as such.

Fixture upstreams (tests/knowledge/kinds_support.py): 0.10.0 drops
sglang.srt.layers.torchao_utils; Scheduler.get_next_batch is on both."""

from __future__ import annotations

import pytest
from kinds_support import check, judge_torchao_patch, plugin, pyproject, upstream_pair


@pytest.fixture(scope="module")
def upstreams(tmp_path_factory):
    return upstream_pair(tmp_path_factory)


ENUM_HEAD = """
import enum
import importlib


def _mine(model, torchao_config, filter_fn=None):
    return model

"""

ENUMS = {
    "tuple values unpacked into __init__, a for loop": ENUM_HEAD + """
class Patch(enum.Enum):
    TORCHAO = ("sglang.srt.layers.torchao_utils", "apply_torchao_config_to_model")

    def __init__(self, module_name, attr):
        self.module_name = module_name
        self.attr = attr

    def apply(self):
        setattr(importlib.import_module(self.module_name), self.attr, _mine)


def register():
    for patch in Patch:
        patch.apply()
""",
    "the value unpacked in the method, a comprehension": ENUM_HEAD + """
class Patch(enum.Enum):
    TORCHAO = ("sglang.srt.layers.torchao_utils", "apply_torchao_config_to_model")

    def apply(self):
        module_name, attr = self.value
        setattr(importlib.import_module(module_name), attr, _mine)
        return self.name


def register():
    return [patch.apply() for patch in Patch]
""",
    "a str value and the member's name": ENUM_HEAD + """
_ATTRS = {"TORCHAO": "apply_torchao_config_to_model"}


class Patch(str, enum.Enum):
    TORCHAO = "sglang.srt.layers.torchao_utils"

    def apply(self):
        module = importlib.import_module(self.value)
        setattr(module, _ATTRS[self.name], _mine)


def register():
    applied = list(Patch)
    for patch in applied:
        patch.apply()
""",
}


@pytest.mark.parametrize("spelling", sorted(ENUMS))
def test_a_method_of_a_plugin_enum_runs_on_each_member(upstreams, tmp_path, spelling):
    judge_torchao_patch(tmp_path, upstreams, ENUMS[spelling])


RECORDS = {
    "NamedTuple": ("class Spec(NamedTuple):\n    owner: type\n    name: str\n\n\nSPECS = [Spec(Scheduler, '{name}')]\n",
                   "for spec in SPECS:\n    setattr(spec.owner, spec.name, _wrap({getter}(spec.owner, spec.name{default})))\n"),
    "dataclass": ("@dataclass\nclass Spec:\n    owner: type\n    name: str\n\n\nSPECS = (Spec(owner=Scheduler, name='{name}'),)\n",
                  "for spec in SPECS:\n    setattr(spec.owner, spec.name, _wrap({getter}(spec.owner, spec.name{default})))\n"),
    "dict rows": ("SPECS = [{{'owner': Scheduler, 'name': '{name}'}}]\n",
                  "for row in SPECS:\n    setattr(row['owner'], row['name'], _wrap({getter}(row['owner'], row['name']{default})))\n"),
}


def _record_patch(tmp_path, upstream, spelling: str, name: str, default: str = "") -> tuple[int, list[dict]]:
    table, loop = RECORDS[spelling]
    source = ("from dataclasses import dataclass\nfrom typing import NamedTuple\n\nfrom sglang.srt.managers.scheduler import Scheduler\n\n\n"
              "def _wrap(fn):\n    return fn\n\n\n" + table.format(name=name) + "\n" + loop.format(getter="getattr", default=default))
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"rp": "rp:register"}), "rp/__init__.py": "from rp import patches  # noqa: F401\n\n\ndef register():\n    pass\n",
                             "rp/patches.py": source}, name=f"{spelling.replace(' ', '-')}-{name}{bool(default)}")
    code, doc = check(root, upstream)
    return code, [f for f in doc["findings"] if f["kind"] == "reference" and f["target"].startswith("sglang.srt.managers.scheduler.Scheduler.")]


@pytest.mark.parametrize("spelling", sorted(RECORDS))
def test_getattr_of_record_fields_reads_the_attribute_they_name(upstreams, tmp_path, spelling):
    _, new = upstreams
    code, found = _record_patch(tmp_path, new, spelling, "get_next_batches")
    assert [(f["target"].rsplit(".", 1)[-1], f["status"], f["breaking"]) for f in found] == [("get_next_batches", "missing", True)], found
    assert code == 1
    code, found = _record_patch(tmp_path, new, spelling, "get_next_batch")
    assert all(f["status"] == "ok" for f in found) and code == 0, found


def test_getattr_with_a_default_of_record_fields_does_not_raise(upstreams, tmp_path):
    _, new = upstreams
    code, found = _record_patch(tmp_path, new, "NamedTuple", "get_next_batches", default=", None")
    assert not any(f["breaking"] for f in found) and code != 1, found


LAZY_MODULES = {
    "a lookup in a try that re-raises": """
def __getattr__(name):
    try:
        module_name = _LAZY[name]
    except KeyError:
        raise AttributeError(name) from None
    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value
    return value
""",
    "a .get and a test": """
def __getattr__(name):
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(name)
    return getattr(importlib.import_module(module_name), name)
""",
    "the lookup inline": """
def __getattr__(name):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(name)
""",
}


@pytest.mark.parametrize("spelling", sorted(LAZY_MODULES))
def test_a_name_a_lazy_plugin_module_answers_is_the_upstream_object(upstreams, tmp_path, spelling):
    old, new = upstreams
    compat = ('import importlib\n\n_LAZY = {"apply_torchao_config_to_model": "sglang.srt.layers.torchao_utils", '
              '"Scheduler": "sglang.srt.managers.scheduler"}\n\n' + LAZY_MODULES[spelling])
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"lz": "lz:register"}),
        "lz/__init__.py": "from lz.compat import Scheduler, apply_torchao_config_to_model\n\n\n"
                          "def register():\n    return apply_torchao_config_to_model, Scheduler.get_next_batch\n",
        "lz/compat.py": compat,
    }, name=spelling.replace(" ", "-"))
    assert check(root, old)[0] == 0
    code, doc = check(root, new)
    gone = [f for f in doc["findings"] if "torchao_utils" in f["target"] and f["live"] and f["breaking"]]
    assert gone and code == 1, doc["findings"]
    assert not any("Scheduler" in f["target"] and f["breaking"] for f in doc["findings"]), doc["findings"]


@pytest.mark.parametrize("spelling", sorted(LAZY_MODULES))
def test_a_member_read_on_a_lazily_answered_class_is_judged_on_it(upstreams, tmp_path, spelling):
    """`from lz.compat import Scheduler` answered by __getattr__: `Scheduler.x` reads upstream's
    class, so a member it lacks is `missing` (AttributeError when register() runs)."""
    _, new = upstreams
    compat = 'import importlib\n\n_LAZY = {"Scheduler": "sglang.srt.managers.scheduler"}\n\n' + LAZY_MODULES[spelling]
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"lz": "lz:register"}),
        "lz/__init__.py": "from lz.compat import Scheduler\n\n\ndef register():\n    return Scheduler.get_next_batch, Scheduler.get_next_batches\n",
        "lz/compat.py": compat,
    }, name=spelling.replace(" ", "-"))
    code, doc = check(root, new)
    read = {f["target"].rsplit(".", 1)[-1]: (f["status"], f["breaking"]) for f in doc["findings"] if f["target"].startswith("sglang.srt.managers.scheduler.Scheduler.")}
    assert read.get("get_next_batches") == ("missing", True) and read.get("get_next_batch", ("ok", False)) == ("ok", False) and code == 1, doc["findings"]


CAUGHT_LOOKUPS = {
    "getattr of the import call": "            owner = getattr(importlib.import_module(module_name), name)\n",
    "a local module": "            module = importlib.import_module(module_name)\n            owner = getattr(module, name)\n",
    "sys.modules after the import": "            importlib.import_module(module_name)\n            owner = getattr(sys.modules[module_name], name)\n",
}


@pytest.mark.parametrize("spelling", sorted(CAUGHT_LOOKUPS))
def test_a_read_on_a_module_imported_in_a_try_that_catches_the_import_is_caught(upstreams, tmp_path, spelling):
    """`getattr(importlib.import_module(m), name)` in a try catching ImportError: where m is gone
    the import raises first, and the handler takes it (twenty-seventh set F17-g2)."""
    _, new = upstreams
    source = ("import importlib\nimport sys\n\nROWS = [('sglang.srt.managers.scheduler', 'Scheduler'), "
              "('sglang.srt.layers.torchao_utils', 'apply_torchao_config_to_model')]\n\n\n"
              "def register():\n    try:\n        for module_name, name in ROWS:\n" + CAUGHT_LOOKUPS[spelling]
              + "            setattr(owner, '_dev', True)\n    except ImportError:\n        pass\n")
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"cl": "cl:register"}), "cl/__init__.py": source}, name=spelling.replace(" ", "-"))
    code, doc = check(root, new)
    assert not [f for f in doc["findings"] if f["breaking"]] and code in (0, 3), doc["findings"]
    assert any("torchao_utils" in f["target"] for f in doc["findings"]), doc["findings"]


def test_names_a_lazy_module_answers_itself_are_not_read_upstream(upstreams, tmp_path):
    """A __getattr__ that answers its own names first (`if name in _OWN: return _OWN[name]()`),
    upstream's module only for the rest: the plugin's own names are no read of upstream's."""
    _, new = upstreams
    compat = ("import importlib\n\n_OWN = {'DEV_CACHE': lambda: 8}\n\n\ndef __getattr__(name):\n    if name in _OWN:\n        return _OWN[name]()\n"
              "    return getattr(importlib.import_module('sglang.srt.managers.scheduler'), name)\n")
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"lz": "lz:register"}),
        "lz/__init__.py": "from lz import compat\n\n\ndef register():\n    return compat.DEV_CACHE, compat.Scheduler.get_next_batch\n",
        "lz/compat.py": compat,
    })
    code, doc = check(root, new)
    assert not [f for f in doc["findings"] if f["breaking"]] and code == 0, doc["findings"]
    assert not any(f["target"].endswith("DEV_CACHE") for f in doc["findings"]), doc["findings"]


# a functools.singledispatch resolver (twenty-eighth set F22-h1): a call with a folded argument
# runs the implementation registered for its type
DISPATCHERS = {
    "register_by_annotation": ("@functools.singledispatch\ndef as_module(target):\n    raise TypeError(target)\n\n\n"
                               "@as_module.register\ndef _(target: str):\n    return importlib.import_module(target)\n\n\n"
                               "@as_module.register\ndef _(target: types.ModuleType):\n    return target\n"),
    "register_by_type_argument": ("@singledispatch\ndef as_module(target):\n    raise TypeError(target)\n\n\n"
                                  "@as_module.register(int)\ndef _by_index(target):\n    return None\n\n\n"
                                  "@as_module.register(str)\ndef _by_path(target):\n    return importlib.import_module(target)\n"),
    "implementation_with_a_body": ("@singledispatch\ndef as_module(target):\n    return None\n\n\n"
                                   "@as_module.register\ndef _(target: str):\n    name = target.strip()\n    module = importlib.import_module(name)\n    return module\n"),
}


@pytest.mark.parametrize("spelling", sorted(DISPATCHERS))
def test_a_singledispatch_call_runs_the_implementation_for_the_arguments_type(upstreams, tmp_path, spelling):
    old, new = upstreams
    source = ("import functools\nimport importlib\nimport types\nfrom functools import singledispatch\n\n\n" + DISPATCHERS[spelling]
              + "\n\ndef _mine(model, torchao_config, filter_fn=None):\n    return model\n\n\n"
              "def register():\n    module = as_module('sglang.srt.layers.torchao_utils')\n    setattr(module, 'apply_torchao_config_to_model', _mine)\n")
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"sd": "sd:register"}), "sd/__init__.py": source}, name=spelling)
    patched = "sglang.srt.layers.torchao_utils.apply_torchao_config_to_model"
    code, doc = check(root, old)
    assert [(f["kind"], f["status"]) for f in doc["findings"] if f["target"] == patched] == [("patch", "ok")] and code == 0, doc["findings"]
    code, doc = check(root, new)
    assert any(f["target"] == patched and f["kind"] == "patch" and f["breaking"] for f in doc["findings"]) and code == 1, doc["findings"]


def test_a_singledispatch_call_of_an_unregistered_type_runs_the_generic_function(upstreams, tmp_path):
    """The generic function runs for a type nothing is registered for: it raises here, so no
    module is named and no patch is made."""
    old, _ = upstreams
    source = ("import importlib\nfrom functools import singledispatch\n\n\n" + DISPATCHERS["register_by_type_argument"]
              + "\n\ndef register():\n    module = as_module(('sglang.srt.layers.torchao_utils',))\n    setattr(module, 'apply_torchao_config_to_model', len)\n")
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"sd": "sd:register"}), "sd/__init__.py": source})
    code, doc = check(root, old)
    assert not any(f["target"].startswith("sglang.srt.layers.torchao_utils") for f in doc["findings"]), doc["findings"]


# what a probe function returns of caught imports (twenty-eighth set F36-h2): `try: from sglang.x
# import f` / `except ImportError: f = None` in a helper, the names handed back in a record
PROBES = {
    "namedtuple": ("class Caps(NamedTuple):\n    register_attention_backend: Optional[Callable]\n\n\n", "return Caps(register_attention_backend)",
                   "CAPS.register_attention_backend"),
    "dataclass_by_keyword": ("@dataclass\nclass Caps:\n    register: Optional[Callable] = None\n\n\n", "return Caps(register=register_attention_backend)",
                             "CAPS.register"),
    "dict": ("", "return {'register': register_attention_backend}", "CAPS['register']"),
}


@pytest.mark.parametrize("spelling", sorted(PROBES))
def test_a_caught_import_a_probe_hands_back_is_upstreams_function(upstreams, tmp_path, spelling):
    _, new = upstreams
    head, returned, used = PROBES[spelling]
    source = ("from dataclasses import dataclass\nfrom typing import Callable, NamedTuple, Optional\n\n\n" + head
              + "def _probe():\n    try:\n        from sglang.srt.layers.attention.attention_registry import register_attention_backend\n"
              f"    except ImportError:\n        register_attention_backend = None\n    {returned}\n\n\nCAPS = _probe()\n\n\n"
              f"def _make(runner):\n    return None\n\n\ndef register():\n    if {used} is not None:\n        {used}('dev')(_make)\n")
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"pr": "pr:register"}), "pr/__init__.py": source}, name=spelling)
    code, doc = check(root, new)
    backend = [(f["target"], f["status"]) for f in doc["findings"] if f["kind"] == "attention_backend"]
    assert backend == [("sglang.srt.layers.attention.attention_registry.register_attention_backend", "ok")] and code == 0, doc["findings"]


# a module the plugin puts in sys.modules under an upstream name (vllm-rbln's frozen copies,
# `sys.modules.setdefault(CANONICAL_NAME, _skt_config)`): an import of that name gets it, even
# where the release has no such module
PROVIDED = {
    "subscript_assignment": "sys.modules['sglang.srt.layers.torchao_utils'] = _own\n",
    "setdefault": "sys.modules.setdefault('sglang.srt.layers.torchao_utils', _own)\n",
    "helper_parameter": "def alias(name, module):\n    sys.modules.setdefault(name, module)\n\n\nalias('sglang.srt.layers.torchao_utils', _own)\n",
    "none": "",
}


@pytest.mark.parametrize("spelling", sorted(PROVIDED))
def test_a_module_the_plugin_puts_in_sys_modules_is_imported_from_there(upstreams, tmp_path, spelling):
    _, new = upstreams
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"pm": "pm:register"}),
        "pm/__init__.py": "import sys\n\nfrom pm import _torchao as _own\n\n" + PROVIDED[spelling]
                          + "\n\ndef register():\n    from pm import user  # noqa: F401\n",
        "pm/_torchao.py": "def apply_torchao_config_to_model(model, config, filter_fn=None):\n    return model\n",
        "pm/user.py": "from sglang.srt.layers.torchao_utils import apply_torchao_config_to_model  # noqa: F401\n",
    }, name=spelling)
    code, doc = check(root, new)
    gone = [f for f in doc["findings"] if f["target"].startswith("sglang.srt.layers.torchao_utils") and f["breaking"]]
    assert bool(gone) is (spelling == "none") and code == (1 if spelling == "none" else 0), doc["findings"]
