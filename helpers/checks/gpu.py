"""The GPU exercise checkers (10 to 21): compile the student's kernel, launch it on fresh seeded graphs and
compare exactly.

Inputs are small multiples of 2**-24 (at most 511 units per contribution, so a 12,000-in-link hub sums to
under 2**23 units): every float32 partial sum is exact in any order, so results are compared bit for bit
and one dropped in-link shows. Every array is followed by PAD entries that make a stray thread visible:
offsets give the vertices past n one in-link each, from a vertex past n whose contribution is 7 units, and
outputs start as NaN (a canary past the end, elements never written) or, for atomics, as 0. Inputs are
read back after every launch (a kernel must not write them). A probed copy of the kernel
(``checks_probe``) shows redundant work, several lanes storing one result, atomics per block and shared
memory read before it is written; ``checks_lint`` reads the source for warp-synchronous hazards. Every wait
for a kernel has a time limit.
"""
from __future__ import annotations

import re

import numpy as np

from . import generators, reference
from .checks_limits import GPU_TIME_LIMIT, KernelHung, wait
from .checks_lint import lint
from .checks_probe import SPAN, UNSET, probed
from .checks_report import Report, Wrong, changed, describe, fresh_seed, random_ranks, refused, run, worst_vertex
from .graph import Graph

EPS32 = float(np.finfo(np.float32).eps)
UNIT = 2.0 ** -24           # dyadic unit of the inputs
PAD = 1024                  # entries after every array
PAD_UNITS = 7.0             # the contribution of each vertex past n
STRAY = 2.0 ** -10          # |new - old| of each element past n in exercise 20

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
CHANGED_INPUT = ("the kernel wrote into its input {names}, which it must not: inputs are read again by every "
                 "later launch (declare them const)")
HUNG = ("the kernel did not finish within {limit:g} s: likely an endless loop (a loop whose counter never "
        "reaches its bound, a stride of 0); the GPU is now busy with it — restart the runtime (on Colab: "
        "Runtime > Restart session) before running anything else on the GPU")
SHARED_UNSET = ("the kernel reads shared memory it never wrote in this launch: the checker filled shared memory "
                "with NaN before a launch and the result changed; on a GPU such slots hold whatever an earlier "
                "kernel left there — write every slot a step reads first (elements past n as 0)")
REDUNDANT_STRIDE = ("a wrong grid stride: several threads compute the same vertex (vertex {v}: threads {a} and "
                    "{b}; {count:,} vertices so). The values come out right, so this is about performance, not "
                    "correctness: the kernel repeats work; step by the grid's thread count, blockDim.x * "
                    "gridDim.x, so that each vertex is handled by exactly one thread")
NOT_GRID_STRIDE = ("not a grid-stride loop: vertex {v} was handled by thread {a}, but in a grid-stride loop it "
                   "belongs to thread {v} mod {threads} = {b}. The values are right (performance, not "
                   "correctness): consecutive threads must take consecutive vertices, v = global index, then + "
                   "blockDim.x * gridDim.x, so that a warp's loads are coalesced")
SEVERAL_LANES = ("several lanes store {what} (threads {a} and {b}; {count:,} elements so): only the group's "
                 "first lane should store the group's total. Several lanes writing one element is a race: after "
                 "__shfl_down_sync only lane 0 holds the total, so another lane's partial sum can win; with "
                 "__shfl_xor_sync every lane holds it and the numbers come out right today, but it is still a "
                 "race and wasted stores")
SEVERAL_THREADS = ("{what} is stored by several threads (threads {a} and {b}; {count:,} elements so): one thread "
                   "per vertex; the others repeat its work (performance, not correctness)")
ATOMICS = ("{count:,} atomicAdd calls on *total for {blocks:,} blocks of 256 threads: the rule is one atomicAdd "
           "per block, after the block's shared-memory reduction. The sum comes out right (performance, not "
           "correctness): every atomicAdd on one address waits for the one before it, so one per element makes "
           "the GPU add the whole vector one value at a time")
LIST_OVERRUN = ("groups past the end of the list wrote results: the check i < count is missing or off by one "
                "(the checker follows the list with ids that are not vertices of the graph; pulled[{index}] was "
                "written)")


def lanes_cause(right_max: int, dmin: int) -> str:
    return (f"vertices with up to {right_max} in-links are right, wrong ones have {dmin} or more: "
            "the lanes' partial sums are not all combined exactly once — check the loop's start and stride "
            "(each in-link read by one lane) and the shuffle's offsets, width and mask")


def hard_coded(d: float) -> str:
    return (f"the damping factor is hard-coded: your result is what d = 0.85 gives, but this launch passes "
            f"d = {d:.3f}; use the d argument")


# --- the device --------------------------------------------------------------------------------------

class Device:
    """The few CuPy operations the GPU checkers use; every launch is waited for, at most ``time_limit`` s."""

    def __init__(self, cp, time_limit: float):
        self.cp, self.time_limit = cp, time_limit

    def put(self, host: np.ndarray):
        return self.cp.asarray(host)

    def get(self, array) -> np.ndarray:
        return array.get()

    def compile(self, code: str, function: str):
        from . import kernels

        return kernels.load(code, function)

    def launch(self, kernel, grid: tuple, block: tuple, args: tuple) -> None:
        kernel(grid, block, args)
        try:
            wait(self.cp, self.time_limit)
        except KernelHung as hung:
            raise Wrong(str(hung), HUNG.format(limit=self.time_limit), stop=True) from None


