"""A plugin object put in an attribute of an instance upstream built, or an instance upstream
built re-classed (a PLACED patch).

`layer.mlp = DevFusedMLP(layer.mlp)` for `layer` an instance of LlamaDecoderLayer (annotated, or
narrowed by `isinstance` / `type(x) is C`), or `layer.mlp.__class__ = DevFusedMLP`: from then on
every call LlamaDecoderLayer's methods make through `self.mlp` runs the plugin class's methods
-- `self.mlp(x)` its forward (torch's nn.Module.__call__) or __call__, `self.mlp.m(x)` its m.
`mlp.__class__ = DevFusedMLP` for `mlp` an instance of LlamaMLP: the calls upstream makes on the
instances it builds of LlamaMLP (callsites.instance_calls) run them. Each such call is bound to
the plugin method's parameters; one that cannot bind is a TypeError on that path (breaking, its
conditions named)."""

from __future__ import annotations

import ast

from harness.knowledge.judge.callsites import MODULE_CALL, CallSite, attribute_calls, conditions_at, instance_calls
from harness.knowledge.judge.context import JudgeContext
from harness.knowledge.judge.signatures import bind_problem
from harness.knowledge.model import Dependency, Finding, MethodDecl, Outcome, Status, risk_of, signature_text


def judge_placement(judge: JudgeContext, dep: Dependency) -> Finding | None:
    """The finding for a PLACED patch `dep` (target "C.attr", or "C" with name "__class__"; hook
    the plugin class): ok when every call C's methods make through `self.attr` (the calls on C's
    instances) binds to the plugin method it runs;
    signature_changed and breaking when one cannot. None when C does not resolve as a class or
    the plugin class is not known (the import or reference of C says what is wrong), or when no
    upstream call runs one of its methods (a record of data put there)."""
    reclassed = dep.name == "__class__"  # an instance of the class itself, not an attribute of one
    owner, _, attr = (dep.target, "", "") if reclassed else (dep.target or "").rpartition(".")
    resolution = judge.index.resolve(owner)
    placed = judge.scan.classes.get(dep.hook or "")
    if not resolution.ok or resolution.ref.kind != "class" or placed is None:
        return None
    methods: dict[str, MethodDecl] = {}
    for cls in _own_classes(judge, placed.path):  # the first plugin class of the MRO defining each name is what runs
        for name, decl in cls.methods.items():
            methods.setdefault(name, decl)
    checked, failing = [], []
    for name, decl in sorted(methods.items()):
        if name.startswith("__") and name != "__call__":
            continue
        for site in placed_calls(judge, dep, name):
            checked.append(site)
            problem = bind_problem(decl.params, site.shape, decl.bound)
            if problem is not None and problem[0]:
                failing.append((site, name, decl, problem[1]))
    base = judge.base(dep)
    if failing:
        failing.sort(key=lambda found: len(conditions_at(judge.index, found[0])) > 0)
        site, name, decl, why = failing[0]
        under = conditions_at(judge.index, site)
        when = f" when {' and '.join(f'`{c}`' for c in under)}" if under else ""
        more = f" (and {len(failing) - 1} more call(s))" if len(failing) > 1 else ""
        where = (f"turns instances of {resolution.ref.path} into {placed.path}" if reclassed
                 else f"puts {placed.path} objects in the elements of {resolution.ref.path}.{attr}" if dep.name == "element"
                 else f"puts a {placed.path} in {resolution.ref.path}.{attr}")
        return Finding(**base, status=Status.signature_changed, breaking=True, defined_in=resolution.ref.path, risk=risk_of(dep, Status.signature_changed),
                       detail=f"{dep.expression} {where}; upstream calls it at {site.describe()} ({site.receiver}), "
                              f"which runs {placed.path}.{name}{signature_text(decl.params)}: {why}, a TypeError on that path{when}{more}")
    if not checked:
        return None  # a value (a record of data) no upstream call runs: nothing to judge
    where = ", ".join(s.describe() for s in checked[:6]) + (f" and {len(checked) - 6} more" if len(checked) > 6 else "")
    through = f"on instances of {resolution.ref.path}" if reclassed else f"{resolution.ref.path}'s methods make through self.{attr}"
    return Finding(**base, status=Status.ok, defined_in=resolution.ref.path, detail=f"{dep.expression}: every call upstream {through} binds: {where}")


def placed_calls(judge: JudgeContext, dep: Dependency, name: str) -> list[CallSite]:
    """The upstream calls that run the placed class's method `name` through the PLACED patch
    `dep`: those C's methods make through `self.attr` (`self.attr(…)` for `__call__`, and for
    `forward` of an nn.Module: Module.__call__), or on C's instances re-classed; none made in an
    upstream method the plugin class that places it overrides (it never runs on its objects).
    [] where C does not resolve to a class or the placed class is not the plugin's."""
    reclassed = dep.name == "__class__"
    owner, _, attr = (dep.target, "", "") if reclassed else (dep.target or "").rpartition(".")
    resolution = judge.index.resolve(owner)
    if not resolution.ok or resolution.ref.kind != "class" or dep.hook not in judge.scan.classes:
        return []
    mro = judge.plugin_mro(dep.hook)
    module_like = any(r.kind != "class" and judge.index.member(r, "__call__").outcome is not Outcome.missing
                      and judge.index.member(r, MODULE_CALL).outcome is not Outcome.missing for r in mro)
    through = name == "__call__" or (name == MODULE_CALL and module_like)
    # (dep.name "element": P objects are the elements of what self.attr holds, `for blk in self.blocks: blk(x)`)
    sites = (instance_calls(judge.index, resolution.ref, name) if reclassed
             else attribute_calls(judge.index, resolution.ref, attr, name, through, element=dep.name == "element"))
    # `self.attr = P(…)` in a plugin subclass (dep.plugin_class): the upstream methods it overrides never run on its objects
    overridden = {m for cls in _own_classes(judge, dep.plugin_class) for m in cls.methods} if dep.plugin_class in judge.scan.classes else set()
    return [site for site in sites.calls if not (overridden and _enclosing_method(judge, site) in overridden)]


def _own_classes(judge: JudgeContext, path: str) -> list:
    """The plugin classes of the MRO of the plugin class `path`, in order."""
    return [judge.scan.classes[r.qualname] for r in judge.plugin_mro(path) if r.module == "" and r.qualname in judge.scan.classes]


def _enclosing_method(judge: JudgeContext, site) -> str | None:
    """The name of the upstream method (a def in a class body) a call site sits in, or None."""
    module = judge.index.module_at(site.path)
    tree = judge.index.tree(module) if module is not None else None
    around = [n for c in ast.walk(tree) if isinstance(c, ast.ClassDef) for n in c.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
              and n.lineno <= site.line <= (n.end_lineno or n.lineno)] if tree is not None else []
    return max(around, key=lambda n: n.lineno).name if around else None
