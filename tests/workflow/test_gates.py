"""End-to-end: drive the `harness` CLI as a user would, through every kind of gate decision."""

from __future__ import annotations

import json
import re
from pathlib import Path

from workflow_support import loopback_runbook

from harness.record import gates

STEPS = ["01-alignment", "02-interface", "03-operators", "04-accuracy", "05-performance"]


def started(journal: list[dict], step: str) -> int:
    return sum(1 for e in journal if e["event"] == "step_started" and e["step"] == step)


def links_resolve(report: Path) -> None:
    for target in re.findall(r"\]\(([^)]+)\)", report.read_text()):
        if "://" not in target:
            assert (report.parent / target).exists(), f"{report.name} links to missing {target}"


def test_run_stops_at_first_gate_then_reject_and_approve_to_the_end(project):
    first = project.cli(*project.run_args("--run-id", "kv1"))
    assert "Waiting at the 01-alignment gate" in first.stdout
    assert "harness approve kv1 --by YOUR_NAME" in first.stdout

    status = project.status("kv1")
    assert status["state"] == "waiting" and status["waiting_at"] == "01-alignment"
    alignment = status["steps"][0]
    assert alignment["gate"]["decision"] == "pending"
    assert alignment["evidence_hash"].startswith("sha256:")
    assert [s["verdict"] for s in status["steps"][1:]] == ["pending"] * 4

    project.cli("reject", "kv1", "--by", "bob", "--reason", "landing must cover get_kv_pool_cls(kind=...)")
    status = project.status("kv1")
    assert status["waiting_at"] == "01-alignment"
    assert status["steps"][0]["attempt"] == 2
    assert started(project.journal("kv1"), "01-alignment") == 2
    report = (project.reports("kv1") / "01-alignment.md").read_text()
    assert "Rerun after rejection" in report
    assert "rejected by bob" in report and "landing must cover get_kv_pool_cls(kind=...)" in report
    step_record = json.loads((project.reports("kv1") / "evidence/01-alignment/step.json").read_text())
    assert step_record["rejection_reason"] == "landing must cover get_kv_pool_cls(kind=...)"
    superseded = project.workspace / ".harness/runs/kv1/superseded/01-alignment.attempt-1"
    assert (superseded / "step.json").is_file(), "the rejected attempt's evidence is kept"

    project.cli("approve", "kv1", "--by", "alice", "--note", "landing point agreed")
    status = project.status("kv1")
    assert status["waiting_at"] == "02-interface"
    interface = status["steps"][1]
    names = {c["name"]: c["status"] for c in interface["checks"]}
    # the loopback engine really served: smoke checks come from real requests
    assert names["smoke.responses"] == "passed"
    assert (project.reports("kv1") / "evidence/02-interface/smoke/smoke.jsonl").is_file()

    for _ in range(4):
        waiting = project.status("kv1")
        step = next(s for s in waiting["steps"] if s["slug"] == waiting["waiting_at"])
        if step["verdict"] == "failed":  # approving failed checks needs --override and a note; the report says so
            for asked in ((), ("--note", "known upstream break, tracked")):
                refused = project.cli("approve", "kv1", "--by", "alice", *asked, check=False)
                assert refused.returncode == 2 and "needs --override and --note" in refused.stderr and "Traceback" not in refused.stderr
            project.cli("approve", "kv1", "--by", "alice", "--override", "--note", "known upstream break, tracked")
            report = (project.reports("kv1") / f"{step['slug']}.md").read_text()
            assert "**Approved despite failed checks**: known upstream break, tracked" in report
            assert any(e.get("override") for e in project.journal("kv1") if e.get("event") == "approve"), "recorded as an override"
        else:
            project.cli("approve", "kv1", "--by", "alice")
    status = project.status("kv1")
    assert status["state"] == "finished"
    *steps, knowledge = status["steps"]  # no LLM endpoint: the write-back gate did not wait
    assert knowledge["gate"]["decision"] == "skip" and knowledge["gate_decision"].endswith("no LLM endpoint configured")
    for step in steps:
        assert step["gate"]["decision"] == "approve" and step["gate"]["valid"] is True
        assert step["approver"] == "alice" and step["automatic"] is False
        assert step["gate"]["evidence_hash"] == step["evidence_hash"]
        assert step["checks"], f"{step['slug']} recorded no checks"
    # a finished step is never run twice, except the one rejected once
    journal = project.journal("kv1")
    assert [started(journal, s) for s in STEPS] == [2, 1, 1, 1, 1]

    reports = project.reports("kv1")
    summary = (reports / "summary.md").read_text()
    for slug in STEPS:
        assert (reports / f"{slug}.md").is_file()
        links_resolve(reports / f"{slug}.md")
    links_resolve(reports / "summary.md")
    assert summary.count("| approved | alice |") == 5
    assert "landing point agreed" in (reports / "01-alignment.md").read_text()

    # tamper with approved evidence: the approval no longer counts
    approved_hash = project.status("kv1")["steps"][1]["evidence_hash"]
    (reports / "evidence/02-interface/smoke/smoke.jsonl").write_text("{}\n")
    as_json = project.cli("status", "kv1", "--json", check=False)
    assert as_json.returncode == 1, "status fails while an approval is invalidated"
    status = json.loads(as_json.stdout)
    interface = status["steps"][1]
    assert interface["gate"]["valid"] is False
    assert interface["gate_decision"] == "approval invalidated: evidence changed"
    assert all(s["gate"]["valid"] for s in status["steps"][:5] if s["slug"] != "02-interface")
    human = project.cli("status", "kv1", check=False)
    assert human.returncode == 1
    assert "approval invalidated: evidence changed" in human.stdout
    summary = (reports / "summary.md").read_text()
    [row] = [line for line in summary.splitlines() if line.startswith("| 2 | interface |")]
    assert "approval invalidated: evidence changed" in row
    assert f"`{approved_hash[7:19]}`" in row, "the summary shows the hash that was approved"
    assert interface["current_hash"][7:19] not in row
    assert project.cli("status", check=False).returncode == 1  # the run list says so too

    # a finished run is reopened at the step whose evidence changed; later steps wait behind it
    project.cli("reject", "kv1", "--by", "bob", "--reason", "smoke log was edited", "--step", "02-interface")
    status = project.status("kv1")
    assert status["state"] == "waiting" and status["waiting_at"] == "02-interface"
    assert status["steps"][1]["attempt"] == 2 and status["steps"][0]["gate"]["valid"] is True
    assert [s["verdict"] for s in status["steps"][2:]] == ["pending"] * 4  # knowledge too: it reruns last
    assert not (reports / "05-performance.md").exists()


