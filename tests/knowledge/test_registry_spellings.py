"""A registry read by a key upstream dropped, however the plugin writes it (issue 34, items 2 and
3; field case F39's kind): `[key]`, `.get(key)` whose None the plugin then uses, and a key passed
through a helper's parameter break; `.get(key, default)` and a tested `.get` cope (reported, not
red); `"key" in REGISTRY` and `if REGISTRY.get(key):` guard the read like any test decided false."""

from __future__ import annotations

import textwrap

import pytest
from kinds_support import COMMON, check, plugin, pyproject, upstream_pair
from knowledge_support import by_target

REGISTRY = "sglang.srt.layers.attention.attention_registry.ATTENTION_BACKENDS"
KEY = f"{REGISTRY}['dual']"
REGISTRY_FILE = "sglang/srt/layers/attention/attention_registry.py"
HEAD = "from sglang.srt.layers.attention.attention_registry import ATTENTION_BACKENDS, register_attention_backend\n\n\n"


@pytest.fixture(scope="module")
def upstreams(tmp_path_factory):
    # 0.9.0 registers "dual"; 0.10.0 no longer does (the registry module as kinds_support writes it)
    registry = textwrap.dedent(COMMON[REGISTRY_FILE]) + '\n\n@register_attention_backend("torch_native")\ndef create_torch_native(runner):\n    return None\n'
    old = registry + '\n\n@register_attention_backend("dual")\ndef create_dual(runner):\n    return None\n'
    return upstream_pair(tmp_path_factory, old={REGISTRY_FILE: old}, new={REGISTRY_FILE: registry})


INSTALLER = ("import dataclasses\nimport functools\n\n\n@dataclasses.dataclass(frozen=True)\nclass Spec:\n    name: str\n    delegate_to: str\n\n\n"
             "class Installer:\n    def __init__(self, spec):\n        self.spec = spec\n\n    {deco}def factory(self):\n"
             "        return ATTENTION_BACKENDS[self.spec.delegate_to]\n\n    def install(self):\n        upstream = self.factory{call}\n"
             "        register_attention_backend(self.spec.name)(upstream)\n\n\nSPECS = (Spec('mine', '{key}'),)\n\n\n"
             "def register():\n    for spec in SPECS:\n        Installer(spec).install()\n")


POST_INIT = ("import dataclasses\nfrom typing import Callable\n\n" + HEAD + "@dataclasses.dataclass({frozen})\nclass Delegate:\n    name: str\n"
             "    upstream: str\n    factory: Callable = dataclasses.field(init=False, repr=False)\n\n"
             "    def __post_init__(self):\n        {put}\n\n\ndef register():\n    return None\n\n\n")


def use(read: str) -> str:
    return HEAD + f"def register():\n    factory = {read}\n\n    @register_attention_backend('mine')\n    def create(runner):\n        return factory(runner)\n"


