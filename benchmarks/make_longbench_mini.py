"""Generate the example workspace's small LongBench-format data set (nothing comes from a hub).

    python benchmarks/make_longbench_mini.py          # (re)write the bundled data
    python benchmarks/make_longbench_mini.py --check  # exit 1 if it is stale

Rows follow Xnhyacinth/LongBench's `hotpotqa` subset (input, context, answers, length, dataset,
language, all_classes, _id; plus `question`, the name lm-eval 0.4.13's prompt reads), so lm-eval's built-in `longbench_hotpotqa` task (its
prompt, and its own QA-F1 metric, `metrics.get_qa_f1_with_score`) runs on them unchanged. The
contexts are short — two made-up passages of one sentence, about 35 words — so the example's CPU
model answers in about a second each; the answer is a name stated in one passage, the other
passage a distractor.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

DATA_FILE = Path(__file__).resolve().parents[1] / "harness" / "examples" / "workspace" / "data" / \
    "longbench_mini_hotpotqa.jsonl"
ROWS, SEED = 6, 2025

PLACES = ["Vellmar", "Ostrava Nova", "Kirrin", "Bellhaven", "Tamsk", "Orvieto Alta", "Lindford", "Qarun"]
RIVERS = ["Aster", "Morva", "Selk", "Tavy", "Idra", "Wenn", "Calder", "Lusa"]
PEOPLE = ["Ilse Varga", "Tomas Reyl", "Anneke Dorn", "Pavel Ostrik", "Mira Solén", "Joran Vale", "Edda Krim",
          "Basil Ortho"]
THINGS = ["bridge", "library", "observatory", "tower", "museum", "theatre"]


def make_rows(n: int = ROWS, seed: int = SEED) -> list[dict]:
    """n hotpotqa-format rows: a question whose answer one of two passages states."""
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        place, river = rng.choice(PLACES), rng.choice(RIVERS)
        person, other = rng.sample(PEOPLE, 2)
        thing = rng.choice(THINGS)
        article = "an" if thing[0] in "aeiou" else "a"
        name = f"{rng.choice(['North', 'Old', 'Grand', 'Silver', 'Iron'])} {place} {thing.title()}"
        year = rng.randint(1850, 1990)
        passages = [
            f"{name}: The {name} is {article} {thing} in {place}, on the river {river}, designed by {person}.",
            f"{other}: {other} was a painter who lived near the river {rng.choice(RIVERS)} from {year}.",
        ]
        rng.shuffle(passages)
        kind = i % 3
        if kind == 0:
            question, answer = f"Who designed the {name}?", person
        elif kind == 1:
            question, answer = f"In which town is the {name}?", place
        else:
            question, answer = f"On which river does the {name} stand?", river
        context = "\n\n".join(f"Passage {k + 1}:\n{p}" for k, p in enumerate(passages))
        rows.append({"input": question, "question": question, "context": context, "answers": [answer], "length": len(context.split()),
                     "dataset": "hotpotqa", "language": "en", "all_classes": None, "_id": f"harness-mini-{i}"})
    return rows


def render(rows: list[dict]) -> str:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only verify the bundled file")
    args = parser.parse_args(argv)
    expected = render(make_rows())
    if args.check:
        if not DATA_FILE.is_file() or DATA_FILE.read_text(encoding="utf-8") != expected:
            print(f"{DATA_FILE} is stale: rerun python benchmarks/make_longbench_mini.py", file=sys.stderr)
            return 1
        return 0
    DATA_FILE.write_text(expected, encoding="utf-8")
    print(f"wrote {DATA_FILE} ({ROWS} rows)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
