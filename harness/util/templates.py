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
TEMPLATE_DIRS = (_PACKAGE / "report" / "templates", _PACKAGE / "knowledge" / "templates", _PACKAGE / "evidence" / "templates")


def cell(value: Any) -> str:
    """One GitHub-markdown table cell: no pipes or newlines may escape it."""
    if value is None:
        return ""
    return str(value).replace("|", "\\|").replace("\r", " ").replace("\n", " ")


_POINTS = ("difference", "ci_low", "ci_high", "margin")  # accuracy differences, as fractions


def measure(value: Any, key: str) -> str:
    """A measurement rounded to what it means, by its metric name: accuracies in % and their
    differences in points (to 0.1), milliseconds to 0.1, throughputs and p-values to 3
    significant digits, other floats to 4; ints, bools and text as they are."""
    if not isinstance(value, float):
        return "" if value is None else str(value)
    name = key.lower()
    if "accuracy" in name and 0 <= value <= 1:
        return f"{100 * value:.1f} %"
    if name in _POINTS and abs(value) <= 1:
        return f"{100 * value:+.1f} pt" if name != "margin" else f"{100 * value:.1f} pt"
    if name.endswith("_ms") or "_ms_" in name:
        return f"{value:.1f}"
    if "throughput" in name or name.startswith("p_") or name in ("alpha", "ci_level"):
        return f"{value:.3g}"
    return f"{value:.4g}"


@cache
def environment() -> Environment:
    """The shared environment (built once per process). Filters: `cell`, `measure`."""
    env = Environment(
        loader=FileSystemLoader([str(d) for d in TEMPLATE_DIRS]),
        undefined=StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )
    env.filters["cell"] = cell
    env.filters["measure"] = measure
    return env


def render(template: str, **context: Any) -> str:
    """Render one template by file name (e.g. "step.md.j2") with `context`.
    jinja2.TemplateNotFound when no template directory holds it."""
    return environment().get_template(template).render(**context)
