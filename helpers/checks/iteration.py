"""The CPU checker of exercise 03, power iteration: the student's function runs apart (``checks.isolation``)
on copies of fresh seeded graphs, one of them run a second time at the end; the ranks and the iteration
count are compared with the private float64 reference's iterates from the uniform vector. Causes are
named from what the ranks are: an iterate off by one, the iterate of another stopping norm, of a wrong
step, of a float32 start vector, a vector converged from another start (a warm start), float32 noise.
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass

import numpy as np

from helpers.core.graph import Graph
from helpers.checks.cpu import DANGLING_LOST, NOT_SUMMING, float32_cause, float32_error, step, step_takes
from helpers.checks.isolation import Call, run_calls
from helpers.checks.limits import CPU_TIME_LIMIT, Output
from helpers.checks.pristine import REFERENCE as REF
from helpers.checks.report import Report, Wrong, largest_difference, run, worst_vertex
from helpers.checks.returned import (
    as_array, as_integer, as_pair, begin, checked, cpu_graphs, graph_arrays, graph_copy, inputs_unchanged,
    pristine_arrays, scale_review)

__all__ = ["check_power_iteration"]

OFF_BY_ONE = ("iteration count off by one: the course counts the steps taken, including the one whose L1 "
              "change fell below tol")
MAX_ITER = ("max_iter not honoured: when max_iter steps have been taken and the change is still not below "
            "tol, stop there and return the ranks after max_iter steps and max_iter")
NO_CHANGE = ("the loop stopped after {k} step(s) although the L1 change of step {k} is {change:.3g} (>= "
             "tol), so the change it tested was about 0: it must be sum(|new - old|) over two different "
             "arrays — |sum(new) - sum(old)| is always about 0 (both sum to 1), and so is the change "
             "between an array and itself (new and old one array: a step that writes into the array it was "
             "given, or returns one buffer every time)")
WARM_START = ("a warm start: this run started from the ranks an earlier call returned ({earlier}), not "
              "from the uniform vector 1/n — something kept between calls (a global, a default argument, "
              "a cache); start every run from np.full(n, 1.0 / n)")
FLOAT32_START = ("the start vector is float32: 1/n rounded to float32 is off by up to 3e-8 (relative), and "
                 "the error fades by d at every step, so the ranks differ from the course's by a little "
                 "less each step; start from np.full(n, 1.0 / n) in float64")
OTHER_START = ("another start vector: your ranks have converged (one more float64 step changes them by "
               "{change:.2g} < tol) but they are not the iterate after {k} steps from the uniform vector "
               "1/n — a warm start (ranks kept from an earlier call) or a start other than 1/n; start "
               "every run from np.full(n, 1.0 / n)")
UNEXPLAINED = ("your ranks are not the course's iterate after {k} steps from the uniform vector, and none "
               "of the usual causes fits (a hard-coded, undamped or renormalised step, float32, another "
               "start): check the step with exercise 01, the start vector and what the loop keeps between "
               "steps")
OTHER_START_NAMED = ("the start vector is {start}, not the uniform vector 1/n: start every run from "
                     "np.full(n, 1.0 / n)")
ANSWERS = ("helpers.core.reference.pagerank", "helpers.core.reference.iterate",
           "helpers.checks.pristine.REFERENCE.pagerank")          # the course's own answer (``borrowed``)
MATCH = 1e-11               # L1 distance below which two rank vectors are one iterate (float64 noise ~1e-13)
FLOAT32_START_ERROR = 3e-7  # the most L1 error a float32 start (or first step) leaves in the first iterate


def iterates(graph: Graph, damping: float, steps: int, take=None, start=None) -> list[np.ndarray]:
    """The rank vectors after 0, 1, ..., steps power-iteration steps from ``start`` (the uniform vector)."""
    n = graph.num_vertices
    take = take or (lambda r: step(graph, r, damping))
    found = [np.full(n, 1.0 / n) if start is None else start]
    for _ in range(steps):
        found.append(take(found[-1]))
    return found


def norm_histories(found: list[np.ndarray]) -> dict[str, np.ndarray]:
    """L1 / N, L2 and max-norm of each step's change."""
    changes = [np.abs(b - a) for a, b in zip(found, found[1:])]
    n = found[0].size
    return {"L1 / N": np.array([c.sum() / n for c in changes]),
            "L2": np.array([np.sqrt((c ** 2).sum()) for c in changes]),
            "max": np.array([c.max() for c in changes])}


