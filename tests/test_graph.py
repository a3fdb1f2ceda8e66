import bz2
import gzip
import lzma
import os
import re
import time
import tracemalloc
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from helpers.core import arguments, graph
from helpers.data import edgelist, graphfiles
from helpers.data.cache import arrays_sha256
from helpers.data.edgelist import MAX_LINE_BYTES, NotRegularFileError, open_regular
from helpers.data.graphfiles import (
    graph_from_pairs, looks_undirected, read_edge_list, read_edge_pairs, read_header, write_edge_list)
from helpers.core.arguments import ArgumentError, GraphFormatError
from helpers.core.graph import (
    GraphFormatWarning, GraphTooLargeError, INT32_EDGE_LIMIT, build_bytes, check_csr, from_edges,
    offsets_dtype, relabel)
from helpers.core.generators import adversarial_graph, random_graph
from fake_arrays import GpuArray, masked, matrix
from snapserver import bounded


def test_csr_both_ways_on_a_small_graph():
    # 0->1, 0->2, 1->2, 2->0, 2->3 (vertex 3 dangling)
    g = from_edges([0, 0, 1, 2, 2], [1, 2, 2, 0, 3])
    assert g.num_vertices == 4 and g.num_edges == 5
    assert g.out_offsets.tolist() == [0, 2, 3, 5, 5]
    assert g.out_targets.tolist() == [1, 2, 2, 0, 3]
    assert g.in_offsets.tolist() == [0, 1, 2, 4, 5]
    assert g.in_sources.tolist() == [2, 0, 0, 1, 2]
    assert g.out_degree.tolist() == [2, 1, 2, 0]
    assert g.dangling.tolist() == [False, False, False, True]
    assert g.in_degree.tolist() == [1, 1, 2, 1]


def test_policy_duplicates_merged_self_loops_kept():
    g = from_edges([0, 0, 0, 1, 1], [1, 1, 0, 0, 0])
    assert g.num_edges == 3                      # 0->1 once, 0->0 kept, 1->0 once
    assert g.out_degree.tolist() == [2, 1]
    assert g.out_targets.tolist() == [0, 1, 0]


def test_isolated_vertices_kept_when_num_vertices_given():
    g = from_edges([0], [1], num_vertices=5)
    assert g.num_vertices == 5
    assert g.dangling.sum() == 4
    assert g.in_degree.tolist() == [0, 1, 0, 0, 0]


def test_in_csr_is_the_transpose_of_out_csr_on_random_graphs():
    for seed in range(5):
        g = adversarial_graph(3_000, seed=seed, hub_in_links=2_500)
        shape = (g.num_vertices,) * 2
        out = sp.csr_matrix((np.ones(g.num_edges), g.out_targets, g.out_offsets), shape=shape)
        inn = sp.csr_matrix((np.ones(g.num_edges), g.in_sources, g.in_offsets), shape=(g.num_vertices,) * 2)
        assert (out.T != inn).nnz == 0
        for v in range(0, g.num_vertices, 97):   # in-link lists are sorted by source
            row = g.in_sources[g.in_offsets[v]:g.in_offsets[v + 1]]
            assert np.all(np.diff(row) > 0)
        assert g.in_degree.max() >= 2_500


def test_offsets_switch_to_int64_at_two_to_the_31_edges():
    assert offsets_dtype(0) is np.int32
    assert offsets_dtype(INT32_EDGE_LIMIT - 1) is np.int32
    assert offsets_dtype(INT32_EDGE_LIMIT) is np.int64
    g = random_graph(100, seed=1)
    assert g.out_offsets.dtype == np.int32 and g.in_offsets.dtype == np.int32
    assert g.out_targets.dtype == np.int32 and g.in_sources.dtype == np.int32


def test_relabel_keeps_the_mapping():
    src, dst, ids = relabel(np.array([100, 7, 5_000_000_000]), np.array([7, 42, 100]))
    assert ids.tolist() == [7, 42, 100, 5_000_000_000]
    assert ids[src].tolist() == [100, 7, 5_000_000_000]
    assert ids[dst].tolist() == [7, 42, 100]
    src, dst, ids = relabel(np.array([3, 9]), np.array([9, 4]))   # compact ids take the lookup path
    assert ids.tolist() == [3, 4, 9] and src.tolist() == [0, 2] and dst.tolist() == [2, 1]


@pytest.mark.parametrize("suffix", [".txt", ".txt.gz"])
def test_snap_file_round_trip_with_sparse_ids(tmp_path, suffix):
    text = "# Directed graph\n# FromNodeId\tToNodeId\n10\t20\n20\t30\n10\t30\n30\t10\n\n10 20\n"
    path = tmp_path / f"g{suffix}"
    if suffix.endswith(".gz"):
        with gzip.open(path, "wt") as f:
            f.write(text)
    else:
        path.write_text(text)
    g = read_edge_list(path)
    assert g.num_vertices == 3 and g.num_edges == 4       # the repeated 10->20 is merged
    assert g.original_ids.tolist() == [10, 20, 30]
    again = read_edge_list(write_edge_list(g, tmp_path / f"again{suffix}"))
    assert again.original_ids.tolist() == [10, 20, 30]
    assert np.array_equal(again.out_targets, g.out_targets)


def test_without_relabelling_ids_are_used_as_given(tmp_path):
    path = tmp_path / "g.txt"
    path.write_text("0 3\n3 1\n")
    g = read_edge_list(path, relabel_ids=False, num_vertices=6)
    assert g.num_vertices == 6 and g.original_ids is None
    assert g.out_degree.tolist() == [1, 0, 0, 1, 0, 0]


def test_undirected_pairs_become_two_edges(tmp_path):
    path = tmp_path / "ego.txt"
    path.write_text("0 1\n1 2\n")
    g = read_edge_list(path, undirected=True)
    assert g.num_edges == 4 and g.out_degree.tolist() == [1, 2, 1]


# --- malformed input: every case names the file and the line ---------------------------------------

