"""What the CPU checkers share: the start of a run (the seed, a refusal of what cannot be checked), the
graphs every CPU exercise is tried on, and the checks on what a student's function gives back — its
type, dtype and shape, the inputs it must leave alone, and the causes that only the evidence of several
calls or of the large graph supports (a buffer returned twice, an integer type too narrow).
"""
from __future__ import annotations

import contextlib
import dataclasses

import numpy as np

from helpers.core import generators
from helpers.core.graph import Graph
from helpers.checks import borrowed, pristine
from helpers.checks.report import (
    CHANGED_INPUT, GENERATOR, Opaque, Report, Wrong, changed, describe_value, fresh_seed, refused)

GRAPH_ARRAYS = ("out_offsets", "out_targets", "in_offsets", "in_sources", "out_degree")
NARROW = (np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32)
SHARED_RESULT = ("state kept across calls: what your function returned was overwritten by a later call — "
                 "it returns the same buffer every time (an array made once and filled again, or a view of "
                 "one), so a caller that keeps a result sees it change (a power iteration that keeps the "
                 "old ranks sees an L1 change of 0): return a new array from every call")
STATE_FROM_EARLIER = ("state kept across calls: run alone, as the first call of a fresh process, this "
                      "input gets the right answer, but after the checker's earlier calls on other inputs a "
                      "wrong one: your function keeps something from an earlier call (a cache or a global "
                      "keyed by the size, a default argument, an attribute of the function) and uses it "
                      "again; compute everything from the arguments of each call")
KNOWN_STATE = ("state kept", "a warm start")
NOT_DETERMINISTIC = ("your function gives different results for the same input: run alone in a fresh process "
                     "twice, it returned other values each time: it draws random numbers (np.random, "
                     "random, an unseeded generator) or uses something else that changes from run to run; "
                     "the result must depend only on the arguments")
YIELDED = ("the function yields instead of returning: a function that contains `yield` runs none of its "
           "body when called and hands back a generator; return the result")
SCALE_ONLY = ("only the largest input (more than 2**16 vertices; in a graph, a hub of more than 2**15 "
              "in-links and n * n past 2**31) is wrong, every smaller one is right: look for an integer "
              "type too narrow for these sizes (int16 holds at most 32,767, uint16 65,535; a key such as "
              "target * n + source needs int64 once n * n passes 2**31 - 1)")


def begin(function, exercise: str, seed, quiet: bool):
    """(seed, its generator), or the refusal Report when ``function`` is not a function or the reference the
    expected values come from was replaced."""
    seed = fresh_seed(seed)
    if not callable(function):
        return refused(exercise, seed, f"the checker got {describe_value(function)}",
                       f"pass your function itself: checks.check_{exercise}({exercise}), without calling it",
                       quiet)
    replaced = pristine.refusal()
    if replaced is not None:
        return refused(exercise, seed, *replaced, quiet)
    return seed, np.random.default_rng(seed)


