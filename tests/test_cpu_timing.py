"""CPU steps timed side by side for the verdict rule (helpers.lectures.l03_cpu_timing): interleaved trials that share a
pairing id no GPU timing has, a verdict that sees a real difference, clear errors for bad input."""
import time

import numpy as np
import pytest

from helpers.lectures import l03_cpu_timing as cpu_timing
from helpers.core import generators
from helpers.measure import figures, verdicts
from helpers.measure.gpu import Timing
from helpers.core.arguments import ArgumentError
from helpers.core.reference import DAMPING, pagerank_step, teleport_vector


def test_runs_are_interleaved_in_a_rotating_order_and_share_one_negative_pairing():
    calls = []
    runs = {name: (lambda name=name: calls.append(name)) for name in ("a", "b", "c")}
    timings = cpu_timing.time_paired(runs, trials=4, warmup=1)
    assert calls[:3] == ["a", "b", "c"]                       # the warm-up, once each
    assert calls[3:] == ["a", "b", "c", "b", "c", "a", "c", "a", "b", "a", "b", "c"]
    assert {t.samples_ms.size for t in timings.values()} == {4}
    pairings = {t.pairing for t in timings.values()}
    assert len(pairings) == 1 and pairings.pop() < 0
    again = cpu_timing.time_paired(runs, trials=2, warmup=0)
    assert again["a"].pairing != timings["a"].pairing
    assert verdicts.compare(again["a"], timings["a"]).paired is False


@pytest.mark.timing
def test_a_step_four_times_as_long_is_called_slower_by_the_verdict_rule():
    timings = cpu_timing.time_paired({"long": lambda: time.sleep(0.008), "short": lambda: time.sleep(0.002)},
                                     trials=7, warmup=0)
    verdict = verdicts.compare(timings["long"], timings["short"])
    assert verdict.paired and verdict.word == "slower", verdict
    assert 2.5 < verdict.ratio < 6, verdict.ratio


@pytest.mark.parametrize("runs, trials, message", [
    ({}, 3, "runs must be a non-empty dict"),
    ([lambda: None], 3, "runs must be a non-empty dict"),
    ({"x": 42}, 3, r"runs\['x'\] must be callable, got int"),
    ({"x": lambda: None}, 1, "trials"),
    ({"x": lambda: None}, 2.0, "trials"),
])
def test_bad_input_is_refused_before_anything_runs(runs, trials, message):
    with pytest.raises(ArgumentError, match=message):
        cpu_timing.time_paired(runs, trials=trials)


def test_numba_runs_on_one_thread_and_on_every_core_give_the_reference_change():
    pytest.importorskip("numba")
    graph = generators.random_graph(500, seed=3)
    runs, description = cpu_timing.numba_thread_runs(graph)
    assert "numba, 1 thread" in runs and description.startswith("Numba, ")
    uniform = np.full(graph.num_vertices, 1.0 / graph.num_vertices)
    expected = np.abs(pagerank_step(graph, uniform, DAMPING, teleport_vector(graph.num_vertices)) - uniform).sum()
    for name, run in runs.items():
        assert abs(run() - expected) < 1e-12, name


def test_the_load_note_names_the_cores():
    note = cpu_timing.load_note("now")
    assert note.startswith("load average (1 min) now: ") and f"on {cpu_timing.usable_cores()} cores" in note


def test_rates_keep_one_sample_per_trial_and_the_pairing():
    timing = Timing.of([2.0, 4.0, 1.0], pairing=-7)
    rate = figures.million_per_second(timing, 6_000_000)
    assert rate.samples_ms.tolist() == [3000.0, 1500.0, 6000.0] and rate.pairing == -7
    assert (rate.median_ms, rate.min_ms, rate.max_ms) == (3000.0, 1500.0, 6000.0)


def test_the_line_goes_through_the_medians_with_the_ranges_as_error_bars():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    _, ax = plt.subplots()
    bars = figures.plot_medians_with_ranges(ax, [10, 20], [Timing.of([1.0, 2.0, 4.0]),
                                                           Timing.of([3.0, 3.5, 5.0])], label="x")
    line, _, (vertical,) = bars.lines
    assert line.get_ydata().tolist() == [2.0, 3.5]
    segments = vertical.get_segments()
    assert [s[:, 1].tolist() for s in segments] == [[1.0, 4.0], [3.0, 5.0]]
    plt.close("all")
