"""Instruments that need no profiler (Colab has none): each warp's busiest lane from the in-degrees, and
when and where each block of a pull kernel ran (``timeline.cu``, the GPU's own clock), with their plots."""
from __future__ import annotations

import numpy as np
import pandas as pd

from helpers import kernels
from helpers.core.arguments import to_host
from helpers.driver import BLOCK, blocks_for, i32
from helpers.driver.floors import WARP
from helpers.measure.figures import finish, new_axes
from helpers.measure.gpu import require_gpu


def in_degrees(values) -> np.ndarray:
    """In-degrees as int64 on the host (CuPy's copied there)."""
    return to_host(values, "in_degree", ndim=1).astype(np.int64)


def by_warp(values: np.ndarray, per_warp: int) -> np.ndarray:
    """``values`` zero-padded to whole warps, one row per warp of ``per_warp`` entries."""
    padded = np.zeros(-(-values.size // per_warp) * per_warp, dtype=np.int64)
    padded[:values.size] = values
    return padded.reshape(-1, per_warp)


def busiest_lane(in_degree, lanes_per_vertex: int = 1) -> np.ndarray:
    """In-links walked by each warp's busiest lane when each vertex gets ``lanes_per_vertex`` lanes."""
    per_lane = -(-in_degrees(in_degree) // lanes_per_vertex)    # a vertex's in-links over its lanes
    return by_warp(per_lane, WARP // lanes_per_vertex).max(axis=1)


def plot_busiest_lane(works: dict, ax=None, title: str = ""):
    """The busiest lane's in-links per warp, sorted, per way of giving vertices lanes (label -> array)."""
    ax = new_axes(ax, (7, 3.2))
    for label, work in works.items():
        ordered = np.sort(work)[::-1]
        ax.loglog(np.arange(1, ordered.size + 1), np.maximum(ordered, 0.5), label=label)
    ax.set_xlabel("warps, busiest first")
    ax.set_ylabel("in-links walked by the busiest lane")
    return finish(ax, title)


def block_timeline(dg, contrib, how: str = "thread"):
    """Per block of the instrumented pull ('thread' or 'warp' per vertex): its SM, start and stop in µs."""
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
    return pd.DataFrame({"sm": sm.get(), "start_us": (start.get() - t0) / 1e3,
                         "stop_us": (stop.get() - t0) / 1e3})


def plot_timeline(frame, ax=None, title: str = ""):
    """One horizontal line per block, at the height of its multiprocessor, from its start to its stop."""
    ax = new_axes(ax, (7, 3.2))
    ax.hlines(frame["sm"], frame["start_us"], frame["stop_us"], lw=1.5, color="tab:blue")
    longest = frame.loc[(frame["stop_us"] - frame["start_us"]).idxmax()]
    ax.hlines([longest["sm"]], [longest["start_us"]], [longest["stop_us"]], lw=3, color="tab:red",
              label=f"longest block: {longest['stop_us'] - longest['start_us']:.0f} us")
    ax.set_xlabel("microseconds from the first block's start")
    ax.set_ylabel("multiprocessor")
    return finish(ax, title, loc="upper right")
