"""Results tables and charts: pandas DataFrames that carry what they were measured on (GPU, graph, stop test,
iterations) and times shown with their spread, never with a digit finer than the spread.

A timing column ``x_ms`` may come with ``x_lo`` and ``x_hi`` (the fastest and slowest trial); ``show`` turns
the three into one readable column such as ``0.056 (0.055-0.058)`` and prints the table's header first. A
column computed from timings (GB/s, a multiple of a floor) is named in ``frame.attrs["derived"]`` with the
timings it came from: a column triple's base name, a Timing, or a list of them for a ratio,
``{"model_GBps": "iteration", "x_gather_floor": ["iteration", floor]}``; ``show`` rounds it to the sum of their
relative spreads.
"""
from __future__ import annotations

import math

import numpy as np

HEADER_KEYS = ("gpu", "cpu", "graph", "stop", "iterations", "timing", "floor", "note")


def _places(spread: float, median: float) -> int:
    """Decimal places (negative: tens, hundreds) that keep the last digit at the size of the spread, with at
    least 2 significant digits."""
    spread = abs(float(spread))
    if not math.isfinite(median) or median == 0:
        return 3
    if spread <= 0 or not math.isfinite(spread):
        spread = abs(median) * 1e-3
    places = -int(math.floor(math.log10(spread)))
    # two significant digits at least, of the median or, for a median near zero, of the spread
    return max(places, 1 - int(math.floor(math.log10(max(abs(median), spread)))))


def decimals_for(spread: float, median: float) -> int:
    """Decimal places that keep the last digit at the size of the spread (at least 2 significant digits)."""
    return max(_places(spread, median), 0)


def with_spread(median: float, lo: float, hi: float) -> str:
    """'median (lo-hi)' rounded to the spread."""
    places = _places(hi - lo, median)
    if lo < 0:                                         # 130 (-60 to 250): a minus sign is not a dash
        return f"{round(median, places):,.{max(places, 0)}f} ({round(lo, places):,.{max(places, 0)}f} to " \
               f"{round(hi, places):,.{max(places, 0)}f})"
    if places < 0:                                     # known to tens or hundreds: 57,100 (57,000-57,200)
        return " ".join((f"{round(median, places):,.0f}", f"({round(lo, places):,.0f}-{round(hi, places):,.0f})"))
    return f"{median:.{places}f} ({lo:.{places}f}-{hi:.{places}f})"


def one_sample(value: float) -> str:
    """A value measured once (a compile, a wall-clock preprocessing run) or extrapolated from one: two
    significant digits, since one sample has no spread to round to."""
    value = float(f"{value:.2g}")
    return f"{value:,.0f}" if abs(value) >= 10 else f"{value:g}"


def rounded(value: float, spread: float) -> str:
    """A derived value (a ratio, GB/s) rounded to the relative spread of the time it came from."""
    places = _places(spread, value)
    if places < 0:                                     # 645 known to within 180: 640
        return f"{round(value, places):,.0f}"
    return f"{value:,.{places}f}"


def _triple(timing) -> tuple[float, float, float]:
    """(median, fastest, slowest) of a Timing or of a (median, lo, hi) triple."""
    if hasattr(timing, "median_ms"):
        return float(timing.median_ms), float(timing.min_ms), float(timing.max_ms)
    median, lo, hi = timing
    return float(median), float(lo), float(hi)


def timing_of(row, base: str) -> tuple:
    """(median, fastest, slowest) of the timing ``base`` in a table row, a frame (then three columns) or an
    ``itertuples`` row: its ``base_ms``, ``base_lo`` and ``base_hi``, ready for ``ratio``, ``apart`` and the rest."""
    get = (lambda key: getattr(row, key)) if hasattr(row, "_fields") else row.__getitem__
    return tuple(get(f"{base}_{end}") for end in ("ms", "lo", "hi"))


def timing_columns(base: str, timing) -> dict:
    """The columns ``base_ms``, ``base_lo``, ``base_hi`` of a Timing or (median, lo, hi) triple, for a table row."""
    return dict(zip((f"{base}_ms", f"{base}_lo", f"{base}_hi"), _triple(timing)))


def derived(value: float, *timings) -> str:
    """A value computed from timings (GB/s, a ratio, a rate), rounded to the sum of their relative spreads."""
    spread = sum((hi - lo) / median if median > 0 else math.nan for median, lo, hi in map(_triple, timings))
    return _plain(value) if not math.isfinite(spread) or not math.isfinite(value) else rounded(value, abs(value) * spread)


