"""Registration forms an engine offers plugins beyond imports and patches, as data an
EngineProfile names: what the scanner looks for and what the judge checks them against.

- ReplacementRegistry: a plugin class registered to replace an upstream class, keyed by the
  replaced class's `__name__` (vLLM's `CustomOp.register_oot`).
- ModelRegistration: `ModelRegistry.register_model("Arch", "pkg.mod:Class" | Class)`.
- NamedClass: a place where the plugin hands upstream a class by qualified name ("pkg.mod.Class",
  resolved with importlib + getattr), with the upstream class it must implement.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# "pkg.mod.Class" / "pkg.mod:Class": two names at least, identifiers only
QUALNAME = re.compile(r"^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*[.:][A-Za-z_]\w*$")


@dataclass(frozen=True)
class ReplacementRegistry:
    """`Base.register_oot` as a decorator (`@X.register_oot`, `@X.register_oot(name="X")`) or a
    call (`CustomOp.register_oot(_decorated_op_cls=C, name="X")`): the key is `name`, else the
    `__name__` of the class the method is called on; the replacement takes effect only when an
    upstream class of that name, deriving from one of `bases`, is instantiated."""

    method: str  # "register_oot"
    bases: tuple[str, ...]  # upstream classes whose subclasses can be replaced (the first: the usual owner)
    name_keyword: str  # "name"
    class_keyword: str  # "_decorated_op_cls": the call form's class argument
    # words for the detail: what an unreplaced class does on the plugin's device
    fallback: str = ""


@dataclass(frozen=True)
class ModelRegistration:
    """`<registry>.<method>(architecture, model)`: model a class or a lazy "pkg.mod:Class" string."""

    registry: str  # where the registry object is defined (re-exports resolve to it)
    method: str  # "register_model"
    separator: str = ":"  # between module and class in the lazy string form


@dataclass(frozen=True)
class NamedClass:
    """A class upstream resolves from a qualified-name string the plugin hands it."""

    what: str  # "attention backend"
    base: str | None  # the upstream class it must derive from; None: duck-typed (a Protocol)
    resolved_at: str  # the upstream file:line that resolves it (for the detail)


@dataclass(frozen=True)
class NamedClasses:
    """Where a plugin names classes: platform methods that return a qualified name, and settings
    attributes it assigns one to (`vllm_config.parallel_config.worker_cls = "pkg.w.W"`)."""

    returns: dict[str, NamedClass] = field(default_factory=dict)  # platform method -> what it returns
    attributes: dict[str, NamedClass] = field(default_factory=dict)  # attribute name -> what it holds
    # how a string is split into module and class: "dotted" (rsplit at the last ".")
    loader: str = ""
