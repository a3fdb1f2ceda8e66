"""The GPU checker of exercise 40, a pull over 16-bit contributions: ``pull_bfloat16`` reads bfloat16
values (as ``unsigned short``), widens each to float32 and adds in float32.

Two kinds of input. Exact: the contributions are small multiples of 2**-24 with at most 8 significant bits,
so bfloat16 holds them exactly and every float32 sum is exact in any order: the sums are compared bit for
bit, and a value read in the wrong format, converted as an integer, or a sum kept in 16 bits is named.
Rounded: random float32 contributions, rounded to bfloat16 by the checker (to nearest, ties to even); the
sums must be within the format's precision of float64, and within float32's rounding of the course's
``pull_bf16`` (``helpers/kernels/pull_half.cu``) on the same 16-bit values.
"""
from __future__ import annotations

import numpy as np

from helpers import kernels
from helpers.checks.device import (
    BLOCK, PAD, PAD_UNITS, UNIT, DeviceCase, Inputs, blocks, check_sums, gpu_graphs, output, padded, several,
    shared_changed)
from helpers.checks.gpu import (
    KERNELS, checker, compiled, graph_inputs, grids, launched, launches, own_context, probe_launch)
from helpers.checks.gpu_update import SEVERAL_THREADS
from helpers.checks.limits import GPU_TIME_LIMIT
from helpers.checks.report import Report, Wrong, fresh_seed, random_ranks, worst_vertex

__all__ = ["check_pull_bfloat16"]

SPEC = KERNELS["check_pull_bfloat16"]
FORMAT = 2.0 ** -8          # bfloat16's largest relative rounding error (half a unit in its 8th bit)
ADD = 2.0 ** -24            # float32's, per addition
FLOAT16_READ = ("the 16-bit values were read as IEEE float16 (5 exponent bits, 10 of significand), not as "
                "bfloat16: a bfloat16 is the top half of a float32 (its sign, 8 exponent bits and 7 "
                "significand bits), so widen it by moving its bits 16 places up: "
                "__uint_as_float((unsigned int)h << 16)")
INTEGER_READ = ("the 16-bit pattern was converted as an integer: (float)h turns the bfloat16 1.0 (bits "
                "0x3F80) into 16,256; reinterpret the bits instead, __uint_as_float((unsigned int)h << 16)")
NOT_SHIFTED = ("the bits were not shifted: __uint_as_float(h) puts the 16 bits at the bottom of a float32, "
               "a tiny subnormal number; a bfloat16 is the top half of a float32: shift by 16 first")
ALL_ZERO = ("every sum is 0: either nothing was added, or the bits were not shifted: without the shift, "
            "__uint_as_float(h) is a subnormal number (below 1.2e-38), which GPU arithmetic may flush to "
            "zero; a bfloat16 is the top half of a float32: shift by 16 first")
SUM_IN_16 = ("the sum was kept in 16 bits (rounded to bfloat16 after every addition): a vertex loses more "
             "the more in-links it has; store in 16 bits, but add in float32")
BEYOND_FORMAT = ("the sums are further from float64 than bfloat16 storage explains: each contribution "
                 "carries at most 2^-8 of relative error, so a sum of non-negative terms is within 2^-8 of "
                 "float64, plus float32's rounding of the additions; more means a value read wrong or a sum "
                 "kept in fewer bits")
NOT_THE_COURSE = ("your sums differ from the course's pull_bf16 on the same 16-bit values by more than "
                  "float32's rounding of the additions: read every contribution as the course does "
                  "(widened from bfloat16 to float32) and add each exactly once")
WIDEN_HINT = "each in-neighbour u adds contrib[u], a bfloat16 widened to float32"


# --- the 16-bit format, in NumPy ---------------------------------------------------------------------

def to_bfloat16(values) -> np.ndarray:
    """The bfloat16 bits (uint16) of float32 values, rounded to nearest, ties to even (as to_bf16 does)."""
    bits = np.asarray(values, dtype=np.float32).view(np.uint32).astype(np.uint64)
    sixteen, one = np.uint64(16), np.uint64(1)          # NumPy 1.26: no int64 mixed into uint64
    return ((bits + np.uint64(0x7FFF) + ((bits >> sixteen) & one)) >> sixteen).astype(np.uint16)


def widened(half: np.ndarray) -> np.ndarray:
    """bfloat16 bits as float32 values."""
    return (np.asarray(half, dtype=np.uint32) << 16).view(np.float32)


def summed_in_16_bits(graph, values: np.ndarray) -> np.ndarray:
    """Each vertex's in-links added one after another, the sum rounded to bfloat16 after every addition."""
    offsets = graph.in_offsets.astype(np.int64)
    degree = np.diff(offsets)
    order = np.argsort(-degree, kind="stable")                 # rows by in-degree, the longest first
    longer = -degree[order]                                    # ascending: rows past step j are a prefix
    sums = np.zeros(graph.num_vertices, dtype=np.float32)
    for j in range(int(degree.max(initial=0))):
        rows = order[:np.searchsorted(longer, -j, side="left")]     # the rows with more than j in-links
        terms = values[graph.in_sources[offsets[rows] + j]].astype(np.float32)
        sums[rows] = widened(to_bfloat16(sums[rows] + terms))
    return sums.astype(np.float64)


