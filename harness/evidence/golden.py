"""Golden comparison: a candidate's tensor dumps against a reference's, op by op.

Each side is a directory of dumps or one file; `.safetensors` and torch (`.pt`, `.pth`, `.bin`)
files are read, nested dicts/lists inside a torch file are flattened. Names are matched
across the two sides; every pair is compared with torch.allclose semantics
(|candidate − reference| ≤ atol + rtol·|reference|, NaNs equal only with `equal_nan`).

The evidence file lists every name in the reference's order (the first mismatch in dump order
is usually where a port diverges), the worst offenders, shape/dtype mismatches and names
missing on either side. torch is imported only when a comparison runs: it is an optional
dependency of the harness.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from harness.record.checks import Check, CheckStatus

TORCH_SUFFIXES = {".pt", ".pth", ".bin"}
DUMP_SUFFIXES = TORCH_SUFFIXES | {".safetensors"}
WORST_LISTED = 10


class TensorComparison(BaseModel):
    name: str
    status: Literal["match", "mismatch", "shape", "dtype"]
    shape_reference: list[int]
    shape_candidate: list[int]
    dtype_reference: str
    dtype_candidate: str
    max_abs_err: float | None = None
    max_rel_err: float | None = None
    mismatch_fraction: float | None = None
    # max over elements of |a − b| / (atol + rtol·|b|): above 1 means not allclose.
    tolerance_ratio: float | None = None


class GoldenReport(BaseModel):
    reference: str
    candidate: str
    atol: float
    rtol: float
    equal_nan: bool
    compared: int
    matched: int
    mismatched: list[str]
    shape_mismatches: list[str]
    dtype_mismatches: list[str]
    missing_in_candidate: list[str]
    missing_in_reference: list[str]
    first_mismatch: str | None
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
                content: Any = {key: handle.get_tensor(key) for key in handle.keys()}
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
    return TensorComparison(
        status=status,
        max_abs_err=max_abs,
        max_rel_err=max_rel,
        mismatch_fraction=mismatch_fraction,
        tolerance_ratio=ratio,
        **entry,
    )


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
) -> Check:
    """Compare two dump sets; writes `<evidence_dir>/<name>.json` and returns the Check.

    Passed only when every reference name exists in the candidate with the same shape (and
    dtype, with `check_dtype`) and is allclose; extra candidate names are listed, not failed.
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

    results = [
        compare_tensors(key, ref_tensors[key], cand_tensors[key], atol, rtol, equal_nan)
        for key in ref_tensors
        if key in cand_tensors
    ]
    missing_in_candidate = [key for key in ref_tensors if key not in cand_tensors]
    missing_in_reference = [key for key in cand_tensors if key not in ref_tensors]
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
        compared=len(results),
        matched=sum(r.status == "match" or (r.status == "dtype" and not check_dtype) for r in results),
        mismatched=[r.name for r in results if r.status == "mismatch"],
        shape_mismatches=[r.name for r in results if r.status == "shape"],
        dtype_mismatches=[r.name for r in results if r.dtype_reference != r.dtype_candidate],
        missing_in_candidate=missing_in_candidate,
        missing_in_reference=missing_in_reference,
        first_mismatch=(failing[0].name if failing else None),
        worst=ranked[:WORST_LISTED],
        tensors=results,
    )
    evidence.write_text(report.model_dump_json(indent=2))

    problems = []
    if report.mismatched:
        problems.append(f"{len(report.mismatched)} of {len(results)} tensors outside atol={atol} rtol={rtol}")
    if report.shape_mismatches:
        problems.append(f"{len(report.shape_mismatches)} shape mismatches")
    if check_dtype and report.dtype_mismatches:
        problems.append(f"{len(report.dtype_mismatches)} dtype mismatches")
    if missing_in_candidate:
        problems.append(f"{len(missing_in_candidate)} reference tensors missing in the candidate")
    worst_lines = [
        f"{r.name}: max abs {r.max_abs_err:.3g}, max rel {r.max_rel_err:.3g}, "
        f"{100 * (r.mismatch_fraction or 0):.2f}% elements off, {r.tolerance_ratio:.3g}× tolerance"
        for r in ranked[:5]
        if r.status == "mismatch"
    ]
    metrics = {
        "compared": report.compared,
        "matched": report.matched,
        "mismatched": len(report.mismatched),
        "shape_mismatches": len(report.shape_mismatches),
        "dtype_mismatches": len(report.dtype_mismatches),
        "missing_in_candidate": len(missing_in_candidate),
        "missing_in_reference": len(missing_in_reference),
        "worst_tolerance_ratio": ranked[0].tolerance_ratio if ranked else None,
    }
    if not problems:
        return Check(
            name=check_name,
            status=CheckStatus.passed,
            reason=None,
            detail=f"{len(results)} tensors allclose (atol={atol}, rtol={rtol})"
            + (f"; {len(missing_in_reference)} extra in the candidate" if missing_in_reference else ""),
            evidence=[str(evidence)],
            metrics=metrics,
        )
    reason = "; ".join(problems)
    if report.first_mismatch:
        reason += f"; first in dump order: {report.first_mismatch}"
    return Check(
        name=check_name,
        status=CheckStatus.failed,
        reason=reason,
        detail="\n".join(worst_lines + [f"missing in candidate: {k}" for k in missing_in_candidate[:10]]),
        evidence=[str(evidence)],
        metrics=metrics,
    )


def _not_run(check_name: str, evidence: Path, reason: str, reference: Path, candidate: Path) -> Check:
    evidence.write_text(
        json.dumps({"reference": str(reference), "candidate": str(candidate), "error": reason}, indent=2)
    )
    return Check(name=check_name, status=CheckStatus.not_run, reason=reason, evidence=[str(evidence)])
