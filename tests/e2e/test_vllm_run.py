"""`harness run` end to end on a vLLM plugin with a vLLM runbook (issue 21): the tiny vLLM
plugin (tests/fixtures/vllm_tiny), a feature on the GPU worker it patches, vllm 0.22.1 → 0.27.1
(real release wheels), and tests/fixtures/vllm_run/runbook.yaml (`environment.engine: vllm`).

vLLM cannot serve here (no accelerator; its wheels are CUDA builds), so the runbook's server is
SmolLM2 on llama.cpp standing in for `vllm serve`, as it stands in for SGLang's server in the
built-in example. What is real: the knowledge engine on both releases, smoke, lm-eval's gsm8k task
against the served model with its paired gate. `vllm bench serve` is not installed, so
performance is not run and says so — never a number. About 40 s on 2 CPU cores once the releases
are cached (the knowledge tests resolve the same two)."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness.errors import HarnessError
from harness.evidence.local_model import require_engine
from harness.knowledge.upstream.source import resolve_upstream

pytestmark = pytest.mark.slow

REPO_ROOT = Path(__file__).resolve().parents[2]
FIXTURE = REPO_ROOT / "tests" / "fixtures" / "vllm_run"
PLUGIN = REPO_ROOT / "tests" / "fixtures" / "vllm_tiny"
# The SGLang run of the built-in example, as committed (regenerated with the example).
SGLANG_EVIDENCE = REPO_ROOT / "reports" / "examples" / "reports" / "example" / "evidence"
STEPS = ["01-alignment", "02-interface", "03-operators", "04-accuracy", "05-performance", "06-knowledge"]
# Not run for reasons this machine cannot avoid: no LLM endpoint for the agent, a plugin with no
# copy of an upstream function, vLLM's client not installable here, and no trace: vLLM's profiler
# (--profiler-config) cannot be given to the stand-in server, so the runbook has no `profiling`.
UNAVOIDABLE = ("no LLM endpoint configured", "the plugin carries no copy of an upstream function",
               "(vllm bench serve) is not installed", "no trace was captured",
               "the feature touches no platform methods")  # the feature is the worker patch: its overrides are others'


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One unattended `harness run` of the vLLM feature; its reports directory."""
    try:
        require_engine()
        resolve_upstream("vllm==0.22.1"), resolve_upstream("vllm==0.27.1")
    except HarnessError as exc:
        pytest.skip(f"not run: {exc}")
    if importlib.util.find_spec("lm_eval") is None:
        pytest.skip("not run: lm-eval is not installed (pip install 'harness[eval]')")
    tmp = tmp_path_factory.mktemp("vllm-run")
    plugin = shutil.copytree(PLUGIN, tmp / "plugin")  # a run may write into the plugin checkout
    (tmp / "ws").mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "harness", "run", "--auto-approve", "--run-id", "vllm-tiny",
         "--feature", str(FIXTURE / "features" / "worker-ft-command.yaml"), "--plugin", str(plugin),
         "--from", "vllm==0.22.1", "--upstream", "vllm==0.27.1", "--runbook", str(FIXTURE / "runbook.yaml"),
         "--workspace", str(tmp / "ws")],
        capture_output=True, text=True, timeout=600, env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        cwd=tmp, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return tmp / "ws" / "reports" / "vllm-tiny"


def _checks(reports: Path) -> dict[str, dict]:
    return {c["name"]: c for step in STEPS
            for c in json.loads((reports / "evidence" / step / "step.json").read_text())["checks"]}


def test_every_step_is_decided_and_what_did_not_run_says_why(run):
    evidence = run / "evidence"
    assert sorted(d.name for d in evidence.iterdir() if (d / "step.json").is_file()) == STEPS
    checks = _checks(run)
    avoidable = [f"{name}: {c['reason']}" for name, c in checks.items()
                 if c["status"] == "not_run" and not any(why in (c["reason"] or "") for why in UNAVOIDABLE)]
    assert not avoidable, avoidable
    # the knowledge engine on the two real releases: the patched worker methods found and resolved
    assert "3 other live overrides of the plugin lie outside this feature (0 breaking" in checks["interface.override_signatures"]["reason"]
    for name in ("alignment.symbols_located", "alignment.landing_point", "interface.targets_resolve",
                 "smoke.responses", "smoke.determinism", "smoke.streaming",
                 "operators.workload", "fallback.log"):
        assert checks[name]["status"] == "passed", checks[name]
    assert "xdev_vllm/patches.py:" in checks["alignment.landing_point"]["reason"]


