"""The records a module table is made of (what one Python module defines, imports and
re-exports: see harness.knowledge.upstream.symbols), their msgpack codec, and the small AST readings
extraction and the plugin scan share (dotted names, parameters, body fingerprints).
"""

from __future__ import annotations

import ast
import hashlib
import re
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import NamedTuple

import msgspec

_COMMENT_LINE = re.compile(r"^[ \t]*#.*$", re.M)


class Param(NamedTuple):
    name: str
    kind: str  # posonly | pos | var | kwonly | varkw
    default: str | None  # source of the default (shortened), None when required


def forwards_anything(params: tuple[Param, ...] | None) -> bool:
    """Whether a callable with these parameters takes whatever a caller passes after its
    required positional ones: `*args` and `**kwargs`, and no keyword-only parameter without a
    default (one a forwarding call never names: TypeError, inspect.Signature.bind)."""
    kinds = {p.kind for p in params or ()}
    return "var" in kinds and "varkw" in kinds and not any(p.kind == "kwonly" and p.default is None for p in params)


class FunctionInfo(NamedTuple):
    qualname: str  # "func" or "Class.method" (nested: "Outer.Inner.method")
    lineno: int
    end_lineno: int
    params: tuple[Param, ...]
    body_hash: str  # whitespace-, comment- and docstring-insensitive
    decorators: tuple[str, ...]


class ClassInfo(NamedTuple):
    qualname: str
    lineno: int
    end_lineno: int
    # Dotted source expressions, resolved lazily in the module's scope; `F()` stands for what a
    # class made by the factory F inherits (see harness.knowledge.upstream.external), `?<source>` for a
    # base computed at class creation.
    bases: tuple[str, ...]
    members: dict[str, str]  # name -> def | class | value
    decorators: tuple[str, ...] = ()  # dotted source expressions, outermost first
    metaclass: str | None = None  # the `metaclass=` expression (same forms as a base)
    open_members: str | None = None  # why `members` may be incomplete (computed at import)
    # annotated class-level names in order, and whether each has a default: what a synthesised
    # __init__ takes (dataclass, NamedTuple, msgspec.Struct)
    fields: tuple[tuple[str, bool], ...] = ()
    keyword_only: bool = False  # `@dataclass(kw_only=True)` / `class X(Struct, kw_only=True)`


class Binding(NamedTuple):
    kind: str  # def | class | value | alias | module | from
    target: str = ""  # alias: dotted expression; module: module name; from: "module:name"
    lineno: int = 0
    fallback: bool = False  # from: an `except ImportError:` branch binds the name if the import fails


class InstanceAttributes(NamedTuple):
    names: dict[str, int]  # attribute -> first line assigning it (self.x = …, setattr(self, "x", …))
    dynamic: tuple[str, ...]  # why an instance may have attributes not listed (empty when none)


@dataclass
class ModuleTable:
    name: str
    path: str  # relative to the source root
    is_package: bool
    names: dict[str, Binding] = field(default_factory=dict)
    star_imports: list[str] = field(default_factory=list)
    all_names: tuple[str, ...] | None = None
    all_unknown: bool = False  # __all__ is built by code the extractor cannot evaluate
    functions: dict[str, FunctionInfo] = field(default_factory=dict)
    classes: dict[str, ClassInfo] = field(default_factory=dict)
    has_getattr: bool = False  # a module-level __getattr__ (PEP 562) answers names at run time
    getattr_names: tuple[str, ...] | None = None  # all it can answer, when its code says so
    # a name it answers that the module also imports under `if TYPE_CHECKING:` (vllm/__init__.py's
    # lazy MODULE_ATTRS): that import's binding, what the lazy lookup hands back
    getattr_bindings: dict[str, Binding] = field(default_factory=dict)
    imports: list[str] = field(default_factory=list)  # absolute module names imported anywhere
    error: str | None = None  # set when the file does not parse


_ENCODER = msgspec.msgpack.Encoder()
_TABLE_DECODER = msgspec.msgpack.Decoder(ModuleTable)


def encode_table(table: ModuleTable) -> bytes:
    """`table` as msgpack bytes (what the symbol-index cache stores per module)."""
    return _ENCODER.encode(table)


