"""The one YAML loader: every YAML file the project reads (runbooks, recipes, feature files)
goes through `load_yaml_model`, so every problem is reported the same way, as one line
`file:line: field: message` located through the YAML node positions.

PyYAML's safe loader is used for the data; its node tree (kept alongside) gives the lines.
Duplicate keys, which PyYAML would silently merge, are rejected.

Inputs are bounded before they are trusted: only a regular file of at most MAX_YAML_BYTES is
read (a FIFO, a device such as /dev/zero, or a huge file would hang or exhaust memory), and a
document whose aliases expand past MAX_ALIAS_EXPANSION nodes (a "billion laughs" bomb: PyYAML
shares aliased nodes, but every walk of the data — duplicate-key check, validation — expands
them), refers to itself, or nests too deep for the parser is refused as one line.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from harness.errors import InputError

Model = TypeVar("Model", bound=BaseModel)

MAX_YAML_BYTES = 4 * 1024 * 1024  # runbooks, recipes and feature files are a few KB
MAX_ALIAS_EXPANSION = 100_000  # nodes reached through aliases, beyond the document's own


class YamlError(InputError):
    """A YAML file that does not parse or does not validate; `str()` is `file:line: field: message`."""

    def __init__(self, path: Path, line: int, message: str, label: str | None = None):
        self.path, self.line, self.label, self.message = path, line, label, message
        super().__init__(f"{path}:{line}: {label}: {message}" if label else f"{path}:{line}: {message}")


def read_yaml_text(path: str | Path, what: str, limit: int = MAX_YAML_BYTES) -> str:
    """The UTF-8 text of the YAML input `path`, read only when it is a regular file (symlinks
    followed) of at most `limit` bytes. InputError `cannot read <what> <path>: <why>` otherwise:
    missing or unreadable, not a regular file, too large, or not UTF-8."""
    path = Path(path)

    def refuse(why: str) -> InputError:
        return InputError(f"cannot read {what} {path}: {why}")

    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer; fstat then judges what was opened
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise refuse(exc.strerror or str(exc)) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise refuse(f"not a regular file (a {_file_kind(info.st_mode)})")
        if info.st_size > limit:
            raise refuse(f"{info.st_size / 2**20:.1f} MB, over the {limit / 2**20:g} MB limit for YAML inputs")
        chunks, size = [], 0
        while size <= limit:  # never more than limit + 1 bytes: the file may grow after fstat
            chunk = os.read(fd, limit + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        data = b"".join(chunks)
    except OSError as exc:
        raise refuse(exc.strerror or str(exc)) from None
    finally:
        os.close(fd)
    if len(data) > limit:
        raise refuse(f"over the {limit / 2**20:g} MB limit for YAML inputs")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise refuse(f"line {line}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None


def _file_kind(mode: int) -> str:
    kinds = ((stat.S_ISDIR, "directory"), (stat.S_ISFIFO, "FIFO"), (stat.S_ISCHR, "character device"),
             (stat.S_ISBLK, "block device"), (stat.S_ISSOCK, "socket"))
    return next((name for test, name in kinds if test(mode)), "special file")


def parse_yaml(text: str, path: Path) -> tuple[Any, yaml.Node | None]:
    """Safe-load YAML text, keeping the node tree so errors can be located.
    YamlError on invalid YAML, a duplicate key, an alias that refers to itself or expands past
    MAX_ALIAS_EXPANSION nodes, or nesting deeper than the parser can follow."""
    loader = yaml.SafeLoader(text)
    try:
        root = loader.get_single_node()
        if root is None:
            return None, None
        _check_aliases(root, path)
        _reject_duplicate_keys(root, path)
        return loader.construct_document(root), root
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = " ".join(filter(None, [exc.context, exc.problem]))
        raise YamlError(path, mark.line + 1 if mark else 1, f"invalid YAML: {problem}") from None
    except yaml.YAMLError as exc:
        raise YamlError(path, 1, f"invalid YAML: {exc}") from None
    except RecursionError:  # PyYAML composes recursively, a few frames per level of nesting
        raise YamlError(path, loader.get_mark().line + 1, "invalid YAML: nested too deep") from None
    finally:
        loader.dispose()


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    return node.value if isinstance(node, yaml.SequenceNode) else []


def _check_aliases(root: yaml.Node, path: Path) -> None:
    """Refuse a node graph that is not a tree of bounded size: an alias is the same node object
    as its anchor, so a node reached twice is an alias; count the nodes the document expands to
    (each distinct collection once, bottom-up, so the bomb itself is never expanded; a scalar
    is one node) and find cycles. Iterative: the graph may be deeper than Python's stack."""
    expanded: dict[int, int] = {}  # id(collection node) -> nodes in its expansion
    on_path: set[int] = set()
    distinct = 1  # nodes as written (each alias one), counted as their parents are reached
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            on_path.discard(key)
            expanded[key] = 1 + sum(expanded.get(id(child), 1) for child in _children(node))
            if expanded[key] - distinct > MAX_ALIAS_EXPANSION:
                raise YamlError(path, node.start_mark.line + 1, f"aliases expand this document past "
                                f"{MAX_ALIAS_EXPANSION} extra nodes (refused: an alias bomb?)")
            continue
        if key in on_path:
            raise YamlError(path, node.start_mark.line + 1, "an alias refers to a node that contains it")
        if key in expanded:
            continue
        children = _children(node)
        distinct += len(children)
        on_path.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in reversed(children)
                     if not isinstance(child, yaml.ScalarNode) and id(child) not in expanded)


