"""The LangGraph workflow: alignment → gate → interface → gate → operators → gate → accuracy →
gate → performance → gate → done.

Step nodes do all the work (evidence, checks, reports). Gate nodes only `interrupt()` and turn
the reviewer's answer into a GateDecision: approve goes on to the next step, reject loops back
to the same step with the reason. Because a gate has no side effects, LangGraph re-executing it
on resume costs nothing and repeats nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

from harness.record.gates import AUTO_APPROVER, AUTO_NOTE, attempt_of, last_rejection
from harness.record.hashing import evidence_hash
from harness.record.layout import RunLayout, utc_now
from harness.record.models import GateDecision, RunInputs, RunState, StepRecord, gate_history, step_record
from harness.steps import STEPS
from harness.steps.base import Step, StepContext, execute_step


def gate_name(step: Step) -> str:
    return f"{step.name}_gate"


def build_graph(run: RunLayout, inputs: RunInputs, progress: Callable[[str], None]) -> StateGraph:
    """The workflow graph for one run (reports are rendered by the caller, from the state)."""
    graph = StateGraph(RunState)
    names = [s.name for s in STEPS]
    for index, step in enumerate(STEPS):
        following = names[index + 1] if index + 1 < len(names) else "done"
        graph.add_node(step.name, _step_node(step, run, inputs, progress))
        graph.add_node(gate_name(step), _gate_node(step, following, inputs.auto_approve),
                       destinations=(step.name, following))
        graph.add_edge(step.name, gate_name(step))
    graph.add_node("done", _done)
    graph.add_edge(START, names[0])
    graph.add_edge("done", END)
    return graph


def _step_node(step: Step, run: RunLayout, inputs: RunInputs, progress: Callable[[str], None]):
    slug = step.slug

    def node(state: RunState) -> dict[str, Any]:
        history = gate_history(state, slug)
        attempt = attempt_of(history)
        rejection = last_rejection(history)
        reason = rejection.reason if rejection else None

        def context(evidence_dir):
            return StepContext(run, inputs, slug, attempt, reason, evidence_dir, progress)

        progress(f"step {step.number} {step.name} (attempt {attempt})")
        result = execute_step(step, context, run, attempt)
        record = StepRecord(
            attempt=result.attempt,
            verdict=result.verdict,
            report=run.step_report(slug).relative_to(run.workspace.root).as_posix(),
            evidence_dir=run.evidence_dir(slug).relative_to(run.workspace.root).as_posix(),
            evidence_hash=evidence_hash(run.evidence_dir(slug)),
            finished_at=result.finished_at,
        )
        return {"steps": {slug: record.model_dump(mode="json")}}

    return node


def _gate_node(step: Step, following: str, auto_approve: bool):
    slug = step.slug

    def gate(state: RunState) -> Command:
        record = step_record(state, slug)
        if auto_approve:
            decision = GateDecision(decision="approve", by=AUTO_APPROVER, at=utc_now(), note=AUTO_NOTE,
                                    automatic=True, evidence_hash=record.evidence_hash, attempt=record.attempt)
        else:
            decision = GateDecision.model_validate(interrupt(
                {"step": slug, "verdict": record.verdict.value, "report": record.report, "attempt": record.attempt}
            ))
        history = [*state.get("gates", {}).get(slug, []), decision.model_dump(mode="json")]
        target = step.name if decision.decision == "reject" else following
        return Command(goto=target, update={"gates": {slug: history}})

    return gate


def _done(state: RunState) -> dict[str, Any]:
    return {"finished_at": utc_now()}
