"""Exercise checkers: run a student's function (CPU) or kernel source (GPU) on fresh seeded graphs and say
what is wrong: which graph, which vertex, expected against got, and the likely cause.

Every checker takes ``seed=None`` (fresh graphs each call; the report prints the seed, pass it back to
repeat them) and returns a ``Report`` that it also prints. The GPU checkers feed values that make every
float32 sum exact in any order (small multiples of 2**-24), so a difference is a bug, not rounding, and
they poison outputs with NaN and put a NaN canary past the end of every output array.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from . import generators, reference
from .graph import Graph

EPS32 = float(np.finfo(np.float32).eps)
UNIT = 2.0 ** -24           # dyadic unit of the GPU checkers' inputs
PAD = 1024                  # canary elements after every output, empty rows after every CSR

NOT_WRITTEN_YET = "not written yet: replace the TODO with your code"
PAST_THE_END = ("wrote past the end of the output: the bounds check (v < n) is missing or off by one, so "
                "threads beyond the last vertex store results")
NEVER_WRITTEN = ("elements never written (the output was filled with NaN before the launch): every vertex "
                 "below n needs a thread that stores its result")
RACE = ("a race: updates are lost (and the result can change from launch to launch); threads that add to "
        "the same element need atomicAdd")
ROW_PAST = ("wrong row bounds: each vertex also adds the first in-link of the next vertex (the loop must "
            "stop before offsets[v + 1], not at it)")
ROW_SHORT = "wrong row bounds: each vertex misses its last in-link (the loop stops one early)"
DANGLING_LOST = ("dangling mass lost: the rank of vertices without out-links must be spread over all "
                 "vertices (d * dangling mass / n each); without it the ranks sum to less than 1")
DIVIDE_BY_ZERO = ("a dangling vertex divided by its out-degree 0 (got inf or NaN): its contribution "
                  "must be 0")


def lanes_cause(right_max: int, dmin: int) -> str:
    return (f"vertices with up to {right_max} in-links are right, wrong ones have {dmin} or more: "
            "the lanes' partial sums are not all combined exactly once — check the loop's start and stride "
            "(each in-link read by one lane) and the shuffle's offsets, width and mask")


@dataclass
class Failure:
    case: str       # which input (graph name, size, seed)
    detail: str     # which vertex, expected against got
    cause: str      # the likely cause


@dataclass
class Report:
    exercise: str
    seed: int
    passed: list[str] = field(default_factory=list)
    failures: list[Failure] = field(default_factory=list)
    stopped: bool = False     # stopped early: every later case would have failed the same way

    @property
    def ok(self) -> bool:
        return bool(self.passed) and not self.failures

    def __bool__(self) -> bool:
        return self.ok

    def causes(self) -> list[str]:
        return [f.cause for f in self.failures]

    def __str__(self) -> str:
        total = len(self.passed) + len(self.failures)
        if self.ok:
            lines = [f"PASSED {self.exercise}: all {total} cases right (seed {self.seed})"]
        else:
            counted = "stopped at the first error" if self.stopped else f"{len(self.failures)} of {total} cases wrong"
            lines = [f"FAILED {self.exercise}: {counted} (seed {self.seed}; pass seed={self.seed} to repeat these cases)"]
            for f in self.failures:
                lines += [f"  ✗ {f.case}", f"      {f.detail}", f"      likely cause: {f.cause}"]
        lines += [f"  ✓ {case}" for case in self.passed]
        return "\n".join(lines)


class _Wrong(Exception):
    """Raised inside a case check to report a failure."""

    def __init__(self, detail: str, cause: str):
        super().__init__(detail)
        self.detail, self.cause = detail, cause


def _fresh(seed) -> int:
    return int(np.random.SeedSequence().entropy % 2**31) if seed is None else int(seed)


def _run(exercise: str, seed: int, cases, check, quiet: bool) -> Report:
    """Call check(case) for every (name, case); collect passes and failures; stop at an unwritten stub
    or a crashed GPU context, since every later case would fail the same way."""
    report = Report(exercise, seed)
    for name, case in cases:
        try:
            note = check(case)
            report.passed.append(name if not note else f"{name}: {note}")
            continue
        except _Wrong as wrong:
            report.failures.append(Failure(name, wrong.detail, wrong.cause))
            continue
        except NotImplementedError as error:
            report.failures.append(Failure(name, f"raised NotImplementedError: {error}", NOT_WRITTEN_YET))
        except Exception as error:                      # the student's code raised: report it, never crash
            text = f"raised {type(error).__name__}: {str(error).strip()[:600]}"
            if "CUDA" in type(error).__name__ or "cudaError" in str(error) or "CUDA_ERROR" in str(error):
                report.failures.append(Failure(name, text, "the kernel read or wrote outside its arrays and "
                                                           "the GPU context is lost: restart the runtime"))
            elif type(error).__name__ == "CompileException" or "compile" in str(error).lower():
                report.failures.append(Failure(name, text, "the kernel does not compile"))
            else:
                report.failures.append(Failure(name, text, "your code raised an error on this input"))
                continue
        report.stopped = True
        break
    if not quiet:
        print(report)
    return report


def _cpu_graphs(rng) -> list[Graph]:
    """Tiny named graphs plus two fresh random ones with dangling and isolated vertices and a hub."""
    n1, n2 = 300 + int(rng.integers(1, 255)), 1000 + int(rng.integers(1, 255))
    return [generators.single_vertex(), generators.chain(5), generators.in_star(7), generators.all_dangling(4),
            generators.self_loop(), generators.two_components(),
            generators.adversarial_graph(n1, seed=int(rng.integers(2**31)), hub_in_links=n1 // 2),
            generators.random_graph(n2, seed=int(rng.integers(2**31)))]


def _gpu_graphs(rng) -> list[Graph]:
    """One vertex, only dangling vertices, a long in-link list, and two fresh adversarial graphs whose sizes
    are not multiples of the block size, one with a hub of 12,000 in-links."""
    n1, n2 = 1000 + 2 * int(rng.integers(1, 120)) + 1, 20_001 + int(rng.integers(0, 100))
    return [generators.single_vertex(), generators.all_dangling(3), generators.in_star(300),
            generators.adversarial_graph(n1, seed=int(rng.integers(2**31)), hub_in_links=n1 // 2),
            generators.adversarial_graph(n2, seed=int(rng.integers(2**31)), hub_in_links=12_000)]


def _random_ranks(rng, n: int) -> np.ndarray:
    ranks = rng.random(n) + 0.05
    return ranks / ranks.sum()


def _sum_check(graph: Graph, got: np.ndarray, ranks: np.ndarray, damping: float, what: str) -> None:
    """Raise with 'dangling mass lost' or 'do not sum to 1' when the total is wrong."""
    total = float(got.sum())
    if abs(total - 1.0) <= 1e-9:
        return
    lost = damping * float(ranks[graph.dangling].sum())
    if graph.dangling.any() and abs(total - (1.0 - lost)) <= 1e-9:
        raise _Wrong(f"{what} sum to {total:.9f}, short by {1 - total:.3g} = d × the dangling vertices' rank",
                     DANGLING_LOST)
    raise _Wrong(f"{what} sum to {total:.9f}, not 1",
                 "ranks not summing to 1: rank is lost or created (each in-neighbour u gives "
                 "d * rank[u] / out_degree[u]; every vertex gets (1 - d) / n from teleporting)")


def _worst_vertex(graph: Graph, expected, got, tol) -> tuple[np.ndarray, str]:
    """Mask of wrong vertices and a line naming the worst one."""
    err = np.abs(np.asarray(got, np.float64) - expected)
    bad = ~(err <= tol)
    if not bad.any():
        return bad, ""
    v = int(np.argmax(np.where(bad, np.nan_to_num(err / np.maximum(tol, 1e-300), nan=np.inf), -1)))
    return bad, (f"vertex {v} (in-degree {int(graph.in_degree[v])}, out-degree {int(graph.out_degree[v])}): "
                 f"expected {expected[v]:.9g}, got {got[v]:.9g}; {int(bad.sum()):,} of {graph.num_vertices:,} "
                 f"vertices wrong")


# --- CPU exercises ---------------------------------------------------------------------------------

def pagerank_step(function, seed=None, quiet: bool = False) -> Report:
    """Exercise 01: ``function(graph, ranks, damping)`` returns one power-iteration step (float64)."""
    seed = _fresh(seed)
    rng = np.random.default_rng(seed)

    def check(graph):
        ranks, damping = _random_ranks(rng, graph.num_vertices), float(rng.uniform(0.6, 0.95))
        given = ranks.copy()
        got = np.asarray(function(graph, given, damping), dtype=np.float64)
        if not np.array_equal(given, ranks):
            raise _Wrong("the ranks passed in were changed", "the function must not modify its input")
        if got.shape != ranks.shape:
            raise _Wrong(f"returned shape {got.shape}, expected ({graph.num_vertices},)", "one rank per vertex")
        expected = reference.pagerank_step(graph, ranks, damping, reference.teleport_vector(graph.num_vertices))
        bad, where = _worst_vertex(graph, expected, got, 1e-12 + 1e-9 * expected)
        if bad.any():
            _sum_check(graph, got, ranks, damping, f"with d = {damping:.3f} the new ranks")
            raise _Wrong(where, "the sum over in-links is wrong: vertex v gets d * rank[u] / out_degree[u] "
                                "from every u that links to it, counting u's out-degree, not v's")

    return _run("pagerank_step", seed, [(g.name, g) for g in _cpu_graphs(rng)], check, quiet)


def transpose(function, seed=None, quiet: bool = False) -> Report:
    """Exercise 02: ``function(num_vertices, out_offsets, out_targets)`` returns (in_offsets, in_sources),
    the in-links of each vertex listed by increasing source."""
    seed = _fresh(seed)
    rng = np.random.default_rng(seed)

    def check(graph):
        n = graph.num_vertices
        out_offsets, out_targets = graph.out_offsets.copy(), graph.out_targets.copy()
        got_offsets, got_sources = (np.asarray(a) for a in function(n, out_offsets, out_targets))
        if got_offsets.shape != (n + 1,):
            raise _Wrong(f"in_offsets has {got_offsets.size} entries; a graph of {n} vertices needs {n + 1}",
                         "wrong row bounds: one count per vertex, including vertices without in-links "
                         "(np.bincount(..., minlength=n)), and a leading 0")
        if got_offsets[0] != 0:
            raise _Wrong(f"in_offsets[0] is {got_offsets[0]}", "wrong row bounds: the first row starts at 0")
        wrong = np.flatnonzero(got_offsets != graph.in_offsets)
        if wrong.size:
            v = max(int(wrong[0]) - 1, 0)
            raise _Wrong(f"vertex {v}'s in-links span {got_offsets[v]}..{got_offsets[v + 1]}, expected "
                         f"{graph.in_offsets[v]}..{graph.in_offsets[v + 1]}",
                         "wrong row bounds: in_offsets[v] is how many in-links the vertices before v have")
        if got_sources.shape != graph.in_sources.shape:
            raise _Wrong(f"in_sources has {got_sources.size} entries, expected {graph.num_edges}",
                         "one entry per edge")
        for v in np.flatnonzero(np.diff(graph.in_offsets)):
            row = slice(graph.in_offsets[v], graph.in_offsets[v + 1])
            mine, truth = got_sources[row], graph.in_sources[row]
            if not np.array_equal(mine, truth):
                shown = f"vertex {v}: in-links {mine[:8].tolist()}, expected {truth[:8].tolist()}"
                if np.array_equal(np.sort(mine), truth):
                    raise _Wrong(shown, "the right sources in the wrong order: list them by increasing source "
                                        "(a stable sort by target keeps the edge list's source order)")
                raise _Wrong(shown, "row v must list the vertices that link to v (the edges' sources)")

    return _run("transpose", seed, [(g.name, g) for g in _cpu_graphs(rng)], check, quiet)


def _norm_histories(graph: Graph, damping: float, steps: int) -> dict[str, np.ndarray]:
    """L1, L1/N, L2 and max-norm of each step's change, from the uniform vector."""
    teleport = reference.teleport_vector(graph.num_vertices)
    ranks, rows = teleport.copy(), []
    for _ in range(steps):
        new = reference.pagerank_step(graph, ranks, damping, teleport)
        change = np.abs(new - ranks)
        rows.append((change.sum(), change.sum() / graph.num_vertices, np.sqrt((change ** 2).sum()), change.max()))
        ranks = new
    return dict(zip(["L1", "L1 / N", "L2", "max"], np.array(rows).T))


