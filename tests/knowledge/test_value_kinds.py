"""What an expression holds, for the kinds the seventeenth held-out set spelled anew: each kind
in three spellings and a negative, judged end to end. A plugin module `pd.legacy` imports
`sglang.srt.layers.torchao_utils`, which 0.10.0 dropped: where the plugin's computed choice
imports it, `check` on 0.10.0 is red; where the choice leaves it out, it is dead code and green.

Kinds: enum.Flag sets (`m in ALPHA | GAMMA`); dict.fromkeys tables; sorted() with an attrgetter
/ itemgetter / plugin-function key; import_module wrapped by functools.cache / lru_cache; the
engine's own version read in a `try` that catches PackageNotFoundError, its string taken apart
in a helper's loop; a module probe (`try: return find_spec(m) is not None except
ModuleNotFoundError: return False`); methods and properties of plugin enum members; queues
drained by `while Q: item = Q.pop(0)`."""

from __future__ import annotations

import textwrap

import pytest
from kinds_support import INTERFACE_WITHOUT_MHA_POOL, check, plugin, pyproject, upstream_pair

LEGACY = "import sglang.srt.layers.torchao_utils as torchao_utils\n\n\ndef quantize(model):\n    return torchao_utils.apply_torchao_config_to_model(model, 'int8')\n"
FAST = "def quantize(model):\n    return model\n"


@pytest.fixture(scope="module")
def upstreams(tmp_path_factory):
    return upstream_pair(tmp_path_factory)


def _judge(tmp_path, upstream: str, source: str, extra: dict | None = None, gone: bool = True) -> tuple[bool, int, list]:
    """Whether pd.legacy's import is live and breaking, the exit code, the findings; `gone`:
    the upstream lacks torchao_utils, so the import is a finding, live or dead."""
    # (a live use of a module both releases have: a plugin that leaves legacy out still checks something)
    files = {"pyproject.toml": pyproject(plugins={"pd": "pd:register"}), "pd/__init__.py": "from sglang.srt.layers.sampler import Sampler\n" + source,
             "pd/legacy.py": LEGACY, "pd/fast.py": FAST, **(extra or {})}
    code, doc = check(plugin(tmp_path, files), upstream)
    legacy = [f for f in doc["findings"] if f["file"] == "pd/legacy.py" and f["target"].startswith("sglang.srt.layers.torchao_utils")]
    assert legacy or not gone, doc["findings"]
    return any(f["live"] and f["breaking"] for f in legacy), code, doc["findings"]


# ----------------------------------------------------------------------------- chosen modules

FLAG = "import enum\nimport importlib\n\n\nclass Backend(enum.Flag):\n    LEGACY = enum.auto()\n    FAST = enum.auto()\n    OTHER = enum.auto()\n\n\n"
CHOICES = {
    # (the plugin's __init__, whether pd.legacy is imported)
    "flag_loop": (FLAG + "ENABLED = Backend.LEGACY | Backend.FAST\n\n\ndef register():\n    for member in Backend:\n        if member in ENABLED:\n"
                  "            importlib.import_module(f'pd.{member.name.lower()}')\n", True),
    "flag_comprehension": (FLAG + "ENABLED = Backend.FAST | Backend.LEGACY | Backend.OTHER\n\n\ndef register():\n"
                           "    for name in [m.name.lower() for m in Backend if m in ENABLED and m is not Backend.OTHER]:\n"
                           "        importlib.import_module('pd.' + name)\n", True),
    "flag_direct_test": (FLAG + "ENABLED = Backend.FAST\n\n\ndef register():\n    importlib.import_module('pd.fast')\n"
                         "    if Backend.LEGACY in ENABLED:\n        importlib.import_module('pd.legacy')\n", False),
    "fromkeys_switches": ("import importlib\n\nSWITCHES = dict.fromkeys(('legacy', 'other'), True) | {'fast': True}\n\n\ndef register():\n"
                          "    for name, on in SWITCHES.items():\n        if on and name != 'other':\n            importlib.import_module(f'pd.{name}')\n", True),
    "fromkeys_none_values": ("import importlib\n\nDISABLED = dict.fromkeys(['legacy'])\n\n\ndef register():\n    for name in ('legacy', 'fast'):\n"
                             "        if name in DISABLED:\n            continue\n        importlib.import_module('pd.' + name)\n", False),
    "fromkeys_spread": ("import importlib\n\nON = {**dict.fromkeys(('fast',), True), **dict.fromkeys(('legacy',), False)}\n\n\ndef register():\n"
                        "    for name in ON:\n        if ON[name]:\n            importlib.import_module('pd.' + name)\n", False),
}


