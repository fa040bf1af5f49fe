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
conditions, and the plugin's class hierarchy (the records are in plugin_repo); `judge` judges
them against one upstream.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, replace
from pathlib import Path

from harness.errors import HarnessError
from harness.knowledge.architectures import ARCHITECTURE
from harness.knowledge.fields import SERVER_ARGS, WRITE, annotation_class, parameter_class
from harness.knowledge.index import Ref, SymbolIndex, c3
from harness.knowledge.plugin_repo import (
    IMPORT_ERRORS,
    PLATFORM_BASES,
    PLATFORM_GROUP,
    PLUGIN_GROUP,
    CallShape,
    Catch,
    Cond,
    Dependency,
    EntryPoint,
    GuardCond,
    MethodDecl,
    PluginClass,
    PluginModule,
    PluginScan,
    Root,
    Scope,
    is_upstream,
    plugin_module_files,
    read_entry_points,
)
from harness.knowledge.symbols import ModuleTable, dotted, extract_module, function_params, resolve_relative

HOOK_REGISTRY = "sglang.srt.plugins.hook_registry.HookRegistry"
MODEL_REGISTRY = "sglang.srt.models.registry.ModelRegistry"
EXTERNAL_MODEL_ENV = "SGLANG_EXTERNAL_MODEL_PACKAGE"
_IMPORTS_SGLANG = re.compile(r"^\s*(?:from|import)\s+sglang\b", re.M)
_IN_PLACE_EDITS = {"append", "extend", "insert", "update", "add", "setdefault", "remove", "pop", "clear", "discard"}
_DISCOVERY = {"iter_modules", "walk_packages", "listdir", "scandir", "iterdir", "glob", "rglob", "walk"}
_VERSION_PARSERS = ("packaging.version.parse", "packaging.version.Version", "pkg_resources.parse_version", "distutils.version.LooseVersion")

# ----------------------------------------------------------------------------- values


class _Opaque:
    """A value the constant folder cannot know (a call result, a parameter)."""


OPAQUE = _Opaque()


@dataclass(frozen=True)
class _Named:
    """A name the folder can identify but not evaluate: a module, a function, a class."""

    path: str


@dataclass(frozen=True)
class _Version:
    """The running SGLang version: `sglang.__version__` (parsed=False) or a parsed Version."""

    parsed: bool


@dataclass(frozen=True)
class _Instance:
    """A variable holding an instance of an upstream class (kind 12, see fields.py): `path` is
    the class the plugin annotates it with, or None while it is the unannotated parameter
    `param` of the plugin function `function` (finish() asks the upstream function that one
    stands in for)."""

    path: str | None
    function: str | None = None
    param: str | None = None


@dataclass(frozen=True)
class _Condition:
    """A boolean whose value depends on the upstream (e.g. `HAS_X = hasattr(...)`)."""

    cond: Cond


# ----------------------------------------------------------------------------- scanning


def scan_plugin(root: Path, index: SymbolIndex, entries: list[str] | None = None) -> PluginScan:
    """Read a plugin checkout: its modules, roots, liveness, classes and every dependency.

    `entries` names root modules for plugins that SGLang reaches without entry points (e.g.
    an external model package). Raises HarnessError when `root` is not a directory, a
    packaging file is malformed, or there is nothing that could be a plugin."""
    root = Path(root).resolve()
    if not root.is_dir():
        raise HarnessError(f"plugin path {str(root)!r} is not a directory")
    entry_points = read_entry_points(root)
    files = plugin_module_files(root)
    scan = PluginScan(root, entry_points)
    scanner = _Scanner(root, files, index, scan)
    for name, (path, is_package) in files.items():
        scan.modules[name] = PluginModule(name, scanner.relfile(name), is_package)
    # the upstream modules the plugin imports, parsed up front (in parallel when many)
    index.index_all(only={prefix for name in files for imported in scanner.table(name).imports if is_upstream(imported) for prefix in _with_parents(imported)})
    for name in files:
        scanner.scan_module(name)
    scan.roots = _roots(scan, scanner, entries or [])
    if not scan.roots:
        raise HarnessError(
            f"{root}: not an SGLang plugin: no '{PLATFORM_GROUP}' or '{PLUGIN_GROUP}' entry points, no --entry, "
            "and no module that imports sglang: nothing to check"
        )
    scanner.finish()
    _mark_live(scan, scanner)
    return scan


def _roots(scan: PluginScan, scanner: "_Scanner", entries: list[str]) -> list[Root]:
    roots: list[Root] = []
    for ep in scan.entry_points:
        module, _, attr = ep.value.partition(":")
        roots.append(Root(module, f"entry point {ep.group}:{ep.name}", "platform" if ep.group == PLATFORM_GROUP else "plugins"))
        if ep.group == PLATFORM_GROUP and module in scanner.files:
            for path in scanner.returned_class_paths(module, attr.split(".")[0]):
                scan.platform_class_paths.append(path)
                class_module = scanner.module_of(path)
                if class_module:
                    roots.append(Root(class_module, f"platform class {path} returned by {ep.value}", "platform_class"))
    for module in entries:
        if module not in scanner.files:
            raise HarnessError(f"--entry {module}: no such module in {scan.root}")
        if scanner.files[module][1]:  # a package: SGLang imports each of its modules (import_model_classes)
            roots += [Root(module, "--entry (a package)", "model_package"), Root(f"{module}.*", f"a module of --entry {module}", "model_package")]
        else:
            roots.append(Root(module, "--entry", "entry"))
    if not roots:
        importing = [name for name in scanner.files if scanner.imports_sglang(name)]
        roots = [Root(name, "imports sglang (no entry points)", "entry") for name in importing]
        # a package whose modules define EntryClass is an external model package: SGLang imports
        # every module in it (sglang/srt/models/registry.py import_model_classes)
        for package in sorted({name.rpartition(".")[0] for name in importing if "EntryClass" in scanner.table(name).names}):
            roots.append(Root(f"{package}.*", f"a module of {package}, an external model package (its modules define EntryClass)", "model_package"))
    return roots


def _mark_live(scan: PluginScan, scanner: "_Scanner") -> None:
    """Live = imported when SGLang loads the roots, by Python's rules: importing `a.b.c` runs
    `a`, `a.b` and `a.b.c` (namespace packages have nothing to run); `from a import b` imports
    the submodule `a.b` when there is one; `import_module` and auto-discovery load by name.
    The same walk over what runs while the plugin loads (module bodies and the entry callables)
    records which loader imports each module then."""
    for root in scan.roots:
        _walk_imports(scan, [root.module], scanner.imports_of, lambda module: module.live, lambda module: setattr(module, "live", True))
    entry_callables = {f"{m}.{a.split('.')[0]}" for ep in scan.entry_points for m, _, a in [ep.value.partition(":")]}
    for root in scan.roots:
        _walk_imports(
            scan, [root.module], lambda name: scanner.load_time_imports(name, entry_callables),
            lambda module, loader=root.loader: loader in module.loaded_by, lambda module, loader=root.loader: module.loaded_by.add(loader),
        )
    for dep in scan.dependencies:
        module = scan.modules.get(dep.module)
        dep.live = module.live if module else True
        dep.loaded_by = frozenset(module.loaded_by) if module else frozenset()


def _walk_imports(scan: PluginScan, start: list[str], imports_of, seen, mark) -> None:
    queue = [name for module in start for name in _with_parents(module)]
    while queue:
        name = queue.pop()
        if name.endswith(".*"):  # every direct submodule (pkgutil.iter_modules over a package)
            queue.extend(m for m in scan.modules if m.rpartition(".")[0] == name[:-2])
            continue
        module = scan.modules.get(name)
        if module is None or seen(module):
            continue
        mark(module)
        for imported in imports_of(name):
            queue.extend(_with_parents(imported))


def _with_parents(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[: i + 1]) for i in range(len(parts))]


@dataclass
class _Context:
    """Where a statement runs: its local bindings, guards, handlers and enclosing functions."""

    env: dict
    guards: tuple[GuardCond, ...] = ()
    catches: tuple[Catch, ...] = ()
    functions: tuple[str, ...] = ()  # dotted paths of the enclosing functions, outermost first
    cls: PluginClass | None = None  # the class whose body (or method body) this is
    in_class_body: bool = False
    self_name: str | None = None  # the method's first parameter (self / cls)
    method: MethodDecl | None = None

    @property
    def scope(self) -> Scope:
        return "function" if self.functions else "module"


