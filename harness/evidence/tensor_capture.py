"""Tensor capture: the golden dumps a device team makes once on the reference and once on the
device. Forward hooks on every module of a torch model save each module's output, in call
order, to one safetensors file (`capture_outputs`, behind `harness golden capture`), which
`harness.evidence.golden` compares. With `OpCapture`, a `TorchDispatchMode` also records the
inputs and outputs of every operator (aten or a plugin's custom op) dispatched inside a module,
named by the module and the op, so a fault inside a function (`torch.softmax` between two
linears) is named as that op, not as the next module. torch is imported only when a capture runs."""

from __future__ import annotations

import fnmatch
import importlib
import importlib.util
import json
import math
import os
import re
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from harness.errors import InputError

ORDER_KEY = "harness.order"  # safetensors metadata: the tensor names in capture (call) order
OPS_KEY = "harness.ops"  # safetensors metadata: the OpCapture used and what it recorded and skipped
OPS_ENV = "HARNESS_GOLDEN_OPS"  # the runbook's `golden.ops` (JSON) for both sides' capture commands
# An op record's tensor: "<module call>: <op> #<n>/in<i>" or ".../out<i>" (see capture_outputs).
OP_TENSOR = re.compile(r"^(?P<op>(?:.*/)?[^/]*: \S+::\S+ #\d+)/(?P<side>in|out)(?P<index>\d+)$")


class OpCapture(BaseModel):
    """Per-operator capture, bounded so that a real model's capture does not explode: the ops
    of the modules matching `modules`, at most `limit` per module call, each tensor at most
    `max_elements` (a larger one is saved as an evenly strided sample of that many elements,
    the same positions on both sides). The runbook's `golden.ops`."""

    model_config = ConfigDict(extra="forbid")

    modules: list[str] = Field(default=["*"], description="fnmatch patterns on module paths whose own ops are "
                               "recorded (an op belongs to the innermost module running it), e.g. "
                               "['model.layers.0', 'model.layers.0.*'].")
    limit: int = Field(default=64, ge=1, description="Ops recorded per module call; later ones are skipped "
                       "(counted in the dump's metadata).")
    max_elements: int = Field(default=65536, ge=1, description="Elements saved per tensor; a larger tensor is "
                              "saved as an evenly strided sample.")


