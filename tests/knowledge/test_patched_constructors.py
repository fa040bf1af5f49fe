"""Rules the held-out vLLM-kind variants of 2026-12-04 asked for, each over three spellings:

1. A plugin that puts its own `__init__` on an upstream class (assignment, setattr, a decorator
   factory that calls setattr) makes every later call of that class run it: a call passing what
   only the plugin's `__init__` takes binds (the issue's "calls judged against upstream's
   constructor although the plugin replaced that `__init__`").
2. `super(ThisClass, self).m(…)` is `super().m(…)`; a `self.<flag>` that `__init__` sets from its
   parameters is run-time data, so a call under `if n == 0 or not self.flag:` that cannot bind
   breaks with the condition named (runtime), not undecided.
3. A module-level registry filled entry by entry (`REG["k"] = v`, `.update`, `.append`) folds to
   what those statements leave: a loop over it that patches upstream is read per entry.

Fixture upstreams (tests/knowledge/kinds_support.py plus the modules below), not a real release."""

from __future__ import annotations

import pytest
from kinds_support import check, plugin, pyproject, upstream_pair

QUEUE = "sglang.srt.managers.queue"


@pytest.fixture(scope="module")
def upstreams(tmp_path_factory):
    extra = {
        "sglang/srt/managers/queue.py": """
            class MessageQueue:
                def __init__(self, n_reader, n_local_reader, connect_ip=None):
                    self.n_reader = n_reader


            class Communicator:
                def __init__(self, group, unique_name=""):
                    self.group = group

                def all_gather(self, input_, dim=-1):
                    return input_
            """,
        "sglang/srt/mem_cache/__init__.py": "",
        "sglang/srt/mem_cache/memory_pool.py": """
            class MHATokenToKVPool:
                def __init__(self, size, dtype, device="cpu"):
                    self.size = size


            class EmptyPool:
                def __init__(self, size=0):
                    self.size = size
            """,
        "sglang/srt/mem_cache/configurator.py": """
            from sglang.srt.platforms import current_platform


            def pool_cls():
                return current_platform.get_mha_kv_pool_cls()
            """,
        "sglang/srt/models/tiny.py": """
            from torch import nn


            class TinyAttention(nn.Module):
                def forward(self, positions, hidden_states):
                    return hidden_states


            class TinyLayer(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.self_attn = TinyAttention()

                def forward(self, positions, hidden_states):
                    return self.self_attn(positions=positions, hidden_states=hidden_states)
            """,
    }
    return upstream_pair(tmp_path_factory, old=extra, new=extra)


def one_module(tmp_path, name, source):
    return plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"p": "p.patches:register"}), "p/__init__.py": "", "p/patches.py": source}, name=name)


# --- 1. a patched __init__ is what later calls of the class run --------------------------

INIT = ("from sglang.srt.managers.queue import MessageQueue\n\n_orig = MessageQueue.__init__\n\n\n"
        "def _init(self, n_reader, n_local_reader, connect_ip=None, use_pinned_ring=False):\n"
        "    _orig(self, n_reader, n_local_reader, connect_ip)\n\n\n")
SUBCLASS_HOOK = ("from sglang.srt.managers.queue import MessageQueue\n\n\nclass InitPatch:\n"
                 "    def __init_subclass__(cls, {params}, **kwargs):\n        super().__init_subclass__(**kwargs)\n"
                 "        cls.original_init = replaces.__init__\n        {put}\n\n\n"
                 "class _Init(InitPatch{keyword}):\n"
                 "    def __init__(self, n_reader, n_local_reader, connect_ip=None, use_pinned_ring=False):\n"
                 "        _Init.original_init(self, n_reader, n_local_reader, connect_ip)\n\n\n"
                 "def register():\n    return MessageQueue(1, 1, use_pinned_ring=True)\n")
