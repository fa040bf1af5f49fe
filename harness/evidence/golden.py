"""Golden comparison: a candidate's tensor dumps against a reference's, op by op.

Each side is a directory of dumps or one file; `.safetensors` and torch (`.pt`, `.pth`, `.bin`)
files are read, nested dicts/lists inside a torch file are flattened. Names are matched
across the two sides; every pair is compared with torch.allclose semantics
(|candidate − reference| ≤ atol + rtol·|reference|, NaNs equal only with `equal_nan`).

The evidence file lists every name in the reference's order (the first mismatch in dump order
is usually where a port diverges), the worst offenders, shape/dtype mismatches and names
missing on either side. torch is imported only when a comparison runs: it is an optional
dependency of the harness.

Dumps are made with `harness.evidence.tensor_capture` (or `harness golden capture`).
`GoldenRunner` runs a runbook's `golden:` section (both captures, then the comparison) into a
step's evidence; `golden_check` reads the comparison back into the check.
"""

from __future__ import annotations

import fnmatch
import json
import math
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, RootModel

from harness.evidence.runbook import GoldenSide, GoldenSpec
from harness.evidence.runner import Runner
from harness.evidence.tensor_capture import OPS_ENV, ORDER_KEY, OpCapture, op_of
from harness.record.checks import Check, CheckStatus
from harness.util.files import tail

TORCH_SUFFIXES = {".pt", ".pth", ".bin"}
DUMP_SUFFIXES = TORCH_SUFFIXES | {".safetensors"}
WORST_LISTED = 10
REPORT = "golden.json"
RUN_RECORD = "run.json"


class TensorComparison(BaseModel):
    name: str
    status: Literal["match", "mismatch", "shape", "dtype"]
    shape_reference: list[int]
    shape_candidate: list[int]
    dtype_reference: str
    dtype_candidate: str
    atol: float | None = None  # the tolerance this tensor was judged with (per-pattern or default)
    rtol: float | None = None
    max_abs_err: float | None = None
    max_rel_err: float | None = None
    mismatch_fraction: float | None = None
    # max over elements of |a − b| / (atol + rtol·|b|): above 1 means not allclose.
    tolerance_ratio: float | None = None
    # every element of the reference the same value (all zeros from an all-padding batch), or
    # no element at all (a batch of length 0): a match says nothing about the weights that produced it
    constant_reference: bool = False
    # every element of the reference within atol of zero (outputs of inputs scaled to 1e-30, say):
    # an output of all zeros would match it, so a match says nothing about the weights either
    zeros_match: bool = False


class GoldenReport(BaseModel):
    reference: str
    candidate: str
    atol: float
    rtol: float
    equal_nan: bool
    tolerances: list[tuple[str, float, float]] = []  # (pattern, atol, rtol), first match wins
    expected_dtype_pairs: list[tuple[str, str]] = []
    check_dtype: bool = True
    compared: int
    matched: int
    mismatched: list[str]
    shape_mismatches: list[str]
    dtype_mismatches: list[str]
    missing_in_candidate: list[str]
    missing_in_reference: list[str]
    first_mismatch: str | None
    # Per-operator dumps (`harness golden capture --ops`): the first op, in the reference's
    # order, whose output is off, and whether its inputs all matched (then the op itself differs;
    # else the divergence came before it, from work that was not recorded).
    first_diverging_op: str | None = None
    first_op_inputs_match: bool | None = None
    # op records on one side only (a device that fuses or decomposes ops differently): listed,
    # not failed — module outputs decide.
    ops_not_compared: list[str] = []
    worst: list[TensorComparison]
    tensors: list[TensorComparison]


class DumpError(Exception):
    """A dump that cannot be read; becomes a `not run` check."""


