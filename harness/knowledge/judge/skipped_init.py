"""State an `__init__` override skips: a plugin class whose `__init__` does not run its upstream
base's (no `super().__init__(…)`; `nn.Module.__init__(self)` or nothing instead, as vllm-ascend's
model runners rebuild GPUModelRunner's state by hand) has none of the attributes that `__init__`
sets. When the release adds one that a method the class inherits reads (`self.x` in upstream's
body), that method raises AttributeError on the plugin's instances. Only what is new against the
baseline is told: what the baseline's inherited methods read, the plugin set up for itself (it
ran there)."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

from harness.knowledge.judge.context import JudgeContext
from harness.knowledge.model import Dependency, Finding, Outcome, PluginClass, Ref, Status, dotted, risk_of, walk
from harness.knowledge.scan import bound_once, dataclass_fields

_SELF = "self"


def skipped_state(judge: JudgeContext, dep: Dependency, target: str) -> Finding | None:
    """For the `__init__` override `dep` of a plugin class that does not call its upstream base's
    `__init__`: attributes that the skipped upstream `__init__`s set (and nothing else binds: no
    other upstream method, class attribute, outside base or plugin class), read through `self` by
    upstream methods the class inherits, and new since the baseline. `missing` (breaking) when the
    plugin's own code calls one of those methods on self; `unknown` otherwise (it fails where
    upstream runs the method on the plugin's instance). None when nothing is skipped, nothing is
    new, or there is no baseline to tell new from what the plugin already handles."""
    if judge.baseline is None or judge.on_baseline:
        return None
    # the class that writes the `__init__` (dep.name): the judged class itself or a plugin mixin
    # before the upstream bases in its MRO (`class DevRMSNorm(DevNormState, RMSNorm)`); only the
    # first `__init__` of the MRO runs
    cls = judge.scan.classes.get(dep.name or dep.plugin_class or "")
    init = _init_of(judge, cls) if cls is not None else None
    if init is None or _runs_init(judge, dep.plugin_class) != cls.path:
        return None
    skipped = _skipped(judge, dep.plugin_class, init, cls.path)
    if not skipped:
        return None
    now = _unset_reads(judge, dep.plugin_class, skipped)
    before_skipped = _skipped(judge.baseline, dep.plugin_class, init, cls.path)
    before = _unset_reads(judge.baseline, dep.plugin_class, before_skipped) if before_skipped is not None else {}
    new = {attr: reads for attr, reads in now.items() if attr not in before}
    if not new:
        return None
    called = {ref.member for name in _plugin_classes(judge, dep.plugin_class) for ref in judge.scan.classes[name].self_refs
              if ref.call is not None and ref.access in ("instance", "super")} | _qualified_self_calls(judge, dep.plugin_class)
    called |= _instance_calls(judge, dep.plugin_class)
    certain = sorted({method for reads in new.values() for method, _ in reads if method.rpartition(".")[2] in called})
    shown = "; ".join(f"self.{attr} (read in {', '.join(f'{m} at {where}' for m, where in reads[:2])})" for attr, reads in sorted(new.items())[:4])
    more = f" and {len(new) - 4} more" if len(new) > 4 else ""
    why = (f"{dep.name}.__init__ does not run {', '.join(ref.path + '.__init__' for ref in skipped)}, which on "
           f"{judge.index.source.label} sets state that methods the class inherits read, new since {judge.baseline.index.source.label}: {shown}{more}")
    if certain:
        detail = f"{why}; the plugin calls {', '.join(certain)} on its instance: AttributeError when it runs"
        return Finding(**judge.base(dep, target), status=Status.missing, breaking=True, detail=detail, risk=risk_of(dep, Status.missing))
    detail = f"{why}; AttributeError where upstream runs one of those methods on the plugin's instance (not traced)"
    return Finding(**judge.base(dep, target), status=Status.unknown, breaking=False, detail=detail, risk=risk_of(dep, Status.unknown))


def _tested(method: ast.AST, attr: str) -> bool:
    """Whether the method asks first: `hasattr(self, "attr")` / `getattr(self, "attr", …)`."""
    return any(isinstance(n, ast.Call) and dotted(n.func) in ("hasattr", "getattr") and len(n.args) >= 2 and dotted(n.args[0]) == _SELF
               and isinstance(n.args[1], ast.Constant) and n.args[1].value == attr for n in walk(method))


@functools.lru_cache(maxsize=32)
def _parsed(path: str, mtime_ns: int) -> ast.Module | None:
    try:
        return ast.parse(Path(path).read_bytes())
    except (OSError, SyntaxError, ValueError):
        return None


def _plugin_class_node(path: Path, line: int) -> ast.ClassDef | None:
    """The class statement of the plugin class defined at `line` of `path`, or None."""
    try:
        tree = _parsed(str(path), path.stat().st_mtime_ns)
    except OSError:
        return None
    return next((n for n in walk(tree) if isinstance(n, ast.ClassDef) and n.lineno == line), None) if tree is not None else None


def _plugin_init(path: Path, line: int) -> ast.FunctionDef | None:
    """The `__init__` of the plugin class defined at `line` of `path`, or None."""
    node = _plugin_class_node(path, line)
    return next((m for m in node.body if isinstance(m, ast.FunctionDef) and m.name == "__init__"), None) if node else None


def _generated_init(judge: JudgeContext, cls: PluginClass) -> ast.FunctionDef | None:
    """The `__init__` @dataclass writes for the plugin class `cls` (no `__init__` of its own):
    it stores each field on self and runs `__post_init__` where the class has one (its body
    here), and no base's `__init__` (the dataclasses docs, "Post-init processing"); None for
    another class."""
    node = _plugin_class_node(judge.scan.root / cls.file, cls.line)
    fields = dataclass_fields(node) if node is not None and node.decorator_list and "__init__" not in cls.methods else None
    if fields is None:
        return None
    post = next((m for m in node.body if isinstance(m, ast.FunctionDef) and m.name == "__post_init__" and m.args.args), None)
    receiver = post.args.args[0].arg if post is not None else _SELF
    body: list[ast.stmt] = [ast.Assign(targets=[ast.Attribute(ast.Name(receiver, ast.Load()), name, ast.Store())], value=ast.Name(name, ast.Load()))
                            for name, _ in fields]
    body += post.body if post is not None else []  # (its body in place: a super().__init__() there runs the base's)
    made = ast.FunctionDef(name="__init__", args=ast.arguments(posonlyargs=[], args=[ast.arg(receiver), *(ast.arg(name) for name, _ in fields)],
                                                               kwonlyargs=[], kw_defaults=[], defaults=[]),
                           body=body or [ast.Pass()], decorator_list=[], returns=None, type_params=[])
    return ast.fix_missing_locations(ast.copy_location(made, node))


def _init_of(judge: JudgeContext, cls: PluginClass) -> ast.FunctionDef | None:
    """The `__init__` of the plugin class `cls`: its def, or the function its body binds to the
    name (`__init__ = init_dev_quant_fp8`, defined in another plugin module), or the one
    @dataclass writes (_generated_init), or None."""
    found = _plugin_init(judge.scan.root / cls.file, cls.line)
    if found is None and "__init__" not in cls.methods:
        return _generated_init(judge, cls)
    method = cls.methods.get("__init__")
    if found is None and method is not None and method.defined_at is not None:
        path = judge.scan.root / method.defined_at[0]
        try:
            tree = _parsed(str(path), path.stat().st_mtime_ns)
        except OSError:
            return None
        found = next((n for n in walk(tree) if isinstance(n, ast.FunctionDef) and n.lineno == method.defined_at[1]), None) if tree else None
    return found


def _qualified_self_calls(judge: JudgeContext, plugin_class: str) -> set[str]:
    """Methods the plugin's classes call on self through an upstream class of the MRO by name
    (`RMSNorm.forward_native(self, x)`): the inherited body runs on the plugin's instance."""
    upstream = {ref.qualname.rpartition(".")[2] for ref in judge.plugin_mro(plugin_class) if ref.module and ref.kind == "class"}
    found: set[str] = set()
    for name in _plugin_classes(judge, plugin_class):
        cls = judge.scan.classes[name]
        node = _plugin_class_node(judge.scan.root / cls.file, cls.line)
        for n in walk(node) if node is not None else ():
            if (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and (dotted(n.func.value) or "").rpartition(".")[2] in upstream
                    and n.args and dotted(n.args[0]) == _SELF):
                found.add(n.func.attr)
    return found


