"""Top-k of a rank vector on the GPU, three ways, each giving the k vertex ids (NumPy, best first) by the
course's tie rule: a larger rank first, then the smaller vertex id."""
from __future__ import annotations

import numpy as np

from helpers import kernels
from helpers.core.arguments import ArgumentError, check_integer, host_array
from helpers.measure.gpu import require_gpu

MERGE_K_MAX = 16       # top_k_merge keeps lists of at most this many entries
MERGE_THREADS = 128
MERGE_KERNELS = ("top_k_merge", "top_k_merge_branchy")    # same arguments; the two-list merge differs


def _check(ranks, k):
    """k an integer in 1..n (bools and floats refused) and ranks a 1-D vector; raises ArgumentError."""
    host_array(ranks, "ranks", gpu=True)
    if getattr(ranks, "ndim", None) != 1:
        raise ArgumentError(f"ranks must be a 1-D vector, got shape {getattr(ranks, 'shape', None)}")
    k = check_integer(k, "k")
    if not 1 <= k <= ranks.size:
        raise ArgumentError(f"k must lie between 1 and the number of vertices ({ranks.size}), got {k}")


def by_sort(ranks, k: int) -> np.ndarray:
    """Sort everything by (-rank, id) and keep the first k: O(N log N) work, simplest to trust."""
    cp = require_gpu()
    _check(ranks, k)
    return cp.lexsort(cp.stack([cp.arange(ranks.size), -ranks]))[:k].get()


def by_partition(ranks, k: int) -> np.ndarray:
    """Find the k-th largest value by partition, keep everything above it and the smallest ids equal to it,
    then sort only those k."""
    cp = require_gpu()
    _check(ranks, k)
    threshold = cp.partition(ranks, ranks.size - k)[ranks.size - k]
    above = cp.flatnonzero(ranks > threshold)
    equal = cp.flatnonzero(ranks == threshold)[: k - above.size]
    chosen = cp.concatenate([above, equal])
    order = cp.lexsort(cp.stack([chosen, -ranks[chosen]]))
    return chosen[order].get()


def by_merge(ranks, k: int, blocks: int = 256, kernel: str = "top_k_merge") -> np.ndarray:
    """The course's kernel: per-thread sorted lists merged in a tree per block, then over blocks; ``kernel``:
    ``top_k_merge`` (ternary selects) or ``top_k_merge_branchy`` (if/else), with the same arguments."""
    cp = require_gpu()
    _check(ranks, k)
    if k > MERGE_K_MAX:
        raise ValueError(f"{kernel} keeps at most {MERGE_K_MAX} entries per list, k={k}")
    if kernel not in MERGE_KERNELS:
        raise ValueError(f"kernel must be one of {', '.join(MERGE_KERNELS)}, got {kernel!r}")
    if getattr(ranks, "dtype", None) != np.float32 or not ranks.flags.c_contiguous:
        raise TypeError(f"{kernel} reads float32 ranks from a contiguous CuPy array, got "
                        f"{getattr(ranks, 'dtype', type(ranks).__name__)}: convert with "
                        "ranks.astype(cupy.float32)")
    launch = kernels.compiled(kernel)
    block_r, block_i = cp.empty(blocks * k, dtype=cp.float32), cp.empty(blocks * k, dtype=cp.int32)
    launch((blocks,), (MERGE_THREADS,), (ranks, None, np.int32(ranks.size), np.int32(k), block_r, block_i))
    out_r, out_i = cp.empty(k, dtype=cp.float32), cp.empty(k, dtype=cp.int32)
    launch((1,), (MERGE_THREADS,), (block_r, block_i, np.int32(block_r.size), np.int32(k), out_r, out_i))
    return out_i.get()
