"""What a plugin repo is made of, as the scanner records it and the judge reads it: entry
points, modules, roots, classes and every dependency on upstream with the conditions it sits
under. Also where those come from on disk (pyproject.toml / setup.cfg / setup.py entry points,
the module files, namespace packages included).
"""

from __future__ import annotations

import ast
import configparser
import itertools
import operator
import os
import posixpath
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Literal, NamedTuple

import tomllib

from harness.engines import (
    ENGINES,
    SGLANG,
    EngineProfile,
    Kind,
    Loader,
    PinForm,
    engine_named,
    engine_of_spec,
    profile,
)
from harness.errors import HarnessError
from harness.knowledge.model.findings import HookType
from harness.knowledge.model.symbol_records import Param, literal_text, module_literals, walk

_SKIP_DIRS = {"tests", "test", "docs", "build", "dist", "examples", "benchmarks", "__pycache__", "node_modules", "site-packages"}

Scope = Literal["module", "function", "runtime"]


@dataclass
class EntryPoint:
    group: str
    name: str
    value: str  # "pkg.module:callable"
    file: str


@dataclass
class PluginModule:
    name: str
    file: str  # relative to the plugin root
    is_package: bool
    live: bool = False
    loaded_by: set[str] = field(default_factory=set)  # Loaders that import it while the plugin loads (not later from a function)
    error: str | None = None  # why the file could not be read or parsed


@dataclass(frozen=True)
class Root:
    module: str  # a module, or "pkg.*" for each direct submodule of pkg (pkgutil.iter_modules)
    why: str  # "entry point sglang.srt.plugins:xdev_hooks", "--entry", "imports sglang (no entry points)"
    loader: Loader  # what imports it, which decides what an ImportError there costs
    # the conditions under which the engine imports it at all: a class the platform names only in
    # one branch (`if use_v1: return "…v1…Backend"`) is imported only when that branch is taken
    guards: tuple[GuardCond, ...] = ()



# A guard condition, independent of any upstream version; the judge evaluates it against one.
# Frozen dataclasses (not tuples): two conditions are equal only when they are the same form.


@dataclass(frozen=True)
class HasAttr:
    """`hasattr(owner, name)` (or `name in dir(owner)`, `owner.name is not None`) on an upstream module or class."""

    owner: str
    name: str


@dataclass(frozen=True)
class FieldPresent:
    """`hasattr(v, name)` on an instance of the upstream class `cls` (fields.field_present)."""

    cls: str
    name: str


@dataclass(frozen=True)
class ParamFieldPresent:
    """`hasattr(param, name)` on an unannotated parameter of a plugin function; the scan's
    finish() rewrites it to FieldPresent once it knows the class (or Undecided)."""

    function: str
    param: str
    name: str


@dataclass(frozen=True)
class HasKey:
    """`"key" in registry` (or `registry.get("key")` tested) on an upstream module-level dict."""

    registry: str
    key: str


@dataclass(frozen=True)
class ModuleExists:
    """`importlib.util.find_spec(path)`, `sys.modules.get(path) is not None`."""

    path: str


@dataclass(frozen=True)
class ImportsResolve:
    """The upstream imports a `try` body makes all resolve: (module, name | None) each."""

    imports: tuple[tuple[str, str | None], ...]


@dataclass(frozen=True)
class VersionCompare:
    """`<running SGLang version> <op> literal`; `parsed`: compared as versions, else as strings."""

    op: Literal["<", "<=", ">", ">=", "==", "!="]
    literal: str
    parsed: bool

    def holds(self, actual: str | None) -> bool | None:
        """`actual <op> literal` as the plugin's code computes it: PEP 440 ordering for parsed
        versions, plain string ordering for `sglang.__version__ >= "0.5.20"`; None for no
        version or one PEP 440 cannot parse."""
        from packaging.version import InvalidVersion, Version

        if actual is None:
            return None
        compare = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge, "==": operator.eq, "!=": operator.ne}[self.op]
        if not self.parsed:
            return compare(actual, self.literal)
        try:
            return compare(Version(actual), Version(self.literal))
        except InvalidVersion:
            return None


@dataclass(frozen=True)
class PythonCompare:
    """`sys.version_info <op> (3, 10)` (`items` n: `sys.version_info[:n] <op> …`): the running
    interpreter's version, which the release's Requires-Python bounds."""

    op: Literal["<", "<=", ">", ">=", "==", "!="]
    version: tuple[int, ...]
    items: int | None = None


@dataclass(frozen=True)
class Not:
    cond: Cond


@dataclass(frozen=True)
class AllOf:
    conds: tuple[Cond, ...]


@dataclass(frozen=True)
class AnyOf:
    conds: tuple[Cond, ...]


@dataclass(frozen=True)
class Const:
    value: bool


@dataclass(frozen=True)
class Undecided:
    """A test the scan cannot read as a condition on upstream."""


@dataclass(frozen=True)
class Unknown:
    """A value the scan cannot read, named (`what`: where it was assigned) so that two reads of
    the same value are one atom: `self.v2 = cfg.v2; if self.v2 and on_old: self.v2 = False`
    leaves `v2 and not on_old`, false on the old release whatever `cfg.v2` is."""

    what: str


@dataclass(frozen=True)
class Runtime:
    """A test of run-time data only (a parameter or local of the function it sits in, their
    attributes, items and methods: `if n == 0`, `if cache_k.dtype != self.dtype`, `if x is not
    None`): it holds for some inputs, so what it guards runs (harness.knowledge.judge.breaking)."""

    text: str


@dataclass(frozen=True)
class SelfFlag:
    """`self.<name>` tested in a method of the plugin class `cls` (not in its __init__); the
    scan's finish() rewrites it to what __init__ leaves there (instance_flag), or Undecided."""

    cls: str
    name: str


Cond = (
    HasAttr | HasKey | FieldPresent | ParamFieldPresent | ModuleExists | ImportsResolve | VersionCompare | PythonCompare | Not | AllOf | AnyOf | Const
    | Undecided | Unknown | Runtime | SelfFlag
)
UNDECIDED = Undecided()


def kleene(cond: Cond, leaf: Callable[[Cond], bool | None]) -> bool | None:
    """The truth of a condition in Kleene's three-valued logic: `Not`/`AllOf`/`AnyOf`/`Const`
    reduced here, every other node by `leaf` (True, False, or None for not decided). An `AnyOf`
    holds when one operand does, whatever the undecided ones; an `AllOf` fails when one fails.
    The one reducer the scan (a test of folded values) and the judge (a guard on a release) share."""
    if isinstance(cond, Const):
        return cond.value
    if isinstance(cond, Not):
        inner = kleene(cond.cond, leaf)
        return None if inner is None else not inner
    if isinstance(cond, (AllOf, AnyOf)):
        values = [kleene(c, leaf) for c in cond.conds]
        want = isinstance(cond, AnyOf)  # `or` holds at a true operand, `and` fails at a false one
        return want if want in values else (None if None in values else not want)
    return leaf(cond)


@dataclass(frozen=True)
class GuardCond:
    cond: Cond
    text: str  # the condition as written (negated ones as "not (...)")
    line: int


@dataclass(frozen=True)
class Catch:
    """A `try/except` (or `contextlib.suppress`) around a dependency: these failures are handled."""

    exceptions: frozenset[str]  # exception class names; "*" for a bare except
    line: int
    # what a handler raises instead of what it caught (`except ImportError as e: raise
    # UpstreamMissing(…) from e`), for an enclosing try that catches that: class names
    translates: frozenset[str] = frozenset()

    def handles(self, errors: frozenset[str]) -> bool:
        """Whether it catches any of `errors` (a KindSpec's); a bare except catches anything."""
        return "*" in self.exceptions or bool(self.exceptions & errors)


@dataclass(frozen=True)
class CallShape:
    positional: int
    keywords: tuple[str, ...]
    star_args: bool
    star_kwargs: bool
    # keywords passed on some runs only: `**({"k": v} if c else {})` (star_kwargs stays False)
    sometimes: tuple[str, ...] = ()


