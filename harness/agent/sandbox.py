"""Where the agent may write: a git worktree of the plugin on a branch of its own
(`harness/<run-id>/<step>-<attempt>`), never the engineer's working tree. A plugin that is not
the top of a git repository (e.g. the built-in example, which sits inside this package) is
copied instead and the copy made a repository, so the patch is still a `git diff`. The copy
takes only what the enclosing repository tracks (a plugin in no repository: every file), and
never well-known secret files (`SECRETS`): the agent's context goes to a remote endpoint.

Every path the agent names is relative to the sandbox and resolved one component at a time;
an absolute path, a `..` escape, a symlink that leads outside (even one that comes back), or
any repository's metadata (`.git`, however reached) is refused (`Refused`).

Every git command harness runs here runs without hooks, fsmonitor, filters, external diff or
textconv, and with no system/global config or `GIT_*` variable of the caller's environment
(`_git`): the agent writes the files git reads, so git must not run what they name."""

from __future__ import annotations

import fnmatch
import os
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath

import git
from pydantic import BaseModel, Field

RECORD = "sandbox.json"
# Never copied into a copy-mode sandbox: what the agent reads goes to the endpoint and the transcript.
SECRETS = (".env", ".env.*", "*.env", ".netrc", "_netrc", ".npmrc", ".pypirc", ".git-credentials", "*.pem", "*.key",
           "*.p12", "*.pfx", "id_rsa*", "id_dsa*", "id_ecdsa*", "id_ed25519*")
