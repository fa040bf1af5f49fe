"""Constant folding and guard conditions for the plugin scan: what a name, an expression or a
test in the plugin means, independent of any upstream version. A value the folder cannot know
is OPAQUE; a test on upstream becomes a Cond (model.plugin) that the judge evaluates against one
upstream (`hasattr`, version comparisons, `try/except ImportError` flags)."""

from __future__ import annotations

import ast
import fnmatch
import importlib.util
import itertools
import json
import operator
import posixpath
import string
import tomllib
import copy
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath

from harness.engines import IMPORT_ERRORS, profile
from harness.knowledge.model import (
    UNDECIDED,
    AllOf,
    AnyOf,
    Cond,
    Const,
    FieldPresent,
    GuardCond,
    HasAttr,
    HasKey,
    ImportsResolve,
    ModuleExists,
    Not,
    Outcome,
    ParamFieldPresent,
    PythonCompare,
    Ref,
    Runtime,
    SelfFlag,
    Undecided,
    Unknown,
    VersionCompare,
    dotted,
    function_params,
    is_upstream,
    kleene,
    read_entry_points,
    walk,
)
from harness.knowledge.scan.annotations import field_class, parameter_class
from harness.knowledge.scan.syntax import (
    always_raises,
    assigned,
    assigned_in,
    case_test,
    dataclass_fields,
    exception_names,
    flag_names,
    imported_names,
    is_main_test,
    local_names,
    module_level,
    own_returns,
    returned_function,
    upstream_imports,
)
from harness.knowledge.upstream import SymbolIndex, upstream_version

_VERSION_PARSERS = ("packaging.version.parse", "packaging.version.Version", "pkg_resources.parse_version", "distutils.version.LooseVersion")

# ----------------------------------------------------------------------------- values


_SEQUENCE_BUILTINS = ("list", "tuple", "sorted", "set", "frozenset")
_ITERATORS = ("zip", "enumerate", "reversed", "itertools.compress")
_NAME_ATTRIBUTES = ("__name__", "__module__", "__qualname__")
_PATH_FUNCTIONS = frozenset(f"{m}.{f}" for m in ("os.path", "posixpath") for f in ("splitext", "basename", "dirname", "join", "normpath"))
# of an absolute path with no links (the plugin's own files under _SOURCE_ROOT): its normal form
_ABSOLUTE_PATH_FUNCTIONS = frozenset(f"{m}.{f}" for m in ("os.path", "posixpath") for f in ("abspath", "realpath"))
_STRING_METHODS = frozenset({"rpartition", "partition", "split", "rsplit", "splitlines", "strip", "lstrip", "rstrip", "replace", "removeprefix",
                             "removesuffix", "lower", "upper", "startswith", "endswith", "isdigit", "isalpha", "isalnum", "isidentifier"})
_LITERALS = ("typing.Literal", "typing_extensions.Literal")
_MODULE_SPEC = "importlib.machinery.ModuleSpec"
_BOUND_METHODS = _STRING_METHODS | {"format", "format_map", "join"}  # a string's methods a name may keep to call later
NAMESPACES = ("types.SimpleNamespace", "argparse.Namespace")
_ENUM_BASES = frozenset(f"enum.{b}" for b in ("Enum", "IntEnum", "StrEnum", "Flag", "IntFlag"))
# the stdlib parsers of a data file's text (tomli: tomllib's backport, the same API)
_DATA_PARSERS = {"json.loads": json.loads, "json.load": json.loads, **{f"{m}.{f}": tomllib.loads for m in ("tomllib", "tomli") for f in ("load", "loads")}}
# builtin types an `isinstance` test of a folded value names
_BUILTIN_TYPES = {t.__name__: t for t in (str, int, float, bool, list, dict, tuple, staticmethod, classmethod, type)}
# bases of a plugin class whose `C()` is an empty object or mapping (`_record`)
_MAPPING_BASES = frozenset({"dict", "typing.Dict", "collections.UserDict"})
_CACHING = ("functools.cache", "functools.lru_cache")  # wrappers a call goes through to the function unchanged
_ENVIRONMENT_READS = ("os.environ.get", "os.getenv")  # (name, default): the default when name is unset


class MemberText(str):
    """A member of a plugin enum of strings: that str (a `str` mix-in's member is one, the enum
    docs), keyed and compared as the str is, which also knows the member it is ("pkg.E.M"), so
    that an enum property or attribute read on it (`which.module`) is the member's."""

    member: str

    def __new__(cls, text: str, member: str) -> MemberText:
        made = super().__new__(cls, text)
        made.member = member
        return made

    def __getnewargs__(self) -> tuple[str, str]:
        return str(self), self.member


class LoadedName(str):
    """An upstream module's name a test that it is loaded kept (`[m for m in NAMES if m in
    sys.modules]`, `NAMES.keys() & sys.modules.keys()`): that str, there only where the module is
    loaded, so a loop over it runs its body for this name under that test (ModuleExists) and a
    release without the module still shows what the body would do to it."""

    def __getnewargs__(self) -> tuple[str]:
        return (str(self),)


class _NameFields:
    """A class, function or module as str.format sees it: its name attributes (`{0.__module__}`,
    `{0.__qualname__}`, `{0.__name__}`) and nothing else; formatting it whole raises TypeError
    (its str is `<class …>`, never a dotted path)."""

    def __init__(self, path: str, name_attribute) -> None:
        object.__setattr__(self, "_found", (path, name_attribute))

    def __getattribute__(self, attr: str):
        path, name_attribute = object.__getattribute__(self, "_found")
        value = name_attribute(path, attr) if attr in _NAME_ATTRIBUTES else None
        if value is None:
            raise AttributeError(attr)
        return value

    def __format__(self, spec: str) -> str:
        raise TypeError("formatted whole")


class _RecordFields:
    """A folded record as str.format sees it: its fields as attributes (`{layout.root}`), each a
    plain value or another record; a field not folded, or formatting it whole, raises (the
    format is then not known)."""

    def __init__(self, record) -> None:
        object.__setattr__(self, "_record", record)

    def __getattribute__(self, attr: str):
        value = object.__getattribute__(self, "_record").get(attr)
        if isinstance(value, Record):
            return _RecordFields(value)
        if not isinstance(value, (str, int, float, bool)):
            raise AttributeError(attr)
        return value

    def __format__(self, spec: str) -> str:
        raise TypeError("formatted whole")


class _Opaque:
    """A value the constant folder cannot know (a call result, a parameter)."""


OPAQUE = _Opaque()
_FELL_THROUGH = _Opaque()  # (Folding._returned: a branch that ended without returning)
# the memos that keep folded values (Folding.defaults_of puts them back)
_FOLD_MEMOS = ("_sole_objects", "_getattr_answers", "_fills", "_through_callers", "_receivers_memo", "_made_once_globals",
               "_branches_memo", "_release_bindings", "star_names")
_CONTINUE, _BREAK = _Opaque(), _Opaque()  # (Folding._returned: a loop's pass ended by `continue` / `break`)


@dataclass(frozen=True)
class Named:
    """A name the folder can identify but not evaluate: a module, a function, a class."""

    path: str


@dataclass(frozen=True)
class LoadedModule(Named):
    """An upstream module met in a walk over `sys.modules.values()` that a test of its
    `__name__` kept (Folding.loaded_walk): that module, there only where it is loaded."""


@dataclass(frozen=True)
class Record:
    """An instance of a plugin @dataclass made from folded arguments (`Replacement("pkg.mod",
    "f")`): its fields by name, defaults filled; a field read on it is that value. `site`: the
    construction that made it, (module, line, column), where known: what calls of its methods
    add to a list or dict it keeps is that object's alone (Folding.filled)."""

    cls: str
    fields: tuple[tuple[str, object], ...]
    site: tuple[str, int, int] | None = None

    def get(self, name: str):
        return next((value for field, value in self.fields if field == name), OPAQUE)


@dataclass(frozen=True)
class PackageFile:
    """`importlib.resources.files("pkg")` of a plugin package, `.joinpath("data.json")` of it:
    a file shipped in the plugin's own tree (`relative` its path below the package)."""

    package: str
    relative: str = ""


@dataclass(frozen=True)
class Partial:
    """`functools.partial(f, *args, **keywords)` of folded arguments: `func` the qualified name
    of f; calling it calls f with these first (functools docs)."""

    func: str
    args: tuple
    keywords: tuple[tuple[str, object], ...]


@dataclass(frozen=True)
class Closure:
    """A lambda as a value (`enabled=lambda: compat.LEGACY`): calling it folds its body in
    `module` with its parameters bound over `captured`, what the names it reads from where it
    was made held there (Python's closures; the lambda's node is compared by identity)."""

    module: str
    node: ast.Lambda
    # (not compared or hashed: what it captured may be a dict or list)
    captured: tuple[tuple[str, object], ...] = field(default=(), compare=False)


@dataclass(frozen=True)
class BoundMethod:
    """A method of a folded string kept unbound from its call (`fmt = "pkg.{}.patch".format`):
    calling it is calling `text.method(...)`."""

    text: str
    method: str


@dataclass(frozen=True)
class LiteralType:
    """`typing.Literal["a", "b"]` of folded values: `typing.get_args` and `__args__` give them back."""

    values: tuple


@dataclass(frozen=True)
class ModuleNamespace:
    """`vars(m)` / `m.__dict__` of a plugin module `m` (by path): a key read on it is what `m.key`
    holds (Folding._namespace_read); nothing else of the dict is folded."""

    module: str


@dataclass(frozen=True)
class TemplateText:
    """`string.Template("pkg.${name}.patch")` of a folded string: its `.substitute(…)` folds."""

    text: str


@dataclass(frozen=True)
class RunningVersion:
    """The running upstream version: `sglang.__version__` (parsed=False) or a parsed Version."""

    parsed: bool


@dataclass(frozen=True)
class VersionLiteral:
    """A version string parsed by the plugin (`Version("0.5.20")`): compared as a version."""

    text: str


@dataclass(frozen=True)
class Instance:
    """A variable holding an instance of an upstream class (kind 12, see fields.py): `path` is
    the class the plugin annotates it with, or None while it is the unannotated parameter
    `param` of the plugin function `function` (finish() asks the upstream function that one
    stands in for)."""

    path: str | None
    function: str | None = None
    param: str | None = None
    # the other classes a union annotation (or a constrained TypeVar) allows: a field read on the
    # value is read on each (`layer: ColumnParallelLinear | RowParallelLinear`)
    alternatives: tuple[str, ...] = ()


@dataclass(frozen=True)
class FlagSet:
    """Members of a plugin enum.Flag combined with `|` (`Backend.ALPHA | Backend.GAMMA`): their
    paths; `m in` it holds for a member among them (the enum docs' Flag)."""

    members: frozenset[str]


@dataclass(frozen=True)
class OneOf:
    """A value a run-time test chooses (`X[k] = B` under `if is_310p():` over `X[k] = A`): each
    option with the guards under which a run holds it (together they cover every run)."""

    options: tuple[tuple[object, tuple[GuardCond, ...]], ...]


@dataclass(frozen=True, eq=False)
class MayHold:
    """A dict some of whose keys only a run gives (`{n: None for n in os.environ["X"].split(",")}`),
    each such key holding `value`; `known`: the (key, value) entries the scan sees, a value an
    unseen key may replace being a OneOf. A loop over it meets the known keys, then AnyKey(self)
    for the unseen ones (ChainMap docs: the first map holding a key gives its value)."""

    known: tuple[tuple[object, object], ...]
    value: object

    def lookup(self, key):
        """`table[key]`: an unseen key (AnyKey of this table) its value, a known one its entry;
        OPAQUE for any other key (a run may or may not give it)."""
        if isinstance(key, AnyKey):
            return self.value if key.of is self else OPAQUE
        return dict(self.known).get(key, OPAQUE) if isinstance(key, (str, int)) else OPAQUE


@dataclass(frozen=True, eq=False)
class AnyKey:
    """A key of a MayHold the scan cannot name: what a loop over its unseen keys binds; the
    table gives MayHold.value for it."""

    of: MayHold


@dataclass(frozen=True)
class Condition:
    """A boolean whose value depends on the upstream (e.g. `HAS_X = hasattr(...)`)."""

    cond: Cond


_PLAIN_COMPARE = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt,
                  ast.GtE: operator.ge, ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b}


def _plain(value) -> bool:
    """A folded value Python compares as itself: a literal, or a list or dict of literals."""
    if isinstance(value, (list, dict)):
        return all(_plain(v) for v in value)
    return value is None or isinstance(value, (str, int, float, bool))


def bind(target: ast.AST, value) -> dict:
    """What a `for` target (or an assignment's) binds to one folded element: unpacking a list of
    the right length, a starred name taking the rest as a list."""
    if isinstance(target, ast.Name):
        return {target.id: value}
    if isinstance(value, tuple):  # a dict's tuple key (_hashable): unpacked as the folded tuple it was
        value = [list(v) if isinstance(v, tuple) else v for v in value]
    if isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, list):
        starred = [i for i, e in enumerate(target.elts) if isinstance(e, ast.Starred)]
        if len(starred) == 1 and len(value) >= len(target.elts) - 1:  # `*parents, leaf = path.split(".")`
            at, after = starred[0], len(target.elts) - starred[0] - 1
            value = [*value[:at], value[at:len(value) - after], *value[len(value) - after:]]
            elements = [e.value if isinstance(e, ast.Starred) else e for e in target.elts]
        else:
            elements = target.elts
        if len(value) == len(elements) and not (len(starred) > 1):
            bound: dict = {}
            for element, item in zip(elements, value):
                bound.update(bind(element, item))
            return bound
    return {name: OPAQUE for name in assigned(target)}


def string_version_compare(cond: Cond) -> bool:
    """Whether the condition compares `sglang.__version__` as a string somewhere."""
    return any(not c.parsed for c in leaves(cond) if isinstance(c, VersionCompare))


def on_param(cond: Cond) -> bool:
    """Whether the condition tests a field of an unannotated parameter (ParamFieldPresent)."""
    return any(isinstance(c, ParamFieldPresent) for c in leaves(cond))


_COMPARE_OPS = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}
_FLIPPED = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}  # a op b is b FLIPPED[op] a


# pathlib's classes and what is read of them, folded as PurePosixPath (names only: nothing touches files)
_PATH_CLASSES = frozenset({"pathlib.PurePosixPath", "pathlib.PurePath", "pathlib.Path", "pathlib.PosixPath"})
_PATH_PARTS = frozenset({"parts", "name", "stem", "suffix", "parent", "parents"})
_PATH_METHODS = frozenset({"with_suffix", "with_name", "with_stem", "joinpath", "as_posix", "relative_to", "resolve", "absolute"})
# where `__file__` of a plugin module sits: its module path under one root standing for the
# source root (a pure path; `relative_to` it gives the path the module is named by)
_SOURCE_ROOT = PurePosixPath("/<plugin source root>")


def _module_path(module: str, is_package: bool) -> PurePosixPath:
    """The path `__file__` holds in the plugin module `module`, under _SOURCE_ROOT."""
    return _SOURCE_ROOT.joinpath(*module.split("."), "__init__.py") if is_package else _SOURCE_ROOT.joinpath(*module.split(".")[:-1], module.split(".")[-1] + ".py")
# importlib.metadata's entry points (the backport's too), and the records standing for them
_ENTRY_POINTS = ("importlib.metadata.entry_points", "importlib_metadata.entry_points")
ENTRY_POINT_CLASS, _ENTRY_POINTS_CLASS = "importlib.metadata.EntryPoint", "importlib.metadata.EntryPoints"


def folded(cond: Cond) -> Cond:
    """`cond` as a Const when its folded parts decide it whatever the rest (Kleene: `not True`,
    `x and False`, `x or True`), so that every reader of a guard sees it decided; else as given."""
    value = kleene(cond, lambda leaf: None)
    return cond if value is None else Const(value)


def leaves(cond: Cond) -> list[Cond]:
    """The conditions under Not / AllOf / AnyOf."""
    if isinstance(cond, Not):
        return leaves(cond.cond)
    if isinstance(cond, (AllOf, AnyOf)):
        return [leaf for c in cond.conds for leaf in leaves(c)]
    return [cond]


# builtins whose result depends only on their arguments: a test calling them on run-time data is one too
_DATA_BUILTINS = frozenset({"len", "isinstance", "issubclass", "any", "all", "min", "max", "abs", "int", "float", "str", "bool",
                            "tuple", "list", "set", "sum", "type", "sorted", "round"})


def returned_marker(name: str) -> str:
    """How `local` (Context.local) marks a name bound to what a call returned (no identifier)."""
    return f"<returned>{name}"


def free_marker(name: str) -> str:
    """How `local` (Context.local) marks a name bound only to what free functions returned."""
    return f"<free {name}>"


def call_results(function: ast.FunctionDef | ast.AsyncFunctionDef, local: frozenset[str] | set[str]) -> tuple[set[str], set[str]]:
    """(names every binding of which in `function`'s own body is `name = <call>(…)`: a call's
    result, not a parameter, a loop variable or a literal; those of them bound only to calls of
    free functions, no method of a `local` name: `takes = has_argument(F, "x")`, `on_npu =
    is_npu()`, no run-time data for runtime_test)."""
    bindings: dict[str, list[ast.AST]] = {}
    stack = list(function.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            bindings.setdefault(node.targets[0].id, []).append(node.value)
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.With, ast.AsyncWith, ast.AugAssign, ast.AnnAssign, ast.NamedExpr)):
            for name in assigned(getattr(node, "target", None) or ast.Tuple(elts=[], ctx=ast.Store())):
                bindings.setdefault(name, []).append(node)
        stack.extend(ast.iter_child_nodes(node))
    results = {name for name, values in bindings.items() if all(isinstance(v, (ast.Call, ast.Await)) for v in values)}
    return results, {name for name in results if all(_free_call(v, local) for v in bindings[name])}


def _free_call(node: ast.AST, local) -> bool:
    """A call of a free function (a module's or an import's) handed no local (no run-time data:
    `has_argument(F, "x")`, `is_npu()`), not a method of a local, a builtin over data
    (`getattr(layer, "mlp")`) or a lambda."""
    if not isinstance(node, ast.Call):
        return False
    root = node.func
    while isinstance(root, (ast.Attribute, ast.Subscript, ast.Call)):
        root = root.func if isinstance(root, ast.Call) else root.value
    return (isinstance(root, ast.Name) and root.id not in local and root.id not in _DATA_BUILTINS
            and not any(isinstance(n, ast.Name) and n.id in local for a in (*node.args, *node.keywords) for n in walk(a)))


def is_type_test(node: ast.AST, local: frozenset[str]) -> bool:
    """`isinstance(v, T)` of a name bound to what a call returned (returned_marker in `local`):
    a test of what upstream hands back (a compatibility branch, `isinstance(out, tuple)` for a
    release that returned tuples), undecided as a capability test is, not run-time data."""
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "isinstance" and len(node.args) == 2
            and isinstance(node.args[0], ast.Name) and returned_marker(node.args[0].id) in local)


_TABLE_READS = frozenset({"get", "keys", "values", "items", "index", "count", "__contains__", "__getitem__"})


def runtime_test(node: ast.AST, local: frozenset[str], tables: frozenset[str] = frozenset()) -> bool:
    """Whether the test `node` reads run-time data only: at least one name in `local` (or a
    `<self.x>` placeholder), and no call but methods of such values, _DATA_BUILTINS and reads
    (_TABLE_READS) of `tables`, module globals holding plain data (`n == 0`, `cache_k.dtype !=
    torch.float16`, `batch.forward_mode.is_decode()`, `len(reqs) > 1`, `KERNELS.get(str(x.dtype))
    is None`); a free function's result (`is_npu()`), a module global alone or a lambda is not."""
    reads_local = False
    for sub in walk(node):
        if isinstance(sub, ast.Call):
            root = sub.func
            if isinstance(root, ast.Name):
                if root.id not in _DATA_BUILTINS:
                    return False
                continue
            if isinstance(root, ast.Attribute) and root.attr in _TABLE_READS and isinstance(root.value, ast.Name) and root.value.id in tables:
                continue
            while isinstance(root, (ast.Attribute, ast.Subscript, ast.Call)):
                root = root.func if isinstance(root, ast.Call) else root.value
            if not (isinstance(root, ast.Name) and (root.id in local or root.id.startswith("<self."))):
                return False
        elif isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load) and (sub.id in local or sub.id.startswith("<self.")):
            reads_local = reads_local or free_marker(sub.id) not in local  # what a free function returned is no data
        elif isinstance(sub, (ast.Lambda, ast.Await, ast.Yield, ast.YieldFrom)):
            return False  # `(n := x.numel()) == 0` is its value's test: the name it binds is not read
    return reads_local


def map_leaves(cond: Cond, rewrite: Callable[[Cond], Cond]) -> Cond:
    """`cond` with each leaf under Not / AllOf / AnyOf replaced by rewrite(leaf)."""
    if isinstance(cond, Not):
        return Not(map_leaves(cond.cond, rewrite))
    if isinstance(cond, (AllOf, AnyOf)):
        return type(cond)(tuple(map_leaves(c, rewrite) for c in cond.conds))
    return rewrite(cond)


# ----------------------------------------------------------------------------- folding


