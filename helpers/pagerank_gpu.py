"""One PageRank driver for every kernel the course teaches, so that lectures compare kernels, not loops.

Each iteration: (contributions, if the kernel reads them) -> the kernel's sum over in-links ("pulled")
-> new rank = d * pulled + (d * dangling mass + 1 - d) / n -> L1 change. Only the middle step differs
between variants; ranks are float32 on the GPU and are checked against the float64 reference.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import Callable

import numpy as np

from . import kernels
from .gpu import require_gpu, time_gpu
from .graph import Graph
from .reference import DAMPING, check_damping, check_tol, l1_distance, max_abs_diff, pagerank, teleport_vector

BLOCK = 256
BYTES_MODEL = "4E + 20N bytes per iteration"   # the effective-bandwidth model every table states


class GraphTooLargeError(MemoryError):
    """The graph's arrays do not fit in the GPU's free memory."""


def device_bytes(num_vertices: int, num_edges: int) -> int:
    """GPU memory a DeviceGraph and one iteration's buffers take: both CSRs, degrees, six float vectors."""
    return 4 * (3 * num_edges + 4 * num_vertices) + 6 * 4 * num_vertices


def bytes_per_iteration(graph) -> int:
    return 4 * graph.num_edges + 20 * graph.num_vertices


class DeviceGraph:
    """A Graph's arrays on the GPU (int32), plus the derived layouts some kernels need, built on demand."""

    def __init__(self, graph: Graph):
        cp = require_gpu()
        if graph.in_offsets.dtype != np.int32:
            raise GraphTooLargeError(f"{graph.name}: {graph.num_edges:,} edges need int64 offsets; "
                                     "the course's kernels index edges with int32")
        need = device_bytes(graph.num_vertices, graph.num_edges)
        free = cp.cuda.Device().mem_info[0]
        if need > 0.9 * free:
            raise GraphTooLargeError(f"{graph.name} needs about {need / 2**30:.1f} GiB on the GPU, "
                                     f"which has {free / 2**30:.1f} GiB free")
        self.graph = graph
        self.name = graph.name
        self.num_vertices, self.num_edges = graph.num_vertices, graph.num_edges
        self.in_offsets = cp.asarray(graph.in_offsets)
        self.in_sources = cp.asarray(graph.in_sources)
        self.out_offsets = cp.asarray(graph.out_offsets)
        self.out_targets = cp.asarray(graph.out_targets)
        self.out_degree = cp.asarray(graph.out_degree)
        self.dangling = cp.asarray(graph.dangling.astype(np.float32))

    @cached_property
    def in_edges(self):
        """Interleaved (source, out_degree[source]) pairs, one per in-link, in in-CSR order."""
        cp = require_gpu()
        return cp.ascontiguousarray(cp.stack([self.in_sources, self.out_degree[self.in_sources]], axis=1))

    @cached_property
    def in_targets(self):
        """The target of every in-link, in in-CSR order: with in_sources, the edge list (COO)."""
        cp = require_gpu()
        return cp.asarray(np.repeat(np.arange(self.num_vertices, dtype=np.int32), self.graph.in_degree))

    def bins(self, thread_max: int = 32, warp_max: int = 1024):
        """Vertex lists by in-degree: light (< thread_max), medium (< warp_max), heavy (the rest)."""
        cp = require_gpu()
        degree = cp.diff(self.in_offsets)
        return tuple(cp.flatnonzero(mask).astype(cp.int32) for mask in
                     (degree < thread_max, (degree >= thread_max) & (degree < warp_max), degree >= warp_max))

    @cached_property
    def degree_bins(self):
        """The bins the degree-binned variant uses (thread below 32 in-links, warp below 1024, block above)."""
        return self.bins()

    @cached_property
    def half_contrib(self):
        """A 16-bit buffer for contributions stored in float16 or bfloat16 (lecture 40)."""
        cp = require_gpu()
        return cp.empty(self.num_vertices, dtype=cp.uint16)

    @cached_property
    def in_matrix(self):
        """cuSPARSE's view: the in-link matrix as cupyx.scipy.sparse CSR (float32 ones)."""
        cp = require_gpu()
        import cupyx.scipy.sparse as sparse

        ones = cp.ones(self.num_edges, dtype=cp.float32)
        return sparse.csr_matrix((ones, self.in_sources, self.in_offsets),
                                 shape=(self.num_vertices, self.num_vertices))


