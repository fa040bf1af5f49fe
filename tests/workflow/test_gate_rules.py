"""The gate's rules (harness.record.gates) on hand-built records: no LangGraph, no workspace, no
process. Each refusal rule is met once, and the decisions the gate journals are what was asked."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

from harness.knowledge.products.features import FeatureSpec
from harness.record import gates
from harness.record.checks import Check, CheckStatus, unusable
from harness.record.gates import Refusal, Reopening
from harness.record.models import (
    GateDecision,
    GateView,
    ResumeView,
    RunInputs,
    RunView,
    StepRecord,
    StepView,
)

AT = "2026-01-01T00:00:00Z"
SLUGS = ["01-alignment", "02-interface", "03-operators"]


def approved(hash_: str = "sha256:a", *, valid: bool = True) -> GateView:
    return GateView(decision="approve", valid=valid, by="alice", at=AT, evidence_hash=hash_, attempt=1,
                    label="approved" if valid else gates.INVALIDATED)


def step(number: int, *, gate: GateView | None = None, verdict: str = "passed", attempt: int | None = 1,
         evidence_hash: str = "sha256:a", changed: bool = False, checks: list[Check] | None = None) -> StepView:
    slug = SLUGS[number - 1]
    return StepView(step=slug[3:], number=number, slug=slug, title=slug[3:].title(), attempt=attempt,
                    verdict=verdict, checks=checks or [], report=None, evidence_dir=None,
                    recorded_hash=evidence_hash, evidence_hash=evidence_hash, evidence_changed=changed,
                    gate=gate or GateView(decision="none"), history=[])


def run(*steps: StepView, state: str = "waiting", waiting_at: str | None = "02-interface") -> RunView:
    inputs = RunInputs(run_id="r1", feature=FeatureSpec(id="f", source="feature_file", name="f"), plugin="/p",
                       upstream="sglang==0.5.23", created_at=AT)
    return RunView(run_id="r1", workspace="/w", state=state, waiting_at=waiting_at, finished_at=None, running=None,
                   inputs=inputs, steps=list(steps))


def waiting_at_interface(**interface) -> RunView:
    return run(step(1, gate=approved()), step(2, gate=GateView(decision="pending"), **interface),
               step(3, attempt=None, verdict="pending"))


def refused(outcome: object, rule: str) -> str:
    assert isinstance(outcome, Refusal) and outcome.rule == rule, outcome
    return outcome.message


def test_the_rules_load_without_langgraph():
    code = "import sys, harness.record.gates; sys.exit(any(m.split('.')[0] == 'langgraph' for m in sys.modules))"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


# --------------------------------------------------------------------------- approving and rejecting the waiting gate


def test_an_approval_binds_the_evidence_hash_and_attempt_of_the_waiting_step():
    decision = gates.decision_at_gate(waiting_at_interface(evidence_hash="sha256:b", attempt=2), approve=True,
                                      by=" alice ", text="looks right", at=AT)
    assert decision == GateDecision(decision="approve", by="alice", at=AT, evidence_hash="sha256:b", attempt=2,
                                    note="looks right")


def test_a_rejection_keeps_its_reason_stripped_and_no_note():
    decision = gates.decision_at_gate(waiting_at_interface(), approve=False, by="bob", text=" wrong target\n", at=AT)
    assert isinstance(decision, GateDecision)
    assert (decision.decision, decision.reason, decision.note) == ("reject", "wrong target", None)


@pytest.mark.parametrize("state, says", [
    ("finished", "run r1 is not waiting at a gate: it has finished"),
    ("interrupted", "run r1 is not waiting at a gate: it stopped mid-step; `harness resume r1` first"),
    ("running", "run r1 is not waiting at a gate: running"),
])
def test_no_decision_when_the_run_waits_at_no_gate(state, says):
    view = run(step(1, gate=approved()), state=state, waiting_at=None)
    for approve in (True, False):
        assert refused(gates.decision_at_gate(view, approve=approve, by="a", text="x", at=AT), "not_waiting") == says


def test_a_decision_names_who_decides():
    for approve in (True, False):
        outcome = gates.decision_at_gate(waiting_at_interface(), approve=approve, by="  ", text="x", at=AT)
        assert refused(outcome, "no_decider") == "--by must name who decides"


def test_no_later_gate_is_approved_while_an_earlier_approval_is_invalidated():
    view = run(step(1, gate=approved("sha256:old", valid=False), evidence_hash="sha256:new"),
               step(2, gate=GateView(decision="pending")))
    message = refused(gates.decision_at_gate(view, approve=True, by="a", text=None, at=AT), "earlier_invalidated")
    assert message.startswith("run r1: the approval of 01-alignment is invalidated (its evidence changed after "
                              "approval: approved sha256:old, now sha256:new)")
    assert "reject 01-alignment to rerun it (harness reject r1 --step 01-alignment --by NAME --reason TEXT)" in message
    # rejecting the waiting step is still allowed: it does not rely on the earlier evidence
    assert isinstance(gates.decision_at_gate(view, approve=False, by="a", text="x", at=AT), GateDecision)


def test_evidence_changed_since_the_step_produced_it_is_not_approved():
    outcome = gates.decision_at_gate(waiting_at_interface(changed=True), approve=True, by="a", text="ok", at=AT)
    assert "evidence of 02-interface changed since the step produced it" in refused(outcome, "evidence_changed")


def test_a_check_blocked_by_an_unusable_input_is_not_approved_even_with_a_note():
    checks = [Check(name="smoke.responses", status=CheckStatus.passed), unusable("accuracy.gsm8k", "no such task")]
    outcome = gates.decision_at_gate(waiting_at_interface(checks=checks), approve=True, by="a", text="fine", at=AT)
    assert refused(outcome, "unusable_input") == (
        "run r1: 02-interface cannot be approved: accuracy.gsm8k did not run because an input is unusable "
        "(no such task); fix the input, then reject the step to rerun it")


def test_approving_failed_checks_needs_override_and_a_note():
    view = waiting_at_interface(verdict="failed")
    for text, override in ((None, False), ("", True), ("  \n", True), ("known upstream break", False)):
        outcome = gates.decision_at_gate(view, approve=True, by="a", text=text, at=AT, override=override)
        assert "approving it anyway needs --override and --note saying why" in refused(outcome, "failed_without_override")
    decision = gates.decision_at_gate(view, approve=True, by="a", text="known upstream break", at=AT, override=True)
    assert isinstance(decision, GateDecision) and decision.note == "known upstream break" and decision.override
    # --override on a step that passed overrides nothing: not recorded as an override
    decision = gates.decision_at_gate(waiting_at_interface(), approve=True, by="a", text="x", at=AT, override=True)
    assert isinstance(decision, GateDecision) and not decision.override


def test_a_rejection_says_why():
    for text in (None, " "):
        outcome = gates.decision_at_gate(waiting_at_interface(), approve=False, by="a", text=text, at=AT)
        assert refused(outcome, "no_reason") == "--reason must say why the step is rejected"


# --------------------------------------------------------------------------- reopening an approved step


def test_a_reopening_sends_back_the_approved_step_and_every_later_step_that_ran():
    view = run(step(1, gate=approved("sha256:one")), step(2, gate=GateView(decision="pending")),
               step(3, attempt=None, verdict="pending"))
    outcome = gates.reopening(view, "01-alignment", by="bob", reason=" edited ", at=AT)
    assert isinstance(outcome, Reopening)
    assert outcome.decision == GateDecision(decision="reopen", by="bob", at=AT, evidence_hash="sha256:a", attempt=1,
                                            reason="edited")
    assert [s.slug for s in outcome.later] == ["02-interface"]  # 03 never ran: nothing to supersede


def test_a_finished_run_can_be_reopened():
    view = run(step(1, gate=approved()), step(2, gate=approved()), state="finished", waiting_at=None)
    assert isinstance(gates.reopening(view, "02-interface", by="b", reason="x", at=AT), Reopening)


@pytest.mark.parametrize("slug, view, by, reason, rule, says", [
    ("09-nope", waiting_at_interface(), "b", "x", "unknown_step",
     "unknown step '09-nope'; the steps are 01-alignment, 02-interface, 03-operators"),
    ("01-alignment", run(step(1, gate=approved()), state="interrupted", waiting_at=None), "b", "x", "mid_step",
     "run r1 stopped mid-step; `harness resume r1` first"),
    ("01-alignment", waiting_at_interface(), " ", "x", "no_decider", "--by must name who decides"),
    ("01-alignment", waiting_at_interface(), "b", None, "no_reason", "--reason must say why the step is rejected"),
    ("03-operators", waiting_at_interface(), "b", "x", "not_approved",
     ("run r1: 03-operators has no approval to reject; only an approved step behind the gate the run waits at can "
      "be reopened")),
])
def test_a_reopening_is_refused(slug, view, by, reason, rule, says):
    assert refused(gates.reopening(view, slug, by=by, reason=reason, at=AT), rule) == says


def test_step_goes_with_reject_only():
    assert gates.step_refusal(approve=False, step="01-alignment") is None
    assert gates.step_refusal(approve=True, step=None) is None
    assert refused(gates.step_refusal(approve=True, step="01-alignment"), "step_on_approve").startswith(
        "--step is for reject only")


# --------------------------------------------------------------------------- refusals before anything is read


@pytest.mark.parametrize("text, lines, ok", [
    ("Alice Smith", False, True),
    ("line one\n\tline two", True, True),  # notes and reasons keep their layout
    ("alice\nbob", False, False),  # --by names one person on one line
    ("ok\x1b[2J", True, False),  # a terminal escape
    ("abc\u202edcba", True, False),  # a bidi override
    ("zero\u200bwidth", True, False),
])
def test_what_a_person_says_is_plain_text(text, lines, ok):
    outcome = gates.plain_text(text, "--note", lines=lines)
    if ok:
        assert outcome is None
    else:
        assert refused(outcome, "control_character").startswith("--note holds the control character")
        assert outcome.message.endswith("say it in plain text; nothing was decided")


def test_a_changed_record_refuses_every_decision():
    assert gates.record_refusal("r1", []) is None
    assert refused(gates.record_refusal("r1", ["run.json changed"]), "record_changed") == (
        "run r1: its record changed: run.json changed; nothing was decided")
    assert refused(gates.record_refusal("r1", ["a", "b", "c"]), "record_changed") == (
        "run r1: its record changed: a (and 2 more change(s): `harness status r1`); nothing was decided")


@pytest.mark.parametrize("state, waiting, refuses", [
    ("ok", True, False),
    ("stale", True, False),  # the next command puts it right
    ("missing", False, False),  # stopped mid-step or finished: resumed or reopened from the journal
    ("missing", True, True),
    ("corrupt", False, True),
])
def test_a_decision_needs_its_resume_state(state, waiting, refuses):
    outcome = gates.resume_state_refusal("r1", ResumeView(state=state, note="state.sqlite is gone"), waiting=waiting)
    if refuses:
        assert refused(outcome, "resume_state_gone") == (
            "run r1: its resume state is gone (state.sqlite is gone); its sign-off record (journal, evidence, "
            "reports) is intact: `harness repair r1` rebuilds the resume state from it")
    else:
        assert outcome is None


# --------------------------------------------------------------------------- what a gate decides by itself


RECORD = StepRecord(attempt=2, verdict=CheckStatus.passed, report="r.md", evidence_dir="e", evidence_hash="sha256:e",
                    finished_at=AT)


def test_a_gate_with_nothing_to_decide_is_skipped_never_approved():
    for auto in (False, True):
        decision = gates.automatic_decision(RECORD, skip="no LLM endpoint configured", auto_approve=auto, at=AT)
        assert decision == GateDecision(decision="skip", by="harness", at=AT, reason="no LLM endpoint configured",
                                        evidence_hash="sha256:e", attempt=2)


def test_auto_approve_says_nobody_reviewed():
    decision = gates.automatic_decision(RECORD, skip=None, auto_approve=True, at=AT)
    assert decision == GateDecision(decision="approve", by=gates.AUTO_APPROVER, at=AT, note=gates.AUTO_NOTE,
                                    automatic=True, evidence_hash="sha256:e", attempt=2)


def test_otherwise_the_gate_waits_for_a_person():
    assert gates.automatic_decision(RECORD, skip=None, auto_approve=False, at=AT) is None


# --------------------------------------------------------------------------- where a gate stands


def test_attempts_count_the_times_a_step_was_sent_back():
    history = [GateDecision(decision=d, by="b", at=AT, attempt=n, reason="x")
               for n, d in enumerate(["reject", "approve", "reopen", "skip"], 1)]
    assert gates.attempt_of([]) == 1
    assert gates.attempt_of(history) == 3
    assert gates.last_rejection(history).decision == "reopen"


def test_an_approval_counts_while_the_evidence_hashes_to_it():
    approval = GateDecision(decision="approve", by="a", at=AT, evidence_hash="sha256:e", attempt=2)
    assert gates.gate_view([approval], approval, RECORD, "sha256:e", False).label == "approved"
    stale = gates.gate_view([approval], approval, RECORD, "sha256:f", False)
    assert (stale.valid, stale.label) == (False, gates.INVALIDATED)
    assert gates.gate_view([], None, RECORD, "sha256:e", True).label == "waiting for review"
    rejected = GateDecision(decision="reject", by="b", at=AT, attempt=1, reason="x")
    assert gates.gate_view([rejected], None, RECORD, "sha256:e", False).label == "pending (rerun after rejection)"
    assert gates.gate_view([rejected], None, None, None, False).decision == "none"  # reset by a reopening


# --------------------------------------------------------------------------- one sequence, one order


REPO = Path(__file__).resolve().parents[2]
ORDER = [rule.__name__ for rule in gates.GATE_RULES]


def person(approve: bool = True, by: str = "alice", text: str | None = "ok", step: str | None = None,
           **inputs) -> gates.GateRequest:
    """A person's decision at the interface gate, with every input (`inputs` overrides one)."""
    fields = {"record_changed": [], "resume": ResumeView(state="ok", note="agrees"), "view": waiting_at_interface(),
              **inputs}
    return gates.GateRequest(run_id="r1", at=AT, asked=gates.PersonDecision(approve=approve, by=by, text=text,
                                                                             step=step), **fields)


