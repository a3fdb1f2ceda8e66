"""Plumbing for lectures 13 and 14: the six-versions report's claims against its own table and this GPU,
controls timed in one set of paired trials, the busiest lane of the hybrid and the bins, float32 accuracy."""
from __future__ import annotations

import numpy as np
import pandas as pd

from helpers import driver, kernels
from helpers.core import generators
from helpers.core.arguments import check_seed, host_array
from helpers.driver import baselines
from helpers.driver.floors import BYTES_MODEL, WARP, bytes_per_iteration
from helpers.lectures.l10_instruments import by_warp, in_degrees
from helpers.measure import results, verdicts
from helpers.measure.cpu import cpu_ms as time_cpu
from helpers.measure.figures import finish, grouped_bars, new_axes, plot_medians_with_ranges
from helpers.measure.gpu import Timing, device_facts, in_own_context, require_gpu, time_paired

WHOLE = "whole graph"                 # the graph as loaded
HUBLESS = "without hub in-links"      # generators.without_hub_in_links: the control of lectures 13 and 14
GRAPHS = (WHOLE, HUBLESS)

# Its Table 6.2 (its figures, on its GPU): milliseconds for 100 iterations on random graphs of average
# degree 5; vertices -> (its O(N^2) CPU scan, "CPU Naive"; its version 6, "GPU Warp").
SIX_VERSIONS_MS = {1_000: (2_450.0, 100.0), 5_000: (62_300.0, 2_180.0), 10_000: (251_000.0, 7_950.0),
                   50_000: (6_285_000.0, 198_000.0)}
SIX_VERSIONS_ITERATIONS = 100
SIX_VERSIONS_DEGREE = 5
SIX_VERSIONS_GPU = "RTX 3080"
SIX_VERSIONS_PEAK_GBS = 760.0         # "Theoretical Peak: 760 GB/s"
SIX_VERSIONS_SHARE = 0.85             # "Efficiency: 85%"


def growth_exponent(sizes, times) -> float:
    """k in time ~ size^k: the slope of the least-squares line through (log size, log time)."""
    sizes, times = host_array(sizes, "sizes", ndim=1), host_array(times, "times", ndim=1)
    return float(np.polyfit(np.log(np.asarray(sizes, float)), np.log(np.asarray(times, float)), 1)[0])


def six_versions_claims():
    """Per size of the report's table: its ms per iteration and speedup over its O(N^2) CPU scan, the byte
    model's bytes, the bandwidth its time implies, and an iteration's time at 85% of its GPU's peak."""
    rows = []
    for n, (cpu_ms, gpu_ms) in SIX_VERSIONS_MS.items():
        per_iteration = gpu_ms / SIX_VERSIONS_ITERATIONS
        nbytes = bytes_per_iteration(n, SIX_VERSIONS_DEGREE * n)
        implied = nbytes / (per_iteration * 1e-3) / 1e9
        rows.append({"vertices": n, "edges": SIX_VERSIONS_DEGREE * n,
                     "their ms per iteration": per_iteration, "their speedup": cpu_ms / gpu_ms,
                     "bytes per iteration": nbytes, "GB/s their time implies": implied,
                     "share of their peak": implied / SIX_VERSIONS_PEAK_GBS,
                     "us per iteration at 85%": nbytes / (SIX_VERSIONS_SHARE * SIX_VERSIONS_PEAK_GBS * 1e3)})
    frame = pd.DataFrame(rows)
    frame.attrs.update(graph=f"the report's random graphs, average degree {SIX_VERSIONS_DEGREE}",
                       note=f"their figures, on their {SIX_VERSIONS_GPU} ({SIX_VERSIONS_PEAK_GBS:.0f} GB/s "
                            f"peak); bytes by the course's byte model, {BYTES_MODEL} per iteration")
    return frame


