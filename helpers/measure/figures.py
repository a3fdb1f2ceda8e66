"""The lectures' figures: Timings as rates, their medians and ranges as lines and bars, which thread reads
which in-link (in_sources, in memory order) for the ways the course gives vertices to threads, and drawings
of a block sum, a dropped shuffle result and segments."""
from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np

from helpers.core.arguments import check_seed, host_array
from helpers.measure.gpu import Timing
from helpers.measure.results import log_scale

PATTERNS = ("thread", "warp", "subwarp", "edge")


def reader_of_each_in_link(in_degree, pattern: str = "thread", width: int = 4) -> np.ndarray:
    """The thread (global index) that reads each in-link, in memory order: one per vertex ("thread"), 32 or
    ``width`` lanes per vertex striding ("warp", "subwarp"), or one per in-link ("edge")."""
    degree = np.asarray(host_array(in_degree, "in_degree", ndim=1), dtype=np.int64)
    vertex = np.repeat(np.arange(degree.size), degree)
    position = np.arange(degree.sum()) - np.repeat(np.cumsum(degree) - degree, degree)
    if pattern == "thread":
        return vertex
    if pattern in ("warp", "subwarp"):
        lanes = 32 if pattern == "warp" else int(width)
        return vertex * lanes + position % lanes
    if pattern == "edge":
        return np.arange(degree.sum())
    raise ValueError(f"pattern must be one of {', '.join(PATTERNS)}, got {pattern!r}")


def who_reads(in_degree, patterns=("thread", "warp"), width: int = 4, ax=None, title: str = ""):
    """One row of cells per pattern: each an in-link (memory order) coloured by the thread that reads it;
    vertical lines mark where each vertex's in-links start."""
    degree = np.asarray(host_array(in_degree, "in_degree", ndim=1), dtype=np.int64)
    ax = new_axes(ax, (9, 0.6 * len(patterns) + 1.2))
    for row, pattern in enumerate(patterns):
        _cells(ax, row, reader_of_each_in_link(degree, pattern, width), size=60)
    _vertex_lines(ax, degree)
    ax.set_yticks(range(len(patterns)), [p if p != "subwarp" else f"{width} lanes" for p in patterns])
    ax.set_xlabel("in-links in memory order (in_sources); colour: the thread that reads it; "
                  "lines: next vertex")
    ax.set_ylim(len(patterns) - 0.3, -0.7)                   # the first pattern on top, as listed
    return finish(ax, title, legend=False)


def _vertex_lines(ax, degree) -> None:
    """Vertical lines where each vertex's in-links start (after the first's)."""
    for start in np.cumsum(degree)[:-1] - 0.5:
        ax.axvline(start, color="black", lw=0.6)


def per_second(timing: Timing, count: float, unit: float = 1e9) -> Timing:
    """``count`` things done in each trial of ``timing`` (ms), per second in ``unit``s: a Timing of rates."""
    return Timing.of(count / timing.samples_ms / (unit / 1e3), timing.pairing)


def million_per_second(timing: Timing, count: float) -> Timing:
    """``per_second`` in millions."""
    return per_second(timing, count, 1e6)


def medians_and_ranges(timings) -> tuple[np.ndarray, np.ndarray]:
    """The Timings' medians and their fastest-to-slowest ranges as error bars (2 x n, below and above)."""
    median = np.array([t.median_ms for t in timings])
    return median, np.vstack([median - [t.min_ms for t in timings], [t.max_ms for t in timings] - median])


def plot_medians_with_ranges(ax, x, timings, **style):
    """A line through the Timings' medians against ``x``, their ranges as error bars (errorbar ``style``)."""
    median, ranges = medians_and_ranges(timings)
    return ax.errorbar(list(x), median, yerr=ranges, **{"fmt": "o-", "capsize": 3, **style})


def grouped_bars(ax, rows, groups: dict, colours) -> None:
    """Horizontal bars of Timings (label -> one per row; median, whiskers the range), grouped by row."""
    height = 0.8 / len(groups)
    for i, ((label, timings), colour) in enumerate(zip(groups.items(), colours)):
        median, spread = medians_and_ranges(timings)
        ax.barh(np.arange(len(rows)) + (i - (len(groups) - 1) / 2) * height, median, height, xerr=spread,
                color=colour, label=label, ecolor="black", capsize=2)
    ax.set_yticks(np.arange(len(rows)), rows)
    ax.invert_yaxis()
    log_scale(ax, "x")


def new_axes(ax, figsize):
    """``ax``, or the axes of a new figure of ``figsize``."""
    return ax if ax is not None else plt.subplots(figsize=figsize)[1]