def power_iteration(function, seed=None, quiet: bool = False) -> Report:
    """Exercise 03: ``function(graph, damping, tol)`` returns (ranks, iterations): power iteration from
    the uniform vector until the L1 change of one step is below tol."""
    seed = _fresh(seed)
    rng = np.random.default_rng(seed)

    def check(graph):
        damping, tol = float(rng.uniform(0.6, 0.95)), float(10 ** rng.uniform(-9, -7))
        result = function(graph, damping, tol)
        if not (isinstance(result, tuple) and len(result) == 2):
            raise _Wrong(f"returned {type(result).__name__}", "return a pair: (ranks, iterations)")
        got, iterations = np.asarray(result[0], dtype=np.float64), int(result[1])
        truth = reference.pagerank(graph, damping, tol, max_iter=100_000)
        setting = f"d = {damping:.3f}, tol = {tol:.2g}"
        if got.shape != truth.ranks.shape:
            raise _Wrong(f"returned {got.shape} ranks, expected ({graph.num_vertices},)", "one rank per vertex")
        total = float(got.sum())
        if abs(total - 1.0) > 1e-6:
            lost = graph.dangling.any() and total < 1.0
            raise _Wrong(f"{setting}: the ranks sum to {total:.9f}",
                         DANGLING_LOST if lost else "ranks not summing to 1: rank is lost or created")
        if abs(iterations - truth.iterations) > 1:
            histories = _norm_histories(graph, damping, max(iterations, truth.iterations) + 2)
            detail = f"{setting}: stopped after {iterations} iterations; the L1 test stops after {truth.iterations}"
            stops = {norm: int(np.argmax(h < tol)) + 1 for norm, h in histories.items() if norm != "L1" and (h < tol).any()}
            for slack in (0, 1):
                norms = [norm for norm, stop in stops.items() if abs(stop - iterations) <= slack]
                if norms:
                    raise _Wrong(detail, f"the stopping test uses the {' or the '.join(norms)} of the change"
                                         + (" (the residual is scaled by N)" if "L1 / N" in norms else "")
                                         + ": the course stops when sum(|new - old|) < tol")
            raise _Wrong(detail, "the stopping test or the iteration count is wrong: count every step taken, "
                                 "and stop once sum(|new - old|) < tol")
        bad, where = _worst_vertex(graph, truth.ranks, got, 2 * tol + 1e-12)
        if bad.any():
            raise _Wrong(f"{setting}: {where}", "the step itself is wrong (check it with exercise 01)")
        return f"iterations: {iterations}"

    return _run("power_iteration", seed, [(g.name, g) for g in _cpu_graphs(rng)], check, quiet)


