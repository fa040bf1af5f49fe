"""What one Python module defines, imports and re-exports: the unit the symbol index caches.

Extraction reads only the statements that bind names at module and class level (including
those under `if`/`try`/`with`, which run at import time) and skips `if TYPE_CHECKING:` bodies,
which never run. Everything here is plain data so a table encodes small and decodes fast, as
data: `encode_table`/`decode_table` (msgpack) never run code, whatever bytes they are given.

A module-level call that builds a class is a class too: `X = namedtuple("X", "a b")`,
`make_dataclass`, `msgspec.defstruct`, `type(name, bases, ns)`, the functional `Enum` API, and a
class rebuilt from itself (`X = defstruct("X", …, namespace=vars(X))`, `X = dataclass(X)`). Its
members are read off literal arguments; when an argument is computed, `ClassInfo.open_members`
says so, and a name the table does not list is then undecided rather than missing.
"""

from __future__ import annotations

import ast
import builtins
import hashlib
import re
import warnings
from dataclasses import dataclass, field
from typing import NamedTuple

import msgspec

_COMMENT_LINE = re.compile(r"^[ \t]*#.*$", re.M)


class Param(NamedTuple):
    name: str
    kind: str  # posonly | pos | var | kwonly | varkw
    default: str | None  # source of the default (shortened), None when required


class FunctionInfo(NamedTuple):
    qualname: str  # "func" or "Class.method" (nested: "Outer.Inner.method")
    lineno: int
    end_lineno: int
    params: tuple[Param, ...]
    body_hash: str  # whitespace-, comment- and docstring-insensitive
    decorators: tuple[str, ...]


class ClassInfo(NamedTuple):
    qualname: str
    lineno: int
    end_lineno: int
    # Dotted source expressions, resolved lazily in the module's scope; `F()` stands for what a
    # class made by the factory F inherits (see harness.knowledge.external), `?<source>` for a
    # base computed at class creation.
    bases: tuple[str, ...]
    members: dict[str, str]  # name -> def | class | value
    decorators: tuple[str, ...] = ()  # dotted source expressions, outermost first
    metaclass: str | None = None  # the `metaclass=` expression (same forms as a base)
    open_members: str | None = None  # why `members` may be incomplete (computed at import)
    # annotated class-level names in order, and whether each has a default: what a synthesised
    # __init__ takes (dataclass, NamedTuple, msgspec.Struct)
    fields: tuple[tuple[str, bool], ...] = ()
    keyword_only: bool = False  # `@dataclass(kw_only=True)` / `class X(Struct, kw_only=True)`


class Binding(NamedTuple):
    kind: str  # def | class | value | alias | module | from
    target: str = ""  # alias: dotted expression; module: module name; from: "module:name"
    lineno: int = 0
    fallback: bool = False  # from: an `except ImportError:` branch binds the name if the import fails


class InstanceAttributes(NamedTuple):
    names: dict[str, int]  # attribute -> first line assigning it (self.x = …, setattr(self, "x", …))
    dynamic: tuple[str, ...]  # why an instance may have attributes not listed (empty when none)


@dataclass
class ModuleTable:
    name: str
    path: str  # relative to the source root
    is_package: bool
    names: dict[str, Binding] = field(default_factory=dict)
    star_imports: list[str] = field(default_factory=list)
    all_names: tuple[str, ...] | None = None
    all_unknown: bool = False  # __all__ is built by code the extractor cannot evaluate
    functions: dict[str, FunctionInfo] = field(default_factory=dict)
    classes: dict[str, ClassInfo] = field(default_factory=dict)
    has_getattr: bool = False  # a module-level __getattr__ (PEP 562) answers names at run time
    getattr_names: tuple[str, ...] | None = None  # all it can answer, when its code says so
    imports: list[str] = field(default_factory=list)  # absolute module names imported anywhere
    error: str | None = None  # set when the file does not parse


_ENCODER = msgspec.msgpack.Encoder()
_TABLE_DECODER = msgspec.msgpack.Decoder(ModuleTable)


def encode_table(table: ModuleTable) -> bytes:
    """`table` as msgpack bytes (what the symbol-index cache stores per module)."""
    return _ENCODER.encode(table)


def decode_table(blob: bytes) -> ModuleTable:
    """The ModuleTable `encode_table` made. Bytes that are not one, torn or planted, raise
    msgspec.DecodeError (types are checked field by field); nothing in them is ever run."""
    return _TABLE_DECODER.decode(blob)


