"""Static reading of a plugin repo: what it declares, registers and patches in upstream.

Real plugins build hook targets from module constants, f-strings and concatenation, register
hooks from functions that run at load, loop over tables of (target, hook), import hook modules
by name from a list, and patch upstream outside the registry. This module evaluates those
string expressions with a small constant folder and records every dependency with its file
and line; `platform_map` then judges each one against an upstream index.
"""

from __future__ import annotations

import ast
import configparser
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from harness.errors import HarnessError
from harness.knowledge.index import Ref, SymbolIndex
from harness.knowledge.symbols import ModuleTable, Param, dotted, extract_module, function_params, resolve_relative

PLATFORM_GROUP = "sglang.srt.platforms"
PLUGIN_GROUP = "sglang.srt.plugins"
PLATFORM_BASES = ("sglang.srt.platforms.interface.SRTPlatform", "sglang.srt.platforms.device_mixin.DeviceMixin")
HOOK_REGISTRY = "sglang.srt.plugins.hook_registry.HookRegistry"
_SKIP_DIRS = {"tests", "test", "docs", "build", "dist", "examples", "benchmarks", "__pycache__", "node_modules"}
_IN_PLACE_EDITS = {"append", "extend", "insert", "update", "add", "setdefault", "remove", "pop", "clear", "discard"}


@dataclass
class EntryPoint:
    group: str
    name: str
    value: str  # "pkg.module:callable"
    file: str


@dataclass
class HookDecl:
    target: str | None  # None when the expression could not be evaluated statically
    hook_type: str  # BEFORE | AFTER | AROUND | REPLACE
    module: str
    file: str
    line: int
    hook: str | None  # the hook function/class name
    passthrough: bool  # the hook forwards *args, **kwargs: upstream signature changes don't break it
    expression: str  # the target as written


@dataclass
class PatchDecl:
    target: str
    how: str  # setattr | assign | item-assign | in-place .append (…)
    module: str
    file: str
    line: int


@dataclass
class Registration:
    kind: str  # attention_backend | kernel | server_arg
    target: str  # upstream dotted path the registration depends on
    name: str  # backend name / kernel key / argument name
    module: str
    file: str
    line: int


@dataclass
class MethodDecl:
    name: str
    line: int
    params: tuple[Param, ...]


@dataclass
class PlatformClass:
    name: str  # dotted path in the plugin
    module: str
    file: str
    line: int
    upstream_bases: list[str]  # upstream classes it derives from, directly or through plugin classes
    methods: list[MethodDecl]


@dataclass
class PluginModule:
    name: str
    file: str
    live: bool = False


@dataclass
class PluginScan:
    root: Path
    entry_points: list[EntryPoint] = field(default_factory=list)
    modules: dict[str, PluginModule] = field(default_factory=dict)
    platforms: list[PlatformClass] = field(default_factory=list)
    hooks: list[HookDecl] = field(default_factory=list)
    patches: list[PatchDecl] = field(default_factory=list)
    registrations: list[Registration] = field(default_factory=list)
    platform_class_paths: list[str] = field(default_factory=list)  # returned by activate()


# ----------------------------------------------------------------------------- repo layout


def is_upstream(path: str | None) -> bool:
    return bool(path) and (path == "sglang" or path.startswith("sglang."))


def read_entry_points(root: Path) -> list[EntryPoint]:
    found: list[EntryPoint] = []
    pyproject = root / "pyproject.toml"
    if pyproject.exists():
        try:
            data = tomllib.loads(pyproject.read_text())
        except tomllib.TOMLDecodeError as exc:
            raise HarnessError(f"{pyproject}: malformed TOML: {exc}") from None
        groups = data.get("project", {}).get("entry-points", {})
        for group in (PLATFORM_GROUP, PLUGIN_GROUP):
            table = groups.get(group) if isinstance(groups, dict) else None
            if table is not None and not isinstance(table, dict):
                raise HarnessError(f'{pyproject}: [project.entry-points."{group}"] must be a table of name = "module:attr"')
            for name, value in (table or {}).items():
                found.append(EntryPoint(group, name, str(value).replace(" ", ""), "pyproject.toml"))
    setup_cfg = root / "setup.cfg"
    if setup_cfg.exists():
        parser = configparser.ConfigParser()
        try:
            parser.read(setup_cfg)
        except configparser.Error as exc:
            raise HarnessError(f"{setup_cfg}: malformed: {str(exc).splitlines()[0]}") from None
        if parser.has_section("options.entry_points"):
            for group in (PLATFORM_GROUP, PLUGIN_GROUP):
                for line in parser.get("options.entry_points", group, fallback="").splitlines():
                    if "=" in line:
                        name, value = (part.strip() for part in line.split("=", 1))
                        found.append(EntryPoint(group, name, value.replace(" ", ""), "setup.cfg"))
    setup_py = root / "setup.py"
    if setup_py.exists():
        found.extend(_setup_py_entry_points(setup_py))
    return found


