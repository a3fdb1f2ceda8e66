"""The partitioned PageRank of helpers.multigpu: the partition, the arithmetic, and the whole run on a local
Dask cluster of CPU workers (what CI runs; every such test asks for the CPU back end, whatever the machine
has) against the float64 reference; on GPUs (marked, skipped with the reason where there are none) against
the single-GPU driver, and NCCL against Dask."""
import re
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

import numpy as np
import pytest

from helpers import course
from helpers.core import generators
from helpers import multigpu as mg
from helpers.core.arguments import ArgumentError, ArrayKindError, GraphFormatError
from helpers.core.graph import GraphTooLargeError
from helpers.core.reference import pagerank, verify_fixed_point

NEEDS_DASK = "needs dask.distributed: " + mg.INSTALL_HINT


def hub_graph():
    """Dangling and isolated vertices, and one hub whose row holds more in-links than all the other rows
    together: more than an even share of the edges for any number of workers from 2 on."""
    graph = generators.adversarial_graph(5_003, seed=5, hub_in_links=2_500, avg_degree=0.4)
    assert graph.in_degree.max() > graph.num_edges / 2
    assert graph.dangling.any() and ((graph.in_degree == 0) & graph.dangling).any()
    return graph


def sparse_graph():
    """1,237 vertices (a multiple of nothing useful), self-loops, duplicates merged, isolated vertices."""
    graph = generators.random_graph(1_237, 3.0, seed=21)
    assert graph.dangling.any()
    return graph


GRAPHS = {"hub": hub_graph, "sparse": sparse_graph}


# --- import and installation ----------------------------------------------------------------------

def _python(*arguments: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *arguments], capture_output=True, text=True, cwd=course.ROOT)


def test_importing_multigpu_imports_neither_dask_nor_cupy():
    out = _python("-c", "import sys, helpers.multigpu\nprint(sorted(m for m in ('cupy', 'dask', "
                        "'distributed', 'dask_cuda') if m in sys.modules))")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_missing_dask_is_refused_with_what_to_install():
    out = _python("-c", "import sys\n"
                  "for name in ('dask', 'distributed', 'dask_cuda'):\n    sys.modules[name] = None\n"
                  "from helpers import multigpu\nfrom helpers.core import generators\n"
                  "calls = (lambda: multigpu.pagerank_multi(generators.cycle(5), 2, backend='cpu'),\n"
                  "         lambda: multigpu.local_cluster(2, 'cpu').__enter__())\n"
                  "for call in calls:\n"
                  "    try:\n        call()\n"
                  "    except multigpu.MissingDaskError as error:\n        print('refused:', error)\n")
    assert out.returncode == 0, out.stderr
    refusals = [line for line in out.stdout.splitlines() if line.startswith("refused:")]
    assert len(refusals) == 2, out.stdout
    assert all('pip install "pagerank-gpu-course[multigpu]"' in line for line in refusals)