PATCHED_INITS = {
    "assignment": INIT + "MessageQueue.__init__ = _init\n\n\ndef register():\n    return MessageQueue(1, 1, use_pinned_ring=True)\n",
    "setattr_in_register": INIT + "def register():\n    setattr(MessageQueue, '__init__', _init)\n    return MessageQueue(1, 1, use_pinned_ring=True)\n",
    "decorator_factory": ("from sglang.srt.managers.queue import MessageQueue\n\n_orig = MessageQueue.__init__\n\n\n"
                          "def replaces(owner, name):\n    def deco(fn):\n        setattr(owner, name, fn)\n        return fn\n    return deco\n\n\n"
                          "@replaces(MessageQueue, '__init__')\n"
                          "def _init(self, n_reader, n_local_reader, connect_ip=None, use_pinned_ring=False):\n"
                          "    _orig(self, n_reader, n_local_reader, connect_ip)\n\n\n"
                          "def register():\n    return MessageQueue(1, 1, use_pinned_ring=True)\n"),
    # an attribute assignment on a helper's parameter (V variant r7): each call's class is patched
    "helper_parameter_assignment": INIT + "def put_init(cls):\n    cls.__init__ = _init\n    return cls\n\n\n"
                                          "def register():\n    put_init(MessageQueue)\n    return MessageQueue(1, 1, use_pinned_ring=True)\n",
    "helper_two_parameters": INIT + "def put(cls, fn):\n    cls.__init__ = fn\n\n\n"
                                    "def register():\n    put(MessageQueue, fn=_init)\n    return MessageQueue(1, 1, use_pinned_ring=True)\n",
    "decorator_factory_assignment": ("from sglang.srt.managers.queue import MessageQueue\n\n_orig = MessageQueue.__init__\n\n\n"
                                     "def replaces_init(owner):\n    def deco(fn):\n        owner.__init__ = fn\n        return fn\n    return deco\n\n\n"
                                     "@replaces_init(MessageQueue)\n"
                                     "def _init(self, n_reader, n_local_reader, connect_ip=None, use_pinned_ring=False):\n"
                                     "    _orig(self, n_reader, n_local_reader, connect_ip)\n\n\n"
                                     "def register():\n    return MessageQueue(1, 1, use_pinned_ring=True)\n"),
    # put by a plugin base's __init_subclass__, the class named by the class statement's keyword
    # (twenty-fourth set V-d2): by assignment, by setattr, by the hook's default
    "init_subclass_keyword": SUBCLASS_HOOK.format(params="*, replaces", put="replaces.__init__ = cls.__init__", keyword=", replaces=MessageQueue"),
    "init_subclass_setattr": SUBCLASS_HOOK.format(params="replaces=None", put="setattr(replaces, '__init__', cls.__init__)", keyword=", replaces=MessageQueue"),
    "init_subclass_default": SUBCLASS_HOOK.format(params="replaces=MessageQueue", put="replaces.__init__ = cls.__init__", keyword=""),
}


@pytest.mark.parametrize("spelling", sorted(PATCHED_INITS))
def test_a_call_binds_the_init_the_plugin_put_on_the_class(upstreams, tmp_path, spelling):
    old, _ = upstreams
    code, doc = check(one_module(tmp_path, spelling, PATCHED_INITS[spelling]), old)
    # a call that binds is counted, not listed
    assert not [f for f in doc["findings"] if f["breaking"]], doc["findings"]
    assert code == 0
    # without the patch the same call passes a keyword upstream's __init__ does not take
    source = PATCHED_INITS[spelling].replace("MessageQueue.__init__ = _init\n", "").replace("setattr(MessageQueue, '__init__', _init)\n    ", "")
    source = source.replace("@replaces(MessageQueue, '__init__')\n", "").replace("@replaces_init(MessageQueue)\n", "")
    source = source.replace("    put_init(MessageQueue)\n", "").replace("    put(MessageQueue, fn=_init)\n", "")
    source = source.replace("class _Init(InitPatch, replaces=MessageQueue):", "class _Init:").replace("class _Init(InitPatch):", "class _Init:")
    code, doc = check(one_module(tmp_path, spelling + "-unpatched", source), old)
    call = next(f for f in doc["findings"] if f["kind"] == "call" and f["target"] == f"{QUEUE}.MessageQueue")
    assert call["breaking"] and "use_pinned_ring" in call["detail"] and code == 1, call


