"""Graphs as the course stores them: out-CSR, in-CSR (the transpose, for pull kernels) and degrees.

Edge policy, shared by the reference and every kernel: duplicate edges are merged into one (a page
that links to another twice still casts one vote) and self-loops are kept as ordinary edges (a page
that links to itself keeps part of its own rank). networkx's DiGraph follows the same policy.
"""
from __future__ import annotations

import gzip
import io
import numbers
import os
import re
import warnings
import zlib
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np

INT32_EDGE_LIMIT = 2**31  # from this many edges on, offsets no longer fit in int32
MAX_VERTICES = 2**31 - 1  # vertex ids are stored as int32
INT64_LIMIT = 2**63       # ids in files and id arrays must lie below this (they are stored as int64)
UTF8_BOM = b"\xef\xbb\xbf"


class GraphFormatError(ValueError):
    """An edge list that cannot become a graph; the message names the file and line where it can."""


class ArgumentError(ValueError, TypeError):
    """A parameter of the wrong type or out of range. Both a ValueError and a TypeError, so either
    ``except`` catches it (as NumPy's AxisError is both a ValueError and an IndexError)."""


class GraphFormatWarning(UserWarning):
    """An edge list that can be read but probably not as meant (a header that disagrees with the body,
    an undirected file read as directed)."""


# --- argument checks shared by the helpers ----------------------------------------------------------