# References that need a class where they point, not just a name: a class statement's base, and
# isinstance()/issubclass()'s second argument (both raise TypeError on a function)
CLASS_USE_BASE, CLASS_USE_CHECK = "base", "isinstance"
CLASS_USES = (CLASS_USE_BASE, CLASS_USE_CHECK)
# a call of a plugin @dataclass over an upstream class: its __init__ takes the upstream class's
# dataclass fields, then the plugin's own (Dependency.params)
DATACLASS_EXTENDS = "dataclass-extends"
# an override of `__init__` that @dataclass writes for a plugin subclass of an upstream class
DATACLASS_INIT = "dataclass-init"
# a call of a name a caught import binds, whose handler binds it to None where the import fails
# (`try: from sglang.x import f` / `except ImportError: f = None`): on such a release the call
# raises TypeError ('NoneType' object is not callable) unless a test of the name guards it
NONE_FALLBACK_CALL = "none-fallback-call"
# ... and a read of an attribute of such a name (`LayerCommunicator.prepare_attn`): AttributeError
# ('NoneType' object has no attribute) on that release, unless a test of the name guards it
NONE_FALLBACK_READ = "none-fallback-read"
# a call seen again with the string arguments one binding of its function's parameters gives
# (`get_quantization_config(method)` in a helper): only a keyed lookup's key is judged on it
BOUND_ARGUMENTS = "bound-arguments"
# a method of a plugin class deriving from no upstream class that the plugin binds to an upstream
# class's name (`mixtral.MixtralDecoderLayer = Fused`): judged as an override of that class's
# method (Dependency.hook names the class), against the calls on the instances upstream builds
STANDS_IN = "stands-in"
# `original = getattr(owner, name)` before `setattr(owner, name, wrapper)` in a plugin helper: the
# wrap reads the member first (AttributeError where it is gone); the patch needs it, as a hook does
WRAPPED_ORIGINAL = "wrapped-original"
# `current_platform.x`: a read on the engine's platform instance, which is made from exactly the
# class activate() names (no subclass of it)
PLATFORM_INSTANCE_READ = "platform-instance"
# `obj.attr = P(…)` (or `obj.attr.__class__ = P`) on an instance of an upstream class C: a patch
# of C's instance attribute whose target is "C.attr" and whose `hook` is the plugin class P; the
# calls C's methods make through `self.attr` run P's methods (judge.placements)
PLACED = "instance-attribute"
# `pool.set_kv_buffer(…)` on an object whose upstream class the scan knows (an annotation, a
# construction): a call of that class's method through an instance, judged against the method
# the class's MRO finds (self bound) and, where that refuses it, the subclasses' overrides (the
# object may be one of them)
INSTANCE_CALL = "instance-call"


class Registered(NamedTuple):
    """An implementation a `functools.singledispatchmethod` method registers (`@m.register` with
    its first parameter after self annotated, `@m.register(T)`, `m.register(T, f)`): the type
    named as written (its last component is what dispatch is compared on), its parameters (self
    first), whether its body is one `raise`, and its line."""

    type: str
    params: tuple[Param, ...]
    raises_only: bool
    line: int


@dataclass
class Dependency:
    """One thing in the plugin that needs an upstream symbol to exist (and keep its shape)."""

    kind: Kind
    target: str | None  # absolute dotted path; None when a hook target could not be evaluated
    module: str
    file: str
    line: int
    live: bool = False
    scope: Scope = "module"  # runs at import, inside a function, or only after hooks were applied
    scope_reason: str | None = None
    hook_type: HookType | str | None = None  # as Finding.hook_type
    hook: str | None = None  # the plugin callable's path: the hook's, or the one a patch sets
    params: tuple[Param, ...] | None = None  # the plugin callable's signature (hook, override)
    bound: bool = False  # params start with self/cls that the runtime passes
    raises_only: bool = False  # the plugin callable's body is one `raise`: its signature decides nothing
    # an override that is a functools.singledispatchmethod: its registered implementations (params,
    # raises_only above are the decorated def's, run for an unregistered type)
    dispatch: tuple[Registered, ...] = ()
    passthrough: bool = False  # takes (*args, **kwargs): forwards whatever upstream passes
    expression: str | None = None  # as written
    how: str | None = None  # patches: setattr | assign | item-assign | item-reassign | in-place .append …; references: CLASS_USES
    name: str | None = None  # registrations: backend name / kernel key / argument / model class
    call: CallShape | None = None
    plugin_class: str | None = None  # override / subclass: the plugin class whose MRO decides
    member: str | None = None  # override / subclass: the member name
    access: Literal["class", "instance", "super", "override", "base"] | None = None
    guards: tuple[GuardCond, ...] = ()
    catches: tuple[Catch, ...] = ()
    enclosing: tuple[str, ...] = ()  # dotted paths of the functions it sits in, outermost first
    # a helper's (or an imported module's) dependency a caller's `try` handles, its one call (or
    # import) being in that try: (the caller's module, its enclosing functions, the line, the
    # guards around it), where it fails in the caller's try body
    called_at: tuple[str, tuple[str, ...], int, tuple[GuardCond, ...]] | None = None
    loaded_by: frozenset[str] = frozenset()  # Loaders that import its module while the plugin loads
    # what its site raises, beyond its kind's errors, when the object it writes on is not there:
    # `sys.modules["m"].f = g` KeyError, `setattr(import_module("m"), …)` ImportError
    owner_errors: frozenset[str] = frozenset()
    # calls: the string constants it passes, by position (0, 1, …) or keyword (a key handed to a
    # lookup function upstream, `get_quantization_config("gguf")`)
    arguments: tuple[tuple[int | str, str], ...] = ()
    # a patch in place only while a block of its file runs, (first line, last line): a `with
    # mock.patch.object(…)` block or a function `@mock.patch.object(…)` decorates; None: for good
    within: tuple[int, int] | None = None

    @property
    def errors(self) -> frozenset[str]:
        """The exception class names its failure raises at the plugin site (KindSpec.errors and
        owner_errors): a `try/except` or `suppress` of one of them handles it."""
        return profile().spec(self.kind).errors | self.owner_errors

    @property
    def key(self) -> str:
        return f"{self.kind}:{self.hook_type or self.how or ''}:{self.target or self.expression}"


@dataclass
class MethodDecl:
    name: str
    line: int
    params: tuple[Param, ...]
    decorators: tuple[str, ...]
    raises_only: bool = False  # symbol_records.raises_only
    dispatch: tuple[Registered, ...] = ()  # a functools.singledispatchmethod's registrations (Dependency.dispatch)
    forwards: bool = False  # syntax.forwards_to_super: `__init__(self, *args, **kwargs)` passing both on unchanged
    # `m = a if cond else b`: the other functions the name may hold (each judged as an override)
    alternatives: tuple[MethodDecl, ...] = ()
    # a function bound by assignment (`__init__ = init_dev`): where its def is (file relative to the
    # plugin root, line), wherever the plugin writes it
    defined_at: tuple[str, int] | None = None
    # not a function the class binds: a value `__init__` puts on the instance (`self.m =
    # partial(self.pick, "mha")`), found before the class's attribute, or a callable object in the
    # class body (`m = Formatter()`, no __get__): called without self (Python's data model,
    # "Custom classes" and "Invoking Descriptors")
    held: bool = False

    @property
    def bound(self) -> bool:
        return not self.held and "staticmethod" not in {d.rsplit(".", 1)[-1] for d in self.decorators}


@dataclass(frozen=True)
class SelfRef:
    """`self.x` / `super().x` / `cls.x` read in a method, with what it runs under."""

    member: str
    access: str  # instance | class | super
    line: int
    call: CallShape | None
    guards: tuple[GuardCond, ...] = ()
    catches: tuple[Catch, ...] = ()
    function: str | None = None  # the method it sits in


