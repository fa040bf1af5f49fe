"""Layers run one way: no module imports from a layer above its own (docs/architecture.md).
In-function and `if TYPE_CHECKING:` imports count too: they are how an upward import hides.
Inside harness/knowledge the five stages run one way as well (model < upstream < scan < judge <
products), code outside knowledge imports a stage only through its face (its __init__), and
nothing in harness/ imports in a circle but the one type-only pair named in ALLOWED_CYCLES."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "harness"

# Lowest first; a module may import from its own layer and the layers below.
LAYERS = [
    ["harness", "harness.errors", "harness.util"],
    ["harness.engines"],
    ["harness.knowledge", "harness.stats"],
    ["harness.record"],
    ["harness.evidence", "harness.report", "harness.testing"],
    ["harness.agent"],
    ["harness.steps"],
    ["harness.workflow"],
    ["harness.cli", "harness.__main__"],
]


def layer_of(module: str) -> int:
    best, rank = "", None
    for index, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > len(best):
                best, rank = prefix, index
    assert rank is not None, f"{module} is in no layer: add it to LAYERS and the diagram in docs/architecture.md"
    return rank


def modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        if "examples" in rel.parts:  # the example plugin is data, not the product
            continue
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def imported(path: Path, module: str, submodules: bool = False) -> list[tuple[str, int]]:
    """The harness modules `module` imports, with lines. `from pkg import name` counts as `pkg`,
    or, with `submodules`, as `pkg.name` where that is a module of the package."""
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    known = modules() if submodules else {}
    names = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
            subs = [f"{base}.{alias.name}" for alias in node.names if f"{base}.{alias.name}" in known]
            names += [(sub, node.lineno) for sub in subs]
            if len(subs) < len(node.names):
                names.append((base, node.lineno))
    return [(name, line) for name, line in names if name == "harness" or name.startswith("harness.")]


def test_every_module_is_in_a_layer_and_imports_only_downwards():
    upward = []
    for module, path in sorted(modules().items()):
        mine = layer_of(module)
        for name, line in imported(path, module):
            if layer_of(name) > mine:
                upward.append(f"{path.relative_to(PACKAGE.parent)}:{line}: {module} (layer {mine}) imports "
                              f"{name} (layer {layer_of(name)})")
    assert not upward, "upward imports:\n" + "\n".join(upward)


# The knowledge engine's stages, lowest first (docs/architecture.md); each package's __init__ is its face.
STAGES = ["model", "upstream", "scan", "judge", "products"]
KNOWLEDGE = "harness.knowledge"
# Type-only: plots.py names golden's report type under TYPE_CHECKING; golden draws with plots.
ALLOWED_CYCLES = [{"harness.evidence.golden", "harness.evidence.plots"}]


def stage_of(module: str) -> int | None:
    parts = module.split(".")
    if parts[:2] != ["harness", "knowledge"] or len(parts) < 3:
        return None
    assert parts[2] in STAGES, f"{module} is in no stage of harness/knowledge: add its package to STAGES"
    return STAGES.index(parts[2])


def test_knowledge_stages_import_one_way():
    upward = []
    for module, path in sorted(modules().items()):
        mine = stage_of(module)
        if mine is None:
            continue
        for name, line in imported(path, module):
            theirs = stage_of(name)
            if theirs is not None and theirs > mine:
                upward.append(f"{path.relative_to(PACKAGE.parent)}:{line}: {module} ({STAGES[mine]}) imports {name} "
                              f"({STAGES[theirs]})")
    assert not upward, "knowledge stages imported upwards:\n" + "\n".join(upward)


def test_code_outside_knowledge_imports_the_faces():
    """Outside harness/knowledge a stage is one module (its __init__); inside a stage, a module
    imports its own stage's modules, never its face (which imports them: a circle at load)."""
    wrong = []
    for module, path in sorted(modules().items()):
        mine = stage_of(module)
        for name, line in imported(path, module, submodules=True):
            theirs = stage_of(name)
            if theirs is None:
                continue
            face = ".".join(name.split(".")[:3])
            if mine is None and name != face:
                wrong.append(f"{path.relative_to(PACKAGE.parent)}:{line}: {module} imports {name}, not its face {face}")
            elif mine == theirs and name == face and not module.endswith(f".{STAGES[mine]}") and module != face:
                wrong.append(f"{path.relative_to(PACKAGE.parent)}:{line}: {module} imports its own stage's face {face}")
    assert not wrong, "\n".join(wrong)


def test_no_module_imports_in_a_circle():
    found = modules()
    graph = {module: {name for name, _ in imported(path, module, submodules=True) if name in found and name != module}
             for module, path in found.items()}
    cycles = [set(c) for c in _strongly_connected(graph) if len(c) > 1]
    cycles = [c for c in cycles if c not in ALLOWED_CYCLES]
    assert not cycles, "import circles:\n" + "\n".join(" <-> ".join(sorted(c)) for c in cycles)


def _strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components, iteratively (no recursion limit on deep graphs)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            advanced = False
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    advanced = True
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                components.append(component)
    return components


def test_the_cycle_check_finds_a_circle():
    assert [sorted(c) for c in _strongly_connected({"a": {"b"}, "b": {"a"}, "c": {"a"}}) if len(c) > 1] == [["a", "b"]]


def test_the_walk_sees_in_function_imports():
    source = "def f():\n    from harness.cli import app\n"
    tree = ast.parse(source)
    assert any(isinstance(n, ast.ImportFrom) and n.module == "harness.cli" for n in ast.walk(tree))
