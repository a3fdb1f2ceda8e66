"""One PageRank iteration per variant (float32 ranks on the GPU), the stop test on the GPU, and timing
iterations, CUDA-graph replays among them."""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from helpers import kernels
from helpers.core.reference import DAMPING, ConvergenceWarning, check_damping, teleport_vector
from helpers.driver.device import BLOCK, HISTORY, UNFUSED_VERTEX, DeviceGraph, as_device_graph, blocks_for
from helpers.driver.variants import Variant, i32, pull_segments, register, segment_size, variant
from helpers.measure import gpu
from helpers.measure.gpu import device_facts, ensure_fits, require_gpu

NotConvergedWarning = ConvergenceWarning   # the reference's warning: stopped at max_iter before the test held
LIGHT_MAX = 32      # as in the whole-iteration kernels: rows with at most this many in-links get a thread
REPLAYED = 20       # iterations a CUDA graph records for timing (``replayed``)


@lru_cache(maxsize=None)
def _elementwise():
    cp = require_gpu()
    update = cp.ElementwiseKernel(
        "float32 pulled, float32 dangling_mass, float32 d, float32 teleport, int32 stopped, float32 rank",
        "float32 out", "out = stopped ? rank : d * pulled + (d * dangling_mass + (1.0f - d)) * teleport",
        "pagerank_update")
    return update, cp.ElementwiseKernel("float32 a, float32 b", "float32 out", "out = fabsf(a - b)",
                                        "pagerank_absdiff")


def _contributions(dg: DeviceGraph, rank, out) -> None:
    """Launch ``contributions``: out = rank / out-degree (0 for a dangling vertex)."""
    n = dg.num_vertices
    kernels.compiled("contributions")(blocks_for(n), (BLOCK,), (rank, dg.out_degree, out, i32(n)))


class Stopping:
    """The stop test's state on the GPU: state[0] (0 running, 1 met tol, 2 reached max_iter), state[1] (the
    iterations run), and the ring of the last HISTORY L1 changes. tol = 0: never stops (for timing)."""

    def init_stopping(self, tol: float, max_iter: int):
        """The stop test's buffers; then every buffer is ready for any stream that launches next."""
        cp = require_gpu()
        self.tol, self.max_iter = float(tol), int(max_iter)
        self.state = cp.zeros(2, dtype=cp.int32)
        self.changes = cp.full(HISTORY, cp.nan, dtype=cp.float32)
        cp.cuda.get_current_stream().synchronize()

    def stopped_state(self) -> tuple[int, int]:
        """(reason, iterations) read from the GPU: one synchronisation."""
        return tuple(int(v) for v in self.state.get())

    def residuals(self, count: int) -> np.ndarray:
        ring = self.changes.get().astype(np.float64)
        return ring[:count] if count <= HISTORY else np.roll(ring, -(count % HISTORY))    # oldest first


class Iteration(Stopping):
    """Buffers and launches of one unfused iteration; ``run()`` enqueues it (no host synchronisation), leaving
    the new ranks in ``rank``; once the stop test (on the GPU) is met, the ranks stay as they are."""

    def __init__(self, dg: DeviceGraph, name, damping: float = DAMPING, personalization=None, *,
                 tol: float = 0.0, max_iter: int = 0):
        cp = require_gpu()
        self.dg, self.variant, self.damping = dg, variant(name), check_damping(damping)
        if self.variant.max_vertices and dg.num_vertices > self.variant.max_vertices:
            raise ValueError(f"{self.variant.name} is O(N^2): use it on graphs of at most "
                             f"{self.variant.max_vertices:,} vertices, not {dg.num_vertices:,}")
        n = dg.num_vertices
        ensure_fits(UNFUSED_VERTEX * n, f"the iteration vectors for {dg.name}")
        # teleport and dangling rank go to the personalisation vector (normalised, checked) if one is given
        self.teleport = cp.asarray(teleport_vector(n, personalization), dtype=cp.float32)
        self.rank = cp.full(n, 1.0 / n, dtype=cp.float32)
        self.new, self.contrib = cp.empty_like(self.rank), cp.empty_like(self.rank)
        self.pulled, self.scratch = cp.empty_like(self.rank), cp.empty_like(self.rank)
        self.d = cp.float32(self.damping)
        self.init_stopping(tol, max_iter)

    def set_ranks(self, ranks) -> None:
        """Start from ``ranks`` (float32, on the GPU), every output the next iteration writes poisoned."""
        self.rank[...] = ranks
        self.pulled.fill(float("nan"))

    def launch_kernel(self):
        """The variant's own kernel(s) alone: the sum over in-links."""
        x = self.contrib if self.variant.reads == "contributions" else self.rank
        self.variant.spmv(self.dg, x, self.pulled)

    def run(self):
        # Sums of whole vectors go through cupy.sum (CUB); nothing here waits for the GPU.
        cp = require_gpu()
        update, absdiff = _elementwise()
        if self.variant.reads == "contributions":
            _contributions(self.dg, self.rank, self.contrib)
        self.launch_kernel()
        dangling_mass = cp.multiply(self.rank, self.dg.dangling, out=self.scratch).sum()   # 0-d, on the GPU
        update(self.pulled, dangling_mass, self.d, self.teleport, self.state[0], self.rank, self.new)
        change = absdiff(self.new, self.rank, self.scratch).sum()
        kernels.compiled("stop_test")((1,), (1,), (change, self.state, self.changes, i32(HISTORY),
                                                   np.float32(self.tol), i32(self.max_iter)))
        self.rank, self.new = self.new, self.rank
        return change