def test_the_requirements_named_in_errors_are_the_extra_in_pyproject():
    project = tomllib.loads((course.ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert tuple(project["optional-dependencies"][mg.EXTRA]) == mg.REQUIREMENTS
    assert project["name"] in mg.INSTALL_HINT


def test_the_command_line_says_how_to_use_it_and_what_is_installed():
    usage = _python("-m", "helpers.multigpu")
    assert usage.returncode == 2 and "usage: python -m helpers.multigpu" in usage.stderr
    check = _python("-m", "helpers.multigpu", "check")
    assert check.returncode == 0, check.stderr
    assert "NCCL:" in check.stdout and "distributed" in check.stdout
    helped = _python("-m", "helpers.multigpu", "--help")
    assert helped.returncode == 0 and "bench" in helped.stdout and "check" in helped.stdout
    for command, shown in (("check", "what is installed"), ("bench", "--dask-iterations")):
        helped = _python("-m", "helpers.multigpu", command, "--help")
        assert helped.returncode == 0 and shown in helped.stdout and "NCCL:" not in helped.stdout
    from helpers.measure import gpu
    if not gpu.has_gpu():
        refused = _python("-m", "helpers.multigpu", "bench")
        assert refused.returncode == 2 and "needs a CUDA GPU" in refused.stderr
        assert "Traceback" not in refused.stderr


# --- the partition ----------------------------------------------------------------------------------

def _check_plan(plan, offsets, parts):
    """Properties every plan has: ordered cover of the rows, each row once, edges that match the offsets."""
    offsets = np.asarray(offsets, dtype=np.int64)
    n, total = offsets.size - 1, int(offsets[-1])
    assert plan.parts == parts and plan.bounds[0] == 0 and plan.bounds[-1] == n
    assert (np.diff(plan.bounds) >= 0).all()
    owner = np.repeat(np.arange(parts), plan.rows)       # contiguous ranges, in order
    assert owner.size == n and np.array_equal(np.sort(owner), owner)
    assert np.array_equal(plan.edges, offsets[plan.bounds[1:]] - offsets[plan.bounds[:-1]])
    assert plan.num_edges == total
    if parts <= n:
        assert (plan.rows > 0).all(), f"an empty part: {plan.rows}"
    largest_row = int(np.diff(offsets).max(initial=0))
    assert plan.edges.max() <= total / parts + largest_row, (plan.edges, total / parts, largest_row)


@pytest.mark.parametrize("name", sorted(GRAPHS))
@pytest.mark.parametrize("parts", [1, 2, 3, 4, 7, 16])
def test_partition_covers_every_row_once_balanced_within_the_largest_row(name, parts):
    graph = GRAPHS[name]()
    _check_plan(mg.partition_by_edges(graph.in_offsets, parts), graph.in_offsets, parts)


def test_partition_balances_edges_on_a_power_law_graph_not_vertices():
    graph = generators.rmat_graph(20_000, 200_000, seed=3)
    plan = mg.partition_by_edges(graph.in_offsets, 4)
    _check_plan(plan, graph.in_offsets, 4)
    largest_row = int(graph.in_degree.max())
    assert largest_row < graph.num_edges / 40          # a graph where balance is possible ...
    assert plan.edges.max() - plan.edges.min() <= largest_row     # ... and is reached
    even = np.diff(np.linspace(0, graph.num_vertices, 5).round()).astype(int)
    even_edges = np.add.reduceat(graph.in_degree, np.concatenate([[0], np.cumsum(even)[:-1]]))
    assert plan.edges.max() < even_edges.max()         # better than cutting by vertex counts


def test_a_hub_heavier_than_an_even_share_gets_a_part_of_its_own_and_no_part_is_empty():
    graph = hub_graph()
    hub = int(graph.in_degree.argmax())
    for parts in (2, 3, 4, 5):
        plan = mg.partition_by_edges(graph.in_offsets, parts)
        _check_plan(plan, graph.in_offsets, parts)
        k = int(np.searchsorted(plan.bounds, hub, side="right")) - 1
        assert plan.edges[k] - graph.in_degree[hub] <= graph.num_edges / parts     # little beside the hub
        assert plan.rows.max() > 10 * plan.rows.min()   # very unequal vertex counts: what the CPU runs use


def test_more_parts_than_rows_leaves_the_last_parts_empty():
    graph = generators.chain(3)
    plan = mg.partition_by_edges(graph.in_offsets, 5)
    _check_plan(plan, graph.in_offsets, 5)
    assert plan.rows.tolist() == [1, 1, 1, 0, 0]


def test_without_edges_the_rows_are_split_evenly():
    graph = generators.all_dangling(7)
    plan = mg.partition_by_edges(graph.in_offsets, 3)
    _check_plan(plan, graph.in_offsets, 3)
    assert plan.rows.max() - plan.rows.min() <= 1


def test_partition_refuses_bad_input():
    with pytest.raises(ValueError, match="at least 1"):
        mg.partition_by_edges([0, 1, 2], 0)
    for offsets in ([1, 2, 3], [0, 3, 2], [0], [[0, 1]]):
        with pytest.raises(GraphFormatError, match="non-decreasing"):
            mg.partition_by_edges(offsets, 2)
    masked = np.ma.masked_array([0, 2, 5], mask=[False, True, False])          # was cut as if [0, 2, 5]
    with pytest.raises(GraphFormatError, match="in_offsets is a masked array with masked entries"):
        mg.partition_by_edges(masked, 2)


# --- the arithmetic ----------------------------------------------------------------------------------

def test_partition_bytes_counts_each_array_once():
    rows, edges, n = 1_000, 20_000, 50_000
    expected = 4 * (rows + 1) + 4 * edges + 4 * n + mg.ROW_ARRAYS * 4 * rows
    assert mg.partition_bytes(rows, edges, n) == expected
    assert mg.partition_bytes(rows, edges, n, offset_bytes=8) == expected + 4 * (rows + 1)
    assert mg.partition_bytes(rows, edges, n, value_bytes=8, edge_values=True) == (
        4 * (rows + 1) + 4 * edges + 8 * edges + 8 * n + mg.ROW_ARRAYS * 8 * rows)
    plan = mg.partition_by_edges(hub_graph().in_offsets, 3)
    per_part = mg.plan_bytes(plan)
    assert per_part.tolist() == [mg.partition_bytes(int(r), int(e), plan.num_vertices)
                                 for r, e in zip(plan.rows, plan.edges)]
    # the full contribution vector is in every part: it does not shrink with more workers
    assert per_part.min() > 4 * plan.num_vertices


def test_exchange_bytes_is_everything_a_worker_does_not_own():
    graph = hub_graph()
    n = graph.num_vertices
    assert mg.exchange_bytes(mg.partition_by_edges(graph.in_offsets, 1)) == 0
    assert mg.exchange_bytes(mg.partition_by_edges(graph.in_offsets, 2)) == 4 * n + 2 * 16
    assert mg.exchange_bytes(mg.partition_by_edges(graph.in_offsets, 4), value_bytes=8) == 8 * 3 * n + 4 * 16


def test_a_2d_partition_receives_less_than_a_1d_one_from_4_gpus_on():
    n = 1_000_000
    assert mg.grid_2d(1) == (1, 1) and mg.grid_2d(2) == (1, 2) and mg.grid_2d(6) == (2, 3)
    assert mg.grid_2d(7) == (1, 7) and mg.grid_2d(16) == (4, 4)
    assert mg.values_received_per_gpu(n, 1, "1d") == mg.values_received_per_gpu(n, 1, "2d") == 0
    assert mg.values_received_per_gpu(n, 2, "2d") == mg.values_received_per_gpu(n, 2, "1d") == n / 2
    assert mg.values_received_per_gpu(n, 4, "1d") == 0.75 * n
    assert mg.values_received_per_gpu(n, 4, "2d") == 0.5 * n
    assert mg.values_received_per_gpu(n, 16, "2d") == 2 * n / 4 * (1 - 1 / 4)
    for p in (4, 9, 16, 64, 256):
        assert mg.values_received_per_gpu(n, p, "2d") < mg.values_received_per_gpu(n, p, "1d")
    with pytest.raises(ValueError, match="layout"):
        mg.values_received_per_gpu(n, 4, "3d")


def test_largest_graph_is_the_last_size_that_fits():
    def need(v, e):
        return mg.partition_bytes(v, e, v)

    memory = 3.5e9
    vertices, edges = mg.largest_graph(memory, 8.0, need)
    assert edges == int(8.0 * vertices)
    assert need(vertices, edges) <= memory < need(vertices + 1, int(8.0 * (vertices + 1)))
    assert mg.largest_graph(10, 8.0, need) == (0, 0)


# --- the graph as the helper takes it ---------------------------------------------------------------

class _Arrays:
    def __init__(self, **arrays):
        self.__dict__.update(arrays)


def test_host_graph_takes_any_object_with_the_arrays_and_refuses_inconsistent_ones():
    graph = sparse_graph()
    duck = _Arrays(num_vertices=graph.num_vertices, in_offsets=graph.in_offsets,
                   in_sources=graph.in_sources.astype(np.int64), out_degree=graph.out_degree, name="duck")
    hg = mg.host_graph(duck)
    assert hg.in_sources.dtype == np.int32 and hg.num_edges == graph.num_edges and hg.name == "duck"
    with pytest.raises(TypeError, match="out_degree"):
        mg.host_graph(_Arrays(num_vertices=3, in_offsets=[0, 0, 0, 0], in_sources=[]))
    with pytest.raises(GraphFormatError, match="in_offsets"):
        mg.host_graph(_Arrays(num_vertices=3, in_offsets=np.array([0, 1, 2]), in_sources=np.array([0, 1]),
                              out_degree=np.array([1, 1, 0])))
    with pytest.raises(GraphFormatError, match="out_degree"):
        mg.host_graph(_Arrays(num_vertices=2, in_offsets=np.array([0, 1, 2]), in_sources=np.array([0, 1]),
                              out_degree=np.array([1, 0])))
    with pytest.raises(GraphFormatError, match="in_sources is a masked array with masked entries"):
        mg.host_graph(_Arrays(num_vertices=2, in_offsets=np.array([0, 1, 2]),
                              in_sources=np.ma.masked_array([1, 0], mask=[True, False]), out_degree=np.array([1, 1])))


def test_float64_residual_is_the_reference_fixed_point_residual():
    graph = hub_graph()
    ranks = pagerank(graph, tol=1e-6).ranks
    expected = verify_fixed_point(graph, ranks).residual
    assert mg.float64_residual(graph, ranks) == pytest.approx(expected, rel=1e-9)
    assert mg.float64_residual(graph, np.full(graph.num_vertices, 1 / graph.num_vertices)) > 1e-3


def test_float64_residual_refuses_masked_gpu_and_misshapen_ranks():
    """Was: a masked rank was read through its mask (a residual of 16 for a hidden 9.0), a 0-d rank was
    spread over every vertex, and a GPU vector beside a host graph met float()'s TypeError."""
    from fake_arrays import GpuArray, masked
    graph = generators.cycle(3)
    with pytest.raises(ArrayKindError, match="ranks is a masked array with masked entries"):
        mg.float64_residual(graph, masked((1 / 3, 9.0, 1 / 3)))
    with pytest.raises(ArrayKindError, match=r"ranks is a CuPy array .*ranks\.get\(\)"):
        mg.float64_residual(graph, GpuArray())
    with pytest.raises(ArrayKindError, match=r"ranks must be a 1-D array, got shape \(\)"):
        mg.float64_residual(graph, np.array(1 / 3))
    with pytest.raises(ArgumentError, match=r"ranks needs one entry per vertex \(3\), got shape \(2,\)"):
        mg.float64_residual(graph, np.full(2, 0.5))


def test_bad_arguments_are_refused_before_any_cluster_starts():
    graph = generators.cycle(5)
    with pytest.raises(ValueError, match="cannot run on a partition"):
        mg.pagerank_multi(graph, 2, variant="cusparse")
    with pytest.raises(ValueError, match="exchange"):
        mg.pagerank_multi(graph, 2, exchange="mpi")
    with pytest.raises(ValueError, match="damping"):
        mg.pagerank_multi(graph, 2, damping=1.5)
    with pytest.raises(ValueError, match="max_iter"):
        mg.pagerank_multi(graph, 2, max_iter=0)


def test_the_gpu_back_end_without_a_gpu_says_what_to_do():
    from helpers.measure import gpu
    if gpu.has_gpu():
        pytest.skip("this machine has a GPU: the refusal cannot be seen here")
    with pytest.raises(gpu.NoGPUError, match="needs a CUDA GPU"):
        mg.pagerank_multi(generators.cycle(5), 1, backend="gpu")


# --- whole runs on a local cluster of CPU workers ---------------------------------------------------

@pytest.fixture(scope="module")
def cpu_client():
    pytest.importorskip("distributed", reason=NEEDS_DASK)
    with mg.local_cluster(4, "cpu") as client:
        yield client


@pytest.fixture(scope="module")
def references():
    return {name: pagerank(make(), tol=1e-10) for name, make in GRAPHS.items()}


@pytest.mark.parametrize("name", sorted(GRAPHS))
@pytest.mark.parametrize("workers", [1, 2, 3, 4])
def test_float64_run_equals_the_reference(name, workers, cpu_client, references):
    graph, reference = GRAPHS[name](), references[name]
    result = mg.pagerank_multi(graph, workers, client=cpu_client, backend="cpu", tol=1e-10, verbose=False)
    what = (result.backend, result.exchange, result.workers, result.ranks.dtype)
    assert what == ("cpu", "dask", workers, np.float64)
    assert result.converged and result.iterations == reference.iterations
    np.testing.assert_allclose(result.ranks, reference.ranks, rtol=1e-12, atol=0)
    np.testing.assert_allclose(result.residuals, reference.residuals, rtol=1e-6, atol=1e-14)
    assert abs(result.ranks.sum() - 1) < 1e-12
    # what the run reports about itself
    assert result.bytes_per_iteration == mg.exchange_bytes(result.plan, 8)
    shapes = {result.iteration_ms.shape, result.compute_ms.shape, result.exchange_ms.shape}
    assert shapes == {(result.iterations,)}
    assert result.worker_compute_ms.shape == (workers, result.iterations)
    assert (result.compute_ms > 0).all() and (result.compute_ms <= result.iteration_ms).all()
    assert np.allclose(result.exchange_ms, result.iteration_ms - result.compute_ms)


def test_float32_runs_agree_with_each_other_and_the_reference_within_float32_rounding(cpu_client,
                                                                                       references):
    graph, reference = hub_graph(), references["hub"]
    runs = [mg.pagerank_multi(graph, w, client=cpu_client, backend="cpu", dtype="float32", tol=1e-6,
                              max_iter=300, verbose=False) for w in (1, 3)]
    for run in runs:   # SciPy adds the hub's 2,500 contributions one after the other, in float32
        assert run.ranks.dtype == np.float32
        assert run.residuals[-1] < 1e-4
        assert np.abs(run.ranks - reference.ranks).sum() < 1e-4
        assert abs(run.ranks.astype(np.float64).sum() - 1) < 1e-4
    assert runs[0].iterations == runs[1].iterations
    np.testing.assert_allclose(runs[0].ranks, runs[1].ranks, rtol=1e-5, atol=1e-9)


@pytest.mark.parametrize("graph, workers", [(generators.chain(3), 4), (generators.single_vertex(), 2),
                                            (generators.all_dangling(3), 4)],
                         ids=["chain3-4", "single-2", "dangling3-4"])
def test_more_workers_than_vertices_idle_and_give_the_same_result(graph, workers, cpu_client):
    reference = pagerank(graph, tol=1e-10)
    result = mg.pagerank_multi(graph, workers, client=cpu_client, backend="cpu", tol=1e-10, verbose=False)
    assert result.plan.rows.min() == 0 and result.iterations == reference.iterations
    np.testing.assert_allclose(result.ranks, reference.ranks, rtol=1e-12)


def test_max_iter_stops_an_unconverged_run_and_says_so(cpu_client, references):
    result = mg.pagerank_multi(hub_graph(), 2, client=cpu_client, backend="cpu", tol=1e-10, max_iter=5,
                               verbose=False)
    assert result.iterations == 5 and not result.converged
    np.testing.assert_allclose(result.residuals, references["hub"].residuals[:5], rtol=1e-9)


def test_nccl_on_the_cpu_back_end_falls_back_to_dask_and_says_why(cpu_client, capsys):
    result = mg.pagerank_multi(generators.cycle(7), 2, client=cpu_client, backend="cpu", exchange="nccl",
                               tol=1e-8)
    assert result.exchange == "dask" and "GPU" in result.fallback
    assert "NCCL exchange not used" in capsys.readouterr().out
    assert np.allclose(result.ranks, 1 / 7)


def test_a_partition_that_does_not_fit_is_refused_naming_it(cpu_client):
    graph = hub_graph()
    plan = mg.partition_by_edges(graph.in_offsets, 2)
    need = mg.plan_bytes(plan, value_bytes=8, edge_values=True)
    refusal = r"partition 0 .* needs .* MiB on worker 0 and the host has .* MiB free"
    with pytest.raises(GraphTooLargeError, match=refusal):
        mg.pagerank_multi(graph, 2, client=cpu_client, backend="cpu", free_bytes=1_000, verbose=False)
    # each worker's own free memory: only the second one is short
    with pytest.raises(GraphTooLargeError, match=r"partition 1 \(rows"):
        mg.pagerank_multi(graph, 2, client=cpu_client, backend="cpu", free_bytes=[10 * need[0], need[1]],
                          verbose=False)
    ok = mg.pagerank_multi(graph, 2, client=cpu_client, backend="cpu", free_bytes=[2 * need[0], 2 * need[1]],
                           tol=1e-8, verbose=False)
    assert ok.converged


def test_the_partition_table_is_a_dataframe_of_the_plan(cpu_client):
    pytest.importorskip("pandas", reason="the tables are pandas DataFrames")
    result = mg.pagerank_multi(hub_graph(), 3, client=cpu_client, backend="cpu", tol=1e-8, verbose=False)
    table = result.partitions
    assert list(table.index) == [0, 1, 2]
    assert table["vertices"].sum() == result.plan.num_vertices
    assert table["in-links"].sum() == result.plan.num_edges
    assert table["% of in-links"].sum() == pytest.approx(100)
    summary = result.summary()
    assert summary["workers"] == 3 and summary["iterations"] == result.iterations


def test_a_cluster_it_starts_is_closed_afterwards():
    pytest.importorskip("distributed", reason=NEEDS_DASK)
    with mg.local_cluster(1, "cpu") as client:
        assert len(mg.worker_addresses(client)) == 1
        result = mg.pagerank_multi(generators.cycle(4), client=client, backend="cpu", tol=1e-8,
                                   verbose=False)
    assert client.status == "closed"
    assert np.allclose(result.ranks, 0.25)


def _scratch_entries() -> set[str]:
    """dask-scratch-space* folders in the system's temporary folder, and what is directly inside them."""
    found = set()
    for folder in Path(tempfile.gettempdir()).glob("dask-scratch-space*"):
        found |= {folder.name, *(f"{folder.name}/{p.name}" for p in folder.iterdir() if p.is_dir())}
    return found


def test_clusters_leave_no_dask_scratch_space_in_the_temporary_folder(references):
    pytest.importorskip("distributed", reason=NEEDS_DASK)
    before = _scratch_entries()
    graph = hub_graph()
    with mg.local_cluster(2, "cpu", processes=True) as client:      # worker processes, as dask-cuda starts
        folders = [*client.run(lambda dask_worker: dask_worker.local_directory).values(),
                   client.run_on_scheduler(lambda dask_scheduler: dask_scheduler.local_directory)]
        across = mg.pagerank_multi(graph, client=client, backend="cpu", tol=1e-10, verbose=False)
    own = mg.pagerank_multi(graph, 3, backend="cpu", tol=1e-10, verbose=False)     # starts its own cluster
    for result in (across, own):
        assert result.iterations == references["hub"].iterations
        np.testing.assert_allclose(result.ranks, references["hub"].ranks, rtol=1e-12, atol=0)
    assert len(folders) == 3 and not any(Path(f).exists() for f in folders), folders
    assert all(Path(f).parts[:len(Path(tempfile.gettempdir()).parts)] == Path(tempfile.gettempdir()).parts
               and "pagerank-dask-" in f for f in folders), folders
    assert _scratch_entries() - before == set()


# --- on GPUs ----------------------------------------------------------------------------------------

def _gpu_count() -> int:
    from helpers.measure import gpu
    return gpu.require_gpu().cuda.runtime.getDeviceCount() if gpu.has_gpu() else 0


@pytest.fixture(scope="module")
def gpu_client():
    pytest.importorskip("dask_cuda", reason="the GPU back end needs dask-cuda: " + mg.INSTALL_HINT)
    with mg.local_cluster(min(2, _gpu_count()), "gpu") as client:
        yield client


@pytest.mark.gpu
def test_one_gpu_worker_equals_the_single_gpu_driver_and_the_reference(gpu_client):
    from helpers.driver import pagerank_gpu

    for graph, strict in ((generators.random_graph(50_001, 5.0, seed=31), True),
                          (generators.adversarial_graph(20_001, seed=13, hub_in_links=12_000), False)):
        reference = pagerank(graph, tol=1e-10)
        single = pagerank_gpu(graph, "pull_hybrid", tol=1e-6, max_iter=300)
        for exchange in ("dask", "nccl"):
            multi = mg.pagerank_multi(graph, 1, client=gpu_client, backend="gpu", exchange=exchange,
                                      tol=1e-6, max_iter=300, verbose=False)
            what = f"{graph.name}, {exchange} ({multi.exchange} ran; fallback: {multi.fallback})"
            assert multi.ranks.dtype == np.float32 and multi.variant == "pull_hybrid", what
            assert abs(multi.ranks.astype(np.float64).sum() - 1) < 1e-5, what
            if strict:     # no long in-link list: float32 converges as the driver does
                assert multi.converged and abs(multi.iterations - single.iterations) <= 1, what
                assert np.abs(multi.ranks - single.ranks.astype(np.float64)).sum() < 2e-6, what
                assert np.abs(multi.ranks - reference.ranks).sum() < 2e-5, what
            else:          # a 12,000-link row: the bounds test_kernels gives every kernel on this graph
                assert multi.residuals[-1] < 1e-4, what
                assert np.abs(multi.ranks - single.ranks.astype(np.float64)).sum() < 1e-4, what
                assert np.abs(multi.ranks - reference.ranks).sum() < 1e-4, what


@pytest.mark.gpu
def test_two_gpus_give_equal_results_with_nccl_and_dask_and_equal_one_gpu(gpu_client):
    if _gpu_count() < 2:
        pytest.skip(f"needs 2 GPUs; this machine has {_gpu_count()}")
    from cupy.cuda import nccl
    if not nccl.available:
        pytest.skip("CuPy cannot load NCCL here: only the Dask exchange could run")
    graph = generators.rmat_graph(200_000, 2_000_000, seed=41)
    reference = pagerank(graph, tol=1e-10)
    one = mg.pagerank_multi(graph, 1, client=gpu_client, backend="gpu", exchange="nccl", verbose=False)
    runs = {x: mg.pagerank_multi(graph, 2, client=gpu_client, backend="gpu", exchange=x, verbose=False)
            for x in ("nccl", "dask")}
    assert {x: r.exchange for x, r in runs.items()} == {"nccl": "nccl", "dask": "dask"}
    assert runs["nccl"].iterations == runs["dask"].iterations
    np.testing.assert_allclose(runs["nccl"].ranks, runs["dask"].ranks, rtol=1e-6, atol=0)
    expected = mg.exchange_bytes(runs["nccl"].plan)
    assert runs["nccl"].bytes_per_iteration == runs["dask"].bytes_per_iteration == expected
    assert abs(runs["nccl"].iterations - one.iterations) <= 1
    assert np.abs(runs["nccl"].ranks - one.ranks.astype(np.float64)).sum() < 2e-6
    assert np.abs(runs["nccl"].ranks - reference.ranks).sum() < 2e-5
    assert (runs["nccl"].exchange_ms > 0).all() and (runs["nccl"].compute_ms > 0).all()


@pytest.mark.gpu
def test_more_gpu_workers_than_vertices(gpu_client):
    if _gpu_count() < 2:
        pytest.skip(f"needs 2 GPUs; this machine has {_gpu_count()}")
    for graph in (generators.single_vertex(), generators.chain(2)):
        reference = pagerank(graph, tol=1e-10)
        for exchange in ("nccl", "dask"):
            result = mg.pagerank_multi(graph, 2, client=gpu_client, backend="gpu", exchange=exchange,
                                       verbose=False)
            assert np.abs(result.ranks - reference.ranks).sum() < 1e-6, (graph.name, exchange)


@pytest.mark.gpu
def test_a_partition_too_large_for_its_gpu_is_refused(gpu_client):
    with pytest.raises(GraphTooLargeError, match="partition 0 .* on worker 0 and its GPU has"):
        mg.pagerank_multi(hub_graph(), 1, client=gpu_client, backend="gpu", free_bytes=1, verbose=False)


@pytest.mark.gpu
def test_float64_residual_on_the_gpu_equals_the_cpu_one():
    import cupy as cp

    graph = hub_graph()
    ranks = pagerank(graph, tol=1e-6).ranks
    on_gpu = _Arrays(num_vertices=graph.num_vertices, in_offsets=cp.asarray(graph.in_offsets),
                     in_sources=cp.asarray(graph.in_sources), out_degree=cp.asarray(graph.out_degree))
    assert mg.float64_residual(on_gpu, ranks) == pytest.approx(mg.float64_residual(graph, ranks), rel=1e-9)


# --- the lecture and the rest of the course ---------------------------------------------------------

LECTURE = course.NOTEBOOKS / "50_beyond_one_gpu.ipynb"


def test_the_lecture_is_a_valid_gpu_notebook_whose_code_cells_all_parse():
    nbformat = pytest.importorskip("nbformat")
    notebook = nbformat.read(LECTURE, as_version=4)
    nbformat.validate(notebook)
    meta = notebook.metadata
    assert meta["course"]["needs_gpu"] is True and meta["accelerator"] == "GPU"
    assert meta["colab"] == {"gpuType": "T4", "provenance": []}
    assert notebook.cells[0].cell_type == "markdown"
    assert notebook.cells[0].source.startswith("# 50 · Beyond one GPU: ")
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    from helpers.course.tools import sync
    assert code[0].source == sync.setup_cell_source()
    for i, cell in enumerate(code):
        lines = cell.source.splitlines()
        source = "\n".join(line for line in lines if not line.lstrip().startswith(("%", "!")))
        compile(source, f"{LECTURE.name}, code cell {i}", "exec")
    last = notebook.cells[-1]
    assert last.cell_type == "markdown" and last.source.startswith("## Try this")
    assert 2 <= sum(line[:3] in {f"{k}. " for k in range(1, 10)} for line in last.source.splitlines()) <= 4


def test_nothing_but_the_multigpu_helper_and_its_lecture_imports_dask():
    pattern = re.compile(r"^\s*(import|from)\s+(dask|distributed|dask_cuda)\b", re.MULTILINE)
    allowed = {*course.ROOT.joinpath("helpers", "multigpu").glob("*.py"), LECTURE}
    sources = [*course.ROOT.joinpath("helpers").rglob("*.py"), *course.NOTEBOOKS.rglob("*.ipynb")]
    offenders = [p.relative_to(course.ROOT).as_posix() for p in sources
                 if p not in allowed and pattern.search(p.read_text(encoding="utf-8").replace("\\n", "\n"))]
    assert offenders == []


def test_the_lecture_installs_nothing_and_its_install_advice_uses_the_kernels_interpreter():
    nbformat = pytest.importorskip("nbformat")
    code = [cell.source for cell in nbformat.read(LECTURE, as_version=4).cells if cell.cell_type == "code"]
    for i, source in enumerate(code[1:], start=1):        # the first cell is the course's set-up cell
        assert not re.search(r"^\s*[!%]|subprocess|os\.system|pip\.main", source, re.MULTILINE), (i, source)
    advice = [source for source in code if '"pip", "install"' in source]
    assert len(advice) == 1 and "sys.executable" in advice[0] and "print(" in advice[0]
