"""Readings of a resolution the judge's parts share: undecided or not, where a target is defined
now, members of classes assembled at import, inherited members; what a failing import costs;
whether a Python version test holds on the release's Requires-Python (the engine version's is
VersionCompare.holds, with the upstream's version from upstream.upstream_version)."""

from __future__ import annotations

import operator

from harness.engines import LOADERS, profile
from harness.knowledge.model import Dependency, Outcome, PythonCompare, Resolution
from harness.knowledge.upstream import SymbolIndex


def import_failure(dep: Dependency) -> str:
    """What a failing import costs, from where it runs and which loader imports its module."""
    if dep.scope != "module":
        return f"ImportError when {dep.enclosing[-1]} runs"
    loader = next((loader for loader in LOADERS if loader in dep.loaded_by), None)
    if loader is None:
        return f"ImportError when {dep.module} is first imported (from a function, after the plugin loaded)"
    if loader == "script":
        return f"ImportError when {dep.module} is imported: the plugin's own command that runs it (a console script, `python -m`) fails at start"
    return f"ImportError when {dep.module} is imported: {profile().load_failures.get(loader, 'the module fails to import')}"


def is_undecided(resolution: Resolution) -> bool:
    return resolution.outcome is Outcome.undecided


def defined_path(resolution: Resolution) -> str | None:
    ref = resolution.ref
    return ref.path if ref.kind not in ("external", "dynamic") else None


_COMPARE = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge, "==": operator.eq, "!=": operator.ne}


def python_holds(requires_python: str | None, cond: PythonCompare) -> bool | None:
    """Whether `sys.version_info <op> version` (its first `items` items) holds on every CPython
    3.x.y the release allows by its Requires-Python (True), on none of them (False), or on some
    (None); None too when the release states none or the specifier does not parse.
    sys.version_info is (major, minor, micro, releaselevel, serial) and compares as a tuple
    (Python docs, sys.version_info), so `sys.version_info == (3, 10)` never holds."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    try:
        allowed = SpecifierSet(requires_python) if requires_python else None
    except InvalidSpecifier:
        return None
    if allowed is None:
        return None
    found = set()
    for minor in range(40):
        for micro in range(40):
            if f"3.{minor}.{micro}" in allowed:
                running = (3, minor, micro, "final", 0)
                found.add(_COMPARE[cond.op](running[: cond.items] if cond.items else running, cond.version))
    return found.pop() if len(found) == 1 else None


def resolve_dependency(dep: Dependency, index: SymbolIndex) -> Resolution:
    """A patch, registration or server-arg target, resolved (see assembled_field)."""
    return assembled_field(index, index.resolve(dep.target))


def assembled_field(index: SymbolIndex, resolution: Resolution) -> Resolution:
    """A member of a class whose fields are computed at import: `X = defstruct(..., fields built
    from namespace classes, namespace=vars(X))`, as 0.5.23 builds ServerArgs from the arg_groups
    classes its module imports. The computed fields are what those classes declare as fields
    (annotated names; msgspec.structs.fields): a name that neither the class body nor one of
    them declares is missing (a hook on it is skipped; a value
    set on it is dropped). Other resolutions come back unchanged."""
    if resolution.ok and resolution.ref.kind != "value" or resolution.outcome is Outcome.missing:
        return resolution
    container, _, field_name = resolution.target.rpartition(".")
    owner = index.resolve(container)
    info = index.class_info(owner.ref) if owner.ok and owner.ref.kind == "class" else None
    if info is None or not info.open_members:
        return resolution
    module = owner.ref.module
    table = index.table(module)
    namespaces = []
    for name, binding in (table.names.items() if table else []):
        if binding.kind != "from":
            continue
        namespace = index.resolve(f"{module}.{name}")
        if namespace.ok and namespace.ref.kind == "class" and namespace.ref != owner.ref:
            members = index.class_info(namespace.ref)
            if members and any(kind == "value" for kind in members.members.values()):
                namespaces.append(namespace.ref)
                # its fields are its annotated names (0.5.23 arg_groups/fields collect_input_fields
                # reads msgspec.structs.fields): an unannotated class attribute is none
                declared = {name for name, _ in members.fields} if members.fields else {n for n, kind in members.members.items() if kind == "value"}
                if field_name in declared:
                    ref = namespace.ref._replace(kind="value", qualname=f"{namespace.ref.qualname}.{field_name}")
                    return Resolution(resolution.target, ref, note=f"field declared on {namespace.ref.path}, which {owner.ref.qualname} is assembled from")
    if resolution.ok or not namespaces:
        return resolution
    names = ", ".join(n.qualname for n in namespaces[:6]) + (", …" if len(namespaces) > 6 else "")
    return Resolution(resolution.target, None, note=(
        f"{field_name!r} is neither in the body of {owner.ref.path} nor a field of the classes its fields are assembled from "
        f"({names}, imported by {module}); {info.open_members}"))


def inherited_from(target: str, resolution: Resolution, index: SymbolIndex) -> bool:
    """The member is found on a base of the class the target names (compared as classes, so a
    path through a re-export or an alias of that same class is not "inherited")."""
    if not resolution.owner or resolution.ref.kind == "external":
        return False
    container = index.resolve(target.rsplit(".", 1)[0].replace(":", "."))
    return container.ok and container.ref.kind == "class" and container.ref.path != resolution.owner
