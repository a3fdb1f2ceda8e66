"""The registry of SNAP datasets and the checks of a downloaded file against it: hash, counts, and the
structure SNAP publishes (or, announced, the statistics a $PAGERANK_DATA_STATISTICS file gives)."""
from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from helpers.core.arguments import ArgumentError, GraphFormatError, check_flag, check_integer
from helpers.core.graph import Graph, GraphFormatWarning, statistics_of
from helpers.core.progress import say, warn
from helpers.data.cache import MAX_NAME, fit_name
from helpers.data.download import DownloadError, IntegrityError, redact
from helpers.data.edgelist import open_regular, read_edge_pairs
from helpers.data.graphfiles import graph_from_pairs, read_header
from helpers.data.settings import SettingError, describe_path, expand_home

BASE_URL_VARIABLE = "PAGERANK_DATA_URL"
STATISTICS_VARIABLE = "PAGERANK_DATA_STATISTICS"
DEFAULT_BASE_URL = "https://snap.stanford.edu/data/"
STATISTICS = {             # what SNAP's dataset pages publish, in SNAP's words
    "edges": "edges", "wcc_nodes": "nodes in the largest WCC", "wcc_edges": "edges in the largest WCC",
    "scc_nodes": "nodes in the largest SCC", "scc_edges": "edges in the largest SCC"}
DISPLAY_NAME = "name"      # in a $PAGERANK_DATA_STATISTICS entry: what the served file is (the Graph's name)


class UnknownDatasetError(KeyError):
    """A dataset name the registry does not know; the message lists the known ones."""


class URLSettingError(SettingError, DownloadError):
    """$PAGERANK_DATA_URL is not an http(s) address: a SettingError, and a DownloadError (so
    ``load_or_standin`` falls back, announced)."""


@dataclass(frozen=True)
class Fingerprint:
    """Statistics SNAP publishes for a dataset, counted as SNAP counts them (distinct edges; nodes and edges
    of the largest weakly and strongly connected components). None: not confirmed, so not checked."""

    edges: int | None = None
    wcc_nodes: int | None = None
    wcc_edges: int | None = None
    scc_nodes: int | None = None
    scc_edges: int | None = None
    source: str = ""

    def pinned(self) -> dict[str, int]:
        return {key: getattr(self, key) for key in STATISTICS if getattr(self, key) is not None}


@dataclass(frozen=True)
class Dataset:
    name: str
    filename: str
    directed: bool
    vertices: int        # distinct ids a correct parse finds
    listed_edges: int    # edge lines in the file (an undirected pair is one line, two directed edges)
    sha256: str | None = None
    description: str = ""
    fingerprint: Fingerprint | None = None

    def __post_init__(self):
        for key in ("name", "filename"):
            value = getattr(self, key)
            if (not isinstance(value, str) or value in ("", ".", "..") or any(c in value for c in "/\\\0")
                    or not value.isprintable()):
                raise ArgumentError(f"Dataset {key} must be a plain file name (no folders), got {value!r}")
        check_flag(self.directed, "directed")
        check_integer(self.vertices, "vertices", minimum=1)
        check_integer(self.listed_edges, "listed_edges", minimum=1)
        if self.sha256 is not None and not (isinstance(self.sha256, str) and len(self.sha256) == 64
                                            and all(c in "0123456789abcdef" for c in self.sha256)):
            raise ArgumentError(f"sha256 must be 64 lower-case hex digits, got {self.sha256!r}")
        if self.fingerprint is not None and not isinstance(self.fingerprint, Fingerprint):
            raise ArgumentError(f"fingerprint must be a Fingerprint, got {type(self.fingerprint).__name__}")

    @property
    def url(self) -> str:
        """Where the file is downloaded from, as it may be shown: without a user name and password."""
        base = os.environ.get(BASE_URL_VARIABLE, "").strip() or DEFAULT_BASE_URL
        return redact(base.rstrip("/") + "/" + self.filename)


