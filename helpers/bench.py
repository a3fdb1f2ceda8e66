"""The headless benchmark: every kernel on a web-sized graph and on one beyond this GPU's L2, each verified,
timed with spread, and set against measured floors and fair baselines.

    python -m helpers.bench                      # web-Google (or the announced stand-in) and a beyond-L2 graph
    python -m helpers.bench --vertices 4847571 --edges 68993773     # a generated graph of that size instead

For each graph: where its vectors fall against L2; the stream and random-gather floors and sector requests
per edge; cuSPARSE with descriptors prepared once, cupyx per call, PyTorch's CSR SpMV, and the CPU (SciPy
on one core, Numba on all); every variant (launch, kernel and whole-iteration time, median and range);
vertex orders (their preprocessing cost, their floors, the fused iteration and the libraries on them);
the accuracy check; the course's targets. Tables go to the terminal and, as CSV, JSON and a PNG, to --out.
Without a GPU it says so and runs the CPU part.
"""
from __future__ import annotations

import argparse
import json
import platform
import sys
import time
import warnings
from pathlib import Path

import numpy as np

from . import baselines, datasets, gpu
from .reference import DAMPING, pagerank, pagerank_step, teleport_vector

TOL = 1e-6
DEFAULT_OUT = Path("bench-results")
BIG_VARIANTS = ("pull_contrib", "pull_hybrid", "pull_binned", "pull_segmented", "cusparse", "fused")
ORDERS = ("given", "out-degree", "degree groups", "rcm")
PYTHON_MAX_EDGES = 6_000_000     # beyond this one pure-Python iteration takes too long to be worth timing


def header() -> list[str]:
    """What this run is on: Python, NumPy, the CPU, the GPU, its driver, CUDA, CuPy, PyTorch."""
    status = gpu.gpu_status()
    lines = [f"Python {platform.python_version()}, NumPy {np.__version__}; CPU: {baselines.cpu_description()}"]
    if status.available:
        import cupy as cp

        line = (f"GPU: {status.description}; driver {cp.cuda.runtime.driverGetVersion()}, CUDA runtime "
                f"{cp.cuda.runtime.runtimeGetVersion()}, CuPy {cp.__version__}")
        try:
            import torch
            line += f", PyTorch {torch.__version__}"
        except ImportError:
            pass
        lines.append(line)
    else:
        lines.append(f"GPU: {status.description}")
    return lines


