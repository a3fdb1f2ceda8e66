"""Real graphs from SNAP: a registry, a checked download into the cache, and an announced offline stand-in.

A download (helpers.data.download: pooch, a per-read timeout, a deadline, a size limit, retries) goes into a
staging folder and moves into the cache only once its gzip stream, its hash (where one is pinned), its
vertex and edge counts and its structure (the connected-component sizes SNAP publishes) are right. The
parsed graph is cached as .npz, written atomically, and used again only after its arrays pass the CSR
checks and a content hash (helpers.data.graphfiles). A staging folder is named after the process that owns it,
so that the next load removes one whose owner is gone (killed mid-download). No address is ever shown or
kept with the user name and password it may carry (download.redact); every message is written so that any
stream's encoding can take it (progress.say).
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, urlsplit

from helpers.core.arguments import (ArgumentError, GraphFormatError, check_flag, check_integer, check_real,
                                    check_seconds, check_seed)
from helpers.core.generators import rmat_graph, web_graph
from helpers.core.graph import Graph, GraphFormatWarning, statistics_of
from helpers.core.progress import say, warn
from helpers.data.download import MAX_TIMEOUT, DownloadError, IntegrityError, fetch, redact
from helpers.data.graphfiles import (ARRAYS, graph_from_pairs, load_npz, open_regular, read_edge_pairs,
                                     read_header, save_npz, write_atomically)
from helpers.data.settings import (DATA_DIR_VARIABLE, SettingError, data_dir, data_dir_setting, describe_path,
                                   expand_home, home_folder, temp_data_dir, user_cache_dir)

BASE_URL_VARIABLE = "PAGERANK_DATA_URL"
STATISTICS_VARIABLE = "PAGERANK_DATA_STATISTICS"
DEFAULT_BASE_URL = "https://snap.stanford.edu/data/"
CACHE_FORMAT = 2
BYTES_PER_EDGE_GUESS = 16  # for the deadline until the server sends a size (SNAP's gzip: ~4 per edge)
MAX_BYTES_PER_EDGE = 64    # a SNAP edge line is at most ~40 bytes: a larger body per edge is not the file
STALE_STAGING = 24 * 3600  # seconds: a staging folder whose owner cannot be checked is left this long
VANISHED_RETRIES = 3       # tries of a load (and of a cache folder) that another process deletes under it
STANDIN_VERSION = 1        # raised whenever a generator changes what it makes for the same seed
STANDIN_ARRAYS = ARRAYS[:-1]
STATISTICS = {             # what SNAP's dataset pages publish, in SNAP's words
    "edges": "edges", "wcc_nodes": "nodes in the largest WCC", "wcc_edges": "edges in the largest WCC",
    "scc_nodes": "nodes in the largest SCC", "scc_edges": "edges in the largest SCC"}
DISPLAY_NAME = "name"      # in a $PAGERANK_DATA_STATISTICS entry: what the served file is (the Graph's name)
MAX_NAME = 200             # characters in a graph's name taken from a file (a statistics file, info.json)


class UnknownDatasetError(KeyError):
    """A dataset name the registry does not know; the message lists the known ones."""


class URLSettingError(SettingError, DownloadError):
    """$PAGERANK_DATA_URL is not an http(s) address: nothing can be downloaded, so ``load_or_standin`` falls
    back (announced, naming the variable); a SettingError and a DownloadError both."""


@dataclass(frozen=True)
class Fingerprint:
    """Statistics SNAP publishes for a dataset, counted as SNAP counts them: distinct edges (for an
    undirected graph a pair once), and the nodes and edges (both ends inside) of the largest weakly and
    strongly connected components. SNAP publishes no checksum; these catch a file altered with the same
    counts. None: not confirmed from a source, so not checked."""

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
    digest = hashlib.sha256()
    with open_regular(path) as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


# --- where downloads come from and where the cache is ----------------------------------------------

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
            problem = "it is not a valid address" + ("" if "@" in value else f" ({error})")   # no password
    if problem:
        raise URLSettingError(f"${BASE_URL_VARIABLE}={redact(raw)!r} cannot be used: {problem}; {allowed}")
    return value


def _candidate_roots() -> list[Path]:
    """Cache roots in order of preference: the data directory's cache/, the user cache (~/.cache/...), the
    fallback in the temp folder (settings.temp_data_dir: where there is no usable home, the user cache too)."""
    roots = []
    try:
        roots.append(data_dir() / "cache")
    except OSError:                           # data_dir() creates the folder and fails where it cannot
        try:
            configured = data_dir_setting()
        except OSError:                       # a '~user' that names no one
            configured = None
        if configured is not None:
            roots.append(configured / "cache")
    roots += [user_cache_dir() / "cache", temp_data_dir() / "cache"]
    return list(dict.fromkeys(roots))


_TOLD: set[str] = set()      # what was already said about settings passed over, once per process


def _tell_if_passed_over() -> None:
    """Print, once per process and reason, what the cache passes over where nothing else would say so: a
    $PAGERANK_DATA_DIR that cannot even be looked at (a '~user' that names no one, a '~' with no usable
    home), and a home folder that cannot be used where the cache goes to the temporary folder instead."""
    why = []
    try:
        data_dir_setting()
    except OSError as error:
        why.append(f"${DATA_DIR_VARIABLE}={os.environ.get(DATA_DIR_VARIABLE, '')!r} cannot be used "
                   f"({error.strerror or error})")
    home, no_home = home_folder()
    if not why and home is not None:          # the usual case: nothing passed over, nothing to say
        return
    first = _candidate_roots()[0]
    if home is None and first == temp_data_dir() / "cache" and not any(no_home in w for w in why):
        why.append(f"no usable home folder ({no_home})")
    said = "; ".join(why) + f"; the cache is kept in {describe_path(first.parent)} instead"
    if why and said not in _TOLD:
        _TOLD.add(said)
        say(said)


def _unwritable(folder: Path) -> str | None:
    """None if files can be written in ``folder`` (created if need be), else why not; a folder another
    process deletes between its creation and the test write is created again (a few times)."""
    for attempt in range(VANISHED_RETRIES):
        try:
            folder.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryFile(dir=folder):
                pass
            return None
        except FileNotFoundError as error:
            if attempt + 1 == VANISHED_RETRIES:
                return error.strerror or type(error).__name__
        except OSError as error:
            return error.strerror or type(error).__name__


def _cache_folder(name: str) -> tuple[Path, list[str]]:
    """The first writable cache folder ``name`` and, for each root passed over, where and why (and, where
    the temp folder is reached, that there is no usable home folder)."""
    passed = []
    for root in _candidate_roots():
        why = _unwritable(root / name)
        if why is None:
            no_home = home_folder()[1]
            if passed and no_home and root == temp_data_dir() / "cache":
                passed.append(f"no usable home folder ({no_home})")
            return root / name, passed
        passed.append(f"{root.parent} ({why})")
    raise DownloadError(f"{name}: no folder to keep the download in: cannot write to " + "; ".join(passed))


def cache_dir(name_or_dataset) -> Path:
    """Where the dataset's cache is kept (created if need be): under the data directory, or, where that
    cannot be written, the user cache ~/.cache/pagerank-on-the-gpu, or (no usable home either) the folder
    pagerank-on-the-gpu-<user id> in the temp directory."""
    return _cache_folder(dataset(name_or_dataset).name)[0]


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
        shown = entry.get(DISPLAY_NAME, "-")
        named = isinstance(shown, str) and shown.strip() and shown.isprintable() and len(shown) <= MAX_NAME
        if unknown or bad or not named:
            problem = (f"unknown statistics {unknown}" if unknown else f"non-integer values for {bad}" if bad
                       else f"a {DISPLAY_NAME!r} that is not one line of at most {MAX_NAME} printable "
                            f"characters")
            raise SettingError(f"${STATISTICS_VARIABLE}={path!r}: entry {name!r} has {problem}; {usage}")
    return table


def expected_statistics(name_or_dataset) -> tuple[dict[str, int], str, str | None]:
    """The statistics a download must match, who says so, and the name its graph gets if not the dataset's:
    SNAP's published statistics from the registry (no name), or, where $PAGERANK_DATA_STATISTICS names a
    JSON file with an entry for the dataset, that entry instead (for tests that serve generated files: its
    "name" says what the file is; announced, since it replaces SNAP's numbers)."""
    ds = dataset(name_or_dataset)
    path = os.environ.get(STATISTICS_VARIABLE)
    if path:
        table = _statistics_file(path)
        if ds.name in table:
            say(f"NOTE: {ds.name}: integrity statistics taken from {describe_path(path)} "
                f"(${STATISTICS_VARIABLE}) instead of SNAP's published ones")
            entry = table[ds.name]
            return ({k: v for k, v in entry.items() if k != DISPLAY_NAME and v is not None}, path,
                    entry.get(DISPLAY_NAME))
    return (ds.fingerprint.pinned() if ds.fingerprint else {}), "SNAP", None


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
             f"lists it as {'' if ds.directed else 'un'}directed; read as the registry says", GraphFormatWarning,
             stacklevel=frames)
    who = "SNAP publishes" if source == "SNAP" else f"{source} says"
    start = time.perf_counter()
    found = statistics_of(graph, undirected=not ds.directed)
    wrong = [f"{STATISTICS[k]}: {who} {v:,}, the file gives {found[k]:,}"
             for k, v in expected.items() if found[k] != v]
    if wrong:
        raise IntegrityError(f"{ds.name}: the structure differs: " + "; ".join(wrong) +
                             "; the file was altered or is another version")
    info = {"sha256": seen, "sha256_pinned": ds.sha256 is not None, "vertices": graph.num_vertices,
            "listed_edges": listed, "edges": graph.num_edges, "graph_name": graph.name,
            "parse_seconds": round(parse_s, 3), "statistics": found, "statistics_checked": sorted(expected),
            "statistics_source": source, "check_seconds": round(time.perf_counter() - start, 3)}
    return graph, info


