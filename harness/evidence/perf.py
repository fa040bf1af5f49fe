"""Performance evidence: `sglang.bench_serving`, repeated, compared with a baseline against the
measured noise.

    result = run_performance(suite, base_url, evidence_dir / "perf", tokenizer=tokenizer_dir)
    result.checks  # performance.<suite>.run, then one check per gated metric vs the baseline

Each repetition is one bench_serving subprocess (`python -m harness.evidence.perf <args>`, which
is `python -m sglang.bench_serving <args>` plus the torchvision fallback below) with the runbook
suite's arguments and `--output-file rep-N.jsonl`; its JSON line is kept verbatim. `results.jsonl` collects one
line per repetition — the file a later run names as its `baseline`. `summary.json` holds the
per-metric spread and the comparisons, `command.json` the exact command lines.

The comparison is a non-inferiority test on the ratio candidate/baseline, on log values with
Welch's t (unequal variances, few repetitions): `failed` when even the most favourable end of the
interval is beyond the suite's tolerance, `passed` when the least favourable end is within it,
`inconclusive` otherwise — and always with a single repetition on either side, since then the
noise is unknown.

Installing bench_serving without SGLang's CUDA stack: `pip install --no-deps sglang==0.5.23`
plus the light packages its import chain needs (`BENCH_INSTALL`). That chain also reaches
`torchvision` (sglang's model-config modules import it at top level), and PyPI's torchvision
links libtorch_cuda, so it cannot load beside a CPU torch. `python -m harness.evidence.perf`
therefore runs bench_serving with a placeholder `torchvision` for sglang's own imports only when
the real one does not import; bench_serving never calls torchvision for text datasets, and any
call into the placeholder raises.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import json
import math
import os
import shlex
import signal
import subprocess
import sys
import time
import types
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

import harness
from harness.errors import HarnessError
from harness.evidence.checks import Check, CheckStatus
from harness.evidence.runbook import PerformanceSuite

# Import name -> pip requirement for what `python -m sglang.bench_serving` imports (sglang 0.5.23),
# pinned where sglang pins them. torch itself must already be there (the CPU wheel will do).
BENCH_IMPORTS: dict[str, str] = {
    "sglang": "sglang==0.5.23",
    "aiohttp": "aiohttp",
    "msgspec": "msgspec",
    "orjson": "orjson",
    "requests": "requests",
    "tqdm": "tqdm",
    "transformers": "transformers",
    "psutil": "psutil",
    "pybase64": "pybase64",
    "triton": "triton",
    "PIL": "pillow",
    "starlette": "starlette",
    "zmq": "pyzmq",
    "IPython": "ipython",
    "datasets": "datasets",
    "tvm_ffi": "apache-tvm-ffi==0.1.11",
    "sentencepiece": "sentencepiece==0.2.1",
    "compressed_tensors": "compressed-tensors==0.18.0",
    "gguf": "gguf",
}
BENCH_INSTALL = (
    "pip install --no-deps sglang==0.5.23 && pip install "
    + " ".join(req for name, req in BENCH_IMPORTS.items() if name != "sglang")
    + " (with torch==2.13.0 already installed)"
)


class Metric(BaseModel):
    key: str  # field of bench_serving's JSON line
    label: str
    unit: str
    higher_is_better: bool


# What a performance verdict is made of; E2E latency and means are kept in the raw results.
METRICS: list[Metric] = [
    Metric(key="output_throughput", label="output throughput", unit="tok/s", higher_is_better=True),
    Metric(key="total_throughput", label="total throughput", unit="tok/s", higher_is_better=True),
    Metric(key="request_throughput", label="request throughput", unit="req/s", higher_is_better=True),
    Metric(key="median_ttft_ms", label="TTFT median", unit="ms", higher_is_better=False),
    Metric(key="p99_ttft_ms", label="TTFT p99", unit="ms", higher_is_better=False),
    Metric(key="median_tpot_ms", label="TPOT median", unit="ms", higher_is_better=False),
    Metric(key="p99_tpot_ms", label="TPOT p99", unit="ms", higher_is_better=False),
    Metric(key="median_itl_ms", label="ITL median", unit="ms", higher_is_better=False),
    Metric(key="p99_itl_ms", label="ITL p99", unit="ms", higher_is_better=False),
]


class Spread(BaseModel):
    """One metric across repetitions."""

    values: list[float]
    mean: float
    median: float
    stdev: float | None = Field(description="Sample standard deviation; None with one repetition.")
    cv: float | None = Field(description="stdev / mean: the relative noise.")
    min: float
    max: float


class Comparison(BaseModel):
    metric: str
    baseline: Spread
    candidate: Spread
    ratio: float = Field(description="Geometric-mean ratio candidate / baseline.")
    ratio_low: float | None = Field(description="Lower confidence bound of the ratio.")
    ratio_high: float | None = Field(description="Upper confidence bound of the ratio.")
    confidence: float = Field(description="Two-sided level of [ratio_low, ratio_high].")
    limit: float = Field(description="Worst acceptable ratio: 1 - tolerance (throughput) or 1 + tolerance (latency).")
    repetitions_needed: int | None = Field(
        default=None, description="Repetitions per side that would likely decide an inconclusive result."
    )


class PerfResult(BaseModel):
    suite: str
    evidence_dir: str
    command: list[str] = Field(default_factory=list, description="Command of the first repetition.")
    runs: list[dict[str, Any]] = Field(default_factory=list, description="bench_serving's JSON line per repetition.")
    spread: dict[str, Spread] = Field(default_factory=dict)
    comparisons: list[Comparison] = Field(default_factory=list)
    checks: list[Check] = Field(default_factory=list)


# --------------------------------------------------------------------------- running


def missing_bench_packages(python: str = sys.executable, env: dict[str, str] | None = None) -> list[str]:
    """pip requirements for bench_serving that `python` cannot find (checked without importing)."""
    probe = (
        "import importlib.util, json, sys\n"
        f"names = {list(BENCH_IMPORTS)!r}\n"
        "print(json.dumps([n for n in names if importlib.util.find_spec(n) is None]))"
    )
    try:
        done = subprocess.run([python, "-c", probe], capture_output=True, text=True, timeout=60,
                              env=env, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise HarnessError(f"cannot run the Python interpreter {python} for bench_serving: {exc}") from None
    if done.returncode != 0:
        raise HarnessError(f"{python} failed to check for sglang: {done.stderr.strip().splitlines()[-1:]}")
    return [BENCH_IMPORTS[name] for name in json.loads(done.stdout)]


def bench_arguments(suite: PerformanceSuite, base_url: str, output_file: Path, *,
                    model: str | None = None, tokenizer: str | None = None) -> list[str]:
    """bench_serving's arguments for one repetition of the suite."""
    args = ["--backend", suite.backend, "--base-url", base_url.rstrip("/"),
            "--dataset-name", suite.dataset_name, "--num-prompts", str(suite.num_prompts),
            "--seed", str(suite.seed), "--output-file", str(output_file), "--disable-tqdm"]
    optional = {
        "--random-input-len": suite.random_input_len,
        "--random-output-len": suite.random_output_len,
        "--random-range-ratio": suite.random_range_ratio,
        "--request-rate": suite.request_rate,
        "--max-concurrency": suite.max_concurrency,
        "--model": model,
        "--tokenizer": tokenizer,
    }
    for flag, value in optional.items():
        if value is not None and flag not in suite.extra_args:  # the runbook's own flags win
            args += [flag, str(value)]
    return args + list(suite.extra_args)


