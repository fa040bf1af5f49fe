"""Accuracy evidence: lm-eval against a served endpoint (`harness.evidence.lmeval`), then the
accuracy decision rule (`harness.stats.accuracy.decide`).

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
its gate then refuses approval). Nothing here raises for those. `suite_check` reads the
check back from these files.
"""

from __future__ import annotations

import json
import math
import platform
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

import harness
from harness.errors import HarnessError, InputError
from harness.evidence.accuracy_baseline import (
    baseline_doc_ids,
    decide_samples,
    load_baseline_samples,
    pair_with_baseline,
    record_inputs,
)
from harness.evidence.lmeval import (
    AccuracyFailed,
    AccuracyNotRun,
    Endpoint,
    PreparedTask,
    SampleRecord,
    UnusableInput,
    evaluate_arguments,
    lm_eval_version,
    measured_nothing,
    metric_key,
    prepare_task,
    reproduce_script,
    run_lm_eval,
    sample_records,
)
from harness.evidence.plots import plot_accuracy
from harness.evidence.runbook import AccuracySuite, Api
from harness.evidence.runner import Runner
from harness.record.checks import Check, CheckStatus
from harness.stats.accuracy import AccuracyDecision, decide, more_questions_advice
from harness.stats.sequential import SequentialDesign, sequential_design
from harness.util.files import tail

DEFAULT_SEQUENTIAL_LOOKS = 4
LOG_TAIL_LINES = 40
RUN_RECORD = "run.json"
GATE = "gate.json"


class SuiteRecord(BaseModel):
    """The runbook suite as it was run (its every key is kept; the checks read its name)."""

    model_config = ConfigDict(extra="allow")

    name: str


class EndpointRecord(BaseModel):
    """The endpoint evaluated (its full completions URL)."""

    url: str
    model: str
    api: Api


class Versions(BaseModel):
    """What evaluated it."""

    harness: str
    lm_eval: str
    python: str


class Chunk(BaseModel):
    """One lm-eval call: all questions, or one sequential look's."""

    label: str
    questions: int
    seconds: float


class RunError(BaseModel):
    """What stopped the evaluation: `not_run` (a missing package, task or input) or `failed`."""

    status: Literal["not_run", "failed"]
    reason: str
    unusable_input: bool = False  # an input of the suite is at fault: the gate refuses approval


class ReferenceRecord(BaseModel):
    """The reference server a suite without a recorded baseline was compared with."""

    name: str
    url: str | None = None
    model: str | None = None
    score: float | None = None  # its mean score on the same questions, once evaluated


class Measured(BaseModel):
    """What the candidate scored."""

    metric: str  # the 'metric,filter' key gated on
    score: float  # mean over the questions evaluated
    n: int
    dataset_questions: int | None = None  # in the task's evaluation split, as lm-eval counted them
    unpaired_questions: int | None = None  # evaluated but not in the baseline: not decided on


class AccuracyRun(BaseModel):
    """`run.json`: endpoint, versions, chunks evaluated, timings; what was measured, or the error
    that stopped it. Written with exclude_unset: optional keys appear once reached, as before."""

    suite: SuiteRecord
    endpoint: EndpointRecord
    versions: Versions
    chunks: list[Chunk]
    error: RunError | None
    reference: ReferenceRecord | None = None
    sequential_design: SequentialDesign | None = None
    note: str | None = None
    measured: Measured | None = None

    @classmethod
    def read(cls, suite_dir: Path) -> AccuracyRun:
        """The suite's record (OSError when it is missing)."""
        return cls.model_validate_json((Path(suite_dir) / RUN_RECORD).read_text())

    def write(self, suite_dir: Path) -> None:
        """Write `run.json` as it always was: through `json`, so NaN and Infinity (an empty run's
        score, an unreachable sequential boundary) stay numbers rather than becoming null."""
        (Path(suite_dir) / RUN_RECORD).write_text(json.dumps(self.model_dump(exclude_unset=True), indent=2,
                                                             default=str))


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
    """`AccuracyRunner.run` into `evidence_dir/suite.name`, which is returned."""
    out = Path(evidence_dir) / suite.name
    AccuracyRunner().run(suite, out, endpoint=endpoint, looks=looks, reference=reference)
    return out


