"""Pictures of which thread reads which data: the in-links of a few consecutive vertices laid out as in memory
(in_sources, in CSR order), each cell coloured by the thread that reads it, for the ways the course gives
vertices to threads. One picture per kernel pattern; the lectures draw them with ``who_reads``."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from helpers.core.arguments import host_array

PATTERNS = ("thread", "warp", "subwarp", "edge")


def reader_of_each_in_link(in_degree, pattern: str = "thread", width: int = 4) -> np.ndarray:
    """For the in-links of the given vertices, in memory order: the thread (global index) that reads each.
    thread: one thread per vertex; warp: 32 lanes per vertex striding by 32; subwarp: ``width`` lanes per
    vertex striding by ``width``; edge: one thread per in-link."""
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
    """Rows of cells, one row per pattern (top to bottom as given): each cell an in-link (memory order),
    coloured by the thread that reads it; vertical lines mark where each vertex's in-links start."""

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
    ax.set_xlabel("in-links in memory order (in_sources); colour: the thread that reads it; lines: next vertex")
    ax.set_ylim(len(patterns) - 0.3, -0.7)                   # the first pattern on top, as listed
    ax.set_title(title, fontsize=8)
    ax.figure.tight_layout()
    return ax
