"""String-keyed registries: the keys an upstream module-level dict holds in a release.

Plugins read upstream registries by key (`ATTENTION_BACKENDS["dsa"]`): when upstream drops the
key, the read is a KeyError at run time although every name still resolves. The keys of a dict
`X` defined in module M come from, statically:
  - its literal: `X = {"a": …, "b": …}`, or a list of names (`X = ["a", "b"]`, `X =
    list(get_args(Literal["a", "b"]))`), whose members are its keys;
  - stores anywhere in the release: `X["k"] = …`, `X.update({"k": …})`, `X.setdefault("k", …)`;
  - registration functions of M that store under a parameter (`def register(name): … X[name] = fn`),
    and methods of M's classes that do (`CustomOp.register(name)`), called anywhere with a
    constant (`@register("k")`, `register("k", f)`, `@CustomOp.register("k")`).
Any other way in (a computed key, `X.update(other)`, a literal that is not a dict, a registration
called with a variable) makes the key set `open`: a key not found is then undecided, not missing.

Lazy like call sites: only modules the index's pre-filter says mention `X[`, `X.` or the
registration function are parsed.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

import msgspec

from harness.knowledge.judge.callsites import kept_as, lines_naming, near
from harness.knowledge.model import Dependency, Ref, dotted, walk
from harness.knowledge.upstream import SymbolIndex


@dataclass
class RegistryKeys:
    """Keys found (key -> "relpath:line" of the first place that puts it in) and why the set may
    be incomplete (`open`, empty when every way in was read)."""

    keys: dict[str, str] = field(default_factory=dict)
    open: list[str] = field(default_factory=list)


def registry_keys(index: SymbolIndex, ref: Ref) -> RegistryKeys | None:
    """The keys of the module-level dict `ref` (a Ref of kind "value") in `index`'s release, or
    None when `ref` is not a dict this module can read (not a module-level name bound to a dict
    literal or `dict()`). Memoised per index."""
    return index.analysis("registry_keys", ref, _DECODER, lambda: _keys(index, ref))



_DECODER = msgspec.msgpack.Decoder(RegistryKeys | None)


def registry_at(index: SymbolIndex, path: str) -> tuple[Ref, RegistryKeys] | None:
    """The registry a dotted path names and its keys: a module-level dict (registry_keys), or the
    attribute an object built at module level keeps its argument in, that argument a dict
    literal, a module dict or a dict comprehension keyed by the keys of one (vLLM 0.11 registry.py:936: `ModelRegistry =
    _ModelRegistry({arch: … for arch, (mod, cls) in _VLLM_MODELS.items()})`, whose `__init__` keeps
    it as `self.models`: ModelRegistry.models has _VLLM_MODELS's keys; a comprehension's `if`
    leaves the set open). None for anything else."""
    found = index.resolve(path)
    if found.ok and found.ref.kind == "value":
        keys = registry_keys(index, found.ref)
        return (found.ref, keys) if keys is not None else None
    owner, _, attr = path.rpartition(".")
    holder = index.resolve(owner) if owner else None
    built = index.module_construction(holder.ref) if holder is not None and holder.ok else None
    if built is None or len(built[1].args) != 1 or built[1].keywords or kept_as(index, built[0], 0) != attr:
        return None
    call = built[1]
    given, filtered = call.args[0], False
    if isinstance(given, ast.DictComp) and len(given.generators) == 1:
        generator = given.generators[0]
        first = generator.target.elts[0] if isinstance(generator.target, ast.Tuple) and generator.target.elts else generator.target
        source = generator.iter.func.value if (isinstance(generator.iter, ast.Call) and isinstance(generator.iter.func, ast.Attribute)
                                               and generator.iter.func.attr in ("items", "keys") and not generator.iter.args) else generator.iter
        if not (isinstance(given.key, ast.Name) and isinstance(first, ast.Name) and given.key.id == first.id):
            return None
        given, filtered = source, bool(generator.ifs)
    if isinstance(given, ast.Dict) and not filtered:  # `_ModelRegistry({"LlamaForCausalLM": …, …})`: the literal's keys
        result = RegistryKeys()
        _dict_keys(given, f"{index.files[holder.ref.module][0]}:{given.lineno}", f"{holder.ref.qualname}({{…}})", result, index.tree(holder.ref.module))
        return holder.ref, result
    if not isinstance(given, ast.Name):
        return None
    table = Ref("value", holder.ref.module, given.id)
    keys = registry_keys(index, table)
    if keys is None:
        return None
    if filtered:
        keys = RegistryKeys(dict(keys.keys), [*keys.open, f"{path} keeps only the keys of {given.id} a comprehension's test passes"])
    return table, keys


def _keys(index: SymbolIndex, ref: Ref) -> RegistryKeys | None:
    tree = index.tree(ref.module)
    if ref.kind != "value" or tree is None or "." in ref.qualname:
        return None
    name, relpath = ref.qualname, index.files[ref.module][0]
    result = RegistryKeys()
    literal = None
    for stmt in tree.body:
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target] if isinstance(stmt, ast.AnnAssign) and stmt.value else []
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            literal = stmt.value
    if isinstance(literal, ast.Call) and dotted(literal.func) == "dict" and not literal.args:
        literal = ast.copy_location(ast.Dict(keys=[ast.Constant(k.arg) if k.arg else None for k in literal.keywords], values=[k.value for k in literal.keywords]), literal)
    members = _members(tree, literal)
    if members is not None:  # a list of names (`QUANTIZATION_METHODS = list(get_args(Methods))`): its members are the keys
        literal = ast.copy_location(ast.Dict(keys=members, values=[ast.Constant(None)] * len(members)), literal)
    if not isinstance(literal, ast.Dict):
        return None
    _dict_keys(literal, f"{relpath}:{literal.lineno}", f"{name} = {{…}}", result, tree)
    registrations = _registration_functions(tree, name)
    for function in registrations:
        _registration_calls(index, ref, Ref("function", ref.module, function), registrations[function], result)
    # every module that may store into the dict (its name as a word before `[`, `.update(`,
    # `.setdefault(`, a list's `.append(` / `.extend(` / `.add(`); the defining module always
    store = re.compile(rb"(?<!\w)" + re.escape(name.encode()) + rb"[ \t]*(?:\[|\.update\(|\.setdefault\(|\.append\(|\.extend\(|\.add\()")
    needle = name.encode()
    candidates = {ref.module} | {module for module, source in index.sources().items() if needle in source and store.search(source)}
    for module in sorted(candidates):
        _stores(index, module, ref, registrations, result)
    return result


def _dict_keys(node: ast.Dict, where: str, how: str, result: RegistryKeys, tree: ast.Module | None = None, depth: int = 0) -> None:
    """The literal keys of `node` into `result`; a `**T` spread of another module-level dict
    literal of the same module (`_VLLM_MODELS = {**_TEXT_GENERATION_MODELS, …}`) gives T's."""
    for key, value in zip(node.keys, node.values):
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            result.keys.setdefault(key.value, where)
            continue
        spread = value if key is None and isinstance(value, ast.Dict) else None  # {**{"k": v}}
        if key is None and isinstance(value, ast.Name) and tree is not None and depth < 8:
            spread = _module_literal(tree, value.id)
        if key is None and isinstance(value, ast.DictComp) and tree is not None and depth < 8:
            spread = _comprehended(value, tree)
        if isinstance(spread, ast.Dict):
            _dict_keys(spread, where.rsplit(":", 1)[0] + f":{spread.lineno}", f"{ast.unparse(value)[:40]} = {{…}}", result, tree, depth + 1)
        else:
            result.open.append(f"{how} at {where} has a key computed at run time")