def signature_text(params: tuple[Param, ...]) -> str:
    parts: list[str] = []
    seen_kwonly = False
    for index, param in enumerate(params):
        if param.kind == "kwonly" and not seen_kwonly:
            parts.append("*")
            seen_kwonly = True
        prefix = {"var": "*", "varkw": "**"}.get(param.kind, "")
        if param.kind == "var":
            seen_kwonly = True
        text = prefix + param.name + (f"={param.default}" if param.default is not None else "")
        parts.append(text)
        if param.kind == "posonly" and (index + 1 == len(params) or params[index + 1].kind != "posonly"):
            parts.append("/")
    return "(" + ", ".join(parts) + ")"


def extract_module(name: str, path: str, source: bytes, is_package: bool, nested_imports: bool = False, tree: ast.Module | None = None) -> ModuleTable:
    """`nested_imports` also records imports inside functions: the plugin import graph needs
    them (hooks are imported from functions that run at load); upstream tables do not, and
    walking every node would cost four times the parse. `tree` is `source` already parsed."""
    table = ModuleTable(name=name, path=path, is_package=is_package)
    try:
        tree = tree or _parse(source)
    except (SyntaxError, ValueError) as exc:
        table.error = f"does not parse: {exc}"
        return table
    lines = source.decode("utf-8", errors="replace").splitlines()
    _Extractor(table, lines, tree.body).module(tree, nested_imports)
    return table


def _parse(source: bytes) -> ast.Module:
    with warnings.catch_warnings():  # invalid escapes etc. in upstream code are not ours to report
        warnings.simplefilter("ignore", (SyntaxWarning, DeprecationWarning))
        return ast.parse(source)


def resolve_relative(module: str, is_package: bool, level: int, target: str | None) -> str:
    """The absolute module named by `from <dots><target> import …` inside `module`."""
    if level == 0:
        return target or ""
    package = module if is_package else module.rpartition(".")[0]
    parts = package.split(".") if package else []
    if level > 1:
        parts = parts[: len(parts) - (level - 1)]
    base = ".".join(parts)
    if target:
        return f"{base}.{target}" if base else target
    return base


def dotted(node: ast.AST) -> str | None:
    """`a.b.c` for Name/Attribute chains (also through a call's func, for decorators)."""
    if isinstance(node, ast.Call):
        node = node.func
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    if isinstance(node, ast.Subscript):  # Generic[T] as a base
        return dotted(node.value)
    return None


def body_fingerprint(node: ast.FunctionDef | ast.AsyncFunctionDef, lines: list[str]) -> str:
    body = node.body
    if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant) and isinstance(body[0].value.value, str):
        body = body[1:]
    if not body:
        return hashlib.blake2b(b"", digest_size=8).hexdigest()
    text = "\n".join(lines[body[0].lineno - 1 : node.end_lineno])
    text = " ".join(_COMMENT_LINE.sub("", text).split())  # layout and comment lines don't count
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


# body_fingerprint of bodies that do nothing: empty (a docstring only), `pass`, `...`, `return`
EMPTY_BODIES = frozenset(hashlib.blake2b(text.encode(), digest_size=8).hexdigest() for text in ("", "pass", "...", "return", "return None"))


def function_params(args: ast.arguments) -> tuple[Param, ...]:
    def default_text(node: ast.AST | None) -> str | None:
        if node is None:
            return None
        if isinstance(node, ast.Constant):
            text = repr(node.value)
        else:
            text = dotted(node) or "…"
        return text if len(text) <= 40 else text[:37] + "..."

    positional = [*args.posonlyargs, *args.args]
    defaults: list[ast.AST | None] = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    params = [
        Param(arg.arg, "posonly" if index < len(args.posonlyargs) else "pos", default_text(default))
        for index, (arg, default) in enumerate(zip(positional, defaults))
    ]
    if args.vararg:
        params.append(Param(args.vararg.arg, "var", None))
    for arg, default in zip(args.kwonlyargs, args.kw_defaults):
        params.append(Param(arg.arg, "kwonly", default_text(default)))
    if args.kwarg:
        params.append(Param(args.kwarg.arg, "varkw", None))
    return tuple(params)


def _is_type_checking(test: ast.AST) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


