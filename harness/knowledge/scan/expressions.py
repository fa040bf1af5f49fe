"""The plugin scan's reading of expressions: references, calls, registrations (hooks, backends,
kernels, models, architectures), patches and fields of upstream instances, each recorded as a
Dependency with the guards and handlers of where it sits."""

from __future__ import annotations

import ast
import re
import string
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path

from harness.engines import ATTRIBUTE_ERRORS, IMPORT_ERRORS, KEY_ERRORS, Kind, profile
from harness.knowledge.model import (
    CLASS_USE_CHECK,
    NONE_FALLBACK_CALL,
    INSTANCE_CALL,
    NONE_FALLBACK_READ,
    PLACED,
    CallShape,
    Catch,
    Const,
    Dependency,
    GuardCond,
    ImportsResolve,
    MethodDecl,
    ModuleExists,
    Param,
    PluginClass,
    PluginScan,
    Scope,
    Runtime,
    SelfRef,
    dotted,
    forwards_anything,
    function_params,
    is_upstream,
    raises_only,
    walk,
)
from harness.knowledge.scan.annotations import SELF_HELD, WRITE, annotation_class
from harness.knowledge.scan.folding import (
    ENTRY_POINT_CLASS,
    OPAQUE,
    Condition,
    Instance,
    Named,
    Partial,
    Record,
    bind,
    narrowed_key,
)
from harness.knowledge.scan.syntax import (
    ARCHITECTURE,
    always_raises,
    arg,
    assigned,
    bound_once,
    call_shape,
    forwards_to_super,
    imported_names,
    is_property,
    is_super,
    local_names,
    mangled,
    module_level,
    own_returns,
    returned_function,
)
from harness.knowledge.upstream import SymbolIndex, keyed_lookup

IN_PLACE_EDITS = {"append", "extend", "insert", "update", "add", "setdefault", "remove", "pop", "clear", "discard"}
# torch.nn.Module methods that set an attribute by name, as setattr does (torch/nn/modules/module.py:
# register_parameter, register_buffer, register_module/add_module store it where __getattr__ finds it)
_NAMED_SETTERS = {"register_parameter", "register_buffer", "register_module", "add_module"}
_DISCOVERY = {"iter_modules", "walk_packages", "listdir", "scandir", "iterdir", "glob", "rglob", "walk"}


_MOCK_PATCHERS = frozenset({"unittest.mock.patch.object", "mock.patch.object"})  # (owner, "name", new)
_MOCK_PATCHERS_BY_NAME = frozenset({"unittest.mock.patch", "mock.patch"})  # ("pkg.mod.name", new)
_MOCK_MULTIPLE = frozenset({"unittest.mock.patch.multiple", "mock.patch.multiple"})  # (owner, name=new, …)
_MOCK_OPTIONS = frozenset({"spec", "create", "spec_set", "autospec", "new_callable"})  # patch.multiple's own keywords


@dataclass
class Context:
    """Where a statement runs: its local bindings, guards, handlers and enclosing functions."""

    env: dict
    guards: tuple[GuardCond, ...] = ()
    catches: tuple[Catch, ...] = ()
    functions: tuple[str, ...] = ()  # dotted paths of the enclosing functions, outermost first
    local: frozenset[str] = frozenset()  # names local to those functions: run-time data (folding.runtime_test)
    cls: PluginClass | None = None  # the class whose body (or method body) this is
    in_class_body: bool = False
    self_name: str | None = None  # the method's first parameter (self / cls)
    method: MethodDecl | None = None

    @property
    def scope(self) -> Scope:
        return "function" if self.functions else "module"


def flag_owner(ctx: Context) -> tuple[str, str] | None:
    """(self's name, its class) inside a method other than __init__: there a test of
    `self.<flag>` reads what __init__ left (SelfFlag); inside __init__ it reads the flag midway."""
    if ctx.cls is None or not ctx.self_name or ctx.method is None or ctx.method.name == "__init__":
        return None
    if any(d.rsplit(".", 1)[-1] in ("classmethod", "staticmethod") for d in ctx.method.decorators):
        return None  # `cls.<name>` is the class's attribute, not what __init__ sets
    return ctx.self_name, ctx.cls.path


def partial_params(params: tuple[Param, ...], positional: int, keywords: list[str]) -> tuple[Param, ...]:
    """The parameters of `functools.partial(f, <positional> arguments, <keywords>=…)` given f's:
    the first `positional` positional parameters are gone (surplus ones go to *args); a
    parameter bound by keyword, and every positional-or-keyword one after it, is keyword-only,
    with a default, and *args after it is gone (inspect.signature's rule for partial objects)."""
    out: list[Param] = []
    left, keyword_only = positional, False
    for param in params:
        if param.kind in ("posonly", "pos") and left:
            left -= 1
            continue
        if param.name in keywords and param.kind in ("pos", "kwonly"):
            out.append(Param(param.name, "kwonly", param.default or "(bound)"))
            keyword_only = True
        elif keyword_only and param.kind == "pos":
            out.append(Param(param.name, "kwonly", param.default))
        elif keyword_only and param.kind == "var":
            continue  # no positional argument can reach it past a keyword-only one
        else:
            out.append(param)
    return tuple(out)


def _element_made(value: ast.expr) -> ast.Call | None:
    """The construction each element of a container display or comprehension is, where all are
    one call's (`nn.ModuleList([P(…) for i in range(n)])`, `[P(a), P(b)]`, `list(P(…) for …)`):
    that call (the first), else None."""
    if isinstance(value, ast.Call) and len(value.args) == 1 and not value.keywords and (dotted(value.func) or "").rpartition(".")[2] in (
            "ModuleList", "list", "tuple"):
        value = value.args[0]
    if isinstance(value, (ast.ListComp, ast.GeneratorExp)) and isinstance(value.elt, ast.Call):
        return value.elt
    if isinstance(value, (ast.List, ast.Tuple)) and value.elts and all(isinstance(e, ast.Call) for e in value.elts):
        funcs = {ast.unparse(e.func) for e in value.elts}
        return value.elts[0] if len(funcs) == 1 else None
    return None


