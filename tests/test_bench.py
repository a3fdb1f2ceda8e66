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
