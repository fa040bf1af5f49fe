"""Generate the example workspace's small gsm8k-format data set (nothing comes from a hub).

    python benchmarks/make_gsm8k_mini.py                    # (re)write the bundled data
    python benchmarks/make_gsm8k_mini.py --record-baseline  # and re-record the baseline
    python benchmarks/make_gsm8k_mini.py --check            # exit 1 if anything is stale

Rows follow openai/gsm8k exactly: {"question": ..., "answer": worked solution with
`<<a*b=c>>` calculator annotations, ending in `#### <number>`}, so lm-eval's built-in `gsm8k`
task (prompt, stop sequences, regex filters, exact_match) runs on them unchanged. The problems
are easier than gsm8k's (one to three steps, small numbers) so a 135M model answers some.
The train split only feeds few-shot examples; it shares no question with the test split.

The baseline is a real run: the example runbook's server (SmolLM2 on llama.cpp) and its gsm8k
suite through the accuracy runner, whose per-sample file is kept as the suite's baseline.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import sys
import tempfile
from pathlib import Path

DATA_DIR = Path(__file__).resolve().parents[1] / "harness" / "examples" / "workspace" / "data"
TEST_FILE = DATA_DIR / "gsm8k_mini_test.jsonl"
TRAIN_FILE = DATA_DIR / "gsm8k_mini_train.jsonl"
BASELINE_FILE = DATA_DIR / "gsm8k_mini_baseline.jsonl"
RUNBOOK = DATA_DIR.parent / "runbook.yaml"
TEST_ROWS, TRAIN_ROWS = 20, 5
TEST_SEED, TRAIN_SEED = 2024, 7

NAMES = ["Maya", "Omar", "Lena", "Tariq", "Sofia", "Kenji", "Priya", "Lucas", "Amara", "Noah"]
ITEMS = ["apples", "pencils", "stamps", "cookies", "marbles", "stickers", "books", "shells"]


def _problem(rng: random.Random) -> tuple[str, str]:
    """One word problem and its worked gsm8k-style answer."""
    name, item = rng.choice(NAMES), rng.choice(ITEMS)
    a, b, c = rng.randint(3, 40), rng.randint(2, 9), rng.randint(2, 9)
    kind = rng.randrange(5)
    if kind == 0:
        return (f"{name} has {a} {item} and gets {b} more. How many {item} does {name} have now?",
                f"{name} has {a} + {b} = <<{a}+{b}={a + b}>>{a + b} {item} now.\n#### {a + b}")
    if kind == 1:
        total = a + b
        return (f"{name} had {total} {item} and gave {b} to a friend. How many {item} are left?",
                f"{name} has {total} - {b} = <<{total}-{b}={a}>>{a} {item} left.\n#### {a}")
    if kind == 2:
        return (f"{name} buys {b} boxes with {c} {item} in each box. How many {item} does {name} buy?",
                f"{name} buys {b} * {c} = <<{b}*{c}={b * c}>>{b * c} {item}.\n#### {b * c}")
    if kind == 3:
        total = b * c
        return (f"{name} shares {total} {item} equally among {c} friends. How many {item} does each "
                f"friend get?",
                f"Each friend gets {total} / {c} = <<{total}/{c}={b}>>{b} {item}.\n#### {b}")
    bought = b * c
    return (f"{name} has {a} {item}. {name} buys {b} packs with {c} {item} in each pack. "
            f"How many {item} does {name} have in total?",
            f"The packs hold {b} * {c} = <<{b}*{c}={bought}>>{bought} {item}.\n"
            f"{name} has {a} + {bought} = <<{a}+{bought}={a + bought}>>{a + bought} {item} in total.\n"
            f"#### {a + bought}")


def make_rows(n: int, seed: int, exclude: set[str] = frozenset()) -> list[dict[str, str]]:
    """`n` distinct rows from `seed`, none of whose questions is in `exclude`."""
    rng = random.Random(seed)
    rows: list[dict[str, str]] = []
    seen = set(exclude)
    while len(rows) < n:
        question, answer = _problem(rng)
        if question not in seen:
            seen.add(question)
            rows.append({"question": question, "answer": answer})
    return rows


def render(rows: list[dict[str, str]]) -> str:
    return "".join(json.dumps(row) + "\n" for row in rows)


def expected_files() -> dict[Path, str]:
    """The bundled files' exact contents."""
    test = make_rows(TEST_ROWS, TEST_SEED)
    train = make_rows(TRAIN_ROWS, TRAIN_SEED, exclude={row["question"] for row in test})
    return {TEST_FILE: render(test), TRAIN_FILE: render(train)}


def record_baseline() -> None:
    """Serve the example runbook's model and keep its gsm8k suite's per-sample results."""
    from harness.evidence.accuracy import Endpoint, run_accuracy_suite
    from harness.evidence.runbook import load_runbook
    from harness.evidence.server import ServedModel

    runbook = load_runbook(RUNBOOK)
    suite = runbook.accuracy[0].model_copy(update={"baseline": None})
    os.environ.update(runbook.environment.env)  # lm-eval runs in this process
    with tempfile.TemporaryDirectory() as tmp:
        with ServedModel.from_runbook(runbook, Path(tmp)) as server:
            endpoint = Endpoint(server.base_url, server.model, runbook.accuracy_api(suite))
            check = run_accuracy_suite(suite, endpoint, Path(tmp))
        samples = Path(tmp) / suite.name / "samples.jsonl"
        if not samples.is_file():
            raise SystemExit(f"the accuracy run wrote no samples: {check.label()}")
        shutil.copyfile(samples, BASELINE_FILE)
    print(f"wrote {BASELINE_FILE}: {check.metrics.get('metric')} = {check.metrics.get('score')}")


def baseline_matches_data() -> bool:
    """The baseline was recorded on exactly the bundled test questions, in order."""
    if not BASELINE_FILE.is_file():
        return False
    recorded = [json.loads(line)["question_hash"] for line in BASELINE_FILE.read_text().splitlines()]
    questions = [json.loads(line)["question"] for line in TEST_FILE.read_text().splitlines()]
    return recorded == [hashlib.sha256(q.encode()).hexdigest() for q in questions]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only verify the bundled files")
    parser.add_argument("--record-baseline", action="store_true",
                        help="also re-record the baseline with the real model (about 2 minutes)")
    args = parser.parse_args(argv)
    stale = []
    for path, content in expected_files().items():
        current = path.read_text() if path.is_file() else None
        if current == content:
            continue
        if args.check:
            stale.append(path)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(content)
            print(f"wrote {path} ({content.count(chr(10))} rows)")
    if args.record_baseline and not args.check:
        record_baseline()
    if not baseline_matches_data():
        stale.append(BASELINE_FILE)
    for path in stale:
        print(f"stale: {path}; run python benchmarks/make_gsm8k_mini.py --record-baseline",
              file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
