"""Graphs as the course stores them: out-CSR, in-CSR (the transpose, for pull kernels) and degrees.

Edge policy, shared by the reference and every kernel: duplicate edges are merged into one (a page
that links to another twice still casts one vote) and self-loops are kept as ordinary edges (a page
that links to itself keeps part of its own rank). networkx's DiGraph follows the same policy.
"""
from __future__ import annotations

import gzip
import os
import warnings
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np

INT32_EDGE_LIMIT = 2**31  # from this many edges on, offsets no longer fit in int32
MAX_VERTICES = 2**31 - 1  # vertex ids are stored as int32


class GraphFormatError(ValueError):
    """An edge list that cannot become a graph; the message names the file and line where it can."""


def offsets_dtype(num_edges: int) -> type:
    """int32 offsets while every edge index fits, int64 from 2**31 edges on."""
    return np.int32 if num_edges < INT32_EDGE_LIMIT else np.int64


@dataclass(frozen=True, eq=False)
class Graph:
    """A directed graph in compressed sparse row form, both ways round.

    ``out_offsets``/``out_targets``: vertex u links to ``out_targets[out_offsets[u]:out_offsets[u+1]]``.
    ``in_offsets``/``in_sources``: vertex v is linked from ``in_sources[in_offsets[v]:in_offsets[v+1]]``.
    ``original_ids[v]`` is the id vertex v had in the input (None when ids were already 0..n-1).
    """

    num_vertices: int
    out_offsets: np.ndarray
    out_targets: np.ndarray
    in_offsets: np.ndarray
    in_sources: np.ndarray
    out_degree: np.ndarray
    original_ids: np.ndarray | None = None
    name: str = "graph"

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
        sources = np.repeat(np.arange(self.num_vertices, dtype=np.int32), self.out_degree)
        return sources, self.out_targets

    @cached_property
    def in_matrix(self):
        """SciPy CSR matrix A with A[v, u] = 1 for every edge u -> v (rows are in-link lists)."""
        import scipy.sparse as sp

        n = self.num_vertices
        data = np.ones(self.num_edges, dtype=np.float64)
        return sp.csr_matrix((data, self.in_sources, self.in_offsets), shape=(n, n))

    def __repr__(self) -> str:
        return (f"Graph({self.name!r}: {self.num_vertices:,} vertices, {self.num_edges:,} edges, "
                f"{int(self.dangling.sum()):,} dangling)")


def sorted_unique(values: np.ndarray) -> np.ndarray:
    """np.unique by sorting: on integer keys much faster than the hash-based path of NumPy 2.4."""
    values = np.sort(values)
    if values.size:
        values = values[np.concatenate([[True], values[1:] != values[:-1]])]
    return values


