"""The Validation Runbook: how to start the engine, what to run against it, and the rules a
result must meet — enough to reproduce any verdict from the file alone.

`load_runbook(path)` validates `runbooks/*.yaml` and reports the first problem as one line,
`file:line: field: message`, using the YAML node positions. Relative paths inside a runbook are
resolved against the runbook's directory. A runbook used for a run must also have its template
placeholders filled in (`refuse_placeholders`), and is said to be for another release than the
run's target when it is (`release_mismatch`).
"""

from __future__ import annotations

import os
import re
import string
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import InitErrorDetails, PydanticCustomError, ValidationError

from harness.engines import ENGINES, EngineProfile, Serving
from harness.evidence.tensor_capture import OpCapture
from harness.util.yamlfile import YamlError, load_yaml_model, parse_yaml, read_yaml_text

Api = Literal["completions", "chat"]


def _resolve_against_runbook(value: Path, info: ValidationInfo) -> Path:
    base = (info.context or {}).get("base_dir")
    value = value.expanduser()
    return value if value.is_absolute() or base is None else Path(os.path.normpath(Path(base) / value))


RunbookPath = Annotated[Path, AfterValidator(_resolve_against_runbook)]


class _Strict(BaseModel):
    # A misspelt key is an error, not a silently ignored setting.
    model_config = ConfigDict(extra="forbid")


# keys of an earlier runbook format -> the key that replaced each: named in the error, where
# pydantic's own words for an unknown key would not say what to write instead
_RENAMED = {"sglang_version": "engine_version", "vllm_version": "engine_version"}


class Environment(_Strict):
    device: str = Field(description="Accelerator the results are for, e.g. 'cuda:H100' or 'xdev:X2'.")
    engine: str = Field(
        default="sglang",
        description=f"The serving engine (a module of harness/engines/): {' or '.join(ENGINES)}. It picks the "
        "benchmark client and the profiler's protocol; it must be the plugin's engine.",
    )
    engine_version: str = Field(
        description="The engine's upstream release the results are for, e.g. '0.5.23' (sglang) or '0.27.1' (vllm)."
    )
    plugin_version: str | None = Field(default=None, description="Plugin package version, if any.")
    env: dict[str, str] = Field(
        default_factory=dict,
        description="Environment variables set for the server and the runners (e.g. SGLANG_PLATFORM).",
    )

    @model_validator(mode="before")
    @classmethod
    def _renamed_keys(cls, data: Any) -> Any:
        for old, new in _RENAMED.items():
            if isinstance(data, dict) and old in data:  # located at the old key, as an unknown key is
                message = f"renamed to `{new}` (the release of the runbook's `engine`, whichever it is)"
                raise ValidationError.from_exception_data(cls.__name__, [InitErrorDetails(
                    type=PydanticCustomError("renamed_key", message), loc=(old,), input=data[old])])
        return data

    @field_validator("engine")
    @classmethod
    def _known_engine(cls, engine: str) -> str:
        if engine not in ENGINES:
            raise ValueError(f"unknown engine {engine!r}; one of {', '.join(ENGINES)}")
        return engine

    @property
    def engine_profile(self) -> EngineProfile:
        """The runbook's engine (harness.engines)."""
        return ENGINES[self.engine]

    @property
    def serving(self) -> Serving:
        """What serving differs in for this runbook's engine: its benchmark client and profiler."""
        return self.engine_profile.serving


_PLACEHOLDERS = {"host", "port", "model"}
# What a multi-node launch needs, filled per task where the engine runs (harness.evidence.launchers):
# the launch's task count and this task's rank, the head task's address and a port for the
# engine's own rendezvous (SGLang --nnodes --node-rank --dist-init-addr, vLLM's --nnodes/--node-rank
# --master-addr/--master-port). The local launcher runs one task: 1, 0, the host, a free port.
DIST_PLACEHOLDERS = {"nnodes", "node_rank", "head_addr", "dist_port"}