def decode_table(blob: bytes) -> ModuleTable:
    """The ModuleTable `encode_table` made. Bytes that are not one, torn or planted, raise
    msgspec.DecodeError (types are checked field by field); nothing in them is ever run."""
    return _TABLE_DECODER.decode(blob)


def signature_text(params: tuple[Param, ...]) -> str:
    parts: list[str] = []
    seen_kwonly = False
    for index, param in enumerate(params):
        if param.kind == "kwonly" and not seen_kwonly:
            parts.append("*")
            seen_kwonly = True
        prefix = {"var": "*", "varkw": "**"}.get(param.kind, "")
        if param.kind == "var":
            seen_kwonly = True
        text = prefix + param.name + (f"={param.default}" if param.default is not None else "")
        parts.append(text)
        if param.kind == "posonly" and (index + 1 == len(params) or params[index + 1].kind != "posonly"):
            parts.append("/")
    return "(" + ", ".join(parts) + ")"


def walk(node: ast.AST) -> Iterator[ast.AST]:
    """`ast.walk`: the same nodes in the same breadth-first order, at about 60 % of its cost
    (no generator per node; the scan and the index walk every plugin module several times)."""
    todo = [node]
    append = todo.append
    for current in todo:  # a list extended while iterated: breadth first
        for name in current._fields:
            value = getattr(current, name, None)
            if value.__class__ is list:
                for item in value:
                    if isinstance(item, ast.AST):
                        append(item)
            elif isinstance(value, ast.AST):
                append(value)
        yield current


def parse_source(source: bytes) -> ast.Module:
    """`source` parsed, without the warnings upstream code's invalid escapes raise."""
    with warnings.catch_warnings():  # invalid escapes etc. in upstream code are not ours to report
        warnings.simplefilter("ignore", (SyntaxWarning, DeprecationWarning))
        return ast.parse(source)


def resolve_relative(module: str, is_package: bool, level: int, target: str | None) -> str:
    """The absolute module named by `from <dots><target> import …` inside `module`."""
    if level == 0:
        return target or ""
    package = module if is_package else module.rpartition(".")[0]
    parts = package.split(".") if package else []
    if level > 1:
        parts = parts[: len(parts) - (level - 1)]
    base = ".".join(parts)
    if target:
        return f"{base}.{target}" if base else target
    return base


def dotted(node: ast.AST) -> str | None:
    """`a.b.c` for Name/Attribute chains (also through a call's func, for decorators)."""
    if isinstance(node, ast.Call):
        node = node.func
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    if isinstance(node, ast.Subscript) and not parts:  # Generic[T] as a base
        return dotted(node.value)
    return None  # `x[k].name`: an item's attribute, not one of `x`


def body_fingerprint(node: ast.FunctionDef | ast.AsyncFunctionDef, lines: list[str]) -> str:
    body = node.body
    if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant) and isinstance(body[0].value.value, str):
        body = body[1:]
    if not body:
        return hashlib.blake2b(b"", digest_size=8).hexdigest()
    text = "\n".join(lines[body[0].lineno - 1 : node.end_lineno])
    text = " ".join(_COMMENT_LINE.sub("", text).split())  # layout and comment lines don't count
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


# body_fingerprint of bodies that do nothing: empty (a docstring only), `pass`, `...`, `return`
EMPTY_BODIES = frozenset(hashlib.blake2b(text.encode(), digest_size=8).hexdigest() for text in ("", "pass", "...", "return", "return None"))


def raises_only(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether the function's body (a docstring aside) is one `raise` statement: every call of it
    fails whatever it is passed (vllm-ascend's AscendMLAImpl.forward_mha, a stub of an abstract
    method: `raise NotImplementedError("forward_mha is not supported …")`)."""
    body = node.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
        body = body[1:]
    return len(body) == 1 and isinstance(body[0], ast.Raise)


def function_params(args: ast.arguments) -> tuple[Param, ...]:
    def default_text(node: ast.AST | None) -> str | None:
        if node is None:
            return None
        if isinstance(node, ast.Constant):
            text = repr(node.value)
        else:
            text = dotted(node) or "…"
        return text if len(text) <= 40 else text[:37] + "..."

    positional = [*args.posonlyargs, *args.args]
    defaults: list[ast.AST | None] = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    params = [
        Param(arg.arg, "posonly" if index < len(args.posonlyargs) else "pos", default_text(default))
        for index, (arg, default) in enumerate(zip(positional, defaults))
    ]
    if args.vararg:
        params.append(Param(args.vararg.arg, "var", None))
    for arg, default in zip(args.kwonlyargs, args.kw_defaults):
        params.append(Param(arg.arg, "kwonly", default_text(default)))
    if args.kwarg:
        params.append(Param(args.kwarg.arg, "varkw", None))
    return tuple(params)


# ----------------------------------------------------------------------------- literal strings
# What a few lines of code build from literals, names standing for literal nodes: setup.py's
# `install_requires=[f"vllm=={VLLM_VERSION}"]`, an upstream loop's `setattr(self, f"{name}_x", …)`.
# Nothing else is evaluated.


def module_literals(tree: ast.Module) -> dict[str, ast.expr]:
    """{name: value node} of the module's top-level `name = value` assignments (the last one)."""
    return {stmt.targets[0].id: stmt.value for stmt in tree.body
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)}


