"""Graphs generated and laid out on the GPU with CuPy: R-MAT and linked copies of the web-like stand-in."""
from types import SimpleNamespace

import numpy as np

from helpers.core.arguments import check_seed
from helpers.core.generators import web_graph
from helpers.driver.device import in_csr
from helpers.measure.gpu import ensure_fits, require_gpu


def rmat_device(num_vertices: int, num_edges: int, seed: int = 0, *, a: float = 0.5, b: float = 0.2,
                c: float = 0.2, batch: int = 1 << 26, name: str | None = None):
    """An R-MAT graph made on the GPU (seconds for 10**8 edges): exactly ``num_edges`` distinct edges, no
    self-loops, ids permuted as in ``rmat_graph``; its in-CSR and out-degrees in a graph-like namespace."""
    seed = check_seed(seed)
    cp = require_gpu()
    n, m = int(num_vertices), int(num_edges)
    if min(a, b, c, 1.0 - a - b - c) < 0:
        raise ValueError(f"R-MAT probabilities must be non-negative and sum to at most 1: {a}, {b}, {c}")
    if not 1 < n < 2**31 or not 0 < m <= min(n * (n - 1), 2**31 - 1):
        raise ValueError(f"cannot make {m:,} distinct edges without self-loops on {n:,} vertices "
                         "(int32 ids and edge indices)")
    ensure_fits(32 * m + 8 * min(batch, 2 * m) * 3 + 16 * n, f"generating an R-MAT graph of {m:,} edges")
    rng = cp.random.default_rng(seed)
    scale = max(1, int(np.ceil(np.log2(n))))
    keys = cp.empty(0, dtype=cp.int64)
    while keys.size < m:
        size = min(batch, int((m - keys.size) * 1.15) + 1024)
        rows = cp.zeros(size, dtype=cp.int64)
        cols = cp.zeros(size, dtype=cp.int64)
        for _ in range(scale):                    # one quadrant of the adjacency matrix per level
            r = rng.random(size, dtype=cp.float32)
            cp.left_shift(rows, 1, out=rows)
            cp.left_shift(cols, 1, out=cols)
            rows |= r >= a + b
            cols |= (r >= a) ^ (r >= a + b) ^ (r >= a + b + c)
        ok = (rows < n) & (cols < n) & (rows != cols)
        keys = cp.unique(cp.concatenate([keys, rows[ok] * n + cols[ok]]))
        del rows, cols, r, ok
    keys = cp.sort(keys[cp.argsort(rng.random(keys.size))[:m]])      # exactly m, a random subset
    source_label, target_label = cp.argsort(rng.random(n)), cp.argsort(rng.random(n))   # permutations
    sources, targets = source_label[keys // n], target_label[keys % n]
    del keys
    out_degree = cp.bincount(sources, minlength=n).astype(cp.int32)
    in_offsets, in_sources = in_csr(targets, sources, n)
    del sources, targets
    return SimpleNamespace(num_vertices=n, num_edges=m, in_offsets=in_offsets, in_sources=in_sources,
                           out_degree=out_degree,
                           name=name or f"R-MAT on the GPU (n={n:,}, m={m:,}, seed={seed})")


def web_like_device(copies: int, seed: int = 0, *, cross_share: float = 0.25, base=None):
    """``copies`` copies of the web-like stand-in side by side, built on the GPU, a share ``cross_share`` of
    links sent to the same page of another copy: its degrees and crawl-like locality, at any size."""
    seed = check_seed(seed)
    cp = require_gpu()
    base = base if base is not None else web_graph(seed=seed)
    n, e, copies = base.num_vertices, base.num_edges, int(copies)
    if copies < 1 or copies * n > 2**31 - 1 or copies * e > 2**31 - 1:
        raise ValueError(f"{copies} copies of {n:,} vertices and {e:,} edges pass int32 ids")
    ensure_fits(28 * copies * e + 12 * copies * n, f"{copies} copies of a web-like graph")
    rng = cp.random.default_rng(seed)
    targets = cp.repeat(cp.arange(n, dtype=cp.int64), cp.asarray(np.diff(base.in_offsets)))
    sources = cp.asarray(base.in_sources, dtype=cp.int64)
    copy = cp.repeat(cp.arange(copies, dtype=cp.int64), e)
    moved = rng.random(copies * e) < cross_share
    target_copy = cp.where(moved, (copy + 1 + (rng.random(copies * e) * (copies - 1)).astype(cp.int64))
                           % copies, copy) if copies > 1 else copy
    big_n = copies * n
    keys = cp.sort((target_copy * n + cp.tile(targets, copies)) * big_n
                   + copy * n + cp.tile(sources, copies))
    del moved, target_copy, copy
    in_offsets = cp.zeros(big_n + 1, dtype=cp.int32)
    cp.cumsum(cp.bincount(keys // big_n, minlength=big_n), out=in_offsets[1:])
    in_sources = (keys % big_n).astype(cp.int32)
    del keys
    out_degree = cp.tile(cp.asarray(base.out_degree, dtype=cp.int32), copies)
    return SimpleNamespace(num_vertices=big_n, num_edges=copies * e, in_offsets=in_offsets,
                           in_sources=in_sources, out_degree=out_degree,
                           name=f"web-like graph, {copies} linked copies of the stand-in "
                                f"(n={big_n:,}, m={copies * e:,}, seed={seed})")
