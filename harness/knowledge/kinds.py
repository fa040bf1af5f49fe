"""What each kind of plugin dependency is, in one table: the errors its failure raises, whether
it is a plain use of upstream or an integration point, whether step 2 checks its target, and
what it lands as in alignment reports.

Everything that asks about a kind (the judge, `map`'s listing, the interface and alignment
steps) asks `profile()`, as does everything that asks which package is the upstream: an engine
other than SGLang (vLLM) is one more `EngineProfile` with its own kinds, not edits at use sites.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.knowledge.findings import Kind

# the exception classes a failure of each kind raises, and those that also catch it
IMPORT_ERRORS = frozenset({"ImportError", "ModuleNotFoundError", "Exception", "BaseException"})
ATTRIBUTE_ERRORS = frozenset({"AttributeError", "Exception", "BaseException"})
CALL_ERRORS = frozenset({"TypeError", "Exception", "BaseException"})


@dataclass(frozen=True)
class KindSpec:
    """One kind of dependency (findings.Kind)."""

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


@dataclass(frozen=True)
class EngineProfile:
    """An upstream engine: its package and the kinds of dependency a plugin has on it."""

    package: str  # the top-level import name, e.g. "sglang"
    kinds: dict[str, KindSpec]

    def spec(self, kind: str) -> KindSpec:
        """The kind's spec; a kind this engine does not know gets the defaults (no errors,
        not a usage, not a target)."""
        return self.kinds.get(kind) or KindSpec(kind)  # type: ignore[arg-type]

    def kinds_where(self, flag: str) -> frozenset[str]:
        """The kinds whose boolean `flag` ("usage", "target", "registration") is set."""
        return frozenset(kind for kind, spec in self.kinds.items() if getattr(spec, flag))

    def is_upstream(self, path: str | None) -> bool:
        """Whether a dotted path names the upstream package or something in it."""
        return bool(path) and (path == self.package or path.startswith(self.package + "."))


def _table(*specs: KindSpec) -> dict[str, KindSpec]:
    return {spec.kind: spec for spec in specs}


SGLANG = EngineProfile("sglang", _table(
    KindSpec("hook", target=True, landing="hook"),
    KindSpec("override", landing="platform factory method"),
    KindSpec("subclass", usage=True, errors=ATTRIBUTE_ERRORS | CALL_ERRORS),
    KindSpec("import", usage=True, errors=IMPORT_ERRORS),
    KindSpec("reference", usage=True, errors=ATTRIBUTE_ERRORS),
    KindSpec("call", usage=True, errors=CALL_ERRORS),
    KindSpec("registry_key", usage=True),
    KindSpec("field", usage=True, errors=ATTRIBUTE_ERRORS),
    KindSpec("architecture", usage=True),
    KindSpec("patch", target=True, landing="patch"),
    KindSpec("attention_backend", target=True, registration=True, landing="attention backend registration"),
    KindSpec("kernel", target=True, registration=True, landing="kernel registration"),
    KindSpec("server_arg", target=True),
    KindSpec("model", registration=True),
    KindSpec("entry_point", landing="entry point"),
    KindSpec("file"),
))


def profile() -> EngineProfile:
    """The engine the knowledge engine reads plugins of (the one place that decides it)."""
    return SGLANG