# put for one block only (thirtieth set V-j2): unittest.mock's patchers entered by `with` or
# decorating a function restore upstream's __init__ when it ends (the unittest.mock docs), so the
# call inside binds the plugin's and the same call after the block meets upstream's
SCOPED_INITS = {
    "with_patch_object": "def register():\n    with patch.object(MessageQueue, '__init__', _init):\n        {inside}\n    {after}\n",
    "with_mock_patch_by_name_as": ("def register():\n    with mock.patch('sglang.srt.managers.queue.MessageQueue.__init__', new=_init) as fake:\n"
                                   "        {inside}\n    {after}\n"),
    "decorated_function": ("@mock.patch.object(MessageQueue, '__init__', new=_init)\ndef _build():\n    {inside}\n\n\n"
                           "def register():\n    _build()\n    {after}\n"),
}


@pytest.mark.parametrize("spelling", sorted(SCOPED_INITS))
def test_an_init_patched_for_a_block_binds_the_calls_inside_it_only(upstreams, tmp_path, spelling):
    old, _ = upstreams
    head = "from unittest import mock\nfrom unittest.mock import patch\n\n" + INIT
    body = SCOPED_INITS[spelling].format(inside="q = MessageQueue(1, 1, use_pinned_ring=True)", after="return MessageQueue(2, 2, use_pinned_ring=True)")
    source = head + body
    code, doc = check(one_module(tmp_path, spelling, source), old)
    lines = source.splitlines()
    calls = [f for f in doc["findings"] if f["kind"] == "call" and f["target"] == f"{QUEUE}.MessageQueue" and f["breaking"]]
    assert [lines[f["line"] - 1].strip() for f in calls] == ["return MessageQueue(2, 2, use_pinned_ring=True)"] and code == 1, calls


def test_an_init_patched_by_a_started_patcher_stays_in_place(upstreams, tmp_path):
    old, _ = upstreams
    source = ("from unittest.mock import patch\n\n" + INIT + "def register():\n    patch.object(MessageQueue, '__init__', _init).start()\n"
              "    return MessageQueue(2, 2, use_pinned_ring=True)\n")
    code, doc = check(one_module(tmp_path, "started", source), old)
    assert not [f for f in doc["findings"] if f["breaking"]] and code == 0, doc["findings"]


# the converse (V variants p4, o4): upstream's __init__ takes the call, the plugin's does not; a call made at run
# time runs the plugin's and fails -- put by assignment, by setattr inside a callable instance's once-guard, or
# through functools.update_wrapper; a call through a name bound before the patch keeps upstream's
NARROW = ("from sglang.srt.managers.queue import MessageQueue\n\n_orig = MessageQueue.__init__\n\n\n"
          "def _init(self, n_reader, n_local_reader):\n    _orig(self, n_reader, n_local_reader, None)\n\n\n")
USE = "def make():\n    return MessageQueue(1, 1, connect_ip='10.0.0.1')\n"
NARROWED_INITS = {
    "assignment": (NARROW + "MessageQueue.__init__ = _init\n\n\n" + USE + "\n\ndef register():\n    return make\n", True),
    "callable_instance_once": (NARROW + "class _Install:\n    done = False\n\n    def __call__(self):\n        if not self.done:\n"
                               "            setattr(MessageQueue, '__init__', _init)\n            self.done = True\n\n\n"
                               "_INSTALL = _Install()\n\n\n" + USE + "\n\ndef register():\n    _INSTALL()\n    return make\n", True),
    "update_wrapper": (NARROW + "import functools\n\nMessageQueue.__init__ = functools.update_wrapper(_init, _orig)\n\n\n"
                       + USE + "\n\ndef register():\n    return make\n", True),
    "saved_original_called": (NARROW + "MessageQueue.__init__ = _init\n\n\n"
                              "def make():\n    q = object.__new__(MessageQueue)\n    _orig(q, 1, 1, connect_ip='10.0.0.1')\n    return q\n"
                              "\n\ndef register():\n    return make\n", False),
}


