"""One rule for "faster", "slower", "no measurable difference" and "not settled" (lecture 10 states it): a 95%
t interval for the geometric mean of paired ratios (Welch's on the logarithms where the trials were not
paired), against a margin of ``MARGIN`` (3%) around 1."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.stats import t

from helpers.core.arguments import host_array

MARGIN = 0.03


@dataclass(frozen=True)
class Verdict:
    """How ``a`` compares with ``b``: ``ratio`` is a's time over b's (below 1: faster) with its 95% interval
    ``low``-``high``; ``word`` is 'faster', 'slower', 'no measurable difference' or 'not settled'."""
    ratio: float
    low: float
    high: float
    word: str
    paired: bool
    trials: int

    @property
    def times(self) -> float:
        """How many times faster (or slower) a is, a number >= 1."""
        return 1 / self.ratio if self.ratio < 1 else self.ratio

    @property
    def times_rounded(self) -> str:
        """``times`` as a sentence gives it: '1.04', '1.8', '120'."""
        times = self.times
        return f"{times:.2f}" if times < 1.1 else f"{times:.1f}" if times < 10 else f"{times:,.0f}"

    def sentence(self, a: str = "it", b: str = "the other") -> str:
        """One rounded number, in words: 'A is about 1.8x faster than B'."""
        if self.word == "no measurable difference":
            return f"{a} and {b}: no measurable difference (under {MARGIN:.0%})"
        if self.word == "not settled":
            return f"{a} against {b}: not settled by {self.trials} trials ({self._unsettled(a, b)})"
        return f"{a} is about {self.times_rounded}x {self.word} than {b}"

    def _unsettled(self, a: str, b: str) -> str:
        """What the interval of an unsettled verdict allows, in words, with one rounded number."""
        faster, slower = self.low < 1 / (1 + MARGIN), self.high > 1 + MARGIN
        if faster and slower:
            return f"{a} could be faster or slower, by up to {_percent(max(self.high, 1 / self.low) - 1)}"
        share, word = (self.high - 1, "slower") if slower else (1 / self.low - 1, "faster")
        return f"{a} could be up to {_percent(share)} {word} than {b}, or within {MARGIN:.0%} of it"

    def __str__(self) -> str:
        return self.word


def _percent(share: float) -> str:
    """3.4% or 16%: a tenth of a percent where it tells a bound from the 3% margin."""
    return f"{share:.1%}" if share < 0.1 else f"{share:.0%}"


def _logs(timing) -> np.ndarray:
    samples = np.asarray(host_array(getattr(timing, "samples_ms", timing), "samples"), dtype=np.float64)
    if samples.size < 2 or (samples <= 0).any():
        raise ValueError("a comparison needs at least two positive samples of each timing")
    return np.log(samples)


def compare(a, b, *, margin: float = MARGIN) -> Verdict:
    """The verdict on timing ``a`` against timing ``b`` (``gpu.Timing``s, or arrays of samples)."""
    la, lb = _logs(a), _logs(b)
    pairing = getattr(a, "pairing", None)
    paired = pairing is not None and pairing == getattr(b, "pairing", None) and la.size == lb.size
    if paired:
        d = la - lb
        mean, se, df = d.mean(), d.std(ddof=1) / math.sqrt(d.size), d.size - 1
    else:
        va, vb = la.var(ddof=1) / la.size, lb.var(ddof=1) / lb.size
        mean, se = la.mean() - lb.mean(), math.sqrt(va + vb)
        df = ((va + vb) ** 2 / (va**2 / (la.size - 1) + vb**2 / (lb.size - 1)) if va + vb > 0
              else la.size + lb.size - 2)
    half = float(t.ppf(0.975, max(df, 1))) * se
    ratio, low, high = math.exp(mean), math.exp(mean - half), math.exp(mean + half)
    if high < 1 / (1 + margin):
        word = "faster"
    elif low > 1 + margin:
        word = "slower"
    elif low >= 1 / (1 + margin) and high <= 1 + margin:
        word = "no measurable difference"
    else:
        word = "not settled"
    return Verdict(ratio, low, high, word, paired, int(min(la.size, lb.size)))


def table(timings: dict, baseline: str, *, margin: float = MARGIN):
    """A DataFrame with one row per timing: its ratio to ``baseline`` (three significant digits, as the
    interval) with the 95% interval and the verdict."""
    rows = []
    for name, timing in timings.items():
        if name == baseline:
            continue
        v = compare(timing, timings[baseline], margin=margin)
        rows.append({"variant": name, f"time / {baseline}": float(f"{v.ratio:.3g}"),      # as its interval
                     "95% interval": f"{v.low:.3g}-{v.high:.3g}",
                     "verdict": f"{v.word} than {baseline}" if v.word in ("faster", "slower") else v.word})
    return pd.DataFrame(rows)
