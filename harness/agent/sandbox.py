"""Where the agent may write: a git worktree of the plugin on a branch of its own
(`harness/<run-id>/<step>-<attempt>`), never the engineer's working tree. A plugin that is not
the top of a git repository (e.g. the built-in example, which sits inside this package) is
copied instead and the copy made a repository, so the patch is still a `git diff`.

Every path the agent names is relative to the sandbox; an absolute path, a `..` escape, a
symlink that leads outside, or the sandbox's `.git` is refused (`Refused`)."""

from __future__ import annotations

import shutil
from pathlib import Path, PurePosixPath

import git
from pydantic import BaseModel, Field

_IGNORE = shutil.ignore_patterns(".git", "__pycache__", "*.pyc", ".harness")
RECORD = "sandbox.json"


class Refused(Exception):
    """A tool call that would reach outside the worktree."""


class SandboxRecord(BaseModel):
    """What a sandbox is, written beside it (outside the evidence, so committing an approved
    patch changes no evidence): where, on which branch, from which commit of which repo."""

    path: str
    branch: str
    base_commit: str
    plugin: str
    repo: str | None  # the plugin's own repository; None when the plugin was copied
    committed: str | None = None  # the commit made on approval
    commit_error: str | None = None  # why the approved patch could not be committed
    # files seeded from outside the plugin (the knowledge write-back): sandbox path -> where it came from
    origins: dict[str, str] = Field(default_factory=dict)


class Sandbox:
    """A writable copy of the plugin for one step attempt (see the module docstring)."""

    def __init__(self, record: SandboxRecord):
        self.record = record
        self.root = Path(record.path)
        self.repo = git.Repo(self.root)

    @classmethod
    def create(cls, plugin: Path, where: Path, run_id: str, step: str, attempt: int) -> Sandbox:
        """A fresh sandbox at `where` (a leftover of a killed attempt is replaced)."""
        plugin = plugin.resolve()
        branch = f"harness/{run_id}/{step}-{attempt}"
        source = _own_repo(plugin)
        if where.exists():
            _discard(where, source, branch)
        where.parent.mkdir(parents=True, exist_ok=True)
        if source is not None:
            source.git.worktree("add", "-B", branch, str(where), "HEAD")
            base = source.head.commit.hexsha
        else:
            shutil.copytree(plugin, where, ignore=_IGNORE, symlinks=True)
            repo = git.Repo.init(where, initial_branch=branch)
            with repo.config_writer() as config:  # commits here must not depend on the user's git identity
                config.set_value("user", "name", "harness")
                config.set_value("user", "email", "harness@localhost")
            repo.git.add("-A")
            repo.index.commit(f"the plugin as copied from {plugin}")
            base = repo.head.commit.hexsha
        record = SandboxRecord(path=str(where), branch=branch, base_commit=base, plugin=str(plugin),
                               repo=str(source.working_tree_dir) if source else None)
        _record_path(where).write_text(record.model_dump_json(indent=2) + "\n", encoding="utf-8")
        return cls(record)

    @classmethod
    def load(cls, where: Path) -> Sandbox | None:
        """The sandbox recorded at `where`, or None."""
        try:
            return cls(SandboxRecord.model_validate_json(_record_path(where).read_text(encoding="utf-8")))
        except (OSError, ValueError, git.InvalidGitRepositoryError, git.NoSuchPathError):
            return None

    def resolve(self, rel: str) -> Path:
        """The absolute path of `rel` inside the sandbox; Refused when it is absolute, escapes
        with `..` or a symlink, or names `.git`."""
        pure = PurePosixPath(rel)
        if not rel or pure.is_absolute() or Path(rel).is_absolute() or rel.startswith("~"):
            raise Refused(f"refused: outside the worktree ({rel!r} is not a relative path)")
        if ".." in pure.parts:
            raise Refused(f"refused: outside the worktree ({rel!r} climbs out with '..')")
        if pure.parts and pure.parts[0] == ".git":
            raise Refused(f"refused: outside the worktree ({rel!r} is the repository's own metadata)")
        path = (self.root / pure).resolve()
        if not path.is_relative_to(self.root.resolve()):
            raise Refused(f"refused: outside the worktree ({rel!r} leads to {path} through a symlink)")
        return path

    def diff(self) -> str:
        """The sandbox's change against its base commit, new files included (`git diff`)."""
        self.repo.git.add("-A")
        text = self.repo.git.diff("--cached", "--binary", self.record.base_commit)
        return text + "\n" if text else ""  # git's output, less the final newline GitPython strips

    def commit(self, message: str, approved_patch: str) -> str | None:
        """Commit the sandbox's change on its branch; returns the commit, or None when there is
        nothing to commit. Refuses (ValueError) when the change is not `approved_patch`: what is
        committed is exactly what was approved. Idempotent: a second call finds it committed."""
        if self.record.committed:
            return self.record.committed
        if self.diff() != approved_patch:
            raise ValueError(f"the sandbox {self.root} changed after its patch was approved; nothing committed")
        if not approved_patch:
            return None
        commit = self.repo.index.commit(message).hexsha
        self.record.committed = commit
        self._save()
        return commit

    def seed(self, files: dict[str, tuple[Path, Path]], message: str) -> None:
        """Add files the agent should edit but the plugin does not hold, as one commit the patch
        is then taken against: `files` maps a sandbox path to (the file to copy, where it belongs,
        i.e. where an approved change goes back to)."""
        for rel, (source, origin) in files.items():
            target = self.resolve(rel)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
            self.record.origins[rel] = str(origin)
        if files:
            self.repo.git.add("-A")
            self.record.base_commit = self.repo.index.commit(message).hexsha
        self._save()

    def fail(self, reason: str) -> None:
        """Record why the approved change was not committed."""
        self.record.commit_error = reason
        self._save()

    def _save(self) -> None:
        _record_path(self.root).write_text(self.record.model_dump_json(indent=2) + "\n", encoding="utf-8")

    def merge_hint(self) -> str:
        """How the engineer takes the committed change into their checkout. A sandbox with seeded
        files takes each changed file to where it belongs (the seeded copies stay behind)."""
        if self.record.origins and self.record.committed:
            changed = self.repo.git.diff("--name-only", f"{self.record.committed}~1", self.record.committed).split()
            return "; ".join(f"git -C {self.root} show {self.record.committed[:12]}:{rel} > "
                             f"{self.record.origins.get(rel) or Path(self.record.plugin) / rel}" for rel in changed)
        if self.record.repo:
            return f"git -C {self.record.repo} merge {self.record.branch}"
        return f"git -C {self.root} format-patch -1 --stdout | git -C {self.record.plugin} apply"


def _own_repo(plugin: Path) -> git.Repo | None:
    """The git repository whose top is the plugin itself (a plugin in a subfolder of another
    repository is copied: its branches belong to someone else's project)."""
    try:
        repo = git.Repo(plugin)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        return None
    if repo.bare or Path(repo.working_tree_dir).resolve() != plugin:
        return None
    try:
        repo.head.commit  # noqa: B018 — a repository without a commit has nothing to branch from
    except ValueError:
        return None
    return repo


def _discard(where: Path, source: git.Repo | None, branch: str) -> None:
    if source is not None:
        try:
            source.git.worktree("remove", "--force", str(where))
        except git.GitCommandError:
            shutil.rmtree(where, ignore_errors=True)
            source.git.worktree("prune")
    shutil.rmtree(where, ignore_errors=True)
    _record_path(where).unlink(missing_ok=True)


def _record_path(where: Path) -> Path:
    return where.parent / f"{where.name}.{RECORD}"