def _instance_calls(judge: JudgeContext, plugin_class: str) -> set[str]:
    """Methods the plugin calls on an object of `plugin_class` it makes itself, outside the
    class: `Cls(…).m(…)`, or `x.m(…)` of a local bound once to `Cls(…)` (`drafter =
    DevMedusaProposer(cfg, device); drafter.load_model(model)`); the class named by its own name."""
    name = plugin_class.rpartition(".")[2]
    found: set[str] = set()
    for module in judge.scan.modules.values():
        path = judge.scan.root / module.file
        try:
            tree = _parsed(str(path), path.stat().st_mtime_ns)
        except OSError:
            continue
        for function in walk(tree) if tree is not None else ():
            if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            made = {local for local, value in bound_once(function).items()
                    if isinstance(value, ast.Call) and (dotted(value.func) or "").rpartition(".")[2] == name}
            for n in walk(function):
                if (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                        and (isinstance(n.func.value, ast.Name) and n.func.value.id in made
                             or isinstance(n.func.value, ast.Call) and (dotted(n.func.value.func) or "").rpartition(".")[2] == name)):
                    found.add(n.func.attr)
    return found


def _runs_init(judge: JudgeContext, plugin_class: str) -> str | None:
    """The class whose `__init__` making a `plugin_class` runs: the first of its MRO, plugin or
    upstream, that defines one (a plugin mixin after an upstream base never runs its own)."""
    for ref in judge.plugin_mro(plugin_class):
        cls = judge.scan.classes.get(ref.qualname) if ref.module == "" else None
        if cls is not None and ("__init__" in cls.methods or _generated_init(judge, cls) is not None):
            return cls.path
        if ref.module and ref.kind == "class" and (info := judge.index.class_info(ref)) is not None and info.members.get("__init__") == "def":
            return ref.path
    return None


