"""Regenerate reports/examples/: one report set of `harness run --auto-approve` on the built-in
example (SmolLM2 on llama.cpp, sglang 0.5.17 → 0.5.23), committed so a reader sees what a run
produces. CI (tests/architecture/test_report_examples.py) re-renders these reports from their
run.json, journal and evidence and fails when the code renders something else: rerun this
script after changing a template or what a report shows.

    python scripts/make_report_examples.py        # needs harness[all], the package index once

reports/examples/ is a workspace: .harness/runs/example/{run.json,journal.jsonl} and
reports/example/ (the reports and their evidence). LangGraph's state file and the run's lock
are not kept.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "reports" / "examples"
RUN_ID = "example"


def main() -> int:
    shutil.rmtree(EXAMPLES, ignore_errors=True)
    EXAMPLES.mkdir(parents=True)
    done = subprocess.run([sys.executable, "-m", "harness", "run", "--auto-approve", "--run-id", RUN_ID,
                           "--workspace", str(EXAMPLES)], cwd=ROOT)
    if done.returncode != 0:
        print(f"harness run exited {done.returncode}; reports/examples/ is incomplete", file=sys.stderr)
        return done.returncode
    (EXAMPLES / ".harness" / "state.sqlite").unlink(missing_ok=True)
    for ignore in (EXAMPLES / ".harness" / ".gitignore", EXAMPLES / "reports" / ".gitignore"):
        ignore.unlink(missing_ok=True)  # the committed run is the point here
    (EXAMPLES / ".harness" / "runs" / RUN_ID / "lock").unlink(missing_ok=True)
    print(f"wrote {EXAMPLES}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
