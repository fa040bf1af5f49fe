"""Where the plugin reads a method by name, and through what receiver: whether a plugin method
nothing else names can run.

The scan keeps only the first place each attribute name is read (PluginScan.attribute_uses), so
`self.forward_kunlun` in TopKTopPSampler's __init__ looks like a use of QuickGELU.forward_kunlun.
When a method would otherwise count as uncalled (Judge.uncalled_method), the plugin's modules that
mention the name are parsed again and every read placed: one through `self`/`cls` inside a method
of a plugin class reaches only that class's own hierarchy; any other receiver may be anything.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from dataclasses import dataclass

from harness.knowledge.model import (
    Param,
    PluginClass,
    PluginScan,
    Ref,
    dotted,
    function_params,
    module_source,
    resolve_relative,
    walk,
)
from harness.knowledge.scan.syntax import is_main_test, is_super, name_shape


@dataclass(frozen=True)
class Read:
    """One `….name` read in the plugin: where, and the plugin class whose method reads it
    through self/cls (None: another receiver, whose class is not known)."""

    where: str
    through_self_of: str | None
    through_super: bool = False  # `super().name`: reaches only classes after through_self_of
    # `self.<attr>.name` in a method of plugin class `in_class`: the attribute, whose value decides
    self_attribute: tuple[str, str] | None = None  # (in_class, attr)
    # the classes (dotted paths as the module imports them) an isinstance check around the read
    # says the receiver is an instance of; () when there is none
    narrowed: tuple[str, ...] = ()


def reads_of(scan: PluginScan, name: str) -> list[Read]:
    """Every load of `….name` in the plugin's modules, in module order."""
    found: list[Read] = []
    for module, tree in _trees_mentioning(scan, name.encode()):
        _Reads(module.name, module.file, name, _imported_names(tree, module.name, module.is_package), found).visit(tree, None, False, None, {})
    return found


def unnamed_private_function(scan: PluginScan, path: str) -> bool:
    """Whether `path` ("pkg.mod._helper") is an undecorated module-level function whose name
    says it is the module's own (a leading underscore: not part of its interface, PEP 8) and
    that no plugin source names anywhere else: no call, reference or string of it (a word
    search, so a mention in a comment counts too). Nothing can then call it. A mention inside
    the module's own `if __name__ == "__main__":` block does not count unless the plugin runs
    that module as a script (PluginScan.main_modules: `python -m` in its CI or docs): imported, the
    block never runs (Python's `__main__` docs)."""
    module, _, name = path.rpartition(".")
    if module not in scan.modules or not name.startswith("_") or name.startswith("__"):
        return False
    word = re.compile(rb"\b" + re.escape(name.encode()) + rb"\b")
    scripted = module in scan.main_modules
    mentions = 0
    for found, tree in _trees_mentioning(scan, name.encode()):
        source = module_source(scan.root / found.file, scan.root)
        mentions += len(word.findall(source))
        if found.name == module and not any(isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name and not node.decorator_list
                                            for node in tree.body):
            return False
        if found.name == module and not scripted:
            lines = source.splitlines()
            mentions -= sum(len(word.findall(b"\n".join(lines[node.lineno - 1:node.end_lineno]))) for node in tree.body
                            if isinstance(node, ast.If) and is_main_test(node.test) and not node.orelse)
    return mentions == 1


def _trees_mentioning(scan: PluginScan, needle: bytes, *any_of: bytes):
    """(module, AST) of each readable, parsing plugin module whose source holds `needle` and,
    when `any_of` is given, one of those too; in module order. A module is parsed once per
    process however many names are asked about (the judge asks per dependency)."""
    for module in scan.modules.values():
        if module.error is not None:
            continue
        path = scan.root / module.file
        try:
            source = module_source(path, scan.root)
        except OSError:
            continue
        if needle not in source or (any_of and not any(word in source for word in any_of)):
            continue
        key = (str(path), hash(source))
        if key not in _TREES:
            try:
                _TREES[key] = ast.parse(source)
            except SyntaxError:
                _TREES[key] = None
        if _TREES[key] is not None:
            yield module, _TREES[key]