def relabel(sources, targets) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Map sparse ids onto 0..n-1 in increasing id order; returns (sources, targets, original_ids)."""
    sources = np.asarray(sources, dtype=np.int64)
    both = np.concatenate([sources, np.asarray(targets, dtype=np.int64)])
    if both.size and 0 <= both.min() and both.max() < 8 * both.size:
        # Compact ids (the usual case): a lookup table is linear time.
        present = np.zeros(int(both.max()) + 1, dtype=bool)
        present[both] = True
        original_ids = np.flatnonzero(present)
        lookup = np.cumsum(present, dtype=np.int64) - 1
        compact = lookup[both].astype(np.int32)
    else:
        original_ids = sorted_unique(both)
        compact = np.searchsorted(original_ids, both).astype(np.int32)
    return compact[: sources.size], compact[sources.size:], original_ids.astype(np.int64)


def _as_id_array(values, what: str) -> np.ndarray:
    array = np.asarray(values)
    if array.ndim != 1:
        raise GraphFormatError(f"{what} must be a 1-D array of vertex ids, got shape {array.shape}")
    if array.size and not np.issubdtype(array.dtype, np.integer):
        raise GraphFormatError(f"{what} must hold integer vertex ids, got dtype {array.dtype}")
    return array.astype(np.int64, copy=False)


def from_edges(sources, targets, num_vertices: int | None = None, *, undirected: bool = False,
               original_ids=None, name: str = "graph") -> Graph:
    """Build a Graph from two arrays of vertex ids in 0..num_vertices-1 (edge i is sources[i] -> targets[i]).

    ``num_vertices`` defaults to the largest id + 1; vertices without edges are kept (isolated).
    ``undirected=True`` turns every listed pair into two directed edges.
    """
    src = _as_id_array(sources, "sources")
    dst = _as_id_array(targets, "targets")
    if src.size != dst.size:
        raise GraphFormatError(f"sources and targets differ in length ({src.size} against {dst.size})")
    if num_vertices is None:
        if src.size == 0:
            raise GraphFormatError("empty graph: no edges and no num_vertices to say how many vertices")
        num_vertices = int(max(src.max(), dst.max())) + 1
    n = int(num_vertices)
    if n < 1:
        raise GraphFormatError(f"a graph needs at least one vertex, got num_vertices={num_vertices}")
    if n > MAX_VERTICES:
        raise GraphFormatError(f"{n:,} vertices do not fit the course's int32 vertex ids")
    if src.size:
        for array, what in ((src, "source"), (dst, "target")):
            bad = np.flatnonzero((array < 0) | (array >= n))
            if bad.size:
                i = int(bad[0])
                raise GraphFormatError(
                    f"edge {i} has {what} id {int(array[i])}, outside 0..{n - 1} (num_vertices={n})")
    if undirected:
        src, dst = np.concatenate([src, dst]), np.concatenate([dst, src])
    return _build(n, src, dst, original_ids, name)


def _build(n: int, src: np.ndarray, dst: np.ndarray, original_ids, name: str) -> Graph:
    # One sort of the combined key orders edges by (source, target) and merges duplicates.
    keys = sorted_unique(src.astype(np.int64) * n + dst)
    out_src = (keys // n).astype(np.int32)
    out_targets = (keys % n).astype(np.int32)
    del keys
    odt = offsets_dtype(out_targets.size)
    out_degree = np.bincount(out_src, minlength=n)
    out_offsets = np.zeros(n + 1, dtype=odt)
    np.cumsum(out_degree, out=out_offsets[1:])
    # Sorting the distinct (target, source) keys orders in-links by target, sources ascending.
    in_sources = (np.sort(out_targets.astype(np.int64) * n + out_src) % n).astype(np.int32)
    in_offsets = np.zeros(n + 1, dtype=odt)
    np.cumsum(np.bincount(out_targets, minlength=n), out=in_offsets[1:])
    if original_ids is not None:
        original_ids = np.asarray(original_ids, dtype=np.int64)
    return Graph(n, out_offsets, out_targets, in_offsets, in_sources, out_degree.astype(np.int32),
                 original_ids, name)


def _open_text(path: Path):
    return gzip.open(path, "rt") if path.suffix == ".gz" else open(path, "rt")


def _first_bad_line(path: Path, num_vertices: int | None) -> str | None:
    """Slow, exact pass: the first line that breaks the format, described; None if every line is fine."""
    with _open_text(path) as lines:
        for number, line in enumerate(lines, start=1):
            text = line.split("#", 1)[0].strip()
            if not text:
                continue
            tokens = text.split()
            if len(tokens) != 2:
                return (f"line {number}: expected two vertex ids (source target), "
                        f"found {len(tokens)} column(s): {line.rstrip()!r}")
            for token in tokens:
                try:
                    value = int(token)
                except ValueError:
                    return f"line {number}: {token!r} is not an integer vertex id"
                if value < 0:
                    return f"line {number}: negative vertex id {value}"
                if num_vertices is not None and value >= num_vertices:
                    return (f"line {number}: vertex id {value} is beyond the declared vertex count "
                            f"{num_vertices} (ids run 0..{num_vertices - 1})")
    return None


def read_edge_pairs(path, num_vertices: int | None = None) -> np.ndarray:
    """The (k, 2) int64 array of id pairs in a SNAP-style edge list, one row per edge line, checked:
    integers only, two per line, none negative, all below ``num_vertices`` when it is given."""
    path = Path(os.fspath(path))
    if not path.is_file():
        raise FileNotFoundError(f"no edge-list file at {path}")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # "input contained no data": handled below
            pairs = np.loadtxt(path, dtype=np.int64, comments="#", ndmin=2)
    except ValueError as error:
        detail = _first_bad_line(path, num_vertices)
        raise GraphFormatError(f"{path}: {detail or error}") from None
    except (EOFError, OSError, gzip.BadGzipFile) as error:
        raise GraphFormatError(f"{path}: the compressed file is damaged or truncated ({error})") from None
    if pairs.size == 0:
        raise GraphFormatError(f"{path}: no edges found (the file is empty or holds only comments)")
    if pairs.shape[1] != 2 or (pairs < 0).any() or (num_vertices is not None and (pairs >= num_vertices).any()):
        detail = _first_bad_line(path, num_vertices)
        raise GraphFormatError(f"{path}: {detail or 'expected two vertex ids per line'}")
    return pairs


def graph_from_pairs(pairs: np.ndarray, *, relabel_ids: bool = True, num_vertices: int | None = None,
                     undirected: bool = False, name: str = "graph") -> Graph:
    """A Graph from an id-pair array as ``read_edge_pairs`` returns it (see ``read_edge_list``)."""
    src, dst = pairs[:, 0], pairs[:, 1]
    if relabel_ids:
        src, dst, original_ids = relabel(src, dst)
        return from_edges(src, dst, original_ids.size, undirected=undirected,
                          original_ids=original_ids, name=name)
    return from_edges(src, dst, num_vertices, undirected=undirected, name=name)


def read_edge_list(path, *, relabel_ids: bool = True, num_vertices: int | None = None,
                   undirected: bool = False, name: str | None = None) -> Graph:
    """Read a SNAP-style edge list ('#' comments, two integer ids per line, optionally gzipped).

    With ``relabel_ids`` (the default) sparse ids become 0..n-1 and ``original_ids`` keeps the mapping.
    Without it, ids are used as they are and must lie below ``num_vertices`` (default: largest id + 1).
    """
    pairs = read_edge_pairs(path, None if relabel_ids else num_vertices)
    return graph_from_pairs(pairs, relabel_ids=relabel_ids, num_vertices=num_vertices, undirected=undirected,
                            name=name or Path(os.fspath(path)).name.split(".")[0])


def write_edge_list(graph: Graph, path, *, header: str | None = None) -> Path:
    """Write a graph as a SNAP-style edge list (gzipped when the name ends in .gz), original ids if known."""
    path = Path(os.fspath(path))
    src, dst = graph.edges()
    ids = graph.original_ids
    if ids is not None:
        src, dst = ids[src], ids[dst]
    lines = [f"# {header or graph.name}",
             f"# Nodes: {graph.num_vertices} Edges: {graph.num_edges}",
             "# FromNodeId\tToNodeId"]
    pairs = np.column_stack([src, dst]).ravel().tolist()
    body = ("%d\t%d\n" * (len(pairs) // 2)) % tuple(pairs)     # one C-level formatting pass
    data = ("\n".join(lines) + "\n" + body).encode()
    if path.suffix == ".gz":
        data = gzip.compress(data, compresslevel=6, mtime=0)
    path.write_bytes(data)
    return path