def test_auto_approve_runs_to_the_end_and_says_so(project):
    """Also: the later gates see the evidence runners' real verdicts (the engine logs operator
    fallbacks; accuracy is measured with lm-eval over HTTP)."""
    runbook = loopback_runbook(project.root / "full.yaml", "--fallback-lines", "2", accuracy=True)
    project.cli(*project.run_args("--run-id", "auto", "--auto-approve", runbook=runbook))
    status = project.status("auto")
    assert status["state"] == "finished"
    verdicts = {s["step"]: s for s in status["steps"]}
    operators = {c["name"]: c for c in verdicts["operators"]["checks"]}
    assert operators["operators.workload"]["status"] == "passed"
    assert operators["fallback.log"]["status"] == "failed"
    assert operators["profile.capture"]["status"] == "passed"
    assert operators["fallback.trace"]["status"] in ("passed", "failed"), operators["fallback.trace"]
    assert (project.reports("auto") / "evidence/03-operators/fallback/fallback_hits.jsonl").stat().st_size > 0
    [accuracy] = verdicts["accuracy"]["checks"]
    assert accuracy["status"] in ("passed", "failed", "inconclusive"), accuracy  # measured, not skipped
    assert (project.reports("auto") / "evidence/04-accuracy/accuracy/gsm8k-mini/samples.jsonl").is_file()
    assert verdicts["performance"]["checks"][0]["status"] == "not_run"
    assert "no performance suites" in verdicts["performance"]["checks"][0]["reason"]
    assert all(s["automatic"] and s["approver"] == "auto-approve" for s in status["steps"][:5])
    assert status["steps"][5]["gate"]["decision"] == "skip"  # knowledge: nothing to approve, never auto-approved
    reports = project.reports("auto")
    assert "approved (automatic)" in (reports / "summary.md").read_text()
    for slug in STEPS:
        assert "Approved automatically by `--auto-approve`" in (reports / f"{slug}.md").read_text()

    # nothing is left to approve
    refused = project.cli("approve", "auto", "--by", "a", check=False, subprocess_=True)
    assert refused.returncode == 2
    assert refused.stderr.strip() == "harness: error: run auto is not waiting at a gate: it has finished"


