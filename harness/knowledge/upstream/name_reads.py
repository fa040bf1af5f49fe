"""How a release reads a name a plugin patch sets: whether a module reads its own global of
that name, and whether some code reads an attribute of that name only optionally.

Both decide what `mod.name = X` / `Cls.name = X` means when the release lacks `name` there
(Judge._added_name): a replacement of something upstream still reads, an addition upstream
looks for, or an addition only the plugin uses.
"""

from __future__ import annotations

import ast
import re
import symtable

from harness.knowledge.model import walk
from harness.knowledge.upstream.index import SymbolIndex


def reads_module_global(index: SymbolIndex, module: str, name: str) -> bool:
    """Whether code of `module` reads its module-level global `name`: at module level, or in a
    function or class body where `name` is not bound locally (Python's scoping, from the
    standard library's symtable). A function that imports it itself (`from vllm.platforms import
    current_platform` inside vllm 0.11's vllm/config/__init__.py functions) reads its own local,
    so a patch of the module's global changes nothing there. True when the source cannot be
    read by symtable (unsure: as if it did)."""
    source = index.sources().get(module)
    if source is None or name.encode() not in source:
        return False
    try:
        top = symtable.symtable(source.decode("utf-8", "replace"), index.files[module][0], "exec")
    except (SyntaxError, ValueError):
        return True
    queue = [top]
    while queue:
        table = queue.pop()
        try:
            symbol = table.lookup(name)
        except KeyError:
            symbol = None
        if symbol is not None and symbol.is_referenced() and (table.get_type() == "module" or symbol.is_global()):
            return True
        queue.extend(table.get_children())
    return False


def reads_attribute(index: SymbolIndex, module: str, name: str) -> bool:
    """Whether code of `module` may read an attribute `name`: `x.name`, or the name as a string
    (`getattr(x, "name")`). A bare `name` is a variable, not a class's member (vllm 0.11's
    gpu_model_runner.py calls the function `set_forward_context(…)` it imports; a patch
    setting GPUModelRunner.set_forward_context is read by none of it)."""
    source = index.sources().get(module) or b""
    if name.encode() not in source:
        return False
    return re.search(rb"\." + re.escape(name.encode()) + rb"\b|[\"']" + re.escape(name.encode()) + rb"[\"']", source) is not None


def optional_read(index: SymbolIndex, module: str, name: str) -> str | None:
    """The first site ("relpath:line") in `module` that reads an attribute `name` only if it is
    there: `getattr(x, "name", default)` or `hasattr(x, "name")` (vllm 0.11's AsyncMPClient
    takes `getattr(self.__class__, "process_engine_outputs", None)` as an optional output
    handler, which DPLBAsyncMPClient defines and a plugin may add to DPAsyncMPClient, all in
    vllm/v1/engine/core_client.py). None when there is none. Only the module that holds the
    patched object is searched: a generic name is read optionally somewhere in any release."""
    text = index.sources().get(module) or b""
    if f'"{name}"'.encode() not in text and f"'{name}'".encode() not in text:
        return None
    tree = index.tree(module)
    for node in walk(tree) if tree is not None else ():
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
            continue
        optional = (node.func.id == "getattr" and len(node.args) == 3) or (node.func.id == "hasattr" and len(node.args) == 2)
        if optional and isinstance(node.args[1], ast.Constant) and node.args[1].value == name:
            return f"{index.files[module][0]}:{node.lineno}"
    return None
