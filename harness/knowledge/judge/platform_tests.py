"""Upstream calls the plugin's own platform class keeps from running.

A call upstream makes under `if current_platform.is_out_of_tree():` (or `is_cuda()`, `not
current_platform.is_cpu()`, …) runs only where that test holds for the engine's platform
instance, which the plugin's activated platform class builds. Such a predicate is decided
when the first class of that class's MRO defining it returns a constant, or compares a class
attribute with constants (SGLang 0.5.23 srt/platforms/device_mixin.py: `return self._enum ==
PlatformEnum.OOT`, `return self._enum in (PlatformEnum.CUDA, …)`), and the attribute is a
constant the MRO binds in a class body (`_enum = PlatformEnum.CUDA`). A call under a test so
decided false never runs with the plugin active (docs/static-check.md, "platform tests").
Anything else (a predicate with arguments, an attribute set on instances or computed) is not
decided, and the call counts as before.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from harness.engines import profile
from harness.knowledge.judge.callsites import CallSite, platform_instance_read, tests_at
from harness.knowledge.judge.context import JudgeContext
from harness.knowledge.model import AllOf, AnyOf, Const, Not, Outcome, Ref, Undecided, dotted, kleene
from harness.knowledge.model.symbol_records import resolve_relative

_UNKNOWN = object()


def platform_skip(judge: JudgeContext, site: CallSite, deep: bool = True) -> str | None:
    """Why upstream's call at `site` never runs with the plugin active, as text: the first test
    it runs under (its function's `if`/`while`/conditional tests, callsites.tests_at) that the
    plugin's activated platform class decides against the branch taken; else its module being
    imported only under such tests (off_platform_module); else its class belonging to a model
    package the plugin replaces (_replaced_model). None when none of these holds; without
    `deep`, the call's own tests only (the other two read the whole release)."""
    active = judge.scan.active_platform
    instance = profile().platform_instance
    module = judge.index.module_at(site.path)
    if module is None:
        return None
    if active and instance:
        # (a module that never names the platform instance has no such test: not parsed for it)
        for home, test, positive in tests_at(judge.index, site) if instance.rpartition(".")[2].encode() in judge.index.sources().get(module, b"") else ():
            off = _against(judge, home, test, positive)
            if off is not None:
                return f"it runs only when {off}"
        off = off_platform_module(judge, module) if deep else None
        if off is not None:
            return f"its module {module} is imported only when {off}"
    return _replaced_model(judge, module, site.line) if deep else None


def _replaced(judge: JudgeContext) -> set[str]:
    """The architectures the plugin registers its own model class for, where that runs."""
    return {dep.name for dep in judge.scan.dependencies if dep.kind == "architecture" and dep.how == "registers" and dep.live
            and not any(judge.evaluate(g.cond) is False for g in dep.guards)}


def _replaced_model(judge: JudgeContext, module: str, line: int) -> str | None:
    """Why upstream's call at `module`:`line` never runs with the plugin active: it sits in a
    class of a model package whose every model-registry entry (`"Arch": ("vllm.models.x",
    "Cls")`) names an architecture the plugin registers its own class for, so vLLM never builds
    that package's models (register_model overwrites the entry: vllm
    model_executor/models/registry.py), and no upstream module outside the package names the
    class. None otherwise (a package named any other way may be loaded by name)."""
    replaced = _replaced(judge)
    tree = judge.index.tree(module) if replaced else None
    cls = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.lineno <= line <= (n.end_lineno or n.lineno)), None) if tree else None
    if cls is None:
        return None
    parts = module.split(".")
    for depth in range(len(parts), 1, -1):
        package = ".".join(parts[:depth])
        keys = _registry_keys(judge, package)
        if keys is None:
            return None
        if keys:
            break
    else:
        return None
    if not keys <= replaced or _named_outside(judge, cls.name, package):
        return None
    return (f"it runs in {cls.name}, which only {package} builds, a model package whose every architecture "
            f"({', '.join(sorted(keys))}) the plugin registers its own class for")