def _i32(value: int):
    return np.int32(value)


def _blocks(threads: int) -> tuple[int]:
    return (max(1, (threads + BLOCK - 1) // BLOCK),)


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


def _pull_binned(dg, x, y):
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


@dataclass(frozen=True)
class Variant:
    name: str
    reads: str                   # "ranks" (divides by the out-degree itself) or "contributions"
    spmv: Callable = field(repr=False)
    kernels: tuple[str, ...]     # the .cu kernels it launches (none for CuPy-only variants)
    deterministic: bool = True   # atomics make the rounding depend on the order of additions
    max_vertices: int | None = None


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
    Variant("pull_binned", "contributions", _pull_binned,
            ("pull_bin_thread", "pull_bin_warp", "pull_bin_block")),
    Variant("coo_atomic", "contributions", _coo_atomic, ("coo_atomic",), deterministic=False),
    Variant("coo_segmented_scan", "contributions", _coo_segmented_scan, ()),
    # cuSPARSE's SpMV changed its last bits between two runs on an H100: not deterministic
    Variant("cusparse", "contributions", _cusparse, (), deterministic=False),
]}


HALF_FORMATS = {"float16": 0, "bfloat16": 1}


def half_variant(storage: str, scale_by_n: bool = True) -> Variant:
    """Contributions stored in 16 bits, added in float32 (lecture 40). float16 is scaled by N first:
    PageRank contributions, near 1/N, lie below float16's normal range; bfloat16 has float32's range."""
    fmt = HALF_FORMATS[storage]
    scaled = fmt == 0 and scale_by_n

    def spmv(dg, x, y):
        n = dg.num_vertices
        scale = float(n) if scaled else 1.0
        kernels.load("to_half")(_blocks(n), (BLOCK,), (x, dg.half_contrib, _i32(n), np.float32(scale), _i32(fmt)))
        kernels.load("pull_half")(_blocks(n), (BLOCK,), (dg.in_offsets, dg.in_sources, dg.half_contrib, y, _i32(n),
                                                         np.float32(1.0 / scale), _i32(fmt)))

    name = f"pull_{storage}" + ("_scaled" if scaled else "")
    return Variant(name, "contributions", spmv, ("to_half", "pull_half"))


def variants_for(num_vertices: int) -> list[str]:
    """Every variant that may run on a graph of this size (the O(N^2) scan only on small ones), then 'fused'."""
    return [name for name, v in VARIANTS.items() if not v.max_vertices or num_vertices <= v.max_vertices] + ["fused"]


def variant(name_or_variant) -> Variant:
    if isinstance(name_or_variant, Variant):
        return name_or_variant
    try:
        return VARIANTS[name_or_variant]
    except KeyError:
        raise KeyError(f"unknown variant {name_or_variant!r}; known: {', '.join(VARIANTS)}") from None


# --- the shared iteration ---------------------------------------------------------------------------

@lru_cache(maxsize=None)
def _elementwise():
    cp = require_gpu()
    update = cp.ElementwiseKernel("float32 pulled, float32 dangling_mass, float32 d, int32 n", "float32 out",
                                  "out = d * pulled + (d * dangling_mass + (1.0f - d)) / n", "pagerank_update")
    masked = cp.ElementwiseKernel("float32 a, float32 mask", "float32 out", "out = a * mask", "pagerank_masked")
    absdiff = cp.ElementwiseKernel("float32 a, float32 b", "float32 out", "out = fabsf(a - b)", "pagerank_absdiff")
    personal = cp.ElementwiseKernel("float32 pulled, float32 dangling_mass, float32 d, float32 teleport", "float32 out",
                                    "out = d * pulled + (d * dangling_mass + (1.0f - d)) * teleport",
                                    "pagerank_update_personalised")
    return update, masked, absdiff, personal