class Folding:
    """The scanner's constant folder (a mixin: the scanner provides `tree` and `table`)."""

    files: dict[str, tuple[Path, bool]]
    index: SymbolIndex
    none_fallbacks: dict[tuple[str, str], ModuleExists | ImportsResolve | HasAttr]  # (module, imported path) -> "the import resolves"
    _groups: dict[str, list]  # the plugin's own entry points by group (_entry_points)
    main_modules: set[str]  # modules run as `__main__` (`python -m`)
    _instance_writes: dict[tuple[str, str, bool], bool]  # (class, name, after_init) -> _set_on_instances
    _stand_in_cache: dict[str, dict]  # module -> stand_in_imports
    _chosen_by_ifs: dict[str, frozenset[str]]  # module -> the names its module-level ifs bind (release_binding)
    _release_bindings: dict[tuple[str, str], str | None]  # (module, name) -> release_binding
    _environment_defaults: list[str] | None  # while defaults_of folds: the variables whose defaults it read
    star_names: dict[tuple[str, str], str | None]  # (module, name) -> what a star import binds it to (_star_bound)
    _getattr_answers: dict[tuple[str, str], str | None]  # (module, name) -> what its __getattr__ returns (_module_getattr)
    _fills: dict[tuple[str, str], list[tuple[str, str, ast.stmt, dict, tuple, tuple | None]]] | None  # _fill_sites, built once
    _class_refs: dict[str, list[tuple[str, ast.AST, ast.FunctionDef | ast.AsyncFunctionDef | None]]] | None  # _class_references, built once
    _sole_objects: dict[str, Record | None]  # class path -> sole_object (None too while it is being folded)
    _branches_memo: dict[str, set | dict]  # _branches_off and _branch_definitions, once per module
    _release: str | None  # the scanned release's version (_on_this_release), "" for none; read once
    _filling: set[tuple[str, str]]  # the registries filled() is folding now (a fill reading its own registry)
    _stmt_names: dict[int, tuple[ast.stmt, frozenset[str]]]  # id of a statement -> (it, the names it reads or binds) (edit_of)
    stand_in_owners: set[tuple[str, str]]  # (module, upstream module) got with a stand-in default (Scanner; `.get(M, stub)`)
    _may_be_filled: Callable[[ast.expr], bool]  # whether a folded container may hold more at run time (Scanner)

    def qualify(self, module: str, expression: str | None, env: dict | None = None, _seen: frozenset = frozenset()) -> str | None:
        """The absolute dotted path a name in `module` refers to (plugin or upstream), or None
        for a local value; `env` holds what a function body bound (imports, parameters)."""
        if not expression or (module, expression) in _seen:
            return None
        _seen = _seen | {(module, expression)}
        head, _, rest = expression.partition(".")
        if env is not None and head in env:
            local = env[head]
            if not isinstance(local, Named):
                return None
            # a name a function imported from a plugin module: what that module binds it to
            return self._through_plugin_module(f"{local.path}.{rest}" if rest else local.path, _seen)
        binding = self.table(module).names.get(head)
        if binding is None:
            base = self._star_bound(module, head, _seen)
            return None if base is None else f"{base}.{rest}" if rest else base
        if binding.kind != "module" and (chosen := self.release_binding(module, head)) is not None and not chosen.startswith("?"):
            # bound in a module-level `if` this release decides (`if __version_tuple__[:2] >= (0, 24):
            # from …auto_awq import AutoAWQConfig as _Base` / `else: from …awq import …`): the arm it takes
            base = chosen
        elif binding.kind in ("def", "class") and head in self.stand_in_imports(module):
            # `try: from sglang.x import f` / `except ImportError: def f(…)`: upstream's f where
            # the import resolves (the reader adds that condition: stand_in_guards)
            base = self.stand_in_imports(module)[head][0]
        elif binding.kind in ("def", "class", "value"):
            base = f"{module}.{head}"
        elif binding.kind == "module":
            base = binding.target
        elif binding.kind == "from":
            source_module, name = binding.target.split(":")
            base = f"{source_module}.{name}"
            if source_module in self.files and base not in self.files:
                # a name re-exported through another plugin module: follow it there
                base = self.qualify(source_module, name, None, _seen) or base
        elif binding.kind == "alias":
            base = self.qualify(module, binding.target, None, _seen) or binding.target
        else:
            return None
        return self._through_plugin_module(f"{base}.{rest}" if rest else base, _seen)

    def stand_in_imports(self, module: str) -> dict[str, tuple[str, tuple[tuple[str, str | None], ...], int]]:
        """Names a module-level `try` imports from upstream and an `except ImportError` handler
        (one that does not re-raise) binds again by a def or class of the plugin's own: name ->
        (the upstream path, the imports of that try, its line). Each module's once."""
        if module not in self._stand_in_cache:
            found: dict = {}
            tree, package = self.tree(module), self.files[module][1]
            for stmt in tree.body if tree else []:
                if not (isinstance(stmt, ast.Try) or type(stmt).__name__ == "TryStar"):
                    continue
                imported = {name: path for name, path in imported_names(module, package, stmt.body).items() if is_upstream(path)}
                imports = tuple(upstream_imports(module, package, stmt.body))
                for handler in stmt.handlers:
                    if (handler.type is not None and not exception_names([handler.type]) & IMPORT_ERRORS) or always_raises(handler.body):
                        continue
                    for node in handler.body:
                        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name in imported:
                            path = imported[node.name]
                            found[node.name] = (path, tuple(i for i in imports if path in (i[0], f"{i[0]}.{i[1]}")), stmt.lineno)
            self._stand_in_cache[module] = found
        return self._stand_in_cache[module]

    def _through_plugin_module(self, path: str, _seen: frozenset) -> str:
        """`compat.DeviceMixin` where the plugin module `compat` imports DeviceMixin (a module
        that absorbs upstream moves, a package __init__ re-exporting): the path of what that
        module binds, followed there; `path` itself when it names nothing bound by import."""
        parts = path.split(".")
        for end in range(len(parts) - 1, 0, -1):
            owner = ".".join(parts[:end])
            if owner not in self.files:
                continue
            binding = self.table(owner).names.get(parts[end])
            if binding is not None and binding.kind == "class" and end + 1 < len(parts) and (
                    imported := self._class_body_import(owner, parts[end], parts[end + 1])) is not None:
                # `class _sgl: try: from sglang.x import f …`: `_sgl.f` is what the import binds
                return self._through_plugin_module(".".join([imported, *parts[end + 2:]]), _seen)
            if binding is None and self.table(owner).has_getattr and (answered := self._module_getattr(owner, parts[end])) is not None:
                # PEP 562: a name the plugin module does not bind is what its __getattr__ returns
                return self._through_plugin_module(".".join([answered, *parts[end + 1:]]), _seen)
            if binding is None and self._star_bound(owner, parts[end], _seen) is None or (
                    binding is not None and binding.kind not in ("from", "module", "alias") and parts[end] not in self.stand_in_imports(owner)):
                return path
            return self.qualify(owner, ".".join(parts[end:]), None, _seen) or path
        return path

    def _module_getattr(self, module: str, name: str) -> str | None:
        """The path of what the module-level `__getattr__` of the plugin module `module` returns
        for `name` (folded as a call of it: a lazy table of upstream modules), None when that does
        not fold to a named object. Once per (module, name)."""
        key = (module, name)
        if key not in self._getattr_answers:
            self._getattr_answers[key] = None  # (a __getattr__ reading the module's own names again)
            asked = ast.fix_missing_locations(ast.Call(func=ast.Name("__getattr__", ast.Load()), args=[ast.Constant(name)], keywords=[], lineno=1, col_offset=0))
            held = self.const(module, asked, {})
            self._getattr_answers[key] = held.path if isinstance(held, Named) and held.path != f"{module}.{name}" else None
        return self._getattr_answers[key]

    def _class_body_import(self, module: str, cls: str, name: str) -> str | None:
        """The path an import in the body of the module-level class `cls` of `module` binds `name`
        to (a class body is a namespace: `from m import f` there makes the class attribute f;
        one in a `try`/`if` branch too, as a module-level one is read), or None when no import
        there binds it."""
        tree = self.tree(module)
        node = next((s for s in tree.body if isinstance(s, ast.ClassDef) and s.name == cls), None) if tree else None
        pending = list(node.body) if node is not None else []
        while pending:
            stmt = pending.pop(0)
            if isinstance(stmt, (ast.Import, ast.ImportFrom)) and (bound := imported_names(module, self.files[module][1], [stmt]).get(name)):
                return bound
            if isinstance(stmt, (ast.If, ast.Try)):
                pending[:0] = [*stmt.body, *(getattr(stmt, "orelse", None) or [])]
        return None

    def _star_bound(self, module: str, name: str, seen: frozenset) -> str | None:
        """The path a name that `module` binds only through `from m import *` refers to: the
        first star-imported upstream module that has it (a public name: `__all__` or no leading
        underscore, as the import system's star rule), or what a star-imported plugin module
        binds it to; None when none does (a builtin, a local)."""
        key = (module, name)
        if key not in self.star_names:
            found = None
            for star in self.table(module).star_imports:
                if star in self.files:
                    found = self.qualify(star, name, None, seen)
                elif is_upstream(star) and self.index.resolve(f"{star}.{name}").ok:
                    table = self.index.table(star)
                    exported = table.all_names if table is not None and not table.all_unknown else None
                    found = f"{star}.{name}" if (name in exported if exported is not None else not name.startswith("_")) else None
                if found:
                    break
            self.star_names[key] = found
        return self.star_names[key]

    def _upstream_value(self, held) -> bool:
        """Whether a folded value is an upstream module-level value (a registry dict, a list),
        not a module, class or function."""
        return isinstance(held, Named) and (ref := self.upstream_ref(held.path)) is not None and ref.kind == "value"

    def upstream_ref(self, dotted_path: str | None) -> Ref | None:
        if not is_upstream(dotted_path):
            return None
        return self.index.resolve(dotted_path).ref

    # ------------------------------------------------------------- constant folding

    def const(self, module: str, node: ast.AST | None, env: dict, depth: int = 0):
        if node is None or depth > 20:
            return OPAQUE
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.NamedExpr):  # `(name := value)` is the value
            return self.const(module, node.value, env, depth + 1)
        if isinstance(node, ast.Lambda):
            params = {p.name for p in function_params(node.args)}
            free = {n.id for n in walk(node.body) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)} - params
            return Closure(module, node, tuple((name, env[name]) for name in sorted(free & env.keys())))
        if isinstance(node, ast.Name):
            if node.id in env:
                value = env[node.id]
                owner, _, attr = value.path.rpartition(".") if isinstance(value, Named) else ("", "", "")
                if owner in self.files and f"{owner}.{attr}" not in self.files:  # a plugin constant imported locally
                    return self.module_constant(owner, attr, depth + 1)
                if isinstance(value, Named) and (version := self._version_read(value.path)) is not None:
                    return version  # `from sglang.version import __version__`, as the module binds it
                return value
            if node.id == "__name__":
                return module
            if node.id == "__package__":
                return module if self.files[module][1] else module.rpartition(".")[0]
            if node.id == "__file__":
                return _module_path(module, self.files[module][1])
            return self.module_constant(module, node.id, depth + 1)
        if isinstance(node, ast.Attribute) and node.attr in _PATH_PARTS and isinstance(path := self.const(module, node.value, env, depth + 1), PurePosixPath):
            # PurePosixPath("pkg", "backends").parts / .name / .stem / .suffix / .parent (pathlib, pure: no file system)
            value = getattr(path, node.attr)
            return list(value) if node.attr in ("parts", "parents") else value
        if isinstance(node, ast.Attribute) and node.attr == "__args__" and isinstance(literal := self.const(module, node.value, env, depth + 1), LiteralType):
            return list(literal.values)  # a Literal's __args__ (what typing.get_args returns)
        if isinstance(node, ast.Attribute) and node.attr in _BOUND_METHODS and isinstance(text := self.const(module, node.value, env, depth + 1), str):
            return BoundMethod(text, node.attr)
        if (isinstance(node, ast.Attribute) and node.attr == "__bases__" and isinstance(held := self.const(module, node.value, env, depth + 1), Named)
                and (found := self._plugin_definition(held.path)) is not None and isinstance(found[1], ast.ClassDef)):
            # a plugin class's bases, as its class statement names them (the data model's "Special attributes")
            bases = [self.qualify(found[0], dotted(b)) if dotted(b) else None for b in found[1].bases]
            return [Named(b) for b in bases] if bases and all(bases) else OPAQUE
        if (isinstance(node, ast.Attribute) and node.attr == "__dict__" and isinstance(held := self.const(module, node.value, env, depth + 1), Named)
                and (namespace := self._class_namespace(held.path, depth)) is not None):
            return namespace  # a plugin class's namespace, as vars() gives it
        if (isinstance(node, ast.Attribute) and node.attr == "__dict__" and isinstance(held := self.const(module, node.value, env, depth + 1), Named)
                and held.path in self.files):
            return ModuleNamespace(held.path)  # a plugin module's globals
        if (isinstance(node, ast.Attribute) and node.attr == "__func__" and isinstance(held := self.const(module, node.value, env, depth + 1), Named)
                and isinstance((self._plugin_definition(held.path) or (None, None))[1], (ast.FunctionDef, ast.AsyncFunctionDef))):
            return held  # a staticmethod's (or classmethod's) function: the def itself (the data model)
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and isinstance(held := env.get(node.value.id), Instance) and held.path
                and (field := self._field_instance(held, node.attr)) is not None):
            return field  # `cc = vllm_config.compilation_config`: an instance of the class the field is annotated with
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and isinstance(text := env.get(node.value.id), MemberText) and not hasattr(str, node.attr):
            return self._enum_attribute(text.member, node.attr, depth)  # `which.module` of a str enum's member: its property
        if isinstance(node, ast.Attribute) and node.attr == "value" and isinstance(text := self.const(module, node.value, env, depth + 1), str):
            return str(text)  # a str enum's member folds to its value (class_constant), which `.value` is too; a str has no other
        if isinstance(node, ast.Attribute):
            if isinstance(node.value, ast.Name) and node.value.id == "__spec__" and "__spec__" not in env and node.attr in ("name", "parent"):
                # the module's ModuleSpec (importlib docs): its name, and the package it belongs to
                package = module if self.files[module][1] else module.rpartition(".")[0]
                return module if node.attr == "name" else package
            if isinstance(node.value, ast.Name) and env.get("<self>") == node.value.id and f"<self.{node.attr}>" in env:
                return env[f"<self.{node.attr}>"]  # set earlier in this method (`self.package = models.__name__`)
            if isinstance(node.value, ast.Name) and isinstance(held := env.get(node.value.id, OPAQUE), Record):
                return self._record_attribute(held, node.attr, depth)  # `rep.module_path` of a folded Replacement(…)
            if isinstance(node.value, ast.Attribute) and isinstance(held := self.const(module, node.value, env, depth + 1), Record):
                return self._record_attribute(held, node.attr, depth)  # `self.spec.delegate_to`: a field of a field
            if isinstance(node.value, (ast.Subscript, ast.Call, ast.IfExp, ast.BoolOp)):
                held = self.const(module, node.value, env, depth + 1)
                if isinstance(held, Record):
                    return self._record_attribute(held, node.attr, depth)  # `SPECS[0].qualname`, `make_spec().target`
                if self._member_class(held):
                    # `ENABLED[1].device_name`, `(Gen.A if t else Gen.B).value`
                    return self._enum_attribute(held.member if isinstance(held, MemberText) else held.path, node.attr, depth)
            if (isinstance(node.value, ast.Name) and env.get("<self>") == node.value.id
                    and (made := self.sole_object(env["<class>"], depth)) is not None
                    and (isinstance(made.get(node.attr), (list, dict))
                         or (made.get(node.attr) is not OPAQUE and self._class_references()[env["<class>"].rpartition(".")[2]][0][2] is None
                             and not self._set_on_instances(env["<class>"], node.attr, after_init=True)))):
                # `self._table` of the one object the plugin makes: the table with what its methods
                # add; `self.package` that only its `__init__` stores, of an object made at module
                # level (made whenever its module runs): what the construction handed it (`plugin =
                # Plugin(package=f"{__name__}.models")`), in any method, however it is called (by
                # upstream too: an entry point naming the object). Made in a function, the
                # object's methods read it per call (helper_bindings, which knows whether that runs)
                return self._record_attribute(made, node.attr, depth)
            if isinstance(node.value, ast.Name) and env.get("<self>") == node.value.id and not self._set_on_instances(env["<class>"], node.attr):
                held = self.class_constant(env["<class>"], node.attr, depth + 1)  # `self.TARGETS`: the class's constant
                if held is not OPAQUE:
                    return held
            if (isinstance(node.value, ast.Call) and dotted(node.value.func) == "type" and "type" not in env and len(node.value.args) == 1
                    and isinstance(node.value.args[0], ast.Name) and env.get("<self>") == node.value.args[0].id):
                held = self.class_constant(env["<class>"], node.attr, depth + 1)  # `type(self).TARGETS`: the same, on the class
                if held is not OPAQUE:
                    return held
            root = node.value
            while isinstance(root, ast.Attribute):
                root = root.value
            if (isinstance(root, (ast.Call, ast.Subscript)) and isinstance(base := self.const(module, node.value, env, depth + 1), Named)
                    and (is_upstream(base.path) or base.path in self.files)):
                if node.attr in _NAME_ATTRIBUTES and (named := self._name_attribute(base.path, node.attr)) is not None:
                    return named  # `cls.__bases__[0].__name__`: the class's own name
                return Named(f"{base.path}.{node.attr}")  # `sys.modules.get(M).Cls`, `import_module(M).f`, `__import__("pkg").sub.f`
            # (`X[k].attr` is an attribute of an item of X, never of X; `f(x).attr` one of what f
            # returns, never of f: only `C(x).attr` reads C's)
            owner = self.qualify(module, dotted(node.value), env) if not isinstance(node.value, ast.Subscript) else None
            if isinstance(node.value, ast.Call) and self._def_or_class(owner) == "def":
                owner = None
            if owner is None and isinstance(root, ast.Name) and isinstance(env.get(root.id), Record) and isinstance(
                    base := self.const(module, node.value, env, depth + 1), Named):
                owner = base.path  # `self._field.name` where the object keeps `envs.SGLANG_X`
            home, _, constant = (owner or "").rpartition(".")
            if home in self.files and isinstance(held := self.module_constant(home, constant, depth + 1), Record):
                # TARGETS.draft_extend of a module-level SimpleNamespace or plugin record, unless
                # the module writes that attribute on it
                if not any(isinstance(n, ast.Attribute) and n.attr == node.attr and isinstance(n.ctx, ast.Store)
                           and dotted(n.value) == constant for n in walk(self.tree(home))):
                    return self._record_attribute(held, node.attr, depth)
            if owner and node.attr in _NAME_ATTRIBUTES:
                named = self._name_attribute(owner, node.attr)
                if named is not None:
                    return named
            if owner in self.files:
                return self.module_constant(owner, node.attr, depth + 1)
            settings = profile().settings_fields
            if node.attr == "name" and settings and owner and owner.rpartition(".")[0] == settings:
                return owner.rpartition(".")[2]  # envs.SGLANG_X.name: the field's variable
            if (version := self._version_read(f"{owner}.{node.attr}")) is not None:
                return version
            held = self.class_constant(owner, node.attr, depth + 1) if owner else OPAQUE
            if held is not OPAQUE:
                # `Patch(cfg).around` on an object not folded: its method bound all the same
                return self._bound_to(held, OPAQUE) if isinstance(node.value, ast.Call) else held
            return Named(f"{owner}.{node.attr}") if owner else OPAQUE
        if isinstance(node, ast.JoinedStr):
            pieces = []
            for value in node.values:
                if isinstance(value, ast.FormattedValue):
                    piece = self.const(module, value.value, env, depth + 1)
                    if not isinstance(piece, (str, int)) or value.format_spec is not None:
                        return OPAQUE
                    pieces.append(str(piece))
                else:
                    pieces.append(str(value.value))
            return "".join(pieces)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left, right = self.const(module, node.left, env, depth + 1), self.const(module, node.right, env, depth + 1)
            if isinstance(left, str) and isinstance(right, str):
                return left + right
            if isinstance(left, (list, tuple)) and isinstance(right, (list, tuple)):
                return [*left, *right]
            if type(left) is int and type(right) is int:
                return left + right  # (an index: `NAMES[i + 1]`)
            return OPAQUE
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Sub, ast.Mult, ast.FloorDiv)):
            # integer arithmetic of folded ints (`len(NAMES) - 1`, `2 * i`): an index or a bound
            left, right = self.const(module, node.left, env, depth + 1), self.const(module, node.right, env, depth + 1)
            if type(left) is int and type(right) is int and not (isinstance(node.op, ast.FloorDiv) and right == 0) and max(abs(left), abs(right)) < 1 << 32:
                return {ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv}[type(node.op)](left, right)
            return OPAQUE
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):  # a folded path joined with a str or path
            left, right = self.const(module, node.left, env, depth + 1), self.const(module, node.right, env, depth + 1)
            if isinstance(left, PurePosixPath) and isinstance(right, (str, PurePosixPath)) or isinstance(left, str) and isinstance(right, PurePosixPath):
                return PurePosixPath(left) / right
            if isinstance(left, PackageFile) and isinstance(right, str):  # a Traversable's `/` is joinpath (importlib.resources.abc)
                return PackageFile(left.package, str(PurePosixPath(left.relative, right)))
            return OPAQUE
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitAnd):
            # `NAMES.keys() & sys.modules.keys()` (or `set(NAMES) & sys.modules.keys()`): the upstream
            # modules named there that are loaded, each a LoadedName (the set's order: sorted)
            sides = [node.left, node.right]
            loaded = [self.qualify(module, dotted(n.func.value if isinstance(n, ast.Call) and not n.args and isinstance(n.func, ast.Attribute)
                                              and n.func.attr == "keys" else n), env) == "sys.modules" for n in sides]
            if loaded.count(True) == 1:
                names = self.iterated(self.const(module, sides[loaded.index(False)], env, depth + 1))
                if isinstance(names, list) and all(isinstance(n, str) and is_upstream(n) for n in names):
                    return [LoadedName(n) for n in sorted(set(names))]
            return OPAQUE
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):  # a union of folded sets (or dicts)
            left, right = self.const(module, node.left, env, depth + 1), self.const(module, node.right, env, depth + 1)
            if isinstance(left, dict) and isinstance(right, dict):
                return {**left, **right}
            if isinstance(left, list) and isinstance(right, list) and all(isinstance(e, (str, int)) for e in (*left, *right)):
                return list(dict.fromkeys([*left, *right]))
            flags = [self._flag_members(v) for v in (left, right)]
            if all(f is not None for f in flags):  # `Backend.ALPHA | Backend.GAMMA` of an enum.Flag
                return FlagSet(flags[0] | flags[1])
            return OPAQUE
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
            fmt, args = self.const(module, node.left, env, depth + 1), self.const(module, node.right, env, depth + 1)
            # only plain values are formatted: a folded Named or Instance is no run-time string;
            # a mapping fills `%(key)s` fields
            values = args.values() if isinstance(args, dict) else args if isinstance(args, list) else [args]
            plain = all(isinstance(a, (str, int, float)) for a in values)
            if isinstance(fmt, str) and isinstance(args, (str, int, float, list, dict)) and plain:
                try:
                    return fmt % (tuple(args) if isinstance(args, list) else args)
                except (TypeError, ValueError, KeyError):  # a field the mapping lacks: not this value
                    return OPAQUE
            return OPAQUE
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            elements = []
            for element in node.elts:
                if isinstance(element, ast.Starred):  # (*ROOT, name): the folded sequence's elements
                    spread = self.const(module, element.value, env, depth + 1)
                    if not isinstance(spread, (list, dict)):
                        return OPAQUE
                    elements.extend(spread)
                else:
                    elements.append(self.const(module, element, env, depth + 1))
            return _distinct(elements) if isinstance(node, ast.Set) else elements
        if isinstance(node, (ast.ListComp, ast.GeneratorExp)) and self._version_parts(module, node, env, depth):
            return RunningVersion(parsed=True)
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp)) and len(node.generators) == 1:
            made = self._comprehension(module, node.elt, node.generators[0], env, depth)
            return _distinct(made) if isinstance(node, ast.SetComp) and isinstance(made, list) else made
        if isinstance(node, ast.DictComp) and len(node.generators) == 1:  # {b: f"{P}.{b}" for b in NAMES}
            generator = node.generators[0]
            loaded = self._loaded_filter(module, node, env)
            if loaded:  # {m: sys.modules[m] for m in NAMES if m in sys.modules}: each module where it is loaded, as .get gives
                generator = ast.comprehension(target=generator.target, iter=generator.iter, ifs=[], is_async=generator.is_async)
            keys = self._comprehension(module, node.key, generator, env, depth)
            if not isinstance(keys, list) and not {n.id for n in walk(node.value) if isinstance(n, ast.Name)} & set(assigned(generator.target)):
                # keys only a run gives, each the same folded value: a dict that may hold any key
                return _any_keys(self.const(module, node.value, env, depth + 1))
            values = self._comprehension(module, node.value, generator, env, depth)
            if not isinstance(keys, list) or not isinstance(values, list):
                return OPAQUE
            for key in keys if loaded else ():
                if isinstance(key, str) and is_upstream(key):
                    self.none_fallbacks[(module, key)] = ModuleExists(key)
            return {_hashable(key): value for key, value in zip(keys, values)}
        if isinstance(node, ast.Dict):
            if len(node.keys) == 1 and node.keys[0] is None and self._upstream_value(held := self.const(module, node.values[0], env, depth + 1)):
                return held  # `{**REG}` of an upstream registry: a snapshot, as dict(REG)
            folded = {}
            for key, value in zip(node.keys, node.values):
                if key is not None:
                    # a tuple key folds to a list: key the dict by the tuple, as Python does
                    folded[_hashable(self.const(module, key, env, depth + 1))] = self.const(module, value, env, depth + 1)
                elif isinstance(spread := self.const(module, value, env, depth + 1), dict):
                    folded.update(spread)  # `{**TABLE, "k": v}`: its entries, in order
                elif isinstance(value, ast.IfExp) and (either := self._either_dict(module, value, env, depth)) is not None:
                    folded.update(either)
                else:
                    return OPAQUE
            return folded
        if isinstance(node, ast.Call):
            return self._const_call(module, node, env, depth)
        if isinstance(node, ast.Subscript) and self.qualify(module, dotted(node.value), env) == "sys.modules":
            loaded = self.const(module, node.slice, env, depth + 1)
            return Named(loaded) if isinstance(loaded, str) and is_upstream(loaded) else OPAQUE
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) and isinstance(node.slice, ast.Slice):
            # NAMES[1:], NAMES[::-1], name[:-3] of a folded sequence or string
            container = self.const(module, node.value, env, depth + 1)
            bounds = [self.const(module, b, env, depth + 1) if b is not None else None for b in (node.slice.lower, node.slice.upper, node.slice.step)]
            if isinstance(container, (list, str)) and all(b is None or type(b) is int for b in bounds) and bounds[2] != 0:
                return container[slice(*bounds)]
            return OPAQUE
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):  # TABLE["key"], PAIR[0] of folded constants
            container, key = self.const(module, node.value, env, depth + 1), self.decided(self.const(module, node.slice, env, depth + 1))
            if isinstance(container, Record) and (hook := self._lookup_hook(container.cls)) is not None:
                # `MODULES[name]` of a plugin mapping: what its `__getitem__`, or for a dict kept
                # empty its `__missing__`, returns for the key (the data model, "__missing__")
                call = ast.Call(func=ast.Attribute(value=node.value, attr=hook, ctx=ast.Load()), args=[node.slice], keywords=[])
                return self._const_call(module, ast.copy_location(call, node), env, depth + 1)
            if isinstance(container, Named) and isinstance(key, str) and (member := self._enum_lookup(container.path, name=key)) is not None:
                return member  # `Upstream["TORCHAO"]`: the member of that name (the enum docs, "Programmatic access")
            if isinstance(container, Named) and container.path in _LITERALS:
                values = key if isinstance(node.slice, ast.Tuple) and isinstance(key, list) else [key]
                return LiteralType(tuple(values)) if all(isinstance(v, (str, int, bool)) or v is None for v in values) else OPAQUE
            if isinstance(container, dict) and not isinstance(key, (list, dict)) and key in container:
                return container[key]
            if isinstance(container, MayHold):
                return container.lookup(key)
            if isinstance(container, ModuleNamespace):
                return self._namespace_read(container, key, OPAQUE, depth)  # (KeyError where it is not bound: not folded)
            if isinstance(container, (list, str)) and type(key) is int and -len(container) <= key < len(container):
                return container[key]  # (a name's first letter, `fname[0] != "_"`)
            return OPAQUE
        if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or) and all(isinstance(v, (ast.Call, ast.NamedExpr)) for v in node.values):
            # `sys.modules.get(NEW) or sys.modules.get(OLD)` (or getattr(m, "x", None)): the first
            # that is there on this release, each None where it is not
            values = [self.const(module, v, env, depth + 1) for v in node.values]
            if isinstance(values[0], Named) and all(v == values[0] for v in values):
                return values[0]  # `sys.modules.get(m) or importlib.import_module(m)`: that module either way
            there = [self._there(module, v) for v in values]
            if None not in there:
                return next((v for v, found in zip(values, there) if found), values[-1])
        if (isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or) and len(node.values) == 2
                and self._there(module, loaded := self.const(module, node.values[0], env, depth + 1)) is not None
                and isinstance(found := self.none_fallbacks.get((module, loaded.path)), ModuleExists)):
            # `sys.modules.get(M) or _STUB`: M where it is loaded, the plugin's stand-in where not
            self.stand_in_owners.add((module, found.path))
            return loaded
        if isinstance(node, ast.BoolOp) and not any(isinstance(v, (ast.Compare, ast.UnaryOp)) for v in node.values):
            # `value or "default"`, `name.rpartition(".")[0] or name`, `a and b` of folded plain
            # values, `fast and _first or _second` of the plugin's functions (each true): Python's
            # value of the expression (a test among them stays a condition)
            values = [self.const(module, v, env, depth + 1) for v in node.values]
            truths = [self._value_truth(module, v) for v in values]
            if None not in truths[:-1]:
                want = isinstance(node.op, ast.And)  # `and` stops at the first false value, `or` at the first true one
                return next((v for v, truth in zip(values[:-1], truths) if truth is not want), values[-1])
        if isinstance(node, ast.IfExp):
            # (before the test folds: on a release without M, the patch through it is reported missing)
            held = self._present_or_none(module, node, env, depth)
            if held is not None:
                return held
            taken = self._truth_of(module, node.test, env, depth + 1)
            if taken is not None:  # `a if t else b` where t folds: that branch's value
                return self.const(module, node.body if taken else node.orelse, env, depth + 1)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):  # -1 in an index or a slice
            inner = self.const(module, node.operand, env, depth + 1)
            return -inner if type(inner) in (int, float) else OPAQUE
        if isinstance(node, (ast.BoolOp, ast.UnaryOp, ast.Compare)):
            cond = self.condition(module, node, env, depth + 1)
            if isinstance(cond, Const):
                return cond.value
            return OPAQUE if isinstance(cond, Undecided) else Condition(cond)
        return OPAQUE

    def _present_or_none(self, module: str, node: ast.IfExp, env: dict, depth: int) -> Named | None:
        """`sys.modules[M].C if M in sys.modules else None` (or `None if not hasattr(m, "f") else
        m.f`): a presence test of an upstream module or attribute choosing between an upstream
        object under it and None, read as `sys.modules.get(M)` / `getattr(m, "f", None)` are:
        that object where the test holds, None where not (none_fallbacks), so a later `is None`
        test guards its use. None for any other conditional expression."""
        nones = [isinstance(b, ast.Constant) and b.value is None for b in (node.body, node.orelse)]
        if nones.count(True) != 1:
            return None
        cond = self.condition(module, node.test, env, depth + 1)
        negated = isinstance(cond, Not)
        present = cond.cond if negated else cond
        if not isinstance(present, (ModuleExists, HasAttr)) or nones[0] != negated:
            return None  # (the object must be what the branch taken when it is present gives)
        held = self.const(module, node.orelse if negated else node.body, env, depth + 1)
        root = present.path if isinstance(present, ModuleExists) else f"{present.owner}.{present.name}"
        if not (isinstance(held, Named) and is_upstream(held.path) and (held.path == root or held.path.startswith(f"{root}."))):
            return None
        self.none_fallbacks[(module, held.path)] = present
        return held

    def _chained(self, module: str, maps: list, args: list[ast.expr]):
        """`ChainMap(*maps)` where some maps may hold keys only a run gives (MayHold): a MayHold
        whose known keys hold the first known map's value, or an earlier MayHold's value where a
        run may give that key there (OneOf, under an atom naming that map); OPAQUE where a map
        does not fold or two such maps give unseen keys different values."""
        if not all(isinstance(m, (dict, MayHold)) for m in maps) or len({m.value for m in maps if isinstance(m, MayHold)}) > 1:
            return OPAQUE
        merged: dict = {}
        for m, arg in reversed(list(zip(maps, args))):  # the last map first: an earlier one's entry wins
            if isinstance(m, dict):
                merged.update(m)
                continue
            merged.update(m.known)
            held = GuardCond(Unknown(f"{module}:{arg.lineno}:{arg.col_offset} a key {ast.unparse(arg)} holds"), f"a run puts the key in {ast.unparse(arg)}", arg.lineno)
            lacked = GuardCond(Not(held.cond), f"not ({held.text})", arg.lineno)
            merged = {k: v if v == m.value else OneOf(((m.value, (held,)), (v, (lacked,)))) for k, v in merged.items()}
        value = next(m.value for m in maps if isinstance(m, MayHold))
        return MayHold(tuple(merged.items()), value)

    def _either_dict(self, module: str, node: ast.IfExp, env: dict, depth: int) -> dict | None:
        """`**(OPTIONAL if flag else {})` under a test decided at run time: the entries of either
        dict, what a loop over the result may meet (as entries an `if` adds: _added_by); None when
        a branch is no folded dict or the two give one key different values."""
        arms = [self.const(module, arm, env, depth + 1) for arm in (node.body, node.orelse)]
        if not all(isinstance(arm, dict) for arm in arms) or any(k in arms[1] and arms[1][k] != v for k, v in arms[0].items()):
            return None
        return {**arms[0], **arms[1]}

    def loaded_walk(self, module: str, loop: ast.For | ast.AsyncFor, env: dict) -> list | None:
        """`for name, mod in sys.modules.copy().items():` (or `list(sys.modules)`, `.keys()`,
        `.values()`, …) whose body acts only on the modules a test of the name keeps (`t =
        T.get(name)` then `if not t: continue`; `if name not in T: continue` or `if name != M:
        continue`; the body one `if name in T:` or `if name == M:`), the name being the key or,
        over `.values()`, the module's `__name__` (`mod.__name__`, `getattr(mod, "__name__",
        None)`): the walk over those upstream names, each a LoadedName (its pass runs where that
        module is loaded), paired with the module `sys.modules[name]` for `.items()`, the module
        itself (a LoadedModule) for `.values()`. SGLang walks sys.modules so itself
        (utils/common.py apply_module_patch). None for any other loop."""
        walked, method = loop.iter, None
        while True:
            if isinstance(walked, ast.Call) and not walked.keywords and len(walked.args) == 1 and dotted(walked.func) in ("list", "tuple", "dict", "sorted"):
                walked = walked.args[0]
            elif (isinstance(walked, ast.Call) and isinstance(walked.func, ast.Attribute) and not walked.args
                  and (walked.func.attr == "copy" or walked.func.attr in ("items", "keys", "values") and method is None)):
                method = method or (None if walked.func.attr == "copy" else walked.func.attr)
                walked = walked.func.value
            else:
                break
        if self.qualify(module, dotted(walked) or "", env) != "sys.modules":
            return None
        pairs = method == "items"
        names = loop.target.elts if pairs and isinstance(loop.target, ast.Tuple) and len(loop.target.elts) == 2 else [loop.target]
        if not isinstance(names[0], ast.Name) or pairs and not isinstance(loop.target, ast.Tuple):
            return None
        key = names[0].id

        def is_key(node) -> bool:  # the name: the key, or over values the module's __name__
            if method != "values":
                return isinstance(node, ast.Name) and node.id == key
            read = node.args[:2] if isinstance(node, ast.Call) and dotted(node.func) == "getattr" and len(node.args) in (2, 3) else None
            return (isinstance(node, ast.Attribute) and node.attr == "__name__" and isinstance(node.value, ast.Name) and node.value.id == key
                    or read is not None and isinstance(read[0], ast.Name) and read[0].id == key
                    and isinstance(read[1], ast.Constant) and read[1].value == "__name__")

        def kept(test, positive: bool) -> list | None:  # the names `name in T` / `name == M` keeps (negated: `not in`, `!=`)
            if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and is_key(test.left)):
                return None
            if isinstance(test.ops[0], ast.In if positive else ast.NotIn):
                return self.iterated(self.const(module, test.comparators[0], env))
            return [self.const(module, test.comparators[0], env)] if isinstance(test.ops[0], ast.Eq if positive else ast.NotEq) else None

        def skips(stmt) -> ast.expr | None:  # `if <test>: continue`: the test
            return stmt.test if isinstance(stmt, ast.If) and not stmt.orelse and len(stmt.body) == 1 and isinstance(stmt.body[0], ast.Continue) else None

        body, keys = loop.body, None
        if len(body) == 1 and isinstance(body[0], ast.If) and not body[0].orelse:
            keys = kept(body[0].test, True)
        if keys is None and body and (test := skips(body[0])) is not None:
            keys = kept(test, False)
        if (keys is None and method != "values" and len(body) > 1 and isinstance(body[0], ast.Assign) and len(body[0].targets) == 1
                and isinstance(body[0].targets[0], ast.Name) and isinstance(got := body[0].value, ast.Call) and isinstance(got.func, ast.Attribute)
                and got.func.attr == "get" and len(got.args) == 1 and is_key(got.args[0]) and (test := skips(body[1])) is not None):
            held = body[0].targets[0].id
            empty = (isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not) and isinstance(test.operand, ast.Name) and test.operand.id == held
                     or isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Is) and isinstance(test.left, ast.Name)
                     and test.left.id == held and isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value is None)
            keys = self.iterated(self.const(module, got.func.value, env)) if empty else None
        if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
            return None
        upstream = [k for k in dict.fromkeys(keys) if is_upstream(k)]
        if method == "values":
            return [LoadedModule(k) for k in upstream]
        return [[LoadedName(k), Named(k)] if pairs else LoadedName(k) for k in upstream]

    def iterated(self, value):
        """What a loop over a folded value meets: a list's elements, a dict's keys, a string's
        characters, a plugin enum class's members (each `Named("pkg.E.M")`, whose `.value` /
        `.name` fold), an upstream enum's as one Instance of it; the value itself otherwise."""
        if isinstance(value, dict):
            return list(value)
        if isinstance(value, MayHold):  # the keys seen, then the ones only a run gives
            return [key for key, _ in value.known] + [AnyKey(value)]
        if isinstance(value, str) and len(value) <= 256:  # a string's characters
            return list(value)
        if isinstance(value, Named) and not is_upstream(value.path) and (members := self.enum_members(value.path)) is not None:
            return [Named(f"{value.path}.{member}") for member in members]
        if isinstance(value, Named) and is_upstream(value.path) and (ref := self.upstream_ref(value.path)) is not None and self.index.is_enum(ref):
            return [Instance(ref.path)]  # an upstream enum's members: one instance of it stands for each
        return value

    def strings(self, module: str, node: ast.AST, env: dict, depth: int = 0) -> list[str]:
        """The strings an expression may evaluate to: a constant; both arms of `a if c else b`;
        each of `x or y`; every value of a constant dict it indexes (`backend_map[key]`,
        `backend_map.get(key, default)`); the default of an environment read
        (`os.environ.get("X", d)`, `os.getenv("X", d)`: what a deployment that does not set X
        gets; the variable's own value is unknown here); what each `return` of a plugin helper
        it calls may give, its parameters bound to what the call passes."""
        if depth > 8:
            return []
        if isinstance(node, ast.IfExp):
            return self.strings(module, node.body, env, depth + 1) + self.strings(module, node.orelse, env, depth + 1)
        if isinstance(node, ast.BoolOp):
            return [s for value in node.values for s in self.strings(module, value, env, depth + 1)]
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add) and self.const(module, node, env) is OPAQUE:
            # `"pkg.platform:" + TABLE.get(gen, "Default")`: each string of one side joined to each of the other
            lefts, rights = self.strings(module, node.left, env, depth + 1), self.strings(module, node.right, env, depth + 1)
            return [a + b for a in lefts for b in rights][:64]
        qualified = self.qualify(module, dotted(node.func), env) if isinstance(node, ast.Call) and dotted(node.func) else None
        if qualified in _ENVIRONMENT_READS:
            default = node.args[1] if len(node.args) > 1 else next((k.value for k in node.keywords if k.arg in ("default", "value")), None)
            return self.strings(module, default, env, depth + 1) if default is not None else []
        if (qualified and not any(isinstance(a, ast.Starred) for a in node.args) and (function := self._plugin_function(qualified)) is not None
                and self.const(module, node, env) is OPAQUE):
            home, definition = function
            local = self._called_with(home, definition, [self.const(module, a, env) for a in node.args], node.keywords, module, env, depth)
            returns = [r.value for r in own_returns(definition) if r.value is not None]
            return list(dict.fromkeys(s for r in returns for s in self.strings(home, r, local, depth + 1)))
        if isinstance(node, ast.Subscript) or (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"):
            table = self.const(module, node.value if isinstance(node, ast.Subscript) else node.func.value, env)
            default = self.strings(module, node.args[1], env) if isinstance(node, ast.Call) and len(node.args) > 1 else []
            return [v for v in table.values() if isinstance(v, str)] + default if isinstance(table, dict) else []
        value = self.const(module, node, env)
        return [value] if isinstance(value, str) else []

    def _loaded_filter(self, module: str, node: ast.DictComp, env: dict) -> bool:
        """Whether a dict comprehension is `{k: sys.modules[k] for … if k in sys.modules}`: the
        loaded modules among those named (a .get of one gives None where it is not loaded)."""
        generator = node.generators[0]
        if len(generator.ifs) != 1 or not isinstance(test := generator.ifs[0], ast.Compare) or len(test.ops) != 1 or not isinstance(test.ops[0], ast.In):
            return False
        key = ast.dump(node.key)
        return (ast.dump(test.left) == key and self.qualify(module, dotted(test.comparators[0]), env) == "sys.modules"
                and isinstance(node.value, ast.Subscript) and self.qualify(module, dotted(node.value.value), env) == "sys.modules"
                and ast.dump(node.value.slice) == key)

    def _comprehension(self, module: str, element: ast.expr, generator: ast.comprehension, env: dict, depth: int):
        """`[f"{P}.{n}" for n in NAMES if …]` over a folded sequence: each element folded with the
        loop variable bound, those an `if` folds false left out; OPAQUE when the sequence, a
        test or the unpacking does not fold."""
        items = self.iterated(self.const(module, generator.iter, env, depth + 1))
        if not isinstance(items, list) or generator.is_async:
            return OPAQUE
        folded = []
        for item in items:
            bound = bind(generator.target, item)
            # (an item that does not unpack says nothing; one with some parts known binds those:
            # `k, v` over zip(NAMES, values, strict=True) knows each k)
            if not isinstance(generator.target, ast.Name) and (not bound or all(value is OPAQUE for value in bound.values())):
                return OPAQUE
            inner = {**env, **bound}
            for test in generator.ifs:  # `if (m := sys.modules.get(n)) is not None`: m as the element sees it
                inner.update({n.target.id: self.const(module, n.value, inner, depth + 1) for n in walk(test)
                              if isinstance(n, ast.NamedExpr) and isinstance(n.target, ast.Name)})
            conds = [self.condition(module, test, inner, depth + 1) for test in generator.ifs]
            made = self.const(module, element, inner, depth + 1)
            if isinstance(made, str) and conds and all(c == ModuleExists(made) for c in conds):
                folded.append(LoadedName(made))  # `m for m in NAMES if m in sys.modules`: m where it is loaded
                continue
            if isinstance(made, list) and conds and all(c == conds[0] for c in conds) and isinstance(conds[0], ModuleExists) and conds[0].path in made:
                # `row for row in ROWS if row[0] in sys.modules`: the row, its module kept where it is loaded
                folded.append([LoadedName(v) if v == conds[0].path and isinstance(v, str) else v for v in made])
                continue
            # (a test this release decides, `if hasattr(Sampler, n)`: its truth here)
            tests = [kleene(cond, self._release_leaf) for cond in conds]
            if any(t is None for t in tests):
                return OPAQUE
            if all(tests):
                folded.append(made)
        return folded

    def _const_call(self, module: str, node: ast.Call, env: dict, depth: int):
        if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
            node, env = self.spread_call(module, node, env, depth)  # `zip(*TABLE)`: with the folded items as its arguments
        if isinstance(node.func, ast.Lambda):  # `(lambda: X)()`: its body
            return self._closure_called(self.const(module, node.func, env, depth + 1), node, module, env, depth)
        if isinstance(node.func, ast.Name) and (node.func.id in env or getattr(self.table(module).names.get(node.func.id), "kind", None) == "value"):
            bound = self.const(module, node.func, env, depth + 1)
            if isinstance(bound, Closure):  # `enabled = lambda: …; enabled()`
                return self._closure_called(bound, node, module, env, depth)
            if isinstance(bound, BoundMethod):  # `fmt("x")` of `fmt = "pkg.{}".format`: "pkg.{}".format("x")
                method = ast.Attribute(value=ast.Constant(bound.text), attr=bound.method, ctx=ast.Load())
                return self._const_call(module, ast.Call(func=method, args=node.args, keywords=node.keywords), env, depth + 1)
        name = dotted(node.func) or ""
        qualified = self.qualify(module, name, env) or name
        home, _, attr = qualified.rpartition(".")
        if (isinstance(node.func, ast.Name) and home in self.files and getattr(self.table(home).names.get(attr), "kind", None) == "value"
                and isinstance(bound := self.const(module, node.func, env, depth + 1), Named) and not bound.path.startswith(f"{home}.")):
            name = qualified = bound.path  # `load = functools.cache(importlib.import_module)`; `load(m)` calls import_module
        args = node.args
        if self._environment_defaults is not None and qualified in _ENVIRONMENT_READS and args:
            # (defaults_of: what a deployment that sets nothing gets, `os.environ.get("X", d)` being d)
            default = args[1] if len(args) > 1 else next((k.value for k in node.keywords if k.arg in ("default", "value")), None)
            variable = self.const(module, args[0], env, depth + 1)
            if default is not None and isinstance(variable, str):
                self._environment_defaults.append(variable)
                return self.const(module, default, env, depth + 1)
        cached = node.func if isinstance(node.func, ast.Call) and not node.func.args else node  # (lru_cache(maxsize=…)(f), or cache(f))
        if len(args) == 1 and not isinstance(args[0], ast.Starred) and not node.keywords and self.qualify(module, dotted(cached.func) or "", env) in _CACHING:
            # functools.cache(f), lru_cache(maxsize=None)(f): f, remembering results (the functools docs)
            return self.const(module, args[0], env, depth + 1)
        if (isinstance(node.func, ast.Call) and len(args) == 1 and not node.keywords and len(node.func.args) == 1 and not node.func.keywords
                and self.qualify(module, dotted(node.func.func) or "", env) == "operator.attrgetter"):
            # attrgetter("a.b")(obj): obj.a.b (the operator docs), on a module or class the scan names
            path, held = self.const(module, node.func.args[0], env, depth + 1), self.const(module, args[0], env, depth + 1)
            return Named(f"{held.path}.{path}") if isinstance(path, str) and isinstance(held, Named) and path else OPAQUE
        if isinstance(node.func, ast.Attribute) and not args and not node.keywords and is_upstream(qualified) and (
                viewed := self._viewed_attribute(qualified)) is not None:
            return Named(viewed)  # `ModelRegistry.get_supported_archs()`: a view of the registry's keys
        if qualified in ("importlib.resources.files", "importlib_resources.files") and len(args) == 1 and not node.keywords:
            package = self.const(module, args[0], env, depth + 1)
            return PackageFile(package) if isinstance(package, str) and package in self.files and self.files[package][1] else OPAQUE
        if isinstance(node.func, ast.Attribute) and node.func.attr in ("joinpath", "read_text", "open") and isinstance(
                held := self.const(module, node.func.value, env, depth + 1), PackageFile):
            if node.func.attr == "joinpath":
                parts = [self.const(module, a, env, depth + 1) for a in args]
                return PackageFile(held.package, str(PurePosixPath(held.relative, *parts))) if parts and all(isinstance(p, str) for p in parts) else OPAQUE
            # `.open("rb")`: the open file, which json.load / tomllib.load read whole
            return held if node.func.attr == "open" else self._package_text(held)
        if qualified in _DATA_PARSERS and len(args) == 1 and not node.keywords:
            # json.loads(text), tomllib.loads(text); json.load(f) / tomllib.load(f) of an open package file
            text = self.const(module, args[0], env, depth + 1)
            text = self._package_text(text) if isinstance(text, PackageFile) and qualified.endswith(".load") else text
            try:
                return _DATA_PARSERS[qualified](text) if isinstance(text, str) else OPAQUE
            except ValueError:  # (tomllib.TOMLDecodeError is one)
                return OPAQUE
        if name == "vars" and qualified == "vars" and len(args) == 1 and not node.keywords and isinstance(
                held := self.const(module, args[0], env, depth + 1), Record) and held.cls in NAMESPACES:
            return dict(held.fields)  # a SimpleNamespace's __dict__: its attributes (the types docs)
        if name == "vars" and qualified == "vars" and len(args) == 1 and not node.keywords and isinstance(
                held := self.const(module, args[0], env, depth + 1), Named) and (namespace := self._class_namespace(held.path, depth)) is not None:
            return namespace
        if name == "vars" and qualified == "vars" and len(args) == 1 and not node.keywords and isinstance(
                held := self.const(module, args[0], env, depth + 1), Named) and held.path in self.files:
            return ModuleNamespace(held.path)  # a plugin module's globals, read by key
        if name == "globals" and qualified == "globals" and not args and not node.keywords:
            return ModuleNamespace(module)  # `globals()[name]`: this module's globals, read by key
        if qualified == "inspect.getmembers" and len(args) == 2 and not node.keywords and isinstance(held := self.const(module, args[0], env, depth + 1), Named):
            return self._function_members(held.path, self.qualify(module, dotted(args[1]) or "", env), depth)
        if qualified == "types.MappingProxyType" and len(args) == 1 and not node.keywords and (
                isinstance(viewed := self.const(module, args[0], env, depth + 1), dict) or self._upstream_value(viewed)):
            return viewed  # a read-only view of the dict: its lookups and iteration (the types docs)
        if qualified in _PATH_CLASSES and not node.keywords and not any(isinstance(a, ast.Starred) for a in args):
            # pathlib paths of folded strings, as pure POSIX paths: only their names are read
            parts = [self.const(module, a, env, depth + 1) for a in args]
            return PurePosixPath(*parts) if all(isinstance(p, (str, PurePosixPath)) for p in parts) else OPAQUE
        if isinstance(node.func, ast.Attribute) and node.func.attr in _PATH_METHODS and not node.keywords:
            path = self.const(module, node.func.value, env, depth + 1)
            given = [self.const(module, a, env, depth + 1) for a in args]
            if isinstance(path, PurePosixPath) and node.func.attr in ("resolve", "absolute") and not given:
                return path  # (a pure path: the plugin's own files have no links to follow here)
            if isinstance(path, PurePosixPath) and all(isinstance(g, (str, PurePosixPath)) for g in given):
                try:
                    return getattr(path, node.func.attr)(*given)
                except (TypeError, ValueError):
                    return OPAQUE
        if (isinstance(node.func, ast.Attribute) and node.func.attr in ("glob", "rglob") and len(args) == 1 and not node.keywords
                and isinstance(path := self.const(module, node.func.value, env, depth + 1), PurePosixPath) and path.is_relative_to(_SOURCE_ROOT)
                and isinstance(pattern := self.const(module, args[0], env, depth + 1), str) and pattern.endswith(".py")):
            # `Path(__file__).parent.rglob("*.py")`: the plugin's own modules under that folder
            # whose names match (glob: the pattern's parts from the folder down), sorted
            found = []
            for name, (_, is_package) in self.files.items():
                held = _module_path(name, is_package)
                if held.is_relative_to(path) and held != path:
                    below = held.relative_to(path)
                    if fnmatch.fnmatch(held.name, pattern) if node.func.attr == "rglob" and "/" not in pattern else (
                            len(below.parts) == len(PurePosixPath(pattern).parts) and below.match(pattern)):
                        found.append(held)
            return sorted(found)
        if (qualified == "os.listdir" and len(args) == 1 or isinstance(node.func, ast.Attribute) and node.func.attr == "iterdir" and not args) and not node.keywords and (
                folder := self._plugin_folder(self.const(module, args[0] if args else node.func.value, env, depth + 1))) is not None:
            # a listing of a plugin folder: its modules and subpackages (os.listdir gives names, Path.iterdir
            # paths; sorted, where the OS gives no order; files other than modules are not known here)
            children = sorted({folder / held.relative_to(folder).parts[0] for name, (_, is_package) in self.files.items()
                               if (held := _module_path(name, is_package)).is_relative_to(folder) and held != folder})
            return [child.name for child in children] if qualified == "os.listdir" else children
        if qualified in ("glob.glob", "glob.iglob") and len(args) == 1 and not node.keywords and isinstance(
                pattern := self.const(module, args[0], env, depth + 1), str) and self._plugin_folder(posixpath.dirname(pattern)) is not None:
            # glob.glob(os.path.join(folder, "*.py")): the plugin's module files that match, as text, sorted
            return sorted(str(held) for name, (_, is_package) in self.files.items()
                          if fnmatch.fnmatchcase(str(held := _module_path(name, is_package)), pattern)
                          and len(held.parts) == len(PurePosixPath(pattern).parts))
        if qualified == "importlib.util.spec_from_file_location" and args and isinstance(
                location := self.const(module, args[1] if len(args) > 1 else next((k.value for k in node.keywords if k.arg == "location"), None), env, depth + 1),
                (PurePosixPath, str)):
            # the spec of the plugin file at that location: module_from_spec + exec_module run it
            held = next((m for m, (_, is_package) in self.files.items() if _module_path(m, is_package) == PurePosixPath(location)), None)
            return Record(_MODULE_SPEC, (("name", held),)) if held is not None else OPAQUE
        if name in ("str", "os.fspath") and qualified in ("str", "os.fspath") and len(args) == 1 and isinstance(
                path := self.const(module, args[0], env, depth + 1), PurePosixPath):
            return str(path)
        if name == "str" and qualified == "str" and len(args) == 1 and not node.keywords and type(
                held := self.const(module, args[0], env, depth + 1)) in (str, int, float, bool):
            return str(held)  # `str(value)` of a plain folded value (an enum member's text is not its str())
        if qualified.endswith("import_module") and args:
            imported = self.const(module, args[0], env, depth + 1)
            package = next((self.const(module, k.value, env, depth + 1) for k in node.keywords if k.arg == "package"),
                           self.const(module, args[1], env, depth + 1) if len(args) > 1 else None)
            if isinstance(imported, str) and imported.startswith(".") and isinstance(package, str):
                try:  # import_module(".ops.x", package="pkg.hooks"): importlib's own resolution
                    imported = importlib.util.resolve_name(imported, package)
                except (ImportError, ValueError):
                    return OPAQUE
            return Named(imported) if isinstance(imported, str) and not imported.startswith(".") else OPAQUE
        if qualified == "importlib.util.find_spec" and args and isinstance(found := self.const(module, args[0], env, depth + 1), str) and found in self.files:
            # the spec of a plugin module M: `.name`; module_from_spec makes M's (empty) module (an upstream
            # module's spec stays a test that it is there)
            return Record(_MODULE_SPEC, (("name", found),))
        if qualified == "importlib.util.module_from_spec" and len(args) == 1:
            spec = self.const(module, args[0], env, depth + 1)
            return Named(spec.get("name")) if isinstance(spec, Record) and spec.cls == _MODULE_SPEC and isinstance(spec.get("name"), str) else OPAQUE
        if qualified == "dataclasses.asdict" and len(args) == 1 and not node.keywords and isinstance(
                record := self.const(module, args[0], env, depth + 1), Record) and record.fields:
            return dict(record.fields)  # the record's fields by name (nested records are copied too: left as folded)
        if qualified in ("dataclasses.replace", "copy.replace") and len(args) == 1 and all(k.arg for k in node.keywords):
            # a copy of a record with the fields named changed (the dataclasses docs; a field it
            # does not have raises, so it folds only when each is one)
            changes = {k.arg: self.const(module, k.value, env, depth + 1) for k in node.keywords}
            return self._replaced(self.const(module, args[0], env, depth + 1), changes, node)
        if qualified == "importlib.util.resolve_name" and len(args) == 2 and not node.keywords:
            # a relative module name against its anchor package (importlib's own resolution)
            relative, package = self.const(module, args[0], env, depth + 1), self.const(module, args[1], env, depth + 1)
            try:
                return importlib.util.resolve_name(relative, package) if isinstance(relative, str) and isinstance(package, str) else OPAQUE
            except (ImportError, ValueError):
                return OPAQUE
        if qualified == "__import__" and args:
            # the top-level package, or with a non-empty fromlist the module named (the builtin's docs)
            imported = self.const(module, args[0], env, depth + 1)
            fromlist = next((k.value for k in node.keywords if k.arg == "fromlist"), args[3] if len(args) > 3 else None)
            leaf = fromlist is not None and bool(self.const(module, fromlist, env, depth + 1))
            if isinstance(imported, str) and imported and not imported.startswith("."):
                return Named(imported if leaf else imported.partition(".")[0])
            return OPAQUE
        if qualified == "pkgutil.resolve_name" and args:
            # "pkg.mod:attr" or "pkg.mod.attr": the object, its module imported (pkgutil docs)
            resolved = self.const(module, args[0], env, depth + 1)
            return Named(resolved.replace(":", ".")) if isinstance(resolved, str) and resolved and not resolved.startswith(".") else OPAQUE
        if qualified in _ENTRY_POINTS and not args and (group := self.const(module, next((k.value for k in node.keywords if k.arg == "group"), None), env, depth + 1)) is not OPAQUE:
            # entry_points(group="g"): the plugin's own entries of that group, as EntryPoint records
            return self._entry_points(group) if isinstance(group, str) else OPAQUE
        if qualified in _ENTRY_POINTS and not args and not node.keywords:
            return Record(_ENTRY_POINTS_CLASS, ())  # entry_points(): `.select(group="g")` of it
        if (isinstance(node.func, ast.Attribute) and node.func.attr == "select" and not args
                and self.const(module, node.func.value, env, depth + 1) == Record(_ENTRY_POINTS_CLASS, ())):
            group = self.const(module, next((k.value for k in node.keywords if k.arg == "group"), None), env, depth + 1)
            return self._entry_points(group) if isinstance(group, str) else OPAQUE
        if (isinstance(node.func, ast.Attribute) and node.func.attr == "__subclasses__" and not args and not node.keywords
                and isinstance(base := self.const(module, node.func.value, env, depth + 1), Named) and base.path in self.scan.classes):
            # a plugin class's direct subclasses: those the plugin defines, in the order it does
            return [Named(c.path) for c in self.scan.classes.values() if base.path in c.bases]
        if qualified in ("typing.get_args", "typing_extensions.get_args") and len(args) == 1:
            literal = self.const(module, args[0], env, depth + 1)
            return list(literal.values) if isinstance(literal, LiteralType) else OPAQUE
        if qualified == "sys.modules.get" and args:
            # the module if something imported it, else None: on a release without it, always None
            loaded = self.const(module, args[0], env, depth + 1)
            if isinstance(loaded, str) and is_upstream(loaded):
                self.none_fallbacks[(module, loaded)] = ModuleExists(loaded)
                if len(args) > 1 and not (isinstance(args[1], ast.Constant) and args[1].value is None):
                    self.stand_in_owners.add((module, loaded))  # the default where it is not loaded
                return Named(loaded)
            return OPAQUE
        if qualified in ("importlib.metadata.version", "importlib_metadata.version") and args:
            return RunningVersion(parsed=False) if self.const(module, args[0], env, depth + 1) == profile().distribution else OPAQUE
        if (qualified in _VERSION_PARSERS or name.rsplit(".", 1)[-1] in ("parse_version", "Version", "LooseVersion")) and len(args) == 1:
            inner = self.const(module, args[0], env, depth + 1)
            if isinstance(inner, RunningVersion):
                return RunningVersion(parsed=True)
            return VersionLiteral(inner) if isinstance(inner, str) else OPAQUE
        if name in ("tuple", "list") and qualified == name and len(args) == 1 and self._version_parts(module, args[0], env, depth):
            return RunningVersion(parsed=True)  # compared with a tuple of ints as a version is
        if name in _SEQUENCE_BUILTINS and qualified == name and len(args) == 1 and (not node.keywords or name == "sorted"):
            # list(x) / tuple(x) / sorted(x) / set(x) of folded constants: its elements (a dict's keys)
            inner = self.iterated(self.const(module, args[0], env, depth + 1))
            if not isinstance(inner, list):
                return OPAQUE
            if name == "sorted":  # (the keys only a run gives: after the known ones, their order unknown)
                unseen = [i for i in inner if isinstance(i, AnyKey)]
                ordered = self._sorted(module, [i for i in inner if not isinstance(i, AnyKey)], node.keywords, env, depth)
                return ordered + unseen if isinstance(ordered, list) else OPAQUE
            return inner
        if qualified == "functools.reduce" and 2 <= len(args) <= 3 and not node.keywords and not any(isinstance(a, ast.Starred) for a in args):
            # reduce(f, items[, start]): f applied left to right (`reduce(getattr, "A.b".split("."), module)`
            # walks the path: the functools docs), each step folded as the call it is
            items = self.iterated(self.const(module, args[1], env, depth + 1))
            if not isinstance(items, list) or len(items) > 64 or (len(args) == 2 and not items):
                return OPAQUE
            held, rest = (self.const(module, args[2], env, depth + 1), items) if len(args) == 3 else (items[0], items[1:])
            for item in rest:
                step = ast.copy_location(ast.Call(func=args[0], args=[ast.Name("<acc>", ast.Load()), ast.Name("<item>", ast.Load())], keywords=[]), node)
                held = self.const(module, step, {**env, "<acc>": held, "<item>": item}, depth + 1)
                if held is OPAQUE:
                    break
            return held
        if name in ("len", "range") and qualified == name and args and not node.keywords and not any(isinstance(a, ast.Starred) for a in args):
            # len() of a folded sequence or mapping, range() of folded ints (at most 256 of them): the builtins
            values = [self.const(module, a, env, depth + 1) for a in args]
            if name == "len" and len(values) == 1 and isinstance(values[0], (list, str, dict)):
                return len(values[0])
            if name == "range" and len(values) <= 3 and all(type(v) is int for v in values) and values[2:] != [0] and len(span := range(*values)) <= 256:
                return list(span)
            return OPAQUE
        if name in ("max", "min") and qualified == name and args and not any(isinstance(a, ast.Starred) for a in args) and all(
                k.arg in ("key", "default") for k in node.keywords):
            # max(TABLE, key=TABLE.get), min(a, b): the first extreme item (builtins docs: the first
            # one met among equals; a stable sort with reverse= keeps that order), `default` when empty
            items = self.iterated(self.const(module, args[0], env, depth + 1)) if len(args) == 1 else [self.const(module, a, env, depth + 1) for a in args]
            default = next((k.value for k in node.keywords if k.arg == "default"), None)
            ordered = self._sorted(module, items, [ast.keyword("reverse", ast.Constant(name == "max")),
                                                   *(k for k in node.keywords if k.arg == "key")], env, depth) if isinstance(items, list) else OPAQUE
            if isinstance(ordered, list):
                return ordered[0] if ordered else self.const(module, default, env, depth + 1) if default is not None else OPAQUE
            return OPAQUE
        strict = [k for k in node.keywords if k.arg == "strict"] if qualified == "zip" else []
        if strict and len(node.keywords) == 1 and self.const(module, strict[0].value, env, depth + 1) is True and args:
            # zip(NAMES, values, strict=True): as many tuples as NAMES has items (else ValueError,
            # the builtins docs), each with what a folded part holds there, the rest not known
            parts = [self.iterated(self.const(module, a, env, depth + 1)) for a in args]
            sizes = {len(p) for p in parts if isinstance(p, list)}
            return [[p[i] if isinstance(p, list) else OPAQUE for p in parts] for i in range(sizes.pop())] if len(sizes) == 1 else OPAQUE
        if qualified in _ITERATORS and args and (not node.keywords or qualified == "enumerate"):
            # zip(a, b) / enumerate(a, start) / reversed(a) / itertools.compress(a, selectors) of
            # folded sequences: what a loop over it meets, each tuple a list (Python's builtins docs)
            parts = [self.iterated(self.const(module, a, env, depth + 1)) for a in args]
            start = self.const(module, node.keywords[0].value, env, depth + 1) if node.keywords and node.keywords[0].arg == "start" else 0
            if not all(isinstance(p, list) for p in parts[:1 if qualified == "enumerate" else None]) or len(node.keywords) > 1 or not isinstance(start, int):
                return OPAQUE
            if qualified == "zip":
                return [list(t) for t in zip(*parts)]
            if qualified == "enumerate" and len(parts) <= 2:
                first = parts[1] if len(parts) == 2 else start
                return [[i, item] for i, item in enumerate(parts[0], first)] if isinstance(first, int) else OPAQUE
            if qualified == "reversed" and len(parts) == 1:
                return parts[0][::-1]
            if qualified == "itertools.compress" and len(parts) == 2 and all(s is not OPAQUE and not isinstance(s, (Named, Record)) for s in parts[1]):
                return list(itertools.compress(parts[0], parts[1]))
            return OPAQUE
        if qualified == "itertools.product" and args and all(k.arg == "repeat" for k in node.keywords):
            # product(A, B) / product(A, repeat=n) of folded sequences: each tuple a list, the
            # last sequence varying fastest (the itertools docs); at most 256 of them
            parts = [self.iterated(self.const(module, a, env, depth + 1)) for a in args]
            repeat = self.const(module, node.keywords[0].value, env, depth + 1) if node.keywords else 1
            if not all(isinstance(p, list) for p in parts) or type(repeat) is not int or not 0 <= repeat <= 4:
                return OPAQUE
            size = 1
            for p in parts * repeat:
                size *= len(p)
            return [list(t) for t in itertools.product(*parts, repeat=repeat)] if size <= 256 else OPAQUE
        if (name == "dict" and qualified == name or qualified == "collections.OrderedDict") and len(args) <= 1 and all(k.arg for k in node.keywords):
            # dict(target=…, hook=…), dict(TABLE, key=…), dict([(k, v), …]), OrderedDict([(k, v), …]):
            # Python's dict() on the folded values (an OrderedDict keeps the same insertion order)
            base = self.const(module, args[0], env, depth + 1) if args else {}
            if self._upstream_value(base) and not node.keywords:
                return base  # a snapshot of an upstream registry holds its keys: a read of it is a read of the registry
            if isinstance(base, list) and all(isinstance(pair, list) and len(pair) == 2 for pair in base):
                base = {_hashable(k): v for k, v in base}
            if not isinstance(base, dict):
                return OPAQUE
            return {**base, **{k.arg: self.const(module, k.value, env, depth + 1) for k in node.keywords}}
        if qualified == "copy.copy" and len(args) == 1 and not node.keywords and self._upstream_value(held := self.const(module, args[0], env, depth + 1)):
            return held  # (a snapshot, as dict(REG))
        if name in ("int", "float") and qualified == name and len(args) == 1 and not node.keywords:
            # int("23"), float(x) of a folded plain value: Python's conversion (a bad one is not folded)
            inner = self.const(module, args[0], env, depth + 1)
            if not isinstance(inner, (str, int, float, bool)):
                return OPAQUE
            try:
                return int(inner) if name == "int" else float(inner)
            except ValueError:
                return OPAQUE
        if name == "bool" and qualified == name and len(args) == 1 and not node.keywords:
            # bool(x) of a folded immutable value: its truth (containers are not read: a run may fill them)
            inner = self.const(module, args[0], env, depth + 1)
            return bool(inner) if inner is None or isinstance(inner, (str, int, float, bool)) else OPAQUE
        if name == "dict.fromkeys" and qualified == name and 1 <= len(args) <= 2 and not node.keywords:
            # dict.fromkeys(KEYS, value): each key to the one value (None without one)
            keys = self.iterated(self.const(module, args[0], env, depth + 1))
            value = self.const(module, args[1], env, depth + 1) if len(args) == 2 else None
            if keys is OPAQUE:  # keys only a run gives
                return _any_keys(value)
            return {_hashable(k): value for k in keys} if isinstance(keys, list) and all(isinstance(k, (str, int, Named)) for k in keys) else OPAQUE
        if name == "next" and qualified == name and 1 <= len(args) <= 2 and not node.keywords:
            # next(x for x in XS if …, default): the first element the generator yields, else the default
            source = args[0].args[0] if isinstance(args[0], ast.Call) and dotted(args[0].func) == "iter" and len(args[0].args) == 1 else args[0]
            items = self.iterated(self.const(module, source, env, depth + 1))
            if isinstance(items, list) and (items or len(args) == 2):
                return items[0] if items else self.const(module, args[1], env, depth + 1)
            return OPAQUE
        if (name == "filter" and qualified == name and len(args) == 2 and not node.keywords and isinstance(args[0], ast.Lambda)
                and len(params := function_params(args[0].args)) == 1 and not args[0].args.defaults):
            # filter(lambda x: test, xs) is [x for x in xs if test] (the builtins docs): folded as that
            held = ast.Name(params[0].name, ast.Load())
            return self._comprehension(module, held, ast.comprehension(target=ast.Name(params[0].name, ast.Store()), iter=args[1],
                                                                       ifs=[args[0].body], is_async=0), env, depth)
        if (name == "filter" and qualified == name and len(args) == 2 and not node.keywords and not isinstance(args[0], ast.Constant)
                and isinstance(predicate := self.const(module, args[0], env, depth + 1), Named) and not is_upstream(predicate.path)):
            # filter(pred, xs) of a plugin function (`Component.enabled` over records): the items it
            # is not decided false for (one a run may keep stays: what a loop over it may meet)
            items = self.iterated(self.const(module, args[1], env, depth + 1))
            if not isinstance(items, list):
                return OPAQUE
            test = ast.Call(func=ast.Name("<predicate>", ast.Load()), args=[ast.Name("<item>", ast.Load())], keywords=[])
            kept = [(item, self.const(module, test, {**env, "<predicate>": predicate, "<item>": item}, depth + 1)) for item in items]
            return [item for item, verdict in kept if not (verdict is None or isinstance(verdict, (bool, int, str)) and not verdict)]
        if name == "filter" and qualified == name and len(args) == 2 and not node.keywords and isinstance(args[0], ast.Constant) and args[0].value is None:
            # filter(None, xs): the true elements (the builtins docs)
            items = self.iterated(self.const(module, args[1], env, depth + 1))
            return [v for v in items if isinstance(v, (str, int, float, bool)) and v] if isinstance(items, list) and all(
                isinstance(v, (str, int, float, bool)) or v is None for v in items) else OPAQUE
        if qualified == "collections.ChainMap" and not node.keywords:
            # lookups search the maps in order (collections docs): the first one holding a key wins
            maps = [self.const(module, a, env, depth + 1) for a in args]
            if any(isinstance(m, MayHold) for m in maps):
                return self._chained(module, maps, args)
            return {k: v for m in reversed(maps) for k, v in m.items()} if all(isinstance(m, dict) for m in maps) else OPAQUE
        if qualified == "collections.deque" and len(args) <= 1 and not node.keywords:
            # deque(items): a queue holding them in order, as a list does for a loop
            items = self.iterated(self.const(module, args[0], env, depth + 1)) if args else []
            return list(items) if isinstance(items, list) else OPAQUE
        if qualified == "collections.defaultdict" and len(args) <= 1 and not node.keywords:
            # an empty registry whose missing keys its edits make (`X[k].append(v)`: _edited)
            return {}
        if qualified in NAMESPACES and not args and all(k.arg for k in node.keywords):
            # SimpleNamespace(draft="pkg.mod.f", …): an object whose attributes are its keywords
            return Record(qualified, tuple((k.arg, self.const(module, k.value, env, depth + 1)) for k in node.keywords))
        if qualified == "functools.partial" and args and not isinstance(args[0], ast.Starred):
            func = self.qualify(module, dotted(args[0]), env) if dotted(args[0]) else None
            if func is None and isinstance(held := self.const(module, args[0], env, depth + 1), Named):
                func = held.path  # `partial(fn, …)` of a parameter handed `envs.X.set`
            presets, keywords, spread_all = [], [], True
            for a in args[1:]:  # `partial(fn, *args, **kwargs)`: the folded sequence's items, the dict's entries
                held = self.const(module, a.value if isinstance(a, ast.Starred) else a, env, depth + 1)
                spread_all &= not isinstance(a, ast.Starred) or isinstance(held, list)
                presets += (held if isinstance(held, list) else []) if isinstance(a, ast.Starred) else [held]
            for k in node.keywords:
                held = self.const(module, k.value, env, depth + 1)
                spread_all &= bool(k.arg) or isinstance(held, dict)
                keywords += [(k.arg, held)] if k.arg else list(held.items()) if isinstance(held, dict) else []
            if func is not None and spread_all and all(isinstance(k, str) for k, _ in keywords):
                return Partial(func, tuple(presets), tuple(keywords))  # a lazy call: nothing runs until the partial is called
            return OPAQUE
        if qualified in ("itertools.chain", "itertools.chain.from_iterable") and not node.keywords:
            # the folded sequences one after the other (a dict gives its keys)
            parts = [self.const(module, a, env, depth + 1) for a in args]
            if qualified.endswith("from_iterable"):
                parts = parts[0] if len(parts) == 1 and isinstance(parts[0], list) else [OPAQUE]
            parts = [list(p) if isinstance(p, dict) else p for p in parts]
            return [item for p in parts for item in p] if all(isinstance(p, list) for p in parts) else OPAQUE
        if qualified == "string.Template" and len(args) == 1 and isinstance(text := self.const(module, args[0], env, depth + 1), str):
            return TemplateText(text)
        if qualified in _PATH_FUNCTIONS | _ABSOLUTE_PATH_FUNCTIONS and args and not node.keywords:
            # os.path.splitext("m.py")[0] and the like: string functions, folded by running them
            # (a path object is read as its text, os.fspath; they return text)
            values = [str(v) if isinstance(v, PurePosixPath) else v for v in (self.const(module, a, env, depth + 1) for a in args)]
            if qualified in _ABSOLUTE_PATH_FUNCTIONS:
                return posixpath.normpath(values[0]) if len(values) == 1 and isinstance(values[0], str) and values[0].startswith(str(_SOURCE_ROOT)) else OPAQUE
            if all(isinstance(v, str) for v in values):
                result = getattr(posixpath, qualified.rpartition(".")[2])(*values)
                return list(result) if isinstance(result, tuple) else result
            return OPAQUE
        if name == "getattr" and qualified == name and len(args) == 3 and isinstance(args[2], ast.Constant) and args[2].value is None:
            # getattr(mod, "sub", None): the upstream attribute where it is there, else None (as
            # sys.modules.get), so `is not None` tests that it is there
            owner, attr = self.const(module, args[0], env, depth + 1), self.const(module, args[1], env, depth + 1)
            if isinstance(owner, Named) and is_upstream(owner.path) and isinstance(attr, str) and attr.isidentifier():
                self.none_fallbacks[(module, f"{owner.path}.{attr}")] = HasAttr(owner.path, attr)
                return Named(f"{owner.path}.{attr}")
        if name == "getattr" and qualified == name and len(args) == 3 and not node.keywords and isinstance(
                held := self.const(module, args[0], env, depth + 1), Named) and isinstance(attr := self.const(module, args[1], env, depth + 1), str):
            marked = self._function_attribute(held.path, attr, depth)
            if marked is not None:  # `getattr(fn, "__marker__", None)` of a plugin function its decorators mark
                return self.const(module, args[2], env, depth + 1) if marked is _FELL_THROUGH else marked
        if name == "getattr" and qualified == name and len(args) == 2 and not node.keywords:
            # getattr(obj, "attr") of an upstream object: that attribute (AttributeError where it
            # is not); of a folded record: its field (or class constant)
            owner, attr = self.const(module, args[0], env, depth + 1), self.const(module, args[1], env, depth + 1)
            if isinstance(owner, Named) and attr in _NAME_ATTRIBUTES and (named := self._name_attribute(owner.path, attr)) is not None:
                return named  # getattr(cls, "__name__"), as cls.__name__
            if isinstance(owner, Named) and is_upstream(owner.path) and isinstance(attr, str) and attr.isidentifier():
                return Named(f"{owner.path}.{attr}")
            if isinstance(owner, Record) and isinstance(attr, str):
                return self._record_attribute(owner, attr, depth)
            if isinstance(owner, Named) and isinstance(attr, str) and attr.isidentifier():
                # of a plugin module or class: what `owner.attr` holds (a module's table, a class constant)
                read = ast.copy_location(ast.Attribute(value=ast.Name("<getattr owner>", ast.Load()), attr=attr, ctx=ast.Load()), node)
                return self.const(module, read, {**env, "<getattr owner>": owner}, depth + 1)
        if qualified == "dataclasses.fields" and len(args) == 1 and isinstance(held := self.const(module, args[0], env, depth + 1), (Record, Named)):
            # the fields of a plugin dataclass (its instance or the class), in order, each with its
            # `.name` and `.metadata` (`field(metadata={…})`, else empty: the dataclasses docs)
            found = self._plugin_definition(held.cls if isinstance(held, Record) else held.path) if not is_upstream(
                held.cls if isinstance(held, Record) else held.path) else None
            declared = dataclass_fields(found[1]) if found is not None and isinstance(found[1], ast.ClassDef) and found[1].decorator_list else None
            if declared is not None:
                def metadata(value: ast.expr | None):
                    given = next((k.value for k in value.keywords if k.arg == "metadata"), None) if isinstance(value, ast.Call) and (
                        dotted(value.func) or "").rsplit(".", 1)[-1] == "field" else None
                    return self.const(found[0], given, {}, depth + 1) if given is not None else {}
                return [Record("dataclasses.Field", (("name", field), ("metadata", metadata(value)))) for field, value in declared]
        if name in ("hasattr", "getattr", "callable", "isinstance") or qualified.endswith("find_spec"):
            cond = self.condition(module, node, env, depth + 1)
            return OPAQUE if isinstance(cond, Undecided) else cond.value if isinstance(cond, Const) else Condition(cond)
        if isinstance(node.func, ast.Attribute):
            owner = self.const(module, node.func.value, env, depth + 1)
            if node.func.attr == "copy" and not args and not node.keywords and self._upstream_value(owner):
                return owner  # `REG.copy()` of an upstream registry: a snapshot, as dict(REG)
            if isinstance(owner, Record) and isinstance(closure := owner.get(node.func.attr), Closure):
                return self._closure_called(closure, node, module, env, depth)  # `hook.enabled()` of a field holding a lambda
            values = [self.const(module, arg, env, depth + 1) for arg in args]
            if isinstance(owner, MemberText) and self._record_method(Record(self._member_class(owner), ()), node.func.attr, property_=False) is not None:
                owner = Named(owner.member)  # `which.split()` of the enum's own split: the enum's method (below), not str's
            if owner == RunningVersion(parsed=False) and node.func.attr in _STRING_METHODS and self._release_text():
                owner = self._release_text()  # `version("sglang").split(".")`: the release's own version string, taken apart
            if isinstance(owner, str) and node.func.attr == "join" and len(values) == 1 and isinstance(values[0], list):
                if all(isinstance(part, str) for part in values[0]):
                    return owner.join(values[0])
            if isinstance(owner, str) and node.func.attr in _STRING_METHODS and all(isinstance(a, (str, int)) for a in values) and not node.keywords:
                # "pkg.mod.f".rpartition("."), name.split(".")[-1], s.removesuffix(".py"): run on the folded values
                try:
                    result = getattr(owner, node.func.attr)(*values)
                except (TypeError, ValueError):
                    return OPAQUE
                return list(result) if isinstance(result, tuple) else result
            if isinstance(owner, TemplateText) and node.func.attr in ("substitute", "safe_substitute") and len(values) <= 1:
                # Template(t).substitute({…}, name=…): string.Template on the folded values
                mapping = values[0] if values else {}
                given = {k.arg: self.const(module, k.value, env, depth + 1) for k in node.keywords if k.arg}
                if not isinstance(mapping, dict) or any(k.arg is None for k in node.keywords):
                    return OPAQUE
                mapping = {**mapping, **given}
                if not all(isinstance(v, (str, int)) for v in mapping.values()):
                    return OPAQUE
                try:
                    return getattr(string.Template(owner.text), node.func.attr)(mapping)
                except (KeyError, ValueError):
                    return OPAQUE
            if isinstance(owner, str) and node.func.attr == "format_map" and len(values) == 1 and isinstance(values[0], dict):
                if all(isinstance(v, (str, int)) for v in values[0].values()):
                    try:
                        return owner.format_map(values[0])
                    except (KeyError, ValueError):
                        return OPAQUE
            if isinstance(owner, str) and node.func.attr == "format" and all(isinstance(a, (str, int, Named, Record)) for a in values):
                named = {}
                for k in node.keywords:  # `name=v` and `**mapping` of a folded dict, in order
                    given = self.const(module, k.value, env, depth + 1)
                    if k.arg is None and not (isinstance(given, dict) and all(isinstance(key, str) for key in given)):
                        return OPAQUE
                    named.update(given if k.arg is None else {k.arg: given})
                if not all(isinstance(v, (str, int, Named, Record)) for v in named.values()):
                    return OPAQUE
                # "{0.__module__}.{0.__qualname__}".format(Cls): a class, function or module
                # formats only through its name attributes (its own str is not a path); a
                # record through its fields (`{layout.root}`)
                as_names = {id(v): _NameFields(v.path, self._name_attribute) if isinstance(v, Named) else _RecordFields(v)
                            for v in (*values, *named.values()) if isinstance(v, (Named, Record))}
                try:  # "{0}.{name}".format(p, name=n)
                    return owner.format(*(as_names.get(id(v), v) for v in values), **{k: as_names.get(id(v), v) for k, v in named.items()})
                except (IndexError, KeyError, ValueError, AttributeError, TypeError):
                    return OPAQUE
            if isinstance(owner, dict) and node.func.attr == "get" and 1 <= len(values) <= 2 and not node.keywords and values[0] is not OPAQUE:
                key = _hashable(self.decided(values[0]))  # TABLE.get(k, d) of a folded table and key: the entry, else d (None) when nothing adds to it
                if _unknown_in(key):
                    return OPAQUE  # `KERNELS.get((x.dtype, flag))`: a key with a part only a run gives may be any entry
                if key in owner:
                    return owner[key]
                return OPAQUE if self._may_be_filled(node.func.value) else values[1] if len(values) == 2 else None
            if isinstance(owner, MayHold) and node.func.attr == "get" and len(values) == 1 and not node.keywords:
                return owner.lookup(values[0])
            if isinstance(owner, ModuleNamespace) and node.func.attr == "get" and 1 <= len(values) <= 2 and not node.keywords:
                return self._namespace_read(owner, values[0], values[1] if len(values) == 2 else None, depth)
            if isinstance(owner, dict) and node.func.attr == "items" and not values:
                return [list(item) for item in owner.items()]
            if isinstance(owner, dict) and node.func.attr in ("keys", "values") and not values:
                return list(getattr(owner, node.func.attr)())
            if isinstance(owner, RunningVersion) and node.func.attr == "startswith":
                return OPAQUE
            if isinstance(owner, Record) and node.func.attr == "_asdict" and not values and not node.keywords and owner.fields:
                return dict(owner.fields)  # a NamedTuple's fields by name (the collections docs)
            if isinstance(owner, Record) and node.func.attr == "_replace" and not values:
                # a NamedTuple's copy with fields changed, as dataclasses.replace
                return self._replaced(owner, {k.arg: self.const(module, k.value, env, depth + 1) for k in node.keywords if k.arg}, node)
            if (owner is OPAQUE and isinstance(node.func.value, ast.Name) and env.get("<self>") == node.func.value.id and "<class>" in env
                    and (method := self._record_method(Record(env["<class>"], ()), node.func.attr, property_=False)) is not None
                    and not any(isinstance(n, ast.Name) and n.id == method[2] for n in walk(method[3]) if method[2])):
                owner = Record(env["<class>"], ())  # `self.accessor()` of a method that does not read its instance
            member_of = self._member_class(owner)  # `kernel.registry_key()` of a plugin enum member: the enum's method
            receiver_record = owner if isinstance(owner, Record) else Record(member_of, ()) if member_of else None
            if receiver_record is not None and (method := self._record_method(receiver_record, node.func.attr, property_=False)) is not None:
                # `spec.target()` of a one-return method: its expression, the record as the receiver
                home, returned, receiver, definition = method
                if any(k.arg is None for k in node.keywords) or definition.args.vararg:
                    return OPAQUE
                local = self._called_with(home, definition, [owner, *values] if receiver else values, node.keywords, module, env, depth)
                if returned is None and any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in walk(definition)):
                    # `for target, hook in self._hooks():` of a generator method: what it yields, as a list
                    body = [s for s in definition.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
                    return self._yielded(home, body, local, depth + 1, f"{receiver_record.cls}.{node.func.attr}") if depth < 10 else OPAQUE
                if returned is None:  # `module_path, attr = self._split(key)`: the body run on the record
                    held = self._returned(home, definition.body, dict(local), depth + 1) if depth < 10 else OPAQUE
                    return OPAQUE if held is _FELL_THROUGH else held
                return self.const(home, returned, local, depth + 1)
        direct = isinstance(node.func, (ast.Name, ast.Attribute))  # (`f(a)(b)` calls what f returns, not f)
        if direct and len(args) == 1 and not node.keywords and not isinstance(args[0], ast.Starred) and qualified and self.enum_kind(qualified) and (
                member := self._enum_lookup(qualified, value=self.const(module, args[0], env, depth + 1))) is not None:
            return member  # `Upstream("pkg.mod:f")`: the member with that value (the enum docs, "Programmatic access")
        if qualified and direct and self._typed_dict(qualified) and all(k.arg for k in node.keywords) and len(args) <= 1:
            # `Spec(module=m, attr=a)` of a plugin TypedDict: a plain dict of what it is given (PEP 589,
            # the typing docs), as dict() builds it
            given = self.const(module, args[0], env, depth + 1) if args else {}
            return {**given, **{k.arg: self.const(module, k.value, env, depth + 1) for k in node.keywords}} if isinstance(given, dict) else OPAQUE
        record = self._record(module, qualified, node, env, depth) if qualified and direct else None
        if record is not None:
            return record
        # a plugin helper whose body is one `return <expression>` (e.g. a version check)
        function, bound = (self._plugin_function(qualified), []) if qualified and direct else (None, [])
        if function is None and qualified and direct and (method := self._class_function(qualified)) is not None:
            *function, bound = method
        if function is not None and depth < 10:
            fmodule, fnode = function
            body = [s for s in fnode.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
            values = list(bound)
            for a in args:  # `f(*PARTS)` of a folded list passes its elements
                spread = self.const(module, a.value, env, depth + 1) if isinstance(a, ast.Starred) else OPAQUE
                values += spread if isinstance(spread, list) else [self.const(module, a, env, depth + 1)]
            if (dispatched := self._dispatched(fmodule, fnode, values[0] if values else OPAQUE)) is not None:
                fnode = dispatched  # a functools.singledispatch function: the implementation for that argument's type
                body = [s for s in fnode.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
            local = self._called_with(fmodule, fnode, values, node.keywords, module, env, depth)
            if len(body) == 1 and isinstance(body[0], ast.Return) and body[0].value is not None:
                return self.const(fmodule, body[0].value, local, depth + 1)
            if any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in walk(fnode)) and not isinstance(fnode, ast.AsyncFunctionDef):
                return self._yielded(fmodule, body, local, depth + 1, qualified)  # a generator: the values it yields, as a list
            returned = self._returned(fmodule, body, dict(local), depth + 1, owner=qualified)
            if isinstance(returned, Named) and isinstance(fallback := next((self.none_fallbacks[key] for key in (
                    (fmodule, returned.path), (fmodule, returned.path.rpartition(".")[0])) if key in self.none_fallbacks), None), ImportsResolve):
                # (an attribute of a caught module import `tu.f` too): the caller's `is None` test of it
                self.none_fallbacks.setdefault((module, returned.path), fallback)
            return returned if returned is not OPAQUE else self._version_helper(fmodule, fnode, local, depth + 1)
        return OPAQUE

    def _dispatched(self, module: str, function: ast.FunctionDef | ast.AsyncFunctionDef, value) -> ast.FunctionDef | None:
        """The implementation a `functools.singledispatch` function `function` of `module` runs for
        a first argument folded to `value`: the module-level def registered for its type
        (`@f.register` with the first parameter annotated, or `@f.register(T)`), for a str, int,
        float, bool, list/tuple or dict value (a builtin's exact type, as dispatch finds it first
        in the value's MRO); None for another function, value or type, or no registration."""
        if not any((dotted(d) or "").rsplit(".", 1)[-1] == "singledispatch" for d in function.decorator_list):
            return None
        kinds = {str: ("str",), bool: ("bool", "int"), int: ("int",), float: ("float",), list: ("list", "tuple"), dict: ("dict",)}
        wanted = kinds.get(type(value))
        tree = self.tree(module)
        for stmt in tree.body if tree is not None and wanted else ():
            for decorator in getattr(stmt, "decorator_list", []) if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) else []:
                call = decorator if isinstance(decorator, ast.Call) else None
                if dotted(call.func if call else decorator) != f"{function.name}.register":
                    continue
                params = [*stmt.args.posonlyargs, *stmt.args.args]
                named = call.args[0] if call and call.args else params[0].annotation if params else None
                if named is not None and (dotted(named) or "").rsplit(".", 1)[-1] in wanted:
                    return stmt
        return None

    def _sorted(self, module: str, items: list, keywords: list[ast.keyword], env: dict, depth: int):
        """`sorted(items, key=…, reverse=…)` of folded items: the key a folded dict's `.get`
        (`key=ORDER.get`), a builtin of one argument (`len`, `str`) or a lambda whose body folds
        for each item; OPAQUE when the key, the order or a comparison does not fold."""
        options = {k.arg: k.value for k in keywords}
        reverse = self.const(module, options.pop("reverse"), env, depth + 1) if "reverse" in options else False
        key_node = options.pop("key", None)
        if options or not isinstance(reverse, bool):
            return OPAQUE
        if key_node is None:
            keys = items
        elif isinstance(key_node, ast.Lambda) and len(function_params(key_node.args)) == 1:
            param = function_params(key_node.args)[0].name
            keys = [self.const(module, key_node.body, {**env, param: item}, depth + 1) for item in items]
        elif isinstance(key_node, ast.Attribute) and key_node.attr == "get" and isinstance(table := self.const(module, key_node.value, env, depth + 1), dict):
            keys = [table.get(_hashable(item)) for item in items]
        elif isinstance(key_node, ast.Name) and key_node.id in ("len", "str") and self.qualify(module, key_node.id, env) is None:
            keys = [len(item) if key_node.id == "len" else str(item) for item in items] if all(isinstance(i, (str, list)) for i in items) else [OPAQUE]
        elif isinstance(key_node, ast.Call) and (getter := self._getter_body(module, key_node, env, depth)) is not None:
            keys = [self.const(module, getter, {**env, "<item>": item}, depth + 1) for item in items]  # key=attrgetter("priority")
        elif isinstance(key_node, (ast.Name, ast.Attribute)) and self._plugin_function(self.qualify(module, dotted(key_node), env) or "") is not None:
            call = ast.Call(func=key_node, args=[ast.Name("<item>", ast.Load())], keywords=[])  # key=_rank, a plugin function
            keys = [self.const(module, call, {**env, "<item>": item}, depth + 1) for item in items]
        else:
            return OPAQUE
        if any(k is OPAQUE or isinstance(k, (Named, Record, Instance, Partial)) for k in keys):
            return OPAQUE
        try:
            return [item for _, item in sorted(zip(keys, items, strict=True), key=lambda pair: pair[0], reverse=reverse)]
        except TypeError:
            return OPAQUE

    def _getter_body(self, module: str, node: ast.Call, env: dict, depth: int) -> ast.expr | None:
        """`operator.attrgetter("a.b", "c")` / `itemgetter(k, …)` of folded names as the expression it
        evaluates on the name `<item>` (`<item>.a.b`, a tuple of several: the operator docs); None
        for any other call."""
        getter = self.qualify(module, dotted(node.func) or "", env)
        names = [self.const(module, a, env, depth + 1) for a in node.args]
        if getter not in ("operator.attrgetter", "operator.itemgetter") or not names or node.keywords:
            return None
        parts: list[ast.expr] = []
        for name in names:
            if getter == "operator.itemgetter" and isinstance(name, (str, int)):
                parts.append(ast.Subscript(ast.Name("<item>", ast.Load()), ast.Constant(name), ast.Load()))
            elif isinstance(name, str) and name:
                part: ast.expr = ast.Name("<item>", ast.Load())
                for attr in name.split("."):
                    part = ast.Attribute(part, attr, ast.Load())
                parts.append(part)
            else:
                return None
        return parts[0] if len(parts) == 1 else ast.Tuple(parts, ast.Load())

    def _yielded(self, module: str, body: list[ast.stmt], env: dict, depth: int, owner: str = "", top: bool = True):
        """What a generator body yields, in order, when it is only `yield <expr>` statements,
        assignments to names, calls, `for` loops over folded constants and `if`s whose tests fold
        (with `continue`) or test the generator's own run-time data (both branches: what it may
        yield); OPAQUE for anything else (a value it cannot fold, a `return`, a `while`). A def
        of the plugin generator `owner` binds its name, as in _returned (`<owner>.<name>`, or
        `<owner>.<name>@<line>` inside a loop or branch), so `yield target, _hook` yields it."""
        values: list = []
        env = dict(env)
        for stmt in body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and owner and not stmt.decorator_list:
                env[stmt.name] = Named(f"{owner}.{stmt.name}" if top else f"{owner}.{stmt.name}@{stmt.lineno}")
            elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], (ast.Name, ast.Tuple)):
                env.update(bind(stmt.targets[0], self.const(module, stmt.value, env, depth + 1)))  # `a, b = line.split()`
            elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Yield) and stmt.value.value is not None:
                values.append(self.const(module, stmt.value.value, env, depth + 1))
            elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.YieldFrom):
                inner = self.const(module, stmt.value.value, env, depth + 1)
                if not isinstance(inner, list):
                    return OPAQUE
                values.extend(inner)
            elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
                self._past_call(module, stmt, env, depth)
            elif isinstance(stmt, ast.For) and not stmt.orelse:
                items = self.const(module, stmt.iter, env, depth + 1)
                items = self.iterated(items)
                if not isinstance(items, list):
                    return OPAQUE
                for item in items:
                    inner = self._yielded(module, stmt.body, {**env, **bind(stmt.target, item)}, depth + 1, owner, False)
                    if inner is OPAQUE:
                        return OPAQUE
                    values.extend(inner)
            elif isinstance(stmt, ast.If):
                test = self.condition(module, stmt.test, env, depth + 1, local=frozenset(env))
                if isinstance(test, Runtime):
                    # a test of the generator's own data (`if key in disabled: continue`): either
                    # branch may run, so what it may yield is both branches' and then the rest's
                    for branch in (stmt.body, stmt.orelse):
                        inner = self._yielded(module, branch[:-1] if branch and isinstance(branch[-1], ast.Continue) else branch, env, depth + 1, owner, False)
                        if inner is OPAQUE:
                            return OPAQUE
                        values.extend(inner)
                    continue
                if not isinstance(test, Const):
                    return OPAQUE
                branch = stmt.body if test.value else stmt.orelse
                if branch and isinstance(branch[-1], ast.Continue):  # `if b in SKIP: continue` ends this element
                    inner = self._yielded(module, branch[:-1], env, depth + 1, owner, False)
                    return OPAQUE if inner is OPAQUE else [*values, *inner]
                inner = self._yielded(module, branch, env, depth + 1, owner, False)
                if inner is OPAQUE:
                    return OPAQUE
                values.extend(inner)
            elif not isinstance(stmt, ast.Pass):
                return OPAQUE
        return OPAQUE if any(value is OPAQUE for value in values) else values

    def _record(self, module: str, path: str, node: ast.Call, env: dict, depth: int) -> Record | None:
        """`C(a, b, name=c)` of a plugin class written `@dataclass class C: x: str; y: str = ""`
        (no __init__ of its own, no base) or `class C(NamedTuple)`: a Record of its fields as the generated __init__
        binds them (dataclasses: fields in order, defaults filled); of a plain class whose
        `__init__` only stores attributes (see _init_record). None for anything else."""
        found = self._plugin_definition(path) if not is_upstream(path) else None
        cls = found[1] if found is not None else None
        if isinstance(cls, ast.ClassDef) and any(isinstance(n, ast.FunctionDef) and n.name == "__init__" for n in cls.body):
            return self._init_record(module, path, found[0], cls, node, env, depth)
        if isinstance(cls, ast.ClassDef) and (inherited := self._inherited_init(found[0], cls)) is not None:
            # `class Derived(Patch): pass` called: Patch's __init__ runs on a Derived (no
            # method of the chain rebinding what it stores)
            home, base, chain = inherited
            record = self._init_record(module, path, home, base, node, env, depth)
            stored = {field for field, _ in record.fields} if record is not None else set()
            if record is None or any(isinstance(n, ast.Attribute) and n.attr in stored and isinstance(n.ctx, (ast.Store, ast.Del))
                                     or isinstance(n, ast.Call) and dotted(n.func) == "setattr" for c in chain for n in walk(c)):
                return None
            return record
        if isinstance(cls, ast.ClassDef) and not (node.args or node.keywords) and self._sets_nothing(found[0], cls):
            # `C()` of a plain class: object.__init__ sets nothing; of a dict or UserDict subclass: an
            # empty mapping, whose lookups its `__missing__` answers (_lookup_hook)
            return Record(path, (), _site(module, node))
        # a dataclass with no base, or a NamedTuple (its one base, no decorator)
        fields = dataclass_fields(cls) if isinstance(cls, ast.ClassDef) and (not cls.bases or not cls.decorator_list) else None
        if fields is None or any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
            return None
        # `x: str = field(init=False)` is no parameter of the generated __init__ (dataclasses docs)
        taken = [f for f, default in fields if not _not_in_init(default)]
        if len(node.args) > len(taken):
            return None
        given = {**dict(zip(taken, node.args)), **{k.arg: k.value for k in node.keywords}}
        values = []
        for name, default in fields:
            expression = given.get(name, _field_default(default))
            # an argument folds where the call is; a default where the class is written
            values.append((name, OPAQUE if expression is None else self.const(module, expression, env, depth + 1) if name in given
                           else self.const(found[0], expression, {}, depth + 1)))
        record = Record(path, tuple(values), _site(module, node))
        post = next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__post_init__"), None)
        return self._post_init(found[0], post, record, depth) if post is not None else record

    def _post_init(self, home: str, method: ast.FunctionDef, record: Record, depth: int) -> Record | None:
        """`record` as the dataclass's `__post_init__` leaves it when its body only sets fields
        from folded values: `self.x = v`, `object.__setattr__(self, "x", v)` (a frozen dataclass's
        way, the dataclasses docs); a docstring aside. None for any other statement."""
        params = function_params(method.args)
        if len(params) != 1:
            return None
        receiver = params[0].name
        for stmt in method.body:
            if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
                continue
            call = stmt.value if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) else None
            if (call is not None and dotted(call.func) == "object.__setattr__" and len(call.args) == 3 and not call.keywords
                    and isinstance(call.args[0], ast.Name) and call.args[0].id == receiver and isinstance(call.args[1], ast.Constant)
                    and isinstance(call.args[1].value, str)):
                name, value = call.args[1].value, call.args[2]
            elif (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Attribute)
                  and isinstance(stmt.targets[0].value, ast.Name) and stmt.targets[0].value.id == receiver):
                name, value = stmt.targets[0].attr, stmt.value
            elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Tuple):
                # `self.module, _, self.attr = self.path.rpartition(".")`: each field its item
                items = self.const(home, stmt.value, {receiver: record}, depth + 1)
                targets = stmt.targets[0].elts
                if not isinstance(items, list) or len(items) != len(targets) or not all(
                        isinstance(t, ast.Name) or isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == receiver for t in targets):
                    return None
                for target, item in zip(targets, items):
                    if isinstance(target, ast.Attribute):
                        record = replace(record, fields=(*((f, v) for f, v in record.fields if f != target.attr), (target.attr, item)))
                continue
            else:
                return None
            folded = self.const(home, value, {receiver: record}, depth + 1)
            record = replace(record, fields=(*((f, v) for f, v in record.fields if f != name), (name, folded)))
        return record

    def _record_attribute(self, record: Record, attr: str, depth: int):
        """`attr` read on a folded object: its field, else its class's constant (`self.TARGET`)
        unless a method sets it on instances."""
        if any(field == attr for field, _ in record.fields) or self._set_on_instances(record.cls, attr):
            held = record.get(attr)
            found = self._plugin_definition(record.cls) if isinstance(held, (list, dict)) else None
            # (a list or dict the object keeps: with what module-level calls of its methods add, _fill_sites)
            return self.filled(found[0], f"{record.cls[len(found[0]) + 1:]}.{attr}", held, depth + 1, record.site) if found else held
        method = self._record_method(record, attr, property_=True)
        if method is not None:  # `spec.target` of `@property def target(self): return f"{self.owner}.{self.attr}"`
            return self.const(method[0], method[1], {method[2]: record}, depth + 1)
        return self._bound_to(self.class_constant(record.cls, attr, depth + 1), record)

    def _bound_to(self, held, instance):
        """`held`, a class attribute, as read on `instance`: a plain method of a plugin class is
        bound to it, partial(method, instance) (Python's data model); a decorated one (a
        property, a staticmethod) is what its decorator makes, anything else itself."""
        found = self._plugin_definition(held.path) if isinstance(held, Named) and not is_upstream(held.path) else None
        if (found is not None and isinstance(found[1], (ast.FunctionDef, ast.AsyncFunctionDef)) and not found[1].decorator_list
                and isinstance((self._plugin_definition(held.path.rpartition(".")[0]) or (None, None))[1], ast.ClassDef)):
            return Partial(held.path, (instance,), ())
        return held

    def _closure_called(self, closure: Closure, node: ast.Call, module: str, env: dict, depth: int):
        """What calling a Closure with the call `node`'s arguments (folded in `module`, `env`)
        folds to: its body with the parameters bound; OPAQUE for a starred argument."""
        if depth > 10 or any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
            return OPAQUE
        values = [self.const(module, a, env, depth + 1) for a in node.args]
        local = self._called_with(closure.module, closure.node, values, node.keywords, module, env, depth)
        return self.const(closure.module, closure.node.body, {**dict(closure.captured), **local}, depth + 1)

    def _called_with(self, home: str, function: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda, values: list, keywords: list[ast.keyword],
                     module: str, env: dict, depth: int) -> dict:
        """{parameter: folded value} of the plugin function `function` (defined in `home`)
        called with the folded positional `values` and `keywords` (folded in `module`, `env`):
        positionals, keywords, then the defaults (folded in `home`); `*args` the positionals left
        over (a list), `**kwargs` the keywords no parameter names (a dict); OPAQUE for the rest."""
        params = function_params(function.args)
        positional = [p for p in params if p.kind in ("posonly", "pos")]
        local = {p.name: v for p, v in zip(positional, values)}
        given = {k.arg: self.const(module, k.value, env, depth + 1) for k in keywords if k.arg}
        named = {p.name for p in params if p.kind in ("pos", "kwonly")}
        local.update({name: value for name, value in given.items() if name in named})
        if function.args.vararg:
            local[function.args.vararg.arg] = list(values[len(positional):])
        if function.args.kwarg and all(k.arg for k in keywords):
            local[function.args.kwarg.arg] = {name: value for name, value in given.items() if name not in named}
        positional = [*function.args.posonlyargs, *function.args.args]  # (the ast args, for their defaults)
        defaults = [*zip(positional[len(positional) - len(function.args.defaults):], function.args.defaults),
                    *((p, d) for p, d in zip(function.args.kwonlyargs, function.args.kw_defaults) if d is not None)]
        for p, default in defaults:
            if p.arg not in local:
                local[p.arg] = self.const(home, default, {}, depth + 1)
        return {**{p.name: OPAQUE for p in params}, **local}

    def _record_method(self, record: Record, name: str, property_: bool) -> tuple[str, ast.expr, str, ast.FunctionDef] | None:
        """(module, returned expression, receiver name, the def) of the method `name`
        of a folded record's plugin class (a @property / functools.cached_property when
        `property_`, else a plain or static method) whose body is one `return <expression>`; a
        method's longer body gives no expression (None: the caller runs the body); None else.
        The expression folds with the receiver (None for a static method) bound to the record."""
        found = self._plugin_definition(record.cls) if not is_upstream(record.cls) else None
        if found is None or not isinstance(found[1], ast.ClassDef):
            return None
        method = next((n for n in found[1].body if isinstance(n, ast.FunctionDef) and n.name == name), None)
        if method is None:
            return None
        decorators = [dotted(d) for d in method.decorator_list]
        static = not property_ and decorators == ["staticmethod"]  # `self._target(m, n)`: no receiver bound
        if decorators != (["property"] if property_ else []) and not static and not (
                property_ and decorators and decorators[0].rpartition(".")[2] == "cached_property" and len(decorators) == 1):
            return None
        params = [None, *function_params(method.args)] if static else list(function_params(method.args))
        receiver = params[0].name if params and params[0] is not None else None
        body = [s for s in method.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
        if params and not property_ and not (len(body) == 1 and isinstance(body[0], ast.Return)):
            return found[0], None, receiver, method  # a longer body: what it returns, run (_returned)
        if not params or len(body) != 1 or not isinstance(body[0], ast.Return) or body[0].value is None:
            return None
        return found[0], body[0].value, receiver, method

    def _inherited_init(self, module: str, cls: ast.ClassDef) -> tuple[str, ast.ClassDef, list[ast.ClassDef]] | None:
        """(home, class, the classes passed on the way) of the `__init__` a plugin class that
        writes none runs: its one plugin base's, through further such classes (Python's MRO on
        single inheritance); None where a class of the chain has a decorator, keywords, a
        `__new__` or more than one base, or a base is not the plugin's."""
        chain, home = [], module
        while len(chain) < 8:
            if (cls.keywords or cls.decorator_list or len(cls.bases) != 1
                    or any(isinstance(n, ast.FunctionDef) and n.name == "__new__" for n in cls.body)):
                return None
            chain.append(cls)
            path = self.qualify(home, dotted(cls.bases[0]) or "", {}) or dotted(cls.bases[0])
            found = self._plugin_definition(path) if path and not is_upstream(path) else None
            if found is None or not isinstance(found[1], ast.ClassDef):
                return None
            home, cls = found
            if any(isinstance(n, ast.FunctionDef) and n.name == "__init__" for n in cls.body):
                return home, cls, chain
        return None

    def _sets_nothing(self, module: str, cls: ast.ClassDef, depth: int = 0) -> bool:
        """Whether making the plugin class `cls` with no arguments sets nothing on the object: no
        decorator, keyword or `__init__` in it or its bases, each base a plugin class such as
        this, dict or UserDict (then empty)."""
        if cls.keywords or cls.decorator_list or depth > 8 or any(isinstance(n, ast.FunctionDef) and n.name in ("__init__", "__new__") for n in cls.body):
            return False
        for base in cls.bases:
            path = self.qualify(module, dotted(base) or "", {}) or dotted(base)
            if path in _MAPPING_BASES:
                continue
            found = self._plugin_definition(path) if path and not is_upstream(path) else None
            if found is None or not isinstance(found[1], ast.ClassDef) or not self._sets_nothing(found[0], found[1], depth + 1):
                return False
        return True

    def _lookup_hook(self, path: str) -> str | None:
        """The method a subscript of an instance of the plugin class `path` runs (the data model):
        its own `__getitem__`, or `__missing__` of a dict / UserDict subclass (`_record` makes
        those empty: every key is missing until the method stores it); None for neither."""
        found = self._plugin_definition(path) if not is_upstream(path) else None
        if found is None or not isinstance(found[1], ast.ClassDef):
            return None
        defined = {n.name for n in found[1].body if isinstance(n, ast.FunctionDef)}
        if "__getitem__" in defined:
            return "__getitem__"
        return "__missing__" if "__missing__" in defined and found[1].bases else None

    def _init_record(self, module: str, path: str, home: str, cls: ast.ClassDef, node: ast.Call, env: dict, depth: int) -> Record | None:
        """`C("pkg.mod.X")` of a plugin class with no base, decorator or metaclass whose
        `__init__` only stores attributes (`self.target = target`, a docstring aside), each
        written nowhere else in the class: a Record of those attributes, the call's arguments
        bound to `__init__`'s parameters as Python binds them (defaults filled). None otherwise."""
        init = next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__")
        arguments = init.args
        positional = [*arguments.posonlyargs, *arguments.args]
        if (cls.bases or cls.keywords or cls.decorator_list or not positional or init.decorator_list
                or arguments.vararg or arguments.kwarg or len(node.args) > len(positional) - 1
                or any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords)):
            return None
        receiver = positional[0].arg
        defaults = {a.arg: d for a, d in zip(positional[::-1], arguments.defaults[::-1])}
        defaults.update({a.arg: d for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults) if d is not None})
        bound = {a.arg: self.const(module, v, env, depth + 1) for a, v in zip(positional[1:], node.args)}
        bound.update({k.arg: self.const(module, k.value, env, depth + 1) for k in node.keywords})
        for parameter in [*positional[1:], *arguments.kwonlyargs]:
            if parameter.arg not in bound:
                if parameter.arg not in defaults:
                    return None  # a required parameter the call leaves out: a TypeError, no object
                bound[parameter.arg] = self.const(home, defaults[parameter.arg], {}, depth + 1)
        fields: dict[str, object] = {}
        for stmt in init.body:
            if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
                continue
            target = stmt.targets[0] if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 else (
                stmt.target if isinstance(stmt, ast.AnnAssign) and stmt.value is not None else None)
            if not (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == receiver):
                return None
            fields[target.attr] = self.const(home, stmt.value, bound, depth + 1)
        written = [n for n in walk(cls) if isinstance(n, ast.Attribute) and n.attr in fields and isinstance(n.ctx, (ast.Store, ast.Del))]
        if len(written) != len(fields) or any(dotted(n.func) == "setattr" for n in walk(cls) if isinstance(n, ast.Call)):
            return None  # another method rebinds a field: its value at a later read is not the stored one
        return Record(path, tuple(fields.items()), _site(module, node))

    def _returned(self, module: str, body: list[ast.stmt], env: dict, depth: int, _ran: bool = False, owner: str = ""):
        """What a helper's body returns, run on folded values: `if`/`elif` and `match` cases whose
        tests fold pick their branch, `name = value` binds, a nested def or class binds its name
        (the plugin path `<owner>.<name>`), the first `return` reached is the value (None where the
        body ends). OPAQUE where a test does not fold, a `raise` is reached, or any other
        statement comes first."""
        for stmt in body:
            if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) or isinstance(stmt, ast.Pass):
                continue
            if isinstance(stmt, (ast.Continue, ast.Break)):  # (only inside a loop this runs pass by pass)
                return _CONTINUE if isinstance(stmt, ast.Continue) else _BREAK
            if isinstance(stmt, (ast.Global, ast.Nonlocal)):
                # a name other code rebinds (`global _device; if _device is None: _init()`): unknown
                # until this body binds it itself
                env.update(dict.fromkeys(stmt.names, OPAQUE))
                continue
            if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
                self._past_call(module, stmt, env, depth)
                continue
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and owner and not stmt.decorator_list:
                env[stmt.name] = Named(f"{owner}.{stmt.name}")
                continue
            if isinstance(stmt, ast.Return):
                return None if stmt.value is None else self.const(module, stmt.value, env, depth + 1)
            if isinstance(stmt, (ast.Import, ast.ImportFrom)):  # a local import binds its names (the module or object)
                env.update({name: Named(path) for name, path in imported_names(module, self.files[module][1], [stmt]).items()})
                continue
            if isinstance(stmt, ast.With) and all(isinstance(i.optional_vars, ast.Name) and isinstance(
                    self.const(module, i.context_expr, env, depth + 1), PackageFile) for i in stmt.items):
                # `with files(pkg).joinpath("x.toml").open("rb") as f:` binds the open data file; the body runs
                env.update({i.optional_vars.id: self.const(module, i.context_expr, env, depth + 1) for i in stmt.items})
                returned = self._returned(module, stmt.body, env, depth + 1, _ran=True, owner=owner)
                if returned is not _FELL_THROUGH:
                    return returned
                continue
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                env[stmt.targets[0].id] = self.const(module, stmt.value, env, depth + 1)
                continue
            if (isinstance(stmt, ast.Assign) and len(stmt.targets) > 1
                    and all(isinstance(t, (ast.Name, ast.Subscript)) for t in stmt.targets)):
                # `self.data[k] = loaded = import_module(k)`: each target in turn, left to right
                for target in stmt.targets:
                    single = ast.copy_location(ast.Assign(targets=[target], value=stmt.value), stmt)
                    if isinstance(target, ast.Name):
                        env[target.id] = self.const(module, stmt.value, env, depth + 1)
                        continue
                    for name, value in list(env.items()):
                        if isinstance(value, (dict, list)):
                            env[name] = self.edit_of(module, name, value, single, env, depth + 1)
                continue
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):  # `by_module: Dict[str, T] = {}`
                if stmt.value is not None:
                    env[stmt.target.id] = self.const(module, stmt.value, env, depth + 1)
                continue
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], (ast.Tuple, ast.List)):
                # `module, _, attr = spec.partition(":")`: each name its element (not known where it does not unpack)
                held = self.const(module, stmt.value, env, depth + 1)
                env.update({name: OPAQUE for name in assigned(stmt.targets[0])} | bind(stmt.targets[0], held))
                continue
            if isinstance(stmt, (ast.For, ast.AsyncFor)):
                # a loop filling the helper's own dicts and lists (`for k, (kind, fn) in T.items():
                # table[kind].append((k, fn))`), over folded values: each filled per element (edit_of)
                items = self.iterated(self.const(module, stmt.iter, env, depth + 1))
                if not isinstance(items, list) or stmt.orelse or len(items) > 256:
                    return OPAQUE
                if self._fills_only(stmt):
                    for name, value in list(env.items()):
                        if isinstance(value, (dict, list)):
                            env[name] = self.edit_of(module, name, value, stmt, env, depth + 1)
                    continue
                for item in items:  # any other body: run once per element, in order, to a `break`
                    env.update(bind(stmt.target, item))
                    returned = self._returned(module, stmt.body, env, depth + 1, _ran=True, owner=owner)
                    if returned is _BREAK:
                        break
                    if returned is not _FELL_THROUGH and returned is not _CONTINUE:
                        return returned
                continue
            if isinstance(stmt, ast.Assign) and all(isinstance(t, ast.Subscript) for t in stmt.targets):
                for name, value in list(env.items()):  # `parts[k] = v` of a helper's own dict or list
                    if isinstance(value, (dict, list)):
                        env[name] = self.edit_of(module, name, value, stmt, env, depth + 1)
                continue
            branch = None
            if isinstance(stmt, ast.If):
                test = self._truth_of(module, stmt.test, env, depth)
                if test is None:
                    return OPAQUE
                branch = stmt.body if test else stmt.orelse
            elif self._engine_installed_try(module, stmt, env, depth):
                branch = [*stmt.body, *stmt.orelse, *stmt.finalbody]
            elif (probed := self._module_probe(module, stmt, env, depth)) is not None:
                return probed
            elif (attempted := self._import_attempt(module, stmt, env, depth)) is not None:
                branch = attempted
            elif (caught := self._caught_imports(module, stmt)) is not None:
                env.update(caught)  # the names hold upstream's objects; each None where its import fails
                branch = stmt.orelse
            elif isinstance(stmt, ast.Try) and stmt.handlers and not stmt.finalbody and all(always_raises(h.body) for h in stmt.handlers):
                # `try: m = _LAZY[name]` / `except KeyError: raise AttributeError(…)`: where the helper
                # goes on at all, its body ran (a lookup that does not fold leaves its name unknown)
                branch = [*stmt.body, *stmt.orelse]
            elif isinstance(stmt, ast.Match):
                for case in stmt.cases:
                    test = case_test(stmt.subject, case.pattern)  # (None: a pattern no plain test states)
                    held = self._truth_of(module, test, env, depth) if test is not None else None
                    if case.guard is not None and held is True:
                        held = self._truth_of(module, case.guard, env, depth)
                    if held is True:
                        branch = case.body
                        break
                    if held is not False:
                        return OPAQUE
                else:
                    branch = []  # no case matched: on after the match
            else:
                return OPAQUE
            returned = self._returned(module, branch, env, depth + 1, _ran=True, owner=owner)
            if returned is not _FELL_THROUGH:
                return returned
        return _FELL_THROUGH if _ran else None

    def _module_probe(self, module: str, stmt: ast.stmt, env: dict, depth: int) -> Condition | None:
        """`try: return find_spec(M) is not None` / `except ModuleNotFoundError: return False`: a
        body returning a test of modules being there (ModuleExists, ImportsResolve), handlers that
        catch only import errors and return False or None. Where the lookup raises, a module is
        missing, so the test is false as the handler's value is: the value is the test. None for
        any other statement."""
        if not isinstance(stmt, ast.Try) or stmt.orelse or stmt.finalbody or not stmt.handlers or len(stmt.body) != 1 or not isinstance(stmt.body[0], ast.Return):
            return None
        caught = [n for h in stmt.handlers for n in (h.type.elts if isinstance(h.type, ast.Tuple) else [h.type])]
        if not all(n is not None and (dotted(n) or "").rsplit(".", 1)[-1] in IMPORT_ERRORS - {"Exception", "BaseException"} for n in caught):
            return None
        if not all(len(h.body) == 1 and isinstance(h.body[0], ast.Return) and isinstance(h.body[0].value, ast.Constant)
                   and h.body[0].value.value in (False, None) for h in stmt.handlers):
            return None
        value = self.const(module, stmt.body[0].value, env, depth + 1) if stmt.body[0].value is not None else None
        if not isinstance(value, Condition) or not all(isinstance(leaf, (ModuleExists, ImportsResolve)) for leaf in leaves(value.cond)):
            return None
        return value

    def _import_attempt(self, module: str, stmt: ast.stmt, env: dict, depth: int) -> list[ast.stmt] | None:
        """`try: owner = importlib.import_module(prefix)` / `except ImportError: continue` in a
        helper (a locator trying the longest importable prefix of a dotted path, as hydra's
        `_locate` does): the statements that run, decided by whether the one module the body
        imports is there (a plugin module, or one of this release's), the body and its `else`;
        or the first handler catching the import's failure where the name is under the plugin's or
        upstream's package and no module (`sglang.x.f`: ModuleNotFoundError), its `as` name
        unknown. None for any other statement, or a name whose import this cannot decide."""
        if not isinstance(stmt, ast.Try) or not stmt.handlers:
            return None
        calls = [n for s in stmt.body for n in walk(s) if isinstance(n, ast.Call)]
        imports = [c for c in calls if (self.qualify(module, dotted(c.func) or "") or "").endswith("import_module")]
        if len(imports) != 1 or not all(isinstance(s, (ast.Assign, ast.AnnAssign, ast.Expr)) for s in stmt.body):
            return None
        held = self.const(module, imports[0], env, depth + 1)
        if not isinstance(held, Named):
            return None
        path, top = held.path, held.path.partition(".")[0]
        if path in self.files or is_upstream(path) and self.index.module_exists(path):
            return [*stmt.body, *stmt.orelse, *stmt.finalbody]
        if not (is_upstream(path) or any(m.partition(".")[0] == top for m in self.files)):
            return None  # (another package's module: whether it imports is not known here)
        for handler in stmt.handlers:
            caught = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
            if any(n is None or (dotted(n) or "").rsplit(".", 1)[-1] in IMPORT_ERRORS for n in caught):
                if handler.name:
                    env[handler.name] = OPAQUE
                return [*handler.body, *stmt.finalbody]
        return None

    def _caught_imports(self, module: str, stmt: ast.stmt) -> dict[str, Named] | None:
        """`try: from sglang.x import f` / `except ImportError: return None` in a helper (its
        handlers, one catching the import's failure, may log and return None, or bind the
        imported names to None: `f = None`): the names the body imports from upstream -> their
        objects, each recorded as None where its imports fail (none_fallbacks: ImportsResolve),
        as the module-level try/except form is; the helper's caller tests the result (or the
        name) `is None`. None for any other statement."""
        if not isinstance(stmt, ast.Try) or stmt.finalbody or not stmt.handlers or not all(isinstance(s, (ast.Import, ast.ImportFrom)) for s in stmt.body):
            return None
        caught = [n for h in stmt.handlers for n in (h.type.elts if isinstance(h.type, ast.Tuple) else [h.type])]
        if not any(n is None or (dotted(n) or "").rsplit(".", 1)[-1] in IMPORT_ERRORS for n in caught):
            return None  # (`except (ImportError, AttributeError)`: the import's failure is among them)
        imports = tuple(upstream_imports(module, self.files[module][1], stmt.body))
        names = {name: path for name, path in imported_names(module, self.files[module][1], stmt.body).items() if is_upstream(path)}
        if not imports or not names:
            return None

        def none_of_a_name(s: ast.stmt) -> bool:  # `f = None` of a name the body imports
            return (isinstance(s, ast.Assign) and all(isinstance(t, ast.Name) and t.id in names for t in s.targets)
                    and isinstance(s.value, ast.Constant) and s.value.value is None)

        for handler in stmt.handlers:
            last = handler.body[-1]
            returns_none = isinstance(last, ast.Return) and (last.value is None or isinstance(last.value, ast.Constant) and last.value.value is None)
            logged = [s for s in handler.body if not (returns_none and s is last)]
            if not all(isinstance(s, ast.Expr) and isinstance(s.value, ast.Call) or isinstance(s, ast.Pass) or none_of_a_name(s) for s in logged):
                return None
            if not returns_none and {t.id for s in handler.body if none_of_a_name(s) for t in s.targets} != set(names):
                return None  # (falls through: each imported name must be bound again)
        for path in names.values():
            self.none_fallbacks.setdefault((module, path), ImportsResolve(tuple(i for i in imports if path in (i[0], f"{i[0]}.{i[1]}"))))
        return {name: Named(path) for name, path in names.items()}

    def _loop_global(self, module: str, loop: ast.For, name: str, depth: int):
        """What a module-level loop binds to the global `name` by a computed name (`for m, n in
        TABLE: globals()[n] = …`, `setattr(sys.modules[__name__], n, …)`, `vars()[n] = …`; at
        module level vars() is the module's namespace): the value its last pass stores under that
        name, each pass read with the loop's names bound to the row (a store in a `try` as
        _caught_module_import reads one); None when no pass binds it; OPAQUE when the rows or
        a key do not fold."""
        stores = self._loop_stores(module, loop)
        if not stores or name in {n.id for n in walk(loop.iter) if isinstance(n, ast.Name)}:
            return None  # (the rows are read before any pass: a name they read is not one the loop binds)
        rows = self.iterated(self.const(module, loop.iter, {}, depth + 1))
        if not isinstance(rows, list) or len(rows) > 256:
            return OPAQUE
        for row in reversed(rows):  # (the last pass that stores the name wins)
            env = bind(loop.target, row)
            keys = [self.const(module, key, env, depth + 1) for key, _ in stores]
            if any(not isinstance(key, str) for key in keys):
                return OPAQUE
            if name not in keys:
                continue
            caught = next((c for stmt in loop.body if isinstance(stmt, ast.Try)
                           and (c := self._caught_module_import(module, stmt, name, depth, env)) is not OPAQUE), OPAQUE)
            return caught if caught is not OPAQUE else self.const(module, stores[keys.index(name)][1], env, depth + 1)
        return None

    def loop_global_names(self, module: str, loop: ast.For) -> list[str]:
        """The names a module-level loop stores as globals by computed names (_loop_global), over
        its folded rows; [] where none folds."""
        stores = self._loop_stores(module, loop)
        rows = self.iterated(self.const(module, loop.iter, {})) if stores else []
        keys = [self.const(module, key, bind(loop.target, row)) for row in (rows if isinstance(rows, list) else []) for key, _ in stores]
        return list(dict.fromkeys(key for key in keys if isinstance(key, str) and key.isidentifier()))

    def _loop_stores(self, module: str, loop: ast.For) -> list[tuple[ast.expr, ast.expr]]:
        """(key, value) of each global store by a computed name in the loop's body (_global_store)."""
        return [store for n in walk(ast.Module(body=loop.body, type_ignores=[])) if (store := self._global_store(module, n)) is not None]

    def _global_store(self, module: str, node: ast.AST) -> tuple[ast.expr, ast.expr] | None:
        """(key, value) of a module-level statement storing a global by a computed name:
        `globals()[k] = v`, `vars()[k] = v`, `setattr(sys.modules[__name__], k, v)`; else None."""
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(t := node.targets[0], ast.Subscript) and isinstance(
                t.value, ast.Call) and dotted(t.value.func) in ("globals", "vars") and not t.value.args and not t.value.keywords:
            return t.slice, node.value
        if (isinstance(node, ast.Expr) and isinstance(c := node.value, ast.Call) and dotted(c.func) == "setattr" and len(c.args) == 3
                and isinstance(owner := c.args[0], ast.Subscript) and self.qualify(module, dotted(owner.value) or "") == "sys.modules"
                and isinstance(owner.slice, ast.Name) and owner.slice.id == "__name__"):
            return c.args[1], c.args[2]
        return None

    def _caught_module_import(self, module: str, stmt: ast.Try, name: str, depth: int, env: dict | None = None):
        """`try: name = importlib.import_module("sglang.x")` / `except ImportError: name = None`
        (or `pass`) at module level: upstream's module where it is there on this release (recorded
        as None where it is not: none_fallbacks, so `getattr(name, "f", None)` and `name is None`
        read as the `from … import` form's), None where it is not. Also a global stored by a
        computed name in a loop's pass (`env` its names: _loop_global), and an upstream object
        (`getattr(import_module(m), "f")`: upstream's f, recorded as None where it is not there).
        OPAQUE for any other `try`."""
        env = env or {}
        assigned = [s for s in stmt.body if isinstance(s, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in s.targets)
                    or env and (store := self._global_store(module, s)) is not None and self.const(module, store[0], env, depth + 1) == name]
        if len(assigned) != 1 or stmt.finalbody or not stmt.handlers or not isinstance(assigned[0].value, ast.Call):
            return OPAQUE
        caught = [n for h in stmt.handlers for n in (h.type.elts if isinstance(h.type, ast.Tuple) else [h.type])]
        if not any(n is None or (dotted(n) or "").rsplit(".", 1)[-1] in IMPORT_ERRORS for n in caught) or not all(
                all(isinstance(s, ast.Pass) or isinstance(s, ast.Expr) and isinstance(s.value, (ast.Call, ast.Constant))
                    or isinstance(s, ast.Assign) and isinstance(s.value, ast.Constant) and s.value.value is None for s in h.body)
                for h in stmt.handlers):
            return OPAQUE
        value = assigned[0].value if isinstance(assigned[0], ast.Assign) and not isinstance(assigned[0].targets[0], ast.Subscript) else self._global_store(module, assigned[0])[1]
        held = self.const(module, value, env, depth + 1)
        if isinstance(held, Named) and is_upstream(held.path) and isinstance(value, ast.Call) and dotted(value.func) == "getattr" and len(value.args) == 2:
            # (an object read off the module: None where either is not there, as `from m import f` / `f = None`)
            owner, _, attr = held.path.rpartition(".")
            self.none_fallbacks.setdefault((module, held.path), HasAttr(owner, attr))
            return held
        if not (isinstance(held, Named) and is_upstream(held.path) and self.index.module_exists(held.path)):
            return None if isinstance(held, Named) and is_upstream(held.path) else OPAQUE
        self.none_fallbacks.setdefault((module, held.path), ModuleExists(held.path))
        return held

    def _engine_installed_try(self, module: str, stmt: ast.stmt, env: dict, depth: int) -> bool:
        """Whether `stmt` is a `try` whose handlers catch only importlib.metadata's
        PackageNotFoundError around reads of the engine's own version (`try: raw =
        version("sglang") except PackageNotFoundError: return (0, 0, 0)`): the engine is
        installed wherever it loads the plugin, so the handlers never run."""
        if not isinstance(stmt, ast.Try) or not stmt.handlers:
            return False
        caught = [n for h in stmt.handlers for n in (h.type.elts if isinstance(h.type, ast.Tuple) else [h.type] if h.type is not None else [None])]
        if not all(n is not None and (self.qualify(module, dotted(n), env) or "").endswith("PackageNotFoundError") for n in caught):
            return False
        calls = [n for n in walk(ast.Module(body=stmt.body, type_ignores=[])) if isinstance(n, ast.Call)]
        reads = [n for n in calls if isinstance(self.const(module, n, env, depth + 1), RunningVersion)]
        # (what else it calls takes that string apart: `version("sglang").partition("+")`)
        return bool(reads) and all(n in reads or isinstance(n.func, ast.Attribute) and n.func.attr in _STRING_METHODS and isinstance(
            self.const(module, n.func.value, env, depth + 1), (RunningVersion, str, list)) for n in calls)

    def _viewed_attribute(self, method: str) -> str | None:
        """`X.m` of an object upstream builds at module level, where m's body is one `return
        self.a.keys()` / `return self.a` / `return set(self.a)` (vLLM 0.11 registry.py:558
        get_supported_archs): "X.a", what a membership test then reads; None otherwise."""
        owner, _, name = method.rpartition(".")
        held = self.index.resolve(owner) if owner else None
        registry = profile().model_registry
        if held is not None and held.ok and registry and owner.rpartition(".")[2] == registry.rpartition(".")[2] and "__getattr__" in (held.note or ""):
            held = self.index.resolve(registry)  # `from vllm import ModelRegistry`, answered lazily by vllm.__getattr__
        if held is None or not held.ok or held.ref.kind != "value":
            return None
        built = self.index.module_construction(held.ref)  # the object's class: `X = C(…)` at the top of its module
        found = self.index.member(built[0], name) if built is not None else None
        ref = found.ref if found is not None and found.ok else None
        if ref is None or ref.kind != "function" or "." not in ref.qualname:
            return None
        info = self.index.function_info(ref)
        cls = self.index.class_node(Ref("class", ref.module, ref.qualname.rpartition(".")[0]))
        function = next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.lineno == info.lineno), None) if cls and info else None
        body = [st for st in function.body if not (isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant))] if function else []
        value = body[0].value if len(body) == 1 and isinstance(body[0], ast.Return) else None
        if isinstance(value, ast.Call) and not value.keywords and (
                isinstance(value.func, ast.Attribute) and value.func.attr == "keys" and not value.args
                or isinstance(value.func, ast.Name) and value.func.id in ("set", "frozenset", "list", "tuple") and len(value.args) == 1):
            value = value.func.value if isinstance(value.func, ast.Attribute) else value.args[0]
        receiver = function_params(function.args)[0].name if function is not None and function_params(function.args) else None
        if isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name) and value.value.id == receiver:
            return f"{held.ref.path}.{value.attr}"
        return None

    def _package_text(self, found: PackageFile):
        """The text of a data file shipped in the plugin's own package (UTF-8, at most 1 MiB, a
        regular file inside the plugin's tree); OPAQUE when there is no such file."""
        package_dir = (self.scan.root / self.files[found.package][0]).parent
        path = package_dir / found.relative
        try:
            inside = path.resolve().is_relative_to(self.scan.root.resolve())
            if not inside or not path.is_file() or path.is_symlink() or path.stat().st_size > 1 << 20:
                return OPAQUE
            return path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return OPAQUE

    @staticmethod
    def _fills_only(loop: ast.For | ast.AsyncFor) -> bool:
        """Whether a loop's body only edits containers (calls, `X[k] = v`, nested such loops) and
        never leaves it early: what it does to a helper's locals is then each element's edit."""
        def fills(stmt: ast.stmt) -> bool:
            if isinstance(stmt, (ast.For, ast.AsyncFor)):
                return not stmt.orelse and all(fills(s) for s in stmt.body)
            return (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)) or (
                isinstance(stmt, ast.Assign) and all(isinstance(t, ast.Subscript) for t in stmt.targets))
        return not loop.orelse and all(fills(s) for s in loop.body)

    def _past_call(self, module: str, stmt: ast.Expr, env: dict, depth: int) -> None:
        """`env` after a statement that only calls (`log.debug(…)`, `print(…)`, a plugin
        function): a call cannot rebind its caller's locals (Python's scoping), so each stays
        what it held, but a list or dict a local holds may change: its edit folded (edit_of:
        `names.append(x)`), or unknown when the call is handed it."""
        handed = {n.id for n in walk(stmt.value) if isinstance(n, ast.Name)}
        for name, value in list(env.items()):
            if isinstance(value, (dict, list)):
                edited = self.edit_of(module, name, value, stmt, env, depth + 1)
                env[name] = edited if edited != value or name not in handed else OPAQUE

    def _truth_of(self, module: str, test: ast.expr, env: dict, depth: int) -> bool | None:
        """Whether a test of folded values holds (Python's truth of its value; `and`/`or`/`not`
        of such tests operand by operand, in Kleene's logic); None where it does not fold."""
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            inner = self._truth_of(module, test.operand, env, depth + 1)
            return None if inner is None else not inner
        if isinstance(test, ast.BoolOp):
            parts = tuple(UNDECIDED if (held := self._truth_of(module, operand, env, depth + 1)) is None else Const(held) for operand in test.values)
            return kleene(AnyOf(parts) if isinstance(test.op, ast.Or) else AllOf(parts), lambda leaf: None)
        value = self.const(module, test, env, depth + 1)
        if isinstance(value, Condition):
            return kleene(value.cond, self._release_leaf)
        if value is None or isinstance(value, (bool, str, int, float, list, dict)):
            return bool(value)
        return None

    def _version_helper(self, module: str, function: ast.FunctionDef, local: dict, depth: int):
        """A helper longer than one return whose one comparison of the running version decides it
        (vllm-ascend utils.py vllm_version_is: an environment override, then `import vllm;
        v = vllm.__version__; return Version(v) == Version(target)`): that comparison, with the
        call's arguments; the override is taken as unset. OPAQUE for anything else."""
        env = dict(local)
        statements = [n for n in walk(function) if isinstance(n, (ast.Import, ast.Assign, ast.Return))]
        for stmt in sorted(statements, key=lambda n: (n.lineno, n.col_offset)):
            if isinstance(stmt, ast.Import):
                env.update({a.asname or a.name.split(".")[0]: Named(a.name if a.asname else a.name.split(".")[0]) for a in stmt.names})
            elif (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
                  and isinstance(self.const(module, stmt.value, env, depth + 1), RunningVersion)):
                env[stmt.targets[0].id] = RunningVersion(parsed=False)
        found = [
            cond for stmt in statements if isinstance(stmt, ast.Return) and isinstance(stmt.value, ast.Compare)
            for cond in [self.condition(module, stmt.value, env, depth + 1)] if isinstance(cond, VersionCompare)
        ]
        return Condition(found[0]) if len(found) == 1 else OPAQUE

    def _plugin_function(self, path: str) -> tuple[str, ast.FunctionDef] | None:
        module, _, name = path.rpartition(".")
        if module not in self.files:
            return None
        tree = self.tree(module)
        for stmt in tree.body if tree else []:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name == name:
                return module, stmt
        return None

    @staticmethod
    def _replaced(record, changes: dict, node: ast.Call):
        """`record` with the fields `changes` names set (dataclasses.replace, NamedTuple._replace);
        OPAQUE when it is no record, a keyword is no field of it (both raise), or one is unpacked."""
        if isinstance(record, Record) and all(k.arg for k in node.keywords) and changes.keys() <= {f for f, _ in record.fields}:
            return replace(record, fields=tuple((f, changes.get(f, v)) for f, v in record.fields))
        return OPAQUE

    def _class_function(self, path: str) -> tuple[str, ast.FunctionDef, list] | None:
        """`Cls.f` of a plugin class (its own body, then its plugin bases in order) where f is a
        staticmethod or classmethod: (module, def, what Python binds before the caller's
        arguments: nothing, or the class `Cls` itself for `cls`). None for a plain method (it
        needs an instance) or anything else."""
        owner, _, name = path.rpartition(".")
        queue, seen = [owner], set()
        while queue:
            current = queue.pop(0)
            found = self._plugin_definition(current) if current not in seen and not is_upstream(current) else None
            seen.add(current)
            if found is None or not isinstance(found[1], ast.ClassDef):
                continue
            home, cls = found
            definition = next((n for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name), None)
            if definition is not None:
                kinds = {(dotted(d) or "").rsplit(".", 1)[-1] for d in definition.decorator_list}
                if len(definition.decorator_list) != 1 or not kinds & {"staticmethod", "classmethod"}:
                    return None
                return home, definition, [Named(owner)] if "classmethod" in kinds else []
            queue += [q for b in cls.bases if (q := self.qualify(home, dotted(b), {}) if dotted(b) else None)]
        return None

    # ------------------------------------------------------------- flags set by `if`s

    def assigned_truth(self, module: str, body: list[ast.stmt], is_target: Callable[[ast.AST], bool], env: dict, where: str,
                       state: Cond | None = None, depth: int = 0, local: frozenset[str] = frozenset()) -> Cond | None:
        """Whether a variable is true after `body` runs, as a Cond over the tests of the `if`s
        that assign it (version checks fold; the rest are Unknown atoms named `where:line`):
        `v = a` gives a's truth; `if t: <block>` gives (t and the block's) or (not t and the
        truth before). A read of the variable in a test or a value stands for its truth at that
        point, so `v = cfg.v2; if v and vllm_version_is("0.23.0"): v = False` leaves
        `Unknown(cfg.v2) and not (version == 0.23.0)`: false on 0.23.0 (vllm-ascend's
        NPUWorker.use_v2_model_runner). `is_target(node)` says whether an expression is the
        variable (a Name, or `self.<attr>`). `state`: its truth before `body` (None: unset).
        Returns None when `body` leaves it unset, UNDECIDED when it is assigned in a way not
        followed here (a loop, a with or try block, an augmented or unpacking assignment).
        `local`: the function's parameters: a value or test of those alone is Runtime (the
        constructor's arguments: true for some, `self.on = name.startswith("tp")`)."""
        for stmt in body:
            if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                if any(is_target(t) for t in targets):
                    state = self._truth(module, stmt.value, is_target, env, state, f"{where}:{stmt.lineno}", local)
                elif any(is_target(n) for t in targets for n in walk(t)):
                    return UNDECIDED
            elif isinstance(stmt, ast.If) and depth < 8:
                test = self._truth(module, stmt.test, is_target, env, state, None, local)
                then = self.assigned_truth(module, stmt.body, is_target, env, where, state, depth + 1, local)
                other = self.assigned_truth(module, stmt.orelse, is_target, env, where, state, depth + 1, local)
                if then != other:
                    unset = Unknown(f"{where}: unset")
                    state = AnyOf((AllOf((test, unset if then is None else then)), AllOf((Not(test), unset if other is None else other))))
            elif any(is_target(n) for n in walk(stmt) if isinstance(getattr(n, "ctx", None), (ast.Store, ast.Del))):
                return UNDECIDED
        return state

    def _truth(self, module: str, node: ast.expr, is_target: Callable[[ast.AST], bool], env: dict, state: Cond | None, name: str | None,
               local: frozenset[str] = frozenset()) -> Cond:
        """The truth of `node` with the variable's reads standing for `state`; a value of the
        names in `local` alone is Runtime; another unreadable value is the atom Unknown(name)
        (UNDECIDED when unnamed: a test)."""
        if any(is_target(n) for n in walk(node)):
            flag = "<flag>"  # not an identifier: no name of the plugin's
            node = _named(node, is_target, lambda _: flag)
            env = {**env, flag: Condition(state if state is not None else Unknown(f"{name or 'a test'}: unset"))}
        cond = self.condition(module, node, env, local=local)
        if not isinstance(cond, Undecided):
            return cond
        value = self.const(module, node, env)
        if value is None or isinstance(value, (str, int, float)):  # an immutable literal: its own truth (a list may fill up)
            return Const(bool(value))
        return Unknown(name) if name else UNDECIDED

    def _if_assigned(self, module: str, body: list[ast.stmt], name: str, depth: int):
        """A module-level name assigned True/False (or a test) in `if`/`else` branches (vllm-ascend
        patch/worker: `if vllm_version_is("0.23.0"): _V2 = False else: _V2 = True`): its truth as a
        Condition; OPAQUE when it is not such a flag."""
        def is_target(node: ast.AST) -> bool:
            return isinstance(node, ast.Name) and node.id == name

        values = [s.value for s in walk(ast.Module(body=body, type_ignores=[])) if isinstance(s, ast.Assign) and any(is_target(t) for t in s.targets)]
        if not values or not all(isinstance(self.const(module, v, {}, depth + 1), (bool, Condition)) for v in values):
            return OPAQUE
        truth = self.assigned_truth(module, body, is_target, {}, f"{self.relfile(module)}:{name}")
        return OPAQUE if truth is None or isinstance(truth, Undecided) else Condition(truth)

    def set_through_global(self, module: str, name: str, depth: int = 0):
        """What the one function of `module` that rebinds the module global `name` (`global
        name`, then `name = value` in its own body, once) sets it to, run on folded values up to
        there (_returned); OPAQUE where no function or several do, or it assigns in a branch.
        For a use that None cannot serve (a hook registered by the name), where the module binds
        None as a placeholder: not for tests of the name, which run before the function too."""
        tree = self.tree(module)
        setters = [f for f in walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
                   and any(isinstance(n, ast.Global) and name in n.names for n in f.body)] if tree and depth < 10 else []
        if len(setters) != 1:
            return OPAQUE
        function = setters[0]
        at = [i for i, stmt in enumerate(function.body) if name in assigned_in(stmt)]
        stmt = function.body[at[0]] if len(at) == 1 else None
        if not (isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None and [dotted(t) for t in (
                stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target])] == [name]):
            return OPAQUE
        env = {p.name: OPAQUE for p in function_params(function.args)}
        held = self._returned(module, [*function.body[:at[0]], ast.copy_location(ast.Return(value=stmt.value), stmt)], env, depth + 1)
        return OPAQUE if held is _FELL_THROUGH else held

    def module_constant(self, module: str, name: str, depth: int):
        if module not in self.files or depth > 20:
            return OPAQUE
        tree = self.tree(module)
        for stmt in tree.body if tree else []:
            if isinstance(stmt, ast.Try) and name in flag_names(stmt):
                imports = tuple(upstream_imports(module, self.files[module][1], stmt.body))
                if imports:
                    return Condition(ImportsResolve(imports))
        body = tree.body if tree else []
        for position in range(len(body) - 1, -1, -1):  # the last module-level binding wins
            stmt = body[position]
            if isinstance(stmt, (ast.With, ast.Try)) and (path := imported_names(module, self.files[module][1], stmt.body).get(name)) and is_upstream(path):
                # `with suppress(ImportError): import sglang.x as x` (or a try): upstream's module where
                # the import resolves on this release, else the binding before it
                if self.index.module_exists(path) or self.index.resolve(path).ok:
                    return Named(path)
                continue
            if isinstance(stmt, ast.Try) and (loaded := self._caught_module_import(module, stmt, name, depth)) is not OPAQUE:
                return loaded
            if isinstance(stmt, ast.For) and (bound := self._loop_global(module, stmt, name, depth)) is not None:
                return bound
            if isinstance(stmt, ast.If) and name in assigned_in(stmt):
                truth = self._if_assigned(module, tree.body, name, depth)
                if truth is not OPAQUE:
                    return truth
            if (isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in stmt.targets)
                    or isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.target.id == name):
                return self.filled(module, name, self._module_edits(module, name, self.const(module, stmt.value, {}, depth), body[position + 1:], depth), depth)
            if isinstance(stmt, ast.Assign) and (unpacked := next((t for t in stmt.targets if isinstance(t, (ast.Tuple, ast.List)) and name in assigned(t)), None)):
                # `NAMES, FEATURES = zip(*TABLE)`: the item the unpacking binds to the name
                held = bind(unpacked, self.const(module, stmt.value, {}, depth)).get(name, OPAQUE)
                return self.filled(module, name, self._module_edits(module, name, held, body[position + 1:], depth), depth)
        binding = self.table(module).names.get(name)
        if binding is not None and binding.kind == "from":
            source_module, source_name = binding.target.split(":")
            if source_module in self.files:
                return self.module_constant(source_module, source_name, depth + 1)
            if (version := self._version_read(binding.target.replace(":", "."))) is not None:
                return version
        if binding is None and (star := self._star_bound(module, name, frozenset())) is not None:
            # `from .layout import *` of a plugin module: the constant that module binds
            home, _, attr = star.rpartition(".")
            if home in self.files and star not in self.files:
                return self.module_constant(home, attr, depth + 1)
        qualified = self.qualify(module, name)
        return Named(qualified) if qualified else OPAQUE

    def filled(self, module: str, name: str, value, depth: int = 0, site: tuple[str, int, int] | None = None):
        """`value`, the module-level list or dict `name` of `module`, with what module-level
        calls of plugin functions anywhere in the plugin add to it when their modules are
        imported: `@queue_hook("target")` / `@register` on a def or class, `register(fn)`,
        `factory(args)(fn)`, where the function (or the closure a decorator factory returns)
        appends to or stores in `name`, its parameters bound to what that call passes and the
        decorated object to the decorator's parameter (a registry filled by decorators). Order is
        not kept: the entries are what a later loop over it may meet. `site`: for a list or dict
        an object keeps, the construction that made the object (Record.site): calls of methods
        on another object of its class add nothing to it."""
        if not isinstance(value, (list, dict)) or (module, name) in self._filling or depth > 20:
            return value
        self._filling.add((module, name))
        try:
            for home, local, stmt, bound, before, made in self._fill_sites().get((module, name), []):
                if made is not None and site is not None and made[1] != site:
                    continue
                # (a method's receiver: the object its construction folds to, now that the fills are known)
                env = {param: self._made_object(node, depth + 1) if caller == "<object>" else self.const(caller, node, {}, depth + 1)
                       if caller else node for param, (caller, node) in bound.items()}
                for assignment in before:  # the function's locals its earlier statements bind (`base = cls.__bases__[0]`)
                    env.update({k: v for k, v in bind(assignment.targets[0], self.const(home, assignment.value, env, depth + 1)).items()
                                if not (v is OPAQUE and k in bound)})  # (a name bound for the replay keeps its value)
                if isinstance(stmt, (ast.For, ast.AsyncFor, ast.If)):  # a loop around the edit: once per element (edit_of); an `if`: its test
                    value = self.edit_of(home, local, value, stmt, env, depth + 1)
                else:
                    value = self._edited(home, local, value, stmt, env, depth + 1, removals=False)
        finally:
            self._filling.discard((module, name))
        return value

    def _fill_sites(self) -> dict[tuple[str, str], list[tuple[str, str, ast.stmt, dict, tuple, tuple | None]]]:
        """(module, global) -> the statements that edit it inside plugin functions that
        module-level code calls or applies as decorators: (the function's module, the name the
        global has there, the statement, its parameters' bindings: param -> (the caller's module,
        the argument node) or ("", a folded value) or ("<object>", a Made) for a method's
        receiver, the plain assignments before it, for a method called on one object the Made
        of that object, else None)."""
        if self._fills is not None:
            return self._fills
        self._fills = {}
        for module in self.files:
            tree = self.tree(module)
            statements = list(module_level(tree.body)) if tree else []
            statements += [s for c in statements if isinstance(c, ast.ClassDef) for s in c.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))]
            off = self._branches_off(module, tree.body) if tree else set()
            for stmt in statements:
                if isinstance(stmt, ast.ClassDef):
                    self._fill_subclass_hooks(module, stmt)
                    if (stmt.lineno, stmt.col_offset) not in off:  # (a class an `if` of this release leaves unmade makes no metaclass call)
                        self._fill_metaclass_hooks(module, stmt)
                if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    owner = next((c.name for c in statements if isinstance(c, ast.ClassDef) and stmt in c.body), None)
                    made = Named(f"{module}.{owner}.{stmt.name}" if owner else f"{module}.{stmt.name}")
                    for decorator in stmt.decorator_list:
                        self._fill_application(module, decorator, ("", made))
                elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
                    call = stmt.value
                    applied = call.func if isinstance(call.func, ast.Call) and len(call.args) == 1 else None
                    self._fill_application(module, applied or call, (module, call.args[0]) if applied else None)
                if isinstance(stmt, (ast.Expr, ast.Assign)) and isinstance(stmt.value, ast.Call) and isinstance(stmt.value.func, ast.Attribute):
                    self._fill_method_calls(module, stmt.value)
            for function in (n for n in walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))) if tree else ():
                # a chain on an object made in a function (`Installer().add(A, B).install()`), its
                # arguments read with the function's own imports
                # and calls on a local bound once to such an object (`t = Table(); t.add(A, B)`)
                stores = [n.id for n in walk(function) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)]
                made = {stmt.targets[0].id: stmt.value for stmt in function.body if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
                        and isinstance(stmt.targets[0], ast.Name) and stores.count(stmt.targets[0].id) == 1
                        and isinstance(stmt.value, ast.Call) and (_made_chain(stmt.value) or isinstance(stmt.value.func, (ast.Name, ast.Attribute)))}
                chains = [stmt.value for stmt in function.body if isinstance(stmt, (ast.Expr, ast.Assign)) and (
                    _made_chain(stmt.value) or isinstance(stmt.value, ast.Call) and isinstance(stmt.value.func, ast.Attribute)
                    and isinstance(root := _chain_root(stmt.value), ast.Name) and root.id in made)]
                local = {name: Named(path) for name, path in imported_names(module, self.files[module][1], function.body).items()} if chains else {}
                for chain in chains:
                    self._fill_method_calls(module, _rooted_at(chain, made), local)
        return self._fills

    def _fill_method_calls(self, module: str, call: ast.Call, env: dict | None = None) -> None:
        """The edits a chain of method calls on a plugin object makes (`INSTALLER =
        HookInstaller().add("t", hook).add(…)`, `INSTALLER.add(…)` of a global bound to one, at
        module level; in a function, with `env` its imports): each method's, self the object (a
        method returning self hands the object on)."""
        chain = []
        node = call
        while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            chain.append(node)
            node = node.func.value
        obj = self._object_made(module, node, 0, env)
        cls = obj[0] if obj else None
        for made in reversed(chain) if cls else ():
            found = self._plugin_definition(f"{cls}.{made.func.attr}")
            if found is None or not isinstance(found[1], (ast.FunctionDef, ast.AsyncFunctionDef)) or found[1].decorator_list:
                return
            home, method = found
            given = _bound_nodes(method, made, module, 1)
            if given is None:
                return
            bound = {name: (module, node) if env is None else ("", self.const(module, node, env)) for name, (_, node) in given.items()}
            for p, default in zip(reversed(method.args.args), reversed(method.args.defaults)):
                bound.setdefault(p.arg, (home, default))
            if function_params(method.args):
                bound[function_params(method.args)[0].name] = ("<object>", obj)
            self._fill_edits(home, method, f"{cls}.{method.name}", bound, owner=cls, made=obj)
            if not _returns_self(method):
                return

    def _object_made(self, module: str, node: ast.expr, depth: int, env: dict | None = None) -> tuple | None:
        """The plugin object `node` makes or names (at module level, or with `env` a function's
        imports): `C(…)`, a chain of its methods that return self, a module global bound once to
        either. A Made: (its plugin class, the construction's site (module, line, column), the
        construction's module, the `C(…)` call, the env it folds in); None otherwise."""
        while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and depth < 8:
            obj = self._object_made(module, node.func.value, depth + 1, env)
            found = self._plugin_definition(f"{obj[0]}.{node.func.attr}") if obj else None
            return obj if found is not None and isinstance(found[1], ast.FunctionDef) and _returns_self(found[1]) else None
        if isinstance(node, ast.Call):
            path = self.qualify(module, dotted(node.func), env) if dotted(node.func) else None
            found = self._plugin_definition(path) if path and not is_upstream(path) else None
            return (path, _site(module, node), module, node, env or {}) if found is not None and isinstance(found[1], ast.ClassDef) else None
        if isinstance(node, ast.Name) and depth < 8 and not (env and node.id in env):
            tree = self.tree(module)
            values = [s.value for s in tree.body if isinstance(s, ast.Assign) and len(s.targets) == 1
                      and isinstance(s.targets[0], ast.Name) and s.targets[0].id == node.id] if tree else []
            return self._object_made(module, values[0], depth + 1) if len(values) == 1 else None
        return None

    def _made_object(self, made: tuple, depth: int):
        """The Record a Made's construction folds to (_record), OPAQUE where it does not fold."""
        cls, _, module, call, env = made
        return self._record(module, cls, call, env, depth) or OPAQUE

    def _fill_application(self, module: str, node: ast.expr, decorated: tuple | None) -> None:
        """The edits of module globals one application makes (_fill_sites): `node` a decorator
        or a call in `module`; `decorated` what a decorator (or the callable a call returns) is
        applied to."""
        call = node if isinstance(node, ast.Call) else None
        found = self._plugin_function(self.qualify(module, dotted(call.func if call else node)) or "")
        owner = receiver = None
        bound: dict = {}
        applied = call.func if call else node
        obj = self._object_made(module, applied.value, 0) if found is None and isinstance(applied, ast.Attribute) else None
        if obj is not None:
            # `@PATCHES.patch("t")` of a module global holding a plugin object: that method, its
            # receiver the object
            owner = obj[0]
            method = self._plugin_definition(f"{owner}.{applied.attr}")
            if method is None or not isinstance(method[1], (ast.FunctionDef, ast.AsyncFunctionDef)) or method[1].decorator_list:
                return
            found, params = method, function_params(method[1].args)
            receiver = params[0].name if params else None
            if receiver is None:
                return
            bound[receiver] = ("<object>", obj)
        if found is None:
            return
        home, function = found
        params = function_params(function.args)[1 if receiver else 0:]
        if call is not None:
            given = _bound_nodes(function, call, module, 1 if receiver else 0)
            if given is None:
                return
            bound.update(given)
        elif decorated is not None and params:
            bound[params[0].name] = decorated
            decorated = None
        for p, default in zip(reversed([p for p in function.args.args]), reversed(function.args.defaults)):
            bound.setdefault(p.arg, (home, default))
        for p, default in zip(function.args.kwonlyargs, function.args.kw_defaults):
            if default is not None:
                bound.setdefault(p.arg, (home, default))
        path = f"{owner}.{function.name}" if owner else f"{home}.{function.name}"
        self._fill_edits(home, function, path, bound, owner=owner, made=obj)
        inner = returned_function(function) if call is not None and decorated is not None else None
        if inner is not None and function_params(inner.args):
            self._fill_edits(home, inner, f"{path}.{inner.name}", {**bound, function_params(inner.args)[0].name: decorated},
                             owner=owner, receiver=receiver, made=obj)

    def _fill_subclass_hooks(self, module: str, node: ast.ClassDef) -> None:
        """A class statement runs `__init_subclass__` of each plugin base that defines it, the
        new class its first parameter and the statement's keywords the others
        (object.__init_subclass__ docs): its edits of registries fill them (_fill_edits)."""
        path = f"{module}.{node.name}"
        for home, base, hook in self._subclass_hooks(module, node):
            if function_params(hook.args):
                # the class statement's keywords are __init_subclass__'s (`class A(Patch, module="…")`)
                bound = {k.arg: (module, k.value) for k in node.keywords if k.arg and k.arg != "metaclass"}
                bound[function_params(hook.args)[0].name] = ("", Named(path))
                self._fill_edits(home, hook, f"{base}.__init_subclass__", bound, owner=base)

    def _subclass_hooks(self, module: str, node: ast.ClassDef) -> list[tuple[str, str, ast.FunctionDef]]:
        """(module, base path, def) of each `__init_subclass__` the plugin bases of the class
        statement `node` define, nearest bases first."""
        found_hooks, queue, seen = [], [(module, b) for b in node.bases], set()
        while queue:
            home, base_node = queue.pop(0)
            base = self.qualify(home, dotted(base_node)) if dotted(base_node) else None
            found = self._plugin_definition(base) if base and base not in seen else None
            seen.add(base)
            if found is None or not isinstance(found[1], ast.ClassDef):
                continue
            hook = next((n for n in found[1].body if isinstance(n, ast.FunctionDef) and n.name == "__init_subclass__"), None)
            if hook is not None:
                found_hooks.append((found[0], base, hook))
            queue += [(found[0], b) for b in found[1].bases]
        return found_hooks

    def _branch_definitions(self, module: str, tree: ast.Module) -> dict:
        """name -> the last def or class statement a branch of a module-level `if`/`try` that this
        release runs makes (_branches_off), once per module."""
        key = f"{module}\0defs"
        if key not in self._branches_memo:
            off, top = self._branches_off(module, tree.body), {id(n) for n in tree.body}
            self._branches_memo[key] = {n.name: n for n in module_level(tree.body) if id(n) not in top
                                        and isinstance(n, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and (n.lineno, n.col_offset) not in off}
        return self._branches_memo[key]

    def _branches_off(self, module: str, body: list[ast.stmt]) -> set[tuple[int, int]]:
        """(line, column) of each module-level statement of `module` (its `body`) in an `if`
        branch a test of this release decides not to run (`if hasattr(Sampler, "x"): class A …
        else: class B …`: _on_this_release); once per module (by position: a tree may be parsed
        again)."""
        if module in self._branches_memo:
            return self._branches_memo[module]
        self._branches_memo[module] = off = set()
        pending = list(body)
        while pending:
            stmt = pending.pop()
            if isinstance(stmt, ast.If):
                taken = self._on_this_release(module, stmt.test, {}, 0)
                dropped = stmt.orelse if taken is True else stmt.body if taken is False else []
                off |= {(s.lineno, s.col_offset) for s in module_level(dropped)}
                pending += [*stmt.body, *stmt.orelse]
        return off

    def _fill_metaclass_hooks(self, module: str, node: ast.ClassDef) -> None:
        """A class statement whose metaclass (its `metaclass=` keyword, or a plugin base's) is a
        plugin class runs that metaclass's `__new__(mcls, name, bases, namespace)` and
        `__init__(cls, name, bases, namespace)` (the data model, "Metaclasses"): their edits of
        registries fill them (_fill_edits), the namespace the class body's names, the class
        `super().__new__(…)` makes the new class."""
        path = f"{module}.{node.name}"
        meta, queue, seen = None, [(module, node)], set()
        while queue and meta is None:
            home, cls = queue.pop(0)
            given = next((k.value for k in cls.keywords if k.arg == "metaclass"), None)
            if given is not None:
                meta = self.qualify(home, dotted(given)) if dotted(given) else None
                break
            for base in cls.bases:
                found = self._plugin_definition(self.qualify(home, dotted(base)) or "") if dotted(base) else None
                if found is not None and isinstance(found[1], ast.ClassDef) and id(found[1]) not in seen:
                    seen.add(id(found[1]))
                    queue.append(found)
        found = self._plugin_definition(meta) if meta else None
        if found is None or not isinstance(found[1], ast.ClassDef):
            return
        home, meta_cls = found
        namespace = self._class_namespace(path, 0, node) or {}
        bases = [Named(b) if (b := self.qualify(module, dotted(x)) if dotted(x) else None) else OPAQUE for x in node.bases]
        for method in (n for n in meta_cls.body if isinstance(n, ast.FunctionDef) and n.name in ("__new__", "__init__")):
            params = [p.name for p in function_params(method.args)]
            if len(params) < 4:
                continue
            receiver = Named(meta) if method.name == "__new__" else Named(path)
            bound = dict(zip(params, [("", receiver), ("", node.name), ("", bases), ("", namespace)]))
            for stmt in method.body:  # `cls = super().__new__(mcls, name, bases, namespace)`: the new class
                if (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
                        and isinstance(stmt.value, ast.Call) and isinstance(stmt.value.func, ast.Attribute) and stmt.value.func.attr == "__new__"):
                    bound[stmt.targets[0].id] = ("", Named(path))
            self._fill_edits(home, method, f"{meta}.{method.name}", bound, owner=meta)

    def _fill_edits(self, home: str, function: ast.FunctionDef | ast.AsyncFunctionDef, path: str, bound: dict, owner: str | None = None,
                    receiver: str | None = None, made: tuple | None = None) -> None:
        """Record each statement of `function`'s own body (not its nested functions') that edits
        a global of `home` or an attribute of a plugin class (`Base._registry.append(cls)`; in a
        method of the class `owner`, `cls._registry` is that class's; `receiver`: the name the
        method's object has, for a closure the method returns, else its first parameter), with
        `bound` and its nested functions by path; `made`: the object (a Made) a method is called
        on, whose own fields `self.x` edits fill."""
        local = local_names(function)
        bound = {**bound, **{n.name: ("", Named(f"{path}.{n.name}")) for n in function.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}}
        if receiver is None:
            receiver = function_params(function.args)[0].name if owner and function_params(function.args) else None
        # an edit inside a `for` is recorded as its outermost loop: edit_of replays that once per element
        loops: dict[int, ast.stmt] = {}
        for stmt in module_level(function.body):
            if isinstance(stmt, (ast.For, ast.AsyncFor)):
                for inner in module_level(stmt.body):
                    loops.setdefault(id(inner), loops.get(id(stmt), stmt))
        for stmt in function.body:  # (and one under a top-level `if`, as that `if`: edit_of decides its test)
            if isinstance(stmt, ast.If) and id(stmt) not in loops:
                for inner in module_level([*stmt.body, *stmt.orelse]):
                    loops.setdefault(id(inner), stmt)
        recorded: set[tuple[int, tuple]] = set()

        body = list(module_level(function.body))

        def record(key: tuple, name: str, stmt: ast.stmt) -> None:
            stmt = loops.get(id(stmt), stmt)
            if (id(stmt), key) not in recorded:
                recorded.add((id(stmt), key))
                # the plain assignments of the function's own body before it, replayed for its locals
                before = tuple(s for s in body[:body.index(stmt)] if isinstance(s, ast.Assign) and len(s.targets) == 1
                               and isinstance(s.targets[0], (ast.Name, ast.Tuple))) if stmt in body else ()
                self._fills.setdefault(key, []).append((home, name, stmt, bound, before, made if name.partition(".")[0] == receiver else None))

        for stmt in module_level(function.body):
            target = None
            if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and isinstance(stmt.value.func, ast.Attribute):
                target = stmt.value.func.value
                if _grouped_key(stmt.value, lambda n: isinstance(n, (ast.Name, ast.Attribute))) is not None:
                    # `X[k].append(v)`, `X.setdefault(k, []).append(v)` edit X
                    target = target.value if isinstance(target, ast.Subscript) else target.func.value
            elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Subscript):
                target = stmt.targets[0].value
                if _nested_key(target, lambda n: isinstance(n, (ast.Name, ast.Attribute))) is not None:
                    # `X.setdefault(k, {})[k2] = v`, `X[k][k2] = v` edit X
                    target = target.value if isinstance(target, ast.Subscript) else target.func.value
            if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
                cls = owner if target.value.id == receiver else self.qualify(home, target.value.id) if target.value.id not in local else None
                found = self._plugin_definition(cls) if cls else None
                if found is not None and isinstance(found[1], ast.ClassDef):
                    qualname = cls[len(found[0]) + 1:]
                    record((found[0], f"{qualname}.{target.attr}"), dotted(target), stmt)
                continue
            if isinstance(target, ast.Name) and target.id not in local and target.id in self.table(home).names:
                owner, name = home, target.id
                for _ in range(8):  # a registry imported from the plugin module that defines it
                    binding = self.table(owner).names.get(name)
                    if binding is None or binding.kind != "from" or binding.target.split(":")[0] not in self.files:
                        break
                    owner, name = binding.target.split(":")
                record((owner, name), target.id, stmt)

    def _module_edits(self, module: str, name: str, value, after: list[ast.stmt], depth: int):
        """A module-level dict or list `name` as the module's later top-level statements leave
        it (edit_of, in order: a registry filled entry by entry); edits inside functions are not
        seen."""
        for stmt in after:
            value = self.edit_of(module, name, value, stmt, {}, depth)
        return value

    def edit_of(self, module: str, name: str, value, stmt: ast.stmt, env: dict, depth: int = 0):
        """The folded dict or list `value` of variable `name` after `stmt` (a copy): `X["k"] =
        v`, `X.update({…})`, `X.setdefault("k", v)`, `X.append(v)`, `X.extend([…])` applied, and
        `del X["k"]` / `X.pop("k")` taken out. Inside an `if`, loop, `try` or `with` the edits may
        run: the entries they add are kept beside the others (what a loop over X may meet), those
        they remove stay. An edit whose key or argument does not fold is left out."""
        if not isinstance(value, (dict, list)) or isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return value
        if name.partition(".")[0] not in self._names_of(stmt):
            return value  # (a statement that never names X cannot edit it)
        if (isinstance(stmt, ast.For) and not stmt.orelse and not any(isinstance(n, (ast.Break, ast.Return)) for n in walk(stmt))
                and isinstance(items := self.iterated(self.const(module, stmt.iter, env, depth + 1)), list) and len(items) <= 256):
            # a loop over folded values (`for k, (a, b) in TABLE.items(): X[k] = R(k, a, b)`): its
            # body's edits once per element, the target bound to it
            for item in items:
                inner = {**env, **bind(stmt.target, item)}
                for child in self._up_to_edit(stmt.body, name):
                    value = self.edit_of(module, name, value, child, self._bound_into(module, child, inner, depth), depth)
            return value
        taken = self._on_this_release(module, stmt.test, env, depth) if isinstance(stmt, ast.If) else None
        if taken is not None:  # `if Version(sglang.__version__) < Version("0.5.20"): X[k] = v`: one branch runs
            local = dict(env)
            for child in self._up_to_edit(stmt.body if taken else stmt.orelse, name):
                value = self.edit_of(module, name, value, child, self._bound_into(module, child, local, depth), depth)
            return value
        if any(getattr(stmt, field, None) for field in ("body", "orelse", "finalbody", "handlers", "cases")):
            return self._added_by(module, name, value, stmt, env, depth)
        return self._edited(module, name, value, stmt, env, depth, removals=True)

    def namespace_edit(self, module: str, name: str, value: Record, stmt: ast.stmt, env: dict) -> Record | object:
        """The namespace object `value` (a SimpleNamespace) of local `name` after `stmt`: `name.a =
        v` (or `setattr(name, "a", v)`) sets attribute a, as its __dict__ (vars()) then holds it; a
        compound statement that sets one of its attributes may or may not run it: not known
        (OPAQUE); any other statement leaves it as it was."""
        if name not in self._names_of(stmt):
            return value
        sets = []
        if isinstance(stmt, ast.Assign):
            sets = [(t.attr, stmt.value) for t in stmt.targets if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == name]
        elif (isinstance(stmt, ast.Expr) and isinstance(call := stmt.value, ast.Call) and dotted(call.func) == "setattr" and len(call.args) == 3
              and isinstance(call.args[0], ast.Name) and call.args[0].id == name):
            sets = [(self.const(module, call.args[1], env), call.args[2])]
        if sets:
            changed = dict(value.fields)
            for attr, given in sets:
                if not isinstance(attr, str):
                    return OPAQUE
                changed[attr] = self.const(module, given, env)
            return replace(value, fields=tuple(changed.items()))
        if any(getattr(stmt, field, None) for field in ("body", "orelse", "finalbody", "handlers", "cases")) and any(
                isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store) and isinstance(n.value, ast.Name) and n.value.id == name
                or isinstance(n, ast.Call) and dotted(n.func) == "setattr" and n.args and isinstance(n.args[0], ast.Name) and n.args[0].id == name
                for n in walk(stmt)):
            return OPAQUE
        return value

    def _names_of(self, stmt: ast.stmt) -> frozenset[str]:
        """The names a statement (and what it nests) reads or binds; once per statement."""
        held = self._stmt_names.get(id(stmt))
        if held is None or held[0] is not stmt:
            held = self._stmt_names[id(stmt)] = (stmt, frozenset(n.id for n in walk(stmt) if isinstance(n, ast.Name)))
        return held[1]

    def _on_this_release(self, module: str, test: ast.expr, env: dict, depth: int) -> bool | None:
        """Whether an `if` test holds on the release scanned: its folded parts and its comparisons
        of the running engine version (VersionCompare.holds against the index's release); None
        where anything else decides it. What a registry holds is then the release's: the judge
        still names the guards of everything else."""
        if depth > 20:
            return None
        folded = self._truth_of(module, test, env, depth + 1) if env else None  # (`if namespace.get("target"):` of a folded dict)
        return folded if folded is not None else kleene(self.condition(module, test, env, depth + 1), self._release_leaf)

    def release_binding(self, module: str, name: str) -> str | None:
        """The dotted path the module-level `name` of `module` is bound to on the release scanned
        where an `if` this release decides picks the binding (vllm-ascend _310p/fused_moe.py: `if
        vllm_version_is("0.23.0"): from …fused_moe.layer import FusedMoE as _Base` / `else: … _Base =
        torch.nn.Module`): what Python binds last, running the module's statements in order
        ("?text" for a value that is no name); None where no decided `if` chooses it, or what
        runs is not known (an `if` decided at run time, a loop, a try whose import may fail)."""
        tree = self.tree(module) if module in self.files else None
        if module not in self._chosen_by_ifs:
            self._chosen_by_ifs[module] = frozenset(n for s in (tree.body if tree else []) if isinstance(s, ast.If) for n in assigned_in(s))
        if name not in self._chosen_by_ifs[module]:
            return None
        if (module, name) not in self._release_bindings:
            self._release_bindings[module, name] = None  # (while it is folded: a test reading the name itself)
            found, chosen = self._bound_through(module, tree.body, name, None, 0)
            self._release_bindings[module, name] = found if chosen and isinstance(found, str) else None
        return self._release_bindings[module, name]

    def _bound_through(self, module: str, body: list[ast.stmt], name: str, value, depth: int) -> tuple[object, bool]:
        """(what `name` holds after `body` runs from `value`, whether a decided `if` chose it):
        a dotted path, "?text", None where nothing bound it, OPAQUE where it is not known."""
        chosen = False
        for stmt in body:
            imported = imported_names(module, self.files[module][1], [stmt]) if isinstance(stmt, (ast.Import, ast.ImportFrom)) else {}
            if name not in assigned_in(stmt) and name not in imported:
                continue
            if isinstance(stmt, ast.If):
                local = {name: Named(value)} if isinstance(value, str) and not value.startswith("?") else {}
                taken = self._on_this_release(module, stmt.test, local, depth) if depth < 20 else None
                if taken is None:
                    return OPAQUE, chosen
                value, inner = self._bound_through(module, stmt.body if taken else stmt.orelse, name, value, depth + 1)
                chosen = True
            elif imported:
                value = imported[name]
            elif isinstance(stmt, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                value = f"{module}.{name}"
            elif isinstance(stmt, ast.Try) and not stmt.finalbody:
                # the try's import where it resolves on this release (its handlers do not run)
                value, inner = self._bound_through(module, stmt.body, name, value, depth + 1)
                chosen = chosen or inner
                if not (isinstance(value, str) and is_upstream(value) and self.index.resolve(value).ok):
                    return OPAQUE, chosen
            elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                # a name or attribute names what it binds; a call's result is no name (`xgr = LazyLoader(…)`)
                value = self.qualify(module, dotted(stmt.value)) if isinstance(stmt.value, (ast.Name, ast.Attribute)) else None
                value = value or f"?{ast.unparse(stmt.value)}"
            else:
                return OPAQUE, chosen
            if value is OPAQUE:
                return OPAQUE, chosen
        return value, chosen

    def decided(self, value):
        """`value`, a Condition this release decides (`HAS_X = hasattr(SRTPlatform, "x")`) as its
        bool here (a dict keyed by it gives that entry); any other value as it is."""
        if isinstance(value, Condition) and (truth := kleene(value.cond, self._release_leaf)) is not None:
            return truth
        return value

    def _release_text(self) -> str:
        """The version string of the release scanned ("" when not known): what `sglang.__version__`
        and `importlib.metadata.version("sglang")` give where it is installed."""
        if self._release is None:
            self._release = upstream_version(self.index.source) or ""
        return self._release

    def defaults_of(self, fold: Callable[[], object]) -> tuple[object, tuple[str, ...]]:
        """(what `fold` folds to where every environment read with a default gives that default
        (`os.environ.get("X", d)`, `os.getenv("X", d)`: a deployment that sets none of them), the
        variables whose defaults it read). The memos of folded values are put back as they were
        after it, so nothing folded on the defaults outlives the call."""
        saved = {name: copy.copy(getattr(self, name)) for name in _FOLD_MEMOS if hasattr(self, name)}
        self._environment_defaults = []
        try:
            return fold(), tuple(dict.fromkeys(self._environment_defaults))
        finally:
            self._environment_defaults = None
            for name, memo in saved.items():
                setattr(self, name, memo)

    def _version_read(self, path: str):
        """What a read of the running version by `path` holds: RunningVersion for the version
        string (`vllm.__version__`), the release numbers of the release scanned as a folded tuple
        for the version tuple (`vllm.__version_tuple__`, setuptools-scm's `(0, 17, 0)`: compared,
        sliced, unpacked, formatted as Python does), OPAQUE for the tuple where the release is not
        known; None for any other path."""
        if path in profile().version_reads:
            return RunningVersion(parsed=False)
        if path not in profile().version_tuple_reads:
            return None
        from packaging.version import InvalidVersion, Version

        try:
            return list(Version(self._release_text()).release) if self._release_text() else OPAQUE
        except InvalidVersion:
            return OPAQUE

    def _release_leaf(self, leaf: Cond) -> bool | None:
        """A test of the release scanned, decided on it: a comparison of the running engine
        version (VersionCompare.holds), whether an upstream module is there (ModuleExists) or an
        upstream object has an attribute (HasAttr: `hasattr(SRTPlatform, "support_cuda_graph")`,
        the index's resolution), whether a try's upstream imports resolve (ImportsResolve, as
        judge.conditions decides it); None for any other test (run-time data)."""
        if isinstance(leaf, VersionCompare):
            return leaf.holds(self._release_text() or None)
        if isinstance(leaf, ModuleExists) and is_upstream(leaf.path):
            return self.index.module_exists(leaf.path)
        if isinstance(leaf, HasAttr) and is_upstream(leaf.owner):
            resolution = self.index.resolve(f"{leaf.owner}.{leaf.name}")
            return resolution.ok if resolution.outcome is not Outcome.undecided else None
        if isinstance(leaf, ImportsResolve) and leaf.imports and all(is_upstream(m) for m, _ in leaf.imports):
            # (a try-import flag, `HAS_X = True` after `from sglang.x import X`: as the judge decides it)
            found = [self.index.module_exists(m) and (name is None or self._release_leaf(HasAttr(m, name))) for m, name in leaf.imports]
            return False if False in found else None if None in found else True
        return None

    def _added_by(self, module: str, name: str, value, stmt: ast.stmt, env: dict, depth: int, guards: tuple = ()):
        """`value` with what `stmt` (and statements nested in it) may add to `name`; `guards`:
        the run-time tests of the `if`s around it (module, test, env, negated, depth: made
        GuardConds only where needed), under which an entry it sets replaces the one there before
        (OneOf). An `if` decided on this release runs its one branch."""
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) or name.partition(".")[0] not in self._names_of(stmt):
            return value
        if isinstance(stmt, ast.If):
            taken = self._on_this_release(module, stmt.test, env, depth)
            arms = [(stmt.body if taken else stmt.orelse, guards)] if taken is not None else [
                (stmt.body, (*guards, (module, stmt.test, env, False, depth))), (stmt.orelse, (*guards, (module, stmt.test, env, True, depth)))]
            for body, inner_guards in arms:
                local = dict(env)
                for child in self._up_to_edit(body, name):
                    value = self._added_by(module, name, value, child, self._bound_into(module, child, local, depth), depth, inner_guards)
            return value
        nested = [s for field in ("body", "orelse", "finalbody", "handlers", "cases") for s in getattr(stmt, field, []) or []]
        local = dict(env)
        for inner in nested:
            for child in self._up_to_edit(inner.body if isinstance(inner, (ast.ExceptHandler, getattr(ast, "match_case", ast.ExceptHandler))) else [inner], name):
                value = self._added_by(module, name, value, child, self._bound_into(module, child, local, depth), depth, guards)
        return value if nested else self._edited(module, name, value, stmt, env, depth, removals=False, guards=guards)

    def _up_to_edit(self, block: list[ast.stmt], name: str) -> list[ast.stmt]:
        """A block's statements up to the last that names `name` (what follows cannot edit it,
        nor bind a name such an edit reads)."""
        head = name.partition(".")[0]
        last = max((i for i, child in enumerate(block) if head in self._names_of(child)), default=-1)
        return block[:last + 1]

    def _bound_into(self, module: str, stmt: ast.stmt, env: dict, depth: int) -> dict:
        """`env` (changed in place) with the names an import statement or a plain assignment
        binds, as later statements of the block see them (`if is_310p(): from .ops import A310;
        X["k"] = A310`; `spec = getattr(fn, "__marker__", None)` in a loop's body)."""
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            env.update({name: Named(path) for name, path in imported_names(module, self.files[module][1], [stmt]).items()})
        elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], (ast.Name, ast.Tuple, ast.List)):
            env.update({name: OPAQUE for name in assigned(stmt.targets[0])} | bind(stmt.targets[0], self.const(module, stmt.value, env, depth + 1)))
        return env

    def _option_guard(self, module: str, test: ast.expr, env: dict, depth: int, negate: bool = False) -> GuardCond:
        """An `if` test choosing between a table's entries, as a guard of the option it picks; a
        test the scan cannot read is one named atom (Unknown, by file position), so that the
        option under it and the one under its negation are seen to cover every run."""
        guard = self._guard(module, test, env, depth=depth + 1)
        if any(isinstance(leaf, Undecided) for leaf in leaves(guard.cond)):
            guard = GuardCond(Unknown(f"{module}:{test.lineno}:{test.col_offset} {guard.text}"), guard.text, guard.line)
        return GuardCond(folded(Not(guard.cond)), f"not ({guard.text})", guard.line) if negate else guard

    def _may_replace(self, entries: dict, new: dict, tests: tuple) -> dict:
        """`entries` after an edit setting `new`'s keys under the run-time `tests` of the `if`s
        around it (_added_by): a key already there with another value may hold either (OneOf: the
        new value under those tests, each earlier option where they do not all hold); with no
        tests the new values replace."""
        merged = dict(entries)
        for key, value in new.items():
            if not tests or key not in entries or entries[key] == value:
                merged[key] = value
                continue
            guards = tuple(self._option_guard(module, test, env, depth, negate=negated) for module, test, env, negated, depth in tests)
            held = entries[key].options if isinstance(entries[key], OneOf) else ((entries[key], ()),)
            conds = tuple(g.cond for g in guards)
            text = " and ".join(g.text for g in guards)
            otherwise = GuardCond(folded(Not(conds[0] if len(conds) == 1 else AllOf(conds))), f"not ({text})", guards[0].line)
            merged[key] = OneOf((*((option, (*before, otherwise)) for option, before in held), (value, guards)))
        return merged

    def _edited(self, module: str, name: str, value, stmt: ast.stmt, env: dict, depth: int, removals: bool, guards: tuple = ()):
        """One simple statement's edit of `name` (edit_of); `removals`: whether a removal applies;
        `guards`: the run-time tests it runs under (_may_replace)."""
        def is_name(node: ast.AST) -> bool:  # `REGISTRY`, or a class attribute `Base._registry`
            return isinstance(node, (ast.Name, ast.Attribute)) and dotted(node) == name

        call = stmt.value if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) else None
        inner = _nested_key(stmt.targets[0].value, is_name) if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Subscript) else None
        if inner is not None and isinstance(value, dict):
            # `X.setdefault(k, {})[k2] = v`, `X[k][k2] = v` of a dict of dicts: the dict at k gains k2
            key, key2 = self.const(module, inner, env, depth + 1), self.const(module, stmt.targets[0].slice, env, depth + 1)
            if isinstance(key, (str, int)) and isinstance(key2, (str, int)) and isinstance(value.get(key, {}), dict):
                return {**value, key: {**value.get(key, {}), key2: self.const(module, stmt.value, env, depth + 1)}}
            return value
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Subscript) and is_name(stmt.targets[0].value):
            key = _plain_key(self.const(module, stmt.targets[0].slice, env, depth + 1))
            if isinstance(value, dict) and key is not None:
                return self._may_replace(value, {key: self.const(module, stmt.value, env, depth + 1)}, guards)
            return value
        if isinstance(stmt, ast.Delete) and removals:
            for target in stmt.targets:
                if isinstance(target, ast.Subscript) and is_name(target.value) and isinstance(value, dict):
                    key = self.const(module, target.slice, env, depth + 1)
                    value = {k: v for k, v in value.items() if k != key}
            return value
        grouped = _grouped_key(call, is_name)
        if grouped is not None and isinstance(value, dict):
            # `X[k].append(v)` on a defaultdict(list), `X.setdefault(k, []).append(v)`: the list at k grows
            key = self.const(module, grouped, env, depth + 1)
            args = [self.const(module, a, env, depth + 1) for a in call.args]
            # (a key may be an enum member the table groups by: `table[HookType.AFTER].append(…)`)
            if not isinstance(key, (str, int, Named)) or any(a is OPAQUE for a in args) or not isinstance(value.get(key, []), list):
                return value
            items = [*args] if call.func.attr == "append" and len(args) == 1 else args[0] if len(args) == 1 and isinstance(args[0], list) else None
            return {**value, key: [*value.get(key, []), *items]} if items is not None else value
        if call is None or not (isinstance(call.func, ast.Attribute) and is_name(call.func.value)) or call.keywords:
            return value
        args = [self.const(module, a, env, depth + 1) for a in call.args]
        if any(a is OPAQUE for a in args):
            return value
        edit = call.func.attr
        if isinstance(value, dict) and edit == "update" and len(args) == 1 and isinstance(args[0], dict):
            return self._may_replace(value, args[0], guards)
        if isinstance(value, dict) and edit == "setdefault" and len(args) == 2 and isinstance(args[0], (str, int)):
            return {args[0]: args[1], **value}
        if isinstance(value, dict) and edit == "pop" and removals and args and isinstance(args[0], (str, int)):
            return {k: v for k, v in value.items() if k != args[0]}
        if isinstance(value, list) and edit == "append" and len(args) == 1:
            return [*value, args[0]]
        if isinstance(value, list) and edit == "extend" and len(args) == 1 and isinstance(args[0], list):
            return [*value, *args[0]]
        return value

    def pattern_bindings(self, module: str, value, pattern: ast.pattern, env: dict):
        """What a `case` pattern binds when it matches the folded `value` (PEP 634): a dict of
        captures; None when it certainly does not match; OPAQUE when that is not decided. A
        mapping pattern of constant keys (`{"module": str(path), "impl": impl}`), a sequence
        pattern of a folded tuple row, captures and wildcards, `str(x)`-style builtin class
        patterns on plain values, literal values."""
        if isinstance(pattern, ast.MatchAs):
            if pattern.pattern is None:
                return {pattern.name: value} if pattern.name else {}
            inner = self.pattern_bindings(module, value, pattern.pattern, env)
            return {**inner, pattern.name: value} if isinstance(inner, dict) and pattern.name else inner
        if isinstance(pattern, ast.MatchValue):
            wanted = self.const(module, pattern.value, env)
            if value is OPAQUE or wanted is OPAQUE or not isinstance(wanted, (str, int, float, bool)):
                return OPAQUE
            return {} if value == wanted else None
        if (isinstance(pattern, ast.MatchClass) and isinstance(pattern.cls, ast.Name) and pattern.cls.id in _PATTERN_TYPES
                and pattern.cls.id not in env and len(pattern.patterns) <= 1 and not pattern.kwd_patterns):
            if value is OPAQUE or not isinstance(value, (str, int, float, bool, list, dict)) and value is not None:
                return OPAQUE  # (a function, a class, a module: not the builtin's instance; not folded: not known)
            if not isinstance(value, _PATTERN_TYPES[pattern.cls.id]) or isinstance(value, bool) and pattern.cls.id == "int":
                return None
            return self.pattern_bindings(module, value, pattern.patterns[0], env) if pattern.patterns else {}
        if isinstance(pattern, ast.MatchSequence) and isinstance(value, list) and not any(isinstance(p, ast.MatchStar) for p in pattern.patterns):
            if len(value) != len(pattern.patterns):
                return None
            bound = {}
            for item, sub in zip(value, pattern.patterns):
                inner = self.pattern_bindings(module, item, sub, env)
                if not isinstance(inner, dict):
                    return inner
                bound.update(inner)
            return bound
        if isinstance(pattern, ast.MatchMapping) and isinstance(value, dict) and all(isinstance(k, ast.Constant) for k in pattern.keys):
            bound: dict = {}
            for key, sub in zip(pattern.keys, pattern.patterns):
                if key.value not in value:
                    return None
                inner = self.pattern_bindings(module, value[key.value], sub, env)
                if not isinstance(inner, dict):
                    return inner
                bound.update(inner)
            if pattern.rest:
                bound[pattern.rest] = {k: v for k, v in value.items() if k not in {key.value for key in pattern.keys}}
            return bound
        return OPAQUE

    def _value_truth(self, module: str, value) -> bool | None:
        """Python's truth of a folded value: a plain value's own; a plugin function or class is
        true; an upstream function, class or module a caught import binds (None where the import
        fails: none_fallbacks) is true exactly where the import resolves on this release. None
        for anything else (an upstream constant, a value not folded)."""
        if value is None or isinstance(value, (str, int, float, bool)):
            return bool(value)
        if not isinstance(value, Named):
            return None
        if not is_upstream(value.path):
            return True
        fallback = self.none_fallbacks.get((module, value.path))
        if isinstance(fallback, ImportsResolve) and fallback.imports and (self._def_or_class(value.path) in ("def", "class") or self.index.module_exists(value.path)):
            return kleene(fallback, self._release_leaf)
        return None

    def _there(self, module: str, value) -> bool | None:
        """Whether a folded `sys.modules.get(M)` / `getattr(m, "x", None)` value is there on this
        release (none_fallbacks: the module exists, the attribute resolves); None for any other value."""
        found = self.none_fallbacks.get((module, value.path)) if isinstance(value, Named) else None
        if isinstance(found, ModuleExists):
            return self.index.module_exists(found.path)
        if isinstance(found, HasAttr):
            resolution = self.index.resolve(f"{found.owner}.{found.name}")
            return resolution.ok if resolution.outcome is not Outcome.undecided else None
        return None

    def _entry_points(self, group: str) -> list[Record]:
        """The plugin's own entry points of `group` (importlib.metadata reads what its packaging
        declares), each an EntryPoint record: name, value, group, and the module and attr its
        value names (`pkg.mod:attr`)."""
        if group not in self._groups:
            self._groups[group] = [Record(ENTRY_POINT_CLASS, (("name", ep.name), ("value", ep.value), ("group", group),
                                                               ("module", ep.value.partition(":")[0]), ("attr", ep.value.partition(":")[2] or None)))
                                   for ep in read_entry_points(self.scan.root, (group,))]
        return self._groups[group]

    def _name_attribute(self, path: str, attr: str) -> str | None:
        """`__name__` of a module, `__module__` / `__qualname__` / `__name__` of a class or
        function, for a plugin or upstream one named by `path` (where it is defined, as Python
        sets them: the data model's "Special attributes"); None when `path` is none of these."""
        if path in self.files or any(name.startswith(path + ".") for name in self.files):  # a namespace package too
            found = ("module", path, "")
        elif (plugin := self._plugin_definition(path)) is not None:
            found = ("class", plugin[0], path[len(plugin[0]) + 1:])
        elif is_upstream(path) and (ref := self.upstream_ref(path)) is not None and ref.kind in ("module", "class", "function"):
            found = (ref.kind, ref.module, ref.qualname)
        else:
            return None
        kind, owner, qualname = found
        if kind == "module":
            return owner if attr == "__name__" else None
        return {"__module__": owner, "__qualname__": qualname, "__name__": qualname.rsplit(".", 1)[-1]}[attr]

    def _plugin_definition(self, path: str) -> tuple[str, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef] | None:
        """(module, definition) of the plugin class or function `path` (`pkg.mod.Class`, a
        nested class by its qualname, `pkg.mod.factory.f@22` the def of f at line 22 in a branch
        of factory), or None."""
        module, _, qualname = path.rpartition(".")
        while module and module not in self.files:
            module, _, head = module.rpartition(".")
            qualname = f"{head}.{qualname}"
        tree = self.tree(module) if module else None
        body, found = tree.body if tree else [], None
        for at, part in enumerate(qualname.split(".")):
            name, _, line = part.partition("@")
            if line.isdigit() and found is not None:
                # `f@22`: the def of that name at that line in a branch of the body (one of several
                # alternatives a factory's test chooses, _returned_alternatives)
                found = next((n for n in walk(found) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                              and n.name == name and n.lineno == int(line)), None)
                if found is None:
                    return None
                body = found.body
                continue
            found = next((n for n in body if isinstance(n, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == part), None)
            if found is None and at == 0 and tree is not None:
                # defined inside a module-level `if`/`try` only: the last definition a branch this
                # release runs makes (`if hasattr(Sampler, "x"): class A … else: class A …`)
                found = self._branch_definitions(module, tree).get(part)
            if found is None:
                return None
            body = found.body
        return (module, found) if found is not None else None

    def sole_object(self, path: str, depth: int = 0) -> Record | None:
        """The one object of the plugin class `path` a run makes, where the plugin names the
        class exactly once and that is a call of it (`KERNELS = KernelTable()`, `t = Table(p)` in
        a function): the Record that construction folds to (_record: what its `__init__` stores,
        a list or dict field with what the plugin's calls of its methods add, _record_attribute).
        None where the class is named anywhere else too (a base, an isinstance, a registration,
        an annotation, a second construction, a string naming it): `self` in its methods may then
        be another object, made elsewhere or by upstream."""
        if path in self._sole_objects or depth > 12:
            return self._sole_objects.get(path)
        self._sole_objects[path] = None  # (a field folding through its own object: not known yet)
        name = path.rpartition(".")[2]
        refs = self._class_references().get(name, [])
        if len(refs) != 1 or not isinstance(refs[0][1], ast.Call):
            return None
        module, call, function = refs[0]
        env = {}
        if function is not None:  # the function's locals are not module names; its own imports are
            env = {n: OPAQUE for n in local_names(function) | {p.name for p in function_params(function.args)}}
            env |= {n: Named(p) for n, p in imported_names(module, self.files[module][1], function.body).items()}
        if self.qualify(module, dotted(call.func), env) != path:
            return None
        self._sole_objects[path] = made = self._record(module, path, call, env, depth + 1)
        return made

    def _class_references(self) -> dict[str, list[tuple[str, ast.AST, ast.FunctionDef | ast.AsyncFunctionDef | None]]]:
        """Short name of each plugin class -> every place the plugin names it: (module, the call
        where the name is called, else the name's node, the enclosing function or None). A name
        counts by its spelling (`Table`, `mod.Table`, an `import … as T` alias of it, a string
        ending in `.Table` or `:Table`) without resolving it, so a place is never missed; type
        hints are left out (they make and hand on no object)."""
        if self._class_refs is not None:
            return self._class_refs
        refs: dict[str, list] = {}
        trees = {m: t for m in self.files if (t := self.tree(m)) is not None}
        classes = {n.name for t in trees.values() for n in walk(t) if isinstance(n, ast.ClassDef)}
        for module, tree in trees.items():
            aliases = {a.asname: a.name.rpartition(".")[2] for n in walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))
                       for a in n.names if a.asname and a.name.rpartition(".")[2] in classes}
            called = {id(n.func): n for n in walk(tree) if isinstance(n, ast.Call)}
            stack: list[tuple[ast.AST, ast.FunctionDef | ast.AsyncFunctionDef | None]] = [(tree, None)]
            while stack:
                node, function = stack.pop()
                name = (node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else
                        node.value.rpartition(":")[2].rpartition(".")[2] if isinstance(node, ast.Constant) and isinstance(node.value, str) else None)
                name = aliases.get(name, name)
                if name in classes:
                    refs.setdefault(name, []).append((module, called.get(id(node), node), function))
                inner = node if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else function
                hints = {id(getattr(node, f, None)) for f in ("annotation", "returns")} - {id(None)}  # (a type hint makes no object)
                stack += [(child, inner) for child in ast.iter_child_nodes(node) if id(child) not in hints]
        self._class_refs = refs
        return refs

    def _set_on_instances(self, path: str, attr: str, after_init: bool = False) -> bool:
        """Whether a method of the plugin class `path` or of a plugin base writes `self.<attr>`
        (or `setattr(self, "attr", …)`), so `self.attr` need not be the class's constant; with
        `after_init`, a method other than `__init__` (so the field need not hold what the
        construction stored). Once per (class, name, after_init): the plugin does not change
        while it is scanned."""
        key = (path, attr, after_init)
        if key not in self._instance_writes:
            self._instance_writes[key] = self._writes_on_instances(path, attr, after_init)
        return self._instance_writes[key]

    def _writes_on_instances(self, path: str, attr: str, after_init: bool) -> bool:
        queue, seen = [path], set()
        while queue:
            current = queue.pop()
            found = self._plugin_definition(current) if current not in seen else None
            seen.add(current)
            if found is None or not isinstance(found[1], ast.ClassDef):
                continue
            module, cls = found
            for node in (n for stmt in cls.body if not (after_init and getattr(stmt, "name", None) == "__init__") for n in walk(stmt)):
                if isinstance(node, ast.Attribute) and node.attr == attr and isinstance(node.ctx, (ast.Store, ast.Del)):
                    return True
                if (isinstance(node, ast.Call) and dotted(node.func) == "setattr" and len(node.args) >= 2
                        and isinstance(node.args[1], ast.Constant) and node.args[1].value == attr):
                    return True
            queue += [q for b in cls.bases if (q := self.qualify(module, dotted(b)) if dotted(b) else None)]
        return False

    def _flag_members(self, value) -> frozenset[str] | None:
        """The members (paths) a folded enum.Flag value holds: a FlagSet's, or a member of a
        plugin enum deriving from enum.Flag / enum.IntFlag; None for any other value."""
        if isinstance(value, FlagSet):
            return value.members
        owner, _, member = value.path.rpartition(".") if isinstance(value, Named) else ("", "", "")
        if not owner or member not in (self.enum_members(owner) or {}):
            return None
        found, seen = [owner], set()
        while found:  # (the Flag base may be a plugin enum's base)
            path = found.pop()
            definition = self._plugin_definition(path) if path not in seen else None
            seen.add(path)
            if definition is not None and isinstance(definition[1], ast.ClassDef):
                bases = [self.qualify(definition[0], dotted(b)) or dotted(b) or "" for b in definition[1].bases]
                if any(b in ("enum.Flag", "enum.IntFlag") for b in bases):
                    return frozenset({value.path})
                found += bases
        return None

    def enum_kind(self, path: str, depth: int = 0) -> str | None:
        """"str" for a plugin enum class whose members are strings (a `str` mix-in, StrEnum),
        "enum" for another plugin enum.Enum subclass, None for anything else."""
        found = self._plugin_definition(path) if depth <= 8 and not is_upstream(path) else None
        if found is None or not isinstance(found[1], ast.ClassDef):
            return None
        module, cls = found
        bases = [self.qualify(module, dotted(b)) or dotted(b) or "" for b in cls.bases]
        kinds = [self.enum_kind(b, depth + 1) for b in bases]
        if not any(kinds) and not any(b in _ENUM_BASES for b in bases):
            return None
        return "str" if "str" in kinds or any(b in ("str", "enum.StrEnum") for b in bases) else "enum"

    def enum_members(self, path: str, depth: int = 0) -> dict[str, object] | None:
        """{member name: value} of the plugin enum class `path` in definition order (the
        class-body bindings that are no dunder, sunder or function: the enum docs' rules), or
        None when `path` is no plugin enum; a value that does not fold (`auto()`) is OPAQUE."""
        if self.enum_kind(path) is None:
            return None
        module, cls = self._plugin_definition(path)
        members: dict[str, object] = {}
        for stmt in cls.body:
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                name = stmt.targets[0].id
                if not name.startswith("_") and not isinstance(stmt.value, ast.Lambda):
                    members[name] = self._class_body_value(module, path, cls.body, cls.body.index(stmt) + 1, name, depth + 1)
        return members

    def _module_members(self, module: str, predicate: str | None, depth: int):
        """`inspect.getmembers(module, inspect.isfunction)` (or `isclass`) of a plugin module:
        [name, Named(path)] of each global of that kind, sorted by name as getmembers sorts (the
        inspect docs): its defs (classes), and names bound to a function (class) elsewhere, the
        plugin's by its definition, upstream's by the index; a lambda is a function. A value made
        by a call counts as neither. OPAQUE for another predicate, a module with `__getattr__` or
        a star import, or a name whose kind is not known."""
        kind = {"inspect.isfunction": "def", "inspect.isclass": "class"}.get(predicate or "")
        table = self.table(module)
        if kind is None or table.has_getattr or table.star_imports or depth > 20:
            return OPAQUE
        tree = self.tree(module)
        values = {t.id: s.value for s in (tree.body if tree else []) if isinstance(s, ast.Assign) for t in s.targets if isinstance(t, ast.Name)}
        found = []
        for name, binding in sorted(table.names.items()):
            if binding.kind in ("def", "class"):
                path, is_kind = f"{module}.{name}", binding.kind == kind
            elif binding.kind in ("from", "alias") or binding.kind == "value" and isinstance(values.get(name), (ast.Name, ast.Attribute, ast.Lambda)):
                if isinstance(values.get(name), ast.Lambda):
                    path, is_kind = f"{module}.{name}", kind == "def"
                else:
                    path = binding.target.replace(":", ".") if binding.kind == "from" else self.qualify(module, binding.target or dotted(values[name]) or "") or ""
                    what = self._def_or_class(path)
                    if what is OPAQUE:
                        return OPAQUE  # bound to something whose kind is not known
                    is_kind = what == kind
            else:
                continue  # a module, or a value a call made
            if is_kind:
                found.append([name, Named(path)])
        return found

    def _def_or_class(self, path: str):
        """"def" or "class" for the plugin's or upstream's function or class at `path`; None for
        anything else upstream resolves to, or a name of neither (another library's); OPAQUE for a
        plugin binding that is neither, or an upstream path that does not resolve."""
        if path and not is_upstream(path) and (definition := self._plugin_definition(path)) is not None:
            return ("def" if isinstance(definition[1], (ast.FunctionDef, ast.AsyncFunctionDef))
                    else "class" if isinstance(definition[1], ast.ClassDef) else OPAQUE)
        if path and is_upstream(path):
            resolved = self.index.resolve(path)
            return {"function": "def", "class": "class"}.get(resolved.ref.kind) if resolved.ok else OPAQUE
        return None

    def _function_attribute(self, path: str, attr: str, depth: int):
        """What the plugin function `path` holds as attribute `attr`, set by its decorators: a
        decorator factory call (`@mark("m", kind)`) whose returned function sets
        `<param>.attr = value` on what it decorates, folded with the factory's arguments;
        _FELL_THROUGH when neither a decorator nor a statement of its module sets it (the default
        applies); None when not known."""
        found = self._plugin_definition(path) if not is_upstream(path) and depth < 20 else None
        if found is None or not isinstance(found[1], (ast.FunctionDef, ast.AsyncFunctionDef)):
            return None
        home, definition = found
        value = _FELL_THROUGH
        for decorator in reversed(definition.decorator_list):  # (applied bottom-up: the last setter wins)
            factory = self._plugin_function(self.qualify(home, dotted(decorator.func) or "") or "") if isinstance(decorator, ast.Call) else None
            inner = returned_function(factory[1]) if factory is not None else None
            first = [a.arg for a in (*inner.args.posonlyargs, *inner.args.args)][:1] if inner is not None else []
            target = first[0] if first else None
            # `fn.attr = v`, or `setattr(fn, NAME, v)` with NAME folding to attr where the factory is written
            sets = [stmt.value for stmt in inner.body if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Attribute)
                    and stmt.targets[0].attr == attr and dotted(stmt.targets[0].value) == target] if inner is not None else []
            sets += [stmt.value.args[2] for stmt in inner.body if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)
                     and dotted(stmt.value.func) == "setattr" and len(stmt.value.args) == 3 and dotted(stmt.value.args[0]) == target
                     and self.const(factory[0], stmt.value.args[1], {}, depth + 1) == attr] if inner is not None else []
            if sets:
                local = self._called_with(factory[0], factory[1], [self.const(home, a, {}, depth + 1) for a in decorator.args], decorator.keywords, home, {}, depth)
                value = self.const(factory[0], sets[-1], {**local, first[0]: Named(path)}, depth + 1)
            elif isinstance(decorator, ast.Call) and inner is None and (dotted(decorator.func) or "").rpartition(".")[2] not in ("staticmethod", "classmethod"):
                return None  # a decorator the scan cannot read may set it
        stored = any(isinstance(n, ast.Attribute) and n.attr == attr and isinstance(n.ctx, ast.Store) and dotted(n.value) == definition.name
                     for n in walk(self.tree(home)))
        return None if stored else value

    def _enum_lookup(self, path: str, name: str | None = None, value=OPAQUE):
        """The member of the plugin enum class `path` named `name`, or the first whose value is
        `value` (folded, immutable): a str enum's as MemberText, another's by path (as
        class_constant and iteration give them); None when `path` is no plugin enum or none
        matches (a `_missing_` hook is not run)."""
        members = self.enum_members(path) if not is_upstream(path) and path else None
        if not members:
            return None
        if name is None:
            if value is OPAQUE or not (value is None or isinstance(value, (str, int, float, bool))):
                return None
            name = next((m for m, v in members.items() if (v is None or isinstance(v, (str, int, float, bool))) and v == value), None)
            if name is None:
                return None
        if name not in members:
            return None
        held = members[name]
        return MemberText(held, f"{path}.{name}") if self.enum_kind(path) == "str" and isinstance(held, str) else Named(f"{path}.{name}")

    def _member_class(self, value) -> str | None:
        """The plugin enum class whose member `value` is (Named("pkg.E.M") -> "pkg.E"), else None."""
        if isinstance(value, MemberText):
            return value.member.rpartition(".")[0]
        owner, _, member = value.path.rpartition(".") if isinstance(value, Named) and not is_upstream(value.path) else ("", "", "")
        return owner if owner and member in (self.enum_members(owner) or {}) else None

    def _enum_attribute(self, path: str, attr: str, depth: int):
        """`E.M.value` / `E.M.name` of a plugin enum member `path` ("pkg.E.M"), or an attribute
        the enum's `__init__` sets from the member's value (a tuple value is passed as the
        arguments: the enum docs, "When to use __new__() vs. __init__()"); OPAQUE otherwise."""
        owner, _, member = path.rpartition(".")
        members = self.enum_members(owner, depth) if owner else None
        if members is None or member not in members:
            return OPAQUE
        if attr in ("value", "name"):
            return members[member] if attr == "value" else member
        method = self._record_method(Record(owner, ()), attr, property_=True)
        if method is not None and depth < 20:  # a property of the enum (`kernel.device_name`), the member as its receiver
            return self.const(method[0], method[1], {method[2]: Named(path)}, depth + 1)
        found = self._plugin_definition(owner)
        init = next((n for n in found[1].body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None) if found else None
        params = [p.name for p in function_params(init.args)] if init is not None else []
        value = members[member]
        if len(params) < 2 or value is OPAQUE:
            return OPAQUE
        local = dict(zip(params[1:], value if isinstance(value, list) else [value]))
        sets = [stmt.value for stmt in init.body if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
                and isinstance(stmt.targets[0], ast.Attribute) and stmt.targets[0].attr == attr and dotted(stmt.targets[0].value) == params[0]]
        return self.const(found[0], sets[-1], local, depth + 1) if sets and depth < 20 else OPAQUE

    def class_constant(self, path: str, attr: str, depth: int):
        """What `attr` holds in the body of the plugin class `path` (`platform_cls = "pkg.X"`,
        the last binding in the body), else in its plugin bases in order; OPAQUE when not known.
        A member of a plugin enum of strings is its value (the member is that str); of another
        enum, OPAQUE (its `.value` folds: _enum_attribute)."""
        found = self._plugin_definition(path) if depth <= 20 else None
        if found is None or not isinstance(found[1], ast.ClassDef):
            return self._enum_attribute(path, attr, depth)
        module, cls = found
        kind = self.enum_kind(path)
        if kind is not None:
            members = self.enum_members(path, depth)
            if attr in members:
                value = members[attr]
                return (MemberText(value, f"{path}.{attr}") if isinstance(value, str) else value) if kind == "str" else OPAQUE
        held = self._class_body_value(module, path, cls.body, len(cls.body), attr, depth)
        if held is not None:  # a list or dict the plugin fills from elsewhere (`Base._registry.append(cls)`)
            return self.filled(module, f"{path[len(module) + 1:]}.{attr}", held, depth)
        held = self._set_by_init_subclass(path, module, cls, attr, depth)
        if held is not OPAQUE:
            return held
        for base in cls.bases:
            held = self.class_constant(self.qualify(module, dotted(base)) or "", attr, depth + 1)
            if held is not OPAQUE:
                return held
        return OPAQUE

    def _set_by_init_subclass(self, path: str, module: str, cls: ast.ClassDef, attr: str, depth: int):
        """What `cls.<attr> = <value>` in the `__init_subclass__` of a plugin base (its own body,
        the last such statement) gives the class `path`: the class statement's keywords are that
        method's parameters, their defaults where not given (object.__init_subclass__ docs:
        `class H(Base, target="…")`); OPAQUE when no base sets it so."""
        for home, _, hook in self._subclass_hooks(module, cls) if depth <= 20 else ():
            args = hook.args
            positional = [*args.posonlyargs, *args.args]
            sets = [stmt.value for stmt in hook.body if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
                    and isinstance(stmt.targets[0], ast.Attribute) and stmt.targets[0].attr == attr
                    and isinstance(stmt.targets[0].value, ast.Name) and stmt.targets[0].value.id == positional[0].arg] if positional else []
            if sets:
                given = {k.arg: k.value for k in cls.keywords if k.arg}
                defaults = dict(zip([a.arg for a in positional][len(positional) - len(args.defaults):], args.defaults))
                defaults |= {a.arg: d for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None}
                env = {positional[0].arg: Named(path)}
                for name in [a.arg for a in positional[1:]] + [a.arg for a in args.kwonlyargs]:
                    env[name] = (self.const(module, given[name], {}, depth + 1) if name in given
                                 else self.const(home, defaults[name], {}, depth + 1) if name in defaults else OPAQUE)
                return self.const(home, sets[-1], env, depth + 1)
        return OPAQUE

    def _class_body_value(self, module: str, path: str, body: list[ast.stmt], end: int, name: str, depth: int):
        """What `name` holds after the first `end` statements of a class body (the last binding
        wins), folded in the class's own scope: a name the value reads that the body bound before
        is that binding (`B = A + ".x"` after `A = "pkg"`), any other a module name. None when
        the body does not bind it there."""
        for i in range(end - 1, -1, -1):
            stmt = body[i]
            value = None
            if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in stmt.targets):
                value = stmt.value
            elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.target.id == name and stmt.value is not None:
                value = stmt.value
            elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and stmt.name == name:
                return Named(f"{path}.{name}")
            if value is not None:
                env = {}
                if depth < 20:
                    for read in {n.id for n in walk(value) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}:
                        bound = self._class_body_value(module, path, body, i, read, depth + 1)
                        if bound is not None:
                            env[read] = bound
                return self.const(module, value, env, depth + 1)
        return None

    # ------------------------------------------------------------- guard conditions

    def condition(self, module: str, node: ast.AST, env: dict, depth: int = 0, local: frozenset[str] = frozenset()) -> Cond:
        """A guard's test as a version-independent condition (see Cond). `local`: the names local
        to the functions the test sits in (parameters, assigned names; `<self.x>` placeholders
        count too): a test of those values alone is Runtime, one the scan cannot read otherwise
        is UNDECIDED."""
        if depth > 20:
            return UNDECIDED
        if is_main_test(node) and "__name__" not in env:
            # true only where the module runs as a script: one the team runs with `python -m`
            return Const(module in self.main_modules)
        if isinstance(node, ast.BoolOp):
            conds = tuple(self.condition(module, v, env, depth + 1, local) for v in node.values)
            return folded(AllOf(conds) if isinstance(node.op, ast.And) else AnyOf(conds))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return folded(Not(self.condition(module, node.operand, env, depth + 1, local)))
        if isinstance(node, ast.NamedExpr):  # `(m := sys.modules.get(N))`: tests what it binds
            return self.condition(module, node.value, env, depth + 1, local)
        if isinstance(node, ast.Name) and isinstance(held := env.get(node.id), Named) and isinstance(
                fallback := self.none_fallbacks.get((module, held.path)), ImportsResolve) and fallback.imports:
            return fallback  # `if f:` / `f(x) if f else d` of a caught import's None fallback: the import resolved
        if isinstance(node, ast.Call):
            name = dotted(node.func) or ""
            qualified = self.qualify(module, name, env) or name
            if isinstance(node.func, ast.Attribute) and node.func.attr == "get" and len(node.args) == 1 and not node.keywords:
                key, registry = self.const(module, node.args[0], env, depth + 1), self.qualify(module, dotted(node.func.value), env)
                if isinstance(key, str) and is_upstream(registry):  # `if ATTENTION_BACKENDS.get("dsa"):`
                    return HasKey(registry, key)
                if is_upstream(registry) and not isinstance(key, str) and (isinstance(self.condition(module, node.args[0], env, depth + 1, local), Runtime)
                                                                or local and runtime_test(node.args[0], local)):
                    # `ATTENTION_BACKENDS.get(os.environ.get("X", ""))`: which entry, if any, a run picks
                    return Runtime(ast.unparse(node))
            if name == "getattr" and qualified == name and len(node.args) >= 2 and _plain(held := self.const(module, node, env, depth + 1)):
                return Const(bool(held))  # `if not getattr(TOGGLES, f.name):` of a plugin record's plain field: its truth
            if name in ("hasattr", "getattr") and len(node.args) >= 2:
                owner = self.qualify(module, dotted(node.args[0]), env)
                attr = self.const(module, node.args[1], env, depth + 1)
                instance = self._instance(module, node.args[0], env)
                if instance is not None and isinstance(attr, str):
                    return FieldPresent(instance.path, attr) if instance.path else ParamFieldPresent(instance.function, instance.param, attr)
                if is_upstream(owner) and isinstance(attr, str):
                    return HasAttr(owner, attr)
                return UNDECIDED
            if name == "isinstance" and qualified == name and len(node.args) == 2 and not node.keywords and (
                    decided := self._builtin_isinstance(module, node.args[0], node.args[1], env, depth)) is not None:
                return Const(decided)
            if not node.keywords and (name == "isinstance" and qualified == name and len(node.args) == 2
                                      and self.qualify(module, dotted(node.args[1]) or "", env) == "types.ModuleType"
                                      or qualified == "inspect.ismodule" and len(node.args) == 1):
                # `isinstance(sys.modules.get(M), ModuleType)`, `inspect.ismodule(…)`: a module exactly
                # when it is loaded, as `is not None` tests (None otherwise: the dict.get default)
                held = env.get(node.args[0].id) if isinstance(node.args[0], ast.Name) else self.const(module, node.args[0], env, depth + 1)
                found = self.none_fallbacks.get((module, held.path)) if isinstance(held, Named) else None
                if isinstance(found, ModuleExists):
                    return found
            if name == "callable" and len(node.args) == 1:
                return self.condition(module, node.args[0], env, depth + 1, local) if isinstance(node.args[0], ast.Call) else UNDECIDED
            if qualified.endswith("util.find_spec") and node.args:
                path = self.const(module, node.args[0], env, depth + 1)
                return ModuleExists(path) if isinstance(path, str) and is_upstream(path) else UNDECIDED
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            left, op, right = node.left, node.ops[0], node.comparators[0]
            if isinstance(left, ast.NamedExpr):
                left = left.target
            choice = self._chosen(module, left, env) if isinstance(op, (ast.Eq, ast.NotEq)) else None
            if choice is not None:
                # `pick() == "x"` where `pick()` returns `a if t else b`: (t and a == "x") or (not t and b == "x")
                home, chosen, inner = choice
                test = self.condition(home, chosen.test, inner, depth + 1, local)
                arms = [self.condition(module, ast.copy_location(ast.Compare(left=arm, ops=[op], comparators=[right]), node), {**env, **inner}, depth + 1, local)
                        for arm in (chosen.body, chosen.orelse)]
                return folded(AnyOf((folded(AllOf((test, arms[0]))), folded(AllOf((folded(Not(test)), arms[1]))))))
            if isinstance(op, (ast.Is, ast.IsNot)) and isinstance(right, ast.Constant) and right.value is None:
                # a name holding `sys.modules.get(M)` or the call itself (`match sys.modules.get(M): case None:`)
                named = env.get(left.id) if isinstance(left, ast.Name) else self.const(module, left, env, depth + 1) if isinstance(left, ast.Call) else None
                fallback = self.none_fallbacks.get((module, named.path)) if isinstance(named, Named) else None
                if fallback is not None and (fallback.imports if isinstance(fallback, ImportsResolve) else True):
                    return fallback if isinstance(op, ast.IsNot) else Not(fallback)
                inner = self.condition(module, left, env, depth + 1)
                if isinstance(inner, (HasAttr, HasKey, ModuleExists)):
                    return inner if isinstance(op, ast.IsNot) else Not(inner)
            if isinstance(op, (ast.In, ast.NotIn)) and not isinstance(right, ast.Call):
                key, registry = self.const(module, left, env, depth + 1), self.qualify(module, dotted(right), env)
                if registry == "sys.modules" and isinstance(key, str) and is_upstream(key):
                    # loaded only if it exists: on a release without the module, never true
                    return ModuleExists(key) if isinstance(op, ast.In) else Not(ModuleExists(key))
                if isinstance(key, str) and is_upstream(registry):  # `"dsa" in ATTENTION_BACKENDS`
                    return HasKey(registry, key) if isinstance(op, ast.In) else Not(HasKey(registry, key))
            if isinstance(op, (ast.In, ast.NotIn)) and isinstance(right, ast.Call) and dotted(right.func) in ("dir", "vars"):
                attr = self.const(module, left, env, depth + 1)
                owner = self.qualify(module, dotted(right.args[0]), env) if right.args else None
                if isinstance(attr, str) and is_upstream(owner):
                    cond = HasAttr(owner, attr)
                    return cond if isinstance(op, ast.In) else Not(cond)
            version = self._version_compare(module, left, op, right, env, depth) or self._python_compare(module, left, op, right, env, depth)
            if version is not None:
                return version
            compared = _PLAIN_COMPARE.get(type(op))
            values = (self.const(module, left, env, depth + 1), self.const(module, right, env, depth + 1)) if compared else ()
            sides = [self.const(module, x, env, depth + 1) for x in (left, right)] if isinstance(op, (ast.Is, ast.IsNot)) else []
            if sides and all(self._member_class(v) for v in sides):
                return Const((sides[0] == sides[1]) is isinstance(op, ast.Is))  # enum members are singletons (the enum docs)
            if sides and isinstance(right, ast.Constant) and right.value is None and (
                    sides[0] is None or isinstance(sides[0], (str, int, float, bool, list, dict, Record, Partial))):
                return Const((sides[0] is None) is isinstance(op, ast.Is))  # `spec is None` of a folded value
            if sides and isinstance(right, ast.Constant) and isinstance(right.value, bool) and isinstance(sides[0], (str, int, float, bool, list, dict)):
                return Const((sides[0] is right.value) is isinstance(op, ast.Is))  # `flag is True` of a folded plain value
            if (isinstance(op, (ast.In, ast.NotIn)) and (member := self._flag_members(values[0])) is not None
                    and (held := self._flag_members(values[1])) is not None):
                return Const((member <= held) is isinstance(op, ast.In))  # `m in ENABLED` of a Flag: its bits are set
            if compared and all(_plain(v) for v in values):  # `n != "gamma"` over folded constants
                try:
                    return Const(bool(compared(*values)))
                except TypeError:
                    return UNDECIDED
        if isinstance(node, ast.Compare) and len(node.ops) > 1:  # a <= v < b
            parts = []
            operands = [node.left, *node.comparators]
            for i, op in enumerate(node.ops):
                parts.append(self.condition(module, ast.Compare(left=operands[i], ops=[op], comparators=[operands[i + 1]]), env, depth + 1, local))
            return AllOf(tuple(parts))
        if isinstance(node, ast.Name) and node.id == "TYPE_CHECKING":
            return Const(False)
        value = self.const(module, node, env, depth + 1) if isinstance(node, (ast.Name, ast.Attribute, ast.Call, ast.Constant, ast.Subscript)) else OPAQUE
        if isinstance(value, Condition):
            return value.cond
        if value is None or isinstance(value, (bool, int, float, str)):
            # an immutable folded value's truth (Python's "Truth Value Testing"): `if (m := _module_for(n)):`
            # of a helper returning a name or None (a container may be filled later: not folded)
            return Const(bool(value))
        if is_type_test(node, local):
            return UNDECIDED
        if self._environment_test(module, node, env):
            return Runtime(ast.unparse(node))  # a deployment's switch, as a config value is
        # (a plugin table the test looks a run-time key up in is data too)
        tables = frozenset(n.func.value.id for n in walk(node) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                           and n.func.attr in _TABLE_READS and isinstance(n.func.value, ast.Name) and n.func.value.id not in local
                           and isinstance(self.const(module, n.func.value, env, depth + 1), (dict, list, str)))
        return Runtime(ast.unparse(node)) if local and runtime_test(node, local, tables) else UNDECIDED

    def _environment_test(self, module: str, node: ast.AST, env: dict) -> bool:
        """Whether the test `node` reads the process environment and nothing else the scan
        cannot read: `os.environ.get("X", "0") == "1"`, `os.getenv("X")`, `"X" in os.environ`,
        `os.environ["X"].lower() in ("1", "true")`; its other calls data builtins (`int(…)`) or
        methods of what the environment holds. A deployment sets it per run: run-time data."""
        reads = False
        for sub in walk(node):
            if isinstance(sub, ast.Call):
                name = self.qualify(module, dotted(sub.func) or "", env) if dotted(sub.func) else None
                if name in ("os.environ.get", "os.getenv"):
                    reads = True
                elif isinstance(sub.func, ast.Name) and sub.func.id in _DATA_BUILTINS and self.qualify(module, sub.func.id, env) is None:
                    continue
                elif not (isinstance(sub.func, ast.Attribute) and self._environment_read(module, sub.func.value, env)):
                    return False
            elif isinstance(sub, ast.Subscript) and self.qualify(module, dotted(sub.value) or "", env) == "os.environ":
                reads = True
            elif isinstance(sub, ast.Compare) and any(isinstance(op, (ast.In, ast.NotIn)) for op in sub.ops) and any(
                    self.qualify(module, dotted(c) or "", env) == "os.environ" for c in sub.comparators):
                reads = True
            elif isinstance(sub, (ast.Lambda, ast.Await, ast.Yield, ast.YieldFrom, ast.NamedExpr)):
                return False
        return reads

    def _environment_read(self, module: str, node: ast.AST, env: dict) -> bool:
        """Whether `node` is a read of the process environment (`os.environ.get(…)`, `os.getenv(…)`,
        `os.environ[…]`), or a method called on one (`os.environ.get("X", "").lower()`)."""
        while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and self.qualify(module, dotted(node.func) or "", env) not in (
                "os.environ.get", "os.getenv"):
            node = node.func.value  # a str method of what it read
        if isinstance(node, ast.Call):
            return self.qualify(module, dotted(node.func) or "", env) in ("os.environ.get", "os.getenv")
        return isinstance(node, ast.Subscript) and self.qualify(module, dotted(node.value) or "", env) == "os.environ"

    def _namespace_read(self, namespace: ModuleNamespace, key, default, depth: int):
        """`vars(m).get(key, default)` / `vars(m)[key]` of a plugin module: what `m.key` holds where
        the module binds `key` at its top level, `default` where it binds nothing of that name
        (and has no `__getattr__` or star import, which may); OPAQUE for a key not folded."""
        if not isinstance(key, str) or not key.isidentifier():
            return OPAQUE
        table = self.table(namespace.module)
        if key not in table.names:
            return OPAQUE if table.has_getattr or table.star_imports else default
        read = ast.Attribute(value=ast.Name("<namespace>", ast.Load()), attr=key, ctx=ast.Load())
        return self.const(namespace.module, read, {"<namespace>": Named(namespace.module)}, depth + 1)

    def spread_call(self, module: str, call: ast.Call, env: dict, depth: int = 0) -> tuple[ast.Call, dict]:
        """`f(*spec)` / `f(**spec)` with `spec` folding to a sequence, a NamedTuple record or a dict
        of str keys: the same call with each item as its own argument (keyword), as Python calls
        it, each bound in the returned env under a name no plugin code uses; (call, env) as they
        are when one does not fold so."""
        args: list[ast.expr] = []
        keywords: list[ast.keyword] = []
        bound: dict = {}

        def hold(value) -> ast.Name:
            name = f"<arg{len(bound)}>"
            bound[name] = value
            return ast.copy_location(ast.Name(name, ast.Load()), call)

        for node in call.args:
            if not isinstance(node, ast.Starred):
                args.append(node)
                continue
            spread = self.const(module, node.value, env, depth + 1)
            if isinstance(spread, Record) and self._named_tuple(spread.cls):
                spread = [value for _, value in spread.fields]
            spread = spread if isinstance(spread, list) else self.iterated(spread) if isinstance(spread, dict) else None
            if spread is None or len(spread) > 256:
                return call, env
            args += [hold(value) for value in spread]
        for keyword in call.keywords:
            if keyword.arg is not None:
                keywords.append(keyword)
                continue
            spread = self.const(module, keyword.value, env, depth + 1)
            if not (isinstance(spread, dict) and all(isinstance(key, str) for key in spread)):
                return call, env
            keywords += [ast.keyword(key, hold(value)) for key, value in spread.items()]
        if not bound:
            return call, env
        return ast.copy_location(ast.Call(func=call.func, args=args, keywords=keywords), call), {**env, **bound}

    def _typed_dict(self, path: str) -> bool:
        """Whether `path` is a plugin `typing.TypedDict`: a class deriving from TypedDict (or from
        one of those), or `T = TypedDict("T", {...})` (its instances are plain dicts)."""
        found = self._plugin_definition(path) if not is_upstream(path) else None
        if found is not None and isinstance(found[1], ast.ClassDef):
            home = found[0]
            return any((dotted(b) or "").rsplit(".", 1)[-1] == "TypedDict" or (base := self.qualify(home, dotted(b) or "")) and base != path and self._typed_dict(base)
                       for b in found[1].bases)
        home, _, name = path.rpartition(".")
        tree = self.tree(home) if home in self.files else None
        return any(isinstance(s, ast.Assign) and [dotted(t) for t in s.targets] == [name] and isinstance(s.value, ast.Call)
                   and (dotted(s.value.func) or "").rsplit(".", 1)[-1] == "TypedDict" for s in (tree.body if tree else []))

    def _named_tuple(self, path: str) -> bool:
        """Whether the plugin class `path` is a `typing.NamedTuple` (its instances unpack)."""
        found = self._plugin_definition(path)
        return found is not None and isinstance(found[1], ast.ClassDef) and any(
            (dotted(b) or "").rsplit(".", 1)[-1] == "NamedTuple" for b in found[1].bases)

    def _plugin_folder(self, value) -> PurePosixPath | None:
        """`value` (text or a path) as a folder of the plugin's source holding some module, else None."""
        if not isinstance(value, (str, PurePosixPath)):
            return None
        folder = PurePosixPath(posixpath.normpath(str(value)))
        return folder if folder.is_relative_to(_SOURCE_ROOT) and any(
            (held := _module_path(name, is_package)).is_relative_to(folder) and held != folder for name, (_, is_package) in self.files.items()) else None

    def _class_namespace(self, path: str, depth: int, node: ast.ClassDef | None = None) -> dict | None:
        """`vars(C)` / `C.__dict__` of the plugin class `path` (its class statement `node`, when
        given): the names its body binds, each a def's path or the folded constant (dunders
        Python adds left out); None for anything else."""
        found = (self.module_of(path), node) if node is not None else self._plugin_definition(path)
        if found is None or not isinstance(found[1], ast.ClassDef):
            return None
        namespace = {}
        body = found[1].body
        for stmt in body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                namespace[stmt.name] = Named(f"{path}.{stmt.name}")
            for bound in assigned_in(stmt) if isinstance(stmt, (ast.Assign, ast.AnnAssign)) else ():
                if isinstance(stmt.value, ast.Constant) and stmt.value.value is None:
                    namespace[bound] = None  # (_class_body_value's None means "not bound")
                    continue
                held = self._class_body_value(found[0], path, body, body.index(stmt) + 1, bound, depth + 1) if node is not None else None
                namespace[bound] = held if held is not None else self.class_constant(path, bound, depth + 1)
        return {k: v for k, v in namespace.items() if not (k.startswith("__") and k.endswith("__"))}

    def _function_members(self, path: str, predicate: str | None, depth: int):
        """`inspect.getmembers(C, inspect.isfunction)` of plugin class `path`: [name, function]
        pairs sorted by name (the inspect docs), of its body and its plugin bases' (a subclass's
        own first), the functions a read on the class gives as functions (plain and static
        methods: not classmethods or properties); OPAQUE for another predicate, or a base
        outside the plugin (its members are not known here). Of a plugin module: _module_members."""
        if path in self.files:
            return self._module_members(path, predicate, depth)
        found = self._plugin_definition(path)
        if predicate != "inspect.isfunction" or found is None or not isinstance(found[1], ast.ClassDef) or depth > 20:
            return OPAQUE
        members: dict = {}
        for base in found[1].bases:
            if dotted(base) == "object":
                continue
            based = self.qualify(found[0], dotted(base)) if dotted(base) else None
            inherited = self._function_members(based, predicate, depth + 1) if based and not is_upstream(based) else OPAQUE
            if inherited is OPAQUE:
                return OPAQUE
            members.update(dict(inherited))
        for stmt in found[1].body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and not {
                    (dotted(d) or "").rsplit(".", 1)[-1] for d in stmt.decorator_list} & {"classmethod", "property", "cached_property"}:
                members[stmt.name] = Named(f"{path}.{stmt.name}")
        return [[name, members[name]] for name in sorted(members)]

    def _builtin_isinstance(self, module: str, value: ast.expr, types: ast.expr, env: dict, depth: int) -> bool | None:
        """`isinstance(x, T)` for T builtin types (str, int, dict, staticmethod, …, or a tuple of
        them) where x folds to a plain value (Python's own answer), or to a plugin class's method
        (a staticmethod / classmethod object by its decorator: what `vars(Holder)` hands over);
        None otherwise."""
        names = [dotted(t) for t in (types.elts if isinstance(types, ast.Tuple) else [types])]
        if not names or any(n not in _BUILTIN_TYPES or self.qualify(module, n, env) not in (None, n) for n in names):
            return None
        held = self.const(module, value, env, depth + 1)
        wanted = tuple(_BUILTIN_TYPES[n] for n in names)
        if held is None or isinstance(held, (str, int, float, bool, list, dict)):
            return isinstance(tuple(held) if isinstance(held, list) and list not in wanted else held, wanted)
        if isinstance(held, Named) and wanted == (type,):  # `isinstance(Base, type)`: whether the name is a class
            ref = self.upstream_ref(held.path)
            return ref.kind == "class" if ref is not None else True if held.path in self.scan.classes else None
        owner, _, member = held.path.rpartition(".") if isinstance(held, Named) else ("", "", "")
        declared = self.scan.classes[owner].methods.get(member) if owner in self.scan.classes else None
        # (a class of a module not scanned yet: its def as written)
        found = self._plugin_definition(held.path) if declared is None and owner and isinstance((self._plugin_definition(owner) or (None, None))[1], ast.ClassDef) else None
        decorators = declared.decorators if declared is not None else tuple(filter(None, (dotted(d) for d in found[1].decorator_list))) if (
            found is not None and isinstance(found[1], (ast.FunctionDef, ast.AsyncFunctionDef))) else None
        if decorators is not None:
            kinds = {d.rsplit(".", 1)[-1] for d in decorators}
            kind = staticmethod if "staticmethod" in kinds else classmethod if "classmethod" in kinds else type(lambda: None)
            return any(t is kind for t in wanted) if set(wanted) <= {staticmethod, classmethod, str, int, float, bool, list, dict, tuple} else None
        return None

    def class_choices(self, module: str, node: ast.expr, env: dict, depth: int = 0) -> list[str]:
        """The classes a base expression `node` of a class statement in `module` may be, in the
        order written: both arms of `A if t else B` whose test is decided only at run time (the
        taken arm's where it folds), of `t and A or B`, of a module-level name bound once to such
        an expression (one `env` holds unknown, as a module's own scan binds it), and of each
        `return` of a plugin helper called there. Their dotted paths, plugin or upstream
        classes; [] where an option is no class the scan knows (a run may give anything)."""
        if depth > 6:
            return []
        if isinstance(node, ast.IfExp):
            taken = self._truth_of(module, node.test, env, depth + 1)
            arms = [node.body, node.orelse] if taken is None else [node.body if taken else node.orelse]
            return self._each_class(module, arms, env, depth)
        if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or):  # `t and A or B`: A where t holds, else B
            return self._each_class(module, [v.values[-1] if isinstance(v, ast.BoolOp) and isinstance(v.op, ast.And) else v
                                             for v in node.values], env, depth)
        if isinstance(node, ast.Name) and env.get(node.id, OPAQUE) is OPAQUE and (bound := self._module_bound_once(module, node.id)) is not None:
            return self.class_choices(module, bound, {}, depth + 1)
        if isinstance(node, ast.Call) and not node.args and not node.keywords and dotted(node.func) and (
                function := self._plugin_function(self.qualify(module, dotted(node.func), env) or "")) is not None:
            home, definition = function
            returns = [n.value for n in walk(definition) if isinstance(n, ast.Return)]
            return self._each_class(home, returns, {}, depth) if returns and None not in returns else []
        path = self.qualify(module, dotted(node), env) if isinstance(node, (ast.Name, ast.Attribute)) else None
        if not path:
            return []
        found = self._plugin_definition(path) if not is_upstream(path) else None
        ref = self.upstream_ref(path)
        return [path] if (found is not None and isinstance(found[1], ast.ClassDef)) or (ref is not None and ref.kind == "class") else []

    def _each_class(self, module: str, options: list[ast.expr], env: dict, depth: int) -> list[str]:
        """class_choices of every option, in order, or [] where one of them names no class."""
        found = [self.class_choices(module, option, env, depth + 1) for option in options]
        return [] if [] in found else list(dict.fromkeys(c for choices in found for c in choices))

    def _module_bound_once(self, module: str, name: str) -> ast.expr | None:
        """The value of the one module-level `name = value` of `module` that binds `name` (no
        other statement there binds it), else None."""
        tree = self.tree(module) if module in self.files else None
        binds = [stmt for stmt in (tree.body if tree else []) if name in assigned_in(stmt)]
        if len(binds) == 1 and isinstance(binds[0], ast.Assign) and [dotted(t) for t in binds[0].targets] == [name]:
            return binds[0].value
        return None

    def _chosen(self, module: str, node: ast.AST, env: dict) -> tuple[str, ast.IfExp, dict] | None:
        """(its module, the `a if t else b`, the helper's locals) when `node` is that expression
        whose arms fold to constants, or a call of a plugin helper whose body is one `return` of
        it (`def _api(): return "caps" if hasattr(SRTPlatform, "capabilities") else "flags"`)."""
        home, local = module, env
        if isinstance(node, ast.Call) and dotted(node.func) and (function := self._plugin_function(self.qualify(module, dotted(node.func), env) or "")) is not None:
            home, definition = function
            body = [b for b in definition.body if not (isinstance(b, ast.Expr) and isinstance(b.value, ast.Constant))]
            if len(body) != 1 or not isinstance(body[0], ast.Return) or any(isinstance(a, ast.Starred) for a in node.args):
                return None
            local = self._called_with(home, definition, [self.const(module, a, env) for a in node.args], node.keywords, module, env, 0)
            node = body[0].value
        if not isinstance(node, ast.IfExp):
            return None
        if any(self.const(home, arm, local) is OPAQUE for arm in (node.body, node.orelse)):
            return None
        return home, node, local

    def _version_parts(self, module: str, node: ast.AST, env: dict, depth: int) -> bool:
        """Whether `node` makes the running version's release numbers as ints: `int(p) for p in
        V.split(".")[:3]` (a comprehension, its `if` a digit test at most) or `map(int,
        V.split("."))`, V the running version (sglang.__version__)."""
        def parts(split: ast.AST) -> bool:  # V.split(".") or a slice of it from the start
            if isinstance(split, ast.Subscript) and isinstance(split.slice, ast.Slice) and split.slice.lower is None and split.slice.step is None:
                split = split.value
            return (isinstance(split, ast.Call) and isinstance(split.func, ast.Attribute) and split.func.attr == "split"
                    and [self.const(module, a, env, depth + 1) for a in split.args] == ["."]
                    and isinstance(self.const(module, split.func.value, env, depth + 1), RunningVersion))

        if isinstance(node, ast.Call) and dotted(node.func) == "map" and len(node.args) == 2 and dotted(node.args[0]) == "int":
            return parts(node.args[1])
        if isinstance(node, (ast.ListComp, ast.GeneratorExp)) and len(node.generators) == 1:
            generator = node.generators[0]
            return (isinstance(generator.target, ast.Name) and isinstance(node.elt, ast.Call) and dotted(node.elt.func) == "int"
                    and len(node.elt.args) == 1 and isinstance(node.elt.args[0], ast.Name) and node.elt.args[0].id == generator.target.id
                    and all(ast.unparse(t) == f"{generator.target.id}.isdigit()" for t in generator.ifs) and parts(generator.iter))
        return False

    def _version_compare(self, module, left, op, right, env, depth) -> Cond | None:
        symbol = _COMPARE_OPS.get(type(op))
        if symbol is None:
            return None
        a, b = self.const(module, left, env, depth + 1), self.const(module, right, env, depth + 1)
        if isinstance(b, RunningVersion):
            a, b, symbol = b, a, _FLIPPED[symbol]
        if not isinstance(a, RunningVersion):
            return None
        literal = b.text if isinstance(b, VersionLiteral) else b
        if a.parsed and isinstance(literal, list) and literal and all(type(n) is int for n in literal):
            literal = ".".join(map(str, literal))  # `(0, 5, 23)` against the version's release numbers
        if not isinstance(literal, str):
            return UNDECIDED
        # sglang.__version__ compared with a plain string is a *string* comparison in Python
        return VersionCompare(symbol, literal, a.parsed or isinstance(b, VersionLiteral))

    def _python_compare(self, module, left, op, right, env, depth) -> Cond | None:
        """`sys.version_info >= (3, 10)`, `(3, 10) <= sys.version_info[:2]`: PythonCompare with a
        literal tuple of at most three ints (a longer one meets the release level, a str)."""
        symbol = _COMPARE_OPS.get(type(op))

        def interpreter(node) -> tuple[bool, int | None] | None:  # (it is sys.version_info, its first n items)
            if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice) and node.slice.lower is None and node.slice.step is None:
                inner = interpreter(node.value)
                upper = self.const(module, node.slice.upper, env, depth + 1) if node.slice.upper is not None else None
                return (True, upper if type(upper) is int and upper > 0 else 0) if inner == (True, None) else None
            return (True, None) if self.qualify(module, dotted(node), env) == "sys.version_info" else None

        if symbol is None:
            return None
        if interpreter(left) is None and interpreter(right) is not None:
            left, right, symbol = right, left, _FLIPPED[symbol]
        found = interpreter(left)
        if found is None:
            return None
        literal = self.const(module, right, env, depth + 1)
        if found[1] == 0 or not (isinstance(literal, list) and 0 < len(literal) <= 3 and all(type(v) is int for v in literal)):
            return UNDECIDED
        return PythonCompare(symbol, tuple(literal), found[1])

    def _guard(self, module: str, test: ast.AST, env: dict, negate: bool = False, owner: tuple[str, str] | None = None,
               local: frozenset[str] = frozenset(), depth: int = 0) -> GuardCond:
        """The test as a GuardCond; with `owner` (self's name, its plugin class), each read of
        `self.<name>` in it is SelfFlag(class, name); `local`: as for condition()."""
        text, line = ast.unparse(test), test.lineno
        if owner is not None:
            self_name, cls = owner

            def is_flag(node: ast.AST) -> bool:
                return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == self_name and isinstance(node.ctx, ast.Load)

            flags = {node.attr for node in walk(test) if is_flag(node)}
            if flags:
                placeholders = {f"<self.{name}>": Condition(SelfFlag(cls, name)) for name in flags}
                test, env = _named(test, is_flag, lambda node: f"<self.{node.attr}>"), {**env, **placeholders}
        cond = self.condition(module, test, env, depth, local=local)
        if string_version_compare(cond):
            text += "  [compares version strings, not versions: '0.10.0' < '0.9']"
        if negate:  # a folded test stays folded (`if b in _DISABLED: continue` for b = "delta")
            cond = folded(Not(cond))
        return GuardCond(cond, f"not ({text})" if negate else text, line)

    def narrowed_by(self, module: str, test: ast.expr, env: dict) -> dict[str, Instance | None]:
        """{x: Instance(C)} for a test `isinstance(x, C)` or `type(x) is C` (`==`) of a local x
        with one upstream class C, for each such operand of an `and`; {x: None} where the class
        is another (a plugin class, a tuple): what x was narrowed to before no longer holds."""
        if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
            return {name: instance for operand in test.values for name, instance in self.narrowed_by(module, operand, env).items()}
        if isinstance(test, ast.Call) and dotted(test.func) == "isinstance" and len(test.args) == 2 and isinstance(test.args[0], ast.Name) and "isinstance" not in env:
            held, named = test.args
        elif (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.Is, ast.Eq)) and isinstance(test.left, ast.Call)
              and dotted(test.left.func) == "type" and len(test.left.args) == 1 and isinstance(test.left.args[0], ast.Name) and "type" not in env):
            held, named = test.left.args[0], test.comparators[0]
        else:
            return {}
        cls = self.qualify(module, dotted(named), env) if dotted(named) else None
        resolved = self.upstream_ref(cls)
        return {held.id: Instance(resolved.path) if resolved is not None and resolved.kind == "class" else None}

    def _instance(self, module: str, node: ast.AST, env: dict) -> Instance | None:
        """The upstream instance a variable holds, with evidence (see Instance); the engine's
        settings name (`server_args`) not bound to anything the scan knows is its settings
        class (SGLang's ServerArgs), as writes to it are."""
        if isinstance(node, ast.Attribute):  # `vllm_config.compilation_config`: the class the field is annotated with
            return self._field_instance(self._instance(module, node.value, env), node.attr)
        if (isinstance(node, ast.Call) and dotted(node.func) == "getattr" and "getattr" not in env and len(node.args) in (2, 3) and not node.keywords
                and isinstance(attr := self.const(module, node.args[1], env), str)):
            # `getattr(vllm_config, "lora_config", None)`: the field where the object has it (the
            # default only where it does not: a test of it guards the rest as for `x.f`)
            return self._field_instance(self._instance(module, node.args[0], env), attr)
        if (isinstance(node, ast.Call) and dotted(node.func) == "next" and "next" not in env and 1 <= len(node.args) <= 2 and not node.keywords
                and isinstance(found := node.args[0], ast.GeneratorExp) and len(found.generators) == 1 and isinstance(found.elt, ast.Name)
                and isinstance(found.generators[0].target, ast.Name) and found.elt.id == found.generators[0].target.id):
            # `next((m for m in mods if isinstance(m, C)), None)`: the first value the filter holds for, a C
            # (or the default: a test of it guards the rest)
            narrowed = {name: held for test in found.generators[0].ifs for name, held in self.narrowed_by(module, test, env).items()}
            held = narrowed.get(found.elt.id)
            return held if isinstance(held, Instance) else None
        if (isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords
                and self.qualify(module, dotted(node.func) or "", env) in ("copy.copy", "copy.deepcopy")):
            return self._instance(module, node.args[0], env)  # a copy is an object of the same class (the copy docs)
        if isinstance(node, ast.Call) and isinstance(node.func, (ast.Name, ast.Attribute)):
            # `get_current_vllm_config().x`: what an upstream function annotated to return one class returns
            path = self.qualify(module, dotted(node.func) or "", env)
            ref = self.upstream_ref(path) if path and is_upstream(path) else None
            made = parameter_class(self.index, ref, "return") if ref is not None and ref.kind == "function" else None
            return Instance(made) if made and is_upstream(made) else None
        if not isinstance(node, ast.Name):
            return None
        if (narrowed := env.get(narrowed_key(node.id))) is not None:
            # `if isinstance(x, C):` x is a C there, whatever it was typed as before; narrowed to
            # a class not upstream's (OPAQUE), nothing is said of it
            return narrowed if isinstance(narrowed, Instance) else None
        value = env.get(node.id, OPAQUE)
        if isinstance(value, Instance):
            return value
        engine = profile()
        if engine.server_args and node.id == engine.server_args_names[0] and value is OPAQUE and self.qualify(module, node.id, env) is None:
            return Instance(engine.server_args)
        return None


    def _field_instance(self, owner: Instance | None, attr: str) -> Instance | None:
        """An instance of the upstream class the class of `owner` annotates its field `attr`
        with (annotations.field_class), or None; of an unannotated parameter's, the field read
        on it (`p.attr`), its class named once the parameter's is (finish())."""
        if owner is not None and not owner.path and owner.function and owner.param:
            return Instance(None, owner.function, f"{owner.param}.{attr}")  # (named in finish(), the parameter's class first)
        ref = self.upstream_ref(owner.path) if owner is not None and owner.path else None
        held = field_class(self.index, ref, attr) if ref is not None and ref.kind == "class" else None
        return Instance(held) if held and is_upstream(held) else None


