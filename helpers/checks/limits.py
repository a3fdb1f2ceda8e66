"""Limits on the student's code, so that a checker always ends with a report: a cap on what the code
prints, what it raised turned into a failure with its line (SystemExit and KeyboardInterrupt raised by
the code included; a real Ctrl-C still stops the checker), and a time limit on waiting for a GPU kernel.

``call`` runs a function in this process, the fallback where no child can be forked (``checks.isolation``
forks one elsewhere and kills it at the time limit). Its time limit is a SIGALRM timer whose handler raises
``TimeUp``, a BaseException that ``except Exception`` cannot swallow; the timer repeats every half second,
so a bare ``except:`` that swallows one gets another. Signals can be handled only on the main thread;
elsewhere the call runs without a limit and ``limit_note`` says so.
"""
from __future__ import annotations

import signal
import sys
import threading
import time
import traceback

from helpers.measure.gpu import queue_finished
from helpers.checks.report import NOT_WRITTEN_YET, Wrong

CPU_TIME_LIMIT = 60.0        # seconds per call of a student's function
GPU_TIME_LIMIT = 20.0        # seconds to wait for one kernel launch to finish
OUTPUT_LIMIT = 2_000         # characters of the student's printed output kept for the report
_REPEAT = 0.5                # the timer fires again every half second after the limit

class TimeUp(BaseException):
    """Raised by the timer inside the student's code when the time limit has passed."""


class KernelHung(Exception):
    """A kernel launch that did not finish within the time limit."""


class Output:
    """Stands in for sys.stdout and sys.stderr during student calls: keeps the first ``limit``
    characters (for the report) and counts the rest."""

    encoding = "utf-8"

    def __init__(self, limit: int = OUTPUT_LIMIT):
        self.limit, self.kept, self.dropped = limit, "", 0

    def write(self, text) -> int:
        text = str(text)
        room = self.limit - len(self.kept)
        self.kept += text[:max(room, 0)]
        self.dropped += max(len(text) - max(room, 0), 0)
        return len(text)

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False


def limit_note() -> list[str]:
    """A note for the report when calls in this process cannot be timed (not on the main thread)."""
    if can_time():
        return []
    return ["your function runs without a time limit here (the checker is not on the main thread): if it "
            "never returns, interrupt it"]


def can_time() -> bool:
    """Whether this thread can set a SIGALRM time limit (the main thread, on POSIX)."""
    return hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()


def _where(error: BaseException, function) -> str:
    """' (line 7 of f)' for the deepest traceback frame in the student's own file."""
    filename = getattr(getattr(function, "__code__", None), "co_filename", None)
    frames = [f for f in traceback.extract_tb(error.__traceback__) if f.filename == filename]
    return f" (line {frames[-1].lineno} of {frames[-1].name})" if frames else ""


def error_record(error: BaseException, function) -> tuple[str, str]:
    """(kind, detail) of what the student's function raised, in plain strings that can cross a pipe: kind
    is 'exit' (sys.exit), 'interrupt' (KeyboardInterrupt raised by the code itself), 'todo'
    (NotImplementedError: the stub) or 'error'."""
    where = _where(error, function)
    if isinstance(error, SystemExit):
        return "exit", f"called sys.exit({'' if error.code is None else repr(error.code)}){where}"
    if isinstance(error, KeyboardInterrupt):
        return "interrupt", f"raised KeyboardInterrupt{where}"
    if isinstance(error, NotImplementedError):
        return "todo", f"raised NotImplementedError: {error}"
    return "error", f"raised {type(error).__name__}: {str(error).strip()[:600]}{where}"


def wrong_for(kind: str, detail: str) -> Wrong:
    """The failure an error record stands for (see ``error_record``)."""
    if kind == "exit":
        return Wrong(detail, "your function called sys.exit() (or exit(), quit()), which would end the "
                             "whole program (in Jupyter, the kernel): return the result instead")
    if kind == "interrupt":
        return Wrong(detail, "your function raised KeyboardInterrupt itself (nobody pressed Ctrl-C): a "
                             "function must return its result, not raise it")
    if kind == "todo":
        return Wrong(detail, NOT_WRITTEN_YET, stop=True)
    return Wrong(detail, "your code raised an error on this input")


class TimedOut(Wrong):
    """A call stopped at the time limit."""


def timed_out(time_limit: float) -> TimedOut:
    """The failure of a call stopped at the time limit (it stops the run)."""
    return TimedOut(f"still running after {time_limit:g} s, so the checker stopped it",
                 f"your function did not return within the time limit ({time_limit:g} s): likely an endless "
                 "loop (a stopping test that is never met, a counter never increased); pass time_limit= "
                 "for more time", stop=True)


def call(function, *args, time_limit: float | None = CPU_TIME_LIMIT, output: Output | None = None, **kwargs):
    """``function(*args, **kwargs)`` in this process, under the limits: the checkers' fallback where no child
    process can be forked. Returns what it returns; raises Wrong when it raises, runs past ``time_limit``
    seconds, calls sys.exit() or raises KeyboardInterrupt itself. A real Ctrl-C (SIGINT) still raises
    KeyboardInterrupt, after every handler and stream is restored."""
    main = can_time()
    timed = main and bool(time_limit)
    state = {"armed": False, "sigint": False}

    def on_alarm(signum, frame):
        if state["armed"]:
            raise TimeUp()

    def on_sigint(signum, frame):
        state["sigint"] = True
        raise KeyboardInterrupt

    streams = sys.stdout, sys.stderr
    if main:
        old_alarm, old_int = signal.getsignal(signal.SIGALRM), signal.getsignal(signal.SIGINT)
        outer_timer = signal.getitimer(signal.ITIMER_REAL)
        signal.signal(signal.SIGALRM, on_alarm)
        signal.signal(signal.SIGINT, on_sigint)
    start = time.monotonic()
    try:
        if output is not None:
            sys.stdout = sys.stderr = output
        try:
            if timed:
                state["armed"] = True
                signal.setitimer(signal.ITIMER_REAL, time_limit, _REPEAT)
            return function(*args, **kwargs)
        finally:
            state["armed"] = False
            if timed:
                signal.setitimer(signal.ITIMER_REAL, 0)
    except TimeUp:
        raise timed_out(time_limit) from None
    except KeyboardInterrupt as error:
        if state["sigint"]:
            raise
        raise wrong_for(*error_record(error, function)) from None
    except (SystemExit, Exception) as error:
        raise wrong_for(*error_record(error, function)) from None
    finally:
        sys.stdout, sys.stderr = streams
        if main:
            state["armed"] = False
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old_alarm)
            signal.signal(signal.SIGINT, old_int)
            if outer_timer[0] > 0:          # someone else's timer was running: let it go on
                signal.setitimer(signal.ITIMER_REAL, max(outer_timer[0] - (time.monotonic() - start), 1e-3),
                                 outer_timer[1])
        if state["sigint"]:
            raise KeyboardInterrupt        # a real Ctrl-C that the student's code swallowed


def wait(cp, time_limit: float = GPU_TIME_LIMIT) -> None:
    """Wait for the GPU work queued so far, at most ``time_limit`` seconds (KernelHung past it); a kernel
    error (an illegal address) is raised as CuPy raises it."""
    if not queue_finished(cp, time_limit):
        raise KernelHung(f"the kernel did not finish within {time_limit:g} s")
