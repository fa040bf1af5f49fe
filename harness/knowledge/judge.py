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
"""

from __future__ import annotations

import ast
import difflib
import operator
import re
from typing import Any

from packaging.version import InvalidVersion, Version

from harness.knowledge import architectures
from harness.knowledge.callsites import CallSite, call_sites
from harness.knowledge.external import display
from harness.knowledge.fields import field_present, judge_field
from harness.knowledge.findings import BREAKING, Finding, Guard, Status
from harness.knowledge.index import Outcome, Ref, Resolution, SymbolIndex, c3
from harness.knowledge.kinds import profile
from harness.knowledge.plugin_repo import (
    LOADERS,
    AllOf,
    AnyOf,
    CallShape,
    Catch,
    Cond,
    Const,
    Dependency,
    FieldPresent,
    HasAttr,
    ImportsResolve,
    ModuleExists,
    Not,
    PluginScan,
    VersionCompare,
    is_upstream,
)
from harness.knowledge.registries import registry_keys
from harness.knowledge.successors import find_successor, find_successors
from harness.knowledge.symbols import EMPTY_BODIES, Param, dotted, signature_text
from harness.knowledge.upstream import UpstreamSource

_FAILING = {Status.missing, Status.signature_changed, Status.unknown}
# torch.nn.Module.__getattr__ answers only the parameters, buffers and submodules registered on
# the instance (torch/nn/modules/module.py), which instance_attributes lists
_REGISTERED_NAMES_ONLY = {"torch.nn.Module", "torch.nn.modules.module.Module"}
_NO_MEMBERS = {"object", "builtins.object", "abc.ABC", "typing.Generic", "typing.Protocol"}


def reported(finding: Finding) -> bool:
    """Whether a finding belongs in the map / check output: plain uses of upstream only when
    something is wrong with them (KindSpec.usage)."""
    return finding.status is not Status.ok or not profile().spec(finding.kind).usage


def dependencies(scan: PluginScan) -> list[Dependency]:
    return sorted(scan.dependencies, key=lambda d: (d.file, d.line, d.key))


# ----------------------------------------------------------------------------- judging


class Judge:
    """Judges a plugin's dependencies against one upstream index."""

    def __init__(self, index: SymbolIndex, scan: PluginScan, baseline: SymbolIndex | None = None, successors: bool = True):
        """`baseline`: the upstream the plugin was written against (its declared version); it
        tells an override of a base method that is gone from the plugin's own methods.
        `successors`: False for a judge whose findings are only compared (a baseline's), which
        then names none. Successors are searched when `fill_successors` runs, all together."""
        self.index = index
        self.scan = scan
        self.baseline = Judge(baseline, scan, successors=False) if baseline is not None else None
        # finding id -> (finding, target, the older index the search compares with)
        self._successors: dict[int, tuple[Finding, str, SymbolIndex | None]] | None = {} if successors else None
        self.version = upstream_version(index.source)
        self._asts: dict[str, ast.Module | None] = {}
        self._failing: dict[str, Finding | None] = {}
        self._in_try: dict[tuple[str, Catch], list[Dependency]] | None = None
        self._raw_findings: dict[int, Finding | None] = {}
        self._handed: dict[str, str | None] = {}
        self.field_writes: dict[str, Dependency] | None = None  # fields.py: the fields the plugin sets itself

    def __call__(self, dep: Dependency) -> Finding | None:
        """The finding for one dependency, or None when it turns out not to be one on this
        upstream (a subclass method upstream does not define is the plugin's own)."""
        finding = self.judge(dep)
        if finding is None:
            return None
        return self.apply_conditions(finding, dep)

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
            return self._judge_member(dep)
        if handler is not None:
            return handler(dep)
        return self._judge_target(dep)

    # --------------------------------------------------------------- kinds

    def _judge_file(self, dep: Dependency) -> Finding:
        return Finding(**self.base(dep), status=Status.unknown, detail=f"{dep.file} {dep.expression}; nothing in it was checked")

    def _judge_entry_point(self, dep: Dependency) -> Finding:
        detail = f"{dep.name} = {dep.expression}: SGLang's ep.load() fails, logs it and skips the plugin"
        missing = "defines no" in (dep.expression or "")
        status = Status.missing if missing else Status.unknown
        return Finding(**self.base(dep), status=status, breaking=missing, detail=detail)

    def _judge_import(self, dep: Dependency) -> Finding:
        module = dep.name or dep.target
        if not self.index.module_exists(module):
            parent = module
            while parent and not self.index.module_exists(parent):
                parent = parent.rpartition(".")[0]
            gone = module[len(parent) + 1 :].split(".")[0] if parent else module
            note = f"no module {f'{parent}.{gone}' if parent else gone!r} in {self.index.source.label}"
            return self._missing(dep, note, successor_of=dep.target)
        resolution = self.index.resolve(dep.target)
        if resolution.ok:
            return Finding(**self.base(dep), status=Status.ok, defined_in=_defined_in(resolution), detail=resolution.note)
        if _undecided(resolution):
            return Finding(**self.base(dep), status=Status.unknown, detail=resolution.note)
        return self._missing(dep, f"cannot import name {dep.target.rsplit('.', 1)[-1]!r} from {module}: {resolution.note}", successor_of=dep.target)

    def _judge_reference(self, dep: Dependency) -> Finding | None:
        """`a.b.c` through an upstream module/class: getattr step by step, stopping where the
        value is a function, an instance or comes from outside (its attributes are not static)."""
        parts = dep.target.split(".")
        head = (dep.name or "").count(".") + 1 if dep.name else 1
        found: Resolution | None = None
        for end in range(max(head, 1), len(parts) + 1):
            resolution = assembled_field(self.index, self.index.resolve(".".join(parts[:end])))
            if not resolution.ok:
                if found is not None and found.ref.kind not in ("module", "class"):
                    break  # an attribute of a function / value: not knowable statically
                if end == head:
                    return None  # the head itself is the import's finding
                if _undecided(resolution):
                    return Finding(**self.base(dep, ".".join(parts[:end])), status=Status.unknown, detail=resolution.note)
                return self._missing(dep, resolution.note, target=".".join(parts[:end]))
            found = resolution
            if resolution.ref.kind not in ("module", "class") or end == len(parts):
                break
        if found is None or found.target.count(".") + 1 <= head:
            return None
        return Finding(**self.base(dep, found.target), **self._resolved_fields(found.target, found))

    def _judge_call(self, dep: Dependency) -> Finding | None:
        resolution = self.index.resolve(dep.target)
        if not resolution.ok:
            return None  # the import or reference finding says it is gone
        params, bound, what = self._callable_params(resolution)
        if params is None:
            return None
        problem = bind_problem(params, dep.call, bound)
        if problem is None:
            if not dep.call.keywords:
                return None
            return Finding(**self.base(dep), status=Status.ok, defined_in=what, detail=f"keywords {', '.join(dep.call.keywords)} bind to {what}{signature_text(params)}")
        certain, message = problem
        detail = f"{dep.expression}(...) → {what}{signature_text(params)}: {message}"
        return Finding(**self.base(dep), status=Status.signature_changed, breaking=certain, defined_in=what, detail=detail, risk=risk_of(dep, Status.signature_changed))

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
            if _undecided(resolution):
                return Finding(**self.base(dep), status=Status.unknown, detail=resolution.note, risk=risk_of(dep, Status.unknown))
            dotted_form = dep.target.replace(":", ".")
            if ":" in dep.target.rpartition(".")[2] and self.index.resolve_hook_target(dotted_form).ok:
                finding = self._missing(dep, f"HookRegistry splits the target at its last '.' and resolves {dep.target.rpartition('.')[0]!r}, then looks up {dep.target.rpartition('.')[2]!r} on it: a colon before the last name never resolves")
                finding.successor, finding.successor_reason = dotted_form, "the same target written with dots, which resolves"
                return finding
            return self._missing(dep, resolution.note)
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
        if problem is not None:
            certain, message = problem
            finding.status, finding.breaking = Status.signature_changed, certain
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
        defining = next((c for c in plugin_classes if member in c.methods or member in c.names), None)
        if defining is not None:
            return Finding(**self.base(dep), status=Status.ok, detail=f"a hook on the plugin's own {defining.path}.{member} ({defining.file}:{defining.line})")
        inherited = self.lookup(mro, member, instance=False) if not self.missing_bases(mro) else None
        if inherited is not None and inherited.ok:
            return Finding(**self.base(dep), status=Status.ok, defined_in=_defined_in(inherited),
                           detail=f"a hook on the plugin's own {owner}, whose {member!r} comes from {inherited.owner or _defined_in(inherited)}")
        if inherited is None or _undecided(inherited) or any(c.dynamic for c in plugin_classes):
            return Finding(**self.base(dep), status=Status.unknown, detail=f"a hook on the plugin's own {owner}: whether it has {member!r} is not decided")
        return Finding(**self.base(dep), status=Status.missing, breaking=True, risk=risk_of(dep, Status.missing),
                       detail=f"the plugin's own {owner} ({cls.file}:{cls.line}) defines no {member!r}: HookRegistry logs it and skips the hook")

    def _hook_signature(self, dep: Dependency, resolution: Resolution) -> tuple[bool, str] | None:
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
            shape = CallShape(site.shape.positional + extra + (1 if site.bound else 0), site.shape.keywords, site.shape.star_args, site.shape.star_kwargs)
            return bind_problem(dep.params, shape, False)

        return against_calls(self.index, resolution.ref, problem, bind)

    def _judge_model(self, dep: Dependency) -> Finding:
        resolution = self.index.resolve(dep.target)
        if not resolution.ok:
            return self._missing(dep, resolution.note)
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
        (harness.knowledge.registries); anything else subscripted (a class, a sequence) is not
        a registry and gives no finding."""
        resolution = resolve_dependency(dep, self.index)
        if not resolution.ok or resolution.ref.kind != "value":
            return None  # the name itself: its import or reference says so
        found = registry_keys(self.index, resolution.ref)
        if found is None:
            return None
        target = f"{dep.target}[{dep.name!r}]"
        own = next((d for d in self.scan.dependencies if d.name == dep.name and d is not dep and (
            profile().spec(d.kind).registration or (d.kind == "patch" and d.how == "item-assign" and d.target == dep.target))), None)
        if dep.name in found.keys:
            return Finding(**self.base(dep, target), status=Status.ok, defined_in=found.keys[dep.name], detail=f"{dep.name!r} is put in at {found.keys[dep.name]}")
        if own is not None:
            return Finding(**self.base(dep, target), status=Status.ok, detail=f"the plugin registers {dep.name!r} itself ({own.file}:{own.line})")
        known = ", ".join(sorted(found.keys)[:12]) + (" …" if len(found.keys) > 12 else "")
        if found.open:
            return Finding(**self.base(dep, target), status=Status.unknown, risk=risk_of(dep, Status.unknown),
                           detail=f"{dep.name!r} is not among the keys upstream puts in {dep.target} ({known}), but {found.open[0]}")
        successor = difflib.get_close_matches(dep.name, list(found.keys), n=1)
        return Finding(**self.base(dep, target), status=Status.missing, breaking=True, risk=risk_of(dep, Status.missing),
                       detail=f"{dep.target} has no key {dep.name!r} in {self.index.source.label} (KeyError when read); its keys: {known}",
                       successor=f"{dep.target}[{successor[0]!r}]" if successor else None,
                       successor_reason="a close key of the same registry" if successor else None)

    def _judge_architecture(self, dep: Dependency) -> Finding | None:
        return self.judge_architecture(dep)

    def judge_architecture(self, dep: Dependency, reference: SymbolIndex | None = None) -> Finding | None:
        """A model-architecture string the plugin registers, tests or adds: does this upstream
        still produce / list it where `reference` (default: the plugin's baseline) did
        (harness.knowledge.architectures)? None for an architecture upstream never names."""
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
        resolution = resolve_dependency(dep, self.index)
        if not resolution.ok:
            if _undecided(resolution):
                return Finding(**self.base(dep), status=Status.unknown, detail=resolution.note, risk=risk_of(dep, Status.unknown))
            return self._missing(dep, resolution.note)
        fields = self._resolved_fields(dep.target, resolution)
        return Finding(**self.base(dep), **fields, risk=risk_of(dep, fields["status"]) if fields["status"] == Status.unknown else 0)

    # --------------------------------------------------------------- overrides and subclasses

    def upstream_mro(self, plugin_class: str) -> list[Ref]:
        """The upstream classes (and outside bases) in the plugin class's C3 MRO, in order."""
        classes = self.scan.classes

        def bases(ref: Ref) -> list[Ref]:  # a plugin class (module "")
            found = []
            for base in classes[ref.qualname].bases:
                if base in classes:
                    found.append(Ref("class", "", base))
                elif is_upstream(base):
                    resolved = self.index.resolve(base)
                    found.append(resolved.ref if resolved.ok and resolved.ref.kind == "class" else Ref("dynamic", "", base))
                else:  # an outside base the plugin names itself, or one the scan could not name
                    found.append(Ref("dynamic" if base.startswith("?") else "external", "", base.lstrip("?")))
            return found

        linear = c3(Ref("class", "", plugin_class), bases, lambda ref: self.index.mro(ref) if ref.module else None)
        return [ref for ref in linear if ref.module != "" or ref.kind != "class"]

    @staticmethod
    def missing_bases(mro: list[Ref]) -> list[str]:
        """Upstream bases named by the plugin's classes that do not resolve on this upstream."""
        return [ref.path for ref in mro if ref.kind == "dynamic" and not ref.module and is_upstream(ref.path)]

    def lookup(self, mro: list[Ref], name: str, instance: bool) -> Resolution:
        """`name` looked up along an upstream MRO (in the plugin class's C3 order); instance
        lookups also see the attributes those classes assign on self, and a `__getattr__`."""
        classes = [cls for cls in mro if cls.kind == "class"]
        for cls in classes:  # class bodies first: the merged order decides between bases
            info = self.index.class_info(cls)
            if info is not None and name in info.members:
                return self.index.member(cls, name)
        undecided = None
        for cls in classes:  # then outside bases and metaclasses, through the index
            found = self.index.member(cls, name)
            if found.ok:
                return found
            undecided = undecided or (found if found.outcome is Outcome.undecided else None)
        # bases the plugin class names itself outside upstream (the index answers for those of upstream classes)
        covered = {base for cls in classes for base in self.index.mro(cls)}
        unknown_bases = [cls.path for cls in mro if cls.kind in ("dynamic", "external") and cls not in covered and cls.path not in _NO_MEMBERS]
        if undecided is None and unknown_bases:
            undecided = Resolution(name, None, outcome=Outcome.undecided, note=f"the plugin class also derives from {', '.join(unknown_bases)}, outside the upstream source")
        if undecided is not None or not instance:
            return undecided or Resolution(name, None, note=f"no class in the MRO defines {name!r}")
        dynamic: list[str] = []
        for cls in classes:
            attributes = self.index.instance_attributes(cls)
            if name in attributes.names:
                return Resolution(name, Ref("value", cls.module, f"{cls.qualname}.{name}"), owner=cls.path,
                                  note=f"assigned on self in {cls.path} (line {attributes.names[name]})")
            dynamic.extend(attributes.dynamic)
        handed = next((found for cls in classes for found in [self.hands_itself_over(cls)] if found), None)
        where = self.index.registered_on_others(name) if handed else None
        if where is not None:
            cls = next(c for c in classes if self.hands_itself_over(c) == handed)
            return Resolution(name, Ref("value", cls.module, f"{cls.qualname}.{name}"), owner=cls.path,
                              note=f"registered on the instance at run time by the code it is handed to ({handed}): {where}")
        # outside bases set instance attributes in their own __init__ (nn.Module: `training`, …)
        outside = list(dict.fromkeys(base.path for cls in classes for base in self.index.mro(cls) if base.kind == "external" and base.path not in _NO_MEMBERS))
        for path, members in self.index.external.lookup(outside).items():
            if members is not None and members.instance_names is not None:
                if name in members.instance_names:
                    return Resolution(name, Ref("external", "", f"{path}.{name}"), owner=path,
                                      note=f"set on every instance by {display(path)}.__init__ ({members.source})")
            elif not path.endswith("()") and not path.startswith("@"):
                dynamic.append(f"what {display(path)}.__init__ sets on instances is not known")
        hook = next((found for cls in classes for found in [self.index.member(cls, "__getattr__")] if found.ok), None)
        if hook is not None and hook.owner not in _REGISTERED_NAMES_ONLY:
            dynamic.append(f"{hook.owner} defines __getattr__")
        if dynamic:
            return Resolution(name, None, outcome=Outcome.undecided, note="; ".join(dynamic))
        return Resolution(name, None, note=f"no class in the MRO defines or assigns {name!r}")

    def _judge_member(self, dep: Dependency) -> Finding | None:
        mro = self.upstream_mro(dep.plugin_class)
        first = next((c for c in mro if c.kind == "class"), None)
        if first is None or self.missing_bases(mro):
            return None  # an upstream base that does not resolve: its import or reference says so
        found = self.lookup(mro, dep.member, dep.access in ("instance", "super"))
        ref, owner = found.ref, found.owner
        # named after the plugin class's first upstream base, so the key stays put when the
        # member moves between upstream bases; defined_in says which one defines it
        target = f"{first.path}.{dep.member}"
        where = f"{dep.name}.{dep.member}" if dep.access == "override" else f"{dep.access} reference in {dep.name}"
        if ref is None:
            if found.outcome is Outcome.undecided:
                return Finding(**self.base(dep, target), status=Status.unknown, detail=f"{where}: not decided: {found.note}")
            if dep.access == "override":
                if dep.kind == "override":
                    return self._not_on_base(dep, mro, first, target)
                return self._dropped_override(dep, target)
            detail = f"{where}: {dep.member!r} is defined neither by the plugin classes nor by {first.path} and its bases ({found.note}; AttributeError when it runs)"
            return self._missing(dep, detail, target=target)
        defined_in = ref.path if ref.module and ref.kind != "external" else display(owner) if owner else None
        if dep.access == "override":
            return self._override_signature(dep, ref, target, defined_in)
        params = None
        if dep.call is not None and dep.member == "__init__":
            # what super().__init__ runs: the first written __init__ or the one @dataclass generated
            params, bound, defined_in = self.init_params(first)
        elif dep.call is not None and ref.kind == "function":
            info = self.index.function_info(ref)
            if info is not None:
                params = info.params
                bound = dep.access in ("instance", "super", "class") and "staticmethod" not in {d.rsplit(".", 1)[-1] for d in info.decorators}
        problem = bind_problem(params, dep.call, bound) if params is not None else None
        if problem is not None:
            certain, message = problem
            return Finding(**self.base(dep, target), status=Status.signature_changed, breaking=certain, defined_in=defined_in,
                           detail=f"{where}: {defined_in}{signature_text(params)}: {message}", risk=risk_of(dep, Status.signature_changed))
        return Finding(**self.base(dep, target), status=Status.ok, defined_in=defined_in)

    def _override_signature(self, dep: Dependency, ref: Ref, target: str, defined_in: str) -> Finding:
        if dep.member == "__init__":
            return self._init_override(dep, target)
        if ref.kind != "function":  # e.g. a property over a base class attribute
            return Finding(**self.base(dep, target), status=Status.ok, defined_in=defined_in, detail=f"overrides base {ref.kind} {defined_in}")
        info = self.index.function_info(ref)
        problem = signature_incompatibility(info.params, dep.params or (), positional_only=1 if dep.bound else 0) if info else None
        if problem:
            # the calls upstream makes of the base method reach the override
            problem = against_calls(self.index, ref, problem, lambda site: bind_problem(dep.params or (), site.shape, site.bound and bool(dep.bound)))
            certain, message = problem
            detail = f"base {defined_in}{signature_text(info.params)} vs override {signature_text(dep.params)}: {message}"
            return Finding(**self.base(dep, target), status=Status.signature_changed, breaking=certain, defined_in=defined_in, detail=detail, risk=risk_of(dep, Status.signature_changed))
        return Finding(**self.base(dep, target), status=Status.ok, defined_in=defined_in)

    def _dropped_override(self, dep: Dependency, target: str) -> Finding | None:
        """A subclass method no upstream base defines: the plugin's own, unless the base it was
        written against defined it (then upstream stopped calling it)."""
        before = self.baseline.judge(dep) if self.baseline is not None else None
        if before is None or before.status not in (Status.ok, Status.signature_changed, Status.inherited):
            return None
        detail = (f"{dep.member} was defined on {before.defined_in} in {self.baseline.index.source.label} (the version the plugin declares); "
                  f"{self.index.source.label} no longer defines it, so upstream no longer calls the override")
        return self.successor_for(Finding(**self.base(dep, target), status=Status.not_on_base, breaking=True, detail=detail,
                                          risk=risk_of(dep, Status.not_on_base)), before.target)

    def _init_override(self, dep: Dependency, target: str) -> Finding | None:
        """A subclass `__init__` against the base's (written or synthesised). Reported, never
        breaking: it fails only where upstream constructs the class (a factory returning it, a
        REPLACE hook), which is not traced; the plugin constructing it itself is fine."""
        mro = self.upstream_mro(dep.plugin_class)
        first = next((c for c in mro if c.kind == "class"), None)
        params, bound, what = self.init_params(first) if first else (None, False, "")
        if params is None:
            return None
        # a written __init__ lists self; a synthesised one does not, so self goes from the override
        override = dep.params if bound else (dep.params or ())[1:]
        problem = signature_incompatibility(params, override or (), positional_only=1 if bound else 0)
        if problem is None:
            return None
        detail = (f"base {what}{signature_text(params)} vs {dep.name}.__init__{signature_text(dep.params or ())}: {problem[1]}; "
                  "this breaks where upstream constructs the class (e.g. a platform factory returns it), not where the plugin does")
        return Finding(**self.base(dep, target), status=Status.signature_changed, breaking=False, defined_in=what, detail=detail,
                       risk=risk_of(dep, Status.signature_changed) // 2)

    def _not_on_base(self, dep: Dependency, mro: list[Ref], first: Ref, target: str) -> Finding:
        shim = self.legacy_shim(mro, dep.member)
        if shim is not None:
            caller, where = shim
            detail = f"{dep.member} is no longer declared on the platform bases; {caller} ({where}) still calls it through a legacy shim, with a deprecation warning"
            return Finding(**self.base(dep, target), status=Status.deprecated, successor=caller, successor_reason=f"the legacy shim that still calls {dep.member} ({where})",
                           detail=detail, risk=risk_of(dep, Status.deprecated))
        successor = find_successor(target, self.index, self.baseline.index if self.baseline is not None else None)
        # evidence that upstream calls (or called) the method: a base member close in name or
        # naming it, or its base on the release the plugin was written against
        renamed = successor is not None and successor[0].rsplit(".", 1)[0] == first.path
        before = self.baseline.judge(dep) if self.baseline is not None else None
        was_called = before is not None and before.status not in (Status.not_on_base, Status.extension, Status.unknown)
        used_at = self.scan.attribute_uses.get(dep.member)
        if not renamed and not was_called and (used_at is not None or self.baseline is not None):
            why = (f"the plugin calls it itself ({used_at})" if used_at
                   else f"{self.baseline.index.source.label}, the release the plugin declares, did not define it either")
            return Finding(**self.base(dep, target), status=Status.extension, breaking=False,
                           detail=f"{dep.name}.{dep.member} is the plugin's own method, not on {first.path} or its bases: {why}")
        if was_called:
            detail = (f"{dep.member} was defined on {before.defined_in} in {self.baseline.index.source.label} (the version the plugin declares); "
                      f"{self.index.source.label} no longer defines it, so upstream no longer calls the override")
        else:
            detail = f"{dep.member} is not defined on {first.path} or its bases: upstream never calls it"
        return Finding(**self.base(dep, target), status=Status.not_on_base, breaking=True, successor=successor and successor[0], successor_reason=successor and successor[1],
                       detail=detail, risk=risk_of(dep, Status.not_on_base))

    def legacy_shim(self, mro: list[Ref], name: str) -> tuple[str, str] | None:
        """A method of a base that still calls `name` on the instance by name: `getattr(self,
        "name")` / `hasattr(self, "name")`, directly or through a table of legacy names (as
        0.5.23's SRTPlatform.get_kv_pool_cls does with _LEGACY_KV_POOL_HOOKS)."""
        for cls in mro:
            if cls.kind != "class":
                continue
            tree = self._ast(cls.module)
            info = self.index.class_info(cls)
            if tree is None or info is None:
                continue
            tables = {
                target.id
                for stmt in tree.body if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None
                for target in (stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]) if isinstance(target, ast.Name)
                if any(isinstance(n, ast.Constant) and n.value == name for n in ast.walk(stmt.value))
            }
            class_node = next((n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == cls.qualname.rsplit(".", 1)[-1] and n.lineno == info.lineno), None)
            for method in (n for n in (class_node.body if class_node else []) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
                names_used = {n.id for n in ast.walk(method) if isinstance(n, ast.Name)}
                for call in (n for n in ast.walk(method) if isinstance(n, ast.Call) and dotted(n.func) in ("getattr", "hasattr") and len(n.args) >= 2):
                    on_self = isinstance(call.args[0], ast.Name) and call.args[0].id in ("self", "cls")
                    key = call.args[1]
                    direct = isinstance(key, ast.Constant) and key.value == name
                    if on_self and (direct or (not isinstance(key, ast.Constant) and tables & names_used)):
                        table = self.index.table(cls.module)
                        return f"{cls.path}.{method.name}", f"{table.path}:{call.lineno}"
        return None

    def hands_itself_over(self, cls: Ref) -> str | None:
        """Where a method of this upstream class passes its instance to other code (a call with
        `self` as an argument, as a layer calls quant_method.create_weights(self, …)), which may
        register members on it: "Class.method (line n)", or None."""
        if cls.path not in self._handed:
            self._handed[cls.path] = None
            info = self.index.class_info(cls) if cls.kind == "class" else None
            tree = self._ast(cls.module) if info is not None else None
            name = cls.qualname.rsplit(".", 1)[-1]
            node = next((n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == name and n.lineno == info.lineno), None) if tree else None
            for method in (m for m in (node.body if node else []) if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))):
                receiver = (method.args.posonlyargs + method.args.args)[:1]
                if not receiver:
                    continue
                for call in (c for c in ast.walk(method) if isinstance(c, ast.Call)):
                    values = [*call.args, *(kw.value for kw in call.keywords)]
                    if any(isinstance(v, ast.Name) and v.id == receiver[0].arg for v in values):
                        self._handed[cls.path] = f"{cls.qualname}.{method.name} (line {call.lineno})"
                        break
                if self._handed[cls.path]:
                    break
        return self._handed[cls.path]

    def _ast(self, module: str) -> ast.Module | None:
        if module not in self._asts:
            table = self.index.table(module)
            try:
                self._asts[module] = ast.parse((self.index.source.root / table.path).read_bytes()) if table else None
            except (SyntaxError, ValueError, OSError):
                self._asts[module] = None
        return self._asts[module]

    # --------------------------------------------------------------- shared

    def _missing(self, dep: Dependency, note: str | None, target: str | None = None, successor_of: str | None = None) -> Finding:
        target = target or dep.target
        detail = note or "does not resolve"
        if dep.kind == "import":
            detail += "; " + import_failure(dep)
        return self.successor_for(Finding(**self.base(dep, target), status=Status.missing, breaking=True, detail=detail,
                                          risk=risk_of(dep, Status.missing)), successor_of or target)

    def _resolved_fields(self, target: str, resolution: Resolution) -> dict[str, Any]:
        if _undecided(resolution):
            return {"status": Status.unknown, "detail": resolution.note}
        if inherited_from(target, resolution, self.index):
            return {"status": Status.inherited, "defined_in": resolution.owner, "detail": f"defined on base class {resolution.owner}"}
        return {"status": Status.ok, "defined_in": _defined_in(resolution), "detail": resolution.note}

    def apply_conditions(self, finding: Finding, dep: Dependency) -> Finding:
        """Liveness, guards, handlers and hook timing decide whether a status breaks the plugin."""
        if finding.status in BREAKING and dep.kind != "architecture":  # a lost architecture falls back; the load never fails
            finding.breaking = True
        if dep.kind == "hook" and dep.scope == "runtime" and finding.status in (Status.ok, Status.inherited, Status.signature_changed, Status.body_changed, Status.moved):
            finding.status, finding.breaking = Status.never_applied, True
            finding.detail = dep.scope_reason
            finding.risk = risk_of(dep, Status.never_applied)
        outcome, deciding = "runs", (dep.guards[-1] if dep.guards else None)
        for guard in dep.guards:
            value = self.evaluate(guard.cond)
            if value is False:
                outcome, deciding = "skipped", guard
                break
            if value is None and outcome == "runs":
                outcome, deciding = "undecided", guard
        if deciding is not None:
            finding.guard = Guard(condition=deciding.text, line=deciding.line, outcome=outcome)
        errors = profile().spec(dep.kind).errors
        catch = next((c for c in reversed(dep.catches) if c.handles(errors)), None)
        if outcome == "runs" and catch is not None and finding.status in _FAILING and (finding.breaking or finding.status is Status.unknown):
            outcome = "caught"
            finding.guard = Guard(condition=f"except {', '.join(sorted(catch.exceptions))}", line=catch.line, outcome="caught")
        earlier = self.fails_before(dep) if outcome == "runs" and finding.status is not Status.ok else None
        if earlier is not None:
            # the try body stops at the earlier failure: this statement never runs
            failed, handler = earlier
            outcome = "caught"
            finding.guard = Guard(
                condition=f"except {', '.join(sorted(handler.exceptions))}: {failed.target} (line {failed.line}) fails first in the try at line {handler.line}",
                line=handler.line, outcome="caught",
            )
        if outcome != "runs" or not finding.live:
            finding.breaking = False
        if outcome in ("skipped", "caught"):
            finding.risk //= 4  # nothing to port on this version
        if not finding.live:
            finding.risk //= 4
        return finding

    def fails_before(self, dep: Dependency) -> tuple[Finding, Catch] | None:
        """An earlier statement of the same `try` body that certainly raises on this upstream,
        with the handler that catches its error: (its finding, the handler), or None. Earlier
        means: the same module and function, a smaller line, and under the guards `dep` is
        under (it runs whenever `dep` would), with those guards not false here."""
        if not dep.catches:
            return None
        if self._in_try is None:
            self._in_try = {}
            for other in self.scan.dependencies:
                for catch in other.catches:
                    self._in_try.setdefault((other.module, catch), []).append(other)
        for position, catch in enumerate(dep.catches):
            for other in self._in_try.get((dep.module, catch), []):
                errors = profile().spec(other.kind).errors
                if other.line >= dep.line or other.enclosing != dep.enclosing or not errors:
                    continue
                if dep.guards[: len(other.guards)] != other.guards or any(self.evaluate(g.cond) is not True for g in other.guards):
                    continue
                failed = self._raw(other)
                if failed is None or failed.status not in _FAILING or not failed.breaking:
                    continue
                # the error leaves this try's body; the innermost handler of it catches it
                handler = next((c for c in reversed(other.catches) if c.handles(errors)), None)
                if handler is not None and handler in dep.catches[: position + 1]:
                    return failed, handler
        return None

    def _raw(self, dep: Dependency) -> Finding | None:
        """The finding before guards and handlers, judged once per dependency."""
        key = id(dep)
        if key not in self._raw_findings:
            self._raw_findings[key] = self.judge(dep)
        return self._raw_findings[key]

    def evaluate(self, cond: Cond) -> bool | None:
        """A guard condition on this upstream: True, False or None (not decided)."""
        if isinstance(cond, Const):
            return cond.value
        if isinstance(cond, Not):
            value = self.evaluate(cond.cond)
            return None if value is None else not value
        if isinstance(cond, AllOf):
            values = [self.evaluate(c) for c in cond.conds]
            return False if False in values else (None if None in values else True)
        if isinstance(cond, AnyOf):
            values = [self.evaluate(c) for c in cond.conds]
            return True if True in values else (None if None in values else False)
        if isinstance(cond, HasAttr):
            resolution = self.index.resolve(f"{cond.owner}.{cond.name}")
            return True if resolution.ok and not _undecided(resolution) else (None if _undecided(resolution) else False)
        if isinstance(cond, FieldPresent):  # hasattr(v, "x") on an instance of an upstream class
            return field_present(self, cond.cls, cond.name)
        if isinstance(cond, ModuleExists):
            return self.index.module_exists(cond.path)
        if isinstance(cond, ImportsResolve):
            results = []
            for module, name in cond.imports:
                if not self.index.module_exists(module):
                    results.append(False)
                elif name is not None:
                    resolution = self.index.resolve(f"{module}.{name}")
                    results.append(None if _undecided(resolution) else resolution.ok)
                else:
                    results.append(True)
            return False if False in results else (None if None in results else True)
        if isinstance(cond, VersionCompare):
            return compare_version(self.version, cond.op, cond.literal, cond.parsed)
        return None  # Undecided, and a ParamFieldPresent the scan could not place


