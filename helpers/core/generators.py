"""Graphs the course makes itself: named tiny graphs, seeded random and adversarial graphs, R-MAT and the
web-like generator.

``web_graph`` (web-Google's size, degree maxima and dangling share, with a crawl's id locality) is the
offline stand-in for web-Google (``datasets.standin``). R-MAT stands in for the other datasets and is the
workload of the scaling lecture; its default has web-Google's size.
"""
from __future__ import annotations

import numpy as np

from helpers.core.graph import (MAX_VERTICES, SEED_OFFSET, ArgumentError, Graph, build_bytes,
                                check_host_memory, check_integer, check_real, check_seed, from_edges,
                                sorted_unique)
from helpers.core.progress import bar

WEB_GOOGLE_VERTICES = 875_713
WEB_GOOGLE_EDGES = 5_105_039


# --- argument checks: before any allocation or loop a parameter decides -----------------------------

# Peak host bytes of generating, measured with tracemalloc (random_graph at 2*10**5 vertices and 8*10**5
# edges: 35 per edge; rmat_graph at 2*10**5 and 1.6*10**6: 60; web_graph at 10**5 and 6*10**5: 66),
# building included, rounded up.
GENERATE_BYTES = {"a random": (30, 40), "an R-MAT": (48, 64), "a web-like": (96, 72)}   # per vertex, per edge


def check_vertices(n, name: str = "n", minimum: int = 1) -> int:
    """A vertex count: an integer from ``minimum`` up to the int32 ids' limit."""
    n = check_integer(n, name, minimum=minimum)
    if n > MAX_VERTICES:
        raise ArgumentError(f"{name}={n:,} vertices do not fit the course's int32 vertex ids")
    return n


def check_generated_size(kind: str, n: int, m: int) -> None:
    """GraphTooLargeError, with the arithmetic, where generating n vertices and m edges cannot fit."""
    per_vertex, per_edge = GENERATE_BYTES[kind]
    check_host_memory(per_vertex * n + per_edge * m, f"generating {kind} graph ({n:,} vertices, {m:,} edges)",
                      f"{per_vertex} bytes per vertex + {per_edge} per edge",
                      "ask for fewer vertices or edges")


# --- named tiny graphs ----------------------------------------------------------------------------


def single_vertex() -> Graph:
    return from_edges([], [], 1, name="single vertex")


def chain(n: int = 5) -> Graph:
    """0 -> 1 -> ... -> n-1; the last vertex is dangling."""
    n = check_vertices(n)
    return from_edges(np.arange(n - 1), np.arange(1, n), n, name=f"chain of {n}")


def cycle(n: int = 5) -> Graph:
    """0 -> 1 -> ... -> n-1 -> 0; every rank is 1/n."""
    n = check_vertices(n)
    return from_edges(np.arange(n), (np.arange(n) + 1) % n, n, name=f"cycle of {n}")


def in_star(n: int = 6) -> Graph:
    """Every leaf links to the centre 0, which links nowhere (dangling)."""
    n = check_vertices(n)
    return from_edges(np.arange(1, n), np.zeros(n - 1, dtype=int), n, name=f"in-star of {n}")


