"""What each kind of plugin dependency is, in one table: the errors its failure raises, whether
it is a plain use of upstream or an integration point, whether step 2 checks its target, and
what it lands as in alignment reports.

`Kind` names them all; `PLAIN_KINDS` are the specs every engine shares, and an engine's module adds
the kinds only it has (SGLang's hooks, attention backends, kernels) in its own table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Kind = Literal[
    "hook",  # HookRegistry.register / @plugin_hook
    "override",  # a platform-class method over SRTPlatform / DeviceMixin
    "subclass",  # a plugin class over an upstream class: its base, overrides, self./super() members
    "import",  # import sglang.x / from sglang.x import y
    "reference",  # attribute access through an upstream module, class or enum
    "call",  # a call to an upstream function or class with the arguments it passes
    "registry_key",  # a string key read from an upstream dict / registry: X["key"]
    "field",  # an attribute read on an instance of an upstream class (forward_batch.token_to_kv_pool)
    "architecture",  # a model-architecture string upstream rewrites to / lists, that the plugin registers, tests or adds
    "patch",  # setattr / assignment / in-place edit of an upstream attribute
    "attention_backend",
    "kernel",
    "server_arg",
    "model",  # a model class registered through EntryClass or ModelRegistry
    "custom_op",  # a plugin class registered to replace an upstream class by its name (vLLM CustomOp.register_oot)
    "named_class",  # a class handed to upstream by qualified name ("pkg.mod.Class": a worker, an attention backend)
    "entry_point",  # the callable an entry point names
    "file",  # a plugin file that could not be read or parsed
]

# the exception classes a failure of each kind raises, and those that also catch it
IMPORT_ERRORS = frozenset({"ImportError", "ModuleNotFoundError", "Exception", "BaseException"})
ATTRIBUTE_ERRORS = frozenset({"AttributeError", "Exception", "BaseException"})
CALL_ERRORS = frozenset({"TypeError", "Exception", "BaseException"})
KEY_ERRORS = frozenset({"KeyError", "LookupError", "Exception", "BaseException"})  # REGISTRY[key], .pop(key)


@dataclass(frozen=True)
class KindSpec:
    """One kind of dependency (Kind)."""

    kind: Kind
    # a plain use of upstream (as opposed to the plugin's integration points: hooks, overrides,
    # patches, registrations); uses are many, so `map` lists them only when something is wrong
    usage: bool = False
    # exception class names its failure raises at the plugin site: a `try/except` of one of them
    # handles it (empty: the failure is not an exception there, only a bare `except` covers it)
    errors: frozenset[str] = frozenset()
    target: bool = False  # step 2 (interface) checks that its live targets resolve on the target upstream
    registration: bool = False  # registers under a name: a key the plugin registers itself is there when it reads it
    landing: str | None = None  # what it lands as in alignment reports (None: the kind's own name)
    # its failure is a silent fallback to upstream's own behaviour, never an exception: it never
    # breaks the plugin (a lost architecture, a replacement registered under a dead key)
    falls_back: bool = False


def kind_table(*specs: KindSpec) -> dict[str, KindSpec]:
    """An engine's kinds table (EngineProfile.kinds): each spec under its kind."""
    return {spec.kind: spec for spec in specs}


PLAIN_KINDS = (
    KindSpec("override", landing="platform factory method"),
    KindSpec("subclass", usage=True, errors=ATTRIBUTE_ERRORS | CALL_ERRORS),
    KindSpec("import", usage=True, errors=IMPORT_ERRORS),
    KindSpec("reference", usage=True, errors=ATTRIBUTE_ERRORS),
    KindSpec("call", usage=True, errors=CALL_ERRORS),
    KindSpec("registry_key", usage=True, errors=KEY_ERRORS),
    KindSpec("field", usage=True, errors=ATTRIBUTE_ERRORS),
    KindSpec("architecture", usage=True, falls_back=True),
    KindSpec("patch", target=True, landing="patch"),
    KindSpec("server_arg", target=True),
    KindSpec("model", registration=True),
    KindSpec("entry_point", landing="entry point"),
    KindSpec("file"),
    # forms an engine names in its profile (EngineProfile.replacements / named_classes); none for SGLang
    KindSpec("custom_op", falls_back=True, landing="custom op registration"),
    KindSpec("named_class", landing="class named by qualified name"),
)