class ServerSpec(_Strict):
    command: str = Field(
        description="Launch command template; {host}, {port} and {model} are filled in "
        "(e.g. 'python -m sglang.launch_server --model-path {model} --host {host} --port {port}'), and for a "
        "multi-node launch {nnodes}, {node_rank}, {head_addr} and {dist_port} (see `launcher`)."
    )
    model: str = Field(description="Model path or name substituted for {model}.")
    served_model_name: str | None = Field(
        default=None, description="Name sent as `model` in API requests; defaults to `model`."
    )
    host: str = Field(default="127.0.0.1", description="Interface the server binds.")
    port: int | None = Field(
        default=None, ge=1, le=65535,
        description="Fixed port; omitted means pick a free one. A fixed port something already listens on is "
        "refused before the server starts (whatever listens there would be measured instead).",
    )
    health_endpoint: str = Field(default="/health", description="GET path that answers 200 when ready.")
    startup_timeout_s: float = Field(
        default=600, gt=0,
        description="Seconds the health check may wait (default 600); a progress line is printed every 10 s. "
        "Set it to what the engine needs: loading weights, graph capture, first-time kernel compilation.",
    )
    shutdown_grace_s: float = Field(
        default=10, ge=0, description="Seconds between SIGTERM to the process group and SIGKILL."
    )
    api: Api = Field(default="completions", description="OpenAI-compatible API the runners use.")
    env: dict[str, str] = Field(default_factory=dict, description="Extra environment for the server only.")
    requires: list[str] = Field(
        default_factory=list,
        description="Python distributions the command needs in harness's environment, as pip requirements "
        "(e.g. 'harness[serve]', 'sglang>=0.5.23'); checked before the server starts: any missing makes the "
        "served checks 'not run' with the pip line that installs them.",
    )

    @field_validator("requires")
    @classmethod
    def _pep508(cls, requires: list[str]) -> list[str]:
        from packaging.requirements import InvalidRequirement, Requirement

        for text in requires:
            try:
                Requirement(text)
            except InvalidRequirement as exc:
                raise ValueError(f"{text!r} is not a pip requirement: {str(exc).splitlines()[0]}") from None
        return requires

    @field_validator("command")
    @classmethod
    def _known_placeholders(cls, command: str) -> str:
        fields = {name for _, name, _, _ in string.Formatter().parse(command) if name is not None}
        unknown = fields - _PLACEHOLDERS - DIST_PLACEHOLDERS
        if unknown:
            raise ValueError(f"unknown placeholder(s) {sorted(unknown)}; use {{host}}, {{port}}, {{model}}, "
                             f"{{nnodes}}, {{node_rank}}, {{head_addr}}, {{dist_port}}")
        if "port" not in fields:
            raise ValueError("the command must contain {port} so the harness can choose the port")
        return command

    @field_validator("health_endpoint")
    @classmethod
    def _absolute_path(cls, endpoint: str) -> str:
        if not endpoint.startswith("/"):
            raise ValueError("must start with '/'")
        return endpoint

    @property
    def model_name(self) -> str:
        return self.served_model_name or self.model


class LocalLauncher(_Strict):
    """The engine runs on this machine, as a process group of the harness (the default)."""

    kind: Literal["local"] = "local"


