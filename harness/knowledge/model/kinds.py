"""What each kind of plugin dependency is, in one table: the errors its failure raises, whether
it is a plain use of upstream or an integration point, whether step 2 checks its target, and
what it lands as in alignment reports.

Everything that asks about a kind (the judge, `map`'s listing, the interface and alignment
steps) asks `profile()`, as does everything that asks which package is the upstream: an engine
other than SGLang (vLLM) is one more `EngineProfile` with its own kinds, not edits at use sites.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Literal

from harness.errors import HarnessError
from harness.knowledge.model.findings import Kind
from harness.knowledge.model.forms import (
    ModelRegistration,
    NamedClass,
    NamedClasses,
    ReplacementRegistry,
)

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
    # its failure is a silent fallback to upstream's own behaviour, never an exception: it never
    # breaks the plugin (a lost architecture, a replacement registered under a dead key)
    falls_back: bool = False


# Who imports a plugin root, most costly failure first. Both engines load plugins the same way
# (SGLang's loader was modelled on vLLM's): the platform class, resolved outside any try (the
# server does not start); a platform entry point (logged, the platform not activated); a general
# plugin (logged, the whole plugin skipped); an external model package (logged, that model module
# skipped); a root the user named.
Loader = Literal["platform_class", "platform", "plugins", "model_package", "entry"]
PinForm = Literal["release", "commit"]  # what a pin file holds: a release tag, or a commit of upstream main
LOADERS: tuple[Loader, ...] = ("platform_class", "platform", "plugins", "model_package", "entry")


@dataclass(frozen=True)
class EngineProfile:
    """An upstream engine as data: its package, where its source sits, how it loads plugins, the
    names a plugin meets it by, and the kinds of dependency a plugin has on it. A third engine is
    one more instance."""

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
    hook_registry: str | None = None  # the registry plugins wrap upstream functions through
    hook_points: str | None = None  # the module whose names hooks may target (a plugin-facing surface)
    model_registry: str | None = None  # the class whose .register() adds a model architecture
    model_loader: str | None = None  # the function that imports an external model package's modules
    external_model_env: str | None = None  # the variable naming an external model package
    # the object that holds the server's settings, and the names plugins hold it by unannotated
    server_args: str | None = None
    server_args_names: tuple[str, ...] = ()
    # the loader module whose `ep.load()` imports each entry point (failure_time, judge wording)
    plugin_loader_module: str = ""
    kernel_key_prefix: str | None = None  # registry keys `("<prefix>.mod.fn", "impl")` name upstream kernels
    # upstream functions that run when the engine starts, whatever the model (failure_time)
    startup_roots: dict[str, str] = field(default_factory=dict)
    models: str = ""  # the package of the model modules: their classes run only when that model is served
    # registration forms beyond imports and patches (harness.knowledge.model.forms); None / empty: none
    replacements: ReplacementRegistry | None = None
    model_registration: ModelRegistration | None = None
    named_classes: NamedClasses = field(default_factory=NamedClasses)
    # plugins extend upstream objects by patching (no registry to wrap through), adding names of
    # their own: a patch of a name the release lacks, with no evidence either way, is undecided
    # rather than a replacement of one upstream dropped (judge._added_name)
    patches_add_names: bool = False
    # files (relative to the plugin root) whose whole content pins upstream: a release ("v0.23.0")
    # or a commit of upstream main (plugin_repo.declared_pins reads them after the requirements)
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


def _table(*specs: KindSpec) -> dict[str, KindSpec]:
    return {spec.kind: spec for spec in specs}


_PLAIN_KINDS = (
    KindSpec("override", landing="platform factory method"),
    KindSpec("subclass", usage=True, errors=ATTRIBUTE_ERRORS | CALL_ERRORS),
    KindSpec("import", usage=True, errors=IMPORT_ERRORS),
    KindSpec("reference", usage=True, errors=ATTRIBUTE_ERRORS),
    KindSpec("call", usage=True, errors=CALL_ERRORS),
    KindSpec("registry_key", usage=True),
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

# sglang/srt/platforms/__init__.py, sglang/srt/plugins/__init__.py, sglang/srt/models/registry.py (0.5.23)
SGLANG = EngineProfile(
    name="sglang",
    display="SGLang",
    article="an",
    package="sglang",
    distribution="sglang",
    source_prefixes=("sglang", "python/sglang"),
    entry_points={"sglang.srt.platforms": "platform", "sglang.srt.plugins": "plugins"},
    platform_bases=("sglang.srt.platforms.interface.SRTPlatform", "sglang.srt.platforms.device_mixin.DeviceMixin"),
    runtime="sglang.srt",
    kinds=_table(
        KindSpec("hook", target=True, landing="hook"),
        *_PLAIN_KINDS,
        KindSpec("attention_backend", target=True, registration=True, landing="attention backend registration"),
        KindSpec("kernel", target=True, registration=True, landing="kernel registration"),
    ),
    load_failures={
        "platform_class": "the platform class cannot be loaded: SGLang's _load_platform_class (pkgutil.resolve_name, outside any try) raises and the server does not start",
        "platform": "the platform plugin's entry point fails to load: SGLang logs it and falls back to another platform (or raises when SGLANG_PLATFORM selects it)",
        "plugins": "SGLang's load_plugins_by_group logs it and skips the whole plugin",
        "model_package": "SGLang's import_model_classes logs a warning and skips this model module",
    },
    version_reads=("sglang.__version__", "sglang.version.__version__"),
    hook_registry="sglang.srt.plugins.hook_registry.HookRegistry",
    hook_points="sglang.srt.plugins.",
    model_registry="sglang.srt.models.registry.ModelRegistry",
    model_loader="sglang.srt.models.registry.import_model_classes",
    external_model_env="SGLANG_EXTERNAL_MODEL_PACKAGE",
    server_args="sglang.srt.server_args.ServerArgs",
    server_args_names=("server_args", "args"),
    plugin_loader_module="sglang.srt.plugins",
    kernel_key_prefix="sglang.",
    startup_roots={  # 0.5.23 file:line
    "sglang.srt.entrypoints.http_server.launch_server": "the HTTP server starts",  # entrypoints/http_server.py:3125
    "sglang.srt.entrypoints.engine.Engine.__init__": "the engine starts",  # entrypoints/engine.py:248
    "sglang.srt.entrypoints.engine._set_envs_and_config": "the engine starts",  # entrypoints/engine.py:1878
    "sglang.srt.managers.scheduler.run_scheduler_process": "each scheduler process starts",  # managers/scheduler.py:6310
    "sglang.srt.managers.scheduler.Scheduler.__init__": "the scheduler starts",  # managers/scheduler.py:447
    "sglang.srt.managers.data_parallel_controller.run_data_parallel_controller_process": "the DP controller starts",  # :948
    "sglang.srt.managers.tp_worker.TpModelWorker.__init__": "each TP worker starts",  # managers/tp_worker.py:280
    "sglang.srt.model_executor.model_runner.ModelRunner.__init__": "the model runner starts",  # model_runner.py:323
    "sglang.srt.distributed.parallel_state.init_distributed_environment": "process groups are set up",  # parallel_state.py:2468
    "sglang.srt.distributed.parallel_state.initialize_model_parallel": "process groups are set up",  # parallel_state.py:2566
    },
    models="sglang.srt.models.",
    ci_cache_key="harness-cache-",
)

# vllm/plugins/__init__.py (groups, load_plugins_by_group: `plugin.load()` in a try that logs and
# skips), vllm/platforms/__init__.py (resolve_current_platform_cls_qualname calls each platform
# plugin's function in a try; `resolve_obj_by_qualname` of the winner runs outside any try), 0.27.1.
# io_processor / stat_logger / endpoint plugins go through the same load_plugins_by_group, in the
# API process only: a failure skips that plugin, as for general plugins.
# The settings object: plugins receive a VllmConfig (Platform.check_and_update_config(vllm_config),
# pre_register_and_update) and read or write its sub-configs; EngineArgs is only the CLI's parser.
VLLM = EngineProfile(
    name="vllm",
    display="vLLM",
    article="a",
    package="vllm",
    distribution="vllm",
    source_prefixes=("vllm",),
    entry_points={
        "vllm.platform_plugins": "platform",
        "vllm.general_plugins": "plugins",
        "vllm.io_processor_plugins": "plugins",
        "vllm.stat_logger_plugins": "plugins",
        "vllm.endpoint_plugins": "plugins",
    },
    platform_bases=("vllm.platforms.interface.Platform",),
    runtime="vllm",
    kinds=_table(*_PLAIN_KINDS),
    load_failures={
        "platform_class": "the platform class cannot be loaded: vLLM's resolve_obj_by_qualname (outside any try) raises and the server does not start",
        "named_class": "a class the platform names by qualified name cannot be loaded: vLLM's resolve_obj_by_qualname (outside any try) raises when it needs it and the server does not start",
        "platform": "the platform plugin fails to load: vLLM logs it and falls back to another platform",
        "plugins": "vLLM's load_plugins_by_group logs it and skips the whole plugin",
        "model_package": "vLLM's model registry fails to import this model module when it is served",
    },
    version_reads=("vllm.__version__", "vllm.version.__version__"),
    server_args="vllm.config.VllmConfig",
    server_args_names=("vllm_config",),
    plugin_loader_module="vllm.plugins",
    startup_roots={  # 0.27.1 file:line
        "vllm.entrypoints.openai.api_server.run_server": "the API server starts",  # entrypoints/openai/api_server.py:751
        "vllm.entrypoints.openai.api_server.build_async_engine_client": "the engine client starts",  # api_server.py:110
        "vllm.v1.engine.llm_engine.LLMEngine.__init__": "the engine starts",  # v1/engine/llm_engine.py:51
        "vllm.v1.engine.async_llm.AsyncLLM.__init__": "the engine starts",  # v1/engine/async_llm.py:75
        "vllm.v1.engine.core.EngineCore.__init__": "the engine core starts",  # v1/engine/core.py:106
        "vllm.v1.worker.gpu_worker.Worker.__init__": "each worker starts",  # v1/worker/gpu_worker.py:129
        "vllm.v1.worker.gpu_worker.Worker.init_device": "each worker starts",  # v1/worker/gpu_worker.py:304
        "vllm.distributed.parallel_state.init_distributed_environment": "process groups are set up",  # parallel_state.py:1588
        "vllm.distributed.parallel_state.initialize_model_parallel": "process groups are set up",  # parallel_state.py:1746
    },
    models="vllm.model_executor.models.",
    model_registry="vllm.model_executor.models.registry.ModelRegistry",
    # vllm/model_executor/custom_op.py (0.27.1): register_oot :339, CustomOp.__new__ :109 (looks up
    # cls.__name__), PluggableLayer.register_oot :84, dispatch_forward :174 (OOT -> forward_oot ->
    # forward_native by default)
    replacements=ReplacementRegistry(
        method="register_oot",
        bases=("vllm.model_executor.custom_op.CustomOp", "vllm.model_executor.custom_op.PluggableLayer"),
        name_keyword="name",
        class_keyword="_decorated_op_cls",
        fallback="vLLM instantiates its own class, whose forward_oot falls back to forward_native on the plugin's device",
    ),
    # vllm/model_executor/models/registry.py :1057 _ModelRegistry.register_model (0.27.1)
    model_registration=ModelRegistration(registry="vllm.model_executor.models.registry.ModelRegistry", method="register_model"),
    # vllm/platforms/interface.py (0.27.1) methods returning qualified names; the files resolving them
    named_classes=NamedClasses(
        returns={
            "get_attn_backend_cls": NamedClass("attention backend", "vllm.v1.attention.backend.AttentionBackend", "vllm/v1/attention/selector.py:194"),
            "get_device_communicator_cls": NamedClass("device communicator", "vllm.distributed.device_communicators.base_device_communicator.DeviceCommunicatorBase", "vllm/distributed/parallel_state.py:504"),
            "get_punica_wrapper": NamedClass("punica wrapper", "vllm.lora.punica_wrapper.punica_base.PunicaWrapperBase", "vllm/lora/punica_wrapper/punica_selector.py:15"),
            "get_compile_backend": NamedClass("compile backend", "vllm.compilation.compiler_interface.CompilerInterface", "vllm/compilation/backends.py:119"),
            "get_pass_manager_cls": NamedClass("pass manager", None, "vllm/compilation/backends.py:852"),
            "get_static_graph_wrapper_cls": NamedClass("static graph wrapper", None, "vllm/compilation/backends.py:668"),
        },
        attributes={
            "worker_cls": NamedClass("worker class", "vllm.v1.worker.worker_base.WorkerBase", "vllm/v1/worker/worker_base.py:251"),
            "scheduler_cls": NamedClass("scheduler class", "vllm.v1.core.sched.interface.SchedulerInterface", "vllm/config/scheduler.py:191"),
        },
        loader="vllm.utils.import_utils.resolve_obj_by_qualname",
    ),
    patches_add_names=True,  # e.g. setattr(vllm.transformers_utils.configs, "KimiK25Config", …) in vllm-kunlun
    # vllm-ascend (0.23.0.post1): its CI, docs (docs/source/conf.py) and the PR bot read these
    pin_files={".github/vllm-release-tag.commit": "release", ".github/vllm-main-verified.commit": "commit"},
    ci_cache_key="harness-vllm-cache-",
    release_feed="https://pypi.org/rss/project/vllm/releases.xml",
)

ENGINES: dict[str, EngineProfile] = {engine.name: engine for engine in (SGLANG, VLLM)}

_ENGINE: ContextVar[EngineProfile] = ContextVar("harness_engine", default=SGLANG)


def profile() -> EngineProfile:
    """The engine the knowledge engine reads plugins of: the one `use_engine` set, else SGLang."""
    return _ENGINE.get()


@contextlib.contextmanager
def use_engine(engine: EngineProfile) -> Iterator[EngineProfile]:
    """Read plugins of `engine` inside the block (commands set it once at entry)."""
    token = _ENGINE.set(engine)
    try:
        yield engine
    finally:
        _ENGINE.reset(token)


def engine_named(name: str) -> EngineProfile:
    """The profile `--engine NAME` names; HarnessError (one line) for an unknown one."""
    try:
        return ENGINES[name.strip().lower()]
    except KeyError:
        raise HarnessError(f"--engine {name!r}: one of {', '.join(ENGINES)}") from None


def engine_of_spec(spec: str | None) -> EngineProfile | None:
    """The engine a release spec names (`vllm==0.27.1` -> vLLM); None for a path or git spec."""
    head = (spec or "").strip().split("==", 1)
    if len(head) != 2:
        return None
    return next((engine for engine in ENGINES.values() if head[0].strip().lower() == engine.distribution), None)
