"""Pinning a run's upstreams: `run` records what --upstream and --from resolved to, and every
later process (approve, reject, resume) must resolve them to the same content, so a PATH or a
PATH@branch spec cannot change under a run.

A pin is the source's content fingerprint (`UpstreamSource.content_fingerprint`) and, for git,
the commit the ref pointed at.
"""

from __future__ import annotations

from typing import Any

from harness.errors import HarnessError


def pin_of(source: Any) -> dict[str, Any]:
    return {"spec": source.spec, "kind": source.kind, "fingerprint": source.content_fingerprint, "git_commit": source.git_commit}


def describe(pin: dict[str, Any]) -> str:
    commit = f" (git commit {pin['git_commit'][:12]})" if pin.get("git_commit") else ""
    return f"{pin['fingerprint']}{commit}"


def check_pin(option: str, pin: dict[str, Any] | None, source: Any) -> Any:
    """`source` as resolved now, if it is what the run was started on; else one clear error."""
    if not pin:
        return source  # a run started before pins were recorded
    now = pin_of(source)
    if now["fingerprint"] != pin["fingerprint"]:
        raise HarnessError(
            f"{option} {pin['spec']} changed under this run: it resolved to {describe(pin)} when the run "
            f"started and resolves to {describe(now)} now; restore it, or start a new run"
        )
    return source


def verify_pins(inputs: Any) -> None:
    """Resolve the run's upstreams now and compare them with the pins recorded at `run`."""
    from harness.steps.knowledge import resolve

    if inputs.upstream_pin:
        check_pin("--upstream", inputs.upstream_pin, resolve(inputs.upstream))
    if inputs.from_upstream and inputs.from_pin:
        check_pin("--from", inputs.from_pin, resolve(inputs.from_upstream))


def pin_lines(inputs: dict[str, Any]) -> list[str]:
    """One line per pinned upstream, for `status` and the summary report."""
    return [
        f"{option} {pin['spec']} pinned to {describe(pin)}"
        for option, pin in (("--upstream", inputs.get("upstream_pin")), ("--from", inputs.get("from_pin")))
        if pin
    ]
