"""Symbol index of an upstream tree, resolving dotted targets the way SGLang does at run time.

`HookRegistry` resolves a target with `pkgutil.resolve_name` (import the longest importable
module prefix, or the module before a colon, then `getattr` down the rest) and a final
`getattr`. So a target resolves through a package `__init__` re-export, a `from x import *`, a
module alias, a submodule, and class inheritance (a method that moved up into a base class still
resolves). This index answers the same question statically.

Every answer has one of three outcomes, with the same meaning everywhere:
  resolved   the lookup succeeds at run time; `ref` is what it finds, `owner` the class whose
             body (or outside base) defines a member, `provenance` who listed an outside base.
  missing    the lookup is certain to fail (ImportError, AttributeError, ValueError): no module,
             binding, star import, submodule, class in the MRO, outside base or metaclass
             provides the name, and nothing answers names dynamically.
  undecided  the source cannot decide it: a module-level `__getattr__`; an outside base that
             neither the installed package nor the shipped member table can list; a class whose
             members are computed at import; a re-export or class-hierarchy cycle; a module that
             does not parse with this Python; an attribute of a function or plain value; a
             submodule reached by getattr that its package does not import itself (it is there
             once anything imported it); a target outside the upstream source.
Where the index takes the release's word: a name an upstream module imports from outside the
source exists, and so does a submodule its own code names after importing it (the release
imports); a class decorator returns the class it decorates, adding only what
`dataclasses.dataclass` adds.

Members of outside bases (torch.nn.Module, enum.Enum, object, …) come from
harness.knowledge.external, asked only when a name is not found in the upstream classes.
Resolution never recurses in Python: lookups run on an explicit stack, so an import chain of
any length resolves and a cycle is reported as one.

Modules are parsed lazily — a plugin check touches a few dozen of a release's thousands —
and every parsed table is cached per source fingerprint, so the second run parses nothing. The
cache is msgpack data checked against its types on the way in, never a pickle: a cache dir may
be shared or restored by CI, and a planted or torn file can only be rejected and rebuilt.
"""

from __future__ import annotations

import builtins
import os
import re
import tempfile
import types
from collections import Counter
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any, Callable, Generator, NamedTuple

import msgspec

from harness.knowledge.external import ExternalMembers, Members, display
from harness.knowledge.symbols import (
    ClassInfo,
    FunctionInfo,
    InstanceAttributes,
    ModuleTable,
    decode_table,
    encode_table,
    extract_module,
    instance_attributes,
)
from harness.knowledge.upstream import UpstreamSource, cache_dir, release_requirements

CACHE_VERSION = 12  # bump when ModuleTable's shape or extraction rules change (11: msgpack, not pickle; 12: analyses)
_MEMBER_KIND = {"def": "function", "class": "class", "value": "value"}


class Outcome(str, Enum):
    resolved = "resolved"
    missing = "missing"  # certain to fail at run time
    undecided = "undecided"  # cannot be decided from the source


class Ref(NamedTuple):
    # module | class | function | value | external (outside the upstream source) |
    # dynamic (a base the index cannot determine: `qualname` holds its expression)
    kind: str
    module: str  # where it is defined ("" for external names)
    qualname: str  # "" for a module; "Class.method" for a method

    @property
    def path(self) -> str:
        return f"{self.module}.{self.qualname}" if self.module and self.qualname else (self.module or self.qualname)


@dataclass(frozen=True)
class Resolution:
    """What a target is at run time; `outcome` as the module doc defines it."""

    target: str
    ref: Ref | None  # what the target is; None unless resolved
    owner: str | None = None  # for class members: the class (dotted) that defines it
    note: str | None = None  # why it is missing / undecided, or what a resolved answer rests on
    outcome: Outcome | None = None  # None: resolved when `ref` is given, else missing
    provenance: str | None = None  # who listed the outside members consulted

    def __post_init__(self):
        if self.outcome is None:
            object.__setattr__(self, "outcome", Outcome.resolved if self.ref is not None else Outcome.missing)

    @property
    def ok(self) -> bool:
        return self.outcome is Outcome.resolved


class _Step(NamedTuple):
    """One lookup's answer inside the resolver (a Resolution without its target)."""

    outcome: Outcome
    ref: Ref | None = None
    owner: str | None = None
    note: str | None = None
    provenance: str | None = None
    cycle: bool = False  # undecided because the lookup came back to itself


class _Call(NamedTuple):
    """A nested lookup for the driver to run. A lookup that can loop carries a key; meeting a
    key already on the stack is a cycle (or, for a star import, adds nothing)."""

    key: tuple | None
    step: Callable[..., Generator]
    args: tuple
    skip_on_cycle: bool = False


def module_name(relpath: str) -> tuple[str, bool]:
    parts = relpath[:-3].split("/")
    if parts[-1] == "__init__":
        return ".".join(parts[:-1]), True
    return ".".join(parts), False