def resident_blocks(kernel, threads: int = BLOCK) -> int:
    """How many blocks of ``threads`` threads of this kernel the whole GPU holds at once (one wave)."""
    cp = require_gpu()
    try:
        per_sm = cp.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(kernel.ptr, threads, 0)
    except Exception:             # an older CuPy without the occupancy query: assume full thread occupancy
        per_sm = cp.cuda.Device().attributes["MaxThreadsPerMultiProcessor"] // threads
    return device_facts().multiprocessors * max(int(per_sm), 1)


@dataclass(frozen=True)
class WorkPlan:
    """One pass's work over rows given by ``offsets``: light rows a thread each, medium ones a warp each,
    heavy ones as tasks (row, first in-link, end, group) of at most ``chunk`` in-links, a block each."""
    medium: object
    heavy: object
    groups: object       # per split heavy row: (first task, number of tasks)
    part_sums: object
    arrivals: object
    items: int

    @classmethod
    def build(cls, offsets, num_rows: int, medium_max: int = 1024, chunk: int = 16384) -> "WorkPlan":
        cp = require_gpu()
        if medium_max < LIGHT_MAX or chunk < 1:
            raise ValueError(f"need medium_max >= {LIGHT_MAX} and chunk >= 1, got {medium_max}, {chunk}")
        degree = cp.diff(offsets)
        medium = cp.flatnonzero((degree > LIGHT_MAX) & (degree <= medium_max)).astype(cp.int32)
        heavy_rows = cp.flatnonzero(degree > medium_max)
        begins = offsets[heavy_rows].get().astype(np.int64)
        counts = degree[heavy_rows].get().astype(np.int64)
        heavy_rows = heavy_rows.get()
        tasks, groups = [], []
        longest_first = np.argsort(-counts, kind="stable")
        for row, begin, count in zip(*(a[longest_first] for a in (heavy_rows, begins, counts))):
            parts, end = -(-int(count) // chunk), int(begin + count)
            group = len(groups) if parts > 1 else -1
            if parts > 1:
                groups.append((len(tasks), parts))
            tasks += [(int(row), int(begin + p * chunk), min(int(begin + (p + 1) * chunk), end), group)
                      for p in range(parts)]
        items = len(tasks) + -(-int(medium.size) // (BLOCK // 32)) + -(-num_rows // BLOCK)
        return cls(medium, cp.asarray(np.array(tasks, dtype=np.int32).reshape(-1, 4)),
                   cp.asarray(np.array(groups, dtype=np.int32).reshape(-1, 2)),
                   cp.zeros(max(len(tasks), 1), dtype=cp.float32),
                   cp.zeros(max(len(groups), 1), dtype=cp.int32), items)

    def counts(self) -> dict:
        return {"medium rows (a warp each)": int(self.medium.size),
                "heavy tasks (a block each)": int(self.heavy.shape[0]),
                "heavy rows split over several blocks": int(self.groups.shape[0]), "work items": self.items}

    def args(self):
        """The plan's part of a pass kernel's arguments."""
        return (self.medium, i32(self.medium.size), self.heavy, i32(self.heavy.shape[0]), self.groups,
                self.part_sums, self.arrivals)


class FusedIteration(Stopping):
    """The whole iteration in ONE launch, balanced by in-degree; its last block adds up the dangling mass and
    L1 change and runs the stop test, so iterations can be captured as a CUDA graph."""

    def __init__(self, dg: DeviceGraph, name="fused", damping: float = DAMPING, personalization=None, *,
                 tol: float = 0.0, max_iter: int = 0, medium_max: int = 1024, chunk: int = 16384):
        cp = require_gpu()
        self._begin(dg, name, "fused", damping, personalization)
        self.plan = WorkPlan.build(dg.in_offsets, dg.num_vertices, medium_max, chunk)
        n = dg.num_vertices
        self.blocks = min(self.plan.items, resident_blocks(kernels.compiled("fused")))
        ensure_fits(16 * n + 8 * self.blocks, f"the fused iteration's vectors for {dg.name}")
        self.ranks = [cp.full(n, 1.0 / n, dtype=cp.float32), cp.empty(n, dtype=cp.float32)]
        self.contribs = [cp.empty(n, dtype=cp.float32), cp.empty(n, dtype=cp.float32)]
        _contributions(dg, self.ranks[0], self.contribs[0])
        self._end(tol, max_iter)

    def _begin(self, dg, name, kind: str, damping, personalization):
        if personalization is not None:
            raise ValueError(f"{getattr(name, 'name', name)} teleports uniformly; use an unfused variant "
                             "for personalised PageRank")
        self.dg, self.damping, self.variant = dg, check_damping(damping), variant(kind)

    def _end(self, tol, max_iter):
        """The blocks' partial sums, their arrival counter, the start's dangling mass and the stop test."""
        cp, n = require_gpu(), self.dg.num_vertices
        self.partials = cp.zeros(2 * self.blocks, dtype=cp.float32)
        self.finished = cp.zeros(1, dtype=cp.int32)
        self.scalars = (self.dg.dangling.sum() / n).astype(cp.float32).reshape(1)
        self.count = 0
        self.init_stopping(tol, max_iter)

    def _last_args(self):
        """The kernel arguments after the pass's own: the blocks' sums, the stop test, n and d."""
        return (self.partials, self.finished, self.scalars, self.state, self.changes, i32(HISTORY),
                np.float32(self.tol), i32(self.max_iter), i32(self.dg.num_vertices), np.float32(self.damping))

    @property
    def rank(self):
        return self.ranks_after(self.count)

    def set_ranks(self, ranks) -> None:
        """Start from ``ranks`` (float32, on the GPU), every output the next iteration writes poisoned."""
        i = self.count % 2
        self.ranks[i][...] = ranks
        _contributions(self.dg, self.ranks[i], self.contribs[i])
        self.scalars[...] = (self.ranks[i] * self.dg.dangling).sum(dtype=np.float64).astype(np.float32)
        self.ranks[1 - i].fill(float("nan"))
        self.contribs[1 - i].fill(float("nan"))

    def launch_kernel(self):
        """The fused kernel: the whole iteration, and this variant's only kernel."""
        dg, i = self.dg, self.count % 2
        kernels.compiled("fused")((self.blocks,), (BLOCK,), (
            dg.in_offsets, dg.in_sources, dg.out_degree, self.contribs[i], self.ranks[i], self.ranks[1 - i],
            self.contribs[1 - i], *self.plan.args(), *self._last_args()))

    def run(self):
        self.launch_kernel()
        slot = self.count % HISTORY
        self.count += 1
        return self.changes[slot]

    def ranks_after(self, iterations: int):
        """Where the ranks are after ``iterations`` completed iterations (the buffers alternate)."""
        return self.ranks[iterations % 2]


class BlockedIteration(FusedIteration):
    """The blocked iteration (lecture 22): ``acc`` zeroed, one ``pull_segmented`` pass per source segment of
    half this GPU's L2, then ``blocked_update`` over every vertex; its state is x = rank / out-degree."""

    def __init__(self, dg: DeviceGraph, name="blocked", damping: float = DAMPING, personalization=None, *,
                 tol: float = 0.0, max_iter: int = 0, vertices_per_segment: int | None = None):
        cp = require_gpu()
        self._begin(dg, name, "blocked", damping, personalization)
        n = dg.num_vertices
        self.segment = int(vertices_per_segment or segment_size(dg))
        dg.segments(self.segment)             # built (memory checked) now, not in the first timed launch
        self.blocks = min(-(-n // BLOCK), resident_blocks(kernels.compiled("blocked", "blocked_update")))
        ensure_fits(12 * n + 8 * self.blocks, f"the blocked iteration's vectors for {dg.name}")
        start = cp.full(n, 1.0 / n, dtype=cp.float32)
        self.xs = [self._x(start).astype(cp.float32), cp.empty(n, dtype=cp.float32)]
        self.acc = cp.zeros(n, dtype=cp.float32)
        self._end(tol, max_iter)

    def _x(self, ranks):
        """x = rank / out-degree, the rank itself for a dangling vertex."""
        cp, degree = require_gpu(), self.dg.out_degree
        return cp.where(degree > 0, ranks / cp.maximum(degree, 1), ranks)

    def launch_kernel(self):
        """acc zeroed, every segment's pass, then the pass over vertices: the whole iteration."""
        i = self.count % 2
        x, new_x = self.xs[i], self.xs[1 - i]
        pull_segments(self.dg, x, self.acc, self.segment)   # acc zeroed by a memset: ~10x faster than by
        #                                                     blocked_update, which only reads it
        kernels.compiled("blocked", "blocked_update")((self.blocks,), (BLOCK,), (
            self.acc, self.dg.out_degree, x, new_x, *self._last_args()))

    def set_ranks(self, ranks) -> None:
        i = self.count % 2
        self.xs[i][...] = self._x(ranks)
        self.scalars[...] = (ranks * self.dg.dangling).sum(dtype=np.float64).astype(np.float32)
        self.xs[1 - i].fill(float("nan"))
        self.acc.fill(0)

    def ranks_after(self, iterations: int):
        x, degree = self.xs[iterations % 2], self.dg.out_degree
        return require_gpu().where(degree > 0, x * degree, x).astype(np.float32)


register(Variant("fused", "contributions", None, ("fused",), iteration=FusedIteration))
register(Variant("blocked", "contributions", None, ("pull_segmented", "blocked"), iteration=BlockedIteration))


def make_iteration(dg: DeviceGraph, name, damping: float = DAMPING, personalization=None, *, tol: float = 0.0,
                   max_iter: int = 0, **settings):
    """The per-iteration object of a variant: its own class for whole-iteration variants, else Iteration."""
    v = variant(name)
    cls = v.iteration or Iteration
    # the Variant itself, not its name: a lecture's own Variant is not in VARIANTS (or shares a name with one)
    return cls(dg, v, damping, personalization, tol=tol, max_iter=max_iter, **settings)


@dataclass(frozen=True)
class Captured:
    """A CUDA graph of recorded iterations and the iteration object whose buffers it reads and writes: the
    two live together, so the buffers cannot be freed (and reused) while the graph may still be replayed."""
    graph: object
    step: object
    stream: object

    def launch(self, stream=None):
        self.graph.launch(stream or self.stream)


def capture(step, iterations: int, stream) -> Captured:
    """Record ``iterations`` calls of ``step.run()`` on ``stream`` as one CUDA graph; an even number
    keeps a whole-iteration variant's alternating buffers where they began, for replays again and
    again."""
    if iterations % 2:
        raise ValueError("capture an even number of iterations: a replay must end where it began")
    step.run(), step.run()                               # compiled and warm before capturing
    # the inputs are written before any replay reads them
    stream.wait_event(require_gpu().cuda.get_current_stream().record())
    with stream:
        stream.begin_capture()
        for _ in range(iterations):
            step.run()
        return Captured(stream.end_capture(), step, stream)


def replayed(step, iterations: int = REPLAYED) -> Captured:
    """``iterations`` iterations of a whole-iteration object as a CUDA graph on a stream of its own."""
    return capture(step, iterations, require_gpu().cuda.Stream(non_blocking=True))


def time_iterations(runs: dict, *, iterations: int = REPLAYED, trials: int = 15, launches: int = 1) -> dict:
    """Per-iteration Timings, measured interleaved (``gpu.time_paired``), of each label's CUDA graph of
    ``iterations`` iterations (``replayed``), iteration object, or callable doing one iteration's work."""
    calls, streams = {}, {}
    for label, what in runs.items():
        if isinstance(what, Captured):
            calls[label], streams[label] = what.launch, what.stream
        elif hasattr(what, "run") or callable(what):
            call = what.run if hasattr(what, "run") else what
            calls[label] = lambda call=call: [call() for _ in range(iterations)]
        else:
            raise TypeError(f"{label}: a CUDA graph, an iteration object or a callable, "
                            f"not {type(what).__name__}")
    timings = gpu.time_paired(calls, launches=launches, trials=trials, streams=streams)
    return {label: timing.scaled(1.0 / iterations) for label, timing in timings.items()}


def graph_iteration_ms(dg: DeviceGraph, name: str = "fused", iterations: int = 20, trials: int = 7,
                       **settings):
    """Timing (ms per iteration) of a whole-iteration variant replayed ``iterations`` at a time as one CUDA
    graph; ``settings`` go to its iteration class (medium_max, chunk, vertices_per_segment)."""
    graph = replayed(make_iteration(as_device_graph(dg, name), name, **settings), iterations)
    return time_iterations({name: graph}, iterations=iterations, trials=trials)[name]
