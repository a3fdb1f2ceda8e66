"""Results tables and charts: pandas DataFrames whose attrs say what they were measured on, with Timings in
their cells, shown as 'median (fastest-slowest)' with no digit finer than the spread."""
from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib import ticker

HEADER_KEYS = ("gpu", "cpu", "graph", "stop", "iterations", "timing", "floor", "note")


def is_timing(value) -> bool:
    return hasattr(value, "samples_ms")


def _places(spread: float, median: float) -> int:
    """Decimal places (negative: tens, hundreds) that keep the last digit at the size of the spread, with at
    least 2 significant digits."""
    spread = abs(float(spread))
    if not math.isfinite(median) or median == 0:
        return 3
    if spread <= 0 or not math.isfinite(spread):
        spread = abs(median) * 1e-3
    places = -int(math.floor(math.log10(spread)))
    return max(places, 1 - int(math.floor(math.log10(max(abs(median), spread)))))


def _fixed(value: float, places: int) -> str:
    return f"{round(value, places):,.{max(places, 0)}f}"


def with_spread(median: float, lo: float, hi: float) -> str:
    """'median (lo-hi)' rounded to the spread; 'median (lo to hi)' when the range passes below zero."""
    places = _places(hi - lo, median)
    m, a, b = (_fixed(v, places) for v in (median, lo, hi))
    return f"{m} ({a} to {b})" if lo < 0 else f"{m} ({a}-{b})"


def one_sample(value: float) -> str:
    """A value measured once (a compile, a preprocessing run): two significant digits."""
    value = float(f"{value:.2g}")
    return f"{value:,.0f}" if abs(value) >= 10 else f"{value:g}"


def rounded(value: float, spread: float) -> str:
    """A value rounded to a spread: 645 known to within 180 reads 640."""
    return _fixed(value, _places(spread, value))


def about(timing) -> str:
    """A Timing's median alone, rounded to its spread and to two significant digits at most: the one
    number a sentence carries ('about 11 ms', not 'about 11.01 ms')."""
    median, second_digit = timing.median_ms, 0.0
    if median and math.isfinite(median):
        second_digit = 10.0 ** (math.floor(math.log10(abs(median))) - 1)
    return rounded(median, max(timing.max_ms - timing.min_ms, second_digit))


def header(frame) -> str:
    """The header lines of a table: which GPU, which graph, which stop test, how timed."""
    attrs = frame.attrs
    return "\n".join(f"{key}: {attrs[key]}" for key in HEADER_KEYS if attrs.get(key) not in (None, ""))


def _cell(value):
    if is_timing(value):
        return with_spread(value.median_ms, value.min_ms, value.max_ms)
    if isinstance(value, (float, np.floating)):
        return plain(float(value))
    return value


def show(frame, *, header_lines: bool = True):
    """Print the table's header, then return the table with Timings as 'median (range)' and floats rounded
    sensibly: the thing to display in a notebook."""
    if header_lines and header(frame):
        print(header(frame))
    return frame.apply(lambda column: column.map(_cell))


def flat(frame):
    """The table with each Timing column ``x`` as three float columns ``x_ms``, ``x_lo``, ``x_hi``."""
    out = {}
    for column in frame.columns:
        values = frame[column]
        if any(is_timing(v) for v in values):
            for end, get in (("ms", "median_ms"), ("lo", "min_ms"), ("hi", "max_ms")):
                out[f"{column}_{end}"] = [getattr(v, get) if is_timing(v) else math.nan for v in values]
        else:
            out[column] = values
    result = pd.DataFrame(out, index=frame.index)
    result.attrs.update(frame.attrs)
    return result


def plain(value: float) -> str:
    if value is None or not np.isfinite(value):
        return "-"
    magnitude = abs(value)
    if magnitude == 0:
        return "0"
    if magnitude < 1e-3 or magnitude >= 1e6:
        return f"{value:.1e}"
    if magnitude >= 100:
        return f"{value:,.0f}"
    return f"{value:.3g}"


def log_scale(ax, which: str = "x") -> None:
    """Put one axis of ``ax`` (after drawing) on a log scale whose tick labels never overlap: plain numbers at
    1-2-5 steps, or a few even steps where the data span under 0.7 of a decade."""
    axis = ax.xaxis if which == "x" else ax.yaxis
    (ax.set_xscale if which == "x" else ax.set_yscale)("log")
    low, high = sorted(ax.get_xlim() if which == "x" else ax.get_ylim())
    decades = math.log10(high / low) if low > 0 else math.inf
    if decades < 0.7:
        axis.set_major_locator(ticker.MaxNLocator(nbins=4, steps=[1, 2, 2.5, 5, 10]))
    else:
        axis.set_major_locator(ticker.LogLocator(subs=(1.0, 2.0, 5.0) if decades <= 3 else (1.0,)))
    axis.set_major_formatter(ticker.FuncFormatter(lambda value, _: f"{value:g}"))
    axis.set_minor_formatter(ticker.NullFormatter())


def chart(frame, column: str, *, label: str | None = None, title: str | None = None, log: bool = True,
          lines: dict | None = None, ax=None, names: str = "variant"):
    """Horizontal bars of a Timing column (medians, ranges as error bars), fastest first, titled with the GPU
    and the graph from the table's header; ``lines`` draws reference lines (e.g. a floor) by label."""
    data = frame[[is_timing(v) for v in frame[column]]]
    data = data.iloc[np.argsort([v.median_ms for v in data[column]], kind="stable")]
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 0.32 * len(data) + 1.6))
    median = np.array([v.median_ms for v in data[column]])
    errors = np.vstack([median - [v.min_ms for v in data[column]], [v.max_ms for v in data[column]] - median])
    labels = list(data[names]) if names in data else list(data.index.astype(str))
    ax.barh(labels, median, xerr=errors, color="tab:blue", ecolor="black", capsize=2)
    for (name, value), style in zip((lines or {}).items(), ("--", ":", "-.", "-")):
        ax.axvline(getattr(value, "median_ms", value), color="tab:orange", ls=style, label=name)
    if lines:
        ax.legend(fontsize=7)
    ax.invert_yaxis()
    if log:
        log_scale(ax, "x")
    text = label or f"{column}, ms (median; whiskers: fastest to slowest trial)"
    ax.set_xlabel(text + (", log scale" if log and "log" not in text else ""))
    attrs = frame.attrs
    ax.set_title(title or f"{attrs.get('graph', '')}\n{attrs.get('gpu', '')}", fontsize=8)
    ax.figure.tight_layout()
    return ax