def _made_chain(node: ast.expr) -> bool:
    """Whether `node` is a chain of method calls on an object made there (`C(…).add(…)…`)."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return False
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        node = node.func.value
    return isinstance(node, ast.Call) and isinstance(node.func, (ast.Name, ast.Attribute))


def _chain_root(node: ast.expr) -> ast.expr:
    """The object a chain of method calls starts from (`t` of `t.add(…).add(…)`)."""
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        node = node.func.value
    return node


def _rooted_at(chain: ast.Call, made: dict[str, ast.expr]) -> ast.Call:
    """`chain` with its root local replaced by the expression that made it (`t.add(…)` after
    `t = Table()` as `Table().add(…)`): the same method calls on the same object."""
    root = _chain_root(chain)
    if not (isinstance(root, ast.Name) and root.id in made):
        return chain
    calls = []
    node = chain
    while node is not root:
        calls.append(node)
        node = node.func.value
    rebuilt = made[root.id]
    for call in reversed(calls):
        rebuilt = ast.copy_location(ast.Call(func=ast.Attribute(rebuilt, call.func.attr, ast.Load()), args=call.args, keywords=call.keywords), call)
    return rebuilt


def _returns_self(method: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether every return of a method hands back its receiver (`return self`: a chainable call)."""
    params = function_params(method.args)
    returns = list(own_returns(method))
    return bool(params and returns) and all(isinstance(r.value, ast.Name) and r.value.id == params[0].name for r in returns)