_IMPORT_COST = {
    "platform_class": "the platform class cannot be loaded: SGLang's _load_platform_class (pkgutil.resolve_name, outside any try) raises and the server does not start",
    "platform": "the platform plugin's entry point fails to load: SGLang logs it and falls back to another platform (or raises when SGLANG_PLATFORM selects it)",
    "plugins": "SGLang's load_plugins_by_group logs it and skips the whole plugin",
    "model_package": "SGLang's import_model_classes logs a warning and skips this model module",
    "entry": "the module fails to import",
}


def import_failure(dep: Dependency) -> str:
    """What a failing import costs, from where it runs and which loader imports its module."""
    if dep.scope != "module":
        return f"ImportError when {dep.enclosing[-1]} runs"
    loader = next((loader for loader in LOADERS if loader in dep.loaded_by), None)
    if loader is None:
        return f"ImportError when {dep.module} is first imported (from a function, after the plugin loaded)"
    return f"ImportError when {dep.module} is imported: {_IMPORT_COST[loader]}"


def _field_params(fields: dict[str, tuple[bool, bool]]) -> tuple[Param, ...]:
    """Parameters of an __init__ synthesised from fields {name: (has default, keyword only)}."""
    return tuple(Param(name, "kwonly" if keyword_only else "pos", "…" if default else None) for name, (default, keyword_only) in fields.items())


