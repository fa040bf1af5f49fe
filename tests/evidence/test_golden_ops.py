"""Per-operator golden capture and a plugin device registered at import, end to end on real torch:
a fault inside a function (a softmax scaled wrong) is named as that op, not as the next module;
the toy PrivateUse1 device (harness.testing.toy_device, registered when its module is imported)
captures through `harness golden capture` and, profiled with torch.profiler, shows its one
CPU-fallback op and its copy share to `harness profile analyze`. The toy device runs only in
subprocesses: PyTorch allows one PrivateUse1 name per process."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("safetensors")

from typer.testing import CliRunner

from harness.errors import HarnessError, InputError
from harness.evidence.golden import GoldenRunner, compare_dumps, load_dumps
from harness.evidence.runbook import load_runbook
from harness.evidence.tensor_capture import OpCapture, capture_outputs, op_of
from harness.record.checks import CheckStatus


class Attention(torch.nn.Module):
    """The softmax is a function call inside forward: no module of its own to hook."""

    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale
        self.qkv_proj = torch.nn.Linear(8, 24, bias=False)
        self.o_proj = torch.nn.Linear(8, 8, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self.qkv_proj(x).chunk(3, dim=-1)
        probs = torch.softmax(q @ k.transpose(-1, -2) * self.scale, dim=-1)
        return self.o_proj(probs @ v)


class Tiny(torch.nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.norm = torch.nn.LayerNorm(8)
        self.attn = Attention(scale)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.attn(self.norm(x))


def tiny(scale: float) -> tuple[Tiny, tuple]:
    torch.manual_seed(0)
    return Tiny(scale).eval(), (torch.randn(1, 6, 8),)


def test_a_fault_inside_a_function_is_named_as_its_op_not_the_next_module(tmp_path):
    right, wrong = 8 ** -0.5, 8 ** -0.5 * 1.25  # the candidate scales the softmax's input wrong
    for side, scale in (("ref", right), ("cand", wrong)):
        model, inputs = tiny(scale)
        capture_outputs(model, inputs, tmp_path / side / "modules")
        capture_outputs(model, inputs, tmp_path / side / "ops", ops=OpCapture())

    modules_only = compare_dumps(tmp_path / "ref/modules", tmp_path / "cand/modules", tmp_path / "ev1")
    assert modules_only.reason.startswith("first op that diverges: outputs/attn.o_proj")  # blamed on o_proj

    check = compare_dumps(tmp_path / "ref/ops", tmp_path / "cand/ops", tmp_path / "ev2")
    report = json.loads((tmp_path / "ev2/golden.json").read_text())
    assert check.status is CheckStatus.failed
    assert report["first_diverging_op"] == "outputs/attn: aten::mul #1" and report["first_op_inputs_match"]
    assert check.reason.startswith("first op that diverges: outputs/attn: aten::mul #1 (its inputs match")
    assert report["first_mismatch"] == "outputs/attn: aten::mul #1/out0"
    names = [t["name"] for t in report["tensors"]]
    # call order: the norm's op and output, the projection, then attention's own ops, o_proj after them
    assert names.index("outputs/norm") < names.index("outputs/attn.qkv_proj: aten::mm #1/out0") \
        < names.index("outputs/attn: aten::_softmax #1/in0") < names.index("outputs/attn.o_proj")
    assert not any("aten::transpose" in n or "aten::view" in n for n in names)  # views compute nothing
    assert check.metrics["first_diverging_op"] == "outputs/attn: aten::mul #1"


def test_the_op_capture_is_bounded_by_module_patterns_a_limit_and_a_sample(tmp_path):
    model, inputs = tiny(0.5)
    path = capture_outputs(model, inputs, tmp_path, ops=OpCapture(modules=["attn"], limit=2, max_elements=10))
    dumps = load_dumps(path)
    ops = sorted({op_of(name)[0] for name in dumps if op_of(name)})
    assert ops == ["attn: aten::_unsafe_view #1", "attn: aten::bmm #1"]  # attn's own ops (q @ k), the first 2
    assert all(dumps[name].numel() <= 10 for name in dumps if op_of(name))
    assert dumps["attn"].shape == (1, 6, 8)  # module outputs are never sampled
    from safetensors import safe_open

    with safe_open(str(path), "pt") as handle:
        recorded = json.loads(handle.metadata()["harness.ops"])
    assert recorded["recorded"] == 2 and recorded["skipped"] > 0 and recorded["limit"] == 2


def test_the_runbook_ops_key_is_checked_and_an_unknown_device_is_one_line(tmp_path):
    runbook = tmp_path / "runbook.yaml"
    runbook.write_text(textwrap.dedent("""\
        name: t
        environment: {device: cpu, engine_version: "0.5.23"}
        server: {command: "x --port {port}", model: m}
        golden:
          reference: {dumps: r}
          candidate: {dumps: c}
          ops: {modules: ["model.layers.0*"], limt: 3}
        """))
    with pytest.raises(HarnessError, match=r"runbook\.yaml:\d+: golden.*limt"):
        load_runbook(runbook)
    from harness.cli import app

    result = CliRunner().invoke(app, ["golden", "capture", "--factory", f"{tmp_path / 'f.py'}:make", "--device",
                                      "ydev", "--out", str(tmp_path / "o")])
    assert isinstance(result.exception, InputError) and "no such file" in str(result.exception)
    (tmp_path / "f.py").write_text("def make(dtype, device):\n    raise AssertionError('not reached')\n")
    result = CliRunner().invoke(app, ["golden", "capture", "--factory", f"{tmp_path / 'f.py'}:make", "--device",
                                      "ydev", "--out", str(tmp_path / "o")])
    assert isinstance(result.exception, InputError)
    assert str(result.exception).startswith("--device ydev: not usable with this torch") \
        and "after importing the factory's module" in str(result.exception)


def test_a_device_registered_at_import_captures_and_its_faulty_kernel_is_named(tmp_path):
    """The runbook's golden section, both sides through `harness golden capture` with `golden.ops`:
    the reference on the CPU, the candidate on the toy device `xdev` — unknown to torch until the
    factory's module (the plugin) is imported — whose softmax kernel is scaled wrong."""
    capture = f"{sys.executable} -m harness golden capture --factory harness.testing.toy_device:build --out {{out}}"
    path = tmp_path / "runbook.yaml"
    path.write_text(textwrap.dedent(f"""\
        name: t
        environment: {{device: cpu, engine_version: "0.5.23"}}
        server: {{command: "x --port {{port}}", model: m}}
        golden:
          reference: {{command: "{capture} --device cpu"}}
          candidate: {{command: "{capture} --device xdev"}}
          ops: {{modules: ["0*"], limit: 40}}
        """))
    runbook = load_runbook(path)
    evidence = tmp_path / "evidence"
    run = GoldenRunner().run(runbook.golden, evidence, cwd=tmp_path, env={"XDEV_FAULTY": "aten::_softmax:1.1"})
    assert not any(side.error for side in run.root), [side.error for side in run.root]
    from safetensors import safe_open

    with safe_open(str(evidence / "candidate/outputs.safetensors"), "pt") as handle:
        meta = handle.metadata()
    assert meta["harness.device"] == "xdev" and json.loads(meta["harness.ops"])["modules"] == ["0*"]
    (check,) = GoldenRunner().judge(evidence, runbook.golden)
    report = json.loads((evidence / "golden.json").read_text())
    assert check.status is CheckStatus.failed
    assert report["first_diverging_op"] == "outputs/0: aten::_softmax #1"
    assert report["first_op_inputs_match"] and "o_proj" not in check.reason.split(";")[0]
    assert not any(op_of(t["name"]) and t["name"].startswith("outputs/1") for t in report["tensors"])  # layer 0 only


