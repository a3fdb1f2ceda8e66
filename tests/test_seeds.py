"""helpers.lectures.l13_seeds: what the six-versions report's own table implies, the busiest lane of the hybrid and the
degree bins against a lane-by-lane simulation, and the control tables' verdicts on made-up paired trials."""
import matplotlib
import numpy as np
import pandas as pd
import pytest

from helpers.lectures import l13_seeds as seeds
from helpers.measure.gpu import Timing
from helpers.core.arguments import ArrayKindError
from fake_arrays import GpuArray, masked, matrix

matplotlib.use("Agg")


def test_the_six_versions_claims_are_read_from_their_own_table():
    claims = seeds.six_versions_claims().set_index("vertices")
    assert list(claims.index) == [1_000, 5_000, 10_000, 50_000]
    assert claims["their speedup"].mean() == pytest.approx(29.1, abs=0.05)      # their "29.1x" average
    assert claims.loc[10_000, "their ms per iteration"] == 79.5
    assert claims.loc[10_000, "bytes per iteration"] == 4 * 50_000 + 20 * 10_000
    assert claims.loc[10_000, "GB/s their time implies"] == pytest.approx(400_000 / 79.5e-3 / 1e9)
    assert claims.loc[50_000, "us per iteration at 85%"] == pytest.approx(2e6 / (0.85 * 760e9) * 1e6)
    lines = seeds.six_versions_reading(seeds.six_versions_claims())
    assert "29.1x" in lines[0] and "N^2.0" in lines[1] and "(N^1.9)" in lines[1]
    assert "40 MB/s" in lines[2] and "5.3e-05" in lines[2]
    assert lines[3].endswith("would take 3.1 us; their table says 1,980 ms")


def test_growth_exponent_recovers_a_power_law():
    sizes = np.array([1e3, 1e4, 5e4])
    assert seeds.growth_exponent(sizes, 3 * sizes**1.5) == pytest.approx(1.5)


def simulate_warps(assignments):
    """Steps of each warp from explicit (warp, phase, lane, in-links walked): in every phase the warp waits
    for its busiest lane (a shuffle or a ballot ends the phase); the phases add up."""
    frame = pd.DataFrame(assignments, columns=["warp", "phase", "lane", "steps"])
    per_lane = frame.groupby(["warp", "phase", "lane"])["steps"].sum()
    return per_lane.groupby(level=["warp", "phase"]).max().groupby(level="warp").sum().to_numpy()


def test_the_hybrid_busiest_lane_matches_a_lane_by_lane_simulation():
    degree = np.random.default_rng(1).zipf(1.6, 1_000).clip(0, 5_000) - 1
    work = []
    for v, d in enumerate(degree):
        warp, lane = divmod(v, 32)
        work.append((warp, -1, lane, 0 if d > 32 else d))         # the light loop, before the ballot
        if d > 32:          # then every lane takes a 32-way share of each heavy list, one list at a time
            work += [(warp, v, other, len(range(other, d, 32))) for other in range(32)]
    assert np.array_equal(seeds.busiest_lane_hybrid(degree), simulate_warps(work))
    assert seeds.busiest_lane_hybrid(np.array([5, 40, 0])).tolist() == [5 + 2]


