"""A runner's evidence judged the way its step judges it: collect with the evidence runner,
then read the checks back with the runner's own check functions (a module of its own, not
conftest, so test modules can import it)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from harness.evidence.fallback import fallback_checks, run_fallback_scan
from harness.evidence.perf import load_bench_results, run_performance
from harness.evidence.runner import runner
from harness.evidence.smoke import read_exchanges, run_smoke, smoke_checks
from harness.record.checks import overall
from harness.stats.performance import summarize


def smoke(server, spec, evidence_dir: Path) -> SimpleNamespace:
    log = run_smoke(server, spec, evidence_dir)
    checks = smoke_checks(read_exchanges(log), spec, [str(log)])
    return SimpleNamespace(checks=checks, evidence=log, status=overall(checks))


def fallback_scan(runbook, **kwargs) -> SimpleNamespace:
    scan = run_fallback_scan(runbook, **kwargs)
    return SimpleNamespace(checks=fallback_checks(scan.hits, scan.record, scan.evidence), hits=scan.hits,
                           evidence=scan.evidence)


def performance(suite, base_url: str, evidence_dir: Path, **kwargs) -> SimpleNamespace:
    run_performance(suite, base_url, evidence_dir, **kwargs)
    results = Path(evidence_dir) / "results.jsonl"
    runs = load_bench_results(results) if results.is_file() else []
    return SimpleNamespace(checks=runner("performance").judge(Path(evidence_dir), suite), runs=runs, spread=summarize(runs) if runs else {})