def _plugin_classes(judge: JudgeContext, plugin_class: str) -> list[str]:
    return [ref.qualname for ref in judge.plugin_mro(plugin_class) if ref.module == "" and ref.qualname in judge.scan.classes]


def _skipped(judge: JudgeContext, plugin_class: str, init: ast.FunctionDef, owner: str, depth: int = 0) -> list[Ref] | None:
    """The upstream classes of the MRO whose `__init__` the override (of the plugin class
    `owner`) leaves out: all of them when it calls no `__init__` or an outside base's
    (`nn.Module.__init__(self)`), those before the class it names (`Base.__init__(self)`), those
    up to and with the class `super(Base, self).__init__()` names (the lookup starts after it);
    none when `super().__init__` reaches an upstream class's. Where `super().__init__()` (or a
    named plugin class's `__init__`) is another plugin class's, that one's is followed (a plugin
    op base calling `CustomOp.__init__(self)` skips what lies between)."""
    mro = judge.plugin_mro(plugin_class)
    upstream = [ref for ref in mro if ref.module and ref.kind == "class"]
    plugin = {name.rpartition(".")[2]: name for name in _plugin_classes(judge, plugin_class)}
    named, after = set(), set()
    for node in walk(init):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "__init__":
            receiver = node.func.value
            if isinstance(receiver, ast.Call) and dotted(receiver.func) == "super":
                start = (dotted(receiver.args[0]) or "").rpartition(".")[2] if len(receiver.args) == 2 else ""
                if not start or start in plugin:
                    # `super().__init__(…)`, `super(Own, self)`: the next class of the MRO with an
                    # `__init__` runs; a plugin class's is followed
                    return _next_init(judge, plugin_class, mro, plugin.get(start, owner), depth)
                after.add(start)  # `super(Base, self).__init__()`: the lookup starts after Base (Python's super docs)
            else:
                named.add((dotted(receiver) or "").rpartition(".")[2])
    if named & plugin.keys():
        cls = judge.scan.classes[plugin[next(iter(named & plugin.keys()))]]
        inner = _init_of(judge, cls) if depth < 8 else None
        return _skipped(judge, plugin_class, inner, cls.path, depth + 1) if inner is not None and "__init__" in cls.methods else []
    for position, ref in enumerate(upstream):
        short = ref.qualname.rpartition(".")[2]
        if short in named or short in after:
            upstream = upstream[:position + (short in after)]
            break
    return [ref for ref in upstream if (info := judge.index.class_info(ref)) is not None and info.members.get("__init__") == "def"]


