"""Generated constructors: calling an upstream @dataclass binds to the __init__ the decorator
generates from its fields (inherited dataclass fields first, in MRO order), even when a parent
class writes its own __init__ — the generated one replaces it (issue 18 kind 2)."""

from __future__ import annotations

import pytest
from kinds_support import check, plugin, pyproject, upstream_pair

SPEC = {
    "sglang/srt/speculative/__init__.py": "",
    "sglang/srt/speculative/spec_info.py": """
        from abc import ABC

        class SpecInput(ABC):
            def __init__(self, spec_input_type):
                self.spec_input_type = spec_input_type
        """,
    "sglang/srt/speculative/eagle_info.py": """
        from dataclasses import dataclass
        from typing import Optional

        from sglang.srt.speculative.spec_info import SpecInput

        @dataclass
        class EagleDraftInput(SpecInput):
            topk_p: Optional[int] = None
            topk_index: Optional[int] = None
            hidden_states: Optional[int] = None

        class NgramDraftInput(EagleDraftInput):
            pass

        @dataclass
        class Base:
            a: int
            b: int = 0

        @dataclass(frozen=True)
        class Child(Base):
            c: int = 1
        """,
}


@pytest.fixture(scope="module")
def upstreams(tmp_path_factory):
    return upstream_pair(tmp_path_factory, old=SPEC, new=SPEC)


def test_calls_to_a_dataclass_over_a_written_init_bind_to_its_fields(upstreams, tmp_path):
    old, _ = upstreams
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"spec": "spec:register"}),
        "spec/__init__.py": """
            from sglang.srt.speculative.eagle_info import Child, EagleDraftInput, NgramDraftInput


            def seed(hidden, probs, ids):
                ok = EagleDraftInput(hidden_states=hidden, topk_p=probs, topk_index=ids)
                also = NgramDraftInput(topk_p=probs)
                fields_in_mro_order = Child(1, 2, c=3)
                bad = EagleDraftInput(hidden_state=hidden)
                too_many = Child(1, 2, 3, 4)
                required = Child(b=2)
                return ok, also, fields_in_mro_order, bad, too_many, required


            class MyDraft(EagleDraftInput):
                def __init__(self, hidden):
                    super().__init__(hidden_states=hidden)


            def register():
                pass
            """,
    })
    code, doc = check(root, old)
    calls = {f["line"]: f for f in doc["findings"] if f["kind"] in ("call", "subclass") and f["breaking"]}
    # the field keywords (line 5), a plain subclass (6), fields in MRO order (7) and
    # super().__init__ with a field keyword (16) fit; the typo, one argument too many and a
    # missing required field do not
    assert sorted(calls) == [8, 9, 10], calls
    assert "hidden_state" in calls[8]["detail"] and "synthesised by @dataclass" in calls[8]["detail"]
    assert "passes 4" in calls[9]["detail"] and "'a'" in calls[10]["detail"]
    assert code == 1


