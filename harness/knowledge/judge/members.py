"""Judging overrides and subclass members: the plugin class's C3 MRO over upstream classes,
member lookup along it (class bodies, instance attributes, outside bases, run-time registration),
override signatures, methods gone from the bases and the shims that still call them."""

from __future__ import annotations

import ast
import re
from dataclasses import replace
from functools import partial

from harness.engines import profile
from harness.knowledge.judge.callsites import (
    FACTORY_MADE,
    PARAMETER,
    PLATFORM_INSTANCE,
    CallSite,
    CallSites,
    call_sites,
    instance_calls,
    platform_calls,
)
from harness.knowledge.judge.context import JudgeContext
from harness.knowledge.judge.factory_calls import factory_calls
from harness.knowledge.judge.fields import outside_write, written_by_plugin
from harness.knowledge.judge.signatures import (
    RAISES_ONLY,
    Unreached,
    against_calls,
    bind_problem,
    failing_call,
    named_in_a_string,
    signature_incompatibility,
)
from harness.knowledge.judge.skipped_init import skipped_state
from harness.knowledge.judge.placements import placed_calls
from harness.knowledge.judge.platform_tests import platform_skip
from harness.knowledge.judge.successors import find_successor
from harness.knowledge.model import (
    AllOf,
    AnyOf,
    CallShape,
    Dependency,
    Finding,
    Outcome,
    PLACED,
    Param,
    PluginClass,
    Ref,
    Registered,
    Resolution,
    PLATFORM_INSTANCE_READ,
    STANDS_IN,
    Status,
    dotted,
    is_upstream,
    risk_of,
    signature_text,
    walk,
)
from harness.knowledge.scan import call_shape, parameter_annotation, plugin_function_params, reads_of, self_calls_in
from harness.knowledge.upstream import ENUM_MEMBER_ATTRIBUTES, c3, display

# torch.nn.Module.__getattr__ answers only the parameters, buffers and submodules registered on
# the instance (torch/nn/modules/module.py), which instance_attributes lists
_REGISTERED_NAMES_ONLY = {"torch.nn.Module", "torch.nn.modules.module.Module"}
_NO_MEMBERS = {"object", "builtins.object", "abc.ABC", "typing.Generic", "typing.Protocol"}


def upstream_mro(judge: JudgeContext, plugin_class: str) -> list[Ref]:
    """The upstream classes (and outside bases) in the plugin class's C3 MRO, in order."""
    return [ref for ref in judge.plugin_mro(plugin_class) if ref.module != "" or ref.kind != "class"]


def plugin_mro(judge: JudgeContext, plugin_class: str) -> list[Ref]:
    """The plugin class's C3 MRO: its own classes (Ref module "", qualname their path) first,
    then upstream classes and outside bases."""
    classes = judge.scan.classes

    def bases(ref: Ref) -> list[Ref]:  # a plugin class (module "")
        found = []
        for base in classes[ref.qualname].bases:
            if base in classes:
                found.append(Ref("class", "", base))
            elif is_upstream(base):
                resolved = judge.index.resolve(base)
                found.append(resolved.ref if resolved.ok and resolved.ref.kind == "class" else Ref("dynamic", "", base))
            else:  # an outside base the plugin names itself, or one the scan could not name
                found.append(Ref("dynamic" if base.startswith("?") else "external", "", base.lstrip("?")))
        return found

    return c3(Ref("class", "", plugin_class), bases, lambda ref: judge.index.mro(ref) if ref.module else None)


def missing_bases(mro: list[Ref]) -> list[str]:
    """Upstream bases named by the plugin's classes that do not resolve on this upstream."""
    return [ref.path for ref in mro if ref.kind == "dynamic" and not ref.module and is_upstream(ref.path)]


def lookup(judge: JudgeContext, mro: list[Ref], name: str, instance: bool) -> Resolution:
    """`name` looked up along an upstream MRO (in the plugin class's C3 order); instance
    lookups also see the attributes those classes assign on self, and a `__getattr__`."""
    classes = [cls for cls in mro if cls.kind == "class"]
    for cls in classes:  # class bodies first: the merged order decides between bases
        info = judge.index.class_info(cls)
        if info is not None and name in info.members:
            return judge.index.member(cls, name)
    undecided = None
    for cls in classes:  # then outside bases and metaclasses, through the index
        found = judge.index.member(cls, name)
        if found.ok:
            return found
        undecided = undecided or (found if found.outcome is Outcome.undecided else None)
    # bases the plugin class names itself outside upstream (the index answers for those of upstream classes)
    covered = {base for cls in classes for base in judge.index.mro(cls)}
    unknown_bases = [cls.path for cls in mro if cls.kind in ("dynamic", "external") and cls not in covered and cls.path not in _NO_MEMBERS]
    if undecided is None and unknown_bases:
        undecided = Resolution(name, None, outcome=Outcome.undecided, note=f"the plugin class also derives from {', '.join(unknown_bases)}, outside the upstream source")
    if undecided is not None or not instance:
        return undecided or Resolution(name, None, note=f"no class in the MRO defines {name!r}")
    dynamic: list[str] = []
    for cls in classes:
        attributes = judge.index.instance_attributes(cls)
        if name in attributes.names:
            return Resolution(name, Ref("value", cls.module, f"{cls.qualname}.{name}"), owner=cls.path,
                              note=f"assigned on self in {cls.path} (line {attributes.names[name]})")
        dynamic.extend(attributes.dynamic)
    handed = next((found for cls in classes for found in [hands_itself_over(judge, cls)] if found), None)
    where = judge.index.registered_on_others(name) if handed else None
    if where is not None:
        cls = next(c for c in classes if hands_itself_over(judge, c) == handed)
        return Resolution(name, Ref("value", cls.module, f"{cls.qualname}.{name}"), owner=cls.path,
                          note=f"registered on the instance at run time by the code it is handed to ({handed}): {where}")
    # outside bases set instance attributes in their own __init__ (nn.Module: `training`, …)
    outside = list(dict.fromkeys(base.path for cls in classes for base in judge.index.mro(cls) if base.kind == "external" and base.path not in _NO_MEMBERS))
    for path, members in judge.index.external.lookup(outside).items():
        if path.startswith("enum."):  # an enum's members: what EnumType sets on each (Enum.__init__ sets nothing)
            if name in ENUM_MEMBER_ATTRIBUTES:
                return Resolution(name, Ref("external", "", f"{path}.{name}"), owner=path, note=f"set on every member of {display(path)}")
        elif members is not None and members.instance_names is not None:
            if name in members.instance_names:
                return Resolution(name, Ref("external", "", f"{path}.{name}"), owner=path,
                                  note=f"set on every instance by {display(path)}.__init__ ({members.source})")
        elif not path.endswith("()") and not path.startswith("@"):
            dynamic.append(f"what {display(path)}.__init__ sets on instances is not known")
    hook = next((found for cls in classes for found in [judge.index.member(cls, "__getattr__")] if found.ok), None)
    # (a metaclass's __getattr__, enum.EnumType's, answers reads on the class, not on its instances)
    if hook is not None and hook.owner not in _REGISTERED_NAMES_ONLY and hook.owner in {*(c.path for c in classes), *outside}:
        dynamic.append(f"{hook.owner} defines __getattr__")
    if handed:
        # `layer.weight_block_size = …` in the code it is handed to (vllm/model_executor/layers/
        # quantization/fp8.py create_weights): there on that path, so not certain either way
        parts = classes[0].module.split(".")
        written = outside_write(judge.index, name, ".".join(parts[:2]) if len(parts) > 2 else parts[0])
        if written is not None:
            dynamic.append(f"upstream sets {name!r} on other objects at run time ({written}), and {handed} hands the instance to other code")
    if dynamic:
        return Resolution(name, None, outcome=Outcome.undecided, note="; ".join(dynamic))
    return Resolution(name, None, note=f"no class in the MRO defines or assigns {name!r}")


def grafted_onto(judge: JudgeContext, dep: Dependency, member: str) -> str | None:
    """Where the plugin method holding `dep` is assigned onto upstream classes that have
    `member` (`QwenGDN._forward_core = AscendGDN._forward_core`): "T.m (patched at
    file:line)", self being a T there; None when it is not, or a target lacks `member`."""
    if judge.memo.grafts is None:
        judge.memo.grafts = {}
        for patch in judge.scan.dependencies:
            if patch.kind == "patch" and patch.hook and patch.target and patch.how in ("assign", "setattr"):
                judge.memo.grafts.setdefault(patch.hook, []).append(patch)
    patches = next((judge.memo.grafts[path] for path in reversed(method_at(judge, dep)) if path in judge.memo.grafts), None)
    if not patches:
        return None
    places = []
    for patch in patches:
        owner = judge.index.resolve(patch.target.rpartition(".")[0])
        if not owner.ok or owner.ref.kind != "class" or judge.lookup(judge.index.mro(owner.ref), member, True).ref is None:
            return None
        places.append(f"{patch.target} (patched at {patch.file}:{patch.line})")
    return ", ".join(places)