class Iteration:
    """Buffers and launches of one PageRank iteration for a variant; ``run()`` returns the L1 change
    as a 0-d device array (no host synchronisation), leaving the new ranks in ``rank``."""

    def __init__(self, dg: DeviceGraph, name, damping: float = DAMPING, personalization=None):
        cp = require_gpu()
        self.dg, self.variant, self.damping = dg, variant(name), check_damping(damping)
        # teleport and dangling rank go to the personalisation vector (normalised, checked) if one is given
        self.teleport = None if personalization is None else cp.asarray(
            teleport_vector(dg.num_vertices, personalization), dtype=cp.float32)
        if self.variant.max_vertices and dg.num_vertices > self.variant.max_vertices:
            raise ValueError(f"{self.variant.name} is O(N^2): use it on graphs of at most "
                             f"{self.variant.max_vertices:,} vertices, not {dg.num_vertices:,}")
        n = dg.num_vertices
        self.rank = cp.full(n, 1.0 / n, dtype=cp.float32)
        self.new = cp.empty_like(self.rank)
        self.contrib = cp.empty_like(self.rank)
        self.pulled = cp.empty_like(self.rank)
        self.scratch = cp.empty_like(self.rank)
        self.d = cp.float32(self.damping)

    def run(self):
        # Full-array sums go through cupy.sum, which uses CUB; a custom ReductionKernel reducing a whole
        # array to one value was measured at several times the cost of the SpMV itself.
        update, masked, absdiff, personal = _elementwise()
        dg, n = self.dg, self.dg.num_vertices
        x = self.rank
        if self.variant.reads == "contributions":
            kernels.load("contributions")(_blocks(n), (BLOCK,), (self.rank, dg.out_degree, self.contrib, _i32(n)))
            x = self.contrib
        self.variant.spmv(dg, x, self.pulled)
        dangling_mass = masked(self.rank, dg.dangling, self.scratch).sum()   # stays on the GPU: a 0-d array
        if self.teleport is None:
            update(self.pulled, dangling_mass, self.d, np.int32(n), self.new)
        else:
            personal(self.pulled, dangling_mass, self.d, self.teleport, self.new)
        change = absdiff(self.new, self.rank, self.scratch).sum()
        self.rank, self.new = self.new, self.rank
        return change


