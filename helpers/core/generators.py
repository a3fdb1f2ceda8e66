"""Graphs the course makes itself: named tiny graphs, seeded random and adversarial graphs, R-MAT (the
scaling lecture's workload) and the web-like generator (the offline stand-in for web-Google). Both large
generators default to web-Google's size.
"""
from __future__ import annotations

import numpy as np

from helpers.core.arguments import (SEED_OFFSET, ArgumentError, check_integer, check_real, check_seed,
                                    check_vertices)
from helpers.core.graph import Graph, build_bytes, check_graph, check_host_memory, from_edges, sorted_unique
from helpers.core.progress import bar

WEB_GOOGLE_VERTICES = 875_713     # published statistics of SNAP's web-Google
WEB_GOOGLE_EDGES = 5_105_039
WEB_GOOGLE_MAX_OUT_DEGREE = 456
WEB_GOOGLE_MAX_IN_DEGREE = 6_326
WEB_GOOGLE_DANGLING_SHARE = 0.156  # pages with no out-links; lecture 30 measures it

# Peak host bytes of generating, building included, per vertex and per edge: measured with tracemalloc
# (random_graph: 35 per edge, rmat_graph: 60, web_graph: 66) and rounded up.
GENERATE_BYTES = {"a random": (30, 40), "an R-MAT": (48, 64), "a web-like": (96, 72)}


def check_generated_size(kind: str, n: int, m: int) -> None:
    """GraphTooLargeError, with the arithmetic, where generating n vertices and m edges cannot fit."""
    per_vertex, per_edge = GENERATE_BYTES[kind]
    check_host_memory(per_vertex * n + per_edge * m, f"generating {kind} graph ({n:,} vertices, {m:,} edges)",
                      f"{per_vertex} bytes per vertex + {per_edge} per edge",
                      "ask for fewer vertices or edges")


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
    """Every in-degree from 1 to ``top`` once: vertex k < top has k + 1 in-links, from top, top + 1, ..."""
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


def random_graph(n: int, avg_degree: float = 4.0, seed: int = 0, *, dangling_fraction: float = 0.2,
                 isolated_fraction: float = 0.05, self_loops: int = 5, duplicates: int = 20,
                 name: str | None = None) -> Graph:
    """Uniform random directed graph with about the chosen shares of dangling and isolated vertices, plus
    ``self_loops`` and ``duplicates`` extra edges to exercise the edge policy."""
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
    # an integer seed gives the hub its own stream; a Generator (or None) goes on drawing from itself
    rng = np.random.default_rng(seed + SEED_OFFSET if isinstance(seed, int) else seed)
    hub = int(rng.integers(0, n))
    others = np.delete(np.arange(n), hub)
    fans = rng.choice(others, size=min(hub_in_links, others.size), replace=False)
    src, dst = base.edges()
    src, dst = np.concatenate([src, fans]), np.concatenate([dst, np.full(fans.size, hub)])
    return from_edges(src, dst, n, name=name or f"adversarial(n={n:,}, seed={seed}, hub: vertex {hub:,})")


def _rmat_ids(rng, count: int, scale: int, abc) -> tuple[np.ndarray, np.ndarray]:
    """``count`` R-MAT (row, column) pairs in [0, 2**scale): one quadrant choice per level."""
    a, b, c = abc
    rows, cols = np.zeros(count, dtype=np.int64), np.zeros(count, dtype=np.int64)
    for _ in range(scale):
        r = rng.random(count, dtype=np.float32)
        np.left_shift(rows, 1, out=rows)
        np.left_shift(cols, 1, out=cols)
        rows |= r >= a + b                                  # quadrants c and d
        cols |= (r >= a) ^ (r >= a + b) ^ (r >= a + b + c)  # quadrants b and d
    return rows, cols


