"""Kernels: one source each (inline in its lecture = helpers/kernels/*.cu), every one compiles for a T4
(compute_75) without a GPU, and on a GPU every variant matches the float64 reference on adversarial graphs."""
import importlib
import json
import re

import numpy as np
import pytest

from helpers import course, kernels
from helpers.core import generators
from helpers.driver import device_generators
from helpers.driver import locality
from helpers.driver import VARIANTS     # imports no CuPy
from helpers.kernels.catalog import CATALOG
from helpers.core.arguments import ArgumentError
from helpers.core.graph import from_edges
from helpers.core.reference import pagerank

checking = importlib.import_module("helpers.driver.verify")     # helpers.driver.verify is also a function

INLINE = re.compile(r'r(?:\'\'\'|""")\n?(//.*?)(?:\'\'\'|""")', re.DOTALL)
PART = "// --- part"
TIMED = {"gather_floor", "fma_roof"}      # kernels whose own checks compare timings: they run alone


def inline_kernels():
    """(notebook, source) for every CUDA source written inline in a lecture; a kernel file shown in parts (its
    canonical file has '// --- part N' lines where a cell ends) is joined back into one source."""
    found = []
    for notebook in sorted(course.NOTEBOOKS.rglob("*.ipynb")):
        if "exercises" in notebook.parts:       # exercise kernels are the students' own: test_exercises
            continue
        for cell in json.loads(notebook.read_text(encoding="utf-8"))["cells"]:
            if cell["cell_type"] != "code":
                continue
            for code in INLINE.findall("".join(cell["source"])):
                if code.startswith(PART) and found and found[-1][0] == notebook.name:
                    found[-1] = (notebook.name, found[-1][1] + code)
                elif "__global__" in code or "__device__" in code:
                    found.append((notebook.name, code))
    return found


@pytest.mark.parametrize("name", kernels.names())
def test_every_kernel_compiles_for_a_t4(name, nvrtc_compiled):
    ptx = kernels.nvrtc_compile(kernels.canonical(name), arch=kernels.T4_ARCH, name=f"{name}.cu")
    assert ".target sm_75" in ptx
    for function in kernels.kernel_names(kernels.canonical(name)):
        assert f".entry {function}(" in ptx
    nvrtc_compiled(f"{name}.cu")       # conftest.py counts them (-v names them)


@pytest.mark.parametrize("notebook, code", inline_kernels(), ids=lambda v: v if isinstance(v, str) and
                         v.endswith(".ipynb") else "")
def test_every_inline_kernel_is_its_canonical_file_and_compiles(notebook, code, nvrtc_compiled):
    name = re.match(r"//\s*(?:nvrtc-options:.*\n//\s*)?(\w+):", code.strip()).group(1)
    assert code.strip() == kernels.canonical(name).strip(), f"{notebook}: {name} differs from helpers/kernels/{name}.cu"
    kernels.nvrtc_compile(code, name=f"{notebook}:{name}")
    nvrtc_compiled(f"{notebook}:{name}")


def test_compiling_leaves_the_text_encoding_as_it_was():
    """NVRTC 12.4 switches its thread to the C locale; afterwards a file written without an encoding must
    still take a non-ASCII character."""
    import locale

    before = locale.getpreferredencoding(False)
    kernels.nvrtc_compile(kernels.canonical(kernels.names()[0]))
    assert locale.getpreferredencoding(False) == before


def test_compiling_leaves_python_s_shared_one_byte_objects_intact():
    """NVRTC writes an empty log as one NUL byte. Written into b" " * 1, that was Python's one shared b" ",
    which then held 0 everywhere in the process: NumPy pads a .npy header with b" " * padlen, so every cache
    whose header needed one byte of padding read back as 'source code cannot contain null bytes'."""
    kernels.nvrtc_compile(kernels.canonical("add_one"))              # compiles with an empty log
    assert ord(b" ") == 32 and (b" " * 1)[0] == 32 and b"a b".split() == [b"a", b"b"]


def test_a_kernel_using_newer_intrinsics_is_refused_for_a_t4():
    code = 'extern "C" __global__ void k(unsigned* x) { x[0] = __reduce_add_sync(0xffffffffu, x[1]); }'
    with pytest.raises(kernels.CompileError, match="__reduce_add_sync"):
        kernels.nvrtc_compile(code)


def test_every_kernel_a_variant_launches_exists():
    for v in VARIANTS.values():
        for name in v.kernels:
            assert name in kernels.names()


