"""One PageRank driver for every kernel the course teaches, so that lectures compare kernels, not loops.

Each iteration: (contributions, if the kernel reads them) -> the kernel's sum over in-links ("pulled")
-> new rank = d * pulled + (d * dangling mass + 1 - d) / n -> L1 change -> the stop test, on the GPU.
Only the middle step differs between variants; ``fused`` does the whole iteration in one launch. Ranks
are float32 on the GPU and are checked against the float64 reference. Every kernel is launched through
``helpers.kernels.load``, so a kernel that a lecture cell defined is the one that runs, is timed and is
verified here. The host looks at the stop test only every ``check_every`` iterations.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import Callable

import numpy as np

from . import kernels
from .gpu import free_bytes, require_gpu, time_back_to_back, time_gpu
from .graph import Graph
from .reference import (DAMPING, ConvergenceWarning, check_damping, check_tol, l1_distance, max_abs_diff, pagerank,
                        pagerank_step, teleport_vector, verify_fixed_point)

BLOCK = 256
HISTORY = 4096                      # L1 changes kept on the GPU (a ring)
BYTES_MODEL = "4E + 20N bytes"      # the DRAM lower bound of one iteration, if every byte moved once
INT32_MAX = 2**31 - 1
HEADROOM = 0.9                      # plan for at most 90% of the free memory (ensure_fits, multigpu)
PAD = 64                            # zero entries kept after the last in-link


class GraphTooLargeError(MemoryError):
    """The graph, or a layout a variant needs, does not fit in the GPU's free memory (or in int32 indices)."""


class VerificationError(AssertionError):
    """A kernel gave ranks that the float64 reference does not accept."""


NotConvergedWarning = ConvergenceWarning   # the reference's warning: stopped at max_iter without meeting the test


def bytes_per_iteration(graph) -> int:
    """The byte model: every in-link's source (4E) and five vectors of N floats, each moved once."""
    return 4 * int(graph.num_edges) + 20 * int(graph.num_vertices)


# --- memory -----------------------------------------------------------------------------------------

# Bytes per vertex and per edge of what a variant allocates beyond the in-CSR and out-degrees every variant
# reads: (per vertex, per edge). Unfused iterations keep rank, new rank, contributions, pulled, a scratch
# vector and the dangling mask (6N floats); the fused one keeps two ranks, two contributions and its vertex
# lists (5N) and per-block partials.
_UNFUSED_VERTEX = 6 * 4
_LAYOUT = {                          # a variant's own layout, (bytes per vertex, bytes per edge)
    "scan_naive": (4, 4), "push_atomic": (4, 4),           # the out-CSR
    "pull_interleaved": (0, 8),                            # (source, out-degree) pairs
    "coo_atomic": (0, 4),                                  # the target of every in-link
    "cusparse": (4, 4),                                    # float32 ones, and the SpMV buffer (at most N)
    "pull_binned": (4, 0),                                 # the three vertex lists
    "pull_segmented": (12, 4),                             # per-segment rows, offsets and sources
    "pull_f16": (2, 0), "pull_bf16": (2, 0),               # the 16-bit contributions
}


