"""The headless benchmark: the course's iterations against measured floors and fair baselines on web-Google
and generated graphs of both memory regimes, each verified and timed (docs/bench.md says what it prints)."""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from helpers.bench.bench_gpu import gpu_part
from helpers.core import graph as graphs
from helpers.core.cli import HelpFormatter, choices_error
from helpers.core.generators import rmat_graph
from helpers.core.reference import DAMPING, pagerank, pagerank_step, teleport_vector
from helpers.data import datasets
from helpers.driver import VARIANTS, baselines
from helpers.measure import gpu
from helpers.measure.cpu import cpu_description, cpu_ms, header

TOL = 1e-6
DEFAULT_OUT = Path("bench-results")
PYTHON_MAX_EDGES = 6_000_000     # beyond this one pure-Python iteration takes too long to be worth timing
BUILD_BYTES_PER_EDGE = 80        # host bytes per edge to build a Graph on the CPU (measured 60-80)


def parse(argv=None):
    parser = argparse.ArgumentParser(prog="python -m helpers.bench", description=__doc__,
                                     formatter_class=HelpFormatter)
    parser.add_argument("--vertices", type=int,
                        help="instead of web-Google, generate an R-MAT graph with this many vertices "
                             "(needs --edges)")
    parser.add_argument("--edges", type=int, help="the generated graph's edge count (needs --vertices)")
    parser.add_argument("--generated", choices=["auto", "off"], default="auto",
                        help="also measure the generated graphs of both memory regimes")
    parser.add_argument("--variants", nargs="+", metavar="NAME",
                        help="variants to run on the web-sized graph (default: every one that fits, "
                             "the 16-bit ones only when named)")
    parser.add_argument("--launches", type=int, default=20, help="launches per timing trial")
    parser.add_argument("--trials", type=int, default=9, help="timing trials per measurement")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="folder for the CSV and JSON files")
    args = parser.parse_args(argv)
    if (args.vertices is None) != (args.edges is None):
        parser.error("--vertices and --edges go together: give both, or neither")
    if args.vertices is not None and (args.vertices < 2 or args.edges < 1):
        parser.error("--vertices must be at least 2 and --edges at least 1")
    unknown = [name for name in args.variants or [] if name not in VARIANTS]
    if unknown:
        parser.error(choices_error("variant", unknown, VARIANTS))
    if args.launches < 1 or args.trials < 3:
        parser.error("--launches must be at least 1 and --trials at least 3 (the verdicts need them)")
    return args


def cpu_part(graph) -> dict:
    """CPU baselines on the host graph: ms per iteration as Timings."""
    ranks = np.full(graph.num_vertices, 1.0 / graph.num_vertices)
    teleport = teleport_vector(graph.num_vertices)
    out = {"SciPy CSR, one core": cpu_ms(lambda: pagerank_step(graph, ranks, DAMPING, teleport)),
           "NumPy, one core": cpu_ms(lambda: baselines.numpy_step(graph, ranks))}
    run, what = baselines.numba_parallel(graph)
    if run is not None:
        out[what] = cpu_ms(run, repeat=5)
    else:
        print(f"  multi-core CPU baseline skipped: {what}")
    if graph.num_edges <= PYTHON_MAX_EDGES:
        out["pure Python (lecture 03's lesson)"] = cpu_ms(lambda: baselines.python_step(graph, ranks),
                                                          repeat=1, warmup=0)
    return out


def main(argv=None) -> int:
    args = parse(argv)
    lines = header(torch=True)
    print("\n".join(lines), flush=True)
    print(f"writing results to {args.out}/ (change with --out)", flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.vertices:                  # refused before building where the CPU's build would not fit
        graphs.check_host_memory(BUILD_BYTES_PER_EDGE * args.edges,
                                 f"building an R-MAT graph of {args.edges:,} edges on the CPU",
                                 f"{BUILD_BYTES_PER_EDGE} bytes per edge", "give fewer --edges")
        graph = rmat_graph(args.vertices, args.edges, seed=0, progress=True)
    else:
        graph = datasets.load_or_standin("web-Google")
    print(f"graph: {graph}", flush=True)
    start = time.perf_counter()
    reference = pagerank(graph, tol=1e-10, progress=True)
    print(f"float64 reference: {reference.iterations} iterations to L1 < 1e-10 in "
          f"{time.perf_counter() - start:.1f} s", flush=True)
    cpu = cpu_part(graph)
    print(f"CPU ({cpu_description()}), ms per iteration: " + "; ".join(f"{k} {v}" for k, v in cpu.items()))
    result = {"header": lines, "tol": TOL, "norm": "L1", "cpu": {"description": cpu_description(),
              "ms_per_iteration": {k: v.median_ms for k, v in cpu.items()}}, "graphs": {}}
    if not gpu.has_gpu():
        print("no GPU: the GPU part is skipped (CPU part above).")
        (args.out / "bench.json").write_text(json.dumps(result, indent=1), encoding="utf-8")
        return 0
    return gpu_part(graph, reference, cpu, result, args)

