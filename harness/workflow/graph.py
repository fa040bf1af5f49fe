"""The LangGraph workflow: alignment → gate → interface → gate → operators → gate → accuracy →
gate → performance → gate → knowledge (the write-back) → gate → done.

Step nodes do all the work (evidence, checks, the journal's step records). Gate nodes route on
the decision journaled on the step's current attempt (`harness.workflow.runs` writes it before
it resumes the graph): approve goes on to the next step, reject loops back to the same step,
which reads its new attempt number and the reason from the journal. Only when nobody has
decided yet does a gate `interrupt()`. So the journal alone steers the graph: a gate re-executed
on resume, or a graph rebuilt from the journal after its checkpoints were lost, repeats nothing
and asks nothing twice. A gate that skips or auto-approves journals its own decision
(`harness.record.gates.decide`, on the same rules as a person's).

An approval of a drafted step owes the commit of its patch: the approve line says so
(`commit: "pending"`), and the commit is journaled (`commit_done`) once made. A kill in between
leaves it owed, and the next command that advances the run makes it (`settle_commits`), since
the graph, placed from the journal, does not pass that gate again.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

from harness.agent.sandbox import Sandbox
from harness.errors import HarnessError
from harness.record.gates import (
    GateRequest,
    UndecidedGate,
    attempt_of,
    decide,
    last_rejection,
)
from harness.record.layout import RunLayout, utc_now
from harness.record.models import GateDecision, RunInputs, RunState
from harness.record.trajectory import decision_event
from harness.steps import WORKFLOW
from harness.steps.base import Step, StepContext, execute_step, load_result
from harness.steps.drafting import PATCH, commit_approved, sandbox_dir


def gate_name(step: Step) -> str:
    return f"{step.name}_gate"


def build_graph(run: RunLayout, inputs: RunInputs, progress: Callable[[str], None]) -> StateGraph:
    """The workflow graph for one run (reports are rendered by the caller, from the record)."""
    graph = StateGraph(RunState)
    names = [s.name for s in WORKFLOW]
    for index, step in enumerate(WORKFLOW):
        following = names[index + 1] if index + 1 < len(names) else "done"
        graph.add_node(step.name, _step_node(step, run, inputs, progress))
        graph.add_node(gate_name(step), _gate_node(step, run, following, inputs.auto_approve),
                       destinations=(step.name, following))
        graph.add_edge(step.name, gate_name(step))
    graph.add_node("done", _done_node(run))
    graph.add_edge(START, names[0])
    graph.add_edge("done", END)
    return graph


def _step_node(step: Step, run: RunLayout, inputs: RunInputs, progress: Callable[[str], None]):
    slug = step.slug

    def node(state: RunState) -> dict[str, Any]:
        history = run.trajectory().decisions(slug)
        attempt = attempt_of(history)
        rejection = last_rejection(history)
        reason = rejection.reason if rejection else None

        def context(evidence_dir):
            return StepContext(run, inputs, slug, attempt, reason, evidence_dir, progress)

        progress(f"step {step.number} {step.name} (attempt {attempt})")
        # imported here: loading the graph stays cheap
        from harness.engines import use_engine
        from harness.knowledge.model import detect_engine

        # the steps read the plugin as `check` does: as a plugin of the engine it declares
        with use_engine(detect_engine(Path(inputs.plugin), inputs.upstream)):
            execute_step(step, context, run, attempt)
        return {}

    return node


def _gate_node(step: Step, run: RunLayout, following: str, auto_approve: bool):
    slug = step.slug

    def gate(state: RunState) -> Command:
        trajectory = run.trajectory()
        record = trajectory.record(slug)
        decision = trajectory.decision(slug)
        if decision is None:  # a skip (nothing to decide) or --auto-approve is journaled like a person's
            result = load_result(run.evidence_dir(slug))
            undecided = UndecidedGate(record=record, skip=step.skip_gate(result) if result is not None else None,
                                      auto_approve=auto_approve)
            decision = decide(GateRequest(run_id=run.run_id, at=utc_now(), asked=undecided))
            assert decision is None or isinstance(decision, GateDecision)  # no rule refuses an undecided gate
            if decision is not None:
                owed = decision.decision == "approve" and commit_owed(run, slug, record.attempt)
                run.log(decision.decision, **decision_event(decision, slug, commit_owed=owed))
        if decision is None:
            # Resumed with the reviewer's decision, which is journaled by then; the journal is
            # what counts, the value handed back only wakes the graph.
            interrupt({"step": slug, "verdict": record.verdict.value, "report": record.report,
                       "attempt": record.attempt})
            decision = run.trajectory().decision(slug)
            if decision is None:
                raise HarnessError(f"run {run.run_id}: the {slug} gate was resumed without a journaled decision")
        if decision.decision == "approve":  # the approved draft goes onto its branch
            if slug not in run.trajectory().commits_owed:
                # an approval journaled before commits were recorded as owed (idempotent)
                commit_approved(run, slug, record.attempt, decision.by, decision.automatic)
            settle_commits(run)
        return Command(goto=step.name if decision.decision == "reject" else following)

    return gate


def _done_node(run: RunLayout):
    def done(state: RunState) -> dict[str, Any]:
        run.log("run_finished")
        return {}

    return done


def commit_owed(run: RunLayout, slug: str, attempt: int) -> bool:
    """Whether approving the step's attempt owes a commit: its agent drafted a change (a
    non-empty patch) in a sandbox, which `commit_approved` commits."""
    patch = run.evidence_dir(slug) / PATCH
    return patch.is_file() and patch.stat().st_size > 0 and Sandbox.load(sandbox_dir(run, slug, attempt)) is not None


def settle_commits(run: RunLayout) -> None:
    """Make every commit an approval owes and journal its outcome (`commit_done`: the commit,
    or the error): called by the gate right after an approval, and by the next command that
    advances the run when a kill came in between."""
    for slug, approval in run.trajectory().commits_owed.items():
        commit_approved(run, slug, approval.attempt, approval.by, approval.automatic)
        sandbox = Sandbox.load(sandbox_dir(run, slug, approval.attempt))
        committed = sandbox.record.committed if sandbox else None
        if committed or sandbox is None:
            error = None if committed else "its sandbox is gone"
        else:
            error = sandbox.record.commit_error or "nothing was committed"
        run.log("commit_done", step=slug, attempt=approval.attempt, commit=committed, error=error)