def six_versions_reading(claims) -> list[str]:
    """The claims table in four lines, one number each."""
    cpu = [SIX_VERSIONS_MS[n][0] / SIX_VERSIONS_ITERATIONS for n in claims["vertices"]]
    best = float(claims["GB/s their time implies"].max())
    last = claims.iloc[-1]
    return [f"the mean of their four speedups is {claims['their speedup'].mean():.1f}x: the '29x' is an "
            "average of ratios, each against an O(N^2) scan",
            f"their CPU scan's time grows as N^{growth_exponent(claims['vertices'], cpu):.1f}, and so does "
            f"their GPU's (N^{growth_exponent(claims['vertices'], claims['their ms per iteration']):.1f}), "
            f"although a pull's work grows with E = {SIX_VERSIONS_DEGREE}N",
            f"the highest bandwidth their own times imply is {best * 1e3:.2g} MB/s, a share of "
            f"{best / SIX_VERSIONS_PEAK_GBS:.1e} of their GPU's peak",
            f"at 85% of that peak, an iteration of their {int(last['vertices']):,}-vertex graph would take "
            f"{last['us per iteration at 85%']:.1f} us; their table says "
            f"{last['their ms per iteration']:,.0f} ms"]


def six_versions_variant():
    """The report's kernel as a driver Variant, a thread per vertex, from the source in force."""
    return driver.Variant("pull_hybrid_six_versions", "contributions",
                          driver.pull_launcher("pull_hybrid_six_versions"), ("pull_hybrid_six_versions",))


def in_own_process(function, *args):
    """``function(*args)`` in a process with its own CUDA context, or how it crashed: the report's full-mask
    shuffle inside a branch is undefined, and a trap then loses that context only, not the notebook's."""
    try:
        return in_own_context(function, *args, time_limit=600)
    except Exception as error:                   # a CUDA error from the kernel, or the process died
        return f"the kernel crashed its own process's GPU context: {type(error).__name__}: {error}"


def six_versions_pulled(source: str, graph, x: np.ndarray) -> np.ndarray:
    """What one launch of the report's kernel (from ``source``) writes over NaN, on ``graph`` with ``x``."""
    cp = require_gpu()
    kernels.define(source)
    y = cp.full(graph.num_vertices, cp.nan, dtype=cp.float32)
    six_versions_variant()(driver.DeviceGraph(graph), cp.asarray(x), y)
    return y.get()


def six_versions_verified(source: str) -> str | None:
    """``driver.verify`` on the report's kernel (from ``source``): None where it passes, else why not."""
    kernels.define(source)
    try:
        driver.verify(six_versions_variant(), quiet=True)
    except driver.VerificationError as error:
        return str(error)
    return None


def six_versions_at_their_sizes(six_versions, sizes=(1_000, 10_000, 50_000), *, seed: int = 42,
                                trials: int = 15):
    """The report's kernel here at its sizes: bits and paired times against pull_contrib, and NumPy's."""
    seed = check_seed(seed, rng=False)
    cp = require_gpu()
    peak = device_facts().peak_bandwidth_gbs
    rows = []
    for n in sizes:
        graph = generators.random_graph(n, SIX_VERSIONS_DEGREE, seed=seed)
        dg = driver.DeviceGraph(graph)
        x = cp.asarray(np.random.default_rng(seed).random(n).astype(np.float32))
        theirs, ours = (cp.full(n, cp.nan, dtype=cp.float32) for _ in range(2))
        driver.variant(six_versions)(dg, x, theirs)
        driver.variant("pull_contrib")(dg, x, ours)
        timed = time_paired({"theirs": driver.make_iteration(dg, six_versions).run,
                             "pull_contrib": driver.make_iteration(dg, "pull_contrib").run}, trials=trials)
        ranks = np.full(n, 1.0 / n)
        cpu = time_cpu(lambda: baselines.numpy_step(graph, ranks), repeat=5)
        ms = timed["theirs"].median_ms
        gbs = bytes_per_iteration(n, graph.num_edges) / (ms * 1e-3) / 1e9
        rows.append({"vertices": n, "edges": graph.num_edges, "max in-degree": int(graph.in_degree.max()),
                     "same bits as pull_contrib": bool(cp.array_equal(theirs, ours)),
                     "iteration": timed["theirs"], "pull_contrib iteration": timed["pull_contrib"],
                     "against pull_contrib": verdicts.compare(timed["theirs"], timed["pull_contrib"]).word,
                     "GB/s (byte model)": gbs, "share of this GPU's peak": gbs / peak,
                     "NumPy iteration (CPU)": cpu, "speedup over NumPy": cpu.median_ms / ms})
    frame = pd.DataFrame(rows)
    frame.attrs.update(gpu=device_facts().name,
                       graph=f"random graphs of average degree {SIX_VERSIONS_DEGREE} (seed {seed}), "
                             "as in the report",
                       timing=f"whole iterations, CUDA events, {trials} paired trials of 20 back to back; "
                              "the NumPy iteration: wall clock, 5 runs",
                       note=f"GB/s by the byte model {BYTES_MODEL}; this GPU's peak {peak:,.0f} GB/s")
    return frame


