import math
import numpy as np
import pandas as pd
import pytest

from helpers.measure import results, verdicts
from helpers.measure.gpu import Timing
from helpers.core.arguments import ArrayKindError
from fake_arrays import GpuArray, masked


def test_a_table_shows_timings_with_no_digit_finer_than_their_spread():
    frame = pd.DataFrame({"variant": ["noisy", "steady"],
                          "iteration": [Timing.of([0.320, 0.248, 0.3465]), Timing.of([0.0422, 0.0421, 0.0424])],
                          "x_gather_floor": [Timing.of([38.41, 30.0, 42.0]), Timing.of([1.5127, 1.511, 1.514])],
                          "iterations": [49, 49], "l1": [2.345e-7, 1.5]})
    frame.attrs.update(gpu="some GPU")
    shown = results.show(frame, header_lines=False)
    assert list(shown["iteration"]) == ["0.32 (0.25-0.35)", "0.0422 (0.0421-0.0424)"]
    assert list(shown["x_gather_floor"]) == ["38 (30-42)", "1.513 (1.511-1.514)"]
    assert list(shown["iterations"]) == [49, 49] and list(shown["l1"]) == ["2.3e-07", "1.5"]


def test_flat_expands_timings_into_three_columns_for_csv():
    frame = pd.DataFrame({"variant": ["a"], "iteration": [Timing.of([2.0, 1.9, 2.2])]})
    frame.attrs.update(gpu="x")
    out = results.flat(frame)
    assert list(out.columns) == ["variant", "iteration_ms", "iteration_lo", "iteration_hi"]
    assert out.iloc[0].tolist() == ["a", 2.0, 1.9, 2.2] and out.attrs["gpu"] == "x"


def test_rounded_and_with_spread():
    assert results.with_spread(1.4321, 1.41, 1.44) == "1.43 (1.41-1.44)"
    assert results.rounded(13.59, 8) == "14" and results.rounded(13.59, 0.8) == "13.6"
    assert results.rounded(645.0, 180.0) == "640" and results.rounded(12_345.0, 40.0) == "12,340"
    assert results.with_spread(57_119.0, 56_979.0, 57_160.0) == "57,100 (57,000-57,200)"
    assert results.with_spread(-0.044, -0.171, 0.032) == "-0.04 (-0.17 to 0.03)"
    assert results.about(Timing.of([0.0422, 0.0421, 0.0424])) == "0.042"      # a sentence: two digits
    assert results.about(Timing.of([11.01, 11.00, 11.02])) == "11"
    assert results.about(Timing.of([1_213.0, 1_180.0, 1_270.0])) == "1,200"
    assert results.about(Timing.of([0.32, 0.248, 0.3465])) == "0.32"         # never under two digits


def test_one_sample_keeps_two_significant_digits():
    assert results.one_sample(42_890.0) == "43,000" and results.one_sample(0.000224) == "0.00022"
    assert results.one_sample(7.04) == "7"


def test_a_timing_refuses_what_is_not_a_measurement():
    with pytest.raises(ValueError, match="finite samples"):
        Timing.of([])
    with pytest.raises(ValueError, match="finite samples"):
        Timing.of([1.0, float("nan")])


def _paired(a_ms, b_ms, noise, trials=15, seed=0):
    rng = np.random.default_rng(seed)
    slow_spells = 1 + 0.5 * (rng.random(trials) < 0.2)              # a slow trial hits both alike
    a = a_ms * slow_spells * (1 + noise * rng.standard_normal(trials))
    b = b_ms * slow_spells * (1 + noise * rng.standard_normal(trials))
    return Timing.of(a, pairing=7), Timing.of(b, pairing=7)


def test_the_verdict_rule_pairs_trials_so_a_slow_spell_is_not_a_tie():
    a, b = _paired(1.0, 1.8, 0.01)
    v = verdicts.compare(a, b)
    assert v.paired and v.word == "faster" and 0.5 < v.low <= v.ratio <= v.high < 0.6
    assert v.sentence("A", "B") == "A is about 1.8x faster than B"
    unpaired = verdicts.compare(Timing.of(a.samples_ms), Timing.of(b.samples_ms))
    assert not unpaired.paired and unpaired.high - unpaired.low > v.high - v.low


def test_a_verdict_table_gives_the_ratio_to_the_digits_of_its_interval():
    a, b = _paired(1.0, 1.8, 0.01)
    row = verdicts.table({"A": a, "B": b}, "B").iloc[0]
    v = verdicts.compare(a, b)
    assert row["time / B"] == float(f"{v.ratio:.3g}") and str(row["time / B"]) == "0.554"
    assert row["95% interval"] == f"{v.low:.3g}-{v.high:.3g}" and row["verdict"] == "faster than B"


