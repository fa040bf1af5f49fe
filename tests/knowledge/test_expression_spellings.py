"""What an expression holds is read the same however the plugin spells it (issue 34, items 2 and
3): each rule below holds one semantics written at least three ways, and a negative where the
verdict flips. The upstream pair is kinds_support's 0.9.0 -> 0.10.0 (torchao_utils gone in
0.10.0)."""

from __future__ import annotations

import pytest
from kinds_support import INTERFACE_WITHOUT_MHA_POOL, check, plugin, pyproject, upstream_pair
from knowledge_support import by_target

GONE = "sglang.srt.layers.torchao_utils.apply_torchao_config_to_model"
TORCHAO = "sglang.srt.layers.torchao_utils"
BACKEND = "from sglang.srt.layers.torchao_utils import apply_torchao_config_to_model\n"


@pytest.fixture(scope="module")
def upstreams(tmp_path_factory):
    return upstream_pair(tmp_path_factory, new={
        **INTERFACE_WITHOUT_MHA_POOL,
        # a back-compat block rebinding names to themselves, whatever bound them first
        "sglang/srt/layers/attention/compat.py": """
            from sglang.srt.layers.sampler import Sampler
            import sglang.srt.layers.sampler as sampler_module

            class Metadata:
                pass

            LIMIT = 4

            Sampler = Sampler
            sampler_module = sampler_module
            Metadata = Metadata
            LIMIT = LIMIT
            """,
        # a module function upstream calls with a keyword, from another module and from its own
        "sglang/srt/layers/rope.py": """
            def get_rope(head_size, base, scaling=None):
                return head_size


            def default_rope():
                return get_rope(64, 10000)
            """,
        "sglang/srt/models/llama.py": """
            from sglang.srt.layers import rope

            def build(config):
                return rope.get_rope(config.head_size, config.base, scaling=config.scaling)
            """,
    })


def _check_init(tmp_path, upstream: str, source: str) -> tuple[int, dict]:
    """`harness check` on a plugin whose whole code is `p/__init__.py` (`source`), loaded by p:register."""
    return check(plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"p": "p:register"}), "p/__init__.py": source}), upstream)


def _live(doc: dict, module_file: str) -> bool:
    return any(f["live"] for f in doc["findings"] if f["file"] == module_file)


