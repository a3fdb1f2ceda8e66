"""Downloads against a real HTTP server on loopback serving generated SNAP-format files: the cache, the
count and structure checks, the registry and its published statistics, the announced stand-in."""
import gzip
import hashlib
import json
import os
import time
import warnings

import networkx as nx
import numpy as np
import pytest

from helpers.data.settings import describe_path

from helpers.data import cache, datasets
from helpers.core.generators import rmat_graph
from snapserver import bounded, cached_files, serving, snap_bytes

GRAPH = rmat_graph(3_000, 20_000, seed=9, name="test graph")
SMALL = datasets.Dataset("test-small", "test-small.txt.gz", True, GRAPH.num_vertices, GRAPH.num_edges)


@pytest.fixture
def server(tmp_path, monkeypatch):
    with serving(monkeypatch, tmp_path, SMALL, snap_bytes(GRAPH, id_space=10_000)) as srv:
        yield srv



def test_download_shows_progress_fills_the_cache_and_relabels(server, capfd):
    graph = datasets.load(SMALL, retries=1)
    out = capfd.readouterr().out
    assert "100%" in out and SMALL.filename in out        # the plain-text progress bar (helpers.core.progress)
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
    second = datasets.load(SMALL, retries=1, progress=False)
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
    right = datasets.Dataset(**{**SMALL.__dict__, "sha256": hashlib.sha256(server.body).hexdigest()})
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


def test_the_test_scale_takes_a_smaller_standin_and_downloads_only_when_asked(server, monkeypatch, capsys):
    """A fraction below 1 (a lecture's test scale) gives a generated stand-in of that share of the dataset,
    without asking the server; with download=True the whole graph is downloaded, and only a failed download
    falls back to the smaller stand-in."""
    small = datasets.load_or_standin(SMALL, fraction=1 / 4)
    assert server.requests == [] and "generated, not downloaded" in capsys.readouterr().out
    assert small.name.startswith("stand-in for test-small at 1/4 of its size")
    assert small.num_vertices == round(SMALL.vertices / 4) and small.num_edges == round(SMALL.listed_edges / 4)
    assert datasets.standin(SMALL, fraction=1 / 4).num_edges == small.num_edges       # the same graph
    whole = datasets.load_or_standin(SMALL, fraction=1 / 4, download=True, retries=1, progress=False)
    assert (whole.num_vertices, whole.num_edges) == (SMALL.vertices, SMALL.listed_edges)
    server.close()
    monkeypatch.setenv(datasets.BASE_URL_VARIABLE, server.url)      # nothing listens there any more
    tiny = datasets.Dataset("tiny", "tiny.txt.gz", True, 800, 4_000)
    fallback = datasets.load_or_standin(tiny, fraction=1 / 2, download=True, retries=1, progress=False)
    assert "a generated stand-in at 0.5 of its size" in capsys.readouterr().out
    assert (fallback.num_vertices, fallback.num_edges) == (400, 2_000)
    for bad in (0, 1.5, float("nan"), "half"):
        with pytest.raises(datasets.ArgumentError, match="fraction"):
            datasets.load_or_standin(SMALL, fraction=bad)



def test_a_standins_seed_is_checked_and_the_largest_one_works():
    """A seed names the stand-in's cache folder and is the generator's: a float, a negative or an int64 that
    would wrap is refused before anything is generated or cached."""
    for seed, message in ((-3, "at least 0"), (2.0, "an integer"), (np.int64(2**63 - 1), "at most"),
                          (None, "an integer"), (np.random.default_rng(1), "an integer")):
        with pytest.raises(datasets.ArgumentError, match=f"seed must be {message}"):
            datasets.standin(SMALL, seed, fraction=1 / 4)
    from helpers.core.arguments import MAX_SEED
    assert datasets.standin(SMALL, MAX_SEED, fraction=1 / 4, verbose=False).num_vertices == 750


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


# --- structure: the statistics SNAP publishes -------------------------------------------------------

