import warnings

import networkx as nx
import numpy as np
import pytest

from helpers.core import generators
from helpers.core.arguments import ArgumentError, ArrayKindError
from helpers.core.reference import (
    ConvergenceWarning, l1_distance, max_abs_diff, pagerank, pagerank_step, rank_correlation,
    teleport_vector, top_k, top_k_overlap, verify_fixed_point)
from fake_arrays import GpuArray, masked

TOL = 1e-12


def networkx_ranks(graph, personalization=None, tol=TOL):
    """networkx on the same graph, with its tol divided by N (it scales its own test by N)."""
    g = nx.DiGraph()
    g.add_nodes_from(range(graph.num_vertices))
    g.add_edges_from(zip(*(a.tolist() for a in graph.edges())))
    pers = None if personalization is None else dict(enumerate(personalization))
    ranks = nx.pagerank(g, alpha=0.85, tol=tol / graph.num_vertices, max_iter=10_000, personalization=pers)
    return np.array([ranks[v] for v in range(graph.num_vertices)])


@pytest.mark.parametrize("seed", range(20))
def test_reference_equals_networkx_on_random_graphs(seed):
    rng = np.random.default_rng(seed)
    graph = generators.random_graph(int(rng.integers(20, 400)), avg_degree=float(rng.uniform(1, 6)), seed=seed,
                                    dangling_fraction=0.25)
    assert graph.dangling.any()
    result = pagerank(graph, tol=TOL)
    assert result.converged
    assert max_abs_diff(result.ranks, networkx_ranks(graph)) < 1e-10
    assert abs(result.ranks.sum() - 1.0) < 1e-12


@pytest.mark.parametrize("name", sorted(generators.TINY_GRAPHS))
def test_reference_equals_networkx_on_tiny_graphs(name):
    graph = generators.TINY_GRAPHS[name]()
    result = pagerank(graph, tol=TOL)
    assert max_abs_diff(result.ranks, networkx_ranks(graph)) < 1e-10
    assert abs(result.ranks.sum() - 1.0) < 1e-12
    assert verify_fixed_point(graph, result.ranks, tol=1e-10)


def test_personalised_pagerank_equals_networkx():
    graph = generators.random_graph(200, seed=3)
    weights = np.random.default_rng(3).random(200) * (np.arange(200) % 3 == 0)
    result = pagerank(graph, tol=TOL, personalization=weights)
    assert max_abs_diff(result.ranks, networkx_ranks(graph, weights)) < 1e-10
    assert abs(result.ranks.sum() - 1.0) < 1e-12


def test_tiny_graphs_have_the_ranks_their_symmetry_demands():
    assert pagerank(generators.single_vertex()).ranks.tolist() == [1.0]
    for graph in (generators.cycle(7), generators.complete(5), generators.all_dangling(4)):
        n = graph.num_vertices
        assert max_abs_diff(pagerank(graph).ranks, np.full(n, 1 / n)) < 1e-12
    ranks = pagerank(generators.in_star(6)).ranks
    assert ranks[0] > ranks[1] and np.allclose(ranks[1:], ranks[1])


def test_residuals_shrink_like_the_damping_factor():
    result = pagerank(generators.rmat_graph(20_000, 100_000, seed=1), tol=1e-12)
    ratios = result.residuals[1:] / result.residuals[:-1]
    assert ratios[5:].max() <= 0.85 + 1e-6        # the L1 change shrinks at least by d each step
    assert result.iterations == len(result.residuals) and result.residuals[-1] < 1e-12


def test_verifier_rejects_a_perturbed_vector():
    graph = generators.random_graph(500, seed=11)
    ranks = pagerank(graph, tol=1e-12).ranks
    assert verify_fixed_point(graph, ranks, tol=1e-9).ok
    moved = ranks.copy()
    moved[[3, 17]] += [2e-4, -2e-4]                 # still sums to 1, but no longer a fixed point
    check = verify_fixed_point(graph, moved, tol=1e-6)
    assert not check.ok and "one more iteration moves the ranks" in check.message
    scaled = ranks * 1.001
    assert "sum to" in verify_fixed_point(graph, scaled).message
    negative = ranks.copy()
    negative[0] = -negative[0]
    assert "negative" in verify_fixed_point(graph, negative).message
    assert not verify_fixed_point(graph, np.full(graph.num_vertices, np.nan)).ok
    assert not verify_fixed_point(graph, ranks[:-1]).ok


