import pandas as pd

from helpers import results


def test_times_and_the_values_derived_from_them_keep_no_digit_finer_than_the_spread():
    frame = pd.DataFrame({"variant": ["noisy", "steady"],
                          "iteration_ms": [0.320, 0.0422], "iteration_lo": [0.248, 0.0421],
                          "iteration_hi": [0.3465, 0.0424],
                          "model_GBps": [6.254, 899.31], "x_gather_floor": [38.41, 1.5127], "iterations": [49, 49]})
    frame.attrs.update(gpu="some GPU", derived={"model_GBps": "iteration", "x_gather_floor": "iteration"})
    shown = results.show(frame, header=False)
    assert list(shown["iteration ms (median, range)"]) == ["0.32 (0.25-0.35)", "0.0422 (0.0421-0.0424)"]
    # a 30 % spread leaves two significant digits; a 0.7 % spread keeps three
    assert list(shown["x_gather_floor"]) == ["38", "1.51"]
    assert list(shown["model_GBps"]) == ["6.3", "899"]
    assert list(shown["iterations"]) == [49, 49]


def test_a_derived_value_without_a_finite_timing_is_shown_plainly():
    frame = pd.DataFrame({"iteration_ms": [float("nan")], "iteration_lo": [float("nan")],
                          "iteration_hi": [float("nan")], "x_gather_floor": [2.3456]})
    frame.attrs.update(derived={"x_gather_floor": "iteration"})
    assert list(results.show(frame, header=False)["x_gather_floor"]) == ["2.35"]


def test_rounded_and_with_spread():
    assert results.with_spread(1.4321, 1.41, 1.44) == "1.43 (1.41-1.44)"
    assert results.rounded(13.59, 8) == "14" and results.rounded(13.59, 0.8) == "13.6"
    assert results.rounded(3.66, 0.45) == "3.7"


def test_a_ratio_and_a_difference_carry_the_range_of_the_times_they_come_from():
    from helpers.gpu import Timing

    slow, fast = Timing.of([0.34, 0.356, 0.36]), Timing.of([0.068, 0.073, 0.077])
    assert results.ratio(slow, fast) == "4.9 (4.4-5.3)"
    assert results.ratio((1.16, 1.15, 1.17), (0.189, 0.186, 0.194)) == "6.1 (5.9-6.3)"
    assert results.difference((0.0766, 0.072, 0.084), (0.0413, 0.041, 0.042), scale=1e3) == "35 (30-43)"
    assert results.apart(slow, fast) and not results.apart((1.0, 0.9, 1.1), (1.05, 1.08, 1.2))


def test_a_derived_value_known_only_to_tens_is_rounded_to_tens():
    assert results.rounded(645.0, 180.0) == "640" and results.rounded(806.2, 160.0) == "810"
    assert results.rounded(12_345.0, 40.0) == "12,340"


def test_a_time_known_only_to_hundreds_is_shown_to_hundreds():
    assert results.with_spread(57_119.0, 56_979.0, 57_160.0) == "57,100 (57,000-57,200)"
    assert results.with_spread(9.4, 7.2, 11.5) == "9.4 (7.2-11.5)"


def test_a_ratio_column_is_rounded_to_the_spreads_of_both_times():
    from helpers.gpu import Timing

    floor = Timing(0.0283, 0.0279, 0.0287, None)
    frame = pd.DataFrame({"time_ms": [0.0429], "time_lo": [0.0428], "time_hi": [0.0430],
                          "x_gather_floor": [0.0429 / 0.0283]})
    frame.attrs.update(derived={"x_gather_floor": ["time", floor]})
    assert list(results.show(frame, header=False)["x_gather_floor"]) == ["1.52"]
    frame.attrs.update(derived={"x_gather_floor": "time"})          # the numerator's spread alone: finer
    assert list(results.show(frame, header=False)["x_gather_floor"]) == ["1.516"]


def test_a_range_below_zero_reads_with_to():
    assert results.difference((0.13, 0.05, 0.2), (0.0, -0.05, 0.11), scale=1e3) == "130 (-60 to 250)"


def test_a_value_near_zero_with_a_wide_range_gets_no_extra_digits():
    assert results.with_spread(-0.044, -0.171, 0.032) == "-0.04 (-0.17 to 0.03)"
    assert results.rounded(0.0012, 0.5) == "0.00"


def test_one_sample_keeps_two_significant_digits():
    assert results.one_sample(42_890.0) == "43,000"
    assert results.one_sample(0.000224) == "0.00022"
    assert results.one_sample(0.4412) == "0.44"
    assert results.one_sample(7.04) == "7"


def test_timing_of_reads_a_row_a_frame_or_a_tuple_row():
    frame = pd.DataFrame({"fused_ms": [2.0, 3.0], "fused_lo": [1.9, 2.8], "fused_hi": [2.2, 3.1]})
    assert results.timing_of(frame.iloc[1], "fused") == (3.0, 2.8, 3.1)
    assert results.timing_of(next(frame.itertuples()), "fused") == (2.0, 1.9, 2.2)
    assert list(results.timing_of(frame, "fused")[2]) == [2.2, 3.1]
    assert results.timing_columns("fused", (2.0, 1.9, 2.2)) == {"fused_ms": 2.0, "fused_lo": 1.9, "fused_hi": 2.2}


def test_a_derived_value_carries_the_spread_of_every_timing():
    assert results.derived(1000 / 3, (1.0, 0.99, 1.01)) == "333"             # 2% of 333: units
    assert results.derived(1000 / 3, (1.0, 0.99, 1.01), (1.0, 0.8, 1.2)) == "330"   # 42%: tens
    assert results.derived(5.0, (0.0, 0.0, 0.0)) == "5"                         # no positive median: plain