_TREES: dict[tuple[str, int], ast.Module | None] = {}


def module_getattr_unreached(scan: PluginScan, module: str) -> bool:
    """Whether the module-level `__getattr__` of the plugin module `module` (PEP 562) is never
    called: no plugin code reads a name the module does not bind (module_getattr_reads). False
    when any read may reach it."""
    return not module_getattr_reads(scan, module)


def module_getattr_reads(scan: PluginScan, module: str) -> list[tuple[str | None, str]]:
    """The reads of the plugin module `module` that its module-level `__getattr__` (PEP 562)
    answers, Python calling it only for a name the module does not bind: (the name, or None
    where it is not constant, "file:line") for each `from module import X`, `module.X` through
    an import of it, `getattr(module, …)` or entry point `module:X`, X unbound there. A submodule
    is bound once something imports it (`import module.X`, `from module import X` names the
    submodule itself); one nothing imports is answered by `__getattr__` too."""
    found = scan.modules.get(module)
    if found is None or found.error is not None:
        return []
    tree = next((tree for m, tree in _trees_mentioning(scan, b"__getattr__") if m.name == module), None)
    if tree is None:
        return []
    bound = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    bound |= {t.id for n in tree.body if isinstance(n, (ast.Assign, ast.AnnAssign)) for t in walk(n) if isinstance(t, ast.Name) and isinstance(t.ctx, ast.Store)}
    bound |= {(a.asname or a.name).split(".")[0] for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom)) for a in n.names}
    submodules = {m.rpartition(".")[2] for m in scan.modules if m.rpartition(".")[0] == module}
    reads: list[tuple[str | None, str]] = [(ep.value.partition(":")[2].split(".")[0], ep.file) for ep in scan.entry_points
                                           if ep.value.partition(":")[0] == module and ep.value.partition(":")[2].split(".")[0] not in bound]
    short = module.rpartition(".")[2]
    imported: set[str] = set()  # submodules some plugin code imports by name
    attribute_reads: list[tuple[str, str]] = []
    for other, other_tree in _trees_mentioning(scan, short.encode()):
        aliases = set()
        for node in walk(other_tree):
            if isinstance(node, ast.ImportFrom):
                base = resolve_relative(other.name, other.is_package, node.level, node.module)
                if base == module:
                    reads.extend((a.name, f"{other.file}:{node.lineno}") for a in node.names if a.name != "*" and a.name not in bound | submodules)
                if base and base.rpartition(".")[0] == module:  # `from module.X import y` imports X
                    imported.add(base.rpartition(".")[2])
                if base == module:  # `from module import X` of a submodule imports it
                    imported |= {a.name for a in node.names if a.name in submodules}
                aliases |= {a.asname or a.name for a in node.names if base and f"{base}.{a.name}" == module}
            elif isinstance(node, ast.Import):
                aliases |= {a.asname or a.name for a in node.names if a.name == module}
                imported |= {a.name[len(module) + 1:].split(".")[0] for a in node.names if a.name.startswith(module + ".")}
        for node in walk(other_tree):
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load) and dotted(node.value) in aliases and node.attr not in bound:
                attribute_reads.append((node.attr, f"{other.file}:{node.lineno}"))
            if isinstance(node, ast.Call) and dotted(node.func) == "getattr" and node.args and dotted(node.args[0]) in aliases:
                name = node.args[1].value if len(node.args) > 1 and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str) else None
                if name not in bound:
                    reads.append((name, f"{other.file}:{node.lineno}"))
    reads += [(name, where) for name, where in attribute_reads if name not in submodules or name not in imported]
    return reads