def same(a: np.ndarray, b: np.ndarray) -> bool:
    """One iterate: L1 distance within float64 noise (``MATCH``)."""
    return float(np.abs(a - b).sum()) <= MATCH


def explained(graph: Graph, damping: float, got: np.ndarray, k: int, earlier: dict) -> str | None:
    """The cause when ``got`` is the iterate after k steps (give or take one) of a wrong step (``step_takes``)
    from 1/n, of the right step from another start (a common wrong one, or the ranks of an earlier call:
    a warm start); None otherwise or past 1,000 steps."""
    if k > 1000:
        return None
    n = graph.num_vertices
    runs = [(cause, iterates(graph, damping, k + 1, take))
            for cause, take in step_takes(graph, damping).items()]
    starts = {f"np.{name}(n)": start for name, start in (("ones", np.ones(n)), ("zeros", np.zeros(n)))}
    runs += [(OTHER_START_NAMED.format(start=name), iterates(graph, damping, k + 1, start=start))
             for name, start in starts.items()]
    runs += [(WARM_START.format(earlier=name), iterates(graph, damping, k + 1, start=ranks))
             for name, ranks in earlier.items()]
    for cause, found in runs:       # float64 noise grows with the values (np.ones(n) sums to n)
        if any(float(np.abs(got - r).sum()) <= MATCH * max(1.0, float(np.abs(r).sum()))
               for r in found[max(k - 1, 0):]):
            return cause
    return None


def _wrong_iterate(graph: Graph, damping: float, tol: float, got: np.ndarray, k: int, truth, where: str,
                   earlier: dict) -> None:
    """The ranks are no iterate of the right step from 1/n: name what they are, when the evidence says.
    ``earlier`` maps the name of each earlier call on this graph to the ranks it returned. An error made in
    the start vector (or the first step) fades by d at every step, as float32 noise made at every step does
    not: an error within float32's reach of the first iterate, shrunk by d**(k - 1), is a float32 start."""
    cause = explained(graph, damping, got, k, earlier)
    if cause:
        raise Wrong(where, cause)
    distance = float(np.abs(got - truth).sum())
    if distance <= FLOAT32_START_ERROR * damping ** (k - 1) + MATCH:
        raise Wrong(where, FLOAT32_START)
    change = float(np.abs(step(graph, got, damping) - got).sum())
    if abs(float(got.sum()) - 1.0) <= 1e-12 and change < tol:
        raise Wrong(where, OTHER_START.format(change=change, k=k))
    relative = float32_error(truth, got)
    if relative:
        raise Wrong(where, float32_cause(relative))
    raise Wrong(where, UNEXPLAINED.format(k=k))


