"""The GPU checker of exercise 31, the challenge "beat the library": the student's launch function
``pull(dg, x, y)`` (any kernels, launched any way) writes y[v] = the sum of x over v's in-links.

It is verified as ``driver.verify`` verifies a variant: on fresh adversarial graphs, with y poisoned (NaN,
and a NaN canary after it), twice per graph, exactly where the inputs are dyadic (every float32 sum is
then exact in any order) and within float32's rounding of float64 on random inputs; the graph's arrays and
x are read back after every call. The CUDA sources the function names are linted. Then it is timed on a
web-sized graph against cuSPARSE's SpMV prepared once (``baselines.PreparedSpMV``) and the random-gather
floor, interleaved (``gpu.time_paired``), and each pair gets the course's verdict (``verdicts.compare``).
The student's function runs in this process (CUDA does not survive a fork), under ``limits.call``.
"""
from __future__ import annotations

import time

import numpy as np

from helpers.driver import floors
from helpers.core import generators
from helpers.measure import verdicts
from helpers.core.graph import Graph
from helpers.checks import pristine
from helpers.checks.device import PAD, PAD_UNITS, UNIT, DeviceCase, check_sums, gpu_graphs, output, padded
from helpers.checks.gpu import open_device
from helpers.checks.limits import GPU_TIME_LIMIT, Output, call
from helpers.checks.lint import lint
from helpers.checks.report import (
    CHANGED_INPUT, Report, Wrong, changed, describe_value, fresh_seed, random_ranks, refused)
from helpers.checks.report import run as run_cases
from helpers.checks.report import worst_vertex

__all__ = ["check_beat_the_library"]

YOURS, CUSPARSE, FLOOR = "your pull_sums", "cuSPARSE's SpMV (prepared once)", "the random-gather floor"
SLOW = 1.0                  # seconds per call past which the timing is skipped
ADD = 2.0 ** -24            # float32's relative rounding, per addition
ROUNDING = ("your sums are further from float64 than float32 additions explain (each rounds by at most "
            "2^-24 of the sum): a value read or added in fewer bits, or an in-link added twice or missed")
RACE_CASE = "timed against cuSPARSE and the random-gather floor"
NOT_TIMED = "wrong sums are not timed: make every case above right first"
SUMS_HINT = "y[v] is the sum of x[u] over v's in-links u (in_sources[in_offsets[v]:in_offsets[v + 1]])"
GRAPH_ARRAYS = ("in_offsets", "in_sources", "out_degree")


def kernel_sources(function) -> list[str]:
    """The CUDA sources a launch function refers to by name: strings that define a __global__ function."""
    code = getattr(function, "__code__", None)
    names = set(code.co_names) if code is not None else set()
    values = [getattr(function, "__globals__", {}).get(name) for name in names]
    for cell in getattr(function, "__closure__", None) or ():
        try:
            values.append(cell.cell_contents)
        except ValueError:                     # an empty cell
            pass
    return [v for v in values if isinstance(v, str) and "__global__" in v]


def source_cases(function) -> list:
    """One case per distinct hazard the lint finds in the sources the function names."""
    by_cause: dict[str, list] = {}
    for code in kernel_sources(function):
        for hazard in lint(code):
            by_cause.setdefault(hazard.cause, []).append(hazard)
    return [(f"your kernel source, line {found[0].line} (read, not run)", ("source", found))
            for found in by_cause.values()]