def six_versions_measured_reading(measured) -> list[str]:
    """The measured table in plain lines, one number each."""
    first, last = measured.iloc[0], measured.iloc[-1]
    n = int(last["vertices"])
    times = [t.median_ms for t in measured["iteration"]]
    k = growth_exponent(measured["vertices"], times)
    span = f"from {int(first['vertices']):,} to {n:,} vertices"
    lines = [f"here, their kernel's whole iteration barely grows with N {span} (as N^{k:.2f}): at these "
             "sizes something other than the graph's size sets its time (this lecture does not test what)"
             if k < 0.1 else f"here, their kernel's whole iteration grows as N^{k:.1f} {span}"]
    if n in SIX_VERSIONS_MS:
        theirs = SIX_VERSIONS_MS[n][1] / SIX_VERSIONS_ITERATIONS
        lines.append(f"at {n:,} vertices it takes {results.one_sample(times[-1] * 1e3)} us per iteration; "
                     f"their table says {theirs:,.0f} ms")
    share = results.one_sample(100 * last["share of this GPU's peak"])
    speedup = results.one_sample(last["speedup over NumPy"])
    lines += [f"at {n:,} vertices it moves bytes at {share}% of this GPU's peak, by the byte model",
              f"at {n:,} vertices it is about {speedup}x as fast as the course's NumPy iteration on this CPU "
              "(an O(E) loop, not an O(N^2) scan)"]
    return lines


def plot_six_versions(claims, measured, ax=None):
    """Time per iteration against vertices, log-log: the report's table and its kernel measured here."""
    ax = new_axes(ax, (6.5, 3.4))
    sizes = list(SIX_VERSIONS_MS)
    cpu = [SIX_VERSIONS_MS[n][0] / SIX_VERSIONS_ITERATIONS for n in sizes]
    ax.loglog(sizes, cpu, "s--", color="tab:gray", label="their O(N^2) CPU scan (their table)")
    ax.loglog(claims["vertices"], claims["their ms per iteration"], "o--", color="tab:orange",
              label=f"their version 6 on their {SIX_VERSIONS_GPU} (their table)")
    plot_medians_with_ranges(ax, measured["vertices"], measured["iteration"], capsize=0, color="tab:blue",
                             label="their kernel, whole iteration, measured on "
                                   f"{measured.attrs.get('gpu', 'this GPU')}")
    ax.set_xlabel("vertices (random graph, average degree 5)")
    ax.set_ylabel("ms per iteration")
    return finish(ax)


def time_on_graphs(kernel_names, graphs: dict, *, launches: int = 20, trials: int = 15) -> dict:
    """Each kernel on each graph (label -> (DeviceGraph, x)) in ONE paired set: (kernel, graph) -> Timing."""
    cp = require_gpu()
    runs = {}
    for label, (dg, x) in graphs.items():
        y = cp.empty(dg.num_vertices, dtype=cp.float32)
        for name in kernel_names:
            v = driver.variant(name)
            runs[(v.name, label)] = lambda v=v, dg=dg, x=x, y=y: v(dg, x, y)
    return time_paired(runs, launches=launches, trials=trials)


def _labels(timings: dict) -> tuple[list, list]:
    return list(dict.fromkeys(k for k, _ in timings)), list(dict.fromkeys(g for _, g in timings))