def top_k(function, seed=None, quiet: bool = False) -> Report:
    """Exercise 33: ``function(ranks, k)`` returns the indices of the k largest ranks, largest first, ties
    to the smaller vertex id, all n of them when k > n."""
    seed = _fresh(seed)
    rng = np.random.default_rng(seed)
    n = 1000 + int(rng.integers(1, 100))
    vectors = {f"{n:,} ranks with many ties (5 distinct values)": rng.integers(1, 6, n) / 10.0,
               f"{n:,} distinct ranks": _random_ranks(rng, n),
               "10 equal ranks": np.full(10, 0.1), "one rank": np.ones(1)}
    cases = [(f"{name}, k = {k}", (values, k)) for name, values in vectors.items()
             for k in sorted({1, 5, 37, values.size, values.size + 3})]

    def check(case):
        ranks, k = case
        got = np.asarray(function(ranks.copy(), k)).astype(np.int64).ravel()
        expected = reference.top_k(ranks, k)
        if got.size != expected.size:
            raise _Wrong(f"returned {got.size} indices, expected {expected.size}",
                         "k larger than the number of vertices returns all n" if k > ranks.size
                         else "return exactly k indices")
        if np.array_equal(got, expected):
            return None
        detail = f"returned {got[:8].tolist()}..., expected {expected[:8].tolist()}..."
        if np.array_equal(ranks[got], ranks[expected]):
            raise _Wrong(detail, "ties broken the wrong way: among equal ranks the smaller vertex id comes first "
                                 "(a stable sort of -ranks, not a reversed sort of ranks)")
        if set(got.tolist()) == set(expected.tolist()):
            raise _Wrong(detail, "the right vertices in the wrong order: largest rank first")
        missing = sorted(set(expected.tolist()) - set(got.tolist()))[0]
        raise _Wrong(detail, f"vertex {missing} (rank {ranks[missing]:.6g}) belongs in the top {k} and is missing")

    return _run("top_k", seed, cases, check, quiet)