def _next_init(judge: JudgeContext, plugin_class: str, mro: list[Ref], after: str, depth: int) -> list[Ref]:
    """What `super().__init__()` in the plugin class `after` runs, on an instance of
    `plugin_class`: the next class of its MRO defining `__init__`; none skipped where that is
    upstream's (it runs the rest cooperatively), that plugin class's own `__init__` followed."""
    position = next((i for i, ref in enumerate(mro) if ref.module == "" and ref.qualname == after), None)
    for ref in mro[position + 1:] if position is not None and depth < 8 else ():
        cls = judge.scan.classes.get(ref.qualname) if ref.module == "" else None
        if cls is not None and "__init__" in cls.methods:
            inner = _init_of(judge, cls)
            return _skipped(judge, plugin_class, inner, cls.path, depth + 1) if inner is not None else []
        if ref.module and ref.kind == "class" and (info := judge.index.class_info(ref)) is not None and info.members.get("__init__") == "def":
            return []
    return []


def _self_stores(node: ast.AST) -> set[str]:
    found = {n.attr for n in walk(node) if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store) and dotted(n.value) == _SELF}
    found |= {n.args[1].value for n in walk(node) if isinstance(n, ast.Call) and dotted(n.func) == "setattr" and len(n.args) >= 2
              and dotted(n.args[0]) == _SELF and isinstance(n.args[1], ast.Constant) and isinstance(n.args[1].value, str)}
    return found


def _unset_reads(judge: JudgeContext, plugin_class: str, skipped: list[Ref]) -> dict[str, list[tuple[str, str]]]:
    """attr -> [(inherited method path, "relpath:line")] of the `self.attr` reads upstream methods
    the class inherits make, for attributes only the skipped `__init__`s set."""
    mro = judge.plugin_mro(plugin_class)
    upstream = [ref for ref in mro if ref.module and ref.kind == "class"]
    nodes = {ref: node for ref in upstream if (node := judge.index.class_node(ref)) is not None}
    state: set[str] = set()
    for ref in skipped:
        init = next((m for m in nodes[ref].body if isinstance(m, ast.FunctionDef) and m.name == "__init__"), None) if ref in nodes else None
        state |= _self_stores(init) if init is not None else set()
    # bound anywhere else: another upstream method, a class body, an outside base, the plugin
    for ref, node in nodes.items():
        for member in node.body:
            if isinstance(member, (ast.FunctionDef, ast.AsyncFunctionDef)):
                state.discard(member.name)
                if not (ref in skipped and member.name == "__init__"):
                    state -= _self_stores(member)
            elif isinstance(member, (ast.Assign, ast.AnnAssign)):
                state -= {t.id for t in walk(member) if isinstance(t, ast.Name) and isinstance(t.ctx, ast.Store)}
    for outside in (ref for ref in mro if ref.kind != "class"):  # nn.Module's own state; an unknown base may set anything
        state = {attr for attr in state if judge.index.member(outside, attr).outcome is Outcome.missing}
    for name in _plugin_classes(judge, plugin_class):
        state -= judge.scan.classes[name].names
    if not state:
        return {}
    # (an override that calls `super().m(…)` runs upstream's m on the instance all the same)
    supered = {ref.member for name in _plugin_classes(judge, plugin_class) for ref in judge.scan.classes[name].self_refs
               if ref.access == "super" and ref.call is not None}
    own_methods = {m for name in _plugin_classes(judge, plugin_class) for m in judge.scan.classes[name].methods} - supered
    reads: dict[str, list[tuple[str, str]]] = {}
    seen: set[str] = set()
    for ref in upstream:
        node = nodes.get(ref)
        for member in node.body if node is not None else ():
            if not isinstance(member, (ast.FunctionDef, ast.AsyncFunctionDef)) or member.name in seen:
                continue
            seen.add(member.name)  # the first upstream definer is what the class inherits
            if member.name in own_methods or member.name == "__init__":
                continue
            for n in walk(member):
                if (isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load) and n.attr in state and dotted(n.value) == _SELF
                        and not _tested(member, n.attr)):
                    reads.setdefault(n.attr, []).append((f"{ref.path}.{member.name}", f"{judge.index.files[ref.module][0]}:{n.lineno}"))
    return reads
