"""Running a student's Python function where it can neither fool nor stop the checker that grades it.

Every call of one checker run happens, in order, in one child process forked for the run (the 'fork' start
method: a function defined in a notebook cannot be pickled for 'spawn'). The child keeps every returned
value until the last call has returned, then sends them all back through a pipe, so that a result which a
later call overwrites (one preallocated buffer returned each time) comes back overwritten, as a caller that
keeps results would see it. What crosses the pipe is plain data only (numbers, strings, arrays as bytes,
tuples and lists of them; anything else as its description), read with an unpickler that refuses every
class, so nothing the student's code returns can run in the checker's process. The child cannot reach the
checker's expected values or replace the reference it uses (they live in the parent); a call that runs
past the time limit is ended by killing the child, which no ``except:`` can swallow. A real Ctrl-C stops
the checker (the child ignores SIGINT; the parent kills it and re-raises).

Where no child can be forked (Windows, or a daemonic process), the calls run in this process under
``limits.call``; the checker's own arrays are fingerprinted before and compared after, and the report's
notes say so.
"""
from __future__ import annotations

import faulthandler
import hashlib
import io
import multiprocessing
import os
import pickle
import random
import select
import signal
import struct
import sys
import time
import warnings
from dataclasses import dataclass, field

import numpy as np

from helpers.checks import borrowed
from helpers.checks.limits import (
    OUTPUT_LIMIT, Output, TimedOut, call, error_record, limit_note, timed_out, wrong_for)
from helpers.checks.report import GENERATOR, Opaque, Wrong, describe_value

CAN_FORK = hasattr(os, "fork") and "fork" in multiprocessing.get_all_start_methods()
MESSAGE_LIMIT = 1 << 30          # bytes: a larger message from the child is refused
LIST_LIMIT = 1 << 24             # items of a returned list or tuple sent back
DEPTH_LIMIT = 4                  # nesting of returned tuples and lists sent back
NUMERIC_KINDS = "biufcmM"
CUDA_IN_CHILD = ("your code raised an error on this input: it uses CUDA (CuPy), which cannot run in the "
                 "child process the checker runs your function in once this notebook has used the GPU; the "
                 "CPU exercises take NumPy code (keep the GPU for the GPU exercises' kernels)")
BROKEN = ("the checker could not run your function (if your code did not replace Python's own modules, this "
          "is a bug in the checker: please report it)")
UNREADABLE = ("the checker could not read what your function's process sent back (if your code did not "
              "write to the checker's pipe or replace Python's own modules, this is a bug in the checker: "
              "please report it)")
IN_PROCESS = ("your function runs inside the checker's process here (this system cannot fork a child "
              "process for it): the checker compares its own arrays before and after each call instead")


@dataclass
class Call:
    """One call of the student's function."""
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)


@dataclass
class Results:
    """What the calls of one run gave back."""
    values: list
    errors: list                                  # per call: the Wrong it raised, or None
    inputs: dict = field(default_factory=dict)    # the inputs after every call, by name
    shared: dict = field(default_factory=dict)    # call -> other calls whose results share memory with it
    stopped_at: int | None = None                 # the first call that never returned, if any
    stop: Wrong | None = None
    notes: list = field(default_factory=list)
    borrowed: dict = field(default_factory=dict)  # call -> the course's functions it called (``borrowed``)
    rerun: object = None                          # indices -> Results of those calls alone, in a fresh child

    def value(self, i: int):
        """What call i returned; raises the Wrong it stands for when it raised or never returned."""
        if self.stopped_at is not None and i >= self.stopped_at:
            raise self.stop
        if self.errors[i] is not None:
            raise self.errors[i]
        return self.values[i]


# --- plain data that crosses the pipe ------------------------------------------------------------

def _arrays_in(value, depth: int = 0) -> list:
    if isinstance(value, np.ndarray):
        return [value]
    if isinstance(value, (tuple, list)) and depth < 2:
        return [a for item in value[:64] for a in _arrays_in(item, depth + 1)]
    return []