# --- GPU exercises ---------------------------------------------------------------------------------

def _kernel(code: str, function: str):
    if not re.search(rf'extern\s+"C"\s+__global__\s+void\s+{function}\s*\(', code):
        raise _Wrong(f'the source defines no extern "C" __global__ void {function}(...)',
                     "keep the kernel's name and signature as given")
    from . import kernels
    return kernels.load(code, function)


def _padded(cp, values, pad: int, fill, dtype):
    values = np.asarray(values)
    out = cp.full(values.size + pad, fill, dtype=dtype)
    out[:values.size] = cp.asarray(values.astype(dtype))
    return out


class _DeviceCase:
    """A graph's arrays on the GPU, each followed by PAD harmless entries, so that a kernel that runs past
    the end reads valid memory and its stray writes land in the NaN canary: empty rows after the offsets;
    after in_sources the id n, whose padded rank, out-degree and contribution are 7 units, 1 and 7 units
    (an extra in-link changes the sum visibly and finitely); after out_targets vertex 0."""

    PAD_UNITS = 7.0

    def __init__(self, cp, graph: Graph, rng):
        self.graph, self.n = graph, graph.num_vertices
        pad_value = self.PAD_UNITS * UNIT
        self.in_offsets = _padded(cp, graph.in_offsets, PAD, graph.num_edges, np.int32)
        self.in_sources = _padded(cp, graph.in_sources, PAD, self.n, np.int32)
        self.out_offsets = _padded(cp, graph.out_offsets, PAD, graph.num_edges, np.int32)
        self.out_targets = _padded(cp, graph.out_targets, PAD, 0, np.int32)
        self.out_degree = _padded(cp, graph.out_degree, PAD, 1, np.int32)
        # contributions: small multiples of 2**-24, so that every float32 sum is exact in any order
        units = rng.integers(1, 512, self.n).astype(np.float64)
        self.contrib_host = np.where(graph.dangling, 0.0, units * UNIT)
        self.rank_host = np.where(graph.dangling, units * UNIT, units * graph.out_degree * UNIT)
        self.contrib = _padded(cp, self.contrib_host, PAD, pad_value, np.float32)
        self.rank = _padded(cp, self.rank_host, PAD, pad_value, np.float32)
        self.edge_term = np.append(self.contrib_host[graph.in_sources], pad_value)
        self.expected = graph.in_matrix @ self.contrib_host       # exact: every partial sum is representable


