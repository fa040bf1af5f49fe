"""Step 1 — alignment: where does the feature land in the plugin?

From the Platform Map (the plugin against the target upstream) and the Feature Diff (old → new
upstream), find the plugin's landing points for the feature's upstream symbols: a platform
factory method, a hook, a patch, a kernel registration — or that a new landing point is needed.
Evidence: the feature, the relevant findings and changes, the upstream hunks, the full Platform
Map, and the landing decision with a confidence and its reason.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

from harness.engines import profile
from harness.errors import HarnessError
from harness.knowledge.model import Finding
from harness.knowledge.products import feature_diff, platform_map, write_platform_map
from harness.record.checks import Check, CheckStatus, not_run
from harness.record.models import Draft, RunInputs
from harness.steps import symbols
from harness.steps.base import Collected, Step, StepContext, read_facts, runner_failure
from harness.steps.drafting import write_up_draft
from harness.steps.skills import skill_rules

# The landing rules are the alignment skill's (skills/alignment/SKILL.md), not this code's;
# what each kind of dependency lands as is the kind's (harness.engines.kinds).
RULES = skill_rules("alignment")
PLATFORM_BASES: tuple[str, ...] = tuple(RULES["platform_bases"])


def touches(target: str, feature_symbols: list[str], feature_paths: list[str]) -> bool:
    """A dotted target belongs to the feature when either names the other or a path holds it."""
    for symbol in feature_symbols:
        if target == symbol or target.startswith(symbol + ".") or symbol.startswith(target + "."):
            return True
    as_path = target.replace(".", "/")
    return any(as_path.startswith(p.rstrip("/").removesuffix(".py")) for p in feature_paths)


class AlignmentStep(Step):
    number = 1
    name = "alignment"
    title = "Alignment: where the feature lands"
    template = "alignment.md.j2"

    def draft(self, ctx: StepContext, facts: dict[str, Any], checks: list[Check]) -> Draft:
        return write_up_draft(ctx, facts, checks)  # the task and its rules: skills/alignment/SKILL.md

    def collect(self, ctx: StepContext) -> Collected:
        feature = ctx.feature
        ctx.write_json("feature.json", feature.model_dump())
        facts: dict[str, Any] = {"upstream": ctx.upstream.label,
                                 "old_upstream": ctx.old_upstream.label if ctx.old_upstream else None}
        try:
            ctx.progress("mapping the plugin against the target upstream")
            pmap = platform_map(ctx.plugin, ctx.upstream, ctx.old_upstream)
            found = [f for f in pmap.findings if touches(f.target, feature.symbols, feature.paths)]
            changes: list[Any] = []
            if ctx.old_upstream is not None:
                ctx.progress("diffing the upstream versions")
                diff = feature_diff(ctx.old_upstream, ctx.upstream, ctx.plugin, ctx.progress)
                changes = [c for c in diff.changes if touches(c.symbol, feature.symbols, feature.paths)]
                # The diff judged each dependency across both versions (e.g. a hook whose target's
                # signature changed resolves fine but needs a look): its finding wins.
                across = {
                    (f.kind, f.target): f for f in diff.findings if touches(f.target, feature.symbols, feature.paths)
                }
                found = [across.pop((f.kind, f.target), f) for f in found] + list(across.values())
        except HarnessError:
            raise  # bad input (unreachable source, not a plugin): the user must fix it
        except Exception as exc:  # noqa: BLE001 — the engine is missing or broke: say so, don't pass
            facts["knowledge_error"] = runner_failure("alignment", exc, "knowledge engine").reason
            return Collected(facts=facts)
        found.sort(key=lambda f: (-f.risk, f.target, f.kind))
        changes.sort(key=lambda c: c.symbol)

        write_platform_map(pmap, ctx.evidence_dir / "platform_map")
        ctx.write_json("findings.json", [f.model_dump(mode="json") for f in found])
        ctx.write_json("changes.json", [_dump(c) for c in changes])
        located, removed, unlocated, hunks = self._upstream_hunks(ctx)
        ctx.write_text("hunks.diff", hunks)
        landing = self._landing(feature.symbols, found, unlocated)
        ctx.write_json("landing.json", landing)
        plugin, upstream = shlex.quote(str(ctx.plugin)), shlex.quote(ctx.upstream.spec)  # printed to be pasted
        commands = [f"harness map --plugin {plugin} --upstream {upstream}"]
        if ctx.old_upstream is not None:
            commands.append(f"harness diff --from {shlex.quote(ctx.old_upstream.spec)} --to {upstream} "
                            f"--plugin {plugin}")
        facts.update(landing=landing, located=located, removed=removed, unlocated=unlocated,
                     changes=[_dump(c) for c in changes], has_hunks=bool(hunks.strip()))
        return Collected(facts=facts, commands=commands)

    def judge(self, evidence_dir: Path, inputs: RunInputs) -> list[Check]:
        facts = read_facts(evidence_dir)
        if "knowledge_error" in facts:
            reason = facts["knowledge_error"]
            return [not_run("alignment.symbols_located", reason), not_run("alignment.landing_point", reason)]
        landing = json.loads((evidence_dir / "landing.json").read_text())
        return [self._located_check(inputs, facts), self._landing_check(landing)]

    def _located_check(self, inputs: RunInputs, facts: dict) -> Check:
        name, evidence = "alignment.symbols_located", ["feature.json", "hunks.diff"]
        if not (inputs.feature.symbols or inputs.feature.paths):
            return not_run(name, "the feature names no upstream symbols or paths")
        located, removed, unlocated = facts["located"], facts["removed"], facts["unlocated"]
        metrics = {"located": len(located), "removed": len(removed), "unlocated": len(unlocated)}
        if unlocated:
            versions = facts["upstream"] + (f" or {facts['old_upstream']}" if facts["old_upstream"] else "")
            return Check(name=name, status=CheckStatus.failed, evidence=evidence, metrics=metrics,
                         reason=f"in neither {versions}: {', '.join(unlocated)}")
        reason = f"{len(located)} in {facts['upstream']}"
        if removed:
            reason += f"; removed since {facts['old_upstream']}: {', '.join(removed)}"
        return Check(name=name, status=CheckStatus.passed, evidence=evidence, metrics=metrics, reason=reason)

    def _landing_check(self, landing: dict) -> Check:
        if landing["dead_ends"]:
            status = CheckStatus.failed
            reason = "no successor upstream for: " + ", ".join(
                f"{p['target']} ({p['status']}, {p['file']}:{p['line']})" for p in landing["dead_ends"]
            )
        elif landing["new_landing_point_needed"]:
            status, reason = CheckStatus.inconclusive, "new landing point needed: " + landing["reason"]
        else:
            status, reason = CheckStatus.passed, landing["reason"]
        return Check(
            name="alignment.landing_point",
            status=status,
            reason=reason,
            evidence=["landing.json", "findings.json"],
            metrics={"confidence": landing["confidence"], "points": len(landing["points"])},
        )

    def _upstream_hunks(self, ctx: StepContext) -> tuple[list[str], list[str], list[str], str]:
        """(in the target, only in the old version, in neither, the hunks text)."""
        new_root = Path(ctx.upstream.root)
        old_source = ctx.old_upstream
        located, removed, unlocated, parts = [], [], [], []
        for symbol in ctx.feature.symbols:
            new = symbols.locate(ctx.upstream, symbol)
            old = symbols.locate(old_source, symbol) if old_source is not None else None
            (located if new else removed if old else unlocated).append(symbol)
            where = f"{new.file}:{new.start}-{new.end}" if new else "absent"
            if new and new.defined_as != symbol:
                where += f" (defined as {new.defined_as})"
            header = f"# {symbol} — {ctx.upstream.label}: {where}"
            if old_source is None:
                parts.append(header + "\n")
                continue
            was = f"{old.file}:{old.start}-{old.end}" if old else "absent"
            body = symbols.hunk(old, new, old_source.label, ctx.upstream.label)
            parts.append(f"{header}; {old_source.label}: {was}\n" + (body or "# unchanged\n"))
        for path in ctx.feature.paths:
            in_old = old_source is not None and (Path(old_source.root) / path).exists()
            if (new_root / path).exists():
                located.append(path)
            else:
                (removed if in_old else unlocated).append(path)
        return located, removed, unlocated, "\n".join(parts)

    def _landing(self, feature_symbols: list[str], findings: list[Finding], unlocated: list[str]) -> dict:
        """Where the feature lands. A plugin finding covers a feature symbol when it targets it
        (or a parent / child of it), or when the engine names the symbol as its successor."""
        points = [
            {
                "landing": profile().spec(f.kind).landing or f.kind,
                "kind": f.kind,
                "target": f.target,
                "file": f.file,
                "line": f.line,
                "status": f.status.value,
                "live": f.live,
                "hook_type": f.hook_type,
                "successor": f.successor,
                "port_needed": f.status.value != "ok",
                "breaking": f.breaking,
            }
            for f in findings
        ]
        live = [p for p in points if p["live"]]

        def covers(point: dict, symbol: str) -> bool:
            return touches(point["target"], [symbol], []) or point["successor"] == symbol

        if feature_symbols:
            uncovered = [s for s in feature_symbols if not any(covers(p, s) for p in live)]
            exact = all(any(p["target"] == s or p["successor"] == s for p in live) for s in feature_symbols)
        else:  # a feature named by paths only: covered when any live plugin code is in them
            uncovered, exact = ([] if live else ["the feature's paths"]), bool(live)
        dead_ends = [p for p in live if p["breaking"] and not p["successor"]]
        reasons = []
        if live:
            reasons.append("lands at " + "; ".join(
                f"{p['landing']} `{p['target']}` ({p['file']}:{p['line']})"
                + (f", {p['status']} → port to `{p['successor']}`" if p["successor"] and p["port_needed"]
                   else f", {p['status']}" if p["port_needed"] else "")
                for p in live
            ))
        suggestion = None
        if uncovered:
            engine = profile()
            on_platform = any(s.startswith((*PLATFORM_BASES, *engine.platform_bases)) for s in uncovered)
            # an engine without a hook registry (vLLM) is changed out of tree by assigning over the symbol
            elsewhere = "a hook on the upstream symbol" if engine.hook_registry else "a patch of the upstream symbol"
            suggestion = "a platform factory method override" if on_platform else elsewhere
            dead = " (only dead plugin code touches it)" if points and not live else ""
            reasons.append(f"no live plugin code for {', '.join(uncovered)}{dead}; candidate: {suggestion}")
        if unlocated:
            reasons.append(f"not found upstream: {', '.join(unlocated)}")
        if unlocated or not live or uncovered:
            confidence = "low" if (unlocated or not live) else "medium"
        else:
            confidence = "high" if exact else "medium"
        return {
            "points": points,
            "new_landing_point_needed": bool(uncovered),
            "dead_ends": dead_ends,
            "suggestion": suggestion,
            "confidence": confidence,
            "reason": "; ".join(reasons),
        }


def _dump(obj: Any) -> dict:
    return obj.model_dump(mode="json") if hasattr(obj, "model_dump") else dict(obj)
