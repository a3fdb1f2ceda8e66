"""The GPU checker of exercise 21, lecture 21's fusion in small. ``fused_update`` sums every vertex's
in-links, writes its new rank and next contribution, and keeps each thread's shares of the new dangling mass
and of the L1 change; each block adds its threads' shares, and the last block to arrive adds every block's
shares into ``totals`` in a fixed order (no float atomics: the same bits every run).

Inputs are dyadic and small enough that every sum, the totals included, is exact in float32 in any order:
with d = 1 and no dangling mass the new rank is the bare sum, and the totals are compared bit for bit. Each
graph is launched with one thread per vertex, with two blocks more, and with a grid of three blocks (a
grid-stride loop), twice each with one counter (the second launch finds it reset); then with a random d
(the formula), a probed launch, and a whole PageRank that feeds the kernel's totals back.
"""
from __future__ import annotations

import re

import numpy as np

from helpers.checks.cuda import Node, functions, parse_expression, statement_expressions, strip_comments, walk
from helpers.checks.device import (
    BLOCK, EPS32, NEVER_WRITTEN, PAD, PAD_UNITS, PAST_THE_END, RACE, SHARED_UNSET, UNIT, DeviceCase, Inputs,
    blocks, check_sums, gpu_graphs, output, padded, same_bits, several)
from helpers.checks.gpu import KERNELS, checker, compiled, launched, own_context, probe_launch
from helpers.checks.gpu_update import DANGLING_LOST, DIVIDE_BY_ZERO, SEVERAL_THREADS
from helpers.checks.limits import GPU_TIME_LIMIT
from helpers.checks.lint import Hazard
from helpers.checks.pristine import REFERENCE as REF
from helpers.checks.report import Report, Wrong, fresh_seed, worst_vertex
from helpers.checks.strides import assignments

__all__ = ["check_fused_update"]

SPEC = KERNELS["check_fused_update"]
FEW_BLOCKS = 3              # the small grid: a grid-stride loop walks the whole graph
CANARY = 0x5EED             # the int after *finished
BARE_SUM = ("new rank = d * (the sum of the in-neighbours' contributions) + (d * dangling_mass + 1 - d) / "
            "n; with d = 1 and no dangling mass, the bare sum")
NOT_LAST = ("no block found itself last, so totals were never written: atomicAdd returns the counter's "
            "value before the add, so the last of gridDim.x blocks gets gridDim.x - 1")
NOT_RESET = ("the counter is not reset: *finished is {count} after the launch; the last block must set it "
             "back to 0, or the next launch (the next iteration) finds no last block")
SHARE_MISSING = ("the last block added a NaN: a block's shares never reached partials before it was "
                 "counted; every block writes its two shares, 0 when it has no vertex, before its atomicAdd")
BLOCKS_MISSING = ("only {count:,} of {blocks:,} blocks counted themselves in, so no block was last and "
                  "totals were never written: every block, one without a vertex too (blocks past the last "
                  "vertex), writes its shares and counts itself in (no early return)")
ONE_BLOCK = ("only one block's shares reached totals[{i}]: the last block adds the shares of all gridDim.x "
             "blocks (partials[2 * b] and partials[2 * b + 1] for every b)")
OLD_DANGLING = ("totals[0] is the dangling mass of the OLD ranks (rank[v]): the next iteration needs the "
                "new rank r of every dangling vertex")
ALL_DANGLING = "totals[0] adds the new rank of every vertex: only vertices with out-degree 0 are dangling"
SIGNED = "signed differences cancel in totals[1]: add fabsf(r - rank[v])"
TOTALS_WRONG = ("the totals miss or repeat shares: each thread adds r (dangling vertices only) and "
                "fabsf(r - rank[v]) over all its vertices, the block's tree adds every thread's shares "
                "(__syncthreads() between steps), and the last block adds partials[2 * b] and "
                "partials[2 * b + 1] of every block b")
