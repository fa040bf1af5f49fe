"""Golden tensor comparison on real safetensors / torch dump files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
from safetensors.torch import save_file  # noqa: E402

from harness.record.checks import CheckStatus  # noqa: E402
from harness.evidence.golden import compare_dumps, load_dumps  # noqa: E402


def reference_tensors() -> dict[str, "torch.Tensor"]:
    generator = torch.Generator().manual_seed(0)
    return {
        "embed": torch.randn(4, 16, generator=generator),
        "attn": torch.randn(4, 16, generator=generator),
        "mlp": torch.randn(4, 32, generator=generator),
        "logits": torch.randn(4, 100, generator=generator),
    }


def write_dump_dir(root: Path, tensors: dict[str, "torch.Tensor"]) -> Path:
    """Layer dumps as a runner would write them: one file per op, numbered in execution order,
    mixing torch and safetensors files; the last holds a dict."""
    root.mkdir(parents=True)
    torch.save(tensors["embed"], root / "00_embed.pt")
    save_file({"out": tensors["attn"]}, str(root / "01_attn.safetensors"))
    torch.save(tensors["mlp"], root / "02_mlp.pt")
    torch.save({"logits": tensors["logits"], "step": 3}, root / "03_head.pt")
    return root


def read_evidence(check) -> dict:
    return json.loads(Path(check.evidence[0]).read_text())


def test_identical_dumps_pass(tmp_path):
    tensors = reference_tensors()
    reference = write_dump_dir(tmp_path / "ref", tensors)
    candidate = write_dump_dir(tmp_path / "cand", {k: v.clone() for k, v in tensors.items()})
    assert sorted(load_dumps(reference)) == ["00_embed", "01_attn/out", "02_mlp", "03_head/logits"]
    check = compare_dumps(reference, candidate, tmp_path / "evidence")
    assert check.status is CheckStatus.passed, check.reason
    report = read_evidence(check)
    assert report["compared"] == 4 and report["matched"] == 4 and report["first_mismatch"] is None


def test_divergence_lists_worst_offenders_shapes_and_missing(tmp_path):
    tensors = reference_tensors()
    reference = write_dump_dir(tmp_path / "ref", tensors)
    changed = {k: v.clone() for k, v in tensors.items()}
    changed["attn"][0, :4] += 0.5  # 4 of 64 elements off: the first divergence in dump order
    changed["mlp"] += 1e-7  # inside tolerance
    changed["logits"] = changed["logits"] * 1.1  # everything off, by more
    candidate = write_dump_dir(tmp_path / "cand", changed)
    (candidate / "00_embed.pt").unlink()
    torch.save(torch.zeros(5, 16), candidate / "00_embed_extra.pt")

    check = compare_dumps(reference, candidate, tmp_path / "evidence", atol=1e-5, rtol=1e-3)
    assert check.status is CheckStatus.failed
    assert "2 of 3 tensors outside" in check.reason and "1 reference tensors missing" in check.reason
    assert "first op that diverges: 01_attn/out" in check.reason
    report = read_evidence(check)
    assert report["missing_in_candidate"] == ["00_embed"]
    assert report["missing_in_reference"] == ["00_embed_extra"]
    by_name = {entry["name"]: entry for entry in report["tensors"]}
    attn = by_name["01_attn/out"]
    assert attn["status"] == "mismatch" and attn["mismatch_fraction"] == pytest.approx(4 / 64)
    assert attn["max_abs_err"] == pytest.approx(0.5, rel=1e-5)
    assert by_name["02_mlp"]["status"] == "match"
    logits_error = (tensors["logits"] * 0.1).abs().max().item()
    assert by_name["03_head/logits"]["max_abs_err"] == pytest.approx(logits_error, rel=1e-5)
    assert by_name["03_head/logits"]["max_rel_err"] == pytest.approx(0.1, rel=1e-4)
    # Worst first, measured against the tolerance each element was allowed.
    ratios = [entry["tolerance_ratio"] for entry in report["worst"]]
    assert ratios == sorted(ratios, reverse=True) and report["worst"][-1]["name"] == "02_mlp"


def test_single_files_with_shape_and_dtype_differences(tmp_path):
    tensors = reference_tensors()
    save_file(tensors, str(tmp_path / "ref.safetensors"))
    candidate = {k: v.clone() for k, v in tensors.items()}
    candidate["embed"] = candidate["embed"].to(torch.bfloat16)
    candidate["mlp"] = candidate["mlp"][:, :16].contiguous()
    torch.save(candidate, tmp_path / "cand.pt")

    strict = compare_dumps(tmp_path / "ref.safetensors", tmp_path / "cand.pt", tmp_path / "e1", atol=1e-2, rtol=1e-2)
    assert strict.status is CheckStatus.failed
    assert "1 shape mismatches" in strict.reason and "1 unexpected dtype mismatches" in strict.reason
    report = read_evidence(strict)
    assert report["shape_mismatches"] == ["mlp"] and report["dtype_mismatches"] == ["embed"]

    del candidate["mlp"]
    torch.save(candidate, tmp_path / "cand2.pt")
    save_file({k: v for k, v in tensors.items() if k != "mlp"}, str(tmp_path / "ref2.safetensors"))
    relaxed = compare_dumps(
        tmp_path / "ref2.safetensors", tmp_path / "cand2.pt", tmp_path / "e2", atol=1e-2, rtol=1e-2, check_dtype=False
    )
    assert relaxed.status is CheckStatus.passed, relaxed.reason  # bf16 rounding is inside 1e-2


def test_allclose_semantics(tmp_path):
    generator = torch.Generator().manual_seed(1)
    base = torch.randn(1000, generator=generator)
    for scale in (1e-6, 1e-4, 1e-3, 1e-2):
        noisy = base + scale * torch.randn(1000, generator=generator)
        torch.save({"x": base}, tmp_path / "a.pt")
        torch.save({"x": noisy}, tmp_path / "b.pt")
        check = compare_dumps(tmp_path / "a.pt", tmp_path / "b.pt", tmp_path / "e", atol=1e-4, rtol=1e-3)
        expected = torch.allclose(noisy, base, atol=1e-4, rtol=1e-3)
        assert (check.status is CheckStatus.passed) == expected


def test_nan_needs_equal_nan(tmp_path):
    values = torch.tensor([1.0, float("nan"), 3.0])
    torch.save({"x": values}, tmp_path / "a.pt")
    torch.save({"x": values.clone()}, tmp_path / "b.pt")
    assert compare_dumps(tmp_path / "a.pt", tmp_path / "b.pt", tmp_path / "e").status is CheckStatus.failed
    assert (
        compare_dumps(tmp_path / "a.pt", tmp_path / "b.pt", tmp_path / "e", equal_nan=True).status is CheckStatus.passed
    )


def test_missing_or_unreadable_dumps_are_not_run(tmp_path):
    torch.save({"x": torch.ones(2)}, tmp_path / "a.pt")
    missing = compare_dumps(tmp_path / "a.pt", tmp_path / "nowhere", tmp_path / "e")
    assert missing.status is CheckStatus.not_run and "does not exist" in missing.reason
    (tmp_path / "broken.pt").write_bytes(b"not a torch file")
    broken = compare_dumps(tmp_path / "a.pt", tmp_path / "broken.pt", tmp_path / "e")
    assert broken.status is CheckStatus.not_run and "cannot read tensor dump" in broken.reason
    assert "error" in read_evidence(broken)


# Outputs that hold one value everywhere on both sides (an all-padding batch: zero embeddings, so
# zeros through every bias-free layer; a saturated activation; a mask) match whatever the weights
# are: the comparison measured nothing (the F11 kind, twenty-fourth set F11-d1).
DEGENERATE = {
    "all_zeros": lambda shape, _: torch.zeros(shape),
    "one_value_each": lambda shape, i: torch.full(shape, float(i + 1)),
    "zeros_in_low_precision": lambda shape, _: torch.zeros(shape, dtype=torch.bfloat16),
    # no element at all (twenty-fifth set F11-e2: a sequence length of 0): nothing is compared
    "no_elements": lambda shape, _: torch.empty((0, *shape[1:])),
    "no_elements_and_zeros": lambda shape, i: torch.empty((0, *shape[1:])) if i % 2 else torch.zeros(shape),
}


@pytest.mark.parametrize("spelling", sorted(DEGENERATE))
def test_a_comparison_of_constant_outputs_is_inconclusive(tmp_path, spelling):
    tensors = {name: DEGENERATE[spelling](tuple(t.shape), i) for i, (name, t) in enumerate(reference_tensors().items())}
    reference = write_dump_dir(tmp_path / "ref", tensors)
    candidate = write_dump_dir(tmp_path / "cand", {k: v.clone() for k, v in tensors.items()})
    check = compare_dumps(reference, candidate, tmp_path / "evidence")
    assert check.status is CheckStatus.inconclusive and "measured nothing" in check.reason, check
    assert read_evidence(check)["matched"] == 4


def test_one_output_that_varies_makes_the_comparison_count(tmp_path):
    tensors = {name: torch.zeros(tuple(t.shape)) for name, t in reference_tensors().items()}
    tensors["logits"] = reference_tensors()["logits"]
    reference = write_dump_dir(tmp_path / "ref", tensors)
    candidate = write_dump_dir(tmp_path / "cand", {k: v.clone() for k, v in tensors.items()})
    check = compare_dumps(reference, candidate, tmp_path / "evidence")
    assert check.status is CheckStatus.passed, check.reason
    # and a constant reference the candidate does not match is a failure as ever
    candidate = write_dump_dir(tmp_path / "cand2", {**tensors, "embed": torch.ones(tuple(tensors["embed"].shape))})
    assert compare_dumps(reference, candidate, tmp_path / "evidence2").status is CheckStatus.failed


# Outputs so small that an output of zeros would be within the tolerance (twenty-ninth set F11-i2:
# inputs left at a 1e-30 underflow-test scale): they vary, the broken candidate differs from them
# by factors, yet every element is within atol -- the comparison measured nothing either.
TINY = {
    "underflow_scale": lambda t: t * 1e-30,
    "just_below_atol": lambda t: t / t.abs().max() * 0.9e-5,
    "half_precision_denormals": lambda t: (t * 1e-7).to(torch.float16),
}


@pytest.mark.parametrize("spelling", sorted(TINY))
def test_a_comparison_of_outputs_within_atol_of_zero_is_inconclusive(tmp_path, spelling):
    tensors = {name: TINY[spelling](t) for name, t in reference_tensors().items()}
    reference = write_dump_dir(tmp_path / "ref", tensors)
    candidate = write_dump_dir(tmp_path / "cand", {k: v * 0.1 for k, v in tensors.items()})  # a port 10x off
    check = compare_dumps(reference, candidate, tmp_path / "evidence", atol=1e-5, rtol=1e-5)
    assert check.status is CheckStatus.inconclusive and "measured nothing" in check.reason, check
    # at their real scale the same port fails
    reference = write_dump_dir(tmp_path / "ref2", reference_tensors())
    candidate = write_dump_dir(tmp_path / "cand2", {k: v * 0.1 for k, v in reference_tensors().items()})
    assert compare_dumps(reference, candidate, tmp_path / "evidence2", atol=1e-5, rtol=1e-5).status is CheckStatus.failed