@pytest.mark.parametrize("spelling", sorted(CHOICES))
def test_modules_chosen_by_flag_sets_and_fromkeys_tables(upstreams, tmp_path, spelling):
    """`m in A | B` of an enum.Flag holds for the members combined (the enum docs); dict.fromkeys
    gives every key the one value (None without one)."""
    source, imported = CHOICES[spelling]
    breaking, code, findings = _judge(tmp_path, upstreams[1], source)
    assert (breaking, code) == ((True, 1) if imported else (False, 0)), findings


SPEC = ("import importlib\nimport operator\nfrom typing import NamedTuple\n\n\nclass Spec(NamedTuple):\n    name: str\n    priority: int\n\n"
        "    @property\n    def qualname(self):\n        return 'pd.' + self.name\n\n\n")
SORTS = {
    "attrgetter_key": (SPEC + "SPECS = (Spec('fast', 2), Spec('legacy', 1))\n\n\ndef register():\n"
                       "    for spec in sorted(SPECS, key=operator.attrgetter('priority'))[:1]:\n        importlib.import_module(spec.qualname)\n", True),
    "itemgetter_key_reversed": (SPEC + "SPECS = [('fast', 2), ('legacy', 1)]\n\n\ndef register():\n"
                                "    first = sorted(SPECS, key=operator.itemgetter(1), reverse=True)[0]\n    importlib.import_module('pd.' + first[0])\n", False),
    "plugin_function_key": (SPEC + "SPECS = (Spec('fast', 1), Spec('legacy', 2))\n\n\ndef _rank(spec):\n    return -spec.priority\n\n\ndef register():\n"
                            "    importlib.import_module(sorted(SPECS, key=_rank)[0].qualname)\n", True),
    "item_of_a_record_table": (SPEC + "SPECS = (Spec('fast', 1), Spec('legacy', 2))\n\n\ndef register():\n    importlib.import_module(SPECS[0].qualname)\n", False),
}


@pytest.mark.parametrize("spelling", sorted(SORTS))
def test_modules_chosen_by_sorting_records(upstreams, tmp_path, spelling):
    """sorted() with key=operator.attrgetter / itemgetter (the operator docs) or a plugin
    function, and a property read on an item of a record table (`SPECS[0].qualname`)."""
    source, imported = SORTS[spelling]
    breaking, code, findings = _judge(tmp_path, upstreams[1], source)
    assert (breaking, code) == ((True, 1) if imported else (False, 0)), findings


KIND = ("import enum\nimport importlib\n\n\nclass Kind(enum.Enum):\n    LEGACY = 'legacy'\n    FAST = 'fast'\n\n    def module(self):\n"
        "        return f'pd.{self.value}'\n\n    @property\n    def wanted(self):\n        return self.value != 'fast'\n\n\n")
MEMBERS = {
    "method_in_a_loop": (KIND + "def register():\n    for kind in Kind:\n        importlib.import_module(kind.module())\n", True),
    "property_filter": (KIND + "def register():\n    for kind in Kind:\n        if not kind.wanted:\n            importlib.import_module(kind.module())\n", False),
    "method_of_an_item": (KIND + "ORDER = (Kind.FAST, Kind.LEGACY)\n\n\ndef register():\n    importlib.import_module(ORDER[1].module())\n", True),
}