class _Scanner:
    def __init__(self, root: Path, files: dict[str, tuple[Path, bool]], index: SymbolIndex, scan: PluginScan):
        self.root = root
        self.files = files
        self.index = index
        self.scan = scan
        self.tables: dict[str, ModuleTable] = {}
        self.trees: dict[str, ast.Module | None] = {}
        self.dynamic_imports: dict[str, list[tuple[str, tuple[str, ...]]]] = {}  # module -> (imported, enclosing functions)
        self.hook_callables: dict[str, str] = {}  # plugin path of a hook function/class -> its target
        self.none_fallbacks: dict[tuple[str, str], Cond] = {}  # (module, imported path) -> "the import resolves"
        self._future_annotations: set[str] = set()
        self._self_calls: set[int] = set()  # ids of `self.m` nodes already recorded with their call
        self._relfiles: dict[str, str] = {}
        self.calls: dict[str, set[str]] = {}  # plugin function -> plugin functions it calls

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
                source = path.read_bytes()
                tree = ast.parse(source)
            except OSError as exc:
                self._file_error(module, f"cannot be read: {exc.strerror or exc}", 1)
                tree = None
            except (SyntaxError, ValueError) as exc:
                line = getattr(exc, "lineno", None) or 1
                self._file_error(module, f"does not parse with Python {_python_version()}: {getattr(exc, 'msg', exc)} (line {line})", line)
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

    def imports_of(self, module: str) -> list[str]:
        return [*self.table(module).imports, *(target for target, _ in self.dynamic_imports.get(module, []))]

    def imports_sglang(self, module: str) -> bool:
        """Whether the module imports sglang; for a file that does not parse, by its text."""
        if self.scan.modules[module].error is None:
            return any(is_upstream(m) for m in self.table(module).imports)
        try:
            return bool(_IMPORTS_SGLANG.search(self.files[module][0].read_text(errors="replace")))
        except OSError:
            return False

    def load_time_imports(self, module: str, entry_callables: set[str]) -> list[str]:
        """Imports that run when the module is imported, or inside an entry point's callable."""
        tree = self.tree(module)
        found = [target for target, enclosing in self.dynamic_imports.get(module, []) if not enclosing or enclosing[0] in entry_callables]
        stack = list(tree.body) if tree else []
        while stack:
            node = stack.pop()
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if f"{module}.{node.name}" in entry_callables:
                    stack.extend(node.body)
                continue
            if isinstance(node, ast.Import):
                found.extend(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = resolve_relative(module, self.files[module][1], node.level, node.module)
                found.append(base)
                found.extend(f"{base}.{alias.name}" for alias in node.names if alias.name != "*")
            elif isinstance(node, ast.stmt):
                stack.extend(child for child in ast.iter_child_nodes(node) if isinstance(child, (ast.stmt, ast.excepthandler)))
            elif isinstance(node, ast.excepthandler):
                stack.extend(node.body)
        return found

    # ------------------------------------------------------------- name resolution

    def qualify(self, module: str, expression: str | None, env: dict | None = None, _seen: frozenset = frozenset()) -> str | None:
        """The absolute dotted path a name in `module` refers to (plugin or upstream), or None
        for a local value; `env` holds what a function body bound (imports, parameters)."""
        if not expression or (module, expression) in _seen:
            return None
        _seen = _seen | {(module, expression)}
        head, _, rest = expression.partition(".")
        if env is not None and head in env:
            local = env[head]
            if not isinstance(local, _Named):
                return None
            return f"{local.path}.{rest}" if rest else local.path
        binding = self.table(module).names.get(head)
        if binding is None:
            return None
        if binding.kind in ("def", "class", "value"):
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
        return f"{base}.{rest}" if rest else base

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
        if isinstance(node, ast.Name):
            if node.id in env:
                value = env[node.id]
                owner, _, attr = value.path.rpartition(".") if isinstance(value, _Named) else ("", "", "")
                if owner in self.files and f"{owner}.{attr}" not in self.files:  # a plugin constant imported locally
                    return self.module_constant(owner, attr, depth + 1)
                return value
            if node.id == "__name__":
                return module
            if node.id == "__package__":
                return module if self.files[module][1] else module.rpartition(".")[0]
            return self.module_constant(module, node.id, depth + 1)
        if isinstance(node, ast.Attribute):
            owner = self.qualify(module, dotted(node.value), env)
            if owner in self.files:
                return self.module_constant(owner, node.attr, depth + 1)
            if owner == "sglang" and node.attr == "__version__" or f"{owner}.{node.attr}" == "sglang.version.__version__":
                return _Version(parsed=False)
            return _Named(f"{owner}.{node.attr}") if owner else OPAQUE
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
            return OPAQUE
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
            fmt, args = self.const(module, node.left, env, depth + 1), self.const(module, node.right, env, depth + 1)
            if isinstance(fmt, str) and isinstance(args, (str, int, float, list)):
                try:
                    return fmt % (tuple(args) if isinstance(args, list) else args)
                except (TypeError, ValueError):
                    return OPAQUE
            return OPAQUE
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            return [self.const(module, element, env, depth + 1) for element in node.elts]
        if isinstance(node, ast.Dict):
            return {
                self.const(module, key, env, depth + 1): self.const(module, value, env, depth + 1)
                for key, value in zip(node.keys, node.values)
                if key is not None
            }
        if isinstance(node, ast.Call):
            return self._const_call(module, node, env, depth)
        if isinstance(node, ast.Subscript) and self.qualify(module, dotted(node.value), env) == "sys.modules":
            loaded = self.const(module, node.slice, env, depth + 1)
            return _Named(loaded) if isinstance(loaded, str) and is_upstream(loaded) else OPAQUE
        if isinstance(node, (ast.BoolOp, ast.UnaryOp, ast.Compare)):
            cond = self.condition(module, node, env, depth + 1)
            return cond[1] if cond[0] == "const" else _Condition(cond) if cond[0] != "undecided" else OPAQUE
        return OPAQUE

    def _const_call(self, module: str, node: ast.Call, env: dict, depth: int):
        name = dotted(node.func) or ""
        qualified = self.qualify(module, name, env) or name
        args = node.args
        if name.endswith("import_module") and args:
            imported = self.const(module, args[0], env, depth + 1)
            return _Named(imported) if isinstance(imported, str) and not imported.startswith(".") else OPAQUE
        if qualified == "sys.modules.get" and args:
            # the module if something imported it, else None: on a release without it, always None
            loaded = self.const(module, args[0], env, depth + 1)
            if isinstance(loaded, str) and is_upstream(loaded):
                self.none_fallbacks[(module, loaded)] = ("module", loaded)
                return _Named(loaded)
            return OPAQUE
        if qualified in ("importlib.metadata.version", "importlib_metadata.version") and args:
            return _Version(parsed=False) if self.const(module, args[0], env, depth + 1) == "sglang" else OPAQUE
        if (qualified in _VERSION_PARSERS or name.rsplit(".", 1)[-1] in ("parse_version", "Version", "LooseVersion")) and len(args) == 1:
            inner = self.const(module, args[0], env, depth + 1)
            if isinstance(inner, _Version):
                return _Version(parsed=True)
            return ("version-literal", inner) if isinstance(inner, str) else OPAQUE
        if name in ("hasattr", "getattr", "callable") or qualified.endswith("find_spec"):
            cond = self.condition(module, node, env, depth + 1)
            return _Condition(cond) if cond[0] not in ("undecided",) else OPAQUE
        if isinstance(node.func, ast.Attribute):
            owner = self.const(module, node.func.value, env, depth + 1)
            values = [self.const(module, arg, env, depth + 1) for arg in args]
            if isinstance(owner, str) and node.func.attr == "join" and len(values) == 1 and isinstance(values[0], list):
                if all(isinstance(part, str) for part in values[0]):
                    return owner.join(values[0])
            if isinstance(owner, str) and node.func.attr == "format" and all(isinstance(a, (str, int)) for a in values):
                try:
                    return owner.format(*values)
                except (IndexError, KeyError):
                    return OPAQUE
            if isinstance(owner, dict) and node.func.attr == "items" and not values:
                return [list(item) for item in owner.items()]
            if isinstance(owner, dict) and node.func.attr in ("keys", "values") and not values:
                return list(getattr(owner, node.func.attr)())
            if isinstance(owner, _Version) and node.func.attr == "startswith":
                return OPAQUE
        # a plugin helper whose body is one `return <expression>` (e.g. a version check)
        function = self._plugin_function(qualified) if qualified else None
        if function is not None and depth < 10:
            fmodule, fnode = function
            body = [s for s in fnode.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
            if len(body) == 1 and isinstance(body[0], ast.Return) and body[0].value is not None:
                local = {p.name: self.const(module, a, env, depth + 1) for p, a in zip(function_params(fnode.args), args)}
                for kw in node.keywords:
                    if kw.arg:
                        local[kw.arg] = self.const(module, kw.value, env, depth + 1)
                for p in function_params(fnode.args):
                    local.setdefault(p.name, OPAQUE)
                return self.const(fmodule, body[0].value, local, depth + 1)
        return OPAQUE

    def _plugin_function(self, path: str) -> tuple[str, ast.FunctionDef] | None:
        module, _, name = path.rpartition(".")
        if module not in self.files:
            return None
        tree = self.tree(module)
        for stmt in tree.body if tree else []:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name == name:
                return module, stmt
        return None

    def module_constant(self, module: str, name: str, depth: int):
        if module not in self.files or depth > 20:
            return OPAQUE
        tree = self.tree(module)
        for stmt in tree.body if tree else []:
            if isinstance(stmt, ast.Try) and name in _flag_names(stmt):
                imports = tuple(_upstream_imports(self, module, stmt.body))
                if imports:
                    return _Condition(("imports", imports))
        for stmt in reversed(tree.body if tree else []):  # the last module-level binding wins
            if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in stmt.targets):
                return self.const(module, stmt.value, {}, depth)
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.target.id == name:
                return self.const(module, stmt.value, {}, depth)
        binding = self.table(module).names.get(name)
        if binding is not None and binding.kind == "from":
            source_module, source_name = binding.target.split(":")
            if source_module in self.files:
                return self.module_constant(source_module, source_name, depth + 1)
            if binding.target == "sglang:__version__" or binding.target == "sglang.version:__version__":
                return _Version(parsed=False)
        qualified = self.qualify(module, name)
        return _Named(qualified) if qualified else OPAQUE

    # ------------------------------------------------------------- guard conditions

    def condition(self, module: str, node: ast.AST, env: dict, depth: int = 0) -> Cond:
        """A guard's test as a version-independent condition (see Cond)."""
        if depth > 20:
            return ("undecided",)
        if isinstance(node, ast.BoolOp):
            return ("and" if isinstance(node.op, ast.And) else "or", *(self.condition(module, v, env, depth + 1) for v in node.values))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return ("not", self.condition(module, node.operand, env, depth + 1))
        if isinstance(node, ast.Call):
            name = dotted(node.func) or ""
            qualified = self.qualify(module, name, env) or name
            if name in ("hasattr", "getattr") and len(node.args) >= 2:
                owner = self.qualify(module, dotted(node.args[0]), env)
                attr = self.const(module, node.args[1], env, depth + 1)
                instance = self._instance(module, node.args[0], env)
                if instance is not None and isinstance(attr, str):
                    return ("field", instance.path, attr) if instance.path else ("field-of-param", instance.function, instance.param, attr)
                if is_upstream(owner) and isinstance(attr, str):
                    return ("hasattr", owner, attr)
                return ("undecided",)
            if name == "callable" and len(node.args) == 1:
                return self.condition(module, node.args[0], env, depth + 1) if isinstance(node.args[0], ast.Call) else ("undecided",)
            if qualified.endswith("util.find_spec") and node.args:
                path = self.const(module, node.args[0], env, depth + 1)
                return ("module", path) if isinstance(path, str) and is_upstream(path) else ("undecided",)
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            left, op, right = node.left, node.ops[0], node.comparators[0]
            if isinstance(op, (ast.Is, ast.IsNot)) and isinstance(right, ast.Constant) and right.value is None:
                named = env.get(left.id) if isinstance(left, ast.Name) else None
                fallback = self.none_fallbacks.get((module, named.path)) if isinstance(named, _Named) else None
                if fallback is not None and fallback[1]:
                    return fallback if isinstance(op, ast.IsNot) else ("not", fallback)
                inner = self.condition(module, left, env, depth + 1)
                if inner[0] in ("hasattr", "module"):
                    return inner if isinstance(op, ast.IsNot) else ("not", inner)
            if isinstance(op, (ast.In, ast.NotIn)) and isinstance(right, ast.Call) and dotted(right.func) in ("dir", "vars"):
                attr = self.const(module, left, env, depth + 1)
                owner = self.qualify(module, dotted(right.args[0]), env) if right.args else None
                if isinstance(attr, str) and is_upstream(owner):
                    cond = ("hasattr", owner, attr)
                    return cond if isinstance(op, ast.In) else ("not", cond)
            version = self._version_compare(module, left, op, right, env, depth)
            if version is not None:
                return version
        if isinstance(node, ast.Compare) and len(node.ops) > 1:  # a <= v < b
            parts = []
            operands = [node.left, *node.comparators]
            for i, op in enumerate(node.ops):
                parts.append(self.condition(module, ast.Compare(left=operands[i], ops=[op], comparators=[operands[i + 1]]), env, depth + 1))
            return ("and", *parts)
        if isinstance(node, ast.Name) and node.id == "TYPE_CHECKING":
            return ("const", False)
        value = self.const(module, node, env, depth + 1) if isinstance(node, (ast.Name, ast.Attribute, ast.Call, ast.Constant)) else OPAQUE
        if isinstance(value, _Condition):
            return value.cond
        if isinstance(value, bool):
            return ("const", value)
        return ("undecided",)

    def _version_compare(self, module, left, op, right, env, depth) -> Cond | None:
        ops = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}
        symbol = ops.get(type(op))
        if symbol is None:
            return None
        a, b = self.const(module, left, env, depth + 1), self.const(module, right, env, depth + 1)
        flipped = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}
        if isinstance(b, _Version):
            a, b, symbol = b, a, flipped[symbol]
        if not isinstance(a, _Version):
            return None
        literal = b[1] if isinstance(b, tuple) and len(b) == 2 and b[0] == "version-literal" else b
        if not isinstance(literal, str):
            return ("undecided",)
        # sglang.__version__ compared with a plain string is a *string* comparison in Python
        return ("version", symbol, literal, a.parsed or (isinstance(b, tuple)))

    def _guard(self, module: str, test: ast.AST, env: dict, negate: bool = False) -> GuardCond:
        cond = self.condition(module, test, env)
        text = ast.unparse(test)
        if _string_version_compare(cond):
            text += "  [compares version strings, not versions: '0.10.0' < '0.9']"
        return GuardCond(("not", cond) if negate else cond, f"not ({text})" if negate else text, test.lineno)

    # ------------------------------------------------------------- the walk

    def scan_module(self, module: str) -> None:
        tree = self.tree(module)
        if tree is None:
            return
        self._block(module, tree.body, _Context(env={}))
        uses = self.scan.attribute_uses
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
                uses.setdefault(node.attr, f"{self.relfile(module)}:{node.lineno}")
            elif (isinstance(node, ast.Call) and dotted(node.func) in ("getattr", "hasattr") and len(node.args) >= 2
                  and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)):
                uses.setdefault(node.args[1].value, f"{self.relfile(module)}:{node.lineno}")

    def _block(self, module: str, body: list[ast.stmt], ctx: _Context) -> None:
        """Walk statements in order; each sees the bindings and early-exit guards before it."""
        ctx = replace(ctx, env=dict(ctx.env))
        for stmt in body:
            self._statement(module, stmt, ctx)
            if isinstance(stmt, ast.If) and not stmt.orelse and stmt.body and isinstance(stmt.body[-1], (ast.Return, ast.Raise, ast.Continue, ast.Break)):
                # `if not hasattr(X, "y"): return` guards the rest of the block
                ctx = replace(ctx, guards=ctx.guards + (self._guard(module, stmt.test, ctx.env, negate=True),))
            exits = [h for h in getattr(stmt, "handlers", []) if h.body and isinstance(h.body[-1], (ast.Return, ast.Continue, ast.Break))]
            imports = tuple(_upstream_imports(self, module, stmt.body)) if isinstance(stmt, ast.Try) and exits else ()
            if imports and any(h.type is None or _exception_names([h.type]) & IMPORT_ERRORS for h in exits):
                # `try: import x / except ImportError: return`: the rest runs only when the imports resolve
                ctx = replace(ctx, guards=ctx.guards + (GuardCond(("imports", imports), f"the imports at line {stmt.lineno} succeed", stmt.lineno),))

    def _statement(self, module: str, stmt: ast.stmt, ctx: _Context) -> None:
        env = ctx.env
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self._function(module, stmt, ctx)
            if ctx.functions:  # a nested function: its name now refers to it
                ctx.env[stmt.name] = _Named(self._function_path(module, stmt, ctx))
            return
        if isinstance(stmt, ast.ClassDef):
            self._class(module, stmt, ctx)
            return
        if isinstance(stmt, ast.If):
            self._expressions(module, stmt.test, ctx)
            self._block(module, stmt.body, replace(ctx, guards=ctx.guards + (self._guard(module, stmt.test, env),)))
            if stmt.orelse:
                self._block(module, stmt.orelse, replace(ctx, guards=ctx.guards + (self._guard(module, stmt.test, env, negate=True),)))
            return
        if isinstance(stmt, ast.Try) or type(stmt).__name__ == "TryStar":
            self._try(module, stmt, ctx)
            return
        if isinstance(stmt, (ast.For, ast.AsyncFor)):
            self._expressions(module, stmt.iter, ctx)
            iterable = self.const(module, stmt.iter, env)
            if isinstance(iterable, dict):  # iterating a dict gives its keys
                iterable = list(iterable)
            if isinstance(iterable, list):
                for element in iterable:
                    self._block(module, stmt.body, replace(ctx, env={**env, **_bind(stmt.target, element)}))
            else:
                self._block(module, stmt.body, replace(ctx, env={**env, **{n: OPAQUE for n in _assigned(stmt.target)}}))
            self._block(module, stmt.orelse, ctx)
            return
        if isinstance(stmt, (ast.With, ast.AsyncWith)):
            catches = ctx.catches
            for item in stmt.items:
                self._expressions(module, item.context_expr, ctx)
                call = item.context_expr
                if isinstance(call, ast.Call) and (self.qualify(module, dotted(call.func), env) or "").endswith("suppress"):
                    catches += (Catch(frozenset(_exception_names(call.args)), stmt.lineno),)
                if item.optional_vars is not None:
                    env.update({n: OPAQUE for n in _assigned(item.optional_vars)})
            self._block(module, stmt.body, replace(ctx, catches=catches))
            return
        if isinstance(stmt, (ast.While, ast.Match)) or hasattr(stmt, "cases"):
            for child in ast.iter_child_nodes(stmt):
                if not isinstance(child, ast.stmt) and not type(child).__name__ == "match_case":
                    self._expressions(module, child, ctx)
            for block in (getattr(stmt, "body", []), getattr(stmt, "orelse", [])):
                self._block(module, block, ctx)
            for case in getattr(stmt, "cases", []):
                self._block(module, case.body, ctx)
            return
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            self._import(module, stmt, ctx)
            return
        if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and stmt.value is not None:
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            self._expressions(module, stmt.value, ctx)
            for target in targets:
                self._assignment_patch(module, target, stmt, ctx)
                if isinstance(target, (ast.Attribute, ast.Subscript)):
                    self._expressions(module, target.value, ctx)
                if isinstance(target, ast.Subscript):
                    self._expressions(module, target.slice, ctx)
            if ctx.cls is not None and ctx.self_name:
                for target in targets:
                    for node in ast.walk(target):
                        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == ctx.self_name:
                            ctx.cls.names.add(node.attr)
            if isinstance(stmt, ast.AnnAssign) and stmt.annotation is not None and not ctx.functions and module not in self._future_annotations:
                self._expressions(module, stmt.annotation, ctx)
            for target in targets:
                if isinstance(target, ast.Name):
                    if isinstance(stmt, ast.AugAssign):
                        env[target.id] = OPAQUE
                    elif isinstance(stmt, ast.AnnAssign) and is_upstream(annotated := self.qualify(module, annotation_class(stmt.annotation), env)):
                        env[target.id] = _Instance(annotated)  # `x: ServerArgs = …`
                    else:
                        env[target.id] = self.const(module, stmt.value, env)
                        if target.id == "EntryClass" and not ctx.functions:
                            self._entry_class(module, stmt, ctx)
                else:
                    env.update({n: OPAQUE for n in _assigned(target)})
            return
        if isinstance(stmt, ast.Delete):
            return
        for child in ast.iter_child_nodes(stmt):
            if not isinstance(child, ast.stmt):
                self._expressions(module, child, ctx)

    def _try(self, module: str, stmt: ast.stmt, ctx: _Context) -> None:
        handled: set[str] = set()
        for handler in stmt.handlers:
            handled |= _exception_names([handler.type]) if handler.type is not None else {"*"}
        body_ctx = replace(ctx, catches=ctx.catches + (Catch(frozenset(handled), stmt.lineno),)) if stmt.handlers else ctx
        self._block(module, stmt.body, body_ctx)
        imports = tuple(_upstream_imports(self, module, stmt.body))
        catches_import = bool(handled & IMPORT_ERRORS) or "*" in handled
        succeeded: Cond = ("imports", imports) if imports and catches_import else ("undecided",)
        body_text = f"the imports at line {stmt.lineno} succeed" if imports else f"the try at line {stmt.lineno} succeeds"
        for handler in stmt.handlers:
            guard = GuardCond(("not", succeeded) if succeeded[0] != "undecided" else succeeded, f"not ({body_text})", handler.lineno)
            self._block(module, handler.body, replace(ctx, guards=ctx.guards + (guard,)))
        if stmt.orelse:
            self._block(module, stmt.orelse, replace(ctx, guards=ctx.guards + (GuardCond(succeeded, body_text, stmt.lineno),)))
        self._block(module, stmt.finalbody, ctx)
        if imports and catches_import:
            # HAS_X = True in the body, HAS_X = False in a handler: HAS_X means "the imports resolve"
            for name in _flag_names(stmt):
                ctx.env[name] = _Condition(succeeded)
        # `try: from sglang.x import f` / `except ImportError: f = None`: f is the upstream
        # name wherever it is used (guarded by `f is not None`), not an unknown value
        fallbacks = {name for handler in stmt.handlers for name in _none_assigned(handler.body)}
        others = {name for handler in stmt.handlers for name in _assigned_in_all(handler.body)} - fallbacks
        for name, path in _imported_names(self, module, stmt.body).items():
            if name not in others:
                ctx.env[name] = _Named(path)
            if name in fallbacks and catches_import:  # `name is not None` means "the import resolved"
                self.none_fallbacks[(module, path)] = ("imports", tuple(i for i in imports if path in (i[0], f"{i[0]}.{i[1]}")))
        for node in stmt.body:
            for name in _assigned_in(node):
                ctx.env.setdefault(name, OPAQUE)

    def _function(self, module: str, node: ast.FunctionDef | ast.AsyncFunctionDef, ctx: _Context) -> None:
        for decorator in node.decorator_list:
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
        local = {**ctx.env, **{name: OPAQUE for name in _locals(node) | {p.name for p in params}}}
        path = self._function_path(module, node, ctx)
        inner = replace(ctx, env=local, functions=ctx.functions + (path,), in_class_body=False)
        if ctx.in_class_body:
            method = ctx.cls.methods.get(node.name)
            if method is not None and method.line == node.lineno:
                self_name = params[0].name if params and method.bound else None
                inner = replace(inner, self_name=self_name, method=method)
        for arg in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]:
            if arg.arg == inner.self_name:
                continue
            annotated = annotation_class(arg.annotation)
            if annotated is None:
                local[arg.arg] = _Instance(None, path, arg.arg)
            else:
                qualified = self.qualify(module, annotated, ctx.env)
                if is_upstream(qualified):
                    local[arg.arg] = _Instance(qualified)
        self._block(module, node.body, inner)

    def _function_path(self, module: str, node: ast.AST, ctx: _Context) -> str:
        if ctx.in_class_body:
            return f"{ctx.cls.path}.{node.name}"
        if ctx.functions:
            return f"{ctx.functions[-1]}.{node.name}"
        return f"{module}.{node.name}"

    def _class(self, module: str, node: ast.ClassDef, ctx: _Context) -> None:
        for decorator in node.decorator_list:
            self._expressions(module, decorator, ctx)
            self._decorator(module, node, decorator, ctx)
        for base in node.bases:
            self._expressions(module, base, ctx)
        path = self._function_path(module, node, ctx)
        bases = []
        for base in node.bases:
            qualified = self.qualify(module, dotted(base), ctx.env)
            bases.append(qualified or f"?{ast.unparse(base)}")
        cls = PluginClass(path, module, self.relfile(module), node.lineno, bases)
        self.scan.classes[path] = cls
        for stmt in node.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                decorators = tuple(filter(None, (dotted(d) for d in stmt.decorator_list)))
                cls.methods.setdefault(stmt.name, MethodDecl(stmt.name, stmt.lineno, function_params(stmt.args), decorators))
                if stmt.name in ("__getattr__", "__getattribute__"):
                    cls.dynamic = True
            for name in _assigned_in(stmt):
                cls.names.add(name)
        # a class body's own names are not visible inside its methods
        self._block(module, node.body, replace(ctx, cls=cls, in_class_body=True, env=dict(ctx.env), self_name=None, method=None))
        if not ctx.functions and ctx.cls is None:
            ctx.env[node.name] = _Named(path)

    def _import(self, module: str, stmt: ast.Import | ast.ImportFrom, ctx: _Context) -> None:
        env = ctx.env
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                env[alias.asname or alias.name.split(".")[0]] = _Named(alias.name if alias.asname else alias.name.split(".")[0])
                if is_upstream(alias.name):
                    self._dependency("import", alias.name, module, stmt, ctx, expression=f"import {alias.name}")
            return
        base = resolve_relative(module, self.files[module][1], stmt.level, stmt.module)
        for alias in stmt.names:
            if alias.name == "*":
                if is_upstream(base):
                    self._dependency("import", base, module, stmt, ctx, expression=f"from {base} import *")
                continue
            env[alias.asname or alias.name] = _Named(f"{base}.{alias.name}")
            if is_upstream(base):
                self._dependency("import", f"{base}.{alias.name}", module, stmt, ctx, expression=f"from {base} import {alias.name}", name=base)

    # ------------------------------------------------------------- expressions

    def _expressions(self, module: str, node: ast.AST | None, ctx: _Context) -> None:
        """References, calls and registrations inside one expression."""
        if node is None:
            return
        inner_chains: set[int] = set()
        for child in ast.walk(node):
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

    def _registry_key(self, module: str, node: ast.Subscript, ctx: _Context) -> None:
        """`X["key"]` read from an upstream name: the key is a dependency like a name (a KeyError
        when upstream's registry no longer holds it); the judge decides whether X is a registry."""
        expression = dotted(node.value)
        if expression is None or expression.split(".")[0] == ctx.self_name:
            return
        path = self.qualify(module, expression, ctx.env)
        key = self.const(module, node.slice, ctx.env)
        if is_upstream(path) and isinstance(key, str):
            self._dependency("registry_key", path, module, node, ctx, expression=ast.unparse(node), name=key)

    def _attribute(self, module: str, node: ast.Attribute, ctx: _Context) -> None:
        if isinstance(node.ctx, ast.Load):
            innermost = node
            while isinstance(innermost.value, ast.Attribute):
                innermost = innermost.value
            self._field(module, innermost, ctx)
        if ctx.self_name:
            innermost = node
            while isinstance(innermost.value, ast.Attribute):
                innermost = innermost.value
            if id(innermost) not in self._self_calls:
                self._self_reference(innermost, ctx)
        expression = dotted(node)
        if expression is None or isinstance(node.ctx, (ast.Store, ast.Del)):
            return
        head = expression.split(".")[0]
        if head == ctx.self_name:
            return
        path = self.qualify(module, expression, ctx.env)
        if is_upstream(path):
            self._dependency("reference", path, module, node, ctx, expression=expression, name=self.qualify(module, head, ctx.env))

    def _instance(self, module: str, node: ast.AST, env: dict) -> _Instance | None:
        """The upstream instance a variable holds, with evidence (see _Instance); `server_args`
        not bound to anything the scan knows is SGLang's ServerArgs (as writes to it are)."""
        if not isinstance(node, ast.Name):
            return None
        value = env.get(node.id, OPAQUE)
        if isinstance(value, _Instance):
            return value
        if node.id == "server_args" and value is OPAQUE and self.qualify(module, node.id, env) is None:
            return _Instance(SERVER_ARGS)
        return None

    def _field(self, module: str, node: ast.AST, ctx: _Context, value: ast.AST | None = None, attr: str | None = None, how: str | None = None) -> None:
        """A read (or, with how=WRITE, a write) of field `attr` of the upstream instance `value`
        holds; `node` is the `v.x` attribute itself when value and attr are not given."""
        if value is None:
            value, attr = node.value, node.attr
        instance = self._instance(module, value, ctx.env)
        if instance is None or (how == WRITE and isinstance(node, ast.Attribute) and value.id == "server_args"):
            return  # `server_args.x = …`: the server_arg kind judges it
        # hook / member carry the function and its parameter until finish() names the class
        self._dependency(
            "field", f"{instance.path}.{attr}" if instance.path else None, module, node, ctx,
            expression=ast.unparse(node), name=attr, how=how, hook=instance.function, member=instance.param,
        )

    def _self_reference(self, node: ast.Attribute, ctx: _Context, call: CallShape | None = None) -> bool:
        """Record `self.x` / `super().x` / `cls.x` / `type(self).x` in a method: the subclass
        check resolves x over the class's MRO. Returns whether `node` was one."""
        base = node.value
        if isinstance(base, ast.Name) and base.id == ctx.self_name:
            access = "class" if ctx.method and "classmethod" in {d.rsplit(".", 1)[-1] for d in ctx.method.decorators} else "instance"
        elif isinstance(base, ast.Call) and dotted(base.func) == "super" and not base.args:
            access = "super"
        elif isinstance(base, ast.Call) and dotted(base.func) == "type" and len(base.args) == 1 and isinstance(base.args[0], ast.Name) and base.args[0].id == ctx.self_name:
            access = "class"
        else:
            return False
        if isinstance(node.ctx, ast.Load):
            ctx.cls.self_refs.append((node.attr, access, node.lineno, call))
        elif access != "super":
            ctx.cls.names.add(node.attr)
        return True

    def _call(self, module: str, call: ast.Call, ctx: _Context) -> None:
        env = ctx.env
        if isinstance(call.func, ast.Call) and (dotted(call.func.func) or "").endswith("plugin_hook"):
            # `plugin_hook(target, type=…)(fn)`: the decorator applied by hand
            inner = call.func
            self._hook(module, call, _arg(inner, 0, "target"), _arg(inner, 1, "type"), call.args[0] if call.args else None, ctx)
            return
        name = "" if isinstance(call.func, ast.Call) else dotted(call.func) or ""
        qualified = self.qualify(module, name, env) or name
        if ctx.self_name and isinstance(call.func, ast.Attribute) and self._self_reference(call.func, ctx, _call_shape(call)):
            self._self_calls.add(id(call.func))
        if qualified == f"{HOOK_REGISTRY}.register" or name.endswith("HookRegistry.register"):
            self._hook(module, call, _arg(call, 0, "target"), _arg(call, 2, "hook_type"), _arg(call, 1, "hook"), ctx)
            return
        if name.endswith("register_attention_backend") and call.args:
            backend = self.const(module, call.args[0], env)
            self._dependency("attention_backend", qualified, module, call, ctx, name=backend if isinstance(backend, str) else "?")
            return
        if name == "setattr" and len(call.args) >= 2:
            owner = self.qualify(module, dotted(call.args[0]), env)
            attr = self.const(module, call.args[1], env)
            if is_upstream(owner) and isinstance(attr, str):
                value = self.qualify(module, dotted(call.args[2]), env) if len(call.args) > 2 else None
                self._dependency("patch", f"{owner}.{attr}", module, call, ctx, how="setattr", hook=None if is_upstream(value) else value)
            elif isinstance(attr, str) and self._instance(module, call.args[0], env) is not None:
                self._field(module, call, ctx, call.args[0], attr, how=WRITE)
            elif ctx.cls is not None and isinstance(call.args[0], ast.Name) and call.args[0].id == ctx.self_name:
                if isinstance(attr, str):
                    ctx.cls.names.add(attr)
                else:
                    ctx.cls.dynamic = True
            return
        if name == "getattr" and len(call.args) == 2:  # no default: AttributeError when it is gone
            owner = self.qualify(module, dotted(call.args[0]), env)
            attr = self.const(module, call.args[1], env)
            if is_upstream(owner) and isinstance(attr, str):
                self._dependency("reference", f"{owner}.{attr}", module, call, ctx, expression=ast.unparse(call))
            elif isinstance(attr, str):
                self._field(module, call, ctx, call.args[0], attr)
            return
        if name.endswith(("import_module", "__import__")) and call.args:
            self._dynamic_import(module, call, ctx)
            return
        if name.endswith(("environ.setdefault", "environ.__setitem__", "putenv")) and len(call.args) >= 2:
            if self.const(module, call.args[0], env) == EXTERNAL_MODEL_ENV:
                self._model_package(module, self.const(module, call.args[1], env), ctx)
        if isinstance(call.func, ast.Attribute) and call.func.attr == "set" and call.args and (dotted(call.func.value) or "").rsplit(".", 1)[-1] == EXTERNAL_MODEL_ENV:
            # SGLang's settings object: envs.SGLANG_EXTERNAL_MODEL_PACKAGE.set(...) writes the variable (srt/environ.py)
            self._model_package(module, self.const(module, call.args[0], env), ctx)
        if qualified in (f"{MODEL_REGISTRY}.register", "sglang.srt.models.registry.import_model_classes") and call.args:
            self._model_package(module, self.const(module, call.args[0], env), ctx)
        if isinstance(call.func, ast.Attribute) and call.func.attr in _IN_PLACE_EDITS:
            owner = self.qualify(module, dotted(call.func.value), env)
            self._architecture_use(module, call, ctx)
            if is_upstream(owner) and self._is_upstream_value(owner):
                self._dependency("patch", owner, module, call, ctx, how=f"in-place .{call.func.attr}")
                return
        if is_upstream(qualified):
            self._dependency("call", qualified, module, call, ctx, call=_call_shape(call), expression=name)
        elif ctx.functions and name and qualified != name or (ctx.functions and isinstance(ctx.env.get(name), _Named)):
            self.calls.setdefault(ctx.functions[-1], set()).add(qualified)
        self._kernel_key(module, call, ctx)

    def _dynamic_import(self, module: str, call: ast.Call, ctx: _Context) -> None:
        target = self.const(module, call.args[0], ctx.env)
        if not isinstance(target, str):
            # auto-discovery (pkgutil.iter_modules(__path__), os.listdir …) may load any submodule;
            # a name from elsewhere (a registry entry's module_path) says nothing about which
            if self._discovers(module):
                package = module if self.files[module][1] else module.rpartition(".")[0]
                self.dynamic_imports.setdefault(module, []).append((f"{package}.*", ctx.functions))
            return
        if target.startswith("."):
            package = self.const(module, _arg(call, 1, "package"), ctx.env)
            if not isinstance(package, str):
                return
            level = len(target) - len(target.lstrip("."))
            target = resolve_relative(package, True, level, target.lstrip(".") or None)
        self.dynamic_imports.setdefault(module, []).append((target, ctx.functions))
        if is_upstream(target):
            self._dependency("import", target, module, call, ctx, expression=ast.unparse(call))

    def _discovers(self, module: str) -> bool:
        """Whether the module lists files or modules (pkgutil.iter_modules / walk_packages,
        os.listdir / scandir, glob, Path.iterdir): the names it imports may be any of them."""
        tree = self.tree(module)
        return any(
            isinstance(node, ast.Call) and (dotted(node.func) or "").rsplit(".", 1)[-1] in _DISCOVERY
            for node in (ast.walk(tree) if tree else [])
        )

    def _model_package(self, module: str, package, ctx: _Context) -> None:
        """An external model package: SGLang imports each of its direct submodules
        (sglang/srt/models/registry.py import_model_classes)."""
        if isinstance(package, str) and package in self.files:
            self.dynamic_imports.setdefault(module, []).extend([(package, ctx.functions), (f"{package}.*", ctx.functions)])

    def _entry_class(self, module: str, stmt: ast.stmt, ctx: _Context) -> None:
        value = stmt.value
        for element in value.elts if isinstance(value, (ast.List, ast.Tuple)) else [value]:
            path = self.qualify(module, dotted(element), ctx.env)
            if path:
                self._dependency("model", MODEL_REGISTRY, module, stmt, ctx, name=path)
                # registered under its class's __name__ (registry.py import_model_classes)
                self._dependency("architecture", f"{MODEL_REGISTRY}.models", module, stmt, ctx, name=path.rsplit(".", 1)[-1], how="registers")

    def _architecture_use(self, module: str, node: ast.Compare | ast.Call, ctx: _Context) -> None:
        """Architecture strings the plugin tests (`archs[0] == "X"`, `"X" in SOME_ARCHS`) or adds
        to an upstream table (`multimodal_model_archs.append("X")`, `ModelRegistry.models.update({"X": …})`): each depends on upstream
        still saying it (harness.knowledge.architectures). Only where the other side is about
        model architectures (`….architectures`, `model_arch…`, or an upstream table named "…arch…":
        a GPU arch is not one), and only CamelCase strings."""
        if isinstance(node, ast.Call):  # only into upstream's tables: the plugin's own are its business
            sides, strings, how = [node.func.value], node.args, "adds"
        else:
            sides, strings, how = [node.left, *node.comparators], [node.left, *node.comparators], "tests"

        def upstream_table(side) -> str | None:
            path = self.qualify(module, dotted(side), ctx.env)
            if path == f"{MODEL_REGISTRY}.models":  # ModelRegistry.models.update({"X": cls})
                return path
            return path if is_upstream(path) and "arch" in path.rsplit(".", 1)[-1].lower() and self._is_upstream_value(path) else None

        tables = [upstream_table(s) for s in sides]
        about = [t is not None or (how == "tests" and any(w in ast.unparse(s).lower() for w in ("architectures", "model_arch"))) for s, t in zip(sides, tables)]
        if not any(about):
            return
        target = next((t for t in tables if t), f"{MODEL_REGISTRY}.models")
        for side in strings:
            value = [self.const(module, k, ctx.env) for k in side.keys] if isinstance(side, ast.Dict) else self.const(module, side, ctx.env)
            for name in value if isinstance(value, (list, tuple, set, frozenset)) else [value]:
                if isinstance(name, str) and ARCHITECTURE.match(name):
                    self._dependency("architecture", target, module, node, ctx, name=name, how=how, expression=ast.unparse(node)[:120])

    def _is_upstream_value(self, path: str) -> bool:
        ref = self.upstream_ref(path)
        return ref is None or ref.kind in ("value", "dynamic", "external")  # a missing one is still a patch

    def _kernel_key(self, module: str, call: ast.Call, ctx: _Context) -> None:
        """A kernel-replacement registry keyed by (upstream module path, kernel name)."""
        args = [self.const(module, arg, ctx.env) for arg in call.args[:2]]
        if len(args) == 1 and isinstance(args[0], list) and len(args[0]) == 2:
            args = args[0]
        if len(args) == 2 and all(isinstance(a, str) for a in args) and args[0].startswith("sglang.") and "." not in args[1]:
            self._dependency("kernel", f"{args[0]}.{args[1]}", module, call, ctx, name=f"{args[0]}:{args[1]}")

    def _decorator(self, module: str, owner: ast.AST, decorator: ast.AST, ctx: _Context) -> None:
        if not isinstance(decorator, ast.Call):
            return
        name = dotted(decorator.func) or ""
        qualified = self.qualify(module, name, ctx.env) or name
        if name.endswith("plugin_hook") or qualified.endswith("hook_registry.plugin_hook"):
            self._hook(module, decorator, _arg(decorator, 0, "target"), _arg(decorator, 1, "type"), owner, ctx)

    def _hook(self, module, node, target_node, type_node, hook_node, ctx: _Context) -> None:
        target = self.const(module, target_node, ctx.env)
        hook_type = "AFTER"  # HookRegistry's default
        if type_node is not None:
            value = self.const(module, type_node, ctx.env)
            if isinstance(value, _Named):
                hook_type = value.path.rsplit(".", 1)[-1].upper()
            elif isinstance(value, str):
                hook_type = value.upper()
            elif isinstance(type_node, ast.Call) and type_node.args and isinstance(self.const(module, type_node.args[0], ctx.env), str):
                hook_type = self.const(module, type_node.args[0], ctx.env).upper()  # HookType("around")
            else:
                hook_type = (dotted(type_node) or "?").rsplit(".", 1)[-1].upper()
        hook_path, definition = self._hook_callable(module, hook_node, ctx)
        params = function_params(definition.args) if isinstance(definition, (ast.FunctionDef, ast.AsyncFunctionDef)) else None
        kinds = {p.kind for p in params or ()}
        expression = ast.unparse(target_node) if target_node is not None else "?"
        if hook_path:
            self.hook_callables[hook_path] = target if isinstance(target, str) else expression
        self._dependency(
            "hook", target if isinstance(target, str) else None, module, node, ctx,
            hook_type=hook_type, hook=hook_path, params=params, expression=expression,
            passthrough="var" in kinds and "varkw" in kinds,
        )

    def _hook_callable(self, module: str, node, ctx: _Context) -> tuple[str | None, ast.AST | None]:
        """(plugin path, definition) of the function or class a hook registers."""
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return self._function_path(module, node, ctx), node
        name = dotted(node) if node is not None else None
        if not name:
            return None, None
        bound = ctx.env.get(name)
        path = bound.path if isinstance(bound, _Named) else self.qualify(module, name, ctx.env)
        if path is None:
            return None, None
        owner, _, short = path.rpartition(".")
        home = owner if owner in self.files else module
        tree = self.tree(home)
        definition = next(
            (n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n.name == short),
            None,
        ) if tree else None
        if isinstance(node, ast.Call):
            # a factory call, register(target, make_hook(cfg), …): the hook is what it returns
            made = _returned_function(definition) if isinstance(definition, (ast.FunctionDef, ast.AsyncFunctionDef)) else None
            return (f"{path}.{made.name}", made) if made is not None else (None, None)
        return path, definition

    def _assignment_patch(self, module: str, target: ast.AST, stmt: ast.stmt, ctx: _Context) -> None:
        env = ctx.env
        if isinstance(target, ast.Attribute):
            owner = self.qualify(module, dotted(target.value), env)
            if isinstance(target.value, ast.Subscript):  # sys.modules["sglang.x"].name = …
                loaded = self.const(module, target.value, env)
                owner = loaded.path if isinstance(loaded, _Named) else None
            if is_upstream(owner):
                value = self.qualify(module, dotted(stmt.value), env) if getattr(stmt, "value", None) is not None else None
                self._dependency("patch", f"{owner}.{target.attr}", module, stmt, ctx, how="assign", hook=None if is_upstream(value) else value)
            elif dotted(target.value) in ("server_args", "args") and owner is None:
                self._dependency("server_arg", f"sglang.srt.server_args.ServerArgs.{target.attr}", module, stmt, ctx, name=target.attr)
            else:  # `v.x += 1` reads x first
                self._field(module, target, ctx, how=None if isinstance(stmt, ast.AugAssign) else WRITE)
        elif isinstance(target, ast.Subscript):
            owner = self.qualify(module, dotted(target.value), env)
            key = self.const(module, target.slice, env)
            if is_upstream(owner):
                self._dependency("patch", owner, module, stmt, ctx, how="item-assign", name=key if isinstance(key, str) else None)
                if owner == f"{MODEL_REGISTRY}.models" and isinstance(key, str):
                    self._dependency("architecture", owner, module, stmt, ctx, name=key, how="registers")
            if isinstance(key, list) and len(key) == 2 and all(isinstance(k, str) for k in key) and key[0].startswith("sglang."):
                self._dependency("kernel", f"{key[0]}.{key[1]}", module, stmt, ctx, name=f"{key[0]}:{key[1]}")
            if isinstance(key, str) and key == EXTERNAL_MODEL_ENV and (dotted(target.value) or "").endswith("environ"):
                self._model_package(module, self.const(module, stmt.value, env), ctx)

    def _dependency(self, kind: str, target: str | None, module: str, node: ast.AST, ctx: _Context, **fields) -> None:
        self.scan.dependencies.append(Dependency(
            kind, target, module, self.relfile(module), node.lineno,
            scope=ctx.scope, guards=ctx.guards, catches=ctx.catches, enclosing=ctx.functions, **fields,
        ))

    # ------------------------------------------------------------- after every module

    def finish(self) -> None:
        """Decisions that need the whole plugin: hook timing, platform classes, entry points."""
        runtime = self._runs_in_hooks()
        for dep in self.scan.dependencies:
            if dep.kind != "hook":
                continue
            for function in dep.enclosing:
                why = next((runtime[r] for r in runtime if function == r or function.startswith(r + ".")), None)
                if why is not None:
                    dep.scope = "runtime"
                    dep.scope_reason = f"registered inside {function}, {why}: it runs only after HookRegistry.apply_hooks, so this hook is never applied"
                    break
        self.scan.platforms = [path for path in self.scan.classes if self._derives_from_platform(path)]
        for ep in self.scan.entry_points:
            self._entry_point_dependency(ep)
        self._class_dependencies()
        self._parameter_fields()

    def _parameter_fields(self) -> None:
        """Fields read on an unannotated parameter of a hook or an override: the class is what
        the upstream function it stands in for annotates the same-named parameter with; with no
        such evidence the reads are no dependencies (and `hasattr` on them stays undecided)."""
        classes: dict[tuple[str, str], str | None] = {}

        def class_of(function: str, param: str) -> str | None:
            if (function, param) not in classes:
                classes[function, param] = self._parameter_class(function, param)
            return classes[function, param]

        def rewrite(cond: Cond) -> Cond:
            if cond[0] == "field-of-param":
                found = class_of(cond[1], cond[2])
                return ("field", found, cond[3]) if found else ("undecided",)
            if cond[0] in ("not", "and", "or"):
                return (cond[0], *(rewrite(c) for c in cond[1:]))
            return cond

        kept = []
        for dep in self.scan.dependencies:
            if dep.kind == "field" and dep.target is None:
                found = class_of(dep.hook, dep.member)
                if found is None:
                    continue
                dep.target, dep.hook, dep.member = f"{found}.{dep.name}", None, None
            if any("field-of-param" in repr(g.cond) for g in dep.guards):
                dep.guards = tuple(replace(g, cond=rewrite(g.cond)) for g in dep.guards)
            kept.append(dep)
        self.scan.dependencies[:] = kept

    def _parameter_class(self, function: str, param: str) -> str | None:
        """The upstream class of parameter `param` of the plugin function `function`: annotated
        on the same-named parameter of the upstream function it hooks or overrides; else
        ServerArgs for `server_args`; else None."""
        upstream = []
        target = self.hook_callables.get(function)
        if target:
            found = self.index.resolve_hook_target(target)
            if found.ok and found.ref.kind == "function":
                upstream.append(found.ref)
        owner, _, method = function.rpartition(".")
        if owner in self.scan.classes:
            for base in self.upstream_bases(owner):
                found = self.index.resolve(f"{base}.{method}")
                if found.ok and found.ref.kind == "function":
                    upstream.append(found.ref)
                    break
        for ref in upstream:
            found = parameter_class(self.index, ref, param)
            if found:
                return found
        return SERVER_ARGS if param == "server_args" else None

    def _runs_in_hooks(self) -> dict[str, str]:
        """Plugin functions that run only when a hooked upstream function is called: the hook
        callables (and classes), their nested functions, and the plugin functions they call."""
        runtime = {host: f"itself a hook on {target}" for host, target in self.hook_callables.items()}
        queue = list(runtime)
        while queue:
            caller = queue.pop()
            for function, callees in self.calls.items():
                if function != caller and not function.startswith(caller + "."):
                    continue
                for callee in callees - runtime.keys():
                    runtime[callee] = f"called from {function}, {runtime[caller].replace('itself ', '')}"
                    queue.append(callee)
        return runtime

    def _entry_point_dependency(self, ep: EntryPoint) -> None:
        """`ep.load()` imports the module and getattr()s the callable; failing either, SGLang
        logs it and skips the plugin."""
        module, _, attr = ep.value.partition(":")
        head = attr.split(".")[0]
        if module not in self.files:
            problem = f"module {module} is not in this checkout"
        elif self.scan.modules[module].error or not head:
            return
        else:
            table = self.table(module)
            if head in table.names or table.has_getattr or table.star_imports:
                return
            problem = f"{module} defines no {head!r}"
        self.scan.dependencies.append(Dependency(
            "entry_point", ep.value, module if module in self.files else "", ep.file, 1, expression=problem, name=f"{ep.group}:{ep.name}",
        ))

    def _class_dependencies(self) -> None:
        """Overrides and `self.`/`super()` members of every plugin class over upstream classes,
        judged in the context of the most-derived plugin classes (their MRO decides)."""
        classes = self.scan.classes
        derived = {path for path in classes if self.upstream_bases(path)}
        bases_of_derived = {b for path in derived for b in self.plugin_mro(path)[1:]}
        contexts = [p for p in self.scan.platform_class_paths if p.replace(":", ".") in derived]
        contexts = [p.replace(":", ".") for p in contexts] + sorted(derived - bases_of_derived)
        seen: set[tuple] = set()
        for context in contexts:
            kind = "override" if context in self.scan.platforms else "subclass"
            mro = self.plugin_mro(context)
            if any(classes[k].dynamic for k in mro):
                continue
            for position, path in enumerate(mro):
                cls = classes[path]
                for name, method in cls.methods.items():
                    shadowed = any(name in classes[k].methods for k in mro[:position])
                    dunder = name.startswith("__") and name.endswith("__") and name != "__init__"
                    private = name.startswith("_") if kind == "override" else dunder
                    if shadowed or private or (cls.file, method.line, name) in seen:
                        continue
                    seen.add((cls.file, method.line, name))
                    self.scan.dependencies.append(Dependency(
                        kind, None, cls.module, cls.file, method.line, scope="module", params=method.params, bound=method.bound,
                        plugin_class=context, member=name, access="override", name=path,
                    ))
                for member, access, line, shape in cls.self_refs:
                    after = mro[position + 1 :] if access == "super" else mro
                    if any(member in classes[k].methods or member in classes[k].names for k in after):
                        continue
                    if (cls.file, line, member, access) in seen:
                        continue
                    seen.add((cls.file, line, member, access))
                    self.scan.dependencies.append(Dependency(
                        "subclass", None, cls.module, cls.file, line, scope="function", call=shape,
                        plugin_class=context, member=member, access=access, name=path,
                    ))

    def plugin_mro(self, path: str) -> list[str]:
        """The plugin classes in `path`'s MRO, in C3 order (their order does not depend on
        the upstream bases they share)."""
        classes = self.scan.classes

        def bases(ref: Ref) -> list[Ref]:
            cls = classes.get(ref.qualname)
            return [Ref("class", "", b) for b in cls.bases if b in classes] if cls else []

        return [ref.qualname for ref in c3(Ref("class", "", path), bases)]

    def returned_class_paths(self, module: str, function: str) -> list[str]:
        """What `activate()` returns: "pkg.mod:Class" or "pkg.mod.Class" (both load with
        pkgutil.resolve_name in sglang/srt/platforms/__init__.py)."""
        paths = []
        tree = self.tree(module)
        for node in ast.walk(tree) if tree else []:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == function:
                env: dict = {}
                for stmt in ast.walk(node):
                    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                        env[stmt.targets[0].id] = self.const(module, stmt.value, env)
                    if isinstance(stmt, ast.Return) and stmt.value is not None:
                        value = self.const(module, stmt.value, env)
                        if isinstance(value, str) and ("." in value or ":" in value):
                            paths.append(value)
        return paths

    def _derives_from_platform(self, path: str) -> bool:
        for base in self.upstream_bases(path):
            ref = self.upstream_ref(base)
            if base in PLATFORM_BASES or (ref is not None and ref.kind == "class" and any(cls.path in PLATFORM_BASES for cls in self.index.mro(ref))):
                return True
        return False

    def upstream_bases(self, path: str, seen: frozenset = frozenset()) -> list[str]:
        """Upstream classes `path` derives from, directly or through plugin classes."""
        cls = self.scan.classes.get(path)
        if cls is None or path in seen:
            return []
        found = []
        for base in cls.bases:
            if base in self.scan.classes:
                found.extend(self.upstream_bases(base, seen | {path}))
            elif is_upstream(base):
                found.append(base)
        return found