@pytest.mark.parametrize("spelling", sorted(NARROWED_INITS))
def test_a_call_upstream_takes_fails_on_the_narrower_init_the_plugin_put(upstreams, tmp_path, spelling):
    old, _ = upstreams
    source, breaks = NARROWED_INITS[spelling]
    code, doc = check(one_module(tmp_path, spelling, source), old)
    calls = [f for f in doc["findings"] if f["kind"] == "call" and f["breaking"]]
    if breaks:
        assert len(calls) == 1 and "p.patches._init" in calls[0]["detail"] and "connect_ip" in calls[0]["detail"], doc["findings"]
        assert code == 1
    else:
        assert not calls and code == 0, doc["findings"]


# --- 2. super(C, self) and flags __init__ sets from its parameters --------------------------

COMMUNICATOR = ("from sglang.srt.managers.queue import Communicator\n\n\n"
                "class DevCommunicator(Communicator):\n"
                "    def __init__(self, group, unique_name=''):\n        super().__init__(group, unique_name)\n        self.fast = {flag}\n\n"
                "    def all_gather(self, input_, dim=-1):\n        n = len(input_)\n        if n == 0 or not self.fast:\n"
                "            return {call}.all_gather(input_, dim, 8)\n        return input_\n\n\n"
                "def register():\n    return DevCommunicator\n")
SUPER_CALLS = {
    "bare_super_flag_from_startswith": ("unique_name.startswith('tp')", "super()"),
    "two_argument_super_flag_from_compare": ("unique_name == 'tp'", "super(DevCommunicator, self)"),
    "two_argument_super_flag_from_parameter": ("bool(group)", "super(DevCommunicator, self)"),
}


@pytest.mark.parametrize("spelling", sorted(SUPER_CALLS))
def test_a_super_call_under_a_flag_of_the_constructors_arguments_breaks_at_run_time(upstreams, tmp_path, spelling):
    old, _ = upstreams
    flag, call = SUPER_CALLS[spelling]
    code, doc = check(one_module(tmp_path, spelling, COMMUNICATOR.format(flag=flag, call=call)), old)
    found = [f for f in doc["findings"] if f["kind"] == "subclass" and f["target"].endswith(".all_gather") and f["status"] == "signature_changed"]
    assert len(found) == 1 and found[0]["breaking"], doc["findings"]
    assert found[0]["guard"]["outcome"] == "runtime" and "self.fast" in found[0]["guard"]["condition"]
    assert code == 1


# the arguments packed in a local first, or the super() method kept in a local (V variants p9, p10): the same call
PACKED = ("from sglang.srt.managers.queue import Communicator\n\n\n"
          "class DevCommunicator(Communicator):\n"
          "    def all_gather(self, input_, dim=-1):\n        n = len(input_)\n        if n == 0:\n{body}\n        return input_\n\n\n"
          "def register():\n    return DevCommunicator\n")
PACKED_CALLS = {
    "tuple_starred": ("            args = (input_, dim, 8)\n            return super().all_gather(*args)", True),
    "list_starred_two_argument_super": ("            args = [input_, dim, 8]\n            return super(DevCommunicator, self).all_gather(*args)", True),
    "bound_super_method": ("            gather = super().all_gather\n            return gather(input_, dim, 8)", True),
    "bound_super_method_fits": ("            gather = super().all_gather\n            return gather(input_, dim)", False),
    # a list grown before the call: its length is not the display's
    "list_grown_before_the_call": ("            args = [input_]\n            args.append(dim)\n            return super().all_gather(*args)", False),
}


@pytest.mark.parametrize("spelling", sorted(PACKED_CALLS))
def test_a_super_call_through_packed_arguments_or_a_saved_method_is_judged(upstreams, tmp_path, spelling):
    old, _ = upstreams
    body, breaks = PACKED_CALLS[spelling]
    code, doc = check(one_module(tmp_path, spelling, PACKED.format(body=body)), old)
    found = [f for f in doc["findings"] if f["kind"] == "subclass" and f["target"].endswith(".all_gather") and f["breaking"]]
    assert bool(found) is breaks and code == (1 if breaks else 0), doc["findings"]
    if breaks:
        assert found[0]["guard"]["outcome"] == "runtime" and "n == 0" in found[0]["guard"]["condition"], found[0]


