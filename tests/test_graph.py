import gzip

import numpy as np
import pytest
import scipy.sparse as sp

from helpers.graph import (GraphFormatError, INT32_EDGE_LIMIT, from_edges, offsets_dtype, read_edge_list,
                           relabel, write_edge_list)
from helpers.generators import adversarial_graph, random_graph


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
        out = sp.csr_matrix((np.ones(g.num_edges), g.out_targets, g.out_offsets), shape=(g.num_vertices,) * 2)
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
])
def test_malformed_lines_are_named(tmp_path, body, message):
    path = tmp_path / "bad.txt"
    path.write_text(body)
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
