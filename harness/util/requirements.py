"""Which PEP 508 requirements this interpreter's environment does not satisfy.

A runbook's server may need Python distributions that are optional extras of harness (the
built-in example's llama.cpp engine is `harness[serve]`): checking them before the server starts
turns "the engine exited with code 2" into "not run: … not installed, pip install …".
"""

from __future__ import annotations

from importlib import metadata

from packaging.markers import default_environment
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name


def unmet_requirements(requires: list[str]) -> list[str]:
    """The leaf requirements of `requires` (PEP 508 strings, e.g. `harness[serve]`,
    `sglang>=0.5.23`) this environment lacks, as strings pip accepts, in order and without
    repeats: a distribution not installed or of a version outside the specifier, and through
    each extra named (`harness[serve]`) the requirements that extra adds, checked the same way.
    Markers are evaluated for this interpreter. ValueError for a string that is not a PEP 508
    requirement (the runbook's validator reports it with its line)."""
    unmet: list[str] = []
    seen: set[str] = set()

    def visit(text: str, extra: str = "") -> None:
        req = Requirement(text)
        if req.marker is not None and not req.marker.evaluate({**default_environment(), "extra": extra}):
            return
        key = f"{canonicalize_name(req.name)}[{','.join(sorted(req.extras))}]{req.specifier}"
        if key in seen:
            return
        seen.add(key)
        try:
            dist = metadata.distribution(req.name)
        except metadata.PackageNotFoundError:
            unmet.append(_pip_arg(req))
            return
        if req.specifier and not req.specifier.contains(dist.version, prereleases=True):
            unmet.append(_pip_arg(req))
            return
        for name in sorted(req.extras):
            for child in dist.requires or []:
                try:
                    marker = Requirement(child).marker
                except InvalidRequirement:
                    continue  # the installed distribution's own metadata: not the runbook's fault
                if marker is not None and "extra" in str(marker):  # what the extra adds: the base came with it
                    visit(child, canonicalize_name(name))

    for text in requires:
        try:
            visit(text)
        except InvalidRequirement as exc:
            raise ValueError(f"{text!r} is not a PEP 508 requirement: {str(exc).splitlines()[0]}") from None
    return unmet


def _pip_arg(req: Requirement) -> str:
    """`req` without its marker: what `pip install` is given for it."""
    extras = f"[{','.join(sorted(req.extras))}]" if req.extras else ""
    return f"{req.name}{extras}{req.specifier}"
