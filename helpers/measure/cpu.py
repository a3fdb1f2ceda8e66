"""The CPU this process runs on, what a run is on, and wall-clock timing of CPU steps."""
import contextlib
import os
import platform
import time
from functools import lru_cache

import numpy as np

from helpers.measure import gpu
from helpers.measure.gpu import Timing, interleaved


def usable_cores() -> int:
    """The cores this process may run on (its affinity where the system has one)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


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
    cores = usable_cores()
    return f"{model}, {cores} core{'s' if cores != 1 else ''}"


def header(*, device_count: bool = False, torch: bool = False) -> list[str]:
    """What a run is on: Python, NumPy, the CPU, the GPU (``device_count``: how many), its driver, CUDA, CuPy,
    and PyTorch's version if ``torch`` and it is installed."""
    status = gpu.gpu_status()
    lines = [f"Python {platform.python_version()}, NumPy {np.__version__}; CPU: {cpu_description()}",
             f"GPU: {status.description}"]
    if status.available:
        cp = gpu.require_gpu()
        runtime = cp.cuda.runtime
        count = f" x {runtime.getDeviceCount()}" if device_count else ""
        lines[-1] += (f"{count}; driver {runtime.driverGetVersion()}, CUDA runtime "
                      f"{runtime.runtimeGetVersion()}, CuPy {cp.__version__}")
        if torch:
            with contextlib.suppress(ImportError):
                import torch as pytorch
                lines[-1] += f", PyTorch {pytorch.__version__}"
    return lines


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