SPELLINGS = {
    "subscript": (use('ATTENTION_BACKENDS["dual"]'), True),
    "get": (use('ATTENTION_BACKENDS.get("dual")'), True),
    "helper_parameter": (HEAD + "def reuse(name):\n    return ATTENTION_BACKENDS[name]\n\n\n" + use('reuse("dual")').replace(HEAD, ""), True),
    "helper_keyword": (HEAD + "def reuse(*, name):\n    return ATTENTION_BACKENDS[name]\n\n\n" + use('reuse(name="dual")').replace(HEAD, ""), True),
    "get_default": (use('ATTENTION_BACKENDS.get("dual", ATTENTION_BACKENDS["torch_native"])'), False),
    "get_tested": (use('ATTENTION_BACKENDS.get("dual") or ATTENTION_BACKENDS["torch_native"]'), False),
    # `.pop(key)` raises KeyError as `[key]` does; with a default it copes
    "pop": (use('ATTENTION_BACKENDS.pop("dual")'), True),
    "pop_default": (use('ATTENTION_BACKENDS.pop("dual", None) or ATTENTION_BACKENDS["torch_native"]'), False),
    # `del X[key]` raises KeyError as `.pop(key)` does (F39 variant p1): a literal, a module constant, an alias;
    # `.pop(key, None)` is the removal that copes
    "del_literal": (HEAD + 'def register():\n    del ATTENTION_BACKENDS["dual"]\n', True),
    "del_constant": (HEAD + '_HIDDEN = "dual"\n\n\ndef register():\n    del ATTENTION_BACKENDS[_HIDDEN]\n', True),
    "del_through_alias": (HEAD + 'import sglang.srt.layers.attention.attention_registry as registry\n\n\n'
                          'def register():\n    del registry.ATTENTION_BACKENDS["dual"], registry.ATTENTION_BACKENDS["torch_native"]\n', True),
    "del_except_key_error": (HEAD + 'def register():\n    try:\n        del ATTENTION_BACKENDS["dual"]\n    except KeyError:\n        pass\n', False),
    "pop_default_removal": (HEAD + 'def register():\n    ATTENTION_BACKENDS.pop("dual", None)\n', False),
    # the result bound to a name tested before any other read (F39 variant w1), as a test of the call
    "get_bound_then_none_test": (HEAD + 'def register():\n    factory = ATTENTION_BACKENDS.get("dual")\n    if factory is None:\n        return\n'
                                 '    return factory(None)\n', False),
    "get_bound_then_truth_test": (HEAD + 'def register():\n    factory = ATTENTION_BACKENDS.get("dual")\n    return factory(None) if factory else None\n', False),
    # read through an accessor the object calls on itself (sixteenth set F39-k2): a static method,
    # a plain one; the names from the object's constructor
    "static_accessor_through_self": (HEAD + "class _Installer:\n    def __init__(self, names):\n        self.names = names\n\n"
                                     "    @staticmethod\n    def table():\n        return ATTENTION_BACKENDS\n\n    def install(self):\n"
                                     "        for name in self.names:\n            original = self.table()[name]\n            self.table()[name] = original\n\n\n"
                                     "def register():\n    _Installer(('dual',)).install()\n", True),
    "plain_accessor_through_self": (HEAD + "class _Installer:\n    names = ('dual',)\n\n    def table(self):\n        return ATTENTION_BACKENDS\n\n"
                                    "    def install(self):\n        return [self.table()[n] for n in self.names]\n\n\n"
                                    "def register():\n    _Installer().install()\n", True),
    "static_accessor_get_tested": (HEAD + "class _Installer:\n    @staticmethod\n    def table():\n        return ATTENTION_BACKENDS\n\n"
                                   "    def install(self):\n        if (found := self.table().get('dual')) is None:\n            return None\n"
                                   "        return found(None)\n\n\ndef register():\n    _Installer().install()\n", False),
    # bound by a walrus in the test itself (sixteenth set F39-k3), over a read-only table's keys; in a while
    "get_walrus_in_the_test": (HEAD + 'import types\n\nWANTED = types.MappingProxyType({"mine": "dual"})\n\n\ndef register():\n'
                               '    for mine, up in WANTED.items():\n        if (factory := ATTENTION_BACKENDS.get(up)) is None:\n'
                               '            continue\n        factory(None)\n', False),
    "get_walrus_truth_in_a_while": (HEAD + 'def register():\n    while not (factory := ATTENTION_BACKENDS.get("dual")):\n        return None\n'
                                    '    return factory(None)\n', False),
    "get_walrus_used_first": (HEAD + 'def register():\n    made = (factory := ATTENTION_BACKENDS.get("dual"))(None)\n'
                              '    if factory is None:\n        return None\n    return made\n', True),
    # a read before the test uses None as the value
    "get_bound_used_first": (HEAD + 'def register():\n    factory = ATTENTION_BACKENDS.get("dual")\n    made = factory(None)\n'
                             '    if factory is None:\n        return None\n    return made\n', True),
    # the KeyError of `[key]` / `.pop(key)` caught by a handler of it (or of a base: LookupError, Exception)
    "subscript_except_key_error": (HEAD + 'def register():\n    try:\n        factory = ATTENTION_BACKENDS["dual"]\n    except KeyError:\n'
                                   '        return\n    return factory(None)\n', False),
    "pop_except_lookup_error": (HEAD + 'def register():\n    try:\n        return ATTENTION_BACKENDS.pop("dual")(None)\n    except LookupError:\n'
                                '        return None\n', False),
    "helper_in_try_except_exception": (HEAD + "def reuse(name):\n    return ATTENTION_BACKENDS[name]\n\n\n"
                                       'def register():\n    try:\n        reuse("dual")\n    except Exception:\n        pass\n', False),
    "subscript_except_attribute_error": (HEAD + 'def register():\n    try:\n        factory = ATTENTION_BACKENDS["dual"]\n    except AttributeError:\n'
                                         '        return\n    return factory(None)\n', True),
    # the entry wrapped in place: the key is read before the plugin's own put stores it (F39 variant r1)
    "wrapped_in_place": (HEAD + 'def wrap(factory):\n    return factory\n\n\ndef register():\n'
                         '    ATTENTION_BACKENDS["dual"] = wrap(ATTENTION_BACKENDS["dual"])\n', True),
    "wrapped_through_a_local": (HEAD + 'def wrap(factory):\n    return factory\n\n\ndef register():\n'
                                '    original = ATTENTION_BACKENDS["dual"]\n    ATTENTION_BACKENDS["dual"] = wrap(original)\n', True),
    "wrapped_by_partial": (HEAD + 'import functools\n\n\ndef on_device(factory, runner):\n    return factory(runner)\n\n\n'
                           'def register():\n    ATTENTION_BACKENDS["dual"] = functools.partial(\n        on_device,\n'
                           '        ATTENTION_BACKENDS["dual"],\n    )\n', True),
    # operator.itemgetter over the registry (F39 variant q1): `X["k"]` for each key
    "itemgetter_inline": (use('__import__("operator").itemgetter("dual")(ATTENTION_BACKENDS)').replace(
        'factory = __import__("operator").itemgetter', 'factory = itemgetter').replace(HEAD, HEAD + "from operator import itemgetter\n\n\n"), True),
    "itemgetter_bound_unpacked": (HEAD + 'import operator\n\n_GET = operator.itemgetter("dual", "torch_native")\n\n\n'
                                  'def register():\n    factory, fallback = _GET(ATTENTION_BACKENDS)\n    return factory(None)\n', True),
    # with the keys unpacked from a folded sequence (fifteenth set F39-m1): inline, bound to a local, a module table
    "itemgetter_starred_generator": (HEAD + 'import operator\n\n\ndef register():\n'
                                     '    return operator.itemgetter(*(k for k in ("dual", "torch_native")))(ATTENTION_BACKENDS)\n', True),
    "itemgetter_starred_local": (HEAD + 'import operator\n\nKEYS = ["torch_native", "dual"]\n\n\ndef register():\n'
                                 '    lookup = operator.itemgetter(*KEYS)\n    factories = lookup(ATTENTION_BACKENDS)\n    return factories\n', True),
    # ... a module global holding the getter, called in an lru_cache'd helper (sixteenth set F39-k1)
    "itemgetter_starred_module_global": (HEAD + 'import functools\nimport operator\n\nKEYS = ("torch_native", "dual")\n'
                                         '_PICK = operator.itemgetter(*KEYS)\n\n\n@functools.lru_cache(maxsize=None)\ndef _factories():\n'
                                         '    return dict(zip(KEYS, _PICK(ATTENTION_BACKENDS)))\n\n\ndef register():\n    return _factories()\n', True),
    "itemgetter_starred_kept": (HEAD + 'from operator import itemgetter\n\nKEYS = ("torch_native",)\n\n\ndef register():\n'
                                '    return itemgetter(*KEYS)(ATTENTION_BACKENDS)\n', None),
    # a ChainMap over the plugin's own map and upstream's registry (fifteenth set F39-m3): a key the
    # plugin's map lacks is read from upstream's, directly or through a helper's parameter
    "chain_map_literal_key": (HEAD + 'from collections import ChainMap\n\nCHAIN = ChainMap({}, ATTENTION_BACKENDS)\n\n\n'
                              'def register():\n    return CHAIN["dual"](None)\n', True),
    "chain_map_through_parameter": (HEAD + 'import collections\n\nCHAIN = collections.ChainMap({"mine": None}, ATTENTION_BACKENDS)\n\n\n'
                                    'class Bridge:\n    def __init__(self, base):\n        self.factory = CHAIN[base]\n\n\n'
                                    'def register():\n    return Bridge("dual")\n', True),
    "chain_map_shadowed_key": (HEAD + 'from collections import ChainMap\n\nCHAIN = ChainMap({"dual": None}, ATTENTION_BACKENDS)\n\n\n'
                               'def register():\n    return CHAIN["dual"]\n', None),
    # ... and upstream's registry first, the plugin's fallback map after it (eighteenth set F39-h3): a key the
    # fallback holds never raises KeyError (ChainMap.__getitem__), one it lacks does
    "chain_map_fallback_literal_key": (HEAD + 'from collections import ChainMap\n\n\ndef _mine(runner):\n    return None\n\n\n'
                                       'CHAIN = ChainMap(ATTENTION_BACKENDS, {"dual": _mine})\n\n\ndef register():\n    return CHAIN["dual"](None)\n', None),
    "chain_map_fallback_constant_key": (HEAD + 'import collections\n\nDUAL = "dual"\nFALLBACKS = {DUAL: None}\n'
                                        'CHAIN = collections.ChainMap(ATTENTION_BACKENDS, FALLBACKS)\n\n\ndef register():\n    factory = CHAIN[DUAL]\n    return factory\n', None),
    "chain_map_fallback_between": (HEAD + 'from collections import ChainMap\n\nCHAIN = ChainMap({"mine": None}, ATTENTION_BACKENDS, dict(dual=None))\n\n\n'
                                   'class Bridge:\n    def __init__(self, base):\n        self.factory = CHAIN[base]\n\n\ndef register():\n    return Bridge("dual")\n', None),
    "chain_map_fallback_lacks_it": (HEAD + 'from collections import ChainMap\n\nCHAIN = ChainMap(ATTENTION_BACKENDS, {"other": None})\n\n\n'
                                    'def register():\n    return CHAIN["dual"](None)\n', True),
    # a helper's key parameter filled from a row spread into its call (eighteenth set F39-h2): itertools.starmap over
    # a read-only table's items, a comprehension's `f(*row)`, a loop's; rows naming only keys upstream keeps
    "starmap_over_proxy_items": (HEAD + 'import itertools\nimport types\n\nALIASES = types.MappingProxyType({"mine": "torch_native", "dev": "dual"})\n\n\n'
                                 'def _alias(mine, upstream):\n    return ATTENTION_BACKENDS[upstream]\n\n\n'
                                 'def register():\n    return list(itertools.starmap(_alias, ALIASES.items()))\n', True),
    "comprehension_spreading_rows": (HEAD + 'ROWS = [("mine", "dual")]\n\n\ndef _alias(mine, upstream, tag=None):\n    return ATTENTION_BACKENDS[upstream]\n\n\n'
                                     'def register():\n    return [_alias(*row) for row in ROWS]\n', True),
    "loop_spreading_rows_after_an_argument": (HEAD + 'ROWS = (("dual",),)\n\n\ndef _alias(mine, upstream):\n    return ATTENTION_BACKENDS[upstream]\n\n\n'
                                              'def register():\n    for row in ROWS:\n        _alias("mine", *row)\n', True),
    "starmap_of_kept_keys": (HEAD + 'from itertools import starmap\n\nALIASES = {"mine": "torch_native"}\n\n\n'
                             'def _alias(mine, upstream):\n    return ATTENTION_BACKENDS[upstream]\n\n\n'
                             'def register():\n    return list(starmap(_alias, ALIASES.items()))\n', None),
    # the key a field of a record the object keeps (eighteenth set F39-h1), read in a cached_property, a property
    # or a method of objects a loop makes over a table of records
    "record_field_of_self_in_cached_property": (HEAD + INSTALLER.format(key="dual", deco="@functools.cached_property\n    ", call=""), True),
    "record_field_of_self_in_property": (HEAD + INSTALLER.format(key="dual", deco="@property\n    ", call=""), True),
    "record_field_of_self_in_method": (HEAD + INSTALLER.format(key="dual", deco="", call="()"), True),
    "record_field_of_self_kept_key": (HEAD + INSTALLER.format(key="torch_native", deco="@functools.cached_property\n    ", call=""), None),
    "itemgetter_default_kept": (HEAD + 'from operator import itemgetter\n\n\ndef register():\n'
                                '    return itemgetter("torch_native")(ATTENTION_BACKENDS)(None)\n', None),
    # the key passed on through two helpers from a loop over a table (fourteenth set F39-n1): a str
    # enum's member and its `.value`, a record's field, a plain string; the registry a helper returns
    "enum_value_through_two_helpers": (HEAD + "import enum\n\n\nclass Up(str, enum.Enum):\n    DUAL = 'dual'\n\n\n"
                                       "def _factory(backend):\n    return ATTENTION_BACKENDS[backend.value]\n\n\n"
                                       "def _wrap(name, upstream):\n    return _factory(upstream)\n\n\n"
                                       "def register():\n    for name, upstream in {'mine': Up.DUAL}.items():\n        _wrap(name, upstream)\n", True),
    "record_field_through_a_method_loop": (HEAD + "import dataclasses\n\n\n@dataclasses.dataclass(frozen=True)\nclass Port:\n    name: str\n    base: str\n\n\n"
                                           "_BASE = Port('mine', 'torch_native')\nPORTS = (_BASE, dataclasses.replace(_BASE, name='other', base='dual'))\n\n\n"
                                           "class Registrar:\n    def __init__(self, table):\n        self.table = table\n\n"
                                           "    @classmethod\n    def from_ports(cls, ports):\n        return cls({p.name: p for p in ports})\n\n"
                                           "    def apply(self):\n        for name, port in self.table.items():\n            ATTENTION_BACKENDS[port.base](None)\n\n\n"
                                           "def register():\n    Registrar.from_ports(PORTS).apply()\n", True),
    "registry_a_helper_returns": (HEAD + "def _registry():\n    return ATTENTION_BACKENDS\n\n\ndef _entry(key):\n    return _registry()[key]\n\n\n"
                                  "def _install(key):\n    return _entry(key)\n\n\ndef register():\n    for key in ('dual',):\n        _install(key)\n", True),
    # a comprehension reads its element only for the values its `if` holds for (F39-n2): a membership
    # test guards the read; without it the read breaks
    "comprehension_filtered_by_membership": (use('next((ATTENTION_BACKENDS[n] for n in ("dual", "torch_native") if n in ATTENTION_BACKENDS), None)'), False),
    "list_comprehension_filtered_by_get": (use('[ATTENTION_BACKENDS[n] for n in NAMES if ATTENTION_BACKENDS.get(n)][0]').replace(
        "def register", 'NAMES = ["dual", "torch_native"]\n\n\ndef register'), False),
    "comprehension_unfiltered": (use('[ATTENTION_BACKENDS[n] for n in ("dual", "torch_native")][0]'), True),
    # a snapshot of the registry holds its keys (the twentieth held-out set, F39-f2): dict(X), X.copy(), {**X}
    "snapshot_dict": (use('dict(ATTENTION_BACKENDS)["dual"]'), True),
    "snapshot_copy_in_a_name": (HEAD + 'def register():\n    known = ATTENTION_BACKENDS.copy()\n    return known["dual"](None)\n', True),
    "snapshot_copy_module": ("import copy\n" + HEAD + 'def register():\n    return copy.copy(ATTENTION_BACKENDS)["dual"](None)\n', True),
    "snapshot_spread": (HEAD + 'def register():\n    known = {**ATTENTION_BACKENDS}\n    return known.get("dual")(None)\n', True),
    # the plugin's own put before the read: the key is there
    "put_then_read": (HEAD + 'def create(runner):\n    return None\n\n\ndef register():\n'
                      '    ATTENTION_BACKENDS["dual"] = create\n    return ATTENTION_BACKENDS["dual"](None)\n', None),
    # the plugin takes the name over after reading upstream's entry (set 21 F39-e2): at import, the
    # read runs before the plugin's own registration, top to bottom -- a decorator, a call, an item put
    "read_then_own_decorator": (HEAD + '_up = ATTENTION_BACKENDS["dual"]\n\n\n@register_attention_backend("dual")\n'
                                'def create(runner):\n    return _up(runner)\n\n\ndef register():\n    return None\n', True),
    "read_then_own_call": (HEAD + '_up = ATTENTION_BACKENDS.get("dual")\n\n\ndef create(runner):\n    return _up(runner)\n\n\n'
                           'register_attention_backend("dual")(create)\n\n\ndef register():\n    return None\n', True),
    "read_then_own_item_put": (HEAD + '_up = ATTENTION_BACKENDS["dual"]\nATTENTION_BACKENDS["dual"] = lambda runner: _up(runner)\n\n\n'
                               'def register():\n    return None\n', True),
    # the key a field of a plugin dataclass record, read when the record is made (twenty-fourth set
    # F39-d2): in __post_init__ (the generated __init__ calls it), records in a module-level tuple
    # (by keyword), one bound to a name (positional), a frozen record setting its field by object.__setattr__
    "post_init_of_records_in_a_tuple": (POST_INIT.format(frozen="", put="self.factory = ATTENTION_BACKENDS[self.upstream]")
                                        + "RECORDS = (Delegate('mine', upstream='dual'), Delegate('other', 'torch_native'))\n", True),
    "post_init_of_a_named_record": (POST_INIT.format(frozen="", put="self.factory = ATTENTION_BACKENDS[self.upstream]")
                                    + "MINE = Delegate('mine', 'dual')\n", True),
    "post_init_of_a_frozen_record": (POST_INIT.format(frozen="frozen=True", put="object.__setattr__(self, 'factory', ATTENTION_BACKENDS[self.upstream])")
                                     + "RECORDS = [Delegate(name='mine', upstream='dual')]\n", True),
    "post_init_of_a_record_never_made": (POST_INIT.format(frozen="", put="self.factory = ATTENTION_BACKENDS[self.upstream]"), None),
    "own_decorator_then_read": (HEAD + '@register_attention_backend("dual")\ndef create(runner):\n    return None\n\n\n'
                                '_mine = ATTENTION_BACKENDS["dual"]\n\n\ndef register():\n    return _mine\n', None),
    # a `.get` whose None the plugin raises on (twenty-ninth set F39-i2): the read fails as `[key]`
    # does -- in a helper keyed by its parameter, with `not`, through a caller's caller; the same
    # test returning instead copes (get_bound_then_none_test above)
    "get_none_raises_in_a_helper": (HEAD + "class Missing(LookupError):\n    pass\n\n\ndef _require(name):\n"
                                    "    factory = ATTENTION_BACKENDS.get(name)\n    if factory is None:\n"
                                    "        raise Missing(name)\n    return factory\n\n\ndef register():\n    _require('dual')\n", True),
    "get_not_raises": (HEAD + "def register():\n    factory = ATTENTION_BACKENDS.get('dual')\n    if not factory:\n"
                       "        raise RuntimeError('no dual backend')\n    return factory\n", True),
    "get_none_raises_through_callers": (HEAD + "def _require(name):\n    factory = ATTENTION_BACKENDS.get(name)\n"
                                        "    if factory == None:  # noqa: E711\n        log = 'missing'\n        raise KeyError(log)\n"
                                        "    return factory\n\n\ndef _device(own, upstream):\n    return _require(upstream)\n\n\n"
                                        "def register():\n    _device('mine', 'dual')\n", True),
    # the subscript written as a call (twenty-ninth set F39-i1): `REG.__getitem__` handed to map,
    # called directly, operator.getitem
    "getitem_through_map": (HEAD + "KEYS = ('torch_native', 'dual')\n\n\ndef register():\n"
                            "    for key, factory in zip(KEYS, map(ATTENTION_BACKENDS.__getitem__, KEYS)):\n        factory(None)\n", True),
    "getitem_called": (use("ATTENTION_BACKENDS.__getitem__('dual')"), True),
    "operator_getitem": (HEAD + "import operator\n\n\ndef register():\n    return operator.getitem(ATTENTION_BACKENDS, 'dual')\n", True),
}


