"""Fresh graphs with everything that breaks kernels, for verify and the tests."""
import numpy as np

from helpers.core.arguments import check_seed
from helpers.core.generators import (adversarial_graph, all_dangling, in_star, random_graph, rmat_graph,
                                     self_loop, single_vertex)
from helpers.core.graph import Graph


def verification_graphs(seed: int) -> list[Graph]:
    """One vertex, only dangling vertices, self-loops, a long in-link list, random graphs of odd sizes
    (dangling, isolated vertices, duplicates), a hub of at least 12,000 in-links, and a power-law graph."""
    rng = np.random.default_rng(check_seed(seed))
    draw = lambda: int(rng.integers(2**31))                      # noqa: E731
    return [single_vertex(), all_dangling(3), self_loop(), in_star(300),
            random_graph(1_000 + 2 * int(rng.integers(1, 100)) + 1, seed=draw()),
            adversarial_graph(20_001 + 2 * int(rng.integers(0, 50)), seed=draw(), hub_in_links=12_000),
            rmat_graph(60_000 + int(rng.integers(1, 255)), 400_000, seed=draw())]