# The published numbers, copied from SNAP's dataset pages (data/README.md says where each was confirmed).
# SNAP counts the edges of its graph object: duplicates merged, self-loops kept (the course's edge policy);
# for the undirected ego-Facebook an edge is an unordered pair. Each: name, file, directed, vertices, listed
# edges, SNAP's page, the Fingerprint's statistics, description.
DATASETS = {name: Dataset(name, f"{file}.txt.gz", directed, vertices, listed, description=description,
                          fingerprint=Fingerprint(*stats, f"https://snap.stanford.edu/data/{page}.html"))
            for name, file, directed, vertices, listed, page, stats, description in [
    ("web-Google", "web-Google", True, 875_713, 5_105_039, "web-Google",
     (5_105_039, 855_802, 5_066_842, 434_818, 3_419_124),
     "web pages and hyperlinks released by Google in 2002 (primary course graph)"),
    ("ego-Facebook", "facebook_combined", False, 4_039, 88_234, "ego-Facebook",
     (88_234, 4_039, 88_234, 4_039, 88_234), "Facebook friendships from survey participants (undirected)"),
    ("Wiki-Vote", "wiki-Vote", True, 7_115, 103_689, "wiki-Vote", (103_689, 7_066, 103_663, 1_300, 39_456),
     "who voted for whom in Wikipedia administrator elections"),
    ("soc-LiveJournal1", "soc-LiveJournal1", True, 4_847_571, 68_993_773, "soc-LiveJournal1",
     (68_993_773, 4_843_953, 68_983_820, 3_828_682, 65_825_429), "LiveJournal friendship links (for scale)"),
]}


def dataset(name_or_dataset) -> Dataset:
    """The registry's Dataset of that name (a Dataset passes through); else UnknownDatasetError."""
    if isinstance(name_or_dataset, Dataset):
        return name_or_dataset
    try:
        return DATASETS[name_or_dataset]
    except (KeyError, TypeError):
        raise UnknownDatasetError(f"unknown dataset {name_or_dataset!r}; known: "
                                  f"{', '.join(DATASETS)}") from None



def sha256_of(path: Path) -> str:
    with open_regular(path) as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def base_url() -> str:
    """$PAGERANK_DATA_URL if set, else SNAP's address; URLSettingError for one that is not http(s)."""
    raw = os.environ.get(BASE_URL_VARIABLE)
    if raw is None or not raw.strip():
        return DEFAULT_BASE_URL
    value = raw.strip()
    allowed = "only https:// addresses (or, with a warning, http://) can be used, e.g. " + DEFAULT_BASE_URL
    scheme = value.split(":", 1)[0].lower() if ":" in value else ""
    problem = None
    if not value.isprintable() or any(c.isspace() for c in value):
        problem = "it contains spaces or control characters"
    elif scheme not in ("http", "https"):
        problem = f"its scheme is {scheme}://" if scheme and "//" in value else "it has no http(s):// scheme"
    else:
        try:
            parts = urlsplit(value)
            parts.port                                 # raises on a malformed port
            problem = None if parts.hostname else "it names no host"
        except ValueError as error:
            problem = "it is not a valid address" + ("" if "@" in value else f" ({error})")   # no password
    if problem:
        raise URLSettingError(f"${BASE_URL_VARIABLE}={redact(raw)!r} cannot be used: {problem}; {allowed}")
    return value



def _statistics_file(path: str) -> dict[str, dict]:
    usage = (f"it must name a JSON file {{dataset name: {{statistic: number}}}} with statistics among "
             f"{', '.join(STATISTICS)} (and optionally {DISPLAY_NAME!r}: what the served file is)")
    try:
        with open_regular(expand_home(path)) as f:
            table = json.loads(f.read(1 << 20))
    except (OSError, ValueError, RecursionError, RuntimeError) as error:     # RuntimeError: '~nobody/'
        raise SettingError(f"${STATISTICS_VARIABLE}={path!r} cannot be used ({error}); {usage}") from None
    if not isinstance(table, dict) or not all(isinstance(v, dict) for v in table.values()):
        raise SettingError(f"${STATISTICS_VARIABLE}={path!r} cannot be used: {usage}")
    for name, entry in table.items():
        unknown = sorted(set(entry) - set(STATISTICS) - {DISPLAY_NAME})
        bad = [k for k, v in entry.items() if k != DISPLAY_NAME and v is not None
               and (isinstance(v, bool) or not isinstance(v, int) or v < 0)]
        if unknown or bad or not fit_name(entry.get(DISPLAY_NAME, "-")):
            problem = (f"unknown statistics {unknown}" if unknown else f"non-integer values for {bad}" if bad
                       else f"a {DISPLAY_NAME!r} that is not one line of at most {MAX_NAME} printable "
                            f"characters")
            raise SettingError(f"${STATISTICS_VARIABLE}={path!r}: entry {name!r} has {problem}; {usage}")
    return table


