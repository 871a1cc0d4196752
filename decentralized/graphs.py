"""Communication graphs of the network setting, as sparse adjacency matrices.

Xiao et al. give only the node and edge counts of their random graphs
(``(N, |E|) = (10, 20), (100, 200), (10, 40)``, App. E); we read them as the
``G(n, m)`` model conditioned on connectivity: ``m`` of the ``n(n-1)/2`` pairs
drawn uniformly without replacement, redrawn until connected (which keeps the
result uniform among connected graphs with ``m`` edges). For (100, 200)
about one draw in six is connected.

Every graph is returned as a symmetric 0/1 ``scipy.sparse`` CSR matrix
(float64, no self-loops), the form :class:`~vfl.core.layouts.NetworkData`
holds and the solvers multiply with. Node ``i`` is agent ``i``
(``0 .. nodes-1``).
"""

from __future__ import annotations

import os

import networkx as nx
import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

__all__ = [
    "GRAPH_KINDS",
    "make_graph",
    "check_adjacency",
    "is_connected",
    "degrees",
    "laplacian",
    "metropolis_weights",
    "closed_neighbourhoods",
    "is_complete",
]

GRAPH_KINDS = ("gnm", "complete", "ring", "erdos_renyi", "file")

#: Redraws allowed before a random graph model is declared hopeless.
MAX_DRAWS = 10_000


def _from_edges(n: int, rows, cols) -> sp.csr_matrix:
    rows = np.asarray(rows, dtype=np.int64)
    cols = np.asarray(cols, dtype=np.int64)
    data = np.ones(2 * rows.size)
    adj = sp.csr_matrix((data, (np.r_[rows, cols], np.r_[cols, rows])), shape=(n, n))
    adj.sum_duplicates()
    adj.data[:] = 1.0
    return adj


def is_connected(adjacency) -> bool:
    """Whether the undirected graph is connected (a single node is)."""
    n = adjacency.shape[0]
    return n <= 1 or connected_components(adjacency, directed=False, return_labels=False) == 1


def _check_nodes(nodes) -> int:
    if isinstance(nodes, bool) or not isinstance(nodes, (int, np.integer)) or nodes < 2:
        raise ValueError(f"a communication graph needs nodes >= 2 (an integer), got {nodes!r}")
    return int(nodes)


def _unused(kind: str, **given) -> None:
    extra = [k for k, v in given.items() if v is not None]
    if extra:
        raise ValueError(f"graph kind {kind!r} takes no {', '.join(extra)}")


def make_graph(
    kind: str,
    *,
    nodes: int,
    edges: int | None = None,
    p: float | None = None,
    path: str | os.PathLike | None = None,
    rng: np.random.Generator | None = None,
) -> sp.csr_matrix:
    """A connected undirected graph on ``nodes`` agents.

    Parameters
    ----------
    kind : {"gnm", "complete", "ring", "erdos_renyi", "file"}
        ``"gnm"``: ``edges`` pairs uniformly without replacement, redrawn until
        connected (our reading of App. E); ``"complete"``: all pairs; ``"ring"``: ``i ~ i+1
        mod n``; ``"erdos_renyi"``: every pair with probability ``p``, redrawn
        until connected; ``"file"``: an edge list, one ``i j`` pair per line
        (nodes ``0 .. nodes-1``, ``#`` comments; a pair listed twice, in
        either order, is one edge).
    nodes : int, >= 2
    edges : int, for ``"gnm"`` (``nodes - 1 <= edges <= nodes (nodes - 1) / 2``);
        for ``"file"`` optional, then the file must hold exactly that many edges.
    p : float in (0, 1], for ``"erdos_renyi"``.
    path : path of the edge list, for ``"file"``.
    rng : numpy Generator, for the random kinds (every draw comes from it).

    Returns
    -------
    scipy.sparse.csr_matrix
        Symmetric 0/1 adjacency (float64), no self-loops.

    Raises
    ------
    ValueError
        Impossible requests: fewer than 2 nodes, more edges than pairs, fewer
        than ``nodes - 1`` edges (no connected graph exists), a bad ``p``, a
        file with unknown nodes, self-loops or a disconnected graph, or no
        connected draw in ``MAX_DRAWS`` attempts.
    """
    if kind not in GRAPH_KINDS:
        raise ValueError(f"unknown graph kind {kind!r}; expected one of {', '.join(GRAPH_KINDS)}")
    n = _check_nodes(nodes)
    pairs = n * (n - 1) // 2
    if kind in ("gnm", "erdos_renyi") and not isinstance(rng, np.random.Generator):
        raise ValueError(f"graph kind {kind!r} needs rng, a numpy.random.Generator")

    if kind == "complete":
        _unused(kind, edges=edges, p=p, path=path)
        iu, ju = np.triu_indices(n, k=1)
        return _from_edges(n, iu, ju)

    if kind == "ring":
        _unused(kind, edges=edges, p=p, path=path)
        if n < 3:
            raise ValueError(f"a ring needs nodes >= 3, got {n}")
        i = np.arange(n)
        return _from_edges(n, i, (i + 1) % n)

    if kind == "gnm":
        _unused(kind, p=p, path=path)
        if isinstance(edges, bool) or not isinstance(edges, (int, np.integer)):
            raise ValueError(f"graph kind 'gnm' needs edges (an integer), got {edges!r}")
        if edges > pairs:
            raise ValueError(f"{edges} edges requested but {n} nodes have only {pairs} pairs")
        if edges < n - 1:
            raise ValueError(
                f"{edges} edges cannot connect {n} nodes (a connected graph needs at least nodes - 1 = {n - 1})"
            )
        iu, ju = np.triu_indices(n, k=1)
        for _ in range(MAX_DRAWS):
            pick = rng.choice(pairs, size=int(edges), replace=False)
            adj = _from_edges(n, iu[pick], ju[pick])
            if is_connected(adj):
                return adj
        raise ValueError(f"no connected G({n}, {edges}) graph in {MAX_DRAWS} draws; use more edges")

    if kind == "erdos_renyi":
        _unused(kind, edges=edges, path=path)
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0 < p <= 1:
            raise ValueError(f"graph kind 'erdos_renyi' needs p in (0, 1], got {p!r}")
        iu, ju = np.triu_indices(n, k=1)
        for _ in range(MAX_DRAWS):
            keep = rng.random(pairs) < p
            adj = _from_edges(n, iu[keep], ju[keep])
            if is_connected(adj):
                return adj
        raise ValueError(f"no connected Erdos-Renyi G({n}, p={p:g}) graph in {MAX_DRAWS} draws; use a larger p")

    # kind == "file"
    _unused(kind, p=p)
    if path is None:
        raise ValueError("graph kind 'file' needs path (an edge list, one 'i j' per line)")
    try:
        with open(path, encoding="utf-8") as fh:
            lines = fh.read().splitlines()
    except OSError as exc:
        raise ValueError(f"cannot read the edge list {os.fspath(path)!r}: {exc.strerror}") from None
    try:
        graph = nx.parse_edgelist(lines, nodetype=int, data=False, comments="#")
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{os.fspath(path)}: not an edge list of integer node pairs ({exc})") from None
    E = np.array(list(graph.edges()), dtype=np.int64).reshape(-1, 2)
    loops = E[E[:, 0] == E[:, 1]]
    if loops.size:
        raise ValueError(f"{os.fspath(path)}: self-loop on node {int(loops[0, 0])}")
    bad = E[(E < 0) | (E >= n)]
    if bad.size:
        raise ValueError(f"{os.fspath(path)}: node {int(bad[0])} is not one of 0..{n - 1}")
    adj = _from_edges(n, E[:, 0], E[:, 1])
    if edges is not None and adj.nnz // 2 != edges:
        raise ValueError(f"{os.fspath(path)}: {adj.nnz // 2} edges, but edges = {edges}")
    if not is_connected(adj):
        k = connected_components(adj, directed=False, return_labels=False)
        raise ValueError(f"{os.fspath(path)}: the graph is not connected ({k} components)")
    return adj