def check_integer(value, name: str, *, minimum: int | None = None) -> int:
    """``value`` as a Python int: integers and NumPy integers pass; floats (even 2.0), bools and strings do
    not, so that nothing is silently truncated."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise ArgumentError(f"{name} must be an integer, got {value!r} ({type(value).__name__})")
    value = int(value)
    if minimum is not None and value < minimum:
        raise ArgumentError(f"{name} must be at least {minimum}, got {value}")
    return value


def check_flag(value, name: str) -> bool:
    """``value`` as a bool: only True and False (NumPy's included) pass, so that 'no' or 2 is not read as True."""
    if not isinstance(value, (bool, np.bool_)):
        raise ArgumentError(f"{name} must be True or False, got {value!r} ({type(value).__name__})")
    return bool(value)


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
        sizes = f"{self.num_vertices:,} vertices, {self.num_edges:,} edges, "
        if f"{self.num_vertices:,} vertices" in self.name:       # a stand-in's name already says its size
            sizes = ""
        return f"Graph({self.name!r}: {sizes}{int(self.dangling.sum()):,} dangling)"


def sorted_unique(values: np.ndarray) -> np.ndarray:
    """np.unique by sorting: on integer keys much faster than the hash-based path of NumPy 2.4."""
    values = np.sort(values)
    if values.size:
        values = values[np.concatenate([[True], values[1:] != values[:-1]])]
    return values


def relabel(sources, targets) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Map sparse ids onto 0..n-1 in increasing id order; returns (sources, targets, original_ids)."""
    sources = _as_id_array(sources, "sources")
    targets = _as_id_array(targets, "targets")
    if sources.size != targets.size:
        raise GraphFormatError(f"sources and targets differ in length ({sources.size} against {targets.size})")
    both = np.concatenate([sources, targets])
    if both.size and 0 <= both.min() and both.max() < 8 * both.size:
        # Compact ids (the usual case): a lookup table is linear time.
        present = np.zeros(int(both.max()) + 1, dtype=bool)
        present[both] = True
        original_ids = np.flatnonzero(present)
        lookup = np.cumsum(present, dtype=np.int64) - 1
        compact = lookup[both].astype(np.int32)
    else:
        original_ids = sorted_unique(both)
        if original_ids.size > MAX_VERTICES:
            raise GraphFormatError(f"{original_ids.size:,} distinct ids do not fit the course's int32 vertex ids")
        compact = np.searchsorted(original_ids, both).astype(np.int32)
    return compact[: sources.size], compact[sources.size:], original_ids.astype(np.int64)


def _as_id_array(values, what: str) -> np.ndarray:
    """A 1-D int64 array of ids, refusing what would be wrapped or truncated: floats, bools, and ids beyond
    int64 (a uint64 id of 2**63 is reported as itself, not as -2**63)."""
    try:
        array = np.asarray(values)
    except (OverflowError, ValueError, TypeError):
        array = np.asarray(values, dtype=object)
    if array.ndim != 1:
        raise GraphFormatError(f"{what} must be a 1-D array of vertex ids, got shape {array.shape}")
    if array.size == 0:
        return np.zeros(0, dtype=np.int64)
    if array.dtype == object:
        if not all(isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_)) for v in array):
            bad = next(v for v in array if not isinstance(v, numbers.Integral) or isinstance(v, (bool, np.bool_)))
            raise GraphFormatError(f"{what} must hold integer vertex ids, found {bad!r}")
        for i, v in enumerate(array):
            if not -INT64_LIMIT <= int(v) < INT64_LIMIT:
                raise GraphFormatError(f"{what}[{i}] = {int(v)} does not fit in 64 bits (ids must lie below 2**63)")
        return array.astype(np.int64)
    if array.dtype.kind not in "iu":
        raise GraphFormatError(f"{what} must hold integer vertex ids, got dtype {array.dtype}")
    if array.dtype.kind == "u" and array.dtype.itemsize == 8:
        big = np.flatnonzero(array >= np.uint64(INT64_LIMIT))
        if big.size:
            i = int(big[0])
            raise GraphFormatError(f"{what}[{i}] = {int(array[i])} does not fit in 64 bits "
                                   f"(ids must lie below 2**63)")
    return array.astype(np.int64, copy=False)


def from_edges(sources, targets, num_vertices: int | None = None, *, undirected: bool = False,
               original_ids=None, name: str = "graph") -> Graph:
    """Build a Graph from two arrays of vertex ids in 0..num_vertices-1 (edge i is sources[i] -> targets[i]).

    ``num_vertices`` (an integer) defaults to the largest id + 1; vertices without edges are kept (isolated).
    ``undirected=True`` turns every listed pair into two directed edges. ``original_ids``, if given, holds one
    distinct integer id per vertex: the id each vertex had in the input.
    """
    undirected = check_flag(undirected, "undirected")
    if not isinstance(name, str):
        raise ArgumentError(f"name must be a string, got {name!r}")
    src = _as_id_array(sources, "sources")
    dst = _as_id_array(targets, "targets")
    if src.size != dst.size:
        raise GraphFormatError(f"sources and targets differ in length ({src.size} against {dst.size})")
    if num_vertices is None:
        if src.size == 0:
            raise GraphFormatError("empty graph: no edges and no num_vertices to say how many vertices")
        num_vertices = int(max(src.max(), dst.max())) + 1
    n = check_integer(num_vertices, "num_vertices")
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
    if original_ids is not None:
        original_ids = _check_original_ids(original_ids, n)
    if undirected:
        src, dst = np.concatenate([src, dst]), np.concatenate([dst, src])
    return _build(n, src, dst, original_ids, name)


def _check_original_ids(original_ids, n: int) -> np.ndarray:
    """One distinct int64 id per vertex, or a GraphFormatError saying what is wrong."""
    ids = _as_id_array(original_ids, "original_ids")
    if ids.size != n:
        raise GraphFormatError(f"original_ids needs one id per vertex ({n:,}), got {ids.size:,}")
    if n > 1 and not (np.diff(ids) > 0).all():       # relabelled ids are increasing: the usual, linear case
        ordered = np.sort(ids)
        repeated = np.flatnonzero(ordered[1:] == ordered[:-1])
        if repeated.size:
            raise GraphFormatError(f"original_ids must be distinct; {int(ordered[repeated[0]])} occurs twice")
    return ids


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
    return Graph(n, out_offsets, out_targets, in_offsets, in_sources, out_degree.astype(np.int32),
                 original_ids, name)


def check_csr(num_vertices: int, out_offsets, out_targets, in_offsets, in_sources, out_degree,
              original_ids=None, *, thorough: bool = True) -> None:
    """Raise GraphFormatError unless the arrays form a graph that is safe to use: the dtypes the kernels
    expect, consistent shapes, offsets that start at 0, never decrease and end at the edge count, every id in
    0..n-1, and out-degrees that agree with the offsets. With ``thorough`` (the default), also rows listed in
    strictly increasing order and in-degrees equal to the counts of out-link targets: passes over all edges
    that a content hash can stand in for.

    Run on arrays from outside (a cache file) before anything indexes with them: an id of 10**9 must be
    refused here, not reach SciPy or a kernel.
    """
    n = check_integer(num_vertices, "num_vertices", minimum=1)
    arrays = dict(out_offsets=out_offsets, out_targets=out_targets, in_offsets=in_offsets, in_sources=in_sources,
                  out_degree=out_degree)
    if original_ids is not None:
        arrays["original_ids"] = original_ids
    for key, array in arrays.items():
        if not isinstance(array, np.ndarray) or array.ndim != 1:
            raise GraphFormatError(f"{key} must be a 1-D NumPy array, got {type(array).__name__} "
                                   f"of shape {getattr(array, 'shape', None)}")
    m = out_targets.size
    wanted = dict(out_offsets=(offsets_dtype(m), n + 1), out_targets=(np.int32, m),
                  in_offsets=(offsets_dtype(m), n + 1), in_sources=(np.int32, m), out_degree=(np.int32, n),
                  original_ids=(np.int64, n))
    for key, array in arrays.items():
        dtype, size = wanted[key]
        if array.dtype != dtype or array.size != size:
            raise GraphFormatError(f"{key} must be {np.dtype(dtype)} of length {size:,} for {n:,} vertices and "
                                   f"{m:,} edges, got {array.dtype} of length {array.size:,}")
    for offsets, ids, key in ((out_offsets, out_targets, "out"), (in_offsets, in_sources, "in")):
        if offsets[0] != 0 or offsets[-1] != m:
            raise GraphFormatError(f"{key}_offsets must run from 0 to the edge count {m:,}, "
                                   f"got {int(offsets[0]):,}..{int(offsets[-1]):,}")
        degree = np.diff(offsets)
        if (degree < 0).any():
            v = int(np.flatnonzero(degree < 0)[0])
            raise GraphFormatError(f"{key}_offsets decrease at vertex {v}")
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
        if key == "in" and thorough and m and not np.array_equal(degree, np.bincount(out_targets, minlength=n)):
            raise GraphFormatError("in_offsets disagree with the targets of the out-links: not a transpose")


# --- edge-list files ----------------------------------------------------------------------------------

_READ_ERRORS = (EOFError, OSError, zlib.error)
_INTEGER = re.compile(r"[+-]?[0-9]+")
UNDIRECTED_HINT_EDGES = 10   # fewer non-loop edges than this: too few to guess from how they are listed


class EdgeListNotFound(GraphFormatError, FileNotFoundError):
    """No edge-list file at the path given (a GraphFormatError and a FileNotFoundError)."""


def _open_bytes(path: Path):
    return gzip.open(path, "rb") if path.suffix == ".gz" else open(path, "rb")


def _has_bom(path: Path) -> bool:
    with _open_bytes(path) as raw:
        return raw.read(len(UTF8_BOM)) == UTF8_BOM


def _open_text(path: Path):
    """The file as text, independent of the locale: bytes decoded as latin-1 (every byte is a character, so
    no comment can fail to decode; ids are ASCII digits either way) after a UTF-8 byte-order mark is skipped."""
    raw = _open_bytes(path)
    if _has_bom(path):
        raw.read(len(UTF8_BOM))
    return io.TextIOWrapper(raw, encoding="latin-1", newline=None)


def _damaged(path: Path, error) -> GraphFormatError:
    what = "the compressed file is damaged or truncated" if path.suffix == ".gz" else "the file cannot be read"
    return GraphFormatError(f"{path}: {what} ({type(error).__name__}: {error})")


def _shown(text: str, limit: int = 60) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "...")


def _first_bad_line(path: Path, num_vertices: int | None) -> str | None:
    """Slow, exact pass: the first line that breaks the format, described; None if every line is fine."""
    with _open_text(path) as lines:
        for number, line in enumerate(lines, start=1):
            text = line.split("#", 1)[0].strip()
            if not text:
                continue
            tokens = text.split()            # the whitespace NumPy's parser splits on
            if len(tokens) != 2:
                return (f"line {number}: expected two vertex ids (source target), "
                        f"found {len(tokens)} column(s): {_shown(line.rstrip())}")
            for token in tokens:
                if not _INTEGER.fullmatch(token):
                    return f"line {number}: {_shown(token)} is not an integer vertex id"
                value = int(token)
                if value < 0:
                    return f"line {number}: negative vertex id {value}"
                if value >= INT64_LIMIT:
                    return f"line {number}: vertex id {value} does not fit in 64 bits (ids must lie below 2**63)"
                if num_vertices is not None and value >= num_vertices:
                    return (f"line {number}: vertex id {value} is beyond the declared vertex count "
                            f"{num_vertices} (ids run 0..{num_vertices - 1})")
    return None


def _existing(path) -> Path:
    path = Path(os.fspath(path))
    if not path.is_file():
        raise EdgeListNotFound(f"no edge-list file at {path}")
    return path


def read_edge_pairs(path, num_vertices: int | None = None, *, max_lines: int | None = None) -> np.ndarray:
    """The (k, 2) int64 array of id pairs in a SNAP-style edge list, one row per edge line, checked:
    integers only, two per line, none negative, all below ``num_vertices`` when it is given. Comments may
    hold any bytes; a malformed body line raises GraphFormatError naming the file and the line. With
    ``max_lines``, reading stops after one line more and a longer file is refused: memory stays bounded
    even for a compressed file that expands without end."""
    path = _existing(path)
    if num_vertices is not None:
        num_vertices = check_integer(num_vertices, "num_vertices", minimum=1)
    if max_lines is not None:
        max_lines = check_integer(max_lines, "max_lines", minimum=1)
    rows = None if max_lines is None else max_lines + 1
    try:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)  # "input contained no data": handled below
                if _has_bom(path):                    # rare: through a wrapper that skips the mark
                    with _open_text(path) as text:
                        pairs = np.loadtxt(text, dtype=np.int64, comments="#", ndmin=2, max_rows=rows)
                else:                                 # NumPy's own reader is twice as fast as a wrapper
                    pairs = np.loadtxt(path, dtype=np.int64, comments="#", ndmin=2, encoding="latin-1",
                                       max_rows=rows)
        except ValueError as error:
            detail = _first_bad_line(path, num_vertices)
            raise GraphFormatError(f"{path}: {detail or error}") from None
        if pairs.size == 0:
            raise GraphFormatError(f"{path}: no edges found (the file is empty or holds only comments)")
        if max_lines is not None and pairs.shape[0] > max_lines:
            raise GraphFormatError(f"{path}: more than {max_lines:,} edge lines")
        if pairs.shape[1] != 2 or (pairs < 0).any() or (num_vertices is not None and (pairs >= num_vertices).any()):
            detail = _first_bad_line(path, num_vertices)
            raise GraphFormatError(f"{path}: {detail or 'expected two vertex ids per line'}")
    except _READ_ERRORS as error:
        raise _damaged(path, error) from None
    return pairs


@dataclass(frozen=True)
class EdgeListHeader:
    """What the leading '#' lines of an edge list say. SNAP writes '# Directed graph ...' or
    '# Undirected graph ...' and '# Nodes: X Edges: Y' (Y counts edge lines)."""

    lines: tuple[str, ...] = ()
    nodes: int | None = None
    edges: int | None = None

    @property
    def undirected(self) -> bool | None:
        """True where a line says 'undirected', False where one says 'directed', None where none says."""
        text = " ".join(self.lines).lower()
        if re.search(r"\bundirected\b", text):
            return True
        return False if re.search(r"\bdirected\b", text) else None

    def mismatch(self, vertices: int, edge_lines: int, *, relabelled: bool = True) -> str | None:
        """How the header's counts disagree with the graph read (its vertices, the body's edge lines), or None."""
        if (self.nodes is None or self.nodes == vertices) and (self.edges is None or self.edges == edge_lines):
            return None
        said = " and ".join(f"{v:,} {w}" for v, w in ((self.nodes, "nodes"), (self.edges, "edges")) if v is not None)
        found = f"{vertices:,} {'distinct ids' if relabelled else 'vertices'} and {edge_lines:,} edge lines"
        if (self.edges is None or self.edges == edge_lines) and relabelled and self.nodes > vertices:
            return (f"the header says {said}, the body has {found}: {self.nodes - vertices:,} vertices have no edge "
                    f"in the file (an edge list cannot list isolated vertices) and are not in the graph")
        return f"the header says {said}, the body has {found}; the file may be incomplete or altered"


HEADER_LINES = 100


def read_header(path) -> EdgeListHeader:
    """The leading comment block of an edge list (at most 100 lines), parsed for SNAP's counts."""
    path = _existing(path)
    lines = []
    try:
        with _open_text(path) as text:
            for line in text:
                stripped = line.strip()
                if not stripped:
                    continue
                if not stripped.startswith("#") or len(lines) >= HEADER_LINES:
                    break
                lines.append(stripped[:1000])
    except _READ_ERRORS as error:
        raise _damaged(path, error) from None
    counts = re.search(r"\bnodes:\s*([0-9]+)\s*,?\s*edges:\s*([0-9]+)", " ".join(lines), re.IGNORECASE)
    nodes, edges = (int(counts[1]), int(counts[2])) if counts else (None, None)
    return EdgeListHeader(tuple(lines), nodes, edges)


