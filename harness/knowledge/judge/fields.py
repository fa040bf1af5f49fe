"""Fields of upstream objects the plugin reads (`forward_batch.token_to_kv_pool`,
`server_args.cuda_graph_bs`): issue 18, kind 12.

The scan records a read of `v.x` only when the class of `v` is known with evidence: the plugin's
own annotation (`def f(fb: ForwardBatch)`, `x: ServerArgs = …`), the same-named parameter of
the upstream function a hook or an override stands in for (its annotation says what upstream
passes), or `server_args` (SGLang's name for its ServerArgs everywhere). A read is a dependency
`field` on `<Class>.<x>`; `getattr(v, "x", default)` is none, `hasattr(v, "x")` guards it.

A field is there when the class or a base declares it as Python finds it on an instance: a
class-body annotation or assignment (dataclass / msgspec / pydantic fields, `__slots__`), a
method or property, `self.x = …` / `setattr(self, "x", …)` in any method, or a field of the
namespace classes a computed class is assembled from (0.5.23 ServerArgs). It is undecided when
a class defines `__getattr__`/`__getattribute__`, sets attributes under computed names, or has
a base outside the index (see Judge.lookup, which answers the same question for `self.x`).
"""

from __future__ import annotations

import re
import weakref

from harness.knowledge.judge.context import JudgeContext
from harness.knowledge.judge.resolution import assembled_field
from harness.knowledge.model import (
    Dependency,
    Finding,
    Outcome,
    Ref,
    Resolution,
    Status,
    risk_of,
)
from harness.knowledge.scan import WRITE, registered_by_name, set_on_others
from harness.knowledge.upstream import SymbolIndex


def field_resolution(judge: JudgeContext, class_path: str, attr: str) -> Resolution | None:
    """`attr` on an instance of the upstream class `class_path` (see the module doc), or None
    when `class_path` is not an upstream class on this release (its import says so)."""
    index = judge.index
    owner = index.resolve(class_path)
    if not owner.ok or owner.ref.kind != "class":
        return None
    mro = index.mro(owner.ref)
    found = judge.lookup(mro, attr, instance=True)
    if found.ok:
        return found
    # a class whose fields are computed at import, from namespace classes (0.5.23 ServerArgs)
    plain = index.resolve(f"{owner.ref.path}.{attr}")
    assembled = assembled_field(index, plain)
    if assembled.ok:
        return assembled
    if found.outcome is not Outcome.undecided:
        return _uncertain(index, owner.ref, attr, found)
    # Judge.lookup stops at a class body it cannot list; what the methods assign on self still counts
    dynamic = []
    for cls in (c for c in mro if c.kind == "class"):
        attributes = index.instance_attributes(cls)
        if attr in attributes.names:
            return Resolution(attr, Ref("value", cls.module, f"{cls.qualname}.{attr}"), owner=cls.path,
                              note=f"assigned on self in {cls.path} (line {attributes.names[attr]})")
        dynamic.extend(attributes.dynamic)
    if assembled is not plain and not dynamic:
        return _uncertain(index, owner.ref, attr, assembled)  # the assembled class's fields are listed and none is `attr`
    return found


def _uncertain(index: SymbolIndex, owner: Ref, attr: str, missing: Resolution) -> Resolution:
    """`missing`, unless an instance may carry `attr` all the same: a subclass of `owner`
    declares it (the object may be one), or upstream code sets it on objects other than `self`
    (`forward_batch.x = …` in a worker, `setattr(layer, "x", …)`: on that path it is there).
    Then the read is undecided, with the evidence."""
    subclass = subclass_declaring(index, owner, attr)
    if subclass is not None:
        return Resolution(attr, None, outcome=Outcome.undecided, note=f"{missing.note}; but its subclass {subclass} declares it, and the object may be one")
    info = index.class_info(owner)
    if (info is not None and not info.members and not index.instance_attributes(owner).names
            and [c for c in index.mro(owner) if c.kind == "class"] == [owner]):
        # vllm 0.11's `class AttentionMetadata: pass`, the annotation of every backend's own
        # metadata object (vllm-ascend's AscendMLAMetadata derives from nothing)
        return Resolution(attr, None, outcome=Outcome.undecided,
                          note=f"{missing.note}; but {owner.path} declares nothing at all: a marker the annotation names, the object some other class's")
    # an object of one runtime (sglang.srt) is never handed to another's code (sglang.multimodal_gen)
    parts = owner.module.split(".")
    runtime = ".".join(parts[:2]) if len(parts) > 2 else parts[0]
    where = outside_write(index, attr, runtime) or index.registered_on_others(attr, runtime)
    if where is None:
        return missing
    return Resolution(attr, None, outcome=Outcome.undecided, note=f"{missing.note}; but upstream sets {attr!r} on other objects at run time ({where})")