def test_define_makes_an_edited_source_the_one_in_force_and_forget_restores_it(capsys):
    original = kernels.canonical("pull_contrib")
    edited = original.replace("k < in_offsets[v + 1]", "k <= in_offsets[v + 1]")
    assert edited != original
    try:
        kernels.define(edited)
        assert kernels.source("pull_contrib") == edited and "pull_contrib" in kernels.live()
        assert "differs from helpers/kernels/pull_contrib.cu" in capsys.readouterr().out
        kernels.define(original)                      # the canonical text again: nothing replaced
        assert kernels.live() == {} and capsys.readouterr().out == ""
        kernels.define(edited)
    finally:
        kernels.forget()
    assert kernels.source("pull_contrib") == original


def test_define_refuses_a_source_without_a_known_file_name():
    with pytest.raises(ValueError, match="starts with a comment line"):
        kernels.define('extern "C" __global__ void k() {}')
    with pytest.raises(KeyError, match="not one of the course's kernel files"):
        kernels.define('// nothing_like_this: no such file\nextern "C" __global__ void k() {}')


# --- on a GPU ---------------------------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("file", [pytest.param(f, marks=pytest.mark.timing) if f in TIMED else f
                                  for f in CATALOG])
def test_kernel_is_right(file):
    """Each kernel file's own check: every variant that launches it passes verify on fresh adversarial graphs;
    a kernel outside the driver gets the check below that runs it."""
    from helpers.driver import verify
    entry = CATALOG[file]
    for name in entry.variants:
        table = verify(name, seed=sum(map(ord, name)), quiet=True)   # raises VerificationError when wrong
        assert table["ok"].all() and len(table) >= 6
    if file in OWN_CHECKS:
        OWN_CHECKS[file]()
    assert entry.variants or file in OWN_CHECKS, f"{file} has no check"


@pytest.mark.parametrize("seed, message", [(-1, "at least 0"), (2.5, "an integer"), (np.float32(3), "an integer"),
                                           ("3", "an integer"), (2**63 - 1, "at most")])
@pytest.mark.parametrize("call", [
    lambda s: checking.verify("pull_warp", seed=s, quiet=True), lambda s: checking.verification_graphs(s),
    lambda s: checking.spmv_error(None, "pull_warp", seed=s), lambda s: checking.step_error(None, "pull_warp", seed=s),
    lambda s: locality.permutation(None, "random", seed=s), lambda s: locality.reorder(None, "random", seed=s),
])
def test_verification_and_reordering_seeds_are_checked_before_any_gpu_work(call, seed, message):
    """verify's int(seed) truncated 2.5 to 2 and read '3' as 3; the others handed any seed to NumPy or CuPy
    after the GPU check."""
    with pytest.raises(ArgumentError, match=f"seed must be {message}"):
        call(seed)


@pytest.mark.gpu
def test_verify_fails_kernels_with_typical_wrong_edits():
    from helpers.driver import VerificationError, verify
    wrong = [("pull_contrib", "pull_contrib", "k < in_offsets[v + 1]", "k <= in_offsets[v + 1]"),
             ("pull_warp", "pull_warp", "offset = 16", "offset = 8"),
             ("contributions", "pull_contrib", "rank[u] / degree", "rank[u]"),
             ("fused", "fused", "dangling += degree == 0 ? r : 0.0f;", ""),
             ("blocked", "blocked", "new_x[v] = degree > 0 ? r / degree : r;", "new_x[v] = r;")]
    try:
        for name, variant, good, bad in wrong:
            assert good in kernels.canonical(name)
            kernels.define(kernels.canonical(name).replace(good, bad))
            with pytest.raises(VerificationError):
                verify(variant, seed=3, quiet=True)
            kernels.forget()
    finally:
        kernels.forget()


@pytest.mark.gpu
@pytest.mark.parametrize("name", [n for n, v in VARIANTS.items() if v.deterministic])
def test_deterministic_variants_give_identical_results_twice(name):
    from helpers.driver import DeviceGraph, pagerank_gpu
    graph = generators.adversarial_graph(20_001, seed=13, hub_in_links=12_000)
    if name == "scan_naive":
        graph = generators.random_graph(1_000, seed=12)
    dg = DeviceGraph(graph)
    first, second = pagerank_gpu(dg, name, tol=1e-6), pagerank_gpu(dg, name, tol=1e-6)
    assert first.iterations == second.iterations
    assert np.array_equal(first.ranks, second.ranks)