def _check_pairs(pairs) -> np.ndarray:
    if not isinstance(pairs, np.ndarray) or pairs.ndim != 2 or pairs.shape[1] != 2:
        raise ArgumentError(f"pairs must be a (k, 2) array of ids as read_edge_pairs returns, "
                            f"got {type(pairs).__name__} of shape {getattr(pairs, 'shape', None)}")
    return pairs


def graph_from_pairs(pairs: np.ndarray, *, relabel_ids: bool = True, num_vertices: int | None = None,
                     undirected: bool = False, name: str = "graph") -> Graph:
    """A Graph from an id-pair array as ``read_edge_pairs`` returns it (see ``read_edge_list``)."""
    pairs = _check_pairs(pairs)
    if num_vertices is not None:
        num_vertices = check_integer(num_vertices, "num_vertices", minimum=1)
    src, dst = pairs[:, 0], pairs[:, 1]
    if check_flag(relabel_ids, "relabel_ids"):
        src, dst, original_ids = relabel(src, dst)
        if num_vertices is not None and num_vertices != original_ids.size:
            raise GraphFormatError(
                f"num_vertices={num_vertices:,}, but the edges hold {original_ids.size:,} distinct ids; with "
                f"relabel_ids=True the graph has exactly one vertex per distinct id (relabelling cannot name "
                f"isolated vertices). Pass relabel_ids=False to keep the ids and have vertices 0..num_vertices-1")
        return from_edges(src, dst, original_ids.size, undirected=undirected,
                          original_ids=original_ids, name=name)
    return from_edges(src, dst, num_vertices, undirected=undirected, name=name)


