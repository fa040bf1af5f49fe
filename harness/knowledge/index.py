"""Symbol index of an upstream tree, resolving dotted targets the way SGLang does at run time.

`HookRegistry` resolves a target with `pkgutil.resolve_name` (import the longest importable
module prefix, then `getattr` down the rest) and a final `getattr`. So a target resolves
through a package `__init__` re-export, a `from x import *`, a module alias, a submodule, and
class inheritance (a method that moved up into a base class still resolves). This index
answers the same question statically.

Modules are parsed lazily — a plugin check touches a few dozen of a release's thousands —
and every parsed table is cached per source fingerprint, so the second run parses nothing.
"""

from __future__ import annotations

import builtins
import os
import pickle
import re
import tempfile
from concurrent.futures import ProcessPoolExecutor
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, NamedTuple

from harness.knowledge.symbols import ClassInfo, FunctionInfo, ModuleTable, extract_module
from harness.knowledge.upstream import UpstreamSource, cache_dir

CACHE_VERSION = 6  # bump when ModuleTable's shape or extraction rules change
_MEMBER_KIND = {"def": "function", "class": "class", "value": "value"}


class Ref(NamedTuple):
    kind: str  # module | class | function | value | dynamic | external
    module: str  # where it is defined ("" for external names)
    qualname: str  # "" for a module; "Class.method" for a method

    @property
    def path(self) -> str:
        return f"{self.module}.{self.qualname}" if self.module and self.qualname else (self.module or self.qualname)


@dataclass(frozen=True)
class Resolution:
    target: str
    ref: Ref | None  # None: does not resolve
    owner: str | None = None  # for class members: the class (dotted) whose body defines it
    note: str | None = None  # why it failed, or what could not be checked

    @property
    def ok(self) -> bool:
        return self.ref is not None


def module_name(relpath: str) -> tuple[str, bool]:
    parts = relpath[:-3].split("/")
    if parts[-1] == "__init__":
        return ".".join(parts[:-1]), True
    return ".".join(parts), False


