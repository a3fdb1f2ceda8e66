"""The hub tail (lectures 10-12): how many in-links a graph's biggest vertices hold, and variants timed with
and without those in-links (``generators.without_hub_in_links``), interleaved, judged by the verdict rule."""
from __future__ import annotations

import numpy as np
import pandas as pd

from helpers.core import generators
from helpers.driver import DeviceGraph, graph_label, make_iteration
from helpers.measure import verdicts
from helpers.measure.figures import finish, grouped_bars, new_axes
from helpers.measure.gpu import device_facts, time_paired

ABOVE = 1_000          # a hub has more in-links than this (web-Google's stand-in: 31 such vertices)
PARTS = ("kernel", "iteration")
GRAPHS = ("with hubs", "without hubs")


def hub_summary(graph, above: int = ABOVE) -> dict:
    """The vertices above ``above`` in-links: how many, their in-links and share of edges, the largest."""
    degree = np.asarray(graph.in_degree, dtype=np.int64)
    hubs = degree > above
    held = int(degree[hubs].sum())
    return {"hubs": int(hubs.sum()), "in-links": held, "share of edges": held / max(int(graph.num_edges), 1),
            "largest in-degree": int(degree.max(initial=0))}


def with_and_without_hubs(graph, names, *, above: int = ABOVE, dg=None, part: str = "kernel",
                          launches: int = 20, trials: int = 15):
    """Each variant's ``part`` ('kernel' alone or a whole 'iteration') on ``graph`` (``dg`` if on the GPU)
    and without its hubs' in-links, in ONE paired measurement: Timings, their ratio, interval and verdict."""
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
                     "95% interval": f"{v.low:.3g}-{v.high:.3g}",
                     "verdict": f"{v.word} without hubs" if v.word in ("faster", "slower") else v.word})
    frame = pd.DataFrame(rows)
    held = hub_summary(graph, above)
    what = "sum over in-links alone" if part == "kernel" else "whole iteration"
    frame.attrs.update(
        gpu=device_facts().name, graph=graph_label(graph),
        timing=f"CUDA events; the {what}, {trials} interleaved trials of {launches} back-to-back launches on "
               "both graphs; median and range; verdict: 95% interval of the paired ratio against a 3% margin "
               "(helpers.measure.verdicts)",
        note=f"without hubs: the same graph without the {held['in-links']:,} in-links "
             f"({held['share of edges']:.1%} of the edges) of its {held['hubs']} vertices above {above:,}")
    return frame


def plot_with_and_without(frame, ax=None, title: str = ""):
    """Each variant's median time with and without the hubs' in-links, side by side (bars: the range)."""
    ax = new_axes(ax, (7, 0.55 * len(frame) + 1.4))
    grouped_bars(ax, list(frame["variant"]), {g: list(frame[g]) for g in GRAPHS}, ("tab:red", "tab:blue"))
    ax.set_xlabel("ms (median; whiskers: fastest to slowest trial)")
    return finish(ax, title or f"{frame.attrs.get('graph', '')}\n{frame.attrs.get('gpu', '')}")


def longest_block(timeline) -> dict:
    """A ``block_timeline``'s longest block, its SM, the median block and the launch's span, in µs."""
    durations = np.asarray(timeline["stop_us"] - timeline["start_us"], dtype=np.float64)
    if durations.size == 0:
        raise ValueError("the timeline has no blocks")
    worst = int(np.argmax(durations))
    return {"block": int(timeline.index[worst]), "longest_us": float(durations[worst]),
            "sm": int(np.asarray(timeline["sm"])[worst]), "median_us": float(np.median(durations)),
            "span_us": float(timeline["stop_us"].max() - timeline["start_us"].min())}
