"""Judging the engine's registration forms (harness.engines.forms): replacement registrations
and classes handed to upstream by qualified name, against one upstream index.

Replacements (vLLM `CustomOp.register_oot`, vllm/model_executor/custom_op.py): register_oot
accepts any key; the replacement is used only when upstream instantiates a class whose
`__name__` is the key and which derives from CustomOp or PluggableLayer (CustomOp.__new__,
PluggableLayer.__new__). A key no such class has is a silent no-op: upstream's own class runs
(its forward_oot falls back to forward_native), so it is `missing` but never breaks the plugin.

Named classes (vllm/utils/import_utils.py resolve_obj_by_qualname: import the module before the
last ".", getattr the class): the plugin module and class must exist and derive from the class
upstream expects (a worker from WorkerBase, an attention backend from AttentionBackend …); a
string naming an upstream class must still resolve (a moved or removed one is flagged with its
successor). Members the plugin class overrides are judged as any subclass's (judge.members).
"""

from __future__ import annotations

import ast
import difflib
import re

from harness.engines import profile
from harness.knowledge.judge.context import JudgeContext
from harness.knowledge.judge.members import missing_bases
from harness.knowledge.judge.resolution import defined_path, is_undecided
from harness.knowledge.model import (
    Dependency,
    Finding,
    Ref,
    Status,
    is_upstream,
    risk_of,
)
from harness.knowledge.upstream import SymbolIndex

# ----------------------------------------------------------------------------- replacements


def replaceable(index: SymbolIndex, name: str, bases: tuple[str, ...]) -> Ref | None:
    """The upstream class called `name` that derives from one of `bases` (the first found), or None."""
    memo = index.memo.setdefault("replaceable", {})
    if name not in memo:
        memo[name] = None
        for module in index.modules_defining(name):
            resolution = index.resolve(f"{module}.{name}")
            found = resolution.ok and resolution.ref.kind == "class" and resolution.ref.module == module
            if found and any(cls.path in bases for cls in index.mro(resolution.ref)):
                memo[name] = resolution.ref
                break
    return memo[name]


def _close_replaceable(index: SymbolIndex, name: str, bases: tuple[str, ...]) -> list[str]:
    """Replaceable upstream classes with names close to `name`, closest first: the classes whose
    `class X(...)` line or `@Base.register(...)` decorator mentions a base, verified over the MRO."""
    memo = index.memo.setdefault("replaceable_names", {})
    key = "|".join(bases)
    if key not in memo:
        shorts = "|".join(re.escape(b.rsplit(".", 1)[-1]) for b in bases)
        pattern = re.compile(rb"(?:^@(?:" + shorts.encode() + rb")\.register\b[^\n]*\n)?^class\s+(\w+)\s*\(([^)]*)\)", re.MULTILINE)
        names = set()
        for text in index.sources().values():
            if not re.search(shorts.encode(), text):
                continue
            names.update(m.group(1).decode() for m in pattern.finditer(text))
        memo[key] = sorted(names)
    close = difflib.get_close_matches(name, memo[key], n=6, cutoff=0.6)
    return [c for c in close if replaceable(index, c, bases) is not None][:3]


