"""Plumbing for lectures 20-22 (convergence, fusion, vertex order, blocking): an iteration's change and its
rate, whole iterations timed interleaved and judged by the verdict rule, sizes beyond L2 (the drawings:
``helpers.measure.figures``)."""
from __future__ import annotations

import math
import warnings

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from helpers import driver
from helpers.core.arguments import host_array
from helpers.core.reference import l1_distance, pagerank
from helpers.driver import floors, locality
from helpers.driver.compare import libraries
from helpers.driver.iteration import REPLAYED, replayed, time_iterations
from helpers.measure import gpu, verdicts
from helpers.measure.figures import finish, new_axes, plot_medians_with_ranges
from helpers.measure.gpu import Timing
from helpers.measure.results import one_sample

ITERATIONS = REPLAYED               # iterations per timed call (a CUDA graph records this many)
NORMS = ("L1", "L2", "L∞")


def change_norms(step, iterations: int):
    """The L1, L2, L∞ norms (float64, on the GPU) of ``iterations`` changes of a step's ranks, and ratios."""
    cp = gpu.require_gpu()
    rows = []
    for iteration in range(1, int(iterations) + 1):
        old = step.rank.astype(cp.float64)
        step.run()
        delta = step.rank.astype(cp.float64) - old
        rows.append({"iteration": iteration, "L1": float(cp.abs(delta).sum()),
                     "L2": float(cp.sqrt((delta * delta).sum())), "L∞": float(cp.abs(delta).max())})
    norms = pd.DataFrame(rows).set_index("iteration")
    moved = norms["L1"] > 0                     # an iteration that changed nothing has no ratio
    norms["L2/L1"] = (norms["L2"] / norms["L1"]).where(moved)
    norms["L∞/L1"] = (norms["L∞"] / norms["L1"]).where(moved)
    return norms


def shrink_factor(values, start: int = 0) -> float:
    """The factor a series shrinks by per step, fitted on its logarithm from ``start`` on, zeros left out."""
    values = np.asarray(host_array(values, "values", ndim=1), dtype=np.float64)[int(start):]
    steps = np.arange(values.size)
    keep = values > 0
    if keep.sum() < 2:
        raise ValueError(f"a rate needs at least two positive values, got {keep.sum()}")
    return float(np.exp(np.polyfit(steps[keep], np.log(values[keep]), 1)[0]))


def average_shrink(first: float, last: float, steps: int) -> float:
    """The average factor per step that takes ``first`` to ``last`` in ``steps`` steps."""
    if steps < 1 or first <= 0 or last <= 0:
        raise ValueError(f"need steps >= 1 and positive values, got {first}, {last}, {steps}")
    return float((last / first) ** (1.0 / steps))


def first_below(values, tol: float):
    """The iteration (counted from 1) whose value first falls below ``tol``, or None if none does."""
    below = np.flatnonzero(np.asarray(host_array(values, "values", ndim=1), dtype=np.float64) < tol)
    return int(below[0]) + 1 if below.size else None


def ulp_sum(ranks) -> float:
    """One float32 ulp of every rank, added up: the L1 change of an iteration that moved each by one ulp."""
    ranks = np.asarray(host_array(ranks, "ranks", ndim=1), dtype=np.float32)
    return float(np.spacing(np.abs(ranks)).astype(np.float64).sum())


def accuracy_runs(graphs, names, *, tol: float = 1e-9, max_iter: int = 200, mark: float = 1e-6):
    """Each variant run to ``tol`` on each graph: an accuracy table and the L1 curves by (graph, variant)."""
    rows, curves, exact = [], {}, []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", driver.NotConvergedWarning)   # a stalled run: the table says so
        for graph in graphs:
            dg, truth = driver.DeviceGraph(graph), pagerank(graph, tol=1e-12)
            exact.append(f"{graph.name}: {truth.iterations}")
            for name in names:
                result = driver.pagerank_gpu(dg, name, tol=tol, max_iter=max_iter)
                curves[graph.name, name] = result.residuals
                first = first_below(result.residuals, mark)
                rows.append({"graph": graph.name, "kernel": name,
                             f"first below {short(mark)}": np.nan if first is None else float(first),
                             "lowest L1 change": float(result.residuals.min()),
                             f"met {short(tol)}": result.converged, "iterations run": result.iterations,
                             "L1 to float64": l1_distance(result.ranks, truth.ranks),
                             "one ulp of every rank": ulp_sum(truth.ranks)})
    table = pd.DataFrame(rows)
    table.attrs.update(gpu=gpu.device_facts().name,
                       stop=f"L1 change < {short(tol)}, at most {max_iter} iterations",
                       note="the float64 reference's iterations to an L1 change below 1e-12: "
                            + "; ".join(exact))
    return table, curves


