"""The CPU exercise checkers for one step (01), the transpose (02) and top-k (33): every case's calls of the
student's function run apart (``checks.isolation``) on copies of fresh seeded inputs, several calls per
run, results kept until the last call has returned; the expected answers come from the private copy of
the float64 reference (``checks.pristine``) on pristine inputs the student's code never sees. A changed
input, a wrong type, dtype or shape, a buffer returned twice, an integer type too narrow for the large
graph and the typical conceptual errors (hard-coded damping, renormalising, float32, ties) are named.
"""
from __future__ import annotations

import numpy as np

from helpers.core.graph import Graph
from helpers.checks.isolation import Call, run_calls
from helpers.checks.limits import CPU_TIME_LIMIT, Output
from helpers.checks.pristine import REFERENCE as REF
from helpers.checks.report import Report, Wrong, random_ranks, run, worst_vertex
from helpers.checks.returned import (
    as_array, as_pair, begin, checked, cpu_graphs, graph_arrays, graph_copy, inputs_unchanged,
    overflow_cause, pristine_arrays, scale_review, state_explains, wrapped_type)

__all__ = ["check_pagerank_step", "check_top_k", "check_transpose"]

DANGLING_LOST = ("dangling mass lost: the rank of vertices without out-links must be spread over all "
                 "vertices (d * dangling mass / n each); without it the ranks sum to less than 1")
NOT_SUMMING = ("ranks not summing to 1: rank is lost or created (each in-neighbour u gives d * rank[u] / "
               "out_degree[u]; every vertex gets (1 - d) / n from teleporting)")
TELEPORT_NOT_SHARED = ("ranks not summing to 1: the teleport term (1 - d) is shared by the n vertices, (1 "
                       "- d) / n each, and so is the dangling share d * D / n")
RENORMALISED = ("renormalised instead of spreading the dangling mass: dividing by the sum makes the ranks "
                "sum to 1, but it hands the dangling vertices' rank D out in proportion to the ranks; "
                "every vertex must get the same share, d * D / n")
UNDAMPED_DANGLING = ("the dangling share is not damped: every vertex gets d * D / n from the dangling "
                     "vertices (D = their total rank), not D / n")
SELF_LOOPS_DROPPED = ("self-loops dropped: an edge u -> u is an in-link of u like any other (it counts in "
                      "u's out-degree, so u keeps d * rank[u] / out_degree[u] of its own rank); sum over "
                      "every edge graph.edges() lists")
IN_DEGREE_DANGLING = ("the dangling vertices are those without out-links (graph.dangling, out_degree == 0), "
                      "not those without in-links: the mass D = ranks[graph.dangling].sum()")
KEPT_STATE = ("state kept across calls: the first call on this graph is right, the second (other ranks, "
              "other d) returns {what}: your function keeps something from an earlier call (a cache, a "
              "global, a buffer) and uses it again; compute everything from the arguments of each call")
IN_LINKS = ("the sum over in-links is wrong: vertex v gets d * rank[u] / out_degree[u] from every u that "
            "links to it, counting u's out-degree, not v's")
K_ZERO = ("k = 0 must give no index: a slice such as order[-k:] or order[:-k] gives the whole array when k "
          "is 0 (-0 is 0); slice the largest-first order with order[:k]")
TRANSPOSE_LOOPS = ("self-loops dropped: an edge u -> u is an in-link of u like any other, so u is among its "
                   "own in_sources; keep every edge of the out-CSR")
OUT_COUNTED = ("in_offsets counts each vertex's out-links (np.diff(out_offsets)): a row of the in-CSR holds "
               "the vertex's in-links, counted by target (np.bincount(out_targets, minlength=n))")
PRISTINE = "helpers.checks.pristine.REFERENCE."
STEP_ANSWERS = ("helpers.core.reference.pagerank_step", "helpers.core.reference.pagerank", PRISTINE + "pagerank_step",
                PRISTINE + "pagerank")
TRANSPOSE_ANSWERS = ("helpers.core.graph.from_edges", "helpers.core.graph._build")
TOP_K_ANSWERS = ("helpers.core.reference.top_k", PRISTINE + "top_k")
COARSE_COMPARE = ("the ranks were compared {how}: ranks closer than that can tell apart ({example}) become "
                  "equal there and are then ordered by id, not by value; sort the float64 ranks themselves")


