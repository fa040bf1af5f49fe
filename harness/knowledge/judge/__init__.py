"""Judging each dependency of a plugin against one upstream: `Judge` (core.py, the one
implementation of `JudgeContext`) and its helpers, which take the context, never the class:
members (overrides, subclasses), conditions (guards, handlers), fields, forms, call sites,
receivers, registries, signatures, successors, architectures, failure time, parsing ahead and
the platform surface; breaking.py is the one definition of what breaks. Imports: model, upstream and scan only."""

from harness.knowledge.judge.breaking import ROWS, BreakingFacts, Row, decide
from harness.knowledge.judge.context import JudgeContext
from harness.knowledge.judge.core import Judge, dependencies, reported
from harness.knowledge.judge.members import missing_bases
from harness.knowledge.judge.parse_ahead import prefetch
from harness.knowledge.judge.resolution import inherited_from, resolve_dependency
from harness.knowledge.judge.successors import find_successor
from harness.knowledge.judge.surface import (
    Shim,
    deprecation_shims,
    platform_defaults,
    server_arg_fields,
)
from harness.knowledge.judge.timing import FailureTime, entry_points_of, failure_time

__all__ = [
    "BreakingFacts", "FailureTime", "Judge", "JudgeContext", "Shim", "dependencies", "deprecation_shims", "entry_points_of",
    "failure_time", "find_successor", "inherited_from", "missing_bases", "platform_defaults", "prefetch",
    "ROWS", "Row", "decide", "reported", "resolve_dependency", "server_arg_fields"
]
