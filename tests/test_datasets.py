"""Downloads against a real HTTP server on loopback serving generated SNAP-format files."""
import gzip
import time

import numpy as np
import pytest

from helpers import datasets
from helpers.generators import rmat_graph
from snapserver import SnapServer, snap_file

GRAPH = rmat_graph(3_000, 20_000, seed=9, name="test graph")
SMALL = datasets.Dataset("test-small", "test-small.txt.gz", True, GRAPH.num_vertices, GRAPH.num_edges)


@pytest.fixture
def server(tmp_path, monkeypatch):
    srv = SnapServer()
    monkeypatch.setenv(datasets.BASE_URL_VARIABLE, srv.url)
    monkeypatch.setenv("PAGERANK_DATA_DIR", str(tmp_path / "data"))
    srv.body = snap_file(GRAPH, tmp_path / "served.txt.gz", id_space=10_000).read_bytes()
    srv.serve(SMALL.filename, srv.body)
    yield srv
    srv.close()


def cached_files(ds):
    folder = datasets.cache_dir(ds)
    return sorted(p.name for p in folder.rglob("*") if p.is_file()) if folder.exists() else []


def test_download_shows_progress_fills_the_cache_and_relabels(server, capfd):
    graph = datasets.load(SMALL, retries=1)
    err = capfd.readouterr().err
    assert "100%" in err                                  # pooch's progress bar
    assert cached_files(SMALL) == ["graph.npz", "info.json", SMALL.filename]
    assert graph.num_vertices == GRAPH.num_vertices and graph.num_edges == GRAPH.num_edges
    assert graph.original_ids.max() + 1 > graph.num_vertices   # sparse ids, relabelled away
    info = datasets.cached_info(SMALL)
    assert info["sha256"] == datasets.sha256_of(datasets.cache_dir(SMALL) / SMALL.filename)
    assert not info["sha256_pinned"] and info["url"] == server.url + SMALL.filename
    # the served ids are sorted, so relabelling must give back exactly the generated graph
    assert np.array_equal(graph.out_offsets, GRAPH.out_offsets)
    assert np.array_equal(graph.out_targets, GRAPH.out_targets)
    assert np.array_equal(graph.in_sources, GRAPH.in_sources)


def test_a_cached_call_makes_no_request(server):
    first = datasets.load(SMALL, retries=1, progress=False)
    asked = len(server.requests)
    assert asked == 1
    start = time.perf_counter()
    second = datasets.load(SMALL, retries=1, progress=False)
    assert time.perf_counter() - start < 1.0
    assert len(server.requests) == asked
    for name in ("out_offsets", "out_targets", "in_offsets", "in_sources", "out_degree", "original_ids"):
        assert np.array_equal(getattr(first, name), getattr(second, name))


def test_a_truncated_gzip_is_refused_and_nothing_is_cached(server):
    server.serve(SMALL.filename, server.body[: len(server.body) // 2])
    with pytest.raises(datasets.IntegrityError, match="damaged or truncated"):
        datasets.load(SMALL, retries=1, progress=False)
    assert cached_files(SMALL) == []


def test_a_checksum_mismatch_is_refused_and_nothing_is_cached(server):
    pinned = datasets.Dataset(**{**SMALL.__dict__, "sha256": "0" * 64})
    with pytest.raises(datasets.IntegrityError, match="does not match the pinned"):
        datasets.load(pinned, retries=1, progress=False)
    assert cached_files(pinned) == []
    right = datasets.Dataset(**{**SMALL.__dict__, "sha256": datasets.sha256_of_bytes(server.body)})
    assert datasets.load(right, retries=1, progress=False).num_edges == GRAPH.num_edges


def test_an_edge_count_mismatch_is_refused_and_nothing_is_cached(server):
    wrong = datasets.Dataset(**{**SMALL.__dict__, "listed_edges": SMALL.listed_edges + 1})
    with pytest.raises(datasets.IntegrityError, match=r"expected .* listed edges, the file gives"):
        datasets.load(wrong, retries=1, progress=False)
    assert cached_files(wrong) == []


def test_an_altered_file_is_refused(server, tmp_path):
    text = gzip.decompress(server.body).decode().replace("\n", "\n7 x\n", 1)
    server.serve(SMALL.filename, gzip.compress(text.encode()))
    with pytest.raises(datasets.IntegrityError, match=r"cannot be parsed: .*'x' is not an integer"):
        datasets.load(SMALL, retries=1, progress=False)
    assert cached_files(SMALL) == []


@pytest.mark.parametrize("status, tries", [(404, 1), (500, 2)])
def test_http_errors_are_named_server_errors_retried_and_nothing_is_cached(server, status, tries):
    server.statuses["/" + SMALL.filename] = status
    with pytest.raises(datasets.DownloadError, match=f"HTTP {status}"):
        datasets.load(SMALL, retries=2, progress=False)
    assert len(server.requests) == tries
    assert cached_files(SMALL) == []


def test_an_unreachable_server_leads_to_the_announced_standin(server, monkeypatch, capsys):
    server.close()
    monkeypatch.setenv(datasets.BASE_URL_VARIABLE, server.url)      # nothing listens there any more
    tiny = datasets.Dataset("tiny", "tiny.txt.gz", True, 500, 2_000)
    graph = datasets.load_or_standin(tiny, retries=1, progress=False)
    out = capsys.readouterr().out
    assert "Could not download tiny" in out and "could not connect" in out
    assert "stand-in" in out and "names the graph it ran on" in out
    assert graph.name.startswith("stand-in for tiny") and graph.num_vertices == 500
    assert graph.num_edges == 2_000
    assert cached_files(tiny) == []


def test_a_damaged_file_does_not_fall_back_silently(server):
    server.serve(SMALL.filename, server.body[:100])
    with pytest.raises(datasets.IntegrityError):
        datasets.load_or_standin(SMALL, retries=1, progress=False)


def test_the_registry():
    web = datasets.DATASETS["web-Google"]
    assert (web.vertices, web.listed_edges, web.directed) == (875_713, 5_105_039, True)
    assert not datasets.DATASETS["ego-Facebook"].directed
    assert {"web-Google", "ego-Facebook", "Wiki-Vote", "soc-LiveJournal1"} <= set(datasets.DATASETS)
    assert web.url.endswith("/web-Google.txt.gz")
    with pytest.raises(KeyError, match="unknown dataset 'nope'"):
        datasets.load("nope")


def test_undirected_datasets_double_their_pairs(server, tmp_path):
    pairs = "0 1\n1 2\n2 3\n"
    server.serve("u.txt.gz", gzip.compress(pairs.encode()))
    undirected = datasets.Dataset("u", "u.txt.gz", False, 4, 3)
    graph = datasets.load(undirected, retries=1, progress=False)
    assert graph.num_edges == 6 and graph.out_degree.tolist() == [1, 2, 2, 1]


def test_a_failed_download_leaves_no_progress_bar_behind(server, monkeypatch, capfd):
    import gc
    server.close()
    monkeypatch.setenv(datasets.BASE_URL_VARIABLE, server.url)
    with pytest.raises(datasets.DownloadError):
        datasets.load(datasets.Dataset("gone", "gone.txt.gz", True, 10, 10), retries=2)
    capfd.readouterr()
    gc.collect()                      # a bar left open would print when collected, into whatever runs next
    assert capfd.readouterr().err == ""