def networkx_statistics(graph, undirected=False):
    """The same statistics from networkx, independently: largest weak and strong components by node count."""
    g = nx.DiGraph()
    g.add_nodes_from(range(graph.num_vertices))
    g.add_edges_from(zip(*(a.tolist() for a in graph.edges())))
    def count(h):
        return h.to_undirected().number_of_edges() if undirected else h.number_of_edges()
    wcc = max(nx.weakly_connected_components(g), key=len)
    scc = max(nx.strongly_connected_components(g), key=len)
    return {"edges": count(g), "wcc_nodes": len(wcc), "wcc_edges": count(g.subgraph(wcc)),
            "scc_nodes": len(scc), "scc_edges": count(g.subgraph(scc))}


@pytest.mark.parametrize("seed", range(4))
def test_statistics_agree_with_networkx(seed):
    graph = rmat_graph(1_500, 4_000, seed=seed)
    assert datasets.statistics_of(graph) == networkx_statistics(graph)
    src, dst = graph.edges()
    keep = src <= dst                                   # an undirected graph, stored as SNAP stores one
    both = datasets.graph_from_pairs(np.column_stack([src[keep], dst[keep]]), relabel_ids=False,
                                     num_vertices=graph.num_vertices, undirected=True)
    found = datasets.statistics_of(both, undirected=True)
    assert found == networkx_statistics(both, undirected=True)
    assert found["edges"] == np.unique(np.column_stack([src[keep], dst[keep]]), axis=0).shape[0]


def test_statistics_count_as_snap_does_on_a_small_graph():
    # 0<->1->2<->3, 2->2 (a self-loop), 4->0, 5 alone; largest SCC {2, 3}, tied with {0, 1}: the first found
    g = datasets.graph_from_pairs(np.array([[0, 1], [1, 0], [1, 2], [2, 3], [3, 2], [2, 2], [4, 0], [5, 5]]),
                                  relabel_ids=False)
    found = datasets.statistics_of(g)
    assert found["edges"] == 8 and found["wcc_nodes"] == 5 and found["wcc_edges"] == 7
    assert found["scc_nodes"] == 2 and found["scc_edges"] in (2, 3)


def test_the_registry_pins_snaps_published_statistics():
    """The numbers on SNAP's dataset pages (data/README.md says where each was confirmed)."""
    pinned = {name: ds.fingerprint.pinned() for name, ds in datasets.DATASETS.items()}
    assert pinned["web-Google"] == dict(edges=5_105_039, wcc_nodes=855_802, wcc_edges=5_066_842,
                                        scc_nodes=434_818, scc_edges=3_419_124)
    assert pinned["Wiki-Vote"] == dict(edges=103_689, wcc_nodes=7_066, wcc_edges=103_663,
                                       scc_nodes=1_300, scc_edges=39_456)
    assert pinned["ego-Facebook"] == dict(edges=88_234, wcc_nodes=4_039, wcc_edges=88_234,
                                          scc_nodes=4_039, scc_edges=88_234)
    assert pinned["soc-LiveJournal1"] == dict(edges=68_993_773, wcc_nodes=4_843_953, wcc_edges=68_983_820,
                                              scc_nodes=3_828_682, scc_edges=65_825_429)
    for ds in datasets.DATASETS.values():        # consistent with the counts the registry checks anyway
        stats = ds.fingerprint.pinned()
        assert stats["edges"] <= ds.listed_edges and stats["wcc_nodes"] <= ds.vertices
        assert stats["scc_nodes"] <= stats["wcc_nodes"]
        assert stats["scc_edges"] <= stats["wcc_edges"] <= stats["edges"]
        assert ds.fingerprint.source.startswith("https://snap.stanford.edu/data/")


def pinned_like(graph, **changes):
    return datasets.Dataset(**{**SMALL.__dict__, "fingerprint": datasets.Fingerprint(
        **{**datasets.statistics_of(graph), **changes}, source="test")})


