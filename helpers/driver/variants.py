"""The variants: each fills ``pulled`` (the sum over in-links) from x (ranks or contributions) with the
course's kernels; ``VARIANTS`` maps names to them (``iteration`` registers the whole-iteration ones)."""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from typing import Callable

import numpy as np

from helpers import kernels
from helpers.driver.device import BLOCK, blocks_for, segment_size
from helpers.measure.gpu import require_gpu


def i32(value: int):
    """A kernel's int argument: an explicit np.int32, as every course kernel takes."""
    return np.int32(value)


def _vector(x, n: int, what: str):
    """Refuse what a kernel would misread: not float32, not contiguous, too short."""
    if getattr(x, "dtype", None) != np.float32 or not x.flags.c_contiguous or x.size < n:
        raise TypeError(f"{what} must be a contiguous float32 CuPy array of at least {n:,} entries, got "
                        f"{getattr(x, 'dtype', type(x).__name__)} of shape {getattr(x, 'shape', '?')}")
    return x


def _pull_thread(dg, x, y):
    kernels.compiled("pull_thread")(blocks_for(dg.num_vertices), (BLOCK,),
                                    (dg.in_offsets, dg.in_sources, dg.out_degree, x, y, i32(dg.num_vertices)))


def _scan_naive(dg, x, y):
    out_offsets, out_targets = dg.out_csr
    kernels.compiled("scan_naive")(blocks_for(dg.num_vertices), (BLOCK,),
                                   (out_offsets, out_targets, dg.out_degree, x, y, i32(dg.num_vertices)))


def _push_atomic(dg, x, y):
    y.fill(0)
    out_offsets, out_targets = dg.out_csr
    kernels.compiled("push_atomic")(blocks_for(dg.num_vertices), (BLOCK,),
                                    (out_offsets, out_targets, x, y, i32(dg.num_vertices)))


def pull(dg, x, y, name: str, threads_per_vertex: int = 1, shared_mem: int = 0, extra: tuple = ()):
    """Launch ``name``, a kernel that takes (in_offsets, in_sources, x, pulled, n, *extra)."""
    kernels.compiled(name)(blocks_for(threads_per_vertex * dg.num_vertices), (BLOCK,),
                           (dg.in_offsets, dg.in_sources, x, y, i32(dg.num_vertices), *extra),
                           shared_mem=shared_mem)


def pull_launcher(name: str, threads_per_vertex: int = 1, shared_mem: int = 0, extra: tuple = ()):
    """``pull`` of kernel ``name`` as a launcher (dg, x, y)."""
    return partial(pull, name=name, threads_per_vertex=threads_per_vertex, shared_mem=shared_mem, extra=extra)


def _pull_interleaved(dg, x, y):
    kernels.compiled("pull_interleaved")(blocks_for(dg.num_vertices), (BLOCK,),
                                         (dg.in_offsets, dg.in_edges, x, y, i32(dg.num_vertices)))


def pull_hybrid(dg, x, y, threshold: int = 32):
    """pull_hybrid with a given threshold (lecture 13 sweeps it)."""
    pull(dg, x, y, "pull_hybrid", extra=(i32(threshold),))


def pull_binned(dg, x, y):
    """Three launches, one per degree bin (lecture 14 shows this launch pattern inline)."""
    light, medium, heavy = dg.degree_bins
    common = (dg.in_offsets, dg.in_sources, x, y)
    if light.size:
        kernels.compiled("pull_binned", "pull_bin_thread")(blocks_for(light.size), (BLOCK,),
                                                           (light, i32(light.size), *common))
    if medium.size:
        kernels.compiled("pull_binned", "pull_bin_warp")(blocks_for(32 * medium.size), (BLOCK,),
                                                         (medium, i32(medium.size), *common))
    if heavy.size:
        kernels.compiled("pull_binned", "pull_bin_block")((heavy.size,), (BLOCK,),
                                                          (heavy, i32(heavy.size), *common))


def _coo_atomic(dg, x, y):
    y.fill(0)
    kernels.compiled("coo_atomic")(blocks_for(dg.num_edges), (BLOCK,),
                                   (dg.in_sources, dg.in_targets, x, y, i32(dg.num_edges)))


def coo_cumsum(dg, x, y):
    """Per-edge gather, ONE float64 prefix sum over all edges, differences at the row offsets: a segmented
    sum by subtraction, whose rounding grows with the running total."""
    cp = require_gpu()
    running = cp.concatenate([cp.zeros(1), cp.cumsum(x[dg.in_sources], dtype=cp.float64)])
    y[...] = running[dg.in_offsets[1:]] - running[dg.in_offsets[:-1]]


def _cusparse(dg, x, y):
    y[...] = dg.in_matrix @ x


def pull_segments(dg, x, y, vertices_per_segment: int | None = None):
    """y zeroed (a memset), then one pull_segmented launch per source segment, each adding into y."""
    y.fill(0)
    for rows, offsets, sources in dg.segments(vertices_per_segment or segment_size(dg)):
        kernels.compiled("pull_segmented")(blocks_for(rows.size), (BLOCK,),
                                           (rows, i32(rows.size), offsets, sources, x, y, i32(32)))


