"""helpers.lectures.l20_convergence, the plumbing of lectures 20-22, on the CPU: the rates and yardsticks lecture 20
prints, the sentences a control or a part supports, interleaved timing wired to ``gpu.time_paired``, the
order and sweep summaries, the sizes beyond L2, the T4 model; and the drawings of helpers.measure.figures."""
import math

import matplotlib
import numpy as np
import pandas as pd
import pytest

matplotlib.use("Agg")

from helpers.lectures import l20_convergence as convergence
from helpers.driver import floors
from helpers.measure import figures, gpu, verdicts   # noqa: E402
from helpers.driver.iteration import Captured           # noqa: E402
from helpers.measure.gpu import Timing                          # noqa: E402
from helpers.core.arguments import ArgumentError, ArrayKindError # noqa: E402
from fake_arrays import GpuArray, masked, matrix                # noqa: E402


def paired(*samples):
    """Timings measured together, as gpu.time_paired returns them."""
    return [Timing.of(s, pairing=987) for s in samples]


def verdict(ratio, word, times=None):
    return verdicts.Verdict(ratio, ratio * 0.99, ratio * 1.01, word, True, 15)


def test_shrink_factor_fits_a_geometric_series_and_skips_zeros():
    series = 3.0 * 0.85 ** np.arange(40)
    assert convergence.shrink_factor(series) == pytest.approx(0.85, rel=1e-12)
    assert convergence.shrink_factor(np.r_[series[:20], 0.0, series[21:]], start=5) == pytest.approx(0.85)
    with pytest.raises(ValueError, match="at least two positive"):
        convergence.shrink_factor([1.0, 0.0, 0.0])


def test_average_shrink_is_the_reports_rate():
    assert convergence.average_shrink(0.6913818, 4.030835e-07, 9) == pytest.approx(0.2029, abs=1e-4)
    assert convergence.average_shrink(1.0, 0.25, 2) == pytest.approx(0.5)
    with pytest.raises(ValueError):
        convergence.average_shrink(1.0, 0.5, 0)


def test_first_below_counts_from_one_and_says_none():
    assert convergence.first_below([1.0, 0.1, 1e-7, 1e-9], 1e-6) == 3
    assert convergence.first_below([1.0, 0.5], 1e-6) is None


def test_ulp_sum_adds_one_float32_ulp_per_rank():
    ranks = np.full(4, 0.25)
    assert convergence.ulp_sum(ranks) == pytest.approx(4 * float(np.spacing(np.float32(0.25))))
    assert convergence.short(1e-6) == "1e-6" and convergence.short(1e-9) == "1e-9"


@pytest.mark.parametrize("call, name", [
    (lambda x: convergence.shrink_factor(x), "values"),
    (lambda x: convergence.first_below(x, 1.5), "values"),
    (lambda x: convergence.ulp_sum(x), "ranks"),
    (lambda x: figures.draw_dropped_lanes(x), "in_degree"),
])
@pytest.mark.parametrize("kind", ["masked", "gpu"])
def test_series_and_ranks_refuse_masked_and_gpu_arrays(call, name, kind):
    """A masked entry was read through its mask (ulp_sum counted the hidden 9.0), a CuPy array met NumPy's
    bare TypeError."""
    x, message = (masked(), "is a masked array with masked entries") if kind == "masked" else \
        (GpuArray(), r"is a CuPy array in GPU memory.*\.get\(\)")
    with pytest.raises(ArrayKindError, match=f"{name} {message}"):
        call(x)


def test_sectors_per_edge_refuses_masked_ids_but_runs_on_gpu_arrays_too():
    with pytest.raises(ArrayKindError, match="in_sources is a masked array"):
        floors.sectors_per_edge(masked(tuple(range(64)), hidden=3))
    with pytest.raises(ArrayKindError, match=r"in_sources is a CuPy array .*in_sources\.get\(\)"):
        floors.sectors_per_edge(GpuArray())              # without CuPy it cannot be read on the GPU
    assert floors.sectors_per_edge(list(range(64))) == pytest.approx(4 / 32)    # was list's AttributeError


@pytest.mark.parametrize("call, name", [
    (lambda x: convergence.shrink_factor(x), "values"),
    (lambda x: convergence.first_below(x, 1.5), "values"),
    (lambda x: convergence.ulp_sum(x), "ranks"),
    (lambda x: figures.draw_dropped_lanes(x), "in_degree"),
])
def test_series_refuse_a_masked_array_in_a_list_a_matrix_and_a_0d_array(call, name):
    """Was: [masked array] was read through its mask (ulp_sum counted the hidden 9.0, first_below found it),
    and a numpy.matrix or a 0-d array met IndexError or was read as a one-value series."""
    with pytest.raises(ArrayKindError, match=f"{name} holds a masked array with masked entries"):
        call([masked()])
    with pytest.raises(ArrayKindError, match=rf"{name} is a numpy\.matrix"):
        call(matrix())
    with pytest.raises(ArrayKindError, match=rf"{name} must be a 1-D array, got shape \(\)"):
        call(np.array(2.0))


