"""What one Python module defines, imports and re-exports: the unit the symbol index caches.

Extraction reads only the statements that bind names at module and class level (including
those under `if`/`try`/`with`, which run at import time) and skips `if TYPE_CHECKING:` bodies,
which never run. Everything here is plain data so a table pickles small and loads fast.
"""

from __future__ import annotations

import ast
import hashlib
import re
from dataclasses import dataclass, field
from typing import NamedTuple

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
    bases: tuple[str, ...]  # dotted source expressions, resolved lazily in the module's scope
    members: dict[str, str]  # name -> def | class | value


class Binding(NamedTuple):
    kind: str  # def | class | value | alias | module | from
    target: str = ""  # alias: dotted expression; module: module name; from: "module:name"
    lineno: int = 0


@dataclass
class ModuleTable:
    name: str
    path: str  # relative to the source root
    is_package: bool
    names: dict[str, Binding] = field(default_factory=dict)
    star_imports: list[str] = field(default_factory=list)
    all_names: tuple[str, ...] | None = None
    functions: dict[str, FunctionInfo] = field(default_factory=dict)
    classes: dict[str, ClassInfo] = field(default_factory=dict)
    has_getattr: bool = False  # a module-level __getattr__ answers any name
    imports: list[str] = field(default_factory=list)  # absolute module names imported anywhere
    error: str | None = None  # set when the file does not parse


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


def extract_module(name: str, path: str, source: bytes, is_package: bool, nested_imports: bool = False) -> ModuleTable:
    """`nested_imports` also records imports inside functions: the plugin import graph needs
    them (hooks are imported from functions that run at load); upstream tables do not, and
    walking every node would cost four times the parse."""
    table = ModuleTable(name=name, path=path, is_package=is_package)
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError) as exc:
        table.error = f"does not parse: {exc}"
        return table
    lines = source.decode("utf-8", errors="replace").splitlines()
    _Extractor(table, lines).module(tree, nested_imports)
    return table


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
    def __init__(self, table: ModuleTable, lines: list[str]):
        self.table = table
        self.lines = lines

    def module(self, tree: ast.Module, nested_imports: bool) -> None:
        statements = list(self._runtime_statements(tree.body))
        for stmt, alternative in statements:
            self._module_statement(stmt, alternative)
        for node in ast.walk(tree) if nested_imports else (stmt for stmt, _ in statements):
            if isinstance(node, ast.Import):
                self.table.imports.extend(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = resolve_relative(self.table.name, self.table.is_package, node.level, node.module)
                self.table.imports.append(base)
                self.table.imports.extend(f"{base}.{alias.name}" for alias in node.names if alias.name != "*")

    def _runtime_statements(self, body: list[ast.stmt], alternative: bool = False):
        """(statement, alternative): `alternative` marks an except handler or an else branch,
        whose `X = None` fallback must not hide the import it stands in for."""
        for stmt in body:
            if isinstance(stmt, ast.If):
                if _is_type_checking(stmt.test):
                    yield from self._runtime_statements(stmt.orelse, alternative)
                else:
                    yield from self._runtime_statements(stmt.body, alternative)
                    yield from self._runtime_statements(stmt.orelse, True)
            elif isinstance(stmt, ast.Try) or type(stmt).__name__ == "TryStar":
                yield from self._runtime_statements(stmt.body, alternative)
                for handler in stmt.handlers:
                    yield from self._runtime_statements(handler.body, True)
                yield from self._runtime_statements(stmt.orelse, alternative)
                yield from self._runtime_statements(stmt.finalbody, alternative)
            elif isinstance(stmt, (ast.With, ast.AsyncWith)):
                yield from self._runtime_statements(stmt.body, alternative)
            else:
                yield stmt, alternative

    def _module_statement(self, stmt: ast.stmt, alternative: bool) -> None:
        names = self.table.names
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names[stmt.name] = Binding("def", lineno=stmt.lineno)
            self._function(stmt, stmt.name)
            if stmt.name == "__getattr__":
                self.table.has_getattr = True
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
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            value = stmt.value
            for target in targets:
                for name in _assigned_names(target):
                    alias = dotted(value) if isinstance(value, (ast.Name, ast.Attribute)) and isinstance(target, ast.Name) else None
                    if alternative and not alias and name in names and names[name].kind != "value":
                        continue  # `except ImportError: X = None` keeps the import as what X is
                    names[name] = Binding("alias", alias, stmt.lineno) if alias else Binding("value", lineno=stmt.lineno)
                    if name == "__all__" and isinstance(value, (ast.List, ast.Tuple)):
                        self.table.all_names = tuple(
                            elt.value for elt in value.elts if isinstance(elt, ast.Constant) and isinstance(elt.value, str)
                        )

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
        for stmt, _ in self._runtime_statements(node.body):
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
        self.table.classes[qualname] = ClassInfo(
            qualname,
            node.lineno,
            node.end_lineno or node.lineno,
            tuple(filter(None, (dotted(base) for base in node.bases))),
            members,
        )


def _assigned_names(target: ast.AST):
    if isinstance(target, ast.Name):
        yield target.id
    elif isinstance(target, (ast.Tuple, ast.List)):
        for element in target.elts:
            yield from _assigned_names(element)
