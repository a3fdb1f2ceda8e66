"""The GPU, asked for only when needed (CuPy is not imported at import time): is there one, what is it, and
how to time work on it."""
from __future__ import annotations

import contextlib
import itertools
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


class NoGPUError(RuntimeError):
    """Raised where a CUDA GPU is needed and there is none (or CuPy cannot reach it)."""


@dataclass(frozen=True)
class GpuStatus:
    available: bool
    description: str   # the GPU's name, or why there is none


@lru_cache(maxsize=None)
def _probe() -> tuple:
    """(CuPy or None, GpuStatus): whether CuPy reaches a CUDA GPU, asked once per process."""
    try:
        import cupy
    except ImportError:
        detail = "CuPy is not installed, so every GPU lecture is skipped."
    else:
        try:
            count, detail = cupy.cuda.runtime.getDeviceCount(), "no CUDA device is visible."
        except Exception as error:  # no driver, no device, or a broken installation
            count, detail = 0, f"CuPy cannot reach a CUDA device: {error}"
        if count:
            props = cupy.cuda.runtime.getDeviceProperties(0)
            return cupy, GpuStatus(True, f"{_name(props)} (compute capability "
                                         f"{props['major']}.{props['minor']})")
    return None, GpuStatus(False, f"none. {NO_GPU_ADVICE} (Detail: {detail})")


def _name(props) -> str:
    return props["name"].decode() if isinstance(props["name"], bytes) else props["name"]


def gpu_status() -> GpuStatus:
    """Whether CuPy can reach a CUDA GPU, without raising."""
    return _probe()[1]


def has_gpu() -> bool:
    return gpu_status().available


def require_gpu():
    """CuPy, once it is certain that a GPU answers; otherwise NoGPUError with what to do."""
    cupy, status = _probe()
    if cupy is None:
        raise NoGPUError(f"This needs a CUDA GPU. GPU: {status.description}")
    return cupy


class ChildDiedError(RuntimeError):
    """A function run by ``in_own_context`` gave no answer: stopped at its time limit, or crashed."""


_WORKER: list = []      # the kept child process and this end of its pipe, while its CUDA context is sound


def in_own_context(function, *args, time_limit: float | None = None, **kwargs):
    """``function(*args, **kwargs)`` in a kept child process with its own CUDA context, so that a kernel that
    faults or hangs there loses that context only; ChildDiedError without an answer in ``time_limit`` s."""
    name = getattr(function, "__qualname__", repr(function))
    if not _WORKER:
        spawn = multiprocessing.get_context("spawn")      # a fork would inherit this process's CUDA state
        pipe, theirs = spawn.Pipe()
        _WORKER.extend((spawn.Process(target=_serve, args=(theirs,), daemon=True), pipe))
        _WORKER[0].start()
        theirs.close()
    child, pipe = _WORKER
    try:
        pipe.send((function, args, kwargs))
        if not pipe.poll(time_limit):
            _discard(wait_s=0)
            raise ChildDiedError(f"{name} gave no answer within {time_limit:g} s: its process was stopped")
        ok, value, sound = pipe.recv()
    except (EOFError, OSError, BrokenPipeError):
        child.join(10)
        code = child.exitcode
        _discard()
        raise ChildDiedError(f"{name}'s process ended without an answer (exit code {code})") from None
    except BaseException:                              # a Ctrl-C here: the child may still be running it
        _discard(wait_s=0)
        raise
    if not sound:
        _discard()
    if ok:
        return value
    raise value


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
        try:
            pickle.loads(pickle.dumps(reply))          # as it will unpickle in the parent
        except Exception:                              # e.g. an exception class whose arguments changed
            ok, value = reply
            reply = (False, RuntimeError(f"returned a {type(value).__name__}, which cannot be sent back" if ok
                                         else f"{type(value).__name__}: {value}"))
        sound = _context_sound()
        pipe.send(reply + (sound,))
        if not sound:
            os._exit(0)                                # skip the teardown a hung kernel would block


