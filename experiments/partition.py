"""Vertical partitions: which feature columns each party holds.

Party 1 is the *active* party: it holds the labels, runs the local-only
baseline, and (optionally) the intercept column. A partition is given by
column counts (``[66, 57]``: the first 66 columns, then the next 57), by
``[start, stop)`` ranges, or by explicit index lists, and is checked against
the dataset's width: every party non-empty, indices in range, no column in
two parties, and every column used unless ``allow_unused``.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from vfl.core.errors import PartitionError
from vfl.core.preprocessing import RowSteps, add_intercept

from .config_sections import PartitionConfig

__all__ = ["Partition", "make_partition"]


def _runs(idx: np.ndarray) -> list[list[int]]:
    """Compress sorted indices into ``[start, stop)`` runs, for manifests."""
    if idx.size == 0:
        return []
    breaks = np.flatnonzero(np.diff(idx) != 1)
    starts = np.r_[idx[0], idx[breaks + 1]]
    stops = np.r_[idx[breaks] + 1, idx[-1] + 1]
    return [[int(a), int(b)] for a, b in zip(starts, stops)]


#: rows per chunk when a party's block is cut from a CSR matrix
CHUNK_ROWS = 1 << 16


def _csr_range(X, start: int, stop: int, *, ones: bool, chunk: int = CHUNK_ROWS):
    """``X[:, start:stop]`` (CSR), with a trailing column of ones if ``ones``: the same matrix
    to the bit as scipy's slice followed by :func:`~vfl.core.preprocessing.add_intercept`,
    built into its final arrays a chunk of rows at a time (one pass counts each row's
    entries, one fills them), so that no temporary beyond one chunk's slice sits next to
    the records and the block (a slice and then the intercept's copy of it would be about
    twice the block)."""

    n = X.shape[0]
    starts = range(0, n, chunk)

    def piece(r0):
        S = X[r0 : r0 + chunk, start:stop]
        return add_intercept(S) if ones else S

    counts = np.zeros(n + 1, dtype=np.int64)
    for r0 in starts:
        counts[r0 + 1 : r0 + chunk + 1] = np.diff(X[r0 : r0 + chunk, start:stop].indptr) + ones
    np.cumsum(counts, out=counts)
    nnz = int(counts[-1])
    big = max(nnz, stop - start + ones) > np.iinfo(np.int32).max or X.indices.dtype == np.int64
    index = np.int64 if big else np.int32
    indptr = counts.astype(index)
    del counts
    data = np.empty(nnz, dtype=np.result_type(X.dtype, np.float64) if ones else X.dtype)
    indices = np.empty(nnz, dtype=index)
    for r0 in starts:
        S = piece(r0)
        a, b = indptr[r0], indptr[min(r0 + chunk, n)]
        data[a:b] = S.data
        indices[a:b] = S.indices
    return sp.csr_matrix((data, indices, indptr), shape=(n, stop - start + ones))


def _list_preview(values, limit=5) -> str:
    values = [int(v) for v in values]
    head = ", ".join(map(str, values[:limit]))
    return head + (f", ... ({len(values)} in all)" if len(values) > limit else "")


@dataclass(frozen=True)
class Partition:
    """Column indices held by each party, and the per-record steps of each block.

    ``parties[m]`` are 0-based column indices into the dataset, in the order
    the party uses them. ``rows`` are the preprocessing stage's per-record
    steps, applied to each party's block of a record (a party sees only its
    own columns): the intercept (party 1's block gets a trailing column of
    ones), ``row_clip`` and ``normalize_rows`` (Assumption 2.3 of Hu et al.,
    which the privacy analysis needs; all-zero rows stay zero).
    """

    parties: tuple[np.ndarray, ...]
    n_features: int
    rows: RowSteps = RowSteps(intercept=True)

    @property
    def intercept(self) -> bool:
        return self.rows.intercept

    @property
    def normalize_rows(self) -> bool:
        return self.rows.normalize

    @property
    def n_parties(self) -> int:
        return len(self.parties)

    def block(self, X, m: int):
        """Party ``m``'s (0-based) block of ``X``, with the intercept for m = 0."""
        idx = self.parties[m]
        contiguous = idx.size and idx[-1] - idx[0] + 1 == idx.size and np.all(np.diff(idx) == 1)
        intercept = m == 0 and self.rows.intercept
        if contiguous and sp.issparse(X):
            # the range and the intercept column in one matrix, a chunk of rows at a time
            B = _csr_range(sp.csr_matrix(X), int(idx[0]), int(idx[-1]) + 1, ones=intercept)
            intercept = False
        else:
            # Slicing a contiguous range avoids fancy-indexing copies of CSR data.
            B = X[:, int(idx[0]) : int(idx[-1]) + 1] if contiguous else X[:, idx]
        if sp.issparse(B):
            B = B.tocsr()
        else:  # a contiguous copy, not a strided view: BLAS products stay in place
            B = np.ascontiguousarray(B)
        B = self.rows.apply(B, intercept=intercept)
        # a block is the party's own matrix, never a view of X (which may be the records as
        # read, shared by every run in the process)
        shared = (
            np.may_share_memory(B.data, X.data)
            if sp.issparse(B) and sp.issparse(X)
            else not sp.issparse(B) and np.may_share_memory(B, X)
        )
        return B.copy() if shared else B

    def split(self, X) -> list:
        """All parties' blocks of ``X``."""
        if X.shape[1] != self.n_features:
            raise PartitionError(f"data has {X.shape[1]} features but the partition was made for {self.n_features}")
        return [self.block(X, m) for m in range(self.n_parties)]

    def join(self, X, blocks=None):
        """The centralized design ``[D_1, ..., D_M]`` in party order (from ``blocks``, the
        parties' blocks of ``X`` when they are already split: one copy of X fewer; ``X`` may
        then be None)."""
        blocks = self.split(X) if blocks is None else blocks
        return sp.hstack(blocks, format="csr") if sp.issparse(blocks[0]) else np.hstack(blocks)

    def design_key(self) -> dict:
        """What the joined design ``[D_1, ..., D_M]`` depends on, JSON-ready: the column order,
        where party 1's intercept column goes, and the per-record steps, which act on each
        party's block (so with them on, the split itself matters)."""
        order = np.concatenate(self.parties).astype(np.int64)
        key = {
            "columns_sha256": hashlib.sha256(order.tobytes()).hexdigest()[:20],
            "n_columns": int(order.size),
            "intercept_after": int(self.parties[0].size) if self.intercept else None,
        }
        if self.rows.row_clip is not None or self.rows.normalize:
            key.update(
                blocks=[int(idx.size) for idx in self.parties],
                row_clip=self.rows.row_clip,
                normalize_rows=self.rows.normalize,
            )
        return key

    def describe(self) -> list[dict]:
        """Per party: number of columns and ``[start, stop)`` runs, JSON-ready."""
        return [
            {
                "party": m + 1,
                "n_columns": int(idx.size),
                "column_ranges": _runs(np.sort(idx)),
                "intercept": bool(self.intercept and m == 0),
                "active": m == 0,
                **({"rows_normalized": True} if self.normalize_rows else {}),
                **({"row_clip": self.rows.row_clip} if self.rows.row_clip is not None else {}),
            }
            for m, idx in enumerate(self.parties)
        ]


