"""The CPU this process runs on, and wall-clock timing of CPU steps."""
import os
import platform
import time
from functools import lru_cache

from helpers.measure.gpu import Timing, interleaved


@lru_cache(maxsize=None)
def cpu_description() -> str:
    """The CPU's model and the cores this process may use, e.g. 'AMD EPYC 7B13, 2 cores'."""
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as info:
            model = next((line.split(":", 1)[1].strip() for line in info if line.startswith("model name")),
                         model)
    except OSError:
        pass
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"{model}, {cores} core{'s' if cores != 1 else ''}"


def time_paired(runs: dict, *, trials: int = 7, warmup: int = 1) -> dict:
    """Wall-clock ms of CPU steps (name -> callable) after ``warmup`` untimed calls of each, ``interleaved``
    with a negative pairing id (never a GPU timing's)."""
    for run in runs.values():
        for _ in range(warmup):
            run()

    def sample(name) -> float:
        start = time.perf_counter()
        runs[name]()
        return 1e3 * (time.perf_counter() - start)

    return interleaved(runs, sample, trials=trials, sign=-1)


def cpu_ms(step, repeat: int = 3, warmup: int = 1) -> Timing:
    """Wall-clock milliseconds of ``step()`` on the CPU: ``warmup`` untimed calls, then ``repeat`` timed."""
    return time_paired({"step": step}, trials=repeat, warmup=warmup)["step"]