# ----------------------------------------------------------------------------- helpers


def _python_version() -> str:
    import sys

    return f"{sys.version_info.major}.{sys.version_info.minor}"


def _call_shape(call: ast.Call) -> CallShape:
    return CallShape(
        sum(1 for a in call.args if not isinstance(a, ast.Starred)),
        tuple(kw.arg for kw in call.keywords if kw.arg),
        any(isinstance(a, ast.Starred) for a in call.args),
        any(kw.arg is None for kw in call.keywords),
    )


def _arg(call: ast.Call, position: int, keyword: str) -> ast.AST | None:
    for kw in call.keywords:
        if kw.arg == keyword:
            return kw.value
    return call.args[position] if len(call.args) > position else None


def _bind(target: ast.AST, value) -> dict:
    if isinstance(target, ast.Name):
        return {target.id: value}
    if isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, list) and len(value) == len(target.elts):
        bound: dict = {}
        for element, item in zip(target.elts, value):
            bound.update(_bind(element, item))
        return bound
    return {name: OPAQUE for name in _assigned(target)}


def _assigned(target: ast.AST) -> list[str]:
    """Names an assignment target binds: `v.x = …` and `v[k] = …` rebind nothing (v keeps
    what it held)."""
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [name for element in target.elts for name in _assigned(element)]
    if isinstance(target, ast.Starred):
        return _assigned(target.value)
    return []