@dataclass
class PluginClass:
    path: str  # dotted path in the plugin
    module: str
    file: str
    line: int
    bases: list[str]  # qualified base expressions: plugin class paths, upstream paths, outside names
    methods: dict[str, MethodDecl] = field(default_factory=dict)
    # bases of which a run derives from one only (`class P(A if sim else B, SRTPlatform)`, listed
    # as A, B, SRTPlatform): one of them does not shadow another's methods
    base_choices: list[tuple[str, ...]] = field(default_factory=list)
    # `self.x = v` in its methods: x -> (the method, the line) of each
    self_writes: dict[str, list[tuple[str, int]]] = field(default_factory=dict)
    # names bound another way: the class body, setattr(self, "x", …), `self.x += …`, `Cls.x = v`
    bound_otherwise: set[str] = field(default_factory=set)
    dynamic: bool = False  # __getattr__, setattr(self, <expr>, …): members cannot be listed
    # a class decorator or a class keyword (metaclass=…): either may write how the class is built
    decorated: bool = False
    self_refs: list[SelfRef] = field(default_factory=list)
    # `self.<attr> = C(…)` in its methods -> the qualified paths of the classes (or callables)
    # constructed; "?" for any other value (a call on something else, a parameter, a literal)
    attribute_values: dict[str, set[str]] = field(default_factory=dict)
    # `x: C` in the class body (a dataclass or NamedTuple field, a declared attribute) -> C's
    # qualified path, for an upstream class C: what `self.x` holds, as a type checker reads it
    declared: dict[str, str] = field(default_factory=dict)
    # method -> the qualified paths of the classes (or other named objects) it returns by name,
    # not called: `return XPool`, `return A if c else B`, `cls = XPool; return cls` (a platform's
    # factory method: upstream builds its instances from what it returns)
    returns: dict[str, set[str]] = field(default_factory=dict)
    # method -> the names of the instance's own methods it returns bound (`return self._a if c
    # else self._b`: a property handing back a bound method)
    returned_methods: dict[str, set[str]] = field(default_factory=dict)
    # `name = Other` in the class body -> Other's qualified path (what `self.name` reads then)
    class_names: dict[str, str] = field(default_factory=dict)

    @property
    def names(self) -> set[str]:
        """Everything bound in the class body or on its instances (methods aside)."""
        return set(self.self_writes) | self.bound_otherwise

    def binds(self, name: str) -> bool:
        """Whether `name` is bound in the class body or on its instances (`name in names`, without the set)."""
        return name in self.self_writes or name in self.bound_otherwise


@dataclass
class PluginScan:
    root: Path
    entry_points: list[EntryPoint] = field(default_factory=list)
    roots: list[Root] = field(default_factory=list)
    modules: dict[str, PluginModule] = field(default_factory=dict)
    classes: dict[str, PluginClass] = field(default_factory=dict)
    platforms: list[str] = field(default_factory=list)  # paths of plugin classes deriving from SRTPlatform / DeviceMixin
    platform_class_paths: list[str] = field(default_factory=list)  # returned by activate()
    main_modules: set[str] = field(default_factory=set)  # run as `__main__` (`python -m` in the plugin's CI, docs)
    # platform classes nothing loads: not returned, no base of one returned, named nowhere else
    unloaded_platforms: list[str] = field(default_factory=list)
    dependencies: list[Dependency] = field(default_factory=list)
    # attribute names the plugin reads anywhere (`x.name`, getattr(x, "name")) -> first "file:line"
    attribute_uses: dict[str, str] = field(default_factory=dict)
    # module names the plugin puts in sys.modules itself (`sys.modules.setdefault("vllm.x", m)`,
    # `sys.modules[name] = m`) -> "file:line": an import of that name gets the plugin's module
    provided_modules: dict[str, str] = field(default_factory=dict)
    # identifier strings the plugin writes (a name looked up later, e.g. a config class in a
    # registry of names) -> first "file:line"; not the name argument of a setattr
    name_strings: dict[str, str] = field(default_factory=dict)
    # module -> "file:line: expression" of the first `import_module(x)` there whose x the scan
    # cannot name (not a discovery of the plugin's own package): what it imports is not known
    unnamed_imports: dict[str, str] = field(default_factory=dict)
    # modules only a conditionally named class brings in (scan.liveness.mark_live): the
    # condition, for the judge (judge.conditions.stale_branch)
    conditional: dict[str, GuardCond] = field(default_factory=dict)
    # those of them a platform class activate() returns under a condition brings in
    platform_conditional: set[str] = field(default_factory=set)
    # modules every import of which sits under a guard (`if FLAG: import m`, `if self.v2: from m
    # import R`), along every path from the roots: when they are imported at all (mark_live)
    imported_when: dict[str, GuardCond] = field(default_factory=dict)
    # plugin classes handed to a call by keyword (`layer_type=DevDecoderLayer`, also inside
    # functools.partial): (keyword, class path); upstream may build them where it calls that parameter
    class_arguments: set[tuple[str, str]] = field(default_factory=set)

    @property
    def live_modules(self) -> list[str]:
        return [name for name, module in self.modules.items() if module.live]

    @property
    def active_platform(self) -> str | None:
        """The plugin platform class the engine's platform instance (`current_platform`) is
        made from when the plugin is active: the one class activate() names, when it derives
        from the platform base; None for none or several (which one runs is the machine's)."""
        paths = {p.replace(":", ".") for p in self.platform_class_paths}
        return next(iter(paths)) if len(paths) == 1 and next(iter(paths)) in self.platforms else None


# ----------------------------------------------------------------------------- repo layout


def is_upstream(path: str | None) -> bool:
    """Whether a dotted path names the upstream package or something in it (harness.engines.profile)."""
    return profile().is_upstream(path)


def read_entry_points(root: Path, groups: tuple[str, ...] | None = None) -> list[EntryPoint]:
    """The engine's entry points (`groups`, default the profile's) declared in pyproject.toml,
    setup.cfg or setup.py, or, for an unpacked wheel or an installed tree that has none of
    those, in its `*.dist-info` / `*.egg-info` entry_points.txt (what importlib.metadata reads).

    Raises HarnessError for a malformed pyproject.toml / setup.cfg."""
    groups = profile().groups if groups is None else groups
    found: list[EntryPoint] = []
    pyproject = root / "pyproject.toml"
    text = packaging_text(pyproject, root)
    if text is not None:
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise HarnessError(f"{pyproject}: malformed TOML: {exc}") from None
        tables = data.get("project", {}).get("entry-points", {})
        for group in groups:
            table = tables.get(group) if isinstance(tables, dict) else None
            if table is not None and not isinstance(table, dict):
                raise HarnessError(f'{pyproject}: [project.entry-points."{group}"] must be a table of name = "module:attr"')
            for name, value in (table or {}).items():
                found.append(EntryPoint(group, name, str(value).replace(" ", ""), "pyproject.toml"))
    setup_cfg = root / "setup.cfg"
    text = packaging_text(setup_cfg, root)
    if text is not None:
        parser = configparser.ConfigParser()
        try:
            parser.read_string(text, str(setup_cfg))
        except configparser.Error as exc:
            raise HarnessError(f"{setup_cfg}: malformed: {str(exc).splitlines()[0]}") from None
        if parser.has_section("options.entry_points"):
            for group in groups:
                for line in parser.get("options.entry_points", group, fallback="").splitlines():
                    if "=" in line:
                        name, value = (part.strip() for part in line.split("=", 1))
                        found.append(EntryPoint(group, name, value.replace(" ", ""), "setup.cfg"))
    setup_py = root / "setup.py"
    text = packaging_text(setup_py, root)
    if text is not None:
        found.extend(_setup_py_entry_points(text, groups))
    declared = {(ep.group, ep.name) for ep in found}  # a checkout's build metadata repeats its packaging files
    for metadata in sorted([*root.glob("*.dist-info"), *root.glob("*.egg-info")]):
        found.extend(ep for ep in _metadata_entry_points(metadata / "entry_points.txt", root, groups) if (ep.group, ep.name) not in declared)
    return found


def _metadata_entry_points(path: Path, root: Path, groups: tuple[str, ...]) -> list[EntryPoint]:
    """The entry points of `groups` in one entry_points.txt (INI: `[group]`, `name = value`);
    one that cannot be read or parsed declares none."""
    parser = configparser.ConfigParser(delimiters=("=",), interpolation=None)
    parser.optionxform = str  # entry-point names keep their case
    try:
        parser.read_string(module_source(path, root, _FILE_BYTES).decode(errors="replace"))
    except (OSError, configparser.Error):
        return []
    relative = str(path.relative_to(root))
    return [EntryPoint(group, name, value.replace(" ", ""), relative) for group in groups if parser.has_section(group) for name, value in parser.items(group)]