# ---------------------------------------------------------------- module names built at run time
NAMES = {
    # the names come from a class attribute and a dict's keys, through list() and +, in a comprehension
    "comprehension": """
        import importlib

        class Backends:
            DEFAULT = ["alpha"]
            EXTRA = {"beta": "paged"}

        def register():
            names = Backends.DEFAULT + list(Backends.EXTRA)
            return [importlib.import_module(__name__ + ".backends." + n) for n in names]
        """,
    # import_module under another name, over sorted() of a tuple
    "aliased_import_module": """
        from importlib import import_module as load

        NAMES = ("beta", "alpha")

        def register():
            for name in sorted(NAMES):
                load(f"p.backends.{name}")
        """,
    # a table of flags: a backend whose flag is the constant False is never imported
    "flag_table": """
        import importlib

        ENABLED = {"alpha": True, "beta": True, "gamma": False}

        def register():
            for name, enabled in ENABLED.items():
                if enabled:
                    importlib.import_module(f"p.backends.{name}")
        """,
    "comprehension_filter": """
        import importlib

        ENABLED = {"alpha": True, "beta": True, "gamma": False}

        def register():
            return {n: importlib.import_module(f"p.backends.{n}") for n in ENABLED if ENABLED[n]}
        """,
    # module names kept in fields of plugin @dataclass records (F22 variant w5): by position,
    # by keyword, and a default
    "dataclass_records": """
        import importlib
        from dataclasses import dataclass

        @dataclass
        class Spec:
            module_path: str
            name: str = ""
            enabled: bool = True

        TABLE = [Spec("p.backends.alpha", "a"), Spec(name="b", module_path="p.backends.beta"), Spec("p.backends.gamma", enabled=False)]

        def register():
            for spec in TABLE:
                if spec.enabled:
                    importlib.import_module(spec.module_path)
        """,
    # module names kept in plugin TypedDict records, read by key (thirtieth set F22-j2): the class
    # form called with keywords, the functional form called with a mapping, a TypedDict deriving
    # from another (calling one builds a plain dict: PEP 589)
    "typed_dict_class_records": """
        import importlib
        from typing import TypedDict

        class Spec(TypedDict):
            module: str
            enabled: bool

        TABLE = [Spec(module="p.backends.alpha", enabled=True), Spec(module="p.backends.beta", enabled=True),
                 Spec(module="p.backends.gamma", enabled=False)]

        def register():
            for spec in TABLE:
                if spec["enabled"]:
                    importlib.import_module(spec["module"])
        """,
    "typed_dict_functional_mapping": """
        import importlib
        import typing

        Spec = typing.TypedDict("Spec", {"module": str})

        def register():
            for spec in (Spec({"module": "alpha"}), Spec({"module": "beta"})):
                importlib.import_module("p.backends." + spec["module"])
        """,
    "typed_dict_derived": """
        import importlib
        from typing_extensions import TypedDict

        class Base(TypedDict):
            package: str

        class Spec(Base, total=False):
            name: str

        SPECS = [Spec(package="p.backends", name="alpha"), Spec(package="p.backends", name="beta")]

        def register():
            return [importlib.import_module(s["package"] + "." + s.get("name", "gamma")) for s in SPECS]
        """,
    # the names a frozen dataclass of on/off toggles holds (thirtieth set F25-j2): its fields walked
    # with dataclasses.fields, a toggle read with getattr as the test (a plain value: its truth),
    # in a loop with `continue`, compared with True, and over dataclasses.asdict
    "toggle_fields_getattr_continue": """
        import dataclasses
        import importlib

        @dataclasses.dataclass(frozen=True)
        class Toggles:
            alpha: bool = True
            beta: bool = True
            gamma: bool = False

        TOGGLES = Toggles()

        def register():
            for field in dataclasses.fields(TOGGLES):
                if not getattr(TOGGLES, field.name):
                    continue
                importlib.import_module("p.backends.{}".format(field.name))
        """,
    "toggle_fields_is_true": """
        import importlib
        from dataclasses import dataclass, fields

        @dataclass
        class Toggles:
            alpha: bool = True
            beta: bool = True
            gamma: bool = True

        def register():
            on = Toggles(gamma=False)
            for f in fields(on):
                if getattr(on, f.name) is True:
                    importlib.import_module(f"p.backends.{f.name}")
        """,
    "toggle_asdict_items": """
        import dataclasses
        import importlib

        @dataclasses.dataclass
        class Toggles:
            alpha: int = 1
            beta: int = 2
            gamma: int = 0

        def register():
            for name, weight in dataclasses.asdict(Toggles()).items():
                if weight:
                    importlib.import_module("p.backends." + name)
        """,
    # names read by index over range(len(…)) (thirty-first set F25-k1): a loop, a comprehension
    # stopping one short, range with a start and a step
    "index_loop_over_range_len": """
        import importlib

        PKG = "p.backends"
        NAMES = ("alpha", "beta")

        def register():
            for i in range(len(NAMES)):
                importlib.import_module("%s.%s" % (PKG, NAMES[i]))
        """,
    "comprehension_over_range_len_minus_one": """
        import importlib

        NAMES = ["alpha", "beta", "gamma"]

        def register():
            return [importlib.import_module("p.backends." + NAMES[i]) for i in range(len(NAMES) - 1)]
        """,
    "range_with_a_step": """
        import importlib

        PAIRS = ["alpha", "on", "beta", "on", "gamma", "off"]

        def register():
            for i in range(0, len(PAIRS), 2):
                if PAIRS[i + 1] == "on":
                    importlib.import_module(f"p.backends.{PAIRS[i]}")
        """,
    # a loop over a comprehension of names, imported with __import__ (F03 variant w5)
    "loop_over_comprehension": """
        BASE = "p.backends"
        NAMES = ["alpha", "beta", "gamma"]

        def register():
            for module in [f"{BASE}.{n}" for n in NAMES if n != "gamma"]:
                __import__(module)
        """,
    # a starred tuple joined, over a sorted union of sets (F25 variant w2)
    "starred_join_over_union": """
        import importlib

        ROOT = ("p", "backends")
        ENABLED = {"alpha"}
        EXTRA = frozenset(["beta"])

        def register():
            for name in sorted(ENABLED | EXTRA):
                importlib.import_module(".".join((*ROOT, name)))
        """,
    # map over a lambda, then map of import_module itself (F25 variant w6)
    "map_lambda_then_map_import": """
        import importlib

        MODULES = list(map(lambda b: "p.backends.%s" % b, ["alpha", "beta"]))

        def register():
            for module in map(importlib.import_module, MODULES):
                module.__name__
        """,
    # a constant deny-set skipped with `continue`
    "deny_set_continue": """
        import importlib

        ALL = ("alpha", "beta", "gamma")
        DISABLED = frozenset({"gamma"})

        def register():
            for backend in ALL:
                if backend in DISABLED:
                    continue
                importlib.import_module("p.backends." + backend)
        """,
    # a dict comprehension of names, imported over its values()
    "dict_comprehension_values": """
        import importlib

        MODULES = {b: f"p.backends.{b}" for b in ["alpha", "beta", "gamma"] if b != "gamma"}

        def register():
            for name in MODULES.values():
                importlib.import_module(name)
        """,
    # a generator function yielding the names (skipping one with continue), imported with __import__
    "generator_function": """
        ALL = ("alpha", "beta", "gamma")

        def _modules():
            for backend in ALL:
                if backend == "gamma":
                    continue
                yield "{0}.backends.{1}".format(__package__, backend)

        def register():
            for name in _modules():
                __import__(name)
        """,
    # a registry module-level code fills: records a decorator factory appends (keyword-only
    # arguments, a NamedTuple), entries a registering call stores, names a plain decorator makes
    "decorator_factory_records": """
        import importlib
        from typing import NamedTuple

        class Backend(NamedTuple):
            module: str
            priority: int = 0

        _BACKENDS = []

        def backend(*, module, priority=0):
            def deco(cls):
                _BACKENDS.append(Backend(module=module, priority=priority))
                return cls
            return deco

        @backend(module="p.backends.alpha")
        class Alpha:
            pass

        @backend(module="p.backends.beta", priority=1)
        class Beta:
            pass

        def register():
            for spec in _BACKENDS:
                importlib.import_module(spec.module)
        """,
    "registering_calls": """
        import importlib

        _TABLE = {}

        def add(key, module):
            _TABLE[key] = module

        add("a", "p.backends.alpha")
        add(key="b", module="p.backends.beta")

        def register():
            for module in _TABLE.values():
                importlib.import_module(module)
        """,
    "plain_decorator_function_names": """
        import importlib

        PREFIX = "p.backends."
        _NAMES = []

        def backend(fn):
            _NAMES.append(PREFIX + fn.__name__)
            return fn

        @backend
        def alpha():
            pass

        @backend
        def beta():
            pass

        def register():
            for name in _NAMES:
                importlib.import_module(name)
        """,
    # string.Template substituted with a keyword, a mapping, or safe_substitute (F25 variant z1)
    "template_keyword": """
        import importlib
        from string import Template

        MODULE = Template("p.backends.${backend}")

        def register():
            for backend in ("alpha", "beta"):
                importlib.import_module(MODULE.substitute(backend=backend))
        """,
    "template_mapping": """
        import importlib
        import string

        def register():
            for backend in ["alpha", "beta"]:
                importlib.import_module(string.Template("$package.backends.$backend").substitute({"package": "p", "backend": backend}))
        """,
    "template_safe_substitute": """
        import importlib
        from string import Template

        MODULE = Template("p.backends.${backend}")
        SETTINGS = {"backend": "alpha"}

        def register():
            importlib.import_module(MODULE.safe_substitute(SETTINGS))
            importlib.import_module(MODULE.safe_substitute(SETTINGS, backend="beta"))
        """,
    # a class constant read through self in a method (F22 variant z1), and pkgutil.resolve_name
    # importing the module part of "pkg.mod:attr" or the longest module prefix of "pkg.mod.attr"
    "class_constant_through_self": """
        import importlib
        from typing import ClassVar, Tuple

        class Installer:
            MODULES: ClassVar[Tuple[str, ...]] = ("p.backends.alpha", "p.backends.beta")

            def install(self):
                for name in self.MODULES:
                    importlib.import_module(name)

        def register():
            Installer().install()
        """,
    "resolve_name_colon": """
        import pkgutil

        SPECS = ["p.backends.alpha:apply_torchao_config_to_model", "p.backends.beta:apply_torchao_config_to_model"]

        def register():
            for spec in SPECS:
                module_name, _, attr = spec.partition(":")
                pkgutil.resolve_name(f"{module_name}:{attr}")
        """,
    "resolve_name_dotted": """
        from pkgutil import resolve_name

        def register():
            for backend in ("alpha", "beta"):
                resolve_name("p.backends." + backend + ".apply_torchao_config_to_model")
        """,
    # file names listed by hand, the module name their stem (os.path.splitext, unpacked)
    "file_name_stems": """
        import importlib
        import os

        FILES = ["alpha.py", "beta.py"]

        def register():
            for filename in FILES:
                stem, _ = os.path.splitext(filename)
                importlib.import_module("p.backends." + stem)
        """,
    # "module.attr" targets, the module the part before the last dot (str.rpartition, unpacked)
    "dotted_targets_rpartition": """
        import importlib

        TARGETS = ("p.backends.alpha.make", "p.backends.beta.make")

        def register():
            for target in TARGETS:
                module_name, _, attr = target.rpartition(".")
                getattr(importlib.import_module(module_name), attr)
        """,
    # names with a suffix taken off, in the order a priority table gives (sorted with a key)
    "sorted_by_priority_removesuffix": """
        import importlib

        PRIORITY = {"beta_backend": 2, "alpha_backend": 1}

        def register():
            for name in sorted(PRIORITY, key=PRIORITY.get, reverse=True):
                importlib.import_module("p.backends." + name.removesuffix("_backend"))
        """,
    # a dict spread under a run-time choice holds the entries of either dict (fifteenth set F32-m3)
    "spread_of_a_run_time_choice": """
        import importlib
        import os

        BASE = {"alpha": "p.backends.alpha"}
        OPTIONAL = {"beta": "p.backends.beta"}

        def register():
            table = {**BASE, **(OPTIONAL if os.environ.get("P_BETA") else {})}
            for name, path in table.items():
                importlib.import_module(path)
        """,
    "spread_choosing_between_tables": """
        import importlib
        import sys

        def register():
            chosen = {**({"a": "alpha"} if sys.argv else {"b": "beta"}), "x": "alpha"}
            return [importlib.import_module("p.backends." + v) for v in chosen.values()]
        """,
    # a comprehension's condition runs for every value until one is false, whatever it returns
    # (fifteenth set F32-m2): a helper called in the filter, after a condition that stops gamma
    "filter_calls_a_helper": """
        import importlib

        def _load(name):
            importlib.import_module("p.backends." + name)
            return False

        def register():
            return [n for n in ("alpha", "beta") if _load(n)]
        """,
    "second_filter_after_a_false_one": """
        import importlib

        def _load(name):
            return importlib.import_module(f"p.backends.{name}") is None

        def register():
            return {n: n for n in ("alpha", "beta", "gamma") if n != "gamma" if _load(n)}
        """,
    "generator_filter_any": """
        import importlib

        def _missing(name):
            importlib.import_module(".".join(("p", "backends", name)))
            return None

        def register():
            return any(True for n in ["alpha", "beta"] if _missing(n))
        """,
    # a helper unpacking a table entry before it returns (sixteenth set F32-k2): partition, a split, a starred rest
    "helper_unpacks_partition": """
        import importlib

        SPECS = ("p.backends.alpha:make", "p.backends.beta:make")

        def _split(spec):
            module_name, _, attr = spec.partition(":")
            return module_name, attr

        def register():
            for spec in SPECS:
                name, attr = _split(spec)
                getattr(importlib.import_module(name), attr)
        """,
    "helper_unpacks_split_list": """
        import importlib

        def _module(spec):
            [root, kind, name] = spec.split("/")
            return f"{root}.{kind}.{name}"

        def register():
            importlib.import_module(_module("p/backends/alpha"))
            importlib.import_module(_module("p/backends/beta"))
        """,
    "helper_unpacks_starred": """
        import importlib

        def _module(dotted):
            *package, leaf = dotted.split(".")
            return ".".join(package + ["backends", leaf])

        def register():
            for dotted in ("p.alpha", "p.beta"):
                importlib.import_module(_module(dotted))
        """,
    # the one backend a priority table ranks first and last: max / min with a key (sixteenth set F25-k1),
    # with a lambda key and a default, and of positional arguments
    "max_min_table_get": """
        import importlib

        PRIORITY = {"alpha": 3, "gamma": 2, "beta": 1}
        FMT = "{pkg}.backends.{name}"

        def register():
            importlib.import_module(FMT.format(pkg=__name__, name=max(PRIORITY, key=PRIORITY.get)))
            importlib.import_module(FMT.format(pkg=__name__, name=min(PRIORITY, key=PRIORITY.get)))
        """,
    "max_lambda_key_default": """
        import importlib

        RANK = {"alpha": 1, "beta": 1, "gamma": 0}

        def register():
            for group in (["alpha", "beta"], ["beta", "gamma"], []):
                importlib.import_module("p.backends." + max(group, key=lambda n: RANK[n], default="beta"))
        """,
    "min_of_arguments": """
        import importlib

        def register():
            importlib.import_module(f"p.backends.{min('gamma', 'alpha')}")
            importlib.import_module(f"p.backends.{max('beta', 'alpha')}")
        """,
    # printf-style formatting with a mapping over itertools.chain of a list and a tuple (F25 variant u1)
    "percent_mapping_over_chain": """
        import importlib
        import itertools

        FIRST = ["alpha"]
        MORE = ("beta",)
        TEMPLATE = "%(root)s.backends.%(name)s"

        def register():
            for name in itertools.chain(FIRST, MORE):
                importlib.import_module(TEMPLATE % {"root": __name__, "name": name})
        """,
    # lazy loaders (functools.partial of import_module) built for every backend, only some called
    # (F25 variant u2): from a dict, held in a local, from a list
    "partial_loaders_dict": """
        import functools
        import importlib

        LOADERS = {b: functools.partial(importlib.import_module, f"p.backends.{b}") for b in ("alpha", "beta", "gamma")}

        def register():
            for b in ("alpha", "beta"):
                LOADERS[b]()
        """,
    "partial_loader_local": """
        from functools import partial
        from importlib import import_module

        def register():
            for b in ("alpha", "beta"):
                load = partial(import_module, "p.backends." + b)
                load()
            partial(import_module, "p.backends.gamma")
        """,
    "partial_loaders_list": """
        import functools
        import importlib

        ENABLED = ["alpha", "beta"]

        def register():
            for load in [functools.partial(importlib.import_module, name=f"p.backends.{b}") for b in ENABLED]:
                load()
        """,
    # the members of a plugin enum, iterated (F22/F25 variants v1): `.value` with format_map,
    # a str mix-in's value in a comprehension, `.name` with format keywords
    "enum_members_format_map": """
        import enum
        import importlib

        TEMPLATE = "{package}.backends.{backend}"

        class Backend(enum.Enum):
            ALPHA = "alpha"
            BETA = "beta"

        def register():
            for backend in Backend:
                importlib.import_module(TEMPLATE.format_map({"package": __name__, "backend": backend.value}))
        """,
    "str_enum_comprehension": """
        import enum
        import importlib

        class Module(str, enum.Enum):
            ALPHA = "p.backends.alpha"
            BETA = "p.backends.beta"

        def register():
            return [importlib.import_module(m.value) for m in Module]
        """,
    "enum_names_format_keywords": """
        from enum import Enum
        from importlib import import_module

        class Backend(Enum):
            alpha = 1
            beta = 2

        def register():
            for backend in list(Backend):
                import_module("{root}.backends.{name}".format(root="p", name=backend.name))
        """,
    # classes registered by their base's __init_subclass__ (F22 variant u1): into a class
    # attribute through the base's name or through cls, or into a module dict
    "init_subclass_base_attribute": """
        import importlib
        from typing import ClassVar

        class Patch:
            target: ClassVar[str]
            registry: ClassVar[list] = []

            def __init_subclass__(cls, **kwargs):
                super().__init_subclass__(**kwargs)
                Patch.registry.append(cls)

        class Alpha(Patch):
            target = "p.backends.alpha"

        class Beta(Patch):
            target = "p.backends.beta"

        def register():
            for patch in Patch.registry:
                importlib.import_module(patch.target)
        """,
    "init_subclass_through_cls": """
        from importlib import import_module

        class Patch:
            _all = []

            def __init_subclass__(cls):
                cls._all.append(cls)

            @classmethod
            def apply_all(cls):
                for sub in cls._all:
                    import_module("p.backends." + sub.NAME)

        class Alpha(Patch):
            NAME = "alpha"

        class Beta(Alpha):
            NAME = "beta"

        def register():
            Patch.apply_all()
        """,
    "init_subclass_module_dict": """
        import importlib

        PATCHES = {}

        class Patch:
            def __init_subclass__(cls, module, **kwargs):
                super().__init_subclass__(**kwargs)
                PATCHES[cls.__name__] = module

        class Alpha(Patch, module="p.backends.alpha"):
            pass

        class Beta(Patch, module="p.backends.beta"):
            pass

        def register():
            for module in PATCHES.values():
                importlib.import_module(module)
        """,
    # Python's iterator builtins over folded sequences (F34 variant t2): parallel tuples zipped,
    # enumerate with a start, reversed, itertools.compress by a tuple of flags
    "zip_parallel_tuples": """
        import importlib

        NAMES = ("alpha", "beta", "gamma")
        ENABLED = (True, True, False)

        def register():
            for name, enabled in zip(NAMES, ENABLED):
                if enabled:
                    importlib.import_module(f"p.backends.{name}")
        """,
    "enumerate_start": """
        import importlib

        def register():
            for i, name in enumerate(["alpha", "beta", "gamma"], start=1):
                if i < 3:
                    importlib.import_module("p.backends." + name)
        """,
    "reversed_then_compress": """
        import importlib
        import itertools

        def register():
            for name in itertools.compress(reversed(("gamma", "beta", "alpha")), (0, 1, 1)[::-1]):
                importlib.import_module("p.backends.%s" % name)
        """,
    # a generator that binds names before it yields (F22 variant t1): a text table parsed line by
    # line, a name built from a prefix, a pair unpacked
    "generator_parses_a_text_table": '''
        import importlib

        TABLE = """
        alpha   on
        beta    on
        """

        def _rows():
            for line in TABLE.strip().splitlines():
                name, state = line.split()
                yield name

        def register():
            for name in _rows():
                importlib.import_module("p.backends." + name)
        ''',
    "generator_builds_names": """
        import importlib

        def _modules(prefix="p.backends"):
            for short in ("alpha", "beta"):
                full = f"{prefix}.{short}"
                yield full

        def register():
            return [importlib.import_module(m) for m in _modules()]
        """,
    "generator_unpacks_pairs": """
        import importlib

        ENABLED = {"alpha": True, "beta": True, "gamma": False}

        def _enabled():
            for pair in ENABLED.items():
                name, on = pair
                if on:
                    yield name

        def register():
            for name in _enabled():
                importlib.import_module(f"p.backends.{name}")
        """,
    # a helper derives the module from a table entry its parameter keys (F22 variant t2): the
    # entry unpacked from a split, read whole, or partitioned; gamma's entry is never asked for
    # a helper's `*args` / `**kwargs` hold what its callers pass (F34 variant p2's `_dotted(*parts)`), a folded list
    # spread into one too
    "helper_varargs_join": """
        import importlib

        _PREFIX = ("p", "backends")

        def _dotted(*parts):
            return ".".join(_PREFIX + parts)

        def register():
            importlib.import_module(_dotted("alpha"))
            importlib.import_module(_dotted("beta"))
        """,
    "helper_kwargs_format": """
        import importlib

        def _module(**where):
            return "{package}.backends.{name}".format(**where)

        def register():
            for name in ("alpha", "beta"):
                importlib.import_module(_module(package=__package__, name=name))
        """,
    "spread_into_helper": """
        import importlib

        def _join(package, *rest):
            return ".".join([package, *rest])

        TARGETS = [["p", "backends", "alpha"], ["p", "backends", "beta"]]

        def register():
            for parts in TARGETS:
                importlib.import_module(_join(*parts))
        """,
    # a name built by augmented assignment (F06 variant o1): `+=` of a str, of an f-string, `%=`
    "augmented_assignment": """
        import importlib

        def register():
            for name in ("alpha", "beta"):
                module = __package__
                module += ".backends."
                module += name
                importlib.import_module(module)
        """,
    "augmented_fstring": """
        import importlib

        def register():
            first = "p"
            first += f".backends.{'alpha'}"
            second = "p.backends"
            second += f".{'beta'}"
            importlib.import_module(first)
            importlib.import_module(second)
        """,
    "augmented_percent": """
        import importlib

        def register():
            for name in ["alpha", "beta"]:
                template = "p.backends.%s"
                template %= name
                importlib.import_module(template)
        """,
    # a string's method kept to call later (F06 variant o2): `.format`, `.join`, `.replace`
    "bound_format": """
        import importlib

        _backend = "p.backends.{}".format

        def register():
            importlib.import_module(_backend("alpha"))
            importlib.import_module(_backend("beta"))
        """,
    "bound_join_local": """
        import importlib

        def register():
            dotted = ".".join
            for name in ("alpha", "beta"):
                importlib.import_module(dotted(["p", "backends", name]))
        """,
    "bound_replace": """
        import importlib

        _NAME = "p.backends.NAME"

        def register():
            fill = _NAME.replace
            importlib.import_module(fill("NAME", "alpha"))
            importlib.import_module(fill("NAME", "beta"))
        """,
    # the members of a typing.Literal (F25 variant o1): get_args, typing.get_args, __args__
    "literal_get_args": """
        import importlib
        from typing import Literal, get_args

        Backend = Literal["alpha", "beta"]

        def register():
            for name in get_args(Backend):
                importlib.import_module("%s.backends.%s" % (__name__, name))
        """,
    "literal_typing_get_args": """
        import importlib
        import typing

        def register():
            for name in typing.get_args(typing.Literal["alpha", "beta"]):
                importlib.import_module(f"p.backends.{name}")
        """,
    "literal_dunder_args": """
        import importlib
        from typing import Literal

        Backend = Literal["beta", "alpha"]

        def register():
            return [importlib.import_module("p.backends." + name) for name in Backend.__args__]
        """,
    # a helper longer than one return, run on the folded argument (F22 variant o1): `match` cases, an if/elif
    # chain, a name bound then returned
    "helper_match_cases": """
        import importlib

        def _module(kind):
            match kind:
                case "fast" | "small":
                    return "p.backends.alpha"
                case "paged":
                    return "p.backends.beta"
                case _:
                    raise ValueError(kind)

        def register():
            for kind in ("fast", "paged"):
                importlib.import_module(_module(kind))
        """,
    "helper_if_elif_chain": """
        import importlib

        def _module(kind):
            \"\"\"Which backend serves a kind.\"\"\"
            if kind == "fast":
                return "p.backends.alpha"
            elif kind in ("paged", "blocked"):
                return "p.backends.beta"
            raise ValueError(kind)

        def register():
            importlib.import_module(_module("fast"))
            importlib.import_module(_module("blocked"))
        """,
    "helper_binds_then_returns": """
        import importlib

        def _module(name, enabled=True):
            path = "p.backends." + name
            if not enabled:
                return None
            return path

        def register():
            for name in ("alpha", "beta", "gamma"):
                module = _module(name, enabled=name != "gamma")
                if module is not None:
                    importlib.import_module(module)
        """,
    # importlib's spec recipe (F03 variant p2): find_spec + module_from_spec + exec_module, aliased names, LazyLoader
    "spec_exec_module": """
        import importlib.util

        def register():
            for name in ("alpha", "beta"):
                spec = importlib.util.find_spec(f"p.backends.{name}")
                module = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(module)
        """,
    "spec_exec_module_aliased": """
        from importlib.util import find_spec, module_from_spec

        _MODULES = ["p.backends.alpha", "p.backends.beta"]

        def register():
            for name in _MODULES:
                spec = find_spec(name)
                spec.loader.exec_module(module_from_spec(spec))
        """,
    "lazy_loader_recipe": """
        import importlib.util

        def register():
            for name in ("p.backends.alpha", "p.backends.beta"):
                spec = importlib.util.find_spec(name)
                loader = importlib.util.LazyLoader(spec.loader)
                spec.loader = loader
                module = importlib.util.module_from_spec(spec)
                loader.exec_module(module)
        """,
    "helper_unpacks_a_table_entry": """
        import importlib
        import operator

        KERNELS = {"a": "p.backends.alpha:f", "b": "p.backends.beta:f", "g": "p.backends.gamma:f"}

        def resolve(key):
            module_name, attr = KERNELS[key].split(":", 1)
            return operator.attrgetter(attr)(importlib.import_module(module_name))

        def register():
            for key in ("a", "b"):
                resolve(key)
        """,
    "helper_reads_a_table_entry": """
        import importlib

        MODULES = {"a": "alpha", "b": "beta", "g": "gamma"}

        def load(key, package="p.backends"):
            name = package + "." + MODULES[key]
            return importlib.import_module(name)

        def register():
            load("a")
            load(key="b")
        """,
    "helper_partitions_a_table_entry": """
        from importlib import import_module

        TABLE = [("a", "p.backends.alpha:f"), ("b", "p.backends.beta:f"), ("g", "p.backends.gamma:f")]

        def resolve(spec):
            module_name, _, attr = spec.partition(":")
            return getattr(import_module(module_name), attr)

        def register():
            return [resolve(spec) for key, spec in TABLE if key != "g"]
        """,
    # a record's property names the module, and a method of the record imports it (F25 variant
    # s1, F34 variant s1)
    "record_property": """
        import importlib
        from dataclasses import dataclass

        @dataclass(frozen=True)
        class Backend:
            name: str

            @property
            def module(self):
                return f"{__name__}.backends.{self.name}"

        BACKENDS = (Backend("alpha"), Backend("beta"))

        def register():
            for backend in BACKENDS:
                importlib.import_module(backend.module)
        """,
    "record_method_imports": """
        import importlib
        from typing import NamedTuple

        class Backend(NamedTuple):
            name: str

            def load(self):
                return importlib.import_module("p.backends." + self.name)

        def register():
            for backend in [Backend("alpha"), Backend(name="beta")]:
                backend.load()
        """,
    # the names as products and ordered tables (twenty-third set F25-c1, F25-c2): itertools.product
    # of two tuples, product with repeat=, an OrderedDict's keys in a %-formatted name
    "itertools_product": """
        import importlib
        import itertools

        ROOT, BACKENDS, PARTS = "p", ("alpha", "beta"), ("backends",)

        def register():
            for part, backend in itertools.product(PARTS, BACKENDS):
                importlib.import_module(".".join((ROOT, part, backend)))
        """,
    "product_with_repeat": """
        import importlib
        from itertools import product

        def register():
            for first, second in product(("alpha", "beta"), repeat=2):
                if first == second:
                    importlib.import_module(f"p.backends.{first}")
        """,
    # fields of a folded record read inside a format string (twenty-eighth set F25-h1)
    "format_of_a_record_field": """
        import importlib
        from dataclasses import dataclass


        @dataclass(frozen=True)
        class Layout:
            root: str
            leaf: str = "impl"


        _LAYOUT = Layout(root="p.backends")


        def register():
            for name in ("alpha", "beta"):
                importlib.import_module("{layout.root}.{name}".format(layout=_LAYOUT, name=name))
        """,
    "format_positional_record": """
        import importlib
        from typing import NamedTuple


        class Layout(NamedTuple):
            root: str


        def register():
            for name in ["beta", "alpha"]:
                importlib.import_module("{0.root}.{1}".format(Layout("p.backends"), name))
        """,
    "format_of_a_nested_record": """
        import importlib
        from typing import NamedTuple


        class Layout(NamedTuple):
            package: str
            sub: str


        class Config(NamedTuple):
            layout: Layout


        CONFIG = Config(Layout("p", "backends"))


        def register():
            return [importlib.import_module("{c.layout.package}.{c.layout.sub}.{n}".format(c=CONFIG, n=n)) for n in ("alpha", "beta")]
        """,
    "ordered_dict_percent": """
        import collections
        import importlib

        PKG = "p.backends"
        BACKENDS = collections.OrderedDict([("alpha", "baseline"), ("beta", "fused")])

        def register():
            for name, what in BACKENDS.items():
                importlib.import_module("%s.%s" % (PKG, name))
        """,
    # a table transposed with zip(*rows) (thirtieth set F25-j1): unpacked at module level, a pair of
    # columns zipped back into a dict, and a starred list of lists handed to itertools.chain
    "zip_star_module_unpack": """
        import importlib

        TABLE = (("alpha", "attention"), ("beta", "sampler"))
        NAMES, FEATURES = zip(*TABLE)

        def register():
            for name in NAMES:
                importlib.import_module(f"{__name__}.backends.{name}")
        """,
    "dict_of_zipped_columns": """
        import importlib

        COLUMNS = (["alpha", "beta"], ["attention", "sampler"])

        def register():
            for name, feature in dict(zip(*COLUMNS)).items():
                importlib.import_module("p.backends." + name)
        """,
    "chain_of_starred_groups": """
        import importlib
        import itertools

        GROUPS = [["alpha"], ["beta"]]

        def register():
            for name in itertools.chain(*GROUPS):
                importlib.import_module("p.backends.%s" % name)
        """,
}


@pytest.mark.parametrize("spelling", sorted(NAMES))
def test_modules_named_from_folded_constants_are_live_and_no_others(upstreams, tmp_path, spelling):
    _, new = upstreams
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"p": "p:register"}), "p/__init__.py": NAMES[spelling],
                             "p/backends/__init__.py": "", **{f"p/backends/{b}.py": BACKEND for b in ("alpha", "beta", "gamma")}})
    code, doc = check(root, new)
    assert (_live(doc, "p/backends/alpha.py"), _live(doc, "p/backends/beta.py"), _live(doc, "p/backends/gamma.py")) == (True, True, False)
    assert code == 1