def test_a_file_whose_structure_matches_is_accepted(server, capsys):
    graph = datasets.load(pinned_like(GRAPH), retries=1, progress=False)
    assert graph.num_edges == GRAPH.num_edges
    out = capsys.readouterr().out
    found = datasets.statistics_of(GRAPH)
    assert (f"test-small: largest WCC {found['wcc_nodes']:,} nodes / {found['wcc_edges']:,} edges, largest "
            f"SCC {found['scc_nodes']:,} / {found['scc_edges']:,} (as SNAP publishes)") in out
    info = datasets.cached_info(SMALL)
    assert info["statistics_checked"] == sorted(datasets.STATISTICS) and info["statistics"] == found


def test_an_altered_file_with_the_same_counts_is_refused_by_its_structure(server):
    """The issue's case: lines and vertices as published, but some lines duplicated in place of others."""
    text = gzip.decompress(server.body).decode().splitlines(keepends=True)
    body = [i for i, line in enumerate(text) if not line.startswith("#")]
    pairs = np.array([line.split() for line in (text[i] for i in body)], dtype=np.int64)
    ids, counts = np.unique(pairs, return_counts=True)
    common = set(ids[counts > 3].tolist())
    victims = [i for i, (u, v) in zip(body[1:], pairs[1:]) if u in common and v in common][:300:3]
    for i in victims:
        text[i] = text[body[0]]                          # the first edge line, repeated
    server.serve(SMALL.filename, gzip.compress("".join(text).encode()))
    left = GRAPH.num_edges - len(victims)
    with pytest.raises(datasets.IntegrityError, match=rf"test-small: the structure differs: edges: SNAP "
                                                      rf"publishes {GRAPH.num_edges:,}, the file gives "
                                                      rf"{left:,}"):
        datasets.load(pinned_like(GRAPH), retries=1, progress=False)
    assert cached_files(SMALL) == []


def test_reversed_edges_are_caught_by_the_component_sizes(server):
    text = gzip.decompress(server.body).decode().splitlines(keepends=True)
    body = [i for i, line in enumerate(text) if not line.startswith("#")]
    for i in body[:2_000:5]:
        u, v = text[i].split()
        text[i] = f"{v}\t{u}\n"
    server.serve(SMALL.filename, gzip.compress("".join(text).encode()))
    with pytest.raises(datasets.IntegrityError, match=r"structure differs: .*largest SCC: SNAP publishes"):
        datasets.load(pinned_like(GRAPH), retries=1, progress=False)


def test_statistics_from_an_override_file_are_announced_and_used(server, tmp_path, monkeypatch, capsys):
    stats = tmp_path / "stats.json"
    stats.write_text(json.dumps({SMALL.name: datasets.statistics_of(GRAPH)}))
    monkeypatch.setenv(datasets.STATISTICS_VARIABLE, str(stats))
    strict = pinned_like(GRAPH, wcc_nodes=1)            # the registry's numbers would refuse the file
    datasets.load(strict, retries=1, progress=False)
    out = capsys.readouterr().out
    assert (f"NOTE: test-small: integrity statistics taken from {describe_path(stats)} "
            f"($PAGERANK_DATA_STATISTICS) instead of SNAP's published ones") in out
    stats.write_text(json.dumps({SMALL.name: {"scc_nodes": 5}}))
    datasets.cache_dir(SMALL).joinpath("info.json").unlink()
    with pytest.raises(datasets.IntegrityError, match=rf"largest SCC: {stats} says 5, the file gives"):
        datasets.load(strict, retries=1, progress=False)


