"""The CPU checker of exercise 22, a vertex order and the relabelling it asks for: ``reorder(num_vertices,
in_offsets, in_sources, out_degree)`` returns ``(perm, in_offsets, in_sources)``: the vertices by decreasing
out-degree (equal ones in increasing id), perm[i] the old id of the vertex that becomes i, and the in-CSR of
the renumbered graph (each row's sources increasing).

The student's function runs apart (``checks.isolation``) on copies of fresh seeded graphs, a web-like graph
in crawl order and an R-MAT graph with random ids among them. The checker verifies that perm is a
permutation and the prescribed order, that the in-CSR is valid and is the renumbered graph's, and that
PageRank is unchanged up to the renumbering (float64 iterates of both graphs); it names the usual
mistakes. Then it measures what the order does: sector requests per edge before and after
(``floors.sectors_per_edge``), and where there is a GPU, a pull timed in both orders by the course's rule.
"""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from helpers.driver import floors
from helpers.core import generators
from helpers.core.graph import Graph
from helpers.checks.isolation import Call, run_calls
from helpers.checks.limits import CPU_TIME_LIMIT, Output
from helpers.checks.pristine import REFERENCE as REF
from helpers.checks.report import Report, Wrong, describe_value, run
from helpers.checks.returned import (
    as_array, begin, checked, cpu_graphs, inputs_unchanged, overflow_cause, scale_review, wrapped_type)

__all__ = ["check_reorder"]

ANSWERS = ("helpers.checks.reorder.out_degree_order", "helpers.checks.reorder.relabelled")
STEPS = 30                  # float64 steps of both graphs compared (PageRank up to the renumbering)
NOT_A_PERMUTATION = ("perm must be a permutation of 0..n-1, every vertex exactly once: np.argsort of a key "
                     "gives one")
DEGREES = ("perm holds out-degrees, not vertices: np.sort sorts the values; np.argsort gives the vertices "
           "in that order")
ASCENDING = ("the order is ascending: the most-gathered sources (largest out-degree) come first; sort by "
             "-out_degree")
TIES = ("equal out-degrees must stay in increasing old id: a stable sort of -out_degree (kind=\"stable\"); "
        "NumPy's default sort is not stable, and reversing an ascending sort reverses the ties too")
INVERSE = ("you returned new_id (where each vertex goes) instead of perm (which old vertex comes to each "
           "place): perm[i] is the old id of new vertex i, and new_id[perm] = arange(n) is its inverse")
IN_DEGREE = "ordered by in-degree: the order asked for is by out-degree (the sources a pull gathers)"
OTHER_ORDER = ("perm[i] is the old id of the vertex that becomes i: the vertices by decreasing out-degree, "
               "equal ones in increasing old id")
NOT_RENAMED = ("the sources were not renamed: row i holds the old ids of perm[i]'s in-links; after a "
               "renumbering every id is the new one, new_id[u]")
PERM_FOR_IDS = ("the sources were renamed with perm instead of its inverse: old vertex u is now new_id[u] "
                "(new_id[perm] = arange(n)), and perm[u] is another vertex")
NOT_MOVED = ("the rows were not moved: row i must hold the in-links of the vertex that becomes i, perm[i]; "
             "yours holds those of old vertex i")
UNCHANGED = "the in-CSR came back as it was given: the rows must move and the sources be renamed"
ROW_ORDER = ("the right in-links in the wrong order: each row's sources in increasing order (as "
             "helpers.core.graph stores them; the sectors a warp gathers depend on it)")
CHANGES_PAGERANK = ("PageRank is not unchanged up to the renumbering: your in-CSR is another graph; row i "
                    "must hold new_id[u] for every in-link u -> perm[i]")
ROWS = ("wrong row bounds: in_offsets[i] is how many in-links the new vertices before i have (the rows in "
        "the new order, a leading 0)")


def out_degree_order(out_degree: np.ndarray) -> np.ndarray:
    """The order asked for: decreasing out-degree, equal ones by increasing id."""
    return np.argsort(-np.asarray(out_degree, dtype=np.int64), kind="stable")


def inverse(perm: np.ndarray) -> np.ndarray:
    new_id = np.empty(perm.size, dtype=np.int64)
    new_id[perm] = np.arange(perm.size)
    return new_id


