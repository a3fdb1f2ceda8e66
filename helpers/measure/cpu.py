"""The CPU this process runs on, and wall-clock timing of a CPU step."""

import os
import platform
import time
from functools import lru_cache

from helpers.measure.gpu import Timing


@lru_cache(maxsize=None)
def cpu_description() -> str:
    """The CPU's model and the cores this process may use, e.g. 'AMD EPYC 7B13, 2 cores'."""
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as info:
            for line in info:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"{model}, {cores} core{'s' if cores != 1 else ''}"


def cpu_ms(step, repeat: int = 3, warmup: int = 1) -> Timing:
    """Wall-clock milliseconds of ``step()`` on the CPU: ``warmup`` untimed calls, then ``repeat`` timed."""
    for _ in range(warmup):
        step()
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        step()
        samples.append(1e3 * (time.perf_counter() - start))
    return Timing.of(samples)
