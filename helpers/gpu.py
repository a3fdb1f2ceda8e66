"""The GPU, asked for only when needed: is there one, what is it, and how to time work on it.

Nothing here imports CuPy at import time. ``require_gpu()`` returns CuPy or raises an error that says
what to do; the timing functions use CUDA events, warm up first and report the median of repeats.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

NO_GPU_ADVICE = ("On Colab: Runtime > Change runtime type > T4 GPU, then run the notebook again. "
                 "Elsewhere: a CUDA GPU with its driver and CuPy (pip install 'pagerank-gpu-course[gpu]').")


def _no_gpu(detail: str) -> str:
    """Why there is no GPU, what to do first and the technical detail last (a student reads the first line)."""
    return f"none. {NO_GPU_ADVICE} (Detail: {detail})"


class NoGPUError(RuntimeError):
    """Raised where a CUDA GPU is needed and there is none (or CuPy cannot reach it)."""


@dataclass(frozen=True)
class GpuStatus:
    available: bool
    description: str   # the GPU's name, or why there is none


@lru_cache(maxsize=None)
def gpu_status() -> GpuStatus:
    """Whether CuPy can reach a CUDA GPU, without raising (asked once per process)."""
    try:
        import cupy
    except ImportError:
        return GpuStatus(False, _no_gpu("CuPy is not installed, so every GPU lecture is skipped."))
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as error:  # no driver, no device, or a broken installation
        return GpuStatus(False, _no_gpu(f"CuPy cannot reach a CUDA device: {error}"))
    if count == 0:
        return GpuStatus(False, _no_gpu("no CUDA device is visible."))
    props = cupy.cuda.runtime.getDeviceProperties(0)
    name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    return GpuStatus(True, f"{name} (compute capability {props['major']}.{props['minor']})")


def has_gpu() -> bool:
    return gpu_status().available


def require_gpu():
    """CuPy, once it is certain that a GPU answers; otherwise NoGPUError with what to do."""
    status = gpu_status()
    if not status.available:
        raise NoGPUError(f"This needs a CUDA GPU. GPU: {status.description}")
    import cupy

    return cupy


@dataclass(frozen=True)
class DeviceFacts:
    name: str
    compute_capability: str
    multiprocessors: int
    l2_bytes: int
    memory_bytes: int
    memory_clock_khz: int
    bus_width_bits: int

    @property
    def peak_bandwidth_gbs(self) -> float:
        """Theoretical DRAM bandwidth: two transfers per memory clock (DDR) across the whole bus."""
        return 2.0 * self.memory_clock_khz * 1e3 * self.bus_width_bits / 8 / 1e9


def device_facts() -> DeviceFacts:
    """What the current device says of itself, read from its attributes (nothing typed in); read once per
    device, since drivers and launchers ask for it often (a launcher that asked every call cost ~1 ms)."""
    cp = require_gpu()
    return _device_facts(cp.cuda.Device().id)


@lru_cache(maxsize=None)
def _device_facts(device_id: int) -> DeviceFacts:
    cp = require_gpu()
    device = cp.cuda.Device(device_id)
    attributes = device.attributes
    props = cp.cuda.runtime.getDeviceProperties(device_id)
    name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    return DeviceFacts(
        name=name,
        compute_capability=f"{props['major']}.{props['minor']}",
        multiprocessors=attributes["MultiProcessorCount"],
        l2_bytes=attributes["L2CacheSize"],
        memory_bytes=device.mem_info[1],
        memory_clock_khz=attributes["MemoryClockRate"],
        bus_width_bits=attributes["GlobalMemoryBusWidth"],
    )


@dataclass(frozen=True)
class Timing:
    """Repeated measurements of one thing, in milliseconds: the median and the spread (min to max)."""
    median_ms: float
    min_ms: float
    max_ms: float
    samples_ms: np.ndarray

    @classmethod
    def of(cls, samples) -> "Timing":
        samples = np.asarray(samples, dtype=np.float64)
        return cls(float(np.median(samples)), float(samples.min()), float(samples.max()), samples)

    @property
    def spread_ms(self) -> float:
        return self.max_ms - self.min_ms

    def __str__(self) -> str:
        from .results import with_spread

        return with_spread(self.median_ms, self.min_ms, self.max_ms) + " ms"


def time_gpu(run, *, warmup: int = 3, repeat: int = 20) -> Timing:
    """Time ``run()`` (which launches GPU work) with CUDA events, one call at a time: ``warmup`` untimed calls,
    then ``repeat`` timed ones. Each sample includes the time the GPU waits for the host to issue the work,
    so for short kernels it is the launch as a user sees it; ``time_back_to_back`` measures the GPU's time."""
    cp = require_gpu()
    for _ in range(warmup):
        run()
    cp.cuda.get_current_stream().synchronize()
    samples = []
    for _ in range(repeat):
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        run()
        stop.record()
        stop.synchronize()
        samples.append(cp.cuda.get_elapsed_time(start, stop))
    return Timing.of(samples)


def time_back_to_back(run, *, launches: int = 20, trials: int = 7, warmup: int = 3) -> Timing:
    """Milliseconds per ``run()`` when ``launches`` calls are issued back to back between two CUDA events,
    in each of ``trials`` trials (median and spread over the trials). As long as each call keeps the GPU busy
    longer than the host takes to issue the next, the GPU never waits and this is the GPU's time per call;
    for a very short kernel, or a call made of several short launches, it is the host's issue rate instead."""
    cp = require_gpu()
    for _ in range(warmup):
        run()
    cp.cuda.get_current_stream().synchronize()
    samples = []
    for _ in range(trials):
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        for _ in range(launches):
            run()
        stop.record()
        stop.synchronize()
        samples.append(cp.cuda.get_elapsed_time(start, stop) / launches)
    return Timing.of(samples)


def free_bytes() -> int:
    """Device memory this process can still allocate: free on the device plus what CuPy's pool holds unused,
    within the pool's limit when one is set (``cupy.get_default_memory_pool().set_limit``)."""
    cp = require_gpu()
    pool = cp.get_default_memory_pool()
    free = cp.cuda.Device().mem_info[0] + pool.free_bytes()
    limit = pool.get_limit()
    if limit:
        free = min(free, limit - pool.used_bytes())
    return int(max(free, 0))


def measure_copy_bandwidth(nbytes: int = 512 * 2**20, repeat: int = 20) -> float:
    """Device-to-device copy bandwidth in GB/s, counting bytes read plus bytes written (median)."""
    cp = require_gpu()
    nbytes = int(min(nbytes, free_bytes() // 4))
    source = cp.empty(nbytes // 4, dtype=cp.float32)
    source.fill(1.0)
    target = cp.empty_like(source)
    timing = time_back_to_back(lambda: cp.copyto(target, source), launches=5, trials=repeat)
    del source, target
    return 2 * (nbytes // 4 * 4) / (timing.median_ms * 1e-3) / 1e9