# the class or the keywords reached through folded values (twenty-third set F19-c1, F19-c2): a
# table of upstream classes called by key, keywords spread from a plugin NamedTuple's _asdict(),
# from a plugin dataclass's dataclasses.asdict(), from a dict literal kept in a name
SPREADS = {
    "table_of_classes": ("CLASSES = {'draft': EagleDraftInput}\n", "CLASSES['draft'](topk_p=probs)", "CLASSES['draft'](verified_id=probs)"),
    "namedtuple_asdict": ("class Out(NamedTuple):\n    topk_p: int\n\n\nclass OldOut(NamedTuple):\n    verified_id: int\n",
                          "EagleDraftInput(**Out(probs)._asdict())", "EagleDraftInput(**OldOut(probs)._asdict())"),
    "dataclass_asdict": ("@dataclass\nclass Out:\n    topk_p: int = 0\n\n\n@dataclass\nclass OldOut:\n    verified_id: int = 0\n",
                         "EagleDraftInput(**asdict(Out(probs)))", "EagleDraftInput(**asdict(OldOut(probs)))"),
    "keywords_in_a_name": ("", "EagleDraftInput(**{'topk_p': probs})", "EagleDraftInput(**dict(verified_id=probs))"),
    # names zipped with run-time values, strict=True (as many pairs as names, else ValueError:
    # the builtins docs): the keywords are the names (twenty-seventh set F19-g1)
    "zip_strict_in_dict": ("FIELDS = ('topk_p', 'topk_index')\nOLD_FIELDS = ('topk_p', 'verified_id')\n",
                           "EagleDraftInput(**dict(zip(FIELDS, probs, strict=True)))", "EagleDraftInput(**dict(zip(OLD_FIELDS, probs, strict=True)))"),
    # a dict bound once and never edited, spread beside keywords (twenty-eighth set F19-h2)
    "a_dict_bound_once": ("DEFAULTS = dict(topk_index=None)\nOLD = dict(DEFAULTS, verified_id=None)\n",
                          "EagleDraftInput(**DEFAULTS, topk_p=probs)", "EagleDraftInput(**OLD, topk_p=probs)"),
    "zip_strict_in_a_comprehension": ("FIELDS = ['hidden_states']\nOLD_FIELDS = ['verified_id']\n",
                                      "EagleDraftInput(**{k: v for k, v in zip(FIELDS, probs, strict=True)})",
                                      "EagleDraftInput(**{name: value for name, value in zip(OLD_FIELDS, probs, strict=True)})"),
}


def test_names_zipped_without_strict_are_not_taken_as_certain(upstreams, tmp_path):
    """zip(NAMES, values) stops at the shorter: with values of a length only a run gives, the
    keywords passed may be any prefix of NAMES, so a wrong last name is not a certain failure."""
    old, _ = upstreams
    source = ("from sglang.srt.speculative.eagle_info import EagleDraftInput\n\nOLD_FIELDS = ('topk_p', 'verified_id')\n\n\n"
              "def seed(probs):\n    return EagleDraftInput(**dict(zip(OLD_FIELDS, probs)))\n\n\ndef register():\n    pass\n")
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"spec": "spec:register"}), "spec/__init__.py": source})
    code, doc = check(root, old)
    assert not [f for f in doc["findings"] if f["kind"] == "call" and f["breaking"]] and code != 1, doc["findings"]


@pytest.mark.parametrize("spelling", sorted(SPREADS))
def test_a_dataclass_reached_through_folded_values_binds_to_its_fields(upstreams, tmp_path, spelling):
    old, _ = upstreams
    head, fits, breaks = SPREADS[spelling]
    source = ("from dataclasses import asdict, dataclass\nfrom typing import NamedTuple\n\n"
              "from sglang.srt.speculative.eagle_info import EagleDraftInput\n\n" + head + "\n\n"
              f"def seed(probs):\n    ok = {fits}\n    bad = {breaks}\n    return ok, bad\n\n\ndef register():\n    pass\n")
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"spec": "spec:register"}), "spec/__init__.py": source})
    code, doc = check(root, old)
    lines = source.splitlines()
    calls = {f["line"]: f for f in doc["findings"] if f["kind"] == "call" and f["target"].endswith("EagleDraftInput") and f["breaking"]}
    # the fitting call gives no finding; the one passing a field the class no longer has breaks
    assert [lines[line - 1].strip().split(" =")[0] for line in calls] == ["bad"], calls
    assert "verified_id" in next(iter(calls.values()))["detail"]
    assert code == 1