def literal_value(node: ast.expr | None, env: dict[str, ast.expr], depth: int = 0) -> ast.expr | None:
    """What `node` holds, as a literal node, where names, item subscripts and tuples decide it;
    None where it is not known (or the names lead in a circle)."""
    if depth > 20:
        return None
    if isinstance(node, ast.Name):
        held = env.get(node.id)
        return held if held is None or isinstance(held, (ast.Constant, ast.Tuple, ast.List)) else literal_value(held, env, depth + 1)
    if isinstance(node, ast.Tuple):
        items = [literal_value(e, env, depth + 1) or e for e in node.elts]
        return ast.Tuple(elts=items, ctx=ast.Load())
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, int):
        held = literal_value(node.value, env, depth + 1)
        if isinstance(held, (ast.Tuple, ast.List)) and -len(held.elts) <= node.slice.value < len(held.elts):
            return held.elts[node.slice.value]
        return None
    if isinstance(node, (ast.JoinedStr, ast.BinOp, ast.Call)):  # a string built of known parts
        text = literal_text(node, env, depth + 1)
        return None if text is None else ast.Constant(text)
    return node if isinstance(node, ast.Constant) else None


def literal_text(node: ast.expr | None, env: dict[str, ast.expr], depth: int = 0) -> str | None:
    """The string `node` builds: a constant, a name holding one, an f-string of those, `a + b`,
    `"%s_x" % (a,)`, `"{}_x".format(a)`; None where a part is not a known string."""
    if depth > 20:
        return None
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, str) else None
    if isinstance(node, (ast.Name, ast.Subscript)):
        held = literal_value(node, env, depth + 1)
        return held.value if isinstance(held, ast.Constant) and isinstance(held.value, str) else None
    if isinstance(node, ast.JoinedStr):
        parts = [literal_text(v.value, env, depth + 1) if isinstance(v, ast.FormattedValue) and v.conversion in (-1, 115) and v.format_spec is None
                 else literal_text(v, env, depth + 1) if isinstance(v, ast.Constant) else None for v in node.values]
        return None if None in parts else "".join(parts)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = literal_text(node.left, env, depth + 1), literal_text(node.right, env, depth + 1)
        return None if left is None or right is None else left + right
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod) and isinstance(node.left, ast.Constant) and isinstance(node.left.value, str):
        items = node.right.elts if isinstance(node.right, ast.Tuple) else [node.right]
        values = [literal_text(item, env, depth + 1) for item in items]
        try:
            return None if None in values else node.left.value % tuple(values)
        except (TypeError, ValueError):
            return None
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format" and not node.keywords
            and isinstance(node.func.value, ast.Constant) and isinstance(node.func.value.value, str)):
        values = [literal_text(arg, env, depth + 1) for arg in node.args]
        try:
            return None if None in values else node.func.value.value.format(*values)
        except (IndexError, KeyError, ValueError):
            return None
    return None


def bind_literal(target: ast.expr, value: ast.expr | None, env: dict[str, ast.expr]) -> None:
    """Bind a loop or assignment target; a name whose value is not known is dropped."""
    if isinstance(target, ast.Name):
        if value is None:
            env.pop(target.id, None)
        else:
            env[target.id] = value
    elif isinstance(target, (ast.Tuple, ast.List)):
        items = value.elts if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts) else [None] * len(target.elts)
        for item, element in zip(target.elts, items):
            bind_literal(item, element, env)
