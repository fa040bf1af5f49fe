"""Static reading of a plugin repo: every place it depends on upstream SGLang, with the
conditions it sits under.

What SGLang's loader does decides what is read (sglang/srt/plugins/__init__.py and
platforms/__init__.py, 0.5.23): each entry point's module is imported inside `try/except
Exception` (an ImportError anywhere in its import chain skips the *whole* plugin), the
platform class is loaded with `pkgutil.resolve_name` (so `activate()` may return
`pkg.mod:Class` or `pkg.mod.Class`), hooks registered while plugins load are applied once by
`HookRegistry.apply_hooks`. Plugins without entry points (an external model package named in
`SGLANG_EXTERNAL_MODEL_PACKAGE`) are read from the roots the user names, or from every module
that imports sglang.

The scan is version-independent: it records each dependency as written (qualified to an
absolute dotted path), the guards around it (`hasattr`, version comparisons, `try/except`) as
conditions, and the plugin's class hierarchy (the records are in model.plugin); `judge` judges
them against one upstream. The scanner's parts: folding (constants and conditions), expressions
(what an expression depends on), classes (the whole-plugin pass), liveness (roots and
liveness), syntax (syntax helpers), annotations (shared with the judge).
"""

from __future__ import annotations

import ast
import copy
import re
from dataclasses import replace
from pathlib import Path

from harness.engines import IMPORT_ERRORS, profile
from harness.errors import HarnessError
from harness.knowledge.model import (
    CLASS_USE_BASE,
    UNDECIDED,
    AllOf,
    Catch,
    Cond,
    Const,
    Dependency,
    GuardCond,
    HasAttr,
    ImportsResolve,
    MethodDecl,
    ModuleExists,
    ModuleTable,
    Not,
    PluginClass,
    Registered,
    PluginModule,
    PluginScan,
    Runtime,
    Undecided,
    dotted,
    function_params,
    is_upstream,
    module_source,
    plugin_module_files,
    raises_only,
    read_entry_points,
    resolve_relative,
    run_entries,
    walk,
)
from harness.knowledge.scan.annotations import NONE_VALUE, SELF_HELD, annotation_class, annotation_classes, type_checking_imports
from harness.knowledge.scan.classes import PluginClasses
from harness.knowledge.scan.expressions import IN_PLACE_EDITS, Context, Expressions, flag_owner, partial_params
from harness.knowledge.scan.folding import (
    NAMESPACES,
    OPAQUE,
    Condition,
    Folding,
    Instance,
    LoadedModule,
    LoadedName,
    Named,
    PackageFile,
    Record,
    bind,
    is_narrowed_key,
    narrowed_key,
    call_results,
    free_marker,
    is_type_test,
    returned_marker,
    runtime_test,
    without_none,
)
from harness.knowledge.scan.liveness import mark_live, plugin_roots, with_parents
from harness.knowledge.scan.registrations import Registrations
from harness.knowledge.scan.uses import unnamed_private_function
from harness.knowledge.scan.syntax import (
    always_raises,
    assigned,
    case_test,
    case_tests,
    class_pattern_captures,
    drained_loop,
    forwards_to_super,
    plain_spellings,
    assigned_in,
    assigned_in_all,
    exception_names,
    flag_names,
    is_main_test,
    imported_names,
    local_names,
    mangled,
    none_assigned,
    own_returns,
    pattern_names,
    python_version,
    returned_function,
    upstream_imports,
)
from harness.knowledge.upstream import SymbolIndex, extract_module

# ----------------------------------------------------------------------------- scanning


def _own_nodes(body: list[ast.stmt]):
    """The nodes of `body`, not those of the functions or classes it defines."""
    pending = list(body)
    while pending:
        node = pending.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            pending.extend(ast.iter_child_nodes(node))


def _loaded_name(element) -> str | None:
    """The upstream module a walk over sys.modules kept this element for (Folding.loaded_walk: a
    LoadedName, alone or paired with its module, or a LoadedModule), or None."""
    if isinstance(element, list):
        element = next((e for e in element if isinstance(e, LoadedName)), None)
    return element.path if isinstance(element, LoadedModule) else str(element) if isinstance(element, LoadedName) else None


def scan_plugin(root: Path, index: SymbolIndex, entries: list[str] | None = None) -> PluginScan:
    """Read a plugin checkout: its modules, roots, liveness, classes and every dependency.

    `entries` names root modules for plugins that the engine reaches without entry points (e.g.
    an external model package). Raises HarnessError when `root` is not a directory, a
    packaging file is malformed, or there is nothing that could be a plugin."""
    root = Path(root).resolve()
    if not root.is_dir():
        raise HarnessError(f"plugin path {str(root)!r} is not a directory")
    entry_points = read_entry_points(root)
    files = plugin_module_files(root)
    scan = PluginScan(root, entry_points)
    scanner = Scanner(root, files, index, scan)
    # `python -m mod` runs mod as __main__ (a package: its __main__ module), its main block too
    scanner.main_modules = scan.main_modules = {f"{module}.__main__" if files[module][1] else module for module, _, as_main in run_entries(root) if as_main and module in files}
    for name, (path, is_package) in files.items():
        scan.modules[name] = PluginModule(name, scanner.relfile(name), is_package)
    # the upstream modules the plugin imports, parsed up front (in parallel when many)
    index.index_all(only={prefix for name in files for imported in scanner.table(name).imports if is_upstream(imported) for prefix in with_parents(imported)})
    for name in files:
        scanner.scan_module(name)
    scan.roots = plugin_roots(scan, scanner, entries or [])
    if not scan.roots:
        engine = profile()
        raise HarnessError(
            f"{root}: not {engine.article} {engine.display} plugin: no {' or '.join(repr(g) for g in engine.groups)} entry points, no --entry, "
            f"and no module that imports {engine.package}: nothing to check"
        )
    scanner.finish()
    scanner.drop_uncalled_imports()
    mark_live(scan, scanner)
    return scan


# what a lookup in run-time data raises (a missing key or index, a bad value, a wrong type)
_DATA_ERRORS = frozenset({"KeyError", "IndexError", "LookupError", "ValueError", "TypeError", "AttributeError", "Exception", "BaseException"})


