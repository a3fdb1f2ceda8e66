"""The canonical CUDA source of every kernel the course teaches, one ``.cu`` file each; ``define`` makes a
lecture's edited source the one ``compiled`` (CuPy) uses; ``nvrtc_compile`` builds for a T4 without a GPU."""
from __future__ import annotations

import contextlib
import ctypes
import locale
import re
from functools import lru_cache
from pathlib import Path
from types import SimpleNamespace

from helpers.measure.gpu import has_gpu, require_gpu

KERNEL_DIR = Path(__file__).resolve().parent
T4_ARCH = "compute_75"
HEADER = re.compile(r"^\s*//\s*(\w+):")

# Sources lecture cells defined this session, by kernel file: every launch uses them, not the .cu files.
_LIVE: dict[str, str] = {}


def names() -> list[str]:
    return sorted(p.stem for p in KERNEL_DIR.glob("*.cu"))


def canonical(name: str) -> str:
    """The source of helpers/kernels/<name>.cu, whatever this session defined."""
    path = KERNEL_DIR / f"{name}.cu"
    if not path.is_file():
        raise KeyError(f"no kernel {name!r}; the course's kernels are: {', '.join(names())}")
    return path.read_text(encoding="utf-8")


def source(name: str) -> str:
    """The source in force: the one a lecture cell defined, else the canonical file."""
    return _LIVE.get(name) or canonical(name)


def file_name(code: str) -> str:
    """The kernel file a source belongs to, from its first comment line ``// name: what it does``."""
    found = HEADER.match(code)
    if not found:
        raise ValueError("a course kernel source starts with a comment line '// <file name>: <what it does>'")
    return found.group(1)


def same_source(a: str, b: str) -> bool:
    """Whether two sources are the same, blank lines and trailing spaces aside."""
    a, b = ([line.rstrip() for line in text.splitlines() if line.strip()] for text in (a, b))
    return a == b


def define(code: str):
    """Make this source the one in force for its kernel file this session; with a GPU, return its kernel
    compiled now (or a namespace of a file's kernels not named after it), so a compile error shows here."""
    name = file_name(code)
    if name not in names():
        raise KeyError(f"{name!r} is not one of the course's kernel files: {', '.join(names())}")
    if same_source(code, canonical(name)):
        _LIVE.pop(name, None)
    else:
        _LIVE[name] = code
        print(f"{name}: using this notebook's source, which differs from helpers/kernels/{name}.cu, "
              f"for every launch in this session")
    if not has_gpu():
        return None
    functions = kernel_names(code)
    if name in functions:
        return compiled(name)
    return SimpleNamespace(**{function: compiled(name, function) for function in functions})


def forget(name: str | None = None) -> None:
    """Go back to the canonical source of one kernel file (or of all)."""
    for key in list(_LIVE) if name is None else [name]:
        _LIVE.pop(key, None)


def live() -> dict[str, str]:
    """The kernel files whose source this session replaced, with their sources."""
    return dict(_LIVE)


def options(code: str) -> tuple[str, ...]:
    """Extra compiler options a kernel asks for in a ``// nvrtc-options: ...`` line."""
    found = re.search(r"^// nvrtc-options:(.*)$", code, re.MULTILINE)
    return tuple(found.group(1).split()) if found else ()


def kernel_names(code: str) -> list[str]:
    """The ``extern "C" __global__`` functions a source defines, in order."""
    return re.findall(r'extern "C" __global__ void (\w+)\(', code)


def _thread_locale():
    """glibc's ``uselocale``, or None where the C library has none (then only the global locale is kept)."""
    try:
        uselocale = ctypes.CDLL(None).uselocale
    except (OSError, AttributeError):
        return None
    uselocale.restype, uselocale.argtypes = ctypes.c_void_p, [ctypes.c_void_p]
    return uselocale


@contextlib.contextmanager
def keeping_locale():
    """Put the thread's and the process's locale back: NVRTC 12.4 switches the thread to C (uselocale), and
    then any text file read without an explicit encoding fails on its first non-ASCII character."""
    saved = locale.setlocale(locale.LC_ALL)
    uselocale = _thread_locale()
    thread = uselocale(None) if uselocale else None
    try:
        yield
    finally:
        if uselocale:
            uselocale(thread)
        locale.setlocale(locale.LC_ALL, saved)


@lru_cache(maxsize=None)
def _module(code: str):
    cp = require_gpu()
    with keeping_locale():
        module = cp.RawModule(code=code, options=("-std=c++17",) + options(code))
        module.compile()                         # now, inside the locale guard, not at the first launch
    return module


def compiled(name_or_code: str, function: str | None = None):
    """The kernel function ``compiled(file[, function])`` (of the source in force) or ``compiled(code[,
    function])``; compiled once per source."""
    if "__global__" in name_or_code:
        code = name_or_code
        if function is None:
            function = kernel_names(code)[0]
    else:
        code = source(name_or_code)
        function = function or name_or_code
    return _module(code).get_function(function)


class CompileError(RuntimeError):
    """A kernel source that NVRTC does not compile for the architecture asked for; the message has the log."""


def _nvrtc():
    try:
        from cuda.bindings import nvrtc
    except ImportError as error:
        raise CompileError(f"NVRTC is not reachable ({error}): pip install 'cuda-bindings<13' "
                           "nvidia-cuda-nvrtc-cu12 (the dev extra installs both)") from None
    return nvrtc


def _checked(result):
    """cuda-bindings returns (status, *values): the values, or CompileError for a failed call."""
    status, *values = result
    if int(status) != 0:
        raise CompileError(f"NVRTC call failed: {status}")
    return values[0] if len(values) == 1 else values


def nvrtc_version() -> str:
    with keeping_locale():
        major, minor = _checked(_nvrtc().nvrtcVersion())
    return f"{major}.{minor}"


def _read(program, size, get) -> str:
    """NVRTC's log or PTX, read into a NEW bytes object: ``b" " * 1`` is Python's one shared b" ", and NVRTC's
    NUL would turn every b" " in the process into b"\\0" (breaking every .npy header)."""
    buffer = b" " * (max(int(_checked(size(program))), 1) + 1)
    get(program, buffer)
    return buffer.rstrip(b" \0").decode(errors="replace")


def nvrtc_compile(code: str, arch: str = T4_ARCH, name: str = "kernel.cu") -> str:
    """CUDA source compiled to PTX for ``arch`` with NVRTC; CompileError with the log."""
    with keeping_locale():                   # loading NVRTC, creating and compiling: each may switch it
        nvrtc = _nvrtc()
        program = _checked(nvrtc.nvrtcCreateProgram(code.encode(), name.encode(), 0, [], []))
        try:
            flags = [f"--gpu-architecture={arch}".encode(), b"-std=c++17",
                     *(option.encode() for option in options(code))]
            status, = nvrtc.nvrtcCompileProgram(program, len(flags), flags)
            log = _read(program, nvrtc.nvrtcGetProgramLogSize, nvrtc.nvrtcGetProgramLog)
            if int(status) != 0:
                raise CompileError(f"{name} does not compile for {arch}:\n{log}")
            return _read(program, nvrtc.nvrtcGetPTXSize, nvrtc.nvrtcGetPTX)
        finally:
            nvrtc.nvrtcDestroyProgram(program)