def race(pull, dg, x, y, *, trials: int, launches: int) -> tuple[dict, str, int]:
    """(timings, the GPU's name, its L2 bytes): the student's pull, cuSPARSE's SpMV prepared once and the
    random-gather floor on one graph, timed interleaved, trial by trial."""
    from helpers.driver import baselines
    from helpers.measure import gpu
    from helpers import kernels

    cp = gpu.require_gpu()
    spmv = baselines.PreparedSpMV(dg, x, cp.empty_like(y))
    gather = kernels.compiled(kernels.canonical("gather_floor"), "gather_floor")
    facts = gpu.device_facts()
    per_sm = cp.cuda.Device().attributes["MaxThreadsPerMultiProcessor"] // 256
    blocks = facts.multiprocessors * max(per_sm, 1)             # one wave of resident blocks
    out, count = cp.empty(blocks * 256, dtype=cp.float32), np.int64(dg.num_edges)
    timings = gpu.time_paired({YOURS: lambda: pull(dg, x, y), CUSPARSE: spmv,
                               FLOOR: lambda: gather((blocks,), (256,), (dg.in_sources, x, out, count))},
                              launches=launches, trials=trials)
    return timings, facts.name, facts.l2_bytes


def timing_graph(graph) -> Graph:
    """The graph the time is measured on: web-Google (or its stand-in) unless another is given."""
    if isinstance(graph, Graph):
        return graph
    from helpers.data import datasets

    return datasets.load_or_standin(graph or "web-Google")