class SlurmLauncher(_Strict):
    """The engine runs as a Slurm batch job (harness.evidence.launchers.SlurmLaunch): one engine
    process per task, `nodes` x `ntasks_per_node` tasks, the head task's node answering health
    checks and the evaluation. Logs and traces are written where the job runs, so the evidence
    directory must be on a filesystem the nodes share."""

    kind: Literal["slurm"]
    partition: str | None = Field(default=None, description="sbatch --partition (default: the cluster's).")
    nodes: int = Field(default=1, ge=1, description="sbatch --nodes.")
    ntasks_per_node: int = Field(
        default=1, ge=1, description="sbatch --ntasks-per-node: engine processes per node ({nnodes} counts tasks)."
    )
    gres: str | None = Field(default=None, description="sbatch --gres, the accelerators per node, e.g. 'gpu:8'.")
    time: str | None = Field(default=None, description="sbatch --time, e.g. '02:00:00' (the job's time limit).")
    account: str | None = Field(default=None, description="sbatch --account.")
    sbatch_options: list[str] = Field(
        default_factory=list, description="Further sbatch options, verbatim (e.g. ['--exclusive', '--qos=high'])."
    )
    pending_timeout_s: float = Field(
        default=1800, gt=0,
        description="Seconds the job may wait in the queue before the step gives up (`not run`); a progress "
        "line is printed every 10 s. The engine's server.startup_timeout_s counts from when it runs. A pending "
        "reason no wait clears (PartitionDown, InvalidAccount, a held job, ...) ends the step at once.",
    )
    gpus_per_task: int | None = Field(
        default=None, ge=1, description="sbatch --gpus-per-task: the GPUs each engine task (rank) gets."
    )
    gpu_bind: str | None = Field(
        default=None, description="sbatch --gpu-bind, e.g. 'single:1' or 'closest': which of the job's GPUs each "
        "task sees (Slurm sets its CUDA_VISIBLE_DEVICES)."
    )
    head_interface: str | None = Field(
        default=None, pattern=r"^[A-Za-z0-9_.:-]{1,15}$",
        description="The network interface whose address {head_addr} is, resolved on the job's "
        "first node when the job starts (e.g. 'ib0' for InfiniBand); default: the node's NodeAddr."
    )
    requeue: bool = Field(
        default=False, description="Let Slurm requeue the job (sbatch --requeue: a node failure or preemption "
        "puts it back in the queue) and wait for it to run again while its engine is not yet healthy. Default "
        "--no-requeue. Either way, a job restarted after its engine was healthy ends the step `not run`: a "
        "restarted engine is never measured as the one started.",
    )

    @field_validator("sbatch_options")
    @classmethod
    def _not_the_comment(cls, options: list[str]) -> list[str]:
        # sbatch takes any unambiguous prefix of a long option (`--comm=x`); the comment is
        # harness's proof the job is its own, so a sweep can cancel it after a killed harness.
        for option in options:
            name = option.split("=", 1)[0]
            if len(name) >= len("--comm") and "--comment".startswith(name):
                raise ValueError(f"{option!r}: the job's --comment is harness's own (its proof the job is "
                                 f"harness's, so it can be cancelled after a killed harness); remove it")
        return options


Launcher = Annotated[LocalLauncher | SlurmLauncher, Field(discriminator="kind")]


class SmokeSpec(_Strict):
    prompts: list[str] = Field(
        default_factory=lambda: [
            "The capital of France is",
            "Write one sentence about the sea.",
            "1, 2, 3, 4,",
        ],
        min_length=1,
        description="Prompts that must each produce a non-empty completion.",
    )
    max_tokens: int = Field(default=32, ge=1, description="Tokens to generate per prompt.")
    determinism: bool = Field(
        default=True, description="Send each prompt twice at temperature 0 and require equal text."
    )
    streaming: bool = Field(
        default=True, description="Also stream the first prompt (SSE) and require the same text."
    )
    request_timeout_s: float = Field(default=120, gt=0, description="Per-request timeout.")


class Baseline(_Strict):
    """What a suite is compared against: per-sample results allow a paired test on the same
    questions; an aggregate score with its sample size allows only an unpaired bound."""

    samples: RunbookPath | None = Field(
        default=None,
        description="Per-sample results (lm-eval samples JSONL, one row per question with doc_id "
        "and the metric), enabling the paired gate.",
    )
    score: float | None = Field(default=None, ge=0, le=1, description="Aggregate baseline score (0-1).")
    n: int | None = Field(default=None, ge=1, description="Number of questions behind `score`.")
    source: str | None = Field(default=None, description="Where the baseline came from (run, date, machine).")

    @model_validator(mode="after")
    def _enough_to_compare(self) -> Baseline:
        if self.samples is None and self.score is None:
            raise ValueError("give `samples` (per-sample file) or `score` with `n`")
        if self.score is not None and self.n is None:
            raise ValueError("`score` needs `n`, the number of questions it was measured on")
        return self