# the module names an object keeps from its constructor's arguments, read in one of its methods
INSTANCE_NAMES = {
    "callable_object": """
        import importlib

        class Loader:
            def __init__(self, module_path, attr=None):
                self.module_path = module_path
                self.attr = attr

            def __call__(self):
                return importlib.import_module(self.module_path)

        LOADERS = [Loader("p.backends.alpha"), Loader(module_path="p.backends.beta", attr="x")]

        def register():
            for load in LOADERS:
                load()
        """,
    "method_on_built_name": """
        from importlib import import_module

        class Backend:
            def __init__(self, name, package="p.backends"):
                self.module = f"{package}.{name}"

            def load(self):
                return import_module(self.module)

        def register():
            for backend in (Backend("alpha"), Backend("beta")):
                backend.load()
        """,
    "subclass_without_init": """
        import importlib

        class Base:
            def __init__(self, name):
                self.name = name

            def apply(self):
                importlib.import_module("p.backends." + self.name)

        class Fast(Base):
            pass

        def register():
            Base("alpha").apply()
            Fast("beta").apply()
        """,
}


@pytest.mark.parametrize("spelling", sorted(INSTANCE_NAMES))
def test_modules_named_by_an_objects_constructor_arguments_are_live_and_no_others(upstreams, tmp_path, spelling):
    _, new = upstreams
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"p": "p:register"}), "p/__init__.py": INSTANCE_NAMES[spelling],
                             "p/backends/__init__.py": "", **{f"p/backends/{b}.py": BACKEND for b in ("alpha", "beta", "gamma")}})
    code, doc = check(root, new)
    assert (_live(doc, "p/backends/alpha.py"), _live(doc, "p/backends/beta.py"), _live(doc, "p/backends/gamma.py")) == (True, True, False)
    assert code == 1


def test_an_attribute_another_method_rewrites_names_no_module_from_the_constructor(upstreams, tmp_path):
    _, new = upstreams
    source = INSTANCE_NAMES["callable_object"].replace(
        "            def __call__(self):", "            def retarget(self, other):\n                self.module_path = other\n\n            def __call__(self):")
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"p": "p:register"}), "p/__init__.py": source,
                             "p/backends/__init__.py": "", **{f"p/backends/{b}.py": BACKEND for b in ("alpha", "beta", "gamma")}})
    _, doc = check(root, new)
    assert not _live(doc, "p/backends/alpha.py") and not _live(doc, "p/backends/gamma.py")


# ---------------------------------------------------------------- a patch through sys.modules
PATCHES = {
    # the owner chosen by a presence test in a conditional expression, then tested `is None`
    # (twenty-third set F32-c1), and modules kept because they are loaded (F32-c2): a keys view
    # intersected with sys.modules', a comprehension filtered on `in sys.modules`
    "conditional_expression_on_presence": """
        import sys

        NAME = "sglang.srt.layers.torchao_utils"

        def register():
            owner = sys.modules[NAME] if NAME in sys.modules else None
            if owner is None:
                return
            setattr(owner, "apply_torchao_config_to_model", lambda model, *a, **k: model)
        """,
    "keys_view_intersection": """
        import sys

        TABLE = {"sglang.srt.layers.torchao_utils": {"apply_torchao_config_to_model": lambda model, *a, **k: model}}

        def register():
            for name in sorted(TABLE.keys() & sys.modules.keys()):
                vars(sys.modules[name]).update(TABLE[name])
        """,
    "comprehension_of_loaded_names": """
        import sys

        NAMES = ["sglang.srt.layers.torchao_utils"]

        def register():
            for name in [n for n in NAMES if n in sys.modules]:
                sys.modules[name].apply_torchao_config_to_model = lambda model, *a, **k: model
        """,
    # rows kept because their module is loaded (twenty-fifth set F32-e2): filter with a lambda on
    # the row's module, the same test as a comprehension of rows, filter with a lambda on names
    "filter_lambda_on_rows": """
        import sys

        _PATCHES = (("sglang.srt.layers.torchao_utils", "apply_torchao_config_to_model", lambda model, *a, **k: model),)

        def register():
            for module_name, attr, replacement in filter(lambda row: row[0] in sys.modules, _PATCHES):
                setattr(sys.modules[module_name], attr, replacement)
        """,
    "comprehension_of_loaded_rows": """
        import sys

        _PATCHES = [("sglang.srt.layers.torchao_utils", "apply_torchao_config_to_model")]

        def register():
            loaded = [row for row in _PATCHES if row[0] in sys.modules]
            for module_name, attr in loaded:
                setattr(sys.modules[module_name], attr, lambda model, *a, **k: model)
        """,
    "filter_lambda_on_names": """
        import sys

        NAMES = ["sglang.srt.layers.torchao_utils"]

        def register():
            for name in list(filter(lambda n: n in sys.modules, NAMES)):
                sys.modules[name].apply_torchao_config_to_model = lambda model, *a, **k: model
        """,
    # a walk over sys.modules itself, acting only on the names a table holds (twenty-fourth set
    # F32-d1, as SGLang's utils/common.py apply_module_patch walks): the table's names, each where loaded
    "walk_of_items_picking_by_get": """
        import sys

        _OVERRIDES = {"sglang.srt.layers.torchao_utils": {"apply_torchao_config_to_model": lambda model, *a, **k: model}}

        def register():
            for module_name, module in sys.modules.copy().items():
                overrides = _OVERRIDES.get(module_name)
                if not overrides:
                    continue
                for attr, replacement in overrides.items():
                    setattr(module, attr, replacement)
        """,
    "walk_of_names_skipping_others": """
        import sys

        TARGETS = ["sglang.srt.layers.torchao_utils"]

        def register():
            for name in list(sys.modules):
                if name not in TARGETS:
                    continue
                sys.modules[name].apply_torchao_config_to_model = lambda model, *a, **k: model
        """,
    "walk_of_items_under_a_membership_test": """
        import sys

        PATCHED = {"sglang.srt.layers.torchao_utils": "apply_torchao_config_to_model"}

        def register():
            for name, mod in list(sys.modules.items()):
                if name in PATCHED:
                    setattr(mod, PATCHED[name], lambda model, *a, **k: model)
        """,
    # a walk over the loaded modules themselves, kept by their __name__ (thirty-sixth set F32-r1):
    # a getattr with a default, the attribute in one `if`, a table of names
    "walk_of_values_skipping_by_name": """
        import sys

        _TORCHAO = "sglang.srt.layers.torchao_utils"

        def register():
            for module in list(sys.modules.values()):
                if getattr(module, "__name__", None) != _TORCHAO:
                    continue
                module.apply_torchao_config_to_model = lambda model, *a, **k: model
                return True
            return False
        """,
    "walk_of_values_under_a_name_test": """
        import sys

        def register():
            for module in sys.modules.copy().values():
                if module.__name__ == "sglang.srt.layers.torchao_utils":
                    setattr(module, "apply_torchao_config_to_model", lambda model, *a, **k: model)
        """,
    "walk_of_values_in_a_table": """
        import sys

        _PATCHED = ("sglang.srt.layers.torchao_utils",)

        def register():
            for module in tuple(sys.modules.values()):
                if getattr(module, "__name__", "") in _PATCHED:
                    module.apply_torchao_config_to_model = lambda model, *a, **k: model
        """,
    "walk_of_items_skipping_one_name": """
        import sys

        def register():
            for name, module in list(sys.modules.items()):
                if name != "sglang.srt.layers.torchao_utils":
                    continue
                module.apply_torchao_config_to_model = lambda model, *a, **k: model
        """,
    "in_sys_modules": """
        import sys

        NAME = "sglang.srt.layers.torchao_utils"

        def register():
            if NAME in sys.modules:
                sys.modules[NAME].apply_torchao_config_to_model = lambda model, *a, **k: model
        """,
    # a stand-in default where the module is not loaded (F32 variant p1): the write lands on it, nothing raises
    "get_with_stand_in_default": """
        import sys
        import types

        _NOT_LOADED = types.ModuleType("not_loaded")

        def register():
            target = sys.modules.get("sglang.srt.layers.torchao_utils", _NOT_LOADED)
            target.apply_torchao_config_to_model = lambda model, *a, **k: model
        """,
    "setattr_on_get_with_default_inline": """
        import sys
        from types import SimpleNamespace

        NAME = "sglang.srt.layers.torchao_utils"

        def register():
            setattr(sys.modules.get(NAME, SimpleNamespace()), "apply_torchao_config_to_model", lambda model, *a, **k: model)
        """,
    "get_or_stand_in": """
        import sys

        class _Nowhere:
            pass

        def register():
            mod = sys.modules.get("sglang.srt.layers.torchao_utils") or _Nowhere
            mod.apply_torchao_config_to_model = lambda model, *a, **k: model
        """,
    # the loaded modules gathered first (F32 variant q1): a dict comprehension filtered by `in sys.modules`, its .get
    "dict_of_loaded_modules": """
        import sys

        _NAMES = ("sglang.srt.layers.torchao_utils",)

        def register():
            loaded = {m: sys.modules[m] for m in _NAMES if m in sys.modules}
            for name in _NAMES:
                mod = loaded.get(name)
                if mod is None:
                    continue
                mod.apply_torchao_config_to_model = lambda model, *a, **k: model
        """,
    "dict_of_loaded_modules_walrus": """
        import sys

        def register():
            loaded = {n: sys.modules[n] for n in ["sglang.srt.layers.torchao_utils"] if n in sys.modules}
            if (mod := loaded.get("sglang.srt.layers.torchao_utils")) is not None:
                setattr(mod, "apply_torchao_config_to_model", lambda model, *a, **k: model)
        """,
    "dict_of_loaded_modules_rows": """
        import sys

        _ROWS = [("sglang.srt.layers.torchao_utils", "apply_torchao_config_to_model")]

        def register():
            loaded = {mod: sys.modules[mod] for mod, _ in _ROWS if mod in sys.modules}
            for mod_name, attr in _ROWS:
                found = loaded.get(mod_name, None)
                if found is not None:
                    setattr(found, attr, lambda model, *a, **k: model)
        """,
    "walrus_get": """
        import sys

        def register():
            if (mod := sys.modules.get("sglang.srt.layers.torchao_utils")) is not None:
                setattr(mod, "apply_torchao_config_to_model", lambda model, *a, **k: model)
        """,
    "aliased_modules": """
        from sys import modules as loaded

        def register():
            mod = loaded.get("sglang.srt.layers.torchao_utils")
            if mod is not None:
                mod.apply_torchao_config_to_model = lambda model, *a, **k: model
        """,
    # the KeyError of sys.modules[N] caught with an exit (F32 variant w1)
    "subscript_key_error": """
        import sys

        def register():
            try:
                mod = sys.modules["sglang.srt.layers.torchao_utils"]
            except KeyError:
                return
            setattr(mod, "apply_torchao_config_to_model", lambda model, *a, **k: model)
        """,
    # a helper taking the module's name, guarding on sys.modules (F32 variant w7): the pair is
    # handed to it; what a missing target does is its body's (not certain)
    "helper_taking_the_module_name": """
        import sys

        def _patch_if_loaded(name, attr, fn):
            module = sys.modules.get(name)
            if module is None or not hasattr(module, attr):
                return False
            vars(module)[attr] = fn
            return True

        def register():
            _patch_if_loaded("sglang.srt.layers.torchao_utils", "apply_torchao_config_to_model", lambda model, *a, **k: model)
        """,
    # import_module in the try, the ImportError caught with an exit (F32 variant w2)
    "import_module_import_error": """
        import importlib

        def register():
            try:
                mod = importlib.import_module("sglang.srt.layers.torchao_utils")
            except ImportError:
                return
            mod.__dict__["apply_torchao_config_to_model"] = lambda model, *a, **k: model
        """,
    "subscript_lookup_error_loop": """
        import sys

        def register():
            for name in ["sglang.srt.layers.torchao_utils"]:
                try:
                    mod = sys.modules[name]
                except LookupError:
                    continue
                mod.apply_torchao_config_to_model = lambda model, *a, **k: model
        """,
    # the module object looked up by the caller and handed to a helper (F32 variant t1): None
    # on a release without it, so the helper's own test of it leaves the patch unmade
    "module_object_passed_in": """
        import sys

        def _install(mod, fn):
            if mod is None:
                return False
            owner = mod
            setattr(owner, "apply_torchao_config_to_model", fn)
            return True

        def register():
            _install(sys.modules.get("sglang.srt.layers.torchao_utils"), lambda model, *a, **k: model)
        """,
    "module_object_passed_by_keyword": """
        import sys

        NAME = "sglang.srt.layers.torchao_utils"

        def _install(fn, mod=None):
            if mod is not None:
                setattr(mod, "apply_torchao_config_to_model", fn)

        def register():
            _install(fn=lambda model, *a, **k: model, mod=sys.modules.get(NAME))
        """,
    # a small patch manager (F32 variant v1): an object of (module, path, function) whose method
    # looks the module up, walks the path with getattr and sets the last name
    "patch_manager_object_walks_a_path": """
        import sys

        class Patch:
            def __init__(self, module, path, fn):
                self.module = module
                self.path = path
                self.fn = fn

            def apply(self):
                owner = sys.modules.get(self.module)
                if owner is None:
                    return
                names = self.path.split(".")
                for name in names[:-1]:
                    owner = getattr(owner, name)
                setattr(owner, names[-1], self.fn)

        def register():
            Patch("sglang.srt.layers.torchao_utils", "apply_torchao_config_to_model", lambda model, *a, **k: model).apply()
        """,
    "module_object_passed_by_a_method": """
        import sys

        class Installer:
            def apply(self, mod, attr, fn):
                if mod is None:
                    return
                setattr(mod, attr, fn)

        def register():
            Installer().apply(sys.modules.get("sglang.srt.layers.torchao_utils"), "apply_torchao_config_to_model", lambda model, *a, **k: model)
        """,
}


# the error getting the owner raises (sys.modules[m] KeyError; mock's import ImportError),
# caught around the patch itself (F32 variants y1, y2)
CAUGHT_PATCHES = {
    "suppress_key_error": """
        import contextlib
        import sys

        def register():
            with contextlib.suppress(KeyError):
                sys.modules["sglang.srt.layers.torchao_utils"].apply_torchao_config_to_model = lambda model, *a, **k: model
        """,
    # the builtin __import__ (F17 variant o1): the module named with a fromlist (keyword or positional), the
    # top-level package without one; its ImportError caught
    "dunder_import_fromlist": """
        def register():
            try:
                tao = __import__("sglang.srt.layers.torchao_utils", fromlist=["apply_torchao_config_to_model"])
                tao.apply_torchao_config_to_model = lambda model, *a, **k: model
            except ImportError:
                pass
        """,
    "dunder_import_positional_fromlist": """
        NAME = "sglang.srt.layers.torchao_utils"

        def register():
            try:
                setattr(__import__(NAME, globals(), locals(), ["x"], 0), "apply_torchao_config_to_model", lambda model, *a, **k: model)
            except (ImportError, AttributeError):
                return
        """,
    "dunder_import_top_package": """
        def register():
            try:
                __import__("sglang.srt.layers.torchao_utils").srt.layers.torchao_utils.apply_torchao_config_to_model = lambda m, *a, **k: m
            except Exception:
                pass
        """,
    "try_lookup_error_pass": """
        import sys

        TORCHAO = "sglang.srt.layers.torchao_utils"

        def register():
            try:
                setattr(sys.modules[TORCHAO], "apply_torchao_config_to_model", lambda model, *a, **k: model)
            except LookupError:
                pass
        """,
    "mock_patch_import_error": """
        from unittest import mock

        def register():
            try:
                mock.patch("sglang.srt.layers.torchao_utils.apply_torchao_config_to_model", lambda model, *a, **k: model).start()
            except (ImportError, AttributeError):
                pass
        """,
    "import_module_not_found": """
        import importlib

        def register():
            try:
                importlib.import_module("sglang.srt.layers.torchao_utils").apply_torchao_config_to_model = lambda model, *a, **k: model
            except ModuleNotFoundError:
                pass
        """,
    # pkgutil.resolve_name in the try, the rest after it only when it resolved (F34 kind, set 7)
    "resolve_name_continue": """
        import pkgutil

        def register():
            for spec in ["sglang.srt.layers.torchao_utils"]:
                try:
                    owner = pkgutil.resolve_name(spec)
                except (ImportError, AttributeError):
                    continue
                owner.apply_torchao_config_to_model = lambda model, *a, **k: model
        """,
    "resolve_name_return": """
        from pkgutil import resolve_name

        def register():
            try:
                owner = resolve_name("sglang.srt.layers.torchao_utils")
            except Exception:
                return
            setattr(owner, "apply_torchao_config_to_model", lambda model, *a, **k: model)
        """,
    # the owner an attribute of what sys.modules.get / import_module return, the AttributeError
    # of a gone submodule caught (F32 variant v2)
    "suppress_attribute_of_sys_modules_get": """
        import contextlib
        import sys

        def register():
            with contextlib.suppress(AttributeError):
                owner = sys.modules.get("sglang.srt.layers").torchao_utils
                owner.apply_torchao_config_to_model = lambda model, *a, **k: model
        """,
    "try_attribute_of_import_module": """
        import importlib

        def register():
            try:
                owner = importlib.import_module("sglang.srt.layers").torchao_utils
            except (ImportError, AttributeError):
                return
            setattr(owner, "apply_torchao_config_to_model", lambda model, *a, **k: model)
        """,
    "suppress_attribute_of_sys_modules_subscript": """
        from contextlib import suppress
        from sys import modules

        def register():
            with suppress(KeyError, AttributeError):
                modules["sglang.srt.layers"].torchao_utils.apply_torchao_config_to_model = lambda model, *a, **k: model
        """,
}
PATCHES.update(CAUGHT_PATCHES)