@pytest.mark.parametrize("kwargs, message", [
    (dict(damping=0.0), "damping must lie strictly between 0 and 1"),
    (dict(damping=1.0), "damping must lie strictly between 0 and 1"),
    (dict(damping=-0.5), "damping must lie strictly between 0 and 1"),
    (dict(tol=0.0), "tol must be positive"),
    (dict(tol=-1e-6), "tol must be positive"),
    (dict(personalization=np.zeros(5)), "personalization is all zeros"),
    (dict(personalization=np.array([1, -1, 0, 0, 0.0])), "finite and non-negative"),
    (dict(personalization=np.ones(4)), "one weight per vertex"),
    (dict(max_iter=0), "max_iter must be at least 1"),
    (dict(max_iter=2.5), r"max_iter must be an integer, got 2\.5 \(float\)"),
    (dict(max_iter=True), r"max_iter must be an integer, got True"),
    (dict(damping="0.85"), r"damping must be a number, got '0\.85'"),
    (dict(tol=float("inf")), "tol must be positive and finite"),
    (dict(tol=float("nan")), "tol must be positive and finite"),
    (dict(personalization=np.array([1, np.nan, 0, 0, 0])), "finite and non-negative"),
    (dict(personalization=np.array([1, np.inf, 0, 0, 0])), "finite and non-negative"),
    (dict(personalization=["a", "b", "c", "d", "e"]), "personalization must be an array of numbers"),
    (dict(progress="yes"), "progress must be True or False"),
])
def test_bad_parameters_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        pagerank(generators.cycle(5), **kwargs)


def test_comparison_helpers():
    a = np.array([0.1, 0.4, 0.2, 0.3])
    b = np.array([0.1, 0.3, 0.2, 0.4])
    assert max_abs_diff(a, b) == pytest.approx(0.1)
    assert l1_distance(a, b) == pytest.approx(0.2)
    assert top_k(a, 2).tolist() == [1, 3]
    assert top_k(np.array([0.5, 0.5, 0.0]), 1).tolist() == [0]     # ties go to the smaller id
    assert top_k_overlap(a, b, 2) == 1.0 and top_k_overlap(a, b, 1) == 0.0
    assert rank_correlation(a, a) == pytest.approx(1.0)
    assert rank_correlation(a, b) < 1.0


def test_bad_parameters_are_argument_errors_both_value_and_type_errors():
    for kind in (ArgumentError, ValueError, TypeError):
        with pytest.raises(kind, match="max_iter must be an integer"):
            pagerank(generators.cycle(5), max_iter=2.5)
    with pytest.raises(ArgumentError, match="expected a helpers.core.graph.Graph"):
        pagerank(np.eye(3))
    assert pagerank(generators.cycle(5), max_iter=np.int64(50)).converged      # NumPy integers are integers


@pytest.mark.parametrize("value", [1e308, 1.7976931348623157e308, 5e-324])
def test_huge_or_tiny_personalisation_weights_are_normalised_safely(value):
    graph = generators.random_graph(300, seed=4, dangling_fraction=0.2)
    weights = np.zeros(300)
    weights[::3] = value
    with warnings.catch_warnings():
        warnings.simplefilter("error")            # no overflow or division RuntimeWarning either
        result = pagerank(graph, tol=TOL, personalization=weights)
    assert abs(result.ranks.sum() - 1.0) < 1e-12
    assert max_abs_diff(result.ranks, pagerank(graph, tol=TOL, personalization=(weights > 0) * 1.0).ranks) < 1e-14


def test_stopping_at_max_iter_warns_and_says_so_in_the_result():
    graph = generators.rmat_graph(5_000, 30_000, seed=2)
    with pytest.warns(ConvergenceWarning, match=r"did not converge in max_iter=5 iterations: the last L1 change "
                                                r"is [0-9.e-]+, not below tol=1e-10"):
        result = pagerank(graph, max_iter=5)
    assert not result.converged and result.iterations == 5 and result.residuals[-1] >= 1e-10
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert pagerank(graph).converged                             # converging: no warning