@dataclass(frozen=True)
class DeclaredPin:
    """What a plugin declares it targets upstream, and where it says so."""

    form: PinForm  # "release": `value` is a version; "commit": a commit of upstream main
    value: str  # "0.23.0", or a commit sha
    source: str  # "requirements.txt", "vllm_kunlun/platforms/version.py:2", ".github/vllm-release-tag.commit"


# where plugins write the upstream version outside their requirements, besides the profile's
# pin files: module files named so, and the docs' Sphinx config (vllm-ascend's myst_substitutions)
_VERSION_FILES = ("version.py", "_version.py", "versions.py")
_DOCS_CONFIGS = ("docs/source/conf.py", "docs/conf.py")


# Files a team runs plugin modules from: CI workflows and the composite actions they use, build and task files, scripts and docs
_RUN_GLOBS = (".github/workflows/*.yml", ".github/workflows/*.yaml", ".github/actions/*/action.yml", ".github/actions/*/action.yaml", ".gitlab-ci.yml", ".gitlab-ci.yaml", ".buildkite/*.yml", ".buildkite/*.yaml",
              ".buildkite/*/*.yml", ".buildkite/*/*.yaml", ".circleci/*.yml", ".circleci/*.yaml", "ci/*.yml", "ci/*.yaml", "Makefile", "Dockerfile*", "*/Dockerfile*",
              "docker-compose*.yml", "docker-compose*.yaml", "compose*.yml", "compose*.yaml",
              "*.sh", "scripts/*.sh", "tools/*.sh", "ci/*.sh", ".ci/*", "README*", "docs/*.md", "docs/**/*.md", "docs/*.rst", "tox.ini", "noxfile.py",
              # task runners' commands: hatch / pdm / poe scripts in pyproject.toml, a justfile
              "pyproject.toml", "justfile", "Justfile", ".justfile",
              # the rest of the docs a team writes (examples/README.md, benchmarks/*.md), to a bounded depth
              "*.md", "*.rst", "*/*.md", "*/*.rst", "*/*/*.md", "*/*/*.rst", "*/*.sh", "*/*/*.sh",
              # any other CI's layout: its files at the top (Jenkinsfile, .travis.yml, azure-pipelines.yml) and the
              # YAML, shell and Groovy files of hidden folders and ci/ to two levels (.jenkins/test_config.yaml)
              "Jenkinsfile*", "*/Jenkinsfile*", "*.yml", "*.yaml", ".*.yml", ".*.yaml", ".*/*.yml", ".*/*.yaml", ".*/*/*.yml", ".*/*/*.yaml",
              ".*/*.sh", ".*/*/*.sh", ".*/*.groovy", ".*/*/*.groovy", "ci/*/*.yml", "ci/*/*.yaml", "ci/*/*.sh",
              # last (the bound keeps the rest): the team's tests, which CI runs -- one running
              # `python -m pkg.tool` in a subprocess runs it
              "tests/test_*.py", "tests/*/test_*.py", "tests/*/*/test_*.py", "test/test_*.py", "test/*/test_*.py")
_RUN_FILES_MOST = 400  # a bound on what is read: a plugin checkout is not trusted
# `python -m pkg.mod`, `python3.11 -u -m pkg.mod`, `torchrun … -m pkg.mod`, `uv run -m pkg.mod` (uv's
# `--module`), and the interpreter named by a make or shell variable (`$(PYTHON) -m pkg.mod`, `${PY} -m …`)
_INTERPRETER = r"(?:\b(?:python[0-9.]*|torchrun|accelerate\s+launch|uv\s+run)\b|\$[({]?\w*PY\w*[)}]?)"
_PYTHON_M = re.compile(_INTERPRETER + r"[^\n;&|`]*?\s-m\s+([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)")


# an exec-form command, `["python3", "-m", "pkg.mod"]` (a Dockerfile's ENTRYPOINT/CMD/RUN, a compose or
# workflow flow list): read as the command line it stands for
_EXEC_FORM = re.compile(r'\[\s*"[^"\n\]]*"(?:\s*,\s*"[^"\n\]]*")*\s*\]')

# the same as the leading string arguments of a Python call, `session.run("python", "-m", "pkg.mod",
# x)` (nox), `subprocess.run(("python3", "-m", "pkg.mod"))`: in a Python file, read as that command line
_CALL_FORM = re.compile(r"""[(\[]\s*(?:["'][^"'\n]*["']\s*,\s*)*["'][^"'\n]*["']""")

# runpy.run_module("pkg.mod", …) in Python code (a test running a tool): what `python -m` does
# (the runpy docs), the module named by its first argument or `mod_name=`
_RUN_MODULE = re.compile(r"""\brun_module\(\s*(?:mod_name\s*=\s*)?["']([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)["']""")
_PYTHON_M_MATRIX = re.compile(_INTERPRETER + r"[^\n;&|`]*?\s-m\s+\$\{\{\s*matrix\.([\w-]+)\s*\}\}")


def _matrix_values(text: str) -> dict[str, list[str]]:
    """Of a GitHub Actions workflow, each matrix variable -> the strings its jobs' `strategy.matrix`
    gives it (a list, and `include` entries); {} for text that is no such YAML."""
    import yaml

    try:
        workflow = yaml.safe_load(text)
    except yaml.YAMLError:
        return {}
    jobs = workflow.get("jobs") if isinstance(workflow, dict) else None
    values: dict[str, list[str]] = {}
    for job in jobs.values() if isinstance(jobs, dict) else ():
        matrix = job.get("strategy", {}).get("matrix") if isinstance(job, dict) and isinstance(job.get("strategy"), dict) else None
        if not isinstance(matrix, dict):
            continue
        rows = [{key: value} for key, value in matrix.items() if key not in ("include", "exclude")]
        rows += [entry for entry in matrix.get("include") or [] if isinstance(entry, dict)]
        for row in rows:
            for key, value in row.items():
                for item in value if isinstance(value, list) else [value]:
                    if isinstance(item, str) and item not in values.setdefault(key, []):
                        values[key].append(item)
    return values


def run_entry_sources(root: Path) -> list[Path]:
    """The regular files inside `root` that run_entries reads (symlinks and files over 1 MiB are
    not read; at most 400): what a cached verdict must key on."""
    found: list[Path] = []
    for pattern in _RUN_GLOBS:
        for path in sorted(root.glob(pattern)):
            if not _plain_file(path) or path.relative_to(root).parts[0] in (".git", ".venv", ".tox", ".nox", ".mypy_cache", ".pytest_cache"):
                continue
            if path not in found:
                found.append(path)
            if len(found) >= _RUN_FILES_MOST:
                return found
    return found


