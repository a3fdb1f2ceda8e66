"""Plumbing for lectures 31, 32, 40 and 50: the course against the libraries as the bench times it, verdicts
against one subject, what a control removes, a run's breakdown, one size of a size sweep and its plots."""
from __future__ import annotations

import math
import time
import warnings
from types import SimpleNamespace

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from helpers import driver as pg
from helpers.core.graph import Graph
from helpers.core.reference import l1_distance
from helpers.driver import baselines, floors
from helpers.driver.compare import WHOLE, head_to_head
from helpers.measure import verdicts
from helpers.measure.cpu import cpu_ms
from helpers.measure.figures import per_second, plot_medians_with_ranges
from helpers.measure.gpu import Timing, require_gpu

CPU_WARMUP_S = 0.2                                # a CPU baseline warms up this long before it is timed


def against_libraries(dg, floor, *, launches: int = 20, trials: int = 15) -> dict:
    """``compare.head_to_head``'s Timings, as ``python -m helpers.bench`` times them."""
    cp = require_gpu()
    settings = SimpleNamespace(launches=launches, trials=trials)
    return head_to_head(pg.as_device_graph(dg), settings, floor, cp, names=WHOLE)["timings"]


def versus_table(timings: dict, subject: str, floor: Timing | None = None):
    """Every timing against ``subject``'s: multiple of the gather ``floor``, ratio, interval, verdict."""
    rows = []
    for name, timing in timings.items():
        row = {"what": name, "time": timing}
        if floor is not None:
            row["x_gather_floor"] = timing.median_ms / floor.median_ms
        if name != subject:
            v = verdicts.compare(timings[subject], timing)
            row.update({f"{subject} / it": v.ratio, "95% interval": f"{v.low:.3g}-{v.high:.3g}",
                        f"{subject} is": v.word})
        rows.append(row)
    return pd.DataFrame(rows)


def sentences(timings: dict, subject: str, others) -> list[str]:
    """One sentence per other timing, each with one rounded number: the verdict on ``subject`` against it."""
    return [verdicts.compare(timings[subject], timings[other]).sentence(subject, other) for other in others]


def share_removed(before: verdicts.Verdict, after: verdicts.Verdict) -> float:
    """How much of a slowdown a control removes, 0 to 1: one minus log(ratio after) over log(ratio before)."""
    if before.ratio <= 1:
        raise ValueError(f"no slowdown to explain: the ratio before the control is {before.ratio:.3g}")
    return float(min(max(1 - math.log(after.ratio) / math.log(before.ratio), 0.0), 1.0))


def control_line(cause: str, before: verdicts.Verdict, after: verdicts.Verdict) -> str:
    """A suspected cause in a sentence: supported when its control removes most of the slowdown, with the
    share removed, unless the rule has not settled the gap left."""
    if before.word != "slower":
        return f"{cause}: no slowdown to explain ({before.word})"
    if after.word == "not settled":
        return f"{cause}: not settled; more trials would say how much of the slowdown its control removes"
    share = share_removed(before, after)
    word = "supported" if share >= 0.5 else "not supported"
    return f"{cause}: {word}; its control removes about {share:.0%} of the slowdown"


def run_breakdown(steps: dict, *, beside=()):
    """A run's steps (name -> Timing) with each one's share of the run's medians (``beside``: not in it)."""
    total = sum(t.median_ms for name, t in steps.items() if name not in beside)
    rows = [{"step": name, "time": t, "in the run": name not in beside,
             "% of the run (medians)": 100 * t.median_ms / total if name not in beside else np.nan}
            for name, t in steps.items()]
    return pd.DataFrame(rows).set_index("step")


def cpu_timing(run, repeat: int = 21) -> Timing:
    """A CPU baseline warmed for CPU_WARMUP_S (three calls at least), then ``repeat`` timed calls."""
    start, calls = time.perf_counter(), 0
    while calls < 3 or time.perf_counter() - start < CPU_WARMUP_S:
        run()
        calls += 1
    return cpu_ms(run, repeat=repeat, warmup=0)


def _host_arrays(dg):
    """What the CPU baseline reads, copied from a graph that only lives on the GPU."""
    return SimpleNamespace(num_vertices=dg.num_vertices, in_offsets=dg.in_offsets.get(),
                           in_sources=dg.in_sources.get(), out_degree=dg.out_degree.get())