def _is_dataclass(info) -> bool:
    """Decorated with @dataclass / @dataclasses.dataclass(...) (which generates __init__)."""
    return any(d.rsplit(".", 1)[-1] == "dataclass" for d in info.decorators)


def _undecided(resolution: Resolution) -> bool:
    return resolution.outcome is Outcome.undecided


def _defined_in(resolution: Resolution) -> str | None:
    ref = resolution.ref
    return ref.path if ref.kind not in ("external", "dynamic") else None


def upstream_version(source: UpstreamSource) -> str | None:
    """The SGLang version of a source: the release's, else `__version__` in sglang/version.py."""
    if source.kind == "release" and source.version:
        return source.version
    try:
        text = (source.package_dir / "version.py").read_text()
    except OSError:
        return None
    match = re.search(r"""__version__\s*=\s*["']([^"']+)["']""", text)
    return match.group(1) if match else None


_COMPARE = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge, "==": operator.eq, "!=": operator.ne}


def compare_version(actual: str | None, op: str, literal: str, parsed: bool) -> bool | None:
    """`version <op> literal` as the plugin's code would compute it: PEP 440 ordering for
    parsed versions, plain string ordering for `sglang.__version__ >= "0.5.20"`."""
    if actual is None:
        return None
    if not parsed:
        return _COMPARE[op](actual, literal)
    try:
        return _COMPARE[op](Version(actual), Version(literal))
    except InvalidVersion:
        return None


