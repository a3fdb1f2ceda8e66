"""helpers.lectures.l10_hubs on the CPU: the hub summary, the longest block of a timeline, and the with/without table
assembled from interleaved timings (the GPU parts replaced by stand-ins that record what they were given)."""
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from helpers.lectures import l10_hubs as hubs
from helpers.measure.gpu import Timing
from helpers.core.graph import from_edges


def star_graph():
    """Vertex 0 has 6 in-links (a hub above 3), vertex 1 has 2; 10 edges in all."""
    sources = [1, 2, 3, 4, 5, 6, 0, 2, 3, 4]
    targets = [0, 0, 0, 0, 0, 0, 1, 1, 5, 6]
    return from_edges(sources, targets, 7, name="star")


def test_hub_summary_counts_the_vertices_above_the_threshold_and_their_share():
    summary = hubs.hub_summary(star_graph(), above=3)
    assert summary == {"hubs": 1, "in-links": 6, "share of edges": 0.6, "largest in-degree": 6}
    assert hubs.hub_summary(star_graph(), above=6)["hubs"] == 0      # "more than", not "at least"


def test_longest_block_names_the_block_its_duration_and_the_launch_span():
    timeline = pd.DataFrame({"sm": [0, 1, 0, 2], "start_us": [0.0, 0.5, 1.0, 2.0],
                             "stop_us": [1.0, 9.5, 2.0, 3.0]})
    block = hubs.longest_block(timeline)
    assert block == {"block": 1, "longest_us": 9.0, "sm": 1, "median_us": 1.0, "span_us": 9.5}
    with pytest.raises(ValueError, match="no blocks"):
        hubs.longest_block(timeline.iloc[:0])


@pytest.mark.parametrize("names, part, message", [([], "kernel", "at least one variant"),
                                                  (["pull_thread"], "launch", "part must be")])
def test_with_and_without_hubs_refuses_what_it_cannot_time(names, part, message):
    with pytest.raises(ValueError, match=message):
        hubs.with_and_without_hubs(star_graph(), names, part=part)


def fake_gpu(monkeypatch, seconds):
    """Stand-ins for the GPU: device graphs that remember their host graph, steps that name what they run,
    and time_paired returning, per run, samples from ``seconds(name, graph, part)`` with one pairing id."""
    import helpers.driver
    import helpers.measure.gpu

    seen = {"graphs": [], "runs": None}

    class FakeDeviceGraph:
        def __init__(self, graph):
            seen["graphs"].append(graph)
            self.graph = graph

    class Step:
        def run(self):
            pass

        def launch_kernel(self):
            pass

    def make_iteration(device, name):
        return Step()

    def time_paired(runs, launches, trials):
        seen["runs"] = runs
        rng = np.random.default_rng(0)
        out = {}
        for (name, label), run in runs.items():
            part = "kernel" if run.__name__ == "launch_kernel" else "iteration"
            base = seconds(name, label, part)
            out[(name, label)] = Timing.of(base * (1 + 0.001 * rng.standard_normal(trials)), pairing=7)
        return out

    monkeypatch.setattr(hubs, "DeviceGraph", FakeDeviceGraph)
    monkeypatch.setattr(hubs, "make_iteration", make_iteration)
    monkeypatch.setattr(hubs, "time_paired", time_paired)
    monkeypatch.setattr(hubs, "device_facts", lambda: SimpleNamespace(name="a fake GPU"))
    return seen


def test_with_and_without_hubs_times_both_graphs_together_and_gives_the_rules_verdicts(monkeypatch):
    times = {("pull_thread", "with hubs"): 1.5, ("pull_thread", "without hubs"): 0.2,
             ("pull_warp", "with hubs"): 0.13, ("pull_warp", "without hubs"): 0.13}
    seen = fake_gpu(monkeypatch, lambda name, label, part: times[(name, label)])
    table = hubs.with_and_without_hubs(star_graph(), ["pull_thread", "pull_warp"], above=3)
    control = seen["graphs"][1]
    assert control.num_vertices == 7 and int(control.in_degree[0]) == 0        # the hub's in-links are gone
    assert control.num_edges == 4 and int(control.in_degree[1]) == 2            # everything else stays
    assert set(seen["runs"]) == set(times)                                      # ONE interleaved measurement
    assert all(run.__name__ == "launch_kernel" for run in seen["runs"].values())
    rows = table.set_index("variant")
    assert rows.loc["pull_thread", "verdict"] == "faster without hubs"
    assert rows.loc["pull_warp", "verdict"] == "no measurable difference"
    assert rows.loc["pull_thread", "without / with"] == pytest.approx(0.2 / 1.5, rel=0.01)
    assert rows.loc["pull_thread", "with hubs"].pairing == rows.loc["pull_warp", "without hubs"].pairing
    assert "6 in-links (60.0% of the edges) of its 1 vertices above 3" in table.attrs["note"]
    assert table.attrs["gpu"] == "a fake GPU" and "sum over in-links alone" in table.attrs["timing"]


def test_with_and_without_hubs_times_whole_iterations_when_asked(monkeypatch):
    seen = fake_gpu(monkeypatch, lambda name, label, part: 1.0 if part == "iteration" else 9.0)
    table = hubs.with_and_without_hubs(star_graph(), "pull_contrib", above=3, part="iteration")
    assert all(run.__name__ == "run" for run in seen["runs"].values())
    assert table["variant"].tolist() == ["pull_contrib"] and "whole iteration" in table.attrs["timing"]
    assert table.loc[0, "with hubs"].median_ms == pytest.approx(1.0, rel=0.01)


def test_plot_with_and_without_draws_two_bars_per_variant():
    import matplotlib

    matplotlib.use("Agg")
    frame = pd.DataFrame({"variant": ["a", "b"], "with hubs": [Timing.of([1.0, 1.2]), Timing.of([2.0, 2.1])],
                          "without hubs": [Timing.of([0.5, 0.6]), Timing.of([2.0, 2.2])]})
    ax = hubs.plot_with_and_without(frame, title="t")
    widths = sorted(round(p.get_width(), 2) for p in ax.patches)
    assert widths == [0.55, 1.1, 2.05, 2.1]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["a", "b"]