def _check_sums(dc: _DeviceCase, got_full, again_full=None, vertices=None, hint: str = "",
                unwritten_hint: str = "", lanes: bool = False, atomics: bool = False) -> str | None:
    """Compare a pulled vector (with its canary) to the exact sums; raise _Wrong with the likely cause."""
    graph, n = dc.graph, dc.n
    got_full = np.asarray(got_full, dtype=np.float64)
    canary = got_full[n:]
    if not np.isnan(canary).all():
        i = int(np.flatnonzero(~np.isnan(canary))[0])
        raise _Wrong(f"element {n + i} was written (the graph has {n:,} vertices, so the last is {n - 1})",
                     PAST_THE_END)
    got = got_full[:n]
    listed = np.ones(n, bool) if vertices is None else np.isin(np.arange(n), vertices)
    stray = np.flatnonzero(~listed & ~np.isnan(got))
    if stray.size:
        raise _Wrong(f"vertex {int(stray[0])} was written but is not in the list ({stray.size:,} such vertices)",
                     "a thread works on the wrong vertex: the i-th group of lanes handles vertices[i], not i")
    unwritten = np.flatnonzero(listed & np.isnan(got))
    if unwritten.size:
        raise _Wrong(f"vertex {int(unwritten[0])} never written ({unwritten.size:,} of {int(listed.sum()):,})",
                     NEVER_WRITTEN + unwritten_hint)
    if not got[listed].any() and dc.expected[listed].any():
        raise _Wrong(f"every element is 0; vertex {int(np.argmax(dc.expected))} should be {dc.expected.max():.9g}",
                     "nothing was added: every in-link's share must reach its target")
    if again_full is not None and not np.array_equal(got_full, np.asarray(again_full, np.float64), equal_nan=True):
        v = int(np.flatnonzero(got_full != np.asarray(again_full, np.float64))[0])
        raise _Wrong(f"vertex {v}: {got_full[v]:.9g} in one launch, {again_full[v]:.9g} in the next "
                     "(with these inputs every correct order of additions gives the same bits)", RACE)
    degree = graph.in_degree.astype(np.float64)
    tol = 4 * EPS32 * (degree + 2) * np.abs(dc.expected) + 1e-30
    got_listed = np.where(listed, got, dc.expected)
    bad, where = _worst_vertex(graph, dc.expected, got_listed, tol)
    if not bad.any():
        return None
    ends = graph.in_offsets[1:]
    past = dc.expected + dc.edge_term[ends]
    short = dc.expected - np.where(degree > 0, dc.edge_term[np.maximum(ends - 1, 0)], 0.0)
    if np.allclose(got[bad], past[bad], rtol=1e-5, atol=0):
        raise _Wrong(where, ROW_PAST)
    if np.allclose(got[bad], short[bad], rtol=1e-5, atol=0):
        raise _Wrong(where, ROW_SHORT)
    dmin = int(degree[bad].min())
    if lanes and dmin > 1 and not bad[listed & (degree < dmin)].any():
        raise _Wrong(where, lanes_cause(int(degree[listed & (degree < dmin)].max(initial=0)), dmin))
    if atomics and dmin > 1 and (got[bad] < dc.expected[bad]).all():
        raise _Wrong(where + "; only vertices with several in-links lose rank", RACE)
    raise _Wrong(where, hint or "the sum over in-links is wrong")


def _blocks(threads: int) -> tuple[int]:
    from .pagerank_gpu import _blocks     # the driver's grid size for 256-thread blocks

    return _blocks(threads)


def _gpu_setup(seed):
    from .gpu import require_gpu

    cp = require_gpu()
    seed = _fresh(seed)
    rng = np.random.default_rng(seed)
    return cp, seed, rng


def _launch_twice(cp, dc: _DeviceCase, launch, zeroed: bool = False) -> list[np.ndarray]:
    """Two launches, each into a fresh output poisoned with NaN (zeroed below n for kernels that add):
    with exact inputs a correct kernel gives the same bits twice."""
    results = []
    for _ in range(2):
        pulled = cp.full(dc.n + PAD, cp.nan, dtype=cp.float32)
        if zeroed:
            pulled[:dc.n] = 0
        launch(pulled)
        results.append(pulled.get())
    return results


def pull_grid_stride(code: str, seed=None, quiet: bool = False) -> Report:
    """Exercise 10: pull_grid_stride(in_offsets, in_sources, out_degree, rank, pulled, n), launched with a
    fixed grid of 3 blocks of 128 threads: every thread walks v = its index, + the grid's size, ... < n."""
    cp, seed, rng = _gpu_setup(seed)

    def check(graph):
        kernel = _kernel(code, "pull_grid_stride")
        dc = _DeviceCase(cp, graph, rng)
        out = _launch_twice(cp, dc, lambda pulled: kernel((3,), (128,), (
            dc.in_offsets, dc.in_sources, dc.out_degree, dc.rank, pulled, np.int32(dc.n))))
        _check_sums(dc, out[0], out[1], hint="each in-neighbour u adds rank[u] / out_degree[u]: "
                                             "the out-degree of u, not of v")

    return _run("pull_grid_stride", seed, [(g.name, g) for g in _gpu_graphs(rng)], check, quiet)