class SymbolIndex:
    def __init__(self, source: UpstreamSource, use_cache: bool = True, external: ExternalMembers | None = None):
        """`external` answers members of outside bases (default: one for HARNESS_PYTHON or this
        interpreter, created when first needed)."""
        self.source = source
        self.files: dict[str, tuple[str, bool]] = {}  # module -> (relpath, is_package)
        self.namespace_packages: set[str] = set()
        for relpath in source.files:
            name, is_package = module_name(relpath)
            self.files[name] = (relpath, is_package)
            parent = name.rpartition(".")[0] if not is_package else name
            while parent:
                self.namespace_packages.add(parent)
                parent = parent.rpartition(".")[0]
        self.namespace_packages -= {name for name, (_, pkg) in self.files.items() if pkg}
        self._tables: dict[str, ModuleTable] = {}
        # Cached tables stay encoded until asked for: a check touches a few dozen of thousands.
        self._blobs: dict[str, bytes] = {}
        self._definitions: dict[str, list[str]] | None = None
        self._registered: dict[str, list[tuple[str, str]]] | None = None  # not cached: one regex pass when a lookup needs it
        # Call-site pre-filter, built on first use (see modules_calling); not cached on disk.
        self._sources: dict[str, bytes] | None = None
        self._dot_calls: dict[str, list[str]] | None = None
        # Analyses built on this index keep their per-release answers here (call sites, their parsed modules).
        self.memo: dict[str, dict] = {}
        self._analyses: dict[str, bytes] = {}  # and those worth keeping, encoded, in the cache file
        self._instance_attributes: dict[str, InstanceAttributes] = {}
        self._mros: dict[Ref, tuple[list[Ref], tuple[str, ...]]] = {}
        self._external = external
        self._requirements: dict[str, str] | None = None  # what the release requires (release_requirements)
        self._outside_seen: dict[str, None] = {}  # outside bases met so far: asked together
        self._cycle_hits = 0  # answers shaped by a cycle are not memoised
        self._dirty = False
        self.cache_file = cache_dir() / "index" / f"{source.fingerprint}.v{CACHE_VERSION}.msgpack"
        if use_cache:
            self._load_cache()

    # ------------------------------------------------------------------ tables

    def module_exists(self, name: str) -> bool:
        return name in self.files or name in self.namespace_packages

    def is_parsed(self, name: str) -> bool:
        """Whether `name`'s table is at hand (parsed or cached): reading it costs no parse."""
        return name in self._tables or name in self._blobs

    def table(self, name: str) -> ModuleTable | None:
        """The parsed module, or None for a namespace package / a module not in this tree."""
        table = self._tables.get(name)
        if table is None and name not in self._blobs and name in self.files and self._same_file(name) in _SAME_FILE:
            self._blobs[name] = _SAME_FILE[self._same_file(name)]  # parsed for another release
            self._dirty = True
        if table is None and name in self._blobs:
            try:
                table = self._tables[name] = decode_table(self._blobs[name])
                _SAME_FILE.setdefault(self._same_file(name), self._blobs[name])
            except msgspec.DecodeError:  # a torn or planted table is parsed again, never trusted
                del self._blobs[name]
        if table is None and name in self.files:
            relpath, is_package = self.files[name]
            table = extract_module(name, relpath, (self.source.root / relpath).read_bytes(), is_package)
            self._tables[name] = table
            _SAME_FILE[self._same_file(name)] = encode_table(table)
            self._dirty = True
        return table

    def _same_file(self, name: str) -> tuple[str, str]:
        """The key of `name`'s file in _SAME_FILE: its path and content hash (the manifest's)."""
        relpath = self.files[name][0]
        return relpath, self.source.files.get(relpath) or f"unhashed:{self.source.fingerprint}"

    def index_all(
        self, workers: int | None = None, progress: Callable[[int, int], None] | None = None, only: set[str] | None = None
    ) -> int:
        """Parse every module (or those in `only`) not parsed yet, in parallel; returns how many."""
        names = sorted(self.files) if only is None else sorted(only & self.files.keys())
        for name in names:  # what another release in this process parsed already
            if name not in self._tables and name not in self._blobs and self._same_file(name) in _SAME_FILE:
                self._blobs[name] = _SAME_FILE[self._same_file(name)]
                self._dirty = True
        todo = [(name, *self.files[name]) for name in names if name not in self._tables and name not in self._blobs]
        if not todo:
            return 0
        workers = workers or os.cpu_count() or 1
        step = max(2, min(64, len(todo) // (workers * 4) + 1))  # enough chunks to keep every worker busy to the end
        chunks = [todo[i : i + step] for i in range(0, len(todo), step)]
        done = 0
        # below ~0.3 MB of source (a few mid-sized modules) shipping the work costs more than it
        # saves; the pool itself is started once per process (see _parse_pool)
        size = sum((self.source.root / relpath).stat().st_size for _, relpath, _ in todo)
        pool = _parse_pool(workers) if workers > 1 and size >= 300_000 else None
        root = [str(self.source.root)] * len(chunks)
        for blobs in (pool.map if pool is not None else map)(_extract_chunk, root, chunks):
            # Tables arrive encoded and stay so until asked for: the parent has less to
            # do while the workers parse.
            self._blobs.update(blobs)
            _SAME_FILE.update((self._same_file(name), blob) for name, blob in blobs.items())
            self._dirty = True
            done += len(blobs)
            if progress:
                progress(done, len(todo))
        return len(todo)

    def save(self) -> None:
        """Write what was parsed to `cache_file` (msgpack, atomically), if anything was."""
        if not self._dirty:
            return
        for name, table in self._tables.items():
            if name not in self._blobs:
                self._blobs[name] = encode_table(table)
        self.cache_file.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.cache_file.parent, suffix=".tmp")
        with os.fdopen(fd, "wb") as handle:
            handle.write(_ENCODER.encode(_CacheFile(self._blobs, self._definitions, self._instance_attributes, self._analyses)))
        os.replace(tmp, self.cache_file)
        self._dirty = False

    def _load_cache(self) -> None:
        try:
            cached = _CACHE_DECODER.decode(self.cache_file.read_bytes())
        except FileNotFoundError:
            return
        except (OSError, msgspec.DecodeError):
            self._dirty = True  # a torn or planted cache is rebuilt, never trusted
            return
        # only this source's modules: a table under any other name is no answer of this tree
        self._blobs = {name: blob for name, blob in cached.blobs.items() if name in self.files}
        self._definitions, self._instance_attributes = cached.definitions, cached.instances
        self._analyses = cached.analyses

    def modules_defining(self, name: str) -> list[str]:
        """Modules that may define `name` (a `def name` / `class name` at any depth, possibly
        in a string): one regex pass over the sources, much cheaper than parsing them all,
        cached with the index. Callers verify a candidate by parsing it."""
        if self._definitions is None:
            definitions: dict[str, list[str]] = {}
            for module, text in self.sources().items():
                for found in set(_DEFINITION.findall(text)) | set(_CLASS_DEFINITION.findall(text)):
                    definitions.setdefault(found.decode(), []).append(module)
            self._definitions = definitions
            self._dirty = True
        return self._definitions.get(name, [])

    def modules_calling(self, name: str, bare: bool = False) -> list[str]:
        """Modules whose source may call `name`: `.name(` anywhere (a method, or a function
        through its module) and, with `bare`, also `name(` (a function imported by name). The
        sources are read once, on first use, and `.name(` is one regex pass over them; `name(`
        is a substring test per module. Callers verify a candidate by parsing it."""
        if self._dot_calls is None:
            dot_calls: dict[str, list[str]] = {}
            for module, text in self.sources().items():
                for found in set(_DOT_CALL.findall(text)):
                    dot_calls.setdefault(found.decode(), []).append(module)
            self._dot_calls = dot_calls
        found = self._dot_calls.get(name, [])
        if not bare:
            return list(found)
        needle = name.encode() + b"("
        return sorted(set(found) | {module for module, text in self.sources().items() if needle in text})

    def cached_analysis(self, key: str) -> bytes | None:
        """The msgpack bytes `analysis` kept under `key` for this release (from the cache file), or None."""
        return self._analyses.get(key)

    def analysis(self, name: str, ref: Ref, decoder: msgspec.msgpack.Decoder, compute: Callable[[], Any]) -> Any:
        """The answer of analysis `name` (e.g. "call_sites") for `ref`: memoised per index, kept
        with the cache file as typed msgpack, and recomputed with `compute()` when absent or when
        `decoder` refuses the bytes (torn or planted: never trusted)."""
        memo = self.memo.setdefault(name, {})
        if ref not in memo:
            key = f"{name}:{ref.kind}:{ref.module}:{ref.qualname}"
            blob = self._analyses.get(key)
            try:
                memo[ref] = decoder.decode(blob) if blob is not None else compute()
            except msgspec.DecodeError:
                memo[ref] = compute()
                blob = None
            if blob is None:
                self._analyses[key] = msgspec.msgpack.encode(memo[ref])
                self._dirty = True
        return memo[ref]

    def sources(self) -> dict[str, bytes]:
        """Every module's source (module -> bytes, sorted by module), read once on first use and
        kept for this index: every text pre-filter (definitions, call sites, registries,
        registrations) searches it, so a release is read from disk once."""
        if self._sources is None:
            self._sources = {module: (self.source.root / relpath).read_bytes() for module, (relpath, _) in sorted(self.files.items())}
        return self._sources

    def registered_on_others(self, name: str, within: str | None = None) -> str | None:
        """Where upstream code registers `name` on an object it was handed (not `self`):
        `layer.register_parameter("name", …)` (or register_buffer / add_module /
        register_module) or `setattr(layer, "name", …)`, as quantization methods do in
        create_weights(layer, …). "relpath:line" of the first (in a module under the package
        `within`, when given), or None. One regex pass over the sources on first use, kept for
        this index."""
        if self._registered is None:
            found: dict[str, list[tuple[str, str]]] = {}
            for module, text in self.sources().items():
                relpath = self.files[module][0]
                found_here = []
                if b"register_" in text or b"add_module" in text:
                    for match in _REGISTRATION.finditer(text):
                        before = _RECEIVER.search(text, max(0, match.start() - 64), match.start())
                        found_here.append((before.group(1) if before else b"self", match.group(1), match.start()))
                if b"setattr(" in text:
                    found_here += [(match.group(1), match.group(2), match.start()) for match in _SETATTR.finditer(text)]
                for receiver, attr, start in sorted(found_here, key=lambda item: item[2]):
                    if receiver not in (b"self", b"cls"):
                        found.setdefault(attr.decode(), []).append((module, f"{relpath}:{text.count(NEWLINE, 0, start) + 1}"))
            self._registered = found
        return next((where for module, where in self._registered.get(name, []) if within is None or module.startswith(within + ".")), None)

    # ------------------------------------------------------------------ resolution

    @property
    def external(self) -> ExternalMembers:
        if self._external is None:
            self._external = ExternalMembers()
        return self._external

    def resolve(self, target: str) -> Resolution:
        """`pkgutil.resolve_name(target)`, statically (CPython 3.11 Lib/pkgutil.py): without a
        colon, import the longest prefix that is a module and getattr down the rest; with one,
        `pkg.mod:Class.attr`, the part before the colon must be a module. An invalid name is
        missing (resolve_name raises ValueError); a target whose top-level package is not in
        this upstream is undecided."""
        match = _RESOLVE_NAME.match(target)
        if not match:
            return Resolution(target, None, note=f"{target!r} is not a name pkgutil.resolve_name accepts (ValueError)")
        if match["cln"]:
            module, parts = match["pkg"], match["obj"].split(".") if match["obj"] else []
        else:
            module, *parts = target.split(".")
        head = module.split(".")[0]
        if not self.module_exists(head):
            return Resolution(target, None, outcome=Outcome.undecided, note=f"{head!r} is not part of this upstream; not checked")
        if not self.module_exists(module):
            return Resolution(target, None, note=f"no module named {module!r} (ImportError)")
        if not match["cln"]:
            while parts and self.module_exists(f"{module}.{parts[0]}"):
                module = f"{module}.{parts.pop(0)}"
        return self._resolution(target, _Call(None, self._g_chain, (module, parts)))

    def resolve_hook_target(self, target: str) -> Resolution:
        """Where HookRegistry._apply_target lands (SGLang 0.5.23 srt/plugins/hook_registry.py):
        `obj_path, attr = target.rsplit(".", 1)`, `pkgutil.resolve_name(obj_path)`, then
        `getattr(obj, attr)`. So "pkg.mod:Class.meth" works, while "pkg.mod:func" looks up the
        attribute "mod:func" on `pkg` and fails; a target without a dot raises ValueError."""
        obj_path, dot, attr = target.rpartition(".")
        if not dot:
            return Resolution(target, None, note="HookRegistry needs 'module.attr': the target has no '.' (ValueError)")
        container = self.resolve(obj_path)
        if not container.ok:
            return Resolution(target, None, outcome=container.outcome, note=container.note)
        return self._resolution(target, _Call(None, self._g_getattr, (container.ref, attr)))

    def member(self, ref: Ref, attr: str) -> Resolution:
        """`getattr(<ref>, attr)`, statically; the Resolution's target is `<ref.path>.<attr>`."""
        return self._resolution(f"{ref.path}.{attr}", _Call(None, self._g_getattr, (ref, attr)))

    def resolve_in_scope(self, module: str, expression: str) -> Resolution:
        """A dotted expression as code in `module` sees it (globals, then builtins), as class
        bases and aliases are evaluated. Names the module imports from outside the source are
        taken to exist."""
        return self._resolution(expression, _Call(None, self._g_in_scope, (module, expression)))

    def class_info(self, ref: Ref) -> ClassInfo | None:
        table = self.table(ref.module)
        return table.classes.get(ref.qualname) if table else None

    def function_info(self, ref: Ref) -> FunctionInfo | None:
        table = self.table(ref.module)
        return table.functions.get(ref.qualname) if table else None

    def bases(self, ref: Ref) -> list[Ref]:
        """The class's direct bases; one that cannot be determined is a Ref of kind dynamic."""
        return self._run(_Call(None, self._g_bases, (ref,)))[0]

    def mro(self, ref: Ref) -> list[Ref]:
        """C3 linearisation, as Python computes it, without `object`; outside bases (and bases
        that cannot be determined) end their branch. A non-class is its own MRO."""
        if ref.kind != "class":
            return [ref]
        return self._run(_Call(("c", ref.path), self._g_mro, (ref,)))[0]

    def instance_attributes(self, ref: Ref) -> InstanceAttributes:
        """Attributes the methods of this one class body assign on instances, and why others may
        exist (see symbols.instance_attributes); callers combine the classes of an MRO. Computed
        on first request per class and cached with the index. Raises ValueError for a non-class,
        SyntaxError if the module does not parse."""
        info = self.class_info(ref) if ref.kind == "class" else None
        if info is None:
            raise ValueError(f"{ref.path} is not an upstream class")
        found = self._instance_attributes.get(ref.path)
        if found is None:
            table = self.table(ref.module)
            found = instance_attributes((self.source.root / table.path).read_bytes(), info)
            self._instance_attributes[ref.path] = found
            self._dirty = True
        return found

    # ------------------------------------------------------------------ the resolver
    # Each _g_* is a generator: it yields a _Call for a nested lookup and receives its answer,
    # so the driver keeps the whole chain on an explicit stack (no RecursionError, cycles seen).

    def _resolution(self, target: str, call: _Call) -> Resolution:
        step = self._run(call)
        ref = step.ref if step.outcome is Outcome.resolved else None
        return Resolution(target, ref, step.owner, step.note, step.outcome, step.provenance)

    def _run(self, call: _Call):
        stack: list[tuple[Generator, tuple | None]] = []
        active: dict[tuple, int] = {}  # key -> its position on the stack
        request: _Call | None = call
        value = None
        while True:
            if request is not None:
                if request.key is not None and request.key in active:
                    value = None if request.skip_on_cycle else self._cycle(request.key, stack, active)
                else:
                    if request.key is not None:
                        active[request.key] = len(stack)
                    stack.append((request.step(*request.args), request.key))
                    value = None
            generator, key = stack[-1]
            try:
                request = generator.send(value)
            except StopIteration as stop:
                stack.pop()
                if key is not None:
                    del active[key]
                if not stack:
                    return stop.value
                request, value = None, stop.value

    def _cycle(self, key: tuple, stack: list, active: dict[tuple, int]) -> _Step:
        self._cycle_hits += 1
        chain = [k for _, k in stack[active[key] :] if k is not None and k[0] == key[0]] + [key]
        label = {"m": "re-export cycle", "c": "class hierarchy cycle", "k": "metaclass cycle"}[key[0]]
        names = [".".join(k[1:]) for k in chain]
        if len(names) > 8:
            names = [*names[:4], f"… ({len(names) - 7} more)", *names[-3:]]
        return _Step(Outcome.undecided, note=f"{label}: " + " -> ".join(names), cycle=True)

    def _g_chain(self, module: str, parts: list[str]):
        step = _Step(Outcome.resolved, Ref("module", module, ""))
        for attr in parts:
            step = yield from self._g_getattr(step.ref, attr)
            if step.outcome is not Outcome.resolved:
                break
        return step

    def _g_getattr(self, ref: Ref, attr: str, verify: bool = True):
        """getattr(ref, attr). With `verify` off (names an upstream module's own code uses), an
        attribute of an outside object is taken to exist."""
        if ref.kind == "module":
            how = "getattr" if verify else "from"  # the module's own code imported what it names
            return (yield _Call(("m", ref.module, attr), self._g_module_member, (ref.module, attr, how)))
        if ref.kind == "class":
            return (yield from self._g_class_member(ref, attr))
        if ref.kind == "external":
            found = Ref("external", ref.module, f"{ref.qualname}.{attr}")
            return _Step(Outcome.resolved, found) if not verify else self._external_attribute(ref, found)
        return _Step(Outcome.undecided, note=f"attributes of the {ref.kind} {ref.path} are not known statically")

    def _g_module_member(self, module: str, attr: str, how: str):
        """`attr` of an imported module, looked up `how`:
          getattr  getattr(module, attr): a submodule only once imported (here: by the module
                   itself), module `__getattr__` answers the rest;
          from     `from module import attr`: also imports the submodule;
          global   a name the module's own code uses (module `__getattr__` does not apply)."""
        table = self.table(module)
        if table is not None and table.error:
            return _Step(Outcome.undecided, note=f"{module} {table.error}")
        if table is not None:
            binding = table.names.get(attr)
            if binding is not None:
                return (yield from self._g_binding(module, attr, binding))
            undecided = None
            for star in table.star_imports:
                found = yield from self._g_star(star, attr)
                if found is not None and found.outcome is Outcome.resolved:
                    return found
                if found is not None and found.outcome is Outcome.undecided:
                    undecided = undecided or found
            if undecided:
                return undecided
        submodule = f"{module}.{attr}"
        if self.module_exists(submodule):
            if how != "getattr" or (table is not None and any(m == submodule or m.startswith(f"{submodule}.") for m in table.imports)):
                return _Step(Outcome.resolved, Ref("module", submodule, ""))
            return _Step(Outcome.undecided, note=f"{submodule} is an attribute of {module} only once something imports it")
        if self._module_attribute(module, table, attr):
            return _Step(Outcome.resolved, Ref("value", module, attr))
        if table is not None and table.has_getattr and how != "global":
            if table.getattr_names is None:
                return _Step(Outcome.undecided, note=f"{module}.{attr} would be answered by {module}.__getattr__ at run time")
            if attr in table.getattr_names:
                return _Step(Outcome.resolved, Ref("value", module, attr), note=f"answered by {module}.__getattr__")
            return _Step(Outcome.missing, note=f"{module} has no attribute {attr!r} (its __getattr__ answers only {', '.join(table.getattr_names) or 'nothing'})")
        return _Step(Outcome.missing, note=f"{module} has no attribute {attr!r}")

    def _module_attribute(self, module: str, table: ModuleTable | None, attr: str) -> bool:
        """What the import system gives every module (a namespace package has no code run)."""
        if attr == "__path__":
            return module in self.namespace_packages or bool(table and table.is_package)
        return attr in _MODULE_ATTRIBUTES or (table is not None and attr in ("__cached__", "__builtins__"))

    def _g_binding(self, module: str, attr: str, binding):
        if binding.kind in _MEMBER_KIND:
            return _Step(Outcome.resolved, Ref(_MEMBER_KIND[binding.kind], module, attr))
        if binding.kind == "module":
            if self.module_exists(binding.target):
                return _Step(Outcome.resolved, Ref("module", binding.target, ""))
            if self._in_upstream(binding.target):
                return _Step(Outcome.missing, note=f"{module} imports {binding.target}, which is not in this upstream (ImportError)")
            return _Step(Outcome.resolved, Ref("external", "", binding.target), note=f"imported from outside the upstream source ({binding.target})")
        if binding.kind == "alias" and binding.target == attr:
            # `X = X` (a back-compat alias block) rebinds what X was: the class or def above it
            table = self.table(module)
            if table is not None and attr in table.classes:
                return _Step(Outcome.resolved, Ref("class", module, attr))
            if table is not None and attr in table.functions:
                return _Step(Outcome.resolved, Ref("function", module, attr))
        if binding.kind == "alias":
            found = yield from self._g_in_scope(module, binding.target)
            if found.outcome is Outcome.resolved or found.cycle:
                return found
            # The assignment ran (the release imports), so the name exists even when the
            # expression is not one the index can follow.
            return _Step(Outcome.resolved, Ref("value", module, attr), note=f"bound to {binding.target}, which the index cannot follow: {found.note}")
        source, name = binding.target.split(":")
        if source == module and self.module_exists(f"{module}.{name}"):
            return _Step(Outcome.resolved, Ref("module", f"{module}.{name}", ""))  # `from . import sub` in a package
        found = yield from self._g_import_from(source, name)
        if found.outcome is Outcome.missing and binding.fallback:
            return _Step(Outcome.resolved, Ref("value", module, attr), note=f"{found.note}; {module} binds {attr} in its except-ImportError fallback")
        return found

    def _g_import_from(self, module: str, name: str):
        """`from module import name`: getattr, then the submodule."""
        if self._in_upstream(module) and not self.module_exists(module):
            return _Step(Outcome.missing, note=f"no module named {module!r} in this upstream (ImportError)")
        if not self.module_exists(module):
            return _Step(Outcome.resolved, Ref("external", "", f"{module}.{name}"), note=f"imported from outside the upstream source ({module})")
        return (yield _Call(("m", module, name), self._g_module_member, (module, name, "from")))

    def _in_upstream(self, module: str) -> bool:
        """Whether `module` would be part of this upstream's packages (existing or not)."""
        return self.module_exists(module.split(".")[0])

    def _g_star(self, module: str, attr: str):
        """What `from module import *` contributes for `attr` (None: nothing)."""
        if self._in_upstream(module) and not self.module_exists(module):
            return None
        if not self.module_exists(module):
            members = self.external.lookup([module])[module]
            if members is None:
                return _Step(Outcome.undecided, note=f"names star-imported from {module} are unknown (not importable here, not in the shipped member table)")
            exported = members.exported if members.exported is not None else {n for n in members.names if not n.startswith("_")}
            ref = Ref("external", "", f"{module}.{attr}")
            return _Step(Outcome.resolved, ref, provenance=members.describe()) if attr in exported else None
        table = self.table(module)
        exported = table.all_names if table else None
        if table is not None and table.all_unknown:
            if attr in table.names and not attr.startswith("_"):
                return _Step(Outcome.undecided, note=f"{module} builds __all__ in code the index cannot evaluate: whether `import *` copies {attr} is not decided")
            return None
        if (exported is None and attr.startswith("_")) or (exported is not None and attr not in exported):
            return None
        # Without __all__ a star import copies the namespace: module __getattr__ is not asked.
        how = "global" if exported is None else "from"
        found = yield _Call(("m", module, attr), self._g_module_member, (module, attr, how), skip_on_cycle=True)
        return found if found is None or found.outcome is not Outcome.missing else None

    def _g_in_scope(self, module: str, expression: str):
        head, *rest = expression.split(".")
        found = yield _Call(("m", module, head), self._g_module_member, (module, head, "global"))
        if found.outcome is Outcome.missing and head in _BUILTIN_NAMES:
            found = _Step(Outcome.resolved, Ref("external", "builtins", head))
        for attr in rest:
            if found.outcome is not Outcome.resolved:
                break
            found = yield from self._g_getattr(found.ref, attr, verify=False)
        return found

    # ------------------------------------------------------------------ classes

    def _g_class_expression(self, module: str, expression: str):
        """A base or metaclass expression; `?<source>` was computed at class creation."""
        if expression.startswith("?"):
            return _Step(Outcome.undecided, note=f"{expression[1:]} is computed when the class is created")
        return (yield from self._g_in_scope(module, expression))

    def _g_bases(self, ref: Ref):
        """(bases, notes): notes say why a base could not be determined."""
        info = self.class_info(ref)
        bases: list[Ref] = []
        notes: list[str] = []
        for expression in info.bases if info else ():
            if expression.endswith("()") and not expression.startswith("?"):  # what a factory's classes inherit
                bases.append(Ref("external", "", expression))
                continue
            found = yield from self._g_class_expression(ref.module, expression)
            if found.outcome is Outcome.resolved and found.ref.path in _FACTORY_BASES:
                bases.append(Ref("external", "", f"{found.ref.path}()"))  # class X(NamedTuple) is made by it
            elif found.outcome is Outcome.resolved and found.ref.kind in ("class", "external"):
                bases.append(found.ref)
            else:
                bases.append(Ref("dynamic", ref.module, expression))
                why = found.note if found.outcome is not Outcome.resolved else f"it is a {found.ref.kind}, not a class"
                notes.append(f"base {expression.lstrip('?')} of {ref.path} is undecided: {why}")
        return [b for b in bases if b.path != "builtins.object"], notes

    def _g_mro(self, ref: Ref):
        """(C3 MRO, notes): notes say where the MRO is not certain."""
        memo = self._mros.get(ref)
        if memo is not None:
            return memo
        hits = self._cycle_hits
        bases, notes = yield from self._g_bases(ref)
        sequences = []
        for base in bases:
            if base.kind != "class":
                sequences.append([base])
                continue
            found = yield _Call(("c", base.path), self._g_mro, (base,))
            if isinstance(found, _Step):  # a cycle
                notes.append(found.note)
                sequences.append([base])
            else:
                sequences.append(list(found[0]))
                notes.extend(found[1])
        result = _c3_merge(ref, [*sequences, list(bases)])
        if result is None:
            notes.append(f"{ref.path}: Python cannot linearise its bases (TypeError at class creation)")
            result = list(dict.fromkeys([ref, *(c for seq in sequences for c in seq)]))
        self._outside_seen.update(dict.fromkeys(c.path for c in result if c.kind == "external"))
        answer = (result, tuple(dict.fromkeys(notes)))
        if self._cycle_hits == hits:
            self._mros[ref] = answer
        return answer

    def _g_class_member(self, ref: Ref, attr: str):
        """getattr(cls, attr): the class bodies of the MRO, its outside bases, then its
        metaclass (`type`, an upstream `metaclass=`, or what the outside bases' metaclass adds)."""
        found = yield _Call(("c", ref.path), self._g_mro, (ref,))
        if isinstance(found, _Step):
            return found
        classes, notes = found[0], list(found[1])
        outside: list[str] = []
        upstream_metaclasses: list[Ref] = []
        metaclasses: list[str] = []
        for cls in classes:
            if cls.kind == "external":
                outside.append(cls.path)
            if cls.kind != "class":
                continue  # an undecided base has its note in `notes` already
            info = self.class_info(cls)
            kind = info.members.get(attr)
            if kind:
                return _Step(Outcome.resolved, Ref(_MEMBER_KIND[kind], cls.module, f"{cls.qualname}.{attr}"), owner=cls.path)
            if info.open_members:
                notes.append(info.open_members)
            for expression in info.decorators:
                decorator = yield from self._g_in_scope(cls.module, expression)
                if decorator.outcome is Outcome.resolved and decorator.ref.path in MEMBER_DECORATORS:
                    outside.append(f"@{decorator.ref.path}")
            if info.metaclass:
                meta = yield from self._g_class_expression(cls.module, info.metaclass)
                if meta.outcome is not Outcome.resolved:
                    notes.append(f"metaclass {info.metaclass} of {cls.path} is undecided: {meta.note}")
                elif meta.ref.kind == "class":
                    upstream_metaclasses.append(meta.ref)
                else:
                    metaclasses.append(meta.ref.path)
        outside.append("builtins.object")
        metaclasses.append("builtins.type")
        answers = self.external.lookup([*outside, *metaclasses], also=self._outside_candidates())
        consulted: list[str] = []
        drifts: list[str] = []  # outside packages here of another version than the release requires
        for path in outside:
            members = answers[path]
            if members is None:
                notes.append(f"members of {display(path)} are unknown (not importable by {self.external.python}, not in the shipped member table)")
                continue
            consulted.append(members.describe())
            if attr in members.names:
                return _Step(Outcome.resolved, Ref("external", "", f"{path}.{attr}"), owner=path, note=members.describe(), provenance=members.describe())
            if members.meta and attr in members.meta_names:
                source = f"members of {display(members.meta)}, the metaclass of {display(path)}, from {members.meta_source}"
                return _Step(Outcome.resolved, Ref("external", "", f"{members.meta}.{attr}"), owner=members.meta, note=source, provenance=source)
            drift = self.version_drift(members)
            if drift:
                drifts.append(drift)
        for meta in upstream_metaclasses:
            found = yield _Call(("k", meta.path, attr), self._g_class_member, (meta, attr))
            if found.outcome is Outcome.resolved:
                return found
            if found.outcome is Outcome.undecided:
                notes.append(found.note)
        for path in metaclasses:
            members = answers[path]
            if members is None:
                notes.append(f"members of the metaclass {display(path)} are unknown")
            elif attr in members.names:
                return _Step(Outcome.resolved, Ref("external", "", f"{path}.{attr}"), owner=path, note=members.describe(), provenance=members.describe())
        provenance = "; ".join(consulted) or None
        if notes:
            return _Step(Outcome.undecided, note="; ".join(dict.fromkeys(notes)), provenance=provenance)
        checked = f" (nor has any outside base: {provenance})" if provenance else ""
        versions = f"; beware: {'; '.join(dict.fromkeys(drifts))}" if drifts else ""
        return _Step(Outcome.missing, note=f"{ref.path} has no attribute {attr!r}{checked}{versions}", provenance=provenance)

    def version_drift(self, members: Members) -> str | None:
        """Why an outside package's member list may not be the release's, or None: the version
        that answered does not satisfy what the release requires of that distribution (the
        engine runs with the required one: sglang 0.5.23 pins transformers==5.19.0 while 5.24.0
        may be installed here). Said beside a `missing` verdict, which it does not change: a
        name the installed version lacks is still most likely absent from its neighbours."""
        if members.dist in (None, "Python") or members.version is None:
            return None
        from packaging.specifiers import SpecifierSet
        from packaging.utils import canonicalize_name
        from packaging.version import InvalidVersion, Version

        if self._requirements is None:
            self._requirements = release_requirements(self.source)
        wanted = self._requirements.get(canonicalize_name(members.dist))
        try:
            if wanted is None or Version(members.version) in SpecifierSet(wanted):
                return None
        except InvalidVersion:
            pass
        return f"{self.source.label} requires {members.dist}{wanted}, {members.dist} {members.version} answered"

    def _outside_candidates(self):
        """Outside bases met so far, then those the parsed modules' classes name directly
        through an import (no module is parsed for this)."""
        yield from self._outside_seen
        for table in list(self._tables.values()):
            for info in table.classes.values():
                for expression in info.bases:
                    head, _, rest = expression.partition(".")
                    binding = table.names.get(head)
                    if binding is not None and binding.kind in ("module", "from") and not self.module_exists(binding.target.split(":")[0]):
                        source = binding.target.replace(":", ".")
                        yield f"{source}.{rest}" if rest else source

    def _external_attribute(self, ref: Ref, found: Ref) -> _Step:
        members = self.external.lookup([ref.path])[ref.path]
        attr = found.qualname.rsplit(".", 1)[-1]
        if members is None:
            return _Step(Outcome.undecided, note=f"members of {ref.path} are unknown (not importable by {self.external.python}, not in the shipped member table)")
        if attr in members.names or attr in members.meta_names:
            return _Step(Outcome.resolved, found, note=members.describe(), provenance=members.describe())
        drift = self.version_drift(members)
        versions = f"; beware: {drift}" if drift else ""
        return _Step(Outcome.missing, note=f"{ref.path} has no attribute {attr!r} ({members.describe()}){versions}", provenance=members.describe())


def _c3_merge(ref: Ref, sequences: list[list[Ref]]) -> list[Ref] | None:
    """C3 merge (Python's MRO); None when no consistent order exists. Counts tail occurrences
    so a deep hierarchy merges in linear time per class."""
    sequences = [seq for seq in sequences if seq]
    positions = [0] * len(sequences)
    in_tails = Counter(c for seq in sequences for c in seq[1:])
    result = [ref]
    while True:
        heads = [seq[i] for seq, i in zip(sequences, positions) if i < len(seq)]
        if not heads:
            return result
        head = next((h for h in heads if not in_tails[h]), None)
        if head is None:
            return None
        result.append(head)
        for n, seq in enumerate(sequences):
            if positions[n] < len(seq) and seq[positions[n]] == head:
                positions[n] += 1
                if positions[n] < len(seq):
                    in_tails[seq[positions[n]]] -= 1


class _CacheFile(msgspec.Struct, array_like=True):
    """One index cache file: each module's table still encoded (decoded when asked for), the
    definition scan, and the instance attributes worked out so far."""

    blobs: dict[str, bytes]
    definitions: dict[str, list[str]] | None
    instances: dict[str, InstanceAttributes]
    analyses: dict[str, bytes] = {}  # answers of analyses built on the index (call sites, registry keys), still encoded


_ENCODER = msgspec.msgpack.Encoder()
_CACHE_DECODER = msgspec.msgpack.Decoder(_CacheFile)


# A file's table depends only on its path and content, so two releases in one process (`check`
# with its baseline, `diff`, `upgrade`) parse each unchanged file once: (relpath, content hash)
# -> encoded table. Most of a release's files are unchanged from the one before.
_SAME_FILE: dict[tuple[str, str], bytes] = {}


_POOL: dict[int, Any] = {}  # workers -> the ProcessPoolExecutor that parses for this process


def _parse_pool(workers: int):
    """One process pool per process, started on first use and kept: a cold check parses in
    several small batches (prefetch rounds, successor candidates), and starting a pool for each
    cost more than the batch. Its workers only read files, so forking them early is safe;
    concurrent.futures joins them at exit."""
    if workers not in _POOL:
        from concurrent.futures import ProcessPoolExecutor  # cost: multiprocessing loads only for a pool

        _POOL[workers] = ProcessPoolExecutor(max_workers=workers)
    return _POOL[workers]


def _extract_chunk(root: str, chunk: list[tuple[str, str, bool]]) -> dict[str, bytes]:
    base = Path(root)
    return {name: encode_table(extract_module(name, relpath, (base / relpath).read_bytes(), is_package)) for name, relpath, is_package in chunk}


_BUILTIN_NAMES = set(dir(builtins))
_RESOLVE_NAME = re.compile(r"^(?P<pkg>(?!\d)(\w+)(\.(?!\d)(\w+))*)(?P<cln>:(?P<obj>(?!\d)(\w+)(\.(?!\d)(\w+))*)?)?$", re.UNICODE)
# What every imported module has (its type's attributes and what the import system sets).
_MODULE_ATTRIBUTES = frozenset(dir(types.ModuleType)) | {"__name__", "__doc__", "__package__", "__loader__", "__spec__", "__file__"}
# Class decorators that add members (the rest are taken to return the class unchanged).
MEMBER_DECORATORS = {"dataclasses.dataclass"}
# Functions that act as a base in a class statement and make the class themselves.
_FACTORY_BASES = {f"{module}.{name}" for module in ("typing", "typing_extensions") for name in ("NamedTuple", "TypedDict")}
# Literal prefixes let `re` skip ahead (15x faster than anchoring at line starts); a match in
# a string or comment only adds a candidate module, which the caller verifies by parsing.
_DEFINITION = re.compile(rb"def[ \t]+(\w+)")
_CLASS_DEFINITION = re.compile(rb"class[ \t]+(\w+)")
NEWLINE = b"\n"
# two regexes, each starting with a literal: an alternation of both is 50x slower on 68 MB
_REGISTRATION = re.compile(rb"\.(?:register_parameter|register_buffer|add_module|register_module)\(\s*[\"'](\w+)[\"']")
_SETATTR = re.compile(rb"setattr\(\s*(\w+)\s*,\s*[\"'](\w+)[\"']")
_RECEIVER = re.compile(rb"(\w+)$")
# `.name(`: literal-led, so one pass over a release is ~0.3 s (an unanchored `(\w+)\(` is 20x that)
_DOT_CALL = re.compile(rb"\.(\w+)[ \t]*\(")


def load_index(source: UpstreamSource) -> SymbolIndex:
    return SymbolIndex(source)


def c3(ref: Ref, bases_of: Callable[[Ref], list[Ref]], linear_of: Callable[[Ref], list[Ref]] | None = None) -> list[Ref]:
    """C3 linearisation of `ref` over a class graph given by `bases_of` (plugin classes mixed
    with upstream ones). `linear_of` gives the known linearisation of a class outside that
    graph (an upstream class: SymbolIndex.mro), which ends the walk there; a cycle ends its
    branch. The graph is a plugin's own hierarchy, a handful of levels deep."""
    memo: dict[Ref, list[Ref]] = {}

    def linear(node: Ref, visiting: frozenset) -> list[Ref]:
        if node in memo:
            return memo[node]
        if node.kind != "class" or node in visiting:
            return [node]
        known = linear_of(node) if linear_of else None
        if known is not None:
            return known
        bases = bases_of(node)
        sequences = [linear(base, visiting | {node}) for base in bases]
        result = _c3_merge(node, [*sequences, list(bases)]) or list(dict.fromkeys([node, *(c for seq in sequences for c in seq)]))
        memo[node] = result
        return result

    return linear(ref, frozenset())