@pytest.mark.parametrize("spelling", sorted(MEMBERS))
def test_modules_named_by_methods_of_enum_members(upstreams, tmp_path, spelling):
    """A plugin enum member's method or property runs with the member as self (`self.value`)."""
    source, imported = MEMBERS[spelling]
    breaking, code, findings = _judge(tmp_path, upstreams[1], source)
    assert (breaking, code) == ((True, 1) if imported else (False, 0)), findings


QUEUES = {
    "pop_front": ("import importlib\n\nPENDING = ['pd.fast']\n\n\ndef queue(name):\n    PENDING.append(name)\n\n\nqueue('pd.legacy')\n\n\n"
                  "def register():\n    while PENDING:\n        name = PENDING.pop(0)\n        importlib.import_module(name)\n", True),
    "deque_popleft": ("import collections\nimport importlib\n\nPENDING = collections.deque(['pd.legacy'])\n\n\n"
                      "def register():\n    while len(PENDING):\n        name = PENDING.popleft()\n        importlib.import_module(name)\n", True),
    "pop_back_unpacked": ("import importlib\n\nPENDING = [('pd', 'fast'), ('pd', 'legacy')]\n\n\ndef register():\n    while PENDING:\n"
                          "        package, leaf = PENDING.pop()\n        importlib.import_module(f'{package}.{leaf}')\n", True),
    "queue_without_it": ("import importlib\n\nPENDING = ['pd.fast']\n\n\ndef register():\n    while PENDING:\n        name = PENDING.pop()\n"
                         "        importlib.import_module(name)\n", False),
}


@pytest.mark.parametrize("spelling", sorted(QUEUES))
def test_modules_imported_by_draining_a_queue(upstreams, tmp_path, spelling):
    """`while Q: x = Q.pop(…)` meets each element of Q once, as `for x in Q:` would."""
    source, imported = QUEUES[spelling]
    breaking, code, findings = _judge(tmp_path, upstreams[1], source)
    assert (breaking, code) == ((True, 1) if imported else (False, 0)), findings


# ----------------------------------------------------------------------------- how a module is loaded or probed

LOADERS = {
    "lru_cache_wrapped": "load = functools.lru_cache(maxsize=None)(importlib.import_module)\n",
    "cache_wrapped": "load = functools.cache(importlib.import_module)\n",
    "cache_decorated_def": "@functools.lru_cache(maxsize=8)\ndef load(name):\n    return importlib.import_module(name)\n",
}


@pytest.mark.parametrize("leaf", ["legacy", "fast"])
@pytest.mark.parametrize("spelling", sorted(LOADERS))
def test_modules_imported_through_a_cached_import_module(upstreams, tmp_path, spelling, leaf):
    """functools.cache(f) / lru_cache(...)(f) calls f (remembering results: the functools docs),
    so a global bound to it imports what import_module would, from the module or another."""
    loader = "import functools\nimport importlib\n\n" + LOADERS[spelling]
    source = f"from pd._load import load\n\n\ndef register():\n    load('pd.{leaf}')\n"
    breaking, code, findings = _judge(tmp_path, upstreams[1], source, {"pd/_load.py": loader})
    assert (breaking, code) == ((True, 1) if leaf == "legacy" else (False, 0)), findings


PROBES = {
    "find_spec_in_a_try": "    try:\n        return importlib.util.find_spec(name) is not None\n    except ModuleNotFoundError:\n        return False\n",
    "import_error_tuple_none": "    try:\n        return importlib.util.find_spec(name) is not None\n    except (ImportError, ModuleNotFoundError):\n        return None\n",
    "no_try": "    return importlib.util.find_spec(name) is not None\n",
}