def relabelled(graph: Graph, perm: np.ndarray, rename: np.ndarray, move: bool = True,
               key_type=None) -> tuple[np.ndarray, np.ndarray]:
    """The in-CSR with sources mapped through ``rename`` and, if ``move``, rows reordered by ``perm``; rows
    sorted by a key target * n + source computed in ``key_type`` (wrapping) when given."""
    n = graph.num_vertices
    targets = np.repeat(np.arange(n), graph.in_degree)
    new_targets = inverse(perm)[targets] if move else targets
    sources = rename[graph.in_sources]
    if key_type is None:
        order = np.lexsort((sources, new_targets))
    else:
        key = new_targets.astype(key_type) * np.asarray([n], dtype=key_type) + sources.astype(key_type)
        order = np.argsort(key, kind="stable")
    offsets = np.concatenate([[0], np.cumsum(np.bincount(new_targets, minlength=n))])
    return offsets, sources[order]


def iterates_match(graph: Graph, perm: np.ndarray, offsets: np.ndarray, sources: np.ndarray) -> float:
    """L1 distance between PageRank after STEPS float64 steps on the renumbered graph and on the given one,
    mapped by perm (0 up to rounding when the renumbered graph is the same graph)."""
    import scipy.sparse as sp

    n = graph.num_vertices
    matrix = sp.csr_matrix((np.ones(sources.size), sources, offsets), shape=(n, n))
    degree = graph.out_degree[perm]
    renamed = SimpleNamespace(num_vertices=n, out_degree=degree, dangling=degree == 0, in_matrix=matrix)
    teleport = REF.teleport_vector(n)
    given, yours = teleport.copy(), teleport.copy()
    for _ in range(STEPS):
        given = REF.pagerank_step(graph, given, REF.DAMPING, teleport)
        yours = REF.pagerank_step(renamed, yours, REF.DAMPING, teleport)
    return float(np.abs(yours - given[perm]).sum())


def _perm(graph: Graph, got: np.ndarray) -> np.ndarray:
    n, want = graph.num_vertices, out_degree_order(graph.out_degree)
    narrow = wrapped_type(got, want)
    if narrow is not None:
        raise Wrong(f"perm runs from {got.min()} to {got.max()}, expected 0 to {n - 1}",
                    overflow_cause("the vertex ids in perm", narrow, n - 1, "the largest id"))
    if ((got < 0) | (got >= n)).any() or np.bincount(got, minlength=n).max(initial=1) != 1:
        counts = np.bincount(got[(got >= 0) & (got < n)], minlength=n)
        missing = f", e.g. vertex {int(np.argmin(counts))} never" if (counts == 0).any() else ""
        detail = (f"perm has {int((counts > 1).sum()):,} repeated and {int((counts == 0).sum()):,} missing "
                  f"vertices{missing}")
        sorted_degrees = np.sort(graph.out_degree)
        raise Wrong(detail, DEGREES if np.array_equal(np.sort(got), sorted_degrees) or
                    np.array_equal(got, sorted_degrees[::-1]) else NOT_A_PERMUTATION)
    if np.array_equal(got, want):
        return got
    detail = f"perm starts {got[:8].tolist()}..., expected {want[:8].tolist()}..."
    degree = graph.out_degree.astype(np.int64)
    guesses = [(np.argsort(degree, kind="stable"), ASCENDING), (inverse(want), INVERSE),
               (out_degree_order(graph.in_degree), IN_DEGREE)]
    for guess, cause in guesses:
        if np.array_equal(got, guess):
            raise Wrong(detail, cause)
    if (np.diff(degree[got]) <= 0).all():
        raise Wrong(detail, TIES)
    if (np.diff(degree[got]) >= 0).all():
        raise Wrong(detail, ASCENDING)
    raise Wrong(detail, OTHER_ORDER)


