"""Pinning a run's upstreams: `run` records what --upstream and --from resolved to, and every
later process (approve, reject, resume) must resolve them to the same content, so a PATH or a
PATH@branch spec cannot change under a run.

A pin is the source's content fingerprint (`UpstreamSource.content_fingerprint`) and, for git,
the commit the ref pointed at.

The run record is pinned the same way: `run_started` records the sha256 of run.json (the
runbook path, the agent endpoint, the API key's variable name, ...) and of the files that decide
what later steps run (the runbook and the recipes it names); `record_changes` compares them, with
the journal's chain, to what is on disk now.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from harness.errors import HarnessError
from harness.knowledge.products import resolve
from harness.knowledge.upstream import UpstreamSource
from harness.record.layout import RunLayout
from harness.record.models import RunInputs, UpstreamPin
from harness.util.files import sha256_file

RUN_JSON = "run.json"  # the key of run.json's own pin (other files are keyed by absolute path)
MISSING = "missing"


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


def content_pin(data: bytes) -> str:
    """`sha256:<hex>` of bytes (run.json as it is written)."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def file_pins(paths: list[str]) -> dict[str, str]:
    """{path: `sha256:<hex>`, or "missing" when it cannot be read} of each file."""
    pins = {}
    for path in paths:
        try:
            pins[path] = "sha256:" + sha256_file(path)
        except OSError:
            pins[path] = MISSING
    return pins


def record_changes(run: RunLayout) -> list[str]:
    """What changed in the run's record since `run` started, one line each: a broken journal
    chain (where), and each pinned file (run.json, the runbook, its recipes) whose content is not
    what was pinned (both hashes). [] for an intact record; a legacy run (unchained, no pins) is
    checked for what it has."""
    read = run.read_journal()
    problems = [f"its journal's chain is broken: {read.broken}"] if read.broken else []
    started = next((e for e in read.events if e.get("event") == "run_started"), None)
    pins = started.get("pins") if started else None
    # a runbook given after the start (`approve --runbook`) pins itself and its recipes on its line
    for attached in (e for e in read.events if e.get("event") == "runbook_attached"):
        if isinstance(pins, dict) and isinstance(attached.get("pins"), dict):
            pins = {**pins, **attached["pins"]}
    if pins is None:
        if read.chained and not read.broken:
            problems.append(f"its journal {run.journal} has no run_started line pinning run.json")
        return problems
    if not isinstance(pins, dict):
        return [*problems, f"the run_started line of {run.journal} holds no readable pins"]
    for name, recorded in pins.items():
        path = run.run_json if name == RUN_JSON else Path(name)
        now = file_pins([str(path)])[str(path)]
        if now != recorded:
            problems.append(f"{path} changed under this run: it hashed to {recorded} when the run started and "
                            f"hashes to {now} now; restore it, or start a new run")
    return problems
