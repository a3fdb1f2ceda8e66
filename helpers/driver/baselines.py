"""The baselines every kernel is compared with, each called as a careful user would: pure Python, NumPy and
Numba on the CPU; cuSPARSE prepared once, cupyx.scipy.sparse and PyTorch's CSR SpMV on the GPU."""
from __future__ import annotations

import warnings
from functools import lru_cache

import numpy as np

from helpers.core.arguments import host_array
from helpers.core.reference import DAMPING
from helpers.measure.cpu import cpu_description
from helpers.measure.gpu import require_gpu


def python_step(graph, ranks, d=DAMPING):
    """The pure-Python baseline: one interpreted addition per in-link."""
    ranks = np.asarray(host_array(ranks, "ranks", ndim=1))
    offsets, sources, degree = graph.in_offsets.tolist(), graph.in_sources.tolist(), graph.out_degree.tolist()
    r = ranks.tolist()
    contrib = [r[u] / degree[u] if degree[u] else 0.0 for u in range(len(r))]
    base = (d * sum(r[u] for u in range(len(r)) if degree[u] == 0) + 1 - d) / len(r)
    return [d * sum(contrib[sources[k]] for k in range(offsets[v], offsets[v + 1])) + base
            for v in range(len(r))]


def numpy_step(graph, ranks, d=DAMPING):
    """The vectorised NumPy baseline: gather per edge, scatter-add per target with bincount."""
    ranks = np.asarray(host_array(ranks, "ranks", ndim=1))
    contrib = np.divide(ranks, graph.out_degree, out=np.zeros_like(ranks), where=graph.out_degree > 0)
    targets = np.repeat(np.arange(graph.num_vertices), graph.in_degree)
    pulled = np.bincount(targets, weights=contrib[graph.in_sources], minlength=graph.num_vertices)
    return d * pulled + (d * ranks[graph.dangling].sum() + 1 - d) / graph.num_vertices


@lru_cache(maxsize=None)
def _numba_kernel():
    import numba

    @numba.njit(parallel=True, cache=False)
    def iteration(in_offsets, in_sources, out_degree, rank, new, d):
        n = rank.size
        contrib = np.empty(n)
        dangling = 0.0
        for u in numba.prange(n):
            if out_degree[u] > 0:
                contrib[u] = rank[u] / out_degree[u]
            else:
                contrib[u] = 0.0
                dangling += rank[u]
        base = (d * dangling + 1.0 - d) / n
        change = 0.0
        for v in numba.prange(n):
            total = 0.0
            for k in range(in_offsets[v], in_offsets[v + 1]):
                total += contrib[in_sources[k]]
            new[v] = d * total + base
            change += abs(new[v] - rank[v])
        return change

    return iteration


def numba_parallel(graph):
    """(run, description): run() does one float64 iteration on every core (Numba) from the same ranks each
    time; (None, why) without Numba."""
    try:
        import numba
    except ImportError:
        return None, "Numba is not installed: pip install numba (Colab has it)"
    kernel = _numba_kernel()
    rank = np.full(graph.num_vertices, 1.0 / graph.num_vertices)
    new = np.empty_like(rank)
    args = (graph.in_offsets, graph.in_sources, graph.out_degree, rank, new, DAMPING)
    kernel(*args)                                   # compiles (seconds), then warm
    return (lambda: kernel(*args)), f"Numba, {numba.get_num_threads()} threads on {cpu_description()}"


class PreparedSpMV:
    """cuSPARSE's SpMV as a careful user calls it: descriptors and buffer made once, each call the SpMV alone
    (y = A x), on the current stream."""

    def __init__(self, dg, x, y):
        cp = require_gpu()
        # deferred, like every CuPy import: CuPy is optional
        from cupy._core import _dtype
        from cupyx import cusparse

        lib = cp.cuda.cusparse                   # cupy_backends.cuda.libs.cusparse, loaded on first use
        self._cp, self._lib, self.x, self.y, self.matrix = cp, lib, x, y, dg.in_matrix
        self.handle = cp.cuda.device.get_cusparse_handle()
        self.alpha, self.beta = np.array(1.0, np.float32), np.array(0.0, np.float32)
        self.desc_a = cusparse.SpMatDescriptor.create(self.matrix)
        self.desc_x, self.desc_y = cusparse.DnVecDescriptor.create(x), cusparse.DnVecDescriptor.create(y)
        alg = getattr(lib, "CUSPARSE_SPMV_ALG_DEFAULT", getattr(lib, "CUSPARSE_MV_ALG_DEFAULT", 0))
        # spMV's arguments but the buffer: the arrays and descriptors above keep their pointers valid
        self.args = (self.handle, lib.CUSPARSE_OPERATION_NON_TRANSPOSE, self.alpha.ctypes.data,
                     self.desc_a.desc, self.desc_x.desc, self.beta.ctypes.data, self.desc_y.desc,
                     _dtype.to_cuda_dtype(np.dtype(np.float32)), alg)
        self.buffer = cp.empty(max(int(lib.spMV_bufferSize(*self.args)), 1), dtype=cp.int8)

    def __call__(self):
        self._lib.setStream(self.handle, self._cp.cuda.get_current_stream().ptr)
        self._lib.spMV(*self.args, self.buffer.data.ptr)


def torch_spmv(dg, x):
    """PyTorch's CSR SpMV over the same arrays (shared through DLPack, no copy), or (None, why)."""
    try:
        import torch
    except ImportError:
        return None, "PyTorch is not installed"
    except Exception as error:                  # noqa: BLE001: a broken install fails in its own import
        return None, f"PyTorch cannot be imported here ({type(error).__name__}: {str(error)[:80]})"
    if not torch.cuda.is_available():
        return None, "PyTorch sees no CUDA GPU (a CPU-only build?)"
    crow, col = torch.from_dlpack(dg.in_offsets), torch.from_dlpack(dg.in_sources)
    values = torch.ones(dg.num_edges, dtype=torch.float32, device=crow.device)
    # DeviceGraph checked the arrays, so torch's check is skipped; its notices (CSR "is in beta", and in 2.11
    # checks "implicitly disabled" even when said explicitly) say nothing about this call
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*[Ss]parse CSR tensor support is in beta.*")
        warnings.filterwarnings("ignore", message=".*[Ss]parse invariant checks are implicitly disabled.*")
        matrix = torch.sparse_csr_tensor(crow, col, values, size=(dg.num_vertices, dg.num_vertices),
                                         check_invariants=False)
    vector = torch.from_dlpack(x)
    return (lambda: torch.mv(matrix, vector)), f"PyTorch {torch.__version__} torch.mv on a sparse CSR tensor"


def cupyx_iteration(dg):
    """A whole PageRank iteration with cupyx.scipy.sparse alone (the matrix holds 1 / out-degree); nothing in
    it waits for the host."""
    cp = require_gpu()
    import cupyx.scipy.sparse as sparse

    n = dg.num_vertices
    weights = 1.0 / dg.out_degree[dg.in_sources].astype(cp.float32)
    matrix = sparse.csr_matrix((weights, dg.in_sources, dg.in_offsets), shape=(n, n))
    dangling = (dg.out_degree == 0).astype(cp.float32)
    rank = cp.full(n, 1.0 / n, dtype=cp.float32)

    def run():
        new = DAMPING * (matrix @ rank) + (DAMPING * (rank * dangling).sum() + (1 - DAMPING)) / n
        return cp.abs(new - rank).sum()

    return run
