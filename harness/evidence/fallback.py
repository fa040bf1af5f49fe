"""Fallback and compile-failure scan for the operators step.

Evidence: the server's logs and torch-profiler Chrome traces (`.json` / `.json.gz`). Findings:
- log lines matching the runbook's patterns, the recipes' known-failure patterns, or the
  built-in ones (Triton compilation errors, PyTorch's CPU-fallback warning, "fallback" lines);
- trace events matching the runbook's trace patterns;
- CPU ops inside a device trace: an op the recipes know that ran on the host without launching
  any device work.
Each hit names the operator, the file and line (or trace event), and the recipe that says what
to use instead. Hits go to `fallback_hits.jsonl` and what was scanned to `scan.json`; the
checks are read back from them (`fallback_checks`).
"""

from __future__ import annotations

import bisect
import re
from collections import defaultdict
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from harness.evidence.recipes import LoadedRecipe, Recipes
from harness.evidence.runbook import FallbackPattern, Runbook
from harness.evidence.runner import Runner
from harness.evidence.traces import TraceError, TraceMissing, TraceNaming, load_trace
from harness.record.checks import Check, CheckStatus, not_run

# Platform-independent signals, tried after the runbook's and the recipes' own patterns.
BUILTIN_PATTERNS = [
    FallbackPattern(name="triton-compile-error", severity="error",
                    regex=r"CompilationError\b(?:.*?\bin (?P<op>\w+))?"),
    FallbackPattern(name="triton-out-of-resources", severity="error",
                    regex=r"triton\.runtime\.errors\.OutOfResources"),
    FallbackPattern(name="cpu-fallback", severity="error",
                    regex=r"operator '(?P<op>[\w:.]+)' is not currently supported on the \w+ "
                          r"backend and will fall back to run on the CPU"),
    FallbackPattern(name="fallback-line", severity="warning", regex=r"(?i)\bfall(?:ing|s)? ?back\b"),
]
TRACEBACK_LOOKBACK_LINES = 20  # a compile error names its kernel in the frames above it


class FallbackHit(BaseModel):
    pattern: str
    severity: Literal["error", "warning", "info"]
    source: Literal["log", "trace"]
    op: str | None  # operator name, when it could be told
    file: str
    line: int | None = None  # log line (1-based)
    event: str | None = None  # trace event: name and first timestamp
    count: int = 1  # trace hits aggregate repeated events
    text: str  # the log line, or a summary of the trace events
    recipe: str | None = None
    recipe_file: str | None = None
    instead: str | None = None  # what the recipe says to use
    known_failure: str | None = None  # the recipe's fix for this exact failure

    def where(self) -> str:
        return f"{self.file}:{self.line}" if self.line is not None else f"{self.file} [{self.event}]"


class _Rule:
    """A compiled pattern with what it yields when it matches."""

    def __init__(self, pattern: FallbackPattern, recipe: LoadedRecipe | None = None):
        self.pattern = pattern
        self.regex = re.compile(pattern.regex)
        self.recipe = recipe  # set for a recipe's known-failure pattern

    def op_of(self, match: re.Match[str]) -> str | None:
        if "op" in self.regex.groupindex and match.group("op"):
            return match.group("op")
        if self.recipe is not None:
            return self.recipe.recipe.upstream.op
        return self.pattern.op


def _rules(patterns: list[FallbackPattern], recipes: Recipes, source: str) -> list[_Rule]:
    rules = [_Rule(p) for p in patterns if p.source == source]
    if source == "log":
        for item in recipes.loaded:
            for number, failure in enumerate(item.recipe.known_failures):
                if failure.pattern:
                    rules.append(_Rule(FallbackPattern(
                        name=f"recipe:{item.recipe.name}#{number}", regex=failure.pattern,
                        severity=failure.severity), item))
        rules += [_Rule(p) for p in BUILTIN_PATTERNS]
    return rules


