"""`harness golden capture`: dump every module's output of a torch model to safetensors — what a
device team runs once on the reference and once on the device; the accuracy step compares the two
(runbook `golden:` section)."""

from __future__ import annotations

from pathlib import Path

import typer

from harness.cli import app
from harness.errors import InputError

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
) -> None:
    """Run the factory's model once with a forward hook on every module and save each output,
    in call order, to OUT/outputs.safetensors."""
    if dtype not in DTYPES:
        raise InputError(f"--dtype {dtype!r}: expected one of {', '.join(DTYPES)}")
    try:
        import torch
    except ImportError:
        raise InputError("torch is not installed (pip install torch==2.13.0)") from None
    from harness.evidence.golden import capture_outputs, load_factory

    model, inputs = load_factory(factory)(dtype=getattr(torch, dtype), device=device)
    path = capture_outputs(model, inputs, out)
    typer.echo(f"{path}")
