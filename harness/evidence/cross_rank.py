"""Across the ranks of one run: whether they are pipeline stages (`parallel_layout`), which rank is
a straggler among the ranks doing the same work (`find_stragglers`), and the critical path through
the ranks, step by step (`critical_path`).

    layout, traces = parallel_layout(traces, [c.keys for c in columns], naming)
    stragglers = find_stragglers({"rank0": [12.1, 12.3, ...], ...}, {"rank0": "all ranks", ...})
    path = critical_path({"rank0": [12.1, ...], ...}, {"rank0": [15.0, ...], ...})

A rank's own time in a step (ms) is the step less the time it was blocked on its peers (in
receives, blocking waits, or communication with no compute or copy beside it): on synchronous
ranks (collectives every step, or a pipeline handing activations on) the others wait for the
slowest rank's own work, so differences in own time are what the ranks themselves cost.
"""

from __future__ import annotations

import re
from typing import Literal

import numpy as np
from pydantic import BaseModel, Field

from harness.evidence.trace_stream import RankId, RankTrace, named_place, rank_of
from harness.evidence.traces import TraceNaming

# a process group of the pipeline, by its description: torchtitan's device-mesh `mesh_pp`,
# Megatron's `PIPELINE_MODEL_PARALLEL_GROUP`, a plain `pp`
PIPELINE_GROUP = re.compile(r"(?<![a-z])(pp|pipe|pipeline)(?![a-z])", re.IGNORECASE)
STRAGGLER_LEVEL = 0.05
STRAGGLER_MIN_SHARE = 0.01
MIN_STEPS = 3
STRAGGLER_RULE = (
    f"a rank is a straggler when, over the steps it shares with its peers (the ranks doing the same work: one "
    f"pipeline stage's ranks, else every rank), its own time per step exceeds the median of the other peers' in "
    f"the same step by a one-sided paired t-test at {STRAGGLER_LEVEL} divided by the number of peers (Bonferroni), "
    f"and by at least {STRAGGLER_MIN_SHARE:.0%} of their median on average; otherwise within noise; not run with "
    f"fewer than {MIN_STEPS} shared steps or no peer")


class Layout(BaseModel):
    kind: Literal["pipeline", "parallel", "single"] = Field(description=(
        "'pipeline': the ranks are pipeline stages; 'parallel': several ranks, none a stage of a pipeline "
        "(data-, tensor- or expert-parallel peers); 'single': one rank."))
    ranks: int
    stages: int = Field(description="Pipeline stages (1 unless a pipeline).")
    evidence: str = Field(description="What decided it.")


class _Placed(RankId):
    """A rank placed by the layout, with the label it is shown by."""

    shown: str

    @property
    def label(self) -> str:
        return self.shown


def _receives(keys: list[tuple[str, str]], naming: TraceNaming) -> list[str]:
    """Names of point-to-point receives among a trace's keys: communication, a receive, not a send
    (NCCL's `SendRecv` kernel, which all-to-all runs on, both sends and receives)."""
    comm, receive, send = (re.compile(naming.regex(field), re.IGNORECASE)
                           for field in ("communication_patterns", "receive_patterns", "send_patterns"))
    return [name for _, name in keys if comm.search(name) and receive.search(name) and not send.search(name)]


def _pipeline_group(header: dict) -> tuple[int, int, int] | None:
    """(global rank, stage, replica) from `distributedInfo` when a process group of the rank's is
    the pipeline's (its `pg_desc`, see PIPELINE_GROUP): the stage is the rank's place in the group's
    ranks, the replica the group's lowest rank."""
    info = header.get("distributedInfo")
    if not isinstance(info, dict) or not isinstance(info.get("rank"), int):
        return None
    rank = info["rank"]
    for group in info.get("pg_config") or []:
        ranks = group.get("ranks") if isinstance(group, dict) else None
        if (isinstance(ranks, list) and len(ranks) > 1 and rank in ranks
                and PIPELINE_GROUP.search(str(group.get("pg_desc") or ""))):
            return rank, ranks.index(rank), min(ranks)
    return None


