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


def test_the_web_like_graph_has_web_googles_published_shape_and_crawl_locality():
    from helpers.floors import sectors_per_edge
    g = generators.web_graph(60_000, 350_000, seed=7, max_out_degree=300, max_in_degree=2_500)
    assert g.num_vertices == 60_000 and g.num_edges == 350_000
    assert g.out_degree.max() == 300 and g.in_degree.max() == 2_500 and (g.in_degree == 2_500).sum() == 1
    assert g.dangling.sum() == round(generators.WEB_GOOGLE_DANGLING_SHARE * 60_000)
    assert not (g.dangling & (g.in_degree == 0)).any()                 # every vertex is in some edge
    src, dst = g.edges()
    assert not (src == dst).any()
    assert np.median(g.out_degree[g.out_degree > 0]) >= 2               # not a pure power law from 1
    crawl, shuffled = sectors_per_edge(g.in_sources), sectors_per_edge(generators.rmat_graph(60_000, 350_000).in_sources)
    assert crawl < 0.9 * shuffled                                        # ids in crawl order share cache lines


def test_the_web_like_graph_is_seeded():
    a, b = generators.web_graph(20_000, 100_000, seed=1), generators.web_graph(20_000, 100_000, seed=1)
    assert np.array_equal(a.in_sources, b.in_sources)


def test_sectors_per_edge_counts_distinct_sectors_per_warp():
    from helpers.floors import sectors_per_edge
    assert sectors_per_edge(np.zeros(64, dtype=np.int32)) == 1 / 32                # one sector per warp
    assert sectors_per_edge(np.arange(64, dtype=np.int32) * 8) == 1.0             # every gather its own
    assert sectors_per_edge(np.arange(64, dtype=np.int32)) == 4 / 32              # 8 floats per sector