def encode(value, depth: int = 0):
    """``value`` as plain data: tagged tuples of numbers, strings, bytes and lists (see ``decode``)."""
    try:
        if value is None or type(value) in (bool, int, float):
            return ("v", value)
        if type(value) is complex:
            return ("complex", value.real, value.imag)
        if isinstance(value, str):
            return ("str", str(value[:200]))
        if isinstance(value, bytes):
            return ("bytes", bytes(value[:200]))
        if isinstance(value, np.generic) and value.dtype.kind in NUMERIC_KINDS:
            return ("scalar", value.dtype.str, value.tobytes())
        if isinstance(value, (tuple, list)) and type(value) in (tuple, list):
            if depth >= DEPTH_LIMIT or len(value) > LIST_LIMIT:
                return ("opaque", describe_value(value))
            return (type(value).__name__, [encode(item, depth + 1) for item in value])
        if isinstance(value, np.ndarray):
            return _encode_array(value)
        if hasattr(value, "__array__") and not isinstance(value, (dict, set)):
            return _encode_array(np.asarray(value))
        return ("opaque", describe_value(value))
    except Exception:
        return ("opaque", f"a {type(value).__module__}.{type(value).__name__}")


def _encode_array(array: np.ndarray):
    array = np.asarray(array)
    if array.dtype.kind in NUMERIC_KINDS and array.dtype.fields is None:
        return ("array", array.dtype.str, list(array.shape), np.ascontiguousarray(array).tobytes())
    if array.dtype.kind == "O":
        return ("objects", list(array.shape))
    return ("opaque", describe_value(array))


def decode(data):
    """The value ``encode`` described: arrays and scalars rebuilt, descriptions as ``Opaque``."""
    tag = data[0]
    if tag == "v":
        return data[1]
    if tag == "complex":
        return complex(data[1], data[2])
    if tag in ("str", "bytes"):
        return data[1]
    if tag == "scalar":
        return np.frombuffer(data[2], dtype=np.dtype(data[1]))[0]
    if tag in ("tuple", "list"):
        items = [decode(item) for item in data[1]]
        return tuple(items) if tag == "tuple" else items
    if tag == "array":
        return np.frombuffer(data[3], dtype=np.dtype(data[1])).reshape(data[2]).copy()
    if tag == "objects":
        return np.empty(data[1], dtype=object)
    return Opaque(GENERATOR if data[1] == GENERATOR else str(data[1]))


class PlainUnpickler(pickle.Unpickler):
    """Reads what the child sent: plain data only; any class or function named in it is refused."""

    def find_class(self, module, name):
        raise pickle.UnpicklingError(f"the child sent {module}.{name}: only plain data may cross")


def _load(payload: bytes):
    return PlainUnpickler(io.BytesIO(payload)).load()


# --- the child -----------------------------------------------------------------------------------

def _send(fd: int, message) -> None:
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    view = memoryview(struct.pack("<Q", len(data)) + data)
    while view:
        view = view[os.write(fd, view):]


class _Forward(Output):
    """The child's stdout and stderr: what fits the report's limit goes to the parent at once."""

    def __init__(self, fd: int):
        super().__init__(OUTPUT_LIMIT)
        self.fd = fd

    def write(self, text) -> int:
        before = len(self.kept)
        written = super().write(text)
        if len(self.kept) > before:
            _send(self.fd, ("out", self.kept[before:]))
        return written


def _sharing(outcomes) -> dict[int, list[int]]:
    """Which calls returned arrays that share memory with another call's (one buffer handed out twice)."""
    arrays = [_arrays_in(value) if ok else [] for ok, value in outcomes]
    shared: dict[int, list[int]] = {}
    for i in range(len(arrays)):
        for j in range(i + 1, len(arrays)):
            if any(np.may_share_memory(a, b) for a in arrays[i] for b in arrays[j]):
                shared.setdefault(i, []).append(j)
                shared.setdefault(j, []).append(i)
    return shared


def _plain(outcomes, inputs) -> tuple[list, dict, dict]:
    """Everything the calls gave, as plain data, once the last call has returned: (values, inputs, sharing);
    a call that raised is ('error', kind, detail)."""
    values = [encode(value) if ok else ("error",) + tuple(value or ("error", "")) for ok, value in outcomes]
    given = {name: encode(array) for name, array in (inputs() if inputs else {}).items()}
    return values, given, _sharing(outcomes)


