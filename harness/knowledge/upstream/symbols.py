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

from harness.knowledge.model import (
    Binding,
    ClassInfo,
    FunctionInfo,
    ModuleTable,
    body_fingerprint,
    dotted,
    function_params,
    parse_source,
    resolve_relative,
    walk,
)
from harness.knowledge.upstream.class_factories import (
    FACTORIES,
    FactoryCall,
    literal_names,
)

_UNBOUND = Binding("")


def extract_module(name: str, path: str, source: bytes, is_package: bool, nested_imports: bool = False, tree: ast.Module | None = None) -> ModuleTable:
    """`nested_imports` also records imports inside functions: the plugin import graph needs
    them (hooks are imported from functions that run at load); upstream tables do not, and
    walking every node would cost four times the parse. `tree` is `source` already parsed."""
    table = ModuleTable(name=name, path=path, is_package=is_package)
    try:
        tree = tree or parse_source(source)
    except (SyntaxError, ValueError) as exc:
        table.error = f"does not parse: {exc}"
        return table
    lines = source.decode("utf-8", errors="replace").splitlines()
    _Extractor(table, lines, tree.body).module(tree, nested_imports)
    return table


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
        if self.table.has_getattr:
            self._getattr_bindings(tree.body)
        for node in walk(tree) if nested_imports else (stmt for stmt, _ in statements):
            if isinstance(node, ast.Import):
                self.table.imports.extend(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = resolve_relative(self.table.name, self.table.is_package, node.level, node.module)
                self.table.imports.append(base)
                self.table.imports.extend(f"{base}.{alias.name}" for alias in node.names if alias.name != "*")

    def _getattr_bindings(self, body: list[ast.stmt]) -> None:
        """The names the module's `__getattr__` answers that an `if TYPE_CHECKING:` block imports
        by name (`from vllm.model_executor.models import ModelRegistry`): the idiom of a lazy
        module attribute, typed by the import its lookup performs at run time."""
        answered = self.table.getattr_names
        for stmt in body:
            if not (isinstance(stmt, ast.If) and _is_type_checking(stmt.test)):
                continue
            for node in stmt.body:
                if isinstance(node, ast.ImportFrom):
                    base = resolve_relative(self.table.name, self.table.is_package, node.level, node.module)
                    for alias in node.names:
                        name = alias.asname or alias.name
                        if alias.name != "*" and name not in self.table.names and (answered is None or name in answered):
                            self.table.getattr_bindings[name] = Binding("from", f"{base}:{alias.name}", node.lineno)

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
                    if alias == name and name in names:
                        continue  # `X = X` (a back-compat block) rebinds what X already is: an import, a class, a value
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
                # `field(…)` (dataclasses.field, any import of it) decides by its options; any other
                # value, a helper's call returning a Field too (vLLM's `get_field(Cfg, "x")`), is a default
                field_call = stmt.value if isinstance(stmt.value, ast.Call) and (dotted(stmt.value.func) or "").rsplit(".", 1)[-1] == "field" else None
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
                            members.update(dict.fromkeys(literal_names(stmt.value) or (), "value"))
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
        form = FACTORIES.get(factory or "")
        if form is None or (form == "type" and len(call.args) != 3):
            if own is None or not any(isinstance(node, ast.Name) and node.id == name for node in walk(call)):
                return False
            # `X = decorate(X)`, `X = wrap(vars(X))`: still X, taken to be returned as it came
            decorator = dotted(call.func)
            self.table.classes[name] = own._replace(decorators=((decorator,) if decorator else ()) + own.decorators)
            return True
        info = FactoryCall(name, call, factory, form, own).info(stmt)
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


def _class_expression(node: ast.AST) -> str:
    """A base or metaclass as a dotted name (`Generic[T]` is `Generic`), or `?<source>` for one
    computed when the class is created (a call, …), which no static lookup can follow."""
    if isinstance(node, ast.Subscript):
        node = node.value
    return dotted(node) if isinstance(node, (ast.Name, ast.Attribute)) else "?" + ast.unparse(node)


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
    statements = list(function.body)
    while statements:
        stmt = statements.pop(0)
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) or isinstance(stmt, (ast.Import, ast.ImportFrom)):
            continue  # docstring, a local import
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
                    statements[:0] = stmt.orelse  # an `elif` chain: the other names go on there
                    continue
                if (test.left.id == var and isinstance(test.ops[0], ast.In) and isinstance(right, ast.Call) and not right.args
                        and dotted(right.func) in ("globals", "vars")):
                    statements[:0] = stmt.orelse  # `elif name in globals()`: only names the module binds anyway
                    continue
                if test.left.id == var and isinstance(test.ops[0], ast.In):
                    table = tables(right.id) if isinstance(right, ast.Name) else _literal_strings(right)
                    if table is None:
                        return None
                    answered |= table
                    if stmt.orelse and isinstance(stmt.orelse[-1], ast.Raise):
                        return tuple(sorted(answered))  # `if name in T: … else: raise` (vllm/__init__.py)
                    continue
        return None
    return None


def _assigned_names(target: ast.AST):
    if isinstance(target, ast.Name):
        yield target.id
    elif isinstance(target, (ast.Tuple, ast.List)):
        for element in target.elts:
            yield from _assigned_names(element)
