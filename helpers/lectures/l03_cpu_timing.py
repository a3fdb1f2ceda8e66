"""CPU steps timed interleaved for the verdict rule (``helpers.measure.verdicts``), the Numba iteration on one
thread and on every core, the machine's load."""
from __future__ import annotations

import os

from helpers.core.arguments import ArgumentError, check_integer
from helpers.driver.baselines import numba_parallel
from helpers.measure import cpu
from helpers.measure.cpu import usable_cores


def time_paired(runs: dict, *, trials: int = 7, warmup: int = 1) -> dict:
    """``measure.cpu.time_paired``, its arguments checked: name -> Timing, one negative pairing id for all."""
    if not isinstance(runs, dict) or not runs:
        raise ArgumentError(f"runs must be a non-empty dict of name -> callable, got {runs!r}")
    for name, run in runs.items():
        if not callable(run):
            raise ArgumentError(f"runs[{name!r}] must be callable, got {type(run).__name__}")
    trials = check_integer(trials, "trials", minimum=2)          # a confidence interval needs two pairs
    return cpu.time_paired(runs, trials=trials, warmup=check_integer(warmup, "warmup", minimum=0))


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