def push_rank(code: str, seed=None, quiet: bool = False) -> Report:
    """Exercise 11: push_rank(out_offsets, out_targets, out_degree, rank, pulled, n), one thread per source
    vertex, 256 per block, into a zeroed ``pulled``."""
    cp, seed, rng = _gpu_setup(seed)

    def check(graph):
        kernel = _kernel(code, "push_rank")
        dc = _DeviceCase(cp, graph, rng)
        out = _launch_twice(cp, dc, lambda pulled: kernel(_blocks(dc.n), (256,), (
            dc.out_offsets, dc.out_targets, dc.out_degree, dc.rank, pulled, np.int32(dc.n))), zeroed=True)
        try:
            _check_sums(dc, out[0], out[1], atomics=True)
        except _Wrong as wrong:
            # a push kernel with a bad row bound adds to one extra target per source
            ends, has = graph.out_offsets[1:], graph.out_degree > 0
            extra_targets = np.append(graph.out_targets, 0)[ends]
            extra = np.bincount(extra_targets[has], weights=dc.contrib_host[has], minlength=dc.n)
            got = out[0][:dc.n].astype(np.float64)
            if wrong.cause not in (RACE, PAST_THE_END) and np.allclose(got, dc.expected + extra, rtol=1e-5, atol=0):
                raise _Wrong(wrong.detail, "wrong row bounds: each source also adds to the first out-link of the "
                                           "next vertex (the loop must stop before out_offsets[u + 1])") from None
            raise

    return _run("push_rank", seed, [(g.name, g) for g in _gpu_graphs(rng)], check, quiet)


def contributions_split(code: str, seed=None, quiet: bool = False) -> Report:
    """Exercise 12: contributions_split(rank, out_degree, contrib, dangling_rank, n): contrib[u] =
    rank[u] / out_degree[u] (0 if dangling), dangling_rank[u] = rank[u] if dangling else 0; 256 per block."""
    cp, seed, rng = _gpu_setup(seed)

    def check(graph):
        kernel = _kernel(code, "contributions_split")
        n = graph.num_vertices
        rank = _random_ranks(rng, n).astype(np.float32)
        contrib = cp.full(n + PAD, cp.nan, dtype=cp.float32)
        dangling_rank = cp.full(n + PAD, cp.nan, dtype=cp.float32)
        kernel(_blocks(n), (256,), (_padded(cp, rank, PAD, 0.0, np.float32), _padded(cp, graph.out_degree, PAD, 1, np.int32),
                                    contrib, dangling_rank, np.int32(n)))
        degree, dangling = graph.out_degree, graph.dangling
        want_contrib = np.where(dangling, 0.0, rank / np.maximum(degree, 1))
        want_dangling = np.where(dangling, rank, 0.0).astype(np.float64)
        for name, got_full, want in (("contrib", contrib.get(), want_contrib),
                                     ("dangling_rank", dangling_rank.get(), want_dangling)):
            got_full = got_full.astype(np.float64)
            if not np.isnan(got_full[n:]).all():
                i = int(np.flatnonzero(~np.isnan(got_full[n:]))[0])
                raise _Wrong(f"{name}[{n + i}] was written; the last vertex is {n - 1}", PAST_THE_END)
            got = got_full[:n]
            if np.isinf(got).any():
                v = int(np.flatnonzero(np.isinf(got))[0])
                raise _Wrong(f"{name}[{v}] = {got[v]} (vertex {v} has out-degree {degree[v]})", DIVIDE_BY_ZERO)
            if np.isnan(got).any():
                v = int(np.flatnonzero(np.isnan(got))[0])
                kind = "a dangling vertex" if dangling[v] else "a vertex with out-links"
                raise _Wrong(f"{name}[{v}] never written ({kind}; {int(np.isnan(got).sum())} such)",
                             NEVER_WRITTEN + ("; dangling vertices must store 0 (or their rank)" if dangling[v] else ""))
            bad, where = _worst_vertex(graph, want, got, 2 * EPS32 * np.abs(want) + 1e-30)
            if bad.any():
                raise _Wrong(f"{name}: {where}", "contrib is rank / out-degree for vertices with out-links, 0 for "
                                                 "dangling ones; dangling_rank is the rank of dangling vertices, "
                                                 "0 for the others")

    return _run("contributions_split", seed, [(g.name, g) for g in _gpu_graphs(rng)], check, quiet)


def pull_warp_rank(code: str, seed=None, quiet: bool = False) -> Report:
    """Exercise 13: pull_warp_rank(in_offsets, in_sources, out_degree, rank, pulled, n), one warp (32
    threads) per vertex, 256 threads per block."""
    cp, seed, rng = _gpu_setup(seed)

    def check(graph):
        kernel = _kernel(code, "pull_warp_rank")
        dc = _DeviceCase(cp, graph, rng)
        out = _launch_twice(cp, dc, lambda pulled: kernel(_blocks(32 * dc.n), (256,), (
            dc.in_offsets, dc.in_sources, dc.out_degree, dc.rank, pulled, np.int32(dc.n))))
        _check_sums(dc, out[0], out[1], lanes=True, hint="only lane 0 of each warp should store the warp's total")

    return _run("pull_warp_rank", seed, [(g.name, g) for g in _gpu_graphs(rng)], check, quiet)