@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
def test_a_dropped_key_is_found_however_it_is_read(upstreams, tmp_path, spelling):
    old, new = upstreams
    source, breaks = SPELLINGS[spelling]
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"p": "p.hooks:register"}), "p/__init__.py": "", "p/hooks.py": source})
    code, doc = check(root, old)  # a key that resolves is counted, not listed
    assert by_target(doc["findings"]).get(KEY, {"status": "ok"})["status"] == "ok" and code == 0
    code, doc = check(root, new)
    if breaks is None:  # the plugin puts the key in itself
        key = by_target(doc["findings"]).get(KEY, {"status": "ok"})
        assert key["status"] == "ok" and code == 0, key
        return
    key = by_target(doc["findings"])[KEY]
    assert (key["status"], key["breaking"]) == ("missing", breaks), key
    assert code == (1 if breaks else 0)


GUARDS = {
    "in": 'if "dual" in ATTENTION_BACKENDS:\n        factory = ATTENTION_BACKENDS["dual"]',
    "not_in_exit": 'if "dual" not in ATTENTION_BACKENDS:\n        return\n    factory = ATTENTION_BACKENDS["dual"]',
    "get_test": 'if ATTENTION_BACKENDS.get("dual") is not None:\n        factory = ATTENTION_BACKENDS["dual"]',
}


