"""What decides whether a status breaks the plugin: liveness, the guards a dependency sits under
(evaluated on the judged upstream), the handlers around it, an earlier failure in the same `try`,
and hook timing."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

from harness.engines import profile
from harness.knowledge.judge.breaking import BreakingFacts, certain_failure, decide
from harness.knowledge.judge.context import JudgeContext
from harness.knowledge.judge.fields import field_present
from harness.knowledge.judge.registries import plugin_puts, registry_at
from harness.knowledge.judge.resolution import import_failure, is_undecided, python_holds
from harness.knowledge.model import (
    AllOf,
    AnyOf,
    Catch,
    Cond,
    Const,
    Dependency,
    FieldPresent,
    Finding,
    Guard,
    GuardCond,
    HasAttr,
    HasKey,
    ImportsResolve,
    ModuleExists,
    Not,
    PythonCompare,
    Runtime,
    Status,
    UNDECIDED,
    Undecided,
    VersionCompare,
    kleene,
    risk_of,
)
from harness.knowledge.scan import leaves

_FAILING = {Status.missing, Status.signature_changed, Status.unknown}


def apply_conditions(judge: JudgeContext, finding: Finding, dep: Dependency) -> Finding:
    """Liveness, guards, handlers and hook timing: the facts breaking.decide weighs, and its verdict."""
    falls_back = profile().spec(dep.kind).falls_back
    certain = certain_failure(finding.status, finding.breaking, falls_back, "breaking" in finding.model_fields_set)
    if dep.kind == "hook" and dep.scope == "runtime" and finding.status in (Status.ok, Status.inherited, Status.signature_changed, Status.body_changed, Status.moved):
        finding.status, certain = Status.never_applied, True
        finding.detail = dep.scope_reason
        finding.risk = risk_of(dep, Status.never_applied)
    guards = dep.guards
    stale = stale_branch(judge, dep.module)
    if stale is not None:
        guards = (stale,) + guards
    imported = judge.scan.imported_when.get(dep.module)
    if imported is not None and judge.evaluate(imported.cond) is False:
        guards = (imported,) + guards  # no import of the module runs on this release
    outcome, deciding = "runs", (guards[-1] if guards else None)
    data: list[GuardCond] = []  # the run-time tests the path takes, outermost first
    for guard in guards:
        value = judge.evaluate(guard.cond)
        if value is False:
            outcome, deciding = "skipped", guard
            break
        if value is None:
            # a test of run-time data holds for some inputs; the stale branch is a naming condition
            kind = "runtime" if guard is not stale and runtime_only(judge, guard.cond) else "undecided"
            data += [guard] if kind == "runtime" else []
            if outcome == "runs" or (outcome == "runtime" and kind == "undecided"):
                outcome, deciding = kind, guard
    if outcome == "runtime" and len(data) > 1:
        # the path runs when every test on it holds (`if n == 1: … elif x.dim() != 2 or not flag:`)
        deciding = replace(data[-1], text=" and ".join(f"({g.text})" for g in data))
    if outcome in ("runtime", "undecided") and len(guards) > 1 and judge.evaluate(AllOf(tuple(g.cond for g in guards))) is False:
        # each test alone may hold, never all together: `if use_mla: return` … `elif not use_mla:` … `else:`
        outcome = "skipped"
        deciding = replace(guards[-1], text=" and ".join(f"({g.text})" for g in guards) + ": never all true")
    if deciding is not None:
        finding.guard = Guard(condition=deciding.text, line=deciding.line, outcome=outcome)
    errors = dep.errors
    if dep.kind == "import" and dep.name and judge.index.module_exists(dep.name):
        # `from M import n` with M there: "cannot import name" is a plain ImportError, which
        # `except ModuleNotFoundError` (its subclass, for a module not found) lets through
        errors = errors - {"ModuleNotFoundError"}
    catch = next((c for c in reversed(dep.catches) if c.handles(errors)), None)
    if outcome in ("runs", "runtime") and catch is not None and finding.status in _FAILING and (certain or finding.status is Status.unknown):
        outcome = "caught"
        finding.guard = Guard(condition=f"except {', '.join(sorted(catch.exceptions))}", line=catch.line, outcome="caught")
    earlier = fails_before(judge, dep) if outcome in ("runs", "runtime") and finding.status is not Status.ok else None
    if earlier is not None:
        # the try body stops at the earlier failure: this statement never runs
        failed, handler = earlier
        outcome = "caught"
        finding.guard = Guard(
            condition=f"except {', '.join(sorted(handler.exceptions))}: {failed.target} (line {failed.line}) fails first in the try at line {handler.line}",
            line=handler.line, outcome="caught",
        )
    row = decide(BreakingFacts(finding.status, certain, finding.live, outcome, falls_back=falls_back))
    finding.breaking, finding.decided_by = row.breaking, row.name
    if row.name == "falls_back" and outcome == "undecided":
        # the engine recovers whether or not the test holds: the test decides nothing (not unverified)
        finding.guard = None
    if row.name == "not_taken" and finding.guard is not None and finding.status in _FAILING:
        # what the detail says fails would, were the code run; on this release it is not, so what
        # a failing import would cost (the plugin skipped) does not happen either
        if dep.kind == "import" and finding.detail:
            finding.detail = finding.detail.removesuffix("; " + import_failure(dep))
        finding.detail = f"{finding.detail or finding.status.value}; not run on this release: `{finding.guard.condition}` is false here (line {finding.guard.line})"
    if outcome == "caught" and dep.kind == "import" and finding.detail and finding.detail.endswith("; " + import_failure(dep)):
        # the handler takes the ImportError: the module imports on (what follows the import in the
        # caught block is skipped), so the plugin is not skipped
        finding.detail = (f"{finding.detail.removesuffix('; ' + import_failure(dep))}; the ImportError is caught "
                          f"(`{finding.guard.condition}`, line {finding.guard.line}): the rest of that block is skipped")
    if row.name == "runtime_condition" and finding.guard is not None:
        finding.detail = f"{finding.detail or finding.status.value}; fails when `{finding.guard.condition}` holds (line {finding.guard.line}), a run-time condition"
    if outcome in ("skipped", "caught"):
        finding.risk //= 4  # nothing to port on this version
    if not finding.live:
        finding.risk //= 4
    return finding


def runtime_only(judge: JudgeContext, cond: Cond) -> bool:
    """Whether `cond`, not decided on this upstream, holds for some run-time data whatever the
    open questions about the upstream or the machine answer (so the code runs for some inputs):
    `n == 0 or not self.flag` does (its Runtime disjunct alone can make it true), `is_npu() and
    n == 0` does not (it also needs the machine question)."""
    return _holds(judge, cond) == "runtime"


def _holds(judge: JudgeContext, cond: Cond) -> str:
    """"true" / "false" on this upstream, "runtime" (true for some run-time data whatever the
    undecided leaves are) or "undecided"."""
    if isinstance(cond, Not) and isinstance(cond.cond, Not):
        return _holds(judge, cond.cond.cond)
    if isinstance(cond, Not) and isinstance(cond.cond, (AllOf, AnyOf)):
        # De Morgan: `not (a and b)` is `not a or not b`, true for some data when a is run-time
        # data, whatever b is (vLLM variant s9: `if not (t.is_contiguous() and self.use_p2p):`)
        flipped = AnyOf if isinstance(cond.cond, AllOf) else AllOf
        return _holds(judge, flipped(tuple(Not(c) for c in cond.cond.conds)))
    if isinstance(cond, Not):
        inner = _holds(judge, cond.cond)
        return {"true": "false", "false": "true"}.get(inner, inner)
    if isinstance(cond, (AllOf, AnyOf)):
        parts = {_holds(judge, c) for c in cond.conds}
        order = ("false", "undecided", "runtime", "true") if isinstance(cond, AllOf) else ("true", "runtime", "undecided", "false")
        return next(o for o in order if o in parts) if parts else ("true" if isinstance(cond, AllOf) else "false")
    value = _evaluate(judge, cond, {})
    if value is None:
        return "runtime" if isinstance(cond, Runtime) else "undecided"
    return "true" if value else "false"


def stale_branch(judge: JudgeContext, module: str) -> GuardCond | None:
    """For a module only a conditionally named class brings in (`if use_v1: return "…v1…"`
    else the V0 backend; PluginScan.conditional), when it cannot even be imported on this
    release (an unguarded module-level import of it is missing): the naming condition, with
    that reason. A plugin run on this release cannot be taking that branch, so what the
    module holds is undecided rather than breaking. None otherwise: a module that imports
    is judged as any other (a conditionally named default worker still breaks), and so is the
    platform class activate() returns under a condition (a deployment's switch: some runs take
    it)."""
    if module not in judge.scan.conditional:
        return None
    if judge.memo.stale is None:
        judge.memo.stale = {}
    if module not in judge.memo.stale:
        failing = next((d for d in judge.scan.dependencies if d.module == module and d.kind == "import" and d.scope == "module"
                        and not d.guards and not d.catches and (raw := _raw(judge, d)) is not None and raw.status is Status.missing), None)
        cond = judge.scan.conditional[module]
        # the platform class activate() returns is what the plugin exists to load: under a switch
        # (`if os.environ.get("X_DISABLE") == "1": return None`) it is loaded on the runs that
        # leave it on, not an alternative this release has moved past
        judge.memo.stale[module] = None if failing is None or module in judge.scan.platform_conditional else replace(
            cond, text=f"{cond.text}; {failing.file} cannot be imported on this release ({failing.target}, line {failing.line}), so that branch is not taken here")
    return judge.memo.stale[module]


def fails_before(judge: JudgeContext, dep: Dependency) -> tuple[Finding, Catch] | None:
    """An earlier statement of the same `try` body that certainly raises on this upstream,
    with the handler that catches its error: (its finding, the handler), or None. Earlier
    means: the same module and function, a smaller line, and under the guards `dep` is
    under (it runs whenever `dep` would), with those guards not false here. A helper's
    dependency whose one call sits in the try (Dependency.called_at) fails at that call."""
    if not dep.catches:
        return None
    if judge.memo.in_try is None:
        judge.memo.in_try = {}
        for other in judge.scan.dependencies:
            for catch in other.catches:
                judge.memo.in_try.setdefault((other.module, catch), []).append(other)
                if other.called_at is not None:  # (and by the caller's, any module: its function is named)
                    judge.memo.in_try.setdefault((None, catch), []).append(other)
    for position, catch in enumerate(dep.catches):
        for other in judge.memo.in_try.get((dep.module, catch), []) + judge.memo.in_try.get((None, catch), []):
            errors = other.errors
            # where it fails: its own statement, or (a helper's, a module's body) the call or import of it in the caller's try
            places = [(other.module, other.enclosing, other.line, other.guards), *([other.called_at] if other.called_at else [])]
            if not errors or not any(module == dep.module and enclosing == dep.enclosing and line < dep.line and dep.guards[: len(guards)] == guards
                                     for module, enclosing, line, guards in places):
                continue
            # (its guards are a prefix of dep's: whenever dep runs they hold, run-time data or not)
            if any(judge.evaluate(g.cond) is False for g in (*other.guards, *(other.called_at[3] if other.called_at else ()))):
                continue
            failed = _raw(judge, other)
            if failed is None or failed.status not in _FAILING or not failed.breaking:
                continue
            # the error leaves this try's body; the innermost handler of it catches it (one that
            # raises another error instead hands that on to the handler of it further out)
            handler = next((c for c in reversed(other.catches) if c.handles(errors)), None)
            while handler is not None and handler.translates and handler not in dep.catches:
                outer = other.catches[: other.catches.index(handler)]
                handler = next((c for c in reversed(outer) if c.handles(handler.translates)), None)
            if handler is not None and handler in dep.catches[: position + 1]:
                return failed, handler
    return None


def _raw(judge: JudgeContext, dep: Dependency) -> Finding | None:
    """The finding before guards and handlers, judged once per dependency."""
    key = id(dep)
    if key not in judge.memo.raw_findings:
        judge.memo.raw_findings[key] = judge.judge(dep)
    return judge.memo.raw_findings[key]


def evaluate(judge: JudgeContext, cond: Cond) -> bool | None:
    """A guard condition on this upstream: True, False or None (not decided). When Kleene's
    three-valued reading leaves it undecided, each assignment of the undecided leaves that
    occur more than once is tried (up to 2**6; Kleene's reading is exact for leaves read
    once): `(v and old) or (not (v and old) and v)` with `old` true here is false whatever
    `v` is; with more, each operand of an and/or is decided so on its own leaves. Equal leaves
    are one atom (an Unknown names one value); each Undecided is its own."""
    value = _evaluate(judge, cond, {})
    if value is not None or not isinstance(cond, (Not, AllOf, AnyOf)):
        return value
    counts = Counter(leaf for leaf in leaves(cond) if not isinstance(leaf, Undecided))
    atoms = [leaf for leaf, count in counts.items() if count > 1 and _evaluate(judge, leaf, {}) is None]
    if not atoms:
        return None
    if len(atoms) <= 6:
        outcomes = {_evaluate(judge, cond, {atom: bool(bits >> i & 1) for i, atom in enumerate(atoms)}) for bits in range(2 ** len(atoms))}
        return outcomes.pop() if len(outcomes) == 1 else None
    # too many shared leaves for the whole: each operand decided on its own leaves is as sound (a
    # disjunction false whatever its leaves when every operand is; a conjunction when one is)
    if isinstance(cond, Not):
        inner = evaluate(judge, cond.cond)
        return None if inner is None else not inner
    return kleene(type(cond)(tuple(_decided(evaluate(judge, c)) for c in cond.conds)), lambda leaf: None)


def _decided(value: bool | None) -> Cond:
    return UNDECIDED if value is None else Const(value)


def _evaluate(judge: JudgeContext, cond: Cond, assumed: dict) -> bool | None:
    return kleene(cond, lambda leaf: assumed[leaf] if leaf in assumed else _leaf(judge, leaf))


def _leaf(judge: JudgeContext, cond: Cond) -> bool | None:
    """One leaf of a guard on this upstream (not Not/AllOf/AnyOf/Const): True, False or None."""
    if isinstance(cond, HasAttr):
        resolution = judge.index.resolve(f"{cond.owner}.{cond.name}")
        return True if resolution.ok and not is_undecided(resolution) else (None if is_undecided(resolution) else False)
    if isinstance(cond, HasKey):  # "key" in REGISTRY: the keys upstream puts in (judge.registries)
        found = registry_at(judge.index, cond.registry)
        if found is None:
            return None
        table, keys = found
        if cond.key in keys.keys or plugin_puts(judge.scan.dependencies, judge.index, table, cond.registry, cond.key) is not None:
            return True  # upstream's key, or one the plugin puts in itself
        return None if keys.open else False
    if isinstance(cond, FieldPresent):  # hasattr(v, "x") on an instance of an upstream class
        return field_present(judge, cond.cls, cond.name)
    if isinstance(cond, ModuleExists):
        return judge.index.module_exists(cond.path)
    if isinstance(cond, ImportsResolve):
        results = []
        for module, name in cond.imports:
            if not judge.index.module_exists(module):
                results.append(False)
            elif name is not None:
                resolution = judge.index.resolve(f"{module}.{name}")
                results.append(None if is_undecided(resolution) else resolution.ok)
            else:
                results.append(True)
        return False if False in results else (None if None in results else True)
    if isinstance(cond, VersionCompare):
        return cond.holds(judge.version)
    if isinstance(cond, PythonCompare):
        return python_holds(judge.index.requires_python, cond)
    return None  # Undecided, Unknown, and a ParamFieldPresent or SelfFlag the scan could not place
