import numpy as np
import pytest

from helpers import generators


def test_tiny_graphs_have_their_shapes():
    tiny = generators.tiny_graphs()
    assert set(tiny) == set(generators.TINY_GRAPHS)
    assert tiny["single_vertex"].num_vertices == 1 and tiny["single_vertex"].num_edges == 0
    assert tiny["chain"].dangling.tolist() == [False] * 4 + [True]
    assert not tiny["cycle"].dangling.any()
    assert tiny["in_star"].in_degree[0] == 5 and tiny["in_star"].dangling[0]
    assert tiny["out_star"].out_degree[0] == 5 and tiny["out_star"].dangling[1:].all()
    assert tiny["complete"].num_edges == 5 * 4
    assert tiny["self_loop"].out_degree.tolist() == [2, 1, 1]
    assert tiny["all_dangling"].dangling.all() and tiny["all_dangling"].num_edges == 0
    assert tiny["two_components"].num_vertices == 6


def test_random_graph_is_seeded_and_has_every_awkward_feature():
    a = generators.random_graph(2_000, seed=5)
    b = generators.random_graph(2_000, seed=5)
    c = generators.random_graph(2_000, seed=6)
    assert np.array_equal(a.out_targets, b.out_targets) and not np.array_equal(a.out_offsets, c.out_offsets)
    isolated = a.dangling & (a.in_degree == 0)
    assert 0.1 < a.dangling.mean() < 0.4 and isolated.any()
    src, dst = a.edges()
    assert (src == dst).any()                      # self-loops kept


def test_adversarial_graph_has_a_hub():
    g = generators.adversarial_graph(15_000, seed=2, hub_in_links=12_000)
    assert g.in_degree.max() >= 12_000
    assert g.num_vertices % 256 != 0


def test_rmat_matches_the_requested_size_and_dangling_share():
    g = generators.rmat_graph(50_000, 300_000, seed=4, dangling_share=0.15)
    assert g.num_vertices == 50_000 and g.num_edges == 300_000
    assert g.dangling.sum() == round(0.15 * 50_000)
    assert not (g.dangling & (g.in_degree == 0)).any()      # every vertex occurs in some edge, as in a file
    assert g.in_degree.max() > 20 * 300_000 / 50_000     # skewed: a hub far above the mean
    again = generators.rmat_graph(50_000, 300_000, seed=4, dangling_share=0.15)
    assert np.array_equal(g.in_sources, again.in_sources)


def test_rmat_refuses_impossible_requests():
    with pytest.raises(ValueError, match="R-MAT probabilities"):
        generators.rmat_graph(100, 200, a=0.9, b=0.2, c=0.2)
    with pytest.raises(ValueError, match="distinct edges cannot"):
        generators.rmat_graph(10, 1_000)