@pytest.mark.parametrize("content, message", [
    ("not json", "cannot be used"), ("[1, 2]", "must name a JSON file"),
    ('{"test-small": {"triangles": 3}}', r"unknown statistics \['triangles'\]"),
    ('{"test-small": {"wcc_nodes": "many"}}', r"non-integer values for \['wcc_nodes'\]"),
    ('{"test-small": {"name": "two\\nlines"}}', r"a 'name' that is not one line of at most 200 printable"),
    ("[" * 100_000, r"cannot be used \(maximum recursion depth exceeded"),     # was a bare RecursionError
])
def test_a_bad_override_file_is_a_setting_error(server, tmp_path, monkeypatch, content, message):
    stats = tmp_path / "stats.json"
    stats.write_text(content)
    monkeypatch.setenv(datasets.STATISTICS_VARIABLE, str(stats))
    with pytest.raises(datasets.SettingError, match=message):
        datasets.load_or_standin(SMALL, retries=1, progress=False)   # not a download failure: no fallback
    monkeypatch.setenv(datasets.STATISTICS_VARIABLE, str(tmp_path / "missing.json"))
    with pytest.raises(datasets.SettingError, match=r"\$PAGERANK_DATA_STATISTICS=.*missing\.json"):
        datasets.load(SMALL, retries=1, progress=False)


# --- headers and direction in a download ----------------------------------------------------------------

def test_a_header_that_disagrees_with_a_good_body_is_warned_about(server):
    text = gzip.decompress(server.body).decode().replace(f"Edges: {GRAPH.num_edges}", "Edges: 999")
    server.serve(SMALL.filename, gzip.compress(text.encode()))
    with pytest.warns(datasets.GraphFormatWarning,
                      match=rf"the header says {GRAPH.num_vertices:,} nodes and 999 edges, the body has .* "
                            rf"and {GRAPH.num_edges:,} edge lines"):
        datasets.load(SMALL, retries=1, progress=False)


def test_a_header_saying_undirected_for_a_directed_registry_entry_is_warned_about(server):
    text = gzip.decompress(server.body).decode().replace("# generated", "# Undirected graph: generated", 1)
    server.serve(SMALL.filename, gzip.compress(text.encode()))
    with pytest.warns(datasets.GraphFormatWarning,
                      match="header says undirected, the registry lists it as directed"):
        graph = datasets.load(SMALL, retries=1, progress=False)
    assert graph.num_edges == GRAPH.num_edges               # read as the registry says


@pytest.mark.parametrize("end", ["\r\n", "\r"], ids=["CRLF", "CR"])
def test_a_header_whose_lines_end_in_carriage_returns_is_read(server, end):
    """Was refused: a lone \\r in the header ended a line for NumPy's reader but not for the first pass, which
    took '# FromNodeId\\tToNodeId\\r2\\t877' for one comment and so counted an edge line too few."""
    header, body = gzip.decompress(server.body).decode().split("\n# FromNodeId\tToNodeId\n")
    text = header.replace("\n", end) + end + "# FromNodeId\tToNodeId" + end + body
    server.serve(SMALL.filename, gzip.compress(text.encode()))
    with warnings.catch_warnings():
        warnings.simplefilter("error")                       # the header's counts were read: they agree
        graph = datasets.load(SMALL, retries=1, progress=False)
    assert np.array_equal(graph.out_targets, GRAPH.out_targets)
    assert np.array_equal(graph.in_sources, GRAPH.in_sources)


def test_a_download_whose_line_ends_were_converted_twice_is_read(server):
    """Was refused ('more than 20,000 blank or comment lines'): \\r\\r\\n is a lone \\r and a \\r\\n, a blank
    line after every line, and the bound on a download's lines counted those blank lines as if a bomb's."""
    text = gzip.decompress(server.body).decode().replace("\n", "\r\r\n")
    server.serve(SMALL.filename, gzip.compress(text.encode()))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        graph = datasets.load(SMALL, retries=1, progress=False)
    assert np.array_equal(graph.out_targets, GRAPH.out_targets)
    assert np.array_equal(graph.in_sources, GRAPH.in_sources)


