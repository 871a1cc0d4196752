"""The row steps of the preprocessing stage: each acts on one record alone.

Intercept, clipping a row to an l2 norm and normalising a row read nothing but
the row itself (``source = "per_record"`` in :mod:`vfl.core.preprocessing`), so
replacing one record leaves every other record's output bit-identical. In the
vertical setting they act on each party's block of a record.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .arrays import FloatArray, Matrix

__all__ = ["RowSteps", "add_intercept", "clip_rows", "normalize_rows", "row_norms"]


def row_norms(X: Matrix) -> FloatArray:
    """l2 norm of every row (dense or sparse)."""
    if sp.issparse(X):
        X = sp.csr_matrix(X)
        sq = np.zeros(X.shape[0])
        rows = np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))
        np.add.at(sq, rows, X.data * X.data)
        return np.sqrt(sq)
    norms: FloatArray = np.sqrt(np.einsum("ij,ij->i", X, X))
    return norms


def _scale_rows(X: Matrix, factor: FloatArray) -> Matrix:
    if sp.issparse(X):
        return (
            sp.diags(factor) @ X
            if not sp.isspmatrix_csr(X)
            else sp.csr_matrix((X.data * np.repeat(factor, np.diff(X.indptr)), X.indices, X.indptr), shape=X.shape)
        )
    return X * factor[:, None]


def clip_rows(X: Matrix, c: float) -> Matrix:
    """Scale every row with l2 norm above ``c`` onto the sphere of radius ``c``.

    The factor carries a few ulps of slack so the bound holds in floating
    point too (a row at norm ``c`` after rounding is not above it).
    """
    if not (c > 0 and math.isfinite(c)):
        raise ValueError(f"row_clip must be a finite number > 0, got {c!r}")
    norms = row_norms(X)
    over = ~(norms <= c)  # a NaN norm is over too: its row stays NaN and fails every bound
    factor = np.ones_like(norms)
    factor[over] = c * (1.0 - 4.0 * np.finfo(float).eps) / norms[over]
    return _scale_rows(X, factor)


def normalize_rows(X: Matrix) -> Matrix:
    """Every row to unit l2 norm (all-zero rows stay zero); keeps dense/sparse type.

    Divides by the norm (as scikit-learn's ``normalize`` does, bit for bit)
    rather than multiplying by its inverse.
    """
    norms = row_norms(X)
    norms[norms == 0] = 1.0
    if sp.issparse(X):
        X = sp.csr_matrix(X, copy=True)
        X.data /= np.repeat(norms, np.diff(X.indptr))
        return X
    return X / norms[:, None]


def add_intercept(X: Matrix) -> Matrix:
    """A trailing column of ones."""
    if sp.issparse(X):
        return _csr_with_ones(sp.csr_matrix(X))
    return np.hstack([X, np.ones((X.shape[0], 1))])


def _csr_with_ones(X: Matrix) -> Matrix:
    """``sp.hstack([X, ones], format="csr")`` to the bit (each row's entries as stored, then
    the one), built in place of the stack's intermediate copies: its only temporary is one
    flag per entry (the stack needs about twice the result besides it)."""
    n, d = X.shape
    nnz = int(X.indptr[-1])
    big = max(nnz + n, d + 1) > np.iinfo(np.int32).max
    index = np.int64 if big else np.int32
    indptr = X.indptr.astype(index) + np.arange(n + 1, dtype=index)
    ones = indptr[1:] - 1  # where each row's new last entry goes
    keep = np.ones(nnz + n, dtype=bool)
    keep[ones] = False
    data = np.empty(nnz + n, dtype=np.result_type(X.dtype, np.float64))
    indices = np.empty(nnz + n, dtype=index)
    data[keep] = X.data[:nnz]
    indices[keep] = X.indices[:nnz]
    del keep
    data[ones] = 1.0
    indices[ones] = d
    return sp.csr_matrix((data, indices, indptr), shape=(n, d + 1))


@dataclass(frozen=True)
class RowSteps:
    """Per-record steps, in order: intercept, clip to ``row_clip``, unit norm.

    In the vertical setting they act on each party's block of a record (a
    party cannot see the rest of the row), the intercept on party 1's only.
    """

    intercept: bool = False
    row_clip: float | None = None
    normalize: bool = False

    def __post_init__(self) -> None:
        if self.row_clip is not None and not (self.row_clip > 0 and math.isfinite(self.row_clip)):
            raise ValueError(f"row_clip must be a finite number > 0, got {self.row_clip!r}")

    def apply(self, X: Matrix, *, intercept: bool | None = None) -> Matrix:
        if self.intercept if intercept is None else intercept:
            X = add_intercept(X)
        if self.row_clip is not None:
            X = clip_rows(X, self.row_clip)
        if self.normalize:
            X = normalize_rows(X)
        return X

    @property
    def bound(self) -> float | None:
        """The l2 norm every output row is guaranteed not to exceed (None: unbounded)."""
        if self.normalize:
            return 1.0
        return self.row_clip

    def describe(self, unit: str) -> list[dict[str, object]]:
        steps: list[dict[str, object]] = []
        if self.intercept:
            steps.append(
                {
                    "step": "intercept",
                    "source": "per_record",
                    "applies_to": "party 1's block" if unit == "party block" else "every row",
                }
            )
        if self.row_clip is not None:
            steps.append({"step": "row_clip", "norm": self.row_clip, "unit": unit, "source": "per_record"})
        if self.normalize:
            steps.append({"step": "normalize_rows", "norm": 1.0, "unit": unit, "source": "per_record"})
        return steps
