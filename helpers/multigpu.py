"""PageRank across several GPUs (or CPU workers) on Dask: a 1-D partition of the in-CSR by destination rows.

Each worker owns a contiguous range of destination rows, cut so that every worker gets about the same
number of in-links (edges), not of vertices. Every iteration, each worker

1. runs the course's pull kernel on its rows against the FULL contribution vector (all N vertices);
2. updates its rows: rank = d * pulled + (d * dangling mass + 1 - d) / N, contribution = rank / out-degree
   (0 for a dangling vertex), and adds up its share of the new dangling mass and of the L1 change;
3. exchanges: the contribution slices are all-gathered (every worker gets the whole vector back) and the
   two scalars are all-reduced.

One algorithm, two exchanges. ``"dask"``: the client submits one task per worker per iteration and Dask
moves the slices from worker to worker (through host memory and TCP); it works on CPUs and GPUs alike.
``"nccl"``: one long-running task per worker holds a NCCL communicator (CuPy's binding) and moves the
slices GPU to GPU itself; Dask only starts the processes and hands out the work, which is how cuGraph's
multi-GPU algorithms run on Dask.

One algorithm, two back ends. ``"gpu"``: dask-cuda's ``LocalCUDACluster``, one worker per GPU, CuPy and the
course's kernels. ``"cpu"``: a plain ``distributed.LocalCluster`` with NumPy partitions and SciPy's CSR
product, so that CI tests the same partitioning, update and exchange without a GPU.

Nothing here imports Dask, dask-cuda, CuPy or pandas at import time. ``python -m helpers.multigpu bench``
is the one-against-two-GPU measurement; ``python -m helpers.multigpu check`` says what is installed.
"""
from __future__ import annotations

import contextlib
import logging
import sys
import time
import uuid
from dataclasses import dataclass, field

import numpy as np

from .graph import GraphFormatError
from .pagerank_gpu import VARIANTS, GraphTooLargeError
from .reference import DAMPING, check_damping, check_tol

EXTRA = "multigpu"
REQUIREMENTS = ("dask[distributed]>=2024.1", "dask-cuda>=24.0")   # pyproject's multigpu extra (a test compares)
INSTALL_HINT = f'pip install "pagerank-gpu-course[{EXTRA}]"'
HEADROOM = 0.9                     # plan for at most 90% of the free memory, as DeviceGraph does
INT32_MAX = 2**31 - 1              # the course's kernels index edges and vertices with int32
BACKENDS = ("gpu", "cpu")
EXCHANGES = ("nccl", "dask")
# The variants whose kernel takes (in_offsets, in_sources, x, pulled, n[, ...]) and reads nothing else of the
# graph: they run unchanged on a partition whose rows are local and whose sources are global vertex ids.
PULL_VARIANTS = ("pull_hybrid", "pull_contrib", "pull_contrib_kahan", "pull_contrib_f64", "pull_warp",
                 "pull_subwarp_4", "pull_subwarp_8", "pull_subwarp_16", "pull_shared_tile")
ROW_ARRAYS = 7                     # rank, new rank, pulled, scratch, safe out-degree, has-out mask, dangling mask


class MissingDaskError(ImportError):
    """Dask (or, for the GPU back end, dask-cuda) is not installed."""