def _any_keys(value):
    """A dict whose keys only a run gives, each holding `value`: a MayHold where the value is a
    plain constant or a name, OPAQUE otherwise."""
    return MayHold((), value) if value is None or isinstance(value, (str, int, float, Named)) else OPAQUE


def without_none(test: ast.expr, env: dict, holds: bool) -> dict:
    """The OneOf names `test` rules None out of where it `holds` (True: `if x is not None:` /
    `if x:`'s body; False: what follows `if x is None: continue` / `if not x: return`; a truth
    test rules out false constants too): each with its other options (one left: that value)."""
    def named(node: ast.expr) -> str | None:
        return node.id if isinstance(node, ast.Name) and isinstance(env.get(node.id), OneOf) else None

    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test, holds = test.operand, not holds
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value is None:
        name = named(test.left) if isinstance(test.ops[0], (ast.Is, ast.IsNot)) and holds == isinstance(test.ops[0], ast.IsNot) else None
        gone = (None,)
    else:  # (the name's truth: a false constant goes too)
        name = named(test) if holds else None
        gone = (None, False, 0, "")
    if name is None:
        return {}
    kept = tuple(option for option in env[name].options if not any(option[0] is g or type(option[0]) is type(g) and option[0] == g for g in gone))
    return {name: kept[0][0] if len(kept) == 1 else OneOf(kept)} if kept else {}


