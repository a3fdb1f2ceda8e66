"""``python -m helpers.multigpu bench`` (one GPU against several on a generated graph) and ``check`` (what is
installed)."""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from helpers.core.cli import HelpFormatter
from helpers.driver.device_generators import rmat_device
from helpers.measure import gpu
from helpers.measure.cpu import header
from helpers.multigpu import (PULL_VARIANTS, float64_residual, host_graph, local_cluster, pagerank_multi,
                              versions)

BENCH = ("Partitioned PageRank on 1 and on N GPUs (NCCL exchange, and the Dask exchange for contrast): "
         "verified, timed, written as CSV/JSON.")
CHECK = "Print what is installed for the multi-GPU lecture: Dask, dask-cuda, NCCL, the GPUs."


def parser() -> argparse.ArgumentParser:
    """``python -m helpers.multigpu {bench,check}``, each with its --help."""
    top = argparse.ArgumentParser(prog="python -m helpers.multigpu", formatter_class=HelpFormatter,
                                  description="PageRank on the GPUs of one host (lecture 50).")
    commands = top.add_subparsers(dest="command", required=True, metavar="{bench,check}")
    add = commands.add_parser("bench", help=BENCH, description=BENCH,
                              formatter_class=HelpFormatter).add_argument
    add("--vertices", type=int, default=2**25, help="vertices of the R-MAT graph generated on the GPU")
    add("--edges", type=int, default=300_000_000, help="its edges")
    add("--seed", type=int, default=0, help="the generator's seed")
    add("--workers", type=int, default=2, help="GPUs of the multi-GPU runs")
    add("--variant", default="pull_hybrid", choices=PULL_VARIANTS,
        help="the course's pull kernel each worker runs on its rows")
    add("--tol", type=float, default=1e-6, help="stop when the L1 change is below this")
    add("--max-iter", type=int, default=100, help="at most this many iterations")
    add("--dask-iterations", type=int, default=10,
        help="iterations of the Dask-exchange contrast run (0: skip it)")
    add("--out", type=Path, default=Path("bench-results") / "multigpu",
        help="folder for multigpu.csv and multigpu.json")
    commands.add_parser("check", help=CHECK, description=CHECK, formatter_class=HelpFormatter)
    return top


def bench(args: argparse.Namespace) -> int:
    """One GPU against several on an R-MAT graph generated on the GPU (``args``: bench's options)."""
    clock = time.perf_counter()

    def say(message):
        print(f"[{time.perf_counter() - clock:7.1f} s] {message}", flush=True)

    lines = header(device_count=True) + versions()
    print("\n".join(lines), flush=True)
    gpus = gpu.require_gpu().cuda.runtime.getDeviceCount()
    if gpus < args.workers:
        print(f"this machine has {gpus} GPU(s); --workers {args.workers} needs as many", file=sys.stderr)
        return 2
    say(f"generating R-MAT({args.vertices:,} vertices, {args.edges:,} edges, seed {args.seed}) on the GPU")
    device_graph = rmat_device(args.vertices, args.edges, seed=args.seed)
    hg = host_graph(device_graph)
    say(f"generated {hg.name}; its in-CSR is on the host")
    common = dict(variant=args.variant, backend="gpu")
    results = []
    for workers in (1, args.workers):
        say(f"starting {workers} GPU worker(s) (dask-cuda)")
        with local_cluster(workers, "gpu") as client:
            results.append(pagerank_multi(hg, client=client, exchange="nccl", tol=args.tol,
                                          max_iter=args.max_iter, **common))
            say(f"{workers} GPU(s), {results[-1].exchange} exchange: {results[-1].iterations} iterations, "
                f"{np.median(results[-1].iteration_ms):.2f} ms per iteration")
            if workers > 1 and args.dask_iterations > 0:      # timing only: the same algorithm
                results.append(pagerank_multi(hg, client=client, exchange="dask", tol=1e-30,
                                              max_iter=args.dask_iterations, **common))
                say(f"Dask exchange: {np.median(results[-1].iteration_ms):.2f} ms per iteration")
    say("checking with one float64 iteration on the GPU")
    checks = [float64_residual(device_graph, r.ranks) for r in results[:2]]
    ok = _report(args, lines, hg, results, checks)
    say(f"wrote {args.out / 'multigpu.csv'} and {args.out / 'multigpu.json'}")
    return 0 if ok else 1


def _report(args, lines, hg, results, checks) -> bool:
    """Print the table and the verdict, write multigpu.csv and multigpu.json; whether N GPUs agree with 1."""
    one, many = results[:2]
    difference = np.abs(many.ranks.astype(np.float64) - one.ranks)
    l1, max_diff = float(difference.sum()), float(difference.max())
    ok = (abs(many.iterations - one.iterations) <= 1 and l1 < 1e-5
          and checks[1] <= max(2 * checks[0], 10 * args.tol))
    distances = [0.0, l1, float("nan")]          # the third run is the timing-only Dask one
    rows = [dict(r.summary(), **{
        "speedup vs 1 GPU": float(np.median(one.iteration_ms) / np.median(r.iteration_ms)),
        "float64 check (L1 change)": (checks + [float("nan")])[i], "L1 to 1-GPU ranks": distances[i],
        "fallback": r.fallback or ""}) for i, r in enumerate(results)]
    table = pd.DataFrame(rows)
    with pd.option_context("display.width", 200, "display.max_columns", 30):
        print(table.drop(columns=["graph", "backend", "variant", "tol"]).to_string(index=False))
    print(f"graph: {hg.name}; variant {args.variant}; stop: L1 change < {args.tol:g} (max {args.max_iter})")
    print(f"{args.workers} GPUs against 1: {many.iterations} against {one.iterations} iterations, L1 "
          f"distance {l1:.2e}, largest difference {max_diff:.2e}; one float64 step moves the ranks by "
          f"{checks[1]:.2e} ({args.workers} GPUs) and {checks[0]:.2e} (1 GPU): {'OK' if ok else 'FAILED'}")
    args.out.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.out / "multigpu.csv", index=False)
    partitions = {str(r.workers): r.partitions.reset_index().to_dict(orient="list") for r in results[:2]}
    per_iteration = [{"workers": r.workers, "exchange": r.exchange, "iteration": r.iteration_ms.tolist(),
                      "compute": r.compute_ms.tolist(), "exchange_ms": r.exchange_ms.tolist()}
                     for r in results]
    (args.out / "multigpu.json").write_text(json.dumps({
        "header": lines, "graph": hg.name, "vertices": hg.num_vertices, "edges": hg.num_edges,
        "tol": args.tol, "norm": "L1", "verified": ok, "l1_distance_to_1_gpu": l1,
        "max_abs_diff_to_1_gpu": max_diff, "rows": rows, "partitions": partitions,
        "per_iteration_ms": per_iteration}, indent=1, default=float), encoding="utf-8")
    return ok


def main(argv=None) -> int:
    args = parser().parse_args(sys.argv[1:] if argv is None else argv)
    if args.command == "check":
        print("\n".join(versions()))
        return 0
    try:
        return bench(args)
    except gpu.NoGPUError as error:                    # the reason and what to do, without a traceback
        print(error, file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
