"""The same-run A/B rule (harness.stats.performance.compare_paired_requests): how often does it
fail a candidate that is the reference (A vs A), and what is the smallest slowdown it fails at
power 0.9, with the built-in example's design?

    python benchmarks/ab_rule.py [--reps 1000] [--seed 0] [--prompts N] [--repetitions K]

The design (prompts, repetitions, tolerance) defaults to the built-in example runbook's first
performance suite.

Monte-Carlo (numpy, seeded). Model of one per-request latency, on the log scale:
    log y = prompt effect (shared by both sides: same prompt)
          + run effect (one per bench_serving run: machine load, clocks; sd sigma_run)
          + request noise (sd sigma_req) + log(1 + slowdown) on the candidate.
Repetitions alternate A B, B A, A B, …: each candidate run is paired with the adjacent reference run.
Two machines: quiet (sigma_run 0.02, sigma_req 0.05: a dedicated box) and loaded (sigma_run
0.25, sigma_req 0.10: the 2 shared CI cores with other jobs, as measured on this machine, where
the same engine's TTFT doubled between back-to-back runs). "false alarm" = outcome failed on A vs
A; power = outcome failed on the slowdown; alpha 0.05, as in the example.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from harness.evidence.runbook import load_runbook
from harness.stats.performance import Metric, compare_paired_requests

EXAMPLE = Path(__file__).resolve().parents[1] / "harness" / "examples" / "workspace" / "runbook.yaml"

LATENCY = Metric(key="latency_ms", label="E2E latency", unit="ms", higher_is_better=False)
MACHINES = {"quiet": (0.02, 0.05), "loaded": (0.25, 0.10)}


def simulate(rng: np.random.Generator, slowdown: float, prompts: int, repetitions: int, sigma_run: float,
             sigma_req: float, tolerance: float) -> str:
    prompt = rng.normal(np.log(500.0), 0.3, prompts)
    sides = []
    for shift in (np.log1p(slowdown), 0.0):
        reps = [prompt + rng.normal(0, sigma_run) + rng.normal(0, sigma_req, prompts) + shift
                for _ in range(repetitions)]
        sides.append([list(np.exp(r)) for r in reps])
    return compare_paired_requests(LATENCY, sides[0], sides[1], tolerance=tolerance).outcome


def rate(rng, slowdown, reps, **design) -> float:
    return sum(simulate(rng, slowdown, **design) == "failed" for _ in range(reps)) / reps


def main() -> None:
    example = load_runbook(EXAMPLE).performance[0]
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--prompts", type=int, default=example.num_prompts,
                        help=f"num_prompts per repetition (example: {example.num_prompts})")
    parser.add_argument("--repetitions", type=int, default=example.repetitions,
                        help=f"repetitions per side (example: {example.repetitions})")
    parser.add_argument("--tolerance", type=float, default=example.tolerance)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    print(f"design: {args.prompts} prompts x {args.repetitions} repetitions per side, interleaved; "
          f"tolerance {args.tolerance:.0%}, alpha 0.05; {args.reps} simulated runs per cell")
    print(f"{'machine':8} {'sigma_run':>9} {'sigma_req':>9} {'false alarm A/A':>16} {'P(pass) A/A':>12} "
          f"{'P(inconclusive) A/A':>20} {'smallest slowdown failed at power 0.9':>38}")
    for name, (sigma_run, sigma_req) in MACHINES.items():
        design = {"prompts": args.prompts, "repetitions": args.repetitions, "sigma_run": sigma_run,
                  "sigma_req": sigma_req, "tolerance": args.tolerance}
        outcomes = [simulate(rng, 0.0, **design) for _ in range(args.reps)]
        false_alarm = outcomes.count("failed") / args.reps
        passed = outcomes.count("passed") / args.reps
        smallest = next((s for s in np.arange(0.10, 5.01, 0.05) if rate(rng, s, args.reps // 2, **design) >= 0.9),
                        None)
        found = f"+{smallest:.0%}" if smallest is not None else "> +500%"
        print(f"{name:8} {sigma_run:9.2f} {sigma_req:9.2f} {false_alarm:16.3f} {passed:12.3f} "
              f"{1 - false_alarm - passed:20.3f} {found:>38}")


if __name__ == "__main__":
    main()
