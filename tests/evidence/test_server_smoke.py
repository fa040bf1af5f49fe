"""Server lifecycle and smoke, end to end against the loopback engine."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import httpx
import pytest

from harness.errors import HarnessError
from harness.record.checks import CheckStatus
from harness.evidence.runbook import ServerSpec
from harness.evidence.server import ServedModel, ServerStartError, build_command
from runner_support import smoke as run_smoke

REPO_ROOT = Path(__file__).resolve().parents[2]


def _group_gone(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return True
    return False


def _statuses(result) -> dict[str, str]:
    return {check.name: check.status.value for check in result.checks}


@pytest.mark.parametrize("api", ["completions", "chat"])
def test_smoke_passes_and_records_every_exchange(loopback_server, loopback_runbook, tmp_path, api):
    runbook = loopback_runbook(api=api)
    with loopback_server(api=api) as server:
        result = run_smoke(server, runbook.smoke, tmp_path / "smoke")
    assert _statuses(result) == {"smoke.responses": "passed", "smoke.non_empty": "passed",
                                 "smoke.determinism": "passed", "smoke.streaming": "passed"}
    assert result.status is CheckStatus.passed
    rows = [json.loads(line) for line in result.evidence.read_text().splitlines()]
    # two prompts, each twice, plus one streamed request
    assert [r["purpose"] for r in rows] == ["first", "first", "repeat", "repeat", "stream"]
    assert all(r["status_code"] == 200 and r["text"].strip() for r in rows)
    assert rows[-1]["response"][-1] == "[DONE]" and len(rows[-1]["response"]) > 3
    assert ("messages" in rows[0]["request"]) == (api == "chat")
    assert rows[0]["request"]["max_tokens"] == 12 and rows[0]["request"]["temperature"] == 0.0


def test_nondeterministic_engine_fails_the_determinism_check(loopback_server, loopback_runbook, tmp_path):
    runbook = loopback_runbook("--nondeterministic")
    with loopback_server("--nondeterministic") as server:
        result = run_smoke(server, runbook.smoke, tmp_path / "smoke")
    statuses = _statuses(result)
    assert statuses["smoke.determinism"] == "failed"
    assert statuses["smoke.responses"] == "passed"
    determinism = next(c for c in result.checks if c.name == "smoke.determinism")
    assert "2 of 2 prompts gave different text at temperature 0" in determinism.reason


def test_http_errors_fail_smoke_with_the_reason(loopback_server, loopback_runbook, tmp_path):
    runbook = loopback_runbook("--error-rate", "1.0")
    with loopback_server("--error-rate", "1.0") as server:
        result = run_smoke(server, runbook.smoke, tmp_path / "smoke")
    checks = {c.name: c for c in result.checks}
    assert checks["smoke.responses"].status is CheckStatus.failed
    assert checks["smoke.responses"].reason.startswith("2 of 2 requests failed; first: HTTP 500")
    assert checks["smoke.non_empty"].label() == "not run: no request returned a completion"
    assert checks["smoke.determinism"].status is CheckStatus.not_run
    assert checks["smoke.streaming"].status is CheckStatus.failed
    assert result.status is CheckStatus.failed


def test_never_healthy_fails_with_the_log_and_leaves_nothing_running(loopback_server):
    with pytest.raises(ServerStartError) as caught:
        with loopback_server("--never-healthy", startup_timeout_s=1.5):
            pytest.fail("a server that never gets healthy must not be yielded")
    error = caught.value
    assert isinstance(error, HarnessError)
    assert re.match(r"server not healthy after 1\.5s \(last /health answer: HTTP 503\); log: \S+", str(error))
    assert "\n" not in str(error)
    check = error.check
    assert check.status is CheckStatus.failed
    assert '"GET /health HTTP/1.1" 503' in check.detail
    record = json.loads(open(check.evidence[-1]).read())
    assert record["exit_code"] is not None and _group_gone(record["pid"])


def test_exit_at_start_names_the_exit_code(loopback_server):
    with pytest.raises(ServerStartError) as caught:
        with loopback_server("--exit-at-start", "3"):
            pytest.fail("unreachable")
    message = str(caught.value)
    assert message.startswith("server exited with code 3 before becoming healthy")
    assert "RuntimeError: no cuda device found" in message  # the last log line
    assert caught.value.check.metrics == {"exit_code": 3}


def test_teardown_escalates_to_sigkill_and_covers_ctrl_c(loopback_server):
    with pytest.raises(KeyboardInterrupt):
        with loopback_server("--ignore-sigterm") as server:
            assert httpx.get(server.base_url + "/health").status_code == 200
            raise KeyboardInterrupt
    assert server.process.returncode == -9
    record = json.loads(server.record_path.read_text())
    assert record["killed"] is True and record["exit_code"] == -9
    assert _group_gone(server.pid)
    assert "Received SIGTERM; ignoring it" in server.stderr_path.read_text()


def test_missing_executable_is_a_clear_failure(tmp_path):
    spec = ServerSpec(command="no-such-engine-binary --port {port}", model="m")
    with pytest.raises(ServerStartError, match="cannot launch server command 'no-such-engine-binary'"):
        with ServedModel(spec, tmp_path):
            pass


def test_command_template_keeps_a_spaced_model_path_as_one_argument():
    spec = ServerSpec(command="python -m sglang.launch_server --model-path {model} --host {host} --port {port}",
                      model="/models/My Model")
    args = build_command(spec, "127.0.0.1", 4321)
    assert args[1:] == ["-m", "sglang.launch_server", "--model-path", "/models/My Model",
                        "--host", "127.0.0.1", "--port", "4321"]


def test_answer_key_answers_the_last_question_of_a_few_shot_prompt(loopback_server, gsm8k_file):
    key = gsm8k_file(6)
    rows = [json.loads(line) for line in key.read_text().splitlines()]
    few_shot = "".join(f"Question: {r['question']}\nAnswer: {r['answer']}\n\n" for r in rows[:3])
    prompt = few_shot + f"Question: {rows[4]['question']}\nAnswer:"
    expected = rows[4]["answer"].rsplit("####", 1)[1].strip()
    body = {"model": "loopback-model", "prompt": prompt, "max_tokens": 256, "temperature": 0,
            "stop": ["Question:"]}
    with loopback_server(answers=key) as right, loopback_server("--wrong-rate", "1.0", name="wrong",
                                                                answers=key) as wrong:
        good = httpx.post(right.base_url + "/v1/completions", json=body).json()
        bad = httpx.post(wrong.base_url + "/v1/completions", json=body).json()
        short = httpx.post(right.base_url + "/v1/completions", json={**body, "max_tokens": 3}).json()
        logprobs = httpx.post(right.base_url + "/v1/completions", json={**body, "logprobs": 1, "echo": True})
        chat = httpx.post(right.base_url + "/v1/chat/completions", json={
            "model": "loopback-model", "messages": [{"role": "user", "content": rows[2]["question"]}]}).json()
    text = good["choices"][0]["text"]
    assert text.endswith(f"The answer is {expected}.\n#### {expected}")
    assert "<<" not in text  # calculator annotations are not part of the reply
    wrong_number = bad["choices"][0]["text"].rsplit("#### ", 1)[1]
    assert wrong_number != expected and wrong_number.isdigit()
    assert short["choices"][0]["finish_reason"] == "length" and short["usage"]["completion_tokens"] == 3
    assert logprobs.status_code == 400 and "logprobs/echo are not supported" in logprobs.json()["message"]
    assert chat["choices"][0]["message"]["content"].endswith("#### " + rows[2]["answer"].rsplit("#### ", 1)[1])


def test_waits_through_a_slow_start(loopback_server):
    with loopback_server("--startup-delay-s", "0.5") as server:
        assert httpx.get(server.base_url + "/health").status_code == 200
    record = json.loads(server.record_path.read_text())
    assert record["ready_after_s"] >= 0.5 and record["exit_code"] == 0


def test_sigterm_to_the_harness_still_stops_the_server(tmp_path):
    """A cancelled CI job SIGTERMs the harness; the server, in its own session, must not outlive it."""
    script = textwrap.dedent("""
        import sys, time
        from pathlib import Path
        from harness.evidence.runbook import ServerSpec
        from harness.evidence.server import ServedModel
        spec = ServerSpec(model="m", shutdown_grace_s=2, command=(
            "python -m harness.testing.loopback --host {host} --port {port} --model {model}"))
        with ServedModel(spec, Path(sys.argv[1])) as server:
            print(server.pid, flush=True)
            time.sleep(120)
    """)
    harness = subprocess.Popen([sys.executable, "-c", script, str(tmp_path)], stdout=subprocess.PIPE,
                               text=True, cwd=REPO_ROOT, env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})
    try:
        server_pid = int(harness.stdout.readline())
        assert not _group_gone(server_pid)
        harness.send_signal(signal.SIGTERM)
        assert harness.wait(timeout=60) == 128 + signal.SIGTERM
    finally:
        harness.kill()
        harness.wait()
    assert _group_gone(server_pid)
    assert json.loads((tmp_path / "server.json").read_text())["exit_code"] == 0


def test_wrong_answers_are_seeded_per_question_and_nested_by_rate(gsm8k_file):
    from harness.testing.loopback import AnswerKey, Engine, Faults

    key = AnswerKey.load(gsm8k_file(300))

    def wrong_questions(rate: float, seed: int = 0) -> set[str]:
        engine = Engine(model="m", faults=Faults(wrong_rate=rate, seed=seed), key=key)
        wrong = set()
        for entry in key.entries:
            reply = engine.generate(f"Question: {entry.question}\nAnswer:", api="completions",
                                    max_tokens=None, temperature=0.0, seed=None, stop=[], request_number=1)
            if not reply.text.endswith(f"#### {entry.answer}"):
                wrong.add(entry.question)
        return wrong

    ten, thirty = wrong_questions(0.1), wrong_questions(0.3)
    assert 15 <= len(ten) <= 45 and 60 <= len(thirty) <= 120  # binomial(300, p), far inside 4 sigma
    assert ten < thirty  # a question wrong at 10 % stays wrong at 30 %: drops are nested
    assert wrong_questions(0.1) == ten and wrong_questions(0.1, seed=1) != ten
    assert wrong_questions(0.0) == set()


def test_token_id_and_batched_prompts(loopback):
    url = loopback.base_url + "/v1/completions"
    single = httpx.post(url, json={"model": loopback.model, "prompt": [11, 12, 13], "max_tokens": 5}).json()
    batch = httpx.post(url, json={"model": loopback.model, "prompt": [[11, 12], "text"], "max_tokens": 5}).json()
    assert len(single["choices"]) == 1 and single["usage"]["prompt_tokens"] == 3
    assert [c["index"] for c in batch["choices"]] == [0, 1]
    assert batch["usage"]["completion_tokens"] == 10


def test_the_engines_last_word_is_in_the_check_a_reader_sees(loopback_server):
    """The console and the summary print the check's reason: it carries the cause (the engine's
    last log line), not only the exit code."""
    with pytest.raises(ServerStartError) as caught:
        with loopback_server("--exit-at-start", "3"):
            pytest.fail("unreachable")
    reason = caught.value.check.reason
    assert reason.startswith("server exited with code 3 before becoming healthy (last log line: ")
    assert "RuntimeError: no cuda device found" in reason and "\n" not in reason
