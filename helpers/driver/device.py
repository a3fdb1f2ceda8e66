"""A graph on the GPU: the in-CSR and out-degrees (int32, checked), the layouts some variants need (built on
first use, each after checking that it fits), and the memory model that checks a variant up front."""
from __future__ import annotations

from functools import cached_property

import numpy as np

from ..gpu import INT32_MAX, ensure_fits, require_gpu
from ..graph import Graph, GraphTooLargeError

BLOCK = 256                         # threads per block for every launcher
HISTORY = 4096                      # L1 changes kept on the GPU (a ring)
PAD = 64                            # zero entries kept after the last in-link

# Bytes per vertex and per edge a variant allocates beyond the in-CSR and out-degrees: unfused iterations keep
# rank, new rank, contributions, pulled, a scratch vector and the dangling mask (6N floats).
UNFUSED_VERTEX = 6 * 4
_LAYOUT = {                          # a variant's own layout, (bytes per vertex, bytes per edge)
    "scan_naive": (4, 4), "push_atomic": (4, 4),           # the out-CSR
    "pull_interleaved": (0, 8),                            # (source, out-degree) pairs
    "coo_atomic": (0, 4),                                  # the target of every in-link
    "cusparse": (4, 4),                                    # float32 ones, and the SpMV buffer (at most N)
    "pull_binned": (4, 0),                                 # the three vertex lists
    "pull_segmented": (12, 4),                             # per-segment rows, offsets and sources
    "pull_f16": (2, 0), "pull_bf16": (2, 0),               # the 16-bit contributions
}


