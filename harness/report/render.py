"""Render the run's reports from evidence on disk and the run's state.

Reports are outputs only: rendering twice from the same evidence gives the same bytes, and any
report can be deleted and regenerated. Writes go through a temp file + rename so a kill never
leaves half a report.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined

from harness.workflow.hashing import evidence_files
from harness.workflow.layout import RunLayout

TEMPLATES = Path(__file__).parent / "templates"


def _cell(value: Any) -> str:
    """One GitHub-markdown table cell: no pipes or newlines may escape it."""
    if value is None:
        return ""
    return str(value).replace("|", "\\|").replace("\r", " ").replace("\n", " ")


def gate_label(gate: dict | None) -> str:
    if not gate or gate.get("decision") in (None, "none"):
        return "—"
    decision = gate["decision"]
    if decision == "pending":
        return "waiting for review" if "after_rejection" not in gate else "pending (rerun after rejection)"
    if decision == "approve":
        if gate.get("valid") is False:
            return "approval invalidated: evidence changed"
        return "approved (automatic)" if gate.get("automatic") else "approved"
    return f"rejected: {gate.get('reason', '')}"


_env = Environment(
    loader=FileSystemLoader(str(TEMPLATES)),
    undefined=StrictUndefined,
    keep_trailing_newline=True,
    trim_blocks=True,
    lstrip_blocks=True,
    autoescape=False,
)
_env.filters["cell"] = _cell
_env.filters["gate_label"] = gate_label


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
    return path


def render_step_report(
    run: RunLayout, result, gate: dict | None, history: list[dict], inputs, evidence_hash: str | None
) -> Path:
    slug = f"{result.number:02d}-{result.step}"
    evidence_dir = run.evidence_dir(slug)
    template_name = f"{result.step}.md.j2"
    if not (TEMPLATES / template_name).is_file():
        template_name = "step.md.j2"
    text = _env.get_template(template_name).render(
        run_id=run.run_id,
        inputs=inputs,
        result=result,
        slug=slug,
        gate=gate,
        rejections=[d for d in history if d["decision"] == "reject"],
        evidence_link=f"evidence/{slug}",
        files=evidence_files(evidence_dir),
        evidence_hash=evidence_hash,
    )
    return _write(run.step_report(slug), text)


def render_summary(run: RunLayout, view: dict) -> Path:
    text = _env.get_template("summary.md.j2").render(view=view, inputs=view["inputs"])
    return _write(run.summary, text)


def render_all(run: RunLayout, view: dict) -> None:
    """Re-render every finished step's report (their gate lines change) and the summary."""
    from harness.steps.base import load_result
    from harness.workflow.state import RunInputs

    inputs = RunInputs.model_validate(view["inputs"])
    for step in view["steps"]:
        result = load_result(run.evidence_dir(step["slug"]))
        if result is not None:
            render_step_report(run, result, step["gate"], step["history"], inputs, step["current_hash"])
    render_summary(run, view)
