"""Score `harness check` on the corpus of real plugin releases (benchmarks/corpus.yaml), by split.

    PYTHONPATH=. python benchmarks/corpus.py [--split tune|test|all] [--show]

Each plugin release (its wheel, or for vllm-ascend its source archive, from the package index;
unpacked once under ~/.cache/harness-bench) is checked with `harness check --json --baseline auto`
on the vLLM release it was written for (fetched into the harness cache first, not timed). An
expectation is right when the finding with that target (and file, when given) exists with the
expected `breaking` (and status, when given); a missing finding is right only when it must not
break. Breaking findings that are neither expected nor listed `unchecked` are counted as
unexpected (a false breaking until someone judges them). Prints per plugin and per split:
right/expected, unexpected, unchecked, and seconds.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml
from check_speed_lib.measure import harness_env
from vllm_port_recall import source_tree

HERE = Path(__file__).resolve().parent
HARNESS = HERE.parent


def score(entry: dict, findings: list[dict]) -> dict:
    """Right and wrong expectations, unexpected and unchecked breaking findings of one plugin."""
    right, wrong = [], []
    for want in entry.get("expect") or []:
        found = [f for f in findings if f["target"] == want["target"] and ("file" not in want or f["file"] == want["file"])]
        ok = (any(f["breaking"] == want["breaking"] and ("status" not in want or f["status"] == want["status"]) for f in found)
              if found else not want["breaking"])
        (right if ok else wrong).append((want, [(f["status"], f["breaking"]) for f in found]))
    known = {w["target"] for w in entry.get("expect") or []} | set(entry.get("unchecked") or [])
    breaking = [f for f in findings if f["breaking"]]
    return {"right": right, "wrong": wrong, "unexpected": [f for f in breaking if f["target"] not in known],
            "unchecked": [f for f in breaking if f["target"] in set(entry.get("unchecked") or [])], "breaking": len(breaking)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=("tune", "test", "all"), default="all")
    parser.add_argument("--show", action="store_true", help="list wrong expectations and unexpected findings")
    args = parser.parse_args()
    corpus = yaml.safe_load((HERE / "corpus.yaml").read_text())["plugins"]
    totals: dict[str, list[int]] = {}
    env = harness_env(HARNESS, Path.home() / ".cache" / "harness")
    for entry in corpus:
        if args.split not in ("all", entry["split"]):
            continue
        tree = source_tree(entry["plugin"])
        fetched = subprocess.run([sys.executable, "-m", "harness", "fetch", entry["upstream"]], env=env, cwd=tempfile.gettempdir(), capture_output=True, text=True)
        if fetched.returncode != 0:
            raise SystemExit(f"harness fetch {entry['upstream']} failed (exit {fetched.returncode}): {(fetched.stderr or fetched.stdout)[-300:]}")
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "harness", "check", "--plugin", str(tree), "--upstream", entry["upstream"], "--json"],
                              capture_output=True, text=True, env=env, cwd=tempfile.gettempdir(), check=False)
        seconds = time.perf_counter() - start
        try:
            findings = json.loads(proc.stdout)["findings"]
        except (json.JSONDecodeError, KeyError):
            raise SystemExit(f"{entry['plugin']}: check gave no document (exit {proc.returncode}): {proc.stderr[-500:]}") from None
        result = score(entry, findings)
        expected = len(result["right"]) + len(result["wrong"])
        print(f"[{entry['split']}] {entry['plugin']} on {entry['upstream']}: {len(result['right'])}/{expected} right, "
              f"{len(result['unexpected'])} unexpected breaking, {len(result['unchecked'])} unchecked, {result['breaking']} breaking, exit {proc.returncode}, {seconds:.1f} s")
        if args.show:
            for want, found in result["wrong"]:
                print(f"    wrong: {want['target']} expected breaking={want['breaking']} ({want['why']}); found {found}")
            for f in result["unexpected"]:
                print(f"    unexpected: {f['kind']} {f['status']} {f['target']} {f['file']}:{f['line']} {(f.get('guard') or {}).get('outcome')}")
        total = totals.setdefault(entry["split"], [0, 0, 0, 0])
        total[0] += len(result["right"])
        total[1] += expected
        total[2] += len(result["unexpected"])
        total[3] += len(result["unchecked"])
    for split, (right, expected, unexpected, unchecked) in totals.items():
        print(f"{split}: {right}/{expected} expectations right, {unexpected} unexpected breaking, {unchecked} unchecked")


if __name__ == "__main__":
    main()
