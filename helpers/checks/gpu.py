"""What every GPU exercise checker does: the exercise kernels (``KERNELS``: name, inputs, outputs), the
refusals, the lint's cases first, the compiled kernel and its probed copy, launches in more than one grid
configuration with the inputs read back after each, and the probed launch with its reads checked.

The checkers (``gpu_pull``: 10, 13, 14; ``gpu_update``: 11, 12, 20; ``gpu_fused``: 21; ``gpu_half``: 40)
compile the student's kernel, launch it on fresh seeded graphs and compare exactly (``checks.device``). A
probed copy of the kernel (``checks.probe``) shows redundant work, several lanes storing one result,
atomics per block, shared memory read before it is written and reads outside an input; ``checks.lint``
reads the source for hazards that give the right numbers today. Every wait for a kernel has a time limit.
Each checker runs in a child process with its own CUDA context (``own_context``): a student's kernel that
faults or hangs ends that process, never the notebook's GPU. The Python side uses the private reference
(``checks.pristine``).
"""
from __future__ import annotations

import contextlib
import functools
import importlib
import re

import numpy as np

from helpers.kernels.catalog import EXERCISES, Exercise
from helpers.measure import gpu
from helpers.checks import pristine, report as reporting
from helpers.checks.cuda import strip_comments
from helpers.checks.device import BLOCK, Device, DeviceCase, Inputs, blocks, output, probe_buffer, writers
from helpers.checks.lint import lint
from helpers.checks.limits import GPU_TIME_LIMIT
from helpers.checks.probe import probed
from helpers.checks.report import Failure, Report, Wrong, describe_value, fresh_seed, refused, run


PROBE_SKIPPED = ("the probed launch was skipped: the checker could not rewrite how this kernel is written "
                 "(it wraps plain pointer parameters such as const int* rank or float* pulled), so which "
                 "thread stored each element, the atomics per block, shared memory read before it is "
                 "written and reads outside the inputs were not checked")


KERNELS = {e.checker: e for e in EXERCISES.values() if e.inputs}


APART = True     # each GPU checker in a child process of its own; False: in this process (emulated devices)
CHILD_STARTS = 60.0   # seconds a child may take beyond its kernels' time limits (interpreter, CuPy, context)


def own_context(check):
    """Run the GPU checker ``check(code, seed, quiet, time_limit)`` in a child process with its own CUDA
    context (``gpu.in_own_context``), where there is a GPU and the code is a string; in this process
    otherwise (the refusals, no GPU, ``APART`` off). What the student replaced in this process is refused
    here first: the child would not see it."""
    @functools.wraps(check)
    def apart(code, seed=None, quiet: bool = False, time_limit: float = GPU_TIME_LIMIT) -> Report:
        seed = fresh_seed(seed)
        if not (APART and isinstance(code, str) and pristine.refusal() is None and gpu.has_gpu()):
            return check(code, seed, quiet, time_limit)
        try:
            result = gpu.in_own_context(checked_in_child, check.__module__, check.__name__, code, seed,
                                        time_limit, time_limit=CHILD_STARTS + 200 * time_limit)
        except gpu.ChildDiedError as died:
            result = Report(check.__name__[len("check_"):], seed, stopped=True, failures=[Failure(
                "the checker's process", str(died), "the kernel crashed or hung the GPU; it ran in a process "
                "of the checker's own, now ended: your notebook's GPU is unharmed")])
        if not quiet:
            reporting.show(result)
        return result
    return apart


def checked_in_child(module: str, name: str, code: str, seed: int, time_limit: float) -> Report:
    """In the checker's child process: the checker itself, quiet, saying where it ran in its causes."""
    reporting.OWN_PROCESS = True
    check = getattr(importlib.import_module(module), name).__wrapped__
    return check(code, seed, True, time_limit)


def open_device(time_limit: float) -> Device:
    """The GPU the checkers launch on (a clear error where there is none)."""
    return Device(gpu.require_gpu(), time_limit)


@contextlib.contextmanager
def launched(grid, block):
    """Name the launch configuration in the detail of a Wrong raised within."""
    try:
        yield
    except Wrong as wrong:
        launch = f"{grid[0]:,} block{'s' * (grid[0] != 1)} of {block[0]} threads"
        raise Wrong(f"{launch}: {wrong.detail}", wrong.cause,
                    wrong.stop) from None


def grids(threads: int) -> list[tuple[tuple[int], tuple[int]]]:
    """The launches of a kernel with one thread per ``threads`` item: just enough blocks, and two more (whose
    threads all fall past the end)."""
    need = blocks(threads)[0]
    return [((need,), (BLOCK,)), ((need + 2,), (BLOCK,))]


# --- the harness -------------------------------------------------------------------------------------