def run_performance(suite: PerformanceSuite, base_url: str, evidence_dir: Path, *,
                    model: str | None = None, tokenizer: str | None = None,
                    python: str = sys.executable, env: dict[str, str] | None = None,
                    timeout_s: float = 3600) -> PerfResult:
    """Run the suite's repetitions against a served model, write the evidence, and judge it.

    `tokenizer` is a local tokenizer directory or file for bench_serving (random-ids needs one;
    without it bench_serving resolves the model name on the hub). `env` replaces the
    subprocess environment (default: this process's).
    """
    evidence_dir = Path(evidence_dir)
    evidence_dir.mkdir(parents=True, exist_ok=True)
    tokenizer = tokenizer or (str(suite.tokenizer) if suite.tokenizer else None)
    result = PerfResult(suite=suite.name, evidence_dir=str(evidence_dir))
    run_env = dict(os.environ if env is None else env)
    missing = missing_bench_packages(python, run_env)
    if missing:
        reason = (f"sglang is not installed (missing {', '.join(missing)}); install: {BENCH_INSTALL}"
                  if "sglang==0.5.23" in missing else
                  f"bench_serving's dependencies are missing ({', '.join(missing)}); install: {BENCH_INSTALL}")
        result.checks.append(Check(name=f"performance.{suite.name}.run", status=CheckStatus.not_run,
                                   reason=reason))
        _write_summary(result, evidence_dir)
        return result

    # The launcher lives in this package; make it importable whatever the interpreter's cwd.
    package_root = str(Path(harness.__file__).resolve().parents[1])
    run_env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, run_env.get("PYTHONPATH")]))
    commands: list[str] = []
    for repetition in range(1, suite.repetitions + 1):
        output_file = evidence_dir / f"rep-{repetition}.jsonl"
        command = [python, "-m", "harness.evidence.perf",
                   *bench_arguments(suite, base_url, output_file, model=model, tokenizer=tokenizer)]
        commands.append(shlex.join(command))
        result.command = result.command or command
        record, failure = _repetition(command, output_file, suite.num_prompts, run_env, timeout_s)
        if failure:
            log = output_file.with_suffix(".log")
            result.checks.append(Check(
                name=f"performance.{suite.name}.run", status=CheckStatus.failed,
                reason=f"repetition {repetition}: {failure}", detail=_tail(log),
                evidence=[str(log), str(output_file)]))
            _write_command(evidence_dir, commands, run_env, env)
            _write_summary(result, evidence_dir)
            return result
        result.runs.append(record)
    _write_command(evidence_dir, commands, run_env, env)
    results_file = evidence_dir / "results.jsonl"
    results_file.write_text("".join(json.dumps(run) + "\n" for run in result.runs))

    result.spread = summarize(result.runs)
    evidence = [str(results_file), str(evidence_dir / "command.json")]
    result.checks.append(Check(
        name=f"performance.{suite.name}.run", status=CheckStatus.passed, evidence=evidence,
        metrics={key: spread.mean for key, spread in result.spread.items()} | {"repetitions": len(result.runs)}))
    if suite.baseline is None:
        result.checks.append(Check(name=f"performance.{suite.name}.baseline", status=CheckStatus.not_run,
                                   reason="the runbook suite names no baseline results file"))
    else:
        try:
            baseline_runs = load_bench_results(suite.baseline)
        except HarnessError as exc:
            result.checks.append(Check(name=f"performance.{suite.name}.baseline",
                                       status=CheckStatus.not_run, reason=str(exc)))
        else:
            comparisons, checks = compare_runs(result.runs, baseline_runs, tolerance=suite.tolerance,
                                               prefix=f"performance.{suite.name}",
                                               evidence=[*evidence, str(suite.baseline)])
            result.comparisons, result.checks = comparisons, result.checks + checks
    _write_summary(result, evidence_dir)
    return result