def cpu_graphs(rng) -> list[Graph]:
    """Tiny named graphs, fresh random ones with dangling and isolated vertices and a hub (two of the same
    size: what is kept from a call on one is wrong for the other), and the large one (``scale_graph``)
    last."""
    n1, n2 = 300 + int(rng.integers(1, 255)), 1000 + int(rng.integers(1, 255))
    return [generators.single_vertex(), generators.chain(5), generators.in_star(7),
            generators.all_dangling(4), generators.self_loop(), generators.two_components(),
            generators.adversarial_graph(n1, seed=int(rng.integers(2**31)), hub_in_links=n1 // 2),
            generators.random_graph(n2, seed=int(rng.integers(2**31))),
            generators.random_graph(n2, seed=int(rng.integers(2**31)), avg_degree=3.0), scale_graph(rng)]


def scale_graph(rng) -> Graph:
    """More than 2**16 vertices, a hub with more than 2**15 in-links, n * n past 2**32: where int16 and
    uint16 ids and counts, and int32 keys such as target * n + source, overflow. About 100,000 edges."""
    n = 2**16 + int(rng.integers(1000, 3000))
    hub = 2**15 + int(rng.integers(500, 2000))
    return generators.adversarial_graph(n, seed=int(rng.integers(2**31)), hub_in_links=hub, avg_degree=1.0,
                                        name=f"large graph: {n:,} vertices, a hub with {hub:,} in-links")


def scale_review(name: str):
    """A report review: when the large graph is the only wrong case and its cause does not name the size
    already, add what only failing there says."""
    def review(report: Report) -> None:
        wrong = [f for f in report.failures if f.case.startswith(name)]
        if wrong and len(wrong) == len(report.failures) and report.passed and "2**" not in wrong[0].cause:
            wrong[0].cause += "; " + SCALE_ONLY
    return review


# --- inputs handed out as copies and checked afterwards ----------------------------------------------

def graph_copy(graph: Graph) -> Graph:
    """The same graph with arrays of its own: what the student's function receives."""
    ids = None if graph.original_ids is None else graph.original_ids.copy()
    arrays = {a: getattr(graph, a).copy() for a in GRAPH_ARRAYS}
    return dataclasses.replace(graph, original_ids=ids, **arrays)


def graph_arrays(graph: Graph, prefix: str = "graph") -> dict[str, np.ndarray]:
    """The arrays of a graph as the student's code left them, its cached in_matrix included."""
    found = {f"{prefix}.{a}": getattr(graph, a) for a in GRAPH_ARRAYS}
    matrix = graph.__dict__.get("in_matrix")
    if matrix is not None:
        found.update({f"{prefix}.in_matrix.data": matrix.data, f"{prefix}.in_matrix.indices": matrix.indices,
                      f"{prefix}.in_matrix.indptr": matrix.indptr})
    return found


def pristine_arrays(graph: Graph, prefix: str = "graph") -> dict[str, np.ndarray]:
    """What ``graph_arrays`` must give back for an untouched copy of ``graph``."""
    found = {f"{prefix}.{a}": getattr(graph, a) for a in GRAPH_ARRAYS}
    found.update({f"{prefix}.in_matrix.data": np.ones(graph.num_edges), f"{prefix}.in_matrix.indices":
                  graph.in_sources, f"{prefix}.in_matrix.indptr": graph.in_offsets})
    return found


def inputs_unchanged(before: dict[str, np.ndarray], after: dict) -> None:
    """Raise Wrong naming every input whose array in ``after`` differs from its pristine one in
    ``before``."""
    found = [changed(name, before[name], array) for name, array in after.items() if name in before]
    found = [f for f in found if f]
    if found:
        names = ", ".join(dict.fromkeys(f.split(":")[0].split(" now")[0].split(" is now")[0]
                                        .split(" (call")[0]
                                        for f in found))
        raise Wrong("; ".join(found), f"{CHANGED_INPUT} ({names}), which it must not: the caller uses the "
                                      "same arrays again (the next iteration, the next exercise, the "
                                      "checker's own answer); compute on a copy (np.maximum(degree, 1), "
                                      "ranks / total, np.sort(a)) instead of changing them in place")


@contextlib.contextmanager
def state_explains(results, calls):
    """Within it, a Wrong about a result that shares memory with another call's result is given that cause:
    the buffer was handed out twice, and the later call overwrote it."""
    try:
        yield
    except Wrong as wrong:
        later = sorted(j for i in calls for j in results.shared.get(i, []) if j > min(calls))
        if later and not wrong.stop:
            raise Wrong(f"{wrong.detail} (the array came back holding what a later call wrote)",
                        SHARED_RESULT) \
                from None
        raise


def not_borrowed(results, calls) -> None:
    """Raise Wrong when one of ``calls`` called the course's own answer (``checks.borrowed``)."""
    for i in calls:
        names = results.borrowed.get(i)
        if names:
            raise Wrong(f"call {i + 1} called {', '.join(names)}", borrowed.cause(names))


def checked(results, calls: list[int], body):
    """``body(values)`` on the values ``calls`` returned (after ``not_borrowed``). A Wrong it raises is put
    to the test: the same calls run again alone, in a fresh process; when they return other values, they
    run a second time, and values that differ between the two fresh runs mean the function is not
    deterministic; otherwise, when ``body`` finds nothing wrong with the fresh values of calls that came
    after others, the cause is state kept from the earlier calls. Results sharing one buffer are named
    first (``state_explains``)."""
    not_borrowed(results, calls)
    with state_explains(results, calls):
        values = [results.value(i) for i in calls]
        try:
            return body(values)
        except Wrong as wrong:
            if wrong.stop or results.rerun is None:
                raise
            fresh = _alone(results, calls)
            if fresh is None or same_values(fresh, values):
                raise
            again = _alone(results, calls)
            if again is not None and not same_values(fresh, again):
                raise Wrong(f"{wrong.detail} (and other values each time the same input is run alone)",
                            NOT_DETERMINISTIC) from None
            if min(calls) == 0 or wrong.cause.startswith(KNOWN_STATE):
                raise
            try:
                body(fresh)
            except Wrong:
                raise wrong from None
            raise Wrong(f"{wrong.detail} (and right when run alone)", STATE_FROM_EARLIER) from None


def _alone(results, calls: list[int]):
    """The values ``calls`` return run again alone, in a fresh process; None when one of them fails."""
    alone = results.rerun(calls)
    try:
        return None if alone is None else [alone.value(j) for j in range(len(calls))]
    except Wrong:
        return None


def same_values(a, b) -> bool:
    """Whether two returned values are the same (arrays of one dtype and shape, equal values, NaN where NaN;
    not by their bytes: a long double carries padding bytes that differ from run to run)."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.dtype == b.dtype
                and np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return type(a) is type(b) and len(a) == len(b) and all(same_values(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and repr(a) == repr(b)


# --- what comes back ---------------------------------------------------------------------------------

def as_array(value, what: str, kind: str, size: int | None = None) -> np.ndarray:
    """``value`` as a 1-D array of floats (kind 'f') or integers (kind 'i'), or Wrong saying what came
    back."""
    wanted = "floats" if kind == "f" else "integers"
    if isinstance(value, Opaque) and value.description == GENERATOR:
        raise Wrong(f"{what} is {GENERATOR}", YIELDED)
    if isinstance(value, Opaque):
        raise Wrong(f"{what} is {value.description}", f"{what} must be a 1-D array of {wanted}")
    if value is None or np.isscalar(value) or isinstance(value, (dict, set, str, bytes)):
        raise Wrong(f"{what} is {describe_value(value)}", f"{what} must be a 1-D array of {wanted}"
                    + (f", {size} of them" if size is not None else ""))
    try:
        array = np.asarray(value)
    except Exception:
        raise Wrong(f"{what} is {describe_value(value)}",
                    f"{what} must be a 1-D array of {wanted}") from None
    if array.ndim != 1 or (size is not None and array.size != size):
        expected = f"; expected ({size},)" if size is not None else ""
        shape = f" of {size} {wanted}, one per vertex" if size is not None else f" of {wanted}"
        matrix = (" (a 2-D result, e.g. from np.matrix or a sparse product, needs .ravel())"
                  if array.ndim == 2 else "")
        raise Wrong(f"{what} has shape {array.shape}{expected}",
                    f"{what} must be a 1-D array{shape}{matrix}")
    if kind == "f" and array.dtype != np.float64:
        raise Wrong(f"{what} has dtype {array.dtype}", _not_float64(what, array.dtype))
    if kind == "i" and (array.dtype.kind not in "iu") and array.size:
        raise Wrong(f"{what} has dtype {array.dtype}",
                    f"{what} must hold integers (np.int32 or np.int64): {array.dtype} values cannot index "
                    "or slice an array (a[x:y] raises TypeError) and cannot feed a kernel that reads const "
                    "int*; e.g. a cumsum of a bincount with weights= gives floats")
    return array.astype(np.float64) if kind == "f" else array.astype(np.int64)


def _not_float64(what: str, dtype) -> str:
    if dtype.kind != "f":
        return f"{what} must hold float64 values (ranks are fractions)"
    digits = np.finfo(dtype).precision
    if digits < np.finfo(np.float64).precision:
        return (f"{what} must be float64: {dtype} keeps only {digits} digits, so sums and the L1 change "
                "drift; the CPU exercises compute in float64")
    return (f"{what} must be float64: {dtype} carries more digits ({digits}) than float64, but its size and "
            "precision depend on the platform (on some it is float64 itself) and the course's results are "
            "float64: return .astype(np.float64)")


def as_pair(value, what: str) -> tuple:
    """``value`` as a pair, or Wrong naming what came back instead."""
    if not (isinstance(value, (tuple, list)) and len(value) == 2):
        raise Wrong(f"returned {describe_value(value)}", f"return a pair: {what}")
    return tuple(value)


def as_integer(value, what: str) -> int:
    """``value`` as an int (NumPy integers too, bools not), or Wrong."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise Wrong(f"{what} is {describe_value(value)}", f"{what} must be an int (a count of steps)")
    return int(value)


def wrapped_type(got: np.ndarray, truth: np.ndarray):
    """The narrow integer type whose wrap-around turns ``truth`` into ``got`` (np.int16 for 40,001 ->
    -25,535), or None when no such type explains the difference."""
    got, truth = np.asarray(got, np.int64), np.asarray(truth, np.int64)
    if got.shape != truth.shape or np.array_equal(got, truth):
        return None
    for dtype in NARROW:
        if np.array_equal(got, truth.astype(dtype).astype(np.int64)):
            return dtype
    return None


def overflow_cause(what: str, dtype, largest: int, why: str) -> str:
    """The cause naming the narrow type, the value it must hold and its maximum."""
    info = np.iinfo(dtype)
    return (f"{what} overflow {np.dtype(dtype).name}: {why} reaches {largest:,}, and {np.dtype(dtype).name} "
            f"holds at most {info.max:,}, so it wraps around; use np.int64 (or np.int32 where every value "
            "fits)")