def short(value: float) -> str:
    """A tolerance as the lectures write it: 1e-6, not 1e-06."""
    return f"{value:.0e}".replace("e-0", "e-").replace("e+0", "e+")


def kernels_alone(dg, names, *, launches: int = 20, trials: int = 15) -> dict:
    """Each variant's sum over in-links alone, all timed interleaved: name -> Timing in ms per launch."""
    return gpu.time_paired({name: sum_alone(dg, name) for name in names}, launches=launches, trials=trials)


def whole_runs(dg, name: str, check_every, *, iterations: int = 64, trials: int = 15) -> dict:
    """Whole ``pagerank_gpu`` runs of ``iterations`` iterations per ``check_every``: 'every k' -> Timing."""
    def call(k):
        def run():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", driver.NotConvergedWarning)   # tol=0: never converges
                result = driver.pagerank_gpu(dg, name, tol=0, max_iter=iterations, check_every=k)
            if result.iterations != iterations:
                raise RuntimeError(f"a run looking every {k} iterations ran {result.iterations}, "
                                   f"not {iterations}")
        return run

    return gpu.time_paired({f"every {k}": call(k) for k in check_every}, launches=1, trials=trials)


def per_event(a: Timing, b: Timing, count: int, scale: float = 1e3) -> Timing:
    """(a - b) / count trial by trial for paired Timings: what each of ``count`` events costs (in µs)."""
    if a.pairing is None or a.pairing != b.pairing or a.samples_ms.size != b.samples_ms.size:
        raise ValueError("per_event needs two timings measured together by gpu.time_paired")
    if count < 1:
        raise ValueError(f"count must be at least 1, got {count}")
    return Timing.of((a.samples_ms - b.samples_ms) * scale / count)


def verdict_table(timings: dict, pairs):
    """A row per (a, b) in ``pairs``: a's time over b's, its 95% interval and the verdict's word."""
    rows = []
    for a, b in pairs:
        v = verdicts.compare(timings[a], timings[b])
        rows.append({"compared": a, "with": b, "ratio": v.ratio, "95% interval": f"{v.low:.3g}-{v.high:.3g}",
                     "verdict": v.word})
    return pd.DataFrame(rows)


def timing_frame(timings: dict, column: str = "iteration", **attrs):
    """label -> Timing as a DataFrame ('variant', ``column``) for ``results.show``; ``attrs``: its header."""
    frame = pd.DataFrame({"variant": list(timings), column: list(timings.values())})
    frame.attrs.update(attrs if "gpu" in attrs else {"gpu": gpu.device_facts().name, **attrs})
    return frame


def control_says(effect: verdicts.Verdict, control: verdicts.Verdict, what: str, cause: str) -> str:
    """The cause a control (the same comparison with only ``cause`` removed) supports, in words."""
    if effect.word not in ("faster", "slower"):
        return f"{what}: {effect.word} here, so there is nothing for the control to explain"
    if control.word == "no measurable difference":
        return f"{what} disappears without {cause}: the control supports {cause} as its cause"
    if control.word == "not settled":
        return f"{what}: the control is not settled; more trials would say how much of it comes from {cause}"
    if control.word != effect.word:
        return (f"{what} reverses without {cause}: all of it comes from {cause}, and something else pulls "
                "the other way")
    shrinks = (f"{what} shrinks from about {effect.times_rounded}x to about {control.times_rounded}x "
               f"without {cause}")
    if abs(math.log(control.ratio)) < 0.5 * abs(math.log(effect.ratio)):
        return f"{shrinks}: most of it comes from {cause}"
    if abs(math.log(control.ratio)) < abs(math.log(effect.ratio)) - math.log(1 + verdicts.MARGIN):
        return f"{shrinks}: part of it comes from {cause}, not most"
    return (f"{what} stays at about {control.times_rounded}x without {cause}: the control does not "
            f"support {cause} as its cause")