def _comprehended(node: ast.DictComp, tree: ast.Module) -> ast.Dict | None:
    """`{k: v for k, (mod, arch) in T.items() if arch == "X"}` over a module-level dict literal T
    of the same module (vLLM 0.11 registry.py:173, inside `_EMBEDDING_MODELS`): a dict literal of
    the keys of T whose entry passes the tests (each a comparison of a name the loop binds from
    the entry with constants: ==, !=, in, not in); None for any other shape."""
    if len(node.generators) != 1 or not isinstance(node.key, ast.Name):
        return None
    generator = node.generators[0]
    items = isinstance(generator.iter, ast.Call) and isinstance(generator.iter.func, ast.Attribute) and generator.iter.func.attr == "items"
    source = generator.iter.func.value if items else generator.iter
    table = _module_literal(tree, source.id) if isinstance(source, ast.Name) else None
    if not isinstance(table, ast.Dict) or generator.is_async:
        return None
    keys = []
    for key, value in zip(table.keys, table.values):
        if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
            return None
        bound: dict[str, object] = {}
        target = generator.target
        if items and isinstance(target, ast.Tuple) and len(target.elts) == 2:
            bound.update(_bind_literal(target.elts[0], key) or {})
            bound.update(_bind_literal(target.elts[1], value) or {})
        elif not items:
            bound.update(_bind_literal(target, key) or {})
        if bound.get(node.key.id) != key.value:
            return None
        passes = [_literal_test(test, bound) for test in generator.ifs]
        if None in passes:
            return None
        if all(passes):
            keys.append(key)
    return ast.copy_location(ast.Dict(keys=keys, values=[ast.Constant(None)] * len(keys)), node)


