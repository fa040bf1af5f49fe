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
harness.knowledge.upstream.external, asked only when a name is not found in the upstream classes.
Resolution never recurses in Python: lookups run on an explicit stack, so an import chain of
any length resolves and a cycle is reported as one.

The module tables it reads (parsed lazily, cached on disk) are harness.knowledge.upstream.tables';
C3 is harness.knowledge.upstream.mro's.
"""

from __future__ import annotations

import ast
import builtins
import functools
import re
import types
from typing import Callable, Generator, NamedTuple

from harness.knowledge.model import (
    ClassInfo,
    FunctionInfo,
    InstanceAttributes,
    ModuleTable,
    Outcome,
    Ref,
    Resolution,
    dotted,
)
from harness.knowledge.upstream.external import ExternalMembers, Members, display
from harness.knowledge.upstream.instance_attributes import instance_attributes
from harness.knowledge.upstream.mro import _c3_merge, c3
from harness.knowledge.upstream.source import (
    UpstreamSource,
    release_requirements,
    release_requires_python,
)
from harness.knowledge.upstream.tables import CACHE_VERSION, ModuleTables, module_name

# what callers import from here: the index with its answers, and the records they are made of
__all__ = ["CACHE_VERSION", "Outcome", "Ref", "Resolution", "SymbolIndex", "c3", "load_index", "module_name"]
_MEMBER_KIND = {"def": "function", "class": "class", "value": "value"}
# what every enum member has besides its class's attributes (enum.Enum's `name`/`value` properties
# and the attributes EnumType sets on each member)
ENUM_MEMBER_ATTRIBUTES = frozenset({"name", "value", "_name_", "_value_", "_sort_order_", "__objclass__"})


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


class SymbolIndex(ModuleTables):
    def __init__(self, source: UpstreamSource, use_cache: bool = True, external: ExternalMembers | None = None):
        """`external` answers members of outside bases (default: one for HARNESS_PYTHON or this
        interpreter, created when first needed)."""
        super().__init__(source, use_cache)
        self._mros: dict[Ref, tuple[list[Ref], tuple[str, ...]]] = {}
        self._external = external
        self._requirements: dict[str, str] | None = None  # what the release requires (release_requirements)
        self._outside_seen: dict[str, None] = {}  # outside bases met so far: asked together
        self._cycle_hits = 0  # answers shaped by a cycle are not memoised
        self._enums: dict[str, bool] = {}  # class path -> whether it is an enum (is_enum)

    # ------------------------------------------------------------------ resolution

    @functools.cached_property
    def requires_python(self) -> str | None:
        """The release's Requires-Python (release_requires_python), read once."""
        return release_requires_python(self.source)

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

    def class_node(self, ref: Ref) -> ast.ClassDef | None:
        """The `class` statement of the release's class `ref` (its module parsed), or None."""
        info = self.class_info(ref)
        tree = self.tree(ref.module) if info is not None else None
        name = ref.qualname.rpartition(".")[2]
        return next((n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == name and n.lineno == info.lineno), None) if tree else None

    def module_construction(self, ref: Ref) -> tuple[Ref, ast.Call] | None:
        """For a module-level value bound once at the top of its module to a class's call
        (`ModelRegistry = _ModelRegistry({…})`): (the class, the call); None otherwise. The
        module's text is read first: parsed only where `Name = C(` starts a line."""
        if ref.kind != "value" or "." in ref.qualname:
            return None
        if not re.search(rb"^" + re.escape(ref.qualname.encode()) + rb"\s*=\s*\w[\w.]*\(", self.sources().get(ref.module, b""), re.MULTILINE):
            return None
        tree = self.tree(ref.module)
        built = [stmt.value for stmt in tree.body if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
                 and isinstance(stmt.targets[0], ast.Name) and stmt.targets[0].id == ref.qualname] if tree is not None else []
        if len(built) != 1 or not isinstance(built[0], ast.Call):
            return None
        made = self.resolve_in_scope(ref.module, dotted(built[0].func) or "")
        return (made.ref, built[0]) if made.ok and made.ref.kind == "class" else None

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
            tree = self.tree(ref.module)
            if tree is None:
                raise SyntaxError(f"{ref.module} does not parse")
            found = instance_attributes(tree, info)
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
        owner = self.enum_of_member(ref)
        if owner is not None:
            return (yield from self._g_enum_member(owner, ref, attr))
        if ref.kind == "function" and attr in _FUNCTION_ATTRIBUTES and (info := self.function_info(ref)) is not None and not info.decorators:
            # a `def` with no decorator is a plain function object: it has the data model's
            # function attributes (`f.__code__ = g.__code__` swaps its code in place)
            return _Step(Outcome.resolved, Ref("external", "builtins", f"function.{attr}"))
        return _Step(Outcome.undecided, note=f"attributes of the {ref.kind} {ref.path} are not known statically")

    def enum_of_member(self, ref: Ref) -> Ref | None:
        """The upstream enum class whose member `ref` is (`ForwardMode.EXTEND`: a name its body
        binds to a value, no dunder or sunder; the enum docs' rule), None for anything else."""
        owner_name, _, name = ref.qualname.rpartition(".")
        if ref.kind != "value" or not owner_name or name.startswith("__") or (name.startswith("_") and name.endswith("_")):
            return None
        owner = Ref("class", ref.module, owner_name)
        return owner if self.is_enum(owner) else None

    def is_enum(self, ref: Ref) -> bool:
        """Whether `ref` is an upstream class deriving from one of the enum module's classes
        (remembered per class: the judge asks for every value a reference passes through)."""
        if ref.kind != "class":
            return False
        found = self._enums.get(ref.path)
        if found is None:
            found = self._enums[ref.path] = self.class_info(ref) is not None and any(
                c.kind == "external" and c.qualname.startswith("enum.") for c in self.mro(ref))
        return found

    def _g_enum_member(self, owner: Ref, member: Ref, attr: str):
        """getattr(member, attr) of an upstream enum's member: its `name` / `value` (what every
        member has), what the class has (methods, properties, the mixed-in type's), then what
        the enum's `__init__` sets on each member (the enum docs, "When to use __new__() vs.
        __init__()")."""
        if attr in ENUM_MEMBER_ATTRIBUTES:
            return _Step(Outcome.resolved, Ref("external", "", f"enum.Enum.{attr}"), owner="enum.Enum")
        found = yield from self._g_class_member(owner, attr)
        if found.outcome is not Outcome.missing:
            return found
        for cls in self.mro(owner):
            if cls.kind != "class":
                continue
            assigned = self.instance_attributes(cls)
            if attr in assigned.names:
                return _Step(Outcome.resolved, Ref("value", cls.module, f"{cls.qualname}.{attr}"), owner=cls.path)
            if assigned.dynamic:
                return _Step(Outcome.undecided, note=f"members of {owner.path} may get attributes not listed: {'; '.join(assigned.dynamic)}")
        return _Step(Outcome.missing, note=f"{member.path} (a member of the enum {owner.path}) has no attribute {attr!r}: {found.note}",
                     provenance=found.provenance)

    def plain_function_lacks(self, ref: Ref, attr: str) -> bool:
        """Whether the module-level function `ref` certainly has no attribute `attr`: a `def`
        without decorators has only what every function object has, unless some upstream module
        sets the attribute on it (`f.attr = …`, `setattr(f, …)`). Resolution itself leaves a
        function's attributes undecided (a plugin may set them too); the judge asks this where a
        baseline says the name used to be a class with that member."""
        info = self.function_info(ref) if "." not in ref.qualname else None
        if info is None or info.decorators or attr in _FUNCTION_ATTRIBUTES:
            return False
        name = re.escape(ref.qualname.encode())
        sets = re.compile(rb"\b" + name + rb"\." + re.escape(attr.encode()) + rb"\s*=[^=]|setattr\(\s*" + name + rb"\b")
        return not any(sets.search(text) for text in self.sources().values())

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
            if table.getattr_names is None and attr not in table.getattr_bindings:
                return _Step(Outcome.undecided, note=f"{module}.{attr} would be answered by {module}.__getattr__ at run time")
            if attr in table.getattr_bindings:  # what the lazy lookup imports, as its TYPE_CHECKING import names it
                return (yield from self._g_binding(module, attr, table.getattr_bindings[attr]))
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
            parent = ref.qualname.rpartition(".")[0]
            if parent and self.class_info(Ref("class", ref.module, f"{parent}.{expression.split('.')[0]}")) is not None:
                # a nested class's bases are evaluated in the enclosing class body, which binds its own
                # nested classes (`class SpeculativeState(State)` inside MambaPool: MambaPool.State)
                expression = f"{parent}.{expression}"
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


_BUILTIN_NAMES = set(dir(builtins))
_RESOLVE_NAME = re.compile(r"^(?P<pkg>(?!\d)(\w+)(\.(?!\d)(\w+))*)(?P<cln>:(?P<obj>(?!\d)(\w+)(\.(?!\d)(\w+))*)?)?$", re.UNICODE)
# What every imported module has (its type's attributes and what the import system sets).
_FUNCTION_ATTRIBUTES = frozenset(dir(types.FunctionType))  # what every `def` has (__name__, __wrapped__ only by functools.wraps)
_MODULE_ATTRIBUTES = frozenset(dir(types.ModuleType)) | {"__name__", "__doc__", "__package__", "__loader__", "__spec__", "__file__"}
# Class decorators that add members (the rest are taken to return the class unchanged).
MEMBER_DECORATORS = {"dataclasses.dataclass"}
# Functions that act as a base in a class statement and make the class themselves.
_FACTORY_BASES = {f"{module}.{name}" for module in ("typing", "typing_extensions") for name in ("NamedTuple", "TypedDict")}
def load_index(source: UpstreamSource) -> SymbolIndex:
    return SymbolIndex(source)