def _csr(graph: Graph, perm: np.ndarray, offsets: np.ndarray, sources: np.ndarray) -> float:
    """Raise Wrong with the likely cause when the in-CSR is not the renumbered graph's; the L1 distance of
    the PageRank iterates otherwise."""
    n, m = graph.num_vertices, graph.num_edges
    new_id = inverse(perm)
    want_offsets, want_sources = relabelled(graph, perm, new_id)
    for name, got, want, why in (("in_offsets", offsets, want_offsets, "the last offset (one per edge)"),
                                 ("in_sources", sources, want_sources, "the largest source id")):
        narrow = wrapped_type(got, want)
        if narrow is not None:
            raise Wrong(f"{name} runs from {got.min()} to {got.max()}, expected 0 to {want.max()}",
                        overflow_cause(f"the values of {name}", narrow, int(want.max()), why))
    if offsets.size != n + 1 or offsets[0] != 0 or offsets[-1] != m or (np.diff(offsets) < 0).any():
        raise Wrong(f"in_offsets has {offsets.size:,} entries, from {offsets[:1].tolist()} to "
                    f"{offsets[-1:].tolist()} (n = {n:,}, {m:,} edges)", ROWS)
    if sources.size != m or ((sources < 0) | (sources >= n)).any():
        raise Wrong(f"in_sources has {sources.size:,} entries, from {sources.min(initial=0)} to "
                    f"{sources.max(initial=0)}", "in_sources holds one new id (0..n-1) per edge")
    if np.array_equal(offsets, want_offsets) and np.array_equal(sources, want_sources):
        distance = iterates_match(graph, perm, offsets, sources)
        if distance > 1e-10:
            raise Wrong(f"PageRank after {STEPS} steps differs by {distance:.2g} (L1)", CHANGES_PAGERANK)
        return distance
    detail = _first_bad_row(want_offsets, want_sources, offsets, sources)
    variants = [(relabelled(graph, perm, np.arange(n)), NOT_RENAMED),
                (relabelled(graph, perm, perm), PERM_FOR_IDS),
                (relabelled(graph, perm, new_id, move=False), NOT_MOVED),
                ((graph.in_offsets, graph.in_sources), UNCHANGED)]
    for (o, s), cause in variants:
        if np.array_equal(offsets, o) and np.array_equal(sources, s):
            raise Wrong(detail, cause)
    for key_type in (np.int32, np.uint32):
        if n * n > np.iinfo(key_type).max:
            o, s = relabelled(graph, perm, new_id, key_type=key_type)
            if np.array_equal(sources, s):
                raise Wrong(detail, overflow_cause("the sort key target * n + source", key_type, n * n - 1,
                                                   f"with n = {n:,} it"))
    if np.array_equal(offsets, want_offsets) and all(
            np.array_equal(np.sort(sources[a:b]), want_sources[a:b]) for a, b in zip(offsets, offsets[1:])):
        raise Wrong(detail, ROW_ORDER)
    distance = iterates_match(graph, perm, offsets, sources)
    raise Wrong(f"{detail}; PageRank after {STEPS} steps differs by {distance:.2g} (L1)", CHANGES_PAGERANK
                if np.array_equal(offsets, want_offsets) else ROWS)


def _first_bad_row(want_offsets, want_sources, offsets, sources) -> str:
    """'row of new vertex 6: in-links [...], expected [...]' for the first row that differs."""
    bad = np.flatnonzero((offsets[:-1] != want_offsets[:-1]) | (offsets[1:] != want_offsets[1:]))
    first = int(bad[0]) if bad.size else want_offsets.size - 1
    differ = np.flatnonzero(sources != want_sources)
    if differ.size:
        first = min(first, int(np.searchsorted(want_offsets, differ[0], side="right") - 1))
    a, b, c, d = offsets[first], offsets[first + 1], want_offsets[first], want_offsets[first + 1]
    return (f"row of new vertex {first}: in-links {sources[a:b][:8].tolist()}, expected "
            f"{want_sources[c:d][:8].tolist()}")


def _triple(graph: Graph, value):
    """(perm, in_offsets, in_sources, PageRank distance) when ``value`` is right, else Wrong."""
    if not (isinstance(value, (tuple, list)) and len(value) == 3):
        raise Wrong(f"returned {describe_value(value)}", "return a triple: (perm, in_offsets, in_sources)")
    perm = _perm(graph, as_array(value[0], "perm", "i", graph.num_vertices))
    offsets, sources = as_array(value[1], "in_offsets", "i"), as_array(value[2], "in_sources", "i")
    return perm, offsets, sources, _csr(graph, perm, offsets, sources)