# a forward put on an upstream layer as a functools.partialmethod (V variant p7): self, then what the partial leaves;
# TinyLayer calls self.self_attn(positions=…, hidden_states=…) through nn.Module.__call__
FORWARD = "def _forward(self, positions, {second}, fused=False):\n    return positions\n\n\n"
PARTIAL_METHODS = {
    "assignment": ("import functools\n\nfrom sglang.srt.models import tiny\n\n\n" + FORWARD
                   + "def register():\n    tiny.TinyAttention.forward = functools.partialmethod(_forward, fused=True)\n"),
    "setattr_alias": ("from functools import partialmethod as pm\n\nfrom sglang.srt.models.tiny import TinyAttention\n\n\n" + FORWARD
                      + "def register():\n    setattr(TinyAttention, 'forward', pm(_forward, fused=True))\n"),
    "module_level_assignment": ("import functools\n\nimport sglang.srt.models.tiny as tiny\n\n\n" + FORWARD
                                + "tiny.TinyAttention.forward = functools.partialmethod(_forward, fused=True)\n\n\ndef register():\n    pass\n"),
}


@pytest.mark.parametrize("fits", [False, True], ids=["lacks_hidden_states", "takes_hidden_states"])
@pytest.mark.parametrize("spelling", sorted(PARTIAL_METHODS))
def test_a_partialmethod_put_on_a_layer_is_judged_against_the_calls_through_module_call(upstreams, tmp_path, spelling, fits):
    old, _ = upstreams
    source = PARTIAL_METHODS[spelling].format(second="hidden_states" if fits else "x")
    code, doc = check(one_module(tmp_path, f"{spelling}-{fits}", source), old)
    patch = next(f for f in doc["findings"] if f["kind"] == "patch" and f["target"].endswith("TinyAttention.forward"))
    assert patch["breaking"] is not fits and code == (0 if fits else 1), patch


# a platform method overridden by a @property returning a class (F10 variant q2): upstream's
# `current_platform.get_mha_kv_pool_cls()` calls the class, binding its __init__
PROPERTY_OVERRIDES = {
    "property_plugin_subclass": ("class DevPool(MHATokenToKVPool):\n    pass\n\n\n", "@property", "DevPool", True),
    "cached_property_upstream_class": ("", "@functools.cached_property", "MHATokenToKVPool", True),
    "property_own_init_with_defaults_fits": ("class DevPool(MHATokenToKVPool):\n    def __init__(self, size=4096, dtype=None):\n"
                                             "        super().__init__(size, dtype)\n\n\n", "@property", "DevPool", False),
    "property_class_taking_nothing_fits": ("", "@property", "EmptyPool", False),
    "plain_method_returning_the_class_fits": ("class DevPool(MHATokenToKVPool):\n    pass\n\n\n", "", "DevPool", False),
}


@pytest.mark.parametrize("spelling", sorted(PROPERTY_OVERRIDES))
def test_a_property_override_is_called_as_what_it_returns(upstreams, tmp_path, spelling):
    old, _ = upstreams
    pools, decorator, returned, breaks = PROPERTY_OVERRIDES[spelling]
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(platforms={"dev": "dev:activate"}),
        "dev/__init__.py": "def activate():\n    return 'dev.platform.DevPlatform'\n",
        "dev/platform.py": ("import functools\n\nfrom sglang.srt.mem_cache.memory_pool import EmptyPool, MHATokenToKVPool\n"
                            "from sglang.srt.platforms.interface import SRTPlatform\n\n\n" + pools + "class DevPlatform(SRTPlatform):\n"
                            f"    {decorator}\n    def get_mha_kv_pool_cls(self):\n        return {returned}\n"),
    }, name=spelling)
    code, doc = check(root, old)
    found = [f for f in doc["findings"] if f["target"].endswith(".get_mha_kv_pool_cls") and f["breaking"]]
    assert bool(found) is breaks and code == (1 if breaks else 0), doc["findings"]
    if breaks:
        assert returned in found[0]["detail"] and "size" in found[0]["detail"], found[0]


# --- 3. a registry filled entry by entry -------------------------------------------------

DEV_ATTENTION = ("from sglang.srt.models import tiny as _tiny\n\n\n"
                 "class DevAttention(_tiny.TinyAttention):\n    def forward(self, positions, x):\n        return x\n\n\n")
