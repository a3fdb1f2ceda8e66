"""Graphs the course makes itself: named tiny graphs, seeded random and adversarial graphs, and R-MAT.

The R-MAT default has web-Google's size (875,713 vertices, 5,105,039 edges): it is the offline stand-in
for the real graph and the workload of the scaling lecture.
"""
from __future__ import annotations

import numpy as np

from .graph import Graph, from_edges, sorted_unique

WEB_GOOGLE_VERTICES = 875_713
WEB_GOOGLE_EDGES = 5_105_039


# --- named tiny graphs ----------------------------------------------------------------------------

def single_vertex() -> Graph:
    return from_edges([], [], 1, name="single vertex")


def chain(n: int = 5) -> Graph:
    """0 -> 1 -> ... -> n-1; the last vertex is dangling."""
    return from_edges(np.arange(n - 1), np.arange(1, n), n, name=f"chain of {n}")


def cycle(n: int = 5) -> Graph:
    """0 -> 1 -> ... -> n-1 -> 0; every rank is 1/n."""
    return from_edges(np.arange(n), (np.arange(n) + 1) % n, n, name=f"cycle of {n}")


def in_star(n: int = 6) -> Graph:
    """Every leaf links to the centre 0, which links nowhere (dangling)."""
    return from_edges(np.arange(1, n), np.zeros(n - 1, dtype=int), n, name=f"in-star of {n}")


def out_star(n: int = 6) -> Graph:
    """The centre 0 links to every leaf; every leaf is dangling."""
    return from_edges(np.zeros(n - 1, dtype=int), np.arange(1, n), n, name=f"out-star of {n}")


def complete(n: int = 5) -> Graph:
    """Every vertex links to every other one (no self-loops)."""
    src, dst = np.nonzero(~np.eye(n, dtype=bool))
    return from_edges(src, dst, n, name=f"complete graph on {n}")


def two_components() -> Graph:
    """A 3-cycle (0, 1, 2) and, apart from it, a chain 3 -> 4 -> 5."""
    return from_edges([0, 1, 2, 3, 4], [1, 2, 0, 4, 5], 6, name="two components")


def self_loop() -> Graph:
    """Vertex 0 links to itself and to 1; 1 links back to 0; 2's only link is to itself."""
    return from_edges([0, 0, 1, 2], [0, 1, 0, 2], 3, name="self-loops")


def all_dangling(n: int = 4) -> Graph:
    """n vertices and no edges: every rank is 1/n."""
    return from_edges([], [], n, name=f"{n} vertices, no edges")


TINY_GRAPHS = {
    "single_vertex": single_vertex, "chain": chain, "cycle": cycle, "in_star": in_star,
    "out_star": out_star, "complete": complete, "two_components": two_components,
    "self_loop": self_loop, "all_dangling": all_dangling,
}


def tiny_graphs() -> dict[str, Graph]:
    """Every named tiny graph, built with its default size."""
    return {name: make() for name, make in TINY_GRAPHS.items()}


# --- seeded random graphs -------------------------------------------------------------------------

def random_graph(n: int, avg_degree: float = 4.0, seed: int = 0, *, dangling_fraction: float = 0.2,
                 isolated_fraction: float = 0.05, self_loops: int = 5, duplicates: int = 20,
                 name: str | None = None) -> Graph:
    """Uniform random directed graph with chosen dangling and isolated vertices.

    ``self_loops`` and ``duplicates`` extra edges are added so that the edge policy (duplicates merged,
    self-loops kept) is exercised; dangling and isolated shares are approximate for tiny n.
    """
    rng = np.random.default_rng(seed)
    m = int(round(n * avg_degree))
    src = rng.integers(0, n, m)
    dst = rng.integers(0, n, m)
    role = rng.random(n)
    isolated = role < isolated_fraction
    dangling = (role >= isolated_fraction) & (role < isolated_fraction + dangling_fraction)
    keep = ~(isolated[src] | dangling[src] | isolated[dst])
    src, dst = src[keep], dst[keep]
    linking = np.flatnonzero(~(isolated | dangling))
    if linking.size and self_loops:
        loops = rng.choice(linking, size=min(self_loops, linking.size), replace=False)
        src, dst = np.concatenate([src, loops]), np.concatenate([dst, loops])
    if src.size and duplicates:
        again = rng.integers(0, src.size, duplicates)
        src, dst = np.concatenate([src, src[again]]), np.concatenate([dst, dst[again]])
    return from_edges(src, dst, n, name=name or f"random(n={n}, seed={seed})")