def run_entries(root: Path) -> list[tuple[str, str, bool]]:
    """Modules the plugin's own packaging, CI and docs run directly, so they are live whatever the
    engine imports: (dotted module, why, whether it is run as `python -m`: a package so run runs
    its `__main__` module too), in file order. Console scripts (`[project.scripts]`,
    `[project.gui-scripts]`, `console_scripts` entry points in setup.cfg / setup.py / the
    metadata's entry_points.txt: the module of `name = "pkg.mod:main"`), and `python -m
    pkg.mod` (also through `torchrun`, `accelerate launch`, `uv run`; an exec-form list
    `["python", "-m", "pkg.mod"]` too, and a call's leading string arguments in a noxfile or a
    test, `session.run("python", "-m", "pkg.mod", …)`, `subprocess.run([sys.executable, "-m",
    "pkg.mod"])`, `runpy.run_module("pkg.mod")`) in CI workflows, Makefiles, Dockerfiles and compose files, shell scripts, task
    runners' scripts (hatch / pdm / poe tables of pyproject.toml, a justfile), the team's tests
    and docs (run_entry_sources). Names that are not plugin modules
    are left to the caller to drop. Unreadable files name nothing; a malformed pyproject.toml
    raises HarnessError (as read_entry_points)."""
    found: list[tuple[str, str, bool]] = []
    pyproject = root / "pyproject.toml"
    text = packaging_text(pyproject, root)
    if text is not None:
        try:
            project = tomllib.loads(text).get("project", {})
        except tomllib.TOMLDecodeError as exc:
            raise HarnessError(f"{pyproject}: malformed TOML: {exc}") from None
        for table in ("scripts", "gui-scripts"):
            scripts = project.get(table) if isinstance(project, dict) else None
            for name, value in (scripts or {}).items() if isinstance(scripts, dict) else ():
                found.append((str(value).partition(":")[0].strip(), f"console script {name} ([project.{table}] in pyproject.toml)", False))
    for ep in read_entry_points(root, ("console_scripts", "gui_scripts")):
        found.append((ep.value.partition(":")[0], f"console script {ep.name} ({ep.group} in {ep.file})", False))
    for path in run_entry_sources(root):
        try:
            text = _without_comments(path, path.read_text(errors="replace"))
        except OSError:
            continue
        # a command continued over lines: a shell `\` line end, a YAML folded or literal block
        # (`run: >-` and indented lines), read as the one line the shell runs
        joined = re.sub(r"\\\r?\n[ \t]*", " ", text)
        if path.suffix in (".yml", ".yaml"):
            joined = re.sub(r"\r?\n[ \t]+(?=\S)", " ", joined)
        joined = _EXEC_FORM.sub(lambda form: " ".join(re.findall(r'"([^"]*)"', form.group(0))), joined)
        if path.suffix == ".py":
            # (a test's `subprocess.run([sys.executable, "-m", "pkg.tool"])`: the interpreter running it)
            joined = re.sub(r"\bsys\.executable\b", '"python"', joined)
            joined = _CALL_FORM.sub(lambda form: form.group(0)[0] + " ".join(re.findall(r"""["']([^"'\n]*)["']""", form.group(0))), joined)
        if path.suffix in (".yml", ".yaml"):
            # `python -m ${{ matrix.probe }}`: the job runs once per value of its matrix (GitHub Actions)
            matrix = _matrix_values(text)
            for match in _PYTHON_M_MATRIX.finditer(joined):
                for module in matrix.get(match.group(1), []):
                    at = re.search(rf"\b{re.escape(module)}\b", text)
                    line = text.count("\n", 0, at.start() if at else 0) + 1
                    found.append((module, f"run with `python -m {module}` (matrix.{match.group(1)}, {path.relative_to(root)}:{line})", True))
        for match in _PYTHON_M.finditer(joined):
            module = match.group(1)
            # its line in the file as written: where the module name first follows a -m
            at = re.search(rf"-m\s+{re.escape(module)}\b", text) or re.search(rf"\b{re.escape(module)}\b", text)
            line = text.count("\n", 0, at.start() if at else 0) + 1
            found.append((module, f"run with `python -m {module}` ({path.relative_to(root)}:{line})", True))
        for match in _RUN_MODULE.finditer(text) if path.suffix == ".py" else ():
            line = text.count("\n", 0, match.start()) + 1
            found.append((match.group(1), f"run with `runpy.run_module({match.group(1)!r})`, as `python -m` runs it ({path.relative_to(root)}:{line})", True))
    return list(dict.fromkeys(found))


def _without_comments(path: Path, text: str) -> str:
    """`text` with its whole-line comments blanked (lines kept, for line numbers): a line whose
    first mark is `#` in shell scripts, YAML, Makefiles, Dockerfiles and INI/TOML files (`;` too
    in INI files: tox.ini, setup.cfg); in Markdown and reST, only inside fenced code blocks (a
    `#` line outside one is a heading). Nothing runs a commented-out command."""
    markdown = path.suffix.lower() in (".md", ".rst", ".txt")
    marks = ("#", ";") if path.suffix.lower() in (".ini", ".cfg") else ("#",)
    lines, fenced = text.split("\n"), False
    for at, line in enumerate(lines):
        stripped = line.lstrip()
        if markdown and stripped.startswith(("```", "~~~")):
            fenced = not fenced
            continue
        if (fenced or not markdown) and stripped.startswith(marks) and not stripped.startswith("#!"):
            lines[at] = ""
    return "\n".join(lines)


def pin_sources(root: Path) -> list[Path]:
    """The non-module files declared_pins may read a pin from (requirements, metadata, the
    profile's pin files, the docs' config, container files, install scripts, READMEs), present
    or not: what a cached verdict must key on."""
    globs = ("requirements*.txt", "*.dist-info/METADATA", "*.egg-info/requires.txt", "*.egg-info/PKG-INFO")
    return sorted({*(p for pattern in globs for p in root.glob(pattern)), *(root / name for name in (*profile().pin_files, *_DOCS_CONFIGS)),
                   *_install_files(root)})


# Files that name the upstream a plugin is built against outside its packaging: container files
# (`ARG SGLANG_VERSION=0.5.17`, `ENV VLLM_TAG=v0.23.0`, `FROM lmsysorg/sglang:v0.5.17-cu126`, `RUN pip
# install sglang==0.5.17`), install scripts and READMEs (`pip install "sglang[all]==0.5.17"`)
_CONTAINER_GLOBS = ("Dockerfile*", "Containerfile*", "*.Dockerfile", "*.dockerfile", "docker/Dockerfile*", "docker/*.Dockerfile",
                    "docker/Containerfile*", ".devcontainer/Dockerfile*")
_SCRIPT_GLOBS = ("install*.sh", "*.sh", "scripts/*.sh", "tools/*.sh", "docker/*.sh", "ci/*.sh")
_README_GLOBS = ("README*", "docs/install*.md", "docs/**/install*.md", "docs/install*.rst", "docs/**/install*.rst")
_FILE_BYTES, _PIN_FILES_MOST = 1 << 20, 200  # a plugin checkout is not trusted: bounded reads, regular files only
_MODULE_BYTES = 16 << 20  # a plugin module read by the scanner (generated tables run to a few MiB)


def _install_files(root: Path) -> list[Path]:
    """Container files, then install scripts, then READMEs: regular files inside `root` (no
    symlink, FIFO or device; at most 1 MiB each, 200 in all), in that order."""
    found: list[Path] = []
    for pattern in (*_CONTAINER_GLOBS, *_SCRIPT_GLOBS, *_README_GLOBS):
        for path in sorted(root.glob(pattern)):
            if path not in found and len(found) < _PIN_FILES_MOST and _plain_file(path):
                found.append(path)
    return found


def _plain_file(path: Path) -> bool:
    """A regular file, not a symlink, of at most 1 MiB: safe to read whole."""
    try:
        st = path.lstat()
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and st.st_size <= _FILE_BYTES


def module_source(path: Path, root: Path, most: int = _MODULE_BYTES) -> bytes:
    """The bytes of plugin file `path` (of the checkout at `root`; a module, by default up to
    16 MiB). OSError, its message saying why, for a file that is not a regular file inside the
    checkout of at most `most` bytes — a FIFO (a read would block), a device (`/dev/zero`: it
    would never end), a link leading out — as for one that does not exist: the scanner records
    it as a file that cannot be read."""
    if path.is_symlink():
        try:
            target = path.resolve(strict=True)  # OSError (ENOENT) for a dangling link
        except RuntimeError:  # a link loop
            raise OSError("a symlink loop") from None
        if not target.is_relative_to(root.resolve()):
            raise OSError("a link leading out of the plugin checkout")
        path = target
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO opens without waiting for a writer
    with os.fdopen(fd, "rb") as handle:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError("not a regular file (a FIFO, a device or a socket)")
        if st.st_size > most:
            raise OSError(f"{st.st_size >> 20} MiB, over the {most >> 20} MiB a plugin file is read up to")
        return handle.read(most + 1)


def packaging_text(path: Path, root: Path) -> str | None:
    """The text of packaging file `path` (pyproject.toml, setup.cfg, setup.py) of the plugin at
    `root`; None when it does not exist. HarnessError (one line) when it exists but is not a
    regular file inside the checkout of at most 1 MiB, or is not UTF-8: what it declares decides
    the verdict, so it is refused, never skipped."""
    if not path.exists() and not path.is_symlink():
        return None
    try:
        return module_source(path, root, _FILE_BYTES).decode("utf-8")
    except OSError:
        raise HarnessError(f"{path}: not read: not a regular file inside the plugin checkout of at most 1 MiB") from None
    except UnicodeDecodeError:
        raise HarnessError(f"{path}: not read: UnicodeDecodeError") from None


# Words that name an engine in a container file's variable: its package name, and the short
# form its own images and scripts use (SGLang's Dockerfile: `ARG SGL_VERSION`)
_ENGINE_WORDS = {"sglang": ("SGLANG", "SGL"), "vllm": ("VLLM",)}
_VERSION_WORDS = ("VERSION", "VER", "TAG", "REF", "RELEASE")