def parallel_layout(traces: list[RankTrace], keys: list[list[tuple[str, str]]],
                    naming: TraceNaming) -> tuple[Layout, list[RankTrace]]:
    """Whether one run's traces (`traces`, with each trace's (cat, name) keys in `keys`) are
    pipeline stages, and the traces placed accordingly. The rule, first that applies:

    1. file names: two or more distinct pipeline-stage tokens (SGLang's `-PP-<p>`, vLLM's `pp<p>`)
       -> a pipeline, stage by the token;
    2. `distributedInfo`: every trace's rank is in a process group whose `pg_desc` names the
       pipeline (PIPELINE_GROUP) -> a pipeline, stage = the rank's place in that group;
    3. the traces: point-to-point receives (TraceNaming's communication and receive patterns, not
       its send patterns: NCCL's `SendRecv` kernel is all-to-all's too) -> a pipeline, stage as the
       trace's rank (name tokens, `-rank-<n>`, `distributedInfo.rank`);
    4. otherwise one trace is 'single' (shown as `rank<n>` unless its name gives its stage),
       several 'parallel': every rank placed in one stage (PP0),
       labelled by what tells them apart (`TP1`, `DP0-TP1`; `rank<n>` by the global rank), so no
       wait chain and no balance plan is read into data- or tensor-parallel peers.

    Returns (Layout, the traces, re-placed where 2 or 4 moved them)."""
    count = len(traces)
    if count < 2:
        # one trace's stage number from its global rank (`distributedInfo`, `-rank-<n>`) is no
        # pipeline stage: shown as `rank<n>`; a stage its name gives (`-PP-<p>`) stays
        placed = [t if named_place(t.path) else t.model_copy(update={"rank": _Placed(
            **t.rank.model_dump(exclude={"pp"}), pp=0, shown=f"rank{t.rank.rank if t.rank.rank is not None else t.rank.pp}")})
            for t in traces]
        return Layout(kind="single", ranks=count, stages=1, evidence="one trace"), placed
    named = [rank_of(t.path, {}) for t in traces]
    stages = {r.pp for r in named if r.rank is None}  # name tokens, not `-rank-<n>`'s global rank
    if len(stages) > 1:
        return Layout(kind="pipeline", ranks=count, stages=len(stages),
                      evidence=f"the file names give {len(stages)} pipeline stages"), traces
    groups = [_pipeline_group(t.header) for t in traces]
    if all(groups):
        replicas = {replica for _, _, replica in groups}
        placed = [t.model_copy(update={"rank": _Placed(
            pp=stage, dp=replica, tp=t.rank.tp, ep=t.rank.ep, rank=rank,
            shown=f"PP{stage}" if len(replicas) == 1 else f"rank{rank}-PP{stage}")})
            for t, (rank, stage, replica) in zip(traces, groups)]
        return Layout(kind="pipeline", ranks=count, stages=len({g[1] for g in groups}),
                      evidence="distributedInfo: each rank is in a pipeline process group"), placed
    receives = sorted({name for trace_keys in keys for name in _receives(trace_keys, naming)})
    if receives:
        return Layout(kind="pipeline", ranks=count, stages=len({t.rank.pp for t in traces}),
                      evidence=f"point-to-point receives in the traces ({', '.join(receives[:3])})"), traces
    varying = [axis for axis in ("dp", "tp", "ep") if len({getattr(t.rank, axis) for t in traces}) > 1]
    by_rank = len({t.rank.pp for t in traces}) > 1  # the global rank, read as a stage by rank_of

    def shown(rank: RankId) -> str:
        parts = [f"{axis.upper()}{getattr(rank, axis)}" for axis in varying]
        return "-".join(parts + ([f"rank{rank.rank if rank.rank is not None else rank.pp}"] if by_rank else []))

    placed = [t.model_copy(update={"rank": _Placed(**t.rank.model_dump(exclude={"pp"}), pp=0, shown=shown(t.rank))})
              for t in traces]
    return Layout(kind="parallel", ranks=count, stages=1, evidence=(
        "no pipeline-stage file names, no pipeline process group in distributedInfo and no point-to-point "
        "receive in the traces: the ranks are read as data/tensor-parallel peers")), placed


class RankSteps(BaseModel):
    rank: str
    peers: str = Field(description="The group of ranks doing the same work it is compared with.")
    steps: int
    own_ms: float = Field(description="Mean own time per step.")
    excess_ms: float | None = Field(description="Mean over the steps of its own time less the other peers' median.")
    p_value: float | None
    verdict: Literal["straggler", "within noise", "not run"]
    reason: str | None = None


