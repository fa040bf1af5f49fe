"""Know your engine: only the engine the lifecycle started may be measured. A fixed port that is
already taken is refused, naming its holder; a health check answered by another process fails;
an engine that exits mid-step fails the step, whatever answers on its port afterwards; and the
engine's identity is recorded."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import httpx
import pytest

from harness.evidence.runbook import ServerSpec
from harness.evidence.server import ServedModel, ServerStartError, free_port

REPO_ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
LOOPBACK = [sys.executable, "-m", "harness.testing.loopback", "--host", "127.0.0.1"]


def start_impostor(port: int) -> subprocess.Popen:
    """Another engine, in a session of its own (an orphan of some other run, say)."""
    impostor = subprocess.Popen([*LOOPBACK, "--port", str(port), "--model", "impostor"], env=ENV,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1, trust_env=False).status_code == 200:
                return impostor
        except httpx.HTTPError:
            time.sleep(0.05)
    impostor.kill()
    raise AssertionError("the impostor never came up")


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def test_a_taken_fixed_port_is_refused_before_anything_starts(tmp_path):
    port = free_port()
    impostor = start_impostor(port)
    try:
        spec = ServerSpec(command=" ".join(LOOPBACK) + " --port {port}", model="m", port=port)
        with pytest.raises(ServerStartError) as caught:
            with ServedModel(spec, tmp_path):
                pytest.fail("the impostor's port must not be served from")
        message = str(caught.value)
        assert message.startswith(f"port {port} on 127.0.0.1 is already in use by pid {impostor.pid} (")
        assert "harness.testing.loopback" in message and "\n" not in message
        record = json.loads((tmp_path / "server.json").read_text())
        assert "pid" not in record, "nothing was launched"
        assert caught.value.check.name == "server.start" and caught.value.check.reason == record["start_failure"]
        assert impostor.poll() is None, "someone else's process is left alone"
    finally:
        stop(impostor)


def test_a_health_check_answered_by_another_process_fails(tmp_path):
    # The launch command starts the real server detached (another session) and idles: /health
    # answers, but not from the process the lifecycle started.
    launcher = tmp_path / "launcher.py"
    launcher.write_text(textwrap.dedent(f"""
        import subprocess, sys, time
        child = subprocess.Popen({LOOPBACK!r} + ["--port", sys.argv[1]], start_new_session=True)
        print(child.pid, flush=True)
        time.sleep(120)
    """))
    spec = ServerSpec(command=f"python {launcher} {{port}}", model="m", startup_timeout_s=20, shutdown_grace_s=2,
                      env={"PYTHONPATH": str(REPO_ROOT)})
    try:
        with pytest.raises(ServerStartError) as caught:
            with ServedModel(spec, tmp_path):
                pytest.fail("an engine that is not ours must not be yielded")
        detached = int((tmp_path / "server.stdout.log").read_text().split()[0])
        assert str(caught.value).startswith("server is not what answers on 127.0.0.1:")
        assert f"pid {detached} (" in str(caught.value) or "no process of it listens there" in str(caught.value)
        assert caught.value.check.name == "server.start"
    finally:
        detached = int((tmp_path / "server.stdout.log").read_text().split()[0])
        os.killpg(detached, signal.SIGKILL)


def test_identity_is_recorded_and_an_engine_that_dies_mid_step_fails_it(tmp_path):
    spec = ServerSpec(command=" ".join(LOOPBACK) + " --port {port} --model {model}", model="loopback-model",
                      shutdown_grace_s=2)
    served = ServedModel(spec, tmp_path)
    with served as server:
        identity = json.loads(server.record_path.read_text())["identity"]
        assert identity["pid"] == identity["listener_pid"] == server.pid
        assert identity["models"] == ["loopback-model"]
        assert identity["server_info"]["served_model_name"] == "loopback-model"
        assert "harness.testing.loopback" in " ".join(identity["program"])
        served.confirm_alive()  # alive: nothing to say

        os.killpg(server.pid, signal.SIGKILL)
        server.process.wait()
        with pytest.raises(ServerStartError) as caught:
            served.confirm_alive()
    assert caught.value.check.name == "server.alive"
    assert caught.value.check.reason.startswith("server exited with code -9 during the step")
    assert json.loads(server.record_path.read_text())["lost"] == caught.value.check.reason


def test_health_waits_say_so(tmp_path, monkeypatch):
    import harness.evidence.server as server_module

    monkeypatch.setattr(server_module, "HEALTH_PROGRESS_S", 0.2)
    lines: list[str] = []
    spec = ServerSpec(command=" ".join(LOOPBACK) + " --port {port} --startup-delay-s 1", model="m",
                      startup_timeout_s=30, shutdown_grace_s=2)
    with ServedModel(spec, tmp_path, progress=lines.append):
        pass
    assert len(lines) >= 2, lines
    assert lines[0].startswith("waiting for http://127.0.0.1:") and "of 30 s (server.startup_timeout_s)" in lines[0]