_WRITES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def outside_write(index: SymbolIndex, attr: str, within: str) -> str | None:
    """"relpath:line" of the first `a.b.attr = …` upstream writes through a receiver other
    than self / cls, in a module under the package `within` (test modules aside), or None. The
    sources that mention `attr` at all are searched, once per index, package and name."""
    found = _WRITES.setdefault(index, {})
    if (within, attr) not in found:
        needle = attr.encode()
        write = re.compile(rb"\." + re.escape(needle) + rb"[ \t]*(?::[^=\n]*)?=(?!=)")
        found[within, attr] = None
        for module, text in index.sources().items():
            if not module.startswith(within + ".") or needle not in text or ".test." in f".{module}." or ".tests." in f".{module}.":
                continue
            match = next((m for m in write.finditer(text) if _receiver(text, m.start()) not in (b"self", b"cls", b"")), None)
            if match is not None:
                line = text.count(b"\n", 0, match.start()) + 1
                found[within, attr] = f"{index.files[module][0]}:{line}"
                break
    return found[within, attr]


def subclass_declaring(index: SymbolIndex, owner: Ref, attr: str) -> str | None:
    """An upstream subclass of `owner` that declares `attr` (in its body or on self), or None:
    an object annotated as `owner` may be one (`pool: KVCache` holding an MHATokenToKVPool), so
    a field only a subclass declares is not certainly missing."""
    return next((cls.path for cls, info in upstream_subclasses(index, owner)
                 if attr in info.members or attr in index.instance_attributes(cls).names), None)


def upstream_subclasses(index: SymbolIndex, owner: Ref):
    """(Ref, ClassInfo) of each class of the release deriving from `owner` at any depth, by
    module and line. Found by the class headers in the sources (no module is parsed unless it
    defines one), then checked by MRO (a namesake of another hierarchy is dropped)."""
    names, queue = {owner.qualname.rsplit(".", 1)[-1]}, [owner.qualname.rsplit(".", 1)[-1]]
    modules: set[str] = set()
    while queue:  # subclasses by name, transitively; the MRO check below drops namesakes
        base = queue.pop()
        for module, name in _subclass_headers(index, base):
            modules.add(module)
            if name not in names:
                names.add(name)
                queue.append(name)
    for module in sorted(modules):
        table = index.table(module)
        for qualname, info in (table.classes.items() if table else ()):
            cls = Ref("class", module, qualname)
            if qualname.rsplit(".", 1)[-1] in names and cls != owner and owner in index.mro(cls):
                yield cls, info


def _receiver(text: bytes, end: int) -> bytes:
    """The dotted expression written right before `text[end]` (the `a.b` of `a.b.attr`)."""
    start = end
    while start > 0 and (_word(text[start - 1 : start]) or text[start - 1 : start] == b"."):
        start -= 1
    return text[start:end]


_HEADERS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _subclass_headers(index: SymbolIndex, base: str) -> list[tuple[str, str]]:
    """(module, class name) of every class header that names `base` among its bases: each
    mention of `base` in the sources is checked for an open `class X(` just before it. Once per
    index and name."""
    found = _HEADERS.setdefault(index, {})
    if base not in found:
        needle = base.encode()
        headers = []
        for module, text in index.sources().items():
            position = text.find(needle)
            while position != -1:
                end = position + len(needle)
                whole_word = not _word(text[position - 1 : position]) and not _word(text[end : end + 1])
                header = _OPEN_HEADER.search(text, max(0, position - 300), position) if whole_word else None
                if header is not None:
                    headers.append((module, header.group(1).decode()))
                position = text.find(needle, end)
        found[base] = headers
    return found[base]


# a class header whose base list is still open where the search window ends
_OPEN_HEADER = re.compile(rb"(?:^|\n)[ \t]*class[ \t]+(\w+)[ \t]*\([^)]*$")


def _word(char: bytes) -> bool:
    return char.isalnum() or char == b"_"