def narrowed_key(name: str) -> str:
    """The environment key under which a body an `isinstance(name, C)` test guards keeps
    Instance(C) (not `name` itself: what `name` folds to is left as it was; _instance reads it)."""
    return f"<isinstance {name}>"


def is_narrowed_key(key: str) -> bool:
    """Whether an environment key is a narrowed_key (dropped where the narrowing ends)."""
    return key.startswith("<isinstance ")


def _named(node: ast.AST, matches: Callable[[ast.AST], bool], name: Callable[[ast.AST], str]) -> ast.AST:
    """A copy of `node` with each subexpression `matches` accepts replaced by the name name(it)
    (a placeholder the caller binds in the folding environment)."""
    class Replace(ast.NodeTransformer):
        def visit(self, child):
            return ast.Name(id=name(child), ctx=ast.Load()) if matches(child) else super().visit(child)

    return Replace().visit(copy.deepcopy(node))


def _not_in_init(default: ast.expr | None) -> bool:
    """Whether a dataclass field's default is `field(init=False, …)`."""
    return (isinstance(default, ast.Call) and (dotted(default.func) or "").rsplit(".", 1)[-1] == "field"
            and any(k.arg == "init" and isinstance(k.value, ast.Constant) and k.value.value is False for k in default.keywords))


