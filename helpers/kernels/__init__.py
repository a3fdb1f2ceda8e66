"""The canonical CUDA source of every kernel the course teaches, one ``.cu`` file per kernel.

Lectures show the same source inline (a test keeps them equal). ``load`` compiles a kernel with CuPy on
the GPU at hand; ``nvrtc_compile`` compiles one for a given architecture (a T4 is compute_75) with
NVRTC alone, no GPU and no CuPy needed: that is how CI checks that every kernel builds for a T4.
"""
from __future__ import annotations

import ctypes
import glob
import os
import re
from functools import lru_cache
from pathlib import Path

KERNEL_DIR = Path(__file__).resolve().parent
T4_ARCH = "compute_75"


def names() -> list[str]:
    return sorted(p.stem for p in KERNEL_DIR.glob("*.cu"))


def source(name: str) -> str:
    path = KERNEL_DIR / f"{name}.cu"
    if not path.is_file():
        raise KeyError(f"no kernel {name!r}; the course's kernels are: {', '.join(names())}")
    return path.read_text()


def options(code: str) -> tuple[str, ...]:
    """Extra compiler options a kernel asks for in a ``// nvrtc-options: ...`` line."""
    found = re.search(r"^// nvrtc-options:(.*)$", code, re.MULTILINE)
    return tuple(found.group(1).split()) if found else ()


def kernel_names(code: str) -> list[str]:
    """The ``extern "C" __global__`` functions a source defines, in order."""
    return re.findall(r'extern "C" __global__ void (\w+)\(', code)


@lru_cache(maxsize=None)
def load(name_or_code: str, function: str | None = None):
    """Compile with CuPy and return the kernel function, by kernel name or from source code plus the
    function's name. Cached: a launch then costs no file read and no module lookup."""
    from ..gpu import require_gpu

    cp = require_gpu()
    code = source(name_or_code) if function is None else name_or_code
    module = cp.RawModule(code=code, options=("-std=c++17",) + options(code))
    return module.get_function(function or name_or_code)


# --- NVRTC without a GPU ---------------------------------------------------------------------------

class CompileError(RuntimeError):
    pass


@lru_cache(maxsize=None)
def _nvrtc():
    candidates = []
    try:
        import nvidia.cuda_nvrtc as package   # the pip wheel nvidia-cuda-nvrtc-cu12
        for folder in package.__path__:
            candidates += sorted(glob.glob(os.path.join(folder, "lib", "libnvrtc.so*")))
    except ImportError:
        pass
    candidates += ["libnvrtc.so", "libnvrtc.so.12", "libnvrtc.so.13"]
    for candidate in candidates:
        if ".alt." in candidate or "builtins" in candidate:
            continue
        try:
            return ctypes.CDLL(candidate)
        except OSError:
            continue
    raise CompileError("NVRTC not found: pip install nvidia-cuda-nvrtc-cu12 (the dev extra installs it)")


def nvrtc_version() -> str:
    major, minor = ctypes.c_int(), ctypes.c_int()
    _nvrtc().nvrtcVersion(ctypes.byref(major), ctypes.byref(minor))
    return f"{major.value}.{minor.value}"


def nvrtc_compile(code: str, arch: str = T4_ARCH, name: str = "kernel.cu") -> str:
    """Compile CUDA source to PTX for ``arch`` with NVRTC; returns the PTX, raises CompileError with the log."""
    lib = _nvrtc()
    program = ctypes.c_void_p()
    status = lib.nvrtcCreateProgram(ctypes.byref(program), code.encode(), name.encode(), 0, None, None)
    if status != 0:
        raise CompileError(f"nvrtcCreateProgram failed ({status})")
    try:
        flags = [f"--gpu-architecture={arch}", "-std=c++17", *options(code)]
        argv = (ctypes.c_char_p * len(flags))(*[f.encode() for f in flags])
        status = lib.nvrtcCompileProgram(program, len(flags), argv)
        size = ctypes.c_size_t()
        lib.nvrtcGetProgramLogSize(program, ctypes.byref(size))
        log = ctypes.create_string_buffer(size.value)
        lib.nvrtcGetProgramLog(program, log)
        if status != 0:
            raise CompileError(f"{name} does not compile for {arch}:\n{log.value.decode(errors='replace')}")
        lib.nvrtcGetPTXSize(program, ctypes.byref(size))
        ptx = ctypes.create_string_buffer(size.value)
        lib.nvrtcGetPTX(program, ptx)
        return ptx.value.decode()
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(program))