def pull_list(code: str, seed=None, quiet: bool = False) -> Report:
    """Exercise 14: pull_list(vertices, count, in_offsets, in_sources, contrib, pulled, width): ``width``
    lanes (2 to 32) per listed vertex, 256 threads per block; vertices not in the list are left alone."""
    cp, seed, rng = _gpu_setup(seed)
    graphs = _gpu_graphs(rng)

    def check(case):
        graph, width = case
        kernel = _kernel(code, "pull_list")
        dc = _DeviceCase(cp, graph, rng)
        n = dc.n
        chosen = rng.random(n) < 0.6
        chosen[int(np.argmax(graph.in_degree))] = True              # always the hub
        vertices = rng.permutation(np.flatnonzero(chosen)).astype(np.int32)
        pulled = cp.full(n + PAD, cp.nan, dtype=cp.float32)
        kernel(_blocks(width * vertices.size), (256,), (_padded(cp, vertices, PAD, 0, np.int32), np.int32(vertices.size),
                                                        dc.in_offsets, dc.in_sources, dc.contrib, pulled,
                                                        np.int32(width)))
        _check_sums(dc, pulled.get(), vertices=vertices, lanes=True,
                    hint="each group must add only its own lanes' partial sums: shuffle with offsets from width / 2 "
                         "down to 1 and pass width, so that no group reads a neighbouring group's lanes",
                    unwritten_hint="; here the first lane of every group (lane = threadIdx.x % width is 0) stores "
                                   "pulled[vertices[i]]")

    cases = [(f"{g.name}, width {w}", (g, w)) for g in graphs for w in (2, 4, 8, 16, 32)]
    return _run("pull_list", seed, cases, check, quiet)


def l1_change(code: str, seed=None, quiet: bool = False) -> Report:
    """Exercise 20: l1_change(new_rank, old_rank, total, n) adds sum(|new - old|) into *total (zeroed
    before the launch), 256 threads per block, one atomicAdd per block."""
    cp, seed, rng = _gpu_setup(seed)
    sizes = [1, 255, 257, 4_099 + 2 * int(rng.integers(0, 50)), 1_000_003 + 2 * int(rng.integers(0, 500))]

    def check(n):
        kernel = _kernel(code, "l1_change")
        old = rng.integers(0, 2**20, n) * 2.0 ** -30                # exact in float32, and so are the
        step = rng.integers(1, 16, n) * rng.choice([-1, 1], n)      # differences and their sums
        new = old + step * 2.0 ** -30
        expected = float(np.abs(new - old).sum())
        results = []
        for _ in range(2):
            total = cp.zeros(2, dtype=cp.float32)
            total[1] = cp.nan
            kernel(_blocks(n), (256,), (cp.asarray(new, dtype=cp.float32), cp.asarray(old, dtype=cp.float32),
                                        total, np.int32(n)))
            results.append(total.get().astype(np.float64))
        got, again = results[0][0], results[1][0]
        if not np.isnan(results[0][1]):
            raise _Wrong(f"total[1] was written", "write only *total (one float)")
        if abs(got - expected) <= 1e-6 * expected and got == again:
            return None
        detail = f"expected {expected:.9g}, got {got:.9g}"
        if got != again and not (np.isnan(got) and np.isnan(again)):
            raise _Wrong(f"{detail}, then {again:.9g} in the next launch", RACE + " (one per block)")
        if expected and abs(got * n - expected) <= 1e-5 * expected and n > 1:
            raise _Wrong(detail, "the residual is scaled by N (a mean): the course's L1 change is the plain sum "
                                 "of |new - old|")
        if abs(got - abs(float((new - old).sum()))) <= 1e-6 * expected:
            raise _Wrong(detail, "signed differences cancel: take the absolute value (fabsf) of each one")
        if got == 0.0:
            raise _Wrong(detail, "nothing was added to *total")
        if n > 256 and got < expected:
            raise _Wrong(detail, RACE + " (one per block): with one block (n <= 256) the sum is right, with "
                                        "several some blocks' sums never arrive")
        raise _Wrong(detail, "the reduction loses or repeats values: check the shared-memory tree (the "
                             "__syncthreads between its steps, elements past n counted as 0)")

    return _run("l1_change", seed, [(f"n = {n:,}", n) for n in sizes], check, quiet)