FLOAT_ATOMICS = ("float atomics into totals: the order in which blocks arrive changes the rounding, so the "
                 "totals can differ from run to run; lecture 21's rule: the last block adds every block's "
                 "shares in a fixed order (block 0, 1, ...)")
FLOAT_ATOMICS_INTO = ("float atomics into {target}: the order in which threads or blocks arrive changes the "
                      "rounding of every sum taken from it, so the totals can differ from run to run; the "
                      "exercise asks for none: add the block's shares with exercise 20's tree in shared "
                      "memory, and every block's in a fixed order in the last block")
NO_FENCE = ("no __threadfence() between writing the block's shares and counting the block in: another "
            "block can see the count before the shares, so the last block may add a share that is not "
            "there yet (a race that these launches may not show)")
PARTIALS_PAST = ("wrote partials[{index}] although the grid has {blocks} blocks: block b writes "
                 "partials[2 * b] and partials[2 * b + 1], nothing past 2 * gridDim.x")
GRID_STRIDE = ("; with {blocks} blocks of 256 threads the grid is smaller than the graph: walk the "
               "vertices with a grid-stride loop (v += blockDim.x * gridDim.x)")


def hard_coded(d: float) -> str:
    """The cause when the kernel uses d = 0.85 instead of the d passed."""
    return ("the damping factor is hard-coded: your result is what d = 0.85 gives, but this launch passes "
            f"d = {d:.3f}; use the d argument")


# --- read, not run ------------------------------------------------------------------------------------

def source_hazards(code: str) -> list[Hazard]:
    """Float atomics (into totals, partials or shared memory, through an alias or a macro too), and a counter
    increased with no __threadfence() before it."""
    clean, lines, found = strip_comments(code), code.split("\n"), []

    def hazard(at: int, cause: str) -> Hazard:
        line = clean.count("\n", 0, at) + 1
        return Hazard(line, lines[line - 1].strip(), cause)

    atomic = re.search(r"\batomic\w*\s*\(\s*\(?\s*&?\s*\(?\s*totals\b", clean)
    if atomic:
        found.append(hazard(atomic.start(), FLOAT_ATOMICS))
    for line, target in float_atomics(code):                 # one case per cause: the first line
        cause = FLOAT_ATOMICS if target == "totals" else FLOAT_ATOMICS_INTO.format(target=target)
        if not any(h.cause == cause for h in found):
            found.append(Hazard(line, lines[line - 1].strip(), cause))
    counted = re.search(r"\batomic(?:Add|Inc)\s*\(\s*&?\s*\(?\s*finished\b", clean)
    if counted and "__threadfence" not in clean[:counted.start()]:
        found.append(hazard(counted.start(), NO_FENCE))
    return found


def float_atomics(code: str) -> list[tuple[int, str]]:
    """(line, target) of each atomicAdd or atomicSub on float or double memory (a pointer, a shared array),
    through an alias (float* t = totals) or a macro too; the target is named as declared."""
    try:
        found, _ = functions(code)
    except (ValueError, IndexError, RecursionError):
        return []
    clean = strip_comments(code)
    floats = set(re.findall(r"\b(?:float|double)\s*\*\s*(?:const\s+|__restrict__\s+)*(\w+)", clean))
    for declared in re.findall(r"__shared__\s+(?:volatile\s+)?(?:float|double)\s+([^;]+);", clean):
        floats |= set(re.findall(r"(\w+)\s*\[", declared))
    hits = []
    for fn in found:
        values = assignments(fn.body, {})
        roots = {name: {name} for name in floats}
        for _ in range(4):                               # aliases, a few levels deep
            for name, assigned in values.items():
                for value in assigned:
                    for sub in walk(value):
                        if sub[0] == "id" and sub[1] in roots:
                            roots.setdefault(name, set()).update(roots[sub[1]])
        for node in nodes(fn.body):
            for call in (sub for e in node_expressions(node) for sub in walk(e) if sub[0] == "call"):
                if re.fullmatch(r"atomic(Add|Sub)(_block|_system)?", call[1]) and call[2]:
                    named = {r for sub in walk(call[2][0]) if sub[0] == "id" for r in roots.get(sub[1], ())}
                    if named:
                        hits.append((node.line, "totals" if "totals" in named else sorted(named)[0]))
    return hits