@pytest.mark.parametrize("guard", sorted(GUARDS))
def test_a_test_for_the_key_guards_the_read(upstreams, tmp_path, guard):
    _, new = upstreams
    source = HEAD + f"def register():\n    factory = None\n    {GUARDS[guard]}\n    return factory\n"
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"p": "p.hooks:register"}), "p/__init__.py": "", "p/hooks.py": source})
    code, doc = check(root, new)
    reads = [f for f in doc["findings"] if f["target"] == KEY and f["guard"]]  # the read under the test
    assert reads and all(f["status"] == "missing" and f["guard"]["outcome"] == "skipped" and not f["breaking"] for f in reads), reads
    assert code == 0


# a member of an upstream enum looked up by its name (F39 variant v1, vLLM's
# AttentionBackendEnum["TREE_ATTN"]): by subscript, by a constant key, by attribute, by getattr
ENUM = "sglang/srt/layers/attention/backend_enum.py"
ENUM_READS = {
    "subscript": 'Backend["TREE"]',
    "subscript_constant": "Backend[NAME]",
    "attribute": "Backend.TREE",
    "getattr": 'getattr(Backend, "TREE")',
}


@pytest.mark.parametrize("spelling", sorted(ENUM_READS))
def test_an_enum_member_looked_up_by_name_is_judged_like_the_attribute(tmp_path_factory, tmp_path, spelling):
    members = "import enum\n\n\nclass Backend(enum.Enum):\n    FLASH = 'flash'\n"
    old, new = upstream_pair(tmp_path_factory, old={ENUM: members + "    TREE = 'tree'\n"}, new={ENUM: members})
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"p": "p:register"}),
        "p/__init__.py": (f"from sglang.srt.layers.attention.backend_enum import Backend\n\nNAME = 'TREE'\n\n\n"
                          f"def register():\n    return {ENUM_READS[spelling]}.value\n"),
    })
    code, doc = check(root, old)
    assert code == 0 and not [f for f in doc["findings"] if f["breaking"]], doc["findings"]
    code, doc = check(root, new)
    gone = [f for f in doc["findings"] if f["breaking"] and "TREE" in (f["target"] or "")]
    assert gone and gone[0]["status"] == "missing" and code == 1, doc["findings"]