def judge_replacement(judge: JudgeContext, dep: Dependency) -> Finding | None:
    """A replacement registration: the key must name a replaceable upstream class on this
    release, and the plugin class should derive from it (it is built with its arguments)."""
    registry = profile().replacements
    if registry is None or not judge.index.resolve(dep.target).ok:
        return None  # the import or reference of the owner says it is gone
    method = judge.index.resolve(f"{dep.target}.{registry.method}")
    if not method.ok and not is_undecided(method):
        return judge.missing_finding(dep, f"{dep.expression}: {method.note} (AttributeError when it runs)", target=f"{dep.target}.{registry.method}")
    if dep.name is None:
        return Finding(**judge.base(dep, f"{dep.target}.{registry.method}"), status=Status.unknown, risk=risk_of(dep, Status.unknown),
                       detail=f"{dep.expression}: the key could not be evaluated statically")
    target = f"{dep.target}.{registry.method}[{dep.name!r}]"
    label = judge.index.source.label
    replaced = replaceable(judge.index, dep.name, registry.bases)
    shorts = " or ".join(b.rsplit(".", 1)[-1] for b in registry.bases)
    if replaced is None:
        before = replaceable(judge.baseline.index, dep.name, registry.bases) if judge.baseline is not None else None
        close = _close_replaceable(judge.index, dep.name, registry.bases)
        detail = (f"no class named {dep.name!r} derives from {shorts} in {label}"
                  + (f" (in {judge.baseline.index.source.label}: {before.path})" if before is not None else "")
                  + f": {dep.hook or 'the plugin class'} is registered but never used; {registry.fallback}"
                  + (f"; replaceable classes of close names: {', '.join(close)}" if close else ""))
        finding = Finding(**judge.base(dep, target), status=Status.missing, breaking=False, risk=risk_of(dep, Status.missing), detail=detail)
        if close:
            finding.successor, finding.successor_reason = f"{dep.target}.{registry.method}[{close[0]!r}]", f"the replaceable class {replaceable(judge.index, close[0], registry.bases).path}, of the closest name"
        return finding
    detail = f"replaces {replaced.path}"
    risk = 0
    if (earlier := _registered_before(judge, dep)) is not None and (asserted := _asserts_new_key(judge.index, method.ref)) is not None:
        detail = (f"{dep.hook or 'a class'} is registered under {dep.name!r} again (first at {earlier.file}:{earlier.line}"
                  f"{', by ' + earlier.hook if earlier.hook else ''}): {method.ref.path} asserts a key is new ({asserted}), "
                  "so this registration raises AssertionError while the plugin loads")
        return Finding(**judge.base(dep, target), status=Status.duplicate, breaking=True, defined_in=replaced.path, detail=detail,
                       risk=risk_of(dep, Status.duplicate))
    if dep.hook in judge.scan.classes:
        mro = judge.upstream_mro(dep.hook)
        if all(ref.path != replaced.path for ref in mro) and not missing_bases(mro):
            detail += f"; {dep.hook} does not derive from it, yet vLLM builds it with {replaced.path}'s arguments"
            risk = 40
    return Finding(**judge.base(dep, target), status=Status.ok, defined_in=replaced.path, detail=detail, risk=risk)


def _registered_before(judge: JudgeContext, dep: Dependency) -> Dependency | None:
    """The first live registration under `dep`'s key through the same owner made before `dep`
    (an earlier line of the same module, an earlier pass of the same loop; across modules, the
    earlier file, as their import order is not known), both unguarded: every run makes both.
    None when there is none."""
    if dep.guards:
        return None
    same = [(other.file, other.line, at, other) for at, other in enumerate(judge.scan.dependencies) if other is dep or (
        other.kind == "custom_op" and other.name == dep.name and other.live and other.target == dep.target and not other.guards)]
    first = min(same, key=lambda entry: entry[:3])[3]
    return first if first is not dep else None


def _asserts_new_key(index: SymbolIndex, method: Ref) -> str | None:
    """Where the upstream registration method `method` asserts its key is not yet in its
    table (`assert reg_name not in op_registry_oot`, vllm/model_executor/custom_op.py from 0.17:
    a second registration under one key fails; 0.11 overwrote it): "file:line", else None."""
    info = index.function_info(method) if method.kind == "function" else None
    tree = index.tree(method.module) if info is not None else None
    function = next((n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.lineno == info.lineno), None) if tree else None
    for node in ast.walk(function) if function is not None else ():
        if (isinstance(node, ast.Assert) and isinstance(node.test, ast.Compare) and len(node.test.ops) == 1
                and isinstance(node.test.ops[0], ast.NotIn) and isinstance(node.test.comparators[0], (ast.Name, ast.Attribute))):
            return f"{index.files[method.module][0]}:{node.lineno}"
    return None


def built_instead(judge: JudgeContext, ref: Ref) -> list[Dependency]:
    """The live replacement registrations keyed by the `__name__` of the upstream class `ref`
    when `ref` is the replaceable class of that name (CustomOp.__new__ and PluggableLayer.__new__
    look `op_registry_oot[cls.__name__]` up and build the registered class instead, whatever
    arguments the call passes: vllm/model_executor/custom_op.py), unless a guard of theirs is
    decided false on this release. A registration's `hook` is the plugin class it builds
    (None: not known)."""
    registry = profile().replacements
    if registry is None or ref.kind != "class":
        return []
    short = ref.qualname.rsplit(".", 1)[-1]
    found = [dep for dep in judge.scan.dependencies if dep.kind == "custom_op" and dep.name == short and dep.live
             and not any(judge.evaluate(g.cond) is False for g in dep.guards)]
    if not found or replaceable(judge.index, short, registry.bases) != ref:
        return []
    return found