class _Extractor:
    def __init__(self, table: ModuleTable, lines: list[str], body: list[ast.stmt]):
        self.table = table
        self.lines = lines
        self._body = body
        self._tables: dict[str, set[str] | None] = {}

    def module(self, tree: ast.Module, nested_imports: bool) -> None:
        statements = list(self._runtime_statements(tree.body))
        for stmt, alternative in statements:
            self._module_statement(stmt, alternative)
        self._exports(tree.body)
        for node in ast.walk(tree) if nested_imports else (stmt for stmt, _ in statements):
            if isinstance(node, ast.Import):
                self.table.imports.extend(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = resolve_relative(self.table.name, self.table.is_package, node.level, node.module)
                self.table.imports.append(base)
                self.table.imports.extend(f"{base}.{alias.name}" for alias in node.names if alias.name != "*")

    def _runtime_statements(self, body: list[ast.stmt], alternative: str = ""):
        """(statement, alternative): `alternative` is "except" in an except handler and "else" in
        an else branch, whose `X = None` fallback must not hide the import it stands in for."""
        for stmt in body:
            if isinstance(stmt, ast.If):
                if _is_type_checking(stmt.test):
                    yield from self._runtime_statements(stmt.orelse, alternative)
                else:
                    yield from self._runtime_statements(stmt.body, alternative)
                    yield from self._runtime_statements(stmt.orelse, alternative or "else")
            elif isinstance(stmt, ast.Try) or type(stmt).__name__ == "TryStar":
                yield from self._runtime_statements(stmt.body, alternative)
                for handler in stmt.handlers:
                    yield from self._runtime_statements(handler.body, alternative or "except")
                yield from self._runtime_statements(stmt.orelse, alternative)
                yield from self._runtime_statements(stmt.finalbody, alternative)
            elif isinstance(stmt, (ast.With, ast.AsyncWith)):
                yield from self._runtime_statements(stmt.body, alternative)
            else:
                yield stmt, alternative

    def _module_statement(self, stmt: ast.stmt, alternative: str) -> None:
        names = self.table.names
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names[stmt.name] = Binding("def", lineno=stmt.lineno)
            self._function(stmt, stmt.name)
            if stmt.name == "__getattr__":
                self.table.has_getattr = True
                self.table.getattr_names = _getattr_names(stmt, self._literal_keys)
        elif isinstance(stmt, ast.ClassDef):
            names[stmt.name] = Binding("class", lineno=stmt.lineno)
            self._class(stmt, stmt.name)
        elif isinstance(stmt, ast.Import):
            for alias in stmt.names:
                if alias.asname:
                    names[alias.asname] = Binding("module", alias.name, stmt.lineno)
                else:
                    top = alias.name.split(".")[0]
                    names[top] = Binding("module", top, stmt.lineno)
        elif isinstance(stmt, ast.ImportFrom):
            base = resolve_relative(self.table.name, self.table.is_package, stmt.level, stmt.module)
            for alias in stmt.names:
                if alias.name == "*":
                    self.table.star_imports.append(base)
                else:
                    names[alias.asname or alias.name] = Binding("from", f"{base}:{alias.name}", stmt.lineno)
        elif isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Call) and self._built_class(stmt, alternative):
            pass
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            value = stmt.value
            for target in targets:
                if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
                    self._class_attribute(target.value.id, target.attr)
                for name in _assigned_names(target):
                    alias = dotted(value) if isinstance(value, (ast.Name, ast.Attribute)) and isinstance(target, ast.Name) else None
                    if alternative and not alias and name in names and names[name].kind != "value":
                        if alternative == "except" and names[name].kind == "from":
                            names[name] = names[name]._replace(fallback=True)
                        continue  # `except ImportError: X = None` keeps the import as what X is
                    names[name] = Binding("alias", alias, stmt.lineno) if alias else Binding("value", lineno=stmt.lineno)
        elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and dotted(stmt.value.func) == "setattr":
            args = stmt.value.args
            if len(args) == 3 and isinstance(args[0], ast.Name) and isinstance(args[1], ast.Constant) and isinstance(args[1].value, str):
                self._class_attribute(args[0].id, args[1].value)

    def _exports(self, body: list[ast.stmt]) -> None:
        """`__all__` as the module builds it: literals, `+`, `+=`, `.extend`/`.append`, and the
        filtered-globals form `[n for n in globals() if not n.startswith("_") and n not in T]`
        (T a literal table). Anything else leaves the exports unknown (`all_unknown`)."""
        exports: list[str] | None = None
        for stmt, _ in self._runtime_statements(body):
            value = None
            if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in (stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target])):
                exports = self._export_list(stmt.value)
            elif isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name) and stmt.target.id == "__all__":
                value = self._export_list(stmt.value)
                exports = None if exports is None or value is None else exports + value
            elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and dotted(stmt.value.func) in ("__all__.extend", "__all__.append", "__all__.remove"):
                argument = stmt.value.args[0] if stmt.value.args else None
                method = dotted(stmt.value.func).rsplit(".", 1)[-1]
                value = self._export_list(argument) if method == "extend" else ([argument.value] if isinstance(argument, ast.Constant) and isinstance(argument.value, str) else None)
                if exports is None or value is None:
                    exports = None
                else:
                    exports = [n for n in exports if n not in value] if method == "remove" else exports + value
            else:
                continue
            if exports is None:
                self.table.all_names, self.table.all_unknown = None, True
                return
        if exports is not None:
            self.table.all_names = tuple(exports)

    def _export_list(self, node: ast.AST | None) -> list[str] | None:
        if isinstance(node, (ast.List, ast.Tuple)):
            names = [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
            return names if len(names) == len(node.elts) else None
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left, right = self._export_list(node.left), self._export_list(node.right)
            return None if left is None or right is None else left + right
        if isinstance(node, ast.ListComp) and len(node.generators) == 1:
            generator = node.generators[0]
            source = generator.iter.args[0] if isinstance(generator.iter, ast.Call) and dotted(generator.iter.func) in ("list", "sorted") and generator.iter.args else generator.iter
            if not (isinstance(source, ast.Call) and dotted(source.func) in ("globals", "dir") and not source.args):
                return None
            if not (isinstance(generator.target, ast.Name) and isinstance(node.elt, ast.Name) and node.elt.id == generator.target.id):
                return None
            keep = [name for name in self.table.names]
            for test in generator.ifs:
                tests = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
                for condition in tests:
                    kept = _filter_names(keep, condition, generator.target.id, self._literal_keys)
                    if kept is None:
                        return None
                    keep = kept
            return keep
        return None

    def _literal_keys(self, name: str) -> set[str] | None:
        """The string keys/items of a module-level literal table (dict, set, list, tuple),
        with `T["k"] = …` and `T.add/update` of literals applied; None if not that."""
        if name in self._tables:
            return self._tables[name]
        keys: set[str] | None = None
        for stmt, _ in self._runtime_statements(self._body):
            if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in stmt.targets):
                keys = _literal_strings(stmt.value)
            elif isinstance(stmt, ast.Assign) and keys is not None and any(isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and t.value.id == name for t in stmt.targets):
                target = next(t for t in stmt.targets if isinstance(t, ast.Subscript))
                keys = keys | {target.slice.value} if isinstance(target.slice, ast.Constant) and isinstance(target.slice.value, str) else None
            elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.target.id == name and stmt.value is not None:
                keys = _literal_strings(stmt.value)
        self._tables[name] = keys
        return keys

    def _class_attribute(self, owner: str, attr: str) -> None:
        """`Cls.attr = …` at module level adds a member to a class of this module."""
        if self.table.names.get(owner, _UNBOUND).kind == "class" and owner in self.table.classes:
            self.table.classes[owner].members.setdefault(attr, "value")

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef, qualname: str) -> None:
        self.table.functions[qualname] = FunctionInfo(
            qualname,
            node.lineno,
            node.end_lineno or node.lineno,
            function_params(node.args),
            body_fingerprint(node, self.lines),
            tuple(filter(None, (dotted(d) for d in node.decorator_list))),
        )

    def _class(self, node: ast.ClassDef, qualname: str) -> None:
        members: dict[str, str] = {}
        fields: list[tuple[str, bool]] = []
        for stmt, _ in self._runtime_statements(node.body):
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and "ClassVar" not in ast.unparse(stmt.annotation):
                field_call = stmt.value if isinstance(stmt.value, ast.Call) and (dotted(stmt.value.func) or "").endswith("field") else None
                options = {kw.arg: kw.value for kw in field_call.keywords} if field_call else {}
                if not (isinstance(options.get("init"), ast.Constant) and options["init"].value is False):
                    has_default = field_call is None and stmt.value is not None or bool(options.keys() & {"default", "default_factory"})
                    fields.append((stmt.target.id, has_default))
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                # A property setter re-binds the same name; the first definition is the method.
                members.setdefault(stmt.name, "def")
                method = f"{qualname}.{stmt.name}"
                if method not in self.table.functions:
                    self._function(stmt, method)
            elif isinstance(stmt, ast.ClassDef):
                members[stmt.name] = "class"
                self._class(stmt, f"{qualname}.{stmt.name}")
            elif isinstance(stmt, (ast.Assign, ast.AnnAssign)):
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                for target in targets:
                    for name in _assigned_names(target):
                        members[name] = "value"
                        if name == "__slots__":  # each slot is a descriptor on the class
                            members.update(dict.fromkeys(_literal_names(stmt.value) or (), "value"))
        metaclass = next((_class_expression(kw.value) for kw in node.keywords if kw.arg == "metaclass"), None)
        keyword_only = any(
            kw.arg == "kw_only" and isinstance(kw.value, ast.Constant) and kw.value.value is True
            for kw in [*node.keywords, *(k for d in node.decorator_list if isinstance(d, ast.Call) for k in d.keywords)]
        )
        self.table.classes[qualname] = ClassInfo(
            qualname,
            node.lineno,
            node.end_lineno or node.lineno,
            tuple(_class_expression(base) for base in node.bases),
            members,
            tuple(filter(None, (dotted(d) for d in node.decorator_list))),
            metaclass,
            fields=tuple(fields),
            keyword_only=keyword_only,
        )

    # ------------------------------------------------------------- classes built by calls

    def _built_class(self, stmt: ast.Assign, alternative: str) -> bool:
        """Record `X = <call>` as the class X when the call builds one (see the module doc)."""
        call = stmt.value
        if len(stmt.targets) != 1 or not isinstance(stmt.targets[0], ast.Name):
            return False
        name = stmt.targets[0].id
        bound = self.table.names.get(name, _UNBOUND)
        if alternative and bound.kind not in ("value", ""):
            return False  # a fallback does not hide what the main branch binds
        own = self.table.classes.get(name) if bound.kind == "class" else None
        factory = self._canonical(call.func)
        form = _FACTORIES.get(factory or "")
        if form is None or (form == "type" and len(call.args) != 3):
            if own is None or not any(isinstance(node, ast.Name) and node.id == name for node in ast.walk(call)):
                return False
            # `X = decorate(X)`, `X = wrap(vars(X))`: still X, taken to be returned as it came
            decorator = dotted(call.func)
            self.table.classes[name] = own._replace(decorators=((decorator,) if decorator else ()) + own.decorators)
            return True
        info = _FactoryCall(name, call, factory, form, own).info(stmt)
        self.table.classes[name] = info
        self.table.names[name] = Binding("class", lineno=info.lineno)
        return True

    def _canonical(self, node: ast.AST) -> str | None:
        """The absolute path a callee names through this module's imports (`msgspec.defstruct`)."""
        path = dotted(node) if isinstance(node, (ast.Name, ast.Attribute)) else None
        if path is None:
            return None
        head, _, rest = path.partition(".")
        binding = self.table.names.get(head)
        if binding is None:
            base = f"builtins.{head}" if hasattr(builtins, head) else None
        elif binding.kind == "module":
            base = binding.target
        elif binding.kind == "from":
            base = binding.target.replace(":", ".")
        else:
            base = None
        return f"{base}.{rest}" if base and rest else base