# a key handed to an upstream lookup function that raises for a name its registry lacks (F39
# variant u1, vLLM's get_quantization_config): the list of names from a Literal's values, which
# a registration decorator extends
METHODS_FILE = "sglang/srt/layers/quantization/methods.py"
METHODS = ('from typing import Literal, get_args\n\nMethods = Literal["fp8", {extra}]\nMETHODS: list[str] = list(get_args(Methods))\n\n\n'
           "def register_method(name):\n    def wrap(cls):\n        if name not in METHODS:\n            METHODS.append(name)\n        return cls\n\n    return wrap\n\n\n"
           'def get_method(name):\n    """The config class of a method."""\n    if name not in METHODS:\n        raise ValueError(f"Invalid method: {{name}}")\n    return name\n')
LOOKUPS = {
    "positional": ('get_method("gguf")', True),
    "keyword": ('get_method(name="gguf")', True),
    "module_constant": ("get_method(KEY)", True),
    "registered_by_the_plugin_first": ('register_method("gguf")(object)\n    return get_method("gguf")', False),
    "a_key_it_has": ('get_method("fp8")', False),
}


@pytest.mark.parametrize("spelling", sorted(LOOKUPS))
def test_a_key_handed_to_a_lookup_function_is_a_read_of_its_registry(tmp_path_factory, tmp_path, spelling):
    old, new = upstream_pair(tmp_path_factory, old={METHODS_FILE: METHODS.format(extra='"gguf"')}, new={METHODS_FILE: METHODS.format(extra='"awq"')})
    read, breaks = LOOKUPS[spelling]
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"p": "p:register"}),
        "p/__init__.py": ("from sglang.srt.layers.quantization.methods import get_method, register_method\n\nKEY = 'gguf'\n\n\n"
                          f"def register():\n    return {read}\n"),
    })
    code, doc = check(root, old)
    assert code == 0 and not [f for f in doc["findings"] if f["breaking"]], doc["findings"]
    code, doc = check(root, new)
    found = [f for f in doc["findings"] if f["target"].endswith("get_method") and f["status"] != "ok"]
    if breaks:
        assert found and found[0]["status"] == "missing" and found[0]["breaking"] and "'gguf'" in found[0]["detail"] and code == 1, doc["findings"]
    else:
        assert not found and code == 0, doc["findings"]


