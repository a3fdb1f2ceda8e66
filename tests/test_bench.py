import json

import numpy as np
import pytest

from helpers.driver import baselines
from helpers import bench
from helpers.core import generators
from helpers.core.arguments import ArrayKindError
from helpers.core.reference import DAMPING, max_abs_diff, pagerank_step, teleport_vector
from helpers.measure.cpu import cpu_description
from fake_arrays import GpuArray, masked


def test_cpu_baselines_compute_the_reference_step():
    graph = generators.random_graph(500, seed=21)
    ranks = np.random.default_rng(0).random(500)
    ranks /= ranks.sum()
    expected = pagerank_step(graph, ranks, DAMPING, teleport_vector(500))
    assert max_abs_diff(baselines.numpy_step(graph, ranks), expected) < 1e-15
    assert max_abs_diff(baselines.python_step(graph, ranks), expected) < 1e-15


@pytest.mark.parametrize("step", [baselines.numpy_step, baselines.python_step])
def test_cpu_baselines_refuse_masked_and_gpu_ranks(step):
    graph = generators.cycle(3)
    with pytest.raises(ArrayKindError, match="ranks is a masked array with masked entries"):
        step(graph, masked((0.2, 0.5, 0.3)))
    with pytest.raises(ArrayKindError, match=r"ranks is a CuPy array .*ranks\.get\(\)"):
        step(graph, GpuArray())
    with pytest.raises(ArrayKindError, match=r"ranks must be a 1-D array, got shape \(\)"):
        step(graph, np.array(0.5))                       # was NumPy's or len()'s error
    with pytest.raises(ArrayKindError, match="ranks holds a masked array with masked entries"):
        step(graph, [0.2, np.ma.masked, 0.3])
    expected = pagerank_step(graph, np.full(3, 1 / 3), DAMPING, teleport_vector(3))
    assert max_abs_diff(step(graph, [1 / 3] * 3), expected) < 1e-15     # a list: was list's AttributeError


def test_the_multicore_baseline_computes_the_reference_step_or_says_why_not():
    graph = generators.adversarial_graph(3_001, seed=4, hub_in_links=1_500)
    run, what = baselines.numba_parallel(graph)
    if run is None:
        assert "Numba is not installed" in what
        return
    assert "threads on" in what and cpu_description() in what
    change = run()
    uniform = np.full(graph.num_vertices, 1.0 / graph.num_vertices)
    expected = pagerank_step(graph, uniform, DAMPING, teleport_vector(graph.num_vertices))
    assert abs(change - np.abs(expected - uniform).sum()) < 1e-12


def test_the_cpu_is_named_with_its_cores():
    assert "core" in cpu_description()


def test_without_a_gpu_the_bench_says_so_and_runs_the_cpu_part(tmp_path, capsys):
    if bench.gpu.has_gpu():
        pytest.skip("this machine has a GPU: the GPU suite runs the whole bench")
    assert bench.main(["--vertices", "3000", "--edges", "15000", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "no GPU: the GPU part is skipped" in out and "GPU: none" in out
    assert f"writing results to {tmp_path}" in out
    result = json.loads((tmp_path / "bench.json").read_text(encoding="utf-8"))
    assert result["norm"] == "L1" and "core" in result["cpu"]["description"]
    times = result["cpu"]["ms_per_iteration"]
    assert {"SciPy CSR, one core", "NumPy, one core", "pure Python (lecture 03's lesson)"} <= set(times)
    assert all(v > 0 for v in times.values())


@pytest.mark.parametrize("argv, message", [
    (["--edges", "100"], "--vertices and --edges go together"),
    (["--vertices", "100"], "--vertices and --edges go together"),
    (["--variants", "pull_fast"], "unknown variant 'pull_fast'; known variants: pull_thread, scan_naive"),
    (["--trials", "2"], "at least 3"),
])
def test_inconsistent_bench_options_are_refused_without_a_gpu(argv, message, capsys):
    with pytest.raises(SystemExit) as stop:
        bench.main(argv)
    err = " ".join(capsys.readouterr().err.split())
    assert stop.value.code == 2 and message.replace("'", "") in err.replace("'", "")


def test_every_bench_option_has_help_with_its_default(capsys):
    with pytest.raises(SystemExit):
        bench.main(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    for option in ("--vertices", "--edges", "--generated", "--variants", "--launches", "--trials", "--out"):
        assert option in text
    assert "(default: bench-" in text and "(default: 20)" in text and "(default: 9)" in text
    assert "None" not in text and "[" not in text.split("options:")[1].replace("[NAME ...]", "")


def _part(best_ms, floor_ms, libs_ms, accuracy=1e-7, rng=np.random.default_rng(0)):
    from types import SimpleNamespace

    from helpers.measure.gpu import Timing

    def timing(ms):
        return Timing.of(ms * (1 + 0.002 * rng.standard_normal(9)), pairing=1)

    timings = {"fused": timing(best_ms * 1.2), "blocked": timing(best_ms)}
    timings.update({name: timing(ms) for name, ms in libs_ms.items()})
    return {"timings": timings, "best": "blocked", "floor": SimpleNamespace(gather=timing(floor_ms)),
            "accuracy": accuracy}


def test_the_targets_are_decided_by_the_verdict_rule_and_say_their_numbers():
    from helpers.bench import bench_gpu

    libs = {"cuSPARSE SpMV (prepared)": 7.46, "torch CSR mv": 7.47}
    parts = {"web": _part(0.033, 0.0284, {"torch CSR mv": 0.044}),
             "beyond L2 given": _part(3.6, 6.67, libs),
             "beyond L2 out-degree": _part(3.4, 2.97, {k: 3.37 for k in libs}),
             "web-like beyond L2": _part(1.0, 2.0, {k: 1.4 for k in libs}, accuracy=3e-6)}
    found = {what: (met, numbers) for what, met, numbers in bench_gpu.targets(parts)}
    assert found["web-sized: best whole iteration <= 1.2x the gather floor"][0]            # 1.16x
    assert found["beyond L2, given order: >= 2x faster than every library SpMV"][0]         # 2.07x
    assert found["beyond L2, given order: <= 0.6x that order's gather floor"][0]            # 0.54x
    assert not found["beyond L2, out-degree order: <= 1.10x its gather floor"][0]           # 1.14x
    assert not found["beyond L2, out-degree order: faster than the libraries"][0]           # slower
    assert not found["web-like beyond L2: >= 1.5x faster than the libraries' SpMV"][0]     # 1.4x
    assert not found["web-like beyond L2: L1 to float64 <= 1e-6 at tol 1e-7"][0]
    assert "about 2.1x faster than cuSPARSE" in found["beyond L2, given order: >= 2x faster than every library SpMV"][1]
