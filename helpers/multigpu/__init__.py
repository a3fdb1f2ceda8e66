"""PageRank across several GPUs (or CPU workers) on Dask: the in-CSR split by destination rows, one Dask actor
(``worker.Partition``) per worker, the contributions all-gathered each iteration by the client ("dask") or by
NCCL ("nccl"). Nothing here imports Dask or CuPy at import time."""
from __future__ import annotations

import contextlib
import importlib
import importlib.util
import logging
import shutil
import tempfile
import time
from dataclasses import dataclass

import numpy as np
import scipy.sparse

from helpers.core.arguments import ArgumentError, GraphFormatError, host_array, to_host
from helpers.core.reference import DAMPING, check_damping, check_tol
from helpers.measure import gpu
from helpers.measure.gpu import INT32_MAX
from helpers.multigpu.plan import (ROW_ARRAYS, PartitionPlan, check_fits, exchange_bytes, grid_2d,
                                   largest_graph, partition_by_edges, partition_bytes, plan_bytes,
                                   values_received_per_gpu)
from helpers.multigpu.worker import Partition, load_nccl

EXTRA = "multigpu"
REQUIREMENTS = ("dask[distributed]>=2024.1", "dask-cuda>=24.0")
INSTALL_HINT = f'pip install "pagerank-gpu-course[{EXTRA}]"'
BACKENDS = ("gpu", "cpu")
EXCHANGES = ("nccl", "dask")
# kernels that read only (in_offsets, in_sources, x, pulled, n): they run unchanged on a partition's rows
PULL_VARIANTS = ("pull_hybrid", "pull_contrib", "pull_contrib_kahan", "pull_contrib_f64", "pull_warp",
                 "pull_subwarp_4", "pull_subwarp_8", "pull_subwarp_16", "pull_shared_tile")
__all__ = ["ROW_ARRAYS", "PartitionPlan", "check_fits", "exchange_bytes", "grid_2d", "largest_graph",
           "partition_by_edges", "partition_bytes", "plan_bytes", "values_received_per_gpu", "EXTRA",
           "REQUIREMENTS", "INSTALL_HINT", "PULL_VARIANTS", "MissingDaskError", "default_backend",
           "HostGraph", "host_graph", "MultiResult", "local_cluster", "worker_addresses", "pagerank_multi",
           "float64_residual", "versions"]


class MissingDaskError(ImportError):
    """Dask (or, for the GPU back end, dask-cuda) is not installed."""


def _require(module: str, why: str):
    """Import an optional dependency, or say why it is needed and how to install it."""
    try:
        return importlib.import_module(module)
    except ImportError as error:
        raise MissingDaskError(f"{why}, and {module} cannot be imported ({error}). "
                               f"Install the course's extra: {INSTALL_HINT}") from None


def default_backend() -> str:
    """What ``backend="auto"`` means (never from a client's cluster): "gpu" with a GPU and dask-cuda, else
    "cpu"."""
    return "gpu" if gpu.has_gpu() and importlib.util.find_spec("dask_cuda") is not None else "cpu"


def _resolve_backend(backend: str) -> str:
    if backend == "auto":
        return default_backend()
    if backend not in BACKENDS:
        raise ValueError(f"backend must be 'auto', 'gpu' or 'cpu', got {backend!r}")
    if backend == "gpu":
        gpu.require_gpu()
    return backend


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

    def rows(self, a: int, b: int) -> tuple:
        """Rows a..b-1: their in_offsets rebased to 0 (int32), in_sources and out-degrees."""
        e0, e1 = int(self.in_offsets[a]), int(self.in_offsets[b])
        return (self.in_offsets[a:b + 1] - e0).astype(np.int32), self.in_sources[e0:e1], self.out_degree[a:b]


