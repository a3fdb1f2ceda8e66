import json

import pytest

from helpers import bench, generators
from helpers.reference import DAMPING, max_abs_diff, pagerank_step, teleport_vector


def test_cpu_baselines_compute_the_reference_step():
    graph = generators.random_graph(500, seed=21)
    ranks = generators.np.random.default_rng(0).random(500)
    ranks /= ranks.sum()
    expected = pagerank_step(graph, ranks, DAMPING, teleport_vector(500))
    assert max_abs_diff(bench.numpy_step(graph, ranks), expected) < 1e-15
    assert max_abs_diff(bench.python_step(graph, ranks), expected) < 1e-15


def test_without_a_gpu_the_bench_says_so_and_runs_the_cpu_part(tmp_path, capsys):
    if bench.gpu.has_gpu():
        pytest.skip("this machine has a GPU: the GPU suite runs the whole bench")
    assert bench.main(["--vertices", "3000", "--edges", "15000", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "no GPU: the GPU part is skipped" in out and "GPU: none" in out
    result = json.loads((tmp_path / "bench.json").read_text())
    assert result["vertices"] == 3000 and result["edges"] == 15000 and result["norm"] == "L1"
    assert set(result["cpu_ms_per_iteration"]) == {"numpy", "scipy", "python"}
    assert all(v > 0 for v in result["cpu_ms_per_iteration"].values())