def _field_default(default: ast.expr | None) -> ast.expr | None:
    """A field's default value: `x: T = v`'s v; `field(default=v)`'s v; what `field(default_factory=
    dict)` (list, tuple, a lambda returning a literal) makes, as an expression that folds to it;
    None for none (`field()`, another factory)."""
    if isinstance(default, ast.Call) and (dotted(default.func) or "").rsplit(".", 1)[-1] == "field":
        factory = next((k.value for k in default.keywords if k.arg == "default_factory"), None)
        if isinstance(factory, ast.Lambda) and not function_params(factory.args):
            return factory.body
        made = {"dict": ast.Dict(keys=[], values=[]), "list": ast.List(elts=[], ctx=ast.Load()), "tuple": ast.Tuple(elts=[], ctx=ast.Load())}
        if isinstance(factory, ast.Name) and factory.id in made:
            return ast.copy_location(made[factory.id], factory)
        return next((k.value for k in default.keywords if k.arg == "default"), None)
    return default


def _nested_key(holder: ast.expr, is_name) -> ast.expr | None:
    """The outer key node of `X.setdefault(k, {})[…]` / `X[k][…]` where `is_name(X)`; None otherwise."""
    if isinstance(holder, ast.Subscript) and is_name(holder.value):
        return holder.slice
    if (isinstance(holder, ast.Call) and isinstance(holder.func, ast.Attribute) and holder.func.attr == "setdefault"
            and is_name(holder.func.value) and len(holder.args) == 2 and not holder.keywords):
        return holder.args[0]
    return None