def _require(module: str, why: str):
    """Import an optional dependency, or say why it is needed and how to install it."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as error:
        raise MissingDaskError(f"{why}, and {module} cannot be imported ({error}). "
                               f"Install the course's extra: {INSTALL_HINT}") from None


def _distributed():
    return _require("distributed", "multi-worker PageRank runs on Dask")


def _dask_cuda():
    return _require("dask_cuda", "the GPU back end starts one Dask worker per GPU with dask-cuda")


# --- the partition ----------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class PartitionPlan:
    """Contiguous row ranges of the in-CSR, one per worker: worker k owns rows bounds[k]..bounds[k+1]-1."""
    bounds: np.ndarray    # parts + 1 row boundaries: 0 = bounds[0] <= ... <= bounds[-1] = N
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
        """The partition as a pandas DataFrame: rows, in-links, shares, and the bytes each worker allocates."""
        import pandas as pd

        n, m = max(self.num_vertices, 1), max(self.num_edges, 1)
        return pd.DataFrame({
            "worker": np.arange(self.parts),
            "first row": self.bounds[:-1],
            "last row": self.bounds[1:] - 1,
            "vertices": self.rows,
            "in-links": self.edges,
            "% of vertices": 100 * self.rows / n,
            "% of in-links": 100 * self.edges / m,
            "GiB on the worker": [partition_bytes(int(r), int(e), self.num_vertices, value_bytes=value_bytes) / 2**30
                                  for r, e in zip(self.rows, self.edges)],
        }).set_index("worker")


def _host(array) -> np.ndarray:
    """A NumPy array from a NumPy or CuPy array (CuPy's copy to the host is ``.get()``)."""
    return np.asarray(array.get() if hasattr(array, "get") and not isinstance(array, np.ndarray) else array)


def partition_by_edges(in_offsets, parts: int) -> PartitionPlan:
    """Cut the rows 0..N-1 into ``parts`` contiguous ranges holding about the same number of in-links.

    Cut k goes to the row boundary whose offset is nearest to k * E / parts; among boundaries with that
    same offset (rows without in-links in between) to the one nearest to k * N / parts. Then every range is
    made non-empty: a row heavier than E / parts (a hub) gets a range of its own and the cuts after it move
    on. Every row is in exactly one range, and no range holds more than E / parts + the largest row's
    in-links. With more parts than rows, part k < N gets row k alone and the parts beyond N are empty.
    """
    offsets = _host(in_offsets).astype(np.int64, copy=False)
    parts = int(parts)
    if parts < 1:
        raise ValueError(f"parts must be at least 1, got {parts}")
    if offsets.ndim != 1 or offsets.size < 2 or offsets[0] != 0 or (np.diff(offsets) < 0).any():
        raise GraphFormatError("in_offsets must be a 1-D array of N + 1 non-decreasing offsets starting at 0")
    n, total = offsets.size - 1, int(offsets[-1])
    bounds = np.empty(parts + 1, dtype=np.int64)
    if parts > n:
        bounds[:] = np.minimum(np.arange(parts + 1), n)
    else:
        k = np.arange(1, parts)
        targets = total * k / parts
        above = np.minimum(np.searchsorted(offsets, targets, side="left"), n)   # first offset >= target
        below = np.maximum(above - 1, 0)
        nearest = np.where(offsets[above] - targets <= targets - offsets[below], offsets[above], offsets[below])
        first = np.searchsorted(offsets, nearest, side="left")
        last = np.searchsorted(offsets, nearest, side="right") - 1
        cuts = np.clip(np.rint(n * k / parts).astype(np.int64), first, last)
        bounds[0], bounds[-1] = 0, n
        for i, cut in enumerate(cuts):          # parts is small: one pass keeps every range non-empty
            bounds[i + 1] = min(max(int(cut), int(bounds[i]) + 1), n - (parts - 1 - i))
    return PartitionPlan(bounds, offsets[bounds[1:]] - offsets[bounds[:-1]])


# --- memory and traffic arithmetic ------------------------------------------------------------------

def partition_bytes(rows: int, edges: int, num_vertices: int, *, offset_bytes: int = 4, value_bytes: int = 4,
                    edge_values: bool = False) -> int:
    """Bytes one worker allocates for its partition: its in_offsets slice (rebased to 0) and in_sources slice
    (int32 vertex ids), the FULL contribution vector (N values: the term that does not shrink with more
    workers), and seven arrays of its rows (rank, new rank, pulled sums, scratch, out-degree, two masks).
    ``edge_values``: one value per edge too (the CPU back end's SciPy matrix keeps its ones)."""
    return (offset_bytes * (rows + 1) + 4 * edges + (value_bytes * edges if edge_values else 0)
            + value_bytes * num_vertices + ROW_ARRAYS * value_bytes * rows)


def plan_bytes(plan: PartitionPlan, **options) -> np.ndarray:
    """``partition_bytes`` of every part of a plan."""
    return np.array([partition_bytes(int(r), int(e), plan.num_vertices, **options)
                     for r, e in zip(plan.rows, plan.edges)], dtype=np.int64)


def exchange_bytes(plan: PartitionPlan, value_bytes: int = 4) -> int:
    """Bytes that reach workers from other workers in one iteration: every worker receives the contributions
    of the rows it does not own (N - its rows values), plus the two float64 scalars of the all-reduce."""
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
    """Values one GPU receives per iteration when N vertices are split evenly over P GPUs (arithmetic).

    1-D (this module): the all-gather brings the N - N/P contributions it does not own.
    2-D (R x C grid, each GPU one block of the matrix): it gathers the N/C contributions of its column block
    from the R GPUs of its column, N/C * (1 - 1/R), and its N/R partial sums are reduced over the C GPUs of
    its row, N/R * (1 - 1/C): about 2N/sqrt(P) in all instead of N.
    """
    n, p = float(num_vertices), int(gpus)
    if layout == "1d":
        return n * (1 - 1 / p)
    if layout == "2d":
        r, c = grid_2d(p)
        return n / c * (1 - 1 / r) + n / r * (1 - 1 / c)
    raise ValueError(f"layout must be '1d' or '2d', got {layout!r}")


def largest_graph(memory_bytes: float, edges_per_vertex: float, bytes_for) -> tuple[int, int]:
    """The largest (vertices, edges = edges_per_vertex * vertices) for which ``bytes_for(vertices, edges)``
    stays within ``memory_bytes`` (bisection; ``bytes_for`` must grow with the size)."""
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


# --- the graph, as the helper takes it ----------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class HostGraph:
    """The arrays the partitioned PageRank reads, on the host: in-CSR and out-degrees."""
    num_vertices: int
    in_offsets: np.ndarray
    in_sources: np.ndarray      # int32 vertex ids
    out_degree: np.ndarray
    name: str = "graph"

    @property
    def num_edges(self) -> int:
        return int(self.in_sources.size)


def host_graph(graph) -> HostGraph:
    """A ``helpers.graph.Graph``, or any object with ``num_vertices``, ``in_offsets``, ``in_sources`` and
    ``out_degree`` (NumPy or CuPy arrays, as ``generators.rmat_device`` returns), as checked host arrays."""
    if isinstance(graph, HostGraph):
        return graph
    missing = [a for a in ("num_vertices", "in_offsets", "in_sources", "out_degree") if not hasattr(graph, a)]
    if missing:
        raise TypeError(f"PageRank across workers needs a graph with num_vertices, in_offsets, in_sources and "
                        f"out_degree (a helpers.graph.Graph, or what generators.rmat_device returns); "
                        f"{type(graph).__name__} has no {', '.join(missing)}")
    n = int(graph.num_vertices)
    name = str(getattr(graph, "name", "graph"))
    offsets, sources, degree = _host(graph.in_offsets), _host(graph.in_sources), _host(graph.out_degree)
    if n < 1:
        raise GraphFormatError(f"{name}: a graph needs at least one vertex, got num_vertices={n}")
    if n > INT32_MAX:
        raise GraphFormatError(f"{name}: {n:,} vertices do not fit the course's int32 vertex ids")
    if offsets.shape != (n + 1,) or offsets[0] != 0 or int(offsets[-1]) != sources.size:
        raise GraphFormatError(f"{name}: in_offsets must hold N + 1 = {n + 1:,} offsets from 0 to the number of "
                               f"in_sources ({sources.size:,}); got shape {offsets.shape}")
    if degree.shape != (n,) or int(degree.sum(dtype=np.int64)) != sources.size:
        raise GraphFormatError(f"{name}: out_degree must hold one count per vertex, adding up to the "
                               f"{sources.size:,} edges")
    if sources.dtype != np.int32:
        if sources.size and (int(sources.min()) < 0 or int(sources.max()) >= n):
            raise GraphFormatError(f"{name}: in_sources holds ids outside 0..{n - 1}")
        sources = sources.astype(np.int32)
    return HostGraph(n, offsets, sources, degree, name)


# --- what runs on a worker ----------------------------------------------------------------------------

_STATE: dict = {}     # (worker address, session) -> _Part: a worker's partition between tasks


def _scipy_spmv(part, x, y):
    y[...] = part.matrix @ x


class _Part:
    """One worker's rows start..stop-1 of N, its in-links, and its buffers, in NumPy or CuPy (``xp``).

    ``x`` is the full contribution vector; the worker writes its own slice of it, the exchange the rest.
    Attributes ``in_offsets``, ``in_sources`` and ``num_vertices`` (the row count) are what the course's
    kernel launchers read, so a variant's ``spmv`` runs on a partition unchanged.
    """

    def __init__(self, xp, backend, index, bounds, n, offsets, sources, degree, dtype, spmv):
        self.xp, self.backend, self.index, self.bounds, self.n = xp, backend, index, np.asarray(bounds), n
        self.start, self.stop = int(bounds[index]), int(bounds[index + 1])
        self.num_vertices = rows = self.stop - self.start
        self.dtype, self.spmv = np.dtype(dtype), spmv
        self.in_offsets = xp.asarray(offsets)
        self.in_sources = xp.asarray(sources)
        degree = np.asarray(degree)
        self.safe_degree = xp.asarray(np.maximum(degree, 1).astype(self.dtype))
        self.has_out = xp.asarray((degree > 0).astype(self.dtype))
        self.dangling = xp.asarray((degree == 0).astype(self.dtype))
        if backend == "cpu":
            import scipy.sparse as sp
            self.matrix = sp.csr_matrix((np.ones(len(sources), self.dtype), sources, offsets), shape=(rows, n))
        self.rank = xp.full(rows, 1.0 / n, dtype=self.dtype)
        self.new, self.pulled, self.tmp = (xp.empty(rows, dtype=self.dtype) for _ in range(3))
        self.x = xp.zeros(n, dtype=self.dtype)
        self.contributions(self.rank, self.x[self.start:self.stop])
        self.pull()                              # warm-up: compiles and loads every kernel a step launches,
        self.update(DAMPING, 0.0, self.pulled)   # writing only into scratch buffers
        self.sync()

    def sync(self):
        if self.backend == "gpu":
            self.xp.cuda.get_current_stream().synchronize()

    def contributions(self, rank, out):
        self.xp.divide(rank, self.safe_degree, out=out)
        self.xp.multiply(out, self.has_out, out=out)

    def pull(self):
        if self.num_vertices:
            self.spmv(self, self.x, self.pulled)

    def update(self, damping, dangling_mass, contrib_out):
        """new = d * pulled + (d * D + 1 - d) / N; returns (dangling mass of new, L1 change) as float64 sums."""
        xp = self.xp
        base = self.dtype.type((damping * dangling_mass + 1.0 - damping) / self.n)
        xp.multiply(self.pulled, self.dtype.type(damping), out=self.new)
        xp.add(self.new, base, out=self.new)
        xp.subtract(self.new, self.rank, out=self.tmp)
        xp.abs(self.tmp, out=self.tmp)
        change = self.tmp.sum(dtype=np.float64)
        xp.multiply(self.new, self.dangling, out=self.tmp)
        dangling = self.tmp.sum(dtype=np.float64)
        self.contributions(self.new, contrib_out)
        return dangling, change

    def step(self, damping, dangling_mass):
        """One iteration on this worker's rows; its new contributions land in its slice of ``x``."""
        self.pull()
        dangling, change = self.update(damping, dangling_mass, self.x[self.start:self.stop])
        self.rank, self.new = self.new, self.rank
        return dangling, change

    def dangling_mass(self) -> float:
        return float((self.rank * self.dangling).sum(dtype=np.float64))

    def own_slice(self) -> np.ndarray:
        """A host copy of this worker's contributions (the next step overwrites them in place)."""
        own = self.x[self.start:self.stop]
        return own.get() if self.backend == "gpu" else own.copy()

    def put(self, k: int, values: np.ndarray):
        """Worker k's contributions into ``x``."""
        a, b = int(self.bounds[k]), int(self.bounds[k + 1])
        if b > a:
            if self.backend == "gpu":
                self.x[a:b].set(values)
            else:
                self.x[a:b] = values

    def release(self):
        """Drop every array; on the GPU hand the memory back to the device (CuPy keeps freed blocks)."""
        xp, backend = self.xp, self.backend
        self.__dict__.clear()
        if backend == "gpu":
            xp.get_default_memory_pool().free_all_blocks()


def _worker_key(session):
    from distributed import get_worker

    return get_worker().address, session


def _part(session) -> _Part:
    try:
        return _STATE[_worker_key(session)]
    except KeyError:
        raise RuntimeError("this worker holds no partition of the run (was it restarted?)") from None


def _free_bytes(backend: str) -> int:
    """Free memory where this worker allocates: its GPU (plus CuPy's cached blocks) or the host."""
    if backend == "gpu":
        import cupy as cp

        free, _ = cp.cuda.Device().mem_info
        return int(free + cp.get_default_memory_pool().free_bytes())
    import psutil

    return int(psutil.virtual_memory().available)


def _nccl_problem():
    """None when CuPy's NCCL binding loads here; otherwise why not."""
    try:
        from cupy.cuda import nccl
    except Exception as error:   # CuPy missing or broken
        return f"CuPy's NCCL module cannot be imported ({error})"
    if not getattr(nccl, "available", False):
        return "CuPy cannot load the NCCL library (install NCCL, e.g. the nvidia-nccl wheel of your CUDA version)"
    try:
        nccl.get_version()
    except Exception as error:
        return f"NCCL does not answer ({error})"
    return None


def _setup(session, backend, index, bounds, n, offsets, sources, degree, dtype, variant):
    """Build this worker's partition (uploading it to its GPU on the GPU back end) and keep it for the run."""
    if backend == "gpu":
        from . import kernels
        from .gpu import require_gpu

        xp, chosen = require_gpu(), VARIANTS[variant]
        for name in chosen.kernels:
            kernels.load(name)
        part = _Part(xp, backend, index, bounds, n, offsets, sources, degree, dtype, chosen.spmv)
    else:
        part = _Part(np, backend, index, bounds, n, offsets, sources, degree, dtype, _scipy_spmv)
    _STATE[_worker_key(session)] = part
    return part.dangling_mass()


def _drop(session):
    part = _STATE.pop(_worker_key(session), None)
    if part is not None:
        part.release()


def _final_ranks(session) -> np.ndarray:
    rank = _part(session).rank
    return rank.get() if hasattr(rank, "get") else rank.copy()


def _take_slice(session, _after):
    """This worker's contributions, as a task result that Dask can move to the other workers (``_after``:
    the task it must follow)."""
    return _part(session).own_slice()


def _dask_step(session, damping, dangling_mass, *slices):
    """One iteration, Dask exchange: copy in the other workers' slices, compute; return the three numbers
    the client needs (dangling share, L1 change share, compute milliseconds)."""
    part = _part(session)
    for k, values in enumerate(slices):
        if k != part.index:
            part.put(k, values)
    part.sync()
    start = time.perf_counter()
    dangling, change = part.step(damping, dangling_mass)
    dangling, change = float(dangling), float(change)       # waits for the GPU
    return dangling, change, 1e3 * (time.perf_counter() - start)


def _nccl_allgather(comm, nccl, part, scalars, stream):
    """All-gather of the contribution slices (NCCL has no gather of unequal slices: one broadcast per owner,
    in one group, as cuGraph does) and all-reduce of the two scalars, all on ``stream``."""
    item, base = part.x.itemsize, part.x.data.ptr
    nccl.groupStart()
    for k in range(len(part.bounds) - 1):
        a, b = int(part.bounds[k]), int(part.bounds[k + 1])
        if b > a:                                     # every rank skips the same empty parts
            comm.broadcast(base + a * item, base + a * item, b - a, nccl.NCCL_FLOAT32, k, stream.ptr)
    comm.allReduce(scalars.data.ptr, scalars.data.ptr, 2, nccl.NCCL_FLOAT64, nccl.NCCL_SUM, stream.ptr)
    nccl.groupEnd()


def _nccl_run(session, unique_id, ranks, rank, damping, tol, max_iter):
    """The whole run on one GPU, NCCL exchange: SPMD, every worker runs this loop with its own rank."""
    import cupy as cp
    from cupy.cuda import nccl

    part = _part(session)
    cp.cuda.Device().synchronize()           # the set-up ran on the default stream
    # CuPy 14 gives (and takes) the id as bytes, earlier CuPy as a tuple of ints; Dask may turn a tuple into a list
    comm = nccl.NcclCommunicator(ranks, unique_id if isinstance(unique_id, bytes) else tuple(unique_id), rank)
    stream = cp.cuda.Stream(non_blocking=True)
    events = [cp.cuda.Event() for _ in range(3)]
    residuals, compute_ms, exchange_ms, wall_ms = [], [], [], []
    try:
        with stream:
            scalars = cp.asarray([part.dangling_mass(), 0.0], dtype=cp.float64)
            scalars[1] = scalars[1]            # loads the copy kernel the loop uses, outside the timed loop
            _nccl_allgather(comm, nccl, part, scalars, stream)     # the starting vector and dangling mass
            dangling_mass = float(scalars.get(stream=stream)[0])
            for _ in range(max_iter):
                start = time.perf_counter()
                events[0].record(stream)
                dangling, change = part.step(damping, dangling_mass)
                scalars[0], scalars[1] = dangling, change
                events[1].record(stream)
                _nccl_allgather(comm, nccl, part, scalars, stream)
                events[2].record(stream)
                host = scalars.get(stream=stream)                   # waits for the stream
                wall_ms.append(1e3 * (time.perf_counter() - start))
                compute_ms.append(cp.cuda.get_elapsed_time(events[0], events[1]))
                exchange_ms.append(cp.cuda.get_elapsed_time(events[1], events[2]))
                dangling_mass = float(host[0])
                residuals.append(float(host[1]))
                if residuals[-1] < tol:
                    break
            stream.synchronize()
        return dict(residuals=residuals, compute_ms=compute_ms, exchange_ms=exchange_ms, wall_ms=wall_ms,
                    ranks=part.rank.get())
    finally:
        comm.destroy()


# --- the client side ----------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class MultiResult:
    """A partitioned PageRank run. Per-iteration times: ``iteration_ms`` is the slowest worker's wall time;
    ``compute_ms`` the slowest worker's kernel and update; ``exchange_ms`` the rest (NCCL: the collectives
    as CUDA events time them on that worker; Dask: the iteration's wall time minus the compute, so the
    copies, transfers and scheduling)."""
    ranks: np.ndarray
    iterations: int
    residuals: np.ndarray
    converged: bool
    backend: str
    exchange: str
    variant: str
    plan: PartitionPlan
    iteration_ms: np.ndarray
    compute_ms: np.ndarray
    exchange_ms: np.ndarray
    worker_compute_ms: np.ndarray      # workers x iterations
    bytes_per_iteration: int
    setup_s: float
    graph_name: str = ""
    fallback: str | None = None        # why the NCCL exchange was asked for and not used
    tol: float = 1e-6

    @property
    def workers(self) -> int:
        return self.plan.parts

    @property
    def partitions(self):
        """The partition table (pandas DataFrame)."""
        return self.plan.table(value_bytes=self.ranks.dtype.itemsize)

    def summary(self) -> dict:
        """One row of a results table: medians and ranges over the iterations."""
        ms = self.iteration_ms
        return {"graph": self.graph_name, "backend": self.backend, "workers": self.workers,
                "exchange": self.exchange, "variant": self.variant,
                "ms per iteration": float(np.median(ms)), "min ms": float(ms.min()), "max ms": float(ms.max()),
                "compute ms": float(np.median(self.compute_ms)), "exchange ms": float(np.median(self.exchange_ms)),
                "MB exchanged per iteration": self.bytes_per_iteration / 1e6,
                "iterations": self.iterations, "converged": self.converged, "tol": self.tol}


def _resolve_backend(backend: str) -> str:
    from .gpu import has_gpu, require_gpu

    if backend == "auto":
        return "gpu" if has_gpu() else "cpu"
    if backend not in BACKENDS:
        raise ValueError(f"backend must be 'auto', 'gpu' or 'cpu', got {backend!r}")
    if backend == "gpu":
        require_gpu()
    return backend


@contextlib.contextmanager
def local_cluster(workers: int | None = None, backend: str = "auto", *, processes: bool | None = None):
    """A Dask cluster on this machine, closed on exit: yields its Client.

    GPU: dask-cuda's LocalCUDACluster, one worker process per GPU (the first ``workers`` GPUs visible).
    CPU: distributed's LocalCluster with ``workers`` single-threaded workers (default 2), in this process
    unless ``processes=True``. Dask's memory manager is off (the partitions live outside its store).
    """
    distributed = _distributed()
    backend = _resolve_backend(backend)
    # no dashboard, and the scheduler's HTTP endpoint on a free port (8787 may be taken by another cluster)
    options = dict(threads_per_worker=1, memory_limit=0, dashboard_address=":0", scheduler_kwargs={"dashboard": False},
                   silence_logs=logging.ERROR)
    if backend == "gpu":
        dask_cuda = _dask_cuda()
        from .gpu import require_gpu

        count = require_gpu().cuda.runtime.getDeviceCount()
        workers = count if workers is None else int(workers)
        if not 1 <= workers <= count:
            raise ValueError(f"{workers} GPU workers asked for; {count} GPU(s) visible")
        cluster = dask_cuda.LocalCUDACluster(n_workers=workers, **options)
    else:
        workers = 2 if workers is None else int(workers)
        if workers < 1:
            raise ValueError(f"workers must be at least 1, got {workers}")
        cluster = distributed.LocalCluster(n_workers=workers, processes=bool(processes), **options)
    try:
        client = distributed.Client(cluster)
        try:
            client.wait_for_workers(workers, timeout=300)
            yield client
        finally:
            client.close()
    finally:
        cluster.close()


def worker_addresses(client) -> list[str]:
    """The client's workers in a fixed order: by name (dask-cuda names them by GPU), then address."""
    try:
        info = client.scheduler_info(n_workers=-1)["workers"]
    except TypeError:                  # distributed before 2025 lists every worker anyway
        info = client.scheduler_info()["workers"]

    def key(address):
        name = str(info[address].get("name", ""))
        return (0, int(name), address) if name.isdigit() else (1, name, address)

    return sorted(info, key=key)


def _size(nbytes: float) -> str:
    return f"{nbytes / 2**30:.2f} GiB" if nbytes >= 2**30 else f"{nbytes / 2**20:.2f} MiB"


def _check_memory(plan, free, backend, value_bytes, name):
    need = plan_bytes(plan, value_bytes=value_bytes, edge_values=backend == "cpu")
    where = "its GPU" if backend == "gpu" else "the host"
    for k in range(plan.parts):
        a, b = plan.range(k)
        if plan.edges[k] > INT32_MAX:
            raise GraphTooLargeError(f"{name}: partition {k} (rows {a:,}..{b - 1:,}) holds {plan.edges[k]:,} "
                                     "in-links, beyond the int32 edge index of the course's kernels: use more workers")
        if need[k] > HEADROOM * free[k]:
            raise GraphTooLargeError(
                f"{name}: partition {k} (rows {a:,}..{b - 1:,}: {b - a:,} vertices, {plan.edges[k]:,} in-links) "
                f"needs {_size(need[k])} on worker {k} and {where} has {_size(free[k])} free "
                f"(at most {HEADROOM:.0%} of it is planned for): use more workers or more memory")


def pagerank_multi(graph, workers: int | None = None, *, backend: str = "auto", exchange: str = "auto",
                   variant: str = "pull_hybrid", damping: float = DAMPING, tol: float = 1e-6,
                   max_iter: int = 1000, client=None, dtype=None, free_bytes=None,
                   verbose: bool = True) -> MultiResult:
    """PageRank with the in-CSR split by destination rows across Dask workers; the course's semantics.

    ``graph``: a ``helpers.graph.Graph`` or any object with num_vertices, in_offsets, in_sources, out_degree.
    ``workers``: how many (default: every GPU, or 2 CPU workers; with a ``client``, all of its workers).
    ``backend``: "gpu" (CuPy, the course's kernel ``variant``, float32), "cpu" (NumPy and SciPy, float64
    unless ``dtype`` says float32), or "auto". ``exchange``: "nccl" (GPU only; falls back to "dask", saying
    why, where NCCL cannot load), "dask", or "auto" (NCCL where it can run). ``client``: run on this Dask
    cluster, else start a local one and close it afterwards. ``free_bytes``: free memory per worker (one
    number or one per worker) instead of asking the workers: the memory check can then be tested anywhere.
    """
    damping, tol = check_damping(damping), check_tol(tol)
    if int(max_iter) < 1:
        raise ValueError(f"max_iter must be at least 1, got {max_iter}")
    if exchange not in ("auto",) + EXCHANGES:
        raise ValueError(f"exchange must be 'auto', 'nccl' or 'dask', got {exchange!r}")
    if variant not in PULL_VARIANTS:
        raise ValueError(f"variant {variant!r} cannot run on a partition; these can: {', '.join(PULL_VARIANTS)}")
    hg = host_graph(graph)
    backend = _resolve_backend(backend)
    _distributed()
    dtype = np.dtype(dtype or (np.float32 if backend == "gpu" else np.float64))
    if dtype not in (np.float32, np.float64) or (backend == "gpu" and dtype != np.float32):
        raise ValueError(f"dtype {dtype} is not offered: the GPU back end runs the course's float32 kernels, "
                         "the CPU back end float32 or float64")
    if client is None:
        with local_cluster(workers, backend) as own:
            return _run(own, hg, None, backend, exchange, variant, damping, tol, int(max_iter), dtype,
                        free_bytes, verbose)
    return _run(client, hg, workers, backend, exchange, variant, damping, tol, int(max_iter), dtype,
                free_bytes, verbose)


def _run(client, hg, workers, backend, exchange, variant, damping, tol, max_iter, dtype, free_bytes, verbose):
    say = print if verbose else (lambda *args, **kwargs: None)
    addresses = worker_addresses(client)
    if workers is not None:
        if not 1 <= int(workers) <= len(addresses):
            raise ValueError(f"{workers} workers asked for; the cluster has {len(addresses)}")
        addresses = addresses[:int(workers)]
    parts = len(addresses)
    start = time.perf_counter()
    plan = partition_by_edges(hg.in_offsets, parts)
    if free_bytes is None:
        free = client.gather([client.submit(_free_bytes, backend, workers=[w], pure=False) for w in addresses])
    else:
        free = list(np.broadcast_to(np.asarray(free_bytes, dtype=np.float64), (parts,)))
    _check_memory(plan, free, backend, dtype.itemsize, hg.name)

    fallback = None
    if exchange == "auto":
        exchange = "nccl" if backend == "gpu" else "dask"
    if exchange == "nccl":
        if backend != "gpu":
            fallback = "NCCL moves GPU memory; the CPU back end has none"
        else:
            problems = [_nccl_problem()] + client.gather(
                [client.submit(_nccl_problem, workers=[w], pure=False) for w in addresses])
            fallback = next((p for p in problems if p), None)
        if fallback:
            say(f"NCCL exchange not used: {fallback}. Using the Dask exchange instead.")
            exchange = "dask"

    session = uuid.uuid4().hex
    try:
        setups = []
        for k, w in enumerate(addresses):
            a, b = plan.range(k)
            e0, e1 = int(hg.in_offsets[a]), int(hg.in_offsets[b])
            offsets = (hg.in_offsets[a:b + 1] - hg.in_offsets[a]).astype(np.int32)
            arrays = [client.scatter(x, workers=[w], hash=False)
                      for x in (offsets, hg.in_sources[e0:e1], hg.out_degree[a:b])]
            setups.append(client.submit(_setup, session, backend, k, plan.bounds, hg.num_vertices, *arrays,
                                        dtype.str, variant, workers=[w], pure=False))
        client.gather(setups)      # every partition is in place (and its errors raised) before iterating
        setup_s = time.perf_counter() - start
        say(f"{hg.name}: {hg.num_vertices:,} vertices, {hg.num_edges:,} edges on {parts} {backend.upper()} "
            f"worker(s), {exchange} exchange; partitioned and loaded in {setup_s:.1f} s")
        if exchange == "nccl":
            run = _iterate_nccl(client, addresses, session, damping, tol, max_iter)
        else:
            run = _iterate_dask(client, addresses, setups, session, damping, tol, max_iter)
        ranks, residuals, wall, compute, communicate = run
    finally:
        client.gather([client.submit(_drop, session, workers=[w], pure=False) for w in addresses])
    residuals = np.asarray(residuals)
    slowest = compute.argmax(axis=0)
    iteration_ms = wall.max(axis=0)
    compute_ms = compute.max(axis=0)
    exchange_ms = (communicate[slowest, np.arange(compute.shape[1])] if communicate is not None
                   else iteration_ms - compute_ms)
    return MultiResult(ranks, int(residuals.size), residuals, bool(residuals[-1] < tol), backend, exchange,
                       variant if backend == "gpu" else "scipy_csr", plan, iteration_ms, compute_ms, exchange_ms, compute,
                       exchange_bytes(plan, dtype.itemsize), setup_s, hg.name, fallback, tol)


def _iterate_dask(client, addresses, setups, session, damping, tol, max_iter):
    """The client's loop, one round trip per iteration: per worker, a step task fed with every worker's last
    slice (Dask moves them from worker to worker) that returns three numbers, and a task after it that
    hands the worker's new slice to the next steps."""
    def take(after):
        return [client.submit(_take_slice, session, a, workers=[w], pure=False) for a, w in zip(after, addresses)]

    slices = take(setups)
    dangling_mass = sum(client.gather(setups))
    residuals, wall, compute = [], [], []
    for _ in range(max_iter):
        start = time.perf_counter()
        steps = [client.submit(_dask_step, session, damping, dangling_mass, *slices, workers=[w], pure=False)
                 for w in addresses]
        slices = take(steps)
        stats = client.gather(steps)
        wall.append(1e3 * (time.perf_counter() - start))
        dangling_mass = sum(s[0] for s in stats)
        residuals.append(sum(s[1] for s in stats))
        compute.append([s[2] for s in stats])
        if residuals[-1] < tol:
            break
    ranks = np.concatenate(client.gather([client.submit(_final_ranks, session, workers=[w], pure=False)
                                          for w in addresses]))
    compute = np.asarray(compute).T
    return ranks, residuals, np.broadcast_to(np.asarray(wall), compute.shape), compute, None


def _iterate_nccl(client, addresses, session, damping, tol, max_iter):
    """One long-running task per worker, all started at once (NCCL's set-up waits for every rank)."""
    from cupy.cuda import nccl

    unique_id = nccl.get_unique_id()
    runs = client.gather([client.submit(_nccl_run, session, unique_id, len(addresses), r, damping, tol, max_iter,
                                        workers=[w], pure=False) for r, w in enumerate(addresses)])
    return (np.concatenate([r["ranks"] for r in runs]), runs[0]["residuals"],
            np.array([r["wall_ms"] for r in runs]), np.array([r["compute_ms"] for r in runs]),
            np.array([r["exchange_ms"] for r in runs]))


def float64_residual(graph, ranks, damping: float = DAMPING) -> float:
    """L1 change that one float64 power-iteration step makes to ``ranks`` (small for a PageRank vector).
    On the GPU when the graph's arrays are CuPy arrays (a CPU reference of 300M edges takes too long),
    with SciPy otherwise."""
    on_gpu = type(graph.in_offsets).__module__.split(".")[0] == "cupy"
    if on_gpu:
        from .gpu import require_gpu

        xp = require_gpu()
        import cupyx.scipy.sparse as sparse
    else:
        import scipy.sparse as sparse
        xp = np
    n = int(graph.num_vertices)
    r = xp.asarray(ranks, dtype=xp.float64)
    degree = xp.asarray(graph.out_degree)
    sources, offsets = xp.asarray(graph.in_sources), xp.asarray(graph.in_offsets)
    if sources.size <= INT32_MAX:          # cuSPARSE and SciPy index with int32 up to 2**31 - 1 entries
        sources, offsets = sources.astype(xp.int32, copy=False), offsets.astype(xp.int32, copy=False)
    contributions = r / xp.maximum(degree, 1) * (degree > 0)
    matrix = sparse.csr_matrix((xp.ones(sources.size, dtype=xp.float64), sources, offsets), shape=(n, n))
    dangling_mass = float((r * (degree == 0)).sum())
    new = damping * (matrix @ contributions) + (damping * dangling_mass + 1.0 - damping) / n
    return float(xp.abs(new - r).sum())


# --- the command line ---------------------------------------------------------------------------------

def versions() -> list[str]:
    """What the multi-GPU run depends on, and whether NCCL loads here."""
    lines = []
    for module in ("dask", "distributed", "dask_cuda", "cupy"):
        try:
            lines.append(f"{module} {__import__(module).__version__}")
        except Exception as error:
            lines.append(f"{module}: not importable ({type(error).__name__}: {error})")
    problem = _nccl_problem()
    if problem:
        lines.append(f"NCCL: not available: {problem}")
    else:
        from cupy.cuda import nccl
        lines.append(f"NCCL: available, version {nccl.get_version()} (CuPy built against {nccl.get_build_version()})")
    return lines


def bench(argv=None) -> int:
    """One GPU against two on a generated R-MAT graph on the GPU; see ``python -m helpers.multigpu bench -h``."""
    import argparse
    import json
    from pathlib import Path

    parser = argparse.ArgumentParser(prog="python -m helpers.multigpu bench",
                                     description="Partitioned PageRank on 1 and on N GPUs (NCCL exchange, and the "
                                                 "Dask exchange for contrast): verified, timed, written as CSV/JSON.",
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--vertices", type=int, default=2**25, help="vertices of the R-MAT graph generated on the GPU")
    parser.add_argument("--edges", type=int, default=300_000_000, help="its edges")
    parser.add_argument("--seed", type=int, default=0, help="the generator's seed")
    parser.add_argument("--workers", type=int, default=2, help="GPUs of the multi-GPU runs")
    parser.add_argument("--variant", default="pull_hybrid", choices=PULL_VARIANTS,
                        help="the course's pull kernel each worker runs on its rows")
    parser.add_argument("--tol", type=float, default=1e-6, help="stop when the L1 change is below this")
    parser.add_argument("--max-iter", type=int, default=100, help="at most this many iterations")
    parser.add_argument("--dask-iterations", type=int, default=10,
                        help="iterations of the Dask-exchange contrast run (0: skip it)")
    parser.add_argument("--out", type=Path, default=Path("bench-results") / "multigpu",
                        help="folder for multigpu.csv and multigpu.json")
    args = parser.parse_args(argv)

    from . import bench as course_bench
    from .generators import rmat_device
    from .gpu import require_gpu

    clock = time.perf_counter()

    def say(message):
        print(f"[{time.perf_counter() - clock:7.1f} s] {message}", flush=True)

    header = course_bench.header() + versions()
    print("\n".join(header), flush=True)
    cp = require_gpu()
    gpus = cp.cuda.runtime.getDeviceCount()
    if gpus < args.workers:
        print(f"this machine has {gpus} GPU(s); --workers {args.workers} needs as many", file=sys.stderr)
        return 2
    say(f"generating R-MAT({args.vertices:,} vertices, {args.edges:,} edges, seed {args.seed}) on the GPU")
    device_graph = rmat_device(args.vertices, args.edges, seed=args.seed)
    say(f"generated {device_graph.name}; copying its in-CSR to the host")
    hg = host_graph(device_graph)
    say(f"host copy done: {hg.num_edges:,} edges")
    common = dict(variant=args.variant, tol=args.tol, max_iter=args.max_iter, backend="gpu")
    results = []
    say("starting 1 GPU worker (dask-cuda)")
    with local_cluster(1, "gpu") as client:
        say("running on 1 GPU, NCCL exchange")
        results.append(pagerank_multi(hg, client=client, exchange="nccl", **common))
    say(f"1 GPU: {results[0].iterations} iterations, {np.median(results[0].iteration_ms):.2f} ms per iteration")
    say(f"starting {args.workers} GPU workers (dask-cuda)")
    with local_cluster(args.workers, "gpu") as client:
        say(f"running on {args.workers} GPUs, NCCL exchange")
        results.append(pagerank_multi(hg, client=client, exchange="nccl", **common))
        say(f"{args.workers} GPUs: {results[-1].iterations} iterations, "
            f"{np.median(results[-1].iteration_ms):.2f} ms per iteration")
        if args.dask_iterations > 0:
            say(f"running on {args.workers} GPUs, Dask exchange, {args.dask_iterations} iterations (for contrast)")
            results.append(pagerank_multi(hg, client=client, exchange="dask", **dict(
                common, tol=1e-30, max_iter=args.dask_iterations)))
            say(f"Dask exchange: {np.median(results[-1].iteration_ms):.2f} ms per iteration")
    say("checking with one float64 iteration on the GPU")
    one, many = results[0], results[1]
    checks = [float64_residual(device_graph, r.ranks) for r in (one, many)]
    l1 = float(np.abs(many.ranks.astype(np.float64) - one.ranks).sum())
    max_diff = float(np.abs(many.ranks.astype(np.float64) - one.ranks).max())
    ok = (abs(many.iterations - one.iterations) <= 1 and l1 < 1e-5
          and checks[1] <= max(2 * checks[0], 10 * args.tol))
    base_ms = float(np.median(one.iteration_ms))
    rows = []
    for i, r in enumerate(results):
        row = r.summary()
        row.update({"speedup vs 1 GPU": base_ms / row["ms per iteration"],
                    "float64 check (L1 change)": checks[i] if i < len(checks) else float("nan"),
                    "L1 to 1-GPU ranks": (float(np.abs(r.ranks.astype(np.float64) - one.ranks).sum())
                                          if r.tol == args.tol else float("nan")),     # not the timing-only run
                    "fallback": r.fallback or ""})
        rows.append(row)
    import pandas as pd

    table = pd.DataFrame(rows)
    with pd.option_context("display.width", 200, "display.max_columns", 30):
        print(table.drop(columns=["graph", "backend", "variant", "tol"]).to_string(index=False))
    print(f"graph: {hg.name}; variant {args.variant}; stop: L1 change < {args.tol:g} (max {args.max_iter})")
    print(f"{args.workers} GPUs against 1: {many.iterations} against {one.iterations} iterations, L1 distance "
          f"{l1:.2e}, largest difference {max_diff:.2e}; one float64 step moves the ranks by {checks[1]:.2e} "
          f"({args.workers} GPUs) and {checks[0]:.2e} (1 GPU): {'OK' if ok else 'FAILED'}")
    args.out.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.out / "multigpu.csv", index=False)
    partitions = {str(r.workers): r.partitions.reset_index().to_dict(orient="list") for r in results[:2]}
    (args.out / "multigpu.json").write_text(json.dumps(
        {"header": header, "graph": hg.name, "vertices": hg.num_vertices, "edges": hg.num_edges,
         "tol": args.tol, "norm": "L1", "verified": ok, "l1_distance_to_1_gpu": l1, "max_abs_diff_to_1_gpu": max_diff,
         "rows": rows, "partitions": partitions,
         "per_iteration_ms": [{"workers": r.workers, "exchange": r.exchange, "iteration": r.iteration_ms.tolist(),
                               "compute": r.compute_ms.tolist(), "exchange_ms": r.exchange_ms.tolist()}
                              for r in results]}, indent=1, default=float))
    say(f"wrote {args.out / 'multigpu.csv'} and {args.out / 'multigpu.json'}")
    return 0 if ok else 1


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["bench"]:
        return bench(argv[1:])
    if argv[:1] == ["check"]:
        print("\n".join(versions()))
        return 0
    print("usage: python -m helpers.multigpu {bench,check} [options]   (bench -h for the options)", file=sys.stderr)
    return 2


if __name__ == "__main__":
    # Run the functions of the imported module, not of __main__: Dask ships __main__'s functions by value,
    # and the workers' partitions would then live in a copy of _STATE that no later task sees.
    from helpers.multigpu import main as _main

    sys.exit(_main())
