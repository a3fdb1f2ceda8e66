"""Pictures of which thread reads which in-link (in_sources, in memory order) for the ways the course gives
vertices to threads."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from helpers.core.arguments import host_array

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