def resolve_dependency(dep: Dependency, index: SymbolIndex) -> Resolution:
    """A patch, registration or server-arg target, resolved (see assembled_field)."""
    return assembled_field(index, index.resolve(dep.target))


def assembled_field(index: SymbolIndex, resolution: Resolution) -> Resolution:
    """A member of a class whose fields are computed at import: `X = defstruct(..., fields built
    from namespace classes, namespace=vars(X))`, as 0.5.23 builds ServerArgs from the arg_groups
    classes its module imports. The computed fields are what those classes declare: a name that
    neither the class body nor one of them declares is missing (a hook on it is skipped; a value
    set on it is dropped). Other resolutions come back unchanged."""
    if resolution.ok and resolution.ref.kind != "value" or resolution.outcome is Outcome.missing:
        return resolution
    container, _, field_name = resolution.target.rpartition(".")
    owner = index.resolve(container)
    info = index.class_info(owner.ref) if owner.ok and owner.ref.kind == "class" else None
    if info is None or not info.open_members:
        return resolution
    module = owner.ref.module
    table = index.table(module)
    namespaces = []
    for name, binding in (table.names.items() if table else []):
        if binding.kind != "from":
            continue
        namespace = index.resolve(f"{module}.{name}")
        if namespace.ok and namespace.ref.kind == "class" and namespace.ref != owner.ref:
            members = index.class_info(namespace.ref)
            if members and any(kind == "value" for kind in members.members.values()):
                namespaces.append(namespace.ref)
                if members.members.get(field_name) == "value":
                    ref = namespace.ref._replace(kind="value", qualname=f"{namespace.ref.qualname}.{field_name}")
                    return Resolution(resolution.target, ref, note=f"field declared on {namespace.ref.path}, which {owner.ref.qualname} is assembled from")
    if resolution.ok or not namespaces:
        return resolution
    names = ", ".join(n.qualname for n in namespaces[:6]) + (", …" if len(namespaces) > 6 else "")
    return Resolution(resolution.target, None, note=(
        f"{field_name!r} is neither in the body of {owner.ref.path} nor a field of the classes its fields are assembled from "
        f"({names}, imported by {module}); {info.open_members}"))