def _repetition(command: list[str], output_file: Path, num_prompts: int, env: dict[str, str],
                timeout_s: float) -> tuple[dict[str, Any] | None, str | None]:
    """One bench_serving run: its JSON record, or why there is none / why it does not count."""
    output_file.unlink(missing_ok=True)  # bench_serving appends
    log_path = output_file.with_suffix(".log")
    failure = _run_once(command, log_path, env, timeout_s)
    if failure:
        return None, f"{failure}: {_last_line(log_path)}"
    if not output_file.is_file():
        return None, f"bench_serving wrote no result to {output_file.name}"
    try:
        record = load_bench_results(output_file)[-1]
    except HarnessError as exc:
        return None, str(exc)
    completed = int(record.get("completed", 0))
    if completed < num_prompts:
        return None, f"{num_prompts - completed} of {num_prompts} requests failed"
    return record, None


def _run_once(command: list[str], log_path: Path, env: dict[str, str], timeout_s: float) -> str | None:
    """Run one bench_serving process in its own process group, output to `log_path`; the failure, if any."""
    with log_path.open("wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env,
                                   start_new_session=True)
        try:
            code = process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            _kill_group(process)
            return f"bench_serving did not finish within {timeout_s:g} s"
        except BaseException:  # Ctrl-C must not leave bench_serving running
            _kill_group(process)
            raise
    return None if code == 0 else f"bench_serving exited with code {code}"


