"""The GPU part of ``python -m helpers.bench``: floors, libraries and the course's iterations on each graph,
timed interleaved, and the speed targets decided by ``helpers.measure.verdicts``' rule."""
from __future__ import annotations

import json
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from helpers import driver as pg
from helpers.driver import floors, locality
from helpers.driver.compare import LIBRARY_REPLAYED, WHOLE, head_to_head
from helpers.measure import gpu, verdicts
from helpers.measure.results import flat, show

IN_L2_LARGE = (4_847_571, 68_993_773)     # an R-MAT of LiveJournal's size: a 19 MB vector, in an H100's L2


def measure(dg, label: str, args, copy_gbs: float, cp, *, order: str = "given") -> dict:
    """Floors, the head-to-head and the accuracy of the chosen iteration on one graph in one order."""
    floor = floors.measure(dg, copy_gbs=copy_gbs, launches=args.launches, trials=args.trials)
    print(f"\n=== {label} ({order} order): {dg.num_vertices:,} vertices, {dg.num_edges:,} edges\nregime: "
          f"{floor.regime}\nfloors: stream {floor.stream}; random gather {floor.gather}; "
          f"{floor.sectors_per_edge:.2f} sectors per edge; byte model at {floor.copy_gbs:,.0f} GB/s: "
          f"{floor.model_ms:.3f} ms", flush=True)
    h2h = head_to_head(dg, args, floor, cp)
    chosen, why = pg.choose(dg)
    reference = pg.float64_reference(dg)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pg.NotConvergedWarning)
        run = pg.pagerank_gpu(dg, chosen, tol=1e-7, max_iter=500)
    accuracy = float(np.abs(run.ranks.astype(np.float64) - reference).sum())
    table = pd.DataFrame(h2h["rows"])
    table.attrs.update(gpu=gpu.device_facts().name, graph=f"{pg.graph_label(dg)}, {order} order",
                       floor=f"random-gather floor {floor.gather}",
                       timing=f"interleaved: {args.trials} trials; whole iterations as CUDA graphs of "
                              f"{LIBRARY_REPLAYED}")
    print(show(table).to_string(index=False))
    print(f"chosen by pagerank_gpu: {chosen} ({why}); run to L1 < 1e-7: {run.iterations} iterations, "
          f"L1 to the float64 reference {accuracy:.1e}", flush=True)
    return {"label": label, "order": order, "floor": floor, "table": table, "timings": h2h["timings"],
            "best": h2h["best"], "chosen": chosen, "accuracy": accuracy}


def targets(parts: dict) -> list[tuple[str, bool, str]]:
    """The speed targets of issue 21, each (what, met, the numbers)."""
    found = []

    def floor(name: str, what: str, limit: float):
        """The best whole iteration at most ``limit`` times the graph's gather floor."""
        if name in parts:
            p = parts[name]
            best, gather = p["timings"][p["best"]], p["floor"].gather
            ratio = best.median_ms / gather.median_ms
            found.append((what, ratio <= limit, f"{ratio:.2f}x ({p['best']} {best} vs floor {gather})"))

    def libraries(name: str, what: str, met, labels: dict | None = None):
        """``met`` by the verdict of the best whole iteration against each library (by default every one)."""
        if name not in parts:
            return
        p = parts[name]
        labels = labels or {lib: lib for lib in p["timings"] if lib not in WHOLE}
        if set(labels) <= set(p["timings"]):
            said = [(verdicts.compare(p["timings"][p["best"]], p["timings"][lib]), label)
                    for lib, label in labels.items()]
            found.append((what, all(met(v) for v, _ in said),
                          "; ".join(v.sentence(p["best"], label) for v, label in said)))

    floor("web", "web-sized: best whole iteration <= 1.2x the gather floor", 1.2)
    libraries("in-L2 large", "in-L2 large: faster than torch's CSR mv", lambda v: v.word == "faster",
              {"torch CSR mv": "torch"})
    libraries("beyond L2 given", "beyond L2, given order: >= 2x faster than every library SpMV",
              lambda v: v.high <= 0.5)
    floor("beyond L2 given", "beyond L2, given order: <= 0.6x that order's gather floor", 0.6)
    floor("beyond L2 out-degree", "beyond L2, out-degree order: <= 1.10x its gather floor", 1.10)
    libraries("beyond L2 out-degree", "beyond L2, out-degree order: faster than the libraries",
              lambda v: v.word == "faster")
    libraries("web-like beyond L2", "web-like beyond L2: >= 1.5x faster than the libraries' SpMV",
              lambda v: v.high <= 1 / 1.5)
    for name, p in parts.items():
        found.append((f"{name}: L1 to float64 <= 1e-6 at tol 1e-7", p["accuracy"] <= 1e-6,
                      f"{p['accuracy']:.1e}"))
    return found