@pytest.mark.parametrize("body, message", [
    ("0 1\n1 x\n", r"line 2: 'x' is not an integer vertex id"),
    ("0 1\n# note\n2 1.5\n", r"line 3: '1.5' is not an integer vertex id"),
    ("0 1\n-4 2\n", r"line 2: negative vertex id -4"),
    ("0 1\n7\n", r"line 2: expected two vertex ids \(source target\), found 1 column"),
    ("0 1 2\n", r"line 1: expected two vertex ids \(source target\), found 3 column"),
    ("0 1\n1 9223372036854775808\n", r"line 2: vertex id 9223372036854775808 does not fit in 64 bits"),
    # binary garbage in the body: the line is named, never a UnicodeDecodeError
    (b"0 1\n\x00\xff\x13 2\n", r"line 2: '\\x00\xff\\x13' is not an integer vertex id"),
    (b"0 1\n1 2\n\xde\xad\xbe\xef\n", r"line 3: expected two vertex ids \(source target\), found 1 column"),
    (b"0 1\n1\xc2\xa02\n", r"line 2: .* is not an integer vertex id"),
    (b"0 1\n\x89PNG\r\n\x1a\n", r"line 2: expected two vertex ids \(source target\), found 1 column"),
    (b"0 1\n\x89PNG x\r\n", r"line 2: '\\x89PNG' is not an integer vertex id"),
])
def test_malformed_lines_are_named(tmp_path, body, message):
    path = tmp_path / "bad.txt"
    path.write_bytes(body if isinstance(body, bytes) else body.encode())
    with pytest.raises(GraphFormatError, match=message) as caught:
        read_edge_list(path)
    assert str(path) in str(caught.value)


@pytest.mark.parametrize("body", ["", "# only a comment\n# and another\n", "\n\n"])
def test_empty_files_are_refused(tmp_path, body):
    path = tmp_path / "empty.txt"
    path.write_text(body)
    with pytest.raises(GraphFormatError, match=r"empty\.txt: no edges found"):
        read_edge_list(path)


def test_ids_beyond_the_declared_vertex_count(tmp_path):
    path = tmp_path / "g.txt"
    path.write_text("0 1\n1 2\n2 5\n")
    with pytest.raises(GraphFormatError, match=r"g\.txt: line 3: vertex id 5 is beyond the declared vertex "
                                                r"count 4 \(ids run 0\.\.3\)"):
        read_edge_list(path, relabel_ids=False, num_vertices=4)


def test_damaged_gzip_is_refused(tmp_path):
    good = tmp_path / "g.txt.gz"
    with gzip.open(good, "wt") as f:
        f.write("".join(f"{i} {i + 1}\n" for i in range(20_000)))
    cut = tmp_path / "cut.txt.gz"
    cut.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    with pytest.raises(GraphFormatError, match=r"cut\.txt\.gz: the compressed file is damaged or truncated"):
        read_edge_list(cut)


def test_missing_file():
    with pytest.raises(FileNotFoundError, match="no edge-list file at"):
        read_edge_list("/nonexistent/graph.txt")


@pytest.mark.parametrize("args, message", [
    (([0, 5], [1, 1], 3), r"edge 1 has source id 5, outside 0\.\.2"),
    (([0, 1], [-1, 1], 3), r"edge 0 has target id -1, outside 0\.\.2"),
    (([], [], None), r"empty graph: no edges and no num_vertices"),
    (([], [], 0), r"a graph needs at least one vertex"),
    (([0, 1], [1], None), r"sources and targets differ in length"),
    (([0.5], [1.0], None), r"integer vertex ids"),
])
def test_from_edges_refuses_bad_arrays(args, message):
    with pytest.raises(GraphFormatError, match=message):
        from_edges(*args)


# --- hostile edge lists: any byte in comments, a BOM, garbage in the body, headers that disagree -----

def test_a_utf8_bom_is_skipped(tmp_path):
    path = tmp_path / "bom.txt"
    path.write_bytes(b"\xef\xbb\xbf0 1\n1 2\n")
    assert read_edge_list(path, relabel_ids=False).out_targets.tolist() == [1, 2]
    gz = tmp_path / "bom.txt.gz"
    gz.write_bytes(gzip.compress(b"\xef\xbb\xbf# comment\n5 7\n"))
    assert read_edge_list(gz).original_ids.tolist() == [5, 7]


@pytest.mark.parametrize("comment", [b"# caf\xe9 (latin-1)\n", b"# \xe2\x82\xac UTF-8\n",
                                     b"# \x00\xff\xfe\x80 binary\n"])
def test_any_byte_in_a_comment_is_accepted(tmp_path, comment):
    path = tmp_path / "c.txt"
    path.write_bytes(comment + b"0 1\n1 2 # trailing \xff\n")
    g = read_edge_list(path, relabel_ids=False)
    assert g.num_edges == 2 and g.out_targets.tolist() == [1, 2]