def load_dumps(path: Path) -> dict[str, Any]:
    """Name → tensor for a dump directory or file, in a stable order (sorted files, then the
    order of keys inside each file)."""
    if not path.exists():
        raise DumpError(f"tensor dump {path} does not exist")
    if path.is_file():
        return _load_file(path, prefix="")
    files = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in DUMP_SUFFIXES)
    if not files:
        raise DumpError(f"no tensor dumps ({', '.join(sorted(DUMP_SUFFIXES))}) under {path}")
    tensors: dict[str, Any] = {}
    for file in files:
        stem = file.relative_to(path).with_suffix("").as_posix()
        tensors.update(_load_file(file, prefix=stem))
    return tensors


def _load_file(file: Path, prefix: str) -> dict[str, Any]:
    import torch

    try:
        if file.suffix == ".safetensors":
            from safetensors import safe_open

            with safe_open(str(file), framework="pt") as handle:
                keys = list(handle.keys())
                order = json.loads((handle.metadata() or {}).get(ORDER_KEY, "[]"))
                if sorted(order) == sorted(keys):  # safetensors sorts its keys; keep the call order
                    keys = order
                content: Any = {key: handle.get_tensor(key) for key in keys}
        else:
            # weights_only: a dump is data; never unpickle arbitrary objects from it.
            content = torch.load(file, map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - any unreadable file is reported, not raised
        raise DumpError(f"cannot read tensor dump {file}: {type(exc).__name__}: {exc}") from None
    flat: dict[str, Any] = {}
    _flatten(content, prefix, flat, file)
    if not flat:
        raise DumpError(f"tensor dump {file} holds no tensors")
    return flat


def _flatten(value: Any, name: str, out: dict[str, Any], file: Path) -> None:
    import torch

    if isinstance(value, torch.Tensor):
        out[name or "tensor"] = value  # a file holding one bare tensor
    elif isinstance(value, dict):
        for key, item in value.items():
            _flatten(item, f"{name}/{key}" if name else str(key), out, file)
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            _flatten(item, f"{name}/{index}" if name else str(index), out, file)
    # Non-tensor leaves (step counters, strings) are metadata, not outputs to compare.


def compare_tensors(
    name: str, reference: Any, candidate: Any, atol: float, rtol: float, equal_nan: bool
) -> TensorComparison:
    """Compare one tensor pair with allclose semantics (|c − r| ≤ atol + rtol·|r|); errors are
    absolute and relative element-wise maxima."""
    import torch

    entry = dict(
        name=name,
        shape_reference=list(reference.shape),
        shape_candidate=list(candidate.shape),
        dtype_reference=str(reference.dtype).removeprefix("torch."),
        dtype_candidate=str(candidate.dtype).removeprefix("torch."),
        atol=atol,
        rtol=rtol,
    )
    if reference.shape != candidate.shape:
        return TensorComparison(status="shape", **entry)
    # Compare in float64 (complex128 for complex) so low-precision dumps don't round the error.
    wide = torch.complex128 if (reference.is_complex() or candidate.is_complex()) else torch.float64
    ref = reference.detach().to("cpu", wide)
    cand = candidate.detach().to("cpu", wide)
    close = torch.isclose(cand, ref, rtol=rtol, atol=atol, equal_nan=equal_nan)
    diff = (cand - ref).abs()
    finite = torch.isfinite(diff)
    magnitude = ref.abs()
    numel = ref.numel()
    if numel and finite.any():
        max_abs = float(diff[finite].max())
        rel = diff[finite] / magnitude[finite].clamp_min(torch.finfo(torch.float64).tiny)
        max_rel = float(rel.max())
        ratio = float(
            (diff[finite] / (atol + rtol * magnitude[finite]).clamp_min(torch.finfo(torch.float64).tiny)).max()
        )
    else:
        max_abs = max_rel = ratio = 0.0 if numel == 0 else math.inf
    if not bool(finite.all()):  # NaN/inf disagreements have no finite error; flag them
        unequal_nonfinite = ~finite & ~close
        if bool(unequal_nonfinite.any()):
            ratio = math.inf
    mismatch_fraction = float((~close).sum()) / numel if numel else 0.0
    dtype_differs = reference.dtype != candidate.dtype
    status = "mismatch" if mismatch_fraction > 0 else ("dtype" if dtype_differs else "match")
    flat = ref.reshape(-1)
    return TensorComparison(
        status=status,
        max_abs_err=max_abs,
        max_rel_err=max_rel,
        mismatch_fraction=mismatch_fraction,
        tolerance_ratio=ratio,
        constant_reference=not numel or bool((flat == flat[0]).all()),
        zeros_match=bool(numel) and bool(torch.isclose(torch.zeros_like(ref), ref, rtol=rtol, atol=atol).all()),
        **entry,
    )


def tolerance_for(name: str, tolerances: list[tuple[str, float, float]], atol: float,
                  rtol: float) -> tuple[float, float]:
    """(atol, rtol) for a tensor name: the first fnmatch pattern that matches it, else the defaults."""
    for pattern, pattern_atol, pattern_rtol in tolerances:
        if fnmatch.fnmatchcase(name, pattern):
            return pattern_atol, pattern_rtol
    return atol, rtol


def compare_dumps(
    reference: str | Path,
    candidate: str | Path,
    evidence_dir: str | Path,
    *,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    equal_nan: bool = False,
    check_dtype: bool = True,
    name: str = "golden",
    tolerances: list[tuple[str, float, float]] | None = None,
    expected_dtype_pairs: list[tuple[str, str]] | None = None,
) -> Check:
    """Compare two dump sets; writes `<evidence_dir>/<name>.json` (a GoldenReport) and returns
    its check (`golden_check`).

    Passed only when every reference name exists in the candidate with the same shape (and
    dtype, with `check_dtype`, unless the pair is in `expected_dtype_pairs`, e.g.
    ("float32", "bfloat16")) and is allclose under its tolerance: the first of `tolerances`
    ((fnmatch pattern, atol, rtol)) matching the name, else `atol`/`rtol`. Extra candidate names
    are listed, not failed.
    """
    reference, candidate, evidence_dir = Path(reference), Path(candidate), Path(evidence_dir)
    evidence_dir.mkdir(parents=True, exist_ok=True)
    evidence = evidence_dir / f"{name}.json"
    check_name = f"accuracy.{name}"
    try:
        import torch  # noqa: F401 - the check cannot run without it
    except ImportError:
        return _not_run(
            check_name, evidence, "torch is not installed (pip install torch==2.13.0)", reference, candidate
        )
    try:
        ref_tensors = load_dumps(reference)
        cand_tensors = load_dumps(candidate)
    except DumpError as exc:
        return _not_run(check_name, evidence, str(exc), reference, candidate)

    tolerances = list(tolerances or [])
    expected = {tuple(pair) for pair in expected_dtype_pairs or []}
    results = []
    for key in ref_tensors:
        if key in cand_tensors:
            key_atol, key_rtol = tolerance_for(key, tolerances, atol, rtol)
            result = compare_tensors(key, ref_tensors[key], cand_tensors[key], key_atol, key_rtol, equal_nan)
            if result.status == "dtype" and (result.dtype_reference, result.dtype_candidate) in expected:
                result.status = "match"
            results.append(result)
    one_side = [key for key in ref_tensors if key not in cand_tensors] + \
        [key for key in cand_tensors if key not in ref_tensors]
    missing_in_candidate = [key for key in ref_tensors if key not in cand_tensors and not op_of(key)]
    missing_in_reference = [key for key in cand_tensors if key not in ref_tensors and not op_of(key)]
    failing_statuses = {"mismatch", "shape"} | ({"dtype"} if check_dtype else set())
    failing = [r for r in results if r.status in failing_statuses]
    ranked = sorted(
        (r for r in results if r.status != "shape"),
        key=lambda r: (r.tolerance_ratio or 0.0, r.mismatch_fraction or 0.0),
        reverse=True,
    )
    report = GoldenReport(
        reference=str(reference),
        candidate=str(candidate),
        atol=atol,
        rtol=rtol,
        equal_nan=equal_nan,
        tolerances=tolerances,
        expected_dtype_pairs=sorted(expected),
        check_dtype=check_dtype,
        compared=len(results),
        matched=sum(r.status == "match" or (r.status == "dtype" and not check_dtype) for r in results),
        mismatched=[r.name for r in results if r.status == "mismatch"],
        shape_mismatches=[r.name for r in results if r.status == "shape"],
        dtype_mismatches=[r.name for r in results if r.status == "dtype"],
        missing_in_candidate=missing_in_candidate,
        missing_in_reference=missing_in_reference,
        first_mismatch=(failing[0].name if failing else None),
        **_first_diverging_op(results, failing),
        ops_not_compared=[key for key in one_side if op_of(key)],
        worst=ranked[:WORST_LISTED],
        tensors=results,
    )
    evidence.write_text(report.model_dump_json(indent=2))
    return golden_check(evidence, name=check_name)


def _first_diverging_op(results: list[TensorComparison], failing: list[TensorComparison]) -> dict[str, Any]:
    """The first op record with a failing output, and whether every input of it matched."""
    failed = {r.name for r in failing}
    first = next((op for r in failing if (op := op_of(r.name)) and op[1] == "out"), None)
    if first is None:
        return {}
    inputs = [r.name for r in results if op_of(r.name) == (first[0], "in")]
    return {"first_diverging_op": first[0], "first_op_inputs_match": not any(name in failed for name in inputs)}


def golden_check(report_path: Path, name: str = "accuracy.golden") -> Check:
    """The check of a comparison, read back from its report (`compare_dumps`' JSON): passed when
    every reference tensor is present and within its tolerance, else failed naming the first op
    that diverges (in the reference's dump order) and the worst offenders; `not_run` when the
    dumps could not be read."""
    data = json.loads(Path(report_path).read_text())
    evidence = [str(report_path)]
    if "error" in data:
        return Check(name=name, status=CheckStatus.not_run, reason=data["error"], evidence=evidence)
    report = GoldenReport.model_validate(data)
    ranked = report.worst
    problems = []
    if report.mismatched:
        problems.append(f"{len(report.mismatched)} of {report.compared} tensors outside their tolerance")
    if report.shape_mismatches:
        problems.append(f"{len(report.shape_mismatches)} shape mismatches")
    if report.check_dtype and report.dtype_mismatches:
        problems.append(f"{len(report.dtype_mismatches)} unexpected dtype mismatches")
    if report.missing_in_candidate:
        problems.append(f"{len(report.missing_in_candidate)} reference tensors missing in the candidate")
    worst_lines = [
        f"{r.name}: max abs {_g(r.max_abs_err)}, max rel {_g(r.max_rel_err)}, "
        f"{100 * (r.mismatch_fraction or 0):.2f}% elements off, {_g(r.tolerance_ratio)}× tolerance "
        f"(atol {r.atol:g}, rtol {r.rtol:g})"
        for r in ranked[:5]
    ]
    metrics = {
        "compared": report.compared,
        "matched": report.matched,
        "mismatched": len(report.mismatched),
        "shape_mismatches": len(report.shape_mismatches),
        "dtype_mismatches": len(report.dtype_mismatches),
        "missing_in_candidate": len(report.missing_in_candidate),
        "missing_in_reference": len(report.missing_in_reference),
        "worst_tolerance_ratio": ranked[0].tolerance_ratio if ranked else None,
        "worst_op": ranked[0].name if ranked else None,
        "first_diverging_op": report.first_diverging_op,
    }
    constant = [r.name for r in report.tensors if r.constant_reference or r.zeros_match]
    if not problems and report.tensors and len(constant) == len(report.tensors):
        # 0 vs 0 everywhere (inputs of nothing but padding, a model that outputs a constant),
        # tensors of no element (a sequence length of 0), or values all within atol of zero (an
        # output of zeros would pass): the comparison measured nothing, whatever the weights (the
        # F11 kind: a metric that cannot fail)
        return Check(
            name=name,
            status=CheckStatus.inconclusive,
            reason=(f"degenerate comparison: each of the {report.compared} reference tensors holds one value everywhere "
                    "(all zeros, say), no element at all, or values so small that an output of zeros would be within "
                    "its tolerance, and the candidate's match them, so the comparison measured nothing about the "
                    "weights; capture with inputs that exercise the model (real token ids, not padding, a sequence "
                    "length above 0, inputs at their real scale)"),
            detail="constant or below-tolerance tensors: " + ", ".join(constant[:10]) + (" …" if len(constant) > 10 else ""),
            evidence=evidence,
            metrics=metrics,
        )
    if not problems:
        pairs = ", ".join(f"{a}→{b}" for a, b in report.expected_dtype_pairs)
        return Check(
            name=name,
            status=CheckStatus.passed,
            reason=None,
            detail="\n".join(
                [f"{report.compared} tensors allclose (default atol={report.atol}, rtol={report.rtol}"
                 + (f"; {len(report.tolerances)} per-op tolerances" if report.tolerances else "")
                 + (f"; expected dtype pairs {pairs}" if pairs else "") + ")"
                 + (f"; {len(report.missing_in_reference)} extra in the candidate"
                    if report.missing_in_reference else ""),
                 "closest to their tolerance:", *worst_lines]),
            evidence=evidence,
            metrics=metrics,
        )
    reason = "; ".join(problems)
    if report.first_diverging_op:
        reason = (f"first op that diverges: {report.first_diverging_op} ("
                  + ("its inputs match: the op itself differs" if report.first_op_inputs_match
                     else "its inputs differ already: the divergence is in work before it that was not recorded")
                  + "); " + reason)
    elif report.first_mismatch:
        reason = f"first op that diverges: {report.first_mismatch}; " + reason
    return Check(
        name=name,
        status=CheckStatus.failed,
        reason=reason,
        detail="\n".join(["worst offenders:", *worst_lines]
                         + [f"missing in candidate: {k}" for k in report.missing_in_candidate[:10]]),
        evidence=evidence,
        metrics=metrics,
    )


def _g(value: float | None) -> str:
    """3 significant digits; None is a non-finite error (NaN or inf where the other side is finite)."""
    return "inf" if value is None else f"{value:.3g}"


def _not_run(check_name: str, evidence: Path, reason: str, reference: Path, candidate: Path) -> Check:
    evidence.write_text(
        json.dumps({"reference": str(reference), "candidate": str(candidate), "error": reason}, indent=2)
    )
    return Check(name=check_name, status=CheckStatus.not_run, reason=reason, evidence=[str(evidence)])


# --------------------------------------------------------------------------- runbook section


class GoldenSideRun(BaseModel):
    """How one side's dumps were obtained (`golden/run.json`)."""

    side: Literal["reference", "candidate"]
    dumps: str  # relative to the golden evidence dir when captured into it
    command: list[str] | None = None
    exit_code: int | None = None
    log: str | None = None  # relative to the golden evidence dir
    error: str | None = None


class GoldenRun(RootModel[list[GoldenSideRun]]):
    """`golden/run.json`: how the reference's and the candidate's dumps were obtained."""

    def commands(self) -> list[str]:
        """The capture commands run, as shell lines."""
        return [shlex.join(side.command) for side in self.root if side.command]


def _produce(side: str, spec: GoldenSide, evidence_dir: Path, cwd: Path, env: dict[str, str] | None,
             ops: OpCapture | None = None) -> GoldenSideRun:
    if spec.dumps is not None:
        return GoldenSideRun(side=side, dumps=str(spec.dumps))  # type: ignore[arg-type]
    out = evidence_dir / side
    out.mkdir(parents=True, exist_ok=True)
    command = [a.replace("{out}", str(out)) for a in shlex.split(spec.command or "")]
    if command and command[0] in ("python", "python3"):
        command[0] = sys.executable
    log = evidence_dir / f"{side}.log"
    run = GoldenSideRun(side=side, dumps=side, command=command, log=log.name)
    try:
        with log.open("wb") as handle:
            # both sides record the same ops (names line up); `harness golden capture` reads it
            ops_env = {OPS_ENV: ops.model_dump_json()} if ops is not None else {}
            done = subprocess.run(command, cwd=cwd, env={**os.environ, **(env or {}), **ops_env}, stdout=handle,
                                  stderr=subprocess.STDOUT, timeout=spec.timeout_s, check=False)
        run.exit_code = done.returncode
        if done.returncode != 0:
            last = [line for line in tail(log, 5) if line.strip()]
            run.error = f"the {side} capture exited with code {done.returncode}: {last[-1] if last else '(no output)'}"
    except subprocess.TimeoutExpired:
        run.error = f"the {side} capture did not finish within {spec.timeout_s:g} s"
    except OSError as exc:
        run.error = f"the {side} capture could not start: {exc}"
    return run


def _evidence_check(run: GoldenRun, evidence_dir: Path) -> Check:
    failed = [s for s in run.root if s.error]
    if failed:
        detail = "\n".join(f"--- {s.side} log tail ---\n" + "\n".join(tail(evidence_dir / s.log, 20))
                           for s in failed if s.log)
        return Check(name="accuracy.golden", status=CheckStatus.failed, reason="; ".join(s.error or "" for s in failed),
                     detail=detail or None, evidence=[str(evidence_dir / s.log) for s in failed if s.log])
    check = golden_check(evidence_dir / REPORT)
    plot = evidence_dir / "golden_error.png"
    if plot.is_file():
        check.evidence.append(str(plot))
    return check


class GoldenRunner(Runner[GoldenSpec, GoldenRun]):
    """The runbook's `golden:` section: both sides' dumps (captured by their commands, or
    given), compared tensor by tensor; the `accuracy.golden` check."""

    name = "golden"
    section = "golden"
    phase = "static"  # the captures and the comparison need no server
    spec = GoldenSpec
    record = GoldenRun
    summary = RUN_RECORD

    def run(self, spec: GoldenSpec, evidence_dir: Path, *, cwd: Path, env: dict[str, str] | None = None) -> GoldenRun:
        """Produce both sides' dumps (commands, run in `cwd` with `env` added — and `spec.ops` as
        HARNESS_GOLDEN_OPS —, write into `<evidence_dir>/<side>/`), then compare them into `<evidence_dir>/golden.json` and draw
        `golden_error.png`; `run.json` records how each side was obtained. A failing command is
        recorded, not raised."""
        evidence_dir = Path(evidence_dir)
        evidence_dir.mkdir(parents=True, exist_ok=True)
        sides = [_produce(side, getattr(spec, side), evidence_dir, cwd, env, spec.ops)
                 for side in ("reference", "candidate")]
        (evidence_dir / RUN_RECORD).write_text(json.dumps(GoldenRun(sides).model_dump(mode="json"), indent=2) + "\n")
        if not any(s.error for s in sides):
            # Paths inside the evidence are relative to it (the step's staging dir is renamed away).
            compare_dumps(*(evidence_dir / s.dumps for s in sides), evidence_dir, atol=spec.atol, rtol=spec.rtol,
                          equal_nan=spec.equal_nan,
                          tolerances=[(t.pattern, t.atol, t.rtol) for t in spec.tolerances],
                          expected_dtype_pairs=[tuple(p) for p in spec.expected_dtype_pairs])
            report = GoldenReport.model_validate_json((evidence_dir / REPORT).read_text())
            report.reference, report.candidate = sides[0].dumps, sides[1].dumps
            (evidence_dir / REPORT).write_text(report.model_dump_json(indent=2))
            from harness.evidence.plots import (
                plot_golden,  # matplotlib: only when there is something to draw
            )

            plot_golden(report, evidence_dir / "golden_error.png")
        return GoldenRun(sides)

    def checks(self, record: GoldenRun, evidence_dir: Path, spec: GoldenSpec) -> list[Check]:
        return [_evidence_check(record, evidence_dir)]

    def commands(self, record: GoldenRun, *, cwd: Path, **inputs: object) -> list[str]:
        """The capture commands, each run in `cwd` as `run` ran it."""
        return [f"(cd {shlex.quote(str(cwd))} && {command})" for command in record.commands()]