def _attach_recipe(hit: FallbackHit, found: LoadedRecipe | None, text: str) -> FallbackHit:
    if found is None:
        return hit
    recipe = found.recipe
    hit.recipe, hit.recipe_file, hit.instead = recipe.name, str(found.file), recipe.instead()
    hit.op = hit.op or recipe.upstream.op
    for failure in recipe.known_failures:
        if (failure.pattern and re.search(failure.pattern, text)) or (failure.log and failure.log in text):
            hit.known_failure = failure.fix
            break
    return hit


def scan_log(path: Path, patterns: list[FallbackPattern], recipes: Recipes) -> list[FallbackHit]:
    """One hit per matching line: the first rule that matches (runbook, recipes, built-in)."""
    rules = _rules(patterns, recipes, "log")
    lines = Path(path).read_text(errors="replace").splitlines()
    hits = []
    for index, line in enumerate(lines):
        for rule in rules:
            match = rule.regex.search(line)
            if not match:
                continue
            op = rule.op_of(match)
            found = recipes.match(op) or recipes.find_in(line)
            if found is None and op is None:
                context = lines[max(0, index - TRACEBACK_LOOKBACK_LINES):index]
                found = next((f for f in map(recipes.find_in, reversed(context)) if f), None)
            hit = FallbackHit(pattern=rule.pattern.name, severity=rule.pattern.severity, source="log",
                              op=op, file=str(path), line=index + 1, text=line.strip()[:500])
            hits.append(_attach_recipe(hit, found, line))
            break
    return hits


def scan_trace(path: Path, patterns: list[FallbackPattern], recipes: Recipes,
               naming: TraceNaming | None = None) -> tuple[list[FallbackHit], int]:
    """Hits in one trace and the number of device events it holds (0: nothing to judge). Device
    events are `naming`'s device categories (the runbook's profiling naming: a plugin device's
    own, e.g. PrivateUse1's), less the host's operator categories: where the host is the device
    its operators are no fallback."""
    naming = naming or TraceNaming()
    categories = set(naming.device_categories) - set(naming.host_op_categories)
    events = [e for e in load_trace(path)["traceEvents"] if isinstance(e, dict) and e.get("ph") == "X"]
    device = [e for e in events if e.get("cat") in categories]
    hits = _pattern_hits(path, events, patterns, recipes)
    if device:
        hits += _host_ops(path, events, device, recipes, categories | set(naming.host_op_categories))
    return hits, len(device)


def _pattern_hits(path: Path, events: list[dict[str, Any]], patterns: list[FallbackPattern],
                  recipes: Recipes) -> list[FallbackHit]:
    rules = _rules(patterns, recipes, "trace")
    grouped: dict[tuple[int, str], list[dict[str, Any]]] = defaultdict(list)
    for event in events:
        name = str(event.get("name", ""))
        for number, rule in enumerate(rules):
            if rule.regex.search(name):
                grouped[(number, name)].append(event)
                break
    hits = []
    for (number, name), matched in sorted(grouped.items()):
        rule = rules[number]
        op = rule.op_of(rule.regex.search(name))
        first = min(float(e.get("ts", 0)) for e in matched)
        hit = FallbackHit(pattern=rule.pattern.name, severity=rule.pattern.severity, source="trace",
                          op=op, file=str(path), event=f"{name} @ ts={first:g}", count=len(matched),
                          text=f"{name}: {len(matched)} event(s) matching {rule.pattern.regex!r}")
        hits.append(_attach_recipe(hit, recipes.match(op), name))
    return hits


