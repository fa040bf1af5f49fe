"""What `harness port` leaves behind: the report (port.md, from its template) and, with
--apply, a branch of the plugin repo with the merged copies committed."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

from harness.errors import HarnessError
from harness.knowledge.products.port import Port, PortReport


def write_port_report(report: PortReport, out_dir: Path) -> Path:
    """Write `port.md` (rendered from the report) into `out_dir`; returns its path."""
    # cost: jinja loads only when files are written
    from harness.util.templates import render

    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "port.md"
    path.write_text(render("port.md.j2", report=report), encoding="utf-8")
    return path


def apply_ports(report: PortReport) -> str | None:
    """Commit the merged copies (clean ones, and conflicted ones with their markers) on a new
    branch `harness/port-<to>` of the plugin's git repository, written through a temporary
    `git worktree` so the engineer's working tree and index are never touched. Returns the
    branch, or None when nothing merged.

    Raises HarnessError when the plugin is not in a git repository, or a file to change has
    uncommitted edits (the branch starts at HEAD; those edits would be lost or mixed in)."""
    import git  # cost: gitpython loads only for --apply

    merged = [p for p in report.ports if p.merged is not None]
    if not merged:
        return None
    root = Path(report.plugin)
    try:
        repo = git.Repo(root, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        raise HarnessError(f"--apply writes a branch of the plugin's git repository, and {root} is not in one (git init and commit it first)") from None
    top = Path(repo.working_tree_dir)
    if not repo.head.is_valid():
        raise HarnessError(f"--apply needs a commit to branch from: {top} has none")
    changed = {str((root / p.file).resolve().relative_to(top)) for p in merged}
    dirty = sorted(changed & ({d.a_path for d in repo.index.diff(None)} | {d.a_path for d in repo.index.diff("HEAD")} | set(repo.untracked_files)))
    if dirty:
        raise HarnessError(f"--apply: {', '.join(dirty)} has uncommitted changes; commit or stash them first (the branch starts at HEAD)")
    branch = _free_branch(repo, f"harness/port-{_slug(report.to_label)}")
    with tempfile.TemporaryDirectory(prefix="harness-port-") as tmp:
        worktree = Path(tmp) / "worktree"
        repo.git.worktree("add", "-q", "-b", branch, str(worktree), "HEAD")
        try:
            by_file: dict[str, list[Port]] = {}
            for port in merged:
                by_file.setdefault(port.file, []).append(port)
            for file, ports in by_file.items():
                relative = (root / file).resolve().relative_to(top)
                lines = (top / relative).read_text(encoding="utf-8").splitlines(keepends=True)
                for port in sorted(ports, key=lambda p: -p.line):  # bottom-up: earlier line numbers stay valid
                    lines[port.line - 1 : port.end_line] = port.merged.splitlines(keepends=True)
                (worktree / relative).write_text("".join(lines), encoding="utf-8")
            work = git.Repo(worktree)
            work.git.add("-A")
            conflicted = sum(1 for p in merged if p.status == "conflict")
            message = f"Re-port {len(merged)} copies of upstream functions from {report.from_label} to {report.to_label}"
            if conflicted:
                message += (f"\n\n{conflicted} {'copy still carries' if conflicted == 1 else 'copies still carry'} "
                            "conflict markers to resolve.")
            work.git.commit("-q", "-m", message, env={"GIT_AUTHOR_NAME": "harness port", "GIT_AUTHOR_EMAIL": "harness@localhost",
                                                     "GIT_COMMITTER_NAME": "harness port", "GIT_COMMITTER_EMAIL": "harness@localhost"})
        finally:
            repo.git.worktree("remove", "--force", str(worktree))
    return branch


def _slug(label: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", label.replace("==", "-")).strip("-")


def _free_branch(repo, name: str) -> str:
    existing = {head.name for head in repo.heads}
    candidate, n = name, 1
    while candidate in existing:
        n += 1
        candidate = f"{name}-{n}"
    return candidate