_LOOSE_SKIP = ("__pycache__", "*.pyc", ".harness")  # a plugin in no repository: build output and harness state
# Command-line config wins over every config file: hooks and fsmonitor off, no external diff.
_BASE = [arg for item in ("core.hooksPath=/dev/null", "core.fsmonitor=false", "diff.external=") for arg in ("-c", item)]


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
        """A fresh sandbox at `where` (a leftover of a killed attempt is replaced). Raises
        git.GitCommandError when git fails."""
        plugin = plugin.resolve()
        branch = f"harness/{run_id}/{step}-{attempt}"
        source = _own_repo(plugin)
        if where.exists():
            _discard(where, source, branch)
        where.parent.mkdir(parents=True, exist_ok=True)
        if source is not None:
            base = _git(plugin, "rev-parse", "HEAD").strip()
            _git(plugin, "worktree", "add", "-B", branch, str(where), base)
        else:
            _copy_plugin(plugin, where)
            _git(where, "init", "-q", "-b", branch)
            repo = git.Repo(where)
            with repo.config_writer() as config:  # commits here must not depend on the user's git identity
                config.set_value("user", "name", "harness")
                config.set_value("user", "email", "harness@localhost")
            _git(where, "add", "-A")
            base = repo.index.commit(f"the plugin as copied from {plugin}", skip_hooks=True).hexsha
        record = SandboxRecord(path=str(where), branch=branch, base_commit=base, plugin=str(plugin),
                               repo=str(source) if source else None)
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
        """The absolute, symlink-free path of `rel` inside the sandbox. Raises Refused when `rel`
        is absolute or climbs with `..`, or when any prefix of it resolves (through symlinks)
        outside the sandbox or into a repository's metadata (`.git` of the sandbox, of a nested
        repository, or of the repository the sandbox was made from)."""
        pure = PurePosixPath(rel)
        if not rel or pure.is_absolute() or Path(rel).is_absolute() or rel.startswith("~"):
            raise Refused(f"refused: outside the worktree ({rel!r} is not a relative path)")
        if ".." in pure.parts:
            raise Refused(f"refused: outside the worktree ({rel!r} climbs out with '..')")
        root = Path(os.path.realpath(self.root))
        path = root
        for part in pure.parts:
            # each prefix on its own: a link that leaves and comes back is refused as well
            real = Path(os.path.realpath(path / part))
            if real != root and not real.is_relative_to(root):
                raise Refused(f"refused: outside the worktree ({rel!r} leads to {real} through a symlink)")
            if _metadata(real.relative_to(root)):
                raise Refused(f"refused: outside the worktree ({rel!r} leads into git metadata: "
                              f"{real.relative_to(root).as_posix()})")
            path = real
        return path

    def ignored(self, path: Path) -> bool:
        """Whether git ignores `path` (a path `resolve` returned): it is then in no patch or commit."""
        rel = path.relative_to(Path(os.path.realpath(self.root))).as_posix()
        return _run(self.root, ["check-ignore", "-q", "--", rel]).returncode == 0

    def diff(self) -> str:
        """The sandbox's change against its base commit, new files included (`git diff`); git-ignored
        files are not part of it (nor of the commit, nor of what `committable` checks out)."""
        _git(self.root, "add", "-A")
        return _git(self.root, "diff", "--cached", "--binary", "--no-textconv", "--no-ext-diff",
                    self.record.base_commit)

    def changed(self) -> list[str]:
        """The sandbox paths the change touches, as git names them (`--name-only -z`), never
        read from patch text, where a file's content can forge a `+++ b/` header."""
        _git(self.root, "add", "-A")
        out = _git(self.root, "diff", "--cached", "--name-only", "--no-renames", "-z", self.record.base_commit)
        return [name for name in out.split("\0") if name]

    @contextmanager
    def committable(self) -> Iterator[Path]:
        """A temporary checkout of exactly what `diff` takes and an approval commits (the index
        after `git add -A`): checks run on it, not on the worktree, whose git-ignored files no
        commit carries."""
        _git(self.root, "add", "-A")
        with tempfile.TemporaryDirectory(prefix=f"{self.root.name}.committable-", dir=self.root.parent) as tmp:
            _git(self.root, "checkout-index", "-a", "-f", f"--prefix={tmp}/")
            yield Path(tmp)

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
        commit = self.repo.index.commit(message, skip_hooks=True).hexsha
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
            _git(self.root, "add", "-A")
            self.record.base_commit = self.repo.index.commit(message, skip_hooks=True).hexsha
        self._save()

    def fail(self, reason: str) -> None:
        """Record why the approved change was not committed."""
        self.record.commit_error = reason
        self._save()

    def _save(self) -> None:
        _record_path(self.root).write_text(self.record.model_dump_json(indent=2) + "\n", encoding="utf-8")

    def merge_hint(self) -> str:
        """How the engineer takes the committed change into their checkout, as shell commands
        with every path and name quoted (file names are the agent's). A sandbox with seeded
        files takes each changed file to where it belongs (the seeded copies stay behind)."""
        q = shlex.quote
        if self.record.origins and self.record.committed:
            commit = self.record.committed
            out = _git(self.root, "diff", "--name-only", "--no-renames", "-z", f"{commit}~1", commit)
            hints = []
            for rel in filter(None, out.split("\0")):
                target = Path(self.record.origins.get(rel) or Path(self.record.plugin) / rel)
                mkdir = "" if target.parent.is_dir() else f"mkdir -p {q(str(target.parent))} && "
                hints.append(f"{mkdir}git -C {q(str(self.root))} show {q(f'{commit[:12]}:{rel}')} > {q(str(target))}")
            return "; ".join(hints)
        if self.record.repo:
            return f"git -C {q(self.record.repo)} merge {q(self.record.branch)}"
        return f"git -C {q(str(self.root))} format-patch -1 --stdout | git -C {q(self.record.plugin)} apply"


def _metadata(rel: Path) -> bool:
    """Whether a sandbox-relative path is in, or is, a repository's metadata."""
    return any(part.casefold() == ".git" for part in rel.parts)