def test_gate_rules_are_the_order_docs_runs_md_lists():
    section = (REPO / "docs/runs.md").read_text(encoding="utf-8").split("## The gate's rules, in order", 1)[1]
    assert re.findall(r"^\d+\. `(\w+)`", section, flags=re.MULTILINE) == ORDER
    assert len(ORDER) == len(set(ORDER))


def test_the_first_rule_in_order_that_refuses_is_the_answer():
    # every rule refuses this request; each time the first is fixed, the next one answers
    asks = {"by": "eve\n", "text": "\x1b[2J", "step": "01-alignment",
            "record_changed": ["run.json changed"], "resume": ResumeView(state="corrupt", note="garbage")}
    answered = []
    for fix in ("by", "text", "record_changed", "resume", "step"):
        outcome = gates.decide(person(**asks))
        assert isinstance(outcome, Refusal)
        answered.append(outcome.rule)
        asks[fix] = {"by": "alice", "text": "ok", "step": None, "record_changed": [],
                     "resume": ResumeView(state="ok", note="agrees")}[fix]
    assert answered == ["control_character", "control_character", "record_changed", "resume_state_gone",
                        "step_on_approve"]
    assert isinstance(gates.decide(person(**asks)), GateDecision)  # then the decision itself


def test_a_rule_whose_input_the_asker_lacks_does_not_apply():
    resume = gates.GateRequest(run_id="r1", at=AT, record_changed=[])
    undecided = gates.GateRequest(run_id="r1", at=AT, asked=gates.UndecidedGate(record=RECORD))
    for request in (resume, undecided):
        assert [rule(request) for rule in gates.GATE_RULES] == [None] * len(ORDER)
    assert gates.decide(resume) is None  # nothing asked: the run may go on
    changed = refused(gates.decide(resume.model_copy(update={"record_changed": ["run.json changed"]})),
                      "record_changed")
    assert changed == "run r1: its record changed: run.json changed; nothing was decided"
    assert gates.decide(undecided) is None  # nobody decided: the gate waits for a person
    auto = undecided.model_copy(update={"asked": gates.UndecidedGate(record=RECORD, auto_approve=True)})
    assert gates.decide(auto) == gates.automatic_decision(RECORD, skip=None, auto_approve=True, at=AT)
    with pytest.raises(ValueError, match="needs the run's view"):
        gates.GateRequest(run_id="r1", at=AT, asked=gates.PersonDecision(approve=True, by="a"))