class AccuracySuite(_Strict):
    name: str = Field(description="Suite name used in evidence paths and reports.")
    task: str = Field(description="lm-eval task name, e.g. 'gsm8k' or 'longbench_hotpotqa'.")
    num_fewshot: int | None = Field(default=None, ge=0, description="Few-shot examples; task default if omitted.")
    limit: int | None = Field(default=None, ge=1, description="Evaluate only the first N questions.")
    api: Api | None = Field(default=None, description="completions or chat; defaults to server.api.")
    metric: str | None = Field(
        default=None,
        description="lm-eval metric key gated on, e.g. 'exact_match,strict-match'; "
        "defaults to the task's first metric.",
    )
    data_files: dict[str, RunbookPath] = Field(
        default_factory=dict,
        description="Local data per split (e.g. test/train JSONL) replacing the hub dataset, "
        "so the task runs offline.",
    )
    gen_kwargs: dict[str, Any] = Field(
        default_factory=dict, description="Generation overrides passed to lm-eval (e.g. max_gen_toks)."
    )
    num_concurrent: int = Field(default=1, ge=1, description="Parallel requests lm-eval sends.")
    baseline: Baseline | None = Field(default=None, description="Reference results; no baseline means no gate.")
    reference: str | None = Field(
        default=None,
        description="A server of the runbook's `references:` evaluated in the same run; its per-question "
        "results are the paired baseline (when the suite has no recorded `baseline`).",
    )
    gate: Literal["paired", "unpaired", "auto"] = Field(
        default="auto",
        description="paired (McNemar on the same questions), unpaired (bound against an aggregate), "
        "or auto: paired when the baseline has per-sample results.",
    )
    margin: float = Field(
        default=0.02, ge=0, lt=1,
        description="Non-inferiority margin, absolute (0.02 = 2 points); 0 with a paired gate is the exact "
        "McNemar test (no drop at all).",
    )
    alpha: float = Field(default=0.05, gt=0, lt=0.5, description="Error rate of the gate.")
    sequential: bool = Field(
        default=False,
        description="Evaluate in chunks and stop once the gate is decided (group-sequential).",
    )

    @model_validator(mode="after")
    def _paired_needs_samples(self) -> AccuracySuite:
        if self.gate == "paired" and self.baseline is not None and self.baseline.samples is None:
            raise ValueError("gate 'paired' needs baseline.samples (per-sample results)")
        return self


class PerformanceSuite(_Strict):
    name: str = Field(description="Suite name used in evidence paths and reports.")
    backend: str | None = Field(
        default=None, description="The benchmark client's --backend (default: the engine's, sglang-oai / vllm)."
    )
    dataset_name: str | None = Field(
        default=None, description="--dataset-name (default: the engine's random tokens, random-ids / random)."
    )
    num_prompts: int = Field(default=200, ge=1, description="--num-prompts.")
    random_input_len: int | None = Field(default=None, ge=1, description="--random-input-len.")
    random_output_len: int | None = Field(default=None, ge=1, description="--random-output-len.")
    random_range_ratio: float | None = Field(default=None, ge=0, le=1, description="--random-range-ratio.")
    request_rate: float | None = Field(default=None, gt=0, description="--request-rate (omitted: all at once).")
    max_concurrency: int | None = Field(default=None, ge=1, description="--max-concurrency.")
    seed: int = Field(default=1, description="--seed, so repetitions send the same requests.")
    extra_args: list[str] = Field(default_factory=list, description="Further benchmark client arguments, verbatim.")
    repetitions: int = Field(default=3, ge=1, description="Runs per measurement; the spread is the noise.")
    baseline: RunbookPath | None = Field(
        default=None, description="bench_serving JSONL results of the baseline (one line per repetition)."
    )
    tokenizer: RunbookPath | None = Field(
        default=None,
        description="Local tokenizer directory for bench_serving's --tokenizer (random-ids needs one; "
        "without it bench_serving looks the model name up on the hub).",
    )
    tolerance: float = Field(
        default=0.05, ge=0, lt=1,
        description="Relative slowdown accepted on top of the measured noise (0.05 = 5 %).",
    )
    reference: str | None = Field(
        default=None,
        description="A server of the runbook's `references:` measured in the same run: repetitions "
        "alternate, counterbalanced (candidate reference, reference candidate, …), and each request is "
        "compared with the same request on the reference (harness.stats.performance.compare_paired_requests). "
        "Takes the place of `baseline`.",
    )