def inherited_from(target: str, resolution: Resolution, index: SymbolIndex) -> bool:
    """The member is found on a base of the class the target names (compared as classes, so a
    path through a re-export or an alias of that same class is not "inherited")."""
    if not resolution.owner or resolution.ref.kind == "external":
        return False
    container = index.resolve(target.rsplit(".", 1)[0].replace(":", "."))
    return container.ok and container.ref.kind == "class" and container.ref.path != resolution.owner


# ----------------------------------------------------------------------------- signatures


def signature_incompatibility(base: tuple[Param, ...], override: tuple[Param, ...], positional_only: int = 0) -> tuple[bool, str] | None:
    """Why `override` cannot stand in for `base` (every call valid for base must be valid for
    it), or None. Returns (certain, why): certain when *every* call fails with a TypeError,
    not only calls that use an optional parameter or pass an argument by a renamed keyword.
    The first `positional_only` parameters of base are always passed by position (self, a
    hook's original_fn or result)."""
    def positional(params):
        return [p for p in params if p.kind in ("posonly", "pos")]

    base_pos, over_pos = positional(base), positional(override)
    over_names = {p.name: p for p in override}
    base_names = {p.name for p in base}
    has_var = any(p.kind == "var" for p in override)
    has_varkw = any(p.kind == "varkw" for p in override)
    base_var = any(p.kind == "var" for p in base)
    base_varkw = any(p.kind == "varkw" for p in base)
    problems: list[tuple[bool, str]] = []
    for i, param in enumerate(base_pos):
        if i >= len(over_pos):
            if has_var:
                continue
            if i < positional_only:
                problems.append((True, f"takes {len(over_pos)} positional arguments, every call passes at least {positional_only}"))
            elif param.name in over_names and over_names[param.name].kind == "kwonly":
                problems.append((False, f"takes {param.name!r} only by keyword"))
            else:
                problems.append((param.default is None, f"drops positional parameter {param.name!r}"))
        else:
            if i >= positional_only and over_pos[i].name != param.name and param.kind == "pos" and not has_varkw:
                problems.append((False, f"parameter {i + 1} is {over_pos[i].name!r}, base calls it {param.name!r}"))
            if i >= positional_only and over_pos[i].default is None and param.default is not None:
                # upstream defines the default so that its calls can leave the argument out
                problems.append((True, f"{over_pos[i].name!r} is required where the base's {param.name!r} is optional: calls that leave it out fail"))
    generic = base_var and base_varkw  # a base taking (*args, **kwargs) says nothing about its calls
    for param in base:
        if param.kind == "kwonly" and param.name not in over_names and not has_varkw:
            problems.append((param.default is None, f"does not accept keyword {param.name!r}"))
        if param.kind == "var" and not has_var and not generic:
            problems.append((False, "does not accept *args"))
        if param.kind == "varkw" and not has_varkw and not generic:
            problems.append((False, "does not accept **kwargs"))
    for param in over_pos[len(base_pos) :]:
        if param.default is None and param.name not in base_names:
            problems.append((not (base_var or base_varkw), f"adds required parameter {param.name!r}"))
    for param in override:
        if param.kind == "kwonly" and param.default is None and param.name not in base_names:
            problems.append((not base_varkw, f"adds required keyword {param.name!r}"))
    if not problems:
        return None
    certain = [p for p in problems if p[0]]
    return (certain or problems)[0]