def self_calls_in(scan: PluginScan, cls: PluginClass, method: str) -> set[str]:
    """The names a method of the plugin class `cls` calls on its own instance or class
    (`self.x(…)`, `cls.x(…)`, `type(self).x(…)`), read from its def; empty when not found."""
    found: set[str] = set()
    for module, tree in _trees_mentioning(scan, method.encode()):
        if module.name != cls.module:
            continue
        for node in walk(tree):
            if isinstance(node, ast.ClassDef) and node.lineno == cls.line:
                for definition in node.body:
                    if isinstance(definition, (ast.FunctionDef, ast.AsyncFunctionDef)) and definition.name == method and definition.args.args:
                        receiver = definition.args.args[0].arg
                        found |= {call.func.attr for call in walk(definition) if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                                  and (isinstance(call.func.value, ast.Name) and call.func.value.id == receiver
                                       or isinstance(call.func.value, ast.Call) and dotted(call.func.value.func) == "type")}
                        # `getattr(self, "get_%s_pool" % kind, None)`: any own method whose name fits the name's shape
                        for call in walk(definition):
                            if (isinstance(call, ast.Call) and dotted(call.func) == "getattr" and len(call.args) >= 2
                                    and isinstance(call.args[0], ast.Name) and call.args[0].id == receiver
                                    and (shape := name_shape(call.args[1])) is not None):
                                found |= {name for name in cls.methods if re.fullmatch(shape, name)}
    return found


def plugin_function_params(scan: PluginScan, path: str) -> tuple[Param, ...] | None:
    """The parameters of the plugin's module-level function `path` ("pkg.mod.func"), None when
    it is not one (a class, a name bound otherwise, a module that does not parse)."""
    module, _, name = path.rpartition(".")
    found = scan.modules.get(module)
    if found is None:
        return None
    for candidate, tree in _trees_mentioning(scan, name.encode()):
        if candidate is not found:
            continue
        # module level, also inside `if` / `try` blocks (not inside functions or classes)
        stack = list(tree.body)
        while stack:
            node = stack.pop(0)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
                return function_params(node.args)
            if isinstance(node, (ast.If, ast.Try, ast.With)) or type(node).__name__ == "TryStar":
                stack.extend(child for field in ("body", "orelse", "finalbody") for child in getattr(node, field, []))
                stack.extend(child for handler in getattr(node, "handlers", []) for child in handler.body)
    return None


