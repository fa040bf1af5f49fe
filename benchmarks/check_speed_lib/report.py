"""The printed report and the files `--keep` writes."""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

from .common import KINDS
from .measure import loadavg, median
from .plugin import predicted_import_failures
from .results import Results


def fmt_ratio(seconds: float, reference: float) -> str:
    return f"{seconds / reference:.3f}x" if reference else "?"



def pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.0f}%" if whole else "-"


def report(results: Results) -> None:
    """Print the reference plugin, speed, recall (and pyright) sections and the summary line."""
    res, t = results, results.timings
    args, old, new, harvest, sampler, stats, truth, loader, builders = res.args, res.old, res.new, res.harvest, res.sampler, res.stats, res.truth, res.loader, res.builders
    flags, flag_kinds, flag_rule, harness_score, pyright = res.flags, res.flag_kinds, res.flag_rule, res.harness_score, res.pyright
    parse, startup, manifest_seconds, last, edited_runs = t.parse, t.startup, t.manifest_seconds, t.last, t.edited_runs
    cold_runs, cached_runs, cold_cpu, cached_cpu = t.cold_runs, t.cached_runs, t.cold_cpu, t.cached_cpu
    refs = list(truth.values())
    broken = [r for r in refs if r.status == "broken"]
    imported = sum(1 for v in harvest.values() if v.get("import") == "ok")
    print()
    print(f"== Reference plugin (seed {args.seed}): {stats['files']} files, {len(refs)} upstream references, {len(broken)} ({pct(len(broken), len(refs))}) break on {new.label}")
    print(f"   oracle: the Python runtime of each release ({imported}/{len(harvest)} candidate modules of {old.label} import here; torchvision mocked; pinned light deps in {args.cache}/runtime-*)")
    print(f"   candidates executed: {len(sampler.pool)}; kept {len(sampler.kept)} ({sum(v[0] == 'broken' for v in sampler.kept.values())} break); excluded {sum(sampler.excluded.values())} (fail on {old.version} or module errors on {new.version})")
    by_form = Counter((r.kind, r.form) for r in refs)
    by_form_broken = Counter((r.kind, r.form) for r in broken)
    print("   per kind (form: references/broken): " + "; ".join(
        f"{kind} " + ", ".join(f"{form} {by_form[(k, form)]}/{by_form_broken[(k, form)]}" for k, form in sorted(by_form) if k == kind) for kind in KINDS if any(k == kind for k, _ in by_form)))
    if loader:
        old_load, new_load = loader["old"], loader["new"]
        old_fail = sorted(m for m, v in old_load.items() if m != "__hooks__" and not v.get("ok"))
        hooks_old = old_load.get("__hooks__", {})
        print(f"   loader on {old.label}: {len(old_load) - 1 - len(old_fail)}/{len(old_load) - 1} modules import" + (f" (FAIL: {old_fail[:3]} {[old_load[m].get('error') for m in old_fail[:2]]})" if old_fail else "") + f"; {len(hooks_old.get('registered', []))} hook targets registered, {len(hooks_old.get('failed', []))} fail to apply")
        actual = {m for m, v in new_load.items() if m != "__hooks__" and not v.get("ok")}
        predicted = predicted_import_failures(builders)
        oracle_hooks = {r.spec["target"] for r in refs if r.form == "hook" and r.status == "broken"}
        failed_hooks = set(new_load.get("__hooks__", {}).get("failed", []))
        print(f"   loader on {new.label}: {len(actual)} modules fail to import (oracle predicts {len(predicted)}, agree on {len(actual & predicted)}); {len(failed_hooks)} hook targets fail to apply (oracle: {len(oracle_hooks)}, agree on {len(failed_hooks & oracle_hooks)})")
        for name in sorted(actual ^ predicted)[:3]:
            print(f"     disagreement: {name}: {new_load.get(name, {}).get('error')} at {new_load.get(name, {}).get('where')}")
    print()
    print(f"== Speed ({os.cpu_count()} cpus, load {loadavg()}; medians of {args.repeat})")
    reference = parse["seconds"]
    print(f"   reference: ast.parse of every .py file of {new.label} ({parse['files']} files, {parse['mb']:.0f} MB), one core: {reference:.2f} s  (runs {', '.join(f'{t:.2f}' for t in parse['runs'])}; CPU {parse['cpu']:.2f} s)")
    print(f"   `python -m harness --help` (start-up floor of any CLI run): {startup:.2f} s = {fmt_ratio(startup, reference)}")
    print(f"   (not timed below: per-file manifest hashing when the release is fetched: {manifest_seconds:.2f} s)")
    print(f"   harness check, cold:   {median(cold_runs):6.2f} s = {fmt_ratio(median(cold_runs), reference)}  (target <= 0.25x; runs {', '.join(f'{t:.2f}' for t in cold_runs)}; CPU {median(cold_cpu):.2f} s = {fmt_ratio(median(cold_cpu), parse['cpu'])} of the parse CPU)")
    print(f"   harness check, cached: {median(cached_runs):6.2f} s = {fmt_ratio(median(cached_runs), reference)}  (target <= 0.03x; runs {', '.join(f'{t:.2f}' for t in cached_runs)}; CPU {median(cached_cpu):.2f} s = {fmt_ratio(median(cached_cpu), parse['cpu'])}; unchanged inputs reuse the last verdict)")
    if edited_runs:
        print(f"   harness check, cached index, one plugin file touched: {median(edited_runs):6.2f} s = {fmt_ratio(median(edited_runs), reference)}  (runs {', '.join(f'{t:.2f}' for t in edited_runs)}; the plugin is scanned and judged again)")
    payload = last["payload"]
    if payload is None:
        print(f"   check printed no JSON (exit {last['exit']}): {last['stderr'][-600:]}")
    else:
        print(f"   check exit {last['exit']}; passed={payload.get('passed')} breaking={payload.get('breaking')} unverified={payload.get('unverified')}; {len(payload.get('findings', []))} findings; flagged by kind: {dict(flag_kinds)}" + (f"; files left in cwd: {last['cwd_files']}" if last["cwd_files"] else ""))
    print()
    print(f"== Recall vs the oracle on {len(broken)} breaking references (harness flagged = {flag_rule})")
    def cells(row) -> str:
        return f"{row['hit']:5d} {pct(row['hit'], row['broken']):>5s} {pct(row['primary_hit'], row['primary']):>5s} {row['fp']:4d}"

    header = f"   {'kind':10s} {'refs':>5s} {'broken':>6s} {'prim':>5s} | harness: {'hit':>5s} {'rec':>5s} {'prim':>5s} {'FP':>4s}"
    if pyright:
        header += f" | pyright: {'hit':>5s} {'rec':>5s} {'prim':>5s} {'FP':>4s}"
    print(header)
    for kind in (*KINDS, "all"):
        row = harness_score["table"][kind]
        line = f"   {kind:10s} {row['refs']:5d} {row['broken']:6d} {row['primary']:5d} |          {cells(row)}"
        if pyright:
            line += f" |          {cells(pyright['score']['table'][kind])}"
        print(line)
    print("   (rec = recall on all breaking lines; prim = recall on primary breakages, i.e. without lines that fail only because the import they use fails)")
    caught = harness_score["table"]["try"]
    print(f"   (try = lines inside try/except (ImportError, AttributeError): {caught['caught_broken']} of {caught['refs']} fail on {new.label} but are caught; every flag on them is a false positive)")
    at_risk = sum(r.ambiguous for r in refs)
    print(f"   overrides only at risk (base gained optional parameters they lack; flagging them is not counted): {at_risk} in the plugin, flagged by harness {harness_score['table']['all']['at_risk']}" + (f", pyright {pyright['score']['table']['all']['at_risk']}" if pyright else ""))
    print(f"   flagged lines that carry no reference: harness {harness_score['off_reference']}" + (f", pyright {pyright['score']['off_reference']}" if pyright else ""))
    missed = [r for r in broken if (r.file, r.line) not in flags and r.primary]
    for kind in KINDS:
        example = next((r for r in missed if r.kind == kind), None)
        if example:
            print(f"   harness missed ({kind}): {example.file}:{example.line} {example.target} ({example.why[:100]})")
    if pyright:
        runs = pyright["runs"]
        print()
        print(f"== pyright {runs['new'].get('version', '?')} (diagnostics diff: errors in the {new.version} run whose (file, line, rule) the {old.version} run lacks)")
        for side, release in (("old", old), ("new", new)):
            run = runs[side]
            print(f"   {release.label} as import root: {run['seconds']:.1f} s, {len(run['diagnostics'])} errors in the plugin" + (f" [pyright failed: {run['error'][:200]}]" if "error" in run else ""))
        verdict = "yes" if pyright["resolves"] else "NO"
        print(f"   resolves sglang from the release under test: {verdict} (probe imports {pyright['probe'][0]} / {pyright['probe'][1]}: errors on lines {runs['old'].get('probe_errors')} / {runs['new'].get('probe_errors')}, expected [2] / [1])")
        print(f"   {len(pyright['flags'])} new error lines; pyright cannot see dotted-string hook targets (HookRegistry.register / @plugin_hook strings), nor overrides of methods a base no longer has")
    print()
    row = harness_score["table"]["all"]
    summary = f"== Summary: parse {reference:.2f} s | check cold {median(cold_runs):.2f} s ({fmt_ratio(median(cold_runs), reference)}) cached {median(cached_runs):.2f} s ({fmt_ratio(median(cached_runs), reference)}) | harness recall {pct(row['hit'], row['broken'])} ({row['hit']}/{row['broken']}; primary {pct(row['primary_hit'], row['primary'])}), FP {row['fp']}"
    if pyright:
        prow = pyright["score"]["table"]["all"]
        summary += f" | pyright recall {pct(prow['hit'], prow['broken'])} ({prow['hit']}/{prow['broken']}; primary {pct(prow['primary_hit'], prow['primary'])}), FP {prow['fp']}, {runs['old']['seconds']:.1f} + {runs['new']['seconds']:.1f} s"
    print(summary)