def test_the_progress_bar_shows_iterations_and_the_l1_change(capsys):
    graph = generators.rmat_graph(5_000, 30_000, seed=2)
    result = pagerank(graph, progress=True)
    out = capsys.readouterr().out
    assert "PageRank (float64)" in out and f"{result.iterations} steps" in out   # plain lines: captured
    assert "\r" not in out
    assert f"L1 change {result.residuals[-1]:.2e}" in out
    pagerank(graph)
    assert capsys.readouterr().out == ""                           # off by default


def test_top_k_validates_k():
    ranks = np.array([0.1, 0.4, 0.2, 0.3])
    assert top_k(ranks, 0).tolist() == []
    assert top_k(ranks, 10).tolist() == [1, 3, 2, 0]
    assert top_k(ranks, np.int32(1)).tolist() == [1]
    for k, message in ((-1, "k must be at least 0, got -1"), (2.5, "k must be an integer"), (True, "k must be an")):
        with pytest.raises(ArgumentError, match=message):
            top_k(ranks, k)
    with pytest.raises(ArgumentError, match="k must be at least 1"):
        top_k_overlap(ranks, ranks, 0)
    with pytest.raises(ArgumentError, match="ranks must be a 1-D vector"):
        top_k(np.ones((2, 2)), 1)


def test_comparisons_refuse_vectors_of_different_lengths():
    a = np.array([0.5, 0.5])
    for compare in (max_abs_diff, l1_distance, rank_correlation):
        with pytest.raises(ArgumentError, match=r"same length, got shapes \(2,\) and \(1,\)"):
            compare(a, np.array([0.5]))


def test_gpu_top_k_arguments_are_checked_before_any_gpu_work():
    from helpers.driver import topk
    ranks = np.ones(10, dtype=np.float32)
    topk._check(ranks, np.int64(3))
    for k, message in ((0, r"between 1 and the number of vertices \(10\), got 0"), (11, "got 11"),
                       (2.5, "k must be an integer"), (True, "k must be an integer")):
        with pytest.raises(ArgumentError, match=message):
            topk._check(ranks, k)


def test_personalisation_that_numpy_would_misread_is_refused():
    """Were read silently wrong (a masked entry read through the mask, the imaginary part dropped with only a
    NumPy warning) or refused with NumPy's words ('setting an array element with a sequence')."""
    import scipy.sparse as sp
    g = generators.cycle(5)
    masked = np.ma.masked_array(np.ones(5), mask=[True, False, False, False, False])
    for p, message in ((masked, r"masked array with masked entries.*personalization\.filled\(0\)"),
                       (np.ones(5, dtype=complex), "personalization holds complex numbers"),
                       (sp.csr_matrix(np.ones((1, 5))), r"SciPy sparse csr_matrix.*toarray\(\)\.ravel\(\)"),
                       (sp.csr_array(np.ones(5)), "SciPy sparse csr_array")):
        with pytest.raises(ArgumentError, match=message):
            pagerank(g, personalization=p)
    unmasked = np.ma.masked_array([1.0, 0, 0, 0, 0], mask=False)          # nothing masked: used as given
    given = pagerank(g, personalization=[1, 0, 0, 0, 0]).ranks
    assert np.allclose(pagerank(g, personalization=unmasked).ranks, given)


RANKS = np.array([0.5, 0.0, 0.5])


@pytest.mark.parametrize("call, name", [
    (lambda x: l1_distance(x, RANKS), "a"),
    (lambda x: max_abs_diff(RANKS, x), "b"),
    (lambda x: rank_correlation(x, RANKS), "a"),
    (lambda x: top_k(x, 2), "ranks"),
    (lambda x: top_k_overlap(RANKS, x, 2), "b"),
    (lambda x: verify_fixed_point(generators.cycle(3), x), "ranks"),
    (lambda x: pagerank(generators.cycle(3), personalization=x), "personalization"),
    (lambda x: teleport_vector(3, x), "personalization"),
])
@pytest.mark.parametrize("kind", ["masked", "gpu"])
def test_rank_functions_refuse_masked_and_gpu_arrays_alike(call, name, kind):
    """l1_distance read a masked entry through its mask (9.0 for a hidden 9) while top_k refused it, and a
    CuPy array met NumPy's bare TypeError: one check and one error, that says to call .get() first."""
    if kind == "masked":
        x, message = masked((0.5, 9.0, 0.5)), f"{name} is a masked array with masked entries"
    else:
        x, message = GpuArray(), rf"{name} is a CuPy array in GPU memory.*{name}\.get\(\)"
    with pytest.raises(ArrayKindError, match=message):
        call(x)


