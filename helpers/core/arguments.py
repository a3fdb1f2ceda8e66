"""Checks of the helpers' arguments (numbers, seeds, paths, arrays), each raising an error that names the
parameter before any work or allocation the argument decides."""
from __future__ import annotations

import math
import numbers
import os
from pathlib import Path

import numpy as np

MAX_VERTICES = 2**31 - 1  # vertex ids are stored as int32
SEED_OFFSET = 1_000_003   # the most any helper adds to a seed (adversarial_graph's hub stream)
MAX_SEED = 2**63 - 1 - SEED_OFFSET   # so that a seed plus its offset still fits int64


class GraphFormatError(ValueError):              # here, as the base of ArrayKindError
    """An edge list that cannot become a graph; the message names the file and line where it can."""


class ArgumentError(ValueError, TypeError):
    """A parameter of the wrong type or out of range: a ValueError and a TypeError, for either ``except``."""


class ArrayKindError(GraphFormatError, ArgumentError):
    """An array NumPy would read other than as meant (``host_array`` says which kinds)."""


def is_integer(value) -> bool:
    """An integer, Python's or NumPy's, and not a bool."""
    return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))


def check_integer(value, name: str, *, minimum: int | None = None, maximum: int | None = None,
                  why: str = "") -> int:
    """``value`` as a Python int within [minimum, maximum]: floats (even 2.0), bools and strings refused."""
    if not is_integer(value):
        raise ArgumentError(f"{name} must be an integer, got {value!r} ({type(value).__name__})")
    value = int(value)
    if minimum is not None and value < minimum:
        raise ArgumentError(f"{name} must be at least {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise ArgumentError(f"{name} must be at most {maximum}{why}, got {value}")
    return value


def check_vertices(n, name: str = "n", minimum: int | None = 1, error: type = ArgumentError) -> int:
    """A vertex count: an integer from ``minimum`` up to the int32 ids' limit."""
    n = check_integer(n, name, minimum=minimum)
    if n > MAX_VERTICES:
        raise error(f"{name}={n:,} vertices do not fit the course's int32 vertex ids")
    return n


def as_number(value, name: str) -> float:
    """``value`` as a float (an int too large for one: infinity); bools, strings, complex numbers refused."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise ArgumentError(f"{name} must be a number, got {repr(value)[:60]} ({type(value).__name__})")
    try:
        return float(value)
    except OverflowError:
        return math.inf


def check_real(value, name: str, *, low: float | None = None, high: float | None = None,
               positive: bool = False, unit: str = "") -> float:
    """``value`` as a finite float within [low, high] (and above 0 if ``positive``); NaN and inf refused."""
    number = as_number(value, name)
    if not math.isfinite(number) or (positive and number <= 0):
        raise ArgumentError(f"{name} must be {'positive and ' * positive}finite, got {number:g}")
    if (low is not None and number < low) or (high is not None and number > high):
        bounds = (f"lie between {low:g} and {high:g}" if low is not None and high is not None else
                  f"be at least {low:g}" if low is not None else f"be at most {high:,g}{unit}")
        raise ArgumentError(f"{name} must {bounds}, got {number:g}")
    return number


def check_seconds(value, name: str, *, maximum: float | None = None) -> float:
    """A number of seconds: positive, finite and at most ``maximum``."""
    return check_real(value, name, high=maximum, positive=True, unit=" s")


def check_flag(value, name: str) -> bool:
    """``value`` as a bool: only True and False (NumPy's too) pass; 'no' or 2 is not read as True."""
    if not isinstance(value, (bool, np.bool_)):
        raise ArgumentError(f"{name} must be True or False, got {value!r} ({type(value).__name__})")
    return bool(value)


def check_seed(seed, name: str = "seed", *, rng: bool = True):
    """A seed as a Python int from 0 to MAX_SEED; with ``rng``, None, a Generator or a SeedSequence too."""
    if rng and (seed is None or isinstance(seed, (np.random.Generator, np.random.SeedSequence))):
        return seed
    return check_integer(seed, name, minimum=0, maximum=MAX_SEED,
                         why=f" (2**63 - 1 less the {SEED_OFFSET:,} the helpers may add to it)")


def fresh_seed(seed) -> int:
    """The seed given (checked), or a fresh one, for the caller to print so that it can be passed back."""
    return int(np.random.SeedSequence().entropy % 2**31) if seed is None else check_seed(seed, rng=False)


def as_path(path, what: str = "path") -> Path:
    """``path`` (str, bytes or os.PathLike) as a Path; anything else, empty or with a NUL: ArgumentError."""
    if not isinstance(path, (str, bytes, os.PathLike)):
        raise ArgumentError(f"{what} must be a file path (a str or pathlib.Path), got {type(path).__name__}")
    text = os.fsdecode(os.fspath(path))
    if not text or "\0" in text:
        raise ArgumentError(f"{what} must name a file, got {text!r}")
    return Path(text)


def on_gpu(values) -> bool:
    """Does ``values`` live in GPU memory (CuPy, or a CUDA array interface)? Imports nothing."""
    return type(values).__module__.startswith("cupy") or hasattr(values, "__cuda_array_interface__")


def _masked_inside(values) -> bool:
    """Whether a list or tuple holds, at any depth, a masked array with masked entries (or ma.masked)."""
    return any(isinstance(v, (list, tuple)) and _masked_inside(v) or
               isinstance(v, np.ma.MaskedArray) and np.ma.getmaskarray(v).any()
               for v in values if isinstance(v, (list, tuple, np.ma.MaskedArray)))


def host_array(values, name: str, *, gpu: bool = False, fill: str | None = None, ndim: int | None = None):
    """``values`` unchanged; ArrayKindError for what NumPy misreads (masked entries, SciPy sparse, a matrix),
    a GPU array unless ``gpu``, and with ``ndim`` another number of dimensions; ``fill``: masked advice."""
    masked = np.ma.isMaskedArray(values) and np.ma.getmaskarray(values).any()
    if masked or isinstance(values, (list, tuple)) and _masked_inside(values):
        raise ArrayKindError(f"{name} {'is' if masked else 'holds'} a masked array with masked entries, "
                             f"which NumPy reads through the mask: " +
                             (fill or f"give every entry a value (e.g. {name}.filled(0)) or drop the masked "
                                      f"ones ({name}.compressed())"))
    if hasattr(values, "toarray") and hasattr(values, "nnz"):
        raise ArrayKindError(f"{name} is a SciPy sparse {type(values).__name__}; pass a dense array: e.g. "
                             f"{name}.toarray().ravel()")
    if isinstance(values, np.matrix):
        raise ArrayKindError(f"{name} is a numpy.matrix, which stays 2-D whatever is taken from it; pass an "
                             f"array: e.g. numpy.asarray({name}).ravel()")
    if not gpu and on_gpu(values):
        cupy = type(values).__module__.startswith("cupy")
        torch = "" if cupy else f" (CuPy; PyTorch: {name}.cpu().numpy())"
        raise ArrayKindError(f"{name} is a {'CuPy array' if cupy else type(values).__name__} in GPU memory, "
                             f"and this function works on host (NumPy) arrays: copy it to the host first "
                             f"with {name}.get(){torch}")
    if ndim is not None:
        try:
            found = np.ndim(values)
        except (TypeError, ValueError):        # a ragged list: NumPy cannot tell
            found = None
        if found != ndim:
            raise ArrayKindError(f"{name} must be a {ndim}-D array, got " +
                                 (f"shape {np.shape(values)}" if found is not None else "a ragged list"))
    return values


def to_host(values, name: str, *, ndim: int | None = None) -> np.ndarray:
    """``values`` as a NumPy array: a CuPy array copied to the host, anything else checked (host_array)."""
    host_array(values, name, gpu=True, ndim=ndim)
    if on_gpu(values) and not isinstance(values, np.ndarray):
        if not callable(getattr(values, "get", None)):
            host_array(values, name)                  # says to copy it to the host first
        values = values.get()
    return np.asarray(values)
