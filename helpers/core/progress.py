"""Progress bars that suit where the output goes: tqdm's plain text bar in a terminal and in Jupyter (never a
widget, which a committed notebook cannot show), and whole lines elsewhere (a log file, a pipe, a captured
stream): one when a step starts, one at each quarter (or each minute when its size is unknown), one at the
end, and never a carriage return. Messages (``say``, ``warn``, the progress lines) are written so that
any stream can take them: characters its encoding lacks become backslash escapes, never an exception.
"""
from __future__ import annotations

import sys
import time
import warnings

from tqdm.std import tqdm

QUARTERS = (25, 50, 75)
FIRST_SECONDS = 1.0        # a step done sooner prints one line, at its end
QUIET_SECONDS = 60.0       # without a known total, a line at most this often


def interactive(stream) -> bool:
    """Whether ``stream`` redraws a line that ends in a carriage return: a terminal, a Jupyter kernel."""
    if type(stream).__module__.split(".")[0] == "ipykernel":
        return True
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):       # no isatty, or a closed stream
        return False


def fit(text, stream) -> str:
    """``text`` as ``stream`` can take it: what its encoding cannot write (a non-ASCII folder under
    PYTHONIOENCODING=ascii, a file name's undecodable bytes) as backslash escapes."""
    text, encoding = str(text), getattr(stream, "encoding", None) or "utf-8"
    try:
        text.encode(encoding)
        return text
    except UnicodeError:
        return text.encode(encoding, "backslashreplace").decode(encoding)
    except LookupError:                       # an encoding Python does not know
        return text.encode("ascii", "backslashreplace").decode("ascii")


def say(text, file=None) -> None:
    """Print one message to ``file`` (standard output), fitted to its encoding (``fit``); a stream that
    cannot take it at all (closed, a broken pipe, a full disk) loses the message, not the caller's work."""
    stream = file or sys.stdout
    text = fit(text, stream)
    try:
        print(text, file=stream, flush=True)
    except (OSError, ValueError):             # ValueError: "I/O operation on closed file"
        pass


def warn(text, category=UserWarning, stacklevel: int = 1) -> None:
    """warnings.warn with the message fitted to standard error; where showing it still fails (on the
    encoding of a source file's name in the warning's line, or a closed stream), ``say`` has it instead."""
    text = fit(text, sys.stderr)
    try:
        warnings.warn(text, category, stacklevel=stacklevel + 1)
    except (OSError, ValueError):             # UnicodeError is a ValueError
        say(f"{category.__name__}: {text}", sys.stderr)


def bar(total=None, desc: str = "", unit: str = "it", *, enabled: bool = True, **options):
    """A progress bar with tqdm's interface (update, set_postfix_str, close, ``n``, a context manager):
    tqdm's text bar where the output redraws lines, plain lines where it does not; ``enabled=False`` gives
    a silent one."""
    desc = fit(desc, sys.stdout)
    if enabled and not interactive(sys.stdout):
        return Lines(total, desc, unit, binary=options.get("unit_scale", False) and unit == "B")

    settings = dict(total=total, desc=desc, unit=unit, file=sys.stdout, ncols=80, mininterval=1.0,
                    leave=True, dynamic_ncols=False, position=None, disable=not enabled)
    settings.update(options)
    return tqdm(**settings)


class Lines:
    """Progress as a few whole lines, for output that is kept rather than redrawn."""

    def __init__(self, total, desc: str, unit: str, *, binary: bool = False):
        self.total, self.desc, self.unit, self.binary = total, desc, unit, binary
        self.n, self.postfix, self.closed, self.started, self.quarter = 0, "", False, False, 0
        self.start = self.last = time.monotonic()

    def _amount(self, count) -> str:
        if not self.binary:
            plural = "steps" if self.unit == "it" else self.unit + ("" if self.unit.endswith("s") else "s")
            return f"{count:,} {plural}"
        size = float(count)
        for prefix in ("", "Ki", "Mi", "Gi"):
            if size < 1024 or prefix == "Gi":
                return f"{size:,.0f} B" if not prefix else f"{size:,.1f} {prefix}B"
            size /= 1024

    def _say(self, text: str) -> None:
        suffix = f" [{self.postfix}]" if self.postfix else ""
        say(f"{self.desc}: {text}{suffix}" if self.desc else text + suffix)

    def update(self, count=1) -> None:
        self.n += count
        now = time.monotonic()
        if not self.started:                  # a step that ends within a second gets its last line only
            if now - self.start < FIRST_SECONDS:
                return
            self.started, self.last = True, now
            self._say("started" + (f" ({self._amount(self.total)} in all)" if self.total else ""))
            self.quarter = sum(q * self.total <= 100 * self.n for q in QUARTERS) if self.total else 0
        if self.total:
            while (self.quarter < len(QUARTERS) and self.n < self.total
                   and QUARTERS[self.quarter] * self.total <= 100 * self.n):
                self._say(f"{QUARTERS[self.quarter]}% ({self._amount(self.n)} of "
                          f"{self._amount(self.total)}, {now - self.start:.0f} s)")
                self.quarter += 1
        elif now - self.last >= QUIET_SECONDS:
            self._say(f"{self._amount(self.n)} so far ({now - self.start:.0f} s)")
            self.last = now

    def set_postfix_str(self, s: str = "", refresh: bool = True) -> None:
        self.postfix = s

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        seconds = f"in {time.monotonic() - self.start:.1f} s"
        if self.total:
            self._say(f"{100 * self.n / self.total:.0f}% ({self._amount(self.n)} of "
                      f"{self._amount(self.total)}) {seconds}")
        else:
            self._say(f"{self._amount(self.n)} {seconds}")

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def steps(iterable, desc: str = "", total=None, *, enabled: bool = True, **options):
    """Iterate with a progress bar over a known number of steps."""
    if total is None and hasattr(iterable, "__len__"):
        total = len(iterable)
    with bar(total, desc, enabled=enabled, **options) as progress:
        for item in iterable:
            yield item
            progress.update(1)
