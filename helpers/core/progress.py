"""Messages and progress bars: tqdm's text bar where output redraws lines (a terminal, Jupyter), whole lines
where it is kept (a log, a pipe); every message fitted to its stream's encoding, never an exception."""
from __future__ import annotations

import sys
import warnings

from tqdm.std import tqdm

QUARTERS = (25, 50, 75)
FIRST_SECONDS = 1.0        # a step done sooner prints one line, at its end
QUIET_SECONDS = 60.0       # without a known total, a line at most this often


def fit(text, stream) -> str:
    """``text`` with what ``stream``'s encoding cannot write as backslash escapes."""
    text, encoding = str(text), getattr(stream, "encoding", None) or "utf-8"
    try:
        return text.encode(encoding, "backslashreplace").decode(encoding)
    except LookupError:                       # an encoding Python does not know
        return text.encode("ascii", "backslashreplace").decode("ascii")


def say(text, file=None) -> None:
    """Print one message, fitted; a stream that cannot take it (closed, a broken pipe) loses the message."""
    stream = file or sys.stdout
    try:
        print(fit(text, stream), file=stream, flush=True)
    except (OSError, ValueError):             # ValueError: "I/O operation on closed file"
        pass


def warn(text, category=UserWarning, stacklevel: int = 1) -> None:
    """warnings.warn, fitted to standard error; where showing it still fails, ``say`` to standard error."""
    text = fit(text, sys.stderr)
    try:
        warnings.warn(text, category, stacklevel=stacklevel + 1)
    except (OSError, ValueError):             # UnicodeError is a ValueError
        say(f"{category.__name__}: {text}", sys.stderr)


def _redraws(stream) -> bool:
    if type(stream).__module__.split(".")[0] == "ipykernel":
        return True
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):       # no isatty, or a closed stream
        return False


def bar(total=None, desc: str = "", unit: str = "it", *, enabled: bool = True, **options):
    """A tqdm bar (never a widget) where the output redraws lines, a ``Lines`` one where it is kept."""
    settings = {"total": total, "desc": fit(desc, sys.stdout), "unit": unit, "file": sys.stdout, "ncols": 80,
                "mininterval": 1.0, "disable": not enabled, **options}
    return Lines(**settings) if enabled and not _redraws(sys.stdout) else tqdm(**settings)


class Lines(tqdm):
    """tqdm that never draws: it says a line when a step starts, at each quarter (or each minute without a
    total) and at its end."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **{**kwargs, "delay": float("inf")})     # tqdm itself prints nothing
        self.started, self.quarter, self.last = False, 0, self.start_t

    def display(self, *args, **kwargs):
        return True

    def _amount(self, count) -> str:
        if not (self.unit_scale and self.unit == "B"):
            plural = "steps" if self.unit == "it" else self.unit + ("" if self.unit.endswith("s") else "s")
            return f"{count:,} {plural}"
        size, prefix = float(count), ""
        while size >= 1024 and prefix != "Gi":
            size, prefix = size / 1024, {"": "Ki", "Ki": "Mi", "Mi": "Gi"}[prefix]
        return f"{size:,.1f} {prefix}B" if prefix else f"{size:,.0f} B"

    def _say(self, text: str) -> None:
        suffix = f" [{self.postfix}]" if self.postfix else ""
        say(f"{self.desc}: {text}{suffix}" if self.desc else text + suffix)

    def _share(self) -> str:
        return f"{self._amount(self.n)} of {self._amount(self.total)}"

    def update(self, n=1):
        super().update(n)
        now = self._time()
        if not self.started:                  # a step that ends within a second gets its last line only
            if now - self.start_t < FIRST_SECONDS:
                return
            self.started, self.last = True, now
            self._say("started" + (f" ({self._amount(self.total)} in all)" if self.total else ""))
            self.quarter = sum(q * self.total <= 100 * self.n for q in QUARTERS) if self.total else 0
        if self.total:
            while (self.quarter < len(QUARTERS) and self.n < self.total
                   and QUARTERS[self.quarter] * self.total <= 100 * self.n):
                self._say(f"{QUARTERS[self.quarter]}% ({self._share()}, {now - self.start_t:.0f} s)")
                self.quarter += 1
        elif now - self.last >= QUIET_SECONDS:
            self._say(f"{self._amount(self.n)} so far ({now - self.start_t:.0f} s)")
            self.last = now

    def close(self):
        if not self.disable:
            seconds = f"in {self._time() - self.start_t:.1f} s"
            self._say(f"{100 * self.n / self.total:.0f}% ({self._share()}) {seconds}" if self.total else
                      f"{self._amount(self.n)} {seconds}")
        super().close()
