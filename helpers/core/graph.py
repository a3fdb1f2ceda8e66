"""Graphs as the course stores them: out-CSR, in-CSR (the transpose, for pull kernels) and degrees. Edge
policy (networkx's DiGraph's too): duplicate edges merge into one, self-loops stay ordinary edges."""
from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from helpers.core.arguments import (MAX_VERTICES, ArgumentError, GraphFormatError, check_flag, check_integer,
                                    check_vertices, host_array, is_integer)

INT32_EDGE_LIMIT = 2**31  # from this many edges on, offsets no longer fit in int32
INT64_LIMIT = 2**63       # ids in files and id arrays must lie below this (they are stored as int64)


class GraphFormatWarning(UserWarning):
    """An edge list that can be read but probably not as meant (a header that disagrees with the body)."""


class GraphTooLargeError(MemoryError):
    """A graph, or a layout of it, needs more memory (host or GPU) or more indices than there are."""


def check_graph(graph) -> Graph:
    if not isinstance(graph, Graph):
        raise ArgumentError(f"expected a helpers.core.graph.Graph, got {type(graph).__name__}")
    return graph


def offsets_dtype(num_edges: int) -> type:
    """int32 offsets while every edge index fits, int64 from 2**31 edges on."""
    return np.int32 if num_edges < INT32_EDGE_LIMIT else np.int64


# Peak host bytes beyond the inputs, measured with tracemalloc: building (from_edges, 10**4 to 4.2*10**6
# vertices, 2*10**5 to 3.8*10**7 edges) stays within 20 per vertex + 16 per edge.
BUILD_BYTES_PER_VERTEX = 22
BUILD_BYTES_PER_EDGE = 17
PARSE_BYTES_PER_LINE = 18    # read_edge_pairs: the (k, 2) int64 result as NumPy's reader grows it
RELABEL_BYTES_PER_ID = 28    # relabel: both ends' ids, their order and the lookup


def build_bytes(num_vertices: int, num_edges: int) -> int:
    """Host bytes that building a Graph of this size allocates at its peak, the Graph included."""
    n = check_integer(num_vertices, "num_vertices", minimum=0)
    m = check_integer(num_edges, "num_edges", minimum=0)
    return BUILD_BYTES_PER_VERTEX * n + BUILD_BYTES_PER_EDGE * m


