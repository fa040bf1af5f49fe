"""Upstream resolution that does not guess, on small SGLang-shaped upstream trees: classes built
by calls, members of outside bases (from an installed package or the shipped table), colon
targets and HookRegistry's own rule, cycles and very deep chains, instance attributes."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from knowledge_support import write_tree

from harness.knowledge.upstream.external import ExternalMembers
from harness.knowledge.upstream.index import Outcome, Ref, Resolution, SymbolIndex
from harness.knowledge.upstream.source import resolve_upstream

DEPTH = 1500  # links in the deep chains: beyond Python's default recursion limit (1000)

UPSTREAM = {
    "sglang/__init__.py": "",
    # nested classes whose bases name a sibling nested class: evaluated in the enclosing class body
    "sglang/srt/nested.py": """
        class State:
            def global_only(self):
                return 0


        class Pool:
            class State:
                def at_layer_idx(self, i):
                    return i

            class SpeculativeState(State):
                pass

            class Doubly(SpeculativeState, dict):
                pass


        class Outer:
            class Mid:
                class Base:
                    def deep(self):
                        return 1

                class Child(Base):
                    pass
        """,
    # sglang/srt has no __init__.py: a namespace package, as in the real releases
    "sglang/srt/built.py": """
        import collections
        import dataclasses
        import enum
        from collections import namedtuple
        from typing import NamedTuple

        import msgspec

        NAMES = ["p", "q"]


        class Args:
            @staticmethod
            def add_cli_args(parser):
                return parser

            def __post_init__(self):
                pass

            def resolve_once(self):
                pass


        Args._NS_BY_FIELD = {}
        Args = msgspec.defstruct(
            "Args",
            [("port", int, 0), "host"],
            namespace={k: v for k, v in vars(Args).items() if k not in ("__dict__", "__weakref__", "resolve_once")},
            dict=True,
        )


        class Computed:
            def method(self):
                pass


        Computed = msgspec.defstruct("Computed", [(name, int) for name in NAMES], namespace=vars(Computed))


        class Decorated:
            size: int = 0


        Decorated = dataclasses.dataclass(Decorated)


        class Base:
            def base_method(self):
                pass


        Point = namedtuple("Point", "x y")
        Pair = collections.namedtuple("Pair", ["left", "right"])
        Typed = NamedTuple("Typed", [("name", str), ("size", int)])
        Made = dataclasses.make_dataclass("Made", ["a", ("b", int)], namespace={"helper": lambda self: 1})
        Dyn = type("Dyn", (Base,), {"attr": 1})
        Color = enum.Enum("Color", "RED GREEN")
        Shade = enum.IntEnum("Shade", ["DARK", "LIGHT"])


        @dataclasses.dataclass
        class Record:
            name: str = ""
        """,
    "sglang/srt/outside.py": """
        import extlib
        from extlib import Base, WithMeta
        from missinglib import Ghost


        class Sub(Base):
            def own(self):
                pass


        class Two(Base, extlib.Other):
            pass


        class ViaMeta(WithMeta):
            pass


        class Haunted(Ghost):
            def own(self):
                pass


        class Plain:
            def own(self):
                pass


        class LocalMeta(type):
            def registry(cls):
                return {}


        class Local(metaclass=LocalMeta):
            pass


        def make_base():
            return Plain


        class CallBase(make_base()):
            def own(self):
                pass
        """,
    "sglang/srt/managers/__init__.py": "",
    "sglang/srt/managers/scheduler.py": """
        class Scheduler:
            def __init__(self, server_args):
                self.server_args = server_args

            def run(self):
                pass
        """,
    "sglang/srt/utils/__init__.py": """
        from sglang.srt.utils.common import *
        from . import imported_sub
        """,
    "sglang/srt/utils/common.py": """
        def get_device_name():
            return "x"
        """,
    "sglang/srt/utils/imported_sub.py": "VALUE = 1\n",
    "sglang/srt/utils/lazy_sub.py": "VALUE = 1\n",
    "sglang/srt/dyn.py": """
        def __getattr__(name):
            return name
        """,
    "sglang/srt/fallback.py": """
        try:
            from sglang.srt.gone import X
        except ImportError:
            X = None
        try:
            from sglang.srt.gone import Y
        except ImportError:
            pass
        """,
    "sglang/srt/broken.py": "def broken(:\n",
    "sglang/srt/instances.py": """
        class Worker:
            count: int = 0

            def __init__(self, config, *rest):
                self.config = config
                self.a, (self.b, *self.c) = 1, (2, 3)
                self.total: int = 0
                self.total += 1
                setattr(self, "named", 1)
                for self.cursor in range(3):
                    pass
                with open("x") as self.handle:
                    pass

                def inner():
                    self.from_closure = 1

                class Nested:
                    def __init__(self):
                        self.not_mine = 1

            @staticmethod
            def helper(self):
                self.not_static = 1

            def other(this):
                this.renamed = 1


        class Dynamic:
            def __init__(self, **kw):
                for key, value in kw.items():
                    setattr(self, key, value)
                self.__dict__.update(kw)


        class Lazy:
            def __getattr__(self, name):
                return 1
        """,
    "sglang/srt/cycles/__init__.py": "",
    "sglang/srt/cycles/a.py": "from sglang.srt.cycles.b import X\n",
    "sglang/srt/cycles/b.py": "from sglang.srt.cycles.a import X\n",
    "sglang/srt/cycles/aliases.py": "X = Y\nY = X\n",
    "sglang/srt/cycles/star_a.py": "from sglang.srt.cycles.star_b import *\nfrom sglang.srt.cycles.star_c import *\n",
    "sglang/srt/cycles/star_b.py": "from sglang.srt.cycles.star_a import *\n",
    "sglang/srt/cycles/star_c.py": "FOUND = 1\n",
    "sglang/srt/cycles/star_loop_a.py": "from sglang.srt.cycles.star_loop_b import *\n",
    "sglang/srt/cycles/star_loop_b.py": "from sglang.srt.cycles.star_loop_a import Name\n",
    "sglang/srt/cycles/aliased_loop.py": "from sglang.srt.cycles.aliased_loop_b import X as Y\nX = Y\n",
    "sglang/srt/cycles/aliased_loop_b.py": "from sglang.srt.cycles.aliased_loop import X\n",
    "sglang/srt/cycles/class_a.py": "from sglang.srt.cycles.class_b import B\n\nclass A(B):\n    pass\n",
    "sglang/srt/cycles/class_b.py": "from sglang.srt.cycles.class_a import A\n\nclass B(A):\n    pass\n",
    # deep chains: each link a module re-exporting the next one's name
    **{f"sglang/srt/deep/m{i}.py": f"from sglang.srt.deep.m{i + 1} import X\n" for i in range(DEPTH)},
    f"sglang/srt/deep/m{DEPTH}.py": "X = 1\n",
    **{f"sglang/srt/deep_loop/m{i}.py": f"from sglang.srt.deep_loop.m{(i + 1) % DEPTH} import X\n" for i in range(DEPTH)},
    "sglang/srt/deep_classes.py": f"class C{DEPTH}:\n    def deep(self):\n        pass\n\n"
    + "".join(f"class C{i}(C{i + 1}):\n    pass\n\n" for i in reversed(range(DEPTH))),
    "sglang/srt/deep_alias.py": f"def A{DEPTH}():\n    pass\n\n" + "".join(f"A{i} = A{i + 1}\n" for i in reversed(range(DEPTH))),
}

EXTLIB = """
    class Meta(type):
        def meta_method(cls):
            return 1


    class Base:
        def known(self):
            return 1


    class Other:
        def other_known(self):
            return 1


    class WithMeta(metaclass=Meta):
        pass
    """


class Counting(ExternalMembers):
    """Counts how often the index asks for outside members at all."""

    calls = 0

    def lookup(self, paths, also=()):
        self.calls += 1
        return super().lookup(paths, also)


@pytest.fixture(scope="module")
def upstream(tmp_path_factory):
    root = tmp_path_factory.mktemp("resolution-upstream")
    write_tree(root, UPSTREAM)
    return root


@pytest.fixture
def extlib(tmp_path, monkeypatch) -> Path:
    """An installed outside package (with its dist-info), visible to the member subprocess."""
    site = tmp_path / "site"
    write_tree(site, {"extlib/__init__.py": EXTLIB, "extlib-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: extlib\nVersion: 1.0\n", "extlib-1.0.dist-info/top_level.txt": "extlib\n"})
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")])))
    monkeypatch.delenv("HARNESS_PYTHON", raising=False)
    return site


def index_of(upstream: Path, tmp_path: Path, **external) -> SymbolIndex:
    members = Counting(cache_file=tmp_path / "external.json", **external)
    return SymbolIndex(resolve_upstream(str(upstream)), external=members)


def check(index: SymbolIndex, target: str, outcome: Outcome, owner: str | None = None) -> Resolution:
    resolution = index.resolve(target)
    assert resolution.outcome is outcome, resolution
    if owner is not None:
        assert resolution.owner == owner, resolution
    assert resolution.ok == (outcome is Outcome.resolved)
    assert (resolution.ref is not None) == resolution.ok
    return resolution


# ----------------------------------------------------------------------------- classes built by calls


def test_a_class_rebuilt_from_itself_keeps_its_members(upstream, tmp_path):
    index = index_of(upstream, tmp_path)
    args = "sglang.srt.built.Args"
    for name in ("add_cli_args", "__post_init__", "_NS_BY_FIELD", "port", "host"):
        check(index, f"{args}.{name}", Outcome.resolved, owner=args)
    assert index.resolve(f"{args}.add_cli_args").ref.kind == "function"
    # the namespace filter drops resolve_once; msgspec.Struct (installed or shipped) lacks it too
    missing = check(index, f"{args}.resolve_once", Outcome.missing)
    assert "msgspec.defstruct" in missing.note and missing.provenance
    check(index, f"{args}.__struct_fields__", Outcome.resolved, owner="msgspec.defstruct()")
    # fields computed at import: a name not listed cannot be called missing
    check(index, "sglang.srt.built.Computed.method", Outcome.resolved)
    undecided = check(index, "sglang.srt.built.Computed.p", Outcome.undecided)
    assert "computed at import" in undecided.note
    # X = dataclass(X) is still X, with what the decorator adds
    check(index, "sglang.srt.built.Decorated.size", Outcome.resolved)
    check(index, "sglang.srt.built.Decorated.__dataclass_fields__", Outcome.resolved, owner="@dataclasses.dataclass")
    check(index, "sglang.srt.built.Decorated.nothing", Outcome.missing)
    check(index, "sglang.srt.built.Record.__dataclass_fields__", Outcome.resolved, owner="@dataclasses.dataclass")


@pytest.mark.parametrize(
    "target, outcome, owner",
    [
        ("Point.x", Outcome.resolved, "sglang.srt.built.Point"),
        ("Point._make", Outcome.resolved, "collections.namedtuple()"),
        ("Point.count", Outcome.resolved, "collections.namedtuple()"),  # a tuple method
        ("Point.z", Outcome.missing, None),
        ("Pair.right", Outcome.resolved, "sglang.srt.built.Pair"),
        ("Typed.size", Outcome.resolved, "sglang.srt.built.Typed"),
        ("Typed._asdict", Outcome.resolved, "typing.NamedTuple()"),
        ("Made.b", Outcome.resolved, "sglang.srt.built.Made"),
        ("Made.helper", Outcome.resolved, "sglang.srt.built.Made"),
        ("Made.__dataclass_fields__", Outcome.resolved, "dataclasses.make_dataclass()"),
        ("Made.c", Outcome.missing, None),
        ("Dyn.attr", Outcome.resolved, "sglang.srt.built.Dyn"),
        ("Dyn.base_method", Outcome.resolved, "sglang.srt.built.Base"),
        ("Dyn.nothing", Outcome.missing, None),
        ("Color.RED", Outcome.resolved, "sglang.srt.built.Color"),
        ("Color.__members__", Outcome.resolved, None),
        ("Color.BLUE", Outcome.missing, None),
        ("Shade.LIGHT", Outcome.resolved, "sglang.srt.built.Shade"),
        ("Shade.bit_length", Outcome.resolved, "enum.IntEnum"),
    ],
)
def test_class_factories_make_classes_with_those_members(upstream, tmp_path, target, outcome, owner):
    index = index_of(upstream, tmp_path)
    resolution = check(index, f"sglang.srt.built.{target}", outcome, owner)
    if outcome is Outcome.missing:
        assert "has no attribute" in resolution.note


@pytest.mark.parametrize(
    "target, outcome, owner",
    [
        ("Pool.SpeculativeState.at_layer_idx", Outcome.resolved, "sglang.srt.nested.Pool.State"),
        ("Pool.Doubly.at_layer_idx", Outcome.resolved, "sglang.srt.nested.Pool.State"),
        ("Outer.Mid.Child.deep", Outcome.resolved, "sglang.srt.nested.Outer.Mid.Base"),
        # the module's own State is not the base: its method is no member
        ("Pool.SpeculativeState.global_only", Outcome.missing, None),
    ],
)
def test_a_nested_class_base_is_looked_up_in_the_enclosing_class_body(upstream, tmp_path, target, outcome, owner):
    index = index_of(upstream, tmp_path)
    check(index, f"sglang.srt.nested.{target}", outcome, owner)


# ----------------------------------------------------------------------------- outside bases


def test_outside_members_come_from_the_installed_package_once(upstream, tmp_path, extlib):
    index = index_of(upstream, tmp_path)
    check(index, "sglang.srt.outside.Sub.own", Outcome.resolved)
    assert index.external.calls == 0  # found in the upstream class body: nobody asked
    known = check(index, "sglang.srt.outside.Sub.known", Outcome.resolved, owner="extlib.Base")
    assert known.ref == Ref("external", "", "extlib.Base.known")
    assert known.provenance == "members of extlib.Base from the installed extlib 1.0"
    missing = check(index, "sglang.srt.outside.Sub.nothing", Outcome.missing)
    assert "members of extlib.Base from the installed extlib 1.0" in missing.note
    check(index, "sglang.srt.outside.Two.other_known", Outcome.resolved, owner="extlib.Other")
    meta = check(index, "sglang.srt.outside.ViaMeta.meta_method", Outcome.resolved, owner="extlib.Meta")
    assert "metaclass" in meta.note
    assert index.external.spawned == 1  # one subprocess answered every outside base seen
    # a cached run spawns nothing
    again = index_of(upstream, tmp_path)
    check(again, "sglang.srt.outside.Two.other_known", Outcome.resolved, owner="extlib.Other")
    check(again, "sglang.srt.outside.Sub.nothing", Outcome.missing)
    assert again.external.spawned == 0
    # a new version of the package is asked again
    (extlib / "extlib-1.0.dist-info/METADATA").write_text("Metadata-Version: 2.1\nName: extlib\nVersion: 2.0\n")
    upgraded = index_of(upstream, tmp_path)
    assert "extlib 2.0" in check(upgraded, "sglang.srt.outside.Sub.known", Outcome.resolved).provenance
    assert upgraded.external.spawned == 1


def test_an_outside_base_nobody_can_list_is_undecided(upstream, tmp_path, extlib):
    index = index_of(upstream, tmp_path)
    check(index, "sglang.srt.outside.Haunted.own", Outcome.resolved)
    undecided = check(index, "sglang.srt.outside.Haunted.nothing", Outcome.undecided)
    assert "members of missinglib.Ghost are unknown" in undecided.note


def test_the_shipped_table_answers_when_the_package_is_not_importable(upstream, tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_PYTHON", str(tmp_path / "no-such-python"))
    table = tmp_path / "table.json"
    table.write_text('{"objects": {"extlib.Base": {"names": ["__init__", "known"], "dist": "extlib", "version": "0.9", "meta": "builtins.type"}}}')
    index = index_of(upstream, tmp_path, table_file=table)
    assert index.external.python.endswith("no-such-python")
    known = check(index, "sglang.srt.outside.Sub.known", Outcome.resolved, owner="extlib.Base")
    assert known.provenance == "members of extlib.Base from the shipped member table (extlib 0.9)"
    # Other is in neither: undecided, even though Base is known
    check(index, "sglang.srt.outside.Two.nothing", Outcome.undecided)


def test_the_real_shipped_table_lists_torch_and_friends(upstream, tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_PYTHON", str(tmp_path / "no-such-python"))
    members = ExternalMembers(cache_file=tmp_path / "external.json").lookup(["torch.nn.Module", "msgspec.Struct", "pydantic.BaseModel", "enum.Enum", "abc.ABC"])
    assert all(m is not None and m.source.startswith("the shipped member table") for m in members.values()), members
    assert {"forward", "to", "parameters"} <= members["torch.nn.Module"].names
    assert "__members__" in members["enum.Enum"].meta_names


def test_a_base_computed_at_class_creation_is_undecided(upstream, tmp_path):
    index = index_of(upstream, tmp_path)
    check(index, "sglang.srt.outside.CallBase.own", Outcome.resolved)
    assert "make_base() is computed when the class is created" in check(index, "sglang.srt.outside.CallBase.other", Outcome.undecided).note


def test_dunders_and_metaclass_members_are_checked_not_assumed(upstream, tmp_path):
    index = index_of(upstream, tmp_path)
    check(index, "sglang.srt.outside.Plain.__post_init__", Outcome.missing)
    check(index, "sglang.srt.outside.Plain.__init__", Outcome.resolved, owner="builtins.object")
    check(index, "sglang.srt.outside.Plain.__name__", Outcome.resolved, owner="builtins.type")
    check(index, "sglang.srt.outside.Plain.mro", Outcome.resolved, owner="builtins.type")
    check(index, "sglang.srt.outside.Local.registry", Outcome.resolved, owner="sglang.srt.outside.LocalMeta")
    check(index, "sglang.srt.outside.Local.unregistered", Outcome.missing)
    assert index.external.spawned == 0  # the standard library is answered in this process


# ----------------------------------------------------------------------------- module:Attr and hooks


def test_targets_follow_pkgutil_resolve_name(upstream, tmp_path):
    index = index_of(upstream, tmp_path)
    check(index, "sglang.srt.managers.scheduler:Scheduler.run", Outcome.resolved, owner="sglang.srt.managers.scheduler.Scheduler")
    check(index, "sglang.srt.managers.scheduler:Scheduler.nope", Outcome.missing)
    assert index.resolve("sglang.srt.managers.scheduler:").ref == Ref("module", "sglang.srt.managers.scheduler", "")
    assert "ImportError" in check(index, "sglang.srt.managers.nope:Scheduler", Outcome.missing).note
    # before a colon there must be a module: a class path there does not import
    check(index, "sglang.srt.managers.scheduler.Scheduler:run", Outcome.missing)
    for invalid in ("sglang..srt", "sglang.srt.1x", "sglang:a:b", ""):
        assert "ValueError" in check(index, invalid, Outcome.missing).note
    # getattr on a package finds a submodule only once something imported it
    check(index, "sglang.srt.utils:imported_sub.VALUE", Outcome.resolved)
    check(index, "sglang.srt.utils:lazy_sub.VALUE", Outcome.undecided)
    check(index, "sglang.srt.utils.lazy_sub.VALUE", Outcome.resolved)  # without a colon it is imported
    check(index, "sglang.srt.utils:get_device_name", Outcome.resolved)  # a star re-export
    check(index, "sglang.srt.utils.common.__name__", Outcome.resolved)
    check(index, "torch.nn.Module", Outcome.undecided)  # not part of this upstream


def test_hook_targets_follow_hook_registry(upstream, tmp_path):
    index = index_of(upstream, tmp_path)
    init = index.resolve_hook_target("sglang.srt.managers.scheduler:Scheduler.__init__")
    assert init.ok and init.ref.path == "sglang.srt.managers.scheduler.Scheduler.__init__"
    # rsplit(".") gives the attribute "common:get_device_name" of sglang.srt.utils
    colon_function = index.resolve_hook_target("sglang.srt.utils.common:get_device_name")
    assert colon_function.outcome is Outcome.missing and "'common:get_device_name'" in colon_function.note
    assert index.resolve("sglang.srt.utils.common:get_device_name").ok  # pkgutil alone accepts it
    assert index.resolve_hook_target("sglang.srt.managers.scheduler.Scheduler.run").ok
    assert "ValueError" in index.resolve_hook_target("sglang").note


def test_dynamic_and_broken_modules_are_undecided(upstream, tmp_path):
    index = index_of(upstream, tmp_path)
    assert "__getattr__" in check(index, "sglang.srt.dyn.anything", Outcome.undecided).note
    check(index, "sglang.srt.dyn.__getattr__", Outcome.resolved)
    assert "does not parse" in check(index, "sglang.srt.broken.broken", Outcome.undecided).note
    # a failed import with an except-ImportError fallback still binds the name
    assert check(index, "sglang.srt.fallback.X", Outcome.resolved).ref.kind == "value"
    check(index, "sglang.srt.fallback.Y", Outcome.missing)
    assert "attributes of the function" in check(index, "sglang.srt.utils.common.get_device_name.cache_clear", Outcome.undecided).note


# ----------------------------------------------------------------------------- cycles and depth


@pytest.mark.parametrize(
    "target, cycle",
    [
        ("sglang.srt.cycles.a.X", "re-export cycle: sglang.srt.cycles.a.X -> sglang.srt.cycles.b.X -> sglang.srt.cycles.a.X"),
        ("sglang.srt.cycles.aliases.X", "re-export cycle: sglang.srt.cycles.aliases.X -> sglang.srt.cycles.aliases.Y -> sglang.srt.cycles.aliases.X"),
        ("sglang.srt.cycles.star_loop_a.Name", "re-export cycle: sglang.srt.cycles.star_loop_a.Name -> sglang.srt.cycles.star_loop_b.Name -> sglang.srt.cycles.star_loop_a.Name"),
        ("sglang.srt.cycles.aliased_loop.X", "re-export cycle: sglang.srt.cycles.aliased_loop.X -> sglang.srt.cycles.aliased_loop.Y -> sglang.srt.cycles.aliased_loop_b.X -> sglang.srt.cycles.aliased_loop.X"),
        ("sglang.srt.cycles.class_a.A.anything", "class hierarchy cycle: sglang.srt.cycles.class_a.A -> sglang.srt.cycles.class_b.B -> sglang.srt.cycles.class_a.A"),
    ],
)
def test_cycles_are_undecided_and_named(upstream, tmp_path, target, cycle):
    resolution = check(index_of(upstream, tmp_path), target, Outcome.undecided)
    assert cycle in resolution.note


def test_star_imports_that_loop_still_find_or_miss_a_name(upstream, tmp_path):
    index = index_of(upstream, tmp_path)
    assert check(index, "sglang.srt.cycles.star_a.FOUND", Outcome.resolved).ref.module == "sglang.srt.cycles.star_c"
    assert check(index, "sglang.srt.cycles.star_b.FOUND", Outcome.resolved).ref.module == "sglang.srt.cycles.star_c"
    check(index, "sglang.srt.cycles.star_a.NOWHERE", Outcome.missing)  # no module in the loop binds it


def test_chains_deeper_than_the_recursion_limit(upstream, tmp_path):
    assert sys.getrecursionlimit() < DEPTH
    index = index_of(upstream, tmp_path)
    assert check(index, "sglang.srt.deep.m0.X", Outcome.resolved).ref == Ref("value", f"sglang.srt.deep.m{DEPTH}", "X")
    loop = check(index, "sglang.srt.deep_loop.m0.X", Outcome.undecided)
    assert loop.note.startswith("re-export cycle: sglang.srt.deep_loop.m0.X -> sglang.srt.deep_loop.m1.X") and loop.note.endswith("-> sglang.srt.deep_loop.m0.X")
    deep = check(index, "sglang.srt.deep_classes.C0.deep", Outcome.resolved, owner=f"sglang.srt.deep_classes.C{DEPTH}")
    assert deep.ref.kind == "function"
    assert len(index.mro(Ref("class", "sglang.srt.deep_classes", "C0"))) == DEPTH + 1
    check(index, "sglang.srt.deep_classes.C0.shallow", Outcome.missing)
    assert check(index, "sglang.srt.deep_alias.A0", Outcome.resolved).ref == Ref("function", "sglang.srt.deep_alias", f"A{DEPTH}")


# ----------------------------------------------------------------------------- instance attributes


def test_instance_attributes_of_a_class_body(upstream, tmp_path, monkeypatch):
    index = index_of(upstream, tmp_path)
    worker = index.instance_attributes(Ref("class", "sglang.srt.instances", "Worker"))
    assert set(worker.names) == {"config", "a", "b", "c", "total", "named", "cursor", "handle", "from_closure", "renamed"}
    assert worker.names["config"] == 5 and worker.dynamic == ()
    dynamic = index.instance_attributes(Ref("class", "sglang.srt.instances", "Dynamic"))
    assert dynamic.names == {} and len(dynamic.dynamic) == 2 and "setattr" in dynamic.dynamic[0] and "__dict__" in dynamic.dynamic[1]
    assert "__getattr__" in index.instance_attributes(Ref("class", "sglang.srt.instances", "Lazy")).dynamic[0]
    assert index.instance_attributes(Ref("class", "sglang.srt.built", "Point")).names == {}  # made by a call: no bodies
    with pytest.raises(ValueError):
        index.instance_attributes(Ref("function", "sglang.srt.utils.common", "get_device_name"))
    index.save()
    monkeypatch.setattr("harness.knowledge.upstream.index.instance_attributes", lambda *_: pytest.fail("computed again"))
    cached = index_of(upstream, tmp_path)
    assert cached.instance_attributes(Ref("class", "sglang.srt.instances", "Worker")) == worker
