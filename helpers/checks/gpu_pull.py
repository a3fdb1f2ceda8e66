"""The GPU checkers of the pull kernels: a grid-stride loop (10), one warp per vertex (13) and ``width``
lanes per listed vertex (14). Each is launched on fresh graphs in several configurations, its sums
compared bit for bit, and a probed launch shows which thread stored each vertex and which inputs were read
outside their length (see ``checks.gpu``).
"""
from __future__ import annotations

import numpy as np

from helpers.checks.device import (
    BLOCK, PAD, DeviceCase, Inputs, blocks, check_sums, gpu_graphs, several, shared_changed)
from helpers.checks.gpu import (
    KERNELS, checker, compiled, graph_case, launched, launches, own_context, probe_launch)
from helpers.checks.limits import GPU_TIME_LIMIT
from helpers.checks.probe import UNSET
from helpers.checks.report import Report, Wrong, fresh_seed

__all__ = ["check_pull_grid_stride", "check_pull_list", "check_pull_warp"]

REDUNDANT_STRIDE = ("a wrong grid stride: several threads compute the same vertex (vertex {v}: threads {a} "
                    "and {b}; {count:,} vertices so). The values come out right, so this is about "
                    "performance, not correctness: the kernel repeats work; step by the grid's thread "
                    "count, blockDim.x * gridDim.x, whatever the launch (a number that fits one launch "
                    "fits no other), so that each vertex is handled by exactly one thread")
NOT_GRID_STRIDE = ("not a grid-stride loop: vertex {v} was handled by thread {a}, but in a grid-stride "
                   "loop it belongs to thread {v} mod {threads} = {b}. The values are right (performance, "
                   "not correctness): consecutive threads must take consecutive vertices, v = global "
                   "index, then + blockDim.x * gridDim.x, so that a warp's loads are coalesced")
GRID_HINT = ("; in a grid-stride loop every vertex is reached whatever the launch (here {grid} blocks of "
             "{block} threads): start at the global index and step by blockDim.x * gridDim.x, not by a "
             "number that fits one launch")
SEVERAL_LANES = ("several lanes store {what} (threads {a} and {b}; {count:,} elements so): only the "
                 "group's first lane should store the group's total. Several lanes writing one element is "
                 "a race: after __shfl_down_sync only lane 0 holds the total, so another lane's partial "
                 "sum can win; with __shfl_xor_sync every lane holds it and the numbers come out right "
                 "today, but it is still a race and wasted stores")
LIST_OVERRUN = ("groups past the end of the list wrote results: the check i < count is missing or off by "
                "one (the checker follows the list with ids that are not vertices of the graph; "
                "pulled[{index}] was written)")
CONFIGS = (((3,), (128,)), ((5,), (64,)), ((2,), (256,)))     # exercise 10's grids, far smaller than a graph


@own_context
def check_pull_grid_stride(code: str, seed=None, quiet: bool = False,
                           time_limit: float = GPU_TIME_LIMIT) -> Report:
    """Exercise 10: pull_grid_stride(in_offsets, in_sources, out_degree, rank, pulled, n), launched with
    grids far smaller than the graph: 3 blocks of 128 threads, then 5 of 64 and 2 of 256. Every thread
    walks v = its index, + the grid's size, ... < n."""
    seed = fresh_seed(seed)
    rng, spec = np.random.default_rng(seed), KERNELS["check_pull_grid_stride"]

    def check(device, probe, graph):
        kernel, dc, ins, args = graph_case(device, code, spec, graph, rng)
        n = dc.n

        for grid, block in CONFIGS:
            threads = grid[0] * block[0]
            with launched(grid, block):
                out = launches(device, ins, kernel, grid, block, args, n + PAD)
                check_sums(dc, out[0], out[1], hint="each in-neighbour u adds rank[u] / out_degree[u]: the "
                                                    "out-degree of u, not of v",
                           unwritten_hint=GRID_HINT.format(grid=grid[0], block=block[0]))
                if probe is None:
                    continue
                values, lowest, highest = probe_launch(device, probe, ins, grid, block, args, [n + PAD])[0]
                shared_changed(values, out[0], "pulled")
                lo, hi = lowest[:n], highest[:n]
                found = (lo != UNSET) & (lo != hi)
                if found.any():
                    v = int(np.flatnonzero(found)[0])
                    raise Wrong(f"vertex {v} was computed by more than one thread",
                                REDUNDANT_STRIDE.format(v=v, a=int(lo[v]), b=int(hi[v]),
                                                        count=int(found.sum())))
                elsewhere = (lo != UNSET) & (lo != np.arange(n) % threads)
                if elsewhere.any():
                    v = int(np.flatnonzero(elsewhere)[0])
                    raise Wrong(f"vertex {v} was computed by thread {int(lo[v])}",
                                NOT_GRID_STRIDE.format(v=v, a=int(lo[v]), threads=threads, b=v % threads))
        return None

    return checker("check_pull_grid_stride", code, seed, quiet, time_limit,
                   [(g.name, g) for g in gpu_graphs(rng)], check)