def test_the_verdict_rule_names_no_difference_only_inside_the_margin():
    same = verdicts.compare(*_paired(1.0, 1.0, 0.002))
    assert same.word == "no measurable difference" and "under 3%" in same.sentence("A", "B")
    close = verdicts.compare(*_paired(1.0, 1.03, 0.01, trials=5))
    assert close.word == "not settled"
    slower = verdicts.compare(*_paired(1.4, 1.0, 0.01))
    assert slower.word == "slower" and slower.sentence("A", "B") == "A is about 1.4x slower than B"


def test_the_same_pair_gets_the_same_verdict_when_measured_again():
    words = {verdicts.compare(*_paired(1.0, 1.15, 0.02, seed=s)).word for s in range(30)}
    assert words == {"faster"}
    words = {verdicts.compare(*_paired(1.0, 1.0, 0.004, seed=s)).word for s in range(30)}
    assert words == {"no measurable difference"}


@pytest.mark.parametrize("medians", [[0.0363, 0.0372, 0.0398, 0.0414, 0.0480],      # a tenth of a decade
                                     [0.026, 0.041, 0.074, 0.41],                    # about one decade
                                     [0.0004, 0.03, 2.0, 150.0]])                    # six decades
def test_a_log_chart_labels_its_ticks_without_overlap(medians):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    frame = pd.DataFrame({"variant": [f"v{i}" for i in range(len(medians))],
                          "iteration": [Timing.of([m, m * 0.98, m * 1.02]) for m in medians]})
    ax = results.chart(frame, "iteration", lines={"floor": medians[0] * 0.9})
    ax.figure.canvas.draw()
    low, high = sorted(ax.get_xlim())
    shown = [t for t in ax.get_xticklabels() if t.get_text() and low <= t.get_position()[0] <= high]
    shown += [t for t in ax.xaxis.get_minorticklabels() if t.get_text()]
    assert len(shown) >= 2, [t.get_text() for t in shown]            # something to read the bars by
    boxes = sorted((t.get_window_extent() for t in shown), key=lambda box: box.x0)
    assert all(left.x1 < right.x0 for left, right in zip(boxes, boxes[1:])), [t.get_text() for t in shown]
    assert all("\\times" not in t.get_text() for t in shown)          # plain numbers, not 3x10^-2
    plt.close(ax.figure)


def test_an_unsettled_verdict_says_which_way_its_interval_reaches():
    def verdict(low, high):
        return verdicts.Verdict(math.sqrt(low * high), low, high, "not settled", True, 7)

    assert verdict(0.99, 1.16).sentence("A", "B") == \
        "A against B: not settled by 7 trials (A could be up to 16% slower than B, or within 3% of it)"
    assert verdict(0.95, 1.01).sentence("A", "B") == \
        "A against B: not settled by 7 trials (A could be up to 5.3% faster than B, or within 3% of it)"
    assert verdict(0.46, 1.2).sentence("A", "B") == \
        "A against B: not settled by 7 trials (A could be faster or slower, by up to 117%)"
    assert verdicts.compare(*_paired(1.0, 1.03, 0.01, trials=5)).sentence("A", "B").count("%") == 2


def test_a_control_line_gives_the_share_removed_only_where_the_rule_settled_the_gap():
    from helpers.lectures import l31_scaling as scaling

    def v(ratio, word):
        return verdicts.Verdict(ratio, ratio * 0.98, ratio * 1.02, word, True, 15)

    before = v(2.0, "slower")
    assert scaling.control_line("the hub", before, v(1.2, "slower")) == \
        "the hub: supported; its control removes about 74% of the slowdown"
    assert scaling.control_line("the hub", before, v(1.8, "slower")).startswith("the hub: not supported")
    assert scaling.control_line("the hub", before, v(1.0, "no measurable difference")) == \
        "the hub: supported; its control removes about 100% of the slowdown"
    unsettled = scaling.control_line("the hub", before, v(1.03, "not settled"))
    assert "not settled" in unsettled and "%" not in unsettled
    assert scaling.control_line("x", v(0.9, "faster"), before) == "x: no slowdown to explain (faster)"


@pytest.mark.parametrize("call", [lambda x: Timing.of(x), lambda x: verdicts.compare(x, [1.0, 2.0, 3.0])])
def test_samples_refuse_masked_and_gpu_arrays(call):
    """A masked sample was timed as if measured; a CuPy array of samples met NumPy's bare TypeError."""
    with pytest.raises(ArrayKindError, match="samples is a masked array with masked entries"):
        call(masked())
    with pytest.raises(ArrayKindError, match=r"samples is a CuPy array .*samples\.get\(\)"):
        call(GpuArray())
