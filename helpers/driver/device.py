"""A graph on the GPU: the in-CSR and out-degrees (int32, checked), the layouts some variants need (built on
first use, each after checking that it fits), and the memory model that checks a variant up front."""
from __future__ import annotations

from functools import cached_property

import numpy as np

from helpers.core.graph import Graph, GraphTooLargeError
from helpers.driver.floors import T4_L2_BYTES
from helpers.measure.gpu import INT32_MAX, device_facts, ensure_fits, has_gpu, require_gpu

BLOCK = 256                         # threads per block for every launcher
HISTORY = 4096                      # L1 changes kept on the GPU (a ring)
PAD = 64                            # zero entries kept after the last in-link
EDGE_CHUNK = 1 << 22                # in-links per step where a whole-graph int64 temporary would be needed
# An unfused iteration's float32 vectors: teleport, rank, new rank, contributions, pulled, a scratch vector
# (its own six) and the graph's dangling vector, which its first run builds.
UNFUSED_VERTEX = 7 * 4
SMALL = 4 * HISTORY + (1 << 20)     # the stop test's ring, 0-d sums, CUB's scratch, 512-byte rounding


def blocks_for(threads: int) -> tuple[int]:
    """The grid that gives every one of ``threads`` threads a slot, BLOCK threads per block."""
    return (max(1, (int(threads) + BLOCK - 1) // BLOCK),)


def segment_size(dg=None, *, l2_bytes: int | None = None) -> int:
    """Sources per segment (blocked, pull_segmented): a segment's contributions take half of this GPU's L2
    (or of ``l2_bytes``)."""
    l2 = device_facts().l2_bytes if l2_bytes is None else int(l2_bytes)
    return max(BLOCK, l2 // 2 // 4)


def segment_bytes(num_vertices: int, num_edges: int, vertices_per_segment: int) -> tuple[int, int]:
    """(kept, peak while built) bytes of ``DeviceGraph.segments``, upper bounds: at most min(E, segments x N)
    rows; one segment at a time, with a mask, a prefix sum over the in-links and per-row counts."""
    n, e = int(num_vertices), int(num_edges)
    count = -(-n // max(1, int(vertices_per_segment)))
    rows = min(e, count * n)
    kept = 4 * e + 8 * rows + 4 * count + 3 * 512 * count
    building = max(5 * e + 8 * n, 16 * n) + e // 128 + 4096     # the scans' block sums and CUB's scratch
    return kept, kept + building


def _layout_bytes(name: str, n: int, e: int, segment: int, host_out_csr: bool) -> tuple[int, int, int]:
    """(kept, peak while built, extra in each iteration) of what an unfused variant builds on first use."""
    chunk, out_csr = min(e, EDGE_CHUNK), 4 * (n + 1) + 4 * e
    sorting = out_csr if host_out_csr else max(16 * e, 12 * e + 4 * n, 8 * e + 12 * chunk)
    layouts = {
        "scan_naive": (out_csr, sorting, 0),                  # the out-CSR, sorted on the GPU unless given
        "pull_interleaved": (8 * e, 12 * e, 0),               # (source, out-degree) pairs, from a gather
        "coo_atomic": (4 * e, 4 * e + 12 * chunk, 0),         # in_targets, EDGE_CHUNK at a time
        "coo_cumsum": (0, 0, max(16 * e, 8 * e + 24 * n)),    # a float64 prefix sum over all in-links
        "cusparse": (4 * e, 4 * e, 5 * n),                    # float32 ones; cuSPARSE's result vector
        "pull_binned": (8 * n, 17 * n, 0),                    # in_degree and the three vertex lists
        "pull_segmented": (*segment_bytes(n, e, segment), 0),
        "pull_f16": (2 * n + 512, 2 * n + 512, 0)}            # the 16-bit contributions
    layouts["push_atomic"], layouts["pull_bf16"] = layouts["scan_naive"], layouts["pull_f16"]
    return layouts.get(name, (0, 0, 0))


def device_bytes(num_vertices: int, num_edges: int, variant: str = "fused", *, offset_bytes: int = 4,
                 host_out_csr: bool = False) -> int:
    """Peak GPU bytes of building a DeviceGraph for ``variant`` and running it with ``pagerank_gpu``, an upper
    bound; segments as on this GPU (with none, a T4's), the out-CSR sorted on the GPU unless a host one."""
    n, e, name = int(num_vertices), int(num_edges), getattr(variant, "name", variant)
    graph = int(offset_bytes) * (n + 1) + 4 * (e + PAD) + 4 * n
    checks = 5 * n                                   # the offsets' differences and their mask
    segment = segment_size() if has_gpu() else segment_size(l2_bytes=T4_L2_BYTES)
    if name == "fused":    # the WorkPlan (medium rows over 32 in-links, heavy over 1,024, split every 16,384)
        medium, groups = min(n, e // 33), e // 16384 + 1
        plan = 4 * medium + 20 * (e // 1025 + groups) + 12 * groups + 5 * 512     # 512 bytes at least each
        # building the plan (in-degrees, 3 masks, int64 indices); two rank and contribution vectors, dangling
        return graph + max(checks, plan + 7 * n + 12 * medium, plan + 21 * n) + SMALL
    if name == "blocked":  # two x vectors, acc, dangling; the ranks read back (17N) at the end
        seg_kept, seg_peak = segment_bytes(n, e, segment)
        return graph + max(checks, seg_peak, seg_kept + 33 * n) + SMALL
    kept, built, per_iteration = _layout_bytes(name, n, e, segment, host_out_csr)
    own = UNFUSED_VERTEX * n - 4 * n                 # the iteration's six vectors, before its first run
    return graph + max(checks, own + built, own + 4 * n + kept + max(n, per_iteration)) + SMALL


def source_segments(xp, in_offsets, in_sources, num_vertices: int, vertices_per_segment: int) -> list:
    """The in-links split by source into segments (NumPy or CuPy ``xp``): for each non-empty one, int32 rows
    (ascending), offsets and sources, its own in-CSR; one segment at a time (``segment_bytes``)."""
    n, key, e = int(num_vertices), int(vertices_per_segment), int(in_sources.size)
    if key < 1:
        raise ValueError(f"vertices_per_segment must be at least 1, got {key}")
    starts, ends = in_offsets[:-1], in_offsets[1:]
    parts = []
    for lo in range(0, n, key):
        inside = in_sources >= lo
        inside &= in_sources < lo + key
        before = xp.zeros(e + 1, dtype=xp.int32)            # this segment's in-links before each position
        xp.cumsum(inside, dtype=xp.int32, out=before[1:])
        if int(before[-1]) == 0:
            continue                                        # no in-link comes from this segment
        per_row = before[ends]
        per_row -= before[starts]
        del before
        sources = in_sources[inside]
        del inside
        rows = xp.flatnonzero(per_row).astype(xp.int32)
        offsets = xp.zeros(rows.size + 1, dtype=xp.int32)
        xp.cumsum(per_row[rows], dtype=xp.int32, out=offsets[1:])
        parts.append((rows, offsets, sources))
    return parts


def edge_targets(xp, in_offsets, start: int, stop: int):
    """The targets (int64) of in-links start..stop-1, found in the in-CSR offsets (NumPy or CuPy)."""
    targets = xp.searchsorted(in_offsets, xp.arange(start, stop, dtype=xp.int32), side="right")
    targets -= 1
    return targets


def out_csr_arrays(xp, in_offsets, in_sources, out_degree, num_vertices: int):
    """(out_offsets, out_targets), int32, from the in-CSR (NumPy or CuPy): one in-place sort of int64 keys."""
    n, e = int(num_vertices), int(in_sources.size)
    keys = xp.empty(e, dtype=xp.int64)
    keys[...] = in_sources
    keys *= n
    for start in range(0, e, EDGE_CHUNK):
        part = keys[start:start + EDGE_CHUNK]
        part += edge_targets(xp, in_offsets, start, start + part.size)
    keys.sort()
    keys %= n
    offsets = xp.zeros(n + 1, dtype=xp.int32)
    xp.cumsum(out_degree, dtype=xp.int32, out=offsets[1:])
    return offsets, keys.astype(xp.int32)


def in_csr(targets, sources, n: int):
    """(in_offsets, in_sources), int32 CuPy arrays, of the edges sources -> targets (int64 CuPy arrays)."""
    cp = require_gpu()
    in_offsets = cp.zeros(n + 1, dtype=cp.int32)
    cp.cumsum(cp.bincount(targets, minlength=n), out=in_offsets[1:])
    return in_offsets, (cp.sort(targets * n + sources) % n).astype(cp.int32)    # sources ascending


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
    """A graph's in-CSR and out-degrees on the GPU, int32, checked, from a ``Graph`` or anything with its
    arrays (NumPy or CuPy); ``variant``: whose memory to check up front (``device_bytes``)."""

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
        # CuPy offsets and out-degrees already int32, 1-D, contiguous are kept; the in-links are always copied
        held = sum(a.nbytes for a in (graph.in_offsets, graph.out_degree) if isinstance(a, cp.ndarray)
                   and a.ndim == 1 and a.dtype == cp.int32 and a.flags.c_contiguous)
        need = device_bytes(n, e, variant, host_out_csr=isinstance(graph, Graph))
        ensure_fits(need - held, f"{label} with {getattr(variant, 'name', variant)}")
        in_offsets = cp.asarray(_index_array(xp, graph.in_offsets, "in_offsets", n + 1, e))
        in_sources = _index_array(xp, graph.in_sources, "in_sources", e, n - 1)
        self.out_degree = cp.asarray(_index_array(xp, graph.out_degree, "out_degree", n, INT32_MAX))
        # PAD zeros after the last in-link: a kernel that reads past its row (an off-by-one bound) then reads
        # vertex 0's contribution and gets a wrong sum that verify names, instead of a lost GPU context
        padded = cp.zeros(e + PAD, dtype=cp.int32)
        if xp is cp:
            padded[:e] = in_sources
        elif e:
            padded[:e].set(in_sources)          # straight from the host: no second copy on the GPU
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
        """(out_offsets, out_targets), for push and scan: the host graph's, else sorted on the GPU."""
        cp = require_gpu()
        n, e = self.num_vertices, self.num_edges
        self.fits(_layout_bytes("push_atomic", n, e, 1, self.graph is not None)[1], "the out-CSR")
        if self.graph is not None:
            return cp.asarray(self.graph.out_offsets, dtype=cp.int32), cp.asarray(self.graph.out_targets)
        return out_csr_arrays(cp, self.in_offsets, self.in_sources, self.out_degree, n)

    @cached_property
    def in_edges(self):
        """Interleaved (source, out_degree[source]) pairs, one per in-link, in in-CSR order."""
        cp = require_gpu()
        self.fits(12 * self.num_edges, "the interleaved in-links")
        return cp.ascontiguousarray(cp.stack([self.in_sources, self.out_degree[self.in_sources]], axis=1))

    @cached_property
    def in_targets(self):
        """The target of every in-link, in in-CSR order (with in_sources, the COO edge list)."""
        cp = require_gpu()
        e = self.num_edges
        self.fits(_layout_bytes("coo_atomic", self.num_vertices, e, 1, False)[1], "the in-link targets")
        targets = cp.empty(e, dtype=cp.int32)
        for start in range(0, e, EDGE_CHUNK):
            stop = min(e, start + EDGE_CHUNK)
            targets[start:stop] = edge_targets(cp, self.in_offsets, start, stop)
        return targets

    def bins(self, thread_max: int = 32, warp_max: int = 1024):
        """Vertex lists by in-degree: light (< thread_max), medium (< warp_max), heavy (the rest)."""
        cp, degree = require_gpu(), self.in_degree
        return tuple(cp.flatnonzero(mask).astype(cp.int32) for mask in
                     (degree < thread_max, (degree >= thread_max) & (degree < warp_max), degree >= warp_max))

    @cached_property
    def degree_bins(self):
        """The bins pull_binned uses (thread below 32 in-links, warp below 1024, block above)."""
        self.fits(_layout_bytes("pull_binned", self.num_vertices, 0, 1, False)[1], "the degree bins")
        return self.bins()

    @cached_property
    def half_buffers(self):
        """(scale, 16-bit contributions): scale[0] the factor to_f16 applies, scale[1] its inverse."""
        cp = require_gpu()
        self.fits(2 * self.num_vertices + 8, "the 16-bit contributions")
        return cp.ones(2, dtype=cp.float32), cp.empty(self.num_vertices, dtype=cp.uint16)

    def in_matrix_of(self, dtype=np.float32):
        """The in-link matrix as a cupyx.scipy.sparse CSR matrix of ones of ``dtype``."""
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
        """(rows, offsets, sources) of each segment of ``vertices_per_segment`` sources, built once."""
        cp = require_gpu()
        key = int(vertices_per_segment)
        cache = self.__dict__.setdefault("_segments", {})
        if key not in cache:
            self.fits(segment_bytes(self.num_vertices, self.num_edges, key)[1], "the source segments")
            cache[key] = source_segments(cp, self.in_offsets, self.in_sources, self.num_vertices, key)
        return cache[key]


def as_device_graph(graph, variant: str = "fused") -> DeviceGraph:
    return graph if isinstance(graph, DeviceGraph) else DeviceGraph(graph, variant=variant)