def test_accuracy_is_lm_eval_against_the_served_model_with_its_gate(run):
    [check] = [c for name, c in _checks(run).items() if name.startswith("accuracy.")]
    assert check["name"] == "accuracy.gsm8k-mini"
    assert check["status"] in ("passed", "inconclusive", "failed"), check  # decided: a 135M model, 5 questions
    out = run / "evidence" / "04-accuracy" / "accuracy" / "gsm8k-mini"
    samples = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    assert len(samples) == check["metrics"]["n"] == 5  # the suite's limit
    assert sum(bool(s["response"].strip()) for s in samples) >= 3  # the served model answered
    assert "paired" in json.loads((out / "gate.json").read_text())["rule"]
    assert json.loads((out / "results.json").read_text())["task"]["include"].endswith("gsm8k.yaml")
    server = json.loads((run / "evidence" / "04-accuracy" / "server" / "server.json").read_text())
    assert server["command"][1:3] == ["-m", "harness.evidence.local_model"]  # the runbook's server


def test_performance_is_not_run_with_the_reason_never_a_number(run):
    if importlib.util.find_spec("vllm") is not None:
        pytest.skip("vllm is installed here: its client measures (tests/evidence/test_vllm_serving.py)")
    checks = {name: c for name, c in _checks(run).items() if name.startswith("performance.")}
    assert list(checks) == ["performance.random-32-in-16-out.run"]
    [check] = checks.values()
    assert check["status"] == "not_run"
    assert check["reason"].startswith("the engine's benchmark client (vllm bench serve) is not installed")
    assert "vllm==0.27.1" in check["reason"]
    assert not check["metrics"]
    perf = run / "evidence" / "05-performance" / "perf" / "random-32-in-16-out"
    assert sorted(p.name for p in perf.iterdir()) == ["summary.json"]  # no results, no repetitions
    summary = json.loads((perf / "summary.json").read_text())
    assert (summary["status"], summary["repetitions"], summary["reference_results"]) == ("not_run", 0, None)
    assert "not installed" in (run / "05-performance.md").read_text()


def test_evidence_has_the_shape_of_the_sglang_run(run):
    """Every file the vLLM run wrote is one the built-in example's SGLang run writes at the same
    place (suite names are shared); the SGLang run has more only where this runbook asks less."""
    if not SGLANG_EVIDENCE.is_dir():
        pytest.skip(f"not run: no committed SGLang example run at {SGLANG_EVIDENCE}")
    ours = {str(p.relative_to(run / "evidence")) for p in (run / "evidence").rglob("*") if p.is_file()}
    sglang = {str(p.relative_to(SGLANG_EVIDENCE)) for p in SGLANG_EVIDENCE.rglob("*") if p.is_file()}
    assert ours <= sglang, sorted(ours - sglang)
    for step in STEPS[1:5]:  # the steps that serve the model
        assert {f"{step}/{name}" for name in ("step.json", "facts.json", "served.json", "runbook.yaml",
                                              "server/server.json", "server/server.stderr.log")} <= ours


def test_reports_name_the_engine_and_the_releases(run):
    for step in ("02-interface", "03-operators", "04-accuracy", "05-performance"):
        report = (run / f"{step}.md").read_text()
        [engine] = [line for line in report.splitlines() if line.startswith("| engine |")]
        assert engine.startswith("| engine | vLLM 0.27.1 (the runbook's `environment.engine`); measured: pid "), engine
        assert "llama_cpp.server" in engine  # the stand-in shows as itself
    summary = (run / "summary.md").read_text()
    assert "`vllm==0.27.1` (from `vllm==0.22.1`)" in summary
