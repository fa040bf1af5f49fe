"""What a run is made of: its fixed inputs (written once, at start) and the graph state that the
checkpointer persists between processes.

The graph state holds plain JSON-able dicts only, so any checkpointer backend can store it.
"""

from __future__ import annotations

from typing import Annotated, Any, TypedDict

from pydantic import BaseModel, Field


class FeatureSpec(BaseModel):
    """A feature, resolved from whichever form the user named it in."""

    id: str
    source: str  # feature_file | feature_diff | commit_range
    name: str
    description: str = ""
    symbols: list[str] = Field(default_factory=list)  # dotted upstream symbols
    paths: list[str] = Field(default_factory=list)  # upstream paths, relative to the source root
    commits: str | None = None  # "A..B" on a git upstream
    models: list[str] = Field(default_factory=list)
    file: str | None = None  # the feature file, when source == feature_file


class RunInputs(BaseModel):
    run_id: str
    feature: FeatureSpec
    plugin: str  # absolute path of the plugin checkout
    plugin_commit: str | None = None
    upstream: str  # the spec the steps resolve, e.g. sglang==0.5.23 or a bundled path
    from_upstream: str | None = None
    # what --upstream / --from resolved to at `run` (spec, kind, fingerprint, git_commit); later
    # processes must resolve them to the same content (harness.workflow.pins)
    upstream_pin: dict[str, Any] | None = None
    from_pin: dict[str, Any] | None = None
    runbook: str | None = None  # absolute path
    auto_approve: bool = False
    notes: list[str] = Field(default_factory=list)  # e.g. "package index unreachable: bundled upstream"
    created_at: str


def _merge(left: dict | None, right: dict | None) -> dict:
    """Each step node / gate writes only its own key; merging keeps the others."""
    return {**(left or {}), **(right or {})}


class RunState(TypedDict, total=False):
    run_id: str
    # step slug -> the step's record: attempt, verdict, checks, report, evidence_hash, finished_at
    steps: Annotated[dict[str, dict[str, Any]], _merge]
    # step slug -> every gate decision made on it, oldest first (approvals and rejections)
    gates: Annotated[dict[str, list[dict[str, Any]]], _merge]
    finished_at: str | None


def attempt_of(state: RunState, slug: str) -> int:
    """A step's attempt number: one more than the rejections it has had."""
    return 1 + sum(1 for d in state.get("gates", {}).get(slug, []) if d["decision"] == "reject")


def last_rejection(state: RunState, slug: str) -> dict[str, Any] | None:
    rejections = [d for d in state.get("gates", {}).get(slug, []) if d["decision"] == "reject"]
    return rejections[-1] if rejections else None