def _ratio_word(v: verdicts.Verdict) -> str:
    return f"{v.ratio:.3g} ({v.word})"


def control_table(timings: dict, baseline: str, *, hub_in_links: int | None = None):
    """Per kernel: its time on each graph and over ``baseline``'s, on the first graph over the second (each
    with the verdict), and the ms the removed in-links add (per in-link of the largest hub if given)."""
    kernels, graphs = _labels(timings)
    first, second = graphs[0], graphs[1]
    rows = []
    for k in kernels:
        row = {"kernel": k, **{g: timings[(k, g)] for g in graphs}}
        for g in graphs:
            versus = verdicts.compare(timings[(k, g)], timings[(baseline, g)])
            row[f"/ {baseline}, {g}"] = "-" if k == baseline else _ratio_word(versus)
        row[f"{first} / {second}"] = _ratio_word(verdicts.compare(timings[(k, first)], timings[(k, second)]))
        added = float(np.median(timings[(k, first)].samples_ms - timings[(k, second)].samples_ms))
        row["in-links removed add, ms"] = added
        if hub_in_links:
            row["per in-link of the largest hub, ns"] = added * 1e6 / hub_in_links
        rows.append(row)
    frame = pd.DataFrame(rows)
    trials = timings[(kernels[0], first)].samples_ms.size
    frame.attrs.update(timing=f"the sum over in-links, CUDA events; {trials} paired trials of 20 launches "
                              "back to back, every kernel and graph in each trial; ratios: geometric means "
                              "of the paired ratios, verdicts by helpers.measure.verdicts")
    return frame


def control_sentences(timings: dict, baseline: str) -> list[str]:
    """A control table's verdicts in words: against ``baseline`` on each graph, then second graph vs first."""
    kernels, graphs = _labels(timings)
    lines = []
    for k in kernels:
        for g in graphs:
            if k != baseline:
                v = verdicts.compare(timings[(k, g)], timings[(baseline, g)])
                lines.append(f"{g}: {v.sentence(k, baseline)}")
        v = verdicts.compare(timings[(k, graphs[1])], timings[(k, graphs[0])])
        lines.append(f"control: {v.sentence(f'{k} {graphs[1]}', f'on the {graphs[0]}')}")
    return lines


def gap_verdict(timings: dict, kernel: str, baseline: str) -> verdicts.Verdict:
    """The verdict on kernel/baseline per trial on the first graph against the second ('slower': larger)."""
    _, (first, second) = _labels(timings)
    ratios = [timings[(kernel, g)].samples_ms / timings[(baseline, g)].samples_ms for g in (first, second)]
    pairing = timings[(kernel, first)].pairing
    return verdicts.compare(Timing.of(ratios[0], pairing), Timing.of(ratios[1], pairing))


def gap_sentence(gap: verdicts.Verdict, kernel: str, baseline: str, graphs=GRAPHS) -> str:
    """``gap_verdict`` in words, one number."""
    what = f"{kernel}'s time over {baseline}'s"
    if gap.word in ("faster", "slower"):
        size = "larger" if gap.word == "slower" else "smaller"
        return f"{what} is about {gap.times_rounded}x {size} on the {graphs[0]} than {graphs[1]}"
    if gap.word == "no measurable difference":
        return f"{what} is the same on the {graphs[0]} and {graphs[1]} (within {verdicts.MARGIN:.0%})"
    return f"{what}: {gap.trials} trials do not settle whether it changes by more than {verdicts.MARGIN:.0%}"


def plot_control(timings: dict, ax=None, title: str = ""):
    """Grouped horizontal bars: each kernel's time on each graph (median; whiskers: the range)."""
    kernels, graphs = _labels(timings)
    ax = new_axes(ax, (7, 0.3 * len(kernels) * len(graphs) + 1.4))
    grouped_bars(ax, kernels, {g: [timings[(k, g)] for k in kernels] for g in graphs},
                 ("tab:blue", "tab:orange", "tab:green", "tab:red"))
    ax.set_xlabel("sum over in-links, ms (median; whiskers: fastest to slowest trial)")
    return finish(ax, title)