@pytest.mark.gpu
def test_the_stop_test_on_the_gpu_gives_the_ranks_of_the_iteration_that_met_it():
    from helpers.driver import DeviceGraph, pagerank_gpu
    from helpers.core.reference import ConvergenceWarning
    graph = generators.rmat_graph(60_000, 400_000, seed=14)
    dg = DeviceGraph(graph)
    reference = pagerank(graph, tol=1e-10)
    for name in ("pull_hybrid", "fused", "blocked"):
        every = pagerank_gpu(dg, name, tol=1e-6, check_every=2)
        sparse = pagerank_gpu(dg, name, tol=1e-6, check_every=16)
        assert every.iterations == sparse.iterations and np.array_equal(every.ranks, sparse.ranks), name
        assert every.converged and every.residuals[-1] < 1e-6 <= every.residuals[-2], name
        assert np.abs(every.ranks - reference.ranks).sum() < 2e-5, name
        with pytest.warns(ConvergenceWarning, match=rf"{name}: no L1 change below 1e-12 within max_iter=5"):
            capped = pagerank_gpu(dg, name, tol=1e-12, max_iter=5, check_every=8)
        assert capped.iterations == 5 and not capped.converged and capped.residuals.size == 5, name


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["pull_hybrid", "fused", "blocked"])
def test_tol_zero_runs_exactly_max_iter_where_a_tiny_tol_stops_at_an_exact_float32_fixed_point(name):
    # lecture 20's fixed-count runs once stopped early: a float32 iteration can reach a change of exactly 0,
    # which is below any positive tol (1e-30 included); tol=0 is the only setting that never stops
    from helpers.driver import pagerank_gpu
    from helpers.core.reference import ConvergenceWarning
    graph = generators.cycle(7)                       # uniform ranks are the fixed point from the start
    assert pagerank_gpu(graph, name, tol=1e-30, max_iter=64).iterations < 64
    with pytest.warns(ConvergenceWarning):
        assert pagerank_gpu(graph, name, tol=0, max_iter=64).iterations == 64


@pytest.mark.gpu
@pytest.mark.timing
def test_the_fused_iteration_does_not_collapse_when_hubs_are_adjacent():
    from helpers.driver import locality
    from helpers.driver import DeviceGraph, graph_iteration_ms, pagerank_gpu
    graph = generators.rmat_graph(200_000, 2_000_000, seed=3)
    dg = DeviceGraph(graph)
    hubs_together, _ = locality.reorder(dg, "in-degree")
    given, clustered = graph_iteration_ms(dg).median_ms, graph_iteration_ms(hubs_together).median_ms
    assert clustered < 2.5 * given, (given, clustered)         # the old fused kernel was 4x slower here
    a, b = pagerank_gpu(dg, "fused"), pagerank_gpu(hubs_together, "fused")
    perm = locality.permutation(dg, "in-degree").get()
    assert abs(a.iterations - b.iterations) <= 1 and np.abs(a.ranks[perm] - b.ranks).sum() < 2e-5


@pytest.mark.gpu
def test_a_vertex_split_over_many_blocks_is_summed_exactly_once():
    from helpers.driver import DeviceGraph, FusedIteration, step_error
    graph = generators.adversarial_graph(60_001, seed=5, hub_in_links=50_000)
    dg = DeviceGraph(graph)
    step = FusedIteration(dg, chunk=1024)                       # the hub becomes ~49 tasks
    assert int(step.plan.groups.shape[0]) >= 1 and int(step.plan.heavy.shape[0]) > 40
    for _ in range(3):                                          # the arrival counters reset every iteration
        assert step_error(dg, "fused", chunk=1024) < 1e-4
        assert step_error(dg, "blocked", vertices_per_segment=7_001) < 1e-4