def against_calls(index: SymbolIndex, ref: Ref, problem: tuple[bool, str], bind) -> tuple[bool, str]:
    """A signature `problem` (certain, why) of a callable standing in for upstream's `ref`, judged
    by the calls the release makes of `ref` (harness.knowledge.callsites); `bind(site)` is
    bind_problem for one call. Certain when a call upstream makes cannot bind (that path raises
    TypeError); not breaking when every call binds and nothing else may call it; otherwise the
    problem as it was. The detail names the calls checked (file:line)."""
    certain, message = problem
    sites = call_sites(index, ref)
    failing = [(site, found) for site in sites.calls if (found := bind(site)) is not None]
    sure = [(site, why) for site, (is_certain, why) in failing if is_certain]
    if sure:
        site, why = sure[0]
        more = f" (and {len(sure) - 1} more call(s): {', '.join(s.where for s, _ in sure[1:5])})" if len(sure) > 1 else ""
        return True, f"{message}; upstream calls it at {site.describe()}: {why}, a TypeError on that path{more}"
    checked = ", ".join(s.describe() for s in sites.calls[:6]) + (f" and {len(sites.calls) - 6} more" if len(sites.calls) > 6 else "")
    if sites.unsure or failing:
        unplaced = ", ".join(f"{s.where} ({s.receiver})" for s in sites.unsure[:4])
        return certain, f"{message}; upstream calls checked: {checked or 'none found'}" + (f"; calls of the same name not placed: {unplaced}" if unplaced else "")
    if certain and _called_implicitly(index, ref):
        return certain, f"{message}; upstream calls checked: {checked or 'none found'}, but it is also called in ways a source scan cannot see"
    if sites.calls:
        return False, f"{message}; but every upstream call of it binds: {checked}"
    if certain and (not _never_called(index, ref) or bind(_fullest_call(index, ref)) is not None):
        # called in ways a source scan cannot see (nn.Module.__call__, a dunder, by name), or
        # no call could ever bind (the wrapper's own arguments do not fit)
        return problem
    return False, f"{message}; but nothing in {index.source.label} calls it (no call, reference or name string found)"