class AccuracyRunner(Runner[AccuracySuite, AccuracyRun]):
    """One runbook suite evaluated by lm-eval against a served endpoint, then the accuracy
    decision rule; the `accuracy.<suite>` check."""

    name = "accuracy"
    section = "accuracy"
    spec = AccuracySuite
    record = AccuracyRun
    summary = RUN_RECORD

    def run(self, spec: AccuracySuite, evidence_dir: Path, *, endpoint: Endpoint,
            looks: Sequence[int] | None = None, reference: Endpoint | str | None = None) -> AccuracyRun:
        """Evaluate the suite against the endpoint and apply the decision rule; the evidence goes
        under `evidence_dir` (see the module docstring for the files).

        `reference` is the suite's reference server (started by the caller), or why it is not
        there: when the suite records no `baseline`, the same questions are evaluated on it in
        this run and its per-question results are the paired baseline.

        With `suite.sequential` and a per-sample baseline, the baseline's questions are evaluated
        in chunks ending at `looks` (cumulative counts; default DEFAULT_SEQUENTIAL_LOOKS equal
        chunks) and evaluation stops at the first look where the group-sequential rule decides.
        """
        suite = spec  # the runbook's name for it
        out = Path(evidence_dir)
        out.mkdir(parents=True, exist_ok=True)
        log_path = out / "lm_eval.log"
        log_path.write_text("")
        run_record = AccuracyRun(
            suite=SuiteRecord.model_validate(suite.model_dump(mode="json")),
            endpoint=EndpointRecord(url=endpoint.url(), model=endpoint.model, api=endpoint.api),
            versions=Versions(harness=harness.__version__, lm_eval=lm_eval_version(),
                              python=platform.python_version()),
            chunks=[],
            error=None,
        )
        try:
            if suite.baseline is None and suite.reference is not None:
                run_record.reference = ReferenceRecord(name=suite.reference)
                if not isinstance(reference, Endpoint):
                    raise AccuracyNotRun(reference or f"reference server {suite.reference} was not started")
                run_record.reference.url, run_record.reference.model = reference.url(), reference.model
            _run_and_decide(suite, endpoint, out, log_path, run_record, looks,
                            reference if isinstance(reference, Endpoint) and suite.baseline is None else None)
        except (AccuracyNotRun, HarnessError) as exc:
            run_record.error = RunError(status="not_run", reason=str(exc),
                                        unusable_input=isinstance(exc, (UnusableInput, InputError)))
        except AccuracyFailed as exc:
            run_record.error = RunError(status="failed", reason=str(exc))
        run_record.write(out)
        if run_record.error is None and (out / GATE).is_file():
            _plot_decision(AccuracyDecision.model_validate_json((out / GATE).read_text()), suite.name,
                           out / ACCURACY_PLOT)
        return run_record

    def checks(self, record: AccuracyRun, evidence_dir: Path, spec: AccuracySuite) -> list[Check]:
        return [_suite_check(record, evidence_dir)]


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
    run_record: AccuracyRun,
    looks: Sequence[int] | None,
    reference: Endpoint | None = None,
) -> None:
    task = prepare_task(suite, out)
    baseline = suite.baseline
    paired = baseline is not None and baseline.samples is not None and suite.gate != "unpaired"
    if reference is not None and suite.gate == "unpaired":
        raise UnusableInput("a reference server gives per-question results: its gate is paired, not 'unpaired'")
    baseline_samples = record_inputs(suite, out)  # the evidence copy: decide on exactly what it holds

    chunk_results: list[dict[str, Any]] = []

    def evaluate(doc_ids: Sequence[int] | None, label: str) -> tuple[str, list[SampleRecord]]:
        arguments = evaluate_arguments(suite, endpoint, task, doc_ids)
        # Written before running, so a failed run can be reproduced too.
        (out / "reproduce.py").write_text(reproduce_script(arguments, task))
        started = time.monotonic()
        results = run_lm_eval(arguments, task, log_path)
        chunk_results.append(results)
        key = metric_key(results, task.name, suite.metric)
        records = sample_records(results, task.name, key)
        run_record.chunks.append(
            Chunk(label=label, questions=len(records), seconds=round(time.monotonic() - started, 2))
        )
        return key, records

    result: AccuracyDecision | None = None
    if suite.sequential and paired:
        key, records, result = _run_sequential(suite, baseline_samples, evaluate, looks, run_record)
        # One call over every question evaluated reproduces the whole evidence.
        arguments = evaluate_arguments(suite, endpoint, task, [r.doc_id for r in records])
        (out / "reproduce.py").write_text(reproduce_script(arguments, task))
    else:
        if suite.sequential:
            run_record.note = "sequential evaluation needs a per-sample baseline; evaluated all questions at once"
        key, records = evaluate(None, "all")
    _write_results(out, chunk_results, task, records)
    score = sum(r.score for r in records) / len(records) if records else math.nan
    measured = run_record.measured = Measured(metric=key, score=score, n=len(records))
    available = _dataset_size(chunk_results[0], task.name)
    if available is not None:
        measured.dataset_questions = available
    if reference is not None:
        reference_rows = _evaluate_reference(suite, reference, task, out / REFERENCE_DIR, key,
                                             [r.doc_id for r in records])
        run_record.reference.score = sum(r.score for r in reference_rows) / len(reference_rows)
        base_rows, cand_rows = pair_with_baseline(records, {r.doc_id: r for r in reference_rows})
        measured.unpaired_questions = len(records) - len(cand_rows)
        (out / GATE).write_text(decide_samples(base_rows, cand_rows, suite).model_dump_json(indent=2))
        return
    if baseline is None:
        return
    if result is None:
        if paired:
            base_rows, cand_rows = pair_with_baseline(records, load_baseline_samples(baseline_samples, key))
            measured.unpaired_questions = len(records) - len(cand_rows)  # not in the baseline: not decided on
            result = decide_samples(base_rows, cand_rows, suite)
        else:
            if baseline.score is None:
                raise UnusableInput("gate 'unpaired' needs baseline.score and baseline.n")
            result = decide([r.score for r in records], baseline_score=baseline.score, baseline_n=baseline.n,
                            candidate_outputs=[r.generated for r in records], measured_nothing=measured_nothing(records), margin=suite.margin, alpha=suite.alpha)
    (out / GATE).write_text(result.model_dump_json(indent=2))


