"""Real graphs from SNAP: a registry, a checked download into the cache, and an announced offline stand-in.

Downloads go through pooch's HTTP downloader (requests underneath: a per-read timeout, redirects within
http(s)), with an overall deadline, a size limit and retries of what retrying can cure. A file is moved into
the cache only once its gzip stream, its hash (where one is pinned), its vertex and edge counts and its
structure (the connected-component sizes SNAP publishes) are right. The parsed graph is cached as .npz,
written atomically, and used again only after its arrays pass the CSR checks and a content hash.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import ssl
import tempfile
import threading
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, urljoin, urlsplit

import numpy as np
import pooch

from .course import describe_path, DATA_DIR_VARIABLE, data_dir
from .edgelist import graph_from_pairs, open_regular, read_edge_pairs, read_header
from .graph import (ArgumentError, Graph, GraphFormatError, GraphFormatWarning, check_csr, check_flag,
                    check_host_memory, check_integer, offsets_dtype)

BASE_URL_VARIABLE = "PAGERANK_DATA_URL"
STATISTICS_VARIABLE = "PAGERANK_DATA_STATISTICS"
DEFAULT_BASE_URL = "https://snap.stanford.edu/data/"
CACHE_FORMAT = 2
USER_CACHE = ("~", ".cache", "pagerank-on-the-gpu")   # where the cache goes when the data directory is read-only

MIN_RATE = 10_000          # bytes/s: the default deadline allows the file's size at this rate ...
DEADLINE_SLACK = 120.0     # ... plus this many seconds
BYTES_PER_EDGE_GUESS = 16  # for the default deadline when the server sends no size (SNAP's gzip: ~4 per edge)
MAX_BYTES_PER_EDGE = 64    # a SNAP edge line is at most ~40 bytes: a body larger than this per edge is not it
RETRY_PAUSE = 1.0          # seconds before the second attempt, doubled for each further one (at most 8x)
MAX_REDIRECTS = 10
CHUNK = 1 << 16
HEADERS = {"Accept-Encoding": "identity", "Connection": "close", "User-Agent": "pagerank-on-the-gpu"}

STATISTICS = {             # what SNAP's dataset pages publish, in SNAP's words
    "edges": "edges",
    "wcc_nodes": "nodes in the largest WCC",
    "wcc_edges": "edges in the largest WCC",
    "scc_nodes": "nodes in the largest SCC",
    "scc_edges": "edges in the largest SCC",
}
DISPLAY_NAME = "name"      # in a $PAGERANK_DATA_STATISTICS entry: what the served file is, for the Graph's name
ARRAYS = ("out_offsets", "out_targets", "in_offsets", "in_sources", "out_degree", "original_ids")


class DownloadError(RuntimeError):
    """The file could not be fetched (network, host, HTTP status, deadline, timeout); nothing was cached."""


class IntegrityError(RuntimeError):
    """The file arrived but is not what the registry describes; nothing was cached."""


class UnknownDatasetError(KeyError):
    """A dataset name the registry does not know; the message lists the known ones."""


class SettingError(ValueError):
    """An environment setting ($PAGERANK_DATA_URL, $PAGERANK_DATA_STATISTICS) that cannot be used."""


class URLSettingError(SettingError, DownloadError):
    """$PAGERANK_DATA_URL is not an http(s) address: nothing can be downloaded, so ``load_or_standin`` falls
    back (announced, naming the variable); a SettingError and a DownloadError both."""


@dataclass(frozen=True)
class Fingerprint:
    """Statistics SNAP publishes for a dataset, counted as SNAP counts them: distinct edges (for an undirected
    graph a pair once), and the nodes and edges (both ends inside) of the largest weakly and strongly
    connected components. SNAP publishes no checksum; these catch a file altered with the same counts.
    None: not confirmed from a source, so not checked."""

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
        base = os.environ.get(BASE_URL_VARIABLE) or DEFAULT_BASE_URL
        return base.rstrip("/") + "/" + self.filename


# The published numbers, copied from SNAP's dataset pages (see data/README.md for the copies they were
# confirmed against). SNAP counts the edges of its graph object: duplicates merged, self-loops kept, which
# is the course's edge policy; for the undirected ego-Facebook, an edge is an unordered pair.
DATASETS = {d.name: d for d in [
    Dataset("web-Google", "web-Google.txt.gz", True, 875_713, 5_105_039,
            description="web pages and hyperlinks released by Google in 2002 (primary course graph)",
            fingerprint=Fingerprint(5_105_039, 855_802, 5_066_842, 434_818, 3_419_124,
                                    "https://snap.stanford.edu/data/web-Google.html")),
    Dataset("ego-Facebook", "facebook_combined.txt.gz", False, 4_039, 88_234,
            description="Facebook friendships from survey participants (undirected)",
            fingerprint=Fingerprint(88_234, 4_039, 88_234, 4_039, 88_234,
                                    "https://snap.stanford.edu/data/ego-Facebook.html")),
    Dataset("Wiki-Vote", "wiki-Vote.txt.gz", True, 7_115, 103_689,
            description="who voted for whom in Wikipedia administrator elections",
            fingerprint=Fingerprint(103_689, 7_066, 103_663, 1_300, 39_456,
                                    "https://snap.stanford.edu/data/wiki-Vote.html")),
    Dataset("soc-LiveJournal1", "soc-LiveJournal1.txt.gz", True, 4_847_571, 68_993_773,
            description="LiveJournal friendship links (for scale)",
            fingerprint=Fingerprint(68_993_773, 4_843_953, 68_983_820, 3_828_682, 65_825_429,
                                    "https://snap.stanford.edu/data/soc-LiveJournal1.html")),
]}


def dataset(name_or_dataset) -> Dataset:
    if isinstance(name_or_dataset, Dataset):
        return name_or_dataset
    try:
        return DATASETS[name_or_dataset]
    except (KeyError, TypeError):
        raise UnknownDatasetError(f"unknown dataset {name_or_dataset!r}; known: {', '.join(DATASETS)}") from None


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open_regular(path) as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def sha256_of_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# --- where downloads come from --------------------------------------------------------------------

def base_url() -> str:
    """The address downloads come from: $PAGERANK_DATA_URL if set, else SNAP's. Only https:// and http://
    addresses are accepted; anything else raises URLSettingError naming the variable and what is allowed."""
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
            if not parts.hostname:
                problem = "it names no host"
        except ValueError as error:
            problem = f"it is not a valid address ({error})"
    if problem:
        raise URLSettingError(f"${BASE_URL_VARIABLE}={raw!r} cannot be used: {problem}; {allowed}")
    return value


def _source_url(ds: Dataset) -> str:
    return base_url().rstrip("/") + "/" + quote(ds.filename)


# --- where the cache is ---------------------------------------------------------------------------

def _candidate_roots() -> list[Path]:
    """Cache roots in order of preference: the data directory's cache/, the user cache, the temp folder."""
    roots = []
    try:
        roots.append(data_dir() / "cache")
    except OSError:                                   # data_dir() creates the folder and fails where it cannot
        configured = os.environ.get(DATA_DIR_VARIABLE)
        if configured:
            roots.append(Path(configured).expanduser() / "cache")
    try:
        roots.append(Path(*USER_CACHE).expanduser() / "cache")
    except RuntimeError:                              # no home directory
        pass
    user = os.getuid() if hasattr(os, "getuid") else "user"
    roots.append(Path(tempfile.gettempdir()) / f"pagerank-on-the-gpu-{user}" / "cache")
    unique = []
    for root in roots:
        if root not in unique:
            unique.append(root)
    return unique