# --- the parsed-graph cache: graph.npz and info.json ------------------------------------------------

class _Unusable(Exception):
    """The cache is there but cannot be used; says why."""


def _save(graph: Graph, folder: Path, info: dict, keys=ARRAYS) -> None:
    digest = save_npz(graph, folder / "graph.npz", keys)          # the arrays first: an info.json never
    info = {"format": CACHE_FORMAT, **info, "arrays_sha256": digest}      # describes arrays not there yet
    write_atomically(folder / "info.json", lambda f: f.write(json.dumps(info, indent=1).encode()))


def _read_info(folder: Path) -> dict | None:
    """info.json as a dict; None where it is missing; _Unusable where it is there but not a usable record."""
    try:
        with open_regular(folder / "info.json") as f:
            info = json.loads(f.read(1 << 20))
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as error:                  # a FIFO, a folder, a symlink loop, no permission
        raise _Unusable(f"info.json: {error.strerror or error}") from None
    except (ValueError, RecursionError) as error:      # RecursionError: JSON nested deeper than Python goes
        raise _Unusable(f"info.json unreadable ({type(error).__name__}: {str(error)[:100]})") from None
    if not isinstance(info, dict):
        raise _Unusable(f"info.json holds a {type(info).__name__}, not a record")
    return info


def _cached_graph(folder: Path, record: dict, keys=ARRAYS) -> Graph | None:
    """The graph cached in ``folder``, or None where there is none; _Unusable, saying why, where one is
    there but its info.json differs from ``record`` or its arrays fail a check (graphfiles.load_npz)."""
    info = _read_info(folder)
    if info is None:
        return None
    n, m, digest = info.get("vertices"), info.get("edges"), info.get("arrays_sha256")
    shown = info.get("graph_name", info.get("name"))
    if info.get("format") != CACHE_FORMAT:
        raise _Unusable(f"cache format {info.get('format')!r}, this version writes {CACHE_FORMAT}")
    if any(info.get(key) != value for key, value in record.items()):
        raise _Unusable("it describes another dataset or version")
    if not (all(isinstance(v, int) and not isinstance(v, bool) for v in (n, m)) and 0 < n and 0 <= m <= n * n
            and isinstance(digest, str) and isinstance(shown, str) and shown.isprintable()
            and len(shown) <= MAX_NAME):
        raise _Unusable("info.json lacks the counts, the content hash or the graph's name")
    try:
        return load_npz(folder / "graph.npz", n, m, sha256=digest, name=shown, keys=keys)
    except GraphFormatError as error:
        raise _Unusable(str(error)) from None
    except OSError as error:                  # a FIFO or a folder where graph.npz should be, ...
        raise _Unusable(f"{Path(error.filename or 'graph.npz').name}: {error.strerror or error}") from None
    except Exception as error:                # noqa: BLE001: any damage (BadZipFile, EOFError, ...)
        raise _Unusable(f"{type(error).__name__}: {str(error)[:100]}") from None


