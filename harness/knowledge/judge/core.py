"""Judging: what one upstream says about each dependency of a plugin, as a Finding.

How a dependency is judged mirrors what happens at run time:
- imports: `import a.b` / `from a.b import c` (ImportError at import time; a live module-level
  one makes SGLang skip the whole plugin);
- references and calls: `getattr` down a dotted path; a call binds its arguments the way
  `inspect.Signature.bind` does (TypeError when a keyword is gone);
- hooks: `HookRegistry._apply_target` (rsplit at the last ".", `pkgutil.resolve_name`, getattr)
  and the call convention of each hook type (`_wrap_fn`: AROUND gets original_fn first, AFTER
  the result first);
- platform and subclass overrides: Python's C3 MRO over the plugin's and upstream's classes;
- guards, handlers, liveness and hook timing then decide whether a status breaks the plugin.

Its parts take the judge as a `JudgeContext` (context.py), never this class: members (overrides
and subclass members over the MRO), conditions (guards, handlers, hook timing), fields, forms,
signatures (whether a callable fits the calls made of it), resolution (readings of a resolution
shared by them), parse_ahead.
"""

from __future__ import annotations

import ast
import difflib
import re
from dataclasses import replace
from functools import partial
from typing import Any

from harness.engines import profile
from harness.knowledge.judge import architectures, conditions, members
from harness.knowledge.judge.breaking import BreakingFacts, decide
from harness.knowledge.judge.callsites import CallSite, call_sites, instance_calls
from harness.knowledge.judge.context import JudgeMemo
from harness.knowledge.judge.fields import field_resolution, judge_field, upstream_subclasses
from harness.knowledge.judge.forms import built_instead, judge_named_class, judge_replacement
from harness.knowledge.judge.members import judge_member, missing_bases
from harness.knowledge.judge.placements import judge_placement
from harness.knowledge.judge.platform_tests import platform_skip
from harness.knowledge.judge.registries import plugin_puts, registry_at, registry_keys, runs_after
from harness.knowledge.judge.resolution import (
    assembled_field,
    defined_path,
    import_failure,
    inherited_from,
    is_undecided,
    resolve_dependency,
)
from harness.knowledge.judge.signatures import (
    RAISES_ONLY,
    Unreached,
    against_calls,
    bind_problem,
    binds_no_call,
    signature_incompatibility,
)
from harness.knowledge.judge.successors import find_successors
from harness.knowledge.model import (
    CLASS_USE_BASE,
    CLASS_USES,
    DATACLASS_EXTENDS,
    BOUND_ARGUMENTS,
    INSTANCE_CALL,
    NONE_FALLBACK_CALL,
    NONE_FALLBACK_READ,
    EMPTY_BODIES,
    PLACED,
    WRAPPED_ORIGINAL,
    AllOf,
    AnyOf,
    Cond,
    Dependency,
    Finding,
    HasAttr,
    Not,
    Outcome,
    Param,
    PluginClass,
    PluginScan,
    Ref,
    Resolution,
    Status,
    forwards_anything,
    is_upstream,
    resolve_relative,
    risk_of,
    signature_text,
)
from harness.knowledge.scan import module_getattr_unreached, plugin_function_params, reads_elsewhere_only, reads_of, unnamed_private_function
from harness.knowledge.upstream import (
    SymbolIndex,
    c3,
    keyed_lookup,
    optional_read,
    reads_attribute,
    reads_module_global,
    upstream_version,
)


def reported(finding: Finding) -> bool:
    """Whether a finding belongs in the map / check output: plain uses of upstream only when
    something is wrong with them (KindSpec.usage)."""
    return finding.status is not Status.ok or not profile().spec(finding.kind).usage


def dependencies(scan: PluginScan) -> list[Dependency]:
    return sorted(scan.dependencies, key=lambda d: (d.file, d.line, d.key))


# ----------------------------------------------------------------------------- judging


# decorators that wrap a method without registering it anywhere: a method carrying only these is
# called by its name or not at all (contextlib, functools, abc, typing, torch's grad modes)
_PLAIN_DECORATORS = frozenset({"staticmethod", "classmethod", "contextmanager", "asynccontextmanager", "cache", "lru_cache",
                               "cached_property", "property", "abstractmethod", "override", "no_grad", "inference_mode"})


