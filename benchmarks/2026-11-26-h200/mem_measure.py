"""GPU memory measured against helpers.driver.device_bytes (issue 24, item 6): for R-MAT graphs generated on
the GPU and each variant, the peak of building DeviceGraph(graph, variant=...) and running a few iterations
with pagerank_gpu, each case in a fresh CuPy memory pool.

Run from the repository root: PYTHONPATH=$PWD python3 .devrun/mem_measure.py [variant ...]

"measured" is the case pool's total (it keeps freed blocks, so it is the pool's high-water mark) plus the
graph's arrays that DeviceGraph keeps as they are (same device pointer: in_offsets, out_degree), which live
in the default pool where the generator put them; "live" is the largest in-use total seen after any
allocation, plus the same arrays. The ratio is device_bytes / measured: within 1.00-1.15 is the target.
"""
import gc
import sys
import time
import traceback
import warnings

MiB = 2**20
SIZES = [(400_000, 3_600_000), (4_000_000, 36_000_000), (16_000_000, 144_000_000)]
VARIANTS = ["fused", "blocked", "pull_contrib", "pull_segmented", "cusparse", "push_atomic", "pull_binned"]
ITERATIONS = 4
BUDGET_S = 160          # no new case starts after this many seconds (the whole run must stay under 3 minutes)


class TrackedPool:
    """A fresh MemoryPool whose malloc also records the largest number of bytes in use at once."""

    def __init__(self, cp):
        self.pool = cp.cuda.MemoryPool()
        self.peak = 0

    def malloc(self, size):
        memory = self.pool.malloc(size)
        used = self.pool.used_bytes()
        if used > self.peak:
            self.peak = used
        return memory


def graph_arrays(graph):
    return {name: getattr(graph, name) for name in ("in_offsets", "in_sources", "out_degree")}


def one_case(cp, pg, graph, name):
    """(built live peak, live peak, pool total, bytes of the graph's arrays kept as they are, iterations)."""
    tracked = TrackedPool(cp)
    cp.cuda.set_allocator(tracked.malloc)
    dg = result = None
    try:
        dg = pg.DeviceGraph(graph, variant=name)
        cp.cuda.Device().synchronize()
        built = tracked.peak
        reused = sum(a.nbytes for key, a in graph_arrays(graph).items()
                     if getattr(dg, key).data.ptr == a.data.ptr)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")             # tol=0: never converges, by design
            result = pg.pagerank_gpu(dg, name, tol=0, max_iter=ITERATIONS, check_every=2)
        cp.cuda.Device().synchronize()
        return built, tracked.peak, tracked.pool.total_bytes(), reused, result.iterations
    finally:
        del dg, result
        gc.collect()
        cp.cuda.set_allocator(cp.get_default_memory_pool().malloc)
        tracked.pool.free_all_blocks()


def main(variants):
    import cupy as cp

    from helpers import generators, gpu
    from helpers import driver as pg

    start = time.perf_counter()
    facts = gpu.device_facts()
    segment = pg.segment_size()
    print(f"GPU: {facts.name}, L2 {facts.l2_bytes / MiB:.0f} MiB (segments of {segment:,} sources), "
          f"CuPy {cp.__version__}, CUDA runtime {cp.cuda.runtime.runtimeGetVersion()}", flush=True)
    rows = []
    for n, e in SIZES:
        if time.perf_counter() - start > BUDGET_S:
            print(f"skipped n={n:,} e={e:,}: past the {BUDGET_S} s budget", flush=True)
            continue
        try:
            t0 = time.perf_counter()
            graph = generators.rmat_device(n, e, seed=1)
            cp.cuda.Device().synchronize()
        except Exception as error:               # noqa: BLE001 - report and go on
            print(f"R-MAT n={n:,} e={e:,} failed: {type(error).__name__}: {error}", flush=True)
            cp.get_default_memory_pool().free_all_blocks()
            continue
        own = sum(a.nbytes for a in graph_arrays(graph).values())
        print(f"\nR-MAT n={n:,} e={graph.num_edges:,} made in {time.perf_counter() - t0:.1f} s; its arrays "
              f"{own / MiB:.1f} MiB (default pool; in_sources copied, the rest kept)", flush=True)
        cp.get_default_memory_pool().free_all_blocks()       # the generator's temporaries
        for name in variants:
            if time.perf_counter() - start > BUDGET_S:
                print(f"{name:15s} skipped: past the {BUDGET_S} s budget", flush=True)
                continue
            estimate = pg.device_bytes(n, graph.num_edges, name)
            t0 = time.perf_counter()
            try:
                built, live, total, reused, done = one_case(cp, pg, graph, name)
            except Exception as error:           # noqa: BLE001 - report and go on
                last = traceback.format_exception_only(type(error), error)[-1].strip()
                print(f"{name:15s} n={n:>11,} e={graph.num_edges:>12,} FAILED: {last}", flush=True)
                continue
            measured, live_total = total + reused, live + reused
            ratio, live_ratio = estimate / measured, estimate / live_total
            verdict = "ok" if 1.0 <= ratio <= 1.15 else ("LOW" if ratio < 1.0 else "HIGH")
            rows.append((name, n, ratio, live_ratio, verdict))
            print(f"{name:15s} n={n:>11,} e={graph.num_edges:>12,} measured {measured / MiB:9.1f} MiB "
                  f"(live {live_total / MiB:9.1f}, DeviceGraph alone {(built + reused) / MiB:8.1f}, "
                  f"kept graph arrays {reused / MiB:6.1f}) device_bytes {estimate / MiB:9.1f} MiB  "
                  f"estimate/measured {ratio:.3f} (live {live_ratio:.3f}) {verdict}  "
                  f"[{done} it, {time.perf_counter() - t0:.1f} s]", flush=True)
        del graph
        gc.collect()
        cp.get_default_memory_pool().free_all_blocks()
    if rows:
        worst = min(rows, key=lambda r: r[2]), max(rows, key=lambda r: r[2])
        print(f"\n{len(rows)} cases, {sum(r[4] == 'ok' for r in rows)} within 1.00-1.15; lowest ratio "
              f"{worst[0][2]:.3f} ({worst[0][0]}, n={worst[0][1]:,}), highest {worst[1][2]:.3f} "
              f"({worst[1][0]}, n={worst[1][1]:,}); total {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main(sys.argv[1:] or VARIANTS)