def nodes(node):
    """Every statement under ``node``, itself included."""
    if node is not None:
        yield node
        for child in node.body:
            yield from nodes(child)


def node_expressions(node) -> list:
    """The expressions a statement evaluates itself (not its children's)."""
    if node.kind == "simple":
        return statement_expressions(node)
    if node.kind == "return":
        return [parse_expression(node.toks[1:])]
    if node.kind in ("if", "loop"):
        init = statement_expressions(Node("simple", node.line, node.init, [])) if node.init else []
        return init + [parse_expression(node.toks), parse_expression(node.step or [])]
    return []


# --- the values ---------------------------------------------------------------------------------------

class FusedCase:
    """A graph's inputs for fused_update: dyadic contributions small enough that the sum of every pulled
    value stays below 2**23 units, old ranks that differ from the exact new ones by 1 to 15 units."""

    def __init__(self, graph, rng):
        units = max(1, min(255, 2**23 // max(graph.num_edges, 1)))
        self.dc = dc = DeviceCase(graph, rng, max_units=units)
        n = dc.n
        self.delta = rng.integers(1, 16, n) * rng.choice([-1, 1], n) * UNIT
        self.old = dc.expected + self.delta
        self.dangling = float(dc.expected[graph.dangling].sum())
        self.change = float(np.abs(self.delta).sum())

    def inputs(self, device) -> Inputs:
        dc = self.dc
        named = {name: (dc.host[name], dc.length[name]) for name in SPEC.inputs if name != "rank"}
        return Inputs(device, named | {"rank": (padded(self.old, PAD_UNITS * UNIT, np.float32), dc.n)})


def block_shares(n: int, threads: int, values: np.ndarray) -> np.ndarray:
    """Each block's share of ``values`` when ``threads`` threads walk the vertices in a grid-stride loop."""
    block_of = (np.arange(n) % threads) // BLOCK
    return np.bincount(block_of, weights=values, minlength=max(threads // BLOCK, 1))


def check_totals(case: FusedCase, got: np.ndarray, finished: np.ndarray, partials: np.ndarray,
                 grid: int) -> None:
    """Raise Wrong with the likely cause when totals, the counter or partials are wrong (exact launch)."""
    graph, n = case.dc.graph, case.dc.n
    if finished[1] != CANARY:
        raise Wrong(f"finished[1] became {int(finished[1])}", "only *finished (one int) is the counter")
    written = np.flatnonzero(~np.isnan(partials[2 * grid:]))
    if written.size:
        index = 2 * grid + int(written[0])
        raise Wrong(f"partials[{index}] = {partials[index]:.9g}", PARTIALS_PAST.format(index=index,
                                                                                     blocks=grid))
    if not np.isnan(got[2:]).all():
        raise Wrong(f"totals[2] = {got[2]:.9g}", "write totals[0] and totals[1] only")
    want = np.array([case.dangling, case.change])
    detail = (f"totals = ({got[0]:.9g}, {got[1]:.9g}), expected ({want[0]:.9g}, {want[1]:.9g}) "
              f"(exact in float32 with these inputs)")
    count = int(finished[0])
    if np.isnan(got[:2]).all() and count == grid:
        raise Wrong(detail + f"; *finished is {count}", NOT_LAST)
    if np.isnan(got[:2]).all() and 0 < count < grid:
        raise Wrong(detail + f"; *finished is {count}", BLOCKS_MISSING.format(count=count, blocks=grid))
    if np.isnan(got[:2]).any():
        raise Wrong(detail, SHARE_MISSING)
    if finished[0] != 0:
        raise Wrong(detail + f"; *finished is {int(finished[0])}", NOT_RESET.format(count=int(finished[0])))
    if np.array_equal(got[:2], want):
        return
    expected, threads = case.dc.expected, grid * BLOCK
    dangling_values = np.where(graph.dangling, expected, 0.0)
    guesses = [(0, float(case.old[graph.dangling].sum()), OLD_DANGLING),
               (0, float(expected.sum()), ALL_DANGLING),
               (1, float(-case.delta.sum()), SIGNED), (1, abs(float(case.delta.sum())), SIGNED)]
    for i, value, cause in guesses:
        if got[i] != want[i] and got[i] == value:
            raise Wrong(detail, cause)
    if grid > 1:
        for i, values in ((0, dangling_values), (1, np.abs(case.delta))):
            shares = block_shares(n, threads, values)
            if got[i] != want[i] and np.isin(got[i], shares):
                raise Wrong(detail, ONE_BLOCK.format(i=i))
    raise Wrong(detail, TOTALS_WRONG)


def next_contributions(graph, new_contrib: np.ndarray, got: np.ndarray) -> None:
    """Raise Wrong when new_contrib is not the new rank / out-degree (0 for a dangling vertex)."""
    n = graph.num_vertices
    if not np.isnan(new_contrib[n:]).all():
        i = n + int(np.flatnonzero(~np.isnan(new_contrib[n:]))[0])
        raise Wrong(f"new_contrib[{i}] was written; the last vertex is {n - 1}", PAST_THE_END)
    divided = (np.isinf(new_contrib[:n]) | (np.isnan(new_contrib[:n]) & graph.dangling)) & np.isfinite(got)
    if divided.any():
        v = int(np.flatnonzero(divided)[0])
        raise Wrong(f"new_contrib[{v}] = {new_contrib[v]} (vertex {v} has out-degree {graph.out_degree[v]})",
                    DIVIDE_BY_ZERO)
    if np.isnan(new_contrib[:n]).any():
        v = int(np.flatnonzero(np.isnan(new_contrib[:n]))[0])
        raise Wrong(f"new_contrib[{v}] never written", NEVER_WRITTEN)
    want = np.where(graph.dangling, 0.0, got / np.maximum(graph.out_degree, 1))
    bad, where = worst_vertex(graph, want, new_contrib[:n], 2 * EPS32 * want)
    if bad.any():
        raise Wrong(f"new_contrib of {where}", "the next contribution is the NEW rank / out-degree (0 for "
                                               "a dangling vertex)")


def formula(graph, got: np.ndarray, pulled: np.ndarray, d: float, mass: float) -> None:
    """Raise Wrong naming the likely cause when the new ranks are not d * pulled + (d * mass + 1 - d) / n."""
    n = graph.num_vertices
    want = d * pulled + (d * mass + 1 - d) / n
    bad, where = worst_vertex(graph, want, got, 8 * EPS32 * want)
    if not bad.any():
        return
    where = f"d = {d:.3f}, dangling mass {mass:.4g}: new_rank of {where}"
    variants = {DANGLING_LOST: d * pulled + (1 - d) / n,
                "the dangling share is not damped: every vertex gets d * dangling_mass / n, not "
                "dangling_mass / n": d * pulled + (mass + 1 - d) / n,
                "ranks not summing to 1: the teleport term is (1 - d) / n per vertex and the dangling "
                "share d * mass / n": d * pulled + d * mass + 1 - d,
                "ranks not summing to 1: the teleport term (1 - d) is shared by the n vertices, (1 - d) / "
                "n each": d * pulled + d * mass / n + 1 - d,
                hard_coded(d): 0.85 * pulled + (0.85 * mass + 0.15) / n}
    for cause, variant in variants.items():
        if np.allclose(got, variant, rtol=1e-5, atol=0):
            raise Wrong(where, cause)
    raise Wrong(where, "new rank = d * (sum of the in-neighbours' contributions) + (d * dangling_mass + 1 "
                       "- d) / n")


def close_totals(graph, got: np.ndarray, new_rank: np.ndarray, old: np.ndarray) -> None:
    """With rounding (a random d): the totals within float32 noise of the sums of what the kernel wrote."""
    want = np.array([new_rank[graph.dangling].sum(), np.abs(new_rank - old).sum()])
    if not np.allclose(got[:2], want, rtol=1e-5, atol=1e-9):
        raise Wrong(f"totals = ({got[0]:.9g}, {got[1]:.9g}); the new ranks this launch wrote give "
                    f"({want[0]:.9g}, {want[1]:.9g})", TOTALS_WRONG)


# --- the checker --------------------------------------------------------------------------------------

def float32_allowance(graph, ranks: np.ndarray, d: float = REF.DAMPING) -> float:
    """The L1 distance a correct float32 run may end at: the stop test's 1e-5, plus float32's rounding of
    each vertex's in-link additions, one after another (at most in-degree - 1 roundings of 2**-24 of its
    rank), carried through every later iteration (d / (1 - d) in all). A hub of 12,000 in-links rounds
    12,000 times: its sum drifts further than a small vertex's."""
    rounding = float(np.sum(ranks * np.maximum(graph.in_degree - 1, 0))) * 2.0 ** -24
    return 1e-5 + d / (1 - d) * rounding


def _whole_pagerank(device, kernel, ins: Inputs, graph, args) -> str:
    """A whole PageRank with the kernel, its totals fed back (the dangling mass) and tested (the L1 change);
    Wrong when it ends far from the reference."""
    n = graph.num_vertices
    rank = device.put(padded(np.full(n, 1.0 / n), 0.0, np.float32))
    start = np.where(graph.dangling, 0.0, 1.0 / n / np.maximum(graph.out_degree, 1))
    contrib = device.put(padded(start, 0.0, np.float32))
    mass, finished = float(graph.dangling.sum()) / n, device.put(np.array([0, CANARY], dtype=np.int32))
    for iterations in range(1, 1001):
        new_rank, new_contrib = output(device, n + PAD), output(device, n + PAD)
        totals = output(device, 2 + PAD)
        arrays = ins.dev | {"contrib": contrib, "rank": rank}
        device.launch(kernel, blocks(n), (BLOCK,), args(arrays, mass, REF.DAMPING, new_rank, new_contrib,
                                                       output(device, 2 * blocks(n)[0] + PAD), finished,
                                                       totals))
        rank, contrib, back = new_rank, new_contrib, device.get(totals).astype(np.float64)
        mass, change = float(back[0]), float(back[1])
        if not change >= 1e-6:
            break
    ranks, reference = device.get(rank)[:n].astype(np.float64), REF.pagerank(graph, tol=1e-10).ranks
    distance, allowed = REF.l1_distance(ranks, reference), float32_allowance(graph, reference)
    if not distance <= allowed:
        raise Wrong(f"a whole PageRank with your kernel (its totals[0] as the next dangling mass, its "
                    f"totals[1] as the stop test) ends {distance:.3g} (L1) from the reference, sum "
                    f"{ranks.sum():.7f}, after {iterations} launches; float32 additions explain at most "
                    f"{allowed:.2g} on this graph", "the update or the totals are wrong")
    return (f"a whole PageRank with your kernel and its totals: {iterations} launches to L1 < 1e-6, "
            f"{distance:.1e} from the reference")


@own_context
def check_fused_update(code: str, seed=None, quiet: bool = False,
                       time_limit: float = GPU_TIME_LIMIT) -> Report:
    """Exercise 21: fused_update(in_offsets, in_sources, out_degree, contrib, rank, dangling_mass, d,
    new_rank, new_contrib, partials, finished, totals, n), 256 threads per block: the update of every
    vertex, each block's shares of the new dangling mass and of the L1 change in partials, and the last
    block's sums of them in totals[0] and totals[1] (see the module's docstring)."""
    seed = fresh_seed(seed)
    rng = np.random.default_rng(seed)

    def check(device, probe, graph):
        kernel, case = compiled(device, code, SPEC), FusedCase(graph, rng)
        dc, n = case.dc, case.dc.n
        ins = case.inputs(device)

        def args(arrays, mass, d, new_rank, new_contrib, partials, finished, totals):
            return (arrays["in_offsets"], arrays["in_sources"], arrays["out_degree"], arrays["contrib"],
                    arrays["rank"], np.float32(mass), np.float32(d), new_rank, new_contrib, partials,
                    finished, totals, np.int32(n))

        def launch(grid, mass, d, finished, arrays=None, kernel=kernel):
            outs = output(device, n + PAD), output(device, n + PAD)
            partials, totals = output(device, 2 * grid[0] + PAD), output(device, 2 + PAD)
            device.launch(kernel, grid, (BLOCK,), args(arrays or ins.dev, mass, d, *outs, partials,
                                                       finished, totals))
            ins.unchanged()
            return [device.get(a).astype(np.float64) for a in (*outs, partials, totals)]

        for grid in (blocks(n), (blocks(n)[0] + 2,), (FEW_BLOCKS,)):       # d = 1: everything exact
            with launched(grid, (BLOCK,)):
                finished = device.put(np.array([0, CANARY], dtype=np.int32))
                first = launch(grid, 0.0, 1.0, finished)
                counter = device.get(finished)
                hint = GRID_STRIDE.format(blocks=grid[0]) if grid[0] * BLOCK < n else ""
                if not np.isnan(first[0][:n]).any() and \
                        np.allclose(first[0][:n], 0.85 * dc.expected + 0.15 / n, rtol=1e-6, atol=0):
                    raise Wrong("with d = 1 and no dangling mass, new_rank[v] should be the bare sum over "
                                "in-links", hard_coded(1.0))
                check_sums(dc, first[0], hint=BARE_SUM, unwritten_hint=hint)
                next_contributions(graph, first[1], first[0][:n])
                check_totals(case, first[3], counter, first[2], grid[0])
                again = launch(grid, 0.0, 1.0, finished)
                for name, a, b in (("new_rank", first[0], again[0]), ("totals", first[3], again[3])):
                    if not same_bits(a, b):
                        raise Wrong(f"{name} differs between two launches", RACE)
        d, mass = float(np.float32(rng.uniform(0.6, 0.95))), float(np.float32(rng.uniform(0.05, 0.5)))
        finished = device.put(np.array([0, CANARY], dtype=np.int32))
        new_rank, new_contrib, _, totals = launch(blocks(n), mass, d, finished)      # the formula rounds
        formula(graph, new_rank[:n], dc.expected, d, mass)
        next_contributions(graph, new_contrib, new_rank[:n])
        close_totals(graph, totals, new_rank[:n], case.old)
        if probe is not None:          # one thread per vertex, shared memory read before written, reads
            finished = device.put(np.array([0, CANARY], dtype=np.int32))
            plain = launch(blocks(n), 0.0, 1.0, finished)
            totals = output(device, 2 + PAD)
            probes = probe_launch(device, probe, ins, blocks(n), (BLOCK,), lambda arrays, *outs: args(
                arrays, 0.0, 1.0, *outs, output(device, 2 * blocks(n)[0] + PAD),
                device.put(np.array([0, CANARY], dtype=np.int32)), totals), [n + PAD, n + PAD])
            for name, (values, lowest, highest), kept in zip(("new_rank", "new_contrib"), probes, plain):
                if not same_bits(values, kept):
                    raise Wrong(f"{name} differs with shared memory filled with NaN", SHARED_UNSET)
                several(lowest, highest, np.arange(n), SEVERAL_THREADS, name)
            if not same_bits(device.get(totals), plain[3]):
                raise Wrong(f"totals = {device.get(totals)[:2]} with shared memory filled with NaN before "
                            f"the launch, {plain[3][:2]} without", SHARED_UNSET)
        return _whole_pagerank(device, kernel, ins, graph, args) if n >= 1000 else None

    hazards = [(f"the kernel's source, line {h.line} (read, not run)", ("source", [h]))
               for h in source_hazards(code)] if isinstance(code, str) else []
    return checker("check_fused_update", code, seed, quiet, time_limit,
                   hazards + [(g.name, g) for g in gpu_graphs(rng)], check)
