"""Timing tables: each variant on one graph, checked against the float64 reference and timed (one launch, the
kernel and the whole iteration back to back, whole-iteration variants also as CUDA graphs)."""
from __future__ import annotations

import warnings
from types import SimpleNamespace

import numpy as np
import pandas as pd

from helpers.core.reference import DAMPING, iterate, l1_distance, max_abs_diff, pagerank
from helpers.driver.baselines import PreparedSpMV, torch_spmv
from helpers.driver.device import DeviceGraph, as_device_graph
from helpers.driver.floors import BYTES_MODEL, bytes_per_iteration
from helpers.driver.iteration import (NotConvergedWarning, graph_iteration_ms, make_iteration, replayed,
                                      time_iterations)
from helpers.driver.solve import pagerank_gpu
from helpers.driver.variants import variant
from helpers.measure.gpu import Timing, device_facts, ensure_fits, require_gpu, time_gpu

WHOLE = ("fused", "blocked")      # the course's whole-iteration variants, replayed as CUDA graphs
LIBRARY_REPLAYED = 10             # iterations per captured graph in the head-to-head with the libraries


def graph_label(graph) -> str:
    """The graph's name, with its sizes unless the name already says them."""
    sizes = f"{graph.num_vertices:,} vertices, {graph.num_edges:,} edges"
    return graph.name if f"{graph.num_vertices:,} vertices" in graph.name else f"{graph.name} ({sizes})"


def float64_reference(dg: DeviceGraph, tol: float = 1e-10, max_iter: int = 1000) -> np.ndarray:
    """The float64 reference ranks: on the CPU from the host graph if there is one, else the same float64
    step on the GPU (for graphs built there, too big for the CPU)."""
    if dg.graph is not None:
        return pagerank(dg.graph, tol=tol, max_iter=max_iter).ranks
    cp = require_gpu()
    n = dg.num_vertices
    ensure_fits(8 * dg.num_edges + 40 * n, f"the float64 reference for {dg.name}")
    device = SimpleNamespace(num_vertices=n, out_degree=dg.out_degree.astype(cp.float64),
                             dangling=dg.out_degree == 0, in_matrix=dg.in_matrix_of(cp.float64), name=dg.name)
    ranks, _ = iterate(device, cp.full(n, 1.0 / n), cp.full(n, 1.0 / n), DAMPING, tol, max_iter)
    return ranks.get()


def timed_row(dg: DeviceGraph, name: str, *, launches: int, trials: int) -> dict:
    """Timings of one launch, and of the kernel and the whole iteration back to back (interleaved)."""
    step = make_iteration(dg, name)
    return {"launch": time_gpu(step.launch_kernel, repeat=launches),
            **time_iterations({"kernel": step.launch_kernel, "iteration": step}, iterations=1, trials=trials,
                              launches=launches)}


def compare(graph, names, *, tol: float = 1e-6, launches: int = 20, trials: int = 7, reference=None,
            floor=None, graph_replay: bool = True):
    """A DataFrame, a row per variant (and per CUDA-graph replay): its ``timed_row``, iterations to ``tol``,
    distance to the float64 reference, GB/s by the byte model, and the multiple of ``floor`` if given."""
    dg = as_device_graph(graph)
    reference = reference if reference is not None else float64_reference(dg)
    reference = getattr(reference, "ranks", reference)
    rows, model = [], bytes_per_iteration(dg.num_vertices, dg.num_edges)
    for name in names:
        timed = timed_row(dg, name, launches=launches, trials=trials)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", NotConvergedWarning)
            result = pagerank_gpu(dg, name, tol=tol)
        whole = [(result.variant, timed)]
        if graph_replay and variant(name).iteration is not None:
            whole.append((f"{result.variant}, CUDA graph",
                          {"iteration": graph_iteration_ms(dg, result.variant, trials=trials)}))
        for label, times in whole:
            row = {"variant": label, **{k: times.get(k) for k in ("launch", "kernel", "iteration")},
                   "iterations": result.iterations, "converged": result.converged,
                   "max_abs_diff": max_abs_diff(result.ranks, reference),
                   "l1_distance": l1_distance(result.ranks, reference),
                   "model_GBps": Timing.of(model / (times["iteration"].samples_ms * 1e-3) / 1e9)}
            if floor is not None:
                row["x_gather_floor"] = times["iteration"].scaled(1 / floor.median_ms)
            rows.append(row)
    table = pd.DataFrame(rows)
    table.attrs.update(
        gpu=device_facts().name, graph=graph_label(dg),
        stop=f"L1 change < {tol:g} (float32 on the GPU) against the float64 reference (L1 < 1e-10)",
        timing=f"CUDA events; median and range of {trials} trials of {launches} back-to-back launches "
               f"('launch': {launches} single launches); model_GBps counts {BYTES_MODEL} per iteration",
        floor=None if floor is None else f"random-gather floor {floor} (x_gather_floor = iteration / floor)")
    return table


def libraries(dg, x, y) -> dict:
    """The libraries' SpMV alone, as a careful user calls it: cuSPARSE prepared once, PyTorch's CSR mv."""
    runs = {"cuSPARSE SpMV (prepared)": PreparedSpMV(dg, x, y)}
    run, what = torch_spmv(dg, x)
    if run is not None:
        runs["torch CSR mv"] = run
    else:
        print(f"  PyTorch baseline skipped: {what}")
    return runs


def head_to_head(dg, args, floor, cp, names=WHOLE) -> dict:
    """The course's whole iterations (CUDA graphs) and the libraries' SpMV, interleaved trial by trial."""
    x = cp.full(dg.num_vertices, 1.0 / dg.num_vertices, dtype=cp.float32)
    y = cp.empty_like(x)
    runs = {name: replayed(make_iteration(dg, name), LIBRARY_REPLAYED) for name in names}
    runs |= libraries(dg, x, y)                           # each called LIBRARY_REPLAYED times per trial
    timings = time_iterations(runs, iterations=LIBRARY_REPLAYED, trials=args.trials,
                              launches=max(1, args.launches // LIBRARY_REPLAYED))
    best = min(names, key=lambda n: timings[n].median_ms)
    rows = [{"what": name, "ms": t, "x_gather_floor": t.median_ms / floor.gather.median_ms}
            for name, t in timings.items()]
    return {"timings": timings, "best": best, "rows": rows}
