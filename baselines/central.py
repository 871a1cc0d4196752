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
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from time import perf_counter

import numpy as np
import scipy.optimize

from vfl.core.objective import Objective

__all__ = ["CentralSolution", "central_optimum"]


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
    D, b, objective: Objective, *, rtol: float = 1e-10, max_iter: int = 500, dense_max: int = 1000,
    warm_above: int = 1_000_000, warm_rows: int = 200_000,
) -> CentralSolution:
    """Minimize ``objective`` over ``x`` for the full design ``D``.

    Stops when ``||grad F(x)|| <= rtol * max(1, ||grad F(0)||)``; since F is
    ``2 lam``-strongly convex, that bounds ``F(x) - F*`` by
    ``||grad||^2 / (4 lam)``.
    """
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
        per_row = objective if objective.reduction == "mean" else replace(objective,
                                                                          lam=objective.lam / k)
        D_k, b_k = D[rows], b[rows]
        start = central_optimum(D_k, b_k, per_row, rtol=rtol, max_iter=max_iter,
                                dense_max=dense_max).x
        warm = f", started at the optimum of every {k}-th row"
        if D.shape[1] <= dense_max:
            # the full problem's Hessian, estimated: the subsample's loss part stands for k rows
            H = per_row.hess(start, D_k, b_k) * (k if objective.reduction == "sum" else 1)
            x, steps, done = _chord_steps(objective, D, b, start, H, gtol)
            if done:
                f, g = objective.value_and_grad(x, D, b)
                return CentralSolution(
                    x=x, value=f, grad_norm=float(np.linalg.norm(g)), n_iter=steps,
                    seconds=perf_counter() - t0,
                    method=f"chord Newton steps with the Hessian of every {k}-th row, from "
                           "that subsample's optimum")
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
        x=res.x, value=f, grad_norm=float(np.linalg.norm(g)), n_iter=int(res.nit), seconds=seconds,
        method=f"scipy.optimize.minimize(method={method!r}){warm}",
    )