def lanes_launches(device, probe, dc, ins, kernel, args, threads: int, vertices=None, **sums) -> None:
    """Several lanes per vertex (13, 14): launched with just enough blocks for ``threads`` and with two
    more; the sums compared (``check_sums(..., lanes=True, **sums)``), and with the probe, shared memory
    and the one lane that stores each vertex (of ``vertices``, or of all)."""
    n = dc.n
    need = blocks(threads)[0]
    for grid in ((need,), (need + 2,)):
        with launched(grid, (BLOCK,)):
            out = launches(device, ins, kernel, grid, (BLOCK,), args, n + PAD)
            check_sums(dc, out[0], out[1], vertices=vertices, lanes=True, **sums)
            if probe is not None:
                values, lowest, highest = probe_launch(device, probe, ins, grid, (BLOCK,), args, [n + PAD])[0]
                shared_changed(values, out[0], "pulled")
                stored = np.arange(n) if vertices is None else np.sort(vertices)
                several(lowest, highest, stored, SEVERAL_LANES, "pulled")


@own_context
def check_pull_warp(code: str, seed=None, quiet: bool = False, time_limit: float = GPU_TIME_LIMIT) -> Report:
    """Exercise 13: pull_warp(in_offsets, in_sources, out_degree, rank, pulled, n), one warp (32
    threads) per vertex, 256 threads per block, launched with just enough blocks and with two more; lane l
    takes in-links l, l + 32, ...; only lane 0 of each warp stores."""
    seed = fresh_seed(seed)
    rng, spec = np.random.default_rng(seed), KERNELS["check_pull_warp"]

    def check(device, probe, graph):
        kernel, dc, ins, args = graph_case(device, code, spec, graph, rng)
        lanes_launches(device, probe, dc, ins, kernel, args, 32 * dc.n,
                       hint="a wrong term: each in-neighbour u = in_sources[k] adds rank[u] / "
                            "out_degree[u], each in-link read by one lane, and lane 0 stores the total")
        return None

    return checker("check_pull_warp", code, seed, quiet, time_limit, [(g.name, g) for g in gpu_graphs(rng)],
                   check)


@own_context
def check_pull_list(code: str, seed=None, quiet: bool = False, time_limit: float = GPU_TIME_LIMIT) -> Report:
    """Exercise 14: pull_list(vertices, count, in_offsets, in_sources, contrib, pulled, width): ``width``
    lanes (2 to 32) per listed vertex, 256 threads per block, launched with just enough blocks and with two
    more; vertices not in the list are left alone. The list is followed by ids past the graph, so a group
    past the end of the list writes past n."""
    seed = fresh_seed(seed)
    rng, spec = np.random.default_rng(seed), KERNELS["check_pull_list"]
    graphs = gpu_graphs(rng)

    def check(device, probe, case):
        graph, width = case
        kernel, dc = compiled(device, code, spec), DeviceCase(graph, rng)
        n = dc.n
        chosen = rng.random(n) < 0.6
        chosen[int(np.argmax(graph.in_degree))] = True              # always the hub
        vertices = rng.permutation(np.flatnonzero(chosen)).astype(np.int32)
        listed = np.concatenate([vertices, n + np.arange(PAD)]).astype(np.int32)
        ins = Inputs(device, {"vertices": (listed, vertices.size)} | {name: (dc.host[name], dc.length[name])
                                                                      for name in spec.inputs[1:]})

        def args(arrays, out):
            return (arrays["vertices"], np.int32(vertices.size), arrays["in_offsets"], arrays["in_sources"],
                    arrays["contrib"], out, np.int32(width))

        lanes_launches(device, probe, dc, ins, kernel, args, width * vertices.size, vertices=vertices,
                       canary=LIST_OVERRUN,
                       hint="each group must add only its own lanes' partial sums: shuffle with "
                            "offsets from width / 2 down to 1 and pass width, so that no group reads a "
                            "neighbouring group's lanes",
                       unwritten_hint="; here the first lane of every group (lane = threadIdx.x % "
                                      "width is 0) stores pulled[vertices[i]]")
        return None

    cases = [(f"{g.name}, width {w}", (g, w)) for g in graphs for w in (2, 4, 8, 16, 32)]
    return checker("check_pull_list", code, seed, quiet, time_limit, cases, check)
