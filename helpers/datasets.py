"""Real graphs from SNAP: a registry, a checked download into the cache, and an announced offline stand-in.

A download goes to a staging folder (pooch: progress bar, timeout), is retried on network errors, is
parsed, and is moved into the cache only once its gzip stream, its hash (where one is pinned) and its
vertex and edge counts are right. The parsed graph is cached as .npz (loaded with allow_pickle=False).
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

import numpy as np

from .course import data_dir
from .graph import Graph, GraphFormatError, graph_from_pairs, read_edge_pairs

BASE_URL_VARIABLE = "PAGERANK_DATA_URL"
DEFAULT_BASE_URL = "https://snap.stanford.edu/data/"
CACHE_FORMAT = 1


@dataclass(frozen=True)
class Dataset:
    name: str
    filename: str
    directed: bool
    vertices: int        # distinct ids a correct parse finds
    listed_edges: int    # edge lines in the file (an undirected pair is one line, two directed edges)
    sha256: str | None = None
    description: str = ""

    @property
    def url(self) -> str:
        base = os.environ.get(BASE_URL_VARIABLE) or DEFAULT_BASE_URL
        return base.rstrip("/") + "/" + self.filename


DATASETS = {d.name: d for d in [
    Dataset("web-Google", "web-Google.txt.gz", True, 875_713, 5_105_039,
            description="web pages and hyperlinks released by Google in 2002 (primary course graph)"),
    Dataset("ego-Facebook", "facebook_combined.txt.gz", False, 4_039, 88_234,
            description="Facebook friendships from survey participants (undirected)"),
    Dataset("Wiki-Vote", "wiki-Vote.txt.gz", True, 7_115, 103_689,
            description="who voted for whom in Wikipedia administrator elections"),
    Dataset("soc-LiveJournal1", "soc-LiveJournal1.txt.gz", True, 4_847_571, 68_993_773,
            description="LiveJournal friendship links (for scale)"),
]}


class DownloadError(RuntimeError):
    """The file could not be fetched (network, host, HTTP status); nothing was cached."""


class IntegrityError(RuntimeError):
    """The file arrived but is not what the registry describes; nothing was cached."""


def dataset(name_or_dataset) -> Dataset:
    if isinstance(name_or_dataset, Dataset):
        return name_or_dataset
    try:
        return DATASETS[name_or_dataset]
    except KeyError:
        raise KeyError(f"unknown dataset {name_or_dataset!r}; known: {', '.join(DATASETS)}") from None


def cache_dir(ds: Dataset) -> Path:
    return data_dir() / "cache" / ds.name


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def sha256_of_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _fetch(url: str, folder: Path, filename: str, *, retries: int, timeout: float, progress: bool) -> Path:
    """Download with pooch into ``folder``; retry connection problems and 5xx answers, not 4xx."""
    import pooch
    import requests
    from tqdm import tqdm   # the plain text bar: it needs no notebook widgets

    last = None
    for attempt in range(1, retries + 1):
        # total=1: a tqdm is falsy while its total is 0, and pooch would skip it; pooch sets the real total
        bar = tqdm(total=1, unit="B", unit_scale=True, desc=filename, ncols=80) if progress else False
        downloader = pooch.HTTPDownloader(progressbar=bar, timeout=timeout)
        try:
            fetched = Path(pooch.retrieve(url, known_hash=None, fname=filename, path=folder,
                                          downloader=downloader, progressbar=progress))
            bar = False                         # pooch filled and closed it: it stays on screen
            return fetched
        except requests.HTTPError as error:
            status = error.response.status_code if error.response is not None else None
            last = DownloadError(f"{url}: the server answered HTTP {status}")
            if status is not None and status < 500:
                break
        except requests.exceptions.SSLError as error:
            last = DownloadError(f"{url}: the server's certificate was refused ({error})")
            break
        except (requests.ConnectionError, requests.Timeout) as error:
            last = DownloadError(f"{url}: could not connect ({type(error).__name__}: {error})")
        finally:
            if bar is not False:                # a failed attempt's bar: erase it now, or its late
                bar.leave = False               # close() prints into whatever runs next
                bar.close()
        if attempt < retries:
            time.sleep(min(2.0 ** attempt, 10.0) * 0.5)
    raise last


def _check(ds: Dataset, path: Path) -> tuple[Graph, str]:
    """Parse the downloaded file and check its hash and counts; returns the graph and the hash seen."""
    seen = sha256_of(path)
    if ds.sha256 and seen != ds.sha256:
        raise IntegrityError(f"{ds.name}: sha256 {seen} does not match the pinned {ds.sha256}; "
                             "the file was altered or is another version")
    try:
        pairs = read_edge_pairs(path)
    except GraphFormatError as error:
        raise IntegrityError(f"{ds.name}: the download cannot be parsed: {error}") from None
    listed = pairs.shape[0]
    graph = graph_from_pairs(pairs, undirected=not ds.directed, name=ds.name)
    if graph.num_vertices != ds.vertices or listed != ds.listed_edges:
        raise IntegrityError(f"{ds.name}: expected {ds.vertices:,} vertices and {ds.listed_edges:,} listed edges, "
                             f"the file gives {graph.num_vertices:,} and {listed:,}; it is incomplete or altered")
    return graph, seen


def _save(graph: Graph, folder: Path, info: dict) -> None:
    arrays = {k: getattr(graph, k) for k in ("out_offsets", "out_targets", "in_offsets", "in_sources",
                                             "out_degree", "original_ids")}
    with tempfile.NamedTemporaryFile(dir=folder, suffix=".npz", delete=False) as tmp:
        np.savez(tmp, **arrays)
    os.replace(tmp.name, folder / "graph.npz")
    (folder / "info.json").write_text(json.dumps(info, indent=1))


def _load_cached(ds: Dataset) -> Graph | None:
    folder = cache_dir(ds)
    try:
        info = json.loads((folder / "info.json").read_text())
        with np.load(folder / "graph.npz", allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
    except (OSError, ValueError, KeyError):
        return None
    n = int(arrays["out_degree"].size)
    if info.get("format") != CACHE_FORMAT or n != ds.vertices or info.get("listed_edges") != ds.listed_edges:
        return None
    return Graph(n, name=ds.name, **arrays)


def load(name_or_dataset="web-Google", *, retries: int = 3, timeout: float = 60.0, progress: bool = True,
         verbose: bool = True) -> Graph:
    """The dataset as a Graph: from the cache if there, else downloaded, checked and cached.

    Raises DownloadError (nothing fetched) or IntegrityError (fetched but wrong); neither leaves a file
    in the cache.
    """
    ds = dataset(name_or_dataset)
    cached = _load_cached(ds)
    if cached is not None:
        if verbose:
            print(f"{ds.name}: loaded from the cache in {cache_dir(ds)}")
        return cached
    folder = cache_dir(ds)
    folder.mkdir(parents=True, exist_ok=True)
    raw = folder / ds.filename
    if not raw.is_file():
        staging = Path(tempfile.mkdtemp(prefix=".download-", dir=folder))
        try:
            if verbose:
                print(f"{ds.name}: downloading {ds.url}")
            fetched = _fetch(ds.url, staging, ds.filename, retries=retries, timeout=timeout, progress=progress)
            start = time.perf_counter()
            graph, seen = _check(ds, fetched)
            parse_s = time.perf_counter() - start
            os.replace(fetched, raw)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    else:
        start = time.perf_counter()
        try:
            graph, seen = _check(ds, raw)
        except IntegrityError:
            raw.unlink()           # a damaged cached file is never used, and never kept
            raise
        parse_s = time.perf_counter() - start
    info = {"format": CACHE_FORMAT, "name": ds.name, "url": ds.url, "sha256": seen,
            "sha256_pinned": ds.sha256 is not None, "vertices": graph.num_vertices,
            "listed_edges": ds.listed_edges, "edges": graph.num_edges, "parse_seconds": round(parse_s, 3)}
    _save(graph, folder, info)
    if verbose:
        pinned = "matches the pinned hash" if ds.sha256 else "no hash is pinned for it; the counts were checked"
        print(f"{ds.name}: {graph.num_vertices:,} vertices, {ds.listed_edges:,} listed edges, parsed in "
              f"{parse_s:.1f} s; sha256 {seen} ({pinned})")
    return graph


def cached_info(name_or_dataset="web-Google") -> dict | None:
    """What the cache recorded for a dataset (url, hash seen, counts, parse time), or None."""
    try:
        return json.loads((cache_dir(dataset(name_or_dataset)) / "info.json").read_text())
    except OSError:
        return None


def standin(name_or_dataset="web-Google", seed: int = 0) -> Graph:
    """A generated graph of the dataset's size, named as a stand-in. For web-Google it is the web-like
    generator (web-Google's published vertex and edge counts, degree maxima and dangling share, ids in
    crawl order); for the others an R-MAT graph with the dataset's vertex count and listed edge count."""
    from .generators import rmat_graph, web_graph

    ds = dataset(name_or_dataset)
    edges = ds.listed_edges if ds.directed else 2 * ds.listed_edges
    if ds.name == "web-Google":
        return web_graph(ds.vertices, edges, seed=seed,
                         name=f"stand-in for web-Google (generated web-like graph, {ds.vertices:,} vertices, {edges:,} edges)")
    return rmat_graph(ds.vertices, edges, seed=seed,
                      name=f"stand-in for {ds.name} (generated R-MAT, {ds.vertices:,} vertices, {edges:,} edges)")


def load_or_standin(name_or_dataset="web-Google", **kwargs) -> Graph:
    """``load``; if the server cannot be reached, say so plainly and return the generated stand-in instead.

    Only a failed download falls back: a file that arrives damaged or altered still raises IntegrityError.
    """
    ds = dataset(name_or_dataset)
    try:
        return load(ds, **kwargs)
    except DownloadError as error:
        print(f"Could not download {ds.name}: {error}.\n"
              f"Using a generated stand-in of the same size instead. It is not the real graph: every table "
              f"and plot below names the graph it ran on.")
        return standin(ds)