# the walk goes through a package that is there to a submodule that is not: getattr raises
# AttributeError (a module not imported is no attribute of its package), so the patch breaks
WALKS = {
    # the walk written in the function itself, its names folded (a loop whose body runs through
    # hands the last pass's `owner` to the code after it, as Python does), and a two-part walk
    "walk_in_the_function": """
        import sys

        def register():
            owner = sys.modules.get("sglang.srt.layers")
            if owner is None:
                return
            *parents, leaf = "torchao_utils.apply_torchao_config_to_model".split(".")
            for part in parents:
                owner = getattr(owner, part)
            setattr(owner, leaf, lambda model, *a, **k: model)
        """,
    "walk_over_a_constant_tuple": """
        import sys

        PATH = ("torchao_utils", "apply_torchao_config_to_model")

        def register():
            owner = sys.modules["sglang.srt.layers"]
            for part in PATH[:-1]:
                owner = getattr(owner, part)
            setattr(owner, PATH[-1], lambda model, *a, **k: model)
        """,
    # a record whose method walks "sub.attr" from a package (F32 variant v1), a helper doing the same
    "patch_manager_record_walks_a_path": """
        import sys
        from dataclasses import dataclass

        @dataclass(frozen=True)
        class ModulePatch:
            module: str
            attr_path: str
            replacement: object

            def apply(self):
                owner = sys.modules.get(self.module)
                if owner is None:
                    return False
                *parents, leaf = self.attr_path.split(".")
                for part in parents:
                    owner = getattr(owner, part)
                setattr(owner, leaf, self.replacement)
                return True

        PATCHES = (ModulePatch("sglang.srt.layers", "torchao_utils.apply_torchao_config_to_model", lambda model, *a, **k: model),)

        def register():
            for patch in PATCHES:
                patch.apply()
        """,
    "helper_walks_a_path": """
        import sys

        def _patch(module, path, fn):
            owner = sys.modules.get(module)
            if owner is None:
                return
            head, _, leaf = path.rpartition(".")
            for part in head.split("."):
                owner = getattr(owner, part)
            setattr(owner, leaf, fn)

        def register():
            _patch("sglang.srt.layers", "torchao_utils.apply_torchao_config_to_model", lambda model, *a, **k: model)
        """,
}


# the walk folded with functools.reduce (thirty-first set F06-k2): getattr over the parts from
# the module import_module gives, a lambda calling getattr, over a "module:qualname" spec split
WALKS |= {
    "reduce_getattr_from_import_module": """
        import functools
        import importlib

        def register():
            owner = functools.reduce(getattr, ["torchao_utils"], importlib.import_module("sglang.srt.layers"))
            setattr(owner, "apply_torchao_config_to_model", lambda model, *a, **k: model)
        """,
    "reduce_lambda_over_a_spec": """
        import importlib
        from functools import reduce

        SPEC = "sglang.srt.layers:torchao_utils.apply_torchao_config_to_model"

        def _lookup(spec):
            module, _, qualname = spec.partition(":")
            return reduce(lambda obj, part: getattr(obj, part), qualname.split("."), importlib.import_module(module))

        def register():
            owner_spec, _, name = SPEC.rpartition(".")
            setattr(_lookup(owner_spec), name, lambda model, *a, **k: model)
        """,
    "reduce_without_a_start": """
        import functools
        import sys

        def register():
            owner = functools.reduce(getattr, [sys.modules["sglang.srt.layers"], "torchao_utils"])
            owner.apply_torchao_config_to_model = lambda model, *a, **k: model
        """,
}


@pytest.mark.parametrize("spelling", sorted(WALKS))
def test_a_path_walked_from_a_package_to_a_gone_submodule_breaks(upstreams, tmp_path, spelling):
    _, new = upstreams
    code, doc = _check_init(tmp_path, new, WALKS[spelling])
    patch = by_target(doc["findings"])[GONE]
    assert (patch["status"], patch["breaking"]) == ("missing", True), patch
    assert code == 1


def test_a_module_object_handed_to_a_helper_that_does_not_test_it_breaks(upstreams, tmp_path):
    # the converse of module_object_passed_in: nothing tests what the caller hands over, so the
    # setattr on None (a module not loaded) raises AttributeError where the release lacks it
    _, new = upstreams
    code, doc = _check_init(tmp_path, new, """
import sys


def _install(mod, fn):
    setattr(mod, "apply_torchao_config_to_model", fn)


def register():
    _install(sys.modules.get("sglang.srt.layers.torchao_utils"), lambda model, *a, **k: model)
""")
    patch = by_target(doc["findings"])[GONE]
    assert (patch["status"], patch["breaking"]) == ("missing", True), patch
    assert code == 1


def test_resolve_name_caught_for_one_of_its_errors_only_still_breaks(upstreams, tmp_path):
    # pkgutil.resolve_name("a.b.c") raises AttributeError for a submodule that is gone: `except
    # ImportError` lets it through, so what follows is not guarded by it
    _, new = upstreams
    code, doc = _check_init(tmp_path, new, """
import pkgutil


def register():
    try:
        owner = pkgutil.resolve_name("sglang.srt.layers.torchao_utils")
    except ImportError:
        return
    owner.apply_torchao_config_to_model = lambda model, *a, **k: model
""")
    patch = by_target(doc["findings"])[GONE]
    assert patch["breaking"] and code == 1, patch


@pytest.mark.parametrize("handler", ["AttributeError", "TypeError"])
def test_a_handler_of_another_error_leaves_a_failing_owner_lookup_breaking(upstreams, tmp_path, handler):
    _, new = upstreams
    code, doc = _check_init(tmp_path, new, f"""
import contextlib
import sys


def register():
    with contextlib.suppress({handler}):
        sys.modules["sglang.srt.layers.torchao_utils"].apply_torchao_config_to_model = lambda model, *a, **k: model
""")
    patch = by_target(doc["findings"])[GONE]
    assert (patch["status"], patch["breaking"]) == ("missing", True) and code == 1, patch


def test_an_owner_lookup_raising_what_no_handler_takes_leaves_the_patch_breaking(upstreams, tmp_path):
    # the negative of suppress_attribute_of_sys_modules_get: a KeyError handler lets the
    # AttributeError through, so the patch line is reached only where the lookup works
    _, new = upstreams
    code, doc = _check_init(tmp_path, new, PATCHES["suppress_attribute_of_sys_modules_get"].replace("suppress(AttributeError)", "suppress(KeyError)"))
    patch = by_target(doc["findings"])[GONE]
    assert (patch["status"], patch["breaking"]) == ("missing", True) and code == 1, patch


# rows unpacked by a match statement (twenty-sixth set F22-f1): a mapping pattern with `str(x)`
# captures and a guard, a sequence pattern of a tuple row, a mapping with `**rest`: the captures
# hold the row's values, so the module imported and the attribute patched are known -- on the
# release without it, import_module fails (breaking) and the patch names its target
MATCHED = {
    "match_mapping_records": """
        import importlib

        SPECS = [{"module": "sglang.srt.layers.torchao_utils", "attr": "apply_torchao_config_to_model", "impl": lambda m, *a, **k: m}]

        def register():
            for spec in SPECS:
                match spec:
                    case {"module": str(path), "attr": str(attr), "impl": impl} if callable(impl):
                        pass
                    case _:
                        continue
                setattr(importlib.import_module(path), attr, impl)
        """,
    "match_sequence_rows": """
        import importlib

        ROWS = (("sglang.srt.layers.torchao_utils", "apply_torchao_config_to_model"),)

        def register():
            for row in ROWS:
                match row:
                    case (str(path), str(attr)):
                        setattr(importlib.import_module(path), attr, lambda m, *a, **k: m)
        """,
    "match_mapping_rest": """
        import importlib

        SPECS = [{"module": "sglang.srt.layers.torchao_utils", "attr": "apply_torchao_config_to_model", "owner": "ops"}]

        def register():
            for spec in SPECS:
                match spec:
                    case {"module": path, **rest}:
                        setattr(importlib.import_module(path), rest["attr"], lambda m, *a, **k: m)
        """,
}


@pytest.mark.parametrize("spelling", sorted(MATCHED))
def test_rows_a_match_statement_unpacks_name_the_patch(upstreams, tmp_path, spelling):
    old, new = upstreams
    code, doc = _check_init(tmp_path, old, MATCHED[spelling])
    assert by_target(doc["findings"])[GONE]["status"] == "ok" and code == 0, doc["findings"]
    code, doc = _check_init(tmp_path, new, MATCHED[spelling])
    assert by_target(doc["findings"])[GONE]["status"] == "missing", doc["findings"]
    assert by_target(doc["findings"])[TORCHAO]["breaking"] and code == 1, doc["findings"]


@pytest.mark.parametrize("spelling", sorted(PATCHES))
def test_a_patch_through_sys_modules_of_a_module_gone_never_happens(upstreams, tmp_path, spelling):
    _, new = upstreams
    code, doc = _check_init(tmp_path, new, PATCHES[spelling])
    patch = by_target(doc["findings"])[GONE]
    assert (patch["status"], patch["breaking"]) == ("missing", False), patch
    assert code == 0


def test_a_walk_over_sys_modules_by_prefix_names_no_module(upstreams, tmp_path):
    # no table picks the names: which modules the body patches is not known, none is guessed
    source = """
import sys


def register():
    for name, mod in sys.modules.copy().items():
        if not name.startswith("sglang.srt.layers."):
            continue
        if hasattr(mod, "apply_torchao_config_to_model"):
            mod.apply_torchao_config_to_model = lambda model, *a, **k: model
"""
    old, new = upstreams
    for upstream in (old, new):
        code, doc = _check_init(tmp_path, upstream, source)
        assert GONE not in by_target(doc["findings"]), doc["findings"]


def test_a_patch_on_sys_modules_get_with_a_none_default_breaks(upstreams, tmp_path):
    # a default of None is no stand-in: the write raises AttributeError on None
    source = """
import sys


def register():
    target = sys.modules.get("sglang.srt.layers.torchao_utils", None)
    target.apply_torchao_config_to_model = lambda model, *a, **k: model
"""
    code, doc = _check_init(tmp_path, upstreams[1], source)
    patch = by_target(doc["findings"])[GONE]
    assert (patch["status"], patch["breaking"]) == ("missing", True) and code == 1, patch


# ---------------------------------------------------------------- the branches of one expression
BRANCHES = {
    # (the plugin's function body, whether the missing member is read where it fails)
    "and": ("return hasattr(sampler, 'gone') and sampler.gone()", False),
    "ternary": ("return sampler.gone() if hasattr(sampler, 'gone') else None", False),
    "or_not": ("return not hasattr(sampler, 'gone') or sampler.gone()", False),
    "ternary_else": ("return None if hasattr(sampler, 'gone') else sampler.gone()", True),
    "runtime_ternary": ("return sampler.gone() if n == 0 else None", True),
}


@pytest.mark.parametrize("spelling", sorted(BRANCHES))
def test_a_read_in_a_branch_of_an_expression_runs_under_its_test(upstreams, tmp_path, spelling):
    _, new = upstreams
    body, breaks = BRANCHES[spelling]
    code, doc = _check_init(tmp_path, new, f"""
import sglang.srt.layers.sampler as sampler


def register(n=0):
    {body}
""")
    read = by_target(doc["findings"])["sglang.srt.layers.sampler.gone"]
    assert read["status"] == "missing" and read["breaking"] is breaks, read
    if spelling == "runtime_ternary":
        assert read["guard"]["condition"] == "n == 0" and read["guard"]["outcome"] == "runtime"
    assert code == (1 if breaks else 0)


# ---------------------------------------------------------------- methods bound by assignment
METHODS = {
    "def": "class XPlatform(SRTPlatform):\n    def get_mha_kv_pool_cls(self):\n        return None\n",
    "module_function": "def _pool(self):\n    return None\n\n\nclass XPlatform(SRTPlatform):\n    get_mha_kv_pool_cls = _pool\n",
    "lambda": "class XPlatform(SRTPlatform):\n    get_mha_kv_pool_cls = lambda self: None  # noqa: E731\n",
    "other_module": "from p.pools import pool\n\n\nclass XPlatform(SRTPlatform):\n    get_mha_kv_pool_cls = pool\n",
}


@pytest.mark.parametrize("spelling", sorted(METHODS))
def test_an_override_bound_by_assignment_is_judged_as_a_def(upstreams, tmp_path, spelling):
    _, new = upstreams
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(platforms={"x": "p:activate"}),
        "p/__init__.py": "def activate():\n    return 'p.platform.XPlatform'\n",
        "p/pools.py": "def pool(self):\n    return None\n",
        "p/platform.py": "from sglang.srt.platforms.interface import SRTPlatform\n\n\n" + METHODS[spelling],
    })
    code, doc = check(root, new)
    overrides = {f["target"]: f for f in doc["findings"] if f["kind"] == "override"}
    dropped = overrides["sglang.srt.platforms.interface.SRTPlatform.get_mha_kv_pool_cls"]
    assert dropped["status"] == "not_on_base" and dropped["live"], dropped


BASES = {
    "star_import": "from sglang.srt.platforms.interface import *  # noqa: F403\n\n\nclass XPlatform(SRTPlatform):  # noqa: F405\n",
    "module_alias": "import sglang.srt.platforms.interface as iface\n\n\nclass XPlatform(iface.SRTPlatform):\n",
    "plugin_star": "from p.bases import *  # noqa: F403\n\n\nclass XPlatform(Base):  # noqa: F405\n",
    # a compat import (F01 variant p2): the try's name where it resolves on this release, else the handler's
    "compat_try_resolves": ("try:\n    from sglang.srt.platforms.interface import SRTPlatform\nexcept ImportError:\n"
                            "    from p.bases import Base as SRTPlatform\n\n\nclass XPlatform(SRTPlatform):\n"),
    "compat_fallback_used": ("try:\n    from sglang.srt.platforms.gone_interface import SRTPlatform\nexcept (ImportError, AttributeError):\n"
                             "    from sglang.srt.platforms.interface import SRTPlatform\n\n\nclass XPlatform(SRTPlatform):\n"),
    "compat_module_not_found_alias": ("try:\n    import sglang.srt.platforms.gone_interface as iface\nexcept ModuleNotFoundError:\n"
                                      "    import sglang.srt.platforms.interface as iface\n\n\nclass XPlatform(iface.SRTPlatform):\n"),
}


@pytest.mark.parametrize("spelling", sorted(BASES))
def test_a_base_named_through_a_star_import_or_alias_is_upstreams(upstreams, tmp_path, spelling):
    _, new = upstreams
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(platforms={"x": "p:activate"}),
        "p/__init__.py": "def activate():\n    return 'p.platform.XPlatform'\n",
        "p/bases.py": "from sglang.srt.platforms.interface import SRTPlatform as Base\n",
        "p/platform.py": BASES[spelling] + "    def get_mha_kv_pool_cls(self):\n        return None\n",
    })
    code, doc = check(root, new)
    dropped = by_target(doc["findings"])["sglang.srt.platforms.interface.SRTPlatform.get_mha_kv_pool_cls"]
    assert (dropped["status"], dropped["live"]) == ("not_on_base", True) and code == 1, dropped