def plugin_subclass_defining(judge: JudgeContext, plugin_class: str | None, member: str) -> PluginClass | None:
    """A plugin class deriving (at any depth, also through upstream classes) from `plugin_class`
    that binds `member` in its body or on self, or one of its plugin bases does (a mixin): code
    of the base reading it may run on such an instance."""
    if plugin_class is None:
        return None
    starts = [plugin_class]
    if plugin_class not in judge.scan.classes and is_upstream(plugin_class):
        # the plugin may name the class by another path (vllm.distributed.parallel_state.GroupCoordinator
        # for vllm.distributed.GroupCoordinator): the same class when both resolve to it
        _descendants(judge, plugin_class)  # fills the memo of bases
        target = judge.index.resolve(plugin_class)
        if target.ok:
            starts += [base for base in judge.memo.subclasses if base != plugin_class and is_upstream(base)
                       and (found := judge.index.resolve(base)).ok and found.ref == target.ref]
    def binding(path: str) -> PluginClass | None:
        # the class itself, or a plugin mixin among its bases (`class C(QuantizationConfig,
        # OwnMixin)` with `mesh: Mesh` in OwnMixin): what an instance of it carries
        queue, seen = [path], set()
        while queue:
            current = queue.pop(0)
            cls = judge.scan.classes.get(current)
            if cls is None or current in seen:
                continue
            seen.add(current)
            if cls.binds(member) or member in cls.methods:
                return cls
            queue += cls.bases
        return None

    found = next((found for start in starts for path in _descendants(judge, start) if (found := binding(path)) is not None), None)
    if found is None and is_upstream(plugin_class) and (target := judge.index.resolve(plugin_class)).ok:
        # a plugin class deriving from it through upstream classes (`BalanceScheduler(Scheduler)`
        # for an object annotated `SchedulerInterface`): its MRO holds the class
        found = next((cls for cls in judge.scan.classes.values() if (cls.binds(member) or member in cls.methods)
                      and any(ref == target.ref for ref in judge.plugin_mro(cls.path) if ref.module)), None)
    return found


def method_at(judge: JudgeContext, dep: Dependency) -> tuple[str, ...]:
    """The method holding a member reference, of the class it is written in (`dep.name`;
    member reads carry no `enclosing`): the last one starting at or above its line."""
    cls = judge.scan.classes.get(dep.name or "")
    starts = [m for m in cls.methods.values() if m.line <= dep.line] if cls is not None else []
    return (f"{cls.path}.{max(starts, key=lambda m: m.line).name}",) if starts else ()


def named_base(judge: JudgeContext, mro: list[Ref], first: Ref, member: str) -> Ref:
    """The upstream class a member's finding is named after: the first upstream class of the MRO
    whose own MRO has `member` on this release (else on the baseline) -- for a plain subclass its
    first base, whatever base of that base defines it; a later base where an earlier one never
    has it (a plugin mixin over upstream's CudaDeviceMixin, then SRTPlatform: SRTPlatform's
    init_backend, not a CudaDeviceMixin.init_backend no release defines); `first` where none has it."""
    classes = [c for c in mro if c.kind == "class"]
    for index in (judge.index, judge.baseline.index if judge.baseline is not None else None):
        for cls in classes if index is not None else ():
            ref = cls if index is judge.index else (found.ref if (found := index.resolve(cls.path)).ok and found.ref.kind == "class" else None)
            if ref is not None and index.member(ref, member).ok:
                return cls
    return first


def judge_member(judge: JudgeContext, dep: Dependency) -> Finding | None:
    if dep.how == STANDS_IN:  # the upstream class the plugin's class stands in for
        replaced = judge.index.resolve(dep.hook)
        mro = judge.index.mro(replaced.ref) if replaced.ok and replaced.ref.kind == "class" else []
    else:
        mro = judge.upstream_mro(dep.plugin_class)
    first = next((c for c in mro if c.kind == "class"), None)
    if first is None or missing_bases(mro):
        return None  # an upstream base that does not resolve: its import or reference says so
    # `super().x` looks x up in the class dictionaries after the current class only: not on the
    # instance, never through a `__getattr__` (the Python reference, "Invoking Descriptors", super binding)
    found = judge.lookup(mro, dep.member, dep.access == "instance")
    ref, owner = found.ref, found.owner
    # named after the plugin class's first upstream base, so the key stays put when the
    # member moves between that base's own bases; defined_in says which one defines it
    target = f"{named_base(judge, mro, first, dep.member).path}.{dep.member}"
    where = (f"{dep.name}.{dep.member}" if dep.access == "override" else f"{dep.access} reference in {dep.name}" if dep.name
             else f"{dep.expression} (the platform instance: a {dep.plugin_class}, the class activate() names)")
    if ref is None:
        if found.outcome is Outcome.undecided:
            return Finding(**judge.base(dep, target), status=Status.unknown, detail=f"{where}: not decided: {found.note}")
        if dep.access == "override":
            if dep.kind == "override":
                return _not_on_base(judge, dep, mro, first, target)
            return _dropped_override(judge, dep, target)
        own = next((w for c in mro for w in [written_by_plugin(judge, f"{c.path}.{dep.member}")] if w is not None), None)
        if own is not None and dep.access in ("instance", "class"):
            return Finding(**judge.base(dep, target), status=Status.ok, detail=f"{where}: the plugin sets {dep.member!r} on {first.path} itself ({own.file}:{own.line})")
        # the class the code is written in (dep.name) may be a base of the one judged; the
        # platform instance is made from exactly the class activate() names, never a subclass
        sub = next((found for cls in dict.fromkeys((dep.plugin_class, dep.name)) for found in [judge.plugin_subclass_defining(cls, dep.member)] if found),
                   None) if dep.access in ("instance", "class") and dep.how != PLATFORM_INSTANCE_READ else None
        if sub is not None:
            return Finding(**judge.base(dep, target), status=Status.unknown, risk=risk_of(dep, Status.unknown),
                           detail=f"{where}: {dep.member!r} is not declared by {first.path} and its bases ({found.note}), but the plugin's subclass {sub.path} "
                                  f"defines it ({sub.file}:{sub.line}): the instance may be one")
        replaced = replacement_defining(judge, mro, dep.member) if dep.access in ("instance", "class") else None
        if replaced is not None:
            return Finding(**judge.base(dep, target), status=Status.unknown, risk=risk_of(dep, Status.unknown),
                           detail=f"{where}: {dep.member!r} is not declared by {first.path} and its bases ({found.note}), but {replaced}: "
                                  "a class statement run after that patch derives from the plugin's class")
        grafted = grafted_onto(judge, dep, dep.member) if dep.access == "instance" else None
        if grafted is not None:
            return Finding(**judge.base(dep, target), status=Status.unknown, risk=risk_of(dep, Status.unknown),
                           detail=f"{where}: {dep.member!r} is not declared by {first.path} and its bases ({found.note}), but the method runs as {grafted}: "
                                  "on those instances it is there; on instances of the plugin class itself it would not be")
        detail = f"{where}: {dep.member!r} is defined neither by the plugin classes nor by {first.path} and its bases ({found.note}; AttributeError when it runs)"
        return judge.missing_finding(dep, detail, target=target)
    defined_in = ref.path if ref.module and ref.kind != "external" else display(owner) if owner else None
    if dep.access == "override":
        return _override_signature(judge, dep, ref, target, defined_in)
    params = None
    if dep.call is not None and dep.member == "__init__":
        # what super().__init__ runs: the first written __init__ or the one @dataclass generated
        params, bound, defined_in = judge.init_params(first)
    elif dep.call is not None and ref.kind == "function":
        info = judge.index.function_info(ref)
        if info is not None:
            params = info.params
            bound = dep.access in ("instance", "super", "class") and "staticmethod" not in {d.rsplit(".", 1)[-1] for d in info.decorators}
    if params is not None and dep.access == "super" and dep.scope != "module":
        # `super().__init__(…)` of a method the plugin's own patch replaced (`MedusaProposer.__init__ =
        # _init`): Python looks the method up when the call runs, after the plugin loaded
        looked = judge.index.resolve(f"{first.path}.__init__") if dep.member == "__init__" else found
        replacing = _live_replacement(judge, looked.ref) if looked.ok else None
        if replacing is not None:
            params, bound, defined_in = replacing[1], True, replacing[0].hook
    problem = bind_problem(params, dep.call, bound) if params is not None else None
    if problem is not None:
        certain, message = problem
        overriding = _overriding_subclass(judge, dep) if certain and dep.guards else None
        if overriding is not None:
            # under a condition, which instance reaches the call is a run-time matter: vllm-ascend's
            # base proposer calls self.build_model_inputs_first_pass(n) only when self.method ==
            # "dflash", i.e. on its AscendDflashProposer, whose own method takes (num_input_tokens)
            certain, message = False, (f"{message}; but the call sits under `{dep.guards[-1].text}` and the plugin's subclass {overriding} "
                                       f"defines {dep.member} and takes it: the instance there may be one")
        return Finding(**judge.base(dep, target), status=Status.signature_changed, breaking=certain, defined_in=defined_in,
                       detail=f"{where}: {defined_in}{signature_text(params)}: {message}", risk=risk_of(dep, Status.signature_changed))
    return Finding(**judge.base(dep, target), status=Status.ok, defined_in=defined_in)