def _open_device(time_limit: float) -> Device:
    from .gpu import require_gpu

    return Device(require_gpu(), time_limit)


def _blocks(threads: int) -> tuple[int]:
    return (max(1, (int(threads) + 255) // 256),)


def _gpu_graphs(rng) -> list[Graph]:
    """One vertex, only dangling vertices, a long in-link list, and two fresh adversarial graphs whose sizes
    are not multiples of the block size, one with a hub of 12,000 in-links."""
    n1, n2 = 1000 + 2 * int(rng.integers(1, 120)) + 1, 20_001 + int(rng.integers(0, 100))
    return [generators.single_vertex(), generators.all_dangling(3), generators.in_star(300),
            generators.adversarial_graph(n1, seed=int(rng.integers(2**31)), hub_in_links=n1 // 2),
            generators.adversarial_graph(n2, seed=int(rng.integers(2**31)), hub_in_links=12_000)]


def _padded(values, fill, dtype) -> np.ndarray:
    return np.concatenate([np.asarray(values, dtype=dtype), np.full(PAD, fill, dtype=dtype)])


def _padded_offsets(offsets: np.ndarray, m: int) -> np.ndarray:
    """Offsets followed by PAD rows of one entry each: the vertices past n have one link each."""
    return np.concatenate([offsets, m + 1 + np.arange(PAD)]).astype(np.int32)


class DeviceCase:
    """A graph's arrays on the device, padded (see the module's docstring), with the host copies they are
    checked against after every launch, and the exact expected pull sums."""

    def __init__(self, device: Device, graph: Graph, rng):
        self.device, self.graph, self.n = device, graph, graph.num_vertices
        n, m = self.n, graph.num_edges
        pad_value = PAD_UNITS * UNIT
        units = rng.integers(1, 512, n).astype(np.float64)
        self.contrib_host = np.where(graph.dangling, 0.0, units * UNIT)
        rank_host = np.where(graph.dangling, units * UNIT, units * graph.out_degree * UNIT)
        self.host = {"in_offsets": _padded_offsets(graph.in_offsets, m),
                     "in_sources": _padded(graph.in_sources, 0, np.int32),
                     "out_offsets": _padded_offsets(graph.out_offsets, m),
                     "out_targets": _padded(graph.out_targets, 0, np.int32),
                     "out_degree": _padded(graph.out_degree, 1, np.int32),
                     "contrib": _padded(self.contrib_host, pad_value, np.float32),
                     "rank": _padded(rank_host, pad_value, np.float32)}
        self.host["in_sources"][m:] = n + np.arange(PAD)
        self.host["out_targets"][m:] = n + np.arange(PAD)
        self.dev = {name: device.put(array) for name, array in self.host.items()}
        self.edge_term = np.append(self.contrib_host[graph.in_sources], pad_value)
        self.expected = graph.in_matrix @ self.contrib_host        # exact: every partial sum is representable

    def add(self, name: str, host: np.ndarray):
        self.host[name] = host
        self.dev[name] = self.device.put(host)
        return self.dev[name]

    def unchanged(self, *names: str) -> None:
        """Raise Wrong when a launch wrote into one of these inputs."""
        found = [changed(name, self.host[name], self.device.get(self.dev[name])) for name in names]
        found = [f for f in found if f]
        if found:
            raise Wrong("; ".join(found), CHANGED_INPUT.format(names=", ".join(f.split(":")[0] for f in found)))


def _output(device: Device, size: int, fill: float = np.nan):
    return device.put(np.full(size, fill, dtype=np.float32))


# --- comparing pulled sums -----------------------------------------------------------------------------

def check_sums(dc: DeviceCase, got_full, again_full=None, vertices=None, hint: str = "",
               unwritten_hint: str = "", lanes: bool = False, canary: str = PAST_THE_END) -> None:
    """Compare a pulled vector (NaN-poisoned, with its canary) with the exact sums, bit for bit; raise Wrong
    with the likely cause."""
    graph, n = dc.graph, dc.n
    got_full = np.asarray(got_full, dtype=np.float64)
    written = np.flatnonzero(~np.isnan(got_full[n:]))
    if written.size:
        i = n + int(written[0])
        raise Wrong(f"element {i} was written (the graph has {n:,} vertices, so the last is {n - 1})",
                    canary.format(index=i))
    got = got_full[:n]
    listed = np.ones(n, bool) if vertices is None else np.isin(np.arange(n), vertices)
    stray = np.flatnonzero(~listed & ~np.isnan(got))
    if stray.size:
        raise Wrong(f"vertex {int(stray[0])} was written but is not in the list ({stray.size:,} such vertices)",
                    "a thread works on the wrong vertex: the i-th group of lanes handles vertices[i], not i")
    unwritten = np.flatnonzero(listed & np.isnan(got))
    if unwritten.size:
        raise Wrong(f"vertex {int(unwritten[0])} never written ({unwritten.size:,} of {int(listed.sum()):,})",
                    NEVER_WRITTEN + unwritten_hint)
    if not got[listed].any() and dc.expected[listed].any():
        raise Wrong(f"every element is 0; vertex {int(np.argmax(dc.expected))} should be {dc.expected.max():.9g}",
                    "nothing was added: every in-link's share must reach its target")
    if again_full is not None and not _same_bits(got_full, again_full):
        v = _first_difference(got_full, again_full)
        raise Wrong(f"vertex {v}: {got_full[v]:.9g} in one launch, {again_full[v]:.9g} in the next "
                    "(with these inputs every correct order of additions gives the same bits)", RACE)
    got_listed = np.where(listed, got, dc.expected)
    bad, where = worst_vertex(graph, dc.expected, got_listed, 0.0)
    if not bad.any():
        return
    where += " (every sum here is exact in float32, so any difference is a bug)"
    degree = graph.in_degree.astype(np.float64)
    ends = graph.in_offsets[1:]
    past = dc.expected + dc.edge_term[ends]
    short = dc.expected - np.where(degree > 0, dc.edge_term[np.maximum(ends - 1, 0)], 0.0)
    if np.array_equal(got[bad], past[bad]):
        raise Wrong(where, ROW_PAST)
    if np.array_equal(got[bad], short[bad]):
        raise Wrong(where, ROW_SHORT)
    dmin = int(degree[bad].min())
    if lanes and dmin > 1 and not bad[listed & (degree < dmin)].any():
        raise Wrong(where, lanes_cause(int(degree[listed & (degree < dmin)].max(initial=0)), dmin))
    raise Wrong(where, hint or "the sum over in-links is wrong")


# --- the probed launch -------------------------------------------------------------------------------

def _probe_kernel(device: Device, code: str, function: str, outputs=(), sums=()):
    """The probed kernel, or None when the probe does not cover the way this kernel is written."""
    source = probed(code, function, tuple(outputs), tuple(sums))
    if source is None:
        return None
    try:
        return device.compile(source, function)
    except Exception:                  # the rewriting does not fit this source: skip the probe
        return None


def _probe_buffer(device: Device, size: int, fill: float):
    """An output of ``size`` elements followed by the probe's lowest- and highest-writer arrays."""
    words = np.zeros(3 * SPAN, dtype=np.uint32)
    words[:size] = np.full(size, fill, dtype=np.float32).view(np.uint32)
    words[SPAN:2 * SPAN] = UNSET
    return device.put(words.view(np.float32))


def _writers(host: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(values, lowest writer, highest writer) of a probe buffer read back."""
    words = np.asarray(host, dtype=np.float32).view(np.uint32)
    return (np.asarray(host[:size], dtype=np.float64), words[SPAN:SPAN + size].astype(np.int64),
            words[2 * SPAN:2 * SPAN + size].astype(np.int64))


def _same_bits(a, b) -> bool:
    return np.array_equal(np.asarray(a, np.float64), np.asarray(b, np.float64), equal_nan=True)


def _first_difference(a, b) -> int:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return int(np.flatnonzero(~((a == b) | (np.isnan(a) & np.isnan(b))))[0])


def _shared_changed(values, plain, name: str) -> None:
    if not _same_bits(values, plain):
        i = _first_difference(values, plain)
        raise Wrong(f"{name}[{i}] = {plain[i]:.9g} in a normal launch, {values[i]:.9g} with shared memory "
                    "filled with NaN before the launch", SHARED_UNSET)


def _several(lowest, highest, indices, template: str, what: str) -> None:
    """Raise when an element among ``indices`` was stored by more than one thread."""
    lo, hi = lowest[indices], highest[indices]
    several = (lo != UNSET) & (lo != hi)
    if several.any():
        k = int(np.flatnonzero(several)[0])
        raise Wrong(f"{what}[{int(indices[k])}] was stored by more than one thread",
                    template.format(what=f"{what}[{int(indices[k])}]", a=int(lo[k]), b=int(hi[k]),
                                    count=int(several.sum())))


# --- the checkers ------------------------------------------------------------------------------------

def _kernel(device: Device, code: str, function: str):
    if not re.search(rf'extern\s+"C"\s+__global__\s+void\s+{function}\s*\(', code):
        raise Wrong(f'the source defines no extern "C" __global__ void {function}(...)',
                    "keep the kernel's name and signature as given", stop=True)
    return device.compile(code, function)


def _start(device: Device, code: str, function: str, graph: Graph, rng):
    """(the compiled kernel, the graph on the device, its vertex count) for one case."""
    kernel = _kernel(device, code, function)
    dc = DeviceCase(device, graph, rng)
    return kernel, dc, dc.n


def _source_cases(code: str, function: str) -> list:
    """One case per distinct warp hazard the lint finds in the source."""
    by_cause: dict[str, list] = {}
    for hazard in lint(code, function):
        by_cause.setdefault(hazard.cause, []).append(hazard)
    return [(f"the kernel's source, line {found[0].line} (read, not run)", ("source", found))
            for found in by_cause.values()]


def _checker(exercise: str, code: str, function: str, seed, quiet: bool, time_limit: float, cases, check) -> Report:
    if not isinstance(code, str):
        return refused(exercise, seed, f"the checker got {describe(code)}",
                       f"pass the kernel's source, a string: checks.{exercise}(KERNEL) with KERNEL = r\'\'\'...\'\'\'", quiet)
    device = _open_device(time_limit)

    def checked(case):
        if isinstance(case, tuple) and case and case[0] == "source":
            found = case[1]
            lines = ", ".join(str(h.line) for h in found[1:])
            raise Wrong(f"`{found[0].text}`" + (f" (and lines {lines})" if lines else ""), found[0].cause)
        return check(device, case)

    return run(exercise, seed, _source_cases(code, function) + cases, checked, quiet)


def _setup(seed):
    seed = fresh_seed(seed)
    return seed, np.random.default_rng(seed)


def _pull_launches(device: Device, dc: DeviceCase, kernel, grid, block, args, inputs, fill=np.nan) -> list:
    """Two launches, each into a fresh output (NaN, or ``fill``), inputs read back after each."""
    results = []
    for _ in range(2):
        out = _output(device, dc.n + PAD, fill)
        device.launch(kernel, grid, block, args(out))
        dc.unchanged(*inputs)
        results.append(device.get(out))
    return results


def _csr_args(dc: DeviceCase, direction: str):
    """(args(output), input names) of the kernels that take (offsets, links, out_degree, rank, output, n):
    the pull kernels over in-links, the push kernel over out-links."""
    names = ("in_offsets", "in_sources") if direction == "in" else ("out_offsets", "out_targets")

    def args(out):
        return (dc.dev[names[0]], dc.dev[names[1]], dc.dev["out_degree"], dc.dev["rank"], out, np.int32(dc.n))

    return args, names + ("out_degree", "rank")


def _probe_writers(device: Device, probe, grid, block, args, plain, size: int) -> tuple[np.ndarray, np.ndarray]:
    """Launch the probed kernel into a fresh probe buffer; check its values against the plain launch's
    (shared memory filled with NaN must change nothing) and return (lowest, highest) writer ids."""
    buffer = _probe_buffer(device, size, np.nan)
    device.launch(probe, grid, block, args(buffer))
    values, lowest, highest = _writers(device.get(buffer), size)
    _shared_changed(values, plain, "pulled")
    return lowest, highest


def pull_grid_stride(code: str, seed=None, quiet: bool = False, time_limit: float = GPU_TIME_LIMIT) -> Report:
    """Exercise 10: pull_grid_stride(in_offsets, in_sources, out_degree, rank, pulled, n), launched with a
    fixed grid of 3 blocks of 128 threads: every thread walks v = its index, + the grid's size, ... < n."""
    seed, rng = _setup(seed)
    threads = 3 * 128

    def check(device, graph):
        kernel, dc, n = _start(device, code, "pull_grid_stride", graph, rng)
        args, inputs = _csr_args(dc, "in")
        out = _pull_launches(device, dc, kernel, (3,), (128,), args, inputs)
        check_sums(dc, out[0], out[1], hint="each in-neighbour u adds rank[u] / out_degree[u]: the out-degree of "
                                            "u, not of v")
        probe = _probe_kernel(device, code, "pull_grid_stride", outputs=("pulled",))
        if probe is None:
            return None
        lowest, highest = _probe_writers(device, probe, (3,), (128,), args, out[0], n + PAD)
        lo, hi = lowest[:n], highest[:n]
        several = (lo != UNSET) & (lo != hi)
        if several.any():
            v = int(np.flatnonzero(several)[0])
            raise Wrong(f"vertex {v} was computed by more than one thread",
                        REDUNDANT_STRIDE.format(v=v, a=int(lo[v]), b=int(hi[v]), count=int(several.sum())))
        elsewhere = (lo != UNSET) & (lo != np.arange(n) % threads)
        if elsewhere.any():
            v = int(np.flatnonzero(elsewhere)[0])
            raise Wrong(f"vertex {v} was computed by thread {int(lo[v])}",
                        NOT_GRID_STRIDE.format(v=v, a=int(lo[v]), threads=threads, b=v % threads))
        return None

    graphs = _gpu_graphs(rng)
    return _checker("pull_grid_stride", code, "pull_grid_stride", seed, quiet, time_limit,
                    [(g.name, g) for g in graphs], check)


def push_rank(code: str, seed=None, quiet: bool = False, time_limit: float = GPU_TIME_LIMIT) -> Report:
    """Exercise 11: push_rank(out_offsets, out_targets, out_degree, rank, pulled, n), one thread per source
    vertex, 256 per block, into a zeroed ``pulled`` (zeros past the end too: a stray add shows there)."""
    seed, rng = _setup(seed)

    def check(device, graph):
        kernel, dc, n = _start(device, code, "push_rank", graph, rng)
        args, inputs = _csr_args(dc, "out")
        out = _pull_launches(device, dc, kernel, _blocks(n), (256,), args, inputs, fill=0.0)
        got_full, again_full = (np.asarray(o, np.float64) for o in out)
        expected_full = np.concatenate([dc.expected, np.zeros(PAD)])
        if np.array_equal(got_full, expected_full) and np.array_equal(again_full, expected_full):
            return None
        has = graph.out_degree > 0
        extra = dc.host["out_targets"][graph.out_offsets[1:][has]]
        past = expected_full + np.bincount(extra, weights=dc.contrib_host[has], minlength=n + PAD)
        lasts = dc.host["out_targets"][np.maximum(graph.out_offsets[1:][has] - 1, 0)]
        short = expected_full - np.bincount(lasts, weights=dc.contrib_host[has], minlength=n + PAD)
        for guess, cause in ((past, "wrong row bounds: each source also adds to the first out-link of the next "
                                    "vertex (the loop must stop before out_offsets[u + 1])"),
                             (short, "wrong row bounds: each source misses its last out-link (the loop stops one "
                                     "early)")):
            if not np.array_equal(guess, expected_full) and np.array_equal(got_full, guess):
                v = _first_difference(got_full, expected_full)
                raise Wrong(f"vertex {v}: expected {expected_full[v]:.9g}, got {got_full[v]:.9g}", cause)
        written = np.flatnonzero(got_full[n:] != 0)
        if written.size:
            i = n + int(written[0])
            raise Wrong(f"element {i} received {got_full[i]:.9g} (the graph has {n:,} vertices, so the last is "
                        f"{n - 1}; the elements past it start at 0)",
                        "threads past the last vertex pushed rank: the bounds check (u < n) is missing or off by one")
        if not got_full[:n].any() and dc.expected.any():
            raise Wrong(f"every element is 0; vertex {int(np.argmax(dc.expected))} should be {dc.expected.max():.9g}",
                        "nothing was added: every out-link's share must reach its target")
        if not np.array_equal(got_full, again_full):
            v = int(np.flatnonzero(got_full != again_full)[0])
            raise Wrong(f"vertex {v}: {got_full[v]:.9g} in one launch, {again_full[v]:.9g} in the next (with these "
                        "inputs every correct order of additions gives the same bits)", RACE)
        bad, where = worst_vertex(graph, dc.expected, got_full[:n], 0.0)
        degree = graph.in_degree
        if (got_full[:n][bad] < dc.expected[bad]).all() and (degree[bad] > 1).all():
            raise Wrong(where + "; only vertices with several in-links lose rank", RACE)
        raise Wrong(where, "each source u adds rank[u] / out_degree[u] to every vertex it links to")

    graphs = _gpu_graphs(rng)
    return _checker("push_rank", code, "push_rank", seed, quiet, time_limit, [(g.name, g) for g in graphs], check)


def contributions_split(code: str, seed=None, quiet: bool = False, time_limit: float = GPU_TIME_LIMIT) -> Report:
    """Exercise 12: contributions_split(rank, out_degree, contrib, dangling_rank, n): contrib[u] =
    rank[u] / out_degree[u] (0 if dangling), dangling_rank[u] = rank[u] if dangling else 0; 256 per block."""
    seed, rng = _setup(seed)

    def check(device, graph):
        kernel = _kernel(device, code, "contributions_split")
        n = graph.num_vertices
        dc = DeviceCase(device, graph, rng)
        rank = random_ranks(rng, n).astype(np.float32)
        dc.add("ranks", _padded(rank, PAD_UNITS * UNIT, np.float32))

        def launch(kernel, contrib, dangling_rank):
            device.launch(kernel, _blocks(n), (256,), (dc.dev["ranks"], dc.dev["out_degree"], contrib, dangling_rank,
                                                      np.int32(n)))
            dc.unchanged("ranks", "out_degree")

        contrib, dangling_rank = _output(device, n + PAD), _output(device, n + PAD)
        launch(kernel, contrib, dangling_rank)
        degree, dangling = graph.out_degree, graph.dangling
        want_contrib = np.where(dangling, 0.0, (rank / np.maximum(degree, 1).astype(np.float32)).astype(np.float64))
        want_dangling = np.where(dangling, rank, 0.0).astype(np.float64)
        results = {"contrib": device.get(contrib), "dangling_rank": device.get(dangling_rank)}
        for name, want in (("contrib", want_contrib), ("dangling_rank", want_dangling)):
            got_full = results[name].astype(np.float64)
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
                            NEVER_WRITTEN + ("; dangling vertices must store 0 (or their rank)" if dangling[v] else ""))
            bad, where = worst_vertex(graph, want, got, 2 * EPS32 * np.abs(want))
            if bad.any():
                raise Wrong(f"{name}: {where}", "contrib is rank / out-degree for vertices with out-links, 0 for "
                                                "dangling ones; dangling_rank is the rank of dangling vertices, 0 "
                                                "for the others")
        probe = _probe_kernel(device, code, "contributions_split", outputs=("contrib", "dangling_rank"))
        if probe is None:
            return None
        buffers = _probe_buffer(device, n + PAD, np.nan), _probe_buffer(device, n + PAD, np.nan)
        launch(probe, *buffers)
        for name, buffer in zip(("contrib", "dangling_rank"), buffers):
            values, lowest, highest = _writers(device.get(buffer), n + PAD)
            _shared_changed(values, results[name], name)
            _several(lowest, highest, np.arange(n), SEVERAL_THREADS, name)
        return None

    graphs = _gpu_graphs(rng)
    return _checker("contributions_split", code, "contributions_split", seed, quiet, time_limit,
                    [(g.name, g) for g in graphs], check)


def pull_warp_rank(code: str, seed=None, quiet: bool = False, time_limit: float = GPU_TIME_LIMIT) -> Report:
    """Exercise 13: pull_warp_rank(in_offsets, in_sources, out_degree, rank, pulled, n), one warp (32
    threads) per vertex, 256 threads per block; only lane 0 of each warp stores."""
    seed, rng = _setup(seed)

    def check(device, graph):
        kernel, dc, n = _start(device, code, "pull_warp_rank", graph, rng)
        args, inputs = _csr_args(dc, "in")
        out = _pull_launches(device, dc, kernel, _blocks(32 * n), (256,), args, inputs)
        check_sums(dc, out[0], out[1], lanes=True, hint="only lane 0 of each warp should store the warp's total")
        probe = _probe_kernel(device, code, "pull_warp_rank", outputs=("pulled",))
        if probe is None:
            return None
        lowest, highest = _probe_writers(device, probe, _blocks(32 * n), (256,), args, out[0], n + PAD)
        _several(lowest, highest, np.arange(n), SEVERAL_LANES, "pulled")
        return None

    graphs = _gpu_graphs(rng)
    return _checker("pull_warp_rank", code, "pull_warp_rank", seed, quiet, time_limit,
                    [(g.name, g) for g in graphs], check)


def pull_list(code: str, seed=None, quiet: bool = False, time_limit: float = GPU_TIME_LIMIT) -> Report:
    """Exercise 14: pull_list(vertices, count, in_offsets, in_sources, contrib, pulled, width): ``width``
    lanes (2 to 32) per listed vertex, 256 threads per block; vertices not in the list are left alone.
    The list is followed by ids past the graph, so a group past the end of the list writes past n."""
    seed, rng = _setup(seed)
    graphs = _gpu_graphs(rng)

    def check(device, case):
        graph, width = case
        kernel, dc, n = _start(device, code, "pull_list", graph, rng)
        chosen = rng.random(n) < 0.6
        chosen[int(np.argmax(graph.in_degree))] = True              # always the hub
        vertices = rng.permutation(np.flatnonzero(chosen)).astype(np.int32)
        listed = dc.add("vertices", np.concatenate([vertices, n + np.arange(PAD)]).astype(np.int32))
        grid = _blocks(width * vertices.size)

        def args(out):
            return (listed, np.int32(vertices.size), dc.dev["in_offsets"], dc.dev["in_sources"], dc.dev["contrib"],
                    out, np.int32(width))

        out = _pull_launches(device, dc, kernel, grid, (256,), args, ("vertices", "in_offsets", "in_sources",
                                                                        "contrib"))
        check_sums(dc, out[0], out[1], vertices=vertices, lanes=True, canary=LIST_OVERRUN,
                   hint="each group must add only its own lanes' partial sums: shuffle with offsets from width / 2 "
                        "down to 1 and pass width, so that no group reads a neighbouring group's lanes",
                   unwritten_hint="; here the first lane of every group (lane = threadIdx.x % width is 0) stores "
                                  "pulled[vertices[i]]")
        probe = _probe_kernel(device, code, "pull_list", outputs=("pulled",))
        if probe is None:
            return None
        lowest, highest = _probe_writers(device, probe, grid, (256,), args, out[0], n + PAD)
        _several(lowest, highest, np.sort(vertices), SEVERAL_LANES, "pulled")
        return None

    cases = [(f"{g.name}, width {w}", (g, w)) for g in graphs for w in (2, 4, 8, 16, 32)]
    return _checker("pull_list", code, "pull_list", seed, quiet, time_limit, cases, check)


def l1_change(code: str, seed=None, quiet: bool = False, time_limit: float = GPU_TIME_LIMIT) -> Report:
    """Exercise 20: l1_change(new_rank, old_rank, total, n) adds sum(|new - old|) into *total (zeroed
    before the launch), 256 threads per block, one atomicAdd per block. Past n the inputs differ by 2**-10
    each, so a thread that reads past the end changes the sum."""
    seed, rng = _setup(seed)
    sizes = [1, 255, 257, 4_099 + 2 * int(rng.integers(0, 50)), 1_000_003 + 2 * int(rng.integers(0, 500))]

    def check(device, n):
        kernel = _kernel(device, code, "l1_change")
        old = rng.integers(0, 2**20, n) * 2.0 ** -30                # exact in float32, and so are the
        step = rng.integers(1, 16, n) * rng.choice([-1, 1], n)      # differences and their sums
        new = old + step * 2.0 ** -30
        expected = float(np.abs(new - old).sum())
        host = {"new_rank": _padded(new, STRAY, np.float32), "old_rank": _padded(old, 0.0, np.float32)}
        dev = {name: device.put(array) for name, array in host.items()}
        blocks = _blocks(n)[0]

        def launch(kernel, total):
            device.launch(kernel, (blocks,), (256,), (dev["new_rank"], dev["old_rank"], total, np.int32(n)))
            found = [changed(name, host[name], device.get(dev[name])) for name in host]
            found = [f for f in found if f]
            if found:
                raise Wrong("; ".join(found), CHANGED_INPUT.format(names=", ".join(f.split(":")[0] for f in found)))

        results = []
        for _ in range(2):
            total = device.put(np.array([0.0, np.nan], dtype=np.float32))
            launch(kernel, total)
            results.append(device.get(total).astype(np.float64))
        got, again = results[0][0], results[1][0]
        if not np.isnan(results[0][1]):
            raise Wrong("total[1] was written", "write only *total (one float)")
        probe = _probe_kernel(device, code, "l1_change", sums=("total",))
        probed_total, count = None, 0
        if probe is not None:
            words = np.zeros(2 * SPAN, dtype=np.uint32)
            words[1] = np.array([np.nan], dtype=np.float32).view(np.uint32)[0]
            total = device.put(words.view(np.float32))
            launch(probe, total)
            back = np.asarray(device.get(total), dtype=np.float32)
            probed_total, count = float(back[0]), int(back.view(np.uint32)[SPAN])
        detail = f"expected {expected:.9g}, got {got:.9g}"
        if probed_total is not None and probed_total != got and np.isnan(probed_total) != np.isnan(got):
            raise Wrong(f"{detail} in a normal launch, {probed_total:.9g} with shared memory filled with NaN before "
                        "the launch", SHARED_UNSET)
        if np.isnan(got):                   # the inputs are finite: a NaN came from memory the kernel never wrote
            raise Wrong(detail, SHARED_UNSET)
        if got == expected and again == expected:
            if probed_total is not None and probed_total != expected:
                raise Wrong(f"{detail} in a normal launch, {probed_total:.9g} with shared memory filled with NaN "
                            "before the launch", SHARED_UNSET)
            if count > blocks:
                raise Wrong(f"{count:,} atomicAdd calls for {blocks:,} blocks", ATOMICS.format(count=count, blocks=blocks))
            return None
        if got != again and not (np.isnan(got) and np.isnan(again)):
            raise Wrong(f"{detail}, then {again:.9g} in the next launch", RACE + " (one per block)")
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
        if n > 256 and got < expected:
            raise Wrong(detail, RACE + " (one per block): with one block (n <= 256) the sum is right, with "
                                       "several some blocks' sums never arrive")
        raise Wrong(detail, "the reduction loses or repeats values: check the shared-memory tree (the "
                            "__syncthreads between its steps, elements past n counted as 0)")

    return _checker("l1_change", code, "l1_change", seed, quiet, time_limit, [(f"n = {n:,}", n) for n in sizes],
                    check)


def fused_update(code: str, seed=None, quiet: bool = False, time_limit: float = GPU_TIME_LIMIT) -> Report:
    """Exercise 21: fused_update(in_offsets, in_sources, out_degree, contrib, dangling_mass, d, new_rank,
    new_contrib, n), one thread per vertex, 256 per block: the sum, the new rank and the next contribution
    in one launch. A launch with d = 1 and no dangling mass makes new_rank the bare sum, compared bit for
    bit; a launch with a random d checks the formula; then a whole PageRank is run with the kernel."""
    seed, rng = _setup(seed)
    graphs = _gpu_graphs(rng)

    def check(device, graph):
        kernel, dc, n = _start(device, code, "fused_update", graph, rng)
        inputs = ("in_offsets", "in_sources", "out_degree", "contrib")

        def launch(kernel, contrib, mass, d, outputs=None):
            new_rank, new_contrib = outputs or (_output(device, n + PAD), _output(device, n + PAD))
            device.launch(kernel, _blocks(n), (256,), (dc.dev["in_offsets"], dc.dev["in_sources"],
                                                      dc.dev["out_degree"], contrib, np.float32(mass), np.float32(d),
                                                      new_rank, new_contrib, np.int32(n)))
            dc.unchanged(*inputs)
            return device.get(new_rank).astype(np.float64), device.get(new_contrib).astype(np.float64)

        def contributions(new_contrib, got):
            divided = (np.isinf(new_contrib[:n]) | (np.isnan(new_contrib[:n]) & graph.dangling)) & np.isfinite(got)
            if divided.any():
                v = int(np.flatnonzero(divided)[0])
                raise Wrong(f"new_contrib[{v}] = {new_contrib[v]} (vertex {v} has out-degree {graph.out_degree[v]})",
                            DIVIDE_BY_ZERO)
            if np.isnan(new_contrib[:n]).any():
                raise Wrong(f"new_contrib[{int(np.flatnonzero(np.isnan(new_contrib[:n]))[0])}] never written",
                            NEVER_WRITTEN)
            want = np.where(graph.dangling, 0.0, got / np.maximum(graph.out_degree, 1))
            bad, where = worst_vertex(graph, want, new_contrib[:n], 2 * EPS32 * want)
            if bad.any():
                raise Wrong(f"new_contrib of {where}", "the next contribution is the NEW rank / out-degree "
                                                       "(0 for a dangling vertex)")

        # 1. d = 1, no dangling mass: new_rank is the sum over in-links, exact
        exact_rank, exact_contrib = launch(kernel, dc.dev["contrib"], 0.0, 1.0)
        for name, got_full in (("new_rank", exact_rank), ("new_contrib", exact_contrib)):
            if not np.isnan(got_full[n:]).all():
                raise Wrong(f"{name}[{n + int(np.flatnonzero(~np.isnan(got_full[n:]))[0])}] was written; "
                            f"the last vertex is {n - 1}", PAST_THE_END)
        if not np.isnan(exact_rank[:n]).any() and \
                np.allclose(exact_rank[:n], 0.85 * dc.expected + 0.15 / n, rtol=1e-6, atol=0):
            raise Wrong("with d = 1 and no dangling mass, new_rank[v] should be the bare sum over in-links",
                        hard_coded(1.0))
        check_sums(dc, exact_rank, hint="new rank = d * (the sum of the in-neighbours' contributions) + (d * "
                                        "dangling_mass + 1 - d) / n; with d = 1 and no dangling mass, the bare sum")
        contributions(exact_contrib, exact_rank[:n])
        # 2. a random d and the real dangling mass: the formula
        # (the same exact contributions: only the few operations of the formula round, a few ulps of the result)
        d = float(np.float32(rng.uniform(0.6, 0.95)))
        mass = float(np.float32(rng.uniform(0.05, 0.5)))
        contrib_dev = dc.dev["contrib"]
        new_rank, new_contrib = launch(kernel, contrib_dev, mass, d)
        pulled = dc.expected
        want = d * pulled + (d * mass + 1 - d) / n
        got = new_rank[:n]
        bad, where = worst_vertex(graph, want, got, 8 * EPS32 * want)
        if bad.any():
            where = f"d = {d:.3f}, dangling mass {mass:.4g}: new_rank of {where}"
            variants = {DANGLING_LOST: d * pulled + (1 - d) / n,
                        "the dangling share is not damped: every vertex gets d * dangling_mass / n, not "
                        "dangling_mass / n": d * pulled + (mass + 1 - d) / n,
                        "ranks not summing to 1: the teleport term is (1 - d) / n per vertex and the dangling share "
                        "d * mass / n": d * pulled + d * mass + 1 - d,
                        "ranks not summing to 1: the teleport term (1 - d) is shared by the n vertices, (1 - d) / n "
                        "each": d * pulled + d * mass / n + 1 - d,
                        hard_coded(d): 0.85 * pulled + (0.85 * mass + 0.15) / n}
            for cause, variant in variants.items():
                if np.allclose(got, variant, rtol=1e-5, atol=0):
                    raise Wrong(where, cause)
            raise Wrong(where, "new rank = d * (sum of the in-neighbours' contributions) + (d * dangling_mass + "
                               "1 - d) / n")
        contributions(new_contrib, got)
        # 3. the probe: one thread per vertex, shared memory written before it is read
        probe = _probe_kernel(device, code, "fused_update", outputs=("new_rank", "new_contrib"))
        if probe is not None:
            buffers = _probe_buffer(device, n + PAD, np.nan), _probe_buffer(device, n + PAD, np.nan)
            launch(probe, contrib_dev, mass, d, outputs=buffers)
            for name, buffer, plain in zip(("new_rank", "new_contrib"), buffers, (new_rank, new_contrib)):
                values, lowest, highest = _writers(device.get(buffer), n + PAD)
                _shared_changed(values, plain, name)
                _several(lowest, highest, np.arange(n), SEVERAL_THREADS, name)
        if n < 1000:
            return None
        # 4. a whole PageRank driven by this kernel
        ranks = np.full(n, 1.0 / n, dtype=np.float32)
        contrib_dev = dc.add("contrib_run", _padded(np.where(graph.dangling, 0.0, 1.0 / n / np.maximum(
            graph.out_degree, 1)), 0.0, np.float32))
        for iterations in range(1, 1001):
            outputs = _output(device, n + PAD), _output(device, n + PAD)
            new_rank, _ = launch(kernel, contrib_dev, float(ranks[graph.dangling].astype(np.float64).sum()),
                                 reference.DAMPING, outputs=outputs)
            contrib_dev = outputs[1]
            change = float(np.abs(new_rank[:n] - ranks).sum())
            ranks = new_rank[:n].astype(np.float32)
            if change < 1e-6:
                break
        truth = reference.pagerank(graph, tol=1e-10).ranks
        distance = reference.l1_distance(ranks, truth)
        if distance > 1e-5:
            raise Wrong(f"a whole PageRank with your kernel ends {distance:.3g} (L1) from the reference, "
                        f"sum {float(ranks.astype(np.float64).sum()):.7f}", "the update is wrong")
        return f"a whole PageRank with your kernel: {iterations} iterations to L1 < 1e-6, {distance:.1e} from the reference"

    return _checker("fused_update", code, "fused_update", seed, quiet, time_limit, [(g.name, g) for g in graphs],
                    check)