def _assigned_in(stmt: ast.stmt) -> list[str]:
    """Names a statement binds in its own scope (not inside nested functions or classes)."""
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [stmt.name]
    if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        return [name for t in targets if isinstance(t, (ast.Name, ast.Tuple, ast.List, ast.Starred)) for name in _assigned(t)]
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return [alias.asname or alias.name.split(".")[0] for alias in stmt.names if alias.name != "*"]
    names = []
    for block in ("body", "orelse", "finalbody"):
        for child in getattr(stmt, block, []) or []:
            if isinstance(child, ast.stmt):
                names.extend(_assigned_in(child))
    for handler in getattr(stmt, "handlers", []):
        names.extend(_assigned_in_all(handler.body))
    return names


def _assigned_in_all(body: list[ast.stmt]) -> list[str]:
    return [name for stmt in body for name in _assigned_in(stmt)]


def _locals(node: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """Names bound anywhere in a function body: Python makes them local for the whole body."""
    names = set(_assigned_in_all(node.body))
    for child in ast.walk(node):
        if isinstance(child, (ast.For, ast.AsyncFor, ast.comprehension)):
            names.update(_assigned(child.target))
        elif isinstance(child, ast.withitem) and child.optional_vars is not None:
            names.update(_assigned(child.optional_vars))
        elif isinstance(child, ast.NamedExpr):
            names.update(_assigned(child.target))
        elif isinstance(child, ast.ExceptHandler) and child.name:
            names.add(child.name)
    for child in ast.walk(node):
        if isinstance(child, (ast.Global, ast.Nonlocal)):
            names.difference_update(child.names)
    return names


def _exception_names(nodes) -> set[str]:
    names: set[str] = set()
    for node in nodes:
        if node is None:
            continue
        for element in node.elts if isinstance(node, ast.Tuple) else [node]:
            text = dotted(element)
            if text:
                names.add(text.rsplit(".", 1)[-1])
    return names


def _flag_names(stmt: ast.stmt) -> list[str]:
    def constants(body, value):
        return {
            t.id for s in body if isinstance(s, ast.Assign) and isinstance(s.value, ast.Constant) and s.value.value is value
            for t in s.targets if isinstance(t, ast.Name)
        }

    in_body = constants(stmt.body, True)
    in_handlers = set().union(*(constants(h.body, False) for h in stmt.handlers)) if stmt.handlers else set()
    return sorted(in_body & in_handlers)


def _string_version_compare(cond: Cond) -> bool:
    if cond[0] == "version":
        return not cond[3]
    return cond[0] in ("and", "or", "not") and any(_string_version_compare(c) for c in cond[1:])


def _returned_function(factory: ast.FunctionDef | ast.AsyncFunctionDef) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The nested function a factory returns when every `return` in it returns that one
    function by name (the closure a `make_hook(cfg)` builds), else None."""
    nested = {n.name: n for n in factory.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    returns, stack = [], list(factory.body)
    while stack:  # the factory's own returns, not those of the functions it defines
        node = stack.pop()
        if isinstance(node, ast.Return):
            returns.append(node)
        elif not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            stack.extend(ast.iter_child_nodes(node))
    names = {r.value.id for r in returns if isinstance(r.value, ast.Name)}
    if len(names) == 1 and len(returns) == sum(1 for r in returns if isinstance(r.value, ast.Name)) and next(iter(names)) in nested:
        return nested[next(iter(names))]
    return None


def _none_assigned(body: list[ast.stmt]) -> set[str]:
    """Names a handler body sets to None (`f = None`, `f = g = None`)."""
    return {
        target.id for stmt in body if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Constant) and stmt.value.value is None
        for target in stmt.targets if isinstance(target, ast.Name)
    }


def _imported_names(scanner: _Scanner, module: str, body: list[ast.stmt]) -> dict[str, str]:
    """{local name: dotted path} of the imports a `try` body makes at its own level."""
    names: dict[str, str] = {}
    for stmt in body:
        if isinstance(stmt, ast.Import):
            names.update({alias.asname or alias.name.split(".")[0]: alias.name if alias.asname else alias.name.split(".")[0] for alias in stmt.names})
        elif isinstance(stmt, ast.ImportFrom):
            base = resolve_relative(module, scanner.files[module][1], stmt.level, stmt.module)
            names.update({alias.asname or alias.name: f"{base}.{alias.name}" for alias in stmt.names if alias.name != "*" and base})
    return names


def _upstream_imports(scanner: _Scanner, module: str, body: list[ast.stmt]) -> list[tuple[str, str | None]]:
    """(module, name) of the upstream imports a `try` body makes at its own level."""
    found = []
    for stmt in body:
        if isinstance(stmt, ast.Import):
            found.extend((alias.name, None) for alias in stmt.names if is_upstream(alias.name))
        elif isinstance(stmt, ast.ImportFrom):
            base = resolve_relative(module, scanner.files[module][1], stmt.level, stmt.module)
            if is_upstream(base):
                found.extend((base, None if alias.name == "*" else alias.name) for alias in stmt.names)
    return found
