"""Performance evidence: the engine's serving benchmark (`sglang.bench_serving`, or `vllm bench serve`
for a vLLM runbook: the engine's Serving, harness.engines), repeated against a served model.

    run_performance(suite, base_url, evidence_dir / "perf" / suite.name, tokenizer=tokenizer_dir)

Each repetition is one bench_serving run (`python -m harness.evidence.perf <args>`, which is
`python -m sglang.bench_serving <args>` plus the torchvision fallback below) with the runbook
suite's arguments and `--output-file rep-N.jsonl` (its output in `rep-N.log`); its JSON line is
kept verbatim. All repetitions of a suite run one after the other in one launcher process
(`bench.log`), because importing bench_serving costs ~12 s of CPU, more than a small suite's
requests. `results.jsonl` collects one line per repetition — the file a later run names as its `baseline`;
`baseline.jsonl` is a copy of the suite's baseline; `command.json` holds the exact command
lines; `summary.json` says what happened (measured, failed or not run, with the reason). The
checks are read back from these files (`harness.evidence.performance`), comparing them with
`harness.stats.performance`.

Installing bench_serving without SGLang's CUDA stack: `pip install --no-deps sglang==0.5.23`
plus the `bench` extra of this package (its list is read from the installed package's
metadata). That chain also reaches `torchvision` (sglang's model-config modules import it at
top level), and PyPI's torchvision links libtorch_cuda, so it cannot load beside a CPU torch.
`python -m harness.evidence.perf` (`harness.evidence.bench_launcher`) therefore runs bench_serving
with a placeholder `torchvision` for sglang's own imports only when the real one does not
import; bench_serving never calls torchvision for text datasets, and any call into the
placeholder raises.
"""

from __future__ import annotations

import importlib.metadata
import json
import math
import os
import shlex
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any, Literal

from packaging.requirements import Requirement
from pydantic import BaseModel, Field

import harness
from harness.engines import SGLANG, BenchClient, Serving, result_aliases
from harness.errors import HarnessError, InputError
from harness.evidence.bench_launcher import LAUNCHER_PREFIX, sequence_arguments
from harness.evidence.runbook import PerformanceSuite
from harness.record.processes import ProcessRegistry
from harness.util.files import tail
from harness.util.processes import group_alive, kill_group, marked_env, signal_group

# sglang itself goes in with --no-deps (its full requirements are CUDA-only); the rest is the
# `bench` extra. torch must already be there (the CPU wheel will do).
SGLANG_REQUIREMENT = "sglang==0.5.23"
# bench_serving's output fields the performance step compares (harness.stats.performance.METRICS)
RESULT_FIELDS = ("output_throughput", "total_throughput", "request_throughput", "median_ttft_ms", "p99_ttft_ms",
                 "median_tpot_ms", "p99_tpot_ms", "median_itl_ms", "p99_itl_ms")


def bench_requirements() -> list[str]:
    """sglang plus the `bench` extra's requirements, as declared in this package's metadata.
    HarnessError when the harness is not installed (its metadata is what lists them)."""
    try:
        declared = importlib.metadata.requires("harness") or []
    except importlib.metadata.PackageNotFoundError:
        raise HarnessError("the harness package is not installed (pip install -e .), so its `bench` extra "
                           "cannot be read") from None
    extra = [str(r).split(";")[0].strip() for r in map(Requirement, declared)
             if r.marker is not None and r.marker.evaluate({"extra": "bench"})]
    return [SGLANG_REQUIREMENT, *extra]


def bench_install() -> str:
    """The install line for bench_serving without sglang's CUDA dependencies."""
    return (f"pip install --no-deps {SGLANG_REQUIREMENT} && pip install "
            + " ".join(bench_requirements()[1:]) + " (with torch==2.13.0 already installed)")


class PerfRun(BaseModel):
    """What running one suite produced (`summary.json`)."""

    suite: str
    status: Literal["measured", "failed", "not_run"]
    reason: str | None = None
    detail: str | None = None  # the failing repetition's log tail
    evidence: list[str] = Field(default_factory=list)  # files the status was read from
    command: list[str] = Field(default_factory=list, description="Command of the first repetition.")
    repetitions: int = 0
    baseline: str | None = None  # the evidence copy of the suite's baseline results
    baseline_source: str | None = None  # the suite's baseline as the runbook names it
    tolerance: float
    reference: str | None = None  # the runbook reference server measured in the same run, by name
    reference_results: str | None = None  # its repetitions (reference.jsonl), interleaved with ours


# --------------------------------------------------------------------------- running