def finish(ax, title: str = "", legend: bool = True, **legend_style):
    """A lecture plot's last touches: a small title and legend, a tight layout."""
    ax.set_title(title, fontsize=8)
    if legend:
        ax.legend(fontsize=7, **legend_style)
    ax.figure.tight_layout()
    return ax


def _cells(ax, row: int, colours, crossed=None, size: int = 70):
    """One row of squares (an in-link or a shared slot each), coloured by the thread that reads it."""
    x = np.arange(len(colours))
    ax.scatter(x, np.full(x.size, row), c=np.asarray(colours) % 20, cmap="tab20", vmin=0, vmax=19,
               marker="s", s=size)
    if crossed is not None and np.any(crossed):
        ax.scatter(x[crossed], np.full(int(np.sum(crossed)), row), marker="x", s=size * 0.8, color="black")


def draw_tree_reduction(width: int = 16, ax=None):
    """A shared-memory block sum of ``width`` values: a row per step (loads, then strides width/2 ... 1), at
    each an arrow from slot t + stride into slot t for t < stride, barriers between."""
    if width < 2 or width & (width - 1):
        raise ValueError(f"width must be a power of two of at least 2, got {width}")
    ax = new_axes(ax, (9, 3.6))
    colours = plt.get_cmap("tab20")
    strides = [width // 2 ** k for k in range(1, int(math.log2(width)) + 1)]
    _cells(ax, 0, np.arange(width))
    for step, stride in enumerate(strides, start=1):
        for t in range(stride):
            ax.annotate("", xy=(t, step), xytext=(t + stride, step - 1),
                        arrowprops={"arrowstyle": "->", "color": colours(t % 20), "lw": 1})
            ax.plot([t, t], [step - 1, step], color=colours(t % 20), lw=1)
        ax.axhline(step - 0.5, color="grey", ls="--", lw=0.6)
        _cells(ax, step, np.arange(stride))
    ax.text(width - 0.5, 0.5, "__syncthreads() between steps", fontsize=7, ha="right", va="center",
            color="grey")
    ax.set_yticks(range(len(strides) + 1), ["loads"] + [f"stride {s}" for s in strides])
    ax.set_ylim(len(strides) + 0.6, -0.6)
    ax.set_xlabel("shared-memory slot (= the thread that loaded it); arrow colour: the thread that adds")
    return finish(ax, f"a block sum of {width} values in {len(strides)} steps: slot 0 ends with the total",
                  legend=False)


def draw_dropped_lanes(in_degree, ax=None, title: str = ""):
    """A warp per vertex, in-links coloured by lane: the shuffle tree, and below, its result dropped (lane 0
    writes its own sum; crossed: never added)."""
    degree = np.asarray(host_array(in_degree, "in_degree", ndim=1), dtype=np.int64)
    lanes = reader_of_each_in_link(degree, "warp") % 32
    ax = new_axes(ax, (9, 1.9))
    _cells(ax, 0, lanes)
    _cells(ax, 1, lanes, crossed=lanes != 0)
    _vertex_lines(ax, degree)
    ax.set_yticks([0, 1], ["shuffle tree", "result dropped"])
    ax.set_ylim(1.7, -0.7)
    ax.set_xlabel("in-links in memory order; colour: the lane that reads it; x: never added; "
                  "lines: next vertex")
    return finish(ax, title, legend=False)


def draw_segments(num_vertices: int = 32, num_edges: int = 110, segment: int = 8, seed: int = 0, ax=None):
    """A small random graph's in-links (source across, target down), coloured by the source segment whose
    pass adds them: pass s reads only x[s * segment:(s + 1) * segment], a slice that stays in L2."""
    rng = np.random.default_rng(check_seed(seed))
    sources = rng.integers(0, num_vertices, num_edges)
    targets = rng.integers(0, num_vertices, num_edges)
    ax = new_axes(ax, (5.2, 4.2))
    ax.scatter(sources, targets, c=(sources // segment) % 10, cmap="tab10", vmin=0, vmax=9, s=18)
    for edge in range(segment, num_vertices, segment):
        ax.axvline(edge - 0.5, color="grey", lw=0.8, ls="--")
    for s in range(-(-num_vertices // segment)):
        ax.text(s * segment + segment / 2 - 0.5, -1.5, f"pass {s}", ha="center", fontsize=7)
    ax.set_xlim(-0.5, num_vertices - 0.5)
    ax.set_ylim(num_vertices - 0.5, -2.5)
    ax.set_xlabel("source id (the x value gathered)")
    ax.set_ylabel("target id (the row summed)")
    return finish(ax, f"{num_edges} in-links in segments of {segment} sources: one pass per segment",
                  legend=False)