def _live_replacement(judge: JudgeContext, ref: Ref) -> tuple[Dependency, tuple[Param, ...]] | None:
    """The plugin's live patch replacing the upstream function `ref` with a plugin function whose
    parameters are known, unguarded or under guards that hold here, with those parameters; None
    otherwise."""
    patch = next(iter(plugin_replacements(judge).get(ref, [])), None)
    if patch is None or not patch.live or not all(judge.evaluate(g.cond) is True for g in patch.guards):
        return None
    params = patch.params if patch.params is not None else plugin_function_params(judge.scan, patch.hook)
    return (patch, params) if params is not None else None


def plugin_replacements(judge: JudgeContext) -> dict[Ref, list[Dependency]]:
    """Upstream names the plugin rebinds to its own function or class on this release
    (`module.f = own_f`, `setattr(module, "C", OwnC)`; a patch under a guard false here does not
    run): upstream ref -> those patches. Which import runs first is not checked."""
    if judge.memo.replacements is None:
        judge.memo.replacements = {}
        for dep in judge.scan.dependencies:
            if dep.kind != "patch" or dep.how not in ("assign", "setattr") or not dep.hook or is_upstream(dep.hook) or not dep.target or dep.within:
                continue
            if any(judge.evaluate(g.cond) is False for g in dep.guards):
                continue  # vllm-ascend patches FusedMoE only `if not vllm_version_is("0.23.0")`
            found = judge.index.resolve(dep.target)
            if found.ok:
                judge.memo.replacements.setdefault(found.ref, []).append(dep)
    return judge.memo.replacements


def replacements_at(judge: JudgeContext, ref: Ref, file: str, line: int) -> list[Dependency]:
    """The plugin's patches of the upstream `ref` in place at `file:line`: those made for a block
    only (`with mock.patch.object(C, "__init__", f):`, Dependency.within) that holds the line,
    then those made for good (plugin_replacements)."""
    scoped = [dep for dep in judge.scan.dependencies
              if dep.kind == "patch" and dep.within and dep.file == file and dep.within[0] <= line <= dep.within[1]
              and dep.hook and not is_upstream(dep.hook) and dep.target and (found := judge.index.resolve(dep.target)).ok and found.ref == ref]
    return scoped + plugin_replacements(judge).get(ref, [])


def oot_replacements(judge: JudgeContext) -> list[tuple[Ref, Dependency]]:
    """(upstream class, registration) for each plugin class registered to stand in for an
    upstream class by its name (vLLM's `@RMSNorm.register_oot`: CustomOp.__new__ builds the
    registered class wherever upstream builds one named so, vllm/model_executor/custom_op.py):
    the class the registration is made on when it is the one named, else the upstream class so
    named among the registered class's bases (`CustomOp.register_oot(name="RMSNorm")` on a
    subclass of RMSNorm)."""
    found = []
    for dep in judge.scan.dependencies:
        if dep.kind != "custom_op" or not dep.hook or dep.hook not in judge.scan.classes or not dep.target or not dep.name:
            continue
        owner = judge.index.resolve(dep.target)
        if owner.ok and owner.ref.kind == "class" and owner.ref.qualname.rsplit(".", 1)[-1] == dep.name:
            found.append((owner.ref, dep))
            continue
        named = next((r for r in judge.plugin_mro(dep.hook) if r.module and r.kind == "class" and r.qualname.rsplit(".", 1)[-1] == dep.name), None)
        if named is not None:
            found.append((named, dep))
    return found


def platform_products(judge: JudgeContext) -> dict[str, set[str]]:
    """The plugin classes the plugin's platform classes return from a method by name or by
    qualified name (a factory upstream calls on `current_platform` and builds instances of:
    `get_mha_kv_pool_cls` -> XPool, `get_device_communicator_cls` -> "pkg.comm.XComm"):
    method -> plugin class paths. A method a platform class inherits from a plugin base
    counts; the first class of its MRO defining it decides."""
    if judge.memo.products is None:
        judge.memo.products = {}
        for platform in judge.scan.platforms:
            decided: set[str] = set()
            for ref in judge.plugin_mro(platform):
                cls = judge.scan.classes.get(ref.qualname) if ref.module == "" else None
                for method in (cls.methods if cls is not None else ()):
                    if method in decided:
                        continue
                    decided.add(method)
                    returned = {path for path in cls.returns.get(method, ()) if path in judge.scan.classes}
                    # by qualified name (vLLM's get_device_communicator_cls returns "pkg.mod.Class")
                    returned |= {dep.target for dep in judge.scan.dependencies if dep.kind == "named_class" and dep.how == "return"
                                 and dep.plugin_class == ref.qualname and dep.member == f"{method}()" and dep.target in judge.scan.classes}
                    if returned:
                        judge.memo.products.setdefault(method, set()).update(returned)
    return judge.memo.products


def replacement_defining(judge: JudgeContext, mro: list[Ref], member: str) -> str | None:
    """For an upstream class in `mro` that the plugin replaces with a class of its own
    (`vllm.v1.core.sched.scheduler.Scheduler = BalanceScheduler`, vllm-ascend's
    patch_balance_schedule.py) whose body or `self.` assignments bind `member`: "the plugin
    replaces X with Y (file:line)", else None."""
    replaced = plugin_replacements(judge)
    for klass in (ref for ref in mro if ref.kind == "class" and ref.module):
        for dep in replaced.get(klass, []):
            for ref in judge.plugin_mro(dep.hook) if dep.hook in judge.scan.classes else ():
                cls = judge.scan.classes.get(ref.qualname) if ref.module == "" else None
                if cls is not None and (cls.binds(member) or member in cls.methods):
                    return f"the plugin replaces {klass.path} with its {dep.hook} ({dep.file}:{dep.line}), which binds it"
    return None


def _placed_sites(judge: JudgeContext, dep: Dependency) -> list[CallSite]:
    """The upstream calls that run the override `dep` (method `dep.member` written in `dep.name`)
    through the plugin's PLACED patches of a class whose MRO runs it (placements.placed_calls)."""
    found: list[CallSite] = []
    for placement in judge.scan.dependencies:
        if placement.kind != "patch" or placement.how != PLACED or placement.hook not in judge.scan.classes:
            continue
        runs = next((r.qualname for r in judge.plugin_mro(placement.hook) if r.module == "" and r.qualname in judge.scan.classes
                     and dep.member in judge.scan.classes[r.qualname].methods), None)
        if runs == dep.name:
            found += placed_calls(judge, placement, dep.member)
    return found


def _overriding_subclass(judge: JudgeContext, dep: Dependency) -> str | None:
    """For a `self.m(…)` / `cls.m(…)` call in a plugin class (judged in the context of one of its
    most-derived classes): another plugin class deriving from the class it is written in whose
    own `m` binds that call ("path (file:line)"), or None."""
    if dep.access not in ("instance", "class") or dep.call is None:
        return None
    for start in dict.fromkeys(c for c in (dep.plugin_class, dep.name) if c):
        for path in _descendants(judge, start):
            method = judge.scan.classes[path].methods.get(dep.member)
            if method is not None and bind_problem(method.params, dep.call, method.bound) is None:
                cls = judge.scan.classes[path]
                return f"{path} ({cls.file}:{method.line})"
    return None