def _grouped_key(call: ast.Call | None, is_name) -> ast.expr | None:
    """The key node of `X[k].append(v)` / `.extend(vs)` or `X.setdefault(k, []).append(v)`, where
    `is_name(X)`; None for any other call."""
    if call is None or call.keywords or not isinstance(call.func, ast.Attribute) or call.func.attr not in ("append", "extend"):
        return None
    return _nested_key(call.func.value, is_name)


def _distinct(elements: list) -> list:
    """A folded set's elements: each equal value once, first seen first (a set holds no two equal
    elements; the order it iterates in is its own, read here as the order written); unchanged
    when an element is not hashable or not folded (it may equal another)."""
    keys = [_hashable(e) for e in elements]
    if any(k is OPAQUE for k in keys):
        return elements
    first: dict = {}
    for key, element in zip(keys, elements):
        first.setdefault(key, element)
    return list(first.values())


def _bound_nodes(function: ast.FunctionDef | ast.AsyncFunctionDef, call: ast.Call, module: str, skip: int) -> dict | None:
    """The parameters of `function` as `call` (in `module`) binds them, Python's way, each to
    (module, the argument node): positionals in order (the first `skip` taken: a method's
    receiver), keywords by name, `*args` a tuple of the positionals left over, `**kwargs` a dict
    of the keywords no parameter names. None for an unpacked argument or a call Python refuses
    (too many positionals, an unknown keyword)."""
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return None
    args = function.args
    positional = [a.arg for a in (*args.posonlyargs, *args.args)][skip:]
    if len(call.args) > len(positional) and args.vararg is None:
        return None
    bound = {name: (module, node) for name, node in zip(positional, call.args)}
    named = set(positional[len(args.posonlyargs) - skip if len(args.posonlyargs) > skip else 0:]) | {a.arg for a in args.kwonlyargs}
    extra = [k for k in call.keywords if k.arg not in named]
    if extra and args.kwarg is None:
        return None
    bound |= {k.arg: (module, k.value) for k in call.keywords if k.arg in named}
    if args.vararg is not None:
        bound[args.vararg.arg] = (module, ast.copy_location(ast.Tuple(elts=call.args[len(positional):], ctx=ast.Load()), call))
    if args.kwarg is not None:
        bound[args.kwarg.arg] = (module, ast.copy_location(ast.Dict(keys=[ast.Constant(k.arg) for k in extra], values=[k.value for k in extra]), call))
    return bound