def _pin_variable(name: str, package: str) -> bool:
    """Whether container variable `name` pins `package`: among its `_`-separated words (any case)
    a word naming the engine (_ENGINE_WORDS) is directly followed by a version word (VERSION,
    VER, TAG, REF, RELEASE): SGLANG_VERSION, SGL_VERSION, BASE_SGLANG_TAG, vllm_ver. Adjacent
    words only, so the version of another project that shares the prefix (SGL_KERNEL_VERSION,
    VLLM_ASCEND_VERSION: the plugin's own) or a word merely containing VER (SGLANG_SERVER_PORT)
    is not read as the engine's."""
    words = name.upper().split("_")
    engine = _ENGINE_WORDS.get(package, (package.upper(),))
    return any(word in engine and later in _VERSION_WORDS for word, later in itertools.pairwise(words))


def _tag_release(tag: str) -> str | None:
    """The release an image tag or a version value names: the longest of its `-`-separated
    prefixes that is a PEP 440 version (a leading `v` dropped), so the build variant after it
    goes and the release's own suffix stays: `v0.5.14.post1-cu126` -> 0.5.14.post1,
    `v0.5.17rc1-cu126-srt` -> 0.5.17rc1, `0.5.15.dev0` -> 0.5.15.dev0; None when no prefix is
    one (`latest`, `${SGLANG_VERSION}`)."""
    parts = tag.split("-")
    return next((value for end in range(len(parts), 0, -1) if (value := _release("-".join(parts[:end])))), None)


def _container_stages(text: str) -> list[tuple[int, str]]:
    """The container file as (offset, text) blocks in the order their pins count: the final
    stage (from the last `FROM` on: the image that ships), then the global `ARG`s before the
    first `FROM` (the defaults the final stage's `FROM` and bare `ARG NAME` read), then the
    earlier stages from the last to the first (builders the final stage may copy from)."""
    starts = [match.start() for match in re.finditer(r"^[ \t]*FROM[ \t]", text, re.IGNORECASE | re.MULTILINE)]
    bounds = [0, *starts, len(text)]
    head, *stages = [(start, text[start:end]) for start, end in itertools.pairwise(bounds)]
    return [*stages[-1:], head, *reversed(stages[:-1])]


def _install_pins(root: Path, engine) -> list[DeclaredPin]:
    """Release pins in container files (an `ARG`/`ENV` whose name pins the engine, _pin_variable;
    a `FROM` image of the package; a pip install line), install scripts and READMEs (pip / uv
    install lines), each with its file:line, in _install_files order. In a multi-stage
    container file the final stage's pins come first (_container_stages): it is the image that
    ships. Values and tags are read by _tag_release (`.postN`, rc and dev releases kept)."""
    distribution = re.escape(engine.distribution)
    variable = re.compile(r"^[ \t]*(?:ARG|ENV)[ \t]+(\w+)[ \t]*(?:=|[ \t])[ \t]*[\"']?(?P<value>[^\"'\s]+)", re.IGNORECASE | re.MULTILINE)
    image = re.compile(rf"^[ \t]*FROM[ \t]+(?:--\S+[ \t]+)*\S*{re.escape(engine.package)}[\w.-]*:(?P<value>\w[\w.-]*)", re.IGNORECASE | re.MULTILINE)
    install = re.compile(rf"\b(?:pip3?|uv\s+pip|uv)\s+(?:install|add)\b[^\n]*?[\s\"']{distribution}(?:\[[^\]]*\])?\s*(?:==|>=|~=)\s*v?(?P<value>[0-9][\w.+-]*)",
                         re.IGNORECASE)
    pins, containers = [], {path for pattern in _CONTAINER_GLOBS for path in root.glob(pattern)}
    for path in _install_files(root):
        try:
            text = path.read_text(errors="replace")
        except OSError:
            continue
        for offset, block in _container_stages(text) if path in containers else [(0, text)]:
            found = []
            for pattern in (variable, image, install) if path in containers else (install,):
                for match in pattern.finditer(block):
                    if pattern is variable and not _pin_variable(match[1], engine.package):
                        continue
                    value = _tag_release(match["value"].rstrip(".,;)"))
                    if value:
                        line = text.count("\n", 0, offset + match.start()) + 1
                        found.append((line, DeclaredPin("release", value, f"{path.relative_to(root)}:{line}")))
            pins += [pin for _, pin in sorted(found, key=lambda item: item[0])]
    return pins


def declared_pins(root: Path) -> list[DeclaredPin]:
    """Every pin of the profile's upstream the plugin declares, most authoritative first:

    1. its requirement on the profile's distribution (pyproject dependencies, setup.cfg /
       setup.py install_requires, requirements*.txt, an unpacked wheel's `*.dist-info/METADATA`
       or a source tree's `*.egg-info/requires.txt` / PKG-INFO): the pin, or a range's lower bound;
    2. the profile's pin files (vllm-ascend: `.github/vllm-release-tag.commit` holds `v0.23.0`,
       `.github/vllm-main-verified.commit` a commit of vLLM main);
    3. a string assigned to `pip_<package>_version` / `<package>_version` (any case) in the
       docs' conf.py (vllm-ascend) or a plugin module named version.py (vllm-kunlun's
       `vllm_kunlun/platforms/version.py`: `vllm_version = "0.9.2"`), as assignment or dict entry;
    4. container files (`ARG`/`ENV` `SGLANG_VERSION`-like variables, a `FROM` image of the
       package's tag, pip install lines; the final stage's first), then install scripts and
       READMEs (pip / uv install lines), each pin with its file:line (_install_pins).
    A requirement's source says its file:line too where its text is found in the file.
    Unreadable files declare nothing."""
    engine = profile()
    pins = [DeclaredPin("release", version, where) for version, where in _required_versions(root, engine.distribution)]
    for name, form in engine.pin_files.items():
        if not _plain_file(root / name):
            continue  # absent, or a FIFO, device or symlink: nothing a checkout may point elsewhere
        try:
            text = (root / name).read_text(errors="replace").strip()
        except OSError:
            continue
        value = _release(text) if form == "release" else text if re.fullmatch(r"[0-9a-f]{7,40}", text) else None
        if value:
            pins.append(DeclaredPin(form, value, name))
    files = [root / name for name in _DOCS_CONFIGS]
    files += [path for path, _ in plugin_module_files(root).values() if path.name in _VERSION_FILES]
    assigned = re.compile(rf"""["']?\b(pip_)?{re.escape(engine.package)}_version\b["']?\s*[:=]\s*["']([^"'\n]+)["']""", re.IGNORECASE)
    for path in files:
        if not _plain_file(path):
            continue
        try:
            text = path.read_text(errors="replace")
        except OSError:
            continue
        found = []
        for match in assigned.finditer(text):
            value = _release(match[2])
            if value:
                line = text.count("\n", 0, match.start()) + 1
                found.append((not match[1], line, DeclaredPin("release", value, f"{path.relative_to(root)}:{line}")))
        pins += [pin for *_, pin in sorted(found)]  # the pip_ form (a version) before the bare one (may be a branch)
    return pins + _install_pins(root, engine)


def _release(text: str) -> str | None:
    """A release version written as a version or a tag ("v0.23.0"); None for anything else (a branch)."""
    from packaging.version import InvalidVersion, Version

    text = text.strip().removeprefix("v")
    try:
        Version(text)
    except InvalidVersion:
        return None
    return text if re.fullmatch(r"[0-9][0-9A-Za-z.+\-]*", text) else None


def _located(name: str, text: str, requirement: str, quoted: bool) -> str:
    """`name:line` of the first line of `text`, not a comment, that holds `requirement` as
    written (`quoted`: between matching quotes, a TOML string); `name` alone when none does
    (a TOML string written with escapes): the source says a line only where it is certain."""
    needle = re.compile(rf"([\"']){re.escape(requirement)}\1" if quoted else re.escape(requirement))
    lines = text.splitlines()
    return next((f"{name}:{number}" for number, line in enumerate(lines, 1) if not line.lstrip().startswith(("#", ";"))
                 and needle.search(line)), name)


