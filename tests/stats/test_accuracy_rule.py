"""The accuracy decision rule: known values, internal consistency, and its error rates by simulation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize, stats

from harness.errors import HarnessError
from harness.stats.proportions import (
    newcombe_interval,
    paired_mean_test,
    paired_p_values,
    paired_test,
    paired_test_from_counts,
    tango_interval,
    tango_z,
    unpaired_test,
)
from harness.stats.sequential import (
    sequential_decisions,
    sequential_design,
    sequential_paired_test,
    spending_boundaries,
)


def paired_lists(n: int, baseline_correct: int, losses: int, wins: int) -> tuple[list[bool], list[bool]]:
    """Per-question outcomes with the given 2×2 table."""
    both = baseline_correct - losses
    neither = n - both - losses - wins
    baseline = [True] * both + [True] * losses + [False] * wins + [False] * neither
    candidate = [True] * both + [False] * losses + [True] * wins + [False] * neither
    return baseline, candidate


# ------------------------------------------------------------------------ known values


def test_exact_mcnemar_at_margin_zero():
    # 10 discordant pairs, all losses: P(X <= 0 | Bin(10, 1/2)) = 1/1024.
    result = paired_test_from_counts(100, 60, losses=10, wins=0, margin=0.0)
    assert result.p_drop == pytest.approx(1 / 1024)
    assert result.p_non_inferior == pytest.approx(1.0)
    assert result.outcome == "failed" and "exact McNemar" in result.rule
    # 6 losses vs 2 wins: one-sided P(X <= 2 | Bin(8, 1/2)) = 37/256 → not significant.
    assert paired_test_from_counts(100, 60, losses=6, wins=2, margin=0.0).p_drop == pytest.approx(37 / 256)


def test_newcombe_matches_published_values():
    # Newcombe (1998), Stat Med 17:873, example (a): 56/70 vs 48/80, method 10: 0.0524 to 0.3339.
    low, high = newcombe_interval(56, 70, 48, 80, stats.norm.isf(0.025))
    assert (round(low, 4), round(high, 4)) == (0.0524, 0.3339)


def test_tango_score_at_zero_is_mcnemars_statistic():
    for wins, losses in [(3, 9), (10, 4), (25, 25), (0, 7)]:
        assert tango_z(200, wins, losses, 0.0) == pytest.approx((wins - losses) / math.sqrt(wins + losses))


def test_tango_restricted_estimate_maximises_the_likelihood():
    """The closed-form restricted MLE of p21 against a numerical maximisation."""
    n, wins, losses, delta0 = 300, 12, 25, -0.02
    concordant = n - wins - losses

    def negative_log_likelihood(p21: float) -> float:
        p12 = p21 + delta0
        return -(wins * math.log(p12) + losses * math.log(p21) + concordant * math.log(1 - p12 - p21))

    p21 = optimize.minimize_scalar(
        negative_log_likelihood,
        bounds=(-delta0 + 1e-9, (1 - delta0) / 2 - 1e-9),
        method="bounded",
        options={"xatol": 1e-12},
    ).x
    expected = (wins - losses - n * delta0) / math.sqrt(n * (2 * p21 + delta0 * (1 - delta0)))
    assert float(tango_z(n, wins, losses, delta0)) == pytest.approx(expected, rel=1e-6)


def test_interval_inverts_the_test_and_is_symmetric():
    low, high = tango_interval(250, 14, 30, 0.05)
    assert float(tango_z(250, 14, 30, low)) == pytest.approx(stats.norm.isf(0.05), abs=1e-6)
    assert float(tango_z(250, 14, 30, high)) == pytest.approx(-stats.norm.isf(0.05), abs=1e-6)
    swapped_low, swapped_high = tango_interval(250, 30, 14, 0.05)
    assert (swapped_low, swapped_high) == pytest.approx((-high, -low), abs=1e-9)
    assert low < (14 - 30) / 250 < high


def test_decisions_agree_with_the_interval():
    for losses, wins in [(5, 5), (40, 10), (12, 20), (3, 0)]:
        result = paired_test_from_counts(500, 300, losses, wins)
        expected = "passed" if result.ci_low > -0.02 else "failed" if result.ci_high < -0.02 else "inconclusive"
        assert result.outcome == expected


def test_swapping_baseline_and_candidate_mirrors_the_estimate():
    baseline, candidate = paired_lists(400, 240, losses=30, wins=12)
    forward, backward = paired_test(baseline, candidate), paired_test(candidate, baseline)
    assert forward.difference == pytest.approx(-backward.difference)
    assert (forward.losses, forward.wins) == (backward.wins, backward.losses)
    assert (forward.ci_low, forward.ci_high) == pytest.approx((-backward.ci_high, -backward.ci_low))


def test_outcomes_and_sample_size_suggestion():
    # Identical answers on 1,000 questions: non-inferior within 2 points.
    assert paired_test(*paired_lists(1000, 550, 0, 0)).outcome == "passed"
    # A 10-point drop on 200 questions is evident.
    assert paired_test(*paired_lists(200, 110, 22, 2)).outcome == "failed"
    # A 1-point drop on 60 questions decides nothing; the suggestion is the n at which the
    # observed rates would give the score statistic z_alpha + z_0.8.
    result = paired_test(*paired_lists(60, 33, 2, 1))
    assert result.outcome == "inconclusive" and result.more_questions > 0
    z = float(tango_z(60, 1, 2, -0.02))
    needed = 60 * ((stats.norm.isf(0.05) + stats.norm.ppf(0.8)) / z) ** 2
    assert result.more_questions == math.ceil(needed - 60)
    scaled = math.ceil(needed)
    assert abs(float(tango_z(scaled, 1 * scaled / 60, 2 * scaled / 60, -0.02))) >= stats.norm.isf(0.05)
    assert f"About {result.more_questions} more questions" in result.summary


def test_unpaired_rule_and_its_limits():
    result = unpaired_test(1000, 1319, 0.55, 1319)
    assert result.paired is False and "Newcombe" in result.rule
    assert result.outcome == "passed"  # 75.8 % measured vs 55 % recorded
    assert unpaired_test(400, 1319, 0.55, 1319).outcome == "failed"
    # Equal scores on 200 questions each: the baseline's own noise exceeds the margin.
    stuck = unpaired_test(110, 200, 0.55, 200)
    assert stuck.outcome == "inconclusive" and stuck.more_questions is None
    assert "per-sample baseline" in stuck.summary


def test_paired_scores_use_a_t_interval():
    rng = np.random.default_rng(0)
    baseline = rng.uniform(0.2, 0.9, 300)
    result = paired_mean_test(baseline, baseline - 0.1 + rng.normal(0, 0.02, 300))
    assert result.outcome == "failed" and "paired t" in result.rule
    assert paired_mean_test(baseline, baseline + rng.normal(0, 0.02, 300)).outcome == "passed"


def test_bad_inputs_are_one_line_errors():
    with pytest.raises(HarnessError, match="same questions"):
        paired_test([True, False], [True])
    with pytest.raises(HarnessError, match="alpha"):
        paired_test([True], [True], alpha=0.7)
    with pytest.raises(HarnessError, match="increasing"):
        sequential_design([100, 50])


# ----------------------------------------------------------------------- sequential


def test_spending_boundaries_match_published_tables():
    # Lan–DeMets O'Brien–Fleming and Pocock spending, 5 equal looks, one-sided 0.025
    # (Jennison & Turnbull 2000; gsDesign sfLDOF / sfLDPocock).
    of = spending_boundaries([0.2, 0.4, 0.6, 0.8, 1.0], 0.025, "obrien-fleming")
    assert of == pytest.approx([4.877, 3.357, 2.680, 2.290, 2.031], abs=2e-3)
    pocock = spending_boundaries([0.2, 0.4, 0.6, 0.8, 1.0], 0.025, "pocock")
    assert pocock == pytest.approx([2.438, 2.427, 2.410, 2.397, 2.386], abs=2e-3)


def test_sequential_gate_stops_at_the_first_decisive_look():
    design = sequential_design([100, 200, 300, 400])
    baseline, candidate = paired_lists(400, 240, losses=60, wins=4)
    # Spread the losses evenly so every chunk looks alike.
    order = np.random.default_rng(1).permutation(400)
    result = sequential_paired_test([baseline[i] for i in order], [candidate[i] for i in order], design)
    assert result.outcome == "failed" and result.sequential.look < 4
    # Data short of the next look and undecided: the result asks for the next chunk.
    partial = sequential_paired_test(*paired_lists(150, 90, 2, 2), design)
    assert partial.outcome == "inconclusive" and partial.sequential.next_look == 200


# ------------------------------------------------------------------ error rates (H0)


def simulate_tables(rng, reps: int, n: int, wins_rate: float, losses_rate: float):
    counts = rng.multinomial(n, [wins_rate, losses_rate, 1 - wins_rate - losses_rate], size=reps)
    return counts[:, 0], counts[:, 1]


@pytest.mark.parametrize("n, discordance", [(200, 0.06), (1319, 0.12)])
def test_false_pass_rate_at_the_margin_is_at_most_alpha(n, discordance):
    """Under H0 (true drop exactly the margin) the gate passes in at most ~alpha of runs."""
    rng = np.random.default_rng(7)
    margin, alpha, reps = 0.02, 0.05, 20000
    wins, losses = simulate_tables(rng, reps, n, (discordance - margin) / 2, (discordance + margin) / 2)
    p_non_inferior, _ = paired_p_values(n, wins, losses, margin)
    rate = float(np.mean(p_non_inferior <= alpha))
    assert rate <= alpha + 3 * math.sqrt(alpha * (1 - alpha) / reps)


def test_false_fail_rate_of_exact_mcnemar_under_no_change():
    rng = np.random.default_rng(8)
    wins, losses = simulate_tables(rng, 20000, 300, 0.05, 0.05)
    _, p_drop = paired_p_values(300, wins, losses, 0.0)
    assert float(np.mean(p_drop <= 0.05)) <= 0.05  # exact test: conservative by construction


def test_sequential_false_pass_rate_is_controlled():
    rng = np.random.default_rng(9)
    design = sequential_design([250, 500, 750, 1000])
    margin, discordance, reps = 0.02, 0.1, 20000
    increments = [
        simulate_tables(rng, reps, size, (discordance - margin) / 2, (discordance + margin) / 2)
        for size in np.diff([0, *design.looks])
    ]
    wins = np.cumsum([w for w, _ in increments], axis=0).T
    losses = np.cumsum([lost for _, lost in increments], axis=0).T
    z = tango_z(np.array(design.looks), wins, losses, -margin)
    code, _ = sequential_decisions(z, design)
    assert float(np.mean(code == 1)) <= design.alpha + 3 * math.sqrt(design.alpha * (1 - design.alpha) / reps)