REFERENCE_DIR = "reference"


def _evaluate_reference(suite: AccuracySuite, reference: Endpoint, task: PreparedTask, out: Path, key: str,
                        doc_ids: list[int]) -> list[SampleRecord]:
    """The suite's questions evaluated on the reference server (the same task, arguments and
    doc ids as the candidate's), its evidence under `out`; its per-question records for `key`."""
    out.mkdir(parents=True, exist_ok=True)
    log_path = out / "lm_eval.log"
    log_path.write_text("")
    arguments = evaluate_arguments(suite, reference, task, doc_ids)
    (out / "reproduce.py").write_text(reproduce_script(arguments, task))
    try:
        results = run_lm_eval(arguments, task, log_path)
    except AccuracyFailed as exc:
        raise AccuracyFailed(f"on the reference server {suite.reference}: {exc}") from None
    if key not in results["results"][task.name]:
        raise AccuracyFailed(f"the reference server's run reported no {key!r}")
    records = sample_records(results, task.name, key)
    _write_results(out, [results], task, records)
    if not records:
        raise AccuracyFailed(f"the reference server {suite.reference} answered no question")
    return records


def _dataset_size(results: dict[str, Any], task_name: str) -> int | None:
    """Questions in the task's evaluation split, as lm-eval counted them."""
    counts = results.get("n-samples", {}).get(task_name, {})
    return counts.get("original") if isinstance(counts.get("original"), int) else None