TERM_NAMES = ("d * pulled", "d * D / n", "(1 - d) / n")
TERMS = [(t,) for t in TERM_NAMES] + [(a, b) for i, a in enumerate(TERM_NAMES) for b in TERM_NAMES[i + 1:]]


def hard_coded(d: float, terms: tuple = ()) -> str:
    """The cause when the result is what d = 0.85 gives (in ``terms`` only, when given) instead of the d
    passed."""
    if terms:
        return (f"the damping factor is hard-coded in {' and '.join(terms)}: there your result uses d = "
                f"0.85, but this case passes d = {d:.3f}; use the damping argument in every term")
    return ("the damping factor is hard-coded: your result is what d = 0.85 gives, but this case passes d "
            f"= {d:.3f}; use the damping argument")


def float32_cause(relative: float) -> str:
    """The cause when the values carry float32 rounding (relative error given)."""
    return ("float32 rounding: the values are right to about 7 digits only (relative error "
            f"{relative:.1e}): somewhere the computation runs in float32 (np.float32, dtype=np.float32, "
            "astype(np.float32)); the CPU exercises compute in float64")


def float32_error(expected: np.ndarray, got: np.ndarray) -> float | None:
    """The relative error when it looks like float32 rounding (1e-9 to 3e-6), else None."""
    relative = float(np.max(np.abs(got - expected) / np.maximum(np.abs(expected), 1e-300)))
    return relative if 1e-9 < relative <= 3e-6 else None


def step(graph: Graph, ranks: np.ndarray, damping: float) -> np.ndarray:
    """One float64 step of the private reference."""
    return REF.pagerank_step(graph, ranks, damping, REF.teleport_vector(graph.num_vertices))


# --- 01: one step --------------------------------------------------------------------------------------

def step_takes(graph: Graph, damping: float) -> dict:
    """One step as typical wrong answers compute it: the cause that names each -> its step (ranks -> new
    ranks), the damping hard-coded in one or two of the three terms among them when d is not 0.85."""
    n, d = graph.num_vertices, damping
    sources, targets = graph.edges()
    loops = sources[sources == targets]

    def shares(ranks):
        return np.divide(ranks, graph.out_degree, out=np.zeros(n), where=graph.out_degree > 0)

    def pulled(ranks):
        return graph.in_matrix @ shares(ranks)

    def mass(ranks):
        return float(ranks[graph.dangling].sum())

    def no_dangling(ranks):
        return d * pulled(ranks) + (1.0 - d) / n

    def no_loops(ranks):
        own = np.bincount(loops, weights=shares(ranks)[loops], minlength=n)
        return d * (pulled(ranks) - own) + (d * mass(ranks) + 1.0 - d) / n

    takes = {RENORMALISED: lambda r: no_dangling(r) / no_dangling(r).sum(), SELF_LOOPS_DROPPED: no_loops,
             IN_DEGREE_DANGLING: lambda r: d * pulled(r) + (d * float(r[graph.in_degree == 0].sum()) + 1.0
                                                            - d) / n,
             UNDAMPED_DANGLING: lambda r: d * pulled(r) + (mass(r) + 1.0 - d) / n,
             DANGLING_LOST: no_dangling,
             TELEPORT_NOT_SHARED: lambda r: d * pulled(r) + d * mass(r) / n + 1.0 - d}
    if abs(d - REF.DAMPING) > 1e-6:
        takes[hard_coded(d)] = lambda r: step(graph, r, REF.DAMPING)
        for terms in TERMS:
            a, b, c = (REF.DAMPING if term in terms else d for term in TERM_NAMES)
            takes[hard_coded(d, terms)] = (lambda a, b, c: lambda r: a * pulled(r) + (b * mass(r) + 1.0 - c)
                                           / n)(a, b, c)
    return takes


def step_variants(graph: Graph, ranks: np.ndarray, damping: float) -> dict[str, np.ndarray]:
    """One step as typical wrong answers compute it, by the cause that names each (``step_takes``)."""
    return {cause: take(ranks) for cause, take in step_takes(graph, damping).items()}