def check_adjacency(adjacency) -> sp.csr_matrix:
    """Validate an adjacency for the solvers; returns it as float64 CSR.

    It must be a square symmetric 0/1 matrix, without self-loops, on at least
    two nodes, and connected (consensus needs it).
    """
    if not (sp.issparse(adjacency) or isinstance(adjacency, np.ndarray)):
        raise ValueError("adjacency must be a scipy.sparse matrix or a numpy array")
    adj = sp.csr_matrix(adjacency, dtype=float)
    n, m = adj.shape
    if n != m or n < 2:
        raise ValueError(f"adjacency must be square on >= 2 nodes, got shape {adj.shape}")
    adj.eliminate_zeros()
    if np.any(adj.data != 1.0):
        raise ValueError("adjacency must be 0/1")
    if adj.diagonal().any():
        raise ValueError("adjacency has self-loops")
    if (adj != adj.T).nnz:
        raise ValueError("adjacency must be symmetric (an undirected graph)")
    if not is_connected(adj):
        raise ValueError("the communication graph is not connected")
    adj.sort_indices()
    return adj


def degrees(adjacency) -> np.ndarray:
    """``|N_i|`` for every node."""
    return np.asarray(adjacency.sum(axis=1)).ravel()


def laplacian(adjacency) -> sp.csr_matrix:
    """``L = diag(deg) - A``; ``(L x)_i = sum_{j in N_i} (x_i - x_j)``."""
    return sp.csr_matrix(sp.diags(degrees(adjacency)) - adjacency)


def metropolis_weights(adjacency) -> sp.csr_matrix:
    """Metropolis-Hastings weights (averaging on a general graph): doubly stochastic, symmetric.

    ``W_ij = 1 / (1 + max(deg_i, deg_j))`` on edges, ``W_ii = 1 - sum_j W_ij``.
    On a complete graph every entry is ``1/N`` (uniform averaging).
    """
    adj = sp.coo_matrix(adjacency)
    deg = degrees(adjacency)
    w = 1.0 / (1.0 + np.maximum(deg[adj.row], deg[adj.col]))
    off = sp.csr_matrix((w, (adj.row, adj.col)), shape=adj.shape)
    diag = 1.0 - np.asarray(off.sum(axis=1)).ravel()
    return sp.csr_matrix(off + sp.diags(diag))


def closed_neighbourhoods(adjacency) -> np.ndarray:
    """``(N, 1 + max deg)`` indices of the closed neighbourhoods ``N~_i = N_i + {i}``.

    Row ``i`` starts with ``i``; shorter rows are padded with ``i`` (a repeat
    never changes a min, a max or a farthest pair). Lets the per-node
    reductions of Algorithms 2 and 2* run as one array operation.
    """
    adj = sp.csr_matrix(adjacency)
    n = adj.shape[0]
    deg = np.diff(adj.indptr)
    width = 1 + int(deg.max(initial=0))
    out = np.repeat(np.arange(n)[:, None], width, axis=1)
    rows = np.repeat(np.arange(n), deg)
    pos = 1 + np.arange(adj.nnz) - np.repeat(adj.indptr[:-1], deg)
    out[rows, pos] = adj.indices
    return out


def is_complete(adjacency) -> bool:
    n = adjacency.shape[0]
    return adjacency.nnz == n * (n - 1)