def test_a_person_is_decided_at_the_waiting_gate_or_by_a_reopening():
    assert gates.decide(person(text="looks right")) == gates.decision_at_gate(
        waiting_at_interface(), approve=True, by="alice", text="looks right", at=AT)
    # --step naming the waiting gate is a plain rejection; an earlier step is reopened
    assert gates.decide(person(approve=False, text="x", step="02-interface")).decision == "reject"
    assert isinstance(gates.decide(person(approve=False, text="x", step="01-alignment")), Reopening)
    assert refused(gates.decide(person(approve=False, text="x", step="09-nope")), "unknown_step")


def test_the_workflow_asks_the_gate_only_through_decide():
    """The commands and the graph gather a GateRequest and call `decide`; none consults a rule of
    its own (where a gate stands, `gate_view`, and a rerun's attempt and reason are not decisions)."""
    allowed = {"decide", "GateRequest", "PersonDecision", "UndecidedGate", "Refusal", "Reopening", "gate_view",
               "attempt_of", "last_rejection"}
    used = set()
    for path in sorted((REPO / "harness/workflow").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module == "harness.record.gates":
                used |= {(path.name, alias.name) for alias in node.names}
            elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "gates":
                used.add((path.name, node.attr))
    assert {name for _, name in used} - allowed == set(), sorted(used)
    assert {file for file, name in used if name == "decide"} >= {"runs.py", "graph.py"}
