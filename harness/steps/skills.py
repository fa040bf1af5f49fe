"""The Agent Skills of the steps: `harness/skills/<step>/SKILL.md`, shipped in the package, each with
front matter (`name`, `description`) and then the step's decision rules in prose. Rules the code
applies are kept in the skill's one fenced ```yaml block, so the AI drafter and the code read
the same rules from the same file."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from harness.errors import HarnessError

SKILLS_DIR = Path(__file__).resolve().parents[1] / "skills"  # inside the package: a wheel ships it
PLUGIN_SKILLS = Path(".harness") / "skills"  # a plugin's own skills, inside its repository
LESSONS = "LESSONS.md"  # beside a plugin's skill: lessons the knowledge write-back added
_FRONT_MATTER = re.compile(r"\A---\n(?P<meta>.*?)\n---\n", re.DOTALL)
_RULES = re.compile(r"^```yaml\n(?P<rules>.*?)^```", re.DOTALL | re.MULTILINE)


@cache
def skill(name: str) -> tuple[dict[str, Any], str]:
    """(front matter, body) of skills/<name>/SKILL.md. HarnessError when it is missing or has
    no `name`/`description` front matter."""
    return _read(SKILLS_DIR / name / "SKILL.md")


def step_skill(name: str, plugin: Path | None = None) -> tuple[Path, str]:
    """(path, body) of the skill the agent follows for step `name`: the plugin's own
    `.harness/skills/<name>/SKILL.md` when it has one (it overrides the shipped one), else
    skills/<name>/SKILL.md; followed by the plugin's `.harness/skills/<name>/LESSONS.md`, the
    lessons earlier ports wrote back (harness.steps.knowledge). HarnessError when the skill
    chosen is malformed."""
    own = plugin / PLUGIN_SKILLS / name if plugin else None
    path = own / "SKILL.md" if own and (own / "SKILL.md").is_file() else SKILLS_DIR / name / "SKILL.md"
    body = _read(path)[1]
    lessons = own / LESSONS if own else None
    if lessons and lessons.is_file():
        body = f"{body.rstrip()}\n\n## Lessons from earlier ports ({lessons})\n\n{lessons.read_text(encoding='utf-8')}"
    return path, body


def _read(path: Path) -> tuple[dict[str, Any], str]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise HarnessError(f"cannot read skill {path}: {exc.strerror or exc}") from None
    match = _FRONT_MATTER.match(text)
    meta = yaml.safe_load(match["meta"]) if match else None
    if not isinstance(meta, dict) or not {"name", "description"} <= meta.keys():
        raise HarnessError(f"{path}:1: a skill starts with front matter naming `name` and `description`")
    return meta, text[match.end():]


def skill_rules(name: str) -> dict[str, Any]:
    """The rules in the skill's ```yaml block (a mapping). HarnessError when there is none."""
    _, body = skill(name)
    match = _RULES.search(body)
    rules = yaml.safe_load(match["rules"]) if match else None
    if not isinstance(rules, dict):
        raise HarnessError(f"{SKILLS_DIR / name / 'SKILL.md'}: no ```yaml block of rules")
    return rules