def _context_sound(wait_s: float = 2.0) -> bool:
    """Whether this process's CUDA context (if any) is idle and unharmed: no sticky error, no kernel busy."""
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
    """Whether the work queued on the current stream finished within ``time_limit`` s (polling an event, since
    a blocking wait cannot be cut short); a kernel's error is raised as CuPy raises it."""
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
    """What the current device says of itself, read once per device (launchers ask often: ~1 ms a time)."""
    return _device_facts(require_gpu().cuda.Device().id)


@lru_cache(maxsize=None)
def _device_facts(device_id: int) -> DeviceFacts:
    cp = require_gpu()
    device = cp.cuda.Device(device_id)
    attributes, props = device.attributes, cp.cuda.runtime.getDeviceProperties(device_id)
    return DeviceFacts(_name(props), f"{props['major']}.{props['minor']}", attributes["MultiProcessorCount"],
                       attributes["L2CacheSize"], device.mem_info[1], attributes["MemoryClockRate"],
                       attributes["GlobalMemoryBusWidth"])


@dataclass(frozen=True, eq=False)
class Timing:
    """Repeated measurements in milliseconds (or another unit); Timings measured together share a ``pairing``
    id, so that ``verdicts.compare`` pairs trial i of one with trial i of the other."""
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


_pairings = itertools.count(1)      # CPU timings take the negative ids: never paired with a GPU one


def interleaved(names, sample, *, trials: int, sign: int = 1) -> dict:
    """name -> Timing of ``sample(name)`` ms over ``trials`` trials, each sampling every name once in a
    rotating order (a slow spell hits them alike); all share one pairing id, negative for ``sign=-1``."""
    names = list(names)
    samples = {name: [] for name in names}
    for trial in range(trials):
        for name in names[trial % len(names):] + names[:trial % len(names)]:
            samples[name].append(sample(name))
    pairing = sign * next(_pairings)
    return {name: Timing.of(values, pairing) for name, values in samples.items()}


def time_paired(runs: dict, *, launches: int = 20, trials: int = 15, warmup: int = 3, streams=None) -> dict:
    """ms per call of each of ``runs`` (name -> callable), ``launches`` calls back to back between CUDA
    events, ``interleaved``; ``streams`` (name -> CuPy stream) times a run on its own stream (CUDA graphs)."""
    cp, streams = require_gpu(), streams or {}
    from cupyx.profiler import benchmark

    def sample(name, warm=0):
        def many():
            for _ in range(launches):
                runs[name]()

        with streams.get(name) or contextlib.nullcontext():
            for _ in range(warm):
                many()
            cp.cuda.get_current_stream().synchronize()
            return float(benchmark(many, n_repeat=1, n_warmup=0).gpu_times[0][0]) * 1e3 / launches

    for name in runs:
        sample(name, warmup)          # the first launch of a kernel compiles it
    return interleaved(runs, sample, trials=trials)


def time_back_to_back(run, *, launches: int = 20, trials: int = 7, warmup: int = 3) -> Timing:
    """ms per ``run()`` with ``launches`` calls back to back between CUDA events (for very short calls: the
    host's issue rate); ``time_paired`` of one run."""
    return time_paired({"run": run}, launches=launches, trials=trials, warmup=warmup)["run"]


def time_gpu(run, *, warmup: int = 3, repeat: int = 20) -> Timing:
    """ms of ``run()`` one call at a time between CUDA events: with the launch as a caller sees it."""
    return time_back_to_back(run, launches=1, trials=repeat, warmup=warmup)


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
                                 f"{free / 2**30:.2f} GiB free: use a smaller graph or a GPU with more "
                                 "memory")


def measure_copy_bandwidth(nbytes: int = 512 * 2**20, repeat: int = 20) -> float:
    """Device-to-device copy bandwidth in GB/s, counting bytes read plus bytes written (median)."""
    cp = require_gpu()
    nbytes = int(min(nbytes, free_bytes() // 4))
    source = cp.empty(nbytes // 4, dtype=cp.float32)
    source.fill(1.0)
    target = cp.empty_like(source)
    timing = time_back_to_back(lambda: cp.copyto(target, source), launches=5, trials=repeat)
    return 2 * (nbytes // 4 * 4) / (timing.median_ms * 1e-3) / 1e9
