"""CPU steps timed interleaved for the verdict rule (``helpers.measure.verdicts``), the Numba iteration on one
thread and on every core, the machine's load; Timings as rates, and the lectures' plots of Timings."""
from __future__ import annotations

import itertools
import os
import time

import matplotlib.pyplot as plt
import numpy as np

from helpers.core.arguments import ArgumentError, check_integer
from helpers.driver.baselines import numba_parallel
from helpers.measure.gpu import Timing
from helpers.measure.results import log_scale

# CPU pairing ids count down from -1, gpu.time_paired's up from 1: a CPU timing never pairs with a GPU one.
_cpu_pairings = itertools.count(-1, -1)


def usable_cores() -> int:
    """The cores this process may run on (its affinity where the system has one)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def time_paired(runs: dict, *, trials: int = 7, warmup: int = 1) -> dict:
    """Wall-clock ms of CPU steps in rotating interleaved trials: name -> Timing, one pairing id for all."""
    if not isinstance(runs, dict) or not runs:
        raise ArgumentError(f"runs must be a non-empty dict of name -> callable, got {runs!r}")
    for name, run in runs.items():
        if not callable(run):
            raise ArgumentError(f"runs[{name!r}] must be callable, got {type(run).__name__}")
    trials = check_integer(trials, "trials", minimum=2)          # a confidence interval needs two pairs
    warmup = check_integer(warmup, "warmup", minimum=0)
    names = list(runs)
    for name in names:
        for _ in range(warmup):
            runs[name]()
    samples = {name: [] for name in names}
    for trial in range(trials):
        shift = trial % len(names)
        for name in names[shift:] + names[:shift]:
            start = time.perf_counter()
            runs[name]()
            samples[name].append(1e3 * (time.perf_counter() - start))
    pairing = next(_cpu_pairings)
    return {name: Timing.of(values, pairing) for name, values in samples.items()}


def numba_thread_runs(graph) -> tuple[dict, str]:
    """The Numba iteration on one thread and on every core: (name -> run, description), or ({}, why)."""
    try:
        import numba
    except ImportError:
        numba = None
    if numba is not None:                 # every core while compiling, so the description says how many
        numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    run, description = numba_parallel(graph)
    if run is None:
        return {}, description
    cores = numba.config.NUMBA_NUM_THREADS

    def on(threads):
        def timed():
            numba.set_num_threads(threads)
            return run()
        return timed

    runs = {"numba, 1 thread": on(1)}
    if cores > 1:
        runs[f"numba, {cores} threads"] = on(cores)
    return runs, description


def load_note(when: str) -> str:
    """The 1-minute load average against the usable cores, with a warning when it exceeds them."""
    load, cores = os.getloadavg()[0], usable_cores()
    line = f"load average (1 min) {when}: {load:.1f} on {cores} cores"
    if load > cores:
        return line + (" -- more runnable processes than cores: every time is inflated and the multi-core "
                       "ones are not representative; re-run on a quiet machine")
    return line + ": fewer runnable processes than cores, the machine was not crowded"


def per_second(timing: Timing, count: float, unit: float = 1e9) -> Timing:
    """``count`` things done in each trial of ``timing`` (ms), per second in ``unit``s: a Timing of rates."""
    return Timing.of(count / timing.samples_ms / (unit / 1e3), timing.pairing)


def million_per_second(timing: Timing, count: float) -> Timing:
    """``per_second`` in millions."""
    return per_second(timing, count, 1e6)


def medians_and_ranges(timings) -> tuple[np.ndarray, np.ndarray]:
    """The Timings' medians and their fastest-to-slowest ranges as error bars (2 x n, below and above)."""
    median = np.array([t.median_ms for t in timings])
    return median, np.vstack([median - [t.min_ms for t in timings], [t.max_ms for t in timings] - median])


def plot_medians_with_ranges(ax, x, timings, **style):
    """A line through the Timings' medians against ``x``, their ranges as error bars (errorbar ``style``)."""
    median, ranges = medians_and_ranges(timings)
    return ax.errorbar(list(x), median, yerr=ranges, **{"fmt": "o-", "capsize": 3, **style})


def grouped_bars(ax, rows, groups: dict, colours) -> None:
    """Horizontal bars of Timings (label -> one per row; median, whiskers the range), grouped by row."""
    height = 0.8 / len(groups)
    for i, ((label, timings), colour) in enumerate(zip(groups.items(), colours)):
        median, spread = medians_and_ranges(timings)
        ax.barh(np.arange(len(rows)) + (i - (len(groups) - 1) / 2) * height, median, height, xerr=spread,
                color=colour, label=label, ecolor="black", capsize=2)
    ax.set_yticks(np.arange(len(rows)), rows)
    ax.invert_yaxis()
    log_scale(ax, "x")


def new_axes(ax, figsize):
    """``ax``, or the axes of a new figure of ``figsize``."""
    return ax if ax is not None else plt.subplots(figsize=figsize)[1]


def finish(ax, title: str = "", legend: bool = True, **legend_style):
    """A lecture plot's last touches: a small title and legend, a tight layout."""
    ax.set_title(title, fontsize=8)
    if legend:
        ax.legend(fontsize=7, **legend_style)
    ax.figure.tight_layout()
    return ax
