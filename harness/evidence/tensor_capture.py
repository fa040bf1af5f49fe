"""Tensor capture: the golden dumps a device team makes once on the reference and once on the
device. Forward hooks on every module of a torch model save each module's output, in call
order, to one safetensors file (`capture_outputs`, behind `harness golden capture`), which
`harness.evidence.golden` compares. torch is imported only when a capture runs."""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness.errors import InputError

ORDER_KEY = "harness.order"  # safetensors metadata: the tensor names in capture (call) order


def load_factory(spec: str, base_dir: Path | None = None) -> Callable[..., Any]:
    """The callable named by `module:function` or `path/to/file.py:function` (a relative file is
    resolved against `base_dir`, default the current directory). InputError when it cannot be found."""
    target, _, attribute = spec.rpartition(":")
    if not target or not attribute:
        raise InputError(f"factory {spec!r}: expected MODULE:FUNCTION or FILE.py:FUNCTION")
    if target.endswith(".py"):
        path = Path(target) if Path(target).is_absolute() else (base_dir or Path.cwd()) / target
        if not path.is_file():
            raise InputError(f"factory {spec!r}: no such file {path}")
        module_spec = importlib.util.spec_from_file_location(f"_harness_golden_{path.stem}", path)
        module = importlib.util.module_from_spec(module_spec)  # type: ignore[arg-type]
        module_spec.loader.exec_module(module)  # type: ignore[union-attr]
    else:
        try:
            module = importlib.import_module(target)
        except ImportError as exc:
            raise InputError(f"factory {spec!r}: cannot import {target}: {exc}") from None
    function = getattr(module, attribute, None)
    if not callable(function):
        raise InputError(f"factory {spec!r}: {target} has no callable {attribute!r}")
    return function


def capture_outputs(model: Any, inputs: Any, out: str | Path, *, modules: list[str] | None = None,
                    provenance: dict[str, str] | None = None) -> Path:
    """Run `model(*inputs)` once (no grad) with a forward hook on every named module (or those
    in `modules`), and save each output to `<out>/outputs.safetensors`, named by module path in
    call order (a module called again gets `#2`, `#3`; tuple outputs get `/0`, `/1`; the root
    module is `output`). `inputs` is a tuple of positional arguments, a dict of keyword
    arguments or one tensor. `provenance` (e.g. dtype, device, torch version, factory) goes
    into the file's metadata. Returns the file. Tensors are saved as the model produced them
    (dtype kept), on the CPU; nothing is written when the forward raises."""
    import torch
    from safetensors.torch import save_file

    out = Path(out)
    saved: dict[str, Any] = {}
    order: list[str] = []
    calls: dict[str, int] = {}

    def keep(name: str, value: Any) -> None:
        if isinstance(value, torch.Tensor):
            order.append(name)
            saved[name] = value.detach().to("cpu").contiguous().clone()
        elif isinstance(value, (tuple, list)):
            for index, item in enumerate(value):
                keep(f"{name}/{index}", item)

    def hook_for(name: str) -> Callable[..., None]:
        def hook(_module: Any, _args: Any, output: Any) -> None:
            calls[name] = calls.get(name, 0) + 1
            keep(name if calls[name] == 1 else f"{name}#{calls[name]}", output)
        return hook

    wanted = set(modules) if modules is not None else None
    handles = [module.register_forward_hook(hook_for(name or "output"))
               for name, module in model.named_modules() if wanted is None or name in wanted]
    try:
        with torch.no_grad():
            if isinstance(inputs, dict):
                model(**inputs)
            else:
                model(*(inputs if isinstance(inputs, tuple) else (inputs,)))
    finally:
        for handle in handles:
            handle.remove()
    out.mkdir(parents=True, exist_ok=True)
    path = out / "outputs.safetensors"
    save_file(saved, str(path), metadata={**(provenance or {}), ORDER_KEY: json.dumps(order)})
    umask = os.umask(0)
    os.umask(umask)
    path.chmod(0o666 & ~umask)  # a dump is shared between teams, like any other file
    return path
