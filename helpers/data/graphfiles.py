"""Edge lists as graphs: SNAP's header comments, the Graph built from the pairs ``edgelist`` reads, and
the writer (atomic, optionally gzipped)."""
from __future__ import annotations

import contextlib
import gzip
import os
import re
import stat
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from helpers.core.arguments import (ArgumentError, GraphFormatError, as_path, check_flag, check_integer,
                                    host_array)
from helpers.core.graph import Graph, GraphFormatWarning, from_edges, relabel
from helpers.data.edgelist import (READ_ERRORS, damaged, edge_text, existing, file_kind, lines_of, opened,
                                   read_edge_pairs)

UNDIRECTED_HINT_EDGES = 10   # fewer non-loop edges than this: too few to guess from how they are listed
HEADER_LINES = 100


@dataclass(frozen=True)
class EdgeListHeader:
    """What the leading '#' lines of an edge list say ('# Directed graph', '# Nodes: X Edges: Y')."""

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
        """How the header's counts disagree with the graph read (its vertices, the body's edge lines)."""
        edges_agree = self.edges is None or self.edges == edge_lines
        if (self.nodes is None or self.nodes == vertices) and edges_agree:
            return None
        said = " and ".join(f"{v:,} {w}" for v, w in ((self.nodes, "nodes"), (self.edges, "edges"))
                            if v is not None)
        found = f"{vertices:,} {'distinct ids' if relabelled else 'vertices'} and {edge_lines:,} edge lines"
        if edges_agree and relabelled and self.nodes > vertices:
            return (f"the header says {said}, the body has {found}: {self.nodes - vertices:,} vertices have "
                    f"no edge in the file (an edge list cannot list isolated vertices) and are not in the "
                    f"graph")
        return f"the header says {said}, the body has {found}; the file may be incomplete or altered"


def read_header(path) -> EdgeListHeader:
    """The leading comment block of an edge list (at most 100 lines), parsed for SNAP's counts."""
    path = existing(path)
    lines = []
    try:
        with opened(path) as raw:
            for number, line in lines_of(raw, path):
                if edge_text(line) is not None or len(lines) >= HEADER_LINES \
                        or number > 10_000:                  # blank lines count too: a run of them ends
                    break
                if "#" in line:
                    lines.append(line.strip()[:1000])
    except READ_ERRORS as error:
        raise damaged(path, error) from None
    counts = re.search(r"\bnodes:\s*([0-9]+)\s*,?\s*edges:\s*([0-9]+)", " ".join(lines), re.IGNORECASE)
    nodes, edges = (int(counts[1]), int(counts[2])) if counts else (None, None)
    return EdgeListHeader(tuple(lines), nodes, edges)


def _check_pairs(pairs) -> np.ndarray:
    host_array(pairs, "pairs", fill="a masked id is no vertex id; drop those rows first (e.g. "
                                    "pairs[~pairs.mask.any(axis=1)].data)")
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
                f"num_vertices={num_vertices:,}, but the edges hold {original_ids.size:,} distinct ids; "
                f"with relabel_ids=True the graph has exactly one vertex per distinct id (relabelling "
                f"cannot name isolated vertices). Pass relabel_ids=False to keep the ids and have vertices "
                f"0..num_vertices-1")
        return from_edges(src, dst, original_ids.size, undirected=undirected,
                          original_ids=original_ids, name=name)
    return from_edges(src, dst, num_vertices, undirected=undirected, name=name)


def looks_undirected(pairs: np.ndarray) -> bool:
    """Whether the pairs are listed as SNAP lists an undirected graph: always smaller id first (or larger)."""
    pairs = _check_pairs(pairs)
    src, dst = pairs[:, 0], pairs[:, 1]
    loops = src == dst
    if int((~loops).sum()) < UNDIRECTED_HINT_EDGES:
        return False
    return bool((src[~loops] < dst[~loops]).all() or (src[~loops] > dst[~loops]).all())


def read_edge_list(path, *, relabel_ids: bool = True, num_vertices: int | None = None,
                   undirected: bool = False, name: str | None = None) -> Graph:
    """A Graph from a SNAP-style edge list (``relabel_ids``: ids mapped to 0..n-1, kept in ``original_ids``);
    a GraphFormatWarning where the header's counts or its direction disagree with the read."""
    relabel_ids = check_flag(relabel_ids, "relabel_ids")
    undirected = check_flag(undirected, "undirected")
    if num_vertices is not None:
        num_vertices = check_integer(num_vertices, "num_vertices", minimum=1)
    if name is not None and not isinstance(name, str):
        raise ArgumentError(f"name must be a string, got {name!r}")
    path = existing(path)
    header = read_header(path)
    pairs = read_edge_pairs(path, None if relabel_ids else num_vertices)
    graph = graph_from_pairs(pairs, relabel_ids=relabel_ids, num_vertices=num_vertices,
                             undirected=undirected, name=name or path.name.split(".")[0])
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
            warnings.warn(f"{path}: read as directed, but {why}; each line became one directed edge. If the "
                          f"graph is undirected, read it with read_edge_list(..., undirected=True)",
                          GraphFormatWarning, stacklevel=2)
    elif header.undirected is False:
        warnings.warn(f"{path}: read as undirected, but its header says the graph is directed; each line "
                      f"became two edges. If it is directed, read it with undirected=False",
                      GraphFormatWarning, stacklevel=2)
    return graph


def write_edge_list(graph: Graph, path, *, header: str | None = None, compresslevel: int = 6) -> Path:
    """Write a graph as a SNAP-style edge list, atomically, original ids if known (gzipped for .gz); the
    header (default: the graph's name) becomes one comment line."""
    if not isinstance(graph, Graph):
        raise ArgumentError(f"expected a Graph, got {type(graph).__name__}")
    if header is not None and not isinstance(header, str):
        raise ArgumentError(f"header must be a string, got {header!r}")
    if not 0 <= check_integer(compresslevel, "compresslevel", minimum=0) <= 9:
        raise ArgumentError(f"compresslevel must lie between 0 and 9 (gzip's levels), got {compresslevel}")
    path = as_path(path)
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
        data = gzip.compress(data, compresslevel=compresslevel, mtime=0)
    if not path.parent.is_dir():
        raise ArgumentError(f"{path}: cannot write the edge list: {path.parent} is not a folder")
    with contextlib.suppress(FileNotFoundError):
        mode = os.stat(path).st_mode
        if not stat.S_ISREG(mode):         # never replace a folder, a device or a pipe with a file
            raise ArgumentError(f"{path}: cannot write the edge list there: it is {file_kind(mode)}")
    write_atomically(path, lambda f: f.write(data))          # a reader never sees half a file
    return path


def write_atomically(path: Path, write) -> None:
    """Write through a temporary file renamed over ``path``: a reader never sees a partial file."""
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
