import re

import numpy as np
import pytest

from helpers.core import generators
from helpers.driver import device_generators


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
    from helpers.driver.floors import sectors_per_edge
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
    from helpers.driver.floors import sectors_per_edge
    assert sectors_per_edge(np.zeros(64, dtype=np.int32)) == 1 / 32                # one sector per warp
    assert sectors_per_edge(np.arange(64, dtype=np.int32) * 8) == 1.0             # every gather its own
    assert sectors_per_edge(np.arange(64, dtype=np.int32)) == 4 / 32              # 8 floats per sector


from helpers.core.arguments import MAX_SEED, SEED_OFFSET, ArgumentError  # noqa: E402
from helpers.core.graph import GraphTooLargeError  # noqa: E402


@pytest.mark.parametrize("call, message", [
    (lambda: generators.in_star(0), "n must be at least 1, got 0"),              # was numpy's negative dims
    (lambda: generators.out_star(2.5), r"n must be an integer, got 2\.5"),
    (lambda: generators.complete(-2), "n must be at least 1, got -2"),
    (lambda: generators.chain(2.5), r"n must be an integer, got 2\.5"),           # was 'dtype float64'
    (lambda: generators.in_degree_ladder(0), "top must be at least 1"),   # was 'need at least one array'
    (lambda: generators.random_graph(-5), "n must be at least 1, got -5"),
    (lambda: generators.random_graph(100, float("nan")), "avg_degree must be finite, got nan"),
    (lambda: generators.random_graph(100, -1), "avg_degree must be at least 0, got -1"),
    (lambda: generators.random_graph(100, dangling_fraction=1.5),
     "dangling_fraction must lie between 0 and 1"),
    (lambda: generators.random_graph(100, isolated_fraction=0.9),
     "isolated_fraction must lie between 0 and 0.8"),
    (lambda: generators.random_graph(100, self_loops=-1), "self_loops must be at least 0"),
    (lambda: generators.random_graph(100, seed=-1), "seed must be at least 0, got -1"),
    (lambda: generators.random_graph(100, seed=1.5), r"seed must be an integer, got 1\.5"),
    (lambda: generators.random_graph(100, seed=True), "seed must be an integer, got True"),
    (lambda: generators.adversarial_graph(100, hub_in_links=-1), "hub_in_links must be at least 0"),
    (lambda: generators.rmat_graph(10.7, 30), r"num_vertices must be an integer, got 10\.7"),  # truncated
    (lambda: generators.rmat_graph(100, 300.5), r"num_edges must be an integer, got 300\.5"),
    (lambda: generators.rmat_graph(100, 300, a=float("nan")), "a must be finite, got nan"),      # was a hang
    (lambda: generators.rmat_graph(100, 300, a="x"), "a must be a number, got 'x'"),
    (lambda: generators.rmat_graph(100, 300, dangling_share=1.5), "dangling_share must lie between 0 and 1"),
    (lambda: generators.rmat_graph(2**31, 2**31), "2,147,483,648 vertices do not fit"),  # killed for memory
    (lambda: generators.web_graph(2_000, 8_000, max_in_degree=100, max_out_degree=40, local_share=1.5),
     "local_share must lie between 0 and 1, got 1.5"),
    (lambda: generators.web_graph(100, 300), "max_out_degree=456 must be below the 100 vertices"),
    (lambda: generators.web_graph(2_000, 8_000, max_out_degree=40, max_in_degree=10**6),
     "max_in_degree=1,000,000 must be below the 1,688 vertices that link out"),
    (lambda: generators.without_hub_in_links("graph"), "expected a helpers.core.graph.Graph, got str"),
])
def test_bad_generator_arguments_are_argument_errors_naming_the_parameter(call, message):
    with pytest.raises(ArgumentError, match=message):
        call()


@pytest.mark.parametrize("a, b, c, found", [(1.0, 0.0, 0.0, "1,000 of 3,000"),
                                            (0.5, 0.5, 0.0, "1,999 of 3,000")])
def test_rmat_probabilities_that_cannot_reach_the_edge_count_are_refused_not_looped_on(a, b, c, found):
    """Was an endless loop: a = 1 puts every drawn edge in one cell, c = d = 0 every edge in row 0."""
    with pytest.raises(ArgumentError, match=f"R-MAT with a={a:g}, b={b:g}, c={c:g} reaches too few distinct "
                                            f"edges on 1,000 vertices: {found} found"):
        generators.rmat_graph(1_000, 3_000, a=a, b=b, c=c)
    g = generators.rmat_graph(1_000, 3_000, a=0.1, b=0.2, c=0.6)      # a + b + c = 0.9000000000000001 < 1
    assert g.num_edges == 3_000