def op_of(name: str) -> tuple[str, str] | None:
    """(op record, 'in' or 'out') for a tensor name of an op record, e.g.
    'outputs/layers.0.self_attn: aten::_softmax #1/out0' → ('outputs/layers.0.self_attn: aten::_softmax #1',
    'out'); None for a module output."""
    match = OP_TENSOR.match(name)
    return (match["op"], match["side"]) if match else None


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
                    provenance: dict[str, str] | None = None, ops: OpCapture | None = None) -> Path:
    """Run `model(*inputs)` once (no grad) with a forward hook on every named module (or those
    in `modules`), and save each output to `<out>/outputs.safetensors`, named by module path in
    call order (a module called again gets `#2`, `#3`; tuple outputs get `/0`, `/1`; the root
    module is `output`). `inputs` is a tuple of positional arguments, a dict of keyword
    arguments or one tensor. `provenance` (e.g. dtype, device, torch version, factory) goes
    into the file's metadata. Returns the file. Tensors are saved as the model produced them
    (dtype kept), on the CPU; nothing is written when the forward raises.

    With `ops`, every operator dispatched inside a hooked module whose path matches
    `ops.modules` is recorded too, in call order among the module outputs: its tensor inputs
    (before it runs: in-place ops change them) and outputs as `<module call>: <op> #<n>/in<i>`
    and `/out<i>`, `n` counting that op in that module call (1-based), so that ops line up
    across devices even where one decomposes another op differently. Views (ops whose result
    aliases an input: view, transpose, expand) are not recorded: they compute nothing."""
    import torch
    from safetensors.torch import save_file
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_leaves

    out = Path(out)
    saved: dict[str, Any] = {}
    order: list[str] = []
    calls: dict[str, int] = {}
    running: list[tuple[str, bool]] = []  # module calls in progress: (name, its ops recorded)
    per_call: dict[str, dict[str, int]] = {}  # module call → op name → calls so far
    counts = {"recorded": 0, "skipped": 0}

    def sample(tensor: Any) -> Any:  # an op's tensor, bounded
        tensor = tensor.detach().to("cpu")
        if tensor.numel() > ops.max_elements:  # type: ignore[union-attr]
            tensor = tensor.reshape(-1)[:: math.ceil(tensor.numel() / ops.max_elements)][: ops.max_elements]  # type: ignore[union-attr]
        return tensor.contiguous().clone()

    def keep(name: str, value: Any) -> None:
        if isinstance(value, torch.Tensor):
            order.append(name)
            saved[name] = value.detach().to("cpu").contiguous().clone()
        elif isinstance(value, (tuple, list)):
            for index, item in enumerate(value):
                keep(f"{name}/{index}", item)

    def pre_hook_for(name: str) -> Callable[..., None]:
        def pre_hook(_module: Any, _args: Any) -> None:
            calls[name] = calls.get(name, 0) + 1
            label = name if calls[name] == 1 else f"{name}#{calls[name]}"
            recorded = ops is not None and any(fnmatch.fnmatchcase(name, p) for p in ops.modules)
            running.append((label, recorded))
        return pre_hook

    def hook(_module: Any, _args: Any, output: Any) -> None:
        label, _ = running.pop()
        per_call.pop(label, None)
        running.append(("", False))  # copying the output is not the parent module's op
        try:
            keep(label, output)
        finally:
            running.pop()

    class RecordOps(TorchDispatchMode):
        """Each op inside a recorded module call: its tensor inputs and outputs (the mode is off
        inside this handler, so copying them records nothing)."""

        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            kwargs = kwargs or {}
            if not running or not running[-1][1]:
                return func(*args, **kwargs)
            if any(r.alias_info is not None and not r.alias_info.is_write for r in func._schema.returns):
                return func(*args, **kwargs)  # a view (view, transpose, expand): its input's values
            label = running[-1][0]
            seen = per_call.setdefault(label, {})
            if sum(seen.values()) >= ops.limit:  # type: ignore[union-attr]
                counts["skipped"] += 1
                return func(*args, **kwargs)
            op = func._schema.name
            seen[op] = seen.get(op, 0) + 1
            key = f"{label}: {op} #{seen[op]}"
            tensors_in = [t for t in tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)]
            inputs = [(f"{key}/in{i}", sample(t)) for i, t in enumerate(tensors_in)]
            result = func(*args, **kwargs)
            for name, tensor in inputs:
                order.append(name)
                saved[name] = tensor
            for index, tensor in enumerate(t for t in tree_leaves(result) if isinstance(t, torch.Tensor)):
                order.append(f"{key}/out{index}")
                saved[f"{key}/out{index}"] = sample(tensor)
            counts["recorded"] += 1
            return result

    wanted = set(modules) if modules is not None else None
    handles = []
    for name, module in model.named_modules():
        if wanted is None or name in wanted:
            handles.append(module.register_forward_pre_hook(pre_hook_for(name or "output")))
            handles.append(module.register_forward_hook(hook))
    try:
        with torch.no_grad(), (RecordOps() if ops is not None else nullcontext()):
            if isinstance(inputs, dict):
                model(**inputs)
            else:
                model(*(inputs if isinstance(inputs, tuple) else (inputs,)))
    finally:
        for handle in handles:
            handle.remove()
    out.mkdir(parents=True, exist_ok=True)
    path = out / "outputs.safetensors"
    metadata = {**(provenance or {}), ORDER_KEY: json.dumps(order)}
    if ops is not None:
        metadata[OPS_KEY] = json.dumps({**ops.model_dump(), **counts})
    save_file(saved, str(path), metadata=metadata)
    umask = os.umask(0)
    os.umask(umask)
    path.chmod(0o666 & ~umask)  # a dump is shared between teams, like any other file
    return path