# ---------------------------------------------------------------- names of modules and classes
TARGETS = {
    "module_name": "import sglang.srt.layers.sampler as sampler_module\n\nTARGET = sampler_module.__name__ + '.Sampler.forward'\n",
    "class_module_qualname": "from sglang.srt.layers.sampler import Sampler\n\nTARGET = f'{Sampler.__module__}.{Sampler.__qualname__}.forward'\n",
    "class_constant": "class Targets:\n    SAMPLER = 'sglang.srt.layers.sampler.Sampler'\n\n\nclass More(Targets):\n    pass\n\n\nTARGET = More.SAMPLER + '.forward'\n",
    # a class constant built from the class body's own earlier names (its scope, not the module's)
    "class_body_chain": "class Targets:\n    MODULE = 'sglang.srt.layers.sampler'\n    SAMPLER = MODULE + '.Sampler'\n\n\nTARGET = Targets.SAMPLER + '.forward'\n",
    "class_body_fstring": "class Targets:\n    MODULE = 'sglang.srt.layers.sampler'\n    FORWARD: str = f'{MODULE}.Sampler.forward'\n\n\nTARGET = Targets.FORWARD\n",
    # str.format reading the name attributes itself (F06 variant r2)
    "format_positional_attributes": "from sglang.srt.layers.sampler import Sampler\n\nTARGET = '{0.__module__}.{0.__qualname__}.{1}'.format(Sampler, 'forward')\n",
    "format_keyword_attributes": "from sglang.srt.layers.sampler import Sampler\n\nTARGET = '{cls.__module__}.{cls.__name__}.forward'.format(cls=Sampler)\n",
    "format_module_name": "import sglang.srt.layers.sampler as sampler_module\n\nTARGET = '{m.__name__}.Sampler.{f}'.format(m=sampler_module, f='forward')\n",
    # %-formatting with named fields from a mapping: dict(T, k=v), a display spreading T
    "percent_dict_call": "_T = {'module': 'sglang.srt.layers.sampler'}\nTARGET = '%(module)s.Sampler.%(attr)s' % dict(_T, attr='forward')\n",
    "percent_spread_display": "_T = {'module': 'sglang.srt.layers.sampler'}\nTARGET = '%(module)s.%(cls)s.forward' % {**_T, 'cls': 'Sampler'}\n",
}


@pytest.mark.parametrize("spelling", sorted(TARGETS))
def test_a_hook_target_built_from_names_python_sets_is_evaluated(upstreams, tmp_path, spelling):
    _, new = upstreams
    code, doc = _check_init(tmp_path, new, f"""
from sglang.srt.plugins.hook_registry import HookRegistry, HookType

{TARGETS[spelling]}

def after(result, *args, **kwargs):
    return result


def register():
    HookRegistry.register(TARGET, after, HookType.AFTER)
""")
    hook = by_target(doc["findings"])["sglang.srt.layers.sampler.Sampler.forward"]
    assert hook["status"] == "ok" and code == 0, hook


# ---------------------------------------------------------------- the interpreter's version
PYTHON_GATES = {
    # (the gate around the import of a name the release dropped, whether it runs on Python >= 3.10)
    "at_least": ("if sys.version_info >= (3, 10):\n    {imp}\nelse:\n    apply_torchao_config_to_model = None\n", True),
    "flipped_sliced": ("if (3, 9) < sys.version_info[:2]:\n    {imp}\n", True),
    "else_branch": ("if sys.version_info < (3, 10):\n    apply_torchao_config_to_model = None\nelse:\n    {imp}\n", True),
    "never": ("if sys.version_info[:2] <= (3, 8):\n    {imp}\n", False),
    "some_interpreters": ("if sys.version_info >= (3, 12):\n    {imp}\n", None),
}


@pytest.mark.parametrize("spelling", sorted(PYTHON_GATES))
def test_an_interpreter_version_gate_is_decided_by_the_releases_requires_python(tmp_path_factory, tmp_path, spelling):
    # F07 variant r1: the release requires Python >= 3.10, so `>= (3, 10)` always holds where it runs
    _, new = upstream_pair(tmp_path_factory, new={"pyproject.toml": '[project]\nname = "sglang"\nrequires-python = ">=3.10"\n'})
    gate, runs = PYTHON_GATES[spelling]
    code, doc = _check_init(tmp_path, new, "import sys\n\n" + gate.format(imp=BACKEND.strip()) + "\n\ndef register():\n    pass\n")
    found = by_target(doc["findings"])[GONE]
    if runs is None:  # holds on 3.12 and later only: the gate is named, nothing is certain
        assert not found["breaking"] and found["guard"]["outcome"] == "undecided", found
    elif runs:
        assert found["breaking"] and found["live"] and code == 1, found
    else:
        assert not found["breaking"] and code == 0, found
    # a release that states no Requires-Python decides nothing
    _, silent = upstream_pair(tmp_path_factory)
    code, doc = _check_init(tmp_path / "silent", silent, "import sys\n\n" + gate.format(imp=BACKEND.strip()) + "\n\ndef register():\n    pass\n")
    assert not by_target(doc["findings"])[GONE]["breaking"], doc["findings"]


# ---------------------------------------------------------------- match statements as guards
CASES = {
    # (the function body around the import of a name the release dropped, whether it breaks, the guard's outcome)
    "or_pattern_on_data": ("match config.backend:\n        case 'ray' | 'mp':\n            {imp}\n        case _:\n            pass\n",
                           True, "runtime"),
    "class_pattern_with_guard": ("match config:\n        case dict() if config.get('x'):\n            {imp}\n", True, "runtime"),
    "other_release": ("match sglang.__version__:\n        case '0.9.0':\n            {imp}\n", False, "skipped"),
    "wildcard_after_other_release": ("match sglang.__version__:\n        case '0.9.0':\n            pass\n        case other:\n"
                                     "            {imp}\n", True, "runs"),
    # a tuple the match writes, item by item (twenty-third set V-c5): the wildcard after a case that
    # returns runs where that case's items do not all match; a sequence case of its own
    "wildcard_after_a_tuple_case": ("match (config.dtype, config.lens):\n        case ('bf16' | 'fp16', None):\n            return config\n"
                                    "        case _:\n            {imp}\n", True, "runtime"),
    "tuple_case": ("match (config.dtype, sglang.__version__):\n        case ('bf16', _):\n            {imp}\n", True, "runtime"),
    "tuple_case_of_another_release": ("match (config.dtype, sglang.__version__):\n        case (_, '0.9.0'):\n            {imp}\n",
                                      False, "skipped"),
}


@pytest.mark.parametrize("spelling", sorted(CASES))
def test_a_case_of_a_match_statement_runs_under_its_patterns_test(upstreams, tmp_path, spelling):
    # V variant r10: `case "a" | "b":` is `if x == "a" or x == "b":`, each earlier case's test negated
    _, new = upstreams
    body, breaks, outcome = CASES[spelling]
    code, doc = _check_init(tmp_path, new, "import sglang\n\n\ndef register(config=None):\n    " + body.format(imp=BACKEND.strip())
                            + "\n    return config\n")
    found = by_target(doc["findings"])[GONE]
    assert (found["breaking"], found["guard"]["outcome"]) == (breaks, outcome), found
    assert code == (1 if breaks else 0)
    if outcome == "runtime":
        assert "config" in found["guard"]["condition"], found["guard"]


# the release numbers as a tuple of ints compared with a tuple (fourteenth set F27-n3): a version
# test as `sglang.__version__ < "0.10.0"` is, however the tuple is made
RELEASE_TUPLES = {
    "generator_with_digit_test": ("tuple(int(p) for p in sglang.__version__.split('.')[:3] if p.isdigit())", "< (0, 10, 0)", False),
    "map_int": ("tuple(map(int, sglang.__version__.split('.')[:3]))", ">= (0, 10)", True),
    "list_comprehension_through_a_helper": ("_release(sglang.__version__)", "< (0, 10)", False),
    "older_bound_holds": ("tuple(map(int, sglang.__version__.split('.')))", "> (0, 9, 5)", True),
}


@pytest.mark.parametrize("spelling", sorted(RELEASE_TUPLES))
def test_a_release_tuple_compares_as_a_version(upstreams, tmp_path, spelling):
    _, new = upstreams  # 0.10.0, which dropped torchao_utils
    made, test, runs = RELEASE_TUPLES[spelling]
    code, doc = _check_init(tmp_path, new, "import sglang\n\n\ndef _release(v):\n    return [int(x) for x in v.split('.')]\n\n\n"
                            f"RELEASE = {made}\n\n\ndef register():\n    if RELEASE {test}:\n        {BACKEND.strip()}\n")
    found = by_target(doc["findings"])[GONE]
    assert (found["breaking"], found["guard"]["outcome"]) == (runs, "runs" if runs else "skipped"), found
    assert code == (1 if runs else 0)


# ---------------------------------------------------------------- the plugin's own entry-point group
OWN_GROUPS = {
    "load": "from importlib.metadata import entry_points\n\n\ndef register():\n    for ep in entry_points(group='p.packs'):\n        ep.load()\n",
    "select_import_module": ("import importlib\nfrom importlib import metadata\n\nGROUP = 'p.packs'\n\n\ndef register():\n"
                             "    for ep in metadata.entry_points().select(group=GROUP):\n        importlib.import_module(ep.module)\n"),
    "resolve_name_comprehension": ("import importlib.metadata\nimport pkgutil\n\n\ndef register():\n"
                                   "    return [pkgutil.resolve_name(ep.value) for ep in importlib.metadata.entry_points(group='p.packs')]\n"),
}


@pytest.mark.parametrize("spelling", sorted(OWN_GROUPS))
def test_modules_named_by_the_plugins_own_entry_point_group_are_loaded(upstreams, tmp_path, spelling):
    # F22 variant r2: register() loads every entry of a group the plugin declares itself
    _, new = upstreams
    text = pyproject(plugins={"p": "p:register"}) + ('[project.entry-points."p.packs"]\nlegacy = "p.legacy:quantize"\n'
                                                     '[project.entry-points."p.other"]\nunused = "p.unused"\n')
    root = plugin(tmp_path, {"pyproject.toml": text, "p/__init__.py": OWN_GROUPS[spelling],
                             "p/legacy.py": BACKEND + "\n\ndef quantize(model):\n    return apply_torchao_config_to_model(model, None)\n",
                             "p/unused.py": "from sglang.srt.layers.torchao_utils import FILTERS\n"})
    code, doc = check(root, new)
    assert (_live(doc, "p/legacy.py"), _live(doc, "p/unused.py")) == (True, False) and code == 1, doc["findings"]


# ---------------------------------------------------------------- a try's else after a lookup by name
ELSE_PATCHES = {
    "assign": "m.apply_torchao_config_to_model = skip",
    "namespace_update": "vars(m).update(apply_torchao_config_to_model=skip)",
    "setattr": "setattr(m, 'apply_torchao_config_to_model', skip)",
}


@pytest.mark.parametrize("spelling", sorted(ELSE_PATCHES))
def test_a_patch_in_the_else_of_a_sys_modules_lookup_runs_only_where_the_module_is(upstreams, tmp_path, spelling):
    # F32 variant r1: on a release without the module the KeyError is caught and the else never runs
    old, new = upstreams
    source = f"""
import sys


def skip(model, torchao_config, filter_fn=None):
    return model


def register():
    try:
        m = sys.modules[{TORCHAO!r}]
    except KeyError:
        pass
    else:
        {ELSE_PATCHES[spelling]}
"""
    code, doc = _check_init(tmp_path, old, source)
    assert by_target(doc["findings"]).get(GONE, {"status": "ok"})["status"] == "ok" and code == 0, doc["findings"]
    code, doc = _check_init(tmp_path / "new", new, source)
    patch = by_target(doc["findings"])[GONE]
    assert (patch["kind"], patch["status"], patch["breaking"]) == ("patch", "missing", False) and code == 0, patch
    assert "can be had" in patch["detail"], patch["detail"]


# ---------------------------------------------------------------- the first module that is there
FIRST_THERE = {
    "or_of_gets": "m = sys.modules.get(NEW) or sys.modules.get(OLD)\n    if m is None:\n        return\n    m.apply_torchao_config_to_model = skip",
    "walrus_first": "if (m := sys.modules.get(NEW)) is None:\n        m = None\n    m = (m := sys.modules.get(NEW)) or sys.modules.get(OLD)\n"
                    "    if m is not None:\n        m.apply_torchao_config_to_model = skip",
    "setattr_on_the_choice": "m = sys.modules.get(NEW) or sys.modules.get(OLD)\n    if m:\n        setattr(m, 'apply_torchao_config_to_model', skip)",
}


@pytest.mark.parametrize("spelling", sorted(FIRST_THERE))
def test_a_choice_between_loaded_modules_is_the_one_there_on_each_release(tmp_path_factory, tmp_path, spelling):
    # F32 variant r2: the function moved modules; on each release one lookup finds it
    moved = {"sglang/srt/layers/quant_utils.py": "def apply_torchao_config_to_model(model, torchao_config, filter_fn=None):\n    return model\n"}
    old, new = upstream_pair(tmp_path_factory, new=moved)
    source = (f"import sys\n\nNEW = 'sglang.srt.layers.quant_utils'\nOLD = {TORCHAO!r}\n\n\n"
              "def skip(model, torchao_config, filter_fn=None):\n    return model\n\n\n"
              f"def register():\n    {FIRST_THERE[spelling]}\n")
    for upstream, there in ((old, GONE), (new, "sglang.srt.layers.quant_utils.apply_torchao_config_to_model")):
        code, doc = _check_init(tmp_path / there, upstream, source)
        assert not [f for f in doc["findings"] if f["status"] == "missing" or f["breaking"]] and code == 0, doc["findings"]
        assert [f["target"] for f in doc["findings"] if f["kind"] == "patch"] in ([], [there]), doc["findings"]


CAPTURES = {
    "after_none_case": "    match sys.modules.get(TORCHAO):\n        case None:\n            return\n        case m:\n            m.apply_torchao_config_to_model = skip\n",
    "guarded_capture": "    match sys.modules.get(TORCHAO):\n        case m if m is not None:\n            m.apply_torchao_config_to_model = skip\n",
    "as_pattern": "    match sys.modules.get(TORCHAO):\n        case None:\n            pass\n        case object() as m:\n            setattr(m, 'apply_torchao_config_to_model', skip)\n",
}


@pytest.mark.parametrize("spelling", sorted(CAPTURES))
def test_a_case_capture_binds_the_subject(upstreams, tmp_path, spelling):
    # F32 variant q2: `case module:` is the module sys.modules.get found; None where it is not loaded
    old, new = upstreams
    source = f"import sys\n\nTORCHAO = {TORCHAO!r}\n\n\ndef skip(model, torchao_config, filter_fn=None):\n    return model\n\n\ndef register():\n" + CAPTURES[spelling]
    code, doc = _check_init(tmp_path, old, source)
    assert by_target(doc["findings"]).get(GONE, {"status": "ok"})["status"] == "ok" and code == 0, doc["findings"]
    code, doc = _check_init(tmp_path / "new", new, source)
    patch = by_target(doc["findings"])[GONE]
    assert (patch["kind"], patch["status"], patch["breaking"]) == ("patch", "missing", False) and code == 0, patch


# ---------------------------------------------------------------- a lazy map nothing consumes
LAZY_MAPS = {
    # (the module's code, whether the modules are imported)
    "module_constant_unread": ("_loaded = map(importlib.import_module, NAMES)\n\n\ndef register():\n    return len(NAMES)\n", False),
    "local_unread": ("def register():\n    pending = map(importlib.import_module, NAMES)\n    return len(NAMES)\n", False),
    "starmap_unread": ("import itertools\n\n_loaded = itertools.starmap(importlib.import_module, [(n,) for n in NAMES])\n\n\n"
                       "def register():\n    return len(NAMES)\n", False),
    # consumed: in place, or bound to a name that is read
    "consumed_in_place": ("def register():\n    return list(map(importlib.import_module, NAMES))\n", True),
    "bound_then_iterated": ("def register():\n    loaded = map(importlib.import_module, NAMES)\n    for module in loaded:\n        print(module)\n", True),
    "for_loop_over_it": ("def register():\n    for module in map(importlib.import_module, NAMES):\n        print(module)\n", True),
}


@pytest.mark.parametrize("spelling", sorted(LAZY_MAPS))
def test_a_map_runs_its_function_only_where_something_consumes_it(upstreams, tmp_path, spelling):
    # F25 variant q2: map() is lazy; kept where nothing iterates it, it imports nothing
    _, new = upstreams
    source, imported = LAZY_MAPS[spelling]
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"p": "p:register"}),
                             "p/__init__.py": "import importlib\n\nNAMES = ['p.legacy']\n\n" + source,
                             "p/legacy.py": BACKEND})
    code, doc = check(root, new)
    assert _live(doc, "p/legacy.py") is imported and code == (1 if imported else 2), doc["findings"]  # 2: nothing live uses sglang


# ---------------------------------------------------------------- module names built as paths
PATH_NAMES = {
    "parts_joined": "'.'.join((PurePosixPath('p', 'backends') / name / 'patch').parts)",
    "str_replaced": "str(PurePosixPath('p/backends') / name / 'patch').replace('/', '.')",
    "path_as_posix": "pathlib.Path('p').joinpath('backends', name, 'patch.py').with_suffix('').as_posix().replace('/', '.')",
}


@pytest.mark.parametrize("spelling", sorted(PATH_NAMES))
def test_a_module_name_built_with_pathlib_is_folded(upstreams, tmp_path, spelling):
    # F25 variant q1: pure paths of constant strings give the module names
    _, new = upstreams
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"p": "p:register"}), "p/__init__.py": f"""
import importlib
import pathlib
from pathlib import PurePosixPath


def register():
    for name in ('alpha',):
        importlib.import_module({PATH_NAMES[spelling]})
""", "p/backends/__init__.py": "", "p/backends/alpha/__init__.py": "", "p/backends/alpha/patch.py": BACKEND})
    code, doc = check(root, new)
    assert _live(doc, "p/backends/alpha/patch.py") and code == 1, doc["findings"]


