"""Figures for the reports, drawn with matplotlib (Agg, no display) into PNG evidence files.

Each function takes evidence already written (a golden report, an accuracy decision, per-request
samples, a trace report), draws one figure to `path` and returns it, or returns None when
matplotlib is not installed (pip install 'harness[plots]'): a missing figure never stops a step,
the numbers are in the evidence and the report's tables either way.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness.evidence.golden import GoldenReport
    from harness.evidence.traces import TraceReport

# A PNG's metadata would otherwise name the matplotlib version and differ between machines.
_SAVE = {"dpi": 80, "metadata": {"Software": None}, "bbox_inches": "tight"}


def _pyplot() -> Any:
    try:
        import matplotlib
    except ImportError:
        return None
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def plot_golden(report: GoldenReport, path: Path) -> Path | None:
    """Per-tensor error against its tolerance (max |c−r| / (atol + rtol·|r|), log scale) in dump
    order; 1 is the tolerance, bars above it fail, the first divergent op is marked."""
    plt = _pyplot()
    if plt is None or not report.tensors:
        return None
    tiny = 1e-6
    names = [t.name for t in report.tensors]
    ratios = [max(t.tolerance_ratio or 0.0, tiny) if t.tolerance_ratio != float("inf") else 1e6
              for t in report.tensors]
    colors = ["tab:red" if r > 1 else "tab:blue" for r in ratios]
    fig, ax = plt.subplots(figsize=(8, max(2.5, 0.22 * len(names) + 1)))
    ax.barh(range(len(names)), ratios, color=colors)
    ax.set_yticks(range(len(names)), names, fontsize=7)
    ax.invert_yaxis()  # dump order top to bottom
    ax.set_xscale("log")
    ax.axvline(1.0, color="black", linestyle="--", linewidth=1, label="tolerance")
    if report.first_mismatch in names:
        index = names.index(report.first_mismatch)
        ax.annotate("first divergence", (ratios[index], index), xytext=(5, 0), textcoords="offset points",
                    va="center", fontsize=7, color="tab:red")
    ax.set_xlabel("max error / tolerance (log)")
    ax.set_title("Golden comparison: error per op, in dump order")
    ax.legend(loc="lower right", fontsize=7)
    return _save(plt, fig, path)


def plot_accuracy(difference: float, low: float | None, high: float | None, margin: float, title: str,
                  path: Path) -> Path | None:
    """The candidate − baseline difference (points) with its confidence interval, against the
    non-inferiority margin (−margin)."""
    plt = _pyplot()
    if plt is None:
        return None
    fig, ax = plt.subplots(figsize=(6, 1.8))
    if low is not None and high is not None:
        ax.errorbar([difference], [0], xerr=[[difference - low], [high - difference]], fmt="o", capsize=6,
                    color="tab:blue", label="difference, CI")
    else:
        ax.plot([difference], [0], "o", color="tab:blue", label="difference")
    ax.axvline(-margin, color="tab:red", linestyle="--", label=f"margin −{margin:g}")
    ax.axvline(0, color="grey", linewidth=0.8)
    ax.set_yticks([])
    ax.set_xlabel("candidate − baseline (points)")
    ax.set_title(title, fontsize=9)
    ax.legend(loc="upper left", fontsize=7, bbox_to_anchor=(1.0, 1.0))
    return _save(plt, fig, path)


def plot_latency(samples: dict[str, dict[str, list[float]]], units: dict[str, str], path: Path) -> Path | None:
    """Per-request distributions, candidate vs reference, one panel per metric:
    `samples[metric] = {"candidate": [...], "reference": [...]}`."""
    plt = _pyplot()
    if plt is None or not samples:
        return None
    fig, axes = plt.subplots(1, len(samples), figsize=(3.2 * len(samples), 3), squeeze=False)
    for ax, (metric, sides) in zip(axes[0], samples.items()):
        data = [sides.get("candidate", []), sides.get("reference", [])]
        ax.boxplot(data, tick_labels=["candidate", "reference"], showmeans=True)
        for position, values in enumerate(data, 1):
            ax.plot([position] * len(values), values, ".", alpha=0.4, color="tab:blue")
        ax.set_title(metric, fontsize=9)
        ax.set_ylabel(units.get(metric, ""))
    fig.suptitle("Per-request samples, same run (A/B interleaved)", fontsize=10)
    return _save(plt, fig, path)


def plot_trace_split(report: TraceReport, path: Path) -> Path | None:
    """Compute / memcpy / communication / idle per device stream (µs), stacked."""
    plt = _pyplot()
    if plt is None or not report.split:
        return None
    rows = report.split
    labels = [f"{r.device}/{r.stream}" for r in rows]
    fig, ax = plt.subplots(figsize=(7, max(2.0, 0.35 * len(rows) + 1)))
    left = [0.0] * len(rows)
    for key, color in (("compute", "tab:blue"), ("memcpy", "tab:orange"), ("communication", "tab:green"),
                       ("idle", "lightgrey")):
        values = [getattr(r, f"{key}_us") / 1000 for r in rows]
        ax.barh(labels, values, left=left, color=color, label=key)
        left = [a + b for a, b in zip(left, values)]
    ax.invert_yaxis()
    ax.set_xlabel("ms")
    ax.set_title("Trace time split per device stream", fontsize=10)
    ax.legend(fontsize=7, loc="lower right")
    return _save(plt, fig, path)


def _save(plt: Any, fig: Any, path: Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, **_SAVE)
    plt.close(fig)
    return path
