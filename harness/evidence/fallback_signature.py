"""CPU fallbacks found by the dispatch signature PyTorch's CPU fallback leaves in a profiler trace.

    scan = scan_fallbacks("PP0", columns, naming, header)   # FallbackScan: ops, or why not applicable

What the fallback does (PyTorch's `at::native::cpu_fallback`, aten/src/ATen/native/CPUFallback.cpp;
declared in ATen/native/CPUFallback.h, which the wheel ships — the .cpp is not in the wheel, so this
is from its source as published, torch 2.x): a backend registers it as the boxed kernel of an op
it has no kernel for. Recorded by the profiler inside the op's own event on the device:

1. the tensor arguments copied to the CPU together, `at::_to_cpu(tensors)` — an `aten::_to_cpu`
   event holding one `aten::to` → `aten::_to_copy` → `aten::copy_` per tensor (on a device with a
   profiler its runtime copy and a device-to-host copy on the device, `Memcpy DtoH`);
2. the CPU kernel, by `op.redispatchBoxed(DispatchKeySet(CPU), stack)`: a redispatch records no
   event of its own (the dispatcher's RecordFunction is in `call`/`callBoxed`, not `redispatch*`),
   so it is the op's own time between the copies, plus any op the CPU kernel dispatches; a fallback
   written by hand (a Python kernel calling the op on `.cpu()` copies, torch_xla's) dispatches
   it again and it is recorded under the op's own name;
3. the results copied back: mutated and `out=` arguments with `at::_copy_from_and_resize(cpu,
   device_tensor)`, new outputs with `.to(device)` (`aten::to`/`_to_copy`/`copy_`), on the device
   a host-to-device copy (`Memcpy HtoD`);
4. and no device kernel: nothing launched on the device inside the op.

`copy_` between a CPU tensor and a device `copy_` has no kernel for (a plugin's, XLA's) is
redispatched to `aten::_copy_from` (aten/src/ATen/native/Copy.cpp `copy_impl`), so a plugin
device without a profiler plugin still shows its copies cross a device boundary.

The rule. A host operator O (not itself a copy) on a trace that shows a device is a CPU fallback
when, on its thread, inside its span:
- a copy out is followed by a copy back, a later copy that starts after the copy out ends;
- the data left the device for the CPU: the copy out is known to go to the CPU (inside
  `to_cpu_op_patterns`, or a linked device copy named by `to_host_copy_patterns`), or the CPU
  kernel is recorded between the two (an op of O's own name, overload aside) and one of the two
  is known to cross a device boundary (`device_copy_op_patterns` inside it, or a linked copy named
  by `to_host_copy_patterns`/`to_device_copy_patterns` in its direction);
- neither copy stays on one side (a linked copy named by `within_copy_patterns`: `Memcpy DtoD`,
  memsets), and the copy back is not a copy to the host;
- no device kernel is launched inside O: no runtime event of `launch_patterns` that is not a copy,
  no host event linked (args.correlation) to a device event that is not a copy, and, where the
  trace links no device event to the host at all, no such device event starting inside O.
The op reported is the innermost such O (so never `_to_cpu`, which holds no copy back), its name
normalised as `recipes.normalize_op` does (`aten::silu.out` → `silu`). A copy is a host copy
operator (`copy_op_patterns`, `device_copy_op_patterns`) or a runtime copy call (`memcpy_patterns`
in `runtime_categories`); nested copies are one. A trace that shows no device — no event in
the device or runtime categories, no `deviceProperties`, no copy to or from a device — has nothing
to fall back from: the scan says "not applicable" and why; likewise when the naming declares the
host the device. Copies a trace does not say the direction of, on both sides, with no CPU kernel
recorded, are not told from a device's own copies: not reported.
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any

import numpy as np
from pydantic import BaseModel, Field

from harness.evidence import intervals as iv
from harness.evidence.recipes import Recipes, normalize_op
from harness.evidence.trace_stream import EventColumns
from harness.evidence.traces import TraceNaming

# the kind of a copy: where its data goes, as far as the trace says
OUT, BACK, CROSSING, UNKNOWN, WITHIN = range(5)


class FallbackOp(BaseModel):
    op: str = Field(description="The op that fell back, overload normalised (recipes.normalize_op).")
    rank: str
    count: int = Field(description="Calls that fell back.")
    host_ms: float = Field(description="Host time of those calls (ms).")
    copies: int = Field(description="Copies inside them, out and back.")
    recipe: str | None = None


class FallbackScan(BaseModel):
    ops: list[FallbackOp] = Field(default_factory=list)
    not_applicable: str | None = Field(default=None, description="Why no fallback can exist in the trace "
                                                                 "(then `ops` is empty), None when it was scanned.")


def _search(patterns: list[str]) -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{p})" for p in patterns) or r"(?!)", re.IGNORECASE)


def shows_device(columns: EventColumns, naming: TraceNaming, header: dict[str, Any]) -> bool:
    """Whether a trace shows a device a CPU fallback could fall back from: events in the device or
    runtime categories, a non-empty `deviceProperties` header (torch writes the GPUs it sees),
    or a host copy to or from a device (`to_cpu_op_patterns`, `device_copy_op_patterns`)."""
    on_device = set(naming.device_categories) | set(naming.runtime_categories)
    crossing = _search(naming.to_cpu_op_patterns + naming.device_copy_op_patterns)
    host_ops = set(naming.host_op_categories)
    return bool(header.get("deviceProperties")) or any(
        cat in on_device or (cat in host_ops and crossing.search(name)) for cat, name in columns.keys)


def scan_fallbacks(label: str, columns: EventColumns, naming: TraceNaming, header: dict[str, Any] | None = None,
                   recipes: Recipes | None = None) -> FallbackScan:
    """The CPU fallbacks of one rank's trace by the rule in the module docstring (µs in, ms out),
    one FallbackOp per normalised op name with its recipe when `recipes` has one; or
    `not_applicable` with the reason when the trace shows no device or the naming declares the
    host the device."""
    if set(naming.device_categories) & set(naming.host_op_categories):
        return FallbackScan(not_applicable=f"the naming declares the host the device "
                                           f"({', '.join(naming.device_categories)}): nothing falls back from it")
    if not shows_device(columns, naming, header or {}):
        return FallbackScan(not_applicable=(
            "the trace shows no device (no event in the device or runtime categories, no deviceProperties, no copy "
            "to or from a device), so nothing can fall back to the CPU"))
    found: dict[str, list[float]] = defaultdict(lambda: [0, 0.0, 0])
    for name, host_us, copies in _Signature(columns, naming).fallbacks():
        entry = found[name]
        entry[0], entry[1], entry[2] = entry[0] + 1, entry[1] + host_us, entry[2] + copies
    ops = []
    for name, (count, host_us, copies) in sorted(found.items()):
        match = recipes.match(name) if recipes is not None else None
        ops.append(FallbackOp(op=normalize_op(name), rank=label, count=int(count), host_ms=host_us / 1e3,
                              copies=int(copies), recipe=match.recipe.name if match else None))
    return FallbackScan(ops=ops)


class _Ops:
    """One thread's operators (not copies), sorted by start (outer first on ties), with each one's
    parent: the innermost operator around it (they nest, as calls on one thread do)."""

    def __init__(self, index: np.ndarray, signature: _Signature):
        index = index[np.lexsort((-signature.end[index], signature.ts[index]))]
        self.index, self.ts, self.end = index, signature.ts[index], signature.end[index]
        self.name = signature.name_id[signature.key[index]]
        # the operators by name, then start: an operator's namesakes after a time by binary search
        self.by_name = np.lexsort((self.ts, self.name))
        self.by_name_key, self.by_name_ts = self.name[self.by_name], self.ts[self.by_name]
        self.parent = np.full(index.size, -1)
        stack: list[int] = []
        for position, (start, end) in enumerate(zip(self.ts.tolist(), self.end.tolist())):
            while stack and self.end[stack[-1]] <= start:
                stack.pop()
            if stack and end <= self.end[stack[-1]]:
                self.parent[position] = stack[-1]
            stack.append(position)

    def around(self, start: float, end: float) -> list[int]:
        """The operators that hold [start, end], innermost first: among the last one to start by
        `start` and its parents (every operator open at `start` is one of them)."""
        position = int(np.searchsorted(self.ts, start, side="right")) - 1
        chain = []
        while position >= 0:
            if self.ts[position] <= start and self.end[position] >= end:
                chain.append(position)
            position = int(self.parent[position])
        return chain

    def same_name_after(self, position: int, after: float) -> float | None:
        """Where the first operator inside operator `position` with its name (overload aside),
        starting at `after` or later, ends: the CPU kernel dispatched again; None if none."""
        name = self.name[position]
        lo, hi = np.searchsorted(self.by_name_key, [name, name + 1])
        found = lo + int(np.searchsorted(self.by_name_ts[lo:hi], after))
        if found >= hi:
            return None
        other = int(self.by_name[found])
        return float(self.end[other]) if self.end[other] <= self.end[position] else None


class _Signature:
    """One trace's events sorted into what the rule reads: per thread its operators, its copies
    (with their kinds) and its launches."""

    def __init__(self, columns: EventColumns, naming: TraceNaming):
        kinds = self._key_kinds(columns.keys, naming)
        self.names = [name for _, name in columns.keys]
        normal: dict[str, int] = {}
        self.name_id = np.array([normal.setdefault(normalize_op(name), len(normal)) for name in self.names],
                                dtype=np.int64)
        key, self.ts, self.tid, link = columns.key, columns.ts, columns.tid, columns.correlation
        self.end = self.ts + columns.dur
        self.key = key
        device_copy, device_work = kinds["device_copy"][key], kinds["device_work"][key]
        # the direction of each linked device copy, by correlation id
        direction = kinds["direction"][key]
        linked = device_copy & (link >= 0)
        self.copy_direction = dict(zip(link[linked].tolist(), direction[linked].tolist()))
        kernel_links = np.unique(link[device_work & (link >= 0)])
        host = ~(kinds["device"][key])
        launched = host & (link >= 0) & np.isin(link, kernel_links)
        self.launch = (kinds["launch"][key] | launched) & host
        # where no device event is linked to the host, a device kernel starting inside an op is its own
        unlinked = not (kinds["device"][key] & (link >= 0)).any()
        self.device_starts = np.sort(self.ts[device_work]) if unlinked else np.empty(0)
        self.op = kinds["op"][key]
        self.to_cpu = kinds["to_cpu"][key]
        self.crossing_op = kinds["crossing_op"][key]
        self.copy = kinds["copy"][key]
        self.link = link

    @staticmethod
    def _key_kinds(keys: list[tuple[str, str]], naming: TraceNaming) -> dict[str, np.ndarray]:
        copy_op_re, memcpy_re = _search(naming.copy_op_patterns), _search(naming.memcpy_patterns)
        to_cpu_re, crossing_re = _search(naming.to_cpu_op_patterns), _search(naming.device_copy_op_patterns)
        launch_re, comm_re = _search(naming.launch_patterns), _search(naming.communication_patterns)
        to_host_re, to_device_re = _search(naming.to_host_copy_patterns), _search(naming.to_device_copy_patterns)
        within_re = _search(naming.within_copy_patterns)
        host_ops, runtime = set(naming.host_op_categories), set(naming.runtime_categories)
        device_cats, memcpy_cats = set(naming.device_categories), set(naming.memcpy_categories)
        rows: dict[str, list[Any]] = defaultdict(list)
        for cat, name in keys:
            op, device = cat in host_ops, cat in device_cats
            device_copy = device and not comm_re.search(name) and (cat in memcpy_cats or bool(memcpy_re.search(name)))
            rows["device"].append(device)
            rows["device_copy"].append(device_copy)
            rows["device_work"].append(device and not device_copy)
            rows["direction"].append(
                OUT if to_host_re.search(name) else BACK if to_device_re.search(name)
                else WITHIN if within_re.search(name) else UNKNOWN)
            to_cpu = op and bool(to_cpu_re.search(name))
            crossing = op and bool(crossing_re.search(name))
            copy = (op and bool(copy_op_re.search(name))) or crossing or (cat in runtime and bool(memcpy_re.search(name)))
            rows["to_cpu"].append(to_cpu)
            rows["crossing_op"].append(crossing)
            rows["copy"].append(copy)
            rows["op"].append(op and not copy and not to_cpu)
            rows["launch"].append(cat in runtime and bool(launch_re.search(name)) and not memcpy_re.search(name))
        return {k: np.array(v, dtype=np.int64 if k == "direction" else bool) for k, v in rows.items()}

    def fallbacks(self) -> list[tuple[str, float, int]]:
        """(op name, host µs, copies) of each call that fell back."""
        calls = []
        for thread in np.unique(self.tid[self.copy]).tolist():
            calls += self._thread(thread)
        return calls

    def _thread(self, thread: int) -> list[tuple[str, float, int]]:
        on = self.tid == thread
        starts, ends = iv.merge(self.ts[on & self.copy], self.end[on & self.copy])
        wrappers = iv.merge(self.ts[on & self.to_cpu], self.end[on & self.to_cpu])
        # a `_to_cpu` with no copy recorded inside is one copy itself
        empty = np.searchsorted(starts, wrappers[1]) == np.searchsorted(starts, wrappers[0])
        starts, ends = np.concatenate([starts, wrappers[0][empty]]), np.concatenate([ends, wrappers[1][empty]])
        order = np.argsort(starts, kind="stable")
        starts, ends = starts[order], ends[order]  # disjoint: both sorted
        kinds = self._copy_kinds(on, starts, ends, wrappers)
        after = {"maybe": self._next(kinds, (BACK, CROSSING, UNKNOWN)), "known": self._next(kinds, (BACK, CROSSING))}
        # a copy out of unknown direction needs a later copy known to cross: without one, no op to look at
        unknown_alone = (kinds == UNKNOWN) & (after["known"][1:] == kinds.size)
        copies_out = np.flatnonzero((kinds != BACK) & (kinds != WITHIN) & ~unknown_alone)
        if not copies_out.size:
            return []
        ops = _Ops(np.flatnonzero(on & self.op), self)
        launches = np.sort(self.ts[on & self.launch])
        seen: set[int] = set()
        calls = []
        for first in copies_out.tolist():
            for position in ops.around(starts[first], ends[first]):  # innermost first
                index = int(ops.index[position])
                if self._copy_back(position, first, starts, ends, kinds, ops, after) is None:
                    continue
                if index not in seen and not self._launches(index, launches):
                    seen.add(index)
                    inside = slice(np.searchsorted(starts, self.ts[index]), np.searchsorted(ends, self.end[index], "right"))
                    calls.append((self.names[self.key[index]], float(self.end[index] - self.ts[index]),
                                  int(np.count_nonzero(kinds[inside] != WITHIN))))
                break
        return calls

    def _copy_kinds(self, on: np.ndarray, starts: np.ndarray, ends: np.ndarray, wrappers: iv.Intervals) -> np.ndarray:
        """Each copy's kind: OUT inside a `_to_cpu` or linked to a copy to the host, BACK linked to
        one to the device, WITHIN linked to one that stays, CROSSING with a host copy to or from a
        device inside, else UNKNOWN."""
        kinds = np.full(starts.size, UNKNOWN)
        if not starts.size:
            return kinds

        def which(times: np.ndarray) -> np.ndarray:
            return np.clip(np.searchsorted(starts, times, side="right") - 1, 0, starts.size - 1)

        crossing = self.ts[on & self.crossing_op]
        kinds[which(crossing)[crossing < ends[which(crossing)]]] = CROSSING
        linked = on & self.copy & (self.link >= 0)
        times = self.ts[linked]
        directions = np.array([self.copy_direction.get(link, UNKNOWN) for link in self.link[linked].tolist()],
                              dtype=np.int64)
        positions = which(times)
        named = (directions != UNKNOWN) & (times >= starts[positions]) & (times < ends[positions])
        for position, direction in zip(positions[named].tolist(), directions[named].tolist()):
            # what the device did decides; of several copies in one, to the host first, then back
            known = kinds[position] in (OUT, BACK, WITHIN)
            kinds[position] = min(kinds[position], direction) if known else direction
        if wrappers[0].size:
            inside = np.searchsorted(wrappers[0], starts, side="right") - 1
            held = (inside >= 0) & (starts < wrappers[1][np.clip(inside, 0, None)])
            kinds[held] = OUT
        return kinds

    @staticmethod
    def _next(kinds: np.ndarray, wanted: tuple[int, ...]) -> np.ndarray:
        """For each copy k, the first copy at k or later of a `wanted` kind (kinds.size if none)."""
        at = np.where(np.isin(kinds, wanted), np.arange(kinds.size), kinds.size)
        return np.append(np.minimum.accumulate(at[::-1])[::-1], kinds.size)

    def _copy_back(self, position: int, first: int, starts: np.ndarray, ends: np.ndarray, kinds: np.ndarray,
                   ops: _Ops, after: dict[str, np.ndarray]) -> int | None:
        """The copy back of the signature in op `ops.index[position]` with copy `first` as the copy
        out (or None): the first later copy inside the op that may go back, after the CPU kernel when
        the copy out is not known to go to the CPU. `after` holds `_next` of the copies' kinds."""
        out = int(kinds[first])
        if out == OUT:
            back = int(after["maybe"][first + 1])
        else:
            # the CPU kernel recorded between the copies, and one of them known to cross
            kernel_end = ops.same_name_after(position, ends[first])
            if kernel_end is None:
                return None
            following = int(np.searchsorted(starts, kernel_end))
            back = int(after["maybe" if out == CROSSING else "known"][following])
        return back if back < kinds.size and ends[back] <= ops.end[position] else None

    def _launches(self, index: int, launches: np.ndarray) -> bool:
        start, end = self.ts[index], self.end[index]
        inside = np.searchsorted(launches, end) - np.searchsorted(launches, start)
        device = np.searchsorted(self.device_starts, end) - np.searchsorted(self.device_starts, start)
        return bool(inside or device)
