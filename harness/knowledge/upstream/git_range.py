"""An upstream git range split into steps: the commits a plugin that follows upstream main
(vllm-ascend's daily "main to main" job) moves across between two refs, oldest first, and where
to check the plugin on the way, so the step that introduced a finding names a short range."""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import BaseModel

from harness.errors import HarnessError


class Commit(BaseModel):
    sha: str  # full hex
    subject: str

    def short(self) -> str:
        """"sha10 subject", as Finding.commits writes a commit."""
        return f"{self.sha[:10]} {self.subject}"


def first_parent_commits(repo: Path, old: str, new: str) -> list[Commit]:
    """The commits `old..new` along `new`'s first parents (main's own history: a merged branch
    is one step), oldest first: `git rev-list --first-parent --reverse`. HarnessError (one line)
    when git cannot list them."""
    import git  # cost: gitpython loads only for git upstreams

    try:
        log = git.Repo(repo).git.log("--first-parent", "--reverse", "--format=%H %s", f"{old}..{new}")
    except (git.GitCommandError, git.InvalidGitRepositoryError, git.NoSuchPathError) as exc:
        last = (getattr(exc, "stderr", "") or str(exc)).strip().splitlines()[-1:] or [""]
        raise HarnessError(f"{repo}: cannot list the commits {old}..{new}: {last[0].strip()}") from None
    return [Commit(sha=line[:40], subject=line[41:]) for line in log.splitlines() if re.match(r"^[0-9a-f]{40}( |$)", line)]


def step_ends(count: int, steps: int | None = None, every: int | None = None) -> list[int]:
    """Indexes (0-based, ascending) of the commits, of `count`, that end each step: `steps`
    steps of near-equal size, or one step per `every` commits; the last commit always ends the
    last step. Fewer commits than steps: one step per commit."""
    if count <= 0:
        return []
    if every is not None:
        ends = list(range(every - 1, count, every))
    else:
        n = min(steps or 1, count)
        ends = [(i * count + n - 1) // n - 1 for i in range(1, n + 1)]
    return sorted(set(ends) | {count - 1})