def _poetry_specifier(constraint) -> str | None:
    """A `[tool.poetry.dependencies]` constraint as a PEP 440 specifier (Poetry's docs,
    "Dependency specification"): a bare version is exact (`"0.23.0"` is `==0.23.0`), a caret or
    tilde one bounds it from below (`^0.23.0` / `~0.23.0`: `>=0.23.0`, and below the next
    release, which leaves the base as it is), operators as written; a table's `version`.
    None for `*`, a path, git or url dependency."""
    if isinstance(constraint, dict):
        constraint = constraint.get("version")
    if not isinstance(constraint, str) or not constraint.strip() or constraint.strip() == "*":
        return None
    parts = []
    for part in constraint.split(","):
        part = part.strip()
        if part[:1] in "^~" and not part.startswith("~="):
            part = ">=" + part[1:].strip()
        elif part[:1].isdigit():
            part = "==" + part
        parts.append(part)
    return ",".join(parts)


def _poetry_line(text: str, name: str) -> str:
    """`pyproject.toml:line` of the Poetry dependency `name` (`name = …`), the file alone where not found."""
    needle = re.compile(rf"^\s*[\"']?{re.escape(name)}[\"']?\s*=")
    return next((f"pyproject.toml:{number}" for number, line in enumerate(text.splitlines(), 1) if needle.search(line)), "pyproject.toml")