def defines(code: str, kernel: str) -> bool:
    """Whether the source defines ``extern "C" __global__ void kernel(``, in an ``extern "C" { ... }`` block
    too, with ``__launch_bounds__(...)`` before or after ``void``; comments do not count."""
    bounds = r'(?:__launch_bounds__\s*\([^)]*\)\s*)?'
    head = rf'__global__\s+{bounds}void\s+{bounds}{kernel}\s*\('
    found = re.search(rf'extern\s+"C"\s+{head}|extern\s+"C"\s*\{{[^}}]*?{head}', strip_comments(code))
    return found is not None


def compiled(device: Device, code: str, spec: Exercise):
    """The student's kernel compiled; Wrong (stopping the run) when the source does not define it."""
    if not defines(code, spec.kernel):
        raise Wrong(f'the source defines no extern "C" __global__ void {spec.kernel}(...)',
                    "keep the kernel's name and signature as given", stop=True)
    return device.compile(code, spec.kernel)


def probe_kernel(device: Device, code: str, spec: Exercise):
    """The probed kernel, or None when the probe does not cover the way this kernel is written."""
    source = probed(code, spec.kernel, spec.outputs, spec.sums, spec.inputs)
    if source is None:
        return None
    try:
        return device.compile(source, spec.kernel)
    except Exception:                  # the rewriting does not fit this source: skip the probe
        return None


def source_cases(code: str, spec: Exercise) -> list:
    """One case per distinct hazard the lint finds in the source."""
    by_cause: dict[str, list] = {}
    for hazard in lint(code, spec.kernel, lane_stride=spec.lane_stride, block=BLOCK):
        by_cause.setdefault(hazard.cause, []).append(hazard)
    return [(f"the kernel's source, line {found[0].line} (read, not run)", ("source", found))
            for found in by_cause.values()]


def checker(name: str, code: str, seed: int, quiet: bool, time_limit: float, cases, check) -> Report:
    """Run ``check(device, probe, case)`` for every case, after the lint's cases, with the refusals first;
    ``probe`` is the probed kernel, compiled once (None, with a note in the report, where the probe does
    not cover how the kernel is written)."""
    exercise, spec = name[len("check_"):], KERNELS[name]
    if not isinstance(code, str):
        return refused(exercise, seed, f"the checker got {describe_value(code)}",
                       f"pass the kernel's source, a string: checks.{name}(KERNEL) with KERNEL = r'''...'''",
                       quiet)
    replaced = pristine.refusal()
    if replaced is not None:
        return refused(exercise, seed, *replaced, quiet)
    device, probe, notes = open_device(time_limit), None, []
    try:
        compiled(device, code, spec)
    except Exception:                  # no such kernel, or it does not compile: the first case says so
        pass
    else:
        probe = probe_kernel(device, code, spec)
        if probe is None:
            notes.append(PROBE_SKIPPED)

    def checked(case):
        if isinstance(case, tuple) and case and case[0] == "source":
            found = case[1]
            lines = ", ".join(str(h.line) for h in found[1:])
            raise Wrong(f"`{found[0].text}`" + (f" (and lines {lines})" if lines else ""), found[0].cause)
        return check(device, probe, case)

    return run(exercise, seed, source_cases(code, spec) + cases, checked, quiet, notes)


def graph_case(device: Device, code: str, spec: Exercise, graph, rng):
    """One graph's case: the compiled kernel, its DeviceCase, its inputs on the device and ``args(arrays,
    out)`` for a kernel that takes its inputs, then its output, then n."""
    kernel, dc = compiled(device, code, spec), DeviceCase(graph, rng)
    ins = graph_inputs(device, dc, spec)

    def args(arrays, out):
        return tuple(arrays[name] for name in spec.inputs) + (out, np.int32(dc.n))
    return kernel, dc, ins, args


def launches(device: Device, ins: Inputs, kernel, grid, block, args, size: int, fill=np.nan) -> list:
    """Two launches, each into a fresh output (NaN, or ``fill``), the inputs read back after each."""
    results = []
    for _ in range(2):
        out = output(device, size, fill)
        device.launch(kernel, grid, block, args(ins.dev, out))
        ins.unchanged()
        results.append(device.get(out))
    return results


def probe_launch(device: Device, probe, ins: Inputs, grid, block, args, sizes) -> list:
    """Launch the probed kernel into fresh probe buffers (one per output size); check the reads outside
    the inputs and return each buffer read back as (values, lowest writer, highest writer)."""
    reads = ins.probed()
    buffers = [probe_buffer(device, size, np.nan) for size in sizes]
    device.launch(probe, grid, block, args(reads["views"], *buffers))
    ins.reads_in_bounds(reads)
    return [writers(device.get(b), size) for b, size in zip(buffers, sizes)]


def graph_inputs(device: Device, dc: DeviceCase, spec: Exercise) -> Inputs:
    """A kernel's graph inputs (padded, with their lengths) on the device."""
    return Inputs(device, {name: (dc.host[name], dc.length[name]) for name in spec.inputs})


