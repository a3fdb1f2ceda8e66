"""CPU steps timed for comparison by the course's one verdict rule (``helpers.measure.verdicts``).

``time_paired`` is the CPU analogue of ``gpu.time_paired``: the steps are timed interleaved, trial by trial
in a rotating order, so that a slow spell of a shared machine hits them alike, and their Timings share a
pairing id. ``numba_thread_runs`` gives the multi-core Numba iteration on one thread and on every core as two
such steps; ``load_note`` says whether other processes were competing for the cores while timing;
``million_per_second`` and ``plot_medians_with_ranges`` turn Timings into rates and into a line with ranges.
"""
from __future__ import annotations

import itertools
import os
import time

import numpy as np

from helpers.core.arguments import ArgumentError, check_integer
from helpers.driver.baselines import numba_parallel
from helpers.measure.gpu import Timing

# Pairing ids of CPU measurements count down from -1, so they never equal an id gpu.time_paired hands out
# (those count up from 1): a CPU timing is never paired with a GPU timing by accident.
_cpu_pairings = itertools.count(-1, -1)


def usable_cores() -> int:
    """The cores this process may run on (its affinity where the system has one)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def time_paired(runs: dict, *, trials: int = 7, warmup: int = 1) -> dict:
    """Wall-clock milliseconds of several CPU steps measured side by side: ``warmup`` untimed calls of each,
    then ``trials`` trials, each timing every run once in a rotating order. Returns name -> Timing, all
    sharing one pairing id, so that ``verdicts.compare`` pairs trial i of one with trial i of another."""
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
    """The Numba iteration (``baselines.numba_parallel``) as two runs for ``time_paired``: on one thread and
    on every core, each run setting its thread count first. Returns (name -> run, description), or ({}, why)
    where Numba is missing. Each run returns the iteration's L1 change, to be checked against the reference."""
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
    """The 1-minute load average against the usable cores: a warning when more processes wanted to run
    than there are cores (every wall-clock time is then inflated, multi-core ones most)."""
    load, cores = os.getloadavg()[0], usable_cores()
    line = f"load average (1 min) {when}: {load:.1f} on {cores} cores"
    if load > cores:
        return line + (" -- more runnable processes than cores: every time is inflated and the multi-core "
                       "ones are not representative; re-run on a quiet machine")
    return line + ": fewer runnable processes than cores, the machine was not crowded"


def million_per_second(timing: Timing, count: float) -> Timing:
    """``count`` things (edges, say) done per trial of ``timing`` (milliseconds), as millions per second per
    trial: a rate with its own median and range, pairing kept."""
    return Timing(count / timing.samples_ms / 1e3, timing.pairing)


def plot_medians_with_ranges(ax, x, timings, **style):
    """One line through the medians of ``timings`` against ``x`` (sizes, say), with each Timing's fastest
    to slowest trial as an error bar. ``style`` goes to ``ax.errorbar`` (label, fmt, ...)."""

    median = np.array([t.median_ms for t in timings])
    below = median - np.array([t.min_ms for t in timings])
    above = np.array([t.max_ms for t in timings]) - median
    style = {"fmt": "o-", "capsize": 3, **style}
    return ax.errorbar(list(x), median, yerr=[below, above], **style)
