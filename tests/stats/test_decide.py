"""`decide` is the accuracy rule's one entry point: on plain lists it picks the test the data
call for (paired right/wrong, paired scores, unpaired aggregate, group-sequential) and applies
the vacuity rule, and gives what the test it picked gives."""

from __future__ import annotations

import pytest

from harness.errors import HarnessError
from harness.stats.accuracy import AccuracyDecision, decide, more_questions_advice
from harness.stats.proportions import (
    RULE_EXACT_MCNEMAR,
    RULE_NEWCOMBE,
    RULE_PAIRED_T,
    RULE_TANGO,
    paired_mean_test,
    paired_test,
    unpaired_test,
)
from harness.stats.sequential import sequential_design, sequential_paired_test


def table(n: int, baseline_correct: int, losses: int, wins: int) -> tuple[list[float], list[float]]:
    """Per-question 0/1 scores (baseline, candidate) with the given 2×2 table."""
    both = baseline_correct - losses
    neither = n - both - losses - wins
    baseline = [1.0] * both + [1.0] * losses + [0.0] * wins + [0.0] * neither
    candidate = [1.0] * both + [0.0] * losses + [1.0] * wins + [0.0] * neither
    return baseline, candidate


def test_right_wrong_scores_take_the_paired_proportion_test():
    baseline, candidate = table(400, 300, losses=6, wins=4)
    result = decide(candidate, baseline, margin=0.02, alpha=0.05)
    expected = paired_test([bool(s) for s in baseline], [bool(s) for s in candidate], margin=0.02, alpha=0.05)
    assert result == expected and result.rule == RULE_TANGO and result.paired
    assert decide(candidate, baseline, margin=0.0).rule == RULE_EXACT_MCNEMAR


def test_scores_that_are_not_right_or_wrong_take_the_paired_t_rule():
    baseline = [0.2 + 0.6 * (i % 7) / 7 for i in range(60)]
    candidate = [s - 0.01 * (i % 3) for i, s in enumerate(baseline)]
    result = decide(candidate, baseline)
    assert result == paired_mean_test(baseline, candidate) and result.rule == RULE_PAIRED_T


def test_an_aggregate_baseline_takes_the_unpaired_rule():
    candidate = [1.0] * 150 + [0.0] * 50
    result = decide(candidate, baseline_score=0.74, baseline_n=1319)
    assert result == unpaired_test(150, 200, 0.74, 1319) and result.rule == RULE_NEWCOMBE and not result.paired


def test_a_sequential_design_takes_the_group_sequential_rule():
    design = sequential_design([100, 200, 300, 400])
    baseline, candidate = table(400, 300, losses=2, wins=2)
    outputs = [f"answer {i}" for i in range(400)]
    result = decide(candidate, baseline, candidate_outputs=outputs, design=design)
    expected = sequential_paired_test([bool(s) for s in baseline], [bool(s) for s in candidate], design)
    assert result == expected and result.sequential is not None
    with pytest.raises(HarnessError, match="right/wrong"):
        decide([0.5] * 400, [0.5] * 400, design=design)


def test_a_measurement_of_nothing_is_never_passed_on_any_path():
    assert decide([0.0] * 300, [0.0] * 300).vacuous  # paired 0 vs 0
    same = decide([1.0] * 300, [1.0] * 300, candidate_outputs=["x"] * 300)
    assert same.outcome == "inconclusive" and "same text" in same.vacuous
    assert decide([0.0] * 300, baseline_score=0.0, baseline_n=300).outcome == "inconclusive"
    assert decide([1.0] * 300, [1.0] * 300, candidate_outputs=[str(i) for i in range(300)]).outcome == "passed"


def test_exactly_one_kind_of_baseline():
    with pytest.raises(HarnessError, match="not both or neither"):
        decide([1.0])
    with pytest.raises(HarnessError, match="not both or neither"):
        decide([1.0], [1.0], baseline_score=0.5, baseline_n=10)
    with pytest.raises(HarnessError, match="same questions"):
        decide([1.0, 0.0], [1.0])


def test_more_questions_are_weighed_against_the_data_set():
    result = AccuracyDecision.model_validate(
        {**decide([1.0] * 50 + [0.0] * 50, [1.0] * 52 + [0.0] * 48).model_dump(), "more_questions": 400})
    assert more_questions_advice(result, 300) == " That is more than the 300 questions the data set holds."
    assert more_questions_advice(result, 1319) == " The data set holds 1319; raise `limit` to use more."
    assert more_questions_advice(result, None) == ""