def _site(module: str, node: ast.AST) -> tuple[str, int, int]:
    """Where a construction is written: (module, line, column)."""
    return module, node.lineno, node.col_offset


def _plain_key(value):
    """A folded key an edit may store at: a str or int, or a tuple of them (a folded tuple is a
    list); None for anything else (a run may give another key)."""
    if isinstance(value, list) and value and all(isinstance(v, (str, int)) for v in value):
        return tuple(value)
    return value if isinstance(value, (str, int)) else None


# the builtin class patterns a folded value is matched by (`case str(x):`; a folded tuple is a list)
_PATTERN_TYPES = {"str": str, "int": int, "float": float, "bool": bool, "list": (list, tuple), "tuple": (list, tuple), "dict": dict}


def _unknown_in(key) -> bool:
    """Whether a folded key holds a part not folded (OPAQUE, a run-time Condition, an Instance: an
    object known by its class alone, such as a parameter's value), at any depth of a tuple: which
    entry it picks is not known."""
    if isinstance(key, tuple):
        return any(_unknown_in(k) for k in key)
    return key is OPAQUE or isinstance(key, (Condition, Instance))


def _hashable(value):
    """A folded value usable as a dict key: lists (folded tuples) become tuples; anything else
    unhashable is OPAQUE."""
    if isinstance(value, list):
        value = tuple(_hashable(v) for v in value)
    try:
        hash(value)
    except TypeError:
        return OPAQUE
    return value