def part_explains(effect: verdicts.Verdict, part: verdicts.Verdict, what: str, part_name: str) -> str:
    """Whether a measured part (e.g. the gather floor in the same two orders) moved as far as the whole."""
    if effect.word not in ("faster", "slower"):
        return f"{what}: {effect.word} here, so there is nothing to explain"
    if abs(math.log(effect.ratio)) <= abs(math.log(part.ratio)) + math.log(1 + verdicts.MARGIN):
        return (f"{what} (about {effect.times_rounded}x) is no more than {part_name} moved: "
                f"{part_name} explains it")
    return (f"{what} (about {effect.times_rounded}x) is more than {part_name} moved (about "
            f"{part.times_rounded}x): something besides {part_name} adds the rest")


def sum_alone(dg, name: str):
    """A callable launching a variant's sum over in-links alone (one iteration first writes its inputs)."""
    step = driver.make_iteration(dg, name)
    step.run()
    return step.launch_kernel


def timed_form(dg, name: str, iterations: int = ITERATIONS):
    """Whole iterations replayed as a CUDA graph (fused, blocked), else the sum over in-links alone."""
    if driver.variant(name).iteration is not None:
        return replayed(driver.make_iteration(dg, name), iterations)
    return sum_alone(dg, name)


def measure_order(dg, how: str, names=("fused",), *, iterations: int = ITERATIONS, trials: int = 15,
                  copy_gbs: float | None = None) -> dict:
    """One vertex order against the given one: preprocessing, floors, paired timings, verdicts."""
    graph, seconds = locality.reorder(dg, how)
    orders = {"given": dg, how: graph}                  # one order where ``how`` is 'given'
    measured = {order: floors.measure(g, copy_gbs=copy_gbs) for order, g in orders.items()}
    runs = {f"{name}, {order}": timed_form(g, name, iterations)
            for name in names for order, g in orders.items()}
    timings = time_iterations(runs, iterations=iterations, trials=trials)
    found = {"order": how, "preprocessing_s": seconds, "floors": measured, "timings": timings, "verdicts": {}}
    if graph is not dg:
        found["verdicts"] = {name: verdicts.compare(timings[f"{name}, {how}"], timings[f"{name}, given"])
                             for name in names}
        found["gather"] = verdicts.compare(measured[how].gather, measured["given"].gather)
    return found


def order_table(dg, orders=locality.ORDERS, names=("fused",), *, iterations: int = ITERATIONS,
                trials: int = 15, copy_gbs: float | None = None):
    """``measure_order`` per order as one table, with when the first variant repays the order."""
    rows = []
    for how in [o for o in orders if o != "given"]:
        found = measure_order(dg, how, names, iterations=iterations, trials=trials, copy_gbs=copy_gbs)
        timed, first = found["timings"], names[0]
        for order in (how,) if rows else ("given", how):
            rows.append({"order": order, "preprocessing_s": found["preprocessing_s"] if order == how else 0.0,
                         "sectors_per_edge": found["floors"][order].sectors_per_edge,
                         "gather": found["floors"][order].gather,
                         **{name: timed[f"{name}, {order}"] for name in names}})
        for name in names:
            v = found["verdicts"][name]        # a Verdict: shown as its word, v.sentence() for prose
            rows[-1].update({f"{name} / given": v.ratio, f"{name}: verdict": v})
        saved = timed[f"{first}, given"].median_ms - timed[f"{first}, {how}"].median_ms
        faster = found["verdicts"][first].word == "faster" and saved > 0
        rows[-1]["repaid after (iterations)"] = 1e3 * found["preprocessing_s"] / saved if faster else np.nan
        gpu.require_gpu().get_default_memory_pool().free_all_blocks()     # the reordered graph is gone
    table = pd.DataFrame(rows)
    table.attrs.update(gpu=gpu.device_facts().name, graph=driver.graph_label(dg),
                       timing=f"{', '.join(names)}: per iteration, {trials} trials interleaved with the "
                              f"given order ({iterations} iterations per trial); gather floor: 7 trials, "
                              "not paired; preprocessing: one run",
                       note=f"repaid after: preprocessing / the {names[0]} time saved per iteration, where "
                            "the verdict is 'faster'")
    return table


