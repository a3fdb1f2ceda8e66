"""The 1-D partition of the in-CSR by destination rows, and its memory and traffic arithmetic."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from helpers.core.arguments import GraphFormatError, to_host
from helpers.core.graph import GraphTooLargeError
from helpers.measure.gpu import HEADROOM, INT32_MAX

ROW_ARRAYS = 7        # rank, new rank, pulled, scratch, safe out-degree, has-out mask, dangling mask


@dataclass(frozen=True, eq=False)
class PartitionPlan:
    """Contiguous row ranges of the in-CSR, one per worker: worker k owns rows bounds[k]..bounds[k+1]-1."""
    bounds: np.ndarray    # parts + 1 row boundaries from 0 to N
    edges: np.ndarray     # in-links of each part

    @property
    def parts(self) -> int:
        return int(self.edges.size)

    @property
    def rows(self) -> np.ndarray:
        return np.diff(self.bounds)

    @property
    def num_vertices(self) -> int:
        return int(self.bounds[-1])

    @property
    def num_edges(self) -> int:
        return int(self.edges.sum())

    def range(self, k: int) -> tuple[int, int]:
        return int(self.bounds[k]), int(self.bounds[k + 1])

    def table(self, *, value_bytes: int = 4):
        """The partition as a pandas DataFrame: rows, in-links, shares, the bytes each worker allocates."""
        n, m = max(self.num_vertices, 1), max(self.num_edges, 1)
        return pd.DataFrame({
            "worker": np.arange(self.parts), "first row": self.bounds[:-1], "last row": self.bounds[1:] - 1,
            "vertices": self.rows, "in-links": self.edges,
            "% of vertices": 100 * self.rows / n, "% of in-links": 100 * self.edges / m,
            "GiB on the worker": plan_bytes(self, value_bytes=value_bytes) / 2**30,
        }).set_index("worker")


def partition_by_edges(in_offsets, parts: int) -> PartitionPlan:
    """Cut rows 0..N-1 into ``parts`` non-empty contiguous ranges, each within E / parts + the largest row
    of in-links (cut k at the offset nearest k * E / parts, then the row nearest k * N / parts)."""
    offsets = to_host(in_offsets, "in_offsets").astype(np.int64, copy=False)
    parts = int(parts)
    if parts < 1:
        raise ValueError(f"parts must be at least 1, got {parts}")
    if offsets.ndim != 1 or offsets.size < 2 or offsets[0] != 0 or (np.diff(offsets) < 0).any():
        raise GraphFormatError("in_offsets must be a 1-D array of N + 1 non-decreasing offsets "
                               "starting at 0")
    n, total = offsets.size - 1, int(offsets[-1])
    bounds = np.empty(parts + 1, dtype=np.int64)
    if parts > n:
        bounds[:] = np.minimum(np.arange(parts + 1), n)
    else:
        k = np.arange(1, parts)
        targets = total * k / parts
        above = np.minimum(np.searchsorted(offsets, targets, side="left"), n)   # first offset >= target
        below = np.maximum(above - 1, 0)
        closer_above = offsets[above] - targets <= targets - offsets[below]
        nearest = np.where(closer_above, offsets[above], offsets[below])
        first = np.searchsorted(offsets, nearest, side="left")
        last = np.searchsorted(offsets, nearest, side="right") - 1
        cuts = np.clip(np.rint(n * k / parts).astype(np.int64), first, last)
        bounds[0], bounds[-1] = 0, n
        for i, cut in enumerate(cuts):          # parts is small: one pass keeps every range non-empty
            bounds[i + 1] = min(max(int(cut), int(bounds[i]) + 1), n - (parts - 1 - i))
    return PartitionPlan(bounds, offsets[bounds[1:]] - offsets[bounds[:-1]])


def partition_bytes(rows: int, edges: int, num_vertices: int, *, offset_bytes: int = 4, value_bytes: int = 4,
                    edge_values: bool = False) -> int:
    """Bytes one worker allocates: its in-CSR slices, the FULL contribution vector (N values, whatever the
    workers) and ROW_ARRAYS arrays of its rows; ``edge_values``: a value per edge too (SciPy's matrix)."""
    return (offset_bytes * (rows + 1) + 4 * edges + (value_bytes * edges if edge_values else 0)
            + value_bytes * num_vertices + ROW_ARRAYS * value_bytes * rows)


def plan_bytes(plan: PartitionPlan, **options) -> np.ndarray:
    return np.array([partition_bytes(int(r), int(e), plan.num_vertices, **options)
                     for r, e in zip(plan.rows, plan.edges)], dtype=np.int64)


def exchange_bytes(plan: PartitionPlan, value_bytes: int = 4) -> int:
    """Bytes the workers receive in one iteration: the contributions of the rows each does not own, and the
    two float64 scalars of the all-reduce."""
    if plan.parts == 1:
        return 0
    return int(sum(plan.num_vertices - int(r) for r in plan.rows) * value_bytes + 16 * plan.parts)


def grid_2d(gpus: int) -> tuple[int, int]:
    """The R x C process grid of a 2-D partition: R the largest divisor of P not above sqrt(P)."""
    rows = max(1, int(np.sqrt(gpus)))
    while gpus % rows:
        rows -= 1
    return rows, gpus // rows


def values_received_per_gpu(num_vertices: int, gpus: int, layout: str = "1d") -> float:
    """Values one GPU receives per iteration, N vertices split evenly over P GPUs: 1-D, the N - N/P it does
    not own; 2-D (R x C grid), N/C * (1 - 1/R) gathered and N/R * (1 - 1/C) reduced, about 2N/sqrt(P)."""
    n, p = float(num_vertices), int(gpus)
    if layout == "1d":
        return n * (1 - 1 / p)
    if layout == "2d":
        r, c = grid_2d(p)
        return n / c * (1 - 1 / r) + n / r * (1 - 1 / c)
    raise ValueError(f"layout must be '1d' or '2d', got {layout!r}")


def largest_graph(memory_bytes: float, edges_per_vertex: float, bytes_for) -> tuple[int, int]:
    """The largest (vertices, edges_per_vertex * vertices) whose growing ``bytes_for(vertices, edges)`` stays
    within ``memory_bytes``."""
    def need(v):
        return bytes_for(v, int(edges_per_vertex * v))

    if need(1) > memory_bytes:
        return 0, 0
    low, high = 1, 2
    while need(high) <= memory_bytes and high < 2**50:
        low, high = high, 2 * high
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if need(middle) <= memory_bytes else (low, middle)
    return low, int(edges_per_vertex * low)


def _size(nbytes: float) -> str:
    return f"{nbytes / 2**30:.2f} GiB" if nbytes >= 2**30 else f"{nbytes / 2**20:.2f} MiB"


def check_fits(plan: PartitionPlan, free, backend: str, value_bytes: int, name: str) -> None:
    """Refuse a partition beyond the int32 edge index or HEADROOM of its worker's ``free`` bytes."""
    need = plan_bytes(plan, value_bytes=value_bytes, edge_values=backend == "cpu")
    where = "its GPU" if backend == "gpu" else "the host"
    for k in range(plan.parts):
        a, b = plan.range(k)
        if plan.edges[k] > INT32_MAX:
            raise GraphTooLargeError(f"{name}: partition {k} (rows {a:,}..{b - 1:,}) holds "
                                     f"{plan.edges[k]:,} in-links, beyond the int32 edge index of the "
                                     "course's kernels: use more workers")
        if need[k] > HEADROOM * free[k]:
            raise GraphTooLargeError(
                f"{name}: partition {k} (rows {a:,}..{b - 1:,}: {b - a:,} vertices, {plan.edges[k]:,} "
                f"in-links) needs {_size(need[k])} on worker {k} and {where} has {_size(free[k])} free "
                f"(at most {HEADROOM:.0%} of it is planned for): use more workers or more memory")
