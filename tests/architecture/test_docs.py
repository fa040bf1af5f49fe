"""The docs navigate: the README stays short (install, quickstart, one line per command, where to
find things), and every relative link and repository path the README and docs/ name exists, so
a file that moves takes its pointers with it."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
PAGES = [README, *sorted((REPO / "docs").rglob("*.md"))]
README_LIMIT = 10_000  # bytes: the details live in docs/

_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
_CODE = re.compile(r"`([^`\n]+)`")
# a path into the repository, as the docs write one in code: `harness/steps/base.py`, `docs/`
_REPO_PATH = re.compile(r"^(?:harness|benchmarks|tests|scripts|runbooks|recipes|reports|docs)/[\w./-]*$")
# named in code but not files of this repository: git branches harness creates
_NOT_FILES = re.compile(r"^harness/port-")


def _slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = re.sub(r"^```.*?^```", "", page.read_text(encoding="utf-8"), flags=re.DOTALL | re.MULTILINE)
    return {_slug(m.group(1)) for m in re.finditer(r"^#+ (.+)$", text, flags=re.MULTILINE)}


def _prose(page: Path) -> str:
    """The page without its fenced code blocks (commands, diagrams)."""
    return re.sub(r"^```.*?^```", "", page.read_text(encoding="utf-8"), flags=re.DOTALL | re.MULTILINE)


def test_the_readme_stays_under_10_kb():
    assert README.stat().st_size <= README_LIMIT, f"README.md is {README.stat().st_size} bytes: move details to docs/"


def test_every_relative_link_in_the_docs_resolves():
    broken = []
    for page in PAGES:
        for target in _LINK.findall(_prose(page)):
            if re.match(r"^[a-z]+:", target):
                continue  # a URL
            path, _, anchor = target.partition("#")
            resolved = (page.parent / path).resolve() if path else page
            if not resolved.exists():
                broken.append(f"{page.relative_to(REPO)}: {target} (no such file)")
            elif anchor and resolved.suffix == ".md" and anchor not in _anchors(resolved):
                broken.append(f"{page.relative_to(REPO)}: {target} (no such heading)")
    assert broken == []


def test_every_repository_path_the_docs_name_exists():
    missing = []
    for page in PAGES:
        for code in _CODE.findall(_prose(page)):
            if _REPO_PATH.match(code) and not _NOT_FILES.match(code) and not (REPO / code).exists():
                missing.append(f"{page.relative_to(REPO)}: {code}")
    assert missing == []