# ---------------------------------------------------------------- what a free function returned
FREE_RESULTS = {
    # (how the flag is bound, the guard's outcome): a free function's result is no run-time data
    "plugin_helper": ("flag = _supports('x')", "undecided"),
    "module_function": ("flag = os.path.isdir('/dev/accel')", "undecided"),
    "imported_function": ("flag = getpid()", "undecided"),
    # data the call is handed decides: a method of a parameter, a function handed one, is run-time data
    "method_of_a_parameter": ("flag = config.get('x')", "runtime"),
    "helper_handed_a_parameter": ("flag = _supports(config)", "runtime"),
}


@pytest.mark.parametrize("spelling", sorted(FREE_RESULTS))
def test_a_local_holding_a_free_functions_result_is_no_run_time_data(upstreams, tmp_path, spelling):
    _, new = upstreams
    binding, outcome = FREE_RESULTS[spelling]
    code, doc = _check_init(tmp_path, new, f"""
import os
from os import getpid


def _supports(name):
    return hasattr(os, name)  # (a test of the machine: `bool(name)` of a constant would fold)


def register(config=None):
    {binding}
    if flag:
        {BACKEND.strip()}
        return apply_torchao_config_to_model
""")
    found = by_target(doc["findings"])[GONE]
    assert found["guard"]["outcome"] == outcome and found["breaking"] is (outcome == "runtime"), found


def test_a_keyword_passed_under_the_plugins_own_test_is_judged_per_arm(upstreams, tmp_path):
    # spyre's `MultiModalFieldElem(**({"modality": m} if takes_modality else {}), data=d)`: each arm
    # is a call under the test; an undecided capability test leaves the failing arm undecided
    _, new = upstreams
    source = """
import os

from sglang.srt.layers.rope import get_rope


def _takes(name):
    return hasattr(os, name)  # (a test of the machine: `bool(name)` of a constant would fold)


def register():
    takes_scaling = _takes("scaling")
    return get_rope(64, 10000, **({"rotary_dim": 64} if takes_scaling else {}))
"""
    code, doc = _check_init(tmp_path, new, source)
    call = next(f for f in doc["findings"] if f["kind"] == "call" and f["target"] == "sglang.srt.layers.rope.get_rope")
    assert (call["status"], call["breaking"], call["guard"]["outcome"]) == ("signature_changed", False, "undecided") and code != 1, call
    assert "rotary_dim" in call["detail"], call
    # under run-time data the failing arm is a TypeError on that path
    code, doc = _check_init(tmp_path / "runtime", new, source.replace('takes_scaling = _takes("scaling")', "takes_scaling = len(str(_takes)) > 3").replace(
        "def register():", "def register(n=0):").replace("len(str(_takes)) > 3", "n > 3"))
    call = next(f for f in doc["findings"] if f["kind"] == "call" and f["target"] == "sglang.srt.layers.rope.get_rope")
    assert (call["breaking"], call["guard"]["outcome"]) == (True, "runtime") and code == 1, call


def test_a_class_formatted_whole_is_no_dotted_path(upstreams, tmp_path):
    # str(Sampler) is "<class '…'>": the target is not Sampler.forward, and nothing says it is
    _, new = upstreams
    code, doc = _check_init(tmp_path, new, """
from sglang.srt.layers.sampler import Sampler
from sglang.srt.plugins.hook_registry import HookRegistry, HookType


def after(result, *args, **kwargs):
    return result


def register():
    HookRegistry.register('{0}.forward'.format(Sampler), after, HookType.AFTER)
""")
    assert "sglang.srt.layers.sampler.Sampler.forward" not in by_target(doc["findings"]), doc["findings"]
    assert [f["status"] for f in doc["findings"] if f["kind"] == "hook"] == ["unknown"], doc["findings"]


def test_a_percent_format_missing_a_field_is_no_value_and_no_crash(upstreams, tmp_path):
    _, new = upstreams
    code, doc = _check_init(tmp_path, new, """
from sglang.srt.plugins.hook_registry import HookRegistry, HookType

_T = {'module': 'sglang.srt.layers.sampler'}


def after(result, *args, **kwargs):
    return result


def register():
    HookRegistry.register('%(module)s.%(cls)s.forward' % _T, after, HookType.AFTER)
""")
    assert [f["status"] for f in doc["findings"] if f["kind"] == "hook"] == ["unknown"] and code == 3, doc["findings"]


def test_activate_may_return_a_class_constant(upstreams, tmp_path):
    _, new = upstreams
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(platforms={"x": "p:activate"}),
        "p/__init__.py": "class _Spec:\n    platform_cls = 'p.platform.XPlatform'\n\n\ndef activate():\n    return _Spec.platform_cls\n",
        "p/platform.py": "from sglang.srt.platforms.interface import SRTPlatform\n\n\n" + METHODS["def"],
    })
    code, doc = check(root, new)
    dropped = by_target(doc["findings"])["sglang.srt.platforms.interface.SRTPlatform.get_mha_kv_pool_cls"]
    assert (dropped["status"], dropped["live"]) == ("not_on_base", True) and code == 1, dropped


ACTIVATES = {
    "partial": "import functools\n\n\ndef _activate(qualname):\n    return qualname\n\n\n"
               "activate = functools.partial(_activate, 'p.platform.XPlatform')\n",
    "partial_keywords": "from functools import partial\n\n\ndef _activate(*, module, cls):\n    return f'{module}:{cls}'\n\n\n"
                        "activate = partial(_activate, module='p.platform', cls='XPlatform')\n",
    "lambda": "PLATFORM = 'p.platform.XPlatform'\nactivate = lambda: PLATFORM  # noqa: E731\n",
    "alias_of_another_module": "from p import impl\n\nactivate = impl.find\n",
    "helper_call": "def _qual(module, cls):\n    return module + '.' + cls\n\n\ndef activate():\n    return _qual('p.platform', 'XPlatform')\n",
    # an environment override with the class as its default: what a deployment that sets nothing loads
    "environ_get_default": "import os\n\nDEFAULT = 'p.platform.XPlatform'\n\n\ndef activate():\n    return os.environ.get('P_PLATFORM', DEFAULT)\n",
    "getenv_keyword_default": "from os import getenv\n\n\ndef activate():\n    return getenv('P_PLATFORM', default='p.platform:XPlatform')\n",
    "environ_get_or": "from os import environ\n\n\ndef activate():\n    return environ.get('P_PLATFORM') or 'p.platform.XPlatform'\n",
    # the module's own name, however it is read: __name__, __package__, its ModuleSpec
    "module_name": "def activate():\n    return __name__ + '.platform.XPlatform'\n",
    "package_name": "def activate():\n    return f'{__package__}.platform:XPlatform'\n",
    "spec_name": "def activate():\n    return __spec__.name + '.platform.XPlatform'\n",
    "spec_parent": "def activate():\n    return '{}.platform.XPlatform'.format(__spec__.parent)\n",
    # a bound method of a module-level object (F02 variant r1): what the method returns, self that object
    "bound_method_class_attribute": ("class _Plugin:\n    platform_cls = 'p.platform.XPlatform'\n\n    def activate(self):\n"
                                     "        return self.platform_cls\n\n\n_plugin = _Plugin()\nactivate = _plugin.activate\n"),
    "bound_method_init_field": ("class _Plugin:\n    def __init__(self, module):\n        self.module = module\n\n"
                                "    def activate(self):\n        return f'{self.module}:XPlatform'\n\n\nactivate = _Plugin('p.platform').activate\n"),
    "bound_method_dataclass": ("import dataclasses\n\n\n@dataclasses.dataclass\nclass _Plugin:\n    module: str\n    name: str = 'XPlatform'\n\n"
                               "    def activate(self):\n        return self.module + '.' + self.name\n\n\n_PLUGIN = _Plugin('p.platform')\n"
                               "activate = _PLUGIN.activate\n"),
}


def _platform_override(new, tmp_path, init: str, entry: str = "p:activate", **extra: str) -> tuple[int, dict]:
    """`harness check` of a plugin whose entry point `entry` (`p/__init__.py`: `init`) names
    p.platform.XPlatform, which overrides get_mha_kv_pool_cls (gone on the new release):
    (exit code, that override's finding)."""
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(platforms={"x": entry}),
        "p/__init__.py": init,
        "p/platform.py": "from sglang.srt.platforms.interface import SRTPlatform\n\n\n" + METHODS["def"],
        **extra,
    })
    code, doc = check(root, new)
    return code, by_target(doc["findings"])["sglang.srt.platforms.interface.SRTPlatform.get_mha_kv_pool_cls"]


@pytest.mark.parametrize("spelling", sorted(ACTIVATES))
def test_activate_is_whatever_the_entry_point_attribute_is_bound_to(upstreams, tmp_path, spelling):
    """The engine calls the entry point's attribute: a def, an alias, a lambda or a partial of a
    plugin function all name the platform class the same way."""
    _, new = upstreams
    code, dropped = _platform_override(new, tmp_path, ACTIVATES[spelling],
                                       **{"p/impl.py": "def find():\n    name = 'XPlatform'\n    return f'p.platform:{name}'\n"})
    assert (dropped["status"], dropped["live"]) == ("not_on_base", True) and code == 1, dropped


# `activate` bound to an object: the engine calls it, so its class's __call__ runs with self the
# object its construction made
CALLABLE_OBJECTS = {
    "init_stores_argument": "class _Activator:\n    def __init__(self, target):\n        self._target = target\n\n"
                            "    def __call__(self):\n        return self._target\n\n\nactivate = _Activator('p.platform.XPlatform')\n",
    "init_default_keyword": "class _Activator:\n    def __init__(self, *, module='p.platform', name='XPlatform'):\n"
                            "        self.path = f'{module}:{name}'\n\n    def __call__(self):\n        return self.path\n\n\n"
                            "activate = _Activator(name='XPlatform')\n",
    "dataclass": "from dataclasses import dataclass\n\n\n@dataclass\nclass _Activator:\n    target: str\n\n"
                 "    def __call__(self):\n        return self.target\n\n\nactivate = _Activator(target='p.platform.XPlatform')\n",
    "class_constant": "class _Activator:\n    TARGET = 'p.platform.XPlatform'\n\n    def __call__(self):\n"
                      "        return self.TARGET\n\n\nactivate = _Activator()\n",
}


@pytest.mark.parametrize("spelling", sorted(CALLABLE_OBJECTS))
def test_activate_bound_to_a_callable_object_returns_what_its_call_returns(upstreams, tmp_path, spelling):
    _, new = upstreams
    code, dropped = _platform_override(new, tmp_path, CALLABLE_OBJECTS[spelling])
    assert (dropped["status"], dropped["live"]) == ("not_on_base", True) and code == 1, dropped


def test_a_callable_object_made_with_none_activates_no_platform(upstreams, tmp_path):
    """The negative: the same object made with None returns None, so the engine loads no
    platform of the plugin and the class's override is not live (exit 2: no live module depends
    on the release, so nothing is checked)."""
    _, new = upstreams
    code, dropped = _platform_override(new, tmp_path, CALLABLE_OBJECTS["init_stores_argument"].replace("_Activator('p.platform.XPlatform')", "_Activator(None)"))
    assert not dropped["live"] and not dropped["breaking"] and code == 2, dropped


# "module:Class.attr" entry points: importlib.metadata's EntryPoint.load() walks the attributes
ENTRY_ATTRIBUTES = {
    "staticmethod": "class Plugin:\n    PLATFORM = 'p.platform.XPlatform'\n\n    @staticmethod\n    def activate():\n        return Plugin.PLATFORM\n",
    "classmethod": "class Plugin:\n    PLATFORM = 'p.platform:XPlatform'\n\n    @classmethod\n    def activate(cls):\n        return cls.PLATFORM\n",
    "staticmethod_call": "class Plugin:\n    activate = staticmethod(lambda: 'p.platform.XPlatform')\n",
}


@pytest.mark.parametrize("spelling", sorted(ENTRY_ATTRIBUTES))
def test_an_entry_point_naming_a_class_attribute_is_that_function(upstreams, tmp_path, spelling):
    _, new = upstreams
    code, dropped = _platform_override(new, tmp_path, ENTRY_ATTRIBUTES[spelling], entry="p:Plugin.activate")
    assert (dropped["status"], dropped["live"]) == ("not_on_base", True) and code == 1, dropped


CLASSES = {
    "class_statement": "class XPlatform(SRTPlatform):\n    get_mha_kv_pool_cls = _pool\n",
    "type_call": "XPlatform = type('XPlatform', (SRTPlatform,), {'get_mha_kv_pool_cls': _pool})\n",
    "type_call_dict_keywords": "XPlatform = type('XPlatform', (SRTPlatform,), dict(get_mha_kv_pool_cls=_pool))\n",
    "starred_bases": "BASES = (SRTPlatform,)\n\n\nclass XPlatform(*BASES):\n    get_mha_kv_pool_cls = _pool\n",
    "type_call_bases_named": "BASES = (SRTPlatform,)\nXPlatform = type('XPlatform', BASES, {'get_mha_kv_pool_cls': _pool})\n",
    "base_from_a_factory": "def platform_base(base=SRTPlatform):\n    class _Base(base):\n        get_mha_kv_pool_cls = _pool\n\n"
                           "    return _Base\n\n\nclass XPlatform(platform_base()):\n    pass\n",
    "factory_parameter_base": "def platform_base(mixin):\n    class _Base(mixin, SRTPlatform):\n        pass\n\n    return _Base\n\n\n"
                              "class Mixin:\n    pass\n\n\nclass XPlatform(platform_base(Mixin)):\n    get_mha_kv_pool_cls = _pool\n",
    # the platform class itself is what a factory returns (twenty-sixth set F01-f2): bound by
    # assignment, the class renamed inside, a keyword argument
    "assigned_from_a_factory": "class Mixin:\n    pass\n\n\ndef make_platform(mixin):\n    class _P(mixin, SRTPlatform):\n"
                               "        get_mha_kv_pool_cls = _pool\n\n    return _P\n\n\nXPlatform = make_platform(Mixin)\n",
    "assigned_from_a_factory_renamed": "class Mixin:\n    pass\n\n\ndef make_platform(mixin):\n    class _P(mixin, SRTPlatform):\n"
                                       "        get_mha_kv_pool_cls = _pool\n\n    _P.__name__ = _P.__qualname__ = 'XPlatform'\n    return _P\n\n\n"
                                       "XPlatform = make_platform(Mixin)\n",
    "assigned_from_a_factory_by_keyword": "def make_platform(*, base=SRTPlatform):\n    class _P(base):\n        get_mha_kv_pool_cls = _pool\n\n"
                                          "    return _P\n\n\nXPlatform = make_platform(base=SRTPlatform)\n",
}


@pytest.mark.parametrize("spelling", sorted(CLASSES))
def test_a_platform_class_is_judged_over_its_mro_however_python_builds_it(upstreams, tmp_path, spelling):
    """`type(name, bases, namespace)` and a base returned by a class factory build the same
    class as the statement: its overrides are judged over the real MRO."""
    _, new = upstreams
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(platforms={"x": "p:activate"}),
        "p/__init__.py": "def activate():\n    return 'p.platform:XPlatform'\n",
        "p/platform.py": "from sglang.srt.platforms.interface import SRTPlatform\n\n\n"
                         "def _pool(self):\n    return None\n\n\n" + CLASSES[spelling],
    })
    code, doc = check(root, new)
    dropped = by_target(doc["findings"])["sglang.srt.platforms.interface.SRTPlatform.get_mha_kv_pool_cls"]
    assert (dropped["status"], dropped["live"]) == ("not_on_base", True) and code == 1, dropped


def test_a_type_call_whose_namespace_is_not_written_out_claims_nothing(upstreams, tmp_path):
    _, new = upstreams
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(platforms={"x": "p:activate"}),
        "p/__init__.py": "def activate():\n    return 'p.platform:XPlatform'\n",
        "p/platform.py": "from sglang.srt.platforms.interface import SRTPlatform\n\nNAMESPACE = {}\n"
                         "XPlatform = type('XPlatform', (SRTPlatform,), NAMESPACE)\n",
    })
    code, doc = check(root, new)
    assert code == 0 and not [f for f in doc["findings"] if f["breaking"]], doc["findings"]


# ---------------------------------------------------------------- a stand-in for a missing import
STAND_INS = {
    "def": "def register_attention_backend(name):\n        return lambda fn: fn\n",
    "lambda": "register_attention_backend = lambda name: (lambda fn: fn)  # noqa: E731\n",
    "class": "class register_attention_backend:\n        def __init__(self, name):\n            pass\n\n        def __call__(self, fn):\n            return fn\n",
}


@pytest.mark.parametrize("spelling", sorted(STAND_INS))
def test_a_name_an_import_error_handler_stands_in_for_is_upstreams_where_it_resolves(upstreams, tmp_path_factory, tmp_path, spelling):
    _, new = upstreams
    without = upstream_pair(tmp_path_factory, new={"sglang/srt/layers/attention/attention_registry.py": ""})[1]
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"p": "p:register"}), "p/__init__.py": f"""
try:
    from sglang.srt.layers.attention.attention_registry import register_attention_backend
except ImportError:
    {STAND_INS[spelling]}

@register_attention_backend("xdev")
def create(runner):
    return None


def register():
    pass
"""})
    target = "sglang.srt.layers.attention.attention_registry.register_attention_backend"
    code, doc = check(root, new)
    assert by_target(doc["findings"])[target]["status"] == "ok" and code == 0
    code, doc = check(root, without)  # the stand-in runs: nothing upstream is needed
    assert not any(f["breaking"] for f in doc["findings"]) and code == 0, doc["findings"]