class ProfilingSpec(_Strict):
    start_endpoint: str = Field(default="/start_profile", description="POST path that starts the profiler.")
    stop_endpoint: str = Field(default="/stop_profile", description="POST path that stops and writes traces.")
    trace_dir: RunbookPath | None = Field(
        default=None,
        description="Where the server writes traces; default: the run's evidence directory. SGLang gets it "
        "in /start_profile's body; vLLM when it starts (--profiler-config, or VLLM_TORCH_PROFILER_DIR before "
        "0.12), added by the harness unless the server command or env already sets it.",
    )
    num_steps: int | None = Field(
        default=5, ge=1, description="Forward steps to record; omitted: until the stop endpoint."
    )
    activities: list[str] = Field(default_factory=lambda: ["CPU", "GPU"], description="Profiler activities.")
    workload: str | None = Field(
        default=None, description="Performance suite whose requests run while profiling."
    )
    command: str | None = Field(
        default=None,
        description="A command that writes torch-profiler Chrome traces into {out} while the workload "
        "runs, instead of the server's profiling endpoints (e.g. a profiled run of the model's module "
        "stack, or a device tool's exporter). Run from the runbook's directory with the runbook's env.",
    )
    reference_command: str | None = Field(
        default=None,
        description="Like `command`, for the reference (e.g. upstream on the reference device): the "
        "performance step diffs the two traces.",
    )
    naming: dict[str, list[str]] = Field(
        default_factory=dict,
        description="Overrides of harness.evidence.traces.TraceNaming for this device's event names "
        "(e.g. device_categories: [cpu_op] when the device is the CPU).",
    )
    timeout_s: float = Field(default=600, gt=0, description="How long a trace command may run.")

    @field_validator("command", "reference_command")
    @classmethod
    def _writes_into_out(cls, command: str | None) -> str | None:
        if command is not None and "{out}" not in command:
            raise ValueError("the command must contain {out}, the directory the traces are written to")
        return command

    @field_validator("naming")
    @classmethod
    def _valid_naming(cls, naming: dict[str, list[str]]) -> dict[str, list[str]]:
        from harness.evidence.traces import TraceNaming  # pandas: only when a runbook overrides names

        TraceNaming.model_validate(naming)
        return naming


class FallbackPattern(_Strict):
    name: str = Field(description="Short name of what the pattern detects.")
    regex: str = Field(
        description="Python regex; a named group `op` captures the operator name. Log patterns "
        "match log lines, trace patterns match event names."
    )
    severity: Literal["error", "warning", "info"] = Field(default="error", description="How bad a hit is.")
    source: Literal["log", "trace"] = Field(default="log", description="Scan server logs or trace events.")
    op: str | None = Field(default=None, description="Operator name when the regex has no `op` group.")

    @field_validator("regex")
    @classmethod
    def _compiles(cls, regex: str) -> str:
        try:
            re.compile(regex)
        except re.error as exc:
            raise ValueError(f"invalid regex: {exc}") from None
        return regex


class AgentSpec(_Strict):
    """The porting agent: which OpenAI-compatible endpoint drafts the steps, and its budgets.
    `--llm-base-url` / `--llm-model` and the environment (OPENAI_BASE_URL, HARNESS_LLM_MODEL)
    win over `base_url` / `model` here."""

    base_url: str | None = Field(default=None, description="OpenAI-compatible base URL, e.g. "
                                 "'http://127.0.0.1:30000/v1' (a local SGLang or vLLM server).")
    model: str | None = Field(default=None, description="Model name sent with every request.")
    api_key_env: str = Field(default="OPENAI_API_KEY", description="Environment variable holding the API key "
                             "(never written to the runbook or the run record).")
    max_turns: int = Field(default=30, ge=1, description="Requests per step attempt before it ends `not finished`.")
    max_tokens: int = Field(default=200_000, ge=1, description="Total tokens (the responses' `usage`) per step attempt.")
    max_wall_s: float = Field(default=900, gt=0, description="Wall-clock seconds per step attempt.")
    max_retries: int = Field(default=3, ge=0, description="Retries of a 429 / 5xx / dropped connection, with backoff.")
    request_timeout_s: float = Field(default=120, gt=0, description="Seconds one request may take.")


class GoldenSide(_Strict):
    """Where one side's tensor dumps come from: a command that writes them, or a directory (or
    file) that already holds them."""

    command: str | None = Field(
        default=None,
        description="Command that writes the dumps into {out} (a directory the harness chooses, inside "
        "the evidence); run from the runbook's directory with the runbook's env. A leading `python` is "
        "the harness's interpreter. E.g. 'python -m harness golden capture --factory stack.py:build "
        "--dtype bfloat16 --out {out}'.",
    )
    dumps: RunbookPath | None = Field(
        default=None, description="Existing dumps (a directory of .safetensors/.pt files, or one file)."
    )
    timeout_s: float = Field(default=600, gt=0, description="How long the command may run.")

    @model_validator(mode="after")
    def _one_source(self) -> GoldenSide:
        if (self.command is None) == (self.dumps is None):
            raise ValueError("give exactly one of `command` (writes the dumps into {out}) or `dumps`")
        if self.command is not None and "{out}" not in self.command:
            raise ValueError("the command must contain {out}, the directory the dumps are written to")
        return self