def _override_signature(judge: JudgeContext, dep: Dependency, ref: Ref, target: str, defined_in: str) -> Finding:
    if dep.member == "__init__":
        return _init_override(judge, dep, target)
    if ref.kind != "function":  # e.g. a property over a base class attribute
        return Finding(**judge.base(dep, target), status=Status.ok, defined_in=defined_in, detail=f"overrides base {ref.kind} {defined_in}")
    if dep.dispatch:
        return _dispatched_override(judge, dep, ref, target, defined_in)
    info = judge.index.function_info(ref)
    problem = _against_base(info, dep) if info else None
    # through an instance the override's own kind decides what comes implicitly (a plain
    # method over a @staticmethod base gets self: vllm-rbln's Sampler.apply_penalties)
    def bind(site: CallSite):
        return bind_problem(dep.params or (), site.shape, bool(dep.bound) and (site.bound or not _through_class(judge, site)))

    # a (self, *args, **kwargs) base declares no signature: the calls upstream makes on the
    # instances it builds of a class the plugin stands in for still pass what they pass
    forwards = info is not None and {p.kind for p in info.params[1:]} == {"var", "varkw"}
    built, rebound, own = _instance_sites(judge, dep) if problem or forwards else (None, set(), {})
    on_platform = _platform_sites(judge, dep) if problem else []
    # an instance the plugin places where upstream keeps one (`self.self_attn = DevAttention(…)`):
    # the calls upstream makes through that attribute run this override
    on_platform += _placed_sites(judge, dep) if problem else []
    if on_platform:  # the engine's platform instance is made from the class whose method this is
        built = CallSites(built.calls + on_platform, built.unsure) if built is not None else CallSites(on_platform, [])
    platform_lines = {(s.path, s.line) for s in on_platform}
    if not problem and forwards and built.calls:
        problem = False, "the calls upstream makes on the instances it builds decide"
    base_static = "staticmethod" in {d.rsplit(".", 1)[-1] for d in info.decorators} if info else False

    def reaches(site: CallSite):
        refused = bind_problem(info.params, site.shape, not base_static and (site.bound or not _through_class(judge, site)))
        if refused is not None and refused[0]:
            # upstream's own method cannot take this call either: upstream makes it on other
            # objects (vllm 0.18's LoRA `quant_method.apply(layer, x, bias)`, typed with the
            # quantisation base, never lands on a fused-MoE method), so it is no evidence here
            return Unreached(f"upstream's own {defined_in}{signature_text(info.params)} cannot take it either ({refused[1]})")
        if (site.path, site.line) in platform_lines:
            return True
        if site.made and not site.made.startswith(FACTORY_MADE):  # an instance upstream builds by a name the plugin rebinds to its class
            return True if site.made in rebound else (
                f"the plugin rebinds {', '.join(sorted(rebound))}; {site.where} builds it by the name {site.made}, "
                "bound when that module is imported (which runs first is not checked)")
        if (site.path, site.line) in own:
            return False  # on an instance upstream builds as its own class
        return _reaches_override(judge, dep, site, base=ref)

    if problem and dep.raises_only and failing_call(judge.index, ref, bind, reaches) is None:
        return Finding(**judge.base(dep, target), status=Status.ok, defined_in=defined_in, detail=RAISES_ONLY.format(what=f"{dep.name}.{dep.member}"))
    if problem:
        protocol = _protocol_of(judge, ref)
        if protocol is not None:
            # an interface declaration (vllm/model_executor/models/interfaces.py SupportsPP.forward):
            # upstream checks it with isinstance and calls the model's own method
            problem = False, f"{problem[1]}; the base is declared on {protocol}, a typing.Protocol: only a call upstream makes can fail"
        # the calls upstream makes of the base method reach the override
        problem = against_calls(judge.index, ref, problem, bind, reaches=reaches, extra=built, skipped=partial(platform_skip, judge))
        certain, message = problem
        if not certain and {p.kind for p in info.params[1:]} == {"var", "varkw"}:
            # a (self, *args, **kwargs) base declares no signature (vLLM's CustomOp.forward_oot
            # forwards to forward_native): only upstream's calls of it could show a mismatch
            return Finding(**judge.base(dep, target), status=Status.ok, defined_in=defined_in,
                           detail=f"base {defined_in}{signature_text(info.params)} takes any arguments")
        called = f"{dep.hook}, the class the @property override returns, called as" if dep.hook else "override"
        detail = f"base {defined_in}{signature_text(info.params)} vs {called} {signature_text(dep.params)}: {message}"
        status = Status.unknown if certain is None else Status.signature_changed
        return Finding(**judge.base(dep, target), status=status, breaking=bool(certain), defined_in=defined_in, detail=detail, risk=risk_of(dep, Status.signature_changed))
    return Finding(**judge.base(dep, target), status=Status.ok, defined_in=defined_in)


# The classes functools' dispatch looks a registration up by for a value of a builtin class: its
# MRO (bool's is bool, int, object)
_BUILTIN_MRO = {"bool": ("bool", "int"), "int": ("int",), "float": ("float",), "complex": ("complex",), "str": ("str",),
                "bytes": ("bytes",), "list": ("list",), "tuple": ("tuple",), "dict": ("dict",), "set": ("set",)}


def _dispatched_override(judge: JudgeContext, dep: Dependency, ref: Ref, target: str, defined_in: str) -> Finding:
    """An override that is a `functools.singledispatchmethod`: its dispatcher takes the argument
    after self by position (`args[0]`: a call passing none, or passing it by keyword, fails) and
    runs the implementation registered for the first class of that argument's MRO that has one,
    else the decorated def (Lib/functools.py, singledispatchmethod.__get__). The class upstream
    annotates that parameter with (`device_id: int`) is what its calls pass: the implementation
    dispatch picks for it (a builtin's MRO; another class by its own name) is judged as the
    override. Where that does not decide, each implementation is judged: all take upstream's
    calls → ok; none does → breaking as the first; some do → unknown (which one runs depends on
    the class of the value a call passes)."""
    info = judge.index.function_info(ref)
    first = info.params[1].name if info is not None and len(info.params) > 1 and info.params[1].kind in ("posonly", "pos") else None
    named = parameter_annotation(judge.index, ref, first) if first else None
    fallback = Registered("object", dep.params or (), dep.raises_only, dep.line)
    registered = {r.type.rsplit(".", 1)[-1]: r for r in reversed(dep.dispatch)}  # (a second registration of a class wins)
    lookup = (*_BUILTIN_MRO[named], "object") if named in _BUILTIN_MRO else (named.rsplit(".", 1)[-1],) if named else ()
    chosen = next((registered[c] for c in lookup if c in registered), fallback if named in _BUILTIN_MRO else None)

    def judged(implementation: Registered) -> Finding:
        params = implementation.params
        if len(params) > 1 and params[1].kind in ("posonly", "pos"):  # what the dispatcher passes as args[0]
            params = (params[0]._replace(kind="posonly"), params[1]._replace(kind="posonly", default=None), *params[2:])
        return _override_signature(judge, replace(dep, params=params, raises_only=implementation.raises_only, dispatch=()),
                                   ref, target, defined_in)

    def runs(implementation: Registered) -> str:
        return (f"the decorated def ({dep.file}:{dep.line})" if implementation is fallback
                else f"the implementation registered for {implementation.type} ({dep.file}:{implementation.line})")

    method = f"{dep.name}.{dep.member}, a functools.singledispatchmethod"
    if chosen is not None:
        finding = judged(chosen)
        reason = f"{method}: upstream's {first}: {named} runs {runs(chosen)}"
        finding.detail = f"{reason}; {finding.detail}" if finding.detail else reason
        return finding
    every = [(implementation, judged(implementation)) for implementation in (fallback, *dep.dispatch)]
    failing = [(i, f) for i, f in every if f.breaking]
    if not failing:
        finding = every[0][1]
        finding.detail = f"{method}: each implementation takes upstream's calls" + (f"; {finding.detail}" if finding.detail else "")
        return finding
    if len(failing) == len(every):
        finding = failing[0][1]
        finding.detail = f"{method}: no implementation takes upstream's calls; {runs(failing[0][0])}: {finding.detail}"
        return finding
    taking = ", ".join(runs(i) for i, f in every if not f.breaking)
    refusing = "; ".join(f"{runs(i)}: {f.detail}" for i, f in failing)
    return Finding(**judge.base(dep, target), status=Status.unknown, defined_in=defined_in, risk=risk_of(dep, Status.signature_changed),
                   detail=f"{method}: which implementation runs depends on the class of the value upstream passes as "
                          f"{first or 'its first argument'} (not annotated with one class): {taking} takes its calls; {refusing}")


def _platform_sites(judge: JudgeContext, dep: Dependency) -> list[CallSite]:
    """The calls upstream makes of the override's method on the engine's platform instance
    (`current_platform.m(…)`) when the plugin's activated platform class runs this override (it
    is the class, or a plugin base of it that no plugin class before it in the MRO overrides)."""
    active = judge.scan.active_platform
    if not active or active not in judge.scan.classes or not dep.plugin_class:
        return []
    own = [r.qualname for r in judge.plugin_mro(active) if r.module == ""]
    if dep.plugin_class not in own or any(dep.member in judge.scan.classes[c].methods for c in own[: own.index(dep.plugin_class)]):
        return []
    return platform_calls(judge.index, dep.member).calls


def _instance_sites(judge: JudgeContext, dep: Dependency) -> tuple[CallSites, set[str], dict[tuple[str, int], CallSite]]:
    """The calls upstream makes of the override's method on instances it builds of a class the
    plugin rebinds to a class deriving from the override's (`deepseek_mtp.DeepSeekMTPLayer =
    AscendMTPLayer`; callsites.instance_calls, `self.layers[i](…)` included for forward), or
    builds by calling a parameter the plugin hands the class to by keyword (`layer_type=`), with
    the rebound names (`module.Name`); none when no plugin class after the override's redefines
    the method (that one is what those instances run). Third, the calls (path, line) on
    receivers holding only instances upstream builds of its own classes of the plugin class's
    MRO by a name the plugin does not rebind: those never run the override."""
    found, rebound = CallSites(), set()
    stand_ins = [(cls, patch, False) for cls, patches in plugin_replacements(judge).items() if cls.kind == "class" for patch in patches]
    stand_ins += [(cls, registration, True) for cls, registration in oot_replacements(judge)]
    for upstream_class, patch, everywhere in stand_ins:
        mro = judge.plugin_mro(patch.hook) if patch.hook in judge.scan.classes else []
        own = [r.qualname for r in mro if r.module == ""]
        if dep.plugin_class not in own or any(dep.member in judge.scan.classes[c].methods for c in own[: own.index(dep.plugin_class)]):
            continue
        sites = instance_calls(judge.index, upstream_class, dep.member)
        found.calls.extend(sites.calls)
        found.unsure.extend(sites.unsure)
        # an out-of-tree registration stands in wherever upstream builds the class, by any name
        rebound.update({patch.target} | ({s.made for s in sites.calls} if everywhere else set()))
    for keyword, handed in sorted(judge.scan.class_arguments):
        # handed to upstream as `layer_type=DevLayer`: built wherever upstream calls a parameter
        # of that name defaulting to a class of its MRO
        own = [r.qualname for r in judge.plugin_mro(handed) if r.module == ""]
        if dep.plugin_class not in own or any(dep.member in judge.scan.classes[c].methods for c in own[: own.index(dep.plugin_class)]):
            continue
        for upstream_class in (r for r in judge.plugin_mro(handed) if r.module and r.kind == "class"):
            sites = instance_calls(judge.index, upstream_class, dep.member, by_parameter=True)
            found.calls.extend(site for site in sites.calls if site.made == f"{PARAMETER}{keyword}")
        rebound.add(f"{PARAMETER}{keyword}")
    for factory, products in platform_products(judge).items():
        for product in products:
            own = [r.qualname for r in judge.plugin_mro(product) if r.module == ""]
            if dep.plugin_class not in own or any(dep.member in judge.scan.classes[c].methods for c in own[: own.index(dep.plugin_class)]):
                continue
            base = next((r for r in judge.plugin_mro(product) if r.module and r.kind == "class"), None)
            sites = factory_calls(judge.index, factory, dep.member, base)
            found.calls.extend(sites.calls)
            found.unsure.extend(sites.unsure)
            rebound.add(f"platform:{factory}")
    upstream_own = {}
    # a plugin class binding the same `self.x` (vllm-rbln's RBScheduler sets its own
    # kv_cache_manager) may put its instance there
    bound = {name for cls in judge.scan.classes.values() for name in cls.names}
    for klass in (r for r in judge.plugin_mro(dep.plugin_class) if r.module and r.kind == "class"):
        for site in instance_calls(judge.index, klass, dep.member).calls:
            if (site.sole and site.made not in rebound and not site.made.startswith(FACTORY_MADE)
                    and not (site.holder.startswith("self.") and site.holder[5:] in bound)):
                upstream_own[(site.path, site.line)] = site
    return found, rebound, upstream_own


