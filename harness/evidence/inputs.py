"""What `harness run` checks before step 1, so an unusable input is found in a second instead
of at step 2, or after a whole lm-eval run: the runbook, the recipes and data files it names, and
its baselines — their format, that the suite's metric is one the task reports and that the
baseline rows carry, and that the baseline's questions pair with the ones the suite evaluates.

`check_runbook(path)` raises the first problem as one InputError line `file:line: field:
message`: in the runbook where the runbook must change (a missing file, an unknown task, a
baseline that does not cover the suite), in the data or baseline file where that file is wrong.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from harness.engines import ENGINES
from harness.errors import InputError
from harness.evidence.lmeval import UnusableInput, task_metrics
from harness.evidence.perf import load_bench_results
from harness.evidence.recipes import load_recipes
from harness.evidence.runbook import AccuracySuite, Runbook, load_runbook
from harness.util.yamlfile import YamlError, locate, parse_yaml


def check_runbook(path: Path, engine: str | None = None, plugin: str = "the plugin") -> Runbook:
    """The runbook at `path`, once it and every file it names are usable, and (with `engine`,
    the plugin's engine by name) it serves that engine; InputError `file:line: field: message`
    for the first problem."""
    runbook = load_runbook(path)
    _, root = parse_yaml(Path(path).read_text(encoding="utf-8"), Path(path))

    def at(loc: tuple[Any, ...], message: str) -> YamlError:
        line, label = locate(root, loc)
        return YamlError(Path(path), line, message, label)

    if engine is not None and runbook.environment.engine != engine:
        raise at(("environment", "engine"), f"the runbook serves {runbook.environment.engine_profile.display}, but "
                 f"{plugin} is for {ENGINES[engine].display}: use a runbook with `engine: {engine}` and its "
                 "`engine_version`")

    for index, recipes in enumerate(runbook.recipes):
        if not Path(recipes).is_file():
            raise at(("recipes", index), f"no such file: {recipes}")
        load_recipes(recipes)
    for index, suite in enumerate(runbook.accuracy):
        _check_accuracy(suite, lambda loc, message, i=index: at(("accuracy", i, *loc), message))
    for index, perf in enumerate(runbook.performance):
        if perf.baseline is not None:
            if not Path(perf.baseline).is_file():
                raise at(("performance", index, "baseline"), f"no such file: {perf.baseline}")
            load_bench_results(perf.baseline)
    return runbook


def _check_accuracy(suite: AccuracySuite, at) -> None:
    questions: list[str | None] | None = None
    for split, data in suite.data_files.items():
        if not Path(data).is_file():
            raise at(("data_files", split), f"no such file: {data}")
        rows = _json_lines(Path(data))
        if split == "test":
            questions = [row.get("question") if isinstance(row.get("question"), str) else None for _, row in rows]
    try:
        reported = task_metrics(suite.task)
    except UnusableInput as exc:
        raise at(("task",), str(exc)) from None
    metric, _, filter_name = (suite.metric or "").partition(",")
    if reported is not None and suite.metric is not None:
        metrics, filters = reported
        if metric not in metrics:
            raise at(("metric",), f"task {suite.task} reports {', '.join(metrics)}, not {metric!r}")
        if filter_name and filter_name not in filters:
            raise at(("metric",), f"task {suite.task} has the filters {', '.join(filters)}, not {filter_name!r}")
    if reported is not None and not metric:
        metric, filter_name = reported[0][0], reported[1][0]  # what lm-eval reports first
    baseline = suite.baseline
    if baseline is None or baseline.samples is None:
        return
    samples = Path(baseline.samples)
    if not samples.is_file():
        raise at(("baseline", "samples"), f"no such file: {samples}")
    doc_ids = _baseline_rows(samples, metric or None, filter_name or None, questions)
    paired = suite.gate != "unpaired"
    if paired and questions is not None and not suite.sequential:
        evaluated = len(questions) if suite.limit is None else min(suite.limit, len(questions))
        missing = [i for i in range(evaluated) if i not in doc_ids]
        if missing:
            raise at(("baseline", "samples"),
                     f"{samples.name} has rows for {evaluated - len(missing)} of the {evaluated} questions the suite "
                     f"evaluates (first missing: doc_id {missing[0]}); a truncated baseline? Complete it, or set "
                     f"`limit` to the questions it covers")


def _json_lines(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """(line number, object) of every non-blank line; YamlError `file:line: message` on a line
    that is not a JSON object (a torn last line, for one)."""
    rows = []
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from None
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise YamlError(path, number, f"not a JSON line ({exc.msg}); a truncated file?") from None
        if not isinstance(row, dict):
            raise YamlError(path, number, "not a JSON object")
        rows.append((number, row))
    if not rows:
        raise YamlError(path, 1, "no rows in the file")
    return rows


def _baseline_rows(path: Path, metric: str | None, filter_name: str | None,
                   questions: list[str | None] | None) -> set[int]:
    """The doc_ids of a per-sample baseline (harness samples.jsonl or lm-eval's samples JSONL),
    once every row has a doc_id and the metric, and, when the test questions are known, asks the
    question of that doc_id."""
    seen: dict[int, int] = {}
    for number, row in _json_lines(path):
        harness_row = "score" in row and "question_hash" in row
        if not harness_row and filter_name and row.get("filter", filter_name) != filter_name:
            continue  # lm-eval writes one row per filter
        doc_id = row.get("doc_id")
        if not isinstance(doc_id, int) or isinstance(doc_id, bool):
            raise YamlError(path, number, "missing or not an integer", "doc_id")
        if doc_id in seen:
            raise YamlError(path, number, f"{doc_id} appears twice (first on line {seen[doc_id]})", "doc_id")
        seen[doc_id] = number
        field = "score" if harness_row else metric
        if field is not None and not isinstance(row.get(field), (int, float)):
            raise YamlError(path, number, "missing or not a number" + ("" if harness_row else
                            " (the suite's metric)"), field)
        if questions is None:
            continue
        if doc_id < 0 or doc_id >= len(questions):
            raise YamlError(path, number, f"{doc_id} is not a question of the test data ({len(questions)} questions)",
                            "doc_id")
        question = questions[doc_id]
        if question is None:
            continue
        digest = hashlib.sha256(question.encode()).hexdigest()
        if harness_row and row["question_hash"] != digest:
            raise YamlError(path, number, f"does not match question {doc_id} of the test data: not the same data set",
                            "question_hash")
        doc = row.get("doc")
        if not harness_row and isinstance(doc, dict) and isinstance(doc.get("question"), str) \
                and doc["question"] != question:
            raise YamlError(path, number, f"is not question {doc_id} of the test data: not the same data set",
                            "doc.question")
    return set(seen)