def _stopping(truth: Truth, found, k: int, tol: float, stop: int, reached: bool, detail: str) -> str:
    """The ranks are the iterate after k steps: check k against where the L1 test stops."""
    if k == stop:
        return f"iterations: {k}" + (" (max_iter reached)" if reached else "")
    if reached:
        raise Wrong(detail, MAX_ITER + ("; yours is off by one" if k == stop - 1 else ""))
    boundary = truth.residuals[min(k, truth.iterations) - 1]
    if abs(k - stop) == 1 and abs(boundary - tol) <= 1e-9 * tol:
        return (f"iterations: {k} (the change at the stop is within a relative 1e-9 of tol: either count "
                "is right)")
    stops = {norm: int(np.argmax(h < tol)) + 1 for norm, h in norm_histories(found).items()
             if (h < tol).any()}
    stops = {norm: at for norm, at in stops.items() if at != stop}     # only norms that stop elsewhere
    for slack in (0, 1):
        norms = [norm for norm, at in stops.items() if abs(at - k) <= slack]
        if norms:
            raise Wrong(detail, f"the stopping test uses the {' or the '.join(norms)} of the change"
                                + (" (the residual is scaled by N)" if "L1 / N" in norms else "")
                                + ": the course stops when sum(|new - old|) < tol")
        if slack == 0 and k < stop - 1 and truth.residuals[k - 1] >= tol:
            raise Wrong(detail, NO_CHANGE.format(k=k, change=truth.residuals[k - 1]))
        if slack == 0 and abs(k - stop) == 1:
            raise Wrong(detail, OFF_BY_ONE + (": stop right after that step" if k > stop else
                                              ": take that step too, and count it"))
    raise Wrong(detail, "the stopping test or the iteration count is wrong: count every step taken, and "
                        "stop once sum(|new - old|) < tol")


def _check_run(graph: Graph, damping: float, tol: float, max_iter: int, reached: bool, truth: Truth, value,
               earlier: dict) -> str:
    n = graph.num_vertices
    ranks, k = as_pair(value, "(ranks, iterations)")
    if isinstance(ranks, (int, np.integer)) and isinstance(k, (np.ndarray, list, tuple)):
        raise Wrong(f"returned ({ranks!r}, an array): the count first",
                    "the pair is in the wrong order: return (ranks, iterations)")
    got, k = as_array(ranks, "the returned ranks", "f", n), as_integer(k, "iterations")
    setting = f"d = {damping:.3f}, tol = {tol:.2g}, max_iter = {max_iter:,}"
    total = float(got.sum())
    if not np.isfinite(got).all() or abs(total - 1.0) > 1e-6:
        cause = explained(graph, damping, got, k, {}) if np.isfinite(got).all() else None
        if cause:
            raise Wrong(f"{setting}: the ranks sum to {total:.9f}", cause)
        lost = graph.dangling.any() and total < 1.0
        raise Wrong(f"{setting}: the ranks sum to {total:.9f}", DANGLING_LOST if lost else NOT_SUMMING)
    stop = min(truth.iterations, max_iter)
    detail = f"{setting}: returned {k} iterations; the L1 test stops after {stop}"
    if k > max_iter:
        raise Wrong(detail, MAX_ITER)
    if k < 1:
        raise Wrong(detail, "iterations counts the steps taken: at least 1")
    found = iterates(graph, damping, max(k, stop) + 1)
    if not same(got, found[k]):
        others = [j for j in (k - 1, k + 1) if j >= 0 and same(got, found[j])]
        if others:
            raise Wrong(f"{setting}: your ranks are those after {others[0]} steps, but you return {k} "
                        "iterations", OFF_BY_ONE)
        bad, where = worst_vertex(graph, found[k], got, 1e-12 + 1e-9 * found[k])
        where = where or largest_difference(found[k], got)
        _wrong_iterate(graph, damping, tol, got, k, found[k], f"{setting}, after {k} steps (stop at "
                                                              f"{stop}): {where}",
                       earlier)
    return _stopping(truth, found, k, tol, stop, reached, detail)


@dataclass(frozen=True)
class Truth:
    """Where the float64 reference stops on a case, and its residuals."""
    iterations: int         # where the L1 test stops (past ``steps`` when it was not run that far)
    residuals: np.ndarray   # the L1 change of each step


def truth_of(graph: Graph, damping: float, tol: float, steps: int | None = None) -> Truth:
    """The reference run of a case; with ``steps``, only that many steps (the large graph, stopped early)."""
    if steps is None:
        result = REF.pagerank(graph, damping, tol, max_iter=100_000)
        return Truth(result.iterations, result.residuals)
    found = iterates(graph, damping, steps)
    residuals = np.array([float(np.abs(b - a).sum()) for a, b in zip(found, found[1:])])
    below = np.flatnonzero(residuals < tol)
    return Truth(int(below[0]) + 1 if below.size else steps + 1, residuals)


