"""Plumbing for the lectures that measure the course as a whole (31 the benchmark, 32 scaling, 40 precision,
50 beyond one GPU): the course's whole iterations against the libraries, timed exactly as the bench times
them; tables of verdicts against one subject; a whole run's time breakdown; one size of a size sweep, where
the GPU overtakes the CPU, and their plots. Every "faster" comes from ``helpers.measure.verdicts``' rule.
Nothing here imports CuPy at import time."""
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
from helpers.driver.compare import head_to_head
from helpers.measure import verdicts
from helpers.measure.cpu import cpu_ms
from helpers.measure.gpu import Timing, require_gpu

WHOLE = ("fused", "blocked")                      # the course's whole iterations, replayed as CUDA graphs
CPU_WARMUP_S = 0.2                                # a CPU baseline warms up this long before it is timed


def against_libraries(dg, floor, *, launches: int = 20, trials: int = 15) -> dict:
    """The course's whole iterations (fused and blocked, each a CUDA graph of replayed iterations) and
    the libraries' SpMV alone (cuSPARSE prepared once; torch's CSR mv where installed), interleaved trial
    by trial as ``python -m helpers.bench`` times them, so the lectures and the bench give one answer per
    pair: name -> Timing (ms per iteration or per call), all paired. ``floor``: ``floors.measure(dg)``."""

    cp = require_gpu()
    settings = SimpleNamespace(launches=launches, trials=trials)
    return head_to_head(pg.as_device_graph(dg), settings, floor, cp, names=WHOLE)["timings"]


def versus_table(timings: dict, subject: str, floor: Timing | None = None):
    """Every timing against ``subject``'s: one row each with its Timing, its multiple of the gather ``floor``
    (medians), and the verdict on the subject against it (paired where they were timed together), with the
    95% interval of the subject's time over its time."""

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
    """How much of a slowdown a control removes, from 0 to 1: one minus the log of the ratio after the
    control over the log of the ratio before it (each a slow thing's time over its reference's)."""
    if before.ratio <= 1:
        raise ValueError(f"no slowdown to explain: the ratio before the control is {before.ratio:.3g}")
    return float(min(max(1 - math.log(after.ratio) / math.log(before.ratio), 0.0), 1.0))


def control_line(cause: str, before: verdicts.Verdict, after: verdicts.Verdict) -> str:
    """A sentence on a suspected cause: supported when its control (which changes only that cause)
    removes most of the slowdown, with the share it removes; where the rule has not settled the gap left
    with the control, it says so instead of a share."""
    if before.word != "slower":
        return f"{cause}: no slowdown to explain ({before.word})"
    if after.word == "not settled":
        return f"{cause}: not settled; more trials would say how much of the slowdown its control removes"
    share = share_removed(before, after)
    word = "supported" if share >= 0.5 else "not supported"
    return f"{cause}: {word}; its control removes about {share:.0%} of the slowdown"


def run_breakdown(steps: dict, *, beside=()):
    """A whole run's steps (name -> Timing in ms) as a table: each step's Timing, whether it is part of
    the run (names in ``beside`` are alternatives or totals shown beside it), and its share of the run:
    its median over the sum of the run's medians, in percent."""

    total = sum(t.median_ms for name, t in steps.items() if name not in beside)
    rows = [{"step": name, "time": t, "in the run": name not in beside,
             "% of the run (medians)": 100 * t.median_ms / total if name not in beside else np.nan}
            for name, t in steps.items()]
    return pd.DataFrame(rows).set_index("step")


def per_second(timing: Timing, count: float, unit: float = 1e9) -> Timing:
    """``count`` things done in each of ``timing``'s samples (ms), per second in units of ``unit`` (1e9:
    billions), trial by trial: a Timing of rates."""
    return Timing.of(count / (timing.samples_ms * 1e-3) / unit, timing.pairing)


def cpu_timing(run, repeat: int = 21) -> Timing:
    """A CPU baseline timed fairly: warm for at least CPU_WARMUP_S (three calls at least), then ``repeat``
    timed calls, so that a stray slow call moves the range, not the median."""
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
    """One size of a sweep (lecture 32), as a row of Timings (ms) and facts: the graph's floors; the
    course's whole iterations and the libraries (``against_libraries``); the iteration ``pagerank_gpu``
    chooses, run to ``tol`` and compared with float64; the multi-core CPU iteration (Numba) up to
    ``cpu_max_edges`` edges; and, for a graph built on the host, a whole run each: ``pagerank_gpu`` from
    the host graph (the copy to the GPU included) against the CPU's iteration times as many iterations."""
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
    """Where the GPU overtakes the CPU in a sweep (index: vertices; Timing columns ``gpu`` and ``cpu``): the
    verdict on the GPU against the CPU at each size where both ran, and a sentence naming the smallest size
    from which the GPU is faster at that size and every larger one compared."""

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


def _bars(ax, x, timings, label):
    median = np.array([t.median_ms for t in timings])
    low = np.array([t.min_ms for t in timings])
    high = np.array([t.max_ms for t in timings])
    ax.errorbar(x, median, yerr=[median - low, high - median], fmt="o-", ms=4, capsize=2, label=label)


def plot_sweep(sweep, columns: dict, *, l2_bytes: int, title: str = "", axes=None):
    """Two panels against the vertex count (``sweep``'s index): ms per iteration of each Timing column
    (``columns``: label -> column; median, the range as error bars) and the same as billions of edges per
    second; vertical lines where a float32 vector fills this GPU's L2 and a T4's (4 MB, datasheet)."""

    if axes is None:
        _, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    for label, column in columns.items():
        ran = sweep[[isinstance(v, Timing) for v in sweep[column]]] if column in sweep else sweep.iloc[:0]
        if ran.empty:
            continue
        _bars(axes[0], ran.index, list(ran[column]), label)
        _bars(axes[1], ran.index, [per_second(t, e) for t, e in zip(ran[column], ran["edges"])], label)
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
    """A prediction from parts measured apart (lecture 50): the fastest, the medians and the slowest each
    summed, kept as a Timing of those three values so tables show it as 'median (fastest-slowest)'. Not a
    measurement: it has no trials to pair."""
    return Timing.of([sum(p.min_ms for p in parts), sum(p.median_ms for p in parts),
                      sum(p.max_ms for p in parts)])
