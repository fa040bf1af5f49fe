"""Rebuild harness/examples/upstream/<version>/: the real SGLang release files that the
built-in example needs, for running the demo when the package index cannot be reached.

    python scripts/make_upstream_bundle.py sglang==0.5.17 sglang==0.5.23

A file is bundled when resolving the example plugin's dependencies (and the example feature
files' symbols) had to read it; files are copied unmodified from the release wheel, with
SGLang's licence notice (Apache-2.0) beside them.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

import yaml

EXAMPLES = Path(__file__).resolve().parents[1] / "harness" / "examples"
NOTICE = """These files are unmodified excerpts of the SGLang {version} release wheel
(https://pypi.org/project/sglang/{version}/), licensed under the Apache License 2.0.
They exist so the harness demo can run without the package index. Regenerate with
scripts/make_upstream_bundle.py.
"""


def main(specs: list[str]) -> None:
    os.environ["HARNESS_CACHE_DIR"] = tempfile.mkdtemp(prefix="harness-bundle-")  # a cold index
    from harness.knowledge.platform_map import map_plugin
    from harness.knowledge.index import load_index
    from harness.knowledge.upstream import resolve_upstream

    symbols = []
    for feature in sorted((EXAMPLES / "workspace" / "features").glob("*.yaml")):
        symbols += (yaml.safe_load(feature.read_text()).get("upstream") or {}).get("symbols") or []
    for spec in specs:
        source = resolve_upstream(spec)
        index = load_index(source)
        map_plugin(EXAMPLES / "workspace" / "plugin", source, index)
        for symbol in symbols:
            index.resolve(symbol)
        needed = {index.files[name][0] for name in index._tables}  # every module resolution read
        target = EXAMPLES / "upstream" / source.version
        shutil.rmtree(target, ignore_errors=True)
        for rel in sorted(needed):
            (target / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source.root / rel, target / rel)
        (target / "NOTICE").write_text(NOTICE.format(version=source.version))
        size = sum((target / rel).stat().st_size for rel in needed)
        print(f"{spec}: {len(needed)} files, {size / 1e6:.2f} MB -> {target}")


if __name__ == "__main__":
    main(sys.argv[1:] or ["sglang==0.5.17", "sglang==0.5.23"])
