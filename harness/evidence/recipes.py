"""Operator Recipes (`recipes/*.yaml`): which platform operator replaces which upstream op, for
which sizes, fused with what, when it falls back, and the failures seen before.

The fallback scan maps every hit to a recipe through `RecipeSet.match`, so a report can say
what to use instead. Errors in a recipe file are one line, `file:line: field: message`, like
runbook errors.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from harness.util.yamlfile import load_yaml_model


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


def normalize_op(name: str) -> str:
    """Compare operator names across logs, traces and recipes: the name after the last `::`
    without its overload (`aten::silu.out` → 'silu', torch's `ns::op.overload` schema names), or
    a dotted path's last component (`torch.ops.<ns>.<op>.<overload>` → op); lower case, letters and digits only, without a trailing
    'kernel' ('sgl_kernel::silu_and_mul' → 'siluandmul', 'fused_moe_kernel' → 'fusedmoe',
    'xdev_ops.rms_norm' → 'rmsnorm')."""
    name = name.strip()
    if name.startswith("torch.ops.") and name.count(".") >= 3:  # torch.ops.<ns>.<op>[.<overload>]
        name = "::".join(name.split(".")[2:4])
    last = name.rsplit("::", 1)[1].split(".", 1)[0] if "::" in name else name.rsplit(".", 1)[-1]
    key = re.sub(r"[^a-z0-9]", "", last.lower())
    return key.removesuffix("kernel") or key


class UpstreamOp(_Strict):
    op: str = Field(description="Upstream operator as it appears in traces, e.g. 'sgl_kernel::rmsnorm'.")
    symbols: list[str] = Field(
        default_factory=list, description="Upstream Python symbols that call it (dotted paths)."
    )
    aliases: list[str] = Field(
        default_factory=list, description="Other names the op goes by in logs and kernels."
    )


class PlatformOp(_Strict):
    op: str = Field(description="The platform operator to use, e.g. 'xdev_ops.rms_norm'.")
    kernels: list[str] = Field(
        default_factory=list, description="Device kernel names it launches (globs), as seen in traces."
    )
    since: str | None = Field(default=None, description="Plugin version that first provides it.")


class SizeBucket(_Strict):
    dim: str = Field(description="Shape dimension the bucket is about, e.g. 'hidden_size' or 'head_dim'.")
    values: list[int] = Field(default_factory=list, description="Supported values (empty: any in range).")
    min: int | None = Field(default=None, description="Smallest supported value.")
    max: int | None = Field(default=None, description="Largest supported value.")
    note: str | None = None


class Fusion(_Strict):
    fuse_with: list[str] = Field(description="Neighbouring upstream ops folded into one platform op.")
    op: str = Field(description="The fused platform operator.")
    when: str | None = Field(default=None, description="Condition for using the fused form.")


class KnownFailure(_Strict):
    symptom: str = Field(description="What goes wrong, in one line.")
    log: str | None = Field(default=None, description="An example log line as the engine prints it.")
    pattern: str | None = Field(
        default=None, description="Regex that recognises this failure in a log (used by the scan)."
    )
    fix: str = Field(description="What to do instead.")
    severity: Literal["error", "warning", "info"] = "error"

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, pattern: str | None) -> str | None:
        if pattern is not None:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"invalid regex: {exc}") from None
        return pattern


class Recipe(_Strict):
    name: str = Field(description="Short recipe name, e.g. 'rmsnorm'.")
    upstream: UpstreamOp
    platform: PlatformOp
    dtypes: list[str] = Field(default_factory=list, description="Dtypes the platform op supports.")
    size_buckets: list[SizeBucket] = Field(default_factory=list)
    fusion: list[Fusion] = Field(default_factory=list)
    fallback_conditions: list[str] = Field(
        default_factory=list, description="When the plugin falls back, and to what."
    )
    known_failures: list[KnownFailure] = Field(default_factory=list)
    notes: str | None = None

    def names(self) -> set[str]:
        """Normalised names that identify this recipe's operator."""
        return {normalize_op(n) for n in (self.name, self.upstream.op, *self.upstream.aliases)}

    def instead(self) -> str:
        """One line for a report: what to use instead of the op that fell back."""
        text = f"use {self.platform.op}"
        if self.size_buckets:
            text += " (" + "; ".join(_describe_bucket(b) for b in self.size_buckets) + ")"
        return text


def _describe_bucket(bucket: SizeBucket) -> str:
    if bucket.values:
        return f"{bucket.dim} in {bucket.values}"
    low = bucket.min if bucket.min is not None else ""
    high = bucket.max if bucket.max is not None else ""
    return f"{bucket.dim} {low}..{high}"


class RecipeSet(_Strict):
    platform: str = Field(description="Platform the recipes are for, e.g. 'xdev'.")
    sglang_versions: str | None = Field(default=None, description="Upstream releases checked, e.g. '>=0.5.11'.")
    recipes: list[Recipe] = Field(min_length=1)

    @field_validator("recipes")
    @classmethod
    def _unique_names(cls, recipes: list[Recipe]) -> list[Recipe]:
        names = [r.name for r in recipes]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"duplicate recipe name(s): {duplicates}")
        return recipes


class LoadedRecipe(BaseModel):
    """A recipe and the file it came from, so a hit can cite it."""

    recipe: Recipe
    file: Path


class Recipes:
    """All recipes of a runbook, searchable by operator name."""

    def __init__(self, loaded: list[LoadedRecipe]):
        self.loaded = loaded
        self._by_name: dict[str, LoadedRecipe] = {}
        for item in loaded:
            for key in item.recipe.names():
                self._by_name.setdefault(key, item)

    @classmethod
    def load(cls, paths: list[Path]) -> Recipes:
        return cls([LoadedRecipe(recipe=r, file=p) for p in paths for r in load_recipes(p).recipes])

    def match(self, op: str | None) -> LoadedRecipe | None:
        return self._by_name.get(normalize_op(op)) if op else None

    def find_in(self, text: str) -> LoadedRecipe | None:
        """The recipe whose operator name occurs in free text (a log line, a traceback frame)."""
        words = {normalize_op(w) for w in re.findall(r"[A-Za-z_][\w:.]*", text)}
        for key, item in self._by_name.items():
            if key in words:
                return item
        return None


def load_recipes(path: str | Path) -> RecipeSet:
    """Parse and validate a recipes file; any problem is a HarnessError `file:line: field: message`."""
    return load_yaml_model(path, RecipeSet, what="recipes",
                           shape="a recipes file must be a mapping with `platform` and `recipes`")