def _unwritable(folder: Path) -> str | None:
    """None if files can be written in ``folder`` (created if need be), else why not."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
        return None
    except OSError as error:
        return error.strerror or type(error).__name__


def _cache_folder(ds: Dataset) -> tuple[Path, list[str]]:
    """The first writable cache folder for ``ds`` and, for each one passed over, where and why."""
    passed = []
    for root in _candidate_roots():
        why = _unwritable(root / ds.name)
        if why is None:
            return root / ds.name, passed
        passed.append(f"{root.parent} ({why})")
    raise DownloadError(f"{ds.name}: no folder to keep the download in: cannot write to " + "; ".join(passed))


def cache_dir(name_or_dataset) -> Path:
    """Where the dataset's cache is kept (created if need be): under the data directory, or, where that cannot
    be written, the user cache ~/.cache/pagerank-on-the-gpu, or a folder in the temp directory."""
    return _cache_folder(dataset(name_or_dataset))[0]


# --- downloading ----------------------------------------------------------------------------------

class _Retry(Exception):
    """A failure another attempt may cure (connection, reset, timeout, HTTP 5xx); says what happened."""


class _Transfer:
    """One attempt, shared by the thread that runs pooch's downloader and the caller that watches it: the
    response hook (every answer, redirects included) and the file-like target the body is written to."""

    def __init__(self, file, limit: int):
        self.file, self.limit = file, limit
        self.received, self.total, self.hops = 0, None, 0
        self.response, self.error, self.answered, self.cancelled = None, None, False, False
        self.notes = []                    # warnings for the caller to print (a redirect to plain http)

    def hook(self, response, *args, **kwargs):
        if response.is_redirect:
            self.hops += 1
            target = urljoin(response.url, response.headers["Location"])
            scheme = urlsplit(target).scheme.lower()
            if scheme not in ("http", "https"):
                raise DownloadError(f"the server redirected to {target[:200]!r}, which is not an http(s):// address")
            if self.hops > MAX_REDIRECTS:
                raise DownloadError(f"more than {MAX_REDIRECTS} redirects")
            if scheme == "http" and urlsplit(response.url).scheme.lower() == "https":
                self.notes.append(f"redirected from https:// to plain http:// ({target[:200]}): the transfer is "
                                  f"not authenticated")
            return response
        self.response = response
        length = response.headers.get("Content-Length", "").strip()
        self.total = int(length) if length.isdigit() else None
        if response.status_code == 200 and self.total is not None and self.total > self.limit:
            raise IntegrityError(f"the server announces {self.total:,} bytes, more than an edge list of this size "
                                 f"can take ({self.limit:,}); it is not the dataset")
        self.answered = response.status_code == 200
        return response

    def write(self, data: bytes) -> None:
        if self.cancelled:
            raise DownloadError("cancelled")
        self.received += len(data)
        if self.received > self.limit:
            raise IntegrityError(f"the server sent more than {self.limit:,} bytes, more than an edge list of this "
                                 f"size can take; it is not the dataset")
        try:
            self.file.write(data)
        except OSError as error:
            raise DownloadError(f"could not write the download: {error.strerror or error}") from None

    def flush(self) -> None:
        pass

    def cancel(self) -> None:
        """Stop the other thread: no more writes, and a read that waits on the socket wakes up."""
        self.cancelled = True
        connection = getattr(getattr(self.response, "raw", None), "connection", None)
        sock = getattr(connection, "sock", None)
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def _causes(error: BaseException) -> list[BaseException]:
    """The error and everything it wraps (causes, contexts, urllib3's reasons, exceptions in args)."""
    seen, todo = [], [error]
    while todo:
        item = todo.pop(0)
        if not isinstance(item, BaseException) or any(item is s for s in seen):
            continue
        seen.append(item)
        todo += [getattr(item, "reason", None), item.__cause__, item.__context__, *getattr(item, "args", ())]
    return seen


PLAIN_HTTP_REASONS = {"WRONG_VERSION_NUMBER", "RECORD_LAYER_FAILURE", "PACKET_LENGTH_TOO_LONG", "UNKNOWN_PROTOCOL",
                      "HTTP_REQUEST", "UNEXPECTED_RECORD"}


def _tls_problem(causes) -> str:
    certificate = next((c for c in causes if isinstance(c, ssl.SSLCertVerificationError)), None)
    if certificate is not None:
        return (f"the server's TLS certificate was refused ({certificate.verify_message or certificate.reason}); "
                f"the address may not be the server it claims to be")
    tls = [c for c in causes if isinstance(c, ssl.SSLError)]
    text = " ".join(str(c) for c in tls).lower()
    if any(getattr(c, "reason", None) in PLAIN_HTTP_REASONS for c in tls) or any(
            phrase in text for phrase in ("wrong version number", "record layer failure", "packet length too long")):
        return ("the server does not speak TLS: it answered an https:// request in plain HTTP; check the scheme "
                "of the address (a plain-HTTP mirror needs http://)")
    reason = next((c.reason for c in tls if getattr(c, "reason", None)), None)
    return f"the TLS connection failed ({reason or 'handshake error'})"


def _connection_problem(causes) -> str:
    """A short, library-free description of why a connection could not be made or was lost."""
    if any(isinstance(c, socket.gaierror) or type(c).__name__ == "NameResolutionError" for c in causes):
        return "the host name could not be resolved (no network, or a wrong address)"
    if any(isinstance(c, ConnectionRefusedError) for c in causes):
        return "the connection was refused (nothing listens at that address)"
    if any(isinstance(c, ConnectionResetError) for c in causes):
        return "the connection was reset"
    if any(type(c).__name__ in ("RemoteDisconnected", "IncompleteRead") for c in causes):
        return "the server closed the connection"
    system = next((c for c in causes if isinstance(c, OSError) and c.strerror), None)
    return system.strerror if system is not None else type(causes[-1]).__name__


def _classify(error: BaseException, transfer: _Transfer, timeout: float) -> BaseException:
    """Turn whatever requests raised into _Retry (worth another attempt) or the project's own errors."""
    import http.client

    import requests

    if isinstance(error, (_Retry, DownloadError, IntegrityError)):
        return error
    causes = _causes(error)
    if any(isinstance(c, ssl.SSLError) for c in causes) and not transfer.answered:
        if any(isinstance(c, ssl.SSLEOFError) for c in causes):
            return _Retry("the server closed the connection during the TLS handshake")
        return DownloadError(_tls_problem(causes))
    status = getattr(getattr(error, "response", None), "status_code", None)
    if isinstance(error, requests.HTTPError) and status is not None:
        reason = "".join(c for c in str(error.response.reason or "")[:60] if c.isprintable())
        answer = f"the server answered HTTP {status}" + (f" ({reason})" if reason else "")
        return _Retry(answer) if status >= 500 or status in (408, 429) else DownloadError(answer)
    short = next((c for c in causes if type(c).__name__ == "IncompleteRead" and isinstance(c.partial, int)), None)
    received = max(transfer.received, short.partial if short else 0)     # urllib3 counts what it dropped too
    got = f"{received:,}" + (f" of {transfer.total:,}" if transfer.total is not None else "")
    if isinstance(error, requests.exceptions.ConnectTimeout):
        return _Retry(f"could not connect: no answer within {timeout:g} s")
    if any(isinstance(c, (requests.exceptions.ReadTimeout, socket.timeout, TimeoutError)) or
           type(c).__name__ == "ReadTimeoutError" for c in causes):
        return _Retry(f"the server sent nothing for {timeout:g} s " + (f"in the middle of the body ({got} bytes "
                      f"written)" if transfer.answered else "(no answer to the request)"))
    if transfer.answered:
        return _Retry(f"the connection was lost after {got} bytes ({_connection_problem(causes)})")
    odd = next((c for c in causes if isinstance(c, http.client.HTTPException) and not isinstance(c, ConnectionError)
                and type(c).__name__ != "IncompleteRead"), None)
    if odd is not None:
        return DownloadError(f"the server's answer is not valid HTTP ({type(odd).__name__})")
    if isinstance(error, (requests.exceptions.ConnectionError, ConnectionError)):
        problem = _connection_problem(causes)
        if problem.startswith("the host name could not be resolved"):   # seconds later it will not resolve
            return DownloadError(f"could not connect: {problem}")         # either: no network, say so at once
        return _Retry(f"could not connect: {problem}")
    if isinstance(error, (requests.exceptions.InvalidURL, requests.exceptions.InvalidSchema,
                          requests.exceptions.MissingSchema, ValueError, UnicodeError)):
        return DownloadError(f"the address cannot be used ({type(error).__name__})")
    return DownloadError(f"unexpected {type(error).__name__}: {str(error)[:200]}")


def _attempt(url: str, part: Path, limits: dict, clock: dict, *, label: str, progress: bool) -> None:
    """One attempt: pooch's downloader in a worker thread, watched from this one for the deadline (which a
    server sending a byte a second never reaches through the per-read timeout) and drawing the progress bar."""
    from .progress import bar

    try:
        out = open(part, "wb")
    except OSError as error:
        raise DownloadError(f"could not write the download to {part.parent}: {error.strerror or error}") from None
    transfer = _Transfer(out, limits["max_bytes"])
    downloader = pooch.HTTPDownloader(progressbar=False, chunk_size=CHUNK, timeout=limits["timeout"],
                                      headers=HEADERS, hooks={"response": transfer.hook})

    def work():
        try:
            downloader(url, transfer, None)
        except BaseException as error:      # noqa: BLE001: reported by the caller's thread
            transfer.error = error

    worker = threading.Thread(target=work, daemon=True, name=f"download of {label}")
    shown = None
    try:
        worker.start()
        while worker.is_alive():
            worker.join(0.1)
            if shown is None and transfer.answered:        # the server answered: notes, size, progress bar
                for note in transfer.notes:
                    print(f"WARNING: {label}: {note}")
                clock["size"] = transfer.total or clock["size"]
                shown = bar(transfer.total, label, unit="B", unit_scale=True, unit_divisor=1024, enabled=progress)
            if shown is not None:
                shown.update(transfer.received - shown.n)
            end = _deadline(clock)
            if time.monotonic() > end and worker.is_alive():
                got = f"{transfer.received:,}" + (f" of {transfer.total:,}" if transfer.total else "")
                raise DownloadError(f"the download did not finish within its deadline of {end - clock['start']:.0f} s "
                                    f"({got} bytes arrived); pass deadline= for more time")
        if transfer.error is not None:
            raise _classify(transfer.error, transfer, limits["timeout"])
    finally:
        transfer.cancel()                                   # before the file closes: no late write reaches it
        out.close()
        if shown is not None:
            shown.close()


def _deadline(clock: dict) -> float:
    """When the download must have finished: the given deadline, else 120 s plus its size at MIN_RATE."""
    return clock["start"] + (clock["deadline"] or DEADLINE_SLACK + clock["size"] / MIN_RATE)


def _fetch(ds: Dataset, url: str, dest: Path, limits: dict, *, progress: bool, verbose: bool) -> None:
    """Download ``url`` into ``dest``, retrying what retrying can cure, within one overall deadline."""
    clock = {"start": time.monotonic(), "deadline": limits["deadline"],
             "size": BYTES_PER_EDGE_GUESS * ds.listed_edges}
    last = None
    for attempt in range(1, limits["retries"] + 1):
        part = dest.with_name(f"{dest.name}.part{attempt}")   # a late write of an abandoned attempt cannot
        try:                                                  # reach the next attempt's file
            _attempt(url, part, limits, clock, label=ds.filename, progress=progress)
            os.replace(part, dest)
            return
        except _Retry as retry:
            last = str(retry)
        except IntegrityError as error:
            raise IntegrityError(f"{ds.name}: {url}: {error}") from None
        except DownloadError as error:
            raise DownloadError(f"{url}: {error}") from None
        pause = RETRY_PAUSE * min(2.0 ** (attempt - 1), 8.0)
        if attempt == limits["retries"] or time.monotonic() + pause > _deadline(clock):
            break
        if verbose:
            print(f"{ds.name}: attempt {attempt} of {limits['retries']} failed ({last}); trying again in {pause:g} s")
        time.sleep(pause)
    tries = f" ({attempt} attempts)" if attempt > 1 else ""
    raise DownloadError(f"{url}: {last}{tries}")


# --- checking what arrived ------------------------------------------------------------------------

def statistics_of(graph: Graph, *, undirected: bool = False) -> dict[str, int]:
    """The statistics SNAP publishes, computed from a graph with SciPy: distinct edges, and the nodes and edges
    (both ends inside) of the largest weakly and strongly connected components. ``undirected=True`` counts as
    SNAP does for an undirected graph (built with both directions): a pair once, a self-loop once."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components

    if not isinstance(graph, Graph):
        raise ArgumentError(f"expected a helpers.graph.Graph, got {type(graph).__name__}")
    undirected = check_flag(undirected, "undirected")
    n = graph.num_vertices
    matrix = csr_matrix((np.ones(graph.num_edges, dtype=np.int8), graph.out_targets, graph.out_offsets),
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


def _statistics_file(path: str) -> dict[str, dict]:
    usage = (f"it must name a JSON file {{dataset name: {{statistic: number}}}} with statistics among "
             f"{', '.join(STATISTICS)} (and optionally {DISPLAY_NAME!r}: what the served file is)")
    try:
        with open_regular(Path(path).expanduser()) as f:
            table = json.loads(f.read(1 << 20))
    except (OSError, ValueError) as error:
        raise SettingError(f"${STATISTICS_VARIABLE}={path!r} cannot be used ({error}); {usage}") from None
    if not isinstance(table, dict) or not all(isinstance(v, dict) for v in table.values()):
        raise SettingError(f"${STATISTICS_VARIABLE}={path!r} cannot be used: {usage}")
    for name, entry in table.items():
        unknown = sorted(set(entry) - set(STATISTICS) - {DISPLAY_NAME})
        bad = [k for k, v in entry.items() if k != DISPLAY_NAME and v is not None
               and (isinstance(v, bool) or not isinstance(v, int) or v < 0)]
        shown = entry.get(DISPLAY_NAME, "-")
        named = isinstance(shown, str) and shown.strip() and shown.isprintable() and len(shown) <= 200
        if unknown or bad or not named:
            problem = (f"unknown statistics {unknown}" if unknown else f"non-integer values for {bad}" if bad
                       else f"a {DISPLAY_NAME!r} that is not one line of at most 200 printable characters")
            raise SettingError(f"${STATISTICS_VARIABLE}={path!r}: entry {name!r} has {problem}; {usage}")
    return table


def expected_statistics(name_or_dataset) -> tuple[dict[str, int], str, str | None]:
    """The statistics a download must match, who says so, and the name to give the graph where it is not the
    dataset itself: SNAP's published statistics from the registry (and no name), or, where
    $PAGERANK_DATA_STATISTICS names a JSON file with an entry for the dataset, that entry instead (for tests
    that serve generated files: its "name" says what the file is; announced, since it replaces SNAP's numbers)."""
    ds = dataset(name_or_dataset)
    path = os.environ.get(STATISTICS_VARIABLE)
    if path:
        table = _statistics_file(path)
        if ds.name in table:
            print(f"NOTE: {ds.name}: integrity statistics taken from {describe_path(path)} (${STATISTICS_VARIABLE}) "
                  f"instead of SNAP's published ones")
            entry = table[ds.name]
            return ({k: v for k, v in entry.items() if k != DISPLAY_NAME and v is not None}, path,
                    entry.get(DISPLAY_NAME))
    return (ds.fingerprint.pinned() if ds.fingerprint else {}), "SNAP", None


def _check(ds: Dataset, path: Path) -> tuple[Graph, dict]:
    """Parse the downloaded file and check its hash, counts and structure; returns the graph and what was seen."""
    seen = sha256_of(path)
    if ds.sha256 and seen != ds.sha256:
        raise IntegrityError(f"{ds.name}: sha256 {seen} does not match the pinned {ds.sha256}; "
                             "the file was altered or is another version")
    expected, source, shown = expected_statistics(ds)
    start = time.perf_counter()
    try:
        header = read_header(path)
        pairs = read_edge_pairs(path, max_lines=ds.listed_edges)     # a file that expands without end stops here
        graph = graph_from_pairs(pairs, undirected=not ds.directed, name=shown or ds.name)
    except GraphFormatError as error:
        raise IntegrityError(f"{ds.name}: the download cannot be parsed: {error}") from None
    parse_s = time.perf_counter() - start
    listed = pairs.shape[0]
    if graph.num_vertices != ds.vertices or listed != ds.listed_edges:
        raise IntegrityError(f"{ds.name}: expected {ds.vertices:,} vertices and {ds.listed_edges:,} listed edges, "
                             f"the file gives {graph.num_vertices:,} and {listed:,}; it is incomplete or altered")
    problem = header.mismatch(graph.num_vertices, listed)
    if problem:
        warnings.warn(f"{ds.name}: {problem}", GraphFormatWarning, stacklevel=3)
    if header.undirected is not None and header.undirected == ds.directed:
        warnings.warn(f"{ds.name}: the file's header says {'un' if header.undirected else ''}directed, the "
                      f"registry lists it as {'' if ds.directed else 'un'}directed; read as the registry says",
                      GraphFormatWarning, stacklevel=3)
    who = "SNAP publishes" if source == "SNAP" else f"{source} says"
    start = time.perf_counter()
    found = statistics_of(graph, undirected=not ds.directed)
    wrong = [f"{STATISTICS[k]}: {who} {v:,}, the file gives {found[k]:,}" for k, v in expected.items() if found[k] != v]
    if wrong:
        raise IntegrityError(f"{ds.name}: the structure differs: " + "; ".join(wrong) +
                             "; the file was altered or is another version")
    info = {"sha256": seen, "sha256_pinned": ds.sha256 is not None, "vertices": graph.num_vertices,
            "listed_edges": listed, "edges": graph.num_edges, "graph_name": graph.name,
            "parse_seconds": round(parse_s, 3), "statistics": found, "statistics_checked": sorted(expected),
            "statistics_source": source, "check_seconds": round(time.perf_counter() - start, 3)}
    return graph, info


# --- the parsed-graph cache -----------------------------------------------------------------------

class _Unusable(Exception):
    """The cache is there but cannot be used; says why."""


def _arrays_sha256(arrays: dict) -> str:
    digest = hashlib.sha256()
    for key in (k for k in ARRAYS if k in arrays):
        array = np.ascontiguousarray(arrays[key])
        digest.update(f"{key}:{array.dtype.str}:{array.size};".encode())
        digest.update(array)
    return digest.hexdigest()


def _write_atomically(path: Path, write) -> None:
    """Write through a temporary file in the same folder and rename it over ``path``: a reader sees the old
    file or the new one, never a partial or empty one."""
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise


def _save(graph: Graph, folder: Path, info: dict, keys=ARRAYS) -> None:
    arrays = {k: getattr(graph, k) for k in keys}
    info = {"format": CACHE_FORMAT, **info, "arrays_sha256": _arrays_sha256(arrays)}
    _write_atomically(folder / "graph.npz", lambda f: np.savez(f, **arrays))    # the arrays first: an info.json
    _write_atomically(folder / "info.json", lambda f: f.write(json.dumps(info, indent=1).encode()))  # never
    # describes arrays that are not there yet


def _read_info(folder: Path) -> dict | None:
    """info.json as a dict, or None where it is missing; _Unusable where it is there but not a usable record."""
    try:
        with open_regular(folder / "info.json") as f:
            info = json.loads(f.read(1 << 20))
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as error:
        raise _Unusable(f"info.json: {error.strerror or error}") from None
    except ValueError as error:
        raise _Unusable(f"info.json unreadable ({type(error).__name__}: {str(error)[:100]})") from None
    if not isinstance(info, dict):
        raise _Unusable(f"info.json holds a {type(info).__name__}, not a record")
    return info


def _read_arrays(path: Path, n: int, m: int, keys=ARRAYS) -> dict[str, np.ndarray]:
    """The arrays of graph.npz, for n vertices and m edges, read with np.load(allow_pickle=False) from a
    regular file only, each after its .npy header said the dtype and length expected and the host's memory
    was checked: a damaged or hostile file makes us allocate nothing else, and never blocks."""
    wanted = {"out_offsets": (offsets_dtype(m), n + 1), "out_targets": (np.int32, m),
              "in_offsets": (offsets_dtype(m), n + 1), "in_sources": (np.int32, m), "out_degree": (np.int32, n),
              "original_ids": (np.int64, n)}
    wanted = {key: (np.dtype(wanted[key][0]), wanted[key][1]) for key in keys}
    check_host_memory(sum(d.itemsize * size for d, size in wanted.values()), f"reading {path.name}",
                      f"{n:,} vertices and {m:,} edges", "delete the cache folder")
    with open_regular(path) as f, np.load(f, allow_pickle=False) as archive:
        if not hasattr(archive, "files") or sorted(archive.files) != sorted(wanted):
            raise _Unusable(f"graph.npz holds {', '.join(sorted(getattr(archive, 'files', []))) or 'no arrays'}, "
                            f"not the arrays expected")
        for key, (dtype, size) in wanted.items():
            with archive.zip.open(f"{key}.npy") as member:
                version = np.lib.format.read_magic(member)
                reader = {(1, 0): np.lib.format.read_array_header_1_0,
                          (2, 0): np.lib.format.read_array_header_2_0}.get(version)
                if reader is None:
                    raise _Unusable(f"{key}: unknown .npy version {version}")
                shape, _, found = reader(member)
            if found != dtype or shape != (size,):
                raise _Unusable(f"{key} is {found} of shape {shape}, expected {dtype} of ({size},)")
        return {key: archive[key] for key in wanted}


def _read_cache(ds: Dataset, folder: Path) -> Graph | None:
    """The cached graph, or None where there is none; _Unusable where one is there but fails a check. Nothing
    from the file is used before it passed: the record, the array headers, the CSR rules, the content hash."""
    info = _read_info(folder)
    if info is None:
        return None
    try:
        if info.get("format") != CACHE_FORMAT:
            raise _Unusable(f"cache format {info.get('format')!r}, this version writes {CACHE_FORMAT}")
        if (info.get("name"), info.get("vertices"), info.get("listed_edges"), info.get("directed")) != (
                ds.name, ds.vertices, ds.listed_edges, ds.directed):
            raise _Unusable("it describes another dataset or version")
        return _graph_from_cache(folder, info, ds.vertices, ds.name, ARRAYS)
    except _Unusable:
        raise
    except GraphFormatError as error:
        raise _Unusable(str(error)) from None
    except OSError as error:         # a FIFO or a folder where graph.npz should be, unreadable, ...
        raise _Unusable(f"{Path(error.filename or 'graph.npz').name}: {error.strerror or error}") from None
    except Exception as error:       # noqa: BLE001: any damage (BadZipFile, EOFError, ...) means: parse again
        raise _Unusable(f"{type(error).__name__}: {str(error)[:100]}") from None


def _graph_from_cache(folder: Path, info: dict, n: int, name: str, keys) -> Graph:
    m, digest, shown = info.get("edges"), info.get("arrays_sha256"), info.get("graph_name", name)
    if isinstance(m, bool) or not isinstance(m, int) or not 0 <= m <= n ** 2 or not isinstance(digest, str):
        raise _Unusable("info.json lacks the edge count or the content hash")
    if not (isinstance(shown, str) and shown.isprintable() and 0 < len(shown) <= 200):
        raise _Unusable("info.json's graph name cannot be used")
    arrays = _read_arrays(folder / "graph.npz", n, m, keys)
    check_csr(n, **arrays, thorough=False)      # row order and transposition: the content hash says
    if "original_ids" in arrays and n > 1 and not (np.diff(arrays["original_ids"]) > 0).all():
        raise _Unusable("original_ids are not increasing")
    if _arrays_sha256(arrays) != digest:
        raise _Unusable("the arrays do not match their recorded content hash")
    return Graph(n, name=shown, **arrays)


def _load_cached(ds: Dataset, verbose: bool) -> tuple[Graph, Path] | None:
    for root in _candidate_roots():
        folder = root / ds.name
        try:
            graph = _read_cache(ds, folder)
        except _Unusable as why:
            if verbose:
                print(f"{ds.name}: the cache in {describe_path(folder)} cannot be used ({why}); building it again")
            continue
        if graph is not None:
            return graph, folder
    return None


# --- the public entry points ----------------------------------------------------------------------

STALE_STAGING = 24 * 3600     # seconds: a staging folder this old was left by an interrupted run


def _remove_stale_staging(folder: Path) -> None:
    """Remove staging folders that interrupted runs left behind (a web-Google download is 20 MB each); a
    young one may belong to a download running in another process, so it stays."""
    now = time.time()
    for staging in folder.glob(".download-*"):
        try:
            if now - staging.stat().st_mtime > STALE_STAGING:
                shutil.rmtree(staging, ignore_errors=True)
        except OSError:
            pass


def _seconds(value, name: str, *, allow_none: bool = False) -> float | None:
    if value is None and allow_none:
        return None
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ArgumentError(f"{name} must be a number, got {value!r}")
    if not (np.isfinite(value) and value > 0):
        raise ArgumentError(f"{name} must be positive and finite, got {value}")
    return float(value)


def _kept_file(ds: Dataset, folder: Path) -> Path:
    """The downloaded file kept earlier, maybe in a folder now read-only; else where the download goes."""
    for root in _candidate_roots():
        candidate = root / ds.name / ds.filename
        if candidate.is_file():
            return candidate
    return folder / ds.filename


def _download(ds: Dataset, folder: Path, raw: Path, limits: dict, progress: bool, verbose: bool):
    """Download into a staging folder, check, and move the file into the cache only once it passed."""
    url = _source_url(ds)
    if urlsplit(url).scheme.lower() == "http":
        print(f"WARNING: {ds.name}: {url} is plain http://: the transfer is not authenticated; only the checks "
              f"of counts and structure below can catch an altered file")
    _remove_stale_staging(folder)
    try:
        staging = Path(tempfile.mkdtemp(prefix=".download-", dir=folder))
    except OSError as error:
        raise DownloadError(f"{ds.name}: cannot stage the download in {folder} ({error.strerror or error})") from None
    try:
        if verbose:
            print(f"{ds.name}: downloading {url}")
        fetched = staging / ds.filename
        _fetch(ds, url, fetched, limits, progress=progress, verbose=verbose)
        graph, info = _check(ds, fetched)
        try:
            os.replace(fetched, raw)
        except OSError as error:
            print(f"{ds.name}: could not keep the download in {describe_path(folder)} ({error.strerror or error}); "
                  f"the graph is used, but the file is not cached")
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return graph, {"url": url, **info}


def load(name_or_dataset="web-Google", *, retries: int = 3, timeout: float = 60.0, progress: bool = True,
         verbose: bool = True, deadline: float | None = None) -> Graph:
    """The dataset as a Graph: from the cache if there, else downloaded, checked and cached.

    ``retries`` attempts at most; ``timeout`` seconds to connect and for any one read; ``deadline`` seconds for
    the whole download, retries included (default: 120 s plus the size at 10 kB/s). Raises DownloadError
    (nothing fetched) or IntegrityError (fetched but wrong); neither leaves a file in the cache.
    """
    ds = dataset(name_or_dataset)
    limits = {"retries": check_integer(retries, "retries", minimum=1), "timeout": _seconds(timeout, "timeout"),
              "deadline": _seconds(deadline, "deadline", allow_none=True),
              "max_bytes": (1 << 20) + MAX_BYTES_PER_EDGE * ds.listed_edges}
    progress, verbose = check_flag(progress, "progress"), check_flag(verbose, "verbose")
    cached = _load_cached(ds, verbose)
    if cached is not None:
        if verbose:
            print(f"{cached[0].name}: loaded from the cache in {describe_path(cached[1])}")
        return cached[0]
    folder, passed = _cache_folder(ds)
    if passed:
        print(f"{ds.name}: cannot write to {passed[0]}; keeping the cache in {describe_path(folder.parent)} instead")
    raw = _kept_file(ds, folder)
    if not raw.is_file():
        graph, info = _download(ds, folder, raw, limits, progress, verbose)
    else:
        try:
            graph, info = _check(ds, raw)
        except IntegrityError as error:
            try:
                raw.unlink(missing_ok=True)     # a damaged cached file is never used, and never kept
                what = "was removed: the next call downloads it again"
            except OSError as failure:
                what = f"could not be removed ({failure.strerror}): delete it, and the next call downloads it again"
            raise IntegrityError(f"{error} (the cached file {raw} {what})") from None
        info = {"url": ds.url, **info}
    info = {"name": ds.name, "directed": ds.directed, **info}
    try:
        _save(graph, folder, info)
    except OSError as error:
        print(f"{ds.name}: could not write the parsed graph to {describe_path(folder)} ({error.strerror or error}); "
              f"it is used, but not cached")
    if verbose:
        _describe(ds, graph, info)
    return graph


def _describe(ds: Dataset, graph: Graph, info: dict) -> None:
    pinned = "matches the pinned hash" if ds.sha256 else "no hash is pinned for it; counts and structure were checked"
    print(f"{graph.name}: {graph.num_vertices:,} vertices, {ds.listed_edges:,} listed edges, parsed in "
          f"{info['parse_seconds']:.1f} s; sha256 {info['sha256']} ({pinned})")
    found, source = info["statistics"], info["statistics_source"]
    checked = ("nothing pinned to check them against" if not info["statistics_checked"] else
               "as SNAP publishes" if source == "SNAP" else f"as {describe_path(source)} says")
    print(f"{graph.name}: largest WCC {found['wcc_nodes']:,} nodes / {found['wcc_edges']:,} edges, largest SCC "
          f"{found['scc_nodes']:,} / {found['scc_edges']:,} ({checked})")


def cached_info(name_or_dataset="web-Google") -> dict | None:
    """What the cache recorded for a dataset (url, hash seen, counts, statistics, parse time), or None."""
    ds = dataset(name_or_dataset)
    for root in _candidate_roots():
        try:
            info = _read_info(root / ds.name)
        except _Unusable:
            continue
        if info is not None and info.get("format") == CACHE_FORMAT and info.get("name") == ds.name:
            return info
    return None


STANDIN_VERSION = 1        # raised whenever a generator changes what it makes for the same seed
STANDIN_ARRAYS = ARRAYS[:-1]


def _generate_standin(ds: Dataset, seed: int, progress: bool) -> Graph:
    from .generators import rmat_graph, web_graph

    edges = ds.listed_edges if ds.directed else 2 * ds.listed_edges
    if ds.name == "web-Google":
        return web_graph(ds.vertices, edges, seed=seed, progress=progress, name=f"stand-in for web-Google "
                         f"(generated web-like graph, {ds.vertices:,} vertices, {edges:,} edges)")
    return rmat_graph(ds.vertices, edges, seed=seed, progress=progress,
                      name=f"stand-in for {ds.name} (generated R-MAT, {ds.vertices:,} vertices, {edges:,} edges)")


def _read_standin(folder: Path) -> Graph | None:
    """A cached stand-in, checked like a cached download (record, array headers, CSR rules, content hash)."""
    try:
        info = _read_info(folder)
        n = info["vertices"]
        if info.get("format") != CACHE_FORMAT or isinstance(n, bool) or not isinstance(n, int) or n < 1:
            return None
        return _graph_from_cache(folder, {**info, "graph_name": info["name"]}, n, str(info["name"]), STANDIN_ARRAYS)
    except Exception:                         # noqa: BLE001: anything wrong with it (or none): generate again
        return None


def standin(name_or_dataset="web-Google", seed: int = 0, *, cache: bool = True, progress: bool = True,
            verbose: bool = True) -> Graph:
    """A generated graph of the dataset's size, named as a stand-in. For web-Google it is the web-like
    generator (web-Google's published vertex and edge counts, degree maxima and dangling share, ids in
    crawl order); for the others an R-MAT graph with the dataset's vertex count and listed edge count.
    Generated once (seconds, with a progress bar) and kept in the cache, checked like a download."""
    ds = dataset(name_or_dataset)
    seed = check_integer(seed, "seed", minimum=0)
    cache, progress = check_flag(cache, "cache"), check_flag(progress, "progress")
    verbose = check_flag(verbose, "verbose")
    folder = None
    for root in _candidate_roots() if cache else []:
        if _unwritable(root / f"stand-in-{ds.name}-seed{seed}-v{STANDIN_VERSION}") is None:
            folder = root / f"stand-in-{ds.name}-seed{seed}-v{STANDIN_VERSION}"
            break
    graph = _read_standin(folder) if folder is not None else None
    if graph is not None:
        if verbose:
            print(f"{graph.name}: loaded from the cache in {describe_path(folder)}")
        return graph
    graph = _generate_standin(ds, seed, progress)
    if folder is not None:
        info = {"name": graph.name, "vertices": graph.num_vertices, "edges": graph.num_edges, "seed": seed,
                "generator_version": STANDIN_VERSION}
        try:
            _save(graph, folder, info, STANDIN_ARRAYS)
        except OSError as error:
            if verbose:
                print(f"{graph.name}: not kept in the cache ({error.strerror or error}); it will be generated again")
    return graph


def load_or_standin(name_or_dataset="web-Google", **kwargs) -> Graph:
    """``load``; if the download fails, say so plainly and return the generated stand-in instead.

    Only a failed download falls back: a file that arrives damaged or altered still raises IntegrityError.
    """
    ds = dataset(name_or_dataset)
    try:
        return load(ds, **kwargs)
    except DownloadError as error:
        print(f"Could not download {ds.name}: {str(error).rstrip('.')}.\n"
              f"Using a generated stand-in of the same size instead. It is not the real graph: every table "
              f"and plot below names the graph it ran on.")
        return standin(ds)