def _fullest_call(index: SymbolIndex, ref: Ref) -> CallSite:
    """A call of `ref` passing every parameter it has (through an instance, for a method): what
    any caller could pass. A callable that cannot take even this one fails whoever calls it."""
    info = index.function_info(ref)
    method = "." in ref.qualname and "staticmethod" not in {d.rsplit(".", 1)[-1] for d in info.decorators}
    positional = [p for p in info.params if p.kind in ("posonly", "pos")][1 if method else 0 :]
    keywords = tuple(p.name for p in info.params if p.kind == "kwonly")
    return CallSite("", 0, "", CallShape(len(positional), keywords, False, False), method)


def _called_implicitly(index: SymbolIndex, ref: Ref) -> bool:
    """Python or a framework calls it without naming it: a dunder, or a member of a class with a
    base outside the source (torch.nn.Module.__call__ runs `forward`)."""
    owner, _, name = ref.qualname.rpartition(".")
    return name.startswith("__") or bool(owner and any(klass.kind != "class" for klass in index.mro(Ref("class", ref.module, owner))))


def _never_called(index: SymbolIndex, ref: Ref) -> bool:
    """Nothing upstream can call `ref` unseen by the call-site scan (which found no call): its
    name in no string literal of the release (getattr by name); a method never named as `.name`
    without a call (passed on as a value); a function named in no other module (imported to be
    passed on). Callers rule out implicit calls first (_called_implicitly)."""
    owner, _, name = ref.qualname.rpartition(".")
    quoted = (f'"{name}"'.encode(), f"'{name}'".encode())
    sources = index.sources()
    if any(q in text for text in sources.values() for q in quoted):
        return False
    if owner:
        uncalled = re.compile(rb"\." + re.escape(name.encode()) + rb"\b(?![ \t]*\()")
        return not any(uncalled.search(text) for text in sources.values() if b"." + name.encode() in text)
    return not any(name.encode() in text for module, text in sources.items() if module != ref.module)


