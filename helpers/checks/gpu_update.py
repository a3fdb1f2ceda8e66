"""The GPU checkers of the kernels that update: push with atomics (11), contributions and the dangling share
(12) and the L1 change reduced into one float (20). Each is launched on fresh inputs with just enough
blocks of 256 threads and with two more, its results compared exactly, and a probed launch shows atomics
per block, several threads storing one element, shared memory read before it is written and inputs read
outside their length (see ``checks.gpu``; exercise 21 is ``checks.gpu_fused``).
"""
from __future__ import annotations

import numpy as np

from helpers.checks.device import (
    BLOCK, EPS32, NEVER_WRITTEN, PAD, PAD_UNITS, PAST_THE_END, RACE, SHARED_UNSET, UNIT, DeviceCase, Inputs,
    blocks, first_difference, gpu_graphs, output, padded, several, shared_changed)
from helpers.checks.gpu import (
    KERNELS, checker, compiled, graph_case, grids, launched, launches, own_context, probe_launch)
from helpers.checks.limits import GPU_TIME_LIMIT
from helpers.checks.probe import SPAN
from helpers.checks.report import Report, Wrong, fresh_seed, random_ranks, worst_vertex

__all__ = ["check_contributions_split", "check_l1_change", "check_push_atomic"]

STRAY = 2.0 ** -10          # |new - old| of each element past n in exercise 20
DANGLING_LOST = ("dangling mass lost: the rank of vertices without out-links must be spread over all "
                 "vertices (d * dangling mass / n each); without it the ranks sum to less than 1")
DIVIDE_BY_ZERO = ("a dangling vertex divided by its out-degree 0 (got inf or NaN): its contribution must "
                  "be 0")
SEVERAL_THREADS = ("{what} is stored by several threads (threads {a} and {b}; {count:,} elements so): one "
                   "thread per vertex; the others repeat its work (performance, not correctness)")
ATOMICS = ("{count:,} atomicAdd calls on *total for {blocks:,} blocks of 256 threads: the rule is one "
           "atomicAdd per block, after the block's shared-memory reduction. The sum comes out right "
           "(performance, not correctness): every atomicAdd on one address waits for the one before it, so "
           "one per element makes the GPU add the whole vector one value at a time")


def _push_values(dc: DeviceCase, got_full, again_full) -> None:
    graph, n = dc.graph, dc.n
    got_full, again_full = np.asarray(got_full, np.float64), np.asarray(again_full, np.float64)
    expected_full = np.concatenate([dc.expected, np.zeros(PAD)])
    if np.array_equal(got_full, expected_full) and np.array_equal(again_full, expected_full):
        return
    has = graph.out_degree > 0
    targets = dc.host["out_targets"]
    past = expected_full + np.bincount(targets[graph.out_offsets[1:][has]], weights=dc.contrib_host[has],
                                       minlength=n + PAD)
    short = expected_full - np.bincount(targets[np.maximum(graph.out_offsets[1:][has] - 1, 0)],
                                        weights=dc.contrib_host[has], minlength=n + PAD)
    for guess, cause in ((past, "wrong row bounds: each source also adds to the first out-link of the next "
                                "vertex (the loop must stop before out_offsets[u + 1])"),
                         (short, "wrong row bounds: each source misses its last out-link (the loop stops "
                                 "one early)")):
        if not np.array_equal(guess, expected_full) and np.array_equal(got_full, guess):
            v = first_difference(got_full, expected_full)
            raise Wrong(f"vertex {v}: expected {expected_full[v]:.9g}, got {got_full[v]:.9g}", cause)
    written = np.flatnonzero(got_full[n:] != 0)
    if written.size:
        i = n + int(written[0])
        raise Wrong(f"element {i} received {got_full[i]:.9g} (the graph has {n:,} vertices, so the last is "
                    f"{n - 1}; the elements past it start at 0)",
                    "threads past the last vertex pushed rank: the bounds check (u < n) is missing or off "
                    "by one")
    if not got_full[:n].any() and dc.expected.any():
        raise Wrong(f"every element is 0; vertex {int(np.argmax(dc.expected))} should be "
                    f"{dc.expected.max():.9g}",
                    "nothing was added: every out-link's share must reach its target")
    if not np.array_equal(got_full, again_full):
        v = int(np.flatnonzero(got_full != again_full)[0])
        raise Wrong(f"vertex {v}: {got_full[v]:.9g} in one launch, {again_full[v]:.9g} in the next (with "
                    "these inputs every correct order of additions gives the same bits)", RACE)
    bad, where = worst_vertex(graph, dc.expected, got_full[:n], 0.0)
    degree = graph.in_degree
    if (got_full[:n][bad] < dc.expected[bad]).all() and (degree[bad] > 1).all():
        raise Wrong(where + "; only vertices with several in-links lose rank", RACE)
    raise Wrong(where, "each source u adds rank[u] / out_degree[u] to every vertex it links to")