# a registry filled by methods of its module's classes (F39 variant t1, vLLM's op_registry filled
# by `@CustomOp.register("k")` / `@PluggableLayer.register("k")`): a classmethod decorator
# factory, the same called by hand, a staticmethod taking the key; each release module that
# makes such a call puts its key in
OPS_FILE = "sglang/srt/layers/custom_op.py"
OPS = ("op_registry = {}\n\n\nclass CustomOp:\n    @classmethod\n    def register(cls, name):\n        def decorator(op_cls):\n"
       "            op_registry[name] = op_cls\n            return op_cls\n\n        return decorator\n\n\n"
       "class Layers:\n    @staticmethod\n    def add(name, layer_cls):\n        op_registry[name] = layer_cls\n")
REGISTRATIONS = {
    "classmethod_decorator": "from sglang.srt.layers.custom_op import CustomOp\n\n\n@CustomOp.register({key!r})\nclass Op(CustomOp):\n    pass\n",
    "classmethod_called": "from sglang.srt.layers import custom_op\n\n\nclass Op:\n    pass\n\n\ncustom_op.CustomOp.register({key!r})(Op)\n",
    "staticmethod_call": "from sglang.srt.layers.custom_op import Layers\n\n\nclass Op:\n    pass\n\n\nLayers.add({key!r}, Op)\n",
}