def looks_undirected(pairs: np.ndarray) -> bool:
    """Is the edge list stored the way SNAP stores an undirected graph: each pair once, always from the
    smaller id to the larger (or always the other way), so that no edge has its reverse listed?"""
    pairs = _check_pairs(pairs)
    src, dst = pairs[:, 0], pairs[:, 1]
    loops = src == dst
    if int((~loops).sum()) < UNDIRECTED_HINT_EDGES:
        return False
    return bool((src[~loops] < dst[~loops]).all() or (src[~loops] > dst[~loops]).all())


def read_edge_list(path, *, relabel_ids: bool = True, num_vertices: int | None = None,
                   undirected: bool = False, name: str | None = None) -> Graph:
    """Read a SNAP-style edge list ('#' comments, two integer ids per line, optionally gzipped).

    Comments may hold any bytes and a UTF-8 byte-order mark is skipped: the file is read as bytes, whatever
    the locale. With ``relabel_ids`` (the default) sparse ids become 0..n-1 and ``original_ids`` keeps the
    mapping; a ``num_vertices`` given then must equal the number of distinct ids (relabelling cannot name
    isolated vertices), else GraphFormatError. Without relabelling, ids are used as they are and must lie
    below ``num_vertices`` (default: largest id + 1); ids that do not occur become isolated vertices.

    ``undirected=False`` reads each line u v as one directed edge u -> v. SNAP stores an undirected graph
    (ego-Facebook, the com-* graphs) with each pair listed once, so such a file needs ``undirected=True``,
    which adds v -> u for every line. A GraphFormatWarning says when a directed read looks like a mistake (a
    header that says 'Undirected', or every pair listed once from the smaller id to the larger, as SNAP
    writes undirected graphs), and when a '# Nodes: X Edges: Y' header disagrees with the body.
    """
    relabel_ids = check_flag(relabel_ids, "relabel_ids")
    undirected = check_flag(undirected, "undirected")
    if num_vertices is not None:
        num_vertices = check_integer(num_vertices, "num_vertices", minimum=1)
    if name is not None and not isinstance(name, str):
        raise ArgumentError(f"name must be a string, got {name!r}")
    path = _existing(path)
    header = read_header(path)
    pairs = read_edge_pairs(path, None if relabel_ids else num_vertices)
    graph = graph_from_pairs(pairs, relabel_ids=relabel_ids, num_vertices=num_vertices, undirected=undirected,
                             name=name or path.name.split(".")[0])
    if header.nodes is not None or header.edges is not None:
        problem = header.mismatch(graph.num_vertices, pairs.shape[0], relabelled=relabel_ids)
        if problem:
            warnings.warn(f"{path}: {problem}", GraphFormatWarning, stacklevel=2)
    if not undirected:
        said = header.undirected
        if said or (said is None and looks_undirected(pairs)):
            why = ("its header says the graph is undirected" if said else
                   "every pair is listed once, from the smaller id to the larger (or always the other way), "
                   "which is how SNAP stores an undirected graph")
            warnings.warn(f"{path}: read as directed, but {why}; each line became one directed edge. If the graph "
                          f"is undirected, read it with read_edge_list(..., undirected=True)",
                          GraphFormatWarning, stacklevel=2)
    elif header.undirected is False:
        warnings.warn(f"{path}: read as undirected, but its header says the graph is directed; each line became "
                      f"two edges. If it is directed, read it with undirected=False", GraphFormatWarning,
                      stacklevel=2)
    return graph