@pytest.fixture(scope="module")
def toy_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("xdev")
    subprocess.run([sys.executable, "-m", "harness.testing.toy_device", "profile", "--out", str(out)], check=True,
                   capture_output=True, timeout=300)
    return out


def test_the_toy_device_fallback_op_and_copy_share_from_its_trace(toy_trace, tmp_path):
    """A real PrivateUse1 device (no profiler plugin: only its dispatch on the host is traced):
    silu has no kernel and takes PyTorch's CPU fallback; its copies are `aten::_copy_from`, which
    the device's naming declares as memory copies."""
    naming = tmp_path / "naming.yaml"
    naming.write_text('memcpy_patterns: ["^aten::_copy_from$"]\n')
    from harness.cli import app

    result = CliRunner().invoke(app, ["profile", "analyze", str(toy_trace), "--naming", str(naming), "--json"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.output)
    assert [(f["op"], f["count"], f["recipe"]) for f in document["fallback_ops"]] == [("silu", 6, None)]  # 3 steps × 2
    assert [f["summary"].split(":")[0] for f in document["findings"] if f["kind"] == "fallback"] == ["silu"]

    # the copy share, measured independently: the copies' time inside the steps' window
    events = [e for e in json.loads(next(toy_trace.iterdir()).read_text())["traceEvents"] if e.get("ph") == "X"]
    steps = sorted((e["ts"], e["ts"] + e["dur"]) for e in events if e["name"].startswith("ProfilerStep#"))
    start, end = steps[0][0], steps[-1][1]
    copies = sum(min(e["ts"] + e["dur"], end) - max(e["ts"], start) for e in events
                 if e["name"] == "aten::_copy_from" and e["ts"] < end and e["ts"] + e["dur"] > start)
    assert copies > 0
    assert document["shares"]["memcpy"] == pytest.approx(copies / (end - start), rel=1e-3)
