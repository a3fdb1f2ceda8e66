"""The lectures' figures: Timings as rates, their medians and ranges as lines and bars, and which thread reads
which in-link (in_sources, in memory order) for the ways the course gives vertices to threads."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from helpers.core.arguments import host_array
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
    if ax is None:
        _, ax = plt.subplots(figsize=(9, 0.6 * len(patterns) + 1.2))
    for row, pattern in enumerate(patterns):
        readers = reader_of_each_in_link(degree, pattern, width)
        ax.scatter(np.arange(readers.size), np.full(readers.size, row), c=readers % 20, cmap="tab20",
                   marker="s", s=60, vmin=0, vmax=19)
    for start in np.cumsum(degree)[:-1] - 0.5:
        ax.axvline(start, color="black", lw=0.6)
    ax.set_yticks(range(len(patterns)), [p if p != "subwarp" else f"{width} lanes" for p in patterns])
    ax.set_xlabel("in-links in memory order (in_sources); colour: the thread that reads it; "
                  "lines: next vertex")
    ax.set_ylim(len(patterns) - 0.3, -0.7)                   # the first pattern on top, as listed
    ax.set_title(title, fontsize=8)
    ax.figure.tight_layout()
    return ax


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
