"""The CPU exercise checkers (01 step, 02 transpose, 03 power iteration, 33 top-k): the student's function
runs under ``checks_limits`` on copies of fresh seeded inputs; the expected answer comes from pristine
copies the student never sees, and a changed input, a wrong type, dtype or shape, and the typical
conceptual errors (hard-coded damping, renormalising, float32, an iteration count off by one) are named.
"""
from __future__ import annotations

import dataclasses
import inspect

import numpy as np

from . import generators, reference
from .checks_limits import CPU_TIME_LIMIT, Output, call, limit_note
from .checks_report import (CHANGED_INPUT, Report, Wrong, changed, describe, fresh_seed, random_ranks, refused,
                            run, worst_vertex)
from .graph import Graph

DANGLING_LOST = ("dangling mass lost: the rank of vertices without out-links must be spread over all "
                 "vertices (d * dangling mass / n each); without it the ranks sum to less than 1")
NOT_SUMMING = ("ranks not summing to 1: rank is lost or created (each in-neighbour u gives d * rank[u] / "
               "out_degree[u]; every vertex gets (1 - d) / n from teleporting)")
TELEPORT_NOT_SHARED = ("ranks not summing to 1: the teleport term (1 - d) is shared by the n vertices, "
                       "(1 - d) / n each, and so is the dangling share d * D / n")
RENORMALISED = ("renormalised instead of spreading the dangling mass: dividing by the sum makes the ranks sum "
                "to 1, but it hands the dangling vertices' rank D out in proportion to the ranks; every vertex "
                "must get the same share, d * D / n")
UNDAMPED_DANGLING = ("the dangling share is not damped: every vertex gets d * D / n from the dangling vertices "
                     "(D = their total rank), not D / n")
OFF_BY_ONE = ("iteration count off by one: the course counts the steps taken, including the one whose L1 change "
              "fell below tol")
MAX_ITER = ("max_iter not honoured: when max_iter steps have been taken and the change is still not below tol, "
            "stop there and return the ranks after max_iter steps and max_iter")
GRAPH_ARRAYS = ("out_offsets", "out_targets", "in_offsets", "in_sources", "out_degree")
MATCH = 1e-11               # L1 distance under which two rank vectors are the same iterate (float64 noise ~1e-13)


def hard_coded(d: float) -> str:
    return (f"the damping factor is hard-coded: your result is what d = 0.85 gives, but this case passes "
            f"d = {d:.3f}; use the damping argument")


def float32_cause(relative: float) -> str:
    return (f"float32 rounding: the values are right to about 7 digits only (relative error {relative:.1e}): "
            "somewhere the computation runs in float32 (np.float32, dtype=np.float32, astype(np.float32)); "
            "the CPU exercises compute in float64")


