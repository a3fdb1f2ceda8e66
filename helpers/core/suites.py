"""Fresh graphs with everything that breaks kernels, for verify and the tests."""

import numpy as np

from helpers.core import generators
from helpers.core.arguments import check_seed
from helpers.core.graph import Graph


def verification_graphs(seed: int) -> list[Graph]:
    """Fresh graphs with everything that breaks kernels: one vertex, only dangling vertices, self-loops, a long
    in-link list, random graphs whose sizes are not multiples of the block size with dangling and isolated
    vertices and merged duplicates, a hub with at least 12,000 in-links, and a power-law graph."""
    rng = np.random.default_rng(check_seed(seed))
    draw = lambda: int(rng.integers(2**31))                      # noqa: E731
    return [generators.single_vertex(), generators.all_dangling(3), generators.self_loop(), generators.in_star(300),
            generators.random_graph(1_000 + 2 * int(rng.integers(1, 100)) + 1, seed=draw()),
            generators.adversarial_graph(20_001 + 2 * int(rng.integers(0, 50)), seed=draw(), hub_in_links=12_000),
            generators.rmat_graph(60_000 + int(rng.integers(1, 255)), 400_000, seed=draw())]