CHILD_VERDICTS = {"faster": "; the child grids paid for themselves",
                  "slower": "; the child grids did not pay for themselves",
                  "no measurable difference": "; the child grids neither paid nor cost", "not settled": ""}


def child_grid_table(timings: dict, child_grids: dict, no_child: dict):
    """pull_dynamic's paired launches ((threshold, graph) -> Timing): child grids, time over the graph's
    launch without any (``no_child``: graph -> threshold) with the verdict, net us per child grid."""
    rows = []
    for (threshold, graph), timing in timings.items():
        base, children = timings[(no_child[graph], graph)], child_grids[(threshold, graph)]
        extra = float(np.median(timing.samples_ms - base.samples_ms))
        baseline = threshold == no_child[graph]
        rows.append({"graph": graph, "threshold": threshold, "child grids": children, "time": timing,
                     "/ no child grid": "-" if baseline else _ratio_word(verdicts.compare(timing, base)),
                     "net us per child grid": extra * 1e3 / children if children else float("nan")})
    frame = pd.DataFrame(rows)
    frame.attrs.update(timing=f"pull_dynamic alone, CUDA events; {timing.samples_ms.size} paired trials, "
                              "every launch in each trial; verdicts by helpers.measure.verdicts")
    return frame


def child_grid_sentences(timings: dict, child_grids: dict, no_child: dict) -> list[str]:
    """Each launch with child grids against its graph's launch without any, in words."""
    lines = []
    for (threshold, graph), timing in timings.items():
        children = child_grids[(threshold, graph)]
        if threshold == no_child[graph] or not children:
            continue
        v = verdicts.compare(timing, timings[(no_child[graph], graph)])
        lines.append(f"{graph}, threshold {threshold} ({children:,} child grids): "
                     f"{v.sentence('the launch with them', 'the launch without')}{CHILD_VERDICTS[v.word]}")
    return lines


def busiest_lane_hybrid(in_degree, threshold: int = 32) -> np.ndarray:
    """In-links walked by each warp's busiest lane in pull_hybrid: its longest light list (a thread each),
    then a 32-way share of each heavy list in turn (the warp waits for its busiest lane at every shuffle)."""
    d = by_warp(in_degrees(in_degree), WARP)
    heavy = d > threshold
    return np.where(heavy, 0, d).max(axis=1) + np.where(heavy, -(-d // WARP), 0).sum(axis=1)


def busiest_lane_binned(in_degree, thread_max: int = 32, warp_max: int = 1024,
                        block: int = 256) -> np.ndarray:
    """In-links walked by each warp's busiest lane in pull_binned: light vertices 32 to a warp (in order), a
    warp per medium vertex, a block per heavy one (its warp w starts at in-link 32w, strides by the block)."""
    d = in_degrees(in_degree)
    light, heavy = d[d < thread_max], d[d >= warp_max]
    medium = d[(d >= thread_max) & (d < warp_max)]
    first = WARP * np.arange(block // WARP)                      # each warp's first in-link in a block
    per_block = -(-np.maximum(heavy[:, None] - first, 0) // block)
    parts = [by_warp(light, WARP).max(axis=1) if light.size else np.zeros(0, np.int64), -(-medium // WARP),
             per_block.ravel()]
    return np.concatenate(parts)


def largest_relative_error(spmv, dg, vector: np.ndarray) -> float:
    """The largest relative error of one sum over in-links of float32 ``vector`` against float64."""
    cp = require_gpu()
    if dg.graph is None:
        raise ValueError(f"{dg.name} has no host graph to compute the float64 product with")
    y = cp.full(dg.num_vertices, cp.nan, dtype=cp.float32)
    driver.variant(spmv)(dg, cp.asarray(vector, dtype=cp.float32), y)
    exact = dg.graph.in_matrix @ np.asarray(vector, dtype=np.float64)
    return float(np.max(np.abs(y.get() - exact) / np.maximum(np.abs(exact), 1e-30)))