def adversarial_graph(n: int, seed: int = 0, *, hub_in_links: int = 12_000, avg_degree: float = 4.0,
                      name: str | None = None) -> Graph:
    """A random graph with everything that breaks kernels: dangling and isolated vertices, self-loops,
    duplicate edges, and a hub with ``hub_in_links`` distinct in-links (capped at n - 1)."""
    base = random_graph(n, avg_degree, seed, name=name)
    rng = np.random.default_rng(seed + 1_000_003)
    hub = int(rng.integers(0, n))
    others = np.delete(np.arange(n), hub)
    fans = rng.choice(others, size=min(hub_in_links, others.size), replace=False)
    src, dst = base.edges()
    src = np.concatenate([src, fans])
    dst = np.concatenate([dst, np.full(fans.size, hub)])
    return from_edges(src, dst, n, name=name or f"adversarial(n={n}, seed={seed}, hub={hub})")


WEB_GOOGLE_DANGLING_SHARE = 0.156  # pages with no out-links in web-Google; lecture 30 measures it


def _rmat_ids(rng, count: int, scale: int, a: float, b: float, c: float) -> tuple[np.ndarray, np.ndarray]:
    """``count`` R-MAT (row, column) pairs in [0, 2**scale): one quadrant choice per level."""
    rows = np.zeros(count, dtype=np.int64)
    cols = np.zeros(count, dtype=np.int64)
    for _ in range(scale):
        r = rng.random(count, dtype=np.float32)
        np.left_shift(rows, 1, out=rows)
        np.left_shift(cols, 1, out=cols)
        rows |= r >= a + b                                  # quadrants c and d
        cols |= (r >= a) ^ (r >= a + b) ^ (r >= a + b + c)  # quadrants b and d
    return rows, cols


def rmat_graph(num_vertices: int = WEB_GOOGLE_VERTICES, num_edges: int = WEB_GOOGLE_EDGES, seed: int = 0,
               *, dangling_share: float = WEB_GOOGLE_DANGLING_SHARE, a: float = 0.5, b: float = 0.2,
               c: float = 0.2, name: str | None = None) -> Graph:
    """Power-law R-MAT (Kronecker) graph with exactly ``num_edges`` distinct edges and no isolated vertex.

    Each edge picks one quadrant of the adjacency matrix per level with probabilities a, b, c, 1-a-b-c.
    A share ``dangling_share`` of the vertices never links out; every other vertex links out at least
    once and every dangling vertex is linked to at least once, so that, as in a crawled edge list, every
    vertex occurs in some edge. Sources and targets are relabelled by two independent random
    permutations, so in-hubs and out-hubs are different pages, as on the web.
    """
    if min(a, b, c, 1.0 - a - b - c) < 0:
        raise ValueError(f"R-MAT probabilities must be non-negative and sum to at most 1: {a}, {b}, {c}")
    n = int(num_vertices)
    linking = n - int(round(dangling_share * n))
    if not 0 < linking <= n or num_edges < n or num_edges > linking * n:
        raise ValueError(f"{num_edges:,} distinct edges cannot give {linking:,} of {n:,} vertices out-links "
                         f"and every vertex an edge")
    rng = np.random.default_rng(seed)
    scale = max(1, int(np.ceil(np.log2(n))))
    # Source ids 0..linking-1 and target ids 0..n-1 are R-MAT coordinates; vertex names come from labels.
    source_label, target_label = rng.permutation(n), rng.permutation(n)
    target_of = np.empty(n, dtype=np.int64)
    target_of[target_label] = np.arange(n)               # vertex -> its target coordinate
    _, first = _rmat_ids(rng, 2 * linking, scale, a, b, c)
    first = first[first < n][:linking]
    if first.size < linking:
        first = np.concatenate([first, rng.integers(0, n, linking - first.size)])
    dangling_vertices = source_label[linking:]
    base = sorted_unique(np.concatenate([
        np.arange(linking, dtype=np.int64) * n + first,                              # one out-link each
        rng.integers(0, linking, dangling_vertices.size) * n + target_of[dangling_vertices],  # one in-link each
    ]))
    extra = np.empty(0, dtype=np.int64)
    while base.size + extra.size < num_edges:
        rows, cols = _rmat_ids(rng, int((num_edges - base.size - extra.size) * 1.2) + 1024, scale, a, b, c)
        ok = (rows < linking) & (cols < n)
        extra = sorted_unique(np.concatenate([extra, rows[ok] * n + cols[ok]]))
        extra = extra[~np.isin(extra, base, assume_unique=True, kind="sort")]
    extra = rng.choice(extra, size=num_edges - base.size, replace=False)
    keys = np.concatenate([base, extra])
    return from_edges(source_label[keys // n], target_label[keys % n], n,
                      name=name or f"R-MAT(n={n:,}, m={num_edges:,}, seed={seed})")