def host_graph(graph) -> HostGraph:
    """A ``Graph``, or any object with ``num_vertices``, ``in_offsets``, ``in_sources`` and ``out_degree``
    (NumPy or CuPy arrays, as ``rmat_device`` returns), as checked host arrays."""
    if isinstance(graph, HostGraph):
        return graph
    needed = ("num_vertices", "in_offsets", "in_sources", "out_degree")
    if missing := [a for a in needed if not hasattr(graph, a)]:
        raise TypeError(f"PageRank across workers needs a graph with num_vertices, in_offsets, in_sources "
                        f"and out_degree (a helpers.core.graph.Graph, or what generators.rmat_device "
                        f"returns); {type(graph).__name__} has no {', '.join(missing)}")
    n = int(graph.num_vertices)
    name = str(getattr(graph, "name", "graph"))
    offsets, sources, degree = (to_host(getattr(graph, key), key) for key in needed[1:])
    if n < 1:
        raise GraphFormatError(f"{name}: a graph needs at least one vertex, got num_vertices={n}")
    if n > INT32_MAX:
        raise GraphFormatError(f"{name}: {n:,} vertices do not fit the course's int32 vertex ids")
    if offsets.shape != (n + 1,) or offsets[0] != 0 or int(offsets[-1]) != sources.size:
        raise GraphFormatError(f"{name}: in_offsets must hold N + 1 = {n + 1:,} offsets from 0 to the "
                               f"number of in_sources ({sources.size:,}); got shape {offsets.shape}")
    if degree.shape != (n,) or int(degree.sum(dtype=np.int64)) != sources.size:
        raise GraphFormatError(f"{name}: out_degree must hold one count per vertex, adding up to the "
                               f"{sources.size:,} edges")
    if sources.dtype != np.int32:
        if sources.size and (int(sources.min()) < 0 or int(sources.max()) >= n):
            raise GraphFormatError(f"{name}: in_sources holds ids outside 0..{n - 1}")
        sources = sources.astype(np.int32)
    return HostGraph(n, offsets, sources, degree, name)


@dataclass(frozen=True, eq=False)
class MultiResult:
    """A partitioned run; per iteration the slowest worker's wall time and compute (kernel and update), and
    the exchange (NCCL: its collectives' CUDA events; Dask: the wall time minus the compute)."""
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
                "exchange": self.exchange, "variant": self.variant, "ms per iteration": float(np.median(ms)),
                "min ms": float(ms.min()), "max ms": float(ms.max()),
                "compute ms": float(np.median(self.compute_ms)),
                "exchange ms": float(np.median(self.exchange_ms)),
                "MB exchanged per iteration": self.bytes_per_iteration / 1e6,
                "iterations": self.iterations, "converged": self.converged, "tol": self.tol}


@contextlib.contextmanager
def local_cluster(workers: int | None = None, backend: str = "auto", *, processes: bool | None = None):
    """A Dask cluster on this machine, yielding its Client: one dask-cuda worker per GPU, or ``workers`` (2)
    single-threaded CPU workers; its scratch space a temporary folder, removed on exit."""
    distributed = _require("distributed", "multi-worker PageRank runs on Dask")
    backend = _resolve_backend(backend)
    if backend == "gpu":
        dask_cuda = _require("dask_cuda", "the GPU back end starts one Dask worker per GPU with dask-cuda")
        count = gpu.require_gpu().cuda.runtime.getDeviceCount()
        workers = count if workers is None else int(workers)
        if not 1 <= workers <= count:
            raise ValueError(f"{workers} GPU workers asked for; {count} GPU(s) visible")
    else:
        workers = 2 if workers is None else int(workers)
        if workers < 1:
            raise ValueError(f"workers must be at least 1, got {workers}")
    scratch = tempfile.mkdtemp(prefix="pagerank-dask-")
    # no dashboard; the scheduler's HTTP endpoint on a free port (8787 may be taken by another cluster)
    options = dict(n_workers=workers, threads_per_worker=1, memory_limit=0, dashboard_address=":0",
                   local_directory=scratch, silence_logs=logging.ERROR,
                   scheduler_kwargs={"dashboard": False, "local_directory": scratch})
    try:
        if backend == "gpu":
            cluster = dask_cuda.LocalCUDACluster(**options)
        else:
            cluster = distributed.LocalCluster(processes=bool(processes), **options)
        with cluster, distributed.Client(cluster, direct_to_workers=True) as client:
            client.wait_for_workers(workers, timeout=300)
            yield client
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


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


def _answers(calls) -> list:
    """Wait for actor calls already made (they run at once) and return their results; errors raise here."""
    return [call.result() for call in list(calls)]


