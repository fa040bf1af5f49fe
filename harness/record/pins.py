"""Pinning a run's upstreams: `run` records what --upstream and --from resolved to, and every
later process (approve, reject, resume) must resolve them to the same content, so a PATH or a
PATH@branch spec cannot change under a run.

A pin is the source's content fingerprint (`UpstreamSource.content_fingerprint`) and, for git,
the commit the ref pointed at.
"""

from __future__ import annotations

from harness.errors import HarnessError
from harness.knowledge.upstream import UpstreamSource
from harness.record.models import RunInputs, UpstreamPin
from harness.knowledge.sources import resolve


def pin_of(source: UpstreamSource) -> UpstreamPin:
    """The pin of a resolved upstream."""
    return UpstreamPin(spec=source.spec, kind=source.kind, fingerprint=source.content_fingerprint,
                       git_commit=source.git_commit)


def describe(pin: UpstreamPin) -> str:
    """`<fingerprint>` plus ` (git commit <12 hex>)` for git sources."""
    commit = f" (git commit {pin.git_commit[:12]})" if pin.git_commit else ""
    return f"{pin.fingerprint}{commit}"


def check_pin(option: str, pin: UpstreamPin | None, source: UpstreamSource) -> UpstreamSource:
    """`source` as resolved now, if it is what the run was started on; else a HarnessError
    naming the option, both fingerprints and what to do."""
    if pin is None:
        return source
    now = pin_of(source)
    if now.fingerprint != pin.fingerprint:
        raise HarnessError(
            f"{option} {pin.spec} changed under this run: it resolved to {describe(pin)} when the run "
            f"started and resolves to {describe(now)} now; restore it, or start a new run"
        )
    return source


def pinned_upstream(inputs: RunInputs) -> UpstreamSource:
    """The run's --upstream, resolved now and checked against its pin."""
    return check_pin("--upstream", inputs.upstream_pin, resolve(inputs.upstream))


def pinned_from(inputs: RunInputs) -> UpstreamSource | None:
    """The run's --from (None when the run has none), resolved now and checked against its pin."""
    if not inputs.from_upstream:
        return None
    return check_pin("--from", inputs.from_pin, resolve(inputs.from_upstream))


def verify_pins(inputs: RunInputs) -> None:
    """Resolve the run's upstreams now and compare them with the pins recorded at `run`."""
    pinned_upstream(inputs)
    pinned_from(inputs)


def pin_lines(inputs: RunInputs) -> list[str]:
    """One line per pinned upstream, for `status` and the summary report."""
    return [
        f"{option} {pin.spec} pinned to {describe(pin)}"
        for option, pin in (("--upstream", inputs.upstream_pin), ("--from", inputs.from_pin))
        if pin
    ]