class SymbolIndex:
    def __init__(self, source: UpstreamSource, use_cache: bool = True):
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
        # Cached tables stay pickled until asked for: a check touches a few dozen of thousands.
        self._blobs: dict[str, bytes] = {}
        self._definitions: dict[str, list[str]] | None = None
        self._dirty = False
        self._cache_file = cache_dir() / "index" / f"{source.fingerprint}.v{CACHE_VERSION}.pickle"
        if use_cache:
            self._load_cache()

    # ------------------------------------------------------------------ tables

    def module_exists(self, name: str) -> bool:
        return name in self.files or name in self.namespace_packages

    def table(self, name: str) -> ModuleTable | None:
        """The parsed module, or None for a namespace package / a module not in this tree."""
        table = self._tables.get(name)
        if table is None and name in self._blobs:
            table = self._tables[name] = pickle.loads(self._blobs[name])
        if table is None and name in self.files:
            relpath, is_package = self.files[name]
            table = extract_module(name, relpath, (self.source.root / relpath).read_bytes(), is_package)
            self._tables[name] = table
            self._dirty = True
        return table

    def index_all(
        self, workers: int | None = None, progress: Callable[[int, int], None] | None = None, only: set[str] | None = None
    ) -> int:
        """Parse every module (or those in `only`) not parsed yet, in parallel; returns how many."""
        names = sorted(self.files) if only is None else sorted(only & self.files.keys())
        todo = [(name, *self.files[name]) for name in names if name not in self._tables and name not in self._blobs]
        if not todo:
            return 0
        workers = workers or os.cpu_count() or 1
        chunks = [todo[i : i + 64] for i in range(0, len(todo), 64)]
        done = 0
        use_pool = workers > 1 and len(todo) >= 200  # below that a pool costs more than it saves
        root = [str(self.source.root)] * len(chunks)
        with ProcessPoolExecutor(max_workers=workers) if use_pool else nullcontext() as pool:
            for blobs in (pool.map if use_pool else map)(_extract_chunk, root, chunks):
                # Tables arrive pickled and stay so until asked for: the parent has less to
                # do while the workers parse.
                self._blobs.update(blobs)
                self._dirty = True
                done += len(blobs)
                if progress:
                    progress(done, len(todo))
        return len(todo)

    def save(self) -> None:
        if not self._dirty:
            return
        for name, table in self._tables.items():
            if name not in self._blobs:
                self._blobs[name] = pickle.dumps(table, protocol=pickle.HIGHEST_PROTOCOL)
        self._cache_file.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self._cache_file.parent, suffix=".tmp")
        with os.fdopen(fd, "wb") as handle:
            pickle.dump({"blobs": self._blobs, "definitions": self._definitions}, handle, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, self._cache_file)
        self._dirty = False

    def _load_cache(self) -> None:
        try:
            with open(self._cache_file, "rb") as handle:
                cached = pickle.load(handle)
            self._blobs, self._definitions = cached["blobs"], cached["definitions"]
        except FileNotFoundError:
            pass
        except (pickle.UnpicklingError, EOFError, KeyError, TypeError, ValueError):
            self._blobs, self._definitions = {}, None  # a torn cache is rebuilt, never trusted

    def modules_defining(self, name: str) -> list[str]:
        """Modules with a `def name` / `class name` at any depth: one regex pass over the
        sources (much cheaper than parsing them all), cached with the index."""
        if self._definitions is None:
            definitions: dict[str, list[str]] = {}
            for module, (relpath, _) in sorted(self.files.items()):
                for found in set(_DEFINITION.findall((self.source.root / relpath).read_bytes())):
                    definitions.setdefault(found.decode(), []).append(module)
            self._definitions = definitions
            self._dirty = True
        return self._definitions.get(name, [])

    # ------------------------------------------------------------------ resolution

    def resolve(self, target: str) -> Resolution:
        """Resolve like `pkgutil.resolve_name` + `getattr`, statically."""
        parts = target.split(".")
        if not parts or not self.module_exists(parts[0]):
            return Resolution(target, None, note=f"{parts[0]!r} is not a module of this upstream")
        i = 1
        while i < len(parts) and self.module_exists(".".join(parts[: i + 1])):
            i += 1
        ref = Ref("module", ".".join(parts[:i]), "")
        owner = None
        for attr in parts[i:]:
            found = self.member(ref, attr)
            if found is None:
                return Resolution(target, None, note=f"{ref.path} has no attribute {attr!r}")
            ref, owner = found
            if ref.kind in ("external", "dynamic"):
                note = "resolves outside upstream source; not checked further" if ref.kind == "external" else f"answered by {ref.module}.__getattr__; not checked further"
                return Resolution(target, ref, owner, note)
        return Resolution(target, ref, owner)

    def instance_attributes(self, ref):  # TEMP until the index branch lands
        import ast as _ast
        from types import SimpleNamespace
        info = self.class_info(ref)
        table = self.table(ref.module)
        names, dynamic = set(), False
        if info and table:
            tree = _ast.parse((self.source.root / table.path).read_bytes())
            for node in _ast.walk(tree):
                if isinstance(node, _ast.ClassDef) and node.lineno == info.lineno:
                    for sub in _ast.walk(node):
                        if isinstance(sub, _ast.Attribute) and isinstance(sub.value, _ast.Name) and sub.value.id == "self" and isinstance(sub.ctx, _ast.Store):
                            names.add(sub.attr)
        return SimpleNamespace(names=names, dynamic=dynamic)

    def resolve_hook_target(self, target: str) -> Resolution:  # TEMP until the index branch lands
        obj_path, _, attr = target.rpartition(".")
        owner = self.resolve(obj_path.replace(":", ".")) if ":" not in attr else Resolution(target, None, note="no attribute")
        if not owner.ok:
            return Resolution(target, None, note=owner.note)
        return self.resolve(f"{obj_path.replace(':', '.')}.{attr}")

    def member(self, ref: Ref, attr: str, _depth: int = 0) -> tuple[Ref, str | None] | None:
        """getattr(ref, attr) statically: (what it is, the class that defines it if a class member)."""
        if _depth > 30:  # re-export cycles exist in the wild; give up rather than loop
            return None
        if ref.kind == "module":
            found = self._module_member(ref.module, attr, _depth)
            return (found, None) if found else None
        if ref.kind == "class":
            external = None
            for base in self.mro(ref):
                if base.kind != "class":
                    if base.path not in _ATTRIBUTELESS_BASES:
                        external = external or base
                    continue
                info = self.class_info(base)
                kind = info.members.get(attr) if info else None
                if kind:
                    return Ref(_MEMBER_KIND[kind], base.module, f"{base.qualname}.{attr}"), base.path
            if attr.startswith("__") and attr.endswith("__"):
                return Ref("external", "builtins", f"object.{attr}"), "builtins.object"
            if external is not None:
                # Maybe provided by a base outside the upstream source (torch.nn.Module, …):
                # the owner says which one, and callers must not call that verified.
                return Ref("external", "", f"{external.path}.{attr}"), external.path
            return None
        if ref.kind in ("external", "dynamic"):
            return Ref(ref.kind, ref.module, f"{ref.qualname}.{attr}"), None
        return None  # attributes of functions / values are not statically known

    def _module_member(self, module: str, attr: str, depth: int) -> Ref | None:
        table = self.table(module)
        if table is not None:
            binding = table.names.get(attr)
            if binding is not None:
                if binding.kind in _MEMBER_KIND:
                    return Ref(_MEMBER_KIND[binding.kind], module, attr)
                if binding.kind == "alias":
                    return self.resolve_in_scope(module, binding.target, depth + 1) or Ref("value", module, attr)
                if binding.kind == "module":
                    return Ref("module", binding.target, "") if self.module_exists(binding.target) else Ref("external", "", binding.target)
                if binding.kind == "from":
                    source_module, name = binding.target.split(":")
                    return self._import_from(source_module, name, depth + 1)
            for star in table.star_imports:
                star_table = self.table(star)
                exported = star_table.all_names if star_table else None
                if (exported is None and not attr.startswith("_")) or (exported and attr in exported):
                    found = self._import_from(star, attr, depth + 1)
                    if found is not None:
                        return found
        if self.module_exists(f"{module}.{attr}"):
            return Ref("module", f"{module}.{attr}", "")
        if table is not None and table.has_getattr:
            return Ref("dynamic", module, attr)
        return None

    def _import_from(self, module: str, name: str, depth: int) -> Ref | None:
        if not self.module_exists(module):
            return Ref("external", "", f"{module}.{name}")
        found = self.member(Ref("module", module, ""), name, depth)
        return found[0] if found else None

    def resolve_in_scope(self, module: str, expression: str, depth: int = 0) -> Ref | None:
        """Resolve a dotted expression as code in `module` would see it (class bases, aliases)."""
        head, *rest = expression.split(".")
        ref = self._module_member(module, head, depth)
        if ref is None:
            return Ref("external", "builtins", head) if head in _BUILTIN_NAMES else None
        for attr in rest:
            found = self.member(ref, attr, depth + 1)
            if found is None:
                return None
            ref = found[0]
        return ref

    def class_info(self, ref: Ref) -> ClassInfo | None:
        table = self.table(ref.module)
        return table.classes.get(ref.qualname) if table else None

    def function_info(self, ref: Ref) -> FunctionInfo | None:
        table = self.table(ref.module)
        return table.functions.get(ref.qualname) if table else None

    def bases(self, ref: Ref) -> list[Ref]:
        info = self.class_info(ref)
        if info is None:
            return []
        resolved = []
        for expression in info.bases:
            base = self.resolve_in_scope(ref.module, expression)
            resolved.append(base if base is not None else Ref("external", "", expression))
        return resolved

    def mro(self, ref: Ref) -> list[Ref]:
        """C3 linearisation, as Python computes it; external bases end their branch."""
        return _c3(ref, self.bases, set())