def _named_outside(judge: JudgeContext, name: str, package: str) -> bool:
    """Whether an upstream module outside `package` names `name` as a word. Memoised per judge."""
    memo = judge.memo.named_outside
    if (package, name) not in memo:
        word = re.compile(rb"\b" + re.escape(name.encode()) + rb"\b")
        memo[package, name] = any(word.search(text) for m, text in judge.index.sources().items() if not (m == package or m.startswith(package + ".")))
    return memo[package, name]


def _registry_keys(judge: JudgeContext, package: str) -> set[str] | None:
    """The architectures whose registry entries name `package` itself (_named_by_string, exact)
    across upstream; None when a string names it otherwise. Memoised per judge."""
    memo = judge.memo.registry_keys
    if package not in memo:
        found: set[str] | None = set()
        for importer in sorted(_texts(judge).quoted.get(package, ())):
            keys = _named_by_string(judge, importer, package, exact=True)
            if keys is None:
                found = None
                break
            found |= keys
        memo[package] = found
    return memo[package]


def _against(judge: JudgeContext, module: str, test: ast.expr, positive: bool) -> str | None:
    """`test` (its branch `positive`) as text when the plugin's platform class decides it
    against that branch, else None."""
    value = kleene(_cond(judge, module, test), lambda _: None)
    if value is None or value == positive:
        return None
    text = ast.unparse(test)
    return f"`{text if positive else f'not ({text})'}`, false for the plugin's platform class {judge.scan.active_platform}"


def off_platform_module(judge: JudgeContext, module: str) -> str | None:
    """Why upstream `module` is never imported with the plugin's platform active: every upstream
    import of it (or of a module inside it, which imports it first) sits under a test the
    platform class decides against it (`if current_platform.is_rocm(): from .amd.model import
    …` in vllm 0.23.0 models/deepseek_v4/__init__.py), or in a module itself so never imported.
    None when one such import may run, when none is found (it may be loaded by name), or when
    a string names it (importlib). Memoised per judge."""
    memo = judge.memo.off_platform_modules
    if module not in memo:
        memo[module] = None  # (asked again through an import cycle: taken as imported)
        memo[module] = _off_platform(judge, module)
    return memo[module]


def _off_platform(judge: JudgeContext, module: str) -> str | None:
    texts = _texts(judge)
    parent = module.rpartition(".")[0]
    near = module.rsplit(".", 2)[0] if module.count(".") >= 2 else parent  # relative imports come from within the package
    reasons: list[str] = []
    replaced = _replaced(judge)
    named = texts.quoted.get(module, set())
    candidates = (texts.imported.get(module.rpartition(".")[2], set()) | named) - {module}
    for importer in sorted(candidates):
        text = judge.index.sources()[importer]
        if importer not in named and not (importer.startswith(near + ".") or importer == near or parent.encode() in text):
            continue
        if importer in named:
            keys = _named_by_string(judge, importer, module)
            if keys is None or not keys <= replaced:
                return None
            if keys:
                reasons.append(f"the model registry loads it, for {', '.join(sorted(keys))}, which the plugin registers its own class for")
        tree = judge.index.tree(importer)
        is_package = judge.index.files[importer][1]
        for node, tests in _imports(tree):
            if not any(m == module or m.startswith(module + ".") for m in _imported_modules(importer, is_package, node)):
                continue
            off = next((o for t, positive in tests if (o := _against(judge, importer, t, positive)) is not None), None)
            if off is None and importer != module:
                chained = off_platform_module(judge, importer)
                off = f"{importer} is imported, which happens only when {chained}" if chained is not None else None
            if off is None:
                return None
            reasons.append(off)
    return reasons[0] if reasons else None


@dataclass(frozen=True)
class _Texts:
    """What upstream's sources say, read once per judge: `imported`, each word an import
    statement names (a module's last name, or a name imported from one) -> the modules whose
    import statements name it; `quoted`, each dotted string a source holds, and each of its
    prefixes ("a.b" of "a.b.C" or "a.b:C") -> the modules holding it."""

    imported: dict[str, set[str]]
    quoted: dict[str, set[str]]