def field_present(judge: JudgeContext, class_path: str, attr: str) -> bool | None:
    """`hasattr(v, attr)` for `v` an instance of `class_path` on this upstream: True, False, or
    None when not decided."""
    if _written(judge).get(f"{class_path}.{attr}"):
        return None  # the plugin sets it itself somewhere: whether it did by then is a run-time matter
    found = field_resolution(judge, class_path, attr)
    if found is None or found.outcome is Outcome.undecided:
        return None
    return found.ok


def judge_field(judge: JudgeContext, dep: Dependency) -> Finding | None:
    """A read of a field of an upstream object: ok where the class declares it (or the plugin
    sets it itself), missing (AttributeError when read) where it certainly does not, unknown
    with the reason otherwise. Writes give no finding: Python creates the attribute (the
    server_arg kind judges writes to ServerArgs)."""
    if dep.how == WRITE or dep.target is None:
        return None

    class_path, _, attr = dep.target.rpartition(".")
    base = judge.base(dep)
    found = field_resolution(judge, class_path, attr)
    if found is None:
        return None
    if found.ok:
        defined_in = found.ref.path if found.ref.module else found.owner
        return Finding(**base, status=Status.ok, defined_in=defined_in, detail=found.note)
    own = _written(judge).get(dep.target)
    if own is not None:
        return Finding(**base, status=Status.ok, detail=f"the plugin sets {attr!r} on it itself ({own.file}:{own.line})")
    where = f"{dep.expression or attr} reads {class_path}.{attr}"
    if found.outcome is Outcome.undecided:
        return Finding(**base, status=Status.unknown, risk=risk_of(dep, Status.unknown), detail=f"{where}: not decided: {found.note}")
    sub = judge.plugin_subclass_defining(class_path, attr)
    if sub is not None:
        # vllm-spyre's CBSpyreModelRunnerOutput(ModelRunnerOutput) adds tkv; its scheduler reads
        # it from the output its own model runner returns
        return Finding(**base, status=Status.unknown, risk=risk_of(dep, Status.unknown),
                       detail=f"{where}, which {judge.index.source.label} does not declare ({found.note}), but the plugin's subclass {sub.path} "
                              f"defines it ({sub.file}:{sub.line}): the object may be one")
    protocol = _protocol(judge.index, class_path)
    if protocol:
        # vllm/v1/attention/backend.py AttentionLayer(Protocol): the object is whatever layer
        # implements it (vllm's Attention sets layer_name), not an instance of the Protocol
        return Finding(**base, status=Status.unknown, risk=risk_of(dep, Status.unknown),
                       detail=f"{where}, which {judge.index.source.label} does not declare ({found.note}), but {class_path} is a typing.Protocol: "
                              "the object is any class that implements it, and may carry it")
    registered = registered_by_name(judge.scan, attr) or set_on_others(judge.scan, attr)
    if registered is not None:
        # vllm-rbln's Fp8MoEMethod.create_weights: layer.register_parameter("w13_weight_scale_inv", …)
        return Finding(**base, status=Status.unknown, risk=risk_of(dep, Status.unknown),
                       detail=f"{where}, which {judge.index.source.label} does not declare ({found.note}), but the plugin sets {attr!r} by name "
                              f"on an object at {registered}: this one may carry it")
    return Finding(**base, status=Status.missing, risk=risk_of(dep, Status.missing),
                   detail=f"{where}, which {judge.index.source.label} does not declare ({found.note}; AttributeError when read)")


def _protocol(index: SymbolIndex, class_path: str) -> bool:
    """Whether the upstream class `class_path` is a typing Protocol (a base of its MRO is)."""
    owner = index.resolve(class_path)
    return owner.ok and owner.ref.kind == "class" and any(
        base.kind == "external" and base.qualname in ("typing.Protocol", "typing_extensions.Protocol") for base in index.mro(owner.ref))


def written_by_plugin(judge: JudgeContext, target: str) -> Dependency | None:
    """The plugin site that sets `<Class>.<name>` itself, or None (see _written)."""
    return _written(judge).get(target)


def _written(judge: JudgeContext) -> dict[str, Dependency]:
    """`<Class>.<field>` -> a plugin site that sets it (a field write, a server-arg write, or a
    patch setting the name on the class: `Parser._emit_delta = _emit_delta`, which the patched
    methods then read through self)."""
    if judge.field_writes is None:
        judge.field_writes = {
            dep.target: dep for dep in judge.scan.dependencies
            if dep.target and (dep.kind == "field" and dep.how == WRITE or dep.kind == "server_arg"
                               or dep.kind == "patch" and dep.how in ("assign", "setattr"))
        }
    return judge.field_writes