def test_the_gpu_top_k_refuses_a_masked_vector_and_lets_a_gpu_one_through():
    from helpers.driver import topk
    with pytest.raises(ArrayKindError, match="ranks is a masked array"):
        topk._check(np.ma.masked_array(np.ones(4, np.float32), mask=[1, 0, 0, 0]), 2)
    topk._check(GpuArray(), 2)                       # runs on the GPU: a CuPy vector is what it takes


def test_the_step_takes_a_gpu_vector_only_with_gpu_ranks_and_no_masked_list():
    """Was: a GPU array where CuPy was not loaded raised KeyError('cupy'), a CuPy teleport beside host ranks
    NumPy's TypeError, and a list holding numpy.ma.masked was read as nan."""
    graph, ranks = generators.cycle(3), np.full(3, 1 / 3)
    with pytest.raises(ArrayKindError, match=r"ranks is a CuPy array in GPU memory.*ranks\.get\(\)"):
        pagerank_step(graph, GpuArray(), 0.85, ranks)
    with pytest.raises(ArrayKindError, match=r"teleport is a CuPy array in GPU memory.*teleport\.get\(\)"):
        pagerank_step(graph, ranks, 0.85, GpuArray())
    with pytest.raises(ArrayKindError, match="a holds a masked array with masked entries"):
        l1_distance([0.2, np.ma.masked, 0.5], ranks)
    with pytest.raises(ArrayKindError, match="ranks holds a masked array with masked entries"):
        top_k([masked((0.5, 9.0, 0.5))[0], masked((0.5, 9.0, 0.5))[1]], 1)


def test_a_tolerance_beyond_a_floats_range_is_an_argument_error():
    with pytest.raises(ArgumentError, match="tol must be positive and finite, got inf"):   # was OverflowError
        pagerank(generators.cycle(5), tol=2**2000)


def test_top_k_refuses_nan_ranks_and_orders_infinities():
    """A NaN rank was put last without a word: a vector from a broken kernel still gave a 'top k'."""
    with pytest.raises(ArgumentError, match="ranks must not hold NaN: vertex 1 has no rank to order by"):
        top_k(np.array([0.1, np.nan, 0.3]), 2)
    with pytest.raises(ArgumentError, match="ranks must not hold NaN"):
        top_k_overlap(np.array([np.nan, 1.0]), np.array([1.0, 0.5]), 1)
    with pytest.raises(ArgumentError, match="ranks holds complex numbers"):
        top_k(np.array([1 + 1j, 2]), 1)
    assert top_k(np.array([0.1, np.inf, -np.inf, 0.2]), 4).tolist() == [1, 3, 0, 2]


def test_pagerank_step_checks_its_arguments():
    """Was AttributeError ('list' object has no attribute 'shape'), NumPy's UFuncTypeError for a damping of
    '0.85', and a silently meaningless step for a damping of 2."""
    g = generators.cycle(4)
    ranks, teleport = np.full(4, 0.25), np.full(4, 0.25)
    assert np.allclose(pagerank_step(g, list(ranks), 0.85, list(teleport)), 0.25)    # lists are arrays
    for args, message in (((g, ranks, 2.0, teleport), "damping must lie strictly between 0 and 1, got 2.0"),
                          ((g, ranks, "0.85", teleport), "damping must be a number, got '0.85'"),
                          (("g", ranks, 0.85, teleport), "expected a helpers.core.graph.Graph .* got str"),
                          ((g, ranks, 0.85, None), r"one entry per vertex \(4\), got shapes \(4,\) and \(\)"),
                          ((g, ["a"] * 4, 0.85, teleport), "ranks and teleport must be arrays of numbers"),
                          ((g, ranks.astype(complex), 0.85, teleport), "ranks holds complex numbers")):
        with pytest.raises(ArgumentError, match=message):
            pagerank_step(*args)