def _run_sequential(
    suite: AccuracySuite,
    baseline_path: Path,
    evaluate: Callable[[Sequence[int] | None, str], tuple[str, list[SampleRecord]]],
    looks: Sequence[int] | None,
    run_record: AccuracyRun,
) -> tuple[str, list[SampleRecord], AccuracyDecision]:
    """Evaluate the baseline's questions chunk by chunk until the sequential rule decides."""
    doc_ids = sorted(baseline_doc_ids(baseline_path))
    if suite.limit is not None:
        doc_ids = doc_ids[: suite.limit]
    if looks is None:
        count = min(DEFAULT_SEQUENTIAL_LOOKS, len(doc_ids))
        looks = [round(len(doc_ids) * (k + 1) / count) for k in range(count)]
    if looks[-1] > len(doc_ids):
        raise UnusableInput(f"sequential looks end at {looks[-1]} questions, the baseline has {len(doc_ids)}")
    design = sequential_design(looks, alpha=suite.alpha)
    run_record.sequential_design = design
    records: list[SampleRecord] = []
    start = 0
    for look_number, end in enumerate(looks, 1):
        key, chunk = evaluate(doc_ids[start:end], f"look {look_number}: questions {start}-{end - 1}")
        records.extend(chunk)
        start = end
        base_rows, cand_rows = pair_with_baseline(records, load_baseline_samples(baseline_path, key))
        if any(r.correct is None for r in base_rows + cand_rows):
            raise UnusableInput(f"sequential rule needs right/wrong scores; {key} is continuous")
        result = decide_samples(base_rows, cand_rows, suite, design)
        if result.outcome != "inconclusive" or result.sequential.next_look is None:
            break
    return key, records, result


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


# ---------------------------------------------------------------------------- checks


def suite_check(suite_dir: Path) -> Check:
    """`accuracy.<suite>`, read back from a suite's evidence (run.json, gate.json): the decision
    rule's outcome and numbers (against the recorded baseline, or the reference server evaluated
    in the same run), `not_run` without a baseline (with what was measured), or the error that
    stopped the evaluation (with lm-eval's log tail)."""
    return _suite_check(AccuracyRun.read(suite_dir), suite_dir)


def _suite_check(run: AccuracyRun, suite_dir: Path) -> Check:
    name = f"accuracy.{run.suite.name}"
    evidence = [str(p) for p in sorted(suite_dir.rglob("*")) if p.is_file()]
    error = run.error
    if error:
        detail = "\n".join(tail(suite_dir / "lm_eval.log", LOG_TAIL_LINES)) or None
        return Check(name=name, status=CheckStatus(error.status), reason=error.reason, detail=detail,
                     evidence=evidence, unusable_input=error.unusable_input)
    measured = run.measured
    if measured is None:
        raise HarnessError(f"{suite_dir / RUN_RECORD} records neither an error nor a measurement")
    metrics: dict[str, Any] = measured.model_dump(include={"metric", "score", "n", "unpaired_questions"},
                                                  exclude_unset=True)
    gate = suite_dir / GATE
    if not gate.is_file():
        return Check(name=name, status=CheckStatus.not_run, evidence=evidence, metrics=metrics,
                     reason=f"no baseline in the runbook: measured {measured.metric} = {measured.score:.4f} "
                            f"on {measured.n} questions, not gated")
    result = AccuracyDecision.model_validate_json(gate.read_text())
    metrics.update(result.model_dump(exclude={"summary"}))
    reason = result.summary.removeprefix(f"{result.outcome}: ")  # the check's status already says it
    available = measured.dataset_questions
    if result.more_questions is not None and available is not None:
        metrics["dataset_questions"] = available
    reason += more_questions_advice(result, available)
    reference = run.reference
    if reference and reference.score is not None:
        metrics["reference"] = reference.name
        reason += (f" Baseline: reference server {reference.name} ({reference.model}), evaluated on the same "
                   f"questions in this run.")
    return Check(name=name, status=CheckStatus(result.outcome), reason=reason, metrics=metrics, evidence=evidence)
