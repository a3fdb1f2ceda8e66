"""Vertex orders, so that the contributions a warp gathers together sit together in memory: ``given``,
``random``, ``out-degree`` (most-gathered sources first), ``degree groups`` (the same by power-of-two buckets,
stable), ``in-degree`` (hubs side by side) and ``rcm`` (SciPy's reverse Cuthill-McKee, on the CPU)."""
from __future__ import annotations

import time
from types import SimpleNamespace

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import reverse_cuthill_mckee

from helpers.core.arguments import check_seed
from helpers.driver.device import DeviceGraph, in_csr
from helpers.measure.gpu import ensure_fits, require_gpu

ORDERS = ("given", "random", "out-degree", "degree groups", "in-degree", "rcm")


def permutation(dg, how: str, seed: int = 0):
    """The new order as a CuPy array: ``perm[i]`` is the old id of the vertex that becomes vertex i."""
    seed = check_seed(seed)
    cp = require_gpu()
    n = dg.num_vertices
    ids = cp.arange(n, dtype=cp.int64)
    if how == "given":
        return ids
    if how == "random":
        return cp.argsort(cp.random.default_rng(seed).random(n)).astype(cp.int64)
    if how in ("out-degree", "in-degree", "degree groups"):
        degree = (dg.out_degree if how != "in-degree" else dg.in_degree).astype(cp.int64)
        if how == "degree groups":
            degree = cp.floor(cp.log2(degree + 1.0)).astype(cp.int64)          # buckets 0, 1, 2-3, 4-7, ...
        key = (int(degree.max()) - degree) * n + ids                           # descending, stable
        return cp.sort(key) % n
    if how == "rcm":
        offsets, sources = dg.in_offsets.get(), dg.in_sources.get()
        matrix = sp.csr_matrix((np.ones(sources.size, dtype=np.int8), sources, offsets), shape=(n, n))
        symmetric = (matrix + matrix.T).tocsr()
        return cp.asarray(reverse_cuthill_mckee(symmetric, symmetric_mode=True).astype(np.int64))
    raise ValueError(f"unknown order {how!r}; known: {', '.join(ORDERS)}")


def renumber(dg, perm, name: str | None = None):
    """The same graph with vertex perm[i] renamed i, laid out again on the GPU (a sort of the edges)."""
    cp = require_gpu()
    n, e = dg.num_vertices, dg.num_edges
    ensure_fits(32 * e + 16 * n, f"renumbering {dg.name}")
    new_id = cp.empty(n, dtype=cp.int64)
    new_id[perm] = cp.arange(n, dtype=cp.int64)
    sources, targets = new_id[dg.in_sources], new_id[dg.in_targets]
    in_offsets, in_sources = in_csr(targets, sources, n)
    del sources, targets
    arrays = SimpleNamespace(num_vertices=n, in_offsets=in_offsets, in_sources=in_sources,
                             out_degree=dg.out_degree[perm].astype(cp.int32), name=name or dg.name)
    return DeviceGraph(arrays)


def reorder(dg, how: str, seed: int = 0):
    """(the renumbered DeviceGraph, seconds it took to compute the order and lay the graph out again)."""
    seed = check_seed(seed)
    cp = require_gpu()
    cp.cuda.get_current_stream().synchronize()
    start = time.perf_counter()
    perm = permutation(dg, how, seed)
    graph = dg if how == "given" else renumber(dg, perm, name=f"{dg.name}, {how} order")
    cp.cuda.get_current_stream().synchronize()
    return graph, time.perf_counter() - start