# keywords spread from a namespace object's vars() (thirtieth set F19-j2): what it holds is its
# constructor's keywords and every attribute set on it before the call (SimpleNamespace's
# __dict__, the types docs): set by assignment, by setattr, on one a helper returns, on an
# argparse.Namespace; an attribute set under a run-time test leaves it unknown (no finding)
NAMESPACE_SPREADS = {
    "assigned_after": ("", "    ns = SimpleNamespace(topk_p=probs)\n    ns.topk_index = None\n",
                       "    ns.verified_id = probs\n", "EagleDraftInput(**vars(ns))"),
    "setattr_on_a_helpers_namespace": ("def _state(p):\n    return SimpleNamespace(topk_p=p)\n",
                                       "    ns = _state(probs)\n    setattr(ns, 'hidden_states', probs)\n",
                                       "    setattr(ns, 'verified_id', probs)\n", "EagleDraftInput(**vars(ns))"),
    "argparse_namespace": ("", "    ns = argparse.Namespace(topk_p=probs)\n", "    ns.verified_id = 0\n", "EagleDraftInput(hidden_states=None, **vars(ns))"),
}


@pytest.mark.parametrize("spelling", sorted(NAMESPACE_SPREADS))
@pytest.mark.parametrize("extra", ["none", "always", "under_a_test"])
def test_keywords_spread_from_a_namespace_are_its_attributes_so_far(upstreams, tmp_path, spelling, extra):
    old, _ = upstreams
    head, made, added, call = NAMESPACE_SPREADS[spelling]
    added = {"none": "", "always": added, "under_a_test": "    if probs is not None:\n    " + added.replace("\n    ", "\n        ")}[extra]
    source = ("import argparse\nfrom types import SimpleNamespace\n\nfrom sglang.srt.speculative.eagle_info import EagleDraftInput\n\n"
              + head + "\n\ndef seed(probs):\n" + made + added + f"    return {call}\n\n\ndef register():\n    pass\n")
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"spec": "spec:register"}), "spec/__init__.py": source})
    code, doc = check(root, old)
    calls = [f for f in doc["findings"] if f["kind"] == "call" and f["target"].endswith("EagleDraftInput") and f["breaking"]]
    if extra == "always":
        assert len(calls) == 1 and "verified_id" in calls[0]["detail"] and code == 1, (source, calls)
    else:
        assert not calls and code != 1, (source, calls)


# the class is the object's own (twenty-fifth set F19-e2): `type(state)(…)` / `state.__class__(…)`
# of a parameter annotated with the upstream dataclass, or narrowed to it by isinstance, calls
# that class, bound to its generated __init__
OWN_CLASS = {
    "type_of_annotated": ("state: EagleDraftInput", "", "type(state)"),
    "dunder_class_of_annotated": ("state: EagleDraftInput", "", "state.__class__"),
    "type_of_narrowed": ("state", "    if not isinstance(state, EagleDraftInput):\n        return None\n", "type(state)"),
}
# the class kept as a class constant (twenty-sixth set F19-f1, `draft_input_cls = EagleDraftInput`),
# called through self, type(self), cls in a classmethod
CLASS_CONSTANT = {
    "through_self": ("", "self.made_cls"),
    "through_type_of_self": ("", "type(self).made_cls"),
    "through_cls": ("    @classmethod\n", "cls.made_cls"),
}


@pytest.mark.parametrize("spelling", sorted(CLASS_CONSTANT))
def test_a_class_kept_as_a_class_constant_is_the_one_called(upstreams, tmp_path, spelling):
    old, _ = upstreams
    decorator, made = CLASS_CONSTANT[spelling]
    receiver = "cls" if decorator else "self"
    source = ("from sglang.srt.speculative.eagle_info import EagleDraftInput\n\n\nclass Builder:\n    made_cls = EagleDraftInput\n\n"
              f"{decorator}    def seed({receiver}, probs):\n        ok = {made}(topk_p=probs)\n        bad = {made}(verified_id=probs)\n"
              "        return ok, bad\n\n\ndef register():\n    return Builder().seed(1)\n")
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"spec": "spec:register"}), "spec/__init__.py": source})
    code, doc = check(root, old)
    lines = source.splitlines()
    calls = {f["line"]: f for f in doc["findings"] if f["kind"] == "call" and f["target"].endswith("EagleDraftInput") and f["breaking"]}
    assert [lines[line - 1].strip().split(" =")[0] for line in calls] == ["bad"], doc["findings"]
    assert code == 1