def _environment() -> dict[str, str]:
    """The caller's environment less every `GIT_*` variable (GIT_DIR, GIT_CONFIG_PARAMETERS,
    GIT_EXTERNAL_DIFF...), with no system or global git config and no system attributes."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull, GIT_ATTR_NOSYSTEM="1", GIT_TERMINAL_PROMPT="0",
               LC_ALL="C")
    return env


def _run(cwd: Path, args: list[str], safe: list[str] | None = None) -> subprocess.CompletedProcess[bytes]:
    if safe is None:
        safe = _safe_options(cwd)
    return subprocess.run(["git", *safe, *args], cwd=cwd, env=_environment(), capture_output=True, check=False,
                          stdin=subprocess.DEVNULL)


def _safe_options(cwd: Path) -> list[str]:
    """`-c` options that switch off what a repository's config could make git run: hooks,
    fsmonitor, external diff, and every filter driver it names (an empty command is no filter)."""
    options = list(_BASE)
    listed = _run(cwd, ["config", "-z", "--get-regexp", r"^filter\."], safe=options)
    names = {entry.split("\n", 1)[0].rsplit(".", 1)[0][len("filter."):]
             for entry in listed.stdout.decode("utf-8", "replace").split("\0") if entry}
    for name in sorted(names):
        for key, value in (("clean", ""), ("smudge", ""), ("process", ""), ("required", "false")):
            options += ["-c", f"filter.{name}.{key}={value}"]
    return options


def _git(cwd: Path, *args: str) -> str:
    """Run one hardened git command in `cwd` (see the module docstring); its stdout. Raises
    git.GitCommandError when git fails, as GitPython would."""
    done = _run(cwd, list(args))
    if done.returncode != 0:
        raise git.GitCommandError(["git", *args], done.returncode, done.stderr.decode("utf-8", "replace").strip())
    return done.stdout.decode("utf-8", "replace")


def _copy_plugin(plugin: Path, where: Path) -> None:
    """Copy the plugin's files into `where` (symlinks as links): what its enclosing repository
    tracks when one tracks it, else every file but build output and harness state; never SECRETS."""
    tracked = _run(plugin, ["ls-files", "-z", "--cached", "--", "."]) if _enclosing_repo(plugin) else None
    names = [n for n in tracked.stdout.decode("utf-8", "surrogateescape").split("\0") if n] if tracked else []
    if not names:  # in no repository, or in one that tracks none of it
        names = _loose_files(plugin)
    where.mkdir()
    for rel in sorted(names):
        if _skipped(PurePosixPath(rel).name, SECRETS) or _metadata(Path(rel)):
            continue
        source, target = plugin / rel, where / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            target.symlink_to(os.readlink(source))
        elif source.is_file():  # a tracked file deleted in the checkout, or a submodule: nothing to copy
            shutil.copy2(source, target)


def _loose_files(plugin: Path) -> list[str]:
    """Every file (and symlink) under `plugin`, relative, less build output, harness state and
    repository metadata; symlinked directories are copied as links, not walked."""
    names = []
    for top, dirs, files in os.walk(plugin):
        kept = [d for d in dirs if not _skipped(d, (*_LOOSE_SKIP, ".git"))]
        dirs[:] = [d for d in kept if not Path(top, d).is_symlink()]
        names += [Path(top, n).relative_to(plugin).as_posix() for n in files + [d for d in kept if d not in dirs]
                  if not _skipped(n, _LOOSE_SKIP)]
    return names


def _skipped(name: str, patterns: tuple[str, ...]) -> bool:
    return any(fnmatch.fnmatch(name, pattern) for pattern in patterns)


def _enclosing_repo(path: Path) -> bool:
    return _run(path, ["rev-parse", "--is-inside-work-tree"], safe=_BASE).returncode == 0


def _own_repo(plugin: Path) -> Path | None:
    """The top of the git repository that is the plugin itself (a plugin in a subfolder of
    another repository is copied: its branches belong to someone else's project)."""
    done = _run(plugin, ["rev-parse", "--show-toplevel"], safe=_BASE)
    if done.returncode != 0 or Path(done.stdout.decode().strip()).resolve() != plugin:
        return None
    # a repository without a commit has nothing to branch from
    return plugin if _run(plugin, ["rev-parse", "--verify", "-q", "HEAD"], safe=_BASE).returncode == 0 else None


def _discard(where: Path, source: Path | None, branch: str) -> None:
    if source is not None:
        try:
            _git(source, "worktree", "remove", "--force", str(where))
        except git.GitCommandError:
            shutil.rmtree(where, ignore_errors=True)
            _git(source, "worktree", "prune")
    shutil.rmtree(where, ignore_errors=True)
    _record_path(where).unlink(missing_ok=True)


def _record_path(where: Path) -> Path:
    return where.parent / f"{where.name}.{RECORD}"
