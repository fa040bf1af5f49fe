"""How many gsm8k questions does each accuracy gate need to catch a 3-point drop?

Monte-Carlo simulation (numpy, seeded) of the harness's paired gates — fixed-n and
group-sequential, using the functions in harness/stats/ — next to the fixed-threshold
gates used in the field: vLLM's lm-eval CI (pass if measured >= expected * (1 - 0.08)) and
SGLang's nightly check (fail if more than 5 % below the baseline, read as relative: 5 % of
0.55 = 2.75 points; read as 5 absolute points it could never catch a 3-point drop either).

    python benchmarks/gate_simulation.py [--reps 20000] [--seed 0]

Assumptions (printed with the results):
- baseline accuracy p0 = 0.55 (a small model on gsm8k);
- per question, outcomes are paired: a port that changes nothing still flips some answers
  through different numerics; we take 10 % of questions discordant, split evenly (5 % lost,
  5 % gained). A real 3-point drop adds 3 % lost questions (8 % lost, 5 % gained);
- the fixed-threshold gates compare the candidate's score with the baseline's score on the
  same questions. That is the most favourable case for them: question-sampling noise cancels
  and only the discordant questions move the score;
- "false fail" = the gate blocks an unchanged port; "power" = the gate blocks the 3-point drop.
  Target: false fail <= 0.05 and power >= 0.90.

The harness gate is a non-inferiority gate (pass only when the data show the drop is smaller
than the margin), so here it runs with margin = 3 points and gate alpha = 0.10: it passes a
3-point drop in at most 10 % of runs (power >= 0.9 by construction), and the question is how
many questions it needs to pass an unchanged port in >= 95 % of runs (false fail <= 0.05).
An inconclusive result counts as blocking, which is the conservative reading for the harness.
The exact McNemar drop test (margin 0: fail when a drop is significant) is shown as well.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.stats.proportions import paired_p_values, tango_z  # noqa: E402
from harness.stats.sequential import sequential_decisions, sequential_design  # noqa: E402

P0 = 0.55
NOISE_FLIP = 0.05  # lost = gained = 5 % of questions with no real change (discordance 10 %)
DROP = 0.03
TARGET_FALSE_FAIL, TARGET_POWER = 0.05, 0.90
NI_MARGIN, NI_ALPHA = DROP, 1 - TARGET_POWER
GSM8K = 1319
SEQUENTIAL_LOOKS = 5


def cells(drop: float, flip: float = NOISE_FLIP) -> list[float]:
    """Probabilities of (both right, baseline only, candidate only, both wrong)."""
    lost, gained = flip + drop, flip
    return [P0 - lost, lost, gained, 1 - P0 - gained]


def simulate(rng: np.random.Generator, n: int, drop: float, reps: int, flip: float = NOISE_FLIP) -> np.ndarray:
    """Counts per run: columns both-right, lost, gained, both-wrong."""
    return rng.multinomial(n, cells(drop, flip), size=reps)


def scores(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    n = counts.sum(axis=1)
    return (counts[:, 0] + counts[:, 1]) / n, (counts[:, 0] + counts[:, 2]) / n


# ---------------------------------------------------------------------------- gates
# Each returns a boolean array: True where the gate blocks the port.


def vllm_blocks(counts):
    baseline, candidate = scores(counts)
    return candidate < baseline * (1 - 0.08)


def sglang_blocks(counts):
    baseline, candidate = scores(counts)
    return candidate < baseline * (1 - 0.05)


def paired_ni_blocks(counts):
    n = int(counts[0].sum())
    p_non_inferior, _ = paired_p_values(n, counts[:, 2], counts[:, 1], NI_MARGIN)
    return p_non_inferior > NI_ALPHA  # not shown non-inferior → blocked


def mcnemar_blocks(counts):
    n = int(counts[0].sum())
    _, p_drop = paired_p_values(n, counts[:, 2], counts[:, 1], 0.0)
    return p_drop <= TARGET_FALSE_FAIL


def rates(seed: int, gate, n: int, reps: int, flip: float = NOISE_FLIP) -> tuple[float, float]:
    """(false fail, power) of a fixed-n gate. The generator is seeded per n (common random
    numbers), so the search below and the figures printed come from the same simulation."""
    rng = np.random.default_rng([seed, n])
    return float(gate(simulate(rng, n, 0.0, reps, flip)).mean()), float(gate(simulate(rng, n, DROP, reps, flip)).mean())


def meets_targets(false_fail: float, power: float, reps: int) -> bool:
    """Both targets, within two Monte-Carlo standard errors (the paired gate's power sits at
    0.9 by construction, so an exact comparison would flip on simulation noise)."""
    ff_tolerance = 2 * math.sqrt(TARGET_FALSE_FAIL * (1 - TARGET_FALSE_FAIL) / reps)
    power_tolerance = 2 * math.sqrt(TARGET_POWER * (1 - TARGET_POWER) / reps)
    return false_fail <= TARGET_FALSE_FAIL + ff_tolerance and power >= TARGET_POWER - power_tolerance


def smallest_n(seed: int, gate, reps: int, lo: int, hi: int, flip: float = NOISE_FLIP) -> int | None:
    """Smallest n in [lo, hi] meeting both targets (bisection; the criterion is monotone in n
    for these gates up to simulation noise)."""
    meets = lambda n: meets_targets(*rates(seed, gate, n, reps, flip), reps)  # noqa: E731
    if not meets(hi):
        return None
    while hi - lo > max(5, lo // 100):
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if meets(mid) else (mid, hi)
    return hi


def threshold_gate_needed_n(relative: float) -> tuple[float | None, str]:
    """Normal-approximation n for a relative-threshold gate on paired scores, or why none."""
    threshold = relative * P0  # absolute points below the baseline that fail the gate
    if threshold >= DROP:
        return (
            None,
            f"never: its threshold ({100 * threshold:.2f} points) exceeds the 3-point drop, so power falls with n",
        )
    z_ff, z_pw = stats.norm.isf(TARGET_FALSE_FAIL), stats.norm.isf(1 - TARGET_POWER)
    sd0 = math.sqrt(2 * NOISE_FLIP)  # per-question sd of (candidate - baseline), no change
    sd1 = math.sqrt(2 * NOISE_FLIP + DROP - DROP**2)
    # need threshold >= z_ff*sd0/sqrt(n) and (DROP - threshold) >= z_pw*sd1/sqrt(n)
    n = max((z_ff * sd0 / threshold) ** 2, (z_pw * sd1 / (DROP - threshold)) ** 2)
    return n, f"n ≈ {n:,.0f}, normal approx." + (f" (gsm8k has {GSM8K:,})" if n > GSM8K else "")


def closed_form_paired_n(flip: float = NOISE_FLIP) -> float:
    """Non-inferiority sample size for paired proportions (Connor 1987 style, Wald)."""
    z = stats.norm.isf(NI_ALPHA) + stats.norm.isf(TARGET_FALSE_FAIL)
    return z**2 * (2 * flip) / NI_MARGIN**2


# ----------------------------------------------------------------------- sequential


def sequential_rates(seed: int, n_max: int, reps: int, flip: float = NOISE_FLIP):
    """Group-sequential non-inferiority gate (the harness's sequential_paired_gate rule,
    vectorised): returns, per scenario, (blocked rate, expected questions)."""
    rng = np.random.default_rng([seed, n_max])
    looks = [round(n_max * (k + 1) / SEQUENTIAL_LOOKS) for k in range(SEQUENTIAL_LOOKS)]
    design = sequential_design(looks, alpha=NI_ALPHA)
    out = {}
    for label, drop in (("no change", 0.0), ("3-point drop", DROP)):
        chunks = [simulate(rng, size, drop, reps, flip) for size in np.diff([0, *looks])]
        cumulative = np.cumsum(chunks, axis=0)  # (looks, reps, 4)
        z = tango_z(np.array(looks)[:, None], cumulative[..., 2], cumulative[..., 1], -NI_MARGIN).T
        code, stop = sequential_decisions(z, design)
        out[label] = (float(np.mean(code != 1)), float(np.mean(np.array(looks)[stop])))
    return out, design


def smallest_sequential_n(seed: int, reps: int, lo: int, hi: int):
    def meets(n):
        result, _ = sequential_rates(seed, n, reps)
        return meets_targets(result["no change"][0], result["3-point drop"][0], reps)

    while hi - lo > max(5, lo // 100):
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if meets(mid) else (mid, hi)
    return hi


# ----------------------------------------------------------------------------- main


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=20000, help="simulated runs per point")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    seed = args.seed
    started = time.monotonic()

    print("Accuracy gate simulation — catching a 3-point gsm8k drop")
    print(
        f"  baseline p0={P0}; no change: {100 * NOISE_FLIP:.0f} % lost + {100 * NOISE_FLIP:.0f} % gained questions "
        f"(discordance {100 * 2 * NOISE_FLIP:.0f} %); 3-point drop: {100 * (NOISE_FLIP + DROP):.0f} % lost + "
        f"{100 * NOISE_FLIP:.0f} % gained"
    )
    print(
        f"  target: false fail <= {TARGET_FALSE_FAIL} (blocks an unchanged port), power >= {TARGET_POWER} "
        f"(blocks the drop); {args.reps:,} simulated runs per point, seed {args.seed}"
    )
    print("  field gates compare scores on the same questions (most favourable case for them)")
    print("  'questions needed': smallest n meeting both targets within 2 Monte-Carlo standard errors\n")

    rows = []
    field_needed = {}
    for name, relative, gate in (
        ("vLLM: >= expected*(1-0.08)", 0.08, vllm_blocks),
        ("SGLang: <= 5 % below baseline", 0.05, sglang_blocks),
    ):
        ff200, pw200 = rates(seed, gate, 200, args.reps)
        ff1319, pw1319 = rates(seed, gate, GSM8K, args.reps)
        field_needed[name.split(":")[0]], needed = threshold_gate_needed_n(relative)
        rows.append((name, ff200, pw200, ff1319, pw1319, needed))

    ni_n = smallest_n(seed, paired_ni_blocks, args.reps, 100, 6000)
    mcnemar_n = smallest_n(seed, mcnemar_blocks, args.reps, 100, 6000)
    for name, gate, needed in (
        (f"harness paired NI (margin 3, alpha {NI_ALPHA:.2f})", paired_ni_blocks, ni_n),
        ("harness exact McNemar drop test", mcnemar_blocks, mcnemar_n),
    ):
        ff200, pw200 = rates(seed, gate, 200, args.reps)
        ff1319, pw1319 = rates(seed, gate, GSM8K, args.reps)
        text = f"n ≈ {needed:,}" if needed else "> 6,000"
        rows.append((name, ff200, pw200, ff1319, pw1319, text))

    header = (
        f"{'gate':<42} {'n=200 false fail':>16} {'power':>7} {'n=1319 false fail':>18} {'power':>7}"
        "   questions for ff<=0.05 & power>=0.9"
    )
    print(header)
    print("-" * len(header))
    for name, ff200, pw200, ff1319, pw1319, needed in rows:
        print(f"{name:<42} {ff200:>16.3f} {pw200:>7.3f} {ff1319:>18.3f} {pw1319:>7.3f}   {needed}")

    for n in (200, GSM8K):
        counts = simulate(np.random.default_rng([seed, n]), n, 0.0, args.reps)
        p_non_inferior, p_drop = paired_p_values(n, counts[:, 2], counts[:, 1], NI_MARGIN)
        failed = float(np.mean((p_non_inferior > NI_ALPHA) & (p_drop <= NI_ALPHA)))
        print(
            f"  harness NI gate, unchanged port, n={n}: blocked {np.mean(p_non_inferior > NI_ALPHA):.3f} = "
            f"inconclusive (asks for more questions) {np.mean(p_non_inferior > NI_ALPHA) - failed:.3f} "
            f"+ failed {failed:.3f}"
        )

    seq_n = smallest_sequential_n(seed, args.reps, 100, 6000)
    seq, design = sequential_rates(seed, seq_n, args.reps)
    print()
    print(
        f"Sequential paired NI gate: {SEQUENTIAL_LOOKS} looks, O'Brien-Fleming alpha spending, "
        f"max {seq_n:,} questions, boundaries |z| >= {', '.join(f'{c:.2f}' for c in design.boundaries)}"
    )
    for label, (blocked, expected) in seq.items():
        kind = "false fail" if label == "no change" else "power"
        print(f"  {label:<13} {kind} {blocked:.3f}, expected questions {expected:,.0f}")
    print()
    print(f"Closed form (Wald) for the fixed paired NI gate: n ≈ {closed_form_paired_n():,.0f}")
    print("Sensitivity of the fixed paired NI gate to the no-change discordance:")
    for flip in (0.025, 0.05, 0.10):
        n = smallest_n(seed, paired_ni_blocks, args.reps // 2, 50, 12000, flip=flip)
        found = f"{n:,}" if n else "> 12,000"
        print(f"  discordance {100 * 2 * flip:>4.0f} %: n ≈ {found} (closed form {closed_form_paired_n(flip):,.0f})")
    print()
    print("Questions to reach false fail <= 0.05 and power >= 0.9:")
    expected_seq = seq["no change"][1]
    for name, needed in field_needed.items():
        if needed is None:
            print(
                f"  {name}: never (threshold wider than the drop); paired gate {ni_n:,} fixed, "
                f"{expected_seq:,.0f} expected sequential (unchanged port)"
            )
        else:
            print(
                f"  {name}: {needed:,.0f}; paired gate {ni_n:,} fixed = {100 * ni_n / needed:.1f} %, "
                f"sequential {expected_seq:,.0f} expected = {100 * expected_seq / needed:.1f} % of its questions"
            )
    print(f"[{time.monotonic() - started:.0f} s]")


if __name__ == "__main__":
    main()