@own_context
def check_push_atomic(code: str, seed=None, quiet: bool = False,
                      time_limit: float = GPU_TIME_LIMIT) -> Report:
    """Exercise 11: push_atomic(out_offsets, out_targets, out_degree, rank, pulled, n), one thread per source
    vertex, 256 per block, into a zeroed ``pulled`` (zeros past the end too: a stray add shows there)."""
    seed = fresh_seed(seed)
    rng, spec = np.random.default_rng(seed), KERNELS["check_push_atomic"]

    def check(device, probe, graph):
        kernel, dc, ins, args = graph_case(device, code, spec, graph, rng)
        n = dc.n

        for grid, block in grids(n):
            with launched(grid, block):
                _push_values(dc, *launches(device, ins, kernel, grid, block, args, n + PAD, fill=0.0))
                if probe is not None:
                    probe_launch(device, probe, ins, grid, block, args, [n + PAD])
        return None

    return checker("check_push_atomic", code, seed, quiet, time_limit,
                   [(g.name, g) for g in gpu_graphs(rng)], check)


# --- 12: contributions and the dangling share ------------------------------------------------------

@own_context
def check_contributions_split(code: str, seed=None, quiet: bool = False,
                              time_limit: float = GPU_TIME_LIMIT) -> Report:
    """Exercise 12: contributions_split(rank, out_degree, contrib, dangling_rank, n): contrib[u] =
    rank[u] / out_degree[u] (0 if dangling), dangling_rank[u] = rank[u] if dangling else 0; 256 per block."""
    seed = fresh_seed(seed)
    rng, spec = np.random.default_rng(seed), KERNELS["check_contributions_split"]

    def check(device, probe, graph):
        kernel, n = compiled(device, code, spec), graph.num_vertices
        dc = DeviceCase(graph, rng)
        rank = random_ranks(rng, n).astype(np.float32)
        ins = Inputs(device, {"rank": (padded(rank, PAD_UNITS * UNIT, np.float32), n),
                              "out_degree": (dc.host["out_degree"], n)})

        def args(arrays, contrib, dangling_rank):
            return arrays["rank"], arrays["out_degree"], contrib, dangling_rank, np.int32(n)

        degree, dangling = graph.out_degree, graph.dangling
        divided = (rank / np.maximum(degree, 1).astype(np.float32)).astype(np.float64)
        want = {"contrib": np.where(dangling, 0.0, divided),
                "dangling_rank": np.where(dangling, rank, 0.0).astype(np.float64)}
        for grid, block in grids(n):
            with launched(grid, block):
                outs = output(device, n + PAD), output(device, n + PAD)
                device.launch(kernel, grid, block, args(ins.dev, *outs))
                ins.unchanged()
                results = dict(zip(want, (device.get(o) for o in outs)))
                for name, expected in want.items():
                    _contributions(graph, name, results[name].astype(np.float64), expected)
                if probe is None:
                    continue
                probes = probe_launch(device, probe, ins, grid, block, args, [n + PAD, n + PAD])
                for name, (values, lowest, highest) in zip(want, probes):
                    shared_changed(values, results[name], name)
                    several(lowest, highest, np.arange(n), SEVERAL_THREADS, name)
        return None

    return checker("check_contributions_split", code, seed, quiet, time_limit,
                   [(g.name, g) for g in gpu_graphs(rng)],
                   check)


def _contributions(graph, name: str, got_full: np.ndarray, want: np.ndarray) -> None:
    n, degree, dangling = graph.num_vertices, graph.out_degree, graph.dangling
    if not np.isnan(got_full[n:]).all():
        i = int(np.flatnonzero(~np.isnan(got_full[n:]))[0])
        raise Wrong(f"{name}[{n + i}] was written; the last vertex is {n - 1}", PAST_THE_END)
    got = got_full[:n]
    if np.isinf(got).any():
        v = int(np.flatnonzero(np.isinf(got))[0])
        raise Wrong(f"{name}[{v}] = {got[v]} (vertex {v} has out-degree {degree[v]})", DIVIDE_BY_ZERO)
    if np.isnan(got).any():
        v = int(np.flatnonzero(np.isnan(got))[0])
        kind = "a dangling vertex" if dangling[v] else "a vertex with out-links"
        raise Wrong(f"{name}[{v}] never written ({kind}; {int(np.isnan(got).sum())} such)",
                    NEVER_WRITTEN + ("; dangling vertices must store 0 (or their rank)" if dangling[v]
                                     else ""))
    bad, where = worst_vertex(graph, want, got, 2 * EPS32 * np.abs(want))
    if bad.any():
        raise Wrong(f"{name}: {where}", "contrib is rank / out-degree for vertices with out-links, 0 for "
                                        "dangling ones; dangling_rank is the rank of dangling vertices, 0 "
                                        "for the others")


# --- 20: the L1 change ---------------------------------------------------------------------------------