class FusedIteration:
    """The whole iteration in two launches: fused_step (sum, update, next contributions, per-block dangling
    mass and L1 change) and fused_finalize (one block adds the partials). Nothing is computed on the host,
    so a run of iterations can be captured as a CUDA graph. Same interface as Iteration."""

    def __init__(self, dg: DeviceGraph, damping: float = DAMPING, threshold: int = 32, history: int = 4096):
        cp = require_gpu()
        self.dg, self.damping, self.threshold = dg, check_damping(damping), threshold
        self.variant = Variant("fused", "contributions", None, ("fused_step", "fused_finalize"))
        n = dg.num_vertices
        self.blocks = max(1, (n + BLOCK - 1) // BLOCK)
        self.ranks = [cp.full(n, 1.0 / n, dtype=cp.float32), cp.empty(n, dtype=cp.float32)]
        self.contribs = [cp.empty(n, dtype=cp.float32), cp.empty(n, dtype=cp.float32)]
        kernels.load("contributions")(_blocks(n), (BLOCK,), (self.ranks[0], dg.out_degree, self.contribs[0], _i32(n)))
        self.partials = cp.empty(2 * self.blocks, dtype=cp.float32)
        self.scalars = cp.asarray([float(dg.graph.dangling.sum()) / n], dtype=cp.float32)
        self.changes = cp.full(history, cp.nan, dtype=cp.float32)
        self.count = 0

    @property
    def rank(self):
        return self.ranks[self.count % 2]

    def launch_step(self):
        """fused_step alone: the 'kernel' of this variant."""
        dg, i = self.dg, self.count % 2
        kernels.load("fused_step")((self.blocks,), (BLOCK,), (
            dg.in_offsets, dg.in_sources, dg.out_degree, self.contribs[i], self.ranks[i], self.scalars,
            self.ranks[1 - i], self.contribs[1 - i], self.partials, _i32(dg.num_vertices),
            np.float32(self.damping), _i32(self.threshold)))

    def run(self):
        slot = self.count % self.changes.size
        self.launch_step()
        kernels.load("fused_finalize")((1,), (1024,), (self.partials, _i32(self.blocks), self.scalars,
                                                       self.changes, _i32(slot)))
        self.count += 1
        return self.changes[slot]


def make_iteration(dg: DeviceGraph, name, damping: float = DAMPING, personalization=None):
    """The per-iteration object for a variant name: 'fused' (uniform teleport only), or any name in VARIANTS."""
    if name == "fused":
        if personalization is not None:
            raise ValueError("the fused kernel teleports uniformly; use another variant for personalised PageRank")
        return FusedIteration(dg, damping)
    return Iteration(dg, name, damping, personalization)


def capture(step: FusedIteration, iterations: int, stream):
    """Record ``iterations`` fused iterations (an even number keeps the buffers in place) as a CUDA graph."""
    if iterations % 2:
        raise ValueError("capture an even number of iterations, so that each replay ends where it began")
    kernels.load("fused_step"), kernels.load("fused_finalize")      # compiled before capturing
    with stream:
        stream.begin_capture()
        for _ in range(iterations):
            step.run()
        return stream.end_capture()


def graph_iteration_ms(dg: DeviceGraph, iterations: int = 20, repeat: int = 10) -> float:
    """Milliseconds per fused iteration when ``iterations`` of them are replayed as one captured CUDA graph."""
    cp = require_gpu()
    stream = cp.cuda.Stream(non_blocking=True)
    graph = capture(FusedIteration(dg), iterations, stream)
    with stream:
        timing = time_gpu(lambda: graph.launch(stream), repeat=repeat)
    return timing.median_ms / iterations


@dataclass(frozen=True)
class GpuPageRankResult:
    ranks: np.ndarray        # float32 ranks, copied back
    iterations: int
    residuals: np.ndarray    # L1 change per iteration
    converged: bool
    variant: str


def pagerank_gpu(graph, name="pull_contrib", damping: float = DAMPING, tol: float = 1e-6,
                 max_iter: int = 1000, personalization=None) -> GpuPageRankResult:
    """PageRank on the GPU with the given variant's kernel; same semantics and stop test as the reference."""
    tol = check_tol(tol)
    dg = graph if isinstance(graph, DeviceGraph) else DeviceGraph(graph)
    step = make_iteration(dg, name, damping, personalization)
    residuals = []
    for _ in range(max_iter):
        residuals.append(float(step.run()))     # one synchronisation per iteration (lecture 20 removes it)
        if residuals[-1] < tol:
            break
    return GpuPageRankResult(step.rank.get(), len(residuals), np.array(residuals), residuals[-1] < tol,
                             step.variant.name)


def kernel_launch(step):
    """The variant's own kernel(s) alone, for timing: the sum over in-links (fused: the fused step)."""
    if isinstance(step, FusedIteration):
        return step.launch_step
    x = step.contrib if step.variant.reads == "contributions" else step.rank
    return lambda: step.variant.spmv(step.dg, x, step.pulled)


def spmv_error(dg: DeviceGraph, name, seed: int = 0) -> float:
    """Largest relative error of one kernel launch against float64, from a random vector, with the output
    poisoned (NaN) beforehand so that any element the kernel fails to write shows up."""
    cp = require_gpu()
    v = variant(name)
    graph = dg.graph
    x = np.random.default_rng(seed).random(graph.num_vertices).astype(np.float32)
    if v.reads == "ranks":
        expected = graph.in_matrix @ np.divide(x.astype(np.float64), graph.out_degree,
                                               out=np.zeros(graph.num_vertices), where=graph.out_degree > 0)
    else:
        expected = graph.in_matrix @ x.astype(np.float64)
    y = cp.full(graph.num_vertices, cp.nan, dtype=cp.float32)
    v.spmv(dg, cp.asarray(x), y)
    got = y.get().astype(np.float64)
    if not np.isfinite(got).all():
        bad = int(np.flatnonzero(~np.isfinite(got))[0])
        raise AssertionError(f"{v.name}: vertex {bad} was never written (still NaN)")
    return float(np.max(np.abs(got - expected) / np.maximum(np.abs(expected), 1e-30)))


@dataclass(frozen=True)
class Row:
    variant: str
    spmv_ms: float
    iteration_ms: float
    gbs: float
    percent_of_copy: float
    iterations: int
    max_abs_diff: float
    l1_distance: float


def compare(graph: Graph, names, *, tol: float = 1e-6, copy_gbs: float | None = None,
            repeat: int = 20, reference=None) -> list[Row]:
    """Verify and time each variant on one graph: kernel alone and whole iteration (CUDA events, median
    after warm-up), effective bandwidth by the stated byte model, distance to the float64 reference."""
    from .gpu import measure_copy_bandwidth

    dg = graph if isinstance(graph, DeviceGraph) else DeviceGraph(graph)
    reference = reference if reference is not None else pagerank(dg.graph, tol=1e-10)
    copy_gbs = copy_gbs or measure_copy_bandwidth()
    rows = []
    for name in names:
        step = make_iteration(dg, name)
        spmv = time_gpu(kernel_launch(step), repeat=repeat)
        iteration = time_gpu(step.run, repeat=repeat)
        result = pagerank_gpu(dg, name, tol=tol)
        gbs = bytes_per_iteration(dg.graph) / (iteration.median_ms * 1e-3) / 1e9
        rows.append(Row(step.variant.name, spmv.median_ms, iteration.median_ms, gbs, 100 * gbs / copy_gbs,
                        result.iterations, max_abs_diff(result.ranks, reference.ranks),
                        l1_distance(result.ranks, reference.ranks)))
    return rows


def format_table(rows: list[Row], graph, gpu_name: str, tol: float = 1e-6, copy_gbs: float | None = None) -> str:
    lines = [f"GPU: {gpu_name}" + (f"; measured copy bandwidth {copy_gbs:.0f} GB/s" if copy_gbs else ""),
             f"graph: {graph.name} ({graph.num_vertices:,} vertices, {graph.num_edges:,} edges)",
             f"stop: L1 change < {tol:g}; ranks float32 on the GPU, compared with the float64 reference "
             f"(L1 < 1e-10); GB/s by the model {BYTES_MODEL}",
             f"{'variant':<20} {'kernel ms':>9} {'iter ms':>8} {'GB/s':>7} {'% copy':>7} {'iters':>6} "
             f"{'max |Δ|':>9} {'L1 dist':>9}"]
    for r in rows:
        lines.append(f"{r.variant:<20} {r.spmv_ms:>9.3f} {r.iteration_ms:>8.3f} {r.gbs:>7.0f} "
                     f"{r.percent_of_copy:>6.0f}% {r.iterations:>6} {r.max_abs_diff:>9.1e} {r.l1_distance:>9.1e}")
    return "\n".join(lines)
