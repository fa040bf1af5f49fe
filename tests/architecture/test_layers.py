"""Layers run one way: no module imports from a layer above its own (docs/architecture.md).
In-function imports count too: they are how an upward import hides."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "harness"

# Lowest first; a module may import from its own layer and the layers below.
LAYERS = [
    ["harness", "harness.errors", "harness.util"],
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


def imported(path: Path, module: str) -> list[tuple[str, int]]:
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    names = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
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


def test_the_walk_sees_in_function_imports():
    source = "def f():\n    from harness.cli import app\n"
    tree = ast.parse(source)
    assert any(isinstance(n, ast.ImportFrom) and n.module == "harness.cli" for n in ast.walk(tree))