def blocks_for(threads: int) -> tuple[int]:
    """The grid that gives every one of ``threads`` threads a slot, BLOCK threads per block."""
    return (max(1, (int(threads) + BLOCK - 1) // BLOCK),)


def device_bytes(num_vertices: int, num_edges: int, variant: str = "fused", *, offset_bytes: int = 4) -> int:
    """GPU memory, in bytes, that a DeviceGraph and one iteration of ``variant`` allocate: the in-CSR and
    out-degrees (int32, or ``offset_bytes=8``), the variant's own layout and the iteration's vectors."""
    n, e = int(num_vertices), int(num_edges)
    name = getattr(variant, "name", variant)
    base = offset_bytes * (n + 1) + 4 * e + 4 * n
    if name == "fused":
        blocks = 2 * (n // BLOCK + 2) + e // 1024
        return base + 5 * 4 * n + 8 * blocks + 16 * (e // 1024 + 1) + 4 * HISTORY
    if name == "blocked":
        return base + 4 * e + 12 * n + 8 * (e // 1024 + n // BLOCK + 2) + 4 * HISTORY + (1 << 20)
    per_vertex, per_edge = _LAYOUT.get(name, (0, 0))
    return base + UNFUSED_VERTEX * n + per_vertex * n + per_edge * e + 4 * HISTORY + (1 << 20)


def _index_array(xp, array, what: str, size: int, upper: int):
    """An int32 array of ``size`` entries in [0, upper], converted safely or refused with a message."""
    if array.ndim != 1 or array.size != size:
        raise ValueError(f"{what} must be a 1-D array of {size:,} entries, got shape {array.shape}")
    if array.dtype.kind not in "iu":
        raise TypeError(f"{what} must hold integers, got {array.dtype}")
    if size and (int(array.min()) < 0 or int(array.max()) > upper):
        raise ValueError(f"{what} holds values outside 0..{upper:,}")
    return xp.ascontiguousarray(xp.asarray(array), dtype=xp.int32)


class DeviceGraph:
    """A graph's in-CSR and out-degrees on the GPU, int32, checked. ``graph`` is a ``helpers.graph.Graph``
    or anything with ``num_vertices``, ``in_offsets``, ``in_sources``, ``out_degree`` (NumPy or CuPy) and a
    ``name``; ``variant`` says which variant's memory to check up front (``device_bytes``)."""

    def __init__(self, graph, *, variant: str = "fused", name: str | None = None):
        cp = require_gpu()
        n, e = int(graph.num_vertices), int(graph.in_sources.size)
        label = name or getattr(graph, "name", "graph")
        if n < 1 or n > INT32_MAX:
            raise GraphTooLargeError(f"{n:,} vertices: the course's kernels index vertices with int32")
        if e > INT32_MAX or int(graph.in_offsets[-1]) > INT32_MAX:
            raise GraphTooLargeError(f"{label}: {e:,} edges need int64 offsets; the course's kernels index "
                                     "edges with int32 (at most 2,147,483,647 edges)")
        xp = cp if isinstance(graph.in_sources, cp.ndarray) else np
        held = sum(a.nbytes for a in (graph.in_offsets, graph.in_sources, graph.out_degree)) if xp is cp else 0
        ensure_fits(device_bytes(n, e, variant) - held, f"{label} with {getattr(variant, 'name', variant)}")
        in_offsets = cp.asarray(_index_array(xp, graph.in_offsets, "in_offsets", n + 1, e))
        in_sources = _index_array(xp, graph.in_sources, "in_sources", e, n - 1)
        self.out_degree = cp.asarray(_index_array(xp, graph.out_degree, "out_degree", n, INT32_MAX))
        # PAD zeros after the last in-link: a kernel that reads past its row (an off-by-one bound) then reads
        # vertex 0's contribution and gets a wrong sum that verify names, instead of a lost GPU context
        padded = cp.zeros(e + PAD, dtype=cp.int32)
        padded[:e] = cp.asarray(in_sources)
        self.in_offsets, self.in_sources = in_offsets, padded[:e]
        if int(in_offsets[0]) != 0 or int(in_offsets[-1]) != e or bool((cp.diff(in_offsets) < 0).any()):
            raise ValueError(f"{label}: in_offsets must rise from 0 to the edge count")
        total = int(self.out_degree.sum(dtype=cp.int64))
        if total != e:
            raise ValueError(f"{label}: the out-degrees add up to {total:,}, not to the {e:,} edges")
        self.graph = graph if isinstance(graph, Graph) else None
        self.name, self.num_vertices, self.num_edges = label, n, e

    def __repr__(self) -> str:
        return f"DeviceGraph({self.name!r}: {self.num_vertices:,} vertices, {self.num_edges:,} edges)"

    def fits(self, nbytes: int, what: str) -> None:
        ensure_fits(nbytes, f"{what} for {self.name}")

    @cached_property
    def in_degree(self):
        return require_gpu().diff(self.in_offsets)

    @cached_property
    def dangling(self):
        """1.0 for vertices without out-links, else 0.0 (float32): their rank is spread over everyone."""
        return (self.out_degree == 0).astype(require_gpu().float32)

    @cached_property
    def out_csr(self):
        """(out_offsets, out_targets): the out-links, for push and scan; from the host graph if there is one."""
        cp = require_gpu()
        n, e = self.num_vertices, self.num_edges
        self.fits(4 * (n + 1) + 12 * e, "the out-CSR")
        if self.graph is not None:
            return cp.asarray(self.graph.out_offsets, dtype=cp.int32), cp.asarray(self.graph.out_targets)
        keys = cp.sort(self.in_sources.astype(cp.int64) * n + self.in_targets)     # by source, then target
        offsets = cp.zeros(n + 1, dtype=cp.int32)
        cp.cumsum(self.out_degree, out=offsets[1:])
        return offsets, (keys % n).astype(cp.int32)

    @cached_property
    def in_edges(self):
        """Interleaved (source, out_degree[source]) pairs, one per in-link, in in-CSR order."""
        cp = require_gpu()
        self.fits(8 * self.num_edges, "the interleaved in-links")
        return cp.ascontiguousarray(cp.stack([self.in_sources, self.out_degree[self.in_sources]], axis=1))

    @cached_property
    def in_targets(self):
        """The target of every in-link, in in-CSR order: with in_sources, the edge list (COO)."""
        cp = require_gpu()
        self.fits(12 * self.num_edges, "the in-link targets")
        edge = cp.arange(self.num_edges, dtype=cp.int32)
        return (cp.searchsorted(self.in_offsets, edge, side="right") - 1).astype(cp.int32)

    def bins(self, thread_max: int = 32, warp_max: int = 1024):
        """Vertex lists by in-degree: light (< thread_max), medium (< warp_max), heavy (the rest)."""
        cp = require_gpu()
        degree = self.in_degree
        return tuple(cp.flatnonzero(mask).astype(cp.int32) for mask in
                     (degree < thread_max, (degree >= thread_max) & (degree < warp_max), degree >= warp_max))

    @cached_property
    def degree_bins(self):
        """The bins pull_binned uses (thread below 32 in-links, warp below 1024, block above)."""
        self.fits(4 * self.num_vertices, "the degree bins")
        return self.bins()

    @cached_property
    def half_buffers(self):
        """(scale, 16-bit contributions): scale[0] the factor to_f16 applies, scale[1] its inverse (lecture 40)."""
        cp = require_gpu()
        self.fits(2 * self.num_vertices + 8, "the 16-bit contributions")
        return cp.ones(2, dtype=cp.float32), cp.empty(self.num_vertices, dtype=cp.uint16)

    def in_matrix_of(self, dtype=np.float32):
        """The in-link matrix as cupyx.scipy.sparse CSR of ones of ``dtype`` (cuSPARSE's view of the graph)."""
        cp = require_gpu()
        import cupyx.scipy.sparse as sparse

        self.fits(np.dtype(dtype).itemsize * self.num_edges + 4 * self.num_vertices, "the sparse matrix")
        ones = cp.ones(self.num_edges, dtype=dtype)
        return sparse.csr_matrix((ones, self.in_sources, self.in_offsets),
                                 shape=(self.num_vertices, self.num_vertices))

    @cached_property
    def in_matrix(self):
        return self.in_matrix_of(np.float32)

    def segments(self, vertices_per_segment: int):
        """The in-links split by source into segments of ``vertices_per_segment`` sources: for each, the rows
        it touches and its own in-CSR over them (rows, offsets, sources), in CuPy arrays. Built on the GPU."""
        cp = require_gpu()
        key = int(vertices_per_segment)
        cache = self.__dict__.setdefault("_segments", {})
        if key not in cache:
            n, e = self.num_vertices, self.num_edges
            self.fits(24 * e + 12 * n, "the source segments")
            segment = self.in_sources // key
            # by segment, keeping the in-CSR order (target, then source) inside each segment
            order = cp.sort(segment.astype(cp.int64) * e + cp.arange(e, dtype=cp.int64)) % e
            targets, sources, segment = self.in_targets[order], self.in_sources[order], segment[order]
            starts = cp.searchsorted(segment, cp.arange((n + key - 1) // key + 1), side="left").get()
            parts = []
            for s in range(len(starts) - 1):
                t, src = targets[starts[s]:starts[s + 1]], sources[starts[s]:starts[s + 1]]
                if t.size == 0:
                    continue
                heads = cp.flatnonzero(cp.concatenate([cp.ones(1, dtype=bool), t[1:] != t[:-1]]))
                offsets = cp.concatenate([heads, cp.asarray([t.size])]).astype(cp.int32)
                parts.append((t[heads].astype(cp.int32), offsets, cp.ascontiguousarray(src)))
            cache[key] = parts
        return cache[key]


def as_device_graph(graph, variant: str = "fused") -> DeviceGraph:
    return graph if isinstance(graph, DeviceGraph) else DeviceGraph(graph, variant=variant)
