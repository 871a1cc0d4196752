"""The central optimum: problem (1) solved on all features at one place.

Used as the reference every distributed run is measured against
(suboptimality ``(F(x^t) - F*) / |F*|``). It shares only the
:class:`~vfl.admm.Objective` with ADMM; the solver is independent: a
trust-region Newton method from ``scipy.optimize.minimize``: ``trust-exact``
with the dense Hessian when ``d <= dense_max`` (a few cheap iterations), else
``trust-ncg`` with exact Hessian-vector products. Either runs until the
gradient norm is below ``gtol``.
"""

from __future__ import annotations

from dataclasses import dataclass
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


def central_optimum(
    D, b, objective: Objective, *, rtol: float = 1e-10, max_iter: int = 500, dense_max: int = 1000
) -> CentralSolution:
    """Minimize ``objective`` over ``x`` for the full design ``D``.

    Stops when ``||grad F(x)|| <= rtol * max(1, ||grad F(0)||)``; since F is
    ``2 lam``-strongly convex, that bounds ``F(x) - F*`` by
    ``||grad||^2 / (4 lam)``.
    """
    b = np.asarray(b, dtype=float)
    x0 = np.zeros(D.shape[1])
    _, g0 = objective.value_and_grad(x0, D, b)
    gtol = rtol * max(1.0, float(np.linalg.norm(g0)))
    if D.shape[1] <= dense_max:
        method, second_order = "trust-exact", {"hess": objective.hess}
    else:
        method, second_order = "trust-ncg", {"hessp": objective.hessp}
    t0 = perf_counter()
    res = scipy.optimize.minimize(
        objective.value_and_grad,
        x0,
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
        method=f"scipy.optimize.minimize(method={method!r})",
    )