def _against_base(info, dep: Dependency) -> tuple[bool, str] | None:
    """signature_incompatibility of an override against the base method `info`, aligned
    when one is a @staticmethod and the other is not (the other's self/cls is not a
    parameter a caller passes)."""
    base, own = info.params, dep.params or ()
    base_static = "staticmethod" in {d.rsplit(".", 1)[-1] for d in info.decorators}
    if base_static and dep.bound:
        return signature_incompatibility(base, own[1:])
    if not base_static and not dep.bound:
        return signature_incompatibility(base[1:], own)
    return signature_incompatibility(base, own, positional_only=1 if dep.bound else 0)


def _through_class(judge: JudgeContext, site: CallSite) -> bool:
    """Whether the call at `site` goes through a class (`cls.m(…)`, `Sampler.m(…)`), not an
    instance: a plain method then gets no self."""
    if site.receiver in ("self", "super()"):
        return False
    if site.receiver == "cls":
        return True
    module = module_at(judge, site.path)
    found = judge.index.resolve_in_scope(module, site.receiver) if module and site.receiver.replace(".", "").isidentifier() else None
    return found is not None and found.ok and found.ref.kind == "class"


def _protocol_of(judge: JudgeContext, ref: Ref) -> str | None:
    """The class declaring method `ref` when it is a typing Protocol (an interface), else None."""
    owner = Ref("class", ref.module, ref.qualname.rpartition(".")[0])
    protocol = any(base.kind == "external" and base.qualname in ("typing.Protocol", "typing_extensions.Protocol") for base in judge.index.mro(owner))
    return owner.path if protocol else None


def _reaches_override(judge: JudgeContext, dep: Dependency, site: CallSite, depth: int = 0, base: Ref | None = None) -> bool | str | Unreached | None:
    """Whether an upstream call of the base method can land on the plugin class's override:
    never through `super()` (it runs the next class after the caller's, and the plugin's
    classes come before every upstream one); never inside a class the plugin's named classes
    displace or whose method they replace (see displacing_slot; undecided, with the reason, where
    the plugin names them only under conditions not decided here); not where the caller checked the receiver is one of classes the
    plugin class does not derive from (CallSite.narrowed); through `self` only inside an upstream class of the plugin
    class's MRO, in a method no class before it redefines (the plugin's own
    `_maybe_apply_prompt_updates` replaces upstream's, calls and all) and that may itself run
    (see _runs; None when it runs only through calls that could not be placed). Other
    receivers may, unless an override of the `base` method by another upstream class fails
    that call as well: then upstream does not make it on all of the base's subclasses, and
    whether on the plugin's is not known (a reason, undecided: vllm 0.11's linear.py calls
    `self.quant_method.create_weights(…)` with a linear layer's arguments, which its own
    UnquantizedFusedMoEMethod.create_weights does not take either). Never through a receiver
    declared to hold a class the plugin class does not derive from (vllm 0.18's LoRA
    `self.base_layer.forward(x)` on a VocabParallelEmbedding never runs a rotary embedding's
    forward): an Unreached with that reason. Undecided (a reason) where the call sits in an
    upstream method the plugin's own subclasses of its class never run (see taken_out)."""
    if site.receiver == "super()":
        return False
    if site.narrowed and not {ref.path for ref in judge.plugin_mro(dep.plugin_class)} & set(site.narrowed):
        return False  # the caller left unless the receiver was one of those classes
    if site.typed and site.typed not in {ref.path for ref in judge.plugin_mro(dep.plugin_class)}:
        return Unreached(f"its receiver is declared to hold a {site.typed}, which {dep.plugin_class} does not derive from")
    enclosing = enclosing_method(judge, site)
    slot = displacing_slot(judge, *enclosing) if enclosing is not None else None
    if slot is not None:
        if slot_surely_set(judge, slot):
            return False
        return (f"{enclosing[0].path}.{enclosing[1]} runs only where the plugin leaves {slot} to upstream "
                f"(it names its own under conditions not decided here)")
    if site.receiver not in ("self", "cls") or enclosing is None:
        sibling = _failing_elsewhere(judge, dep, base, site) if base is not None and site.receiver != "super()" else None
        if sibling:
            return f"upstream's own {sibling} fails that call too"
        return (taken_out(judge, dep, *enclosing, depth) if enclosing is not None and depth < 3 else None) or True
    caller, method = enclosing
    mro = judge.plugin_mro(dep.plugin_class)
    if caller not in mro:
        return False
    if any(_defines(judge, cls, method) for cls in mro[: mro.index(caller)]):
        return False
    return depth >= 3 or _runs(judge, dep, caller, method, depth)


def taken_out(judge: JudgeContext, dep: Dependency, caller: Ref, method: str, depth: int) -> str | None:
    """Why a call in upstream's `caller.method` through another object than self is undecided
    when the plugin has taken that method out of the path of its own subclasses of `caller`:
    each redefines it (without super()), or calls it nowhere it can run (vllm 0.18's
    `DefaultMoERunner.forward_impl_chunked`, called only from `forward_impl`, which vllm-ascend's
    `AscendMoERunner` overrides, holds the `quant_method.apply(…)` a fused-MoE override meets).
    Those are the instances the plugin builds; whether an upstream-built one ever holds the
    plugin's object is not decided here. None when the plugin derives no class from `caller`, or
    the method may run on one of them."""
    own = judge.memo.derived.get(caller)
    if own is None:
        own = judge.memo.derived[caller] = [path for path in judge.scan.classes if caller in judge.plugin_mro(path)]
    for path in own:
        if _keeps_from_running(judge, path, caller, method):  # redefined, not handed back through super()
            continue
        if _runs(judge, replace(dep, plugin_class=path), caller, method, depth + 1) is not False:
            return None
    if not own:
        return None
    return (f"{caller.path}.{method} never runs on the plugin's own {', '.join(own[:3])}{' …' if len(own) > 3 else ''}; "
            f"whether an upstream-built {caller.qualname} holds the plugin's object there is not decided")


def _failing_elsewhere(judge: JudgeContext, dep: Dependency, base: Ref, site: CallSite) -> str | None:
    """`Class.method(params)` of an upstream class deriving from the class of method `base`,
    outside the plugin class's MRO, that redeclares it abstract with parameters the call at
    `site` cannot bind either; None when there is none."""
    owner, _, method = base.qualname.rpartition(".")
    owner_ref, mine = Ref("class", base.module, owner), set(judge.plugin_mro(dep.plugin_class))
    for module in judge.index.modules_defining(method):  # far fewer than the base's subclasses
        table = judge.index.table(module)
        for qualname, info in table.classes.items() if table is not None else ():
            cls = Ref("class", module, qualname)
            if method not in info.members or cls == owner_ref or cls in mine or owner_ref not in judge.index.mro(cls):
                continue
            ref = Ref("function", module, f"{qualname}.{method}")
            found = judge.index.function_info(ref)
            # an abstract redeclaration is the interface of that family (FusedMoEMethodBase's
            # `@abstractmethod create_weights(self, layer, num_experts, …)`); one concrete class
            # that refuses a call is as likely upstream's own latent bug
            if found is None or "abstractmethod" not in {d.rsplit(".", 1)[-1] for d in found.decorators}:
                continue
            problem = bind_problem(found.params, site.shape, site.bound)
            if problem is not None and problem[0]:
                return f"{ref.path}{signature_text(found.params)}"
    return None


