import json

import numpy as np
import pytest

from helpers import baselines, bench, generators
from helpers.reference import DAMPING, max_abs_diff, pagerank_step, teleport_vector


def test_cpu_baselines_compute_the_reference_step():
    graph = generators.random_graph(500, seed=21)
    ranks = np.random.default_rng(0).random(500)
    ranks /= ranks.sum()
    expected = pagerank_step(graph, ranks, DAMPING, teleport_vector(500))
    assert max_abs_diff(baselines.numpy_step(graph, ranks), expected) < 1e-15
    assert max_abs_diff(baselines.python_step(graph, ranks), expected) < 1e-15


def test_the_multicore_baseline_computes_the_reference_step_or_says_why_not():
    graph = generators.adversarial_graph(3_001, seed=4, hub_in_links=1_500)
    run, what = baselines.numba_parallel(graph)
    if run is None:
        assert "Numba is not installed" in what
        return
    assert "threads on" in what and baselines.cpu_description() in what
    change = run()
    uniform = np.full(graph.num_vertices, 1.0 / graph.num_vertices)
    expected = pagerank_step(graph, uniform, DAMPING, teleport_vector(graph.num_vertices))
    assert abs(change - np.abs(expected - uniform).sum()) < 1e-12


def test_the_cpu_is_named_with_its_cores():
    assert "core" in baselines.cpu_description()


def test_without_a_gpu_the_bench_says_so_and_runs_the_cpu_part(tmp_path, capsys):
    if bench.gpu.has_gpu():
        pytest.skip("this machine has a GPU: the GPU suite runs the whole bench")
    assert bench.main(["--vertices", "3000", "--edges", "15000", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "no GPU: the GPU part is skipped" in out and "GPU: none" in out
    assert f"writing results to {tmp_path.resolve()}" in out
    result = json.loads((tmp_path / "bench.json").read_text())
    assert result["norm"] == "L1" and "core" in result["cpu"]["description"]
    times = result["cpu"]["ms_per_iteration"]
    assert {"SciPy CSR, one core", "NumPy, one core", "pure Python (lecture 03's lesson)"} <= set(times)
    assert all(v > 0 for v in times.values())


@pytest.mark.parametrize("argv, message", [
    (["--edges", "100"], "--vertices and --edges go together"),
    (["--vertices", "100"], "--vertices and --edges go together"),
    (["--variants", "pull_fast"], "unknown variant(s): pull_fast"),
    (["--orders", "alphabetical"], "unknown order(s): alphabetical"),
    (["--trials", "0"], "at least 1"),
])
def test_inconsistent_bench_options_are_refused_without_a_gpu(argv, message, capsys):
    with pytest.raises(SystemExit) as stop:
        bench.main(argv)
    assert stop.value.code == 2 and message in capsys.readouterr().err


def test_every_bench_option_has_help_with_its_default(capsys):
    with pytest.raises(SystemExit):
        bench.main(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    for option in ("--vertices", "--edges", "--beyond-l2", "--variants", "--orders", "--launches", "--trials", "--out"):
        assert option in text
    assert "(default: bench-results)" in text and "(default: 20)" in text and "(default: 7)" in text


def test_the_targets_of_the_recorded_run_read_as_its_log_says_with_ranges():
    import pandas as pd
    from pathlib import Path
    from types import SimpleNamespace

    from helpers.gpu import Timing

    run = Path(__file__).resolve().parent.parent / "benchmarks" / "2026-11-22-h100"
    log = (run / "bench.log").read_text()
    floor = Timing(0.0279, 0.0278, 0.0285, np.array([0.0279]))      # the web-sized floor its log prints
    assert "random gather 0.0279 (0.0278-0.0285) ms" in log
    web = {"variants": pd.read_csv(run / "web_variants.csv"), "floor": SimpleNamespace(gather=floor)}
    big = {"orders": pd.read_csv(run / "beyond_l2_orders.csv")}
    found = bench.targets(web, big)
    assert [met for _, met, _ in found] == [False, False, True, False]
    for what, met, _ in found:
        assert f"{'MET ' if met else 'MISS'} {what}" in log
    web_line, best_line, floor_line, binned_line = (numbers for _, _, numbers in found)
    assert web_line.startswith("1.51 (1.48-1.52)x (0.0422 (0.0421-0.0424) ms against 0.0279 (0.0278-0.0285) ms)")
    assert best_line.startswith("1.36") and "2.960 (2.959-2.962) ms" in best_line
    assert floor_line.startswith("2.52") and "against 7.461" in floor_line
    assert "given: 8.52" in binned_line and "vs 8.46" in binned_line