def _host_ops(path: Path, events: list[dict[str, Any]], device: list[dict[str, Any]],
              recipes: Recipes, not_launches: set[str]) -> list[FallbackHit]:
    """Recipe ops whose host span contains no runtime launch of device work: they ran on the CPU."""
    correlations = {e.get("args", {}).get("correlation") for e in device} - {None}
    launches: dict[tuple[Any, Any], list[float]] = defaultdict(list)
    for event in events:
        if event.get("cat") in not_launches:  # device work and host operators launch nothing
            continue
        if event.get("args", {}).get("correlation") in correlations:
            launches[(event.get("pid"), event.get("tid"))].append(float(event.get("ts", 0)))
    for times in launches.values():
        times.sort()
    on_host: dict[str, list[dict[str, Any]]] = defaultdict(list)
    known: dict[str, bool] = {}  # op name -> has a recipe (a trace repeats few names many times)
    for event in events:
        if event.get("cat") != "cpu_op":
            continue
        name = str(event.get("name"))
        if name not in known:
            known[name] = recipes.match(name) is not None
        if not known[name]:
            continue
        start = float(event.get("ts", 0))
        end = start + float(event.get("dur", 0))
        times = launches.get((event.get("pid"), event.get("tid")), [])
        at = bisect.bisect_left(times, start)
        if at == len(times) or times[at] > end:
            on_host[str(event["name"])].append(event)
    hits = []
    for name, calls in sorted(on_host.items()):
        host_us = sum(float(e.get("dur", 0)) for e in calls)
        first = min(float(e.get("ts", 0)) for e in calls)
        hit = FallbackHit(pattern="cpu-op-in-device-trace", severity="error", source="trace", op=name,
                          file=str(path), event=f"{name} @ ts={first:g}", count=len(calls),
                          text=f"{name}: {len(calls)} call(s) ran on the host with no device launch "
                               f"({host_us:.0f} us of host time)")
        hits.append(_attach_recipe(hit, recipes.match(name), name))
    return hits


HITS = "fallback_hits.jsonl"


class TraceProblem(BaseModel):
    """A trace the scan could not read."""

    path: str
    missing: bool  # absent (not run), rather than unreadable (failed)
    error: str


class ScanRecord(BaseModel):
    """What the scan covered (`scan.json`), so the operators step can judge it from the evidence."""

    logs: list[str]  # scanned
    missing_logs: list[str]  # given but absent
    traces: list[str]  # given
    trace_problems: list[TraceProblem]
    device_events: int


class FallbackScan(BaseModel):
    hits: list[FallbackHit]
    record: ScanRecord
    evidence: Path  # fallback_hits.jsonl


def run_fallback_scan(runbook: Runbook, *, logs: list[Path], traces: list[Path], evidence_dir: Path,
                      recipes: Recipes | None = None) -> FallbackScan:
    """Scan the logs and traces with the runbook's patterns and recipes (default: the runbook's
    recipe files), the traces' device events named by the runbook's profiling naming; write `fallback_hits.jsonl` (one hit per line) and `scan.json` (what was
    covered) under `evidence_dir`. Unreadable traces are recorded, not raised."""
    recipes = recipes if recipes is not None else Recipes.load(runbook.recipes)
    naming = TraceNaming.model_validate(runbook.profiling.naming if runbook.profiling else {})
    evidence_dir = Path(evidence_dir)
    evidence_dir.mkdir(parents=True, exist_ok=True)
    out = evidence_dir / HITS

    present_logs = [Path(p) for p in logs if Path(p).is_file()]
    hits = [hit for path in present_logs for hit in scan_log(path, runbook.fallback_patterns, recipes)]
    problems: list[TraceProblem] = []
    device_events = 0
    for path in traces:
        try:
            trace_hits, count = scan_trace(Path(path), runbook.fallback_patterns, recipes, naming)
        except TraceError as exc:
            problems.append(TraceProblem(path=str(path), missing=isinstance(exc, TraceMissing), error=str(exc)))
            continue
        hits += trace_hits
        device_events += count
    record = ScanRecord(logs=[str(p) for p in present_logs],
                        missing_logs=[str(p) for p in logs if not Path(p).is_file()],
                        traces=[str(p) for p in traces], trace_problems=problems, device_events=device_events)
    with out.open("w") as handle:
        for hit in hits:
            handle.write(hit.model_dump_json() + "\n")
    (evidence_dir / "scan.json").write_text(record.model_dump_json(indent=2) + "\n")
    return FallbackScan(hits=hits, record=record, evidence=out)