def _bind_literal(target: ast.expr, value: ast.expr) -> dict[str, object] | None:
    """Names of a loop target bound to the constants of a literal (tuples unpacked)."""
    if isinstance(target, ast.Name):
        return {target.id: value.value if isinstance(value, ast.Constant) else None}
    if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple) and len(target.elts) == len(value.elts):
        found: dict[str, object] = {}
        for t, v in zip(target.elts, value.elts):
            found.update(_bind_literal(t, v) or {})
        return found
    return None


def _literal_test(test: ast.expr, bound: dict[str, object]) -> bool | None:
    """A comparison of a bound name with constants, decided; None when it is not one."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.left, ast.Name) and test.left.id in bound):
        return None
    left, op, right = bound[test.left.id], test.ops[0], test.comparators[0]
    if left is None:
        return None
    if isinstance(op, (ast.Eq, ast.NotEq)) and isinstance(right, ast.Constant):
        return (left == right.value) == isinstance(op, ast.Eq)
    if isinstance(op, (ast.In, ast.NotIn)) and isinstance(right, (ast.Tuple, ast.List, ast.Set)) and all(isinstance(e, ast.Constant) for e in right.elts):
        return (left in {e.value for e in right.elts}) == isinstance(op, ast.In)
    return None


def _members(tree: ast.Module, node: ast.expr | None, depth: int = 0) -> list[ast.expr] | None:
    """The elements of a list, tuple or set of names: a literal, `list(…)` / `tuple(…)` /
    `set(…)` of one, `typing.get_args(L)` of a module-level `L = Literal["a", "b"]` (typing
    docs: the literal's values); None for anything else."""
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return list(node.elts)
    if isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords and depth < 8:
        called = (dotted(node.func) or "").rsplit(".", 1)[-1]
        if called in ("list", "tuple", "set", "frozenset", "sorted"):
            return _members(tree, node.args[0], depth + 1)
        if called == "get_args" and isinstance(node.args[0], ast.Name):
            literal = _module_literal(tree, node.args[0].id)
            if isinstance(literal, ast.Subscript) and (dotted(literal.value) or "").rsplit(".", 1)[-1] == "Literal":
                return list(literal.slice.elts) if isinstance(literal.slice, ast.Tuple) else [literal.slice]
    return None


def _module_literal(tree: ast.Module, name: str) -> ast.expr | None:
    """The value of the last module-level `name = …` / `name: T = …` in `tree`, or None."""
    found = None
    for stmt in tree.body:
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target] if isinstance(stmt, ast.AnnAssign) and stmt.value else []
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            found = stmt.value
    return found


def _functions(tree: ast.Module):
    """(qualname, def, the parameters a caller passes) of the module's functions and of the
    methods of its classes (a classmethod's or method's first parameter is bound, not passed)."""
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield stmt.name, stmt, [a.arg for a in stmt.args.posonlyargs + stmt.args.args]
        elif isinstance(stmt, ast.ClassDef):
            for method in stmt.body:
                if isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    static = any(dotted(d) == "staticmethod" for d in method.decorator_list)
                    params = [a.arg for a in method.args.posonlyargs + method.args.args]
                    yield f"{stmt.name}.{method.name}", method, params if static else params[1:]


def _registration_functions(tree: ast.Module, name: str) -> dict[str, tuple[int, str]]:
    """Module-level functions, and methods of module-level classes (`@CustomOp.register("k")`,
    vLLM custom_op.py), storing into `name[p]` for one of their own parameters p (at any depth,
    as a decorator factory does): qualname -> (position among what a caller passes, parameter name)."""
    found = {}
    for qualname, function, params in _functions(tree):
        for node in walk(function):
            if (isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store) and isinstance(node.value, ast.Name)
                    and node.value.id == name and isinstance(node.slice, ast.Name) and node.slice.id in params):
                found[qualname] = (params.index(node.slice.id), node.slice.id)
            elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("append", "add")
                  and dotted(node.func.value) == name and len(node.args) == 1 and isinstance(node.args[0], ast.Name) and node.args[0].id in params):
                found[qualname] = (params.index(node.args[0].id), node.args[0].id)  # a list of names: `X.append(p)`
    return found