@pytest.mark.parametrize("spelling", sorted(OWN_CLASS))
def test_a_copy_made_with_the_objects_own_class_binds_to_its_fields(upstreams, tmp_path, spelling):
    old, _ = upstreams
    param, narrow, made = OWN_CLASS[spelling]
    source = ("from sglang.srt.speculative.eagle_info import EagleDraftInput\n\n\n"
              f"def advance({param}, probs):\n{narrow}    ok = {made}(topk_p=probs, hidden_states=state.hidden_states)\n"
              f"    bad = {made}(verified_id=probs)\n    return ok, bad\n\n\ndef register():\n    pass\n")
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"spec": "spec:register"}), "spec/__init__.py": source})
    code, doc = check(root, old)
    lines = source.splitlines()
    calls = {f["line"]: f for f in doc["findings"] if f["kind"] == "call" and f["target"].endswith("EagleDraftInput") and f["breaking"]}
    assert [lines[line - 1].strip().split(" =")[0] for line in calls] == ["bad"], doc["findings"]
    assert "verified_id" in next(iter(calls.values()))["detail"] and code == 1


def test_keywords_a_name_collects_under_tests_are_not_taken_as_certain(upstreams, tmp_path):
    # compat code: the dict gains a key only where the class takes it (introspection, a release
    # test); the fold cannot tell those edits from certain ones, so the call is left as written
    old, _ = upstreams
    source = ("import inspect\n\nfrom sglang.srt.speculative.eagle_info import EagleDraftInput\n\n\n"
              "def seed(probs):\n    kwargs = {'topk_p': probs}\n"
              "    if 'verified_id' in inspect.signature(EagleDraftInput).parameters:\n        kwargs['verified_id'] = probs\n"
              "    return EagleDraftInput(**kwargs)\n\n\ndef register():\n    pass\n")
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"spec": "spec:register"}), "spec/__init__.py": source})
    code, doc = check(root, old)
    assert not [f for f in doc["findings"] if f["kind"] == "call" and f["breaking"]] and code == 0, doc["findings"]


# a plugin class that writes no constructor of its own is built by the first upstream class of its
# MRO: a call of it is judged as a call of that class, however the class is named or derived
INHERITED = {
    "subclass": ("class XDraft(EagleDraftInput):\n    def tag(self):\n        return 'x'\n", "XDraft"),
    "mixin_first": ("class Tagged:\n    def tag(self):\n        return 'x'\n\n\nclass XDraft(Tagged, EagleDraftInput):\n    pass\n", "XDraft"),
    "plugin_chain_alias": ("class Mid(EagleDraftInput):\n    pass\n\n\nclass XDraft(Mid):\n    pass\n\n\nBuilt = XDraft\n", "Built"),
    "attribute": ("class Holder:\n    class XDraft(EagleDraftInput):\n        pass\n", "Holder.XDraft"),
}
# ... and one that writes or generates its own is judged by what the plugin wrote (not here)
OWN = {
    "own_init": "class XDraft(EagleDraftInput):\n    def __init__(self, hidden_state):\n        super().__init__(hidden_states=hidden_state)\n",
    "own_dataclass": "@dataclass\nclass XDraft(EagleDraftInput):\n    hidden_state: int = 0\n",
    "mixin_init": "class Tagged:\n    def __init__(self, hidden_state=None, **kwargs):\n        super().__init__(**kwargs)\n\n\nclass XDraft(Tagged, EagleDraftInput):\n    pass\n",
}


@pytest.mark.parametrize("spelling", sorted(INHERITED) + sorted(OWN))
def test_a_plugin_class_without_a_constructor_is_built_by_its_upstream_base(upstreams, tmp_path, spelling):
    old, _ = upstreams
    classes, name = INHERITED.get(spelling) or (OWN[spelling], "XDraft")
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"spec": "spec:register"}),
        "spec/__init__.py": "from dataclasses import dataclass\n\nfrom sglang.srt.speculative.eagle_info import EagleDraftInput\n\n\n" + classes + f"""

def seed(hidden):
    return {name}(hidden_states=hidden), {name}(hidden_state=hidden)


def register():
    pass
""",
    })
    code, doc = check(root, old)
    calls = [f for f in doc["findings"] if f["kind"] == "call" and f["breaking"]]
    if spelling in INHERITED:
        assert len(calls) == 1 and "hidden_state" in calls[0]["detail"] and "synthesised by @dataclass" in calls[0]["detail"], calls
        assert calls[0]["target"] == "sglang.srt.speculative.eagle_info.EagleDraftInput" and code == 1
    else:
        assert calls == [] and code == 0, calls