# ----------------------------------------------------------------------------- named classes


def judge_named_class(judge: JudgeContext, dep: Dependency) -> Finding | None:
    """A class named by a qualified-name string. A return of a method that is no named-class
    slot counts only in a platform class (elsewhere a dotted string is just a string)."""
    engine = profile()
    slot = engine.named_classes.returns.get((dep.member or "").removesuffix("()")) if dep.how == "return" else None
    if dep.how == "return" and slot is None and dep.plugin_class not in judge.scan.platforms:
        return None
    what = f"{dep.member} {dep.expression!r}"
    loader = engine.named_classes.loader.rsplit(".", 1)[-1] or "the loader"
    if is_upstream(dep.target):
        return _upstream_named(judge, dep, what, loader)
    module = dep.expression.partition(":")[0] if ":" in dep.expression else dep.expression.rpartition(".")[0]
    if module not in judge.scan.modules or dep.hook is None:  # the plugin's own: no upstream successor to look for
        detail = (f"{what}: no module {module} in the plugin; {loader} raises ModuleNotFoundError" if module not in judge.scan.modules
                  else f"{what}: {module} defines no {dep.target.rsplit('.', 1)[-1]!r}; {loader} raises AttributeError")
        return Finding(**judge.base(dep), status=Status.missing, breaking=True, risk=risk_of(dep, Status.missing), detail=f"{detail} when upstream needs it")
    if is_upstream(dep.hook):  # the plugin module re-exports an upstream class
        return _upstream_named(judge, dep, what, loader, path=dep.hook)
    cls = judge.scan.classes.get(dep.hook)
    where = f"{cls.file}:{cls.line}" if cls else dep.hook
    if dep.name is None or cls is None:
        return Finding(**judge.base(dep), status=Status.ok, detail=f"{what} is the plugin's {dep.hook} ({where})")
    base = judge.index.resolve(dep.name)
    if not base.ok:
        # the loader finds the plugin's class; where upstream keeps the base differs between
        # releases (vllm 0.11's AttentionBackend is in vllm.attention.backends.abstract), so what
        # is not checked is the derivation, not the load
        return Finding(**judge.base(dep), status=Status.ok, defined_in=dep.name,
                       detail=f"{what} is the plugin's {dep.hook} ({where}); not checked whether it derives from {dep.name}, "
                              f"which does not resolve in {judge.index.source.label}: {base.note}")
    mro = judge.upstream_mro(dep.hook)
    if any(ref.path == base.ref.path for ref in mro):
        return Finding(**judge.base(dep), status=Status.ok, defined_in=dep.name, detail=f"{what} is the plugin's {dep.hook} ({where}), a {base.ref.path}")
    unsure = missing_bases(mro)
    detail = (f"{what} is the plugin's {dep.hook} ({where}), which does not derive from {base.ref.path}"
              + (f" (its bases {', '.join(unsure)} do not resolve)" if unsure else ": upstream calls that interface on it"))
    return Finding(**judge.base(dep), status=Status.ok, defined_in=dep.name, detail=detail, risk=0 if unsure else 40)


def _upstream_named(judge: JudgeContext, dep: Dependency, what: str, loader: str, path: str | None = None) -> Finding:
    """A string naming an upstream class: it must still resolve there (a dependency like a name)."""
    path = path or dep.target
    resolution = judge.index.resolve(path)
    if not resolution.ok:
        if is_undecided(resolution):
            return Finding(**judge.base(dep, path), status=Status.unknown, detail=resolution.note, risk=risk_of(dep, Status.unknown))
        return judge.missing_finding(dep, f"{what}: {resolution.note}; {loader} raises when upstream needs it", target=path)
    detail = f"{what} resolves to {defined_path(resolution)}"
    if dep.name and resolution.ref.kind == "class" and all(ref.path != dep.name for ref in judge.index.mro(resolution.ref)):
        detail += f", which does not derive from {dep.name}"
    return Finding(**judge.base(dep, path), status=Status.ok, defined_in=defined_path(resolution), detail=detail)
