"""The fingerprint an approval is bound to: sha256 over a step's evidence files.

Files are taken in sorted relative-path order and each contributes its path and its bytes, so
renaming, editing, adding or deleting any evidence file changes the hash.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from harness.util.files import sha256_file, tree_files


def evidence_hash(evidence_dir: Path) -> str | None:
    """`sha256:<hex>` over the evidence tree; None when the evidence dir is gone: nothing is
    left that an approval could cover."""
    if not evidence_dir.is_dir():
        return None
    digest = hashlib.sha256()
    for rel in tree_files(evidence_dir):
        digest.update(rel.encode() + b"\0")
        digest.update(bytes.fromhex(sha256_file(evidence_dir / rel)))
    return "sha256:" + digest.hexdigest()