def _imported_names(tree: ast.Module, module: str, is_package: bool) -> dict[str, str]:
    """Name -> the dotted path it stands for in `module`: its imports (function-local ones too;
    relative ones from its package) and its own top-level classes. A name bound two ways maps to
    "" (not known)."""
    names: dict[str, str] = {}

    def bind(local: str, path: str) -> None:
        names[local] = path if names.get(local, path) == path else ""

    package = module if is_package else module.rpartition(".")[0]
    for node in walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parent = ".".join(parts[: len(parts) - node.level + 1]) if node.level - 1 < len(parts) else ""
                base = f"{parent}.{base}" if base else parent
            for alias in node.names:
                if alias.name != "*":
                    bind(alias.asname or alias.name, f"{base}.{alias.name}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                bind(alias.asname or alias.name.partition(".")[0], alias.name if alias.asname else alias.name.partition(".")[0])
    for stmt in tree.body:
        if isinstance(stmt, ast.ClassDef):
            bind(stmt.name, f"{module}.{stmt.name}")
    return names


def _isinstance_tests(test: ast.expr) -> dict[str, tuple[ast.expr, ...]]:
    """Receiver text -> the class expressions `test` checks it against when it holds:
    `isinstance(x, C)`, `isinstance(x, (A, B))`, either inside an `and`."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        found: dict[str, tuple[ast.expr, ...]] = {}
        for value in test.values:
            found.update(_isinstance_tests(value))
        return found
    if isinstance(test, ast.Call) and isinstance(test.func, ast.Name) and test.func.id == "isinstance" and len(test.args) == 2:
        classes = test.args[1]
        return {ast.unparse(test.args[0]): tuple(classes.elts) if isinstance(classes, ast.Tuple) else (classes,)}
    return {}


def _exits(body: list[ast.stmt]) -> bool:
    return bool(body) and isinstance(body[-1], (ast.Raise, ast.Return, ast.Continue, ast.Break))


@dataclass
class _Reads:
    """The walk behind reads_of, over one module."""

    module: str
    file: str
    name: str
    names: dict[str, str]  # _imported_names
    found: list[Read]

    def visit(self, node: ast.AST, cls: str | None, in_body: bool, receiver: str | None, narrow: dict[str, tuple[str, ...]]) -> None:
        """`cls`: the innermost plugin class around (its path); `in_body`: directly in its body;
        `receiver`: the self/cls parameter of the method around (closures included); `narrow`:
        receiver text -> the classes an enclosing `if isinstance(…)` (or an earlier `assert
        isinstance(…)`, or `if not isinstance(…): return`) says it is an instance of."""
        for _, value in ast.iter_fields(node):
            children = value if isinstance(value, list) else [value]
            local = narrow
            for child in children:
                if isinstance(child, ast.AST):
                    self.child(child, cls, in_body, receiver, local)
                if isinstance(child, ast.Assert):
                    local = {**local, **self.qualified(_isinstance_tests(child.test))}
                elif (isinstance(child, ast.If) and not child.orelse and _exits(child.body) and isinstance(child.test, ast.UnaryOp)
                      and isinstance(child.test.op, ast.Not)):
                    local = {**local, **self.qualified(_isinstance_tests(child.test.operand))}

    def child(self, child: ast.AST, cls: str | None, in_body: bool, receiver: str | None, narrow: dict[str, tuple[str, ...]]) -> None:
        if isinstance(child, ast.ClassDef):
            self.visit(child, f"{cls or self.module}.{child.name}", True, None, {})
        elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            inner = receiver
            if in_body and not isinstance(child, ast.Lambda):
                params = [*child.args.posonlyargs, *child.args.args]
                static = any((ast.unparse(d).rsplit(".", 1)[-1]) == "staticmethod" for d in child.decorator_list)
                inner = params[0].arg if params and not static and params[0].arg in ("self", "cls") else None
            self.visit(child, cls, False, inner, {})  # a check around a def does not hold when it runs
        elif isinstance(child, ast.If):
            self.child(child.test, cls, in_body, receiver, narrow)
            inside = {**narrow, **self.qualified(_isinstance_tests(child.test))}
            self.visit(ast.Module(body=child.body, type_ignores=[]), cls, in_body, receiver, inside)
            self.visit(ast.Module(body=child.orelse, type_ignores=[]), cls, in_body, receiver, narrow)
        else:
            if isinstance(child, ast.Attribute) and child.attr == self.name and isinstance(child.ctx, ast.Load):
                through = receiver is not None and isinstance(child.value, ast.Name) and child.value.id == receiver
                upward = receiver is not None and is_super(child.value, receiver, cls.rsplit(".", 1)[-1] if cls else None)
                held = child.value
                via = (cls, held.attr) if (cls is not None and receiver is not None and isinstance(held, ast.Attribute)
                                           and isinstance(held.value, ast.Name) and held.value.id == receiver) else None
                self.found.append(Read(f"{self.file}:{child.lineno}", cls if through or upward else None, upward, via,
                                       narrow.get(ast.unparse(held), ())))
            self.visit(child, cls, in_body, receiver, narrow)

    def qualified(self, tests: dict[str, tuple[ast.expr, ...]]) -> dict[str, tuple[str, ...]]:
        """The tests with each class expression as a dotted path; a receiver whose classes are
        not all known is left out (nothing is said about it)."""
        found = {}
        for held, classes in tests.items():
            paths = []
            for expr in classes:
                text = dotted(expr)
                head, _, rest = (text or "").partition(".")
                path = self.names.get(head) if text else None
                if not path:
                    break
                paths.append(f"{path}.{rest}" if rest else path)
            else:
                found[held] = tuple(paths)
        return found


def reads_elsewhere_only(scan: PluginScan, plugin_mro: Callable[[str], list[Ref]], owner: str, name: str) -> bool:
    """Whether every read of `….name` in the plugin goes through `self` of a plugin class that
    cannot be an `owner` instance: no plugin class has both in its MRO (QuickGELU.forward_kunlun
    against TopKTopPSampler's `self.forward = self.forward_kunlun`). False when a read's receiver
    is unknown, or there is no read. `super().name` inside `owner` itself never reaches owner's
    own method (vllm-ascend's v2 NPUModelRunner.postprocess calling the base's)."""
    reads = reads_of(scan, name)
    if not reads:
        return False
    reads = [read for read in reads if not (read.through_super and read.through_self_of == owner)]
    if not reads:
        return True
    if any(read.through_self_of is None for read in reads):
        return False
    owners = Ref("class", "", owner)
    readers = {Ref("class", "", read.through_self_of) for read in reads}
    if owners in readers or any(reader.qualname not in scan.classes for reader in readers):
        return False
    for path in scan.classes:
        mro = plugin_mro(path)
        if owners in mro and readers & set(mro):
            return False
    return True


# torch.nn.Module methods that set an attribute named by their first argument
_REGISTERS = ("register_parameter", "register_buffer", "register_module", "add_module")


def registered_by_name(scan: PluginScan, attr: str) -> str | None:
    """The first plugin site ("file:line") that sets an attribute `attr` by name on some object:
    `layer.register_parameter("w13_weight_scale_inv", …)` in its quantization method's
    create_weights, `self.register_buffer("cos_cache", …)`, `setattr(obj, "attr", …)`. None when
    there is none. Which object it lands on is not known to the caller."""
    for module, tree in _trees_mentioning(scan, attr.encode(), b"register_", b"add_module", b"setattr"):
        for node in walk(tree):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            named = _name_argument(func, node.args)
            if isinstance(named, ast.Constant) and named.value == attr:
                return f"{module.file}:{node.lineno}"
            # through a helper's parameter: self._set_buffer(layer, "gate_proj_blocks", …), whose
            # body registers or setattr()s its parameter (vllm-rbln's mxfp4 quantization method)
            for position, argument in enumerate(node.args):
                if isinstance(argument, ast.Constant) and argument.value == attr and _sets_by_parameter(tree, func, position):
                    return f"{module.file}:{node.lineno}"
    return None


def _name_argument(func: ast.AST, args: list[ast.expr]) -> ast.expr | None:
    """The argument naming the attribute a setter call sets: `x.register_buffer(name, …)`,
    `setattr(x, name, …)`; None for any other call."""
    if isinstance(func, ast.Attribute) and func.attr in _REGISTERS and args:
        return args[0]
    return args[1] if isinstance(func, ast.Name) and func.id == "setattr" and len(args) >= 2 else None


def _sets_by_parameter(tree: ast.Module, func: ast.AST, position: int) -> bool:
    """Whether a function of this module with `func`'s name sets an attribute named by its
    parameter at call position `position` (self / cls skipped for a call through an attribute)."""
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
    for node in walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or node.name != name:
            continue
        params = [a.arg for a in (*node.args.posonlyargs, *node.args.args)]
        if isinstance(func, ast.Attribute) and params and params[0] in ("self", "cls"):
            params = params[1:]
        if position >= len(params):
            continue
        for inner in walk(node):
            named = _name_argument(inner.func, inner.args) if isinstance(inner, ast.Call) else None
            if isinstance(named, ast.Name) and named.id == params[position]:
                return True
    return False


def set_on_others(scan: PluginScan, attr: str) -> str | None:
    """The first plugin site ("file:line") that assigns `attr` on an object other than self /
    cls (`forward_context.capturing = False` on the context vllm's get_forward_context returns,
    vllm-ascend ascend_forward_context.py), or None. Which object it lands on is not known to
    the caller: a read of `attr` elsewhere may be of that object."""
    for module, tree in _trees_mentioning(scan, b"." + attr.encode()):
        methods = {id(stmt) for node in walk(tree) if isinstance(node, ast.ClassDef) for stmt in node.body}
        # a function outside a class whose parameter is named self sets what it is given
        # (vllm-rbln's `def _record_pipeline_layer_index(self: "Attention | MLAAttention")`)
        own: set[int] = set()
        for node in walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and id(node) in methods:
                own |= {id(n) for n in walk(node) if isinstance(n, (ast.Assign, ast.AnnAssign))}
        for node in walk(tree):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
            for target in targets:
                if (isinstance(target, ast.Attribute) and target.attr == attr
                        and not (id(node) in own and isinstance(target.value, ast.Name) and target.value.id in ("self", "cls"))):
                    return f"{module.file}:{node.lineno}"
    return None