def half_spmv(dg, x, y, storage: str = "float16"):
    """Contributions stored in 16 bits, added in float32 (lecture 40): float16's scale is picked on
    the GPU from the largest contribution, so no value overflows; bfloat16 has float32's range."""
    scale, half = dg.half_buffers
    n = dg.num_vertices
    pull = (dg.in_offsets, dg.in_sources, half, scale, y, i32(n))
    if storage == "float16":
        kernels.compiled("to_half", "half_scale")((1,), (1,), (x.max(), scale))
        kernels.compiled("to_half", "to_f16")(blocks_for(n), (BLOCK,), (x, half, i32(n), scale))
        kernels.compiled("pull_half", "pull_f16")(blocks_for(n), (BLOCK,), pull)
    else:
        scale.fill(1.0)
        kernels.compiled("to_half", "to_bf16")(blocks_for(n), (BLOCK,), (x, half, i32(n)))
        kernels.compiled("pull_half", "pull_bf16")(blocks_for(n), (BLOCK,), pull)


@dataclass(frozen=True)
class Variant:
    name: str
    reads: str                   # "ranks" (divides by the out-degree itself) or "contributions"
    spmv: Callable | None = field(repr=False)    # fills pulled; None for a whole-iteration variant
    kernels: tuple[str, ...]     # the .cu kernel files it launches (none for library/CuPy-only variants)
    deterministic: bool = True   # atomics make the rounding depend on the order of additions
    max_vertices: int | None = None
    precision: float = 2.0**-24  # unit roundoff of what the kernel stores and adds (float32)
    iteration: type | None = field(default=None, repr=False)   # the class that runs a whole-iteration variant

    def __call__(self, dg, x, y):
        """Launch the variant's sum over in-links: pulled (y) from x, both checked float32 vectors."""
        if self.spmv is None:
            raise TypeError(f"{self.name} runs whole iterations; it has no separate sum over in-links")
        self.spmv(dg, _vector(x, dg.num_vertices, "x"), _vector(y, dg.num_vertices, "pulled"))


VARIANTS: dict[str, Variant] = {}


def register(v: Variant) -> Variant:
    VARIANTS[v.name] = v
    return v


for _v in [
    Variant("pull_thread", "ranks", _pull_thread, ("pull_thread",)),
    Variant("scan_naive", "ranks", _scan_naive, ("scan_naive",), max_vertices=50_000),
    Variant("push_atomic", "contributions", _push_atomic, ("push_atomic",), deterministic=False),
    Variant("pull_contrib", "contributions", pull_launcher("pull_contrib"), ("pull_contrib",)),
    Variant("pull_interleaved", "ranks", _pull_interleaved, ("pull_interleaved",)),
    *[Variant(name, "contributions", pull_launcher(name), (name,))
      for name in ("pull_contrib_kahan", "pull_contrib_f64")],
    Variant("pull_warp", "contributions", pull_launcher("pull_warp", threads_per_vertex=32), ("pull_warp",)),
    *[Variant(f"pull_subwarp_{w}", "contributions", pull_launcher("pull_subwarp", w, extra=(i32(w),)),
              ("pull_subwarp",)) for w in (4, 8, 16)],
    Variant("pull_hybrid", "contributions", pull_hybrid, ("pull_hybrid",)),
    Variant("pull_shared_tile", "contributions", pull_launcher("pull_shared_tile", shared_mem=BLOCK * 4),
            ("pull_shared_tile",)),
    Variant("pull_binned", "contributions", pull_binned, ("pull_binned",)),
    Variant("pull_segmented", "contributions", pull_segments, ("pull_segmented",)),
    Variant("coo_atomic", "contributions", _coo_atomic, ("coo_atomic",), deterministic=False),
    Variant("coo_cumsum", "contributions", coo_cumsum, ()),
    # cuSPARSE's SpMV changed its last bits between two runs on an H100: not deterministic
    Variant("cusparse", "contributions", _cusparse, (), deterministic=False),
    Variant("pull_f16", "contributions", partial(half_spmv, storage="float16"), ("to_half", "pull_half"),
            precision=2.0**-11),
    Variant("pull_bf16", "contributions", partial(half_spmv, storage="bfloat16"), ("to_half", "pull_half"),
            precision=2.0**-8),
]:
    register(_v)


def variant(name_or_variant) -> Variant:
    """The Variant of a name (or the Variant itself); an unknown name is answered with the known ones."""
    if isinstance(name_or_variant, Variant):
        return name_or_variant
    try:
        return VARIANTS[name_or_variant]
    except (KeyError, TypeError):
        raise KeyError(f"unknown variant {name_or_variant!r}; known: {', '.join(VARIANTS)}") from None


def variants_for(num_vertices: int, *, sixteen_bit: bool = False) -> list[str]:
    """Every variant that may run on a graph of this size; the 16-bit ones only when asked (lecture 40)."""
    return [name for name, v in VARIANTS.items() if (not v.max_vertices or num_vertices <= v.max_vertices)
            and (sixteen_bit or v.precision == 2.0**-24)]