def test_text_after_a_lone_carriage_return_in_the_header_is_a_line_of_its_own(server):
    text = gzip.decompress(server.body).decode().replace("\n# Nodes:", "\r(Nodes and edges:)\n# Nodes:", 1)
    server.serve(SMALL.filename, gzip.compress(text.encode()))
    with pytest.raises(datasets.IntegrityError, match=r"test-small: the download cannot be parsed: "
                                                      r"test-small\.txt\.gz: line 2: expected two vertex ids "
                                                      r"\(source target\), found 3 column\(s\): "
                                                      r"'\(Nodes and edges:\)'"):
        datasets.load(SMALL, retries=1, progress=False)
    assert cached_files(SMALL) == []

def test_an_undirected_registry_entry_is_read_undirected_without_warnings(server):
    pairs = "".join(f"{u} {v}\n" for u, v in [(0, 1), (0, 2), (1, 2), (2, 3), (3, 4), (1, 4), (4, 5), (5, 6),
                                               (6, 7), (7, 8), (8, 9), (2, 9)])
    server.serve("und.txt.gz", gzip.compress(pairs.encode()))
    undirected = datasets.Dataset("und", "und.txt.gz", False, 10, 12,
                                  fingerprint=datasets.Fingerprint(12, 10, 12, 10, 12))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        graph = datasets.load(undirected, retries=1, progress=False)
    assert graph.num_edges == 24 and not graph.dangling.any()


@pytest.mark.parametrize("fields, message", [
    (dict(filename="../escape.txt.gz"), "Dataset filename must be a plain file name"),
    (dict(name="a/b"), "Dataset name must be a plain file name"),
    (dict(vertices=2.5), "vertices must be an integer"),
    (dict(directed="yes"), "directed must be True or False"),
    (dict(sha256="abc"), "sha256 must be 64 lower-case hex digits"),
])
def test_registry_entries_are_checked(fields, message):
    with pytest.raises(datasets.ArgumentError, match=message):
        datasets.Dataset(**{**SMALL.__dict__, **fields})


def test_unknown_names_are_the_projects_key_error():
    with pytest.raises(datasets.UnknownDatasetError,
                       match="unknown dataset 'web-google'; known: web-Google"):
        datasets.dataset("web-google")
    assert issubclass(datasets.UnknownDatasetError, KeyError)


def test_staging_folders_left_by_interrupted_runs_are_removed(server):
    import os
    folder = datasets.cache_dir(SMALL)
    old, young = folder / ".download-old", folder / ".download-young"
    for staging in (old, young):
        staging.mkdir()
        (staging / SMALL.filename).write_bytes(b"partial")
    day_ago = time.time() - 2 * cache.STALE_STAGING
    os.utime(old, (day_ago, day_ago))
    datasets.load(SMALL, retries=1, progress=False)
    assert not old.exists() and young.exists()                     # a young one may be another download


def staging_of(folder, tag: str):
    """A staging folder named as a download of the process ``tag`` names makes it, with a 64 KiB part."""
    staging = folder / f".download-{tag}-k3y"
    staging.mkdir()
    (staging / f"{SMALL.filename}.part1").write_bytes(b"\0" * 65536)
    return staging


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="tells a process's owner through Linux's /proc")
def test_a_staging_folder_is_removed_once_its_owner_has_ended_not_before(server):
    """Was kept for 24 hours whoever owned it; now the next load removes it as soon as its process is gone,
    and never while it runs (a download of another process, or of another thread of this one)."""
    import subprocess
    import sys

    folder = datasets.cache_dir(SMALL)
    alive, ended = (subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"]) for _ in "ab")
    try:
        live, dead, own = (staging_of(folder, cache.owner_tag(pid))
                           for pid in (alive.pid, ended.pid, os.getpid()))
        reused = staging_of(folder, f"{alive.pid}-1-{cache.machine()}")    # its pid, another start
        ended.kill()
        ended.wait()
        datasets.load(SMALL, retries=1, progress=False)
        assert not dead.exists() and not reused.exists()
        assert live.is_dir() and own.is_dir()
        alive.kill()
        alive.wait()
        datasets.load(SMALL, retries=1, progress=False)            # from the cache: still tidied
        assert not live.exists() and own.is_dir() and len(server.requests) == 1
    finally:
        for process in (alive, ended):
            process.kill()
            process.wait()


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="tells a process's owner through Linux's /proc")
def test_a_download_killed_midway_leaves_nothing_at_the_next_load(server):
    """The issue's case: a loader killed mid-download left its staging folder and a .part file for 24 h."""
    from snapserver import load_elsewhere

    server.plan(SMALL.filename, server.trickle(interval=0.05, step=2_000))      # some seconds in all
    child = load_elsewhere(SMALL, progress=False, retries=1)
    folder = datasets.cache_dir(SMALL)
    try:
        start = time.monotonic()
        while not any(p.stat().st_size for p in folder.glob(".download-*/*.part1")):
            assert child.poll() is None and time.monotonic() - start < 60, child.communicate()
            time.sleep(0.05)
    finally:
        child.kill()
        child.communicate()
    assert list(folder.glob(".download-*"))                        # what the killed loader left
    assert datasets.load(SMALL, retries=1, progress=False).num_edges == GRAPH.num_edges
    assert list(folder.glob(".download-*")) == []