@pytest.mark.parametrize("release", ["old", "new"])
@pytest.mark.parametrize("spelling", sorted(PROBES))
def test_a_module_imported_behind_a_probe_for_the_module_it_needs(upstreams, tmp_path, spelling, release):
    """`if _has("sglang…torchao_utils"): import pd.legacy`: where the probed module is gone the
    import never runs (a lookup that raises means a module is missing: the test is false as the
    handler's value is); where it is there, it runs and resolves."""
    source = ("import importlib\nimport importlib.util\n\n\ndef _has(name):\n" + PROBES[spelling] + "\n\ndef register():\n"
              "    if _has('sglang.srt.layers.torchao_utils'):\n        importlib.import_module('pd.legacy')\n")
    breaking, code, findings = _judge(tmp_path, upstreams[0 if release == "old" else 1], source, gone=release == "new")
    assert (breaking, code) == (False, 0), findings


VERSIONS = {
    # the release numbers as ints, however the plugin reads them
    "tuple_in_a_guarded_helper": ("    try:\n        raw = version('sglang')\n    except PackageNotFoundError:\n        return (0, 0, 0)\n"
                                  "    return tuple(int(p) for p in raw.split('.')[:3] if p.isdigit())\n"),
    "loop_over_pieces": ("    parts = []\n    for piece in version('sglang').split('.')[:3]:\n        digits = ''.join(ch for ch in piece if ch.isdigit())\n"
                         "        parts.append(int(digits or 0))\n    return tuple(parts)\n"),
    "map_after_partition": ("    try:\n        head = version('sglang').partition('+')[0]\n    except PackageNotFoundError:\n        return (0,)\n"
                            "    return tuple(map(int, head.split('.')))\n"),
}


@pytest.mark.parametrize("threshold", ["0.10.0", "0.11.0"])
@pytest.mark.parametrize("spelling", sorted(VERSIONS))
def test_a_module_chosen_by_the_engine_version_the_plugin_parses(upstreams, tmp_path, spelling, threshold):
    """`if _sglang_version() < (0, 10, 0): import pd.legacy`: the engine is installed wherever it
    loads the plugin (a PackageNotFoundError handler never runs), and its version string taken
    apart is the release's own: on 0.10.0 the legacy module is dead below a 0.10.0 threshold,
    live (and broken) below 0.11.0."""
    wanted = tuple(int(p) for p in threshold.split("."))
    source = ("import importlib\nfrom importlib.metadata import PackageNotFoundError, version\n\n\ndef _sglang_version():\n" + VERSIONS[spelling]
              + f"\n\ndef register():\n    if _sglang_version() < {wanted}:\n        importlib.import_module('pd.legacy')\n")
    breaking, code, findings = _judge(tmp_path, upstreams[1], source)
    assert (breaking, code) == ((True, 1) if threshold == "0.11.0" else (False, 0)), findings


# ----------------------------------------------------------------------------- hooks: what a registration registers

DEVICE_NAME = {
    "sglang/srt/utils.py": "def get_device_name(device_id: int = 0) -> str:\n    return 'cuda'\n",
    "sglang/srt/server.py": "from sglang.srt.utils import get_device_name\n\n\ndef info():\n    return get_device_name()\n",
}
TARGET = "sglang.srt.utils.get_device_name"
HEAD = "import functools\n\nfrom sglang.srt.plugins.hook_registry import HookRegistry, HookType, plugin_hook\n\n"
NAMER = "class _Namer:\n    def __init__(self, name):\n        self.name = name\n\n    def device_name(self, {params}):\n        return self.name\n\n\n"
DISPATCH = ("@functools.singledispatch\ndef make(config):\n    raise TypeError(config)\n\n\n@make.register\ndef _(config: dict):\n"
            "    def hook({params}):\n        return config['name']\n    return hook\n\n\n@make.register(str)\ndef _from_text(config):\n"
            "    def named({params}):\n        return config\n    return named\n\n\n")