def available_host_bytes() -> int | None:
    """Host memory that can be allocated now (MemAvailable, else free pages); None where neither is known."""
    try:
        with open("/proc/meminfo", "rb") as f:
            for line in f.read(1 << 16).splitlines():
                if line.startswith(b"MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None


def _size(nbytes: float) -> str:
    return f"{nbytes / 2**30:,.2f} GiB" if nbytes >= 2**30 else f"{nbytes / 2**20:,.1f} MiB"


def check_host_memory(needed: int, what: str, arithmetic: str, smaller: str) -> None:
    """Raise GraphTooLargeError, with the arithmetic, where ``needed`` bytes exceed the host's available."""
    available = available_host_bytes()
    if available is not None and needed > available:
        raise GraphTooLargeError(f"{what} needs about {_size(needed)} of host memory ({arithmetic}), and "
                                 f"{_size(available)} is available; {smaller}, or free memory")


@dataclass(frozen=True, eq=False)
class Graph:
    """A directed graph in CSR both ways: u links to ``out_targets[out_offsets[u]:out_offsets[u+1]]``, v is
    linked from ``in_sources[in_offsets[v]:in_offsets[v+1]]``; ``original_ids[v]``: v's input id, or None."""

    num_vertices: int
    out_offsets: np.ndarray
    out_targets: np.ndarray
    in_offsets: np.ndarray
    in_sources: np.ndarray
    out_degree: np.ndarray
    original_ids: np.ndarray | None = None
    name: str = "graph"

    def __post_init__(self):
        for key in ("out_offsets", "out_targets", "in_offsets", "in_sources", "out_degree", "original_ids"):
            host_array(getattr(self, key), key)          # a Graph lives in host memory, nothing masked

    @property
    def num_edges(self) -> int:
        return int(self.out_targets.size)

    @property
    def in_degree(self) -> np.ndarray:
        return np.diff(self.in_offsets).astype(np.int32)

    @property
    def dangling(self) -> np.ndarray:
        """Boolean mask of vertices with no out-links: their rank must be redistributed."""
        return self.out_degree == 0

    @property
    def nbytes(self) -> int:
        """Bytes held by the CSR arrays (both directions and the degrees)."""
        arrays = (self.out_offsets, self.out_targets, self.in_offsets, self.in_sources, self.out_degree)
        return int(sum(a.nbytes for a in arrays))

    def edges(self) -> tuple[np.ndarray, np.ndarray]:
        """(sources, targets) in out-CSR order, sorted by source then target."""
        return np.repeat(np.arange(self.num_vertices, dtype=np.int32), self.out_degree), self.out_targets

    @cached_property
    def in_matrix(self):
        """SciPy CSR matrix A with A[v, u] = 1 for every edge u -> v (rows are in-link lists)."""
        n = self.num_vertices
        return sp.csr_matrix((np.ones(self.num_edges), self.in_sources, self.in_offsets), shape=(n, n))

    def __repr__(self) -> str:
        sizes = f"{self.num_vertices:,} vertices, {self.num_edges:,} edges, "
        if f"{self.num_vertices:,} vertices" in self.name:       # a stand-in's name already says its size
            sizes = ""
        return f"Graph({self.name!r}: {sizes}{int(self.dangling.sum()):,} dangling)"


def sorted_unique(values: np.ndarray, *, sort: bool = True) -> np.ndarray:
    """np.unique by sorting (much faster on integer keys than NumPy 2.4's hashing); ``sort=False``: sorted."""
    values = host_array(values, "values", ndim=1)
    values = np.sort(values) if sort else values
    if values.size > 1:
        distinct = np.empty(values.size, dtype=bool)
        distinct[0] = True
        np.not_equal(values[1:], values[:-1], out=distinct[1:])
        values = values[distinct]
    return values


def relabel(sources, targets) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Map sparse ids onto 0..n-1 in increasing id order; returns (sources, targets, original_ids)."""
    sources, targets = _id_pair(sources, targets)
    ids = 2 * sources.size
    check_host_memory(RELABEL_BYTES_PER_ID * ids, f"relabelling {ids:,} ids",
                      f"{RELABEL_BYTES_PER_ID} bytes per id", "use fewer edges")
    both = np.concatenate([sources, targets])
    too_many = "{:,} distinct ids do not fit int32 vertex ids"
    if both.size and 0 <= both.min() and both.max() < 2 * both.size:
        # Compact ids (the usual case): a lookup table is linear time.
        present = np.zeros(int(both.max()) + 1, dtype=bool)
        present[both] = True
        original_ids = np.flatnonzero(present)
        if original_ids.size > MAX_VERTICES:
            raise GraphFormatError(too_many.format(original_ids.size))
        lookup = np.cumsum(present, dtype=np.int32)
        lookup -= 1
        del present
        compact = lookup[both]
    else:
        original_ids = sorted_unique(both)
        if original_ids.size > MAX_VERTICES:
            raise GraphFormatError(too_many.format(original_ids.size))
        compact = np.searchsorted(original_ids, both).astype(np.int32)
    return compact[: sources.size], compact[sources.size:], original_ids.astype(np.int64)


def _id_pair(sources, targets) -> tuple[np.ndarray, np.ndarray]:
    """Both ends of the edges as id arrays (``_as_id_array``) of one length."""
    sources, targets = _as_id_array(sources, "sources"), _as_id_array(targets, "targets")
    if sources.size != targets.size:
        raise GraphFormatError(f"sources and targets differ in length ({sources.size} against "
                               f"{targets.size})")
    return sources, targets


def _as_id_array(values, what: str) -> np.ndarray:
    """A 1-D signed integer id array (int64 unless given narrower, then not copied), refusing what would be
    wrapped or truncated: floats, bools, ids beyond int64 (a uint64 2**63 is reported as itself)."""
    host_array(values, what, fill="a masked id is no vertex id; drop those edges first (e.g. with "
                                   "numpy.ma.compressed on both ends)")
    try:
        array = np.asarray(values)
    except (OverflowError, ValueError, TypeError):
        array = np.asarray(values, dtype=object)
    if array.ndim != 1:
        raise GraphFormatError(f"{what} must be a 1-D array of vertex ids, got shape {array.shape}")
    if array.size == 0:
        return np.zeros(0, dtype=np.int64)
    too_big = "{what}[{i}] = {v} does not fit in 64 bits (ids must lie below 2**63)"
    if array.dtype == object:
        for i, v in enumerate(array):
            if not is_integer(v):
                missing = v is None or type(v).__name__ in ("NAType", "NaTType")
                raise GraphFormatError(f"{what} must hold integer vertex ids; {what}[{i}] is {v!r}" + (
                    " (a missing value in pandas: drop those edges first)" if missing else ""))
            if not -INT64_LIMIT <= int(v) < INT64_LIMIT:
                raise GraphFormatError(too_big.format(what=what, i=i, v=int(v)))
        return array.astype(np.int64)
    if array.dtype.kind == "f":               # whole numbers in floats are not truncated silently: say how
        bad = np.flatnonzero(~np.isfinite(array) | (array != np.round(array)))
        if bad.size:
            i = int(bad[0])
            raise GraphFormatError(f"{what} must hold integer vertex ids; {what}[{i}] is {float(array[i])!r} "
                                   f"(a missing value in pandas reads as nan: drop those edges first)")
        raise GraphFormatError(f"{what} must hold integer vertex ids, got dtype {array.dtype}; its values "
                               f"are whole numbers, so {what}.astype('int64') gives the ids")
    if array.dtype.kind not in "iu":
        raise GraphFormatError(f"{what} must hold integer vertex ids, got dtype {array.dtype}")
    if array.dtype.kind == "u" and array.dtype.itemsize == 8:
        big = np.flatnonzero(array >= np.uint64(INT64_LIMIT))
        if big.size:
            raise GraphFormatError(too_big.format(what=what, i=int(big[0]), v=int(array[big[0]])))
    return array if array.dtype.kind == "i" else array.astype(np.int64)


def from_edges(sources, targets, num_vertices: int | None = None, *, undirected: bool = False,
               original_ids=None, name: str = "graph") -> Graph:
    """A Graph from two arrays of vertex ids in 0..num_vertices-1 (edge i: sources[i] -> targets[i]).

    ``num_vertices`` defaults to the largest id + 1; ``undirected`` makes every pair two directed edges;
    ``original_ids`` holds each vertex's distinct id in the input. The host's memory is checked first.
    """
    undirected = check_flag(undirected, "undirected")
    if not isinstance(name, str):
        raise ArgumentError(f"name must be a string, got {name!r}")
    src, dst = _id_pair(sources, targets)
    if num_vertices is None:
        if src.size == 0:
            raise GraphFormatError("empty graph: no edges and no num_vertices to say how many vertices")
        num_vertices = int(max(src.max(), dst.max())) + 1
    n = check_vertices(num_vertices, "num_vertices", minimum=None, error=GraphFormatError)
    if n < 1:
        raise GraphFormatError(f"a graph needs at least one vertex, got num_vertices={num_vertices}")
    m = src.size * (2 if undirected else 1)
    check_host_memory(build_bytes(n, m) + (2 * (src.nbytes + dst.nbytes) if undirected else 0),
                      f"building {name!r} ({n:,} vertices, {m:,} edges)",
                      f"{BUILD_BYTES_PER_VERTEX} bytes per vertex + {BUILD_BYTES_PER_EDGE} per edge",
                      "use fewer vertices or edges")
    for array, what in ((src, "source"), (dst, "target")):
        bad = np.flatnonzero((array < 0) | (array >= n))
        if bad.size:
            i = int(bad[0])
            raise GraphFormatError(f"edge {i} has {what} id {int(array[i])}, outside 0..{n - 1} "
                                   f"(num_vertices={n})")
    if original_ids is not None:
        original_ids = _check_original_ids(original_ids, n)
    if undirected:
        src, dst = np.concatenate([src, dst]), np.concatenate([dst, src])
    return _build(n, src, dst, original_ids, name)


def _check_original_ids(original_ids, n: int) -> np.ndarray:
    """One distinct int64 id per vertex, or a GraphFormatError saying what is wrong."""
    ids = _as_id_array(original_ids, "original_ids").astype(np.int64, copy=False)
    if ids.size != n:
        raise GraphFormatError(f"original_ids needs one id per vertex ({n:,}), got {ids.size:,}")
    if n > 1 and not (np.diff(ids) > 0).all():       # relabelled ids are increasing: the usual, linear case
        ordered = np.sort(ids)
        repeated = np.flatnonzero(ordered[1:] == ordered[:-1])
        if repeated.size:
            raise GraphFormatError(f"original_ids must be distinct; {int(ordered[repeated[0]])} occurs twice")
    return ids


def _sorted_pairs(first: np.ndarray, second: np.ndarray, n: int) -> np.ndarray:
    """The keys first * n + second, sorted in place: pairs ordered by first, then second."""
    keys = first.astype(np.int64)
    keys *= n
    keys += second
    keys.sort()
    return keys


def _build(n: int, src: np.ndarray, dst: np.ndarray, original_ids, name: str) -> Graph:
    # Sorted keys source * n + target, equal neighbours merged. In place, and int32 results written
    # directly: the peak stays near 24 bytes per edge.
    keys = sorted_unique(_sorted_pairs(src, dst, n), sort=False)
    m = keys.size
    out_src = np.floor_divide(keys, n, out=np.empty(m, np.int32), casting="unsafe")
    out_targets = np.remainder(keys, n, out=np.empty(m, np.int32), casting="unsafe")
    del keys
    odt = offsets_dtype(m)
    out_degree = np.bincount(out_src, minlength=n).astype(np.int32)
    out_offsets = np.zeros(n + 1, dtype=odt)
    np.cumsum(out_degree, dtype=odt, out=out_offsets[1:])
    in_offsets = np.zeros(n + 1, dtype=odt)
    np.cumsum(np.bincount(out_targets, minlength=n), dtype=odt, out=in_offsets[1:])   # no int64 temporary
    keys = _sorted_pairs(out_targets, out_src, n)         # in-links by target, sources ascending
    del out_src
    in_sources = np.remainder(keys, n, out=np.empty(m, np.int32), casting="unsafe")
    del keys
    return Graph(n, out_offsets, out_targets, in_offsets, in_sources, out_degree, original_ids, name)


def check_csr(num_vertices: int, out_offsets, out_targets, in_offsets, in_sources, out_degree,
              original_ids=None, *, thorough: bool = True) -> None:
    """GraphFormatError unless arrays from outside (a cache file) form a safe graph: dtypes, shapes, offsets,
    ids in range, degrees; ``thorough`` also checks sorted rows and the transpose (passes over every edge)."""
    n = check_integer(num_vertices, "num_vertices", minimum=1)
    arrays = dict(out_offsets=out_offsets, out_targets=out_targets, in_offsets=in_offsets,
                  in_sources=in_sources, out_degree=out_degree)
    if original_ids is not None:
        arrays["original_ids"] = original_ids
    m = np.size(host_array(out_targets, "out_targets"))
    wanted = dict(out_offsets=(offsets_dtype(m), n + 1), out_targets=(np.int32, m),
                  in_offsets=(offsets_dtype(m), n + 1), in_sources=(np.int32, m), out_degree=(np.int32, n),
                  original_ids=(np.int64, n))
    for key, array in arrays.items():
        dtype, size = wanted[key]
        host_array(array, key)
        if not isinstance(array, np.ndarray) or array.shape != (size,) or array.dtype != dtype:
            raise GraphFormatError(f"{key} must be {np.dtype(dtype)} of length {size:,} (a 1-D NumPy array) "
                                   f"for {n:,} vertices and {m:,} edges, got {type(array).__name__} "
                                   f"{getattr(array, 'dtype', '')} of shape {getattr(array, 'shape', None)}")
    for offsets, ids, key in ((out_offsets, out_targets, "out"), (in_offsets, in_sources, "in")):
        if offsets[0] != 0 or offsets[-1] != m:
            raise GraphFormatError(f"{key}_offsets must run from 0 to the edge count {m:,}, "
                                   f"got {int(offsets[0]):,}..{int(offsets[-1]):,}")
        degree = np.diff(offsets)
        if (degree < 0).any():
            raise GraphFormatError(f"{key}_offsets decrease at vertex {int(np.flatnonzero(degree < 0)[0])}")
        if m:
            low, high = int(ids.min()), int(ids.max())
            if low < 0 or high >= n:
                raise GraphFormatError(f"{key} ids must lie in 0..{n - 1}, found {low if low < 0 else high}")
        if m and thorough:
            # within a row ids strictly increase: a step that is not positive must start a new row
            steps = np.diff(ids) <= 0
            steps[offsets[1:-1][(offsets[1:-1] > 0) & (offsets[1:-1] < m)] - 1] = False
            if steps.any():
                raise GraphFormatError(f"{key}-links are not sorted and distinct within a row "
                                       f"(at position {int(np.flatnonzero(steps)[0]) + 1:,})")
        if key == "out" and not np.array_equal(degree, out_degree):
            raise GraphFormatError("out_degree disagrees with out_offsets")
        transpose = key == "in" and thorough and m
        if transpose and not np.array_equal(degree, np.bincount(out_targets, minlength=n)):
            raise GraphFormatError("in_offsets disagree with the targets of the out-links: not a transpose")


def statistics_of(graph: Graph, *, undirected: bool = False) -> dict[str, int]:
    """SNAP's published statistics, computed with SciPy: distinct edges, nodes and edges of the largest weakly
    and strongly connected components; ``undirected`` counts as SNAP does (a pair once, a loop once)."""
    graph, undirected = check_graph(graph), check_flag(undirected, "undirected")
    n = graph.num_vertices
    matrix = sp.csr_matrix((np.ones(graph.num_edges, dtype=np.int8), graph.out_targets, graph.out_offsets),
                           shape=(n, n))
    src, dst = graph.edges()
    loops = src == dst

    def count(inside) -> int:
        edges = int(inside.sum())
        return (edges + int((inside & loops).sum())) // 2 if undirected else edges

    found = {"edges": count(np.ones(graph.num_edges, dtype=bool))}
    for key, connection in (("wcc", "weak"), ("scc", "strong")):
        labels = connected_components(matrix, directed=True, connection=connection)[1]
        sizes = np.bincount(labels)
        largest = int(np.argmax(sizes))
        inside = labels == largest
        found[f"{key}_nodes"] = int(sizes[largest])
        found[f"{key}_edges"] = count(inside[src] & inside[dst])
    return found
