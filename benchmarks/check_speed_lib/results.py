"""What one benchmark run found, handed from the stages (run.py) to the report (report.py)."""

from __future__ import annotations

import argparse
from collections import Counter
from dataclasses import dataclass, field

from .oracle import Release
from .sampler import ModuleBuilder, Ref, Sampler


@dataclass
class Timings:
    """The speed figures, in seconds (wall unless named cpu); lists hold one entry per --repeat run."""

    parse: dict  # time_parse: seconds, runs, cpu, files, mb, unparsable
    startup: float  # `python -m harness --help`
    manifest_seconds: float  # per-file manifest hashing when the release was seeded (not in the runs)
    cold_runs: list[float] = field(default_factory=list)
    cached_runs: list[float] = field(default_factory=list)
    cold_cpu: list[float] = field(default_factory=list)
    cached_cpu: list[float] = field(default_factory=list)
    edited_runs: list[float] = field(default_factory=list)  # index cached, one plugin file touched
    last: dict | None = None  # the last cold run_check: seconds, cpu, exit, payload, stderr, cwd_files


@dataclass
class Results:
    """Everything report() prints and write_results() writes."""

    args: argparse.Namespace
    old: Release
    new: Release
    harvest: dict  # unit -> what the probe found in it on the old release
    sampler: Sampler
    stats: dict  # generate_plugin's counts (files, ...)
    truth: dict[tuple[str, int], Ref]  # (file, line) -> the reference written there
    loader: dict  # "old"/"new" -> loader_check's result; empty with --skip-loader-check
    builders: list[ModuleBuilder]
    timings: Timings
    flags: set[tuple[str, int]]  # (file, line) harness check marks breaking
    flag_kinds: Counter
    flag_rule: str  # how "breaking" was read from the check's JSON
    harness_score: dict  # score(): table per kind, off_reference
    pyright: dict | None  # None with --skip-pyright