def generated_graphs(facts, web_graph):
    """(label, order, graph-like) for the generated graphs of both regimes that fit this GPU."""
    beyond = 1 << int(np.ceil(np.log2(2.5 * facts.l2_bytes / 4)))
    out = []
    n, e = IN_L2_LARGE
    if 4 * n <= facts.l2_bytes // 2 and pg.device_bytes(n, e) * 3 < gpu.free_bytes():
        out.append(("in-L2 large", "given", lambda: pg.DeviceGraph(pg.rmat_device(n, e, seed=2))))
    edges = min(9 * beyond, 2**31 - 1)
    if pg.device_bytes(beyond, edges, "blocked") + 40 * edges < 0.8 * gpu.free_bytes():
        def rmat():
            return pg.DeviceGraph(pg.rmat_device(beyond, edges, seed=1))
        out.append(("beyond L2 given", "given", rmat))
        out.append(("beyond L2 out-degree", "out-degree", lambda: locality.reorder(rmat(), "out-degree")[0]))
    copies = -(-beyond // web_graph.num_vertices)
    if 40 * copies * web_graph.num_edges < 0.8 * gpu.free_bytes():
        out.append(("web-like beyond L2", "given",
                    lambda: pg.DeviceGraph(pg.web_like_device(copies, base=web_graph))))
    return out


def gpu_part(graph, reference, cpu, result, args) -> int:
    import cupy as cp

    copy_gbs = gpu.measure_copy_bandwidth()
    facts = gpu.device_facts()
    print(f"\nGPU: {facts.name}, {facts.multiprocessors} SMs, {facts.l2_bytes / 2**20:.0f} MiB L2, "
          f"theoretical {facts.peak_bandwidth_gbs:,.0f} GB/s, measured copy {copy_gbs:,.0f} GB/s",
          flush=True)
    dg = pg.DeviceGraph(graph)
    floor = floors.measure(dg, copy_gbs=copy_gbs, launches=args.launches, trials=args.trials)
    names = args.variants or pg.variants_for(graph.num_vertices)
    variants = pg.compare(dg, names, tol=1e-6, launches=args.launches, trials=args.trials,
                          reference=reference.ranks, floor=floor.gather)
    print(show(variants).to_string(index=False), flush=True)
    parts = {"web": measure(dg, "web", args, copy_gbs, cp)}
    del dg
    if args.generated == "auto" and not args.vertices:
        for label, order, build in generated_graphs(facts, graph):
            start = time.perf_counter()
            big = build()
            cp.cuda.Device().synchronize()
            print(f"\n{label}: built on the GPU in {time.perf_counter() - start:.1f} s", flush=True)
            parts[label] = measure(big, label, args, copy_gbs, cp, order=order)
            del big
            cp.get_default_memory_pool().free_all_blocks()
    found = targets(parts)
    print("\ntargets (one run of this bench; verdicts by helpers.measure.verdicts):")
    for what, met, numbers in found:
        print(f"  {'MET ' if met else 'MISS'} {what}: {numbers}")
    t4 = floors.t4_expectation(graph.num_vertices, graph.num_edges, parts["web"]["floor"].sectors_per_edge)
    print("\non a T4, by the model (not a measurement):")
    for key, value in t4.items():
        print(f"  {key}: {value:.3f}" if isinstance(value, float) else f"  {key}: {value}")
    write(args.out, result, variants, parts, found, facts, copy_gbs, t4)
    return 0


def write(folder: Path, result, variants, parts, found, facts, copy_gbs, t4) -> None:
    flat(variants).to_csv(folder / "web_variants.csv", index=False)
    for name, part in parts.items():
        slug = name.replace(" ", "_").replace("-", "_")
        flat(part["table"]).to_csv(folder / f"{slug}.csv", index=False)
        result["graphs"][name] = {"graph": part["table"].attrs["graph"], "floor": part["floor"].as_dict(),
                                  "chosen": part["chosen"], "accuracy": part["accuracy"],
                                  "rows": flat(part["table"]).to_dict(orient="records")}
    result.update(gpu=facts.name, copy_gbs=copy_gbs, t4_model=t4,
                  variants=flat(variants).to_dict(orient="records"),
                  targets=[{"target": w, "met": bool(m), "numbers": n} for w, m, n in found])
    (folder / "bench.json").write_text(json.dumps(result, indent=1, default=float), encoding="utf-8")
    print(f"wrote {folder}/: bench.json and one CSV per table")