@pytest.mark.parametrize("spelling", sorted(REGISTRATIONS))
def test_keys_put_in_by_methods_of_the_registrys_module_are_known(tmp_path_factory, tmp_path, spelling):
    made = REGISTRATIONS[spelling]
    old, new = upstream_pair(tmp_path_factory, old={OPS_FILE: OPS, "sglang/srt/layers/silu.py": made.format(key="silu")},
                             new={OPS_FILE: OPS, "sglang/srt/layers/silu.py": made.format(key="silu_and_mul")})
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"p": "p:register"}),
        "p/__init__.py": "def register():\n    from sglang.srt.layers.custom_op import op_registry\n\n    return op_registry['silu']\n",
    })
    code, doc = check(root, old)
    assert code == 0 and not [f for f in doc["findings"] if f["status"] != "ok"], doc["findings"]
    code, doc = check(root, new)
    key = by_target(doc["findings"])["sglang.srt.layers.custom_op.op_registry['silu']"]
    assert (key["status"], key["breaking"]) == ("missing", True) and "silu_and_mul" in key["detail"], key
    assert code == 1



# the plugin's own registration of the key counts only where it runs: in a module nothing imports
# it never does (set 22 F39-d1) -- a decorator, a hand-applied registrar, an item put; imported, it does
OWN_PUTS = {
    "decorator": '@register_attention_backend("dual")\ndef create(runner):\n    return None\n',
    "registrar_call": 'def create(runner):\n    return None\n\n\nregister_attention_backend("dual")(create)\n',
    "item_put": 'ATTENTION_BACKENDS["dual"] = lambda runner: None\n',
}


@pytest.mark.parametrize("imported", [False, True], ids=["dead", "imported"])
@pytest.mark.parametrize("spelling", sorted(OWN_PUTS))
def test_a_registration_in_a_module_nothing_imports_puts_no_key(upstreams, tmp_path, spelling, imported):
    _, new = upstreams
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"p": "p.hooks:register"}), "p/__init__.py": "",
        "p/backfill.py": HEAD + OWN_PUTS[spelling],
        "p/hooks.py": (("from p import backfill  # noqa: F401\n" if imported else "") + HEAD
                       + 'def register():\n    return ATTENTION_BACKENDS["dual"]\n'),
    }, name=f"{spelling}-{imported}")
    code, doc = check(root, new)
    key = by_target(doc["findings"]).get(KEY, {"status": "ok", "breaking": False})
    assert (key["status"], key["breaking"], code) == (("ok", False, 0) if imported else ("missing", True, 1)), key