def _child(fd: int, function, calls, inputs, forbidden) -> None:
    """The child: every call in order, then every result as plain data, then exit without cleanup."""
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)        # a Ctrl-C is the parent's to handle
        np.random.seed()                                     # fresh seeds, as a new process has: a forked
        random.seed()                                        # child would repeat the parent's draws
        faulthandler.disable()                               # a crash is the parent's to report
        record, _ = borrowed.install(forbidden)              # never restored: the child exits
        out = _Forward(fd)
        sys.stdout = sys.stderr = out
        outcomes = []
        for i, each in enumerate(calls):
            record["call"] = i
            try:
                outcomes.append((True, function(*each.args, **each.kwargs)))
            except BaseException as error:                  # what it raised, SystemExit included
                outcomes.append((False, error_record(error, function)))
            ok, value = outcomes[-1]                        # as it is now: used only if a later call hangs
            _send(fd, ("done", i, out.dropped, encode(value) if ok else ("error",) + tuple(value)))
        record["call"] = None
        _send(fd, ("results",) + _plain(outcomes, inputs) + (out.dropped, borrowed.used_by(record)))
    except BaseException as error:
        try:
            _send(fd, ("broken", f"{type(error).__name__}: {error}"[:300]))
        except BaseException:
            pass
    finally:
        os._exit(0)


# --- the parent ----------------------------------------------------------------------------------

class _Reader:
    """Length-prefixed messages from the child, read with a deadline (a half-written message never
    blocks)."""

    def __init__(self, fd: int):
        self.fd, self.buffer, self.closed = fd, bytearray(), False

    def next(self, timeout: float):
        """The next message, None when none is complete within ``timeout`` s; EOFError once the child has
        gone."""
        end = time.monotonic() + max(timeout, 0.0)
        while True:
            if len(self.buffer) >= 8:
                size = struct.unpack("<Q", bytes(self.buffer[:8]))[0]
                if size > MESSAGE_LIMIT:
                    raise EOFError(f"a message of {size:,} bytes")
                if len(self.buffer) >= 8 + size:
                    payload = bytes(self.buffer[8:8 + size])
                    del self.buffer[:8 + size]
                    return _load(payload)
            if self.closed:
                raise EOFError("the child closed the pipe")
            left = end - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([self.fd], [], [], min(left, 0.25))
            if ready:
                chunk = os.read(self.fd, 1 << 20)
                if not chunk:
                    self.closed = True
                self.buffer += chunk


def _ended(process, current: int) -> Wrong:
    code = process.exitcode
    if code is not None and code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return Wrong(f"the process running your function was killed by {name} during call {current + 1}",
                     "your function crashed the process running it (a fault in compiled code, or the "
                     "system ran out of memory): look for an index past an array's end in code that NumPy "
                     "does not check (ctypes, numba) or an array far too large", stop=True)
    return Wrong(f"the process running your function ended (exit status {code}) during call {current + 1}",
                 "your function ended the process running it (os._exit, os.kill or a closed pipe): a "
                 "function must return its result", stop=True)


def _run_forked(function, calls, inputs, time_limit, output: Output, forbidden=()) -> Results | None:
    """The calls in a forked child, read back with a time limit per call (the child killed past it)."""
    results = Results([None] * len(calls), [None] * len(calls))
    read_fd, write_fd = os.pipe()
    process = multiprocessing.get_context("fork").Process(target=_child,
                                                          args=(write_fd, function, calls, inputs,
                                                                forbidden),
                                                          daemon=True)
    try:
        with warnings.catch_warnings():             # Python 3.12+ warns about forking a threaded process
            warnings.simplefilter("ignore", DeprecationWarning)
            process.start()
    except (AssertionError, OSError):               # a daemonic process may not fork, nor a full system
        os.close(read_fd)
        os.close(write_fd)
        return None
    os.close(write_fd)
    reader, current, final, early = _Reader(read_fd), 0, None, []
    deadline = time.monotonic() + time_limit if time_limit else None
    dropped = 0
    try:
        while final is None:
            wait = 0.5 if deadline is None else deadline - time.monotonic()
            if deadline is not None and wait <= 0:
                results.stopped_at, results.stop = current, timed_out(time_limit)
                break
            try:
                message = reader.next(wait)
            except (EOFError, pickle.UnpicklingError, ValueError, IndexError, TypeError):
                process.join(2.0)
                results.stopped_at, results.stop = current, _ended(process, current)
                break
            if message is None:
                continue
            try:
                kind = message[0]
                if kind == "out":
                    output.write(str(message[1]))
                elif kind == "done":
                    current, dropped = int(message[1]) + 1, int(message[2])
                    early.append(message[3])
                    deadline = time.monotonic() + time_limit if time_limit else None
                elif kind == "results":
                    final = message
                    _store(results, *message[1:4])
                    dropped = int(message[4])
                    results.borrowed = {int(i): [str(n) for n in names] for i, names in message[5].items()}
                else:                                    # "broken": the checker's code failed in the child
                    detail = f"the process running your function stopped: {str(message[1])[:300]}"
                    results.stopped_at, results.stop = current, Wrong(detail, BROKEN, stop=True)
                    break
            except Exception:                            # not what the checker's child sends
                final, early, results.stopped_at = None, [], 0
                results.stop = Wrong("the process running your function sent back something the checker "
                                     "cannot read", UNREADABLE, stop=True)
                break
    finally:
        os.close(read_fd)
        process.join(0.5 if final is not None else 0)
        if process.is_alive():
            process.kill()
        process.join()
    if final is None and results.stopped_at:                # stopped: the calls before as they returned
        try:
            _store(results, early[:results.stopped_at], {}, {})
        except Exception:
            results.stopped_at = 0
    output.dropped += dropped
    return results


