"""The central optimum: problem (1) solved on all features at one place.

Used as the reference every distributed run is measured against
(suboptimality ``(F(x^t) - F*) / |F*|``). It shares only the
:class:`~vfl.admm.Objective` with ADMM; the solver is independent: a
trust-region Newton method from ``scipy.optimize.minimize``: ``trust-exact``
with the dense Hessian when ``d <= dense_max`` (a few cheap iterations), else
``trust-ncg`` with exact Hessian-vector products. Either runs until the
gradient norm is below ``gtol``.

With many rows (``N > warm_above``) a Newton iteration costs a full pass for
the Hessian (``N nnz_row^2`` for sparse rows, 20 gradients on a9a), and
there are about 7 from ``x = 0``. The solve then starts from the optimum of
an evenly strided subsample (every k-th row, ``lam / k``: the same problem
per row) and takes chord Newton steps with that subsample's Hessian (k times
its loss part): each costs one gradient of the full problem, and they
contract by the subsample's relative Hessian error. If they stop
contracting, the trust-region method finishes from there. No random draw,
and the stopping rule (the full gradient's norm) is unchanged, so F* is as
exact as before.

The design may be given as the parties' column blocks ``[D_1, ..., D_M]``
instead of one matrix (:func:`column_design`): sparse blocks are then
never joined (:class:`ColumnBlocks`: ``D x = sum_m D_m x_m`` accumulated
row by row in the joined order, ``D^T r = [D_m^T r]``, the same numbers to
the bit as the joined matrix, with no copy of the rows); dense blocks are
joined (a BLAS product's order of summation cannot be replayed block by
block, and dense designs are small here).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from time import perf_counter

import numpy as np
import scipy.optimize
import scipy.sparse as sp
from scipy.sparse import _sparsetools

from vfl.core.objective import Objective

__all__ = ["CentralSolution", "ColumnBlocks", "central_optimum", "column_design"]


class ColumnBlocks:
    """The design ``[D_1, ..., D_M]`` held as its sparse column blocks, never joined.

    What the central solver and :class:`~vfl.core.objective.Objective` ask of a
    design, on the blocks: ``D @ x`` (each row's sum over the blocks' entries
    in the joined order, so equal to the joined CSR product to the bit),
    ``D.T @ r`` (``[D_m^T r]``, the joined product's entries), ``D[rows]`` (a
    subsample, joined: it is small) and :meth:`weighted_gram` (the dense
    Hessian's ``D^T diag(h) D``, block by block, each entry summed over the
    rows in order as the joined sparse product does).
    """

    ndim = 2

    def __init__(self, blocks):
        blocks = [sp.csr_matrix(B) for B in blocks]
        if not blocks or len({B.shape[0] for B in blocks}) != 1:
            raise ValueError("column blocks need the same rows, and at least one block")
        self.blocks = blocks
        self.edges = np.cumsum([0] + [B.shape[1] for B in blocks])
        self.shape = (blocks[0].shape[0], int(self.edges[-1]))

    def _parts(self, x):
        return [x[a:b] for a, b in zip(self.edges[:-1], self.edges[1:])]

    def __matmul__(self, x):
        x = np.asarray(x, dtype=np.float64)
        if x.ndim != 1:
            raise ValueError("ColumnBlocks multiplies vectors only")
        parts = self._parts(x)
        u = self.blocks[0] @ parts[0]
        for B, xm in zip(self.blocks[1:], parts[1:]):
            # scipy's CSR kernel adds each row's products to what ``u`` holds: the joined
            # matrix's row sums, term by term in the same order
            _sparsetools.csr_matvec(
                B.shape[0], B.shape[1], B.indptr, B.indices, B.data, np.ascontiguousarray(xm, dtype=B.dtype), u
            )
        return u

    @property
    def T(self):
        return _Transposed(self)

    def __getitem__(self, rows):
        return sp.hstack([B[rows] for B in self.blocks], format="csr")

    def weighted_gram(self, h):
        """``D^T diag(h) D``, dense (the blocks' products, assembled)."""
        scaled = [B.multiply(h[:, None]).tocsr() for B in self.blocks]
        return np.block([[(Bj.T @ Sk).toarray() for Sk in scaled] for Bj in self.blocks])


class _Transposed:
    def __init__(self, design: ColumnBlocks):
        self.design = design

    def __matmul__(self, r):
        return np.concatenate([B.T @ r for B in self.design.blocks])


def column_design(blocks):
    """The design ``[D_1, ..., D_M]`` of the parties' column blocks: a :class:`ColumnBlocks`
    for sparse blocks (no copy), the joined matrix for dense ones."""
    if len(blocks) == 1:
        return blocks[0]
    if all(sp.issparse(B) for B in blocks):
        return ColumnBlocks(blocks)
    return np.hstack([B.toarray() if sp.issparse(B) else B for B in blocks])


@dataclass(frozen=True)
class CentralSolution:
    x: np.ndarray
    value: float
    grad_norm: float
    n_iter: int
    seconds: float
    method: str


def _chord_steps(objective: Objective, D, b, x, H, gtol: float, max_iter: int = 30):
    """``x - H^{-1} grad F(x)`` with one factorization of ``H``, until the full gradient's norm
    is <= gtol (``(x, steps, True)``) or stops halving (``(x, steps, False)``)."""
    factor = scipy.linalg.cho_factor(H)
    last = np.inf
    for step in range(max_iter + 1):
        _, g = objective.value_and_grad(x, D, b)
        norm = float(np.linalg.norm(g))
        if norm <= gtol:
            return x, step, True
        if norm > 0.5 * last or step == max_iter:
            return x, step, False
        last = norm
        x = x - scipy.linalg.cho_solve(factor, g)


def central_optimum(
    D,
    b,
    objective: Objective,
    *,
    rtol: float = 1e-10,
    max_iter: int = 500,
    dense_max: int = 1000,
    warm_above: int = 1_000_000,
    warm_rows: int = 200_000,
) -> CentralSolution:
    """Minimize ``objective`` over ``x`` for the full design ``D`` (a matrix, or a list of the
    parties' column blocks: :func:`column_design`).

    Stops when ``||grad F(x)|| <= rtol * max(1, ||grad F(0)||)``; since F is
    ``2 lam``-strongly convex, that bounds ``F(x) - F*`` by
    ``||grad||^2 / (4 lam)``.
    """
    if isinstance(D, (list, tuple)):
        D = column_design(D)
    b = np.asarray(b, dtype=float)
    t0 = perf_counter()
    x0 = np.zeros(D.shape[1])
    _, g0 = objective.value_and_grad(x0, D, b)
    gtol = rtol * max(1.0, float(np.linalg.norm(g0)))
    start, warm = x0, ""
    if D.shape[0] > warm_above and objective.reduction in ("sum", "mean"):
        k = D.shape[0] // warm_rows
        rows = np.arange(0, D.shape[0], k)
        # the same problem per row: F's loss sums over N / k rows, so lam / k (sum reduction)
        per_row = objective if objective.reduction == "mean" else replace(objective, lam=objective.lam / k)
        D_k, b_k = D[rows], b[rows]
        start = central_optimum(D_k, b_k, per_row, rtol=rtol, max_iter=max_iter, dense_max=dense_max).x
        warm = f", started at the optimum of every {k}-th row"
        if D.shape[1] <= dense_max:
            # the full problem's Hessian, estimated: the subsample's loss part stands for k rows
            H = per_row.hess(start, D_k, b_k) * (k if objective.reduction == "sum" else 1)
            x, steps, done = _chord_steps(objective, D, b, start, H, gtol)
            if done:
                f, g = objective.value_and_grad(x, D, b)
                return CentralSolution(
                    x=x,
                    value=f,
                    grad_norm=float(np.linalg.norm(g)),
                    n_iter=steps,
                    seconds=perf_counter() - t0,
                    method=f"chord Newton steps with the Hessian of every {k}-th row, from that subsample's optimum",
                )
            start, warm = x, warm + f" and {steps} chord steps"
    if D.shape[1] <= dense_max:
        method, second_order = "trust-exact", {"hess": objective.hess}
    else:
        method, second_order = "trust-ncg", {"hessp": objective.hessp}
    res = scipy.optimize.minimize(
        objective.value_and_grad,
        start,
        args=(D, b),
        jac=True,
        method=method,
        options={"gtol": gtol, "maxiter": max_iter},
        **second_order,
    )
    seconds = perf_counter() - t0
    f, g = objective.value_and_grad(res.x, D, b)
    return CentralSolution(
        x=res.x,
        value=f,
        grad_norm=float(np.linalg.norm(g)),
        n_iter=int(res.nit),
        seconds=seconds,
        method=f"scipy.optimize.minimize(method={method!r}){warm}",
    )