def test_a_file_that_expands_beyond_its_lines_is_refused_without_reading_it_all(server):
    bomb = gzip.compress(b"0 1\n" * (20 * SMALL.listed_edges))       # 20 times the lines, 1% of the bytes
    server.serve(SMALL.filename, bomb)
    with pytest.raises(datasets.IntegrityError,
                       match=rf"cannot be parsed: .*more than {SMALL.listed_edges:,} edge lines"):
        datasets.load(SMALL, retries=1, progress=False)


# --- what a served file is, hostile downloads, progress in a log ------------------------------------------

def test_a_served_file_is_named_as_its_statistics_file_says(server, tmp_path, monkeypatch, capsys):
    """The test mirror serves generated files under SNAP's names: the graph must say what it is."""
    name = "generated R-MAT graph served in place of test-small"
    stats = tmp_path / "stats.json"
    entry = {**datasets.statistics_of(GRAPH), datasets.DISPLAY_NAME: name}
    stats.write_text(json.dumps({SMALL.name: entry}))
    monkeypatch.setenv(datasets.STATISTICS_VARIABLE, str(stats))
    assert datasets.load(SMALL, retries=1, progress=False).name == name
    assert f"{name}: largest WCC" in capsys.readouterr().out
    assert datasets.load_or_standin(SMALL, progress=False).name == name           # from the cache
    assert f"{name}: loaded from the cache" in capsys.readouterr().out
    assert datasets.cached_info(SMALL)["graph_name"] == name
    monkeypatch.delenv(datasets.STATISTICS_VARIABLE)
    assert datasets.load(SMALL, progress=False).name == name      # the cache holds that file: still named so


def test_a_download_holding_one_huge_line_is_refused_naming_the_line(server):
    member = gzip.compress(b"7" * 2**20, compresslevel=9)
    server.serve(SMALL.filename, gzip.compress(b"# generated\n") + member * 1024)    # a 1 GiB line, ~1 MB
    start = time.monotonic()
    with pytest.raises(datasets.IntegrityError, match=r"test-small: the download cannot be parsed: "
                                                      r".*test-small\.txt\.gz: line 2 is longer than "
                                                      r"1,048,576"):
        datasets.load(SMALL, retries=1, progress=False)
    assert time.monotonic() - start < 20 and cached_files(SMALL) == []


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs (named pipes)")
def test_a_fifo_as_the_statistics_file_is_a_setting_error_at_once(server, tmp_path, monkeypatch):
    fifo = tmp_path / "stats.json"
    os.mkfifo(fifo)
    monkeypatch.setenv(datasets.STATISTICS_VARIABLE, str(fifo))
    error = bounded(lambda: datasets.load(SMALL, retries=1, progress=False), 20)
    assert isinstance(error, datasets.SettingError)
    assert "it is a FIFO (named pipe), not a regular file" in str(error)


