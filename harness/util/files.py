"""File helpers: content hashes, atomic writes, log tails, durable directories, and what a
failed write means to a user."""

from __future__ import annotations

import errno
import hashlib
import os
import tempfile
import uuid
from pathlib import Path
from typing import Any

from harness.errors import HarnessError

# Errors of the machine, not of the code: a read-only or full disk, missing permissions.
WRITE_ERRNOS = {errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOSPC, errno.EDQUOT}

_BLOCK = 1 << 20


def sha256_file(path: str | Path) -> str:
    """Hex sha256 of a file's bytes, read in 1 MiB blocks. OSError when unreadable."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(_BLOCK), b""):
            digest.update(block)
    return digest.hexdigest()


def file_record(path: str | Path) -> dict[str, Any]:
    """{path (absolute), sha256, bytes} of a file, for evidence that names its inputs."""
    path = Path(path)
    return {"path": str(path.resolve()), "sha256": sha256_file(path), "bytes": path.stat().st_size}


def write_atomic(path: Path, text: str, mode: int | None = None) -> Path:
    """Write text through a temp file + rename, so a kill never leaves half a file. The temp
    file's name is unique, so two processes writing the same file cannot trip over each other.
    `mode` (e.g. 0o600): the file's permissions, set before the text is written (else the
    umask's default)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}-{uuid.uuid4().hex[:8]}.tmp")
    try:
        if mode is not None:
            os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode))
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def tail(path: str | Path, lines: int = 30) -> list[str]:
    """The last `lines` lines of a (log) file, reading at most its last 64 KiB; [] when it
    cannot be read."""
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - 64 * 1024))
            return handle.read().decode(errors="replace").splitlines()[-lines:]
    except OSError:
        return []


def tree_files(root: Path) -> list[str]:
    """Every file under root, as sorted POSIX paths relative to it ([] when root is absent)."""
    if not root.is_dir():
        return []
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


def fsync_tree(root: Path) -> None:
    """Flush every file under root, then the directory itself, to disk."""
    for rel in tree_files(root):
        with open(root / rel, "rb") as handle:
            os.fsync(handle.fileno())
    fsync_dir(root)


def fsync_dir(path: Path) -> None:
    """Flush a directory's entries (a rename into it) to disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def is_write_error(exc: BaseException) -> bool:
    """Whether `exc` is a write the machine refused (read-only, full, no permission)."""
    return isinstance(exc, OSError) and exc.errno in WRITE_ERRNOS


def write_error_line(exc: OSError) -> str:
    """One line for a refused write: what, where, and that nothing recorded is lost."""
    where = f" {exc.filename}" if exc.filename else ""
    return (f"cannot write{where}: {exc.strerror or exc}; what the run recorded before is intact — fix the "
            f"disk or permissions, then repeat the command (or `harness resume` a run stopped mid-step)")


def ensure_writable(directory: Path, what: str) -> None:
    """Create `directory` if needed and prove a file can be written in it; HarnessError
    (`cannot write <what> in <directory>: <reason>`) otherwise, before anything else is written."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=directory, prefix=".write-probe-"):
            pass
    except OSError as exc:
        if not is_write_error(exc):
            raise
        raise HarnessError(f"cannot write {what} in {directory}: {exc.strerror or exc}; nothing was recorded") from None