# the stand-in kept in a compat module and the name used from another plugin module (fourteenth
# set F36-n1): upstream's where the compat module's import resolves, by a module-level import, a
# function-level one, or the module imported whole
COMPAT_USES = {
    "from_import": ("from p._compat import register_attention_backend\n\n\n", "register_attention_backend"),
    "function_import": ("", "from p._compat import register_attention_backend as register\n    register"),
    "module_alias": ("from p import _compat as compat\n\n\n", "compat.register_attention_backend"),
}


@pytest.mark.parametrize("use", sorted(COMPAT_USES))
@pytest.mark.parametrize("spelling", ["class", "def"])
def test_a_stand_in_kept_in_a_compat_module_is_upstreams_where_used(upstreams, tmp_path_factory, tmp_path, spelling, use):
    _, new = upstreams
    without = upstream_pair(tmp_path_factory, new={"sglang/srt/layers/attention/attention_registry.py": ""})[1]
    head, name = COMPAT_USES[use]
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"p": "p.backend:register"}), "p/__init__.py": "", "p/_compat.py": f"""
try:
    from sglang.srt.layers.attention.attention_registry import register_attention_backend
except ImportError:
    {STAND_INS[spelling]}
""", "p/backend.py": head + f"class Factory:\n    NAME = 'xdev'\n\n    @classmethod\n    def create(cls, runner):\n        return None\n\n\n"
                    f"def register():\n    {name}(Factory.NAME)(Factory.create)\n"})
    target = "sglang.srt.layers.attention.attention_registry.register_attention_backend"
    code, doc = check(root, new)
    assert doc["findings"] and all(f["status"] == "ok" for f in doc["findings"] if f["target"] == target), doc["findings"]
    assert not any("not part of this upstream" in (f["detail"] or "") for f in doc["findings"]) and code == 0, doc["findings"]
    code, doc = check(root, without)  # the stand-in runs: nothing upstream is needed
    assert not any(f["breaking"] for f in doc["findings"]) and code == 0, doc["findings"]


# ---------------------------------------------------------------- a registration is also a call
REGISTRATIONS = {
    "call": "register_attention_backend('xdev', create)\n",
    "decorator": "@register_attention_backend('xdev', 'fallback')\ndef create2(runner):\n    return None\n",
    "guarded_alias": "if register is not None:\n    register('xdev', create)\n",
}


@pytest.mark.parametrize("spelling", sorted(REGISTRATIONS))
def test_a_registration_call_that_does_not_bind_to_upstreams_signature_breaks(upstreams, tmp_path, spelling):
    # upstream's register_attention_backend(name) returns the decorator: two arguments raise TypeError
    _, new = upstreams
    source = f"""
from sglang.srt.layers.attention.attention_registry import register_attention_backend

try:
    from sglang.srt.layers.attention.attention_registry import register_attention_backend as register
except ImportError:
    register = None


def create(runner):
    return None


{REGISTRATIONS[spelling]}

def register_plugin():
    pass
"""
    code, doc = check(plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"p": "p:register_plugin"}),
                                        "p/__init__.py": source}), new)
    broken = [f for f in doc["findings"] if f["breaking"]]
    assert code == 1 and [f["target"] for f in broken] == [
        "sglang.srt.layers.attention.attention_registry.register_attention_backend"], doc["findings"]
    assert "takes 1 positional arguments, the call passes 2" in broken[0]["detail"], broken[0]
    # the one-argument form binds: the registration alone, no finding against it
    code, doc = check(plugin(tmp_path / "fits", {"pyproject.toml": pyproject(plugins={"p": "p:register_plugin"}),
                                                 "p/__init__.py": source.replace(", create)", ")(create)")
                                                 .replace(", 'fallback')", ")")}), new)
    assert code == 0 and not [f for f in doc["findings"] if f["breaking"]], doc["findings"]


# ---------------------------------------------------------------- `X = X` upstream
@pytest.mark.parametrize("name", ["Sampler", "sampler_module", "Metadata", "LIMIT"])
def test_an_upstream_self_alias_keeps_what_the_name_was(upstreams, tmp_path, name):
    _, new = upstreams
    code, doc = _check_init(tmp_path, new, f"""
from sglang.srt.layers.attention.compat import {name}


def register():
    return {name}
""")
    found = by_target(doc["findings"]).get(f"sglang.srt.layers.attention.compat.{name}")
    assert found is None or found["status"] == "ok", found
    assert code == 0


# ---------------------------------------------------------------- auto-discovery of a subpackage
DISCOVERY = {
    "name_prefix": "prefix=__name__ + '.backends.'",
    "fstring_prefix": "prefix=f'{PACKAGE}.backends.'",
    "positional_prefix": "PACKAGE + '.backends.'",
}


@pytest.mark.parametrize("spelling", sorted(DISCOVERY))
def test_auto_discovery_makes_the_listed_package_live(upstreams, tmp_path, spelling):
    _, new = upstreams
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"p": "p:register"}), "p/__init__.py": f"""
import importlib
import os
import pkgutil

PACKAGE = "p"


def register():
    folder = os.path.join(os.path.dirname(__file__), "backends")
    for info in pkgutil.iter_modules([folder], {DISCOVERY[spelling]}):
        importlib.import_module(info.name)
""", "p/backends/alpha.py": BACKEND, "p/tools/beta.py": BACKEND})
    code, doc = check(root, new)
    assert (_live(doc, "p/backends/alpha.py"), _live(doc, "p/tools/beta.py")) == (True, False) and code == 1


# the package listed by its own __path__ and __name__, bound by an import in the function or the module
PACKAGE_DISCOVERY = {
    "local_import_as": ("", "    import p.backends as pkg\n\n    for info in pkgutil.iter_modules(pkg.__path__, prefix=pkg.__name__ + '.'):\n"),
    "local_from_import": ("", "    from p import backends\n\n    for info in pkgutil.walk_packages(backends.__path__, backends.__name__ + '.'):\n"),
    "module_level_import": ("import p.backends as pkg\n", "    for info in pkgutil.iter_modules(pkg.__path__, f'{pkg.__name__}.'):\n"),
}


@pytest.mark.parametrize("spelling", sorted(PACKAGE_DISCOVERY))
def test_auto_discovery_of_a_package_by_its_own_path_makes_it_live(upstreams, tmp_path, spelling):
    _, new = upstreams
    head, loop = PACKAGE_DISCOVERY[spelling]
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"p": "p:register"}),
                             "p/__init__.py": f"import importlib\nimport pkgutil\n{head}\n\ndef register():\n{loop}        importlib.import_module(info.name)\n",
                             "p/backends/__init__.py": "", "p/backends/alpha.py": BACKEND, "p/tools/beta.py": BACKEND})
    code, doc = check(root, new)
    assert (_live(doc, "p/backends/alpha.py"), _live(doc, "p/tools/beta.py")) == (True, False) and code == 1


# walk_packages lists the modules of sub-packages too, recursively (F22 variant p2); iter_modules only the direct ones
NESTED_DISCOVERY = {
    "walk_packages_keyword_prefix": ("    from p import backends\n\n    for info in pkgutil.walk_packages(backends.__path__, prefix=backends.__name__ + '.'):\n", True),
    "walk_packages_onerror": ("    import p.backends as pkg\n\n    for info in pkgutil.walk_packages(pkg.__path__, f'{pkg.__name__}.', onerror=print):\n", True),
    "walk_packages_keywords": ("    for info in pkgutil.walk_packages(path=None, prefix='p.backends.'):\n", True),
    "iter_modules_direct_only": ("    import p.backends as pkg\n\n    for info in pkgutil.iter_modules(pkg.__path__, pkg.__name__ + '.'):\n", False),
}


@pytest.mark.parametrize("spelling", sorted(NESTED_DISCOVERY))
def test_walk_packages_reaches_the_modules_of_sub_packages(upstreams, tmp_path, spelling):
    _, new = upstreams
    loop, nested = NESTED_DISCOVERY[spelling]
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"p": "p:register"}),
                             "p/__init__.py": f"import importlib\nimport pkgutil\n\n\ndef register():\n{loop}        importlib.import_module(info.name)\n",
                             "p/backends/__init__.py": "", "p/backends/alpha.py": BACKEND, "p/backends/compat/__init__.py": "",
                             "p/backends/compat/gamma.py": BACKEND, "p/tools/beta.py": BACKEND})
    code, doc = check(root, new)
    assert (_live(doc, "p/backends/alpha.py"), _live(doc, "p/backends/compat/gamma.py"), _live(doc, "p/tools/beta.py")) == (True, nested, False)
    assert code == 1


# ---------------------------------------------------------------- a module function replaced by the plugin's
REPLACEMENTS = {
    # (how the plugin sets it, whether its function takes `scaling=`, which llama.py passes)
    "assign": ("rope.get_rope = my_get_rope", False),
    "setattr": ("setattr(rope, 'get_rope', my_get_rope)", False),
    "namespace": ("vars(rope)['get_rope'] = my_get_rope", False),
    "takes_kwargs": ("rope.get_rope = my_get_rope_kwargs", True),
    # the module got by import_module, the function through functools.wraps / update_wrapper
    "setattr_on_import_module": ("setattr(importlib.import_module('sglang.srt.layers.rope'), 'get_rope', my_get_rope)", False),
    "assign_on_import_module": ("importlib.import_module(ROPE).get_rope = my_get_rope", False),
    "wraps": ("rope.get_rope = functools.wraps(rope.get_rope)(my_get_rope)", False),
    "update_wrapper": ("rope.get_rope = functools.update_wrapper(my_get_rope, rope.get_rope)", False),
    "wraps_kwargs": ("rope.get_rope = functools.wraps(rope.get_rope)(my_get_rope_kwargs)", True),
    # unittest.mock's patchers, started: the same attribute set
    "mock_patch_object": ("mock.patch.object(rope, 'get_rope', my_get_rope).start()", False),
    "mock_patch_by_name": ("patch('sglang.srt.layers.rope.get_rope', my_get_rope).start()", False),
    "mock_patch_object_new_keyword": ("mock.patch.object(rope, 'get_rope', new=my_get_rope_kwargs).start()", True),
    # a bound method of a plugin object the module made: judged without self
    "method_of_a_module_object": ("rope.get_rope = _ROPES.get_rope", False),
    "method_of_a_module_object_setattr": ("setattr(rope, 'get_rope', _ROPES.get_rope)", False),
    "method_of_a_module_object_kwargs": ("rope.get_rope = _ROPES.get_rope_kwargs", True),
    # a lambda forwarding to the plugin's function (V variant u5): its own parameters are what callers bind
    "lambda_assign": ("rope.get_rope = lambda head_size, base: my_get_rope(head_size, base)", False),
    "lambda_setattr": ("setattr(rope, 'get_rope', lambda head_size, base, **kw: my_get_rope(head_size, base))", True),
    "lambda_mock_patch": ("mock.patch.object(rope, 'get_rope', lambda *a: my_get_rope(*a)).start()", False),
    # the original saved and the global replaced in one statement (V variant r5)
    "tuple_save_and_replace": ("global _ORIG\n    _ORIG, rope.get_rope = rope.get_rope, my_get_rope", False),
    "list_save_and_replace": ("[saved, rope.get_rope] = [rope.get_rope, my_get_rope]", False),
    "tuple_save_and_replace_kwargs": ("_kept, rope.get_rope = rope.get_rope, my_get_rope_kwargs", True),
    # the module's namespace updated (F32 variant r1), the module got in a try whose else patches it
    "namespace_update_keyword": ("vars(rope).update(get_rope=my_get_rope)", False),
    "dunder_dict_update": ("rope.__dict__.update({'get_rope': my_get_rope})", False),
    "namespace_update_kwargs": ("vars(rope).update(get_rope=my_get_rope_kwargs)", True),
    # ... with a table the plugin keeps (sixteenth set F32-k1): a module dict, a dict() of it, a local
    "dunder_dict_update_module_table": ("rope.__dict__.update(_OVERRIDES)", False),
    "namespace_update_dict_call_kwargs": ("vars(rope).update(dict(_OVERRIDES_KWARGS))", True),
    "namespace_update_local_table": ("table = {'get_rope': my_get_rope}\n    (mod := rope).__dict__.update(table)", False),
    # the staticmethods of a holder class, walked in its namespace (sixteenth set V-k2): its
    # other attributes (a str) are no patch
    "holder_vars_staticmethods": ("for name, member in vars(RopeHolder).items():\n        if isinstance(member, staticmethod):\n"
                                  "            setattr(rope, name, member)", False),
    "holder_dict_items_kwargs": ("for name, member in RopeHolderKwargs.__dict__.items():\n        if isinstance(member, (staticmethod, classmethod)):\n"
                                 "            setattr(rope, name, member)", True),
    "holder_vars_comprehension": ("[setattr(rope, n, m) for n, m in vars(RopeHolder).items() if not isinstance(m, str)]", False),
    "sys_modules_try_else": ("import sys\n    try:\n        loaded = sys.modules[ROPE]\n    except KeyError:\n        pass\n"
                             "    else:\n        vars(loaded).update(get_rope=my_get_rope)", False),
    # through a sibling function's __globals__, its module's namespace (V variant p5)
    "function_globals_item": ("rope.default_rope.__globals__['get_rope'] = my_get_rope", False),
    "function_globals_update": ("rope.default_rope.__globals__.update(get_rope=my_get_rope)", False),
    "function_globals_item_kwargs": ("rope.default_rope.__globals__['get_rope'] = my_get_rope_kwargs", True),
    # an instance of a plugin class with __call__ (fifteenth set V-m2): through a helper's parameter,
    # a local, a loop over a table
    "callable_object_through_helper": ("_install(rope, 'get_rope', RopeCall())", False),
    "callable_object_local": ("made = RopeCall()\n    setattr(rope, 'get_rope', made)", False),
    "callable_object_loop_kwargs": ("for name, fn in [('get_rope', RopeCallKwargs())]:\n        setattr(rope, name, fn)", True),
    # a patcher object keeping the module it patches (fifteenth set F38-m2): built inline, kept in a
    # local, a module global
    "patcher_object_inline": ("_Patcher(rope).apply('get_rope', my_get_rope)", False),
    "patcher_object_local": ("patcher = _Patcher(rope)\n    patcher.apply('get_rope', my_get_rope)", False),
    "patcher_object_global_kwargs": ("_PATCHER.apply('get_rope', my_get_rope_kwargs)", True),
}


# a patcher object walking a table of "module:attr" keys (sixteenth set F22-k1): the object built
# where a function imports its class, a method splitting the key in several statements, the module
# loaded in a `try` whose handler leaves; a module global; a helper with the table as a default
TABLE_PATCHERS = {
    "object_built_after_a_local_import": ("""
class Patcher:
    def __init__(self, table=TABLE):
        self._table = table

    def _split(self, key):
        module_path, _, attr = key.partition(":")
        return module_path, attr

    def apply(self):
        for key, impl in self._table.items():
            module_path, attr = self._split(key)
            try:
                module = _load(module_path)
            except ImportError:
                continue
            setattr(module, attr, impl)
""", "from p import Patcher\n    Patcher().apply()", False),
    "module_global_object_fits": ("""
class Patcher:
    def __init__(self, table):
        self.table = table

    def _split(self, key):
        parts = key.split(":")
        return parts[0], parts[-1]

    def apply(self):
        for key, impl in self.table.items():
            path, attr = self._split(key)
            try:
                module = importlib.import_module(path)
            except (ImportError, AttributeError) as exc:
                print(exc)
                return
            setattr(module, attr, impl)


_PATCHER = Patcher(TABLE_KWARGS)
""", "_PATCHER.apply()", True),
    "helper_with_a_default_table": ("""
def _split(key):
    module_path, attr = key.split(":")
    return module_path, attr


def _apply(table=TABLE):
    for key, impl in table.items():
        path, name = _split(key)
        try:
            module = _load(path)
        except ImportError:
            raise
        setattr(module, name, impl)
""", "_apply()", False),
}


# a registry of module -> {name: replacement} a decorator factory fills (sixteenth set V-k5): the
# key from a local the decorator computes first, the entry put in a dict of dicts; applied by
# updating each module's namespace
SWAP_REGISTRIES = {
    "setdefault_then_dict_update": ("SWAPS = {}", "SWAPS.setdefault(module_name, {})[key] = fn",
                                    "importlib.import_module(m).__dict__.update(fns)", "my_get_rope", False),
    "defaultdict_then_vars_update": ("SWAPS = collections.defaultdict(dict)", "SWAPS[module_name][key] = fn",
                                     "vars(importlib.import_module(m)).update(fns)", "my_get_rope", False),
    "setdefault_fits": ("SWAPS = {}", "SWAPS.setdefault(module_name, {})[key] = fn",
                        "importlib.import_module(m).__dict__.update(fns)", "my_get_rope_kwargs", True),
}


