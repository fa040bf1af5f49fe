"""The LangGraph workflow: alignment → gate → interface → gate → operators → gate → accuracy →
gate → performance → gate → done.

Step nodes do all the work (evidence, checks, reports). Gate nodes only `interrupt()` and turn
the reviewer's answer into state: approve goes on to the next step, reject loops back to the
same step with the reason. Because a gate has no side effects, LangGraph re-executing it on
resume costs nothing and repeats nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

from harness.report.render import render_step_report
from harness.steps import STEPS
from harness.steps.base import Step, StepContext, execute_step, slug_of
from harness.workflow.hashing import evidence_hash
from harness.workflow.layout import RunLayout, utc_now
from harness.workflow.state import RunInputs, RunState, attempt_of, last_rejection

AUTO_APPROVER = "auto-approve"


def gate_name(step: Step) -> str:
    return f"{step.name}_gate"


def build_graph(run: RunLayout, inputs: RunInputs, progress: Callable[[str], None]) -> StateGraph:
    graph = StateGraph(RunState)
    names = [s.name for s in STEPS]
    for index, step in enumerate(STEPS):
        following = names[index + 1] if index + 1 < len(names) else "done"
        graph.add_node(step.name, _step_node(step, run, inputs, progress))
        gate = _gate_node(step, following, inputs.auto_approve)
        graph.add_node(gate_name(step), gate, destinations=(step.name, following))
        graph.add_edge(step.name, gate_name(step))
    graph.add_node("done", _done)
    graph.add_edge(START, names[0])
    graph.add_edge("done", END)
    return graph


def _step_node(step: Step, run: RunLayout, inputs: RunInputs, progress: Callable[[str], None]):
    slug = slug_of(step)

    def node(state: RunState) -> dict[str, Any]:
        attempt = attempt_of(state, slug)
        rejection = last_rejection(state, slug)
        reason = rejection["reason"] if rejection else None

        def context(evidence_dir):
            return StepContext(run, inputs, slug, attempt, reason, evidence_dir, progress)

        progress(f"step {step.number} {step.name} (attempt {attempt})")
        result = execute_step(step, context, run, attempt)
        record = {
            "attempt": result.attempt,
            "verdict": result.verdict.value,
            "checks": [
                {"name": c.name, "status": c.status.value, "reason": c.reason} for c in result.checks
            ],
            "report": run.step_report(slug).relative_to(run.workspace.root).as_posix(),
            "evidence_dir": run.evidence_dir(slug).relative_to(run.workspace.root).as_posix(),
            "evidence_hash": evidence_hash(run.evidence_dir(slug)),
            "finished_at": result.finished_at,
        }
        history = state.get("gates", {}).get(slug, [])
        render_step_report(run, result, {"decision": "pending"}, history, inputs, record["evidence_hash"])
        return {"steps": {slug: record}}

    return node


def _gate_node(step: Step, following: str, auto_approve: bool):
    slug = slug_of(step)

    def gate(state: RunState) -> Command:
        record = state["steps"][slug]
        if auto_approve:
            decision = {
                "decision": "approve",
                "by": AUTO_APPROVER,
                "at": utc_now(),
                "note": "approved automatically (--auto-approve); nobody reviewed this evidence",
                "automatic": True,
                "evidence_hash": record["evidence_hash"],
                "attempt": record["attempt"],
            }
        else:
            decision = interrupt(
                {
                    "step": slug,
                    "verdict": record["verdict"],
                    "report": record["report"],
                    "attempt": record["attempt"],
                }
            )
        history = [*state.get("gates", {}).get(slug, []), decision]
        target = step.name if decision["decision"] == "reject" else following
        return Command(goto=target, update={"gates": {slug: history}})

    return gate


def _done(state: RunState) -> dict[str, Any]:
    return {"finished_at": utc_now()}
