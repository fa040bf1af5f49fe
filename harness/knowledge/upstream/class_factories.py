"""Classes built by a module-level call (`X = namedtuple("X", "a b")`, `make_dataclass`,
`msgspec.defstruct`, `type(name, bases, ns)`, the functional `Enum` API, a class rebuilt from
itself): their members and bases, read off literal arguments (see harness.knowledge.upstream.symbols).
"""

from __future__ import annotations

import ast

from harness.knowledge.model import ClassInfo, dotted

# Factories whose classes can be read off their arguments: canonical path -> argument form.
FACTORIES = {
    "collections.namedtuple": "namedtuple",
    "typing.NamedTuple": "namedtuple",
    "typing_extensions.NamedTuple": "namedtuple",
    "dataclasses.make_dataclass": "struct",
    "msgspec.defstruct": "struct",
    "builtins.type": "type",
    **{f"enum.{name}": "enum" for name in ("Enum", "IntEnum", "Flag", "IntFlag", "StrEnum")},
}


class FactoryCall:
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
        names = literal_names(node)
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
            names = literal_names(node)
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
        if is_vars_of(node, self.name):
            return set(self.own.members)
        if not (isinstance(node, ast.DictComp) and len(node.generators) == 1):
            return None
        generator = node.generators[0]
        source = generator.iter
        if isinstance(source, ast.Call) and isinstance(source.func, ast.Attribute) and source.func.attr in ("items", "keys") and not source.args:
            source = source.func.value
        key = generator.target.elts[0] if isinstance(generator.target, ast.Tuple) and generator.target.elts else generator.target
        if not (is_vars_of(source, self.name) and isinstance(key, ast.Name) and isinstance(node.key, ast.Name) and node.key.id == key.id):
            return None
        names = set(self.own.members)
        for condition in generator.ifs:  # `k not in (…)` / `k in (…)`; any other filter is not evaluated
            if not (isinstance(condition, ast.Compare) and len(condition.ops) == 1 and isinstance(condition.left, ast.Name) and condition.left.id == key.id):
                return None
            listed = literal_names(condition.comparators[0], split=False)
            if listed is None or not isinstance(condition.ops[0], (ast.In, ast.NotIn)):
                return None
            names = names - set(listed) if isinstance(condition.ops[0], ast.NotIn) else names & set(listed)
        return names


def is_vars_of(node: ast.AST, name: str) -> bool:
    """vars(X), X.__dict__, dict(vars(X))."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("vars", "dict") and len(node.args) == 1 and not node.keywords:
        inner = node.args[0]
        return (node.func.id == "vars" and isinstance(inner, ast.Name) and inner.id == name) or is_vars_of(inner, name)
    return isinstance(node, ast.Attribute) and node.attr == "__dict__" and isinstance(node.value, ast.Name) and node.value.id == name


def literal_names(node: ast.AST | None, split: bool = True) -> list[str] | None:
    """"a b" / "a, b" (when `split`), or a list/tuple/set of string constants; None otherwise."""
    if split and isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value.replace(",", " ").split()
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)) and all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts):
        return [e.value for e in node.elts]
    return None
