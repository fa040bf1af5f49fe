"""C3 linearisation (Python's method resolution order) over a class graph of Refs."""

from __future__ import annotations

from collections import Counter
from typing import Callable

from harness.knowledge.model import Ref


def c3(ref: Ref, bases_of: Callable[[Ref], list[Ref]], linear_of: Callable[[Ref], list[Ref]] | None = None) -> list[Ref]:
    """C3 linearisation of `ref` over a class graph given by `bases_of` (plugin classes mixed
    with upstream ones). `linear_of` gives the known linearisation of a class outside that
    graph (an upstream class: SymbolIndex.mro), which ends the walk there; a cycle ends its
    branch. The graph is a plugin's own hierarchy, a handful of levels deep."""
    memo: dict[Ref, list[Ref]] = {}

    def linear(node: Ref, visiting: frozenset) -> list[Ref]:
        if node in memo:
            return memo[node]
        if node.kind != "class" or node in visiting:
            return [node]
        known = linear_of(node) if linear_of else None
        if known is not None:
            return known
        bases = bases_of(node)
        sequences = [linear(base, visiting | {node}) for base in bases]
        result = _c3_merge(node, [*sequences, list(bases)]) or list(dict.fromkeys([node, *(c for seq in sequences for c in seq)]))
        memo[node] = result
        return result

    return linear(ref, frozenset())


def _c3_merge(ref: Ref, sequences: list[list[Ref]]) -> list[Ref] | None:
    """C3 merge (Python's MRO); None when no consistent order exists. Counts tail occurrences
    so a deep hierarchy merges in linear time per class."""
    sequences = [seq for seq in sequences if seq]
    positions = [0] * len(sequences)
    in_tails = Counter(c for seq in sequences for c in seq[1:])
    result = [ref]
    while True:
        heads = [seq[i] for seq, i in zip(sequences, positions) if i < len(seq)]
        if not heads:
            return result
        head = next((h for h in heads if not in_tails[h]), None)
        if head is None:
            return None
        result.append(head)
        for n, seq in enumerate(sequences):
            if positions[n] < len(seq) and seq[positions[n]] == head:
                positions[n] += 1
                if positions[n] < len(seq):
                    in_tails[seq[positions[n]]] -= 1
