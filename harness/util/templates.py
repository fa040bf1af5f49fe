"""The one jinja2 environment: reports (`harness/report/templates`) and knowledge files
(`harness/knowledge/templates`) are rendered with the same settings and filters.

Undefined names are errors (StrictUndefined), so a template cannot silently print nothing for
a field the data lacks."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined

_PACKAGE = Path(__file__).resolve().parent.parent
TEMPLATE_DIRS = (_PACKAGE / "report" / "templates", _PACKAGE / "knowledge" / "templates")


def cell(value: Any) -> str:
    """One GitHub-markdown table cell: no pipes or newlines may escape it."""
    if value is None:
        return ""
    return str(value).replace("|", "\\|").replace("\r", " ").replace("\n", " ")


@cache
def environment() -> Environment:
    """The shared environment (built once per process). Filters: `cell`."""
    env = Environment(
        loader=FileSystemLoader([str(d) for d in TEMPLATE_DIRS]),
        undefined=StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )
    env.filters["cell"] = cell
    return env


def render(template: str, **context: Any) -> str:
    """Render one template by file name (e.g. "step.md.j2") with `context`.
    jinja2.TemplateNotFound when no template directory holds it."""
    return environment().get_template(template).render(**context)