def _required_versions(root: Path, distribution: str) -> list[tuple[str, str]]:
    """(version, file:line) of each requirement on `distribution` that pins it or bounds it
    from below (the file alone where the requirement's text is not found in it, _located)."""
    from packaging.requirements import InvalidRequirement, Requirement

    texts: list[tuple[str, str]] = []
    try:
        text = packaging_text(root / "pyproject.toml", root) or ""
        data = tomllib.loads(text)
        texts += [(str(r), _located("pyproject.toml", text, str(r), quoted=True)) for r in data.get("project", {}).get("dependencies", []) or []]
        poetry = data.get("tool", {}).get("poetry", {}).get("dependencies", {}) or {}
        texts += [(f"{name}{spec}", _poetry_line(text, name)) for name, constraint in poetry.items()
                  if (spec := _poetry_specifier(constraint)) is not None]
    except (tomllib.TOMLDecodeError, AttributeError):
        pass
    parser = configparser.ConfigParser()
    try:
        text = packaging_text(root / "setup.cfg", root) or ""
        parser.read_string(text)
        texts += [(line, _located("setup.cfg", text, line.strip(), quoted=False))
                  for line in parser.get("options", "install_requires", fallback="").splitlines() if line.strip()]
    except configparser.Error:
        pass
    named: list[str] = []  # requirement files setup.py names (`_read_requirements("device.txt")`)
    try:
        tree = ast.parse(packaging_text(root / "setup.py", root) or "")
        strings = [n.value for n in walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
        folders = ["", *(s for s in strings if s and (root / s).is_dir() and not Path(s).is_absolute() and ".." not in Path(s).parts)]
        named = [f"{folder}/{s}".lstrip("/") for s in strings if s.endswith(".txt") and "/" not in s for folder in folders]
        # literals, or strings built from the module's own string constants (`f"vllm=={VLLM_VERSION}"`),
        # in the keyword's list or a list the module binds to a name
        literals = module_literals(tree)
        for node in walk(tree):
            if isinstance(node, ast.keyword) and node.arg == "install_requires":
                listed = literals.get(node.value.id) if isinstance(node.value, ast.Name) else node.value
                texts += [(text, f"setup.py:{e.lineno}") for e in (listed.elts if isinstance(listed, (ast.List, ast.Tuple)) else ())
                          if (text := literal_text(e, literals)) is not None]
    except (SyntaxError, ValueError):
        pass

    def lines(path: Path) -> list[str]:  # a pin source that is not a plain file inside the checkout declares nothing
        try:
            return module_source(path, root, _FILE_BYTES).decode(errors="replace").splitlines()
        except OSError:
            return []

    # requirements*.txt, then the files setup.py names, each with what its `-r` / `--requirement`
    # lines include (relative to the including file, as pip reads them)
    queue = [*sorted(p.name for p in root.glob("requirements*.txt")), *named]
    seen: set[str] = set()
    while queue:
        name = queue.pop(0)
        if name in seen or name.startswith("../") or not _plain_file(root / name):
            continue  # (read once; nothing outside the checkout)
        seen.add(name)
        for number, line in enumerate(lines(root / name), 1):
            option, _, included = line.strip().partition(" ")
            if option in ("-r", "--requirement") and included.strip():
                queue.insert(0, posixpath.normpath(posixpath.join(posixpath.dirname(name), included.strip())))
            else:
                texts.append((line, f"{name}:{number}"))
    # an unpacked wheel or installed tree (METADATA), a source distribution (PKG-INFO, egg-info)
    for metadata in sorted([*root.glob("*.dist-info/METADATA"), *root.glob("*.egg-info/PKG-INFO"), root / "PKG-INFO"]):
        texts += [(line.split(":", 1)[1].split(";")[0], f"{metadata.relative_to(root)}:{number}")
                  for number, line in enumerate(lines(metadata), 1) if line.startswith("Requires-Dist:")]
    for requires in sorted(root.glob("*.egg-info/requires.txt")):
        texts += [(line, f"{requires.relative_to(root)}:{number}")
                  for number, line in enumerate("\n".join(lines(requires)).split("\n[", 1)[0].splitlines(), 1)]
    found = []
    for text, where in texts:
        try:
            requirement = Requirement(text.split("#")[0].strip())
        except InvalidRequirement:
            continue
        if requirement.name.lower() != distribution:
            continue
        for spec in sorted(requirement.specifier, key=lambda s: s.operator != "=="):
            if spec.operator in ("==", ">=", "~=", "==="):
                found.append((_series_start(spec.version), where))
                break
    return found


def _series_start(version: str) -> str:
    """The first release a requirement's version names: itself, or for a prefix (`==0.23.*`,
    `~=0.23`, `>=0.23`: PEP 440 prefix matching and bounds) the series' first release, its
    missing parts zero ("0.23" -> "0.23.0")."""
    version = version[:-2] if version.endswith(".*") else version
    parts = version.split(".")
    return ".".join(parts + ["0"] * (3 - len(parts))) if len(parts) < 3 and all(p.isdigit() for p in parts) else version


def declared_version(root: Path) -> str | None:
    """The upstream release a plugin declares it targets (the first release of declared_pins), or None."""
    return next((pin.value for pin in declared_pins(root) if pin.form == "release"), None)


declared_sglang = declared_version  # the name callers used while SGLang was the only engine


def _setup_py_entry_points(text: str, groups: tuple[str, ...]) -> list[EntryPoint]:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    found = []
    for node in walk(tree):
        if isinstance(node, ast.keyword) and node.arg == "entry_points" and isinstance(node.value, ast.Dict):
            for key, value in zip(node.value.keys, node.value.values):
                group = key.value if isinstance(key, ast.Constant) else None
                if group in groups and isinstance(value, (ast.List, ast.Tuple)):
                    for element in value.elts:
                        if isinstance(element, ast.Constant) and "=" in str(element.value):
                            name, spec = (p.strip() for p in str(element.value).split("=", 1))
                            found.append(EntryPoint(group, name, spec.replace(" ", ""), "setup.py"))
    return found


def _declared_source_roots(root: Path) -> list[tuple[Path, tuple[str, ...]]]:
    """The folders the plugin's build configuration says its import packages come from, each
    with the package path it holds: setuptools' `package-dir` (pyproject `[tool.setuptools.
    package-dir]`, setup.cfg `[options] package_dir`, setup.py `package_dir={…}`; "" is the
    root of every package) and `[tool.setuptools.packages.find] where`, poetry's `packages =
    [{include, from}]`, hatch's wheel `packages = ["src/pkg"]`. Only folders inside the checkout
    that exist; [] when nothing is declared (setuptools' default layouts then apply)."""
    declared: list[tuple[str, tuple[str, ...]]] = []
    try:
        data = tomllib.loads(packaging_text(root / "pyproject.toml", root) or "")
    except tomllib.TOMLDecodeError:
        data = {}
    tool = data.get("tool", {}) if isinstance(data.get("tool"), dict) else {}
    setuptools = tool.get("setuptools", {}) if isinstance(tool.get("setuptools"), dict) else {}
    mapping = dict(setuptools.get("package-dir") or {})
    found = setuptools.get("packages")
    where = found.get("find", {}).get("where", []) if isinstance(found, dict) and isinstance(found.get("find"), dict) else []
    declared += [(str(folder), ()) for folder in ([where] if isinstance(where, str) else where)]
    for entry in tool.get("poetry", {}).get("packages", []) if isinstance(tool.get("poetry"), dict) else []:
        if isinstance(entry, dict) and isinstance(entry.get("include"), str) and "*" not in entry["include"]:
            declared.append((posixpath.join(str(entry.get("from", "")), entry["include"]), tuple(entry["include"].split("/"))))
    hatch = tool.get("hatch", {}).get("build", {}).get("targets", {}).get("wheel", {}) if isinstance(tool.get("hatch"), dict) else {}
    declared += [(str(folder), (posixpath.basename(str(folder).rstrip("/")),)) for folder in hatch.get("packages", []) or []]
    parser = configparser.ConfigParser()
    try:
        parser.read_string(packaging_text(root / "setup.cfg", root) or "")
        for line in parser.get("options", "package_dir", fallback="").splitlines():
            if "=" in line:
                package, _, folder = (part.strip() for part in line.partition("="))
                mapping.setdefault(package, folder)
    except configparser.Error:
        pass
    try:
        tree = ast.parse(packaging_text(root / "setup.py", root) or "")
    except (SyntaxError, ValueError):
        tree = None
    for node in walk(tree) if tree is not None else ():
        if isinstance(node, ast.keyword) and node.arg == "package_dir" and isinstance(node.value, ast.Dict):
            for key, value in zip(node.value.keys, node.value.values):
                if isinstance(key, ast.Constant) and isinstance(value, ast.Constant) and isinstance(key.value, str) and isinstance(value.value, str):
                    mapping.setdefault(key.value, value.value)
    declared += [(str(folder), tuple(filter(None, str(package).split(".")))) for package, folder in mapping.items()]
    roots: list[tuple[Path, tuple[str, ...]]] = []
    for folder, package in declared:
        path = (root / folder).resolve()
        if path.is_dir() and path.is_relative_to(root.resolve()) and (root / folder, package) not in roots:
            roots.append((root / folder, package))
    return roots


def plugin_module_files(root: Path) -> dict[str, tuple[Path, bool]]:
    """module name -> (file, is_package) for the plugin's own code: under the source roots its
    build configuration declares (_declared_source_roots: a package split over `src/` and
    `contrib/` is read from both), else the src/ layout or flat.

    Folders without `__init__.py` are namespace packages (PEP 420) and importable, so they are
    read too. Skipped: tests, docs, build output, virtualenvs (a folder holding pyvenv.cfg),
    hidden folders, and folders whose names are not identifiers (no import can name them). A
    folder that cannot be listed (permissions) is one package whose `__init__.py` cannot be read:
    the scan reports it where something imports it, never its contents as absent."""
    modules: dict[str, tuple[Path, bool]] = {}
    for base, package in _declared_source_roots(root) or [(root / "src" if (root / "src").is_dir() else root, ())]:
        for name, found in _module_files(base, package).items():
            modules.setdefault(name, found)
    return modules


def _module_files(base: Path, package: tuple[str, ...]) -> dict[str, tuple[Path, bool]]:
    """plugin_module_files of one source root `base` holding the package path `package`."""
    modules: dict[str, tuple[Path, bool]] = {}
    for dirpath, dirnames, filenames in os.walk(base):
        rel_dir = Path(*package, Path(dirpath).relative_to(base))
        kept = []
        for d in sorted(dirnames):
            if d in _SKIP_DIRS or d.startswith(".") or not d.isidentifier():
                continue
            try:
                if (Path(dirpath) / d / "pyvenv.cfg").exists():
                    continue
                os.scandir(Path(dirpath) / d).close()
            except OSError:
                modules[".".join([*rel_dir.parts, d])] = (Path(dirpath) / d / "__init__.py", True)
                continue
            kept.append(d)
        dirnames[:] = kept
        for filename in sorted(filenames):
            if filename.isidentifier() and not filename.startswith(".") and (Path(dirpath) / filename).is_symlink() and not (Path(dirpath) / filename).exists():
                # a link to nothing under a package name (`_generated -> ../build/gen`, not built): a
                # package that cannot be read, reported where something imports it (as an unlistable folder)
                modules[".".join([*rel_dir.parts, filename])] = (Path(dirpath) / filename / "__init__.py", True)
                continue
            stem = filename[:-3]
            if not filename.endswith(".py") or not stem.isidentifier():
                continue
            if rel_dir == Path(".") and filename in ("setup.py", "conftest.py", "noxfile.py"):
                continue
            parts = [*rel_dir.parts, stem]
            is_package = stem == "__init__"
            if is_package:
                parts = parts[:-1]
            if parts:
                modules[".".join(parts)] = (Path(dirpath) / filename, is_package)
    return modules


# ----------------------------------------------------------------------------- which engine


def detect_engine(plugin_root: Path, upstream_spec: str | None = None, override: str | None = None,
                  option: str = "--upstream") -> EngineProfile:
    """The engine a plugin is read against: `override` (--engine) when given; else the engine an
    explicit release spec names (`vllm==X`), when the plugin has anything of it (an entry point
    of its groups, or a module importing its package), so a plugin serving both engines is read
    for the one the spec names; else, for a bare PATH or git spec, the engine whose entry-point
    groups the plugin declares (vllm.* -> vLLM, sglang.* -> SGLang), else the package its modules
    import most, else SGLang.

    HarnessError (one line, naming the spec by `option`) when `upstream_spec` is a release of an
    engine the plugin has nothing of (it is read as another engine's plugin), or `override` names
    no engine."""
    spec_engine = engine_of_spec(upstream_spec)
    if override:
        engine, why = engine_named(override), f"--engine {override}"
    else:
        engine, why = _plugin_engine(Path(plugin_root), spec_engine)
        if engine is None:
            engine, why = spec_engine or SGLANG, ""
    if spec_engine is not None and spec_engine is not engine:
        raise HarnessError(
            f"{option} {upstream_spec.strip()} is {spec_engine.article} {spec_engine.display} release, but the plugin is read as "
            f"{engine.article} {engine.display} plugin ({why}): pass a {engine.distribution}==X spec, or --engine {spec_engine.name}"
        )
    return engine


def _plugin_engine(root: Path, named: EngineProfile | None = None) -> tuple[EngineProfile | None, str]:
    """The engine the plugin is read as, with the reason in words: `named` (the spec's engine)
    when the plugin declares an entry point of its groups or a module imports its package; else
    the first engine whose entry points it declares; else the one its modules import most;
    (None, "") when nothing tells."""
    if not root.is_dir():
        return None, ""
    declared = {name: found for name, engine in ENGINES.items() if (found := read_entry_points(root, engine.groups))}
    if named is not None and named.name in declared:
        return named, f"entry point {declared[named.name][0].group}"
    counts = _import_counts(root) if named is not None or not declared else {}
    # a module importing the named engine's package makes the spec decide even beside another
    # engine's entry points: a plugin loaded by its own patches declares none of its engine's groups
    if named is not None and counts[named.name]:
        return named, f"{counts[named.name]} of its modules import {named.package}"
    if declared:  # of other engines only: it is their plugin
        name, found = next(iter(declared.items()))
        return ENGINES[name], f"entry point {found[0].group}"
    most = max(counts.values())
    leaders = [name for name, count in counts.items() if count == most]
    if most == 0 or len(leaders) > 1:
        return None, ""
    best = ENGINES[leaders[0]]
    return best, f"{most} of its modules import {best.package}"


def _import_counts(root: Path) -> dict[str, int]:
    """Engine name -> how many of the plugin's modules import that engine's package."""
    counts = dict.fromkeys(ENGINES, 0)
    packages = {engine.package: name for name, engine in ENGINES.items()}
    pattern = re.compile(rf"^[ \t]*(?:from|import)[ \t]+({'|'.join(map(re.escape, packages))})\b", re.MULTILINE)
    for path, _ in plugin_module_files(root).values():
        try:
            text = module_source(path, root).decode(errors="replace")
        except OSError:
            continue
        for package in set(pattern.findall(text)):
            counts[packages[package]] += 1
    return counts