@pytest.mark.parametrize("call, arithmetic", [
    (lambda: generators.random_graph(10**9), "30 bytes per vertex + 40 per edge"),
    (lambda: generators.random_graph(100, duplicates=10**12), "30 bytes per vertex + 40 per edge"),
    (lambda: generators.rmat_graph(10**6, 2**38), "48 bytes per vertex + 64 per edge"),
    (lambda: generators.web_graph(10**9, 10**10), "96 bytes per vertex + 72 per edge"),
    (lambda: generators.complete(10**6), "1,000,000**2 bytes of mask"),
])
def test_generators_refuse_what_the_host_cannot_hold_before_allocating(call, arithmetic):
    """Were NumPy MemoryErrors from deep inside (or the process killed for memory)."""
    with pytest.raises(GraphTooLargeError, match=f"needs about .* of host memory \\({re.escape(arithmetic)}"):
        call()


def test_seeds_may_be_generators_or_none_everywhere():
    """adversarial_graph did seed + 1_000_003: a Generator or None raised a bare TypeError."""
    for make in (lambda s: generators.random_graph(300, seed=s),
                 lambda s: generators.adversarial_graph(300, s),
                 lambda s: generators.rmat_graph(300, 1_200, seed=s)):
        a, b = make(np.random.default_rng(8)), make(np.random.default_rng(8))
        assert np.array_equal(a.in_sources, b.in_sources) and make(None).num_vertices == 300


BAD_SEEDS = [(-1, "seed must be at least 0, got -1"), (1.5, r"seed must be an integer, got 1\.5"),
             (np.float64(2.0), r"seed must be an integer, got \S*2\.0\S* \(float64\)"),   # NumPy 1's repr or 2's
             (True, "seed must be an integer"),
             ("3", "seed must be an integer, got '3'"), (MAX_SEED + 1, f"seed must be at most {MAX_SEED}"),
             (np.int64(2**63 - 1), f"seed must be at most {MAX_SEED} .*got {2**63 - 1}"),   # wrapped when offset
             (2**64, f"seed must be at most {MAX_SEED}")]


@pytest.mark.parametrize("seed, message", BAD_SEEDS)
@pytest.mark.parametrize("make", [
    lambda s: generators.random_graph(50, seed=s), lambda s: generators.adversarial_graph(50, s),
    lambda s: generators.rmat_graph(50, 200, seed=s), lambda s: generators.web_graph(50, 200, seed=s),
    lambda s: device_generators.rmat_device(50, 200, seed=s), lambda s: device_generators.web_like_device(2, seed=s),
])
def test_bad_seeds_are_refused_before_any_arithmetic_naming_the_seed(make, seed, message):
    """adversarial_graph(seed=np.int64(2**63 - 1)) added 1_000_003 in int64, wrapped around and met NumPy's
    'expected non-negative integer'; the GPU generators are checked before they look for a GPU."""
    with pytest.raises(ArgumentError, match=message):
        make(seed)


def test_the_largest_seed_works_and_seeds_keep_their_graphs():
    assert MAX_SEED + SEED_OFFSET == 2**63 - 1             # the hub's stream seed still fits int64
    for seed in (MAX_SEED, np.int64(MAX_SEED), np.uint64(MAX_SEED)):
        g = generators.adversarial_graph(200, seed, hub_in_links=50)
        assert g.num_vertices == 200 and int(g.in_degree.max()) >= 50
    assert generators.random_graph(200, seed=MAX_SEED).num_vertices == 200
    assert generators.rmat_graph(200, 800, seed=MAX_SEED).num_edges == 800
    # a NumPy integer seed gives the same graph as the Python int, and the hub of seed 7 is where it was
    a, b = generators.adversarial_graph(300, np.int64(7)), generators.adversarial_graph(300, 7)
    assert np.array_equal(a.in_sources, b.in_sources) and a.name == b.name
    hub = int(np.random.default_rng(7 + 1_000_003).integers(0, 300))
    assert int(np.argmax(a.in_degree)) == hub


def test_the_hub_control_keeps_the_original_ids():
    g = generators.adversarial_graph(3_000, seed=1, hub_in_links=2_000)
    from helpers.core.graph import from_edges
    src, dst = g.edges()
    named = from_edges(src, dst, g.num_vertices, original_ids=np.arange(g.num_vertices) * 7 + 3)
    control = generators.without_hub_in_links(named)
    assert np.array_equal(control.original_ids, named.original_ids) and control.in_degree.max() <= 1_000
