"""An upstream engine as data (EngineProfile): what the knowledge engine reads a plugin of it
against, and how `harness run` serves it. Each engine is one module of this package defining
its profile as ENGINE (sglang.py, vllm.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from harness.engines.forms import ModelRegistration, NamedClasses, ReplacementRegistry
from harness.engines.kinds import KindSpec
from harness.engines.serving import Serving

# Who imports a plugin root, most costly failure first. Both engines load plugins the same way
# (SGLang's loader was modelled on vLLM's): the platform class, resolved outside any try (the
# server does not start); a platform entry point (logged, the platform not activated); a general
# plugin (logged, the whole plugin skipped); an external model package (logged, that model module
# skipped); a root the user named.
# script: the plugin's own command runs the module (a console script, `python -m` in its CI or docs)
Loader = Literal["platform_class", "engine_start", "platform", "plugins", "model_package", "entry", "script"]
PinForm = Literal["release", "commit"]  # what a pin file holds: a release tag, or a commit of upstream main
LOADERS: tuple[Loader, ...] = ("platform_class", "engine_start", "platform", "plugins", "model_package", "entry", "script")


@dataclass(frozen=True)
class EngineProfile:
    """An upstream engine as data: its package, where its source sits, how it loads plugins, the
    names a plugin meets it by, the kinds of dependency a plugin has on it, and how it is served.
    A third engine is one more instance, in a module of its own."""

    name: str  # what --engine takes: "sglang"
    display: str  # in messages: "SGLang"
    article: str  # before `display` in messages: "an SGLang plugin", "a vLLM plugin"
    package: str  # the top-level import name, e.g. "sglang"
    distribution: str  # the pip name of its releases (and of a plugin's requirement on it)
    source_prefixes: tuple[str, ...]  # where the package sits in a repo or wheel, first match wins
    # entry-point group -> the Loader that imports what it names
    entry_points: dict[str, Loader]
    platform_bases: tuple[str, ...]  # the classes a platform plugin subclasses (first: the interface)
    runtime: str  # the serving runtime's package: the code that picks models and switches on them
    kinds: dict[str, KindSpec]
    # a loader Loader -> what a failed import under it costs, in the engine's own words
    load_failures: dict[Loader, str]
    # `pkg.mod` / `pkg.mod.attr` expressions that read the running version
    version_reads: tuple[str, ...]
    serving: Serving  # how `harness run` serves it: benchmark client, profiler protocol
    # the module global holding the instance of the active platform class (what activate() names)
    platform_instance: str | None = None
    # `pkg.mod.attr` expressions that read the running version as a tuple of its release numbers
    version_tuple_reads: tuple[str, ...] = ()
    hook_registry: str | None = None  # the registry plugins wrap upstream functions through
    hook_points: str | None = None  # the module whose names hooks may target (a plugin-facing surface)
    model_registry: str | None = None  # the class whose .register() adds a model architecture
    model_loader: str | None = None  # the function that imports an external model package's modules
    external_model_env: str | None = None  # the variable naming an external model package
    # the variable listing (comma-separated) the last names of model modules the loader skips
    disabled_models_env: str | None = None
    # the object whose attributes are settings fields named after their environment variable
    # (a field's `.name` is the variable's name)
    settings_fields: str | None = None
    # the object that holds the server's settings, and the names plugins hold it by unannotated
    server_args: str | None = None
    server_args_names: tuple[str, ...] = ()
    # the loader module whose `ep.load()` imports each entry point (failure_time, judge wording)
    plugin_loader_module: str = ""
    kernel_key_prefix: str | None = None  # registry keys `("<prefix>.mod.fn", "impl")` name upstream kernels
    # upstream functions that run when the engine starts, whatever the model (failure_time)
    startup_roots: dict[str, str] = field(default_factory=dict)
    models: str = ""  # the package of the model modules: their classes run only when that model is served
    # registration forms beyond imports and patches (forms.py); None / empty: none
    replacements: ReplacementRegistry | None = None
    model_registration: ModelRegistration | None = None
    named_classes: NamedClasses = field(default_factory=NamedClasses)
    # plugins extend upstream objects by patching (no registry to wrap through), adding names of
    # their own: a patch of a name the release lacks, with no evidence either way, is undecided
    # rather than a replacement of one upstream dropped (judge._added_name)
    patches_add_names: bool = False
    # files (relative to the plugin root) whose whole content pins upstream: a release ("v0.23.0")
    # or a commit of upstream main (model.plugin.declared_pins reads them after the requirements)
    pin_files: dict[str, PinForm] = field(default_factory=dict)
    # `ci init`'s workflow (`<name>-upgrade.yml`, "<display> upgrade"): its release-cache key
    # prefix, and the feed of new releases its header names (None: it names none)
    ci_cache_key: str = "harness-cache-"
    release_feed: str | None = None

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

    @property
    def groups(self) -> tuple[str, ...]:
        """The entry-point groups a plugin of this engine declares."""
        return tuple(self.entry_points)

    @property
    def ci_workflow(self) -> str:
        """The file `ci init` writes under .github/workflows/."""
        return f"{self.name}-upgrade.yml"

    def release_spec(self, version: str) -> str:
        """`dist==version`, the spec of one release."""
        return f"{self.distribution}=={version}"