def _setup_py_entry_points(setup_py: Path) -> list[EntryPoint]:
    try:
        tree = ast.parse(setup_py.read_bytes())
    except SyntaxError:
        return []
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg == "entry_points" and isinstance(node.value, ast.Dict):
            for key, value in zip(node.value.keys, node.value.values):
                group = key.value if isinstance(key, ast.Constant) else None
                if group in (PLATFORM_GROUP, PLUGIN_GROUP) and isinstance(value, (ast.List, ast.Tuple)):
                    for element in value.elts:
                        if isinstance(element, ast.Constant) and "=" in str(element.value):
                            name, spec = (p.strip() for p in str(element.value).split("=", 1))
                            found.append(EntryPoint(group, name, spec.replace(" ", ""), "setup.py"))
    return found


def plugin_module_files(root: Path) -> dict[str, tuple[Path, bool]]:
    """module name -> (file, is_package) for the plugin's own code (src/ layout or flat)."""
    base = root / "src" if (root / "src").is_dir() else root
    modules: dict[str, tuple[Path, bool]] = {}
    for dirpath, dirnames, filenames in os.walk(base):
        rel_dir = Path(dirpath).relative_to(base)
        dirnames[:] = sorted(
            d for d in dirnames if d not in _SKIP_DIRS and not d.startswith(".") and (Path(dirpath) / d / "__init__.py").exists()
        )
        if rel_dir != Path(".") and not (Path(dirpath) / "__init__.py").exists():
            continue
        for filename in sorted(filenames):
            if not filename.endswith(".py") or (rel_dir == Path(".") and filename in ("setup.py", "conftest.py", "noxfile.py")):
                continue
            parts = [*rel_dir.parts, filename[:-3]]
            is_package = parts[-1] == "__init__"
            if is_package:
                parts = parts[:-1]
            if parts:
                modules[".".join(parts)] = (Path(dirpath) / filename, is_package)
    return modules


# ----------------------------------------------------------------------------- scanning


class _Opaque:
    """A value the constant folder cannot know (a call result, an expression)."""


OPAQUE = _Opaque()


@dataclass(frozen=True)
class _Named:
    """A name the folder can identify but not evaluate: a function, a class, an enum member."""

    path: str


def scan_plugin(root: Path, index: SymbolIndex) -> PluginScan:
    root = root.resolve()
    if not root.is_dir():
        raise HarnessError(f"plugin path {str(root)!r} is not a directory")
    entry_points = read_entry_points(root)
    files = plugin_module_files(root)
    if not entry_points:
        raise HarnessError(
            f"{root}: not an SGLang plugin: no '{PLATFORM_GROUP}' or '{PLUGIN_GROUP}' entry points in pyproject.toml/setup.cfg/setup.py"
        )
    scan = PluginScan(root, entry_points)
    scanner = _Scanner(root, files, index)
    for name in files:
        scan.modules[name] = PluginModule(name, scanner.relfile(name))
        scanner.scan_module(name, scan)
    for ep in entry_points:
        module, _, attr = ep.value.partition(":")
        if ep.group == PLATFORM_GROUP and module in files:
            scan.platform_class_paths.extend(scanner.returned_class_paths(module, attr))
    _mark_live(scan, scanner)
    scan.platforms = scanner.platform_classes()
    return scan


