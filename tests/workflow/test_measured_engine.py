"""The wrong engine is never measured: with the runbook's fixed port held by another loopback
engine (say, one orphaned by another run), the served steps fail with a clear reason and nothing
the impostor says reaches a gate; an engine that dies mid-step fails its step with its log; and a
report names the engine that was measured."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import httpx
import pytest
import yaml
from workflow_support import REPO_ROOT, loopback_runbook

from harness.evidence.server import free_port


def test_a_port_held_by_another_engine_fails_the_step_and_gates_nothing_of_it(project):
    port = free_port()
    impostor = subprocess.Popen(
        [sys.executable, "-m", "harness.testing.loopback", "--host", "127.0.0.1", "--port", str(port),
         "--model", "loopback-model"],
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        start_new_session=True)
    try:
        deadline = time.monotonic() + 20
        while True:  # bounded wait for the impostor to listen
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1, trust_env=False).status_code == 200:
                    break
            except httpx.HTTPError:
                assert time.monotonic() < deadline, "the impostor never came up"
                time.sleep(0.05)
        fixed = loopback_runbook(project.root / "fixed.yaml")
        data = yaml.safe_load(fixed.read_text())
        data["server"]["port"] = port
        fixed.write_text(yaml.safe_dump(data, sort_keys=False))

        project.cli(*project.run_args("--run-id", "imp", "--auto-approve", runbook=fixed))
        status = project.status("imp")
        for step in status["steps"][1:3]:  # interface and operators serve the model
            checks = {c["name"]: c for c in step["checks"]}
            assert step["verdict"] == "failed"
            start = checks["server.start"]
            assert start["status"] == "failed"
            assert start["reason"].startswith(f"port {port} on 127.0.0.1 is already in use by pid {impostor.pid}")
            assert not any(name.startswith(("smoke.", "operators.", "fallback.")) for name in checks), checks
        evidence = project.reports("imp") / "evidence"
        assert not (evidence / "02-interface/smoke").exists() and not (evidence / "03-operators/workload").exists()
        assert impostor.poll() is None, "the harness leaves someone else's engine alone"
    finally:
        os.killpg(impostor.pid, signal.SIGKILL)
        _, log = impostor.communicate()
    assert "/v1/completions" not in log.decode(), "the impostor was sent requests"

    # with the port free, the rerun measures the engine it started, and its report says which
    project.cli("reject", "imp", "--by", "bob", "--reason", "port was taken", "--step", "02-interface")
    interface = project.status("imp")["steps"][1]
    assert {c["name"]: c["status"] for c in interface["checks"]}["smoke.responses"] == "passed"
    report = (project.reports("imp") / "02-interface.md").read_text()
    [engine] = [line for line in report.splitlines() if line.startswith("| engine |")]
    assert f"on port {port}, serving loopback-model" in engine and "harness.testing.loopback" in engine


@pytest.mark.parametrize("teardown_s", ["0", "4"], ids=["exits-at-once", "port-closed-before-exit"])
def test_an_engine_that_dies_mid_step_fails_it_with_its_log(project, teardown_s):
    """However late its exit code can be read after its port closed (within shutdown_grace_s,
    here longer than the rest of the step), an engine that died during the step fails it."""
    dying = loopback_runbook(project.root / "dying.yaml", "--exit-after-requests", "2", "--exit-delay-s", teardown_s)
    data = yaml.safe_load(dying.read_text())
    data["server"]["shutdown_grace_s"] = 15
    dying.write_text(yaml.safe_dump(data, sort_keys=False))
    project.cli(*project.run_args("--run-id", "die", "--auto-approve", runbook=dying))
    checks = {c["name"]: c for c in project.status("die")["steps"][1]["checks"]}
    alive = checks["server.alive"]
    assert alive["status"] == "failed"
    assert alive["reason"].startswith("server exited with code 3 during the step")
    assert "injected fault (--exit-after-requests 2)" in alive["detail"]
    assert not any(name.startswith("smoke.") for name in checks), "nothing it served is gated"


def test_health_waits_print_progress_lines_in_logs(project, monkeypatch):
    """Where stderr is a log (CI), a slow engine start prints lines while it waits, not nothing."""
    import harness.cli.common as cli_common
    import harness.evidence.server as server_module

    monkeypatch.setattr(server_module, "HEALTH_PROGRESS_S", 0.3)  # 10 s in real use
    monkeypatch.setattr(cli_common, "LOG_LINE_EVERY_S", 0.2)  # 5 s in real use
    slow = loopback_runbook(project.root / "slow-start.yaml", "--startup-delay-s", "1.5")
    proc = project.cli(*project.run_args("--run-id", "w", "--auto-approve", runbook=slow))
    waits = [line for line in proc.stderr.splitlines() if "waiting for http://127.0.0.1:" in line]
    assert waits and "of 20 s (server.startup_timeout_s), last answer: ConnectError" in waits[0], proc.stderr