def test_progress_in_a_captured_stream_is_plain_lines(server, capfd, monkeypatch):
    from helpers.core import progress

    monkeypatch.setattr(progress, "FIRST_SECONDS", 0.0)            # a start line even for a fast download
    datasets.load(SMALL, retries=1)
    captured = capfd.readouterr()
    assert "\r" not in captured.out + captured.err
    lines = [line for line in captured.out.splitlines() if line.startswith(SMALL.filename)]
    assert lines[0].startswith(f"{SMALL.filename}: started (")
    assert lines[-1].startswith(f"{SMALL.filename}: 100% (")
    datasets.standin(datasets.Dataset("tiny-bar", "tiny-bar.txt.gz", True, 400, 1_500), cache=False)
    assert "generating an R-MAT graph: 100% (1,500 edges of 1,500 edges)" in capfd.readouterr().out


def test_a_download_that_ends_before_the_first_look_still_shows_its_progress(server, capfd, monkeypatch):
    import threading

    from helpers.data import download

    class Finished(threading.Thread):          # the transfer is over before the watcher first looks
        def start(self):
            super().start()
            super().join()

    monkeypatch.setattr(download.threading, "Thread", Finished)
    datasets.load(SMALL, retries=1)
    lines = [line for line in capfd.readouterr().out.splitlines() if line.startswith(SMALL.filename)]
    assert lines and lines[-1].startswith(f"{SMALL.filename}: 100% (")


def test_a_terminal_gets_tqdm_s_bar(monkeypatch):
    import io
    import sys

    from helpers.core import progress

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.setattr(sys, "stdout", Terminal())
    with progress.bar(10, "drawn") as shown:
        shown.update(10)
    assert type(shown).__name__ == "tqdm" and "\r" in sys.stdout.getvalue()
    monkeypatch.setattr(sys, "stdout", io.StringIO())
    assert isinstance(progress.bar(10, "kept"), progress.Lines)


def test_a_statistics_file_under_an_unknown_users_home_is_a_setting_error(server, monkeypatch):
    monkeypatch.setenv(datasets.STATISTICS_VARIABLE, "~no-such-user-4f2a/stats.json")   # was RuntimeError
    with pytest.raises(datasets.SettingError,
                       match=r"no-such-user-4f2a/stats\.json' cannot be used \(Could not determine home"):
        datasets.load(SMALL, retries=1, progress=False)