def size_row(graph, *, copy_gbs: float, cpu_max_edges: int, tol: float = 1e-6, trials: int = 15) -> dict:
    """One size of lecture 32's sweep as a row: floors, ``against_libraries``, the chosen iteration run to
    ``tol`` against float64, the Numba CPU iteration up to ``cpu_max_edges``, whole runs from a host graph."""
    cp = require_gpu()
    on_host = isinstance(graph, Graph)
    dg = pg.DeviceGraph(graph, variant="blocked")
    n, e = dg.num_vertices, dg.num_edges
    floor = floors.measure(dg, copy_gbs=copy_gbs)
    chosen, _ = pg.choose(dg)
    row = {"vertices": n, "edges": e, "built on": "CPU" if on_host else "GPU",
           "vector / L2": 4 * n / floor.l2_bytes, "sectors per edge": floor.sectors_per_edge,
           "gather floor": floor.gather, **against_libraries(dg, floor, trials=trials), "chosen": chosen}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pg.NotConvergedWarning)       # the converged column says it
        result = pg.pagerank_gpu(dg, chosen, tol=tol)
        row.update(iterations=result.iterations, converged=result.converged,
                   l1_to_float64=l1_distance(result.ranks, pg.float64_reference(dg)))
        if e <= cpu_max_edges:
            run, _ = baselines.numba_parallel(graph if on_host else _host_arrays(dg))
            if run is not None:
                row["CPU iteration"] = cpu_timing(run)
                if on_host:
                    row["CPU whole run"] = row["CPU iteration"].scaled(result.iterations)
                    row["GPU whole run"] = cpu_ms(
                        lambda: pg.pagerank_gpu(graph, chosen, tol=tol), repeat=3)
    del dg
    cp.get_default_memory_pool().free_all_blocks()
    return row


def break_even(sweep, gpu: str, cpu: str):
    """The GPU's verdict against the CPU per size of a sweep, and from which size it stays faster."""
    both = [(size, row[gpu], row[cpu]) for size, row in sweep.iterrows()
            if isinstance(row.get(gpu), Timing) and isinstance(row.get(cpu), Timing)]
    words = pd.Series({size: verdicts.compare(g, c).word for size, g, c in both}, name=f"GPU ({gpu}) is",
                      dtype=object)
    if words.empty:
        return words, f"{gpu} against {cpu}: no size where both ran"
    behind = [size for size, word in words.items() if word != "faster"]
    what = f"{gpu} against {cpu}: the GPU is"
    if not behind:
        return words, f"{what} faster at every size compared, from {words.index[0]:,} vertices on"
    if behind[-1] == words.index[-1]:
        return words, f"{what} not faster at the largest size compared ({behind[-1]:,} vertices)"
    first = words.index[list(words.index).index(behind[-1]) + 1]
    return words, f"{what} faster from {first:,} vertices on, at every larger size compared"


def plot_sweep(sweep, columns: dict, *, l2_bytes: int, title: str = "", axes=None):
    """Against the vertex count: ms per iteration of each Timing column (label -> column) and billions of
    edges per second, with where a float32 vector fills this GPU's L2 and a T4's (4 MB, datasheet)."""
    if axes is None:
        _, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    for label, column in columns.items():
        ran = sweep[[isinstance(v, Timing) for v in sweep[column]]] if column in sweep else sweep.iloc[:0]
        if ran.empty:
            continue
        rates = [per_second(t, e) for t, e in zip(ran[column], ran["edges"])]
        for ax, timings in zip(axes, (list(ran[column]), rates)):
            plot_medians_with_ranges(ax, ran.index, timings, ms=4, capsize=2, label=label)
    for ax in axes:
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("vertices")
        ax.axvline(l2_bytes / 4, color="black", ls=":",
                   label=f"vector = this GPU's L2 ({l2_bytes / 2**20:.0f} MiB)")
        ax.axvline(floors.T4_L2_BYTES / 4, color="grey", ls="-.",
                   label="vector = a T4's L2 (4 MB, datasheet)")
    axes[0].set_ylabel("ms per iteration or call (median; bars: range)")
    axes[1].set_ylabel("billion edges per second (median; bars: range)")
    axes[0].legend(fontsize=7)
    axes[0].figure.suptitle(title, fontsize=9)
    axes[0].figure.tight_layout()
    return axes


def summed(*parts: Timing) -> Timing:
    """A prediction from parts measured apart: their minima, medians and maxima summed, as a Timing."""
    return Timing.of([sum(p.min_ms for p in parts), sum(p.median_ms for p in parts),
                      sum(p.max_ms for p in parts)])