HOOKS = {
    # (the plugin module, the hook's parameters written as `{params}`)
    "bound_method_a_factory_returns": HEAD + NAMER + "def make(name):\n    return _Namer(name).device_name\n\n\n"
                                      f"def register():\n    HookRegistry.register({TARGET!r}, make('acme'), HookType.REPLACE)\n",
    "bound_method_through_getattr": HEAD + NAMER + "_NAMER = _Namer('acme')\n\n\n"
                                    f"def register():\n    HookRegistry.register({TARGET!r}, getattr(_NAMER, 'device_name'), HookType.REPLACE)\n",
    "singledispatch_factory": HEAD + DISPATCH + f"def register():\n    HookRegistry.register({TARGET!r}, make({{'name': 'acme'}}), HookType.REPLACE)\n",
    "partial_over_a_lambda_decorator": HEAD + "replace = functools.partial(lambda name, **kw: plugin_hook(f'sglang.srt.utils.{name}', **kw), type=HookType.REPLACE)\n\n\n"
                                       "@replace('get_device_name')\ndef device_name({params}):\n    return 'acme'\n\n\ndef register():\n    pass\n",
    "lambda_decorator": HEAD + "replace = lambda name: plugin_hook('sglang.srt.utils.' + name, type=HookType.REPLACE)\n\n\n"
                        "@replace('get_device_name')\ndef device_name({params}):\n    return 'acme'\n\n\ndef register():\n    pass\n",
    "partial_presetting_a_parameter": HEAD + "replace = functools.partial(lambda kind, name: plugin_hook(f'sglang.srt.utils.{name}', type=kind), HookType.REPLACE)\n\n\n"
                                      "@replace('get_device_name')\ndef device_name({params}):\n    return 'acme'\n\n\ndef register():\n    pass\n",
}


@pytest.fixture(scope="module")
def device_upstream(tmp_path_factory):
    return upstream_pair(tmp_path_factory, new=DEVICE_NAME)[1]


@pytest.mark.parametrize("fits", [True, False], ids=["fits", "misfits"])
@pytest.mark.parametrize("spelling", sorted(HOOKS))
def test_the_callable_a_hook_registers_however_it_is_made(device_upstream, tmp_path, spelling, fits):
    """A method read on an instance is bound (self is not the caller's: Python's data model); a
    functools.singledispatch factory returns what its registered implementations return; a
    decorator factory may be a lambda, or a functools.partial over one (its presets first,
    `**kw` passed on). The REPLACE hook is judged against upstream's `get_device_name()`."""
    params = "device_id=0" if fits else "device_id, extra"
    files = {"pyproject.toml": pyproject(plugins={"pd": "pd:register"}), "pd/__init__.py": HOOKS[spelling].replace("{params}", params)}
    code, doc = check(plugin(tmp_path, files), device_upstream)
    hooks = [f for f in doc["findings"] if f["kind"] == "hook" and f["target"] == TARGET]
    assert len(hooks) == 1, doc["findings"]
    assert (hooks[0]["status"], code) == (("ok", 0) if fits else ("signature_changed", 1)), hooks


# ----------------------------------------------------------------------------- patches from a table of (module, attribute) keys

PATCHERS = {
    "object_built_with_its_defaults": ("class _Patcher:\n    def __init__(self, patches=_PATCHES, modules=sys.modules):\n"
                                       "        for (module_name, attr), impl in patches.items():\n            with contextlib.suppress(KeyError):\n"
                                       "                setattr(modules[module_name], attr, impl)\n\n\ndef register():\n    _Patcher()\n"),
    "function_called_with_its_defaults": ("def _apply(patches=_PATCHES, modules=sys.modules):\n    for (module_name, attr), impl in patches.items():\n"
                                          "        module = modules.get(module_name)\n        if module is not None:\n            setattr(module, attr, impl)\n\n\n"
                                          "def register():\n    _apply()\n"),
    "key_unpacked_in_the_body": ("class _Patcher:\n    def __init__(self, patches=_PATCHES):\n        for key, impl in patches.items():\n"
                                 "            module_name, attr = key\n            setattr(importlib.import_module(module_name), attr, impl)\n\n\n"
                                 "_PATCHER = _Patcher()\n\n\ndef register():\n    pass\n"),
}


