"""What the GPU checkers launch kernels on: the device (every wait with a time limit), the graphs and their
padded, poisoned arrays, the exact comparison of pulled sums with its causes, and the buffers of the probed
launch (``checks.probe``) read back.

Inputs are small multiples of 2**-24 (at most 255 units per contribution, so a hub of 35,000 in-links sums to
under 2**24 units): every float32 partial sum is exact in any order, so results are compared bit for bit and
one dropped in-link shows. Every array is followed by PAD entries that make a stray thread visible: offsets
give the vertices past n one in-link each, from a vertex past n whose contribution is 7 units, and outputs
start as NaN (a canary past the end, elements never written) or, for atomics, as 0. Inputs are read back
after every launch (a kernel must not write them); the probed launch counts the reads outside each input.
"""
from __future__ import annotations

import numpy as np

from helpers.core import generators
from helpers import kernels
from helpers.core.graph import Graph
from helpers.checks.limits import KernelHung, wait
from helpers.checks.probe import READ_SLOTS, SPAN, UNSET
from helpers.checks.report import Wrong, after_a_fault, changed, worst_vertex

EPS32 = float(np.finfo(np.float32).eps)
UNIT = 2.0 ** -24           # dyadic unit of the inputs
MAX_UNITS = 255             # the largest contribution, in units
PAD = 1024                  # entries after every array
PAD_UNITS = 7.0             # the contribution of each vertex past n
BLOCK = 256                 # threads per block, as the exercises prescribe

PAST_THE_END = ("wrote past the end of the output: the bounds check (v < n) is missing or off by one, so "
                "threads beyond the last vertex store results")
NEVER_WRITTEN = ("elements never written (the output was filled with NaN before the launch): every vertex "
                 "below n needs a thread that stores its result")
RACE = ("a race: updates are lost (and the result can change from launch to launch); threads that add to "
        "the same element need atomicAdd")
ROW_PAST = ("wrong row bounds: each vertex also adds the first in-link of the next vertex (the loop must "
            "stop before offsets[v + 1], not at it)")
ROW_SHORT = "wrong row bounds: each vertex misses its last in-link (the loop stops one early)"
CHANGED_INPUT = ("the kernel wrote into its input {names}, which it must not: inputs are read again by "
                 "every later launch (declare them const)")
HUNG = ("the kernel did not finish within {limit:g} s: likely an endless loop (a loop whose counter never "
        "reaches its bound, a stride of 0); {after}")
SHARED_UNSET = ("the kernel reads shared memory it never wrote in this launch: the checker filled shared "
                "memory with NaN before a launch and the result changed; on a GPU such slots hold "
                "whatever an earlier kernel left there — write every slot a step reads first (elements "
                "past n as 0)")
READ_PAST_END = ("the kernel reads {name} outside its {length:,} elements: a bounds check that comes "
                 "after the read (out_degree[u] or rank[u] read before u < n is tested) or an index past "
                 "the array. The checker's padding made these reads harmless in the launches it compared; "
                 "past a real array's end they read another allocation or fault — test the bounds before "
                 "the first read")


def lanes_cause(right_max: int, dmin: int) -> str:
    return (f"vertices with up to {right_max} in-links are right, wrong ones have {dmin} or more: the "
            "lanes' partial sums are not all combined exactly once — check the loop's start and stride "
            "(each in-link read by one lane) and the shuffle's offsets, width and mask")


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
        return kernels.compiled(code, function)

    def launch(self, kernel, grid: tuple, block: tuple, args: tuple) -> None:
        kernel(grid, block, args)
        self.finish()

    def finish(self) -> None:
        """Wait for the work queued on the current stream, at most ``time_limit`` s (Wrong, stopping the
        run, past it)."""
        try:
            wait(self.cp, self.time_limit)
        except KernelHung as hung:
            raise Wrong(str(hung), HUNG.format(limit=self.time_limit, after=after_a_fault()),
                        stop=True) from None

    def device_graph(self, graph, arrays: dict | None = None):
        """``graph`` as the course's driver lays it out (a ``driver.DeviceGraph``); ``arrays`` (name ->
        (padded host array, length)) replaces its in-CSR and out-degrees by views of padded copies."""
        from helpers.driver import DeviceGraph

        dg = DeviceGraph(graph)
        for name, (host, length) in (arrays or {}).items():
            setattr(dg, name, self.put(host)[:length])
        return dg