def expected_statistics(name_or_dataset) -> tuple[dict[str, int], str, str | None]:
    """The statistics a download must match, who says so, and its graph's name if not the dataset's: SNAP's,
    or (announced) the entry in the file $PAGERANK_DATA_STATISTICS names (for tests)."""
    ds = dataset(name_or_dataset)
    path = os.environ.get(STATISTICS_VARIABLE)
    entry = _statistics_file(path).get(ds.name) if path else None
    if entry is None:
        return (ds.fingerprint.pinned() if ds.fingerprint else {}), "SNAP", None
    say(f"NOTE: {ds.name}: integrity statistics taken from {describe_path(path)} (${STATISTICS_VARIABLE}) "
        f"instead of SNAP's published ones")
    return ({k: v for k, v in entry.items() if k != DISPLAY_NAME and v is not None}, path,
            entry.get(DISPLAY_NAME))


def check_download(ds: Dataset, path: Path, frames: int) -> tuple[Graph, dict]:
    """Parse the downloaded file and check its hash, counts and structure; the graph and what was seen.
    ``frames``: how far up the stack load's caller is, where a warning is reported."""
    seen = sha256_of(path)
    if ds.sha256 and seen != ds.sha256:
        raise IntegrityError(f"{ds.name}: sha256 {seen} does not match the pinned {ds.sha256}; "
                             "the file was altered or is another version")
    expected, source, shown = expected_statistics(ds)
    start = time.perf_counter()
    try:
        header = read_header(path)
        pairs = read_edge_pairs(path, max_lines=ds.listed_edges)   # a file that expands without end stops
        graph = graph_from_pairs(pairs, undirected=not ds.directed, name=shown or ds.name)
    except GraphFormatError as error:         # named by the file's name: the staging folder is gone
        raise IntegrityError(f"{ds.name}: the download cannot be parsed: "
                             f"{str(error).replace(str(path), path.name)}") from None
    parse_s, listed = time.perf_counter() - start, pairs.shape[0]
    if graph.num_vertices != ds.vertices or listed != ds.listed_edges:
        raise IntegrityError(f"{ds.name}: expected {ds.vertices:,} vertices and {ds.listed_edges:,} listed "
                             f"edges, the file gives {graph.num_vertices:,} and {listed:,}; it is "
                             f"incomplete or altered")
    problem = header.mismatch(graph.num_vertices, listed)
    if problem:
        warn(f"{ds.name}: {problem}", GraphFormatWarning, stacklevel=frames)
    if header.undirected is not None and header.undirected == ds.directed:
        warn(f"{ds.name}: the file's header says {'un' if header.undirected else ''}directed, the registry "
             f"lists it as {'' if ds.directed else 'un'}directed; read as the registry says",
             GraphFormatWarning, stacklevel=frames)
    who = "SNAP publishes" if source == "SNAP" else f"{source} says"
    start = time.perf_counter()
    found = statistics_of(graph, undirected=not ds.directed)
    wrong = [f"{STATISTICS[k]}: {who} {v:,}, the file gives {found[k]:,}"
             for k, v in expected.items() if found[k] != v]
    if wrong:
        raise IntegrityError(f"{ds.name}: the structure differs: " + "; ".join(wrong) +
                             "; the file was altered or is another version")
    return graph, {"sha256": seen, "sha256_pinned": ds.sha256 is not None, "vertices": graph.num_vertices,
                   "listed_edges": listed, "edges": graph.num_edges, "graph_name": graph.name,
                   "parse_seconds": round(parse_s, 3), "statistics": found,
                   "statistics_checked": sorted(expected), "statistics_source": source,
                   "check_seconds": round(time.perf_counter() - start, 3)}