def pagerank_multi(graph, workers: int | None = None, *, backend: str = "auto", exchange: str = "auto",
                   variant: str = "pull_hybrid", damping: float = DAMPING, tol: float = 1e-6,
                   max_iter: int = 1000, client=None, dtype=None, free_bytes=None,
                   verbose: bool = True) -> MultiResult:
    """PageRank with the in-CSR split by rows across Dask workers (``client``'s, else a local cluster's):
    "gpu" runs ``variant`` in float32, "cpu" SciPy in float64 or float32; "nccl" falls back to "dask".
    ``free_bytes``: free memory per worker (one number or one each) instead of the workers' answer."""
    damping, tol = check_damping(damping), check_tol(tol)
    if int(max_iter) < 1:
        raise ValueError(f"max_iter must be at least 1, got {max_iter}")
    if exchange not in ("auto",) + EXCHANGES:
        raise ValueError(f"exchange must be 'auto', 'nccl' or 'dask', got {exchange!r}")
    if variant not in PULL_VARIANTS:
        raise ValueError(f"variant {variant!r} cannot run on a partition; these can: "
                         f"{', '.join(PULL_VARIANTS)}")
    hg = host_graph(graph)
    backend = _resolve_backend(backend)
    _require("distributed", "multi-worker PageRank runs on Dask")
    dtype = np.dtype(dtype or (np.float32 if backend == "gpu" else np.float64))
    if dtype not in (np.float32, np.float64) or (backend == "gpu" and dtype != np.float32):
        raise ValueError(f"dtype {dtype} is not offered: the GPU back end runs the course's float32 "
                         "kernels, the CPU back end float32 or float64")
    settings = (backend, exchange, variant, damping, tol, int(max_iter), dtype, free_bytes, verbose)
    if client is None:
        with local_cluster(workers, backend) as own:
            return _run(own, hg, None, *settings)
    return _run(client, hg, workers, *settings)


def _run(client, hg, workers, backend, exchange, variant, damping, tol, max_iter, dtype, free_bytes,
         verbose):
    """Partition, load, iterate and release on ``client``'s first ``workers`` workers."""
    say = print if verbose else (lambda *args, **kwargs: None)
    addresses = worker_addresses(client)
    if workers is not None:
        if not 1 <= int(workers) <= len(addresses):
            raise ValueError(f"{workers} workers asked for; the cluster has {len(addresses)}")
        addresses = addresses[:int(workers)]
    start = time.perf_counter()
    plan = partition_by_edges(hg.in_offsets, len(addresses))
    handles = [client.submit(Partition, backend, actor=True, workers=[w], pure=False) for w in addresses]
    try:
        actors = client.gather(handles)
        free, problems = zip(*_answers(a.probe() for a in actors))
        if free_bytes is not None:
            free = np.broadcast_to(np.asarray(free_bytes, dtype=np.float64), (plan.parts,))
        check_fits(plan, free, backend, dtype.itemsize, hg.name)
        if exchange == "auto":
            exchange = "nccl" if backend == "gpu" else "dask"
        fallback = next((p for p in (*problems, load_nccl()[1]) if p), None) if exchange == "nccl" else None
        if fallback:
            exchange = "dask"
            say(f"NCCL exchange not used: {fallback}. Using the Dask exchange instead.")
        loads = _answers(actor.load(k, plan.bounds, hg.num_vertices, *hg.rows(*plan.range(k)), dtype.str,
                                    variant) for k, actor in enumerate(actors))   # all loaded, then iterate
        setup_s = time.perf_counter() - start
        say(f"{hg.name}: {hg.num_vertices:,} vertices, {hg.num_edges:,} edges on {plan.parts} "
            f"{backend.upper()} worker(s), {exchange} exchange; partitioned and loaded in {setup_s:.1f} s")
        ranks, residuals, wall, compute, communicate = (
            _iterate_nccl(actors, damping, tol, max_iter) if exchange == "nccl"
            else _iterate_dask(actors, loads, damping, tol, max_iter))
    finally:
        with contextlib.suppress(Exception):     # a worker that failed has nothing left to release
            _answers(a.release() for a in client.gather(handles))
        client.cancel(handles)
    residuals = np.asarray(residuals)
    iteration_ms, compute_ms = wall.max(axis=0), compute.max(axis=0)
    exchange_ms = (iteration_ms - compute_ms if communicate is None
                   else communicate[compute.argmax(axis=0), np.arange(compute.shape[1])])
    return MultiResult(ranks, int(residuals.size), residuals, bool(residuals[-1] < tol), backend, exchange,
                       variant if backend == "gpu" else "scipy_csr", plan, iteration_ms, compute_ms,
                       exchange_ms, compute, exchange_bytes(plan, dtype.itemsize), setup_s, hg.name,
                       fallback, tol)


