"""The fingerprint an approval is bound to: sha256 over a step's evidence files.

Files are taken in sorted relative-path order and each contributes its path and its bytes, so
renaming, editing, adding or deleting any evidence file changes the hash.
"""

from __future__ import annotations

import hashlib
from pathlib import Path


def evidence_files(evidence_dir: Path) -> list[str]:
    if not evidence_dir.is_dir():
        return []
    return sorted(p.relative_to(evidence_dir).as_posix() for p in evidence_dir.rglob("*") if p.is_file())


def evidence_hash(evidence_dir: Path) -> str | None:
    """None when the evidence dir is gone: nothing is left that an approval could cover."""
    if not evidence_dir.is_dir():
        return None
    digest = hashlib.sha256()
    for rel in evidence_files(evidence_dir):
        digest.update(rel.encode() + b"\0")
        file_digest = hashlib.sha256()
        with open(evidence_dir / rel, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                file_digest.update(block)
        digest.update(file_digest.digest())
    return "sha256:" + digest.hexdigest()
