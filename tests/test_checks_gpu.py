"""GPU suite for the checkers' own machinery: a kernel that does not finish in time is reported and stops
the checker, and NVIDIA's compute-sanitizer confirms what the source lint and the probe say.

What the sanitizer can and cannot confirm. ``racecheck`` watches shared memory only: it reports the steps
of a shared-memory reduction with no barrier between them, also between lanes of one warp (since Volta
they are not in lockstep). It does not see several lanes storing one element of global memory.
``synccheck`` watches barriers and warp-synchronous calls: it reports a shuffle whose mask leaves out the
lane calling it. It does not see a full-mask shuffle after some lanes returned, nor one inside a branch
whose other lanes have exited: PTX lets exited lanes out of the wait, and only the values read from them
are undefined — those hazards rest on the lint and on the values. ``memcheck`` watches global memory: with
every array allocated apart and unpadded (no memory pool), it reports the reads past the end that the
checker's probe counts (``rank[u]`` read before ``u < n`` is tested). Each run launches one kernel once on
a 70-vertex graph (a few seconds, mostly the sanitizer's start)."""
import glob
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from helpers import checks
from test_exercises import CORRECT, MUTANTS, defined, load, mutant

ROOT = Path(__file__).resolve().parent.parent


def sanitizer() -> str | None:
    """The compute-sanitizer executable: on PATH, in a CUDA toolkit, or in the nvidia-cuda-sanitizer-api
    wheel."""
    found = shutil.which("compute-sanitizer")
    if found:
        return found
    places = [os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin", "compute-sanitizer")]
    places += sorted(glob.glob("/usr/local/cuda*/bin/compute-sanitizer"))
    for folder in sys.path:
        places += glob.glob(os.path.join(folder, "nvidia", "cuda_sanitizer_api", "compute-sanitizer",
                                         "compute-sanitizer"))
    return next((p for p in places if os.path.isfile(p) and os.access(p, os.X_OK)), None)


LAUNCH = textwrap.dedent('''
    import sys
    import numpy as np
    import cupy as cp
    from helpers import kernels
    from helpers.core import generators
    from helpers.checks import device as g

    cp.cuda.set_allocator(None)          # one allocation per array: memcheck knows where each one ends
    code, function = open(sys.argv[1]).read(), sys.argv[2]
    dc = g.DeviceCase(generators.adversarial_graph(70, seed=3, hub_in_links=40), np.random.default_rng(0))
    n = dc.n
    d = {name: cp.asarray(host) for name, host in dc.host.items()}
    exact = {name: cp.asarray(host[:dc.length[name]]) for name, host in dc.host.items()}    # unpadded
    out = cp.full(n + g.PAD, cp.nan, dtype=cp.float32)
    kernel = kernels.compiled(code, function)
    if function == "pull_warp":
        kernel(g.blocks(32 * n), (256,), (d["in_offsets"], d["in_sources"], d["out_degree"], d["rank"], out,
                                          np.int32(n)))
    elif function == "pull_list":
        listed = cp.asarray(np.concatenate([np.arange(n), n + np.arange(g.PAD)]).astype(np.int32))
        kernel(g.blocks(8 * n), (256,), (listed, np.int32(n), d["in_offsets"], d["in_sources"], d["contrib"],
                                         out,
                                         np.int32(8)))
    elif function == "push_atomic":
        pulled = cp.zeros(n, dtype=cp.float32)
        kernel(g.blocks(n), (256,), (exact["out_offsets"], exact["out_targets"], exact["out_degree"],
                                     exact["rank"],
                                     pulled, np.int32(n)))
    else:
        m = 300
        new, old = cp.arange(m + g.PAD, dtype=cp.float32), cp.zeros(m + g.PAD, dtype=cp.float32)
        kernel(g.blocks(m), (256,), (new, old, cp.zeros(2, dtype=cp.float32), np.int32(m)))
    try:
        cp.cuda.Device().synchronize()
    except cp.cuda.runtime.CUDARuntimeError as error:     # memcheck stops a kernel at its first bad access
        print("launched; the kernel was stopped:", error)
    else:
        print("launched")
''')


def sanitized(tool: str, code: str, function: str, tmp_path) -> tuple[int, str]:
    """(errors reported, output) of one launch of the kernel under compute-sanitizer's ``tool``."""
    executable = sanitizer()
    if executable is None:
        pytest.skip("compute-sanitizer not found (a CUDA toolkit, or pip install "
                    "nvidia-cuda-sanitizer-api-cu12)")
    source, script = tmp_path / "kernel.cu", tmp_path / "launch.py"
    source.write_text(code)
    script.write_text(LAUNCH)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT),
                                                                    os.environ.get("PYTHONPATH")])))
    run = subprocess.run([executable, "--tool", tool, sys.executable, str(script), str(source), function],
                         capture_output=True, text=True, timeout=300, env=env, cwd=ROOT)
    output = run.stdout + run.stderr
    assert "launched" in output, output[-3000:]
    # synccheck (and memcheck) end with "ERROR SUMMARY: N errors"; racecheck with
    # "RACECHECK SUMMARY: H hazards displayed (E errors, W warnings)": a hazard of either kind counts
    summary = re.search(r"ERROR SUMMARY: (\d+) error", output)
    if summary:
        return int(summary.group(1)), output
    summary = re.search(r"RACECHECK SUMMARY: \d+ hazards? displayed \((\d+) errors?, (\d+) warnings?\)",
                        output)
    assert summary, output[-3000:]
    return int(summary.group(1)) + int(summary.group(2)), output