def test_per_event_divides_paired_differences_and_refuses_unpaired_ones():
    a, b = paired([10.0, 12.0, 11.0], [4.0, 5.0, 5.0])
    cost = convergence.per_event(a, b, 3)
    np.testing.assert_allclose(cost.samples_ms, [2000.0, 7000 / 3, 2000.0])
    with pytest.raises(ValueError, match="measured together"):
        convergence.per_event(Timing.of([1.0, 2.0]), Timing.of([1.0, 2.0]), 1)
    with pytest.raises(ValueError, match="count"):
        convergence.per_event(a, b, 0)


def test_verdict_table_compares_each_pair():
    slow, fast = paired([2.0, 2.1, 2.0, 1.9, 2.05], [1.0, 1.02, 0.99, 0.98, 1.01])
    table = convergence.verdict_table({"slow": slow, "fast": fast}, [("slow", "fast"), ("fast", "slow")])
    assert list(table["verdict"]) == ["slower", "faster"]
    assert table["ratio"].iloc[0] == pytest.approx(2.0, rel=0.03)


@pytest.mark.parametrize("control, expected", [
    (verdict(1.0, "no measurable difference"), "disappears without the hub: the control supports the hub"),
    (verdict(1.02, "not settled"), "the control is not settled; more trials would say how much of it comes"),
    (verdict(0.8, "faster"), "reverses without the hub: all of it comes from the hub, and something else"),
    (verdict(1.2, "slower"), "shrinks from about 2.0x to about 1.2x without the hub: most of it comes from the hub"),
    (verdict(1.6, "slower"), "shrinks from about 2.0x to about 1.6x without the hub: part of it comes from the hub"),
    (verdict(1.97, "slower"), "stays at about 2.0x without the hub: the control does not support the hub"),
])
def test_control_says_what_the_control_supports_whatever_the_outcome(control, expected):
    effect = verdict(2.0, "slower")
    assert expected in convergence.control_says(effect, control, "the gap", "the hub")


def test_control_says_nothing_to_explain_without_an_effect():
    said = convergence.control_says(verdict(1.0, "no measurable difference"), verdict(1.0, "slower"), "x", "y")
    assert "nothing for the control to explain" in said


def test_part_explains_compares_the_part_with_the_whole():
    assert "the floor explains it" in convergence.part_explains(
        verdict(1.10, "slower"), verdict(1.12, "slower"), "fused's change", "the floor")
    said = convergence.part_explains(verdict(4.3, "slower"), verdict(1.12, "slower"), "hybrid's", "the floor")
    assert "something besides the floor adds the rest" in said and "4.3x" in said


class FakeGraph:
    def __init__(self):
        self.launched = []

    def launch(self, stream):
        self.launched.append(stream)


def test_time_iterations_scales_per_iteration_and_puts_graphs_on_their_streams(monkeypatch):
    seen = {}

    def fake_time_paired(runs, *, launches, trials, streams):
        seen.update(runs=runs, launches=launches, trials=trials, streams=streams)
        for run in runs.values():
            run()
        return {name: Timing.of([20.0, 40.0], pairing=5) for name in runs}

    class Step:
        calls = 0

        def run(self):
            Step.calls += 1

    called = []
    graph = FakeGraph()
    monkeypatch.setattr(gpu, "time_paired", fake_time_paired)
    timings = convergence.time_iterations({"graph": Captured(graph, None, "S"), "step": Step(),
                                           "spmv": lambda: called.append(1)}, iterations=10, trials=3)
    assert seen["launches"] == 1 and seen["trials"] == 3 and seen["streams"] == {"graph": "S"}
    assert graph.launched == ["S"] and Step.calls == 10 and len(called) == 10
    for timing in timings.values():
        np.testing.assert_allclose(timing.samples_ms, [2.0, 4.0])
        assert timing.pairing == 5
    with pytest.raises(TypeError, match="a CUDA graph, an iteration object or a callable"):
        convergence.time_iterations({"bad": 3})


def test_order_summary_says_when_reuse_did_more_than_the_sector_count():
    given, out = paired([6.7, 6.6, 6.8, 6.7], [2.9, 3.0, 2.95, 2.97])
    fused_verdict = verdict(0.47, "faster")
    table = pd.DataFrame([
        {"order": "given", "sectors_per_edge": 1.0, "gather": given, "fused: verdict": np.nan,
         "repaid after (iterations)": np.nan},
        {"order": "out-degree", "sectors_per_edge": 0.998, "gather": out, "fused: verdict": fused_verdict,
         "repaid after (iterations)": 13.2}])
    lines = convergence.order_summary(table, "fused")
    assert lines[0] == "out-degree: the gather floor is about 2.3x faster than in the given order."
    assert "The sector requests did not fall: reuse of cached sectors did the rest" in lines[1]
    assert "fused in this order is about 2.1x faster than in the given order" in lines[2]
    assert "repaid after about 13 fused iterations" in lines[3]
    for per_edge, moved in ((0.9, "fell by a factor of only 1.11"), (1.05, "even rose, by 5%")):
        table.loc[1, "sectors_per_edge"] = per_edge
        assert f"The sector requests {moved}:" in convergence.order_summary(table, "fused")[1]


