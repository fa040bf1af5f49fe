"""Upstream functions that look their argument up in a registry and raise for a name they do not
know (vLLM's `get_quantization_config`: `if quantization not in QUANTIZATION_METHODS: raise
ValueError`): read from the release's source, memoised with the index. The scan asks which calls
need their string arguments followed; the judge reads such a call as the registry read it makes."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

import msgspec

from harness.knowledge.model import Ref
from harness.knowledge.upstream.index import SymbolIndex


@dataclass
class KeyedLookup:
    """A function that looks its argument up in a registry and raises when it is not a key:
    `if name not in X: raise …` among its first statements (vLLM's get_quantization_config)."""

    position: int  # the parameter's position among those a caller passes
    param: str
    registry: str  # the registry's dotted path


_LOOKUP_DECODER = msgspec.msgpack.Decoder(KeyedLookup | None)


def keyed_lookup(index: SymbolIndex, ref: Ref) -> KeyedLookup | None:
    """The KeyedLookup `ref` (a module-level function of the release) is, or None. The test must
    come before anything else the body does, bar a docstring and logging (the raise then
    decides the call). Memoised per index."""
    return index.analysis("keyed_lookup", ref, _LOOKUP_DECODER, lambda: _keyed_lookup(index, ref))


_NOT_IN = re.compile(rb"\bif\s+\w+\s+not\s+in\s+\w+\s*:")


def _keyed_lookup(index: SymbolIndex, ref: Ref) -> KeyedLookup | None:
    info = index.function_info(ref) if ref.kind == "function" and "." not in ref.qualname else None
    text = index.sources().get(ref.module, b"") if info is not None else b""
    # (read from the text first: a module is parsed only where the function may have that test)
    head = b"\n".join(text.splitlines()[info.lineno - 1:info.lineno + 16]) if info is not None else b""
    tree = index.tree(ref.module) if _NOT_IN.search(head) else None
    function = next((n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == ref.qualname), None) if tree else None
    if function is None:
        return None
    params = [a.arg for a in (*function.args.posonlyargs, *function.args.args)]
    body = [s for s in function.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    test = body[0] if body and isinstance(body[0], ast.If) and not body[0].orelse else None
    if test is None or not (test.body and isinstance(test.body[-1], ast.Raise)):
        return None
    compare = test.test
    if not (isinstance(compare, ast.Compare) and len(compare.ops) == 1 and isinstance(compare.ops[0], ast.NotIn)
            and isinstance(compare.left, ast.Name) and compare.left.id in params and isinstance(compare.comparators[0], ast.Name)):
        return None
    found = index.resolve_in_scope(ref.module, compare.comparators[0].id)
    if not found.ok or found.ref.kind != "value":
        return None
    return KeyedLookup(params.index(compare.left.id), compare.left.id, found.ref.path)