def missing_bench_packages(python: str = sys.executable, env: dict[str, str] | None = None) -> list[str]:
    """Requirements of bench_serving whose distributions `python` does not have (checked with
    importlib.metadata in that interpreter, without importing anything)."""
    requirements = bench_requirements()
    names = [Requirement(r).name for r in requirements]
    missing = set(missing_distributions(names, python, env))
    return [req for req, name in zip(requirements, names, strict=True) if name in missing]


def missing_distributions(names: list[str], python: str = sys.executable,
                          env: dict[str, str] | None = None) -> list[str]:
    """The distributions of `names` that `python` does not have (importlib.metadata in that
    interpreter, nothing imported); HarnessError when the interpreter cannot be run."""
    probe = (
        "import importlib.metadata as m, json\n"
        f"names = {names!r}\n"
        "def missing(n):\n"
        "    try:\n"
        "        m.distribution(n)\n"
        "    except m.PackageNotFoundError:\n"
        "        return True\n"
        "    return False\n"
        "print(json.dumps([n for n in names if missing(n)]))"
    )
    try:
        done = subprocess.run([python, "-c", probe], capture_output=True, text=True, timeout=60,
                              env=env, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise HarnessError(f"cannot run the Python interpreter {python} for the benchmark client: {exc}") from None
    if done.returncode != 0:
        raise HarnessError(f"{python} failed to check for {', '.join(names)}: {done.stderr.strip().splitlines()[-1:]}")
    return list(json.loads(done.stdout))


def bench_arguments(suite: PerformanceSuite, base_url: str, output_file: Path, *,
                    model: str | None = None, tokenizer: str | None = None,
                    client: BenchClient = SGLANG.serving.bench) -> list[str]:
    """The benchmark client's arguments for one repetition of the suite (the suite's unset
    backend and dataset are the client's), writing its result to `output_file`."""
    args = ["--backend", suite.backend or client.backend, "--base-url", base_url.rstrip("/"),
            "--dataset-name", suite.dataset_name or client.dataset, "--num-prompts", str(suite.num_prompts),
            "--seed", str(suite.seed), *client.output_args(output_file), "--disable-tqdm"]
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
                    timeout_s: float = 3600, registry: ProcessRegistry | None = None,
                    reference_url: str | None = None, reference_model: str | None = None,
                    engine: Serving = SGLANG.serving, version: str | None = None) -> PerfRun:
    """Run the suite's repetitions against a served model with `engine`'s benchmark client
    (`harness.engines`: SGLang's bench_serving through this module's launcher, all
    repetitions in one process; vLLM's `vllm bench serve`, one process per repetition) and write
    the evidence (see the module docstring); returns what `summary.json` says. A client that is
    not installed is `not_run` with the reason (the engine's `version` named in it), never a number.

    With `reference_url` (the suite's `reference` server, started by the caller) every
    repetition runs on both, interleaved and counterbalanced: A B, B A, A B, … (candidate first in
    odd repetitions, the reference first in even ones, so going first or second favours neither;
    `ref-rep-N.jsonl`, collected in `reference.jsonl`), with the client's per-request details, so the
    comparison has every request's TTFT and inter-token latencies, not only each run's summary.

    `tokenizer` is a local tokenizer directory or file for bench_serving (random-ids needs one;
    without it bench_serving resolves the model name on the hub). `env` replaces the
    subprocess environment (default: this process's). Each repetition may take `timeout_s`.
    `registry` records the bench_serving process in the run's record while it runs.
    """
    evidence_dir = Path(evidence_dir)
    evidence_dir.mkdir(parents=True, exist_ok=True)
    tokenizer = tokenizer or (str(suite.tokenizer) if suite.tokenizer else None)
    run = PerfRun(suite=suite.name, status="measured", tolerance=suite.tolerance)
    if suite.baseline is not None:
        run.baseline_source = str(suite.baseline)
        if Path(suite.baseline).is_file():
            shutil.copyfile(suite.baseline, evidence_dir / "baseline.jsonl")
            run.baseline = "baseline.jsonl"
    run_env = dict(os.environ if env is None else env)
    client = engine.bench
    if not client.sequenced:  # another engine's client: its distribution is the whole requirement
        if missing_distributions([client.distribution], python, run_env):
            run.status, run.reason = "not_run", client.not_installed(version)
            return write_summary(run, evidence_dir)
    elif missing := missing_bench_packages(python, run_env):
        install = bench_install()
        run.status, run.reason = "not_run", (
            f"sglang is not installed (missing {', '.join(missing)}); install: {install}"
            if SGLANG_REQUIREMENT in missing else
            f"bench_serving's dependencies are missing ({', '.join(missing)}); install: {install}")
        return write_summary(run, evidence_dir)

    # The launcher lives in this package; make it importable whatever the interpreter's cwd.
    package_root = str(Path(harness.__file__).resolve().parents[1])
    run_env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, run_env.get("PYTHONPATH")]))
    records: dict[str, list[dict[str, Any]]] = {"rep": [], "ref-rep": []}
    sides = [("rep", base_url, model)]
    if reference_url is not None:
        run.reference = suite.reference
        sides.append(("ref-rep", reference_url, reference_model))
    details = [client.details] if reference_url is not None and client.details not in suite.extra_args else []
    planned: list[tuple[str, int, Path, list[str]]] = []  # interleaved, counterbalanced: A B, B A, A B, ...
    for repetition in range(1, suite.repetitions + 1):
        for prefix, url, served_model in (sides if repetition % 2 else sides[::-1]):
            output_file = evidence_dir / f"{prefix}-{repetition}.jsonl"
            output_file.unlink(missing_ok=True)  # bench_serving appends
            output_file.with_suffix(".log").unlink(missing_ok=True)
            planned.append((prefix, repetition, output_file,
                            [*bench_arguments(suite, url, output_file, model=served_model, tokenizer=tokenizer,
                                              client=client), *details]))
    # Each repetition alone: `python <launcher> <args>`.
    commands = [shlex.join([python, *client.launcher, *args]) for *_, args in planned]
    if client.sequenced:
        # All of them in one process, one after the other, so sglang's imports (~12 s) are paid
        # once, not per repetition.
        run.command = [python, *client.launcher, *sequence_arguments([args for *_, args in planned])]
        launcher_log = evidence_dir / "bench.log"
        stopped = _run_once(run.command, launcher_log, run_env, timeout_s * len(planned), registry, client.display)
    else:  # one process per repetition, its output in `<rep>.log`; the first failure stops the rest
        run.command, stopped = [python, *client.launcher, *planned[0][3]], None
        for *_, output_file, args in planned:
            launcher_log = output_file.with_suffix(".log")
            stopped = _run_once([python, *client.launcher, *args], launcher_log, run_env, timeout_s, registry,
                                client.display)
            if stopped:
                break
    _write_command(evidence_dir, commands, run.command, run_env, env, client)
    for prefix, repetition, output_file, _ in planned:
        record, failure = _repetition_record(output_file, suite.num_prompts, client.display)
        if failure:
            log = output_file.with_suffix(".log")
            side = ("reference " if prefix == "ref-rep" else "candidate ") if reference_url is not None else ""
            if stopped and not log.is_file():  # the launcher itself failed before this repetition
                failure, log = f"{stopped}: {_last_line(launcher_log)}", launcher_log
            run.status, run.reason = "failed", f"{side}repetition {repetition}: {failure}"
            run.detail, run.evidence = "\n".join(tail(log)), [str(log), str(output_file)]
            return write_summary(run, evidence_dir)
        records[prefix].append(record)
    if stopped:  # every repetition wrote its result, yet the process failed (e.g. on exit)
        run.status, run.reason = "failed", f"{stopped}: {_last_line(launcher_log)}"
        run.detail, run.evidence = "\n".join(tail(launcher_log)), [str(launcher_log)]
        return write_summary(run, evidence_dir)
    results_file = evidence_dir / "results.jsonl"
    results_file.write_text("".join(json.dumps(record) + "\n" for record in records["rep"]))
    run.repetitions = len(records["rep"])
    run.evidence = [str(results_file), str(evidence_dir / "command.json")]
    if reference_url is not None:
        (evidence_dir / "reference.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records["ref-rep"]))
        run.reference_results = "reference.jsonl"
        run.evidence.insert(1, str(evidence_dir / "reference.jsonl"))
    return write_summary(run, evidence_dir)


# Per-request samples from bench_serving's --output-details: (key, label, unit, higher is better)
REQUEST_METRICS = (("ttft_ms", "TTFT", "ms", False), ("tpot_ms", "TPOT", "ms", False),
                   ("latency_ms", "E2E latency", "ms", False), ("output_throughput", "output throughput", "tok/s", True))


def request_samples(record: dict[str, Any]) -> dict[str, list[float]] | None:
    """Per-request samples of one bench_serving run written with --output-details, in request
    order (the same prompts in every repetition, given the suite's seed): TTFT (ms), TPOT (ms,
    mean inter-token latency after the first token, as bench_serving defines it), end-to-end
    latency (ms, TTFT + the inter-token latencies) and output throughput (tok/s, output tokens
    over the end-to-end latency). None when the record has no details."""
    ttfts, itls, lens = record.get("ttfts"), record.get("itls"), record.get("output_lens")
    if not isinstance(ttfts, list) or not isinstance(itls, list) or not isinstance(lens, list):
        return None
    samples: dict[str, list[float]] = {key: [] for key, *_ in REQUEST_METRICS}
    for ttft, gaps, produced in zip(ttfts, itls, lens):
        latency = float(ttft) + sum(gaps)
        samples["ttft_ms"].append(1000 * float(ttft))
        samples["tpot_ms"].append(1000 * sum(gaps) / (produced - 1) if produced > 1 else math.nan)
        samples["latency_ms"].append(1000 * latency)
        samples["output_throughput"].append(produced / latency if latency > 0 else math.nan)
    return samples


def _repetition_record(output_file: Path, num_prompts: int,
                       client: str = "bench_serving") -> tuple[dict[str, Any] | None, str | None]:
    """One benchmark run's JSON record, or why there is none / why it does not count."""
    if not output_file.is_file():
        log = output_file.with_suffix(".log")
        said = f": {_last_line(log)}" if log.is_file() else ""
        return None, f"{client} wrote no result to {output_file.name}{said}"
    try:
        record = load_bench_results(output_file)[-1]
    except HarnessError as exc:
        return None, str(exc)
    completed = int(record.get("completed", 0))
    if completed < num_prompts:
        return None, f"{num_prompts - completed} of {num_prompts} requests failed"
    return record, None


def _run_once(command: list[str], log_path: Path, env: dict[str, str], timeout_s: float,
              registry: ProcessRegistry | None, client: str = "bench_serving") -> str | None:
    """Run one benchmark process in its own process group, output to `log_path`; the failure, if any."""
    with log_path.open("wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=marked_env(env),
                                   start_new_session=True)
        if registry is not None:
            registry.add(process, client, command)
        try:
            code = process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            kill_group(process)
            return f"{client} did not finish within {timeout_s:g} s"
        except BaseException:  # Ctrl-C must not leave bench_serving running
            kill_group(process)
            raise
        finally:
            if group_alive(process):  # a fork it left behind
                signal_group(process.pid, signal.SIGKILL)
            if registry is not None:
                registry.remove(process)
    return None if code == 0 else f"{client} exited with code {code}"


def _last_line(path: Path, limit: int = 300) -> str:
    """The last line bench_serving printed (the launcher's own lines skipped)."""
    lines = [line for line in tail(path, 8) if line.strip() and not line.startswith(LAUNCHER_PREFIX)]
    return lines[-1][:limit] if lines else "(no output)"


def _write_command(evidence_dir: Path, commands: list[str], launched: list[str], run_env: dict[str, str],
                   env: dict[str, str] | None, client: BenchClient) -> None:
    overrides = {k: v for k, v in run_env.items() if os.environ.get(k) != v} if env is not None else {}
    (evidence_dir / "command.json").write_text(json.dumps({
        "commands": commands,
        "launched": shlex.join(launched),
        "env_overrides": overrides,
        "PYTHONPATH": run_env.get("PYTHONPATH"),
        "note": "each of `commands` runs one repetition: `python -m sglang.bench_serving` with these "
                "arguments; `launched` ran them all, in this order, in one process (bench.log); see each "
                "repetition's log for whether torchvision had to be replaced by a placeholder."
                if client.sequenced else
                f"each of `commands` runs one repetition of `{client.display}`, in this order, each in its own "
                "process (its output in the repetition's .log); `launched` is the first.",
    }, indent=2) + "\n")


def write_summary(run: PerfRun, evidence_dir: Path) -> PerfRun:
    """Write `run` as the suite's `summary.json`; returns it."""
    (evidence_dir / "summary.json").write_text(run.model_dump_json(indent=2) + "\n")
    return run


# --------------------------------------------------------------------------- results


def load_bench_results(path: str | Path) -> list[dict[str, Any]]:
    """bench_serving JSON lines (one per run); a missing or malformed file is an InputError
    naming the file and line."""
    path = Path(path)
    try:
        lines = path.read_text().splitlines()
    except OSError as exc:
        raise InputError(f"cannot read bench_serving results {path}: {exc.strerror or exc}") from None
    records = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"{path}:{number}: not a JSON line: {exc.msg}") from None
        if isinstance(record, dict):  # another client's name for a field (vLLM: total_token_throughput)
            for key, theirs in result_aliases().items():
                found = [record[name] for name in theirs if name in record]
                if key not in record and found:
                    record[key] = found[0]
        missing = [key for key in RESULT_FIELDS if not isinstance(record.get(key), (int, float))]
        if not isinstance(record, dict) or missing:
            raise InputError(f"{path}:{number}: not a bench_serving result (missing {', '.join(missing)})")
        records.append(record)
    if not records:
        raise InputError(f"{path}: no bench_serving results in the file")
    return records


if __name__ == "__main__":  # the launcher the repetitions run (`python -m harness.evidence.perf`)
    from harness.evidence.bench_launcher import main

    main(sys.argv[1:])