# A plugin @dataclass over an upstream dataclass (F19 variant w6): its generated __init__ takes
# the upstream fields, then its own, however the decorator is spelled.
PLUGIN_DATACLASSES = {
    "bare": "from dataclasses import dataclass\n\n\n@dataclass\n",
    "module_attribute": "import dataclasses\n\n\n@dataclasses.dataclass\n",
    "with_options": "from dataclasses import dataclass\n\n\n@dataclass(frozen=True, eq=False)\n",
}


@pytest.mark.parametrize("spelling", sorted(PLUGIN_DATACLASSES))
def test_a_plugin_dataclass_over_an_upstream_one_takes_both_fields(upstreams, tmp_path, spelling):
    old, _ = upstreams
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"spec": "spec:register"}),
        "spec/__init__.py": PLUGIN_DATACLASSES[spelling] + (
            "class DevDraftInput(EagleDraftInput):\n    chunk_scale: float = 1.0\n\n\n"
            "def seed(hidden, probs):\n    return DevDraftInput(hidden_states=hidden, topk_p=probs, chunk_scale=2.0)\n\n\n"
            "def broken(hidden):\n    return DevDraftInput(hidden_state=hidden)\n\n\n"
            "def register():\n    return seed, broken\n"),
    }, name=spelling)
    (root / "spec/__init__.py").write_text("from sglang.srt.speculative.eagle_info import EagleDraftInput\n" + (root / "spec/__init__.py").read_text())
    code, doc = check(root, old)
    calls = [f for f in doc["findings"] if f["kind"] == "call" and f["breaking"]]
    broken = (root / "spec/__init__.py").read_text().splitlines().index("def broken(hidden):") + 2
    assert [(f["line"], "hidden_state" in f["detail"]) for f in calls] == [(broken, True)], doc["findings"]
    assert code == 1


# the arguments as written, or unpacked from a literal (F19 variant v1): the same call
UNPACKED = {
    "keywords": ("EagleDraftInput(hidden_states=h, topk_p=p)", "EagleDraftInput(hidden_state=h)"),
    "dict_literal": ("EagleDraftInput(**{'hidden_states': h, 'topk_p': p})", "EagleDraftInput(**{'hidden_state': h})"),
    "dict_call": ("EagleDraftInput(**dict(hidden_states=h, topk_p=p))", "EagleDraftInput(**dict(topk_p=p, hidden_state=h))"),
    "list_positional": ("Child(*[1, 2], **{'c': 3})", "Child(*(1, 2, 3, 4))"),
}


@pytest.mark.parametrize("spelling", sorted(UNPACKED))
def test_arguments_unpacked_from_a_literal_bind_as_written(upstreams, tmp_path, spelling):
    old, _ = upstreams
    fits, fails = UNPACKED[spelling]
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"spec": "spec:register"}),
        "spec/__init__.py": ("from sglang.srt.speculative.eagle_info import Child, EagleDraftInput\n\n\n"
                             f"def seed(h, p):\n    ok = {fits}\n    bad = {fails}\n    return ok, bad\n\n\ndef register():\n    pass\n"),
    })
    code, doc = check(root, old)
    assert sorted(f["line"] for f in doc["findings"] if f["kind"] == "call" and f["breaking"]) == [6], doc["findings"]
    assert code == 1


