"""The array and design-matrix types the core's annotations use (for mypy, no runtime role).

``Design`` is what a solver multiplies by: a dense array, a scipy sparse matrix or a
design held as column blocks (``baselines.ColumnBlocks``); they share ``@``, ``.T`` and
``.shape``.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

__all__ = ["BoolArray", "Design", "FloatArray", "IntArray", "Matrix"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

#: a dense array or a scipy sparse matrix, told apart at run time (``sp.issparse``); scipy
#: ships no type information, so to mypy this is Any: the name documents, it cannot check
Matrix = Any


class Design(Protocol):
    """A design matrix ``D`` (rows: samples): dense, scipy sparse or column blocks."""

    @property
    def shape(self) -> tuple[int, ...]: ...

    @property
    def T(self) -> Any: ...  # numpy's name; the transpose's type depends on D

    def __matmul__(self, other: Any) -> Any: ...