def _runs(judge: JudgeContext, dep: Dependency, caller: Ref, method: str, depth: int) -> bool | None:
    """Whether the inherited upstream method `caller.method` may run on the plugin class's
    object: True when the plugin names it in a string or reads it on something that may be
    that object (_plugin_reads), when upstream calls it in ways a scan cannot see
    (no call found), or when a placed call of it may land there; False when every call
    found is one that cannot (vllm 0.23 GPUModelRunner._init_minimal_kv_cache_for_profiling,
    called from profile_cudagraph_memory, which only gpu_worker.Worker calls); None when
    only calls that could not be placed might (vllm 0.30 DeepseekV4Attention's
    `_prepare_and_attn`, reached on a plugin layer that replaces `forward` only through the
    CPU custom op's `layer._prepare_and_attn_fn(…)` on a layer looked up by name), or when
    no call is found but its name is a string in the release's code (dispatched by name)."""
    if method in judge.scan.name_strings or (method in judge.scan.attribute_uses and _plugin_reads(judge, dep.plugin_class, method) is not None):
        return True
    sites = call_sites(judge.index, Ref("function", caller.module, f"{caller.qualname}.{method}"))
    if not sites.calls and not sites.unsure:
        # called by name (vllm 0.11's V0 executors: `collective_rpc("start_worker_execution_loop")`)
        # on objects no scan places, or implicitly (nn.Module runs forward)
        return None if named_in_a_string(judge.index, method) else True
    reached = [_reaches_override(judge, dep, site, depth + 1) for site in sites.calls]
    if True in reached:
        return True
    return None if sites.unsure or any(r is None or isinstance(r, str) for r in reached) else False


def displacing_slot(judge: JudgeContext, cls: Ref, method: str) -> str | None:
    """The settings slot (`worker_cls`, `scheduler_cls`: NamedClasses.attributes, which
    upstream builds its object from by name) through which the plugin keeps the upstream
    method `cls.method` from running, or None: `cls` derives from the slot's base, the
    plugin names classes for the slot, and each of them either does not derive from `cls`
    (vllm/v1/worker/gpu_worker.py Worker, when vllm-ascend's platform names its NPUWorker,
    a WorkerBase) or redefines `method` ahead of it without calling the one it replaces
    through super() (vllm-rbln's RBLNScheduler and RBLNOptimumScheduler replace
    Scheduler.schedule, so the `allocate_slots(…, full_sequence_must_fit=…)` call in vllm
    0.22's schedule() never lands on their KV cache managers). Whether the plugin sets the
    slot on every path is slot_surely_set's question."""
    key = (cls, method)
    if key not in judge.memo.displaced:
        judge.memo.displaced[key] = None
        mro = judge.index.mro(cls) if cls.kind == "class" and cls.module else []
        for slot_name, slot in profile().named_classes.attributes.items():
            base = judge.index.resolve(slot.base) if slot.base else None
            if base is None or not base.ok or base.ref == cls or base.ref not in mro:
                continue
            named = {d.target for d in _slot_sets(judge, slot_name)}
            if named and all(_keeps_from_running(judge, path, cls, method) for path in named):
                judge.memo.displaced[key] = slot_name
    return judge.memo.displaced[key]


def _keeps_from_running(judge: JudgeContext, path: str, cls: Ref, method: str) -> bool:
    """Whether objects of the named class `path` never run upstream's `cls.method`."""
    runs = _named_mro(judge, path)
    if runs is None:
        return False
    if cls not in runs:
        return True
    # the first class ahead of it that defines the method runs instead; a plugin class's
    # `super().method(…)` hands the call on to the next one that defines it, and so on
    for ref in runs[: runs.index(cls)]:
        if not _defines(judge, ref, method):
            continue
        own = judge.scan.classes.get(ref.qualname) if ref.module == "" else None
        if own is None or not any(r.access == "super" and r.member == method for r in own.self_refs):
            return True
    return False


def _slot_sets(judge: JudgeContext, slot_name: str) -> list[Dependency]:
    return [d for d in judge.scan.dependencies if d.kind == "named_class" and d.how == "attribute" and d.member == slot_name and d.target]


def slot_surely_set(judge: JudgeContext, slot_name: str) -> bool:
    """Whether the plugin names a class for the settings slot on every path: a set under no
    condition, or sets whose conditions together always hold on this release (`if flag: A
    else: B`). A test of the slot itself (`if parallel_config.worker_cls == "auto":`, the
    plugin filling what the user left unset) is no condition of the plugin's. False where
    upstream's default class may stay (vllm-ascend names its schedulers only `if
    ascend_config.SLO_limits_for_dynamic_batch != -1` and the like) or where the conditions
    cannot be read."""
    conds = [tuple(g.cond for g in d.guards if f".{slot_name}" not in g.text) for d in _slot_sets(judge, slot_name)]
    return bool(conds) and (not all(conds) or judge.evaluate(AnyOf(tuple(AllOf(c) for c in conds))) is True)


def _defines(judge: JudgeContext, ref: Ref, name: str) -> bool:
    """Whether class `ref` (the plugin's: module "", or upstream's) defines `name` in its body."""
    if ref.module == "":
        own = judge.scan.classes.get(ref.qualname)
        return own is not None and (name in own.methods or name in own.names)
    info = judge.index.class_info(ref) if ref.kind == "class" else None
    return info is not None and name in info.members


def _named_mro(judge: JudgeContext, path: str) -> list[Ref] | None:
    """The MRO of a class the plugin names (its own or upstream's), None when it does not resolve."""
    if path in judge.scan.classes:
        return judge.plugin_mro(path)
    found = judge.index.resolve(path) if is_upstream(path) else None
    return judge.index.mro(found.ref) if found is not None and found.ok and found.ref.kind == "class" else None


def module_at(judge: JudgeContext, relpath: str) -> str | None:
    """The release module whose file is `relpath` (a CallSite's path), or None."""
    return next((name for name, (path, _) in judge.index.files.items() if path == relpath), None)