REGISTRIES = {
    "item_assignment": DEV_ATTENTION + "_PATCHES = {}\n_PATCHES['TinyAttention'] = DevAttention\n\n\n"
                       "def register():\n    for name, cls in _PATCHES.items():\n        setattr(_tiny, name, cls)\n",
    "update": DEV_ATTENTION + "_PATCHES = {}\n_PATCHES.update({'TinyAttention': DevAttention})\n\n\n"
              "def register():\n    for name in _PATCHES:\n        setattr(_tiny, name, _PATCHES[name])\n",
    "append_pairs": DEV_ATTENTION + "_PATCHES = []\n_PATCHES.append(('TinyAttention', DevAttention))\n\n\n"
                    "def register():\n    for name, cls in _PATCHES:\n        setattr(_tiny, name, cls)\n",
    # filled in a function, an entry added only under a run-time test (vllm-ascend utils.py's
    # REGISTERED_ASCEND_OPS): the loop may meet it, and meets the others whatever the test
    "conditional_in_function": DEV_ATTENTION + "import os\n\nREG = {}\n\n\n"
                               "def register():\n    global REG\n    REG = {'Other': None}\n"
                               "    if os.environ.get('DEV_FUSED'):\n        REG['TinyAttention'] = DevAttention\n"
                               "    del REG['Other']\n    for name, cls in REG.items():\n        setattr(_tiny, name, cls)\n",
}


@pytest.mark.parametrize("spelling", sorted(REGISTRIES))
def test_a_loop_over_a_registry_filled_entry_by_entry_patches_each_entry(upstreams, tmp_path, spelling):
    old, _ = upstreams
    code, doc = check(one_module(tmp_path, spelling, REGISTRIES[spelling]), old)
    patches = [f for f in doc["findings"] if f["kind"] == "patch"]
    assert [f["target"] for f in patches] == ["sglang.srt.models.tiny.TinyAttention"], doc["findings"]
    # TinyLayer calls self.self_attn(positions=…, hidden_states=…): the plugin's forward lacks hidden_states
    forward = [f for f in doc["findings"] if f["target"].endswith("TinyAttention.forward")]
    assert forward and forward[0]["breaking"], doc["findings"]
    assert code == 1


# --- 4. an upstream class handed to a helper that calls it (twenty-fourth set F19-d2) ------------
# `def make(cls, **fields): return cls(**fields)`: the call of what each caller hands in, with
# what that caller passes: gathered keywords, gathered positionals, the helper's own keyword.

HANDED = {
    "gathered_keywords": ("def _make(queue_cls, **fields):\n    return queue_cls(**fields)\n\n\n",
                          "_make(MessageQueue, n_reader=1, n_local_reader=1, connect_ip=None)",
                          "_make(MessageQueue, n_reader=1, n_local_reader=1, ring_bytes=4096)"),
    "gathered_positionals": ("def _make(queue_cls, *args):\n    return queue_cls(*args)\n\n\n",
                             "_make(MessageQueue, 1, 1, '10.0.0.1')", "_make(MessageQueue, 1, 1, '10.0.0.1', 4096)"),
    "the_helpers_own_keyword": ("def _make(factory, n):\n    return factory(n, n, connect_ip=None)\n\n\n"
                                "def _make_pinned(factory, n):\n    return factory(n, n, pinned=True)\n\n\n",
                                "_make(MessageQueue, 2)", "_make_pinned(MessageQueue, 2)"),
}


@pytest.mark.parametrize("spelling", sorted(HANDED))
def test_an_upstream_class_a_helper_calls_is_judged_per_caller(upstreams, tmp_path, spelling):
    old, _ = upstreams
    helper, fits, fails = HANDED[spelling]
    head = "from sglang.srt.managers.queue import MessageQueue\n\n\n" + helper
    code, doc = check(one_module(tmp_path, spelling, head + f"def register():\n    return {fits}\n"), old)
    assert not [f for f in doc["findings"] if f["breaking"]] and code == 0, doc["findings"]
    code, doc = check(one_module(tmp_path, spelling + "-fails", head + f"def register():\n    return {fits}, {fails}\n"), old)
    calls = [f for f in doc["findings"] if f["kind"] == "call" and f["target"] == f"{QUEUE}.MessageQueue"]
    assert len(calls) == 1 and calls[0]["breaking"] and code == 1, calls