class Checker:
    """The cases of one run: the student's function called on the device under the limits."""

    def __init__(self, pull, device, rng, time_limit: float, output: Output):
        self.pull, self.device, self.rng = pull, device, rng
        self.time_limit, self.output = time_limit, output

    def call(self, dg, x, y) -> float:
        """One call of the student's function, waited for; its seconds."""
        start = time.perf_counter()
        call(self.pull, dg, x, y, time_limit=self.time_limit, output=self.output)
        self.device.finish()
        return time.perf_counter() - start

    def unchanged(self, dg, x, given: dict) -> None:
        """Raise Wrong when a call wrote into the graph's arrays or into x."""
        found = [changed(name, host, self.device.get(getattr(dg, name) if name != "x" else x))
                 for name, host in given.items()]
        found = [f for f in found if f]
        if found:
            raise Wrong("; ".join(found), f"{CHANGED_INPUT} (" + ", ".join(f.split(":")[0] for f in found)
                        + "): the graph and x are inputs, read again by every later call")

    def rounded(self, graph, dg, values: np.ndarray, what: str) -> tuple[np.ndarray, np.ndarray]:
        """Call on random float32 values; Wrong beyond float32's rounding of float64. (got, exact)."""
        n = graph.num_vertices
        x, y = self.device.put(values), output(self.device, n + PAD)
        self.call(dg, x, y[:n])
        got, exact = self.device.get(y).astype(np.float64), graph.in_matrix @ values.astype(np.float64)
        if not np.isnan(got[n:]).all():
            raise Wrong(f"{what}: y[{n + int(np.flatnonzero(~np.isnan(got[n:]))[0])}] was written (the "
                        f"graph has {n:,} vertices)", "wrote past the end of y: only y[0] to y[n - 1]")
        allowed = 2 * (graph.in_degree + 1) * ADD * np.abs(exact) + 1e-30
        bad, where = worst_vertex(graph, exact, got[:n], allowed)
        if np.isnan(got[:n]).any():
            v = int(np.flatnonzero(np.isnan(got[:n]))[0])
            raise Wrong(f"{what}: y[{v}] never written", "elements never written: every y[v] must be stored")
        if bad.any():
            raise Wrong(f"{what}: {where}", ROUNDING)
        return got[:n], exact

    def exact(self, graph: Graph) -> str | None:
        """A graph's case: twice on dyadic x, bit for bit; once on random x, against float64."""
        dc = DeviceCase(graph, self.rng)
        n = dc.n
        arrays = {name: (dc.host[name], dc.length[name]) for name in GRAPH_ARRAYS}
        dg = self.device.device_graph(graph, arrays)
        given = {name: host[:length] for name, (host, length) in arrays.items()}
        x = self.device.put(padded(dc.contrib_host, PAD_UNITS * UNIT, np.float32))[:n]
        given["x"] = np.asarray(dc.contrib_host, dtype=np.float32)
        results = []
        for _ in range(2):
            y = output(self.device, n + PAD)
            self.call(dg, x, y[:n])
            self.unchanged(dg, x, given)
            results.append(self.device.get(y))
        check_sums(dc, results[0], results[1], hint=SUMS_HINT, lanes=True)
        values = np.where(graph.dangling, 0.0, random_ranks(self.rng, n) / np.maximum(graph.out_degree, 1))
        self.rounded(graph, dg, values.astype(np.float32), "random float32 x")
        return None

    def timed(self, graph: Graph, trials: int) -> str:
        """The timing case: verified on the graph, then raced against cuSPARSE and the gather floor."""
        dg = self.device.device_graph(graph)
        n, e = graph.num_vertices, graph.num_edges
        values = (random_ranks(self.rng, n) / np.maximum(graph.out_degree, 1)).astype(np.float32)
        self.rounded(graph, dg, values, graph.name)                  # the first call compiles
        x, y = self.device.put(values), output(self.device, n)
        seconds = self.call(dg, x, y)
        sectors = floors.sectors_per_edge(graph.in_sources)
        if seconds > SLOW:
            return (f"right on {graph.name}, but {seconds:.1f} s per call: too slow to time against the "
                    f"library (over {SLOW:g} s)")
        launches = int(min(20, max(1, 0.05 // max(seconds, 1e-6))))
        timings, name, l2 = race(self.pull, dg, x, y, trials=trials, launches=launches)
        library = verdicts.compare(timings[YOURS], timings[CUSPARSE])
        floor = verdicts.compare(timings[YOURS], timings[FLOOR])
        from helpers.measure.results import about

        return "; ".join([f"on {name}, {graph.name} ({n:,} vertices, {e:,} edges): about "
                          f"{about(timings[YOURS])} ms per call ({trials} interleaved trials of {launches})",
                          library.sentence(YOURS, CUSPARSE), floor.sentence(YOURS, FLOOR),
                          f"{sectors:.2f} sector requests per edge; " + floors.regime(4 * n, l2)])


def check_beat_the_library(pull, seed=None, quiet: bool = False, time_limit: float = GPU_TIME_LIMIT,
                           graph=None, trials: int = 15) -> Report:
    """Exercise 31: ``pull(dg, x, y)`` writes y[v] = the sum of x over v's in-links (dg a
    ``driver.DeviceGraph``, x and y float32 CuPy arrays of n); verified, then timed on ``graph`` (a Graph or
    a dataset's name; web-Google or its stand-in by default) against cuSPARSE and the gather floor."""
    seed = fresh_seed(seed)
    if not callable(pull):
        return refused("beat_the_library", seed, f"the checker got {describe_value(pull)}",
                       "pass your launch function itself: checks.check_beat_the_library(pull_sums)", quiet)
    replaced = pristine.refusal()
    if replaced is not None:
        return refused("beat_the_library", seed, *replaced, quiet)
    rng, out = np.random.default_rng(seed), Output()
    device = open_device(time_limit)
    cases = Checker(pull, device, rng, time_limit, out)
    n = 60_000 + int(rng.integers(1, 255))
    graphs = gpu_graphs(rng) + [generators.rmat_graph(n, 400_000, seed=int(rng.integers(2**31)))]
    plan = source_cases(pull) + [(g.name, g) for g in graphs] + [(RACE_CASE, None)]
    wrong = []

    def check(case):
        if isinstance(case, tuple) and case and case[0] == "source":
            found = case[1]
            lines = ", ".join(str(h.line) for h in found[1:])
            raise Wrong(f"`{found[0].text}`" + (f" (and lines {lines})" if lines else ""), found[0].cause)
        if case is None:
            if wrong:
                raise Wrong(f"not timed: {len(wrong)} case(s) above are wrong", NOT_TIMED)
            return cases.timed(timing_graph(graph), trials)
        try:
            return cases.exact(case)
        except Wrong:
            wrong.append(case)
            raise

    return run_cases("beat_the_library", seed, plan, check, quiet, output=out)