def _rmat_more(rng, base, num_edges: int, n: int, linking: int, scale: int, abc, progress: bool):
    """Distinct R-MAT keys (row * n + column, rows below ``linking``) not in ``base``, enough of them."""
    extra = np.empty(0, dtype=np.int64)
    stalled = 0                   # rounds in a row that found almost no new edge: skew that cannot reach m
    with bar(num_edges, "generating an R-MAT graph", unit="edge", enabled=progress) as edges:
        edges.update(base.size)
        while base.size + extra.size < num_edges:
            missing = num_edges - base.size - extra.size
            rows, cols = _rmat_ids(rng, int(missing * 1.2) + 1024, scale, abc)
            ok = (rows < linking) & (cols < n)
            before = extra.size
            extra = sorted_unique(np.concatenate([extra, rows[ok] * n + cols[ok]]))
            extra = extra[~np.isin(extra, base, assume_unique=True, kind="sort")]
            edges.update(min(extra.size, num_edges - base.size) - min(before, num_edges - base.size))
            stalled = stalled + 1 if extra.size - before < max(1, missing // 100) else 0
            if stalled == 5:
                a, b, c = abc
                raise ArgumentError(f"R-MAT with a={a:g}, b={b:g}, c={c:g} reaches too few distinct edges on "
                                    f"{n:,} vertices: {base.size + extra.size:,} of {num_edges:,} found and "
                                    f"almost none new in 5 rounds; ask for fewer edges or spread the "
                                    f"probabilities more evenly")
    return extra


def rmat_graph(num_vertices: int = WEB_GOOGLE_VERTICES, num_edges: int = WEB_GOOGLE_EDGES, seed: int = 0,
               *, dangling_share: float = WEB_GOOGLE_DANGLING_SHARE, a: float = 0.5, b: float = 0.2,
               c: float = 0.2, name: str | None = None, progress: bool = False) -> Graph:
    """Power-law R-MAT graph (quadrants a, b, c, 1-a-b-c): ``num_edges`` distinct edges, a ``dangling_share``
    without out-links, none isolated, in- and out-hubs apart (two relabellings); ``progress``: a text bar."""
    a, b, c = abc = tuple(check_real(v, key, low=0.0, high=1.0) for key, v in (("a", a), ("b", b), ("c", c)))
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
    _, first = _rmat_ids(rng, 2 * linking, scale, abc)
    first = first[first < n][:linking]
    if first.size < linking:
        first = np.concatenate([first, rng.integers(0, n, linking - first.size)])
    dangling_vertices = source_label[linking:]
    base = sorted_unique(np.concatenate([
        np.arange(linking, dtype=np.int64) * n + first,                              # one out-link each
        rng.integers(0, linking, dangling_vertices.size) * n + target_of[dangling_vertices],  # one in-link
    ]))
    extra = _rmat_more(rng, base, num_edges, n, linking, scale, abc, progress)
    keys = np.concatenate([base, rng.choice(extra, size=num_edges - base.size, replace=False)])
    return from_edges(source_label[keys // n], target_label[keys % n], n,
                      name=name or f"R-MAT(n={n:,}, m={num_edges:,}, seed={seed})")


def _power_law_degrees(rng, count: int, total: int, cap: int, shift: float = 4.0) -> np.ndarray:
    """``count`` degrees in 1..cap from p(k) ~ (k + shift)^-alpha, alpha chosen for a sum near ``total``, then
    nudged to sum to exactly ``total`` with one degree at ``cap``; the shift keeps most degrees above one."""
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


def _crawl_sites(rng, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Each vertex's site (first id, size): sites of consecutive ids with heavy-tailed sizes, as crawled."""
    sizes = np.minimum(np.ceil(rng.pareto(1.2, n // 4 + 16) * 8).astype(np.int64) + 1, 5_000)
    sizes = sizes[: int(np.searchsorted(np.cumsum(sizes), n)) + 1]
    sizes[-1] -= int(sizes.sum()) - n
    return np.repeat(np.concatenate([[0], np.cumsum(sizes)[:-1]]), sizes), np.repeat(sizes, sizes)


def _rank_in_group(groups: np.ndarray, n: int) -> np.ndarray:
    """Each entry's position among the entries of its group (``groups`` sorted, in 0..n-1)."""
    counts = np.bincount(groups, minlength=n)
    return np.arange(groups.size) - np.repeat(np.cumsum(counts) - counts, counts)


def _targets(rng, sources, local_share: float, sites, cumulative) -> np.ndarray:
    """A target per source: a ``local_share`` in its site (its first page or one near), else popular ones."""
    site_start, site_size = sites[0][sources], sites[1][sources]
    local = rng.random(sources.size) < local_share
    home = rng.random(sources.size) < 0.25
    offset = np.rint(rng.laplace(0.0, 4.0 + site_size / 8.0)).astype(np.int64)
    offset[offset == 0] = 1
    chosen = np.where(home, site_start, np.clip(sources + offset, site_start, site_start + site_size - 1))
    far = np.minimum(np.searchsorted(cumulative, rng.random(sources.size)), cumulative.size - 1)
    return np.where(local, chosen, far)


def _draw_links(rng, out_degree, sites, local_share: float, max_in_degree: int) -> tuple[np.ndarray, int]:
    """(sorted keys source * n + target, hub): each source's out-degree of distinct links, no self-loop, none
    into the hub (a site's first page), at most max_in_degree - 1 into any other page."""
    n = out_degree.size
    popularity = np.minimum(rng.pareto(1.1, n) + 1.0, 400.0)          # heavy-tailed, capped: no second hub
    hub = int(rng.choice(np.flatnonzero(sites[0] == np.arange(n))))
    keys = np.empty(0, dtype=np.int64)
    for attempt in range(40):                             # draw until each source has its degree, distinct
        missing = out_degree - np.bincount(keys // n, minlength=n)
        if not missing.any():
            break
        sources = np.repeat(np.arange(n), np.maximum(missing, 0))
        # the first draw follows the crawl's locality; a small site cannot give a wide page enough distinct
        # neighbours, so what is still missing afterwards links to popular pages anywhere
        targets = _targets(rng, sources, local_share if attempt == 0 else 0.0, sites,
                           np.cumsum(popularity / popularity.sum()))
        ok = (targets != sources) & (targets != hub)
        keys = sorted_unique(np.concatenate([keys, sources[ok] * n + targets[ok]]))
        keys = keys[_rank_in_group(keys // n, n) < out_degree[keys // n]]     # no more than the degree
        # a page with max_in_degree - 1 in-links keeps a random such many and gets no more (drawn again)
        full = np.flatnonzero(np.bincount(keys % n, minlength=n) >= max_in_degree - 1)
        if full.size:
            shuffled = keys % n * (keys.size + 1) + rng.permutation(keys.size)
            by_target = keys[np.argsort(shuffled, kind="stable")]
            keys = np.sort(by_target[_rank_in_group(by_target % n, n) < max_in_degree - 1])
            popularity[full] = 0.0
    return keys, hub


def _trim_links(rng, keys, m: int, hub: int, widest: int, n: int) -> np.ndarray:
    """``keys`` cut to ``m``, never a vertex's last link either way, one into the hub or from ``widest``."""
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
    return keys


def web_graph(num_vertices: int = WEB_GOOGLE_VERTICES, num_edges: int = WEB_GOOGLE_EDGES, seed: int = 0, *,
              max_out_degree: int = WEB_GOOGLE_MAX_OUT_DEGREE, max_in_degree: int = WEB_GOOGLE_MAX_IN_DEGREE,
              dangling_share: float = WEB_GOOGLE_DANGLING_SHARE, local_share: float = 0.75,
              name: str | None = None, progress: bool = False) -> Graph:
    """A web-like graph of ``num_edges`` distinct edges, no self-loop or isolated vertex, both degree maxima
    reached (by one page for in-links) and ids in crawl order: sites of consecutive ids, a ``local_share`` of
    links inside the source's site, the rest to popular pages. ``progress``: a bar over its five steps."""
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
    rng = np.random.default_rng(seed)
    with bar(5, "generating a web-like graph", unit="step", enabled=progress) as steps:
        sites = _crawl_sites(rng, n)
        is_linking = np.zeros(n, dtype=bool)
        is_linking[rng.choice(n, size=linking, replace=False)] = True
        sources_of = np.flatnonzero(is_linking)
        out_degree = np.zeros(n, dtype=np.int64)
        out_degree[sources_of] = _power_law_degrees(rng, linking, m, max_out_degree)
        steps.update(1)
        keys, hub = _draw_links(rng, out_degree, sites, local_share, max_in_degree)
        steps.update(1)
        # the hub gets exactly max_in_degree in-links, and every dangling vertex one: it is in some edge
        unlinked = np.bincount(keys % n, minlength=n) == 0
        lonely = np.flatnonzero(unlinked & ~is_linking & (np.arange(n) != hub))
        hub_sources = rng.choice(sources_of[sources_of != hub], size=max_in_degree, replace=False)
        extra_sources = np.concatenate([hub_sources, rng.choice(sources_of, size=lonely.size)])
        extra_targets = np.concatenate([np.full(hub_sources.size, hub), lonely])
        keys = sorted_unique(np.concatenate([keys, extra_sources * n + extra_targets]))
        steps.update(1)
        keys = _trim_links(rng, keys, m, hub, int(np.argmax(out_degree)), n)
        steps.update(1)
        name = name or f"web-like graph (n={n:,}, m={m:,}, seed={seed})"
        graph = from_edges(keys // n, keys % n, n, name=name)
        steps.update(1)
    in_degree = graph.in_degree
    problems = [what for what, bad in (
        ("edge count", graph.num_edges != m),
        ("maximum in-degree", in_degree.max() != max_in_degree or np.sort(in_degree)[-2] >= max_in_degree),
        ("maximum out-degree", graph.out_degree.max() != max_out_degree),
        ("dangling count", graph.dangling.sum() != dangling_count),
        ("isolated vertices", ((in_degree == 0) & graph.dangling).any()),
        ("self-loops", (keys // n == keys % n).any())) if bad]
    if problems:
        raise RuntimeError(f"the web-like generator missed its {', '.join(problems)}; try another seed")
    return graph


def without_hub_in_links(graph: Graph, above: int = 1_000) -> Graph:
    """The graph without the in-links of every vertex with more than ``above`` of them, all else as it was:
    the control for "the hub is what is slow"."""
    graph, above = check_graph(graph), check_integer(above, "above", minimum=0)
    hubs = np.flatnonzero(graph.in_degree > above)
    targets = np.repeat(np.arange(graph.num_vertices), graph.in_degree)
    keep = ~np.isin(targets, hubs)
    return from_edges(graph.in_sources[keep], targets[keep], graph.num_vertices,
                      original_ids=graph.original_ids,
                      name=f"{graph.name} without the in-links of its {hubs.size} vertices above {above:,}")