def in_degree_ladder(top: int = 64) -> Graph:
    """Every in-degree from 1 to ``top`` once: vertex k (k < top) has k + 1 in-links, from vertices
    ``top``, ``top + 1``, ...; a wrong answer that starts at some in-degree shows where."""
    top = check_integer(top, "top", minimum=1)
    check_vertices(2 * top, "2 * top")
    check_host_memory(build_bytes(2 * top, top * (top + 1) // 2) + 16 * top * (top + 1),
                      f"in_degree_ladder({top:,})", "building and the int64 ids", "use a smaller top")
    targets = np.repeat(np.arange(top), np.arange(1, top + 1))
    sources = top + np.concatenate([np.arange(k + 1) for k in range(top)])
    return from_edges(sources, targets, 2 * top, name=f"in-degrees 1 to {top}")


def out_star(n: int = 6) -> Graph:
    """The centre 0 links to every leaf; every leaf is dangling."""
    n = check_vertices(n)
    return from_edges(np.zeros(n - 1, dtype=int), np.arange(1, n), n, name=f"out-star of {n}")


def complete(n: int = 5) -> Graph:
    """Every vertex links to every other one (no self-loops)."""
    n = check_vertices(n)
    check_host_memory(n * n + build_bytes(n, n * (n - 1)) + 16 * n * (n - 1), f"complete({n:,})",
                      f"{n:,}**2 bytes of mask, building {n * (n - 1):,} edges and their int64 ids",
                      "use fewer vertices")
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
    n = check_vertices(n)
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
    n, seed = check_vertices(n), check_seed(seed)
    avg_degree = check_real(avg_degree, "avg_degree", low=0.0)
    dangling_fraction = check_real(dangling_fraction, "dangling_fraction", low=0.0, high=1.0)
    isolated_fraction = check_real(isolated_fraction, "isolated_fraction", low=0.0,
                                   high=1.0 - dangling_fraction)
    self_loops = check_integer(self_loops, "self_loops", minimum=0)
    duplicates = check_integer(duplicates, "duplicates", minimum=0)
    m = round(n * avg_degree)
    check_generated_size("a random", n, m + self_loops + duplicates)
    rng = np.random.default_rng(seed)
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
    hub_in_links, seed = check_integer(hub_in_links, "hub_in_links", minimum=0), check_seed(seed)
    base = random_graph(n, avg_degree, seed, name=name)
    # an integer seed (a Python int, at most MAX_SEED) gives the hub its own stream; a Generator (or None)
    # goes on drawing from itself
    rng = np.random.default_rng(seed + SEED_OFFSET if isinstance(seed, int) else seed)
    hub = int(rng.integers(0, n))
    others = np.delete(np.arange(n), hub)
    fans = rng.choice(others, size=min(hub_in_links, others.size), replace=False)
    src, dst = base.edges()
    src = np.concatenate([src, fans])
    dst = np.concatenate([dst, np.full(fans.size, hub)])
    return from_edges(src, dst, n, name=name or f"adversarial(n={n:,}, seed={seed}, hub: vertex {hub:,})")


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
               c: float = 0.2, name: str | None = None, progress: bool = False) -> Graph:
    """Power-law R-MAT (Kronecker) graph with exactly ``num_edges`` distinct edges and no isolated vertex.

    Each edge picks one quadrant of the adjacency matrix per level with probabilities a, b, c, 1-a-b-c.
    A share ``dangling_share`` of the vertices never links out; every other vertex links out at least
    once and every dangling vertex is linked to at least once, so that, as in a crawled edge list, every
    vertex occurs in some edge. Sources and targets are relabelled by two independent random
    permutations, so in-hubs and out-hubs are different pages, as on the web. ``progress`` shows a text bar.
    """

    a, b, c = (check_real(value, key, low=0.0, high=1.0) for key, value in (("a", a), ("b", b), ("c", c)))
    if a + b + c > 1.0 + 1e-9:
        raise ArgumentError(f"R-MAT probabilities must be non-negative and sum to at most 1 (the fourth, d, "
                            f"is 1 - a - b - c): {a}, {b}, {c}")
    n, seed = check_vertices(num_vertices, "num_vertices"), check_seed(seed)
    num_edges = check_integer(num_edges, "num_edges", minimum=0)
    dangling_share = check_real(dangling_share, "dangling_share", low=0.0, high=1.0)
    linking = n - int(round(dangling_share * n))
    if not 0 < linking <= n or num_edges < n or num_edges > linking * n:
        raise ArgumentError(f"{num_edges:,} distinct edges cannot give {linking:,} of {n:,} vertices "
                            f"out-links and every vertex an edge")
    check_generated_size("an R-MAT", n, num_edges)
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
    stalled = 0                   # rounds in a row that found almost no new edge: skew that cannot reach m
    with bar(num_edges, "generating an R-MAT graph", unit="edge", enabled=progress) as edges:
        edges.update(base.size)
        while base.size + extra.size < num_edges:
            missing = num_edges - base.size - extra.size
            rows, cols = _rmat_ids(rng, int(missing * 1.2) + 1024, scale, a, b, c)
            ok = (rows < linking) & (cols < n)
            before = extra.size
            extra = sorted_unique(np.concatenate([extra, rows[ok] * n + cols[ok]]))
            extra = extra[~np.isin(extra, base, assume_unique=True, kind="sort")]
            edges.update(min(extra.size, num_edges - base.size) - min(before, num_edges - base.size))
            stalled = stalled + 1 if extra.size - before < max(1, missing // 100) else 0
            if stalled == 5:
                raise ArgumentError(f"R-MAT with a={a:g}, b={b:g}, c={c:g} reaches too few distinct edges on "
                                    f"{n:,} vertices: {base.size + extra.size:,} of {num_edges:,} found and "
                                    f"almost none new in 5 rounds; ask for fewer edges or spread the "
                                    f"probabilities more evenly")
    extra = rng.choice(extra, size=num_edges - base.size, replace=False)
    keys = np.concatenate([base, extra])
    return from_edges(source_label[keys // n], target_label[keys % n], n,
                      name=name or f"R-MAT(n={n:,}, m={num_edges:,}, seed={seed})")


# --- a web-like stand-in: web-Google's published shape, crawl-order ids -----------------------------

WEB_GOOGLE_MAX_OUT_DEGREE = 456     # published statistics of SNAP's web-Google
WEB_GOOGLE_MAX_IN_DEGREE = 6_326


def _power_law_degrees(rng, count: int, total: int, cap: int, shift: float = 4.0) -> np.ndarray:
    """``count`` degrees in 1..cap from a shifted discrete power law, p(k) ~ (k + shift)^-alpha, whose exponent
    is chosen so that they add up to about ``total``; then adjusted to add up to exactly ``total``, with one
    degree equal to ``cap``. The shift keeps most degrees a few links wide instead of one."""
    values = np.arange(1, cap + 1, dtype=np.float64)
    lo, hi = 1.01, 6.0
    for _ in range(60):                                   # bisection on the exponent for the mean
        alpha = (lo + hi) / 2
        weights = (values + shift) ** -alpha
        mean = (values * weights).sum() / weights.sum()
        lo, hi = (lo, alpha) if mean < total / count else (alpha, hi)
    weights = (values + shift) ** -alpha
    degrees = rng.choice(values.astype(np.int64), size=count, p=weights / weights.sum())
    degrees[int(np.argmax(degrees))] = cap
    while (excess := int(degrees.sum()) - total) != 0:    # nudge random degrees, staying within 1..cap
        room = np.flatnonzero(degrees > 1) if excess > 0 else np.flatnonzero(degrees < cap)
        room = room[degrees[room] != cap] if excess > 0 else room
        pick = rng.choice(room, size=min(abs(excess), room.size), replace=False)
        degrees[pick] -= np.sign(excess)
    return degrees


def web_graph(num_vertices: int = WEB_GOOGLE_VERTICES, num_edges: int = WEB_GOOGLE_EDGES, seed: int = 0, *,
              max_out_degree: int = WEB_GOOGLE_MAX_OUT_DEGREE, max_in_degree: int = WEB_GOOGLE_MAX_IN_DEGREE,
              dangling_share: float = WEB_GOOGLE_DANGLING_SHARE, local_share: float = 0.75,
              name: str | None = None, progress: bool = False) -> Graph:
    """A web-like graph with web-Google's published shape by default: exactly ``num_edges`` distinct edges,
    no self-loop, no isolated vertex, a share ``dangling_share`` of vertices without out-links, out-degrees
    from a power law capped at ``max_out_degree`` (reached), in-degrees heavy-tailed with the maximum
    ``max_in_degree`` reached by one page, and ids in crawl order: pages come in sites of consecutive ids,
    and a share ``local_share`` of links stays inside the source's site (to its first page, or to a page
    near the source), the rest going to popular pages anywhere. That locality, not any typed number, is what
    makes this stand-in behave like a crawl for caches; lecture 30 prints its statistics beside the real ones.
    ``progress`` shows a text bar over the five steps (seconds each at web-Google's size).
    """

    n, seed = check_vertices(num_vertices, "num_vertices"), check_seed(seed)
    m = check_integer(num_edges, "num_edges", minimum=0)
    max_out_degree = check_integer(max_out_degree, "max_out_degree", minimum=1)
    max_in_degree = check_integer(max_in_degree, "max_in_degree", minimum=1)
    dangling_share = check_real(dangling_share, "dangling_share", low=0.0, high=1.0)
    local_share = check_real(local_share, "local_share", low=0.0, high=1.0)
    dangling_count = int(round(dangling_share * n))
    linking = n - dangling_count
    if not 0 < linking or m < linking or m > linking * max_out_degree:
        raise ArgumentError(f"{m:,} edges cannot give {linking:,} linking vertices between 1 and "
                            f"{max_out_degree} out-links each")
    if max_out_degree >= n:
        raise ArgumentError(f"max_out_degree={max_out_degree:,} must be below the {n:,} vertices (distinct "
                            f"links, no self-loop)")
    if max_in_degree >= linking:
        raise ArgumentError(f"max_in_degree={max_in_degree:,} must be below the {linking:,} vertices that "
                            f"link out ({n:,} less a dangling share of {dangling_share:g})")
    check_generated_size("a web-like", n, m)
    steps = bar(5, "generating a web-like graph", unit="step", enabled=progress)
    rng = np.random.default_rng(seed)
    # sites: consecutive ids, sizes heavy-tailed (a crawl visits a site's pages together)
    sizes = np.minimum(np.ceil(rng.pareto(1.2, n // 4 + 16) * 8).astype(np.int64) + 1, 5_000)
    sizes = sizes[: int(np.searchsorted(np.cumsum(sizes), n)) + 1]
    sizes[-1] -= int(sizes.sum()) - n
    site_start = np.repeat(np.concatenate([[0], np.cumsum(sizes)[:-1]]), sizes)
    site_size = np.repeat(sizes, sizes)
    is_linking = np.zeros(n, dtype=bool)
    is_linking[rng.choice(n, size=linking, replace=False)] = True
    sources_of = np.flatnonzero(is_linking)
    out_degree = np.zeros(n, dtype=np.int64)
    out_degree[sources_of] = _power_law_degrees(rng, linking, m, max_out_degree)
    steps.update(1)
    popularity = np.minimum(rng.pareto(1.1, n) + 1.0, 400.0)          # heavy-tailed, capped: no second hub
    cumulative = np.cumsum(popularity / popularity.sum())

    def targets_for(sources: np.ndarray, local_share: float) -> np.ndarray:
        local = rng.random(sources.size) < local_share
        home = rng.random(sources.size) < 0.25
        offset = np.rint(rng.laplace(0.0, 4.0 + site_size[sources] / 8.0)).astype(np.int64)
        offset[offset == 0] = 1
        near = np.clip(sources + offset, site_start[sources], site_start[sources] + site_size[sources] - 1)
        chosen = np.where(home, site_start[sources], near)
        far = np.minimum(np.searchsorted(cumulative, rng.random(sources.size)), n - 1)
        return np.where(local, chosen, far)

    hub = int(rng.choice(np.flatnonzero(site_start == np.arange(n))))            # a site's first page
    keys = np.empty(0, dtype=np.int64)
    wanted = out_degree.copy()
    for attempt in range(40):                             # draw until each source has its degree, distinct
        have = np.bincount(keys // n, minlength=n) if keys.size else np.zeros(n, dtype=np.int64)
        missing = wanted - have
        if not missing.any():
            break
        sources = np.repeat(np.arange(n), np.maximum(missing, 0))
        # the first draw follows the crawl's locality; a small site cannot give a wide page enough
        # distinct neighbours, so what is still missing afterwards links to popular pages anywhere
        targets = targets_for(sources, local_share if attempt == 0 else 0.0)
        ok = (targets != sources) & (targets != hub)
        keys = sorted_unique(np.concatenate([keys, sources[ok] * n + targets[ok]]))
        counts = np.bincount(keys // n, minlength=n)
        over = np.flatnonzero(counts > wanted)            # drop extra distinct links beyond the degree
        if over.size:
            rank_in_row = np.arange(keys.size) - np.repeat(np.concatenate([[0], np.cumsum(counts)[:-1]]), counts)
            keys = keys[rank_in_row < wanted[keys // n]]
        # no page but the hub may reach the hub's in-degree: keep a random max_in_degree - 1 of the in-links
        # of a page that has more, and send no more links there (what is missing is drawn again)
        in_degree = np.bincount(keys % n, minlength=n)
        full = np.flatnonzero(in_degree >= max_in_degree - 1)
        if full.size:
            by_target = keys[np.argsort(keys % n * (keys.size + 1) + rng.permutation(keys.size), kind="stable")]
            counts_in = np.bincount(by_target % n, minlength=n)
            rank_in_column = np.arange(keys.size) - np.repeat(np.concatenate([[0], np.cumsum(counts_in)[:-1]]), counts_in)
            keys = np.sort(by_target[rank_in_column < max_in_degree - 1])
            popularity[full] = 0.0
            cumulative = np.cumsum(popularity / popularity.sum())
    steps.update(1)
    # every dangling vertex is linked to at least once: it must appear in the edge list
    in_degree = np.bincount(keys % n, minlength=n)
    lonely = np.flatnonzero((in_degree == 0) & ~is_linking & (np.arange(n) != hub))
    # the hub gets exactly max_in_degree distinct in-links
    hub_sources = rng.choice(sources_of[sources_of != hub], size=max_in_degree, replace=False)
    extra_sources = np.concatenate([hub_sources, rng.choice(sources_of, size=lonely.size)])
    extra_targets = np.concatenate([np.full(hub_sources.size, hub), lonely])
    keys = sorted_unique(np.concatenate([keys, extra_sources * n + extra_targets]))
    # back to exactly m edges: drop links that are neither a source's last link, nor a target's last
    # in-link, nor a link into the hub, nor from the vertex with the largest out-degree; at most one per
    # source and per target at a time, so that no vertex loses its last link
    steps.update(1)
    widest = int(np.argmax(out_degree))
    while (surplus := keys.size - m) > 0:
        out_now, in_now = np.bincount(keys // n, minlength=n), np.bincount(keys % n, minlength=n)
        candidates = np.flatnonzero((out_now[keys // n] > 1) & (in_now[keys % n] > 1) & (keys % n != hub)
                                    & (keys // n != widest))
        if candidates.size == 0:
            raise RuntimeError("the web-like generator cannot reach the edge count; try another seed")
        candidates = rng.permutation(candidates)
        candidates = candidates[np.unique(keys[candidates] // n, return_index=True)[1]]
        candidates = candidates[np.unique(keys[candidates] % n, return_index=True)[1]]
        keys = np.delete(keys, candidates[:surplus])
    if keys.size < m:
        raise RuntimeError("the web-like generator fell short of the edge count; try another seed")
    steps.update(1)
    graph = from_edges(keys // n, keys % n, n, name=name or f"web-like graph (n={n:,}, m={m:,}, seed={seed})")
    steps.update(1)
    steps.close()
    in_degree = graph.in_degree
    problems = [what for what, bad in (
        ("edge count", graph.num_edges != m),
        ("maximum in-degree", int(in_degree.max()) != max_in_degree or int(np.sort(in_degree)[-2]) >= max_in_degree),
        ("maximum out-degree", int(graph.out_degree.max()) != max_out_degree),
        ("dangling count", int(graph.dangling.sum()) != dangling_count),
        ("isolated vertices", bool(((in_degree == 0) & graph.dangling).any())),
        ("self-loops", bool((keys // n == keys % n).any()))) if bad]
    if problems:
        raise RuntimeError(f"the web-like generator missed its {', '.join(problems)}; try another seed")
    return graph


# --- R-MAT on the GPU, for graphs too big to build on the CPU in a lecture ---------------------------


def without_hub_in_links(graph: Graph, above: int = 1_000) -> Graph:
    """The same graph without the in-links of every vertex that has more than ``above`` of them (the control
    for "the hub is what is slow": everything else, sizes and order included, stays as it was)."""
    if not isinstance(graph, Graph):
        raise ArgumentError(f"expected a helpers.core.graph.Graph, got {type(graph).__name__}")
    above = check_integer(above, "above", minimum=0)
    hubs = np.flatnonzero(graph.in_degree > above)
    targets = np.repeat(np.arange(graph.num_vertices), graph.in_degree)
    keep = ~np.isin(targets, hubs)
    return from_edges(graph.in_sources[keep], targets[keep], graph.num_vertices,
                      original_ids=graph.original_ids,
                      name=f"{graph.name} without the in-links of its {hubs.size} vertices above {above:,}")