def check_power_iteration(function, seed=None, quiet: bool = False,
                          time_limit: float = CPU_TIME_LIMIT) -> Report:
    """Exercise 03: ``function(graph, damping, tol, max_iter)`` returns (ranks, iterations): power iteration
    from the uniform vector until the L1 change of one step is below tol, counting every step taken
    (the last one too), or until max_iter steps, returning then the ranks after max_iter steps and
    max_iter."""
    start = begin(function, "power_iteration", seed, quiet)
    if isinstance(start, Report):
        return start
    seed, rng = start
    graphs = cpu_graphs(rng)
    try:
        inspect.signature(function).bind(graphs[0], 0.85, 1e-9, max_iter=10)
        takes_max_iter = True
    except TypeError:
        takes_max_iter = False
    except ValueError:          # no signature to read (a builtin): just call it
        takes_max_iter = True
    plan = [(g.name, g, False) for g in graphs[:-1]]
    plan += [(f"{g.name}, stopped by max_iter", g, True)
             for g in (graphs[1], graphs[6], graphs[7], graphs[-1])]
    settings = [(float(rng.uniform(0.6, 0.95)), float(10 ** rng.uniform(-9, -7))) for _ in plan]
    plan.append((f"{graphs[6].name}, run again after the others", graphs[6], False))
    settings.append(settings[6])
    cases, calls, given = [], [], []
    for i, ((name, graph, reached), (damping, tol)) in enumerate(zip(plan, settings)):
        if graph is graphs[-1]:                              # the large graph: a few steps only
            max_iter = int(rng.integers(2, 6))
            truth = truth_of(graph, damping, tol, steps=max_iter + 1)
        else:
            truth = truth_of(graph, damping, tol)
            max_iter = int(rng.integers(1, truth.iterations)) if reached and truth.iterations > 1 else 10_000
        copy = graph_copy(graph)
        given.append(copy)
        calls.append(Call((copy, damping, tol), {"max_iter": max_iter}))
        cases.append((name, (i, graph, damping, tol, max_iter, reached, truth)))

    def inputs():
        return {f"{k}|{name}": a for k, copy in enumerate(given) for name, a in graph_arrays(copy).items()}

    output = Output()
    guard = [a for g in graphs for a in pristine_arrays(g).values()]
    results = run_calls(function, calls, inputs=inputs, guard=guard,
                        time_limit=time_limit, output=output, forbidden=ANSWERS) if takes_max_iter else None

    def check(case):
        i, graph, damping, tol, max_iter, reached, truth = case
        if results is None:
            raise Wrong("the function does not take a max_iter argument",
                        "keep the signature power_iteration(graph, damping, tol, max_iter=100_000): the "
                        "checker passes max_iter", stop=True)
        results.value(i)
        inputs_unchanged(pristine_arrays(graph), {name.split("|", 1)[1]: a
                                                  for name, a in results.inputs.items()
                                                  if name.startswith(f"{i}|")})
        return checked(results, [i], lambda values: _check_run(graph, damping, tol, max_iter, reached, truth,
                                                               values[0], _earlier(i, graph)))

    def _earlier(i: int, graph: Graph) -> dict:
        """The ranks each earlier call on a graph of this size returned (valid ones only)."""
        found = {}
        for j in range(i):
            if cases[j][1][1].num_vertices != graph.num_vertices or results.errors[j] is not None:
                continue
            value = results.values[j]
            ranks = value[0] if isinstance(value, (tuple, list)) and len(value) == 2 else None
            if isinstance(ranks, np.ndarray) and ranks.shape == (graph.num_vertices,) \
                    and ranks.dtype.kind == "f":
                found[f"the call on {cases[j][0]}"] = ranks.astype(np.float64)
        return found

    return run("power_iteration", seed, cases, check, quiet, results.notes if results else [], output,
               scale_review(graphs[-1].name))