def test_sweep_summary_names_the_fastest_size_and_the_one_segment_control():
    half, whole, fused = paired([3.8, 3.9, 3.8, 3.85], [7.0, 7.1, 7.05, 7.0], [8.5, 8.6, 8.55, 8.5])
    sweep = pd.DataFrame([
        {"variant": "segments of 0.5 x L2", "segments": 5, "MiB of values": 25.0, "iteration": half},
        {"variant": "segments of 4 x L2", "segments": 1, "MiB of values": 200.0, "iteration": whole}])
    timings = {"segments of 0.5 x L2": half, "segments of 4 x L2": whole, "fused (no segments)": fused}
    lines = convergence.sweep_summary(sweep, timings, floor=Timing.of([6.6, 6.7, 6.65]))
    assert lines[0] == "fastest by median: segments of 0.5 x L2 (5 segment(s))"
    assert lines[1].startswith("blocked, half of L2 is about 2.2x faster than fused")
    assert "than the gather floor" in lines[2]
    assert lines[3].startswith("1 segment(s) of 200 MiB is about 1.8x slower than half of L2")


def test_sizes_beyond_l2_shrink_to_fit_the_free_memory():
    l2 = 50 * 2**20
    n, m, wanted = convergence.beyond_l2_size(l2, 80 * 2**30)
    assert n == wanted == int(2.5 * l2 / 4) and m == 9 * n
    n_small, _, wanted = convergence.beyond_l2_size(l2, 4 * 2**30)
    assert n_small < wanted and convergence.peak_bytes(n_small, 9 * n_small) <= 0.8 * 4 * 2**30
    assert convergence.copies_beyond_l2(4 * 2**20, 875_713) == 3
    assert convergence.copies_beyond_l2(50 * 2**20, 875_713) == 38


def test_t4_model_applies_the_drivers_choice_and_models_the_blocked_iteration_on_a_t4():
    table = convergence.t4_model({"web": (875_713, 5_105_039, 0.77), "small": (100_000, 500_000, 1.0)})
    web, small = table.iloc[0], table.iloc[1]
    assert web["vector / a T4's L2"] == pytest.approx(4 * 875_713 / floors.T4_L2_BYTES)
    assert web["pg.choose on a T4"] == "times blocked against fused" and web["segments of 2 MiB"] == 2
    assert small["pg.choose on a T4"] == "fused"
    # 2 segments of 2 MiB: the in-links, 16 bytes for each of at most 2N rows, the vertex pass; 320 GB/s
    want = (4 * 5_105_039 + 16 * 2 * 875_713 + 20 * 875_713) / 320e9 * 1e3
    assert web["blocked ms (at most)"] == pytest.approx(want)
    assert web["gather, all from L2 ms"] < web["gather, all from DRAM ms"]
    assert "not a measurement" in table.attrs["note"]


def test_timing_frame_keeps_timings_for_show_and_chart():
    frame = convergence.timing_frame({"a": Timing.of([1.0, 2.0])}, "kernel", gpu="test GPU", graph="g")
    assert list(frame.columns) == ["variant", "kernel"] and frame.attrs["gpu"] == "test GPU"
    assert isinstance(frame.at[0, "kernel"], Timing)


def test_the_drawings_draw_what_they_say():
    ax = figures.draw_tree_reduction(16)
    assert [t.get_text() for t in ax.get_yticklabels()] == ["loads", "stride 8", "stride 4", "stride 2",
                                                           "stride 1"]
    assert len(ax.texts) == 1 + 8 + 4 + 2 + 1     # the barrier's label and one arrow per addition
    with pytest.raises(ValueError, match="power of two"):
        figures.draw_tree_reduction(12)
    ax = figures.draw_dropped_lanes([3, 40])
    crossed = ax.collections[-1].get_offsets()
    assert len(crossed) == 3 + 40 - 3      # all but lane 0's: the first of the 3; positions 0, 32 of the 40
    ax = figures.draw_segments(num_vertices=24, num_edges=50, segment=8)
    assert [t.get_text() for t in ax.texts] == ["pass 0", "pass 1", "pass 2"]
    for seed, message in ((-1, "at least 0"), (0.5, "an integer"), (2**63, "at most")):
        with pytest.raises(ArgumentError, match=f"seed must be {message}"):
            figures.draw_segments(seed=seed)
    assert math.isclose(ax.get_xlim()[1], 23.5)