def parse(argv=None):
    from .pagerank_gpu import known_variant

    parser = argparse.ArgumentParser(prog="python -m helpers.bench", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--vertices", type=int, help="instead of web-Google, generate an R-MAT graph with this "
                                                     "many vertices (needs --edges)")
    parser.add_argument("--edges", type=int, help="the generated graph's edge count (needs --vertices)")
    parser.add_argument("--beyond-l2", choices=["auto", "off"], default="auto",
                        help="also measure a graph whose contribution vector is beyond this GPU's L2 (auto: "
                             "2^k vertices, at least 2.5x L2, 9 edges per vertex, generated on the GPU)")
    parser.add_argument("--variants", nargs="+", metavar="NAME",
                        help="kernel variants to run on the web-sized graph (default: all that fit, and fused)")
    parser.add_argument("--orders", nargs="+", metavar="ORDER", default=list(ORDERS),
                        help="vertex orders to measure on each graph")
    parser.add_argument("--launches", type=int, default=20, help="launches per timing trial")
    parser.add_argument("--trials", type=int, default=7, help="timing trials per measurement (median and range)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="folder for the CSV, JSON and PNG files")
    args = parser.parse_args(argv)
    if (args.vertices is None) != (args.edges is None):
        parser.error("--vertices and --edges go together: give both, or neither")
    if args.vertices is not None and (args.vertices < 2 or args.edges < 1):
        parser.error("--vertices must be at least 2 and --edges at least 1")
    unknown = [name for name in args.variants or [] if not known_variant(name)]
    if unknown:
        parser.error(f"unknown variant(s): {', '.join(unknown)}")
    from .locality import ORDERS as KNOWN_ORDERS
    wrong = [o for o in args.orders if o not in KNOWN_ORDERS]
    if wrong:
        parser.error(f"unknown order(s): {', '.join(wrong)}; known: {', '.join(KNOWN_ORDERS)}")
    if args.launches < 1 or args.trials < 1:
        parser.error("--launches and --trials must be at least 1")
    return args


def cpu_part(graph) -> dict:
    """CPU baselines on the host graph: ms per iteration, median and range."""
    ranks = np.full(graph.num_vertices, 1.0 / graph.num_vertices)
    teleport = teleport_vector(graph.num_vertices)
    out = {"SciPy CSR, one core": baselines.cpu_ms(lambda: pagerank_step(graph, ranks, DAMPING, teleport))}
    out["NumPy, one core"] = baselines.cpu_ms(lambda: baselines.numpy_step(graph, ranks))
    run, what = baselines.numba_parallel(graph)
    if run is not None:
        out[what] = baselines.cpu_ms(run, repeat=5)
    else:
        print(f"  multi-core CPU baseline skipped: {what}")
    if graph.num_edges <= PYTHON_MAX_EDGES:
        out["pure Python (lecture 03's lesson)"] = baselines.cpu_ms(lambda: baselines.python_step(graph, ranks),
                                                                     repeat=1, warmup=0)
    return out


def main(argv=None) -> int:
    args = parse(argv)
    lines = header()
    print("\n".join(lines), flush=True)
    print(f"writing results to {args.out.resolve()}/ (change with --out)", flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.vertices:
        from .generators import rmat_graph

        graph = rmat_graph(args.vertices, args.edges, seed=0, progress=True)
    else:
        graph = datasets.load_or_standin("web-Google")
    print(f"graph: {graph}", flush=True)
    start = time.perf_counter()
    reference = pagerank(graph, tol=1e-10, progress=True)
    print(f"float64 reference: {reference.iterations} iterations to L1 < 1e-10 in "
          f"{time.perf_counter() - start:.1f} s", flush=True)
    cpu = cpu_part(graph)
    print(f"CPU ({baselines.cpu_description()}), ms per iteration, median (range): " +
          "; ".join(f"{k} {v}" for k, v in cpu.items()), flush=True)
    result = {"header": lines, "tol": TOL, "norm": "L1",
              "cpu": {"description": baselines.cpu_description(),
                      "ms_per_iteration": {k: v.median_ms for k, v in cpu.items()}}, "graphs": []}
    if not gpu.has_gpu():
        print("no GPU: the GPU part is skipped (CPU part above).")
        (args.out / "bench.json").write_text(json.dumps(result, indent=1))
        return 0
    return gpu_part(graph, reference, cpu, result, args)


def _timing_row(label, timing, **extra) -> dict:
    return {"what": label, "ms": timing.median_ms, "lo": timing.min_ms, "hi": timing.max_ms, **extra}


def measure_graph(dg, reference_ranks, names, args, *, cpu=None, copy_gbs=None, orders=None) -> dict:
    """Everything for one graph: regime, floors, baselines, variants, orders. Returns DataFrames by name."""
    import cupy as cp
    import pandas as pd

    from . import floors, locality
    from . import pagerank_gpu as pg
    from .results import show

    facts = gpu.device_facts()
    out = {}
    floor = floors.measure(dg, copy_gbs=copy_gbs, launches=args.launches, trials=args.trials)
    print(f"\n=== {dg.name}: {dg.num_vertices:,} vertices, {dg.num_edges:,} edges", flush=True)
    print(f"regime: {floor.regime}")
    print(f"floors (median, range over {args.trials} trials): in_sources stream {floor.stream}; random gather "
          f"{floor.gather}; {floor.sectors_per_edge:.2f} sector requests per edge; byte model ({pg.BYTES_MODEL}, "
          f"the DRAM lower bound) at the measured copy bandwidth {floor.copy_gbs:,.0f} GB/s: {floor.model_ms:.3f} ms")
    # libraries, called the way a careful user would
    x = cp.asarray(reference_ranks.astype(np.float32))
    y = cp.empty_like(x)
    rows = []
    b2b = dict(launches=args.launches, trials=args.trials)
    prepared = baselines.PreparedSpMV(dg, x, y)
    rows.append(_timing_row("cuSPARSE SpMV, descriptors and buffer prepared once", gpu.time_back_to_back(prepared, **b2b)))
    rows.append(_timing_row("cupyx A @ x, per call (descriptors built every call)",
                            gpu.time_back_to_back(lambda: dg.in_matrix @ x, **b2b)))
    run, what = baselines.torch_spmv(dg, x)
    if run is not None:
        rows.append(_timing_row(what, gpu.time_back_to_back(run, **b2b)))
    else:
        print(f"  PyTorch baseline skipped: {what}")
    rows.append(_timing_row("cupyx.scipy.sparse whole iteration (no host sync)",
                            gpu.time_back_to_back(baselines.cupyx_iteration(dg), **b2b)))
    for label, timing in (cpu or {}).items():
        rows.append(_timing_row(f"CPU: {label}", timing))
    libraries = pd.DataFrame(rows)
    libraries["x_gather_floor"] = libraries["ms"] / floor.gather.median_ms
    out["baselines"] = libraries
    # every variant, checked and timed
    table = pg.compare(dg, names, tol=TOL, launches=args.launches, trials=args.trials, reference=reference_ranks,
                       floor=floor.gather)
    out["variants"] = table
    print(show(table).to_string(index=False), flush=True)
    print("\nbaselines (ms per call, median and range):")
    print(libraries.to_string(index=False, float_format=lambda v: f"{v:.4g}"), flush=True)
    # vertex orders
    order_rows = []
    for how in orders if orders is not None else args.orders:
        try:
            ordered, seconds = locality.reorder(dg, how)
        except Exception as error:                   # e.g. RCM out of host memory: say so, go on
            print(f"  order {how!r} skipped: {type(error).__name__}: {error}")
            continue
        f = floor if how == "given" else floors.measure(ordered, copy_gbs=floor.copy_gbs, launches=args.launches,
                                                        trials=args.trials)    # the given order: measured above
        fused = pg.graph_iteration_ms(ordered, trials=args.trials)
        binned_step = pg.make_iteration(ordered, "pull_binned")
        binned = gpu.time_back_to_back(binned_step.run, **b2b)
        xo = cp.asarray(np.full(dg.num_vertices, 1.0 / dg.num_vertices, dtype=np.float32))
        yo = cp.empty_like(xo)
        cusparse = gpu.time_back_to_back(baselines.PreparedSpMV(ordered, xo, yo), **b2b)
        run, _ = baselines.torch_spmv(ordered, xo)
        torch_t = gpu.time_back_to_back(run, **b2b) if run is not None else None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", pg.NotConvergedWarning)
            check = pg.pagerank_gpu(ordered, "fused", tol=TOL)
        order_rows.append({
            "order": how, "preprocessing_s": seconds, "sectors_per_edge": f.sectors_per_edge,
            "gather_ms": f.gather.median_ms, "gather_lo": f.gather.min_ms, "gather_hi": f.gather.max_ms,
            "fused_graph_ms": fused.median_ms, "fused_graph_lo": fused.min_ms, "fused_graph_hi": fused.max_ms,
            "pull_binned_iteration_ms": binned.median_ms, "pull_binned_iteration_lo": binned.min_ms,
            "pull_binned_iteration_hi": binned.max_ms,
            "cusparse_spmv_ms": cusparse.median_ms, "cusparse_spmv_lo": cusparse.min_ms,
            "cusparse_spmv_hi": cusparse.max_ms,
            "torch_spmv_ms": torch_t.median_ms if torch_t else np.nan,
            "torch_spmv_lo": torch_t.min_ms if torch_t else np.nan,
            "torch_spmv_hi": torch_t.max_ms if torch_t else np.nan,
            "fused_x_floor": fused.median_ms / f.gather.median_ms, "fused_iterations": check.iterations,
            "fused_sum": float(check.ranks.astype(np.float64).sum())})
        print(f"  order {how}: prepared in {seconds:.2f} s; {f.sectors_per_edge:.2f} sectors/edge; gather floor "
              f"{f.gather}; fused (graph) {fused} = {fused.median_ms / f.gather.median_ms:.2f}x floor; "
              f"pull_binned iteration {binned}; cuSPARSE SpMV {cusparse}"
              + (f"; torch SpMV {torch_t}" if torch_t else ""), flush=True)
        del ordered
        cp.get_default_memory_pool().free_all_blocks()
    orders = pd.DataFrame(order_rows)
    out["orders"] = orders
    out["floor"] = floor
    for frame in out.values():
        if hasattr(frame, "attrs"):
            frame.attrs.update(gpu=facts.name, graph=pg.graph_label(dg))
    return out


def targets(web: dict, big: dict | None) -> list[tuple[str, bool, str]]:
    """The course's targets (benchmark only, never a timed test): (what, met by the medians, the numbers with
    their ranges)."""
    from .results import ratio as ratio_text, timing_of, with_spread

    def timing(frame, row, base):
        return timing_of(frame.loc[row], base)

    def ms(t):
        return with_spread(*t) + " ms"

    found = []
    v = web["variants"].set_index("variant")
    if "fused, CUDA graph" in v.index:
        fused, floor = timing(v, "fused, CUDA graph", "iteration"), web["floor"].gather
        found.append(("web-sized: whole fused iteration <= 1.15x the random-gather floor",
                      fused[0] / floor.median_ms <= 1.15,
                      f"{ratio_text(fused, floor)}x ({ms(fused)} against {floor})"))
    if big is not None and len(big["orders"]):
        o = big["orders"].set_index("order")
        best = o["gather_ms"].idxmin()
        fused, floor = timing(o, best, "fused_graph"), timing(o, best, "gather")
        found.append((f"beyond L2, best order ({best}): fused <= 1.15x that order's gather floor",
                      fused[0] / floor[0] <= 1.15, f"{ratio_text(fused, floor)}x ({ms(fused)} against {ms(floor)})"))
        if "given" in o.index:
            libs = [timing(o, "given", base) for base in ("cusparse_spmv", "torch_spmv")
                    if np.isfinite(o.loc["given", f"{base}_ms"])]
            if libs:
                fastest_lib = min(libs)
                found.append(("beyond L2: that floor >= 2x faster than the libraries' SpMV on the graph as given",
                              fastest_lib[0] / floor[0] >= 2,
                              f"{ratio_text(fastest_lib, floor)}x ({ms(floor)} against {ms(fastest_lib)})"))
        slower = (o["fused_graph_ms"] > o["pull_binned_iteration_ms"]).any()
        found.append(("beyond L2: fused never slower than pull_binned on any order", not slower,
                      ", ".join(f"{k}: {ms(timing(o, k, 'fused_graph'))} vs {ms(timing(o, k, 'pull_binned_iteration'))}"
                                for k in o.index)))
    return found


def gpu_part(graph, reference, cpu, result, args) -> int:
    import cupy as cp

    from . import floors
    from . import pagerank_gpu as pg
    from .generators import rmat_device
    from .reference import l1_distance

    copy_gbs = gpu.measure_copy_bandwidth()
    facts = gpu.device_facts()
    print(f"\nGPU: {facts.name}, {facts.multiprocessors} SMs, {facts.l2_bytes / 2**20:.0f} MiB L2, "
          f"theoretical {facts.peak_bandwidth_gbs:,.0f} GB/s, measured copy {copy_gbs:,.0f} GB/s", flush=True)
    dg = pg.DeviceGraph(graph)
    names = args.variants or pg.variants_for(graph.num_vertices)
    web = measure_graph(dg, reference.ranks, names, args, cpu=cpu, copy_gbs=copy_gbs)
    accurate = pg.pagerank_gpu(dg, "fused", tol=1e-7, max_iter=500)
    accuracy = {"tol": 1e-7, "iterations": accurate.iterations, "l1": l1_distance(accurate.ranks, reference.ranks),
                "sum": float(accurate.ranks.astype(np.float64).sum())}
    print(f"\naccuracy: fused run to L1 < 1e-7: {accurate.iterations} iterations, L1 distance to the float64 "
          f"reference {accuracy['l1']:.1e} (target <= 1e-6), sum {accuracy['sum']:.7f}", flush=True)
    del dg
    big = None
    if args.beyond_l2 == "auto":
        vertices = 1 << int(np.ceil(np.log2(2.5 * facts.l2_bytes / 4)))
        edges = min(9 * vertices, 2**31 - 1)
        need = pg.device_bytes(vertices, edges) + 40 * edges
        if need > 0.8 * gpu.free_bytes():
            print(f"\nbeyond-L2 graph skipped: {vertices:,} vertices and {edges:,} edges need about "
                  f"{need / 2**30:.1f} GiB; this GPU has {gpu.free_bytes() / 2**30:.1f} GiB free")
        else:
            print(f"\ngenerating a beyond-L2 graph on the GPU: {vertices:,} vertices, {edges:,} edges", flush=True)
            start = time.perf_counter()
            big_dg = rmat_device(vertices, edges, seed=1)
            cp.cuda.Device().synchronize()
            print(f"generated in {time.perf_counter() - start:.1f} s", flush=True)
            big_reference = pg.float64_reference(big_dg)
            orders = [o for o in args.orders if o != "rcm"]
            if "rcm" in args.orders:
                print("  (RCM is not run on the beyond-L2 graph here: SciPy computes it on the CPU, about a minute at "
                      "this size; lecture 22 measures it in both regimes)")
            big = measure_graph(big_dg, big_reference, [n for n in BIG_VARIANTS if pg.known_variant(n)], args,
                                copy_gbs=copy_gbs, orders=orders)
            del big_dg
    found = targets(web, big)
    found.append(("accuracy: L1 distance to the float64 reference <= 1e-6 when run to tol 1e-7",
                  accuracy["l1"] <= 1e-6, f"{accuracy['l1']:.1e}"))
    print("\ntargets (one run of this bench):")
    for what, met, numbers in found:
        print(f"  {'MET ' if met else 'MISS'} {what}: {numbers}")
    t4 = floors.t4_expectation(graph.num_vertices, graph.num_edges, web["floor"].sectors_per_edge)
    print("\non a T4, by the model (not a measurement):")
    for key, value in t4.items():
        print(f"  {key}: {value:.3f}" if isinstance(value, float) else f"  {key}: {value}")
    _write(args.out, result, web, big, found, accuracy, facts, copy_gbs, t4)
    return 0


def _write(folder: Path, result, web, big, found, accuracy, facts, copy_gbs, t4) -> None:
    for label, part in (("web", web), ("beyond_l2", big)):
        if part is None:
            continue
        for name in ("variants", "baselines", "orders"):
            part[name].to_csv(folder / f"{label}_{name}.csv", index=False)
        result["graphs"].append({"label": label, "graph": part["variants"].attrs.get("graph"),
                                 "regime": part["floor"].regime, "floor": part["floor"].as_dict(),
                                 "variants": part["variants"].to_dict(orient="records"),
                                 "baselines": part["baselines"].to_dict(orient="records"),
                                 "orders": part["orders"].to_dict(orient="records")})
    result.update(gpu=facts.name, copy_gbs=copy_gbs, accuracy=accuracy, t4_model=t4,
                  targets=[{"target": w, "met": bool(m), "numbers": n} for w, m, n in found])
    (folder / "bench.json").write_text(json.dumps(result, indent=1, default=float))
    _plot(web, big, facts.name, folder / "bench.png")
    print(f"wrote {folder}/: bench.json, *_variants.csv, *_baselines.csv, *_orders.csv, bench.png")


def _plot(web, big, gpu_name, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from .results import chart

    parts = [p for p in (web, big) if p is not None]
    fig, axes = plt.subplots(1, len(parts), figsize=(7 * len(parts), 6), squeeze=False)
    for ax, part in zip(axes[0], parts):
        floor = part["floor"]
        chart(part["variants"], "iteration", ax=ax, lines={"random-gather floor": floor.gather.median_ms,
                                                           f"byte model at copy bandwidth": floor.model_ms})
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    sys.exit(main())
