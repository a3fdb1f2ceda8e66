"""The GPU, asked for only when needed: is there one, what is it, and how to time work on it.

Nothing here imports CuPy at import time. ``require_gpu()`` returns CuPy or raises an error that says
what to do; the timing functions use CUDA events, warm up first and report the median of repeats.
"""
from __future__ import annotations

import contextlib
import multiprocessing
import os
import pickle
import signal
import sys
import time
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from helpers.core.arguments import host_array
from helpers.core.graph import GraphTooLargeError
from helpers.measure.results import with_spread

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


class ChildDiedError(RuntimeError):
    """A function run in its own process (``in_own_context``) ended without an answer: killed at its time
    limit, or crashed outright."""


_WORKER: list = []      # the kept child process and this end of its pipe, while its CUDA context is sound


def in_own_context(function, *args, time_limit: float | None = None, **kwargs):
    """``function(*args, **kwargs)`` in a child Python process with its own CUDA context: a kernel that
    faults there (an illegal address; a full-mask shuffle that a named lane never reaches, which traps on
    some GPUs) or hangs loses that context only, and this process's GPU and arrays go on working. Returns
    what it returns, raises what it raises (ChildDiedError where no answer comes within ``time_limit`` s).
    The function and arguments cross by pickle (a module-level function; arrays, strings). The child starts
    once (a new interpreter, CuPy, a context: about 2 s) and is kept while its context stays sound."""
    if not _WORKER:
        _WORKER.extend(_start())
    child, pipe = _WORKER
    try:
        pipe.send((function, args, kwargs))
        if not pipe.poll(time_limit):
            _discard(wait_s=0)
            raise ChildDiedError(f"{_name(function)} gave no answer within {time_limit:g} s: its process "
                                 "was stopped")
        ok, value, sound = pipe.recv()
    except (EOFError, OSError, BrokenPipeError):
        child.join(10)
        code = child.exitcode
        _discard()
        raise ChildDiedError(f"{_name(function)}'s process ended without an answer (exit code {code})") \
            from None
    except BaseException:                              # a Ctrl-C here: the child may still be running it
        _discard(wait_s=0)
        raise
    if not sound:
        _discard()
    if ok:
        return value
    raise value


def _start():

    spawn = multiprocessing.get_context("spawn")      # a fork would inherit this process's CUDA state
    pipe, theirs = spawn.Pipe()
    child = spawn.Process(target=_serve, args=(theirs,), daemon=True)
    child.start()
    theirs.close()
    return child, pipe


def _discard(wait_s: float = 5.0) -> None:
    """End the kept child (after a fault, a time-out or a Ctrl-C); the next call starts a fresh one."""
    if _WORKER:
        child, pipe = _WORKER
        _WORKER.clear()
        pipe.close()
        child.join(wait_s)                             # after a fault it exits by itself once it answered
        if child.is_alive():
            child.kill()
            child.join()


def _name(function) -> str:
    return getattr(function, "__qualname__", repr(function))


def _serve(pipe) -> None:
    """The child: answer calls until the pipe closes or the CUDA context is no longer sound."""

    signal.signal(signal.SIGINT, signal.SIG_IGN)       # a Ctrl-C is the parent's to handle
    while True:
        try:
            function, args, kwargs = pipe.recv()
        except (EOFError, OSError):
            return
        try:
            reply = (True, function(*args, **kwargs))
        except BaseException as error:                 # noqa: B036 - everything goes back to the parent
            reply = (False, error)
        sound = _context_sound()
        pipe.send(_sendable(reply) + (sound,))
        if not sound:
            os._exit(0)                                # skip the teardown a hung kernel would block


def _sendable(reply: tuple) -> tuple:
    """(True, value) or (False, exception), as it will unpickle in the parent."""

    try:
        pickle.loads(pickle.dumps(reply))
        return reply
    except Exception:                                  # e.g. an exception class whose arguments changed
        ok, value = reply
        return (False, RuntimeError(f"returned a {type(value).__name__}, which cannot be sent back" if ok
                                    else f"{type(value).__name__}: {value}"))


def _context_sound(wait_s: float = 2.0) -> bool:
    """Whether this process's CUDA context (if it has one) is idle and unharmed: no sticky error from a
    fault, no kernel still running."""

    cp = sys.modules.get("cupy")
    if cp is None:
        return True
    try:
        cp.get_default_memory_pool().free_all_blocks()
        return queue_finished(cp, wait_s)
    except Exception:                                  # the context is lost: every call raises
        return False


CUDA_NOT_READY = 600        # cudaErrorNotReady: the queued work is still running


def queue_finished(cp, time_limit: float) -> bool:
    """Wait for the work queued so far on the current stream, at most ``time_limit`` s: True when it
    finished, False past the limit. Polls an event, since a blocking wait cannot be cut short; a kernel's
    error (an illegal address) is raised as CuPy raises it."""

    event = cp.cuda.Event(disable_timing=True)
    event.record()
    deadline, pause = time.monotonic() + time_limit, 1e-4
    while True:
        status = cp.cuda.runtime.eventQuery(event.ptr)
        if status == 0:
            return True
        if status != CUDA_NOT_READY:
            event.synchronize()                        # raises the CUDA error the status stands for
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(pause)
        pause = min(2 * pause, 0.01)


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