def _reject_duplicate_keys(node: yaml.Node, path: Path) -> None:
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode):
                if key.value in seen:
                    raise YamlError(path, key.start_mark.line + 1, f"duplicate key {key.value!r}")
                seen.add(key.value)
            _reject_duplicate_keys(value, path)
    elif isinstance(node, yaml.SequenceNode):
        for item in node.value:
            _reject_duplicate_keys(item, path)


def locate(root: yaml.Node | None, loc: tuple[Any, ...]) -> tuple[int, str]:
    """Follow a pydantic error location through the YAML nodes: the line of the deepest node
    reached and the field path as written (`accuracy[0].baseline.score`)."""
    node = root
    label = ""
    for position, part in enumerate(loc):
        child = None
        if isinstance(node, yaml.MappingNode) and isinstance(part, str):
            child = next((v for k, v in node.value if getattr(k, "value", None) == part), None)
            if child is None and position < len(loc) - 1:
                continue  # a union branch's tag (`launcher.slurm.partiton`): not in the document
            if child is None:  # a missing key: name it, point at its parent mapping
                return node.start_mark.line + 1, f"{label}.{part}" if label else part
            label = f"{label}.{part}" if label else part
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            child = node.value[part]
            label = f"{label}[{part}]"
        if child is None:
            break  # union branch names and the like: not part of the document
        node = child
    line = node.start_mark.line + 1 if node is not None else 1
    return line, label or "(top level)"


def validation_error(exc: ValidationError, root: yaml.Node | None, path: Path) -> YamlError:
    """The first pydantic error as a located YamlError (with a count of the others)."""
    errors = exc.errors(include_url=False)
    line, label = locate(root, tuple(errors[0]["loc"]))
    message = errors[0]["msg"].removeprefix("Value error, ")
    if errors[0]["type"] == "union_tag_invalid":  # pydantic's words ("Input tag … found using …") read as its internals
        context = errors[0]["ctx"]
        message = f"unknown {context['discriminator'].strip(chr(39))} {context['tag']!r}; expected one of {context['expected_tags']}"
    if len(errors) > 1:
        message += f" (and {len(errors) - 1} more problem{'s' if len(errors) > 2 else ''})"
    return YamlError(path, line, message, label)


def load_yaml_model(path: str | Path, model: type[Model], *, what: str, shape: str,
                    context: dict[str, Any] | None = None) -> Model:
    """Read `path` and validate it as `model`.

    `what` names the file kind in the unreadable-file message ("cannot read runbook X: ...");
    `shape` says what the top level must be when it is not a mapping. Every failure is one
    InputError line: unreadable, special or oversized file (`read_yaml_text`), invalid YAML,
    duplicate key, alias bomb (`parse_yaml`), wrong top level, or the
    first validation error as `file:line: field: message`. `context` goes to pydantic's
    validators (e.g. the directory relative paths are resolved against)."""
    path = Path(path)
    data, root = parse_yaml(read_yaml_text(path, what), path)
    if not isinstance(data, dict):
        raise YamlError(path, 1, shape)
    try:
        return model.model_validate(data, context=context)
    except ValidationError as exc:
        raise validation_error(exc, root, path) from None
