"""Instruments a student can run on Colab, where no profiler counters are available: the work of the busiest
lane of each warp (from the in-degrees alone), and a timeline of when each block of a pull kernel ran and on
which multiprocessor (``timeline.cu``, the GPU's own clock). Both are drawn as plots."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from helpers import kernels
from helpers.core.arguments import to_host
from helpers.driver import BLOCK, blocks_for, i32
from helpers.driver.floors import WARP
from helpers.measure.gpu import require_gpu


def busiest_lane(in_degree, lanes_per_vertex: int = 1) -> np.ndarray:
    """In-links walked by the busiest lane of each warp when each vertex gets ``lanes_per_vertex`` lanes (1: a
    thread per vertex; 32: a warp per vertex): a warp is done only when its busiest lane is."""
    degree = to_host(in_degree, "in_degree", ndim=1).astype(np.int64)     # CuPy's is copied to the host
    per_lane = -(-degree // lanes_per_vertex)                   # a vertex's in-links over its lanes
    vertices = WARP // lanes_per_vertex
    padded = np.zeros(-(-degree.size // vertices) * vertices, dtype=np.int64)
    padded[:degree.size] = per_lane
    return padded.reshape(-1, vertices).max(axis=1)


def plot_busiest_lane(works: dict, ax=None, title: str = ""):
    """The busiest lane's in-links per warp, sorted, for each way of giving vertices lanes (label -> array)."""

    if ax is None:
        _, ax = plt.subplots(figsize=(7, 3.2))
    for label, work in works.items():
        ordered = np.sort(work)[::-1]
        ax.loglog(np.arange(1, ordered.size + 1), np.maximum(ordered, 0.5), label=label)
    ax.set_xlabel("warps, busiest first")
    ax.set_ylabel("in-links walked by the busiest lane")
    ax.set_title(title, fontsize=8)
    ax.legend(fontsize=7)
    ax.figure.tight_layout()
    return ax


def block_timeline(dg, contrib, how: str = "thread"):
    """Run the instrumented pull (``how``: 'thread' per vertex, or 'warp' per vertex) once, after a warm-up,
    and return a DataFrame of its blocks: multiprocessor, start and stop in microseconds from the first."""

    cp = require_gpu()
    if how not in ("thread", "warp"):
        raise ValueError(f"how must be 'thread' or 'warp', got {how!r}")
    n = dg.num_vertices
    grid = blocks_for(n if how == "thread" else WARP * n)
    start, stop = (cp.zeros(grid[0], dtype=cp.uint64) for _ in range(2))
    sm, pulled = cp.zeros(grid[0], dtype=cp.int32), cp.empty(n, dtype=cp.float32)
    kernel = kernels.compiled("timeline", f"timeline_{how}")
    for _ in range(2):                                          # the first launch compiles and warms up
        kernel(grid, (BLOCK,), (dg.in_offsets, dg.in_sources, contrib, pulled, i32(n), start, stop, sm))
    cp.cuda.Device().synchronize()
    t0 = int(start.min())
    return pd.DataFrame({"sm": sm.get(), "start_us": (start.get() - t0) / 1e3, "stop_us": (stop.get() - t0) / 1e3})


def plot_timeline(frame, ax=None, title: str = ""):
    """One horizontal line per block, at the height of its multiprocessor, from its start to its stop."""

    if ax is None:
        _, ax = plt.subplots(figsize=(7, 3.2))
    ax.hlines(frame["sm"], frame["start_us"], frame["stop_us"], lw=1.5, color="tab:blue")
    longest = frame.loc[(frame["stop_us"] - frame["start_us"]).idxmax()]
    ax.hlines([longest["sm"]], [longest["start_us"]], [longest["stop_us"]], lw=3, color="tab:red",
              label=f"longest block: {longest['stop_us'] - longest['start_us']:.0f} us")
    ax.set_xlabel("microseconds from the first block's start")
    ax.set_ylabel("multiprocessor")
    ax.set_title(title, fontsize=8)
    ax.legend(fontsize=7, loc="upper right")
    ax.figure.tight_layout()
    return ax