def sum_check(graph: Graph, got: np.ndarray, ranks: np.ndarray, damping: float, what: str) -> None:
    """Raise with 'dangling mass lost' or 'not summing to 1' when the total is wrong."""
    total = float(got.sum())
    if abs(total - 1.0) <= 1e-9:
        return
    lost = damping * float(ranks[graph.dangling].sum())
    if graph.dangling.any() and abs(total - (1.0 - lost)) <= 1e-9:
        raise Wrong(f"{what} sum to {total:.9f}, short by {1 - total:.3g} = d × the dangling vertices' "
                    "rank", DANGLING_LOST)
    raise Wrong(f"{what} sum to {total:.9f}, not 1", NOT_SUMMING)


def _close(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal within float64 noise of one step."""
    return bool(np.allclose(a, b, rtol=1e-10, atol=1e-15))


def _one_step(graph: Graph, settings, j: int, got: np.ndarray, first_right: bool) -> None:
    """Raise Wrong with the likely cause when call j's ranks are not the step of its inputs."""
    ranks, damping = settings[j]
    expected = step(graph, ranks, damping)
    setting = f"call {j + 1} of 2 on this graph, d = {damping:.3f}"
    if not np.isfinite(got).all():
        v = int(np.flatnonzero(~np.isfinite(got))[0])
        raise Wrong(f"{setting}: vertex {v} got {got[v]}", "a division by zero: a dangling vertex has "
                                                           "out-degree 0, its contribution must be 0")
    bad, where = worst_vertex(graph, expected, got, 1e-15 + 1e-10 * expected)
    if not bad.any():
        return
    for cause, variant in step_variants(graph, ranks, damping).items():
        if not _close(variant, expected) and _close(got, variant):
            raise Wrong(f"{setting}: {where}", cause)
    if j == 1 and first_right:                 # the same graph, right the first time: state between calls
        kept = any(_close(got, step(graph, settings[0][0], d)) for d in (damping, settings[0][1]))
        raise Wrong(f"{setting}: {where}", KEPT_STATE.format(what="what the first call's ranks give" if kept
                                                             else "wrong ranks"))
    relative = float32_error(expected, got)
    if relative:
        raise Wrong(f"{setting}: {where}", float32_cause(relative))
    sum_check(graph, got, ranks, damping, f"{setting}: the new ranks")
    raise Wrong(f"{setting}: {where}", IN_LINKS)


def check_pagerank_step(function, seed=None, quiet: bool = False,
                        time_limit: float = CPU_TIME_LIMIT) -> Report:
    """Exercise 01: ``function(graph, ranks, damping)`` returns one power-iteration step (float64). Called
    twice per graph (other ranks, other d, the same graph object), both results kept until the end."""
    start = begin(function, "pagerank_step", seed, quiet)
    if isinstance(start, Report):
        return start
    seed, rng = start
    graphs, cases, calls, given = cpu_graphs(rng), [], [], []
    for g in graphs:
        settings = [(random_ranks(rng, g.num_vertices), float(rng.uniform(0.6, 0.95))) for _ in range(2)]
        copy, ranks = graph_copy(g), [r.copy() for r, _ in settings]
        cases.append((g.name, (g, settings, len(calls), len(given))))
        calls += [Call((copy, ranks[j], settings[j][1])) for j in range(2)]
        given.append((copy, ranks))

    def inputs():
        found = {}
        for k, (copy, ranks) in enumerate(given):
            found.update({f"{k}|{name}": a for name, a in graph_arrays(copy).items()})
            found.update({f"{k}|ranks (call {j + 1})": r for j, r in enumerate(ranks)})
        return found

    guard = [a for _, (g, settings, _, _) in cases
             for a in list(pristine_arrays(g).values()) + [settings[0][0], settings[1][0]]]
    output = Output()
    results = run_calls(function, calls, inputs=inputs, guard=guard, time_limit=time_limit, output=output,
                        forbidden=STEP_ANSWERS)

    def check(case):
        graph, settings, first, k = case
        n = graph.num_vertices
        results.value(first), results.value(first + 1)
        before = pristine_arrays(graph)
        before.update({f"ranks (call {j + 1})": settings[j][0] for j in range(2)})
        inputs_unchanged(before, {name.split("|", 1)[1]: a for name, a in results.inputs.items()
                                  if name.startswith(f"{k}|")})

        def both(values):
            first_right = False
            for j in range(2):
                with state_explains(results, [first + j]):
                    got = as_array(values[j], "the returned ranks", "f", n)
                    _one_step(graph, settings, j, got, first_right)
                first_right = j == 0

        checked(results, [first, first + 1], both)

    return run("pagerank_step", seed, cases, check, quiet, results.notes, output,
               scale_review(graphs[-1].name))


# --- 02: transpose -------------------------------------------------------------------------------------

def _key_order(graph: Graph, dtype) -> np.ndarray:
    """in_sources as a sort by the key target * n + source computed in ``dtype`` (wrapping) gives them."""
    sources, targets = graph.edges()
    key = targets.astype(dtype) * np.asarray([graph.num_vertices], dtype=dtype) + sources.astype(dtype)
    return sources[np.argsort(key, kind="stable")]


def _offsets(graph: Graph, got: np.ndarray) -> None:
    n = graph.num_vertices
    if got.size != n + 1:
        raise Wrong(f"in_offsets has {got.size} entries; a graph of {n} vertices needs {n + 1}",
                    "wrong row bounds: one count per vertex, including vertices without in-links "
                    "(np.bincount(..., minlength=n)), and a leading 0")
    if got[0] != 0:
        raise Wrong(f"in_offsets[0] is {got[0]}", "wrong row bounds: the first row starts at 0")
    wrong = np.flatnonzero(got != graph.in_offsets)
    if not wrong.size:
        return
    v = max(int(wrong[0]) - 1, 0)
    detail = (f"vertex {v}'s in-links span {got[v]}..{got[v + 1]}, expected "
              f"{graph.in_offsets[v]}..{graph.in_offsets[v + 1]}")
    sources, targets = graph.edges()
    for counts, cause in ((np.bincount(targets[sources != targets], minlength=n), TRANSPOSE_LOOPS),
                          (graph.out_degree, OUT_COUNTED)):
        if np.array_equal(got, np.concatenate([[0], np.cumsum(counts)])):
            raise Wrong(detail, cause)
    counts = wrapped_type(np.diff(got), np.diff(graph.in_offsets))
    if counts is not None:
        hub = int(np.argmax(graph.in_degree))
        raise Wrong(detail, overflow_cause("the in-link counts", counts, int(graph.in_degree[hub]),
                                           f"vertex {hub}'s count"))
    offsets = wrapped_type(got, graph.in_offsets)
    if offsets is not None:
        raise Wrong(detail, overflow_cause("the offsets", offsets, graph.num_edges,
                                           "the last offset (one per edge)"))
    raise Wrong(detail, "wrong row bounds: in_offsets[v] is how many in-links the vertices before v have")


def _sources(graph: Graph, got: np.ndarray) -> None:
    n, m = graph.num_vertices, graph.num_edges
    if got.shape != graph.in_sources.shape:
        raise Wrong(f"in_sources has {got.size} entries, expected {m}", "one entry per edge")
    if np.array_equal(got, graph.in_sources):
        return
    first = int(np.flatnonzero(got != graph.in_sources)[0])
    v = int(np.searchsorted(graph.in_offsets, first, side="right") - 1)
    row = slice(graph.in_offsets[v], graph.in_offsets[v + 1])
    mine, truth = got[row], graph.in_sources[row]
    shown = f"vertex {v}: in-links {mine[:8].tolist()}, expected {truth[:8].tolist()}"
    ids = wrapped_type(got, graph.in_sources)
    if ids is not None:
        raise Wrong(shown, overflow_cause("the vertex ids", ids, n - 1, "the largest id"))
    for dtype in (np.int32, np.uint32):
        if n * n > np.iinfo(dtype).max and np.array_equal(got, _key_order(graph, dtype)):
            raise Wrong(shown, overflow_cause("the sort key target * n + source", dtype, n * n - 1,
                                              f"with n = {n:,} it"))
    if np.array_equal(np.sort(mine), truth):
        raise Wrong(shown, "the right sources in the wrong order: list them by increasing source (a stable "
                           "sort by target keeps the edge list's source order)")
    if ((got < 0) | (got >= n)).any():
        raise Wrong(shown, "ids outside 0..n-1 in in_sources: each entry is the source vertex of an in-link"
                    + ("; negative ones come from an integer that overflowed" if (got < 0).any() else ""))
    raise Wrong(shown, "row v must list the vertices that link to v (the edges' sources)")


def check_transpose(function, seed=None, quiet: bool = False, time_limit: float = CPU_TIME_LIMIT) -> Report:
    """Exercise 02: ``function(num_vertices, out_offsets, out_targets)`` returns (in_offsets, in_sources),
    the in-links of each vertex listed by increasing source, both integer arrays."""
    start = begin(function, "transpose", seed, quiet)
    if isinstance(start, Report):
        return start
    seed, rng = start
    graphs = cpu_graphs(rng)
    given = [(g.out_offsets.copy(), g.out_targets.copy()) for g in graphs]
    calls = [Call((g.num_vertices,) + pair) for g, pair in zip(graphs, given)]

    def inputs():
        return {f"{k}|{name}": a for k, pair in enumerate(given)
                for name, a in zip(("out_offsets", "out_targets"), pair)}

    guard = [a for g in graphs for a in (g.out_offsets, g.out_targets, g.in_offsets, g.in_sources)]
    output = Output()
    results = run_calls(function, calls, inputs=inputs, guard=guard, time_limit=time_limit, output=output,
                        forbidden=TRANSPOSE_ANSWERS)

    def check(k):
        graph = graphs[k]
        results.value(k)
        inputs_unchanged({"out_offsets": graph.out_offsets, "out_targets": graph.out_targets},
                         {name.split("|", 1)[1]: a for name, a in results.inputs.items()
                          if name.startswith(f"{k}|")})
        checked(results, [k], lambda values: _transposed(graph, values[0]))

    cases = [(g.name, k) for k, g in enumerate(graphs)]
    return run("transpose", seed, cases, check, quiet, results.notes, output, scale_review(graphs[-1].name))


def _transposed(graph: Graph, value) -> None:
    """Raise Wrong with the likely cause when ``value`` is not the pair (in_offsets, in_sources)."""
    n, m = graph.num_vertices, graph.num_edges
    first, second = as_pair(value, "(in_offsets, in_sources)")
    got_offsets = as_array(first, "in_offsets", "i")
    got_sources = as_array(second, "in_sources", "i")
    if got_offsets.size == m and got_sources.size == n + 1 and m != n + 1:
        raise Wrong(f"the first array has {m} entries (one per edge), the second {n + 1}",
                    "the pair is in the wrong order: return (in_offsets, in_sources)")
    _offsets(graph, got_offsets)
    _sources(graph, got_sources)


# --- 33: top-k -----------------------------------------------------------------------------------------

def _near_ties(rng, n: int) -> np.ndarray:
    """Ranks of which about half are 0.1 + j * 1e-12: distinct in float64, all equal in float32."""
    ranks = rng.uniform(0.01, 0.09, n)
    close = rng.random(n) < 0.5
    ranks[close] = 0.1 + rng.permutation(int(close.sum())) * 1e-12
    return ranks


def _top_k_wrong(ranks: np.ndarray, k: int, got: np.ndarray, expected: np.ndarray) -> None:
    n = ranks.size
    if got.size != expected.size:
        if k == 0 and got.size:
            raise Wrong(f"returned {got.size} indices for k = 0", K_ZERO)
        raise Wrong(f"returned {got.size} indices, expected {expected.size}",
                    "k larger than the number of vertices returns all n" if k > n
                    else "return exactly k indices")
    if np.array_equal(got, expected):
        return
    detail = f"returned {got[:8].tolist()}..., expected {expected[:8].tolist()}..."
    narrow = wrapped_type(got, expected)
    if narrow is not None:
        raise Wrong(detail, overflow_cause("the vertex ids", narrow, n - 1, "the largest id"))
    if ((got < 0) | (got >= n)).any():
        raise Wrong(detail, "indices outside 0..n-1: return vertex ids")
    if np.array_equal(ranks[got], ranks[expected]):
        raise Wrong(detail, "ties broken the wrong way: among equal ranks the smaller vertex id comes "
                            "first (a stable sort of -ranks, not a reversed sort of ranks)")
    coarse = [(ranks.astype(np.float32), "in float32", "0.1 and 0.1 + 1e-12"),
              (ranks.astype(np.float16), "in float16", "ranks that agree in 3 digits")]
    coarse += [(np.round(ranks, d), f"rounded to {d} decimals", f"ranks less than 1e-{d} apart")
               for d in range(15, 0, -1)]
    explained = [(how, example) for values, how, example in coarse
                 if np.array_equal(got, np.argsort(-values, kind="stable")[:k])]
    if explained:                                     # every coarser form whose top k yours is
        raise Wrong(detail, COARSE_COMPARE.format(how=" or ".join(h for h, _ in explained[:3]),
                                                  example=explained[0][1]))
    if k < n and np.array_equal(ranks[got], np.sort(ranks)[:k]):
        raise Wrong(detail, "the k smallest ranks, smallest first: return the largest, largest first (a "
                            "stable sort of -ranks)")
    if set(got.tolist()) == set(expected.tolist()):
        raise Wrong(detail, "the right vertices in the wrong order: largest rank first")
    missing = sorted(set(expected.tolist()) - set(got.tolist()))[0]
    raise Wrong(detail, f"vertex {missing} (rank {ranks[missing]:.17g}) belongs in the top {k} and is "
                        "missing")


def check_top_k(function, seed=None, quiet: bool = False, time_limit: float = CPU_TIME_LIMIT) -> Report:
    """Exercise 33: ``function(ranks, k)`` returns the indices of the k largest ranks (integers), largest
    first, ties to the smaller vertex id, none for k = 0, all n of them when k > n."""
    start = begin(function, "top_k", seed, quiet)
    if isinstance(start, Report):
        return start
    seed, rng = start
    n, large = 1000 + int(rng.integers(1, 100)), 2**16 + int(rng.integers(1000, 3000))
    vectors = {f"{n:,} ranks with many ties (5 distinct values)": rng.integers(1, 6, n) / 10.0,
               f"{n:,} distinct ranks": random_ranks(rng, n),
               "300 ranks, near-ties closer than float32 can tell (0.1 + j * 1e-12)": _near_ties(rng, 300),
               "10 equal ranks": np.full(10, 0.1), "one rank": np.ones(1),
               f"{large:,} ranks (ids past 2**16)": random_ranks(rng, large)}
    pairs = [(name, values, k) for name, values in vectors.items()
             for k in sorted({0, 1, 5, 37, values.size, values.size + 3})]
    cases = [(f"{name}, k = {k}", (values, k, i)) for i, (name, values, k) in enumerate(pairs)]
    given = [values.copy() for _, values, _ in pairs]
    calls = [Call((copy, k)) for copy, (_, _, k) in zip(given, pairs)]
    output = Output()
    results = run_calls(function, calls, inputs=lambda: {str(i): a for i, a in enumerate(given)},
                        guard=list(vectors.values()), time_limit=time_limit, output=output,
                        forbidden=TOP_K_ANSWERS)

    def check(case):
        ranks, k, i = case
        results.value(i)
        given_back = {"ranks": a for name, a in results.inputs.items() if name == str(i)}
        inputs_unchanged({"ranks": ranks}, given_back)
        expected = REF.top_k(ranks, k)

        def one(values):
            try:
                got = as_array(values[0], "the returned indices", "i")
            except Wrong as wrong:
                value = values[0]
                values = np.asarray(value) if isinstance(value, (np.ndarray, list, tuple)) else None
                if values is not None and values.shape == expected.shape and values.dtype.kind == "f" \
                        and np.array_equal(values, ranks[expected]):
                    raise Wrong(wrong.detail, "you returned the ranks themselves: return the vertex ids "
                                              "(indices) of the k largest ranks") from None
                raise
            _top_k_wrong(ranks, k, got, expected)

        checked(results, [i], one)

    return run("top_k", seed, cases, check, quiet, results.notes, output, scale_review(list(vectors)[-1]))