def _mark_live(scan: PluginScan, scanner: "_Scanner") -> None:
    """Live = imported, transitively, when SGLang loads the entry points and the platform class."""
    roots = [ep.value.partition(":")[0] for ep in scan.entry_points]
    roots += [path.partition(":")[0] for path in scan.platform_class_paths]
    queue = []
    for name in roots:
        queue.extend(_with_parents(name))
    while queue:
        name = queue.pop()
        if name.endswith(".*"):
            queue.extend(m for m in scan.modules if m.startswith(name[:-1]))
            continue
        module = scan.modules.get(name)
        if module is None or module.live:
            continue
        module.live = True
        for imported in scanner.imports_of(name):
            queue.extend(_with_parents(imported))


def _with_parents(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[: i + 1]) for i in range(len(parts))]


class _Scanner:
    def __init__(self, root: Path, files: dict[str, tuple[Path, bool]], index: SymbolIndex):
        self.root = root
        self.files = files
        self.index = index
        self.tables: dict[str, ModuleTable] = {}
        self.trees: dict[str, ast.Module] = {}
        self.dynamic_imports: dict[str, list[str]] = {}
        self._class_nodes: dict[str, tuple[str, ast.ClassDef]] = {}

    def relfile(self, module: str) -> str:
        return str(self.files[module][0].relative_to(self.root))

    def tree(self, module: str) -> ast.Module:
        if module not in self.trees:
            path, is_package = self.files[module]
            source = path.read_bytes()
            try:
                self.trees[module] = ast.parse(source)
            except SyntaxError as exc:
                raise HarnessError(f"{path}: plugin file does not parse: {exc.msg} (line {exc.lineno})") from None
            self.tables[module] = extract_module(module, self.relfile(module), source, is_package, nested_imports=True)
        return self.trees[module]

    def imports_of(self, module: str) -> list[str]:
        self.tree(module)
        return [*self.tables[module].imports, *self.dynamic_imports.get(module, [])]

    # ------------------------------------------------------------- name resolution

    def qualify(self, module: str, expression: str | None, env: dict | None = None) -> str | None:
        """The absolute dotted path a name in `module` refers to (plugin or upstream); `env`
        holds what a function body bound locally (imports, `import_module` results)."""
        if not expression:
            return None
        head, _, rest = expression.partition(".")
        local = (env or {}).get(head)
        if isinstance(local, _Named):
            return f"{local.path}.{rest}" if rest else local.path
        self.tree(module)
        binding = self.tables[module].names.get(head)
        if binding is None:
            return None
        if binding.kind in ("def", "class", "value"):
            base = f"{module}.{head}"
        elif binding.kind == "module":
            base = binding.target
        elif binding.kind == "from":
            source_module, name = binding.target.split(":")
            base = f"{source_module}.{name}"
            if source_module in self.files and f"{source_module}.{name}" not in self.files:
                # a name re-exported through another plugin module: follow it there
                base = self.qualify(source_module, name) or base
        elif binding.kind == "alias":
            base = self.qualify(module, binding.target) or binding.target
        else:
            return None
        return f"{base}.{rest}" if rest else base

    def upstream_ref(self, dotted_path: str | None) -> Ref | None:
        if not is_upstream(dotted_path):
            return None
        resolution = self.index.resolve(dotted_path)
        return resolution.ref

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
            if node.id in ("__name__",):
                return module
            if node.id == "__package__":
                return module if self.files[module][1] else module.rpartition(".")[0]
            return self.module_constant(module, node.id, depth + 1)
        if isinstance(node, ast.Attribute):
            owner = self.qualify(module, dotted(node.value), env)
            if owner in self.files:
                return self.module_constant(owner, node.attr, depth + 1)
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
            if isinstance(fmt, str) and not isinstance(args, _Opaque):
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
        if isinstance(node, ast.Call) and (dotted(node.func) or "").endswith("import_module") and node.args:
            imported = self.const(module, node.args[0], env, depth + 1)
            return _Named(imported) if isinstance(imported, str) and not imported.startswith(".") else OPAQUE
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            owner = self.const(module, node.func.value, env, depth + 1)
            args = [self.const(module, arg, env, depth + 1) for arg in node.args]
            if isinstance(owner, str) and node.func.attr == "join" and len(args) == 1 and isinstance(args[0], list):
                if all(isinstance(part, str) for part in args[0]):
                    return owner.join(args[0])
            if isinstance(owner, str) and node.func.attr == "format" and all(isinstance(a, (str, int)) for a in args):
                try:
                    return owner.format(*args)
                except (IndexError, KeyError):
                    return OPAQUE
            if isinstance(owner, dict) and node.func.attr == "items" and not args:
                return [list(item) for item in owner.items()]
        return OPAQUE

    def module_constant(self, module: str, name: str, depth: int):
        if module not in self.files:
            return OPAQUE
        tree = self.tree(module)
        for stmt in reversed(tree.body):  # the last module-level binding wins
            if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in stmt.targets):
                return self.const(module, stmt.value, {}, depth)
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.target.id == name:
                return self.const(module, stmt.value, {}, depth)
        binding = self.tables[module].names.get(name)
        if binding is not None and binding.kind == "from":
            source_module, source_name = binding.target.split(":")
            if source_module in self.files:
                return self.module_constant(source_module, source_name, depth + 1)
        qualified = self.qualify(module, name)
        return _Named(qualified) if qualified else OPAQUE

    # ------------------------------------------------------------- the walk

    def scan_module(self, module: str, scan: PluginScan) -> None:
        tree = self.tree(module)
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                self._class_nodes[f"{module}.{node.name}"] = (module, node)
        self._walk(module, tree.body, {}, scan)

    def _walk(self, module: str, body: list[ast.stmt], env: dict, scan: PluginScan) -> None:
        env = dict(env)  # statements see the bindings made before them in the same body
        for stmt in body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                for decorator in stmt.decorator_list:
                    self._decorator(module, stmt, decorator, env, scan)
                self._walk(module, stmt.body, env, scan)
                continue
            if isinstance(stmt, ast.For):
                iterable = self.const(module, stmt.iter, env)
                if isinstance(iterable, list):
                    for element in iterable:
                        self._walk(module, stmt.body, {**env, **_bind(stmt.target, element)}, scan)
                else:
                    self._walk(module, stmt.body, env, scan)
                self._walk(module, stmt.orelse, env, scan)
                continue
            if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                env.update(self._import_bindings(module, stmt))
            if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                for target in targets:
                    self._assignment_patch(module, target, stmt, env, scan)
                    if isinstance(target, ast.Name):
                        env[target.id] = self.const(module, stmt.value, env)
            for child in ast.iter_child_nodes(stmt):
                if isinstance(child, ast.stmt):
                    continue
                for node in ast.walk(child):
                    if isinstance(node, ast.Call):
                        self._call(module, node, env, scan)
            nested = [getattr(stmt, attr, None) for attr in ("body", "orelse", "finalbody")]
            nested += [handler.body for handler in getattr(stmt, "handlers", [])]
            nested += [case.body for case in getattr(stmt, "cases", [])]
            for block in nested:
                if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                    self._walk(module, block, env, scan)

    def _import_bindings(self, module: str, stmt: ast.Import | ast.ImportFrom) -> dict:
        if isinstance(stmt, ast.Import):
            return {
                alias.asname or alias.name.split(".")[0]: _Named(alias.name if alias.asname else alias.name.split(".")[0])
                for alias in stmt.names
            }
        base = resolve_relative(module, self.files[module][1], stmt.level, stmt.module)
        return {alias.asname or alias.name: _Named(f"{base}.{alias.name}") for alias in stmt.names if alias.name != "*"}

    def _loc(self, module: str, node: ast.AST) -> dict:
        return {"module": module, "file": self.relfile(module), "line": node.lineno}

    def _decorator(self, module: str, owner: ast.AST, decorator: ast.AST, env: dict, scan: PluginScan) -> None:
        if not isinstance(decorator, ast.Call):
            return
        name = dotted(decorator.func) or ""
        qualified = self.qualify(module, name, env) or name
        if name.endswith("plugin_hook") or qualified.endswith("hook_registry.plugin_hook"):
            target_node = _arg(decorator, 0, "target")
            type_node = _arg(decorator, 1, "type")
            self._hook(module, decorator, target_node, type_node, owner, env, scan)
        elif name.endswith("register_attention_backend"):
            backend = self.const(module, _arg(decorator, 0, "name"), env)
            scan.registrations.append(
                Registration("attention_backend", qualified, backend if isinstance(backend, str) else "?", **self._loc(module, decorator))
            )
        else:
            self._kernel_key(module, decorator, env, scan)

    def _call(self, module: str, call: ast.Call, env: dict, scan: PluginScan) -> None:
        if isinstance(call.func, ast.Call) and (dotted(call.func.func) or "").endswith("plugin_hook"):
            # `plugin_hook(target, type=…)(fn)`: the decorator applied by hand
            inner = call.func
            self._hook(module, call, _arg(inner, 0, "target"), _arg(inner, 1, "type"), call.args[0] if call.args else None, env, scan)
            return
        # `register_x("name")(cls)`: the inner call is visited on its own
        name = "" if isinstance(call.func, ast.Call) else dotted(call.func) or ""
        qualified = self.qualify(module, name, env) or name
        if qualified == f"{HOOK_REGISTRY}.register" or name.endswith("HookRegistry.register"):
            hook_node = _arg(call, 1, "hook")
            self._hook(module, call, _arg(call, 0, "target"), _arg(call, 2, "hook_type"), hook_node, env, scan)
            return
        if name.endswith("register_attention_backend") and call.args:
            backend = self.const(module, call.args[0], env)
            scan.registrations.append(
                Registration("attention_backend", qualified, backend if isinstance(backend, str) else "?", **self._loc(module, call))
            )
            return
        if name in ("setattr",) and len(call.args) >= 2:
            owner = self.qualify(module, dotted(call.args[0]), env)
            attr = self.const(module, call.args[1], env)
            if is_upstream(owner) and isinstance(attr, str):
                scan.patches.append(PatchDecl(f"{owner}.{attr}", "setattr", **self._loc(module, call)))
            return
        if name.endswith(("import_module", "__import__")) and call.args:
            target = self.const(module, call.args[0], env)
            if not isinstance(target, str):
                # e.g. auto-discovery over pkgutil.iter_modules(__path__): any submodule may load
                package = module if self.files[module][1] else module.rpartition(".")[0]
                self.dynamic_imports.setdefault(module, []).append(f"{package}.*")
            else:
                if target.startswith("."):
                    package = self.const(module, _arg(call, 1, "package"), env)
                    if isinstance(package, str):
                        level = len(target) - len(target.lstrip("."))
                        target = resolve_relative(package, True, level, target.lstrip(".") or None)
                self.dynamic_imports.setdefault(module, []).append(target)
            return
        if isinstance(call.func, ast.Attribute) and call.func.attr in _IN_PLACE_EDITS:
            owner = self.qualify(module, dotted(call.func.value), env)
            if is_upstream(owner) and self._is_upstream_value(owner):
                scan.patches.append(PatchDecl(owner, f"in-place .{call.func.attr}", **self._loc(module, call)))
                return
        self._kernel_key(module, call, env, scan)

    def _is_upstream_value(self, path: str) -> bool:
        ref = self.upstream_ref(path)
        return ref is None or ref.kind in ("value", "dynamic", "external")  # a missing one is still a patch

    def _kernel_key(self, module: str, call: ast.Call, env: dict, scan: PluginScan) -> None:
        """A kernel-replacement registry keyed by (upstream module path, kernel name)."""
        args = [self.const(module, arg, env) for arg in call.args[:2]]
        if len(args) == 1 and isinstance(args[0], list) and len(args[0]) == 2:
            args = args[0]
        if len(args) == 2 and all(isinstance(a, str) for a in args) and args[0].startswith("sglang.") and "." not in args[1]:
            scan.registrations.append(Registration("kernel", f"{args[0]}.{args[1]}", f"{args[0]}:{args[1]}", **self._loc(module, call)))

    def _hook(self, module, node, target_node, type_node, hook_node, env, scan: PluginScan) -> None:
        target = self.const(module, target_node, env)
        hook_type = "AFTER"  # HookRegistry's default
        if type_node is not None:
            value = self.const(module, type_node, env)
            if isinstance(value, _Named):
                hook_type = value.path.rsplit(".", 1)[-1].upper()
            elif isinstance(value, str):
                hook_type = value.upper()
            elif isinstance(type_node, ast.Call) and type_node.args and isinstance(self.const(module, type_node.args[0], env), str):
                hook_type = self.const(module, type_node.args[0], env).upper()  # HookType("around")
            else:
                hook_type = (dotted(type_node) or "?").rsplit(".", 1)[-1].upper()
        hook_name, passthrough = self._hook_function(module, hook_node, env)
        expression = ast.unparse(target_node) if target_node is not None else "?"
        scan.hooks.append(
            HookDecl(target if isinstance(target, str) else None, hook_type, hook=hook_name, passthrough=passthrough, expression=expression, **self._loc(module, node))
        )

    def _hook_function(self, module: str, node, env: dict) -> tuple[str | None, bool]:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            definition = node
        else:
            name = dotted(node) if node is not None else None
            bound = env.get(name) if name else None
            if isinstance(bound, _Named):  # a hook function picked from a table in a loop
                name = bound.path.rsplit(".", 1)[-1]
            definition = next(
                (n for n in ast.walk(self.tree(module)) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n.name == name),
                None,
            )
            if definition is None:
                return name, False
        if isinstance(definition, ast.ClassDef):
            return definition.name, False
        params = function_params(definition.args)
        kinds = {p.kind for p in params}
        return definition.name, "var" in kinds and "varkw" in kinds

    def _assignment_patch(self, module: str, target: ast.AST, stmt: ast.stmt, env: dict, scan: PluginScan) -> None:
        if isinstance(target, ast.Attribute):
            owner = self.qualify(module, dotted(target.value), env)
            if is_upstream(owner):
                scan.patches.append(PatchDecl(f"{owner}.{target.attr}", "assign", **self._loc(module, stmt)))
            elif dotted(target.value) in ("server_args", "args") and owner is None:
                scan.registrations.append(
                    Registration("server_arg", f"sglang.srt.server_args.ServerArgs.{target.attr}", target.attr, **self._loc(module, stmt))
                )
        elif isinstance(target, ast.Subscript):
            owner = self.qualify(module, dotted(target.value), env)
            key = self.const(module, target.slice, env)
            if is_upstream(owner):
                scan.patches.append(PatchDecl(owner, "item-assign", **self._loc(module, stmt)))
            if isinstance(key, list) and len(key) == 2 and all(isinstance(k, str) for k in key) and key[0].startswith("sglang."):
                scan.registrations.append(Registration("kernel", f"{key[0]}.{key[1]}", f"{key[0]}:{key[1]}", **self._loc(module, stmt)))

    # ------------------------------------------------------------- platform classes

    def returned_class_paths(self, module: str, function: str) -> list[str]:
        """`activate()` returns "pkg.platform:MyPlatform" (or None): collect those strings."""
        paths = []
        for node in ast.walk(self.tree(module)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == function:
                env: dict = {}
                for stmt in ast.walk(node):
                    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                        env[stmt.targets[0].id] = self.const(module, stmt.value, env)
                    if isinstance(stmt, ast.Return):
                        value = self.const(module, stmt.value, env)
                        if isinstance(value, str) and ":" in value:
                            paths.append(value)
        return paths

    def platform_classes(self) -> list[PlatformClass]:
        found = []
        for path, (module, node) in sorted(self._class_nodes.items()):
            upstream = self._upstream_bases(path, set())
            if not any(self._derives_from_platform(base) for base in upstream):
                continue
            methods = [
                MethodDecl(stmt.name, stmt.lineno, function_params(stmt.args))
                for stmt in node.body
                if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and not stmt.name.startswith("_")
            ]
            found.append(PlatformClass(path, module, self.relfile(module), node.lineno, upstream, methods))
        return found

    def _upstream_bases(self, path: str, seen: set[str]) -> list[str]:
        if path in seen or path not in self._class_nodes:
            return []
        seen.add(path)
        module, node = self._class_nodes[path]
        bases = []
        for base in node.bases:
            qualified = self.qualify(module, dotted(base))
            if qualified is None:
                continue
            if qualified in self._class_nodes:
                bases.extend(self._upstream_bases(qualified, seen))
            elif is_upstream(qualified):
                bases.append(qualified)
        return bases

    def _derives_from_platform(self, upstream_path: str) -> bool:
        ref = self.upstream_ref(upstream_path)
        if ref is None or ref.kind != "class":
            return upstream_path in PLATFORM_BASES or upstream_path.endswith((".SRTPlatform", ".DeviceMixin"))
        return any(cls.path in PLATFORM_BASES for cls in self.index.mro(ref))


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
    return {}