@pytest.mark.parametrize("module", ["sglang.srt.layers.torchao_utils", "sglang.srt.layers.sampler"])
@pytest.mark.parametrize("spelling", sorted(PATCHERS))
def test_patches_read_from_a_table_keyed_by_module_and_attribute(upstreams, tmp_path, spelling, module):
    """`{(module, attr): impl}` unpacked by `for (m, a), f in T.items()` (or `m, a = key`), applied
    by a helper whose parameters default to the table: called with no arguments, it runs with
    those defaults. A patch of a module the release dropped never happens (reported); one of a
    module that is there is judged as any patch."""
    attr = "apply_torchao_config_to_model" if "torchao" in module else "Sampler"
    source = ("import contextlib\nimport importlib\nimport sys\nimport types\n\n\ndef _skip(*args, **kwargs):\n    return None\n\n\n"
              f"_PATCHES = types.MappingProxyType({{({module!r}, {attr!r}): _skip}})\n\n\n" + PATCHERS[spelling])
    files = {"pyproject.toml": pyproject(plugins={"pd": "pd:register"}), "pd/__init__.py": "from sglang.srt.layers.sampler import Sampler\n" + source}
    code, doc = check(plugin(tmp_path, files), upstreams[1])
    patches = [f for f in doc["findings"] if f["kind"] == "patch" and f["target"] == f"{module}.{attr}"]
    if "torchao" in module:
        assert len(patches) == 1 and patches[0]["status"] != "ok" and patches[0]["live"], doc["findings"]
    else:
        assert [f["status"] for f in patches] == ["ok"] and code == 0, doc["findings"]


# ----------------------------------------------------------------------------- platform classes made by type()

MIXIN = "class PoolMixin:\n    def get_mha_kv_pool_cls(self):\n        return object\n\n\nclass Unused:\n    def get_mha_kv_pool_cls(self):\n        return object\n\n\n"
PLATFORMS = {
    # (pd/platform.py after the mixins, pd/activation.py's return, whether the platform holds PoolMixin)
    "type_call": ("def _init(self):\n    pass\n\n\nBoltPlatform = type('BoltPlatform', (PoolMixin, SRTPlatform), {'init_backend': _init, '__module__': __name__})\n",
                  "'pd.platform:BoltPlatform'", True),
    "factory_function": ("def _make(name, *mixins):\n    return type(name, (*mixins, SRTPlatform), {'generation': name})\n\n\n"
                         "BoltPlatform = _make('BoltPlatform', PoolMixin)\n", "'pd.platform.BoltPlatform'", True),
    "factory_and_a_table_chosen_name": ("def _make(generation):\n    return type(f'Bolt{generation}', (PoolMixin, SRTPlatform), {'generation': generation})\n\n\n"
                                        "BoltG1 = _make('G1')\nBoltG2 = _make('G2')\n",
                                        "'pd.platform:' + {'1': 'BoltG1', '2': 'BoltG2'}.get(os.environ.get('BOLT_GEN', '2'), 'BoltG2')", True),
    "mixin_left_out": ("BoltPlatform = type('BoltPlatform', (SRTPlatform,), {'get_default_attention_backend': lambda self: 'triton'})\n",
                       "'pd.platform:BoltPlatform'", False),
}


@pytest.mark.parametrize("spelling", sorted(PLATFORMS))
def test_platform_classes_made_by_type_hold_the_overrides_of_their_bases(tmp_path_factory, tmp_path, spelling):
    """Python's three-argument type(name, bases, namespace) makes a class as a class statement
    would: a mixin among its bases brings its overrides, judged on the release (0.10.0 dropped
    get_mha_kv_pool_cls from SRTPlatform); activate() may build the class path by `+`."""
    body, returned, holds = PLATFORMS[spelling]
    old, new = upstream_pair(tmp_path_factory, new={k: textwrap.dedent(v) for k, v in INTERFACE_WITHOUT_MHA_POOL.items()})
    files = {"pyproject.toml": pyproject(platforms={"pd": "pd.activation:activate"}), "pd/__init__.py": "",
             "pd/activation.py": f"import os\n\n\ndef activate():\n    return {returned}\n",
             "pd/platform.py": "from sglang.srt.platforms.interface import SRTPlatform\n\n\n" + MIXIN + body}
    for upstream, status, exit_code in ((old, "ok", 0), (new, "not_on_base", 1)):
        code, doc = check(plugin(tmp_path, files, name=f"p-{status}"), upstream)
        pools = [f for f in doc["findings"] if f["target"].endswith("get_mha_kv_pool_cls") and f["live"] and f["file"] == "pd/platform.py"]
        if holds:
            assert {f["status"] for f in pools} <= {status} and (pools or status == "ok") and code == exit_code, doc["findings"]
        else:
            assert not pools and code == 0, doc["findings"]


