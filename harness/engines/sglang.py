"""SGLang as data: the knowledge engine's profile of it (package, source layout, plugin loading,
registries, settings, startup functions, kinds) and how `harness run` serves it (bench_serving,
the /start_profile body).
"""

from __future__ import annotations

from harness.engines.base import EngineProfile
from harness.engines.kinds import PLAIN_KINDS, KindSpec, kind_table
from harness.engines.serving import BenchClient, Profiler, Serving

# sglang/srt/platforms/__init__.py, sglang/srt/plugins/__init__.py, sglang/srt/models/registry.py (0.5.23)
ENGINE = EngineProfile(
    name="sglang",
    display="SGLang",
    article="an",
    package="sglang",
    distribution="sglang",
    source_prefixes=("sglang", "python/sglang"),
    entry_points={"sglang.srt.platforms": "platform", "sglang.srt.plugins": "plugins"},
    platform_bases=("sglang.srt.platforms.interface.SRTPlatform", "sglang.srt.platforms.device_mixin.DeviceMixin"),
    runtime="sglang.srt",
    kinds=kind_table(
        KindSpec("hook", target=True, landing="hook"),
        *PLAIN_KINDS,
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
    serving=Serving(
        # sglang/benchmark/serving.py (0.5.23): --output-file appends one JSON line per run,
        # --output-details adds ttfts / itls / output_lens
        bench=BenchClient(display="bench_serving", distribution="sglang", backend="sglang-oai",
                          dataset="random-ids", details="--output-details", launcher=("-m", "harness.evidence.perf"),
                          sequenced=True),
        # sglang/srt/entrypoints/http_server.py /start_profile takes output_dir, num_steps, activities
        profiler=Profiler(body=True),
    ),
    # sglang/srt/platforms/__init__.py:163-172 (0.5.23): module __getattr__ makes it on first read
    platform_instance="sglang.srt.platforms.current_platform",
    hook_registry="sglang.srt.plugins.hook_registry.HookRegistry",
    hook_points="sglang.srt.plugins.",
    model_registry="sglang.srt.models.registry.ModelRegistry",
    model_loader="sglang.srt.models.registry.import_model_classes",
    external_model_env="SGLANG_EXTERNAL_MODEL_PACKAGE",
    # srt/models/registry.py import_model_classes (0.5.11 :98, 0.5.23 :123): a module whose last
    # name is in envs.SGLANG_DISABLED_MODEL_ARCHS (an EnvTuple, split on ",") is not imported
    disabled_models_env="SGLANG_DISABLED_MODEL_ARCHS",
    # srt/environ.py (0.5.19 :55-57, 0.5.23): EnvField.__set_name__ keeps the attribute's name,
    # the variable get() reads
    settings_fields="sglang.srt.environ.envs",
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