class GoldenTolerance(_Strict):
    pattern: str = Field(description="fnmatch pattern on tensor names (module paths), e.g. '*.mlp*'.")
    atol: float = Field(ge=0, description="Absolute tolerance.")
    rtol: float = Field(ge=0, description="Relative tolerance (of the reference value).")


class GoldenSpec(_Strict):
    """Module/operator outputs of the candidate against golden reference dumps
    (`harness.evidence.golden`): what a device team captures once on the reference and once on
    the device (`harness golden capture`)."""

    reference: GoldenSide = Field(description="The golden side (e.g. the reference GPU, or float32).")
    candidate: GoldenSide = Field(description="The side under test (e.g. the plugin device).")
    atol: float = Field(default=1e-5, ge=0, description="Absolute tolerance where no pattern matches.")
    rtol: float = Field(default=1e-3, ge=0, description="Relative tolerance where no pattern matches.")
    tolerances: list[GoldenTolerance] = Field(
        default_factory=list, description="Per op/module tolerances; the first matching pattern wins."
    )
    expected_dtype_pairs: list[tuple[str, str]] = Field(
        default_factory=list,
        description="(reference, candidate) dtypes that are expected to differ, e.g. [float32, bfloat16]; "
        "any other dtype difference fails.",
    )
    equal_nan: bool = Field(default=False, description="NaN in both sides counts as equal.")
    ops: OpCapture | None = Field(
        default=None,
        description="Per-operator capture for both sides' `harness golden capture` commands (passed as "
        "HARNESS_GOLDEN_OPS), so the first diverging op is named: `modules` (fnmatch on module paths, "
        "default all), `limit` (ops per module call, default 64), `max_elements` (per tensor, default "
        "65536; larger ones are an evenly strided sample). E.g. {modules: ['model.layers.0*'], limit: 32}.",
    )


class Runbook(_Strict):
    name: str = Field(description="Runbook name, e.g. 'plugin-device'.")
    description: str = Field(default="", description="What this runbook validates.")
    environment: Environment
    server: ServerSpec
    smoke: SmokeSpec = Field(default_factory=SmokeSpec)
    accuracy: list[AccuracySuite] = Field(default_factory=list)
    performance: list[PerformanceSuite] = Field(default_factory=list)
    references: dict[str, ServerSpec] = Field(
        default_factory=dict,
        description="Reference servers measured in the same run as the candidate (e.g. the previous plugin "
        "release, or upstream on the reference device), by name; suites name one as `reference:`.",
    )
    profiling: ProfilingSpec | None = None
    golden: GoldenSpec | None = Field(default=None, description="Golden tensor comparison (accuracy step).")
    fallback_patterns: list[FallbackPattern] = Field(default_factory=list)
    recipes: list[RunbookPath] = Field(
        default_factory=list, description="Operator Recipes files (recipes/*.yaml) for the fallback scan."
    )
    agent: AgentSpec | None = Field(default=None, description="The porting agent's endpoint and budgets.")
    launcher: Launcher = Field(
        default_factory=LocalLauncher,
        description="Where the engines run: `local` (this machine, the default) or a mapping with `kind: slurm` "
        "and its sbatch settings. A plain `slurm` takes every default.",
    )
    _source: Path | None = PrivateAttr(default=None)

    @field_validator("launcher", mode="before")
    @classmethod
    def _launcher_by_name(cls, value: Any) -> Any:
        return {"kind": value} if isinstance(value, str) else value

    @field_validator("accuracy", "performance")
    @classmethod
    def _unique_suite_names(cls, suites: list[Any]) -> list[Any]:
        names = [suite.name for suite in suites]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"duplicate suite name(s): {duplicates}")
        return suites

    @model_validator(mode="after")
    def _references_exist(self) -> "Runbook":
        for kind, suites in (("accuracy", self.accuracy), ("performance", self.performance)):
            for suite in suites:
                if suite.reference is not None and suite.reference not in self.references:
                    raise ValueError(f"{kind} suite {suite.name!r}: reference {suite.reference!r} is not in "
                                     f"`references` (known: {sorted(self.references)})")
        return self

    @field_validator("profiling")
    @classmethod
    def _workload_is_a_performance_suite(cls, profiling: ProfilingSpec | None,
                                         info: ValidationInfo) -> ProfilingSpec | None:
        suites = {s.name for s in info.data.get("performance", [])}
        if profiling and profiling.workload and profiling.workload not in suites:
            raise ValueError(f"workload {profiling.workload!r} is not a performance suite "
                             f"(known: {sorted(suites)})")
        return profiling

    @property
    def source(self) -> Path | None:
        """The file this runbook was loaded from."""
        return self._source

    def accuracy_api(self, suite: AccuracySuite) -> Api:
        return suite.api or self.server.api