def write_edge_list(graph: Graph, path, *, header: str | None = None) -> Path:
    """Write a graph as a SNAP-style edge list (gzipped when the name ends in .gz), original ids if known.
    The header (default: the graph's name) becomes one comment line, whatever line breaks it holds."""
    if not isinstance(graph, Graph):
        raise ArgumentError(f"expected a Graph, got {type(graph).__name__}")
    if header is not None and not isinstance(header, str):
        raise ArgumentError(f"header must be a string, got {header!r}")
    path = Path(os.fspath(path))
    src, dst = graph.edges()
    ids = graph.original_ids
    if ids is not None:
        src, dst = ids[src], ids[dst]
    title = " ".join((header or graph.name).split())      # a line break would end the comment mid-header
    lines = [f"# {title}",
             f"# Nodes: {graph.num_vertices} Edges: {graph.num_edges}",
             "# FromNodeId\tToNodeId"]
    pairs = np.column_stack([src, dst]).ravel().tolist()
    body = ("%d\t%d\n" * (len(pairs) // 2)) % tuple(pairs)     # one C-level formatting pass
    data = ("\n".join(lines) + "\n" + body).encode()
    if path.suffix == ".gz":
        data = gzip.compress(data, compresslevel=6, mtime=0)
    path.write_bytes(data)
    return path


class GraphTooLargeError(MemoryError):
    """A graph, or a layout built from it, needs more memory (host or GPU) or wider indices than there are;
    the message gives the arithmetic and how to make it smaller."""
