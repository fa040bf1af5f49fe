"""What the methods of an upstream class assign on their instance (`self.x = …`), for the
lookups a class body does not answer (harness.knowledge.upstream.index asks for a few classes only).
"""

from __future__ import annotations

import ast

from harness.knowledge.model import ClassInfo, InstanceAttributes, bind_literal, dotted, literal_text, literal_value, module_literals, walk


def instance_attributes(tree: ast.Module, info: ClassInfo) -> InstanceAttributes:
    """What the methods of one class body assign on their instance (`self.x = …`, annotated,
    augmented, tuple and starred targets, loop and `with` targets, `setattr(self, "x", …)`, a
    helper handed the instance and a name: `replace_parameter(self, "x", …)`), and
    why more may exist (`setattr` with a computed name, `self.__dict__` / `vars(self)` writes, a
    `__getattr__`/`__getattribute__`), from the module's `tree`: asked for a few classes only,
    so extraction does not walk every function body. A class made by a call has no method
    bodies: nothing."""
    name = info.qualname.rsplit(".", 1)[-1]
    node = next((n for n in walk(tree) if isinstance(n, ast.ClassDef) and n.lineno == info.lineno and n.name == name), None)
    names: dict[str, int] = {}
    dynamic: list[str] = []
    constants = module_literals(tree)
    for method in node.body if node else ():
        if not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        if method.name in ("__getattr__", "__getattribute__"):
            dynamic.append(f"{info.qualname} defines {method.name} (line {method.lineno})")
        positional = [*method.args.posonlyargs, *method.args.args]
        if not positional or any(dotted(d) in ("staticmethod", "classmethod") for d in method.decorator_list):
            continue
        _SelfWrites(positional[0].arg, names, dynamic, info.qualname, constants).visit_body(method.body)
    return InstanceAttributes(names, tuple(dynamic))


# builtins that take an object and a name without setting it
_NOT_SETTERS = {"getattr", "hasattr", "delattr", "isinstance", "issubclass"}
# torch.nn.Module methods that make `self.<name>` answer through Module.__getattr__
_MODULE_REGISTRATIONS = {"register_buffer", "register_parameter", "add_module", "register_module"}


class _SelfWrites(ast.NodeVisitor):
    def __init__(self, receiver: str, names: dict[str, int], dynamic: list[str], owner: str, constants: dict[str, ast.expr]):
        self.receiver, self.names, self.dynamic, self.owner, self.constants = receiver, names, dynamic, owner, constants
        self.computed: dict[int, list[str]] = {}  # id of a setattr call -> the names its loop gives it

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
        self._loop_names(node)
        self.generic_visit(node)

    def _loop_names(self, loop: ast.For | ast.AsyncFor) -> None:
        """`for spec in SPECS: name = spec[0]; setattr(self, f"{name}_communicator", …)`
        (sglang's TokenizerControlMixin.init_communicators): over a literal table, or a module
        global bound to one, each element's name, as the loop computes it with plain assignments
        (names, item subscripts, tuple unpacking) and string building (f-strings, `+`, `%`,
        `.format`). A setattr whose name any element leaves undecided stays computed."""
        elements = _elements(loop.iter, self.constants)
        if elements is None:
            return
        found: dict[int, list[str]] = {}
        undecided: set[int] = set()
        for element in elements:
            env: dict[str, ast.expr] = {}
            bind_literal(loop.target, element, env)
            for stmt in loop.body:
                for call in walk(stmt):
                    if (isinstance(call, ast.Call) and dotted(call.func) == "setattr" and len(call.args) > 1
                            and self._is_receiver(call.args[0]) and not isinstance(call.args[1], ast.Constant)):
                        text = literal_text(call.args[1], env)
                        if text is None or not text.isidentifier():
                            undecided.add(id(call))
                        else:
                            found.setdefault(id(call), []).append(text)
                if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
                    bind_literal(stmt.targets[0], literal_value(stmt.value, env), env)
        self.computed.update({key: names for key, names in found.items() if key not in undecided})

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
            elif id(node) in self.computed:
                for computed in self.computed[id(node)]:
                    self.names.setdefault(computed, node.lineno)
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
        elif (func not in _NOT_SETTERS and len(node.args) >= 2 and self._is_receiver(node.args[0]) and isinstance(node.args[1], ast.Constant)
              and isinstance(node.args[1].value, str) and node.args[1].value.isidentifier()):
            # the instance and a name handed to a helper that sets it (vLLM's `replace_parameter(self,
            # "W_UV", …)`): the name may be there after the call
            self.names.setdefault(node.args[1].value, node.lineno)
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


def _elements(table: ast.expr, constants: dict[str, ast.expr]) -> list[ast.expr] | None:
    """The elements a `for` takes from a literal list/tuple/set, a dict (its keys) or its
    `.items()` (key, value pairs) / `.keys()`, each written there or bound to a module global;
    None for anything else."""
    def held(node: ast.expr) -> ast.expr | None:
        return constants.get(node.id) if isinstance(node, ast.Name) else node

    if isinstance(table, ast.Call) and isinstance(table.func, ast.Attribute) and not table.args:
        pairs = held(table.func.value)
        if not isinstance(pairs, ast.Dict) or None in pairs.keys:
            return None
        if table.func.attr == "items":
            return [ast.Tuple(elts=[k, v], ctx=ast.Load()) for k, v in zip(pairs.keys, pairs.values)]
        table = pairs if table.func.attr == "keys" else None
    table = held(table)
    if isinstance(table, ast.Dict):
        return None if None in table.keys else list(table.keys)
    if isinstance(table, (ast.List, ast.Tuple, ast.Set)) and not any(isinstance(e, ast.Starred) for e in table.elts):
        return list(table.elts)
    return None

