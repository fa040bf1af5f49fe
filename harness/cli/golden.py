"""`harness golden capture`: dump every module's output of a torch model (and, with --ops, every
operator's inputs and outputs inside them) to safetensors — what a device team runs once on the
reference and once on the device; the accuracy step compares the two (runbook `golden:` section)."""

from __future__ import annotations

import os
from pathlib import Path

import typer
from pydantic import ValidationError

from harness.cli.base import app
from harness.errors import InputError
from harness.evidence.tensor_capture import OPS_ENV, OpCapture

golden_app = typer.Typer(help="Golden tensors: capture module outputs for the accuracy step's comparison.",
                         no_args_is_help=True)
app.add_typer(golden_app, name="golden")

DTYPES = ("float32", "float64", "bfloat16", "float16")


@golden_app.command()
def capture(
    factory: str = typer.Option(..., help="MODULE:FUNCTION or FILE.py:FUNCTION returning (model, inputs); "
                                "called with dtype= (a torch dtype) and device=."),
    out: Path = typer.Option(..., help="Directory the dumps are written to (outputs.safetensors)."),
    dtype: str = typer.Option("float32", help=f"Model and input dtype: {', '.join(DTYPES)}."),
    device: str = typer.Option("cpu", help="torch device, e.g. cpu, cuda:0, or the plugin's device."),
    force: bool = typer.Option(False, "--force", help="Replace an existing OUT/outputs.safetensors."),
    ops: bool = typer.Option(False, "--ops", help="Also record each operator's inputs and outputs inside the "
                             f"modules (the first diverging op is named); on by default when {OPS_ENV} is set "
                             "(the runbook's golden.ops)."),
    ops_modules: list[str] = typer.Option([], "--ops-module", help="fnmatch pattern on module paths whose ops "
                                          "are recorded (repeat; default all); implies --ops."),
    ops_limit: int | None = typer.Option(None, "--ops-limit", min=1, help="Ops recorded per module call "
                                         "(default 64); implies --ops."),
    ops_max_elements: int | None = typer.Option(None, "--ops-max-elements", min=1, help="Elements saved per op "
                                                "tensor, larger ones as an evenly strided sample (default 65536); "
                                                "implies --ops."),
) -> None:
    """Run the factory's model once with a forward hook on every module and save each output,
    in call order, to OUT/outputs.safetensors (with the dtype, device, torch version and factory
    in its metadata). The factory returns (model, inputs): inputs a tensor, a tuple of
    positional arguments or a dict of keyword arguments. With --ops, each operator dispatched
    inside a module is recorded too (inputs and outputs, bounded by the --ops-* options).
    The factory's module is imported before the device is checked: a plugin that registers its
    device when imported (PrivateUse1) is then known."""
    if dtype not in DTYPES:
        raise InputError(f"--dtype {dtype!r}: expected one of {', '.join(DTYPES)}")
    target = out / "outputs.safetensors"
    if target.exists() and not force:
        raise InputError(f"{target} exists (a golden is captured once); pass --force to replace it")
    op_capture = _op_capture(ops, ops_modules, ops_limit, ops_max_elements)
    try:
        import torch
    except ImportError:
        raise InputError("torch is not installed (pip install torch==2.13.0)") from None
    from harness.evidence.tensor_capture import capture_outputs, load_factory

    build = load_factory(factory)  # first: importing a plugin may register its device
    try:
        torch.empty(0, device=device)
    except (RuntimeError, AssertionError) as exc:  # "Torch not compiled with CUDA enabled", a bad name
        raise InputError(f"--device {device}: not usable with this torch {torch.__version__} after importing "
                         f"the factory's module: {_first_line(exc)}") from None
    try:
        model, inputs = build(dtype=getattr(torch, dtype), device=device)
    except Exception as exc:  # noqa: BLE001 — the user's code: one line, not its traceback
        raise InputError(f"factory {factory} failed: {type(exc).__name__}: {_first_line(exc)}") from None
    provenance = {"harness.dtype": dtype, "harness.device": device, "harness.torch": torch.__version__,
                  "harness.factory": factory}
    try:
        path = capture_outputs(model, inputs, out, provenance=provenance, ops=op_capture)
    except Exception as exc:  # noqa: BLE001 — the model's forward on the factory's inputs
        raise InputError(f"the model's forward failed on the factory's inputs ({type(inputs).__name__}): "
                         f"{type(exc).__name__}: {_first_line(exc)}") from None
    typer.echo(f"{path}")


def _op_capture(ops: bool, modules: list[str], limit: int | None, max_elements: int | None) -> OpCapture | None:
    """The per-operator capture: the runbook's (OPS_ENV, JSON) as the base, the options over it."""
    base = os.environ.get(OPS_ENV)
    options = {key: value for key, value in (("modules", modules), ("limit", limit), ("max_elements", max_elements))
               if value}
    if not (ops or options or base):
        return None
    try:
        spec = OpCapture.model_validate_json(base) if base else OpCapture()
    except ValidationError as exc:
        raise InputError(f"{OPS_ENV}: not an op capture ({exc.errors()[0]['loc']}: {exc.errors()[0]['msg']})") from None
    return spec.model_copy(update=options)


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [""])[0]