def blocks(threads: int, block: int = BLOCK) -> tuple[int]:
    """The grid that gives at least ``threads`` threads in blocks of ``block``."""
    return (max(1, (int(threads) + block - 1) // block),)


def gpu_graphs(rng) -> list[Graph]:
    """One vertex, only dangling vertices, a long in-link list, two fresh adversarial graphs whose sizes are
    not multiples of the block size (one with a hub of 12,000 in-links), and a large one (last): more
    than 2**16 vertices and a hub of more than 2**15 in-links, where 16-bit ids and counts overflow. A
    ladder of every in-degree from 1 to 64 shows the in-degree where a lane mistake starts."""
    n1, n2 = 1000 + 2 * int(rng.integers(1, 120)) + 1, 20_001 + int(rng.integers(0, 100))
    n3, hub = 2**16 + 2 * int(rng.integers(500, 1500)) + 1, 2**15 + int(rng.integers(500, 2000))
    return [generators.single_vertex(), generators.all_dangling(3), generators.in_star(300),
            generators.in_degree_ladder(64),
            generators.adversarial_graph(n1, seed=int(rng.integers(2**31)), hub_in_links=n1 // 2),
            generators.adversarial_graph(n2, seed=int(rng.integers(2**31)), hub_in_links=12_000),
            generators.adversarial_graph(n3, seed=int(rng.integers(2**31)), hub_in_links=hub, avg_degree=1.0,
                                         name=f"large graph: {n3:,} vertices, a hub with {hub:,} in-links")]


def padded(values, fill, dtype) -> np.ndarray:
    """``values`` followed by PAD entries of ``fill``, as ``dtype``."""
    return np.concatenate([np.asarray(values, dtype=dtype), np.full(PAD, fill, dtype=dtype)])


def padded_offsets(offsets: np.ndarray, m: int) -> np.ndarray:
    """Offsets followed by PAD rows of one entry each: the vertices past n have one link each."""
    return np.concatenate([offsets, m + 1 + np.arange(PAD)]).astype(np.int32)


class DeviceCase:
    """A graph's padded arrays on the host (see the module's docstring) and the exact expected pull sums;
    ``max_units`` lowers the largest contribution (in units) where sums over many vertices must stay
    exact."""

    def __init__(self, graph: Graph, rng, max_units: int = MAX_UNITS):
        self.graph, self.n = graph, graph.num_vertices
        n, m = self.n, graph.num_edges
        pad_value = PAD_UNITS * UNIT
        units = rng.integers(1, max_units + 1, n).astype(np.float64)
        self.contrib_host = np.where(graph.dangling, 0.0, units * UNIT)
        rank_host = np.where(graph.dangling, units * UNIT, units * graph.out_degree * UNIT)
        self.host = {"in_offsets": padded_offsets(graph.in_offsets, m),
                     "in_sources": padded(graph.in_sources, 0, np.int32),
                     "out_offsets": padded_offsets(graph.out_offsets, m),
                     "out_targets": padded(graph.out_targets, 0, np.int32),
                     "out_degree": padded(graph.out_degree, 1, np.int32),
                     "contrib": padded(self.contrib_host, pad_value, np.float32),
                     "rank": padded(rank_host, pad_value, np.float32)}
        self.host["in_sources"][m:] = n + np.arange(PAD)
        self.host["out_targets"][m:] = n + np.arange(PAD)
        self.length = {"in_offsets": n + 1, "out_offsets": n + 1, "in_sources": m, "out_targets": m,
                       "out_degree": n, "contrib": n, "rank": n}
        self.edge_term = np.append(self.contrib_host[graph.in_sources], pad_value)
        self.expected = graph.in_matrix @ self.contrib_host     # exact: every partial sum is representable


class Inputs:
    """The inputs of one kernel by parameter name: on the device, their host copies (checked after every
    launch) and their lengths (checked by the probed launch)."""

    def __init__(self, device: Device, named: dict[str, tuple[np.ndarray, int]]):
        self.device = device
        self.host = {name: host for name, (host, _) in named.items()}
        self.length = {name: int(length) for name, (_, length) in named.items()}
        self.dev = {name: device.put(host) for name, host in self.host.items()}

    def unchanged(self) -> None:
        """Raise Wrong when a launch wrote into one of these inputs."""
        found = [changed(name, self.host[name], self.device.get(self.dev[name])) for name in self.host]
        found = [f for f in found if f]
        if found:
            names = ", ".join(f.split(":")[0] for f in found)
            raise Wrong("; ".join(found), CHANGED_INPUT.format(names=names))

    def probed(self) -> dict:
        """Fresh copies for the probed launch, each after READ_SLOTS words: {'buffers': ..., 'views': the
        arrays the kernel gets}."""
        buffers, views = {}, {}
        for name, host in self.host.items():
            words = np.zeros(READ_SLOTS + host.size, dtype=np.uint32)
            words[:READ_SLOTS] = (self.length[name], 0, 0xFFFFFFFF, UNSET)
            words[READ_SLOTS:] = np.ascontiguousarray(host).view(np.uint32)
            buffers[name] = self.device.put(words.view(host.dtype))
            views[name] = buffers[name][READ_SLOTS:]
        return {"buffers": buffers, "views": views}

    def reads_in_bounds(self, probe: dict) -> None:
        """Raise Wrong when the probed launch read an input outside its length."""
        for name, buffer in probe["buffers"].items():
            words = np.asarray(self.device.get(buffer)[:READ_SLOTS]).view(np.uint32)
            if words[1]:
                index = int(np.array([words[2]], dtype=np.uint32).view(np.int32)[0])
                raise Wrong(f"{name}[{index}] read by thread {int(words[3])} ({int(words[1]):,} reads "
                            f"outside 0..{self.length[name] - 1:,})", READ_PAST_END.format(name=name,
                                                                                  length=self.length[name]))


def output(device: Device, size: int, fill: float = np.nan):
    """A fresh output of ``size`` floats on the device, all ``fill`` (NaN: never written)."""
    return device.put(np.full(size, fill, dtype=np.float32))


# --- comparing pulled sums -----------------------------------------------------------------------------

def same_bits(a, b) -> bool:
    """Equal bit for bit, NaN where NaN."""
    return np.array_equal(np.asarray(a, np.float64), np.asarray(b, np.float64), equal_nan=True)


def first_difference(a, b) -> int:
    """The first index where two read-back vectors differ (NaN equals NaN)."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return int(np.flatnonzero(~((a == b) | (np.isnan(a) & np.isnan(b))))[0])


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
        raise Wrong(f"vertex {int(stray[0])} was written but is not in the list "
                    f"({stray.size:,} such vertices)",
                    "a thread works on the wrong vertex: the i-th group of lanes handles vertices[i], not i")
    unwritten = np.flatnonzero(listed & np.isnan(got))
    if unwritten.size:
        raise Wrong(f"vertex {int(unwritten[0])} never written "
                    f"({unwritten.size:,} of {int(listed.sum()):,})",
                    NEVER_WRITTEN + unwritten_hint)
    if not got[listed].any() and dc.expected[listed].any():
        raise Wrong(f"every element is 0; vertex {int(np.argmax(dc.expected))} should be "
                    f"{dc.expected.max():.9g}",
                    "nothing was added: every in-link's share must reach its target")
    if again_full is not None and not same_bits(got_full, again_full):
        v = first_difference(got_full, again_full)
        raise Wrong(f"vertex {v}: {got_full[v]:.9g} in one launch, {again_full[v]:.9g} in the next (with "
                    "these inputs every correct order of additions gives the same bits)", RACE)
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
    if dmin > 2**15 and not bad[degree <= 2**15].any():         # before the lanes: the likelier cause here
        raise Wrong(where, "only the vertex with more than 2**15 in-links is wrong: a count or index held "
                           "in a 16-bit type (short) overflows there; use int"
                    + (" (where another graph's report names the lanes' partial sums, look there first)"
                       if lanes else ""))
    if lanes and dmin > 1 and not bad[listed & (degree < dmin)].any():
        raise Wrong(where, lanes_cause(int(degree[listed & (degree < dmin)].max(initial=0)), dmin))
    raise Wrong(where, hint or "the sum over in-links is wrong")


# --- the probed launch -------------------------------------------------------------------------------

def probe_buffer(device: Device, size: int, fill: float):
    """An output of ``size`` elements followed by the probe's lowest- and highest-writer arrays."""
    words = np.zeros(3 * SPAN, dtype=np.uint32)
    words[:size] = np.full(size, fill, dtype=np.float32).view(np.uint32)
    words[SPAN:2 * SPAN] = UNSET
    return device.put(words.view(np.float32))


def writers(host: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(values, lowest writer, highest writer) of a probe buffer read back."""
    words = np.asarray(host, dtype=np.float32).view(np.uint32)
    return (np.asarray(host[:size], dtype=np.float64), words[SPAN:SPAN + size].astype(np.int64),
            words[2 * SPAN:2 * SPAN + size].astype(np.int64))


def shared_changed(values, plain, name: str) -> None:
    """Raise Wrong when the probed launch (shared memory filled with NaN) gave other values."""
    if not same_bits(values, plain):
        i = first_difference(values, plain)
        raise Wrong(f"{name}[{i}] = {plain[i]:.9g} in a normal launch, {values[i]:.9g} with shared memory "
                    "filled with NaN before the launch", SHARED_UNSET)


def several(lowest, highest, indices, template: str, what: str) -> None:
    """Raise when an element among ``indices`` was stored by more than one thread."""
    lo, hi = lowest[indices], highest[indices]
    found = (lo != UNSET) & (lo != hi)
    if found.any():
        k = int(np.flatnonzero(found)[0])
        raise Wrong(f"{what}[{int(indices[k])}] was stored by more than one thread",
                    template.format(what=f"{what}[{int(indices[k])}]", a=int(lo[k]), b=int(hi[k]),
                                    count=int(found.sum())))