def device_bytes(num_vertices: int, num_edges: int, variant="fused", *, offset_bytes: int = 4) -> int:
    """GPU memory, in bytes, that a DeviceGraph and one iteration of ``variant`` allocate: the in-CSR and
    out-degrees (int32, or ``offset_bytes=8`` for int64 offsets), the variant's own layout and the
    iteration's vectors and temporaries. ``DeviceGraph`` checks this against free memory up front."""
    n, e = int(num_vertices), int(num_edges)
    name = variant if isinstance(variant, str) else variant.name
    base = offset_bytes * (n + 1) + 4 * e + 4 * n
    if name == "fused":
        blocks = 2 * (n // BLOCK + 2) + e // 1024
        return base + 5 * 4 * n + 8 * blocks + 16 * (e // 1024 + 1) + 4 * HISTORY
    per_vertex, per_edge = _LAYOUT.get(name, (0, 0))
    return base + _UNFUSED_VERTEX * n + per_vertex * n + per_edge * e + 4 * HISTORY + (1 << 20)


def ensure_fits(nbytes: int, what: str) -> None:
    """Refuse, before allocating, what would take more than 90% of the memory this process can still use."""
    free = free_bytes()
    if nbytes > HEADROOM * free:
        raise GraphTooLargeError(f"{what} needs about {nbytes / 2**30:.2f} GiB on the GPU, which has "
                                 f"{free / 2**30:.2f} GiB free: use a smaller graph or a GPU with more memory")


# --- the graph on the GPU ---------------------------------------------------------------------------

def _index_array(xp, values, what: str, size: int, upper: int):
    """An int32 device array of ``size`` entries in [0, upper], converted safely or refused with a message."""
    array = values
    if array.ndim != 1 or array.size != size:
        raise ValueError(f"{what} must be a 1-D array of {size:,} entries, got shape {array.shape}")
    if array.dtype.kind not in "iu":
        raise TypeError(f"{what} must hold integers, got {array.dtype}")
    if size and (int(array.min()) < 0 or int(array.max()) > upper):
        raise ValueError(f"{what} holds values outside 0..{upper:,}")
    return xp.ascontiguousarray(xp.asarray(array), dtype=xp.int32)


class DeviceGraph:
    """A graph's in-CSR and out-degrees on the GPU, int32, checked; the other layouts some variants need
    are built on first use, each after checking that it fits.

    ``graph`` is a ``helpers.graph.Graph`` or anything with ``num_vertices``, ``in_offsets``, ``in_sources``
    and ``out_degree`` (NumPy or CuPy arrays) and a ``name``; ``variant`` says which variant's memory to
    check up front (``device_bytes``)."""

    def __init__(self, graph, *, variant="fused", name: str | None = None):
        cp = require_gpu()
        n = int(graph.num_vertices)
        e = int(graph.in_sources.size)
        if n < 1 or n > INT32_MAX:
            raise GraphTooLargeError(f"{n:,} vertices: the course's kernels index vertices with int32")
        if e > INT32_MAX or int(graph.in_offsets[-1]) > INT32_MAX:
            raise GraphTooLargeError(f"{graph.name}: {e:,} edges need int64 offsets; the course's kernels "
                                     "index edges with int32 (at most 2,147,483,647 edges)")
        xp = cp if isinstance(graph.in_sources, cp.ndarray) else np
        held = sum(a.nbytes for a in (graph.in_offsets, graph.in_sources, graph.out_degree)) if xp is cp else 0
        ensure_fits(device_bytes(n, e, variant) - held, f"{getattr(graph, 'name', 'the graph')} with {variant!s}")
        self.in_offsets = _index_array(xp, graph.in_offsets, "in_offsets", n + 1, e)
        self.in_sources = _index_array(xp, graph.in_sources, "in_sources", e, n - 1)
        self.out_degree = _index_array(xp, graph.out_degree, "out_degree", n, INT32_MAX)
        self.in_offsets, self.out_degree = cp.asarray(self.in_offsets), cp.asarray(self.out_degree)
        # PAD zeros after the last in-link: a kernel that reads past its row (an off-by-one bound) then reads
        # vertex 0's contribution and gets a wrong sum that verify names, instead of a lost GPU context
        padded = cp.zeros(e + PAD, dtype=cp.int32)
        padded[:e] = cp.asarray(self.in_sources)
        self.in_sources = padded[:e]
        if int(self.in_offsets[0]) != 0 or int(self.in_offsets[-1]) != e or bool((cp.diff(self.in_offsets) < 0).any()):
            raise ValueError(f"{getattr(graph, 'name', 'graph')}: in_offsets must rise from 0 to the edge count")
        total = int(self.out_degree.sum(dtype=cp.int64))
        if total != e:
            raise ValueError(f"{getattr(graph, 'name', 'graph')}: the out-degrees add up to {total:,}, "
                             f"not to the {e:,} edges")
        self.graph = graph if isinstance(graph, Graph) else None
        self.name = name or getattr(graph, "name", "graph")
        self.num_vertices, self.num_edges = n, e

    def __repr__(self) -> str:
        return f"DeviceGraph({self.name!r}: {self.num_vertices:,} vertices, {self.num_edges:,} edges)"

    def _fits(self, nbytes: int, what: str) -> None:
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
        """(out_offsets, out_targets): the out-links, for push and scan. From the host graph if there is one,
        else transposed on the GPU."""
        cp = require_gpu()
        n, e = self.num_vertices, self.num_edges
        self._fits(4 * (n + 1) + 12 * e, "the out-CSR")
        if self.graph is not None:
            return cp.asarray(self.graph.out_offsets, dtype=cp.int32), cp.asarray(self.graph.out_targets)
        keys = cp.sort(self.in_sources.astype(cp.int64) * n + self.in_targets)     # by source, then target
        offsets = cp.zeros(n + 1, dtype=cp.int32)
        cp.cumsum(self.out_degree, out=offsets[1:])
        return offsets, (keys % n).astype(cp.int32)

    @property
    def out_offsets(self):
        return self.out_csr[0]

    @property
    def out_targets(self):
        return self.out_csr[1]

    @cached_property
    def in_edges(self):
        """Interleaved (source, out_degree[source]) pairs, one per in-link, in in-CSR order."""
        cp = require_gpu()
        self._fits(8 * self.num_edges, "the interleaved in-links")
        return cp.ascontiguousarray(cp.stack([self.in_sources, self.out_degree[self.in_sources]], axis=1))

    @cached_property
    def in_targets(self):
        """The target of every in-link, in in-CSR order: with in_sources, the edge list (COO)."""
        cp = require_gpu()
        self._fits(12 * self.num_edges, "the in-link targets")
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
        """The bins the degree-binned variant uses (thread below 32 in-links, warp below 1024, block above)."""
        self._fits(4 * self.num_vertices, "the degree bins")
        return self.bins()

    def fused_plan(self, medium_max: int = 1024, chunk: int = 16384) -> "FusedPlan":
        """The fused kernel's work lists for this graph (built once per setting)."""
        key = (medium_max, chunk)
        plans = self.__dict__.setdefault("_plans", {})
        if key not in plans:
            self._fits(4 * self.num_vertices // 8 + 16 * (self.num_edges // chunk + 1), "the fused kernel's lists")
            plans[key] = FusedPlan.build(self, medium_max, chunk)
        return plans[key]

    @cached_property
    def half_buffers(self):
        """(scale, 16-bit contributions): scale[0] the factor to_f16 applies, scale[1] its inverse (lecture 40)."""
        cp = require_gpu()
        self._fits(2 * self.num_vertices + 8, "the 16-bit contributions")
        return cp.ones(2, dtype=cp.float32), cp.empty(self.num_vertices, dtype=cp.uint16)

    @cached_property
    def in_matrix(self):
        """cuSPARSE's view: the in-link matrix as cupyx.scipy.sparse CSR of float32 ones."""
        cp = require_gpu()
        import cupyx.scipy.sparse as sparse

        self._fits(4 * self.num_edges + 4 * self.num_vertices, "the cuSPARSE matrix")
        ones = cp.ones(self.num_edges, dtype=cp.float32)
        return sparse.csr_matrix((ones, self.in_sources, self.in_offsets),
                                 shape=(self.num_vertices, self.num_vertices))

    def segments(self, vertices_per_segment: int):
        """The in-links split by source into segments of ``vertices_per_segment`` sources: for each, the rows
        it touches and its own in-CSR over them (rows, offsets, sources), in CuPy arrays. Built on the GPU."""
        cp = require_gpu()
        key = int(vertices_per_segment)
        cache = self.__dict__.setdefault("_segments", {})
        if key not in cache:
            n, e = self.num_vertices, self.num_edges
            self._fits(24 * e + 12 * n, "the source segments")
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
                first = cp.concatenate([cp.ones(1, dtype=bool), t[1:] != t[:-1]])
                heads = cp.flatnonzero(first)
                offsets = cp.concatenate([heads, cp.asarray([t.size])]).astype(cp.int32)
                parts.append((t[heads].astype(cp.int32), offsets, cp.ascontiguousarray(src)))
            cache[key] = parts
        return cache[key]


FUSED_LIGHT_MAX = 32        # fused_step's LIGHT_MAX: vertices with at most this many in-links are streamed


@dataclass(frozen=True)
class FusedPlan:
    """fused_step's work for one graph: light vertices (at most FUSED_LIGHT_MAX in-links) are taken by id,
    32 per warp; medium ones are listed (one warp each); heavy ones become tasks (one block each; rows of
    (vertex, first in-link, end, group), a split vertex's tasks sharing a group whose (first task, number
    of tasks) is in ``groups``); plus the arrival counters of split vertices and of the blocks."""
    medium: object
    heavy: object
    groups: object
    part_sums: object
    arrivals: object
    finished: object
    items: int
    medium_max: int
    chunk: int

    @classmethod
    def build(cls, dg: DeviceGraph, medium_max: int, chunk: int) -> "FusedPlan":
        cp = require_gpu()
        if medium_max < FUSED_LIGHT_MAX or chunk < 1:
            raise ValueError(f"need medium_max >= {FUSED_LIGHT_MAX} and chunk >= 1, got {medium_max}, {chunk}")
        degree = dg.in_degree
        medium = cp.flatnonzero((degree > FUSED_LIGHT_MAX) & (degree <= medium_max)).astype(cp.int32)
        heavy_vertices = cp.flatnonzero(degree > medium_max)
        begins = dg.in_offsets[heavy_vertices].get().astype(np.int64)
        counts = degree[heavy_vertices].get().astype(np.int64)
        heavy_vertices = heavy_vertices.get()
        order = np.argsort(-counts, kind="stable")                  # the longest work starts first
        tasks, groups = [], []
        for v, begin, count in zip(heavy_vertices[order], begins[order], counts[order]):
            parts = -(-int(count) // chunk)
            group = len(groups) if parts > 1 else -1
            if parts > 1:
                groups.append((len(tasks), parts))
            for p in range(parts):
                tasks.append((int(v), int(begin + p * chunk), int(min(begin + (p + 1) * chunk, begin + count)), group))
        heavy = cp.asarray(np.array(tasks, dtype=np.int32).reshape(-1, 4))
        groups_array = cp.asarray(np.array(groups, dtype=np.int32).reshape(-1, 2))
        warps = BLOCK // 32
        items = len(tasks) + -(-int(medium.size) // warps) + -(-dg.num_vertices // BLOCK)
        return cls(medium, heavy, groups_array, cp.zeros(max(len(tasks), 1), dtype=cp.float32),
                   cp.zeros(max(len(groups), 1), dtype=cp.int32), cp.zeros(1, dtype=cp.int32), items,
                   medium_max, chunk)

    def counts(self) -> dict:
        return {"medium vertices (a warp each)": int(self.medium.size),
                "heavy tasks (a block each)": int(self.heavy.shape[0]),
                "heavy vertices split over several blocks": int(self.groups.shape[0]),
                "work items": self.items}


def resident_blocks(kernel, threads: int = BLOCK) -> int:
    """How many blocks of ``threads`` threads of this kernel the whole GPU holds at once (one wave)."""
    cp = require_gpu()
    from .gpu import device_facts

    try:
        per_sm = cp.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(kernel.ptr, threads, 0)
    except Exception:             # an older CuPy without the occupancy query: assume full thread occupancy
        per_sm = cp.cuda.Device().attributes["MaxThreadsPerMultiProcessor"] // threads
    return device_facts().multiprocessors * max(int(per_sm), 1)


def _i32(value: int):
    return np.int32(value)


def _blocks(threads: int) -> tuple[int]:
    return (max(1, (int(threads) + BLOCK - 1) // BLOCK),)


def _vector(x, n: int, what: str):
    """Refuse what a kernel would misread: not float32, not contiguous, too short."""
    if getattr(x, "dtype", None) != np.float32 or not x.flags.c_contiguous or x.size < n:
        raise TypeError(f"{what} must be a contiguous float32 CuPy array of at least {n:,} entries, got "
                        f"{getattr(x, 'dtype', type(x).__name__)} of shape {getattr(x, 'shape', '?')}")
    return x


# --- the variants: each fills `pulled` from x (ranks or contributions) ------------------------------

def _pull_thread(dg, x, y):
    kernels.load("pull_thread")(_blocks(dg.num_vertices), (BLOCK,),
                                (dg.in_offsets, dg.in_sources, dg.out_degree, x, y, _i32(dg.num_vertices)))


def _scan_naive(dg, x, y):
    kernels.load("scan_naive")(_blocks(dg.num_vertices), (BLOCK,),
                               (dg.out_offsets, dg.out_targets, dg.out_degree, x, y, _i32(dg.num_vertices)))


def _push_atomic(dg, x, y):
    y.fill(0)
    kernels.load("push_atomic")(_blocks(dg.num_vertices), (BLOCK,),
                                (dg.out_offsets, dg.out_targets, x, y, _i32(dg.num_vertices)))


def _pull(name: str, threads_per_vertex: int = 1, shared_mem: int = 0):
    """Launcher for the kernels that take (in_offsets, in_sources, x, pulled, n)."""
    def launch(dg, x, y):
        kernels.load(name)(_blocks(threads_per_vertex * dg.num_vertices), (BLOCK,),
                           (dg.in_offsets, dg.in_sources, x, y, _i32(dg.num_vertices)), shared_mem=shared_mem)
    return launch


def _pull_interleaved(dg, x, y):
    kernels.load("pull_interleaved")(_blocks(dg.num_vertices), (BLOCK,),
                                     (dg.in_offsets, dg.in_edges, x, y, _i32(dg.num_vertices)))


def _pull_subwarp(width: int):
    def launch(dg, x, y):
        kernels.load("pull_subwarp")(_blocks(width * dg.num_vertices), (BLOCK,),
                                     (dg.in_offsets, dg.in_sources, x, y, _i32(dg.num_vertices), _i32(width)))
    return launch


def _pull_hybrid(dg, x, y, threshold: int = 32):
    kernels.load("pull_hybrid")(_blocks(dg.num_vertices), (BLOCK,),
                                (dg.in_offsets, dg.in_sources, x, y, _i32(dg.num_vertices), _i32(threshold)))


pull_hybrid = _pull_hybrid        # public: lecture 13 launches it with other thresholds


def pull_binned(dg, x, y):
    light, medium, heavy = dg.degree_bins
    common = (dg.in_offsets, dg.in_sources, x, y)
    if light.size:
        kernels.load("pull_bin_thread")(_blocks(light.size), (BLOCK,), (light, _i32(light.size), *common))
    if medium.size:
        kernels.load("pull_bin_warp")(_blocks(32 * medium.size), (BLOCK,), (medium, _i32(medium.size), *common))
    if heavy.size:
        kernels.load("pull_bin_block")((heavy.size,), (BLOCK,), (heavy, _i32(heavy.size), *common))


def _coo_atomic(dg, x, y):
    y.fill(0)
    kernels.load("coo_atomic")(_blocks(dg.num_edges), (BLOCK,),
                               (dg.in_sources, dg.in_targets, x, y, _i32(dg.num_edges)))


def _coo_segmented_scan(dg, x, y):
    """Reduce-by-key with CuPy alone: gather per edge, prefix-sum in float64, difference at the offsets."""
    cp = require_gpu()
    running = cp.concatenate([cp.zeros(1), cp.cumsum(x[dg.in_sources], dtype=cp.float64)])
    y[...] = running[dg.in_offsets[1:]] - running[dg.in_offsets[:-1]]


def _cusparse(dg, x, y):
    y[...] = dg.in_matrix @ x


def segment_size(dg) -> int:
    """Sources per segment for pull_segmented: a segment's contributions take half of this GPU's L2."""
    from .gpu import device_facts

    return max(BLOCK, device_facts().l2_bytes // 2 // 4)


def _pull_segmented(dg, x, y):
    y.fill(0)
    for rows, offsets, sources in dg.segments(segment_size(dg)):
        kernels.load("pull_segment")(_blocks(rows.size), (BLOCK,),
                                     (rows, _i32(rows.size), offsets, sources, x, y, _i32(32)))


@dataclass(frozen=True)
class Variant:
    name: str
    reads: str                   # "ranks" (divides by the out-degree itself) or "contributions"
    spmv: Callable = field(repr=False)
    kernels: tuple[str, ...]     # the .cu kernel files it launches (none for CuPy-only variants)
    deterministic: bool = True   # atomics make the rounding depend on the order of additions
    max_vertices: int | None = None
    precision: float = 2.0**-24  # unit roundoff of what the kernel stores and adds (float32)

    def __call__(self, dg, x, y):
        """Launch the variant's sum over in-links: pulled (y) from x, both checked float32 vectors."""
        self.spmv(dg, _vector(x, dg.num_vertices, "x"), _vector(y, dg.num_vertices, "pulled"))


VARIANTS = {v.name: v for v in [
    Variant("pull_thread", "ranks", _pull_thread, ("pull_thread",)),
    Variant("scan_naive", "ranks", _scan_naive, ("scan_naive",), max_vertices=50_000),
    Variant("push_atomic", "contributions", _push_atomic, ("push_atomic",), deterministic=False),
    Variant("pull_contrib", "contributions", _pull("pull_contrib"), ("pull_contrib",)),
    Variant("pull_interleaved", "ranks", _pull_interleaved, ("pull_interleaved",)),
    Variant("pull_contrib_kahan", "contributions", _pull("pull_contrib_kahan"), ("pull_contrib_kahan",)),
    Variant("pull_contrib_f64", "contributions", _pull("pull_contrib_f64"), ("pull_contrib_f64",)),
    Variant("pull_warp", "contributions", _pull("pull_warp", threads_per_vertex=32), ("pull_warp",)),
    *[Variant(f"pull_subwarp_{w}", "contributions", _pull_subwarp(w), ("pull_subwarp",))
      for w in (4, 8, 16)],
    Variant("pull_hybrid", "contributions", _pull_hybrid, ("pull_hybrid",)),
    Variant("pull_shared_tile", "contributions", _pull("pull_shared_tile", shared_mem=BLOCK * 4), ("pull_shared_tile",)),
    Variant("pull_binned", "contributions", pull_binned, ("pull_bin_thread", "pull_bin_warp", "pull_bin_block")),
    Variant("pull_segmented", "contributions", _pull_segmented, ("pull_segment",)),
    Variant("coo_atomic", "contributions", _coo_atomic, ("coo_atomic",), deterministic=False),
    Variant("coo_segmented_scan", "contributions", _coo_segmented_scan, ()),
    # cuSPARSE's SpMV changed its last bits between two runs on an H100: not deterministic
    Variant("cusparse", "contributions", _cusparse, (), deterministic=False),
]}


def half_spmv(dg, x, y, storage="float16"):
    """Contributions stored in 16 bits, added in float32 (lecture 40): the scale for float16 is picked on the
    GPU from the largest contribution, so no value overflows; bfloat16 has float32's range and needs none."""
    scale, half = dg.half_buffers
    n = dg.num_vertices
    if storage == "float16":
        kernels.load("to_half", "half_scale")((1,), (1,), (x.max(), scale))
        kernels.load("to_half", "to_f16")(_blocks(n), (BLOCK,), (x, half, _i32(n), scale))
        kernels.load("pull_half", "pull_f16")(_blocks(n), (BLOCK,), (dg.in_offsets, dg.in_sources, half, scale, y, _i32(n)))
    else:
        scale.fill(1.0)
        kernels.load("to_half", "to_bf16")(_blocks(n), (BLOCK,), (x, half, _i32(n)))
        kernels.load("pull_half", "pull_bf16")(_blocks(n), (BLOCK,), (dg.in_offsets, dg.in_sources, half, scale, y, _i32(n)))


HALF_STORAGE = {"float16": "pull_f16", "bfloat16": "pull_bf16"}


def half_variant(storage: str) -> Variant:
    """The variant that stores contributions in ``storage`` ('float16' or 'bfloat16') and adds in float32."""
    if storage not in HALF_STORAGE:
        raise ValueError(f"storage must be one of {', '.join(HALF_STORAGE)}, got {storage!r}")
    return Variant(HALF_STORAGE[storage], "contributions", lambda dg, x, y: half_spmv(dg, x, y, storage),
                   ("to_half", "pull_half"), precision=2.0**-11 if storage == "float16" else 2.0**-8)


def variants_for(num_vertices: int) -> list[str]:
    """Every variant that may run on a graph of this size (the O(N^2) scan only on small ones), then 'fused'."""
    return [name for name, v in VARIANTS.items() if not v.max_vertices or num_vertices <= v.max_vertices] + ["fused"]


def variant(name_or_variant) -> Variant:
    if isinstance(name_or_variant, Variant):
        return name_or_variant
    if name_or_variant in HALF_STORAGE.values():
        return half_variant({v: k for k, v in HALF_STORAGE.items()}[name_or_variant])
    try:
        return VARIANTS[name_or_variant]
    except (KeyError, TypeError):
        known = ", ".join(list(VARIANTS) + list(HALF_STORAGE.values()) + ["fused"])
        raise KeyError(f"unknown variant {name_or_variant!r}; known: {known}") from None


def known_variant(name: str) -> bool:
    return name == "fused" or name in VARIANTS or name in HALF_STORAGE.values()


# --- the shared iteration ---------------------------------------------------------------------------

@lru_cache(maxsize=None)
def _elementwise():
    cp = require_gpu()
    update = cp.ElementwiseKernel(
        "float32 pulled, float32 dangling_mass, float32 d, int32 n, int32 stopped, float32 rank", "float32 out",
        "out = stopped ? rank : d * pulled + (d * dangling_mass + (1.0f - d)) / n", "pagerank_update")
    personal = cp.ElementwiseKernel(
        "float32 pulled, float32 dangling_mass, float32 d, float32 teleport, int32 stopped, float32 rank",
        "float32 out", "out = stopped ? rank : d * pulled + (d * dangling_mass + (1.0f - d)) * teleport",
        "pagerank_update_personalised")
    absdiff = cp.ElementwiseKernel("float32 a, float32 b", "float32 out", "out = fabsf(a - b)", "pagerank_absdiff")
    return update, personal, absdiff


class _Stopping:
    """The stop test's state on the GPU: state[0] (0 running, 1 met tol, 2 reached max_iter), state[1] (the
    iterations run), and the ring of the last HISTORY L1 changes. tol = 0: never stops (for timing)."""

    def _init_stopping(self, tol: float, max_iter: int):
        cp = require_gpu()
        self.tol = float(tol)
        self.max_iter = int(max_iter)
        self.state = cp.zeros(2, dtype=cp.int32)
        self.changes = cp.full(HISTORY, cp.nan, dtype=cp.float32)

    def stopped_state(self) -> tuple[int, int]:
        """(reason, iterations) read from the GPU: one synchronisation."""
        reason, count = (int(v) for v in self.state.get())
        return reason, count

    def residuals(self, count: int) -> np.ndarray:
        ring = self.changes.get().astype(np.float64)
        if count <= HISTORY:
            return ring[:count]
        start = count % HISTORY
        return np.concatenate([ring[start:], ring[:start]])


class Iteration(_Stopping):
    """Buffers and launches of one PageRank iteration for a variant; ``run()`` enqueues it and returns the L1
    change as a 0-d device array (no host synchronisation), leaving the new ranks in ``rank``. With ``tol``
    (and ``max_iter``) the stop test runs on the GPU after each iteration; once it is met, ``run`` leaves the
    ranks as they are."""

    def __init__(self, dg: DeviceGraph, name, damping: float = DAMPING, personalization=None, *,
                 tol: float = 0.0, max_iter: int = 0):
        cp = require_gpu()
        self.dg, self.variant, self.damping = dg, variant(name), check_damping(damping)
        if self.variant.max_vertices and dg.num_vertices > self.variant.max_vertices:
            raise ValueError(f"{self.variant.name} is O(N^2): use it on graphs of at most "
                             f"{self.variant.max_vertices:,} vertices, not {dg.num_vertices:,}")
        n = dg.num_vertices
        ensure_fits(_UNFUSED_VERTEX * n, f"the iteration vectors for {dg.name}")
        # teleport and dangling rank go to the personalisation vector (normalised, checked) if one is given
        self.teleport = None if personalization is None else cp.asarray(
            teleport_vector(n, personalization), dtype=cp.float32)
        self.rank = cp.full(n, 1.0 / n, dtype=cp.float32)
        self.new = cp.empty_like(self.rank)
        self.contrib = cp.empty_like(self.rank)
        self.pulled = cp.empty_like(self.rank)
        self.scratch = cp.empty_like(self.rank)
        self.d = cp.float32(self.damping)
        self._init_stopping(tol, max_iter)
        cp.cuda.get_current_stream().synchronize()     # buffers ready for any stream that launches next

    def launch_kernel(self):
        """The variant's own kernel(s) alone: the sum over in-links."""
        x = self.contrib if self.variant.reads == "contributions" else self.rank
        self.variant.spmv(self.dg, x, self.pulled)

    def run(self):
        # Sums of whole vectors go through cupy.sum (CUB): a hand-written one-block reduction was measured at
        # several times the cost of the SpMV itself. Nothing here waits for the GPU.
        cp = require_gpu()
        update, personal, absdiff = _elementwise()
        dg, n = self.dg, self.dg.num_vertices
        if self.variant.reads == "contributions":
            kernels.load("contributions")(_blocks(n), (BLOCK,), (self.rank, dg.out_degree, self.contrib, _i32(n)))
        self.launch_kernel()
        dangling_mass = cp.multiply(self.rank, dg.dangling, out=self.scratch).sum()   # 0-d: stays on the GPU
        stopped = self.state[0]
        if self.teleport is None:
            update(self.pulled, dangling_mass, self.d, np.int32(n), stopped, self.rank, self.new)
        else:
            personal(self.pulled, dangling_mass, self.d, self.teleport, stopped, self.rank, self.new)
        change = absdiff(self.new, self.rank, self.scratch).sum()
        kernels.load("stop_test")((1,), (1,), (change, self.state, self.changes, _i32(HISTORY),
                                              np.float32(self.tol), _i32(self.max_iter)))
        self.rank, self.new = self.new, self.rank
        return change


class FusedIteration(_Stopping):
    """The whole iteration in ONE launch of fused_step: sums balanced by in-degree (light vertices read as
    a coalesced stream), update, next contributions, and the last block to finish adds every block's share of
    the dangling mass and L1 change and runs the stop test. Nothing is computed on the host, so a run of
    iterations can be captured as a CUDA graph. Same interface as Iteration."""

    def __init__(self, dg: DeviceGraph, damping: float = DAMPING, *, tol: float = 0.0, max_iter: int = 0,
                 medium_max: int = 1024, chunk: int = 16384):
        cp = require_gpu()
        self.dg, self.damping = dg, check_damping(damping)
        self.variant = Variant("fused", "contributions", None, ("fused_step",))
        self.plan = dg.fused_plan(medium_max, chunk)
        n = dg.num_vertices
        self.blocks = min(self.plan.items, resident_blocks(kernels.load("fused_step")))
        ensure_fits(16 * n + 8 * self.blocks, f"the fused iteration's vectors for {dg.name}")
        self.ranks = [cp.full(n, 1.0 / n, dtype=cp.float32), cp.empty(n, dtype=cp.float32)]
        self.contribs = [cp.empty(n, dtype=cp.float32), cp.empty(n, dtype=cp.float32)]
        kernels.load("contributions")(_blocks(n), (BLOCK,), (self.ranks[0], dg.out_degree, self.contribs[0], _i32(n)))
        self.partials = cp.zeros(2 * self.blocks, dtype=cp.float32)
        self.scalars = (dg.dangling.sum() / n).astype(cp.float32).reshape(1)   # dangling mass of the start
        self._init_stopping(tol, max_iter)
        self.count = 0
        cp.cuda.get_current_stream().synchronize()     # buffers ready for any stream that launches next

    @property
    def rank(self):
        return self.ranks[self.count % 2]

    def launch_kernel(self):
        """fused_step: the whole iteration, and this variant's only kernel."""
        dg, p, i = self.dg, self.plan, self.count % 2
        kernels.load("fused_step")((self.blocks,), (BLOCK,), (
            dg.in_offsets, dg.in_sources, dg.out_degree, self.contribs[i], self.ranks[i], self.ranks[1 - i],
            self.contribs[1 - i], p.medium, _i32(p.medium.size), p.heavy, _i32(p.heavy.shape[0]), p.groups,
            p.part_sums, p.arrivals, self.partials, p.finished, self.scalars, self.state, self.changes,
            _i32(HISTORY), np.float32(self.tol), _i32(self.max_iter), _i32(dg.num_vertices),
            np.float32(self.damping)))

    def run(self):
        self.launch_kernel()
        slot = self.count % HISTORY
        self.count += 1
        return self.changes[slot]

    def ranks_after(self, iterations: int):
        """Where the ranks are after ``iterations`` completed iterations (the buffers alternate)."""
        return self.ranks[iterations % 2]


def make_iteration(dg: DeviceGraph, name, damping: float = DAMPING, personalization=None, *, tol: float = 0.0,
                   max_iter: int = 0):
    """The per-iteration object for a variant name: 'fused' (uniform teleport only), or any other variant."""
    if name == "fused":
        if personalization is not None:
            raise ValueError("the fused kernel teleports uniformly; use another variant for personalised PageRank")
        return FusedIteration(dg, damping, tol=tol, max_iter=max_iter)
    return Iteration(dg, name, damping, personalization, tol=tol, max_iter=max_iter)


def capture(step, iterations: int, stream):
    """Record ``iterations`` calls of ``step.run()`` on ``stream`` as one CUDA graph; an even number keeps the
    fused iteration's alternating buffers where they began, so the graph can be replayed again and again."""
    if iterations % 2:
        raise ValueError("capture an even number of iterations, so that each replay ends where it began")
    step.run(), step.run()                               # compiled and warm before capturing
    stream.wait_event(require_gpu().cuda.get_current_stream().record())   # inputs written before replays read them
    with stream:
        stream.begin_capture()
        for _ in range(iterations):
            step.run()
        return stream.end_capture()


def graph_iteration_ms(dg: DeviceGraph, iterations: int = 20, trials: int = 7, **settings):
    """Timing (ms per iteration) of the fused iteration when ``iterations`` of them are replayed as one CUDA
    graph; ``settings`` go to FusedIteration (medium_max, chunk)."""
    cp = require_gpu()
    stream = cp.cuda.Stream(non_blocking=True)
    graph = capture(FusedIteration(dg, **settings), iterations, stream)
    with stream:
        timing = time_back_to_back(lambda: graph.launch(stream), launches=1, trials=trials)
    return type(timing).of(timing.samples_ms / iterations)


@dataclass(frozen=True)
class GpuPageRankResult:
    ranks: np.ndarray        # float32 ranks, copied back
    iterations: int
    residuals: np.ndarray    # L1 change per iteration
    converged: bool
    variant: str


def pagerank_gpu(graph, name="fused", damping: float = DAMPING, tol: float = 1e-6, max_iter: int = 1000,
                 personalization=None, *, check_every: int = 8) -> GpuPageRankResult:
    """PageRank on the GPU with the given variant; same semantics and stop test as the float64 reference.
    The stop test runs on the GPU; the host reads it every ``check_every`` iterations (the fused variant
    replays that many, rounded up to an even number, as one CUDA graph), and the ranks are those of the
    iteration that met it."""
    cp = require_gpu()
    tol = check_tol(tol)
    if isinstance(max_iter, bool) or int(max_iter) != max_iter or max_iter < 1:
        raise ValueError(f"max_iter must be a whole number of at least 1, got {max_iter!r}")
    if isinstance(check_every, bool) or int(check_every) != check_every or check_every < 1:
        raise ValueError(f"check_every must be a whole number of at least 1, got {check_every!r}")
    max_iter, check_every = int(max_iter), int(check_every)
    dg = graph if isinstance(graph, DeviceGraph) else DeviceGraph(graph, variant=name if isinstance(name, str) else "fused")
    step = make_iteration(dg, name, damping, personalization, tol=tol, max_iter=max_iter)
    if isinstance(step, FusedIteration):
        stream = cp.cuda.Stream(non_blocking=True)
        replayed = check_every + check_every % 2            # a captured graph holds an even number of iterations
        cuda_graph = capture(step, replayed, stream)        # its first two iterations ran while warming up
        for _ in range(max_iter // replayed + 1):           # the GPU stops itself by max_iter at the latest
            if step.stopped_state()[0]:
                break
            cuda_graph.launch(stream)
            stream.synchronize()
    else:
        for i in range(1, max_iter + 1):
            step.run()
            if i % check_every == 0 and step.stopped_state()[0]:
                break
    reason, count = step.stopped_state()
    ranks = (step.ranks_after(count) if isinstance(step, FusedIteration) else step.rank).get()
    if reason != 1:
        warnings.warn(f"{step.variant.name}: no L1 change below {tol:g} within max_iter={max_iter} iterations",
                      NotConvergedWarning, stacklevel=2)
    return GpuPageRankResult(ranks, count, step.residuals(count), reason == 1, step.variant.name)


def kernel_launch(step):
    """The variant's own kernel(s) alone, for timing: the sum over in-links (fused: the fused step)."""
    return step.launch_kernel


# --- correctness ------------------------------------------------------------------------------------

LONG_LIST = 200   # beyond this many in-links a plain float32 sum can stall the iteration above L1 1e-6


def spmv_error(dg: DeviceGraph, name, seed: int = 0) -> float:
    """Largest relative error of one launch of a variant's kernel against float64, from a random vector, with
    the output poisoned (NaN) beforehand so that any element the kernel fails to write shows up."""
    cp = require_gpu()
    v = variant(name)
    graph = _host_graph(dg)
    x = np.random.default_rng(seed).random(graph.num_vertices).astype(np.float32)
    if v.reads == "ranks":
        expected = graph.in_matrix @ np.divide(x.astype(np.float64), graph.out_degree,
                                               out=np.zeros(graph.num_vertices), where=graph.out_degree > 0)
    else:
        expected = graph.in_matrix @ x.astype(np.float64)
    y = cp.full(graph.num_vertices, cp.nan, dtype=cp.float32)
    v(dg, cp.asarray(x), y)
    got = y.get().astype(np.float64)
    if not np.isfinite(got).all():
        bad = int(np.flatnonzero(~np.isfinite(got))[0])
        raise VerificationError(f"{v.name}: vertex {bad} was never written (still NaN) or became {got[bad]}")
    return float(np.max(np.abs(got - expected) / np.maximum(np.abs(expected), 1e-30)))


def step_error(dg: DeviceGraph, name, seed: int = 0) -> float:
    """Largest relative error of ONE whole iteration of a variant (fused included) against the float64 step,
    from random ranks, with every output the iteration writes poisoned (NaN) first."""
    cp = require_gpu()
    graph = _host_graph(dg)
    n = graph.num_vertices
    ranks = np.random.default_rng(seed).random(n) + 0.05
    ranks = (ranks / ranks.sum()).astype(np.float32)
    expected = pagerank_step(graph, ranks.astype(np.float64), DAMPING, teleport_vector(n))
    step = make_iteration(dg, name)
    if isinstance(step, FusedIteration):
        step.ranks[0][...] = cp.asarray(ranks)
        kernels.load("contributions")(_blocks(n), (BLOCK,), (step.ranks[0], dg.out_degree, step.contribs[0], _i32(n)))
        step.scalars[...] = cp.float32(ranks[graph.dangling].astype(np.float64).sum())
        step.ranks[1].fill(cp.nan)
        step.contribs[1].fill(cp.nan)
    else:
        step.rank[...] = cp.asarray(ranks)
        step.pulled.fill(cp.nan)
    step.run()
    got = step.rank.get().astype(np.float64)
    if not np.isfinite(got).all():
        bad = int(np.flatnonzero(~np.isfinite(got))[0])
        raise VerificationError(f"{step.variant.name}: the rank of vertex {bad} is {got[bad]} after one iteration "
                                "(never written, or a division by zero)")
    return float(np.max(np.abs(got - expected) / expected))


def _host_graph(dg: DeviceGraph) -> Graph:
    if dg.graph is None:
        raise ValueError(f"{dg.name} has no host graph to check against; build the DeviceGraph from a Graph")
    return dg.graph


def verification_graphs(seed: int) -> list[Graph]:
    """Fresh graphs with everything that breaks kernels: one vertex, only dangling vertices, self-loops, a long
    in-link list, random graphs whose sizes are not multiples of the block size with dangling and isolated
    vertices and merged duplicates, a hub with 12,000 in-links, and a power-law graph."""
    from . import generators

    rng = np.random.default_rng(seed)
    draw = lambda: int(rng.integers(2**31))                      # noqa: E731
    return [generators.single_vertex(), generators.all_dangling(3), generators.self_loop(), generators.in_star(300),
            generators.random_graph(1_000 + 2 * int(rng.integers(1, 100)) + 1, seed=draw()),
            generators.adversarial_graph(20_001 + 2 * int(rng.integers(0, 50)), seed=draw(), hub_in_links=12_000),
            generators.rmat_graph(60_000 + int(rng.integers(1, 255)), 400_000, seed=draw())]


def verify(name_or_variant, *, seed: int | None = None, graphs=None, quiet: bool = False):
    """Check a variant against the float64 reference on fresh adversarial graphs: one launch of its kernel and
    one whole iteration against float64 (outputs poisoned with NaN first), then a whole run to L1 < 1e-6:
    its distance to the reference, its sum, and one more float64 iteration (the fixed-point check).
    Returns the table of cases; raises VerificationError, with the failing cases, if any is wrong."""
    import pandas as pd

    seed = int(np.random.SeedSequence().entropy % 2**31) if seed is None else int(seed)
    v = name_or_variant if name_or_variant == "fused" else variant(name_or_variant)
    label = v if isinstance(v, str) else v.name
    eps = 2.0**-24 if isinstance(v, str) else v.precision
    coarse = max(1e-4, 16 * eps)           # what float32 reaches on long lists, or 16-bit storage anywhere
    rows = []
    for graph in graphs or verification_graphs(seed):
        if not isinstance(v, str) and v.max_vertices and graph.num_vertices > v.max_vertices:
            continue
        exact = eps <= 2.0**-24 and int(graph.in_degree.max()) <= LONG_LIST
        row = {"graph": graph.name, "vertices": graph.num_vertices, "edges": graph.num_edges,
               "max in-degree": int(graph.in_degree.max())}
        problems = []
        try:
            dg = DeviceGraph(graph, variant=label)
            if label != "fused":
                row["kernel rel. error"] = spmv_error(dg, v, seed=seed)
                if not row["kernel rel. error"] < coarse:
                    problems.append(f"one launch is {row['kernel rel. error']:.2g} (relative) from float64")
            row["step rel. error"] = step_error(dg, v, seed=seed)
            if not row["step rel. error"] < coarse:
                problems.append(f"one iteration is {row['step rel. error']:.2g} (relative) from float64")
            reference = pagerank(graph, tol=1e-10)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", NotConvergedWarning)
                result = pagerank_gpu(dg, v, tol=1e-6, max_iter=300)
            row["iterations"] = result.iterations
            row["converged"] = result.converged        # False: stopped at the 300-iteration cap (a long list
            row["L1 to reference"] = l1_distance(result.ranks, reference.ranks)   # in float32), judged by the
                                                                                   # coarse bounds below
            row["sum"] = float(result.ranks.astype(np.float64).sum())
            bound, residual_bound = (2e-5, 5e-6) if exact else (coarse, coarse)
            # a float32 sum over a 12,000-in-link list drifts the rank total by up to ~2e-5: long lists (and
            # 16-bit storage) get the coarse bound for the sum too; exact cases keep 1e-5
            check = verify_fixed_point(graph, result.ranks, tol=residual_bound, sum_tol=1e-5 if exact else coarse)
            row["one more float64 iteration moves"] = check.residual
            if exact and not result.converged:
                problems.append(f"no L1 change below 1e-6 in 300 iterations (last {result.residuals[-1]:.2g})")
            if not row["L1 to reference"] < bound:
                problems.append(f"L1 distance {row['L1 to reference']:.2g} to the reference (bound {bound:g})")
            if not check.ok:
                problems.append(check.message)
        except VerificationError as error:
            problems.append(str(error))
        row["ok"] = not problems
        row["problem"] = "; ".join(problems)
        rows.append(row)
    table = pd.DataFrame(rows)
    table.attrs.update(note=f"{label} against the float64 reference, seed {seed} (pass seed={seed} to repeat)")
    bad = table[~table["ok"]]
    if len(bad):
        lines = "\n".join(f"  {r['graph']}: {r['problem']}" for _, r in bad.iterrows())
        raise VerificationError(f"{label} is wrong on {len(bad)} of {len(table)} graphs (seed {seed}):\n{lines}")
    if not quiet:
        print(f"{label}: right on all {len(table)} graphs (seed {seed}): one launch and one iteration against "
              f"float64 (outputs poisoned with NaN), whole runs against the reference and the fixed-point check")
    return table


# --- measuring --------------------------------------------------------------------------------------

def graph_label(graph) -> str:
    """The graph's name, with its sizes unless the name already says them."""
    sizes = f"{graph.num_vertices:,} vertices, {graph.num_edges:,} edges"
    return graph.name if f"{graph.num_vertices:,} vertices" in graph.name else f"{graph.name} ({sizes})"


def float64_reference(dg: DeviceGraph, tol: float = 1e-10, max_iter: int = 1000) -> np.ndarray:
    """The float64 reference ranks: on the CPU from the host graph if there is one, else the same power
    iteration in float64 on the GPU (for graphs built on the GPU, too big to iterate on the CPU)."""
    if dg.graph is not None:
        return pagerank(dg.graph, tol=tol, max_iter=max_iter).ranks
    cp = require_gpu()
    import cupyx.scipy.sparse as sparse

    n = dg.num_vertices
    ensure_fits(8 * dg.num_edges + 40 * n, f"the float64 reference for {dg.name}")
    matrix = sparse.csr_matrix((cp.ones(dg.num_edges, dtype=cp.float64), dg.in_sources, dg.in_offsets), shape=(n, n))
    degree, dangling = dg.out_degree.astype(cp.float64), dg.out_degree == 0
    rank = cp.full(n, 1.0 / n)
    for _ in range(max_iter):
        contrib = cp.where(dangling, 0.0, rank / cp.maximum(degree, 1.0))
        new = DAMPING * (matrix @ contrib) + (DAMPING * rank[dangling].sum() + 1 - DAMPING) / n
        change = float(cp.abs(new - rank).sum())
        rank = new
        if change < tol:
            break
    return rank.get()


def compare(graph, names, *, tol: float = 1e-6, launches: int = 20, trials: int = 7, reference=None,
            floor=None, graph_replay: bool = True):
    """Time and check each variant on one graph; returns a pandas DataFrame, one row per variant:
    ``launch`` (one launch between two CUDA events, as a caller sees it, host launch cost included),
    ``kernel`` (the kernel alone, launched back to back: the GPU's time, unless the kernel is shorter than the
    host takes to issue it) and ``iteration`` (a whole iteration, back to back: for short kernels bounded by
    how fast Python issues its launches; the CUDA-graph row of ``fused`` has no such bound), each as median
    and range over ``trials`` trials; iterations to the L1 stop
    test; distance to the float64 reference; effective GB/s by the byte model (the DRAM lower bound) and the
    iteration time as a multiple of ``floor`` (a Timing of the random-gather floor, if given). ``fused``
    also gets a row for its CUDA-graph replay. The table's attrs say which GPU, graph and stop test."""
    import pandas as pd

    from .gpu import device_facts

    dg = graph if isinstance(graph, DeviceGraph) else DeviceGraph(graph)
    reference = reference if reference is not None else float64_reference(dg)
    if hasattr(reference, "ranks"):
        reference = reference.ranks
    rows = []
    for name in names:
        step = make_iteration(dg, name)
        one = time_gpu(kernel_launch(step), repeat=launches)
        kernel = time_back_to_back(kernel_launch(step), launches=launches, trials=trials)
        iteration = time_back_to_back(step.run, launches=launches, trials=trials)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", NotConvergedWarning)
            result = pagerank_gpu(dg, name, tol=tol)
        label = step.variant.name
        timings = [(label, iteration)]
        if label == "fused" and graph_replay:
            timings.append(("fused, CUDA graph", graph_iteration_ms(dg, trials=trials)))
        for row_name, whole in timings:
            replay = row_name != label           # the graph row times whole iterations only
            nan = float("nan")
            row = {"variant": row_name, "launch_ms": nan if replay else one.median_ms,
                   "launch_lo": nan if replay else one.min_ms, "launch_hi": nan if replay else one.max_ms,
                   "kernel_ms": nan if replay else kernel.median_ms, "kernel_lo": nan if replay else kernel.min_ms,
                   "kernel_hi": nan if replay else kernel.max_ms,
                   "iteration_ms": whole.median_ms, "iteration_lo": whole.min_ms, "iteration_hi": whole.max_ms,
                   "iterations": result.iterations, "converged": result.converged,
                   "max_abs_diff": max_abs_diff(result.ranks, reference),
                   "l1_distance": l1_distance(result.ranks, reference),
                   "model_GBps": bytes_per_iteration(dg) / (whole.median_ms * 1e-3) / 1e9}
            if floor is not None:
                row["x_gather_floor"] = whole.median_ms / floor.median_ms
            rows.append(row)
    table = pd.DataFrame(rows)
    table.attrs.update(
        gpu=device_facts().name, graph=graph_label(dg),
        stop=f"L1 change < {tol:g} (float32 on the GPU) against the float64 reference (L1 < 1e-10)",
        timing=f"CUDA events; median and range of {trials} trials of {launches} back-to-back launches "
               f"('launch': {launches} single launches); model_GBps counts {BYTES_MODEL} per iteration",
        floor=None if floor is None else f"random-gather floor {floor} (x_gather_floor = iteration / floor)",
        derived={"model_GBps": "iteration", "x_gather_floor": ["iteration"] + ([] if floor is None else [floor])})
    return table