def _registration_calls(index: SymbolIndex, registry: Ref, function: Ref, param: tuple[int, str], result: RegistryKeys) -> None:
    position, keyword = param
    short = function.qualname.rsplit(".", 1)[-1]
    # a method is called through its class (`CustomOp.register("k")`); a function by its name
    modules = index.modules_calling(short, bare="." not in function.qualname)
    if "." in function.qualname:
        modules = [m for m in modules if function.qualname.encode() + b"(" in index.sources()[m]]
    for module in modules:
        tree = index.tree(module)
        if tree is None:
            continue
        relpath = index.files[module][0]
        for node in near(tree, lines_naming(index.sources()[module], function.qualname)):
            if not isinstance(node, ast.Call) or not isinstance(node.func, (ast.Name, ast.Attribute)) or not (
                    "." + (dotted(node.func) or "")).endswith("." + function.qualname):
                continue
            found = index.resolve_in_scope(module, dotted(node.func))
            if not found.ok or found.ref != function:
                continue
            args = {kw.arg: kw.value for kw in node.keywords if kw.arg}
            value = node.args[position] if len(node.args) > position else args.get(keyword)
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                result.keys.setdefault(value.value, f"{relpath}:{node.lineno}")
            elif value is not None:
                result.open.append(f"{function.qualname}({ast.unparse(value)}) at {relpath}:{node.lineno} registers a key computed at run time")


def _stores(index: SymbolIndex, module: str, registry: Ref, registrations: dict, result: RegistryKeys) -> None:
    """`X[k] = …`, `X.update(…)`, `X.setdefault(k, …)` in `module` on the registry; on a list of
    names, `X.append(k)`, `X.add(k)`, `X.extend([…])`."""
    tree = index.tree(module)
    if tree is None:
        return
    relpath = index.files[module][0]

    def is_registry(node) -> bool:
        text = dotted(node)
        if not text or text.split(".")[-1] != registry.qualname:
            return False
        found = index.resolve_in_scope(module, text)
        return found.ok and found.ref == registry

    # stores under a registration function's own parameter are its calls' keys (read above)
    inside = {id(n) for qualname, f, _ in (_functions(tree) if module == registry.module else ()) if qualname in registrations for n in walk(f)}
    for node in near(tree, lines_naming(index.sources()[module], registry.qualname)):
        where = f"{relpath}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store) and id(node) not in inside and is_registry(node.value):
            if isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
                result.keys.setdefault(node.slice.value, where)
            else:
                result.open.append(f"{ast.unparse(node)} = … at {where} stores a key computed at run time")
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("update", "setdefault", "append", "add", "extend")
              and is_registry(node.func.value)):
            first = node.args[0] if node.args else None
            if id(node) in inside and node.func.attr in ("append", "add"):
                continue  # a registration function's own parameter: its calls' keys (read above)
            if node.func.attr == "extend" and _members(tree, first) is not None:
                _dict_keys(ast.Dict(keys=_members(tree, first), values=[ast.Constant(None)] * len(_members(tree, first))), where,
                           f"{registry.qualname}.extend([…])", result)
            elif node.func.attr != "update" and isinstance(first, ast.Constant) and isinstance(first.value, str):
                result.keys.setdefault(first.value, where)
            elif node.func.attr == "update" and isinstance(first, ast.Dict):
                _dict_keys(first, where, f"{registry.qualname}.update({{…}})", result)
            else:
                result.open.append(f"{ast.unparse(node)[:80]} at {where} adds keys computed at run time")


def registration_functions(index: SymbolIndex, ref: Ref) -> dict[str, tuple[int, str]]:
    """The functions of the registry `ref`'s module that store a parameter into it (a decorator
    factory's at any depth): dotted path -> (position, parameter name)."""
    tree = index.tree(ref.module)
    return {f"{ref.module}.{name}": at for name, at in _registration_functions(tree, ref.qualname).items()} if tree else {}


def runs_after(dep, read) -> bool:
    """Whether the plugin's `dep` runs only after `read`: a later line of the same function (or
    of the same module's top level, which Python runs top to bottom). Across functions or
    modules the order is not known, and `dep` may run first."""
    return (dep.module, dep.enclosing) == (read.module, read.enclosing) and dep.line > read.line


def plugin_puts(dependencies: list, index: SymbolIndex, ref: Ref, target: str, key: str, read: Dependency | None = None):
    """The plugin's own dependency that puts `key` in the registry `ref` (named `target` where the
    plugin reads it), or None: `X["k"] = v`, `X.append("k")` / `.add` / `.setdefault`, or a call
    of one of the registry's registration functions with the key (`register_method("k")`). A put
    that needs the key first (`X["k"] = wrap(X["k"])`, how item-reassign) puts in nothing; one
    the function of `read` runs only after that read (a later line of it) does not put it in for
    that read, nor one in a module the plugin never imports (dead)."""
    registers = registration_functions(index, ref)
    for dep in dependencies:
        if not dep.live or read is not None and runs_after(dep, read):
            continue  # (a put in a module nothing imports never runs)
        at = registers.get(dep.target or "") if dep.kind == "call" else None
        given = dict(dep.arguments)
        if at is not None and given.get(at[0], given.get(at[1])) == key:
            return dep
        if dep.kind == "patch" and dep.target == target and dep.name == key and (dep.how == "item-assign" or (dep.how or "").startswith("in-place")):
            return dep
    return None