def order_summary(table, name: str = "fused") -> list[str]:
    """Per order of an ``order_table``, one number a sentence: gather floor, sectors, verdict, repaid."""
    rows = table.set_index("order")
    given = rows.loc["given"]
    lines = []
    for how, row in rows.drop(index="given").iterrows():
        gather = verdicts.compare(row["gather"], given["gather"])
        sectors = given["sectors_per_edge"] / row["sectors_per_edge"]
        lines.append(gather.sentence(f"{how}: the gather floor", "in the given order") + ".")
        if gather.word == "faster" and gather.times > sectors * (1 + verdicts.MARGIN):
            moved = (f"fell by a factor of only {sectors:.2f}" if sectors >= 1.005 else "did not fall" if
                     sectors >= 0.995 else f"even rose, by {100 * (1 / sectors - 1):.0f}%")
            lines.append(f"  The sector requests {moved}: reuse of cached sectors did the rest.")
        lines.append("  " + row[f"{name}: verdict"].sentence(f"{name} in this order", "in the given order")
                     + ".")
        if np.isfinite(row["repaid after (iterations)"]):
            lines.append(f"  The order is repaid after about {one_sample(row['repaid after (iterations)'])} "
                         f"{name} iterations.")
    return lines


def peak_bytes(num_vertices: int, num_edges: int) -> int:
    """GPU memory at lecture 22's peak: the graph, a reordered copy (blocked) and the sort keys."""
    n, e = int(num_vertices), int(num_edges)
    return 2 * driver.device_bytes(n, e, "blocked") + 32 * e + 28 * n


def beyond_l2_size(l2_bytes: int, free_bytes: int, *, times_l2: float = 2.5, edges_per_vertex: int = 9):
    """(vertices, edges, wanted) for a vector ``times_l2`` x L2, halved to fit 80% of ``free_bytes``."""
    wanted = n = max(int(times_l2 * l2_bytes / 4), 2)
    while peak_bytes(n, edges_per_vertex * n) > 0.8 * free_bytes and n > 2**16:
        n //= 2
    return n, edges_per_vertex * n, wanted


def copies_beyond_l2(l2_bytes: int, base_vertices: int, *, times_l2: float = 2.5) -> int:
    """How many linked copies of a graph of ``base_vertices`` make a float32 vector ``times_l2`` times L2."""
    return max(1, math.ceil(times_l2 * l2_bytes / (4 * int(base_vertices))))