def _iterate_dask(actors, loads, damping, tol, max_iter):
    """The client's loop: every actor gets the others' last slices, steps, returns its numbers and slice."""
    dangling_mass, slices = sum(share for share, _ in loads), [own for _, own in loads]
    residuals, wall, compute = [], [], []
    for _ in range(max_iter):
        start = time.perf_counter()
        others = [[None if j == k else s for j, s in enumerate(slices)] for k in range(len(actors))]
        stats = _answers(actor.step(damping, dangling_mass, mine) for actor, mine in zip(actors, others))
        wall.append(1e3 * (time.perf_counter() - start))
        dangling_mass, change, ms, slices = (list(column) for column in zip(*stats))
        dangling_mass = sum(dangling_mass)
        residuals.append(sum(change))
        compute.append(ms)
        if residuals[-1] < tol:
            break
    ranks = np.concatenate(_answers(a.ranks() for a in actors))
    compute = np.asarray(compute).T
    return ranks, residuals, np.broadcast_to(np.asarray(wall), compute.shape), compute, None


def _iterate_nccl(actors, damping, tol, max_iter):
    """Every actor runs the whole loop, all started at once (NCCL's set-up waits for every rank)."""
    unique_id = load_nccl()[0].get_unique_id()
    runs = _answers(actor.run_nccl(unique_id, len(actors), rank, damping, tol, max_iter)
                    for rank, actor in enumerate(actors))
    return (np.concatenate([r["ranks"] for r in runs]), runs[0]["residuals"],
            *(np.array([r[key] for r in runs]) for key in ("wall_ms", "compute_ms", "exchange_ms")))


def float64_residual(graph, ranks, damping: float = DAMPING) -> float:
    """L1 change one float64 power-iteration step makes to ``ranks``: on the GPU for CuPy graph arrays (a CPU
    check of 300M edges takes too long), else with SciPy."""
    if type(graph.in_offsets).__module__.split(".")[0] == "cupy":
        xp = gpu.require_gpu()
        import cupyx.scipy.sparse as sparse
    else:
        xp, sparse = np, scipy.sparse
    n = int(graph.num_vertices)
    r = xp.asarray(host_array(ranks, "ranks", gpu=xp is not np, ndim=1), dtype=xp.float64)
    if r.shape != (n,):
        raise ArgumentError(f"ranks needs one entry per vertex ({n:,}), got shape {r.shape}")
    degree = xp.asarray(graph.out_degree)
    sources, offsets = xp.asarray(graph.in_sources), xp.asarray(graph.in_offsets)
    if sources.size <= INT32_MAX:          # cuSPARSE and SciPy index with int32 up to 2**31 - 1 entries
        sources, offsets = sources.astype(xp.int32, copy=False), offsets.astype(xp.int32, copy=False)
    contributions = r / xp.maximum(degree, 1) * (degree > 0)
    matrix = sparse.csr_matrix((xp.ones(sources.size, dtype=xp.float64), sources, offsets), shape=(n, n))
    dangling_mass = float((r * (degree == 0)).sum())
    new = damping * (matrix @ contributions) + (damping * dangling_mass + 1.0 - damping) / n
    return float(xp.abs(new - r).sum())


def versions() -> list[str]:
    """What the multi-GPU run depends on, and whether NCCL loads here."""
    lines = []
    for module in ("dask", "distributed", "dask_cuda", "cupy"):
        try:
            lines.append(f"{module} {importlib.import_module(module).__version__}")
        except Exception as error:
            lines.append(f"{module}: not importable ({type(error).__name__}: {error})")
    nccl, problem = load_nccl()
    if problem:
        return lines + [f"NCCL: not available: {problem}"]
    return lines + [f"NCCL: available, version {nccl.get_version()} (CuPy built against "
                    f"{nccl.get_build_version()})"]
