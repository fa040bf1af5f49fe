"""Accuracy evidence: lm-eval against a served endpoint, then the accuracy decision rule.

lm-eval runs through its Python API (`lm_eval.simple_evaluate`) with `local-completions` or
`local-chat-completions` and `tokenizer_backend=None`, so nothing is downloaded for the model.
When a suite names local `data_files`, a task YAML is written that `include:`s the built-in
task by absolute path (lm-eval 0.4.13 resolves includes relative to the including file, or
absolute) and points `dataset_path: json` at the files; a TaskManager with `include_path`
picks it up, so the built-in prompt, filters and metrics are used unchanged, offline.

Evidence per suite, under `<evidence_dir>/<suite>/`:
  samples.jsonl   one row per question: doc_id, question_hash, target, response, score, correct
  results.json    lm-eval's aggregate results, task config, versions
  task/<task>.yaml  the generated task config (offline data only), read by lm-eval itself
  reproduce.py    the exact simple_evaluate call, runnable on its own
  lm_eval.log     what lm-eval printed and logged
  gate.json       the decision rule's numbers and the rule used (the file name is the
                  runbook's: its `gate:` key picks the pairing)
  accuracy.png    the difference with its interval against the margin (with matplotlib)
  run.json        endpoint, versions, chunks evaluated, timings; what was measured, or the
                  error that stopped it (`error`: not_run | failed, with the reason)
  inputs.json     sha256 and size of every local data file and of the baseline samples used
  baseline_samples.jsonl  a copy of the per-sample baseline the rule compared against (it
                  reads this copy), so the verdict can be reproduced from the evidence alone
  reference/      with a `reference:` server and no recorded baseline: the same evaluation
                  against the reference, evaluated in this run (its samples.jsonl, results.json,
                  reproduce.py, lm_eval.log); its samples are the paired baseline

Any lm-eval error or an endpoint that errors is recorded as `failed` with the reason; a missing
package, task or data file as `not_run` (`unusable_input` when an input of the suite is at fault:
its gate then refuses approval). Nothing here raises for those. The accuracy step reads
its checks back from these files (`harness.steps.accuracy.suite_check`).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import importlib.util
import json
import logging
import math
import platform
import re
import time
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel

import harness
from harness.errors import HarnessError, InputError
from harness.evidence.plots import plot_accuracy
from harness.evidence.runbook import AccuracySuite, Api, Runbook
from harness.stats.accuracy import AccuracyDecision, paired_mean_test, paired_test, unpaired_test, vacuity
from harness.stats.sequential import sequential_design, sequential_paired_test
from harness.util.files import file_record

DEFAULT_SEQUENTIAL_LOOKS = 4
_AGGREGATE_KEYS = {"name", "alias", "sample_len", "samples"}


@dataclass(frozen=True)
class Endpoint:
    """Where the served model answers: the server root (http://host:port) and the model name."""

    base_url: str
    model: str
    api: Api = "completions"
    request_timeout_s: int = 300
    max_retries: int = 3

    def url(self) -> str:
        root = re.sub(r"/v1(/(chat/)?completions)?/?$", "", self.base_url.rstrip("/"))
        return root + ("/v1/chat/completions" if self.api == "chat" else "/v1/completions")


class SampleRecord(BaseModel):
    doc_id: int
    question_hash: str  # sha256 of the question text (or of lm-eval's doc hash when no `question`)
    doc_hash: str | None = None
    target: str
    response: str
    filtered: str | None = None  # the answer lm-eval's filter extracted
    score: float
    correct: bool | None = None  # None when the metric is not right/wrong (e.g. F1)


class AccuracyNotRun(Exception):
    """Something needed to run is missing; recorded as `not_run`."""


class UnusableInput(AccuracyNotRun):
    """An input of the suite (data file, baseline, task name, its pairing) is unusable; recorded
    as `not_run` with `unusable_input`, so the step's gate refuses approval."""


class AccuracyFailed(Exception):
    """lm-eval or the endpoint failed; recorded as `failed`."""


# ------------------------------------------------------------------------- task setup


@dataclass
class PreparedTask:
    name: str
    include_path: Path | None  # directory holding the generated task YAML
    config: dict[str, Any]  # what the YAML says (or the built-in task's name)


def prepare_task(suite: AccuracySuite, work_dir: Path) -> PreparedTask:
    """The built-in task as is, or a YAML including it with the dataset pointed at local files."""
    if not suite.data_files:
        return PreparedTask(name=suite.task, include_path=None, config={"task": suite.task})
    missing = [f"{split}: {path}" for split, path in suite.data_files.items() if not Path(path).is_file()]
    if missing:
        raise UnusableInput(f"data file(s) not found: {', '.join(missing)}")
    builtin = builtin_task_yaml(suite.task)
    name = "harness_" + re.sub(r"\W+", "_", suite.name)
    config = {
        "include": str(builtin),
        "task": name,
        "dataset_path": "json",
        "dataset_name": None,
        "dataset_kwargs": {"data_files": {split: str(Path(p).resolve()) for split, p in suite.data_files.items()}},
    }
    task_dir = work_dir / "task"
    task_dir.mkdir(parents=True, exist_ok=True)
    (task_dir / f"{name}.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    return PreparedTask(name=name, include_path=task_dir, config=config)


def builtin_task_yaml(task: str) -> Path:
    """The YAML file defining a built-in lm-eval task.

    A plain text search: indexing every built-in task with TaskManager() takes 20 s or more,
    and the generated YAML includes this file by path, so lm-eval never needs that index. Nor is
    lm-eval imported (2 s): `harness run` checks task names before step 1.
    """
    spec = importlib.util.find_spec("lm_eval")  # optional (the `eval` extra)
    if spec is None or not spec.submodule_search_locations:
        raise AccuracyNotRun("lm-eval is not installed; pip install 'lm-eval==0.4.13'")
    pattern = re.compile(rf"^task:\s*['\"]?{re.escape(task)}['\"]?\s*$", re.MULTILINE)
    root = Path(spec.submodule_search_locations[0]) / "tasks"
    # Tasks usually live in a folder named after their prefix (gsm8k/, longbench/): look there first.
    likely = root / task.split("_")[0]
    candidates = (
        [*sorted(likely.rglob("*.yaml")), *sorted(root.rglob("*.yaml"))]
        if likely.is_dir()
        else sorted(root.rglob("*.yaml"))
    )
    for path in candidates:
        if pattern.search(path.read_text(errors="replace")):
            return path.resolve()
    raise UnusableInput(f"lm-eval {_lm_eval_version()} has no built-in task named {task!r}")


class _TaskLoader(yaml.SafeLoader):
    """Reads lm-eval task YAML, whose `!function` tags name Python callables, as plain data."""


_TaskLoader.add_multi_constructor("!", lambda loader, suffix, node: None)


def task_metrics(task: str) -> tuple[list[str], list[str]] | None:
    """(metric names, filter names) a built-in lm-eval task reports — the two halves of a
    'metric,filter' key — read from its YAML (and one `include`d YAML), with 'none' as the only
    filter of a task without a filter_list. None when lm-eval is not installed or the YAML does
    not say (e.g. metrics computed by a `process_results` function); AccuracyNotRun subclass
    UnusableInput for an unknown task."""
    try:
        path = builtin_task_yaml(task)
    except UnusableInput:
        raise
    except AccuracyNotRun:
        return None
    config = yaml.load(path.read_text(errors="replace"), Loader=_TaskLoader) or {}
    include = config.get("include")
    if isinstance(include, str) and (path.parent / include).is_file():
        config = {**(yaml.load((path.parent / include).read_text(errors="replace"), Loader=_TaskLoader) or {}),
                  **config}
    metrics = [m.get("metric") for m in config.get("metric_list") or [] if isinstance(m, dict)]
    if not metrics or not all(isinstance(m, str) for m in metrics):
        return None
    filters = [f.get("name") for f in config.get("filter_list") or [] if isinstance(f, dict)] or ["none"]
    return metrics, [f for f in filters if isinstance(f, str)]


# -------------------------------------------------------------------------- lm-eval


def _evaluate_arguments(
    suite: AccuracySuite, endpoint: Endpoint, task: PreparedTask, doc_ids: Sequence[int] | None
) -> dict[str, Any]:
    """Keyword arguments for simple_evaluate (task_manager added by the caller)."""
    model_args = {
        "base_url": endpoint.url(),
        "model": endpoint.model,
        "tokenizer_backend": None,  # no tokenizer download; requests go as strings
        "tokenized_requests": False,
        "num_concurrent": suite.num_concurrent,
        "max_retries": endpoint.max_retries,
        "timeout": endpoint.request_timeout_s,
    }
    arguments: dict[str, Any] = {
        "model": "local-chat-completions" if endpoint.api == "chat" else "local-completions",
        "model_args": model_args,
        "tasks": [task.name],
        "num_fewshot": suite.num_fewshot,
        "log_samples": True,
        "apply_chat_template": endpoint.api == "chat",
        "gen_kwargs": suite.gen_kwargs or None,
    }
    if doc_ids is not None:
        arguments["samples"] = {task.name: list(doc_ids)}
    elif suite.limit is not None:
        arguments["limit"] = suite.limit
    return arguments


def reproduce_script(arguments: dict[str, Any], task: PreparedTask) -> str:
    """A standalone Python script that repeats the simple_evaluate call (same arguments, same task
    config)."""
    include = f"include_path={str(task.include_path)!r}, include_defaults=False" if task.include_path else ""
    lines = [
        f"# Reproduces this accuracy run (harness {harness.__version__}, lm-eval {_lm_eval_version()}).",
        "import json",
        "",
        "import lm_eval",
        "from lm_eval.tasks import TaskManager",
        "",
        "results = lm_eval.simple_evaluate(",
        *(f"    {key}={value!r}," for key, value in arguments.items()),
        f"    task_manager=TaskManager({include}),",
        ")",
        "print(json.dumps(results['results'], indent=2, default=str))",
        "",
    ]
    return "\n".join(lines)


def _lm_eval_version() -> str:
    try:
        return importlib.metadata.version("lm_eval")  # optional (the `eval` extra)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


@contextlib.contextmanager
def _captured_output(log_path: Path) -> Iterator[None]:
    """Send lm-eval's logging, progress bars and prints to the evidence log."""
    with log_path.open("a") as log:
        handler = logging.StreamHandler(log)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        loggers = [logging.getLogger(name) for name in ("lm_eval", "lm-eval")]
        for logger in loggers:
            logger.addHandler(handler)
        try:
            with contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
                yield
        finally:
            for logger in loggers:
                logger.removeHandler(handler)


def _run_lm_eval(arguments: dict[str, Any], task: PreparedTask, log_path: Path) -> dict[str, Any]:
    try:
        import lm_eval  # optional (the `eval` extra)
        from lm_eval.tasks import TaskManager
    except ImportError as exc:
        raise AccuracyNotRun(f"lm-eval is not installed ({exc}); pip install 'lm-eval==0.4.13'") from None
    with _captured_output(log_path):
        try:
            # The generated YAML includes the built-in one by path: no need to index the defaults.
            manager = (
                TaskManager(include_path=str(task.include_path), include_defaults=False)
                if task.include_path
                else TaskManager()
            )
            results = lm_eval.simple_evaluate(**arguments, task_manager=manager)
        except ImportError as exc:  # a task's own extra dependencies (e.g. lm_eval[longbench])
            traceback.print_exc()
            raise AccuracyNotRun(f"lm-eval task {task.name} cannot load: {_first_line(exc)}") from exc
        except Exception as exc:  # noqa: BLE001 - any lm-eval or endpoint error is evidence
            traceback.print_exc()
            raise AccuracyFailed(f"lm-eval failed: {type(exc).__name__}: {_first_line(exc)}") from exc
    if not results or task.name not in results.get("results", {}):
        raise AccuracyFailed(f"lm-eval returned no results for task {task.name}")
    return results


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:300] if text else repr(exc)


def metric_key(results: dict[str, Any], task_name: str, requested: str | None) -> str:
    """The 'metric,filter' key gated on: the requested one, or the task's first metric."""
    available = [k for k in results["results"][task_name] if k not in _AGGREGATE_KEYS and "_stderr" not in k]
    if requested is None:
        if not available:
            raise AccuracyFailed(f"lm-eval reported no metric for task {task_name}")
        return available[0]
    if requested not in available:
        raise AccuracyFailed(f"metric {requested!r} not reported by {task_name}; available: {', '.join(available)}")
    return requested


def sample_records(results: dict[str, Any], task_name: str, key: str) -> list[SampleRecord]:
    """One SampleRecord per question of `task_name` for the 'metric,filter' `key`, sorted by doc_id;
    KeyError/ValueError on rows lacking the metric."""
    metric, _, filter_name = key.partition(",")
    records = []
    for row in results["samples"][task_name]:
        if filter_name and row.get("filter") != filter_name:
            continue
        doc = row.get("doc") or {}
        question = doc.get("question") if isinstance(doc, dict) else None
        digest_source = question if isinstance(question, str) else str(row.get("doc_hash", row["doc_id"]))
        score = float(row[metric])
        responses = row.get("resps") or [[""]]
        filtered = row.get("filtered_resps") or [None]
        records.append(
            SampleRecord(
                doc_id=int(row["doc_id"]),
                question_hash=hashlib.sha256(digest_source.encode()).hexdigest(),
                doc_hash=row.get("doc_hash"),
                target=str(row.get("target", "")),
                response=str(responses[0][0] if responses and responses[0] else ""),
                filtered=None if filtered[0] is None else str(filtered[0]),
                score=score,
                correct=bool(score) if score in (0.0, 1.0) else None,
            )
        )
    return sorted(records, key=lambda r: r.doc_id)


# ------------------------------------------------------------------------- baseline


def load_baseline_samples(path: Path, key: str) -> dict[int, SampleRecord]:
    """Per-question baseline results by doc_id: a harness samples.jsonl, or lm-eval's own
    samples JSONL (rows with doc_id, filter and the metric)."""
    metric, _, filter_name = key.partition(",")
    try:
        lines = Path(path).read_text().splitlines()
    except OSError as exc:
        raise UnusableInput(f"cannot read baseline samples {path}: {exc.strerror or exc}") from None
    rows: dict[int, SampleRecord] = {}
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            if "score" in row and "question_hash" in row:  # harness format
                record = SampleRecord.model_validate(row)
            else:  # lm-eval format
                if filter_name and row.get("filter", filter_name) != filter_name:
                    continue
                record = sample_records({"samples": {"t": [row]}}, "t", key)[0]
        except (ValueError, KeyError, IndexError) as exc:
            raise UnusableInput(f"{path}:{number}: not a per-sample row with doc_id and {metric!r}: {exc}") from None
        rows[record.doc_id] = record
    if not rows:
        raise UnusableInput(f"baseline samples {path} hold no rows for {key}")
    return rows


def pair_with_baseline(
    candidate: list[SampleRecord], baseline: dict[int, SampleRecord]
) -> tuple[list[SampleRecord], list[SampleRecord]]:
    """Questions present on both sides, in doc_id order; a question whose text differs between
    the two runs means different data, which no paired test may compare."""
    pairs = [(baseline[r.doc_id], r) for r in candidate if r.doc_id in baseline]
    if not pairs:
        raise UnusableInput("the baseline samples share no doc_id with this run")
    differing = [c.doc_id for b, c in pairs if b.question_hash != c.question_hash]
    if differing:
        raise UnusableInput(
            f"baseline and candidate questions differ for doc_id {differing[:5]}: not the same data set"
        )
    return [b for b, _ in pairs], [c for _, c in pairs]


def samples_vacuity(baseline: list[SampleRecord] | None, candidate: list[SampleRecord],
                    baseline_score: float | None = None) -> str | None:
    """Why these samples measured nothing (0 vs 0, outputs all empty or all the same), or None.
    `baseline_score` stands in for an aggregate baseline without samples."""
    return vacuity(
        [r.score for r in baseline] if baseline is not None else [baseline_score] if baseline_score is not None else None,
        [r.score for r in candidate],
        baseline_outputs=[r.response for r in baseline] if baseline is not None else None,
        candidate_outputs=[r.response for r in candidate],
    )


def decide_samples(baseline: list[SampleRecord], candidate: list[SampleRecord], suite: AccuracySuite) -> AccuracyDecision:
    """The paired decision rule on the same questions (`baseline[i]`, `candidate[i]`): right/wrong
    metrics get the McNemar/Tango rule, continuous scores the paired t rule; a measurement of
    nothing (`samples_vacuity`) is never passed."""
    vacuous = samples_vacuity(baseline, candidate)
    if all(r.correct is not None for r in baseline + candidate):
        return paired_test(
            [bool(r.correct) for r in baseline],
            [bool(r.correct) for r in candidate],
            margin=suite.margin,
            alpha=suite.alpha,
            vacuous=vacuous,
        )
    return paired_mean_test(
        [r.score for r in baseline], [r.score for r in candidate], margin=suite.margin, alpha=suite.alpha,
        vacuous=vacuous,
    )


# The name the field cases (../shared/field-cases/F11) import; "gate" is the runbook's key.
gate_samples = decide_samples


# ---------------------------------------------------------------------------- runner


def run_accuracy_suite(
    suite: AccuracySuite,
    endpoint: Endpoint,
    evidence_dir: str | Path,
    *,
    looks: Sequence[int] | None = None,
    reference: Endpoint | str | None = None,
) -> Path:
    """Evaluate one suite against the endpoint and apply the decision rule; the evidence goes
    under evidence_dir/suite.name, which is returned (see the module docstring for the files).

    `reference` is the suite's reference server (started by the caller), or why it is not
    there: when the suite records no `baseline`, the same questions are evaluated on it in this
    run and its per-question results are the paired baseline.

    With `suite.sequential` and a per-sample baseline, the baseline's questions are evaluated in
    chunks ending at `looks` (cumulative counts; default DEFAULT_SEQUENTIAL_LOOKS equal chunks)
    and evaluation stops at the first look where the group-sequential rule decides.
    """
    out = Path(evidence_dir) / suite.name
    out.mkdir(parents=True, exist_ok=True)
    log_path = out / "lm_eval.log"
    log_path.write_text("")
    run_record: dict[str, Any] = {
        "suite": suite.model_dump(mode="json"),
        "endpoint": {"url": endpoint.url(), "model": endpoint.model, "api": endpoint.api},
        "versions": {
            "harness": harness.__version__,
            "lm_eval": _lm_eval_version(),
            "python": platform.python_version(),
        },
        "chunks": [],
        "error": None,
    }
    try:
        if suite.baseline is None and suite.reference is not None:
            run_record["reference"] = {"name": suite.reference}
            if not isinstance(reference, Endpoint):
                raise AccuracyNotRun(reference or f"reference server {suite.reference} was not started")
            run_record["reference"] |= {"url": reference.url(), "model": reference.model}
        _run_and_decide(suite, endpoint, out, log_path, run_record, looks,
                        reference if isinstance(reference, Endpoint) and suite.baseline is None else None)
    except (AccuracyNotRun, HarnessError) as exc:
        run_record["error"] = {"status": "not_run", "reason": str(exc),
                               "unusable_input": isinstance(exc, (UnusableInput, InputError))}
    except AccuracyFailed as exc:
        run_record["error"] = {"status": "failed", "reason": str(exc)}
    (out / "run.json").write_text(json.dumps(run_record, indent=2, default=str))
    if run_record["error"] is None and (out / "gate.json").is_file():
        _plot_decision(AccuracyDecision.model_validate_json((out / "gate.json").read_text()), suite.name,
                       out / ACCURACY_PLOT)
    return out


ACCURACY_PLOT = "accuracy.png"


def _plot_decision(result: AccuracyDecision, suite_name: str, path: Path) -> None:
    """accuracy.png: the difference candidate − baseline with its interval against the margin,
    in points."""
    plot_accuracy(100 * result.difference, 100 * result.ci_low, 100 * result.ci_high, 100 * result.margin,
                  f"{suite_name}: {result.outcome} ({round(100 * result.ci_level)}% CI; {result.rule})", path)


def _run_and_decide(
    suite: AccuracySuite,
    endpoint: Endpoint,
    out: Path,
    log_path: Path,
    run_record: dict[str, Any],
    looks: Sequence[int] | None,
    reference: Endpoint | None = None,
) -> None:
    task = prepare_task(suite, out)
    baseline = suite.baseline
    paired = baseline is not None and baseline.samples is not None and suite.gate != "unpaired"
    if reference is not None and suite.gate == "unpaired":
        raise UnusableInput("a reference server gives per-question results: its gate is paired, not 'unpaired'")
    baseline_samples = _record_inputs(suite, out)  # the evidence copy: decide on exactly what it holds

    chunk_results: list[dict[str, Any]] = []

    def evaluate(doc_ids: Sequence[int] | None, label: str) -> tuple[str, list[SampleRecord]]:
        arguments = _evaluate_arguments(suite, endpoint, task, doc_ids)
        # Written before running, so a failed run can be reproduced too.
        (out / "reproduce.py").write_text(reproduce_script(arguments, task))
        started = time.monotonic()
        results = _run_lm_eval(arguments, task, log_path)
        chunk_results.append(results)
        key = metric_key(results, task.name, suite.metric)
        records = sample_records(results, task.name, key)
        run_record["chunks"].append(
            {"label": label, "questions": len(records), "seconds": round(time.monotonic() - started, 2)}
        )
        return key, records

    result: AccuracyDecision | None = None
    if suite.sequential and paired:
        key, records, result = _run_sequential(suite, baseline_samples, evaluate, looks, run_record)
        # One call over every question evaluated reproduces the whole evidence.
        arguments = _evaluate_arguments(suite, endpoint, task, [r.doc_id for r in records])
        (out / "reproduce.py").write_text(reproduce_script(arguments, task))
    else:
        if suite.sequential:
            run_record["note"] = "sequential evaluation needs a per-sample baseline; evaluated all questions at once"
        key, records = evaluate(None, "all")
    _write_results(out, chunk_results, task, records)
    score = sum(r.score for r in records) / len(records) if records else math.nan
    measured: dict[str, Any] = {"metric": key, "score": score, "n": len(records)}
    run_record["measured"] = measured
    available = _dataset_size(chunk_results[0], task.name)
    if available is not None:
        measured["dataset_questions"] = available
    if reference is not None:
        reference_rows = _evaluate_reference(suite, reference, task, out / REFERENCE_DIR, key,
                                             [r.doc_id for r in records])
        run_record["reference"]["score"] = sum(r.score for r in reference_rows) / len(reference_rows)
        base_rows, cand_rows = pair_with_baseline(records, {r.doc_id: r for r in reference_rows})
        measured["unpaired_questions"] = len(records) - len(cand_rows)
        (out / "gate.json").write_text(decide_samples(base_rows, cand_rows, suite).model_dump_json(indent=2))
        return
    if baseline is None:
        return
    if result is None:
        if paired:
            base_rows, cand_rows = pair_with_baseline(records, load_baseline_samples(baseline_samples, key))
            measured["unpaired_questions"] = len(records) - len(cand_rows)  # not in the baseline: not decided on
            result = decide_samples(base_rows, cand_rows, suite)
        else:
            if baseline.score is None:
                raise UnusableInput("gate 'unpaired' needs baseline.score and baseline.n")
            result = unpaired_test(
                round(sum(r.score for r in records)),
                len(records),
                baseline.score,
                baseline.n,
                margin=suite.margin,
                alpha=suite.alpha,
                vacuous=samples_vacuity(None, records, baseline_score=baseline.score),
            )
    (out / "gate.json").write_text(result.model_dump_json(indent=2))


REFERENCE_DIR = "reference"


def _evaluate_reference(suite: AccuracySuite, reference: Endpoint, task: PreparedTask, out: Path, key: str,
                        doc_ids: list[int]) -> list[SampleRecord]:
    """The suite's questions evaluated on the reference server (the same task, arguments and
    doc ids as the candidate's), its evidence under `out`; its per-question records for `key`."""
    out.mkdir(parents=True, exist_ok=True)
    log_path = out / "lm_eval.log"
    log_path.write_text("")
    arguments = _evaluate_arguments(suite, reference, task, doc_ids)
    (out / "reproduce.py").write_text(reproduce_script(arguments, task))
    try:
        results = _run_lm_eval(arguments, task, log_path)
    except AccuracyFailed as exc:
        raise AccuracyFailed(f"on the reference server {suite.reference}: {exc}") from None
    if key not in results["results"][task.name]:
        raise AccuracyFailed(f"the reference server's run reported no {key!r}")
    records = sample_records(results, task.name, key)
    _write_results(out, [results], task, records)
    if not records:
        raise AccuracyFailed(f"the reference server {suite.reference} answered no question")
    return records


BASELINE_COPY = "baseline_samples.jsonl"
INPUTS_RECORD = "inputs.json"


def _record_inputs(suite: AccuracySuite, out: Path) -> Path | None:
    """Put what the verdict depends on into the evidence: the sha256 of every data file (so the
    evidence hash changes when one does) and a copy of the baseline samples, returned for the
    decision rule to read. None when the suite has no per-sample baseline."""
    record: dict[str, Any] = {"data_files": {}, "baseline_samples": None}
    for split, path in sorted(suite.data_files.items()):
        try:
            record["data_files"][split] = file_record(Path(path))
        except OSError as exc:
            raise UnusableInput(f"cannot read data file {path}: {exc.strerror or exc}") from None
    copy = None
    if suite.baseline is not None and suite.baseline.samples is not None:
        source = Path(suite.baseline.samples)
        try:
            data = source.read_bytes()
        except OSError as exc:
            raise UnusableInput(f"cannot read baseline samples {source}: {exc.strerror or exc}") from None
        copy = out / BASELINE_COPY
        copy.write_bytes(data)
        record["baseline_samples"] = {**file_record(copy), "path": str(source.resolve()), "copy": BASELINE_COPY}
    (out / INPUTS_RECORD).write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
    return copy


def _dataset_size(results: dict[str, Any], task_name: str) -> int | None:
    """Questions in the task's evaluation split, as lm-eval counted them."""
    counts = results.get("n-samples", {}).get(task_name, {})
    return counts.get("original") if isinstance(counts.get("original"), int) else None


def _run_sequential(
    suite: AccuracySuite,
    baseline_path: Path,
    evaluate: Callable[[Sequence[int] | None, str], tuple[str, list[SampleRecord]]],
    looks: Sequence[int] | None,
    run_record: dict[str, Any],
) -> tuple[str, list[SampleRecord], AccuracyDecision]:
    """Evaluate the baseline's questions chunk by chunk until the sequential rule decides."""
    doc_ids = sorted(_baseline_doc_ids(baseline_path))
    if suite.limit is not None:
        doc_ids = doc_ids[: suite.limit]
    if looks is None:
        count = min(DEFAULT_SEQUENTIAL_LOOKS, len(doc_ids))
        looks = [round(len(doc_ids) * (k + 1) / count) for k in range(count)]
    if looks[-1] > len(doc_ids):
        raise UnusableInput(f"sequential looks end at {looks[-1]} questions, the baseline has {len(doc_ids)}")
    design = sequential_design(looks, alpha=suite.alpha)
    run_record["sequential_design"] = design.model_dump()
    records: list[SampleRecord] = []
    start = 0
    for look_number, end in enumerate(looks, 1):
        key, chunk = evaluate(doc_ids[start:end], f"look {look_number}: questions {start}-{end - 1}")
        records.extend(chunk)
        start = end
        base_rows, cand_rows = pair_with_baseline(records, load_baseline_samples(baseline_path, key))
        if any(r.correct is None for r in base_rows + cand_rows):
            raise UnusableInput(f"sequential rule needs right/wrong scores; {key} is continuous")
        result = sequential_paired_test(
            [bool(r.correct) for r in base_rows], [bool(r.correct) for r in cand_rows], design, margin=suite.margin,
            vacuous=samples_vacuity(base_rows, cand_rows),
        )
        if result.outcome != "inconclusive" or result.sequential.next_look is None:
            break
    return key, records, result


def _baseline_doc_ids(path: Path) -> set[int]:
    try:
        return {int(json.loads(line)["doc_id"]) for line in Path(path).read_text().splitlines() if line.strip()}
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise UnusableInput(f"cannot read doc ids from baseline samples {path}: {exc}") from None


def _write_results(
    out: Path, chunk_results: list[dict[str, Any]], task: PreparedTask, records: list[SampleRecord]
) -> None:
    with (out / "samples.jsonl").open("w") as handle:
        for record in records:
            handle.write(record.model_dump_json() + "\n")
    # lm-eval's own record of each evaluate call (one, or one per sequential chunk).
    kept = [{k: v for k, v in results.items() if k not in ("samples", "pretty_env_info")} for results in chunk_results]
    summary = {"task": task.config, "results": kept[0]["results"] if len(kept) == 1 else None, "runs": kept}
    (out / "results.json").write_text(json.dumps(summary, indent=2, default=str))


def run_runbook_accuracy(runbook: Runbook, server: Any, evidence_dir: str | Path,
                         references: Mapping[str, Any] | None = None) -> list[Path]:
    """Every accuracy suite of the runbook against a running server (`RunningServer`: base_url,
    model); returns each suite's evidence dir. `references` maps a reference server's name to
    the running server, or to why it did not start (for suites that take their baseline from it)."""
    paths = []
    for suite in runbook.accuracy:
        api = runbook.accuracy_api(suite)
        started = (references or {}).get(suite.reference) if suite.reference else None
        reference = (started if isinstance(started, str) or started is None
                     else Endpoint(base_url=started.base_url, model=started.model, api=api))
        paths.append(run_accuracy_suite(suite, Endpoint(base_url=server.base_url, model=server.model, api=api),
                                        evidence_dir, reference=reference))
    return paths
