"""The one YAML loader: every YAML file the project reads (runbooks, recipes, feature files)
goes through `load_yaml_model`, so every problem is reported the same way, as one line
`file:line: field: message` located through the YAML node positions.

PyYAML's safe loader is used for the data; its node tree (kept alongside) gives the lines.
Duplicate keys, which PyYAML would silently merge, are rejected.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from harness.errors import InputError

Model = TypeVar("Model", bound=BaseModel)


class YamlError(InputError):
    """A YAML file that does not parse or does not validate; `str()` is `file:line: field: message`."""

    def __init__(self, path: Path, line: int, message: str, label: str | None = None):
        self.path, self.line, self.label, self.message = path, line, label, message
        super().__init__(f"{path}:{line}: {label}: {message}" if label else f"{path}:{line}: {message}")


def parse_yaml(text: str, path: Path) -> tuple[Any, yaml.Node | None]:
    """Safe-load YAML text, keeping the node tree so errors can be located.
    YamlError on invalid YAML or a duplicate key."""
    loader = yaml.SafeLoader(text)
    try:
        root = loader.get_single_node()
        if root is None:
            return None, None
        _reject_duplicate_keys(root, path)
        return loader.construct_document(root), root
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = " ".join(filter(None, [exc.context, exc.problem]))
        raise YamlError(path, mark.line + 1 if mark else 1, f"invalid YAML: {problem}") from None
    except yaml.YAMLError as exc:
        raise YamlError(path, 1, f"invalid YAML: {exc}") from None
    finally:
        loader.dispose()


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
    for part in loc:
        child = None
        if isinstance(node, yaml.MappingNode) and isinstance(part, str):
            child = next((v for k, v in node.value if getattr(k, "value", None) == part), None)
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
    if len(errors) > 1:
        message += f" (and {len(errors) - 1} more problem{'s' if len(errors) > 2 else ''})"
    return YamlError(path, line, message, label)


def load_yaml_model(path: str | Path, model: type[Model], *, what: str, shape: str,
                    context: dict[str, Any] | None = None) -> Model:
    """Read `path` and validate it as `model`.

    `what` names the file kind in the unreadable-file message ("cannot read runbook X: ...");
    `shape` says what the top level must be when it is not a mapping. Every failure is one
    InputError line: unreadable file, invalid YAML, duplicate key, wrong top level, or the
    first validation error as `file:line: field: message`. `context` goes to pydantic's
    validators (e.g. the directory relative paths are resolved against)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    data, root = parse_yaml(text, path)
    if not isinstance(data, dict):
        raise YamlError(path, 1, shape)
    try:
        return model.model_validate(data, context=context)
    except ValidationError as exc:
        raise validation_error(exc, root, path) from None
