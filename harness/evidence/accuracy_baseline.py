"""The accuracy suite's baseline side: the per-sample baseline read and paired with this run's
questions, the inputs the verdict depends on recorded in the evidence, and the decision rule
(`harness.stats.accuracy.decide`) applied to per-question records."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.evidence.lmeval import SampleRecord, UnusableInput, measured_nothing, sample_records
from harness.evidence.runbook import AccuracySuite
from harness.stats.accuracy import AccuracyDecision, decide
from harness.stats.sequential import SequentialDesign
from harness.util.files import file_record


def load_baseline_samples(path: Path, key: str) -> dict[int, SampleRecord]:
    """Per-question baseline results by doc_id: a harness samples.jsonl, or lm-eval's own
    samples JSONL (rows with doc_id, filter and the metric)."""
    metric, _, filter_name = key.partition(",")
    try:
        lines = Path(path).read_text().splitlines()
    except OSError as exc:
        raise UnusableInput(f"cannot read baseline samples {path}: {exc.strerror or exc}") from None
    rows: dict[int, SampleRecord] = {}
    lm_eval_rows = []
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
                lm_eval_rows.append(row)
        except (ValueError, KeyError, IndexError) as exc:
            raise UnusableInput(f"{path}:{number}: not a per-sample row with doc_id and {metric!r}: {exc}") from None
        rows[record.doc_id] = record
    if lm_eval_rows:  # read again as one run: a response is judged against the run's other questions too
        rows.update({record.doc_id: record for record in sample_records({"samples": {"t": lm_eval_rows}}, "t", key)})
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


def rule_scores(records: list[SampleRecord], right_wrong: bool) -> list[float]:
    """The per-question values the decision rule reads: 1.0 / 0.0 from `correct` when every
    question of the comparison is right/wrong, the metric's score otherwise."""
    return [float(bool(r.correct)) for r in records] if right_wrong else [r.score for r in records]


def decide_samples(baseline: list[SampleRecord], candidate: list[SampleRecord], suite: AccuracySuite,
                   design: SequentialDesign | None = None) -> AccuracyDecision:
    """The paired decision rule (`harness.stats.accuracy.decide`) on the same questions
    (`baseline[i]`, `candidate[i]`), at the suite's margin and alpha (and `design`'s looks)."""
    right_wrong = all(r.correct is not None for r in baseline + candidate)
    return decide(rule_scores(candidate, right_wrong), rule_scores(baseline, right_wrong),
                  candidate_outputs=[r.generated for r in candidate], baseline_outputs=[r.generated for r in baseline],
                  measured_nothing=measured_nothing(candidate) or measured_nothing(baseline), margin=suite.margin, alpha=suite.alpha, design=design)


BASELINE_COPY = "baseline_samples.jsonl"
INPUTS_RECORD = "inputs.json"


def record_inputs(suite: AccuracySuite, out: Path) -> Path | None:
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


def baseline_doc_ids(path: Path) -> set[int]:
    """The doc ids of a per-sample baseline file; UnusableInput when it cannot be read."""
    try:
        return {int(json.loads(line)["doc_id"]) for line in Path(path).read_text().splitlines() if line.strip()}
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise UnusableInput(f"cannot read doc ids from baseline samples {path}: {exc}") from None
