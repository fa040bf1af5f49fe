"""The accuracy decision rule: is the candidate's accuracy within `margin` of the baseline's?

`decide` is the rule's one entry point: per-question scores (or an aggregate baseline score) in,
an `AccuracyDecision` out. Three outcomes:

- ``passed``: non-inferiority shown — the one-sided (1 − alpha) lower bound of
  Δ = accuracy(candidate) − accuracy(baseline) is above −margin;
- ``failed``: a drop larger than the margin is evident — the one-sided (1 − alpha) upper
  bound of Δ is below −margin;
- ``inconclusive``: neither; the result says about how many more questions would decide it.
  A measurement that measured nothing (`vacuity`) is never ``passed``: it is inconclusive and
  says why, because no number of questions can make such a metric certify a port.

Which test applies (each result names the one it used):

- paired (a per-sample baseline, recorded or evaluated in the same run on a reference server),
  right/wrong scores: exact McNemar at margin 0, Tango's score test above it
  (`harness.stats.proportions`);
- paired scores that are not right/wrong (F1, ROUGE): the paired t rule;
- unpaired (only an aggregate baseline score): Newcombe's hybrid score interval;
- group-sequential (paired right/wrong, planned looks): `harness.stats.sequential`.
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.errors import HarnessError
from harness.stats.decision import DEFAULT_ALPHA, DEFAULT_MARGIN, AccuracyDecision
from harness.stats.proportions import paired_mean_test, paired_test, unpaired_test
from harness.stats.sequential import SequentialDesign, sequential_paired_test


def decide(
    candidate: Sequence[float],
    baseline: Sequence[float] | None = None,
    *,
    baseline_score: float | None = None,
    baseline_n: int | None = None,
    candidate_outputs: Sequence[str] | None = None,
    baseline_outputs: Sequence[str] | None = None,
    measured_nothing: str | None = None,
    margin: float = DEFAULT_MARGIN,
    alpha: float = DEFAULT_ALPHA,
    design: SequentialDesign | None = None,
) -> AccuracyDecision:
    """The accuracy rule on one suite's per-question scores (fractions in [0, 1]).

    Paired when `baseline` is given: `baseline[i]` and `candidate[i]` score the same question
    (a recorded per-sample baseline or a reference server evaluated in the same run). Scores all
    0 or 1 are right/wrong (McNemar / Tango, or the group-sequential rule at `design`'s looks);
    any other score takes the paired t rule. Unpaired when only the aggregate `baseline_score`
    on `baseline_n` questions is known (Newcombe). Outputs are the generated texts, when known,
    for the vacuity rule: a measurement of nothing is never passed; `measured_nothing` says why
    a side's records measured nothing their texts do not show (harness.evidence.lmeval.measured_nothing:
    generation cut short, one answer to every question), when they did not.

    HarnessError without exactly one kind of baseline, on sides of different lengths, on a
    sequential design with scores that are not right/wrong, or parameters out of range."""
    if (baseline is None) == (baseline_score is None or baseline_n is None):
        raise HarnessError("the accuracy rule needs per-question baseline scores or an aggregate "
                           "baseline score and its question count, not both or neither")
    if baseline is None:
        vacuous = vacuity([baseline_score], candidate, candidate_outputs=candidate_outputs) or measured_nothing
        return unpaired_test(round(sum(candidate)), len(candidate), baseline_score, baseline_n,
                             margin=margin, alpha=alpha, vacuous=vacuous)
    vacuous = vacuity(baseline, candidate, baseline_outputs=baseline_outputs, candidate_outputs=candidate_outputs) or measured_nothing
    right_wrong = all(score in (0.0, 1.0) for score in [*baseline, *candidate])
    if design is not None:
        if not right_wrong:
            raise HarnessError("the sequential rule needs right/wrong scores (0 or 1)")
        return sequential_paired_test([bool(s) for s in baseline], [bool(s) for s in candidate], design,
                                      margin=margin, vacuous=vacuous)
    if right_wrong:
        return paired_test([bool(s) for s in baseline], [bool(s) for s in candidate], margin=margin,
                           alpha=alpha, vacuous=vacuous)
    return paired_mean_test(baseline, candidate, margin=margin, alpha=alpha, vacuous=vacuous)


def more_questions_advice(result: AccuracyDecision, dataset_questions: int | None) -> str:
    """What an inconclusive result's "about K more questions" means for a data set of
    `dataset_questions` (None when unknown): "" when there is nothing to add."""
    if result.more_questions is None or dataset_questions is None:
        return ""
    if result.n + result.more_questions > dataset_questions:
        return f" That is more than the {dataset_questions} questions the data set holds."
    return f" The data set holds {dataset_questions}; raise `limit` to use more."


def vacuity(
    baseline_scores: Sequence[float] | None,
    candidate_scores: Sequence[float],
    *,
    baseline_outputs: Sequence[str] | None = None,
    candidate_outputs: Sequence[str] | None = None,
) -> str | None:
    """Why a comparison measured nothing, or None when it measured something.

    A metric that is 0 on every question on both sides (0 vs 0 — e.g. gsm8k strict-match on
    answers without '#### N') cannot tell a working port from a broken one, and neither can
    outputs that are all empty or all the same text. Scores are per-question metric values
    (for an aggregate baseline, pass its one score as `[score]`); outputs are the generated
    texts ("" for a response that only repeats its prompt, answers another question of the run,
    is token ids or a reply body of the server, or a question whose choices all tie:
    SampleRecord.generated), None where
    they are not known."""
    if (candidate_scores and baseline_scores is not None and len(baseline_scores) > 0
            and not any(baseline_scores) and not any(candidate_scores)):
        return ("the metric is 0 on every question on both sides (0 vs 0): it measured nothing, so it "
                "cannot show the port is accurate; check the metric and its answer filter")
    for side, outputs in (("baseline", baseline_outputs), ("candidate", candidate_outputs)):
        if not outputs:
            continue
        texts = [text.strip() for text in outputs]
        if not any(texts):
            return (f"every {side} output is empty, its prompt echoed back or repeated, an answer to another question "
                    "of the run, token ids instead of text, the server's reply body (an error, an event stream) instead "
                    f"of text, or a tie of every choice ({len(texts)} questions): the model produced no answers to its questions")
        if len(texts) > 1 and len(set(texts)) == 1:
            shown = texts[0] if len(texts[0]) <= 60 else texts[0][:57] + "..."
            return (f"every {side} output is the same text ({shown!r}, {len(texts)} questions): "
                    "the model's answers do not depend on the question")
    return None