def test_the_binned_busiest_lane_matches_a_lane_by_lane_simulation():
    degree = np.random.default_rng(2).zipf(1.5, 3_000).clip(0, 20_000) - 1
    work, warp = [], 0
    light = degree[degree < 32]
    for i, d in enumerate(light):
        work.append((warp + i // 32, 0, i % 32, d))
    warp += -(-light.size // 32)
    for d in degree[(degree >= 32) & (degree < 1024)]:
        work += [(warp, 0, lane, len(range(lane, d, 32))) for lane in range(32)]
        warp += 1
    for d in degree[degree >= 1024]:
        for thread in range(256):
            work.append((warp + thread // 32, 0, thread % 32, len(range(thread, d, 256))))
        warp += 8
    assert (degree >= 1024).any() and ((degree >= 32) & (degree < 1024)).any()
    assert np.array_equal(seeds.busiest_lane_binned(degree), simulate_warps(work))


def paired(samples):
    return {key: Timing.of(values, pairing=7) for key, values in samples.items()}


def control_timings():
    rng = np.random.default_rng(3)
    noise = lambda: 1 + 0.002 * rng.standard_normal(15)             # noqa: E731
    return paired({("base", seeds.WHOLE): 0.20 * noise(), ("base", seeds.HUBLESS): 0.06 * noise(),
                   ("tile", seeds.WHOLE): 0.47 * noise(), ("tile", seeds.HUBLESS): 0.10 * noise(),
                   ("warp", seeds.WHOLE): 0.13 * noise(), ("warp", seeds.HUBLESS): 0.13 * noise()})


def test_the_control_table_decides_every_pair_by_the_verdict_rule():
    timings = control_timings()
    table = seeds.control_table(timings, "base", hub_in_links=6_000).set_index("kernel")
    assert table.loc["tile", f"/ base, {seeds.WHOLE}"].endswith("(slower)")
    assert table.loc["tile", f"/ base, {seeds.WHOLE}"].startswith("2.3")
    assert table.loc["warp", f"{seeds.WHOLE} / {seeds.HUBLESS}"].endswith("(no measurable difference)")
    assert table.loc["base", f"/ base, {seeds.HUBLESS}"] == "-"
    assert table.loc["tile", "in-links removed add, ms"] == pytest.approx(0.37, rel=0.02)
    assert table.loc["tile", "per in-link of the largest hub, ns"] == pytest.approx(0.37e6 / 6_000, rel=0.02)
    assert "15 paired trials" in table.attrs["timing"]


def test_the_gap_verdict_says_whether_the_control_closes_a_gap():
    timings = control_timings()
    gap = seeds.gap_verdict(timings, "tile", "base")
    assert gap.word == "slower" and gap.ratio == pytest.approx((0.47 / 0.20) / (0.10 / 0.06), rel=0.01)
    sentence = seeds.gap_sentence(gap, "tile", "base")
    assert sentence == (f"tile's time over base's is about 1.4x larger on the {seeds.WHOLE} than "
                        f"{seeds.HUBLESS}")
    same = seeds.gap_verdict(paired({("a", "g"): [1.0, 1.01, 0.99, 1.0], ("b", "g"): [1.0, 1.0, 1.0, 1.0],
                                     ("a", "h"): [2.0, 2.02, 1.98, 2.0], ("b", "h"): [2.0] * 4}), "a", "b")
    assert same.word == "no measurable difference"
    assert "is the same on" in seeds.gap_sentence(same, "a", "b")


def test_control_sentences_carry_one_number_each():
    lines = seeds.control_sentences(control_timings(), "base")
    assert f"{seeds.WHOLE}: tile is about 2.3x slower than base" in lines
    no_change = (f"control: warp {seeds.HUBLESS} and on the {seeds.WHOLE}: "
                 "no measurable difference (under 3%)")
    assert no_change in lines
    assert f"control: tile {seeds.HUBLESS} is about 4.7x faster than on the {seeds.WHOLE}" in lines
    assert len(lines) == 2 * 2 + 3


def test_child_grid_tables_compare_each_launch_with_the_one_without_children():
    timings = paired({(6000, "g"): [0.20, 0.21, 0.20, 0.20], (256, "g"): [0.10, 0.11, 0.10, 0.10],
                      (32, "g"): [0.60, 0.62, 0.61, 0.60]})
    children = {(6000, "g"): 0, (256, "g"): 200, (32, "g"): 13_000}
    table = seeds.child_grid_table(timings, children, {"g": 6000}).set_index("threshold")
    assert table.loc[6000, "/ no child grid"] == "-" and np.isnan(table.loc[6000, "net us per child grid"])
    assert table.loc[256, "/ no child grid"].endswith("(faster)")
    assert table.loc[256, "net us per child grid"] == pytest.approx(-0.1 * 1e3 / 200)
    lines = seeds.child_grid_sentences(timings, children, {"g": 6000})
    assert lines[0].startswith("g, threshold 256 (200 child grids): the launch with them is about 2.0x "
                               "faster than the launch without")
    assert lines[0].endswith("the child grids paid for themselves")
    assert lines[1].endswith("the child grids did not pay for themselves") and len(lines) == 2


def test_the_plots_draw_every_kernel_and_graph():
    ax = seeds.plot_control(control_timings(), title="t")
    assert len(ax.patches) == 6 and [t.get_text() for t in ax.get_yticklabels()] == ["base", "tile", "warp"]
    claims = seeds.six_versions_claims()
    measured = pd.DataFrame({"vertices": [1_000, 10_000], "iteration": [Timing.of([0.02, 0.021]),
                                                                         Timing.of([0.03, 0.031])]})
    ax = seeds.plot_six_versions(claims, measured)
    assert len(ax.get_legend().get_texts()) == 3


def test_the_measured_six_versions_lines_carry_one_number_each():
    measured = pd.DataFrame({"vertices": [1_000, 10_000, 50_000],
                             "iteration": [Timing.of([0.010, 0.011]), Timing.of([0.012, 0.013]),
                                           Timing.of([0.020, 0.021])],
                             "share of this GPU's peak": [0.001, 0.005, 0.0123],
                             "speedup over NumPy": [5.0, 40.0, 123.4]})
    lines = seeds.six_versions_measured_reading(measured)
    assert lines == ["here, their kernel's whole iteration grows as N^0.2 from 1,000 to 50,000 vertices",
                     "at 50,000 vertices it takes 20 us per iteration; their table says 1,980 ms",
                     "at 50,000 vertices it moves bytes at 1.2% of this GPU's peak, by the byte model",
                     "at 50,000 vertices it is about 120x as fast as the course's NumPy iteration on this CPU "
                     "(an O(E) loop, not an O(N^2) scan)"]
    flat = measured.assign(iteration=[Timing.of([0.0100, 0.0101]), Timing.of([0.0102, 0.0103]),
                                      Timing.of([0.0104, 0.0105])])
    first = seeds.six_versions_measured_reading(flat)[0]
    assert "barely grows with N" in first and "(as N^0.01)" in first and "launch" not in first


def test_sizes_times_and_in_degrees_refuse_masked_arrays_and_host_ones_gpu_arrays():
    with pytest.raises(ArrayKindError, match="times is a masked array with masked entries"):
        seeds.growth_exponent([1, 2, 3], masked())
    with pytest.raises(ArrayKindError, match=r"sizes is a CuPy array .*sizes\.get\(\)"):
        seeds.growth_exponent(GpuArray(), [1, 2, 3])
    for busiest in (seeds.busiest_lane_hybrid, seeds.busiest_lane_binned):
        with pytest.raises(ArrayKindError, match="in_degree is a masked array"):
            busiest(masked((40, 3, 2000)))


def test_in_degrees_and_series_refuse_masks_in_lists_matrices_and_gpu_arrays_they_cannot_copy():
    """Was: [masked array] was read through its mask (the hidden in-degree 2000 became a warp's work), a GPU
    array without CuPy's .get() met int()'s TypeError, and a numpy.matrix polyfit's."""
    for busiest in (seeds.busiest_lane_hybrid, seeds.busiest_lane_binned):
        with pytest.raises(ArrayKindError, match="in_degree holds a masked array with masked entries"):
            busiest([masked((40, 2000, 3))])
        with pytest.raises(ArrayKindError, match=r"in_degree is a CuPy array .*in_degree\.get\(\)"):
            busiest(GpuArray())
        with pytest.raises(ArrayKindError, match=r"in_degree must be a 1-D array, got shape \(\)"):
            busiest(np.array(40))
    with pytest.raises(ArrayKindError, match=r"sizes is a numpy\.matrix"):
        seeds.growth_exponent(matrix(), [1.0, 2.0, 3.0])
    with pytest.raises(ArrayKindError, match=r"times must be a 1-D array, got shape \(\)"):
        seeds.growth_exponent([1.0, 2.0, 3.0], np.array(2.0))


@pytest.mark.parametrize("seed", [-1, 2.5, np.float64(42), True, 2**63])
def test_the_six_versions_seed_is_checked_before_any_gpu_work(seed):
    from helpers.core.arguments import ArgumentError
    with pytest.raises(ArgumentError, match="seed must be"):
        seeds.six_versions_at_their_sizes("six_versions", seed=seed)