def _store(results: Results, values, given, shared) -> None:
    """Decode what the child sent into ``results``."""
    for i, data in enumerate(values):
        if data[0] == "error":
            results.errors[i] = wrong_for(str(data[1]), str(data[2]))
            if data[1] == "error" and "cuda" in str(data[2]).lower():
                results.errors[i].cause = CUDA_IN_CHILD
        else:
            results.values[i] = decode(data)
    results.inputs = {name: decode(data) for name, data in given.items()}
    results.shared = {int(k): [int(j) for j in v] for k, v in shared.items()}


def _fingerprint(arrays) -> list[bytes]:
    return [hashlib.sha256(np.ascontiguousarray(a).tobytes()).digest() for a in arrays]


def _run_here(function, calls, inputs, guard, time_limit, output: Output, forbidden=()) -> Results:
    """The calls in this process (no fork): limits.call, the checker's arrays compared before and after."""
    results = Results([None] * len(calls), [None] * len(calls), notes=[IN_PROCESS] + limit_note())
    before = _fingerprint(guard)
    outcomes = []
    record, restore = borrowed.install(forbidden)
    try:
        for i, each in enumerate(calls):
            record["call"] = i
            try:
                value = call(function, *each.args, time_limit=time_limit, output=output, **each.kwargs)
                outcomes.append((True, value))
            except TimedOut as wrong:
                results.stopped_at, results.stop = i, wrong
                break
            except Wrong as wrong:
                results.errors[i] = wrong
                outcomes.append((False, None))
    finally:
        restore()
    results.borrowed = borrowed.used_by(record)
    values, given, results.shared = _plain(outcomes, inputs)
    for i, data in enumerate(values):
        if results.errors[i] is None:
            results.values[i] = decode(data)
    results.inputs = {name: decode(data) for name, data in given.items()}
    if _fingerprint(guard) != before:
        results.stopped_at = 0
        results.stop = Wrong("the checker's own copies of the inputs changed while your function ran",
                             "your function reached into the checker's arrays (through the call stack: "
                             "sys._getframe, inspect); it must work only on the arguments it is given",
                             stop=True)
    return results


def run_calls(function, calls: list[Call], *, inputs=None, guard=(), time_limit: float | None,
              output: Output, forbidden=()) -> Results:
    """Every call of ``function``, in order, apart from the checker (see the module's docstring).
    ``inputs()`` is evaluated after the last call, where the calls ran, and names the arrays to send back
    (the inputs as the calls left them); ``guard`` lists the checker's own arrays, compared before and
    after the calls when they run in this process. What the code prints goes to ``output``; calls of the
    functions named in ``forbidden`` are noted (``checks.borrowed``). Where the calls ran in a child,
    ``results.rerun(indices)`` runs those calls again, alone, in a fresh child (what they give without the
    earlier calls: evidence of state kept across calls), or gives None when it cannot."""
    if CAN_FORK:
        results = _run_forked(function, calls, inputs, time_limit, output, forbidden)
        if results is not None:
            results.rerun = lambda indices: _run_forked(function, [calls[i] for i in indices], None,
                                                        time_limit, Output(), forbidden)
            return results
    return _run_here(function, calls, inputs, guard, time_limit, output, forbidden)