# (a parenthesised list, or a line and its backslash continuations)
_IMPORT = re.compile(rb"^[ \t]*(?:from[ \t]+[\w.]+[ \t]+import[ \t]*(?:\([^)]*\)|[^\n]*(?:\\\n[^\n]*)*)|import[ \t]+[^\n]*(?:\\\n[^\n]*)*)", re.MULTILINE)
_QUOTED = re.compile(rb"[\"']([A-Za-z_][\w]*(?:\.[\w]+)+(?::[\w.]+)?)[\"']")


def _texts(judge: JudgeContext) -> _Texts:
    """The release's _Texts, read once per judge."""
    if judge.memo.release_texts is None:
        imported: dict[str, set[str]] = {}
        quoted: dict[str, set[str]] = {}
        for module, text in judge.index.sources().items():
            for statement in _IMPORT.findall(text):
                for word in re.findall(rb"\w+", statement):
                    imported.setdefault(word.decode(), set()).add(module)
            for found in _QUOTED.findall(text):
                name = found.decode().partition(":")[0]
                parts = name.split(".")
                for end in range(2, len(parts) + 1):
                    quoted.setdefault(".".join(parts[:end]), set()).add(module)
        judge.memo.release_texts = _Texts(imported, quoted)
    return judge.memo.release_texts


def _imports(tree: ast.Module | None):
    """(import statement, the `if` tests around it with their branches) for each import in a
    module, those in functions with the tests inside their function."""
    found: list[tuple[ast.stmt, list[tuple[ast.expr, bool]]]] = []

    def visit(body: list[ast.stmt], tests: list[tuple[ast.expr, bool]]) -> None:
        for stmt in body:
            if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                found.append((stmt, tests))
            elif isinstance(stmt, ast.If):
                visit(stmt.body, [*tests, (stmt.test, True)])
                visit(stmt.orelse, [*tests, (stmt.test, False)])
            elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                visit(stmt.body, [])
            else:
                for field in ("body", "orelse", "finalbody", "handlers", "cases"):
                    for inner in getattr(stmt, field, []) or []:
                        visit(inner.body if isinstance(inner, ast.ExceptHandler) or type(inner).__name__ == "match_case" else [inner], tests)

    visit(tree.body if tree is not None else [], [])
    return found