def write_results(out: Path, results: Results) -> None:
    """truth.json, results.json and (when the check printed JSON) check.json in `out` (--keep)."""
    res, t = results, results.timings
    args, truth, harness_score, pyright, loader = res.args, res.truth, res.harness_score, res.pyright, res.loader
    parse, last, cold_runs, cached_runs, cold_cpu, cached_cpu = t.parse, t.last, t.cold_runs, t.cached_runs, t.cold_cpu, t.cached_cpu
    (out / "truth.json").write_text(json.dumps([
        {"file": r.file, "line": r.line, "kind": r.kind, "form": r.form, "target": r.target, "status": r.status, "why": r.why, "risk": r.risk, "primary": r.primary, "at_import": r.at_import, "style": r.style}
        for r in sorted(truth.values(), key=lambda r: (r.file, r.line))
    ], indent=1))
    document = {
        "args": {k: str(v) for k, v in vars(args).items()},
        "parse": parse,
        "check_cold": cold_runs,
        "check_cached": cached_runs,
        "check_cold_cpu": cold_cpu,
        "check_cached_cpu": cached_cpu,
        "check_exit": last["exit"],
        "harness": {k: dict(v) for k, v in harness_score["table"].items()},
        "harness_off_reference": harness_score["off_reference"],
        "pyright": None if not pyright else {
            "seconds": {side: run["seconds"] for side, run in pyright["runs"].items()},
            "resolves": pyright["resolves"],
            "score": {k: dict(v) for k, v in pyright["score"]["table"].items()},
            "flags": sorted(pyright["flags"]),
            "diagnostics": {side: run["diagnostics"] for side, run in pyright["runs"].items()},
        },
        "loader": loader,
    }
    (out / "results.json").write_text(json.dumps(document, indent=1, default=str))
    if last["payload"] is not None:
        (out / "check.json").write_text(json.dumps(last["payload"], indent=1))
