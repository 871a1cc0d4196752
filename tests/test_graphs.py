"""Communication graphs of the network setting (vfl.decentralized.graphs)."""

import numpy as np
import pytest
import scipy.sparse as sp
from scipy import stats

import vfl.decentralized.graphs as g
from vfl.decentralized.graphs import (
    check_adjacency,
    closed_neighbourhoods,
    degrees,
    is_complete,
    is_connected,
    laplacian,
    make_graph,
    metropolis_weights,
)


def _valid(adj, n):
    assert sp.isspmatrix_csr(adj) or sp.issparse(adj)
    assert adj.shape == (n, n)
    assert (adj != adj.T).nnz == 0
    assert not adj.diagonal().any()
    assert set(np.unique(adj.data)) == {1.0}
    assert is_connected(adj)


@pytest.mark.parametrize("n, m", [(10, 20), (100, 200), (10, 40), (5, 4), (6, 15)])
def test_gnm_edge_count_connected(n, m):
    adj = make_graph("gnm", nodes=n, edges=m, rng=np.random.default_rng(1))
    _valid(adj, n)
    assert adj.nnz // 2 == m


def test_gnm_reproducible_by_seed():
    a = make_graph("gnm", nodes=30, edges=60, rng=np.random.default_rng(7))
    b = make_graph("gnm", nodes=30, edges=60, rng=np.random.default_rng(7))
    c = make_graph("gnm", nodes=30, edges=60, rng=np.random.default_rng(8))
    assert (a != b).nnz == 0
    assert (a != c).nnz > 0


@pytest.mark.slow
def test_gnm_uniform_over_connected_graphs():
    # Connected graphs on 4 nodes with 3 edges are the 16 labelled spanning trees.
    rng = np.random.default_rng(0)
    counts = {}
    for _ in range(3200):
        adj = make_graph("gnm", nodes=4, edges=3, rng=rng)
        key = tuple(map(tuple, np.argwhere(sp.triu(adj).toarray())))
        counts[key] = counts.get(key, 0) + 1
    assert len(counts) == 16
    assert stats.chisquare(list(counts.values())).pvalue > 1e-3


def test_complete_ring_and_erdos_renyi():
    c = make_graph("complete", nodes=7)
    _valid(c, 7)
    assert c.nnz == 42 and is_complete(c)
    r = make_graph("ring", nodes=9)
    _valid(r, 9)
    assert np.all(degrees(r) == 2)
    e = make_graph("erdos_renyi", nodes=20, p=0.3, rng=np.random.default_rng(3))
    _valid(e, 20)


def test_file_graph(tmp_path):
    path = tmp_path / "g.txt"
    path.write_text("# a path graph with a repeated edge\n0 1\n1 2\n2 3\n1 0\n")
    adj = make_graph("file", nodes=4, path=path)
    _valid(adj, 4)
    assert adj.nnz // 2 == 3
    assert make_graph("file", nodes=4, path=path, edges=3).nnz == 6


@pytest.mark.parametrize(
    "text, message",
    [
        ("0 1\n1 5\n", "node 5 is not one of 0..3"),
        ("0 1\n1 1\n1 2\n2 3\n", "self-loop on node 1"),
        ("0 1\n2 3\n", "not connected (2 components)"),
        ("0 1\nfoo bar\n", "not an edge list"),
    ],
)
def test_file_graph_errors(tmp_path, text, message):
    path = tmp_path / "g.txt"
    path.write_text(text)
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        make_graph("file", nodes=4, path=path)


def test_file_graph_edge_count_mismatch_and_missing(tmp_path):
    path = tmp_path / "g.txt"
    path.write_text("0 1\n1 2\n")
    with pytest.raises(ValueError, match="2 edges, but edges = 3"):
        make_graph("file", nodes=3, path=path, edges=3)
    with pytest.raises(ValueError, match="cannot read"):
        make_graph("file", nodes=3, path=tmp_path / "absent.txt")


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(kind="gnm", nodes=10, edges=46), "46 edges requested but 10 nodes have only 45 pairs"),
        (dict(kind="gnm", nodes=10, edges=8), "cannot connect 10 nodes"),
        (dict(kind="gnm", nodes=1, edges=0), "nodes >= 2"),
        (dict(kind="gnm", nodes=5, edges=None), "needs edges"),
        (dict(kind="complete", nodes=5, edges=3), "takes no edges"),
        (dict(kind="ring", nodes=2), "ring needs nodes >= 3"),
        (dict(kind="erdos_renyi", nodes=5, p=1.5), r"p in \(0, 1\]"),
        (dict(kind="star", nodes=5), "unknown graph kind 'star'"),
        (dict(kind="file", nodes=5), "needs path"),
    ],
)
def test_impossible_requests(kwargs, message):
    kwargs.setdefault("rng", np.random.default_rng(0))
    with pytest.raises(ValueError, match=message):
        make_graph(**kwargs)


def test_gnm_needs_a_generator():
    with pytest.raises(ValueError, match="numpy.random.Generator"):
        make_graph("gnm", nodes=5, edges=5, rng=None)


def test_hopeless_erdos_renyi_is_refused(monkeypatch):
    monkeypatch.setattr(g, "MAX_DRAWS", 5)
    with pytest.raises(ValueError, match="use a larger p"):
        make_graph("erdos_renyi", nodes=50, p=0.001, rng=np.random.default_rng(0))


def test_weights_and_laplacian():
    adj = make_graph("gnm", nodes=12, edges=20, rng=np.random.default_rng(2))
    W = metropolis_weights(adj).toarray()
    assert np.allclose(W, W.T)
    assert np.allclose(W.sum(axis=1), 1.0) and np.all(W >= 0)
    assert np.all((W > 0) <= ((adj.toarray() + np.eye(12)) > 0))
    L = laplacian(adj).toarray()
    assert np.allclose(L.sum(axis=1), 0) and np.allclose(np.diag(L), degrees(adj))
    Wc = metropolis_weights(make_graph("complete", nodes=5)).toarray()
    assert np.allclose(Wc, 0.2)


def test_closed_neighbourhoods():
    adj = make_graph("gnm", nodes=9, edges=12, rng=np.random.default_rng(4))
    nb = closed_neighbourhoods(adj)
    A = adj.toarray()
    for i in range(9):
        assert nb[i, 0] == i
        assert set(nb[i]) == {i} | set(np.flatnonzero(A[i]))


def test_check_adjacency_rejects_bad_matrices():
    with pytest.raises(ValueError, match="symmetric"):
        check_adjacency(sp.csr_matrix(np.array([[0, 1, 1], [0, 0, 1], [1, 1, 0]])))
    with pytest.raises(ValueError, match="self-loops"):
        check_adjacency(sp.csr_matrix(np.array([[1, 1], [1, 0]])))
    with pytest.raises(ValueError, match="not connected"):
        check_adjacency(sp.csr_matrix(np.array([[0, 1, 0, 0], [1, 0, 0, 0], [0, 0, 0, 1], [0, 0, 1, 0]])))
    with pytest.raises(ValueError, match="0/1"):
        check_adjacency(sp.csr_matrix(np.array([[0, 2], [2, 0]])))
