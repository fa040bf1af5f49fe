"""vLLM as data: the knowledge engine's profile of it (package, plugin groups, the platform
interface, registration forms, pin files) and how `harness run` serves it (`vllm bench serve`, the
torch profiler's launch flag).
"""

from __future__ import annotations

from harness.engines.base import EngineProfile
from harness.engines.forms import (
    ModelRegistration,
    NamedClass,
    NamedClasses,
    ReplacementRegistry,
)
from harness.engines.kinds import PLAIN_KINDS, kind_table
from harness.engines.serving import BenchClient, Profiler, Serving

# vllm/plugins/__init__.py (groups, load_plugins_by_group: `plugin.load()` in a try that logs and
# skips), vllm/platforms/__init__.py (resolve_current_platform_cls_qualname calls each platform
# plugin's function in a try; `resolve_obj_by_qualname` of the winner runs outside any try), 0.27.1.
# io_processor / stat_logger / endpoint plugins go through the same load_plugins_by_group, in the
# API process only: a failure skips that plugin, as for general plugins.
# The settings object: plugins receive a VllmConfig (Platform.check_and_update_config(vllm_config),
# pre_register_and_update) and read or write its sub-configs; EngineArgs is only the CLI's parser.
ENGINE = EngineProfile(
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
        # v1/sample/logits_processor/__init__.py (0.11.0 :45, 0.23.0 :56) _load_logitsprocs_plugins: each
        # entry point's class loaded when the engine builds its logits processors; a failure re-raised
        "vllm.logits_processors": "engine_start",
    },
    platform_bases=("vllm.platforms.interface.Platform",),
    runtime="vllm",
    # vllm/platforms/__init__.py (0.11.0) module __getattr__: the resolved class, instantiated on first read
    platform_instance="vllm.platforms.current_platform",
    kinds=kind_table(*PLAIN_KINDS),
    load_failures={
        "platform_class": "the platform class cannot be loaded: vLLM's resolve_obj_by_qualname (outside any try) raises and the server does not start",
        "named_class": "a class the platform names by qualified name cannot be loaded: vLLM's resolve_obj_by_qualname (outside any try) raises when it needs it and the server does not start",
        "platform": "the platform plugin fails to load: vLLM logs it and falls back to another platform",
        "plugins": "vLLM's load_plugins_by_group logs it and skips the whole plugin",
        "engine_start": "vLLM's _load_logitsprocs_plugins raises RuntimeError for it and the engine does not start",
        "model_package": "vLLM's model registry fails to import this model module when it is served",
    },
    # vllm/version.py re-exports setuptools-scm's vllm/_version.py (`__version__ = version = '0.17.0'`,
    # `__version_tuple__ = version_tuple = (0, 17, 0)`); vllm/__init__.py exports both
    version_reads=("vllm.__version__", "vllm.version.__version__", "vllm._version.__version__", "vllm._version.version"),
    version_tuple_reads=("vllm.__version_tuple__", "vllm.version.__version_tuple__", "vllm._version.__version_tuple__",
                         "vllm._version.version_tuple"),
    serving=Serving(
        # `vllm bench serve` is vllm/entrypoints/cli/benchmark/serve.py -> vllm/benchmarks/serve.py
        # (0.22.1, 0.23.0, 0.27.1): backend "vllm" (lib/endpoint_request_func.py ASYNC_REQUEST_FUNCS :873),
        # dataset "random" (datasets/datasets.py :1615); its result (serve.py benchmark :1261) names
        # the total token throughput `total_token_throughput`; --save-detailed keeps ttfts / itls /
        # output_lens (main_async :2330); percentiles default to p99 of ttft, tpot, itl (:1760, :1770).
        bench=BenchClient(display="vllm bench serve", distribution="vllm", backend="vllm", dataset="random",
                          details="--save-detailed",
                          launcher=("-m", "vllm.entrypoints.cli.main", "bench", "serve"),
                          result_keys={"total_throughput": "total_token_throughput"}),
        # vllm/entrypoints/serve/profile/api_router.py (0.22.1, 0.27.1): /start_profile and /stop_profile
        # take no body and exist only when the server was started with --profiler-config (attach_router
        # :36); workers write `<dp*_pp*_tp*_dcp*_ep*_rank*>.<ns>.pt.trace.json.gz` per rank
        # (v1/worker/gpu_worker.py :1138, profiler/wrapper.py :192 tensorboard_trace_handler, gzip by
        # default), the API process one `<host>_<pid>.async_llm...` CPU trace (v1/engine/async_llm.py :190).
        # The flag appeared in 0.13.0: vllm/config/profiler.py (new there) ProfilerConfig, and
        # engine/arg_utils.py :1145 add_argument("--profiler-config"); 0.13.0 to 0.15.0 still read
        # VLLM_TORCH_PROFILER_DIR as deprecated (config/profiler.py :133), 0.16.0 no longer. Up to
        # 0.12.0 only the variable exists (envs.py :848; entrypoints/openai/api_server.py :1060 adds
        # /start_profile only when it is set; v1/engine/async_llm.py :169, v1/worker/gpu_worker.py :94).
        profiler=Profiler(body=False, config_since="0.13.0", config_flag="--profiler-config", env="VLLM_TORCH_PROFILER_DIR",
                          hint="vLLM serves /start_profile only when started with --profiler-config (or, before "
                               "0.13, VLLM_TORCH_PROFILER_DIR); the harness adds it for a runbook with `profiling`"),
    ),
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