def test_a_plugin_class_handed_to_the_same_helper_is_the_plugins(upstreams, tmp_path):
    old, _ = upstreams
    source = ("from sglang.srt.managers.queue import MessageQueue\n\n\nclass Mine:\n    def __init__(self, **fields):\n        self.fields = fields\n\n\n"
              + HANDED["gathered_keywords"][0] + "def register():\n    return _make(Mine, anything=1), MessageQueue\n")
    code, doc = check(one_module(tmp_path, "plugin-class", source), old)
    assert not [f for f in doc["findings"] if f["kind"] == "call"] and code == 0, doc["findings"]


# a plugin subclass calling the replaced __init__ through super() (twenty-eighth set V-h2): the
# lookup happens when the call runs, after the patch, so it binds the plugin's __init__
SUPER_OF_PATCHED = {
    "super_call": "        super().__init__(1, 1, use_pinned_ring=True)\n",
    "super_of_the_class": "        super(DevQueue, self).__init__(n_reader=1, n_local_reader=1, use_pinned_ring=True)\n",
    "super_kept_in_a_local": "        init = super().__init__\n        init(1, 1, use_pinned_ring=True)\n",
}


@pytest.mark.parametrize("patched", [True, False])
@pytest.mark.parametrize("spelling", sorted(SUPER_OF_PATCHED))
def test_a_super_call_of_an_init_the_plugin_replaced_binds_the_replacement(upstreams, tmp_path, spelling, patched):
    old, _ = upstreams
    source = (INIT + ("MessageQueue.__init__ = _init\n\n\n" if patched else "") + "class DevQueue(MessageQueue):\n    def __init__(self):\n"
              + SUPER_OF_PATCHED[spelling] + "\n\ndef register():\n    return DevQueue()\n")
    code, doc = check(one_module(tmp_path, f"{spelling}-{patched}", source), old)
    breaking = [f for f in doc["findings"] if f["breaking"]]
    if patched:
        assert not breaking and code == 0, doc["findings"]
    else:
        assert breaking and "use_pinned_ring" in breaking[0]["detail"] and code == 1, doc["findings"]


# unittest.mock.patch.multiple(owner, a=f, b=g) patches each keyword on owner (thirty-first set
# F05-k1): a patcher made at module level and started, entered by `with` (for its block only),
# the owner named by a string; its options (create=, spec=) are no attributes
MULTIPLE = {
    "started_at_module_level": ("_P = mock.patch.multiple(MessageQueue, __init__=_init, flush=_flush)\n\n\n"
                                "def register():\n    _P.start()\n    return MessageQueue(1, 1, use_pinned_ring=True)\n"),
    "entered_by_with": ("def register():\n    with mock.patch.multiple(MessageQueue, __init__=_init, flush=_flush):\n"
                        "        return MessageQueue(1, 1, use_pinned_ring=True)\n"),
    "owner_by_name": ("def register():\n    mock.patch.multiple('sglang.srt.managers.queue.MessageQueue', create=False, __init__=_init, flush=_flush).start()\n"
                      "    return MessageQueue(1, 1, use_pinned_ring=True)\n"),
}


@pytest.mark.parametrize("spelling", sorted(MULTIPLE))
def test_patch_multiple_patches_each_keyword(upstreams, tmp_path, spelling):
    old, _ = upstreams
    source = "from unittest import mock\n\n" + INIT + "def _flush(self):\n    return None\n\n\n" + MULTIPLE[spelling]
    code, doc = check(one_module(tmp_path, spelling, source), old)
    patches = {f["target"].rpartition(".")[2]: f for f in doc["findings"] if f["kind"] == "patch"}
    # the construction binds the plugin's __init__; flush, which MessageQueue lacks, is a patch that fails
    assert not [f for f in doc["findings"] if f["kind"] == "call" and f["breaking"]], doc["findings"]
    assert set(patches) >= {"__init__", "flush"} and patches["flush"]["status"] != "ok" and "create" not in patches, patches