def _cpu_graphs(rng) -> list[Graph]:
    """Tiny named graphs plus two fresh random ones with dangling and isolated vertices and a hub."""
    n1, n2 = 300 + int(rng.integers(1, 255)), 1000 + int(rng.integers(1, 255))
    return [generators.single_vertex(), generators.chain(5), generators.in_star(7), generators.all_dangling(4),
            generators.self_loop(), generators.two_components(),
            generators.adversarial_graph(n1, seed=int(rng.integers(2**31)), hub_in_links=n1 // 2),
            generators.random_graph(n2, seed=int(rng.integers(2**31)))]


# --- inputs handed out as copies and checked afterwards ----------------------------------------------

def _graph_copy(graph: Graph) -> Graph:
    """The same graph with arrays of its own: what the student's function receives."""
    ids = None if graph.original_ids is None else graph.original_ids.copy()
    return dataclasses.replace(graph, original_ids=ids, **{a: getattr(graph, a).copy() for a in GRAPH_ARRAYS})


def _inputs_unchanged(graph: Graph | None = None, given: Graph | None = None, **arrays) -> None:
    """Raise Wrong naming every input the student's function changed: graph arrays (and its cached
    in_matrix), and ``name=(pristine, given)`` arrays."""
    found = []
    if graph is not None:
        found += [changed(f"graph.{a}", getattr(graph, a), getattr(given, a)) for a in GRAPH_ARRAYS]
        matrix = given.__dict__.get("in_matrix")
        if matrix is not None:
            found += [changed("graph.in_matrix.data", np.ones(graph.num_edges), matrix.data),
                      changed("graph.in_matrix.indices", graph.in_sources, matrix.indices),
                      changed("graph.in_matrix.indptr", graph.in_offsets, matrix.indptr)]
    found += [changed(name, before, after) for name, (before, after) in arrays.items()]
    found = [f for f in found if f]
    if found:
        names = ", ".join(f.split(":")[0].split(" now")[0] for f in found)
        raise Wrong("; ".join(found), f"{CHANGED_INPUT} ({names}), which it must not: the caller uses the same "
                                      "arrays again (the next iteration, the next exercise, the checker's own "
                                      "answer); compute on a copy (np.maximum(degree, 1), ranks / total, "
                                      "np.sort(a)) instead of changing them in place")


# --- what comes back ---------------------------------------------------------------------------------

def _array(value, what: str, kind: str, size: int | None = None) -> np.ndarray:
    """``value`` as a 1-D array of floats (kind 'f') or integers (kind 'i'), or Wrong saying what came back."""
    wanted = "floats" if kind == "f" else "integers"
    if value is None or np.isscalar(value) or isinstance(value, (dict, set, str, bytes)):
        raise Wrong(f"{what} is {describe(value)}", f"{what} must be a 1-D array of {wanted}"
                    + (f", {size} of them" if size is not None else ""))
    try:
        array = np.asarray(value)
    except Exception:
        raise Wrong(f"{what} is {describe(value)}", f"{what} must be a 1-D array of {wanted}") from None
    if array.ndim != 1 or (size is not None and array.size != size):
        raise Wrong(f"{what} has shape {array.shape}" + (f"; expected ({size},)" if size is not None else ""),
                    f"{what} must be a 1-D array" + (f" of {size} {wanted}, one per vertex" if size is not None
                                                     else f" of {wanted}")
                    + (" (a 2-D result, e.g. from np.matrix or a sparse product, needs .ravel())" if array.ndim == 2
                       else ""))
    if kind == "f" and array.dtype != np.float64:
        if array.dtype.kind == "f":
            raise Wrong(f"{what} has dtype {array.dtype}", f"{what} must be float64: {array.dtype} keeps only "
                                                           f"{np.finfo(array.dtype).precision} digits, so sums and "
                                                           "the L1 change drift; the CPU exercises compute in float64")
        raise Wrong(f"{what} has dtype {array.dtype}", f"{what} must hold float64 values (ranks are fractions)")
    if kind == "i" and (array.dtype.kind not in "iu") and array.size:
        raise Wrong(f"{what} has dtype {array.dtype}",
                    f"{what} must hold integers (np.int32 or np.int64): {array.dtype} values cannot index or slice "
                    "an array (a[x:y] raises TypeError) and cannot feed a kernel that reads const int*; e.g. a "
                    "cumsum of a bincount with weights= gives floats")
    return array.astype(np.float64) if kind == "f" else array.astype(np.int64)


def _begin(function, exercise: str, seed, quiet: bool):
    """(seed, its generator, the capped output, a refusal when ``function`` is not a function, else None)."""
    seed = fresh_seed(seed)
    refusal = None if callable(function) else refused(
        exercise, seed, f"the checker got {describe(function)}",
        f"pass your function itself: checks.{exercise}({exercise}), without calling it", quiet)
    return seed, np.random.default_rng(seed), Output(), refusal


def _pair(value, what: str) -> tuple:
    if not (isinstance(value, (tuple, list)) and len(value) == 2):
        raise Wrong(f"returned {describe(value)}", f"return a pair: {what}")
    return tuple(value)


def _integer(value, what: str) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise Wrong(f"{what} is {describe(value)}", f"{what} must be an int (a count of steps)")
    return int(value)


# --- 01: one step --------------------------------------------------------------------------------------

def _step_parts(graph: Graph, ranks: np.ndarray, damping: float):
    """(d * pulled, dangling mass D) of one step in float64."""
    contrib = np.divide(ranks, graph.out_degree, out=np.zeros(graph.num_vertices), where=graph.out_degree > 0)
    return damping * (graph.in_matrix @ contrib), float(ranks[graph.dangling].sum())


def _step_variants(graph: Graph, ranks: np.ndarray, damping: float) -> dict[str, np.ndarray]:
    """One step as typical wrong answers compute it, by the cause that names each."""
    n = graph.num_vertices
    pulled, mass = _step_parts(graph, ranks, damping)
    no_dangling = pulled + (1.0 - damping) / n
    variants = {RENORMALISED: no_dangling / no_dangling.sum(),
                UNDAMPED_DANGLING: pulled + (mass + 1.0 - damping) / n,
                DANGLING_LOST: no_dangling,
                TELEPORT_NOT_SHARED: pulled + damping * mass / n + 1.0 - damping}
    if abs(damping - reference.DAMPING) > 0.01:
        variants[hard_coded(damping)] = reference.pagerank_step(graph, ranks, reference.DAMPING,
                                                                reference.teleport_vector(n))
    return variants


def _float32(expected: np.ndarray, got: np.ndarray) -> float | None:
    """The relative error when it looks like float32 rounding (1e-9 to 3e-6), else None."""
    relative = float(np.max(np.abs(got - expected) / np.maximum(np.abs(expected), 1e-300)))
    return relative if 1e-9 < relative <= 3e-6 else None


def _sum_check(graph: Graph, got: np.ndarray, ranks: np.ndarray, damping: float, what: str) -> None:
    """Raise with 'dangling mass lost' or 'not summing to 1' when the total is wrong."""
    total = float(got.sum())
    if abs(total - 1.0) <= 1e-9:
        return
    lost = damping * float(ranks[graph.dangling].sum())
    if graph.dangling.any() and abs(total - (1.0 - lost)) <= 1e-9:
        raise Wrong(f"{what} sum to {total:.9f}, short by {1 - total:.3g} = d × the dangling vertices' rank",
                    DANGLING_LOST)
    raise Wrong(f"{what} sum to {total:.9f}, not 1", NOT_SUMMING)


def pagerank_step(function, seed=None, quiet: bool = False, time_limit: float = CPU_TIME_LIMIT) -> Report:
    """Exercise 01: ``function(graph, ranks, damping)`` returns one power-iteration step (float64)."""
    seed, rng, output, refusal = _begin(function, "pagerank_step", seed, quiet)
    if refusal is not None:
        return refusal

    def check(graph):
        n = graph.num_vertices
        ranks, damping = random_ranks(rng, n), float(rng.uniform(0.6, 0.95))
        expected = reference.pagerank_step(graph, ranks, damping, reference.teleport_vector(n))
        given_graph, given_ranks = _graph_copy(graph), ranks.copy()
        value = call(function, given_graph, given_ranks, damping, time_limit=time_limit, output=output)
        _inputs_unchanged(graph, given_graph, ranks=(ranks, given_ranks))
        got = _array(value, "the returned ranks", "f", n)
        setting = f"with d = {damping:.3f}"
        if not np.isfinite(got).all():
            v = int(np.flatnonzero(~np.isfinite(got))[0])
            raise Wrong(f"{setting}: vertex {v} got {got[v]}", "a division by zero: a dangling vertex has "
                                                               "out-degree 0, its contribution must be 0")
        bad, where = worst_vertex(graph, expected, got, 1e-15 + 1e-10 * expected)
        if not bad.any():
            return None
        for cause, variant in _step_variants(graph, ranks, damping).items():
            if not np.allclose(variant, expected, rtol=1e-10, atol=1e-15) and \
                    np.allclose(got, variant, rtol=1e-10, atol=1e-15):
                raise Wrong(f"{setting}: {where}", cause)
        relative = _float32(expected, got)
        if relative:
            raise Wrong(f"{setting}: {where}", float32_cause(relative))
        _sum_check(graph, got, ranks, damping, f"{setting} the new ranks")
        raise Wrong(f"{setting}: {where}", "the sum over in-links is wrong: vertex v gets d * rank[u] / out_degree[u] "
                                           "from every u that links to it, counting u's out-degree, not v's")

    return run("pagerank_step", seed, [(g.name, g) for g in _cpu_graphs(rng)], check, quiet, limit_note(), output)


# --- 02: transpose -------------------------------------------------------------------------------------

def transpose(function, seed=None, quiet: bool = False, time_limit: float = CPU_TIME_LIMIT) -> Report:
    """Exercise 02: ``function(num_vertices, out_offsets, out_targets)`` returns (in_offsets, in_sources),
    the in-links of each vertex listed by increasing source, both integer arrays."""
    seed, rng, output, refusal = _begin(function, "transpose", seed, quiet)
    if refusal is not None:
        return refusal

    def check(graph):
        n, m = graph.num_vertices, graph.num_edges
        out_offsets, out_targets = graph.out_offsets.copy(), graph.out_targets.copy()
        value = call(function, n, out_offsets, out_targets, time_limit=time_limit, output=output)
        _inputs_unchanged(out_offsets=(graph.out_offsets, out_offsets), out_targets=(graph.out_targets, out_targets))
        first, second = _pair(value, "(in_offsets, in_sources)")
        got_offsets, got_sources = _array(first, "in_offsets", "i"), _array(second, "in_sources", "i")
        if got_offsets.size == m and got_sources.size == n + 1 and m != n + 1:
            raise Wrong(f"the first array has {m} entries (one per edge), the second {n + 1}",
                        "the pair is in the wrong order: return (in_offsets, in_sources)")
        if got_offsets.size != n + 1:
            raise Wrong(f"in_offsets has {got_offsets.size} entries; a graph of {n} vertices needs {n + 1}",
                        "wrong row bounds: one count per vertex, including vertices without in-links "
                        "(np.bincount(..., minlength=n)), and a leading 0")
        if got_offsets[0] != 0:
            raise Wrong(f"in_offsets[0] is {got_offsets[0]}", "wrong row bounds: the first row starts at 0")
        wrong = np.flatnonzero(got_offsets != graph.in_offsets)
        if wrong.size:
            v = max(int(wrong[0]) - 1, 0)
            raise Wrong(f"vertex {v}'s in-links span {got_offsets[v]}..{got_offsets[v + 1]}, expected "
                        f"{graph.in_offsets[v]}..{graph.in_offsets[v + 1]}",
                        "wrong row bounds: in_offsets[v] is how many in-links the vertices before v have")
        if got_sources.shape != graph.in_sources.shape:
            raise Wrong(f"in_sources has {got_sources.size} entries, expected {m}", "one entry per edge")
        for v in np.flatnonzero(np.diff(graph.in_offsets)):
            row = slice(graph.in_offsets[v], graph.in_offsets[v + 1])
            mine, truth = got_sources[row], graph.in_sources[row]
            if not np.array_equal(mine, truth):
                shown = f"vertex {v}: in-links {mine[:8].tolist()}, expected {truth[:8].tolist()}"
                if np.array_equal(np.sort(mine), truth):
                    raise Wrong(shown, "the right sources in the wrong order: list them by increasing source "
                                       "(a stable sort by target keeps the edge list's source order)")
                raise Wrong(shown, "row v must list the vertices that link to v (the edges' sources)")

    return run("transpose", seed, [(g.name, g) for g in _cpu_graphs(rng)], check, quiet, limit_note(), output)


# --- 03: power iteration -------------------------------------------------------------------------------

def _iterates(graph: Graph, damping: float, steps: int, step=None) -> list[np.ndarray]:
    """The rank vectors after 0, 1, ..., steps power-iteration steps from the uniform vector."""
    n = graph.num_vertices
    teleport = reference.teleport_vector(n)
    step = step or (lambda r: reference.pagerank_step(graph, r, damping, teleport))
    found = [teleport.copy()]
    for _ in range(steps):
        found.append(step(found[-1]))
    return found


def _norm_histories(iterates: list[np.ndarray]) -> dict[str, np.ndarray]:
    """L1 / N, L2 and max-norm of each step's change."""
    changes = [np.abs(b - a) for a, b in zip(iterates, iterates[1:])]
    n = iterates[0].size
    return {"L1 / N": np.array([c.sum() / n for c in changes]), "L2": np.array([np.sqrt((c ** 2).sum()) for c in changes]),
            "max": np.array([c.max() for c in changes])}


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return float(np.abs(a - b).sum()) <= MATCH


def _wrong_step(graph: Graph, damping: float, got: np.ndarray, k: int, truth_ranks, where: str) -> None:
    """The ranks are no iterate of the right step: name the wrong step when it is a typical one."""
    variants = {hard_coded(damping): lambda r: reference.pagerank_step(graph, r, reference.DAMPING,
                                                                        reference.teleport_vector(r.size))}
    if abs(damping - reference.DAMPING) <= 0.01 or k > 1000:
        variants = {}
    for cause in (RENORMALISED, UNDAMPED_DANGLING) if k <= 1000 else ():
        variants[cause] = (lambda cause: lambda r: _step_variants(graph, r, damping)[cause])(cause)
    for cause, step in variants.items():
        if any(_same(got, r) for r in _iterates(graph, damping, k + 1, step)[max(k - 1, 0):]):
            raise Wrong(where, cause)
    relative = _float32(truth_ranks, got)
    if relative:
        raise Wrong(where, float32_cause(relative))
    raise Wrong(where, "the step itself is wrong (check it with exercise 01)")


def _result(value, n: int) -> tuple[np.ndarray, int]:
    ranks, iterations = _pair(value, "(ranks, iterations)")
    return _array(ranks, "the returned ranks", "f", n), _integer(iterations, "iterations")


def power_iteration(function, seed=None, quiet: bool = False, time_limit: float = CPU_TIME_LIMIT) -> Report:
    """Exercise 03: ``function(graph, damping, tol, max_iter)`` returns (ranks, iterations): power iteration
    from the uniform vector until the L1 change of one step is below tol, counting every step taken
    (the last one too), or until max_iter steps, returning then the ranks after max_iter steps and max_iter."""
    seed, rng, output, refusal = _begin(function, "power_iteration", seed, quiet)
    if refusal is not None:
        return refusal
    graphs = _cpu_graphs(rng)
    try:
        inspect.signature(function).bind(graphs[0], 0.85, 1e-9, max_iter=10)
        takes_max_iter = True
    except TypeError:
        takes_max_iter = False
    except ValueError:          # no signature to read (a builtin): just call it
        takes_max_iter = True

    def check(case):
        graph, reached = case
        n = graph.num_vertices
        damping, tol = float(rng.uniform(0.6, 0.95)), float(10 ** rng.uniform(-9, -7))
        truth = reference.pagerank(graph, damping, tol, max_iter=100_000)
        max_iter = int(rng.integers(1, truth.iterations)) if reached else 10_000
        if not takes_max_iter:
            raise Wrong("the function does not take a max_iter argument",
                        "keep the signature power_iteration(graph, damping, tol, max_iter=100_000): the checker "
                        "passes max_iter", stop=True)
        given = _graph_copy(graph)
        value = call(function, given, damping, tol, max_iter=max_iter, time_limit=time_limit, output=output)
        _inputs_unchanged(graph, given)
        got, k = _result(value, n)
        setting = f"d = {damping:.3f}, tol = {tol:.2g}, max_iter = {max_iter:,}"
        total = float(got.sum())
        if not np.isfinite(got).all() or abs(total - 1.0) > 1e-6:
            lost = graph.dangling.any() and total < 1.0
            raise Wrong(f"{setting}: the ranks sum to {total:.9f}", DANGLING_LOST if lost else NOT_SUMMING)
        stop = min(truth.iterations, max_iter)
        detail = f"{setting}: returned {k} iterations; the L1 test stops after {stop}"
        if k > max_iter:
            raise Wrong(detail, MAX_ITER)
        if k < 1:
            raise Wrong(detail, "iterations counts the steps taken: at least 1")
        iterates = _iterates(graph, damping, max(k, stop) + 1)
        if not _same(got, iterates[k]):
            others = [j for j in (k - 1, k + 1) if j >= 0 and _same(got, iterates[j])]
            if others:
                raise Wrong(f"{setting}: your ranks are those after {others[0]} steps, but you return {k} "
                            "iterations", OFF_BY_ONE)
            bad, where = worst_vertex(graph, iterates[k], got, 1e-12 + 1e-9 * iterates[k])
            _wrong_step(graph, damping, got, k, iterates[k], f"{setting}, after {k} steps: {where}")
        if k == stop:
            return f"iterations: {k}" + (" (max_iter reached)" if reached else "")
        if reached:
            raise Wrong(detail, MAX_ITER + ("; yours is off by one" if k == max_iter - 1 else ""))
        boundary = truth.residuals[min(k, truth.iterations) - 1]
        if abs(k - stop) == 1 and abs(boundary - tol) <= 1e-9 * tol:
            return f"iterations: {k} (the change at the stop is within 1e-9 of tol: either count is right)"
        stops = {norm: int(np.argmax(h < tol)) + 1 for norm, h in _norm_histories(iterates).items() if (h < tol).any()}
        stops = {norm: at for norm, at in stops.items() if at != stop}     # only norms that stop elsewhere
        for slack in (0, 1):
            norms = [norm for norm, at in stops.items() if abs(at - k) <= slack]
            if norms:
                raise Wrong(detail, f"the stopping test uses the {' or the '.join(norms)} of the change"
                                    + (" (the residual is scaled by N)" if "L1 / N" in norms else "")
                                    + ": the course stops when sum(|new - old|) < tol")
            if slack == 0 and abs(k - stop) == 1:
                raise Wrong(detail, OFF_BY_ONE + (": stop right after that step" if k > stop else
                                                  ": take that step too, and count it"))
        raise Wrong(detail, "the stopping test or the iteration count is wrong: count every step taken, "
                            "and stop once sum(|new - old|) < tol")

    cases = [(g.name, (g, False)) for g in graphs]
    cases += [(f"{g.name}, stopped by max_iter", (g, True)) for g in (graphs[1], graphs[6], graphs[7])]
    return run("power_iteration", seed, cases, check, quiet, limit_note(), output)


# --- 33: top-k -----------------------------------------------------------------------------------------

def top_k(function, seed=None, quiet: bool = False, time_limit: float = CPU_TIME_LIMIT) -> Report:
    """Exercise 33: ``function(ranks, k)`` returns the indices of the k largest ranks (integers), largest
    first, ties to the smaller vertex id, all n of them when k > n."""
    seed, rng, output, refusal = _begin(function, "top_k", seed, quiet)
    if refusal is not None:
        return refusal
    n = 1000 + int(rng.integers(1, 100))
    vectors = {f"{n:,} ranks with many ties (5 distinct values)": rng.integers(1, 6, n) / 10.0,
               f"{n:,} distinct ranks": random_ranks(rng, n),
               "10 equal ranks": np.full(10, 0.1), "one rank": np.ones(1)}
    cases = [(f"{name}, k = {k}", (values, k)) for name, values in vectors.items()
             for k in sorted({1, 5, 37, values.size, values.size + 3})]

    def check(case):
        ranks, k = case
        given = ranks.copy()
        value = call(function, given, k, time_limit=time_limit, output=output)
        _inputs_unchanged(ranks=(ranks, given))
        expected = reference.top_k(ranks, k)
        try:
            got = _array(value, "the returned indices", "i")
        except Wrong as wrong:
            values = np.asarray(value) if isinstance(value, (np.ndarray, list, tuple)) else None
            if values is not None and values.shape == expected.shape and np.array_equal(values, ranks[expected]):
                raise Wrong(wrong.detail, "you returned the ranks themselves: return the vertex ids (indices) of "
                                          "the k largest ranks") from None
            raise
        if got.size != expected.size:
            raise Wrong(f"returned {got.size} indices, expected {expected.size}",
                        "k larger than the number of vertices returns all n" if k > ranks.size
                        else "return exactly k indices")
        if np.array_equal(got, expected):
            return None
        detail = f"returned {got[:8].tolist()}..., expected {expected[:8].tolist()}..."
        if ((got < 0) | (got >= ranks.size)).any():
            raise Wrong(detail, "indices outside 0..n-1: return vertex ids")
        if np.array_equal(ranks[got], ranks[expected]):
            raise Wrong(detail, "ties broken the wrong way: among equal ranks the smaller vertex id comes first "
                                "(a stable sort of -ranks, not a reversed sort of ranks)")
        if set(got.tolist()) == set(expected.tolist()):
            raise Wrong(detail, "the right vertices in the wrong order: largest rank first")
        missing = sorted(set(expected.tolist()) - set(got.tolist()))[0]
        raise Wrong(detail, f"vertex {missing} (rank {ranks[missing]:.6g}) belongs in the top {k} and is missing")

    return run("top_k", seed, cases, check, quiet, limit_note(), output)