# Factories whose classes can be read off their arguments: canonical path -> argument form.
_FACTORIES = {
    "collections.namedtuple": "namedtuple",
    "typing.NamedTuple": "namedtuple",
    "typing_extensions.NamedTuple": "namedtuple",
    "dataclasses.make_dataclass": "struct",
    "msgspec.defstruct": "struct",
    "builtins.type": "type",
    **{f"enum.{name}": "enum" for name in ("Enum", "IntEnum", "Flag", "IntFlag", "StrEnum")},
}
_UNBOUND = Binding("")


class _FactoryCall:
    """The class one factory call makes: members from literal fields and namespace, bases."""

    def __init__(self, name: str, call: ast.Call, factory: str, form: str, own: ClassInfo | None):
        self.name, self.call, self.factory, self.form, self.own = name, call, factory, form, own
        self.members: dict[str, str] = {}
        self.bases: list[str] = []
        self.computed = False  # an argument that decides members is not a literal

    def info(self, stmt: ast.Assign) -> ClassInfo:
        getattr(self, f"_{self.form}")()
        own = self.own
        reason = f"{self.name} is built by {self.factory} from arguments computed at import (line {stmt.lineno})" if self.computed else None
        return ClassInfo(
            self.name,
            own.lineno if own else stmt.lineno,
            own.end_lineno if own else stmt.end_lineno or stmt.lineno,
            tuple(self.bases),
            self.members,
            open_members=reason,
        )

    def _arg(self, position: int | None, *keywords: str) -> ast.AST | None:
        for kw in self.call.keywords:
            if kw.arg in keywords:
                return kw.value
        return self.call.args[position] if position is not None and len(self.call.args) > position else None

    def _field_list(self, node: ast.AST | None) -> None:
        """make_dataclass / defstruct fields: names, or (name, type[, default]) tuples."""
        if node is None:
            return
        if not isinstance(node, (ast.List, ast.Tuple)):
            self.computed = True
            return
        for element in node.elts:
            if isinstance(element, (ast.Tuple, ast.List)) and element.elts:
                element = element.elts[0]
            if isinstance(element, ast.Constant) and isinstance(element.value, str):
                self.members[element.value] = "value"
            else:
                self.computed = True

    def _namedtuple(self) -> None:
        node = self._arg(1, "field_names", "fields")
        names = _literal_names(node)
        if names is None and isinstance(node, (ast.List, ast.Tuple)):  # typing.NamedTuple: (name, type) pairs
            self._field_list(node)
        elif names is None:
            self.computed = node is not None
        self.members.update(dict.fromkeys(names or (), "value"))
        if self.factory.endswith("NamedTuple"):  # NamedTuple("P", x=int), the keyword form
            self.members.update({kw.arg: "value" for kw in self.call.keywords if kw.arg and kw.arg != "fields"})
        self.bases.append(f"{self.factory}()")

    def _struct(self) -> None:
        self._field_list(self._arg(1, "fields"))
        self._base_tuple(self._arg(None, "bases"), allow_none=True)
        self.bases.append(f"{self.factory}()")
        self._namespace(self._arg(None, "namespace"))

    def _type(self) -> None:
        self._base_tuple(self.call.args[1], allow_none=False)
        self._namespace(self.call.args[2])

    def _enum(self) -> None:
        node = self._arg(1, "names")
        if isinstance(node, ast.Dict):
            names = [k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)]
            self.computed = len(names) != len(node.keys)
        elif isinstance(node, (ast.List, ast.Tuple)) and node.elts and isinstance(node.elts[0], (ast.List, ast.Tuple)):
            self._field_list(node)
            names = []
        else:
            names = _literal_names(node)
            self.computed = names is None
        self.members.update(dict.fromkeys(names or (), "value"))
        self.bases.append(dotted(self.call.func) or self.factory)

    def _base_tuple(self, node: ast.AST | None, allow_none: bool) -> None:
        if node is None or (allow_none and isinstance(node, ast.Constant) and node.value is None):
            return
        if not isinstance(node, (ast.Tuple, ast.List)):
            self.computed = True
            return
        for element in node.elts:
            if isinstance(element, ast.Name) and element.id == self.name and self.own:
                self.bases.extend(self.own.bases)  # type("X", (X,), …): the old X is a base
                self.members.update(self.own.members)
            elif dotted(element):
                self.bases.append(dotted(element))
            else:
                self.computed = True

    def _namespace(self, node: ast.AST | None) -> None:
        """A literal dict's keys, or the old class's own members (vars(X), X.__dict__)."""
        if node is None or (isinstance(node, ast.Constant) and node.value is None):
            return
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values):
                if key is None:
                    self._namespace(value)  # {**vars(X), …}
                elif isinstance(key, ast.Constant) and isinstance(key.value, str):
                    self.members[key.value] = "value"
                else:
                    self.computed = True
            return
        names = self._own_names(node)
        if names is None:
            self.computed = True
        else:
            self.members.update({name: self.own.members[name] for name in names})

    def _own_names(self, node: ast.AST) -> set[str] | None:
        """Names of the old class's namespace that `node` carries over, when decidable."""
        if self.own is None:
            return None
        if _is_vars_of(node, self.name):
            return set(self.own.members)
        if not (isinstance(node, ast.DictComp) and len(node.generators) == 1):
            return None
        generator = node.generators[0]
        source = generator.iter
        if isinstance(source, ast.Call) and isinstance(source.func, ast.Attribute) and source.func.attr in ("items", "keys") and not source.args:
            source = source.func.value
        key = generator.target.elts[0] if isinstance(generator.target, ast.Tuple) and generator.target.elts else generator.target
        if not (_is_vars_of(source, self.name) and isinstance(key, ast.Name) and isinstance(node.key, ast.Name) and node.key.id == key.id):
            return None
        names = set(self.own.members)
        for condition in generator.ifs:  # `k not in (…)` / `k in (…)`; any other filter is not evaluated
            if not (isinstance(condition, ast.Compare) and len(condition.ops) == 1 and isinstance(condition.left, ast.Name) and condition.left.id == key.id):
                return None
            listed = _literal_names(condition.comparators[0], split=False)
            if listed is None or not isinstance(condition.ops[0], (ast.In, ast.NotIn)):
                return None
            names = names - set(listed) if isinstance(condition.ops[0], ast.NotIn) else names & set(listed)
        return names


