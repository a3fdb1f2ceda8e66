"""What runs on a Dask worker of ``helpers.multigpu``: its share of a run, kept between calls in an actor
(``probe`` and ``load`` once, then ``step`` every iteration or ``run_nccl`` once)."""
from __future__ import annotations

import math
import time

import numpy as np
import scipy.sparse as sp

from helpers import kernels
from helpers.core.graph import available_host_bytes
from helpers.core.reference import DAMPING
from helpers.driver import VARIANTS
from helpers.measure import gpu


def load_nccl() -> tuple:
    """(CuPy's NCCL binding, None) where it loads and answers here, else (None, why not)."""
    try:
        from cupy.cuda import nccl
    except Exception as error:   # CuPy missing or broken
        return None, f"CuPy's NCCL module cannot be imported ({error})"
    if not getattr(nccl, "available", False):
        return None, ("CuPy cannot load the NCCL library (install NCCL, e.g. the nvidia-nccl wheel of your "
                      "CUDA version)")
    try:
        nccl.get_version()
    except Exception as error:
        return None, f"NCCL does not answer ({error})"
    return nccl, None


def _scipy_spmv(part, x, y):
    y[...] = part.matrix @ x


class Partition:
    """One worker's rows start..stop-1 of N, its in-links and buffers (NumPy or CuPy), with the attributes a
    variant's ``spmv`` reads; ``x`` is the full contribution vector (its own slice, the rest exchanged)."""

    def __init__(self, backend: str):
        self.backend, self.xp = backend, gpu.require_gpu() if backend == "gpu" else np

    def probe(self):
        """(free bytes where this worker allocates, why NCCL cannot run here or None)."""
        if self.backend == "gpu":
            return gpu.free_bytes(), load_nccl()[1]
        return available_host_bytes() or math.inf, "NCCL moves GPU memory; the CPU back end has none"

    def load(self, index, bounds, n, offsets, sources, degree, dtype, variant):
        """Take part ``index`` (offsets rebased to 0, sources global ids), warm up with one step into scratch;
        returns the start's dangling-mass share and this worker's contributions."""
        xp, self.index, self.bounds, self.n = self.xp, index, np.asarray(bounds), int(n)
        self.start, self.stop = int(bounds[index]), int(bounds[index + 1])
        self.num_vertices = rows = self.stop - self.start
        self.dtype = np.dtype(dtype)
        self.in_offsets, self.in_sources = xp.asarray(offsets), xp.asarray(sources)
        degree = np.asarray(degree)
        self.safe_degree, self.has_out, self.dangling = (xp.asarray(a.astype(self.dtype)) for a in (
            np.maximum(degree, 1), degree > 0, degree == 0))
        if self.backend == "gpu":
            self.spmv = VARIANTS[variant].spmv
            for name in VARIANTS[variant].kernels:
                kernels.compiled(name)
        else:
            self.spmv = _scipy_spmv
            ones = np.ones(len(sources), self.dtype)
            self.matrix = sp.csr_matrix((ones, sources, offsets), shape=(rows, n))
        self.rank = xp.full(rows, 1.0 / n, dtype=self.dtype)
        self.new, self.pulled, self.tmp = (xp.empty(rows, dtype=self.dtype) for _ in range(3))
        self.x = xp.zeros(n, dtype=self.dtype)
        self._contributions(self.rank, self.x[self.start:self.stop])
        self._step(DAMPING, 0.0, into=self.pulled)     # warm-up: every kernel a step launches, into scratch
        dangling = float((self.rank * self.dangling).sum(dtype=np.float64))
        return dangling, self._host(self.x[self.start:self.stop])

    def _contributions(self, rank, out):
        self.xp.divide(rank, self.safe_degree, out=out)
        self.xp.multiply(out, self.has_out, out=out)

    def _step(self, damping, dangling_mass, into=None):
        """One iteration on this worker's rows, contributions into its slice of ``x`` (or ``into``); returns
        the new dangling mass and the L1 change, float64 sums on the device."""
        xp = self.xp
        if self.num_vertices:
            self.spmv(self, self.x, self.pulled)
        xp.multiply(self.pulled, self.dtype.type(damping), out=self.new)
        xp.add(self.new, self.dtype.type((damping * dangling_mass + 1.0 - damping) / self.n), out=self.new)
        xp.abs(xp.subtract(self.new, self.rank, out=self.tmp), out=self.tmp)
        change = self.tmp.sum(dtype=np.float64)
        dangling = xp.multiply(self.new, self.dangling, out=self.tmp).sum(dtype=np.float64)
        if into is not None:
            self._contributions(self.new, into)
        else:
            self._contributions(self.new, self.x[self.start:self.stop])
            self.rank, self.new = self.new, self.rank
        return dangling, change

    def _host(self, array) -> np.ndarray:
        """A host copy of one of this worker's arrays (never a view: the client hands it on)."""
        return array.get() if self.backend == "gpu" else array.copy()

    def step(self, damping, dangling_mass, slices):
        """One iteration, Dask exchange, after copying in the others' ``slices`` (None for its own): (dangling
        share, L1 change share, compute ms, its new contributions)."""
        for k, values in enumerate(slices):
            if k != self.index and values is not None:
                self.x[int(self.bounds[k]):int(self.bounds[k + 1])] = self.xp.asarray(values)
        if self.backend == "gpu":
            self.xp.cuda.get_current_stream().synchronize()
        start = time.perf_counter()
        dangling, change = (float(v) for v in self._step(damping, dangling_mass))     # waits for the GPU
        return dangling, change, 1e3 * (time.perf_counter() - start), self._host(self.x[self.start:self.stop])

    def ranks(self) -> np.ndarray:
        return self._host(self.rank)

    def run_nccl(self, unique_id, size, rank, damping, tol, max_iter):
        """The whole run on this GPU, NCCL exchange: SPMD, every worker runs this loop with its own rank."""
        cp, nccl = self.xp, load_nccl()[0]
        cp.cuda.Device().synchronize()           # the set-up ran on the default stream
        # CuPy 14 gives (and takes) the id as bytes, earlier CuPy a tuple of ints (Dask may make it a list)
        unique_id = unique_id if isinstance(unique_id, bytes) else tuple(unique_id)
        comm = nccl.NcclCommunicator(size, unique_id, rank)
        stream, events = cp.cuda.Stream(non_blocking=True), [cp.cuda.Event() for _ in range(3)]
        out = dict(residuals=[], compute_ms=[], exchange_ms=[], wall_ms=[])
        try:
            with stream:
                scalars = cp.asarray([float((self.rank * self.dangling).sum(dtype=np.float64)), 0.0])
                scalars[1] = scalars[1]            # loads the copy kernel the loop uses, before timing
                self._allgather(comm, nccl, scalars, stream)       # the starting vector and dangling mass
                dangling_mass = float(scalars.get(stream=stream)[0])
                for _ in range(max_iter):
                    start = time.perf_counter()
                    events[0].record(stream)
                    scalars[0], scalars[1] = self._step(damping, dangling_mass)
                    events[1].record(stream)
                    self._allgather(comm, nccl, scalars, stream)
                    events[2].record(stream)
                    dangling_mass, change = (float(v) for v in scalars.get(stream=stream))   # waits
                    out["wall_ms"].append(1e3 * (time.perf_counter() - start))
                    out["compute_ms"].append(cp.cuda.get_elapsed_time(events[0], events[1]))
                    out["exchange_ms"].append(cp.cuda.get_elapsed_time(events[1], events[2]))
                    out["residuals"].append(change)
                    if change < tol:
                        break
                stream.synchronize()
            return dict(out, ranks=self.ranks())
        finally:
            comm.destroy()

    def _allgather(self, comm, nccl, scalars, stream):
        """All-gather of the slices (one broadcast per owner in one group: NCCL gathers only equal slices) and
        all-reduce of the two scalars, on ``stream``."""
        item, base = self.x.itemsize, self.x.data.ptr
        nccl.groupStart()
        for k in range(len(self.bounds) - 1):
            a, b = int(self.bounds[k]), int(self.bounds[k + 1])
            if b > a:                                     # every rank skips the same empty parts
                comm.broadcast(base + a * item, base + a * item, b - a, nccl.NCCL_FLOAT32, k, stream.ptr)
        comm.allReduce(scalars.data.ptr, scalars.data.ptr, 2, nccl.NCCL_FLOAT64, nccl.NCCL_SUM, stream.ptr)
        nccl.groupEnd()

    def release(self):
        """Drop every array; on the GPU hand the memory back to the device (CuPy keeps freed blocks)."""
        backend, xp = self.backend, self.xp
        self.__dict__.clear()
        self.backend, self.xp = backend, xp
        if backend == "gpu":
            xp.get_default_memory_pool().free_all_blocks()
