"""Feature scaling inside the generators and gisette's loader (not the preprocessing stage).

The synthetic generators and gisette's loader reproduce LIBSVM's
``svm-scale -s/-r``: ranges fitted on the training part and applied
unchanged to the test part, test values not clipped. Runs preprocess through
:mod:`vfl.datasets.stage` instead, whose parameters have declared sources.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

__all__ = ["fit_minmax", "apply_minmax", "maxabs_scale"]


def fit_minmax(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return per-column (min, max) of a dense matrix."""
    return X.min(axis=0), X.max(axis=0)


def apply_minmax(X: np.ndarray, lo: np.ndarray, hi: np.ndarray, lower: float, upper: float) -> np.ndarray:
    """Map each column linearly from ``[lo, hi]`` to ``[lower, upper]``, in place.

    Constant columns (``lo == hi``) carry no information and become 0, which
    is what ``svm-scale`` produces (it drops them from its sparse output).
    Returns ``X`` (float64) for chaining.
    """
    span = hi - lo
    constant = span == 0
    factor = np.where(constant, 0.0, (upper - lower) / np.where(constant, 1.0, span))
    X -= lo
    X *= factor
    X += np.where(constant, 0.0, lower)
    return X


def maxabs_scale(X_train: sp.csr_matrix, X_test: sp.csr_matrix) -> tuple[sp.csr_matrix, sp.csr_matrix, np.ndarray]:
    """Scale sparse columns into [-1, 1] by the training max-abs value.

    Min/max scaling would turn every implicit zero into a non-zero; dividing
    by the largest absolute value keeps the sparsity pattern. Columns that
    are all zero in training are left as they are. Returns the scaled
    matrices and the per-column divisors.
    """
    maxabs = np.asarray(abs(X_train).max(axis=0).todense()).ravel()
    divisor = np.where(maxabs == 0, 1.0, maxabs)
    scale = sp.diags(1.0 / divisor)
    return sp.csr_matrix(X_train @ scale), sp.csr_matrix(X_test @ scale), divisor