def _class_expression(node: ast.AST) -> str:
    """A base or metaclass as a dotted name (`Generic[T]` is `Generic`), or `?<source>` for one
    computed when the class is created (a call, …), which no static lookup can follow."""
    if isinstance(node, ast.Subscript):
        node = node.value
    return dotted(node) if isinstance(node, (ast.Name, ast.Attribute)) else "?" + ast.unparse(node)


def _is_vars_of(node: ast.AST, name: str) -> bool:
    """vars(X), X.__dict__, dict(vars(X))."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("vars", "dict") and len(node.args) == 1 and not node.keywords:
        inner = node.args[0]
        return (node.func.id == "vars" and isinstance(inner, ast.Name) and inner.id == name) or _is_vars_of(inner, name)
    return isinstance(node, ast.Attribute) and node.attr == "__dict__" and isinstance(node.value, ast.Name) and node.value.id == name


def _literal_names(node: ast.AST | None, split: bool = True) -> list[str] | None:
    """"a b" / "a, b" (when `split`), or a list/tuple/set of string constants; None otherwise."""
    if split and isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value.replace(",", " ").split()
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)) and all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts):
        return [e.value for e in node.elts]
    return None


def instance_attributes(source: bytes, info: ClassInfo) -> InstanceAttributes:
    """What the methods of one class body assign on their instance (`self.x = …`, annotated,
    augmented, tuple and starred targets, loop and `with` targets, `setattr(self, "x", …)`), and
    why more may exist (`setattr` with a computed name, `self.__dict__` / `vars(self)` writes, a
    `__getattr__`/`__getattribute__`). Parses the module again: asked for a few classes only,
    so extraction does not walk every function body. A class made by a call has no method
    bodies: nothing. Raises SyntaxError/ValueError if the source does not parse."""
    name = info.qualname.rsplit(".", 1)[-1]
    node = next((n for n in ast.walk(_parse(source)) if isinstance(n, ast.ClassDef) and n.lineno == info.lineno and n.name == name), None)
    names: dict[str, int] = {}
    dynamic: list[str] = []
    for method in node.body if node else ():
        if not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        if method.name in ("__getattr__", "__getattribute__"):
            dynamic.append(f"{info.qualname} defines {method.name} (line {method.lineno})")
        positional = [*method.args.posonlyargs, *method.args.args]
        if not positional or any(dotted(d) in ("staticmethod", "classmethod") for d in method.decorator_list):
            continue
        _SelfWrites(positional[0].arg, names, dynamic, info.qualname).visit_body(method.body)
    return InstanceAttributes(names, tuple(dynamic))


# torch.nn.Module methods that make `self.<name>` answer through Module.__getattr__
_MODULE_REGISTRATIONS = {"register_buffer", "register_parameter", "add_module", "register_module"}


class _SelfWrites(ast.NodeVisitor):
    def __init__(self, receiver: str, names: dict[str, int], dynamic: list[str], owner: str):
        self.receiver, self.names, self.dynamic, self.owner = receiver, names, dynamic, owner

    def visit_body(self, body: list[ast.stmt]) -> None:
        for stmt in body:
            self.visit(stmt)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        pass  # a nested class's methods have their own receiver

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            self._target(target)
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self._target(node.target)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._target(node.target)
        self.generic_visit(node)

    def visit_For(self, node: ast.For | ast.AsyncFor) -> None:
        self._target(node.target)
        self.generic_visit(node)

    visit_AsyncFor = visit_For

    def visit_withitem(self, node: ast.withitem) -> None:
        if node.optional_vars is not None:
            self._target(node.optional_vars)
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = dotted(node.func)
        if func == "setattr" and node.args and self._is_receiver(node.args[0]):
            key = node.args[1] if len(node.args) > 1 else None
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                self.names.setdefault(key.value, node.lineno)
            else:
                self.dynamic.append(f"{self.owner} sets attributes with a computed name (setattr, line {node.lineno})")
        elif isinstance(node.func, ast.Attribute) and node.func.attr in ("update", "setdefault", "__setitem__") and self._is_instance_dict(node.func.value):
            self.dynamic.append(f"{self.owner} writes its instance __dict__ (line {node.lineno})")
        elif isinstance(node.func, ast.Attribute) and node.func.attr in _MODULE_REGISTRATIONS and self._is_receiver(node.func.value):
            # torch.nn.Module answers these names through its __getattr__
            key = node.args[0] if node.args else next((kw.value for kw in node.keywords if kw.arg == "name"), None)
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                self.names.setdefault(key.value, node.lineno)
            else:
                self.dynamic.append(f"{self.owner} registers a parameter, buffer or submodule with a computed name ({node.func.attr}, line {node.lineno})")
        self.generic_visit(node)

    def _target(self, target: ast.AST) -> None:
        if isinstance(target, ast.Attribute) and self._is_receiver(target.value):
            self.names.setdefault(target.attr, target.lineno)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                self._target(element)
        elif isinstance(target, ast.Starred):
            self._target(target.value)
        elif isinstance(target, ast.Subscript) and self._is_instance_dict(target.value):
            self.dynamic.append(f"{self.owner} writes its instance __dict__ (line {target.lineno})")

    def _is_receiver(self, node: ast.AST) -> bool:
        return isinstance(node, ast.Name) and node.id == self.receiver

    def _is_instance_dict(self, node: ast.AST) -> bool:
        """self.__dict__ or vars(self)."""
        if isinstance(node, ast.Attribute) and node.attr == "__dict__":
            return self._is_receiver(node.value)
        return isinstance(node, ast.Call) and dotted(node.func) == "vars" and len(node.args) == 1 and self._is_receiver(node.args[0])


def _literal_strings(node: ast.AST | None) -> set[str] | None:
    if isinstance(node, ast.Dict):
        keys = [k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)]
        return set(keys) if len(keys) == len(node.keys) else None
    if isinstance(node, (ast.Set, ast.List, ast.Tuple)):
        items = [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
        return set(items) if len(items) == len(node.elts) else None
    if isinstance(node, ast.Call) and dotted(node.func) in ("frozenset", "set", "dict") and not node.args and not node.keywords:
        return set()
    return None


def _filter_names(names: list[str], test: ast.AST, var: str, tables) -> list[str] | None:
    """`names` kept by one comprehension filter on `var`, or None if it is not understood:
    `[not] var.startswith("p")`, `var [not] in TABLE`."""
    negate = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
    inner = test.operand if negate else test
    if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute) and inner.func.attr in ("startswith", "endswith") \
            and isinstance(inner.func.value, ast.Name) and inner.func.value.id == var and len(inner.args) == 1 \
            and isinstance(inner.args[0], ast.Constant) and isinstance(inner.args[0].value, str):
        affix = inner.args[0].value
        return [n for n in names if getattr(n, inner.func.attr)(affix) != negate]
    if not negate and isinstance(inner, ast.Compare) and len(inner.ops) == 1 and isinstance(inner.ops[0], (ast.In, ast.NotIn)) \
            and isinstance(inner.left, ast.Name) and inner.left.id == var:
        right = inner.comparators[0]
        table = tables(right.id) if isinstance(right, ast.Name) else _literal_strings(right)
        if table is None:
            return None
        return [n for n in names if (n in table) == isinstance(inner.ops[0], ast.In)]
    return None


def _getattr_names(function: ast.FunctionDef | ast.AsyncFunctionDef, tables) -> tuple[str, ...] | None:
    """The names a module `__getattr__(name)` (PEP 562) can answer, when its code says so, or
    None (any name may be answered). Its body, statement by statement, may only: test the name
    (`if name == "x"`, `if name in {...}` / `in TABLE`: those are answered), look it up in a
    literal table (`found = TABLE.get(name)` then `if found is None: raise …`: the table's keys
    are answered, the rest of the body runs for them only), and end by raising."""
    if not function.args.args:
        return None
    var = function.args.args[0].arg
    answered: set[str] = set()
    looked_up: dict[str, set[str]] = {}  # local -> keys of the table it was .get() from
    for stmt in function.body:
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            continue  # docstring
        if isinstance(stmt, ast.Raise):
            return tuple(sorted(answered))
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            call = stmt.value
            if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "get" and isinstance(call.func.value, ast.Name) \
                    and call.args and isinstance(call.args[0], ast.Name) and call.args[0].id == var and len(call.args) == 1:
                table = tables(call.func.value.id)
                if table is None:
                    return None
                looked_up[stmt.targets[0].id] = table
                continue
            return None
        if isinstance(stmt, ast.If):
            test = stmt.test
            if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.left, ast.Name):
                right = test.comparators[0]
                if test.left.id in looked_up and isinstance(test.ops[0], ast.Is) and isinstance(right, ast.Constant) and right.value is None \
                        and stmt.body and isinstance(stmt.body[-1], ast.Raise) and not stmt.orelse:
                    return tuple(sorted(answered | looked_up[test.left.id]))  # the rest runs for the table's keys only
                if test.left.id == var and isinstance(test.ops[0], ast.Eq) and isinstance(right, ast.Constant) and isinstance(right.value, str):
                    answered.add(right.value)
                    continue
                if test.left.id == var and isinstance(test.ops[0], ast.In):
                    table = tables(right.id) if isinstance(right, ast.Name) else _literal_strings(right)
                    if table is None:
                        return None
                    answered |= table
                    continue
        return None
    return None


def _assigned_names(target: ast.AST):
    if isinstance(target, ast.Name):
        yield target.id
    elif isinstance(target, (ast.Tuple, ast.List)):
        for element in target.elts:
            yield from _assigned_names(element)