def fused_update(code: str, seed=None, quiet: bool = False) -> Report:
    """Exercise 21: fused_update(in_offsets, in_sources, out_degree, contrib, dangling_mass, d, new_rank,
    new_contrib, n), one thread per vertex, 256 per block: the sum, the new rank and the next contribution
    in one launch. Then a whole PageRank is run with it and compared with the float64 reference."""
    cp, seed, rng = _gpu_setup(seed)
    graphs = _gpu_graphs(rng)

    def launch(kernel, dc, contrib, dangling_mass, d):
        new_rank = cp.full(dc.n + PAD, cp.nan, dtype=cp.float32)
        new_contrib = cp.full(dc.n + PAD, cp.nan, dtype=cp.float32)
        kernel(_blocks(dc.n), (256,), (dc.in_offsets, dc.in_sources, dc.out_degree, contrib,
                                       np.float32(dangling_mass), np.float32(d), new_rank, new_contrib,
                                       np.int32(dc.n)))
        return new_rank, new_contrib

    def check(graph):
        kernel = _kernel(code, "fused_update")
        dc = _DeviceCase(cp, graph, rng)
        n, d = dc.n, float(rng.uniform(0.6, 0.95))
        rank = _random_ranks(rng, n).astype(np.float32).astype(np.float64)
        contrib = np.where(graph.dangling, 0.0, rank / np.maximum(graph.out_degree, 1)).astype(np.float32)
        mass = float(np.float32(rank[graph.dangling].sum()))
        new_rank, new_contrib = (a.get().astype(np.float64) for a in
                                 launch(kernel, dc, _padded(cp, contrib, PAD, 0.0, np.float32), mass, d))
        pulled = graph.in_matrix @ contrib.astype(np.float64)
        want = d * pulled + (d * mass + 1 - d) / n
        tol = 4 * EPS32 * (graph.in_degree + 8) * want
        for name, got_full in (("new_rank", new_rank), ("new_contrib", new_contrib)):
            if not np.isnan(got_full[n:]).all():
                raise _Wrong(f"{name}[{n + int(np.flatnonzero(~np.isnan(got_full[n:]))[0])}] was written; "
                             f"the last vertex is {n - 1}", PAST_THE_END)
        got = new_rank[:n]
        if np.isnan(got).any():
            raise _Wrong(f"new_rank[{int(np.flatnonzero(np.isnan(got))[0])}] never written", NEVER_WRITTEN)
        bad, where = _worst_vertex(graph, want, got, tol)
        if bad.any():
            where = f"d = {d:.3f}, dangling mass {mass:.4g}: new_rank of {where}"
            if np.allclose(got, d * pulled + (1 - d) / n, rtol=1e-5, atol=0):
                raise _Wrong(where, DANGLING_LOST)
            if np.allclose(got, d * pulled + d * mass + 1 - d, rtol=1e-5, atol=0) or \
                    np.allclose(got, d * pulled + d * mass / n + 1 - d, rtol=1e-5, atol=0):
                raise _Wrong(where, "ranks not summing to 1: the teleport term is (1 - d) / n per vertex and the "
                                    "dangling share d * mass / n")
            raise _Wrong(where, "new rank = d * (sum of the in-neighbours' contributions) + (d * dangling_mass + "
                                "1 - d) / n")
        gotc = new_contrib[:n]
        if np.isinf(gotc).any():
            v = int(np.flatnonzero(np.isinf(gotc))[0])
            raise _Wrong(f"new_contrib[{v}] = {gotc[v]} (vertex {v} has out-degree {graph.out_degree[v]})",
                         DIVIDE_BY_ZERO)
        if np.isnan(gotc).any():
            raise _Wrong(f"new_contrib[{int(np.flatnonzero(np.isnan(gotc))[0])}] never written", NEVER_WRITTEN)
        wantc = np.where(graph.dangling, 0.0, got / np.maximum(graph.out_degree, 1))
        bad, where = _worst_vertex(graph, wantc, gotc, 2 * EPS32 * wantc + 1e-30)
        if bad.any():
            raise _Wrong(f"new_contrib of {where}", "the next contribution is the NEW rank / out-degree "
                                                    "(0 for a dangling vertex)")
        if graph.num_vertices < 1000:
            return None
        # a whole PageRank driven by this kernel
        contrib_d = _padded(cp, np.where(graph.dangling, 0.0, 1.0 / n / np.maximum(graph.out_degree, 1)), PAD, 0.0,
                            np.float32)
        ranks, dangling = cp.full(n, 1.0 / n, dtype=cp.float32), cp.asarray(graph.dangling)
        for iterations in range(1, 1001):
            new_rank, contrib_d = launch(kernel, dc, contrib_d, float(ranks[dangling].sum()), reference.DAMPING)
            change = float(cp.abs(new_rank[:n] - ranks).sum())
            ranks = new_rank[:n].copy()
            if change < 1e-6:
                break
        truth = reference.pagerank(graph, tol=1e-10).ranks
        distance = reference.l1_distance(ranks.get(), truth)
        if distance > 1e-5:
            raise _Wrong(f"a whole PageRank with your kernel ends {distance:.3g} (L1) from the reference, "
                         f"sum {float(ranks.sum()):.7f}", "the update is wrong")
        return f"a whole PageRank with your kernel: {iterations} iterations to L1 < 1e-6, {distance:.1e} from the reference"

    return _run("fused_update", seed, [(g.name, g) for g in graphs], check, quiet)
