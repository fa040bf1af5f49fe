"""Golden tensors end to end: real dumps captured with forward hooks from the example's decoder
stack, an op made to diverge, the runbook `golden:` section run as the accuracy step runs it."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("safetensors")

from harness.errors import HarnessError
from harness.evidence.golden import GoldenRunner, load_dumps
from harness.evidence.runbook import load_runbook
from harness.evidence.tensor_capture import capture_outputs, load_factory
from harness.record.checks import CheckStatus

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "harness" / "examples" / "workspace"
build = load_factory("golden/stack.py:build", base_dir=EXAMPLE)


def test_capture_keeps_call_order_and_every_module(tmp_path):
    model, inputs = build(dtype=torch.float32)
    path = capture_outputs(model, inputs, tmp_path)
    names = list(load_dumps(path))
    # children finish before their parents; the root is last
    assert names[:3] == ["layers.0.input_layernorm", "layers.0.self_attn.qkv_proj", "layers.0.self_attn.rotary/0"]
    assert names[-1] == "output" and "layers.1.mlp.act_fn" in names
    assert names.index("layers.0.mlp.down_proj") < names.index("layers.0.mlp") < names.index("layers.0")


def test_an_injected_divergence_in_one_op_is_the_first_divergent_op(tmp_path):
    from harness.evidence.golden import compare_dumps

    model, inputs = build(dtype=torch.float32)
    capture_outputs(model, inputs, tmp_path / "ref")
    # The "port" of one op is wrong: layer 1's SiLU-and-mul computes gelu instead; every op after
    # it diverges too, but the comparison must point at the op itself.
    model.layers[1].mlp.act_fn.forward = lambda x: torch.nn.functional.gelu(x.chunk(2, -1)[0]) * x.chunk(2, -1)[1]
    capture_outputs(model, inputs, tmp_path / "cand")
    check = compare_dumps(tmp_path / "ref", tmp_path / "cand", tmp_path / "ev", atol=1e-5, rtol=1e-4)
    assert check.status is CheckStatus.failed
    report = json.loads((tmp_path / "ev" / "golden.json").read_text())
    assert report["first_mismatch"] == "outputs/layers.1.mlp.act_fn"
    assert check.reason.startswith("first op that diverges: outputs/layers.1.mlp.act_fn")
    # ops before it are bit-identical; the worst offenders are named with their numbers
    assert "outputs/layers.0" not in report["mismatched"]
    assert "worst offenders:" in check.detail and "× tolerance" in check.detail


def _golden_runbook(tmp_path: Path, golden: str) -> Path:
    shutil_source = (EXAMPLE / "golden" / "stack.py").read_text()
    (tmp_path / "stack.py").write_text(shutil_source)
    path = tmp_path / "runbook.yaml"
    path.write_text(textwrap.dedent("""\
        name: t
        environment: {device: cpu, engine_version: "0.5.23"}
        server: {command: "x --port {port}", model: m}
        """) + textwrap.dedent(golden))
    return path


def test_runbook_section_float32_vs_bfloat16_with_per_op_tolerances(tmp_path):
    capture = f"{sys.executable} -m harness golden capture --factory stack.py:build --out {{out}} --dtype"
    runbook = load_runbook(_golden_runbook(tmp_path, f"""\
        golden:
          reference: {{command: "{capture} float32"}}
          candidate: {{command: "{capture} bfloat16"}}
          expected_dtype_pairs: [[float32, bfloat16]]
          atol: 0.02
          rtol: 0.02
          tolerances: [{{pattern: "*norm*", atol: 0.05, rtol: 0.02}}]
        """))
    evidence = tmp_path / "evidence"
    commands = GoldenRunner().run(runbook.golden, evidence, cwd=tmp_path).commands()
    assert len(commands) == 2 and "bfloat16" in commands[1]
    (check,) = GoldenRunner().judge(evidence, runbook.golden)
    assert check.status is CheckStatus.passed, check.reason
    assert check.metrics["compared"] == 26 and check.metrics["dtype_mismatches"] == 0
    norms = [t for t in json.loads((evidence / "golden.json").read_text())["tensors"] if "norm" in t["name"]]
    assert norms and all(t["atol"] == 0.05 for t in norms)
    assert (evidence / "golden_error.png").read_bytes()[:4] == b"\x89PNG"

    # without the expected pair the dtype change is itself a failure
    strict = runbook.golden.model_copy(update={"expected_dtype_pairs": [],
                                               "reference": runbook.golden.reference.model_copy(
                                                   update={"command": None, "dumps": evidence / "reference"}),
                                               "candidate": runbook.golden.candidate.model_copy(
                                                   update={"command": None, "dumps": evidence / "candidate"})})
    GoldenRunner().run(strict, tmp_path / "strict", cwd=tmp_path)
    (failed,) = GoldenRunner().judge(tmp_path / "strict", strict)
    assert failed.status is CheckStatus.failed and "26 unexpected dtype mismatches" in failed.reason


def test_a_failing_capture_fails_with_its_log(tmp_path):
    runbook = load_runbook(_golden_runbook(tmp_path, f"""\
        golden:
          reference: {{command: "{sys.executable} -m harness golden capture --factory nowhere.py:build --out {{out}}"}}
          candidate: {{dumps: cand}}
        """))
    GoldenRunner().run(runbook.golden, tmp_path / "ev", cwd=tmp_path)
    (check,) = GoldenRunner().judge(tmp_path / "ev", runbook.golden)
    assert check.status is CheckStatus.failed
    assert "reference capture exited with code 2" in check.reason and "no such file" in check.reason
    assert "reference log tail" in check.detail


@pytest.mark.parametrize("golden, message", [
    ("golden:\n  reference: {command: 'a', dumps: d}\n  candidate: {dumps: d}\n", "exactly one of"),
    ("golden:\n  reference: {command: 'capture'}\n  candidate: {dumps: d}\n", "must contain {out}"),
    ("golden:\n  reference: {dumps: d}\n  candidate: {dumps: d}\n  tolerances: [{pattern: x}]\n", "atol"),
])
def test_golden_section_errors_name_the_line(tmp_path, golden, message):
    with pytest.raises(HarnessError, match=r"runbook\.yaml:\d+: golden.*" ) as info:
        load_runbook(_golden_runbook(tmp_path, golden))
    assert message in str(info.value)


def test_capture_command_rejects_bad_input_in_one_line(tmp_path):
    done = subprocess.run([sys.executable, "-m", "harness", "golden", "capture", "--factory", "stack.py",
                           "--out", str(tmp_path)], check=False, capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "expected MODULE:FUNCTION or FILE.py:FUNCTION" in done.stderr


def test_capture_command_keeps_a_golden_and_says_what_went_wrong_in_one_line(tmp_path):
    """A captured golden is not replaced without --force and records what it holds; the user's
    factory or forward failing, or a device this torch lacks, is one line and writes nothing."""
    (tmp_path / "fac.py").write_text(textwrap.dedent('''
        import torch

        def make(dtype, device):
            torch.manual_seed(0)
            return torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU()).to(dtype), (torch.randn(2, 4, dtype=dtype),)

        def keywords(dtype, device):
            model, (x,) = make(dtype, device)
            return model, {"input": x}

        def wrong(dtype, device):
            model, (x,) = make(dtype, device)
            return model, ({"x": x},)

        def broken(dtype, device):
            raise ValueError("no weights here")
        '''))

    def capture(name: str, out: str, *extra: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "harness", "golden", "capture", "--factory", f"fac.py:{name}",
                               "--out", out, *extra], check=False, capture_output=True, text=True, cwd=tmp_path)

    def one_line(done: subprocess.CompletedProcess, fragment: str) -> None:
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
        [line] = done.stderr.strip().splitlines()
        assert fragment in line, line

    assert capture("make", "g").returncode == 0
    from safetensors import safe_open
    with safe_open(str(tmp_path / "g/outputs.safetensors"), "pt") as handle:
        meta = handle.metadata()
    assert meta["harness.dtype"] == "float32" and meta["harness.factory"] == "fac.py:make"
    assert meta["harness.torch"] == torch.__version__ and meta["harness.device"] == "cpu"
    before = (tmp_path / "g/outputs.safetensors").read_bytes()
    one_line(capture("make", "g", "--dtype", "bfloat16"), "exists (a golden is captured once); pass --force")
    assert (tmp_path / "g/outputs.safetensors").read_bytes() == before
    assert capture("make", "g", "--dtype", "bfloat16", "--force").returncode == 0
    assert capture("keywords", "kw").returncode == 0  # a dict of inputs: keyword arguments

    one_line(capture("wrong", "w"), "the model's forward failed on the factory's inputs (tuple): TypeError")
    one_line(capture("broken", "b"), "factory fac.py:broken failed: ValueError: no weights here")
    if not torch.cuda.is_available():
        one_line(capture("make", "c", "--device", "cuda:0"), "--device cuda:0: not usable with this torch")
    assert not any((tmp_path / d).exists() for d in ("w", "b", "c"))