def variant(slug: str, what: str) -> str:
    solution = load(slug)[0]
    if what == "solution":
        return defined(solution)
    for name, old, new, *_ in MUTANTS[slug] + [(n, o, w) for n, o, w in CORRECT[slug]]:
        if name == what:
            return defined(mutant(solution, old, new))
    raise KeyError(what)


CLEAN = [(slug, what, tool) for slug, what in [("13_pull_warp", "solution"), ("14_pull_list", "solution"),
                                              ("20_l1_change", "solution"),
                                              ("13_pull_warp", "shared memory with __syncwarp")]
         for tool in ("racecheck", "synccheck")] + [("11_push_atomic", "solution", "memcheck")]
# What the sanitizer can confirm of the lint: racecheck sees shared-memory hazards. synccheck did not flag a
# shuffle whose mask leaves out half the warp on an H100 (compute-sanitizer 2025): the lint alone names that.
CONFIRMED = [("20_l1_change", "no barrier between steps", "racecheck"),
             ("20_l1_change", "last warp without __syncwarp", "racecheck"),
             ("11_push_atomic", "rank read before the bounds check", "memcheck")]


@pytest.mark.gpu
@pytest.mark.parametrize("slug, what, tool", CLEAN, ids=[f"{s}-{w}-{t}" for s, w, t in CLEAN])
def test_the_sanitizer_finds_nothing_in_right_kernels(slug, what, tool, tmp_path):
    errors, output = sanitized(tool, variant(slug, what), checks.KERNELS[load(slug)[2]].kernel, tmp_path)
    assert errors == 0, output[-3000:]


@pytest.mark.gpu
@pytest.mark.parametrize("slug, what, tool", CONFIRMED, ids=[f"{s}-{w}-{t}" for s, w, t in CONFIRMED])
def test_the_sanitizer_confirms_the_lint(slug, what, tool, tmp_path):
    errors, output = sanitized(tool, variant(slug, what), checks.KERNELS[load(slug)[2]].kernel, tmp_path)
    assert errors > 0, output[-3000:]


def the_notebooks_gpu_works() -> bool:
    import cupy as cp

    return int(cp.arange(10).sum()) == 45


@pytest.mark.gpu
def test_a_kernel_that_does_not_finish_stops_the_checker_and_leaves_this_gpu_working():
    spin = ("    if (threadIdx.x == 0) { long long start = clock64(); "
            "while (clock64() - start < 3000000000LL) { } }   // a few seconds at any clock\n")
    loop = "    for (long long v = (long long)blockIdx.x"
    code = defined(load("10_pull_grid_stride")[0]).replace(loop, spin + loop)
    assert "clock64" in code
    report = checks.check_pull_grid_stride(code, quiet=True, time_limit=0.5)
    assert report.stopped and len(report.failures) == 1, str(report)
    assert "did not finish within 0.5 s" in str(report) and "unharmed" in report.failures[0].cause
    assert the_notebooks_gpu_works()


@pytest.mark.gpu
@pytest.mark.parametrize("fault, named", [
    ("    if (blockIdx.x == 0 && threadIdx.x == 0) ((volatile float*)16)[0] = 1.0f;   // a null pointer\n",
     "outside the kernel's arrays"),
    ("    if (blockIdx.x == 0 && threadIdx.x == 0) __trap();\n", "crashed the GPU")])
def test_a_kernel_that_crashes_the_gpu_is_reported_and_leaves_this_gpu_working(fault, named):
    """The fault kills the CUDA context of the checker's child process, not this one: the checks after it
    (and the student's notebook) go on."""
    loop = "    for (long long v = (long long)blockIdx.x"
    code = defined(load("10_pull_grid_stride")[0]).replace(loop, fault + loop)
    report = checks.check_pull_grid_stride(code, quiet=True)
    assert report.stopped and not report.ok, str(report)
    cause = report.failures[-1].cause
    assert named in cause and "unharmed" in cause, str(report)
    assert the_notebooks_gpu_works()
    assert checks.check_pull_grid_stride(defined(load("10_pull_grid_stride")[0]), quiet=True).ok
