"""How `harness run` serves an engine, as data: its own serving benchmark client (how it is
launched, where it writes its result, the names of the result's fields) and how its torch
profiler is told where to write and started. The evidence code reads an engine's `Serving`
(EngineProfile.serving) and never tests the engine's name.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from packaging.version import InvalidVersion, Version

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
    """One engine's serving side: its benchmark client and its profiler."""

    bench: BenchClient
    profiler: Profiler


def _at_least(version: str | None, floor: str) -> bool:
    """Whether release `version` is `floor` or newer; an unreadable or missing one counts as new."""
    try:
        return version is None or Version(version) >= Version(floor)
    except InvalidVersion:
        return True