# a field whose value is a helper's call returning a Field (vLLM's EngineArgs: `x: list[int] =
# get_field(SchedulerConfig, "x")`) has the default that Field carries: the call need not pass it;
# `field(...)` itself decides by its options, however it is imported (fourteenth set V-n6)
FIELD_DEFAULTS = {
    "helper_returning_a_field": ("sizes: list = get_field(Other, 'sizes')", False),
    "field_default_factory": ("sizes: list = dataclasses.field(default_factory=list)", False),
    "plain_default": ("sizes: int = 0", False),
    "field_without_default": ("sizes: list = field(repr=False)", True),
}


@pytest.mark.parametrize("spelling", sorted(FIELD_DEFAULTS))
def test_a_field_set_by_a_helper_returning_a_field_has_a_default(tmp_path_factory, tmp_path, spelling):
    declared, required = FIELD_DEFAULTS[spelling]
    engine = {"sglang/srt/engine_args.py": f"""
        import dataclasses
        from dataclasses import dataclass, field


        @dataclass
        class Other:
            sizes: list = field(default_factory=list)


        def get_field(cls, name):
            return field(default_factory=list)


        @dataclass
        class EngineArgs:
            model: str = "m"
            {declared}
        """}
    old, _ = upstream_pair(tmp_path_factory, old=engine, new=engine)
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"ea": "ea:register"}), "ea/__init__.py": """
        from sglang.srt.engine_args import EngineArgs


        def register():
            return EngineArgs(model="x")
        """})
    code, doc = check(root, old)
    calls = [f for f in doc["findings"] if f["kind"] == "call" and f["breaking"]]
    assert bool(calls) == required and code == (1 if required else 0), doc["findings"]


def test_a_dict_the_plugin_edits_in_place_is_not_spread(upstreams, tmp_path):
    """A spread dict some plugin code adds keys to (here under a test) may hold more than its
    display: its keywords are not taken as certain."""
    old, _ = upstreams
    source = ("import os\n\nfrom sglang.srt.speculative.eagle_info import EagleDraftInput\n\nOLD = dict(verified_id=None)\n"
              "if os.environ.get('X'):\n    OLD['topk_p'] = None\n\n\ndef seed(probs):\n    return EagleDraftInput(**OLD)\n\n\ndef register():\n    pass\n")
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"spec": "spec:register"}), "spec/__init__.py": source})
    code, doc = check(root, old)
    assert not [f for f in doc["findings"] if f["kind"] == "call" and f["breaking"]], doc["findings"]


# `field(default_factory=C)` in a plugin dataclass (twenty-eighth set F19-h1): a construction that
# leaves the field out calls C() -- bound to its generated __init__ like any call
FACTORIES = {
    "field_by_name": "from dataclasses import dataclass, field\n\n\n@dataclass\nclass Slot:\n    spec: object = field(default_factory={cls})\n",
    "dataclasses_field": "import dataclasses\n\n\n@dataclasses.dataclass\nclass Slot:\n    n: int = 0\n    spec: object = dataclasses.field(default_factory={cls})\n",
    "field_under_an_alias": "from dataclasses import dataclass, field as fld\n\n\n@dataclass(frozen=True)\nclass Slot:\n    spec: object = fld(repr=False, default_factory={cls})\n",
}


@pytest.mark.parametrize("spelling", sorted(FACTORIES))
@pytest.mark.parametrize("cls, breaks", [("EagleDraftInput", False), ("Base", True)])
def test_a_default_factory_is_a_call_with_no_arguments(upstreams, tmp_path, spelling, cls, breaks):
    old, _ = upstreams
    source = ("from sglang.srt.speculative.eagle_info import Base, EagleDraftInput\n" + FACTORIES[spelling].format(cls=cls)
              + "\n\ndef register():\n    return Slot()\n")
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"spec": "spec:register"}), "spec/__init__.py": source}, name=f"{spelling}-{cls}")
    code, doc = check(root, old)
    calls = [f for f in doc["findings"] if f["kind"] == "call" and f["target"].endswith(f".{cls}") and f["breaking"]]
    assert bool(calls) is breaks and code == (1 if breaks else 0), doc["findings"]
