"""The headless benchmark: every kernel on one graph, verified and timed, with the course's targets.

    python -m helpers.bench                       # web-Google if cached or downloadable, else the stand-in
    python -m helpers.bench --vertices 4847571 --edges 68993773    # a generated graph of that size

Writes a table to the terminal and bench.csv, bench.json and bench.png to --out. Without a GPU it says so
and runs the CPU part (the float64 reference and the CPU baselines).
"""
from __future__ import annotations

import argparse
import csv
import json
import platform
import sys
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np

from . import datasets, gpu
from .generators import rmat_graph
from .reference import DAMPING, l1_distance, pagerank, pagerank_step, teleport_vector

TOL = 1e-6


def numpy_step(graph, ranks, d=DAMPING):
    """The vectorised CPU baseline: gather per edge, scatter-add per target with bincount."""
    contrib = np.divide(ranks, graph.out_degree, out=np.zeros_like(ranks), where=graph.out_degree > 0)
    targets = np.repeat(np.arange(graph.num_vertices), graph.in_degree)
    pulled = np.bincount(targets, weights=contrib[graph.in_sources], minlength=graph.num_vertices)
    return d * pulled + (d * ranks[graph.dangling].sum() + 1 - d) / graph.num_vertices


def python_step(graph, ranks, d=DAMPING):
    """The pure-Python baseline: one interpreted addition per in-link."""
    offsets, sources, degree = graph.in_offsets.tolist(), graph.in_sources.tolist(), graph.out_degree.tolist()
    r = ranks.tolist()
    contrib = [r[u] / degree[u] if degree[u] else 0.0 for u in range(len(r))]
    base = (d * sum(r[u] for u in range(len(r)) if degree[u] == 0) + 1 - d) / len(r)
    return [d * sum(contrib[sources[k]] for k in range(offsets[v], offsets[v + 1])) + base for v in range(len(r))]


PYTHON_MAX_EDGES = 6_000_000   # beyond this one pure-Python iteration takes too long to be worth timing


def cpu_ms(step, repeat=3) -> float:
    times = []
    for _ in range(repeat + 1):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return 1e3 * float(np.median(times[1:]))


def header() -> list[str]:
    status = gpu.gpu_status()
    lines = [f"Python {platform.python_version()}, NumPy {np.__version__}, {platform.processor() or platform.machine()}"]
    if status.available:
        import cupy as cp
        lines.append(f"GPU: {status.description}; driver {cp.cuda.runtime.driverGetVersion()}, CUDA runtime "
                     f"{cp.cuda.runtime.runtimeGetVersion()}, CuPy {cp.__version__}")
    else:
        lines.append(f"GPU: {status.description}")
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m helpers.bench", description=__doc__.splitlines()[0])
    parser.add_argument("--vertices", type=int, help="generate an R-MAT graph with this many vertices")
    parser.add_argument("--edges", type=int, help="... and this many edges")
    parser.add_argument("--variants", nargs="*", help="kernel variants (default: all, plus fused)")
    parser.add_argument("--out", type=Path, default=Path("bench-results"))
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args(argv)
    lines = header()
    print("\n".join(lines), flush=True)

    if args.vertices:
        graph = rmat_graph(args.vertices, args.edges or 6 * args.vertices, seed=0)
    else:
        graph = datasets.load_or_standin("web-Google")
    print(f"graph: {graph}", flush=True)
    start = time.perf_counter()
    reference = pagerank(graph, tol=1e-10)
    print(f"float64 reference: {reference.iterations} iterations to L1 < 1e-10 in "
          f"{time.perf_counter() - start:.1f} s", flush=True)
    ranks = reference.ranks
    cpu = {"numpy": cpu_ms(lambda: numpy_step(graph, ranks)),
           "scipy": cpu_ms(lambda: pagerank_step(graph, ranks, DAMPING, teleport_vector(graph.num_vertices)))}
    if graph.num_edges <= PYTHON_MAX_EDGES:
        cpu["python"] = cpu_ms(lambda: python_step(graph, ranks), repeat=1)
    print("CPU baselines, ms per iteration: " + ", ".join(f"{k} {v:,.1f}" for k, v in cpu.items()) +
          ("" if "python" in cpu else f" (pure Python not timed above {PYTHON_MAX_EDGES:,} edges)"))
    result = {"header": lines, "graph": graph.name, "vertices": graph.num_vertices, "edges": graph.num_edges,
              "tol": TOL, "norm": "L1", "cpu_ms_per_iteration": cpu, "rows": []}
    args.out.mkdir(parents=True, exist_ok=True)
    if not gpu.has_gpu():
        print("no GPU: the GPU part is skipped (CPU part above).")
        (args.out / "bench.json").write_text(json.dumps(result, indent=1))
        return 0
    return gpu_part(graph, reference, cpu, result, args)


