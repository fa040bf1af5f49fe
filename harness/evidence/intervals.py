"""Sets of time intervals as two sorted numpy arrays (starts, ends), disjoint after `merge`:
union, intersection and difference by one vectorised sweep, so a rank with millions of events
costs a sort, not a Python loop."""

from __future__ import annotations

import numpy as np

Intervals = tuple[np.ndarray, np.ndarray]
EMPTY: Intervals = (np.empty(0), np.empty(0))


def merge(starts: np.ndarray, ends: np.ndarray) -> Intervals:
    """The union of [start, end) intervals as disjoint sorted intervals."""
    starts, ends = np.asarray(starts, dtype=float), np.asarray(ends, dtype=float)
    if starts.size == 0:
        return EMPTY
    order = np.argsort(starts, kind="stable")
    starts, ends = starts[order], ends[order]
    reach = np.maximum.accumulate(ends)
    new = np.empty(starts.size, dtype=bool)
    new[0] = True
    new[1:] = starts[1:] > reach[:-1]
    first = np.flatnonzero(new)
    last = np.append(first[1:] - 1, starts.size - 1)
    return starts[first], reach[last]


def length(intervals: Intervals) -> float:
    """Total covered length of disjoint intervals."""
    return float(np.sum(intervals[1] - intervals[0]))


def _sweep(a: Intervals, b: Intervals, keep_b: bool) -> Intervals:
    """Where `a` covers and `b` covers (keep_b) or does not (not keep_b); both disjoint."""
    if a[0].size == 0 or (keep_b and b[0].size == 0):
        return EMPTY
    if b[0].size == 0:
        return a
    points = np.concatenate([a[0], a[1], b[0], b[1]])
    in_a = np.concatenate([np.ones(a[0].size), -np.ones(a[1].size), np.zeros(2 * b[0].size)])
    in_b = np.concatenate([np.zeros(2 * a[0].size), np.ones(b[0].size), -np.ones(b[1].size)])
    order = np.lexsort((in_a + in_b, points))  # at equal times, ends (-1) before starts
    points, depth_a, depth_b = points[order], np.cumsum(in_a[order]), np.cumsum(in_b[order])
    wanted = (depth_a > 0) & ((depth_b > 0) if keep_b else (depth_b <= 0))
    starts, ends = points[:-1][wanted[:-1]], points[1:][wanted[:-1]]
    nonempty = ends > starts
    return merge(starts[nonempty], ends[nonempty])


def intersect(a: Intervals, b: Intervals) -> Intervals:
    """Where both disjoint interval sets cover."""
    return _sweep(a, b, keep_b=True)


def subtract(a: Intervals, b: Intervals) -> Intervals:
    """Where `a` covers and `b` does not."""
    return _sweep(a, b, keep_b=False)


def clip(a: Intervals, start: float, end: float) -> Intervals:
    """The part of disjoint intervals inside [start, end)."""
    lo, hi = np.searchsorted(a[1], start, side="right"), np.searchsorted(a[0], end, side="left")
    return np.clip(a[0][lo:hi], start, end), np.clip(a[1][lo:hi], start, end)


def gaps(a: Intervals) -> Intervals:
    """The holes between consecutive disjoint intervals."""
    return a[1][:-1], a[0][1:]