def test_a_standin_is_never_taken_from_a_cache_made_for_another_size(tmp_path, monkeypatch):
    monkeypatch.setenv("PAGERANK_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))

    def made(n, m):
        return datasets.standin(datasets.Dataset("mine", "mine.txt.gz", True, n, m), progress=False,
                                verbose=False)
    assert made(500, 2_000).num_vertices == 500
    assert made(900, 4_000).num_vertices == 900                # was the 500-vertex graph, from the cache
    assert made(900, 4_000).num_vertices == 900


# --- messages that any stream can take ------------------------------------------------------------------

def test_a_non_ascii_data_folder_under_an_ascii_stream_is_no_error(server, tmp_path):
    """Was UnicodeEncodeError out of load() under PYTHONIOENCODING=ascii: a message naming the data folder
    (here one that cannot be used), the dataset's name, its progress lines."""
    from snapserver import load_elsewhere

    blocker = tmp_path / "dätä-ñame"
    blocker.write_text("")
    named = datasets.Dataset("tést-small", SMALL.filename, True, SMALL.vertices, SMALL.listed_edges)
    env = {"PYTHONIOENCODING": "ascii", "PAGERANK_DATA_DIR": str(blocker / "data")}
    out, err = load_elsewhere(named, env=env, retries=1).communicate(timeout=120)
    assert f"loaded {GRAPH.num_vertices} {GRAPH.num_edges}".encode() in out, err.decode("ascii", "replace")
    out = out.decode("ascii")                                      # it is ASCII: the escapes say the rest
    assert f"cannot write to {blocker}/data (".encode("ascii", "backslashreplace").decode() in out
    assert "t\\xe9st-small: downloading" in out and "t\\xe9st-small: largest WCC" in out
    assert f"{SMALL.filename}: 100% (" in out                        # the progress lines too


def test_fit_and_say_never_raise_on_a_streams_encoding():
    import io

    from helpers.core import progress

    stream = io.TextIOWrapper(io.BytesIO(), encoding="ascii", errors="strict")
    progress.say("dätä \udcff ok", file=stream)                    # a folder's undecodable byte, too
    progress.say("plain", file=stream)
    stream.flush()
    assert stream.buffer.getvalue() == b"d\\xe4t\\xe4 \\udcff ok\nplain\n"
    assert progress.fit("dätä", io.TextIOWrapper(io.BytesIO(), encoding="utf-8")) == "dätä"

    class Odd(io.StringIO):
        encoding = "no-such-codec"

    assert progress.fit("dätä", Odd()) == "d\\xe4t\\xe4"


@pytest.mark.parametrize("broken", ["closed", "a broken pipe"])
def test_a_stream_that_takes_no_message_costs_the_message_not_the_load(server, monkeypatch, broken):
    """Was: with standard output closed, or a pipe whose reader has gone (``... | head``), the first message
    raised a raw ValueError or BrokenPipeError out of load() and load_or_standin()."""
    import io
    import sys

    from helpers.core import progress

    class Gone(io.StringIO):
        def write(self, text):
            raise BrokenPipeError(32, "Broken pipe")

    stream = Gone() if broken == "a broken pipe" else io.StringIO()
    if broken == "closed":
        stream.close()
    monkeypatch.setattr(sys, "stdout", stream)
    monkeypatch.setattr(sys, "stderr", stream)
    graph = datasets.load(SMALL, retries=1)                          # verbose: its lines and progress
    assert graph.num_vertices == GRAPH.num_vertices and graph.num_edges == GRAPH.num_edges
    assert datasets.load_or_standin(SMALL, retries=1).num_edges == GRAPH.num_edges

    def shown_as_python_shows_it(message, category, filename, lineno, file=None, line=None):
        sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))

    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = shown_as_python_shows_it              # to standard error, as Python does
        progress.warn("a warning with nowhere to go", datasets.GraphFormatWarning)
    with warnings.catch_warnings():
        warnings.simplefilter("error")                              # the caller's filter still raises
        with pytest.raises(datasets.GraphFormatWarning):
            progress.warn("raised", datasets.GraphFormatWarning)


def test_progress_lines_and_warnings_fit_an_ascii_stream(monkeypatch):
    import io
    import sys

    from helpers.core import progress

    out = io.TextIOWrapper(io.BytesIO(), encoding="ascii", errors="strict")
    err = io.TextIOWrapper(io.BytesIO(), encoding="ascii", errors="strict")
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setattr(sys, "stderr", err)
    with progress.bar(10, "tést") as shown:                        # a log: whole lines
        shown.update(10)
    out.flush()
    assert out.buffer.getvalue().startswith(b"t\\xe9st: 100% (")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        progress.warn("dätä is odd", datasets.GraphFormatWarning)
    assert [str(w.message) for w in caught] == ["d\\xe4t\\xe4 is odd"]

    def shown_as_python_shows_it(message, category, filename, lineno, file=None, line=None):
        err.write(warnings.formatwarning(message, category, "/cöurse/helpers/datasets.py", lineno, line))

    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = shown_as_python_shows_it          # a source file in a non-ASCII folder
        progress.warn("plain words", datasets.GraphFormatWarning)
    err.flush()
    assert b"GraphFormatWarning: plain words" in err.buffer.getvalue()


def test_importing_the_data_path_in_a_notebook_prints_nothing():
    """pooch imports tqdm.auto, whose 'IProgress not found' warning landed in every notebook's output."""
    import nbclient
    import nbformat

    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("import helpers.data.datasets")])
    nbclient.NotebookClient(notebook, timeout=120).execute()
    assert notebook.cells[0].outputs == []