class Stragglers(BaseModel):
    rule: str = STRAGGLER_RULE
    ranks: list[RankSteps]
    stragglers: list[str]


def find_stragglers(own_ms: dict[str, list[float]], peers: dict[str, str]) -> Stragglers:
    """Stragglers by STRAGGLER_RULE: `own_ms` is each rank's own time per step (ms, steps in order),
    `peers` each rank's group (ranks in one group do the same work). Steps pair up by position,
    over the first n every peer has."""
    from scipy import stats

    rows = []
    for group in dict.fromkeys(peers.values()):
        members = [r for r in own_ms if peers[r] == group]
        n = min(len(own_ms[r]) for r in members)
        for rank in members:
            mine = np.array(own_ms[rank][:n])
            base = {"rank": rank, "peers": group, "steps": n, "own_ms": float(np.mean(own_ms[rank] or [0.0]))}
            if len(members) < 2 or n < MIN_STEPS:
                rows.append(RankSteps(**base, excess_ms=None, p_value=None, verdict="not run",
                                      reason="no peer doing the same work" if len(members) < 2 else
                                      f"{n} step(s) shared with its peers; {MIN_STEPS} needed"))
                continue
            others = np.median(np.array([own_ms[r][:n] for r in members if r != rank]), axis=0)
            excess = mine - others
            if np.ptp(excess) == 0:  # no spread: a t-test is undefined, the sign is the answer
                p_value = 0.0 if excess[0] > 0 else 1.0
            else:
                p_value = float(stats.ttest_1samp(excess, 0.0, alternative="greater").pvalue)
            slower = p_value < STRAGGLER_LEVEL / len(members) and excess.mean() >= STRAGGLER_MIN_SHARE * np.median(others)
            rows.append(RankSteps(**base, excess_ms=float(excess.mean()), p_value=p_value,
                                  verdict="straggler" if slower else "within noise"))
    return Stragglers(ranks=rows, stragglers=[r.rank for r in rows if r.verdict == "straggler"])


class CriticalStep(BaseModel):
    step: int = Field(description="The step's position (0: the first profiled step).")
    rank: str = Field(description="The rank with the most own time: the others wait for it.")
    own_ms: float
    step_ms: float = Field(description="The step's longest length over the ranks.")
    lead_ms: float = Field(description="Its own time less the next rank's.")


class CriticalPath(BaseModel):
    status: Literal["ok", "not run"]
    reason: str | None = None
    steps: list[CriticalStep] = Field(default_factory=list)
    share: dict[str, float] = Field(default_factory=dict, description="Share of the steps each rank was critical in.")
    rank: str | None = Field(None, description="The rank critical in most steps.")


def critical_path(own_ms: dict[str, list[float]], step_ms: dict[str, list[float]]) -> CriticalPath:
    """The path through the ranks, step by step (ms in, steps paired by position over those all
    ranks have): ranks that meet at collectives every step (data-, tensor-parallel) or hand
    activations on (a pipeline) finish a step no sooner than the rank with the most own work lets
    them; that rank is the step's critical rank, and `lead_ms` is by how much. 'not run' with
    fewer than two ranks or no step all have."""
    if len(own_ms) < 2:
        return CriticalPath(status="not run", reason="one rank: no path across ranks")
    n = min(len(v) for v in own_ms.values())
    if n == 0:
        return CriticalPath(status="not run", reason="no step that every rank has")
    names = list(own_ms)
    table = np.array([own_ms[r][:n] for r in names])
    lengths = np.array([step_ms[r][:n] for r in names]).max(axis=0)
    order = np.argsort(-table, axis=0, kind="stable")
    steps = [CriticalStep(step=s, rank=names[order[0, s]], own_ms=float(table[order[0, s], s]),
                          step_ms=float(lengths[s]), lead_ms=float(table[order[0, s], s] - table[order[1, s], s]))
             for s in range(n)]
    counts = {r: sum(step.rank == r for step in steps) / n for r in names}
    return CriticalPath(status="ok", steps=steps, share={r: v for r, v in counts.items() if v},
                        rank=max(counts, key=counts.__getitem__))