def gpu_part(graph, reference, cpu, result, args) -> int:
    import cupy as cp
    import cupyx.scipy.sparse as sparse
    from tqdm import tqdm

    from . import pagerank_gpu as pg

    copy_gbs = gpu.measure_copy_bandwidth()
    dg = pg.DeviceGraph(graph)
    n = graph.num_vertices
    x = cp.asarray(reference.ranks.astype(np.float32))
    bare = gpu.time_gpu(lambda: dg.in_matrix @ x, repeat=args.repeat).median_ms
    # a PageRank written with cupyx.scipy.sparse alone, as one would without writing a kernel
    degree = dg.out_degree.astype(cp.float32)
    weights = 1.0 / degree[dg.in_sources]
    matrix = sparse.csr_matrix((weights, dg.in_sources, dg.in_offsets), shape=(n, n))
    dangling = cp.asarray(graph.dangling)

    def cupyx_iteration(rank=x, d=DAMPING):
        new = d * (matrix @ rank) + (d * rank[dangling].sum() + 1 - d) / n
        return cp.abs(new - rank).sum()

    cupyx_ms = gpu.time_gpu(cupyx_iteration, repeat=args.repeat).median_ms
    names = args.variants or pg.variants_for(n)
    rows = []
    for name in tqdm(names, desc="variants", file=sys.stderr):
        rows += pg.compare(dg, [name], tol=TOL, copy_gbs=copy_gbs, repeat=args.repeat, reference=reference)
    graph_ms = pg.graph_iteration_ms(dg) if "fused" in names else None
    accurate = pg.pagerank_gpu(dg, "fused", tol=1e-7, max_iter=500)

    facts = gpu.device_facts()
    print(f"\nGPU: {facts.name}; measured copy bandwidth {copy_gbs:.0f} GB/s")
    print(f"graph: {graph.name} ({n:,} vertices, {graph.num_edges:,} edges)")
    print(f"stop: L1 change < {TOL:g}; float32 ranks vs the float64 reference; GB/s by {pg.BYTES_MODEL}")
    print(f"cuSPARSE bare SpMV: {bare:.3f} ms; cupyx.scipy.sparse PageRank: {cupyx_ms:.3f} ms per iteration")
    print(f"{'variant':<19} {'kernel':>7} {'iter ms':>8} {'iters':>5} {'total':>7} {'GB/s':>6} {'%copy':>5} "
          f"{'xPython':>8} {'xNumPy':>7} {'xSciPy':>7} {'xcupyx':>6} {'/SpMV':>6} {'max|Δ|':>8} {'L1':>8}")
    table = []
    for r in rows:
        entry = {**asdict(r), "total_ms": r.iteration_ms * r.iterations,
                 "speedup_python": cpu["python"] / r.iteration_ms if "python" in cpu else None,
                 "speedup_numpy": cpu["numpy"] / r.iteration_ms,
                 "speedup_scipy": cpu["scipy"] / r.iteration_ms, "speedup_cupyx": cupyx_ms / r.iteration_ms,
                 "vs_bare_spmv": r.iteration_ms / bare}
        table.append(entry)
        print(f"{r.variant:<19} {r.spmv_ms:>7.3f} {r.iteration_ms:>8.3f} {r.iterations:>5} {entry['total_ms']:>7.2f} "
              f"{r.gbs:>6.0f} {r.percent_of_copy:>4.0f}% "
              f"{format(entry['speedup_python'], '>8,.0f') if entry['speedup_python'] else '-':>8} {entry['speedup_numpy']:>7.0f} {entry['speedup_scipy']:>7.0f} "
              f"{entry['speedup_cupyx']:>6.1f} {entry['vs_bare_spmv']:>6.2f} {r.max_abs_diff:>8.1e} {r.l1_distance:>8.1e}")
    if graph_ms is not None:
        print(f"fused, 20 iterations replayed as one CUDA graph: {graph_ms:.3f} ms per iteration")
    best = min([(r.iteration_ms, r.variant) for r in rows] + ([(graph_ms, "fused (CUDA graph)")] if graph_ms else []))
    print(f"\nbest whole iteration: {best[1]}, {best[0]:.3f} ms = {best[0] / bare:.2f}x cuSPARSE's bare SpMV "
          f"({bare:.3f} ms); cupyx.scipy.sparse loop / best = {cupyx_ms / best[0]:.1f}x")
    print(f"fused run to L1 < 1e-7: {accurate.iterations} iterations, L1 distance to the reference "
          f"{l1_distance(accurate.ranks, reference.ranks):.1e}, sum {accurate.ranks.astype(np.float64).sum():.7f}")
    result.update(gpu=facts.name, copy_gbs=copy_gbs, bare_spmv_ms=bare, cupyx_ms=cupyx_ms, graph_ms=graph_ms,
                  best={"variant": best[1], "ms": best[0]}, rows=table,
                  accuracy={"tol": 1e-7, "iterations": accurate.iterations,
                            "l1": l1_distance(accurate.ranks, reference.ranks),
                            "sum": float(accurate.ranks.astype(np.float64).sum())})
    (args.out / "bench.json").write_text(json.dumps(result, indent=1))
    with open(args.out / "bench.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(table[0]))
        writer.writeheader()
        writer.writerows(table)
    _plot(table, bare, cupyx_ms, graph.name, facts.name, args.out / "bench.png")
    print(f"wrote {args.out}/bench.csv, bench.json, bench.png")
    return 0


def _plot(table, bare, cupyx_ms, graph_name, gpu_name, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ordered = sorted(table, key=lambda r: r["iteration_ms"])
    fig, ax = plt.subplots(figsize=(7, 0.3 * len(ordered) + 1.5))
    ax.barh([r["variant"] for r in ordered], [r["iteration_ms"] for r in ordered])
    ax.axvline(bare, color="tab:orange", ls="--", label="cuSPARSE bare SpMV")
    ax.axvline(cupyx_ms, color="grey", ls=":", label="cupyx.scipy.sparse loop")
    ax.invert_yaxis(); ax.set_xscale("log"); ax.set_xlabel("ms per whole iteration (median, CUDA events)")
    ax.set_title(f"{graph_name}\n{gpu_name}", fontsize=8); ax.legend(fontsize=7)
    fig.tight_layout(); fig.savefig(path, dpi=120); plt.close(fig)


if __name__ == "__main__":
    raise SystemExit(main())