class Scanner(Expressions, Registrations, PluginClasses, Folding):
    """Reads every module of one plugin checkout into a PluginScan."""

    def __init__(self, root: Path, files: dict[str, tuple[Path, bool]], index: SymbolIndex, scan: PluginScan):
        self.root = root
        self.files = files
        self.index = index
        self.scan = scan
        self.tables: dict[str, ModuleTable] = {}
        self.trees: dict[str, ast.Module | None] = {}
        self.dynamic_imports: dict[str, list[tuple[str, tuple[str, ...]]]] = {}  # module -> (imported, enclosing functions)
        self.hook_callables: dict[str, str] = {}  # plugin path of a hook function/class -> its target
        self.none_fallbacks: dict[tuple[str, str], ModuleExists | ImportsResolve | HasAttr] = {}  # (module, imported path) -> "the import resolves"
        # (module, upstream module) got by `sys.modules.get(M, stand_in)` / `… or stand_in`: the plugin's object where M is not loaded
        self.stand_in_owners: set[tuple[str, str]] = set()
        self._future_annotations: set[str] = set()
        self.star_names: dict[tuple[str, str], str | None] = {}
        self._getattr_answers: dict[tuple[str, str], str | None] = {}
        self._fills = None
        self._class_refs = None
        self._sole_objects = {}
        self._receivers_memo: dict[str, dict] = {}  # PluginClasses._call_receivers, per method name
        self._branches_memo = {}
        self._made_once_globals = {}
        self.entered = {}
        self._release = None
        self._filling = set()
        self._stmt_names = {}
        self._self_calls: set[int] = set()  # ids of `self.m` nodes already recorded with their call
        self._called: dict[int, tuple[ast.expr, ast.Call]] = {}  # id of a call's `obj.m` -> (that node, the call)
        self._tested: set[int] = set()  # ids of expressions whose value is only tested (an if / while test, a BoolOp operand)
        # registry reads keyed by a function's parameter: (registry, the function, the parameter, the read, its context)
        self.parameter_keys: list[tuple[str | None, str, str, str, ast.Subscript, Context]] = []
        self.parameter_calls: list[tuple[str, ast.Call, str, str, Context]] = []
        self.parameter_class_calls: list[tuple[str, ast.Call, Context]] = []
        self.parameter_environ: list[tuple[str, ast.Call, Context]] = []
        self._chain_shadows: dict[int, set] = {}
        # import_module arguments built from a function's parameters: (module, the argument, its context)
        self.parameter_imports: list[tuple[str, ast.expr, ast.expr | None, Context]] = []
        self.parameter_getattrs: list[tuple[str, ast.Call, Context]] = []
        self.parameter_provided: list[tuple[str, ast.expr, ast.AST, Context]] = []
        # hook registrations whose target, type or callable is a function's parameter: (module, the
        # registering node, target, type, callable, its context)
        # module -> (upstream path, "the import resolves"): a name an `except ImportError` handler
        # binds to the plugin's own stand-in; what uses it depends on upstream only under that guard
        self.stand_ins: dict[str, list[tuple[str, GuardCond]]] = {}
        # calls of plugin names, judged once every class is known: (module, the call, its context, the qualified name)
        self.plugin_calls: list[tuple[str, ast.Call, Context, str]] = []
        # plugin module -> (the module importing it or a submodule, the line, where): each place its body may run from
        self.import_sites: dict[str, list[tuple[str, int, Context]]] = {}
        self.class_reads: list[tuple[str, ast.Attribute, Context, str, str]] = []  # `C.m` of a plugin class C (_class_reads)
        self._decorating: dict[frozenset[str], frozenset[str]] = {}  # entry callables -> their plugin decorators
        self.parameter_hooks: list[tuple[str, ast.AST, ast.AST | None, ast.AST | None, ast.AST | None, Context]] = []
        self.parameter_replacements: list[tuple[str, ast.AST, ast.AST, ast.AST | None, ast.AST | str | None, Context]] = []
        # descriptor class -> (owner class, attribute, the instance, where): its __set_name__ calls (_set_name_site)
        self.set_name_sites: dict[str, list[tuple[str, str, Record, str]]] = {}
        self.parameter_settings: list[tuple[str, ast.Call, str, Context]] = []  # settings written from a helper's parameters
        self.model_packages: set[str] = set()  # external model packages the plugin names
        self.main_modules: set[str] = set()  # modules the team runs as `__main__` (`python -m`; scan_plugin)
        self._main_imports: dict[str, set[str]] = {}
        self._hinted: dict[str, dict[str, str]] = {}
        self._defs: dict[str, dict[str, list]] = {}
        self._through_callers: dict[tuple, list] = {}
        self._tests: dict[int, tuple] = {}
        self._instance_writes: dict[tuple[str, str, bool], bool] = {}
        self._stand_in_cache: dict[str, dict] = {}
        self._chosen_by_ifs: dict[str, frozenset[str]] = {}
        self._release_bindings: dict[tuple[str, str], str | None] = {}
        self._environment_defaults: list[str] | None = None
        self._reads_defaults: bool | None = None  # (_iterated_by_default)
        self._direct_receivers: dict[str, dict[str, frozenset[int]]] = {}  # module -> method -> _called_on_construction
        self._names_plugin_hook: dict[str, bool] = {}  # module -> whether it names plugin_hook at all (_held_plugin_hook)
        self._related_classes: dict[str, frozenset[str]] = {}  # class -> itself, its bases and subclasses (_instance_bindings)
        self.disabled_models: set[str] = set()  # last names of model modules the plugin has the loader skip
        self.parameter_patches: list[tuple[str, ast.Call, Context]] = []  # setattr(owner, name, fn) on a helper's parameters
        self._patch_only: set[int] = set()
        self._groups: dict[str, list] = {}
        self.parameter_registries: list[tuple[str, ast.Call, Context]] = []  # `registry.register(…)` on a helper's parameter
        self.self_placements: list[tuple[str, ast.Assign, str, str, str, Context, str | None]] = []  # `self.x = P(…)` (_self_placements)
        self.parameter_placements: list[tuple[str, ast.Assign, ast.Attribute, str, Context, Instance]] = []  # (_parameter_placements)
        self.held_registrars: list[tuple[str, ast.Call, Context]] = []  # `reg(name)` of `reg(name)(fn)`, reg handed in (_held_registrars)
        self.decorated: dict[int, str] = {}  # id of a decorator call -> the plugin path of the def or class it decorates
        self.grafts: list[tuple[str, str, MethodDecl | None]] = []  # (plugin class path, name, the method when a function)
        # plugin function name -> each call of it with arguments: (module, the call, the bindings its arguments read)
        self.call_arguments: dict[str, list[tuple[str, ast.Call, dict]]] = {}
        self.bare_calls: dict[str, list[tuple[str, ast.Call, dict]]] = {}  # calls of plugin names with no arguments
        self.call_guards: dict[str, tuple[GuardCond, ...]] = {}  # "file:line" of a plugin call -> the guards it runs under
        self.decorations: dict[str, list[tuple[str, str]]] = {}  # plugin function -> (what it decorates plainly, "file:line")
        self.parameter_grafts: list[tuple[str, ast.expr, str, ast.expr, int, Context]] = []  # `cls.m = f` on a helper's parameter
        self.called_objects: dict[int, tuple[str, ast.Call, dict]] = {}
        self._relfiles: dict[str, str] = {}
        self.calls: dict[str, set[str]] = {}  # plugin function -> plugin functions it calls
        # attribute name -> (the function that assigns `<x>.<name> = …` or setattr(x, "name", …), or
        # the module at its top level; the line; the class x is: self's or one the plugin names,
        # None when unknown): what may change an instance flag (instance_flag)
        self.attribute_writes: dict[str, list[tuple[str, int, str | None]]] = {}
        # module -> module it imports -> the guards around each statement importing it
        self.import_guards: dict[str, dict[str, list[tuple[GuardCond, ...]]]] = {}
        self._edited_names: set[str] | None = None  # last parts of names the plugin edits in place (_may_be_filled)

    def _may_be_filled(self, iterable: ast.expr) -> bool:
        """Whether a container the scan folded (empty for a loop over it, without a key for a
        `.get` of it) may hold more when the code runs: a literal (`()`, `[]`) cannot; a name can
        when any plugin module edits a name of its last
        part in place (`X.append(…)`, `X.update(…)`, `X[k] = …`, `X += …`, `del X[k]`), hands it to a
        function of its own (which may fill it) or rebinds it from a function (`global X`). Anything else (a call, a subscript) may."""
        if isinstance(iterable, (ast.Tuple, ast.List, ast.Set, ast.Dict)):
            return False
        name = dotted(iterable)
        if name is None:
            return True
        if self._edited_names is None:
            self._edited_names = set()
            for module in self.files:
                for node in walk(self.tree(module) or ast.Module(body=[], type_ignores=[])):
                    if isinstance(node, ast.Global):
                        self._edited_names.update(node.names)
                    elif isinstance(node, ast.AugAssign) or isinstance(node, (ast.Subscript, ast.Attribute)) and isinstance(node.ctx, (ast.Store, ast.Del)):
                        edited = node.target if isinstance(node, ast.AugAssign) else node.value
                        self._edited_names.add((dotted(edited) or "").rpartition(".")[2])
                    elif isinstance(node, ast.Call):
                        if isinstance(node.func, ast.Attribute) and node.func.attr in IN_PLACE_EDITS | {"__setitem__"}:
                            self._edited_names.add((dotted(node.func.value) or "").rpartition(".")[2])
                        # handed to a function of the plugin's, which may fill it
                        if (called := self.qualify(module, dotted(node.func))) and not is_upstream(called) and self._plugin_definition(called):
                            self._edited_names.update((dotted(a) or "").rpartition(".")[2] for a in [*node.args, *(k.value for k in node.keywords)])
        return name.rpartition(".")[2] in self._edited_names

    def relfile(self, module: str) -> str:
        if module not in self._relfiles:
            self._relfiles[module] = str(self.files[module][0].relative_to(self.root))
        return self._relfiles[module]

    def module_of(self, path: str) -> str | None:
        """The plugin module holding `path` ("pkg.mod:Class" or "pkg.mod.Class"), the way
        pkgutil.resolve_name imports it."""
        if ":" in path:
            module = path.partition(":")[0]
            return module if module in self.files else None
        parts = path.split(".")
        found = None
        for i in range(1, len(parts) + 1):
            candidate = ".".join(parts[:i])
            if candidate in self.files or any(m.startswith(candidate + ".") for m in self.files):
                found = candidate if candidate in self.files else found
            else:
                break
        return found

    # ------------------------------------------------------------- parsing

    def tree(self, module: str) -> ast.Module | None:
        """The module's AST, or None when the file cannot be read or parsed (recorded once)."""
        if module not in self.trees:
            path, is_package = self.files[module]
            try:
                source = module_source(path, self.root)
                tree = plain_spellings(ast.parse(source))
            except OSError as exc:
                self._file_error(module, f"cannot be read: {exc.strerror or exc}", 1)
                tree = None
            except (SyntaxError, ValueError) as exc:
                line = getattr(exc, "lineno", None) or 1
                self._file_error(module, f"does not parse with Python {python_version()}: {getattr(exc, 'msg', exc)} (line {line})", line)
                tree = None
            self.trees[module] = tree
            if tree is None:
                self.tables[module] = ModuleTable(name=module, path=self.relfile(module), is_package=is_package)
            else:
                self.tables[module] = extract_module(module, self.relfile(module), source, is_package, nested_imports=True, tree=tree)
                if any(isinstance(s, ast.ImportFrom) and s.module == "__future__" and any(a.name == "annotations" for a in s.names) for s in tree.body):
                    self._future_annotations.add(module)
        return self.trees[module]

    def table(self, module: str) -> ModuleTable:
        self.tree(module)
        return self.tables[module]

    def _file_error(self, module: str, message: str, line: int) -> None:
        self.scan.modules[module].error = message
        self.scan.dependencies.append(Dependency("file", module, module, self.relfile(module), line, expression=message))

    def drop_uncalled_imports(self) -> None:
        """Modules imported by name (import_module, a model package set) only inside a module's
        private function nothing names are never imported that way (uses.unnamed_private_function:
        nothing can call the function), so they are not live through it."""
        uncalled: dict[str, bool] = {}
        for module, found in self.dynamic_imports.items():
            kept = []
            for target, functions in found:
                for function in functions:
                    if function not in uncalled:
                        uncalled[function] = unnamed_private_function(self.scan, function)
                if not any(uncalled[f] for f in functions):
                    kept.append((target, functions))
            found[:] = kept

    def _entry_decorators(self, entry_callables: frozenset[str]) -> frozenset[str]:
        """The plugin functions decorating an entry callable's def (`@exports_models("pkg.zoo")`
        over `def register()`, the factory called or the decorator named): the entry point
        holds what they return, so the code they wrap around the callable runs when it is called."""
        if entry_callables in self._decorating:  # (asked per module)
            return self._decorating[entry_callables]
        found = set()
        for path in entry_callables:
            definition = self._plugin_definition(path)
            for decorator in definition[1].decorator_list if definition is not None and not isinstance(definition[1], ast.ClassDef) else ():
                named = self.qualify(definition[0], dotted(decorator.func if isinstance(decorator, ast.Call) else decorator) or "")
                if named and not is_upstream(named) and self._plugin_function(named) is not None:
                    found.add(named)
        self._decorating[entry_callables] = frozenset(found)
        return self._decorating[entry_callables]

    def imports_of(self, module: str) -> list[str]:
        found = [*self.table(module).imports, *(target for target, _ in self.dynamic_imports.get(module, []))]
        main_only = self._main_only(module) if module not in self.main_modules else set()
        return [name for name in found if name not in main_only]

    def _type_checking_names(self, module: str) -> dict[str, str]:
        """{name: path} the module imports only `if TYPE_CHECKING:` (annotations.type_checking_imports); each module's once."""
        if module not in self._hinted:
            tree = self.tree(module)
            self._hinted[module] = type_checking_imports(tree, module, self.files[module][1]) if tree else {}
        return self._hinted[module]

    def _main_only(self, module: str) -> set[str]:
        """What a module imports only inside `if __name__ == "__main__":` at its top level: run
        when it is executed as a script (`python -m`), never when it is imported (Python's
        `__main__` docs). Each module's once."""
        if module not in self._main_imports:
            tree = self.tree(module)
            inside, outside = set(), set()
            for stmt in tree.body if tree else []:
                into = inside if isinstance(stmt, ast.If) and is_main_test(stmt.test) else outside
                into.update(name for node in walk(stmt) if isinstance(node, (ast.Import, ast.ImportFrom)) for name in self._imported(module, node))
            self._main_imports[module] = inside - outside
        return self._main_imports[module]

    def imports_upstream(self, module: str) -> bool:
        """Whether the module imports the engine's package; for a file that does not parse, by its text."""
        if self.scan.modules[module].error is None:
            return any(is_upstream(m) for m in self.table(module).imports)
        imports = re.compile(rf"^\s*(?:from|import)\s+{re.escape(profile().package)}\b", re.MULTILINE)
        try:
            return bool(imports.search(module_source(self.files[module][0], self.root).decode(errors="replace")))
        except OSError:
            return False

    def load_time_imports(self, module: str, entry_callables: set[str]) -> list[str]:
        """Imports that run when the module is imported, or inside an entry point's callable
        (or the wrapper a plugin decorator of it returns: what the engine then calls)."""
        tree = self.tree(module)
        wrappers = self._entry_decorators(frozenset(entry_callables))
        found = [target for target, enclosing in self.dynamic_imports.get(module, [])
                 if not enclosing or enclosing[0] in entry_callables or enclosing[0] in wrappers]
        stack = list(tree.body) if tree else []
        while stack:
            node = stack.pop()
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if f"{module}.{node.name}" in entry_callables:
                    stack.extend(node.body)
                continue
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                found.extend(self._imported(module, node))
            elif isinstance(node, ast.If) and is_main_test(node.test) and module not in self.main_modules:
                continue  # a script's own block: not run when the module is imported
            elif isinstance(node, ast.stmt):
                stack.extend(child for child in ast.iter_child_nodes(node) if isinstance(child, (ast.stmt, ast.excepthandler)))
            elif isinstance(node, ast.excepthandler):
                stack.extend(node.body)
        return found

    def _imported(self, module: str, stmt: ast.Import | ast.ImportFrom) -> list[str]:
        """What an import statement may import: each `import a.b` name; for `from a import b, c`,
        `a` and the submodules `a.b`, `a.c` it names (when they are modules)."""
        if isinstance(stmt, ast.Import):
            return [alias.name for alias in stmt.names]
        base = resolve_relative(module, self.files[module][1], stmt.level, stmt.module)
        return [base, *(f"{base}.{alias.name}" for alias in stmt.names if alias.name != "*")]

    # ------------------------------------------------------------- the walk

    def scan_module(self, module: str) -> None:
        tree = self.tree(module)
        if tree is None:
            return
        self._block(module, tree.body, Context(env={}))
        for ep in self.scan.entry_points:
            held, _, attr = ep.value.partition(":")
            if held == module and attr.isidentifier() and getattr(self.table(module).names.get(attr), "kind", None) == "value":
                # `register = functools.partial(envs.X.set, pkg)` named by an entry point: the
                # engine calls it with no arguments (ep.load()()) as it would a def
                called = ast.Call(func=ast.Name(attr, ast.Load()), args=[], keywords=[])
                called.lineno, called.col_offset = self.table(module).names[attr].lineno, 0
                self._call(module, ast.fix_missing_locations(called),
                           Context(env={}, functions=(f"{module}.{attr}",)))
        uses, strings = self.scan.attribute_uses, self.scan.name_strings
        not_lookups: set[int] = set()  # setattr's name argument and docstrings: not a name looked up
        for node in walk(tree):
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
                not_lookups.add(id(node.value))
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
                uses.setdefault(node.attr, f"{self.relfile(module)}:{node.lineno}")
            elif (isinstance(node, ast.Call) and len(node.args) >= 2 and dotted(node.func) in ("getattr", "hasattr")
                  and isinstance(name := self.const(module, node.args[1], {}), str)):
                uses.setdefault(name, f"{self.relfile(module)}:{node.lineno}")  # a constant or a name folding to one
            elif (isinstance(node, ast.Call) and len(node.args) >= 2 and dotted(node.func) == "setattr"
                  and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)):
                not_lookups.add(id(node.args[1]))
                self.attribute_writes.setdefault(node.args[1].value, []).append(("setattr", node.lineno, None))
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.isidentifier() and id(node) not in not_lookups:
                strings.setdefault(node.value, f"{self.relfile(module)}:{node.lineno}")

    def _block(self, module: str, body: list[ast.stmt], ctx: Context) -> None:
        """Walk statements in order; each sees the bindings and early-exit guards before it."""
        ctx = replace(ctx, env=dict(ctx.env))
        for stmt in body:
            self._statement(module, stmt, ctx)
            if isinstance(stmt, ast.If) and not stmt.orelse and stmt.body and isinstance(stmt.body[-1], (ast.Return, ast.Raise, ast.Continue, ast.Break)):
                # `if not hasattr(X, "y"): return` guards the rest of the block (and `if f is None:
                # continue` leaves f one of its other values)
                ctx = replace(ctx, guards=ctx.guards + (self._guard(module, stmt.test, ctx.env, negate=True, local=ctx.local),))
                ctx.env.update(without_none(stmt.test, ctx.env, holds=False))
                if isinstance(stmt.test, ast.UnaryOp) and isinstance(stmt.test.op, ast.Not) and (narrowed := self.narrowed_by(module, stmt.test.operand, ctx.env)):
                    # `if not isinstance(x, C): continue`: x holds a C in the rest of the block
                    ctx = replace(ctx, env=self._narrow(ctx.env, narrowed, body[body.index(stmt) + 1:]))
            if isinstance(stmt, ast.Assert) and (narrowed := self.narrowed_by(module, stmt.test, ctx.env)):
                ctx = replace(ctx, env=self._narrow(ctx.env, narrowed, body[body.index(stmt) + 1:]))  # `assert isinstance(x, C)`: the same
            exits = [h for h in getattr(stmt, "handlers", []) if h.body and isinstance(h.body[-1], (ast.Return, ast.Continue, ast.Break))]
            imports = tuple(upstream_imports(module, self.files[module][1], stmt.body)) if isinstance(stmt, ast.Try) and exits else ()
            if imports and any(h.type is None or self.exception_names(module, [h.type]) & IMPORT_ERRORS for h in exits):
                # `try: import x / except ImportError: return`: the rest runs only when the imports resolve
                ctx = replace(ctx, guards=ctx.guards + (GuardCond(ImportsResolve(imports), f"the imports at line {stmt.lineno} succeed", stmt.lineno),))
            # `try: m = sys.modules["sglang.x"] / except KeyError: return`, `try: m =
            # importlib.import_module("sglang.x") / except ImportError: return`: the rest runs
            # only when the module is there (loaded, importable)
            if isinstance(stmt, ast.Try) and exits:
                # (and `owner = pkgutil.resolve_name("pkg.mod:Cls")` / `except (ImportError,
                # AttributeError): continue`, `owner = import_module("pkg").sub` / `except
                # AttributeError`: the rest runs only when the object is there, when the handler
                # takes every error the lookup may raise: lookup_errors)
                found = [path for path, needs in self._bound_lookups(module, stmt.body, ctx)
                         if any(h.type is None or all(self.exception_names(module, [h.type]) & e for e in needs) for h in exits)]
                ctx = self._had(ctx, found, f"the try at line {stmt.lineno}", stmt.lineno)
            elif isinstance(stmt, ast.Assign) and ctx.catches:
                # `owner = sys.modules.get("pkg").sub` inside `with suppress(AttributeError):` (or a
                # try body): when it raises, the rest of this block is skipped with it
                found = [path for path, needs in self._bound_lookups(module, [stmt], ctx)
                         if needs and all(any(c.handles(e) for c in ctx.catches) for e in needs)]
                ctx = self._had(ctx, found, f"line {stmt.lineno} raises nothing", stmt.lineno)

    @staticmethod
    def _narrow(env: dict, narrowed: dict[str, Instance | None], body: list[ast.stmt]) -> dict:
        """`env` with each narrowed name's class kept under narrowed_key (OPAQUE for None: not
        an upstream class), for a name `body` does not bind again (there it would hold
        something else)."""
        rebound = {n.id for n in walk(ast.Module(body=body, type_ignores=[])) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        inner = dict(env)
        for name, instance in narrowed.items():
            inner.pop(narrowed_key(name), None)
            if name not in rebound:
                inner[narrowed_key(name)] = OPAQUE if instance is None else instance
        return inner

    def _had(self, ctx: Context, found: list[str], where: str, line: int) -> Context:
        """`ctx` with the guard that the upstream objects `found` are there (each a module, or an
        attribute of its parent)."""
        if not found:
            return ctx
        exists = tuple(ModuleExists(p) if self.index.module_exists(p) else HasAttr(*p.rsplit(".", 1)) for p in found)
        return replace(ctx, guards=ctx.guards + (GuardCond(AllOf(exists), f"{', '.join(found)} can be had ({where})", line),))

    def _bound_lookups(self, module: str, body: list[ast.stmt], ctx: Context) -> list[tuple[str, tuple[frozenset[str], ...]]]:
        """(the upstream module or object, the error families getting it raises) for each `name =
        <value>` statement in `body` whose value looks it up by name (lookup_errors), raising."""
        found = []
        for node in walk(ast.Module(body=body, type_ignores=[])):
            needs = self.lookup_errors(module, node.value, ctx.env) if isinstance(node, ast.Assign) else None
            value = self.const(module, node.value, ctx.env) if needs else None
            if isinstance(value, Named) and is_upstream(value.path):
                found.append((value.path, needs))
        return found

    def _statement(self, module: str, stmt: ast.stmt, ctx: Context) -> None:
        env = ctx.env
        if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom, ast.Return)):
            for name, value in list(env.items()):  # `REG["k"] = v`, `REG.append(v)`: what later reads of REG fold to
                if isinstance(value, (dict, list)):
                    env[name] = self.edit_of(module, name, value, stmt, env)
                elif isinstance(value, Record) and value.cls in NAMESPACES:  # `ns.x = v`: what vars(ns) later holds
                    env[name] = self.namespace_edit(module, name, value, stmt, env)
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self._function(module, stmt, ctx)
            if ctx.functions:  # a nested function: its name now refers to it
                ctx.env[stmt.name] = Named(self._function_path(module, stmt, ctx))
            return
        if isinstance(stmt, ast.ClassDef):
            self._class(module, stmt, ctx)
            return
        if (built := self._type_built(module, stmt, ctx)) is not None:
            made, bases = built
            self._class(module, made, replace(ctx, env={**ctx.env, **bases}))
            ctx.env[made.name] = Named(self._function_path(module, made, ctx))
            return
        if isinstance(stmt, ast.If):
            self._tested.add(id(stmt.test))
            self._expressions(module, stmt.test, ctx)
            owner = flag_owner(ctx)
            body = replace(ctx, guards=ctx.guards + (self._guard(module, stmt.test, env, owner=owner, local=ctx.local),))
            narrowed = self.narrowed_by(module, stmt.test, env)
            if not narrowed:
                self._block(module, stmt.body, replace(body, env={**env, **without_none(stmt.test, env, holds=True)}))
            else:  # `if isinstance(x, C):` x holds an instance of C (or of a subclass) in the body,
                # its fields and methods read as on an `x: C` parameter; what else the body binds stays bound
                inner = self._narrow(env, narrowed, stmt.body)
                self._block(module, stmt.body, replace(body, env=inner))
                env.update({k: v for k, v in inner.items() if not is_narrowed_key(k)})
            if stmt.orelse:
                self._block(module, stmt.orelse, replace(ctx, guards=ctx.guards + (self._guard(module, stmt.test, env, negate=True, owner=owner, local=ctx.local),)))
            return
        if isinstance(stmt, ast.Try) or type(stmt).__name__ == "TryStar":
            self._try(module, stmt, ctx)
            return
        if isinstance(stmt, ast.While) and (drained := drained_loop(stmt)) is not None:
            stmt = drained  # `while PENDING: item = PENDING.pop(0)`: each element once, as a `for` meets them
        if isinstance(stmt, (ast.For, ast.AsyncFor, ast.While)):
            # a name a loop's body adds to (`s += x`) holds what the passes made so far: unknown in and after it
            env.update({n.target.id: OPAQUE for n in walk(stmt) if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name)})
        if isinstance(stmt, (ast.For, ast.AsyncFor)):
            self._expressions(module, stmt.iter, ctx)
            iterable = self.loaded_walk(module, stmt, env)  # a walk over sys.modules for a table's names
            if iterable is None:
                iterable = self.iterated(self.const(module, stmt.iter, env))  # a dict's keys, an enum's members
            if isinstance(iterable, list) and iterable:
                # a body that always runs through (no break, continue, return or raise of its own)
                # hands each pass's names to the next and the last pass's to the code after the loop
                # (`for part in parents: owner = getattr(owner, part)`), as Python runs it
                straight = not any(isinstance(n, (ast.Break, ast.Continue, ast.Return, ast.Raise)) for n in _own_nodes(stmt.body))
                carried = dict(env)
                for element in iterable:
                    # (a name kept because it is loaded, alone or with its module: the pass for it runs where it is)
                    loaded = _loaded_name(element)
                    guards = ctx.guards + ((GuardCond(ModuleExists(loaded), f"{loaded} in sys.modules", stmt.lineno),) if loaded else ())
                    passed = {**(carried if straight else env), **bind(stmt.target, element)}
                    self._block(module, stmt.body, replace(ctx, guards=guards, env=dict(passed)))
                    carried = self._pass_bindings(module, stmt.body, passed) if straight else carried
                if straight and not any(_loaded_name(e) for e in iterable):
                    env.update({name: carried.get(name, OPAQUE) for node in stmt.body for name in assigned_in(node)})
            elif (defaulted := self._iterated_by_default(module, stmt, env, ctx)) is not None:
                # over what the environment's defaults make (`_parse(os.environ.get("X", DEFAULT)).items()`):
                # each pass where the deployment sets none of those variables, a run-time condition
                items, variables = defaulted
                test = " and ".join(f"{v} is not set" for v in variables)
                guard = GuardCond(Runtime(test), test, stmt.lineno)
                for element in items:
                    self._block(module, stmt.body, replace(ctx, guards=ctx.guards + (guard,), env={**env, **bind(stmt.target, element)}))
            else:  # not folded, or empty here (a registry functions fill later): the body once, its elements unknown
                guards = ctx.guards
                if iterable == [] and not self._may_be_filled(stmt.iter):
                    # empty, and nothing in the plugin adds to it: the body never runs
                    guards += (GuardCond(Const(False), f"{ast.unparse(stmt.iter)} is empty", stmt.lineno),)
                self._block(module, stmt.body, replace(ctx, guards=guards, env={**env, **{n: OPAQUE for n in assigned(stmt.target)}}))
            self._block(module, stmt.orelse, self._loop_else(module, stmt, ctx))
            if not ctx.functions and ctx.cls is None:
                # `for m, n in TABLE: globals()[n] = …` at module level: what each name holds after it
                env.update({key: self.module_constant(module, key, 0) for key in self.loop_global_names(module, stmt)})
            return
        if isinstance(stmt, (ast.With, ast.AsyncWith)):
            catches = ctx.catches
            for item in stmt.items:
                self.entered[id(item.context_expr)] = (stmt.lineno, stmt.end_lineno)
                self._expressions(module, item.context_expr, ctx)
                call = item.context_expr
                if isinstance(call, ast.Call) and (self.qualify(module, dotted(call.func), env) or "").endswith("suppress"):
                    catches += (Catch(frozenset(self.exception_names(module, call.args)), stmt.lineno),)
                elif isinstance(call, ast.Call) and (caught := self._wrapper_catches(self.qualify(module, dotted(call.func), env) if dotted(call.func) else None, "yield")):
                    catches += (Catch(caught, stmt.lineno),)  # a plugin @contextmanager whose `yield` a try handles
                elif isinstance(call, ast.Call) and (caught := self._exit_catches(self._constructed_class(module, call.func, ctx))):
                    catches += (Catch(caught, stmt.lineno),)  # a plugin class whose __exit__ returns true
                if item.optional_vars is not None:
                    env.update({n: OPAQUE for n in assigned(item.optional_vars)})
                    if isinstance(item.optional_vars, ast.Name) and isinstance(opened := self.const(module, call, env), PackageFile):
                        env[item.optional_vars.id] = opened  # `with files(pkg).joinpath("x.toml").open("rb") as f:`
            self._block(module, stmt.body, replace(ctx, catches=catches))
            suppressed = {name for catch in catches[len(ctx.catches):] for name in catch.exceptions}
            imports = tuple(upstream_imports(module, self.files[module][1], stmt.body))
            for name, path in imported_names(module, self.files[module][1], stmt.body).items():
                # `f = None` then `with suppress(ImportError): from sglang.x import f`: as the
                # try/except form, f is upstream's wherever it is used (tested `is not None`)
                if env.get(name, OPAQUE) is None and suppressed & IMPORT_ERRORS and imports:
                    self.none_fallbacks[(module, path)] = ImportsResolve(tuple(i for i in imports if path in (i[0], f"{i[0]}.{i[1]}")))
                env[name] = Named(path)
            return
        if isinstance(stmt, (ast.While, ast.Match)) or hasattr(stmt, "cases"):
            for child in ast.iter_child_nodes(stmt):
                if not isinstance(child, ast.stmt) and not type(child).__name__ == "match_case":
                    self._expressions(module, child, ctx)
            self._block(module, getattr(stmt, "body", []), ctx)
            self._block(module, getattr(stmt, "orelse", []), self._loop_else(module, stmt, ctx) if isinstance(stmt, ast.While) else ctx)
            owner = flag_owner(ctx)
            # the case a folded subject certainly matches first (`case {"module": str(path), …}:` of a
            # dict record): its captures hold the record's values, in its body and after the match
            subject, chosen = self.const(module, stmt.subject, env) if isinstance(stmt, ast.Match) else OPAQUE, None
            for case in stmt.cases if subject is not OPAQUE else ():
                bound = self.pattern_bindings(module, subject, case.pattern, env)
                if bound is None:
                    continue  # (certainly not this case: the next is tried)
                if isinstance(bound, dict) and (case.guard is None or self._truth_of(module, case.guard, {**env, **bound}, 0) is not False):
                    chosen = (case, bound)
                if chosen is not None or bound is OPAQUE:
                    break
            for case, test in zip(stmt.cases, case_tests(stmt)) if isinstance(stmt, ast.Match) else ():
                # a case's body runs under its pattern's test, as an `if`/`elif` chain would
                env.update({n: OPAQUE for n in pattern_names(case.pattern)})
                if chosen is not None and case is chosen[0]:
                    env.update(chosen[1])
                narrowed = self.narrowed_by(module, test, env) if test is not None else {}
                inner = self._narrow(env, narrowed, case.body) if narrowed else env
                if isinstance(stmt.subject, ast.Name) and isinstance(typed := inner.get(narrowed_key(stmt.subject.id)), Instance):
                    inner = {**inner, stmt.subject.id: typed}  # (the subject as the instance the pattern tested)
                for attr, name in class_pattern_captures(case.pattern):
                    # `case VllmConfig(scheduler_config=s):` s is the subject's attribute, read as on the narrowed subject
                    read = ast.copy_location(ast.Attribute(value=stmt.subject, attr=attr, ctx=ast.Load()), case.pattern)
                    env[name] = self.typed_value(module, read, inner, self.const(module, read, inner))
                if isinstance(case.pattern, ast.MatchAs) and case.pattern.name:  # `case x:` / `case P as x:` binds the subject
                    env[case.pattern.name] = self.const(module, stmt.subject, env)
                    if case.pattern.pattern is not None and (held := case_test(ast.Name(case.pattern.name, ast.Load()), case.pattern.pattern)) is not None:
                        narrowed.update(self.narrowed_by(module, held, env))  # `case FusedMoE() as moe:` moe is one too
                guards = ctx.guards if test is None else ctx.guards + (self._guard(module, test, env, owner=owner, local=ctx.local),)
                # (`case RowParallelLinear():` narrows the subject as `isinstance` does)
                self._block(module, case.body, replace(ctx, guards=guards, env=self._narrow(env, narrowed, case.body) if narrowed else env))
            if chosen is not None:
                env.update(chosen[1])
            return
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            self._import(module, stmt, ctx)
            return
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and ctx.cls is not None and ctx.in_class_body and not ctx.functions:
            # `experts: FusedMoE` in a class body (a dataclass's field, a declared attribute): what
            # `self.experts` holds is that class's instance, as for an annotated parameter (_held_class)
            annotated = [q for expression in annotation_classes(stmt.annotation) for q in self._annotated_classes(module, expression, env)]
            if len(annotated) == 1 and is_upstream(annotated[0]):
                ctx.cls.declared[stmt.target.id] = annotated[0]
        if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and stmt.value is not None:
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            self._expressions(module, stmt.value, ctx)
            for target in targets:
                for node in walk(target):
                    if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                        on_self = ctx.cls is not None and isinstance(node.value, ast.Name) and node.value.id == ctx.self_name
                        owner = ctx.cls.path if on_self else self.qualify(module, dotted(node.value), env)
                        self.attribute_writes.setdefault(node.attr, []).append((ctx.functions[-1] if ctx.functions else module, stmt.lineno, owner))
            for target in targets:
                self._assignment_patch(module, target, stmt, ctx)
                if isinstance(target, (ast.Attribute, ast.Subscript)):
                    self._expressions(module, target.value, ctx)
                if isinstance(target, ast.Subscript):
                    self._expressions(module, target.slice, ctx)
            if ctx.cls is not None and ctx.self_name:
                for target in targets:
                    for node in walk(target):  # `self.x = …` sets x; `self.x.data *= s`, `self.x[i] = …` read it
                        if (isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and isinstance(node.value, ast.Name)
                                and node.value.id == ctx.self_name):
                            ctx.cls.self_writes.setdefault(mangled(node.attr, ctx.cls.path.rpartition(".")[2]), []).append(
                                (ctx.functions[-1] if ctx.functions else "", stmt.lineno))
                            made = stmt.value if node is target and isinstance(stmt.value, ast.Call) else None
                            path = self.qualify(module, dotted(made.func), env) if made is not None else None
                            held = env.get(stmt.value.id) if node is target and isinstance(stmt.value, ast.Name) else None
                            if isinstance(held, Instance) and held.path:  # a name annotated with an upstream class
                                path = held.path
                            elif node is target and isinstance(stmt.value, ast.Constant) and stmt.value.value is None:
                                path = NONE_VALUE
                            ctx.cls.attribute_values.setdefault(node.attr, set()).add(path or "?")
            if isinstance(stmt, ast.AnnAssign) and stmt.annotation is not None and not ctx.functions and module not in self._future_annotations:
                self._expressions(module, stmt.annotation, ctx)
            for target in targets:
                if (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and ctx.self_name
                        and target.value.id == ctx.self_name and env.get("<self>") == ctx.self_name):
                    # what the method set on its instance, for its own later reads of it (Folding.const)
                    env[f"<self.{target.attr}>"] = OPAQUE if isinstance(stmt, ast.AugAssign) else self.const(module, stmt.value, env)
                if isinstance(target, ast.Name):
                    if isinstance(stmt, ast.AugAssign):  # `name += ".forward"`: name's value, then the operation (folded)
                        env[target.id] = self.const(module, ast.BinOp(left=ast.Name(target.id, ast.Load()), op=stmt.op, right=stmt.value), env)
                    elif isinstance(stmt, ast.AnnAssign) and is_upstream(annotated := self.qualify(module, annotation_class(stmt.annotation), env)):
                        env[target.id] = Instance(annotated)  # `x: ServerArgs = …`
                    elif is_type_test(stmt.value, ctx.local):  # `is_tuple = isinstance(out, tuple)` of what a call returned
                        env[target.id] = Condition(UNDECIDED)
                    elif ctx.functions and (isinstance(stmt.value, (ast.BoolOp, ast.Compare)) or (
                            isinstance(stmt.value, ast.UnaryOp) and isinstance(stmt.value.op, ast.Not))) and not (
                            isinstance(stmt.value, ast.BoolOp) and isinstance(self.const(module, stmt.value, env), Named)):
                        # (`m = sys.modules.get(A) or sys.modules.get(B)` holds a module, not a test)
                        # a test kept in a local (`fallback = x.dim() != 2 or …; if fallback:`) is
                        # that test, run-time data and all, as if written in the `if`
                        cond = self.condition(module, stmt.value, env, local=ctx.local)
                        env[target.id] = cond.value if isinstance(cond, Const) else Condition(cond)
                    else:
                        env[target.id] = self.const(module, stmt.value, env)
                        if env[target.id] is OPAQUE and (kept := self._self_chain(stmt.value, ctx)) is not None:
                            # `cc = self.cfg.compilation_config`: what the class keeps on self, a field of it
                            # (finish() names its class as for the chain read in place)
                            env[target.id] = Instance(None, f"{SELF_HELD}{ctx.cls.path}", kept)
                        env[target.id] = self.typed_value(module, stmt.value, env, env[target.id])
                        if env[target.id] is OPAQUE and (isinstance(stmt.value, ast.Compare) or isinstance(stmt.value, ast.UnaryOp) and isinstance(stmt.value.op, ast.Not)):
                            # `OLD = __version__ == "0.9.0"` at module level: the test, as a later `if OLD:` reads it
                            cond = self.condition(module, stmt.value, env)
                            env[target.id] = cond.value if isinstance(cond, Const) else OPAQUE if cond is UNDECIDED else Condition(cond)
                        if not ctx.functions and not ctx.in_class_body:  # a registry module-level calls fill
                            env[target.id] = self.filled(module, target.id, env[target.id])
                        if env[target.id] is OPAQUE and not ctx.functions and ctx.cls is None and self._typed_dict(f"{module}.{target.id}"):
                            env[target.id] = Named(f"{module}.{target.id}")  # `Spec = TypedDict("Spec", {…})`: a class, by its name
                        if ctx.in_class_body and isinstance(env[target.id], Named):
                            ctx.cls.class_names[target.id] = env[target.id].path
                        if target.id == "EntryClass" and not ctx.functions:
                            self._entry_class(module, stmt, ctx)
                elif isinstance(target, (ast.Tuple, ast.List)):  # `mod, _, attr = path.rpartition(".")`: each its element
                    env.update(bind(target, self.const(module, stmt.value, env)))
                else:
                    env.update({n: OPAQUE for n in assigned(target)})
            return
        if isinstance(stmt, ast.Delete):
            # `del X[k]` raises KeyError when upstream's X no longer holds k, as `X[k]` and `X.pop(k)` do
            for target in stmt.targets:
                if isinstance(target, ast.Subscript):
                    self._registry_key(module, target, ctx)
            return
        if isinstance(stmt, ast.Return):
            self._named_class_return(module, stmt, ctx)
            self._returned_names(module, stmt, ctx)
        for child in ast.iter_child_nodes(stmt):
            if not isinstance(child, ast.stmt):
                self._expressions(module, child, ctx)

    def _returned_names(self, module: str, stmt: ast.Return, ctx: Context) -> None:
        """Record in PluginClass.returns what a method returns by name (a class, not an instance):
        each branch of a conditional expression, a local bound to one, a class attribute read
        through `self`/`cls`."""
        if ctx.method is None or ctx.cls is None or stmt.value is None or ctx.functions[-1] != f"{ctx.cls.path}.{ctx.method.name}":
            return
        values, paths = [stmt.value], set()
        while values:
            value = values.pop()
            if isinstance(value, ast.IfExp):
                values += [value.body, value.orelse]
                continue
            if isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name) and value.value.id == ctx.self_name:
                if value.attr in ctx.cls.class_names:  # `pool_cls = XPool` in the class body
                    paths.add(ctx.cls.class_names[value.attr])
                else:  # (a method of the instance, bound, where the class defines one by that name: _property_callables)
                    ctx.cls.returned_methods.setdefault(ctx.method.name, set()).add(value.attr)
                continue
            folded = self.const(module, value, ctx.env) if isinstance(value, (ast.Name, ast.Attribute)) else None
            path = folded.path if isinstance(folded, Named) else None
            if path is not None:
                paths.add(path)
        if paths:
            ctx.cls.returns.setdefault(ctx.method.name, set()).update(paths)

    def _wrapper_catches(self, path: str | None, around: str) -> frozenset[str]:
        """The exceptions a plugin wrapper handles around the code it runs: for `around` "yield", a
        `@contextlib.contextmanager` function whose `yield` sits in a `try` (the block's exception
        is thrown in at the yield: the contextlib docs); for "call", a decorator whose returned
        function calls the decorated one (its first parameter) in a `try`; for "factory", a
        decorator factory (`@optional("x")`) returning such a decorator. The names its handlers
        that do not re-raise catch; empty for anything else."""
        found = self._plugin_function(path) if path and not is_upstream(path) else None
        if found is None:
            return frozenset()
        home, function = found
        if around == "factory":
            function, around = returned_function(function), "call"
            if function is None:
                return frozenset()
        if around == "yield":
            if not any((self.qualify(home, dotted(d)) or "").endswith("contextmanager") for d in function.decorator_list):
                return frozenset()
            scope, runs = function, lambda node: isinstance(node, (ast.Yield, ast.YieldFrom))
        else:
            params = function_params(function.args)
            scope = returned_function(function)
            if scope is None or not params:
                return frozenset()
            runs = lambda node: isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == params[0].name  # noqa: E731
        caught: set[str] = set()
        for stmt in walk(scope):
            if isinstance(stmt, ast.Try) and any(runs(n) for s in stmt.body for n in walk(s)):
                for handler in stmt.handlers:
                    if not always_raises(handler.body):
                        caught |= self.exception_names(home, [handler.type]) if handler.type is not None else {"*"}
        return frozenset(caught)

    def _exit_catches(self, path: str | None, depth: int = 0) -> frozenset[str]:
        """The exceptions a `with` block's context manager, an instance of the plugin class
        `path`, swallows: its `__exit__` (its own or a plugin base's) returning true does (the
        data model's object.__exit__). A `return` of a true constant catches what the `if`
        tests around it name (issubclass(exc_type, E), isinstance(exc, E), exc_type is E,
        exc_type in (E, …)), everything when they name none; a `return` of such a test what it
        names; a class constant (`self.SWALLOWED`) is read in the class body. Empty otherwise."""
        found = self._plugin_definition(path) if path and not is_upstream(path) and depth < 5 else None
        if found is None or not isinstance(found[1], ast.ClassDef):
            return frozenset()
        home, cls = found
        method = next((n for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name in ("__exit__", "__aexit__")), None)
        if method is None:
            return frozenset().union(*(self._exit_catches(self.qualify(home, dotted(b)), depth + 1) for b in cls.bases if dotted(b)))
        params = [p.name for p in function_params(method.args)]
        receiver, errors = (params[0] if params else None), set(params[1:3])
        constants = {t.id: s.value for s in cls.body if isinstance(s, ast.Assign) for t in s.targets if isinstance(t, ast.Name)}

        def named(test: ast.expr) -> set[str]:  # the exception classes a test of the exception names
            classes = []
            for node in walk(test):
                if (isinstance(node, ast.Call) and dotted(node.func) in ("issubclass", "isinstance") and len(node.args) == 2
                        and dotted(node.args[0]) in errors):
                    classes.append(node.args[1])
                elif isinstance(node, ast.Compare) and dotted(node.left) in errors and len(node.ops) == 1 and isinstance(node.ops[0], (ast.Is, ast.Eq, ast.In)):
                    classes.append(node.comparators[0])
            kept = []
            for node in classes:  # `self.SWALLOWED` / `cls.SWALLOWED` / `type(self).SWALLOWED`: the class constant
                owner = node.value.args[0] if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Call) and dotted(node.value.func) == "type" and node.value.args else getattr(node, "value", None)
                kept.append(constants.get(node.attr) if isinstance(node, ast.Attribute) and dotted(owner) == receiver else node)
            return set() if None in kept else self.exception_names(home, kept)

        caught: set[str] = set()

        def visit(body: list[ast.stmt], tests: tuple[ast.expr, ...]) -> None:
            for stmt in body:
                if isinstance(stmt, ast.If):
                    visit(stmt.body, tests + (stmt.test,))
                    visit(stmt.orelse, tests)
                elif isinstance(stmt, ast.Return) and isinstance(stmt.value, ast.Constant) and stmt.value.value:
                    names = set().union(*(named(t) for t in tests))
                    caught.update(names or ({"*"} if not tests else set()))
                elif isinstance(stmt, ast.Return) and stmt.value is not None and not isinstance(stmt.value, ast.Constant):
                    caught.update(named(stmt.value))
                elif isinstance(stmt, (ast.With, ast.Try)):
                    visit(stmt.body, tests)

        visit(method.body, ())
        return frozenset(caught)

    def exception_names(self, module: str, nodes, depth: int = 0) -> set[str]:
        """The exception class names `except <nodes>` (or `suppress(*nodes)`) catches: names and
        dotted names as written, and a module constant holding a tuple of them (`except
        _OPTIONAL_ERRORS:` with `_OPTIONAL_ERRORS = (ImportError, AttributeError)`, also imported
        from another plugin module)."""
        names: set[str] = set()
        for node in nodes:
            for element in node.elts if isinstance(node, (ast.Tuple, ast.List)) else [node]:
                element = element.value if isinstance(element, ast.Starred) else element  # suppress(*ERRORS)
                held = self._module_value_node(module, element.id) if isinstance(element, ast.Name) and depth < 5 else None
                names |= self.exception_names(*held, depth + 1) if held is not None else exception_names([element])
        return names

    def _module_value_node(self, module: str, name: str) -> tuple[str, list[ast.expr]] | None:
        """(its module, [the expression]) of the last module-level `name = (…)` / `[…]` binding of
        `name` in `module` or the plugin module it imports it from; None otherwise."""
        for _ in range(5):
            tree = self.tree(module)
            bound = [s.value for s in tree.body if isinstance(s, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in s.targets)] if tree else []
            if bound:
                return (module, [bound[-1]]) if isinstance(bound[-1], (ast.Tuple, ast.List)) else None
            binding = self.table(module).names.get(name)
            if binding is None or binding.kind != "from" or binding.target.split(":")[0] not in self.files:
                return None
            module, name = binding.target.split(":")
        return None

    def _raised_names(self, module: str, body: list[ast.stmt]) -> frozenset[str]:
        """The exception class names a handler body ending in `raise X(…)` (`from e` or not)
        raises: X's and its plugin bases' (an enclosing `except` of any catches it); empty for
        a bare `raise` or anything else."""
        last = body[-1] if body else None
        raised = last.exc.func if isinstance(last, ast.Raise) and isinstance(last.exc, ast.Call) else last.exc if isinstance(last, ast.Raise) else None
        names, queue = set(), [self.qualify(module, dotted(raised)) or dotted(raised)] if raised is not None and dotted(raised) else []
        while queue and len(names) < 20:
            path = queue.pop()
            names.add(path.rsplit(".", 1)[-1])
            found = self._plugin_definition(path) if not is_upstream(path) else None
            if found is not None and isinstance(found[1], ast.ClassDef):
                queue += [self.qualify(found[0], dotted(b)) or dotted(b) for b in found[1].bases if dotted(b)]
        return frozenset(names)

    def _try(self, module: str, stmt: ast.stmt, ctx: Context) -> None:
        before = dict(ctx.env)
        handled: set[str] = set()
        translates: set[str] = set()
        for handler in stmt.handlers:
            if (always_raises(handler.body) and handler.type is not None
                    and any(c.handles(raised := self._raised_names(module, handler.body)) for c in ctx.catches)):
                # `except ImportError as e: raise UpstreamMissing(…) from e` inside a try that
                # catches UpstreamMissing: the error is turned into one the enclosing handler takes
                handled |= self.exception_names(module, [handler.type])
                translates |= raised
                continue
            if always_raises(handler.body) or self._reraises_upstream(module, stmt, handler) or self._reraises_here(module, handler, ctx.env):
                continue  # it re-raises (`raise ImportError("…") from exc`): the error still leaves the try
            handled |= self.exception_names(module, [handler.type]) if handler.type is not None else {"*"}
        body_ctx = replace(ctx, catches=ctx.catches + (Catch(frozenset(handled), stmt.lineno, frozenset(translates)),)) if stmt.handlers else ctx
        self._block(module, stmt.body, body_ctx)
        imports = tuple(upstream_imports(module, self.files[module][1], stmt.body))
        catches_import = bool(handled & IMPORT_ERRORS) or "*" in handled
        succeeded: Cond = ImportsResolve(imports) if imports and catches_import else UNDECIDED
        body_text = f"the imports at line {stmt.lineno} succeed" if imports else f"the try at line {stmt.lineno} succeeds"
        # a body that only reads run-time data (`kernel = self._kernels[x.dtype]`: no call but of
        # that data's methods) fails for some inputs: its handlers run under a run-time condition
        looked_up = [s.value for s in stmt.body if isinstance(s, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Expr)) and s.value is not None]
        data_only = not imports and ctx.local and len(looked_up) == len(stmt.body) and all(runtime_test(v, ctx.local) for v in looked_up)
        for handler in stmt.handlers:
            guard = GuardCond(succeeded if isinstance(succeeded, Undecided) else Not(succeeded), f"not ({body_text})", handler.lineno)
            if data_only and (handler.type is None or {n.rpartition(".")[2] for n in self.exception_names(module, [handler.type])} & _DATA_ERRORS):
                raised = ast.unparse(handler.type) if handler.type is not None else "an exception"
                text = f"{'; '.join(ast.unparse(v) for v in looked_up)} raises {raised}"
                guard = GuardCond(Runtime(text), text, handler.lineno)
            if imports and handler.type is not None and self.exception_names(module, [handler.type]) == {"ModuleNotFoundError"}:
                # only a missing module raises ModuleNotFoundError: a missing name in a module that is
                # there raises plain ImportError, which this handler lets through
                there = tuple(ModuleExists(m) for m in dict.fromkeys(i[0] for i in imports))
                guard = GuardCond(Not(there[0] if len(there) == 1 else AllOf(there)), f"a module the imports at line {stmt.lineno} name is missing", handler.lineno)
            self._block(module, handler.body, replace(ctx, guards=ctx.guards + (guard,)))
        if stmt.orelse:  # runs only after the whole body did: what the body imported or bound once is bound there
            bound = {**ctx.env, **{name: Named(path) for name, path in imported_names(module, self.files[module][1], stmt.body).items()},
                     **self._bound_once(module, stmt.body, ctx.env, ran=True)}
            # under "the imports resolve" where that is the question; otherwise as the code after a
            # try whose handlers leave: it runs whenever the body ran through
            guards = ctx.guards if isinstance(succeeded, Undecided) else ctx.guards + (GuardCond(succeeded, body_text, stmt.lineno),)
            # and only where what the body looked up by name (`sys.modules[M]`, a handler taking its errors) was there
            found = [path for path, needs in self._bound_lookups(module, stmt.body, ctx)
                     if any(h.type is None or all(self.exception_names(module, [h.type]) & e for e in needs) for h in stmt.handlers)]
            self._block(module, stmt.orelse, self._had(replace(ctx, env=bound, guards=guards), found, f"the try at line {stmt.lineno}", stmt.lineno))
        self._block(module, stmt.finalbody, ctx)
        if imports and catches_import:
            # HAS_X = True in the body, HAS_X = False in a handler: HAS_X means "the imports resolve"
            for name in flag_names(stmt):
                ctx.env[name] = Condition(succeeded)
        # `try: from sglang.x import f` / `except ImportError: f = None`: f is the upstream
        # name wherever it is used (guarded by `f is not None`), not an unknown value
        fallbacks = {name for handler in stmt.handlers for name in none_assigned(handler.body)}
        others = {name for handler in stmt.handlers for name in assigned_in_all(handler.body)} - fallbacks
        # `except ImportError: def f(...): …` (or a lambda, a plugin value): f is upstream's where
        # the import resolves, the plugin's stand-in elsewhere
        stand_ins = {name: node.lineno for handler in stmt.handlers for node in handler.body for name in assigned_in(node)
                     if name in others and not isinstance(node, (ast.Import, ast.ImportFrom))
                     and not (isinstance(node, ast.Assign) and is_upstream(self.qualify(module, dotted(node.value), ctx.env)))}
        # `try: from a import X` / `except ImportError: from b import X` (a compat import): X is a's where that
        # import resolves on this release, else b's
        fallback_imports = [imported_names(module, self.files[module][1], h.body) for h in stmt.handlers if not always_raises(h.body)]
        for name, path in imported_names(module, self.files[module][1], stmt.body).items():
            if name not in others:
                ctx.env[name] = Named(path)
            elif catches_import and fallback_imports and all(name in found for found in fallback_imports):
                ctx.env[name] = Named(path if not is_upstream(path) or self.index.resolve(path).ok else fallback_imports[0][name])
            elif name in stand_ins and catches_import and imports:
                ctx.env[name] = Named(path)
                resolves = ImportsResolve(tuple(i for i in imports if path in (i[0], f"{i[0]}.{i[1]}")))
                self.stand_ins.setdefault(module, []).append((path, GuardCond(
                    resolves, f"the import at line {stmt.lineno} resolves (else {name} is the plugin's own, line {stand_ins[name]})", stmt.lineno)))
            if name in fallbacks and catches_import:  # `name is not None` means "the import resolved"
                self.none_fallbacks[(module, path)] = ImportsResolve(tuple(i for i in imports if path in (i[0], f"{i[0]}.{i[1]}")))
        # after the try, a name the body bound once by `name = value` (and no handler rebinds)
        # holds that value where the body ran: `try: m = sys.modules["sglang.x"] except KeyError:
        # return` then `m.f = g` patches sglang.x
        handled_names = {name for handler in stmt.handlers for node in handler.body for name in assigned_in(node)}
        leave = bool(stmt.handlers) and all(always_raises(h.body) or h.body and isinstance(h.body[-1], (ast.Return, ast.Raise, ast.Continue, ast.Break))
                                            for h in stmt.handlers)
        ctx.env.update({name: value for name, value in self._bound_once(module, stmt.body, ctx.env, ran=leave).items() if name not in handled_names})
        unbound = {name for node in stmt.body for name in assigned_in(node) if name not in handled_names and before.get(name, OPAQUE) is None}
        for name in fallbacks | unbound if catches_import else ():
            # `try: m = importlib.import_module("sglang.x")` / `except ImportError: m = None` (or
            # `m = None` before and a handler that passes): as the `from` form, upstream's module
            # (None where the import fails)
            if (loaded := self._caught_module_import(module, stmt, name, 0)) is not OPAQUE:
                ctx.env[name] = loaded
        for node in stmt.body:
            for name in assigned_in(node):
                ctx.env.setdefault(name, OPAQUE)

    def _reraises_upstream(self, module: str, stmt: ast.Try, handler: ast.ExceptHandler) -> bool:
        """Whether `except E as exc:` re-raises every failure of the try's upstream imports: its
        body starts with `if <test of exc.name>: raise` and the test holds for each module name the
        ImportError may carry (Python sets `name` to the module not found: here an upstream
        module, a prefix of one the body imports, below the top package). A test that does not fold
        for some name, or that reads anything but exc.name and constants, decides nothing (False)."""
        first = handler.body[0] if handler.body else None
        if (handler.name is None or not isinstance(first, ast.If) or first.orelse
                or not (len(first.body) == 1 and isinstance(first.body[0], ast.Raise))):
            return False
        raised = first.body[0].exc
        if raised is not None and not (isinstance(raised, ast.Name) and raised.id == handler.name):
            return False  # `raise Other(…)` is another error; judged as it always was
        imported = [path for path, _ in upstream_imports(module, self.files[module][1], stmt.body)]
        names = {".".join(path.split(".")[:n]) for path in imported for n in range(2, path.count(".") + 2)}
        return bool(names) and all(self._holds_for_name(module, first.test, handler.name, name) for name in names)

    def _reraises_here(self, module: str, handler: ast.ExceptHandler, env: dict) -> bool:
        """Whether the handler re-raises on this plugin's settings: a statement of its body (after
        calls that only log) is `if <test>: raise` (bare, or the caught error) and the test folds
        to true (`if cfg.strict: raise`, `strict` a field default of True). A test that does not
        fold decides nothing (False: the handler is read as catching)."""
        for stmt in handler.body:
            if isinstance(stmt, ast.Expr) and isinstance(stmt.value, (ast.Call, ast.Constant)):
                continue
            if not (isinstance(stmt, ast.If) and len(stmt.body) == 1 and isinstance(raised := stmt.body[0], ast.Raise)
                    and (raised.exc is None or isinstance(raised.exc, ast.Name) and raised.exc.id == handler.name)):
                return False
            if self._truth_of(module, stmt.test, dict(env), 0) is True:
                return True
        return False

    def _holds_for_name(self, module: str, test: ast.expr, exc: str, name: str) -> bool:
        """Whether `test` folds to true with `<exc>.name` equal to `name` (the error as a record
        whose `name` is that module; Folding._truth_of): False where it does not fold."""
        error = Record("ModuleNotFoundError", (("name", name),))
        return self._truth_of(module, test, {exc: error}, 0) is True

    def _bound_once(self, module: str, body: list[ast.stmt], env: dict, ran: bool = False) -> dict:
        """The names `body` binds once, by a plain `name = value` whose value is a module, class or
        function by name (Named), and that `env` does not hold yet: what they hold once it ran.
        `ran`: what follows runs only when the whole body did (a try's `else:`, or after a try
        whose every handler leaves): every value that folds, also unpacked (`owner, attr =
        _split(target)`), each read with the names the body bound before it."""
        counts: dict[str, int] = {}
        for node in body:
            for name in assigned_in(node):
                counts[name] = counts.get(name, 0) + 1
        found: dict = {}
        for node in body:
            if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
                continue
            if ran and isinstance(node.targets[0], (ast.Name, ast.Tuple, ast.List)):
                bound = bind(node.targets[0], self.const(module, node.value, {**env, **found}))
                found.update({name: value for name, value in bound.items() if counts.get(name) == 1 and value is not OPAQUE})
            elif isinstance(node.targets[0], ast.Name):
                name = node.targets[0].id
                if counts[name] == 1 and env.get(name, OPAQUE) is OPAQUE and isinstance(value := self.const(module, node.value, env), Named):
                    found[name] = value
        return found

    def _function(self, module: str, node: ast.FunctionDef | ast.AsyncFunctionDef, ctx: Context) -> None:
        for decorator in node.decorator_list:
            self.entered[id(decorator)] = (node.lineno, node.end_lineno)
            self._expressions(module, decorator, ctx)
            self._decorator(module, node, decorator, ctx)
        if module not in self._future_annotations:
            for arg in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs, node.args.vararg, node.args.kwarg]:
                if arg is not None and arg.annotation is not None:
                    self._expressions(module, arg.annotation, ctx)
            if node.returns is not None:
                self._expressions(module, node.returns, ctx)
        for default in [*node.args.defaults, *(d for d in node.args.kw_defaults if d is not None)]:
            self._expressions(module, default, ctx)
        params = function_params(node.args)
        # a name bound anywhere in the body is local for all of it, shadowing module names
        names = local_names(node) | {p.name for p in params}
        local = {**ctx.env, **{name: OPAQUE for name in names}}
        path = self._function_path(module, node, ctx)
        results, free = call_results(node, names | ctx.local)
        inner = replace(ctx, env=local, functions=ctx.functions + (path,), in_class_body=False,
                        local=ctx.local | names | {returned_marker(name) for name in results} | {free_marker(name) for name in free})
        for decorator in node.decorator_list:  # `@skip_if_absent`: its wrapper runs the body inside its own try
            factory = isinstance(decorator, ast.Call)
            named = dotted(decorator.func if factory else decorator)
            if named and (caught := self._wrapper_catches(self.qualify(module, named, ctx.env), "factory" if factory else "call")):
                inner = replace(inner, catches=inner.catches + (Catch(caught, node.lineno),))
        if ctx.in_class_body:
            method = ctx.cls.methods.get(node.name)
            if method is not None and method.line == node.lineno:
                # (`__init_subclass__(cls)` runs for each deriving class, never the class itself:
                # cls is a parameter its class statements bind, helper_bindings)
                self_name = params[0].name if params and method.bound and node.name != "__init_subclass__" else None
                inner = replace(inner, self_name=self_name, method=method)
                if self_name:  # `self.TABLE` of a class constant folds (Folding.const)
                    local.update({"<self>": self_name, "<class>": ctx.cls.path})
        for arg in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]:
            if arg.arg == inner.self_name:
                continue
            annotated = annotation_classes(arg.annotation)
            if not annotated:
                local[arg.arg] = Instance(None, path, arg.arg)
            else:
                # an annotation is read as a type checker reads it: names only `if TYPE_CHECKING:`
                # imports count; a TypeVar stands for its bound or its constraints; a union for each
                qualified = [q for expression in annotated for q in self._annotated_classes(module, expression, ctx.env)]
                if qualified and all(is_upstream(q) for q in qualified):
                    local[arg.arg] = Instance(qualified[0], alternatives=tuple(dict.fromkeys(qualified[1:])))
                elif len(annotated) > 1:  # a union not all upstream's: as if unannotated
                    local[arg.arg] = Instance(None, path, arg.arg)
        self._block(module, node.body, inner)

    def _annotated_classes(self, module: str, annotated: str, env: dict) -> list[str | None]:
        """The dotted paths one annotation expression of `module` names: the class, or the bound
        or constraints of a module-level `T = TypeVar("T", bound=C)` / `TypeVar("T", A, B)` (the
        typing docs); [None] where it names nothing the scan knows."""
        head, _, rest = annotated.partition(".")
        hinted = self._type_checking_names(module).get(head) if head not in env and head not in self.table(module).names else None
        if hinted:
            return [f"{hinted}.{rest}" if rest else hinted]
        if not rest and (variable := self._type_variable(module, head)) is not None:
            return [self.qualify(module, c, env) for c in variable] or [None]
        return [self.qualify(module, annotated, env)]

    def _type_variable(self, module: str, name: str) -> list[str] | None:
        """The classes (source expressions) a module-level `name = TypeVar(...)` stands for: its
        `bound=`, else its constraints; None where `name` is no TypeVar."""
        tree = self.tree(module)
        for stmt in tree.body if tree else []:
            if (isinstance(stmt, ast.Assign) and [dotted(t) for t in stmt.targets] == [name] and isinstance(stmt.value, ast.Call)
                    and (self.qualify(module, dotted(stmt.value.func) or "", {}) or "") in ("typing.TypeVar", "typing_extensions.TypeVar")):
                bound = next((k.value for k in stmt.value.keywords if k.arg == "bound"), None)
                found = [annotation_class(bound)] if bound is not None else [annotation_class(a) for a in stmt.value.args[1:]]
                return [c for c in found if c] if all(found) else []
        return None

    def _function_path(self, module: str, node: ast.AST, ctx: Context) -> str:
        if ctx.in_class_body:
            return f"{ctx.cls.path}.{node.name}"
        if ctx.functions:
            return f"{ctx.functions[-1]}.{node.name}"
        return f"{module}.{node.name}"

    def _class(self, module: str, node: ast.ClassDef, ctx: Context) -> None:
        path = self._function_path(module, node, ctx)
        for decorator in node.decorator_list:
            self._expressions(module, decorator, ctx)
            self._decorator(module, node, decorator, ctx)
            applied = self.qualify(module, dotted(decorator), ctx.env) if isinstance(decorator, (ast.Name, ast.Attribute)) else None
            if applied and not is_upstream(applied):  # `@own_deco class C`: own_deco(C) runs (helper_bindings)
                self.decorations.setdefault(applied, []).append((path, f"{self.relfile(module)}:{node.lineno}"))
        for base in node.bases:
            self._expressions(module, base, ctx)
        bases, base_choices = [], []
        for base in node.bases:
            qualified = self.qualify(module, dotted(base), ctx.env)
            chosen = self.release_binding(module, base.id) if isinstance(base, ast.Name) and base.id not in ctx.env else None
            if chosen is not None:
                qualified = chosen  # a base an `if` on this release picks (its last binding elsewhere)
            if isinstance(base, (ast.Subscript, ast.Call)) and isinstance(held := self.const(module, base, ctx.env), Named):
                # `_DEVICE_MIXINS[__soc_version__]`, `MIXINS.get(SOC)`: the class a table holds under a folded key
                qualified = held.path
            if (chosen is None and not is_upstream(qualified) and qualified not in self.scan.classes
                    and (choices := self.class_choices(module, base, ctx.env))):
                # `A if os.environ.get("SIM") else B` (or a name or helper giving that): a run derives
                # from one of them, so each is a base the class may have
                options = choices
                base_choices += [tuple(choices)] if len(choices) > 1 else []
            else:
                options = [qualified or f"?{ast.unparse(base)}"]
            for qualified in options:
                bases.append(qualified)
                if is_upstream(qualified):  # the class statement needs a class there (not a function)
                    self._dependency("reference", qualified, module, base, ctx, expression=ast.unparse(base), how=CLASS_USE_BASE)
        # (a replacement registration, `@CustomOp.register_oot(name=…)`, hands the class back as it is)
        registry = profile().replacements
        rewriting = [d for d in node.decorator_list if registry is None or (dotted(d.func if isinstance(d, ast.Call) else d) or "").rpartition(".")[2] != registry.method]
        cls = PluginClass(path, module, self.relfile(module), node.lineno, bases, decorated=bool(rewriting or node.keywords), base_choices=base_choices)
        self.scan.classes[path] = cls
        # (a private `__x` is stored as `_Class__x`); a def in a branch of a class-body `if` or
        # `try` is a method where that branch runs (the first one met, unless a test of this
        # release decides its branch does not run)
        for stmt in self._class_statements(module, node.body):
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                decorators = tuple(filter(None, (dotted(d) for d in stmt.decorator_list)))
                name = mangled(stmt.name, node.name)
                cls.methods.setdefault(name, MethodDecl(name, stmt.lineno, function_params(stmt.args), decorators, raises_only(stmt),
                                                        forwards=stmt.name == "__init__" and forwards_to_super(stmt)))
                if stmt.name in ("__getattr__", "__getattribute__"):
                    cls.dynamic = True
            elif isinstance(stmt, ast.Assign) and all(isinstance(t, ast.Name) for t in stmt.targets):
                # (`a = b = classmethod(f)`: each target is bound to the one value)
                for target in stmt.targets:
                    name = mangled(target.id, node.name)
                    assigned_method = self._assigned_method(module, name, stmt.value, stmt.lineno, ctx, cls.methods)
                    if assigned_method is not None:
                        cls.methods.setdefault(name, assigned_method)
            for name in assigned_in(stmt):
                cls.bound_otherwise.add(mangled(name, node.name))
            self._set_name_site(module, path, stmt, ctx)
        self._registrations(module, node, cls, ctx)
        self._instance_methods(module, node, cls, ctx)
        # a class body's own names are not visible inside its methods
        self._block(module, node.body, replace(ctx, cls=cls, in_class_body=True, env=dict(ctx.env), self_name=None, method=None))
        if ctx.cls is None:  # at module level, or a function's local class (`mod.X = Local` then binds it)
            ctx.env[node.name] = Named(path)
        elif ctx.in_class_body:  # a class nested in a class body: a name of that body (`class Platform(Device, …)` after it)
            ctx.env[node.name] = Named(path)
            ctx.cls.class_names[node.name] = path

    def _registrations(self, module: str, node: ast.ClassDef, cls: PluginClass, ctx: Context) -> None:
        """What each `functools.singledispatchmethod` method of a class body registers there, kept
        on its MethodDecl.dispatch: `@m.register` over a def whose first parameter after self is
        annotated (`A | B` and `Union[A, B]` register each), `@m.register(T)` over a def, and the
        statements `m.register(T, f)`, `m.register(f)` and `m.register(T)(f)` where f is a def of
        the body (the last one so named before the statement) or a plugin function (the functools
        docs, singledispatchmethod.register)."""
        dispatching = {name for name, method in cls.methods.items()
                       if any(self.qualify(module, d, ctx.env) == "functools.singledispatchmethod" for d in method.decorators)}
        if not dispatching:
            return
        found: dict[str, list[Registered]] = {name: [] for name in dispatching}
        defined: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}

        def register(name: str, named: ast.expr | None, function: ast.expr | ast.FunctionDef | ast.AsyncFunctionDef) -> None:
            if isinstance(function, ast.Name) and function.id in defined:
                function = defined[function.id]
            elif isinstance(function, (ast.Name, ast.Attribute)):
                plugin = self._plugin_definition(self.qualify(module, dotted(function) or "", ctx.env) or "")
                function = plugin[1] if plugin is not None else None
            if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                return
            positional = [*function.args.posonlyargs, *function.args.args]
            named = named if named is not None else positional[1].annotation if len(positional) > 1 else None
            for text in annotation_classes(named):
                found[name].append(Registered(text, function_params(function.args), raises_only(function), function.lineno))

        def registrar(expression: ast.expr) -> str | None:  # `m.register` of a dispatching m
            return expression.value.id if (isinstance(expression, ast.Attribute) and expression.attr == "register"
                                           and isinstance(expression.value, ast.Name) and expression.value.id in dispatching) else None

        for stmt in self._class_statements(module, node.body):
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for decorator in stmt.decorator_list:
                    if (name := registrar(decorator)) is not None:
                        register(name, None, stmt)
                    elif isinstance(decorator, ast.Call) and (name := registrar(decorator.func)) is not None and decorator.args:
                        register(name, decorator.args[0], stmt)
                defined[stmt.name] = stmt
            elif isinstance(stmt, (ast.Expr, ast.Assign)) and isinstance(call := stmt.value, ast.Call) and call.args:
                if (name := registrar(call.func)) is not None:
                    register(name, call.args[0] if len(call.args) == 2 else None, call.args[-1])
                elif (isinstance(call.func, ast.Call) and (name := registrar(call.func.func)) is not None
                      and len(call.func.args) == 1 and len(call.args) == 1):
                    register(name, call.func.args[0], call.args[0])
        for name, registered in found.items():
            cls.methods[name] = replace(cls.methods[name], dispatch=tuple(registered))

    def _iterated_by_default(self, module: str, loop: ast.For | ast.AsyncFor, env: dict, ctx: Context) -> tuple[list, tuple[str, ...]] | None:
        """(the elements a function's loop goes over, the environment variables whose defaults
        make them) where its iterable does not fold but does with every environment read the
        function makes giving its default (Folding.defaults_of; the function's locals re-run up
        to the loop, _locals_at); None otherwise (no such read, nothing folds, 256+ elements)."""
        definition = self._definition(module, ctx.functions[-1], loop.lineno) if ctx.functions else None
        if self._reads_defaults is None:  # (whether any plugin module reads the environment with a default: once)
            self._reads_defaults = any(isinstance(n, ast.Call) and len(n.args) + len(n.keywords) >= 2 and (
                self.qualify(m, dotted(n.func) or "") or "") in ("os.environ.get", "os.getenv") for m in self.files if (tree := self.tree(m)) is not None for n in walk(tree))
        if definition is None or not self._reads_defaults:
            return None
        held, variables = self.defaults_of(lambda: self.iterated(self.const(
            module, loop.iter, self._locals_at(module, definition, {k: v for k, v in env.items() if not k.startswith("<self.")}, loop.lineno))))
        return (held, variables) if isinstance(held, list) and held and variables and len(held) <= 256 else None

    def _loop_else(self, module: str, loop: ast.For | ast.AsyncFor | ast.While, ctx: Context) -> Context:
        """The context of a loop's `else:` clause, which runs only when the loop ends without a
        `break` (the Python reference, "The for statement"): under the negation of each test of
        an `if T: … break` among the body's statements, its loop names unknown (run-time data
        where T reads it: `if x.dtype == dtype: break`)."""
        env = {**ctx.env, **{n: OPAQUE for n in (assigned(loop.target) if isinstance(loop, (ast.For, ast.AsyncFor)) else ())}}
        tests = [stmt.test for stmt in loop.body if isinstance(stmt, ast.If) and stmt.body and isinstance(stmt.body[-1], ast.Break)]
        guards = tuple(self._guard(module, test, env, negate=True, local=ctx.local) for test in tests)
        return replace(ctx, guards=ctx.guards + guards) if guards else ctx

    def _pass_bindings(self, module: str, body: list[ast.stmt], env: dict) -> dict:
        """`env` after one pass of a loop body: its top-level `name = value` statements folded in
        order (`owner = getattr(owner, part)`), any other name it binds unknown."""
        env = dict(env)
        for stmt in body:
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], (ast.Name, ast.Tuple, ast.List)):
                env.update(bind(stmt.targets[0], self.const(module, stmt.value, env)))
            else:
                env.update({name: OPAQUE for name in assigned_in(stmt)})
        return env

    @staticmethod
    def _self_chain(node: ast.expr, ctx: Context) -> str | None:
        """"a.b" of `self.a.b` read in a method of a plugin class (`self` its receiver), else None."""
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if ctx.cls is None or not ctx.self_name or not parts or not (isinstance(node, ast.Name) and node.id == ctx.self_name):
            return None
        return ".".join(reversed(parts))

    def _class_statements(self, module: str, body: list[ast.stmt]) -> list[ast.stmt]:
        """The statements a class body runs in its own scope (syntax.module_level), less those in
        a branch of an `if` whose test this release decides the other way (_on_this_release)."""
        found, pending = [], list(body)
        while pending:
            stmt = pending.pop(0)
            found.append(stmt)
            if isinstance(stmt, ast.If):
                taken = self._on_this_release(module, stmt.test, {}, 0)
                pending[:0] = stmt.body if taken is True else stmt.orelse if taken is False else [*stmt.body, *stmt.orelse]
            elif not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                pending[:0] = [*(getattr(stmt, "body", None) or []), *(s for h in getattr(stmt, "handlers", None) or [] for s in h.body),
                               *(getattr(stmt, "orelse", None) or []), *(getattr(stmt, "finalbody", None) or [])]
        return found

    def _type_built(self, module: str, stmt: ast.stmt, ctx: Context) -> tuple[ast.ClassDef, dict] | None:
        """`X = type("X", (Mixin, Base), {"attr": v, "method": f})` at module level, or `X =
        make(args)` of a plugin function of the same module whose one `return` is such a call:
        the class statement it stands for (Python's three-argument type(): the bases and the
        namespace's entries as the class body), named X as the module binds it, entry values
        folded where the function's parameters decide them; with the names its bases are read
        by (`(*mixins, Base)` of a parameter: each class it holds). None for any other statement."""
        if ctx.functions or ctx.cls is not None or not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
                                                         and isinstance(stmt.targets[0], ast.Name) and isinstance(stmt.value, ast.Call)):
            return None
        call, env, local = stmt.value, ctx.env, set()
        if self.qualify(module, dotted(call.func) or "", ctx.env) == "types.new_class":
            # types.new_class(name, bases, kwds, exec_body): exec_body(ns) fills the namespace (PEP 3115)
            given = {**dict(zip(("name", "bases", "kwds", "exec_body"), call.args)), **{k.arg: k.value for k in call.keywords if k.arg}}
            kwds = given.get("kwds")
            if (len(given) != len(call.args) + len(call.keywords) or not {"name", "bases", "exec_body"} <= given.keys()
                    or not (kwds is None or isinstance(kwds, ast.Dict) and not kwds.keys or isinstance(kwds, ast.Constant) and kwds.value is None)):
                return None
            filled = self._exec_body(module, given["exec_body"], ctx.env)
            if filled is None:
                return None
            namespace, local = filled
            call = ast.Call(func=ast.Name("type", ast.Load()), args=[given["name"], given["bases"], namespace], keywords=[])
        elif dotted(call.func) != "type" or self.qualify(module, "type", ctx.env) is not None:
            found = self._plugin_function(self.qualify(module, dotted(call.func), ctx.env) or "") if dotted(call.func) else None
            returns = [r.value for r in own_returns(found[1])] if found is not None and found[0] == module else []
            if len(returns) != 1 or not isinstance(returns[0], ast.Call) or dotted(returns[0].func) != "type" or any(isinstance(a, ast.Starred) for a in call.args):
                return None
            env = self._called_with(module, found[1], [self.const(module, a, ctx.env) for a in call.args], call.keywords, module, ctx.env, 0)
            call, local = returns[0], {*env, *local_names(found[1])}
        namespace = self._namespace(module, call.args[2]) if len(call.args) == 3 else None
        if call.keywords or not isinstance(call.args[1], (ast.Tuple, ast.List)) or namespace is None:
            return None
        body: list[ast.stmt] = []
        for key, value in zip(namespace.keys, namespace.values):
            name = key.value if isinstance(key, ast.Constant) and isinstance(key.value, str) else None
            if name is None or not name.isidentifier():
                return None
            folded = self.const(module, value, env)
            if folded is None or isinstance(folded, (str, int, float, bool)):
                value = ast.Constant(folded)
            elif any(isinstance(n, ast.Name) and n.id in local for n in walk(value)):
                continue  # (a value of the function's own locals it does not fold: left out)
            if name not in ("__module__", "__qualname__", "__doc__"):
                body.append(ast.Assign(targets=[ast.Name(name, ast.Store())], value=value))
        bases, held = [], {}
        for element in call.args[1].elts:
            if not any(isinstance(n, ast.Name) and n.id in local for n in walk(element)):
                bases.append(element)
                continue
            classes = self.iterated(self.const(module, element.value, env)) if isinstance(element, ast.Starred) else [self.const(module, element, env)]
            if not isinstance(classes, list) or not all(isinstance(c, Named) for c in classes):
                return None
            for cls in classes:  # a class the function's parameters hand in: read by a name bound to it
                held[f"<base{len(held)}>"] = cls
                bases.append(ast.Name(f"<base{len(held) - 1}>", ast.Load()))
        # (copies: the located nodes of the function's own tree keep their lines)
        made = copy.deepcopy(ast.ClassDef(name=stmt.targets[0].id, bases=bases, keywords=[], body=body or [ast.Pass()], decorator_list=[]))
        for node in walk(made):
            ast.copy_location(node, stmt)
        return made, held

    def _namespace(self, module: str, node: ast.expr, depth: int = 0) -> ast.Dict | None:
        """The entries of a class namespace handed to type(): a dict display, `dict(k=v, …)`, a copy
        of one (`dict(NS)`, `dict(NS, k=v)`, `{**NS}`, `NS.copy()`), or a name the module binds once
        at its top level to any of these (with the module-level `NAME["k"] = v` statements after
        it), as one dict display. None for anything else."""
        if isinstance(node, ast.Dict) and len(node.keys) == 1 and node.keys[0] is None:
            return self._namespace(module, node.values[0], depth + 1)  # {**NS}
        if isinstance(node, ast.Dict):
            return node
        if isinstance(node, ast.Call) and dotted(node.func) == "dict" and len(node.args) <= 1 and all(k.arg for k in node.keywords):
            copied = self._namespace(module, node.args[0], depth + 1) if node.args else ast.Dict(keys=[], values=[])
            if copied is None:
                return None
            return ast.Dict(keys=[*copied.keys, *(ast.Constant(k.arg) for k in node.keywords)], values=[*copied.values, *(k.value for k in node.keywords)])
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "copy" and not node.args and not node.keywords:
            return self._namespace(module, node.func.value, depth + 1)
        tree = self.tree(module) if isinstance(node, ast.Name) and depth < 3 else None
        if tree is None:
            return None
        bound = [i for i, s in enumerate(tree.body) if node.id in assigned_in(s)]
        held = tree.body[bound[0]] if len(bound) == 1 else None
        if not (isinstance(held, ast.Assign) and len(held.targets) == 1) or (found := self._namespace(module, held.value, depth + 1)) is None:
            return None
        keys, values = list(found.keys), list(found.values)
        for stmt in tree.body[bound[0] + 1:]:
            if (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(t := stmt.targets[0], ast.Subscript)
                    and isinstance(t.value, ast.Name) and t.value.id == node.id):
                keys.append(t.slice)
                values.append(stmt.value)
        return ast.Dict(keys=keys, values=values)

    def _exec_body(self, module: str, node: ast.expr, env: dict) -> tuple[ast.Dict, set[str]] | None:
        """What types.new_class's exec_body callback puts in the namespace it is handed: a plugin
        function `def body(ns)` of this module whose statements are `ns["k"] = v` and `ns.update(
        {…} / k=v)` (others that do not touch ns are skipped): (those entries as one dict display,
        the function's local names, whose values are not folded). None for any other callback."""
        found = self._plugin_function(self.qualify(module, dotted(node) or "", env) or "") if isinstance(node, (ast.Name, ast.Attribute)) else None
        if found is None or found[0] != module or len(found[1].args.args) != 1:
            return None
        ns = found[1].args.args[0].arg
        keys: list[ast.expr] = []
        values: list[ast.expr] = []
        for stmt in found[1].body:
            if (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(t := stmt.targets[0], ast.Subscript)
                    and isinstance(t.value, ast.Name) and t.value.id == ns):
                keys.append(t.slice)
                values.append(stmt.value)
            elif (isinstance(stmt, ast.Expr) and isinstance(c := stmt.value, ast.Call) and dotted(c.func) == f"{ns}.update"
                  and len(c.args) <= 1 and (entries := self._namespace(module, c.args[0] if c.args else ast.Call(ast.Name("dict"), [], c.keywords))) is not None):
                keys.extend(entries.keys)
                values.extend(entries.values)
            elif any(isinstance(n, ast.Name) and n.id == ns for n in walk(stmt)):
                return None  # (the namespace read or handed on: what it ends up holding is not listed here)
        return ast.Dict(keys=keys, values=values), local_names(found[1]) | {ns}

    def _set_name_site(self, module: str, owner: str, stmt: ast.stmt, ctx: Context) -> None:
        """A class-body name bound to an instance of a plugin class that defines `__set_name__`
        (`x = Declare(fn, kind)`, `@Declare` on a def, or `@Declare(kind)` whose `__call__` keeps
        the function and returns the instance): Python calls `instance.__set_name__(owner, name)` when the class is
        made (the data model, "Creating the class object"). Recorded per descriptor class for
        helper_bindings: (owner class, name, the instance as folded)."""
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.decorator_list:
            made, name, decorated = stmt.decorator_list[0], stmt.name, f"{owner}.{stmt.name}"
        elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            made, name, decorated = stmt.value, stmt.targets[0].id, None
        else:
            return
        env = ctx.env
        if decorated is not None and isinstance(made, (ast.Name, ast.Attribute)):
            # `@Declare` on a def: the instance is Declare(the function)
            made, env = ast.copy_location(ast.Call(func=made, args=[ast.Name("<decorated>", ast.Load())], keywords=[]), made), {**env, "<decorated>": Named(decorated)}
            decorated = None
        path = self.qualify(module, dotted(made.func), env) if isinstance(made, ast.Call) and dotted(made.func) else None
        found = self._plugin_definition(path) if path and not is_upstream(path) else None
        methods = {n.name: n for n in found[1].body if isinstance(n, ast.FunctionDef)} if found and isinstance(found[1], ast.ClassDef) else {}
        if "__set_name__" not in methods:
            return
        # the instance as __init__ leaves it (what __call__ and __set_name__ write come after)
        init_only = ast.ClassDef(name=found[1].name, bases=[], keywords=[], decorator_list=[],
                                 body=[n for n in found[1].body if not (isinstance(n, ast.FunctionDef) and n.name in ("__call__", "__set_name__"))])
        instance = self._init_record(module, path, found[0], init_only, made, env, 0) if "__init__" in methods else Record(path, ())
        if instance is None:
            return
        call = methods.get("__call__")
        if decorated is not None:  # the decorator's __call__(fn) keeps fn (`self.fn = fn`) and returns the instance
            params = function_params(call.args) if call is not None else ()
            returns_self = call is not None and params and all(isinstance(r.value, ast.Name) and r.value.id == params[0].name for r in own_returns(call))
            if not returns_self or len(params) < 2:
                return
            kept = {t.attr: Named(decorated) for stmt_ in call.body if isinstance(stmt_, ast.Assign) for t in stmt_.targets
                    if isinstance(t, ast.Attribute) and dotted(t.value) == params[0].name and isinstance(stmt_.value, ast.Name) and stmt_.value.id == params[1].name}
            instance = Record(instance.cls, (*((f, v) for f, v in instance.fields if f not in kept), *kept.items()))
        self.set_name_sites.setdefault(path, []).append((owner, name, instance, f"{self.relfile(module)}:{stmt.lineno}"))

    def _assigned_method(self, module: str, name: str, value: ast.expr, line: int, ctx: Context, body: dict | None = None) -> MethodDecl | None:
        """A method bound by assignment in a class body (`m = _plugin_fn`, `m = lambda self: …`,
        `m = staticmethod(fn)` / `classmethod(fn)`, `m = other_method` of the same body: `body`, its
        methods so far) or on the class afterwards (graft_method): a function in a class's
        namespace is a method however it got there (Python's data model, "Functions"). None for
        any other value. `a if cond else b` (a choice the machine makes: `os.path.isdir(…)`) is
        each function in turn: the first, the others its `alternatives`; None unless each is one."""
        decorators: tuple[str, ...] = ()
        if isinstance(value, ast.IfExp):
            options = [self._assigned_method(module, name, v, line, ctx, body) for v in (value.body, value.orelse)]
            if None in options:
                return None
            first, second = options
            return replace(first, alternatives=(*first.alternatives, replace(second, alternatives=()), *second.alternatives))
        if isinstance(value, ast.Call) and len(value.args) == 1 and not value.keywords and dotted(value.func) in ("staticmethod", "classmethod"):
            value, decorators = value.args[0], (dotted(value.func),)
        if isinstance(value, ast.Name) and body and value.id in body:  # `get_nsa = get_mla`: the body's own function again
            return replace(body[value.id], name=name, line=line, decorators=decorators + body[value.id].decorators)
        if (isinstance(value, ast.Call) and value.args and not any(isinstance(a, ast.Starred) for a in value.args)
                and self.qualify(module, dotted(value.func), ctx.env) == "functools.partialmethod"):
            # partialmethod(fn, *a, **k): self, then what partial(fn, *a, **k) leaves (functools docs)
            inner = self._assigned_method(module, name, value.args[0], line, ctx, body)
            if inner is None or not inner.params:
                return None
            rest = partial_params(inner.params[1:], len(value.args) - 1, [k.arg for k in value.keywords if k.arg])
            return MethodDecl(name, line, (inner.params[0], *rest), inner.decorators, inner.raises_only, defined_at=inner.defined_at)
        if isinstance(value, ast.Lambda):
            return MethodDecl(name, line, function_params(value.args), decorators)
        made = isinstance(value, ast.Call) and isinstance(value.func, (ast.Name, ast.Attribute))  # `m = make_getter("mla")`
        path = self.qualify(module, dotted(value.func if made else value), ctx.env) if made or isinstance(value, (ast.Name, ast.Attribute)) else None
        found = self._plugin_definition(path) if path and not is_upstream(path) else None
        if made and found is not None and isinstance(found[1], ast.ClassDef):
            # `m = Formatter(prefix="x")`: an instance of a plugin class with __call__ and no
            # __get__ is no descriptor, so `obj.m(i)` is `Formatter.__call__(formatter, i)`
            own = {n.name: n for n in found[1].body if isinstance(n, ast.FunctionDef)}
            call = own.get("__call__")
            if call is None or "__get__" in own or not call.args.args:
                return None
            return MethodDecl(name, line, function_params(call.args)[1:], decorators, raises_only(call),
                              defined_at=(self.relfile(found[0]), call.lineno), held=True)
        if found is None or not isinstance(found[1], (ast.FunctionDef, ast.AsyncFunctionDef)):
            return None
        # a plugin factory's call puts in the class what it returns: the nested def it builds
        function = returned_function(found[1]) if made else found[1]
        if function is None:
            return None
        own = tuple(filter(None, (dotted(d) for d in function.decorator_list)))
        return MethodDecl(name, line, function_params(function.args), decorators + own, raises_only(function),
                          defined_at=(self.relfile(found[0]), function.lineno))

    def _instance_methods(self, module: str, node: ast.ClassDef, cls: PluginClass, ctx: Context) -> None:
        """`self.m = value` run by every construction (a statement of the class's own `__init__`
        body, or the same name set in both branches of an `if` there: each value an alternative)
        where value is a function (`self.pick`, `functools.partial(self.pick, "mha")`, a lambda, a
        plugin function, a callable object): every instance holds m, found before the class's
        attribute, so it stands for the method m of the class (an override of its bases' m),
        called without self (MethodDecl.held). A name the body itself defines, dunders, and any
        other value (`torch.compile(self.forward)`) are left as they are."""
        init = cls.methods.get("__init__")
        found = next((s for s in node.body if isinstance(s, ast.FunctionDef) and init is not None and s.lineno == init.line), None)
        params = function_params(found.args) if found is not None else ()
        if not params or not init.bound:
            return
        own, local = params[0].name, local_names(found) | {p.name for p in params[1:]}

        def writes(body: list[ast.stmt]) -> dict[str, list[ast.Assign]]:
            out: dict[str, list[ast.Assign]] = {}
            for stmt in body:
                if (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(target := stmt.targets[0], ast.Attribute)
                        and isinstance(target.value, ast.Name) and target.value.id == own):
                    out[target.attr] = [stmt]
                elif isinstance(stmt, ast.If) and stmt.orelse:
                    either, other = writes(stmt.body), writes(stmt.orelse)
                    out.update({name: either[name] + other[name] for name in either.keys() & other.keys()})
            return out

        for name, stmts in writes(found.body).items():
            if name in cls.methods or name.startswith("__") or any(isinstance(n, ast.Name) and n.id in local for s in stmts for n in walk(s.value)):
                continue
            options = [self._instance_method(module, name, s.value, s.lineno, ctx, cls.methods, own) for s in stmts]
            if None not in options:
                each = [replace(o, name=name, line=s.lineno, held=True, alternatives=()) for m, s in zip(options, stmts) for o in (m, *m.alternatives)]
                cls.methods[name] = replace(each[0], alternatives=tuple(each[1:]))

    def _instance_method(self, module: str, name: str, value: ast.expr, line: int, ctx: Context, methods: dict, own: str) -> MethodDecl | None:
        """The function `value` holds as `__init__` puts it on the instance, with the parameters a
        call of it takes: `self.pick` bound (its self gone), `functools.partial(f, *a, **k)` of
        such a value (partial_params), else as _assigned_method reads a function. None otherwise."""
        if isinstance(value, ast.IfExp):  # a choice the machine makes: each function, the others alternatives
            options = [self._instance_method(module, name, v, line, ctx, methods, own) for v in (value.body, value.orelse)]
            if None in options:
                return None
            first, second = options
            return replace(first, alternatives=(*first.alternatives, replace(second, alternatives=()), *second.alternatives))
        if isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name) and value.value.id == own:
            method = methods.get(value.attr)
            return replace(method, params=method.params[1:] if method.bound else method.params) if method is not None else None
        if (isinstance(value, ast.Call) and value.args and not any(isinstance(a, ast.Starred) for a in value.args)
                and self.qualify(module, dotted(value.func), ctx.env) == "functools.partial"):
            inner = self._instance_method(module, name, value.args[0], line, ctx, methods, own)
            if inner is None or any(k.arg is None for k in value.keywords):
                return None
            return replace(inner, params=partial_params(inner.params, len(value.args) - 1, [k.arg for k in value.keywords]))
        if isinstance(value, ast.Call) and any(isinstance(n, ast.Name) and n.id == own for n in walk(value.func)):
            return None  # (`self.make(…)`: what a method returns is not read here)
        method = self._assigned_method(module, name, value, line, ctx)
        # (a function put on the instance is not bound: all of its parameters are the call's)
        return replace(method, held=True) if method is not None else None

    def graft_method(self, module: str, owner: ast.expr, name, value: ast.expr | None, line: int, ctx: Context, bound: bool = False) -> None:
        """`Cls.m = fn` / `setattr(Cls, "m", fn)` on a plugin class: `m` is a method of Cls
        (an override of its base's when it has one) as if written in its body; on a helper's
        parameter, onto each class the helper gets (finish(); `bound`: that pass)."""
        path = self.qualify(module, dotted(owner), ctx.env)
        if path and not is_upstream(path) and isinstance(name, str) and value is not None:
            # applied in finish(): the class may sit in a module read later
            self.grafts.append((path, name, self._assigned_method(module, name, value, line, ctx)))
        elif (not bound and isinstance(owner, ast.Name) and owner.id in ctx.local and (ctx.env.get(owner.id, OPAQUE) is OPAQUE or isinstance(ctx.env.get(owner.id), Instance))
              and isinstance(name, str) and value is not None):
            # `def deco(cls): cls.m = classmethod(f); return cls`: onto each class it decorates (finish())
            self.parameter_grafts.append((module, owner, name, value, line, ctx))

    def _import(self, module: str, stmt: ast.Import | ast.ImportFrom, ctx: Context) -> None:
        env = ctx.env
        guarded = self.import_guards.setdefault(module, {})
        for name in self._imported(module, stmt):
            guarded.setdefault(name, []).append(ctx.guards)
            self.import_site(module, name, stmt.lineno, ctx)
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                env[alias.asname or alias.name.split(".")[0]] = Named(alias.name if alias.asname else alias.name.split(".")[0])
                if is_upstream(alias.name):
                    self._dependency("import", alias.name, module, stmt, ctx, expression=f"import {alias.name}")
            return
        base = resolve_relative(module, self.files[module][1], stmt.level, stmt.module)
        for alias in stmt.names:
            if alias.name == "*":
                if is_upstream(base):
                    self._dependency("import", base, module, stmt, ctx, expression=f"from {base} import *")
                continue
            env[alias.asname or alias.name] = Named(f"{base}.{alias.name}")
            if is_upstream(base):
                self._dependency("import", f"{base}.{alias.name}", module, stmt, ctx, expression=f"from {base} import {alias.name}", name=base)