def bind_problem(params: tuple[Param, ...], call: CallShape, bound: bool) -> tuple[bool, str] | None:
    """Whether a call with this shape binds to `params` (as inspect.Signature.bind would);
    `bound` drops the first parameter (self/cls). Returns (certain, why) or None. With `*args`
    or `**kwargs` unpacked at the call site only the explicit keywords are certain."""
    params = params[1:] if bound and params and params[0].kind in ("pos", "posonly") else params
    names = {p.name: p for p in params}
    positional = [p for p in params if p.kind in ("posonly", "pos")]
    takes_var = any(p.kind == "var" for p in params)
    takes_varkw = any(p.kind == "varkw" for p in params)
    for keyword in call.keywords:
        param = names.get(keyword)
        if (param is None or param.kind in ("posonly", "var", "varkw")) and not takes_varkw:
            return True, f"unexpected keyword argument {keyword!r}"
        if param is not None and param in positional[: call.positional]:
            return True, f"multiple values for argument {keyword!r} (passed by position and by keyword)"
    if call.positional > len(positional) and not takes_var:
        return True, f"takes {len(positional)} positional arguments, the call passes {call.positional}"
    if call.star_args or call.star_kwargs:
        return None
    supplied = {p.name for p in positional[: call.positional]} | set(call.keywords)
    missing = [p.name for p in params if p.default is None and p.kind in ("posonly", "pos", "kwonly") and p.name not in supplied]
    if missing:
        return True, f"missing required argument {missing[0]!r}"
    return None


def risk_of(dep: Dependency, status: Status) -> int:
    """Higher = look first. A dead module's findings cannot break anything at run time."""
    score = {
        Status.missing: 90,
        Status.never_applied: 88,
        Status.not_on_base: 85,
        Status.extension: 5,
        Status.signature_changed: 60,
        Status.body_changed: 40,
        Status.deprecated: 35,
        Status.moved: 20,
        Status.inherited: 15,
        Status.unknown: 30,
        Status.ok: 0,
    }[status]
    if dep.hook_type == "REPLACE" and status in (Status.body_changed, Status.signature_changed):
        score += 30  # the plugin carries a copy of the upstream body: it is now stale
    if dep.passthrough and dep.hook_type != "REPLACE" and status == Status.signature_changed:
        score -= 40  # (*args, **kwargs) forwarding to the original survives a signature change
    if not dep.live:
        score //= 4
    return max(score, 0)


def prefetch(index: SymbolIndex, scan: PluginScan, rounds: int = 6) -> None:
    """Parse the upstream modules the plugin's targets name, in parallel when there are many
    (the judging that follows would parse them one by one); then, for up to `rounds` more
    rounds, the modules those names come from (`from x import y` re-exports, star imports,
    the modules of a named class's bases): resolution walks these chains, so parsing them
    together here is what keeps a cold check off a long serial parse."""
    needed: set[str] = set()
    pairs: set[tuple[str, str]] = set()  # (module, name) the judging looks up
    for dep in scan.dependencies:
        for text in (dep.target, dep.name, *_upstream_bases(scan, dep.plugin_class)):
            if is_upstream(text):
                parts = text.replace(":", ".").split(".")
                needed.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
                pairs.update((".".join(parts[:i]), parts[i]) for i in range(1, len(parts)))
    index.index_all(only=needed)
    for _ in range(rounds):
        pairs, more = _sources_of(index, pairs)
        if not more or not index.index_all(only=more):
            break


def _upstream_bases(scan: PluginScan, plugin_class: str | None, seen: frozenset[str] = frozenset()) -> list[str]:
    """The upstream bases of a plugin class, through its plugin bases."""
    cls = scan.classes.get(plugin_class) if plugin_class else None
    if cls is None or plugin_class in seen:
        return []
    found = []
    for base in cls.bases:
        found += _upstream_bases(scan, base, seen | {plugin_class}) if base in scan.classes else [base] if is_upstream(base) else []
    return found


def _sources_of(index: SymbolIndex, pairs: set[tuple[str, str]]) -> tuple[set[tuple[str, str]], set[str]]:
    """The next links of the names in `pairs` (only modules already parsed are read): the
    (module, name) pairs they are imported from or built on, and those modules."""
    follow: set[tuple[str, str]] = set()
    for module, name in pairs:
        table = index.table(module) if index.is_parsed(module) else None
        if table is None:
            continue
        binding = table.names.get(name)
        if binding is None:
            follow.update((star, name) for star in table.star_imports)
        elif binding.kind == "from":
            source, _, imported = binding.target.partition(":")
            follow.add((source, imported))
            follow.add((f"{source}.{imported}", ""))  # `from package import submodule`
        elif binding.kind == "module":
            follow.add((binding.target, ""))
        elif binding.kind == "class" and name in table.classes:
            info = table.classes[name]
            for base in info.bases:
                head = base.split(".")[0].split("(")[0]
                if head.isidentifier():
                    follow.add((module, head))
            if info.open_members:  # fields assembled from what the module imports (assembled_field)
                follow.update((module, imported) for imported, b in table.names.items() if b.kind == "from")
    follow = {(m, n) for m, n in follow if m and index.module_exists(m)}
    modules = {m for m, _ in follow if not index.is_parsed(m)}
    modules.update(".".join(m.split(".")[:i]) for m in list(modules) for i in range(1, m.count(".") + 1))
    return {(m, n) for m, n in follow if n}, modules