class Judge:
    """Judges a plugin's dependencies against one upstream index: the one implementation of
    JudgeContext, which its helpers (members, conditions, fields, forms) take."""

    def __init__(self, index: SymbolIndex, scan: PluginScan, baseline: SymbolIndex | None = None, successors: bool = True,
                 on_baseline: bool = False):
        """`baseline`: the upstream the plugin was written against (its declared version); it
        tells an override of a base method that is gone from the plugin's own methods.
        `on_baseline`: `index` is that release itself (what it lacks, the plugin never had).
        `successors`: False for a judge whose findings are only compared (a baseline's), which
        then names none. Successors are searched when `fill_successors` runs, all together."""
        self.index = index
        self._import_failures: dict[str, str | None] = {}  # _fails_to_import, per upstream module
        self.scan = scan
        self.baseline = Judge(baseline, scan, successors=False) if baseline is not None else None
        self.on_baseline = on_baseline
        # the release a patch target is compared with, to tell an addition from a replacement of
        # something dropped (_added_name): the baseline, or --from in a diff
        self.before: SymbolIndex | None = baseline
        # finding id -> (finding, target, the older index the search compares with)
        self._successors: dict[int, tuple[Finding, str, SymbolIndex | None]] | None = {} if successors else None
        self.version = upstream_version(index.source)
        self._failing: dict[str, Finding | None] = {}
        self.field_writes: dict[str, Dependency] | None = None  # fields.py: the fields the plugin sets itself
        self.memo = JudgeMemo()  # what the helpers work out once per judge

    # The judge's interface (JudgeContext) for what its helpers implement.
    def lookup(self, mro: list[Ref], name: str, instance: bool) -> Resolution:
        return members.lookup(self, mro, name, instance)

    def upstream_mro(self, plugin_class: str) -> list[Ref]:
        return members.upstream_mro(self, plugin_class)

    def plugin_mro(self, plugin_class: str) -> list[Ref]:
        return members.plugin_mro(self, plugin_class)

    def plugin_subclass_defining(self, plugin_class: str | None, member: str) -> PluginClass | None:
        return members.plugin_subclass_defining(self, plugin_class, member)

    def evaluate(self, cond: Cond) -> bool | None:
        return conditions.evaluate(self, cond)

    def apply_conditions(self, finding: Finding, dep: Dependency) -> Finding:
        return conditions.apply_conditions(self, finding, dep)

    def __call__(self, dep: Dependency) -> Finding | None:
        """The finding for one dependency, or None when it turns out not to be one on this
        upstream (a subclass method upstream does not define is the plugin's own)."""
        finding = self.judge(dep)
        if finding is None:
            return None
        finding = self.apply_conditions(finding, dep)
        unloaded = self._in_unloaded_platform(dep) if finding.breaking else None
        if unloaded is not None:
            facts = BreakingFacts(finding.status, True, finding.live, finding.guard.outcome if finding.guard else "runs", uncalled=unloaded)
            finding.breaking, finding.risk, finding.decided_by = decide(facts).breaking, finding.risk // 4, decide(facts).name
            returned = ", ".join(self.scan.platform_class_paths)
            finding.detail = (f"{finding.detail or finding.status.value}; {unloaded} is never loaded: the platform entry point returns "
                              f"{returned}, and nothing in the plugin names {unloaded.rsplit('.', 1)[-1]} (dead code to remove)")
            return finding
        caller = self.uncalled_method(dep) if finding.breaking else None
        if caller is not None:
            facts = BreakingFacts(finding.status, True, finding.live, finding.guard.outcome if finding.guard else "runs", uncalled=caller)
            finding.breaking, finding.risk, finding.decided_by = decide(facts).breaking, finding.risk // 4, decide(facts).name
            finding.detail = f"{finding.detail or finding.status.value}; it runs only in {caller}, which nothing calls (no upstream base declares it; no code of the plugin or of {self.index.source.label} names it on an instance of it)"
        return finding

    def _in_unloaded_platform(self, dep: Dependency) -> str | None:
        """The platform class nothing loads (PluginScan.unloaded_platforms) whose member `dep`
        is or whose method holds it, or None: none of its code can run."""
        for path in self.scan.unloaded_platforms:
            if dep.plugin_class == path or any(f == path or f.startswith(path + ".") for f in dep.enclosing):
                return path
        return None

    def uncalled_method(self, dep: Dependency) -> str | None:
        """The plugin method or function holding `dep` (its path) when nothing can call it, so
        the code cannot fail: a module's private function nothing names (uses.unnamed_private_function),
        or an undecorated method of a plugin class that no upstream base of it declares
        (upstream would call that one), named nowhere in the plugin (getattr, a string; `.m` only
        through `self` of a plugin class unrelated to it, harness.knowledge.scan.uses) nor in
        the release, e.g. a platform's `is_hpu` override left from a release whose Platform had
        it, or a CustomOp's `forward_kunlun` that vLLM's dispatch_forward never picks. None otherwise."""
        # a self.x read carries no `enclosing` (it is judged wherever its method may run): its method
        holding = members.method_at(self, dep) if dep.kind == "subclass" and dep.access in ("instance", "class") else ()
        for path in dep.enclosing or self._method_around(dep) or holding:
            owner, _, name = path.rpartition(".")
            cls = self.scan.classes.get(owner)
            if cls is None and unnamed_private_function(self.scan, path):
                return path  # a module's own helper nothing names
            if cls is None and name == "__getattr__" and owner in self.scan.modules and module_getattr_unreached(self.scan, owner):
                return path  # PEP 562: called only for a name the module lacks, and nothing reads one
            method = cls.methods.get(name) if cls is not None else None
            # a decorator other than these may register the method and call it unnamed
            if method is None or name.startswith("__") or {d.rsplit(".", 1)[-1] for d in method.decorators} - _PLAIN_DECORATORS:
                continue
            if name in self.scan.name_strings:
                continue
            if (name in self.scan.attribute_uses and not reads_elsewhere_only(self.scan, self.plugin_mro, owner, name)
                    and self._called_when(owner, name) is not False):
                continue
            mro = self.upstream_mro(owner)
            if missing_bases(mro) or self.lookup(mro, name, instance=False).outcome is not Outcome.missing:
                continue
            if not self.named_in_release_code(name):
                return path
        return None

    def _called_when(self, owner: str, name: str) -> bool | None:
        """False when every read of `….name` in the plugin is a `self.name` in a method of a
        plugin class under a guard false on this upstream (vllm-spyre's `_setup_legacy_profiler`,
        called only `if importlib.util.find_spec("vllm.profiler.wrapper") is None` or
        `if getattr(envs, "VLLM_TORCH_PROFILER_DIR", None) is not None`, both false on 0.17:
        the method never runs there); None when some read may run."""
        reads = reads_of(self.scan, name)
        if not reads:
            return None
        for read in reads:
            cls = self.scan.classes.get(read.through_self_of or "")
            line = int(read.where.rsplit(":", 1)[1])
            refs = [r for r in cls.self_refs if r.member == name and r.line == line] if cls is not None and not read.through_super else []
            if not refs or not all(any(self.evaluate(g.cond) is False for g in ref.guards) for ref in refs):
                return None
        return False

    def base(self, dep: Dependency, target: str | None = None) -> dict[str, Any]:
        return dict(
            kind=dep.kind, target=target or dep.target or dep.expression or "?", live=dep.live,
            file=dep.file, line=dep.line, hook_type=dep.hook_type, scope=dep.scope,
            runs_in=dep.hook if dep.kind in ("hook", "patch") and dep.hook else f"{dep.plugin_class}.{dep.member}" if dep.kind == "override" and dep.plugin_class
            else dep.enclosing[-1] if dep.enclosing else None,
        )

    def successor_for(self, finding: Finding, target: str, old: SymbolIndex | None = None) -> Finding:
        """Ask for the successor of `target` on `finding` (replacing an earlier ask); it is named
        by `fill_successors`. `old` defaults to the baseline's index."""
        if self._successors is not None:
            self._successors[id(finding)] = (finding, target, old or (self.baseline.index if self.baseline is not None else None))
        return finding

    def fill_successors(self) -> None:
        """Name the successors asked for, searching them per compared release in one batch (its
        modules parsed together, see find_successors)."""
        asked, self._successors = self._successors or {}, {} if self._successors is not None else None
        by_old: dict[int, list[tuple[Finding, str]]] = {}
        olds: dict[int, SymbolIndex | None] = {}
        for finding, target, old in asked.values():
            by_old.setdefault(id(old), []).append((finding, target))
            olds[id(old)] = old
        for key, wanted in by_old.items():
            found = find_successors([target for _, target in wanted], self.index, olds[key])
            for finding, target in wanted:
                if finding.successor is None:  # one named on the spot (the dotted form of a target) stands
                    finding.successor, finding.successor_reason = found.get(target.replace(":", ".")) or (None, None)

    def judge(self, dep: Dependency) -> Finding | None:
        handler = getattr(self, f"_judge_{dep.kind}", None)
        if dep.kind in ("override", "subclass"):
            return judge_member(self, dep)
        if handler is not None:
            return handler(dep)
        return self._judge_target(dep)

    # --------------------------------------------------------------- kinds

    def _judge_file(self, dep: Dependency) -> Finding:
        return Finding(**self.base(dep), status=Status.unknown, detail=f"{dep.file} {dep.expression}; nothing in it was checked")

    def _judge_entry_point(self, dep: Dependency) -> Finding:
        detail = f"{dep.name} = {dep.expression}: {profile().display}'s ep.load() fails, logs it and skips the plugin"
        missing = "defines no" in (dep.expression or "")
        status = Status.missing if missing else Status.unknown
        return Finding(**self.base(dep), status=status, breaking=missing, detail=detail)

    def _judge_import(self, dep: Dependency) -> Finding:
        module = dep.name or dep.target
        provided = next((self.scan.provided_modules[m] for m in (module, *_parents(module)) if m in self.scan.provided_modules), None)
        if provided is not None and not self.index.module_exists(module):
            # the plugin registers a module of its own under that name (its frozen copy of an
            # upstream module): the import gets it from sys.modules (the import system's first look)
            return Finding(**self.base(dep), status=Status.ok,
                           detail=f"{module} is not in {self.index.source.label}; the plugin puts its own module in sys.modules under that name ({provided})")
        if not self.index.module_exists(module):
            parent = module
            while parent and not self.index.module_exists(parent):
                parent = parent.rpartition(".")[0]
            gone = module[len(parent) + 1 :].split(".")[0] if parent else module
            if (parent and any(c.handles(frozenset({"ModuleNotFoundError"})) for c in dep.catches)
                    and (held := self.index.resolve(module)).ok):
                # a caught import of an object's name (a locator trying each prefix of a dotted
                # path: import_module raises ModuleNotFoundError, and it reads the rest as attributes)
                return Finding(**self.base(dep), status=Status.ok, defined_in=defined_path(held),
                               detail=f"{parent}.{gone} is a name in module {parent}, not a module: importing {module} "
                                      f"raises ModuleNotFoundError, which the code catches (a probe)")
            note = f"no module {f'{parent}.{gone}' if parent else gone!r} in {self.index.source.label}"
            return self.missing_finding(dep, note, successor_of=dep.target)
        failing = self._fails_to_import(module)
        if failing is not None:  # the module's own code raises ImportError (a stale re-export shim)
            return self.missing_finding(dep, f"importing {module} fails on {self.index.source.label}: {failing}")
        resolution = self.index.resolve(dep.target)
        if resolution.ok:
            return Finding(**self.base(dep), status=Status.ok, defined_in=defined_path(resolution), detail=resolution.note)
        if is_undecided(resolution):
            return Finding(**self.base(dep), status=Status.unknown, detail=resolution.note)
        note = f"cannot import name {dep.target.rsplit('.', 1)[-1]!r} from {module}: {resolution.note}"
        return self._set_by_plugin(dep, dep.target, note) or self.missing_finding(dep, note, successor_of=dep.target)

    def _fails_to_import(self, module: str) -> str | None:
        """Why importing the upstream `module` itself raises ImportError on this release: a
        `from <upstream module> import name` at the top of its body (no `if`, `try` or function
        around it: it always runs, the language reference's import statement) whose name that
        module does not have (0.5.17's deprecated nsa_backend.py shim re-exports
        NativeSparseAttnBackend, which dsa_backend.py no longer defines). None when every such
        import resolves or is undecided. Memoised per judge."""
        if module not in self._import_failures:
            # first from the module's table (no parse): a name it imports from an upstream module
            # that does not resolve; only then the statements, to see which run unconditionally
            table = self.index.table(module)

            def lacks(binding) -> bool:  # (a name the source module binds needs no resolving)
                source, _, name = binding.target.partition(":")
                held = self.index.table(source) if is_upstream(source) and self.index.module_exists(source) else None
                return (held is not None and name not in held.names and not self.index.module_exists(f"{source}.{name}")
                        and self.index.resolve(f"{source}.{name}").outcome is Outcome.missing)

            suspect = table is not None and any(b.kind == "from" and not b.fallback and lacks(b) for b in table.names.values())
            tree = self.index.tree(module) if suspect else None
            found = None
            for stmt in tree.body if tree is not None else ():
                if not isinstance(stmt, ast.ImportFrom) or any(a.name == "*" for a in stmt.names):
                    continue
                source = resolve_relative(module, self.index.files[module][1], stmt.level, stmt.module)
                if not is_upstream(source) or not self.index.module_exists(source):
                    continue
                for alias in stmt.names:
                    if self.index.module_exists(f"{source}.{alias.name}"):
                        continue  # a submodule, imported by the statement
                    resolution = self.index.resolve(f"{source}.{alias.name}")
                    if resolution.outcome is Outcome.missing:
                        found = f"its line {stmt.lineno} imports {alias.name} from {source}, which has no such name ({resolution.note})"
                        break
                if found:
                    break
            self._import_failures[module] = found
        return self._import_failures[module]

    def _judge_reference(self, dep: Dependency) -> Finding | None:
        """`a.b.c` through an upstream module/class: getattr step by step, stopping where the
        value is a function, an instance or comes from outside (its attributes are not static)."""
        if dep.how in CLASS_USES:
            return self._judge_class_use(dep)
        parts = dep.target.split(".")
        head = (dep.name or "").count(".") + 1 if dep.name else 1
        found: Resolution | None = None
        for end in range(max(head, 1), len(parts) + 1):
            resolution = assembled_field(self.index, self.index.resolve(".".join(parts[:end])))
            if not resolution.ok:
                if found is not None and found.ref.kind not in ("module", "class") and self.index.enum_of_member(found.ref) is None:
                    break  # an attribute of a function / value: not knowable statically
                if end == head and dep.how == NONE_FALLBACK_READ and not is_undecided(resolution):
                    # the caught import's handler bound the name to None here: the read raises AttributeError
                    return Finding(**self.base(dep), status=Status.missing, breaking=True, risk=risk_of(dep, Status.missing),
                                   detail=f"{dep.expression} reads an attribute of None on {self.index.source.label}: {resolution.note or dep.name + ' is gone'}, "
                                          f"so the caught import binds {dep.expression.split('.')[0]} = None and the read raises AttributeError")
                if end == head:
                    return None  # the head itself is the import's finding
                if is_undecided(resolution):
                    return Finding(**self.base(dep, ".".join(parts[:end])), status=Status.unknown, detail=resolution.note)
                return (self._set_by_plugin(dep, ".".join(parts[:end]), resolution.note)
                        or self.missing_finding(dep, resolution.note, target=".".join(parts[:end])))
            found = resolution
            if resolution.ref.kind == "function" and end < len(parts):
                gone = self._class_now_function(resolution, ".".join(parts[:end]), parts[end])
                if gone is not None:
                    return self.missing_finding(dep, gone, target=".".join(parts[: end + 1]))
            if resolution.ref.kind not in ("module", "class") and self.index.enum_of_member(resolution.ref) is None or end == len(parts):
                break  # (an enum's member has its class's attributes: read on)
        if found is None or found.target.count(".") + 1 <= head:
            return None
        return Finding(**self.base(dep, found.target), **self._resolved_fields(found.target, found))

    def _class_now_function(self, resolution: Resolution, path: str, attr: str) -> str | None:
        """Why reading `path.attr` fails when `path` was a class with member `attr` on the
        baseline and is a plain function now (vllm 0.24's FusedMoE factory); None when that
        is not certain (no baseline, no such member there, a decorated function, or upstream
        setting the attribute on it)."""
        before = self.before.resolve(f"{path}.{attr}") if self.before is not None else None
        if before is None or not before.ok or not self.index.plain_function_lacks(resolution.ref, attr):
            return None
        info = self.index.function_info(resolution.ref)
        where = f"{self.index.files[resolution.ref.module][0]}:{info.lineno}" if info is not None else resolution.ref.module
        return (f"{resolution.ref.path} was a class with {attr!r} in {self.before.source.label} and is a function in "
                f"{self.index.source.label} ({where}): it has no attribute {attr!r}")

    def _judge_class_use(self, dep: Dependency) -> Finding | None:
        """A base of a plugin class, or isinstance()/issubclass()'s class, that upstream turned
        into a function (vllm 0.24 made `FusedMoE` a factory `def`): the class statement or the
        check raises TypeError. Only that is reported; whether the name resolves at all is its
        import's or reference's finding, and a name bound to a value may hold a class."""
        found = self.index.resolve(dep.target)
        if not found.ok or found.ref.kind != "function" or "." in found.ref.qualname:
            return None
        info = self.index.function_info(found.ref)
        where = f"{self.index.files[found.ref.module][0]}:{info.lineno}" if info is not None else found.ref.module
        before = self.before.resolve(dep.target) if self.before is not None else None
        was = f" (a class in {self.before.source.label})" if before is not None and before.ok and before.ref.kind == "class" else ""
        fails = "the class statement" if dep.how == CLASS_USE_BASE else dep.expression
        return self.missing_finding(dep, f"{found.ref.path} is a function in {self.index.source.label} ({where}){was}, not a class: {fails} raises TypeError")

    def _judge_call(self, dep: Dependency) -> Finding | None:
        if dep.how == INSTANCE_CALL:
            return self._judge_instance_call(dep)
        resolution = self.index.resolve(dep.target)
        if not resolution.ok and dep.how == NONE_FALLBACK_CALL and not is_undecided(resolution):
            # the caught import's handler bound the name to None here: this call raises TypeError
            return Finding(**self.base(dep), status=Status.missing, breaking=True, risk=risk_of(dep, Status.missing),
                           detail=f"{dep.expression}(...) calls None on {self.index.source.label}: {resolution.note or dep.target + ' is gone'}, "
                                  f"so the caught import binds {dep.expression} = None and the call raises TypeError ('NoneType' object is not callable)")
        if not resolution.ok:
            return None  # the import or reference finding says it is gone
        if dep.how == BOUND_ARGUMENTS:  # the call as such is judged once, where it is written
            return self._keyed_read(dep, resolution)
        params, bound, what = self._callable_params(resolution)
        if params is not None and resolution.ref.kind == "function" and not bound and self._on_enum_member(dep.target):
            bound = "staticmethod" not in {d.rsplit(".", 1)[-1] for d in self.index.function_info(resolution.ref).decorators}
        if dep.how == DATACLASS_EXTENDS:
            # @dataclass on the plugin class: the base's fields only when @dataclass made its __init__ too
            if params is None or not what.endswith("(synthesised by @dataclass)"):
                return None
            params, bound, what = (*params, *(dep.params or ())), False, f"{dep.expression.split(' (')[0]}.__init__ (synthesised by @dataclass)"
        if params is None:
            return None
        if dep.how is None and (instead := self._built_instead(dep, resolution)) is not None:
            return instead
        problem = bind_problem(params, dep.call, bound)
        if problem is None and (keyed := self._keyed_read(dep, resolution)) is not None:
            return keyed
        if problem is None and (refused := self._refused_by_replacement(dep, resolution)) is not None:
            return refused
        if problem is None:
            shifted = self._positional_shift(dep, params, bound)
            if shifted is not None:
                return Finding(**self.base(dep), status=Status.signature_changed, breaking=False, defined_in=what,
                               detail=f"{dep.expression}(...) → {what}{signature_text(params)}: the call binds, but {shifted}",
                               risk=risk_of(dep, Status.signature_changed))
            if not dep.call.keywords:
                return None
            return Finding(**self.base(dep), status=Status.ok, defined_in=what, detail=f"keywords {', '.join(dep.call.keywords)} bind to {what}{signature_text(params)}")
        certain, message = problem
        detail = f"{dep.expression}(...) → {what}{signature_text(params)}: {message}"
        replaced = self._replaced_by_plugin(resolution.ref, dep) if certain else None
        through_init = False
        if replaced is None and certain and resolution.ref.kind == "class":
            # `C.__init__ = own_init` / setattr(C, "__init__", …): calling C (or a subclass
            # inheriting that __init__) after the patch runs the plugin's function, self bound
            init = self.index.resolve(f"{resolution.ref.path}.__init__")
            replaced, through_init = (self._replaced_by_plugin(init.ref, dep) if init.ok else None), True
        if replaced is not None:
            # vllm-ascend's patch_triton.py sets fla.ops.chunk_gated_delta_rule to its own kernel,
            # which takes prebuilt_meta=: a call made after that patch binds the plugin's function
            taken, certain, detail = self._through_replacement(dep, replaced, detail, through_init)
            if taken is not None:
                return taken
        return Finding(**self.base(dep), status=Status.signature_changed, breaking=certain, defined_in=what, detail=detail, risk=risk_of(dep, Status.signature_changed))

    def _through_replacement(self, dep: Dependency, replaced: tuple[Dependency, tuple[Param, ...] | None], detail: str,
                             bound: bool) -> tuple[Finding | None, bool, str]:
        """A call upstream's callable refuses, where the plugin's patch (_replaced_by_plugin) is
        what it binds: (an `ok` finding when the plugin's function takes it, else None; whether
        the failure is certain; the detail naming the patch). `bound`: self is bound."""
        patch, own = replaced
        if own is not None and bind_problem(own, dep.call, bound) is None:
            return (Finding(**self.base(dep), status=Status.ok, defined_in=patch.hook,
                            detail=f"{detail}; but the plugin replaces it with {patch.hook}{signature_text(own)} ({patch.file}:{patch.line}), which takes the call"),
                    False, detail)
        certain = own is not None and bind_problem(own, dep.call, bound)[0]
        return None, certain, detail + f"; the plugin replaces it with {patch.hook} ({patch.file}:{patch.line})" + ("" if own is not None else ", whose signature is not known")

    def _judge_instance_call(self, dep: Dependency) -> Finding | None:
        """`obj.m(…)` on an instance of the upstream class C (dep.target "C.m"): the method C's
        MRO finds, self bound (none for a staticmethod), must take the call. Where it refuses
        it, an override in a subclass of C that takes it (upstream's or the plugin's: the object
        may be one, `pool: KVCache` holding an MHATokenToKVPool; not one taking `*args, **kwargs`,
        which forwards them) leaves it `unknown`, and the
        plugin's own patch of the method (members.replacements_at) is what the call binds.
        None where the method is not a function the index knows (its field finding judges the
        read) or the call binds."""
        class_path, _, attr = dep.target.rpartition(".")
        found = field_resolution(self, class_path, attr)
        if found is None or not found.ok or found.ref is None or found.ref.kind != "function":
            return None
        info = self.index.function_info(found.ref)
        decorators = {d.rsplit(".", 1)[-1] for d in info.decorators} if info is not None else set()
        if info is None or decorators & {"property", "cached_property", "overload"}:
            return None
        bound = "staticmethod" not in decorators
        problem = bind_problem(info.params, dep.call, bound)
        if problem is None:
            return None
        certain, message = problem
        what = found.ref.path
        detail = f"{dep.expression}(...) → {what}{signature_text(info.params)}: {message}"
        replaced = self._replaced_by_plugin(found.ref, dep) if certain else None
        if replaced is not None:
            taken, certain, detail = self._through_replacement(dep, replaced, detail, True)
            if taken is not None:
                return taken
        owner = self.index.resolve(class_path)
        for cls, body in upstream_subclasses(self.index, owner.ref) if certain and owner.ok else ():
            override = self.index.function_info(Ref("function", cls.module, f"{cls.qualname}.{attr}")) if body.members.get(attr) == "def" else None
            # (one taking `*args, **kwargs` says nothing: it forwards them, or refuses every call)
            if (override is not None and not forwards_anything(override.params)
                    and bind_problem(override.params, dep.call, "staticmethod" not in override.decorators) is None):
                return Finding(**self.base(dep), status=Status.unknown, risk=risk_of(dep, Status.unknown), defined_in=what,
                               detail=f"{detail}; but {cls.path}.{attr}{signature_text(override.params)} takes it, and the object may be one")
        sub = self.plugin_subclass_defining(class_path, attr) if certain else None
        if sub is not None:
            return Finding(**self.base(dep), status=Status.unknown, risk=risk_of(dep, Status.unknown), defined_in=what,
                           detail=f"{detail}; but the plugin's subclass {sub.path} defines {attr!r} ({sub.file}:{sub.line}), and the object may be one")
        return Finding(**self.base(dep), status=Status.signature_changed, breaking=certain, defined_in=what, detail=detail,
                       risk=risk_of(dep, Status.signature_changed))

    def _built_instead(self, dep: Dependency, resolution: Resolution) -> Finding | None:
        """A plugin call of an upstream class the plugin replaces out of tree (forms.built_instead:
        vLLM's CustomOp builds the registered class whenever the class is called), judged against
        what builds the object then: each registered plugin class's constructor (the first
        `__init__` of its MRO), and upstream's own too when no registration surely runs. A
        registered class that is not known, or whose constructor is not, leaves a call upstream's
        class refuses `unknown` (one it takes is judged as upstream's). None when nothing replaces
        the class, or for a call at import (it may run before the registration)."""
        registrations = built_instead(self, resolution.ref) if dep.scope != "module" else []
        if not registrations:
            return None
        built: list[tuple[str, Dependency | None]] = [(reg.hook, reg) for reg in registrations]
        # (registrations under a test and under its negation, `if is_310p(): T[k] = B`, together surely run)
        if self.evaluate(AnyOf(tuple(AllOf(tuple(g.cond for g in reg.guards)) for reg in registrations))) is not True:
            built.append((resolution.ref.path, None))  # the registrations may not run: upstream's class then
        where = ", ".join(sorted({f"{reg.file}:{reg.line}" for reg in registrations}))
        fits, fails = [], []
        for path, reg in built:
            params, bound, what = self._constructor(path) if path else (None, False, "")
            if params is None:
                # not known what builds it: upstream's constructor says nothing sure; a call it takes stays unjudged
                params, bound, _ = self._constructor(resolution.ref.path)
                if params is None or bind_problem(params, dep.call, bound) is None:
                    return None
                why = f"the class it builds ({path or 'not known'}) takes what its constructor takes, which is not known"
                return Finding(**self.base(dep), status=Status.unknown, risk=risk_of(dep, Status.unknown),
                               detail=f"{dep.expression}(...): the plugin registers a class for {resolution.ref.qualname!r} out of tree ({where}); {why}")
            problem = bind_problem(params, dep.call, bound)
            (fits if problem is None else fails).append((path, what, params, problem))
        if not fails:
            return Finding(**self.base(dep), status=Status.ok, defined_in=fits[0][1],
                           detail=f"{dep.expression}(...) builds what the plugin registers for {resolution.ref.qualname!r} out of tree ({where}): "
                                  + "; ".join(f"{what}{signature_text(params)} takes the call" for _, what, params, _ in fits))
        path, what, params, (certain, message) = fails[0]
        reg = next((reg for p, reg in built if p == path), None)
        chosen = [g.text for g in reg.guards if self.evaluate(g.cond) is not True] if reg is not None else []
        how = (f"registered for {resolution.ref.qualname!r} out of tree, {where}" + (f", where {' and '.join(chosen)}" if chosen else "")
               if path != resolution.ref.path else f"when the registrations at {where} do not run")
        return Finding(**self.base(dep), status=Status.signature_changed, breaking=certain, defined_in=what,
                       risk=risk_of(dep, Status.signature_changed),
                       detail=f"{dep.expression}(...) builds {path} ({how}): {what}{signature_text(params)}: {message}")

    def _constructor(self, path: str) -> tuple[tuple[Param, ...] | None, bool, str]:
        """What calling the class `path` (a plugin or an upstream class) takes: init_params for an
        upstream class; for a plugin class the first `__init__` its MRO writes (a plugin class's
        own, or an upstream base's). None where a plugin class binds `__init__`/`__new__` otherwise."""
        if path not in self.scan.classes:
            found = self.index.resolve(path)
            return self.init_params(found.ref) if found.ok and found.ref.kind == "class" else (None, False, path)
        for ref in self.plugin_mro(path):
            if ref.module == "" and ref.kind == "class":
                cls = self.scan.classes[ref.qualname]
                method = cls.methods.get("__init__")
                if method is not None and method.forwards:
                    continue  # (its *args, **kwargs go on unchanged to the next __init__ of the MRO)
                if method is not None:
                    return method.params, method.bound, f"{ref.qualname}.__init__"
                if cls.decorated or {"__init__", "__new__"} & cls.names:
                    return None, False, ref.qualname
            elif ref.module and ref.kind == "class":
                return self.init_params(ref)
            else:
                return None, False, ref.path
        return None, False, path

    def _refused_by_replacement(self, dep: Dependency, resolution: Resolution) -> Finding | None:
        """A plugin call that upstream's callable takes, of a callable (or a class's __init__) a
        live plugin patch replaces, unguarded or under guards that hold, with a function that
        cannot take it: a call made at run time that looks the callable up then (an attribute of
        its owner, `mod.f(…)`, or the class, whose __init__ Python reads at the call) runs the
        plugin's function, a TypeError. A name bound before the patch (`_orig = C.__init__`)
        keeps the original. None otherwise."""
        if dep.scope == "module":
            return None  # a call at import may run before the patch
        replaced, through_init = None, False
        if "." in (dep.expression or "") and resolution.ref.kind != "class":
            replaced = self._replaced_by_plugin(resolution.ref, dep)
        if resolution.ref.kind == "class":
            init = self.index.resolve(f"{resolution.ref.path}.__init__")
            replaced, through_init = (self._replaced_by_plugin(init.ref, dep) if init.ok else None), True
        if replaced is None or replaced[1] is None:
            return None
        patch, own = replaced
        if not patch.live or not all(self.evaluate(g.cond) is True for g in patch.guards):
            return None
        problem = bind_problem(own, dep.call, through_init)
        if problem is None or not problem[0]:
            return None
        return Finding(**self.base(dep), status=Status.signature_changed, breaking=True, defined_in=patch.hook,
                       detail=(f"{dep.expression}(...) binds {resolution.ref.path}, but the plugin replaces it with {patch.hook}"
                               f"{signature_text(own)} ({patch.file}:{patch.line}), which this call runs: {problem[1]}"),
                       risk=risk_of(dep, Status.signature_changed))

    def _replaced_by_plugin(self, ref: Ref, dep: Dependency) -> tuple[Dependency, tuple[Param, ...] | None] | None:
        """The plugin's patch that rebinds the upstream function `ref` to a plugin function where
        the call `dep` is (members.replacements_at), with that function's parameters (None when
        they are not known), or None."""
        patch = next(iter(members.replacements_at(self, ref, dep.file, dep.line)), None)
        if patch is None:
            return None
        return patch, patch.params if patch.params is not None else plugin_function_params(self.scan, patch.hook)

    def _keyed_read(self, dep: Dependency, resolution: Resolution) -> Finding | None:
        """A call handing a constant key to an upstream lookup function (upstream.keyed_lookup):
        judged as the registry read it makes, when the key is not there (None otherwise)."""
        lookup = keyed_lookup(self.index, resolution.ref) if resolution.ref.kind == "function" and dep.arguments else None
        given = dict(dep.arguments)
        key = given.get(lookup.position, given.get(lookup.param)) if lookup else None
        if key is None:
            return None
        read = self._judge_registry_key(replace(dep, kind="registry_key", target=lookup.registry, name=key, how=None))
        if read is None or read.status is Status.ok:
            return None
        read.target, read.kind = dep.target, dep.kind
        if read.status is Status.missing:
            keys = read.detail.partition("; its keys: ")[2]
            read.detail = (f"{dep.expression}({key!r}) raises: {resolution.ref.path} first tests `{lookup.param} not in "
                           f"{lookup.registry.rsplit('.', 1)[-1]}`, which has no {key!r} in {self.index.source.label}; its keys: {keys}")
        else:
            read.detail = f"{dep.expression}({key!r}) raises unless {key!r} is in {lookup.registry}: {read.detail}"
        return read

    def _positional_shift(self, dep: Dependency, params: tuple[Param, ...], bound: bool) -> str | None:
        """What a positional argument of the call now fills instead of the parameter it filled
        on the baseline (vllm 0.30's NIXL metadata put `transfer_mode` third, where vllm-rbln
        passes `cross_layers_blocks`): "argument 3 now fills 'transfer_mode' (was
        'cross_layers_blocks' in <baseline>)", or None (no baseline, no such shift, or a
        parameter renamed in place)."""
        if self.baseline is None or not dep.call.positional or dep.call.star_args:
            return None
        before = self.baseline.index.resolve(dep.target)
        old_params = self.baseline._callable_params(before)[0] if before.ok else None
        if old_params is None:
            return None

        def positional(ps: tuple[Param, ...], skip: bool) -> list[str]:
            names = [p.name for p in ps if p.kind in ("posonly", "pos")]
            return names[1:] if skip else names

        new, old = positional(params, bound), positional(old_params, self.baseline._callable_params(before)[1])
        new_by_name, old_by_name = {p.name: p for p in params}, {p.name: p for p in old_params}
        for position in range(min(dep.call.positional, len(new), len(old))):
            now, was = new[position], old[position]
            if now == was:
                continue
            if was in new_by_name:
                why = f"{was!r} moved"
            elif now not in old_by_name and old_by_name[was].default is None and new_by_name[now].default is not None:
                why = f"{was!r} is gone and {now!r}, optional, took its place"  # not a rename: a rename keeps it required
            else:
                continue  # a rename in place: the argument still means what the parameter means
            return f"argument {position + 1} now fills {now!r} (was {was!r} in {self.baseline.index.source.label}; {why})"
        return None

    def _on_enum_member(self, target: str) -> bool:
        """Whether `target` is read on a member of an upstream enum (`ForwardMode.DECODE.is_extend`):
        the member is an instance of the enum, so a method read there is bound to it."""
        container = self.index.resolve(target.rpartition(".")[0])
        return container.ok and self.index.enum_of_member(container.ref) is not None

    def _callable_params(self, resolution: Resolution) -> tuple[tuple[Param, ...] | None, bool, str]:
        """(parameters, whether the first is bound, the function's path) for a call target."""
        ref = resolution.ref
        if ref.kind == "function":
            info = self.index.function_info(ref)
            if info is None:
                return None, False, ref.path
            decorators = {d.rsplit(".", 1)[-1] for d in info.decorators}
            if decorators & {"property", "cached_property", "overload"}:
                return None, False, ref.path
            bound = "classmethod" in decorators
            return info.params, bound, ref.path
        if ref.kind == "class":
            return self.init_params(ref)
        return None, False, ref.path

    def init_params(self, ref: Ref) -> tuple[tuple[Param, ...] | None, bool, str]:
        """What calling the class takes: the first `__init__` written in an upstream class body
        (bound), else the one a dataclass, NamedTuple or msgspec.Struct synthesises from its
        fields (dataclasses: the MRO's dataclass fields, bases first). None for anything else
        (an outside base's __init__, pydantic, which ignores unknown keywords)."""
        mro = self.index.mro(ref)
        for position, cls in enumerate(mro):
            info = self.index.class_info(cls) if cls.kind == "class" else None
            if info is not None and info.members.get("__init__") == "def":
                init = self.index.function_info(Ref("function", cls.module, f"{cls.qualname}.__init__"))
                return (init.params if init else None), True, f"{cls.path}.__init__"
            if info is not None and _is_dataclass(info):
                # @dataclass writes __init__ into the class: it replaces any a parent wrote
                infos = [self.index.class_info(c) for c in mro[position:] if c.kind == "class"]
                if any(i is None or i.open_members for i in infos):
                    return None, False, ref.path
                fields: dict[str, tuple[bool, bool]] = {}
                for base in reversed(infos):  # dataclasses.fields: bases first, in reverse MRO
                    if _is_dataclass(base):
                        fields.update({name: (default, base.keyword_only) for name, default in base.fields})
                return _field_params(fields), False, f"{cls.path}.__init__ (synthesised by @dataclass)"
            if info is None:
                break
        outside = {base.path for base in mro if base.kind != "class"}
        infos = [self.index.class_info(cls) for cls in mro if cls.kind == "class"]
        if any(info is None or info.open_members for info in infos):
            return None, False, ref.path
        if outside & {"msgspec.Struct", "typing.NamedTuple()", "typing_extensions.NamedTuple()"} and not infos[0].decorators:
            fields = {name: (default, infos[0].keyword_only) for info in reversed(infos) for name, default in info.fields}
            return _field_params(fields), False, f"{ref.path}.__init__ (synthesised from its fields)"
        return None, False, ref.path

    def _judge_hook(self, dep: Dependency) -> Finding:
        if dep.target is None:
            return Finding(**self.base(dep), status=Status.unknown, detail=f"target {dep.expression} could not be evaluated statically", risk=risk_of(dep, Status.unknown))
        if not is_upstream(dep.target) and dep.target.replace(":", ".").split(".")[0] in {m.split(".")[0] for m in self.scan.modules}:
            return self._plugin_hook(dep)
        resolution = assembled_field(self.index, self.index.resolve_hook_target(dep.target))
        if not resolution.ok:
            if is_undecided(resolution):
                return Finding(**self.base(dep), status=Status.unknown, detail=resolution.note, risk=risk_of(dep, Status.unknown))
            dotted_form = dep.target.replace(":", ".")
            if ":" in dep.target.rpartition(".")[2] and self.index.resolve_hook_target(dotted_form).ok:
                finding = self.missing_finding(dep, f"HookRegistry splits the target at its last '.' and resolves {dep.target.rpartition('.')[0]!r}, then looks up {dep.target.rpartition('.')[2]!r} on it: a colon before the last name never resolves")
                finding.successor, finding.successor_reason = dotted_form, "the same target written with dots, which resolves"
                return finding
            return self.missing_finding(dep, resolution.note)
        if dep.hook_type != "REPLACE" and resolution.ref.kind == "class":
            detail = f"HookRegistry allows only REPLACE on a class target (TypeError when applied): this {dep.hook_type} hook is skipped"
            return Finding(**self.base(dep), status=Status.missing, breaking=True, defined_in=resolution.ref.path, detail=detail, risk=risk_of(dep, Status.missing))
        fields = self._resolved_fields(dep.target, resolution)
        finding = Finding(**self.base(dep), **fields, risk=risk_of(dep, fields["status"]) if fields["status"] == Status.unknown else 0)
        info = self.index.function_info(resolution.ref) if resolution.ref.kind == "function" else None
        if info is not None and info.body_hash in EMPTY_BODIES and dep.hook_type != "REPLACE":
            # still called, so the hook runs; but whatever it wrapped has moved out of the target
            finding.detail = f"the target does nothing on {self.index.source.label} (its body is empty): check where the behaviour this hook relies on went" + (f"; {finding.detail}" if finding.detail else "")
            finding.risk = max(finding.risk, 30)
        problem = self._hook_signature(dep, resolution)
        if problem is not None and dep.raises_only:
            finding.detail = RAISES_ONLY.format(what=f"the hook {dep.hook}")
        elif problem is not None and problem[0] is False and call_sites(self.index, resolution.ref).calls:
            # upstream calls the target and every call binds the hook as written: it fits (the
            # mismatch is a note); on a target nothing calls it stays reported
            finding.detail = problem[1] + (f"; {finding.detail}" if finding.detail else "")
        elif problem is not None:
            certain, message = problem
            finding.status, finding.breaking = Status.unknown if certain is None else Status.signature_changed, bool(certain)
            finding.detail = message
            finding.risk = risk_of(dep, Status.signature_changed)
        return finding

    def _plugin_hook(self, dep: Dependency) -> Finding:
        """A hook on the plugin's own code (`pkg.mod.Class.method`): no upstream dependency; it
        must name a method of one of the plugin's classes (HookRegistry skips it otherwise)."""
        dotted_target = dep.target.replace(":", ".")
        owner, _, member = dotted_target.rpartition(".")
        cls = self.scan.classes.get(owner)
        if cls is None:  # a module-level function, or something the scan does not list
            return Finding(**self.base(dep), status=Status.unknown, detail=f"a hook on the plugin's own {dotted_target}, not a class member the scan lists; not checked")
        mro = self.upstream_mro(owner)
        classes = self.scan.classes
        plugin_classes = [classes[ref.qualname] for ref in c3(Ref("class", "", owner), lambda ref: [Ref("class", "", b) for b in classes[ref.qualname].bases if b in classes])]
        defining = next((c for c in plugin_classes if member in c.methods or c.binds(member)), None)
        if defining is not None:
            return Finding(**self.base(dep), status=Status.ok, detail=f"a hook on the plugin's own {defining.path}.{member} ({defining.file}:{defining.line})")
        inherited = self.lookup(mro, member, instance=False) if not missing_bases(mro) else None
        if inherited is not None and inherited.ok:
            return Finding(**self.base(dep), status=Status.ok, defined_in=defined_path(inherited),
                           detail=f"a hook on the plugin's own {owner}, whose {member!r} comes from {inherited.owner or defined_path(inherited)}")
        if inherited is None or is_undecided(inherited) or any(c.dynamic for c in plugin_classes):
            return Finding(**self.base(dep), status=Status.unknown, detail=f"a hook on the plugin's own {owner}: whether it has {member!r} is not decided")
        return Finding(**self.base(dep), status=Status.missing, breaking=True, risk=risk_of(dep, Status.missing),
                       detail=f"the plugin's own {owner} ({cls.file}:{cls.line}) defines no {member!r}: HookRegistry logs it and skips the hook")

    def _hook_signature(self, dep: Dependency, resolution: Resolution, reaches=None) -> tuple[bool | None, str] | None:
        """Whether the hook function can take the calls SGLang's wrapper makes (hook_registry
        _wrap_fn): REPLACE and BEFORE get the target's arguments, AFTER (result, …), AROUND
        (original_fn, …)."""
        if dep.params is None or dep.passthrough or resolution.ref.kind != "function":
            return None
        info = self.index.function_info(resolution.ref)
        if info is None:
            return None
        decorators = {d.rsplit(".", 1)[-1] for d in info.decorators}
        if decorators & {"property", "cached_property"}:
            return None
        expected = info.params
        # a method is called bound: self (or cls) always arrives by position
        always = 1 if "." in resolution.ref.qualname and "staticmethod" not in decorators else 0
        prefix = {"AROUND": "original_fn", "AFTER": "result"}.get(dep.hook_type)
        if prefix:
            expected, always = (Param(prefix, "pos", None), *expected), always + 1
        problem = signature_incompatibility(expected, dep.params, positional_only=always)
        if problem is None:
            return None
        certain, message = problem
        problem = certain, (
            f"{dep.hook_type} hook {dep.hook}{signature_text(dep.params)} cannot take what the wrapper passes "
            f"{signature_text(expected)} for {resolution.ref.path}: {message}"
        )
        # The wrapper hands the hook what the call passed (self included for a method called
        # through an instance), after original_fn / result.
        extra = 1 if prefix else 0

        def bind(site: CallSite):
            shape = replace(site.shape, positional=site.shape.positional + extra + (1 if site.bound else 0))
            return bind_problem(dep.params, shape, False)

        # a hook replaces the target: every call of it lands on the hook (with `reaches`, only some do)
        unbound = binds_no_call(expected, dep.params, positional_only=always) if reaches is None else None
        # a method's calls include those on instances upstream builds of its class by name, and
        # for nn.Module.forward the calls of the instance itself (`self.mlp(x)`: Module.__call__)
        owner, _, member = resolution.ref.qualname.rpartition(".")
        built = instance_calls(self.index, Ref("class", resolution.ref.module, owner), member) if owner and always else None
        return against_calls(self.index, resolution.ref, problem, bind, reaches=reaches, unbound=unbound, extra=built, skipped=partial(platform_skip, self))

    def _judge_model(self, dep: Dependency) -> Finding:
        resolution = self.index.resolve(dep.target)
        if not resolution.ok:
            return self.missing_finding(dep, resolution.note)
        failing = self.failing_import(dep.module)
        if failing is not None:
            detail = f"{dep.name} is never registered: its module fails to import ({failing.file}:{failing.line} {failing.target})"
            return Finding(**self.base(dep), status=Status.missing, breaking=False, defined_in=resolution.ref.path, detail=detail, risk=risk_of(dep, Status.missing))
        return Finding(**self.base(dep), status=Status.ok, defined_in=resolution.ref.path, detail=f"registers {dep.name} (EntryClass)")

    def failing_import(self, module: str) -> Finding | None:
        """The first unguarded module-level import of `module` that fails on this upstream."""
        if module not in self._failing:
            self._failing[module] = next((
                finding for dep in self.scan.dependencies
                if dep.module == module and dep.kind == "import" and dep.scope == "module" and not dep.guards and not dep.catches
                for finding in [self._judge_import(dep)] if finding.status is Status.missing
            ), None)
        return self._failing[module]

    def _judge_field(self, dep: Dependency) -> Finding | None:
        return judge_field(self, dep)

    def _judge_registry_key(self, dep: Dependency) -> Finding | None:
        """`X["key"]` on an upstream module-level dict: the key must be one upstream puts in it
        (harness.knowledge.judge.registries); on an upstream enum class, a member of that name;
        anything else subscripted (another class, a sequence) is not a registry and gives no finding."""
        resolution = resolve_dependency(dep, self.index)
        if resolution.ok and resolution.ref.kind == "class" and any(r.kind == "external" and r.qualname.startswith("enum.") for r in self.index.mro(resolution.ref)):
            # `E["NAME"]` of an enum is its member NAME (enum docs: EnumType.__getitem__), a
            # KeyError (or the metaclass's error) when the class has none
            target = f"{dep.target}[{dep.name!r}]"
            member = self.index.member(resolution.ref, dep.name)
            if member.ok:
                return Finding(**self.base(dep, target), status=Status.ok, defined_in=member.ref.path, detail=f"the member {dep.name} of {dep.target}")
            return Finding(**self.base(dep, target), status=Status.missing, breaking=True, risk=risk_of(dep, Status.missing),
                           detail=f"{dep.target} has no member {dep.name!r} in {self.index.source.label}: looking it up by name raises")
        at = registry_at(self.index, dep.target) if not (resolution.ok and resolution.ref.kind == "value") else None
        if at is None and (not resolution.ok or resolution.ref.kind != "value"):
            return None  # the name itself: its import or reference says so
        found = registry_keys(self.index, resolution.ref) if at is None else at[1]
        if at is not None:
            resolution = replace(resolution, ref=at[0])
        if found is None:
            return None
        target = f"{dep.target}[{dep.name!r}]"
        own = plugin_puts([d for d in self.scan.dependencies if d is not dep], self.index, resolution.ref, dep.target, dep.name, dep) or next(
            (d for d in self.scan.dependencies if d is not dep and d.name == dep.name and profile().spec(d.kind).registration and d.live and not runs_after(d, dep)), None)
        if dep.name in found.keys:
            return Finding(**self.base(dep, target), status=Status.ok, defined_in=found.keys[dep.name], detail=f"{dep.name!r} is put in at {found.keys[dep.name]}")
        if own is not None:
            return Finding(**self.base(dep, target), status=Status.ok, detail=f"the plugin registers {dep.name!r} itself ({own.file}:{own.line})")
        known = ", ".join(sorted(found.keys)[:12]) + (" …" if len(found.keys) > 12 else "")
        if found.open:
            return Finding(**self.base(dep, target), status=Status.unknown, risk=risk_of(dep, Status.unknown),
                           detail=f"{dep.name!r} is not among the keys upstream puts in {dep.target} ({known}), but {found.open[0]}")
        successor = difflib.get_close_matches(dep.name, list(found.keys), n=1)
        # `.get(key)` yields None where `[key]` raises: the plugin then uses None as the value it
        # expected, unless it tests the result or gives a default (then it copes: reported, not red)
        copes = dep.how in ("get-default", "get-tested")
        how = {"get": "get() returns None, which the plugin then uses as the value",
               "get-raises": "get() returns None, on which the plugin raises",
               "get-default": "get() returns the plugin's default", "get-tested": "get() returns None, which the plugin tests"}.get(dep.how or "", "KeyError when read")
        return Finding(**self.base(dep, target), status=Status.missing, breaking=not copes, risk=risk_of(dep, Status.missing),
                       detail=f"{dep.target} has no key {dep.name!r} in {self.index.source.label} ({how}); its keys: {known}",
                       successor=f"{dep.target}[{successor[0]!r}]" if successor else None,
                       successor_reason="a close key of the same registry" if successor else None)

    def _judge_custom_op(self, dep: Dependency) -> Finding | None:
        return judge_replacement(self, dep)

    def _judge_named_class(self, dep: Dependency) -> Finding | None:
        return judge_named_class(self, dep)

    def _judge_architecture(self, dep: Dependency) -> Finding | None:
        return self.judge_architecture(dep)

    def judge_architecture(self, dep: Dependency, reference: SymbolIndex | None = None) -> Finding | None:
        """A model-architecture string the plugin registers, tests or adds: does this upstream
        still produce / list it where `reference` (default: the plugin's baseline) did
        (harness.knowledge.judge.architectures)? None for an architecture upstream never names."""
        reference = reference or (self.baseline.index if self.baseline else None)
        own = {d.target.rsplit(".", 1)[-1] for d in self.scan.dependencies if d.kind == "architecture" and d.how == "adds" and d.name == dep.name}
        verdict = architectures.judge(self.index, reference, dep.name, own)
        if verdict is None:
            return None
        status = Status(verdict.status)
        return Finding(**self.base(dep, f"{dep.target}[{dep.name!r}]"), status=status, breaking=False, risk=risk_of(dep, status),
                       defined_in=verdict.defined_in, detail=verdict.detail, successor=verdict.successor, successor_reason=verdict.successor_reason)

    def _judge_target(self, dep: Dependency) -> Finding:
        """Patches and registrations: the target must resolve."""
        if dep.target is None:
            return Finding(**self.base(dep), status=Status.unknown, detail=f"target {dep.expression} could not be evaluated statically", risk=risk_of(dep, Status.unknown))
        instance, platform = profile().platform_instance, self.scan.active_platform
        if dep.kind == "patch" and instance and platform and dep.target.startswith(instance + "."):
            # the instance is made from the plugin's own class: a write on it changes the plugin's object
            return Finding(**self.base(dep), status=Status.ok, detail=f"sets {dep.target[len(instance) + 1:]!r} on {instance.rsplit('.', 1)[-1]}, "
                                                                      f"an instance of the plugin's {platform} (the class activate() names)")
        if dep.kind == "patch" and dep.how == PLACED:
            return judge_placement(self, dep)
        resolution = resolve_dependency(dep, self.index)
        if not resolution.ok:
            if is_undecided(resolution):
                return Finding(**self.base(dep), status=Status.unknown, detail=resolution.note, risk=risk_of(dep, Status.unknown))
            if dep.kind == "kernel" and dep.how == "helper":
                # a guard, a setattr that adds the name, a caught import: the helper's body decides
                return Finding(**self.base(dep), status=Status.missing, breaking=False, risk=risk_of(dep, Status.missing),
                               detail=f"{resolution.note}; the pair is handed to the plugin's {dep.expression}, whose body decides what a "
                                      "missing target does: the replacement never lands, a failure is not certain")
            return self._added_name(dep, resolution) or self.missing_finding(dep, resolution.note)
        fields = self._resolved_fields(dep.target, resolution)
        finding = Finding(**self.base(dep), **fields, risk=risk_of(dep, fields["status"]) if fields["status"] == Status.unknown else 0)
        problem = self._replacement_signature(dep, resolution)
        if problem is not None:
            certain, message = problem
            finding.status, finding.breaking, finding.detail = (Status.unknown if certain is None else Status.signature_changed), bool(certain), message
            finding.risk = risk_of(dep, Status.signature_changed)
        return finding

    def _replacement_signature(self, dep: Dependency, resolution: Resolution) -> tuple[bool | None, str] | None:
        """A patch that sets an upstream function or method to a plugin function (`mod.f =
        my_f`, `setattr(Cls, "m", my_m)`) replaces it for every call that looks it up after the
        patch: judged as a REPLACE hook is, against upstream's calls of it (_hook_signature).
        None when it fits, or when it is no such patch or the plugin function's signature is not
        known."""
        if dep.kind != "patch" or dep.how not in ("assign", "setattr") or not dep.hook or resolution.ref.kind != "function":
            return None
        info = self.index.function_info(resolution.ref)
        kinds = {d.rsplit(".", 1)[-1] for d in info.decorators} if info is not None else set()
        owner_cls, _, method = dep.hook.rpartition(".")
        own = self.scan.classes.get(owner_cls)
        static_for_static = "staticmethod" in kinds and own is not None and method in own.methods and not own.methods[method].bound
        if info is None or kinds & {"classmethod", "staticmethod"} and not static_for_static:
            # a plain function in their place gets self only through an instance: not judged; a
            # staticmethod of the plugin's for a staticmethod (`vars(Holder)` hands the object
            # itself over) takes what upstream's calls pass, as upstream's did
            return None
        params = dep.params if dep.params is not None else plugin_function_params(self.scan, dep.hook)
        if params is None:
            return None
        replaced = members.plugin_replacements(self)
        owner, _, name = dep.target.rpartition(".")
        held = self.index.resolve(owner)
        module = held.ref.module if held.ok and held.ref.kind == "module" else None

        def reaches(site: CallSite):
            # a call made inside an upstream function the plugin replaces as well never runs
            caller = members.enclosing_function(self, site)
            patch = next(iter(replaced.get(caller, [])), None) if caller is not None else None
            if patch is not None:
                return Unreached(f"it sits in {caller.path}, which the plugin replaces too ({patch.file}:{patch.line})")
            method = members.enclosing_method(self, site)
            why = members.taken_out(self, dep, *method, 0) if method is not None else None
            if why:
                return why  # undecided: the plugin's own subclasses never run that method
            if module is None or module == resolution.ref.module:
                return True  # the defining module's global, or a class attribute: what every call looks up
            # a patch of the name another module imported: only lookups through that module see it
            at = members.module_at(self, site.path)
            if site.receiver == name:
                binding = self.index.table(at).names.get(name) if at and self.index.table(at) else None
                through = at == module or (binding is not None and binding.kind == "from" and binding.target.split(":")[0] == module)
            else:
                found = self.index.resolve_in_scope(at, site.receiver) if at else None
                through = found is not None and found.ok and found.ref.kind == "module" and found.ref.module == module
            return True if through else Unreached(f"it looks {name} up elsewhere than {module}, the only binding the plugin replaces")

        problem = self._hook_signature(replace(dep, params=params, hook_type="REPLACE", passthrough=forwards_anything(params)), resolution, reaches)
        if problem is None:
            return None
        certain, message = problem
        return certain, message.replace("REPLACE hook", "the replacement", 1)

    def _added_name(self, dep: Dependency, resolution: Resolution) -> Finding | None:
        """A patch setting a name its upstream module or class does not have (`mod.Name = X`,
        `setattr(mod, "Name", X)`): setting it cannot fail, so it is either the plugin adding a
        name of its own or a replacement of one upstream removed (a dead patch: `missing`).
        Evidence: the earlier release, `before` (had it: a replacement; lacked it too: an addition); the
        release naming it nowhere while the plugin reads it itself or writes it as a string
        (looked up by name later, as vllm/transformers_utils/config.py's _CONFIG_REGISTRY maps
        model types to class names of vllm.transformers_utils.configs): an addition. A release
        that still names it (moved elsewhere, still read): the replacement stays `missing`.
        A patch guarded by `not hasattr(owner, name)` (vllm-ascend patch_qwen3vl.py's start_layer)
        is an addition by construction; one guarded by `hasattr(owner, name)` only replaces. A name
        the owner's module reads only if it is there (name_reads.optional_read), or one the plugin
        imports or reads itself where the owner's module never reads it (as a global:
        name_reads.reads_module_global; as an attribute: reads_attribute), is an addition. Otherwise `unknown` with the reason where the engine's plugins add names by patching
        (EngineProfile.patches_add_names), else `missing` (`unknown` on a class whose members are
        computed at import: it may have the name). None when the owner itself does not resolve, or
        for other patch forms."""
        owner_path, _, name = dep.target.rpartition(".")
        owner = self.index.resolve(owner_path)
        if dep.kind != "patch" or dep.how not in ("assign", "setattr") or not owner.ok or owner.ref.kind not in ("module", "class"):
            return None
        info = self.index.class_info(owner.ref) if owner.ref.kind == "class" else None
        if owner.ref.kind == "class" and info is None:
            return None
        what = f"{owner_path} has no {name!r} in {self.index.source.label}"
        # a class whose members are computed at import may have it after all: replacing a name it
        # has is no failure either, so without evidence of an addition the patch is `unknown`
        computed = info.open_members if info is not None else None
        not_added = (None if computed is None else Finding(**self.base(dep), status=Status.unknown, risk=risk_of(dep, Status.unknown),
                                                          detail=f"{what} by its listed members, but {computed}: the patch replaces a member it has or adds one"))
        if any(g.cond == HasAttr(owner_path, name) for g in dep.guards):
            return None  # `if hasattr(mod, "name"): mod.name = …` replaces it only where it is there
        if any(d.how == WRAPPED_ORIGINAL and d.target == dep.target for d in self.scan.dependencies):
            return None  # the wrap reads the original first: it replaces only what is there
        absent = next((g for g in dep.guards if g.cond == Not(HasAttr(owner_path, name))), None)
        if absent is not None:  # `if not hasattr(Cls, "name"): Cls.name = ...` runs only to add it
            return Finding(**self.base(dep), status=Status.extension, breaking=False,
                           detail=f"{what}; the patch runs only when it is absent ({absent.text}, line {absent.line}): it adds a name of the plugin's own")
        if self.before is not None:
            before = self.before.resolve(dep.target)
            if before.ok or is_undecided(before):
                return not_added  # the plugin replaced what the earlier release had: upstream dropped it
            return Finding(**self.base(dep), status=Status.extension, breaking=False,
                           detail=f"{what}, nor in {self.before.source.label}: the patch adds a name of the plugin's own")
        optional = optional_read(self.index, owner.ref.module, name)
        if optional is not None:
            return Finding(**self.base(dep), status=Status.extension, breaking=False,
                           detail=f"{what}; the release reads {name!r} only where it is there ({optional}): the patch adds it to {owner_path}")
        # the plugin reading exactly what it set (`from vllm.config import current_platform` after
        # vllm-mindspore's `vllm.config.current_platform = …`), where the owner's code reads no such
        # global or attribute (vllm 0.11's vllm/config/__init__.py imports current_platform inside
        # each function that needs it): the plugin's own name, whatever else the release mentions
        own_use = next((d for d in self.scan.dependencies if d.kind in ("import", "reference") and d.target == dep.target
                        and (d.file, d.line) != (dep.file, dep.line)), None)
        read_there = (reads_module_global(self.index, owner.ref.module, name) if owner.ref.kind == "module"
                      else reads_attribute(self.index, owner.ref.module, name))
        if own_use is not None and not read_there:
            return Finding(**self.base(dep), status=Status.extension, breaking=False,
                           detail=f"{what}, and {owner.ref.module} never reads {'a global' if owner.ref.kind == 'module' else 'an attribute'} {name!r}: "
                                  f"the patch adds a name of the plugin's own, which it {'imports' if own_use.kind == 'import' else 'reads'} ({own_use.file}:{own_use.line})")
        named = self._named_in_release(name)
        # where plugins add names by patching, a name only other modules use (another parser's
        # own helper of the same name) says nothing of this owner: upstream would read a
        # member of it in the owner's own module (a mention there, even in a comment, says the
        # name was upstream's: vllm 0.23's layernorm_guard.py on the LayerNormFn it dropped)
        if named is not None and (not profile().patches_add_names or self._named_in_release(name, owner.ref.module) is not None):
            return not_added
        nowhere = f"no code of it names {name!r}" if named is None else f"the release names {name!r} only outside {owner.ref.module} (e.g. {named})"
        used = next((f"{how} ({where})" for how, where in (("reads", self.scan.attribute_uses.get(name)), ("names in a string", self.scan.name_strings.get(name)))
                     if where is not None and where != f"{dep.file}:{dep.line}"), None)
        if used is not None:
            return Finding(**self.base(dep), status=Status.extension, breaking=False,
                           detail=f"{what}, and {nowhere}: the patch adds a name of the plugin's own, which it {used}")
        if not profile().patches_add_names:
            return not_added
        return Finding(**self.base(dep), status=Status.unknown, risk=risk_of(dep, Status.unknown),
                       detail=f"{what}, and {nowhere}, nor does the plugin elsewhere: an addition nothing reads, or a replacement of a name "
                              "upstream dropped (dead); the release the plugin was written against (--baseline) tells")

    def _set_by_plugin(self, dep: Dependency, target: str, note: str) -> Finding | None:
        """An upstream name the release lacks that a patch of the plugin's own sets (`import
        vllm.config; vllm.config.current_platform = ascend_platform` in vllm-mindspore's
        package __init__, then `from vllm.config import current_platform` in one of its
        modules): there only when that patch ran first, which depends on the order modules are
        imported in, not checked: `unknown`. None when no patch sets it."""
        patches = [d for d in self.scan.dependencies if d.kind == "patch" and d.how in ("assign", "setattr") and d.target == target]
        # a module runs top to bottom: its own later patch is not there yet (the read that keeps
        # the original before replacing it), an earlier one at module level is
        earlier = next((p for p in patches if p.file == dep.file and p.line < dep.line and p.scope == "module" and not p.guards), None)
        if earlier is not None and dep.scope == "module":
            return Finding(**self.base(dep, target), status=Status.ok, detail=f"{note}; but the plugin sets it itself above ({earlier.file}:{earlier.line})")
        patch = next((p for p in patches if p.file != dep.file), None)
        if patch is None:
            return None
        return Finding(**self.base(dep, target), status=Status.unknown, risk=risk_of(dep, Status.unknown),
                       detail=f"{note}; but the plugin sets it itself ({patch.file}:{patch.line}): it is there when that has run first "
                              "(the order the plugin's modules are imported in is not checked)")

    def _method_around(self, dep: Dependency) -> tuple[str, ...]:
        """For `super().m(…)` inside the plugin class's own `m` (extending a base method upstream
        has since dropped), the path of that `m`, else (). Not an override's own finding
        (not_on_base: upstream stopped calling it), which is about its being called."""
        cls = self.scan.classes.get(dep.plugin_class or "")
        if dep.kind != "subclass" or dep.access != "super" or cls is None or cls.file != dep.file:
            return ()
        before = [m for m in cls.methods.values() if m.line < dep.line]  # not an override's own def line
        around = max(before, key=lambda m: m.line).name if before else None
        return (f"{cls.path}.{around}",) if around == dep.member else ()

    def named_in_release_code(self, name: str) -> bool:
        """Whether the release's code can call a method `name`: as an attribute (`x.name`) or a
        string (`getattr(x, "name")`, collective_rpc("name")); a word in prose does not (vllm
        0.23's 'postprocess' only in mamba_utils.py docstrings and comments)."""
        used = re.compile(rb"\." + re.escape(name.encode()) + rb"\b|[\"']" + re.escape(name.encode()) + rb"[\"']")
        return any(used.search(text) for text in self.index.sources().values() if name.encode() in text)

    def _named_in_release(self, name: str, module: str | None = None) -> str | None:
        """The first module of the release (or `module` itself) whose source has `name` as a
        word, or None."""
        word = re.compile(rb"\b" + re.escape(name.encode()) + rb"\b")
        sources = self.index.sources()
        texts = sources.items() if module is None else [(module, sources.get(module, b""))]
        return next((found for found, text in texts if name.encode() in text and word.search(text)), None)

    # --------------------------------------------------------------- shared

    def missing_finding(self, dep: Dependency, note: str | None, target: str | None = None, successor_of: str | None = None) -> Finding:
        target = target or dep.target
        detail = note or "does not resolve"
        if dep.kind == "import":
            detail += "; " + import_failure(dep)
        return self.successor_for(Finding(**self.base(dep, target), status=Status.missing, breaking=True, detail=detail,
                                          risk=risk_of(dep, Status.missing)), successor_of or target)

    def _resolved_fields(self, target: str, resolution: Resolution) -> dict[str, Any]:
        if is_undecided(resolution):
            return {"status": Status.unknown, "detail": resolution.note}
        if inherited_from(target, resolution, self.index):
            return {"status": Status.inherited, "defined_in": resolution.owner, "detail": f"defined on base class {resolution.owner}"}
        return {"status": Status.ok, "defined_in": defined_path(resolution), "detail": resolution.note}


def _field_params(fields: dict[str, tuple[bool, bool]]) -> tuple[Param, ...]:
    """Parameters of an __init__ synthesised from fields {name: (has default, keyword only)}."""
    return tuple(Param(name, "kwonly" if keyword_only else "pos", "…" if default else None) for name, (default, keyword_only) in fields.items())


def _is_dataclass(info) -> bool:
    """Decorated with @dataclass / @dataclasses.dataclass(...) (which generates __init__)."""
    return any(d.rsplit(".", 1)[-1] == "dataclass" for d in info.decorators)


def _parents(module: str) -> list[str]:
    """The packages above a dotted module name, nearest first (`a.b.c` -> `a.b`, `a`)."""
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(len(parts) - 1, 0, -1)]