def _kill_group(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()


def _last_line(path: Path, limit: int = 300) -> str:
    lines = [line for line in _tail(path, 5).splitlines() if line.strip()]
    return lines[-1][:limit] if lines else "(no output)"


def _tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def _write_command(evidence_dir: Path, commands: list[str], run_env: dict[str, str],
                   env: dict[str, str] | None) -> None:
    overrides = {k: v for k, v in run_env.items() if os.environ.get(k) != v} if env is not None else {}
    (evidence_dir / "command.json").write_text(json.dumps({
        "commands": commands,
        "env_overrides": overrides,
        "PYTHONPATH": run_env.get("PYTHONPATH"),
        "note": "harness.evidence.perf runs `python -m sglang.bench_serving` with these arguments; "
                "see the log for whether torchvision had to be replaced by a placeholder.",
    }, indent=2) + "\n")


def _write_summary(result: PerfResult, evidence_dir: Path) -> None:
    summary = result.model_dump(mode="json", exclude={"runs"})
    (evidence_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")


# --------------------------------------------------------------------------- results


def load_bench_results(path: str | Path) -> list[dict[str, Any]]:
    """bench_serving JSON lines (one per run); a missing or malformed file is a HarnessError."""
    path = Path(path)
    try:
        lines = path.read_text().splitlines()
    except OSError as exc:
        raise HarnessError(f"cannot read bench_serving results {path}: {exc.strerror or exc}") from None
    records = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise HarnessError(f"{path}:{number}: not a JSON line: {exc.msg}") from None
        missing = [m.key for m in METRICS if not isinstance(record.get(m.key), (int, float))]
        if not isinstance(record, dict) or missing:
            raise HarnessError(f"{path}:{number}: not a bench_serving result (missing {', '.join(missing)})")
        records.append(record)
    if not records:
        raise HarnessError(f"{path}: no bench_serving results in the file")
    return records


def spread_of(values: list[float]) -> Spread:
    n = len(values)
    mean = sum(values) / n
    stdev = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1)) if n > 1 else None
    ordered = sorted(values)
    median = (ordered[(n - 1) // 2] + ordered[n // 2]) / 2
    cv = stdev / mean if stdev is not None and mean else None
    return Spread(values=values, mean=mean, median=median, stdev=stdev, cv=cv, min=ordered[0], max=ordered[-1])


def summarize(runs: list[dict[str, Any]]) -> dict[str, Spread]:
    return {m.key: spread_of([float(run[m.key]) for run in runs]) for m in METRICS}


def compare_runs(candidate: list[dict[str, Any]], baseline: list[dict[str, Any]], *, tolerance: float,
                 alpha: float = 0.05, prefix: str = "performance",
                 evidence: list[str] | None = None) -> tuple[list[Comparison], list[Check]]:
    """One Comparison and one Check per metric in METRICS."""
    comparisons, checks = [], []
    for metric in METRICS:
        comparison, check = compare_metric(
            metric, [float(r[metric.key]) for r in candidate], [float(r[metric.key]) for r in baseline],
            tolerance=tolerance, alpha=alpha)
        check.name = f"{prefix}.{metric.key}"
        check.evidence = list(evidence or [])
        comparisons.append(comparison)
        checks.append(check)
    return comparisons, checks


def compare_metric(metric: Metric, candidate: list[float], baseline: list[float], *,
                   tolerance: float, alpha: float = 0.05) -> tuple[Comparison, Check]:
    """Non-inferiority of candidate vs baseline for one metric, on the log scale.

    The ratio candidate/baseline gets a two-sided (1 - 2·alpha) Welch interval, i.e. one-sided
    alpha at each end. Throughput passes when the lower end is ≥ 1 - tolerance and fails when the
    upper end is below it; latency mirrors that with 1 + tolerance.
    """
    limit = 1 - tolerance if metric.higher_is_better else 1 + tolerance
    base, cand = spread_of(baseline), spread_of(candidate)
    if min(candidate + baseline) <= 0:
        comparison = Comparison(metric=metric.key, baseline=base, candidate=cand, ratio=math.nan,
                                ratio_low=None, ratio_high=None, confidence=1 - 2 * alpha, limit=limit)
        return comparison, Check(name=metric.key, status=CheckStatus.inconclusive,
                                 reason=f"{metric.label}: zero or negative values cannot be compared as a ratio")
    log_c, log_b = [math.log(v) for v in candidate], [math.log(v) for v in baseline]
    estimate = _mean(log_c) - _mean(log_b)
    ratio = math.exp(estimate)
    comparison = Comparison(metric=metric.key, baseline=base, candidate=cand, ratio=ratio,
                            ratio_low=None, ratio_high=None, confidence=1 - 2 * alpha, limit=limit)
    change = (f"{metric.label} {_percent(ratio - 1)} (geometric means {_fmt(math.exp(_mean(log_c)))} vs "
              f"{_fmt(math.exp(_mean(log_b)))} {metric.unit})")
    metrics = {"ratio": ratio, "candidate_mean": cand.mean, "baseline_mean": base.mean,
               "candidate_cv": cand.cv, "baseline_cv": base.cv, "limit": limit}
    if len(candidate) < 2 or len(baseline) < 2:
        single = "candidate" if len(candidate) < 2 else "baseline"
        return comparison, Check(
            name=metric.key, status=CheckStatus.inconclusive, metrics=metrics,
            reason=f"{change}; noise unknown: the {single} has a single repetition (need 2 or more per side)")

    var_c, var_b = _variance(log_c), _variance(log_b)
    se = math.sqrt(var_c / len(log_c) + var_b / len(log_b))
    df = _welch_df(var_c, len(log_c), var_b, len(log_b))
    margin = _t_quantile(1 - alpha, df) * se if se > 0 else 0.0
    comparison.ratio_low, comparison.ratio_high = math.exp(estimate - margin), math.exp(estimate + margin)
    metrics |= {"ratio_low": comparison.ratio_low, "ratio_high": comparison.ratio_high, "welch_df": df}
    interval = (f"{100 * (1 - 2 * alpha):.0f}% CI of the ratio [{comparison.ratio_low:.3f}, "
                f"{comparison.ratio_high:.3f}], limit {limit:.3f}")
    worst, best = ((comparison.ratio_low, comparison.ratio_high) if metric.higher_is_better
                   else (comparison.ratio_high, comparison.ratio_low))
    beyond = (lambda r: r < limit) if metric.higher_is_better else (lambda r: r > limit)
    if beyond(best):
        return comparison, Check(name=metric.key, status=CheckStatus.failed, metrics=metrics,
                                 reason=f"{change}: worse than the {tolerance:.0%} tolerance beyond the noise; {interval}")
    if not beyond(worst):
        return comparison, Check(name=metric.key, status=CheckStatus.passed, metrics=metrics,
                                 reason=f"{change}: within the {tolerance:.0%} tolerance; {interval}")
    comparison.repetitions_needed = _repetitions_to_decide(estimate, math.log(limit), var_c, var_b, alpha)
    more = (f"; about {comparison.repetitions_needed} repetitions per side would decide it"
            if comparison.repetitions_needed else "; the estimate sits on the limit, more repetitions will not settle it soon")
    metrics["repetitions_needed"] = comparison.repetitions_needed
    return comparison, Check(name=metric.key, status=CheckStatus.inconclusive, metrics=metrics,
                             reason=f"{change}: the noise straddles the {tolerance:.0%} tolerance; {interval}{more}")


def _repetitions_to_decide(estimate: float, log_limit: float, var_c: float, var_b: float,
                           alpha: float, cap: int = 100) -> int | None:
    """Smallest n per side whose one-sided bound would clear the limit if the estimate and the
    variances stay as measured; None when more than `cap` would be needed."""
    distance = abs(estimate - log_limit)
    for n in range(2, cap + 1):
        se = math.sqrt((var_c + var_b) / n)
        df = _welch_df(var_c, n, var_b, n)
        if _t_quantile(1 - alpha, df) * se < distance:
            return n
    return None


def _t_quantile(probability: float, df: float) -> float:
    # Imported here: scipy.stats costs seconds, and every bench_serving launch imports this module.
    from scipy import stats

    return float(stats.t.ppf(probability, df))


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def _variance(values: list[float]) -> float:
    mean = _mean(values)
    return sum((v - mean) ** 2 for v in values) / (len(values) - 1)


def _welch_df(var_a: float, n_a: int, var_b: float, n_b: int) -> float:
    a, b = var_a / n_a, var_b / n_b
    if a + b == 0:
        return float(n_a + n_b - 2)
    return (a + b) ** 2 / (a**2 / (n_a - 1) + b**2 / (n_b - 1))


def _percent(change: float) -> str:
    return f"{change:+.1%}"


def _fmt(value: float) -> str:
    return f"{value:.4g}"


def render_markdown(result: PerfResult) -> str:
    """Spread per metric and, when compared, the verdict per metric — for reports."""
    rows = ["| metric | mean | CV | min | max | vs baseline | verdict |", "|---|---|---|---|---|---|---|"]
    by_metric = {c.metric: c for c in result.comparisons}
    verdicts = {check.name.rsplit(".", 1)[-1]: check.status.value for check in result.checks}
    for metric in METRICS:
        spread = result.spread.get(metric.key)
        if spread is None:
            continue
        comparison = by_metric.get(metric.key)
        versus = (f"{_percent(comparison.ratio - 1)}" + (
            f" [{_percent(comparison.ratio_low - 1)}, {_percent(comparison.ratio_high - 1)}]"
            if comparison.ratio_low is not None else "")) if comparison else "—"
        cv = f"{spread.cv:.1%}" if spread.cv is not None else "n/a"
        rows.append(f"| {metric.label} ({metric.unit}) | {_fmt(spread.mean)} | {cv} | {_fmt(spread.min)} "
                    f"| {_fmt(spread.max)} | {versus} | {verdicts.get(metric.key, '—')} |")
    return "\n".join(rows) + "\n"


# --------------------------------------------------------------------------- launcher


def _install_torchvision_placeholder() -> None:
    """Make sglang's top-level `import torchvision` work when the real one cannot load.

    Only imports made by sglang modules get the placeholder, so transformers and datasets keep
    seeing torchvision as absent; every call into it raises."""
    class Placeholder:
        def __init__(self, path: str):
            self._path = path

        def __getattr__(self, name: str) -> Any:
            if name.startswith("__"):
                raise AttributeError(name)
            return Placeholder(f"{self._path}.{name}")

        def __call__(self, *args: Any, **kwargs: Any) -> Any:
            raise RuntimeError(f"{self._path} was called, but torchvision is not usable here "
                               "(harness.evidence.perf put a placeholder in its place)")

        def __mro_entries__(self, bases: tuple) -> tuple:
            return (object,)

    class PlaceholderModule(types.ModuleType):
        def __getattr__(self, name: str) -> Any:
            if name.startswith("__"):
                raise AttributeError(name)
            return Placeholder(f"{self.__name__}.{name}")

    import_machinery = ("<frozen", os.path.dirname(importlib.__file__))

    def importer_module() -> str:
        """Name of the module whose import statement (or find_spec call) is being served."""
        frame = sys._getframe(2)
        while frame is not None and frame.f_code.co_filename.startswith(import_machinery):
            frame = frame.f_back
        return frame.f_globals.get("__name__", "") if frame is not None else ""

    class Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
        def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
            if name.split(".")[0] == "torchvision" and importer_module().startswith(("sglang", "torchvision")):
                return importlib.machinery.ModuleSpec(name, self, is_package=True)
            return None

        def create_module(self, spec: Any) -> types.ModuleType:
            return PlaceholderModule(spec.name)

        def exec_module(self, module: types.ModuleType) -> None:
            module.__path__ = []

    # transformers caches whether torchvision exists, some of it while it is imported: have it
    # cache "no" (a None entry in sys.modules makes find_spec answer None), so it never reaches
    # for the placeholder or a broken real one.
    sys.modules["torchvision"] = None
    try:
        from transformers.utils import import_utils

        import_utils.is_torchvision_available()
    finally:
        del sys.modules["torchvision"]
    sys.meta_path.insert(0, Finder())


def _prepare_torchvision() -> str:
    """'real' when torchvision imports, else install the placeholder and say why."""
    if importlib.util.find_spec("torchvision") is not None:
        try:
            import torchvision  # noqa: F401
            return "real"
        except Exception as exc:  # PyPI's CUDA build raises RuntimeError beside a CPU torch
            for name in [n for n in sys.modules if n.split(".")[0] == "torchvision"]:
                del sys.modules[name]
            why = f"torchvision does not import ({type(exc).__name__}: {exc})"
    else:
        why = "torchvision is not installed"
    _install_torchvision_placeholder()
    return why


def main(argv: list[str]) -> None:
    """`python -m harness.evidence.perf <bench_serving args>`: bench_serving, torchvision-proof."""
    import runpy
    import warnings

    torchvision = _prepare_torchvision()
    if torchvision != "real":
        print(f"[harness.evidence.perf] {torchvision}: sglang's imports of it get a placeholder",
              file=sys.stderr, flush=True)
    warnings.filterwarnings("ignore", message=".*sglang.bench_serving.*deprecated", category=FutureWarning)
    sys.argv = ["sglang.bench_serving", *argv]
    started = time.monotonic()
    runpy.run_module("sglang.bench_serving", run_name="__main__", alter_sys=True)
    print(f"[harness.evidence.perf] bench_serving took {time.monotonic() - started:.1f} s, imports included",
          file=sys.stderr, flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