def reference_segments(graph, key):
    """The source segments as the driver once built them: each segment's in-links in in-CSR order, its
    distinct targets (rows) and where each row starts; empty segments left out."""
    targets = np.repeat(np.arange(graph.num_vertices), np.diff(graph.in_offsets))
    parts = []
    for s in range(-(-graph.num_vertices // key)):
        inside = graph.in_sources // key == s
        t, src = targets[inside], graph.in_sources[inside]
        if t.size:
            rows = np.unique(t)
            parts.append((rows, np.append(np.searchsorted(t, rows), t.size), src))
    return parts


def segment_graphs():
    sparse = from_edges(np.array([7, 7, 3, 9, 8]), np.array([0, 4, 4, 4, 1]), 10, name="empty segments")
    return [generators.adversarial_graph(3_001, seed=7, hub_in_links=1_200), sparse,
            generators.rmat_graph(5_000, 40_000, seed=3), generators.single_vertex()]


@pytest.mark.parametrize("key", [1, 3, 256, 4_096, 1 << 20])
def test_source_segments_are_the_in_links_by_source_in_in_csr_order(key):
    from helpers.driver.device import segment_bytes, source_segments
    for graph in segment_graphs():
        got = source_segments(np, graph.in_offsets, graph.in_sources.astype(np.int32), graph.num_vertices,
                              key)
        want = reference_segments(graph, key)
        assert len(got) == len(want), graph.name
        for (rows, offsets, sources), expected in zip(got, want):
            assert all(a.dtype == np.int32 and a.flags.c_contiguous for a in (rows, offsets, sources))
            for a, b in zip((rows, offsets, sources), expected):
                np.testing.assert_array_equal(a, b)
        kept = sum(a.nbytes for part in got for a in part)
        assert kept <= segment_bytes(graph.num_vertices, graph.num_edges, key)[0], graph.name


def test_the_segments_row_bound_is_reached_when_every_source_is_its_own_segment():
    from helpers.driver.device import source_segments
    graph = generators.rmat_graph(2_000, 12_000, seed=5)     # distinct edges: one row per in-link
    parts = source_segments(np, graph.in_offsets, graph.in_sources, graph.num_vertices, 1)
    assert sum(rows.size for rows, _, _ in parts) == graph.num_edges


def test_source_segments_refuse_an_empty_segment_size():
    from helpers.driver.device import source_segments
    graph = generators.single_vertex()
    with pytest.raises(ValueError, match="at least 1, got 0"):
        source_segments(np, graph.in_offsets, graph.in_sources, 1, 0)


def test_the_out_csr_sorted_from_the_in_csr_is_the_graphs_own():
    from helpers.driver import device
    for graph in segment_graphs():
        offsets, targets = device.out_csr_arrays(np, graph.in_offsets, graph.in_sources, graph.out_degree,
                                                 graph.num_vertices)
        assert offsets.dtype == targets.dtype == np.int32
        np.testing.assert_array_equal(offsets, graph.out_offsets)
        np.testing.assert_array_equal(targets, graph.out_targets)
    graph = generators.rmat_graph(5_000, 40_000, seed=3)
    edges = np.arange(10, 39_990)
    np.testing.assert_array_equal(device.edge_targets(np, graph.in_offsets, 10, 39_990),
                                  np.searchsorted(graph.in_offsets, edges, side="right") - 1)


def test_device_bytes_counts_every_array_a_variant_keeps_and_its_largest_temporary():
    from helpers.driver import device, device_bytes
    from helpers.driver.floors import T4_L2_BYTES
    n, e = 400_000, 3_600_000
    graph = 4 * (n + 1) + 4 * e + 4 * n
    assert device_bytes(n, e, "fused") >= graph + 20 * n + 4 * e // 33        # vectors and medium rows
    # blocked: the segments' sources, rows and offsets, then the largest build temporary (mask, prefix sum)
    kept, peak = device.segment_bytes(n, e, device.segment_size(l2_bytes=T4_L2_BYTES))
    assert kept >= 4 * e + 8 * n and peak - kept >= 5 * e + 8 * n
    assert device_bytes(n, e, "blocked") >= graph + peak
    assert device_bytes(n, e, "pull_binned") >= graph + 28 * n + 8 * n         # in-degrees and three lists
    assert device_bytes(n, e, "push_atomic") >= graph + 24 * n + 16 * e        # the out-CSR's sort
    assert device_bytes(n, e, "coo_cumsum") >= graph + 28 * n + 16 * e         # a float64 prefix sum
    for name in VARIANTS:                              # every variant: at least the graph and its vectors
        assert device_bytes(n, e, name) >= graph + 16 * n, name
    assert device_bytes(n, e, "fused", offset_bytes=8) - device_bytes(n, e, "fused") == 4 * (n + 1)


@pytest.mark.gpu
@pytest.mark.parametrize("segment", [257, 4_096, 1 << 20])
def test_the_blocked_iteration_is_right_with_one_segment_or_many(segment):
    from helpers.driver import BlockedIteration, DeviceGraph, step_error
    graph = generators.adversarial_graph(20_001, seed=7, hub_in_links=12_000)
    dg = DeviceGraph(graph)
    BlockedIteration(dg, vertices_per_segment=segment)        # builds the graph's segments of that size
    passes = dg.segments(segment)
    assert len(passes) == -(-graph.num_vertices // segment) or segment > graph.num_vertices
    assert step_error(dg, "blocked", vertices_per_segment=segment) < 1e-4
    reference = pagerank(graph, tol=1e-10)
    step = BlockedIteration(dg, tol=1e-7, max_iter=300, vertices_per_segment=segment)
    for _ in range(300):
        step.run()
    reason, count = step.stopped_state()
    assert reason == 1 and np.abs(step.ranks_after(count).get() - reference.ranks).sum() < 2e-5


@pytest.mark.gpu
def test_the_segments_and_out_csr_built_on_the_gpu_are_the_reference_ones():
    import cupy as cp
    from types import SimpleNamespace
    from helpers.driver import DeviceGraph
    for graph in segment_graphs():
        on_gpu = SimpleNamespace(num_vertices=graph.num_vertices, name=graph.name, in_offsets=cp.asarray(
            graph.in_offsets, dtype=cp.int32), in_sources=cp.asarray(graph.in_sources, dtype=cp.int32),
            out_degree=cp.asarray(graph.out_degree, dtype=cp.int32))
        dg = DeviceGraph(on_gpu)
        for key in (1, 257, 1 << 20):
            want = reference_segments(graph, key)
            got = dg.segments(key)
            assert len(got) == len(want)
            for part, expected in zip(got, want):
                for a, b in zip(part, expected):
                    assert a.dtype == cp.int32
                    np.testing.assert_array_equal(a.get(), b)
        offsets, targets = dg.out_csr                      # sorted on the GPU: no host graph
        np.testing.assert_array_equal(offsets.get(), graph.out_offsets)
        np.testing.assert_array_equal(targets.get(), graph.out_targets)
        np.testing.assert_array_equal(dg.in_targets.get(), np.repeat(np.arange(graph.num_vertices),
                                                                     np.diff(graph.in_offsets)))


@pytest.mark.gpu
def test_a_captured_graph_replays_the_same_iterations():
    import cupy as cp
    from helpers.driver import BlockedIteration, DeviceGraph, FusedIteration, capture
    dg = DeviceGraph(generators.rmat_graph(60_000, 400_000, seed=14))
    plain = FusedIteration(dg)
    for _ in range(22):
        plain.run()
    replayed = FusedIteration(dg)
    stream = cp.cuda.Stream(non_blocking=True)
    cuda_graph = capture(replayed, 10, stream)                  # runs 2 iterations to warm up, then records 10
    cuda_graph.launch(stream)
    cuda_graph.launch(stream)
    stream.synchronize()
    assert np.array_equal(plain.ranks_after(22).get(), replayed.ranks_after(22).get())
    assert np.array_equal(plain.changes[:22].get(), replayed.changes[:22].get())
    blocked = [BlockedIteration(dg, vertices_per_segment=9_999) for _ in range(2)]
    for _ in range(12):
        blocked[0].run()
    capture(blocked[1], 10, stream).launch(stream)
    stream.synchronize()
    assert np.array_equal(blocked[0].ranks_after(12).get(), blocked[1].ranks_after(12).get())


@pytest.mark.gpu
def test_personalised_pagerank_on_the_gpu_matches_the_reference():
    from helpers.driver import DeviceGraph, pagerank_gpu
    graph = generators.rmat_graph(60_000, 400_000, seed=14)
    dg = DeviceGraph(graph)
    weights = np.zeros(graph.num_vertices)
    weights[np.random.default_rng(8).choice(graph.num_vertices, 50, replace=False)] = 1.0
    expected = pagerank(graph, tol=1e-10, personalization=weights)
    for name in ("pull_hybrid", "cusparse"):
        result = pagerank_gpu(dg, name, tol=1e-7, personalization=weights)
        assert result.converged and np.abs(result.ranks - expected.ranks).sum() < 2e-6, name
    with pytest.raises(ValueError, match="teleports uniformly"):
        pagerank_gpu(dg, "fused", personalization=weights)


def six_versions_wrong() -> tuple[float, int]:
    """The share of vertices with more than 32 in-links that the six-versions kernel gets wrong, and how
    many of the others it gets wrong."""
    import cupy as cp
    from helpers.driver import BLOCK, DeviceGraph
    graph = generators.adversarial_graph(20_001, seed=13, hub_in_links=12_000)
    dg = DeviceGraph(graph)
    x = cp.asarray(np.random.default_rng(0).random(graph.num_vertices).astype(np.float32))
    y = cp.full(graph.num_vertices, cp.nan, dtype=cp.float32)
    kernels.compiled("pull_hybrid_six_versions")(((graph.num_vertices + BLOCK - 1) // BLOCK,), (BLOCK,),
                                         (dg.in_offsets, dg.in_sources, x, y, np.int32(graph.num_vertices)))
    expected = graph.in_matrix @ x.get().astype(np.float64)
    got = y.get()
    heavy = graph.in_degree > 32
    wrong = ~np.isclose(got, expected, rtol=1e-3) | np.isnan(got)
    return float(wrong[heavy].mean()), int(wrong[~heavy].sum())


def _six_versions_kernel_is_caught():
    """Its full-mask shuffle inside a branch is undefined: wrong sums, or on some GPUs a trap that loses
    the CUDA context. It runs in a process of its own, so a trap ends that process only."""
    from helpers.measure import gpu
    try:
        heavy, light = gpu.in_own_context(six_versions_wrong, time_limit=300)
    except (RuntimeError, gpu.ChildDiedError) as error:
        assert "illegal instruction" in str(error).lower() or isinstance(error, gpu.ChildDiedError), error
        return
    assert heavy > 0.9 and light == 0


@pytest.mark.gpu
def test_int64_arrays_that_fit_are_converted_and_too_many_edges_are_refused():
    from types import SimpleNamespace
    from helpers.core.graph import Graph
    from helpers.driver import DeviceGraph, GraphTooLargeError, pagerank_gpu
    g = generators.chain(4)
    wide = Graph(g.num_vertices, g.out_offsets.astype(np.int64), g.out_targets, g.in_offsets.astype(np.int64),
                 g.in_sources.astype(np.int64), g.out_degree.astype(np.int64), name="wide")
    assert np.allclose(pagerank_gpu(DeviceGraph(wide), "pull_contrib").ranks, pagerank(g).ranks, atol=1e-6)
    huge = SimpleNamespace(num_vertices=4, in_offsets=np.array([0, 0, 0, 0, 2**31], dtype=np.int64),
                           in_sources=np.zeros(3, dtype=np.int32), out_degree=np.zeros(4, dtype=np.int32), name="huge")
    with pytest.raises(GraphTooLargeError, match="int64 offsets"):
        DeviceGraph(huge)
    bad = SimpleNamespace(num_vertices=4, in_offsets=g.in_offsets, in_sources=g.in_sources + 10,
                          out_degree=g.out_degree, name="bad ids")
    with pytest.raises(ValueError, match="outside"):
        DeviceGraph(bad)


@pytest.mark.gpu
def test_float64_vectors_are_refused_where_they_enter_a_kernel():
    import cupy as cp
    from helpers.driver import VARIANTS, DeviceGraph
    dg = DeviceGraph(generators.random_graph(1_000, seed=1))
    with pytest.raises(TypeError, match="float32"):
        VARIANTS["pull_contrib"](dg, cp.ones(1_000), cp.empty(1_000, dtype=cp.float32))


@pytest.mark.gpu
def test_scan_naive_refuses_large_graphs():
    from helpers.driver import DeviceGraph, Iteration
    big = DeviceGraph(generators.rmat_graph(60_000, 400_000, seed=14))
    with pytest.raises(ValueError, match="O\\(N\\^2\\)"):
        Iteration(big, "scan_naive")


@pytest.mark.gpu
def test_a_graph_beyond_the_memory_limit_is_refused_up_front_not_midway():
    import cupy as cp
    from helpers.measure import gpu
    from helpers.driver import DeviceGraph, GraphTooLargeError, device_bytes, pagerank_gpu
    pool = cp.get_default_memory_pool()
    pool.free_all_blocks()
    limit = pool.used_bytes() + 256 * 2**20
    pool.set_limit(size=limit)
    try:
        free = gpu.free_bytes()
        for share, fits in ((0.5, True), (0.95, False)):
            n = 1024
            while device_bytes(n, 6 * n) < share * free:
                n = int(n * 1.1)
            sources = np.repeat(np.arange(n), 6)                     # exactly 6 out-links each
            graph = from_edges(sources, (sources + np.tile(np.arange(1, 7), n)) % n, n, name=f"{share} of free")
            if fits:
                assert pagerank_gpu(graph, "fused").ranks.size == n     # runs, no out-of-memory midway
            else:
                with pytest.raises(GraphTooLargeError, match="GiB free"):
                    DeviceGraph(graph)
    finally:
        pool.set_limit(size=0)


@pytest.mark.gpu
def test_warp_kernels_index_graphs_beyond_2_27_vertices():
    import cupy as cp
    from types import SimpleNamespace
    from helpers.driver import VARIANTS, DeviceGraph
    n = 2**27 + 3_001                          # 32 threads per vertex: more than 2^32 threads
    in_offsets = cp.arange(n + 1, dtype=cp.int32)
    in_offsets[-1] = n                         # every vertex v has one in-link, from (v + 1) % n
    in_sources = (cp.arange(n, dtype=cp.int32) + 1) % n
    dg = DeviceGraph(SimpleNamespace(num_vertices=n, in_offsets=in_offsets, in_sources=in_sources,
                                     out_degree=cp.ones(n, dtype=cp.int32), name="ring beyond 2^27"))
    x = cp.arange(n, dtype=cp.float32) % 1024
    for name in ("pull_warp", "pull_subwarp_16", "pull_binned", "pull_hybrid"):
        y = cp.full(n, cp.nan, dtype=cp.float32)
        VARIANTS[name](dg, x, y)
        assert bool((y == x[in_sources]).all()), name
        del y


def _top_k_three_ways_with_ties():
    import cupy as cp
    from helpers.driver import topk
    from helpers.core.reference import top_k
    for k in (1, 5, 16):
        rng = np.random.default_rng(k)
        for n in (k, 1_000, 300_001):
            values = rng.integers(0, 50, n).astype(np.float32) / 50     # many ties on purpose
            expected = top_k(values, k)
            device = cp.asarray(values)
            for method in (topk.by_sort, topk.by_partition, topk.by_merge,
                           lambda r, k: topk.by_merge(r, k, kernel="top_k_merge_branchy")):
                got = method(device, k)
                assert np.array_equal(got, expected), f"{method.__name__}, n={n}: {got} != {expected}"
    with pytest.raises(ValueError, match="k must lie between"):
        topk.by_sort(cp.zeros(3, dtype=cp.float32), 4)


@pytest.mark.gpu
def test_16_bit_contributions_are_as_accurate_as_their_format_and_never_overflow():
    import cupy as cp
    from helpers.driver import VARIANTS, DeviceGraph
    graph = generators.rmat_graph(60_000, 400_000, seed=14)
    dg = DeviceGraph(graph)
    reference = pagerank(graph, tol=1e-10)
    contrib = np.divide(reference.ranks, graph.out_degree, out=np.zeros(graph.num_vertices),
                        where=graph.out_degree > 0).astype(np.float32)       # real, tiny contributions

    def error(storage, values):
        expected = graph.in_matrix @ values.astype(np.float64)
        y = cp.full(graph.num_vertices, cp.nan, dtype=cp.float32)
        VARIANTS[{'float16': 'pull_f16', 'bfloat16': 'pull_bf16'}[storage]](dg, cp.asarray(values), y)
        got = y.get().astype(np.float64)
        assert np.isfinite(got).all(), storage
        linked = expected > 0
        return np.max(np.abs(got - expected)[linked] / expected[linked])

    assert error("float16", contrib) < 2e-3           # 11-bit significand
    assert error("bfloat16", contrib) < 1e-2          # 8-bit significand
    big = contrib.copy()
    big[int(np.argmax(graph.out_degree))] = 0.9       # n * 0.9 is far beyond float16's 65,504
    assert error("float16", big) < 2e-3               # the scale follows the data: still finite and accurate


def _dynamic_parallelism_counts_the_child_launches_it_could_not_make():
    import cupy as cp
    from helpers.driver import BLOCK, DeviceGraph
    graph = generators.rmat_graph(200_000, 2_000_000, seed=3)
    dg = DeviceGraph(graph)
    n = graph.num_vertices
    x = cp.asarray(np.random.default_rng(0).random(n).astype(np.float32))
    expected = graph.in_matrix @ x.get().astype(np.float64)
    kernel = kernels.compiled("pull_dynamic")
    for threshold in (256, 8):
        children = int((graph.in_degree > threshold).sum())
        y = cp.full(n, cp.nan, dtype=cp.float32)
        failed = cp.zeros(1, dtype=cp.int32)
        kernel(((n + BLOCK - 1) // BLOCK,), (BLOCK,), (dg.in_offsets, dg.in_sources, x, y, np.int32(n),
                                                        np.int32(threshold), failed))
        cp.cuda.Device().synchronize()
        right = np.isclose(y.get(), expected, rtol=1e-4)
        assert (~right).sum() <= int(failed.get()[0]) <= children
        if threshold == 256:
            assert children < 2_048 and right.all()


@pytest.mark.gpu
def test_the_library_baselines_compute_the_spmv_they_are_timed_for_and_say_nothing_more():
    # the bench times these three: a baseline that summed the wrong thing, or printed a warning into every
    # lecture that calls it, would not be a fair one
    import warnings

    import cupy as cp

    from helpers.driver import baselines
    from helpers.driver import DeviceGraph
    graph = generators.rmat_graph(50_000, 600_000, seed=21)
    dg = DeviceGraph(graph)
    x_host = np.random.default_rng(4).random(graph.num_vertices).astype(np.float32)
    exact = graph.in_matrix @ x_host.astype(np.float64)
    x, y = cp.asarray(x_host), cp.zeros(graph.num_vertices, dtype=cp.float32)
    baselines.torch_spmv(dg, x)        # imports torch before the check: importing it may warn (its business)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        prepared = baselines.PreparedSpMV(dg, x, y)
        prepared()
        assert np.abs(y.get() - exact).max() <= 1e-5 * np.abs(exact).max()
        run, what = baselines.torch_spmv(dg, x)
        if run is not None:
            got = cp.from_dlpack(run()).get()
            assert np.abs(got - exact).max() <= 1e-5 * np.abs(exact).max(), what
        step = baselines.cupyx_iteration(dg)
        assert 0 < float(step()) < 2


def _add_one_adds_one():
    import cupy as cp
    x = cp.arange(1_000, dtype=cp.float32)
    kernels.compiled("add_one")((4,), (256,), (x, np.int32(999)))          # the last element is past n
    assert np.array_equal(x.get(), np.r_[np.arange(1, 1_000), 999].astype(np.float32))


def _empty_launches():
    from helpers.measure import gpu
    assert gpu.time_back_to_back(lambda: kernels.compiled("empty")((1,), (1,), ()), launches=10).median_ms > 0


def _floors_are_ordered():
    from helpers.driver import floors
    from helpers.driver import DeviceGraph
    f = floors.measure(DeviceGraph(generators.rmat_graph(60_000, 400_000, seed=14)), launches=3, trials=3)
    assert 0 < f.stream.median_ms <= 1.5 * f.gather.median_ms and 1 / 32 <= f.sectors_per_edge <= 1


def _compute_roof_is_measured():
    from helpers.driver import floors
    assert floors.compute_roof(rounds=256, trials=3).median_ms > 100          # GFLOP/s: any GPU passes 100


def _contributions_divide_by_the_out_degree():
    import cupy as cp
    degree = np.array([0, 1, 2, 7], dtype=np.int32)
    rank = np.array([0.4, 0.3, 0.2, 0.1], dtype=np.float32)
    out = cp.full(4, cp.nan, dtype=cp.float32)
    kernels.compiled("contributions")((1,), (256,), (cp.asarray(rank), cp.asarray(degree), out, np.int32(4)))
    assert np.array_equal(out.get(), np.array([0, 0.3, 0.1, np.float32(0.1) / 7], dtype=np.float32))


def _the_stop_test_records_counts_and_stops():
    import cupy as cp
    state, changes = cp.zeros(2, dtype=cp.int32), cp.full(4, cp.nan, dtype=cp.float32)
    kernel = kernels.compiled("stop_test")
    for value in (0.5, 0.1, 1e-7, 0.3):                       # the last is never recorded: stopped
        kernel((1,), (1,), (cp.asarray([value], dtype=cp.float32), state, changes, np.int32(4),
                            np.float32(1e-6), np.int32(0)))
    assert state.get().tolist() == [1, 3] and np.allclose(changes.get()[:3], [0.5, 0.1, 1e-7])


def _warp_atomic_sum_adds_everything():
    import cupy as cp
    values = cp.asarray(np.random.default_rng(2).integers(0, 9, 10_001).astype(np.float32))
    total = cp.zeros(1, dtype=cp.float32)
    kernels.compiled("warp_atomic_sum")((40,), (256,), (values, total, np.int32(10_001)))
    assert float(total.get()[0]) == float(values.sum().get())          # small integers: exact in any order


def _the_timeline_records_every_block_and_computes_the_pull():
    import cupy as cp
    from helpers.lectures import l10_instruments as instruments
    from helpers.driver import DeviceGraph
    graph = generators.adversarial_graph(20_001, seed=13, hub_in_links=12_000)
    dg = DeviceGraph(graph)
    x = cp.asarray(np.random.default_rng(0).random(graph.num_vertices).astype(np.float32))
    for how in ("thread", "warp"):
        frame = instruments.block_timeline(dg, x, how)
        assert len(frame) == -(-graph.num_vertices * (1 if how == "thread" else 32) // 256)
        assert (frame["stop_us"] >= frame["start_us"]).all() and frame["start_us"].min() == 0
    lanes = instruments.busiest_lane(graph.in_degree)
    assert lanes.max() == graph.in_degree.max() and lanes.size == -(-graph.num_vertices // 32)


OWN_CHECKS = {"timeline": _the_timeline_records_every_block_and_computes_the_pull, "add_one": _add_one_adds_one, "empty": _empty_launches, "gather_floor": _floors_are_ordered,
              "fma_roof": _compute_roof_is_measured, "contributions": _contributions_divide_by_the_out_degree,
              "stop_test": _the_stop_test_records_counts_and_stops, "warp_atomic_sum": _warp_atomic_sum_adds_everything,
              "pull_hybrid_six_versions": _six_versions_kernel_is_caught,
              "top_k_merge": _top_k_three_ways_with_ties, "top_k_merge_branchy": _top_k_three_ways_with_ties,
              "pull_dynamic": _dynamic_parallelism_counts_the_child_launches_it_could_not_make}


@pytest.mark.gpu
@pytest.mark.timing
def test_beyond_half_the_l2_the_choice_is_timed_and_never_the_slower_iteration():
    from helpers.driver import DeviceGraph, choose, make_iteration, replayed, time_iterations
    from helpers.measure.gpu import device_facts
    from helpers.measure.verdicts import compare

    n = device_facts().l2_bytes // 4 + 1                 # the rank vector is twice half the L2, plus one
    dg = DeviceGraph(device_generators.rmat_device(n, 4 * n, seed=5), variant="blocked")
    assert choose(dg, measure=False)[0] == "blocked"     # the size rule alone
    name, why = choose(dg)
    assert name in ("blocked", "fused") and "ms per iteration" in why and "does not fit" in why
    other = "fused" if name == "blocked" else "blocked"
    timings = time_iterations({n: replayed(make_iteration(dg, n), 4) for n in (name, other)}, iterations=4,
                              trials=7)
    assert compare(timings[name], timings[other]).word != "slower", why
    small = DeviceGraph(device_generators.rmat_device(1000, 5000, seed=5))
    assert choose(small) == ("fused", choose(small, measure=False)[1])   # fits: no timing, the same answer
