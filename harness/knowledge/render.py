"""Markdown for the knowledge files, rendered from their data with jinja2 (never by hand)."""

from __future__ import annotations

from jinja2 import Environment, PackageLoader, StrictUndefined

_ENV = Environment(
    loader=PackageLoader("harness.knowledge", "templates"),
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
    keep_trailing_newline=True,
)
_ENV.filters["cell"] = lambda value: "" if value is None else str(value).replace("|", "\\|").replace("\n", " ")


def render_markdown(template: str, **context) -> str:
    return _ENV.get_template(template).render(**context)