def enclosing_function(judge: JudgeContext, site: CallSite) -> Ref | None:
    """The upstream module function or method (Ref kind "function") whose body holds the call
    at `site` (the outermost one: a function nested in it runs only when it does); None at
    module or class level."""
    module = module_at(judge, site.path)
    tree = judge.index.tree(module) if module else None
    body, qualname = tree.body if tree else [], ""
    while True:
        node = next((n for n in body if isinstance(n, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                     and n.lineno <= site.line <= (n.end_lineno or n.lineno)), None)
        if node is None:
            return None
        qualname = f"{qualname}.{node.name}" if qualname else node.name
        if not isinstance(node, ast.ClassDef):
            return Ref("function", module, qualname)
        body = node.body


def enclosing_method(judge: JudgeContext, site: CallSite) -> tuple[Ref, str] | None:
    """(the upstream class, the method name) whose body holds the call at `site`, or None."""
    module = module_at(judge, site.path)
    tree = judge.index.tree(module) if module else None
    found = None

    def visit(body: list[ast.stmt], qualname: str) -> None:
        nonlocal found
        for node in body:
            if not (node.lineno <= site.line <= (node.end_lineno or node.lineno)):
                continue
            if isinstance(node, ast.ClassDef):
                visit(node.body, f"{qualname}.{node.name}" if qualname else node.name)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and qualname:
                found = (Ref("class", module, qualname), node.name)

    visit(tree.body if tree else [], "")
    return found


def _dropped_override(judge: JudgeContext, dep: Dependency, target: str) -> Finding | None:
    """A subclass method no upstream base defines: the plugin's own, unless the base it was
    written against defined it (then upstream stopped calling it). With no baseline at all (not
    on the plugin's own base release either: what that lacks, the plugin never had), a method
    that calls `super().<its own name>`, which no class after it defines, was written over a base
    that defined it, by its own word; where neither the release's code nor the plugin calls it
    (a call would fail in the super() read, its own finding), upstream stopped calling it: judged
    as an override of a platform method with no baseline is (not_on_base)."""
    before = judge.baseline.judge(dep) if judge.baseline is not None else None
    if (judge.baseline is None and not judge.on_baseline and (line := _extends_itself(judge, dep)) is not None
            and not judge.named_in_release_code(dep.member) and _plugin_reads(judge, dep.plugin_class, dep.member, defined_in=dep.name) is None):
        detail = (f"{dep.name}.{dep.member} calls super().{dep.member} ({dep.file}:{line}), so the base it was written over "
                  f"defined it; {judge.index.source.label} does not, so upstream no longer calls the override (and the "
                  f"super() call would raise AttributeError); no baseline release says when it went (pass --baseline)")
        return Finding(**judge.base(dep, target), status=Status.not_on_base, breaking=True, detail=detail, risk=risk_of(dep, Status.not_on_base))
    if before is None or before.status not in (Status.ok, Status.signature_changed, Status.inherited):
        return None
    detail = (f"{dep.member} was defined on {before.defined_in} in {judge.baseline.index.source.label} (the version the plugin declares); "
              f"{judge.index.source.label} no longer defines it, so upstream no longer calls the override")
    used_at = _plugin_reads(judge, dep.plugin_class, dep.member, defined_in=dep.name)
    if used_at is not None:
        # vllm-rbln's attention backend: vllm 0.30 dropped get_kv_cache_shape from the base,
        # the plugin's own model runner still calls it; what upstream's calls did is not known
        return Finding(**judge.base(dep, target), status=Status.unknown, breaking=False, risk=risk_of(dep, Status.unknown),
                       detail=f"{detail}; the plugin calls it itself ({used_at}), so it is not dead: whether losing upstream's calls matters is not known statically")
    return judge.successor_for(Finding(**judge.base(dep, target), status=Status.not_on_base, breaking=True, detail=detail,
                                      risk=risk_of(dep, Status.not_on_base)), before.target)


def _extends_itself(judge: JudgeContext, dep: Dependency) -> int | None:
    """The line of a `super().<m>` read inside the plugin method `dep.name.<m>` itself where no
    plugin class after `dep.name` in the judged class's MRO defines m (the read would reach it),
    or None."""
    cls = judge.scan.classes.get(dep.name or "")
    mro = [r.qualname for r in judge.plugin_mro(dep.plugin_class) if r.module == ""] if cls else []
    after = mro[mro.index(dep.name) + 1:] if dep.name in mro else []
    if cls is None or any(dep.member in judge.scan.classes[c].methods for c in after if c in judge.scan.classes):
        return None
    method = f"{dep.name}.{dep.member}"
    return next((r.line for r in cls.self_refs if r.access == "super" and r.member == dep.member and r.function == method), None)


def _plugin_reads(judge: JudgeContext, plugin_class: str, member: str, defined_in: str | None = None) -> str | None:
    """The first plugin site ("file:line") that reads `member` on something that may be a
    `plugin_class` instance: through self of a class related to it, or through any other
    receiver except an upstream instance of an unrelated class (the scan's field read:
    vllm-rbln's `self.coordinator.allocate_new_computed_blocks(…)` on a KVCacheCoordinator
    is no call of its KV cache manager's method of that name), or one an isinstance check
    around the read says is of classes no such instance is (vllm-ascend's model runner calls
    `self.drafter.propose(…)` only under `isinstance(self.drafter, AscendNgramProposer)` and
    the like, never on its Eagle-family drafters). A `super().member` read in a plugin class
    reaches only the classes after it in the MRO: none reaches the method plugin class
    `defined_in` writes unless that class comes after the reading one. None when there is none."""
    mine = {ref for ref in judge.plugin_mro(plugin_class) if ref.kind == "class"}  # not object, ABC, nn.Module
    fields = {f"{d.file}:{d.line}": d.target for d in judge.scan.dependencies
              if d.kind == "field" and d.target and d.target.endswith(f".{member}")}
    for read in reads_of(judge.scan, member):
        if read.through_super and defined_in is not None and read.through_self_of is not None \
                and Ref("class", "", defined_in) not in judge.plugin_mro(read.through_self_of)[1:]:
            continue
        if read.through_self_of is not None:
            if Ref("class", "", read.through_self_of) in mine or Ref("class", "", plugin_class) in judge.plugin_mro(read.through_self_of):
                return read.where
            continue
        held = fields.get(read.where)
        found = judge.index.resolve(held.rsplit(".", 1)[0]) if held else None
        if found is not None and found.ok and found.ref.kind == "class" and not (mine & set(judge.index.mro(found.ref))):
            continue  # an upstream instance of a class the plugin class does not derive from
        if read.self_attribute is not None and _holds_unrelated(judge, *read.self_attribute, mine):
            continue  # `self.coordinator.…` where the plugin sets self.coordinator = RBLNKVCacheCoordinator(…)
        if read.narrowed and _excluded_by(judge, read.narrowed, plugin_class):
            continue
        return read.where
    return None


def _excluded_by(judge: JudgeContext, classes: tuple[str, ...], plugin_class: str) -> bool:
    """Whether an `isinstance(x, classes)` check that held rules out x being an instance of
    `plugin_class` or of a plugin class deriving from it: no class of their MROs is one of
    `classes`. False when one of `classes` cannot be placed (a name the scan does not know)."""
    refs = set()
    for path in classes:
        if path in judge.scan.classes:
            refs.add(Ref("class", "", path))
            continue
        found = judge.index.resolve(path) if is_upstream(path) else None
        if found is None or not found.ok or found.ref.kind != "class":
            return False
        refs.add(found.ref)
    instances = set(judge.plugin_mro(plugin_class))
    for sub in _descendants(judge, plugin_class):
        instances |= set(judge.plugin_mro(sub))
    return not (refs & instances)


def _descendants(judge: JudgeContext, plugin_class: str) -> list[str]:
    """The plugin classes deriving from `plugin_class`, at any depth (paths)."""
    if judge.memo.subclasses is None:
        judge.memo.subclasses = {}
        for cls in judge.scan.classes.values():
            for base in cls.bases:
                judge.memo.subclasses.setdefault(base, []).append(cls)
    queue, seen = [c.path for c in judge.memo.subclasses.get(plugin_class, [])], []
    while queue:
        path = queue.pop()
        if path not in seen:
            seen.append(path)
            queue.extend(c.path for c in judge.memo.subclasses.get(path, []))
    return seen


def _holds_unrelated(judge: JudgeContext, in_class: str, attr: str, mine: set[Ref]) -> bool:
    """Whether every value the plugin gives `self.<attr>` in `in_class` and its plugin bases is
    a constructed class none of whose instances is in `mine` (the MRO of the class whose
    method is asked about). False when any value is something else, or the class never sets
    it (upstream's base may)."""
    paths: set[str] = set()
    for ref in judge.plugin_mro(in_class) if in_class in judge.scan.classes else []:
        cls = judge.scan.classes.get(ref.qualname) if ref.module == "" else None
        paths |= cls.attribute_values.get(attr, set()) if cls is not None else set()
    if not paths or "?" in paths:
        return False
    for path in paths:
        mro = set(_named_mro(judge, path) or [])
        if not mro or mro & mine:
            return False
    return True


def _init_override(judge: JudgeContext, dep: Dependency, target: str) -> Finding | None:
    """A subclass `__init__` against the base's (written or synthesised). Reported, never
    breaking: it fails only where upstream constructs the class (a factory returning it, a
    REPLACE hook), which is not traced; the plugin constructing it itself is fine."""
    skipped = skipped_state(judge, dep, target)
    if skipped is not None and skipped.breaking:
        return skipped
    mro = judge.upstream_mro(dep.plugin_class)
    first = next((c for c in mro if c.kind == "class"), None)
    params, bound, what = judge.init_params(first) if first else (None, False, "")
    if params is None:
        return skipped
    # a written __init__ lists self; a synthesised one does not, so self goes from the override
    override = dep.params if bound else (dep.params or ())[1:]
    problem = signature_incompatibility(params, override or (), positional_only=1 if bound else 0)
    if problem is None:
        return skipped
    detail = (f"base {what}{signature_text(params)} vs {dep.name}.__init__{signature_text(dep.params or ())}: {problem[1]}; "
              "this breaks where upstream constructs the class (e.g. a platform factory returns it), not where the plugin does")
    return Finding(**judge.base(dep, target), status=Status.signature_changed, breaking=False, defined_in=what, detail=detail,
                   risk=risk_of(dep, Status.signature_changed) // 2)


def _not_on_base(judge: JudgeContext, dep: Dependency, mro: list[Ref], first: Ref, target: str) -> Finding:
    # the upstream bases the class reaches (`CudaDeviceMixin, SRTPlatform` for a plugin mixin over
    # CudaDeviceMixin beside SRTPlatform): none of them, nor their bases, defines the member
    heads = [c.path for c in mro if c.kind == "class" and not any(d != c and c in judge.index.mro(d)[1:] for d in mro if d.kind == "class")]
    bases = f"{', '.join(heads)} or their bases" if len(heads) > 1 else f"{first.path} or its bases"
    shim = legacy_shim(judge, mro, dep.member)
    if shim is not None:
        caller, where, calls = shim
        refused = _shim_refuses(dep, calls, where.rsplit(":", 1)[0])
        if refused is not None:
            return Finding(**judge.base(dep, target), status=Status.signature_changed, breaking=True, successor=caller,
                           successor_reason=f"the legacy shim that still calls {dep.member} ({where})",
                           detail=(f"{dep.member} is no longer declared on the platform bases; {caller} ({where}) still calls it through a legacy shim, "
                                   f"but {dep.name}.{dep.member}{signature_text(dep.params or ())} cannot take that call: {refused}, a TypeError on that path"),
                           risk=risk_of(dep, Status.signature_changed))
        detail = f"{dep.member} is no longer declared on the platform bases; {caller} ({where}) still calls it through a legacy shim, with a deprecation warning"
        return Finding(**judge.base(dep, target), status=Status.deprecated, successor=caller, successor_reason=f"the legacy shim that still calls {dep.member} ({where})",
                       detail=detail, risk=risk_of(dep, Status.deprecated))
    successor = find_successor(target, judge.index, judge.baseline.index if judge.baseline is not None else None)
    # evidence that upstream calls (or called) the method: a base member close in name or
    # naming it, or its base on the release the plugin was written against
    renamed = successor is not None and successor[0].rsplit(".", 1)[0] == first.path
    before = judge.baseline.judge(dep) if judge.baseline is not None else None
    was_called = before is not None and before.status not in (Status.not_on_base, Status.extension, Status.unknown)
    used_at = judge.scan.attribute_uses.get(dep.member)
    owners = {ref.path for ref in judge.plugin_mro(dep.plugin_class)} if dep.plugin_class else set()
    entry = next((ep for ep in judge.scan.entry_points if ep.value.replace(":", ".").rpartition(".") in ((o, ".", dep.member) for o in owners)), None)
    if not renamed and not was_called and entry is not None:
        # `pkg.platform:DevPlatform.activate`: the engine loads the entry point and calls it (ep.load()())
        return Finding(**judge.base(dep, target), status=Status.extension, breaking=False,
                       detail=f"{dep.name}.{dep.member} is the plugin's own method, not on {bases}: the engine calls it as the entry point {entry.group}:{entry.name} ({entry.file})")
    if not renamed and not was_called and used_at is not None:
        return Finding(**judge.base(dep, target), status=Status.extension, breaking=False,
                       detail=f"{dep.name}.{dep.member} is the plugin's own method, not on {bases}: the plugin calls it itself ({used_at})")
    through_platform = _called_through_platform(judge, dep.member) if not was_called and dep.kind == "override" else None
    if through_platform is not None:
        # vllm 0.30.0 nixl base_worker.py: current_platform.discover_numa_topology(), which only
        # CpuPlatform of upstream's platforms defines: a platform that has it is called
        return Finding(**judge.base(dep, target), status=Status.extension, breaking=False,
                       detail=f"{dep.member} is not defined on {bases}, but upstream calls it on the current platform ({through_platform})")
    delegate = _delegate_on_base(judge, dep, first) if not was_called and not renamed else None
    if delegate is not None:
        # a dual-support platform: the newer API's method hands over to the older one, which this
        # release calls -- the behaviour is there, the method waits for the release that calls it
        return Finding(**judge.base(dep, target), status=Status.dead_override, breaking=False, risk=risk_of(dep, Status.dead_override),
                       detail=(f"{dep.member} is not defined on {bases}, so upstream does not call it here; it hands over to "
                               f"{dep.name}.{delegate}, which overrides {first.path}.{delegate} and is what this release calls"))
    baseline = judge.index.source.label if judge.on_baseline else judge.baseline.index.source.label if judge.baseline is not None else None
    if not was_called and baseline is not None:
        # what the baseline did not call either, this release does not lose (docs/static-check.md, "breaking")
        return Finding(**judge.base(dep, target), status=Status.dead_override, breaking=False,
                       successor=successor and successor[0], successor_reason=successor and successor[1], risk=risk_of(dep, Status.dead_override),
                       detail=(f"{dep.member} is not defined on {bases} in {baseline}, the release the plugin was written "
                               "against, either: upstream did not call it there, so nothing is lost now; dead code to remove"
                               + (f" (or port to {successor[0]})" if successor else "")))
    if was_called:
        detail = (f"{dep.member} was defined on {before.defined_in} in {judge.baseline.index.source.label} (the version the plugin declares); "
                  f"{judge.index.source.label} no longer defines it, so upstream no longer calls the override")
    else:
        detail = f"{dep.member} is not defined on {bases}: upstream never calls it"
    return Finding(**judge.base(dep, target), status=Status.not_on_base, breaking=True, successor=successor and successor[0], successor_reason=successor and successor[1],
                   detail=detail, risk=risk_of(dep, Status.not_on_base))


def _delegate_on_base(judge: JudgeContext, dep: Dependency, first: Ref) -> str | None:
    """A method the override calls on its own instance (`self.get_mha_kv_pool_cls()`) that the
    plugin class also overrides and the upstream base `first` defines: what carries the
    override's behaviour on this release. None when there is none."""
    cls = judge.scan.classes.get(dep.plugin_class or "")
    if cls is None:
        return None
    own = {name for r in judge.plugin_mro(cls.path) if r.module == "" and r.qualname in judge.scan.classes for name in judge.scan.classes[r.qualname].methods}
    for name in sorted(self_calls_in(judge.scan, cls, dep.member) & own - {dep.member}):
        if judge.index.member(first, name).outcome is Outcome.resolved:
            return name
    return None


def _called_through_platform(judge: JudgeContext, name: str) -> str | None:
    """The first release site ("relpath:line") naming `<platform instance>.name`, as code that
    calls a method some platforms define reaches it (harness.knowledge.judge.callsites
    PLATFORM_INSTANCE), or None."""
    pattern = re.compile(rb"\b" + PLATFORM_INSTANCE.encode() + rb"\s*\.\s*" + re.escape(name.encode()) + rb"\b")
    for module, text in judge.index.sources().items():
        found = pattern.search(text) if name.encode() in text else None
        if found is not None:
            line = text.count(b"\n", 0, found.start()) + 1
            return f"{judge.index.files[module][0]}:{line}"
    return None


def _shim_refuses(dep: Dependency, calls: list[tuple[CallShape, int]], path: str) -> str | None:
    """Why the override cannot take any of the calls a legacy shim makes of it (in the file
    `path`: "the shim's call (path:line): why"),
    or None. The shim calls the bound method it looked up (`legacy = getattr(self, hook,
    None)` ... `return legacy()`, 0.5.23 platforms/interface.py:150-162), so the override is
    bound to those calls as to any other: where none binds, the shim's path raises TypeError,
    as a call of the method declared on the base did on 0.5.17 (signature_changed, breaking).
    No call found (the value only tested or handed on), an override whose body only raises,
    or a call that binds: not decided against it."""
    if dep.params is None or dep.raises_only or not calls:
        return None
    refused = [(line, problem) for shape, line in calls for problem in [bind_problem(dep.params, shape, bool(dep.bound))]]
    if any(problem is None or not problem[0] for _, problem in refused):
        return None
    line, (_, why) = refused[0]
    return f"the shim's call ({path}:{line}): {why}"


def _looked_up_calls(method: ast.AST, lookup: ast.Call) -> list[tuple[CallShape, int]]:
    """The calls `method` makes of what `lookup` (a `getattr(self, …)`) returns: directly
    (`getattr(self, hook)()`) or through a name assigned it (`legacy = getattr(self, hook,
    None)` ... `legacy()`), with their lines."""
    names = {
        target.id
        for stmt in walk(method) if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.NamedExpr)) and stmt.value is lookup
        for target in (stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]) if isinstance(target, ast.Name)
    }
    return [(call_shape(call), call.lineno) for call in walk(method)
            if isinstance(call, ast.Call) and (call.func is lookup or (isinstance(call.func, ast.Name) and call.func.id in names))]