def test_reading_does_not_depend_on_the_locale(tmp_path):
    import subprocess
    import sys
    path = tmp_path / "accents.txt.gz"
    path.write_bytes(gzip.compress("# Zoë’s graph — naïve “quotes”\n0 1\n1 2\n2 x\n".encode()))
    script = (f"from helpers.data.graphfiles import read_edge_list, GraphFormatError\n"
              f"try:\n    read_edge_list({str(path)!r})\n"
              f"except GraphFormatError as e:\n    print('refused:', e)\n")
    env = {"LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0", "PYTHONIOENCODING": "ascii:backslashreplace",
           "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                          cwd=str(__import__("pathlib").Path(__file__).parent.parent), timeout=60)
    assert done.returncode == 0, done.stderr
    assert "refused:" in done.stdout and "line 4: 'x' is not an integer vertex id" in done.stdout


def test_a_header_that_disagrees_with_the_body_is_warned_about(tmp_path):
    path = tmp_path / "h.txt"
    path.write_text("# Directed graph\n# Nodes: 5 Edges: 7\n0 1\n1 2\n2 0\n")
    with pytest.warns(GraphFormatWarning, match=r"the header says 5 nodes and 7 edges, the body has 3 "
                                                r"distinct ids and 3 edge lines"):
        read_edge_list(path)
    path.write_text("# Directed graph\n# Nodes: 3 Edges: 3\n0 1\n1 2\n2 0\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert read_edge_list(path).num_edges == 3          # an agreeing header: no warning


def test_num_vertices_with_relabelling_must_equal_the_distinct_ids(tmp_path):
    path = tmp_path / "g.txt"
    path.write_text("10 30\n30 20\n")
    assert read_edge_list(path, num_vertices=3).num_vertices == 3
    for wrong in (6, 2):
        with pytest.raises(GraphFormatError, match=rf"num_vertices={wrong}, but the edges hold 3 distinct "
                                                   r"ids; .*relabel_ids=False"):
            read_edge_list(path, num_vertices=wrong)
    assert read_edge_list(path, relabel_ids=False, num_vertices=40).num_vertices == 40   # the other way


def undirected_file(tmp_path, header=b""):
    """Each pair once, smaller id first, the way SNAP stores ego-Facebook."""
    g = random_graph(300, avg_degree=4, seed=5)
    src, dst = g.edges()
    keep = src < dst
    lines = b"".join(b"%d %d\n" % (u, v) for u, v in zip(src[keep], dst[keep]))
    path = tmp_path / "undirected.txt"
    path.write_bytes(header + lines)
    return path, int(keep.sum())


@pytest.mark.parametrize("header", [b"", b"# Undirected graph: facebook\n"])
def test_a_directed_read_of_an_undirected_file_is_warned_about(tmp_path, header):
    path, pairs = undirected_file(tmp_path, header)
    why = "its header says the graph is undirected" if header else "every pair is listed once"
    with pytest.warns(GraphFormatWarning, match=rf"read as directed, but {why}.*undirected=True"):
        directed = read_edge_list(path)
    assert directed.num_edges == pairs
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        both_ways = read_edge_list(path, undirected=True)
    assert both_ways.num_edges == 2 * pairs
    src, dst = both_ways.edges()
    n = both_ways.num_vertices
    assert np.array_equal(np.sort(src * n + dst), np.sort(dst * n + src))


def test_directed_files_read_without_a_warning(tmp_path):
    path = tmp_path / "d.txt"
    g = random_graph(300, avg_degree=4, seed=6)
    write_edge_list(g, path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = read_edge_list(path, relabel_ids=False, num_vertices=g.num_vertices)
    assert again.num_edges == g.num_edges and np.array_equal(again.in_sources, g.in_sources)
    isolated = g.num_vertices - np.unique(np.concatenate(g.edges())).size
    assert isolated > 0
    with pytest.warns(GraphFormatWarning, match=rf"the header says 300 nodes and {g.num_edges} edges, the "
                                                rf"body has {300 - isolated} distinct ids .*: {isolated} "
                                                r"vertices have no edge in the file"):
        read_edge_list(path)


def test_a_directory_or_missing_path_is_refused_with_the_projects_error(tmp_path):
    with pytest.raises(GraphFormatError, match="no edge-list file at"):
        read_edge_list(tmp_path)


# --- parameters ------------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, message", [
    (dict(num_vertices=2.7), r"num_vertices must be an integer, got 2\.7 \(float\)"),
    (dict(num_vertices=3.0), r"num_vertices must be an integer, got 3\.0"),
    (dict(num_vertices=True), r"num_vertices must be an integer, got True \(bool\)"),
    (dict(num_vertices="4"), r"num_vertices must be an integer, got '4'"),
    (dict(undirected="yes"), r"undirected must be True or False"),
    (dict(original_ids=[7, 8]), r"original_ids needs one id per vertex \(3\), got 2"),
    (dict(original_ids=[7, 8, 7]), r"original_ids must be distinct; 7 occurs twice"),
    (dict(original_ids=[7.0, 8.0, 9.0]), r"original_ids must hold integer vertex ids"),
])
def test_from_edges_refuses_bad_parameters(kwargs, message):
    with pytest.raises((ArgumentError, GraphFormatError), match=message):
        from_edges([0, 1], [1, 2], **{"num_vertices": 3, **kwargs})


def test_argument_errors_are_both_value_and_type_errors():
    for kind in (ValueError, TypeError):
        with pytest.raises(kind):
            from_edges([0], [1], num_vertices=2.5)


def test_numpy_integers_are_accepted_as_counts_and_ids():
    g = from_edges(np.array([0, 1], dtype=np.uint8), np.array([1, 2], dtype=np.int16),
                   num_vertices=np.int64(4), original_ids=np.array([5, 6, 7, 8], dtype=np.uint64))
    assert g.num_vertices == 4 and g.original_ids.tolist() == [5, 6, 7, 8]


def test_ids_beyond_int64_are_reported_with_their_true_value():
    big = np.array([3, 2**63], dtype=np.uint64)
    with pytest.raises(GraphFormatError, match=r"sources\[1\] = 9223372036854775808 does not fit in 64"):
        relabel(big, np.array([1, 2]))
    with pytest.raises(GraphFormatError, match=r"targets\[0\] = 1180591620717411303424 does not fit"):
        relabel([1], [2**70])
    with pytest.raises(GraphFormatError, match=r"original_ids\[1\] = 18446744073709551615 does not fit"):
        from_edges([0], [1], 2, original_ids=np.array([0, 2**64 - 1], dtype=np.uint64))
    with pytest.raises(GraphFormatError, match="integer vertex ids"):
        from_edges(np.array([True, False]), np.array([False, True]))


def test_check_csr_accepts_built_graphs_and_names_what_is_wrong():
    g = adversarial_graph(2_000, seed=3, hub_in_links=500)
    arrays = dict(out_offsets=g.out_offsets, out_targets=g.out_targets, in_offsets=g.in_offsets,
                  in_sources=g.in_sources, out_degree=g.out_degree)
    check_csr(g.num_vertices, **arrays)

    def broken(key, change):
        copy = {k: v.copy() for k, v in arrays.items()}
        change(copy[key])
        return copy

    cases = [
        (broken("in_sources", lambda a: a.__setitem__(5, 10**9)),
         r"in ids must lie in 0\.\.1999, found 1000000000"),
        (broken("in_sources", lambda a: a.__setitem__(5, g.num_vertices)), r"found 2000"),
        (broken("out_targets", lambda a: a.__setitem__(0, -1)), r"out ids must lie in 0\.\.1999, found -1"),
        (broken("out_offsets", lambda a: a.__setitem__(7, a[9])),
         r"out_offsets decrease|out_degree disagrees"),
        (broken("in_sources", lambda a: a.__setitem__(slice(None), np.roll(a, 1))),
         r"in-links are not sorted"),
        (broken("out_degree", lambda a: a.__setitem__(3, a[3] + 1)), r"out_degree disagrees"),
    ]
    for bad, message in cases:
        with pytest.raises(GraphFormatError, match=message):
            check_csr(g.num_vertices, **bad)
    with pytest.raises(GraphFormatError, match=r"in_sources must be int32 of length"):
        check_csr(g.num_vertices, **{**arrays, "in_sources": arrays["in_sources"].astype(np.int64)})
    with pytest.raises(GraphFormatError, match=r"must be int32 of length"):
        check_csr(g.num_vertices, **{**arrays, "out_targets": arrays["out_targets"][:-1]})


def test_a_header_with_line_breaks_stays_one_comment(tmp_path):
    g = from_edges([0, 1], [1, 2], name="two\nlines\r\n5 6")
    path = write_edge_list(g, tmp_path / "g.txt")
    assert read_edge_list(path).num_edges == 2                     # '5 6' did not become an edge
    assert path.read_text(encoding="utf-8").splitlines()[0] == "# two lines 5 6"


def test_a_file_of_endless_comments_or_blank_lines_is_refused_early(tmp_path):
    path = tmp_path / "blank.txt.gz"
    for filler, what in ((b"\n", "blank or comment lines"), (b"# again\n", "blank or comment lines")):
        path.write_bytes(gzip.compress(b"0 1\n" + filler * 2_000_000))
        start = time.monotonic()
        with pytest.raises(GraphFormatError, match=rf"blank\.txt\.gz: more than 1,000 {what}"):
            read_edge_pairs(path, max_lines=1_000)
        assert time.monotonic() - start < 5


def test_a_blank_line_after_each_line_does_not_count_against_max_lines(tmp_path):
    """\\r\\r\\n line ends (converted twice) put a blank line after every line: read within the edge lines'
    bound, while blank lines beyond one per edge line still count (and stop a file of nothing else)."""
    path = tmp_path / "twice.txt.gz"
    path.write_bytes(gzip.compress(b"# header\r\r\n# more\r\r\n" + b"0 1\r\r\n" * 1_000))
    assert read_edge_pairs(path, max_lines=1_000).shape == (1_000, 2)
    path.write_bytes(gzip.compress(b"0 1\n" * 500 + b"\n" * 2_000))
    with pytest.raises(GraphFormatError, match="more than 1,000 blank or comment lines beyond one per edge line"):
        read_edge_pairs(path, max_lines=1_000)


def test_reading_stops_after_max_lines(tmp_path):
    path = tmp_path / "long.txt.gz"
    path.write_bytes(gzip.compress(b"# a compressed file that expands far beyond what it claims\n"
                                   + b"0 1\n" * 200_000))
    with pytest.raises(GraphFormatError, match=r"long\.txt\.gz: more than 1,000 edge lines"):
        read_edge_pairs(path, max_lines=1_000)
    assert read_edge_pairs(path, max_lines=200_000).shape == (200_000, 2)


# --- hostile inputs: a line without end, sizes beyond memory, FIFOs, ids NumPy might read leniently ------

def one_long_line(path, gib: int, before: bytes = b"# header\n# more\n") -> None:
    """A gzip file whose third line is ``gib`` GiB of digits with no line break: 1 KB per MiB, as gzip
    members that decompress one after the other."""
    member = gzip.compress(b"7" * 2**20, compresslevel=9)
    with open(path, "wb") as f:
        f.write(gzip.compress(before))
        for _ in range(gib * 1024):
            f.write(member)


@pytest.mark.parametrize("reader", [read_edge_list, read_edge_pairs, read_header])
def test_a_gzip_holding_one_3_gib_line_is_refused_naming_the_line_without_reading_it(tmp_path, reader):
    path = tmp_path / "long.txt.gz"
    one_long_line(path, 3)
    tracemalloc.start()
    start = time.monotonic()
    with pytest.raises(GraphFormatError, match=rf"long\.txt\.gz: line 3 is longer than {MAX_LINE_BYTES:,} "
                                               r"bytes, which no edge list holds"):
        reader(path)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert time.monotonic() - start < 10 and peak < 64 * 2**20


def test_a_long_line_in_the_middle_of_a_plain_file_is_named(tmp_path):
    path = tmp_path / "g.txt"
    path.write_bytes(b"0 1\n1 2\n2 3\n" + b"4" * (3 * MAX_LINE_BYTES) + b" 5\n6 7\n")
    with pytest.raises(GraphFormatError, match=r"g\.txt: line 4 is longer than"):
        read_edge_list(path)
    path.write_bytes(b"0 1\n# " + b"x" * (MAX_LINE_BYTES - 2) + b"\n1 2\n")    # at the limit: still read
    assert read_edge_list(path).num_edges == 2


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs (named pipes)")
def test_a_fifo_is_refused_at_once_never_read(tmp_path):
    fifo = tmp_path / "pipe.txt"
    os.mkfifo(fifo)
    for reader in (read_edge_list, read_header, read_edge_pairs):
        error = bounded(lambda: reader(fifo), 20)
        assert isinstance(error, GraphFormatError)
        assert str(error) == f"no edge-list file at {fifo}: it is a FIFO (named pipe), not a regular file"
    error = bounded(lambda: open_regular(fifo), 20)
    assert isinstance(error, NotRegularFileError)
    assert str(error) == f"{fifo}: it is a FIFO (named pipe), not a regular file"


@pytest.mark.parametrize("line, message", [
    (b"2 1.5", r"'1\.5' is not an integer vertex id"),          # NumPy 2.0: the edge 2 -> 1 and a warning
    (b"2.0 1", r"'2\.0' is not an integer vertex id"),
    (b"2 1e3", r"'1e3' is not an integer vertex id"),
    (b"2 0x1F", r"'0x1F' is not an integer vertex id"),
    (b"2 1_000", r"'1_000' is not an integer vertex id"),       # Python's int() would take it
    (b"2 inf", r"'inf' is not an integer vertex id"),
    (b"2 +-3", r"'\+-3' is not an integer vertex id"),
    (b"2 3-", r"'3-' is not an integer vertex id"),
    (b"2 \xb2", r"'\xb2' is not an integer vertex id"),          # a superscript two in latin-1
    (b"2\x0b3", r"ids must be separated by spaces or tabs, found '2\\x0b3'"),
    (b"\x1c2 3", r"ids must be separated by spaces or tabs"),
    (b"2\r3", r"expected two vertex ids \(source target\), found 1 column\(s\): '2'"),   # a lone \r ends a line
    (b"2,3", r"expected two vertex ids \(source target\), found 1 column"),
])
def test_malformed_ids_are_refused_whatever_numpy_accepts(tmp_path, line, message):
    """The ids are checked before NumPy's reader sees them: every NumPy the project allows refuses them."""
    for name in ("bad.txt", "bad.txt.gz"):
        path = tmp_path / name
        body = b"# header\n0 1\n" + line + b"\n1 2\n"
        path.write_bytes(gzip.compress(body) if name.endswith(".gz") else body)
        with warnings.catch_warnings():
            warnings.simplefilter("error")                       # a DeprecationWarning is not an answer
            with pytest.raises(GraphFormatError, match=rf"{name}: line 3: {message}"):
                read_edge_list(path)


# --- one definition of a line (\n, \r\n or a lone \r), the same for every pass ---------------------------

def written(path, body: bytes):
    """``body`` written at ``path``, gzip-compressed where the name ends in .gz."""
    path.write_bytes(gzip.compress(body) if path.name.endswith(".gz") else body)
    return path


@pytest.mark.parametrize("name", ["g.txt", "g.txt.gz"])
def test_a_lone_carriage_return_ends_a_line_even_in_a_comment(tmp_path, name):
    """Was (0, 1), (1, 2), (5, 6): the first pass kept '# note\\r5 6' as one comment, NumPy's reader read
    '5 6' as an edge and stopped at the first pass's count, dropping 2 -> 0, with no warning."""
    path = written(tmp_path / name, b"0 1\n# note\r5 6\n1 2\n2 0\n")
    assert read_edge_pairs(path).tolist() == [[0, 1], [5, 6], [1, 2], [2, 0]]
    g = read_edge_list(path, relabel_ids=False)
    assert sorted(zip(*(e.tolist() for e in g.edges()))) == [(0, 1), (1, 2), (2, 0), (5, 6)]
    assert read_header(path).lines == ()                     # line 1 is an edge: no header


@pytest.mark.parametrize("name", ["g.txt", "g.txt.gz"])
@pytest.mark.parametrize("end", [b"\n", b"\r\n", b"\r"], ids=["LF", "CRLF", "CR"])
def test_every_line_end_reads_the_same_and_names_the_same_lines(tmp_path, name, end):
    lines = [b"# Directed graph", b"# Nodes: 4 Edges: 4", b"0 1", b"", b" \t", b"1 2 # a comment", b"2 3",
             b"3 0"]
    path = written(tmp_path / name, end.join(lines))                # the last line needs no end
    with warnings.catch_warnings():
        warnings.simplefilter("error")                             # the header agrees: no warning
        g = read_edge_list(path, relabel_ids=False)
    assert g.out_targets.tolist() == [1, 2, 3, 0]
    assert read_header(path) == graphfiles.EdgeListHeader(("# Directed graph", "# Nodes: 4 Edges: 4"), 4, 4)
    written(path, end.join(lines[:-1] + [b"3 x"]) + end)
    with pytest.raises(GraphFormatError, match=rf"{name}: line 8: 'x' is not an integer vertex id"):
        read_edge_list(path)


def test_mixed_line_ends_and_a_lone_carriage_return_in_a_gzip_header(tmp_path):
    path = written(tmp_path / "g.txt.gz", b"# Directed graph\r# Nodes: 3 Edges: 3\r# FromNodeId\tToNodeId\r"
                                          b"0 1\r\n1 2\n2 0\r")
    assert read_header(path) == graphfiles.EdgeListHeader(
        ("# Directed graph", "# Nodes: 3 Edges: 3", "# FromNodeId\tToNodeId"), 3, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert read_edge_list(path, relabel_ids=False).out_targets.tolist() == [1, 2, 0]
    written(path, b"# Directed graph\r(continued)\n0 1\n1 2\n")      # after a lone \r: a line of its own
    with pytest.raises(GraphFormatError, match=r"g\.txt\.gz: line 2: expected two vertex ids \(source "
                                               r"target\), found 1 column\(s\): '\(continued\)'"):
        read_edge_list(path)


@pytest.mark.parametrize("size", ["BLOCK_BYTES", "LINE_BLOCK_BYTES"])
def test_a_crlf_split_between_two_reads_is_one_line_end(tmp_path, size):
    """The first pass and the line-by-line passes read in blocks: a \\r\\n cut between two reads must not
    become two line ends (which would add a blank line and shift every line number after it)."""
    first_read = len(edgelist.UTF8_BOM) + getattr(edgelist, size)     # the mark is read first
    filler, rest = divmod(first_read + 1 - len(b"0 1\r\n") - 1000, 1000)
    head = b"0 1\r\n" + (b"#" + b"x" * 997 + b"\r\n") * filler + b"#" + b"x" * (rest + 997) + b"\r\n"
    assert head[first_read - 1:] == b"\r\n"                               # its \r is the read's last byte
    lines = head.count(b"\n")
    for name in ("g.txt", "g.txt.gz"):
        path = written(tmp_path / name, head + b"1 2\r\n2 0\r\n" * 3 + b"5 y\r\n")
        with pytest.raises(GraphFormatError, match=rf"line {lines + 7}: 'y' is not an integer vertex id"):
            read_edge_list(path)
        written(path, head + b"1 2\r\n2 0\r\n")
        assert read_edge_pairs(path).tolist() == [[0, 1], [1, 2], [2, 0]]


ODD_WHITESPACE = [b"\x0c", b"\x0b", b"\x1c", b"\x1d", b"\x1e", b"\x1f", b"\x85", b"\xa0", b" \x0c\t"]
UTF8_WHITESPACE = [b"\xc2\x85", b"\xc2\xa0", b"\xe2\x80\xa8", b"\xe3\x80\x80"]     # NEL, NBSP, U+2028, U+3000


@pytest.mark.parametrize("odd", ODD_WHITESPACE + UTF8_WHITESPACE)
def test_a_line_of_other_whitespace_is_refused_naming_the_line(tmp_path, odd):
    """Was 'expected two vertex ids per line' with no line named: the first pass refused the byte, the
    line-by-line pass took the line for blank (Python's strip) and found nothing wrong."""
    why = (rf"a line without ids may hold only spaces and tabs \(and a '#' comment\), found "
           rf"{re.escape(repr(odd.decode('latin-1')))}$" if odd in ODD_WHITESPACE
           else r"expected two vertex ids \(source target\), found 1 column\(s\)")   # read as latin-1
    for name in ("g.txt", "g.txt.gz"):
        path = written(tmp_path / name, b"# header\n0 1\n" + odd + b"\n1 2\n")
        for reader in (read_edge_list, read_edge_pairs):
            with pytest.raises(GraphFormatError, match=rf"{name}: line 3: {why}"):
                reader(path)
        written(path, b"# header\n" + odd + b"\n# Nodes: 2 Edges: 1\n0 1\n")   # it ends the header too
        assert read_header(path).lines == ("# header",)


@pytest.mark.parametrize("odd", ODD_WHITESPACE + UTF8_WHITESPACE + [b"\x00", b"\x1b"])
def test_comments_holding_other_whitespace_stay_comments(tmp_path, odd):
    for name in ("g.txt", "g.txt.gz"):
        path = written(tmp_path / name, b"# Nodes: 3 Edges: 2\n# note" + odd + b"5 6" + odd + b"\n0 1\n"
                                        b"1 2 # trailing" + odd + b"7 8\n")
        with warnings.catch_warnings():
            warnings.simplefilter("error")                     # the header's counts agree: no warning
            assert read_edge_list(path, relabel_ids=False).out_targets.tolist() == [1, 2]
        header = read_header(path)
        assert len(header.lines) == 2 and (header.nodes, header.edges) == (3, 2)


def test_disagreeing_passes_are_refused_naming_where_they_part(tmp_path, monkeypatch):
    """The guard behind the one definition: should the passes ever read a file's lines differently, the file
    is refused naming the first line where they part, never read one way or the other."""
    path = written(tmp_path / "g.txt", b"0 1\n# note 5 6\n1 2\n# c\n2 0\n")
    good = read_edge_pairs(path)
    assert good.tolist() == [[0, 1], [1, 2], [2, 0]]
    parse = edgelist._parse
    # NumPy's reader taking '5 6' for an edge (the defect a lone \r in a comment used to cause)
    monkeypatch.setattr(edgelist, "_parse", lambda p, count, spare=1: np.array([[0, 1], [5, 6], [1, 2],
                                                                                [2, 0]])[:count + spare])
    with pytest.raises(GraphFormatError, match=r"g\.txt: line 2: the passes over the file read its lines "
                                               r"differently from here on \('# note 5 6'\)"):
        read_edge_pairs(path)
    # NumPy's reader refusing from its third row on: where it stops is bisected
    monkeypatch.setattr(edgelist, "_parse", lambda p, count, spare=1: None if count + spare > 2
                        else good[:count + spare])
    with pytest.raises(GraphFormatError, match=r"line 4: the passes .* \('# c'\)"):
        read_edge_pairs(path)
    # the first pass counting one edge line fewer than the others find
    monkeypatch.setattr(edgelist, "_parse", parse)
    monkeypatch.setattr(edgelist, "_scan", lambda p, max_lines: 2)
    with pytest.raises(GraphFormatError, match=r"line 4: the passes .* \('# c'\)"):
        read_edge_pairs(path)


def test_from_edges_refuses_a_graph_the_host_cannot_hold_with_the_arithmetic(monkeypatch):
    monkeypatch.setattr(graph, "available_host_bytes", lambda: 8 * 2**30)
    with pytest.raises(GraphTooLargeError) as caught:
        from_edges([0], [1], num_vertices=2**31 - 1)
    assert str(caught.value) == (
        "building 'graph' (2,147,483,647 vertices, 1 edges) needs about 44.00 GiB of host memory (22 bytes "
        "per vertex + 17 per edge), and 8.00 GiB is available; use fewer vertices or edges, or free memory")
    assert isinstance(caught.value, MemoryError)
    assert from_edges([0], [1], num_vertices=1_000).num_vertices == 1_000     # 22 kB: built


def test_reading_and_relabelling_refuse_what_the_host_cannot_hold(tmp_path, monkeypatch):
    path = tmp_path / "g.txt"
    path.write_text("".join(f"{i} {i + 1}\n" for i in range(100_000)))
    monkeypatch.setattr(graph, "available_host_bytes", lambda: 2**20)
    with pytest.raises(GraphTooLargeError, match=r"reading 100,000 edge lines of g\.txt needs about 1\.7 "
                                                 r"MiB of host memory \(18 bytes per line\), and 1\.0 MiB "
                                                 r"is available; read a smaller file"):
        read_edge_list(path)
    with pytest.raises(GraphTooLargeError, match=r"relabelling 200,000 ids needs about 5\.3 MiB"):
        relabel(np.arange(100_000), np.arange(1, 100_001))


def test_the_host_memory_is_read(monkeypatch):
    available = graph.available_host_bytes()
    assert available is None or available > 2**20


def test_build_bytes_is_within_15_percent_of_what_building_allocates():
    """The estimate the bench checks before generating: measured here on mid-size graphs, both shapes."""
    for n, m in ((200_000, 1_500_000), (1_000_000, 300_000)):
        rng = np.random.default_rng(3)
        src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
        tracemalloc.start()
        base = tracemalloc.get_traced_memory()[0]
        from_edges(src, dst, n)
        peak = tracemalloc.get_traced_memory()[1] - base
        tracemalloc.stop()
        assert abs(build_bytes(n, m) / peak - 1) < 0.15, (n, m, build_bytes(n, m), peak)


# --- hostile inputs found by the red team of the data path (each failed before its fix) ----------------

def test_an_id_of_thousands_of_digits_is_named_not_pythons_digit_limit(tmp_path):
    path = tmp_path / "g.txt"
    path.write_text("0 1\n2 " + "7" * 5_000 + "\n")
    with pytest.raises(GraphFormatError, match=r"g\.txt: line 2: vertex id '7777.*\.\.\.' has 5,000 "
                                               r"characters and does not fit in 64 bits"):
        read_edge_list(path)


@pytest.mark.parametrize("data, what", [
    (bz2.compress(b"0 1\n"), "a bzip2 file"), (b"PK\x03\x04" + bytes(40), "a zip archive"),
    (lzma.compress(b"0 1\n"), "an xz file"),
    (b"\n  <!DOCTYPE html><html><body>Sign in to the network</body></html>\n", "an HTML page"),
], ids=["bzip2", "zip", "xz", "html"])
def test_other_formats_under_an_edge_list_name_are_named(tmp_path, data, what):
    path = tmp_path / "g.txt.gz"
    path.write_bytes(data)
    expected = rf"g\.txt\.gz: it is {what}, not an edge list \(plain text, or gzip-compressed\)"
    with pytest.raises(GraphFormatError, match=expected):
        read_edge_list(path)


@pytest.mark.parametrize("name, compress", [("plain.txt.gz", False), ("packed.txt", True),
                                            ("packed.TXT.GZ", True), ("packed.gz.txt", True)])
def test_gzip_is_known_by_its_bytes_not_by_its_name(tmp_path, name, compress):
    body = b"# a comment\n" + b"".join(b"%d %d\n" % (i, (i * 7 + 1) % 50) for i in range(50))
    path = tmp_path / name
    path.write_bytes(gzip.compress(body) if compress else body)   # a server may undo a .gz's compression
    g = read_edge_list(path, relabel_ids=False)
    assert g.num_vertices == 50 and g.num_edges == 50
    assert np.array_equal(read_edge_pairs(path)[:, 1], (np.arange(50) * 7 + 1) % 50)


def test_paths_that_are_no_paths_are_argument_errors(tmp_path):
    good = tmp_path / "g.txt"
    good.write_text("0 1\n1 2\n")
    with open(good) as handle:
        for bad, message in ((None, "be a file path .*got NoneType"), (123, "be a file path .*got int"),
                             (handle, "be a file path .*got TextIOWrapper"), ("", "name a file, got ''"),
                             (f"{good}\0x", r"name a file, got '.*\\x00x'")):
            with pytest.raises(ArgumentError, match=f"path must {message}"):
                read_edge_list(bad)
    with pytest.raises(ArgumentError, match="path must be a file path"):
        write_edge_list(from_edges([0], [1]), None)
    assert read_edge_list(os.fsencode(good)).num_edges == 2          # bytes name a file, as os allows


def test_masked_ids_are_refused_not_read_through_the_mask():
    sources = np.ma.array([0, 1, 2], mask=[False, True, False])
    with pytest.raises(GraphFormatError, match="sources is a masked array with masked entries"):
        from_edges(sources, [1, 2, 0])
    assert from_edges(np.ma.array([0, 1]), [1, 0]).num_edges == 2      # a mask with nothing masked is fine


def _graph_arrays(g, **changed):
    return {key: getattr(g, key) for key in ("out_offsets", "out_targets", "in_offsets", "in_sources",
                                              "out_degree")} | changed


@pytest.mark.parametrize("build, name", [
    (lambda x: from_edges(x, [1, 2, 0]), "sources"),
    (lambda x: from_edges([1, 2, 0], x), "targets"),
    (lambda x: from_edges([0, 1, 2], [1, 2, 0], original_ids=x), "original_ids"),
    (lambda x: relabel([5, 6, 7], x), "targets"),
    (lambda x: graph.sorted_unique(x), "values"),
    (lambda x: graph.Graph(3, **_graph_arrays(from_edges([0, 1, 2], [1, 2, 0]), out_degree=x)), "out_degree"),
    (lambda x: check_csr(3, **_graph_arrays(from_edges([0, 1, 2], [1, 2, 0]), out_targets=x)), "out_targets"),
    (lambda x: graph_from_pairs(x), "pairs"),
    (lambda x: looks_undirected(x), "pairs"),
    (lambda x: arrays_sha256({"in_sources": x}), "in_sources"),
])
@pytest.mark.parametrize("kind", ["masked", "gpu"])
def test_graph_builders_refuse_masked_and_gpu_arrays_with_one_error(build, name, kind):
    """Masked entries were read through the mask (pairs, Graph, check_csr) and a CuPy array met NumPy's bare
    TypeError ('Implicit conversion to a NumPy array is not allowed'): one check, one error, for every one."""
    if kind == "masked":
        x = masked((1, 2, 0)).astype(np.int32) if name != "pairs" else \
            np.ma.masked_array([[0, 1], [1, 2], [2, 0]], mask=[[0, 0], [0, 1], [0, 0]])
        message = f"{name} is a masked array with masked entries"
    else:
        x, message = GpuArray(), rf"{name} is a CuPy array in GPU memory.*{name}\.get\(\)"
    with pytest.raises(arguments.ArrayKindError, match=message) as raised:
        build(x)
    assert isinstance(raised.value, ArgumentError) and isinstance(raised.value, GraphFormatError)
    assert isinstance(raised.value, TypeError) and isinstance(raised.value, ValueError)


def test_a_gpu_array_is_recognised_without_cupy_and_host_arrays_pass_unchanged():
    assert arguments.on_gpu(GpuArray()) and not arguments.on_gpu(np.zeros(3)) and not arguments.on_gpu([1, 2])
    unmasked = np.ma.masked_array([1, 2], mask=False)
    assert arguments.host_array(unmasked, "x") is unmasked                 # nothing masked: used as given
    gpu = GpuArray()
    assert arguments.host_array(gpu, "x", gpu=True) is gpu             # a function that runs on the GPU too
    with pytest.raises(arguments.ArrayKindError, match="x is a CuPy array"):
        arguments.host_array(gpu, "x")
    with pytest.raises(arguments.ArrayKindError, match="x is a masked array"):
        arguments.host_array(masked(), "x", gpu=True)


@pytest.mark.parametrize("value, message", [
    ([masked()], "x holds a masked array with masked entries"),              # NumPy drops the mask
    ([[1.0, 2.0], (3.0, masked())], "x holds a masked array"),               # at any depth
    ([1.0, np.ma.masked, 2.0], "x holds a masked array"),                   # read as 0 or nan
    (matrix((1.0, 2.0)), r"x is a numpy\.matrix, which stays 2-D"),
])
def test_host_array_refuses_masks_inside_lists_and_matrices(value, message):
    """Was: a list holding a masked array was read through the mask (ulp_sum counted the hidden 9.0,
    busiest_lane a hidden in-degree), and a numpy.matrix met IndexError or matmul's errors."""
    with pytest.raises(arguments.ArrayKindError, match=message):
        arguments.host_array(value, "x")
    assert arguments.host_array([np.ma.masked_array([1, 2], mask=False), [3, 4]], "x") is not None  # none hidden


def test_host_array_checks_dimensions_where_told_and_to_host_copies_only_cupys_arrays():
    for value, shown in ((np.array(3.0), r"shape \(\)"), ([[1, 2]], r"shape \(1, 2\)"), ([[1], [2, 3]], "ragged")):
        with pytest.raises(arguments.ArrayKindError, match=f"x must be a 1-D array, got (a )?{shown}"):
            arguments.host_array(value, "x", ndim=1)
    assert arguments.to_host([1, 2], "x").tolist() == [1, 2]

    class WithGet(GpuArray):                 # CuPy's own: copied to the host with .get()
        def get(self):
            return np.arange(3)

    assert arguments.to_host(WithGet(), "x").tolist() == [0, 1, 2]
    with pytest.raises(arguments.ArrayKindError, match=r"x is a CuPy array in GPU memory.*x\.get\(\)"):
        arguments.to_host(GpuArray(), "x")       # was int()'s or NumPy's TypeError where it was read
    with pytest.raises(arguments.ArrayKindError, match=r"values must be a 1-D array, got shape \(\)"):
        graph.sorted_unique(np.array(3))     # was NumPy's AxisError


def test_seconds_are_checked_as_numbers_of_seconds():
    assert arguments.check_seconds(np.float32(1.5), "t") == 1.5 and arguments.check_seconds(3, "t") == 3.0
    for bad, message in ((True, "a number"), ("5", "a number"), (0, "positive and finite"),
                         (float("nan"), "positive and finite"), (10**400, "positive and finite")):
        with pytest.raises(ArgumentError, match=f"t must be {message}"):
            arguments.check_seconds(bad, "t")
    with pytest.raises(ArgumentError, match=r"t must be at most 60 s, got 1e\+308"):
        arguments.check_seconds(1e308, "t", maximum=60)


def test_an_edge_list_is_written_atomically_and_never_over_a_folder_or_device(tmp_path, monkeypatch):
    g = from_edges([0, 1], [1, 2])
    with pytest.raises(ArgumentError, match="is not a folder"):
        write_edge_list(g, tmp_path / "missing" / "g.txt")
    with pytest.raises(ArgumentError, match="it is a folder"):
        write_edge_list(g, tmp_path)
    with pytest.raises(ArgumentError, match="it is a device or socket"):
        write_edge_list(g, "/dev/null")
    path = tmp_path / "g.txt"
    write_edge_list(g, path)
    before = path.read_bytes()

    def full_disk(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full_disk)           # the write fails after part of it was made
    with pytest.raises(OSError, match="No space left"):
        write_edge_list(from_edges([0, 1, 2], [1, 2, 0]), path)
    assert path.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["g.txt"]


def test_float_ids_are_refused_saying_which_value_or_how_to_convert():
    """Was 'got dtype float64' for all three: whole numbers in floats, a pandas Int64 column with a missing
    value (NumPy reads it as nan) and a fraction, with nothing said about which entry or what to do."""
    import pandas as pd
    with pytest.raises(GraphFormatError, match=r"got dtype float64; its values are whole numbers, so "
                                               r"sources\.astype\('int64'\) gives the ids"):
        from_edges(np.array([0.0, 1.0]), np.array([1, 2]))
    # NumPy reads a missing Int64 value as nan (pandas 2.2 and later) or as <NA> in an object array (2.1)
    with pytest.raises(GraphFormatError, match=r"targets\[1\] is (nan|<NA>) \(a missing value in pandas"):
        from_edges(pd.Series([0, 1]), pd.Series([1, None], dtype="Int64"))
    with pytest.raises(GraphFormatError, match=r"targets\[1\] is <NA> \(a missing value in pandas"):
        from_edges([0, 1], np.array([1, pd.NA], dtype=object))
    with pytest.raises(GraphFormatError, match=r"sources\[0\] is 2\.5"):
        from_edges([2.5], [1])