def _l1_wrong(detail: str, got: float, expected: float, new: np.ndarray, old: np.ndarray, n: int) -> None:
    """Raise Wrong with the likely cause of a wrong total."""
    strays = (got - expected) / STRAY
    if np.isfinite(got) and round(strays) >= 1 and abs(strays - round(strays)) < 1e-3:
        raise Wrong(f"{detail}: {round(strays)} element(s) past n were added",
                    "elements past n were added: each thread must check i < n before it reads (and count 0 "
                    "past the end); the checker puts a difference of 2**-10 after the last element")
    if expected and abs(got * n - expected) <= 1e-4 * expected and n > 1:       # / n rounds, the adds too
        raise Wrong(detail, "the residual is scaled by N (a mean): the course's L1 change is the plain sum "
                            "of |new - old|")
    if abs(got - abs(float((new - old).sum()))) <= 1e-6 * expected:
        raise Wrong(detail, "signed differences cancel: take the absolute value (fabsf) of each one")
    if got == 0.0:
        raise Wrong(detail, "nothing was added to *total")
    if n > BLOCK and got < expected:
        raise Wrong(detail, RACE + " (one per block): with one block (n <= 256) the sum is right, with "
                                   "several some blocks' sums never arrive")
    raise Wrong(detail, "the reduction loses or repeats values: check the shared-memory tree (the "
                        "__syncthreads between its steps, elements past n counted as 0)")


@own_context
def check_l1_change(code: str, seed=None, quiet: bool = False, time_limit: float = GPU_TIME_LIMIT) -> Report:
    """Exercise 20: l1_change(new_rank, old_rank, total, n) adds sum(|new - old|) into *total (zeroed
    before the launch), 256 threads per block, one atomicAdd per block; launched with just enough blocks
    (twice) and with two more. Past n the inputs differ by 2**-10 each, so a thread that reads past the
    end changes the sum."""
    seed = fresh_seed(seed)
    rng, spec = np.random.default_rng(seed), KERNELS["check_l1_change"]
    sizes = [1, 255, 257, 4_099 + 2 * int(rng.integers(0, 50)), 1_000_003 + 2 * int(rng.integers(0, 500))]

    def check(device, probe, n):
        kernel = compiled(device, code, spec)
        old = rng.integers(0, 2**20, n) * 2.0 ** -30                # exact in float32, and so are the
        steps = rng.integers(1, 16, n) * rng.choice([-1, 1], n)          # differences and their sums
        new = old + steps * 2.0 ** -30
        expected = float(np.abs(new - old).sum())
        ins = Inputs(device, {"new_rank": (padded(new, STRAY, np.float32), n),
                              "old_rank": (padded(old, 0.0, np.float32), n)})

        def args(arrays, total):
            return arrays["new_rank"], arrays["old_rank"], total, np.int32(n)

        need = blocks(n)[0]
        totals = []
        for grid in ((need,), (need,), (need + 2,)):
            total = device.put(np.array([0.0, np.nan], dtype=np.float32))
            device.launch(kernel, grid, (BLOCK,), args(ins.dev, total))
            ins.unchanged()
            totals.append(device.get(total).astype(np.float64))
        if not np.isnan(totals[0][1]):
            raise Wrong("total[1] was written", "write only *total (one float)")
        got, again, more = (float(t[0]) for t in totals)
        detail = f"expected {expected:.9g}, got {got:.9g}"
        probed_total, count = None, 0
        if probe is not None:
            words = np.zeros(2 * SPAN, dtype=np.uint32)
            words[1] = np.array([np.nan], dtype=np.float32).view(np.uint32)[0]
            total = device.put(words.view(np.float32))
            reads = ins.probed()
            device.launch(probe, (need,), (BLOCK,), args(reads["views"], total))
            back = np.asarray(device.get(total), dtype=np.float32)
            probed_total, count = float(back[0]), int(back.view(np.uint32)[SPAN])
            if np.isnan(probed_total) and not np.isnan(got):
                raise Wrong(f"{detail} in a normal launch, NaN with shared memory filled with NaN before "
                            "the launch", SHARED_UNSET)
        if np.isnan(got):                   # the inputs are finite: a NaN came from memory never written
            raise Wrong(detail, SHARED_UNSET)
        if got != again:                    # before the probe's comparison: a race changes every launch
            raise Wrong(f"{detail}, then {again:.9g} in the next launch", RACE + " (one per block)")
        if probe is not None and probed_total != got:
            raise Wrong(f"{detail} in a normal launch, {probed_total:.9g} with shared memory filled "
                        "with NaN before the launch", SHARED_UNSET)
        if got != expected:
            _l1_wrong(detail, got, expected, new, old, n)
        if more != expected:
            _l1_wrong(f"{need + 2:,} blocks of 256 threads (two more than needed): expected {expected:.9g}, "
                      f"got {more:.9g}", more, expected, new, old, n)
        if probe is not None:
            ins.reads_in_bounds(reads)
            if count > need:
                raise Wrong(f"{count:,} atomicAdd calls for {need:,} blocks",
                            ATOMICS.format(count=count, blocks=need))
        return None

    return checker("check_l1_change", code, seed, quiet, time_limit, [(f"n = {n:,}", n) for n in sizes],
                   check)
