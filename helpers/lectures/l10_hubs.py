"""The hub tail: how many in-links a graph's biggest vertices hold, and the control that removes them.

A kernel that gives each vertex one thread is done only when the thread of the biggest hub has walked all of
its in-links, one after another. The control (``generators.without_hub_in_links``) keeps everything else of
the graph and drops only those in-links; ``with_and_without_hubs`` times variants on both graphs,
interleaved, so that the course's decision rule (``helpers.measure.verdicts``) says whether the hubs took the time.
Lectures 10-12 use it; nothing here imports CuPy at import time.
"""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from helpers.core import generators
from helpers.driver import DeviceGraph, graph_label, make_iteration
from helpers.measure import results, verdicts
from helpers.measure.gpu import device_facts, time_paired

ABOVE = 1_000          # a hub has more in-links than this (web-Google's stand-in: 31 such vertices)
PARTS = ("kernel", "iteration")
GRAPHS = ("with hubs", "without hubs")


def hub_summary(graph, above: int = ABOVE) -> dict:
    """The vertices with more than ``above`` in-links: how many, the in-links they hold, that share of all
    edges, and the largest in-degree (what the busiest thread walks)."""
    degree = np.asarray(graph.in_degree, dtype=np.int64)
    hubs = degree > above
    held = int(degree[hubs].sum())
    return {"hubs": int(hubs.sum()), "in-links": held, "share of edges": held / max(int(graph.num_edges), 1),
            "largest in-degree": int(degree.max(initial=0))}


def _verdict_words(v: verdicts.Verdict) -> str:
    return f"{v.word} without hubs" if v.word in ("faster", "slower") else v.word


def with_and_without_hubs(graph, names, *, above: int = ABOVE, dg=None, part: str = "kernel",
                          launches: int = 20, trials: int = 15):
    """Each variant timed on ``graph`` and on the same graph without the in-links of its vertices above
    ``above``, all in ONE interleaved measurement (``gpu.time_paired``), so any two Timings of the table
    compare paired. ``part``: 'kernel' (the sum over in-links alone) or 'iteration' (a whole iteration).
    ``dg``: the graph already on the GPU, if it is. A DataFrame: variant, 'with hubs' and 'without hubs'
    (Timings), their ratio with its 95% interval, and the verdict on 'without' against 'with'."""

    names = [names] if isinstance(names, str) else list(names)
    if not names:
        raise ValueError("name at least one variant to time with and without the hubs' in-links")
    if part not in PARTS:
        raise ValueError(f"part must be one of {', '.join(PARTS)}, got {part!r}")
    control = generators.without_hub_in_links(graph, above)
    devices = dict(zip(GRAPHS, (dg if dg is not None else DeviceGraph(graph), DeviceGraph(control))))
    runs = {}
    for name in names:
        for label, device in devices.items():
            step = make_iteration(device, name)
            step.run()                                   # compiled, and the contributions written
            runs[(name, label)] = step.launch_kernel if part == "kernel" else step.run
    times = time_paired(runs, launches=launches, trials=trials)
    rows = []
    for name in names:
        with_hubs, without = times[(name, GRAPHS[0])], times[(name, GRAPHS[1])]
        v = verdicts.compare(without, with_hubs)
        rows.append({"variant": name, GRAPHS[0]: with_hubs, GRAPHS[1]: without, "without / with": v.ratio,
                     "95% interval": f"{v.low:.3g}-{v.high:.3g}", "verdict": _verdict_words(v)})
    frame = pd.DataFrame(rows)
    held = hub_summary(graph, above)
    frame.attrs.update(
        gpu=device_facts().name, graph=graph_label(graph),
        timing=f"CUDA events; the {'sum over in-links alone' if part == 'kernel' else 'whole iteration'}, "
               f"{trials} interleaved trials of {launches} back-to-back launches on both graphs; median and "
               "range; verdict: 95% interval of the paired ratio against a 3% margin (helpers.measure.verdicts)",
        note=f"without hubs: the same graph without the {held['in-links']:,} in-links "
             f"({held['share of edges']:.1%} of the edges) of its {held['hubs']} vertices above {above:,}")
    return frame


def plot_with_and_without(frame, ax=None, title: str = ""):
    """Each variant's median time with and without the hubs' in-links, side by side (bars: the range)."""

    if ax is None:
        _, ax = plt.subplots(figsize=(7, 0.55 * len(frame) + 1.4))
    rows = np.arange(len(frame))
    for shift, label, colour in ((-0.2, GRAPHS[0], "tab:red"), (0.2, GRAPHS[1], "tab:blue")):
        timings = list(frame[label])
        median = np.array([t.median_ms for t in timings])
        spread = np.vstack([median - [t.min_ms for t in timings], [t.max_ms for t in timings] - median])
        ax.barh(rows + shift, median, height=0.4, xerr=spread, color=colour, ecolor="black", capsize=2,
                label=label)
    ax.set_yticks(rows, list(frame["variant"]))
    ax.invert_yaxis()
    results.log_scale(ax, "x")
    ax.set_xlabel("ms (median; whiskers: fastest to slowest trial)")
    ax.set_title(title or f"{frame.attrs.get('graph', '')}\n{frame.attrs.get('gpu', '')}", fontsize=8)
    ax.legend(fontsize=7)
    ax.figure.tight_layout()
    return ax


def longest_block(timeline) -> dict:
    """From an ``instruments.block_timeline`` frame (one row per block, in block order): the longest block,
    its duration and multiprocessor, the median block's duration, and the whole launch's span (first start
    to last stop), in microseconds."""
    durations = np.asarray(timeline["stop_us"] - timeline["start_us"], dtype=np.float64)
    if durations.size == 0:
        raise ValueError("the timeline has no blocks")
    worst = int(np.argmax(durations))
    return {"block": int(timeline.index[worst]), "longest_us": float(durations[worst]),
            "sm": int(np.asarray(timeline["sm"])[worst]),
            "median_us": float(np.median(durations)),
            "span_us": float(timeline["stop_us"].max() - timeline["start_us"].min())}