def test_two_runs_render_reports_that_diff_cleanly(project):
    """Stable ordering: apart from times, hashes, ports and run ids, two runs give the same bytes."""
    for run_id in ("same-a", "same-b"):
        project.cli(*project.run_args("--run-id", run_id))

    def normalised(run_id: str) -> str:
        text = (project.reports(run_id) / "01-alignment.md").read_text()
        text = text.replace(run_id, "RUN")
        return re.sub(r"\d{4}-\d\d-\d\dT[\d:]+Z|sha256:[0-9a-f]+", "X", text)

    assert normalised("same-a") == normalised("same-b")


def test_later_gate_refused_while_an_earlier_approval_is_invalidated(project):
    project.cli(*project.run_args("--run-id", "inv"))
    project.cli("approve", "inv", "--by", "alice")
    assert project.status("inv")["waiting_at"] == "02-interface"
    reports = project.reports("inv")
    step_json = reports / "evidence/01-alignment/step.json"
    edited = step_json.read_bytes() + b"\n"
    step_json.write_bytes(edited)  # edited after approval

    refused = project.cli("approve", "inv", "--by", "alice", check=False, subprocess_=True)
    assert refused.returncode == 2
    [line] = refused.stderr.strip().splitlines()
    assert line.startswith("harness: error: run inv: the approval of 01-alignment is invalidated")
    assert "reject 01-alignment to rerun it" in line
    status = json.loads(project.cli("status", "inv", "--json", check=False).stdout)
    assert status["waiting_at"] == "02-interface", "the refused approval did not advance the run"
    assert project.cli("status", "inv", check=False).returncode == 1

    # the recovery the message names: reject that step; it reruns, and the later step after it
    project.cli("reject", "inv", "--by", "bob", "--reason", "evidence was edited", "--step", "01-alignment")
    status = project.status("inv")  # exits 0 again: nothing approved is invalidated
    assert status["waiting_at"] == "01-alignment"
    assert status["steps"][0]["attempt"] == 2
    assert status["steps"][1]["verdict"] == "pending" and status["steps"][1]["gate"]["decision"] == "none"
    runs = project.workspace / ".harness/runs/inv/superseded"
    assert (runs / "01-alignment.attempt-1/step.json").read_bytes() == edited, "the edited evidence is kept"
    assert (runs / "02-interface.attempt-1.reopened-1/step.json").is_file()
    project.cli("approve", "inv", "--by", "alice")
    project.cli("approve", "inv", "--by", "alice", "--override", "--note", "the fixture's upstream break, tracked")
    status = project.status("inv")
    assert status["waiting_at"] == "03-operators"
    assert all(s["gate"]["valid"] for s in status["steps"][:2])
    journal = project.journal("inv")
    assert [e["step"] for e in journal if e["event"] == "step_started"] == [
        "01-alignment", "02-interface", "01-alignment", "02-interface", "03-operators"]

    # only an approved step behind the gate can be reopened
    refused = project.cli("reject", "inv", "--by", "b", "--reason", "x", "--step", "05-performance", check=False)
    assert refused.returncode == 2 and "has no approval to reject" in refused.stderr


def test_run_approve_and_resume_ask_the_gate_rules_in_one_order(project, monkeypatch):
    """The graph's gate (`run`, `approve` moving on), a person's decision (`approve`) and
    `resume` each go through `harness.record.gates.decide`, which consults all of GATE_RULES in
    its one order; a refusal comes out of the same sequence."""
    rules = list(gates.GATE_RULES)
    consulted: list[tuple[str | None, list[str]]] = []  # (what was asked, the rules consulted)

    def spying(rule):
        def check(request: gates.GateRequest) -> gates.Refusal | None:
            if rule is rules[0]:
                consulted.append((type(request.asked).__name__ if request.asked else None, []))
            consulted[-1][1].append(rule.__name__)
            return rule(request)
        return check

    monkeypatch.setattr(gates, "GATE_RULES", [spying(rule) for rule in rules])
    project.cli(*project.run_args("--run-id", "seq"))
    project.cli("approve", "seq", "--by", "alice")
    project.cli("resume", "seq")
    refused = project.cli("approve", "seq", "--by", "eve\nalice", check=False)
    assert refused.returncode == 2 and "--by holds the control character" in refused.stderr
    order = [rule.__name__ for rule in rules]
    assert consulted == [("UndecidedGate", order), ("PersonDecision", order), ("UndecidedGate", order),
                         (None, order), ("PersonDecision", order[:1])]  # the first refusal is the answer
