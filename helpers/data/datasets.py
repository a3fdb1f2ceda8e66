"""Real graphs from SNAP: a registry, a checked download into the cache, and an announced offline stand-in.
A download is staged in a folder named after its process, checked (gzip, hash, counts, SNAP's published
structure) and only then cached; the parsed graph is cached as .npz and used again only after its checks.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, urlsplit

from helpers.core.arguments import (ArgumentError, GraphFormatError, check_flag, check_integer, check_real,
                                    check_seed)
from helpers.core.generators import rmat_graph, web_graph
from helpers.core.graph import Graph, GraphFormatWarning, statistics_of
from helpers.core.progress import say, warn
from helpers.data import cache as store
from helpers.data.cache import ARRAYS, CACHE_FORMAT, MAX_NAME, VANISHED_RETRIES
from helpers.data.download import DownloadError, IntegrityError, check_limits, fetch, redact
from helpers.data.edgelist import open_regular, read_edge_pairs
from helpers.data.graphfiles import graph_from_pairs, read_header
from helpers.data.settings import SettingError, describe_path, expand_home

BASE_URL_VARIABLE = "PAGERANK_DATA_URL"
STATISTICS_VARIABLE = "PAGERANK_DATA_STATISTICS"
DEFAULT_BASE_URL = "https://snap.stanford.edu/data/"
BYTES_PER_EDGE_GUESS = 16  # for the deadline until the server sends a size (SNAP's gzip: ~4 per edge)
MAX_BYTES_PER_EDGE = 64    # a SNAP edge line is at most ~40 bytes: a larger body per edge is not the file
STANDIN_VERSION = 1        # raised whenever a generator changes what it makes for the same seed
STANDIN_ARRAYS = ARRAYS[:-1]
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


def _is_file(path: Path) -> bool:
    """Whether ``path`` is a regular file; False where it cannot be looked at (a name too long, ...)."""
    try:
        return path.is_file()
    except OSError:
        return False


def sha256_of(path: Path) -> str:
    with open_regular(path) as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


# --- where downloads come from and where the cache is ----------------------------------------------

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


def cache_dir(name_or_dataset) -> Path:
    """Where the dataset's cache is kept (created if need be): under the data directory, else the user
    cache ~/.cache/pagerank-on-the-gpu, else pagerank-on-the-gpu-<user id> in the temp directory."""
    return store.cache_folder(dataset(name_or_dataset).name)[0]


# --- checking what arrived ------------------------------------------------------------------------

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
        if unknown or bad or not store.fit_name(entry.get(DISPLAY_NAME, "-")):
            problem = (f"unknown statistics {unknown}" if unknown else f"non-integer values for {bad}" if bad
                       else f"a {DISPLAY_NAME!r} that is not one line of at most {MAX_NAME} printable "
                            f"characters")
            raise SettingError(f"${STATISTICS_VARIABLE}={path!r}: entry {name!r} has {problem}; {usage}")
    return table


def expected_statistics(name_or_dataset) -> tuple[dict[str, int], str, str | None]:
    """The statistics a download must match, who says so, and the name its graph gets if not the dataset's:
    SNAP's from the registry, or (announced) the dataset's entry in the file $PAGERANK_DATA_STATISTICS
    names, for tests that serve generated files."""
    ds = dataset(name_or_dataset)
    path = os.environ.get(STATISTICS_VARIABLE)
    entry = _statistics_file(path).get(ds.name) if path else None
    if entry is None:
        return (ds.fingerprint.pinned() if ds.fingerprint else {}), "SNAP", None
    say(f"NOTE: {ds.name}: integrity statistics taken from {describe_path(path)} (${STATISTICS_VARIABLE}) "
        f"instead of SNAP's published ones")
    return ({k: v for k, v in entry.items() if k != DISPLAY_NAME and v is not None}, path,
            entry.get(DISPLAY_NAME))


def _check(ds: Dataset, path: Path, frames: int) -> tuple[Graph, dict]:
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


# --- the parsed-graph cache: graph.npz and info.json ------------------------------------------------


# --- staging folders, named after the process that owns them ------------------------------------------


class _Vanished(Exception):
    """A file or folder of the cache disappeared under the load (another process deleting the cache)."""


# --- the public entry points ----------------------------------------------------------------------

def _download(ds: Dataset, folder: Path, raw: Path, limits: dict):
    """Download into a staging folder named after this process, check, and move the file into the cache
    only once it passed; _Vanished where the staging folder is deleted under it."""
    url = base_url().rstrip("/") + "/" + quote(ds.filename)
    shown = redact(url)                       # the request uses the user name and password, no message does
    if urlsplit(url).scheme.lower() == "http":
        say(f"WARNING: {ds.name}: {shown} is plain http://: the transfer is not authenticated; only the "
            f"checks of counts and structure below can catch an altered file")
    tag = store.owner_tag(os.getpid())
    try:
        staging = Path(tempfile.mkdtemp(prefix=f".download-{tag}-" if tag else ".download-", dir=folder))
    except FileNotFoundError:
        raise _Vanished(f"{describe_path(folder)} was removed") from None
    except OSError as error:
        raise DownloadError(f"{ds.name}: cannot stage the download in {folder} "
                            f"({error.strerror or error})") from None
    try:
        if limits["verbose"]:
            say(f"{ds.name}: downloading {shown}")
        fetched = staging / ds.filename
        try:
            fetch(url, fetched, name=ds.name, size_guess=BYTES_PER_EDGE_GUESS * ds.listed_edges, **limits)
        except DownloadError:
            if not staging.is_dir():
                raise _Vanished(f"the staging folder in {describe_path(folder)} was removed") from None
            raise
        graph, info = _check_kept(ds, fetched, frames=6)         # load > _load > _download > _check_kept
        try:
            os.replace(fetched, raw)
        except OSError as error:
            say(f"{ds.name}: could not keep the download in {describe_path(folder)} "
                f"({error.strerror or error}); the graph is used, but the file is not cached")
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return graph, {"url": shown, **info}


def _check_kept(ds: Dataset, path: Path, frames: int) -> tuple[Graph, dict]:
    """_check of a file in the cache, which another process may delete or replace meanwhile: _Vanished
    then, never a raw OSError or a verdict on half a file."""
    before = None
    try:
        before = os.stat(path)
        return _check(ds, path, frames)
    except (OSError, IntegrityError) as error:
        try:
            same = before is not None and os.path.samestat(before, os.stat(path))
        except OSError:
            same = False
        if not same:
            raise _Vanished(f"{path.name} was removed while it was read") from None
        if isinstance(error, OSError):
            raise IntegrityError(f"{ds.name}: {path.name} cannot be read "
                                 f"({error.strerror or type(error).__name__})") from None
        raise


def load(name_or_dataset="web-Google", *, retries: int = 3, timeout: float = 60.0, progress: bool = True,
         verbose: bool = True, deadline: float | None = None) -> Graph:
    """The dataset as a Graph: from the cache if there, else downloaded (``retries`` attempts, ``timeout``
    seconds per read, ``deadline`` for it all), checked and cached. DownloadError (nothing fetched) or
    IntegrityError (fetched but wrong) leave no file in the cache. A cache deleted meanwhile: tried again."""
    ds = dataset(name_or_dataset)
    limits = {**check_limits(retries, timeout, deadline, progress, verbose),
              "max_bytes": (1 << 20) + MAX_BYTES_PER_EDGE * ds.listed_edges}
    record = {"name": ds.name, "vertices": ds.vertices, "listed_edges": ds.listed_edges,
              "directed": ds.directed}
    store.tell_if_passed_over()
    for root in store.candidate_roots():
        store.remove_abandoned(root / ds.name)
    for attempt in range(1, VANISHED_RETRIES + 1):
        try:
            return _load(ds, record, limits)
        except _Vanished as vanished:
            if verbose and attempt < VANISHED_RETRIES:
                say(f"{ds.name}: {vanished} (another process deleting the cache?); loading again")
            last = vanished
    raise DownloadError(f"{ds.name}: the cache kept disappearing during the load ({last}, {VANISHED_RETRIES} "
                        f"times): is another process deleting it?")


def _load(ds: Dataset, record: dict, limits: dict) -> Graph:
    """One try of ``load``: the cache, else the file kept, else a download."""
    verbose = limits["verbose"]
    for root in store.candidate_roots():
        try:
            graph = store.cached_graph(root / ds.name, record)
        except store.Unusable as why:
            if verbose:
                say(f"{ds.name}: the cache in {describe_path(root / ds.name)} cannot be used ({why}); "
                    f"building it again")
            continue
        if graph is not None:
            if verbose:
                say(f"{graph.name}: loaded from the cache in {describe_path(root / ds.name)}")
            return graph
    folder, passed = store.cache_folder(ds.name)
    if passed:
        say(f"{ds.name}: cannot write to {'; '.join(passed)}; keeping the cache in "
            f"{describe_path(folder.parent)} instead")
    raw = next((root / ds.name / ds.filename for root in store.candidate_roots()   # kept earlier, maybe in
                if _is_file(root / ds.name / ds.filename)), folder / ds.filename)   # a folder now read-only
    if not _is_file(raw):
        graph, info = _download(ds, folder, raw, limits)
    else:
        try:
            graph, info = _check_kept(ds, raw, frames=5)            # load > _load > _check_kept
        except IntegrityError as error:
            try:
                raw.unlink(missing_ok=True)     # a damaged cached file is never used, and never kept
                what = "was removed: the next call downloads it again"
            except OSError as failure:
                what = (f"could not be removed ({failure.strerror}): delete it, and the next call downloads "
                        f"it again")
            raise IntegrityError(f"{error} (the cached file {raw} {what})") from None
        info = {"url": ds.url, **info}
    info = {**record, **info}
    _keep_parsed(graph, folder, info)
    if verbose:
        found, source = info["statistics"], info["statistics_source"]
        checked = ("nothing pinned to check them against" if not info["statistics_checked"] else
                   "as SNAP publishes" if source == "SNAP" else f"as {describe_path(source)} says")
        say(f"{graph.name}: {graph.num_vertices:,} vertices, {ds.listed_edges:,} listed edges, parsed in "
            f"{info['parse_seconds']:.1f} s; sha256 {info['sha256']} (" + ("matches the pinned hash)" if
            ds.sha256 else "no hash is pinned for it; counts and structure were checked)"))
        say(f"{graph.name}: largest WCC {found['wcc_nodes']:,} nodes / {found['wcc_edges']:,} edges, "
            f"largest SCC {found['scc_nodes']:,} / {found['scc_edges']:,} ({checked})")
    return graph


def _keep_parsed(graph: Graph, folder: Path | None, info: dict, keys=ARRAYS, verbose: bool = True) -> None:
    """Cache the parsed graph in ``folder`` (None: nowhere to keep it), or say why it is not kept."""
    try:
        if folder is not None:
            store.save(graph, folder, info, keys)
    except OSError as error:
        if verbose:
            again = "generated" if keys != ARRAYS else "parsed"
            say(f"{graph.name}: not kept in the cache in {describe_path(folder)} "
                f"({error.strerror or error}); it is used, but {again} again next time")


def cached_info(name_or_dataset="web-Google") -> dict | None:
    """What the cache recorded for a dataset (url, hash seen, counts, statistics, parse time), or None; an
    address recorded with a user name and password (by an older version) is returned without them."""
    ds = dataset(name_or_dataset)
    for root in store.candidate_roots():
        try:
            info = store.read_info(root / ds.name)
        except store.Unusable:
            continue
        if info is not None and info.get("format") == CACHE_FORMAT and info.get("name") == ds.name:
            return {**info, "url": redact(info["url"])} if isinstance(info.get("url"), str) else info
    return None


def standin(name_or_dataset="web-Google", seed: int = 0, *, fraction: float = 1.0, cache: bool = True,
            progress: bool = True, verbose: bool = True) -> Graph:
    """A generated graph of the dataset's size, named as a stand-in: for web-Google the web-like generator
    (its published shape), for the others R-MAT. Generated once and cached, checked like a download; a
    ``fraction`` below 1 (a lecture's test scale) scales both counts and is generated each time, quietly."""
    ds = dataset(name_or_dataset)
    seed = check_seed(seed, rng=False)
    fraction = check_real(fraction, "fraction", low=1e-6, high=1)
    cache, progress = check_flag(cache, "cache") and fraction == 1, check_flag(progress, "progress")
    verbose = check_flag(verbose, "verbose")
    folder = graph = None
    if cache:
        store.tell_if_passed_over()
        try:
            folder = store.cache_folder(f"stand-in-{ds.name}-seed{seed}-v{STANDIN_VERSION}")[0]
            record = {"seed": seed, "generator_version": STANDIN_VERSION, "vertices": ds.vertices}
            graph = store.cached_graph(folder, record, STANDIN_ARRAYS)
        except (DownloadError, store.Unusable):    # no folder to keep it in, or a damaged one: generate again
            pass
    if graph is not None:
        if verbose:
            say(f"{graph.name}: loaded from the cache in {describe_path(folder)}")
        return graph
    n, m = ds.vertices, ds.listed_edges if ds.directed else 2 * ds.listed_edges
    size = ""
    if fraction < 1:
        n, m = max(2, round(n * fraction)), max(1, round(m * fraction))
        share = f"1/{1 / fraction:.0f}" if (1 / fraction).is_integer() else f"{fraction:.3g}"
        size, progress = f" at {share} of its size", False
    generate, kind = (web_graph, "web-like graph") if ds.name == "web-Google" else (rmat_graph, "R-MAT")
    graph = generate(n, m, seed=seed, progress=progress,
                     name=f"stand-in for {ds.name}{size} (generated {kind}, {n:,} vertices, {m:,} edges)")
    _keep_parsed(graph, folder, {"name": graph.name, "vertices": n, "edges": graph.num_edges, "seed": seed,
                                 "generator_version": STANDIN_VERSION}, STANDIN_ARRAYS, verbose)
    return graph


def load_or_standin(name_or_dataset="web-Google", *, fraction: float = 1.0, download: bool | None = None,
                    **kwargs) -> Graph:
    """``load``; where the download fails, say so plainly and return the generated stand-in instead (a
    damaged or altered file still raises IntegrityError). A ``fraction`` below 1 sizes the stand-in and,
    unless ``download`` is True, skips the download: a download is always the whole graph."""
    ds = dataset(name_or_dataset)
    fraction = check_real(fraction, "fraction", low=1e-6, high=1)
    if not check_flag(fraction == 1 if download is None else download, "download"):
        graph = standin(ds, fraction=fraction)
        say(f"{graph.name}: generated, not downloaded (the test scale's graph)")
        return graph
    try:
        return load(ds, **kwargs)
    except DownloadError as error:
        size = "of the same size" if fraction == 1 else f"at {fraction:.3g} of its size (the test scale)"
        say(f"Could not download {ds.name}: {str(error).rstrip('.')}.\n"
            f"Using a generated stand-in {size} instead. It is not the real graph: every table and plot "
            f"below names the graph it ran on.")
        return standin(ds, fraction=fraction)