def c3(ref: Ref, bases_of: Callable[[Ref], list[Ref]]) -> list[Ref]:
    """C3 linearisation of `ref` over any class graph (`bases_of` gives direct bases)."""
    return _c3(ref, bases_of, set())


def _c3(ref: Ref, bases_of: Callable[[Ref], list[Ref]], visiting: set[Ref]) -> list[Ref]:
    if ref.kind != "class" or ref in visiting:
        return [ref]
    visiting = visiting | {ref}
    bases = [b for b in bases_of(ref) if b.path not in ("builtins.object", "object")]
    sequences = [_c3(base, bases_of, visiting) for base in bases] + [list(bases)]
    result = [ref]
    while True:
        sequences = [seq for seq in sequences if seq]
        if not sequences:
            return result
        for seq in sequences:
            head = seq[0]
            if not any(head in other[1:] for other in sequences):
                break
        else:  # inconsistent hierarchy: Python would refuse it; fall back to depth-first order
            head = sequences[0][0]
        result.append(head)
        sequences = [seq[1:] if seq[0] == head else seq for seq in sequences]


def _extract_chunk(root: str, chunk: list[tuple[str, str, bool]]) -> dict[str, bytes]:
    base = Path(root)
    return {
        name: pickle.dumps(extract_module(name, relpath, (base / relpath).read_bytes(), is_package), protocol=pickle.HIGHEST_PROTOCOL)
        for name, relpath, is_package in chunk
    }


_BUILTIN_NAMES = set(dir(builtins))
# Bases that add no attributes a hook could target.
_ATTRIBUTELESS_BASES = {"builtins.object", "object", "abc.ABC", "typing.Generic", "typing.Protocol", "typing_extensions.Protocol"}
_DEFINITION = re.compile(rb"^[ \t]*(?:async[ \t]+)?(?:def|class)[ \t]+(\w+)", re.M)


def load_index(source: UpstreamSource) -> SymbolIndex:
    return SymbolIndex(source)