def apart(a, b) -> bool:
    """Whether two timings' ranges do not overlap: only then does the measurement tell them apart."""
    (_, a_lo, a_hi), (_, b_lo, b_hi) = _triple(a), _triple(b)
    return a_hi < b_lo or b_hi < a_lo


def ratio(a, b) -> str:
    """a's time over b's as 'median (lo-hi)', the range running from a's fastest over b's slowest to a's
    slowest over b's fastest, rounded to that range: how many times b's time a takes, no finer than known."""
    (a_med, a_lo, a_hi), (b_med, b_lo, b_hi) = _triple(a), _triple(b)
    return with_spread(a_med / b_med, a_lo / b_hi, a_hi / b_lo)


def difference(a, b, *, scale: float = 1.0) -> str:
    """a's time minus b's, times ``scale`` (1e3 for microseconds from milliseconds), as 'median (lo-hi)'."""
    (a_med, a_lo, a_hi), (b_med, b_lo, b_hi) = _triple(a), _triple(b)
    return with_spread(scale * (a_med - b_med), scale * (a_lo - b_hi), scale * (a_hi - b_lo))


def describe(frame) -> str:
    """The header lines of a table: which GPU, which graph, which stop test, how timed."""
    attrs = frame.attrs
    return "\n".join(f"{key}: {attrs[key]}" for key in HEADER_KEYS if attrs.get(key) not in (None, ""))


def show(frame, *, header: bool = True):
    """Print the table's header, then return the table with each ``x_ms``/``x_lo``/``x_hi`` triple shown as
    one column 'x ms (median, range)' and floats rounded sensibly: the thing to display in a notebook."""
    import pandas as pd

    if header and describe(frame):
        print(describe(frame))
    out = pd.DataFrame(index=frame.index)
    columns = list(frame.columns)
    spec = frame.attrs.get("derived") or {}
    for column in columns:
        if column.endswith(("_lo", "_hi")) and column[:-3] + "_ms" in columns:
            continue
        values = frame[column]
        if column in spec:
            sources = _sources(spec[column])
            out[column] = [derived(v, *(timing_of(frame.iloc[i], s) if isinstance(s, str) else s for s in sources))
                           for i, v in enumerate(values)]
        elif column.endswith("_ms") and column[:-3] + "_lo" in columns:
            base = column[:-3]
            out[f"{base} ms (median, range)"] = [
                with_spread(m, lo, hi) if np.isfinite(m) else "-"
                for m, lo, hi in zip(values, frame[base + "_lo"], frame[base + "_hi"])]
        elif pd.api.types.is_float_dtype(values):
            out[column] = [_plain(v) for v in values]
        else:
            out[column] = values
    return out


def _sources(spec) -> list:
    """The timings a derived column comes from: a base name, a Timing, a (median, lo, hi) triple, or a list
    of those (a ratio comes from two)."""
    if isinstance(spec, str) or hasattr(spec, "median_ms"):
        return [spec]
    if isinstance(spec, tuple) and len(spec) == 3 and all(isinstance(x, (int, float)) for x in spec):
        return [spec]
    return list(spec)


def _plain(value: float) -> str:
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


def chart(frame, column: str, *, label: str | None = None, title: str | None = None, log: bool = True,
          lines: dict | None = None, ax=None):
    """Horizontal bars of a timing column with its range as error bars, fastest first, titled with the GPU
    and the graph from the table's header; ``lines`` draws reference lines (e.g. a floor) by label."""
    import matplotlib.pyplot as plt

    data = frame.dropna(subset=[column + "_ms"]).sort_values(column + "_ms")
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 0.32 * len(data) + 1.6))
    median = data[column + "_ms"].to_numpy()
    errors = None
    if column + "_lo" in data:
        errors = np.vstack([median - data[column + "_lo"].to_numpy(), data[column + "_hi"].to_numpy() - median])
    names = data["variant"] if "variant" in data else data.index.astype(str)
    ax.barh(list(names), median, xerr=errors, color="tab:blue", ecolor="black", capsize=2)
    for (name, value), style in zip((lines or {}).items(), ("--", ":", "-.", "-")):
        ax.axvline(value, color="tab:orange", ls=style, label=name)
    if lines:
        ax.legend(fontsize=7)
    ax.invert_yaxis()
    if log:
        ax.set_xscale("log")
    ax.set_xlabel(label or f"{column} ms (median; bars: range over trials)")
    attrs = frame.attrs
    ax.set_title(title or f"{attrs.get('graph', '')}\n{attrs.get('gpu', '')}", fontsize=8)
    ax.figure.tight_layout()
    return ax