# --------------------------------------------------------------------------- loading


def load_runbook(path: str | Path, base_dir: Path | None = None) -> Runbook:
    """Parse and validate a runbook; any problem is a HarnessError `file:line: field: message`.
    Relative paths inside it are resolved against `base_dir` (default: its directory)."""
    path = Path(path)
    base = (base_dir or path.parent).resolve()
    runbook = load_yaml_model(path, Runbook, what="runbook", context={"base_dir": base},
                              shape="a runbook must be a mapping of sections (environment, server, ...)")
    runbook._source = path
    return runbook


# --------------------------------------------------------------------------- used for a run

# The mark `harness runbook init` writes into every value a person must fill in
# (templates/runbook.yaml.j2 renders this constant): the word TODO, in capitals and on its own
# (`device: TODO`, `model: /models/TODO`; not `TODOS` or `todo`). One rule, whatever the key.
PLACEHOLDER = "TODO"
_PLACEHOLDER_WORD = re.compile(rf"(?<![A-Za-z0-9_]){PLACEHOLDER}(?![A-Za-z0-9_])")


def refuse_placeholders(path: str | Path) -> None:
    """YamlError `file:line: FIELD is still the template's placeholder 'VALUE': fill it in` for
    the first string value that holds PLACEHOLDER (any others named after it, so one edit fixes
    them all): an engine started with `--model-path /models/TODO` fails in a way that reads as
    the plugin's fault.

    Applied only where a runbook is used for a run (`harness run`, `approve` / `resume
    --runbook`), not by `load_runbook`: the template is a valid runbook as written, and
    `harness runbook init` checks it as the steps read it before it lands; its placeholders only
    become wrong once an engine would be started with them."""
    path = Path(path)
    _, root = parse_yaml(read_yaml_text(path, "runbook"), path)
    found = list(_placeholder_values(root, ""))
    if found:
        line, label, value = found[0]
        others = f" (and {', '.join(other for _, other, _ in found[1:])})" if found[1:] else ""
        raise YamlError(path, line, f"{label} is still the template's placeholder {value!r}: fill it in{others}")


def _placeholder_values(node: yaml.Node | None, label: str) -> Iterator[tuple[int, str, str]]:
    """(line, field as written, value) of each string value holding PLACEHOLDER, in document order."""
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            name = str(getattr(key, "value", key))
            yield from _placeholder_values(value, f"{label}.{name}" if label else name)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            yield from _placeholder_values(item, f"{label}[{index}]")
    elif isinstance(node, yaml.ScalarNode) and node.tag == "tag:yaml.org,2002:str" and _PLACEHOLDER_WORD.search(node.value):
        yield node.start_mark.line + 1, label or "(top level)", node.value.strip()


def release_mismatch(runbook: Runbook, upstream: str) -> str | None:
    """A line naming both releases when the run's target `upstream` is a release spec of the
    runbook's engine (`sglang==0.5.23`) other than the runbook's `environment.engine_version`,
    else None (also for a PATH or git target, whose spec names no release). The reports name
    engine_version as the release measured, and a runbook written for the plugin's old release
    (`harness runbook init` defaults to it) is easily attached to a port to the new one; a
    warning, not a refusal, as serving the old release can be what was meant."""
    from packaging.version import InvalidVersion, Version

    environment = runbook.environment
    distribution = environment.engine_profile.distribution
    target = re.fullmatch(rf"{re.escape(distribution)}\s*==\s*(\S+)", upstream.strip())
    if target is None:
        return None
    try:
        same = Version(target[1]) == Version(environment.engine_version)
    except InvalidVersion:
        same = target[1] == environment.engine_version
    if same:
        return None
    where = runbook.source or "the runbook"
    return (f"{where} is for {environment.engine_profile.display} {environment.engine_version} (environment.engine_version), "
            f"but the run targets {distribution}=={target[1]}: the reports name {environment.engine_version} as the release "
            f"measured; if the server runs {target[1]}, set engine_version (harness runbook init --engine-version {target[1]})")