def misread(graph, half: np.ndarray, got: np.ndarray) -> str | None:
    """The cause when the sums are what a known misreading of the 16-bit values gives, else None."""
    n = graph.num_vertices
    readings = {FLOAT16_READ: half[:n].view(np.float16).astype(np.float64),
                INTEGER_READ: half[:n].astype(np.float64),
                NOT_SHIFTED: half[:n].astype(np.uint32).view(np.float32).astype(np.float64)}
    for cause, values in readings.items():
        want = graph.in_matrix @ values
        if np.all(np.abs(got - want) <= 2 * ADD * graph.in_degree * np.abs(want) + 1e-300):
            return cause
    if not got.any() and graph.num_edges:           # a GPU that flushes subnormals turns NOT_SHIFTED into 0
        return ALL_ZERO
    if np.array_equal(got, summed_in_16_bits(graph, widened(half[:n]))):
        return SUM_IN_16
    return None


# --- the checker ---------------------------------------------------------------------------------------

@own_context
def check_pull_bfloat16(code: str, seed=None, quiet: bool = False,
                        time_limit: float = GPU_TIME_LIMIT) -> Report:
    """Exercise 40: pull_bfloat16(in_offsets, in_sources, contrib, pulled, n), one thread per vertex (256 per
    block), contrib holding bfloat16 bits as unsigned short: pulled[v] = the float32 sum of v's in-links'
    contributions, widened (see the module's docstring)."""
    seed = fresh_seed(seed)
    rng = np.random.default_rng(seed)

    def check(device, probe, graph):
        kernel, dc = compiled(device, code, SPEC), DeviceCase(graph, rng)
        n, ins = dc.n, graph_inputs(device, dc, SPEC)
        exact = to_bfloat16(dc.host["contrib"])                 # every value is a bfloat16: nothing rounds
        half = Inputs(device, {"contrib": (exact, n)})

        def args(arrays, out, contrib=None):
            return (arrays["in_offsets"], arrays["in_sources"], half.dev["contrib"] if contrib is None
                    else contrib, out, np.int32(n))

        for grid, block in grids(n):                            # 1. exact: bit for bit
            with launched(grid, block):
                first, again = launches(device, ins, kernel, grid, block, args, n + PAD)
                half.unchanged()
                got = np.asarray(first, dtype=np.float64)
                if np.isnan(got[n:]).all() and not np.isnan(got[:n]).any() \
                        and not np.array_equal(got[:n], dc.expected):
                    cause = misread(graph, exact, got[:n])
                    if cause:
                        bad, where = worst_vertex(graph, dc.expected, got[:n], 0.0)
                        raise Wrong(where, cause)
                check_sums(dc, first, again, hint=WIDEN_HINT)
                if probe is not None:
                    values, lowest, highest = probe_launch(device, probe, ins, grid, block, args,
                                                           [n + PAD])[0]
                    shared_changed(values, first, "pulled")
                    several(lowest, highest, np.arange(n), SEVERAL_THREADS, "pulled")
        return _rounded(device, kernel, graph, ins, args, rng)

    return checker("check_pull_bfloat16", code, seed, quiet, time_limit,
                   [(g.name, g) for g in gpu_graphs(rng)], check)


def _rounded(device, kernel, graph, ins: Inputs, args, rng) -> str:
    """2. Random contributions rounded to bfloat16: within the format's precision of float64, and within
    float32's rounding of the course's pull_bf16 on the same values."""
    n = graph.num_vertices
    ranks = random_ranks(rng, n)
    values = np.where(graph.dangling, 0.0, ranks / np.maximum(graph.out_degree, 1)).astype(np.float32)
    half = to_bfloat16(padded(values, PAD_UNITS * UNIT, np.float32))
    contrib = device.put(half)
    exact = graph.in_matrix @ values.astype(np.float64)
    degree = graph.in_degree.astype(np.float64)
    out = output(device, n + PAD)
    device.launch(kernel, blocks(n), (BLOCK,), args(ins.dev, out, contrib))
    got = device.get(out).astype(np.float64)[:n]
    course = output(device, n + PAD)
    reference = device.compile(kernels.canonical("pull_half"), "pull_bf16")
    device.launch(reference, blocks(n), (BLOCK,), (ins.dev["in_offsets"], ins.dev["in_sources"], contrib,
                                                   device.put(np.ones(2, dtype=np.float32)), course,
                                                   np.int32(n)))
    theirs = device.get(course).astype(np.float64)[:n]
    if np.isnan(got).any():
        v = int(np.flatnonzero(np.isnan(got))[0])
        raise Wrong(f"random contributions rounded to bfloat16: vertex {v} never written",
                    "elements never written: every vertex below n needs a thread that stores its sum")
    allowed = 1.01 * (FORMAT + degree * ADD) * exact + 1e-30
    bad, where = worst_vertex(graph, exact, got, allowed)
    if bad.any():
        raise Wrong(f"random contributions rounded to bfloat16, against float64: {where}",
                    misread(graph, half, got) or BEYOND_FORMAT)
    bad, where = worst_vertex(graph, theirs, got, 2 * degree * ADD * theirs + 1e-30)
    if bad.any():
        raise Wrong(f"random contributions rounded to bfloat16, against the course's pull_bf16: {where}",
                    NOT_THE_COURSE)
    relative = float(np.max(np.abs(got - exact) / np.maximum(exact, 1e-30)))
    same = int(np.count_nonzero(got == theirs))
    return (f"rounded to bfloat16: at most {relative:.1e} from float64 (the format allows {FORMAT:.1e}); "
            f"the same bits as the course's pull_bf16 on {same:,} of {n:,} vertices")