def _from_columns(counts: list[int], n: int) -> list[np.ndarray]:
    for m, c in enumerate(counts, start=1):
        if c <= 0:
            raise PartitionError(f"party {m} has {c} columns; every party needs at least one")
    total = sum(counts)
    if total > n:
        raise PartitionError(f"partition.columns {counts} sum to {total} but the dataset has {n} features")
    edges = np.cumsum([0, *counts])
    return [np.arange(a, b) for a, b in zip(edges[:-1], edges[1:])]


def _from_ranges(ranges: list[list[int]], n: int) -> list[np.ndarray]:
    parties = []
    for m, r in enumerate(ranges, start=1):
        if len(r) != 2:
            raise PartitionError(f"party {m}: a range is [start, stop), got {r}")
        start, stop = r
        if start < 0 or stop > n:
            raise PartitionError(f"party {m}: range [{start}, {stop}) is outside [0, {n})")
        if stop <= start:
            raise PartitionError(f"party {m}: range [{start}, {stop}) is empty")
        parties.append(np.arange(start, stop))
    return parties


def _from_indices(indices: list[list[int]], n: int) -> list[np.ndarray]:
    parties = []
    for m, cols in enumerate(indices, start=1):
        idx = np.asarray(cols, dtype=np.int64)
        if idx.size == 0:
            raise PartitionError(f"party {m} has no columns")
        bad = idx[(idx < 0) | (idx >= n)]
        if bad.size:
            raise PartitionError(f"party {m}: column indices {_list_preview(bad)} are outside [0, {n})")
        uniq, counts = np.unique(idx, return_counts=True)
        if np.any(counts > 1):
            raise PartitionError(f"party {m}: column indices {_list_preview(uniq[counts > 1])} are listed twice")
        parties.append(idx)
    return parties


#: the per-record steps of a block by default (frozen: one shared instance is safe)
_ROWS = RowSteps(intercept=True)


def make_partition(spec: PartitionConfig, n_features: int, rows: RowSteps = _ROWS) -> Partition:
    """Build and validate the partition ``spec`` for a dataset of width ``n_features``;
    ``rows`` are the per-record steps each block gets."""
    if spec.columns is not None:
        parties = _from_columns(spec.columns, n_features)
    elif spec.ranges is not None:
        parties = _from_ranges(spec.ranges, n_features)
    elif spec.indices is not None:
        parties = _from_indices(spec.indices, n_features)
    else:
        raise PartitionError("partition needs one of columns, ranges, indices")

    owner = np.full(n_features, -1)
    for m, idx in enumerate(parties):
        taken = idx[owner[idx] >= 0]
        if taken.size:
            other = int(owner[taken[0]]) + 1
            raise PartitionError(f"party {m + 1} overlaps party {other} at columns {_list_preview(taken)}")
        owner[idx] = m
    unused = np.flatnonzero(owner < 0)
    if unused.size and not spec.allow_unused:
        raise PartitionError(
            f"columns {_list_preview(unused)} belong to no party "
            "(set partition.allow_unused = true to train without them)"
        )
    return Partition(parties=tuple(parties), n_features=n_features, rows=rows)