@pytest.mark.parametrize("spelling", sorted(SWAP_REGISTRIES))
def test_a_registry_a_decorator_fills_with_its_locals_patches_what_it_names(upstreams, tmp_path, spelling):
    _, new = upstreams
    start, put, apply, function, fits = SWAP_REGISTRIES[spelling]
    code, doc = _check_init(tmp_path, new, f"""
import collections
import importlib

{start}


def swap(module_name):
    def decorate(fn):
        key = fn.__name__.removeprefix("my_").removesuffix("_kwargs")
        {put}
        return fn

    return decorate


@swap("sglang.srt.layers.rope")
def {function}(head_size, base{", **kwargs" if fits else ""}):
    return head_size


def register():
    for m, fns in SWAPS.items():
        {apply}
""")
    patch = by_target(doc["findings"])["sglang.srt.layers.rope.get_rope"]
    if fits:
        assert not patch["breaking"] and code == 0, patch
    else:
        assert (patch["status"], patch["breaking"]) == ("signature_changed", True) and code == 1, patch


@pytest.mark.parametrize("spelling", sorted(TABLE_PATCHERS))
def test_a_table_of_module_keys_a_patcher_walks_is_judged(upstreams, tmp_path, spelling):
    _, new = upstreams
    definitions, statement, fits = TABLE_PATCHERS[spelling]
    code, doc = _check_init(tmp_path, new, f"""
import functools
import importlib


def my_get_rope(head_size, base):
    return head_size


def my_get_rope_kwargs(head_size, base, **kwargs):
    return head_size


TABLE = {{"sglang.srt.layers.rope:get_rope": my_get_rope}}
TABLE_KWARGS = {{"sglang.srt.layers.rope:get_rope": my_get_rope_kwargs}}


@functools.lru_cache(maxsize=None)
def _load(path):
    return importlib.import_module(path)

{definitions}

def register():
    {statement}
""")
    patch = by_target(doc["findings"])["sglang.srt.layers.rope.get_rope"]
    if fits:
        assert not patch["breaking"] and code == 0, patch
    else:
        assert (patch["status"], patch["breaking"]) == ("signature_changed", True) and code == 1, patch


@pytest.mark.parametrize("spelling", sorted(REPLACEMENTS))
def test_a_replaced_module_function_is_judged_against_upstreams_calls(upstreams, tmp_path, spelling):
    _, new = upstreams
    statement, fits = REPLACEMENTS[spelling]
    code, doc = _check_init(tmp_path, new, f"""
import functools
import importlib
from unittest import mock
from unittest.mock import patch

from sglang.srt.layers import rope

ROPE = "sglang.srt.layers.rope"


def my_get_rope(head_size, base):
    return head_size


def my_get_rope_kwargs(head_size, base, **kwargs):
    return head_size


class Ropes:
    def __init__(self, cache):
        self.cache = cache

    def get_rope(self, head_size, base):
        return head_size

    def get_rope_kwargs(self, head_size, base, **kwargs):
        return head_size


_ROPES = Ropes(cache={{}})
_OVERRIDES = {{"get_rope": my_get_rope}}


class RopeHolder:
    owner = "sglang.srt.layers.rope"

    @staticmethod
    def get_rope(head_size, base):
        return head_size


class RopeHolderKwargs:
    owner = "sglang.srt.layers.rope"

    @staticmethod
    def get_rope(head_size, base, **kwargs):
        return head_size
_OVERRIDES_KWARGS = {{"get_rope": my_get_rope_kwargs}}


class RopeCall:
    def __call__(self, head_size, base):
        return head_size


class RopeCallKwargs:
    def __call__(self, head_size, base, **kwargs):
        return head_size


def _install(module, name, replacement):
    setattr(module, name, replacement)


class _Patcher:
    def __init__(self, module):
        self.module = module
        self.originals = {{}}

    def apply(self, name, fn):
        self.originals[name] = getattr(self.module, name)
        setattr(self.module, name, fn)


_PATCHER = _Patcher(rope)


def register():
    {statement}
""")
    patch = by_target(doc["findings"])["sglang.srt.layers.rope.get_rope"]
    # a holder's other attribute (a str) is no staticmethod: its setattr is skipped
    owner = by_target(doc["findings"]).get("sglang.srt.layers.rope.owner")
    assert owner is None or (owner["guard"]["outcome"], owner["breaking"]) == ("skipped", False), owner
    if fits:
        assert not patch["breaking"] and code == 0, patch
    else:
        assert (patch["status"], patch["breaking"]) == ("signature_changed", True) and "llama.py:4" in patch["detail"] and code == 1, patch


# ---------------------------------------------------------------- a private helper nothing calls
HELPERS = {
    # (the helper and what else the module holds, whether the import in it can run)
    "never_named": ("def _legacy(model):\n    from sglang.srt.layers.torchao_utils import apply_torchao_config_to_model\n    return apply_torchao_config_to_model(model, None)\n", False),
    "async_never_named": ("async def _legacy(model):\n    from sglang.srt.layers.torchao_utils import apply_torchao_config_to_model\n    return apply_torchao_config_to_model(model, None)\n", False),
    "called": ("def _legacy(model):\n    from sglang.srt.layers.torchao_utils import apply_torchao_config_to_model\n    return apply_torchao_config_to_model(model, None)\n\n\nHANDLERS = [_legacy]\n", True),
    "public": ("def legacy(model):\n    from sglang.srt.layers.torchao_utils import apply_torchao_config_to_model\n    return apply_torchao_config_to_model(model, None)\n", True),
    "decorated": ("import functools\n\n\n@functools.lru_cache\ndef _legacy(model):\n    from sglang.srt.layers.torchao_utils import apply_torchao_config_to_model\n    return apply_torchao_config_to_model(model, None)\n", True),
}


@pytest.mark.parametrize("spelling", sorted(HELPERS))
def test_an_import_in_a_private_helper_nothing_names_cannot_fail(upstreams, tmp_path, spelling):
    _, new = upstreams
    source, runs = HELPERS[spelling]
    code, doc = _check_init(tmp_path, new, source + "\n\ndef register():\n    pass\n")
    imported = [f for f in doc["findings"] if f["target"].startswith(TORCHAO) and f["kind"] == "import"]
    assert imported and all(f["breaking"] is runs for f in imported) and code == (1 if runs else 0), imported


def test_a_class_constant_an_instance_overwrites_is_not_what_self_reads(upstreams, tmp_path):
    _, new = upstreams
    code, doc = check(plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"p": "p:register"}),
        "p/__init__.py": """
            import importlib

            class Installer:
                MODULES = ("p.backends.alpha",)

                def __init__(self, modules=()):
                    self.MODULES = modules

                def install(self):
                    for name in self.MODULES:
                        importlib.import_module(name)

            def register():
                Installer().install()
            """,
        "p/backends/__init__.py": "", "p/backends/alpha.py": BACKEND}), new)
    assert not _live(doc, "p/backends/alpha.py") and code != 1, doc["findings"]


# ------------------------------------------- fourteenth held-out set: the values a loader walks
# A row a loop skips with `continue` under a test its folded values decide (`if not b.enabled:`) is
# never imported (F25-n1); a helper reached as a classmethod or staticmethod runs with `cls` bound
# (F25-n2, F22-n2); a generator that logs and filters on its own data yields what it may (F03-n2);
# a helper's `exec_module` recipe imports what its callers name (F03-n1); a helper called with no
# arguments runs on its defaults (F34-n1).
LOADERS = {
    "not_enabled_continue": ("from typing import NamedTuple\n\n\nclass Row(NamedTuple):\n    name: str\n    enabled: bool\n\n\n"
                             "ROWS = (Row('alpha', True), Row('beta', False))\n\n\ndef register():\n    for row in ROWS:\n"
                             "        if not row.enabled:\n            continue\n        importlib.import_module(f'p.backends.{row.name}')\n"),
    "not_both_continue": ("ROWS = [('alpha', True, True), ('beta', True, False)]\n\n\ndef register():\n    for name, on, ready in ROWS:\n"
                          "        if not (on and ready):\n            continue\n        importlib.import_module('p.backends.' + name)\n"),
    "disabled_or_skip": ("SKIP = ('beta',)\n\n\ndef register():\n    for name in ('alpha', 'beta'):\n"
                         "        if name in SKIP or not name:\n            continue\n        importlib.import_module('p.backends.%s' % name)\n"),
    "classmethod_layout": ("class Layout:\n    ROOT = 'p.backends'\n\n    @classmethod\n    def module_for(cls, name):\n        return f'{cls.ROOT}.{name}'\n\n\n"
                           "def register():\n    for name in {'alpha': 'x'}:\n        importlib.import_module(Layout.module_for(name))\n"),
    "staticmethod_layout": ("class Layout:\n    @staticmethod\n    def module_for(name):\n        return 'p.backends.' + name\n\n\n"
                            "def register():\n    importlib.import_module(Layout.module_for('alpha'))\n"),
    "inherited_classmethod": ("class Base:\n    ROOT = 'p.nowhere'\n\n    @classmethod\n    def module_for(cls, name):\n        return f'{cls.ROOT}.{name}'\n\n\n"
                              "class Layout(Base):\n    ROOT = 'p.backends'\n\n\ndef register():\n    importlib.import_module(Layout.module_for('alpha'))\n"),
    "classmethod_tuple_in_generator": ("class Ext:\n    PACKAGE = 'p.backends'\n    MODULES = ('alpha',)\n\n    @classmethod\n    def qualified(cls):\n"
                                       "        return tuple(f'{cls.PACKAGE}.{n}' for n in cls.MODULES)\n\n\ndef modules():\n    for dotted in Ext.qualified():\n"
                                       "        yield importlib.import_module(dotted)\n\n\ndef register():\n    for module in modules():\n        pass\n"),
    "generator_logging_and_runtime_filter": ("import logging\nimport os\n\nlog = logging.getLogger(__name__)\nTABLE = {'alpha': 'p.backends.alpha'}\n\n\n"
                                             "def enabled():\n    off = {p for p in os.environ.get('P_OFF', '').split(',') if p}\n"
                                             "    for key, module in TABLE.items():\n        log.debug('p: %s', key)\n        if key in off:\n            continue\n"
                                             "        yield module\n\n\ndef register():\n    for module in enabled():\n        importlib.import_module(module)\n"),
    "exec_module_in_a_helper": ("import importlib.util\n\n\ndef _exec(qualified):\n    spec = importlib.util.find_spec(qualified)\n"
                                "    module = importlib.util.module_from_spec(spec)\n    spec.loader.exec_module(module)\n    return module\n\n\n"
                                "def register():\n    for name in ('alpha',):\n        _exec(f'p.backends.{name}')\n"),
    "helper_default_table": ("NAMES = ('alpha',)\n\n\ndef load_all(names=NAMES):\n    for name in names:\n        importlib.import_module('p.backends.' + name)\n\n\n"
                             "def register():\n    load_all()\n"),
}


@pytest.mark.parametrize("spelling", sorted(LOADERS))
def test_what_a_loader_walks_decides_which_modules_are_live(upstreams, tmp_path, spelling):
    _, new = upstreams
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"p": "p:register"}),
                             "p/__init__.py": "import importlib\n" + LOADERS[spelling],
                             "p/backends/__init__.py": "", "p/backends/alpha.py": BACKEND, "p/backends/beta.py": BACKEND})
    code, doc = check(root, new)
    assert (_live(doc, "p/backends/alpha.py"), _live(doc, "p/backends/beta.py")) == (True, False) and code == 1


# a member read from an upstream class's own namespace (twenty-third set F05-c1): `C.__dict__[k]`,
# `vars(C)[k]`, the key in a constant: the member the class body binds, a KeyError where it has none
NAMESPACE_READS = {
    "dunder_dict": "Sampler.__dict__[{key!r}]",
    "vars_call": "vars(Sampler)[{key!r}]",
    "key_in_a_constant": "Sampler.__dict__[KEY]",
}


@pytest.mark.parametrize("key", ["forward", "forward_gone"])
@pytest.mark.parametrize("spelling", sorted(NAMESPACE_READS))
def test_a_member_read_from_an_upstream_class_namespace_is_a_reference(upstreams, tmp_path, spelling, key):
    old, _ = upstreams
    code, doc = _check_init(tmp_path, old, f"from sglang.srt.layers.sampler import Sampler\n\nKEY = {key!r}\n\n\n"
                                           f"def register():\n    raw = {NAMESPACE_READS[spelling].format(key=key)}\n    return raw\n")
    refs = [f for f in doc["findings"] if f["target"] == f"sglang.srt.layers.sampler.Sampler.{key}" and f["status"] != "ok"]
    if key == "forward":  # the class body binds it: nothing to report
        assert refs == [] and code == 0, doc["findings"]
    else:
        assert [(f["kind"], f["line"], f["status"], f["breaking"]) for f in refs] == [("reference", 7, "missing", True)] and code == 1, doc["findings"]


# the table grouped by module in a helper's annotated local, then each module imported once and its
# functions set (twenty-ninth set F22-i1): a defaultdict of dicts, setdefault on a dict, a list of rows
GROUPED_PATCHERS = {
    "annotated_defaultdict_of_dicts": ("""
def _grouped() -> DefaultDict[str, Dict[str, Callable]]:
    by_module: DefaultDict[str, Dict[str, Callable]] = collections.defaultdict(dict)
    for key, impl in TABLE.items():
        module_path, _, attr = key.partition(":")
        by_module[module_path][attr] = impl
    return by_module
""", "for m, attrs in _grouped().items():\n        module = importlib.import_module(m)\n        for a, f in attrs.items():\n            setattr(module, a, f)"),
    "annotated_dict_setdefault": ("""
def _grouped():
    grouped: dict[str, dict] = {}
    for key, impl in TABLE.items():
        module_path, attr = key.split(":")
        grouped.setdefault(module_path, {})[attr] = impl
    return grouped
""", "for m, attrs in _grouped().items():\n        vars(importlib.import_module(m)).update(attrs)"),
    "annotated_list_of_rows": ("""
def _grouped():
    rows: List[Tuple[str, str, Callable]] = []
    for key, impl in TABLE.items():
        module_path, _, attr = key.rpartition(":")
        rows.append((module_path, attr, impl))
    return rows
""", "for m, a, f in _grouped():\n        setattr(importlib.import_module(m), a, f)"),
}


@pytest.mark.parametrize("fits", [False, True])
@pytest.mark.parametrize("spelling", sorted(GROUPED_PATCHERS))
def test_a_table_grouped_in_a_helpers_annotated_local_is_judged(upstreams, tmp_path, spelling, fits):
    _, new = upstreams
    helper, statement = GROUPED_PATCHERS[spelling]
    code, doc = _check_init(tmp_path, new, f"""
import collections
import importlib
from typing import Callable, DefaultDict, Dict, List, Tuple


def my_get_rope(head_size, base{", **kwargs" if fits else ""}):
    return head_size


TABLE = {{"sglang.srt.layers.rope:get_rope": my_get_rope}}
{helper}

def register():
    {statement}
""")
    patch = by_target(doc["findings"])["sglang.srt.layers.rope.get_rope"]
    if fits:
        assert not patch["breaking"] and code == 0, patch
    else:
        assert (patch["status"], patch["breaking"]) == ("signature_changed", True) and code == 1, patch


# modules looked up in a plugin mapping that imports on a miss (twenty-ninth set F22-i2): a dict
# subclass's __missing__, a UserDict subclass's __missing__, a plain class's __getitem__ (the
# data model: d[k] calls type(d).__getitem__; dict's calls __missing__ for a key it lacks)
LOOKUP_HOOKS = {
    "dict_missing": """
class _Modules(dict):
    def __missing__(self, name):
        module = importlib.import_module(name)
        self[name] = module
        return module
""",
    "userdict_missing": """
class _Modules(collections.UserDict):
    def __missing__(self, name: str) -> ModuleType:
        self.data[name] = loaded = importlib.import_module(name)
        return loaded
""",
    "getitem": """
class _Modules:
    \"\"\"sys.modules-like, importing on first use.\"\"\"

    def __getitem__(self, name):
        return importlib.import_module(name)
""",
}


@pytest.mark.parametrize("fits", [False, True])
@pytest.mark.parametrize("spelling", sorted(LOOKUP_HOOKS))
def test_a_module_a_plugin_mapping_imports_on_lookup_is_patched(upstreams, tmp_path, spelling, fits):
    _, new = upstreams
    code, doc = _check_init(tmp_path, new, f"""
import collections
import importlib
from types import ModuleType

{LOOKUP_HOOKS[spelling]}

MODULES = _Modules()


def my_get_rope(head_size, base{", **kwargs" if fits else ""}):
    return head_size


PATCHES = [("sglang.srt.layers.rope", "get_rope", my_get_rope)]


def register():
    for module_path, attr, impl in PATCHES:
        try:
            owner = MODULES[module_path]
        except ImportError:
            continue
        setattr(owner, attr, impl)
""")
    patch = by_target(doc["findings"])["sglang.srt.layers.rope.get_rope"]
    if fits:
        assert not patch["breaking"] and code == 0, patch
    else:
        assert (patch["status"], patch["breaking"]) == ("signature_changed", True) and code == 1, patch