class Expressions:
    """Dependencies inside expressions (a mixin of the scanner, over its constant folder)."""

    files: dict[str, tuple[Path, bool]]
    index: SymbolIndex
    scan: PluginScan
    dynamic_imports: dict[str, list[tuple[str, tuple[str, ...]]]]
    import_guards: dict[str, dict[str, list[tuple]]]  # module -> imported -> the guards of each import (liveness)
    hook_callables: dict[str, str]
    calls: dict[str, set[str]]
    _self_calls: set[int]
    _called: dict[int, tuple[ast.expr, ast.Call]]
    _tested: set[int]
    parameter_keys: list[tuple[str | None, str, str, str, ast.Subscript, Context]]
    parameter_calls: list[tuple[str, ast.Call, str, str, Context]]  # (module, call, its upstream callee, as written, where)
    parameter_environ: list[tuple[str, ast.Call, Context]]  # environment writes whose variable a parameter decides
    parameter_imports: list[tuple[str, ast.expr, ast.expr | None, Context]]  # (module, name, package, where)
    parameter_getattrs: list[tuple[str, ast.Call, Context]]  # getattr(owner, name) reading a helper's parameters
    parameter_provided: list[tuple[str, ast.expr, ast.AST, Context]]  # sys.modules[name] = m with a helper's name
    parameter_hooks: list[tuple[str, ast.AST, ast.AST | None, ast.AST | None, ast.AST | None, Context]]
    parameter_patches: list[tuple[str, ast.Call, Context]]
    parameter_class_calls: list[tuple[str, ast.Call, Context]]  # `cls(**fields)` of a helper's parameter: finish()
    _patch_only: set[int]  # setattr calls standing for `param.x = v`: a patch or nothing
    parameter_settings: list[tuple[str, ast.Call, str, Context]]
    model_packages: set[str]
    disabled_models: set[str]
    parameter_registries: list[tuple[str, ast.Call, Context]]
    held_registrars: list[tuple[str, ast.Call, Context]]
    self_placements: list[tuple[str, ast.Assign, str, str, str, Context, str | None]]  # (module, stmt, plugin class, attr, placed class, where, "element" of a container)
    parameter_placements: list[tuple[str, ast.Assign, ast.Attribute, str, Context, Instance]]  # `self.x = P(…)` on a parameter: finish()
    decorated: dict[int, str]
    plugin_calls: list[tuple[str, ast.Call, Context, str]]
    import_sites: dict[str, list[tuple[str, int, Context]]]
    class_reads: list[tuple[str, ast.Attribute, Context, str, str]]  # `C.m` of a plugin class C: (module, node, where, C, m)
    stand_ins: dict[str, list[tuple[str, GuardCond]]]
    call_arguments: dict[str, list[tuple[str, ast.Call, dict]]]
    call_guards: dict[str, tuple[GuardCond, ...]]
    bare_calls: dict[str, list[tuple[str, ast.Call, dict]]]
    _names_plugin_hook: dict[str, bool]
    _made_once_globals: dict[str, dict[str, ast.Call]]  # _module_made_once, per module
    entered: dict[int, tuple[int, int]]  # id of a `with` item's / decorator's call -> the lines it covers
    called_objects: dict[int, tuple[str, ast.Call, dict]]  # id of a call whose result is called at once -> that call
    none_fallbacks: dict  # (module, imported path) -> "the import resolves" (Folding's)
    _chain_shadows: dict[int, set]  # id of a ChainMap read -> the keys the plugin's own maps before upstream's hold

    def typed_value(self, module: str, node: ast.expr, env: dict, value):
        """What a name bound to `node` holds, `value` its fold: where that says nothing (OPAQUE,
        or the presence test a call with a default is), the upstream instance `node` is typed as
        (`get_current_vllm_config().compilation_config`: the class the function is annotated to
        return, or its field's; `getattr(vllm_config, "lora_config", None)` of a field this
        release declares with a class: that field, None at run time only)."""
        if value is OPAQUE or isinstance(value, Condition) and isinstance(node, ast.Call):
            made = self._instance(module, node, env)
            if made is not None and made.path:
                return made
        return value

    def _expressions(self, module: str, node: ast.AST | None, ctx: Context) -> None:
        """References, calls and registrations inside one expression."""
        if node is None:
            return
        inner_chains: set[int] = set()
        for child in walk(node):
            if isinstance(child, ast.NamedExpr) and isinstance(child.target, ast.Name):
                ctx.env[child.target.id] = self.typed_value(module, child.value, ctx.env, self.const(module, child.value, ctx.env))  # bound where the test runs
            if isinstance(child, ast.BoolOp):
                self._tested.update(id(value) for value in child.values)
            elif isinstance(child, ast.IfExp):
                self._tested.add(id(child.test))
            elif isinstance(child, ast.Compare):
                self._tested.update(id(value) for value in (child.left, *child.comparators))
            elif isinstance(child, ast.UnaryOp) and isinstance(child.op, ast.Not):
                self._tested.add(id(child.operand))
            elif isinstance(child, ast.comprehension):  # `… for n in N if X.get(n)`: a test of each value
                self._tested.update(id(test) for test in child.ifs)
        unrolled = self._comprehensions(module, node, ctx)
        branches = self._branch_guards(module, node, ctx)
        narrowing = self._comprehension_narrowing(module, node, ctx.env)
        base = ctx
        for child in walk(node):
            if id(child) in unrolled:
                continue
            ctx = replace(base, guards=base.guards + branches[id(child)]) if id(child) in branches else base
            if id(child) in narrowing:
                ctx = replace(ctx, env={**ctx.env, **narrowing[id(child)]})
            if isinstance(child, ast.Lambda):
                for arg in child.args.args:
                    ctx.env.setdefault(arg.arg, OPAQUE)
            if isinstance(child, ast.Call):
                self._call(module, child, ctx)
            elif isinstance(child, ast.Attribute) and id(child) not in inner_chains:
                chain = child
                while isinstance(chain.value, ast.Attribute):
                    chain = chain.value
                    inner_chains.add(id(chain))
                self._attribute(module, child, ctx)
            elif isinstance(child, ast.Subscript) and isinstance(child.ctx, ast.Load):
                self._registry_key(module, child, ctx)
            elif isinstance(child, ast.Compare):
                self._architecture_use(module, child, ctx)

    def _branch_guards(self, module: str, node: ast.AST, ctx: Context) -> dict[int, tuple[GuardCond, ...]]:
        """The tests an expression's own branches add, by node id: `a if t else b` runs `a`
        only when `t` holds and `b` only when it does not; `x and y` evaluates `y` only when `x`
        is true, `x or y` only when it is false (the language reference, "Boolean operations",
        "Conditional expressions"). Read as an `if` statement's test is (Folding._guard)."""
        if not any(isinstance(n, (ast.IfExp, ast.BoolOp)) or isinstance(n, ast.comprehension) and n.ifs for n in walk(node)):
            return {}
        owner = flag_owner(ctx)  # as an `if` in the same method reads self.<flag>
        extra: dict[int, tuple[GuardCond, ...]] = {}

        def guard(test: ast.AST, negate: bool, bound: frozenset[str] = frozenset()) -> GuardCond:
            return self._guard(module, test, ctx.env, negate=negate, owner=owner, local=ctx.local | bound)

        def visit(n: ast.AST, guards: tuple[GuardCond, ...]) -> None:
            if guards:
                extra[id(n)] = guards
            if isinstance(n, ast.IfExp):
                visit(n.test, guards)
                visit(n.body, guards + (guard(n.test, False),))
                visit(n.orelse, guards + (guard(n.test, True),))
                return
            if isinstance(n, ast.BoolOp):
                before = guards
                for value in n.values:
                    visit(value, before)
                    before = before + (guard(value, isinstance(n.op, ast.Or)),)
                return
            if isinstance(n, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
                # the element only for the values every `if` of the generators holds for
                held, bound = guards, frozenset()
                for generator in n.generators:
                    visit(generator.iter, held)
                    bound |= set(assigned(generator.target))  # its values: run-time data, as a loop's
                    for test in generator.ifs:
                        visit(test, held)
                        held = held + (guard(test, False, bound),)
                for part in ([n.key, n.value] if isinstance(n, ast.DictComp) else [n.elt]):
                    visit(part, held)
                return
            for child in ast.iter_child_nodes(n):
                visit(child, guards)

        visit(node, ())
        return extra

    def _comprehension_narrowing(self, module: str, node: ast.AST, env: dict) -> dict[int, dict]:
        """By node id, the narrowing a comprehension's `if isinstance(m, C)` filter gives its
        target in the element and the filters after it (`[m.weight for m in mods if
        isinstance(m, Linear)]`: m is a Linear there, read as an `if isinstance` body reads it)."""
        found: dict[int, dict] = {}
        for comp in (n for n in walk(node) if isinstance(n, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp))):
            narrowed: dict = {}
            later: list[ast.AST] = [*([comp.key, comp.value] if isinstance(comp, ast.DictComp) else [comp.elt])]
            for generator in comp.generators:
                targets = set(assigned(generator.target))
                for position, test in enumerate(generator.ifs):
                    held = {narrowed_key(name): value if value is not None else OPAQUE
                            for name, value in self.narrowed_by(module, test, env).items() if name in targets}
                    if held:
                        narrowed.update(held)
                        later += generator.ifs[position + 1:]
            for part in later if narrowed else ():
                for sub in walk(part):
                    found[id(sub)] = {**found.get(id(sub), {}), **narrowed}
        return found

    def _comprehensions(self, module: str, node: ast.AST, ctx: Context) -> set[int]:
        """A comprehension over folded constants (`[import_module(P + n) for n in NAMES if
        ENABLED[n]]`) is read as the loop it stands for: its element once per value, with the
        target bound to it (a value its conditions fold to false left out). Returns the ids of
        the nodes so read, which the caller then skips."""
        unrolled: set[int] = set()
        for child in walk(node):
            if (id(child) in unrolled or not isinstance(child, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp))
                    or len(child.generators) != 1 or child.generators[0].is_async):
                continue
            generator = child.generators[0]
            values = self.iterated(self.const(module, generator.iter, ctx.env))
            if not isinstance(values, list) or len(values) > 256:
                continue
            parts = [child.key, child.value] if isinstance(child, ast.DictComp) else [child.elt]
            unrolled.update(id(n) for part in [*parts, *generator.ifs] for n in walk(part))
            for value in values:
                inner = replace(ctx, env={**ctx.env, **bind(generator.target, value)})
                # each condition runs, in order, until one is false (`if _apply(spec, fn)` calls
                # _apply for every value, whatever it returns)
                failed = False
                for test in generator.ifs:
                    self._expressions(module, test, inner)
                    if self.const(module, test, inner.env) is False:
                        failed = True
                        break
                if failed:
                    continue
                # the element is evaluated only for a value every condition holds for (the
                # language reference, "Displays for lists, sets and dictionaries")
                local = inner.local | set(assigned(generator.target))
                held = replace(inner, guards=inner.guards + tuple(self._guard(module, test, inner.env, local=local) for test in generator.ifs))
                for part in parts:
                    self._expressions(module, part, held)
        return unrolled

    def _parameters(self, module: str, ctx: Context, line: int) -> set[str]:
        """The parameter names of the innermost function of `ctx` (its def spans `line`)."""
        definition = self._definition(module, ctx.functions[-1], line)
        return {p.name for p in function_params(definition.args)} if definition is not None else set()

    def _registry_key(self, module: str, node: ast.Subscript, ctx: Context) -> None:
        """`X["key"]` read from an upstream name: the key is a dependency like a name (a KeyError
        when upstream's registry no longer holds it); the judge decides whether X is a registry."""
        expression = dotted(node.value)
        namespace = (node.value.value if isinstance(node.value, ast.Attribute) and node.value.attr == "__dict__"
                     else node.value.args[0] if isinstance(node.value, ast.Call) and dotted(node.value.func) == "vars" and len(node.value.args) == 1 else None)
        owner = self.qualify(module, dotted(namespace), ctx.env) if namespace is not None and dotted(namespace) else None
        if is_upstream(owner) and isinstance(key := self.const(module, node.slice, ctx.env), str) and key.isidentifier():
            # `ServerArgs.__dict__["resolved_dict"]`, `vars(C)[name]`: the member C's own namespace
            # holds (a KeyError where it has none), the raw object as the class body bound it
            self._dependency("reference", f"{owner}.{key}", module, node, ctx, expression=ast.unparse(node))
            return
        # (`self.x[k]` is the object's own state; `self.accessor()[k]` what the accessor returns)
        if expression is None or expression.split(".")[0] == ctx.self_name and not isinstance(node.value, ast.Call):
            return
        if isinstance(node.value, ast.Call):  # `_models()[arch]`: a registry a plugin helper returns
            held = self.const(module, node.value, ctx.env)
            path = held.path if isinstance(held, Named) else None
        else:
            path = self.qualify(module, expression, ctx.env)
        key = self.const(module, node.slice, ctx.env)
        # (a module global a function reads: what the module binds, whatever the function's env holds)
        glob = self.qualify(module, expression) if path is None and expression.split(".")[0] not in ctx.local else path
        chain = self._chain_map(glob) if glob and not is_upstream(glob) else None
        if chain is not None:
            # `ChainMap(_NATIVE, upstream.REG)[key]`: the first map holding the key answers; past
            # the plugin's own maps, upstream's registry is read
            shadow, path = chain
            if isinstance(key, str) and key in shadow:
                return
            self._chain_shadows[id(node)] = shadow
        if is_upstream(path) and isinstance(key, str):
            self._dependency("registry_key", path, module, node, ctx, expression=ast.unparse(node), name=key)
        elif is_upstream(path) and ctx.functions and any(isinstance(n, ast.Name) and n.id in ctx.local for n in walk(node.slice)):
            # `def reuse(name): return ATTENTION_BACKENDS[name]` (or `[backend.value]`): the keys
            # are what its callers pass (finish())
            self.parameter_keys.append((path, module, ctx.functions[-1], ast.unparse(node.slice), node, ctx))
        elif (path is None and ctx.functions and not isinstance(node.value, ast.Call)
              and ((held := ctx.env.get(expression.split(".")[0], OPAQUE)) is OPAQUE or isinstance(held, Instance) and held.function is not None)
              and isinstance(node.slice, ast.Name) and node.slice.id in ctx.local
              and expression.split(".")[0] in self._parameters(module, ctx, node.lineno)):
            # `def _target(registry, arch): registry.models[arch]`: the registry too is what callers
            # pass, the key a name the function binds (finish(); None: named per binding)
            self.parameter_keys.append((None, module, ctx.functions[-1], ast.unparse(node.slice), node, ctx))

    def _chain_map(self, path: str) -> tuple[set, str] | None:
        """For a plugin module global bound once to `collections.ChainMap(a, …, REG, …)`: (the keys
        of the plugin's own maps, that first upstream map's path); None otherwise, or when a map
        before it does not fold. A key a map before REG holds never reads REG; one a map after it
        holds is what the lookup falls back to where REG lacks it (ChainMap.__getitem__ raises
        KeyError only when no map holds the key: collections docs), so neither read can fail."""
        home, _, name = path.rpartition(".")
        tree = self.tree(home) if home in self.files else None
        bound = [stmt.value for stmt in tree.body if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
                 and isinstance(stmt.targets[0], ast.Name) and stmt.targets[0].id == name] if tree is not None else []
        call = bound[0] if len(bound) == 1 and isinstance(bound[0], ast.Call) and not bound[0].keywords else None
        if call is None or self.qualify(home, dotted(call.func) or "") != "collections.ChainMap":
            return None
        shadow: set = set()
        found = None
        for given in call.args:
            upstream = self.qualify(home, dotted(given) or "") if dotted(given) else None
            if is_upstream(upstream):
                found = found or upstream
                continue
            held = self.const(home, given, {})
            if isinstance(held, dict):
                shadow.update(held)
            elif found is None:
                return None
        return (shadow, found) if found else None

    def _attribute(self, module: str, node: ast.Attribute, ctx: Context) -> None:
        read = node  # in a chain (`self.embed.weight.t()`), the read on what self.embed holds
        while isinstance(read.value, ast.Attribute) and isinstance(read.value.value, ast.Attribute):
            read = read.value
        held = read.value
        if (isinstance(node.ctx, ast.Load) and ctx.self_name and ctx.cls is not None and isinstance(held, ast.Attribute)
                and isinstance(held.value, ast.Name) and held.value.id == ctx.self_name):
            # `self.topo.split_k_and_v`: a field of what the class keeps on self (finish() names
            # the class when every binding of `self.topo` is an instance of one upstream class)
            self._dependency("field", None, module, read, ctx, expression=f"{ctx.self_name}.{held.attr}.{read.attr}", name=read.attr,
                             hook=f"{SELF_HELD}{ctx.cls.path}", member=held.attr)
            self._method_call(module, read, ctx, None, read.attr, hook=f"{SELF_HELD}{ctx.cls.path}", member=held.attr)
            outer, path = [], held.attr
            at = node
            while at is not read:
                outer.append(at)
                at = at.value
            for further in reversed(outer):  # `self.config.compilation.m`: on the class each field is annotated with (finish())
                path = f"{path}.{further.value.attr}"
                self._dependency("field", None, module, further, ctx, expression=f"{ctx.self_name}.{path}.{further.attr}", name=further.attr,
                                 hook=f"{SELF_HELD}{ctx.cls.path}", member=path)
        if isinstance(node.ctx, ast.Load):
            chain = [node]
            while isinstance(chain[-1].value, ast.Attribute):
                chain.append(chain[-1].value)
            self._field(module, chain[-1], ctx)
            if len(chain) > 1 and self._instance(module, chain[-1].value, ctx.env) is not None:
                # `cfg.compilation_config.init_with_sizes`: each read on the class its field is annotated with
                for outer in reversed(chain[:-1]):
                    if self._instance(module, outer.value, ctx.env) is None:
                        break
                    self._field(module, outer, ctx)
        if ctx.self_name:
            innermost = node
            while isinstance(innermost.value, ast.Attribute):
                innermost = innermost.value
            if id(innermost) not in self._self_calls:
                self._self_reference(innermost, ctx)
        expression = dotted(node)
        if expression is None and isinstance(node.ctx, ast.Load) and (path := self._helper_rooted(module, node, ctx.env)) is not None:
            self._dependency("reference", path, module, node, ctx, expression=ast.unparse(node))
            return
        if expression is None or isinstance(node.ctx, (ast.Store, ast.Del)):
            return
        head = expression.split(".")[0]
        if head == ctx.self_name:
            return
        path = self.qualify(module, expression, ctx.env)
        replacements = profile().replacements
        if replacements and node.attr == replacements.method:
            return  # `X.register_oot`: its custom_op dependency judges it
        if path and not is_upstream(path) and isinstance(node.value, (ast.Name, ast.Attribute)) and head not in ctx.local:
            # `DevAttnBackend.prepare_prefill_shared_read_snapshot`: of a plugin class, a member
            # its upstream bases may give (finish(): _class_reads)
            self.class_reads.append((module, node, ctx, path.rpartition(".")[0], node.attr))
        if is_upstream(path):
            named = self.qualify(module, head, ctx.env)
            # (a name a caught import binds, None where it fails: reading its attribute fails there)
            fallback = NONE_FALLBACK_READ if head not in ctx.local and isinstance(self.none_fallbacks.get((module, named)), ImportsResolve) else None
            self._dependency("reference", path, module, node, ctx, expression=expression, name=named, how=fallback)

    def _helper_rooted(self, module: str, node: ast.Attribute, env: dict) -> str | None:
        """`platform().m` / `_sampler_module().Sampler.forward`: the upstream path an attribute
        chain reads when its root is a call of a plugin function that returns an upstream object
        by name (`return current_platform`, a module it imports), or `type(current_platform)`:
        that object's path and the chain's attributes; None for any other root."""
        attrs: list[str] = []
        while isinstance(node, ast.Attribute):
            attrs.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Call) or not isinstance(node.func, (ast.Name, ast.Attribute)):
            return None
        if (dotted(node.func) == "type" and len(node.args) == 1 and not node.keywords and profile().platform_instance
                and self.qualify(module, dotted(node.args[0]) or "", env) == profile().platform_instance):
            # `type(current_platform).m`: m on the class of the engine's platform instance, the
            # activated class (a read of `current_platform.m`, judged there)
            return ".".join([profile().platform_instance, *reversed(attrs)])
        callee = self.qualify(module, dotted(node.func) or "", env)
        if not callee or is_upstream(callee) or self._plugin_definition(callee) is None:
            return None  # (only the plugin's own functions: what an upstream call returns is not named)
        held = self.const(module, node, env)
        return ".".join([held.path, *reversed(attrs)]) if isinstance(held, Named) and is_upstream(held.path) else None

    def _field(self, module: str, node: ast.AST, ctx: Context, value: ast.AST | None = None, attr: str | None = None, how: str | None = None) -> None:
        """A read (or, with how=WRITE, a write) of field `attr` of the upstream instance `value`
        holds; `node` is the `v.x` attribute itself when value and attr are not given."""
        if value is None:
            value, attr = node.value, node.attr
        instance = self._instance(module, value, ctx.env)
        if instance is None or (how == WRITE and isinstance(node, ast.Attribute) and isinstance(value, ast.Name) and value.id == "server_args"):
            return  # `server_args.x = …`: the server_arg kind judges it
        # hook / member carry the function and its parameter until finish() names the class
        for path in (instance.path, *instance.alternatives):  # (a union's classes: read on each)
            self._dependency(
                "field", f"{path}.{attr}" if path else None, module, node, ctx,
                expression=ast.unparse(node), name=attr, how=how, hook=instance.function, member=instance.param,
            )
            if how is None:
                self._method_call(module, node, ctx, f"{path}.{attr}" if path else None, attr, hook=instance.function, member=instance.param)

    def _method_call(self, module: str, node: ast.AST, ctx: Context, target: str | None, attr: str, **fields) -> None:
        """Where the read `node` (`obj.m`, obj an instance of a known upstream class) is what a
        call calls: an INSTANCE_CALL dependency on `<Class>.m` with the call's shape (one per
        `**(… if c else …)` arm, under its test); `target` None until finish() names the class
        (fields: the hook / member that say how)."""
        called = self._called.get(id(node))
        if called is None or called[0] is not node:
            return
        call = called[1]
        for shape, test, negate in self._arm_shapes(call):
            self._dependency("call", target, module, call, self._arm(module, ctx, test, negate), call=shape, expression=ast.unparse(node),
                             name=attr, how=INSTANCE_CALL, **fields)

    def _self_reference(self, node: ast.Attribute, ctx: Context, call: CallShape | None = None) -> bool:
        """Record `self.x` / `super().x` / `cls.x` / `type(self).x` in a method: the subclass
        check resolves x over the class's MRO. Returns whether `node` was one."""
        base = node.value
        if isinstance(base, ast.Name) and base.id == ctx.self_name:
            access = "class" if ctx.method and "classmethod" in {d.rsplit(".", 1)[-1] for d in ctx.method.decorators} else "instance"
        elif is_super(base, ctx.self_name, ctx.cls.path.rsplit(".", 1)[-1]):
            access = "super"
        elif isinstance(base, ast.Call) and dotted(base.func) == "type" and len(base.args) == 1 and isinstance(base.args[0], ast.Name) and base.args[0].id == ctx.self_name:
            access = "class"
        else:
            return False
        member = mangled(node.attr, ctx.cls.path.rpartition(".")[2])  # `self.__x` in class C reads `_C__x`
        if isinstance(node.ctx, ast.Load):
            ctx.cls.self_refs.append(SelfRef(member, access, node.lineno, call, ctx.guards, ctx.catches, ctx.functions[-1] if ctx.functions else None))
        elif access != "super":
            ctx.cls.bound_otherwise.add(member)
        return True

    def _call(self, module: str, call: ast.Call, ctx: Context) -> None:
        env = ctx.env
        if isinstance(call.func, ast.Attribute):  # (the read of `obj.m` is judged with the call: _field)
            self._called[id(call.func)] = (call.func, call)
        if isinstance(call.func, ast.Call) and (dotted(call.func.func) or "").endswith("plugin_hook"):
            # `plugin_hook(target, type=…)(fn)`: the decorator applied by hand
            inner = call.func
            self._hook(module, call, arg(inner, 0, "target"), arg(inner, 1, "type"), call.args[0] if call.args else None, ctx)
            return
        if isinstance(call.func, ast.Name) and len(call.args) == 1 and not call.keywords and (inner := self._held_plugin_hook(module, call.func, ctx)) is not None:
            # `around = plugin_hook(target, type=…)` then `around(fn)`: the same, through the name
            self._hook(module, call, arg(inner, 0, "target"), arg(inner, 1, "type"), call.args[0], ctx)
            return
        lazy = (self.const(module, call.func, env) if isinstance(call.func, (ast.Subscript, ast.BoolOp, ast.IfExp))
                else env.get(call.func.id) if isinstance(call.func, ast.Name) and call.func.id in env
                # (a module global bound to a value, `export = functools.partial(…)`)
                else self.const(module, call.func, env) if isinstance(call.func, ast.Name) and getattr(
                    self.table(module).names.get(call.func.id), "kind", None) == "value" else None)
        if (lazy is None and isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name)
                and isinstance(self._record_held(module, call.func.value, env), Record)
                and isinstance(field := self.const(module, call.func, env), Named) and is_upstream(field.path)):
            # `UPSTREAM.register_attention_backend(…)` of a NamedTuple of caught imports a probe
            # returned: the upstream function the field holds (a plugin method stays the method call)
            lazy = field
        if (lazy is None and isinstance(call.func, ast.Attribute) and isinstance(call.func.value, (ast.Name, ast.Attribute))
                and self._member_class(self.const(module, call.func.value, env))
                and isinstance(held := self.const(module, call.func, env), Named) and is_upstream(held.path)):
            # `SpecStage.DRAFT_EXTEND.value(…)`, `stage.input_cls(…)` of a plugin enum member whose
            # value (or what its `__init__` sets from it) is an upstream class or function: a call of that
            lazy = held
        receiver = call.func.value if isinstance(call.func, ast.Attribute) else None
        if isinstance(receiver, ast.Call) and dotted(receiver.func) == "type" and len(receiver.args) == 1:
            receiver = receiver.args[0]
        if (lazy is None and ctx.self_name and isinstance(receiver, ast.Name) and receiver.id == ctx.self_name
                and isinstance(kept := self.const(module, call.func, env), (Named, Partial))):
            # `self.draft_input_cls(…)` / `type(self).…` / `cls.…` of a class constant
            # (`draft_input_cls = EagleDraftInput`): a call of what it holds
            lazy = kept
        held = (call.func.args[0] if isinstance(call.func, ast.Call) and dotted(call.func.func) == "type" and "type" not in env
                and len(call.func.args) == 1 and not call.func.keywords
                else call.func.value if isinstance(call.func, ast.Attribute) and call.func.attr == "__class__" else None)
        if held is not None and (instance := self._instance(module, held, env)) is not None and instance.path:
            lazy = Named(instance.path)  # `type(state)(…)` / `state.__class__(…)` of a typed object: its class called
        if isinstance(lazy, Partial) and "<partial>" not in env:
            # `action()` of `functools.partial(envs.X.set, v)`: the call of its function, the
            # presets first (the functools docs), read as if written so
            shown = f"partial({lazy.func.rpartition('.')[2]})"  # (the name a finding shows for the call)
            held = {"<partial>": True, shown: Named(lazy.func), **{f"<preset{i}>": v for i, v in enumerate(lazy.args)},
                    **{f"<preset {k}>": v for k, v in lazy.keywords}}
            made = ast.Call(func=ast.Name(shown, ast.Load()), args=[*(ast.Name(f"<preset{i}>", ast.Load()) for i in range(len(lazy.args))), *call.args],
                            keywords=[*(ast.keyword(k, ast.Name(f"<preset {k}>", ast.Load())) for k, _ in lazy.keywords), *call.keywords])
            self._call(module, ast.fix_missing_locations(ast.copy_location(made, call)), replace(ctx, env={**env, **held}))
            return
        name = "" if isinstance(call.func, ast.Call) else dotted(call.func) or ""
        qualified = self.qualify(module, name, env) or name
        if not name and isinstance(call.func, ast.Attribute) and (rooted := self._helper_rooted(module, call.func, env)) is not None:
            qualified = rooted  # `platform().m()` of a helper returning current_platform: upstream's m on it
        if isinstance(call.func, (ast.Subscript, ast.BoolOp, ast.IfExp, ast.Call, ast.Attribute)) and isinstance(lazy, Named) and is_upstream(lazy.path):
            # `CLASSES["draft"](…)` of a table of upstream classes, `(f or _own)(…)` where f is upstream's
            name, qualified = ast.unparse(call.func), lazy.path
        for keyword in call.keywords:
            if keyword.arg and isinstance(keyword.value, (ast.Name, ast.Attribute)):
                handed = self.qualify(module, dotted(keyword.value), env)
                if handed in self.scan.classes:
                    self.scan.class_arguments.add((keyword.arg, handed))
        if ctx.self_name and isinstance(call.func, ast.Attribute):
            # (`super().m(x, **({"k": v} if c else {}))`: each arm under its test, as for upstream's calls)
            if all([self._self_reference(call.func, self._arm(module, ctx, test, negate), shape) for shape, test, negate in self._arm_shapes(call)]):
                self._self_calls.add(id(call.func))
        engine = profile()
        hooks = engine.hook_registry
        if ("attention_backend" in engine.kinds and ctx.functions and isinstance(call.func, ast.Call) and len(call.args) == 1
                and _held_by_run(call.func.func, ctx)):
            # `reg(self.NAME)(self.create)` / `self.registrar(name)(fn)`: a decorator applied by hand
            # through a name a caller or a construction gives it: register_attention_backend where it
            # holds that (finish())
            self.held_registrars.append((module, call.func, ctx))
        registrar = "attention_backend" in engine.kinds and isinstance(call.func, ast.Attribute) and call.func.attr == "register_attention_backend"
        receiver = call.func.value if isinstance(call.func, ast.Attribute) and (call.func.attr == "register" or registrar) else None
        if (hooks or registrar) and ctx.functions and (
                isinstance(receiver, ast.Name) and receiver.id in ctx.local and (env.get(receiver.id) is OPAQUE or isinstance(env.get(receiver.id), Instance))
                or isinstance(receiver, ast.Attribute) and isinstance(receiver.value, ast.Name) and receiver.value.id == ctx.self_name):
            # `def install(registry): registry.register(target, fn, AROUND)`, `self.registry.register(…)`:
            # a hook where a caller (a construction) hands it HookRegistry; `self.registry.
            # register_attention_backend(name)` where it holds the attention registry module (finish())
            self.parameter_registries.append((module, call, ctx))
            if registrar and not self.qualify(module, name, env):
                return
        if hooks and (qualified == f"{hooks}.register" or name.endswith(f"{hooks.rsplit('.', 1)[-1]}.register")
                      or self._registers_hooks(qualified, hooks)):
            call, ctx = self._spread(module, call, ctx)
            self._hook(module, call, arg(call, 0, "target"), arg(call, 2, "hook_type"), arg(call, 1, "hook"), ctx)
            return
        if "attention_backend" in engine.kinds and qualified.endswith("register_attention_backend") and call.args:
            backend = self.const(module, call.args[0], env)
            # and a call as any other: `register_attention_backend("x", factory)` raises TypeError
            self._dependency("attention_backend", qualified, module, call, ctx, name=backend if isinstance(backend, str) else "?")
        if name == "setattr" and len(call.args) >= 2:
            self.setattr_call(module, call, ctx)
            return
        # unittest.mock's patchers, started or entered, set the attribute as setattr does (and
        # patch("pkg.mod.name", new) imports pkg.mod first: mock._get_target / pkgutil.resolve_name)
        # (entered by a `with`, or decorating a function: in place for that block only, then undone)
        if qualified in _MOCK_PATCHERS and len(call.args) >= 2 and (new := arg(call, 2, "new")) is not None:
            setter = ast.Call(func=ast.Name("setattr", ast.Load()), args=[call.args[0], call.args[1], new], keywords=[])
            self.setattr_call(module, ast.copy_location(setter, call), ctx, within=self.entered.get(id(call)))
        elif qualified in _MOCK_MULTIPLE and len(call.args) == 1:
            # patch.multiple(owner, a=f, b=g): each keyword patched on owner, as patch.object does
            # (owner named by a string: imported first, as patch's); its own options are no attributes
            owner = self.const(module, call.args[0], env)
            for keyword in (k for k in call.keywords if k.arg and k.arg not in _MOCK_OPTIONS):
                if isinstance(owner, str) and is_upstream(owner):
                    value, params = self._patch_value(module, keyword.value, ctx)
                    self._dependency("patch", f"{owner}.{keyword.arg}", module, call, ctx, how="setattr", hook=value, params=params,
                                     owner_errors=IMPORT_ERRORS | ATTRIBUTE_ERRORS, within=self.entered.get(id(call)))
                    continue
                setter = ast.Call(func=ast.Name("setattr", ast.Load()), args=[call.args[0], ast.Constant(keyword.arg), keyword.value], keywords=[])
                self.setattr_call(module, ast.copy_location(setter, call), ctx, within=self.entered.get(id(call)))
        elif qualified in _MOCK_PATCHERS_BY_NAME and call.args and (new := arg(call, 1, "new")) is not None:
            target = self.const(module, call.args[0], env)
            if isinstance(target, str) and is_upstream(target) and "." in target:
                value, params = self._patch_value(module, new, ctx)
                # mock imports the owner (pkgutil.resolve_name: ImportError) and reads the attribute
                self._dependency("patch", target, module, call, ctx, how="setattr", hook=value, params=params,
                                 owner_errors=IMPORT_ERRORS | ATTRIBUTE_ERRORS, within=self.entered.get(id(call)))
        if isinstance(call.func, ast.Attribute) and call.func.attr == "update" and (namespace := self._namespace_of(module, call.func.value, env)):
            # `vars(mod).update(f=g)`, `mod.__dict__.update({"f": g})`: `mod.f = g` for each key
            given = call.args[0] if len(call.args) == 1 and isinstance(call.args[0], ast.Dict) else None
            entries = [(k.arg, k.value) for k in call.keywords if k.arg] + ([
                (key.value, value) for key, value in zip(given.keys, given.values) if isinstance(key, ast.Constant) and isinstance(key.value, str)] if given else [])
            if len(call.args) == 1 and given is None and isinstance(folded := self.const(module, call.args[0], env), dict):
                # a table of the plugin's (`mod.__dict__.update(_OVERRIDES)`): its entries, each value as folded
                entries += [(key, ast.copy_location(ast.Name(f"<entry {key}>", ast.Load()), call)) for key in folded if isinstance(key, str)]
                ctx = replace(ctx, env={**env, **{f"<entry {key}>": value for key, value in folded.items() if isinstance(key, str)}})
            for name, value_node in entries if len(call.args) <= 1 else ():
                value, params = self._patch_value(module, value_node, ctx)
                self._dependency("patch", f"{namespace}.{name}", module, call, ctx, how="assign", hook=value, params=params)
        if isinstance(call.func, ast.Attribute) and call.func.attr in _NAMED_SETTERS and call.args:
            # `layer.register_parameter("weight_scale", …)`: the name is then read as `layer.weight_scale`
            self._sets_member(module, call, ctx, call.func.value, self.const(module, call.args[0], env))
        if name in ("isinstance", "issubclass") and len(call.args) == 2:
            classes = call.args[1].elts if isinstance(call.args[1], ast.Tuple) else [call.args[1]]
            for element in classes:  # each must be a class (TypeError otherwise)
                qualified_class = self.qualify(module, dotted(element), env)
                if is_upstream(qualified_class):
                    self._dependency("reference", qualified_class, module, call, ctx, expression=ast.unparse(call), how=CLASS_USE_CHECK)
        if isinstance(call.func, ast.Attribute) and call.func.attr in ("get", "pop") and call.args and not isinstance(call.args[0], ast.Starred):
            # `REGISTRY.get("key")`: None (or the default) for a key upstream dropped; `.pop("key")`
            # without a default raises KeyError as `[key]` does
            owner = self.qualify(module, dotted(call.func.value), env)
            if isinstance(call.func.value, ast.Call):  # `self.table().get(k)`: what the accessor returns
                owner = held.path if isinstance(held := self.const(module, call.func.value, env), Named) else None
            key = self.const(module, call.args[0], env)
            if is_upstream(owner) and isinstance(key, str):
                self._dependency("registry_key", owner, module, call, ctx, expression=ast.unparse(call), name=key, how=self.lookup_how(module, call, ctx))
            elif (is_upstream(owner) and ctx.functions and self.lookup_how(module, call, ctx) in (None, "get", "get-raises")
                  and any(isinstance(n, ast.Name) and n.id in ctx.local for n in walk(call.args[0]))):
                # `def _require(name): f = REG.get(name); if f is None: raise …`: the keys are what
                # its callers pass (finish(), as for `REG[name]`)
                self.parameter_keys.append((owner, module, ctx.functions[-1], ast.unparse(call.args[0]), call, ctx))
        read = self._subscript_call(module, call, ctx)
        if read is not None:
            # `REG.__getitem__(k)`, `operator.getitem(REG, k)`, `map(REG.__getitem__, KEYS)`: `REG[k]`
            # for each key, as Python's data model runs a subscript
            owner, keys = read
            for key in keys:
                self._dependency("registry_key", owner, module, call, ctx, expression=ast.unparse(call), name=key)
        getter = (call.func if isinstance(call.func, ast.Call) else None if not isinstance(call.func, ast.Name)
                  else self._made_once(call.func.id, ctx) if call.func.id in ctx.local else self._module_made_once(module, call.func.id))
        if (getter is not None and len(call.args) == 1 and not call.keywords and not getter.keywords
                and self.qualify(module, dotted(getter.func) or "", env) == "operator.itemgetter"):
            # itemgetter(k1, k2)(REG) / itemgetter(*keys)(REG): REG[k1], REG[k2] (KeyError: the operator docs)
            owner = self.qualify(module, dotted(call.args[0]), env)
            keys = []
            for a in getter.args:
                items = self.iterated(self.const(module, a.value, env)) if isinstance(a, ast.Starred) else [self.const(module, a, env)]
                keys += items if isinstance(items, list) else [OPAQUE]
            if is_upstream(owner) and keys and all(isinstance(k, str) for k in keys):
                for key in keys:
                    self._dependency("registry_key", owner, module, call, ctx, expression=ast.unparse(call), name=key)
        if qualified == "sys.modules.setdefault" and len(call.args) == 2:
            self._provides_module(module, call.args[0], call, ctx)
        if name in ("getattr", "hasattr") and len(call.args) >= 2 and isinstance(looked := self.const(module, call.args[1], env), str):
            # `getattr(current_platform, f"{phase}_chunk_rows")` in a loop over phases: a read of
            # that name, as `x.name` is (the plugin uses a method of that name itself)
            self.scan.attribute_uses.setdefault(looked, f"{self.relfile(module)}:{call.lineno}")
        if name == "getattr" and len(call.args) == 2:  # no default: AttributeError when it is gone
            owner = self.qualify(module, dotted(call.args[0]), env)
            if not is_upstream(owner) and isinstance(held := self.const(module, call.args[0], env), Named):
                owner = held.path  # `getattr(spec.owner, spec.name)` of a record a loop folds
            attr = self.const(module, call.args[1], env)
            if ctx.self_name and isinstance(attr, str) and attr.isidentifier():
                # `getattr(self, f"{p}_g_idx")` of a name folded here (a comprehension's pass): `self.w13_g_idx`
                read = ast.copy_location(ast.Attribute(value=call.args[0], attr=attr, ctx=ast.Load()), call)
                if self._self_reference(read, ctx):
                    return
            if is_upstream(owner) and isinstance(attr, str):
                # (`getattr(import_module(m), name)`: where m is gone, the import raises first)
                self._dependency("reference", f"{owner}.{attr}", module, call, ctx, expression=ast.unparse(call),
                                 owner_errors=self._owner_errors(module, call.args[0], env))
            elif isinstance(attr, str):
                self._field(module, call, ctx, call.args[0], attr)
            elif ctx.functions == (f"{module}.__getattr__",) and any(isinstance(n, ast.Name) and n.id in ctx.local for a in call.args for n in walk(a)):
                # `getattr(import_module(_LAZY[name]), name)` in a module's own __getattr__ (PEP 562):
                # as each name plugin code reads off the module binds it (finish()). (A helper's
                # getattr of what its callers pass is not read so: what a plugin sets at run time
                # on upstream objects, env names, is not known here.)
                self.parameter_getattrs.append((module, call, ctx))
            return
        if (isinstance(call.func, ast.Name) and qualified and not is_upstream(qualified) and arg(call, 0, "name") is not None
                and isinstance(held := self.const(module, call.func, env), Named) and held.path in ("importlib.import_module", "pkgutil.resolve_name")):
            qualified = held.path  # `load = functools.cache(importlib.import_module)`: `load(m)` imports m
        if (qualified.endswith(("import_module", "__import__")) or qualified == "pkgutil.resolve_name") and arg(call, 0, "name") is not None:
            self._dynamic_import(module, call, ctx, resolves=qualified == "pkgutil.resolve_name")
            return
        if (isinstance(call.func, ast.Attribute) and call.func.attr == "load" and not call.args and not call.keywords
                and isinstance(entry := self.const(module, call.func.value, env), Record) and entry.cls == ENTRY_POINT_CLASS):
            # `ep.load()` of one of the plugin's own entry points: resolves its value as pkgutil.resolve_name does
            named = ast.copy_location(ast.Call(func=call.func, args=[ast.Constant(entry.get("value"))], keywords=[]), call)
            self._dynamic_import(module, named, ctx, resolves=True)
            return
        if (isinstance(call.func, ast.Attribute) and call.func.attr == "exec_module" and len(call.args) == 1
                and isinstance(made := self.const(module, call.args[0], env), Named) and (made.path in self.files or is_upstream(made.path))):
            # `spec.loader.exec_module(module_from_spec(find_spec(M)))` runs M's body: an import of M (importlib's recipe)
            named = ast.copy_location(ast.Call(func=call.func, args=[ast.Constant(made.path)], keywords=[]), call)
            self._dynamic_import(module, named, ctx)
            return
        if (isinstance(call.func, ast.Attribute) and call.func.attr == "exec_module" and len(call.args) == 1 and ctx.functions
                and self.const(module, call.args[0], env) is OPAQUE):
            # the same recipe inside a helper whose parameter names the module: what its callers pass (finish())
            self.parameter_imports.append((module, call.args[0], None, ctx))
            return
        if qualified.endswith(("environ.setdefault", "environ.__setitem__", "putenv")) and len(call.args) >= 2:
            variable = self.const(module, call.args[0], env)
            if isinstance(variable, str):
                self._environment_write(module, variable, self.const(module, call.args[1], env), ctx)
            elif ctx.functions and any(isinstance(n, ast.Name) and n.id in ctx.local for n in walk(call.args[0])):
                # `os.environ.setdefault(self.env_name, self.package)`: as each binding of the
                # method's instance or the helper's callers gives it (finish(): _parameter_environ)
                self.parameter_environ.append((module, call, ctx))
        if qualified.endswith("environ.update"):
            self.environ_update(module, call, ctx)
        if engine.external_model_env and arg(call, 0, "value") is not None:
            self.settings_write(module, call, qualified, ctx)
        if engine.model_registry and qualified in (f"{engine.model_registry}.register", engine.model_loader) and call.args:
            self._model_package(module, self.const(module, call.args[0], env), ctx)
        self._replacement_call(module, call, ctx)
        self._model_registration(module, call, ctx)
        if isinstance(call.func, ast.Attribute) and call.func.attr in IN_PLACE_EDITS:
            owner = self.qualify(module, dotted(call.func.value), env)
            self._architecture_use(module, call, ctx)
            if is_upstream(owner) and self._is_upstream_value(owner) and not self._namespace_of(module, call.func.value, env):
                # (a namespace's update sets attributes: patches of each key, above)
                # the key it puts in, for a registry's later `key in X` (`X.append("k")`, `X.setdefault("k", v)`)
                at = {"append": 0, "add": 0, "setdefault": 0, "insert": 1}.get(call.func.attr)
                key = self.const(module, call.args[at], env) if at is not None and len(call.args) > at else None
                self._dependency("patch", owner, module, call, ctx, how=f"in-place .{call.func.attr}", name=key if isinstance(key, str) else None)
                return
        if (isinstance(call.func, ast.Name) and ctx.functions and call.func.id in ctx.local and call.func.id != ctx.self_name
                and (env.get(call.func.id, OPAQUE) is OPAQUE or isinstance(held := env.get(call.func.id), Instance) and held.path is None)):
            # `def make(spec_cls, **fields): return spec_cls(**fields)`: a call of what each caller
            # hands in, judged per binding where that is an upstream class (finish())
            self.parameter_class_calls.append((module, call, ctx))
        if (qualified == "functools.partial" and call.args and isinstance(call.args[0], (ast.Name, ast.Attribute))
                and not any(isinstance(a, ast.Starred) for a in call.args) and all(k.arg for k in call.keywords)
                and self._plugin_function(function := self.qualify(module, dotted(call.args[0]) or "", env) or "") is not None):
            # `functools.partial(_delegate, name)` of a plugin function: its parameters bound as a call
            # with the presets binds them, wherever the partial is called (upstream's too: a factory
            # it registers), the rest unknown (caller_bindings; not a call made here)
            made = ast.copy_location(ast.Call(func=call.args[0], args=call.args[1:], keywords=call.keywords), call)
            read = {n.id: env[n.id] for a in (*made.args, *made.keywords) for n in walk(a) if isinstance(n, ast.Name) and n.id in env}
            self.call_arguments.setdefault(function.rsplit(".", 1)[-1], []).append((module, made, read))
        if not is_upstream(qualified) and isinstance(call.func, (ast.Name, ast.Attribute)):
            # what each call of a plugin function passes, folded where it is made (loops over
            # constants unrolled): caller_bindings reads it
            short = call.func.id if isinstance(call.func, ast.Name) else call.func.attr
            if isinstance(call.func, ast.Name) and (alias := self._plugin_callee(module, call.func, qualified, env)) is not None:
                # `from .patches import SamplerPatches as Patches; Patches()`: the calls of SamplerPatches
                short = alias
            if ctx.guards:  # what a helper does per call runs only where the call does (_hook)
                self.call_guards[f"{self.relfile(module)}:{call.lineno}"] = ctx.guards
            if call.args or call.keywords:  # folded when asked: the names the arguments read, as bound here
                read = {n.id: env[n.id] for a in (*call.args, *call.keywords) for n in walk(a) if isinstance(n, ast.Name) and n.id in env}
                self.call_arguments.setdefault(short, []).append((module, call, read))
            else:  # `Settings()`: an object made with its defaults (PluginClasses._record_bindings); the
                # names a receiver reads as bound here (`hook_cls.install()` in a loop over classes)
                # (the callee's own name too: a class a function imports locally)
                receiver = call.func.value if isinstance(call.func, ast.Attribute) else call.func
                read = {n.id: env[n.id] for n in walk(receiver) if isinstance(n, ast.Name) and n.id in env}
                self.bare_calls.setdefault(short, []).append((module, call, read))
        if isinstance(call.func, ast.Call):
            # `Registrar(target, kind)(fn)`, `Installer(specs)()`: what the object's __call__ gets (helper_bindings)
            read = {n.id: env[n.id] for a in (*call.args, *call.keywords) for n in walk(a) if isinstance(n, ast.Name) and n.id in env}
            self.called_objects[id(call.func)] = (module, call, read)
        if (qualified == "dataclasses.field" and (factory := next((k.value for k in call.keywords if k.arg == "default_factory"), None)) is not None
                and isinstance(factory, (ast.Name, ast.Attribute)) and is_upstream(self.qualify(module, dotted(factory), env))):
            # `spec: V = field(default_factory=EagleVerifyInput)`: each construction that leaves the
            # field out calls the factory with no arguments (the dataclasses docs)
            self._call(module, ast.copy_location(ast.Call(func=factory, args=[], keywords=[]), call), ctx)
        if (qualified in ("dataclasses.replace", "copy.replace") and len(call.args) == 1 and not isinstance(call.args[0], ast.Starred)
                and (instance := self._instance(module, call.args[0], env)) is not None and instance.path and is_upstream(instance.path)):
            # replace(obj, x=…) calls obj.__class__(**changes) with every other init field taken from obj
            # (Python's dataclasses.replace; copy.replace through __replace__): a call of the class with
            # those keywords, the rest unpacked
            short = instance.path.rpartition(".")[2]
            rest = ast.keyword(arg=None, value=ast.Name("<fields kept>", ast.Load()))
            made = ast.copy_location(ast.Call(func=ast.Name(short, ast.Load()), args=[], keywords=[*call.keywords, rest]), call)
            self._call(module, ast.fix_missing_locations(made), replace(ctx, env={**env, short: Named(instance.path)}))
        spreads = [a.value for a in call.args if isinstance(a, ast.Starred)] + [k.value for k in call.keywords if k.arg is None]
        if is_upstream(qualified) and spreads and not any(isinstance(n, (ast.Attribute, ast.Subscript)) or isinstance(n, ast.Name) and self._may_be_filled(n)
                                                          for n in spreads):
            # `C(**rec._asdict())`, `C(**asdict(rec))`, `C(**{…})`, `C(**DEFAULTS)`: keys a record's
            # fields, a literal or a dict bound once decide, each its own argument. (A name's dict
            # that any plugin code edits in place is left as written: statements may add keys to
            # it under tests of the release the fold cannot tell from certain ones.)
            call, ctx = self._spread(module, call, ctx)
            env = ctx.env
        if is_upstream(qualified):
            given = [*enumerate(call.args), *((k.arg, k.value) for k in call.keywords if k.arg)]
            strings = tuple((at, node.value if isinstance(node, ast.Constant) else value) for at, node in given
                            if isinstance(node, ast.Constant) and isinstance(node.value, str)
                            # (a name, an attribute or an item that folds: `fmt.upstream_method` of an enum member)
                            or isinstance(node, (ast.Name, ast.Attribute, ast.Subscript)) and isinstance(value := self.const(module, node, env), str))
            # a name a caught import binds, None where it fails (none_fallbacks): its call fails there
            if ctx.functions and any(isinstance(n, ast.Name) and n.id in ctx.local and not isinstance(env.get(n.id), str)
                                     for a in (*call.args, *(k.value for k in call.keywords)) for n in walk(a)) and (
                    (ref := self.upstream_ref(qualified)) is not None and keyed_lookup(self.index, ref) is not None):
                # a string argument the helper's parameters decide, handed to an upstream keyed lookup
                # (`get_quantization_config(method)`): the call again per binding of its callers
                # (finish(): _parameter_calls)
                self.parameter_calls.append((module, call, qualified, name, ctx))
            fallback = NONE_FALLBACK_CALL if isinstance(call.func, ast.Name) and isinstance(self.none_fallbacks.get((module, qualified)), ImportsResolve) else None
            for shape, test, negate in self._arm_shapes(call):
                self._dependency("call", qualified, module, call, self._arm(module, ctx, test, negate), call=shape, expression=name, arguments=strings, how=fallback)
        elif ctx.functions and name and qualified != name or (ctx.functions and isinstance(ctx.env.get(name), Named)):
            self.calls.setdefault(ctx.functions[-1], set()).add(qualified)
        if (name or ctx.self_name and isinstance(call.func, ast.Call) and dotted(call.func.func) == "type") and not is_upstream(qualified):
            # (`type(self)(…)`: what the class builds, _inherited_constructors)
            self.plugin_calls.append((module, call, ctx, qualified))
        self._kernel_key(module, call, ctx)

    def _arm(self, module: str, ctx: Context, test: ast.expr | None, negate: bool) -> Context:
        """`ctx` under an arm's test (_arm_shapes; itself where there is none)."""
        return ctx if test is None else replace(ctx, guards=ctx.guards + (self._guard(module, test, ctx.env, negate=negate, local=ctx.local),))

    @staticmethod
    def _arm_shapes(call: ast.Call) -> list[tuple[CallShape, ast.expr | None, bool]]:
        """The call's shapes with the condition each is made under: one `**(A if c else B)` of dict
        displays is two calls, A's keys under c and B's under not c (the plugin's own test, judged
        on the release: `**({"modality": m} if takes_modality else {})`); otherwise the one shape."""
        choices = [k for k in call.keywords if k.arg is None and isinstance(k.value, ast.IfExp)]
        shape = call_shape(call)
        if len(choices) != 1 or not shape.sometimes:
            return [(shape, None, False)]
        test = choices[0].value.test
        arms = []
        for arm, negate in ((choices[0].value.body, False), (choices[0].value.orelse, True)):
            made = ast.Call(func=call.func, args=call.args, keywords=[k for k in call.keywords if k is not choices[0]] + [ast.keyword(arg=None, value=arm)])
            arms.append((call_shape(made), test, negate))
        return arms

    def _sets_member(self, module: str, call: ast.Call, ctx: Context, obj: ast.expr, attr) -> None:
        """`obj` gets the member `attr` (a str, or anything else when not constant) by name: a
        field write on an upstream instance, a name of the plugin class on self."""
        if isinstance(attr, str) and self._instance(module, obj, ctx.env) is not None:
            self._field(module, call, ctx, obj, attr, how=WRITE)
        elif ctx.cls is not None and isinstance(obj, ast.Name) and obj.id == ctx.self_name:
            if isinstance(attr, str):
                ctx.cls.bound_otherwise.add(attr)
            else:
                ctx.cls.dynamic = True

    def _dynamic_import(self, module: str, call: ast.Call, ctx: Context, resolves: bool = False) -> None:
        """`import_module(name)` / `__import__(name)`, or `pkgutil.resolve_name(name)` (`resolves`:
        "pkg.mod:attr" imports pkg.mod; "pkg.mod.attr" the longest prefix that is a module)."""
        if never_runs(ctx):
            return  # under a test that folds to false here (`if enabled:` over a constant table): never made
        named = arg(call, 0, "name")  # import_module(name, package), __import__(name, …), resolve_name(name)
        target = self.const(module, named, ctx.env)
        if not isinstance(target, str) and ctx.functions and any(isinstance(n, ast.Name) and n.id in ctx.local for n in walk(named)):
            # built from the function's parameters or locals: what its callers pass (finish()), or
            # a module chosen at run time among those its shape names
            self.parameter_imports.append((module, named, arg(call, 1, "package"), ctx))
            if self.chosen_modules(module, named, ctx.env):
                return
        if not isinstance(target, str) and (chosen := self.chosen_modules(module, named, ctx.env)):
            # a module chosen at run time among a table's values (`QUANT_BACKENDS[choice]` from an
            # environment variable, through a helper): any of them may be imported
            for name in chosen:
                self.imported_by_name(module, name, ctx)
            return
        if not isinstance(target, str):
            # auto-discovery (pkgutil.iter_modules(__path__), os.listdir …) may load any submodule;
            # a name from elsewhere (a registry entry's module_path) says nothing about which
            if self._discovers(module):
                own = module if self.files[module][1] else module.rpartition(".")[0]
                for pattern in self._listed_packages(module) or [f"{own}.*"]:
                    self.dynamic_imports.setdefault(module, []).append((pattern, ctx.functions))
            else:
                self.scan.unnamed_imports.setdefault(module, f"{self.relfile(module)}:{call.lineno}: {ast.unparse(call)}")
            return
        if resolves:
            target = target.partition(":")[0] if ":" in target else self._longest_module(target)
        if target.startswith("."):
            target = self._absolute(target, self.const(module, arg(call, 1, "package"), ctx.env))
            if target is None:
                return
        self.imported_by_name(module, target, ctx)
        if is_upstream(target):
            self._dependency("import", target, module, call, ctx, expression=ast.unparse(call))

    def imported_by_name(self, module: str, target: str, ctx: Context) -> None:
        """`target` imported by name from `module` (import_module and the like), under the
        guards it runs under, as an import statement there would be (liveness._imported_when)."""
        self.dynamic_imports.setdefault(module, []).append((target, ctx.functions))
        self.import_guards.setdefault(module, {}).setdefault(target, []).append(ctx.guards)
        self.import_site(module, target, 0, ctx)

    def import_site(self, module: str, target: str, line: int, ctx: Context) -> None:
        """`module` imports `target` at `line` (0: not known; run where `ctx` says): a place the
        bodies of the plugin modules it names (and their parents) run from."""
        parts = target.split(".")
        for end in range(1, len(parts) + 1):
            if (name := ".".join(parts[:end])) in self.files and name != module:
                self.import_sites.setdefault(name, []).append((module, line, ctx))

    def _longest_module(self, path: str) -> str:
        """The longest prefix of the dotted `path` that is a plugin or upstream module (what
        pkgutil.resolve_name imports before reading the rest as attributes); `path` when none is."""
        parts = path.split(".")
        for end in range(len(parts), 0, -1):
            prefix = ".".join(parts[:end])
            if prefix in self.files or is_upstream(prefix) and self.index.module_exists(prefix):
                return prefix
        return path

    def chosen_modules(self, module: str, node: ast.expr, env: dict, depth: int = 0) -> list[str]:
        """The plugin modules a name built at run time may be: `f"vendev.backends.{name}.patch"`,
        `"….{}.patch".format(name)`, `"….%s.patch" % name` with a constant prefix naming a plugin
        package, each unknown part one dotted segment; `TABLE[key]` / `TABLE.get(key, d)` of a
        folded dict under a key not known, each plugin module among its values (and d); a call of
        a plugin function, what each of its `return`s may be. [] when the expression has no such shape."""
        if isinstance(node, ast.Subscript) or isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
            table = self.const(module, node.value if isinstance(node, ast.Subscript) else node.func.value, env)
            extra = [self.const(module, node.args[1], env)] if isinstance(node, ast.Call) and len(node.args) == 2 else []
            if isinstance(table, dict):
                return sorted({v for v in [*table.values(), *extra] if isinstance(v, str) and v in self.files})
        if isinstance(node, ast.Call) and dotted(node.func) and depth < 4:
            found = self._plugin_definition(self.qualify(module, dotted(node.func), env) or "")
            if found is not None and isinstance(found[1], (ast.FunctionDef, ast.AsyncFunctionDef)) and not found[1].decorator_list:
                names: set[str] = set()
                for returned in own_returns(found[1]):
                    value = self.const(found[0], returned.value, {}) if returned.value is not None else None
                    names.update([value] if isinstance(value, str) and value in self.files
                                 else self.chosen_modules(found[0], returned.value, {}, depth + 1) if returned.value is not None else [])
                return sorted(names)
        parts: list[str | None] = []
        if isinstance(node, ast.JoinedStr):
            for value in node.values:
                constant = self.const(module, value.value, env) if isinstance(value, ast.FormattedValue) else value.value
                parts.append(constant if isinstance(constant, str) else None)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format":
            template = self.const(module, node.func.value, env)
            if not isinstance(template, str) or "{" not in template:
                return []
            given = [self.const(module, a, env) for a in node.args if not isinstance(a, ast.Starred)]
            automatic = iter(given)
            for literal, field, _, _ in string.Formatter().parse(template):
                # a field an argument fills with a folded str is that text (`"{}.{}.patch".format(ROOT, name)`)
                held = (next(automatic, None) if field == "" else given[int(field)] if field is not None and field.isdigit()
                        and int(field) < len(given) else None) if field is not None else None
                parts += [literal] + ([held if isinstance(held, str) else None] if field is not None else [])
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
            template = self.const(module, node.left, env)
            if not isinstance(template, str):
                return []
            pieces = re.split(r"%[sdr]", template)
            given = [self.const(module, a, env) for a in node.right.elts] if isinstance(node.right, ast.Tuple) else [self.const(module, node.right, env)]
            for at, piece in enumerate(pieces[:-1]):  # (`"%s.%s.patch" % (ROOT, name)`: ROOT's text)
                parts += [piece, given[at] if at < len(given) and isinstance(given[at], str) else None]
            parts.append(pieces[-1])
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "join" and len(node.args) == 1
              and isinstance(node.args[0], (ast.Tuple, ast.List)) and isinstance(separator := self.const(module, node.func.value, env), str)):
            for at, element in enumerate(node.args[0].elts):  # `".".join((ROOT, name, "patch"))`
                held = self.const(module, element, env)
                parts += ([separator] if at else []) + [held if isinstance(held, str) else None]
        parts = [p for p in parts if p != ""]
        for at in range(len(parts) - 1, 0, -1):  # (adjacent texts are one text)
            if isinstance(parts[at], str) and isinstance(parts[at - 1], str):
                parts[at - 1:at + 1] = [parts[at - 1] + parts[at]]
        if None not in parts or not isinstance(parts[0], str) or parts[0].split(".")[0] not in {m.split(".")[0] for m in self.files}:
            return []
        pattern = re.compile("".join(re.escape(p) if isinstance(p, str) else r"\w+" for p in parts))
        return [name for name in self.files if pattern.fullmatch(name)]

    def _listed_packages(self, module: str) -> list[str]:
        """What `pkgutil.iter_modules(path, prefix=P)` / `walk_packages(…, prefix=P)` calls in
        `module` list, from the prefix they give each name (`__package__ + ".utils."` lists
        `<package>.utils`: pkgutil's docs): `<package>.*` (its direct submodules), for
        walk_packages `<package>.**` (those of its sub-packages too, recursively); empty when no
        prefix folds to a name."""
        tree = self.tree(module)
        found = []
        scopes = [(tree, {})] if tree else []
        # in a function, the names it binds once to a folded value first (`pkg = import_module("p.x")`
        # then `prefix=pkg.__name__ + "."`)
        scopes += [(f, self._straight_bindings(module, f)) for f in walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))] if tree else []
        for scope, env in scopes:
            for node in (walk(scope) if scope is tree else ast.walk(scope)):
                if isinstance(node, ast.Call) and (lister := (dotted(node.func) or "").rsplit(".", 1)[-1]) in ("iter_modules", "walk_packages"):
                    prefix = self.const(module, arg(node, 1, "prefix"), env)
                    pattern = f"{prefix[:-1]}.{'**' if lister == 'walk_packages' else '*'}" if isinstance(prefix, str) else ""
                    if isinstance(prefix, str) and prefix.endswith(".") and len(prefix) > 1 and pattern not in found:
                        found.append(pattern)
        return found

    def _straight_bindings(self, module: str, function: ast.FunctionDef | ast.AsyncFunctionDef) -> dict:
        """The names `function` binds once by a plain `name = value` (syntax.bound_once), folded
        in line order (each value sees those before it), over the modules it imports."""
        env: dict = {}
        for node in ast.walk(function):  # `import pkg.ops as ops` in the function: the module it names
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                env.update({name: Named(path) for name, path in imported_names(module, self.files[module][1], [node]).items()})
        for name, value in sorted(bound_once(function).items(), key=lambda item: item[1].lineno):
            env[name] = self.const(module, value, env)
        return env

    def _discovers(self, module: str) -> bool:
        """Whether the module lists files or modules (pkgutil.iter_modules / walk_packages,
        os.listdir / scandir, glob, Path.iterdir): the names it imports may be any of them."""
        tree = self.tree(module)
        return any(
            isinstance(node, ast.Call) and (dotted(node.func) or "").rsplit(".", 1)[-1] in _DISCOVERY
            for node in (walk(tree) if tree else [])
        )

    def settings_write(self, module: str, call: ast.Call, qualified: str, ctx: Context, bound: bool = False) -> None:
        """SGLang's settings object: `envs.SGLANG_EXTERNAL_MODEL_PACKAGE.set(value)` writes the
        variable (srt/environ.py EnvField.set), also through a name bound to that method (`use =
        envs.X.set; use(p)`) or a field looked up by name (`getattr(envs, name).set(v)`). Inside
        a helper whose parameters decide the field or the value, once per call of the helper
        with what it passes (finish(); `bound`: this is that pass)."""
        engine, env = profile(), ctx.env
        field = None
        if isinstance(call.func, ast.Attribute) and call.func.attr == "set":
            held = self.const(module, call.func.value, env)
            field = (held.path if isinstance(held, Named) else self.qualify(module, dotted(call.func.value), env) or dotted(call.func.value) or "")
        elif not isinstance(call.func, ast.Attribute) and qualified.endswith(".set"):
            field = qualified[: -len(".set")]
        if field is None:
            return
        value = self.const(module, arg(call, 0, "value"), env)
        variable = field.rsplit(".", 1)[-1]
        if variable in (engine.external_model_env, engine.disabled_models_env) and isinstance(value, str):
            self._environment_write(module, variable, value, ctx)
        elif not bound and ctx.functions and any(isinstance(n, ast.Name) and n.id in ctx.local and not isinstance(env.get(n.id), (Named, str))
                                                 for n in walk(call)):
            self.parameter_settings.append((module, call, qualified, ctx))

    def environ_update(self, module: str, call: ast.Call, ctx: Context, defer: bool = True) -> None:
        """`environ.update(NAME=value)` / `environ.update({NAME: value})`: the same writes as
        `environ[NAME] = value`. A mapping that reads a helper's parameters (`os.environ.update({k:
        str(v) for k, v in values.items() if v})` of `def export_env(**values)`) is read per binding
        of its callers (finish(): _parameter_environ, with `defer` False)."""
        written = self.const(module, call.args[0], ctx.env) if call.args else {}
        if (defer and not (isinstance(written, dict) and all(isinstance(k, str) for k in written)) and call.args and ctx.functions
                and any(isinstance(n, ast.Name) and n.id in ctx.local for n in walk(call.args[0]))):
            self.parameter_environ.append((module, call, ctx))
            return
        for variable, value in [*(written.items() if isinstance(written, dict) else ()),
                                *((k.arg, self.const(module, k.value, ctx.env)) for k in call.keywords if k.arg)]:
            self._environment_write(module, variable, value, ctx)

    def _environment_write(self, module: str, variable: str, value, ctx: Context) -> None:
        """The plugin sets the environment variable `variable` to the folded `value` (os.environ,
        putenv, the engine's settings fields): the one naming an external model package, or
        the one listing model modules the loader skips (EngineProfile.disabled_models_env)."""
        engine = profile()
        if variable == engine.external_model_env:
            self._model_package(module, value, ctx)
        elif variable == engine.disabled_models_env and isinstance(value, str):
            self.disabled_models.update(name.strip() for name in value.split(",") if name.strip())

    def _model_package(self, module: str, package, ctx: Context) -> None:
        """An external model package: the engine imports each of its direct submodules that is
        no package (sglang/srt/models/registry.py import_model_classes, `if not ispkg`), bar
        those the plugin disables (_environment_write; applied in finish()). A folder without
        `__init__.py` is a namespace package (PEP 420): importable, its modules listed the same."""
        if isinstance(package, str) and (package in self.files or any(name.startswith(package + ".") for name in self.files)):
            self.model_packages.add(package)
            # (under the guards the write runs under, as an import there would be)
            self.imported_by_name(module, package, ctx)
            self.imported_by_name(module, f"{package}.*", ctx)

    def _entry_class(self, module: str, stmt: ast.stmt, ctx: Context) -> None:
        registry = profile().model_registry
        if registry is None:
            return
        value = stmt.value
        for element in value.elts if isinstance(value, (ast.List, ast.Tuple)) else [value]:
            path = self.qualify(module, dotted(element), ctx.env)
            if path:
                self._dependency("model", registry, module, stmt, ctx, name=path)
                # registered under its class's __name__ (registry.py import_model_classes)
                self._dependency("architecture", f"{registry}.models", module, stmt, ctx, name=path.rsplit(".", 1)[-1], how="registers")

    def _architecture_use(self, module: str, node: ast.Compare | ast.Call, ctx: Context) -> None:
        """Architecture strings the plugin tests (`archs[0] == "X"`, `"X" in SOME_ARCHS`) or adds
        to an upstream table (`multimodal_model_archs.append("X")`, `ModelRegistry.models.update({"X": …})`): each depends on upstream
        still saying it (harness.knowledge.judge.architectures). Only where the other side is about
        model architectures (`….architectures`, `model_arch…`, or an upstream table named "…arch…":
        a GPU arch is not one), and only CamelCase strings."""
        if isinstance(node, ast.Call):  # only into upstream's tables: the plugin's own are its business
            sides, strings, how = [node.func.value], node.args, "adds"
        else:
            sides, strings, how = [node.left, *node.comparators], [node.left, *node.comparators], "tests"
        models = f"{profile().model_registry}.models" if profile().model_registry else None

        def upstream_table(side) -> str | None:
            path = self.qualify(module, dotted(side), ctx.env)
            if models and path == models:  # ModelRegistry.models.update({"X": cls})
                return path
            return path if is_upstream(path) and "arch" in path.rsplit(".", 1)[-1].lower() and self._is_upstream_value(path) else None

        tables = [upstream_table(s) for s in sides]
        about = [t is not None or (how == "tests" and any(w in ast.unparse(s).lower() for w in ("architectures", "model_arch"))) for s, t in zip(sides, tables)]
        if not any(about):
            return
        target = next((t for t in tables if t), models)
        if target is None:
            return
        for side in strings:
            value = [self.const(module, k, ctx.env) for k in side.keys] if isinstance(side, ast.Dict) else self.const(module, side, ctx.env)
            for name in value if isinstance(value, (list, tuple, set, frozenset)) else [value]:
                if isinstance(name, str) and ARCHITECTURE.match(name):
                    self._dependency("architecture", target, module, node, ctx, name=name, how=how, expression=ast.unparse(node)[:120])

    def _is_upstream_value(self, path: str) -> bool:
        ref = self.upstream_ref(path)
        return ref is None or ref.kind in ("value", "dynamic", "external")  # a missing one is still a patch

    def _kernel_key(self, module: str, call: ast.Call, ctx: Context) -> None:
        """A kernel-replacement registry keyed by (upstream module path, kernel name). Handed to
        a plugin function (`@replaces("sglang.x", "f")`, `_patch_if_loaded("sglang.x", "f", g)`),
        what a missing target does is that function's to decide (how="helper")."""
        callee = self.qualify(module, dotted(call.func), ctx.env) if dotted(call.func) else None
        helper = "helper" if callee and not is_upstream(callee) and self._plugin_definition(callee) is not None else None
        if helper and self._plugin_hook_factory(module, call, ctx) is not None:
            return  # the pair is a hook target (the helper returns plugin_hook(...)): judged as the hook
        if isinstance(call.func, ast.Attribute) and isinstance(self.const(module, call.func.value, ctx.env), str):
            return  # a str method (`"".join(["sglang.srt.layers.", "sampler"])`) builds a string, keys nothing
        args = [self.const(module, arg, ctx.env) for arg in call.args[:2]]
        if len(args) == 1 and isinstance(args[0], list) and len(args[0]) == 2:
            args = args[0]
        prefix = profile().kernel_key_prefix
        # the kernel's name is an identifier (an empty one is no key: `(mod, "")`)
        if prefix and len(args) == 2 and all(isinstance(a, str) for a in args) and args[0].startswith(prefix) and args[1].isidentifier():
            self._dependency("kernel", f"{args[0]}.{args[1]}", module, call, ctx, name=f"{args[0]}:{args[1]}", how=helper,
                             expression=callee if helper else None)

    def _spread(self, module: str, call: ast.Call, ctx: Context) -> tuple[ast.Call, Context]:
        """`register(*spec)` / `register(**spec)` (a loop over a table of (target, hook, type)
        tuples, records or keyword dicts): folding's spread_call, in the context."""
        spread, env = self.spread_call(module, call, ctx.env)
        return (spread, replace(ctx, env=env)) if spread is not call else (call, ctx)

    def _registers_hooks(self, qualified: str, hooks: str) -> bool:
        """Whether `qualified` is `register` of a plugin subclass of the hook registry whose own
        `register` (the first of its plugin MRO to define one) is inherited or passes its target,
        hook and hook type on, in that order, to `super().register(…)` (a subclass that logs
        first): a call of it registers a hook as the registry's does."""
        owner, _, method = qualified.rpartition(".")
        if method != "register" or owner not in self.scan.classes or hooks not in self.upstream_bases(owner):
            return False
        defining = next((path for path in self.plugin_mro(owner) if "register" in self.scan.classes[path].methods), None)
        found = self._plugin_definition(f"{defining}.register") if defining else None
        if defining is None:
            return True
        if found is None or not isinstance(found[1], (ast.FunctionDef, ast.AsyncFunctionDef)):
            return False
        if forwards_to_super(found[1]):
            return True
        names = [p.name for p in function_params(found[1].args)][1:4]
        return len(names) == 3 and any(
            isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "register" and isinstance(n.func.value, ast.Call)
            and dotted(n.func.value.func) == "super" and [dotted(a) for a in n.args[:3]] == names for n in walk(found[1]))

    def _subclassed(self, ctx: Context) -> bool:
        """Whether the class of the method `ctx` is in has plugin subclasses (self / cls in its
        body may then be any of them: what it reads through them is each one's)."""
        return ctx.cls is not None and any(ctx.cls.path in c.bases for c in self.scan.classes.values())

    def _subscript_call(self, module: str, call: ast.Call, ctx: Context) -> tuple[str, list[str]] | None:
        """(upstream registry, the keys read) of a call that subscripts it: `REG.__getitem__(k)`,
        `operator.getitem(REG, k)`, `map(REG.__getitem__, KEYS)` over folded strings; None else."""
        env = ctx.env
        qualified = self.qualify(module, dotted(call.func) or "", env) if dotted(call.func) else None
        if qualified == "map" and "map" not in env and len(call.args) == 2 and not call.keywords:
            method, keys = call.args[0], self.iterated(self.const(module, call.args[1], env))
        elif qualified == "operator.getitem" and len(call.args) == 2 and not call.keywords:
            method, keys = ast.Attribute(value=call.args[0], attr="__getitem__", ctx=ast.Load()), [self.const(module, call.args[1], env)]
        elif isinstance(call.func, ast.Attribute) and call.func.attr == "__getitem__" and len(call.args) == 1 and not call.keywords:
            method, keys = call.func, [self.const(module, call.args[0], env)]
        else:
            return None
        if not (isinstance(method, ast.Attribute) and method.attr == "__getitem__" and dotted(method.value)):
            return None
        owner = self.qualify(module, dotted(method.value), env)
        if not is_upstream(owner) or not isinstance(keys, list) or not keys or not all(isinstance(k, str) for k in keys):
            return None
        return owner, keys

    def lookup_how(self, module: str, call: ast.Call, ctx: Context) -> str | None:
        """How a `REG.get(k)` / `REG.pop(k)` copes with a key the registry lacks (Dependency.how of
        its registry_key): "get-default" (a default given), None (`pop` without one raises
        KeyError as `[k]` does), "get-raises" (the result tested for None and the plugin raising
        there), "get-tested" (tested otherwise: coped with), "get" (None used as the value)."""
        if len(call.args) > 1 or call.keywords:
            return "get-default"
        if call.func.attr == "pop":
            return None
        if self._none_raises(module, call, ctx):
            return "get-raises"
        return "get-tested" if id(call) in self._tested or self._result_tested(module, call, ctx) else "get"

    def _none_raises(self, module: str, call: ast.Call, ctx: Context) -> bool:
        """Whether the function holding `call` binds its result to a name and, where that is None
        (`if f is None:`, `if not f:`), raises (the block always does: syntax.always_raises)."""
        function = self._definition(module, ctx.functions[-1], call.lineno) if ctx.functions else None
        bound = next((stmt.targets[0].id for stmt in walk(function) if isinstance(stmt, ast.Assign) and stmt.value is call
                      and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)), None) if function is not None else None
        if bound is None:
            return False

        def none_test(test: ast.expr) -> bool:
            return (isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not) and isinstance(test.operand, ast.Name) and test.operand.id == bound
                    or isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == bound and len(test.ops) == 1
                    and isinstance(test.ops[0], (ast.Is, ast.Eq)) and isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value is None)
        return any(isinstance(n, ast.If) and none_test(n.test) and always_raises(n.body) for n in walk(function))

    def _result_tested(self, module: str, call: ast.Call, ctx: Context) -> bool:
        """Whether the function holding `call` binds its result to a name (`f = R.get(k)`) and
        tests that name (`if f is None: return`, `if not f`, `f and …`) before anything else
        reads it: then a None result is coped with, as a test of the call itself would."""
        function = self._definition(module, ctx.functions[-1], call.lineno) if ctx.functions else None
        if function is None:
            return False
        bound = next((stmt.targets[0].id for stmt in walk(function) if isinstance(stmt, ast.Assign) and stmt.value is call
                      and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)), None)
        tests = {id(node.test) for node in walk(function) if isinstance(node, (ast.If, ast.While, ast.IfExp, ast.Assert))}
        tests |= {id(value) for node in walk(function) if isinstance(node, ast.BoolOp) for value in node.values}
        named = next((node for node in walk(function) if isinstance(node, ast.NamedExpr) and node.value is call), None)
        if named is not None:
            # `if (f := R.get(k)) is None: continue`: a test of the value the walrus binds, as it is bound
            if any(id(test) in tests and any(n is named for n in walk(test)) for test in (
                    node.test for node in walk(function) if isinstance(node, (ast.If, ast.While, ast.IfExp, ast.Assert)))):
                return True
            return False  # elsewhere the walrus's own value is used first (`(f := R.get(k))(…)`)
        if bound is None:
            return False

        def in_order(node: ast.AST, tested: bool):
            """(a read of the name, whether it sits in a test), in the order Python evaluates them
            (a conditional expression's test before its branches)."""
            tested = tested or id(node) in tests
            if isinstance(node, ast.Name) and node.id == bound and isinstance(node.ctx, ast.Load):
                yield tested
            children = [node.test, node.body, node.orelse] if isinstance(node, ast.IfExp) else ast.iter_child_nodes(node)
            for child in children:
                yield from in_order(child, tested)

        return next(in_order(function, False), False)

    def setattr_call(self, module: str, call: ast.Call, ctx: Context, bound: bool = False, within: tuple[int, int] | None = None) -> None:
        """`setattr(owner, "name", value)`: a patch when owner is upstream (`within`: in place
        for those lines only, Dependency.within). Inside a helper whose parameters hold the
        owner or the name (`def replace(owner, name, fn): setattr(owner, name, fn)`), one patch
        per call of the helper, with what it passes (finish(); `bound`: this is that pass)."""
        owner = self._owner_of(module, call.args[0], ctx.env)
        attr = self.const(module, call.args[1], ctx.env)
        engine = profile()
        if (engine.server_args and isinstance(attr, str) and isinstance(call.args[0], ast.Name)
                and call.args[0].id in engine.server_args_names and owner is None):
            # `setattr(server_args, name, v)` (a loop over a table of defaults): `server_args.name = v`
            self._dependency("server_arg", f"{engine.server_args}.{attr}", module, call, ctx, name=attr)
            return
        if is_upstream(owner) and isinstance(attr, str):
            value, params = self._patch_value(module, call.args[2] if len(call.args) > 2 else None, ctx)
            self._dependency("patch", f"{owner}.{attr}", module, call, self._on_stand_in(module, call.args[0], ctx), how="setattr",
                             hook=value, params=params, owner_errors=self._owner_errors(module, call.args[0], ctx.env), within=within)
        elif not bound and ctx.functions and any(isinstance(n, ast.Name) and n.id in ctx.local and (ctx.env.get(n.id) is OPAQUE or isinstance(ctx.env.get(n.id), Instance)
                                                                                                or n.id == ctx.self_name and self._subclassed(ctx))
                                                 for a in call.args[:2] for n in walk(a)):
            # (also `setattr(self.target_module(), self.attr, v)`: what self holds per object made;
            # `setattr(m, cls.ATTR, …)` in a classmethod plugin subclasses inherit: each one's ATTR)
            self.parameter_patches.append((module, call, ctx))
        elif id(call) in self._patch_only:
            return  # an assignment's own pass took its field and graft
        else:
            self._sets_member(module, call, ctx, call.args[0], attr)
            self.graft_method(module, call.args[0], attr, call.args[2] if len(call.args) > 2 else None, call.lineno, ctx)

    def _instance_call(self, cls_path: str) -> tuple[str | None, ast.AST | None, tuple[Param, ...] | None]:
        """An instance of the plugin class `cls_path` as a callable: its `__call__`, self bound
        (Python's data model); (None, None, None) when the class body defines none."""
        found = self._plugin_definition(cls_path)
        call = next((n for n in found[1].body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == "__call__"), None) if (
            found is not None and isinstance(found[1], ast.ClassDef)) else None
        return (f"{cls_path}.__call__", call, function_params(call.args)[1:]) if call is not None else (None, None, None)

    def _made_once(self, name: str, ctx: Context, methods: bool = False) -> ast.expr | None:
        """The call a local of the enclosing function is bound to, when one `name = <call>` is
        the only binding of it there (syntax.bound_once); with `methods`, also an attribute read
        off a call (`hook = Patch(cfg).around`); None otherwise."""
        found = self._plugin_definition(ctx.functions[-1]) if ctx.functions else None
        if found is None or not isinstance(found[1], (ast.FunctionDef, ast.AsyncFunctionDef)):
            return None
        made = bound_once(found[1]).get(name)
        return made if isinstance(made, ast.Call) or methods and isinstance(made, ast.Attribute) and isinstance(made.value, ast.Call) else None

    def _module_made_once(self, module: str, name: str) -> ast.Call | None:
        """The call a module global is bound to (`_pick = operator.itemgetter(*KEYS)`, `POLICY:
        Base = Impl()`), when one top-level `name = <call>` (annotated or not) is its only binding
        in the module; None otherwise (the module's globals read once per module)."""
        if module not in self._made_once_globals:
            tree = self.tree(module)
            stores = Counter(n.id for n in walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)) if tree else Counter()
            self._made_once_globals[module] = {
                target.id: s.value for s in (tree.body if tree else []) if isinstance(s, (ast.Assign, ast.AnnAssign))
                for target in ([s.target] if isinstance(s, ast.AnnAssign) else s.targets[:1] if len(s.targets) == 1 else [])
                if isinstance(target, ast.Name) and isinstance(s.value, ast.Call) and stores[target.id] == 1}
        return self._made_once_globals[module].get(name)

    def _unwrapped(self, module: str, node, env: dict):
        """`functools.wraps(orig)(f)` and `functools.update_wrapper(f, orig)` are f itself (they
        copy names onto f and return it: Python's functools docs), `(name := f)` is f; anything
        else as given."""
        for _ in range(4):
            if isinstance(node, ast.NamedExpr):
                node = node.value
            elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Call) and len(node.args) == 1 and not node.keywords
                    and self.qualify(module, dotted(node.func.func), env) == "functools.wraps"):
                node = node.args[0]
            elif isinstance(node, ast.Call) and node.args and self.qualify(module, dotted(node.func), env) == "functools.update_wrapper":
                node = node.args[0]
            else:
                break
        return node

    def lookup_errors(self, module: str, node: ast.expr, env: dict) -> tuple[frozenset[str], ...] | None:
        """The errors getting an upstream object by name raises when a part of it is not there,
        one family per way it can fail: `sys.modules["m"]` KeyError, `import_module("m")`
        ImportError, `pkgutil.resolve_name("m:a")` ImportError and AttributeError (pkgutil's
        code), `sys.modules.get("m")` none (None when not loaded); an attribute read on one of
        these adds AttributeError (on None too). None for any other expression."""
        if isinstance(node, ast.Subscript) and self.qualify(module, dotted(node.value), env) == "sys.modules":
            return (KEY_ERRORS,)
        if isinstance(node, ast.Call):
            called = self.qualify(module, dotted(node.func), env) or dotted(node.func) or ""  # (a builtin: its own name)
            if called.endswith("import_module") or called == "__import__":
                return (IMPORT_ERRORS,)
            return {"pkgutil.resolve_name": (IMPORT_ERRORS, ATTRIBUTE_ERRORS), "sys.modules.get": ()}.get(called)
        if isinstance(node, ast.Attribute) and (inner := self.lookup_errors(module, node.value, env)) is not None:
            return tuple(dict.fromkeys((*inner, ATTRIBUTE_ERRORS)))
        return None

    def _owner_errors(self, module: str, node: ast.expr, env: dict) -> frozenset[str]:
        """What getting the object a patch writes on raises when that module or attribute is not
        there (lookup_errors; `sys.modules.get("m")` gives None, on which the write raises
        AttributeError) or `pkg.sub` AttributeError; nothing for a plain name (its import fails first)."""
        found = self.lookup_errors(module, node, env)
        if found is not None:
            return frozenset().union(*found) or ATTRIBUTE_ERRORS
        return ATTRIBUTE_ERRORS if isinstance(node, ast.Attribute) else frozenset()

    def _on_stand_in(self, module: str, node: ast.expr, ctx: Context) -> Context:
        """`ctx` for a write on `node`; where node is `sys.modules.get(M, stand_in)` (or `… or
        stand_in`, or a name holding it) the write lands on the plugin's stand-in when M is not
        loaded: it patches M only under "M exists" (nothing raises where it does not)."""
        value = self.const(module, node, ctx.env) if isinstance(node, (ast.Name, ast.Call, ast.BoolOp)) else None
        if not (isinstance(value, Named) and (module, value.path) in self.stand_in_owners):
            return ctx
        guard = GuardCond(ModuleExists(value.path), f"{value.path} is loaded (else {ast.unparse(node)} is the plugin's stand-in)", node.lineno)
        return replace(ctx, guards=ctx.guards + (guard,))

    def _owner_of(self, module: str, node: ast.expr, env: dict) -> str | None:
        """The dotted path of the object a patch writes on: a name or attribute chain, or a module
        got by a call or a subscript (`import_module("sglang.x")`, `sys.modules["sglang.x"]`) and
        an attribute chain on it."""
        base = node
        while isinstance(base, ast.Attribute):
            base = base.value
        if isinstance(base, (ast.Call, ast.Subscript)):  # `sys.modules["sglang.x"].Cls` too
            loaded = self.const(module, node, env)
            return loaded.path if isinstance(loaded, Named) else None
        if isinstance(base, ast.Name) and isinstance(env.get(base.id), Record) and node is not base:
            # `self.module` of an object whose construction kept a module or class there
            held = self.const(module, node, env)
            return held.path if isinstance(held, Named) else None
        return self.qualify(module, dotted(node), env)

    def _decorator(self, module: str, owner: ast.AST, decorator: ast.AST, ctx: Context) -> None:
        self._replacement_decorator(module, owner, decorator, ctx)
        if isinstance(decorator, ast.Name) and (inner := self._held_plugin_hook(module, decorator, ctx)) is not None:
            # `@around` of `around = plugin_hook(target, type=…)`
            self._hook(module, decorator, arg(inner, 0, "target"), arg(inner, 1, "type"), owner, ctx)
            return
        if not isinstance(decorator, ast.Call):
            return
        if not ctx.functions:  # `@factory(args)` on a def or class: what the factory's inner function receives
            self.decorated[id(decorator)] = f"{ctx.cls.path if ctx.cls is not None else module}.{owner.name}"
        name = dotted(decorator.func) or ""
        qualified = self.qualify(module, name, ctx.env) or name
        if name.endswith("plugin_hook") or qualified.endswith("hook_registry.plugin_hook"):
            self._hook(module, decorator, arg(decorator, 0, "target"), arg(decorator, 1, "type"), owner, ctx)
            return
        found = self._hook_factory_of(module, decorator, ctx)
        if found is not None:
            # `@on_layer(owner, "m")` where on_layer returns plugin_hook(f"{owner}.{m}", type=kind):
            # that decorator, its arguments folded with the factory's parameters bound
            home, factory, made, call, presets = found
            bound = self._bound_parameters(module, factory, call, {**ctx.env, **presets}, home)
            for stmt in factory.body if not isinstance(factory, ast.Lambda) else ():
                if any(n is made for n in walk(stmt)):
                    break
                self._bound_into(home, stmt, bound, 0)  # `target = entry(qualname)` before `return plugin_hook(target, …)`
            type_node = arg(made, 1, "type")
            spread = [bound.get(k.value.id) for k in made.keywords if k.arg is None and isinstance(k.value, ast.Name)]  # `plugin_hook(t, **kw)`
            held = {"<target>": self.const(home, arg(made, 0, "target"), bound),
                    "<type>": self.const(home, type_node, bound) if type_node is not None
                    else next((d["type"] for d in spread if isinstance(d, dict) and "type" in d), OPAQUE)}
            placeholders = [ast.copy_location(ast.Name(n, ast.Load()), decorator) if held[n] is not OPAQUE else None for n in ("<target>", "<type>")]
            self._hook(module, decorator, placeholders[0], placeholders[1], owner, replace(ctx, env={**ctx.env, **held}))

    def _held_plugin_hook(self, module: str, name: ast.Name, ctx: Context) -> ast.Call | None:
        """The `plugin_hook(target, type=…)` call a name holds: the one value the enclosing
        function (or, for a name it does not bind, the module) binds to it; None otherwise. Its
        arguments read names as the use site sees them (the same function or module)."""
        tree = self.tree(module)
        if module not in self._names_plugin_hook:  # (asked of every one-argument call: most modules never name it)
            self._names_plugin_hook[module] = tree is not None and any(
                isinstance(n, ast.Name) and n.id == "plugin_hook" or isinstance(n, ast.Attribute) and n.attr == "plugin_hook"
                or isinstance(n, ast.alias) and n.name == "plugin_hook" for n in walk(tree))
        if not self._names_plugin_hook[module]:
            return None
        definition = self._definition(module, ctx.functions[-1], name.lineno) if ctx.functions else None
        values = _bound_values(walk(definition), name.id) if definition is not None else []
        if not values and tree is not None and not (definition is not None and name.id in ctx.local):
            values = _bound_values(module_level(tree.body), name.id)
        made = values[0] if len(values) == 1 else None
        if not (isinstance(made, ast.Call) and (self.qualify(module, dotted(made.func) or "", ctx.env) or "").endswith("hook_registry.plugin_hook")):
            return None
        return made

    def _hook_factory_of(self, module: str, call: ast.Call, ctx: Context) -> tuple[str, ast.AST, ast.Call, ast.Call, dict] | None:
        """A decorator factory of the plugin's around SGLang's plugin_hook, called as `call`:
        (its module, the function or lambda, the plugin_hook(...) call it returns, `call` with
        what a functools.partial presets put first, the presets' folded values by placeholder
        name). The factory is a plugin def returning one plugin_hook(...) call
        (_plugin_hook_factory), or a module global bound to a lambda returning one, or to
        `functools.partial(<such a lambda>, *args, **keywords)` (the functools docs: the
        partial's arguments come first). None otherwise."""
        returned = self._plugin_hook_factory(module, call, ctx)
        if returned is not None:
            return returned[0], self._plugin_definition(self.qualify(module, dotted(call.func), ctx.env))[1], returned[1], call, {}
        if isinstance(call.func, ast.Lambda):  # (a partial the syntax reader already spelled out: `(lambda …)(name, type=…)`)
            home, value = module, call.func
        else:  # (a global of this module the scan holds a value for qualifies to nothing: named here)
            path = self.qualify(module, dotted(call.func) or "", ctx.env) or (f"{module}.{call.func.id}" if isinstance(call.func, ast.Name) else "")
            home, _, name = path.rpartition(".")
            tree = self.tree(home) if home in self.files else None
            values = _bound_values(module_level(tree.body), name) if tree else []
            value = values[0] if len(values) == 1 else None
        args, keywords, presets = [], [], {}
        if (isinstance(value, ast.Call) and value.args and isinstance(value.args[0], ast.Lambda)
                and self.qualify(home, dotted(value.func) or "") == "functools.partial" and all(k.arg for k in value.keywords)):
            for i, preset in enumerate([*value.args[1:], *(k.value for k in value.keywords)]):
                presets[f"<preset{i}>"] = self.const(home, preset, {})
            names = [ast.Name(n, ast.Load()) for n in presets]
            args, keywords = names[:len(value.args) - 1], [ast.keyword(k.arg, n) for k, n in zip(value.keywords, names[len(value.args) - 1:])]
            value = value.args[0]
        made = value.body if isinstance(value, ast.Lambda) else None
        if not isinstance(made, ast.Call) or not (self.qualify(home, dotted(made.func) or "") or "").endswith("hook_registry.plugin_hook"):
            return None
        merged = ast.copy_location(ast.Call(func=call.func, args=[*args, *call.args], keywords=[*keywords, *call.keywords]), call)
        return home, value, made, merged, presets

    def _hook(self, module, node, target_node, type_node, hook_node, ctx: Context, bound: str | None = None) -> None:
        if never_runs(ctx):
            return  # (`if spec is not None:` for an unmarked function, in a loop over functions): never made
        # (`mode.forward_hook()` of a plugin object: the method is known whatever object `mode` is)
        of_object = (isinstance(hook_node, ast.Call) and isinstance(hook_node.func, ast.Attribute)
                     and self._plugin_object_class(module, hook_node.func.value, ctx) is not None)
        parts = [target_node, type_node, *([*hook_node.args, *(k.value for k in hook_node.keywords)] if of_object else [hook_node])]
        if bound is None and ctx.functions and any(
            isinstance(n, ast.Name) and n.id in ctx.local and (ctx.env.get(n.id) is OPAQUE or isinstance(ctx.env.get(n.id), Instance))
            for part in parts if part is not None for n in walk(part)
        ):
            # `def _hook(attr, fn, kind=AFTER): HookRegistry.register(f"…:{attr}", fn, kind)`: one
            # hook per call of the helper, with what that call passes (finish())
            self.parameter_hooks.append((module, node, target_node, type_node, hook_node, ctx))
            return
        if bound and self.call_guards.get(bound):  # registered per call of a helper: under that call's guards
            ctx = replace(ctx, guards=ctx.guards + tuple(g for g in self.call_guards[bound] if g not in ctx.guards))
        choices = self._run_time_choices(module, hook_node, ctx)
        signatures = set()
        for chosen, held, guard in choices:
            # a hook a run-time key picks from a table: one hook per entry it may pick with a
            # parameter list of its own, each under that choice
            inner = replace(ctx, env={**ctx.env, **held}, guards=ctx.guards + (guard,))
            params = self._hook_signature(module, chosen, inner)[2]
            if params is None or params not in signatures:
                signatures.add(params)
                self._hook(module, node, target_node, type_node, chosen, inner, bound)
        if choices:
            return
        target = self.const(module, target_node, ctx.env)
        hook_type = "AFTER"  # HookRegistry's default
        if type_node is not None:
            value = self.const(module, type_node, ctx.env)
            if isinstance(value, Named):
                hook_type = value.path.rsplit(".", 1)[-1].upper()
            elif isinstance(value, str):
                hook_type = value.upper()
            elif isinstance(type_node, ast.Call) and type_node.args and isinstance(self.const(module, type_node.args[0], ctx.env), str):
                hook_type = self.const(module, type_node.args[0], ctx.env).upper()  # HookType("around")
            elif isinstance(type_node, ast.Subscript) and isinstance(member := self.const(module, type_node.slice, ctx.env), str):
                hook_type = member.upper()  # HookType["AROUND"]: the member of that name (Enum.__getitem__)
            else:
                hook_type = (dotted(type_node) or "?").rsplit(".", 1)[-1].upper()
        hook_path, definition, params = self._hook_signature(module, hook_node, ctx)
        expression = (ast.unparse(target_node) if target_node is not None else "?") + (f" as called at {bound}" if bound else "")
        if hook_path:
            self.hook_callables[hook_path] = target if isinstance(target, str) else expression
        self._dependency(
            "hook", target if isinstance(target, str) else None, module, node, ctx,
            hook_type=hook_type, hook=hook_path, params=params, expression=expression,
            raises_only=isinstance(definition, (ast.FunctionDef, ast.AsyncFunctionDef)) and raises_only(definition),
            passthrough=forwards_anything(params),
        )

    def _run_time_choices(self, module: str, node: ast.expr | None, ctx: Context) -> list[tuple[ast.expr, dict, GuardCond]]:
        """For a hook callable taken from a plugin table by a key only a run gives (`factory =
        FACTORIES.get(os.environ.get("P", "index"), FACTORIES["index"]); factory(**opts)`, or the
        entry itself): per plugin callable the table (or the default) holds, (`node` with the
        entry in its place, the placeholder's binding, the guard naming the choice); [] otherwise."""
        def is_getter(n) -> bool:
            return isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "get" and 1 <= len(n.args) <= 2 and not n.keywords

        call = node if isinstance(node, ast.Call) and not is_getter(node) else None
        if call is not None and (returned := self._returned_alternatives(module, call, ctx)):
            # a factory returning one of its nested functions by a test of what a run gives
            # (`return _greedy if greedy_only else _traced`): each may be the hook
            text = f"{ast.unparse(call.func)}(…) returns "
            return [(ast.copy_location(ast.Name(f"<choice{i}>", ast.Load()), call), {f"<choice{i}>": Named(path)},
                     GuardCond(Runtime(text + path.rsplit(".", 1)[-1]), text + path.rsplit(".", 1)[-1], call.lineno))
                    for i, path in enumerate(returned)]
        head = call.func if call is not None else node
        chosen = head
        if isinstance(head, ast.Name) and head.id in ctx.local and ctx.env.get(head.id, OPAQUE) is OPAQUE and ctx.functions:
            found = self._plugin_definition(ctx.functions[-1])
            chosen = bound_once(found[1]).get(head.id) if found is not None and isinstance(found[1], (ast.FunctionDef, ast.AsyncFunctionDef)) else None
        getter = is_getter(chosen)
        if not (getter or isinstance(chosen, ast.Subscript)):
            return []
        table = self.const(module, chosen.func.value if getter else chosen.value, ctx.env)
        key = self.const(module, chosen.args[0] if getter else chosen.slice, ctx.env)
        if not isinstance(table, dict) or key is not OPAQUE:
            return []
        options = [*table.values(), *([self.const(module, chosen.args[1], ctx.env)] if getter and len(chosen.args) == 2 else [])]
        options = list({o.path: o for o in options if isinstance(o, Named) and not is_upstream(o.path) and self._plugin_definition(o.path)}.values())
        found = []
        for i, option in enumerate(options):
            name = f"<choice{i}>"
            placed = ast.copy_location(ast.Name(name, ast.Load()), head)
            made = ast.copy_location(ast.Call(func=placed, args=call.args, keywords=call.keywords), call) if call is not None else placed
            text = f"{ast.unparse(chosen)} is {option.path.rsplit('.', 1)[-1]}"
            found.append((made, {name: option}, GuardCond(Runtime(text), text, chosen.lineno)))  # (a run may pick any entry)
        return found

    def _returned_alternatives(self, module: str, call: ast.Call, ctx: Context) -> list[str]:
        """The paths of the nested functions a plugin factory called as `call` may return, when it
        returns more than one of them (`return a if c else b`, `if c: return a` then `return b`,
        `c and a or b`, `{"x": a, "y": b}[mode]`) and the call does not fold to one: every `return`
        names a nested def, directly, as an arm of a conditional expression or a value of a table
        it indexes. [] otherwise."""
        path = self.qualify(module, dotted(call.func), ctx.env) if dotted(call.func) else None
        found = self._plugin_definition(path) if path and not is_upstream(path) else None
        if found is None or not isinstance(found[1], (ast.FunctionDef, ast.AsyncFunctionDef)) or returned_function(found[1]) is not None:
            return []
        nested = {n.name for n in found[1].body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        # a name each branch of an `if` in the body binds by a def of its own (`if trace: def f(…)`
        # / `else: def f(…)`, then `return f`): either def, by its line
        branched: dict[str, list[int]] = {}
        for stmt in found[1].body:
            if isinstance(stmt, ast.If) and stmt.orelse:
                for name in {n.name for n in stmt.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))} & {
                        n.name for n in stmt.orelse if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))} - nested:
                    branched[name] = [n.lineno for n in (*stmt.body, *stmt.orelse) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name]

        def names(value: ast.expr | None) -> list[str] | None:
            arms = ([value.body, value.orelse] if isinstance(value, ast.IfExp)
                    # `c and a`: a where c holds (what else it gives is c's false value, no hook); `a or b`: either
                    else value.values[-1:] if isinstance(value, ast.BoolOp) and isinstance(value.op, ast.And)
                    else value.values if isinstance(value, ast.BoolOp)
                    else value.value.values if isinstance(value, ast.Subscript) and isinstance(value.value, ast.Dict) else None)
            if arms is not None:
                found = [names(arm) for arm in arms]
                return [n for f in found for n in f] if found and all(f is not None for f in found) else None
            if isinstance(value, ast.Name) and value.id in branched:
                return [f"{value.id}@{line}" for line in branched[value.id]]
            return [value.id] if isinstance(value, ast.Name) and value.id in nested else None

        chosen = [names(r.value) for r in own_returns(found[1])]
        if not chosen or any(c is None for c in chosen) or len({n for c in chosen for n in c}) < 2:
            return []
        if isinstance(self.const(module, call, ctx.env), Named):
            return []  # the factory's tests fold: the one it returns (_hook_signature)
        return [f"{path}.{name}" for name in dict.fromkeys(n for c in chosen for n in c)]

    def _hook_signature(self, module: str, node, ctx: Context, depth: int = 0) -> tuple[str | None, ast.AST | None, tuple[Param, ...] | None]:
        """(plugin path, definition, parameters) of the callable a hook registers, however it is
        written: a function or class by name, a factory call's returned closure, a lambda, or
        `functools.partial` over any of these (its bound arguments taken away as
        inspect.signature does: Python's functools docs). Parameters None when not known."""
        node = self._unwrapped(module, node, ctx.env)
        if isinstance(node, ast.Name) and isinstance(held := ctx.env.get(node.id), Record) and not is_upstream(held.cls):
            return self._instance_call(held.cls)  # `f = Filter(strict=x); register(t, f)`: an instance of a plugin class
        if isinstance(node, ast.Name) and ctx.env.get(node.id) is OPAQUE and (made := self._made_once(node.id, ctx, methods=True)) is not None and depth < 8:
            return self._hook_signature(module, made, ctx, depth + 1)  # what the call that bound it made, the method read
        if isinstance(node, ast.Lambda):
            return f"{ctx.functions[-1] if ctx.functions else module}.<lambda>", node, function_params(node.args)
        if ((isinstance(node, (ast.Call, ast.Subscript)) and isinstance(named := self.const(module, node, ctx.env), Named)
                or isinstance(node, ast.Name) and node.id not in ctx.local and ctx.env.get(node.id, OPAQUE) in (None, OPAQUE)
                and getattr(self.table(module).names.get(node.id), "kind", None) == "value"
                and self.module_constant(module, node.id, 0) is None
                and isinstance(named := self.set_through_global(module, node.id), Named)) and not is_upstream(named.path)):
            # `pkgutil.resolve_name("pkg.mod:f")`, `import_module("pkg.mod").f`, `TABLE[k]` of a plugin
            # function; a module global bound to one (`_hook = make_hook(…)`, set through `global`)
            found = self._plugin_definition(named.path)
            if found is not None and isinstance(found[1], (ast.FunctionDef, ast.AsyncFunctionDef)):
                path, definition = self._decorated(named.path, found[1])
                return path, definition, function_params(definition.args)
        if isinstance(node, ast.Name) and node.id not in ctx.local:
            # `_FILTER = Filter(index_key=…)`, a plugin module's global (this module's or one it
            # imports) bound once to an instance of a plugin class: its __call__
            home, _, name = (self.qualify(module, node.id, ctx.env) or f"{module}.{node.id}").rpartition(".")
            made = self._module_made_once(home, name) if home in self.files else None
            made_path = self.qualify(home, dotted(made.func) or "", {}) if made is not None else None
            found = self._plugin_definition(made_path) if made_path and not is_upstream(made_path) else None
            if found is not None and isinstance(found[1], ast.ClassDef):
                return self._instance_call(made_path)
        if isinstance(node, (ast.Attribute, ast.Subscript, ast.Name)) and isinstance(held := self.const(module, node, ctx.env), Partial) and not is_upstream(held.func):
            # `spec.hook`, `HOOKS[k]`, a loop variable holding functools.partial(f, …) of a plugin function
            found = self._plugin_definition(held.func)
            if found is not None and isinstance(found[1], (ast.FunctionDef, ast.AsyncFunctionDef)):
                path, definition = self._decorated(held.func, found[1])
                return path, definition, partial_params(function_params(definition.args), len(held.args), [k for k, _ in held.keywords])
        if isinstance(node, ast.Call) and depth < 8 and (
                len(node.args) == 2 and self.qualify(module, dotted(node.func) or "", ctx.env) == "types.MethodType"
                or len(node.args) == 1 and isinstance(node.func, ast.Attribute) and node.func.attr == "__get__"):
            # types.MethodType(f, obj) / f.__get__(obj): f bound to obj, which takes f's first
            # parameter (Python's data model: method objects)
            path, definition, params = self._hook_signature(module, node.args[0] if node.args and len(node.args) == 2 else node.func.value, ctx, depth + 1)
            return path, definition, None if params is None else partial_params(params, 1, [])
        if isinstance(node, ast.Call) and node.args and depth < 8:
            name = dotted(node.func) or ""
            if (self.qualify(module, name, ctx.env) or name) in ("functools.partial", "partial"):
                path, definition, params = self._hook_signature(module, node.args[0], ctx, depth + 1)
                bound = [k.arg for k in node.keywords if k.arg]
                return path, definition, None if params is None or any(isinstance(a, ast.Starred) for a in node.args) else partial_params(params, len(node.args) - 1, bound)
            if self.qualify(module, name, ctx.env) == "functools.partialmethod":
                # partialmethod(fn, *a, **k) set on a class: self, then what partial(fn, *a, **k) leaves (functools docs)
                path, definition, params = self._hook_signature(module, node.args[0], ctx, depth + 1)
                bound = [k.arg for k in node.keywords if k.arg]
                if params is None or not params or any(isinstance(a, ast.Starred) for a in node.args):
                    return path, definition, None
                return path, definition, (params[0], *partial_params(params[1:], len(node.args) - 1, bound))
        if (isinstance(node, ast.Call) and depth < 8 and isinstance(node.func, ast.Attribute) and dotted(node.func)
                and not self.qualify(module, dotted(node.func), ctx.env) and isinstance(held := self.const(module, node.func, ctx.env), Named)
                and not is_upstream(held.path)):
            # `self.build(*self.args)` of a record whose field holds a plugin factory: a call of that factory
            factory = ast.copy_location(ast.Call(func=ast.Name("<factory>", ast.Load()), args=node.args, keywords=node.keywords), node)
            return self._hook_signature(module, factory, replace(ctx, env={**ctx.env, "<factory>": held}), depth + 1)
        if isinstance(node, ast.Call) and depth < 8 and (made := self._dispatched_return(module, node, ctx)) is not None:
            return made  # a functools.singledispatch factory: the closure its implementations return
        if isinstance(node, ast.Call) and depth < 8:
            returned = self._factory_return(module, node, ctx)
            if returned is not None:  # `return functools.partial(_impl, cfg)`, `return lambda …`, `return _module_fn`
                home, value, inside = returned
                # read inside the factory: `tracer = Tracer(log); return tracer.around` is its local's method
                return self._hook_signature(home, value, inside, depth + 1)
            if isinstance(node.func, (ast.Name, ast.Attribute, ast.Call)) and not node.args and not node.keywords:
                # `builder()` of a plugin object: its __call__ runs; the hook is the function it returns
                bound = self._bound_method(module, ast.copy_location(ast.Attribute(value=node.func, attr="__call__", ctx=ast.Load()), node), ctx)
                made_fn = returned_function(bound[1]) if bound is not None and isinstance(bound[1], (ast.FunctionDef, ast.AsyncFunctionDef)) else None
                if made_fn is not None:
                    return f"{bound[0]}.{made_fn.name}", made_fn, function_params(made_fn.args)
            made = self.qualify(module, dotted(node.func), ctx.env) if dotted(node.func) else None
            found = self._plugin_definition(made) if made and not is_upstream(made) else None
            if found is not None and isinstance(found[1], ast.ClassDef):
                return self._instance_call(made)
        if isinstance(node, ast.Attribute):
            bound = self._bound_method(module, node, ctx)
            if bound is not None:
                return bound
        path, definition = self._hook_callable(module, node, ctx)
        if not isinstance(definition, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return path, definition, None
        path, definition = self._decorated(path, definition)
        params = function_params(definition.args)
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and any((dotted(d) or "").rsplit(".", 1)[-1] == "classmethod" for d in definition.decorator_list):
            # a classmethod read off its class is bound to it, however the value travels after
            # (`Cls.method`, a table's value, a loop variable): Python binds cls
            params = params[1:]
        return path, definition, params

    def _bound_method(self, module: str, node: ast.Attribute, ctx: Context) -> tuple[str, ast.AST, tuple[Param, ...]] | None:
        """`Patch(cfg).around`, or `patch.around` for a local bound once to `Patch(…)` in the same
        function: the method of that plugin class (or a plugin base), as a bound method: without
        its first parameter, unless it is a staticmethod. A name the function does not bind is
        the module's global (`_MIRROR = Mirror(root)` at module level), or one imported from
        another plugin module. None when the object is anything else."""
        made, home, env = node.value, module, ctx.env
        if isinstance(made, ast.Name) and made.id == ctx.self_name and ctx.cls is not None:
            # `self.around` in a method, around a property: the closure its getter returns (a plain
            # method read on self is _hook_callable's)
            return self._member_callable(ctx.cls.path, node.attr, properties_only=True)
        if isinstance(made, ast.Name):
            scope = self._definition(module, ctx.functions[-1], node.lineno) if ctx.functions else None
            values = _bound_values(walk(scope), made.id) if scope is not None else []
            if not values and made.id not in ctx.local:
                tree = self.tree(module)
                values = _bound_values(module_level(tree.body), made.id) if tree else []
            made = values[0] if len(values) == 1 else made
        if isinstance(made, (ast.Name, ast.Attribute)) and dotted(made) and (isinstance(made, ast.Attribute) or made.id not in ctx.local):
            # a module-level object of another plugin module (`from p.filters import SHARD_FILTER`)
            home, _, name = (self.qualify(module, dotted(made), ctx.env) or "").rpartition(".")
            tree = self.tree(home) if home in self.files and home != module else None
            values = _bound_values(module_level(tree.body), name) if tree else []
            made, env = (values[0] if len(values) == 1 else None), {}
        if not isinstance(made, ast.Call):
            return None
        cls_path = self.qualify(home, dotted(made.func), env) if dotted(made.func) else None
        cls_path = self._made_by_classmethod(cls_path) or cls_path
        found = self._plugin_definition(cls_path) if cls_path and cls_path not in self.scan.classes else None
        if found is not None and isinstance(found[1], ast.ClassDef):
            # a class of a module not scanned yet: its own methods, as written
            definition = next((n for n in found[1].body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == node.attr), None)
            return self._method_bound(f"{cls_path}.{node.attr}", definition) if definition is not None else None
        return self._member_callable(cls_path, node.attr)

    def _member_callable(self, cls_path: str | None, attr: str, properties_only: bool = False) -> tuple[str, ast.AST, tuple[Param, ...]] | None:
        """`attr` read on an instance of plugin class `cls_path`: its method bound (_method_bound),
        or for a property the closure its getter returns; None when no plugin class in its MRO
        defines it (or, `properties_only`, when it is no property)."""
        if not cls_path or cls_path not in self.scan.classes:
            return None
        for owner in self.plugin_mro(cls_path):
            cls = self.scan.classes[owner]
            method = cls.methods.get(attr)
            if method is None:
                continue
            definition = self._definition(cls.module, f"{owner}.{attr}", method.line)
            if not isinstance(definition, (ast.FunctionDef, ast.AsyncFunctionDef)):
                return None
            if is_property(definition):
                # a property read: the value is what its getter returns (a closure it defines)
                made_fn = returned_function(definition)
                return (f"{owner}.{attr}.{made_fn.name}", made_fn, function_params(made_fn.args)) if made_fn is not None else None
            return None if properties_only else self._method_bound(f"{owner}.{attr}", definition)
        return None

    def _made_by_classmethod(self, path: str | None) -> str | None:
        """The plugin class C when `path` is a classmethod of C that makes an instance of it
        (`return cls(…)`, or annotated to return C: an alternative constructor like `from_env`)."""
        owner, _, name = (path or "").rpartition(".")
        cls = self.scan.classes.get(owner)
        method = cls.methods.get(name) if cls is not None else None
        if method is None or "classmethod" not in {d.rsplit(".", 1)[-1] for d in method.decorators}:
            return None
        definition = self._definition(cls.module, path, method.line)
        first = [a.arg for a in (*definition.args.posonlyargs, *definition.args.args)][:1] if definition is not None else []
        returns = annotation_class(definition.returns) if definition is not None else None
        if returns is not None and (returns == owner.rpartition(".")[2] or self.qualify(cls.module, returns, {}) == owner):
            return owner
        made = [n.value for n in walk(definition) if isinstance(n, ast.Return) and n.value is not None] if first else []
        return owner if made and all(isinstance(v, ast.Call) and isinstance(v.func, ast.Name) and v.func.id == first[0] for v in made) else None

    @staticmethod
    def _method_bound(path: str, definition: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[str, ast.AST, tuple[Param, ...]]:
        """(path, definition, parameters) of a method read off an instance: its first parameter
        bound, unless it is a staticmethod."""
        params = function_params(definition.args)
        static = any((dotted(d) or "").rsplit(".", 1)[-1] == "staticmethod" for d in definition.decorator_list)
        return path, definition, params if static else params[1:]

    def _decorated(self, path: str | None, definition: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[str | None, ast.FunctionDef | ast.AsyncFunctionDef]:
        """What the name of a decorated plugin function is bound to, as far as a call binds it:
        each plugin decorator (innermost first; `@deco` or `@factory(…)`) that returns a closure
        of its own replaces the function with that closure, unless the closure passes its
        `*args, **kwargs` on to the function unchanged (a plain wrapper: the function's own
        signature still decides). A decorator that is not the plugin's, or returns anything
        else, leaves it as it is (functools.lru_cache, a registering decorator)."""
        found = self._plugin_definition(path) if path and not is_upstream(path) else None
        home = found[0] if found is not None else None
        for decorator in reversed(definition.decorator_list):
            if home is None:
                break
            called = decorator.func if isinstance(decorator, ast.Call) else decorator
            target = self.qualify(home, dotted(called)) if dotted(called) else None
            found = self._plugin_definition(target) if target and not is_upstream(target) else None
            deco = found[1] if found is not None and isinstance(found[1], (ast.FunctionDef, ast.AsyncFunctionDef)) else None
            deco_path = target
            if deco is not None and isinstance(decorator, ast.Call):
                inner = returned_function(deco)
                deco, deco_path = inner, f"{target}.{inner.name}" if inner is not None else None
            closure = returned_function(deco) if deco is not None else None
            if closure is None or not function_params(deco.args):
                break
            wrapped = function_params(deco.args)[0].name
            if not _forwards_all(closure, wrapped):
                path, definition = f"{deco_path}.{closure.name}", closure
        return path, definition

    def _plugin_hook_factory(self, module: str, call: ast.Call, ctx: Context) -> tuple[str, ast.Call] | None:
        """(its module, the call) when the plugin function `call` calls returns one
        `plugin_hook(...)` call (a decorator factory of the plugin's around SGLang's); else None."""
        returned = self._factory_return(module, call, ctx)
        made = returned[1] if returned is not None and isinstance(returned[1], ast.Call) else None
        if made is None or not ((dotted(made.func) or "").endswith("plugin_hook")
                                or (self.qualify(returned[0], dotted(made.func)) or "").endswith("hook_registry.plugin_hook")):
            return None
        return returned[0], made

    def _bound_parameters(self, module: str, function: ast.FunctionDef | ast.AsyncFunctionDef, call: ast.Call, env: dict, home: str) -> dict:
        """{parameter: folded value} of `function` (defined in `home`) as `call` (in `module`)
        binds them: positionals, keywords, then defaults; a `*`/`**` argument binds nothing."""
        params = function_params(function.args)
        bound = {}
        if not any(isinstance(a, ast.Starred) for a in call.args):
            bound.update({p.name: self.const(module, a, env) for p, a in zip(params, call.args)})
        bound.update({k.arg: self.const(module, k.value, env) for k in call.keywords if k.arg})
        positional = [*function.args.posonlyargs, *function.args.args]
        for p, default in zip(positional[len(positional) - len(function.args.defaults):], function.args.defaults):
            bound.setdefault(p.arg, self.const(home, default, {}))
        for p, default in zip(function.args.kwonlyargs, function.args.kw_defaults):
            if default is not None:
                bound.setdefault(p.arg, self.const(home, default, {}))
        if function.args.kwarg is not None and all(k.arg for k in call.keywords):  # `**kw`: the keywords no parameter takes
            named = {p.name for p in params}
            bound = {**{k: v for k, v in bound.items() if k in named}, function.args.kwarg.arg: {k: v for k, v in bound.items() if k not in named}}
        return {**{p.name: OPAQUE for p in params if p.name not in bound}, **bound}

    def _dispatched_return(self, module: str, node: ast.Call, ctx: Context) -> tuple[str, ast.AST, tuple[Param, ...]] | None:
        """(path, definition, parameters) of the closure a call of a plugin `functools.singledispatch`
        function returns: the implementations registered on it (`@f.register`, `@f.register(T)`)
        run by the type of the first argument (the functools docs); when those returning a nested
        function of their own all return ones with one signature, that one. None otherwise."""
        name = dotted(node.func)
        path = self.qualify(module, name, ctx.env) if name else None
        found = self._plugin_definition(path) if path and not is_upstream(path) else None
        if found is None or not isinstance(found[1], (ast.FunctionDef, ast.AsyncFunctionDef)) or not any(
                self.qualify(found[0], dotted(d) or "") == "functools.singledispatch" for d in found[1].decorator_list):
            return None
        home, short = found[0], found[1].name
        tree = self.tree(home)

        def registers(decorator: ast.expr) -> bool:
            func = decorator.func if isinstance(decorator, ast.Call) else decorator
            return isinstance(func, ast.Attribute) and func.attr == "register" and dotted(func.value) == short

        made = [(n, closure) for n in (tree.body if tree else []) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                and any(registers(d) for d in n.decorator_list) and (closure := returned_function(n)) is not None]
        shapes = {tuple(function_params(closure.args)) for _, closure in made}
        if len(shapes) != 1:
            return None
        closure = made[0][1]
        return f"{home}.{short}.{closure.name}", closure, function_params(closure.args)

    def _factory_return(self, module: str, node: ast.Call, ctx: Context) -> tuple[str, ast.expr, Context] | None:
        """(its module, the expression, the factory's own context: its path, its locals) a plugin
        factory called as `node` returns, when every `return` of it returns one expression that
        is no nested function of its own (those are returned_function's): a partial, a lambda, a
        module function by name, a bound method of an object it makes. None otherwise."""
        name = dotted(node.func)
        path = self.qualify(module, name, ctx.env) if name else None
        found = self._plugin_definition(path) if path and not is_upstream(path) else None
        if found is None or not isinstance(found[1], (ast.FunctionDef, ast.AsyncFunctionDef)) or returned_function(found[1]) is not None:
            return None
        returns = [r.value for r in own_returns(found[1])]
        params = {p.name for p in function_params(found[1].args)}
        if len(returns) != 1 or returns[0] is None or isinstance(returns[0], ast.Name) and returns[0].id in params:
            return None
        local = frozenset(local_names(found[1]) | params)
        return found[0], returns[0], Context(env=dict.fromkeys(local, OPAQUE), functions=(path,), local=local)

    def _hook_callable(self, module: str, node, ctx: Context) -> tuple[str | None, ast.AST | None]:
        """(plugin path, definition) of the function or class a hook registers."""
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return self._function_path(module, node, ctx), node
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Call):
            # `factory(trace=x)(log)`, a curried factory: the function the inner call's function returns
            path, made = self._hook_callable(module, node.func, ctx)
            inner = returned_function(made) if isinstance(made, (ast.FunctionDef, ast.AsyncFunctionDef)) else None
            return (f"{path}.{inner.name}", inner) if inner is not None else (None, None)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and (made := self._plugin_object_class(module, node.func.value, ctx)):
            # `mode.forward_hook()` of an object of a plugin class (an enum member looked up by a
            # run-time value, `C(cfg)`): that class's method, whichever object it is
            method = f"{made}.{node.func.attr}"
            node = ast.copy_location(ast.Call(func=ast.Name("<method>", ast.Load()), args=node.args, keywords=node.keywords), node)
            ctx = replace(ctx, env={**ctx.env, "<method>": Named(method)})
        name = dotted(node) if node is not None else None
        if not name:
            return None, None
        bound = ctx.env.get(name)
        if bound is None and isinstance(node, ast.Attribute) and isinstance(ctx.env.get(name.partition(".")[0]), Record):
            bound = self.const(module, node, ctx.env)  # `self.fn` of a folded record: the field's function
        path = bound.path if isinstance(bound, Named) else self.qualify(module, name, ctx.env)
        if path is None:
            return None, None
        owner, _, short = path.rpartition(".")
        cls_module, _, cls_name = owner.rpartition(".")
        body = self.tree(cls_module).body if owner not in self.files and cls_module in self.files and self.tree(cls_module) else []
        cls = next((n for n in body if isinstance(n, ast.ClassDef) and n.name == cls_name), None)
        if cls is not None:
            # `Cls.method` of a plugin class: that class's own def (or a plugin base's, in base
            # order), not the module's first of the name
            definition, home, queue = None, cls_module, [cls]
            while queue and definition is None:
                current = queue.pop(0)
                definition = next((n for n in current.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n.name == short), None)
                for base in current.bases:
                    found = self._plugin_definition(self.qualify(home, dotted(base)) or "") if dotted(base) else None
                    if found is not None and isinstance(found[1], ast.ClassDef):
                        queue.append(found[1])
        elif owner not in self.files and (nested := self._plugin_definition(path)) is not None:
            definition = nested[1]  # a closure by its qualname (`pkg.hooks.around.deco.hook`)
        else:
            tree = self.tree(owner if owner in self.files else module)
            definition = next(
                (n for n in walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n.name == short),
                None,
            ) if tree else None
        if isinstance(node, ast.Call):
            # a factory call, register(target, make_hook(cfg), …): the hook is what it returns
            made = returned_function(definition) if isinstance(definition, (ast.FunctionDef, ast.AsyncFunctionDef)) else None
            return (f"{path}.{made.name}", made) if made is not None else (None, None)
        return path, definition

    def _record_held(self, module: str, name: ast.Name, env: dict):
        """What `name` holds where it is a folded record: a local's value, or a module global
        bound to a value (folded); None otherwise (no folding for other names)."""
        if name.id in env:
            return env[name.id]
        return self.const(module, name, env) if getattr(self.table(module).names.get(name.id), "kind", None) == "value" else None

    def _provides_module(self, module: str, named: ast.expr, node: ast.AST, ctx: Context) -> None:
        """`sys.modules.setdefault(name, m)` / `sys.modules[name] = m`: the plugin puts a module
        under that name (PluginScan.provided_modules); a name a helper's parameters decide, per
        binding of its callers (finish(): _parameter_provided)."""
        name = self.const(module, named, ctx.env)
        if isinstance(name, str):
            self.scan.provided_modules.setdefault(name, f"{self.relfile(module)}:{node.lineno}")
        elif ctx.functions and any(isinstance(n, ast.Name) and n.id in ctx.local for n in walk(named)):
            self.parameter_provided.append((module, named, node, ctx))

    def _plugin_object_class(self, module: str, node: ast.expr, ctx: Context, depth: int = 0) -> str | None:
        """The plugin class of the object `node` holds, where its making says: a folded record's
        class; `C(…)` of a plugin class (a construction, or an enum's lookup by value); `E[…]` or
        `E.MEMBER` of a plugin enum; a local bound once to one of those. None otherwise."""
        held = self.const(module, node, ctx.env) if depth < 4 else OPAQUE
        if isinstance(held, Record):
            return held.cls if self._plugin_class_def(held.cls) else None
        if isinstance(node, ast.Call) and dotted(node.func):
            path = self.qualify(module, dotted(node.func), ctx.env)
            return path if path and self._plugin_class_def(path) else None
        if isinstance(node, (ast.Subscript, ast.Attribute)) and dotted(node.value if isinstance(node, ast.Subscript) else node.value):
            path = self.qualify(module, dotted(node.value), ctx.env)
            return path if path and self._plugin_class_def(path) and self.enum_kind(path) else None
        if isinstance(node, ast.Name) and node.id in ctx.local and ctx.functions and depth < 4:
            found = self._plugin_definition(ctx.functions[-1])
            made = bound_once(found[1]).get(node.id) if found is not None and isinstance(found[1], (ast.FunctionDef, ast.AsyncFunctionDef)) else None
            return self._plugin_object_class(module, made, ctx, depth + 1) if made is not None else None
        if isinstance(node, ast.Name) and node.id not in ctx.local and depth < 4 and (made := self._module_made_once(module, node.id)) is not None:
            # `POLICY: SamplerPolicy = GreedyOnlyPolicy()` at module level: the class it was made of
            return self._plugin_object_class(module, made, replace(ctx, local=frozenset(), functions=()), depth + 1)
        return None

    def _plugin_class_def(self, path: str) -> bool:
        found = self._plugin_definition(path) if not is_upstream(path) else None
        return found is not None and isinstance(found[1], ast.ClassDef)

    def _assignment_patch(self, module: str, target: ast.AST, stmt: ast.stmt, ctx: Context) -> None:
        env = ctx.env
        engine = profile()
        if isinstance(stmt, ast.Assign) and isinstance(target, ast.Subscript) and self.qualify(module, dotted(target.value), env) == "sys.modules":
            self._provides_module(module, target.slice, stmt, ctx)  # `sys.modules[name] = m`
        if (isinstance(stmt, ast.AugAssign) and isinstance(stmt.op, ast.BitOr)
                and self.qualify(module, dotted(target), env) == "os.environ"):
            # `os.environ |= {NAME: value}` (PEP 584): the same writes as os.environ[NAME] = value
            written = self.const(module, stmt.value, env)
            for variable, value in written.items() if isinstance(written, dict) else ():
                self._environment_write(module, variable, value, ctx)
            return
        if isinstance(target, ast.Attribute):
            self._named_class_attribute(module, target, stmt, ctx)
            owner = self._owner_of(module, target.value, env)
            if is_upstream(owner):
                value, params = self._patch_value(module, getattr(stmt, "value", None), ctx)
                self._dependency("patch", f"{owner}.{target.attr}", module, stmt, self._on_stand_in(module, target.value, ctx),
                                 how="assign", hook=value, params=params, owner_errors=self._owner_errors(module, target.value, env))
            elif engine.server_args and isinstance(target.value, ast.Name) and target.value.id in engine.server_args_names and owner is None:
                # (`args[2].x = …` writes on an item, not on args)
                self._dependency("server_arg", f"{engine.server_args}.{target.attr}", module, stmt, ctx, name=target.attr)
            else:  # `v.x += 1` reads x first
                self._field(module, target, ctx, how=None if isinstance(stmt, ast.AugAssign) else WRITE)
                if isinstance(stmt, ast.Assign):
                    self.graft_method(module, target.value, target.attr, stmt.value, stmt.lineno, ctx)
                    self._placement(module, target, stmt, ctx)
                if (isinstance(stmt, ast.Assign) and ctx.functions and isinstance(target.value, ast.Name) and target.value.id != ctx.self_name
                        and target.value.id in ctx.local and (env.get(target.value.id) is OPAQUE or isinstance(env.get(target.value.id), Instance))):
                    # `def fuse(cls): cls.forward = f` is `setattr(cls, "forward", f)`: a patch of
                    # what each call of the helper passes (finish(); parameter_patches)
                    setter = ast.copy_location(ast.Call(func=ast.Name("setattr", ast.Load()),
                                                        args=[target.value, ast.Constant(target.attr), stmt.value], keywords=[]), stmt)
                    self._patch_only.add(id(setter))
                    self.parameter_patches.append((module, setter, ctx))
        elif isinstance(target, ast.Subscript) and self._namespace_of(module, target.value, env) and isinstance(key := self.const(module, target.slice, env), str):
            # `mod.__dict__["f"] = g`, `vars(mod)["f"] = g`: the same as `mod.f = g`
            owner = self._namespace_of(module, target.value, env)
            value, params = self._patch_value(module, stmt.value, ctx)
            self._dependency("patch", f"{owner}.{key}", module, stmt, ctx, how="assign", hook=value, params=params)
        elif isinstance(target, ast.Subscript):
            owner = self.qualify(module, dotted(target.value), env)
            key = self.const(module, target.slice, env)
            if is_upstream(owner):
                # `X[k] = wrap(X[k])` reads the key before it stores: it puts in no key that was not there
                rereads = isinstance(key, str) and any(
                    isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Load) and self.qualify(module, dotted(n.value), env) == owner
                    and self.const(module, n.slice, env) == key for n in walk(stmt.value))
                self._dependency("patch", owner, module, stmt, ctx, how="item-reassign" if rereads else "item-assign",
                                 name=key if isinstance(key, str) else None)
                if engine.model_registry and owner == f"{engine.model_registry}.models" and isinstance(key, str):
                    self._dependency("architecture", owner, module, stmt, ctx, name=key, how="registers")
            if engine.kernel_key_prefix and isinstance(key, list) and len(key) == 2 and all(isinstance(k, str) for k in key) and key[0].startswith(engine.kernel_key_prefix):
                self._dependency("kernel", f"{key[0]}.{key[1]}", module, stmt, ctx, name=f"{key[0]}:{key[1]}")
            if isinstance(key, str) and (dotted(target.value) or "").endswith("environ"):
                self._environment_write(module, key, self.const(module, stmt.value, env), ctx)

    def _placement(self, module: str, target: ast.Attribute, stmt: ast.Assign, ctx: Context) -> None:
        """`obj.attr = P(…)` on an instance of an upstream class C (annotated, or narrowed by an
        `isinstance` / `type(obj) is C` test), or `obj.attr.__class__ = P`: from then on the calls
        C's methods make through `self.attr` run the plugin class P's methods (a PLACED patch of
        "C.attr"). `obj.__class__ = P` on an instance of C: the calls upstream makes on the
        instances it builds of C run P's (a PLACED patch of "C", name "__class__")."""
        held, attr, value, name = target.value, target.attr, stmt.value, None
        if attr == "__class__" and isinstance(held, ast.Attribute):
            held, attr, made = held.value, held.attr, value  # the object in an attribute re-classed in place
        elif attr == "__class__":
            made, name = value, "__class__"  # an instance of C itself re-classed: what upstream calls on C's instances
        elif (element := _element_made(value)) is not None:
            made, name = element.func, "element"  # `self.blocks = nn.ModuleList([P(…) for i in range(n)])`: each element a P
        else:
            made = value.func if isinstance(value, ast.Call) else None
        instance = self._instance(module, held, ctx.env)
        placed = self._constructed_class(module, made, ctx) if made is not None else None
        found = self._plugin_definition(placed) if placed and not is_upstream(placed) else None
        if (name != "__class__" and isinstance(held, ast.Name) and held.id == ctx.self_name and ctx.cls is not None and not ctx.in_class_body
                and found is not None and isinstance(found[1], ast.ClassDef)):
            # `self.attn = DevAttention(…)` in a plugin subclass of an upstream class: the methods it
            # inherits make their calls through self.attn on the plugin's object (finish(): the class's upstream bases)
            self.self_placements.append((module, stmt, ctx.cls.path, attr, placed, ctx, name))
        if instance is not None and instance.path and found is not None and isinstance(found[1], ast.ClassDef):
            self._dependency("patch", instance.path if name == "__class__" else f"{instance.path}.{attr}", module, stmt, ctx, how=PLACED, hook=placed, name=name,
                             expression=f"{ast.unparse(target)} = {ast.unparse(value)[:60]}")
        elif (instance is not None and not instance.path and instance.function and instance.param and "." not in instance.param
              and name is None and found is not None and isinstance(found[1], ast.ClassDef)):
            # on an unannotated parameter: the class finish() names for it (a function put on an
            # upstream class as its `__init__`, a hook's receiver): _parameter_placements
            self.parameter_placements.append((module, stmt, target, placed, ctx, instance))

    def _constructed_class(self, module: str, made: ast.expr, ctx: Context) -> str | None:
        """What `made(…)` builds: `made` itself by its path (a class, or anything else, as named),
        or, for a plugin function or a method of self's class every `return` of which builds one
        plugin class (`return DevAttention(…)`: a factory, a static or class method), that class."""
        path = self.qualify(module, dotted(made), ctx.env) if dotted(made) else None
        receiver = made.value if isinstance(made, ast.Attribute) else None
        if isinstance(receiver, ast.Call) and dotted(receiver.func) == "type" and len(receiver.args) == 1:
            receiver = receiver.args[0]  # `type(self)._make(…)`
        if isinstance(receiver, ast.Name) and receiver.id == ctx.self_name and ctx.cls is not None and not path:
            path = f"{ctx.cls.path}.{made.attr}"  # `self._make(…)` / `cls._make(…)` of the class's own method
        found = self._plugin_definition(path) if path and not is_upstream(path) else None
        if found is None or not isinstance(found[1], (ast.FunctionDef, ast.AsyncFunctionDef)):
            return path
        home, returns = found[0], [r.value for r in own_returns(found[1])]
        built = {self.qualify(home, dotted(r.func)) if isinstance(r, ast.Call) and dotted(r.func) else None for r in returns}
        (cls,) = built if len(built) == 1 else (None,)
        return cls if cls and (defined := self._plugin_definition(cls)) is not None and isinstance(defined[1], ast.ClassDef) else path

    def _patch_value(self, module: str, node: ast.AST | None, ctx: Context) -> tuple[str | None, tuple[Param, ...] | None]:
        """(the plugin callable a patch sets, its parameters as callers see them), each None when
        not known; the path is None when the patch sets an upstream object or a value that is no
        plugin callable by name. `f = own_f` gives own_f; a lambda, itself (`<lambda>`); a call (`wrap(f)`, `make(cfg)`,
        `functools.partial(own_f, …)`) gives what it returns when that is a plugin function it
        defines, its bound arguments taken away (_hook_signature), not the function called."""
        node = self._unwrapped(module, node, ctx.env)
        if node is None:
            return None, None
        if isinstance(node, ast.Lambda):  # `mod.f = lambda ctx, path, …: own(…)`: its parameters are what callers bind
            path, _, params = self._hook_signature(module, node, ctx)
            return path, params
        if isinstance(node, ast.Call):
            callee = self.qualify(module, dotted(node.func), ctx.env)
            if callee is None and isinstance(folded := self.const(module, node, ctx.env), Named) and not is_upstream(folded.path):
                # `globals().get(name)`, `vars(kernels)[name]`: the plugin function the lookup folds to
                return self._patch_value(module, ast.copy_location(ast.Name("<value>", ast.Load()), node), replace(ctx, env={**ctx.env, "<value>": folded}))
            if callee is None or is_upstream(callee):
                return None, None
            path, _, params = self._hook_signature(module, node, ctx)
            return (None, None) if path is None or is_upstream(path) else (path, params)
        if isinstance(node, ast.Attribute) and (bound := self._bound_method(module, node, ctx)) is not None:
            return bound[0], bound[2]  # `_MIRROR.download`: a method of a plugin object, self bound
        if isinstance(node, ast.Name) and isinstance(held := ctx.env.get(node.id), Record) and not is_upstream(held.cls):
            path, _, params = self._instance_call(held.cls)  # an instance of a plugin class: its __call__ runs
            return path, params
        value = self.qualify(module, dotted(node), ctx.env)
        if value is None and not (isinstance(node, ast.Name) and node.id == "<value>"):
            folded = self.const(module, node, ctx.env)  # `REG[name]` over a folded registry, `patch.replacement` of a record
            if isinstance(folded, Named) and not is_upstream(folded.path):
                name = "<value>"  # no identifier: no name of the plugin's
                return self._patch_value(module, ast.copy_location(ast.Name(name, ast.Load()), node), replace(ctx, env={**ctx.env, name: folded}))
        if value is None or is_upstream(value):
            return None, None
        return value, self._hook_signature(module, node, ctx)[2]

    def _plugin_callee(self, module: str, func: ast.Name, qualified: str, env: dict) -> str | None:
        """The own name of the plugin class or module-level function a call by another name
        reaches (`from .patches import SamplerPatches as Patches` then `Patches()`; `Made =
        SamplerPatches` at module level; `cls = SamplerPatches` in the function), so its calls
        are keyed as the callee's (call_arguments, bare_calls); None for a call by its own name
        or of anything else."""
        path = qualified if "." in qualified and qualified != f"{module}.{func.id}" else None  # an import alias
        binding = self.table(module).names.get(func.id)
        if path is None and (func.id in env or binding is not None and binding.kind == "value"):
            held = self.const(module, func, env)  # a name an assignment binds to the callee
            path = held.path if isinstance(held, Named) else None
        if not path or is_upstream(path):
            return None
        owner, _, short = path.rpartition(".")
        if short == func.id:
            return None
        # (by the module's table: the callee's module may not be scanned yet)
        binding = self.table(owner).names.get(short) if owner in self.files else None
        return short if binding is not None and binding.kind in ("def", "class") else None

    def _namespace_of(self, module: str, node: ast.AST, env: dict) -> str | None:
        """The upstream module or class whose namespace `node` is (`mod.__dict__`, `vars(mod)`,
        `fn.__globals__` of an upstream function), or None."""
        if isinstance(node, ast.Attribute) and node.attr == "__globals__":
            # a function's __globals__ is its module's namespace (Python's data model, "User-defined functions")
            function = self.upstream_ref(self.qualify(module, dotted(node.value), env))
            return function.module if function is not None and function.kind == "function" else None
        if isinstance(node, ast.Attribute) and node.attr == "__dict__":
            held = node.value
        elif isinstance(node, ast.Call) and dotted(node.func) == "vars" and len(node.args) == 1:
            held = node.args[0]
        else:
            return None
        # by name, or as it folds (`(mod := sys.modules.get(M)).__dict__`)
        owner = self.qualify(module, dotted(held), env) if isinstance(held, (ast.Name, ast.Attribute)) else None
        if owner is None and isinstance(folded := self.const(module, held, env), Named):
            owner = folded.path
        return owner if is_upstream(owner) else None

    def _dependency(self, kind: Kind, target: str | None, module: str, node: ast.AST, ctx: Context, **fields) -> None:
        guards = ctx.guards + tuple(guard for path, guard in self.stand_ins.get(module, ()) if target and (target == path or target.startswith(f"{path}.")))
        guards += self._stand_in_guards(module, target) if target and is_upstream(target) else ()
        self.scan.dependencies.append(Dependency(
            kind, target, module, self.relfile(module), node.lineno,
            scope=ctx.scope, guards=guards, catches=ctx.catches, enclosing=ctx.functions, **fields,
        ))


    def _stand_in_guards(self, module: str, target: str) -> tuple[GuardCond, ...]:
        """For a name `module` imports from another plugin module that stands in for it
        (Folding.stand_in_imports): the condition under which it is upstream's, that module's
        import resolving."""
        guards = []
        for source in sorted(set(self.table(module).imports) & self.files.keys() - {module}):
            for name, (path, imports, line) in self.stand_in_imports(source).items():
                if target == path or target.startswith(f"{path}."):
                    guards.append(GuardCond(ImportsResolve(imports), f"the import at {self.relfile(source)}:{line} resolves (else {name} is the plugin's own)", line))
        return tuple(guards)


def _held_by_run(node: ast.AST, ctx: Context) -> bool:
    """Whether `node` reads what the run hands the function: a local name the scan holds no
    value for (a parameter, or bound from one) or `self.<attr>` in a method."""
    if isinstance(node, ast.Name):
        return node.id in ctx.local and (ctx.env.get(node.id, OPAQUE) is OPAQUE or isinstance(ctx.env.get(node.id), Instance))
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == ctx.self_name is not None


def _bound_values(nodes: Iterable[ast.AST], name: str) -> list[ast.expr | None]:
    """The values the statements among `nodes` bind to `name`, one per binding (None for a loop
    or `with` target, which has no one value)."""
    values = []
    for stmt in nodes:
        if isinstance(stmt, ast.Assign):
            targets = stmt.targets
        elif isinstance(stmt, (ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor, ast.NamedExpr, ast.comprehension)):
            targets = [stmt.target]
        elif isinstance(stmt, ast.withitem) and stmt.optional_vars is not None:
            targets = [stmt.optional_vars]
        else:
            continue
        if any(isinstance(n, ast.Name) and n.id == name for t in targets for n in walk(t)):
            values.append(getattr(stmt, "value", None))
    return values


def _forwards_all(closure: ast.FunctionDef | ast.AsyncFunctionDef, wrapped: str) -> bool:
    """Whether `closure` takes `*args, **kwargs` and calls `wrapped` with exactly them (a plain
    wrapper): then what binds is what `wrapped` takes."""
    var, varkw = closure.args.vararg, closure.args.kwarg
    if var is None or varkw is None:
        return False
    for node in walk(closure):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == wrapped
                and [a.value.id for a in node.args if isinstance(a, ast.Starred) and isinstance(a.value, ast.Name)] == [var.arg]
                and [k.value.id for k in node.keywords if k.arg is None and isinstance(k.value, ast.Name)] == [varkw.arg]):
            return True
    return False


def never_runs(ctx: Context) -> bool:
    """Whether a statement sits under a test that folds to false where it is scanned."""
    return any(isinstance(guard.cond, Const) and not guard.cond.value for guard in ctx.guards)
