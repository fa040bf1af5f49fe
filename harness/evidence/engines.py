"""What serving differs in per engine, as data: the release pin a runbook names, the engine's own
serving benchmark client (how it is launched, where it writes its result, the names of the
result's fields), and how its torch profiler is told where to write and started.

A runbook names its engine (`environment.engine`, default `sglang`); the evidence code asks
`serving(name)` and never tests the engine's name. A third engine is one more `Serving` here
(its knowledge-side `EngineProfile` lives in harness.knowledge.model.kinds under the same name).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from packaging.version import InvalidVersion, Version

from harness.errors import HarnessError

# bench_serving's field names are the harness's (harness.stats.performance.METRICS); a client
# that names one differently maps it in `BenchClient.result_keys`.


@dataclass(frozen=True)
class BenchClient:
    """An engine's own serving benchmark client. `flags` and `dataset` fill a runbook suite's
    unset `backend` / `dataset_name`; every client takes the common flags perf.bench_arguments
    writes (--backend, --base-url, --dataset-name, --num-prompts, --seed, --random-*, ...)."""

    display: str  # in messages and the process registry: "bench_serving", "vllm bench serve"
    distribution: str  # the distribution that must be installed in the benchmark's interpreter
    backend: str  # its --backend for an OpenAI-compatible completions server
    dataset: str  # its random-token dataset
    details: str  # the flag that writes per-request TTFTs / ITLs / output lengths
    launcher: tuple[str, ...]  # after the interpreter: how one run of it is started
    # several repetitions in one process (its import paid once): perf's launcher only
    sequenced: bool = False
    result_keys: dict[str, str] = field(default_factory=dict)  # harness key -> its key, where they differ

    def output_args(self, output_file: Path) -> list[str]:
        """The arguments that make one run write its JSON result to `output_file`."""
        if self.sequenced:
            return ["--output-file", str(output_file)]
        # vllm/benchmarks/serve.py (0.27.1) compute_result_filename :1505 (result_dir / result_filename),
        # main_async :2350 (written with --save-result, one json.dump: a single line)
        return ["--save-result", "--result-dir", str(output_file.parent), "--result-filename", output_file.name]

    def not_installed(self, version: str | None) -> str:
        """Why performance was not run when the client's distribution is missing."""
        pin = f"{self.distribution}=={version}" if version else self.distribution
        return (f"the engine's benchmark client ({self.display}) is not installed (no `{self.distribution}` "
                f"distribution in the benchmark's Python); it ships with {pin}: install that release where the "
                "benchmark runs")


@dataclass(frozen=True)
class Profiler:
    """How the engine's torch profiler is pointed at a directory and started over HTTP."""

    # the POST /start_profile body carries the trace directory and step count (SGLang);
    # False: the directory is fixed when the server starts (`launch`) and the body is empty
    body: bool
    # the release from which the trace directory is a launch argument (`config_flag`); before
    # it, the environment variable `env`. None: neither (the body carries it)
    config_since: str | None = None
    config_flag: str | None = None
    env: str | None = None
    hint: str = ""  # what a refused /start_profile usually means

    def start_body(self, trace_dir: Path, num_steps: int | None, activities: list[str]) -> dict[str, object] | None:
        """The /start_profile JSON body, or None when the engine takes none."""
        if not self.body:
            return None
        body: dict[str, object] = {"output_dir": str(trace_dir), "activities": activities}
        if num_steps:
            body["num_steps"] = num_steps
        return body

    def launch(self, version: str | None, trace_dir: Path) -> tuple[list[str], dict[str, str]]:
        """The server arguments and environment that make it write torch-profiler traces into
        `trace_dir` and serve /start_profile, for engine release `version`."""
        if self.body:
            return [], {}
        if self.config_flag and (self.config_since is None or _at_least(version, self.config_since)):
            # vllm/config/profiler.py ProfilerConfig (0.22.1, 0.27.1): profiler "torch" needs
            # torch_profiler_dir; the flag takes JSON (vllm/engine/arg_utils.py :335 parse_dataclass)
            config = {"profiler": "torch", "torch_profiler_dir": str(trace_dir)}
            return [self.config_flag, json.dumps(config)], {}
        return [], ({self.env: str(trace_dir)} if self.env else {})


@dataclass(frozen=True)
class Serving:
    """One engine's serving side: its release pin, benchmark client and profiler."""

    name: str  # as in `environment.engine` and harness.knowledge.model.kinds.ENGINES
    display: str
    version_key: str  # the runbook's `environment` key pinning the release
    bench: BenchClient
    profiler: Profiler


SGLANG = Serving(
    name="sglang",
    display="SGLang",
    version_key="sglang_version",
    # sglang/benchmark/serving.py (0.5.23): --output-file appends one JSON line per run,
    # --output-details adds ttfts / itls / output_lens
    bench=BenchClient(display="bench_serving", distribution="sglang", backend="sglang-oai",
                      dataset="random-ids", details="--output-details", launcher=("-m", "harness.evidence.perf"),
                      sequenced=True),
    # sglang/srt/entrypoints/http_server.py /start_profile takes output_dir, num_steps, activities
    profiler=Profiler(body=True),
)

VLLM = Serving(
    name="vllm",
    display="vLLM",
    version_key="vllm_version",
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
)

SERVING: dict[str, Serving] = {engine.name: engine for engine in (SGLANG, VLLM)}


def serving(name: str) -> Serving:
    """The serving data of engine `name`; HarnessError (one line) for an unknown one."""
    try:
        return SERVING[name]
    except KeyError:
        raise HarnessError(f"engine {name!r}: one of {', '.join(SERVING)}") from None


def result_aliases() -> dict[str, tuple[str, ...]]:
    """harness result key -> the other names clients write it under (read from any client's file)."""
    aliases: dict[str, tuple[str, ...]] = {}
    for engine in SERVING.values():
        for key, theirs in engine.bench.result_keys.items():
            aliases[key] = (*aliases.get(key, ()), theirs)
    return aliases


def _at_least(version: str | None, floor: str) -> bool:
    """Whether release `version` is `floor` or newer; an unreadable or missing one counts as new."""
    try:
        return version is None or Version(version) >= Version(floor)
    except InvalidVersion:
        return True