# --- staging folders, named after the process that owns them ------------------------------------------

_STAGING = re.compile(r"\.download-([0-9]+)-([0-9]+)-([0-9a-f]{12})-")    # pid, start time, machine


def _process_stat(pid: int) -> list[bytes] | None:
    """The fields of /proc/<pid>/stat after the command's name (the state first), None where there is none."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return fields if len(fields) > 19 else None


@functools.cache
def _machine() -> str | None:
    """This boot and process namespace, hashed: pids are compared only within it (not across machines or
    containers sharing the cache). None where it cannot be told (no /proc: not Linux)."""
    try:
        with open("/proc/sys/kernel/random/boot_id", "rb") as f:
            boot = f.read().strip()
        namespace = os.readlink("/proc/self/ns/pid").encode()
    except OSError:
        return None
    return hashlib.sha256(boot + b"/" + namespace).hexdigest()[:12]


def _owner_tag(pid: int) -> str | None:
    """'<pid>-<start time>-<machine>' of a running process, which still names it after its pid is reused;
    None where it cannot be told."""
    fields, machine = _process_stat(pid), _machine()
    return None if fields is None or machine is None else f"{pid}-{int(fields[19])}-{machine}"


def _abandoned(staging: Path) -> bool:
    """Whether a staging folder's owner is gone (its process ended, or its pid names another process now);
    one whose owner cannot be checked (no /proc, another machine, an older name) is, once a day old."""
    owner = _STAGING.match(staging.name)
    if owner and owner[3] == _machine():
        fields = _process_stat(int(owner[1]))
        if fields is not None:
            return fields[0] in (b"Z", b"X") or int(fields[19]) != int(owner[2])     # a zombie has ended
        try:
            os.kill(int(owner[1]), 0)          # no /proc entry: gone, unless /proc hides other users'
        except ProcessLookupError:
            return True
        except OSError:
            pass
    return time.time() - staging.stat().st_mtime > STALE_STAGING


def _remove_abandoned(folder: Path) -> None:
    """Remove the staging folders in ``folder`` whose owner is gone (a download killed midway)."""
    try:
        found = list(folder.glob(".download-*"))
    except OSError:                           # a folder that cannot be looked at (a name too long, ...)
        return
    for staging in found:
        try:
            if _abandoned(staging):
                shutil.rmtree(staging, ignore_errors=True)
        except OSError:                       # gone already, or it cannot be looked at
            pass


class _Vanished(Exception):
    """A file or folder of the cache disappeared under the load (another process deleting the cache)."""


# --- the public entry points ----------------------------------------------------------------------

def _download(ds: Dataset, folder: Path, raw: Path, limits: dict, progress: bool, verbose: bool):
    """Download into a staging folder named after this process, check, and move the file into the cache
    only once it passed; _Vanished where the staging folder is deleted under it."""
    url = base_url().rstrip("/") + "/" + quote(ds.filename)
    shown = redact(url)                       # the request uses the user name and password, no message does
    if urlsplit(url).scheme.lower() == "http":
        say(f"WARNING: {ds.name}: {shown} is plain http://: the transfer is not authenticated; only the checks "
            f"of counts and structure below can catch an altered file")
    tag = _owner_tag(os.getpid())
    try:
        staging = Path(tempfile.mkdtemp(prefix=f".download-{tag}-" if tag else ".download-", dir=folder))
    except FileNotFoundError:
        raise _Vanished(f"{describe_path(folder)} was removed") from None
    except OSError as error:
        raise DownloadError(f"{ds.name}: cannot stage the download in {folder} "
                            f"({error.strerror or error})") from None
    try:
        if verbose:
            say(f"{ds.name}: downloading {shown}")
        fetched = staging / ds.filename
        try:
            fetch(url, fetched, name=ds.name, size_guess=BYTES_PER_EDGE_GUESS * ds.listed_edges, **limits,
                  progress=progress, verbose=verbose)
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
    """The dataset as a Graph: from the cache if there, else downloaded, checked and cached.

    ``retries`` attempts at most; ``timeout`` seconds to connect and for any one read; ``deadline`` seconds
    for the whole download, retries included (default: 120 s plus the size at 10 kB/s). Raises
    DownloadError (nothing fetched) or IntegrityError (fetched but wrong); neither leaves a file in the
    cache. Where another process deletes the cache meanwhile, the load starts again (a few times at most).
    """
    ds = dataset(name_or_dataset)
    limits = {"retries": check_integer(retries, "retries", minimum=1),
              "timeout": check_seconds(timeout, "timeout", maximum=MAX_TIMEOUT),
              "deadline": None if deadline is None else check_seconds(deadline, "deadline"),
              "max_bytes": (1 << 20) + MAX_BYTES_PER_EDGE * ds.listed_edges}
    progress, verbose = check_flag(progress, "progress"), check_flag(verbose, "verbose")
    record = {"name": ds.name, "vertices": ds.vertices, "listed_edges": ds.listed_edges,
              "directed": ds.directed}
    _tell_if_passed_over()
    for root in _candidate_roots():
        _remove_abandoned(root / ds.name)
    for attempt in range(1, VANISHED_RETRIES + 1):
        try:
            return _load(ds, record, limits, progress, verbose)
        except _Vanished as vanished:
            if verbose and attempt < VANISHED_RETRIES:
                say(f"{ds.name}: {vanished} (another process deleting the cache?); loading again")
            last = vanished
    raise DownloadError(f"{ds.name}: the cache kept disappearing during the load ({last}, {VANISHED_RETRIES} "
                        f"times): is another process deleting it?")


def _load(ds: Dataset, record: dict, limits: dict, progress: bool, verbose: bool) -> Graph:
    """One try of ``load``: the cache, else the file kept, else a download."""
    for root in _candidate_roots():
        try:
            graph = _cached_graph(root / ds.name, record)
        except _Unusable as why:
            if verbose:
                say(f"{ds.name}: the cache in {describe_path(root / ds.name)} cannot be used ({why}); "
                    f"building it again")
            continue
        if graph is not None:
            if verbose:
                say(f"{graph.name}: loaded from the cache in {describe_path(root / ds.name)}")
            return graph
    folder, passed = _cache_folder(ds.name)
    if passed:
        say(f"{ds.name}: cannot write to {'; '.join(passed)}; keeping the cache in "
            f"{describe_path(folder.parent)} instead")
    raw = next((root / ds.name / ds.filename for root in _candidate_roots()      # kept earlier, maybe in a
                if _is_file(root / ds.name / ds.filename)), folder / ds.filename)   # folder now read-only
    if not _is_file(raw):
        graph, info = _download(ds, folder, raw, limits, progress, verbose)
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
    try:
        _save(graph, folder, info)
    except OSError as error:
        say(f"{ds.name}: could not write the parsed graph to {describe_path(folder)} "
            f"({error.strerror or error}); it is used, but not cached")
    if verbose:
        pinned = ("matches the pinned hash" if ds.sha256 else
                  "no hash is pinned for it; counts and structure were checked")
        found, source = info["statistics"], info["statistics_source"]
        checked = ("nothing pinned to check them against" if not info["statistics_checked"] else
                   "as SNAP publishes" if source == "SNAP" else f"as {describe_path(source)} says")
        say(f"{graph.name}: {graph.num_vertices:,} vertices, {ds.listed_edges:,} listed edges, parsed in "
            f"{info['parse_seconds']:.1f} s; sha256 {info['sha256']} ({pinned})")
        say(f"{graph.name}: largest WCC {found['wcc_nodes']:,} nodes / {found['wcc_edges']:,} edges, "
            f"largest SCC {found['scc_nodes']:,} / {found['scc_edges']:,} ({checked})")
    return graph


def cached_info(name_or_dataset="web-Google") -> dict | None:
    """What the cache recorded for a dataset (url, hash seen, counts, statistics, parse time), or None; an
    address recorded with a user name and password (by an older version) is returned without them."""
    ds = dataset(name_or_dataset)
    for root in _candidate_roots():
        try:
            info = _read_info(root / ds.name)
        except _Unusable:
            continue
        if info is not None and info.get("format") == CACHE_FORMAT and info.get("name") == ds.name:
            return {**info, "url": redact(info["url"])} if isinstance(info.get("url"), str) else info
    return None


def standin(name_or_dataset="web-Google", seed: int = 0, *, fraction: float = 1.0, cache: bool = True,
            progress: bool = True, verbose: bool = True) -> Graph:
    """A generated graph of the dataset's size, named as a stand-in. For web-Google it is the web-like
    generator (web-Google's published vertex and edge counts, degree maxima and dangling share, ids in
    crawl order); for the others an R-MAT graph with the dataset's vertex count and listed edge count.
    Generated once (seconds, with a progress bar) and kept in the cache, checked like a download. A
    ``fraction`` below 1 (a lecture's test scale) scales both counts and is generated each time (a second
    at most), quietly."""

    ds = dataset(name_or_dataset)
    seed = check_seed(seed, rng=False)
    fraction = check_real(fraction, "fraction", low=1e-6, high=1)
    cache, progress = check_flag(cache, "cache") and fraction == 1, check_flag(progress, "progress")
    verbose = check_flag(verbose, "verbose")
    folder = graph = None
    if cache:
        _tell_if_passed_over()
        try:
            folder = _cache_folder(f"stand-in-{ds.name}-seed{seed}-v{STANDIN_VERSION}")[0]
            record = {"seed": seed, "generator_version": STANDIN_VERSION, "vertices": ds.vertices}
            graph = _cached_graph(folder, record, STANDIN_ARRAYS)
        except (DownloadError, _Unusable):    # no folder to keep it in, or a damaged one: generate again
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
    if folder is not None:
        info = {"name": graph.name, "vertices": n, "edges": graph.num_edges, "seed": seed,
                "generator_version": STANDIN_VERSION}
        try:
            _save(graph, folder, info, STANDIN_ARRAYS)
        except OSError as error:
            if verbose:
                say(f"{graph.name}: not kept in the cache ({error.strerror or error}); it will be "
                    f"generated again")
    return graph


def load_or_standin(name_or_dataset="web-Google", *, fraction: float = 1.0, download: bool | None = None,
                    **kwargs) -> Graph:
    """``load``; if the download fails, say so plainly and return the generated stand-in instead. A
    ``fraction`` below 1 (a lecture's test scale) sizes the stand-in (``standin(fraction=...)``) and, unless
    ``download`` is True, skips the download: a download is always the whole graph.

    Only a failed download falls back: a file that arrives damaged or altered still raises IntegrityError.
    """
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
