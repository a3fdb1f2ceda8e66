"""Every variant against the float64 reference on fresh adversarial graphs: one launch and one iteration with
every output poisoned (NaN) first, whole runs to L1 < 1e-6, their sums, and the fixed-point check."""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from helpers.core.arguments import check_seed, fresh_seed
from helpers.core.graph import Graph
from helpers.core.reference import (DAMPING, l1_distance, pagerank, pagerank_step, teleport_vector,
                                    verify_fixed_point)
from helpers.core.suites import verification_graphs
from helpers.driver.device import DeviceGraph
from helpers.driver.iteration import NotConvergedWarning, make_iteration
from helpers.driver.solve import pagerank_gpu
from helpers.driver.variants import variant
from helpers.measure.gpu import require_gpu

LONG_LIST = 200   # beyond this many in-links a plain float32 sum can stall the iteration above L1 1e-6


class VerificationError(AssertionError):
    """A kernel gave ranks that the float64 reference does not accept."""


def _host_graph(dg: DeviceGraph) -> Graph:
    if dg.graph is None:
        raise ValueError(f"{dg.name} has no host graph to check against; build the DeviceGraph from a Graph")
    return dg.graph


def _finite(values: np.ndarray, what: str):
    values = values.astype(np.float64)
    if not np.isfinite(values).all():
        bad = int(np.flatnonzero(~np.isfinite(values))[0])
        raise VerificationError(f"{what} of vertex {bad} is {values[bad]} (never written, or a division "
                                "by 0)")
    return values


def spmv_error(dg: DeviceGraph, name, seed: int = 0) -> float:
    """Largest relative error of one launch of a variant's sum over in-links against float64, from a random
    vector, with the output poisoned (NaN) first."""
    seed, cp = check_seed(seed), require_gpu()
    v, graph = variant(name), _host_graph(dg)
    x = np.random.default_rng(seed).random(graph.num_vertices).astype(np.float32)
    divided = np.divide(x.astype(np.float64), graph.out_degree, out=np.zeros(graph.num_vertices),
                        where=graph.out_degree > 0)
    expected = graph.in_matrix @ (divided if v.reads == "ranks" else x.astype(np.float64))
    y = cp.full(graph.num_vertices, cp.nan, dtype=cp.float32)
    v(dg, cp.asarray(x), y)
    got = _finite(y.get(), f"{v.name}: the sum")
    return float(np.max(np.abs(got - expected) / np.maximum(np.abs(expected), 1e-30)))


def step_error(dg: DeviceGraph, name, seed: int = 0, **settings) -> float:
    """Largest relative error of ONE whole iteration of a variant against the float64 step, from random ranks,
    with its outputs poisoned (NaN) first; ``settings`` go to its iteration class."""
    seed, cp = check_seed(seed), require_gpu()
    graph = _host_graph(dg)
    n = graph.num_vertices
    ranks = np.random.default_rng(seed).random(n) + 0.05
    ranks = (ranks / ranks.sum()).astype(np.float32)
    expected = pagerank_step(graph, ranks.astype(np.float64), DAMPING, teleport_vector(n))
    step = make_iteration(dg, name, **settings)
    step.set_ranks(cp.asarray(ranks))
    step.run()
    got = _finite(step.rank.get(), f"{step.variant.name}: after one iteration, the rank")
    return float(np.max(np.abs(got - expected) / expected))


def _check(graph: Graph, v, seed: int) -> dict:
    """One graph's row of the verification table, with the problems found (empty: right)."""
    eps = v.precision
    coarse = max(1e-4, 16 * eps)           # what float32 reaches on long lists, or 16-bit storage anywhere
    exact = eps <= 2.0**-24 and int(graph.in_degree.max()) <= LONG_LIST
    row = {"graph": graph.name, "vertices": graph.num_vertices, "edges": graph.num_edges,
           "max in-degree": int(graph.in_degree.max())}
    problems = []
    try:
        dg = DeviceGraph(graph, variant=v.name)
        if v.spmv is not None:
            row["kernel rel. error"] = spmv_error(dg, v, seed=seed)
            if not row["kernel rel. error"] < coarse:
                problems.append(f"one launch is {row['kernel rel. error']:.2g} (relative) from float64")
        row["step rel. error"] = step_error(dg, v, seed=seed)
        if not row["step rel. error"] < coarse:
            problems.append(f"one iteration is {row['step rel. error']:.2g} (relative) from float64")
        reference = pagerank(graph, tol=1e-10)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", NotConvergedWarning)
            result = pagerank_gpu(dg, v, tol=1e-6, max_iter=300)
        row.update(iterations=result.iterations, converged=result.converged,   # False: stopped at the cap
                   **{"L1 to reference": l1_distance(result.ranks, reference.ranks),
                      "sum": float(result.ranks.astype(np.float64).sum())})
        # a float32 sum over a 12,000-in-link list drifts the total by up to ~2e-5: long lists and 16-bit
        # storage get the coarse bounds; exact cases keep 1e-5
        bound, residual_bound = (2e-5, 5e-6) if exact else (coarse, coarse)
        check = verify_fixed_point(graph, result.ranks, tol=residual_bound, sum_tol=1e-5 if exact else coarse)
        row["one more float64 iteration moves"] = check.residual
        if exact and not result.converged:
            problems.append(f"no L1 change below 1e-6 in 300 iterations (last {result.residuals[-1]:.2g})")
        if not row["L1 to reference"] < bound:
            problems.append(f"L1 distance {row['L1 to reference']:.2g} to the reference (bound {bound:g})")
        if not check.ok:
            problems.append(check.message)
    except VerificationError as error:
        problems.append(str(error))
    row["ok"], row["problem"] = not problems, "; ".join(problems)
    return row


def verify(name_or_variant, *, seed: int | None = None, graphs=None, quiet: bool = False):
    """Check a variant against the float64 reference on fresh adversarial graphs: the table of cases, or a
    VerificationError naming the failing ones."""
    seed, v = fresh_seed(seed), variant(name_or_variant)
    table = pd.DataFrame([_check(g, v, seed) for g in graphs or verification_graphs(seed)
                          if not v.max_vertices or g.num_vertices <= v.max_vertices])
    table.attrs.update(note=f"{v.name} against the float64 reference, seed {seed} "
                            f"(pass seed={seed} to repeat)")
    bad = table[~table["ok"]]
    if len(bad):
        lines = "\n".join(f"  {r['graph']}: {r['problem']}" for _, r in bad.iterrows())
        raise VerificationError(f"{v.name} is wrong on {len(bad)} of {len(table)} graphs "
                                f"(seed {seed}):\n{lines}")
    if not quiet:
        print(f"{v.name}: right on all {len(table)} graphs (seed {seed}): one launch and one iteration "
              "against float64 (outputs poisoned with NaN), whole runs against the reference and the "
              "fixed-point check")
    return table