@dataclass(frozen=True, eq=False)
class Timing:
    """Repeated measurements of one thing in milliseconds (or another unit): the samples, their median and
    range. Timings measured together by ``time_paired`` share a ``pairing`` id, so that a comparison can
    pair trial i of one with trial i of the other (``helpers.measure.verdicts``)."""
    samples_ms: np.ndarray
    pairing: int | None = None

    @classmethod
    def of(cls, samples, pairing: int | None = None) -> "Timing":
        samples = np.asarray(host_array(samples, "samples"), dtype=np.float64).ravel()
        if samples.size == 0 or not np.isfinite(samples).all():
            raise ValueError(f"a Timing needs finite samples, got {samples!r}")
        return cls(samples, pairing)

    @property
    def median_ms(self) -> float:
        return float(np.median(self.samples_ms))

    @property
    def min_ms(self) -> float:
        return float(self.samples_ms.min())

    @property
    def max_ms(self) -> float:
        return float(self.samples_ms.max())

    def scaled(self, factor: float) -> "Timing":
        """The same measurement in another unit or per another count (e.g. per iteration)."""
        return Timing(self.samples_ms * factor, self.pairing)

    def __str__(self) -> str:

        return with_spread(self.median_ms, self.min_ms, self.max_ms) + " ms"


def _benchmark(run, repeat: int, warmup: int) -> np.ndarray:
    """Milliseconds of each of ``repeat`` calls of ``run`` between CUDA events (cupyx.profiler.benchmark),
    after ``warmup`` untimed calls (the first launch of a kernel compiles it)."""
    cp = require_gpu()
    from cupyx.profiler import benchmark

    for _ in range(warmup):
        run()
    cp.cuda.get_current_stream().synchronize()
    return benchmark(run, n_repeat=repeat, n_warmup=0).gpu_times[0] * 1e3


def time_gpu(run, *, warmup: int = 3, repeat: int = 20) -> Timing:
    """Time ``run()`` one call at a time between CUDA events. Each sample includes the time the GPU waits for
    the host to issue the work: for short kernels, the launch as a caller sees it."""
    return Timing.of(_benchmark(run, repeat, warmup))


def _back_to_back(run, launches: int):
    def many():
        for _ in range(launches):
            run()
    return many


def time_back_to_back(run, *, launches: int = 20, trials: int = 7, warmup: int = 3) -> Timing:
    """Milliseconds per ``run()`` when ``launches`` calls go back to back between two CUDA events, in each of
    ``trials`` trials. While each call keeps the GPU busy longer than the host takes to issue the next, this is
    the GPU's time per call; for very short calls it is the host's issue rate instead."""
    return Timing.of(_benchmark(_back_to_back(run, launches), trials, warmup) / launches)


_pairings = iter(range(1, 2**62))


def time_paired(runs: dict, *, launches: int = 20, trials: int = 15, warmup: int = 3, streams=None) -> dict:
    """Time several things interleaved: in every trial each of ``runs`` (name -> callable) is timed back to
    back once, in a rotating order, so that slow spells of the GPU hit them alike. ``streams`` (name ->
    CuPy stream) times a run on its own stream (a CUDA graph replayed there). Returns name -> Timing, all
    sharing one pairing id: trial i of each was measured side by side (``helpers.measure.verdicts``)."""

    names, streams = list(runs), streams or {}

    def once(name, warm):
        with streams.get(name) or contextlib.nullcontext():
            return _benchmark(_back_to_back(runs[name], launches), 1, warm)[0] / launches

    for name in names:
        once(name, warmup)
    samples = {name: [] for name in names}
    for trial in range(trials):
        for name in names[trial % len(names):] + names[:trial % len(names)]:
            samples[name].append(once(name, 0))
    pairing = next(_pairings)
    return {name: Timing.of(values, pairing) for name, values in samples.items()}


HEADROOM = 0.9          # plan for at most 90% of the memory this process can still allocate
INT32_MAX = 2**31 - 1   # the course's kernels index vertices and edges with int32


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


def ensure_fits(nbytes: int, what: str, *, free: int | None = None) -> None:
    """Refuse, before allocating, what would take more than HEADROOM of the GPU memory still free."""
    free = free_bytes() if free is None else int(free)
    if nbytes > HEADROOM * free:
        raise GraphTooLargeError(f"{what} needs about {nbytes / 2**30:.2f} GiB on the GPU, which has "
                                 f"{free / 2**30:.2f} GiB free: use a smaller graph or a GPU with more memory")


def measure_copy_bandwidth(nbytes: int = 512 * 2**20, repeat: int = 20) -> float:
    """Device-to-device copy bandwidth in GB/s, counting bytes read plus bytes written (median)."""
    cp = require_gpu()
    nbytes = int(min(nbytes, free_bytes() // 4))
    source = cp.empty(nbytes // 4, dtype=cp.float32)
    source.fill(1.0)
    target = cp.empty_like(source)
    timing = time_back_to_back(lambda: cp.copyto(target, source), launches=5, trials=repeat)
    return 2 * (nbytes // 4 * 4) / (timing.median_ms * 1e-3) / 1e9