def legacy_shim(judge: JudgeContext, mro: list[Ref], name: str) -> tuple[str, str, list[tuple[CallShape, int]]] | None:
    """A method of a base that still calls `name` on the instance by name: `getattr(self,
    "name")` / `hasattr(self, "name")`, directly or through a table of legacy names (as
    0.5.23's SRTPlatform.get_kv_pool_cls does with _LEGACY_KV_POOL_HOOKS): (the method,
    file:line of the lookup, the calls it makes of the looked-up value: _looked_up_calls)."""
    for cls in mro:
        if cls.kind != "class":
            continue
        tree = _ast(judge, cls.module)
        info = judge.index.class_info(cls)
        if tree is None or info is None:
            continue
        tables = {
            target.id
            for stmt in tree.body if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None
            for target in (stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]) if isinstance(target, ast.Name)
            if any(isinstance(n, ast.Constant) and n.value == name for n in walk(stmt.value))
        }
        class_node = judge.index.class_node(cls)
        for method in (n for n in (class_node.body if class_node else []) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
            names_used = {n.id for n in walk(method) if isinstance(n, ast.Name)}
            lookups = []
            for call in (n for n in walk(method) if isinstance(n, ast.Call) and dotted(n.func) in ("getattr", "hasattr") and len(n.args) >= 2):
                on_self = isinstance(call.args[0], ast.Name) and call.args[0].id in ("self", "cls")
                key = call.args[1]
                direct = isinstance(key, ast.Constant) and key.value == name
                if on_self and (direct or (not isinstance(key, ast.Constant) and tables & names_used)):
                    lookups.append(call)
            if lookups:
                # `hasattr` only tests; each `getattr` of the name may be called
                calls = [found for call in lookups if dotted(call.func) == "getattr" for found in _looked_up_calls(method, call)]
                table = judge.index.table(cls.module)
                return f"{cls.path}.{method.name}", f"{table.path}:{lookups[0].lineno}", calls
    return None


def hands_itself_over(judge: JudgeContext, cls: Ref) -> str | None:
    """Where a method of this upstream class passes its instance to other code (a call with
    `self` as an argument, as a layer calls quant_method.create_weights(self, …)), which may
    register members on it: "Class.method (line n)", or None."""
    if cls.path not in judge.memo.handed:
        judge.memo.handed[cls.path] = None
        info = judge.index.class_info(cls) if cls.kind == "class" else None
        tree = _ast(judge, cls.module) if info is not None else None
        node = judge.index.class_node(cls) if tree is not None else None
        for method in (m for m in (node.body if node else []) if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))):
            receiver = (method.args.posonlyargs + method.args.args)[:1]
            if not receiver:
                continue
            for call in (c for c in walk(method) if isinstance(c, ast.Call)):
                values = [*call.args, *(kw.value for kw in call.keywords)]
                if any(isinstance(v, ast.Name) and v.id == receiver[0].arg for v in values):
                    judge.memo.handed[cls.path] = f"{cls.qualname}.{method.name} (line {call.lineno})"
                    break
            if judge.memo.handed[cls.path]:
                break
    return judge.memo.handed[cls.path]


def _ast(judge: JudgeContext, module: str) -> ast.Module | None:
    try:
        return judge.index.tree(module)
    except OSError:  # a file gone since the manifest was read has nothing to say
        return None