def segment_sweep(dg, fractions=(1 / 8, 1 / 4, 1 / 2, 1, 2, 4), *, iterations: int = 10, trials: int = 9):
    """Blocked with segments of each fraction of L2, and fused, interleaved: (table, Timings)."""
    l2 = gpu.device_facts().l2_bytes
    sizes = {f: max(driver.BLOCK, int(f * l2 / 4)) for f in fractions}
    runs = {f"segments of {f:g} x L2": replayed(driver.BlockedIteration(dg, vertices_per_segment=v),
                                                  iterations) for f, v in sizes.items()}
    runs["fused (no segments)"] = replayed(driver.FusedIteration(dg), iterations)
    timings = time_iterations(runs, iterations=iterations, trials=trials)
    default = f"segments of {0.5:g} x L2"
    rows = []
    for f, v in sizes.items():
        label = f"segments of {f:g} x L2"
        row = {"variant": label, "fraction of L2": f, "vertices per segment": v,
               "MiB of values": 4 * v / 2**20, "segments": -(-dg.num_vertices // v),
               "iteration": timings[label]}
        if default in timings and label != default:
            v_default = verdicts.compare(timings[label], timings[default])
            row.update({"/ half of L2": v_default.ratio, "verdict": v_default.word})
        rows.append(row)
    table = pd.DataFrame(rows)
    table.attrs.update(gpu=gpu.device_facts().name, graph=driver.graph_label(dg),
                       timing=f"CUDA-graph replays of {iterations} iterations, {trials} trials interleaved; "
                              "verdicts against segments of half the L2 (what the driver picks)")
    return table, timings


def against_libraries(dg, *, iterations: int = 10, trials: int = 15) -> dict:
    """Fused, blocked, pull_segmented and the libraries' SpMV timed interleaved: label -> Timing."""
    cp = gpu.require_gpu()
    x = cp.full(dg.num_vertices, 1.0 / dg.num_vertices, dtype=cp.float32)
    runs = {"fused, CUDA graph": replayed(driver.FusedIteration(dg), iterations),
            "blocked, CUDA graph": replayed(driver.BlockedIteration(dg), iterations),
            "pull_segmented, launched": driver.make_iteration(dg, "pull_segmented")}
    runs |= libraries(dg, x, cp.empty_like(x))
    return time_iterations(runs, iterations=iterations, trials=trials)


def library_report(dg, floor=None, *, iterations: int = 10, trials: int = 15):
    """``against_libraries`` as a table and one-number sentences: the iteration ``driver.choose`` picks and
    why, against the other whole iteration, each library's SpMV and ``floor`` (apart: unpaired)."""
    timings = against_libraries(dg, iterations=iterations, trials=trials)
    frame = timing_frame(timings, "iteration", graph=driver.graph_label(dg),
                         timing=f"{trials} trials interleaved; a whole iteration (ours) or one SpMV alone "
                                "(the libraries)")
    name, why = driver.choose(dg)
    chosen, other = f"{name}, CUDA graph", "fused" if name == "blocked" else "blocked"
    lines = [f"pagerank_gpu would run {name} here: {why}",
             verdicts.compare(timings[chosen], timings[f"{other}, CUDA graph"]).sentence(name, other)]
    lines += [verdicts.compare(timings[chosen], timings[label]).sentence(f"a whole {name} iteration", label)
              for label in timings if "SpMV" in label or "torch" in label]
    if floor is not None:
        lines.append(verdicts.compare(timings[chosen], floor).sentence(name, "the random-gather floor"))
    return frame, lines


def plot_sweep(sweep, lines: dict | None = None, marks: dict | None = None, ax=None, title: str = ""):
    """The segment sweep's ms per iteration against MiB, with reference ``lines`` (ms) and ``marks`` (MiB)."""
    ax = new_axes(ax, (7.5, 3.6))
    plot_medians_with_ranges(ax, sweep["MiB of values"], sweep["iteration"], label="blocked iteration")
    for (label, value), style in zip((lines or {}).items(), ("--", ":", "-.")):
        ax.axhline(getattr(value, "median_ms", value), color="tab:orange", ls=style, label=label)
    for (label, mib), style in zip((marks or {}).items(), ("-", "--")):
        ax.axvline(mib, color="grey", ls=style, lw=0.8, label=label)
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(plt.FormatStrFormatter("%g"))
    ax.set_xlabel("segment size, MiB of float32 values")
    ax.set_ylabel("ms per iteration")
    return finish(ax, title)


def sweep_summary(sweep, timings: dict, floor=None) -> list[str]:
    """The segment sweep, one number a sentence: fastest, half of L2 against fused and floor, control."""
    default = timings["segments of 0.5 x L2"]
    fastest = sweep.loc[int(np.argmin([t.median_ms for t in sweep["iteration"]]))]
    largest = sweep.iloc[-1]
    lines = [f"fastest by median: {fastest['variant']} ({int(fastest['segments'])} segment(s))"]
    lines.append(verdicts.compare(default, timings["fused (no segments)"]).sentence(
        "blocked, half of L2", "fused"))
    if floor is not None:
        lines.append(verdicts.compare(default, floor).sentence("blocked, half of L2", "the gather floor"))
    lines.append(verdicts.compare(timings[largest["variant"]], default).sentence(
        f"{int(largest['segments'])} segment(s) of {largest['MiB of values']:.0f} MiB", "half of L2"))
    return lines


def t4_model(graphs: dict):
    """A Tesla T4 by its datasheet, never measured: per graph (label -> (vertices, edges, sectors per edge))
    the vector against its L2, the byte model, the gather, the blocked bound, ``driver.choose``'s pick."""
    segment = floors.T4_SEGMENT
    rows = []
    for label, (n, e, sectors) in graphs.items():
        model = floors.t4_expectation(n, e, sectors)
        rows.append({"graph": label, "vector / a T4's L2": 4 * n / floors.T4_L2_BYTES,
                     "byte model ms": model["byte model ms"],
                     "gather, all from L2 ms": model["gather from L2 ms (model, best case)"],
                     "gather, all from DRAM ms": model["gather from DRAM ms (model)"],
                     "blocked ms (at most)": model["blocked ms (model, at most)"],
                     "pg.choose on a T4": "fused" if 4 * n <= floors.T4_L2_BYTES // 2
                     else "times blocked against fused",
                     "segments of 2 MiB": -(-n // segment)})
    table = pd.DataFrame(rows)
    table.attrs.update(gpu=floors.T4_NAME, note="a model at 320 GB/s, not a measurement")
    return table