def measured(graph: Graph, perm: np.ndarray, offsets: np.ndarray, sources: np.ndarray) -> str:
    """What the order does: sector requests per edge before and after, and a pull timed in both orders
    where there is a GPU."""
    if graph.num_edges < 32 * 32:
        return ""
    before, after = floors.sectors_per_edge(graph.in_sources), floors.sectors_per_edge(sources)
    found = f"sector requests per edge: {before:.3f} in the given order, {after:.3f} in yours"
    from helpers.measure.gpu import has_gpu

    if has_gpu():
        found += "; " + timed(graph, perm, offsets, sources)
    return found


def timed(graph: Graph, perm: np.ndarray, offsets: np.ndarray, sources: np.ndarray) -> str:
    """The course's pull_contrib in the given order and in yours, timed interleaved, with the verdict."""
    from helpers.measure import gpu, verdicts
    from helpers.driver import DeviceGraph, variant

    cp = gpu.require_gpu()
    pull = variant("pull_contrib")
    renamed = SimpleNamespace(num_vertices=graph.num_vertices, in_offsets=offsets, in_sources=sources,
                              out_degree=graph.out_degree[perm], name=f"{graph.name}, your order")
    given, yours = DeviceGraph(graph, variant="pull_contrib"), DeviceGraph(renamed, variant="pull_contrib")
    x = cp.asarray(np.random.default_rng(0).random(graph.num_vertices).astype(np.float32))
    x_yours, y, y_yours = x[cp.asarray(perm)], cp.empty_like(x), cp.empty_like(x)
    timings = gpu.time_paired({"given": lambda: pull(given, x, y), "yours": lambda: pull(yours, x_yours,
                                                                                         y_yours)})
    verdict = verdicts.compare(timings["yours"], timings["given"])
    return (f"on {gpu.device_facts().name}: " +
            verdict.sentence("pull_contrib in your order", "in the given order"))


def web_like(rng) -> Graph:
    """A web-like graph in crawl order, 50,000 vertices and 300,000 edges (the generator misses its
    targets on a few seeds: then the next seed)."""
    for _ in range(10):
        try:
            return generators.web_graph(50_000, 300_000, seed=int(rng.integers(2**31)), max_out_degree=150,
                                        max_in_degree=1500, name="web-like graph in crawl order (50,000 "
                                                                 "vertices)")
        except RuntimeError:
            continue
    raise RuntimeError("the web-like generator missed its targets on ten seeds in a row")


def check_reorder(function, seed=None, quiet: bool = False, time_limit: float = CPU_TIME_LIMIT) -> Report:
    """Exercise 22: ``function(num_vertices, in_offsets, in_sources, out_degree)`` returns ``(perm,
    in_offsets, in_sources)``: out-degree order and the renumbered in-CSR (see the module's docstring)."""
    start = begin(function, "reorder", seed, quiet)
    if isinstance(start, Report):
        return start
    seed, rng = start
    graphs = cpu_graphs(rng)
    graphs += [web_like(rng), generators.rmat_graph(50_000, 300_000, seed=int(rng.integers(2**31)),
                                                    name="R-MAT graph with random ids (50,000 vertices)")]
    given = [tuple(a.copy() for a in (g.in_offsets, g.in_sources, g.out_degree)) for g in graphs]
    calls = [Call((g.num_vertices,) + arrays) for g, arrays in zip(graphs, given)]
    names = ("in_offsets", "in_sources", "out_degree")

    def inputs():
        return {f"{k}|{name}": a for k, arrays in enumerate(given) for name, a in zip(names, arrays)}

    guard = [a for g in graphs for a in (g.in_offsets, g.in_sources, g.out_degree)]
    output = Output()
    results = run_calls(function, calls, inputs=inputs, guard=guard, time_limit=time_limit, output=output,
                        forbidden=ANSWERS)

    def check(k):
        graph = graphs[k]
        inputs_unchanged({name: getattr(graph, name) for name in names},
                         {name.split("|", 1)[1]: a for name, a in results.inputs.items()
                          if name.startswith(f"{k}|")})
        perm, offsets, sources, distance = checked(results, [k], lambda values: _triple(graph, values[0]))
        note = f"PageRank unchanged up to the renumbering ({STEPS} steps, L1 {distance:.0e})"
        found = measured(graph, perm, offsets, sources)
        return f"{note}; {found}" if found else note

    cases = [(g.name, k) for k, g in enumerate(graphs)]
    return run("reorder", seed, cases, check, quiet, results.notes, output, scale_review(graphs[9].name))