def _imported_modules(importer: str, is_package: bool, node: ast.stmt) -> list[str]:
    """The modules an import statement may import: `import a.b`, `from a import b` (b a module or not)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = resolve_relative(importer, is_package, node.level, node.module) if node.level else (node.module or "")
    return [base, *(f"{base}.{alias.name}" for alias in node.names)]


def _named_by_string(judge: JudgeContext, importer: str, module: str, exact: bool = False) -> set[str] | None:
    """The keys of the dict entries in `importer` whose values name `module` in a string (the
    model registry's `"Arch": ("a.b", "Cls")`, vllm model_executor/models/registry.py: an entry a
    plugin's register_model overwrites); None when a string names it anywhere else
    (`importlib.import_module("a.b")`, a lazy table), where anything may load it. `exact`: only
    the string `module` itself names it (not `"a.b.Cls"`, `"a.b:Cls"`)."""
    tree = judge.index.tree(importer)

    def namings(node: ast.AST) -> int:
        return sum(1 for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)
                   and (n.value == module or not exact and n.value.startswith((module + ":", module + "."))))

    total = namings(tree) if tree is not None else 0
    keys, entries = set(), 0
    for node in ast.walk(tree) if total else ():
        for key, value in zip(node.keys, node.values) if isinstance(node, ast.Dict) else ():
            if isinstance(key, ast.Constant) and isinstance(key.value, str) and (count := namings(value)):
                keys.add(key.value)
                entries += count
    return keys if total == entries else None


def _cond(judge: JudgeContext, module: str, test: ast.expr):
    """`test` as a condition for model.kleene: `not`/`and`/`or` kept, each platform predicate
    call a constant when decided, anything else undecided."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return Not(_cond(judge, module, test.operand))
    if isinstance(test, ast.BoolOp):
        parts = tuple(_cond(judge, module, value) for value in test.values)
        return AllOf(parts) if isinstance(test.op, ast.And) else AnyOf(parts)
    if (isinstance(test, ast.Call) and not test.args and not test.keywords and isinstance(test.func, ast.Attribute)
            and platform_instance_read(judge.index, module, test.func.value)):
        value = predicate(judge, test.func.attr)
        if isinstance(value, bool):
            return Const(value)
    return Undecided()


def predicate(judge: JudgeContext, method: str) -> bool | None:
    """What `current_platform.<method>()` returns with the plugin's platform class activated,
    when the first class of its MRO defining `method` returns a constant or a comparison of a
    class attribute with constants; None otherwise. Memoised per judge."""
    memo = judge.memo.platform_predicates
    if method not in memo:
        memo[method] = _predicate(judge, method)
    return memo[method]


def _predicate(judge: JudgeContext, method: str) -> bool | None:
    mro = judge.plugin_mro(judge.scan.active_platform)
    for position, ref in enumerate(mro):
        found = _defined(judge, ref, method)
        if found is _UNKNOWN:
            return None
        if found is not None:
            home, function = found
            body = [s for s in function.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
            if len(body) != 1 or not isinstance(body[0], ast.Return) or body[0].value is None:
                return None
            self_name = function.args.args[0].arg if function.args.args else None
            value = _value(judge, home, body[0].value, self_name, mro)
            return value if isinstance(value, bool) else None
    return None


def _defined(judge: JudgeContext, ref: Ref, name: str):
    """(the module whose names it reads, the def) of `name` on class `ref` of the MRO; None when
    the class does not bind it; _UNKNOWN when it binds it some other way or cannot be read."""
    if ref.kind == "class" and ref.module == "":  # a plugin class
        cls = judge.scan.classes.get(ref.qualname)
        if cls is None:
            return _UNKNOWN
        if name in cls.methods:
            node = _plugin_class_def(judge, ref.qualname)
            function = next((n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == name), None) if node else None
            return (cls.module, function) if function is not None else _UNKNOWN
        return _UNKNOWN if cls.binds(name) or cls.dynamic else None
    if ref.kind != "class":  # an outside base (abc.ABC): only one whose members are listed and lack it
        return None if _outside_lacks(judge, ref, name) else _UNKNOWN
    info = judge.index.class_info(ref)
    if info is None:
        return _UNKNOWN
    if name not in info.members:
        return None
    node = judge.index.class_node(ref)
    function = next((n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == name and not n.decorator_list), None) if node else None
    return (ref.module, function) if function is not None else _UNKNOWN


def _outside_lacks(judge: JudgeContext, ref: Ref, name: str) -> bool:
    """Whether an outside class of the MRO (abc.ABC, typing.Generic) is known not to bind `name`."""
    return judge.index.member(ref, name).outcome is Outcome.missing


def _value(judge: JudgeContext, module: str, node: ast.expr, self_name: str | None, mro: list[Ref]):
    """A predicate's returned expression folded: a bool constant, `self.<attr>` (a class
    attribute the MRO binds to a constant), a dotted name (its resolved path), a tuple of those,
    `==`/`!=`/`in`/`not in` between them, `not`; _UNKNOWN for anything else."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (bool, str, int)):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        inner = _value(judge, module, node.operand, self_name, mro)
        return not inner if isinstance(inner, bool) else _UNKNOWN
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == self_name:
        return _class_attribute(judge, node.attr, mro)
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        items = [_value(judge, module, e, self_name, mro) for e in node.elts]
        return _UNKNOWN if any(i is _UNKNOWN for i in items) else tuple(items)
    if isinstance(node, (ast.Name, ast.Attribute)) and dotted(node):
        return _path(judge, module, dotted(node))
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        left = _value(judge, module, node.left, self_name, mro)
        right = _value(judge, module, node.comparators[0], self_name, mro)
        if left is _UNKNOWN or right is _UNKNOWN:
            return _UNKNOWN
        op = node.ops[0]
        if isinstance(op, (ast.Eq, ast.NotEq)):
            same = _same(judge, left, right)
            return _UNKNOWN if same is None else same == isinstance(op, ast.Eq)
        if isinstance(op, (ast.In, ast.NotIn)) and isinstance(right, tuple):
            sames = [_same(judge, left, item) for item in right]
            found = True if True in sames else (None if None in sames else False)
            return _UNKNOWN if found is None else found == isinstance(op, ast.In)
    return _UNKNOWN


class _Path(str):
    """A resolved dotted name (an enum member, a class): equal to another only by identity."""


def _path(judge: JudgeContext, module: str, text: str):
    """The upstream object a dotted name in `module` reads (plugin modules: a name the scan
    qualified is already a path), as a _Path; _UNKNOWN when it does not resolve."""
    found = judge.index.resolve_in_scope(module, text) if module in judge.index.files else judge.index.resolve(text)
    return _Path(found.ref.path) if found.ok and found.ref is not None else _UNKNOWN


def _same(judge: JudgeContext, left, right) -> bool | None:
    """Whether two folded values are equal: literals by value; resolved paths by identity, or
    for two members of one class by their assigned literal values (enum aliases); None when
    that cannot be told."""
    if isinstance(left, _Path) and isinstance(right, _Path):
        if left == right:
            return True
        owner, owner2 = left.rpartition(".")[0], right.rpartition(".")[0]
        if owner != owner2:
            return None
        values = [_member_literal(judge, path) for path in (left, right)]
        return None if _UNKNOWN in values else values[0] == values[1]
    if isinstance(left, _Path) or isinstance(right, _Path):
        return None
    return left == right


def _member_literal(judge: JudgeContext, path: str):
    """What tells the member `path` from its class's other members: the literal its class body
    assigns (`OOT = 7`), or its own name where every member of the body is `auto()` (enum.auto:
    each the last value plus one, so never an alias of another); _UNKNOWN otherwise, or where
    the class writes `_generate_next_value_`."""
    owner, _, name = path.rpartition(".")
    found = judge.index.resolve(owner)
    node = judge.index.class_node(found.ref) if found.ok and found.ref is not None and found.ref.kind == "class" else None
    members = {t.id: stmt.value for stmt in node.body if isinstance(stmt, ast.Assign) for t in stmt.targets if isinstance(t, ast.Name)} if node else {}
    if name not in members or any(isinstance(n, ast.FunctionDef) and n.name == "_generate_next_value_" for n in node.body):
        return _UNKNOWN
    if all(isinstance(v, ast.Call) and not v.args and dotted(v.func) in ("auto", "enum.auto") for v in members.values()):
        return ("auto", name)
    value = members[name]
    return value.value if isinstance(value, ast.Constant) else _UNKNOWN


def _class_attribute(judge: JudgeContext, name: str, mro: list[Ref]):
    """`self.<name>` as the first class of `mro` binding it in its body leaves it, when that is a
    constant or a dotted name; _UNKNOWN when a plugin class binds it on instances or otherwise."""
    for ref in mro:
        if ref.kind == "class" and ref.module == "":
            cls = judge.scan.classes.get(ref.qualname)
            if cls is None or cls.dynamic or name in cls.self_writes or name in cls.methods:
                return _UNKNOWN
            if name in cls.class_names:
                return _path(judge, "", cls.class_names[name])
            if name in cls.bound_otherwise:
                node = _plugin_class_def(judge, ref.qualname)
                value = _body_value(node, name) if node else None
                return value.value if isinstance(value, ast.Constant) else _UNKNOWN
            continue
        if ref.kind != "class" and _outside_lacks(judge, ref, name):
            continue
        node = judge.index.class_node(ref) if ref.kind == "class" else None
        if node is None:
            return _UNKNOWN
        try:  # a method of upstream's that sets it on instances may change it: not a constant
            if name in judge.index.instance_attributes(ref).names:
                return _UNKNOWN
        except (ValueError, SyntaxError):
            return _UNKNOWN
        value = _body_value(node, name)
        if value is not None:
            return _value(judge, ref.module, value, None, mro)
    return _UNKNOWN


def _body_value(node: ast.ClassDef, name: str) -> ast.expr | None:
    """The value of the last plain `name = value` (or `name: T = value`) at the top of a class body."""
    found = None
    for stmt in node.body:
        if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in stmt.targets):
            found = stmt.value
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.target.id == name and stmt.value is not None:
            found = stmt.value
    return found


def _plugin_class_def(judge: JudgeContext, path: str) -> ast.ClassDef | None:
    cls = judge.scan.classes[path]
    try:
        tree = ast.parse((judge.scan.root / cls.file).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return None
    return next((n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.lineno == cls.line), None)