MARK = (HEAD + "def mark(target, kind=HookType.REPLACE):\n    def deco(fn):\n        fn._hook_spec = (target, kind)\n        return fn\n    return deco\n\n\n")
MARKED = {
    # functions a decorator marks with an attribute, collected by reading it back
    "table_of_functions": (MARK + f"@mark({TARGET!r})\ndef device_name({{params}}):\n    return 'acme'\n\n\ndef unmarked(device_id, extra):\n    return 'x'\n\n\n"
                           "def register():\n    for fn in (device_name, unmarked):\n        spec = getattr(fn, '_hook_spec', None)\n        if spec is None:\n"
                           "            continue\n        target, kind = spec\n        HookRegistry.register(target, fn, kind)\n"),
    "class_decorator_collecting_static_methods": (
        MARK + "PENDING = []\n\n\ndef collect(cls):\n    for member in vars(cls).values():\n        fn = member.__func__ if isinstance(member, staticmethod) else member\n"
        "        spec = getattr(fn, '_hook_spec', None)\n        if spec is not None:\n            PENDING.append((spec[0], fn, spec[1]))\n    return cls\n\n\n"
        f"@collect\nclass Hooks:\n    @staticmethod\n    @mark({TARGET!r})\n    def device_name({{params}}):\n        return 'acme'\n\n"
        "    @staticmethod\n    def unmarked(device_id, extra):\n        return 'x'\n\n\ndef register():\n    for target, fn, kind in PENDING:\n"
        "        HookRegistry.register(target, fn, kind)\n"),
    "comprehension_over_markers": (MARK + f"@mark({TARGET!r}, HookType.REPLACE)\ndef device_name({{params}}):\n    return 'acme'\n\n\n"
                                   "def unmarked(device_id, extra):\n    return 'x'\n\n\n"
                                   "SPECS = [(getattr(f, '_hook_spec', None), f) for f in (device_name, unmarked)]\n\n\n"
                                   "def register():\n    for spec, fn in SPECS:\n        if spec is not None:\n            HookRegistry.register(spec[0], fn, spec[1])\n"),
}


@pytest.mark.parametrize("fits", [True, False], ids=["fits", "misfits"])
@pytest.mark.parametrize("spelling", sorted(MARKED))
def test_hooks_collected_from_attributes_their_decorators_set(device_upstream, tmp_path, spelling, fits):
    """`@mark(target)` setting `fn._hook_spec` on the function it decorates: a read of that
    attribute is what the decorator stored (the factory's arguments), the default for a
    function no decorator marks; a staticmethod's __func__ is its function."""
    params = "device_id=0" if fits else "device_id, extra"
    files = {"pyproject.toml": pyproject(plugins={"pd": "pd:register"}), "pd/__init__.py": MARKED[spelling].replace("{params}", params)}
    code, doc = check(plugin(tmp_path, files), device_upstream)
    hooks = [f for f in doc["findings"] if f["kind"] == "hook"]
    assert len(hooks) == 1 and hooks[0]["target"] == TARGET, doc["findings"]  # (the unmarked function registers nothing)
    assert (hooks[0]["status"], code) == (("ok", 0) if fits else ("signature_changed", 1)), hooks
