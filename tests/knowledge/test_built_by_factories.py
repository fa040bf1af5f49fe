"""A hook on a method is judged against the calls upstream makes on the instances a factory
function builds (`self.sampler = create_sampler()` with `def create_sampler() -> "Sampler":`,
as SGLang 0.5.23's model runner does), and a keyword upstream passes only on some runs
(`**({"logprob_logits": x} if x is not None else {})`) is one the hook must not require
(F30 variant r2: an AROUND closure copying the new keyword without its default fails on
ordinary sampling). Three spellings of the factory's annotation, three of the conditional
keyword; a hook that keeps the default binds every call, and a factory that names no class
leaves the call unplaced (not certain)."""

from __future__ import annotations

import pytest
from kinds_support import check, plugin, pyproject, upstream_pair
from knowledge_support import by_target

TARGET = "sglang.srt.layers.sampler.Sampler.forward"
SAMPLER = """
from typing import Optional

from torch import nn


class Sampler(nn.Module):
    def forward(self, logits, *, temperature=1.0):
        return logits


def create_sampler(backend=None){returns}:
    return Sampler()
"""
RUNNER = """
from sglang.srt.layers.sampler import create_sampler


class ModelRunner:
    def __init__(self):
        self.sampler = create_sampler()

    def sample(self, logits, temperature):
        return self.sampler(logits, **{passed})
"""
ANNOTATIONS = {"string": ' -> "Sampler"', "name": " -> Sampler", "optional": " -> Optional[Sampler]", "none": ""}
PASSED = {
    "dict_display": '({"temperature": temperature} if temperature is not None else {})',
    "dict_call": "(dict(temperature=temperature) if temperature else {})",
    "empty_first": '({} if temperature is None else {"temperature": temperature})',
}


def _hook(tmp_path_factory, tmp_path, annotation: str, passed: str, closure: str) -> tuple[int, dict]:
    _, new = upstream_pair(tmp_path_factory, new={
        "sglang/srt/layers/sampler.py": SAMPLER.format(returns=ANNOTATIONS[annotation]),
        "sglang/srt/model_executor/__init__.py": "",
        "sglang/srt/model_executor/runner.py": RUNNER.format(passed=PASSED[passed]),
    })
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"p": "p:register"}), "p/__init__.py": f"""
from sglang.srt.plugins.hook_registry import HookRegistry, HookType


def around(original_fn, sampler, logits, {closure}):
    return original_fn(sampler, logits)


def register():
    HookRegistry.register({TARGET!r}, around, HookType.AROUND)
"""})
    code, doc = check(root, new)
    return code, by_target(doc["findings"])[TARGET]


@pytest.mark.parametrize("annotation", ["string", "name", "optional"])
@pytest.mark.parametrize("passed", sorted(PASSED))
def test_a_required_keyword_upstream_passes_only_sometimes_breaks_on_a_factory_built_instance(tmp_path_factory, tmp_path, annotation, passed):
    code, hook = _hook(tmp_path_factory, tmp_path, annotation, passed, "*, temperature")
    assert (hook["status"], hook["breaking"]) == ("signature_changed", True) and code == 1, hook
    assert "runner.py:" in hook["detail"] and "through self.sampler" in hook["detail"], hook["detail"]
    assert "missing required argument 'temperature' (on the runs that do not pass it)" in hook["detail"], hook["detail"]
    # the hook keeping upstream's default binds every call
    code, hook = _hook(tmp_path_factory, tmp_path / "fits", annotation, passed, "*, temperature=1.0")
    assert not hook["breaking"] and code == 0, hook


def test_a_factory_that_names_no_class_leaves_the_call_unplaced(tmp_path_factory, tmp_path):
    code, hook = _hook(tmp_path_factory, tmp_path, "none", "dict_display", "*, temperature")
    assert not hook["breaking"] and code != 1, hook
    assert "runner.py:" not in (hook["detail"] or ""), hook["detail"]
