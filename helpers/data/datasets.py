"""Real graphs from SNAP: a checked download into the cache, and an announced offline stand-in. A download
is staged in a folder named after its process, checked (``registry.check_download``) and only then cached."""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from urllib.parse import quote, urlsplit

from helpers.core.arguments import ArgumentError, check_flag, check_real, check_seed
from helpers.core.generators import rmat_graph, web_graph
from helpers.core.graph import Graph, GraphFormatWarning, statistics_of
from helpers.core.progress import say
from helpers.data import cache as store
from helpers.data.cache import ARRAYS, CACHE_FORMAT, VANISHED_RETRIES
from helpers.data.download import DownloadError, IntegrityError, check_limits, fetch, redact
from helpers.data.graphfiles import graph_from_pairs
from helpers.data.registry import (BASE_URL_VARIABLE, DATASETS, DEFAULT_BASE_URL, DISPLAY_NAME, STATISTICS,
                                   STATISTICS_VARIABLE, Dataset, Fingerprint, UnknownDatasetError,
                                   URLSettingError, base_url, check_download, dataset, expected_statistics,
                                   sha256_of)
from helpers.data.settings import SettingError, describe_path

__all__ = ["load", "load_or_standin", "standin", "cached_info", "cache_dir", "DATASETS", "Dataset",
           "Fingerprint", "dataset", "base_url", "expected_statistics", "statistics_of", "sha256_of",
           "graph_from_pairs", "DownloadError", "IntegrityError", "UnknownDatasetError", "URLSettingError",
           "SettingError", "ArgumentError", "GraphFormatWarning", "BASE_URL_VARIABLE", "DEFAULT_BASE_URL",
           "STATISTICS_VARIABLE", "STATISTICS", "DISPLAY_NAME", "ARRAYS", "MAX_BYTES_PER_EDGE"]
BYTES_PER_EDGE_GUESS = 16  # for the deadline until the server sends a size (SNAP's gzip: ~4 per edge)
MAX_BYTES_PER_EDGE = 64    # a SNAP edge line is at most ~40 bytes: a larger body per edge is not the file
STANDIN_VERSION = 1        # raised whenever a generator changes what it makes for the same seed
STANDIN_ARRAYS = ARRAYS[:-1]


def _is_file(path: Path) -> bool:
    """Whether ``path`` is a regular file; False where it cannot be looked at (a name too long, ...)."""
    try:
        return path.is_file()
    except OSError:
        return False


def cache_dir(name_or_dataset) -> Path:
    """Where the dataset's cache is kept (created if need be): under the data directory, else the user
    cache ~/.cache/pagerank-on-the-gpu, else pagerank-on-the-gpu-<user id> in the temp directory."""
    return store.cache_folder(dataset(name_or_dataset).name)[0]


class _Vanished(Exception):
    """A file or folder of the cache disappeared under the load (another process deleting the cache)."""



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
    """check_download of a file in the cache, which another process may delete or replace meanwhile: _Vanished
    then, never a raw OSError or a verdict on half a file."""
    before = None
    try:
        before = os.stat(path)
        return check_download(ds, path, frames)
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
    """The dataset as a Graph: from the cache, else downloaded (``retries``, ``timeout`` per read,
    ``deadline``), checked and cached; DownloadError or IntegrityError leave no file in the cache."""
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
    """A generated graph of the dataset's size named as a stand-in (web-like for web-Google, else R-MAT),
    cached; a ``fraction`` below 1 scales both counts and is generated each time, quietly."""
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
    """``load``, or where the download fails, announced, the stand-in (IntegrityError still raises); a
    ``fraction`` below 1 sizes the stand-in and, unless ``download`` is True, skips the download."""
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