def fallback_checks(hits: list[FallbackHit], record: ScanRecord, hits_file: Path, *,
                    host_is_device: bool = False) -> list[Check]:
    """fallback.log and fallback.trace from a scan: any error-severity hit fails; warnings are
    listed in the detail; what could not be scanned is `not run` (a trace that is not a
    trace fails). With `host_is_device` (the runbook's device is the CPU) a trace without
    device events is judged on its fallback/compile-failure patterns: host operators are the
    device's own there, not fallbacks."""
    log_hits = [h for h in hits if h.source == "log"]
    trace_hits = [h for h in hits if h.source == "trace"]
    if record.logs:
        checks = [_hits_check("fallback.log", log_hits, record.logs, hits_file)]
    else:
        given = ", ".join(record.missing_logs) or "none given"
        checks = [not_run("fallback.log", f"no server log to scan ({given})")]
    problems = record.trace_problems
    if not record.traces:
        checks.append(not_run("fallback.trace", "no trace was captured"))
    elif problems and len(problems) == len(record.traces):
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        missing = all(p.missing for p in problems)
        checks.append(Check(name="fallback.trace", evidence=record.traces,
                            status=CheckStatus.not_run if missing else CheckStatus.failed,
                            reason=f"{problems[0].error}{more}"))
    elif record.device_events == 0 and not trace_hits and host_is_device:
        check = _hits_check("fallback.trace", trace_hits, record.traces, hits_file)
        check.detail = ("the runbook's device is the CPU: host operators are the device's own, so only the "
                        "fallback and compile-failure patterns apply; none matched")
        checks.append(check)
    elif record.device_events == 0 and not trace_hits:
        checks.append(not_run("fallback.trace", "the trace holds no device events (a CPU-only profile?)",
                              evidence=record.traces))
    else:
        check = _hits_check("fallback.trace", trace_hits, record.traces, hits_file)
        if problems:
            check.detail = "\n".join(filter(None, [check.detail, *(p.error for p in problems)]))
        checks.append(check)
    return checks


def _hits_check(name: str, hits: list[FallbackHit], scanned: list[str], hits_file: Path) -> Check:
    errors = [h for h in hits if h.severity == "error"]
    by_op: dict[str, int] = defaultdict(int)
    for hit in hits:
        by_op[hit.op or "(unknown op)"] += hit.count
    detail = "\n".join(
        f"{h.severity}: {h.op or '(unknown op)'} at {h.where()}: {h.text}"
        + (f" -> {h.instead} [{h.recipe_file}#{h.recipe}]" if h.instead else "")
        for h in hits) or None
    metrics = {"errors": len(errors), "warnings": sum(h.severity == "warning" for h in hits),
               "by_op": dict(by_op)}
    evidence = [str(hits_file), *scanned]
    if errors:
        ops = sorted({h.op or "(unknown op)" for h in errors})
        return Check(name=name, status=CheckStatus.failed, evidence=evidence, detail=detail, metrics=metrics,
                     reason=f"{len(errors)} fallback/compile-failure hit(s): {', '.join(ops)}")
    return Check(name=name, status=CheckStatus.passed, evidence=evidence, detail=detail, metrics=metrics)


class FallbackRunner(Runner[Runbook, ScanRecord]):
    """The scan of a stopped server's logs and its traces with the runbook's patterns and
    recipes; the `fallback.log` and `fallback.trace` checks."""

    name = "fallback"
    section = "fallback_patterns"
    phase = "stopped"  # a server's logs are complete only once it has stopped
    spec = Runbook
    record = ScanRecord
    summary = "scan.json"

    def specs(self, runbook: Runbook) -> list[tuple[str, Runbook]]:
        """Always one scan, of the whole runbook: without patterns of its own the recipes and
        the built-in rules still apply, and the device says how a trace is read."""
        return [("", runbook)]

    def run(self, spec: Runbook, evidence_dir: Path, *, logs: list[Path], traces: list[Path],
            recipes: Recipes | None = None) -> ScanRecord:
        return run_fallback_scan(spec, logs=logs, traces=traces, evidence_dir=evidence_dir, recipes=recipes).record

    def checks(self, record: ScanRecord, evidence_dir: Path, spec: Runbook) -> list[Check]:
        """As `fallback_checks`; the runbook's device says whether host operators are the device's."""
        hits_file = evidence_dir / HITS
        hits = [FallbackHit.model_validate_json(line) for line in hits_file.read_text().splitlines() if line.strip()]
        return fallback_checks(hits, record, hits_file,
                               host_is_device=spec.environment.device.split(":")[0].lower() == "cpu")
